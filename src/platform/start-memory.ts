// The memory the start used, given back once the server is idle. V8 sizes its young generation by how much survives
// its collections, and a start is almost nothing but objects that survive (the modules, the validator's document, the
// tokenizer's tables): it grows the young generation to its largest, which V8 keeps. Only a collection that V8 runs to
// reduce memory shrinks it again, and V8 runs one by itself only under memory pressure. So the process asks for one,
// once, when no request has come for a moment after it said it was ready; a busy server, whose young generation is
// in use, is left as it is. The collection holds the event loop while it runs, which is why it waits for a quiet
// moment, and why only `npm start` (src/main.ts) asks for it, not the tests' servers.
import { type IncomingMessage, type Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startedWithFlag } from './v8-flags.ts';

type Collect = () => void;

/**
 * A full collection that reduces memory. The garbage collector's function is not exposed to programs: it is taken
 * from a new context made while V8's flag exposes it, and the flag is set back at once.
 */
export function collectToReduceMemory(): void {
  // Exposed already: to this context (`--expose-gc` at start), or to new ones (the flag set since, by someone else,
  // whose setting is then left as it is).
  let gc =
    (globalThis as { gc?: (options?: object) => void }).gc ??
    (runInNewContext('globalThis.gc') as ((options?: object) => void) | undefined);
  if (!gc) {
    setFlagsFromString('--expose-gc');
    try {
      gc = runInNewContext('gc') as (options?: object) => void;
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
  }
  // `last-resort`: the collection V8 runs to reduce memory (it shrinks the young generation); a `major` one does not.
  // It would also drop the bytecode of every function not running at that moment, which the first calls would then
  // compile again: V8's flag for that is off while it runs.
  // (Set back to V8's default, unless the process was started with a choice of its own.)
  const chosen = startedWithFlag('flush-bytecode');
  if (!chosen) setFlagsFromString('--no-flush-bytecode');
  try {
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  } finally {
    if (!chosen) setFlagsFromString('--flush-bytecode');
  }
}

/**
 * Runs `collect` once after `ready()`, when `server` has had no request in flight, and no new request or upgrade, for
 * `idleMs`; `stop` cancels it. Resolves `done` with whether it ran. Made when the port is bound, so that it counts the
 * requests that came during the start too (held, then served once ready).
 */
export function reclaimStartMemory(
  server: Server,
  { idleMs = 250, collect = collectToReduceMemory }: { idleMs?: number; collect?: Collect } = {},
): { ready(): void; stop(): void; done: Promise<boolean> } {
  let last = performance.now();
  let inFlight = 0;
  const seen = (_req: IncomingMessage, res?: ServerResponse | Duplex) => {
    last = performance.now();
    if (!(res instanceof ServerResponse)) return;
    inFlight += 1;
    res.once('close', () => {
      inFlight -= 1;
      last = performance.now();
    });
  };
  server.on('request', seen);
  server.on('upgrade', seen);
  let timer: NodeJS.Timeout | undefined;
  let finish: (ran: boolean) => void = () => {};
  const done = new Promise<boolean>((resolve) => {
    finish = resolve;
  });
  const check = () => {
    const quiet = performance.now() - last;
    if (inFlight > 0 || quiet < idleMs) {
      timer = setTimeout(check, inFlight > 0 ? idleMs : idleMs - quiet).unref();
      return;
    }
    end(true);
    collect();
  };
  let ended = false;
  const end = (ran: boolean) => {
    ended = true;
    clearTimeout(timer);
    server.off('request', seen);
    server.off('upgrade', seen);
    finish(ran);
  };
  return {
    ready: () => {
      if (!ended && timer === undefined) timer = setTimeout(check, idleMs).unref();
    },
    stop: () => end(false),
    done,
  };
}
