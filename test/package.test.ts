/**
 * dsh as a package: `npm pack`, install the tarball into a temporary project,
 * and use the public API from TypeScript (type-checked with tsc against the
 * shipped declarations) and from plain ESM, on corpus sessions, comparing with
 * the values DSH computed (expected.json).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORPUS, HAVE_CORPUS, PROJECT_ROOT, SKIP_REASON } from './helpers/corpus.js';

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const TSC = path.join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const SESSION = 'synthetic/root-zstd/--home-dsh-synthetic-project--/syn.compaction-double';
const TORN = 'synthetic/damaged/torn-final-frame-half/root-zstd/--home-dsh-synthetic-project--/syn.headers-multistep';
const CORRUPT = 'synthetic/damaged/checksum-corrupt-middle-frame/root-zstd/--home-dsh-synthetic-project--/syn.headers-multistep';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

let dir = '';
let source = '';
let files: string[] = [];

/** A copy of the project's sources to pack from (its node_modules linked, no dist/, .git or bench output). */
function packSource(): string {
  const copy = mkdtempSync(path.join(os.tmpdir(), 'dsh-pack-source-'));
  const skip = new Set(['node_modules', '.git', 'dist', 'bench', 'build']);
  cpSync(PROJECT_ROOT, copy, { recursive: true, filter: (from) => !skip.has(path.relative(PROJECT_ROOT, from).split(path.sep)[0] as string) });
  symlinkSync(path.join(PROJECT_ROOT, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
  return copy;
}
/** mtime (ns) of every file of the working tree's dist/ before packing: other test files spawn it meanwhile. */
let distBefore = new Map<string, bigint>();

function distTimes(): Map<string, bigint> {
  const root = path.join(PROJECT_ROOT, 'dist');
  const out = new Map<string, bigint>();
  if (!existsSync(root)) return out;
  for (const rel of readdirSync(root, { recursive: true }) as string[]) {
    const st = statSync(path.join(root, rel), { bigint: true });
    if (st.isFile()) out.set(rel, st.mtimeNs);
  }
  return out;
}

function expected(rel: string): any {
  return JSON.parse(readFileSync(path.join(CORPUS, rel, 'expected.json'), 'utf8'));
}

function artifact(rel: string): string {
  return path.join(CORPUS, rel, 'session.jsonl.zstd');
}

describe('the packed package', () => {
  beforeAll(() => {
    distBefore = distTimes();
    dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-package-'));
    // `prepare` builds dist/ as part of packing: in a copy of the project, never in the working tree,
    // whose dist/ other test files run meanwhile (tsc rewrites each file in place).
    source = packSource();
    const out = execFileSync(NPM, ['pack', '--json', '--pack-destination', dir], { cwd: source, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const packed = JSON.parse(out.slice(out.indexOf('[')))[0];
    files = packed.files.map((f: { path: string }) => f.path);
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'dsh-consumer', version: '1.0.0', private: true, type: 'module' }));
    // Offline from npm's cache when it has everything, else the registry for what it lacks.
    const install = (mode: string) =>
      spawnSync(NPM, ['install', mode, '--no-audit', '--no-fund', '--ignore-scripts', path.join(dir, packed.filename)], { cwd: dir, encoding: 'utf8' });
    let r = install('--offline');
    if (r.status !== 0) r = install('--prefer-offline');
    if (r.status !== 0) throw new Error(`npm install of the tarball failed:\n${r.stderr}`);
    for (const f of ['consumer.mts', 'consumer.mjs', 'misuse.mts']) copyFileSync(path.join(PROJECT_ROOT, 'test', 'package', f), path.join(dir, f));
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          // The shipped declarations are checked too.
          skipLibCheck: false,
          typeRoots: [path.join(PROJECT_ROOT, 'node_modules', '@types')],
          types: ['node'],
          outDir: 'out',
        },
        files: ['consumer.mts'],
      }),
    );
  }, 300_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (source) rmSync(source, { recursive: true, force: true });
  });

  it('packs without rewriting the working tree\'s dist/ (other test files spawn the CLI from it meanwhile)', () => {
    expect(distBefore.size).toBeGreaterThan(50);
    const changed = [...distTimes()].filter(([rel, t]) => distBefore.get(rel) !== t).map(([rel]) => rel);
    expect(changed).toEqual([]);
  });

  it('ships the library and the CLI, not the generators, tests or sources', () => {
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/index.d.ts');
    expect(files).toContain('bin/dsh.js');
    // The CLI bundle bin/dsh.js runs (built by `prepare`; packed files share one mtime, so it counts as fresh).
    expect(files).toContain('dist/cli/bundle/main.js');
    // The price table ships, and the installed library finds it.
    expect(files).toContain('data/prices.json');
    const prices = spawnSync(process.execPath, ['--input-type=module', '-e', "const m = await import('dsh'); const t = m.loadPriceTable(); console.log(JSON.stringify({ n: t.entries.length, file: t.file }))"], { cwd: dir, encoding: 'utf8' });
    expect(prices.status, prices.stderr).toBe(0);
    const got = JSON.parse(prices.stdout);
    expect(got.n).toBeGreaterThan(0);
    expect(got.file).toContain(path.join('node_modules', 'dsh', 'data', 'prices.json'));
    // The official OTLP proto files ship, and the installed library encodes protobuf with them.
    expect(files).toContain('proto/opentelemetry/proto/trace/v1/trace.proto');
    const otlp = spawnSync(process.execPath, ['--input-type=module', '-e', "const m = await import('dsh'); const b = m.encodeOtlpProtobuf(m.exportRequest([], '0')); console.log(b.length)"], { cwd: dir, encoding: 'utf8' });
    expect(otlp.status, otlp.stderr).toBe(0);
    expect(Number(otlp.stdout)).toBeGreaterThan(0);
    expect(files.filter((f) => /^(tools|build|test|src|bench|scripts)\//.test(f) || /generate/.test(f))).toEqual([]);
    // `prepare` leaves tsc's incremental state in dist/ (so `npm test` after `npm ci` need not re-check): not shipped.
    expect(files.filter((f) => f.endsWith('.tsbuildinfo'))).toEqual([]);
    const pkg = JSON.parse(readFileSync(path.join(dir, 'node_modules', 'dsh', 'package.json'), 'utf8'));
    expect(pkg.exports['.'].default).toBe('./dist/index.js');
    expect(existsSync(path.join(dir, 'node_modules', 'dsh', pkg.exports['.'].types))).toBe(true);
  });

  it('ships the compiled report page, and the installed CLI inlines it into a report', () => {
    expect(files).toContain('dist/report/page/main.js');
    const page = readFileSync(path.join(dir, 'node_modules', 'dsh', 'dist', 'report', 'page', 'main.js'), 'utf8');
    const out = path.join(dir, 'incident.html');
    const incident = path.join(PROJECT_ROOT, 'fixtures', 'incident', '--home-dev-acme-api--', 'session-incident-1');
    const r = spawnSync(process.execPath, [path.join(dir, 'node_modules', 'dsh', 'bin', 'dsh.js'), 'report', incident, '-o', out], { cwd: dir, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const html = readFileSync(out, 'utf8');
    expect(html).toContain(`<script type="module">${page}</script>`);
    expect(page).toContain('dsh-events');
  });

  it('has the version the CLI prints', async () => {
    const { VERSION } = await import('../src/core/version.js');
    expect(VERSION).toBe(JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')).version);
  });

  it('rejects misuse at compile time (results must be narrowed; payloads are typed)', () => {
    const bad = spawnSync(process.execPath, [TSC, '--noEmit', '--pretty', 'false', '--strict', '--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2022', '--types', 'node', '--typeRoots', path.join(PROJECT_ROOT, 'node_modules', '@types'), 'misuse.mts'], { cwd: dir, encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
    // `.value` does not exist on the failure branch of Result.
    expect(bad.stdout).toMatch(/misuse\.mts\(5,\d+\): error TS2339: Property 'value' does not exist/);
    // tool/call's callId is typed as what the log holds, unknown until checked: it cannot be used as a number.
    expect(bad.stdout).toMatch(/misuse\.mts\(7,\d+\): error TS18046: 'e\.data\.callId' is of type 'unknown'/);
  });

  const run = (script: string) => {
    const args = [script, artifact(SESSION), '69', String(expected(SESSION).requests[3].firstChunkSeq), artifact(TORN), artifact(CORRUPT)];
    const r = spawnSync(process.execPath, args, { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${script} failed (${r.status}):\n${r.stderr}`);
    return JSON.parse(r.stdout);
  };

  const checkAgainstCorpus = (got: any) => {
    const want = expected(SESSION);
    expect(got.meta).toEqual(want.inspection.meta);
    expect(got.storedEventCount).toBe(want.inspection.storedEventCount);
    expect(got.eventCount).toBe(want.inspection.events.length);
    expect(got.closers).toEqual(want.inspection.closers);
    expect(got.trace).toEqual(want.sessionQuery.traceEvent['69']);
    const req = want.requests[3];
    expect(got.request).toEqual({ key: req.key, firstChunkSeq: req.firstChunkSeq, header: req.header, requestContext: req.requestContext, messages: req.messages });
    expect(got.callIds).toEqual(want.inspection.events.filter((e: any) => e.type === 'tool/call').map((e: any) => e.data.callId));
    // A clean, complete log: no findings at all.
    expect(got.checkCodes).toEqual([]);
    // A torn final frame: DSH truncates it (A10); its closers (R1) follow from expected's closers.
    const torn = expected(TORN);
    expect(torn.stored.tornMarker).not.toBeUndefined();
    expect(got.tornLoaded).toBe(true);
    expect(got.tornCodes).toContain('DSH-A10');
    expect(got.tornCodes.includes('DSH-R1')).toBe(torn.inspection.closers.length > 0);
    // A corrupt frame: DSH's class and exact text, as the failure of `inspect` and as check's one finding.
    const bad = expected(CORRUPT).inspection.error;
    expect(got.corruptError).toMatchObject({ class: bad.class, message: bad.message, kind: 'corrupt' });
    expect(got.corruptFindings).toHaveLength(1);
    expect(got.corruptFindings[0].message).toContain(bad.message);
    expect(got.corruptFindings[0].code).toBe('DSH-A6');
    expect(got.missing).toMatchObject({ class: 'Error', message: 'session "no-such-session" not found', kind: 'io' });
    expect(got.ruleCount).toBeGreaterThan(40);
  };

  it.skipIf(!HAVE_CORPUS)('works from TypeScript, type-checked against the shipped declarations', () => {
    const r = spawnSync(process.execPath, [TSC, '-p', 'tsconfig.json', '--pretty', 'false'], { cwd: dir, encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    checkAgainstCorpus(run(path.join('out', 'consumer.mjs')));
  });

  it.skipIf(!HAVE_CORPUS)('works from plain ESM', () => {
    checkAgainstCorpus(run('consumer.mjs'));
  });
});
