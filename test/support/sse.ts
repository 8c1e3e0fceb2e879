// Reads a `text/event-stream` body the way a client does (eventsource-parser): each event's name and data.
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export type { EventSourceMessage };

export function parseEvents(text: string): EventSourceMessage[] {
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => events.push(event) });
  parser.feed(text);
  return events;
}
