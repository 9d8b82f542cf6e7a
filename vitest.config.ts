import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

/**
 * The long campaigns: `npm run test:full` runs these (after `npm test`, which runs every other test file;
 * .ci/run runs both). A file lands here when it takes minutes on the 2-core CI machine, or drives an outside
 * program (chromium, Arize Phoenix) whose start-up alone is slow. `npx vitest run <file>` runs any one of them.
 */
export const FULL_FILES = [
  'test/hostile-suite.test.ts', // generated mutations x every read command x {text, --json} (DSH_SLOW_TESTS=1: 20,000)
  'test/cli-bundle-parity.test.ts', // every read command on every corpus artifact, bundle vs built modules, cold and indexed
  'test/index-cache-corpus.test.ts', // every indexed command cold, building and warm on every corpus artifact and grown prefixes
  'test/parallel-read.test.ts', // -j 1 vs -j 4 on every corpus artifact and hostile mutations
  'test/report-browser.test.ts', // chromium (playwright-core), up to a 200k-event report
  'test/otlp-phoenix.test.ts', // a real Arize Phoenix started on 127.0.0.1
  'test/scale.test.ts', // DSH_SLOW_TESTS=1: a log beyond V8's longest string
  'test/huge-event-memory.test.ts', // 200 MB single-message logs and a 2 GiB frame, peak RSS per command
  'test/export.test.ts', // every corpus session exported, read back and compared, plus the ZIP consumers
  'test/report-stream.test.ts', // reports of generated logs of tens of MB, streamed, against the whole-log page
  'test/bounded-memory.test.ts', // peak RSS of every streaming view on generated logs of tens of MB
  'test/hostile-classes.test.ts', // each hostile class of issue #23 built from the corpus, a 1 GiB torn frame included
  'test/two-pass.test.ts', // the two-pass path forced on every corpus artifact = the one-pass bytes
  'test/stream-views.test.ts', // transcript and history streamed = the holding path, every corpus artifact
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
