#!/usr/bin/env node
// dsh benchmark. Build first (npm run build && npm run build:tools), then:
//   node --expose-gc bench/run.js                      # 50MB
//   DSH_BENCH_SIZES=50MB,500MB,2GB node --expose-gc bench/run.js
// See bench/README.md.

import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeGeneratedArtifact, generateArtifact } from '../build/tools/generate.js';
import { sessionPath } from '../dist/log/layout.js';
import { readArtifact } from '../dist/log/read.js';
import { FileSource } from '../dist/physical/source.js';
import { scanFrames } from '../dist/physical/zstd-frames.js';
import { createDecoder } from '../dist/physical/decoders.js';
import { FactsWriter } from '../dist/log/facts.js';
import { PARALLEL_GROUP_BYTES } from '../dist/log/parallel.js';
import { inspectSource } from '../dist/log/inspect.js';

// --- what to measure ---------------------------------------------------------

/** dsh commands run as `node bin/dsh.js ...args <file>`; add rows as commands land. */
const COMMANDS = [
  ['inspect', '{file}'],
  ['inspect', '{file}', '--json'],
  ['events', '{file}', '--json'],
  ['events', '{file}', '--json', '--no-labels'],
  ['check', '{file}'],
  ['secrets', '{file}'],
  ['check', '{file}', '--secrets'],
  ['frames', '{file}'],
  ['request', '{file}', '{lastDispatch}', '--json'],
  ['trace', '{file}', '{lastSummary}', '--json'],
  ['surface', '{file}', '--json'],
  // Views printed with the final fold at hand while the log is re-read (peak RSS is the point).
  ['transcript', '{file}', '--json'],
  ['history', '{file}', '--all-pages', '--json'],
  ['compactions', '{file}', '--json'],
  // replay streams its attempts (a plan, then one re-read); diff walks both logs side by side (here the log against itself).
  ['replay', '{file}', '--json'],
  ['diff', '{file}', '{file}', '--stat'],
];

/**
 * The library beside the CLI: `openSession(log)` then one view (bench/library.mjs), and the same CLI
 * command, each cold (no session index) and warm (the index written by a run before).
 */
const LIBRARY_VIEWS = [
  ['inspect', ['inspect', '{file}', '--json']],
  ['trace', ['trace', '{file}', '{lastSummary}', '--json'], '{lastSummary}'],
  ['request', ['request', '{file}', '{lastDispatch}', '--json'], '{lastDispatch}'],
  ['surface', ['surface', '{file}', '--json']],
];

/** Commands timed at fixed thread counts (-j 1 = one thread; the rows above run at the default, the machine's cores). */
const THREAD_COMMANDS = [['inspect', '{file}'], ['check', '{file}']];
const THREAD_COUNTS = [1, 2];

/** Indexed commands measured cold (no cache), building the session index, warm, and after appending 1% to the log. */
const CACHE_COMMANDS = [
  ['trace', '{file}', '{lastSummary}', '--json'],
  ['history', '{file}', '--json'],
  ['request', '{file}', '{lastDispatch}', '--json'],
  ['surface', '{file}', '--at', '{lastSummary}', '--json'],
  // 100 events ending at the last summary.
  ['events', '{file}', '--from', '{rangeFrom}', '--to', '{lastSummary}', '--json'],
  // The page embeds every event: written to stdout (discarded) as the log is re-read; peak RSS is the point.
  ['report', '{file}', '-o', '-'],
  // JSON streams: with the index in the cache, only the decode-and-print pass is left.
  ['events', '{file}', '--json'],
  ['inspect', '{file}', '--json'],
];

/** Commands whose time to first output is measured (spawned, killed after the first stdout bytes). */
const FIRST_OUTPUT = [
  ['events', '{file}', '--json'],
  ['events', '{file}', '--json', '--no-labels'],
  ['events', '{file}', '--no-labels'],
];

// Bump when the generator's output changes, so cached logs are regenerated.
const GENERATOR_VERSION = 2;
const SEED = 4242;

// -----------------------------------------------------------------------------

const here = path.dirname(fileURLToPath(import.meta.url));
const projectRoot = path.resolve(here, '..');
const outDir = path.join(here, 'out');
const dshBin = path.join(projectRoot, 'bin', 'dsh.js');
const RUNS = Math.max(1, Number(process.env.DSH_BENCH_RUNS ?? 1));
/** `DSH_BENCH_ONLY=cache`: only the session-index rows (cold, writing, warm, after a 1% append), into results-cache.json. */
const ONLY = process.env.DSH_BENCH_ONLY ?? '';
if (ONLY !== '' && ONLY !== 'cache') throw new Error(`DSH_BENCH_ONLY: unknown part ${JSON.stringify(ONLY)} (use cache)`);
/** `DSH_BENCH_CACHE_COMMANDS=trace,request`: the session-index rows of these commands only (default: all). */
const CACHE_ONLY = (process.env.DSH_BENCH_CACHE_COMMANDS ?? '').split(',').filter(Boolean);
/** `DSH_BENCH_COMMANDS=inspect,check`: the spawned command rows of these commands only (default: all; the 2 GB `compactions`, `transcript` and `report` rows take minutes). */
const COMMANDS_ONLY = (process.env.DSH_BENCH_COMMANDS ?? '').split(',').filter(Boolean);
const gc = () => globalThis.gc?.();

