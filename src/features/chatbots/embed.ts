// The widget's public operations (GET /v1/embed/config, POST /v1/embed/messages, POST /v1/embed/csat), authenticated
// with a chatbot's embed key (`X-Embed-Key`), and the server-side messages (POST /v1/chatbots/{id}/messages).
//
// Origins. The key is public, so it is the browser's Origin that decides where the widget works:
//   - a page of one of the chatbot's `allowed_origins` may call these operations itself (CORS: the launcher reads
//     the configuration this way, so a page elsewhere gets a clear 403 in its console);
//   - the widget's own frame is served by us (widget/pages.ts) with `frame-ancestors` built from the same list, so
//     browsers show it only inside an allowed page; its calls come from our own origin and are accepted;
//   - anything else, a request without an Origin included, is `403 origin_not_allowed`: a server has the API key
//     and POST /v1/chatbots/{id}/messages.
// Limits: 120 requests a minute per client IP and 3,000 per embed key on every operation, and 30 messages and
// ratings a minute per visitor.
import type { Request, Response } from 'express';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers, ServerSentEvent } from '../../../generated/operations.ts';
import { byRequest, bySystem } from '../../platform/audit.ts';
import { locals, type Platform, type RequestContext } from '../../platform/context.ts';
import type { Authenticator } from '../../platform/feature.ts';
import { clientIp } from '../../platform/logging.ts';
import { Problem } from '../../platform/problems.ts';
import { consumeBudget } from '../../platform/rate-limit.ts';
import { forUpdate } from '../../storage/locks.ts';
import { type ChatbotRow, loadChatbot, previousKeyActive, regionBaseUrl } from './chatbots.ts';
import { presentMessage, rate } from './conversations.ts';
import { prepareReply, type Reply } from './replies.ts';

type Schemas = components['schemas'];

export const EMBED_KEY = /^emb_[A-Za-z0-9]{32}$/;
const LIMITS = {
  ip: { points: 120, duration: 60 },
  key: { points: 3000, duration: 60 },
  visitor: { points: 30, duration: 60 },
};

/** The chatbot an embed key opens at `now` (its current key, or the previous one during its grace period). */
export async function chatbotByEmbedKey(platform: Platform, key: string, now: Date): Promise<ChatbotRow | null> {
  if (!EMBED_KEY.test(key)) return null;
  const row = await platform.db
    .selectFrom('chatbots')
    .selectAll()
    .where((eb) => eb.or([eb('embed_key', '=', key), eb('previous_embed_key', '=', key)]))
    .executeTakeFirst();
  if (!row || (row.embed_key !== key && !previousKeyActive(row, now))) return null;
  return row;
}

/** Whether `origin` is one of `allowed` (`https://*.example.com` covers every subdomain of example.com, not itself). */
export function originAllowed(origin: string, allowed: readonly string[]): boolean {
  const normalized = origin.toLowerCase();
  return allowed.some((entry) => {
    if (!entry.includes('*.')) return entry === normalized;
    const [scheme, rest] = entry.split('://*.') as [string, string];
    const prefix = `${scheme}://`;
    if (!normalized.startsWith(prefix)) return false;
    const host = normalized.slice(prefix.length);
    return host.endsWith(`.${rest}`) && host.length > rest.length + 1;
  });
}

/** Whether the request comes from our own origin: the widget's frame. */
function fromOwnOrigin(req: Request, platform: Platform, origin: string | undefined): boolean {
  if (origin === undefined) return req.get('sec-fetch-site') === 'same-origin';
  const own = new Set([new URL(platform.config.publicBaseUrl).origin, `${req.protocol}://${req.get('host')}`]);
  return own.has(origin.toLowerCase());
}

function limitHeaders(res: Response, headers: Record<string, string>): void {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
}

