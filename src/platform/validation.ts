// express-openapi-validator checks every request and every JSON response against generated/openapi.json. Its
// errors become our problem documents: a schema violation anywhere in the request is 422 validation_failed with
// one `errors[]` entry per field; a response that breaks the contract is 500 response_validation_failed.
// Around it, the checks of what it lets through (see contractValidator).
// The library's per-request plumbing is patched (patches/express-openapi-validator+5.6.2.patch, docs/validator-patch.md).
import { fullFormats } from 'ajv-formats/dist/formats.js';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import './validator-schema-roots.ts';
import { type OperationId, operationTable } from '../../generated/operations.ts';
import { locals } from './context.ts';
import { isDateTime } from './instant.ts';
import {
  DETAIL_MAX,
  escapePointer,
  POINTER_MAX,
  Problem,
  type ProblemFieldError,
  validationFailed,
} from './problems.ts';
import { openApiDocument, openApiText, resolveRef } from './spec.ts';
import { narrowUnionErrors } from './union-errors.ts';

/**
 * The validator (which sees a HEAD as its GET), with before it the content type of an optional body and the numbers
 * of the query string, and after it the strings no database keeps as sent (NUL, lone surrogates).
 */
export function contractValidator(): RequestHandler[] {
  return [
    checkBodyType,
    checkQueryNumbers,
    refuseNonObjectBody,
    ...sharedValidatorMiddleware().map(asGetForHead),
    refuseUnstorableStrings,
  ];
}

/**
 * The contract has no HEAD operations, so the validator would let every HEAD request through unchecked, and a
 * malformed parameter (a date) would reach the handler. A HEAD is its GET without the body: it is validated as that GET.
 */
function asGetForHead(middleware: RequestHandler): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'HEAD') return middleware(req, res, next);
    req.method = 'GET';
    const restore = (error?: unknown) => {
      req.method = 'HEAD';
      next(error);
    };
    try {
      return middleware(req, res, restore);
    } catch (error) {
      req.method = 'HEAD';
      throw error;
    }
  };
}

/**
 * The document the validator is given: a fresh copy (the validator rewrites it), without the `default`s of the
 * workflow definition's schemas. The validator's ajv fills in defaults (useDefaults, not configurable), also while it
 * tries each branch of a oneOf: generate's `temperature` was written into a transform step, whose branch then refused
 * it as an additional property. A definition is also stored as it was sent; its defaults are filled in when it is
 * normalized (src/features/workflows/definition.ts).
 */
function validatorDocument(text: string): Json {
  const document = JSON.parse(text) as Json;
  const strip = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(strip);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    const schema = node as Record<string, unknown>;
    delete schema.default;
    for (const [keyword, value] of Object.entries(schema)) {
      // The members of `properties` are field names (the input definition has a field `default`), not keywords.
      if (keyword === 'properties' && value && typeof value === 'object') Object.values(value).forEach(strip);
      else if (keyword !== 'examples' && keyword !== 'enum' && keyword !== 'const') strip(value);
    }
  };
  for (const [name, schema] of Object.entries(document.components.schemas as Record<string, unknown>))
    if (name.startsWith('Workflow')) strip(schema);
  return document;
}

/**
 * The validator's options for the bundled contract `text` (generated/openapi.json): what the server gives the
 * validator, and what `npm run generate` compiles the validators of (generated/validators.cjs) with.
 */
export function validatorOptions(text: string): Parameters<typeof OpenApiValidator.middleware>[0] {
  return {
    apiSpec: validatorDocument(text) as Parameters<typeof OpenApiValidator.middleware>[0]['apiSpec'],
    // The document is checked against the OpenAPI schema where it is built: `npm run generate` runs the validator
    // with this check on (scripts/validators.ts), besides Redocly's and Spectral's lint; generated/openapi.json is
    // what it checked (`npm run check:generated`). Checked again at every start, it cost the compile of the OpenAPI
    // metaschema and a walk of the whole document before the first request could be served.
    validateApiSpec: false,
    // generated/openapi.json is bundled already (scripts/generate.ts), and bundling it again changes nothing (`npm run
    // generate` checks that, scripts/validators.ts): the validator takes it as it is (part 13 of the patch) instead of
    // walking every reference of the document at every start, and without a copy of its own (validatorDocument made
    // this one for it).
    $refParser: { mode: 'none' },
    // coerceTypes applies to the JSON body only (the validator always coerces path, query and header strings): with
    // true, a body field of the wrong type would be converted silently (`"name": false` to "false") instead of 422.
    validateRequests: {
      allowUnknownQueryParameters: false,
      coerceTypes: false,
      removeAdditional: false,
      allErrors: true,
    },
    validateResponses: { removeAdditional: false, allErrors: true },
    // Authentication and roles are ours (auth.ts, the role check of app.ts): the role list is not something the
    // validator understands. test/server/security.test.ts holds every operation to its security requirement.
    validateSecurity: false,
    // The contract has no multipart operation; the multipart middleware would only pass every request on.
    fileUploader: false,
    validateFormats: true,
    // The library's formats are ajv-formats' fast ones, which check a date's shape only: 2027-02-30 would pass, and
    // be 2 March once parsed. Dates are checked on the calendar (the day of the month, leap years, the hour).
    formats: { date: fullFormats.date, 'date-time': isDateTime },
    // Problem documents and our own 404/405 answers are checked by the tests; routing happens before.
    ignoreUndocumented: true,
  };
}

