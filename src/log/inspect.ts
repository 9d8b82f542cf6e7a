import type { RuleCode } from '../core/rules.js';
import { locateRefusal, storageIdentityRefusal, type StoredAt } from './layout.js';
import type { ByteSource } from '../physical/source.js';
import type { FrameDecoder } from '../physical/decoders.js';
import { readArtifact, type ReadProgress, type ResumeAt, type PlaintextSegment, type ReadOutcome, type FrameReport, type TornFrameReport, type ArtifactView } from './read.js';
import { LogicalPipeline, type LogicalResult, type PipelineResume } from './logical.js';
import { LegacyNormalizer } from './legacy.js';
import v8 from 'node:v8';
import { LogError, ResourceLimit, serializeError, type SerializedError, type FailureKind } from './errors.js';
import { packBatchLines } from './rows.js';
import type { Encoding, SessionEvent, SessionHeader } from './types.js';
import type { CloserReason } from './closers.js';
import type { LineInfo } from './scanner.js';
import { toJson } from '../core/json.js';

export type View = 'artifact' | 'stored' | 'logical';

export interface RepairPlan {
  /** Would DSH's committing load() change the file? */
  writes: boolean;
  /** Truncate the file to this byte offset first (null: no truncation). */
  truncateTo: number | null;
  /** Bytes that truncation removes. */
  truncatedBytes: number;
  /** Recovered events DSH re-appends (zstd torn frame), by seq. */
  reappendSeqs: number[];
  /** Synthetic closers DSH appends, by seq. */
  closerSeqs: number[];
  /** How the append is encoded: raw lines, or one new checksummed zstd frame. */
  appendAs: 'lines' | 'zstd-frame' | null;
  /** The exact plaintext DSH appends (raw: the bytes; zstd: the frame's plaintext). */
  appendText: string;
}

export interface TornSummary {
  truncateTo: number;
  recoveredEventSeqs: number[];
  /** Bytes of the torn tail on disk. */
  tornBytes: number;
  /** Decoded bytes after the last complete record that are lost. */
  lostPlaintextBytes: number;
}

export interface Inspection {
  source: string;
  encoding: Encoding;
  encodingBy: ReadOutcome['encodingBy'];
  bytes: number;
  decoder?: string;
  meta: SessionHeader | null;
  storedEventCount: number;
  /** Logical view (stored normalized + closers), when collected. */
  events?: SessionEvent[];
  /** Stored view as decoded (legacy shapes), when asked for. */
  storedEvents?: SessionEvent[];
  closers: SessionEvent[];
  closerReasons: CloserReason[];
  torn: TornSummary | null;
  repairPlan: RepairPlan | null;
  artifact: Omit<ArtifactView, 'error'> & { error?: SerializedError & { rule?: RuleCode } };
  frames?: FrameReport[];
  tornFrame?: TornFrameReport | null;
  migratedEvents: number;
  ignorableUnknown: number[];
  /** First defect that ended the preserved prefix (tolerated torn region). */
  defect?: { message: string; line: number };
  /** Accepted logs: the current surface's tool/result nodes among the stored events (an index resumes from them). */
  surfaceToolResults?: number[];
  /**
   * Accepted logs: where a read of this log grown by appends can continue (raw: the committed
   * offset; zstd: the end of the last complete frame). Absent when the torn final frame yielded
   * events (the state before them is not kept).
   */
  resumePoint?: { at: number; committedBytes: number; headerBytes: number };
  surface?: LogicalResult['surface'];
  error?: SerializedError & { kind: FailureKind; stage: string; seq?: number; byteOffset?: number; rule?: RuleCode };
}

