// What features and scripts use of the sandbox provider (the engine's index.ts exports it as `sandbox`): the tasks a
// feature's prompt can ask it for (task.ts), and its embedding sizes (the catalogue script).
export { SANDBOX_EMBEDDING_DIMENSIONS, SANDBOX_EMBEDDING_MAX_DIMENSIONS } from './embedding.ts';
export { type SandboxTask, taskOption } from './task.ts';