export const embedKeyAuthenticator: Authenticator = async (req, res, platform) => {
  const key = req.get('x-embed-key');
  if (!key) throw new Problem('invalid_embed_key', "Send the chatbot's embed key in the X-Embed-Key header.");
  const state = locals(res);
  const store = platform.rateLimitStore;
  limitHeaders(
    res,
    await consumeBudget(store.limiterFor('embed-ip', LIMITS.ip), clientIp(req), {
      points: LIMITS.ip.points,
      window: LIMITS.ip.duration,
      who: 'from this address',
    }),
  );
  const chatbot = await chatbotByEmbedKey(platform, key, state.receivedAt);
  if (!chatbot)
    throw new Problem(
      'invalid_embed_key',
      'This embed key opens no chatbot: it was rotated (and its grace period is over) or its chatbot was deleted. Copy the current snippet from GET /v1/chatbots/{id}.',
    );
  state.workspaceId = chatbot.workspace_id;
  const origin = req.get('origin');
  const allowed = JSON.parse(chatbot.allowed_origins) as string[];
  if (!fromOwnOrigin(req, platform, origin) && !(origin !== undefined && originAllowed(origin, allowed))) {
    const where =
      origin === undefined ? 'a request without an Origin header (not from a browser page)' : `the origin ${origin}`;
    throw new Problem(
      'origin_not_allowed',
      `This chatbot's widget does not answer ${where}. Add the site to the chatbot's allowed_origins (PATCH /v1/chatbots/${chatbot.id}); from a server, use POST /v1/chatbots/${chatbot.id}/messages with an API key.`,
    );
  }
  const workspace = await platform.db
    .selectFrom('workspaces')
    .selectAll()
    .where('id', '=', chatbot.workspace_id)
    .executeTakeFirstOrThrow();
  if (workspace.region !== platform.config.region) {
    throw new Problem('wrong_region', `Workspace ${workspace.id} is homed in ${workspace.region}.`, {
      extra: { region: workspace.region, base_url: platform.config.regionBaseUrls[workspace.region] },
    });
  }
  limitHeaders(
    res,
    await consumeBudget(store.limiterFor('embed-key', LIMITS.key), chatbot.id, {
      points: LIMITS.key.points,
      window: LIMITS.key.duration,
      who: "with this chatbot's embed key",
    }),
  );
  if (!chatbot.enabled && state.operationId !== 'getEmbedConfig') {
    throw new Problem('chatbot_disabled', 'This chat is offline: its chatbot is disabled.');
  }
  state.embed = { workspace, chatbotId: chatbot.id };
};

async function embedChatbot(context: RequestContext): Promise<ChatbotRow> {
  const row = await context.platform.db
    .selectFrom('chatbots')
    .selectAll()
    .where('id', '=', context.embed.chatbotId)
    .executeTakeFirst();
  if (!row) throw new Problem('invalid_embed_key', 'The chatbot of this embed key was deleted.');
  return row;
}

/** 30 messages and ratings a minute per visitor of a chatbot. */
function consumeVisitorBudget(context: RequestContext, visitorId: string): Promise<Record<string, string>> {
  return consumeBudget(
    context.platform.rateLimitStore.limiterFor('embed-visitor', LIMITS.visitor),
    `${context.embed.chatbotId}:${visitorId}`,
    {
      points: LIMITS.visitor.points,
      window: LIMITS.visitor.duration,
      who: 'from this visitor',
    },
  );
}

function embedReply(reply: Reply, showSources: boolean): Schemas['EmbedReply'] {
  const message = presentMessage(reply.message);
  return {
    object: 'embed.reply',
    conversation_id: reply.conversation.id,
    conversation_created: reply.created,
    message: {
      id: message.id,
      role: 'assistant',
      content: message.content,
      citations: showSources
        ? message.citations.map((c) => ({
            title: c.title,
            url: c.url,
            excerpt: c.excerpt.length > 300 ? `${c.excerpt.slice(0, 299)}…` : c.excerpt,
          }))
        : [],
      created_at: message.created_at,
    },
    escalated: reply.escalated,
  };
}

/**
 * A visitor of the widget is a stranger to the workspace: a spend limit's refusal tells them the assistant cannot
 * answer now, without the limit, the project, the amounts or when it resets (the workspace's own 402 has them).
 */
async function withoutSpendDetails<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof Problem && error.code === 'spend_limit_reached')
      throw new Problem('spend_limit_reached', 'The assistant is unavailable right now; please try again later.');
    throw error;
  }
}

