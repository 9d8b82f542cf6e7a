// A live DSH writer for the --follow tests, run as a child process:
//   node live-writer.mjs <source artifact> <target> <none|zstd> <seed> [gate directory]
// It replays the source's stored events into <target> with the project's own
// DSH-layout encoder (header, then one durable append per batch: a zstd frame
// or raw lines) at varying speeds, then crashes mid-append (half a frame or
// half a line), waits, repairs the log exactly as DSH's load() would (the
// project's repair plan: truncate, re-append recovered events and closers)
// and resumes with one more turn. Prints "done <events>" when finished.
// With a gate directory, the states a reader must see (the first batch, a tool call
// open, a torn tail) are held until the test creates the file `<gate>/<state>`, after the
// writer printed "hold <state>", instead of for a fixed time (a loaded machine's
// watcher may take longer than that to read the log).
import { appendFileSync, existsSync, truncateSync } from 'node:fs';
import path from 'node:path';
import { ArtifactEncoder, batchPlaintext } from '../../dist/log/writer.js';
import { compressFrame } from '../../dist/physical/encoder.js';
import { inspectTarget } from '../../dist/log/session.js';
import { resolveTarget } from '../../dist/log/target.js';

const [source, target, encoding, seedText, gate] = process.argv.slice(2);
let seed = Number(seedText ?? 1) >>> 0;
const rand = () => {
  seed = (seed * 1664525 + 1013904223) >>> 0;
  return seed / 2 ** 32;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Hold in `state` for `ms`, or, with a gate, until the test opens it (at most two minutes). */
const hold = async (state, ms) => {
  if (!gate) return sleep(ms);
  process.stdout.write(`hold ${state}\n`);
  for (const end = Date.now() + 120_000; !existsSync(path.join(gate, state)) && Date.now() < end; ) await sleep(10);
};

const src = await inspectTarget(resolveTarget(source), { collect: true });
const header = { ...src.meta };
const stored = src.events.slice(0, src.storedEventCount);
const enc = new ArtifactEncoder({ header, encoding });
appendFileSync(target, await enc.header());
process.stdout.write('started\n');

// Batches of 1-40 events, also cut after each tool/call (DSH's harness makes a
// call durable before the tool runs); the last batch is the one the crash tears.
const batches = [];
for (let i = 0; i < stored.length; ) {
  let n = 1 + Math.floor(rand() * 40);
  const call = stored.findIndex((e, k) => k >= i && e.type === 'tool/call');
  if (call >= 0 && call - i + 1 < n) n = call - i + 1;
  batches.push(stored.slice(i, i + n));
  i += n;
}
const torn = batches.pop();
let held = false;
const open = new Set();
let first = true;
for (const batch of batches) {
  appendFileSync(target, await enc.batch(batch));
  process.stdout.write(`w ${batch[batch.length - 1].seq} ${Date.now()}\n`);
  // With a gate, the rest waits until the reader shows it read this first batch (a loaded machine's
  // reader may start after a writer that does not wait has finished).
  if (first) {
    first = false;
    if (gate) await hold('first', 0);
  }
  // Hold once while a tool call is open (a watcher must see it), as a slow tool would.
  for (const e of batch) {
    if (e.type === 'tool/call') open.add(e.data.callId);
    if (e.type === 'tool/result') open.delete(e.data.message?.source?.callId);
  }
  if (!held && open.size > 0) {
    held = true;
    await hold('open-call', 300);
    continue;
  }
  // Varying speeds: bursts with no pause, short pauses, and a few long ones.
  const r = rand();
  if (r < 0.5) continue;
  await sleep(r < 0.9 ? 5 + Math.floor(rand() * 30) : 150 + Math.floor(rand() * 200));
}

// Crash mid-append: half of the next frame (or line) reaches the disk.
const whole = await enc.batch(torn);
const half = whole.subarray(0, Math.max(1, Math.floor(whole.length / 2)));
appendFileSync(target, half);
process.stdout.write('crashed\n');
await hold('torn', 600);

// Restart: DSH's load() truncates the torn tail and appends what it recovered plus the closers.
const plan = (await inspectTarget(resolveTarget(target), { collect: true })).repairPlan;
if (!plan || !plan.writes) throw new Error('expected a repair plan');
if (plan.truncateTo !== null) truncateSync(target, plan.truncateTo);
const text = Buffer.from(plan.appendText, 'utf8');
appendFileSync(target, plan.appendAs === 'zstd-frame' ? await compressFrame(text) : text);
process.stdout.write('repaired\n');
await sleep(300);

// Resume: one more turn, appended as DSH appends a batch.
const after = await inspectTarget(resolveTarget(target), { collect: true });
let seq = after.events.length;
const lastTurn = Math.max(0, ...after.events.filter((e) => e.type === 'turn/start').map((e) => e.data.turn));
const t0 = after.events[after.events.length - 1].time + 1000;
const ev = (type, data, extra = {}) => ({ type, seq: seq, time: t0 + seq++, data, ...extra });
const resume = [
  ev('turn/start', { turn: lastTurn + 1 }),
  ev('user/message', { content: [{ type: 'text', text: 'Carry on after the crash.' }], source: { kind: 'user' }, role: 'user', id: 'resume-user-1' }, { surfaceOp: 'append' }),
  ev('turn/end', { turn: lastTurn + 1, reason: { kind: 'completed' } }),
];
for (const e of resume) {
  const plain = batchPlaintext([e]);
  appendFileSync(target, encoding === 'zstd' ? await compressFrame(plain) : plain);
  await sleep(40);
}
process.stdout.write(`done ${seq}\n`);