/**
 * The validator's middleware, made once per process and shared by every app of it. Its Ajv validators are compiled
 * at build time (generated/validators.cjs, see validator-schema-roots.ts); the middleware keeps the ones each
 * operation uses. The contract and the options are the same for every app, so a second app (tests start many
 * servers in one process) reuses them.
 */
let sharedValidator: RequestHandler[] | undefined;

export function sharedValidatorMiddleware(): RequestHandler[] {
  sharedValidator ??= OpenApiValidator.middleware(validatorOptions(openApiText())) as RequestHandler[];
  return sharedValidator;
}

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, walked by the field names of the specification
type Json = Record<string, any>;

/** The query parameters of each operation whose schema is a number or an integer. */
const numericQueryParameters = new Map<string, string[]>();
for (const item of Object.values(openApiDocument.paths)) {
  for (const operation of Object.values(item)) {
    if (!operation.operationId) continue;
    const names = (operation.parameters ?? [])
      .map((p) => resolveRef(p))
      .filter((p) => p?.in === 'query' && ['integer', 'number'].includes(resolveRef(p.schema)?.type))
      .map((p) => p!.name as string);
    if (names.length > 0) numericQueryParameters.set(operation.operationId, names);
  }
}

/** Whether a schema accepts JSON objects only: `type: object`, a oneOf or anyOf of such schemas, or an allOf with one. */
function objectsOnly(node: unknown): boolean {
  const schema = resolveRef(node);
  if (schema?.type === 'object') return true;
  const branches = schema?.oneOf ?? schema?.anyOf;
  if (Array.isArray(branches)) return branches.length > 0 && branches.every(objectsOnly);
  return Array.isArray(schema?.allOf) && schema.allOf.some(objectsOnly);
}

/** The operations whose body, in every content type they take, must be a JSON object. */
const objectBodyOperations = new Set<string>();
for (const item of Object.values(openApiDocument.paths)) {
  for (const operation of Object.values(item)) {
    const media = Object.values((resolveRef(operation.requestBody)?.content ?? {}) as Record<string, Json>);
    if (operation.operationId && media.length > 0 && media.every((type) => objectsOnly(type.schema)))
      objectBodyOperations.add(operation.operationId);
  }
}

/**
 * A parsed body that is not an object (`null`, `true`, `0`, `"text"`, an array) is refused where the operation takes an
 * object, with the answer the validator gives it elsewhere: the validator's discriminator check reads the
 * discriminating member of the body before it checks the body's schema, and cannot read a member of `null`.
 */
function refuseNonObjectBody(req: Request, res: Response, next: NextFunction): void {
  const body: unknown = req.body;
  const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
  if (body !== undefined && !isObject && objectBodyOperations.has(locals(res).operationId!)) {
    throw validationFailed([{ pointer: '', detail: 'must be object' }]);
  }
  next();
}

/** A decimal number as JSON writes it (leading zeros allowed): not hex, binary, `Infinity`, `NaN` or blanks. */
const DECIMAL = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * The validator turns a query string into a number with `+value`: `0x10` would be 16, and `1e309` and `Infinity`
 * would be Infinity, which Ajv lets past `minimum` and `maximum`, so a limit would reach the database as Infinity.
 * Only finite decimal numbers, as JSON writes them, are numbers here.
 */
function checkQueryNumbers(req: Request, res: Response, next: NextFunction): void {
  const names = numericQueryParameters.get(locals(res).operationId!);
  if (names) {
    const query = req.query as Record<string, unknown>;
    const errors: ProblemFieldError[] = [];
    for (const name of names) {
      if (!(name in query)) continue;
      const values = ([] as unknown[]).concat(query[name]);
      if (
        values.some((value) => typeof value !== 'string' || !DECIMAL.test(value) || !Number.isFinite(Number(value)))
      ) {
        errors.push({ pointer: `query/${name}`, detail: 'must be a finite decimal number' });
      }
    }
    if (errors.length > 0) throw validationFailed(errors);
  }
  next();
}

/**
 * A body must be of a content type its operation accepts, also where the body is optional: the validator checks
 * the type only of a required body, so a body of another type (or without one) would be ignored and the operation
 * run as if none had been sent. No body at all stays fine.
 */
function checkBodyType(req: Request, res: Response, next: NextFunction): void {
  const operation = operationTable[locals(res).operationId!];
  const accepted = operation?.requestContentTypes as readonly string[] | undefined;
  // req.is is false for a body of another type or without a Content-Type; it counts `Content-Length: 0` as a body.
  const hasBody = req.get('transfer-encoding') !== undefined || Number(req.get('content-length') ?? 0) > 0;
  if (accepted && accepted.length > 0 && hasBody && req.is([...accepted]) === false) {
    throw new Problem(
      'unsupported_media_type',
      `${req.get('content-type') ? `Content-Type ${req.get('content-type')!.slice(0, 100)} is not accepted` : 'The body has no Content-Type'}; send ${accepted.join(' or ')}.`,
    );
  }
  next();
}

