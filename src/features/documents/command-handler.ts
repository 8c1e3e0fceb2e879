// POST /v1/documents/{id}/commands: runs an AI command (commands.ts) through the engine, with the document's or
// the request's voice and the workspace's output policy, and saves the result as a new version (source `command`)
// that connected editors receive at once. A policy violation withholds the output and saves nothing.

import type { Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import { type AuditOrigin, byRequest } from '../../platform/audit.ts';
import { characterCount } from '../../platform/characters.ts';
import type { Platform, RequestContext } from '../../platform/context.ts';
import { Problem } from '../../platform/problems.ts';
import type { Database } from '../../storage/schema.ts';
import { type GenerationRequest, sandbox } from '../engine/index.ts';
import { knowledgeBasesOf, searchKnowledge } from '../knowledge/index.ts';
import { projectsOf } from '../projects/index.ts';
import { readyVoice } from '../voices/index.ts';
import { type CitationSource, runCommand, selectionOf } from './commands.ts';
import { checkBaseVersion, loadDocument, lockDocument } from './documents.ts';
import { Realtime } from './realtime.ts';
import { fetchCitationSources } from './sources.ts';
import { presentVersionSummary, saveVersion, type VersionRow } from './store.ts';

type Schemas = components['schemas'];

/** Who runs a command, and where: a request (the API) or a workflow step on behalf of the key that started its run. */
export interface CommandActor {
  platform: Platform;
  workspaceId: string;
  apiKeyId: string;
  userId: string | null;
  origin: AuditOrigin;
  /** What the usage is counted as: `documents` for the API, `workflows` for a step. */
  feature: GenerationRequest['feature'];
  /**
   * The project the command's calls are billed to, whose spend limits admit them, when it runs for one (a workflow
   * run's); without one, the document's project.
   */
  projectId?: string | null;
  signal: AbortSignal;
  now: Date;
}

export interface CommandResult {
  documentId: string;
  model: string;
  voiceId: string | null;
  /** The command's own text (what it wrote, or the summary), and where it is in the new content. */
  output: string;
  outputRange: { start: number; end: number };
  usage: { prompt: number; completion: number };
  costUsd: number;
  durationMs: number;
  /** The new version; null when the result was not applied. */
  version: VersionRow | null;
}

/** The most a document may hold (the contract's `content` maxLength, in code points). */
const MAX_CHARACTERS = 1_000_000;

/** The default model of a command: the project's, else gpt-4o-mini where OpenAI is configured, else the sandbox's. */
function defaultModel(platform: Platform, projectModel: string | null | undefined): string {
  if (projectModel) return projectModel;
  const engine = platform.services.engine;
  const openai = engine.catalogue.get('gpt-4o-mini');
  return openai && engine.catalogue.available(openai) ? 'gpt-4o-mini' : 'sandbox-writer';
}

/**
 * The sources a `cite` may use, numbered in the request's order: a fetched https page is one source; a knowledge base
 * of the workspace gives its passages that best match the text being cited (up to three, each a source of its own).
 */
async function citationSources(
  context: CommandActor,
  projectId: string | null,
  sources: string[],
  text: string,
): Promise<CitationSource[]> {
  const db = context.platform.db;
  const urls = sources.filter((source) => !source.startsWith('kb_'));
  const fetched = new Map(
    (await fetchCitationSources(urls, { allowPrivateNetworks: context.platform.config.webhooksAllowLoopback })).map(
      (source) => [source.url, source],
    ),
  );
  const numbered: CitationSource[] = [];
  for (const [index, source] of sources.entries()) {
    if (!source.startsWith('kb_')) {
      numbered.push({ ...fetched.get(source)!, n: numbered.length + 1 });
      continue;
    }
    const base = await knowledgeBasesOf(db, context.workspaceId).where('id', '=', source).executeTakeFirst();
    if (!base)
      throw new Problem('not_found', `No knowledge base ${source} in this workspace.`, {
        errors: [{ pointer: `/sources/${index}`, detail: 'is not a knowledge base of this workspace' }],
      });
    const billing = {
      workspaceId: context.workspaceId,
      apiKeyId: context.apiKeyId,
      projectId,
      now: context.now,
      signal: context.signal,
    };
    for (const hit of (
      await searchKnowledge(context.platform.services.engine, db, base, text, { topK: 3, minScore: 0 }, billing)
    ).hits) {
      numbered.push({
        n: numbered.length + 1,
        url: hit.url,
        title: hit.title ?? base.name,
        excerpt: hit.text.slice(0, 1500),
        knowledgeBaseId: base.id,
      });
    }
  }
  return numbered;
}

/**
 * Runs a command on a document: the result is saved as a new version (connected editors get it at once) when
 * `apply`, and only returned otherwise. `onSaved` runs in the version's transaction (a workflow step records its
 * success there, so that a crash leaves both or neither).
 */
export async function commandOnDocument(
  context: CommandActor,
  documentId: string,
  command: Schemas['DocumentCommandRequest'],
  options: {
    apply: boolean;
    onSaved?: (trx: Transaction<Database>, result: CommandResult & { version: VersionRow }) => Promise<void>;
  } = { apply: true },
): Promise<CommandResult> {
  const workspaceId = context.workspaceId;
  const db = context.platform.db;
  const scope = { platform: context.platform, caller: { workspace: { id: workspaceId } } };
  const { row, current } = await loadDocument(scope, documentId);
  checkBaseVersion(row, command.base_version_id);
  const project = row.project_id
    ? await projectsOf(db, workspaceId).where('id', '=', row.project_id).executeTakeFirst()
    : undefined;
  const billedProjectId = context.projectId ?? row.project_id;
  const model = command.model ?? defaultModel(context.platform, project?.default_model);
  const voiceId = command.voice_id !== undefined ? command.voice_id : row.voice_id;
  if (voiceId) await readyVoice(db, workspaceId, voiceId, command.voice_id !== undefined ? '/voice_id' : undefined);
  const range = selectionOf(current.content, command.selection);
  const sources =
    command.command === 'cite'
      ? await citationSources(context, billedProjectId, command.sources, current.content.slice(range.start, range.end))
      : undefined;

  const engine = context.platform.services.engine;
  const usage = { prompt: 0, completion: 0, cost: 0, ms: 0 };
  let modelId = model;
  const outcome = await runCommand(
    command,
    { title: row.title, content: current.content },
    async (messages, task) => {
      const started = performance.now();
      const result = await engine.generate({
        // What to write, for the sandbox models (real providers ignore it).
        ...(task ? { providerOptions: { sandbox: { task: sandbox.taskOption(task) } } } : {}),
        workspaceId,
        apiKeyId: context.apiKeyId,
        feature: context.feature,
        model,
        messages,
        voiceId,
        projectId: billedProjectId,
        userId: context.userId,
        origin: context.origin,
        signal: context.signal,
        now: context.now,
      });
      usage.ms += performance.now() - started;
      usage.prompt += result.usage.inputTokens;
      usage.completion += result.usage.outputTokens;
      usage.cost += result.costUsd;
      modelId = result.model.id;
      return result.choices[0]!.text;
    },
    sources,
    context.now,
  );

  if (outcome.content.length > MAX_CHARACTERS && characterCount(outcome.content) > MAX_CHARACTERS) {
    throw new Problem(
      'validation_failed',
      `The command's result would make the document longer than ${MAX_CHARACTERS.toLocaleString('en')} characters; run it on a selection.`,
      {
        errors: [{ pointer: '/selection', detail: 'makes the document too long' }],
      },
    );
  }
  const result = (version: VersionRow | null): CommandResult => ({
    documentId: row.id,
    model: modelId,
    voiceId,
    output: outcome.output,
    outputRange: outcome.outputRange,
    usage: { prompt: usage.prompt, completion: usage.completion },
    costUsd: Math.round(usage.cost * 1e9) / 1e9,
    durationMs: Math.round(usage.ms),
    version,
  });
  if (!options.apply) return result(null);
  const version = await context.platform.services.realtime.withLiveDocument(
    row.id,
    (live) =>
      db.transaction().execute(async (trx) => {
        const locked = await lockDocument(trx, scope, row.id);
        // The command worked on `current`; a change meanwhile, through the API or by an editor (saved or still only
        // in the live document), would be overwritten.
        if (locked.current_version_id !== current.id || (await Realtime.hasLiveEdits(locked, live))) {
          throw new Problem(
            'version_conflict',
            `The document changed while the command ran (its current version is ${locked.current_version_id}); run it again on the new version. The model call ran and is billed ($${Math.round(usage.cost * 1e9) / 1e9}).`,
          );
        }
        const source = {
          kind: 'command' as const,
          apiKeyId: context.apiKeyId,
          userId: context.userId,
          command: command.command,
        };
        const saved = (
          await saveVersion(
            trx,
            locked,
            outcome.content,
            source,
            context.now,
            await live.apply(locked, outcome.content),
          )
        ).version;
        await options.onSaved?.(trx, { ...result(saved), version: saved });
        return saved;
      }),
    outcome.content,
  );
  return result(version);
}

export const commandHandlers = {
  async runDocumentCommand(request, context) {
    const actor: CommandActor = {
      platform: context.platform,
      workspaceId: context.caller.workspace.id,
      apiKeyId: context.caller.apiKey.id,
      userId: context.caller.userId,
      origin: byRequest(context),
      feature: 'documents',
      signal: context.signal,
      now: context.now,
    };
    const result = await commandOnDocument(actor, request.path.id, request.body);
    const version = result.version!;
    const body: Schemas['DocumentCommandResult'] = {
      object: 'document.command_result',
      document_id: result.documentId,
      command: request.body.command,
      model: result.model,
      voice_id: result.voiceId,
      version: presentVersionSummary(version),
      output: result.output,
      output_range: result.outputRange,
      usage: {
        prompt_tokens: result.usage.prompt,
        completion_tokens: result.usage.completion,
        total_tokens: result.usage.prompt + result.usage.completion,
      },
      cost_usd: result.costUsd,
      duration_ms: result.durationMs,
    };
    return {
      status: 201,
      contentType: 'application/json',
      headers: { Location: `/v1/documents/${result.documentId}/versions/${version.id}` },
      body,
    };
  },
} satisfies Pick<Handlers<RequestContext>, 'runDocumentCommand'>;
