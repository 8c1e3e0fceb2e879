// express-openapi-validator is changed in two ways, and both would silently stop working under another version of
// the library: the patch in patches/ (applied by `npm install`/`npm ci` through the postinstall script, see
// docs/validator-patch.md) that makes its per-request plumbing cheap, and src/platform/validator-schema-roots.ts,
// which replaces a function its modules look up at each call. These checks fail first, saying what to do.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
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
    ['framework/ajv/index.js', 'const schemaPath = it.schemaPath.str;', 'a keyword keeps its schema path only'],
    ['middlewares/util.js', 'allowedEnumValues.map(enumValueText)', "an enum's null shown as null"],
    [
      'framework/index.js',
      'The validator of the OpenAPI schema is made only to be used',
      'no OpenAPI metaschema compiled when the document is not checked',
    ],
    [
      'middlewares/parsers/schema.preprocessor.js',
      'addedSchemaEnv(this.ajv, ref)',
      'a referenced schema read without compiling it',
    ],
    ['framework/index.js', "if ($refParser.mode === 'none'", 'a bundled document not bundled again'],
    ['index.js', 'handedOver ? options.apiSpec : cloneDeep(options.apiSpec)', 'a document handed over not copied'],
    ['framework/ajv/index.js', 'cleanedDocuments.has(openApiSpec)', 'a document cleaned of x-stoplight once'],
    [
      'middlewares/parsers/schema.preprocessor.js',
      'Object.defineProperty(ancestor._discriminator.validators, option',
      "a discriminator's validator compiled when first read",
    ],
    [
      'middlewares/parsers/schema.preprocessor.js',
      'structuredClone(this.apiDoc)',
      "the answers' document copied by a structured clone",
    ],
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

  test("every operation's schema calls the one compiled function of a component it references", () => {
    const load = createRequire(entry);
    const { createResponseAjv } = load('./framework/ajv/index.js') as {
      createResponseAjv: (spec: object, options: object) => object;
    };
    const { useAjvCache } = load('./middlewares/util.js') as {
      useAjvCache: (ajv: object, schema: object, key: string) => ((data: unknown) => boolean) | undefined;
    };
    // A component with a reference of its own, which Ajv compiles as a function rather than inline.
    const components = {
      schemas: {
        Code: { type: 'string', enum: ['not_found', 'conflict'] },
        Problem: { type: 'object', required: ['code'], properties: { code: { $ref: '#/components/schemas/Code' } } },
      },
    };
    // The library's own options (framework/ajv/options.js): not strict, so `components` beside a schema is no error.
    const ajv = createResponseAjv(
      { openapi: '3.1.0', info: { title: 't', version: '1' }, paths: {}, components },
      { formats: {}, strict: false },
    );
    const answerOf = () => ({
      type: 'object',
      properties: { response: { $ref: '#/components/schemas/Problem' } },
      components,
      paths: {},
    });
    const first = useAjvCache(ajv, answerOf(), 'GET-/v1/a-not_provided-404-application/problem+json')!;
    const second = useAjvCache(ajv, answerOf(), 'GET-/v1/b-not_provided-404-application/problem+json')!;
    expect(useAjvCache(ajv, answerOf(), 'GET-/v1/a-not_provided-404-application/problem+json')).toBe(first);
    expect(first({ response: { code: 'not_found' } })).toBe(true);
    expect(second({ response: { code: 'gone' } })).toBe(false);
    // The functions each generated validator calls besides itself.
    const called = (validate: { name: string; toString(): string }) =>
      new Set(
        [...validate.toString().matchAll(/\b(validate\d+)\(/g)].map((m) => m[1]).filter((n) => n !== validate.name),
      );
    expect(called(first).size).toBe(1);
    expect(called(second)).toEqual(called(first));
  });
});

