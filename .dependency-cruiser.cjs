// Layering of dsh, checked by `npm run lint:deps` (part of `npm test`):
//   src/core -> src/physical -> src/log -> src/views -> writers (check, export, redact, salvage, report, dataset)
//   -> the public entry points (src/index.ts, `dsh`, and src/api/*.ts, `dsh/<layer>`) -> src/cli (commander
//   commands and pure renderers) -> bin/dsh.js.
// Each layer imports only itself and the layers beneath it; nothing imports in a circle
// (type-only imports included), neither modules nor folders: the writers may import each other
// (dataset -> check, report -> check, export -> redact) but never in a circle, and no two folders of
// src/ at any depth import each other in a circle (`no-folder-cycle` below; scripts/deps-report.mjs,
// which `npm run lint:deps` pipes this run into, checks the top-level folders exactly);
// nothing in src/ imports the test/bench generator in tools/.
// Every file a writer or the index cache writes goes through the one output publisher,
// src/core/publish.ts (the lowest layer, so every writer reaches it without reaching another writer).
// The CLI is a client of the library like any other: it reaches src/ only through the public entry points
// (declared in package.json `exports` and documented in docs/api), so whatever it uses is public API.
const WRITERS = '(check|export|redact|salvage|report|dataset)';
const below = {
  core: ['core'],
  physical: ['core', 'physical'],
  log: ['core', 'physical', 'log'],
  views: ['core', 'physical', 'log', 'views'],
};
const layerRules = Object.entries(below).map(([layer, allowed]) => ({
  name: `layer-${layer}`,
  comment: `src/${layer} may import only ${allowed.map((l) => `src/${l}`).join(', ')}`,
  severity: 'error',
  from: { path: `^src/${layer}/` },
  to: { path: '^src/', pathNot: `^src/(${allowed.join('|')})/` },
}));

module.exports = {
  forbidden: [
    { name: 'no-circular', comment: 'import cycles hide which layer owns what', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'no-folder-cycle',
      comment: 'folders of src/ (the writers among them) never import each other in a circle, even when no module does',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    ...layerRules,
    {
      name: 'layer-writers',
      comment: 'check, export, redact, salvage, report and dataset sit below the CLI and the public API',
      severity: 'error',
      from: { path: `^src/${WRITERS}/` },
      to: { path: '^src/', pathNot: `^src/(core|physical|log|views|${WRITERS.slice(1, -1)})/` },
    },
    {
      name: 'cli-only-through-public-api',
      comment: 'src/cli imports src/ only through the public entry points (src/index.ts, src/api/*.ts) and src/cli itself',
      severity: 'error',
      from: { path: '^src/cli/' },
      to: { path: '^src/', pathNot: '^src/(cli/|api/[^/]+\\.ts$|index\\.ts$)' },
    },
    {
      name: 'public-api-only-from-cli',
      comment: 'the public entry points are for clients: nothing in src/ but the CLI imports them (not even each other)',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/(api/|index\\.ts$)' },
    },
    {
      name: 'api-not-on-cli',
      comment: 'the public API does not depend on commander commands or renderers',
      severity: 'error',
      from: { path: '^src/(index\\.ts$|api/)' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'bin-only-on-built-cli',
      comment: 'bin/dsh.js starts the built CLI (dist/cli) and nothing else of dsh',
      severity: 'error',
      from: { path: '^bin/' },
      to: { dependencyTypesNot: ['core'], pathNot: '^dist/cli/' },
    },
    {
      name: 'src-not-on-tools-or-tests',
      comment: 'generators and fixture writers are not shipped: src/ never imports tools/ or test/',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(tools|test|bench|scripts)/' },
    },
  ],
  options: {
    // dist/ appears only as what bin/dsh.js imports (not followed, so its built copies are not cruised).
    doNotFollow: { path: ['node_modules', '^dist/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^build/' },
  },
};
