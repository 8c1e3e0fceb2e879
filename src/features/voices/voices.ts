// Brand voices: created from a writing sample and trained in the background (training.ts), tuned with slider
// overrides and banned phrases, deleted for good, and used to measure a text (`check`). A new sample starts a new
// training: the voice's `training_id` changes, so a job still running for the old sample writes nothing.
import type { Kysely, Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest, recordAudit } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { enqueueJob } from '../../platform/jobs/runner.ts';
import { audited, lockOwned } from '../../platform/owned.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem, validationFailed } from '../../platform/problems.ts';
import type { Database } from '../../storage/schema.ts';
import { style } from '../engine/index.ts';
import { bannedPhrasesRule, compilePolicy, PolicyRuleError } from '../policy/index.ts';
import { effectiveSliders, presentVoice, type SliderOverrides } from './presenters.ts';

type Schemas = components['schemas'];

export const MIN_SAMPLE_WORDS = 200;
export const MAX_SAMPLE_WORDS = 600;

/** The voices of one workspace: every query of this feature starts here. */
export function voicesOf(db: Kysely<Database> | Transaction<Database>, workspaceId: string) {
  return db.selectFrom('voices').selectAll().where('workspace_id', '=', workspaceId);
}

/** The sample's word count, or the problem of a sample out of bounds. */
function sampleWords(sample: string): number {
  const words = style.countWords(sample);
  const errors = [{ pointer: '/sample_text', detail: `has ${words} word${words === 1 ? '' : 's'}` }];
  if (words < MIN_SAMPLE_WORDS)
    throw new Problem(
      'voice_sample_too_short',
      `The sample has ${words} word${words === 1 ? '' : 's'}; a voice needs at least ${MIN_SAMPLE_WORDS} (about 300 works best).`,
      { errors },
    );
  if (words > MAX_SAMPLE_WORDS)
    throw new Problem(
      'voice_sample_too_long',
      `The sample has ${words} words; a voice takes at most ${MAX_SAMPLE_WORDS} (about 300 works best).`,
      { errors },
    );
  return words;
}

/** Refuses a banned phrase that can match nothing (only spaces, dashes or invisible characters), each with its
 *  pointer: the voice's policy would not compile, and every use of the voice would fail. */
function checkBannedPhrases(phrases: string[] | undefined): void {
  const errors = (phrases ?? []).flatMap((phrase, index) => {
    try {
      compilePolicy([bannedPhrasesRule('new', [phrase])]);
      return [];
    } catch (error) {
      if (!(error instanceof PolicyRuleError)) throw error;
      return [{ pointer: `/banned_phrases/${index}`, detail: error.reason }];
    }
  });
  if (errors.length > 0) throw validationFailed(errors);
}

/** Overrides with the request's merged in: a number sets one, `null` removes it. */
function mergeOverrides(current: SliderOverrides, changes: SliderOverrides | undefined): SliderOverrides {
  const merged: Record<string, number> = { ...(current as Record<string, number>) };
  for (const [name, value] of Object.entries(changes ?? {})) {
    if (value === null) delete merged[name];
    else if (value !== undefined) merged[name] = value;
  }
  return merged;
}

async function startTraining(
  trx: Transaction<Database>,
  workspaceId: string,
  voiceId: string,
  trainingId: string,
  now: Date,
): Promise<void> {
  await enqueueJob(trx, {
    kind: 'voices.train',
    workspaceId,
    payload: { voice_id: voiceId, training_id: trainingId },
    now,
  });
}

/**
 * Checks a small text once against middle sliders (the voices feature's preload, before a server says it is ready):
 * the first check would otherwise wait for the code and the patterns of the measures to be compiled.
 */
export function warmUpCheck(): void {
  const middle = Object.fromEntries(style.SLIDER_NAMES.map((name) => [name, 50])) as style.Sliders;
  style.checkText('We roast our beans every Tuesday. Come and taste the difference!', middle, {
    bannedMatches: 0,
    maxSuggestions: 3,
  });
}

