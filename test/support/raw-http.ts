// Raw HTTP/1.1 exchanges for tests: bytes no client library would send, and the answer exactly as the server wrote it.
import { connect } from 'node:net';
import type { Answer } from './server.ts';

/** An answer read from a raw socket: the status line, the headers and the body, as the server wrote them. */
export interface RawAnswer extends Answer {
  head: string;
}

/** Sends bytes as they are (no client library would send them) and reads the answer until the server closes. */
export function rawRequest(baseUrl: string, bytes: Buffer): Promise<RawAnswer> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(bytes));
    socket.setTimeout(20_000, () => socket.destroy(new Error('no answer within 20 s')));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      const head = end < 0 ? text : text.slice(0, end);
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = new Headers();
      for (const line of lines) {
        const colon = line.indexOf(':');
        if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
      }
      const bodyText = end < 0 ? '' : text.slice(end + 4);
      let body: unknown = bodyText;
      try {
        body = JSON.parse(bodyText);
      } catch {
        // left as text; the assertions say what was expected
      }
      resolve({
        head,
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? '')?.[1] ?? 0),
        headers,
        body,
        text: bodyText,
      });
    });
  });
}
