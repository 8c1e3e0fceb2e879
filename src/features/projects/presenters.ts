// Project rows as the API shows them (the shape is the spec's, through the generated types).
import type { Selectable } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { ProjectsTable } from './schema.ts';

type Schemas = components['schemas'];

export function presentProject(row: Selectable<ProjectsTable>): Schemas['Project'] {
  return {
    id: row.id,
    object: 'project',
    name: row.name,
    description: row.description,
    default_voice_id: row.default_voice_id,
    default_model: row.default_model,
    fallback_models: JSON.parse(row.fallback_models) as string[],
    metadata: JSON.parse(row.metadata) as Schemas['Metadata'],
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
