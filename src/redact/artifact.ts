import { createHash } from 'node:crypto';
import { ByteCarry } from '../core/carry.js';
import { detectEncoding } from '../log/read.js';
import { existsSync, promises as fsp } from 'node:fs';
import type { ByteSource } from '../physical/source.js';
import { scanFrames } from '../physical/zstd-frames.js';
import { createDecoder, forEachTornChunk, TORN_HOLD_BYTES, type FrameDecoder } from '../physical/decoders.js';
import { compressFrame } from '../physical/encoder.js';
import { LogError, UsageError } from '../log/errors.js';
import { parseHeaderMeta } from '../log/header.js';
import { decodeStorageRecord } from '../log/rows.js';
import { DEFAULT_MAX_LINE_BYTES } from '../log/scanner.js';
import { sessionPath } from '../log/layout.js';
import { resolveTarget, type ResolvedTarget } from '../log/target.js';
import { inspectTarget } from '../log/session.js';
import type { Encoding, SessionEvent } from '../log/types.js';
import { PendingFile, prepareOutputDir } from '../core/publish.js';
import { RedactingText, Redactor, type RedactOptions, type RedactStats } from '../views/redactor.js';
import { SplitSecretScanner } from '../views/secret-split.js';

/**
 * `dsh redact`: rewrite an artifact into a NEW root in DSH's layout with
 * secrets replaced in event text.
 *
 * - raw stays raw: the output is the input with changed lines replaced
 *   (unchanged lines, the torn tail's bytes when it holds no secret, and a
 *   secret-free log as a whole are byte-identical).
 * - zstd keeps DSH's frame layout and the original batch boundaries: header
 *   frame + one checksummed frame per original frame. A frame whose plaintext
 *   is unchanged is copied verbatim (same compressed bytes); a changed frame
 *   is re-encoded as one checksummed frame. A torn final frame cannot be
 *   copied (its bytes may hold secrets): its complete records are re-encoded
 *   as one final complete frame, its cut record is dropped (reported), so the
 *   output reads with the same events as DSH's inspect of the input.
 * - A zstd artifact with a failing or structurally invalid frame is refused
 *   (undecodable bytes cannot be redacted): run `dsh salvage` first.
 */

export interface RedactRunOptions extends RedactOptions {
  dryRun?: boolean;
  decoder?: FrameDecoder;
  /** Scan assembled delta streams for secrets split across chunks (default true). */
  splitSecrets?: boolean;
}

export interface RedactVerify {
  ok: boolean;
  original: { events: number; closers: number; error?: string };
  redacted: { events: number; closers: number; error?: string };
  /** Same event types and seqs, in order (stored + closers). */
  sameTypesAndSeqs: boolean;
}

/** What `dsh redact` did: the redacted artifact, the counts per detector, the verification. */
export interface RedactReport {
  source: string;
  encoding: Encoding;
  dryRun: boolean;
  /** The redacted artifact (null on --dry-run). */
  output: string | null;
  root: string | null;
  frames?: { total: number; changed: number; copied: number };
  /** A torn final record that was not written (zstd torn frame). */
  tornDropped?: { frameStart: number; fragmentBytes: number };
  /** Byte-identical output (nothing redacted). */
  identical: boolean;
  stats: RedactStats;
  verify?: RedactVerify;
}

interface Unit {
  kind: 'frame' | 'torn' | 'raw';
  start: number;
  end: number;
  plaintext: Buffer;
  /** A torn frame's plaintext comes in pieces; the last call for it has `final` and no bytes. */
  final?: boolean;
}

/** A torn frame's complete records are re-encoded in frames of up to this much plaintext (one frame unless it is huge). */
const TORN_OUTPUT_FRAME_BYTES = TORN_HOLD_BYTES;

/**
 * The artifact's plaintext, unit by unit, in order; a torn final frame's
 * prefix is pulled in bounded pieces (it may regenerate far more than it holds).
 */
async function forEachUnit(source: ByteSource, encoding: Encoding, decoder: FrameDecoder, onUnit: (u: Unit) => void | Promise<void>): Promise<void> {
  if (encoding === 'none') {
    const step = 4 << 20;
    for (let at = 0; at < source.size; at += step) {
      const b = source.read(at, at + step);
      await onUnit({ kind: 'raw', start: at, end: at + b.length, plaintext: b });
    }
    return;
  }
  let scan;
  try {
    scan = scanFrames(source);
  } catch (error) {
    throw new LogError(`${(error as Error).message}; cannot redact bytes that do not decode — run \`dsh salvage\` first and redact its artifact`, { kind: 'corrupt' });
  }
  for (const f of scan.frames) {
    let plaintext: Buffer;
    try {
      plaintext = await decoder.decode(source.read(f.start, f.end));
    } catch (error) {
      throw new LogError(
        `corrupt Zstandard session log: frame at byte ${f.start} failed validation (${(error as Error).message}); cannot redact bytes that do not decode — run \`dsh salvage\` first and redact its artifact`,
        { kind: 'corrupt' },
      );
    }
    await onUnit({ kind: 'frame', start: f.start, end: f.end, plaintext });
  }
  if (scan.torn) {
    const t = scan.torn;
    await forEachTornChunk(decoder, source.read(t.start, source.size), (plaintext) => onUnit({ kind: 'torn', start: t.start, end: source.size, plaintext }));
    await onUnit({ kind: 'torn', start: t.start, end: source.size, plaintext: Buffer.alloc(0), final: true });
  }
}