export const embedHandlers = {
  async getEmbedConfig(_request, context) {
    const chatbot = await embedChatbot(context);
    const body: Schemas['EmbedConfig'] = {
      object: 'embed.config',
      chatbot_id: chatbot.id,
      name: chatbot.name,
      greeting: chatbot.greeting,
      enabled: Boolean(chatbot.enabled),
      widget: JSON.parse(chatbot.widget) as Schemas['ChatbotWidget'],
    };
    return { status: 200, contentType: 'application/json', headers: { 'Cache-Control': 'no-store' }, body };
  },

  async sendEmbedMessage(request, context) {
    const input = request.body;
    const limit = await consumeVisitorBudget(context, input.visitor_id);
    const chatbot = await embedChatbot(context);
    const workspace = context.embed.workspace;
    const prepared = await withoutSpendDetails(
      prepareReply({
        platform: context.platform,
        workspace,
        chatbot,
        channel: 'embed',
        content: input.content,
        conversationId: input.conversation_id,
        visitor: {
          id: input.visitor_id,
          externalId: null,
          name: null,
          email: null,
          locale: input.locale ?? null,
          metadata: {},
        },
        pageUrl: input.page_url ?? null,
        apiKeyId: null,
        userId: null,
        origin: bySystem(workspace.id, 'chatbot_widget', context.now),
        baseUrl: regionBaseUrl(context.platform, workspace),
        signal: context.signal,
        now: context.now,
      }),
    );
    const showSources = (JSON.parse(chatbot.widget) as Schemas['ChatbotWidget']).show_sources;
    if (!input.stream) {
      for await (const _ of prepared.text);
      return {
        status: 200,
        contentType: 'application/json',
        headers: limit,
        body: embedReply(await prepared.finish(), showSources),
      };
    }
    const events = (async function* (): AsyncGenerator<ServerSentEvent<Schemas['EmbedStreamEvent']>> {
      for await (const piece of prepared.text) yield { event: 'delta', data: { content: piece } };
      yield { event: 'reply', data: embedReply(await prepared.finish(), showSources) };
    })();
    return { status: 200, contentType: 'text/event-stream', headers: limit, events };
  },

  async recordEmbedCsat(request, context) {
    const input = request.body;
    const limit = await consumeVisitorBudget(context, input.visitor_id);
    const row = await context.platform.db.transaction().execute(async (trx) => {
      const conversation = await forUpdate(
        trx
          .selectFrom('chatbot_conversations')
          .selectAll()
          .where('id', '=', input.conversation_id)
          .where('chatbot_id', '=', context.embed.chatbotId),
        trx,
      ).executeTakeFirst();
      // Only the visitor who started it rates a conversation; anyone else learns nothing about it.
      if (conversation?.channel !== 'embed' || conversation.visitor_id !== input.visitor_id) {
        throw new Problem('not_found', `No conversation ${input.conversation_id} of this visitor.`, {
          errors: [{ pointer: '/conversation_id', detail: 'is not a conversation of this visitor' }],
        });
      }
      return rate(
        trx,
        conversation,
        { score: input.score, comment: input.comment ?? null, source: 'embed' },
        context.now,
      );
    });
    const body: Schemas['EmbedCsat'] = {
      object: 'embed.csat',
      conversation_id: row.id,
      score: row.csat_score!,
      comment: row.csat_comment,
      rated_at: row.rated_at!,
    };
    return { status: 200, contentType: 'application/json', headers: limit, body };
  },

  async sendChatbotMessage(request, context) {
    const input = request.body;
    if (input.conversation_id && input.visitor) {
      throw new Problem(
        'validation_failed',
        'visitor describes who starts a new conversation; leave it out when continuing one.',
        { errors: [{ pointer: '/visitor', detail: 'must be omitted with conversation_id' }] },
      );
    }
    const chatbot = await loadChatbot(context.platform.db, context, request.path.id);
    const visitor = input.visitor ?? {};
    const prepared = await prepareReply({
      platform: context.platform,
      workspace: context.caller.workspace,
      chatbot,
      channel: 'api',
      content: input.content,
      conversationId: input.conversation_id,
      visitor: {
        id: null,
        externalId: visitor.external_id ?? null,
        name: visitor.name ?? null,
        email: visitor.email ?? null,
        locale: visitor.locale ?? null,
        metadata: visitor.metadata ?? {},
      },
      pageUrl: null,
      apiKeyId: context.caller.apiKey.id,
      userId: context.caller.userId,
      origin: byRequest(context),
      baseUrl: regionBaseUrl(context.platform, context.caller.workspace),
      signal: context.signal,
      now: context.now,
    });
    for await (const _ of prepared.text);
    const reply = await prepared.finish();
    const body: Schemas['ChatbotReply'] = {
      object: 'chatbot.reply',
      conversation_id: reply.conversation.id,
      conversation_created: reply.created,
      visitor_message_id: reply.visitorMessage.id,
      message: presentMessage(reply.message),
      intent: reply.intent,
      confidence: reply.confidence,
      escalated: reply.escalated,
      escalation_reason: reply.escalationReason,
      model: reply.model,
      usage: {
        prompt_tokens: reply.usage.inputTokens,
        completion_tokens: reply.usage.outputTokens,
        total_tokens: reply.usage.inputTokens + reply.usage.outputTokens,
      },
      cost_usd: Math.round(reply.costUsd * 1e9) / 1e9,
      latency_ms: reply.latencyMs,
    };
    return { status: 200, contentType: 'application/json', body };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  'getEmbedConfig' | 'sendEmbedMessage' | 'recordEmbedCsat' | 'sendChatbotMessage'
>;
