// Projects: named groups of a workspace's documents, workflows and chatbots, with defaults (a brand voice, a model)
// for what is created in them. A project restricts nobody's access. Names are unique in the workspace ignoring case
// (409 project_name_taken): creations and renames take the workspace's row lock, so two concurrent requests cannot
// both take one name, and a unique index on (workspace_id, name_key) backs the rule. Deleting a project keeps what
// belonged to it: their `project_id` references projects with `on delete set null` (migration 004's rule for the
// features that add one), so they are detached in the delete's own statement.
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Handlers } from '../../../generated/operations.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { audited, lockOwned } from '../../platform/owned.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem, validationFailed } from '../../platform/problems.ts';
import { forUpdate } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import { voicesOf } from '../voices/index.ts';
import { presentProject } from './presenters.ts';

/** The name as compared for uniqueness and searched by the `name` filter: one Unicode form, lower case. */
export function projectNameKey(name: string): string {
  return name.normalize('NFC').toLowerCase();
}

/** The projects of one workspace: every query of this feature starts here, so no key reads another's. */
export function projectsOf(db: Kysely<Database> | Transaction<Database>, workspaceId: string) {
  return db.selectFrom('projects').selectAll().where('workspace_id', '=', workspaceId);
}

/** `%`, `_` and `\` match themselves in a LIKE pattern written with `escape '\'`. */
function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** Serialises the workspace's creations and renames, so that the name check below holds until the commit. */
async function lockNames(trx: Transaction<Database>, workspaceId: string): Promise<void> {
  await forUpdate(trx.selectFrom('workspaces').select('id').where('id', '=', workspaceId), trx).execute();
}

/** Refuses a name that another project of the workspace has, ignoring case. Call after lockNames. */
async function refuseTakenName(
  trx: Transaction<Database>,
  workspaceId: string,
  name: string,
  exceptProjectId?: string,
): Promise<void> {
  let holder = projectsOf(trx, workspaceId).where('name_key', '=', projectNameKey(name));
  if (exceptProjectId) holder = holder.where('id', '!=', exceptProjectId);
  const taken = await holder.executeTakeFirst();
  if (taken)
    throw new Problem(
      'project_name_taken',
      `Project ${taken.id} is already named "${taken.name}"; choose another name.`,
    );
}

/**
 * Refuses a default voice that is not the workspace's, as documents and chatbots refuse their `voice_id`: what is
 * created in the project later would fail with it. A voice still training is taken; it is the default once ready.
 */
async function checkDefaultVoice(db: Kysely<Database>, workspaceId: string, voiceId: string): Promise<void> {
  const voice = await voicesOf(db, workspaceId).where('id', '=', voiceId).executeTakeFirst();
  if (!voice)
    throw new Problem('not_found', `No voice ${voiceId} in this workspace.`, {
      errors: [{ pointer: '/default_voice_id', detail: 'is not a voice of this workspace' }],
    });
}

/**
 * Refuses a default model that is not in the catalogue, which the documents' AI commands would refuse at every use.
 * A model whose provider is not configured here is taken: configuring it later makes it work.
 */
function checkDefaultModel(context: RequestContext, model: string): void {
  const entry = context.platform.services.engine.catalogue.get(model);
  if (!entry) {
    throw new Problem('model_not_found', `No model ${model} in the catalogue; GET /v1/models lists them.`, {
      errors: [{ pointer: '/default_model', detail: 'is not a model of the catalogue' }],
    });
  }
  if (!entry.capabilities.includes('chat'))
    throw validationFailed([
      {
        pointer: '/default_model',
        detail: `${model} is an embedding model; the documents' AI commands write with a chat model`,
      },
    ]);
}

/** Refuses fallback models that the calls using them would refuse, each at `/fallback_models/<i>`. */
function checkFallbackModels(context: RequestContext, models: string[]): void {
  for (const [i, model] of models.entries()) {
    const pointer = `/fallback_models/${i}`;
    const entry = context.platform.services.engine.catalogue.get(model);
    if (!entry)
      throw new Problem('model_not_found', `No model ${model} in the catalogue; GET /v1/models lists them.`, {
        errors: [{ pointer, detail: 'is not a model of the catalogue' }],
      });
    if (!entry.capabilities.includes('chat'))
      throw validationFailed([
        { pointer, detail: `${model} is an embedding model; a fallback answers chat completions and responses` },
      ]);
  }
}

/**
 * The fallback models of a chat completion or a response that names `projectId` and no `models` of its own: the
 * project's `fallback_models`. A project that is not the workspace's is `404 not_found` at `/project_id`.
 */
export async function projectFallbacks(
  db: Kysely<Database>,
  workspaceId: string,
  projectId: string,
): Promise<string[]> {
  const row = await projectsOf(db, workspaceId)
    .select('fallback_models')
    .where('id', '=', projectId)
    .executeTakeFirst();
  if (!row)
    throw new Problem('not_found', `No project ${projectId} in this workspace.`, {
      errors: [{ pointer: '/project_id', detail: 'is not a project of this workspace' }],
    });
  return JSON.parse(row.fallback_models) as string[];
}

