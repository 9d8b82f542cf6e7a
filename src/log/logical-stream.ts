/**
 * Every logical event of a validated log, delivered in order: held in one pass
 * for small logs, two passes (validate, then stream) for large ones. Shared by
 * the streaming commands and the dataset writer.
 */
import { inspectTarget, inspectTargetIndexed, type SessionInspection } from './session.js';
import type { ResolvedTarget } from './target.js';
import { heldBytesBudget, repairPlanOf, replayLogical, type InspectOptions } from './inspect.js';
import { UsageError } from './errors.js';
import type { SessionEvent } from './types.js';
import { decimalBefore } from '../core/decimal.js';
import { expandedChunkJson, forEachRowMemberJson, isRowRecord, MalformedRow, ROW_MEMBER_HEAD } from './rows.js';
import { changed } from './reread.js';
import { verbatimHead, verbatimRow, type VerbatimHead } from './verbatim.js';
import type { CacheConfig } from './index/cache.js';
import { toJson } from '../core/json.js';

/** Logs up to this many bytes on disk are read once with events held in memory. */
export const SINGLE_PASS_BYTES = 48 << 20;

/** Where delivered output waits: flushed between decoded chunks (the CLI's buffered stdout). */
export interface Flushable {
  readonly pending: number;
  flush(): Promise<void>;
  maybeFlush(): Promise<void>;
}

/**
 * The JSON text of a logical event: its stored line when that line is the
 * event byte for byte; else serialized. With no line text, a chunk can only
 * come from a packed row (migrations never touch chunks, closers are never
 * chunks), so it takes the fast row serializer.
 */
export function logicalEventJson(e: SessionEvent, text: string | undefined): string {
  if (text !== undefined && !text.endsWith('\r')) return text;
  return text === undefined && e.type === 'assistant/chunk' ? expandedChunkJson(e) : toJson(e);
}

/** Receives one logical event, its stored JSONL line (undefined for a synthetic closer), and whether it is a closer. */
export type Emit = (event: SessionEvent, text: string | undefined, synthetic: boolean) => void;

/**
 * Deliver every logical event (closers last) to `emit`, only once the whole
 * log is known to be valid (DSH accepts or refuses a log as a whole): small
 * logs in one pass holding the events, large logs in two passes (validate,
 * then stream) in memory bounded by the surface, not the log.
 */
export async function forEachLogicalEvent(
  target: ResolvedTarget,
  options: InspectOptions,
  ready: (validated: SessionInspection) => Emit,
  out?: Flushable,
): Promise<SessionInspection> {
  if (targetBytes(target) <= SINGLE_PASS_BYTES) {
    const held: [SessionEvent, string | undefined][] = [];
    const budget = heldBytesBudget();
    let heldBytes = 0;
    let r: SessionInspection | undefined;
    try {
      r = await inspectTarget(target, {
        ...options,
        collect: false,
        skipArtifact: true,
        onLogical: (e, text) => {
          held.push([e, text]);
          heldBytes += text !== undefined ? text.length : 256;
          // A small file can still expand to more than memory holds: fall back to two passes.
          if (heldBytes > budget) throw new TooBigForOnePass('switch to two passes');
        },
      });
    } catch (error) {
      if (!(error instanceof TooBigForOnePass)) throw error;
      held.length = 0;
    }
    if (r) return emitHeld(r, held, ready, out);
  }
  return twoPasses(target, options, ready, out);
}

/** The target's size in bytes (0 when it cannot be opened: the read that follows says why). */
export function targetBytes(target: ResolvedTarget): number {
  try {
    const s = target.open();
    const n = s.size;
    s.close();
    return n;
  } catch {
    return 0;
  }
}

class TooBigForOnePass extends UsageError {}

async function emitHeld(r: SessionInspection, held: [SessionEvent, string | undefined][], ready: (validated: SessionInspection) => Emit, out?: Flushable): Promise<SessionInspection> {
  {
    if (r.error) return r;
    const emit = ready(r);
    for (const [e, text] of held) {
      emit(e, text, false);
      if (out && out.pending >= 1 << 20) await out.flush();
    }
    for (const c of r.closers) emit(c, undefined, true);
    return r;
  }
}

async function twoPasses(target: ResolvedTarget, options: InspectOptions, ready: (validated: SessionInspection) => Emit, out?: Flushable): Promise<SessionInspection> {
  const first = await inspectTarget(target, { ...options, collect: false, skipArtifact: true });
  if (first.error) return first;
  const emit = ready(first);
  // The verdict is in: the second pass only decodes and normalizes.
  const source = target.open();
  let second;
  try {
    second = await replayLogical(source, {
      rawPath: target.rawPath,
      ...(target.expectedId !== undefined ? { expectedId: target.expectedId } : {}),
      ...(options.decoder ? { decoder: options.decoder } : {}),
      ...(options.jobs !== undefined ? { jobs: options.jobs } : {}),
      onLogical: (e, text) => emit(e, text, false),
      ...(out ? { between: () => out.maybeFlush() } : {}),
    });
  } finally {
    source.close();
  }
  if (second.error || second.storedEventCount !== first.storedEventCount) {
    return { ...first, error: { name: 'Error', class: 'Error', message: `${target.path} changed while it was being read`, kind: 'io', stage: 'physical' } };
  }
  for (const c of first.closers) emit(c, undefined, true);
  return first;
}


