/**
 * Root listing: every session of a root in DSH's layout, read header-first
 * (the first line, or only zstd frame 0) the way DSH's JSONL `list()` does,
 * in session-query's `listSessions` order (createdAt desc, then id asc), with
 * an optional full inspection per session for health and title.
 */
import { statSync } from 'node:fs';
import { failureObject, type ErrorObject } from '../core/errors.js';
import { FileSource, MemorySource, type ByteSource } from '../physical/source.js';
import { scanFrames } from '../physical/zstd-frames.js';
import { createDecoder, type FrameDecoder } from '../physical/decoders.js';
import { parseHeaderMeta } from '../log/header.js';
import { detectEncoding } from '../log/read.js';
import { scanRoot, type RootScan } from '../log/target.js';
import { inspectTarget } from '../log/session.js';
import type { Inspection } from '../log/inspect.js';
import type { Encoding, SessionHeader } from '../log/types.js';
import { defaultJobs, runPool, workersAvailable } from '../log/pool.js';

/** session-query's `SessionRecord` for a cold (offline) session. */
export interface SessionRecord {
  header: SessionHeader;
  live: false;
  persisted: true;
}

/** Root session, fork of another, or subagent. */
export type SessionKind = 'root' | 'fork' | 'subagent';
/** How a session reads: ok, torn tail, needs crash repair, corrupt, or refused by DSH. */
export type Health = 'ok' | 'torn' | 'needs-repair' | 'corrupt' | 'refused';

/** One session of a root listing (`dsh ls`). */
export interface ListedSession {
  id: string;
  cwd: string | null;
  createdAt: number;
  kind: SessionKind;
  parentSession: string | null;
  title: string | null;
  size: number;
  encoding: Encoding;
  /** null when health was not computed (`--no-health`). */
  health: Health | null;
  /** The inspection error (corrupt/refused), when health was computed. */
  error?: ErrorObject;
  path: string;
  header: SessionHeader;
}

export interface ListingProblem {
  path: string;
  message: string;
}

/** The sessions under a root, newest first, and the artifacts DSH skips. */
export interface Listing {
  root: string;
  sessions: ListedSession[];
  /** Artifacts DSH's listing skips or rejects (no header line, layout violations, duplicates). */
  problems: ListingProblem[];
}

/** Whether a session is a root session, a fork or a subagent, from its header. */
export function sessionKind(h: Pick<SessionHeader, 'parentSession' | 'origin'>): SessionKind {
  if (h.origin === 'subagent') return 'subagent';
  return h.parentSession !== undefined ? 'fork' : 'root';
}

/** session-query `listSessions` order: createdAt desc, then id.localeCompare asc. */
export function compareSessions(a: { header: SessionHeader }, b: { header: SessionHeader }): number {
  return b.header.createdAt - a.header.createdAt || a.header.id.localeCompare(b.header.id);
}

export type FirstLine = { line: string } | { line: undefined } | { error: string };

/**
 * Longest first line the listing holds in memory (as the artifact view's first
 * line): past it, the line is still scanned for its LF, never kept.
 */
export const FIRST_LINE_BUDGET = 64 << 20;

/**
 * DSH `readFirstLine`: bytes up to the first LF; EOF without LF → no line.
 * A first line over FIRST_LINE_BUDGET is reported as such (a header is a few
 * hundred bytes), so a huge sparse file is listed in bounded memory.
 */
function firstRawLine(source: ByteSource): FirstLine {
  const chunks: Buffer[] = [];
  let kept = 0;
  let offset = 0;
  let step = 8192;
  while (offset < source.size) {
    const buf = source.read(offset, offset + step);
    if (buf.length === 0) break;
    const nl = buf.indexOf(0x0a);
    const part = nl === -1 ? buf : buf.subarray(0, nl);
    if (kept + part.length <= FIRST_LINE_BUDGET) chunks.push(nl === -1 ? Buffer.from(part) : part);
    kept += part.length;
    if (nl !== -1) {
      if (kept > FIRST_LINE_BUDGET) return { error: `first line is longer than dsh's ${FIRST_LINE_BUDGET >> 20} MiB header budget (${kept} bytes): not read as a session header` };
      return { line: Buffer.concat(chunks).toString('utf8') };
    }
    offset += buf.length;
    step = Math.min(step * 2, 1 << 20);
  }
  return { line: undefined };
}

