#!/usr/bin/env node
import { main } from '../dist/cli/main.js';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`dsh: internal error: ${error && error.message ? error.message : String(error)}\n`);
    process.exitCode = 3;
  },
);
