import buffer from 'node:buffer';
import { statSync } from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { FileSource, MemorySource, type ByteSource } from '../physical/source.js';
import { UsageError } from './errors.js';
import type { ResolvedTarget } from './resolved-target.js';
import { safeSegment } from './layout.js';
import { toJson } from '../core/json.js';

/**
 * Read a DSH session-log export ZIP (or a `dsh export` archive) as a target:
 * `file.zip` is the root `session.jsonl`; `file.zip:subagents/<id>` picks a
 * descendant by session id or by its sanitized folder name; `file.zip:<entry>`
 * names any entry (e.g. `raw/session.jsonl.zstd`). Entries are read through
 * the central directory (data descriptors are fine), inflated into memory and
 * CRC-checked. The ZIP is opened read-only.
 */

export interface ZipEntry {
  name: string;
  method: number;
  crc32: number;
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

function bad(file: string, why: string): never {
  throw new UsageError(`cannot read ZIP ${file}: ${why}`, 'io');
}

/** The central directory of a ZIP file (ZIP64 included). */
export function listZip(source: ByteSource): ZipEntry[] {
  const file = source.name;
  const tailLen = Math.min(source.size, 22 + 0xffff);
  const tail = source.read(source.size - tailLen, source.size);
  let eocd = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd === -1) bad(file, 'no end-of-central-directory record (not a ZIP file)');
  let count = tail.readUInt16LE(eocd + 10);
  let cdSize = tail.readUInt32LE(eocd + 12);
  let cdOffset = tail.readUInt32LE(eocd + 16);
  if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    const loc = eocd - 20;
    if (loc < 0 || tail.readUInt32LE(loc) !== ZIP64_LOCATOR) bad(file, 'ZIP64 locator missing');
    const z64at = Number(tail.readBigUInt64LE(loc + 8));
    const z64 = source.read(z64at, z64at + 56);
    if (z64.length < 56 || z64.readUInt32LE(0) !== ZIP64_EOCD) bad(file, 'ZIP64 end record missing');
    count = Number(z64.readBigUInt64LE(32));
    cdSize = Number(z64.readBigUInt64LE(40));
    cdOffset = Number(z64.readBigUInt64LE(48));
  }
  const cd = source.read(cdOffset, cdOffset + cdSize);
  if (cd.length !== cdSize) bad(file, 'central directory is truncated');
  const entries: ZipEntry[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    if (at + 46 > cd.length || cd.readUInt32LE(at) !== CENTRAL) bad(file, `central directory entry ${i} is malformed`);
    const method = cd.readUInt16LE(at + 10);
    const crc32 = cd.readUInt32LE(at + 16);
    let compressedSize = cd.readUInt32LE(at + 20);
    let size = cd.readUInt32LE(at + 24);
    const nameLen = cd.readUInt16LE(at + 28);
    const extraLen = cd.readUInt16LE(at + 30);
    const commentLen = cd.readUInt16LE(at + 32);
    let localHeaderOffset = cd.readUInt32LE(at + 42);
    const name = cd.toString('utf8', at + 46, at + 46 + nameLen);
    // ZIP64 extended information extra field (0x0001): only the saturated fields, in order.
    let e = at + 46 + nameLen;
    const extraEnd = e + extraLen;
    while (e + 4 <= extraEnd) {
      const id = cd.readUInt16LE(e);
      const len = cd.readUInt16LE(e + 2);
      if (id === 0x0001) {
        let p = e + 4;
        if (size === 0xffffffff) {
          size = Number(cd.readBigUInt64LE(p));
          p += 8;
        }
        if (compressedSize === 0xffffffff) {
          compressedSize = Number(cd.readBigUInt64LE(p));
          p += 8;
        }
        if (localHeaderOffset === 0xffffffff) localHeaderOffset = Number(cd.readBigUInt64LE(p));
      }
      e += 4 + len;
    }
    entries.push({ name, method, crc32, compressedSize, size, localHeaderOffset });
    at = extraEnd + commentLen;
  }
  return entries;
}

/** Largest ZIP entry dsh inflates into memory (a declared size above it is refused before inflating). */
export const ZIP_ENTRY_BUDGET = 256 * 1024 * 1024;