/** DSH `readFirstZstdLine`: decode only the first complete frame; it must be exactly one line. */
async function firstZstdLine(source: ByteSource, decoder: FrameDecoder): Promise<FirstLine> {
  let have = 0;
  let step = 8192;
  while (have < source.size) {
    have = Math.min(source.size, have + step);
    step *= 2;
    const prefix = source.read(0, have);
    let first;
    try {
      // A prefix ends inside some frame: scanFrames reports it as torn, not corrupt.
      first = scanFrames(new MemorySource(source.name, prefix)).frames[0];
    } catch (error) {
      return { error: (error as Error).message };
    }
    if (first === undefined) continue;
    let plaintext: Buffer;
    try {
      plaintext = await decoder.decode(prefix.subarray(first.start, first.end));
    } catch {
      return { error: 'corrupt Zstandard session log: header frame failed validation' };
    }
    if (plaintext.length === 0 || plaintext.indexOf(0x0a) !== plaintext.length - 1) {
      return { error: 'corrupt Zstandard session log: first frame is not exactly one header line' };
    }
    return { line: plaintext.subarray(0, -1).toString('utf8') };
  }
  return { line: undefined };
}

/** Read a session artifact's header the cheap way (first line / frame 0 only). */
export async function readHeaderCheap(
  path: string,
  encoding: Encoding,
  decoder: FrameDecoder = createDecoder('auto'),
): Promise<{ header: SessionHeader } | { header: undefined; reason: string }> {
  const source = new FileSource(path);
  try {
    return await readHeaderFromSource(source, encoding, decoder);
  } finally {
    source.close();
  }
}

/** The header of any byte source (encoding detected by magic when not given). */
export async function readHeaderFromSource(
  source: ByteSource,
  encoding?: Encoding,
  decoder: FrameDecoder = createDecoder('auto'),
): Promise<{ header: SessionHeader } | { header: undefined; reason: string }> {
  const enc = encoding ?? detectEncoding(source).encoding;
  const first = enc === 'zstd' ? await firstZstdLine(source, decoder) : firstRawLine(source);
  if ('error' in first) return { header: undefined, reason: first.error };
  if (first.line === undefined) return { header: undefined, reason: 'no complete header line (empty or half-written file); DSH does not list it' };
  const header = parseHeaderMeta(first.line);
  if (!header) return { header: undefined, reason: 'first line is not a session header; DSH does not list it' };
  return { header };
}

/** A session's health from its inspection: refused, corrupt, torn, needs repair, or ok (the one rule `ls`, the report and datasets use). */
export function healthOf(r: Inspection): Health {
  if (r.error) return r.error.kind === 'refused' ? 'refused' : 'corrupt';
  if (r.torn) return 'torn';
  if (r.closers.length > 0) return 'needs-repair';
  return 'ok';
}

export interface ListOptions {
  /** Run a full inspection per session for health and title (default true). */
  health?: boolean;
  decoder?: FrameDecoder;
  cwd?: string;
  kind?: SessionKind[];
  /** Only sessions created at or after this epoch-ms. */
  since?: number;
  /** Worker threads for the health pass (default: available parallelism; 1 = in-process). */
  jobs?: number;
}