function parseSize(text) {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB)?\s*$/i.exec(text);
  if (!m) throw new Error(`bad size ${JSON.stringify(text)} (use e.g. 50MB, 2GB)`);
  const mult = { B: 1, KB: 1e3, MB: 1e6, GB: 1e9 }[(m[2] ?? 'B').toUpperCase()];
  return { label: text.trim().toUpperCase(), bytes: Math.round(Number(m[1]) * mult) };
}

const mb = (n) => n / 1e6;
const fmt = (n, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : String(n));

function which(cmd) {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

/** Seqs the targeted commands ask for: the last dispatch's first chunk and the last compaction checkpoint. */
async function landmarks(file) {
  let lastDispatch = 0;
  let lastSummary = 0;
  let prevChunkStep = '';
  let afterFinish = true;
  const source = new FileSource(file);
  try {
    await readArtifact(source, {
      onEvent: (e) => {
        if (e.type === 'assistant/chunk') {
          const step = `${e.data.turn}/${e.data.step}`;
          if (afterFinish || step !== prevChunkStep) lastDispatch = e.seq;
          afterFinish = e.data.chunk?.type === 'finish';
          prevChunkStep = step;
        } else if (e.type === 'step/start') afterFinish = true;
        else if (e.type === 'user/message' && e.surfaceOp && typeof e.surfaceOp === 'object') lastSummary = e.seq;
      },
    });
  } finally {
    source.close();
  }
  return { lastDispatch, lastSummary };
}

/** A command's placeholders: `{file}` the log, `{lastDispatch}` / `{lastSummary}` its landmarks, `{rangeFrom}` 99 events before the last summary. */
function placeholderValue(a, marks) {
  return a === '{lastDispatch}' ? marks.lastDispatch : a === '{lastSummary}' ? marks.lastSummary : a === '{rangeFrom}' ? Math.max(0, marks.lastSummary - 99) : undefined;
}

/** The command's arguments for `file`. */
function fillArgs(cmd, file, marks) {
  return cmd.map((a) => (a === '{file}' ? file : String(placeholderValue(a, marks) ?? a)));
}

/** The command as a row names it (`noted`: each landmark with what it is). */
function labelArgs(cmd, marks, noted = false) {
  const notes = { '{lastDispatch}': ' (last dispatch)', '{lastSummary}': ' (last summary)' };
  return cmd.map((a) => (a === '{file}' ? '<log>' : placeholderValue(a, marks) !== undefined ? `${placeholderValue(a, marks)}${noted ? (notes[a] ?? '') : ''}` : a)).join(' ');
}

/** Generate (or reuse) the zstd log for one size. */
async function ensureLog(size) {
  const id = `bench-${size.label}`;
  const root = path.join(outDir, 'root');
  const file = sessionPath(root, { id, cwd: '/home/dev/bench' }, 'zstd');
  const metaFile = path.join(outDir, `${id}.meta.json`);
  const want = { generatorVersion: GENERATOR_VERSION, seed: SEED, targetBytes: size.bytes };
  if (existsSync(file) && existsSync(metaFile)) {
    const meta = JSON.parse(readFileSync(metaFile, 'utf8'));
    if (
      meta.generatorVersion === want.generatorVersion &&
      meta.seed === want.seed &&
      meta.targetBytes === want.targetBytes &&
      statSync(file).size === meta.bytes
    ) {
      console.log(`reusing ${path.relative(projectRoot, file)} (${fmt(mb(meta.bytes))} MB zstd, ${fmt(mb(meta.logicalBytes))} MB logical)`);
      return { file, ...meta };
    }
  }
  rmSync(path.dirname(file), { recursive: true, force: true });
  rmSync(metaFile, { force: true });
  console.log(`generating ${size.label} of logical JSONL into ${path.relative(projectRoot, file)} …`);
  const t0 = performance.now();
  const info = await writeGeneratedArtifact(file, {
    seed: SEED,
    id,
    cwd: '/home/dev/bench',
    targetBytes: size.bytes,
    encoding: 'zstd',
  });
  const meta = {
    ...want,
    bytes: info.bytes,
    logicalBytes: info.logicalBytes,
    events: info.events,
    batches: info.batches,
    frames: info.batches + 1,
    turns: info.stats.turns,
    generatedInMs: Math.round(performance.now() - t0),
  };
  writeFileSync(metaFile, JSON.stringify(meta, null, 2) + '\n');
  console.log(`  ${fmt(mb(meta.bytes))} MB zstd, ${fmt(mb(meta.logicalBytes))} MB logical, ${meta.events} events, ${meta.frames} frames, ${fmt(meta.generatedInMs / 1000)} s`);
  return { file, ...meta };
}

/** Best-of-RUNS timing of an async in-process function. */
async function timeIt(fn) {
  let best = Infinity;
  let result;
  for (let i = 0; i < RUNS; i++) {
    gc();
    const t0 = performance.now();
    result = await fn();
    best = Math.min(best, performance.now() - t0);
  }
  gc();
  return { ms: best, result };
}

/** Baseline: walk frames, decode ~1 MiB groups with the same decoder, split lines on the Buffer, JSON.parse each. */
async function baseline(file) {
  const source = new FileSource(file);
  try {
    const decoder = createDecoder();
    const { frames } = scanFrames(source);
    let lines = 0;
    let plaintextBytes = 0;
    let group = [];
    let groupBytes = 0;
    const flush = async () => {
      if (group.length === 0) return;
      const buf = source.read(group[0].start, group[group.length - 1].end);
      const plain = await decoder.decode(buf);
      plaintextBytes += plain.length;
      let start = 0;
      for (let nl = plain.indexOf(10); nl !== -1; nl = plain.indexOf(10, start)) {
        JSON.parse(plain.toString('utf8', start, nl));
        lines++;
        start = nl + 1;
      }
      group = [];
      groupBytes = 0;
    };
    for (const f of frames) {
      if (groupBytes > 0 && groupBytes + (f.end - f.start) > 1 << 20) await flush();
      group.push(f);
      groupBytes += f.end - f.start;
    }
    await flush();
    return { lines, plaintextBytes, decoder: decoder.name };
  } finally {
    source.close();
  }
}

/** The structural frame scan alone (what `dsh frames` does before printing), in-process. */
function frameScan(file) {
  const source = new FileSource(file);
  try {
    return scanFrames(source).frames.length;
  } finally {
    source.close();
  }
}

/** Milliseconds from spawn to the first bytes on stdout (the child is then stopped). */
function firstOutput(argv) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'ignore'], cwd: projectRoot });
    let ms = null;
    child.stdout.once('data', () => {
      ms = performance.now() - t0;
      child.kill();
    });
    child.on('close', () => resolve(ms));
  });
}

