// The bundled contract, loaded once. Everything the server knows about operations comes from here and from
// generated/operations.ts; nothing in src restates a shape of the spec.
import { readFileSync } from 'node:fs';

interface SpecParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
}
type Ref = { $ref: string };
// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, walked by the field names of the specification
type Json = Record<string, any>;

export interface SpecDocument {
  openapi: string;
  servers?: Array<{ url: string; 'x-region'?: string }>;
  paths: Record<
    string,
    Record<string, { operationId?: string; parameters?: Array<SpecParameter | Ref>; requestBody?: unknown }>
  >;
  [key: string]: unknown;
}

export const openApiPath = new URL('../../generated/openapi.json', import.meta.url);
/** The contract's text, read when asked for: the process keeps the parsed document, not the text as well. */
export const openApiText = (): string => readFileSync(openApiPath, 'utf8');
export const openApiDocument = JSON.parse(openApiText()) as SpecDocument;

/** The declared header parameters of each operation (name as written in the spec). */
export const headerParameters: Record<string, string[]> = {};
for (const item of Object.values(openApiDocument.paths)) {
  for (const operation of Object.values(item)) {
    if (!operation.operationId) continue;
    headerParameters[operation.operationId] = (operation.parameters ?? [])
      .map(resolve)
      .filter((p) => p.in === 'header')
      .map((p) => p.name);
  }
}

function resolve(parameter: SpecParameter | Ref): SpecParameter {
  if (!('$ref' in parameter)) return parameter;
  const name = parameter.$ref.replace('#/components/parameters/', '');
  return (openApiDocument.components as { parameters: Record<string, SpecParameter> }).parameters[name]!;
}

/** The node itself, or what its `$ref` (a pointer into this document) points at, following references. */
export function resolveRef(node: unknown): Json | undefined {
  let current = node as Json | undefined;
  for (let hops = 0; typeof current?.$ref === 'string' && hops < 20; hops++) {
    current = (current.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce<Json | undefined>((n, part) => n?.[part.replaceAll('~1', '/').replaceAll('~0', '~')], openApiDocument);
  }
  return current;
}

/** A copy of a schema whose references into this document (`#/…`) point into the same document under `id`. */
export function rebasedRefs(node: unknown, id: string): unknown {
  if (Array.isArray(node)) return node.map((item) => rebasedRefs(item, id));
  if (node === null || typeof node !== 'object') return node;
  const copy: Json = {};
  for (const [key, value] of Object.entries(node)) {
    copy[key] =
      key === '$ref' && typeof value === 'string' && value.startsWith('#/') ? `${id}${value}` : rebasedRefs(value, id);
  }
  return copy;
}
