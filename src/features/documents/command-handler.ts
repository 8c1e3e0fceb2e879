// POST /v1/documents/{id}/commands: runs an AI command (commands.ts) through the engine, with the document's or
// the request's voice and the workspace's output policy, and saves the result as a new version (source `command`)
// that connected editors receive at once. A policy violation withholds the output and saves nothing.
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest } from '../../platform/audit.ts';
import type { RequestContext } from '../../platform/context.ts';
import { Problem } from '../../platform/problems.ts';
import { engineOf } from '../engine/engine.ts';
import { knowledgeBasesOf } from '../knowledge/knowledge-bases.ts';
import { searchKnowledge } from '../knowledge/search.ts';
import { projectsOf } from '../projects/projects.ts';
import { readyVoice } from '../voices/voices.ts';
import { runCommand, selectionOf, type CitationSource } from './commands.ts';
import { checkBaseVersion, loadDocument, lockDocument } from './documents.ts';
import { Realtime, realtimeOf } from './realtime.ts';
import { fetchCitationSources } from './sources.ts';
import { presentVersionSummary, saveVersion } from './store.ts';

type Schemas = components['schemas'];

/** The most a document may hold (the contract's `content` maxLength, in code points). */
const MAX_CHARACTERS = 1_000_000;

/** The default model of a command: the project's, else gpt-4o-mini where OpenAI is configured, else the sandbox's. */
function defaultModel(context: RequestContext, projectModel: string | null | undefined): string {
  if (projectModel) return projectModel;
  const engine = engineOf(context.platform);
  const openai = engine.catalogue.get('gpt-4o-mini');
  return openai && engine.catalogue.available(openai) ? 'gpt-4o-mini' : 'sandbox-writer';
}

/**
 * The sources a `cite` may use, numbered in the request's order: a fetched https page is one source; a knowledge base
 * of the workspace gives its passages that best match the text being cited (up to three, each a source of its own).
 */
async function citationSources(context: RequestContext, sources: string[], text: string): Promise<CitationSource[]> {
  const db = context.platform.db;
  const urls = sources.filter((source) => !source.startsWith('kb_'));
  const fetched = new Map((await fetchCitationSources(urls, { allowPrivateNetworks: context.platform.config.webhooksAllowLoopback })).map((source) => [source.url, source]));
  const numbered: CitationSource[] = [];
  for (const [index, source] of sources.entries()) {
    if (!source.startsWith('kb_')) {
      numbered.push({ ...fetched.get(source)!, n: numbered.length + 1 });
      continue;
    }
    const base = await knowledgeBasesOf(db, context.caller.workspace.id).where('id', '=', source).executeTakeFirst();
    if (!base) throw new Problem('not_found', `No knowledge base ${source} in this workspace.`, { errors: [{ pointer: `/sources/${index}`, detail: 'is not a knowledge base of this workspace' }] });
    for (const hit of (await searchKnowledge(db, context.platform.config.providers, base, text, { topK: 3, minScore: 0 }, context.signal)).hits) {
      numbered.push({ n: numbered.length + 1, url: hit.url, title: hit.title ?? base.name, excerpt: hit.text.slice(0, 1500), knowledgeBaseId: base.id });
    }
  }
  return numbered;
}

export const commandHandlers = {
  async runDocumentCommand(request, context) {
    const command = request.body;
    const workspaceId = context.caller.workspace.id;
    const db = context.platform.db;
    const { row, current } = await loadDocument(context, request.path.id);
    checkBaseVersion(row, command.base_version_id);
    const project = row.project_id ? await projectsOf(db, workspaceId).where('id', '=', row.project_id).executeTakeFirst() : undefined;
    const model = command.model ?? defaultModel(context, project?.default_model);
    const voiceId = command.voice_id !== undefined ? command.voice_id : row.voice_id;
    if (voiceId) await readyVoice(db, workspaceId, voiceId, command.voice_id !== undefined ? '/voice_id' : undefined);
    const range = selectionOf(current.content, command.selection);
    const sources = command.command === 'cite' ? await citationSources(context, command.sources, current.content.slice(range.start, range.end)) : undefined;

    const engine = engineOf(context.platform);
    const usage = { prompt: 0, completion: 0, cost: 0, ms: 0 };
    let modelId = model;
    const outcome = await runCommand(
      command,
      { title: row.title, content: current.content },
      async (messages) => {
        const started = performance.now();
        const result = await engine.generate({
          workspaceId,
          apiKeyId: context.caller.apiKey.id,
          feature: 'documents',
          model,
          messages,
          voiceId,
          projectId: row.project_id,
          userId: context.caller.userId,
          origin: byRequest(context),
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

    if (outcome.content.length > MAX_CHARACTERS && [...outcome.content].length > MAX_CHARACTERS) {
      throw new Problem('validation_failed', `The command's result would make the document longer than ${MAX_CHARACTERS.toLocaleString('en')} characters; run it on a selection.`, {
        errors: [{ pointer: '/selection', detail: 'makes the document too long' }],
      });
    }
    const version = await realtimeOf(context.platform).withLiveDocument(row.id, (live) =>
      db.transaction().execute(async (trx) => {
        const locked = await lockDocument(trx, context, row.id);
        // The command worked on `current`; a change meanwhile, through the API or by an editor (saved or still only
        // in the live document), would be overwritten.
        if (locked.current_version_id !== current.id || Realtime.hasLiveEdits(locked, live)) {
          throw new Problem('version_conflict', `The document changed while the command ran (its current version is ${locked.current_version_id}); run it again on the new version.`);
        }
        const source = { kind: 'command' as const, apiKeyId: context.caller.apiKey.id, userId: context.caller.userId, command: command.command };
        return (await saveVersion(trx, locked, outcome.content, source, context.now, live.apply(outcome.content))).version;
      }),
    );
    const body: Schemas['DocumentCommandResult'] = {
      object: 'document.command_result',
      document_id: row.id,
      command: command.command,
      model: modelId,
      voice_id: voiceId,
      version: presentVersionSummary(version),
      output: outcome.output,
      output_range: outcome.outputRange,
      usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion },
      cost_usd: Math.round(usage.cost * 1e9) / 1e9,
      duration_ms: Math.round(usage.ms),
    };
    return { status: 201, contentType: 'application/json', headers: { Location: `/v1/documents/${row.id}/versions/${version.id}` }, body };
  },
} satisfies Pick<Handlers<RequestContext>, 'runDocumentCommand'>;
