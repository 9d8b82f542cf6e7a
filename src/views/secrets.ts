import { upperBound } from '../core/sorted.js';
import { failureObject, type ErrorObject } from '../core/errors.js';
/**
 * Which secrets reached the model, and when (`dsh secrets`, `dsh check
 * --secrets`, the report's Secrets section).
 *
 * One fold per session, fed every logical event in seq order (closers last).
 * Secrets are found with the redaction detectors (`dsh redact`'s, plus user
 * patterns and paths) in every string of an event's data; streamed deltas are
 * scanned as assembled streams, so a key split across chunks is found too.
 * Nothing here keeps or returns secret text: a secret is named by the same
 * masked, hash-tagged token `dsh redact` writes in its place.
 *
 * What reached the model is decided from the surface fold, never by
 * rebuilding requests: a dispatch's input is the header in force (last
 * `request/header`), the latest `request/context` and the messages of the
 * surface nodes before its first chunk. So a secret held in the message of a
 * surface node appended at seq `a` and shadowed at seq `r` was sent in exactly
 * the dispatches whose first chunk lies in (a, r); one in a request header or
 * context, in the dispatches that header or context was in force for.
 */
import type { SessionEvent, SessionHeader } from '../log/types.js';
import { deriveEventMessage, SurfaceFold } from '../log/surface.js';
import { Redactor, redactionToken, type RedactOptions } from './redactor.js';
import type { SecretSpan } from './detectors.js';
import { DeltaStreams, pieceAt, pieceStarts, type DeltaPiece } from './secret-split.js';
import { DispatchStarts } from './requests.js';
import type { SurfaceLabel } from './labels.js';
import { sessionKind, sessionRecords } from './listing.js';
import { traceSession } from './lineage.js';
import { inspectTarget } from '../log/session.js';
import { resolveTarget, type ResolvedTarget } from '../log/target.js';
import type { FrameDecoder } from '../physical/decoders.js';

export interface SecretsOptions {
  /** Extra regexes (`--pattern`): the whole match, or group 1. */
  patterns?: string[];
  /** Home directory user names and the session cwd (`--paths`). */
  paths?: boolean;
  /** Restrict the built-in detectors to these names. */
  detectors?: string[];
}

/** Where in an event a secret sits. */
export type SecretPlace = 'message' | 'header' | 'context' | 'stream' | 'data';

export interface SecretEvent {
  seq: number;
  type: string;
  label: SurfaceLabel;
  /** `message`: the model message the event contributes; `header`/`context`: a request header or context; `stream`: streamed deltas; `data`: elsewhere (never sent). */
  place: SecretPlace;
}

export interface DispatchRef {
  index: number;
  key: string;
  firstChunkSeq: number;
  provider: string | null;
  model: string | null;
}

export interface SecretRemoval {
  /** The event that took the last carrier off the surface (or the header that replaced it). */
  seq: number;
  kind: 'compaction' | 'prune' | 'replacement' | 'header-change';
  compactionId: string | null;
  /** The first dispatch that no longer sent it (null: no dispatch came after). */
  noLongerSentFrom: DispatchRef | null;
}

export interface SecretReembed {
  /** The replacement event whose model message still holds the secret. */
  seq: number;
  kind: 'compaction' | 'prune' | 'replacement';
  compactionId: string | null;
}

export interface SummaryCall {
  /** The `compaction/summary` whose one-shot model call was given a shadowed node holding the secret. */
  seq: number;
  compactionId: string | null;
  provider: string | null;
  model: string | null;
}

/** One secret in one session. */
export interface SessionSecret {
  token: string;
  detector: string;
  events: SecretEvent[];
  dispatches: {
    count: number;
    /** Inclusive ranges of dispatch indexes (as `dsh request --list` numbers them from 0). */
    ranges: [number, number][];
    first: DispatchRef | null;
    last: DispatchRef | null;
    models: { provider: string | null; model: string | null; count: number }[];
  };
  summaryCalls: SummaryCall[];
  removed: SecretRemoval | null;
  reembedded: SecretReembed[];
  /** Surface nodes holding it at the end of the log (a resumed session sends them again). */
  finalSurface: number[];
  /** The log's latest request/header holds it. */
  inLatestHeader: boolean;
}

