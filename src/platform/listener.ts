// The HTTP port of a server, bound before anything slow: a port that is taken is a configuration error at once, not
// after the modules, the migrations and the warm-up. Until the app is handed over (`serve`), the process answers
// `GET /healthz` (alive) and `GET /readyz` (503: starting) itself and holds every other request, which the app then
// serves in the order it came; an upgrade request is refused with 503. Kept light (no Express, no database), so that
// src/main.ts can bind the port before it loads the server's modules.
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { type Config, ConfigError } from '../config.ts';
import { newId } from './ids.ts';
import { Problem, problemBody } from './problems.ts';

type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** The name of the readiness check that fails while the server starts (ServiceReadinessCheck). */
export const STARTUP_CHECK = 'startup';

export class Listener {
  readonly server: Server;
  /** The address it listens on, as a client on this machine reaches it (`http://127.0.0.1:8080`). */
  readonly url: string;
  readonly #started = performance.now();
  #app: RequestListener | undefined;
  #upgrade: UpgradeListener | undefined;
  #held: Array<[IncomingMessage, ServerResponse]> = [];

  constructor(server: Server, url: string) {
    this.server = server;
    this.url = url;
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (this.#app) return this.#app(req, res);
      if (req.method === 'GET' && req.url === '/healthz') return answer(res, 200, 'application/json', { status: 'ok' });
      if (req.method === 'GET' && req.url === '/readyz') return answer(res, 503, ...this.#notReady());
      this.#held.push([req, res]);
    });
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (this.#upgrade) return this.#upgrade(req, socket, head);
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    });
  }

  /** Hands the server to the app: the requests held meanwhile first, then every request. */
  serve(app: RequestListener, upgrade: UpgradeListener): void {
    this.#app = app;
    this.#upgrade = upgrade;
    for (const [req, res] of this.#held.splice(0)) if (!req.destroyed) app(req, res);
  }

  #notReady(): ['application/problem+json', object] {
    const problem = new Problem('service_unavailable', 'The server is still starting; it cannot serve requests yet.');
    const check = {
      name: STARTUP_CHECK,
      status: 'failing',
      duration_ms: 0,
      detail: `starting for ${Math.round(performance.now() - this.#started)} ms`,
    };
    return ['application/problem+json', { ...problemBody(problem, '/readyz', newId('req')), checks: [check] }];
  }
}

function answer(res: ServerResponse, status: number, contentType: string, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': `${contentType}; charset=utf-8`,
    'Content-Length': Buffer.byteLength(text),
    'X-Request-Id': (body as { request_id?: string }).request_id ?? newId('req'),
    'Access-Control-Allow-Origin': '*',
  });
  res.end(text);
}

/** Binds the configured port and host; a port that is taken, forbidden or on no address of this machine is a
 *  ConfigError (one line, exit 1). With `reusePort`, other processes that ask the same share the port. */
export async function listen(config: Pick<Config, 'port' | 'host'> & { reusePort?: boolean }): Promise<Listener> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: config.port, host: config.host, reusePort: config.reusePort ?? false }, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((error: unknown) => {
    throw listenError(error, config) ?? error;
  });
  const { port } = server.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  return new Listener(server, `http://${host.includes(':') ? `[${host}]` : host}:${port}`);
}

function listenError(
  error: unknown,
  { port, host, reusePort }: Pick<Config, 'port' | 'host'> & { reusePort?: boolean },
): ConfigError | undefined {
  // libuv refuses the option where the system cannot spread connections among sockets (macOS, Windows).
  if (reusePort && (error as { code?: unknown }).code === 'ENOTSUP')
    return new ConfigError(`REUSE_PORT is not supported on this system (${process.platform})`);
  switch ((error as { code?: unknown }).code) {
    case 'EADDRINUSE':
      return new ConfigError(`port ${port} is already in use`);
    case 'EACCES':
      return new ConfigError(`port ${port} needs privileges this process does not have (PORT)`);
    case 'EADDRNOTAVAIL':
      return new ConfigError(`HOST ${host} is not an address of this machine`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new ConfigError(`HOST ${host} does not resolve to an address`);
    default:
      return undefined;
  }
}
