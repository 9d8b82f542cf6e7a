/**
 * Host `session.fork` (query-export.md §6.1, format.md §10; seed 004 §10-11):
 * boundary, cut and what the child inherits, plus the child artifact an
 * offline fork would write.
 *
 * Boundary: with `atSeq`, the first `turn/end` whose seq >= atSeq; if none and
 * atSeq <= last seq → refused (`has not completed the turn containing event`);
 * atSeq omitted or past the tail → the last `turn/end`; none → refused
 * (`has no completed turn to fork from`). Cut = boundary + 1, extended over
 * trailing standalone events up to (not including) the next `turn/start`.
 * Seed = events[0..cut-1]; seedLength = cut. The child's first lifecycle
 * appends `session/end-seed {}` at seq `cut` unless the seed already ends
 * with one.
 */
import { randomUUID } from 'node:crypto';
import type { SessionEvent, SessionHeader } from '../log/types.js';
import { SurfaceFold, deriveEventMessage } from '../log/surface.js';
import { readTitle } from './messages.js';
import { reasonText } from './summary.js';
import { NodeValues } from './surface-nodes.js';

/** No fork boundary exists at the requested point (`dsh fork`). */
export class ForkUnavailable extends Error {
  readonly code = 'fork-unavailable';
  constructor(message: string) {
    super(message);
    this.name = 'ForkUnavailable';
  }
}

export interface ForkBoundary {
  /** seq of the chosen turn/end. */
  boundarySeq: number;
  /** Number of inherited events (= seedLength). */
  cut: number;
  /** How the boundary was chosen. */
  rule: 'anchored' | 'last-completed-turn';
}

/**
 * What the boundary rule and the preset read of the whole log, gathered one
 * event at a time (the log need not be held): the first `turn/end` at or after
 * `atSeq`, the last `turn/end`, the first `turn/start` after each, the last
 * `agent-preset/selected`.
 */
export class ForkScan {
  count = 0;
  lastSeq = -1;
  private anchored: number | undefined;
  private anchoredCut: number | undefined;
  private lastEnd: number | undefined;
  private lastEndCut: number | undefined;
  private preset: string | undefined;
  constructor(private readonly atSeq?: number) {}

  push(e: SessionEvent): void {
    const i = this.count++;
    this.lastSeq = e.seq;
    if (e.type === 'turn/end') {
      if (this.atSeq !== undefined && this.anchored === undefined && e.seq >= this.atSeq) this.anchored = e.seq;
      this.lastEnd = e.seq;
      this.lastEndCut = undefined;
    } else if (e.type === 'turn/start') {
      if (this.anchored !== undefined && this.anchoredCut === undefined && i > this.anchored) this.anchoredCut = i;
      if (this.lastEnd !== undefined && this.lastEndCut === undefined && i > this.lastEnd) this.lastEndCut = i;
    } else if (e.type === 'agent-preset/selected' && typeof e.data?.agentPreset === 'string') this.preset = e.data.agentPreset;
  }

  /** The Host's boundary rule; throws ForkUnavailable with DSH's text. */
  boundary(sessionId: string): ForkBoundary {
    const { atSeq, lastSeq } = this;
    let boundary: number | undefined;
    let cut: number | undefined;
    let rule: ForkBoundary['rule'] = 'anchored';
    if (atSeq !== undefined && this.anchored !== undefined) {
      boundary = this.anchored;
      cut = this.anchoredCut;
    }
    if (boundary === undefined && (atSeq === undefined || atSeq > lastSeq)) {
      rule = 'last-completed-turn';
      boundary = this.lastEnd;
      cut = this.lastEndCut;
    }
    if (boundary === undefined) {
      throw new ForkUnavailable(
        atSeq !== undefined && atSeq <= lastSeq
          ? `session "${sessionId}" has not completed the turn containing event ${atSeq}`
          : `session "${sessionId}" has no completed turn to fork from`,
      );
    }
    // Cut = boundary + 1, over trailing standalone events up to the next turn/start.
    return { boundarySeq: boundary, cut: cut ?? Math.max(boundary + 1, this.count), rule };
  }

  /** DSH's `resolveSessionPreset`: the last `agent-preset/selected` in the log, else the header's preset. */
  sessionPreset(header: SessionHeader): string | undefined {
    return this.preset ?? header.agentPreset;
  }
}

/** The Host's boundary rule; throws ForkUnavailable with DSH's text. */
export function forkBoundary(sessionId: string, events: readonly SessionEvent[], atSeq?: number): ForkBoundary {
  return scanned(events, atSeq).boundary(sessionId);
}