/**
 * What the workers of a parallel read do for `inspect` (facts mode, src/log/facts.ts), on one
 * thread: decode the groups, decode each line, parse it and run the checks that read it alone.
 * Its time against the main thread's share gives the per-worker projection.
 */
async function workerStage(file) {
  const source = new FileSource(file);
  try {
    const decoder = createDecoder();
    const { frames } = scanFrames(source);
    let group = [];
    let groupBytes = 0;
    let lines = 0;
    const flush = async () => {
      if (group.length === 0) return;
      const plain = await decoder.decode(source.read(group[0].start, group[group.length - 1].end));
      const ends = [];
      for (let nl = plain.indexOf(0x0a); nl !== -1; nl = plain.indexOf(0x0a, nl + 1)) ends.push(nl);
      const facts = new FactsWriter(ends.length);
      let start = 0;
      ends.forEach((nl, k) => {
        facts.line(k, plain.toString('utf8', start, nl));
        start = nl + 1;
      });
      facts.done();
      lines += ends.length;
      group = [];
      groupBytes = 0;
    };
    for (const f of frames.slice(1)) {
      if (groupBytes > 0 && groupBytes + (f.end - f.start) > PARALLEL_GROUP_BYTES) await flush();
      group.push(f);
      groupBytes += f.end - f.start;
    }
    await flush();
    return { lines };
  } finally {
    source.close();
  }
}

/** CPU milliseconds this process's main thread has used (Linux /proc; null elsewhere). */
function mainThreadCpuMs() {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return null;
  }
}

/**
 * The main thread's share of a facts-mode pass: the inspect pass at -j 2 with the worker parsing
 * every group (`mainShare: 0`), timed as the main thread's own CPU time (best of the runs).
 */
async function mainStage(file) {
  let best = Infinity;
  for (let i = 0; i < RUNS; i++) {
    gc();
    const c0 = mainThreadCpuMs();
    await inspectPass(file, 2, 0);
    const c1 = mainThreadCpuMs();
    if (c0 === null || c1 === null) return null;
    best = Math.min(best, c1 - c0);
  }
  return best;
}

/** The validating pass of `inspect` in-process at `jobs` threads. */
async function inspectPass(file, jobs, mainShare) {
  const source = new FileSource(file);
  try {
    const r = await inspectSource(source, { collect: false, skipArtifact: true, jobs, ...(mainShare !== undefined ? { mainShare } : {}) });
    if (r.error) throw new Error(r.error.message);
    return { events: r.storedEventCount };
  } finally {
    source.close();
  }
}

async function readerPass(file) {
  const source = new FileSource(file);
  try {
    const out = await readArtifact(source, {});
    if (out.error) throw out.error;
    return { events: out.stored?.eventCount, decoder: out.decoder };
  } finally {
    source.close();
  }
}

