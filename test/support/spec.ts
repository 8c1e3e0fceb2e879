// Reads the bundled contract and answers the questions the table-driven tests ask of it: what an operation's
// example request is, which response it documents, and whether a body matches its schema.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { type OperationId, operationTable } from '../../generated/operations.ts';
import { projectRoot } from './prism.ts';

/** A JSON document (the contract, a schema) read by path: its fields are what the specification names them. */
// biome-ignore lint/suspicious/noExplicitAny: a document of any shape, walked by the names the assertions give; a type per level would only repeat them
export type Json = Record<string, any>;

export const spec: Json = JSON.parse(readFileSync(join(projectRoot, 'generated', 'openapi.json'), 'utf8'));

/** Follows local `$ref`s (`#/components/...`) of the bundled document. */
export function deref<T = Json>(node: unknown): T {
  let current = node as Json | undefined;
  for (let hops = 0; current && typeof current === 'object' && typeof current.$ref === 'string' && hops < 20; hops++) {
    const pointer = current.$ref.replace(/^#\//, '').split('/');
    current = pointer.reduce<Json | undefined>(
      (n, part) => n?.[part.replaceAll('~1', '/').replaceAll('~0', '~')],
      spec,
    );
  }
  return current as T;
}

const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, discriminator: false });
addFormats.default(ajv);
ajv.addSchema(spec, 'openapi.json');

const escapePointer = (s: string) => s.replaceAll('~', '~0').replaceAll('/', '~1');

/** Validates `value` against the schema at a JSON pointer of the bundled document; returns the errors, or []. */
export function schemaErrors(pointer: string, value: unknown): string[] {
  const validate = ajv.getSchema(`openapi.json#${pointer}`) ?? ajv.compile({ $ref: `openapi.json#${pointer}` });
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
}

export function operation(id: OperationId): Json {
  const { path, method } = operationTable[id];
  return spec.paths[path][method];
}

/** The JSON pointer of a response's schema, following a `$ref` to a shared response component. */
export function responsePointer(id: OperationId, status: number, contentType: string): string {
  const { path, method } = operationTable[id];
  let pointer = `/paths/${escapePointer(path)}/${method}/responses/${status}`;
  const at = (p: string) =>
    p
      .split('/')
      .slice(1)
      .reduce<Json | undefined>((n, part) => n?.[part.replaceAll('~1', '/').replaceAll('~0', '~')], spec);
  for (let node = at(pointer), hops = 0; typeof node?.$ref === 'string' && hops < 20; node = at(pointer), hops++) {
    pointer = node.$ref.replace(/^#/, '');
  }
  return `${pointer}/content/${escapePointer(contentType)}/schema`;
}

export function responseContentTypes(id: OperationId, status: number): string[] {
  const response = deref(operation(id).responses[String(status)]);
  return Object.keys(response?.content ?? {});
}

/** The first named example of a media type, or its `example`. */
export function firstExample(media: Json | undefined): unknown {
  if (!media) return undefined;
  if (media.examples) {
    const first = Object.values<Json>(media.examples)[0];
    return first === undefined ? undefined : deref(first).value;
  }
  return media.example;
}

function parameterExample(parameter: Json): unknown {
  if (parameter.example !== undefined) return parameter.example;
  if (parameter.examples) return firstExample({ examples: parameter.examples });
  return parameter.schema?.examples?.[0] ?? parameter.schema?.default ?? parameter.schema?.enum?.[0];
}

export interface ExampleRequest {
  path: Record<string, string>;
  query: Record<string, unknown>;
  header: Record<string, string>;
  body: unknown;
  contentType: string | undefined;
}

/** A request built only from the documented examples of the operation: what a frontend would send. */
export function exampleRequest(id: OperationId): ExampleRequest {
  const op = operation(id);
  const request: ExampleRequest = { path: {}, query: {}, header: {}, body: undefined, contentType: undefined };
  for (const raw of op.parameters ?? []) {
    const parameter = deref(raw);
    const value = parameterExample(parameter);
    if (parameter.in === 'path') request.path[parameter.name] = String(value);
    else if (parameter.in === 'query' && parameter.required) request.query[parameter.name] = value;
    else if (parameter.in === 'header' && parameter.required) request.header[parameter.name] = String(value);
  }
  const content = deref(op.requestBody)?.content as Json | undefined;
  if (content) {
    request.contentType = 'application/json' in content ? 'application/json' : Object.keys(content)[0];
    request.body = firstExample(content[request.contentType!]);
  }
  return request;
}

export interface InvalidRequest {
  how: string;
  request: ExampleRequest;
  /** The mock cannot tell: Prism does not reject unknown query parameters. */
  serverOnly?: boolean;
}

/** One way to make the example request invalid, in the order a schema can reject it. */
export function invalidRequest(id: OperationId): InvalidRequest {
  const op = operation(id);
  const valid = exampleRequest(id);
  const content = deref(op.requestBody)?.content as Json | undefined;
  if (content?.['application/json']) {
    return { how: 'a JSON body of the wrong type', request: { ...valid, contentType: 'application/json', body: [42] } };
  }
  const parameters = (op.parameters ?? []).map((p: Json) => deref(p));
  const limit = parameters.find((p: Json) => p.in === 'query' && p.name === 'limit');
  if (limit) return { how: 'limit=0', request: { ...valid, query: { ...valid.query, limit: 0 } } };
  const patterned = parameters.find((p: Json) => p.in === 'path' && p.schema?.pattern);
  if (patterned) {
    return {
      how: `a malformed ${patterned.name}`,
      request: { ...valid, path: { ...valid.path, [patterned.name]: 'Not an id!' } },
    };
  }
  const query = parameters.find((p: Json) => p.in === 'query' && (p.schema?.enum || p.schema?.type === 'integer'));
  if (query)
    return {
      how: `an invalid ${query.name}`,
      request: { ...valid, query: { ...valid.query, [query.name]: '!invalid!' } },
    };
  // Prism ignores unknown query parameters; the server rejects them (they are usually a typo of a real one).
  return {
    how: 'an unknown query parameter',
    request: { ...valid, query: { ...valid.query, unknown_parameter: 'x' } },
    serverOnly: true,
  };
}
