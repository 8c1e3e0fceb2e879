// Workflow definitions: create, validate, list, get, replace (a new version when the definition changes) and delete
// (refused while runs are active). A definition arrives as JSON or YAML (src/platform/yaml-body.ts parses YAML into
// the same value); the contract's schema has checked it before the handler runs, definition.ts checks it as a whole.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest, recordAudit } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { audited, lockOwned } from '../../platform/owned.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem, type ProblemFieldError } from '../../platform/problems.ts';
import { yamlPosition } from '../../platform/yaml-body.ts';
import type { Database } from '../../storage/schema.ts';
import { documentsOf } from '../documents/index.ts';
import { knowledgeBasesOf } from '../knowledge/index.ts';
import { projectsOf } from '../projects/index.ts';
import { type Checked, checkDefinition, type Definition, inputSchema } from './definition.ts';
import { asText, ExpressionError, parseTemplate, referencesOf, render } from './expressions.ts';
import type { WorkflowsTable } from './schema.ts';

type Schemas = components['schemas'];
type Db = Kysely<Database> | Transaction<Database>;
export type WorkflowRow = Selectable<WorkflowsTable>;

export const ACTIVE_RUN_STATUSES = ['queued', 'running', 'awaiting_approval'] as const;

export function workflowsOf(db: Db, workspaceId: string) {
  return db.selectFrom('workflows').selectAll().where('workspace_id', '=', workspaceId);
}

export async function loadWorkflow(db: Db, context: RequestContext, id: string): Promise<WorkflowRow> {
  const row = await workflowsOf(db, context.caller.workspace.id).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('workflow', id);
  return row;
}

/**
 * The document a document_command step names whatever the run's data: its `document_id` template refers to nothing
 * (`doc_…`, or `{{ 'doc_…' }}`). Undefined when it depends on the run, or does not parse (checkDefinition says so).
 */
function fixedDocumentId(template: string): string | undefined {
  try {
    const parts = parseTemplate(template);
    if (referencesOf(parts).length > 0) return undefined;
    return asText(render(parts, { inputs: {}, steps: {}, run: { id: '' }, workflow: { id: '', version: 0 } }));
  } catch (error) {
    if (error instanceof ExpressionError || error instanceof RangeError) return undefined;
    throw error;
  }
}

/** The definition checked as a whole against the caller's workspace (its models, ready voices, knowledge bases, documents, projects). */
async function check(context: RequestContext, definition: Definition): Promise<Checked> {
  const db = context.platform.db;
  const workspace = context.caller.workspace;
  const catalogue = context.platform.services.engine.catalogue;
  const ids = (type: Definition['steps'][number]['type'], field: string) =>
    definition.steps
      .filter((step) => step.type === type)
      .map((step) => (step as Record<string, unknown>)[field] as string | undefined)
      .filter((id): id is string => !!id);
  const voiceIds = [
    ...ids('generate', 'voice_id'),
    ...definition.steps.flatMap((step) =>
      step.type === 'document_command' && step.options?.voice_id ? [step.options.voice_id] : [],
    ),
  ];
  const baseIds = [
    ...ids('knowledge_search', 'knowledge_base_id'),
    ...definition.steps.flatMap((step) =>
      step.type === 'document_command' && step.options?.knowledge_base_id ? [step.options.knowledge_base_id] : [],
    ),
  ];
  const readyVoices = new Set(
    voiceIds.length === 0
      ? []
      : (
          await db
            .selectFrom('voices')
            .select('id')
            .where('workspace_id', '=', workspace.id)
            .where('id', 'in', voiceIds)
            .where('status', '=', 'ready')
            .execute()
        ).map((row) => row.id),
  );
  const bases = new Set(
    baseIds.length === 0
      ? []
      : (await knowledgeBasesOf(db, workspace.id).where('id', 'in', baseIds).execute()).map((row) => row.id),
  );
  // A document named by a run's data (`{{ inputs.document_id }}`) is looked up when the step runs.
  const documentIds = new Map(
    definition.steps.flatMap((step, index) =>
      step.type === 'document_command' ? [[index, fixedDocumentId(step.document_id)] as const] : [],
    ),
  );
  const named = [...new Set([...documentIds.values()].filter((id): id is string => id !== undefined))];
  const documents = new Set(
    named.length === 0
      ? []
      : (await documentsOf(db, workspace.id).where('id', 'in', named).execute()).map((row) => row.id),
  );
  const project = definition.project_id
    ? await projectsOf(db, workspace.id).where('id', '=', definition.project_id).executeTakeFirst()
    : undefined;
  // A model the steps can write with: a chat model (not an embedding model) that the workspace's region offers.
  const writesHere = (id: string) => {
    const model = catalogue.get(id);
    return model?.regions.includes(workspace.region) === true && model.capabilities.includes('chat');
  };
  const checked = checkDefinition(definition, {
    model: writesHere,
    voice: (id) => readyVoices.has(id),
    knowledgeBase: (id) => bases.has(id),
    project: () => project !== undefined,
  });
  // Document commands name their document, and their model and voice in `options`: the same checks.
  const extra: ProblemFieldError[] = [];
  definition.steps.forEach((step, index) => {
    if (step.type !== 'document_command') return;
    const documentId = documentIds.get(index);
    if (documentId !== undefined && !documents.has(documentId))
      extra.push({
        pointer: `/steps/${index}/document_id`,
        detail: `${documentId.slice(0, 100)} is not a document of this workspace`,
      });
    if (!step.options) return;
    const { model, voice_id: voiceId, knowledge_base_id: baseId } = step.options;
    if (model && !writesHere(model))
      extra.push({
        pointer: `/steps/${index}/options/model`,
        detail: `${model} is not a chat model of the catalogue in this workspace's region`,
      });
    if (voiceId && !readyVoices.has(voiceId))
      extra.push({
        pointer: `/steps/${index}/options/voice_id`,
        detail: `${voiceId} is not a ready voice of this workspace`,
      });
    if (baseId && !bases.has(baseId))
      extra.push({
        pointer: `/steps/${index}/options/knowledge_base_id`,
        detail: `${baseId} is not a knowledge base of this workspace`,
      });
    if (step.command === 'translate' && !step.options.target_language)
      extra.push({ pointer: `/steps/${index}/options`, detail: 'translate needs options.target_language' });
  });
  if (extra.length === 0) return checked;
  return { errors: [...checked.errors, ...extra].slice(0, 100), warnings: checked.warnings, normalized: null };
}