export interface SessionSecrets {
  sessionId: string;
  events: number;
  dispatches: number;
  secrets: SessionSecret[];
}

interface Holding {
  token: string;
  detector: string;
  events: Map<number, SecretEvent>;
  /** Surface seqs whose model message holds it. */
  nodes: number[];
  headers: number[];
  contexts: number[];
  summaryCalls: SummaryCall[];
  reembedded: SecretReembed[];
}

type ReplacementKind = SecretReembed['kind'];

function replacementKind(event: SessionEvent): { kind: ReplacementKind; compactionId: string | null } {
  if (event.type === 'tool/result') return { kind: 'prune', compactionId: null };
  const src = (event.data as { source?: { compactionId?: unknown } } | null)?.source;
  const id = typeof src?.compactionId === 'string' ? src.compactionId : null;
  return { kind: id !== null ? 'compaction' : 'replacement', compactionId: id };
}

/** The pieces, in order, spell exactly `full`. */
function repeats(full: string, pieces: readonly DeltaPiece[]): boolean {
  let at = 0;
  for (const p of pieces) {
    if (!full.startsWith(p.text, at)) return false;
    at += p.text.length;
  }
  return at === full.length;
}

/** Every string value under `value` (object keys excluded). */
function eachString(value: unknown, visit: (s: string) => void): void {
  // Depth-first in document order with an explicit stack: event data may nest
  // deeper than the call stack allows.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') visit(v);
    else if (Array.isArray(v)) for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]);
    else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) stack.push((v as Record<string, unknown>)[keys[i] as string]);
    }
  }
}

/** A JSON line whose text may hide a hint behind an escape (`\u0073k-`, `:\/\/`) is scanned without the pre-screen. */
const needsFullScan = (text: string): boolean => text.includes('\\u') || text.includes('\\/');

/**
 * The per-session fold. `observe` every logical event in seq order (with its
 * JSON line when known: it pre-screens the event), then `finish()`.
 */
export class SecretsFold {
  private readonly redactor: Redactor;
  private readonly prefilter: { test(text: string): boolean } | undefined;
  /** DSH's surface fold (replacements, the final surface) and where each dispatch starts and goes. */
  private readonly surface = new SurfaceFold(false);
  private readonly dispatches = new DispatchStarts();
  private readonly streams: DeltaStreams;
  private readonly byKey = new Map<string, Holding>();
  /** Surface seq → keys of the secrets its model message holds. */
  private readonly carriers = new Map<number, Set<string>>();
  /** Holder surface seq → the replacement that shadowed it. */
  private readonly shadowedAt = new Map<number, number>();
  private readonly replacements = new Map<number, { kind: ReplacementKind; compactionId: string | null }>();
  /** request/header seq → the next request/header seq. */
  private readonly nextHeader = new Map<number, number>();
  private lastHeaderSeq: number | null = null;
  private count = 0;

  constructor(readonly sessionId: string, meta: Pick<SessionHeader, 'cwd'> | undefined, options: SecretsOptions = {}) {
    const ro: RedactOptions = {
      ...(options.patterns ? { patterns: options.patterns } : {}),
      ...(options.paths ? { paths: true } : {}),
      ...(options.detectors ? { detectors: options.detectors } : {}),
    };
    this.redactor = new Redactor(ro);
    if (options.paths) this.redactor.setCwd(meta?.cwd);
    this.prefilter = this.redactor.prefilter();
    this.streams = new DeltaStreams((pieces, closedBy) => this.onStream(pieces, closedBy));
  }