/**
 * Logs of at least this many bytes on disk are streamed by `streamValidated` (validate, then
 * decode and print) rather than printed or held during the one validating pass: `override` (a test
 * hook, the CLI's hidden `--stream-pass-bytes`: 0 takes the two passes on every log), else 4 MiB.
 */
export function streamPassBytes(override?: number): number {
  return override ?? 4 << 20;
}

/**
 * A packed row member's event JSON as bytes: `head[headStart, headEnd)` (its head, then the row's
 * shared middle), then `line[payloadStart, payloadEnd)` (its text or arguments delta as a JSON
 * string, in the decoded text), then `}}}`.
 */
export class RowMemberBytes {
  /** The middle sits at `HEAD_ROOM`; each member's head is written right before it. */
  head: Buffer = Buffer.allocUnsafe(HEAD_ROOM + 256);
  headStart = HEAD_ROOM;
  headEnd = HEAD_ROOM;
  line: Buffer = Buffer.alloc(0);
  payloadStart = 0;
  payloadEnd = 0;

  /** Start a row: `mid` follows every member's head. */
  row(line: Buffer, mid: string): void {
    this.line = line;
    const need = HEAD_ROOM + Buffer.byteLength(mid);
    if (this.head.length < need) this.head = Buffer.allocUnsafe(need * 2);
    this.headEnd = HEAD_ROOM + this.head.write(mid, HEAD_ROOM);
  }

  /** Point at member `seq` (at `time`: both safe integers, as `verbatimRow` checks), whose payload is `line[start, end)`. */
  member(seq: number, time: number, start: number, end: number): void {
    const h = this.head;
    let at = decimalBefore(h, HEAD_ROOM, time);
    at = writeAsciiBefore(h, at, ROW_MEMBER_HEAD[1]);
    at = decimalBefore(h, at, seq);
    this.headStart = writeAsciiBefore(h, at, ROW_MEMBER_HEAD[0]);
    this.payloadStart = start;
    this.payloadEnd = end;
  }
}

/** Bytes before a row's middle in `RowMemberBytes.head`: room for the longest member head. */
const HEAD_ROOM = 128;

/** Writes ASCII `text` to end at `end`; returns where it starts. */
function writeAsciiBefore(into: Buffer, end: number, text: string): number {
  const at = end - text.length;
  for (let i = 0; i < text.length; i++) into[at + i] = text.charCodeAt(i);
  return at;
}

/** Where `streamValidated` delivers the logical events. */
export interface LineEmit {
  /** A stored event whose logical JSON text is exactly `line` (a view of the decoded text, valid during the call). */
  verbatim(head: VerbatimHead, line: Buffer): void;
  /** A packed row's member (an assistant/chunk event): its seq, time and JSON text. */
  chunk(seq: number, time: number, json: string): void;
  /**
   * A packed row's member whose JSON text is `member`'s bytes (see `RowMemberBytes`: one object,
   * reused for every member, valid during the call): a row whose bytes `verbatimRow` recognises,
   * written without parsing it or making a string. Without this, such members come to `chunk`.
   */
  chunkBytes?(seq: number, time: number, member: RowMemberBytes): void;
  /** Any other logical event (lines to re-serialize, closers last), as `Emit`. */
  event: Emit;
}

/**
 * Every logical event of a log DSH accepts, delivered only once the whole log is validated, in two
 * passes whose memory follows the index and the surface, not the log: the validating pass (pruned,
 * on the read's threads; answered by a saved index when `cache` (if enabled) holds one, saving one otherwise),
 * then one that only decodes the frames and hands each stored line on: its bytes where they are
 * the event's JSON text (`verbatimHead`), else parsed. The inspection's `repairPlan` is always
 * filled. Undefined when the index cannot re-read the log (migrated legacy events): the caller
 * then uses `forEachLogicalEvent`.
 */