/** Every session's record in the root, in listSessions order (headers only). */
export async function sessionRecords(
  root: string,
  decoder?: FrameDecoder,
): Promise<{ root: string; records: SessionRecord[]; paths: Map<string, string>; problems: ListingProblem[]; scan: RootScan }> {
  const scan = scanRoot(root);
  const problems: ListingProblem[] = [...scan.problems];
  const records: SessionRecord[] = [];
  const paths = new Map<string, string>();
  for (const s of scan.sessions) {
    let read;
    try {
      read = await readHeaderCheap(s.path, s.encoding, decoder);
    } catch (error) {
      problems.push({ path: s.path, message: (error as Error).message });
      continue;
    }
    if (!read.header) {
      problems.push({ path: s.path, message: read.reason });
      continue;
    }
    if (paths.has(read.header.id)) {
      problems.push({ path: s.path, message: `duplicate JSONL session id "${read.header.id}" appears in multiple project directories` });
      continue;
    }
    if (read.header.id !== s.id) {
      problems.push({ path: s.path, message: `corrupt session log "${s.path}": requested id "${s.id}" does not match header id "${read.header.id}"` });
    }
    paths.set(read.header.id, s.path);
    records.push({ header: read.header, live: false, persisted: true });
  }
  records.sort(compareSessions);
  return { root: scan.root, records, paths, problems, scan };
}

/** `dsh ls`: the root's sessions, newest first, filtered, with health when asked. */
export async function listSessions(root: string, options: ListOptions = {}): Promise<Listing> {
  const decoder = options.decoder ?? createDecoder('auto');
  const listed = await sessionRecords(root, decoder);
  const { records, paths, problems } = listed;
  const scan = new Map(listed.scan.sessions.map((s) => [s.path, s]));
  const out: ListedSession[] = [];
  for (const record of records) {
    const h = record.header;
    const kind = sessionKind(h);
    if (options.cwd !== undefined && h.cwd !== options.cwd) continue;
    if (options.kind && !options.kind.includes(kind)) continue;
    if (options.since !== undefined && h.createdAt < options.since) continue;
    const path = paths.get(h.id) as string;
    const rs = scan.get(path);
    const entry: ListedSession = {
      id: h.id,
      cwd: h.cwd ?? null,
      createdAt: h.createdAt,
      kind,
      parentSession: h.parentSession ?? null,
      title: null,
      size: statSync(path).size,
      encoding: rs?.encoding ?? (path.endsWith('.zstd') ? 'zstd' : 'none'),
      health: null,
      path,
      header: h,
    };
    out.push(entry);
  }
  if (options.health !== false) {
    const tasks: HealthTask[] = out.map((e) => ({ path: e.path, root, expectedId: scan.get(e.path)?.id ?? e.id }));
    const jobs = Math.min(options.jobs ?? defaultJobs(), tasks.length);
    let results: (SessionHealth | undefined)[] = [];
    let failed = tasks.map((_t, i) => i);
    if (jobs > 1 && tasks.length >= 4 && workersAvailable(import.meta.url)) {
      ({ results, failed } = await runPool<HealthTask, SessionHealth>(new URL('./health-worker.js', import.meta.url), tasks, { jobs, workerData: { decoder: decoder.name } }));
    }
    for (const i of failed) results[i] = await sessionHealth(tasks[i]!, decoder);
    out.forEach((entry, i) => {
      const r = results[i]!;
      entry.health = r.health;
      entry.title = r.title;
      if (r.error) entry.error = r.error;
    });
  }
  return { root: listed.root, sessions: out, problems };
}

/** One session for `sessionHealth` (plain data: it crosses to a worker thread). */
export interface HealthTask {
  path: string;
  root: string;
  expectedId: string;
}

export interface SessionHealth {
  health: Health;
  title: string | null;
  error?: ErrorObject;
}

/** Health and title of one session, in one streaming pass (memory bounded by the surface, not the log). */
export async function sessionHealth(task: HealthTask, decoder?: FrameDecoder): Promise<SessionHealth> {
  let title: string | null = null;
  const r = await inspectTarget(
    { path: task.path, rawPath: task.path, open: () => new FileSource(task.path), layoutWarnings: [], root: task.root, expectedId: task.expectedId },
    {
      ...(decoder ? { decoder } : {}),
      collect: false,
      skipArtifact: true,
      onLogical: (e) => {
        if (e.type === 'session/title') title = typeof e.data?.title === 'string' ? e.data.title : null;
      },
    },
  );
  // readTitle looks at the logical log, synthetic closers included (never titles).
  return { health: healthOf(r), title: r.error ? null : title, ...(r.error ? { error: failureObject(r.error) } : {}) };
}
