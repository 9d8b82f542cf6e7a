import type { ChalkInstance } from 'chalk';
import { escapeControl, preview } from '../io.js';
import { costText, pushAll, type MessageRef, type PairDiff, type SessionDiff, type TextDiff, type ToolCallFact, type UsageNumbers, type DispatchDiff } from '../../api/views.js';
import { formatCount, toJson } from '../../api/log.js';
import { finishShort } from './request.js';
import { renderHunks } from './hunks.js';

export interface DiffRenderOptions {
  /** Print every line and every later dispatch (no folding). */
  full?: boolean;
  /** Labels of the two sides (their targets as given). */
  labels: { a: string; b: string };
}

const n = formatCount;
/** Divergent dispatches shown in detail unless --full (later ones get one line each). */
const DETAILED_PAIRS = 10;
function usageDeltaText(a: UsageNumbers | null, b: UsageNumbers | null, delta: UsageNumbers | null): string {
  if (!delta) return '-';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(delta)) {
    const name = ({ inputTokens: 'in', cacheReadTokens: 'cache-read', cacheWriteTokens: 'cache-write', outputTokens: 'out', reasoningTokens: 'reasoning' } as Record<string, string>)[k] ?? k;
    parts.push(`${escapeControl(name)} ${n(a?.[k] ?? 0)} → ${n(b?.[k] ?? 0)} (${v >= 0 ? '+' : ''}${n(v)})`);
  }
  return parts.join(', ');
}

function callText(t: ToolCallFact): string {
  const outcome = t.outcome === 'ok' ? 'ok' : t.outcome === 'error' ? `error${t.errorCode ? ` ${t.errorCode}` : ''}` : 'no result';
  const result = t.result !== null ? ` "${preview(t.result, 50)}"` : '';
  return `${escapeControl(t.name)}(${preview(t.arguments, 70)}) → ${outcome}${t.resultSeq !== null ? ` (seq ${t.resultSeq})` : ''}${result}`;
}

function msgText(side: 'a' | 'b', m: MessageRef): string {
  return `${side}:seq ${m.seq} #${m.position} ${escapeControl(m.type)} ${escapeControl(m.role ?? '')}  ${preview(m.preview, 80)}`;
}

function pairTitle(p: PairDiff): string {
  const ka = p.a ? p.a.key : '(none)';
  const kb = p.b ? p.b.key : '(none)';
  const seqs = `first chunk a:${p.a ? p.a.firstChunkSeq : '-'} b:${p.b ? p.b.firstChunkSeq : '-'}`;
  return `${ka} ↔ ${kb}  ${seqs}`;
}

