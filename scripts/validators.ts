// generated/validators.cjs: the Ajv validators of every operation's request and response, compiled at build time
// (part of `npm run generate`). The server hands them to express-openapi-validator instead of compiling them when an
// operation's first request arrives (src/platform/validator-schema-roots.ts).
//
// How: the validator itself runs here, on the document and with the options the server gives it
// (validatorOptions in src/platform/validation.ts), and every operation is driven through it, in an app of its own on
// loopback: its documented example request without a body and with each content type it takes, answered through
// res.json so that the validator builds the response validators of every status. Its Ajv instances are made with
// Ajv's `code.source` option, so that each function they compile keeps its code; Ajv's standalone code generation
// (`ajv/dist/standalone`) then writes those functions, and the components they call, as one module per instance.
// Nothing is restated: the schemas, options, keywords and formats are the validator's own.
//
// What the code cannot hold is taken from the instance that uses it (GeneratedRuntime in validator-schema-roots.ts):
// the format functions (ours and the validator's), and the validator's keywords that compile to a function rather
// than to code (`x-eov-res-serdes`, which turns a Date in an answer into text; `readOnly`, `writeOnly` and
// `x-eov-req-serdes` where a contract uses them): the generated code calls the keyword's own compile with the
// schema and schema path it was compiled with.
import { once } from 'node:events';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { _, type Ajv, Name } from 'ajv';
import * as standaloneModule from 'ajv/dist/standalone/index.js';
import express, { type NextFunction, type Request, type Response } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { validatorOptions } from '../src/platform/validation.ts';
import { recordRoots } from '../src/platform/validator-schema-roots.ts';

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, walked by the field names of the specification
type Json = Record<string, any>;

const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;

/** The name the generated code reads the instance's runtime values from (GeneratedRuntime). */
const RUNTIME = new Name('runtime');

type AjvInstance = Ajv;

/** Ajv's standalone code generation (a CommonJS module whose export is the function). */
const standaloneCode = (standaloneModule as unknown as { default: (ajv: Ajv, refs: Record<string, string>) => string })
  .default;
/** A keyword's definition as the validator passes it to addKeyword. */
interface KeywordDefinition {
  keyword: string;
  compile?: (schema: unknown, parentSchema: Json, it: Json) => unknown;
  [option: string]: unknown;
}
type AddKeyword = Ajv['addKeyword'];

const library = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));

/**
 * The validator makes its Ajv instances with framework/ajv/factory.js, which it reads at each call. Here they are
 * made with their code kept, the formats read from the runtime, and each compiled keyword given the code that makes
 * it again at run time.
 */
function keepingCode(): () => void {
  const factory = library('./framework/ajv/factory.js') as {
    factoryAjv: (version: string, options: Json) => AjvInstance;
  };
  const original = factory.factoryAjv;
  factory.factoryAjv = (version, options) => {
    const ajv = original(version, {
      ...options,
      code: { ...options.code, source: true, formats: _`${RUNTIME}.formats` },
    });
    const addKeyword = ajv.addKeyword.bind(ajv);
    ajv.addKeyword = ((definition: KeywordDefinition) => {
      const compile = definition.compile;
      if (!compile) return addKeyword(definition as Parameters<AddKeyword>[0]);
      return addKeyword({
        ...definition,
        compile(this: unknown, schema: unknown, parentSchema: Json, it: Json) {
          const validate = compile.call(this, schema, parentSchema, it);
          // Ajv keeps a compiled keyword as a scope value keyed by the function; registered first with its code,
          // Ajv's own registration finds it and the standalone code can write it.
          it.gen.scopeValue('keyword', {
            ref: validate,
            code: _`${RUNTIME}.keyword(${definition.keyword}, ${schemaCode(ajv, definition.keyword, schema, parentSchema)}, ${it.schemaPath.str as string})`,
          });
          return validate;
        },
      } as KeywordDefinition as Parameters<AddKeyword>[0]);
    }) as AddKeyword;
    return ajv;
  };
  return () => {
    factory.factoryAjv = original;
  };
}

/**
 * The code of a compiled keyword's schema: JSON as it is, or the validator's serializer of a format (the one its Ajv
 * instance holds; the answer's document holds a copy of it, with the same functions).
 */
function schemaCode(ajv: AjvInstance, keyword: string, schema: unknown, parentSchema: Json) {
  const serDesMap = (ajv.opts as { serDesMap?: Record<string, Json> }).serDesMap ?? {};
  const serDes = serDesMap[parentSchema.format];
  if (serDes && schema !== null && typeof schema === 'object') {
    const same = (a: Json, b: Json) => Object.entries(a).every(([name, value]) => b[name] === value);
    if (same(schema, serDes) && same(serDes, schema)) return _`${RUNTIME}.serDes(${parentSchema.format as string})`;
  }
  if (schema === undefined || hasFunction(schema))
    throw new Error(`the keyword ${keyword} is compiled with a schema that is not JSON; it cannot be written as code`);
  return _`${schema as string}`;
}

