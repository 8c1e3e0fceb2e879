// express-openapi-validator (5.x) compiles each operation's request and response schemas, for every status and
// content type, each as a schema of its own that carries the whole document's `components` and `paths` beside it, so
// that its `#/components/…` references resolve. This module puts its own function in place of the validator's
// `useAjvCache` (middlewares/util.js, read at each call), which hands the validator those compiled schemas.
//
// Compiled at build time. `npm run generate` runs the validator on the contract, drives every operation through it
// and writes the validators it compiled as code (Ajv's standalone code, generated/validators.cjs; see
// scripts/validators.ts). Here, an operation's schema that the generated file holds is not compiled again: its
// generated function is returned. A schema is known by what it is (a digest of the schema without `components` and
// `paths`), in an Ajv instance known by its options, for the document the file was generated from (a digest of its
// `components` and `paths`): the same schema, options and document compile to the same function. What the file does
// not hold (another document, changed options, a schema no example reached) is compiled as below, and counted
// (validatorCompiles), so a test proves that the contract's operations use the generated validators.
//
// Compiled at run time, Ajv would walk the whole document for each schema, and compile every component it references
// again under each, since Ajv keeps what it compiles for a reference per root. Instead, the document's `components`
// and `paths` are added to each Ajv instance once, as one root with an id of its own and a list `x-operations`. Each
// operation's schema, without `components` and `paths` and with its references pointing into the root, is appended
// to that list and compiled by its JSON pointer (`<id>#/x-operations/<n>`): a part of the root, so its references
// reuse the components the root has compiled. What is validated, and how, is the same: the same schemas, options and
// references, resolved against the same document. It relies on Ajv keeping the root object it was given (not a
// copy), so that what is appended later is found by its pointer, and on operations' schemas having no `$id` or
// `$anchor` of their own (Ajv indexes those only when a root is added); the contract has neither. The generator
// compiles through this same root, so the generated functions are the ones compiled here.
//
// It must be imported before the validator's middleware is made (validation.ts does).
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { characterCount } from './characters.ts';
import { rebasedRefs } from './spec.ts';

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, walked by the field names of the specification
type Json = Record<string, any>;

export interface Ajv {
  opts: Record<string, unknown> & { serDesMap?: Record<string, unknown> };
  formats: Record<string, unknown>;
  getSchema(key: string): unknown;
  addSchema(schema: Json, key?: string): unknown;
  getKeyword(keyword: string): { compile?: (schema: unknown, parentSchema: unknown, it: unknown) => unknown } | boolean;
}

/** What the generated file holds for the validator's Ajv instances of one kind (generated/validators.cjs). */
interface GeneratedKind {
  name: string;
  /** optionsSignature of the Ajv instance the validators were compiled in. */
  options: string;
  /** documentDigest of the root they were compiled in. */
  document: string;
  /** The validators, by schemaDigest, made with the Ajv instance that uses them. */
  create(runtime: GeneratedRuntime): Record<string, unknown>;
}

/**
 * What the generated code takes from the Ajv instance that uses it: the instance's formats (ours and the
 * validator's, as it added them), and the validator's keywords that Ajv compiles to a function, not to code.
 */
export interface GeneratedRuntime {
  /** The instance, which Ajv's code passes as `this` to a compiled keyword. */
  self: Ajv;
  formats: Record<string, unknown>;
  serDes(format: string): unknown;
  keyword(keyword: string, schema: unknown, schemaPath: string): unknown;
  /** What maxLength and minLength count: the characters of a string (scripts/validators.ts, lengthChecksFirst). */
  characterCount(text: string): number;
}

const require = createRequire(import.meta.url);
const library = createRequire(require.resolve('express-openapi-validator'));
const util = library('./middlewares/util.js') as { useAjvCache: (ajv: Ajv, schema: Json, key: string) => unknown };

const digest = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 32);

/**
 * The options of an Ajv instance that decide the code it compiles (its scalar options; `code` only says how the
 * code is kept): the validator's three instances (the request's parameters, the request's body, the response) differ
 * in them.
 */
export function optionsSignature(ajv: Ajv): string {
  const scalars = Object.entries(ajv.opts)
    .filter(
      ([name, value]) =>
        name !== 'code' && (value === null || typeof value !== 'object') && typeof value !== 'function',
    )
    .sort(([a], [b]) => a.localeCompare(b));
  return JSON.stringify(scalars);
}

const PARAMETER_LOCATIONS = new Set(['query', 'path', 'header', 'cookie']);

