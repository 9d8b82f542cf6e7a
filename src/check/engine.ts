/**
 * `dsh check` engine: turn inspections into findings. Pure data in, plain data
 * out; the CLI and the reporters only filter and render.
 */
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { inspectTarget, inspectTargetIndexed, type SessionInspection } from '../log/session.js';
import { ARTIFACT_NAMES, resolveTarget, scanRoot, type ResolvedTarget, type ResolveOptions } from '../log/target.js';
import { compareForkSeed, seedFingerprint } from '../log/seed.js';
import { LogError } from '../log/errors.js';
import type { FrameDecoder } from '../physical/decoders.js';
import type { Encoding, SessionEvent, SessionHeader } from '../log/types.js';
import { RULE_BY_CODE, ruleMeta, type Severity } from './rules.js';
import type { RuleCode } from '../core/rules.js';
import { relationalFindings, RelationalStream, type RelationalFinding } from './relational.js';
import { KNOWN_EVENT_TYPES } from '../log/vocabulary.js';
import { SecretsFold, type SecretsOptions, type SessionSecrets } from '../views/secrets.js';
import { contextIndexed, contextOf, headerCacheBreaks } from '../views/context.js';
import { DISPATCHES } from '../views/dispatch-fold.js';
import { foldOf } from '../views/index-folds.js';
import { deriveDispatches } from '../views/requests.js';
import { shippedPriceTable } from '../views/prices.js';
import { BehaviourFold, headerBreakFindings, type BehaviourEvidence, type BehaviourFinding, type BehaviourSettings } from './behaviour.js';

export interface Finding {
  code: RuleCode;
  severity: Severity;
  sessionId?: string;
  /** The artifact (or layout entry) the finding is about. */
  file: string;
  seq?: number;
  byteOffset?: number;
  /** `file`: offset in the artifact; `plaintext`: offset in the decoded JSONL text (zstd). */
  offsetIn?: 'file' | 'plaintext';
  message: string;
  hint: string;
  /** Behaviour rules (family X): the exact events and figures behind the finding. */
  evidence?: BehaviourEvidence;
}

export interface SessionReport {
  file: string;
  sessionId?: string;
  encoding?: Encoding;
  /** Logical events (stored + closers) when the log loaded. */
  events?: number;
  loaded: boolean;
  findings: Finding[];
}

/** The result of `dsh check` over its targets. */
export interface CheckReport {
  tool: { name: 'dsh'; version: string };
  sessions: SessionReport[];
  /** Findings not tied to a loadable session (root layout problems). */
  layout: Finding[];
}

function finding(code: RuleCode, base: { file: string; sessionId?: string }, message: string, extra: Partial<Finding> = {}): Finding {
  const meta = ruleMeta(code);
  return {
    code,
    severity: meta.severity,
    ...(base.sessionId !== undefined ? { sessionId: base.sessionId } : {}),
    file: base.file,
    ...extra,
    message,
    hint: meta.hint,
  };
}

// ------------------------------------------------------------ load failures

/**
 * A load failure whose detector named no rule: reported as an unparsable line (A8).
 * Every detector in src/physical and src/log names its rule; test/rules.test.ts fails on one that does not.
 */
const UNCLASSIFIED: RuleCode = 'DSH-A8';

function loadFailureFinding(r: SessionInspection, base: { file: string; sessionId?: string }): Finding {
  const error = r.error!;
  // The detector attached its rule where it found the failure (see src/core/rules.ts).
  const code = error.rule ?? UNCLASSIFIED;
  const extra: Partial<Finding> = {};
  if (error.seq !== undefined) extra.seq = error.seq;
  if (error.byteOffset !== undefined) {
    extra.byteOffset = error.byteOffset;
    extra.offsetIn = r.encoding === 'none' || code === 'DSH-A5' || code === 'DSH-A6' ? 'file' : 'plaintext';
  }
  const cause = error.cause && error.stage === 'physical' && error.cause.message !== error.message ? ` (${error.cause.message})` : '';
  const prefix = error.class === 'Error' ? '' : `${error.class}: `;
  return finding(code, base, `${prefix}${error.message}${cause}`, extra);
}

