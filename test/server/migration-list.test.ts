// The command-line tool migrates with src/features/migrations.ts, a list of the features' migrations that does not
// load the features; the server and the worker with the features themselves. Both must be the same migrations.
import { expect, test } from 'vitest';
import { features } from '../../src/features/index.ts';
import { featureMigrations } from '../../src/features/migrations.ts';
import type { Feature } from '../../src/platform/feature.ts';
import { allMigrations } from '../../src/storage/database.ts';

test('the migration list of the command-line tool holds the migrations of every feature, the same objects', () => {
  const ofFeatures = allMigrations(features);
  const ofList = allMigrations(featureMigrations);
  expect(Object.keys(ofList)).toEqual(Object.keys(ofFeatures));
  for (const [name, migration] of Object.entries(ofFeatures)) expect(ofList[name], name).toBe(migration);
  // Feature by feature, so that a migration listed under the wrong feature is found too.
  for (const feature of features) {
    const listed = featureMigrations.find((entry) => entry.name === feature.name);
    expect(listed?.migrations ?? {}, feature.name).toEqual((feature as Feature).migrations ?? {});
  }
});