/**
 * The document a root is made of: its `components` and `paths` as the validator hands them over, without the `style`
 * and `explode` of parameter objects. The validator writes those defaults into a parameter object when it first
 * builds the request validator of an operation that has it, which is just before it asks for the operation's schema
 * here: with them, the digest depended on which operation was called first, and a server whose first request was not
 * the generator's (GET /healthz) compiled every request schema at run time. No compiled schema reads them.
 */
export function documentDigest(components: Json, paths: Json | undefined): string {
  // The validator writes those defaults into the parameter objects of `components.parameters` and of the `parameters`
  // of path items and operations: copies of those lists without `style` and `explode` are written out, and the
  // document otherwise as it is (a replacer function would make JSON.stringify call it for every member).
  const { parameters, ...rest } = components;
  // Hashed in parts, as one text joined by newlines: joining them would copy some megabytes first.
  const text = (value: unknown) => JSON.stringify(value) ?? String(value);
  const hash = createHash('sha256')
    .update(text(rest))
    .update('\n')
    .update(text(styleless(parameters)))
    .update('\n')
    .update(text(pathsStyleless(paths)));
  return hash.digest('hex').slice(0, 32);
}

/** A parameter object without `style` and `explode` (another value as it is). */
function withoutStyle(parameter: unknown): unknown {
  if (!isParameter(parameter)) return parameter;
  const { style: _style, explode: _explode, ...rest } = parameter;
  return rest;
}

function isParameter(value: unknown): value is Json {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Json).name === 'string' &&
    PARAMETER_LOCATIONS.has((value as Json).in)
  );
}

/** A list or map of parameters, each without `style` and `explode`. */
function styleless(parameters: unknown): unknown {
  if (Array.isArray(parameters)) return parameters.map(withoutStyle);
  if (!isObject(parameters)) return parameters;
  return Object.fromEntries(Object.entries(parameters).map(([name, parameter]) => [name, withoutStyle(parameter)]));
}

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `paths` with the parameters of each path item and operation without `style` and `explode`. */
function pathsStyleless(paths: Json | undefined): Json | undefined {
  if (!isObject(paths)) return paths;
  const item = (pathItem: unknown) => {
    if (!isObject(pathItem)) return pathItem;
    return Object.fromEntries(
      Object.entries(pathItem).map(([key, value]) => {
        if (key === 'parameters') return [key, styleless(value)];
        if (!isObject(value) || !('parameters' in value)) return [key, value];
        return [key, { ...value, parameters: styleless((value as Json).parameters) }];
      }),
    );
  };
  return Object.fromEntries(Object.entries(paths).map(([path, pathItem]) => [path, item(pathItem)]));
}

/** An operation's schema (without `components` and `paths`, references not rebased). */
export function schemaDigest(own: Json): string {
  return `v${digest(JSON.stringify(own))}`;
}

/**
 * A document's shared root in one Ajv instance: its id, the list, inside the root, that holds the schema of each
 * operation, status and content type compiled so far, and the generated validators that fit the instance and document.
 */
interface SharedRoot {
  id: string;
  ajv: Ajv;
  operations: Json[];
  compiled: Map<string, unknown>;
  /** The pointer of each schema compiled here, by schemaDigest (what the generator writes as code). */
  pointers: Map<string, string>;
  options: string;
  document: string;
  generated: Record<string, unknown> | undefined;
  /**
   * The recording it was made in (recordRoots): until that recording stops, it uses nothing generated and its compiles
   * are not counted; at its first use after, its generated validators are looked up.
   */
  recording: SharedRoot[] | undefined;
  /** Whether the root is in the Ajv instance: added at the first schema compiled here, which most processes never have. */
  added: boolean;
}

/** The shared root of each document in each Ajv instance (a validator may hand an instance more than one). */
const roots = new WeakMap<Ajv, Map<Json, SharedRoot>>();

/** Every root made while a recording runs (recordRoots), until it stops. */
let recorded: SharedRoot[] | undefined;

const counts = { generated: 0, compiled: 0 };

/**
 * How many operation schemas the validator was handed as generated code, and how many were compiled at run time
 * (schemas generated/validators.cjs does not hold), since the process started, but for the roots of a recording (what
 * they compile, they compile on purpose).
 */
export function validatorCompiles(): { generated: number; compiled: number } {
  return { ...counts };
}

let generatedKinds: GeneratedKind[] | undefined;

function loadGenerated(): GeneratedKind[] {
  if (!generatedKinds) {
    try {
      generatedKinds = (require('../../generated/validators.cjs') as { kinds: GeneratedKind[] }).kinds;
    } catch {
      // Without the file every schema is compiled at run time, which validatorCompiles shows.
      generatedKinds = [];
    }
  }
  return generatedKinds;
}

