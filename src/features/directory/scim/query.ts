// The query parameters of SCIM reads (RFC 7644 §3.4.2): filter, attributes, excludedAttributes, startIndex, count.
// SCIMMY parses them once filter.ts has checked the filter's grammar (a malformed filter is 400 invalidFilter);
// startIndex and count arrive as text.
import { checkFilter } from './filter.ts';
import { MAX_RESULTS, SCIMMY, scimError } from './scimmy.ts';

/** Resources per page when the request names no `count`. */
const DEFAULT_COUNT = 100;

export interface ReadParameters {
  /** The parsed filter, when one was sent. */
  filter?: InstanceType<typeof SCIMMY.Types.Filter>;
  /** What to return of each resource (attributes / excludedAttributes), for SCIMMY's schemas. */
  attributes?: InstanceType<typeof SCIMMY.Types.Filter>;
  startIndex: number;
  count: number;
}

function integer(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^-?\d{1,9}$/.test(value))
    throw scimError(400, 'invalidValue', `${name} must be an integer.`);
  return Number(value);
}

export function readParameters(query: Record<string, unknown>, withFilter: boolean): ReadParameters {
  const parsed: Record<string, string> = {};
  for (const name of ['filter', 'attributes', 'excludedAttributes'] as const) {
    const value = query[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw scimError(400, 'invalidValue', `${name} must be given once.`);
    if (name === 'filter' && !withFilter) continue;
    if (name === 'filter' && value.trim() !== '') checkFilter(value);
    parsed[name] = value;
  }
  // SCIMMY's resource constructor parses the filter and the attribute lists and throws SCIM errors for bad ones.
  const resource = new SCIMMY.Resources.User(parsed as never) as unknown as Pick<
    ReadParameters,
    'filter' | 'attributes'
  >;
  const startIndex = Math.max(integer(query.startIndex, 'startIndex') ?? 1, 1);
  const count = Math.min(Math.max(integer(query.count, 'count') ?? DEFAULT_COUNT, 0), MAX_RESULTS);
  return { filter: resource.filter, attributes: resource.attributes, startIndex, count };
}

/**
 * The one equality a directory looks resources up by (`userName eq "…"`, `externalId eq "…"`, `displayName eq "…"`,
 * `id eq "…"`), which the database answers; undefined for any other filter, which is matched resource by resource.
 */
export function simpleEquality(
  filter: ReadParameters['filter'],
  attributes: readonly string[],
): { attribute: string; value: string } | undefined {
  if (filter?.length !== 1) return undefined;
  const entries = Object.entries(filter[0] as Record<string, unknown>);
  if (entries.length !== 1) return undefined;
  const [name, test] = entries[0]!;
  const attribute = attributes.find((a) => a.toLowerCase() === name.toLowerCase());
  if (!attribute || !Array.isArray(test) || test.length !== 2) return undefined;
  const [comparator, value] = test as [unknown, unknown];
  if (typeof comparator !== 'string' || comparator.toLowerCase() !== 'eq' || typeof value !== 'string')
    return undefined;
  return { attribute, value };
}

/** One page of resources as a ListResponse (RFC 7644 §3.4.2). */
export function listResponse(resources: unknown[], parameters: ReadParameters) {
  const page = resources.slice(parameters.startIndex - 1, parameters.startIndex - 1 + parameters.count);
  return {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
    totalResults: resources.length,
    startIndex: parameters.startIndex,
    itemsPerPage: page.length,
    Resources: page,
  };
}

type Schema = typeof SCIMMY.Schemas.User | typeof SCIMMY.Schemas.Group;
type Expression = Record<string, unknown>;
type Attribute = {
  name: string;
  type: string;
  config?: { multiValued: boolean; caseExact: boolean };
  subAttributes?: Attribute[];
};
type Definition = { attributes: Attribute[] };

const isCaseless = (a: Attribute) => a.type === 'string' && a.config !== undefined && !a.config.caseExact;

/** The complex attributes' string sub-attributes that are not case-exact (`emails.value`, `name.familyName`), by name. */
function caselessSubAttributes(definition: Definition): Map<string, { name: string; subs: string[] }> {
  return new Map(
    definition.attributes
      .filter((a) => a.type === 'complex' && a.subAttributes?.some(isCaseless))
      .map((a) => [
        a.name.toLowerCase(),
        { name: a.name, subs: a.subAttributes!.filter(isCaseless).map((b) => b.name) },
      ]),
  );
}

/** A value of a complex attribute with its case-less sub-attributes lower-cased (a copy). */
function lowerCasedValue(value: unknown, subs: string[]): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const copy: Record<string, unknown> = { ...value };
  for (const sub of subs) if (typeof copy[sub] === 'string') copy[sub] = (copy[sub] as string).toLowerCase();
  return copy;
}