/** Run a command with stdout discarded; wall time and peak RSS (KiB). */
function runMeasured(argv, { shell = false, env } = {}) {
  const timeBin = existsSync('/usr/bin/time') && !process.env.DSH_BENCH_NO_TIME ? '/usr/bin/time' : null;
  return new Promise((resolve) => {
    const t0 = performance.now();
    let cmd;
    let args;
    let rssFile;
    if (shell) {
      cmd = timeBin ?? 'sh';
      args = timeBin ? ['-v', 'sh', '-c', argv] : ['-c', argv];
    } else if (timeBin) {
      cmd = timeBin;
      args = ['-v', ...argv];
    } else {
      // Fallback: run the node program inside a wrapper that reports its own maxRSS.
      rssFile = path.join(os.tmpdir(), `dsh-bench-rss-${process.pid}-${Date.now()}.json`);
      const [nodeBin, script, ...rest] = argv;
      const wrapper =
        `import { writeFileSync } from 'node:fs';` +
        `process.on('exit', (code) => writeFileSync(${JSON.stringify(rssFile)}, JSON.stringify({ maxRSS: process.resourceUsage().maxRSS, code })));` +
        `process.argv = [process.argv[0], ${JSON.stringify(script)}, ...JSON.parse(process.env.DSH_BENCH_ARGS)];` +
        `await import(${JSON.stringify('file://' + path.resolve(script))});`;
      cmd = nodeBin;
      args = ['--input-type=module', '-e', wrapper];
      process.env.DSH_BENCH_ARGS = JSON.stringify(rest);
    }
    // Rows outside cacheRows measure the cold path: no session index is read or written.
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], cwd: projectRoot, env: { ...process.env, ...(env ?? { DSH_NO_CACHE: '1' }) } });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d.toString();
      if (stderr.length > 1 << 20) stderr = stderr.slice(-(1 << 19));
    });
    child.on('close', (code) => {
      const ms = performance.now() - t0;
      let peakRssKiB = null;
      let exitCode = code;
      const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr);
      if (m) peakRssKiB = Number(m[1]);
      const ec = /Exit status: (\d+)/.exec(stderr);
      if (ec) exitCode = Number(ec[1]);
      if (rssFile && existsSync(rssFile)) {
        const r = JSON.parse(readFileSync(rssFile, 'utf8'));
        peakRssKiB = r.maxRSS;
        rmSync(rssFile, { force: true });
      }
      const cleaned = stderr
        .split('\n')
        .filter((l) => !/^\t|^Command being timed|^\s*$/.test(l))
        .join('\n')
        .trim();
      resolve({ ms, peakRssKiB, exitCode, stderr: cleaned.slice(0, 2000) });
    });
  });
}

async function bestRun(argv, opts) {
  let best;
  for (let i = 0; i < RUNS; i++) {
    const r = await runMeasured(argv, opts);
    if (!best || (r.exitCode === 0 && r.ms < best.ms) || best.exitCode !== 0) best = r;
  }
  return best;
}

/**
 * Cold vs warm rows for the session index: each command with --no-cache, on a fresh cache (the
 * run that writes the index), warm, and on the same log with 1% more appended at the same path
 * (generated with the same seed; its first bytes are the original log's, which the row checks; its
 * target is 1% above the original's target, not its size, as the generator overshoots a target by a
 * like fraction: 1% above the size appended 1.9% on the 2 GB log):
 * the index is extended, validating only the appended bytes.
 */
