// express-openapi-validator (5.x) compiles each operation's request and response schemas on the operation's first
// request, each as a schema of its own that carries the whole document's `components` and `paths` beside it, so that
// its `#/components/…` references resolve. Ajv walks every schema it is given to find its ids (the whole document, for
// every operation, status and content type) and compiles each referenced component again under every such root, which
// made the first request of each operation slow.
//
// This module puts in place of the validator's `useAjvCache` (middlewares/util.js, read at each call) one that adds
// the document's `components` and `paths` to each Ajv instance once, under an id of their own, and gives Ajv the
// operation's schema without them, its references pointing into that shared root. Ajv then walks the document once per
// instance and compiles each component once, for every operation that uses it. What is validated, and how, is the
// same: the same schemas, the same options, the same references, resolved against the same document.
//
// It must be imported before the validator's middleware is made (validation.ts does).
import { createRequire } from 'node:module';

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, walked by the field names of the specification
type Json = Record<string, any>;

interface Ajv {
  getSchema(key: string): unknown;
  addSchema(schema: Json, key?: string): unknown;
}

const require = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
const util = require('./middlewares/util.js') as { useAjvCache: (ajv: Ajv, schema: Json, key: string) => unknown };

/**
 * A document's shared root in one Ajv instance: its id, and the list, inside the root, that holds the schema of each
 * operation, status and content type compiled so far.
 */
interface SharedRoot {
  id: string;
  operations: Json[];
  compiled: Map<string, unknown>;
}

/** The shared root of each document in each Ajv instance (a validator may hand an instance more than one). */
const roots = new WeakMap<Ajv, Map<Json, SharedRoot>>();
let rootCount = 0;

function sharedRoot(ajv: Ajv, components: Json, paths: Json | undefined): SharedRoot {
  let byDocument = roots.get(ajv);
  if (!byDocument) roots.set(ajv, (byDocument = new Map()));
  let root = byDocument.get(components);
  if (!root) {
    root = { id: `urn:content-service:openapi:${++rootCount}`, operations: [], compiled: new Map() };
    ajv.addSchema({ $id: root.id, components, ...(paths ? { paths } : {}), 'x-operations': root.operations });
    byDocument.set(components, root);
  }
  return root;
}

/** A copy of the schema whose document-local references (`#/…`) point into the shared root instead. */
function rebased(node: unknown, id: string): unknown {
  if (Array.isArray(node)) return node.map((item) => rebased(item, id));
  if (node === null || typeof node !== 'object') return node;
  const copy: Json = {};
  for (const [key, value] of Object.entries(node)) {
    copy[key] =
      key === '$ref' && typeof value === 'string' && value.startsWith('#/') ? `${id}${value}` : rebased(value, id);
  }
  return copy;
}

function useAjvCache(ajv: Ajv, schema: Json, key: string): unknown {
  const { components, paths, ...own } = schema;
  if (!components) {
    const cached = ajv.getSchema(key);
    if (cached) return cached;
    ajv.addSchema(schema, key);
    return ajv.getSchema(key);
  }
  const root = sharedRoot(ajv, components, paths);
  let validate = root.compiled.get(key);
  if (!validate) {
    // Compiled as a part of the shared root, not as a root of its own: Ajv keeps the components it compiles for a
    // reference per root, so every operation's schema then shares each component's one compiled function.
    root.operations.push(rebased(own, root.id) as Json);
    validate = ajv.getSchema(`${root.id}#/x-operations/${root.operations.length - 1}`);
    root.compiled.set(key, validate);
  }
  return validate;
}

util.useAjvCache = useAjvCache;
