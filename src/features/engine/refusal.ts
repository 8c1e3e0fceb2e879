// What the engine refuses of a generation request, named by what it is rather than by one wire's field: each wire
// (Chat Completions, the Responses API) places a refusal at its own field (`Refusal.at`), as the AI SDK raises typed
// errors that their caller places. A refusal nobody places (a feature without such fields) names no field.
import { Problem, validationFailed } from '../../platform/problems.ts';

/**
 * The parts of a request the engine refuses: its output budget (`max_completion_tokens`), its prompt (`messages`),
 * its ask for log probabilities (`logprobs`).
 */
export type RefusedPart = 'output_budget' | 'prompt' | 'logprobs';

/** A wire's field of each refused part, by name (`max_output_tokens`, `input`). */
export type RefusalFields = Readonly<Record<RefusedPart, string>>;

/** The problem of a refusal at a wire's fields, or in words without a field (null). */
type Placement = (fields: RefusalFields | null) => Problem;

export class Refusal extends Problem {
  readonly part: RefusedPart;
  readonly #place: Placement;

  constructor(part: RefusedPart, place: Placement) {
    const unplaced = place(null);
    super(unplaced.code, unplaced.message, { errors: unplaced.errors, headers: unplaced.headers });
    this.name = 'Refusal';
    this.part = part;
    this.#place = place;
  }

  /** The problem at the wire's field. */
  at(fields: RefusalFields): Problem {
    return this.#place(fields);
  }
}

/** The error with a refusal placed at the wire's fields; any other error as it is. */
export function placed(error: unknown, fields: RefusalFields): unknown {
  return error instanceof Refusal ? error.at(fields) : error;
}

/** An output budget over the model's output limit. */
export function overOutputLimit(model: { id: string; max_output_tokens: number }): Refusal {
  const detail = `must be at most ${model.max_output_tokens}, the output limit of ${model.id}`;
  return new Refusal('output_budget', (fields) =>
    fields
      ? validationFailed([{ pointer: `/${fields.output_budget}`, detail }])
      : new Problem('validation_failed', `The output budget ${detail}.`),
  );
}

/** A prompt whose tokens (`promptTokens`), with the output budget, need more than the model's context window. */
export function contextExceeded(contextWindow: number, promptTokens: number, needed: number): Refusal {
  return new Refusal('prompt', (fields) => {
    const prompt = fields?.prompt ?? 'prompt';
    const budget = fields?.output_budget ?? 'the output budget';
    return new Problem(
      'context_length_exceeded',
      `This model's maximum context length is ${contextWindow} tokens; the ${prompt} and ${budget} need ${needed}.`,
      fields ? { errors: [{ pointer: `/${prompt}`, detail: `holds ${promptTokens} tokens` }] } : {},
    );
  });
}

/** A prompt the model itself found longer than its context (`contextSize`), once it had tokenized it. */
export function promptOverContext(contextSize: number, promptTokens: number): Refusal {
  return new Refusal('prompt', (fields) => {
    const prompt = fields?.prompt ?? 'prompt';
    return new Problem(
      'context_length_exceeded',
      `This model's maximum context length is ${contextSize} tokens, fewer than the ${promptTokens} tokens of the ${prompt} alone.`,
      fields ? { errors: [{ pointer: `/${prompt}`, detail: `holds ${promptTokens} tokens` }] } : {},
    );
  });
}

/** Log probabilities asked of a model without the `logprobs` capability. */
export function logprobsUnsupported(model: { id: string }): Refusal {
  const detail = `are not given by ${model.id} (it lacks the logprobs capability); GET /v1/models?capability=logprobs lists the models that give them`;
  return new Refusal('logprobs', (fields) =>
    fields
      ? validationFailed([{ pointer: `/${fields.logprobs}`, detail }])
      : new Problem('validation_failed', `Log probabilities ${detail}.`),
  );
}