/**
 * What the matcher is given for a complex attribute of a definition that an object lacks (see matchFilter): a
 * multi-valued one always, a single one where the filter reads one of its sub-attributes (`used`).
 */
function blanksOf(definition: Definition, used: Set<string>): Record<string, unknown> {
  return Object.fromEntries(
    definition.attributes
      .filter((a) => a.config && (a.config.multiValued || (a.type === 'complex' && used.has(a.name.toLowerCase()))))
      .map((a) => [a.name, a.config!.multiValued ? [{}] : {}]),
  );
}

/** A comparison with its value lower-cased: `["eq", "A@x"]`, `["not", "sw", "A"]`, or several of them AND-ed. */
function lowerCased(test: unknown[]): unknown[] {
  if (test.every(Array.isArray)) return test.map((inner) => lowerCased(inner as unknown[]));
  // The value is last, after the comparator; lower-casing the `pr` of `["not", "pr"]` leaves it as it is.
  return test.map((part, i) =>
    i > 0 && i === test.length - 1 && typeof part === 'string' ? part.toLowerCase() : part,
  );
}

/** Whether an expression holds a `not` of a comparison (a `not` of `pr` means absent, which the blanks answer). */
function negates(test: unknown): boolean {
  if (Array.isArray(test)) return (test[0] === 'not' && test[1] !== 'pr') || test.some(negates);
  return typeof test === 'object' && test !== null && Object.values(test).some(negates);
}

/**
 * The objects a filter selects, with SCIM's meaning where SCIMMY's matcher reads otherwise (RFC 7644 §3.4.2.2):
 * - an attribute named with its schema's URN is that attribute: the core schema's (`urn:…:core:2.0:User:userName`) is
 *   the plain name, an extension's (`urn:…:enterprise:2.0:User:department`) is under the extension's object;
 * - a string attribute or sub-attribute that is not case-exact (`userName`, `displayName`, `emails.value`,
 *   `name.familyName`) is compared ignoring case;
 * - a comparison or `pr` on a multi-valued attribute (`members eq "id"`, Entra ID's membership check; `emails pr`)
 *   tests its values' `value` sub-attribute, true when any value passes. The matcher would apply a `not`, or several
 *   comparisons AND-ed, to each value apart, which means something else: those are refused, as is a `not` inside a
 *   value path of one;
 * - an attribute an object lacks is unassigned: no comparison matches it and `pr` is false. The matcher throws on a
 *   complex attribute that is not there when the filter reads one of its sub-attributes, so it is given one then: an
 *   empty object, and for a multi-valued one a list of one empty value (`not (members pr)` holds for a group without
 *   members).
 * An expression the matcher still cannot evaluate is refused as invalidFilter, not answered as an error of the server.
 */
