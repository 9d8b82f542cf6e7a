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

/** The Host's boundary rule; throws ForkUnavailable with DSH's text. */
export function forkBoundary(sessionId: string, events: readonly SessionEvent[], atSeq?: number): ForkBoundary {
  const lastSeq = events.length > 0 ? (events[events.length - 1] as SessionEvent).seq : -1;
  let boundary: SessionEvent | undefined;
  let rule: ForkBoundary['rule'] = 'anchored';
  if (atSeq !== undefined) boundary = events.find((e) => e.type === 'turn/end' && e.seq >= atSeq);
  if (!boundary && (atSeq === undefined || atSeq > lastSeq)) {
    rule = 'last-completed-turn';
    for (let i = events.length - 1; i >= 0; i--) {
      if ((events[i] as SessionEvent).type === 'turn/end') {
        boundary = events[i];
        break;
      }
    }
  }
  if (!boundary) {
    throw new ForkUnavailable(
      atSeq !== undefined && atSeq <= lastSeq
        ? `session "${sessionId}" has not completed the turn containing event ${atSeq}`
        : `session "${sessionId}" has no completed turn to fork from`,
    );
  }
  let cut = boundary.seq + 1;
  while (cut < events.length && events[cut]?.type !== 'turn/start') cut++;
  return { boundarySeq: boundary.seq, cut, rule };
}

/** DSH's `resolveSessionPreset`: the last `agent-preset/selected` in the log, else the header's preset. */
export function sessionPreset(header: SessionHeader, events: readonly SessionEvent[]): string | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i] as SessionEvent;
    if (e.type === 'agent-preset/selected' && typeof e.data?.agentPreset === 'string') return e.data.agentPreset;
  }
  return header.agentPreset;
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
  const boundary = forkBoundary(header.id, events, options.atSeq);
  const cut = boundary.cut;
  const seed = events.slice(0, cut);
  const countsByType: Record<string, number> = {};
  const fold = new SurfaceFold(true);
  let turns = 0;
  let lastTurn: ForkPlan['inherits']['lastTurn'] = null;
  for (const e of seed) {
    countsByType[e.type] = (countsByType[e.type] ?? 0) + 1;
    if (e.type === 'turn/end') {
      turns++;
      lastTurn = { turn: typeof e.data?.turn === 'number' ? e.data.turn : null, reason: reasonText(e.data?.reason), endSeq: e.seq };
    }
    fold.apply(e);
  }
  const modelMessages = fold.nodes.filter((s) => deriveEventMessage(seed[s] as SessionEvent) !== null).length;
  const title = readTitle(seed);
  const stored = options.storedEventCount ?? events.length;
  const endsWithEndSeed = cut > 0 && (seed[cut - 1] as SessionEvent).type === 'session/end-seed';
  const preset = sessionPreset(header, events);
  const child: SessionHeader = {
    version: 0,
    id: options.childId ?? defaultChildId(),
    createdAt: options.createdAt ?? Date.now(),
    ...(header.cwd !== undefined ? { cwd: header.cwd } : {}),
    parentSession: header.id,
    seedLength: cut,
    delegationDepth: 0,
    ...(preset !== undefined ? { agentPreset: preset } : {}),
  };
  const trailingSeqs: number[] = [];
  for (let s = boundary.boundarySeq + 1; s < cut; s++) trailingSeqs.push(s);
  return {
    source: {
      id: header.id,
      events: events.length,
      lastSeq: events.length ? (events[events.length - 1] as SessionEvent).seq : null,
      ...(header.cwd !== undefined ? { cwd: header.cwd } : {}),
      ...(preset !== undefined ? { agentPreset: preset } : {}),
    },
    atSeq: options.atSeq ?? null,
    boundary,
    seedLength: cut,
    trailingSeqs,
    excludedEvents: events.length - cut,
    nextTurnStartSeq: cut < events.length ? (events[cut] as SessionEvent).seq : null,
    inherits: {
      countsByType,
      turns,
      lastTurn,
      surfaceNodes: fold.nodes.length,
      modelMessages,
      replacements: fold.replacements.length,
      title: title && typeof title['title'] === 'string' ? (title['title'] as string) : null,
      syntheticSeqs: seed.filter((e) => e.seq >= stored).map((e) => e.seq),
    },
    seedEndsWithEndSeed: endsWithEndSeed,
    endSeedSeq: endsWithEndSeed ? null : cut,
    child,
  };
}

/** The child's events: the seed verbatim, then `session/end-seed {}` unless the seed already ends with one. */
export function childEvents(plan: ForkPlan, events: readonly SessionEvent[]): SessionEvent[] {
  const seed = events.slice(0, plan.seedLength);
  if (plan.seedEndsWithEndSeed) return seed;
  return [...seed, { type: 'session/end-seed', seq: plan.seedLength, time: plan.child.createdAt, data: {} }];
}