/** The errors of a YAML body also say where they are in its text. */
function placed(context: RequestContext, issues: ProblemFieldError[]): ProblemFieldError[] {
  const yaml = context.yamlBody;
  if (!yaml) return issues;
  return issues.map((issue) => {
    const at = yamlPosition(yaml, issue.pointer);
    return at
      ? { ...issue, detail: `${issue.detail}; in the YAML at line ${at.line}, column ${at.column}`.slice(0, 1000) }
      : issue;
  });
}

async function checked(context: RequestContext, definition: Definition): Promise<Definition> {
  const result = await check(context, definition);
  if (result.errors.length > 0) {
    const n = result.errors.length;
    throw new Problem('invalid_workflow_definition', `The definition has ${n} error${n === 1 ? '' : 's'}.`, {
      errors: placed(context, result.errors),
    });
  }
  return result.normalized!;
}

async function runCounts(db: Db, workflowIds: string[]): Promise<Map<string, Schemas['WorkflowRunCounts']>> {
  const counts = new Map(workflowIds.map((id) => [id, { total: 0, active: 0, success: 0, failure: 0, cancelled: 0 }]));
  if (workflowIds.length === 0) return counts;
  const rows = await db
    .selectFrom('workflow_runs')
    .select(['workflow_id', 'status', (eb) => eb.fn.countAll<string | number>().as('n')])
    .where('workflow_id', 'in', workflowIds)
    .groupBy(['workflow_id', 'status'])
    .execute();
  for (const row of rows) {
    const count = counts.get(row.workflow_id)!;
    const n = Number(row.n);
    count.total += n;
    if ((ACTIVE_RUN_STATUSES as readonly string[]).includes(row.status)) count.active += n;
    else if (row.status === 'success' || row.status === 'failure' || row.status === 'cancelled') count[row.status] += n;
  }
  return counts;
}

