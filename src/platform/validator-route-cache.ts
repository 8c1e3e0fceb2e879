// express-openapi-validator finds the operation of each request by compiling every route of the spec with
// path-to-regexp, on every request (middlewares/openapi.metadata.js, lookupRoute). Its routes never change, so
// remembering the compiled expressions gives the same answers without recompiling ~60 patterns per request.
// Measured with `npm run bench` (see README, "Benchmark").
import { createRequire } from 'node:module';

const require = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
const pathToRegexpModule = require('path-to-regexp') as { pathToRegexp: (path: string, options?: object) => unknown };

const original = pathToRegexpModule.pathToRegexp;
const compiled = new Map<string, unknown>();

pathToRegexpModule.pathToRegexp = (path: string, options?: object) => {
  if (typeof path !== 'string') return original(path, options);
  const key = `${path}\0${JSON.stringify(options ?? {})}`;
  let result = compiled.get(key);
  if (result === undefined) {
    result = original(path, options);
    if (compiled.size < 10_000) compiled.set(key, result);
  }
  return result;
};
