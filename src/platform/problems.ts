// The one catalogue of error codes. Its keys are the spec's ErrorCode enum, so the compiler fails when the spec
// gains or loses a code; test/server/problems.test.ts checks each status against the spec's table.
import type { Response } from 'express';
import type { components } from '../../generated/openapi.ts';
import { locals } from './context.ts';
import type { ProblemShaper } from './feature.ts';

export type ErrorCode = components['schemas']['ErrorCode'];
export type ProblemFieldError = components['schemas']['ProblemFieldError'];

/** The contract's limits of a ProblemFieldError's `pointer` and `detail`. */
export const POINTER_MAX = 512;
export const DETAIL_MAX = 1000;

/** A member name as one segment of a JSON Pointer (RFC 6901). */
export const escapePointer = (name: string) => name.replaceAll('~', '~0').replaceAll('/', '~1');
export type ProblemDocument = components['schemas']['Problem'];

export const problemCatalogue: Record<ErrorCode, { status: number; title: string }> = {
  invalid_json: { status: 400, title: 'The body is not valid JSON' },
  malformed_request: { status: 400, title: 'The request is not valid HTTP' },
  validation_failed: { status: 422, title: 'The request is not valid' },
  unauthenticated: { status: 401, title: 'Authentication required' },
  invalid_embed_key: { status: 401, title: 'The embed key is not valid' },
  insufficient_role: { status: 403, title: 'Your role does not allow this operation' },
  origin_not_allowed: { status: 403, title: 'The page origin is not allowed' },
  csrf_check_failed: { status: 403, title: 'The request failed its CSRF check' },
  chatbot_disabled: { status: 403, title: 'The chatbot is disabled' },
  route_not_found: { status: 404, title: 'No such route' },
  not_found: { status: 404, title: 'Not found' },
  model_not_found: { status: 404, title: 'No such model' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  idempotency_key_in_use: { status: 409, title: 'A request with this Idempotency-Key is still running' },
  api_key_inactive: { status: 409, title: 'The API key is revoked or expired' },
  voice_not_ready: { status: 409, title: 'The brand voice is not ready' },
  member_already_exists: { status: 409, title: 'The person is already a member' },
  last_owner: { status: 409, title: 'The last owner cannot be removed' },
  cannot_remove_self: { status: 409, title: 'A member cannot remove themselves' },
  managed_by_directory: { status: 409, title: 'The member is managed by a directory' },
  directory_token_inactive: { status: 409, title: 'The directory token is revoked' },
  sso_domain_taken: { status: 409, title: 'The domain belongs to another connection' },
  sso_state_invalid: { status: 400, title: 'The sign-in is unknown to this browser' },
  sso_state_expired: { status: 400, title: 'The sign-in expired' },
  sso_response_invalid: { status: 401, title: "The identity provider's answer is not valid" },
  sso_assertion_unsigned: { status: 401, title: 'The assertion is not signed' },
  sso_response_replayed: { status: 401, title: "The identity provider's answer was used already" },
  sso_identity_provider_error: { status: 401, title: 'The identity provider refused the sign-in' },
  sso_email_not_allowed: { status: 403, title: 'The email cannot sign in through this connection' },
  sso_required: { status: 403, title: 'Single sign-on is required for this email' },
  sso_discovery_failed: { status: 422, title: 'The OpenID provider could not be discovered' },
  sso_metadata_invalid: { status: 422, title: 'The SAML metadata is not usable' },
  project_name_taken: { status: 409, title: 'A project with this name exists' },
  conversation_already_escalated: { status: 409, title: 'The conversation was escalated already' },
  conversation_full: { status: 409, title: 'The conversation is full' },
  run_not_cancellable: { status: 409, title: 'The run has already finished' },
  step_not_awaiting_approval: { status: 409, title: 'The step is not awaiting approval' },
  thread_full: { status: 409, title: 'The chat thread is full' },
  version_conflict: { status: 409, title: 'The document has a newer version' },
  workflow_has_active_runs: { status: 409, title: 'The workflow has active runs' },
  request_timeout: { status: 408, title: 'The request did not arrive in time' },
  payload_too_large: { status: 413, title: 'The body is too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported content type' },
  wrong_region: { status: 421, title: 'The workspace is homed in another region' },
  idempotency_key_reused: { status: 422, title: 'The Idempotency-Key was used with a different request' },
  voice_sample_too_short: { status: 422, title: 'The voice sample is too short' },
  voice_sample_too_long: { status: 422, title: 'The voice sample is too long' },
  invalid_workflow_definition: { status: 422, title: 'The workflow definition is not valid' },
  invalid_workflow_inputs: { status: 422, title: 'The run inputs are not valid' },
  invalid_webhook_url: { status: 422, title: 'The webhook URL is not allowed' },
  invalid_source_url: { status: 422, title: 'The source URL is not allowed' },
  image_unreadable: { status: 422, title: 'An image of the request could not be read' },
  webhook_endpoint_limit_reached: { status: 422, title: 'Too many webhook endpoints' },
  event_too_old: { status: 422, title: 'The event is too old to replay' },
  model_unavailable: { status: 422, title: "The model's provider is not configured on this server" },
  context_length_exceeded: { status: 422, title: "The request exceeds the model's context window" },
  policy_violation: { status: 422, title: 'The output broke a compliance rule or a banned phrase of the voice' },
  spend_limit_reached: { status: 402, title: 'A spend limit is reached' },
  selection_out_of_range: { status: 422, title: 'The selection is out of range' },
  user_not_member: { status: 422, title: 'The user is not a member of the workspace' },
  email_not_configured: { status: 422, title: 'This server sends no email' },
  role_above_member: { status: 422, title: "The key's role is above its member's role" },
  rate_limited: { status: 429, title: 'Too many requests' },
  upstream_rate_limited: { status: 429, title: "The model's provider is rate limiting" },
  workspace_busy: { status: 429, title: 'This workspace has too many large requests waiting' },
  headers_too_large: { status: 431, title: 'The request headers are too large' },
  internal_error: { status: 500, title: 'Internal error' },
  response_validation_failed: { status: 500, title: 'The server produced an invalid response' },
  upstream_error: { status: 502, title: "The model's provider failed" },
  not_implemented: { status: 501, title: 'Not implemented' },
  service_unavailable: { status: 503, title: 'Service unavailable' },
  upstream_unavailable: { status: 503, title: "The model's provider is unavailable" },
  images_busy: { status: 503, title: 'This server is reading too many images' },
};

export const problemTypeBase = 'https://docs.content-service.example/problems/';

/** Thrown anywhere in a request; the error handler turns it into a problem document. */
export class Problem extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors: ProblemFieldError[] | undefined;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    detail: string,
    options: { errors?: ProblemFieldError[]; extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = 'Problem';
    this.code = code;
    this.status = problemCatalogue[code].status;
    this.errors = options.errors;
    this.extra = options.extra ?? {};
    this.headers = options.headers ?? {};
  }
}

