// The validator checks a oneOf by trying each of its branches, and reports what every branch found wrong: a workflow
// step of type `transform` with an unknown `function` would come back with the `generate` step's missing `model` and
// `prompt`, every other step type's own, and the `type` that is not theirs. Where a oneOf's branches are told apart
// (by a member's constant, `type` or `role`, or by the JSON type of the data) and the body names one of them, the
// errors inside that part of the body are that branch's own: the part is checked again against the branch alone, and
// its errors take the place of the union's. A member that names no branch is the one error there. What is refused
// does not change, only what the answer says about it.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { fastFormats, fullFormats } from 'ajv-formats/dist/formats.js';
import { isDateTime } from './instant.ts';
import { DETAIL_MAX, escapePointer, POINTER_MAX, type ProblemFieldError } from './problems.ts';
import { openApiDocument, rebasedRefs, resolveRef } from './spec.ts';

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, walked by the field names of the specification
type Json = Record<string, any>;

/**
 * A place in the body that a oneOf assigns to one branch (`branch`), or whose discriminating member names none of the
 * branches (`refusal`: that member is the one error there).
 */
type Site = { pointer: string; branch: Json } | { pointer: string; refusal: ProblemFieldError };

const ROOT = 'urn:content-service:union-errors';

let checker: Ajv2020 | undefined;
const compiled = new WeakMap<Json, ValidateFunction>();

/** The validator's checks (its formats, all errors), without its defaults: nothing is written into the body. */
function validatorOf(branch: Json): ValidateFunction {
  if (!checker) {
    checker = new Ajv2020({
      strict: false,
      allErrors: true,
      validateSchema: false,
      formats: { ...fastFormats, date: fullFormats.date, 'date-time': isDateTime },
    });
    checker.addSchema({ $id: ROOT, components: openApiDocument.components });
  }
  let validate = compiled.get(branch);
  if (!validate) {
    validate = checker.compile(
      typeof branch.$ref === 'string' ? { $ref: `${ROOT}${branch.$ref}` } : (rebasedRefs(branch, ROOT) as Json),
    );
    compiled.set(branch, validate);
  }
  return validate;
}

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The constant a property schema allows: its `const`, or the one value of its `enum`. */
function constantOf(property: unknown): unknown {
  const schema = resolveRef(property);
  if (!schema) return undefined;
  if ('const' in schema) return schema.const;
  return Array.isArray(schema.enum) && schema.enum.length === 1 ? schema.enum[0] : undefined;
}

const jsonType = (value: unknown) =>
  value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value;

/** Whether a schema's `type` takes a JSON type; undefined for a schema without one. */
function takesType(schema: Json | undefined, type: string): boolean | undefined {
  if (schema?.type === undefined) return undefined;
  const types: unknown[] = Array.isArray(schema.type) ? schema.type : [schema.type];
  return types.includes(type) || (type === 'integer' && types.includes('number'));
}

/**
 * The branch the data is meant for, when the branches tell it: by a member whose constant differs from branch to
 * branch (`type`, `role`; a branch that does not require the member takes data without it), or by the JSON type of
 * the data (a string or a list of parts). A discriminating member that names no branch is refused as such.
 */
function chosenBranch(branches: unknown[], data: unknown, pointer: string): Site | undefined {
  const schemas = branches.map(resolveRef);
  const byType = schemas.map((schema) => takesType(schema, jsonType(data)));
  if (byType.every((takes) => takes !== undefined)) {
    const taking = branches.filter((_branch, i) => byType[i]);
    if (taking.length === 1) return { pointer, branch: taking[0] as Json };
    if (taking.length === 0) return undefined;
  }
  if (!isObject(data)) return undefined;
  for (const key of Object.keys(schemas[0]?.properties ?? {})) {
    const constants = schemas.map((schema) => constantOf(schema?.properties?.[key]));
    if (constants.some((constant) => constant === undefined) || new Set(constants).size !== constants.length) continue;
    const named =
      data[key] === undefined
        ? branches.filter((_branch, i) => !(schemas[i]?.required ?? []).includes(key))
        : branches.filter((_branch, i) => constants[i] === data[key]);
    if (named.length === 1) return { pointer, branch: named[0] as Json };
    if (named.length > 1) return undefined;
    const at = `${pointer}/${escapePointer(key)}`;
    return {
      pointer,
      refusal:
        data[key] === undefined
          ? { pointer: at, detail: `must have required property '${key}'` }
          : {
              pointer: at,
              detail: `must be equal to one of the allowed values: ${constants.map(valueText).join(', ')}`,
            },
    };
  }
  return undefined;
}