// ------------------------------------------------------------ per-session

function range(seqs: number[]): string {
  if (seqs.length === 0) return '';
  return seqs.length === 1 ? `${seqs[0]}` : `${seqs[0]}..${seqs[seqs.length - 1]}`;
}

function tornFinding(r: SessionInspection, base: { file: string; sessionId?: string }): Finding {
  const t = r.torn!;
  const parts = [`torn tail: DSH's load() truncates the artifact to byte ${t.truncateTo} (${t.tornBytes} torn bytes)`];
  if (t.recoveredEventSeqs.length > 0) parts.push(`re-appends recovered events seq ${range(t.recoveredEventSeqs)} in a new frame`);
  parts.push(t.lostPlaintextBytes > 0 ? `${t.lostPlaintextBytes} decoded bytes after the last complete record are lost` : 'no complete record is lost');
  if (r.defect) parts.push(`the tolerated defect: ${r.defect.message}`);
  return finding('DSH-A10', base, parts.join('; '), { byteOffset: t.truncateTo, offsetIn: 'file' });
}

function closersFinding(r: SessionInspection, base: { file: string; sessionId?: string }): Finding {
  const turnEnd = r.closers[r.closers.length - 1];
  const turn = turnEnd?.data?.turn;
  const what = r.closerReasons.map((c) => `${c.type} seq ${c.seq} (${c.why})`).join(', ');
  return finding('DSH-R1', base, `turn ${String(turn)} is open at the end of the log; DSH would synthesize ${r.closers.length} closer(s): ${what}`, {
    ...(r.closers[0] ? { seq: r.closers[0].seq } : {}),
  });
}

/** Fork seed equality (§10.2) as L1 findings: `events[0..seedLength-1]` equal the parent's prefix; end-seed at seedLength. */
export function forkSeedFindings(
  child: readonly SessionEvent[],
  seedLength: number,
  parentId: string,
  parent: readonly SessionEvent[] | undefined,
): { seq: number; message: string }[] {
  const out: { seq: number; message: string }[] = [];
  const c = compareForkSeed(child, seedLength, parent);
  if (c.childTooShort) {
    out.push({ seq: Math.max(0, c.childTooShort.childEvents - 1), message: `header seedLength ${seedLength} exceeds the log's ${c.childTooShort.childEvents} events` });
    return out;
  }
  if (c.missingEndSeed) {
    out.push({ seq: seedLength, message: `fork child has no session/end-seed at seq ${seedLength} (seedLength ${seedLength}); found ${c.missingEndSeed.found}` });
  }
  if (c.parentTooShort) {
    out.push({ seq: c.parentTooShort.parentEvents, message: `parent session "${parentId}" has only ${c.parentTooShort.parentEvents} events but the child's seedLength is ${seedLength}` });
  }
  if (c.firstDifferingSeq !== null) {
    const i = c.firstDifferingSeq;
    out.push({ seq: i, message: `seed event seq ${i} (${child[i]!.type}) differs from parent session "${parentId}" seq ${i} (${parent![i]!.type})` });
  }
  return out;
}

export interface CheckOptions {
  decoder?: FrameDecoder;
  /** Resolve a session id in the same root to its artifact path (for fork seed equality). */
  lookup?: (root: string, id: string) => string | undefined;
  /** Also run the secret rules (DSH-K1, DSH-K2) with these detector options (`--secrets`). */
  secrets?: SecretsOptions;
  /** Also run these behaviour rules (family X) with these options (`--behaviour`, `--rule`, the config). */
  behaviour?: BehaviourSettings;
  /**
   * Build every packed row's chunk events whole, even where no rule reads more of a chunk than
   * its turn and step (`StreamedFactsCollector.takesLeanRows`): the reference the lean read is
   * tested against. Default false.
   */
  wholeRows?: boolean;
}