export function validationFailed(errors: ProblemFieldError[]): Problem {
  // Fields, not errors: one field can break several rules of its schema (a type and a bound), each an entry of `errors`.
  const n = new Set(errors.map((error) => error.pointer)).size;
  return new Problem('validation_failed', `The request has ${n} invalid field${n === 1 ? '' : 's'}.`, { errors });
}

/** How long a client is asked to wait after a lost database connection: the pool reconnects on the next query. */
export const DATABASE_RETRY_AFTER_S = 1;

/** A request that failed on a lost or exhausted database connection, or a deadlock PostgreSQL undid: retry it. */
export function databaseUnavailable(): Problem {
  return new Problem(
    'service_unavailable',
    'The database could not be reached or its connection was lost; retry the request shortly (with the same Idempotency-Key, if it had one).',
    { headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_S) } },
  );
}

export function notFound(what: string, id: string): Problem {
  return new Problem('not_found', `No ${what} ${id} in this workspace.`);
}

export function problemBody(problem: Problem, instance: string, requestId: string): ProblemDocument {
  return {
    type: problemTypeBase + problem.code,
    title: problemCatalogue[problem.code].title,
    status: problem.status,
    // The spec's limits (detail 2000, instance 2048): a detail can quote the request path, which can be longer.
    detail: problem.message.slice(0, 2000),
    instance: uriReference(instance, 2048),
    code: problem.code,
    request_id: requestId,
    ...(problem.errors ? { errors: problem.errors.slice(0, 100) } : {}),
    ...problem.extra,
  };
}

/**
 * The request path as the spec's `instance` (a uri-reference of at most `max` characters). The raw path can be
 * neither: a broken escape (`%E0%A4%A`) or a byte outside URI characters made the problem break its own schema.
 */
export function uriReference(path: string, max: number): string {
  const escaped = path
    .replace(/%(?![0-9A-Fa-f]{2})/g, '%25')
    .replace(/[^A-Za-z0-9\-._~:/?#@!$&'()*+,;=%]/gu, (c) =>
      c.length === 1 && c >= '\ud800' && c <= '\udfff' ? '%EF%BF%BD' : encodeURIComponent(c),
    );
  return escaped.slice(0, max).replace(/%[0-9A-Fa-f]?$/, '');
}

/**
 * The body sendProblem sends: the problem document, reshaped by the operation's feature where it has a shape of its
 * own (Feature.problemShapes: OpenAI's `error` object on chat completions). Idempotency-Key stores this same body,
 * so that a replay is the answer sent.
 */
export function problemResponseBody(
  problem: Problem,
  instance: string,
  requestId: string,
  shape: ProblemShaper | undefined,
): ProblemDocument {
  const body = problemBody(problem, instance, requestId);
  return shape ? shape(problem, body) : body;
}

/** Answers with a problem document; `locals(res).errorCode` feeds the access and request logs. */
export function sendProblem(res: Response, problem: Problem): void {
  const req = res.req;
  locals(res).errorCode = problem.code;
  for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
  res.status(problem.status).type('application/problem+json');
  const { requestId, problemShape } = locals(res);
  res.json(problemResponseBody(problem, req.originalUrl, requestId, problemShape));
}
