#!/usr/bin/env node
import { main } from '../dist/cli/main.js';

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
    process.exitCode = 3;
  },
);
