// The event schemas (`*EventData`) carry the keys of section 6 of the original specification and describe resources of
// other areas. Where they can, they reference the resource's own schema; where an event deliberately allows only some
// of its values, or repeats an id's pattern, this suite checks the copy against its source in the bundle
// (generated/openapi.json), so that the two cannot drift. It also holds the catalogue to the specification's words.
import { createHmac } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { asyncapi } from '../support/asyncapi.ts';
import { deref, type Json, spec } from '../support/spec.ts';

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
    const [nulls, others] = [
      node.oneOf.filter((b: Json) => b.type === 'null'),
      node.oneOf.filter((b: Json) => b.type !== 'null'),
    ];
    if (nulls.length === 1 && others.length === 1) ref = others[0].$ref;
  }
  return typeof ref === 'string' ? ref.replace(/^#\/components\/schemas\//, '') : undefined;
}

const key = (component: string, path: string[]) => `${component}.${path.join('.')}`;
/** Adds the readable name of each field (`Component.a.b`) for the test titles. */
const named = <T extends { component: string; path: string[] }>(rows: T[]) =>
  rows.map((row) => ({ ...row, field: key(row.component, row.path) }));

/**
 * Section 6 of the original specification: every event type and the keys of its `data`, word for word, plus the
 * types the contract adds (`chat.thread.deleted` for data deletion, `voice.training_failed`, the spend limits'
 * `usage.limit_approaching` and `usage.limit_reached`; docs/decisions.md).
 */
const specifiedCatalogue: Record<string, string[]> = {
  'chat.message.created': ['thread_id', 'message_id', 'role', 'content', 'model', 'voice_id'],
  'document.published': ['document_id', 'published_at', 'author', 'project_id'],
  'voice.trained': ['voice_id', 'sample_word_count', 'sliders', 'banned_phrases'],
  'chatbot.conversation.escalated': ['conversation_id', 'intent', 'transcript_url', 'requested_agent'],
  'chatbot.csat.received': ['conversation_id', 'score', 'comment', 'language'],
  'workflow.run.completed': ['workflow_id', 'run_id', 'status', 'duration_ms', 'cost_usd'],
  'workflow.run.approval_required': ['workflow_id', 'run_id', 'step_id', 'approval_url'],
  'workspace.member.added': ['user_id', 'email', 'role', 'scim_source'],
  'workspace.member.removed': ['user_id', 'removed_at', 'removed_by'],
  'audit.policy.violation': ['rule_id', 'project_id', 'user_id', 'blocked_at', 'reason'],
};
const addedTypes: Record<string, string[]> = {
  'chat.thread.deleted': ['thread_id', 'deleted_at'],
  'voice.training_failed': ['voice_id', 'failure_reason'],
  'usage.limit_approaching': [
    'spend_limit_id',
    'scope',
    'amount_usd',
    'soft_threshold',
    'period',
    'spent_usd',
    'period_start',
    'resets_at',
  ],
  'usage.limit_reached': [
    'spend_limit_id',
    'scope',
    'amount_usd',
    'soft_threshold',
    'period',
    'spent_usd',
    'period_start',
    'resets_at',
  ],
};

/** Keys whose value may not apply, hence nullable (and still required). */
const nullableKeys: Record<string, string[]> = {
  'chat.message.created': ['content', 'voice_id'],
  'document.published': ['author', 'project_id'],
  'chatbot.conversation.escalated': ['intent', 'requested_agent'],
  'chatbot.csat.received': ['comment', 'language'],
  'workspace.member.added': ['scim_source'],
  'audit.policy.violation': ['project_id', 'user_id'],
  'usage.limit_approaching': ['soft_threshold'],
  'usage.limit_reached': ['soft_threshold'],
};

/** Values copied on purpose: the event allows only some of the source's values (source: component and path). */
const subsets: { component: string; path: string[]; source: string; sourcePath?: string[] }[] = [
  // A run sends workflow.run.completed when it ends in success or in failure; a cancelled run sends none.
  { component: 'WorkflowRunCompletedEventData', path: ['status'], source: 'WorkflowRunStatus' },
  { component: 'ChatMessageCreatedEventData', path: ['role'], source: 'ChatMessage', sourcePath: ['role'] },
  {
    component: 'WorkflowRunApprovalRequiredEventData',
    path: ['approver_role'],
    source: 'WorkflowRunStepApproval',
    sourcePath: ['approver_role'],
  },
];