// The keywords the library adds to Ajv (date and date-time conversion, readOnly, writeOnly) are compiled for every
// place of the contract that uses them; what their validators keep lives as long as the server. A validator that
// closes over the compilation's context would keep the compilation of its whole answer or request schema (Ajv's code
// generator and the code it built), much of the server's memory once every operation is compiled. Part 9 of the
// patch keeps the schema path only.
describe("the validator's own keywords", () => {
  setFlagsFromString('--expose-gc');
  const collectGarbage = runInNewContext('gc') as () => void;
  const ajvModule = createRequire(entry)('./framework/ajv/index.js') as Record<
    'createRequestAjv' | 'createResponseAjv',
    (spec: object, options: object) => { getKeyword(keyword: string): { compile: Compile } | false }
  >;
  type Validate = ((data: unknown, context: object) => boolean) & { errors?: Array<{ schemaPath: string }> };
  type Compile = (schema: unknown, parentSchema: object, it: object) => Validate;
  const spec = { openapi: '3.1.0', info: { title: 't', version: '1' }, paths: {}, components: { schemas: {} } };
  const failingSerDes = {
    serialize: () => {
      throw new Error('cannot serialize');
    },
    deserialize: () => {
      throw new Error('cannot deserialize');
    },
  };
  const options = { formats: {}, serDesMap: { 'date-time': failingSerDes }, removeAdditional: false };
  const schemaPath = '#/properties/created_at/x';

  /** Compiles the keyword with a schema context held by nothing else, and whether that context outlives a full GC. */
  async function compiledKeepsContext(compile: Compile, schema: unknown) {
    const compiled = ((): { validate: Validate; context: WeakRef<object> } => {
      const it = { schemaPath: { str: schemaPath }, generatedCode: new Array(100_000).fill('code') };
      return { validate: compile(schema, {}, it), context: new WeakRef(it) };
    })();
    // A WeakRef's target stays alive until the current job ends.
    await new Promise((resolve) => setTimeout(resolve, 0));
    collectGarbage();
    return { validate: compiled.validate, kept: compiled.context.deref() !== undefined };
  }

  test('a validator that closes over its schema context keeps it alive (the check below can fail)', async () => {
    const keeping: Compile = (_schema, _parent, it) => () => it !== undefined;
    expect((await compiledKeepsContext(keeping, true)).kept).toBe(true);
  });

  test.each([
    ['createRequestAjv', 'x-eov-req-serdes', failingSerDes, 'not a date'],
    ['createRequestAjv', 'readOnly', true, 'sent'],
    ['createResponseAjv', 'x-eov-res-serdes', failingSerDes, new Date(0)],
    ['createResponseAjv', 'writeOnly', true, 'answered'],
  ] as const)('%s %s keeps its schema path, not the compilation', async (factory, keyword, schema, data) => {
    const definition = ajvModule[factory](structuredClone(spec), options).getKeyword(keyword);
    if (!definition) throw new Error(`${keyword} is not a keyword of ${factory}`);
    const { validate, kept } = await compiledKeepsContext(definition.compile, schema);
    expect(kept, `${keyword}: its validator keeps the compilation; read docs/validator-patch.md, part 9`).toBe(false);
    const parentData = { value: data };
    expect(validate(data, { parentData, parentDataProperty: 'value', instancePath: '/value' })).toBe(false);
    expect(validate.errors?.[0]?.schemaPath).toBe(schemaPath);
  });
});

// body-parser (express.json's) is patched to decode UTF-8 bodies with Buffer#toString (docs/decisions.md, "A body's
// own checks"): under another version, or without the postinstall script, the patch is gone without a word.
describe('the patch of body-parser', () => {
  const fromExpress = createRequire(require.resolve('express'));
  const bodyParserRoot = dirname(fromExpress.resolve('body-parser/package.json'));
  const bodyParserVersion = (
    JSON.parse(readFileSync(join(bodyParserRoot, 'package.json'), 'utf8')) as { version: string }
  ).version;
  const bodyParserPatches = readdirSync(join(import.meta.dirname, '..', '..', 'patches')).filter((name) =>
    name.startsWith('body-parser+'),
  );

  test('was made for the installed version, and is applied', () => {
    expect(bodyParserPatches, 'one patch of body-parser in patches/').toHaveLength(1);
    const patchedVersion = /^body-parser\+(.+)\.patch$/.exec(bodyParserPatches[0]!)?.[1];
    expect(
      bodyParserVersion,
      `body-parser ${bodyParserVersion} is installed, but patches/${bodyParserPatches[0]} was made for ${patchedVersion}: ` +
        'apply the change to the new version (or drop it if the version decodes UTF-8 natively), then `npx patch-package body-parser`',
    ).toBe(patchedVersion);
    const read = readFileSync(join(bodyParserRoot, 'lib', 'read.js'), 'utf8');
    expect(read, 'npx patch-package applies it').toContain("return body.toString('utf8', start)");
  });
});
