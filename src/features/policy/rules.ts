// Compliance rules: the workspace's rules for every generated output (see enforce.ts), managed through
// /v1/compliance-rules.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest, recordAudit } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, validationFailed } from '../../platform/problems.ts';
import { forUpdate } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import { compilePolicy, type PersonalDataType, type PolicyRule, PolicyRuleError } from './match.ts';
import type { ComplianceRulesTable } from './schema.ts';

/** A stored rule as the policy matcher takes it. */
export function ruleOf(row: Selectable<ComplianceRulesTable>): PolicyRule {
  return {
    id: row.id,
    kind: row.kind,
    phrases: JSON.parse(row.phrases) as string[],
    pattern: row.pattern ?? undefined,
    caseSensitive: row.case_sensitive === 1,
    types: JSON.parse(row.personal_data_types) as PersonalDataType[],
    action: row.action,
    replacement: row.replacement ?? undefined,
    label: `the compliance rule "${row.name}"`,
  };
}

type Schemas = components['schemas'];
type RuleFields = Pick<
  Schemas['ComplianceRule'],
  'kind' | 'phrases' | 'pattern' | 'case_sensitive' | 'personal_data_types' | 'action' | 'replacement'
>;

/** The rules of one workspace: every query of this feature starts here. */
export function rulesOf(db: Kysely<Database> | Transaction<Database>, workspaceId: string) {
  return db.selectFrom('compliance_rules').selectAll().where('workspace_id', '=', workspaceId);
}

