import { existsSync, lstatSync, readdirSync, statSync, type Stats } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileSource, MemorySource, fileKind, notRegularFile } from '../physical/source.js';
import { decodeSegment, storageIdentityRefusal } from './layout.js';
import { DEFAULT_COMPRESSION, findSessionById, otherCompressionHint, type Compression } from './host-open.js';
import { LogError, UsageError } from './errors.js';
import type { Encoding, SessionHeader } from './types.js';
import { resolveZipTarget } from './zip-target.js';
import type { ResolvedTarget } from './resolved-target.js';
import { ARTIFACT_NAMES, inDshLayout, isInside, realish } from '../core/paths.js';

export type { ResolvedTarget };
import { toJson } from '../core/json.js';
import { parseHeaderRecord } from './header.js';
import { ZSTD_MAGIC } from '../physical/zstd-frames.js';

/** DSH's default session root: `$DSH_HOME/sessions`, else `~/.dsh/sessions`. */
export function defaultRoot(env: NodeJS.ProcessEnv = process.env): string {
  const home = env['DSH_HOME'];
  return home && home.length > 0 ? path.join(home, 'sessions') : path.join(os.homedir(), '.dsh', 'sessions');
}

export { ARTIFACT_NAMES };

/** Most bytes `-` reads from stdin (held in memory); a bigger input should be saved to a file. */
export const STDIN_BUDGET = 1024 * 1024 * 1024;
/** How far into stdin dsh looks for the first line before judging it. */
export const STDIN_HEADER_PROBE = 1024 * 1024;

/**
 * The bytes of stdin that decide DSH's verdict, read as a stream. An endless
 * or huge stdin is not read to its end when its first bytes already decide:
 * - not the zstd magic, and a complete first line that DSH's header parser
 *   refuses: the verdict is that line's, whatever follows (the line is returned);
 * - not the zstd magic, no LF in the first STDIN_HEADER_PROBE bytes and a first
 *   non-blank byte that cannot begin a header object: no header can follow;
 *   those bytes are returned and read as the header-less log they are.
 * Past STDIN_BUDGET bytes without a verdict, an I/O error (exit 2).
 */
export async function readStdin(stream: AsyncIterable<Buffer | string> = process.stdin, budget = STDIN_BUDGET): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  let probing = true;
  const stop = () => (stream as { destroy?: () => void }).destroy?.();
  for await (const piece of stream) {
    const chunk = typeof piece === 'string' ? Buffer.from(piece) : piece;
    chunks.push(chunk);
    total += chunk.length;
    if (probing) {
      const head = Buffer.concat(chunks, total).subarray(0, STDIN_HEADER_PROBE);
      const decided = head.length >= 4 ? stdinVerdictBytes(head) : undefined;
      if (decided === 'read-all') probing = false;
      else if (decided) {
        stop();
        return decided;
      }
    }
    if (total > budget) {
      stop();
      throw new UsageError(`stdin is larger than dsh's ${budget / (1024 * 1024)} MiB stdin budget and its first bytes do not decide the verdict: save it to a file and name the file`, 'io');
    }
  }
  return Buffer.concat(chunks, total);
}

/** See `readStdin`: the deciding prefix, 'read-all' when only the whole input decides, undefined when more bytes are needed. */
function stdinVerdictBytes(head: Buffer): Buffer | 'read-all' | undefined {
  if (head.readUInt32LE(0) === ZSTD_MAGIC) return 'read-all';
  const nl = head.indexOf(0x0a);
  if (nl !== -1) {
    const record = head.subarray(0, nl + 1);
    try {
      parseHeaderRecord(record, '-');
    } catch (error) {
      if (error instanceof LogError) return record;
    }
    return 'read-all';
  }
  if (head.length < STDIN_HEADER_PROBE) return undefined;
  let i = 0;
  while (i < head.length && (head[i] === 0x20 || head[i] === 0x09 || head[i] === 0x0d)) i++;
  if (i < head.length && head[i] !== 0x7b) return head;
  return 'read-all';
}

export { inDshLayout, isInside, realish };