function hasFunction(value: unknown): boolean {
  if (typeof value === 'function') return true;
  if (value === null || typeof value !== 'object') return false;
  return Object.values(value).some(hasFunction);
}

/** The node itself, or what its `$ref` (a pointer into `document`) points at. */
function resolve(document: Json, node: unknown): Json | undefined {
  let current = node as Json | undefined;
  for (let hops = 0; typeof current?.$ref === 'string' && hops < 20; hops++) {
    current = (current.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce<Json | undefined>((n, part) => n?.[part.replaceAll('~1', '/').replaceAll('~0', '~')], document);
  }
  return current;
}

function firstExample(document: Json, holder: Json | undefined): unknown {
  if (!holder) return undefined;
  if (holder.examples && !Array.isArray(holder.examples))
    return resolve(document, Object.values<Json>(holder.examples)[0])?.value;
  if (holder.example !== undefined) return holder.example;
  const schema = resolve(document, holder.schema);
  return schema?.examples?.[0] ?? schema?.default ?? schema?.enum?.[0];
}

export interface ExampleRequest {
  operationId: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
}

/**
 * Each operation's requests built from its documented examples (required query and header parameters): one without
 * a body, and one per content type of its body, with the example body (as JSON; a body of another type is not
 * parsed by the app that sends them, which does not change what is compiled). Sorted by operationId, so that the
 * generated code is the same on every run.
 */
export function exampleRequests(document: Json): ExampleRequest[] {
  const requests: ExampleRequest[] = [];
  const operations: Array<[string, string, Json]> = [];
  for (const [path, item] of Object.entries<Json>(document.paths))
    for (const method of METHODS) if (item[method]?.operationId) operations.push([path, method, item[method]]);
  operations.sort(([, , a], [, , b]) => (a.operationId as string).localeCompare(b.operationId));
  for (const [path, method, operation] of operations) {
    let url = path;
    const query = new URLSearchParams();
    const headers: Record<string, string> = { Accept: 'application/json' };
    for (const raw of operation.parameters ?? []) {
      const parameter = resolve(document, raw)!;
      const value = firstExample(document, parameter);
      if (parameter.in === 'path') url = url.replace(`{${parameter.name}}`, encodeURIComponent(String(value)));
      else if (parameter.in === 'query' && parameter.required && value !== undefined)
        query.set(parameter.name, String(value));
      else if (parameter.in === 'header' && parameter.required && value !== undefined)
        headers[parameter.name] = String(value);
    }
    const target = query.size > 0 ? `${url}?${query}` : url;
    const base = { operationId: operation.operationId as string, method: method.toUpperCase(), path: target };
    const content = (resolve(document, operation.requestBody)?.content ?? {}) as Json;
    const types = Object.keys(content);
    if (!resolve(document, operation.requestBody)?.required || types.length === 0)
      requests.push({ ...base, headers, body: undefined });
    for (const type of types) {
      const example = firstExample(document, content[type]) ?? {};
      requests.push({
        ...base,
        headers: { ...headers, 'Content-Type': type },
        body: typeof example === 'string' && type !== 'application/json' ? example : JSON.stringify(example),
      });
    }
  }
  return requests;
}

/**
 * Sends every example request through `middleware` (the validator's) in an app of its own on loopback; what passes
 * is answered with an empty JSON object, which makes the validator build the operation's response validators.
 * Resolves with the operations whose example request passed the request validation.
 */
export async function driveValidator(
  middleware: express.RequestHandler[],
  requests: ExampleRequest[],
): Promise<Set<string>> {
  const app = express();
  app.use(express.json({ strict: false, limit: '10mb' }));
  app.use(middleware);
  app.use((_req: Request, res: Response) => {
    res.setHeader('X-Validated', 'true');
    res.status(200).json({});
  });
  // The empty answer does not match the operation's schemas (it is not meant to), and a body the app does not parse
  // is missing: the validator's errors are expected, what counts is the compile. Any other error is not.
  const failures: unknown[] = [];
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (!(error instanceof Error && 'status' in error && Array.isArray((error as { errors?: unknown }).errors)))
      failures.push(error);
    if (!res.headersSent) res.status(500).end();
  });
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const passed = new Set<string>();
  try {
    for (const request of requests) {
      const response = await fetch(base + request.path, {
        method: request.method,
        headers: request.headers,
        body: request.body,
      });
      await response.arrayBuffer();
      if (response.headers.get('x-validated') === 'true') passed.add(request.operationId);
    }
  } finally {
    server.close();
    server.closeAllConnections();
  }
  if (failures.length > 0) throw failures[0];
  return passed;
}

