/**
 * Where session indexes live and how they are kept: one file per artifact
 * content in the cache directory ($DSH_CACHE_DIR, else $XDG_CACHE_HOME/dsh,
 * else ~/.cache/dsh), written by the one output publisher (src/core/publish.ts: a
 * temporary name, fsync, rename), bounded by a
 * least-recently-used budget. Nothing here ever writes beside an input, and
 * `--no-cache` / DSH_NO_CACHE=1 turn every read and write off.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { writeFileAtomic } from '../../core/publish.js';
import { FileSource, type ByteSource } from '../../physical/source.js';

/** Default bound of the cache directory's index files. */
export const DEFAULT_CACHE_MAX_BYTES = 2 * 1024 ** 3;
const SUBDIR = 'index-v1';
const SUFFIX = '.idx';
/** Which entry was last written for a log path (a hint for extending it when the log grows). */
const POINTERS = 'by-path-v1';
const POINTER_SUFFIX = '.ptr';

/** Where the persistent index cache lives and whether it is used. */
export interface CacheConfig {
  /** The directory (whether or not it exists yet). */
  dir: string;
  /** False: read nothing from it, write nothing anywhere. */
  enabled: boolean;
  maxBytes: number;
  /**
   * A log of at least this many bytes has its one entry of its size read and verified while it is
   * hashed (default: the size from which it is hashed on two threads anyway, `WORKER_MIN_BYTES`;
   * tests set 0, the CLI with its hidden `--peek-min-bytes <n>`).
   */
  peekMinBytes?: number;
  /** Where a warning or note goes (stderr in the CLI). */
  note: (text: string) => void;
}

export function cacheDirFor(env: NodeJS.ProcessEnv): string {
  if (env['DSH_CACHE_DIR']) return path.resolve(env['DSH_CACHE_DIR']);
  if (env['XDG_CACHE_HOME'] && path.isAbsolute(env['XDG_CACHE_HOME'])) return path.join(env['XDG_CACHE_HOME'], 'dsh');
  return path.join(env['HOME'] || os.homedir(), '.cache', 'dsh');
}

export function cacheDisabledByEnv(env: NodeJS.ProcessEnv): boolean {
  const v = env['DSH_NO_CACHE'];
  return v !== undefined && v !== '' && v !== '0';
}

export function cacheMaxBytes(env: NodeJS.ProcessEnv): number {
  const v = Number(env['DSH_CACHE_MAX_BYTES']);
  return Number.isFinite(v) && v >= 0 && env['DSH_CACHE_MAX_BYTES'] !== '' && env['DSH_CACHE_MAX_BYTES'] !== undefined ? v : DEFAULT_CACHE_MAX_BYTES;
}

/** The index cache settings from the environment (`DSH_CACHE_DIR`, `DSH_NO_CACHE`, `DSH_CACHE_MAX_BYTES`) and `--no-cache`. */
export function cacheConfig(env: NodeJS.ProcessEnv, options: { noCache?: boolean; note?: (text: string) => void } = {}): CacheConfig {
  return {
    dir: cacheDirFor(env),
    enabled: !options.noCache && !cacheDisabledByEnv(env),
    maxBytes: cacheMaxBytes(env),
    note: options.note ?? (() => {}),
  };
}

function entriesDir(config: CacheConfig): string {
  return path.join(config.dir, SUBDIR);
}

export function entryPath(config: CacheConfig, name: string): string {
  return path.join(entriesDir(config), name + SUFFIX);
}

/**
 * `use` given the entry opened as a byte source (open meanwhile: a rename over it does not change
 * what is read). Undefined when there is no entry or it cannot be opened; not marked used. What
 * `use` throws (a damaged entry) is thrown.
 */
export function readEntryParts<T>(config: CacheConfig, name: string, use: (source: ByteSource) => T): T | undefined {
  if (!config.enabled) return undefined;
  let source: FileSource;
  try {
    source = new FileSource(entryPath(config, name));
  } catch {
    return undefined;
  }
  try {
    return use(source);
  } finally {
    source.close();
  }
}

/** Mark an entry used (eviction takes the least recently used first). */
export function touchEntry(config: CacheConfig, name: string): void {
  try {
    const now = new Date();
    fs.utimesSync(entryPath(config, name), now, now);
  } catch {
    // Recency is advisory.
  }
}

let warned = false;

/**
 * Write an entry atomically (temporary name, fsync, then rename: concurrent
 * writers leave one complete file), then evict past the budget. Failure is a warning.
 */
