import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

/**
 * The long campaigns: `npm run test:full` runs these (after `npm test`, which runs every other test file;
 * .ci/run runs both). A file lands here when it takes minutes on the 2-core CI machine, or drives an outside
 * program (chromium, Arize Phoenix) whose start-up alone is slow. `npx vitest run <file>` runs any one of them.
 */
export const FULL_FILES = [
  'test/hostile-suite.test.ts',
  'test/cli-bundle-parity.test.ts',
];

export default defineConfig({
  test: {
    // `vitest run --project quick` (npm test) and `--project full` (npm run test:full); plain `vitest run` runs both.
    projects: [
      { extends: true, test: { name: 'quick', include: ['test/**/*.test.ts'], exclude: FULL_FILES } },
      { extends: true, test: { name: 'full', include: FULL_FILES } },
    ],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Vitest's default is one worker fewer than the cores: on the 2-core CI machine, one test file at a
    // time (645 s of vitest for 624 s of tests). Two files at a time use both cores.
    maxWorkers: Math.max(2, (typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length) - 1),
    // Compiles the report page (tsconfig.page.json) when dist/ lacks it or holds an older one.
    globalSetup: ['test/helpers/page-build.ts'],
    // Session indexes written by tests go to a scratch directory, never ~/.cache (test/helpers/cli.ts
    // gives each test process its own; this covers anything spawned with the runner's environment).
    env: { DSH_CACHE_DIR: path.join(os.tmpdir(), `dsh-vitest-cache-${process.getuid?.() ?? 'user'}`) },
  },
});
