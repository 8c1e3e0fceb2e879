// express-openapi-validator (5.x) compiles each operation's request and response schemas, for every status and
// content type, each as a schema of its own that carries the whole document's `components` and `paths` beside it, so
// that its `#/components/…` references resolve. Given so, Ajv would walk the whole document for every one of them,
// and compile every component it references again under each, since Ajv keeps what it compiles for a reference per
// root.
//
// This module puts in place of the validator's `useAjvCache` (middlewares/util.js, read at each call) one that adds
// the document's `components` and `paths` to each Ajv instance once, as one root with an id of its own and a list
// `x-operations`. Each operation's schema, without `components` and `paths` and with its references pointing into the
// root, is appended to that list and compiled by its JSON pointer (`<id>#/x-operations/<n>`): a part of the root, so
// its references reuse the components the root has compiled. Ajv walks the document once per instance and compiles
// each component once. What is validated, and how, is the same: the same schemas, options and references, resolved
// against the same document. It relies on Ajv keeping the root object it was given (not a copy), so that what is
// appended later is found by its pointer, and on operations' schemas having no `$id` or `$anchor` of their own
// (Ajv indexes those only when a root is added); the contract has neither.
//
// It must be imported before the validator's middleware is made (validation.ts does).
import { createRequire } from 'node:module';
import { rebasedRefs } from './spec.ts';

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
    root.operations.push(rebasedRefs(own, root.id) as Json);
    // Taken back when it does not compile, so that a retry does not leave a second copy in the root.
    try {
      validate = ajv.getSchema(`${root.id}#/x-operations/${root.operations.length - 1}`);
    } catch (error) {
      root.operations.pop();
      throw error;
    }
    root.compiled.set(key, validate);
  }
  return validate;
}

util.useAjvCache = useAjvCache;
