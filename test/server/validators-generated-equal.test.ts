// The generated validators (generated/validators.cjs) against the ones Ajv compiles at run time for the same schemas:
// the same answer and the same error objects (instancePath, schemaPath, keyword, params, message) for the same data,
// which union-errors.ts and the problem documents read. Here nothing generated is used by the validator while the
// roots are recorded (recordRoots): every schema is compiled at run time, then each is compared with its generated
// function. The recording stops at the end, so that the other test files of the process use the generated code.
import { createRequire } from 'node:module';
import { isDeepStrictEqual } from 'node:util';
import type express from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { describe, expect, onTestFinished, test } from 'vitest';
import { driveValidator, exampleRequests } from '../../scripts/validators.ts';
import { characterCount } from '../../src/platform/characters.ts';
import { openApiDocument, openApiText } from '../../src/platform/spec.ts';
import { validatorOptions } from '../../src/platform/validation.ts';
import { type Ajv, type GeneratedRuntime, recordRoots } from '../../src/platform/validator-schema-roots.ts';

// biome-ignore lint/suspicious/noExplicitAny: examples of the whole document, walked by field names
type Json = any;
type Validate = ((data: unknown) => boolean) & { errors?: unknown };

const generated = createRequire(import.meta.url)('../../generated/validators.cjs') as {
  kinds: Array<{
    name: string;
    options: string;
    document: string;
    create(runtime: GeneratedRuntime): Record<string, Validate>;
  }>;
};

/** Every `value` of a named example in the document, and every example request's parts. */
function examples(): unknown[] {
  const found: unknown[] = [];
  const walk = (node: Json, key?: string) => {
    if (Array.isArray(node)) for (const item of node) walk(item);
    else if (node && typeof node === 'object') {
      if (key === 'examples' && !Array.isArray(node))
        for (const example of Object.values<Json>(node)) if (example && 'value' in example) found.push(example.value);
      for (const [name, value] of Object.entries(node)) walk(value, name);
    }
  };
  walk(openApiDocument);
  return found;
}

/** Variants of a value that break it in the ways a schema notices: a member removed, replaced, a date as a Date. */
function variants(value: unknown): unknown[] {
  const out: unknown[] = [value, null, 7, 'text', [value]];
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    for (const name of Object.keys(value).slice(0, 6)) {
      const { [name]: _removed, ...rest } = value as Record<string, unknown>;
      out.push(rest, { ...value, [name]: 12345 }, { ...value, [name]: null }, { ...value, [name]: 'x'.repeat(300) });
      // Characters of two UTF-16 units each, and a lone surrogate: what the bounds of a length count differently.
      out.push({ ...value, [name]: `${'🙂'.repeat(150)}\ud83d` });
    }
    out.push({ ...value, unknown_member: true });
    out.push(
      JSON.parse(JSON.stringify(value), (_k, v) =>
        typeof v === 'string' && /^\d{4}-\d\d-\d\dT/.test(v) ? new Date(v) : v,
      ),
    );
  }
  return out;
}

describe('the generated validators', () => {
  test('answer as the validators Ajv compiles at run time do, with the same errors', { timeout: 300_000 }, async () => {
    const recording = recordRoots();
    onTestFinished(() => recording.stop());
    const roots = recording.roots;
    const middleware = OpenApiValidator.middleware(validatorOptions(openApiText())) as express.RequestHandler[];
    await driveValidator(middleware, exampleRequests(openApiDocument));
    recording.stop();
    expect(roots.length).toBe(3);
    const all = examples().flatMap(variants);
    // A spread of the pool for each schema (every k-th value), which keeps the comparisons to tens of thousands.
    const pool = all.filter((_value, i) => i % Math.max(1, Math.floor(all.length / 80)) === 0);
    let compared = 0;
    for (const root of roots) {
      const ajv = root.ajv as Ajv;
      const kind = generated.kinds.find((k) => k.options === root.options && k.document === root.document);
      expect(kind, 'generated/validators.cjs is stale: run `npm run generate`').toBeDefined();
      const functions = kind!.create({
        self: ajv,
        characterCount,
        formats: ajv.formats,
        serDes: (format) => ajv.opts.serDesMap?.[format],
        keyword: (keyword, schema, schemaPath) => {
          const definition = ajv.getKeyword(keyword) as { compile: (...args: unknown[]) => unknown };
          return definition.compile.call(ajv, schema, undefined, { schemaPath: { str: schemaPath } });
        },
      });
      for (const [name, pointer] of root.pointers) {
        const compiledAtRunTime = ajv.getSchema(pointer) as Validate;
        const fromCode = functions[name]!;
        expect(fromCode, name).toBeTypeOf('function');
        for (const value of pool) {
          const data =
            kind!.name === 'response'
              ? { response: value }
              : { query: { limit: '5', cursor: value }, headers: {}, params: { id: 'x' }, body: value };
          // The validators change what they validate (coercion, defaults, a Date written as text): each gets a copy.
          const a = structuredClone(data);
          const b = structuredClone(data);
          const same =
            fromCode(b) === compiledAtRunTime(a) &&
            isDeepStrictEqual(fromCode.errors, compiledAtRunTime.errors) &&
            isDeepStrictEqual(b, a);
          if (!same) {
            expect({ valid: fromCode(structuredClone(data)), errors: fromCode.errors }, name).toEqual({
              valid: compiledAtRunTime(structuredClone(data)),
              errors: compiledAtRunTime.errors,
            });
            expect(b, name).toEqual(a);
          }
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThan(10_000);
  });
});
