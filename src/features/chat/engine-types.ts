// The parts of the engine's generation shapes that the chat wire formats convert to and from, named as the engine
// names them. They are derived from the engine's public types (its index.ts names only the whole shapes).
import type { components } from '../../../generated/openapi.ts';
import type { EngineMessage, Generated, GenerationRequest } from '../engine/index.ts';

/** A part of a user message: text, or an image. */
export type EngineContentPart = Exclude<Extract<EngineMessage, { role: 'user' }>['content'], string>[number];
/** A function the model may call. */
export type EngineTool = NonNullable<GenerationRequest['tools']>[number];
export type EngineToolChoice = NonNullable<GenerationRequest['toolChoice']>;
/** A tool call the model made. */
export type EngineToolCall = Generated['choices'][number]['toolCalls'][number];
/** A model tried before the one that answered (a request with fallback models). */
export type ModelTried = components['schemas']['ModelTried'];