function fileTarget(file: string): ResolvedTarget {
  const abs = path.resolve(file);
  const out: ResolvedTarget = { path: abs, rawPath: abs, open: () => new FileSource(abs), layoutWarnings: [] };
  // Only a file inside DSH's layout names its session by its folder; a copied-out
  // artifact is read on its own terms.
  if (inDshLayout(abs)) {
    const sessionDir = path.dirname(abs);
    out.expectedId = decodeSegment(path.basename(sessionDir));
    out.root = path.dirname(path.dirname(sessionDir));
  }
  return out;
}

/** Artifacts inside one session directory; DSH rejects a directory holding both encodings. */
function artifactInDir(dir: string): string | undefined {
  const present = ARTIFACT_NAMES.filter((n) => existsSync(path.join(dir, n)));
  if (present.length === 2) {
    const raw = path.join(dir, 'session.jsonl');
    throw new LogError(
      `session artifact ${toJson(raw)} uses .jsonl, but this backend is configured for compression "zstd"; use a separate root or select the matching compression mode`,
      { kind: 'corrupt', rule: 'DSH-A11' },
    );
  }
  return present[0] !== undefined ? path.join(dir, present[0]) : undefined;
}

export interface RootSession {
  id: string;
  path: string;
  projectDir: string;
  encoding: Encoding;
}

export interface RootScan {
  root: string;
  sessions: RootSession[];
  /** DSH's layout rejections found while walking (flat files, mixed encodings). */
  problems: { path: string; message: string }[];
}

