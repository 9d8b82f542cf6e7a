import { existsSync, lstatSync, readdirSync, statSync, type Stats } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileSource, MemorySource } from '../physical/source.js';
import { decodeSegment, encodeSegment, sessionPath } from './layout.js';
import { LogError, UsageError } from './errors.js';
import type { Encoding, SessionHeader } from './types.js';
import { resolveZipTarget } from './zip-target.js';
import type { ResolvedTarget } from './resolved-target.js';

export type { ResolvedTarget };

/** DSH's default session root: `$DSH_HOME/sessions`, else `~/.dsh/sessions`. */
export function defaultRoot(env: NodeJS.ProcessEnv = process.env): string {
  const home = env['DSH_HOME'];
  return home && home.length > 0 ? path.join(home, 'sessions') : path.join(os.homedir(), '.dsh', 'sessions');
}

export const ARTIFACT_NAMES = ['session.jsonl.zstd', 'session.jsonl'] as const;

export async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function fileTarget(file: string): ResolvedTarget {
  const abs = path.resolve(file);
  const base = path.basename(abs);
  const out: ResolvedTarget = { path: abs, rawPath: abs, open: () => new FileSource(abs), layoutWarnings: [] };
  const projectName = path.basename(path.dirname(path.dirname(abs)));
  const inLayout = projectName === '_no-cwd' || (projectName.startsWith('--') && projectName.endsWith('--') && projectName.length >= 4);
  // Only a file inside DSH's layout names its session by its folder; a copied-out
  // artifact is read on its own terms.
  if ((ARTIFACT_NAMES as readonly string[]).includes(base) && inLayout) {
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
      `session artifact ${JSON.stringify(raw)} uses .jsonl, but this backend is configured for compression "zstd"; use a separate root or select the matching compression mode`,
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
          message: `session artifact ${JSON.stringify(p)} uses the unsupported flat-file layout; use a separate root or move it into a project/session directory before loading`,
        });
        continue;
      }
      if (!st.isDirectory()) continue;
      const present = ARTIFACT_NAMES.filter((n) => {
        const s = safeStat(path.join(p, n));
        return s !== undefined && s.isFile();
      });
      if (present.length === 0) continue;
      if (present.length === 2) {
        const raw = path.join(p, 'session.jsonl');
        problems.push({
          path: raw,
          message: `session artifact ${JSON.stringify(raw)} uses .jsonl, but this backend is configured for compression "zstd"; use a separate root or select the matching compression mode`,
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

export interface ResolveOptions {
  root?: string;
  /** Bytes already read from stdin for `-`. */
  stdin?: Buffer;
}

/**
 * Resolve a command-line target: an artifact file, a session directory, `-`
 * (stdin), or a session id looked up under the root exactly as DSH's
 * `findLog` does (every project directory; duplicates are an error).
 */
export function resolveTarget(target: string, options: ResolveOptions = {}): ResolvedTarget {
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
  if (st?.isDirectory()) {
    const file = artifactInDir(target);
    if (file) return fileTarget(file);
    if (looksLikeRoot(target)) {
      throw new UsageError(`${target} is a session root, not a session: name a session id with --root ${target}, or list it with \`dsh ls ${target}\``);
    }
    throw new UsageError(`no session.jsonl or session.jsonl.zstd in ${target}`, 'io');
  }
  const looksLikePath = target.includes('/') || target.endsWith('.zstd') || target.endsWith('.jsonl');
  const root = path.resolve(options.root ?? defaultRoot());
  if (!existsSync(root)) {
    if (looksLikePath) throw new UsageError(`cannot open ${target}: no such file or directory`, 'io');
    throw new UsageError(`session "${target}" not found: session root ${root} does not exist`, 'io');
  }
  const encoded = (() => {
    try {
      return encodeSegment(target);
    } catch {
      throw new UsageError(`invalid session id ${JSON.stringify(target)}`);
    }
  })();
  const matches = scanRoot(root).sessions.filter((s) => encodeSegment(s.id) === encoded);
  const dirs = [...new Set(matches.map((m) => m.projectDir))];
  if (dirs.length > 1) {
    throw new LogError(`duplicate JSONL session id "${target}" appears in multiple project directories`, { kind: 'corrupt', rule: 'DSH-A11' });
  }
  if (matches.length === 0) {
    if (looksLikePath) throw new UsageError(`cannot open ${target}: no such file or directory, and no session with that id under ${root}`, 'io');
    throw new UsageError(`session "${target}" not found under ${root}`, 'io');
  }
  const resolved = fileTarget(matches[0]!.path);
  resolved.root = root;
  return resolved;
}

/** DSH's storage identity check (§1.4), reported as warnings for forensic reads. */
export function identityWarnings(target: ResolvedTarget, meta: SessionHeader, encoding: Encoding): string[] {
  const out: string[] = [];
  if (target.expectedId === undefined || target.root === undefined) return out;
  if (meta.id !== target.expectedId) {
    out.push(`corrupt session log "${target.rawPath}": requested id "${target.expectedId}" does not match header id "${meta.id}"`);
    return out;
  }
  try {
    const expected = sessionPath(target.root, meta, encoding);
    if (path.resolve(expected) !== path.resolve(target.path)) {
      out.push(`corrupt session log "${target.rawPath}": header id "${meta.id}" and cwd identify "${expected}"`);
    }
  } catch {
    out.push(`corrupt session log "${target.rawPath}": header id cannot name a storage path`);
  }
  return out;
}
