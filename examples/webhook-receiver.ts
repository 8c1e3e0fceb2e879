// A complete receiver of content-service webhooks, with node:http only. Run it with
//   WEBHOOK_SECRET=whsec_… PORT=3000 npx node examples/webhook-receiver.ts
// and point an endpoint at http://127.0.0.1:3000/ (https in production). It listens on 127.0.0.1 only; HOST=0.0.0.0
// listens on every interface, for a server on another machine. While you rotate the secret, give it
// both: WEBHOOK_SECRETS=whsec_new…,whsec_old…  Tests run it in-process with startReceiver().
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook, type WebhookEvent, type WebhookVerificationError } from '../generated/webhooks.ts';

export interface ReceiverOptions {
  /** The endpoint's secret; two (new and old) while you rotate it. */
  secrets: string[];
  port?: number;
  /** The address to listen on: 127.0.0.1 unless told otherwise. */
  host?: string;
  /** Your work. It runs after the answer was sent, so it may take as long as it needs. */
  handle?: (event: WebhookEvent) => void | Promise<void>;
}

export interface RunningReceiver {
  url: string;
  /** The address it listens on. */
  address: string;
  /** The events handled, oldest first (the latest 1,000). */
  events: WebhookEvent[];
  close(): Promise<void>;
}

// Events carry the bodies of real changes, a few KB at most; refuse anything far larger before reading it all.
const MAX_BODY_BYTES = 1024 * 1024;
// The same event can arrive more than once (delivery is at-least-once, and replays keep the `id`). In production
// record the ids in your database with a unique key, in the transaction that stores the work; a Set in memory
// forgets them at every restart, and is bounded here so that it cannot grow without end.
const REMEMBERED_IDS = 10_000;

export async function startReceiver(options: ReceiverOptions): Promise<RunningReceiver> {
  const seen = new Set<string>();
  const events: WebhookEvent[] = [];
  const handle =
    options.handle ??
    ((event: WebhookEvent) => console.log(`handled ${event.type} ${event.id}${event.test ? ' (test)' : ''}`));

  async function receive(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const answer = (status: number, body: object, type = 'application/json') => {
      res.writeHead(status, { 'Content-Type': type }).end(JSON.stringify(body));
    };
    if (req.method !== 'POST')
      return answer(405, { title: 'Method Not Allowed', status: 405 }, 'application/problem+json');

    // The signature covers the exact bytes sent: read the raw body, never a re-serialised JSON object.
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES)
        return answer(413, { title: 'Content Too Large', status: 413 }, 'application/problem+json');
      chunks.push(chunk);
    }
    const rawBody = Buffer.concat(chunks);

    let event: WebhookEvent;
    try {
      // Checks the HMAC against every secret, and refuses a timestamp more than 300 s from our clock, so a
      // captured request cannot be played again later.
      event = verifyWebhook(rawBody, req.headers, options.secrets);
    } catch (error) {
      // A 400 is a failed attempt: the service retries it and shows this answer in the delivery's history.
      const { reason, message } = error as WebhookVerificationError;
      return answer(
        400,
        { title: 'Bad Request', status: 400, code: reason, detail: message },
        'application/problem+json',
      );
    }

    if (seen.has(event.id)) return answer(200, { received: true, duplicate: true });
    seen.add(event.id);
    if (seen.size > REMEMBERED_IDS) seen.delete(seen.values().next().value!);

    // Answer at once: an attempt has 15 s, and while it waits, the endpoint's next events wait behind it.
    // In production put the event on a durable queue (or a table) before answering; here it is handled in this
    // process right after the answer, so a crash in between loses it.
    answer(200, { received: true });
    setImmediate(async () => {
      try {
        await handle(event);
        events.push(event);
        if (events.length > 1000) events.shift();
      } catch (error) {
        console.error(`handling ${event.id} failed`, error);
      }
    });
  }

  // A request that breaks off mid-body rejects the read; drop its connection rather than crash the process.
  const server = http.createServer((req, res) => void receive(req, res).catch(() => res.destroy()));

  const host = options.host ?? '127.0.0.1';
  server.listen(options.port ?? 0, host);
  await new Promise((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const { port, address } = server.address() as AddressInfo;
  return {
    url: `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${port}`,
    address,
    events,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // The service keeps connections alive between deliveries; do not wait for it to close them.
        server.closeAllConnections();
      }),
  };
}

/** WEBHOOK_SECRETS (comma-separated, newest first) or WEBHOOK_SECRET. */
export function secretsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.WEBHOOK_SECRETS || env.WEBHOOK_SECRET || '')
    .split(',')
    .map((secret) => secret.trim())
    .filter(Boolean);
}

if (import.meta.main) {
  const secrets = secretsFromEnv();
  if (secrets.length === 0) {
    console.error('Set WEBHOOK_SECRET (or WEBHOOK_SECRETS=new,old while rotating) to the endpoint secret, whsec_….');
    process.exit(1);
  }
  const receiver = await startReceiver({ secrets, port: Number(process.env.PORT ?? 3000), host: process.env.HOST });
  console.log(`listening on ${receiver.url}`);
  process.once('SIGTERM', () => receiver.close().then(() => process.exit(0)));
  process.once('SIGINT', () => receiver.close().then(() => process.exit(0)));
}
