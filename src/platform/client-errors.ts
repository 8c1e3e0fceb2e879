// Requests that Node's HTTP parser refuses never reach Express: headers over 16 KiB, a NUL or a raw non-ASCII byte in
// the request line or a header, a broken chunked body, a request that does not arrive in time. Node answered them
// with a bare status line and an empty body. Here they get what every other error gets: a problem document with a
// stable `code` and an `X-Request-Id`, written on the socket as raw HTTP/1.1 since there is no request object.
import { maxHeaderSize, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Clock } from './clock.ts';
import { newId } from './ids.ts';
import { Problem, problemBody } from './problems.ts';

interface ParserError extends Error {
  code?: string;
  /** llhttp's explanation, e.g. "Invalid header value char". */
  reason?: string;
}

function problemFor(error: ParserError, maxHeaderSize: number): Problem {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new Problem(
        'headers_too_large',
        `The request line and headers are larger than the ${maxHeaderSize} bytes this server accepts.`,
      );
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new Problem('payload_too_large', 'The chunk extensions of the body are larger than this server accepts.');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new Problem('request_timeout', 'The request did not arrive completely in time; send it again.');
    default: {
      const reason = (error.reason ?? error.code ?? 'unreadable request').replace(/[^\x20-\x7e]/g, '?').slice(0, 200);
      return new Problem(
        'malformed_request',
        `The request is not valid HTTP/1.1 (${reason}). Percent-encode the path and query, and send header values as visible ASCII.`,
      );
    }
  }
}

/** Answers every request that the HTTP parser of `server` refuses with a problem document, and closes its connection. */
export function answerClientErrors(server: Server, platform: { logger: Logger; clock: Clock }): void {
  server.on('clientError', (error: ParserError, socket: Socket) => {
    // A connection the client reset or closed has nobody to answer.
    if (error.code === 'ECONNRESET' || error.code === 'EPIPE' || !socket.writable) {
      socket.destroy();
      return;
    }
    // Never write into another response. The one in flight on this connection (Node's `_httpMessage`) is either
    // the answer to an earlier, complete request (pipelining): this answer follows once it is sent; or the answer
    // to the request that broke (a broken chunked body): this answer replaces it if none of it was written yet.
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (inFlight?.req.complete && !inFlight.writableFinished) {
      inFlight.once('finish', () => answer(error, socket));
      return;
    }
    if (inFlight?.headersSent && !inFlight.writableFinished) {
      socket.destroy();
      return;
    }
    answer(error, socket);
  });

  function answer(error: ParserError, socket: Socket): void {
    if (!socket.writable) return void socket.destroy();
    const requestId = newId('req', platform.clock.now());
    const problem = problemFor(error, (server as Server & { maxHeaderSize?: number }).maxHeaderSize ?? maxHeaderSize);
    // No `instance`: the parser refused the request before its path could be read.
    const { instance: _instance, ...body } = problemBody(problem, '/', requestId);
    const text = JSON.stringify(body);
    socket.end(
      `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? 'Error'}\r\n` +
        'Content-Type: application/problem+json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(text)}\r\n` +
        `X-Request-Id: ${requestId}\r\n` +
        'Connection: close\r\n' +
        `Date: ${platform.clock.now().toUTCString()}\r\n` +
        `\r\n${text}`,
      () => socket.destroy(),
    );
    // A client error: the client's fault, logged like any other refusal (logging.ts, accessLogLevel).
    platform.logger.info(
      {
        access: {
          request_id: requestId,
          status: problem.status,
          error_code: problem.code,
          ip: socket.remoteAddress ?? null,
        },
        reason: error.code,
      },
      `refused by the HTTP parser: ${problem.status}`,
    );
  }
}