async function cacheRows(log, argsOf, marks) {
  const cacheDir = path.join(outDir, 'cache');
  const grown = path.join(outDir, 'grown', path.basename(path.dirname(log.file)), 'session.jsonl.zstd');
  mkdirSync(path.dirname(grown), { recursive: true });
  rmSync(grown, { force: true });
  const info = await writeGeneratedArtifact(grown, { seed: SEED, id: path.basename(path.dirname(log.file)), cwd: '/home/dev/bench', targetBytes: Math.round(log.targetBytes * 1.01), encoding: 'zstd' });
  const original = readFileSync(log.file);
  const grownBytes = readFileSync(grown);
  const prefixEqual = grownBytes.length > original.length && grownBytes.subarray(0, original.length).equals(original);
  const out = [];
  const withCache = (extra) => ({ env: { DSH_CACHE_DIR: cacheDir, ...extra } });
  for (const cmd of CACHE_COMMANDS) {
    if (CACHE_ONLY.length > 0 && !CACHE_ONLY.includes(cmd[0])) continue;
    const args = argsOf(cmd);
    const label = `dsh ${labelArgs(cmd, marks)}`;
    const row = (name, r, extra = {}) => {
      const mbs = mb(log.logicalBytes);
      out.push({ name: `${label} [${name}]`, ms: Math.round(r.ms), mbPerSec: mbs / (r.ms / 1000), peakRssMiB: r.peakRssKiB !== null ? Math.round(r.peakRssKiB / 1024) : null, exitCode: r.exitCode, ...extra });
    };
    // Cold and index-writing runs in interleaved pairs (DSH_BENCH_RUNS of them): cold runs of one
    // command vary by more than the 10% the index may cost on a shared machine, so each writing run is
    // compared with the cold run beside it, and the median of those ratios is kept with the best times.
    let cold;
    let build;
    const pairs = [];
    for (let i = 0; i < RUNS; i++) {
      rmSync(cacheDir, { recursive: true, force: true });
      const c = await runMeasured([process.execPath, dshBin, ...args], withCache({ DSH_NO_CACHE: '1' }));
      rmSync(cacheDir, { recursive: true, force: true });
      const b = await runMeasured([process.execPath, dshBin, ...args], withCache({}));
      if (c.exitCode === 0 && b.exitCode === 0) pairs.push(b.ms / c.ms);
      if (!cold || (c.exitCode === 0 && c.ms < cold.ms) || cold.exitCode !== 0) cold = c;
      if (!build || (b.exitCode === 0 && b.ms < build.ms) || build.exitCode !== 0) build = b;
    }
    row('cold, --no-cache', cold);
    const sorted = pairs.slice().sort((x, y) => x - y);
    const median = sorted.length === 0 ? null : sorted.length % 2 === 1 ? sorted[sorted.length >> 1] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
    row('cold, writes the index', build, { vsCold: build.ms / cold.ms, vsColdPairs: pairs, vsColdMedian: median });
    const warm = await bestRun([process.execPath, dshBin, ...args], withCache({}));
    row('warm', warm, { coldOverWarm: cold.ms / warm.ms });
    // The grown log at the path whose index was written: the original bytes first (indexed, untimed), then 1% appended.
    const grownArgs = args.map((a) => (a === log.file ? grown : a));
    // A fresh cache, so an entry an earlier row's extension wrote for the grown bytes cannot answer it.
    rmSync(cacheDir, { recursive: true, force: true });
    copyFileSync(log.file, grown);
    await runMeasured([process.execPath, dshBin, ...grownArgs], withCache({}));
    writeFileSync(grown, grownBytes);
    const appended = await runMeasured([process.execPath, dshBin, ...grownArgs], withCache({}));
    row(`after appending ${((info.logicalBytes / log.logicalBytes - 1) * 100).toFixed(1)}%`, appended, { vsCold: appended.ms / cold.ms, ofCold: true, prefixEqual });
  }
  rmSync(cacheDir, { recursive: true, force: true });
  return out;
}

/** The library and the CLI side by side, cold and warm (LIBRARY_VIEWS): time and peak RSS, and the library's ratio to the CLI. */
async function libraryRows(log, argsOf, marks) {
  const cacheDir = path.join(outDir, 'cache-library');
  const libBin = path.join(here, 'library.mjs');
  const out = [];
  const rss = (r) => (r.peakRssKiB !== null ? Math.round(r.peakRssKiB / 1024) : null);
  for (const [view, cliCmd, seqMark] of LIBRARY_VIEWS) {
    if (COMMANDS_ONLY.length > 0 && !COMMANDS_ONLY.includes(view)) continue;
    const libArgs = [libBin, view, log.file, ...(seqMark ? [String(placeholderValue(seqMark, marks))] : [])];
    const cliArgs = [dshBin, ...argsOf(cliCmd)];
    for (const mode of ['cold', 'warm']) {
      const env = mode === 'cold' ? { DSH_CACHE_DIR: cacheDir, DSH_NO_CACHE: '1' } : { DSH_CACHE_DIR: cacheDir };
      rmSync(cacheDir, { recursive: true, force: true });
      if (mode === 'warm') await runMeasured([process.execPath, ...cliArgs], { env });
      const cli = await bestRun([process.execPath, ...cliArgs], { env });
      const lib = await bestRun([process.execPath, ...libArgs], { env });
      const label = labelArgs(cliCmd, marks);
      out.push({ name: `dsh ${label} [${mode}]`, ms: Math.round(cli.ms), peakRssMiB: rss(cli), exitCode: cli.exitCode });
      out.push({
        name: `library openSession + ${view}() [${mode}]`,
        ms: Math.round(lib.ms),
        peakRssMiB: rss(lib),
        exitCode: lib.exitCode,
        libraryOverCliTime: lib.ms / cli.ms,
        libraryOverCliRss: cli.peakRssKiB && lib.peakRssKiB ? lib.peakRssKiB / cli.peakRssKiB : null,
        ...(lib.exitCode !== 0 ? { failed: true, stderr: lib.stderr } : {}),
      });
    }
  }
  rmSync(cacheDir, { recursive: true, force: true });
  return out;
}

