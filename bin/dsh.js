#!/usr/bin/env node
import { statSync } from 'node:fs';

// The CLI bundled (dist/cli/bundle, scripts/bundle-cli.mjs: a few chunks instead of ~100 modules, a
// command starts ~70 ms sooner) when that bundle is at least as new as the build it was made from;
// else the built modules themselves (dist/cli). Same code either way.
function bundleIsFresh() {
  try {
    return statSync(new URL('../dist/cli/bundle/main.js', import.meta.url)).mtimeMs >= statSync(new URL('../dist/cli/main.js', import.meta.url)).mtimeMs;
  } catch {
    return false;
  }
}
const cli = bundleIsFresh()
  ? {
      exit: () => import('../dist/cli/bundle/exit.js'),
      main: () => import('../dist/cli/bundle/main.js'),
    }
  : {
      exit: () => import('../dist/cli/exit.js'),
      main: () => import('../dist/cli/main.js'),
    };
const { EXIT } = await cli.exit();

// No V8 flags are set here: the CLI runs with V8's own heap sizing, as the library does in any
// `node` process.
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
