// /v1/chat/completions is wire-compatible with OpenAI, so its problem documents also carry OpenAI's `error` object
// (the ChatCompletionProblem schema): OpenAI SDKs read `error.message`, `type`, `param` and `code`.
import type { components } from '../../../generated/openapi.ts';
import type { ProblemShaper } from '../../platform/feature.ts';
import type { Problem } from '../../platform/problems.ts';

function openAiErrorType(status: number): components['schemas']['ChatCompletionError']['type'] {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** `/messages/0/role` → `messages[0].role`, OpenAI's notation of the field at fault. */
function openAiParam(problem: Problem): string | null {
  const pointer = problem.errors?.[0]?.pointer;
  if (!pointer?.startsWith('/')) return null;
  return pointer
    .slice(1)
    .split('/')
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('')
    .slice(0, 256);
}

export function openAiError(problem: Problem): components['schemas']['ChatCompletionError'] {
  return {
    message: problem.message.slice(0, 2000),
    type: openAiErrorType(problem.status),
    param: openAiParam(problem),
    code: problem.code,
  };
}

/** The problem document with OpenAI's `error` object beside it. */
export const withOpenAiError: ProblemShaper = (problem, body) =>
  ({ ...body, error: openAiError(problem) }) as typeof body;