  observe(event: SessionEvent, text?: string): void {
    this.count += 1;
    this.closed = undefined;
    this.streams.observe(event);
    const rep = this.surface.apply(event);
    this.dispatches.observe(event);
    if (rep) {
      let touches = false;
      for (const s of rep.shadowedSeqs) {
        if (this.holderSurface.has(s)) {
          this.shadowedAt.set(s, rep.seq);
          touches = true;
        }
      }
      if (touches) this.replacements.set(rep.seq, replacementKind(event));
    }
    switch (event.type) {
      case 'request/header':
        if (this.lastHeaderSeq !== null) this.nextHeader.set(this.lastHeaderSeq, event.seq);
        this.lastHeaderSeq = event.seq;
        break;
      case 'compaction/summary':
        this.onSummary(event);
        break;
      case 'assistant/chunk': {
        const t = (event.data as { chunk?: { type?: unknown } } | null)?.chunk?.type;
        // Deltas are scanned as assembled streams.
        if (t === 'text-delta' || t === 'reasoning-delta' || t === 'tool-call-delta') return;
        break;
      }
    }
    if (text !== undefined && this.prefilter && !needsFullScan(text) && !this.prefilter.test(text)) return;
    this.scanEvent(event, rep !== undefined);
  }

  /** Surface seqs that hold any secret (in any place). */
  private readonly holderSurface = new Set<number>();

  private scanEvent(event: SessionEvent, isReplacement: boolean): void {
    const data = event.data as Record<string, unknown> | null;
    if (data === null || typeof data !== 'object') {
      if (typeof data === 'string') this.scanText(data, event, 'data', isReplacement);
      return;
    }
    let sent: unknown;
    let place: SecretPlace = 'data';
    switch (event.type) {
      case 'user/message':
      case 'assistant/message':
      case 'tool/result':
        if (event.surfaceOp !== undefined) {
          sent = deriveEventMessage(event) ?? undefined;
          place = 'message';
        }
        break;
      case 'request/header':
        sent = data['header'];
        place = 'header';
        break;
      case 'request/context':
        sent = data;
        place = 'context';
        break;
    }
    if (sent === data) {
      eachString(data, (s) => this.scanText(s, event, place, isReplacement));
      return;
    }
    for (const k in data) {
      const v = data[k];
      const where = v === sent ? place : 'data';
      eachString(v, (s) => this.scanText(s, event, where, isReplacement));
    }
  }

  private scanText(text: string, event: SessionEvent, place: SecretPlace, isReplacement: boolean): void {
    if (text.length < 4) return;
    const spans = this.redactor.findSpans(text);
    for (const span of spans) this.hold(text.slice(span.start, span.end), span.label, span.detector, event.seq, event.type, place, isReplacement ? event : undefined);
    // The block-end of a stream it repeats: the same spans are the deltas'.
    const closed = this.closed;
    if (closed !== undefined && text === closed.text && event.type === 'assistant/chunk') this.streamSpans(text, closed.pieces, spans);
  }

  /** A stream its block-end repeats verbatim: scanned once, as that block-end's text. */
  private closed: { text: string; pieces: DeltaPiece[] } | undefined;

  private onStream(pieces: DeltaPiece[], closedBy?: Record<string, unknown>): void {
    const block = closedBy?.['block'] as { text?: unknown; arguments?: unknown } | undefined;
    const full = typeof block?.text === 'string' ? block.text : typeof block?.arguments === 'string' ? block.arguments : undefined;
    if (full !== undefined && repeats(full, pieces)) {
      this.closed = { text: full, pieces };
      return;
    }
    const joined = pieces.length === 1 ? pieces[0]!.text : pieces.map((p) => p.text).join('');
    if (joined.length < 4 || (this.prefilter && !this.prefilter.test(joined))) return;
    this.streamSpans(joined, pieces, this.redactor.findSpans(joined));
  }

