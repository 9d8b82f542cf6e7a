/**
 * Test-only mutation generators for the hostile suite (issue #23). Each
 * generator takes a corpus artifact's decoded JSONL (or its bytes) and a seed
 * and returns one mutated artifact, deterministically. Nothing here is copied
 * from the reference corpus: the corpus is read at test time and edited.
 */
import { frameBlocks } from '../../src/physical/zstd-frames.js';
import { scanFrames } from '../../src/physical/zstd-frames.js';
import { MemorySource } from '../../src/physical/source.js';
import { compressFrame } from '../../src/physical/encoder.js';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { corpusCases } from './corpus.js';

/** Deterministic PRNG (mulberry32) so every failure is reproducible by seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Generated {
  /** Generator and edit, for failure messages. */
  name: string;
  /** The artifact bytes. */
  bytes: Buffer;
  /** Which file name the artifact is written under. */
  encoding: 'zstd' | 'raw';
}

/** One value of every JSON type, plus the awkward ones. */
export const JSON_VALUES: readonly unknown[] = [0, -1, 1.5, 1e308, true, false, null, '', ' ', '/', 'a/b', '..', {}, { a: 1 }, [], ['x'], 'x'.repeat(300), '\u001b[2J\u001b]0;t\u0007x\r\u0085y\u202e'];

export const HEADER_FIELDS = ['type', 'version', 'id', 'createdAt', 'cwd', 'parentSession', 'seedLength', 'delegationDepth', 'origin', 'agentPreset', 'title', 'forkedFrom'];

function lines(text: string): string[] {
  const out = text.split('\n');
  if (out[out.length - 1] === '') out.pop();
  return out;
}

function join(ls: readonly string[]): Buffer {
  return Buffer.from(ls.join('\n') + '\n');
}

/** A header field set to another JSON type (or removed). */
export function headerFieldType(text: string, seed: number): Generated {
  const r = rng(seed);
  const ls = lines(text);
  const header = JSON.parse(ls[0] as string) as Record<string, unknown>;
  const field = HEADER_FIELDS[Math.floor(r() * HEADER_FIELDS.length)] as string;
  const choice = Math.floor(r() * (JSON_VALUES.length + 1));
  let name: string;
  if (choice === JSON_VALUES.length) {
    delete header[field];
    name = `header ${field} removed`;
  } else {
    header[field] = JSON_VALUES[choice];
    name = `header ${field} = ${JSON.stringify(JSON_VALUES[choice]).slice(0, 20)}`;
  }
  ls[0] = JSON.stringify(header);
  return { name, bytes: join(ls), encoding: 'raw' };
}

/** Paths of every object-valued (or array-valued) property inside a value, breadth first, bounded. */
function containerPaths(value: unknown, limit = 200): (string | number)[][] {
  const out: (string | number)[][] = [];
  const queue: { v: unknown; p: (string | number)[] }[] = [{ v: value, p: [] }];
  while (queue.length > 0 && out.length < limit) {
    const { v, p } = queue.shift()!;
    if (v === null || typeof v !== 'object') continue;
    for (const [k, child] of Object.entries(v as object)) {
      const path = [...p, Array.isArray(v) ? Number(k) : k];
      out.push(path);
      if (child !== null && typeof child === 'object') queue.push({ v: child, p: path });
    }
  }
  return out;
}

function editAt(root: Record<string, unknown>, path: (string | number)[], edit: (parent: any, key: string | number) => void): void {
  let cur: any = root;
  for (let i = 0; i < path.length - 1; i++) cur = cur[path[i] as string];
  edit(cur, path[path.length - 1] as string | number);
}

/** One nested property of one event removed, or replaced by another JSON type. */
export function missingNestedField(text: string, seed: number): Generated {
  const r = rng(seed);
  const ls = lines(text);
  if (ls.length < 2) return { name: 'nested: no events', bytes: join(ls), encoding: 'raw' };
  const at = 1 + Math.floor(r() * (ls.length - 1));
  let event: Record<string, unknown>;
  try {
    event = JSON.parse(ls[at] as string);
  } catch {
    return { name: 'nested: unparsable line kept', bytes: join(ls), encoding: 'raw' };
  }
  const paths = containerPaths(event);
  if (paths.length === 0) return { name: 'nested: scalar event', bytes: join(ls), encoding: 'raw' };
  const path = paths[Math.floor(r() * paths.length)]!;
  const mode = Math.floor(r() * 3);
  const value = JSON_VALUES[Math.floor(r() * JSON_VALUES.length)];
  editAt(event, path, (parent, key) => {
    if (mode === 0) {
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else delete parent[key];
    } else if (mode === 1) parent[key] = null;
    else parent[key] = value;
  });
  ls[at] = JSON.stringify(event);
  const what = mode === 0 ? 'removed' : mode === 1 ? '= null' : `= ${JSON.stringify(value).slice(0, 20)}`;
  return { name: `line ${at} ${event['type']} ${path.join('.')} ${what}`, bytes: join(ls), encoding: 'raw' };
}

