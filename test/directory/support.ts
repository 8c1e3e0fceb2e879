// What the directory tests share: a directory token made through the API, SCIM requests as a directory sends them,
// and the workspace's members and member events as the API and the event table show them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'vitest';
import { projectRoot } from '../support/prism.ts';
import type { TestServer } from '../support/server.ts';

export const SCIM_JSON = 'application/scim+json';
export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

export interface ScimAnswer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: a SCIM body, read by the test as RFC 7643 shapes it
  body: any;
}

export async function createDirectoryToken(server: TestServer, directory: string, key = server.ownerKey) {
  const answer = await server.call('POST', '/v1/directory-tokens', {
    key,
    body: { name: `${directory} token`, directory },
  });
  expect(answer.status).toBe(201);
  return answer.body as { id: string; secret: string; scim_base_url: string };
}

// biome-ignore lint/suspicious/noExplicitAny: the SCIM document, walked by OpenAPI's field names
const scimDocument: any = JSON.parse(readFileSync(join(projectRoot, 'generated', 'scim.json'), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
addFormats.default(ajv);
ajv.addSchema(scimDocument, 'scim');

/**
 * The answer is one the SCIM document (openapi/scim.yaml) describes: its status is documented for the path and method,
 * and its body validates against the documented schema, as the API's answers are held to the contract.
 */
function expectDocumented(method: string, path: string, answer: ScimAnswer): void {
  const route = path.split('?')[0]!.replace(/^\/(Users|Groups)\/[^/]+$/, '/$1/{id}');
  const operation = scimDocument.paths[route]?.[method.toLowerCase()];
  if (!operation) return;
  const response = operation.responses[String(answer.status)];
  expect(response, `${method} ${route} documents ${answer.status}`).toBeDefined();
  const schema = response.content?.['application/scim+json']?.schema;
  if (!schema) return;
  const validate = ajv.compile({ $ref: `scim${schema.$ref}` });
  expect(validate(answer.body), `${method} ${route} ${answer.status}: ${ajv.errorsText(validate.errors)}`).toBe(true);
}

/** A SCIM client of one workspace's base URL with one token, sending bodies as `application/scim+json`. */
export function scimClient(base: string, token: string | null) {
  return async (method: string, path: string, body?: unknown): Promise<ScimAnswer> => {
    const headers: Record<string, string> = { Accept: SCIM_JSON };
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers['Content-Type'] = SCIM_JSON;
    const response = await fetch(base + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (text) expect(response.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    const answer = { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
    expectDocumented(method, path, answer);
    return answer;
  };
}

export function expectScimError(answer: ScimAnswer, status: number, scimType?: string): void {
  expect(answer.status).toBe(status);
  expect(answer.body).toMatchObject({ schemas: [ERROR_SCHEMA], status: String(status) });
  if (scimType) expect(answer.body.scimType).toBe(scimType);
}

export async function members(server: TestServer) {
  const answer = await server.call('GET', '/v1/members?limit=100');
  expect(answer.status).toBe(200);
  return answer.body.data as Array<{
    id: string;
    email: string;
    name: string | null;
    role: string;
    scim_source: string | null;
  }>;
}

export async function memberEvents(server: TestServer) {
  const rows = await server.platform.db
    .selectFrom('events')
    .select(['type', 'data'])
    .where('workspace_id', '=', server.workspaceId)
    .where('type', 'like', 'workspace.member.%')
    .orderBy('sequence')
    .execute();
  return rows.map((row) => ({ type: row.type, data: JSON.parse(row.data) }));
}
