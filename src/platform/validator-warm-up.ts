// The validator compiles an operation's request and response validators when the operation's first request arrives,
// which made every first call of an operation slow (the Ajv compile of its schemas). Before a server takes requests,
// this sends each operation's documented example request through the process's shared validator (validation.ts), in
// an app of its own on loopback: the validator compiles the request's validators, and the response's when the request
// passes (every response status of the operation at once), exactly as a first real request would. Nothing of the
// server's own app runs: no authentication, no handler, no database.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import { type OperationId, operationTable } from '../../generated/operations.ts';
import { openApiDocument, resolveRef } from './spec.ts';
import { sharedValidatorMiddleware } from './validation.ts';

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, walked by the field names of the specification
type Json = Record<string, any>;

function firstExample(holder: Json | undefined): unknown {
  if (!holder) return undefined;
  if (holder.examples && !Array.isArray(holder.examples))
    return resolveRef(Object.values<Json>(holder.examples)[0])?.value;
  if (holder.example !== undefined) return holder.example;
  return holder.schema?.examples?.[0] ?? holder.schema?.default ?? holder.schema?.enum?.[0];
}

interface WarmUpRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
}

/** The operation's request built from its documented examples (JSON body, required query and header parameters). */
function exampleRequest(id: OperationId): WarmUpRequest {
  const { path, method } = operationTable[id];
  const operation = (openApiDocument.paths as Json)[path][method] as Json;
  let url: string = path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = { Accept: 'application/json' };
  for (const raw of operation.parameters ?? []) {
    const parameter = resolveRef(raw)!;
    const value = firstExample(parameter);
    if (parameter.in === 'path') url = url.replace(`{${parameter.name}}`, encodeURIComponent(String(value)));
    else if (parameter.in === 'query' && parameter.required && value !== undefined)
      query.set(parameter.name, String(value));
    else if (parameter.in === 'header' && parameter.required && value !== undefined)
      headers[parameter.name] = String(value);
  }
  const content = resolveRef(operation.requestBody)?.content as Json | undefined;
  let body: string | undefined;
  if (content?.['application/json']) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(firstExample(content['application/json']) ?? {});
  }
  return { method: method.toUpperCase(), path: query.size > 0 ? `${url}?${query}` : url, headers, body };
}

/** Compiles the validators of every operation; resolves with how many operations' requests passed (their responses'
 *  validators compiled too). */
export async function warmUpValidator(): Promise<{ operations: number; validated: number }> {
  const app = express();
  app.use(express.json({ strict: false, limit: '10mb' }));
  app.use(sharedValidatorMiddleware());
  // A request that passed: answering through res.json makes the validator build the operation's response validators.
  app.use((_req: Request, res: Response) => {
    res.setHeader('X-Validated', 'true');
    res.status(200).json({});
  });
  // The example answer does not match the operation's schemas (it is not meant to); what counts is the compile.
  app.use((_error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (!res.headersSent) res.status(500).end();
  });
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const ids = Object.keys(operationTable) as OperationId[];
  let validated = 0;
  try {
    for (const id of ids) {
      const request = exampleRequest(id);
      const response = await fetch(base + request.path, {
        method: request.method,
        headers: request.headers,
        body: request.body,
      });
      await response.arrayBuffer();
      if (response.headers.get('x-validated') === 'true') validated++;
    }
  } finally {
    server.close();
    server.closeAllConnections();
  }
  return { operations: ids.length, validated };
}
