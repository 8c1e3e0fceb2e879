// Compares two editions of the contract (the bundled OpenAPI and AsyncAPI documents) the way their clients see them,
// and classifies every change as breaking or not with api-smart-diff's OpenAPI rules.
//
// api-smart-diff classifies OpenAPI 3 paths but neither OpenAPI 3.1 `webhooks` nor AsyncAPI 3, so both are compared
// as what they are to their readers: an event (a webhook, an AsyncAPI message the server sends) is a response whose
// receiver is the client, so removing it, or a key of it, breaks; a message the server receives is a request body.
// Enums marked `x-open-enum: true` (error codes, event types) promise that values may be added: api-smart-diff would
// call an added response value breaking, so their values are compared here instead, and only a removal breaks. A
// union marked `x-open-union: true` (the event union) likewise takes new branches. Where api-smart-diff calls a change
// harmless that narrows what a request may hold or widens what an answer may hold (a `const`, an `enum` or
// `additionalProperties: false` added to a request, a `type` changed), the verdict is ours.
import { apiCompare, type Diff } from 'api-smart-diff';

// biome-ignore lint/suspicious/noExplicitAny: the contract's documents, walked by the field names of OpenAPI and AsyncAPI
type Json = Record<string, any>;

export interface Contract {
  openapi: Json;
  asyncapi: Json;
}

export type ChangeKind = 'breaking' | 'deprecated' | 'added' | 'other';

export interface Change {
  kind: ChangeKind;
  /** Where a client meets it: `GET /v1/voices`, `webhook chat.message.created`, `AsyncAPI message …`, or a schema. */
  where: string;
  /** What changed, in api-smart-diff's words (or ours, for open enums). */
  what: string;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete', 'head', 'options', 'trace'];
const WEBHOOK_PREFIX = '/(webhook)/';
const MESSAGE_PREFIX = '/(asyncapi)/';

/** Every change between two editions, breaking ones first. */
export function compareContracts(before: Contract, after: Contract): Change[] {
  const views = { before: comparableView(before), after: comparableView(after) };
  // api-smart-diff rewrites what it is given (it merges allOf, drops keys it does not know): it gets copies, so that
  // the views still say what the documents say when a change is classified.
  const { diffs } = apiCompare(structuredClone(views.before), structuredClone(views.after));
  const changes: Change[] = [];
  for (const found of diffs) {
    // A component is compared where it is used: its changes appear again under every path that refers to it.
    if (found.path[0] !== 'paths') continue;
    const diff = wholeEnum(wholeType(found, views), views);
    changes.push({ kind: kindOf(diff, views), where: locate(diff.path), what: describe(diff, views.after) });
  }
  changes.push(...openEnumChanges(before.openapi, after.openapi));
  const order: ChangeKind[] = ['breaking', 'deprecated', 'added', 'other'];
  return changes.sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind));
}

/**
 * A change inside a `type` list (`[integer, null]`) as a change of the whole list: api-smart-diff reports its items
 * one by one (`type.1` from `null` to `string`), which says nothing about widening or narrowing.
 */
function wholeType(diff: Diff, views: { before: Json; after: Json }): Diff {
  const at = diff.path.lastIndexOf('type');
  if (at < 0 || at !== diff.path.length - 2 || typeof diff.path.at(-1) !== 'number') return diff;
  const path = diff.path.slice(0, at + 1);
  return { ...diff, action: 'replace', path, before: valueAt(views.before, path), after: valueAt(views.after, path) };
}

