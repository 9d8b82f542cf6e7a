/**
 * An offline Host `session.fork` (see views/fork.ts for the plan): the child
 * session written as a NEW artifact into a root other than the source's, in
 * the same walk over the source that folds the seed, then read back once and
 * compared with what was written.
 *
 * Source reads: one walk for the boundary, one over the seed (plan and copy).
 * The child is read back once, by a validating pass whose events are digested
 * as JSON text and compared with the digest of what was written. Equal text is
 * equal JSON values; where the writer's chunk packing changed an event's key
 * order the digests differ, and the read-back falls back to comparing event
 * by event with a re-read of the source seed (key order not mattering), as
 * exact as before, at the cost of that third read.
 */
import { createHash } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../log/errors.js';
import { sessionPath } from '../log/layout.js';
import { inspectTarget, inspectTargetIndexed } from '../log/session.js';
import { deepEqualJson } from '../log/surface.js';
import { resolveTarget, scanRoot } from '../log/target.js';
import type { Encoding, SessionEvent, SessionHeader } from '../log/types.js';
import { ArtifactFileWriter } from '../log/writer.js';
import type { FrameDecoder } from '../physical/decoders.js';
import { outputRefusal, type OutputInput } from '../core/publish.js';
import { endSeedOf, planSeedStreamed, scanForkStreamed, type ForkPlan, type ForkPlanOptions } from '../views/fork.js';
import { toJson } from '../core/json.js';

/** A source to fork: its header, its stored event count, where it was read from, and a re-read of its logical events. */
export interface ForkSource {
  header: SessionHeader;
  storedEventCount: number;
  target: { path: string; root?: string };
  /** Starts a re-read of the logical events (closers included), in batches. */
  read: () => AsyncIterable<readonly SessionEvent[]>;
}

export interface ForkOptions extends Omit<ForkPlanOptions, 'storedEventCount'> {
  /** Write the child into this session root (DSH layout); never the source's own root. Omitted: plan only. */
  out?: string;
  /** With `out`: check where the child would go, write nothing. */
  dryRun?: boolean;
  /** The child artifact's encoding (default zstd). */
  encoding?: Encoding;
  /** zstd decoder for reading the child back. */
  decoder?: FrameDecoder;
}

/** What `dsh fork` did: the plan, where the child is (or would be), whether it was written and read back as planned. */
export interface ForkOutcome {
  plan: ForkPlan;
  /** The child artifact's path; null without `out`. */
  path: string | null;
  written: boolean;
  /** After a write: the child reads back as exactly the planned header and seed + end-seed. */
  verified?: boolean;
  /** Why a written child failed the read-back, when DSH refuses it (its message). */
  readBackError?: string;
  /**
   * How the read-back was compared: `digest` (the JSON text of every event read back equals what was
   * written), or `events` (key order differed, so each event was compared as a JSON value with the source's).
   */
  verifiedBy?: 'digest' | 'events';
}

/** Logical events per durable append of the child (estimated JSON bytes): one append for any seed below it. */
const CHILD_BATCH_BYTES = 4 << 20;

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * Where the child goes under `out`, or why it may not be written there (UsageError): the one
 * write-safety rule for new outputs ({@link outputRefusal}) judges the root and then the child's
 * path against the source, so a fork never lands in the source's root, session directory or file.
 */
function childPathIn(out: string, child: SessionHeader, source: ForkSource['target'], encoding: Encoding): string {
  const inputs: OutputInput[] = [source.root !== undefined ? { path: source.path, root: source.root } : source.path];
  const outRoot = real(out);
  const childPath = sessionPath(outRoot, child, encoding);
  const refused = outputRefusal(outRoot, inputs, { directory: true }) ?? outputRefusal(childPath, inputs);
  if (refused !== undefined) throw new UsageError(refused);
  if (existsSync(childPath) || existsSync(path.dirname(childPath))) throw new UsageError(`child session path ${childPath} already exists`);
  if (existsSync(outRoot)) {
    const scan = scanRoot(outRoot);
    if (scan.sessions.some((s) => s.id === child.id)) throw new UsageError(`session "${child.id}" already exists`);
    const other = scan.sessions.find((s) => s.encoding !== encoding);
    if (other) throw new UsageError(`--out ${out} already holds ${other.encoding === 'zstd' ? 'zstd' : 'raw'} sessions (${other.path}); a root uses one encoding — pass --encoding ${other.encoding}`);
  }
  return childPath;
}

/** A digest of events' JSON text, one at a time (equal digests: equal events as JSON values). */
class EventsDigest {
  private readonly hash = createHash('sha256');
  count = 0;
  push(text: string): void {
    this.hash.update(text);
    this.hash.update('\n');
    this.count++;
  }
  digest(): string {
    return this.hash.digest('hex');
  }
}

