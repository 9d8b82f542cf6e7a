import type { ChalkInstance } from 'chalk';
import { formatCount, type AttachmentView, type BlockView, type KindView, type MessageView, type SessionEvent, deriveEventMessage, toJson, codePointLength, isEventOf } from '../../api/log.js';
import { type DispatchDiff, type DispatchEntry, type DispatchSummary, type SeqResolution, type DeepSeekBody, pushAll, textLines, unifiedDiff } from '../../api/views.js';
import { escapeControl, preview } from '../io.js';
import { renderHunks } from './hunks.js';

const n = formatCount;

function iso(ms: unknown): string {
  return typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms);
}

export interface RequestView {
  sessionId: string | null;
  entry: DispatchEntry;
  messages: unknown[];
  total: number;
  /** How the dispatch was picked (`seq 19`, `--step 1/1`). */
  from: string;
  via: Extract<SeqResolution, { ok: true }>['via'];
  /** Key of the next attempt of the same step (this one failed and was retried), if any. */
  retriedBy: string | null;
  usage: unknown | null;
  /** First chunk seq of the next dispatch, if any. */
  nextFirstChunkSeq: number | null;
  /** Stored event count when synthetic crash closers follow (seqs ≥ it are synthetic). */
  closers: number | null;
}

export interface RenderOptions {
  full?: boolean;
}

const VIA_TEXT: Record<Extract<SeqResolution, { ok: true }>['via'], string> = {
  'first-chunk': 'its first chunk',
  chunk: 'one of its chunks',
  'assistant/message': 'the assistant/message it produced',
  'tool/call': 'a tool/call it requested',
  'tool/result': 'the result of a tool call it requested',
  inside: 'an event inside its chunk span',
};

/** `stop`, `tool-calls`, `max-tokens`, `error CODE: message`, `aborted …`, or `none`. */
export function finishText(finish: unknown): string {
  if (finish === null || finish === undefined) return 'none';
  if (typeof finish === 'string') return escapeControl(finish);
  const f = finish as { kind?: unknown; failure?: { code?: unknown; message?: unknown; status?: unknown } };
  const kind = escapeControl(String(f.kind));
  if (f.failure && typeof f.failure === 'object') {
    const code = f.failure.code !== undefined ? ` ${escapeControl(String(f.failure.code))}` : '';
    const status = f.failure.status !== undefined ? ` (HTTP ${escapeControl(String(f.failure.status))})` : '';
    const msg = f.failure.message !== undefined ? `: ${preview(String(f.failure.message), 120)}` : '';
    return `${kind}${code}${status}${msg}`;
  }
  return kind;
}

/** `finishText` without the failure message (for tables). */
export function finishShort(finish: unknown): string {
  if (finish && typeof finish === 'object' && (finish as { failure?: unknown }).failure) {
    const f = finish as { kind?: unknown; failure: { code?: unknown } };
    return `${escapeControl(String(f.kind))}${f.failure.code !== undefined ? ` ${escapeControl(String(f.failure.code))}` : ''}`;
  }
  return finishText(finish);
}

function isFailure(finish: unknown): boolean {
  const kind = finish && typeof finish === 'object' ? (finish as { kind?: unknown }).kind : undefined;
  return kind === 'error' || kind === 'aborted';
}

export function usageText(usage: unknown): string {
  if (!usage || typeof usage !== 'object') return '-';
  const u = usage as Record<string, unknown>;
  const parts: string[] = [];
  const num = (v: unknown) => (typeof v === 'number' ? n(v) : escapeControl(String(v)));
  if (u['inputTokens'] !== undefined) parts.push(`in ${num(u['inputTokens'])}`);
  if (u['cacheReadTokens'] !== undefined) parts.push(`cache-read ${num(u['cacheReadTokens'])}`);
  if (u['cacheWriteTokens'] !== undefined) parts.push(`cache-write ${num(u['cacheWriteTokens'])}`);
  if (u['outputTokens'] !== undefined) parts.push(`out ${num(u['outputTokens'])}`);
  if (u['reasoningTokens'] !== undefined) parts.push(`reasoning ${num(u['reasoningTokens'])}`);
  return parts.length ? parts.join(', ') : '-';
}

