// fast-check arbitraries of requests, driven by the bundled contract (generated/openapi.json): for an operation,
// its path, query, header and body parameters, each either valid by its schema, a nasty value of another type or
// shape, or left out; and whole-request damage (broken JSON, other encodings and content types, wrong methods).

import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { type OperationId, operationTable } from '../../generated/operations.ts';
import { deref, exampleRequest, type Json, operation } from '../support/spec.ts';

/** A JSON number literal that JSON.stringify cannot write (1e309 parses to Infinity). */
export class RawNumber {
  readonly literal: string;
  constructor(literal: string) {
    this.literal = literal;
  }
  toJSON(): string {
    return `RawNumber(${this.literal})`;
  }
}

/** JSON text with RawNumber literals in place. */
export function serialize(value: unknown): string {
  const literals: string[] = [];
  const text = JSON.stringify(value, (_key, item: unknown) => {
    if (item instanceof RawNumber) {
      literals.push(item.literal);
      return `\u0001raw${literals.length - 1}\u0001`;
    }
    return item;
  });
  return (text ?? 'null').replace(/"\\u0001raw(\d+)\\u0001"/g, (_m, i: string) => literals[Number(i)]!);
}

export interface FuzzRequest {
  id: OperationId;
  method: string;
  /** Path parameters, already percent-encoded (or deliberately not). */
  path: Record<string, string>;
  /** Query pairs, already percent-encoded. */
  query: Array<[string, string]>;
  headers: Record<string, string>;
  body:
    | { kind: 'none' }
    | { kind: 'json'; value: unknown; contentType: string }
    | { kind: 'bytes'; bytes: number[] | string; contentType?: string; encoding?: string; gzipped?: boolean };
  caller: 'owner' | 'admin' | 'editor' | 'viewer' | 'none' | 'garbage';
}

const huge = (n: number) => 'é'.repeat(n / 2);

/** Strings nobody should send, and some everybody sends. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\ud800',
    'x\udfffy',
    '\ud83d',
    '\u202eevil\u202c',
    'مرحبا بالعالم',
    '\u200b\u200d\ufeff',
    '👩‍👩‍👧‍👦'.repeat(50),
    '../../etc/passwd',
    "' OR 1=1 --",
    '%00',
    '%',
    '%E0%A4%A',
    '\\',
    '{"a":1}',
    '<script>alert(1)</script>',
    '\r\n\r\nHTTP/1.1 200 OK',
    'null',
    'true',
    '-1',
    '1e309',
    'NaN',
    'Infinity',
    '__proto__',
    'constructor',
    'x'.repeat(256),
    'x'.repeat(513),
    'x'.repeat(5000),
    huge(100_000),
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
);

/** Numbers at the edges, and literals JSON can carry but JavaScript cannot hold. */
export const nastyNumber: fc.Arbitrary<number | RawNumber> = fc.oneof(
  fc.constantFrom(
    0,
    -0,
    -1,
    1,
    0.5,
    1.5,
    2 ** 31,
    -(2 ** 31) - 1,
    2 ** 53,
    -(2 ** 53),
    2 ** 53 + 2,
    1e308,
    Number.MAX_VALUE,
    Number.MIN_VALUE,
    101,
    1000,
  ),
  fc
    .constantFrom('1e309', '-1e309', '1e400', '1e-400', '123456789012345678901234567890', '-0.0', '1E2', '0.1e1')
    .map((literal) => new RawNumber(literal)),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** A value of any JSON type, nasty or not. */
export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: nastyString },
  { weight: 3, arbitrary: nastyNumber },
  {
    weight: 1,
    arbitrary: fc.constantFrom(null, true, false, [], {}, [null], { '': '' }, {
      __proto__: { polluted: true },
    } as unknown),
  },
  { weight: 1, arbitrary: fc.constant(null).map(() => deepNesting(2000)) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

function deepNesting(depth: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { a: value };
  return value;
}

/** A cursor as the server writes them (base64url of JSON), holding what the server never wrote. */
const forgedCursor: fc.Arbitrary<string> = fc
  .record(
    { v: fc.oneof(fc.constant(1), nastyValue), id: nastyValue, at: fc.option(nastyValue, { nil: undefined }) },
    { requiredKeys: ['v', 'id'] },
  )
  .map((position) => Buffer.from(serialize(position), 'utf8').toString('base64url'));

/** Query values as a client would write them: numbers at the edges, words, blanks, forged cursors. */
const nastyQueryValue: fc.Arbitrary<string> = fc.oneof(
  forgedCursor,
  fc.constantFrom(
    '0',
    '-1',
    '1',
    '100',
    '101',
    '9007199254740993',
    '1e309',
    '-1e309',
    'Infinity',
    'NaN',
    '-0',
    '1.5',
    '0x10',
    '',
    ' ',
    'true',
    'false',
    'null',
    '[]',
    'a,b',
    '*',
    'api_key.*',
  ),
  nastyString,
);

/**
 * Percent-encodes every UTF-16 unit, lone surrogates included, as their WTF-8 bytes (`\ud800` → `%ED%A0%80`, which is
 * not UTF-8): encodeURIComponent throws on them, and a server must not.
 */
export function percentEncode(value: string): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    const next = value.charCodeAt(i + 1);
    if (code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(value[i]! + value[i + 1]!);
      i++;
    } else if (code >= 0xd800 && code <= 0xdfff) {
      out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join('');
    } else {
      out += encodeURIComponent(value[i]!).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
    }
  }
  return out;
}

