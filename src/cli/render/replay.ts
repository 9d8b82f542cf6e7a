import type { ChalkInstance } from 'chalk';
import { escapeControl, preview } from '../io.js';
import { chunkGap, MAX_CHUNK_GAP_MS, type ContentBlock, type ReplayAttempt, type ReplayChunk, type ReplaySummary, type ReplayView } from '../../api/views.js';
import { toJson, stepKey, type KindView, type StreamChunkView, type UsageView } from '../../api/log.js';

function blockLine(b: ContentBlock, c: ChalkInstance, width: number): string {
  switch (b.type) {
    case 'text':
      return `text      ${preview(String(b['text'] ?? ''), width)}`;
    case 'reasoning':
      return c.dim(`reasoning ${preview(String(b['text'] ?? ''), width)}`);
    case 'tool-call':
      return `tool-call ${c.cyan(escapeControl(String(b['name'])))} ${c.dim(escapeControl(String(b['id'])))} ${preview(String(b['arguments'] ?? ''), width)}`;
    default:
      return `${escapeControl(b.type).padEnd(9)} ${preview(toJson(b), width)}`;
  }
}

function ms(v: number | null): string {
  return v === null ? '-' : `${v}ms`;
}

function usageText(value: unknown): string {
  if (!value || typeof value !== 'object') return '';
  const u = value as NonNullable<UsageView>;
  const parts = [`in ${u.inputTokens}`, `out ${u.outputTokens}`];
  if (u.cacheReadTokens !== undefined) parts.push(`cache-read ${u.cacheReadTokens}`);
  if (u.cacheWriteTokens !== undefined) parts.push(`cache-write ${u.cacheWriteTokens}`);
  if (u.reasoningTokens !== undefined) parts.push(`reasoning ${u.reasoningTokens}`);
  return parts.join(', ');
}

/** The attempt's one-line heading. */
export function attemptHeading(a: ReplayAttempt, c: ChalkInstance): string {
  const seqs = a.firstChunkSeq === null ? 'no chunks' : `seq ${a.firstChunkSeq}..${a.lastChunkSeq}, ${a.chunkSeqs.length} chunk${a.chunkSeqs.length === 1 ? '' : 's'}`;
  const finish = a.finishKind === null ? c.yellow('no finish') : a.finishKind === 'error' || a.finishKind === 'aborted' ? c.red(`finish ${escapeControl(a.finishKind)}`) : `finish ${escapeControl(a.finishKind)}`;
  const outcome =
    a.outcome === 'success'
      ? c.green('success')
      : a.outcome === 'interrupted'
        ? c.yellow('interrupted')
        : a.outcome === 'failed'
          ? c.red('failed')
          : c.yellow(a.outcome);
  const retried = a.retried ? c.magenta(' [retried]') : '';
  return `  attempt ${a.attemptInStep + 1}/${a.attemptsInStep}  ${seqs}  ttft ${ms(a.ttftMs)}  duration ${ms(a.durationMs)}  ${finish}  ${outcome}${retried}`;
}

/** Per-attempt detail lines (pure). */
export function attemptLines(a: ReplayAttempt, c: ChalkInstance, width = 100): string[] {
  const out: string[] = [attemptHeading(a, c)];
  if (a.error) {
    const code = a.error['code'] !== undefined ? `${escapeControl(String(a.error['code']))}: ` : '';
    out.push(`      ${c.red('error')} ${code}${escapeControl(String(a.error['message'] ?? ''))}`);
  }
  if (a.assemblyError) out.push(`      ${c.red('assembly failed')}: ${escapeControl(a.assemblyError)}`);
  for (const b of a.blocks) out.push(`      ${blockLine(b, c, width)}`);
  if (a.blocks.length === 0 && !a.assemblyError) out.push(c.dim('      (no content blocks)'));
  if (a.usage) out.push(c.dim(`      usage ${usageText(a.usage)}`));
  if (a.retryEventSeqs.length) out.push(c.dim(`      llm/retry at seq ${a.retryEventSeqs.join(', ')}`));
  if (a.messageSeq !== null) {
    const verdict =
      a.contentMatches === true ? c.green('content matches') : a.contentMatches === false ? c.red('CONTENT DIFFERS') : c.yellow('not verifiable');
    const extra: string[] = [];
    if (a.usageMatches === false) extra.push(c.yellow('message usage differs from the last usage chunk'));
    if (a.replayStateMatches === false) extra.push(c.yellow('replayState differs'));
    if (a.citationMismatch) extra.push(c.red(`citation mismatch (not chunks: ${a.citationMismatch.notChunks.join(', ') || '-'}; uncited: ${a.citationMismatch.uncited.join(', ') || '-'})`));
    out.push(`      -> assistant/message seq ${a.messageSeq}${a.citation === 'inferred' ? ' (inferred: no sourceEventSeqs)' : ''}: ${verdict}${extra.length ? `; ${extra.join('; ')}` : ''}`);
  } else if (a.outcome === 'failed') {
    out.push(c.dim('      -> no assistant/message (failed attempts are never cited; the UI hides them, the log keeps them)'));
  } else if (a.outcome === 'unfinished') {
    out.push(c.dim('      -> no finish and no assistant/message (cancelled before commit, or a crash tail)'));
  } else if (a.outcome === 'uncommitted') {
    out.push(c.dim('      -> finished but no assistant/message cites it'));
  }
  if (a.note) out.push(c.dim(`      note: ${a.note}`));
  return out;
}

/** The whole replay (pure). */
export function renderReplay(v: ReplayView, c: ChalkInstance, attempts: readonly ReplayAttempt[] = v.attempts): string {
  return replayLines(v, c, attempts).join('\n') + '\n';
}

