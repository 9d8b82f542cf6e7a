#!/usr/bin/env node
import { statSync } from 'node:fs';
import v8 from 'node:v8';

// The CLI bundled (dist/cli/bundle, scripts/bundle-cli.mjs: a few chunks instead of ~100 modules, a
// command starts ~70 ms sooner) when that bundle is at least as new as the build it was made from;
// else, or with DSH_CLI_BUNDLE=0, the built modules themselves (dist/cli). Same code either way.
function bundleIsFresh() {
  if (process.env.DSH_CLI_BUNDLE === '0') return false;
  try {
    return statSync(new URL('../dist/cli/bundle/main.js', import.meta.url)).mtimeMs >= statSync(new URL('../dist/cli/main.js', import.meta.url)).mtimeMs;
  } catch {
    return false;
  }
}
const cli = bundleIsFresh()
  ? {
      exit: () => import('../dist/cli/bundle/exit.js'),
      heap: () => import('../dist/cli/bundle/heap.js'),
      main: () => import('../dist/cli/bundle/main.js'),
    }
  : {
      exit: () => import('../dist/cli/exit.js'),
      heap: () => import('../dist/cli/heap.js'),
      main: () => import('../dist/cli/main.js'),
    };
const { EXIT } = await cli.exit();
const { pinYoungGeneration } = await cli.heap();

// The heap of a cold pass (JSON.parse of every line, garbage at once; the fold keeps little: the
// surface) is sized for memory, not V8's appetite, for every command (none holds the whole log):
// - the young generation stays at V8's initial size (1 MiB semi-spaces on Node 20) instead of
//   growing to 16 MiB: 32 MiB of peak RSS for nothing on a small log (a command reading a log of
//   64 MiB or more lets it grow again, where the pinned size costs time: src/cli/heap.ts);
// - the old generation may grow by half its live size between full collections (V8 picks up to 4x):
//   what the fold lets go (surface nodes a compaction replaced) is collected before it piles up.
// Measured on the bench's 50 MB log (README, benchmark): inspect 155 -> ~93 MiB peak RSS. The heap is
// not capped. Flags the user gave node (or NODE_OPTIONS) for either generation win. Set before the
// CLI's modules load.
const heapFlags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
if (!heapFlags.some((a) => /^--(max-|min-)?semi-space-(size|growth-factor)/.test(a))) pinYoungGeneration();
// Not for text-mode events: for logs up to 48 MiB it holds its output (off-heap, ~2.5x the logical
// bytes) until DSH's verdict, its peak follows that output, and V8 counts the held buffers towards
// the same growth limit (28 full collections instead of 9 on the 50 MB log). `events --json` holds
// output only for logs under DSH_STREAM_PASS_BYTES (larger ones are validated, then streamed):
// 115 -> 90 MiB on the 50 MB log.
const holdsOutput = process.argv[2] === 'events' && !process.argv.includes('--json');
if (!holdsOutput && !heapFlags.some((a) => /^--heap-growing-percent/.test(a))) v8.setFlagsFromString('--heap-growing-percent=50');

const { main } = await cli.main();

// A closed pipe (`dsh events … | head`) ends output quietly, never with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error) => {
    if (error && error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`dsh: internal error (a bug in dsh, please report): ${error && error.stack ? error.stack : String(error)}\n`);
    process.exitCode = EXIT.internal;
  },
);