  private streamSpans(joined: string, pieces: DeltaPiece[], spans: readonly SecretSpan[]): void {
    if (spans.length === 0) return;
    const starts = pieceStarts(pieces);
    for (const span of spans) {
      const secret = joined.slice(span.start, span.end);
      const first = pieceAt(starts, span.start);
      const last = pieceAt(starts, span.end - 1);
      for (let i = first; i <= last; i++) this.hold(secret, span.label, span.detector, pieces[i]!.seq, 'assistant/chunk', 'stream');
    }
  }

  private hold(secret: string, label: string, detector: string, seq: number, type: string, place: SecretPlace, replacement?: SessionEvent): void {
    const token = redactionToken(label, secret);
    const key = `${detector}\u0000${token}`;
    let h = this.byKey.get(key);
    if (!h) this.byKey.set(key, (h = { token, detector, events: new Map(), nodes: [], headers: [], contexts: [], summaryCalls: [], reembedded: [] }));
    const prev = h.events.get(seq);
    // A place that sends beats one that does not.
    if (!prev || (prev.place === 'data' && place !== 'data')) h.events.set(seq, { seq, type, label: 'log-only', place });
    if (type === 'user/message' || type === 'assistant/message' || type === 'tool/result') this.holderSurface.add(seq);
    if (prev && prev.place === place) return;
    if (place === 'message') {
      // Re-embedded: a replacement whose message still holds what an earlier node held.
      if (replacement && h.nodes.length > 0) h.reembedded.push({ seq, ...replacementKind(replacement) });
      h.nodes.push(seq);
      let set = this.carriers.get(seq);
      if (!set) this.carriers.set(seq, (set = new Set()));
      set.add(key);
    } else if (place === 'header') h.headers.push(seq);
    else if (place === 'context') h.contexts.push(seq);
  }

  private onSummary(event: SessionEvent): void {
    const data = event.data as { shadowedSeqs?: unknown; compactionId?: unknown; provider?: unknown; model?: unknown } | null;
    const seqs = Array.isArray(data?.shadowedSeqs) ? data!.shadowedSeqs : [];
    const keys = new Set<string>();
    for (const s of seqs) for (const k of this.carriers.get(s as number) ?? []) keys.add(k);
    for (const k of keys) {
      this.byKey.get(k)!.summaryCalls.push({
        seq: event.seq,
        compactionId: typeof data?.compactionId === 'string' ? data.compactionId : null,
        provider: typeof data?.provider === 'string' ? data.provider : null,
        model: typeof data?.model === 'string' ? data.model : null,
      });
    }
  }