/** What a streaming check keeps instead of the events: memory follows the surface and the non-chunk events, not the log. */
export interface StreamedFacts {
  relational: RelationalFinding[];
  eventCount: number;
  /** Types of events unknown to DSH's vocabulary, by seq. */
  unknownTypes: Map<number, string>;
  /** Fingerprints of seqs 0..seedLength (fork children only). */
  seed?: SessionEvent[];
  /** The secrets fold's result (`--secrets`). */
  secrets?: SessionSecrets;
  /** The behaviour rules' findings (`--behaviour`). */
  behaviour?: BehaviourFinding[];
}

/** Behaviour findings as check findings: the rule's severity and hint, the evidence kept whole. */
export function behaviourFindings(list: readonly BehaviourFinding[], base: { file: string; sessionId?: string }): Finding[] {
  return list.map((b) => ({ ...finding(b.code, base, b.message, { seq: b.seq }), evidence: b.evidence }));
}

/** Run the behaviour rules over held events (closers included), in one pass. */
export function behaviourOfEvents(events: Iterable<SessionEvent>, settings: BehaviourSettings): BehaviourFinding[] {
  const fold = new BehaviourFold(settings);
  for (const e of events) fold.observe(e);
  return fold.finish();
}

/**
 * DSH-X12 over held events: the header cache breaks of `dsh context` (priced with the shipped table).
 * The fold cannot see them (a break is a byte comparison of two rebuilt requests), so it runs after it.
 */
export async function headerBreaksOfEvents(events: readonly SessionEvent[], sessionId: string | null): Promise<BehaviourFinding[]> {
  const view = await contextOf(deriveDispatches(events).requests, async () => events, sessionId, { prices: shippedPriceTable() });
  return headerBreakFindings(headerCacheBreaks(view));
}

/**
 * DSH-X12 over a log on disk in bounded memory: a second indexed pass (no index cache) builds the
 * dispatch index, and the context view re-reads only the events each dispatch needs.
 */
export async function headerBreaksOfTarget(target: ResolvedTarget, decoder?: FrameDecoder): Promise<BehaviourFinding[]> {
  const noCache = { dir: '', enabled: false, maxBytes: 0, note: () => {} };
  const indexed = await inspectTargetIndexed(target, decoder ? { decoder } : {}, { cache: noCache, folds: [DISPATCHES], needs: [DISPATCHES] });
  try {
    if (indexed.inspection.error || !indexed.events) return [];
    const view = await contextIndexed(foldOf(indexed.folds, DISPATCHES), indexed.events, indexed.inspection.meta?.id ?? null, { prices: shippedPriceTable() });
    return headerBreakFindings(headerCacheBreaks(view));
  } finally {
    indexed.close();
  }
}

/** DSH-K1 / DSH-K2: one finding per secret and rule, never with the secret's text (its masked token only). */
export function secretFindings(s: SessionSecrets, base: { file: string; sessionId?: string }): Finding[] {
  const out: Finding[] = [];
  for (const x of s.secrets) {
    const d = x.dispatches;
    const sent = d.count > 0 ? `sent in ${d.count} dispatch(es) (first ${d.first!.key}, last ${d.last!.key})` : 'not sent yet';
    if (x.finalSurface.length > 0 || x.inLatestHeader) {
      const where = x.finalSurface.length > 0 ? `on the current surface at seq ${x.finalSurface.join(', ')}` : 'in the latest request/header';
      out.push(finding('DSH-K1', base, `secret ${x.token} (${x.detector}) is ${where}; ${sent}`, { seq: x.finalSurface[0] ?? x.events[0]!.seq }));
    }
    if (d.count > 0) out.push(finding('DSH-K2', base, `secret ${x.token} (${x.detector}) was ${sent}`, { seq: d.first!.firstChunkSeq }));
  }
  return out;
}

