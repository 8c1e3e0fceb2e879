// express-openapi-validator checks every request and every JSON response against generated/openapi.json. Its
// errors become our problem documents: a schema violation anywhere in the request is 422 validation_failed with
// one `errors[]` entry per field; a response that breaks the contract is 500 response_validation_failed.
import * as OpenApiValidator from 'express-openapi-validator';
import './validator-route-cache.ts';
import type { RequestHandler } from 'express';
import { openApiText } from './spec.ts';
import { Problem, type ProblemFieldError } from './problems.ts';

export function contractValidator(): RequestHandler[] {
  return OpenApiValidator.middleware({
    // A fresh copy: the validator rewrites the document it is given.
    apiSpec: JSON.parse(openApiText),
    // coerceTypes applies to the JSON body only (the validator always coerces path, query and header strings): with
    // true, a body field of the wrong type was silently converted (`"name": false` became "false") instead of 422.
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false, removeAdditional: false, allErrors: true },
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

/** The spec's limit of ProblemFieldError.pointer; a longer one (a long unknown field name) would break the contract. */
const POINTER_MAX = 512;

/** `/body/messages/0/role` → `/messages/0/role`; `/query/limit` → `query/limit`; `/headers/idempotency-key` → `header/Idempotency-Key`. */
export function pointerOf(path: string | undefined): string {
  return pointerFor(path).slice(0, POINTER_MAX);
}

function pointerFor(path: string | undefined): string {
  // The validator separates with `/` only. Dots are not separators: replacing them turned an unknown field `a.b`
  // into the pointer `/a/b`.
  const raw = (path ?? '').replace(/^\.?\/?/, '');
  const [where, ...rest] = raw.split('/');
  const name = rest.join('/');
  switch (where) {
    case 'body':
      // RFC 6901: the whole body is the empty pointer ("/" would name a member called "").
      return name ? `/${name}` : '';
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

/**
 * The path parameter whose segment of `path` is not valid percent-encoding, as `path/<name>`; the validator reports
 * such a path as a whole ("malformed uri"). `template` is the operation's path (`/v1/api-keys/{id}`).
 */
function malformedPathPointer(path: string, template: string | undefined): string {
  const segments = path.split('/');
  const names = (template ?? '').split('/');
  for (let i = 0; i < segments.length; i++) {
    try {
      decodeURIComponent(segments[i]!);
    } catch {
      const name = /^\{(.+)\}$/.exec(names[i] ?? '')?.[1];
      return `path/${name ?? (segments[i] ?? '').slice(0, 100)}`;
    }
  }
  return 'path';
}

/**
 * The problem for an error the validator raised, or undefined if it is not one of its errors. `request` names the
 * request's path and its operation's path template, to place a malformed path parameter.
 */
export function validatorProblem(error: unknown, request?: { path: string; template?: string }): Problem | undefined {
  if (typeof error !== 'object' || error === null || !('status' in error)) return undefined;
  const e = error as ValidatorError;
  const isValidatorError = Array.isArray(e.errors);
  if (!isValidatorError) return undefined;
  if (e.status === 415) return new Problem('unsupported_media_type', `${e.message ?? 'Unsupported content type'}; send application/json.`);
  if (e.status === 400) {
    const errors: ProblemFieldError[] = (e.errors ?? []).map((item) => ({
      pointer: request && item.path === request.path && /malformed uri/.test(item.message ?? '') ? malformedPathPointer(request.path, request.template) : pointerOf(item.path),
      detail: (item.message ?? 'is not valid').slice(0, 1000),
    }));
    const n = errors.length;
    return new Problem('validation_failed', `The request has ${n} invalid field${n === 1 ? '' : 's'}.`, { errors });
  }
  // With security validation off, only the response validator raises InternalServerError. Not only errors under
  // `/response`: an undocumented status ("no schema defined for status code") carries the request path, and was
  // answered internal_error without being reported as the contract break it is.
  if (e.status === 500 && (error instanceof OpenApiValidator.error.InternalServerError || (e.errors ?? []).some((item) => item.path?.startsWith('/response')))) {
    return new Problem('response_validation_failed', 'The server produced a response that breaks its contract. This is a bug on our side; it has been logged.');
  }
  return undefined;
}
