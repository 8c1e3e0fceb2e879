// The dependency rules of src/ (docs/server.md, "Dependency rules"), checked by
// `npm run lint:boundaries` (part of `npm run lint`): dependency-cruiser reads the imports of src/, scripts/ and bench/
// (type-only imports included) and fails naming the rule a change breaks.
//
// The layers: entry points (src/*.ts, scripts/, bench/) → features (src/features/<name>/) → the platform
// (src/platform/) → the ground floor: storage (src/storage/) and the configuration (src/config.ts). A feature's public API is its index.ts; what is not exported there is its
// own to change. Tests (test/) are outside these rules: they test concepts, so they may import any file they test.

/** Entry points: the files that start a process or a script, and hand the feature list down. */
const ENTRY_POINT = '^(src/[^/]+\\.ts$|scripts/|bench/)';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-deep-cross-feature-import',
      comment:
        "A feature imports another feature only through that feature's index.ts, its public API: what is not exported " +
        'there (its handlers, queries, helpers) can be renamed, moved or split without touching another feature. ' +
        'Export what you need from the index.ts, with a line saying why other features use it.',
      severity: 'error',
      from: { path: '^src/features/([^/]+)/' },
      to: { path: '^src/features/[^/]+/', pathNot: ['^src/features/$1/', '^src/features/[^/]+/index\\.ts$'] },
    },
    {
      name: 'no-deep-feature-import-from-entry-point',
      comment:
        'Entry points (src/*.ts, scripts/, bench/) use a feature through its index.ts too, for the same reason: a ' +
        "feature's insides stay its own. (src/features/index.ts, the list of features, imports only index.ts files.)",
      severity: 'error',
      from: { path: ENTRY_POINT },
      to: { path: '^src/features/[^/]+/', pathNot: '^src/features/[^/]+/index\\.ts$' },
    },
    {
      name: 'feature-list-only-from-entry-points',
      comment:
        'Only entry points import the list of features (src/features/index.ts) and hand it down (Platform.features, ' +
        'startWorkers, migrate): it imports every feature, so anything else importing it is in a cycle with them all.',
      severity: 'error',
      from: { pathNot: ENTRY_POINT },
      to: { path: '^src/features/index\\.ts$' },
    },
    {
      name: 'no-feature-cycle',
      comment:
        'No cycle between feature folders (type-only imports count): a cycle makes two features one, and at run time ' +
        'an import cycle through index.ts files reads a binding before it is initialised. Move the shared piece down ' +
        'into src/platform, or invert the dependency with a registration (as engine middleware does for voices, ' +
        'policy and limits: src/features/engine/middleware.ts, wired in src/services.ts).',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/features/[^/]+$' },
      to: { path: '^src/features/[^/]+$', circular: true },
    },
    {
      name: 'no-runtime-cycle-across-features',
      comment:
        'No import cycle at run time that leaves a feature (type-only imports are erased and do not count): importing ' +
        "another feature's index.ts loads all of it, and ES modules in a cycle see each other half-initialised, which " +
        'fails at start with a TDZ ReferenceError, or silently. (Cycles inside one feature or inside the platform are ' +
        "that folder's own business; they are kept small and read their imports only when called.)",
      severity: 'error',
      from: { path: '^src/features/([^/]+)/' },
      to: {
        circular: true,
        dependencyTypesNot: ['type-only'],
        via: { pathNot: '^src/features/$1/' },
        viaOnly: { dependencyTypesNot: ['type-only'] },
      },
    },
    {
      name: 'platform-imports-no-feature',
      comment:
        'The platform serves every feature and knows none: what it needs from them is handed down by the entry points ' +
        '(Platform.features, Services), or declared by the feature on a platform interface (Database, Services, ' +
        'JobPayloads) by declaration merging.',
      severity: 'error',
      from: { path: '^src/platform/' },
      to: { path: '^src/features/' },
    },
    {
      name: 'storage-imports-nothing-above',
      comment:
        'Storage (the database, the schema, the platform migrations) is the ground floor: it imports nothing of the ' +
        'platform, the features or the entry points. What it needs from above is handed in by whoever opens the ' +
        "database (the features' migrations to migrate, the query logger: openStorage's queryLog). A migration keeps " +
        "its own frozen copy of the data it needs as it was when written: a feature's code changes later, a migration " +
        'never does.',
      severity: 'error',
      from: { path: '^src/storage/' },
      to: { path: '^src/', pathNot: '^src/storage/' },
    },
    {
      name: 'config-imports-nothing-above',
      comment:
        'The configuration is read by the platform and every feature, so it stands on the ground floor: it imports ' +
        'nothing of src/ (what it needs of the contract, the regions and their servers, is generated data: ' +
        'generated/operations.ts). A feature reads its own settings from what the configuration parses.',
      severity: 'error',
      from: { path: '^src/config\\.ts$' },
      to: { path: '^src/', pathNot: '^src/config\\.ts$' },
    },
    {
      name: 'no-entry-point-import',
      comment:
        'The platform and the features never import an entry point (src/app.ts, server.ts, services.ts, main.ts, ' +
        'worker.ts, cli.ts, handlers.ts): those import every feature, so importing one is a cycle through all of ' +
        'them. src/config.ts is the exception: it is read by all and imports nothing of src/.',
      severity: 'error',
      from: { path: '^src/(platform|storage|features)/' },
      to: { path: '^src/[^/]+\\.ts$', pathNot: '^src/config\\.ts$' },
    },
  ],
  options: {
    // Imports only of our own code: node_modules is a leaf, generated/ and test/support/ (used by bench/) are read.
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^(src|scripts|bench|generated|test/support)/',
    // Type-only imports are dependencies too: a feature that uses another's types depends on its API.
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs', '.json'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
