// A small reader of Server-Sent Events from a fetch body (the chat frame streams its answers with fetch, since
// EventSource can neither POST nor send headers). No DOM: it runs in Node as well, for tests.

export interface ServerSentEvent {
  /** The `event:` field; `message` when the event has none. */
  event: string;
  /** The `data:` lines, joined with \n. */
  data: string;
}

/**
 * Server-Sent Events from a fetch body: each event's name (`message` when it has none) and its data lines joined.
 * Comments (`: keep-alive`) and other fields are skipped; lines may end in \n, \r\n or \r, split anywhere across chunks.
 */
export async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let finished = false;
  try {
    while (!finished) {
      const chunk = await reader.read();
      finished = chunk.done;
      buffer += finished ? decoder.decode() : decoder.decode(chunk.value, { stream: true });
      // The last line may have no line break; an event the stream ends without a blank line after is still given.
      if (finished && buffer !== '') buffer += '\n';
      for (;;) {
        const end = /\r\n|\r|\n/.exec(buffer);
        // A \r at the end of the buffer may be the first half of \r\n.
        if (!end || (end[0] === '\r' && end.index === buffer.length - 1 && !finished)) break;
        const line = buffer.slice(0, end.index);
        buffer = buffer.slice(end.index + end[0].length);
        if (line === '') {
          if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
          event = '';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
    }
    if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
  } finally {
    if (!finished) await reader.cancel().catch(() => {});
  }
}
