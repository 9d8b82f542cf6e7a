// One library call as a user's script makes it, timed by bench/run.js beside the same CLI command:
//   node bench/library.mjs <view> <log> [seq]
// opens the log with openSession() (the session index as the environment configures it, like the CLI)
// and asks one view; the answer is serialised as --json would print it, then discarded.
import { openSession } from '../dist/index.js';

const [view, file, arg] = process.argv.slice(2);
const opened = await openSession(file);
if (!opened.ok) throw new Error(`${opened.error.class}: ${opened.error.message}`);
const s = opened.value;
const seq = Number(arg);
const r =
  view === 'inspect' ? await s.inspect()
  : view === 'trace' ? await s.trace(seq)
  : view === 'request' ? await s.request(seq)
  : view === 'surface' ? await s.surface()
  : undefined;
if (!r) throw new Error(`unknown view ${view}`);
if (!r.ok) throw new Error(`${r.error.class}: ${r.error.message}`);
let bytes = 0;
// Serialised as --json prints it (in pieces for inspect, whose events may pass a string's length).
if (view === 'inspect') for (const e of r.value.events) bytes += JSON.stringify(e).length;
else bytes = JSON.stringify(view === 'surface' ? r.value.messages : r.value).length;
s.close();
process.stdout.write(`${bytes}\n`);
