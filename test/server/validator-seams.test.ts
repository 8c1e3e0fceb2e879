// src/platform/validator-route-table.ts and validator-schema-roots.ts replace two functions inside
// express-openapi-validator, which its modules look up at each call. Were a new version of the library to call them
// another way, the replacements would silently do nothing (every request would walk the routes again, every operation's
// first request would compile the whole document again). These checks fail first, naming the files to read again.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, test } from 'vitest';
import '../../src/platform/validation.ts';

const require = createRequire(import.meta.url);
const entry = require.resolve('express-openapi-validator');
const root = join(dirname(entry), '..');
const source = (file: string) => readFileSync(join(root, 'dist', file), 'utf8');
const reread = 'express-openapi-validator changed: read src/platform/validator-route-table.ts and validator-schema-roots.ts again';

describe('the seams in express-openapi-validator that the server replaces', () => {
  test('the version they were written against', () => {
    expect(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version, reread).toMatch(/^5\.6\./);
  });

  test('the route lookup is read from its module when the middleware is made', () => {
    expect(source('openapi.validator.js'), reread).toContain('middlewares.applyOpenApiMetadata(context, responseApiDoc)');
    const metadata = createRequire(entry)('./middlewares/openapi.metadata.js') as { applyOpenApiMetadata: { toString(): string } };
    expect(metadata.applyOpenApiMetadata.toString(), reread).toContain('routeTable');
  });

  test('the compiled-schema cache is read from its module at every compile, and is ours', () => {
    expect(source('middlewares/openapi.request.validator.js').split('(0, util_1.useAjvCache)(').length - 1, reread).toBe(2);
    expect(source('middlewares/openapi.response.validator.js').split('(0, util_1.useAjvCache)(').length - 1, reread).toBe(1);
    const util = createRequire(entry)('./middlewares/util.js') as { useAjvCache: { toString(): string } };
    expect(util.useAjvCache.toString(), reread).toContain('sharedRoot');
  });
});
