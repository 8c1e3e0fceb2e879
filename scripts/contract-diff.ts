// Compares two editions of the contract (the bundled OpenAPI and AsyncAPI documents) the way their clients see them,
// and classifies every change as breaking or not with api-smart-diff's OpenAPI rules.
//
// api-smart-diff classifies OpenAPI 3 paths but neither OpenAPI 3.1 `webhooks` nor AsyncAPI 3, so both are compared
// as what they are to their readers: an event (a webhook, an AsyncAPI message the server sends) is a response whose
// receiver is the client, so removing it, or a key of it, breaks; a message the server receives is a request body.
// Enums marked `x-open-enum: true` (error codes, event types) promise that values may be added: api-smart-diff would
// call an added response value breaking, so their values are compared here instead, and only a removal breaks.
import { apiCompare, type Diff } from 'api-smart-diff';

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
  const { diffs } = apiCompare(views.before, views.after);
  const changes: Change[] = [];
  for (const found of diffs) {
    // A component is compared where it is used: its changes appear again under every path that refers to it.
    if (found.path[0] !== 'paths') continue;
    const diff = wholeType(found, views);
    changes.push({ kind: kindOf(diff), where: locate(diff.path), what: describe(diff) });
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
  let node: any = root;
  for (const segment of path) {
    while (node && typeof node === 'object' && typeof node.$ref === 'string' && !(segment in node)) {
      node = node.$ref
        .slice(2)
        .split('/')
        .map((part: string) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
        .reduce((at: any, part: string) => at?.[part], root);
    }
    node = node?.[segment];
  }
  return node;
}

function kindOf(diff: Diff): ChangeKind {
  if (diff.action === 'replace' && diff.path.at(-1) === 'type') return typeChangeKind(diff);
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
      if (schema) view.paths[`${WEBHOOK_PREFIX}${type}`] = { get: responseOf(schema, item[method].deprecated) };
    }
  }
  delete view.webhooks;
  for (const [operationId, operation] of Object.entries<Json>(contract.asyncapi.operations ?? {})) {
    for (const message of operation.messages ?? []) {
      const name = message.name ?? message.title;
      const schema = structuredClone(message.payload ?? {});
      const path = `${MESSAGE_PREFIX}${operationId}/${name}`;
      view.paths[path] =
        operation.action === 'send'
          ? { get: responseOf(schema, message.deprecated) }
          : { post: { requestBody: { required: true, content: { 'application/json': { schema } } }, responses: { '204': { description: 'Received.' } } } };
    }
  }
  stripOpenEnums(view);
  return view;
}

function responseOf(schema: Json, deprecated: boolean | undefined): Json {
  return {
    ...(deprecated ? { deprecated: true } : {}),
    responses: { '200': { description: 'The event.', content: { 'application/json': { schema } } } },
  };
}

function stripOpenEnums(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(stripOpenEnums);
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
      if (!kept.has(value)) changes.push({ kind: 'breaking', where: `schema ${name}`, what: `[Removed] value \`${value}\`` });
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
    const [operationId, message] = route.slice(MESSAGE_PREFIX.length).split('/');
    return `AsyncAPI ${operationId} message ${message}`;
  }
  return method && METHODS.includes(method) ? `${method.toUpperCase()} ${route}` : route;
}

/**
 * What changed, said from the diff's path: api-smart-diff's own annotations are unreliable on documents with shared
 * components (some read "[Removed] annotation (5)").
 */
function describe(diff: Diff): string {
  const route = String(diff.path[1] ?? '');
  const synthetic = route.startsWith(WEBHOOK_PREFIX) || route.startsWith(MESSAGE_PREFIX);
  const rest = diff.path.slice(3);
  const verb = { add: 'added', remove: 'removed', replace: 'changed', rename: 'renamed' }[diff.action] ?? diff.action;
  if (diff.path.length === 2) return `path ${verb}`;
  if (rest.length === 0) return synthetic ? `${route.startsWith(WEBHOOK_PREFIX) ? 'event' : 'message'} ${verb}` : `operation ${verb}`;
  const [first, second] = rest;
  if (first === 'parameters') {
    const parameter = (diff.before ?? diff.after) as Json | undefined;
    if (rest.length === 2 && parameter?.name) {
      const required = parameter.required && diff.action === 'add' ? 'required ' : '';
      return `${required}${parameter.in} parameter \`${parameter.name}\` ${verb}`;
    }
    return `parameter ${String(second)}: ${schemaChange(rest.slice(2), diff, verb)}`;
  }
  if (first === 'requestBody') return `${synthetic ? 'payload' : 'request body'}: ${schemaChange(afterSchema(rest), diff, verb)}`;
  if (first === 'responses') {
    if (rest.length === 2) return `response ${String(second)} ${verb}`;
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
    } else if (segment === 'additionalProperties') {
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
    return diff.action === 'add' ? `\`${name}\` made required` : diff.action === 'remove' ? `\`${name}\` no longer required` : `required of ${named} ${verb}`;
  }
  if (attribute[0] === 'enum') {
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