function compilePattern(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern, 'u');
  } catch {
    return undefined;
  }
}

/** Built arbitraries by schema and depth: the contract's schemas share many parts, and building them is slow. */
const built = new WeakMap<object, Map<number, fc.Arbitrary<unknown>>>();

/** An arbitrary of values valid by a JSON Schema (the subset the contract uses), bounded in size. */
export function fromSchema(node: unknown, depth = 0): fc.Arbitrary<unknown> {
  const schema = deref<Json>(node) ?? {};
  if (depth > 5) return fc.constant(null);
  const byDepth = built.get(schema) ?? new Map<number, fc.Arbitrary<unknown>>();
  built.set(schema, byDepth);
  let arbitrary = byDepth.get(depth);
  if (!arbitrary) byDepth.set(depth, (arbitrary = buildFromSchema(schema, depth)));
  return arbitrary;
}

function buildFromSchema(schema: Json, depth: number): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  for (const keyword of ['oneOf', 'anyOf'] as const) {
    if (Array.isArray(schema[keyword]))
      return fc.oneof(...(schema[keyword] as unknown[]).map((branch) => fromSchema(branch, depth + 1)));
  }
  if (Array.isArray(schema.allOf)) {
    const merged: Json = { type: 'object', properties: {}, required: [] };
    for (const part of schema.allOf.map((p: unknown) => deref<Json>(p))) {
      Object.assign(merged.properties, part?.properties ?? {});
      merged.required.push(...(part?.required ?? []));
    }
    return fromSchema(merged, depth + 1);
  }
  const types: string[] = Array.isArray(schema.type)
    ? schema.type
    : schema.type
      ? [schema.type]
      : schema.properties
        ? ['object']
        : ['string'];
  return fc.oneof(...types.map((type) => fromType(type, schema, depth)));
}

function fromType(type: string, schema: Json, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1000 });
    case 'number':
      return fc.double({
        min: schema.minimum ?? -1000,
        max: schema.maximum ?? 1000,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case 'array': {
      const min = schema.minItems ?? 0;
      return fc.array(fromSchema(schema.items, depth + 1), {
        minLength: min,
        maxLength: Math.min(schema.maxItems ?? 4, min + 4),
      });
    }
    case 'object': {
      const properties: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, child] of Object.entries<unknown>(schema.properties ?? {}))
        properties[name] = fromSchema(child, depth + 1);
      if (Object.keys(properties).length === 0)
        return fc.dictionary(fc.stringMatching(/^[a-z_]{1,12}$/), fc.string({ maxLength: 20 }), { maxKeys: 3 });
      return fc.record(properties, {
        requiredKeys: (schema.required ?? []).filter((name: string) => name in properties),
      });
    }
    default: {
      const pattern = typeof schema.pattern === 'string' ? compilePattern(schema.pattern) : undefined;
      if (pattern)
        return fc
          .stringMatching(pattern)
          .filter((s) => s.length <= (schema.maxLength ?? 10_000) && s.length >= (schema.minLength ?? 0));
      if (schema.format === 'date-time')
        return fc
          .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
          .map((d) => d.toISOString());
      if (schema.format === 'email') return fc.emailAddress();
      if (schema.format === 'uri')
        return fc.oneof(
          fc.integer({ min: 1, max: 65535 }).map((port) => `http://127.0.0.1:${port}/hook`),
          fc.webUrl(),
        );
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 200) });
    }
  }
}