export async function streamValidated(
  target: ResolvedTarget,
  options: InspectOptions,
  cache: CacheConfig,
  ready: (validated: SessionInspection) => LineEmit,
  out?: Flushable,
): Promise<SessionInspection | undefined> {
  const indexed = await inspectTargetIndexed(target, { ...options, pruned: true }, { cache, folds: [], needs: [], indexOnly: true });
  try {
    const r = indexed.inspection;
    if (r.error) return r;
    const rereader = indexed.rereader;
    if (!rereader) return undefined;
    const total = r.storedEventCount;
    if (r.repairPlan === null) {
      // A saved index does not keep the plan: the torn frame's recovered events are re-read for it.
      const first = r.torn?.recoveredEventSeqs[0];
      const tail = first !== undefined ? [...(await rereader.events([[first, total - 1]])).values()] : [];
      r.repairPlan = repairPlanOf(r.encoding, r.bytes, r.torn, r.closers, tail);
    }
    const emit = ready(r);
    const member = new RowMemberBytes();
    let seq = 0;
    for await (const lines of rereader.lineBatches()) {
      for (const line of lines) {
        // Past the stored events: a torn tail the validating pass did not commit.
        if (seq >= total) break;
        // A huge line comes as its text (see `LineSplitter`): parsed below, never written from bytes.
        const bytes = typeof line === 'string' ? undefined : line;
        const head = bytes && verbatimHead(bytes);
        if (bytes && head) {
          if (head.seq !== seq) throw changed();
          emit.verbatim(head, bytes);
          seq++;
          continue;
        }
        const row = emit.chunkBytes && bytes ? verbatimRow(bytes) : undefined;
        if (bytes && row) {
          // A canonical packed row: each member written from the line's bytes.
          const { seq0, times, mid, tokens } = row;
          if (seq0 !== seq) throw changed();
          member.row(bytes, mid);
          for (let k = 0; k < times.length; k++) {
            const time = times[k] as number;
            member.member(seq, time, tokens[2 * k] as number, tokens[2 * k + 1] as number);
            emit.chunkBytes!(seq, time, member);
            seq++;
          }
          continue;
        }
        const text = typeof line === 'string' ? line : line.toString('utf8');
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          throw changed();
        }
        if (isRowRecord(parsed)) {
          // A packed row's members, written out without building them.
          try {
            forEachRowMemberJson(parsed, (s, time, json) => {
              if (s !== seq) throw changed();
              emit.chunk(s, time, json);
              seq++;
            });
          } catch (error) {
            throw error instanceof MalformedRow ? changed() : error;
          }
          continue;
        }
        // As the scanner: a plain event comes with its line's text.
        const e = parsed as SessionEvent;
        if (e === null || typeof e !== 'object' || e.seq !== seq) throw changed();
        emit.event(e, text, false);
        seq++;
      }
      if (out) await out.maybeFlush();
      if (seq >= total) break;
    }
    if (seq !== total) throw changed();
    for (const c of r.closers) emit.event(c, undefined, true);
    return r;
  } finally {
    indexed.close();
  }
}

/** Where a streamed document is written, in order (the CLI's buffered stdout): text, bytes, packed row members. */
export interface DocumentSink extends Flushable {
  push(text: string): void;
  pushAscii(text: string): void;
  pushBytes(bytes: Buffer): void;
  pushRowMember(member: RowMemberBytes): void;
}

/**
 * The logical `inspect` document (`inspectView`'s JSON, byte for byte) written to `out` as the events
 * are delivered, never built into one string: a log of `passBytes` or more is validated first (or
 * answered by its saved index), then each stored line's bytes are copied where they are its event's
 * JSON; a smaller one is printed from its one pass. Nothing is written when DSH refuses the log: the
 * inspection carries its error.
 */
export async function streamInspectDocument(target: ResolvedTarget, options: InspectOptions, cache: CacheConfig, out: DocumentSink, passBytes: number): Promise<SessionInspection> {
  let first = true;
  const open = (valid: SessionInspection) => out.push(`{"meta":${toJson(valid.meta)},"encoding":${toJson(valid.encoding)},"storedEventCount":${valid.storedEventCount},"events":[`);
  const onEvent = (e: SessionEvent, text: string | undefined) => {
    if (!first) out.push(',');
    out.push(logicalEventJson(e, text));
    first = false;
  };
  const streamed =
    targetBytes(target) >= passBytes
      ? await streamValidated(
          target,
          options,
          cache,
          (valid) => {
            open(valid);
            return {
              verbatim: (_head, line) => {
                if (!first) out.pushAscii(',');
                out.pushBytes(line);
                first = false;
              },
              chunk: (_seq, _time, json) => {
                out.push(first ? json : ',' + json);
                first = false;
              },
              chunkBytes: (_seq, _time, member) => {
                if (!first) out.pushAscii(',');
                out.pushRowMember(member);
                first = false;
              },
              event: onEvent,
            };
          },
          out,
        )
      : undefined;
  const r =
    streamed ??
    (await forEachLogicalEvent(
      target,
      options,
      (valid) => {
        open(valid);
        return onEvent;
      },
      out,
    ));
  if (r.error) return r;
  const torn = r.torn ? { truncateTo: r.torn.truncateTo, recoveredEventSeqs: r.torn.recoveredEventSeqs } : null;
  out.push(`],"closers":${toJson(r.closers)},"torn":${toJson(torn)},"repairPlan":${toJson(r.repairPlan)}}\n`);
  await out.flush();
  return r;
}
