// express-openapi-validator (5.x) finds the operation of each request in applyOpenApiMetadata's lookupRoute, which
// walks every route of the spec and compiles each with path-to-regexp, on every request: under load it was the
// validator's largest cost (the profile in the performance issue: 56% of a validated request's time). The routes never
// change once the spec is loaded, so this module puts in its place the same middleware over a route table compiled
// once per validator: the same routes in the same order, the same `req.openapi` and `req.params`, the same errors
// (405 for a documented path with another method unless undocumented requests are ignored, 404 for a managed path,
// 400 for a malformed percent-encoding). It is the change that could be offered upstream: compile the table where the
// route maps are built (OpenApiContext) instead of in every request.
//
// It replaces the export the validator reads when it builds its middleware (openapi.validator.js calls
// `middlewares.applyOpenApiMetadata(context, responseApiDoc)`, which reads this module's export at that moment), so it
// must be imported before the validator's middleware is made (validation.ts imports it first).
import { createRequire } from 'node:module';
import type { NextFunction, Request, Response } from 'express';

// Resolved from the validator's own entry (dist/index.js), so that these are the files and the path-to-regexp it uses.
const require = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
const metadata = require('./middlewares/openapi.metadata.js') as { applyOpenApiMetadata: unknown };
const { pathToRegexp } = require('path-to-regexp') as { pathToRegexp: (path: string, options: { sensitive: boolean; strict: boolean }) => { regexp: RegExp; keys: Array<{ name: string }> } };
const { zipObject } = require('./middlewares/util.js') as { zipObject: (keys: string[], values: string[]) => Record<string, string> };
const { BadRequest, MethodNotAllowed, NotFound } = require('./framework/types.js') as Record<'BadRequest' | 'MethodNotAllowed' | 'NotFound', new (details: object) => Error>;
const { httpMethods } = require('./middlewares/parsers/schema.preprocessor.js') as { httpMethods: Set<string> };

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, walked by the field names of the specification
type Json = Record<string, any>;

/** The validator's OpenApiContext, as far as the lookup uses it. */
interface OpenApiContext {
  apiDoc: { paths: Record<string, Json> };
  expressRouteMap: Record<string, { basePath: string }>;
  openApiRouteMap: Record<string, Json>;
  ignoreUndocumented: boolean;
  useRequestUrl: boolean;
  serial: number;
  routePair(expressRoute: string): { openApiRoute: string } | null;
  shouldIgnoreRoute(path: string): boolean;
  isManagedRoute(path: string): boolean;
}

interface CompiledRoute {
  expressRoute: string;
  openApiRoute: string;
  /** The route's key in `apiDoc.paths` (the OpenAPI path without the server's base path). */
  pathKey: string;
  regexp: RegExp;
  keys: string[];
}

function applyOpenApiMetadata(context: OpenApiContext, responseApiDoc?: { paths: Record<string, Json> }) {
  // Compiled on first use, for the app's routing options (Express's `case sensitive routing` and `strict routing`).
  const tables = new Map<string, CompiledRoute[]>();
  const routeTable = (sensitive: boolean, strict: boolean): CompiledRoute[] => {
    const key = `${sensitive}:${strict}`;
    let table = tables.get(key);
    if (!table) {
      table = Object.entries(context.expressRouteMap).map(([expressRoute, methods]) => {
        const openApiRoute = context.routePair(expressRoute)!.openApiRoute;
        const { regexp, keys } = pathToRegexp(expressRoute, { sensitive, strict });
        return { expressRoute, openApiRoute, pathKey: openApiRoute.substring(methods.basePath.length), regexp, keys: keys.map((k) => k.name) };
      });
      tables.set(key, table);
    }
    return table;
  };

  const lookupRoute = (req: Request) => {
    const path = (context.useRequestUrl ? req.url : req.originalUrl).split('?')[0]!;
    const method = req.method.toLowerCase();
    for (const route of routeTable(!!req.app.enabled('case sensitive routing'), !!req.app.enabled('strict routing'))) {
      const match = route.regexp.exec(path);
      if (!match) continue;
      let pathParams: Record<string, string>;
      try {
        pathParams = zipObject(route.keys, match.slice(1).map(decodeURIComponent));
      } catch {
        throw new BadRequest({ path: req.path, message: "malformed uri'" });
      }
      return {
        schema: context.apiDoc.paths[route.pathKey]![method] as Json | undefined,
        expressRoute: route.expressRoute,
        openApiRoute: route.openApiRoute,
        pathParams,
        _responseSchema: responseApiDoc?.paths[route.pathKey]?.[method] as Json | undefined,
      };
    }
    return null;
  };

  return (req: Request, _res: Response, next: NextFunction): void => {
    // The base path is empty when the path is fully qualified.
    const path = req.path.startsWith(req.baseUrl) ? req.path : `${req.baseUrl}/${req.path}`;
    if (context.shouldIgnoreRoute(path)) {
      next();
      return;
    }
    const matched = lookupRoute(req);
    if (matched) {
      const { expressRoute, openApiRoute, pathParams, schema } = matched;
      if (!schema) {
        // The path is documented, the method is not.
        if (context.ignoreUndocumented) {
          next();
          return;
        }
        throw new MethodNotAllowed({
          path: req.path,
          message: `${req.method} method not allowed`,
          headers: { Allow: Object.keys(context.openApiRouteMap[openApiRoute]!).filter((key) => httpMethods.has(key.toLowerCase())).join(', ') },
        });
      }
      const openapi: Json = { expressRoute, openApiRoute, pathParams, schema, serial: context.serial };
      if (responseApiDoc) openapi._responseSchema = matched._responseSchema;
      (req as Request & { openapi: Json }).openapi = openapi;
      req.params = pathParams;
    } else if (context.isManagedRoute(path) && !context.ignoreUndocumented) {
      throw new NotFound({ path: req.path, message: 'not found' });
    }
    next();
  };
}

metadata.applyOpenApiMetadata = applyOpenApiMetadata;