/** One entry's bytes, inflated and CRC-checked. */
export function readZipEntry(source: ByteSource, entry: ZipEntry): Buffer {
  const file = source.name;
  const local = source.read(entry.localHeaderOffset, entry.localHeaderOffset + 30);
  if (local.length < 30 || local.readUInt32LE(0) !== LOCAL) bad(file, `local header of ${entry.name} is missing`);
  const start = entry.localHeaderOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
  const raw = source.read(start, start + entry.compressedSize);
  if (raw.length !== entry.compressedSize) bad(file, `${entry.name} is truncated`);
  if (entry.size > ZIP_ENTRY_BUDGET || entry.size > buffer.constants.MAX_LENGTH) {
    bad(file, `${entry.name} declares ${entry.size} bytes, over dsh's ${ZIP_ENTRY_BUDGET / (1024 * 1024)} MiB budget for a ZIP entry read into memory: extract it and name the file`);
  }
  let data: Buffer;
  if (entry.method === 0) data = raw;
  else if (entry.method === 8) {
    try {
      // Never inflate past the declared size (a lying directory cannot balloon memory).
      data = zlib.inflateRawSync(raw, { maxOutputLength: Math.max(1, entry.size) });
    } catch (error) {
      bad(file, `${entry.name} does not inflate: ${(error as Error).message}`);
    }
  } else bad(file, `${entry.name} uses unsupported compression method ${entry.method}`);
  if (data.length !== entry.size) bad(file, `${entry.name} inflates to ${data.length} bytes, the directory says ${entry.size}`);
  const crc = (zlib as unknown as { crc32?: (d: Buffer) => number }).crc32;
  if (crc && crc(data) >>> 0 !== entry.crc32 >>> 0) bad(file, `${entry.name} fails its CRC-32 check`);
  return data;
}

/** Split `file.zip[:entry]` when the part before the colon is an existing .zip file. */
export function splitZipTarget(target: string): { zip: string; spec: string | undefined } | undefined {
  const isZipFile = (p: string) => {
    if (!p.toLowerCase().endsWith('.zip')) return false;
    try {
      return statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (isZipFile(target)) return { zip: target, spec: undefined };
  for (let i = target.indexOf('.zip:'); i !== -1; i = target.indexOf('.zip:', i + 1)) {
    const zip = target.slice(0, i + 4);
    if (isZipFile(zip)) return { zip, spec: target.slice(i + 5) };
  }
  return undefined;
}

function headerId(data: Buffer): string | undefined {
  const nl = data.indexOf(0x0a);
  try {
    const v = JSON.parse(data.toString('utf8', 0, nl === -1 ? data.length : nl)) as { id?: unknown };
    return typeof v.id === 'string' ? v.id : undefined;
  } catch {
    return undefined;
  }
}

/** Pick the entry a spec names (see module doc); throws a UsageError listing what exists. */
export function pickZipEntry(source: ByteSource, entries: ZipEntry[], spec: string | undefined): ZipEntry {
  const file = source.name;
  const byName = new Map(entries.map((e) => [e.name, e]));
  if (spec === undefined || spec === '' || spec === 'session.jsonl') {
    const root = byName.get('session.jsonl');
    if (!root) bad(file, 'no top-level session.jsonl entry (not a DSH session-log export)');
    return root;
  }
  const exact = byName.get(spec);
  if (exact) return exact;
  const m = /^subagents\/(.+?)(\/session\.jsonl)?$/.exec(spec);
  if (m) {
    const id = m[1]!;
    const direct = byName.get(`subagents/${id}/session.jsonl`);
    if (direct) return direct;
    const folder = safeSegment(id);
    const candidates = entries.filter((e) => e.name === `subagents/${folder}/session.jsonl` || e.name.startsWith(`subagents/${folder}.`) && e.name.endsWith('/session.jsonl'));
    const matching = candidates.filter((e) => headerId(readZipEntry(source, e)) === id);
    if (matching.length === 1) return matching[0]!;
    if (matching.length === 0 && candidates.length === 1 && candidates[0]!.name === `subagents/${folder}/session.jsonl`) return candidates[0]!;
  }
  const sessions = entries.filter((e) => /^subagents\/[^/]+\/session\.jsonl$/.test(e.name)).map((e) => e.name.slice('subagents/'.length, -'/session.jsonl'.length));
  bad(file, `no entry for ${toJson(spec)}; descendants in this archive: ${sessions.length > 0 ? sessions.join(', ') : 'none'}`);
}

/** The ResolvedTarget for `file.zip[:entry]`, or undefined when the target is not a ZIP. */
export function resolveZipTarget(target: string): ResolvedTarget | undefined {
  const split = splitZipTarget(target);
  if (!split) return undefined;
  const abs = path.resolve(split.zip);
  const source = new FileSource(abs);
  let entry: ZipEntry;
  let data: Buffer;
  try {
    entry = pickZipEntry(source, listZip(source), split.spec);
    data = readZipEntry(source, entry);
  } finally {
    source.close();
  }
  const name = `${abs}:${entry.name}`;
  return {
    path: name,
    rawPath: name,
    open: () => new MemorySource(name, data),
    layoutWarnings: [],
  };
}