  finish(): SessionSecrets {
    this.streams.flushAll();
    const d = this.dispatches;
    const firsts = d.firstChunkSeqs;
    const finalNodes = new Set(this.surface.nodes);
    // First dispatch whose first chunk is after `seq`.
    const after = (seq: number): number => upperBound(firsts, seq);
    const byHeader = new Map<number, [number, number]>();
    const byContext = new Map<number, [number, number]>();
    for (let i = 0; i < d.count; i++) {
      for (const [map, seq] of [
        [byHeader, d.headerSeqs[i]],
        [byContext, d.contextSeqs[i]],
      ] as const) {
        if (seq === null || seq === undefined) continue;
        const span = map.get(seq);
        if (span) span[1] = i;
        else map.set(seq, [i, i]);
      }
    }
    const ref = (i: number): DispatchRef => {
      const to = d.sentTo[i]!;
      return { index: i, key: d.keys[i]!, firstChunkSeq: firsts[i]!, provider: to.provider, model: to.model };
    };
    const secrets: SessionSecret[] = [];
    for (const h of this.byKey.values()) {
      const intervals: [number, number][] = [];
      for (const a of h.nodes) {
        const lo = after(a);
        const r = this.shadowedAt.get(a);
        const hi = r === undefined ? d.count : after(r);
        if (hi > lo) intervals.push([lo, hi - 1]);
      }
      for (const s of h.headers) {
        const span = byHeader.get(s);
        if (span) intervals.push([span[0], span[1]]);
      }
      for (const s of h.contexts) {
        const span = byContext.get(s);
        if (span) intervals.push([span[0], span[1]]);
      }
      const ranges = mergeRanges(intervals);
      const count = ranges.reduce((n, [a, b]) => n + b - a + 1, 0);
      const models = new Map<string, { provider: string | null; model: string | null; count: number }>();
      for (const [a, b] of ranges) {
        for (let i = a; i <= b; i++) {
          const d = ref(i);
          const k = `${d.provider}\u0000${d.model}`;
          const m = models.get(k);
          if (m) m.count += 1;
          else models.set(k, { provider: d.provider, model: d.model, count: 1 });
        }
      }
      const finalSurface = h.nodes.filter((s) => finalNodes.has(s));
      const inLatestHeader = this.lastHeaderSeq !== null && h.headers.includes(this.lastHeaderSeq);
      const lastSent = ranges.length > 0 ? ranges[ranges.length - 1]![1] : -1;
      let removed: SecretRemoval | null = null;
      if (finalSurface.length === 0 && !inLatestHeader && (h.nodes.length > 0 || h.headers.length > 0)) {
        let cause: { seq: number; kind: SecretRemoval['kind']; compactionId: string | null } | undefined;
        for (const s of h.nodes) {
          const r = this.shadowedAt.get(s);
          if (r !== undefined && (!cause || r > cause.seq)) cause = { seq: r, ...(this.replacements.get(r) ?? { kind: 'replacement' as const, compactionId: null }) };
        }
        for (const s of h.headers) {
          const n = this.nextHeader.get(s);
          if (n !== undefined && (!cause || n > cause.seq)) cause = { seq: n, kind: 'header-change', compactionId: null };
        }
        if (cause) {
          const next = lastSent >= 0 ? lastSent + 1 : after(cause.seq);
          removed = { ...cause, noLongerSentFrom: next < d.count ? ref(next) : null };
        }
      }
      const events = [...h.events.values()].sort((a, b) => a.seq - b.seq);
      for (const e of events) {
        if (e.type === 'user/message' || e.type === 'assistant/message' || e.type === 'tool/result') {
          e.label = finalNodes.has(e.seq) ? 'current' : this.shadowedAt.has(e.seq) ? 'shadowed' : 'log-only';
        }
      }
      secrets.push({
        token: h.token,
        detector: h.detector,
        events,
        dispatches: { count, ranges, first: count > 0 ? ref(ranges[0]![0]) : null, last: count > 0 ? ref(lastSent) : null, models: [...models.values()] },
        summaryCalls: h.summaryCalls,
        removed,
        reembedded: h.reembedded,
        finalSurface,
        inLatestHeader,
      });
    }
    secrets.sort(compareExposure);
    return { sessionId: this.sessionId, events: this.count, dispatches: d.count, secrets };
  }
}