/** Fingerprints of a parent's first `count` events, read in one streaming pass. */
async function parentFingerprints(parentPath: string, count: number, options: CheckOptions): Promise<SessionEvent[] | undefined> {
  const out: SessionEvent[] = [];
  try {
    const parent = await inspectTarget(resolveTarget(parentPath), {
      collect: false,
      skipArtifact: true,
      ...(options.decoder ? { decoder: options.decoder } : {}),
      onLogical: (e) => {
        if (e.seq < count) out.push(seedFingerprint(e));
      },
    });
    if (parent.error) return undefined;
    for (const c of parent.closers) if (c.seq < count) out.push(seedFingerprint(c));
    return out;
  } catch {
    return undefined;
  }
}

/** Check one resolved artifact in one streaming pass. Never throws for log problems. */
/**
 * What a streaming check gathers from the logical events (fed in order, closers last), for
 * {@link checkInspection}: the relational findings, the event count, unknown types, the fork seed's
 * fingerprints and, with `secrets`, the secrets fold. Call `meta` with the header first.
 */
export class StreamedFactsCollector {
  private readonly stream = new RelationalStream();
  private eventCount = 0;
  private readonly unknownTypes = new Map<number, string>();
  private seedLength: number | undefined;
  private seed: SessionEvent[] | undefined;
  private secrets: SecretsFold | undefined;
  private secretsFailure: { error: unknown } | undefined;
  private readonly behaviour: BehaviourFold | undefined;
  private behaviourFailure: { error: unknown } | undefined;

  constructor(
    private readonly secretsOptions?: SecretsOptions,
    behaviour?: BehaviourSettings,
  ) {
    if (behaviour) this.behaviour = new BehaviourFold(behaviour);
  }

  /**
   * Whether the rules read of a packed row's chunk only its type, seq, time, turn and step, so the
   * read may hand over its members pruned (`InspectOptions.leanRows`): not when the secrets fold
   * reads their text, nor for a fork child, whose seed is fingerprinted whole.
   */
  takesLeanRows(m: SessionHeader): boolean {
    return this.secretsOptions === undefined && this.behaviour === undefined && seedLengthOf(m) === undefined;
  }

  meta(m: SessionHeader): void {
    this.seedLength = seedLengthOf(m);
    if (this.seedLength !== undefined) this.seed = [];
    if (this.secretsOptions) this.secrets = new SecretsFold(m.id, m, this.secretsOptions);
  }

  observe(e: SessionEvent, text?: string): void {
    this.stream.observe(e);
    if (this.secrets && !this.secretsFailure) {
      try {
        this.secrets.observe(e, text);
      } catch (error) {
        this.secretsFailure = { error };
      }
    }
    if (this.behaviour && !this.behaviourFailure) {
      try {
        this.behaviour.observe(e);
      } catch (error) {
        this.behaviourFailure = { error };
      }
    }
    this.eventCount += 1;
    const type = e.type;
    if (type !== 'assistant/chunk' && !KNOWN_EVENT_TYPES.has(type)) this.unknownTypes.set(e.seq, type);
    if (this.seed && this.seedLength !== undefined && e.seq <= this.seedLength) this.seed.push(seedFingerprint(e));
  }

  /** The facts of an accepted log (a secrets fold that failed throws its error here); of a refused one, none. */
  result(loaded: boolean): StreamedFacts {
    if (loaded && this.secretsFailure) throw this.secretsFailure.error;
    if (loaded && this.behaviourFailure) throw this.behaviourFailure.error;
    const secretsResult = loaded && this.secrets ? this.secrets.finish() : undefined;
    const behaviourResult = loaded && this.behaviour ? this.behaviour.finish() : undefined;
    return {
      relational: loaded ? this.stream.findings() : [],
      eventCount: this.eventCount,
      unknownTypes: this.unknownTypes,
      ...(this.seed ? { seed: this.seed } : {}),
      ...(secretsResult ? { secrets: secretsResult } : {}),
      ...(behaviourResult ? { behaviour: behaviourResult } : {}),
    };
  }
}

