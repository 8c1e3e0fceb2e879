// A workspace's requests with large bodies take turns. Reading, parsing and checking a body of megabytes runs on the
// event loop that serves every workspace, and a workspace that sends many at once would have them read back to back
// while the others' requests wait. Per server process, one large body of a workspace is read and checked at a time
// (from the start of its reading to the start of its handler: not the model call or the answer, which wait on
// others); the next ones of that workspace wait their turn with their bodies unread, at most LARGE_BODIES_WAITING of
// them, and beyond that the answer is `429 workspace_busy` with Retry-After. Other workspaces' requests, and this
// workspace's small ones, never wait here.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { locals } from './context.ts';
import { Problem } from './problems.ts';

/** From this many bytes (its Content-Length, or a body of unknown length) a request's body is large. */
export const LARGE_BODY_BYTES = 64 * 1024;

/** How many large requests of a workspace wait their turn on a process before more are refused. */
export const LARGE_BODIES_WAITING = 32;

/** What a refusal asks the client to wait, in seconds. */
const RETRY_AFTER_SECONDS = 1;

interface Turns {
  /** The request whose large body is being read and checked. */
  holder: Response;
  /** The ones waiting, first come first served, each with what lets it go on. */
  waiting: Map<Response, () => void>;
}

function isLarge(req: Request): boolean {
  const length = req.get('content-length');
  if (length !== undefined) return Number(length) >= LARGE_BODY_BYTES;
  return req.get('transfer-encoding') !== undefined;
}

/**
 * The middleware that makes a bearer caller's large request wait its workspace's turn before its body is read, and
 * the one, placed before the handler, that ends the turn. A turn also ends when the response closes first (a refusal
 * on the way, a client gone); a waiting request whose client went away leaves the line.
 */
export function largeBodyTurns(): { take: RequestHandler; give: RequestHandler } {
  const turns = new Map<string, Turns>();

  const end = (workspaceId: string, res: Response) => {
    const entry = turns.get(workspaceId);
    if (!entry) return;
    if (entry.waiting.delete(res) || entry.holder !== res) return;
    const [next] = entry.waiting;
    if (!next) {
      turns.delete(workspaceId);
      return;
    }
    entry.waiting.delete(next[0]);
    entry.holder = next[0];
    next[1]();
  };

  const take = (req: Request, res: Response, next: NextFunction) => {
    const workspaceId = locals(res).caller?.workspace.id;
    if (!workspaceId || !isLarge(req)) return next();
    const entry = turns.get(workspaceId);
    if (entry && entry.waiting.size >= LARGE_BODIES_WAITING) {
      throw new Problem(
        'workspace_busy',
        `This workspace has ${LARGE_BODIES_WAITING} requests with large bodies waiting on this server; retry in ${RETRY_AFTER_SECONDS} second.`,
        { headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) } },
      );
    }
    locals(res).largeBodyTurn = () => end(workspaceId, res);
    res.once('close', () => end(workspaceId, res));
    if (!entry) {
      turns.set(workspaceId, { holder: res, waiting: new Map() });
      return next();
    }
    entry.waiting.set(res, () => next());
  };

  const give = (_req: Request, res: Response, next: NextFunction) => {
    locals(res).largeBodyTurn?.();
    next();
  };

  return { take, give };
}