/** Fields that reference the single source of their values (a reference replaced a copy; keep it that way). */
const references: { component: string; path: string[]; source: string }[] = [
  { component: 'Voice', path: ['failure_reason'], source: 'VoiceFailureReason' },
  { component: 'VoiceTrainedEventData', path: ['sliders'], source: 'VoiceSliders' },
  { component: 'VoiceTrainedEventData', path: ['banned_phrases'], source: 'VoiceBannedPhrases' },
  { component: 'VoiceTrainedEventData', path: ['name'], source: 'VoiceName' },
  { component: 'VoiceTrainingFailedEventData', path: ['failure_reason'], source: 'VoiceFailureReason' },
  { component: 'VoiceTrainingFailedEventData', path: ['name'], source: 'VoiceName' },
  { component: 'ChatbotConversationEscalatedEventData', path: ['intent'], source: 'ChatbotIntent' },
  { component: 'ChatbotConversationEscalatedEventData', path: ['source'], source: 'ChatbotEscalationSource' },
  { component: 'ChatbotConversationEscalatedEventData', path: ['reason'], source: 'ChatbotEscalationReason' },
  { component: 'ChatbotConversationEscalatedEventData', path: ['note'], source: 'ChatbotEscalationNote' },
  { component: 'ChatbotEscalation', path: ['source'], source: 'ChatbotEscalationSource' },
  { component: 'ChatbotEscalation', path: ['reason'], source: 'ChatbotEscalationReason' },
  { component: 'ChatbotEscalation', path: ['note'], source: 'ChatbotEscalationNote' },
  { component: 'ChatbotCsatReceivedEventData', path: ['source'], source: 'ChatbotCsatSource' },
  { component: 'ChatbotCsat', path: ['source'], source: 'ChatbotCsatSource' },
  { component: 'WorkflowRunCompletedEventData', path: ['error'], source: 'WorkflowRunError' },
  { component: 'WorkflowRunApprovalRequiredEventData', path: ['step_id'], source: 'WorkflowStepKey' },
  { component: 'WorkspaceMemberAddedEventData', path: ['role'], source: 'Role' },
  { component: 'WorkspaceMemberRemovedEventData', path: ['role'], source: 'Role' },
];

/** Ids (and other patterned values) of other resources repeated in events: the same pattern and length as the resource's own field. */
const ids: { component: string; path: string[]; source: string; sourcePath: string[] }[] = [
  { component: 'ChatMessageCreatedEventData', path: ['thread_id'], source: 'ChatMessage', sourcePath: ['thread_id'] },
  { component: 'ChatMessageCreatedEventData', path: ['message_id'], source: 'ChatMessage', sourcePath: ['id'] },
  { component: 'ChatMessageCreatedEventData', path: ['voice_id'], source: 'Voice', sourcePath: ['id'] },
  { component: 'DocumentPublishedEventData', path: ['document_id'], source: 'Document', sourcePath: ['id'] },
  { component: 'DocumentPublishedEventData', path: ['author'], source: 'Member', sourcePath: ['id'] },
  { component: 'VoiceTrainedEventData', path: ['voice_id'], source: 'Voice', sourcePath: ['id'] },
  { component: 'VoiceTrainedEventData', path: ['language'], source: 'Voice', sourcePath: ['language'] },
  { component: 'VoiceTrainingFailedEventData', path: ['voice_id'], source: 'Voice', sourcePath: ['id'] },
  {
    component: 'ChatbotConversationEscalatedEventData',
    path: ['conversation_id'],
    source: 'ChatbotConversation',
    sourcePath: ['id'],
  },
  { component: 'ChatbotConversationEscalatedEventData', path: ['chatbot_id'], source: 'Chatbot', sourcePath: ['id'] },
  {
    component: 'ChatbotCsatReceivedEventData',
    path: ['conversation_id'],
    source: 'ChatbotConversation',
    sourcePath: ['id'],
  },
  { component: 'ChatbotCsatReceivedEventData', path: ['chatbot_id'], source: 'Chatbot', sourcePath: ['id'] },
  { component: 'WorkflowRunCompletedEventData', path: ['workflow_id'], source: 'Workflow', sourcePath: ['id'] },
  { component: 'WorkflowRunCompletedEventData', path: ['run_id'], source: 'WorkflowRun', sourcePath: ['id'] },
  { component: 'WorkflowRunApprovalRequiredEventData', path: ['workflow_id'], source: 'Workflow', sourcePath: ['id'] },
  { component: 'WorkflowRunApprovalRequiredEventData', path: ['run_id'], source: 'WorkflowRun', sourcePath: ['id'] },
  { component: 'WorkspaceMemberAddedEventData', path: ['user_id'], source: 'Member', sourcePath: ['id'] },
  { component: 'WorkspaceMemberRemovedEventData', path: ['user_id'], source: 'Member', sourcePath: ['id'] },
  {
    component: 'WorkspaceMemberRemovedEventData',
    path: ['removed_by_api_key_id'],
    source: 'ApiKey',
    sourcePath: ['id'],
  },
  { component: 'AuditPolicyViolationEventData', path: ['user_id'], source: 'Member', sourcePath: ['id'] },
  { component: 'AuditPolicyViolationEventData', path: ['voice_id'], source: 'Voice', sourcePath: ['id'] },
  { component: 'ChatThreadDeletedEventData', path: ['thread_id'], source: 'ChatThread', sourcePath: ['id'] },
];