function text(s: unknown, opts: RenderOptions, max = 100): string {
  const str = typeof s === 'string' ? s : toJson(s) ?? String(s);
  if (!opts.full) return `"${preview(str, max)}"`;
  return escapeControl(str, true)
    .split('\n')
    .map((l, i) => (i === 0 ? l : `         ${l}`))
    .join('\n');
}

function blockLines(block: BlockView, opts: RenderOptions, indent: string, c: ChalkInstance): string[] {
  const type = String(block?.type);
  switch (type) {
    case 'text':
      return [`${indent}${c.dim('text     ')}${text(block!.text, opts)}`];
    case 'reasoning':
      return [`${indent}${c.dim('reasoning')}${' '}${c.italic(text(block!.text, opts))}`];
    case 'tool-call':
      return [`${indent}${c.dim('tool-call')} ${c.cyan(escapeControl(String(block!.name)))} ${c.dim(`id ${escapeControl(String(block!.id))}`)} ${text(block!.arguments, opts, 80)}`];
    case 'tool-result': {
      const head = `${indent}${c.dim('tool-result')} ${c.dim(`for ${escapeControl(String(block!.toolCallId))}`)}${block!.isError ? ' ' + c.red('isError') : ''}`;
      const inner = Array.isArray(block!.content) ? (block!.content as BlockView[]).flatMap((b) => blockLines(b, opts, indent + '  ', c)) : [];
      return [head, ...inner];
    }
    case 'image': {
      const a = (block!.attachment ?? {}) as NonNullable<AttachmentView>;
      return [`${indent}${c.dim('image    ')}${escapeControl(String(a.mediaType ?? '?'))} ${a.width ?? '?'}x${a.height ?? '?'} ${c.dim(escapeControl(String(a.attachmentId ?? '')))}${a.name ? ` ${escapeControl(String(a.name))}` : ''}`];
    }
    default:
      return [`${indent}${c.dim(escapeControl(type).padEnd(9))} ${preview(toJson(block) ?? '', 80)}`];
  }
}

function sourceText(source: KindView): string {
  if (!source || typeof source !== 'object') return '';
  const kind = escapeControl(String(source.kind));
  if (kind === 'plugin') return `plugin ${escapeControl(String(source.plugin))}${source.form ? `/${escapeControl(String(source.form))}` : ''}`;
  if (kind === 'model') return `model ${escapeControl(String(source.provider))}/${escapeControl(String(source.model))}`;
  if (kind === 'tool') return `tool ${escapeControl(String(source.callId))}`;
  return kind;
}

function messageLines(message: unknown, position: number, seq: number | null, event: SessionEvent | undefined, opts: RenderOptions, c: ChalkInstance): string[] {
  const msg = message as MessageView;
  const isToolResult = msg?.role === 'user' && msg?.source?.kind === 'tool';
  const role = isToolResult ? 'tool-result' : escapeControl(String(msg?.role));
  const roleColored = role === 'assistant' ? c.green(role) : role === 'user' ? c.blue(role) : role === 'system' ? c.magenta(role) : c.yellow(role);
  const op = event?.surfaceOp;
  const replace = op && typeof op === 'object' ? c.yellow(` replaces surface ${op.start}..${op.end}`) : '';
  const flags = event?.type === 'assistant/message' && event.data?.interrupted ? c.yellow(' interrupted') : '';
  const head = `  ${c.bold(`#${position}`)} ${roleColored}  ${c.dim(`seq ${seq ?? '?'}  ${escapeControl(String(event?.type ?? ''))}  id ${escapeControl(String(msg?.id))}  source ${sourceText(msg?.source)}`)}${replace}${flags}`;
  const blocks: BlockView[] = Array.isArray(msg?.content) ? msg.content : [];
  const lines = [head];
  for (const b of blocks) lines.push(...blockLines(b, opts, '       ', c));
  if (blocks.length === 0) lines.push(`       ${c.dim('(no content blocks)')}`);
  return lines;
}

