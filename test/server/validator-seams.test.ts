// express-openapi-validator is changed in two ways, and both would silently stop working under another version of
// the library: the patch in patches/ (applied by `npm install`/`npm ci` through the postinstall script, see
// docs/validator-patch.md) that makes its per-request plumbing cheap, and src/platform/validator-schema-roots.ts,
// which replaces a function its modules look up at each call. These checks fail first, saying what to do.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, test } from 'vitest';
import '../../src/platform/validation.ts';

const require = createRequire(import.meta.url);
const entry = require.resolve('express-openapi-validator');
const root = join(dirname(entry), '..');
const source = (file: string) => readFileSync(join(root, 'dist', file), 'utf8');
const installed = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const patches = readdirSync(join(import.meta.dirname, '..', '..', 'patches')).filter((name) =>
  name.startsWith('express-openapi-validator+'),
);

describe('the patch of express-openapi-validator', () => {
  test('was made for the installed version', () => {
    expect(patches, 'one patch of express-openapi-validator in patches/').toHaveLength(1);
    const patchedVersion = /^express-openapi-validator\+(.+)\.patch$/.exec(patches[0]!)?.[1];
    expect(
      installed,
      `express-openapi-validator ${installed} is installed, but patches/${patches[0]} was made for ${patchedVersion}: ` +
        'read docs/validator-patch.md, apply the changes to the new version (or drop those it has made upstream), ' +
        'then `npx patch-package express-openapi-validator` and rename nothing by hand',
    ).toBe(patchedVersion);
  });

  // What each part of the patch leaves in the installed files: missing, `npm install` did not run the postinstall
  // script (or ran it on another version). `npx patch-package` applies it.
  test.each([
    ['openapi.validator.js', 'const withContext = (next, fn) =>', 'no promise hop once the spec is loaded'],
    [
      'openapi.validator.js',
      'if (this.options.validateSecurity) {',
      'no security middleware when security is not validated',
    ],
    ['middlewares/util.js', 'contentTypeCache.get(type)', 'a Content-Type parsed once per distinct value'],
    [
      'middlewares/openapi.request.validator.js',
      '// The mutator keeps nothing of a request',
      'one parameter mutator per operation',
    ],
    [
      'middlewares/parsers/req.parameter.mutator.js',
      'function rawQueryOf(originalUrl)',
      'the raw query without url.parse',
    ],
    ['middlewares/parsers/req.parameter.mutator.js', 'normalizedParameters(parameters)', 'parameters normalized once'],
    [
      'middlewares/openapi.response.validator.js',
      'this.validatableContentTypes.get(contentType)',
      "an answer's content type checked once",
    ],
    ['middlewares/openapi.metadata.js', 'compiledRouteCache.get(key)', 'route matchers compiled once'],
    ['middlewares/openapi.metadata.js', 'matches.get(path)', "a path's route remembered"],
  ])('is applied to %s: %s (%s)', (file, marker) => {
    expect(
      source(file),
      `express-openapi-validator is not patched; run \`npx patch-package\` (patches/${patches[0]})`,
    ).toContain(marker);
  });
});

describe('the seam in express-openapi-validator that the server replaces', () => {
  const reread = 'express-openapi-validator changed: read src/platform/validator-schema-roots.ts again';

  test('the compiled-schema cache is read from its module at every compile, and is ours', () => {
    expect(
      source('middlewares/openapi.request.validator.js').split('(0, util_1.useAjvCache)(').length - 1,
      reread,
    ).toBe(2);
    expect(
      source('middlewares/openapi.response.validator.js').split('(0, util_1.useAjvCache)(').length - 1,
      reread,
    ).toBe(1);
    const util = createRequire(entry)('./middlewares/util.js') as { useAjvCache: { toString(): string } };
    expect(util.useAjvCache.toString(), reread).toContain('sharedRoot');
  });
});