function pairLines(p: PairDiff, c: ChalkInstance, o: DiffRenderOptions, shown: { left: Set<number>; entered: Set<number>; header: { key: string; at: string } | null }): string[] {
  const full = Boolean(o.full);
  const label = (s: string) => `  ${c.bold(s.padEnd(10))}`;
  const out: string[] = [];
  out.push(`${c.bold('dispatch')}  ${c.cyan(pairTitle(p))}  ${p.differs.length ? c.yellow(`differs: ${p.differs.join(', ')}`) : c.dim('equivalent')}`);
  if (!p.a || !p.b) {
    const only = (p.a ?? p.b) as NonNullable<PairDiff['a']>;
    out.push(`${label('only')}${p.a ? 'a' : 'b'} made this dispatch (${n(only.messageCount)} messages, ${escapeControl(String(only.model ?? '?'))})`);
    const calls = p.a ? p.toolCalls.a : p.toolCalls.b;
    for (const t of calls) out.push(`${label('tool')}${callText(t)}`);
    return out;
  }
  const m = p.messages;
  const newLeft = m.left.filter((x) => !shown.left.has(x.seq));
  const newEntered = m.entered.filter((x) => !shown.entered.has(x.seq));
  const carried = m.left.length - newLeft.length + (m.entered.length - newEntered.length);
  out.push(`${label('messages')}${p.a.messageCount} → ${p.b.messageCount}: ${n(m.kept)} equivalent, ${c.red(`${m.left.length} left`)}, ${c.green(`${m.entered.length} entered`)}${carried ? c.dim(`  (${carried} as shown for an earlier dispatch)`) : ''}`);
  const modifiedA = new Map(m.modified.map((x) => [x.a.seq, x]));
  for (const x of newLeft) {
    out.push(`    ${c.red('-')} ${msgText('a', x)}`);
    const mod = modifiedA.get(x.seq);
    if (mod && !shown.entered.has(mod.b.seq)) {
      out.push(`    ${c.green('+')} ${msgText('b', mod.b)}  ${c.dim('(the same message, changed:)')}`);
      pushAll(out, renderHunks(mod.diff, c, full, '      '));
    }
  }
  const pairedB = new Set(m.modified.filter((x) => newLeft.some((l) => l.seq === x.a.seq)).map((x) => x.b.seq));
  for (const x of newEntered) if (!pairedB.has(x.seq)) out.push(`    ${c.green('+')} ${msgText('b', x)}`);
  for (const x of m.left) shown.left.add(x.seq);
  for (const x of m.entered) shown.entered.add(x.seq);
  if (p.header.changes.length === 0) out.push(`${label('header')}equivalent${p.header.aSeq !== null || p.header.bSeq !== null ? c.dim(` (request/header a:${p.header.aSeq ?? '-'} b:${p.header.bSeq ?? '-'})`) : ''}`);
  else if (shown.header && shown.header.key === toJson(p.header.changes)) {
    out.push(`${label('header')}${c.yellow('changed')} as shown for ${escapeControl(shown.header.at)} (request/header a:${p.header.aSeq ?? '-'} b:${p.header.bSeq ?? '-'})`);
  } else {
    shown.header = { key: toJson(p.header.changes), at: pairTitle(p).split('  ')[0] as string };
    out.push(`${label('header')}${c.yellow('changed')} (request/header a:${p.header.aSeq ?? '-'} b:${p.header.bSeq ?? '-'})`);
    for (const ch of p.header.changes) {
      if (ch.field.startsWith('tools[')) out.push(`    ${escapeControl(ch.field).padEnd(24)} ${ch.after === 'added' ? c.green('added') : ch.after === 'removed' ? c.red('removed') : 'schema changed'}`);
      else if (ch.field === 'system') out.push(`    ${'system'.padEnd(24)} ${p.header.system ? `+${p.header.system.added} -${p.header.system.removed} lines` : 'changed'}`);
      else out.push(`    ${escapeControl(ch.field).padEnd(24)} ${preview(toJson(ch.before) ?? '(absent)', 50)} → ${preview(toJson(ch.after) ?? '(absent)', 50)}`);
    }
    if (p.header.system) pushAll(out, renderHunks(p.header.system, c, full, '      '));
  }
  if (p.requestContext.changed) out.push(`${label('context')}${c.yellow('changed')} ${preview(toJson(p.requestContext.a) ?? 'null', 60)} → ${preview(toJson(p.requestContext.b) ?? 'null', 60)}`);
  out.push(`${label('usage')}${usageDeltaText(p.usage.a, p.usage.b, p.usage.delta)}`);
  const sameCalls = p.toolCalls.a.length === p.toolCalls.b.length && p.toolCalls.a.every((t, i) => callText(t) === callText(p.toolCalls.b[i] as ToolCallFact));
  if (sameCalls) for (const t of p.toolCalls.a) out.push(`${label('tool')}${callText(t)}`);
  else {
    for (const t of p.toolCalls.a) out.push(`${label('tool')}${c.red('-')} a: ${callText(t)}`);
    for (const t of p.toolCalls.b) out.push(`${label('tool')}${c.green('+')} b: ${callText(t)}`);
    if (!p.toolCalls.a.length && !p.toolCalls.b.length) out.push(`${label('tool')}none`);
  }
  const fa = finishShort(p.finish.a);
  const fb = finishShort(p.finish.b);
  out.push(`${label('finish')}${fa === fb ? fa : `${c.red(fa)} → ${c.green(fb)}`}`);
  if (p.output) {
    out.push(`${label('answer')}${c.yellow('differs')} (+${p.output.added} -${p.output.removed} lines)`);
    pushAll(out, renderHunks(p.output, c, full, '      '));
  }
  return out;
}

function relationText(d: SessionDiff): string {
  switch (d.relation) {
    case 'same-session':
      return `the same session (${escapeControl(d.a.sessionId)}) on both sides: copies, encodings or versions of one log`;
    case 'fork':
      return `b is a fork of a (seedLength ${d.b.seedLength})`;
    case 'forked-from':
      return `a is a fork of b (seedLength ${d.a.seedLength})`;
    case 'siblings':
      return `siblings: both forked from ${escapeControl(String(d.a.parentSession))}`;
    default:
      return 'unrelated sessions (no fork link)';
  }
}

function prefixText(d: SessionDiff, c: ChalkInstance): string {
  const p = d.sharedPrefix;
  const stop = (side: 'a' | 'b') => {
    const s = p.stopsAt[side];
    return s ? `${side} continues at seq ${s.seq} ${escapeControl(s.type)}` : `${side} ends there`;
  };
  const span = p.events > 0 ? ` (seqs 0..${p.events - 1})` : '';
  if (p.kind === 'fork-seed') {
    const bad = (p.seedMismatches ?? []).length;
    const state = bad ? c.red(`${bad} seeded event(s) differ from the parent (first seq ${p.seedMismatches?.[0]})`) : p.identical ? 'identical to the parent' : `equivalent to the parent, not byte-identical from seq ${p.firstInexactSeq}`;
    return `fork seed: ${n(p.events)} events${span} ${state}${p.seedBeyondParent ? c.red('; the seed is longer than the parent log') : ''}; ${stop('a')}, ${stop('b')}`;
  }
  const state = p.events === 0 ? '' : p.identical ? ', identical' : `, equivalent (ids/times differ from seq ${p.firstInexactSeq})`;
  return `${n(p.events)} equivalent events${span}${state}; ${stop('a')}, ${stop('b')}`;
}