export function writeEntry(config: CacheConfig, name: string, bytes: Buffer | readonly Buffer[]): boolean {
  if (!config.enabled) return false;
  const dir = entriesDir(config);
  const file = entryPath(config, name);
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileAtomic(file, Buffer.isBuffer(bytes) ? [bytes] : bytes, { mode: 0o600 });
  } catch (error) {
    if (!warned) {
      warned = true;
      config.note(`warning: could not write the session index to ${dir} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); answers are unaffected, the next command reads the log in full again`);
    }
    return false;
  }
  evict(config, name);
  return true;
}

/** Drop an entry (a damaged one, before it is rebuilt). */
export function dropEntry(config: CacheConfig, name: string): void {
  if (!config.enabled) return;
  try {
    fs.rmSync(entryPath(config, name), { force: true });
  } catch {
    // Rebuilding overwrites it anyway.
  }
}

export interface CacheEntryFile {
  name: string;
  file: string;
  bytes: number;
  /** Last use (mtime). */
  usedMs: number;
}

/** The entry files of the cache directory (none when it does not exist), for `dsh cache`. */
export function listEntryFiles(config: CacheConfig): CacheEntryFile[] {
  const dir = entriesDir(config);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const out: CacheEntryFile[] = [];
  for (const n of names) {
    if (!n.endsWith(SUFFIX)) continue;
    const file = path.join(dir, n);
    try {
      const st = fs.statSync(file);
      if (st.isFile()) out.push({ name: n.slice(0, -SUFFIX.length), file, bytes: st.size, usedMs: st.mtimeMs });
    } catch {
      // Removed meanwhile.
    }
  }
  return out.sort((a, b) => b.usedMs - a.usedMs || a.name.localeCompare(b.name));
}

/** Whether the cache may hold an entry of a log of `size` bytes (entry names begin with it). */
export function holdsEntryOfSize(config: CacheConfig, size: number): boolean {
  return entriesOfSize(config, size).length > 0;
}

/** The names of the entries of logs of `size` bytes (entry names begin with it). */
export function entriesOfSize(config: CacheConfig, size: number): string[] {
  try {
    const prefix = `${size}-`;
    return fs
      .readdirSync(entriesDir(config))
      .filter((n) => n.startsWith(prefix) && n.endsWith(SUFFIX))
      .map((n) => n.slice(0, -SUFFIX.length));
  } catch {
    return [];
  }
}

/** Remove least-recently-used entries until the total fits the budget (`keep` is never removed). */
export function evict(config: CacheConfig, keep?: string): number {
  const entries = listEntryFiles(config);
  let total = entries.reduce((a, e) => a + e.bytes, 0);
  let removed = 0;
  for (let i = entries.length - 1; i >= 0 && total > config.maxBytes; i--) {
    const e = entries[i]!;
    if (e.name === keep) continue;
    try {
      fs.rmSync(e.file, { force: true });
      total -= e.bytes;
      removed++;
    } catch {
      // Another process may hold or have removed it.
    }
  }
  return removed;
}

/** The pointer file's name for a log path (the path itself is not stored, only its hash). */
function pointerPath(config: CacheConfig, logPath: string): string {
  return path.join(config.dir, POINTERS, createHash('sha256').update(logPath).digest('hex').slice(0, 40) + POINTER_SUFFIX);
}

/** The entry last written for `logPath` and the log size it indexed, if any (only a hint: the entry's own key decides). */
export function readPointer(config: CacheConfig, logPath: string): { name: string; size: number } | undefined {
  if (!config.enabled) return undefined;
  try {
    const m = /^(\d+-[0-9a-f]{40}) (\d+)\n$/.exec(fs.readFileSync(pointerPath(config, logPath), 'latin1'));
    return m ? { name: m[1]!, size: Number(m[2]) } : undefined;
  } catch {
    return undefined;
  }
}

/** Point `logPath` at an entry (atomic; best effort, silent: the cache's warning covers an unwritable directory). */
export function writePointer(config: CacheConfig, logPath: string, name: string, size: number): void {
  if (!config.enabled) return;
  const file = pointerPath(config, logPath);
  const text = `${name} ${size}\n`;
  try {
    if (fs.readFileSync(file, 'latin1') === text) return;
  } catch {
    // Not there yet.
  }
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    writeFileAtomic(file, [text], { mode: 0o600 });
  } catch {
    // Nothing is left behind; the hint is only missing.
  }
}

/** Remove every entry (and stale temporaries); returns how many index files went. */
export function clearEntries(config: CacheConfig): number {
  fs.rmSync(path.join(config.dir, POINTERS), { recursive: true, force: true });
  const dir = entriesDir(config);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return 0;
  }
  let n = 0;
  for (const name of names) {
    if (!name.endsWith(SUFFIX) && !name.endsWith('.tmp')) continue;
    fs.rmSync(path.join(dir, name), { force: true });
    if (name.endsWith(SUFFIX)) n++;
  }
  return n;
}