function paramsText(value: unknown): string {
  const parameters = value as { properties?: unknown; required?: unknown } | null | undefined;
  const props = parameters && typeof parameters === 'object' && parameters.properties && typeof parameters.properties === 'object' ? Object.keys(parameters.properties) : [];
  const required = new Set(Array.isArray(parameters?.required) ? parameters.required.map(String) : []);
  if (props.length === 0) return '()';
  return `(${props.map((p) => escapeControl(p) + (required.has(p) ? '*' : '')).join(', ')})`;
}

/** One dispatch, human form. Pure. */
export function renderRequest(v: RequestView, events: readonly SessionEvent[], c: ChalkInstance, opts: RenderOptions = {}): string {
  const e = v.entry;
  const out: string[] = [];
  const label = (s: string) => c.bold(s.padEnd(10));
  out.push(`${label('request')}${c.cyan(e.key)}  ${c.dim(`dispatch ${e.index + 1} of ${v.total}${v.sessionId ? ` in ${escapeControl(v.sessionId)}` : ''}; picked by ${escapeControl(v.from)}${v.from.startsWith('seq') ? ` (${VIA_TEXT[v.via]})` : ''}`)}`);
  out.push(`${label('chunks')}seq ${e.firstChunkSeq}..${e.lastChunkSeq} (${n(e.chunkCount)} chunks), ${iso(e.firstChunkTime)}, ${n(e.lastChunkTime - e.firstChunkTime)} ms`);
  let finish = finishText(e.finish);
  if (isFailure(e.finish)) {
    finish = c.red(finish) + c.dim(v.retriedBy ? `  (failed attempt; retried as ${v.retriedBy})` : '  (failed attempt; not retried in this step)');
  } else if (e.finish === null) {
    finish = c.yellow('none') + c.dim(' (no finish chunk: the attempt was cancelled or the process died mid-stream)');
  }
  out.push(`${label('finish')}${finish}`);
  const streamed = streamedText(e, events);
  if (streamed) out.push(`${label('streamed')}${streamed}`);
  out.push(`${label('answer')}${e.assistantMessageSeq !== null ? `assistant/message seq ${e.assistantMessageSeq}${events[e.assistantMessageSeq]?.data?.['interrupted'] ? c.yellow(' (interrupted: partial answer kept on the surface)') : ''}` : c.dim('none (no assistant/message cites these chunks)')}`);
  out.push(`${label('usage')}${usageText(v.usage)}`);
  if (isFailure(e.finish) || e.finish === null) {
    const after: string[] = [];
    const stop = v.nextFirstChunkSeq ?? Math.min(events.length, e.lastChunkSeq + 9);
    for (let seq = e.lastChunkSeq + 1; seq < stop && seq < events.length && after.length < 8; seq++) {
      const ev = events[seq] as SessionEvent;
      if (ev.type === 'assistant/chunk') continue;
      after.push(`${escapeControl(ev.type)} ${seq}`);
    }
    if (after.length) out.push(`${label('then')}${c.dim(after.join(', '))}`);
  }
  out.push(`${label('input')}the ${n(e.prefixEventCount)} event${e.prefixEventCount === 1 ? '' : 's'} before seq ${e.firstChunkSeq}${e.prefixEventCount > 0 ? ` (seqs 0..${e.prefixEventCount - 1})` : ''}`);
  if (v.closers !== null && e.lastChunkSeq >= v.closers) out.push(c.yellow('  note: this dispatch runs into the synthetic crash closers DSH adds in memory'));
  out.push('');
  const h = e.header;
  if (!h) {
    out.push(`${label('header')}${c.yellow('missing')}: no request/header precedes seq ${e.firstChunkSeq}, so the model, system prompt and tools this call used are not in the log`);
    out.push(c.dim('          (a log written before header logging, or a recorded snapshot fixture); only the messages below are known'));
  } else {
    out.push(`${label('header')}request/header seq ${e.headerSeq}`);
    const cfg = (h.config ?? {}) as Record<string, unknown>;
    const ad = (h.adapterDefaults ?? {}) as Record<string, unknown>;
    for (const [k, val] of Object.entries(cfg)) {
      const def = ad[k] === true ? c.dim(' (adapter default)') : '';
      out.push(`  ${k.padEnd(16)}${escapeControl(typeof val === 'string' ? val : toJson(val) ?? String(val))}${def}`);
    }
  }
  if (e.requestContext) {
    const rc = e.requestContext;
    out.push(`${label('context')}request/context seq ${e.requestContextSeq}: ${escapeControl(String(rc.provider))}/${escapeControl(String(rc.model))}${rc.contextWindow !== undefined ? `, context window ${typeof rc.contextWindow === 'number' ? n(rc.contextWindow) : escapeControl(String(rc.contextWindow))}` : ''}`);
  }
  if (h) {
    if (h.system === undefined) out.push(`${label('system')}${c.dim('(none)')}`);
    else if (typeof h.system !== 'string') out.push(`${label('system')}${preview(toJson(h.system) ?? '', 100)}`);
    else {
      out.push(`${label('system')}${n(codePointLength(h.system))} chars`);
      if (opts.full) for (const line of escapeControl(h.system, true).split('\n')) out.push(`  ${c.dim('│')} ${line}`);
      else out.push(`  ${c.dim('│')} ${preview(h.system, 160)}${c.dim('   (--full for all of it)')}`);
    }
    if (h.tools === undefined) out.push(`${label('tools')}${c.dim('(none)')}`);
    else if (!Array.isArray(h.tools)) out.push(`${label('tools')}${preview(toJson(h.tools) ?? '', 100)} ${c.dim('(not a schema list)')}`);
    else {
      out.push(`${label('tools')}${h.tools.length}: ${h.tools.map((t) => escapeControl(String(t?.name))).join(', ')}`);
      const width = Math.min(24, Math.max(...h.tools.map((t) => String(t?.name).length)));
      for (const t of h.tools) {
        out.push(`  ${c.cyan(escapeControl(String(t?.name)).padEnd(width))}  ${paramsText(t?.parameters)} ${c.dim(preview(String(t?.description ?? ''), 70))}`);
      }
      out.push(c.dim('  (schemas folded: * = required; --json for the full schemas)'));
    }
  }
  out.push('');
  const nodeCount = e.surfaceNodes.length;
  out.push(`${label('messages')}${n(v.messages.length)}${nodeCount !== v.messages.length ? c.dim(` (${nodeCount} surface nodes; ${nodeCount - v.messages.length} empty assistant anchors send nothing)`) : ''}`);
  let pos = 0;
  for (const seq of e.surfaceNodes) {
    const ev = events[seq];
    const msg = ev ? deriveEventMessage(ev) : null;
    if (msg === null) continue;
    out.push(...messageLines(msg, pos, seq, ev, opts, c));
    pos += 1;
  }
  if (!opts.full) out.push(c.dim('(texts previewed; --full prints them whole, --json prints the exact request)'));
  return out.join('\n') + '\n';
}

