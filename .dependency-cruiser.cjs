// Layering of dsh, checked by `npm run lint:deps` (part of `npm test`):
//   src/core -> src/physical -> src/log -> src/views -> writers (check, export, redact, salvage, report, dataset)
//   -> src/cli (commander commands and pure renderers), with src/index.ts (the public API) beside cli.
// Each layer imports only itself and the layers beneath it; nothing imports in a circle
// (type-only imports included); nothing in src/ imports the test/bench generator in tools/.
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
    ...layerRules,
    {
      name: 'layer-writers',
      comment: 'check, export, redact, salvage, report and dataset sit below the CLI and the public API',
      severity: 'error',
      from: { path: `^src/${WRITERS}/` },
      to: { path: '^src/', pathNot: `^src/(core|physical|log|views|${WRITERS.slice(1, -1)})/` },
    },
    {
      name: 'api-not-from-cli-or-below',
      comment: 'src/index.ts is the public entry; no module imports it',
      severity: 'error',
      from: { path: '^src/.+/' },
      to: { path: '^src/index\\.ts$' },
    },
    {
      name: 'api-not-on-cli',
      comment: 'the public API does not depend on commander commands or renderers',
      severity: 'error',
      from: { path: '^src/index\\.ts$' },
      to: { path: '^src/cli/' },
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
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|build)/' },
  },
};