/** The value at a diff's path in a view, following `$ref`s the way api-smart-diff resolved them. */
function valueAt(root: Json, path: Diff['path']): unknown {
  const follow = (node: Json | undefined, segment?: string | number): Json | undefined => {
    while (
      node &&
      typeof node === 'object' &&
      typeof node.$ref === 'string' &&
      (segment === undefined || !(segment in node))
    ) {
      node = node.$ref
        .slice(2)
        .split('/')
        .map((part: string) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
        .reduce<Json | undefined>((at, part) => at?.[part], root);
    }
    return node;
  };
  let node: Json | undefined = root;
  for (const segment of path) node = follow(node, segment)?.[segment];
  return follow(node);
}

/** Whether a schema is a union marked open, itself or through an `allOf` member (api-smart-diff merges those). */
function isOpenUnion(document: Json, schema: Json | undefined): boolean {
  if (schema?.['x-open-union'] === true) return true;
  return (
    Array.isArray(schema?.allOf) &&
    schema.allOf.some((member: Json) => isOpenUnion(document, resolve(document, member)))
  );
}

function kindOf(diff: Diff, views: { before: Json; after: Json }): ChangeKind {
  const last = diff.path.at(-1);
  const read = diff.path.includes('responses');
  if (diff.action === 'replace' && last === 'type') return typeChangeKind(diff);
  if (last === 'const' && (diff.action === 'replace' || (read ? diff.action === 'remove' : diff.action === 'add')))
    return 'breaking';
  if (!read && diff.action === 'add' && last === 'enum') return 'breaking';
  if (!read && last === 'additionalProperties' && diff.after === false) return 'breaking';
  if (read && diff.action === 'add' && typeof last === 'number' && diff.path.at(-2) === 'oneOf') {
    // api-smart-diff writes a `$ref` with a sibling `description` as an `allOf` of one member.
    const parent = diff.path.slice(0, -2);
    const places = parent.at(-2) === 'allOf' ? [parent, parent.slice(0, -2)] : [parent];
    if (places.some((place) => isOpenUnion(views.after, valueAt(views.after, place) as Json | undefined)))
      return 'added';
  }
  if (diff.type === 'breaking') return 'breaking';
  if (diff.type === 'deprecated') return 'deprecated';
  if (diff.type === 'non-breaking' && diff.action === 'add') return 'added';
  return 'other';
}

/**
 * api-smart-diff calls any change of a schema's `type` non-breaking. A client reads what an answer (or an event) may
 * hold, so a response's type breaks it when it widens (`integer` to `number`, a `null` added); a server accepts what a
 * request may hold, so a request's type breaks clients when it narrows.
 */
function typeChangeKind(diff: Diff): ChangeKind {
  const types = (value: unknown) => new Set<string>(Array.isArray(value) ? value : [String(value)]);
  const covers = (set: Set<string>, type: string) => set.has(type) || (type === 'integer' && set.has('number'));
  const before = types(diff.before);
  const after = types(diff.after);
  const widened = [...after].some((type) => !covers(before, type));
  const narrowed = [...before].some((type) => !covers(after, type));
  const read = diff.path.includes('responses');
  return (read ? widened : narrowed) ? 'breaking' : 'other';
}

/**
 * One OpenAPI document that holds the HTTP operations as they are, each webhook as an operation whose response is
 * the event, and each AsyncAPI message as an operation: a response when the server sends it, a request when it
 * receives it. Open enums lose their `enum` (compared apart).
 */
export function comparableView(contract: Contract): Json {
  const view: Json = structuredClone(contract.openapi);
  view.paths ??= {};
  for (const [type, item] of Object.entries<Json>(view.webhooks ?? {})) {
    for (const method of METHODS) {
      const schema = item[method]?.requestBody?.content?.['application/json']?.schema;
      if (!schema) continue;
      // The delivery's headers (the signature, the timestamp) are what a receiver reads besides the body.
      const headers: Json = {};
      for (const parameter of (item[method].parameters ?? []).map((p: Json) => resolve(contract.openapi, p))) {
        if (parameter?.in === 'header')
          headers[parameter.name] = { required: parameter.required ?? false, schema: parameter.schema };
      }
      view.paths[`${WEBHOOK_PREFIX}${type}`] = { get: responseOf(schema, item[method].deprecated, headers) };
    }
  }
  delete view.webhooks;
  // Keyed by what is on the wire (the direction, the channel's address, the message's name), not by the operation's
  // id: renaming an operation breaks nobody, moving a channel breaks everyone.
  for (const operation of Object.values<Json>(contract.asyncapi.operations ?? {})) {
    const channel = operation.channel?.address ?? operation.channel?.title ?? 'webhook';
    for (const message of operation.messages ?? []) {
      const name = message.name ?? message.title;
      const schema = structuredClone(message.payload ?? {});
      const headers: Json = {};
      const headerSchema: Json = message.headers ?? {};
      for (const [header, headerValue] of Object.entries<Json>(headerSchema.properties ?? {})) {
        headers[header] = { required: (headerSchema.required ?? []).includes(header), schema: headerValue };
      }
      const path = `${MESSAGE_PREFIX}${operation.action}|${channel}|${name}`;
      view.paths[path] =
        operation.action === 'send'
          ? { get: responseOf(schema, message.deprecated, headers) }
          : {
              post: {
                requestBody: { required: true, content: { 'application/json': { schema } } },
                responses: { '204': { description: 'Received.' } },
              },
            };
    }
  }
  stripOpenEnums(view);
  return view;
}

function responseOf(schema: Json, deprecated: boolean | undefined, headers: Json): Json {
  return {
    ...(deprecated ? { deprecated: true } : {}),
    responses: { '200': { description: 'The event.', headers, content: { 'application/json': { schema } } } },
  };
}

/** A `$ref` of the document followed to what it names. */
function resolve(document: Json, node: Json): Json | undefined {
  return typeof node?.$ref === 'string' ? (valueAt(document, node.$ref.slice(2).split('/')) as Json | undefined) : node;
}

/**
 * A value added to an enum that did not exist before as the enum itself: api-smart-diff reports `enum.0` added, which
 * reads as a widened enum, where a schema that took any value now takes only the listed ones.
 */
function wholeEnum(diff: Diff, views: { before: Json; after: Json }): Diff {
  if (diff.action !== 'add' || diff.path.at(-2) !== 'enum' || typeof diff.path.at(-1) !== 'number') return diff;
  const path = diff.path.slice(0, -1);
  if (valueAt(views.before, path) !== undefined) return diff;
  return { ...diff, path, before: undefined, after: valueAt(views.after, path) };
}

function stripOpenEnums(node: unknown): void {
  if (Array.isArray(node)) {
    node.forEach(stripOpenEnums);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const object = node as Json;
  if (object['x-open-enum'] === true) delete object.enum;
  for (const value of Object.values(object)) stripOpenEnums(value);
}

function openEnumChanges(before: Json, after: Json): Change[] {
  const changes: Change[] = [];
  const beforeSchemas: Json = before.components?.schemas ?? {};
  const afterSchemas: Json = after.components?.schemas ?? {};
  for (const [name, schema] of Object.entries<Json>(beforeSchemas)) {
    if (schema['x-open-enum'] !== true) continue;
    const kept = new Set<string>(afterSchemas[name]?.enum ?? []);
    for (const value of schema.enum ?? []) {
      if (!kept.has(value))
        changes.push({ kind: 'breaking', where: `schema ${name}`, what: `[Removed] value \`${value}\`` });
    }
  }
  for (const [name, schema] of Object.entries<Json>(afterSchemas)) {
    if (schema['x-open-enum'] !== true) continue;
    const had = new Set<string>(beforeSchemas[name]?.enum ?? []);
    for (const value of schema.enum ?? []) {
      if (!had.has(value)) changes.push({ kind: 'added', where: `schema ${name}`, what: `[Added] value \`${value}\`` });
    }
  }
  return changes;
}

function locate(path: Diff['path']): string {
  const [, route, method] = path.map(String);
  if (route === undefined) return 'paths';
  if (route.startsWith(WEBHOOK_PREFIX)) return `webhook ${route.slice(WEBHOOK_PREFIX.length)}`;
  if (route.startsWith(MESSAGE_PREFIX)) {
    const [action, channel, message] = route.slice(MESSAGE_PREFIX.length).split('|');
    return `AsyncAPI message ${message} (${action === 'send' ? 'sent to the' : 'received on'} ${channel})`;
  }
  return method && METHODS.includes(method) ? `${method.toUpperCase()} ${route}` : route;
}

/**
 * What changed, said from the diff's path: api-smart-diff's own annotations are unreliable on documents with shared
 * components (some read "[Removed] annotation (5)").
 */
function describe(diff: Diff, after: Json): string {
  const route = String(diff.path[1] ?? '');
  const synthetic = route.startsWith(WEBHOOK_PREFIX) || route.startsWith(MESSAGE_PREFIX);
  const rest = diff.path.slice(3);
  const verb = { add: 'added', remove: 'removed', replace: 'changed', rename: 'renamed' }[diff.action] ?? diff.action;
  if (diff.path.length === 2) return `path ${verb}`;
  if (rest.length === 0)
    return synthetic ? `${route.startsWith(WEBHOOK_PREFIX) ? 'event' : 'message'} ${verb}` : `operation ${verb}`;
  const [first, second] = rest;
  if (first === 'parameters') {
    const parameter = (diff.before ?? diff.after) as Json | undefined;
    if (rest.length === 2 && parameter?.name) {
      const required = parameter.required && diff.action === 'add' ? 'required ' : '';
      return `${required}${parameter.in} parameter \`${parameter.name}\` ${verb}`;
    }
    const named = (valueAt(after, diff.path.slice(0, 5)) ?? {}) as Json;
    const label = named.name ? `${named.in} parameter \`${named.name}\`` : `parameter ${String(second)}`;
    if (rest[2] === 'required') return `${label} made ${diff.after ? 'required' : 'optional'}`;
    return `${label}: ${schemaChange(afterSchema(rest.slice(1)), diff, verb)}`;
  }
  if (first === 'requestBody')
    return `${synthetic ? 'payload' : 'request body'}: ${schemaChange(afterSchema(rest), diff, verb)}`;
  if (first === 'responses') {
    if (rest.length === 2) return `response ${String(second)} ${verb}`;
    if (rest[2] === 'headers') {
      const header = `${synthetic ? '' : `response ${String(second)}: `}header \`${String(rest[3])}\``;
      if (rest.length === 4) return `${header} ${verb}`;
      if (rest[4] === 'required') return `${header} made ${diff.after ? 'required' : 'optional'}`;
      return `${header}: ${schemaChange(afterSchema(rest.slice(3)), diff, verb)}`;
    }
    return `${synthetic ? 'payload' : `response ${String(second)}`}: ${schemaChange(afterSchema(rest), diff, verb)}`;
  }
  if (first === 'deprecated') return diff.action === 'remove' ? 'no longer deprecated' : 'deprecated';
  return `${rest.join('.')} ${verb}`;
}

/** The path inside a content's schema (`content`, the media type and `schema` dropped). */
function afterSchema(path: Diff['path']): Diff['path'] {
  const at = path.indexOf('schema');
  return at < 0 ? path.slice(2) : path.slice(at + 1);
}

/** A change inside a schema, naming the field as a client reads it: `data[].voice_id`. */
function schemaChange(path: Diff['path'], diff: Diff, verb: string): string {
  let field = '';
  let index = 0;
  for (; index < path.length; index++) {
    const segment = path[index];
    if (segment === 'properties' && index + 1 < path.length) {
      field += `${field ? '.' : ''}${String(path[++index])}`;
    } else if (segment === 'items') {
      field += '[]';
    } else if (segment === 'additionalProperties' && index + 1 < path.length) {
      field += `${field ? '.' : ''}*`;
    } else if (segment === 'oneOf' || segment === 'anyOf' || segment === 'allOf') {
      index++;
    } else {
      break;
    }
  }
  const named = field ? `\`${field}\`` : 'the body';
  const attribute = path.slice(index);
  const value = (v: unknown) => (typeof v === 'string' ? `\`${v}\`` : JSON.stringify(v));
  if (attribute.length === 0) return `property ${named} ${verb}`;
  if (attribute[0] === 'required') {
    const name = `${field ? `${field}.` : ''}${String(diff.after ?? diff.before)}`;
    return diff.action === 'add'
      ? `\`${name}\` made required`
      : diff.action === 'remove'
        ? `\`${name}\` no longer required`
        : `required of ${named} ${verb}`;
  }
  if (attribute[0] === 'enum' && attribute.length > 1) {
    if (diff.action === 'add') return `value ${value(diff.after)} added to ${named}`;
    if (diff.action === 'remove') return `value ${value(diff.before)} removed from ${named}`;
  }
  const detail = diff.action === 'replace' ? ` from ${value(diff.before)} to ${value(diff.after)}` : '';
  return `${attribute.join('.')} of ${named} ${verb}${detail}`;
}

/** The changes of one kind, one line per distinct description, with the places it appears (at most `shown`). */
export function summarize(changes: Change[], kind: ChangeKind, shown = 3): string[] {
  const groups = new Map<string, string[]>();
  for (const change of changes) {
    if (change.kind !== kind) continue;
    const places = groups.get(change.what) ?? [];
    if (!places.includes(change.where)) places.push(change.where);
    groups.set(change.what, places);
  }
  return [...groups].map(([what, places]) => {
    const more = places.length > shown ? ` and ${places.length - shown} more` : '';
    return `${places.slice(0, shown).join(', ')}${more}: ${what}`;
  });
}