/** The seed length of a fork child's header (its seed is compared with the parent's prefix), else undefined. */
function seedLengthOf(m: SessionHeader): number | undefined {
  return m.parentSession !== undefined && m.seedLength !== undefined ? m.seedLength : undefined;
}

export async function checkResolved(target: ResolvedTarget, options: CheckOptions = {}): Promise<SessionReport> {
  const facts = new StreamedFactsCollector(options.secrets, options.behaviour);
  let r: SessionInspection;
  try {
    r = await inspectTarget(target, {
      collect: false,
      skipArtifact: true,
      ...(options.decoder ? { decoder: options.decoder } : {}),
      ...(options.wholeRows ? {} : { leanRows: (m: SessionHeader) => facts.takesLeanRows(m) }),
      onMeta: (m) => facts.meta(m),
      onLogical: (e, text) => facts.observe(e, text),
    });
    for (const closer of r.closers) facts.observe(closer);
  } catch (error) {
    // A reader path that throws a LogError (rather than reporting it) is still a verdict about the log.
    if (!(error instanceof LogError)) throw error;
    const base = { file: target.path, ...(target.expectedId !== undefined ? { sessionId: target.expectedId } : {}) };
    const code = error.rule ?? UNCLASSIFIED;
    const prefix = error.dshClass === 'Error' ? '' : `${error.dshClass}: `;
    return {
      file: target.path,
      ...(base.sessionId !== undefined ? { sessionId: base.sessionId } : {}),
      loaded: false,
      findings: [finding(code, base, `${prefix}${error.message}`, error.byteOffset !== undefined ? { byteOffset: error.byteOffset } : {})],
    };
  }
  const streamed = facts.result(!r.error);
  if (!r.error && options.behaviour?.['DSH-X12'] && streamed.behaviour) streamed.behaviour.push(...(await headerBreaksOfTarget(target, options.decoder)));
  return checkInspection(r, target, options, streamed);
}

/**
 * Findings for an inspection. With `streamed` (from `checkResolved`) the
 * events need not be held; without it they are taken from `r.events`.
 */
export async function checkInspection(r: SessionInspection, target: ResolvedTarget, options: CheckOptions = {}, streamed?: StreamedFacts): Promise<SessionReport> {
  const sessionId = r.meta?.id ?? r.artifact.meta?.id ?? target.expectedId;
  const base = { file: target.path, ...(sessionId !== undefined ? { sessionId } : {}) };
  const report: SessionReport = { file: target.path, ...(sessionId !== undefined ? { sessionId } : {}), encoding: r.encoding, loaded: !r.error, findings: [] };
  if (r.error) {
    report.findings.push(loadFailureFinding(r, base));
    return report;
  }
  const events = r.events ?? [];
  report.events = streamed ? streamed.eventCount : events.length;
  const typeAt = (seq: number) => (streamed ? streamed.unknownTypes.get(seq) : events[seq]?.type);
  for (const w of r.warnings) report.findings.push(finding('DSH-A4', base, w));
  if (r.torn) report.findings.push(tornFinding(r, base));
  if (r.ignorableUnknown.length > 0) {
    const types = [...new Set(r.ignorableUnknown.map((s) => typeAt(s)).filter((t): t is string => typeof t === 'string'))];
    report.findings.push(
      finding('DSH-B7', base, `${r.ignorableUnknown.length} ignorable event(s) of unknown type ${types.map((t) => JSON.stringify(t)).join(', ')} kept uninterpreted (seq ${r.ignorableUnknown.join(', ')})`, {
        seq: r.ignorableUnknown[0]!,
      }),
    );
  }
  if (r.closers.length > 0) report.findings.push(closersFinding(r, base));
  for (const f of streamed ? streamed.relational : relationalFindings(events)) {
    const message = f.pkg ? `invariant violated by "${f.pkg}": ${f.message}` : f.message;
    report.findings.push(finding(f.code, base, message, { seq: f.seq }));
  }
  if (streamed?.secrets) report.findings.push(...secretFindings(streamed.secrets, base));
  if (streamed?.behaviour) report.findings.push(...behaviourFindings(streamed.behaviour, base));
  else if (!streamed && options.behaviour) {
    report.findings.push(...behaviourFindings(behaviourOfEvents(events, options.behaviour), base));
    if (options.behaviour['DSH-X12']) report.findings.push(...behaviourFindings(await headerBreaksOfEvents(events, sessionId ?? null), base));
  }
  // Fork seed equality.
  const meta = r.meta!;
  if (meta.parentSession !== undefined && meta.seedLength !== undefined) {
    let parentEvents: SessionEvent[] | undefined;
    const root = target.root;
    const parentPath = root !== undefined ? options.lookup?.(root, meta.parentSession) : undefined;
    if (streamed?.seed) {
      const parent = parentPath !== undefined ? await parentFingerprints(parentPath, meta.seedLength, options) : undefined;
      for (const f of forkSeedFindings(streamed.seed, meta.seedLength, meta.parentSession, parent)) {
        report.findings.push(finding('DSH-L1', base, f.message, { seq: f.seq }));
      }
      return report;
    }
    if (parentPath !== undefined) {
      try {
        const parent = await inspectTarget(resolveTarget(parentPath), { collect: true, ...(options.decoder ? { decoder: options.decoder } : {}) });
        if (!parent.error) parentEvents = parent.events;
      } catch {
        parentEvents = undefined;
      }
    }
    for (const f of forkSeedFindings(events, meta.seedLength, meta.parentSession, parentEvents)) {
      report.findings.push(finding('DSH-L1', base, f.message, { seq: f.seq }));
    }
  }
  return report;
}

