// The contract suite: walks every operation of the spec and calls each target with the generated client. A new
// operation in the spec is covered without a new test. The targets (test/support/global-setup.ts):
//   - the mock: the Prism mock of the contract, answering from the spec's examples;
//   - the server: a real server with an empty workspace (or the server named by CONTRACT_BASE_URL, alone). Its
//     implemented operations are called with requests that really succeed (test/support/contract-fixtures.ts);
//     the operations of `notImplemented` must answer 501 not_implemented.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { createContentServiceClient } from '../../generated/client.ts';
import { type OperationId, operationTable } from '../../generated/operations.ts';
import { features } from '../../src/features/index.ts';
import { notImplemented } from '../../src/handlers.ts';
import { collectByKey } from '../../src/platform/feature.ts';
import {
  embedHeaders,
  type ImplementedOperationId,
  removeFixtureResources,
  successRequest,
} from '../support/contract-fixtures.ts';
import type { ContractTarget } from '../support/global-setup.ts';
import {
  type ExampleRequest,
  exampleRequest,
  invalidRequest,
  responseContentTypes,
  responsePointer,
  schemaErrors,
} from '../support/spec.ts';

const targets = inject('contractTargets');
const embedKey = process.env.CONTRACT_EMBED_KEY ?? 'emb_contract_suite_key';

/** The client's `request` without its per-path types (the table gives the method and the path at run time). */
type UntypedRequest = (
  method: string,
  path: string,
  init: { params: { path: unknown; query: unknown }; headers: Record<string, string>; body: unknown },
) => Promise<unknown>;

interface Answer {
  status: number;
  contentType: string;
  body: unknown;
  headers: Headers;
}

const SESSION_OPERATIONS = new Set<OperationId>(['getCurrentSession', 'deleteCurrentSession', 'revokeSession']);

/** The session an operation of the current session is made with on the suite's own server; none elsewhere. */
function sessionFor(target: ContractTarget, id: OperationId, ends: boolean) {
  if (id === 'deleteCurrentSession' && ends) return target.sessions?.signOut;
  if (id === 'getCurrentSession' || id === 'deleteCurrentSession') return target.sessions?.current;
  return undefined;
}

async function call(
  target: ContractTarget,
  id: OperationId,
  request: ExampleRequest,
  credentials: boolean,
  /** The success case, which ends the session of deleteCurrentSession: it gets a session of its own. */
  success = false,
): Promise<Answer> {
  const op = operationTable[id];
  // The client reads error bodies itself; keep an untouched copy of the answer to check it byte for byte.
  let raw: Response | undefined;
  const fetchAndKeep = async (input: Request) => {
    const response = await fetch(input);
    raw = response.clone();
    return response;
  };
  // The operations of the current session are made with a session (its cookie and CSRF token) on the server.
  const session = credentials ? sessionFor(target, id, success) : undefined;
  const client = createContentServiceClient({
    baseUrl: target.baseUrl,
    maxRetries: 0,
    fetch: fetchAndKeep as typeof fetch,
    ...(credentials && op.auth === 'bearer' && !session ? { apiKey: target.apiKey } : {}),
  });
  const headers: Record<string, string> = { ...request.header, Accept: 'application/json, application/problem+json' };
  if (session) Object.assign(headers, { Cookie: session.cookie, 'X-CSRF-Token': session.csrfToken });
  if (credentials && op.auth === 'embedKey')
    Object.assign(headers, target.name === 'server' ? await embedHeaders(target) : { 'X-Embed-Key': embedKey });
  if (request.contentType) headers['Content-Type'] = request.contentType;
  // The table is dynamic, so the typed signature of the client cannot be used here.
  await (client.request as unknown as UntypedRequest)(op.method.toUpperCase(), op.path, {
    params: { path: request.path, query: request.query },
    headers,
    body: request.body,
  });
  const response = raw!;
  const text = await response.text();
  const contentType = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
  let body: unknown = text;
  if (/json/.test(contentType) && text) body = JSON.parse(text);
  return { status: response.status, contentType, body, headers: response.headers };
}

function expectMatchesResponse(id: OperationId, answer: Answer): void {
  const documented = responseContentTypes(id, answer.status);
  if (documented.length === 0) {
    expect(answer.body, 'a response documented without content has no body').toBe('');
    return;
  }
  expect(documented, `content type ${answer.contentType} is documented for ${answer.status}`).toContain(
    answer.contentType,
  );
  expect(schemaErrors(responsePointer(id, answer.status, answer.contentType), answer.body)).toEqual([]);
}

function expectProblem(id: OperationId, answer: Answer, status: number): void {
  expect(answer.contentType).toBe('application/problem+json');
  expect(operationTable[id].responseStatuses as readonly number[], `${status} is documented`).toContain(status);
  expectMatchesResponse(id, answer);
  expect(answer.body).toMatchObject({
    status,
    type: expect.any(String),
    title: expect.any(String),
    code: expect.any(String),
  });
}

/** Every answer of the server names its request: X-Request-Id, and the same id in a problem document. */
function expectRequestId(answer: Answer): void {
  const requestId = answer.headers.get('x-request-id');
  expect(requestId, 'X-Request-Id').toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
  if (answer.contentType === 'application/problem+json') expect(answer.body).toMatchObject({ request_id: requestId });
}

