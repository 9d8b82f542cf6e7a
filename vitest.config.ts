import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
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