function generatedFor(ajv: Ajv, options: string, document: string): Record<string, unknown> | undefined {
  const kind = loadGenerated().find((candidate) => candidate.options === options && candidate.document === document);
  return kind?.create({
    self: ajv,
    characterCount,
    formats: ajv.formats,
    serDes: (format) => ajv.opts.serDesMap?.[format],
    keyword: (keyword, schema, schemaPath) => {
      const definition = ajv.getKeyword(keyword);
      if (typeof definition !== 'object' || !definition.compile) throw new Error(`Ajv has no keyword ${keyword}`);
      // The keyword's own compile, as Ajv calls it; of the schema context it reads the schema path only.
      return definition.compile.call(ajv, schema, undefined, { schemaPath: { str: schemaPath } });
    },
  });
}

/** documentDigest of each document handed over, by its `components`: a validator's three Ajv instances share one. */
const digests = new WeakMap<Json, { paths: Json | undefined; digest: string }>();

/**
 * The digest of a document handed to more than one Ajv instance, written out once: the validator hands its instances
 * the same `components` and `paths` objects, and writing the whole document out is most of what finding its
 * generated validators costs.
 */
function sharedDigest(components: Json, paths: Json | undefined): string {
  const known = digests.get(components);
  if (known && known.paths === paths) return known.digest;
  const digest = documentDigest(components, paths);
  digests.set(components, { paths, digest });
  return digest;
}

function sharedRoot(ajv: Ajv, components: Json, paths: Json | undefined): SharedRoot {
  let byDocument = roots.get(ajv);
  if (!byDocument) roots.set(ajv, (byDocument = new Map()));
  let root = byDocument.get(components);
  if (!root) {
    const options = optionsSignature(ajv);
    const document = sharedDigest(components, paths);
    // Named by its document, so that the schema paths of errors (which name the root where a reference is inlined)
    // are the same in every process and in the generated code.
    const ids = new Set([...byDocument.values()].map((other) => other.id));
    let id = `urn:content-service:openapi:${document}`;
    for (let n = 2; ids.has(id); n++) id = `urn:content-service:openapi:${document}-${n}`;
    root = {
      id,
      ajv,
      operations: [],
      compiled: new Map(),
      pointers: new Map(),
      options,
      document,
      generated: recorded ? undefined : generatedFor(ajv, options, document),
      recording: recorded,
      added: false,
    };
    byDocument.set(components, root);
    recorded?.push(root);
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
  const name = schemaDigest(own);
  let validate = root.compiled.get(name);
  if (validate) return validate;
  if (root.recording && root.recording !== recorded) {
    root.generated = generatedFor(ajv, root.options, root.document);
    root.recording = undefined;
  }
  validate = root.generated?.[name];
  if (validate) {
    if (!root.recording) counts.generated++;
  } else {
    if (!root.added) {
      // Ajv walks the whole document when it is added.
      ajv.addSchema({ $id: root.id, components, ...(paths ? { paths } : {}), 'x-operations': root.operations });
      root.added = true;
    }
    root.operations.push(rebasedRefs(own, root.id) as Json);
    const pointer = `${root.id}#/x-operations/${root.operations.length - 1}`;
    // Taken back when it does not compile, so that a retry does not leave a second copy in the root.
    try {
      validate = ajv.getSchema(pointer);
    } catch (error) {
      root.operations.pop();
      throw error;
    }
    if (!root.recording) counts.compiled++;
    root.pointers.set(name, pointer);
  }
  root.compiled.set(name, validate);
  return validate;
}

util.useAjvCache = useAjvCache;

export interface Recording {
  /** Every root made since the recording started, to be read with the Ajv instance it lives in and the pointer of
   *  each schema compiled in it. */
  readonly roots: ReadonlyArray<Readonly<Pick<SharedRoot, 'ajv' | 'options' | 'document' | 'pointers'>>>;
  /**
   * Ends the recording: roots made from now on use the generated validators again, and so do the roots made while it
   * ran, for the schemas they have not compiled yet.
   */
  stop(): void;
}

/**
 * For the generator, and the test that compares the generated validators with compiled ones: until `stop()`, the roots
 * made use nothing generated (every schema is compiled here), are kept, and are not counted (validatorCompiles). One
 * recording at a time.
 */
export function recordRoots(): Recording {
  if (recorded) throw new Error('roots are being recorded already: stop that recording first');
  const roots: SharedRoot[] = [];
  recorded = roots;
  return {
    roots,
    stop() {
      if (recorded === roots) recorded = undefined;
    },
  };
}
