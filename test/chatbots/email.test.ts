// Escalation emails (mode `email`) through a real SMTP server on loopback (smtp-server): an automatic and a manual
// escalation each send the recipients one email with the reason, the visitor's messages and the transcript link.
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually } from '../support/expect.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

interface Mail {
  from: string;
  to: string[];
  data: string;
}

describe('escalation emails', () => {
  let server: TestServer;
  let smtp: SMTPServer;
  const mails: Mail[] = [];
  let bot: string;

  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, session, callback) {
        const parts: Buffer[] = [];
        stream.on('data', (part: Buffer) => parts.push(part));
        stream.on('end', () => {
          mails.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((to) => to.address),
            data: Buffer.concat(parts).toString('utf8'),
          });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    const port = (smtp.server.address() as AddressInfo).port;
    server = await startTestServer({
      env: { SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: 'Shop bot <bot@shop.example>' },
    });
    const created = await server.call('POST', '/v1/chatbots', {
      body: {
        name: 'Shop help',
        model: 'sandbox-writer',
        instructions: 'Help.',
        escalation: {
          mode: 'email',
          email_recipients: ['support@shop.example', 'lead@shop.example'],
          keywords: ['refund'],
          confidence_threshold: 0,
        },
      },
    });
    expect(created.status, created.text).toBe(201);
    bot = created.body.id;
  });
  afterAll(async () => {
    await server?.close();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
  });

  test('an automatic escalation emails the recipients the reason, the messages and the transcript link', async () => {
    const reply = await server.call('POST', `/v1/chatbots/${bot}/messages`, {
      body: {
        content: 'I want a refund for order 1042',
        visitor: { name: 'Jonas Weber', email: 'jonas@mail.example' },
      },
    });
    expect(reply.body.escalated).toBe(true);
    const [mail] = await eventually(
      async () => mails.filter((m) => m.data.includes(reply.body.conversation_id)),
      (found) => found.length === 1,
      15_000,
    );
    expect(mail!.from).toBe('bot@shop.example');
    expect(mail!.to.sort()).toEqual(['lead@shop.example', 'support@shop.example']);
    // Quoted-printable soft line breaks and folded header lines, undone.
    const body = mail!.data.replace(/=\r?\n/g, '').replace(/\r?\n[ \t]+/g, ' ');
    expect(body).toMatch(/Subject: \[Shop help\] Conversation escalated: keyword: refund/);
    expect(body).toContain('I want a refund for order 1042');
    expect(body).toContain('Jonas Weber');
    expect(body).toContain(`/v1/public/transcripts/${reply.body.conversation_id}?expires=`);
  });

  test('a manual escalation emails them too, with its reason and note', async () => {
    const reply = await server.call('POST', `/v1/chatbots/${bot}/messages`, {
      body: { content: 'Do you ship to Norway?' },
    });
    const escalated = await server.call(
      'POST',
      `/v1/chatbots/${bot}/conversations/${reply.body.conversation_id}/escalate`,
      { body: { reason: 'sales_opportunity', note: 'Wants 30 bikes' } },
    );
    expect(escalated.status, escalated.text).toBe(200);
    const [mail] = await eventually(
      async () => mails.filter((m) => m.data.includes(reply.body.conversation_id)),
      (found) => found.length === 1,
      15_000,
    );
    // Header lines fold: unfold them before matching.
    expect(mail!.data.replace(/\r?\n[ \t]+/g, ' ')).toMatch(
      /Subject: \[Shop help\] Conversation escalated: sales_opportunity: Wants 30 bikes/,
    );
  });
});
