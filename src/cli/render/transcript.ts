import type { ChalkInstance } from 'chalk';
import { escapeControl, preview } from '../io.js';
import type { Transcript, TranscriptEntry, TranscriptHead, TranscriptToolCall, TranscriptToolResult } from '../../api/views.js';

function iso(ms: number): string {
  return Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms);
}

function indent(text: string, pad: string): string {
  return indentPieces(text, pad).join('');
}

/** `indent` in two pieces (the pad, then the text with a pad after each newline): a huge text is not copied once more to be joined. */
function indentPieces(text: string, pad: string): string[] {
  return [pad, text.includes('\n') ? text.replaceAll('\n', `\n${pad}`) : text];
}

/** A rendered line, or a line in pieces (written one after another). */
type Line = string | readonly string[];

/** Multi-line log text, control characters escaped (newlines and tabs kept). */
function body(text: string): string {
  return escapeControl(text, true);
}

function resultTag(r: TranscriptToolResult): string {
  const tags: string[] = [];
  if (r.isError) tags.push('error');
  if (r.errorCode) tags.push(r.errorCode);
  if (r.synthetic) tags.push('synthetic closer');
  if (r.prunedBy !== null) tags.push(`pruned for the model by seq ${r.prunedBy}`);
  return tags.length > 0 ? ` [${tags.join(', ')}]` : '';
}

function textCall(call: TranscriptToolCall, c: ChalkInstance, width: number): string[] {
  const out = [`  ${c.cyan('→')} ${c.cyan(escapeControl(call.name))}(${preview(call.arguments, width)})${c.dim(` ${escapeControl(call.id)}${call.callSeq !== null ? ` started seq ${call.callSeq}` : ' (never started)'}`)}`];
  if (call.result) {
    const r = call.result;
    out.push(`    ${r.isError ? c.red('←') : c.green('←')} ${c.dim(`seq ${r.seq}${resultTag(r)}`)} ${preview(r.text, width)}`);
  } else out.push(`    ${c.yellow('← (no result logged)')}`);
  return out;
}

function textEntry(e: TranscriptEntry, c: ChalkInstance, width: number): Line[] {
  switch (e.kind) {
    case 'turn':
      return ['', c.dim(`── turn ${e.turn} (seq ${e.seq}, ${iso(e.time)}) ──`)];
    case 'turn-end':
      return [c.yellow(`── turn ${e.turn} ended: ${e.reason}${e.detail ? ` (${escapeControl(e.detail)})` : ''}${e.synthetic ? ' [synthetic closer: crash repair]' : ''} (seq ${e.seq}) ──`)];
    case 'message': {
      const tags: string[] = [];
      if (e.source !== 'user' && e.role === 'user') tags.push(escapeControl(e.source));
      if (e.interrupted) tags.push('Stopped (interrupted)');
      if (e.synthetic) tags.push('synthetic');
      if (e.shadowedBy !== null) tags.push(`model no longer sees it: replaced by seq ${e.shadowedBy}`);
      const head = `${c.bold(e.role === 'user' ? c.green('user') : c.blue('assistant'))} ${c.dim(`seq ${e.seq}`)}${tags.length ? ' ' + c.yellow(`[${tags.join('; ')}]`) : ''}`;
      const out: Line[] = [head];
      if (e.empty) out.push(c.dim('  (no visible content: empty response, usage only)'));
      if (e.reasoning) out.push(c.dim(indent(`(reasoning) ${preview(e.reasoning, width)}`, '  ')));
      if (e.text) out.push(indentPieces(body(e.text), '  '));
      for (const call of e.toolCalls) out.push(...textCall(call, c, width));
      return out;
    }
    case 'tool-result':
      return [`  ${c.dim('←')} ${c.dim(`seq ${e.seq} result for ${escapeControl(e.callId)}${resultTag(e.result)}`)} ${preview(e.result.text, width)}`];
    case 'compaction':
      return [
        c.magenta(
          `⋯ compaction ${escapeControl(e.compactionId ?? '?')} at seq ${e.seq}: the model's view of seqs ${e.shadowedSeqs.join(', ')} was replaced by a summary${e.summarySeq !== null ? ` (compaction/summary seq ${e.summarySeq})` : ''}`,
        ),
        c.magenta(indent(body(e.summary), '  │ ')),
      ];
    case 'prune':
      return [c.magenta(`⋯ pruned at seq ${e.seq}: tool result seq ${e.originalSeq}${e.callId ? ` (${escapeControl(e.callId)})` : ''} now reads for the model: ${preview(e.text, width)}`)];
    case 'replacement':
      return [c.magenta(`⋯ ${escapeControl(e.type)} seq ${e.seq} replaced seqs ${e.shadowedSeqs.join(', ')} for the model: ${preview(e.text, width)}`)];
  }
}

/** The text rendering's pieces: the head line, then one piece per entry; joined with newlines, ended with one. */
export function transcriptTextHead(t: TranscriptHead, c: ChalkInstance): string {
  return `${c.bold('transcript')} ${c.cyan(escapeControl(t.sessionId))}  ${t.eventCount} events${t.eventCount > t.storedEventCount ? c.magenta(` (${t.eventCount - t.storedEventCount} synthetic closers)`) : ''}`;
}

export function transcriptTextEntry(e: TranscriptEntry, c: ChalkInstance, width = 100): string {
  return transcriptTextEntryPieces(e, c, width).join('');
}