/** Appends the seed in batches of about CHILD_BATCH_BYTES, digesting what it writes. */
class ChildAppender {
  private batch: SessionEvent[] = [];
  private bytes = 0;
  readonly written = new EventsDigest();
  constructor(private readonly writer: ArtifactFileWriter) {}

  async push(events: readonly SessionEvent[]): Promise<void> {
    for (const e of events) {
      const text = toJson(e);
      this.batch.push(e);
      this.written.push(text);
      this.bytes += text.length;
      if (this.bytes >= CHILD_BATCH_BYTES) await this.flush();
    }
  }

  /** The end-seed (when the plan appends one) goes into the last append. */
  async finish(end: SessionEvent | null): Promise<void> {
    if (end) {
      this.batch.push(end);
      this.written.push(toJson(end));
    }
    if (this.batch.length > 0) await this.flush();
  }

  private async flush(): Promise<void> {
    const batch = this.batch;
    this.batch = [];
    this.bytes = 0;
    await this.writer.append(batch);
  }
}

/** Events of batches, one at a time. */
async function* each(batches: AsyncIterable<readonly SessionEvent[]>): AsyncGenerator<SessionEvent> {
  for await (const b of batches) yield* b;
}

/** Whether two event streams are equal, event by event (as JSON values). */
async function sameEvents(a: AsyncIterable<readonly SessionEvent[]>, b: AsyncIterable<readonly SessionEvent[]>): Promise<boolean> {
  const x = each(a);
  const y = each(b);
  try {
    for (;;) {
      const [p, q] = await Promise.all([x.next(), y.next()]);
      if (p.done || q.done) return Boolean(p.done) && Boolean(q.done);
      if (!deepEqualJson(p.value, q.value)) return false;
    }
  } finally {
    await x.return(undefined);
    await y.return(undefined);
  }
}

/** The source's seed re-read, then the end-seed: what the child must read back as. */
async function* seedOf(plan: ForkPlan, read: ForkSource['read']): AsyncGenerator<readonly SessionEvent[]> {
  let left = plan.seedLength;
  for await (const batch of read()) {
    if (left <= 0) break;
    yield batch.length <= left ? batch : batch.slice(0, left);
    left -= batch.length;
  }
  const end = endSeedOf(plan);
  if (end) yield [end];
}

type ReadBack = Pick<ForkOutcome, 'verified' | 'readBackError' | 'verifiedBy'>;

/** Whether the child at `file` reads back as the plan's header and exactly the seed + end-seed `written` digested. */
async function readBack(file: string, plan: ForkPlan, written: EventsDigest, source: ForkSource, decoder?: FrameDecoder): Promise<ReadBack> {
  const back = new EventsDigest();
  const r = await inspectTarget(resolveTarget(file), {
    ...(decoder ? { decoder } : {}),
    collect: false,
    skipArtifact: true,
    onLogical: (e, text) => back.push(text ?? toJson(e)),
  });
  if (r.error) return { verified: false, readBackError: r.error.message };
  if (!deepEqualJson(r.meta, plan.child) || r.closers.length > 0 || back.count !== written.count) return { verified: false };
  if (back.digest() === written.digest()) return { verified: true, verifiedBy: 'digest' };
  // Same events in another key order (or different events): compare them as JSON values.
  const again = await inspectTargetIndexed(resolveTarget(file), { ...(decoder ? { decoder } : {}) });
  try {
    const verified = again.stream !== undefined && (await sameEvents(again.stream(), seedOf(plan, source.read)));
    return verified ? { verified, verifiedBy: 'events' } : { verified };
  } finally {
    again.close();
  }
}

/**
 * Plan the Host fork of `source` (throws ForkUnavailable when there is no boundary) and, with `out`,
 * write the child into that root (throws UsageError where it may not go) and read it back.
 */
export async function forkSession(source: ForkSource, options: ForkOptions = {}): Promise<ForkOutcome> {
  const scanned = await scanForkStreamed(source.header, source.read, { ...options, storedEventCount: source.storedEventCount });
  const encoding = options.encoding ?? 'zstd';
  const childPath = options.out !== undefined ? childPathIn(options.out, scanned.child, source.target, encoding) : null;
  if (childPath === null || options.dryRun) {
    return { plan: await planSeedStreamed(scanned, source.read), path: childPath, written: false };
  }
  const writer = await ArtifactFileWriter.create(childPath, { header: scanned.child, encoding });
  let plan: ForkPlan;
  let appender: ChildAppender;
  try {
    appender = new ChildAppender(writer);
    plan = await planSeedStreamed(scanned, source.read, (events) => appender.push(events));
    await appender.finish(endSeedOf(plan));
  } catch (error) {
    await writer.abort();
    throw error;
  }
  await writer.close();
  return { plan, path: childPath, written: true, ...(await readBack(childPath, plan, appender.written, source, options.decoder)) };
}
