// Answers that are a stream of Server-Sent Events (`text/event-stream`). A handler returns
// `{ status: 200, contentType: 'text/event-stream', events }`, `events` an async iterable of typed events
// (ServerSentEvent in generated/operations.ts), and this file sends them:
//   - The first event is awaited before the headers go out: a failure before it is an ordinary problem document.
//   - Each event is written as it comes (`event:`/`id:` lines, then `data: <JSON>` or `data: <text>`, a blank line),
//     waiting for the socket to drain when the client reads slowly.
//   - Every HEARTBEAT_MS without an event, a comment line (`: keep-alive`) keeps proxies from closing an idle
//     connection; clients ignore it, and a replay does not repeat it.
//   - When the client goes away, `context.signal` aborts (the producer should stop on it), the wait for the next event
//     ends at once, and the iterator is closed (`return()`), so a producer that ignores the signal stops at its next
//     `yield`.
//   - A failure after the first event cannot change the status any more: it is sent as a last event
//     `event: error` whose data is the problem document, and the stream ends.
//   - At the shutdown deadline (drain.ts) the stream ends the same way, with `service_unavailable`; the producer is
//     closed as for a client that left, and shutdown waits for it to settle its work.
import type { Response } from 'express';
import type { ServerSentEvent } from '../../generated/operations.ts';
import { isTransientError } from '../storage/database.ts';
import { locals, type RequestContext } from './context.ts';
import { databaseUnavailable, Problem, problemResponseBody } from './problems.ts';

export const EVENT_STREAM = 'text/event-stream';
export const HEARTBEAT_MS = 15_000;

type Event = ServerSentEvent<unknown>;

export interface OpenedStream {
  iterator: AsyncIterator<Event>;
  first: IteratorResult<Event>;
  /** The next event, or done when the client went away. */
  next(): Promise<IteratorResult<Event>>;
}

/** Starts the producer and waits for its first event (or its end, or the client's leaving). */
export async function openStream(events: AsyncIterable<Event>, signal: AbortSignal): Promise<OpenedStream> {
  const iterator = events[Symbol.asyncIterator]();
  const gone = new Promise<IteratorResult<Event>>((resolve) => {
    if (signal.aborted) resolve({ done: true, value: undefined });
    else signal.addEventListener('abort', () => resolve({ done: true, value: undefined }), { once: true });
  });
  const next = () => Promise.race([iterator.next(), gone]);
  return { iterator, first: await next(), next };
}

/** One event as it goes on the wire. Line breaks inside `text` start new `data:` lines, as the format requires. */
export function formatEvent(event: Event): string {
  let out = '';
  if (event.event !== undefined) out += `event: ${event.event.replace(/[\r\n]/g, ' ')}\n`;
  if (event.id !== undefined) out += `id: ${event.id.replace(/[\r\n]/g, ' ')}\n`;
  // JSON text has no line breaks (JSON.stringify escapes them in strings): one line, the common case of every chunk.
  if (event.text === undefined) return `${out}data: ${JSON.stringify(event.data)}\n\n`;
  for (const line of event.text.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return `${out}\n`;
}

/** Ends the stream with a last `event: error` whose data is the problem document. */
function endWithProblem(res: Response, context: RequestContext, problem: Problem): void {
  locals(res).errorCode = problem.code;
  res.end(
    formatEvent({
      event: 'error',
      data: problemResponseBody(problem, res.req.originalUrl, context.requestId, locals(res).problemShape),
    }),
  );
}

/** A stream whose signal aborted: cut by its client, or ended by the shutdown deadline with its last event. */
function endStopped(res: Response, context: RequestContext): 'cut' {
  const { deadline } = context.platform.drain;
  if (deadline.aborted && !res.destroyed && !res.writableEnded)
    endWithProblem(res, context, deadline.reason as Problem);
  return 'cut';
}

function writeOrWait(res: Response, text: string): Promise<void> | undefined {
  // A closed connection sends no 'drain' nor another 'close': the caller sees the aborted signal and stops.
  if (res.write(text) || res.destroyed) return undefined;
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Sends the stream. `complete` when the producer ended and the whole stream was sent (`beforeEnd` is given its
 * text first, to store it); `cut` when the client went away; `failed` when the producer threw after the first event
 * (`beforeFailureEnd` runs before the `error` event ends the stream: a client that retries on seeing it finds done
 * what was to be done first).
 */
export async function sendStream(
  res: Response,
  result: { status: number; headers?: Record<string, string | undefined> },
  stream: OpenedStream,
  context: RequestContext,
  beforeEnd?: (text: string) => Promise<void>,
  beforeFailureEnd?: () => Promise<void>,
): Promise<'complete' | 'cut' | 'failed'> {
  const { signal } = context;
  for (const [name, value] of Object.entries(result.headers ?? {})) if (value !== undefined) res.setHeader(name, value);
  res.status(result.status);
  res.setHeader('Content-Type', `${EVENT_STREAM}; charset=utf-8`);
  res.setHeader('Cache-Control', 'no-cache');
  // nginx and some other proxies buffer responses unless told not to.
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  const sent: string[] | undefined = beforeEnd ? [] : undefined;
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
  heartbeat.unref();
  try {
    for (let step = stream.first; !step.done && !signal.aborted; step = await stream.next()) {
      const text = formatEvent(step.value);
      sent?.push(text);
      await writeOrWait(res, text);
    }
  } catch (error) {
    if (signal.aborted) return endStopped(res, context);
    const problem =
      error instanceof Problem
        ? error
        : isTransientError(error)
          ? databaseUnavailable()
          : new Problem(
              'internal_error',
              `The stream failed. Quote request id ${context.requestId} when contacting support.`,
            );
    if (!(error instanceof Problem) || problem.status >= 500)
      context.platform.logger.error(
        { err: error, request_id: context.requestId },
        'a streamed answer failed after its first event',
      );
    await beforeFailureEnd?.();
    endWithProblem(res, context, problem);
    return 'failed';
  } finally {
    clearInterval(heartbeat);
    if (signal.aborted)
      context.platform.drain.track<unknown>(stream.iterator.return?.() ?? Promise.resolve()).catch(() => {});
  }
  if (signal.aborted) return endStopped(res, context);
  await beforeEnd?.(sent!.join(''));
  res.end();
  return 'complete';
}