export interface InspectOptions {
  /** A by-id read: where DSH's lookup found the artifact; its identity check refuses (without it, only a header DSH cannot place is). */
  storedAt?: StoredAt;
  rawPath?: string;
  expectedId?: string;
  decoder?: FrameDecoder;
  /** Collect the logical events (default true). */
  collect?: boolean;
  /** Also collect the stored events as decoded (pre-normalization). */
  collectStored?: boolean;
  frameDetail?: boolean;
  /** Each normalized stored event; `text` is its JSON line when the event is byte-for-byte the stored line. */
  onLogical?: (event: SessionEvent, text?: string) => void;
  /** Awaited between decoded chunks (output backpressure). */
  between?: () => Promise<void> | void;
  /** Called with the header once it parses (before any event). */
  onMeta?: (meta: SessionHeader) => void;
  /** Do not hash the artifact view (reads that do not report it). */
  skipArtifact?: boolean;
  onStored?: (event: SessionEvent, line: LineInfo) => void;
  /** zstd: where each run of logical text came from (see `PlaintextSegment`). */
  onSegment?: (segment: PlaintextSegment) => void;
  /** See `ReadOptions.bigFrameBytes`. */
  bigFrameBytes?: number;
  onArtifact?: (chunk: Buffer) => void;
  keepReplacements?: boolean;
  /** Lines longer than this are unparsable (DSH: V8's string limit). */
  maxLineBytes?: number;
  /** Threads for the read (see `ReadOptions.jobs`; default 1). */
  jobs?: number;
  /** See `ReadOptions.mainShare`. */
  mainShare?: number;
  /**
   * `onLogical` and `onStored` read only what a `PrunedEvent` carries (see `ReadOptions.pruned`):
   * with workers they parse and check the lines. Reads with neither consumer are pruned anyway;
   * collecting reads never are.
   */
  pruned?: boolean;
  /** See `ReadOptions.leanRows` (collecting reads never take it). */
  leanRows?: (meta: SessionHeader) => boolean;
  /** Validate only what follows an accepted, unchanged prefix (see `ReadOptions.resume`); `collect` must be off. */
  resume?: { read: ResumeAt; pipeline: PipelineResume };
  /** See `ReadOptions.onProgress`. */
  onProgress?: (progress: ReadProgress) => void;
}

/** Logical bytes a collecting read may hold: DSH_MAX_HELD_BYTES, else a fifth of the V8 heap limit (held events and the views built on them take ~4x their logical bytes). */
export function heldBytesBudget(env: NodeJS.ProcessEnv = process.env): number {
  const fromEnv = Number(env['DSH_MAX_HELD_BYTES']);
  if (Number.isFinite(fromEnv) && fromEnv > 0) return fromEnv;
  return Math.floor(v8.getHeapStatistics().heap_size_limit / 5);
}

function errorOut(error: LogError, stage: string): NonNullable<Inspection['error']> {
  return {
    ...serializeError(error),
    kind: error.kind,
    stage,
    ...(error.seq !== undefined ? { seq: error.seq } : {}),
    ...(error.byteOffset !== undefined ? { byteOffset: error.byteOffset } : {}),
    ...(error.rule !== undefined ? { rule: error.rule } : {}),
  };
}

/**
 * Cold inspection of one artifact, as DSH's `inspect()` computes it, without
 * touching the file: stored view, legacy normalization, refusals, crash
 * closers and restore validation, plus what DSH's committing `load()` would write.
 */