/** A value nested `depth` levels deep (objects or arrays), built without recursion. */
export function deepValue(depth: number, kind: 'object' | 'array'): string {
  return kind === 'object' ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth) : '['.repeat(depth) + '1' + ']'.repeat(depth);
}

/**
 * A deeply nested payload where DSH ignores or keeps it: a request/header's
 * tools, a request/context payload, or an ignorable unknown event's data.
 */
export function deepNesting(text: string, seed: number, depth = 5000): Generated {
  const r = rng(seed);
  const kind = r() < 0.5 ? 'object' : 'array';
  return deepNestingAt(text, depth, kind, DEEP_PLACES[Math.floor(r() * 3)] as DeepPlace);
}

/** Where `deepNestingAt` puts the deep value (the ignorable event is the fallback where the log has no such record). */
export const DEEP_PLACES = ['tools', 'context', 'ignorable'] as const;
export type DeepPlace = (typeof DEEP_PLACES)[number];

/** `deepNesting` with its choices made: a `kind` value `depth` levels deep in `place`. */
export function deepNestingAt(text: string, depth: number, kind: 'object' | 'array', where: DeepPlace): Generated {
  const ls = lines(text);
  const deep = deepValue(depth, kind);
  const place = DEEP_PLACES.indexOf(where);
  const headerAt = ls.findIndex((l) => l.includes('"request/header"'));
  const contextAt = ls.findIndex((l) => l.includes('"request/context"'));
  if (place === 0 && headerAt > 0) {
    const e = JSON.parse(ls[headerAt] as string);
    const marker = '"__deep__"';
    if (e.data?.header && typeof e.data.header === 'object') e.data.header.tools = '__deep__';
    ls[headerAt] = JSON.stringify(e).replace(marker, `[{"name":"deep","parameters":${deep}}]`);
    return { name: `deep ${kind} ${depth} in request/header tools`, bytes: join(ls), encoding: 'raw' };
  }
  if (place === 1 && contextAt > 0) {
    const e = JSON.parse(ls[contextAt] as string);
    e.data = '__deep__';
    ls[contextAt] = JSON.stringify(e).replace('"__deep__"', `{"payload":${deep}}`);
    return { name: `deep ${kind} ${depth} in request/context`, bytes: join(ls), encoding: 'raw' };
  }
  // An ignorable unknown event appended after the last line, with the next seq.
  let last = -1;
  for (const l of ls.slice(1)) {
    try {
      const s = JSON.parse(l).seq;
      if (typeof s === 'number' && s > last) last = s;
    } catch {
      // keep the previous maximum
    }
  }
  ls.push(`{"type":"x-future/thing","seq":${last + 1},"time":1,"ignorable":true,"data":${deep}}`);
  return { name: `deep ${kind} ${depth} in ignorable unknown event`, bytes: join(ls), encoding: 'raw' };
}

/** Raw JSONL named `.jsonl.zstd`, or zstd bytes named `.jsonl`. */
export function renamedEncoding(bytes: Buffer, zstd: boolean): Generated {
  return { name: zstd ? 'zstd bytes named session.jsonl' : 'plain JSONL named session.jsonl.zstd', bytes, encoding: zstd ? 'raw' : 'zstd' };
}

/** Offsets of every block header of every frame (complete or torn) in a zstd artifact. */
export function blockHeaderOffsets(bytes: Buffer): number[] {
  const out: number[] = [];
  let starts: number[];
  try {
    const scan = scanFrames(new MemorySource('b.zstd', bytes));
    starts = scan.frames.map((f) => f.start);
    if (scan.torn) starts.push(scan.torn.start);
  } catch {
    return out;
  }
  for (let i = 0; i < starts.length; i++) {
    const start = starts[i] as number;
    const end = starts[i + 1] ?? bytes.length;
    const { blocks } = frameBlocks(bytes.subarray(start, end));
    for (const b of blocks) out.push(start + b.start);
  }
  return out;
}