/** The text replay's lines (`renderReplay` joins them; a big replay writes them as they go). */
export function replayLines(v: ReplayView, c: ChalkInstance, attempts: readonly ReplayAttempt[] = v.attempts): string[] {
  const out = replayHeadLines(v.sessionId, v.summary, c);
  const steps = new StepHeadings(c);
  for (const a of attempts) out.push(...steps.lines(a));
  out.push(...replayFootLines(attempts.length, c));
  return out;
}

/** The text replay's first lines: the session and its summary (of every attempt). */
export function replayHeadLines(sessionId: string, s: ReplaySummary, c: ChalkInstance): string[] {
  const out: string[] = [];
  const parts = [`${s.success} success`];
  if (s.interrupted) parts.push(`${s.interrupted} interrupted`);
  if (s.failed) parts.push(`${s.failed} failed`);
  if (s.uncommitted) parts.push(`${s.uncommitted} uncommitted`);
  if (s.unfinished) parts.push(`${s.unfinished} unfinished`);
  out.push(`${c.bold('session')} ${c.cyan(escapeControl(sessionId))}  ${s.attempts} attempt${s.attempts === 1 ? '' : 's'} (${parts.join(', ')})`);
  const checked = s.matched + s.mismatched;
  out.push(
    `${c.bold('check')}   ${checked === 0 ? 'no assistant/message to compare' : `${s.matched}/${checked} cited assistant/messages equal their reassembled chunks`}${s.mismatched ? c.red(` (${s.mismatched} differ)`) : ''}${s.unverified ? c.dim(`, ${s.unverified} without recorded sources`) : ''}${s.orphanMessages.length ? c.red(`, messages citing unknown chunks: ${s.orphanMessages.join(', ')}`) : ''}`,
  );
  return out;
}

/** The attempts' lines, one attempt at a time, each step under its heading. */
export class StepHeadings {
  private lastStep = '';
  constructor(private readonly c: ChalkInstance) {}
  lines(a: ReplayAttempt): string[] {
    const out: string[] = [];
    const key = stepKey(a.turn, a.step);
    if (key !== this.lastStep) {
      out.push('');
      out.push(this.c.bold(`turn ${a.turn} step ${a.step}`));
      this.lastStep = key;
    }
    out.push(...attemptLines(a, this.c));
    return out;
  }
}

/** The text replay's last lines, after `attempts` attempts. */
export function replayFootLines(attempts: number, c: ChalkInstance): string[] {
  if (attempts === 0) return [c.dim('(no model attempts)')];
  return ['', c.dim('ttft/duration: first non-empty token delta / last chunk, measured from the dispatch anchor (the last non-chunk event logged before the attempt\'s first chunk)')];
}

/** The text a timed replay prints for one chunk (deltas verbatim, escaped; structure as dim markers). */
export function chunkText(value: unknown, c: ChalkInstance): string {
  if (!value || typeof value !== 'object') return '';
  const chunk = value as NonNullable<StreamChunkView>;
  switch (chunk.type) {
    case 'text-delta':
      return escapeControl(String(chunk.text ?? ''), true);
    case 'reasoning-delta':
      return c.dim(escapeControl(String(chunk.text ?? ''), true));
    case 'tool-call-delta':
      return c.cyan(`${chunk.name ? `[${escapeControl(String(chunk.name))}] ` : ''}`) + escapeControl(String(chunk.argumentsDelta ?? ''), true);
    case 'block-start':
      return c.dim(`\n[${escapeControl(String(chunk.blockType))}] `);
    case 'finish':
      return c.dim(`\n[finish ${escapeControl(typeof chunk.reason === 'string' ? chunk.reason : String((chunk.reason as KindView)?.kind))}]\n`);
    default:
      return '';
  }
}

export interface TimedFrame {
  /** Delay before this frame, already scaled, ms. */
  delayMs: number;
  attemptIndex: number;
  chunk: ReplayChunk;
}

/** The recorded gap before each chunk of a timed replay, clamped to [0, maxGapMs] (feed the chunks in order). */
export class ChunkGaps {
  private prev: number | null = null;
  constructor(private readonly maxGapMs = MAX_CHUNK_GAP_MS) {}
  gap(time: number): number {
    const gap = chunkGap(this.prev, time, this.maxGapMs);
    this.prev = time;
    return gap;
  }
}

/** The factor a timed replay scales its gaps by so that they total at most `maxTotalMs` (1: none). */
export function gapScale(total: number, maxTotalMs: number): number {
  return total > maxTotalMs && total > 0 ? maxTotalMs / total : 1;
}

/** A gap once scaled. */
export function scaledGap(gap: number, k: number): number {
  return k === 1 ? gap : Math.floor(gap * k);
}

/**
 * The frames of a timed replay: recorded gaps between consecutive chunks,
 * each gap clamped to [0, maxGapMs], then scaled down so the whole replay
 * takes at most `maxTotalMs`.
 */
export function timedFrames(attempts: readonly ReplayAttempt[], maxTotalMs = 10_000, maxGapMs = MAX_CHUNK_GAP_MS): TimedFrame[] {
  const frames: TimedFrame[] = [];
  const gaps = new ChunkGaps(maxGapMs);
  for (const a of attempts) for (const c of a.chunks ?? []) frames.push({ delayMs: gaps.gap(c.time), attemptIndex: a.index, chunk: c });
  const k = gapScale(
    frames.reduce((s, f) => s + f.delayMs, 0),
    maxTotalMs,
  );
  for (const f of frames) f.delayMs = scaledGap(f.delayMs, k);
  return frames;
}
