// The operations OpenAI SDKs call (chat completions, embeddings, the Responses API, the models) are wire-compatible
// with OpenAI, so their problem documents also carry OpenAI's `error` object (the ChatCompletionProblem schema):
// OpenAI SDKs read `error.message`, `type`, `param` and `code`.
import type { components } from '../../generated/openapi.ts';
import type { ProblemShaper } from './feature.ts';
import type { Problem } from './problems.ts';

function openAiErrorType(status: number): components['schemas']['ChatCompletionError']['type'] {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/**
 * `/messages/0/role` → `messages[0].role`, OpenAI's notation of the field at fault; a parameter's pointer
 * (`path/id`) by the name `names` gives it, else none.
 */
function openAiParam(problem: Problem, names: Readonly<Record<string, string>>): string | null {
  const pointer = problem.errors?.[0]?.pointer;
  if (pointer !== undefined && Object.hasOwn(names, pointer)) return names[pointer]!;
  if (!pointer?.startsWith('/')) return null;
  return pointer
    .slice(1)
    .split('/')
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('')
    .slice(0, 256);
}

export function openAiError(
  problem: Problem,
  names: Readonly<Record<string, string>> = {},
): components['schemas']['ChatCompletionError'] {
  return {
    message: problem.message.slice(0, 2000),
    type: openAiErrorType(problem.status),
    param: openAiParam(problem, names),
    code: problem.code,
  };
}

/** The problem document with OpenAI's `error` object beside it. */
export const withOpenAiError: ProblemShaper = (problem, body) =>
  ({ ...body, error: openAiError(problem) }) as typeof body;

/**
 * `withOpenAiError` for an operation whose parameters OpenAI names otherwise: `{'path/id': 'model'}` makes the
 * `path/id` of `GET /v1/models/{id}` OpenAI's `param: "model"`.
 */
export function withOpenAiErrorNaming(names: Readonly<Record<string, string>>): ProblemShaper {
  return (problem, body) => ({ ...body, error: openAiError(problem, names) }) as typeof body;
}