/** Replaces the value at a random place of `value` (found by walking it) with `replacement`, or adds or drops a member. */
function damage(value: unknown, choices: number[], replacement: unknown, unknownName: string): unknown {
  if (value === null || typeof value !== 'object' || choices.length === 0) return replacement;
  const [choice, ...rest] = choices;
  if (Array.isArray(value)) {
    if (value.length === 0) return [replacement];
    const i = choice! % value.length;
    return value.map((item, j) => (j === i ? damage(item, rest, replacement, unknownName) : item));
  }
  const entries = Object.entries(value as Json);
  const slot = choice! % (entries.length + 2);
  if (slot === entries.length) return { ...(value as Json), [unknownName]: replacement };
  if (slot === entries.length + 1 && entries.length > 0) return Object.fromEntries(entries.slice(1));
  const [name, item] = entries[slot % Math.max(entries.length, 1)] ?? [unknownName, undefined];
  return {
    ...(value as Json),
    [name]: item === undefined ? replacement : damage(item, rest, replacement, unknownName),
  };
}

const contentTypes = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json;;',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'application/merge-patch+json',
  'application/problem+json',
  'application/yaml',
  '*/*',
  'json',
  '',
];

/** Bodies no schema describes: broken JSON, other encodings, compression that is not. */
function brokenBody(exampleText: string): fc.Arbitrary<FuzzRequest['body']> {
  return fc.oneof(
    fc
      .integer({ min: 0, max: Math.max(exampleText.length - 1, 0) })
      .map((n) => ({ kind: 'bytes' as const, bytes: exampleText.slice(0, n), contentType: 'application/json' })),
    fc
      .constantFrom(
        '{',
        '[',
        '{"a":}',
        'nul',
        '\ufeff{}',
        `${exampleText}garbage`,
        '{"a":1,"a":2}',
        '{"a":"\\ud800"}',
        '{"a":"\\u0000"}',
        '"\\u0000"',
        '1e309',
        '[1e309]',
        '{"__proto__":{"x":1}}',
        ' ',
        '\n',
      )
      .map((text) => ({ kind: 'bytes' as const, bytes: text, contentType: 'application/json' })),
    fc
      .constantFrom(...contentTypes)
      .map((contentType) => ({ kind: 'bytes' as const, bytes: exampleText, contentType })),
    fc.constant({ kind: 'bytes' as const, bytes: exampleText }),
    fc.constant({
      kind: 'bytes' as const,
      bytes: [0xff, 0xfe, 0x7b, 0x00, 0x7d, 0x00] as number[],
      contentType: 'application/json',
    }),
    fc.constant({
      kind: 'bytes' as const,
      bytes: [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d] as number[],
      contentType: 'application/json',
    }),
    fc
      .constantFrom('gzip', 'deflate', 'br', 'compress', 'identity', 'gzip, gzip')
      .map((encoding) => ({ kind: 'bytes' as const, bytes: exampleText, contentType: 'application/json', encoding })),
    fc.constant({
      kind: 'bytes' as const,
      bytes: exampleText,
      contentType: 'application/json',
      encoding: 'gzip',
      gzipped: true,
    }),
    fc.constant({
      kind: 'bytes' as const,
      bytes: `{"name":"${'x'.repeat(1_100_000)}"}`,
      contentType: 'application/json',
    }),
  );
}

export interface KnownIds {
  /** Ids of resources that exist in the fuzzed workspace, tried as path parameters. */
  ids: string[];
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];