function scanned(events: readonly SessionEvent[], atSeq?: number): ForkScan {
  const scan = new ForkScan(atSeq);
  for (const e of events) scan.push(e);
  return scan;
}

/** DSH's `resolveSessionPreset`: the last `agent-preset/selected` in the log, else the header's preset. */
export function sessionPreset(header: SessionHeader, events: readonly SessionEvent[]): string | undefined {
  return scanned(events).sessionPreset(header);
}

/** What the child inherits, folded over the seed (events `0..cut-1`) one event at a time. */
export class SeedFold {
  private readonly countsByType: Record<string, number> = {};
  private readonly fold = new SurfaceFold(true);
  private readonly messages = new NodeValues<boolean>();
  private turns = 0;
  private lastTurn: ForkPlan['inherits']['lastTurn'] = null;
  private title: SessionEvent | undefined;
  private last: SessionEvent | undefined;
  private readonly syntheticSeqs: number[] = [];
  constructor(private readonly stored: number) {}

  push(e: SessionEvent): void {
    this.countsByType[e.type] = (this.countsByType[e.type] ?? 0) + 1;
    if (e.type === 'turn/end') {
      this.turns++;
      this.lastTurn = { turn: typeof e.data?.turn === 'number' ? e.data.turn : null, reason: reasonText(e.data?.reason), endSeq: e.seq };
    }
    if (e.type === 'session/title') this.title = e;
    if (e.seq >= this.stored) this.syntheticSeqs.push(e.seq);
    this.messages.before(this.fold.nodes);
    this.fold.apply(e);
    this.messages.after(this.fold.nodes, e.seq, deriveEventMessage(e) !== null, e.surfaceOp !== undefined && e.surfaceOp !== 'append');
    this.last = e;
  }

  inherits(): { inherits: ForkPlan['inherits']; endsWithEndSeed: boolean } {
    const title = this.title ? readTitle([this.title]) : null;
    return {
      inherits: {
        countsByType: this.countsByType,
        turns: this.turns,
        lastTurn: this.lastTurn,
        surfaceNodes: this.fold.nodes.length,
        modelMessages: this.fold.nodes.filter((s) => this.messages.get(s) === true).length,
        replacements: this.fold.replacements.length,
        title: title && typeof title['title'] === 'string' ? (title['title'] as string) : null,
        syntheticSeqs: this.syntheticSeqs,
      },
      endsWithEndSeed: this.last?.type === 'session/end-seed',
    };
  }
}

/** What `dsh fork` would create: the source, the boundary, the seed of the child session. */
export interface ForkPlan {
  source: { id: string; events: number; lastSeq: number | null; cwd?: string; agentPreset?: string };
  atSeq: number | null;
  boundary: ForkBoundary;
  seedLength: number;
  /** Events after the boundary turn/end that the cut also inherits (title, injections, end-seed…). */
  trailingSeqs: number[];
  /** Events of the source the child does not get. */
  excludedEvents: number;
  /** The next source event after the cut (a turn/start), if any. */
  nextTurnStartSeq: number | null;
  inherits: {
    countsByType: Record<string, number>;
    turns: number;
    lastTurn: { turn: number | null; reason: string; endSeq: number } | null;
    surfaceNodes: number;
    modelMessages: number;
    replacements: number;
    title: string | null;
    /** The source's synthetic crash closers that fall inside the seed (logical view only). */
    syntheticSeqs: number[];
  };
  /** The seed already ends with `session/end-seed`, so the child gets no new marker. */
  seedEndsWithEndSeed: boolean;
  /** Seq of the appended `session/end-seed` (null when the seed already ends with one). */
  endSeedSeq: number | null;
  child: SessionHeader;
}

export interface ForkPlanOptions {
  atSeq?: number;
  childId?: string;
  createdAt?: number;
  /** Events at or after this seq are synthetic closers (logical view). */
  storedEventCount?: number;
}

export function defaultChildId(): string {
  return `session-${randomUUID()}`;
}

/** Plan the Host fork of a logically inspected source. Throws ForkUnavailable. */
export function planFork(header: SessionHeader, events: readonly SessionEvent[], options: ForkPlanOptions = {}): ForkPlan {
  const scan = scanned(events, options.atSeq);
  const boundary = scan.boundary(header.id);
  const seed = new SeedFold(options.storedEventCount ?? events.length);
  for (let i = 0; i < boundary.cut; i++) seed.push(events[i] as SessionEvent);
  const next = events.length > boundary.cut ? (events[boundary.cut] as SessionEvent).seq : null;
  return forkPlanOf({ header, scan, boundary, child: childHeaderOf(header, scan, boundary, options), options }, seed, next);
}