/**
 * Pass 1: assemble delta streams and find split secrets (see `SplitSecretScanner`).
 * Exported for `dsh export --redact`: `new RedactingText(redactor, await splitSecretEdits(source, redactor))`.
 * Reads the source once more (nothing is written).
 */
export async function splitSecretEdits(source: ByteSource, redactor: Redactor, decoder: FrameDecoder = createDecoder()): Promise<Map<number, string>> {
  return splitEdits(source, detectEncoding(source).encoding, decoder, redactor);
}

async function splitEdits(source: ByteSource, encoding: Encoding, decoder: FrameDecoder, redactor: Redactor): Promise<Map<number, string>> {
  const scanner = new SplitSecretScanner(redactor);
  const carry = new ByteCarry();
  // A line past the line limit cannot parse (for DSH neither): counted through, never held.
  let overlong = false;
  let header = true;
  const line = (bytes: Buffer) => {
    if (header) {
      header = false;
      // Learn the session cwd before any detector runs (--redact-paths).
      try {
        const h = JSON.parse(bytes.toString('utf8')) as { cwd?: unknown };
        redactor.setCwd(typeof h?.cwd === 'string' ? h.cwd : undefined);
      } catch {
        /* not a header: no cwd */
      }
      return;
    }
    let records: SessionEvent[];
    try {
      records = decodeStorageRecord(JSON.parse(bytes.toString('utf8')));
    } catch {
      return;
    }
    for (const e of records) if (e !== null && typeof e === 'object') scanner.observe(e);
  };
  let carryBytes = 0;
  await forEachUnit(source, encoding, decoder, (u) => {
    let from = 0;
    const b = u.plaintext;
    for (let nl = b.indexOf(0x0a); nl !== -1; nl = b.indexOf(0x0a, from)) {
      const l = carry.take(b.subarray(from, nl));
      if (!overlong && carryBytes + (nl - from) <= DEFAULT_MAX_LINE_BYTES) line(l);
      carryBytes = 0;
      overlong = false;
      from = nl + 1;
    }
    if (from < b.length) {
      carryBytes += b.length - from;
      if (carryBytes > DEFAULT_MAX_LINE_BYTES && !overlong) {
        carry.clear();
        overlong = true;
      }
      if (!overlong) carry.push(b.subarray(from));
    }
    if (u.final) {
      carry.clear();
      carryBytes = 0;
      overlong = false;
    }
  });
  return scanner.finish();
}