/** One bit of one block header flipped (type, last flag or size), optionally with the artifact cut after it. */
export function blockHeaderFlip(bytes: Buffer, seed: number): Generated {
  const r = rng(seed);
  const offsets = blockHeaderOffsets(bytes);
  if (offsets.length === 0) return { name: 'block flip: no blocks', bytes, encoding: 'zstd' };
  const at = offsets[Math.floor(r() * offsets.length)] as number;
  const bit = Math.floor(r() * 24);
  const b = Buffer.from(bytes);
  b[at + (bit >> 3)] = (b[at + (bit >> 3)] as number) ^ (1 << (bit & 7));
  if (r() < 0.3) {
    const cut = Math.min(b.length, at + 3 + Math.floor(r() * 64));
    return { name: `block header at ${at} bit ${bit} flipped, cut at ${cut}`, bytes: b.subarray(0, cut), encoding: 'zstd' };
  }
  return { name: `block header at ${at} bit ${bit} flipped`, bytes: b, encoding: 'zstd' };
}

/** A corpus session a hostile mutation starts from: its JSONL (raw artifacts) and zstd bytes. */
export interface HostileBase {
  name: string;
  /** Decoded JSONL ('' for a zstd artifact, which only block-header flips mutate). */
  text: string;
  zstd: Buffer;
}

/** The corpus sessions the hostile suite mutates (synthetic raw, damaged, refused and one DSH snapshot; synthetic zstd). */
export async function hostileBases(): Promise<HostileBase[]> {
  const picked = corpusCases().filter((c) => c.artifact.endsWith('session.jsonl') && /synthetic\/(root-raw|damaged|refused)|dsh-snapshots\/root-raw\/--home-dsh-acp-advanced/.test(c.name));
  const out: HostileBase[] = [];
  for (const c of picked) {
    const text = readFileSync(c.artifact, 'utf8');
    // Header in its own frame, the rest in a second one, as DSH writes batches.
    const nl = text.indexOf('\n') + 1;
    const zstd = Buffer.concat([await compressFrame(Buffer.from(text.slice(0, nl))), await compressFrame(Buffer.from(text.slice(nl) || '\n'))]);
    out.push({ name: c.name, text, zstd });
  }
  const zstdCases = corpusCases().filter((c) => c.artifact.endsWith('.zstd') && /synthetic\/(root-zstd|damaged)/.test(c.name));
  for (const c of zstdCases) out.push({ name: c.name, text: '', zstd: readFileSync(c.artifact) });
  return out;
}

/** Mutation `seed` of `base` (the generators in turn, by seed). */
export function hostileMutation(base: HostileBase, seed: number): Generated {
  const which = seed % 6;
  if (base.text === '' || which === 4) return blockHeaderFlip(base.zstd, seed);
  if (which === 0) return headerFieldType(base.text, seed);
  if (which === 1) return missingNestedField(base.text, seed);
  if (which === 2) return deepNesting(base.text, seed, seed % 12 === 2 ? 5000 : 1200);
  if (which === 3) return renamedEncoding(seed % 2 ? base.zstd : Buffer.from(base.text), seed % 2 === 1);
  return missingNestedField(base.text, seed * 31);
}

/**
 * `n` quick hostile mutations of corpus sessions (the generators above, in turn by seed), written as
 * session directories under `dir`: the artifact paths.
 */
export function quickMutations(dir: string, n: number): string[] {
  const raw = corpusCases().filter((c) => c.artifact.endsWith('session.jsonl') && /synthetic\/(root-raw|damaged|refused)/.test(c.name));
  const zstd = corpusCases().filter((c) => c.artifact.endsWith('.zstd') && /synthetic\/(root-zstd|damaged)/.test(c.name));
  const files: string[] = [];
  for (let seed = 1; seed <= n; seed++) {
    let m: Generated;
    const which = seed % 6;
    if (which === 4 || which === 5) m = blockHeaderFlip(readFileSync(zstd[seed % zstd.length]!.artifact), seed);
    else {
      const text = readFileSync(raw[seed % raw.length]!.artifact, 'utf8');
      if (which === 0) m = headerFieldType(text, seed);
      else if (which === 1) m = missingNestedField(text, seed);
      else if (which === 2) m = deepNesting(text, seed, 1200);
      else m = renamedEncoding(seed % 2 ? readFileSync(zstd[seed % zstd.length]!.artifact) : Buffer.from(text), seed % 2 === 1);
    }
    const sessionDir = path.join(dir, '--home-dsh-synthetic-project--', `mutant-${seed}`);
    mkdirSync(sessionDir, { recursive: true });
    const file = path.join(sessionDir, m.encoding === 'zstd' ? 'session.jsonl.zstd' : 'session.jsonl');
    writeFileSync(file, m.bytes);
    files.push(file);
  }
  return files;
}
