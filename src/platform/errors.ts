// The last middleware: every error becomes an RFC 9457 problem document, never a stack trace.
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { Problem, sendProblem } from './problems.ts';
import { validatorProblem } from './validation.ts';

// body-parser's error types (https://github.com/expressjs/body-parser#errors).
function bodyParserProblem(error: { type?: string; status?: number; limit?: number }): Problem | undefined {
  switch (error.type) {
    case 'entity.parse.failed':
      return new Problem('invalid_json', 'The body is not well-formed JSON.');
    case 'entity.too.large':
      return new Problem('payload_too_large', `The body is larger than ${error.limit ?? 'the'} bytes this API accepts.`);
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new Problem('unsupported_media_type', 'The body must be UTF-8.');
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return new Problem('invalid_json', 'The body could not be read completely.');
    default:
      return undefined;
  }
}

export interface ErrorHandlerOptions {
  logger: Logger;
  /** Called for every response that broke the contract; tests fail on it. */
  onResponseValidationError?: (details: { operationId: string | undefined; error: unknown }) => void;
}

export function problemHandler(options: ErrorHandlerOptions) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction): void => {
    let problem = error instanceof Problem ? error : (validatorProblem(error) ?? bodyParserProblem(error as object));
    if (problem?.code === 'response_validation_failed') {
      options.logger.error({ err: error, operation_id: res.locals.operationId, request_id: res.locals.requestId }, 'response breaks the contract');
      options.onResponseValidationError?.({ operationId: res.locals.operationId as string | undefined, error });
    }
    if (!problem) {
      options.logger.error({ err: error, operation_id: res.locals.operationId, request_id: res.locals.requestId }, 'unhandled error');
      problem = new Problem('internal_error', `An unexpected error occurred. Quote request id ${String(res.locals.requestId)} when contacting support.`);
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendProblem(res, problem);
  };
}
