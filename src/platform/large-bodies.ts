// A workspace's requests with large bodies take turns. Reading, parsing and checking a body of megabytes runs on the
// event loop that serves every workspace, and a workspace that sends many at once would have them read back to back
// while the others' requests wait. Per server process, one large body of a workspace is read and checked at a time
// (from the start of its reading to the start of its handler: not the model call or the answer, which wait on
// others); the next ones of that workspace wait their turn with their bodies unread, at most LARGE_BODIES_WAITING of
// them, and beyond that the answer is `429 workspace_busy` with Retry-After. Other workspaces' requests, and this
// workspace's small ones, never wait here.
//
// One at a time is not yet a fair share: a workspace that always has its next large body ready would have them read
// one after the other, the event loop busy with its bodies nearly all the time. While another workspace is being
// served (one of its requests came in the last SHARING_WINDOW_MS), the next turn of the workspace begins only after a
// pause as long as the event loop was busy during its last turn: its large bodies then take at most about half of the
// loop, and the other workspaces' requests find it free in between. Alone on the server, a workspace's turns follow
// each other at once.
import { type EventLoopUtilization, performance } from 'node:perf_hooks';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { locals } from './context.ts';
import { Problem } from './problems.ts';

/** From this many bytes (its Content-Length, or a body of unknown length) a request's body is large. */
export const LARGE_BODY_BYTES = 64 * 1024;

/** How many large requests of a workspace wait their turn on a process before more are refused. */
export const LARGE_BODIES_WAITING = 32;

/** What a refusal asks the client to wait, in seconds. */
const RETRY_AFTER_SECONDS = 1;

/** How recently another workspace's request must have come for a workspace's turns to be paced. */
export const SHARING_WINDOW_MS = 1000;

/** The longest pause between two turns of a workspace. */
const MAX_PAUSE_MS = 1000;

interface Turns {
  /** The request whose large body is being read and checked; none during the pause after a turn. */
  holder: Response | undefined;
  /** The event loop's utilization when the holder's turn began. */
  began: EventLoopUtilization;
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
export function largeBodyTurns({
  wait = (ms: number, resume: () => void) => void setTimeout(resume, ms).unref(),
}: {
  /** Runs `resume` after `ms` milliseconds: the pause before a workspace's next turn. */
  wait?: (ms: number, resume: () => void) => void;
} = {}): { take: RequestHandler; give: RequestHandler } {
  const turns = new Map<string, Turns>();
  // The two workspaces whose requests came last, the latest first, with when: enough to tell whether a workspace
  // other than a given one was served lately.
  const recent: Array<{ workspaceId: string; at: number }> = [];
  const seen = (workspaceId: string) => {
    const at = performance.now();
    if (recent[0]?.workspaceId === workspaceId) recent[0].at = at;
    else recent.splice(0, recent.length, { workspaceId, at }, ...recent.slice(0, 1));
  };
  const othersServed = (workspaceId: string) => {
    const other = recent[0]?.workspaceId === workspaceId ? recent[1] : recent[0];
    return other !== undefined && performance.now() - other.at < SHARING_WINDOW_MS;
  };

  /** Gives the workspace's turn to the first request waiting, or ends its turns when none is. */
  const handOn = (workspaceId: string, entry: Turns) => {
    const [next] = entry.waiting;
    if (!next) {
      turns.delete(workspaceId);
      return;
    }
    entry.waiting.delete(next[0]);
    entry.holder = next[0];
    entry.began = performance.eventLoopUtilization();
    next[1]();
  };

  const end = (workspaceId: string, res: Response) => {
    const entry = turns.get(workspaceId);
    if (!entry) return;
    if (entry.waiting.delete(res) || entry.holder !== res) return;
    entry.holder = undefined;
    const busy = performance.eventLoopUtilization(entry.began).active;
    const pause = othersServed(workspaceId) ? Math.min(busy, MAX_PAUSE_MS) : 0;
    if (pause < 1) handOn(workspaceId, entry);
    else wait(pause, () => handOn(workspaceId, entry));
  };

  const take = (req: Request, res: Response, next: NextFunction) => {
    const workspaceId = locals(res).caller?.workspace.id;
    if (!workspaceId) return next();
    seen(workspaceId);
    if (!isLarge(req)) return next();
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
      turns.set(workspaceId, { holder: res, began: performance.eventLoopUtilization(), waiting: new Map() });
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
