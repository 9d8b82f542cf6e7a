/**
 * Gather everything a report shows for one resolved target: one inspection
 * (events collected), the check findings of that same inspection, lineage in
 * the session root, and the derived views. Never throws for log problems: a
 * log DSH refuses yields a report whose health card carries DSH's text.
 */
import { inspectTarget, type SessionInspection } from '../log/session.js';
import type { ResolvedTarget } from '../log/target.js';
import { LogError } from '../log/errors.js';
import type { FrameDecoder } from '../physical/decoders.js';
import type { SessionEvent, SessionHeader } from '../log/types.js';
import { checkInspection, checkResolved, rootLookup, type Finding } from '../check/engine.js';
import type { BehaviourSettings } from '../check/behaviour.js';
import { lineageInRoot } from '../views/lineage.js';
import { secretsOfEvents } from '../views/secrets.js';
import { sessionKind } from '../views/listing.js';
import { contextOf } from '../views/context.js';
import { deriveDispatches } from '../views/requests.js';
import { shippedPriceTable } from '../views/prices.js';
import { buildReportData, pageContext, reportLineage, type ReportData, type ReportLineage } from './data.js';
import { emptyFacts, eventFacts } from './facts.js';
import type { PageEventFacts } from './page/model.js';

export interface BuildOptions {
  decoder?: FrameDecoder;
  /** Session root for lineage (default: the root the target sits in). */
  root?: string;
  version: string;
  /** Also list the findings of these behaviour rules (`dsh report --behaviour`). */
  behaviour?: BehaviourSettings;
}

export interface BuiltReport {
  data: ReportData;
  events: readonly SessionEvent[];
  /** Per-event labels, previews, messages and trace relations for the page. */
  facts: PageEventFacts;
  /** DSH refused or could not read the log (the report still shows why). */
  failed: boolean;
}

function thrownInspection(target: ResolvedTarget, error: LogError): SessionInspection {
  return {
    source: target.path,
    encoding: 'none',
    encodingBy: 'content' as SessionInspection['encodingBy'],
    bytes: 0,
    meta: null,
    storedEventCount: 0,
    closers: [],
    closerReasons: [],
    torn: null,
    repairPlan: null,
    artifact: { filename: 'session.jsonl' } as SessionInspection['artifact'],
    migratedEvents: 0,
    ignorableUnknown: [],
    error: {
      name: error.dshClass,
      class: error.dshClass,
      message: error.message,
      kind: error.kind,
      stage: 'physical',
      ...(error.byteOffset !== undefined ? { byteOffset: error.byteOffset } : {}),
    },
    target: { path: target.path, ...(target.root !== undefined ? { root: target.root } : {}), ...(target.expectedId !== undefined ? { expectedId: target.expectedId } : {}) },
    warnings: [...target.layoutWarnings],
  };
}

/** The report's lineage of the session with `header`, in `options.root` or the root the target sits in. */
export async function lineageOf(target: ResolvedTarget, header: SessionHeader | null, options: Pick<BuildOptions, 'root' | 'decoder'>): Promise<ReportLineage> {
  const root = options.root ?? target.root;
  if (!header) return reportLineage(null, null, 'no readable session header: lineage unknown');
  if (root === undefined) return reportLineage(header, null, 'the target is not inside a session root; pass --root to find its parent and children');
  try {
    return reportLineage(header, await lineageInRoot(root, header.id, options.decoder), null);
  } catch (error) {
    return reportLineage(header, null, `lineage in ${root} failed: ${(error as Error).message}`);
  }
}

/** Who the report's secrets are about (`dsh secrets`' session facts). */
export function secretsInfo(target: ResolvedTarget, header: SessionHeader) {
  return { sessionId: header.id, path: target.path, kind: sessionKind(header), parentSession: header.parentSession ?? null, seedLength: header.seedLength ?? null };
}

/** The HTML incident report of one session from its held logical events (`dsh report` on a log DSH refuses; the reference for {@link streamReport}). */
export async function buildReport(target: ResolvedTarget, options: BuildOptions): Promise<BuiltReport> {
  const decoder = options.decoder ? { decoder: options.decoder } : {};
  let r: SessionInspection;
  let findings: Finding[];
  try {
    r = await inspectTarget(target, { ...decoder, collect: true, keepReplacements: true });
    findings = (await checkInspection(r, target, { ...decoder, lookup: rootLookup(), ...(options.behaviour ? { behaviour: options.behaviour } : {}) })).findings;
  } catch (error) {
    if (!(error instanceof LogError)) throw error;
    r = thrownInspection(target, error);
    findings = (await checkResolved(target, decoder)).findings;
  }
  const header = r.meta ?? r.artifact.meta ?? null;
  const lineage = await lineageOf(target, header, options);
  let secrets = null;
  if (!r.error && r.events && header) secrets = secretsOfEvents(secretsInfo(target, header), header, r.events).secrets;
  const data = buildReportData({ inspection: r, findings, lineage, version: options.version, secrets });
  if (!r.error && r.events && r.meta) {
    const held = r.events;
    data.context = pageContext(await contextOf(deriveDispatches(held, { lazy: held }).requests, async () => held, r.meta.id, { prices: shippedPriceTable() }));
  }
  const events = r.error ? [] : (r.events ?? []);
  const facts = r.error || events.length === 0 ? emptyFacts() : eventFacts(events, r.surface);
  return { data, events, facts, failed: r.error !== undefined };
}
