// A logger whose lines a test reads: pino writing into memory, each line parsed.
import { Writable } from 'node:stream';
import { type Logger, pino } from 'pino';

/** A pino logger at `level` and the lines it has written so far, parsed, in order. */
export function capturedLogger<Line extends { msg: string }>(level = 'warn'): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const logger = pino(
    { level },
    new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
        done();
      },
    }),
  );
  return { logger, lines };
}