async function benchSize(size) {
  const log = await ensureLog(size);
  const logical = log.logicalBytes;
  const rows = [];
  if (ONLY === 'cache') {
    const marks = await landmarks(log.file);
    const argsOf = (cmd) => fillArgs(cmd, log.file, marks);
    rows.push(...(await cacheRows(log, argsOf, marks)));
    return { size: size.label, file: path.relative(projectRoot, log.file), zstdBytes: log.bytes, logicalBytes: logical, events: log.events, frames: log.frames, rows, firstOutputs: [] };
  }
  const add = (name, ms, extra = {}) => {
    const row = { name, ms: Math.round(ms), mbPerSec: mb(logical) / (ms / 1000), ...extra };
    rows.push(row);
    return row;
  };

  const base = await timeIt(() => baseline(log.file));
  add('baseline (decode + split + JSON.parse, in-process)', base.ms, { lines: base.result.lines, decoder: base.result.decoder });
  const rd = await timeIt(() => readerPass(log.file));
  add('readArtifact (stored view, streaming, in-process)', rd.ms, { events: rd.result.events, decoder: rd.result.decoder });

  const scan = await timeIt(async () => frameScan(log.file));
  add('structural frame scan (in-process)', scan.ms, { frames: scan.result, compressedGBPerSec: log.bytes / 1e9 / (scan.ms / 1000) });

  // Threads: the one-thread pass, the workers' share of a facts-mode pass (they parse and check
  // the lines), the main thread's share (it folds pruned events), and what N threads could reach
  // at most: the slower of the main thread and N - 1 workers sharing the worker stage.
  const one = await timeIt(() => inspectPass(log.file, 1));
  add('inspect pass, one thread (in-process)', one.ms, { events: one.result.events });
  const two = await timeIt(() => inspectPass(log.file, 2));
  add('inspect pass, -j 2: one worker parses and checks, the main thread folds and parses its share (in-process)', two.ms, { events: two.result.events });
  const stage = await timeIt(() => workerStage(log.file));
  add('worker stage alone (facts mode): decode + text + JSON.parse + line checks, one thread (in-process)', stage.ms, { lines: stage.result.lines });
  const mainCpu = await mainStage(log.file);
  const mainMs = mainCpu ?? Math.max(1, one.ms - stage.ms);
  if (mainCpu !== null) add('main thread share (facts mode): folding pruned events, its CPU time at -j 2 with the worker parsing every group', mainCpu);
  for (const n of [2, 4, 8]) {
    const ms = Math.max(mainMs, stage.ms / (n - 1));
    add(`projection: inspect pass at -j ${n} = max(main ${Math.round(mainMs)} ms, worker stage / ${n - 1})`, ms, { projected: true, perWorkerMBps: mb(logical) / (stage.ms / 1000) });
  }

  const marks = await landmarks(log.file);
  const argsOf = (cmd) => fillArgs(cmd, log.file, marks);
  for (const cmd of COMMANDS) {
    if (COMMANDS_ONLY.length > 0 && !COMMANDS_ONLY.includes(cmd[0])) continue;
    const args = argsOf(cmd);
    const r = await bestRun([process.execPath, dshBin, ...args]);
    add(`dsh ${labelArgs(cmd, marks, true)}`, r.ms, {
      peakRssMiB: r.peakRssKiB !== null ? Math.round(r.peakRssKiB / 1024) : null,
      exitCode: r.exitCode,
      ...(cmd[0] === 'frames' ? { compressedGBPerSec: log.bytes / 1e9 / (r.ms / 1000) } : {}),
      ...(r.exitCode !== 0 ? { failed: true, stderr: r.stderr } : {}),
    });
  }
  for (const cmd of THREAD_COMMANDS) {
    for (const jobs of THREAD_COUNTS) {
      const r = await bestRun([process.execPath, dshBin, ...argsOf(cmd), '-j', String(jobs)]);
      add(`dsh ${cmd.map((a) => (a === '{file}' ? '<log>' : a)).join(' ')} -j ${jobs}`, r.ms, {
        jobs,
        peakRssMiB: r.peakRssKiB !== null ? Math.round(r.peakRssKiB / 1024) : null,
        exitCode: r.exitCode,
        ...(r.exitCode !== 0 ? { failed: true, stderr: r.stderr } : {}),
      });
    }
  }
  rows.push(...(await libraryRows(log, argsOf, marks)));
  // dsh dataset over the log (fresh, then an unchanged re-run), and one dsh sql aggregate over it.
  for (const [name, run] of datasetRuns([log.file], path.join(outDir, `dataset-${size.label}`), '<log>')) {
    const r = await run();
    add(name, r.ms, { peakRssMiB: r.peakRssKiB !== null ? Math.round(r.peakRssKiB / 1024) : null, exitCode: r.exitCode, ...(r.exitCode !== 0 ? { failed: true, stderr: r.stderr } : {}) });
  }
  rows.push(...(await cacheRows(log, argsOf, marks)));
  const firstOutputs = [];
  for (const cmd of FIRST_OUTPUT) {
    const ms = await firstOutput([process.execPath, dshBin, ...argsOf(cmd)]);
    firstOutputs.push({ name: `first output of dsh ${cmd.map((a) => (a === '{file}' ? '<log>' : a)).join(' ')}`, ms: ms === null ? null : Math.round(ms) });
  }

  const zstd = which('zstd');
  const jq = which('jq');
  if (zstd) {
    const r = await bestRun(`zstd -dc -q ${JSON.stringify(log.file)} > /dev/null`, { shell: true });
    add('zstd -dc > /dev/null', r.ms, { peakRssMiB: r.peakRssKiB !== null ? Math.round(r.peakRssKiB / 1024) : null, exitCode: r.exitCode });
  }
  if (zstd && jq) {
    const r = await bestRun(`zstd -dc -q ${JSON.stringify(log.file)} | jq -c . > /dev/null`, { shell: true });
    add('zstd -dc | jq -c .', r.ms, { exitCode: r.exitCode });
  }

  const baseMs = rows[0].ms;
  for (const r of rows) r.vsBaseline = baseMs / r.ms;
  return {
    size: size.label,
    file: path.relative(projectRoot, log.file),
    zstdBytes: log.bytes,
    logicalBytes: logical,
    events: log.events,
    frames: log.frames,
    rows,
    firstOutputs,
  };
}