/** U+0000, or a lone surrogate (UTF-16 that is not Unicode text, so not UTF-8 either). */
const unstorable = (text: string) => text.includes('\u0000') || !text.isWellFormed();

/** The JSON pointers, under `at`, of every string (value or member name) of `value` that is unstorable. */
function unstorablePointers(value: unknown, at: string, found: string[]): string[] {
  if (found.length >= 100) return found;
  if (typeof value === 'string') {
    if (unstorable(value)) found.push(at);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => {
      unstorablePointers(item, `${at}/${i}`, found);
    });
  } else if (value !== null && typeof value === 'object') {
    for (const [name, item] of Object.entries(value)) {
      const pointer = `${at}/${escapePointer(name)}`;
      if (unstorable(name)) found.push(pointer);
      else unstorablePointers(item, pointer, found);
    }
  }
  return found;
}

/**
 * Strings that no database keeps as sent are refused in every part of a request, with 422 naming each: U+0000
 * (PostgreSQL cannot store it in text or jsonb, SQLite can: refusing it on both keeps them alike) and lone surrogates
 * (both databases would store U+FFFD while the answer echoed the surrogate). No field of this API has a use for either. Headers
 * cannot carry them (Node's parser refuses NUL, see client-errors.ts, and reads bytes as Latin-1); the body, the
 * query and the path can.
 */
function refuseUnstorableStrings(req: Request, res: Response, next: NextFunction): void {
  const pointers = req.body === undefined ? [] : unstorablePointers(req.body, '', []);
  for (const name in req.query as Record<string, unknown>) {
    if (unstorable(name) || unstorablePointers((req.query as Record<string, unknown>)[name], '', []).length > 0)
      pointers.push(`query/${name}`);
  }
  if (req.path.includes('%00')) {
    const template = operationTable[locals(res).operationId!]?.path.split('/') ?? [];
    req.path.split('/').forEach((segment, i) => {
      const name = /^\{(.+)\}$/.exec(template[i] ?? '')?.[1];
      if (name && segment.includes('%00')) pointers.push(`path/${name}`);
    });
  }
  if (pointers.length > 0) {
    throw validationFailed(
      pointers.map((pointer) => ({
        pointer: pointer.slice(0, POINTER_MAX),
        detail: 'must be Unicode text without the NUL character (U+0000) or lone surrogates',
      })),
    );
  }
  next();
}

interface ValidatorError {
  status?: number;
  message?: string;
  errors?: Array<{ path?: string; message?: string }>;
}

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
/** The schema of an operation's JSON body, when it takes one. */
function bodySchemaOf(operationId: string | undefined): unknown {
  const operation = operationId ? operationTable[operationId as OperationId] : undefined;
  if (!operation) return undefined;
  const definition = openApiDocument.paths[operation.path]?.[operation.method];
  return (resolveRef(definition?.requestBody)?.content as Json | undefined)?.['application/json']?.schema;
}

export function validatorProblem(
  error: unknown,
  request?: { path: string; template?: string; operationId?: string; body?: unknown },
): Problem | undefined {
  if (typeof error !== 'object' || error === null || !('status' in error)) return undefined;
  const e = error as ValidatorError;
  const isValidatorError = Array.isArray(e.errors);
  if (!isValidatorError) return undefined;
  if (e.status === 415)
    return new Problem('unsupported_media_type', `${e.message ?? 'Unsupported content type'}; send application/json.`);
  if (e.status === 400) {
    const errors: ProblemFieldError[] = (e.errors ?? []).map((item) => {
      const message = item.message ?? 'is not valid';
      // The discriminator check reports a body without a known discriminating value at the request's path.
      const discriminator =
        request && item.path === request.path
          ? /^'([^']+)' (must be equal to one of the allowed values: .*?)\.?$/.exec(message)
          : null;
      if (discriminator)
        return {
          pointer: `/${escapePointer(discriminator[1]!)}`.slice(0, POINTER_MAX),
          detail: discriminator[2]!.slice(0, DETAIL_MAX),
        };
      return {
        pointer:
          request && item.path === request.path && /malformed uri/.test(message)
            ? malformedPathPointer(request.path, request.template)
            : pointerOf(item.path),
        detail: message.slice(0, DETAIL_MAX),
      };
    });
    const schema = bodySchemaOf(request?.operationId);
    return validationFailed(schema ? narrowUnionErrors(schema, request?.body, errors) : errors);
  }
  // With security validation off, only the response validator raises InternalServerError. Not only errors under
  // `/response`: an undocumented status ("no schema defined for status code") carries the request path, and is a
  // contract break too, not an internal_error.
  if (
    e.status === 500 &&
    (error instanceof OpenApiValidator.error.InternalServerError ||
      (e.errors ?? []).some((item) => item.path?.startsWith('/response')))
  ) {
    return new Problem(
      'response_validation_failed',
      'The server produced a response that breaks its contract. This is a bug on our side; it has been logged.',
    );
  }
  return undefined;
}
