// The contract suite: walks every operation of the spec and calls the target (the Prism mock, or the server named
// by CONTRACT_BASE_URL) with the generated client. A new operation in the spec is covered without a new test.
import { describe, expect, inject, test } from 'vitest';
import { createContentServiceClient } from '../../generated/client.ts';
import { operationTable, type OperationId } from '../../generated/operations.ts';
import { exampleRequest, invalidRequest, responseContentTypes, responsePointer, schemaErrors, type ExampleRequest } from '../support/spec.ts';

const baseUrl = inject('contractBaseUrl');
const target = inject('contractTarget');
const apiKey = process.env.CONTRACT_API_KEY ?? 'cs_test_contract_suite_key';
const embedKey = process.env.CONTRACT_EMBED_KEY ?? 'emb_contract_suite_key';

interface Answer {
  status: number;
  contentType: string;
  body: unknown;
  headers: Headers;
}

async function call(id: OperationId, request: ExampleRequest, credentials: boolean): Promise<Answer> {
  const op = operationTable[id];
  // The client reads error bodies itself; keep an untouched copy of the answer to check it byte for byte.
  let raw: Response | undefined;
  const fetchAndKeep = async (input: Request) => {
    const response = await fetch(input);
    raw = response.clone();
    return response;
  };
  const client = createContentServiceClient({
    baseUrl,
    maxRetries: 0,
    fetch: fetchAndKeep as typeof fetch,
    ...(credentials && op.auth === 'bearer' ? { apiKey } : {}),
  });
  const headers: Record<string, string> = { ...request.header, Accept: 'application/json, application/problem+json' };
  if (credentials && op.auth === 'embedKey') headers['X-Embed-Key'] = embedKey;
  if (request.contentType) headers['Content-Type'] = request.contentType;
  // The table is dynamic, so the typed signature of the client cannot be used here.
  await (client.request as any)(op.method.toUpperCase(), op.path, {
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
  expect(documented, `content type ${answer.contentType} is documented for ${answer.status}`).toContain(answer.contentType);
  expect(schemaErrors(responsePointer(id, answer.status, answer.contentType), answer.body)).toEqual([]);
}

function expectProblem(id: OperationId, answer: Answer, status: number): void {
  expect(answer.contentType).toBe('application/problem+json');
  expect(operationTable[id].responseStatuses as readonly number[], `${status} is documented`).toContain(status);
  expectMatchesResponse(id, answer);
  expect(answer.body).toMatchObject({ status, type: expect.any(String), title: expect.any(String), code: expect.any(String) });
}

const operations = Object.entries(operationTable).map(([id, op]) => ({ id: id as OperationId, ...op }));

test('the contract has the whole endpoint inventory (80 operations or more)', () => {
  expect(operations.length).toBeGreaterThanOrEqual(80);
});

describe.each(operations)(`$method $path ($id) against the ${target}`, ({ id, successStatus, auth }) => {
  test(`answers ${successStatus} with a body that matches the schema`, async () => {
    const answer = await call(id, exampleRequest(id), true);
    expect(answer.status, JSON.stringify(answer.body)).toBe(successStatus);
    expectMatchesResponse(id, answer);
    if (auth !== 'public') {
      expect(answer.headers.get('ratelimit-policy')).toMatch(/^"default";q=\d+;w=\d+$/);
    }
  });

  test.skipIf(auth === 'public')('answers 401 with a problem document without credentials', async () => {
    const answer = await call(id, exampleRequest(id), false);
    expect(answer.status).toBe(401);
    expectProblem(id, answer, 401);
  });

  const invalid = invalidRequest(id);
  test.skipIf(invalid.serverOnly === true && target === 'mock')(`answers 422 validation_failed for ${invalid.how}`, async () => {
    const answer = await call(id, invalid.request, true);
    // Every schema violation is 422 validation_failed: from the server, and from Prism, which answers with the
    // first example of the operation's 422 (the spec lists validation_failed first).
    expect(answer.status).toBe(422);
    expectProblem(id, answer, 422);
    expect(answer.body).toMatchObject({ code: 'validation_failed' });
  });
});