// ------------------------------------------------------------ targets

export interface Discovery {
  targets: ResolvedTarget[];
  layout: Finding[];
}

const MAX_DEPTH = 8;

function isDir(p: string): boolean {
  try {
    return lstatSync(p).isDirectory();
  } catch {
    return false;
  }
}

function hasArtifact(dir: string): boolean {
  return ARTIFACT_NAMES.some((n) => existsSync(path.join(dir, n)));
}

/**
 * Expand command-line inputs: artifact files, session directories, roots
 * (every session under them), and directories that hold roots (searched
 * recursively, links not followed). `-` and bare session ids resolve as in
 * `dsh inspect`. Throws UsageError for inputs that do not exist.
 */
export function discoverTargets(inputs: string[], options: ResolveOptions = {}): Discovery {
  // `--encoding` applies to every artifact found; ids resolve with the rest of the options.
  const found = (p: string) => resolveTarget(p, options.encoding !== undefined ? { encoding: options.encoding } : {});
  const targets: ResolvedTarget[] = [];
  const layout: Finding[] = [];
  const seen = new Set<string>();
  const add = (t: ResolvedTarget) => {
    if (t.path !== '-' && seen.has(t.path)) return;
    seen.add(t.path);
    targets.push(t);
  };
  const walk = (dir: string, depth: number) => {
    if (hasArtifact(dir)) {
      try {
        add(found(dir));
      } catch (error) {
        // Both encodings in one session directory: a layout rejection; check the zstd one anyway.
        layout.push(finding('DSH-A11', { file: path.join(dir, 'session.jsonl') }, (error as Error).message));
        add(found(path.join(dir, 'session.jsonl.zstd')));
      }
      return;
    }
    const scan = scanRoot(dir);
    if (scan.sessions.length > 0 || scan.problems.length > 0) {
      for (const p of scan.problems) layout.push(finding('DSH-A11', { file: p.path }, p.message));
      // DSH's findLog refuses an id present under several project directories.
      const dirsById = new Map<string, Set<string>>();
      for (const s of scan.sessions) dirsById.set(s.id, (dirsById.get(s.id) ?? new Set()).add(s.projectDir));
      for (const [id, dirs] of dirsById) {
        if (dirs.size < 2) continue;
        const first = scan.sessions.find((s) => s.id === id)!;
        layout.push(finding('DSH-A11', { file: first.path, sessionId: id }, `duplicate JSONL session id "${id}" appears in multiple project directories`));
      }
      for (const s of scan.sessions) {
        const t = found(s.path);
        t.root = scan.root;
        add(t);
      }
      return;
    }
    if (depth >= MAX_DEPTH) return;
    let entries: string[];
    try {
      entries = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(dir, e);
      if (isDir(p)) walk(p, depth + 1);
    }
  };
  for (const input of inputs) {
    if (input !== '-' && isDir(input)) walk(path.resolve(input), 0);
    else add(resolveTarget(input, options));
  }
  return { targets, layout };
}