/**
 * 501 not_implemented, the server's answer for an operation of `notImplemented`. The spec does not list 501 for
 * any operation (it describes the finished API), so the body is checked against the shared Problem schema.
 */
function expectNotImplemented(answer: Answer): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(501);
  expect(answer.contentType).toBe('application/problem+json');
  expect(schemaErrors('/components/schemas/Problem', answer.body)).toEqual([]);
  expect(answer.body).toMatchObject({ status: 501, code: 'not_implemented', request_id: expect.any(String) });
  expectRequestId(answer);
}

// What the fixtures create is removed before (leftovers of a run that stopped early) and after the run, so that any
// number of runs against one long-lived server (CONTRACT_BASE_URL) stay within the workspace's limits.
const server = targets.find((target) => target.name === 'server');
if (server) {
  beforeAll(() => removeFixtureResources(server));
  afterAll(() => removeFixtureResources(server));
}

const operations = Object.entries(operationTable).map(([id, op]) => ({ id: id as OperationId, ...op }));
const notBuilt = new Set<OperationId>(notImplemented);

test('the contract has the whole endpoint inventory (80 operations or more)', () => {
  expect(operations.length).toBeGreaterThanOrEqual(80);
});

test('notImplemented and the handlers map partition the operations of the contract', () => {
  const implemented = Object.keys(collectByKey(features, 'handlers'));
  expect(new Set(notImplemented).size, 'no operation twice in notImplemented').toBe(notImplemented.length);
  expect(
    implemented.filter((id) => notBuilt.has(id as OperationId)),
    'operations both implemented and not',
  ).toEqual([]);
  expect([...implemented, ...notImplemented].sort()).toEqual(Object.keys(operationTable).sort());
});

// Concurrent: the mock keeps no state, and on the server every test that changes something first creates what it
// changes (contract-fixtures.ts); nothing asserts on counts. The owner key's rate limit (600 requests a minute) is
// well above the ~180 requests of one run.
describe.concurrent.each(targets.map((target) => [target.name, target] as const))('against the %s', (_name, target) => {
  const onServer = target.name === 'server';

  describe.each(operations)('$method $path ($id)', ({ id, successStatus, auth }) => {
    const built = !notBuilt.has(id);
    if (onServer && !built) {
      test(`answers 501 not_implemented to a valid request (not built yet)`, async () => {
        const answer = await call(target, id, exampleRequest(id), true);
        expectNotImplemented(answer);
        if (auth === 'bearer') expect(answer.headers.get('ratelimit-policy')).toMatch(/^"default";q=\d+;w=\d+$/);
      });
    } else {
      // A server the suite did not start (CONTRACT_BASE_URL) has no sessions to give these operations.
      const sessionless = onServer && !target.sessions && SESSION_OPERATIONS.has(id);
      (sessionless ? test.skip : test)(`answers ${successStatus} with a body that matches the schema`, async () => {
        // On the server, the fixtures of the operation first create what the request needs.
        const request = onServer ? await successRequest(id as ImplementedOperationId, target) : exampleRequest(id);
        const answer = await call(target, id, request, true, true);
        expect(answer.status, JSON.stringify(answer.body)).toBe(successStatus);
        expectMatchesResponse(id, answer);
        // The server rate-limits bearer keys only; the mock sends the documented header for embed keys too.
        if (onServer ? auth === 'bearer' : auth !== 'public') {
          expect(answer.headers.get('ratelimit-policy')).toMatch(/^"default";q=\d+;w=\d+$/);
        }
        if (onServer) expectRequestId(answer);
      });
    }
    (auth === 'public' ? test.skip : test)(`answers 401 with a problem document without credentials`, async () => {
      const answer = await call(target, id, exampleRequest(id), false);
      expect(answer.status).toBe(401);
      expectProblem(id, answer, 401);
      if (onServer) expectRequestId(answer);
    });

    const invalid = invalidRequest(id);
    if (onServer && !built) {
      // The server answers 501 right after authentication and the role check, before it parses and validates the
      // body and parameters (src/app.ts), so an invalid request to an operation that is not built gets 501, not
      // 422. When the operation is built, this case becomes the 422 one below.
      test(`answers 501 not_implemented also for ${invalid.how} (checked before validation)`, async () => {
        const answer = await call(target, id, invalid.request, true);
        expectNotImplemented(answer);
      });
    } else {
      (invalid.serverOnly === true && !onServer ? test.skip : test)(
        `answers 422 validation_failed for ${invalid.how}`,
        async () => {
          const answer = await call(target, id, invalid.request, true);
          // Every schema violation is 422 validation_failed: from the server, and from Prism, which answers with the
          // first example of the operation's 422 (the spec lists validation_failed first).
          expect(answer.status, JSON.stringify(answer.body)).toBe(422);
          expectProblem(id, answer, 422);
          expect(answer.body).toMatchObject({ code: 'validation_failed' });
          if (onServer) expectRequestId(answer);
        },
      );
    }
  });
});