export function matchFilter<T extends object>(
  filter: NonNullable<ReadParameters['filter']>,
  schema: Schema,
  objects: T[],
): T[] {
  const definition = schema.definition as unknown as Definition & { id: string };
  // An extension's definition is among the attributes too, with no config of its own; its attributes are its own.
  const extensions = (definition.attributes as unknown as Array<Definition & { id: string; config?: unknown }>).filter(
    (attribute) => !attribute.config && typeof attribute.id === 'string',
  );
  const multiValued = new Set(
    definition.attributes.filter((a) => a.config?.multiValued).map((a) => a.name.toLowerCase()),
  );
  const caseless = new Set(
    definition.attributes.filter((a) => isCaseless(a) && !a.config!.multiValued).map((a) => a.name),
  );
  const caselessSubs = caselessSubAttributes(definition);
  const core = `${definition.id.toLowerCase()}:`;
  // The complex attributes whose sub-attributes the filter reads: the core schema's, and each extension's.
  const used = new Map<string, Set<string>>([
    [definition.id, new Set()],
    ...extensions.map((e) => [e.id, new Set<string>()] as const),
  ]);
  const branches = (filter as unknown as Expression[]).map((branch) => {
    const meant: Expression = {};
    for (const [path, test] of Object.entries(branch)) {
      const extension = extensions.find((e) => path.toLowerCase().startsWith(`${e.id.toLowerCase()}:`));
      if (extension) {
        const inner = (meant[extension.id] ??= {}) as Expression;
        const name = path.slice(extension.id.length + 1);
        inner[name] = test;
        if (!Array.isArray(test)) used.get(extension.id)!.add(name.toLowerCase());
        continue;
      }
      const name = path.toLowerCase().startsWith(core) ? path.slice(core.length) : path;
      const attribute = [...caseless].find((a) => a.toLowerCase() === name.toLowerCase());
      if (attribute && Array.isArray(test)) {
        meant[attribute] = lowerCased(test);
        continue;
      }
      if (Array.isArray(test) && multiValued.has(name.toLowerCase())) {
        const negated = test[0] === 'not' && test[1] !== 'pr';
        if (negated || test.every(Array.isArray))
          throw scimError(
            400,
            'invalidFilter',
            `A 'not' or several comparisons of ${name} itself are not supported: filter its values with a value path (${name}[value …]).`,
          );
        meant[name] = { value: caselessSubs.get(name.toLowerCase())?.subs.includes('value') ? lowerCased(test) : test };
        continue;
      }
      if (!Array.isArray(test)) {
        // `emails[not (value co "x")]`: the matcher holds it for any one value that passes, not for the values together.
        if (multiValued.has(name.toLowerCase()) && negates(test))
          throw scimError(400, 'invalidFilter', `A 'not' inside a value path of ${name} is not supported.`);
        used.get(definition.id)!.add(name.toLowerCase());
        const subs = caselessSubs.get(name.toLowerCase())?.subs;
        if (subs) {
          const tests: Expression = {};
          for (const [sub, subTest] of Object.entries(test as Expression))
            tests[sub] =
              Array.isArray(subTest) && subs.some((caselessSub) => caselessSub.toLowerCase() === sub.toLowerCase())
                ? lowerCased(subTest)
                : subTest;
          meant[name] = tests;
          continue;
        }
      }
      meant[name] = test;
    }
    return meant;
  });
  const blanks = blanksOf(definition, used.get(definition.id)!);
  const withBlanks = (object: T) => {
    const given: Record<string, unknown> = { ...blanks, ...object };
    for (const name of caseless)
      if (typeof given[name] === 'string') given[name] = (given[name] as string).toLowerCase();
    for (const { name, subs } of caselessSubs.values()) {
      const value = given[name];
      if (value !== undefined)
        given[name] = Array.isArray(value)
          ? value.map((each) => lowerCasedValue(each, subs))
          : lowerCasedValue(value, subs);
    }
    for (const extension of extensions)
      given[extension.id] = {
        ...blanksOf(extension, used.get(extension.id)!),
        ...(given[extension.id] as object | undefined),
      };
    return given;
  };
  const originals = new Map<object, T>(objects.map((object) => [withBlanks(object), object]));
  let matched: object[];
  try {
    const meant = new SCIMMY.Types.Filter((branches.length === 1 ? branches[0] : branches) as never);
    matched = meant.match([...originals.keys()]) as object[];
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    throw scimError(
      400,
      'invalidFilter',
      'The filter cannot be evaluated on this server; write it without that expression.',
    );
  }
  return matched.map((object) => originals.get(object)!);
}
