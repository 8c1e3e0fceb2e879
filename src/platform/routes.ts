// Which operation a request is for, from the generated operation table: 404 route_not_found for an unknown path,
// 405 method_not_allowed with `Allow` for a known path with another method. Runs before authentication.
import type { NextFunction, Request, Response } from 'express';
import { type OperationId, operationTable } from '../../generated/operations.ts';
import { locals } from './context.ts';
import { Problem } from './problems.ts';

interface Route {
  pattern: RegExp;
  /** The names of the path's parameters, in the order of the pattern's groups. */
  names: string[];
  methods: Map<string, OperationId>;
}

function compile(path: string): RegExp {
  const source = path
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '([^/]+)' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}/?$`);
}

const routes = new Map<string, Route>();
for (const [id, operation] of Object.entries(operationTable) as Array<
  [OperationId, (typeof operationTable)[OperationId]]
>) {
  const route = routes.get(operation.path) ?? {
    pattern: compile(operation.path),
    names: [...operation.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!),
    methods: new Map(),
  };
  route.methods.set(operation.method.toUpperCase(), id);
  routes.set(operation.path, route);
}

// OpenAPI: a concrete path matches before a templated one. In insertion order `/v1/workflows/{id}` came first and
// answered `POST /v1/workflows/validate` with 405. Sorted segment by segment, a literal segment before a parameter.
const isParameter = (segment: string | undefined) => segment?.startsWith('{') ?? false;
const ordered = [...routes.entries()]
  .sort(([a], [b]) => {
    const sa = a.split('/');
    const sb = b.split('/');
    for (let i = 0; i < Math.max(sa.length, sb.length); i++) {
      const pa = isParameter(sa[i]);
      const pb = isParameter(sb[i]);
      if (pa !== pb) return pa ? 1 : -1;
    }
    return 0;
  })
  .map(([, route]) => route);

export function matchOperation(
  method: string,
  path: string,
): { operationId: OperationId; pathParams: Record<string, string> } | { allow: string[] } | undefined {
  for (const route of ordered) {
    const match = route.pattern.exec(path);
    if (!match) continue;
    const id = route.methods.get(method === 'HEAD' ? 'GET' : method);
    if (id) {
      const pathParams: Record<string, string> = {};
      route.names.forEach((name, i) => {
        pathParams[name] = match[i + 1]!;
      });
      return { operationId: id, pathParams };
    }
    const allow = [...route.methods.keys()];
    if (allow.includes('GET')) allow.push('HEAD');
    return { allow };
  }
  return undefined;
}

export function resolveOperation(req: Request, res: Response, next: NextFunction): void {
  const match = matchOperation(req.method, req.path);
  if (!match)
    throw new Problem(
      'route_not_found',
      req.path === '/'
        ? 'No operation at /: the API is under /v1/ (GET /v1/openapi.json lists its routes), and a browser opening / is sent to the dashboard.'
        : `No operation at ${req.path}. See GET /v1/openapi.json for the routes of this API.`,
    );
  if ('allow' in match) {
    throw new Problem(
      'method_not_allowed',
      `${req.path} does not support ${req.method}; it supports ${match.allow.join(', ')}.`,
      {
        headers: { Allow: match.allow.join(', ') },
      },
    );
  }
  locals(res).operationId = match.operationId;
  locals(res).pathParams = match.pathParams;
  next();
}