export async function inspectSource(source: ByteSource, options: InspectOptions = {}): Promise<Inspection> {
  const rawPath = options.rawPath ?? source.name;
  let pipeline: LogicalPipeline | undefined;
  const collect = options.collect ?? true;
  const storedEvents: SessionEvent[] | undefined = options.collectStored ? [] : undefined;
  // Holding events costs ~2.6x their logical bytes in V8; refuse clearly before the heap runs out.
  const holding = collect || storedEvents !== undefined;
  const budget = heldBytesBudget();
  let held = 0;
  let lastHeldLine = -1;
  // Normalized events decoded from a torn final frame (DSH re-appends them on load()).
  const tornTail: SessionEvent[] = [];
  let inTornTail = false;
  let lineText: string | undefined;
  let header: SessionHeader | undefined;
  const outcome = await readArtifact(source, {
    rawPath,
    ...(options.expectedId !== undefined ? { expectedId: options.expectedId } : {}),
    ...(options.decoder ? { decoder: options.decoder } : {}),
    ...(options.onArtifact ? { onArtifact: options.onArtifact } : {}),
    frameDetail: options.frameDetail ?? false,
    ...(options.skipArtifact ? { skipArtifact: true } : {}),
    ...(options.between ? { between: options.between } : {}),
    ...(options.maxLineBytes !== undefined ? { maxLineBytes: options.maxLineBytes } : {}),
    ...(options.onSegment ? { onSegment: options.onSegment } : {}),
    ...(options.bigFrameBytes !== undefined ? { bigFrameBytes: options.bigFrameBytes } : {}),
    ...(options.jobs !== undefined ? { jobs: options.jobs } : {}),
    ...(options.mainShare !== undefined ? { mainShare: options.mainShare } : {}),
    pruned: !holding && (options.pruned === true || (!options.onLogical && !options.onStored)),
    ...(!holding && options.leanRows ? { leanRows: options.leanRows } : {}),
    ...(options.resume ? { resume: options.resume.read, skipArtifact: true } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    onEvent: (event, line) => {
      if (!pipeline) {
        // Header is known by the time the first event arrives.
        return;
      }
      if (holding && line.line !== lastHeldLine) {
        // A packed row expands to many events: count its bytes once.
        lastHeldLine = line.line;
        held += line.end - line.start;
        if (held > budget) {
          throw new ResourceLimit(
            `this view holds the whole logical log in memory, and this log passes ${Math.round(budget / 1e6)} MB of logical text (the budget for a ${Math.round(v8.getHeapStatistics().heap_size_limit / 1e6)} MB V8 heap); ` +
              'rerun with a larger heap (NODE_OPTIONS=--max-old-space-size=<MiB>) or DSH_MAX_HELD_BYTES, or use the streaming commands (inspect, events, check, frames)',
          );
        }
      }
      storedEvents?.push(event);
      options.onStored?.(event, line);
      lineText = line.text;
      pipeline.observe(event);
      lineText = undefined;
    },
    onTornTail: () => {
      inTornTail = true;
    },
    onHeader: (meta: SessionHeader) => {
      header = meta;
      options.onMeta?.(meta);
      pipeline = new LogicalPipeline(meta, rawPath, {
        collect,
        onEvent: (event, stored) => {
          if (inTornTail) tornTail.push(event);
          options.onLogical?.(event, event === stored ? lineText : undefined);
        },
        ...(options.keepReplacements !== undefined ? { keepReplacements: options.keepReplacements } : {}),
      });
      if (options.resume) pipeline.resumeFrom(options.resume.pipeline);
    },
  });
  const artifact: Inspection['artifact'] = { filename: 'session.jsonl' };
  if (outcome.artifact.meta) artifact.meta = outcome.artifact.meta;
  if (outcome.artifact.contentBytes !== undefined) artifact.contentBytes = outcome.artifact.contentBytes;
  if (outcome.artifact.contentSha256 !== undefined) artifact.contentSha256 = outcome.artifact.contentSha256;
  if (outcome.artifact.lines !== undefined) artifact.lines = outcome.artifact.lines;
  if (outcome.artifact.error) {
    const e = outcome.artifact.error;
    artifact.error = { ...serializeError(e), ...(e.rule !== undefined ? { rule: e.rule } : {}) };
  }
  const result: Inspection = {
    source: source.name,
    encoding: outcome.encoding,
    encodingBy: outcome.encodingBy,
    bytes: outcome.size,
    ...(outcome.decoder ? { decoder: outcome.decoder } : {}),
    meta: outcome.stored?.meta ?? null,
    storedEventCount: outcome.stored?.eventCount ?? 0,
    closers: [],
    closerReasons: [],
    torn: null,
    repairPlan: null,
    artifact,
    ...(outcome.frames ? { frames: outcome.frames } : {}),
    ...(outcome.tornFrame !== undefined ? { tornFrame: outcome.tornFrame } : {}),
    migratedEvents: 0,
    ignorableUnknown: [],
    ...(storedEvents ? { storedEvents } : {}),
  };
  if (outcome.stored?.defect) result.defect = outcome.stored.defect;
  if (outcome.stored?.torn) {
    const t = outcome.stored.torn;
    result.torn = { truncateTo: t.truncateTo, recoveredEventSeqs: t.recoveredEventSeqs, tornBytes: t.tornBytes, lostPlaintextBytes: t.lostPlaintextBytes };
  }
  // DSH's lookup by the header's id fails before its backend reads the log.
  const unlocatable = header ? locateRefusal(header, options.storedAt) : undefined;
  if (unlocatable) {
    result.error = errorOut(unlocatable, 'locate');
    return result;
  }
  if (outcome.error || !outcome.stored || !pipeline) {
    const error = outcome.error ?? new LogError('empty or header-less session log', { rule: 'DSH-A1' });
    result.error = errorOut(error, 'physical');
    return result;
  }
  // DSH's backend places the header on disk before any logical check.
  const unplaceable = storageIdentityRefusal(outcome.stored.meta, rawPath, options.storedAt);
  if (unplaceable) {
    result.error = errorOut(unplaceable, 'storage-identity');
    return result;
  }
  const logical = pipeline.finish();
  result.migratedEvents = logical.migratedEvents;
  result.ignorableUnknown = logical.ignorableUnknown;
  if (logical.error) {
    result.error = errorOut(logical.error, logical.failedStage ?? 'logical');
    return result;
  }
  result.closers = logical.closers;
  result.closerReasons = logical.closerReasons;
  if (logical.storedEvents) result.events = [...logical.storedEvents, ...logical.closers];
  if (logical.surface) {
    result.surface = logical.surface;
    result.surfaceToolResults = pipeline.storedToolResultSeqs();
  }
  result.repairPlan = planRepair(outcome, logical, result.torn, tornTail);
  const stored = outcome.stored;
  if (!result.torn || result.torn.recoveredEventSeqs.length === 0) {
    result.resumePoint = {
      at: result.torn ? result.torn.truncateTo : outcome.size,
      committedBytes: stored.committedBytes,
      headerBytes: stored.headerBytes ?? 0,
    };
  }
  return result;
}

function planRepair(outcome: ReadOutcome, logical: LogicalResult, torn: TornSummary | null, tail: SessionEvent[]): RepairPlan {
  return repairPlanOf(outcome.encoding, outcome.size, torn, logical.closers, tail);
}

/**
 * What DSH's committing load() does to an accepted artifact of `encoding` and `size` bytes: from
 * its torn-tail facts, its crash closers and `tail`, the stored events the torn frame's recovered
 * seqs are taken from (a log with neither torn tail nor closers needs none of them).
 */
export function repairPlanOf(encoding: Encoding, size: number, torn: TornSummary | null, closers: readonly SessionEvent[], tail: readonly SessionEvent[]): RepairPlan {
  const recoveredSeqs = torn?.recoveredEventSeqs ?? [];
  const writes = torn !== null || closers.length > 0;
  let appendText = '';
  let appendAs: RepairPlan['appendAs'] = null;
  if (encoding === 'none') {
    if (closers.length > 0) {
      appendAs = 'lines';
      appendText = closers.map((c) => toJson(c) + '\n').join('');
    }
  } else {
    const recovered = recoveredSeqs.length > 0 ? tail.filter((e) => e.seq >= (recoveredSeqs[0] as number)) : [];
    const batch = [...recovered, ...closers];
    if (batch.length > 0) {
      appendAs = 'zstd-frame';
      appendText = packBatchLines(batch, true).join('\n') + '\n';
    }
  }
  return {
    writes,
    truncateTo: torn ? torn.truncateTo : null,
    truncatedBytes: torn ? size - torn.truncateTo : 0,
    reappendSeqs: recoveredSeqs,
    closerSeqs: closers.map((c) => c.seq),
    appendAs,
    appendText,
  };
}

export interface ReplayOptions {
  rawPath?: string;
  expectedId?: string;
  decoder?: FrameDecoder;
  between?: () => Promise<void> | void;
  jobs?: number;
  /** Each logical (normalized) stored event; `text` as in `InspectOptions.onLogical`. */
  onLogical: (event: SessionEvent, text?: string) => void;
}

/**
 * A second, light pass over a log `inspectSource` already accepted: the
 * stored events normalized exactly as the logical view has them, with none
 * of the validation stages (their verdict is known). Returns the stored event
 * count so the caller can tell a file that changed between the passes.
 */
export async function replayLogical(source: ByteSource, options: ReplayOptions): Promise<{ storedEventCount: number; error?: LogError }> {
  let normalizer: LegacyNormalizer | undefined;
  const outcome = await readArtifact(source, {
    rawPath: options.rawPath ?? source.name,
    ...(options.expectedId !== undefined ? { expectedId: options.expectedId } : {}),
    ...(options.decoder ? { decoder: options.decoder } : {}),
    ...(options.between ? { between: options.between } : {}),
    ...(options.jobs !== undefined ? { jobs: options.jobs } : {}),
    skipArtifact: true,
    onHeader: (meta) => {
      normalizer = new LegacyNormalizer(meta.id);
    },
    onEvent: (stored, line) => {
      const event = normalizer!.normalize(stored);
      options.onLogical(event, event === stored ? line.text : undefined);
    },
  });
  return { storedEventCount: outcome.stored?.eventCount ?? 0, ...(outcome.error ? { error: outcome.error } : {}) };
}
