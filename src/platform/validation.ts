// express-openapi-validator checks every request and every JSON response against generated/openapi.json. Its
// errors become our problem documents: a schema violation anywhere in the request is 422 validation_failed with
// one `errors[]` entry per field; a response that breaks the contract is 500 response_validation_failed.
import * as OpenApiValidator from 'express-openapi-validator';
import type { RequestHandler } from 'express';
import { openApiText } from './spec.ts';
import { Problem, type ProblemFieldError } from './problems.ts';

export function contractValidator(): RequestHandler[] {
  return OpenApiValidator.middleware({
    // A fresh copy: the validator rewrites the document it is given.
    apiSpec: JSON.parse(openApiText),
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: true, removeAdditional: false, allErrors: true },
    validateResponses: { removeAdditional: false, allErrors: true },
    // Authentication and roles are ours (auth.ts): the role list is not something the validator understands.
    validateSecurity: false,
    validateFormats: true,
    // Problem documents and our own 404/405 answers are checked by the tests; routing happens before.
    ignoreUndocumented: true,
  }) as RequestHandler[];
}

interface ValidatorError {
  status?: number;
  message?: string;
  errors?: Array<{ path?: string; message?: string }>;
}

/** `/body/messages/0/role` → `/messages/0/role`; `/query/limit` → `query/limit`; `/headers/idempotency-key` → `header/Idempotency-Key`. */
export function pointerOf(path: string | undefined): string {
  const raw = (path ?? '').replace(/^\.?\/?/, '').replace(/\./g, '/');
  const [where, ...rest] = raw.split('/');
  const name = rest.join('/');
  switch (where) {
    case 'body':
      return `/${name}`;
    case 'query':
      return `query/${name}`;
    case 'path':
    case 'params':
      return `path/${name}`;
    case 'headers':
      return `header/${name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase())}`;
    default:
      return `/${raw}`;
  }
}

/** The problem for an error the validator raised, or undefined if it is not one of its errors. */
export function validatorProblem(error: unknown): Problem | undefined {
  if (typeof error !== 'object' || error === null || !('status' in error)) return undefined;
  const e = error as ValidatorError;
  const isValidatorError = Array.isArray(e.errors);
  if (!isValidatorError) return undefined;
  if (e.status === 415) return new Problem('unsupported_media_type', `${e.message ?? 'Unsupported content type'}; send application/json.`);
  if (e.status === 400) {
    const errors: ProblemFieldError[] = (e.errors ?? []).map((item) => ({
      pointer: pointerOf(item.path),
      detail: (item.message ?? 'is not valid').slice(0, 1000),
    }));
    const n = errors.length;
    return new Problem('validation_failed', `The request has ${n} invalid field${n === 1 ? '' : 's'}.`, { errors });
  }
  if (e.status === 500 && (e.errors ?? []).some((item) => item.path?.startsWith('/response'))) {
    return new Problem('response_validation_failed', 'The server produced a response that breaks its contract. This is a bug on our side; it has been logged.');
  }
  return undefined;
}
