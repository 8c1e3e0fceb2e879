// The email of an escalation, for chatbots whose escalation `mode` is `email`: a background job (enqueued in the
// transaction that escalates, so it exists exactly when the escalation does, and retried when the mail server
// fails) sends the recipients who, why, the visitor's last messages and the signed transcript link, through SMTP_URL.
// Without SMTP_URL the job logs that no email could be sent; the webhook event goes out all the same.

import { createRequire } from 'node:module';
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { WorkerServices } from '../../platform/feature.ts';
import { enqueueJob, type JobDefinitions, type RunningJob } from '../../platform/jobs/runner.ts';
import type { Database } from '../../storage/schema.ts';
import type { ChatbotConversationsTable } from './schema.ts';

declare module '../../platform/jobs/runner.ts' {
  interface JobPayloads {
    'chatbots.escalation_email': { conversation_id: string; recipients: string[]; transcript_url: string };
  }
}

/** The messages the email quotes, the latest ones. */
const QUOTED_MESSAGES = 10;

export async function enqueueEscalationEmail(
  trx: Transaction<Database>,
  conversation: Selectable<ChatbotConversationsTable>,
  recipients: string[],
  transcriptUrl: string,
  now: Date,
): Promise<void> {
  await enqueueJob(trx, {
    kind: 'chatbots.escalation_email',
    workspaceId: conversation.workspace_id,
    payload: { conversation_id: conversation.id, recipients, transcript_url: transcriptUrl },
    now,
  });
}

async function composeEmail(
  db: Kysely<Database>,
  conversationId: string,
  transcriptUrl: string,
): Promise<{ subject: string; text: string } | null> {
  const conversation = await db
    .selectFrom('chatbot_conversations')
    .selectAll()
    .where('id', '=', conversationId)
    .executeTakeFirst();
  if (!conversation) return null;
  const chatbot = await db
    .selectFrom('chatbots')
    .select(['name'])
    .where('id', '=', conversation.chatbot_id)
    .executeTakeFirst();
  const messages = (
    await db
      .selectFrom('chatbot_messages')
      .select(['role', 'content', 'created_at'])
      .where('conversation_id', '=', conversationId)
      .orderBy('id', 'desc')
      .limit(QUOTED_MESSAGES)
      .execute()
  ).reverse();
  const name = chatbot?.name ?? 'Your chatbot';
  const visitor =
    [
      conversation.visitor_name,
      conversation.visitor_email,
      conversation.visitor_external_id,
      conversation.visitor_locale,
    ]
      .filter(Boolean)
      .join(' · ') || 'anonymous';
  const why = `${conversation.escalation_reason}${conversation.escalation_note ? `: ${conversation.escalation_note}` : ''}`;
  const lines = [
    `${name} handed a conversation over to your team (${conversation.escalation_source}, ${why}).`,
    '',
    `Visitor: ${visitor}`,
    `Intent: ${conversation.intent}`,
    ...(conversation.page_url ? [`Page: ${conversation.page_url}`] : []),
    `Conversation: ${conversation.id} (${conversation.message_count} messages, started ${conversation.started_at})`,
    '',
    ...messages.flatMap((message) => [
      `${message.role === 'visitor' ? 'Visitor' : name} (${message.created_at}):`,
      message.content,
      '',
    ]),
    `The whole conversation, for 7 days: ${transcriptUrl}`,
  ];
  return { subject: `[${name}] Conversation escalated: ${why}`.slice(0, 200), text: lines.join('\n') };
}

export function escalationEmailJobs(services: WorkerServices): JobDefinitions {
  // The mail package is loaded by a process that sends mail (SMTP_URL set) only.
  const nodemailer = () => createRequire(import.meta.url)('nodemailer') as typeof import('nodemailer');
  const transport = services.config.smtpUrl ? nodemailer().createTransport(services.config.smtpUrl) : null;
  return {
    'chatbots.escalation_email': {
      async run(job: RunningJob<{ conversation_id: string; recipients: string[]; transcript_url: string }>) {
        const { conversation_id: conversationId, recipients, transcript_url: transcriptUrl } = job.payload;
        if (!transport) {
          job.logger.warn({ conversation_id: conversationId }, 'an escalation email was not sent: SMTP_URL is not set');
          return;
        }
        const email = await composeEmail(job.db, conversationId, transcriptUrl);
        // A conversation deleted meanwhile (with its chatbot) is not worth an email any more.
        if (!email) return;
        await transport.sendMail({
          from: services.config.mailFrom,
          to: recipients,
          subject: email.subject,
          text: email.text,
        });
      },
    },
  };
}