export function presentRule(row: Selectable<ComplianceRulesTable>): Schemas['ComplianceRule'] {
  return {
    id: row.id,
    object: 'compliance_rule',
    name: row.name,
    description: row.description,
    kind: row.kind,
    phrases: JSON.parse(row.phrases) as string[],
    pattern: row.pattern,
    case_sensitive: row.case_sensitive === 1,
    personal_data_types: JSON.parse(row.personal_data_types) as PersonalDataType[],
    action: row.action,
    replacement: row.replacement,
    project_id: row.project_id,
    enabled: row.enabled === 1,
    metadata: JSON.parse(row.metadata) as Schemas['Metadata'],
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * The fields a rule of its kind needs, and none it does not: every error at once, each with its pointer. The rule is
 * also compiled, so that a pattern RE2 refuses (or one that matches the empty string) is refused here, not at the
 * first generation.
 */
function checkRule(fields: RuleFields): void {
  const errors: { pointer: string; detail: string }[] = [];
  const need = (ok: boolean, pointer: string, detail: string) => ok || errors.push({ pointer, detail });
  const { kind } = fields;
  need(
    kind === 'banned_phrase' ? fields.phrases.length > 0 : fields.phrases.length === 0,
    '/phrases',
    kind === 'banned_phrase' ? 'must hold at least one phrase' : `must be empty for a ${kind} rule`,
  );
  need(
    kind === 'regex' ? fields.pattern !== null : fields.pattern === null,
    '/pattern',
    kind === 'regex' ? 'is required for a regex rule' : `must be null for a ${kind} rule`,
  );
  need(kind === 'regex' || !fields.case_sensitive, '/case_sensitive', 'applies to regex rules only');
  need(
    kind === 'personal_data' ? fields.personal_data_types.length > 0 : fields.personal_data_types.length === 0,
    '/personal_data_types',
    kind === 'personal_data' ? 'must name at least one type' : `must be empty for a ${kind} rule`,
  );
  need(fields.action === 'redact' || fields.replacement === null, '/replacement', 'applies to redact rules only');
  if (errors.length === 0) {
    try {
      compilePolicy([ruleOf({ ...toColumns(fields), id: 'rul_new', name: 'new' } as Selectable<ComplianceRulesTable>)]);
    } catch (error) {
      if (!(error instanceof PolicyRuleError)) throw error;
      errors.push({ pointer: kind === 'regex' ? '/pattern' : '/phrases', detail: error.reason });
    }
  }
  if (errors.length > 0) throw validationFailed(errors);
}

function toColumns(fields: RuleFields) {
  return {
    kind: fields.kind,
    phrases: JSON.stringify(fields.phrases),
    pattern: fields.pattern,
    case_sensitive: fields.case_sensitive ? 1 : 0,
    personal_data_types: JSON.stringify(fields.personal_data_types),
    action: fields.action,
    replacement: fields.replacement,
  };
}

async function refuseUnknownProject(
  db: Kysely<Database> | Transaction<Database>,
  workspaceId: string,
  projectId: string | null | undefined,
): Promise<void> {
  if (!projectId) return;
  const project = await db
    .selectFrom('projects')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', projectId)
    .executeTakeFirst();
  if (!project) throw notFound('project', projectId);
}

export const ruleHandlers = {
  async listComplianceRules(request, context) {
    const page = pageRequest(request.query);
    let query = rulesOf(context.platform.db, context.caller.workspace.id);
    if (request.query.kind !== undefined) query = query.where('kind', '=', request.query.kind);
    if (request.query.enabled !== undefined) query = query.where('enabled', '=', request.query.enabled ? 1 : 0);
    if (request.query.project_id !== undefined) query = query.where('project_id', '=', request.query.project_id);
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const { body, headers } = toPage(rows, page, (row) => ({ id: row.id }), presentRule, context.url);
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async createComplianceRule(request, context) {
    const body = request.body;
    const action = body.action ?? 'block';
    const fields: RuleFields = {
      kind: body.kind,
      phrases: body.phrases ?? [],
      pattern: body.pattern ?? null,
      case_sensitive: body.case_sensitive ?? false,
      personal_data_types: body.personal_data_types ?? [],
      action,
      replacement: body.replacement ?? (action === 'redact' ? '[redacted]' : null),
    };
    checkRule(fields);
    const workspaceId = context.caller.workspace.id;
    const row = await context.platform.db.transaction().execute(async (trx) => {
      await refuseUnknownProject(trx, workspaceId, body.project_id);
      const values = {
        id: newId('rul', context.now),
        workspace_id: workspaceId,
        name: body.name,
        description: body.description ?? null,
        ...toColumns(fields),
        project_id: body.project_id ?? null,
        enabled: body.enabled === false ? 0 : 1,
        metadata: JSON.stringify(body.metadata ?? {}),
        created_at: iso(context.now),
        updated_at: iso(context.now),
      };
      await trx.insertInto('compliance_rules').values(values).execute();
      await recordAudit(trx, byRequest(context), {
        action: 'compliance_rule.created',
        target: { type: 'compliance_rule', id: values.id, display_name: body.name },
        details: { name: body.name, kind: body.kind, action },
      });
      return values;
    });
    return {
      status: 201,
      contentType: 'application/json',
      headers: { Location: `/v1/compliance-rules/${row.id}` },
      body: presentRule(row),
    };
  },

  async getComplianceRule(request, context) {
    const row = await rulesOf(context.platform.db, context.caller.workspace.id)
      .where('id', '=', request.path.id)
      .executeTakeFirst();
    if (!row) throw notFound('compliance rule', request.path.id);
    return { status: 200, contentType: 'application/json', body: presentRule(row) };
  },

  async updateComplianceRule(request, context) {
    const changes = request.body;
    const workspaceId = context.caller.workspace.id;
    const row = await context.platform.db.transaction().execute(async (trx) => {
      const existing = await forUpdate(
        rulesOf(trx, workspaceId).where('id', '=', request.path.id),
        trx,
      ).executeTakeFirst();
      if (!existing) throw notFound('compliance rule', request.path.id);
      const current = presentRule(existing);
      const action = changes.action ?? current.action;
      const fields: RuleFields = {
        kind: current.kind,
        phrases: changes.phrases ?? current.phrases,
        pattern: changes.pattern !== undefined ? changes.pattern : current.pattern,
        case_sensitive: changes.case_sensitive ?? current.case_sensitive,
        personal_data_types: changes.personal_data_types ?? current.personal_data_types,
        action,
        // A rule that becomes a redact rule gets the default replacement, as does `replacement: null` on one; a rule
        // that becomes a block rule loses it.
        replacement:
          action === 'block'
            ? (changes.replacement ?? null)
            : changes.replacement === undefined
              ? (current.replacement ?? '[redacted]')
              : (changes.replacement ?? '[redacted]'),
      };
      checkRule(fields);
      if (changes.project_id !== undefined) await refuseUnknownProject(trx, workspaceId, changes.project_id);
      const updated = {
        ...existing,
        ...toColumns(fields),
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(changes.description !== undefined ? { description: changes.description } : {}),
        ...(changes.project_id !== undefined ? { project_id: changes.project_id } : {}),
        ...(changes.enabled !== undefined ? { enabled: changes.enabled ? 1 : 0 } : {}),
        ...(changes.metadata !== undefined ? { metadata: JSON.stringify(changes.metadata) } : {}),
        updated_at: iso(context.now),
      };
      await trx.updateTable('compliance_rules').set(updated).where('id', '=', existing.id).execute();
      await recordAudit(trx, byRequest(context), {
        action: 'compliance_rule.updated',
        target: { type: 'compliance_rule', id: existing.id, display_name: updated.name },
        details: { changed: Object.keys(changes).sort().join(','), name: updated.name },
      });
      return updated;
    });
    return { status: 200, contentType: 'application/json', body: presentRule(row) };
  },

  async deleteComplianceRule(request, context) {
    await context.platform.db.transaction().execute(async (trx) => {
      const existing = await forUpdate(
        rulesOf(trx, context.caller.workspace.id).where('id', '=', request.path.id),
        trx,
      ).executeTakeFirst();
      if (!existing) throw notFound('compliance rule', request.path.id);
      await trx.deleteFrom('compliance_rules').where('id', '=', existing.id).execute();
      await recordAudit(trx, byRequest(context), {
        action: 'compliance_rule.deleted',
        target: { type: 'compliance_rule', id: existing.id, display_name: existing.name },
        details: { name: existing.name },
      });
    });
    return { status: 204 };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  'listComplianceRules' | 'createComplianceRule' | 'getComplianceRule' | 'updateComplianceRule' | 'deleteComplianceRule'
>;