/** What a row's note column says (the session-index rows' ratios to the cold run). */
function noteOf(r) {
  const pct = (x) => `${x >= 1 ? '+' : ''}${((x - 1) * 100).toFixed(0)}%`;
  if (r.vsColdPairs && r.vsColdPairs.length > 1) return `vs cold: median ${pct(r.vsColdMedian)} of ${r.vsColdPairs.length} pairs (${r.vsColdPairs.map(pct).join(', ')})`;
  if (r.vsCold !== undefined) return r.ofCold ? `${fmt(r.vsCold * 100, 1)}% of a cold run` : `vs cold: ${pct(r.vsCold)}`;
  if (r.coldOverWarm !== undefined) return `cold / warm: ${fmt(r.coldOverWarm, 1)}x`;
  return '';
}

function printTable(result) {
  console.log(`\n== ${result.size}: ${fmt(mb(result.logicalBytes))} MB logical, ${fmt(mb(result.zstdBytes))} MB zstd, ${result.events} events, ${result.frames} frames`);
  const head = ['measurement', 'wall s', 'MB/s', 'x baseline', 'peak RSS MiB', 'note'];
  const lines = result.rows.map((r) => [
    r.name,
    fmt(r.ms / 1000, 2),
    fmt(r.mbPerSec, 0),
    r.vsBaseline === undefined ? "" : fmt(r.vsBaseline, 2),
    r.peakRssMiB ?? '',
    r.failed ? `FAILED (exit ${r.exitCode}): ${String(r.stderr).split('\n')[0].slice(0, 80)}` : noteOf(r),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => String(l[i]).length)));
  const row = (cells) => cells.map((c, i) => (i === 0 || i === 5 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
  console.log(row(head));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const l of lines) console.log(row(l));
  for (const r of result.rows) if (r.compressedGBPerSec) console.log(`${r.name}: ${fmt(r.compressedGBPerSec, 2)} GB/s of compressed input`);
  for (const f of result.firstOutputs ?? []) console.log(`${f.name}: ${f.ms === null ? 'no output' : `${f.ms} ms`}`);
}

/**
 * The dataset rows: a fresh build (measured once, the directory removed first), an unchanged re-run,
 * one sql aggregate. Each item is [name, run] where run() resolves to a measured run.
 */
function* datasetRuns(inputs, dir, label) {
  const dsh = (...args) => [process.execPath, dshBin, ...args];
  yield [`dsh dataset ${label} -o DIR (fresh)`, () => (rmSync(dir, { recursive: true, force: true }), runMeasured(dsh('dataset', ...inputs, '-o', dir, '--json')))];
  yield [`dsh dataset ${label} -o DIR (unchanged re-run)`, () => bestRun(dsh('dataset', ...inputs, '-o', dir, '--json'))];
  const q = 'select type, count(*) as n, sum(logical_bytes) as bytes, count(distinct session_id) as sessions from events group by 1 order by n desc';
  yield [`dsh sql <aggregate over events of ${label}>`, () => bestRun(dsh('sql', q, '--dataset', dir, '--json'))];
}

/**
 * `dsh check` over a root of many small sessions (DSH_BENCH_ROOT_SESSIONS,
 * default 10000; 0 skips): one generated 1-turn session written once, then
 * copied under N session directories (ids differ by folder; check reports the
 * identity mismatch as a warning, which is part of the work measured).
 */