export const projectHandlers = {
  async listProjects(request, context) {
    const page = pageRequest(request.query);
    let query = projectsOf(context.platform.db, context.caller.workspace.id);
    if (request.query.name !== undefined) {
      const pattern = `%${likeLiteral(projectNameKey(request.query.name))}%`;
      // An explicit escape character: PostgreSQL's default is `\`, SQLite has none.
      query = query.where(sql<boolean>`name_key like ${pattern} escape '\\'`);
    }
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const { body, headers } = toPage(rows, page, (row) => ({ id: row.id }), presentProject, context.url);
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async createProject(request, context) {
    const {
      name,
      description = null,
      default_voice_id = null,
      default_model = null,
      fallback_models = [],
      metadata = {},
    } = request.body;
    const workspaceId = context.caller.workspace.id;
    if (default_voice_id !== null) await checkDefaultVoice(context.platform.db, workspaceId, default_voice_id);
    if (default_model !== null) checkDefaultModel(context, default_model);
    checkFallbackModels(context, fallback_models);
    const row = await audited(context, async (trx) => {
      await lockNames(trx, workspaceId);
      await refuseTakenName(trx, workspaceId, name);
      const values = {
        id: newId('prj', context.now),
        workspace_id: workspaceId,
        name,
        name_key: projectNameKey(name),
        description,
        default_voice_id,
        default_model,
        fallback_models: JSON.stringify(fallback_models),
        metadata: JSON.stringify(metadata),
        created_at: iso(context.now),
        updated_at: iso(context.now),
      };
      await trx.insertInto('projects').values(values).execute();
      return [
        values,
        {
          action: 'project.created',
          target: { type: 'project', id: values.id, display_name: name },
          details: { name },
        },
      ];
    });
    return {
      status: 201,
      contentType: 'application/json',
      headers: { Location: `/v1/projects/${row.id}` },
      body: presentProject(row),
    };
  },

  async getProject(request, context) {
    const row = await projectsOf(context.platform.db, context.caller.workspace.id)
      .where('id', '=', request.path.id)
      .executeTakeFirst();
    if (!row) throw notFound('project', request.path.id);
    return { status: 200, contentType: 'application/json', body: presentProject(row) };
  },

  async updateProject(request, context) {
    const changes = request.body;
    const workspaceId = context.caller.workspace.id;
    if (changes.default_voice_id) await checkDefaultVoice(context.platform.db, workspaceId, changes.default_voice_id);
    if (changes.default_model) checkDefaultModel(context, changes.default_model);
    if (changes.fallback_models) checkFallbackModels(context, changes.fallback_models);
    const row = await audited(context, async (trx) => {
      if (changes.name !== undefined) await lockNames(trx, workspaceId);
      const existing = await lockOwned(
        trx,
        projectsOf(trx, workspaceId).where('id', '=', request.path.id),
        'project',
        request.path.id,
      );
      if (changes.name !== undefined) await refuseTakenName(trx, workspaceId, changes.name, existing.id);
      const updated = {
        ...existing,
        ...(changes.name !== undefined ? { name: changes.name, name_key: projectNameKey(changes.name) } : {}),
        ...(changes.description !== undefined ? { description: changes.description } : {}),
        ...(changes.default_voice_id !== undefined ? { default_voice_id: changes.default_voice_id } : {}),
        ...(changes.default_model !== undefined ? { default_model: changes.default_model } : {}),
        ...(changes.fallback_models !== undefined ? { fallback_models: JSON.stringify(changes.fallback_models) } : {}),
        ...(changes.metadata !== undefined ? { metadata: JSON.stringify(changes.metadata) } : {}),
        updated_at: iso(context.now),
      };
      await trx.updateTable('projects').set(updated).where('id', '=', existing.id).execute();
      return [
        updated,
        {
          action: 'project.updated',
          target: { type: 'project', id: existing.id, display_name: updated.name },
          details: { changed: Object.keys(changes).sort().join(','), name: updated.name },
        },
      ];
    });
    return { status: 200, contentType: 'application/json', body: presentProject(row) };
  },

  async deleteProject(request, context) {
    await audited(context, async (trx) => {
      const existing = await lockOwned(
        trx,
        projectsOf(trx, context.caller.workspace.id).where('id', '=', request.path.id),
        'project',
        request.path.id,
      );
      await trx.deleteFrom('projects').where('id', '=', existing.id).execute();
      return [
        undefined,
        {
          action: 'project.deleted',
          target: { type: 'project', id: existing.id, display_name: existing.name },
          details: { name: existing.name },
        },
      ];
    });
    return { status: 204 };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  'listProjects' | 'createProject' | 'getProject' | 'updateProject' | 'deleteProject'
>;