/** A cached id → artifact lookup per root, for fork seed equality. */
export function rootLookup(): (root: string, id: string) => string | undefined {
  const cache = new Map<string, Map<string, string>>();
  return (root, id) => {
    let index = cache.get(root);
    if (!index) {
      index = new Map();
      try {
        for (const s of scanRoot(root).sessions) if (!index.has(s.id)) index.set(s.id, s.path);
      } catch {
        // not a readable root
      }
      cache.set(root, index);
    }
    return index.get(id);
  };
}

// ------------------------------------------------------------ filtering and verdict

export interface Selection {
  only?: Set<string>;
  ignore?: Set<string>;
}

/** Keep only the findings `--only` selects and `--ignore` does not. */
export function selectFindings(report: CheckReport, sel: Selection): CheckReport {
  const keep = (f: Finding) => (!sel.only || sel.only.has(f.code)) && !sel.ignore?.has(f.code);
  return {
    ...report,
    layout: report.layout.filter(keep),
    sessions: report.sessions.map((s) => ({ ...s, findings: s.findings.filter(keep) })),
  };
}

export function allFindings(report: CheckReport): Finding[] {
  return [...report.layout, ...report.sessions.flatMap((s) => s.findings)];
}

export interface Summary {
  sessions: number;
  loaded: number;
  errors: number;
  warnings: number;
  infos: number;
  byCode: Record<string, number>;
}

/** Counts of a check report: sessions, loaded, findings by severity and by code. */
export function summarize(report: CheckReport): Summary {
  const s: Summary = { sessions: report.sessions.length, loaded: report.sessions.filter((x) => x.loaded).length, errors: 0, warnings: 0, infos: 0, byCode: {} };
  for (const f of allFindings(report)) {
    if (f.severity === 'error') s.errors += 1;
    else if (f.severity === 'warning') s.warnings += 1;
    else s.infos += 1;
    s.byCode[f.code] = (s.byCode[f.code] ?? 0) + 1;
  }
  s.byCode = Object.fromEntries(Object.entries(s.byCode).sort(([a], [b]) => compareCodes(a, b)));
  return s;
}

export interface Verdict {
  /** The lowest severity that fails the check (`--fail-on`); `none`: never. Default `error`. */
  failOn?: Severity | 'none';
  strict?: boolean;
  maxWarnings?: number;
  exitZero?: boolean;
}

/** 0 clean, 1 findings at a failing level. */
export function exitCodeFor(summary: Summary, v: Verdict): 0 | 1 {
  if (v.exitZero || v.failOn === 'none') return 0;
  if (summary.errors > 0) return 1;
  if (v.failOn === 'warning' && summary.warnings > 0) return 1;
  if (v.failOn === 'info' && summary.warnings + summary.infos > 0) return 1;
  if (v.strict && summary.warnings > 0) return 1;
  if (v.maxWarnings !== undefined && summary.warnings > v.maxWarnings) return 1;
  return 0;
}

/** Catalogue order: family letter order A, B, C, S, R, E, F, L; then number. */
export function compareCodes(a: string, b: string): number {
  const order = [...RULE_BY_CODE.keys()];
  const ia = order.indexOf(a);
  const ib = order.indexOf(b);
  return (ia === -1 ? 1e9 : ia) - (ib === -1 ? 1e9 : ib) || a.localeCompare(b);
}
