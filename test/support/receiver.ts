// A webhook receiver on loopback for tests: records every request (raw body, headers, arrival time) and answers as
// the test says (a status per request, a delay, a body, or no answer at all).
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  rawBody: Buffer;
  /** The body parsed as JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: a delivery's event, of any type, which the tests read field by field as its type says
  body: any;
  /** Date.now() when the request's body was complete. */
  receivedAt: number;
}

export interface Answer {
  status: number;
  body?: string | Buffer;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Never answer (the sender's timeout ends the attempt). */
  hang?: boolean;
  /** Close the connection without an answer. */
  destroy?: boolean;
}

export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  /** Decides the answer to each request; the default answers 200. */
  respond: (request: ReceivedRequest) => Answer;
  /** Resolves when `count` requests have arrived (or rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startReceiver(port = 0): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();
  const hanging = new Set<http.ServerResponse>();
  const receiver: Receiver = {
    url: '',
    requests,
    respond: () => ({ status: 200 }),
    async waitFor(count, timeoutMs = 10_000) {
      if (requests.length >= count) return requests.slice();
      return new Promise((resolve, reject) => {
        const check = () => {
          if (requests.length >= count) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(requests.slice());
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`expected ${count} webhook requests within ${timeoutMs} ms, got ${requests.length}`));
        }, timeoutMs);
        waiters.add(check);
      });
    },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks);
      let body: unknown;
      try {
        body = JSON.parse(rawBody.toString('utf8'));
      } catch {
        body = undefined;
      }
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawBody,
        body,
        receivedAt: Date.now(),
      };
      requests.push(received);
      const answer = receiver.respond(received);
      for (const waiter of [...waiters]) waiter();
      if (answer.destroy) return void req.socket.destroy();
      if (answer.hang) return void hanging.add(res);
      const send = () => res.writeHead(answer.status, { 'Content-Type': 'text/plain' }).end(answer.body ?? '');
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}

/** A webhook receiver that holds every request until `release()`. */
export async function holdingReceiver() {
  let arrived!: () => void;
  const arrival = new Promise<void>((resolve) => (arrived = resolve));
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      held.push(res);
      arrived();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrival,
    release: () => {
      held.splice(0).forEach((res) => {
        res.writeHead(200).end('ok');
      });
    },
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
