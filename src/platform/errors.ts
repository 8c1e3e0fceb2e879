// The last middleware: every error becomes an RFC 9457 problem document, never a stack trace.
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { operationTable } from '../../generated/operations.ts';
import { isTransientError } from '../storage/database.ts';
import { locals } from './context.ts';
import { databaseUnavailable, Problem, sendProblem } from './problems.ts';
import { validatorProblem } from './validation.ts';
import { withYamlPositions } from './yaml-body.ts';

// body-parser's error types (https://github.com/expressjs/body-parser#errors).
function bodyParserProblem(error: {
  type?: string;
  status?: number;
  limit?: number;
  expose?: boolean;
}): Problem | undefined {
  switch (error.type) {
    case 'entity.parse.failed':
      return new Problem('invalid_json', 'The body is not well-formed JSON.');
    case 'entity.too.large':
      return new Problem(
        'payload_too_large',
        `The body is larger than ${error.limit ?? 'the'} bytes this API accepts.`,
      );
    case 'encoding.unsupported':
      return new Problem(
        'unsupported_media_type',
        'The Content-Encoding is not supported; send the body uncompressed, or gzip, deflate or br.',
      );
    case 'charset.unsupported':
      return new Problem('unsupported_media_type', 'The body must be UTF-8.');
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return new Problem('invalid_json', 'The body could not be read completely.');
  }
  // Any other client error of body-parser (http-errors marks them `expose`), e.g. a gzip body that does not
  // decompress: it has status 400 but no `type`, and is the client's error, not ours.
  if (error.expose === true) {
    if (error.status === 413) return new Problem('payload_too_large', 'The body is larger than this API accepts.');
    if (error.status === 415)
      return new Problem('unsupported_media_type', 'The body is not in a content type or encoding this API accepts.');
    if (error.status === 400) return new Problem('invalid_json', 'The body could not be read or decoded as JSON.');
  }
  return undefined;
}

export interface ErrorHandlerOptions {
  logger: Logger;
  /** Called for every response that broke the contract; tests fail on it. */
  onResponseValidationError?: (details: { operationId: string | undefined; error: unknown }) => void;
}

export function problemHandler(options: ErrorHandlerOptions) {
  return async (error: unknown, req: Request, res: Response, _next: NextFunction): Promise<void> => {
    const state = locals(res);
    const { operationId, requestId } = state;
    const request = {
      path: req.path,
      template: operationId ? operationTable[operationId]?.path : undefined,
      operationId,
      body: req.body,
    };
    let problem =
      error instanceof Problem ? error : (validatorProblem(error, request) ?? bodyParserProblem(error as object));
    // A field of a YAML body is also named by its line and column (the client wrote text, not a JSON value).
    if (problem?.code === 'validation_failed' && problem.errors && state.yamlBody) {
      problem = new Problem(problem.code, problem.message, {
        errors: withYamlPositions(state.yamlBody, problem.errors),
        extra: problem.extra,
        headers: problem.headers,
      });
    }
    if (problem?.code === 'response_validation_failed') {
      options.logger.error(
        { err: error, operation_id: operationId, request_id: requestId },
        'response breaks the contract',
      );
      options.onResponseValidationError?.({ operationId, error });
    }
    if (!problem && isTransientError(error)) {
      options.logger.warn({ err: error, operation_id: operationId, request_id: requestId }, 'database unavailable');
      problem = databaseUnavailable();
    }
    if (!problem) {
      options.logger.error({ err: error, operation_id: operationId, request_id: requestId }, 'unhandled error');
      problem = new Problem(
        'internal_error',
        `An unexpected error occurred. Quote request id ${String(requestId)} when contacting support.`,
      );
    }
    // A 5xx answer to a request that holds an Idempotency-Key releases the key before the client hears of the
    // failure, so that its retry runs again (operations.ts).
    const release = state.releaseIdempotencyKey;
    state.releaseIdempotencyKey = undefined;
    if (release && problem.status >= 500) {
      await release().catch((releaseError: unknown) =>
        options.logger.error({ err: releaseError, request_id: requestId }, 'could not release the Idempotency-Key'),
      );
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendProblem(res, problem);
  };
}
