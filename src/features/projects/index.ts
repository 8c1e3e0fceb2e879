// The projects feature: named groups of a workspace's documents, workflows and chatbots, with their defaults.
import type { Feature } from '../../platform/feature.ts';
import { projects } from './migrations/004_projects.ts';
import { projectFallbackModels } from './migrations/022_project_fallback_models.ts';
import { projectHandlers } from './projects.ts';

export { projectFallbacks } from './projects.ts';

export const projectsFeature = {
  name: 'projects',
  handlers: projectHandlers,
  migrations: { '004_projects': projects, '022_project_fallback_models': projectFallbackModels },
} satisfies Feature;
