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

// The public API: what other features and the entry points use (docs/server.md, "Dependency rules").
export { projectsOf } from './projects.ts'; // features whose resources belong to a project check it is the workspace's