function textDiffSummary(t: TextDiff): string {
  return t.hunks.length === 0 ? 'no difference' : `+${n(t.added)} -${n(t.removed)} lines in ${t.hunks.length} hunk${t.hunks.length === 1 ? '' : 's'}`;
}

/** The summary lines (`--stat` prints only these). */
export function renderSessionStat(d: SessionDiff, c: ChalkInstance, o: DiffRenderOptions): string[] {
  const label = (s: string) => c.bold(s.padEnd(11));
  const out: string[] = [];
  out.push(`${label('a')}${escapeControl(d.a.sessionId)}  ${c.dim(escapeControl(o.labels.a))}  ${n(d.a.events)} events, ${n(d.a.dispatches)} dispatches`);
  out.push(`${label('b')}${escapeControl(d.b.sessionId)}  ${c.dim(escapeControl(o.labels.b))}  ${n(d.b.events)} events, ${n(d.b.dispatches)} dispatches`);
  out.push(`${label('relation')}${relationText(d)}`);
  out.push(`${label('prefix')}${prefixText(d, c)}`);
  out.push(`${label('verdict')}${d.identical ? c.green('identical events') : d.equivalent ? c.green('equivalent events') + c.dim(' (only ids and times differ)') : c.yellow('the sessions differ')}`);
  const pairs = d.dispatches.pairs;
  const same = pairs.filter((p) => p.differs.length === 0).length;
  const fd = d.dispatches.firstDivergent;
  const first = fd === null ? 'none' : `${pairs[fd]?.a ?? '(none)'} ↔ ${pairs[fd]?.b ?? '(none)'} (${(pairs[fd]?.differs ?? []).join(', ')})`;
  out.push(`${label('dispatches')}${n(pairs.length)} aligned by ${d.dispatches.alignedBy}, ${n(same)} equivalent, ${n(pairs.length - same)} differ; first divergent: ${fd === null ? c.green(first) : c.yellow(first)}`);
  out.push(`${label('usage')}${usageDeltaText(d.usageTotals.a, d.usageTotals.b, d.usageTotals.delta)}  ${c.dim('(all dispatches)')}`);
  out.push(`${label('cost')}${costText(d)}  ${c.dim(`(${d.costNote})`)}`);
  out.push(`${label('surface')}${textDiffSummary(d.surface)}`);
  out.push(`${label('transcript')}${textDiffSummary(d.transcript)}`);
  return out;
}

/** `dsh diff <a> <b>`. Pure. */
export function renderSessionDiff(d: SessionDiff, c: ChalkInstance, o: DiffRenderOptions): string {
  const full = Boolean(o.full);
  const out = renderSessionStat(d, c, o);
  const shown = { left: new Set<number>(), entered: new Set<number>(), header: null as { key: string; at: string } | null };
  const divergent = d.dispatches.divergent;
  const detailed = full ? divergent.length : Math.min(DETAILED_PAIRS, divergent.length);
  for (let i = 0; i < detailed; i++) {
    out.push('');
    if (i === 0) out.push(c.bold('first divergent dispatch'));
    else if (i === 1) out.push(c.bold('later dispatches'));
    pushAll(out, pairLines(divergent[i] as PairDiff, c, o, shown));
  }
  if (detailed < divergent.length) {
    out.push('');
    for (const p of divergent.slice(detailed)) out.push(`${c.bold('dispatch')}  ${c.cyan(pairTitle(p))}  ${p.differs.length ? c.yellow(`differs: ${p.differs.join(', ')}`) : c.dim('equivalent')}`);
    out.push(c.dim(`(${divergent.length - detailed} later dispatches summarised; --full shows each, --json has them all)`));
  }
  for (const [name, t, what] of [
    ['surface', d.surface, 'the model context at the end of each log'],
    ['transcript', d.transcript, 'what the user saw'],
  ] as const) {
    out.push('');
    out.push(`${c.bold(name)}  ${c.dim(`${what}: a ${n(t.aLines)} lines, b ${n(t.bLines)} lines`)}  ${textDiffSummary(t)}`);
    out.push(`${c.red(`--- a ${escapeControl(o.labels.a)}`)}`);
    out.push(`${c.green(`+++ b ${escapeControl(o.labels.b)}`)}`);
    pushAll(out, renderHunks(t, c, full));
  }
  return out.join('\n') + '\n';
}

/** `--stat` for two dispatches of one session. */
export function renderDispatchStat(d: DispatchDiff, c: ChalkInstance): string {
  const m = d.messages;
  return `${c.cyan(d.from ?? '(session start)')} → ${c.cyan(d.to)}  header ${d.header.changed ? c.yellow(`${d.header.changes.length} change(s)`) : 'unchanged'}, context ${d.requestContext.changed ? c.yellow('changed') : 'unchanged'}, messages ${m.fromCount} → ${m.toCount}: ${m.kept} kept, ${c.green(`${m.added.length} added`)}, ${c.red(`${m.removed.length} gone`)}, ${m.transient.length} transient\n`;
}