export const voiceHandlers = {
  async listVoices(request, context) {
    const page = pageRequest(request.query);
    let query = voicesOf(context.platform.db, context.caller.workspace.id);
    if (request.query.status !== undefined) query = query.where('status', '=', request.query.status);
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const { body, headers } = toPage(rows, page, (row) => ({ id: row.id }), presentVoice, context.url);
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async createVoice(request, context) {
    const {
      name,
      description = null,
      sample_text,
      slider_overrides,
      banned_phrases = [],
      metadata = {},
    } = request.body;
    const words = sampleWords(sample_text);
    checkBannedPhrases(banned_phrases);
    const workspaceId = context.caller.workspace.id;
    const row = await audited(context, async (trx) => {
      const values = {
        id: newId('voc', context.now),
        workspace_id: workspaceId,
        name,
        description,
        status: 'training' as const,
        failure_reason: null,
        failure_message: null,
        sample_text,
        sample_word_count: words,
        training_id: newId('trn', context.now),
        language: null,
        inferred_sliders: null,
        slider_overrides: JSON.stringify(mergeOverrides({}, slider_overrides)),
        banned_phrases: JSON.stringify(banned_phrases),
        traits: '[]',
        style_summary: null,
        trained_at: null,
        metadata: JSON.stringify(metadata),
        created_at: iso(context.now),
        updated_at: iso(context.now),
      };
      await trx.insertInto('voices').values(values).execute();
      await startTraining(trx, workspaceId, values.id, values.training_id, context.now);
      return [
        values,
        {
          action: 'voice.created',
          target: { type: 'voice', id: values.id, display_name: name },
          details: { name, sample_word_count: words },
        },
      ];
    });
    return {
      status: 202,
      contentType: 'application/json',
      headers: { Location: `/v1/voices/${row.id}` },
      body: presentVoice(row),
    };
  },

  async getVoice(request, context) {
    const row = await voicesOf(context.platform.db, context.caller.workspace.id)
      .where('id', '=', request.path.id)
      .executeTakeFirst();
    if (!row) throw notFound('voice', request.path.id);
    return { status: 200, contentType: 'application/json', body: presentVoice(row) };
  },

  async updateVoice(request, context) {
    const changes = request.body;
    const words = changes.sample_text === undefined ? undefined : sampleWords(changes.sample_text);
    checkBannedPhrases(changes.banned_phrases);
    const workspaceId = context.caller.workspace.id;
    const row = await context.platform.db.transaction().execute(async (trx) => {
      const existing = await lockOwned(
        trx,
        voicesOf(trx, workspaceId).where('id', '=', request.path.id),
        'voice',
        request.path.id,
      );
      const users = await trx.selectFrom('chatbots').select('id').where('voice_id', '=', existing.id).execute();
      if (users.length > 0) {
        throw new Problem(
          'conflict',
          `The voice ${existing.id} is the brand voice of ${users.length === 1 ? 'the chatbot' : 'the chatbots'} ${users.map((u) => u.id).join(', ')}; change their voice_id first.`,
        );
      }
      const retrain = changes.sample_text !== undefined;
      const updated = {
        ...existing,
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(changes.description !== undefined ? { description: changes.description } : {}),
        ...(changes.slider_overrides !== undefined
          ? {
              slider_overrides: JSON.stringify(
                mergeOverrides(JSON.parse(existing.slider_overrides), changes.slider_overrides),
              ),
            }
          : {}),
        ...(changes.banned_phrases !== undefined ? { banned_phrases: JSON.stringify(changes.banned_phrases) } : {}),
        ...(changes.metadata !== undefined ? { metadata: JSON.stringify(changes.metadata) } : {}),
        // What the last successful training learned stays visible while the new sample trains (the contract's
        // `inferred_sliders`, `traits`… describe the last successful training).
        ...(retrain
          ? {
              sample_text: changes.sample_text!,
              sample_word_count: words!,
              status: 'training' as const,
              failure_reason: null,
              failure_message: null,
              training_id: newId('trn', context.now),
            }
          : {}),
        updated_at: iso(context.now),
      };
      await trx.updateTable('voices').set(updated).where('id', '=', existing.id).execute();
      if (retrain) await startTraining(trx, workspaceId, existing.id, updated.training_id, context.now);
      await recordAudit(trx, byRequest(context), {
        action: 'voice.updated',
        target: { type: 'voice', id: existing.id, display_name: updated.name },
        details: { changed: Object.keys(changes).sort().join(','), name: updated.name },
      });
      return { row: updated, retrain };
    });
    const body = presentVoice(row.row);
    return row.retrain
      ? { status: 202, contentType: 'application/json', body }
      : { status: 200, contentType: 'application/json', body };
  },

  async deleteVoice(request, context) {
    await context.platform.db.transaction().execute(async (trx) => {
      const existing = await lockOwned(
        trx,
        voicesOf(trx, context.caller.workspace.id).where('id', '=', request.path.id),
        'voice',
        request.path.id,
      );
      // A training job still queued finds no voice and ends without an event.
      await trx.deleteFrom('voices').where('id', '=', existing.id).execute();
      await recordAudit(trx, byRequest(context), {
        action: 'voice.deleted',
        target: { type: 'voice', id: existing.id, display_name: existing.name },
        details: { name: existing.name },
      });
    });
    return { status: 204 };
  },

  async checkVoice(request, context) {
    const row = await readyVoice(context.platform.db, context.caller.workspace.id, request.path.id);
    const { text, max_suggestions = 10 } = request.body;
    if (style.countWords(text) === 0) throw validationFailed([{ pointer: '/text', detail: 'has no words' }]);
    const banned = JSON.parse(row.banned_phrases) as string[];
    const matches = banned.length === 0 ? [] : compilePolicy([bannedPhrasesRule(row.name, banned)]).scan(text);
    const result = style.checkText(text, effectiveSliders(row)!, {
      bannedMatches: matches.length,
      maxSuggestions: max_suggestions,
    });
    const body: Schemas['VoiceCheckResult'] = {
      object: 'voice_check',
      voice_id: row.id,
      score: result.score,
      rating: result.rating,
      word_count: result.word_count,
      sliders: result.sliders,
      banned_phrases_found: matches.slice(0, 500).map((match) => ({
        phrase: match.phrase ?? match.what,
        matched_text: match.matchedText.slice(0, 400),
        start: match.start,
        end: match.end,
      })),
      suggestions: result.suggestions,
      model: null,
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost_usd: 0 },
    };
    return { status: 200, contentType: 'application/json', body };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  'listVoices' | 'createVoice' | 'getVoice' | 'updateVoice' | 'deleteVoice' | 'checkVoice'
>;

/**
 * A voice of the workspace that can be applied: 404 when there is none, 409 `voice_not_ready` while it trains or
 * after a failed training. `field` names the request's field that gave the id (`/voice_id`), for the problem's pointer.
 */
export async function readyVoice(db: Kysely<Database>, workspaceId: string, voiceId: string, field?: string) {
  const row = await voicesOf(db, workspaceId).where('id', '=', voiceId).executeTakeFirst();
  if (!row) {
    if (!field) throw notFound('voice', voiceId);
    throw new Problem('not_found', `No voice ${voiceId} in this workspace.`, {
      errors: [{ pointer: field, detail: 'is not a voice of this workspace' }],
    });
  }
  if (row.status !== 'ready') {
    const why =
      row.status === 'training'
        ? 'is still training (usually under a minute)'
        : `failed training (${row.failure_reason}): send a new sample_text`;
    throw new Problem('voice_not_ready', `The voice ${voiceId} ${why}; it can be used once its status is ready.`);
  }
  return row;
}
