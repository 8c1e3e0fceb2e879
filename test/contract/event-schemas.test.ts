// The event schemas (`*EventData`, `Event*Snapshot`) describe resources of other areas. Where they can, they reference
// the resource's own schema; where an event deliberately allows only some of its values, or repeats an id's pattern,
// this suite checks the copy against its source in the bundle (generated/openapi.json), so that the two cannot drift.
import { describe, expect, test } from 'vitest';
import { deref, spec } from '../support/spec.ts';

type Json = Record<string, any>;

const schemas: Json = spec.components.schemas;

/** The (unresolved) schema of a property of a component, following `properties` through nested objects. */
function property(component: string, path: string[]): Json {
  let node: Json | undefined = schemas[component];
  expect(node, `components.schemas.${component}`).toBeDefined();
  for (const name of path) {
    node = deref(node)?.properties?.[name];
    expect(node, `${component}.${path.join('.')}`).toBeDefined();
  }
  return node!;
}

/** The component a schema references: its `$ref`, or the `$ref` of the non-null branch of `oneOf: [$ref, null]`. */
function referencedComponent(node: Json): string | undefined {
  let ref: unknown = node.$ref;
  if (ref === undefined && Array.isArray(node.oneOf) && node.oneOf.length === 2) {
    const [nulls, others] = [node.oneOf.filter((b: Json) => b.type === 'null'), node.oneOf.filter((b: Json) => b.type !== 'null')];
    if (nulls.length === 1 && others.length === 1) ref = others[0].$ref;
  }
  return typeof ref === 'string' ? ref.replace(/^#\/components\/schemas\//, '') : undefined;
}

const key = (component: string, path: string[]) => `${component}.${path.join('.')}`;
/** Adds the readable name of each field (`Component.a.b`) for the test titles. */
const named = <T extends { component: string; path: string[] }>(rows: T[]) => rows.map((row) => ({ ...row, field: key(row.component, row.path) }));

/** Values copied on purpose: the event allows only some of the source's values. */
const subsets: { component: string; path: string[]; source: string }[] = [
  // A training event ends a training: the voice is `ready` or `failed`, never `training`.
  { component: 'EventVoiceSnapshot', path: ['status'], source: 'VoiceStatus' },
  // Runs emit events only when they succeed, fail or wait for an approval.
  { component: 'EventWorkflowRunSnapshot', path: ['status'], source: 'WorkflowRunStatus' },
];

/** Fields that reference the single source of their values (a reference replaced a copy; keep it that way). */
const references: { component: string; path: string[]; source: string }[] = [
  { component: 'EventVoiceSnapshot', path: ['failure_reason'], source: 'VoiceFailureReason' },
  { component: 'Voice', path: ['failure_reason'], source: 'VoiceFailureReason' },
  { component: 'EventWorkflowRunSnapshot', path: ['error', 'code'], source: 'WorkflowRunErrorCode' },
  { component: 'EventWorkflowRunSnapshot', path: ['error', 'step_id'], source: 'WorkflowStepKey' },
  { component: 'EventWorkflowRunSnapshot', path: ['awaiting_step_id'], source: 'WorkflowStepKey' },
  { component: 'ChatbotConversationEscalatedEventData', path: ['escalation', 'source'], source: 'ChatbotEscalationSource' },
  { component: 'ChatbotConversationEscalatedEventData', path: ['escalation', 'reason'], source: 'ChatbotEscalationReason' },
  { component: 'ChatbotConversationEscalatedEventData', path: ['escalation', 'note'], source: 'ChatbotEscalationNote' },
  { component: 'ChatbotEscalation', path: ['source'], source: 'ChatbotEscalationSource' },
  { component: 'ChatbotEscalation', path: ['reason'], source: 'ChatbotEscalationReason' },
  { component: 'ChatbotEscalation', path: ['note'], source: 'ChatbotEscalationNote' },
  { component: 'ChatbotConversationRatedEventData', path: ['csat', 'source'], source: 'ChatbotCsatSource' },
  { component: 'ChatbotCsat', path: ['source'], source: 'ChatbotCsatSource' },
  { component: 'EventDocumentVersionSnapshot', path: ['source', 'kind'], source: 'DocumentVersionSourceKind' },
  { component: 'EventDocumentVersionSnapshot', path: ['source', 'command'], source: 'DocumentCommandName' },
  { component: 'DocumentVersionSource', path: ['kind'], source: 'DocumentVersionSourceKind' },
  { component: 'DocumentVersionSource', path: ['command'], source: 'DocumentCommandName' },
];

/** Ids of other resources repeated in snapshots: the same pattern and length as the resource's own field. */
const ids: { component: string; path: string[]; source: string; sourcePath: string[] }[] = [
  { component: 'EventVoiceSnapshot', path: ['id'], source: 'Voice', sourcePath: ['id'] },
  { component: 'EventWorkflowRunSnapshot', path: ['id'], source: 'WorkflowRun', sourcePath: ['id'] },
  { component: 'EventWorkflowRunSnapshot', path: ['workflow_id'], source: 'Workflow', sourcePath: ['id'] },
  { component: 'EventDocumentSnapshot', path: ['id'], source: 'Document', sourcePath: ['id'] },
  { component: 'EventDocumentVersionSnapshot', path: ['id'], source: 'DocumentVersion', sourcePath: ['id'] },
  { component: 'EventConversationSnapshot', path: ['id'], source: 'ChatbotConversation', sourcePath: ['id'] },
  { component: 'EventConversationSnapshot', path: ['chatbot_id'], source: 'Chatbot', sourcePath: ['id'] },
  { component: 'EventChatThreadSnapshot', path: ['id'], source: 'ChatThread', sourcePath: ['id'] },
  { component: 'EventMemberSnapshot', path: ['id'], source: 'Member', sourcePath: ['id'] },
];

describe('event schemas: values copied from other areas', () => {
  test.each(named(subsets))('$field is a subset of $source', ({ component, path, source }) => {
    const values: unknown[] = deref(property(component, path)).enum;
    const sourceValues: unknown[] = deref(schemas[source])?.enum;
    expect(values, key(component, path)).toBeInstanceOf(Array);
    expect(values.length, key(component, path)).toBeGreaterThan(0);
    expect(sourceValues, source).toBeInstanceOf(Array);
    const unknown = values.filter((v) => !sourceValues.includes(v));
    expect(unknown, `${key(component, path)} has values that ${source} does not have`).toEqual([]);
  });

  test.each(named(references))('$field references $source', ({ component, path, source }) => {
    expect(schemas[source], `components.schemas.${source}`).toBeDefined();
    expect(referencedComponent(property(component, path)), key(component, path)).toBe(source);
  });

  test.each(named(ids))('$field has the pattern and length of $source', ({ component, path, source, sourcePath }) => {
    const copy = deref(property(component, path));
    const original = deref(property(source, sourcePath));
    expect(original.pattern, key(source, sourcePath)).toBeTypeOf('string');
    expect(copy.pattern, key(component, path)).toBe(original.pattern);
    expect(copy.maxLength, key(component, path)).toBe(original.maxLength);
  });

  // Any other `enum` or `pattern` written inline in an event schema would be a new copy nobody checks: reference
  // the source schema instead, or list the field above (in `subsets` or `ids`) with its source.
  test('no other enum or pattern is written inline in an event data or snapshot schema', () => {
    const checked = new Set([...subsets, ...ids].map(({ component, path }) => key(component, path)));
    const unchecked: string[] = [];
    const walk = (node: unknown, component: string, path: string[]) => {
      if (!node || typeof node !== 'object') return;
      const schema = node as Json;
      if (('enum' in schema || 'pattern' in schema) && !checked.has(key(component, path))) {
        unchecked.push(key(component, path));
      }
      for (const [name, child] of Object.entries<Json>(schema.properties ?? {})) walk(child, component, [...path, name]);
      for (const keyword of ['items', 'additionalProperties']) walk(schema[keyword], component, [...path, `[${keyword}]`]);
      for (const keyword of ['oneOf', 'anyOf', 'allOf']) {
        (schema[keyword] ?? []).forEach((branch: unknown, i: number) => walk(branch, component, [...path, `[${keyword}/${i}]`]));
      }
    };
    const eventSchemas = Object.keys(schemas).filter((name) => /EventData$/.test(name) || /^Event[A-Za-z]*Snapshot$/.test(name));
    expect(eventSchemas.length).toBeGreaterThanOrEqual(15);
    for (const name of eventSchemas) walk(schemas[name], name, []);
    expect(unchecked).toEqual([]);
  });
});