/**
 * The server gives the validator its document as bundled (validatorOptions: `$refParser: { mode: 'none' }`), which
 * is what the validator's own bundler makes of it only while bundling changes nothing: a document whose references it
 * would rewrite fails here.
 */
async function checkBundled(document: Json): Promise<void> {
  const refParser = library('@apidevtools/json-schema-ref-parser') as { bundle(document: Json): Promise<Json> };
  const bundled = await refParser.bundle(structuredClone(document));
  if (!isDeepStrictEqual(bundled, document))
    throw new Error(
      "the validator's bundler changes generated/openapi.json; the server gives it the document unbundled ($refParser in validatorOptions)",
    );
}

/**
 * `code` with every character outside ASCII written as its escape (the code is the same program: such characters are
 * in its strings and comments only). V8 keeps a module's source text for as long as the module lives, at two bytes a
 * character when one character is outside Latin-1, one byte otherwise: half the memory for this large file.
 */
function asciiOnly(code: string): string {
  return code.replace(/[^\x00-\x7f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * `code` with each maxLength and minLength check against a number asking the string's `.length` first, and counting
 * with the runtime's characterCount (src/platform/characters.ts). Ajv counts a string's characters (code points) with
 * a loop over it on every check; a string has at most as many characters as UTF-16 units, and at least half as many,
 * so a string of no more units than a maximum (the usual case, and a long text's whole cost) passes without counting,
 * as one with fewer units than a minimum fails without counting. Ajv's loop, seldom called, runs in V8's interpreter:
 * characterCount finds the surrogate pairs with a regular expression instead.
 */
function lengthChecksFirst(code: string): string {
  const required = /const (func\d+) = require\("ajv\/dist\/runtime\/ucs2length"\)\.default/.exec(code);
  if (!required) return code;
  const counter = required[1];
  return code
    .replace(required[0], `const ${counter} = ${RUNTIME}.characterCount`)
    .replaceAll(new RegExp(`\\b${counter}\\((\\w+)\\) > (\\d+)\\b`, 'g'), `($1.length > $2 && ${counter}($1) > $2)`)
    .replaceAll(new RegExp(`\\b${counter}\\((\\w+)\\) < (\\d+)\\b`, 'g'), `($1.length < $2 || ${counter}($1) < $2)`);
}

/** The kind of a validator's Ajv instance, by the options the validator gives each (framework/ajv/options.js). */
function kindName(ajv: AjvInstance): string {
  if (ajv.opts.useDefaults === false) return 'response';
  return ajv.opts.coerceTypes ? 'requestParameters' : 'requestBody';
}

/** The text of generated/validators.cjs for the bundled contract `openApiText`. */
export async function validatorsModule(openApiText: string, header: string): Promise<string> {
  const recording = recordRoots();
  const roots = recording.roots;
  const restore = keepingCode();
  try {
    // The server leaves the check of the document against the OpenAPI schema to this build step.
    const options = { ...validatorOptions(openApiText), validateApiSpec: true };
    await checkBundled(options.apiSpec as Json);
    const middleware = OpenApiValidator.middleware(options) as express.RequestHandler[];
    const document = JSON.parse(openApiText) as Json;
    const requests = exampleRequests(document);
    const passed = await driveValidator(middleware, requests);
    const missed = [...new Set(requests.map((r) => r.operationId))].filter((id) => !passed.has(id));
    if (missed.length > 0)
      throw new Error(`the example request of ${missed.join(', ')} does not pass the request validation`);
    const kinds = roots
      .map((root) => ({ root, name: kindName(root.ajv as unknown as AjvInstance) }))
      .sort((a, b) => a.name.localeCompare(b.name));
    if (new Set(kinds.map((k) => k.name)).size !== kinds.length || kinds.length !== 3)
      throw new Error(`expected the validator's three Ajv instances, found ${kinds.map((k) => k.name).join(', ')}`);
    const parts: string[] = [];
    for (const { root, name } of kinds) {
      const refs = Object.fromEntries([...root.pointers].sort(([a], [b]) => a.localeCompare(b)));
      const code = lengthChecksFirst(standaloneCode(root.ajv as unknown as AjvInstance, refs));
      parts.push(
        `  {\n    name: ${JSON.stringify(name)},\n    options: ${JSON.stringify(root.options)},\n    document: ${JSON.stringify(root.document)},\n` +
          `    create(${RUNTIME}) {\n      const exports = {};\n      const self = ${RUNTIME}.self;\n${code}\n      return exports;\n    },\n  },`,
      );
    }
    return asciiOnly(`${header}'use strict';
// The Ajv validators of every operation's request and response (scripts/validators.ts), by the digest of their
// schema, for each of express-openapi-validator's Ajv instances (src/platform/validator-schema-roots.ts).
exports.kinds = [
${parts.join('\n')}
];
`);
  } finally {
    restore();
    recording.stop();
  }
}
