// The contract's security requirements, enforced by our own authentication (src/platform/auth.ts, the chatbots'
// embed-key authenticator and the role check of src/app.ts): the validator's own security check is off
// (validateSecurity: false in src/platform/validation.ts), so this test is what holds the server to them. It reads
// every operation's `security` from generated/openapi.json itself (not from the generated operation table the server
// uses), and against a real server on loopback:
//   - an operation with `security: []` is reached without credentials (whatever it answers, not 401 or 403);
//   - a bearerAuth operation without credentials, or with a key that is not valid, answers its documented 401 problem
//     (unauthenticated), and with an embed key instead of a bearer key too;
//   - a bearerAuth operation whose requirement names a role answers 403 insufficient_role to a key of every lower
//     role, and does not refuse a key of that role for its role;
//   - an embedKey operation without the key, or with a bearer key only, answers its documented 401 problem.
// Path parameters are placeholders and no body is sent: authentication comes before routing's parameters and the
// body are looked at, so the answer is the refusal or, for a caller let in, whatever the operation says of them.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Role } from '../../src/platform/context.ts';
import { type Answer, startTestServer, type TestServer } from '../support/server.ts';
import { deref, type Json, schemaErrors, spec } from '../support/spec.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const ROLES: Role[] = ['viewer', 'editor', 'admin', 'owner'];

interface Operation {
  id: string;
  method: string;
  path: string;
  /** The path with its parameters filled in by placeholders. */
  url: string;
  security: Array<Record<string, string[]>>;
  responses: Json;
  pointer: string;
}

const escapePointer = (s: string) => s.replaceAll('~', '~0').replaceAll('/', '~1');
const operations: Operation[] = [];
for (const [path, item] of Object.entries(spec.paths as Record<string, Json>)) {
  for (const method of METHODS) {
    const op = item[method] as Json | undefined;
    if (!op) continue;
    operations.push({
      id: op.operationId,
      method: method.toUpperCase(),
      path,
      url: path.replace(/\{[^}]+\}/g, 'placeholder_0'),
      security: op.security ?? spec.security ?? [],
      responses: op.responses,
      pointer: `/paths/${escapePointer(path)}/${method}/responses`,
    });
  }
}

/** The schema pointer of the documented problem answer for `status` (following a shared response's `$ref`). */
function problemPointer(op: Operation, status: number): string | undefined {
  let node: Json | undefined = op.responses[String(status)];
  let pointer = `${op.pointer}/${status}`;
  for (let hops = 0; typeof node?.$ref === 'string' && hops < 20; hops++) {
    pointer = node.$ref.replace(/^#/, '');
    node = deref(node);
  }
  return node?.content?.['application/problem+json']
    ? `${pointer}/content/application~1problem+json/schema`
    : undefined;
}

function expectDocumentedProblem(op: Operation, answer: Answer, status: number, code: string): void {
  expect({ status: answer.status, code: answer.body?.code }, `${op.method} ${op.path}`).toEqual({ status, code });
  expect(answer.headers.get('content-type') ?? '').toMatch(/^application\/problem\+json/);
  const pointer = problemPointer(op, status);
  expect(pointer, `${op.method} ${op.path} documents no ${status} problem`).toBeDefined();
  expect(schemaErrors(pointer!, answer.body), `${op.method} ${op.path}`).toEqual([]);
}

const bearerRole = (op: Operation): Role | undefined => {
  const requirement = op.security.find((r) => 'bearerAuth' in r);
  return requirement ? ((requirement.bearerAuth![0] ?? 'viewer') as Role) : undefined;
};
const isPublic = (op: Operation) => op.security.length === 0 || op.security.some((r) => Object.keys(r).length === 0);
const isEmbed = (op: Operation) => op.security.some((r) => 'embedKey' in r);

describe('the contract security requirement of every operation', () => {
  let server: TestServer;
  const keys = new Map<Role, string>();

  beforeAll(async () => {
    server = await startTestServer();
    keys.set('owner', server.ownerKey);
    for (const role of ['viewer', 'editor', 'admin'] as const) keys.set(role, (await server.createKey(role)).secret);
  });
  afterAll(async () => {
    await server?.close();
  });

  test('the contract has operations of each kind, and every one is one of them', () => {
    const kinds = operations.map((op) =>
      isPublic(op) ? 'public' : isEmbed(op) ? 'embed' : bearerRole(op) ? 'bearer' : 'unknown',
    );
    expect(kinds).not.toContain('unknown');
    expect(new Set(kinds)).toEqual(new Set(['public', 'embed', 'bearer']));
    // Every bearer requirement names one role of the four.
    for (const op of operations.filter((o) => !isPublic(o) && !isEmbed(o)))
      expect(ROLES, op.id).toContain(bearerRole(op));
  });

  test('operations with `security: []` are reached without credentials', async () => {
    const open = operations.filter(isPublic);
    expect(open.length).toBeGreaterThan(0);
    for (const op of open) {
      const answer = await server.call(op.method, op.url, { key: null });
      expect(
        [401, 403],
        `${op.method} ${op.path} answered ${answer.status} ${answer.text.slice(0, 200)}`,
      ).not.toContain(answer.status);
    }
  });

  test('bearerAuth operations answer 401 without a key, with a key that is not valid, and with an embed key only', async () => {
    for (const op of operations.filter((o) => !isPublic(o) && !isEmbed(o))) {
      expectDocumentedProblem(op, await server.call(op.method, op.url, { key: null }), 401, 'unauthenticated');
      expectDocumentedProblem(
        op,
        await server.call(op.method, op.url, { key: 'cs_live_0000000000000000000000000000000000000000' }),
        401,
        'unauthenticated',
      );
      expectDocumentedProblem(
        op,
        await server.call(op.method, op.url, { key: null, headers: { 'X-Embed-Key': 'emb_placeholder' } }),
        401,
        'unauthenticated',
      );
    }
  });

  test('bearerAuth operations answer 403 insufficient_role to every role below the one they name, and let that role in', async () => {
    let refusals = 0;
    for (const op of operations.filter((o) => !isPublic(o) && !isEmbed(o))) {
      const minimum = bearerRole(op)!;
      for (const role of ROLES.slice(0, ROLES.indexOf(minimum))) {
        expectDocumentedProblem(
          op,
          await server.call(op.method, op.url, { key: keys.get(role)! }),
          403,
          'insufficient_role',
        );
        refusals++;
      }
      // The role named is not refused for its role (what the operation says of the placeholders is its own business).
      // Safe to call: every placeholder names nothing, and no body is sent.
      const answer = await server.call(op.method, op.url, { key: keys.get(minimum)! });
      expect(
        ['unauthenticated', 'insufficient_role'],
        `${op.method} ${op.path} with a ${minimum} key: ${answer.status} ${answer.text.slice(0, 200)}`,
      ).not.toContain(answer.body?.code);
    }
    expect(refusals).toBeGreaterThan(0);
  });

  test('embedKey operations answer 401 without the embed key, and to a bearer key alone', async () => {
    const embed = operations.filter(isEmbed);
    expect(embed.length).toBeGreaterThan(0);
    for (const op of embed) {
      expectDocumentedProblem(op, await server.call(op.method, op.url, { key: null }), 401, 'invalid_embed_key');
      expectDocumentedProblem(
        op,
        await server.call(op.method, op.url, { key: server.ownerKey }),
        401,
        'invalid_embed_key',
      );
      expectDocumentedProblem(
        op,
        await server.call(op.method, op.url, { key: null, headers: { 'X-Embed-Key': 'emb_not_a_key' } }),
        401,
        'invalid_embed_key',
      );
    }
  });
});
