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
import type { SessionEvent } from '../log/types.js';
import { checkInspection, checkResolved, rootLookup, type Finding } from '../check/engine.js';
import { lineageInRoot } from '../views/lineage.js';
import { secretsOfEvents } from '../redact/secrets.js';
import { sessionKind } from '../views/listing.js';
import { buildReportData, reportLineage, type ReportData } from './data.js';
import { emptyFacts, eventFacts } from './facts.js';
import type { PageEventFacts } from './page/model.js';

export interface BuildOptions {
  decoder?: FrameDecoder;
  /** Session root for lineage (default: the root the target sits in). */
  root?: string;
  version: string;
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

/** The HTML incident report of one session (`dsh report`). */
export async function buildReport(target: ResolvedTarget, options: BuildOptions): Promise<BuiltReport> {
  const decoder = options.decoder ? { decoder: options.decoder } : {};
  let r: SessionInspection;
  let findings: Finding[];
  try {
    r = await inspectTarget(target, { ...decoder, collect: true, keepReplacements: true });
    findings = (await checkInspection(r, target, { ...decoder, lookup: rootLookup() })).findings;
  } catch (error) {
    if (!(error instanceof LogError)) throw error;
    r = thrownInspection(target, error);
    findings = (await checkResolved(target, decoder)).findings;
  }
  const header = r.meta ?? r.artifact.meta ?? null;
  const root = options.root ?? target.root;
  let lineage;
  if (!header) lineage = reportLineage(null, null, 'no readable session header: lineage unknown');
  else if (root === undefined) lineage = reportLineage(header, null, 'the target is not inside a session root; pass --root to find its parent and children');
  else {
    try {
      lineage = reportLineage(header, await lineageInRoot(root, header.id, options.decoder), null);
    } catch (error) {
      lineage = reportLineage(header, null, `lineage in ${root} failed: ${(error as Error).message}`);
    }
  }
  let secrets = null;
  if (!r.error && r.events && header) {
    const info = { sessionId: header.id, path: target.path, kind: sessionKind(header), parentSession: header.parentSession ?? null, seedLength: header.seedLength ?? null };
    secrets = secretsOfEvents(info, header, r.events).secrets;
  }
  const data = buildReportData({ inspection: r, findings, lineage, version: options.version, secrets });
  const events = r.error ? [] : (r.events ?? []);
  const facts = r.error || events.length === 0 ? emptyFacts() : eventFacts(events, r.surface);
  return { data, events, facts, failed: r.error !== undefined };
}