/** The first walk of a streamed fork: the boundary, and the header the child gets. */
export interface ForkScanned {
  header: SessionHeader;
  scan: ForkScan;
  boundary: ForkBoundary;
  child: SessionHeader;
  options: ForkPlanOptions;
}

/** The first walk over a log read in batches (`read` starts a re-read): the boundary and the child's header. Throws ForkUnavailable. */
export async function scanForkStreamed(header: SessionHeader, read: () => AsyncIterable<readonly SessionEvent[]>, options: ForkPlanOptions = {}): Promise<ForkScanned> {
  const scan = new ForkScan(options.atSeq);
  for await (const batch of read()) for (const e of batch) scan.push(e);
  const boundary = scan.boundary(header.id);
  return { header, scan, boundary, child: childHeaderOf(header, scan, boundary, options), options };
}

/**
 * The second walk: fold the seed into the plan, handing each batch's seed events to `onSeed` (awaited,
 * in order) so a caller can copy the seed in the same walk.
 */
export async function planSeedStreamed(
  scanned: ForkScanned,
  read: () => AsyncIterable<readonly SessionEvent[]>,
  onSeed?: (events: readonly SessionEvent[]) => Promise<void> | void,
): Promise<ForkPlan> {
  const { cut } = scanned.boundary;
  const seed = new SeedFold(scanned.options.storedEventCount ?? scanned.scan.count);
  let next: number | null = null;
  let i = 0;
  for await (const batch of read()) {
    const take = Math.min(batch.length, cut - i);
    for (let k = 0; k < take; k++) seed.push(batch[k] as SessionEvent);
    i += take;
    if (onSeed && take > 0) await onSeed(take === batch.length ? batch : batch.slice(0, take));
    if (take < batch.length) {
      next = (batch[take] as SessionEvent).seq;
      break;
    }
  }
  return forkPlanOf(scanned, seed, next);
}

/**
 * {@link planFork} over a log read twice in batches (`read` starts a re-read), never held: one walk for
 * the boundary, one over the seed.
 */
export async function planForkStreamed(header: SessionHeader, read: () => AsyncIterable<readonly SessionEvent[]>, options: ForkPlanOptions = {}): Promise<ForkPlan> {
  return planSeedStreamed(await scanForkStreamed(header, read, options), read);
}

/** The child's header: a fresh id, the source's cwd and resolved preset, `parentSession` and `seedLength`. */
function childHeaderOf(header: SessionHeader, scan: ForkScan, boundary: ForkBoundary, options: ForkPlanOptions): SessionHeader {
  const preset = scan.sessionPreset(header);
  return {
    version: 0,
    id: options.childId ?? defaultChildId(),
    createdAt: options.createdAt ?? Date.now(),
    ...(header.cwd !== undefined ? { cwd: header.cwd } : {}),
    parentSession: header.id,
    seedLength: boundary.cut,
    delegationDepth: 0,
    ...(preset !== undefined ? { agentPreset: preset } : {}),
  };
}

function forkPlanOf({ header, scan, boundary, child, options }: ForkScanned, seed: SeedFold, nextTurnStartSeq: number | null): ForkPlan {
  const cut = boundary.cut;
  const { inherits, endsWithEndSeed } = seed.inherits();
  const preset = scan.sessionPreset(header);
  const trailingSeqs: number[] = [];
  for (let s = boundary.boundarySeq + 1; s < cut; s++) trailingSeqs.push(s);
  return {
    source: {
      id: header.id,
      events: scan.count,
      lastSeq: scan.count ? scan.lastSeq : null,
      ...(header.cwd !== undefined ? { cwd: header.cwd } : {}),
      ...(preset !== undefined ? { agentPreset: preset } : {}),
    },
    atSeq: options.atSeq ?? null,
    boundary,
    seedLength: cut,
    trailingSeqs,
    excludedEvents: scan.count - cut,
    nextTurnStartSeq,
    inherits,
    seedEndsWithEndSeed: cut > 0 && endsWithEndSeed,
    endSeedSeq: cut > 0 && endsWithEndSeed ? null : cut,
    child,
  };
}

/** The child's events: the seed verbatim, then `session/end-seed {}` unless the seed already ends with one. */
export function childEvents(plan: ForkPlan, events: readonly SessionEvent[]): SessionEvent[] {
  const seed = events.slice(0, plan.seedLength);
  const end = endSeedOf(plan);
  return end ? [...seed, end] : seed;
}

/** The `session/end-seed {}` the child's first lifecycle appends, or null when the seed already ends with one. */
export function endSeedOf(plan: ForkPlan): SessionEvent | null {
  return plan.seedEndsWithEndSeed ? null : { type: 'session/end-seed', seq: plan.seedLength, time: plan.child.createdAt, data: {} };
}