function safeStat(p: string): Stats | undefined {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

/**
 * Walk a root in DSH's layout: project directories directly under it, session
 * directories directly under those. Links are never followed out of the root.
 */
export function scanRoot(root: string): RootScan {
  const abs = path.resolve(root);
  const sessions: RootSession[] = [];
  const problems: RootScan['problems'] = [];
  let projects: string[];
  try {
    projects = readdirSync(abs).sort();
  } catch (error) {
    throw new UsageError(`cannot read session root ${abs}: ${(error as Error).message}`, 'io');
  }
  for (const project of projects) {
    const pdir = path.join(abs, project);
    const pst = safeStat(pdir);
    if (!pst || !pst.isDirectory()) continue;
    let entries: string[];
    try {
      entries = readdirSync(pdir).sort();
    } catch {
      continue;
    }
    for (const entry of entries) {
      const p = path.join(pdir, entry);
      const st = safeStat(p);
      if (!st) continue;
      if (st.isFile() && (entry.endsWith('.jsonl') || entry.endsWith('.jsonl.zstd'))) {
        problems.push({
          path: p,
          message: `session artifact ${toJson(p)} uses the unsupported flat-file layout; use a separate root or move it into a project/session directory before loading`,
        });
        continue;
      }
      if (!st.isDirectory()) continue;
      const present = ARTIFACT_NAMES.filter((n) => {
        const artifact = path.join(p, n);
        if (!safeStat(artifact)) return false;
        // Follow a symlinked session file as DSH's open() does; report and skip
        // anything that is not a regular file (a FIFO would block a reader).
        let s: Stats | undefined;
        try {
          s = statSync(artifact);
        } catch {
          s = undefined;
        }
        if (s?.isFile()) return true;
        problems.push({ path: artifact, message: s ? (s.isDirectory() ? notRegularFile(artifact, s).message : `not a regular file (${fileKind(s)}): skipped`) : 'dangling symbolic link: skipped' });
        return false;
      });
      if (present.length === 0) continue;
      if (present.length === 2) {
        const raw = path.join(p, 'session.jsonl');
        problems.push({
          path: raw,
          message: `session artifact ${toJson(raw)} uses .jsonl, but this backend is configured for compression "zstd"; use a separate root or select the matching compression mode`,
        });
      }
      const name = present[0] as string;
      sessions.push({
        id: decodeSegment(entry),
        path: path.join(p, name),
        projectDir: project,
        encoding: name.endsWith('.zstd') ? 'zstd' : 'none',
      });
    }
  }
  return { root: abs, sessions, problems };
}

/** Is this directory a session root (project dirs with session dirs below)? */
export function looksLikeRoot(dir: string): boolean {
  try {
    return scanRoot(dir).sessions.length > 0 && artifactInDir(dir) === undefined;
  } catch {
    return false;
  }
}

/** How to resolve a target: the root for ids, the backend compression, a forced encoding, stdin bytes. */
export interface ResolveOptions {
  root?: string;
  /** A target given by id: the compression DSH's backend is configured for (DSH's default: zstd). */
  compression?: Compression;
  /** `--encoding`: read the bytes as this encoding, whatever the name says. */
  encoding?: Encoding;
  /** Bytes already read from stdin for `-`. */
  stdin?: Buffer;
  /** The target is a session id (the library's `{ id }`), never a path: it is only looked up under the root. */
  id?: boolean;
}

/**
 * Resolve a command-line target: an artifact file, a session directory, `-`
 * (stdin), or a session id looked up under the root exactly as DSH's
 * `findLog` does (every project directory; duplicates are an error).
 */
export function resolveTarget(target: string, options: ResolveOptions = {}): ResolvedTarget {
  const resolved = resolveTargetByName(target, options);
  const forced = options.encoding;
  if (forced === undefined) return resolved;
  const open = resolved.open;
  return {
    ...resolved,
    encoding: forced,
    open: () => {
      const source = open();
      source.encoding = forced;
      return source;
    },
  };
}

function resolveTargetByName(target: string, options: ResolveOptions): ResolvedTarget {
  if (options.id === true) return resolveIdTarget(target, options, false);
  const zip = target === '-' ? undefined : resolveZipTarget(target);
  if (zip) return zip;
  if (target === '-') {
    const bytes = options.stdin ?? Buffer.alloc(0);
    return { path: '-', rawPath: '-', open: () => new MemorySource('-', bytes), layoutWarnings: [] };
  }
  let st: Stats | undefined;
  try {
    st = statSync(target);
  } catch {
    st = undefined;
  }
  if (st?.isFile()) return fileTarget(target);
  if (st && !st.isDirectory()) throw new UsageError(notRegularFile(target, st).message, 'io');
  if (st?.isDirectory()) {
    const file = artifactInDir(target);
    if (file) return fileTarget(file);
    if (looksLikeRoot(target)) {
      throw new UsageError(`${target} is a session root, not a session: name a session id with --root ${target}, or list it with \`dsh ls ${target}\``);
    }
    throw new UsageError(`no session.jsonl or session.jsonl.zstd in ${target}`, 'io');
  }
  // A target that could name a file is first a path, unless a root was given for it: then a
  // missing target is a missing session, in DSH's words, as for any other id.
  const couldBePath = options.root === undefined && (target.includes('/') || target.endsWith('.zstd') || target.endsWith('.jsonl'));
  return resolveIdTarget(target, options, couldBePath);
}

/** The session `target` names as an id under the root, as DSH's backend finds it (see resolveTarget). */
function resolveIdTarget(target: string, options: ResolveOptions, couldBePath: boolean): ResolvedTarget {
  const root = path.resolve(options.root ?? defaultRoot());
  const compression = options.compression ?? DEFAULT_COMPRESSION;
  let file: string;
  try {
    file = findSessionById(root, target, compression);
  } catch (error) {
    const hint = otherCompressionHint(error, root, target, compression);
    if (hint !== undefined) (error as LogError | UsageError).note = hint;
    if (couldBePath && error instanceof UsageError && error.kind === 'io') {
      throw new UsageError(`cannot open ${target}: no such file or directory, and no session with that id under ${root}`, 'io');
    }
    throw error;
  }
  // The lookup only finds the configured encoding's file name, so the name-based codec is the configured one.
  const resolved = fileTarget(file);
  resolved.expectedId = target;
  resolved.root = root;
  resolved.storedAt = { root, path: file, expectedId: target, encoding: compression };
  return resolved;
}

/**
 * DSH's storage identity check (§1.4), reported as warnings for a file read
 * by path (a target given by id is refused by it instead, and a header DSH
 * cannot place is refused either way).
 */
export function identityWarnings(target: ResolvedTarget, meta: SessionHeader, encoding: Encoding): string[] {
  if (target.storedAt !== undefined || target.expectedId === undefined || target.root === undefined) return [];
  const finding = storageIdentityRefusal(meta, target.rawPath, { root: target.root, path: path.resolve(target.path), expectedId: target.expectedId, encoding });
  return finding && finding.rule !== 'DSH-A3' ? [finding.message] : [];
}
