// The feature list and what the platform gathers from it: migrations sorted by name with the released names kept,
// no name defined twice, every implemented operation's handler from a feature.
import { describe, expect, test } from 'vitest';
import { type OperationId, operationTable } from '../../generated/operations.ts';
import { features } from '../../src/features/index.ts';
import { notImplemented } from '../../src/handlers.ts';
import { collectByKey, collectJobs, type Feature } from '../../src/platform/feature.ts';
import { allMigrations, collectMigrations } from '../../src/storage/database.ts';

const noop = { async up() {} };

describe('features', () => {
  test('migrations keep their released names and run in name order', () => {
    const names = Object.keys(allMigrations(features));
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(['001_platform', '002_webhooks', '005_jobs']));
    expect(names.indexOf('001_platform')).toBe(0);
  });

  test('a migration, an operation or a job kind defined twice is refused at start-up', () => {
    const a: Feature = {
      name: 'a',
      handlers: {},
      migrations: { '009_x': noop },
      jobs: () => ({ 'a.work': { run: async () => {} } }),
    };
    const b: Feature = {
      name: 'b',
      handlers: {},
      migrations: { '009_x': noop },
      jobs: () => ({ 'a.work': { run: async () => {} } }),
    };
    expect(() => collectMigrations({}, [a, b])).toThrow('migration 009_x of feature b is already defined');
    expect(() => collectMigrations({ '009_x': noop }, [a])).toThrow('already defined');
    expect(() => collectJobs([a, b], {} as never)).toThrow('job kind a.work of feature b is already defined');
    const handler = async () => ({ status: 200 }) as never;
    expect(() =>
      collectByKey(
        [
          { name: 'a', handlers: { getHealth: handler } },
          { name: 'b', handlers: { getHealth: handler } },
        ],
        'handlers',
      ),
    ).toThrow('handlers getHealth of feature b');
  });

  test('every operation is implemented by exactly one feature or listed as not built', () => {
    const implemented = Object.keys(collectByKey(features, 'handlers')) as OperationId[];
    const built = new Set(features.flatMap((feature) => Object.keys(feature.handlers)));
    expect(new Set(implemented)).toEqual(built);
    for (const id of Object.keys(operationTable) as OperationId[]) {
      expect(built.has(id) !== (notImplemented as readonly string[]).includes(id), id).toBe(true);
    }
  });
});
