import type { ChalkInstance } from 'chalk';
import { escapeControl, preview } from '../io.js';
import type { BudgetInfo, CompactionAttempt, CompactionsReport, Verdict, VerdictState } from '../../api/views.js';
import { toJson, type ErrorObject } from '../../api/log.js';

function stateText(s: VerdictState, c: ChalkInstance): string {
  const t = s.toUpperCase().padEnd(4);
  switch (s) {
    case 'pass':
      return c.green(t);
    case 'warn':
      return c.yellow(t);
    case 'fail':
      return c.red(t);
    default:
      return c.dim(t);
  }
}

function seqList(seqs: readonly number[], max = 12): string {
  if (seqs.length <= max) return seqs.join(', ');
  return `${seqs.slice(0, max).join(', ')}, … (${seqs.length} total)`;
}

function j(v: unknown): string {
  return escapeControl(typeof v === 'string' ? v : (toJson(v) ?? String(v)));
}

function usageText(u: unknown): string {
  if (!u || typeof u !== 'object') return 'no usage logged';
  const x = u as Record<string, unknown>;
  const parts = [`in ${x['inputTokens'] ?? '?'}`, `out ${x['outputTokens'] ?? '?'}`];
  if (x['cacheReadTokens'] !== undefined) parts.push(`cache-read ${x['cacheReadTokens']}`);
  if (x['cacheWriteTokens'] !== undefined) parts.push(`cache-write ${x['cacheWriteTokens']}`);
  return parts.join(' · ');
}

function signed(n: number): string {
  return n > 0 ? `−${n}` : n < 0 ? `+${-n}` : '±0';
}

function budgetLines(b: BudgetInfo, c: ChalkInstance, label: (s: string) => string): string[] {
  const out: string[] = [];
  out.push(`${label('budget')}messages ${b.messagesBefore} → ${b.messagesAfter} · chars ${b.charsBefore} → ${b.charsAfter} · est. tokens ${b.messageTokensBefore} → ${b.messageTokensAfter} (${signed(b.savedMessageTokens)}; replacement ${b.replacementTokens})`);
  const headerDelta = b.headerTokensNext - b.headerTokensBefore;
  out.push(
    `${label('')}header system ${b.systemTokensNext} + tools ${b.toolsTokensNext} = ${b.headerTokensNext} est. tokens (${headerDelta === 0 ? 'unchanged' : `${headerDelta > 0 ? '+' : '−'}${Math.abs(headerDelta)} vs before`}) · net ${b.netGain > 0 ? c.green(signed(b.netGain)) : c.red(signed(b.netGain))}${b.eatenByHeader ? c.red(' — savings eaten by the header') : ''}`,
  );
  const ub = b.usageBefore ? `${b.usageBefore.key} billed input ${b.usageBefore.billedInput}` : 'none';
  const ua = b.usageAfter ? `${b.usageAfter.key} billed input ${b.usageAfter.billedInput}` : 'none yet';
  out.push(`${label('')}reported usage: last before ${ub} → next ${ua}${b.usageBefore && b.usageAfter ? c.dim(' (includes messages added in between)') : ''}`);
  return out;
}