/** Redact `target` into the new root `outDir` (or only report, with `dryRun`). */
export async function redactTarget(target: ResolvedTarget, outDir: string | undefined, options: RedactRunOptions = {}): Promise<RedactReport> {
  const redactor = new Redactor(options);
  const decoder = options.decoder ?? createDecoder();
  const dryRun = Boolean(options.dryRun);
  if (!dryRun && !outDir) throw new UsageError('redact needs an output directory: -o <dir> (or --dry-run)');
  const existed = outDir !== undefined && existsSync(outDir);
  const root = dryRun ? null : prepareOutputDir(outDir!, target);
  const source = target.open();
  let out: PendingFile | undefined;
  const report: RedactReport = {
    source: target.path,
    encoding: 'none',
    dryRun,
    output: null,
    root,
    identical: true,
    stats: redactor.stats,
  };
  try {
    const encoding: Encoding = detectEncoding(source).encoding;
    report.encoding = encoding;
    const edits = options.splitSecrets === false ? undefined : await splitEdits(source, encoding, decoder, redactor);
    const rt = new RedactingText(redactor, edits);
    let headerChecked = false;
    const pending: Buffer[] = [];
    const emit = async (bytes: Buffer) => {
      if (bytes.length === 0) return;
      if (dryRun) return;
      if (!out) {
        pending.push(bytes);
        return;
      }
      await out.write(bytes);
    };
    // Open the output once the (redacted) header line is known: it names the path.
    const open = async (headerLine: Buffer | undefined) => {
      if (headerChecked) return;
      headerChecked = true;
      const meta = headerLine ? parseHeaderMeta(headerLine.toString('utf8')) : undefined;
      if (!meta) throw new LogError('corrupt session log: first line is not a session header; nothing to place in a session root', { kind: 'corrupt' });
      if (dryRun) return;
      let file: string;
      try {
        file = sessionPath(root!, meta, encoding);
      } catch (error) {
        throw new LogError(`the header cannot name a storage path: ${(error as Error).message}`, { kind: 'corrupt' });
      }
      out = await PendingFile.open(file);
      report.output = file;
      for (const b of pending.splice(0)) await out.write(b);
    };
    const firstLine = (b: Buffer) => {
      const nl = b.indexOf(0x0a);
      return nl === -1 ? undefined : b.subarray(0, nl);
    };
    if (encoding === 'none') {
      let first = true;
      await forEachUnit(source, encoding, decoder, async (u) => {
        const o = rt.write(u.plaintext);
        if (first && !headerChecked) {
          const fl = firstLine(o);
          if (fl) {
            await open(fl);
            first = false;
          }
        }
        if (!o.equals(u.plaintext)) report.identical = false;
        await emit(o);
      });
      const tail = rt.end();
      if (!headerChecked) await open(firstLine(Buffer.concat([tail, Buffer.from('\n')])));
      await emit(tail);
      // Compare the whole output with the input: a line-split chunk makes per-chunk equality meaningless.
      report.identical = redactor.stats.linesChanged === 0 && !redactor.stats.headerChanged;
    } else {
      const frames = { total: 0, changed: 0, copied: 0 };
      // The torn frame's complete records, redacted, waiting to be written as complete frames.
      let tornOut: Buffer[] = [];
      let tornBytes = 0;
      const flushTorn = async () => {
        if (tornBytes === 0) return;
        const o = Buffer.concat(tornOut);
        tornOut = [];
        tornBytes = 0;
        frames.changed += 1;
        await emit(await compressFrame(o));
      };
      await forEachUnit(source, encoding, decoder, async (u) => {
        if (u.kind === 'torn') {
          if (!u.final) {
            const o = rt.write(u.plaintext);
            if (o.length === 0) return;
            if (!headerChecked) await open(firstLine(o));
            tornOut.push(o);
            tornBytes += o.length;
            if (tornBytes >= TORN_OUTPUT_FRAME_BYTES) await flushTorn();
            return;
          }
          frames.total += 1;
          const dropped = rt.dropFragment();
          if (dropped > 0) report.tornDropped = { frameStart: u.start, fragmentBytes: dropped };
          report.identical = false;
          if (!headerChecked) await open(undefined);
          await flushTorn();
          return;
        }
        frames.total += 1;
        const o = rt.write(u.plaintext);
        if (!headerChecked) await open(firstLine(o));
        if (o.equals(u.plaintext)) {
          frames.copied += 1;
          await emit(source.read(u.start, u.end));
        } else {
          frames.changed += 1;
          report.identical = false;
          if (o.length > 0) await emit(await compressFrame(o));
        }
      });
      const tail = rt.end();
      if (tail.length > 0) {
        // Complete frames ending inside a record (DSH calls that corruption): keep the text.
        report.identical = false;
        await emit(await compressFrame(tail));
      }
      report.frames = frames;
      if (!headerChecked) throw new LogError('empty or header-less Zstandard session log', { kind: 'corrupt' });
    }
    if (out) await out.publish(false);
    out = undefined;
  } catch (error) {
    await out?.abandon();
    // Leave no trace of a failed run: remove the (now empty) tree this run created.
    if (root && !existed) await fsp.rm(root, { recursive: true, force: true }).catch(() => undefined);
    throw error;
  } finally {
    source.close();
  }
  if (report.output) report.verify = await verify(target, report.output, options.decoder);
  return report;
}

async function digestOf(target: ResolvedTarget, decoder?: FrameDecoder): Promise<{ events: number; closers: number; error?: string; hash: string }> {
  const h = createHash('sha256');
  const r = await inspectTarget(target, {
    collect: false,
    ...(decoder ? { decoder } : {}),
    onLogical: (e) => h.update(`${e.seq} ${e.type}\n`),
  });
  for (const c of r.closers) h.update(`${c.seq} ${c.type}\n`);
  return { events: r.storedEventCount, closers: r.closers.length, ...(r.error ? { error: r.error.message } : {}), hash: h.digest('hex') };
}

/** Inspect input and output: same event count, types and seqs, same verdict. */
export async function verify(input: ResolvedTarget, output: string, decoder?: FrameDecoder): Promise<RedactVerify> {
  const a = await digestOf(input, decoder);
  const b = await digestOf(resolveTarget(output), decoder);
  const same = a.hash === b.hash && a.events === b.events && a.closers === b.closers;
  const strip = ({ hash: _h, ...rest }: typeof a) => rest;
  return { ok: same && (a.error === undefined) === (b.error === undefined), original: strip(a), redacted: strip(b), sameTypesAndSeqs: same };
}