const requestArbitraries = new WeakMap<KnownIds, Map<OperationId, fc.Arbitrary<FuzzRequest>>>();

/** A request to the operation: mostly shaped by its contract, with one or more parts damaged. */
export function requestFor(id: OperationId, known: KnownIds): fc.Arbitrary<FuzzRequest> {
  const requests = requestArbitraries.get(known) ?? new Map<OperationId, fc.Arbitrary<FuzzRequest>>();
  requestArbitraries.set(known, requests);
  let arbitrary = requests.get(id);
  if (!arbitrary) requests.set(id, (arbitrary = buildRequest(id, known)));
  return arbitrary;
}

function buildRequest(id: OperationId, known: KnownIds): fc.Arbitrary<FuzzRequest> {
  const op = operation(id);
  const table = operationTable[id];
  const parameters: Json[] = (op.parameters ?? []).map((p: unknown) => deref<Json>(p));
  const example = exampleRequest(id);
  const pathParameters = parameters.filter((p) => p.in === 'path');
  const queryParameters = parameters.filter((p) => p.in === 'query');

  // A request that the contract accepts: known ids (or well-formed ones) in the path, some of the query parameters
  // with values of their schema, a body of the body schema (or the example), the operation's method, an owner key.
  const validPath: Record<string, fc.Arbitrary<string>> = {};
  for (const p of pathParameters) {
    const pattern =
      typeof deref<Json>(p.schema)?.pattern === 'string' ? compilePattern(deref<Json>(p.schema).pattern) : undefined;
    const existing = known.ids.filter((value) => pattern?.test(value));
    validPath[p.name] = fc.oneof(
      {
        weight: 3,
        arbitrary:
          existing.length > 0
            ? fc.constantFrom(...existing)
            : fc.constant(encodeURIComponent(String(example.path[p.name]))),
      },
      { weight: 1, arbitrary: fromSchema(p.schema).map((v) => percentEncode(String(v))) },
    );
  }
  const validQuery = fc
    .subarray(queryParameters)
    .chain((chosen) =>
      chosen.length === 0
        ? fc.constant([] as Array<[string, string]>)
        : fc.tuple(
            ...chosen.map((p) =>
              fromSchema(p.schema).map(
                (v) =>
                  [p.name as string, percentEncode(Array.isArray(v) ? v.join(',') : String(v))] as [string, string],
              ),
            ),
          ),
    );
  const content = deref<Json>(op.requestBody)?.content as Json | undefined;
  const schema = content?.['application/json']?.schema;
  const exampleText = serialize(example.body ?? {});
  const validBody: fc.Arbitrary<FuzzRequest['body']> = content
    ? fc
        .oneof(fromSchema(schema), fc.constant(example.body))
        .map((value) => ({ kind: 'json' as const, value, contentType: 'application/json' }))
    : fc.constant({ kind: 'none' as const });
  const base: fc.Arbitrary<FuzzRequest> = fc.record({
    id: fc.constant(id),
    method: fc.constant(table.method.toUpperCase()),
    path: fc.record(validPath),
    query: validQuery,
    headers: fc.option(
      fc.uuid().map((key) => ({ 'Idempotency-Key': key })),
      { nil: {} as Record<string, string> },
    ),
    body: validBody,
    caller: fc.constant('owner' as const),
  });

  // Header values: fetch sends Latin-1 only, and refuses CR, LF and NUL.
  const headerValue = fc
    .oneof(fc.string({ minLength: 1, maxLength: 300 }), nastyString)
    .map((v) => v.replace(/[^\x20-\xff]/g, '').trim() || 'x');

  // One damage at a time, so that what the server refuses is that damage and not something before it.
  type Damage = (request: FuzzRequest) => FuzzRequest;
  const damages: Array<fc.Arbitrary<Damage>> = [
    fc.constant((request: FuzzRequest) => request),
    fc
      .tuple(
        fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        nastyValue,
        fc.oneof(fc.constant('unknown_field'), nastyString),
      )
      .map(
        ([choices, replacement, name]) =>
          (request: FuzzRequest) =>
            request.body.kind === 'json'
              ? { ...request, body: { ...request.body, value: damage(request.body.value, choices, replacement, name) } }
              : request,
      ),
    brokenBody(content ? exampleText : '{}').map((body) => (request: FuzzRequest) => ({ ...request, body })),
    fc.constant((request: FuzzRequest) => ({ ...request, body: { kind: 'none' as const } })),
    fc.tuple(fc.nat(), nastyQueryValue).map(([i, value]) => (request: FuzzRequest) => {
      if (queryParameters.length === 0) return request;
      const name = queryParameters[i % queryParameters.length]!.name as string;
      return {
        ...request,
        query: [...request.query.filter(([n]) => n !== name), [name, percentEncode(value)] as [string, string]],
      };
    }),
    fc.tuple(nastyString, nastyQueryValue).map(([name, value]) => (request: FuzzRequest) => ({
      ...request,
      query: [...request.query, [percentEncode(name), percentEncode(value)] as [string, string]],
    })),
    fc.constant((request: FuzzRequest) => ({ ...request, query: [...request.query, ...request.query] })),
    fc.tuple(fc.nat(), nastyString).map(([i, value]) => (request: FuzzRequest) => {
      if (pathParameters.length === 0) return request;
      const name = pathParameters[i % pathParameters.length]!.name as string;
      return { ...request, path: { ...request.path, [name]: percentEncode(value) } };
    }),
    fc
      .record(
        {
          'Idempotency-Key': headerValue,
          Accept: fc.constantFrom('text/html', '*/*', 'image/png', 'application/problem+json'),
          'X-Embed-Key': headerValue,
        },
        { requiredKeys: [] },
      )
      .map((headers) => (request: FuzzRequest) => ({ ...request, headers: { ...request.headers, ...headers } })),
    fc.constantFrom(...METHODS).map((method) => (request: FuzzRequest) => ({ ...request, method })),
    fc
      .constantFrom('admin' as const, 'editor' as const, 'viewer' as const, 'none' as const, 'garbage' as const)
      .map((caller) => (request: FuzzRequest) => ({ ...request, caller })),
  ];
  const anyDamage = fc.oneof(
    { weight: 2, arbitrary: damages[0]! },
    { weight: 6, arbitrary: damages[1]! },
    { weight: 2, arbitrary: damages[2]! },
    { weight: 1, arbitrary: damages[3]! },
    { weight: 4, arbitrary: damages[4]! },
    { weight: 1, arbitrary: damages[5]! },
    { weight: 1, arbitrary: damages[6]! },
    { weight: 3, arbitrary: damages[7]! },
    { weight: 1, arbitrary: damages[8]! },
    { weight: 1, arbitrary: damages[9]! },
    { weight: 1, arbitrary: damages[10]! },
  );
  return fc
    .tuple(base, fc.array(anyDamage, { minLength: 1, maxLength: 2 }))
    .map(([request, applied]) => applied.reduce((r, apply) => apply(r), request));
}

/** The URL path and query of a request. */
export function target(request: FuzzRequest): string {
  const path = operationTable[request.id].path.replace(/\{([^}]+)\}/g, (_m, name: string) => request.path[name] ?? 'x');
  const query = request.query.map(([name, value]) => `${name}=${value}`).join('&');
  return query ? `${path}?${query}` : path;
}

/** The body bytes and the headers that describe them. */
export function encodeBody(body: FuzzRequest['body']): { bytes: Buffer | undefined; headers: Record<string, string> } {
  if (body.kind === 'none') return { bytes: undefined, headers: {} };
  if (body.kind === 'json')
    return { bytes: Buffer.from(serialize(body.value), 'utf8'), headers: { 'Content-Type': body.contentType } };
  let bytes: Buffer = typeof body.bytes === 'string' ? Buffer.from(body.bytes, 'utf8') : Buffer.from(body.bytes);
  if (body.gzipped) bytes = gzipSync(bytes);
  const headers: Record<string, string> = {};
  if (body.contentType !== undefined) headers['Content-Type'] = body.contentType;
  if (body.encoding) headers['Content-Encoding'] = body.encoding;
  return { bytes, headers };
}