function attemptLines(a: CompactionAttempt, c: ChalkInstance): string[] {
  const label = (s: string) => '    ' + c.bold(s.padEnd(11));
  const out: string[] = [];
  const id = a.compactionId !== null ? ` ${c.cyan(escapeControl(a.compactionId))}` : '';
  const owner = a.owner === null ? 'standalone (turn: null)' : a.owner !== undefined ? `turn ${a.owner}` : null;
  const outcome = (() => {
    switch (a.outcome) {
      case 'succeeded':
      case 'applied':
        return c.green(a.outcome);
      case 'nothing-to-compact':
        return c.dim(a.outcome);
      default:
        return c.red(a.outcome);
    }
  })();
  out.push(`  ${c.bold(`#${a.index + 1}`)} ${a.kind}${id}  ${outcome}${owner ? c.dim(`  owner ${owner}`) : ''}`);
  out.push(`${label('trigger')}${a.trigger.kind}: ${escapeControl(a.trigger.detail)}`);
  if (a.trigger.command?.doneSeq != null) {
    out.push(`${label('')}command/done seq ${a.trigger.command.doneSeq}: ${a.trigger.command.doneKind ?? '?'} ${a.trigger.command.doneText !== null ? preview(a.trigger.command.doneText, 100) : ''}`);
  }
  const s = a.seqs;
  const seqParts = [
    s.prune !== null ? `prune ${s.prune}` : null,
    s.start !== null ? `start ${s.start}` : null,
    s.summary !== null ? `summary ${s.summary}` : null,
    s.replacement !== null ? `replacement ${s.replacement}` : null,
    s.end !== null ? `end ${s.end}` : a.outcome === 'unbracketed' ? c.yellow('no bracket') : a.outcome === 'unclosed' ? c.red('no end') : null,
  ].filter((x): x is string => x !== null);
  if (seqParts.length) out.push(`${label('seqs')}${seqParts.join(' · ')}`);
  if (a.summaryCall) {
    const sc = a.summaryCall;
    out.push(`${label('summary')}${j(sc.provider)}/${j(sc.model)} maxTokens ${sc.maxTokens ?? '-'} · ${usageText(sc.usage)}${sc.llmStreamCall ? '' : c.dim(' · not an llm.stream call')} · summary ~${sc.summaryTokens} tokens (seq ${sc.seq})`);
    if (sc.summaryText.length > 0) out.push(`${label('')}${c.dim('“')}${preview(sc.summaryText, 110)}${c.dim('”')}`);
  }
  if (a.range) {
    const r = a.range;
    out.push(`${label('replaced')}surface positions ${r.startPosition}..${r.endPosition} of ${r.surfaceLengthBefore} (span ${r.start}..${r.end}); shadowed ${seqList(r.shadowedSeqs)}`);
  }
  if (a.integrity && (a.integrity.shadowedReplacements.length > 0 || a.integrity.currentHolder !== a.seqs.replacement)) {
    const i = a.integrity;
    const parts: string[] = [];
    if (i.shadowedReplacements.length) parts.push(`re-compacts replacement(s) ${seqList(i.shadowedReplacements)}; stands for append-origin ${seqList(i.originSeqs)}`);
    if (i.currentHolder === null) parts.push(c.red('traceable to no current surface node'));
    else if (i.currentHolder !== a.seqs.replacement) parts.push(`now held by seq ${i.currentHolder} (a later replacement)`);
    out.push(`${label('facts')}${parts.join(' · ')}`);
  }
  if (a.coverage && a.range) {
    const cv = a.coverage;
    const parts: string[] = [];
    parts.push(cv.covered ? c.green(`cites all ${a.range.shadowedSeqs.length} shadowed`) : c.red(`missing ${cv.missing.join(', ')}`));
    if (cv.citesStart !== null) parts.push(cv.citesStart ? `start ${a.seqs.start}` : c.yellow('start not cited'));
    if (cv.citesSummary !== null) parts.push(cv.citesSummary ? `summary ${a.seqs.summary}` : c.yellow('summary not cited'));
    if (cv.declaredMatches !== null) parts.push(cv.declaredMatches ? 'declared shadowedSeqs match' : c.red('declared shadowedSeqs differ'));
    if (cv.declaredTokenCount !== null) parts.push(`shadowedTokenCount ${cv.declaredTokenCount}${cv.estimatedShadowedTokens !== null && cv.estimatedShadowedTokens !== cv.declaredTokenCount ? c.dim(` (heuristic over the shadowed messages: ${cv.estimatedShadowedTokens})`) : ''}`);
    out.push(`${label('coverage')}${parts.join(' · ')}`);
  }
  if (a.pairing) {
    const p = a.pairing;
    const parts: string[] = [];
    if (p.balancedBefore !== null) parts.push(`cuts ${p.balancedBefore && p.balancedAfter ? 'balanced' : c.yellow(`unbalanced ${p.balancedBefore ? 'after end' : 'before start'}`)}`);
    else parts.push('in-place tool-result rewrite');
    for (const o of p.orphanCalls) parts.push(c.red(`orphan call ${escapeControl(o.callId)} at seq ${o.survivingSeq} (result seq ${o.shadowedSeq} shadowed)`));
    for (const o of p.orphanResults) parts.push(c.red(`orphan result ${escapeControl(o.callId)} at seq ${o.survivingSeq} (call in shadowed seq ${o.shadowedSeq})`));
    if (p.ok) parts.push('no orphaned call/result');
    out.push(`${label('pairing')}${parts.join(' · ')}`);
  }
  if (a.failure) {
    const f = a.failure;
    out.push(`${label('failure')}${c.red(f.class)}${f.reason !== f.class ? ` (${f.reason})` : ''} ${c.dim(`by ${f.basis}`)}${f.text !== null ? `: ${preview(f.text, 120)}` : ''}`);
  }
  if (a.lock) out.push(`${label('lock')}${a.lock.state === 'active' ? c.red('active') : a.lock.state === 'stale' ? c.yellow('stale') : c.yellow(a.lock.state)}: ${escapeControl(a.lock.detail)}`);
  if (a.budget) out.push(...budgetLines(a.budget, c, label));
  const n = a.nextRequest;
  const status = n.status === 'ok' ? c.green('OK') : n.status === 'pending' ? c.dim('pending') : c.red('NOT RECONSTRUCTABLE');
  out.push(`${label('next req')}${n.key !== null ? `${n.key} (first chunk ${n.firstChunkSeq}) ` : ''}${status} — ${escapeControl(n.reason)}${n.retryOfFailedStep ? ' · the retry of the failed step' : ''}`);
  if (a.precedesCompaction !== null) out.push(`${label('')}${c.dim(`same automatic pass as compaction ${escapeControl(a.precedesCompaction)}`)}`);
  for (const note of a.notes) out.push(`${label('note')}${c.yellow(escapeControl(note))}`);
  return out;
}

/** The acceptance table (seed shape): item, verdict, evidence. */
export function renderVerdicts(verdicts: readonly Verdict[], c: ChalkInstance): string[] {
  const w = Math.max(...verdicts.map((v) => v.title.length), 4);
  const out = [c.dim(`  ${'CHECK'.padEnd(w)}  STATE  EVIDENCE`)];
  for (const v of verdicts) out.push(`  ${v.title.padEnd(w)}  ${stateText(v.state, c)}   ${escapeControl(v.detail)}`);
  return out;
}

/**
 * The audit as text, in pieces (the head line, then one attempt at a time, then the acceptance
 * table): `full` gives each attempt as printed (see `AuditedCompactions.full`).
 */
export function* renderCompactions(r: CompactionsReport, c: ChalkInstance, opts: { verdictsOnly?: boolean } = {}, full: (a: CompactionAttempt) => CompactionAttempt = (a) => a): Generator<string> {
  const k = r.counts;
  const head = [
    `${k.compactions} compaction${k.compactions === 1 ? '' : 's'} (${k.succeeded} succeeded, ${k.failed} failed, ${k.unclosed} unclosed${k.unbracketed ? `, ${k.unbracketed} unbracketed` : ''})`,
    `${k.prunes} prune${k.prunes === 1 ? '' : 's'}`,
  ];
  if (k.otherReplacements) head.push(`${k.otherReplacements} other replacement(s)`);
  if (k.notStarted) head.push(`${k.notStarted} /compact without a bracket`);
  if (k.activeLocks) head.push(c.red(`${k.activeLocks} active lock`));
  if (k.staleLocks) head.push(c.yellow(`${k.staleLocks} stale lock`));
  const first = `${c.bold('session')} ${c.cyan(escapeControl(r.sessionId ?? '?'))} — ${head.join(', ')}; surface now ${r.surfaceNodes} node(s), replaceGeneration ${r.replaceGeneration}`;
  yield r.foldError ? `${first}\n${c.red(`  surface fold refuses seq ${r.foldError.seq} (${r.foldError.rule}): ${escapeControl(r.foldError.message)}`)}` : first;
  if (!opts.verdictsOnly) for (const a of r.attempts) yield `\n\n${attemptLines(full(a), c).join('\n')}`;
  yield `\n\n${renderVerdicts(r.verdicts, c).join('\n')}\n`;
}

export interface RootCompactionRow {
  sessionId: string;
  path: string;
  report?: CompactionsReport;
  error?: ErrorObject;
}

export function renderRootCompactions(rows: readonly RootCompactionRow[], c: ChalkInstance, opts: { all?: boolean } = {}): string {
  const out: string[] = [];
  const shown = opts.all ? rows : rows.filter((r) => r.error || (r.report && r.report.attempts.length > 0));
  const idW = Math.min(48, Math.max(7, ...shown.map((r) => r.sessionId.length)));
  const cols = ['raw-facts', 'surface', 'request', 'failure', 'budget'] as const;
  out.push(c.dim(`${'SESSION'.padEnd(idW)}  CMP  OK  FAIL  OPEN  BARE  PRUNE  LOCK    ${['FACTS', 'SURF ', 'REQ  ', 'FAIL ', 'BUDG '].join(' ')}`));
  for (const r of shown) {
    const id = escapeControl(r.sessionId).slice(0, idW).padEnd(idW);
    if (r.error || !r.report) {
      out.push(`${c.cyan(id)}  ${c.red(`${escapeControl(r.error?.class ?? 'Error')}: ${preview(r.error?.message ?? '', 100)}`)}`);
      continue;
    }
    const k = r.report.counts;
    const lock = k.activeLocks ? c.red('active') : k.staleLocks ? c.yellow('stale ') : c.dim('-     ');
    const vs = cols.map((item) => stateText(r.report!.verdicts.find((v) => v.item === item)?.state ?? 'n/a', c) + ' ');
    out.push(
      `${c.cyan(id)}  ${String(k.compactions).padStart(3)}  ${String(k.succeeded).padStart(2)}  ${String(k.failed).padStart(4)}  ${String(k.unclosed).padStart(4)}  ${String(k.unbracketed).padStart(4)}  ${String(k.prunes).padStart(5)}  ${lock}  ${vs.join('')}`,
    );
  }
  const ok = rows.filter((r) => r.report);
  const sum = (f: (r: CompactionsReport) => number) => ok.reduce((n, r) => n + f(r.report as CompactionsReport), 0);
  const failing = ok.filter((r) => r.report!.verdicts.some((v) => v.state === 'fail')).length;
  out.push('');
  out.push(
    `${rows.length} session(s): ${sum((r) => r.counts.compactions)} compaction(s) (${sum((r) => r.counts.succeeded)} succeeded, ${sum((r) => r.counts.failed)} failed, ${sum((r) => r.counts.unclosed)} unclosed, ${sum((r) => r.counts.unbracketed)} without a bracket), ${sum((r) => r.counts.prunes)} prune(s), ${sum((r) => r.counts.activeLocks)} active lock(s); ${failing} session(s) with a failing verdict; ${rows.length - ok.length} unreadable${!opts.all && shown.length < rows.length ? c.dim(` (${rows.length - shown.length} session(s) without compaction activity hidden; --all shows them)`) : ''}`,
  );
  return out.join('\n') + '\n';
}