async function benchRoot() {
  const n = Number(process.env.DSH_BENCH_ROOT_SESSIONS ?? 10000);
  if (!n) return null;
  const root = path.join(outDir, `root-${n}`);
  const marker = path.join(outDir, `root-${n}.done`);
  if (!existsSync(marker)) {
    rmSync(root, { recursive: true, force: true });
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const id = `small-${String(i).padStart(5, '0')}`;
      const { bytes } = await generateArtifact({ seed: 1000 + (i % 50), id, cwd: '/home/dev/fleet', createdAt: 1785000000000 + i, turns: 1, encoding: 'zstd', encoder: 'mongodb-js', randomFeatures: false, toolOutputBytes: [200, 800], verbosity: 0.1 });
      const file = sessionPath(root, { id, cwd: '/home/dev/fleet' }, 'zstd');
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, bytes);
    }
    writeFileSync(marker, String(n));
    console.log(`generated ${n} small sessions in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  const rows = [];
  for (const command of ['check', 'ls']) {
    for (const jobs of [1, os.cpus().length]) {
      const r = await bestRun([process.execPath, dshBin, command, root, '-j', String(jobs), '--json']);
      rows.push({ name: `dsh ${command} <root of ${n}> -j ${jobs}`, ms: Math.round(r.ms), sessionsPerSec: n / (r.ms / 1000), peakRssMiB: r.peakRssKiB !== null ? Math.round(r.peakRssKiB / 1024) : null, exitCode: r.exitCode });
    }
  }
  for (const [name, run] of datasetRuns([root], path.join(outDir, `dataset-root-${n}`), `<root of ${n}>`)) {
    const r = await run();
    rows.push({ name, ms: Math.round(r.ms), sessionsPerSec: n / (r.ms / 1000), peakRssMiB: r.peakRssKiB !== null ? Math.round(r.peakRssKiB / 1024) : null, exitCode: r.exitCode });
  }
  console.log(`\n== root of ${n} small sessions`);
  for (const r of rows) console.log(`${r.name.padEnd(40)} ${(r.ms / 1000).toFixed(2).padStart(7)} s  ${r.sessionsPerSec.toFixed(0).padStart(6)} sessions/s  peak RSS ${r.peakRssMiB} MiB  exit ${r.exitCode}`);
  return { sessions: n, rows };
}

async function main() {
  if (!existsSync(path.join(projectRoot, 'dist', 'log', 'read.js'))) {
    console.error('bench: build first (npx tsc -p .)');
    process.exit(2);
  }
  mkdirSync(outDir, { recursive: true });
  const sizes = (process.env.DSH_BENCH_SIZES ?? '50MB').split(',').filter(Boolean).map(parseSize);
  if (process.env.DSH_BENCH_GENERATE_ONLY) {
    for (const size of sizes) await ensureLog(size);
    return;
  }
  const results = [];
  for (const size of sizes) {
    const r = await benchSize(size);
    printTable(r);
    results.push(r);
  }
  const rootResult = ONLY ? null : await benchRoot();
  // The streaming proof (a log larger than V8's maximum string length through events --json)
  // runs with the by-hand sizes, or when asked.
  let scaleTest = null;
  if (!ONLY && (process.env.DSH_BENCH_SCALE_TEST === '1' || sizes.some((s) => s.bytes >= 1e9))) {
    console.log('\n== scale test (DSH_SLOW_TESTS=1 vitest run test/scale.test.ts)');
    const t0 = performance.now();
    const r = spawnSync(process.execPath, [path.join(projectRoot, 'node_modules', 'vitest', 'vitest.mjs'), 'run', 'test/scale.test.ts'], { cwd: projectRoot, stdio: 'inherit', env: { ...process.env, DSH_SLOW_TESTS: '1' } });
    scaleTest = { exitCode: r.status, ms: Math.round(performance.now() - t0) };
  }
  const report = {
    date: new Date().toISOString(),
    root: rootResult,
    scaleTest,
    node: process.version,
    platform: `${os.platform()} ${os.arch()}`,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    runs: RUNS,
    exposeGc: typeof globalThis.gc === 'function',
    results,
  };
  // A partial run keeps its figures apart from the full run's.
  const resultsFile = path.join(outDir, ONLY ? `results-${ONLY}.json` : 'results.json');
  writeFileSync(resultsFile, JSON.stringify(report, null, 2) + '\n');
  console.log(`\nwrote ${path.relative(projectRoot, resultsFile)}`);
  // Times are reported, never asserted; a command that fails (or crashes) fails the bench.
  const failures = [
    ...results.flatMap((r) => r.rows.filter((x) => x.exitCode !== undefined && x.exitCode !== 0).map((x) => `${r.size}: ${x.name} exited ${x.exitCode}`)),
    ...(rootResult?.rows ?? []).filter((x) => x.exitCode !== 0).map((x) => `${x.name} exited ${x.exitCode}`),
    ...(scaleTest && scaleTest.exitCode !== 0 ? [`scale test exited ${scaleTest.exitCode}`] : []),
  ];
  if (failures.length > 0) {
    console.error(`bench: ${failures.length} measurement(s) failed:\n  ${failures.join('\n  ')}`);
    process.exitCode = 1;
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