/** What the attempt streamed, assembled from its chunks (block-end authoritative, else deltas), previewed. */
export function streamedText(e: DispatchEntry, events: readonly SessionEvent[]): string {
  const blocks = new Map<number, { type: string; text: string; name: string; closed: boolean }>();
  const at = (index: unknown, type: string) => {
    const i = Number(index);
    let b = blocks.get(i);
    if (!b) blocks.set(i, (b = { type, text: '', name: '', closed: false }));
    return b;
  };
  for (let seq = e.firstChunkSeq; seq <= e.lastChunkSeq && seq < events.length; seq++) {
    const ev = events[seq] as SessionEvent;
    if (!isEventOf(ev, 'assistant/chunk') || ev.data?.turn !== e.turn || ev.data?.step !== e.step) continue;
    const ch = ev.data?.chunk;
    if (!ch || typeof ch !== 'object') continue;
    if (ch.type === 'block-start') at(ch.index, String(ch.blockType));
    else if (ch.type === 'text-delta' || ch.type === 'reasoning-delta') {
      const b = at(ch.index, ch.type === 'text-delta' ? 'text' : 'reasoning');
      if (!b.closed) b.text += String(ch.text ?? '');
    } else if (ch.type === 'tool-call-delta') {
      const b = at(ch.index, 'tool-call');
      if (!b.closed && typeof ch.name === 'string' && ch.name.length > 0) b.name = ch.name;
    } else if (ch.type === 'block-end') {
      const b = at(ch.index, String(ch.block?.type));
      if (!b.closed) {
        b.closed = true;
        b.type = String(ch.block?.type);
        if (typeof ch.block?.text === 'string') b.text = ch.block.text;
        if (typeof ch.block?.name === 'string') b.name = ch.block.name;
      }
    }
  }
  const parts: string[] = [];
  for (const b of blocks.values()) {
    if (b.type === 'text' && b.text) parts.push(`text "${preview(b.text, 60)}"`);
    else if (b.type === 'reasoning' && b.text) parts.push(`reasoning "${preview(b.text, 50)}"`);
    else if (b.type === 'tool-call') parts.push(`tool-call ${escapeControl(b.name || '?')}`);
    else if (b.type !== 'text' && b.type !== 'reasoning') parts.push(escapeControl(b.type));
  }
  return parts.join('; ');
}