/** The places in `data`, outermost first, that a discriminated oneOf of `node` assigns to one of its branches. */
function sitesOf(node: unknown, data: unknown, pointer: string, sites: Site[], depth = 0): Site[] {
  const schema = resolveRef(node);
  if (!schema || depth > 64) return sites;
  for (const part of schema.allOf ?? []) sitesOf(part, data, pointer, sites, depth + 1);
  const branches = schema.oneOf ?? schema.anyOf;
  if (Array.isArray(branches)) {
    const site = chosenBranch(branches, data, pointer);
    if (site) sites.push(site);
    if (site && 'branch' in site) sitesOf(site.branch, data, pointer, sites, depth + 1);
  }
  if (isObject(data) && isObject(schema.properties)) {
    for (const [name, value] of Object.entries(data))
      if (schema.properties[name])
        sitesOf(schema.properties[name], value, `${pointer}/${escapePointer(name)}`, sites, depth + 1);
  }
  if (Array.isArray(data) && isObject(schema.items)) {
    data.forEach((item, i) => {
      sitesOf(schema.items, item, `${pointer}/${i}`, sites, depth + 1);
    });
  }
  return sites;
}

function valueAt(data: unknown, pointer: string): unknown {
  if (pointer === '') return data;
  return pointer
    .slice(1)
    .split('/')
    .reduce<unknown>(
      (value, part) => (value as Json | undefined)?.[part.replaceAll('~1', '/').replaceAll('~0', '~')],
      data,
    );
}

/** A value as the validator's messages show it: a string as it is, anything else as JSON. */
const valueText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/** An Ajv error as the validator reports it: the missing or unknown property named in the path, the enum listed. */
function fieldError(error: ErrorObject, at: string): ProblemFieldError {
  const params = error.params as Record<string, unknown>;
  const member = params.missingProperty ?? params.additionalProperty ?? params.unevaluatedProperty;
  const path = member === undefined ? error.instancePath : `${error.instancePath}/${String(member)}`;
  const allowed = error.keyword === 'enum' && Array.isArray(params.allowedValues) ? params.allowedValues : undefined;
  const detail = allowed ? `${error.message}: ${allowed.map(valueText).join(', ')}` : (error.message ?? 'is not valid');
  return { pointer: `${at}${path}`.slice(0, POINTER_MAX), detail: detail.slice(0, DETAIL_MAX) };
}

/**
 * The body's errors, with those inside each part that a discriminated oneOf assigns to one branch replaced by that
 * branch's own. A part the branch accepts keeps the union's errors (it failed for another reason, such as matching
 * two branches).
 */
export function narrowUnionErrors(schema: unknown, body: unknown, errors: ProblemFieldError[]): ProblemFieldError[] {
  let result = errors;
  for (const site of sitesOf(schema, body, '', [])) {
    const inside = (pointer: string) => pointer === site.pointer || pointer.startsWith(`${site.pointer}/`);
    const first = result.findIndex((error) => inside(error.pointer));
    if (first === -1) continue;
    let own: ProblemFieldError[];
    if ('refusal' in site) own = [site.refusal];
    else {
      const validate = validatorOf(site.branch);
      if (validate(valueAt(body, site.pointer))) continue;
      own = (validate.errors ?? []).map((error) => fieldError(error, site.pointer));
    }
    const before = result.slice(0, first).filter((error) => !inside(error.pointer));
    const after = result.slice(first).filter((error) => !inside(error.pointer));
    result = [...before, ...own, ...after];
  }
  return result;
}
