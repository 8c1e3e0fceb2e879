// What each kind of step does once it runs (the approval step is the runtime's: it waits): generate through the
// content engine (voice and output policy included), transform with a built-in function (its output checked against
// the output policy too: output-policy.ts), a document command, a knowledge search. An attempt either returns the
// step's output and cost, or throws a StepFailure whose `code` is the contract's WorkflowRunErrorCode (the retry
// policy's `retry_on` names those codes).
import { query as jsonPath } from 'jsonpath-rfc9535';
import type { Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import { bySystem } from '../../platform/audit.ts';
import type { Platform } from '../../platform/context.ts';
import { Problem } from '../../platform/problems.ts';
import type { Database } from '../../storage/schema.ts';
import { commandOnDocument } from '../documents/index.ts';
import type { Engine } from '../engine/index.ts';
import { knowledgeBasesOf, searchKnowledge } from '../knowledge/index.ts';
import type { Definition } from './definition.ts';
import { asText, ExpressionError, parseTemplate, render, type Scope, type Value } from './expressions.ts';
import { withOutputPolicy } from './output-policy.ts';
import type { RunRow } from './store.ts';

type Schemas = components['schemas'];
export type Step = Definition['steps'][number];
export type ErrorCode = Schemas['WorkflowRunErrorCode'];

/** A failed attempt, with the contract's code for it. */
export class StepFailure extends Error {
  readonly code: ErrorCode;
  /** False for an error that an identical attempt would meet again (the provider refused the request: a 4xx). */
  readonly retryable: boolean;
  constructor(code: ErrorCode, message: string, retryable = true) {
    super(message.slice(0, 2000));
    this.code = code;
    this.retryable = retryable;
  }
}

export interface Attempt {
  platform: Platform;
  engine: Engine;
  run: RunRow;
  /** The project of the workflow, whose compliance rules apply to generated text. */
  projectId: string | null;
  scope: Scope;
  signal: AbortSignal;
  now: Date;
  /** Records the step's success; a document step calls it in the transaction that saves its version. */
  recordSuccess: (trx: Transaction<Database>, output: Value, costUsd: number) => Promise<void>;
}

export interface AttemptResult {
  output: Value;
  costUsd: number;
  /** Whether the attempt recorded its success itself (recordSuccess), with a change that had to be made once. */
  recorded?: boolean;
}

/** A template rendered with the run's data; an expression that cannot be evaluated is a template_error. */
export function renderTemplate(template: string, scope: Scope): Value {
  try {
    return render(parseTemplate(template), scope);
  } catch (error) {
    if (error instanceof ExpressionError || error instanceof RangeError)
      throw new StepFailure('template_error', error.message);
    throw error;
  }
}

const text = (template: string | undefined, scope: Scope) =>
  template === undefined ? undefined : asText(renderTemplate(template, scope));

/** The contract's code for an error of the engine, a document or a search. */
export function failureOf(error: unknown, timedOut: boolean): StepFailure {
  if (error instanceof StepFailure) return error;
  if (timedOut) return new StepFailure('timeout', "The attempt took longer than the step's timeout_ms.");
  if (error instanceof Problem) {
    switch (error.code) {
      case 'upstream_rate_limited':
        return new StepFailure('rate_limited', error.message);
      case 'upstream_unavailable':
        return new StepFailure('provider_error', error.message);
      // The provider refused the request itself (4xx): `provider_error`, but retrying it would be refused again.
      case 'upstream_error':
        return new StepFailure('provider_error', error.message, false);
      case 'context_length_exceeded':
        return new StepFailure('context_length_exceeded', error.message);
      // A spend limit of the workspace, the run's project or the key that started it: a budget, like max_cost_usd,
      // and retrying before the limit resets would be refused again.
      case 'spend_limit_reached':
        return new StepFailure('budget_exceeded', `spend_limit_reached: ${error.message}`, false);
      case 'not_found':
      case 'model_not_found':
      case 'model_unavailable':
      case 'voice_not_ready':
        return new StepFailure('resource_not_found', error.message);
      case 'policy_violation':
        return new StepFailure(
          'invalid_output',
          `The output was withheld by the workspace's output policy: ${error.message}`,
        );
      case 'version_conflict':
      case 'validation_failed':
      case 'selection_out_of_range':
        return new StepFailure('invalid_output', error.message);
    }
  }
  return new StepFailure('internal_error', error instanceof Error ? error.message : String(error));
}

export async function runAttempt(step: Exclude<Step, { type: 'approval' }>, attempt: Attempt): Promise<AttemptResult> {
  switch (step.type) {
    case 'generate':
      return generate(step, attempt);
    case 'transform':
      return { output: await withOutputPolicy(transform(step, attempt.scope), attempt), costUsd: 0 };
    case 'document_command':
      return documentCommand(step, attempt);
    case 'knowledge_search':
      return knowledgeSearch(step, attempt);
  }
}

async function generate(step: Extract<Step, { type: 'generate' }>, attempt: Attempt): Promise<AttemptResult> {
  const { run, scope } = attempt;
  const messages = [
    ...(step.system === undefined ? [] : [{ role: 'system' as const, content: text(step.system, scope)! }]),
    { role: 'user' as const, content: text(step.prompt, scope)! },
  ];
  const json = step.response_format === 'json';
  const result = await attempt.engine.generate({
    // A step's retries are the workflow's (its retry_on and backoff): the provider call is not retried inside it.
    maxRetries: 0,
    workspaceId: run.workspace_id,
    apiKeyId: run.api_key_id,
    feature: 'workflows',
    model: step.model,
    messages,
    voiceId: step.voice_id ?? null,
    projectId: attempt.projectId,
    userId: run.user_id,
    origin: bySystem(run.workspace_id, `workflow run ${run.id}`, attempt.now),
    maxOutputTokens: step.max_tokens ?? null,
    temperature: step.temperature ?? null,
    responseFormat: json ? { type: 'json' } : { type: 'text' },
    signal: attempt.signal,
    now: attempt.now,
  });
  const choice = result.choices[0]!;
  const output: Record<string, Value> = {
    text: choice.text,
    model: result.model.id,
    finish_reason: choice.finishReason,
    usage: { prompt_tokens: result.usage.inputTokens, completion_tokens: result.usage.outputTokens },
  };
  if (json) {
    try {
      output.json = JSON.parse(choice.text) as Value;
    } catch {
      // The call was made and paid for: its cost counts even though the output is unusable.
      throw Object.assign(
        new StepFailure('invalid_output', `The model's reply is not valid JSON: ${choice.text.slice(0, 200)}`),
        { costUsd: result.costUsd },
      );
    }
  }
  return { output, costUsd: result.costUsd };
}

export function transform(step: Extract<Step, { type: 'transform' }>, scope: Scope): Value {
  const value = renderTemplate(step.value, scope);
  const wrongType = (expected: string) =>
    new StepFailure(
      'invalid_output',
      `${step.function} needs ${expected}; the value is ${value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value}.`,
    );
  switch (step.function) {
    case 'template':
      return value;
    case 'jsonpath': {
      let results: Value[];
      try {
        results = jsonPath(value as never, step.path ?? '$') as Value[];
      } catch (error) {
        throw new StepFailure(
          'invalid_output',
          `The JSONPath ${step.path ?? '$'} could not be applied: ${(error as Error).message}`,
        );
      }
      return results.length === 0 ? null : results.length === 1 ? results[0]! : results;
    }
    case 'extract_json': {
      if (typeof value !== 'string') throw wrongType('text');
      const found = firstJson(value);
      if (found === undefined)
        throw new StepFailure('invalid_output', 'No JSON object or array was found in the text.');
      return found;
    }
    case 'split':
      if (typeof value !== 'string') throw wrongType('text');
      return value.split(step.separator ?? '\n');
    case 'join':
      if (!Array.isArray(value)) throw wrongType('a list');
      return value.map(asText).join(step.separator ?? '\n');
    case 'truncate': {
      if (typeof value !== 'string') throw wrongType('text');
      const max = step.max_length ?? value.length;
      const characters = [...value];
      if (characters.length <= max) return value;
      const cut = characters.slice(0, Math.max(0, max - 1)).join('');
      const atWord = cut.replace(/(?<!\s)\s+\S*$/, '');
      return `${(atWord.length > 0 ? atWord : cut).trimEnd()}…`;
    }
  }
}

/**
 * The body of the first fenced block (```` ```json ````, or ```` ``` ````): what
 * ```` /```(?:json)?\s*\n([\s\S]*?)```/ ```` captures, read in linear time (the pattern would backtrack over the
 * blank lines after an unclosed fence, quadratic in them). The body starts after the last newline of the white space
 * that follows the fence, and ends at the next fence; with no fence after it, no later fence can open a block either.
 */
export function fencedBlock(text: string): string | null {
  for (let at = text.indexOf('```'); at >= 0; at = text.indexOf('```', at + 1)) {
    for (const info of text.startsWith('json', at + 3) ? [4, 0] : [0]) {
      let lastNewline = -1;
      for (let i = at + 3 + info; i < text.length && /\s/.test(text[i]!); i++) if (text[i] === '\n') lastNewline = i;
      if (lastNewline < 0) continue;
      const close = text.indexOf('```', lastNewline + 1);
      return close < 0 ? null : text.slice(lastNewline + 1, close);
    }
  }
  return null;
}

/** The first JSON object or array in a text: a fenced block's, or the first `{`/`[` from which a value parses. */
function firstJson(text: string): Value | undefined {
  const fenced = fencedBlock(text);
  const candidates = fenced !== null ? [fenced, text] : [text];
  for (const candidate of candidates) {
    for (let start = 0; start < candidate.length; start++) {
      const open = candidate[start];
      if (open !== '{' && open !== '[') continue;
      const close = open === '{' ? '}' : ']';
      for (let end = candidate.lastIndexOf(close); end > start; end = candidate.lastIndexOf(close, end - 1)) {
        try {
          return JSON.parse(candidate.slice(start, end + 1)) as Value;
        } catch {
          // a shorter slice may parse
        }
      }
    }
  }
  return undefined;
}

async function documentCommand(
  step: Extract<Step, { type: 'document_command' }>,
  attempt: Attempt,
): Promise<AttemptResult> {
  const { run, scope } = attempt;
  const documentId = asText(renderTemplate(step.document_id, scope));
  if (!/^doc_[0-9A-HJKMNP-TV-Z]{26}$/.test(documentId))
    throw new StepFailure(
      'resource_not_found',
      `document_id rendered to "${documentId.slice(0, 100)}", which is not a document id.`,
    );
  const options = step.options ?? {};
  const instruction = text(options.instructions, scope);
  const common = { model: options.model, voice_id: options.voice_id };
  const LENGTHS = { short: [1, 150], medium: [2, 400], long: [4, 1000] } as const;
  const [depth, words] = options.length ? LENGTHS[options.length] : [undefined, undefined];
  // The options of the workflow step, in the terms of each command of POST /v1/documents/{id}/commands; with no
  // selection, a command works on the whole document.
  const command: Schemas['DocumentCommandRequest'] = (() => {
    switch (step.command) {
      case 'outline':
        return { command: 'outline' as const, ...common, depth, instruction };
      case 'expand':
        return {
          command: 'expand' as const,
          ...common,
          target_words: words,
          instruction,
        } as Schemas['DocumentExpandCommand'];
      case 'summarize':
        return { command: 'summarize' as const, ...common, length: options.length };
      case 'rewrite':
        return { command: 'rewrite' as const, ...common, instruction };
      case 'translate':
        return { command: 'translate' as const, ...common, target_language: options.target_language! };
      case 'cite':
        return {
          command: 'cite' as const,
          model: options.model,
          sources: options.knowledge_base_id ? [options.knowledge_base_id] : [],
        };
    }
  })();
  const clean = Object.fromEntries(
    Object.entries(command).filter(([, value]) => value !== undefined),
  ) as Schemas['DocumentCommandRequest'];
  const result = await commandOnDocument(
    {
      platform: attempt.platform,
      workspaceId: run.workspace_id,
      apiKeyId: run.api_key_id,
      userId: run.user_id,
      origin: bySystem(run.workspace_id, `workflow run ${run.id}`, attempt.now),
      feature: 'workflows',
      // The run's project pays for its steps, whichever project the document is in.
      projectId: attempt.projectId,
      signal: attempt.signal,
      now: attempt.now,
    },
    documentId,
    clean,
    {
      apply: step.apply ?? false,
      onSaved: (trx, saved) =>
        attempt.recordSuccess(trx, outputOf(saved.documentId, saved.version.id, saved.output), saved.costUsd),
    },
  );
  return {
    output: outputOf(result.documentId, result.version?.id ?? null, result.output),
    costUsd: result.costUsd,
    recorded: result.version !== null,
  };
}

const outputOf = (documentId: string, versionId: string | null, text: string): Value => ({
  document_id: documentId,
  version_id: versionId,
  text,
});

async function knowledgeSearch(
  step: Extract<Step, { type: 'knowledge_search' }>,
  attempt: Attempt,
): Promise<AttemptResult> {
  const { platform, run, scope } = attempt;
  const base = await knowledgeBasesOf(platform.db, run.workspace_id)
    .where('id', '=', step.knowledge_base_id)
    .executeTakeFirst();
  if (!base)
    throw new StepFailure('resource_not_found', `The knowledge base ${step.knowledge_base_id} no longer exists.`);
  const query = [...asText(renderTemplate(step.query, scope))].slice(0, 2000).join('');
  const { hits, usage } = await searchKnowledge(
    attempt.engine,
    platform.db,
    base,
    query,
    { topK: step.top_k ?? 5, minScore: step.min_score ?? 0 },
    { workspaceId: run.workspace_id, apiKeyId: run.api_key_id, now: attempt.now, signal: attempt.signal },
  );
  return {
    output: {
      results: hits.map((hit) => ({
        source_id: hit.source_id,
        title: hit.title,
        url: hit.url,
        text: hit.text,
        score: hit.score,
      })),
    },
    costUsd: usage.costUsd,
  };
}