/**
 * Patterns without one source field: `removed_by` is a member's or an API key's id; `project_id` is a project's id
 * (compared with `Project.id` once the projects area's schema is in the bundle).
 */
const ULID = '[0-9A-HJKMNP-TV-Z]{26}';
const composedPatterns: {
  component: string;
  path: string[];
  pattern: string;
  maxLength: number;
  sources: [string, string[]][];
}[] = [
  {
    component: 'WorkspaceMemberRemovedEventData',
    path: ['removed_by'],
    pattern: `^(usr|key)_${ULID}$`,
    maxLength: 30,
    sources: [
      ['Member', ['id']],
      ['ApiKey', ['id']],
    ],
  },
  {
    component: 'DocumentPublishedEventData',
    path: ['project_id'],
    pattern: `^prj_${ULID}$`,
    maxLength: 30,
    sources: [['Project', ['id']]],
  },
  {
    component: 'AuditPolicyViolationEventData',
    path: ['project_id'],
    pattern: `^prj_${ULID}$`,
    maxLength: 30,
    sources: [['Project', ['id']]],
  },
];

describe('event schemas: values copied from other areas', () => {
  test.each(named(subsets))('$field is a subset of $source', ({ component, path, source, sourcePath }) => {
    const values: unknown[] = deref(property(component, path)).enum;
    const sourceValues: unknown[] = deref(sourcePath ? property(source, sourcePath) : schemas[source])?.enum;
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

  test.each(named(composedPatterns))(
    '$field has its composed pattern, matching its sources',
    ({ component, path, pattern, maxLength, sources }) => {
      const copy = deref(property(component, path));
      expect(copy.pattern).toBe(pattern);
      expect(copy.maxLength).toBe(maxLength);
      for (const [source, sourcePath] of sources) {
        if (!schemas[source]) continue;
        const original = deref(property(source, sourcePath));
        expect(original.maxLength, key(source, sourcePath)).toBeLessThanOrEqual(maxLength);
        // Every example id of the source matches the composed pattern.
        for (const example of original.examples ?? []) expect(example).toMatch(new RegExp(pattern));
      }
    },
  );

  // Any other `enum` or `pattern` written inline in an event schema would be a new copy nobody checks: reference
  // the source schema instead, or list the field above (in `subsets` or `ids`) with its source.
  test('no other enum or pattern is written inline in an event data or snapshot schema', () => {
    const checked = new Set(
      [...subsets, ...ids, ...composedPatterns].map(({ component, path }) => key(component, path)),
    );
    const unchecked: string[] = [];
    const walk = (node: unknown, component: string, path: string[]) => {
      if (!node || typeof node !== 'object') return;
      const schema = node as Json;
      if (('enum' in schema || 'pattern' in schema) && !checked.has(key(component, path))) {
        unchecked.push(key(component, path));
      }
      for (const [name, child] of Object.entries<Json>(schema.properties ?? {}))
        walk(child, component, [...path, name]);
      for (const keyword of ['items', 'additionalProperties'])
        walk(schema[keyword], component, [...path, `[${keyword}]`]);
      for (const keyword of ['oneOf', 'anyOf', 'allOf']) {
        (schema[keyword] ?? []).forEach((branch: unknown, i: number) => {
          walk(branch, component, [...path, `[${keyword}/${i}]`]);
        });
      }
    };
    const eventSchemas = Object.keys(schemas).filter((name) => /EventData$/.test(name));
    expect(eventSchemas.length).toBe(Object.keys({ ...specifiedCatalogue, ...addedTypes }).length);
    for (const name of eventSchemas) walk(schemas[name], name, []);
    expect(unchecked).toEqual([]);
  });
});

describe("the event catalogue is the specification's", () => {
  const catalogue = { ...specifiedCatalogue, ...addedTypes };
  const webhooks: Json = spec.webhooks;
  const dataOf = (type: string): Json => {
    const event = deref(webhooks[type].post.requestBody.content['application/json'].schema);
    return deref(event.properties.data);
  };

  test('EventType, the webhooks section and Event list exactly these types', () => {
    expect(new Set(schemas.EventType.enum)).toEqual(new Set(Object.keys(catalogue)));
    expect(new Set(Object.keys(webhooks))).toEqual(new Set(Object.keys(catalogue)));
    expect(schemas.EventType.enum.slice(0, 10)).toEqual(Object.keys(specifiedCatalogue));
    expect(schemas.Event.oneOf.length).toBe(Object.keys(catalogue).length);
  });

  test.each(Object.entries(catalogue))(
    '%s: its data has the specified keys first, at the top level, every one required',
    (type, keys) => {
      const data = dataOf(type);
      expect(data.type).toBe('object');
      expect(Object.keys(data.properties).slice(0, keys.length)).toEqual(keys);
      expect(data.required.slice(0, keys.length)).toEqual(keys);
      // More keys may follow; each of them is required too: present, `null` where it does not apply.
      expect(new Set(data.required)).toEqual(new Set(Object.keys(data.properties)));
      for (const name of Object.keys(data.properties)) {
        const field = data.properties[name];
        expect(field.description ?? deref(field).description, `${type} ${name} has a description`).toBeTruthy();
      }
    },
  );

  test.each(Object.entries(catalogue))('%s: exactly the keys that may not apply are nullable', (type) => {
    const data = dataOf(type);
    const accepts = (field: Json, value: unknown) => {
      const resolved = deref(field);
      const types = ([] as unknown[]).concat(resolved.type ?? []);
      if (value === null && types.includes('null')) return true;
      return (resolved.oneOf ?? []).some((branch: Json) => deref(branch).type === 'null');
    };
    const nullable = Object.keys(data.properties).filter((name) => accepts(data.properties[name], null));
    const specified = catalogue[type as keyof typeof catalogue]!;
    expect(nullable.filter((name) => specified.includes(name)).sort()).toEqual([...(nullableKeys[type] ?? [])].sort());
  });

  test('workflow.run.completed tells success from failure with `status`', () => {
    expect(deref(dataOf('workflow.run.completed').properties.status).enum).toEqual(['success', 'failure']);
    expect(schemas.WorkflowRunStatus.enum).toEqual([
      'queued',
      'running',
      'awaiting_approval',
      'success',
      'failure',
      'cancelled',
    ]);
    expect(schemas.WorkflowRunStepStatus.enum).toEqual(expect.arrayContaining(['success', 'failure', 'cancelled']));
    expect(schemas.WorkflowRunStepStatus.enum).not.toContain('succeeded');
    expect(schemas.WorkflowRunStepStatus.enum).not.toContain('failed');
  });
});

describe('the AsyncAPI examples', () => {
  // The document says its examples are real deliveries signed with this secret; a changed payload needs a new signature.
  const secret = 'whsec_Q2h7vN4kR9pX1mT6sW3yB8cF5gJ0dL2eH7aK4nP9rUz';
  const examples = Object.values(asyncapi.components.messages as Record<string, Json>).flatMap((message) =>
    (message.examples ?? [])
      .filter((example: Json) => example.headers?.['Service-Signature'])
      .map((example: Json) => ({ name: `${message.name}: ${example.name}`, example })),
  );
  test.each(examples)('$name is signed with the example secret', ({ example }) => {
    const expected = createHmac('sha256', secret)
      .update(`${example.headers['Service-Timestamp']}.${JSON.stringify(example.payload)}`)
      .digest('hex');
    expect(example.headers['Service-Signature']).toBe(expected);
  });
});