function mergeRanges(intervals: [number, number][]): [number, number][] {
  intervals.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out: [number, number][] = [];
  for (const [a, b] of intervals) {
    const last = out[out.length - 1];
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/** Exposure class: 0 sent and still current, 1 sent then removed, 2 current but not yet sent, 3 never on the model's input. */
export function exposureOf(s: Pick<SessionSecret, 'dispatches' | 'finalSurface' | 'inLatestHeader' | 'summaryCalls'>): 0 | 1 | 2 | 3 {
  const sent = s.dispatches.count > 0 || s.summaryCalls.length > 0;
  const current = s.finalSurface.length > 0 || s.inLatestHeader;
  return sent && current ? 0 : sent ? 1 : current ? 2 : 3;
}

function compareExposure(a: SessionSecret, b: SessionSecret): number {
  return exposureOf(a) - exposureOf(b) || b.dispatches.count - a.dispatches.count || (a.events[0]?.seq ?? 0) - (b.events[0]?.seq ?? 0) || a.token.localeCompare(b.token);
}

// ---------------------------------------------------------------------------
// Across sessions (a target and its descendants, or a root).

export type SessionKindName = 'root' | 'fork' | 'subagent';

export interface SessionInfo {
  sessionId: string;
  path: string;
  kind: SessionKindName;
  parentSession: string | null;
  seedLength: number | null;
  events: number;
  dispatches: number;
  error: ErrorObject | null;
}

export type Relation = 'own' | 'inherited' | 'received';

export interface SecretInSession extends SessionSecret {
  sessionId: string;
  /** `inherited`: a fork child holds it in its seed (the parent's prefix); `received`: a subagent holds it and an ancestor does too; else `own`. */
  relation: Relation;
}

export type ExposureName = 'sent-current' | 'sent-removed' | 'current-unsent' | 'log-only';
const EXPOSURE_NAMES: readonly ExposureName[] = ['sent-current', 'sent-removed', 'current-unsent', 'log-only'];

export interface SecretReport {
  token: string;
  detector: string;
  exposure: ExposureName;
  verdict: string;
  /** Dispatches that sent it, over every session. */
  dispatchCount: number;
  current: boolean;
  sessions: SecretInSession[];
}

export interface SecretsReport {
  sessions: SessionInfo[];
  secrets: SecretReport[];
}

export interface AnalyzedSession {
  info: SessionInfo;
  result: SessionSecrets | null;
}

/** Combine per-session folds: group by secret, name each session's relation to it, verdicts, exposure order. */
export function combineSessions(analyzed: readonly AnalyzedSession[]): SecretsReport {
  const byId = new Map(analyzed.map((a) => [a.info.sessionId, a]));
  const groups = new Map<string, { token: string; detector: string; sessions: SecretInSession[] }>();
  const holders = new Map<string, Set<string>>();
  for (const a of analyzed) {
    for (const s of a.result?.secrets ?? []) {
      const key = `${s.detector}\u0000${s.token}`;
      (holders.get(key) ?? holders.set(key, new Set()).get(key)!).add(a.info.sessionId);
    }
  }
  const ancestorHolds = (sessionId: string, key: string): boolean => {
    const seen = new Set<string>([sessionId]);
    let p = byId.get(sessionId)?.info.parentSession ?? null;
    while (p !== null && !seen.has(p)) {
      seen.add(p);
      if (holders.get(key)?.has(p)) return true;
      p = byId.get(p)?.info.parentSession ?? null;
    }
    return false;
  };
  for (const a of analyzed) {
    for (const s of a.result?.secrets ?? []) {
      const key = `${s.detector}\u0000${s.token}`;
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { token: s.token, detector: s.detector, sessions: [] }));
      const seed = a.info.seedLength;
      let relation: Relation = 'own';
      if (seed !== null && a.info.parentSession !== null && s.events.some((e) => e.seq < seed)) relation = 'inherited';
      else if (a.info.kind === 'subagent' && ancestorHolds(a.info.sessionId, key)) relation = 'received';
      g.sessions.push({ ...s, sessionId: a.info.sessionId, relation });
    }
  }
  const secrets: SecretReport[] = [];
  for (const g of groups.values()) {
    const worst = Math.min(...g.sessions.map((s) => exposureOf(s))) as 0 | 1 | 2 | 3;
    const dispatchCount = g.sessions.reduce((n, s) => n + s.dispatches.count, 0);
    const current = g.sessions.some((s) => s.finalSurface.length > 0 || s.inLatestHeader);
    const report: SecretReport = { token: g.token, detector: g.detector, exposure: EXPOSURE_NAMES[worst]!, verdict: '', dispatchCount, current, sessions: g.sessions };
    report.verdict = verdictOf(report, analyzed.length > 1);
    secrets.push(report);
  }
  secrets.sort((a, b) => EXPOSURE_NAMES.indexOf(a.exposure) - EXPOSURE_NAMES.indexOf(b.exposure) || b.dispatchCount - a.dispatchCount || a.token.localeCompare(b.token));
  return { sessions: analyzed.map((a) => a.info), secrets };
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function modelText(s: SessionSecret): string {
  const names = s.dispatches.models.map((m) => [m.provider, m.model].filter(Boolean).join('/') || 'unknown model');
  return names.length > 0 ? ` to ${names.join(', ')}` : '';
}

function removalText(r: SecretRemoval): string {
  const what = r.kind === 'compaction' ? `compaction ${r.compactionId}` : r.kind === 'prune' ? 'a prune' : r.kind === 'header-change' ? 'a header change' : 'a surface replacement';
  return `removed by ${what} at seq ${r.seq}, ${r.noLongerSentFrom ? `not sent from dispatch ${r.noLongerSentFrom.key} on` : 'no dispatch after it'}`;
}

/** The one-line verdict of a secret (never its text). */
export function verdictOf(r: Pick<SecretReport, 'exposure' | 'sessions'>, many: boolean): string {
  const order = (s: SecretInSession) => exposureOf(s);
  const main = [...r.sessions].sort((a, b) => order(a) - order(b) || b.dispatches.count - a.dispatches.count)[0]!;
  const where = many ? ` in ${main.sessionId}` : '';
  const d = main.dispatches;
  const sentText = d.count > 0 ? `sent in ${plural(d.count, 'dispatch', 'dispatches')} (${d.first!.key}${d.count > 1 ? `..${d.last!.key}` : ''})${modelText(main)}` : 'sent only in a compaction summary call';
  const summaries = main.summaryCalls.length > 0 && d.count > 0 ? `; ${plural(main.summaryCalls.length, 'compaction summary call')} got it` : '';
  const reembed = main.reembedded.length > 0 ? `; ${main.reembedded.map((x) => (x.kind === 'compaction' ? `compaction ${x.compactionId}` : x.kind) + ` re-embedded it (seq ${x.seq})`).join(', ')}` : '';
  const currentAt = main.finalSurface.length > 0 ? `at seq ${main.finalSurface.join(', ')}` : 'in the latest request header';
  let text: string;
  switch (r.exposure) {
    case 'sent-current':
      text = `SENT${where}: ${sentText}${summaries}${reembed}; STILL CURRENT ${currentAt}: a resumed session sends it again`;
      break;
    case 'sent-removed':
      text = `sent${where}: ${sentText}${summaries}${reembed}; ${main.removed ? removalText(main.removed) : 'no longer on the surface'}; not on the final surface`;
      break;
    case 'current-unsent':
      text = `on the current surface${where} ${currentAt} but no dispatch has sent it yet: a resumed session would`;
      break;
    default: {
      const types = [...new Set(main.events.map((e) => e.type))].join(', ');
      text = `never sent${where}: only in log-only content (${types})`;
    }
  }
  const inherited = r.sessions.filter((s) => s.relation === 'inherited').map((s) => s.sessionId);
  const received = r.sessions.filter((s) => s.relation === 'received').map((s) => s.sessionId);
  if (inherited.length > 0) text += `; inherited by fork ${inherited.join(', ')}`;
  if (received.length > 0) text += `; received by subagent ${received.join(', ')}`;
  return text;
}

// ---------------------------------------------------------------------------
// Reading sessions.

/** Options of `dsh secrets` with the zstd decoder to read with. */
export interface AnalyzeOptions extends SecretsOptions {
  decoder?: FrameDecoder;
}

/** One session in one streaming pass: the log is not held, only the fold's tables. */
export async function analyzeTarget(target: ResolvedTarget, options: AnalyzeOptions = {}): Promise<AnalyzedSession> {
  let fold: SecretsFold | undefined;
  let failure: { error: unknown } | undefined;
  const observe = (e: SessionEvent, text?: string) => {
    if (!fold || failure) return;
    try {
      fold.observe(e, text);
    } catch (error) {
      // A log DSH refuses can trip the fold before the reader's verdict: held until the verdict is known.
      failure = { error };
    }
  };
  let meta: SessionHeader | undefined;
  const r = await inspectTarget(target, {
    ...(options.decoder ? { decoder: options.decoder } : {}),
    collect: false,
    skipArtifact: true,
    onMeta: (m) => {
      meta = m;
      fold = new SecretsFold(m.id, m, options);
    },
    onLogical: observe,
  });
  const header = r.meta ?? meta ?? r.artifact.meta;
  const info: SessionInfo = {
    sessionId: header?.id ?? target.expectedId ?? target.path,
    path: target.path,
    kind: header ? sessionKind(header) : 'root',
    parentSession: header?.parentSession ?? null,
    seedLength: header?.parentSession !== undefined && header.seedLength !== undefined ? header.seedLength : null,
    events: 0,
    dispatches: 0,
    error: null,
  };
  if (r.error || !fold) {
    return { info: { ...info, error: failureObject(r.error) }, result: null };
  }
  for (const c of r.closers) observe(c);
  if (failure) throw failure.error;
  const result = fold.finish();
  return { info: { ...info, events: result.events, dispatches: result.dispatches }, result };
}

/** The secrets of one session whose logical events are held (closers included), e.g. a report's inspection. */
export function secretsOfEvents(info: Omit<SessionInfo, 'events' | 'dispatches' | 'error'>, header: Pick<SessionHeader, 'cwd'> | undefined, events: readonly SessionEvent[], options: SecretsOptions = {}): SecretsReport {
  const fold = new SecretsFold(info.sessionId, header, options);
  for (const e of events) fold.observe(e);
  return secretsOfFold(info, fold);
}

/** {@link secretsOfEvents} for a fold the caller fed the session's logical events (a streaming pass). */
export function secretsOfFold(info: Omit<SessionInfo, 'events' | 'dispatches' | 'error'>, fold: SecretsFold): SecretsReport {
  const result = fold.finish();
  return combineSessions([{ info: { ...info, events: result.events, dispatches: result.dispatches, error: null }, result }]);
}

/** A target and every descendant (forks and subagents) found in its root, target first, then depth-first. */
export async function secretsOfTarget(target: ResolvedTarget, options: AnalyzeOptions = {}): Promise<SecretsReport & { warnings: string[] }> {
  const first = await analyzeTarget(target, options);
  const analyzed = [first];
  const warnings: string[] = [];
  if (target.root !== undefined && first.result) {
    const listed = await sessionRecords(target.root, options.decoder);
    if (listed.records.some((x) => x.header.id === first.info.sessionId)) {
      const trace = traceSession(listed.records, first.info.sessionId);
      const stack = [...trace.descendants].reverse();
      while (stack.length > 0) {
        const node = stack.pop()!;
        const p = listed.paths.get(node.session.header.id);
        if (p !== undefined) analyzed.push(await analyzeTarget(withRoot(resolveTarget(p), listed.root), options));
        for (let i = node.descendants.length - 1; i >= 0; i--) stack.push(node.descendants[i]!);
      }
    }
  }
  for (const a of analyzed.slice(1)) if (a.info.error) warnings.push(`${a.info.path}: ${a.info.error.class}: ${a.info.error.message}`);
  return { ...combineSessions(analyzed), warnings };
}

/** Every session of a root, in `dsh ls` order. */
export async function secretsOfRoot(root: string, options: AnalyzeOptions = {}): Promise<SecretsReport & { warnings: string[] }> {
  const listed = await sessionRecords(root, options.decoder);
  const analyzed: AnalyzedSession[] = [];
  for (const rec of listed.records) {
    const p = listed.paths.get(rec.header.id);
    if (p !== undefined) analyzed.push(await analyzeTarget(withRoot(resolveTarget(p), listed.root), options));
  }
  const warnings = listed.problems.map((p) => `${p.path}: ${p.message}`);
  for (const a of analyzed) if (a.info.error) warnings.push(`${a.info.path}: ${a.info.error.class}: ${a.info.error.message}`);
  return { ...combineSessions(analyzed), warnings };
}

function withRoot(t: ResolvedTarget, root: string): ResolvedTarget {
  t.root = root;
  return t;
}