function headerChangeText(changes: string[]): string {
  if (changes.length === 0) return '=';
  const short = changes.map((f) => (f.startsWith('config.') ? f.slice(7) : f.startsWith('tools[') ? 'tools' : f.startsWith('adapterDefaults.') ? 'adapterDefaults' : f));
  return escapeControl([...new Set(short)].join(','));
}

const HDR_W = 24;

/** `--list`: one line per dispatch. Pure. */
export function renderList(rows: DispatchSummary[], meta: { sessionId: string | null; closers: number; torn: boolean }, c: ChalkInstance): string {
  const out: string[] = [];
  out.push(`${c.bold('session')} ${c.cyan(escapeControl(meta.sessionId ?? '(unknown)'))}  ${n(rows.length)} model dispatches${meta.torn ? c.yellow(' (torn tail: recovered events included)') : ''}${meta.closers ? c.yellow(` (${meta.closers} synthetic closers)`) : ''}`);
  if (rows.length === 0) return out.join('\n') + '\n';
  const keyW = Math.max(3, ...rows.map((r) => r.key.length));
  const seqW = Math.max(5, ...rows.map((r) => String(r.firstChunkSeq).length));
  const modelW = Math.min(32, Math.max(5, ...rows.map((r) => escapeControl(String(r.model ?? '?')).length)));
  out.push(c.dim(`${'key'.padEnd(keyW)}  ${'first'.padStart(seqW)}  ${'model'.padEnd(modelW)}  ${'msgs'.padStart(5)}  ${'header'.padEnd(HDR_W)}  ${'finish'.padEnd(20)}  ${'duration'.padStart(9)}  usage`));
  for (const r of rows) {
    const model = escapeControl(String(r.model ?? '?'));
    const hdr = r.headerSeq === null ? 'missing' : headerChangeText(r.headerChanges);
    const fin = finishShort(r.finish);
    const finColored = isFailure(r.finish) ? c.red(fin) : r.finish === null ? c.yellow(fin) : fin;
    const finCell = finColored + ' '.repeat(Math.max(0, 20 - fin.length));
    out.push(
      `${r.key.padEnd(keyW)}  ${String(r.firstChunkSeq).padStart(seqW)}  ${(model.length > modelW ? model.slice(0, modelW - 1) + '…' : model).padEnd(modelW)}  ${String(r.messageCount).padStart(5)}  ${(hdr.length > HDR_W ? hdr.slice(0, HDR_W - 1) + '…' : hdr).padEnd(HDR_W)}  ${finCell}  ${(n(r.durationMs) + ' ms').padStart(9)}  ${usageText(r.usage)}`,
    );
  }
  out.push(c.dim('header: fields changed since the previous dispatch (= unchanged). Use: dsh request <target> <first> [--diff]'));
  return out.join('\n') + '\n';
}