/** `transcriptTextEntry` in pieces, to be written one after another: a message's huge text is never joined into a copy. */
export function transcriptTextEntryPieces(e: TranscriptEntry, c: ChalkInstance, width = 100): string[] {
  const out: string[] = [];
  for (const [i, line] of textEntry(e, c, width).entries()) {
    if (i > 0) out.push('\n');
    if (typeof line === 'string') out.push(line);
    else out.push(...line);
  }
  return out;
}

export function renderTranscriptText(t: Transcript, c: ChalkInstance, width = 100): string {
  return [transcriptTextHead(t, c), ...t.entries.map((e) => transcriptTextEntry(e, c, width))].join('\n') + '\n';
}

/** Markdown: text is escaped for control characters; code fences grow to outlast any backtick run. */
function fence(text: string, lang = ''): string {
  const runs = text.match(/`+/g) ?? [];
  const n = Math.max(3, ...runs.map((r) => r.length + 1));
  const f = '`'.repeat(n);
  return `${f}${lang}\n${body(text)}\n${f}`;
}

function quote(text: string): string {
  return body(text)
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');
}

function mdEntry(e: TranscriptEntry): string[] {
  switch (e.kind) {
    case 'turn':
      return [`---`, ``, `*Turn ${e.turn}* — seq ${e.seq}, ${iso(e.time)}`, ``];
    case 'turn-end':
      return [`*Turn ${e.turn} ended: **${e.reason}**${e.detail ? ` (${escapeControl(e.detail)})` : ''}${e.synthetic ? ' — synthetic closer (crash repair)' : ''}* (seq ${e.seq})`, ``];
    case 'message': {
      const tags: string[] = [];
      if (e.source !== 'user' && e.role === 'user') tags.push(escapeControl(e.source));
      if (e.interrupted) tags.push('Stopped');
      if (e.synthetic) tags.push('synthetic');
      if (e.shadowedBy !== null) tags.push(`replaced for the model by seq ${e.shadowedBy}`);
      const out = [`### ${e.role === 'user' ? 'User' : 'Assistant'} (seq ${e.seq})${tags.length ? ` — ${tags.join('; ')}` : ''}`, ``];
      if (e.empty) out.push(`*(no visible content: empty response, usage only)*`, ``);
      if (e.reasoning) out.push(`<details><summary>reasoning</summary>`, ``, fence(e.reasoning), ``, `</details>`, ``);
      if (e.text) out.push(body(e.text), ``);
      for (const call of e.toolCalls) {
        out.push(`**Tool call** \`${escapeControl(call.name).replace(/`/g, "'")}\` (${escapeControl(call.id)}${call.callSeq !== null ? `, started seq ${call.callSeq}` : ', never started'})`, ``, fence(call.arguments, 'json'), ``);
        if (call.result) {
          const r = call.result;
          out.push(`**Result** (seq ${r.seq}${resultTag(r)})`, ``, fence(r.text), ``);
        } else out.push(`*(no result logged)*`, ``);
      }
      return out;
    }
    case 'tool-result':
      return [`**Result for ${escapeControl(e.callId)}** (seq ${e.seq}${resultTag(e.result)})`, ``, fence(e.result.text), ``];
    case 'compaction':
      return [
        `> **Compaction ${escapeControl(e.compactionId ?? '?')}** (seq ${e.seq}) replaced the model's view of seqs ${e.shadowedSeqs.join(', ')}${e.summarySeq !== null ? ` — summary at seq ${e.summarySeq}` : ''}:`,
        `>`,
        quote(e.summary),
        ``,
      ];
    case 'prune':
      return [`> **Pruned** (seq ${e.seq}): tool result seq ${e.originalSeq} now reads for the model: ${escapeControl(e.text.replace(/\s+/g, ' '))}`, ``];
    case 'replacement':
      return [`> **${escapeControl(e.type)} replacement** (seq ${e.seq}) of seqs ${e.shadowedSeqs.join(', ')}:`, `>`, quote(e.text), ``];
  }
}

/** The Markdown rendering's pieces (before blank-line runs are collapsed): the head, then one per entry, joined with newlines. */
export function transcriptMarkdownHead(t: TranscriptHead): string {
  return [
    `# Session ${body(t.sessionId)}`,
    ``,
    `Created ${iso(t.header.createdAt)}${t.header.cwd ? ` in \`${body(t.header.cwd)}\`` : ''}. ${t.eventCount} events${t.eventCount > t.storedEventCount ? ` (${t.eventCount - t.storedEventCount} synthetic closers added by crash repair)` : ''}.`,
    ``,
  ].join('\n');
}

export function transcriptMarkdownEntry(e: TranscriptEntry): string {
  return mdEntry(e).join('\n');
}

/**
 * Markdown collapses every run of three or more newlines to two; this does
 * it piece by piece for a streamed rendering (a run may span pieces), giving
 * the same text as collapsing the whole.
 */
export class BlankLineCollapser {
  private carry = 0;
  push(text: string): string {
    const s = ('\n'.repeat(this.carry) + text).replace(/\n{3,}/g, '\n\n');
    let end = s.length;
    while (end > 0 && s.charCodeAt(end - 1) === 10) end--;
    this.carry = s.length - end;
    return s.slice(0, end);
  }
  end(): string {
    const rest = '\n'.repeat(this.carry);
    this.carry = 0;
    return rest;
  }
}

export function renderTranscriptMarkdown(t: Transcript): string {
  return [transcriptMarkdownHead(t), ...t.entries.map(transcriptMarkdownEntry)].join('\n').replace(/\n{3,}/g, '\n\n') + '\n';
}