export function presentWorkflow(row: WorkflowRow, counts: Schemas['WorkflowRunCounts']): Schemas['Workflow'] {
  const definition = JSON.parse(row.definition) as Definition;
  return {
    id: row.id,
    object: 'workflow',
    name: row.name,
    description: row.description,
    project_id: row.project_id,
    version: row.version,
    definition,
    input_schema: inputSchema(definition),
    run_counts: counts,
    last_run_at: row.last_run_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

async function present(db: Db, row: WorkflowRow): Promise<Schemas['Workflow']> {
  return presentWorkflow(row, (await runCounts(db, [row.id])).get(row.id)!);
}

/** Serialised the same way whatever the order of the keys: an identical definition sent again is no new version. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined);
  return `{${entries
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, item]) => `${JSON.stringify(key)}:${canonical(item)}`)
    .join(',')}}`;
}

export const workflowHandlers = {
  async listWorkflows(request, context) {
    const page = pageRequest(request.query);
    let query = workflowsOf(context.platform.db, context.caller.workspace.id);
    if (request.query.project_id !== undefined) query = query.where('project_id', '=', request.query.project_id);
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const counts = await runCounts(
      context.platform.db,
      rows.map((row) => row.id),
    );
    const { body, headers } = toPage(
      rows,
      page,
      (row) => ({ id: row.id }),
      (row) => presentWorkflow(row, counts.get(row.id)!),
      context.url,
    );
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async validateWorkflow(request, context) {
    const result = await check(context, request.body);
    const body: Schemas['WorkflowValidationResult'] = {
      object: 'workflow_validation',
      valid: result.errors.length === 0,
      errors: placed(context, result.errors),
      warnings: placed(context, result.warnings),
      definition: result.normalized,
    };
    return { status: 200, contentType: 'application/json', body };
  },

  async createWorkflow(request, context) {
    const definition = request.body;
    const normalized = await checked(context, definition);
    const _db = context.platform.db;
    const now = iso(context.now);
    const row: WorkflowRow = {
      id: newId('wf', context.now),
      workspace_id: context.caller.workspace.id,
      project_id: definition.project_id ?? null,
      name: definition.name,
      description: definition.description ?? null,
      version: 1,
      definition: JSON.stringify(definition),
      created_at: now,
      updated_at: now,
      last_run_at: null,
    };
    await audited(context, async (trx) => {
      await trx.insertInto('workflows').values(row).execute();
      await trx
        .insertInto('workflow_versions')
        .values({ workflow_id: row.id, version: 1, definition: JSON.stringify(normalized), created_at: now })
        .execute();
      return [
        undefined,
        {
          action: 'workflow.created',
          target: { type: 'workflow', id: row.id, display_name: row.name },
          details: { name: row.name },
        },
      ];
    });
    return {
      status: 201,
      contentType: 'application/json',
      headers: { Location: `/v1/workflows/${row.id}` },
      body: presentWorkflow(row, { total: 0, active: 0, success: 0, failure: 0, cancelled: 0 }),
    };
  },

  async getWorkflow(request, context) {
    const row = await loadWorkflow(context.platform.db, context, request.path.id);
    return { status: 200, contentType: 'application/json', body: await present(context.platform.db, row) };
  },

  async replaceWorkflow(request, context) {
    const definition = request.body;
    const normalized = await checked(context, definition);
    const db = context.platform.db;
    const row = await db.transaction().execute(async (trx) => {
      const current = await lockOwned(
        trx,
        workflowsOf(trx, context.caller.workspace.id).where('id', '=', request.path.id),
        'workflow',
        request.path.id,
      );
      if (canonical(JSON.parse(current.definition)) === canonical(definition)) return current;
      const now = iso(context.now);
      const changes = {
        project_id: definition.project_id ?? null,
        name: definition.name,
        description: definition.description ?? null,
        version: current.version + 1,
        definition: JSON.stringify(definition),
        updated_at: now,
      };
      await trx.updateTable('workflows').set(changes).where('id', '=', current.id).execute();
      await trx
        .insertInto('workflow_versions')
        .values({
          workflow_id: current.id,
          version: changes.version,
          definition: JSON.stringify(normalized),
          created_at: now,
        })
        .execute();
      await recordAudit(trx, byRequest(context), {
        action: 'workflow.updated',
        target: { type: 'workflow', id: current.id, display_name: changes.name },
        details: { version: changes.version },
      });
      return { ...current, ...changes };
    });
    return { status: 200, contentType: 'application/json', body: await present(db, row) };
  },

  async deleteWorkflow(request, context) {
    const db = context.platform.db;
    await db.transaction().execute(async (trx) => {
      const row = await lockOwned(
        trx,
        workflowsOf(trx, context.caller.workspace.id).where('id', '=', request.path.id),
        'workflow',
        request.path.id,
      );
      // Runs start with the workflow's row locked (runs.ts), so none can start between this count and the delete.
      const active = await trx
        .selectFrom('workflow_runs')
        .select('id')
        .where('workflow_id', '=', row.id)
        .where('status', 'in', [...ACTIVE_RUN_STATUSES])
        .limit(1)
        .executeTakeFirst();
      if (active) {
        throw new Problem(
          'workflow_has_active_runs',
          `The workflow has runs in progress (${active.id} among them); cancel them first (POST /v1/workflows/${row.id}/runs/{run_id}/cancel).`,
        );
      }
      await trx
        .deleteFrom('workflow_run_steps')
        .where('run_id', 'in', trx.selectFrom('workflow_runs').select('id').where('workflow_id', '=', row.id))
        .execute();
      await trx.deleteFrom('workflow_runs').where('workflow_id', '=', row.id).execute();
      await trx.deleteFrom('workflow_versions').where('workflow_id', '=', row.id).execute();
      await trx.deleteFrom('workflows').where('id', '=', row.id).execute();
      await recordAudit(trx, byRequest(context), {
        action: 'workflow.deleted',
        target: { type: 'workflow', id: row.id, display_name: row.name },
        details: { name: row.name },
      });
    });
    return { status: 204 };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  'listWorkflows' | 'validateWorkflow' | 'createWorkflow' | 'getWorkflow' | 'replaceWorkflow' | 'deleteWorkflow'
>;