function firstText(message: unknown): string {
  const msg = message as MessageView;
  const blocks: BlockView[] = Array.isArray(msg?.content) ? msg.content : [];
  for (const b of blocks) {
    if (b?.type === 'text' || b?.type === 'reasoning') return preview(String(b.text), 60);
    if (b?.type === 'tool-call') return `tool-call ${preview(String(b.name), 30)}`;
    if (b?.type === 'tool-result') {
      const inner = Array.isArray(b.content) ? (b.content as BlockView[]).find((x) => x?.type === 'text') : undefined;
      return `result for ${preview(String(b.toolCallId), 30)}${inner ? `: ${preview(String(inner.text), 40)}` : ''}`;
    }
  }
  return '';
}

/** `--diff`. Pure. */
export function renderDiff(d: DispatchDiff, events: readonly SessionEvent[], c: ChalkInstance, opts: RenderOptions = {}): string {
  const out: string[] = [];
  const label = (s: string) => c.bold(s.padEnd(10));
  out.push(`${label('diff')}${d.from ? c.cyan(d.from) : c.dim('(session start)')} → ${c.cyan(d.to)}  ${c.dim(`first chunks ${d.fromFirstChunkSeq ?? '-'} → ${d.toFirstChunkSeq}; input prefix ${n(d.prefixEvents.from)} → ${n(d.prefixEvents.to)} events`)}`);
  if (d.between.length) {
    const shown = d.between.slice(0, 10).map((b) => `${escapeControl(b.type)}${b.count > 1 ? ` ×${b.count}` : ''} (${b.firstSeq})`);
    out.push(`${label('between')}${c.dim(shown.join(', ') + (d.between.length > 10 ? `, … ${d.between.length - 10} more` : ''))}`);
  }
  const firstHeader = d.header.changes.length === 1 && d.header.changes[0]?.field === 'header' && d.header.changes[0].before === null;
  if (firstHeader) out.push(`${label('header')}${c.yellow('first in force')}: request/header seq ${d.header.toSeq}`);
  else if (!d.header.changed) out.push(`${label('header')}unchanged${d.header.toSeq !== null ? ` (request/header seq ${d.header.toSeq}${d.header.fromSeq !== null && d.header.fromSeq !== d.header.toSeq ? `, re-logged identical after seq ${d.header.fromSeq}` : ''})` : c.yellow(' (no request/header in the log yet)')}`);
  else {
    out.push(`${label('header')}${c.yellow('changed')} (request/header seq ${d.header.fromSeq ?? '-'} → ${d.header.toSeq ?? '-'})`);
    for (const ch of d.header.changes) {
      const show = (v: unknown) => {
        if (v === undefined) return c.dim('(absent)');
        if (typeof v === 'string') return v.length > 60 ? `${n(codePointLength(v))} chars "${preview(v, 40)}"` : toJson(preview(v, 60));
        const j = toJson(v) ?? String(v);
        return preview(j, 60);
      };
      if (ch.field.startsWith('tools[')) out.push(`  ${escapeControl(ch.field).padEnd(24)} ${ch.after === 'added' ? c.green('added') : ch.after === 'removed' ? c.red('removed') : 'schema changed'}`);
      else if (ch.field === 'tools') out.push(`  ${'tools'.padEnd(24)} ${ch.after === 'reordered' ? 'reordered' : `${show(ch.before)} → ${show(ch.after)}`}`);
      else out.push(`  ${escapeControl(ch.field).padEnd(24)} ${show(ch.before)} → ${show(ch.after)}`);
      if (ch.field === 'system' && (typeof ch.before === 'string' || typeof ch.after === 'string') && typeof (ch.before ?? '') === 'string' && typeof (ch.after ?? '') === 'string') {
        pushAll(out, renderHunks(unifiedDiff(textLines(ch.before as string | undefined), textLines(ch.after as string | undefined)), c, Boolean(opts.full), '    '));
      }
    }
  }
  if (d.requestContext.changed) {
    const ctx = (x: DispatchDiff['requestContext']['from']) => (x ? `${escapeControl(String(x.provider))}/${escapeControl(String(x.model))}${x.contextWindow !== undefined ? ` (${x.contextWindow})` : ''}` : '(none)');
    out.push(`${label('context')}${c.yellow('changed')} ${ctx(d.requestContext.from)} → ${ctx(d.requestContext.to)}`);
  } else out.push(`${label('context')}unchanged`);
  const m = d.messages;
  out.push(`${label('messages')}${m.fromCount} → ${m.toCount}: ${m.kept} kept, ${c.green(`${m.added.length} added`)}, ${c.red(`${m.removed.length} gone`)}`);
  for (const a of m.added) {
    const ev = events[a.seq];
    const msg = ev ? deriveEventMessage(ev) : null;
    const where = a.position === null ? c.dim('(sends nothing: empty assistant anchor)') : `#${a.position}`;
    const rep = a.replace ? c.yellow(` replaces surface ${a.replace.start}..${a.replace.end}`) : '';
    out.push(`  ${c.green('+')} ${where} seq ${a.seq} ${escapeControl(a.type)} ${escapeControl(String(a.role ?? ''))} ${c.dim(`id ${escapeControl(String(a.id))}`)}${rep}  ${msg ? firstText(msg) : ''}`);
  }
  for (const r of m.removed) {
    const sameId = m.added.find((a) => a.id !== null && a.id === r.id);
    const why = r.shadowedBy !== null ? `shadowed by seq ${r.shadowedBy}${sameId && sameId.seq === r.shadowedBy ? ' (rewritten in place, same id)' : ''}` : 'shadowed by a replacement';
    out.push(`  ${c.red('-')} seq ${r.seq} ${escapeControl(r.type)} ${escapeControl(String(r.role ?? ''))} ${c.dim(`id ${escapeControl(String(r.id))}`)}  ${c.yellow(why)}`);
  }
  for (const t of m.transient) {
    out.push(`  ${c.dim('~')} seq ${t.seq} ${escapeControl(t.type)} ${escapeControl(String(t.role ?? ''))} ${c.dim(`id ${escapeControl(String(t.id))}`)}  ${c.yellow(`appended and shadowed${t.shadowedBy !== null ? ` by seq ${t.shadowedBy}` : ''} between the two dispatches (never sent)`)}`);
  }
  return out.join('\n') + '\n';
}

/** `--body deepseek` human form: pretty JSON, terminal-safe (escapes stay valid JSON). */
export function renderBody(body: DeepSeekBody): string {
  let text: string;
  try {
    text = toJson(body, null, 2);
  } catch (error) {
    // Indentation grows with depth: a body nested hundreds of thousands of
    // levels has no printable pretty form, so it is printed compact.
    if (!(error instanceof RangeError)) throw error;
    text = toJson(body);
  }
  return escapeControl(text, true) + '\n';
}
