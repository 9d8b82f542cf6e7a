import type { SessionEvent } from '../log/types.js';
import { stepKey } from '../core/keys.js';
import { redactionToken, type Redactor } from './redactor.js';

/** One delta of an assembled stream: its event seq and text. */
export interface DeltaPiece {
  seq: number;
  text: string;
}

/**
 * Groups streamed `assistant/chunk` deltas into streams (same turn, step,
 * chunk type, block index and call id) and hands each finished stream to
 * `onStream`: at its block's `block-end` (then with that chunk), at the step's `finish`, or when any
 * non-chunk event is logged.
 */
export class DeltaStreams {
  private groups = new Map<string, DeltaPiece[]>();

  constructor(private readonly onStream: (pieces: DeltaPiece[], closedBy?: Record<string, unknown>) => void) {}

  observe(event: SessionEvent): void {
    if (event === null || typeof event !== 'object') return;
    if (event.type !== 'assistant/chunk') {
      this.flushAll();
      return;
    }
    const data = event.data as { turn?: unknown; step?: unknown; chunk?: Record<string, unknown> } | null;
    const chunk = data && typeof data === 'object' ? data.chunk : undefined;
    if (!chunk || typeof chunk !== 'object') return;
    const ctype = chunk['type'];
    if (ctype === 'block-end') {
      if (this.groups.size === 0) return;
      const prefix = stepPrefix(data!);
      for (const key of [...this.groups.keys()]) if (key.startsWith(prefix) && key.split('/')[3] === String(chunk['index'])) this.flush(key, chunk);
      return;
    }
    if (ctype === 'finish') {
      if (this.groups.size === 0) return;
      const prefix = stepPrefix(data!);
      for (const key of [...this.groups.keys()]) if (key.startsWith(prefix)) this.flush(key);
      return;
    }
    let text: unknown;
    if (ctype === 'text-delta' || ctype === 'reasoning-delta') text = chunk['text'];
    else if (ctype === 'tool-call-delta') text = chunk['argumentsDelta'];
    if (typeof text !== 'string') return;
    const index = chunk['index'];
    const id = chunk['id'] ?? '';
    // Consecutive deltas of one stream (the common case) skip the key.
    const last = this.last;
    if (last && last.turn === data!.turn && last.step === data!.step && last.ctype === ctype && last.index === index && last.id === id && this.groups.get(last.key) === last.pieces) {
      last.pieces.push({ seq: event.seq, text });
      return;
    }
    const key = `${stepPrefix(data!)}${String(ctype)}/${String(index)}/${String(id)}`;
    let g = this.groups.get(key);
    if (!g) this.groups.set(key, (g = []));
    g.push({ seq: event.seq, text });
    this.last = { turn: data!.turn, step: data!.step, ctype, index, id, key, pieces: g };
  }

  private last: { turn: unknown; step: unknown; ctype: unknown; index: unknown; id: unknown; key: string; pieces: DeltaPiece[] } | undefined;

  /** Hand over every open stream. */
  flushAll(): void {
    if (this.groups.size === 0) return;
    for (const key of [...this.groups.keys()]) this.flush(key);
  }

  private flush(key: string, closedBy?: Record<string, unknown>): void {
    const pieces = this.groups.get(key);
    this.groups.delete(key);
    if (pieces && pieces.length > 0) this.onStream(pieces, closedBy);
  }
}

/** `turn/step/`: the key prefix of a step's streams. */
function stepPrefix(data: { turn?: unknown; step?: unknown }): string {
  return `${stepKey(data.turn, data.step)}/`;
}

/** Offsets of each piece in the assembled text. */
export function pieceStarts(pieces: readonly DeltaPiece[]): number[] {
  const starts: number[] = [];
  let at = 0;
  for (const p of pieces) {
    starts.push(at);
    at += p.text.length;
  }
  return starts;
}

/**
 * Secrets split across streamed deltas. A model streams text in
 * `assistant/chunk` deltas (`text-delta`, `reasoning-delta`,
 * `tool-call-delta`); a key can straddle two deltas, or its identifying
 * context (`Bearer `, `API_KEY=`) can sit in the previous delta. Per-delta
 * redaction misses those. This scanner assembles each delta stream (same
 * turn, step, chunk type, block index and call id), runs the detectors over
 * the assembled text and maps every span back onto the deltas: the first
 * delta touched gets the token in place of its part of the secret, the other
 * deltas lose their part. Delta count, seqs and order are unchanged, and the
 * concatenated redacted deltas equal the redacted assembled text.
 *
 * Output: `edits`, seq → replacement delta text, applied before per-string
 * redaction (`Redactor.redactBodyLine(text, line, edits)`).
 */
export class SplitSecretScanner {
  readonly edits = new Map<number, string>();
  private readonly streams = new DeltaStreams((pieces) => this.flush(pieces));

  constructor(private readonly redactor: Redactor) {}

  observe(event: SessionEvent): void {
    this.streams.observe(event);
  }

  finish(): Map<number, string> {
    this.streams.flushAll();
    return this.edits;
  }

  private flush(pieces: DeltaPiece[]): void {
    if (pieces.length < 2) return;
    const joined = pieces.map((p) => p.text).join('');
    const spans = this.redactor.findSpans(joined);
    if (spans.length === 0) return;
    // Piece boundaries in the assembled text.
    const starts = pieceStarts(pieces);
    const perPiece = new Map<number, { from: number; to: number; text: string }[]>();
    for (const span of spans) {
      const first = pieceAt(starts, span.start);
      const last = pieceAt(starts, span.end - 1);
      // A span inside one delta whose per-delta scan finds it anyway is left
      // to the per-string pass (same token either way).
      if (first === last && this.redactor.findSpans(pieces[first]!.text).some((s) => s.start === span.start - starts[first]! && s.end === span.end - starts[first]!)) continue;
      const secret = joined.slice(span.start, span.end);
      const token = redactionToken(span.label, secret);
      this.redactor.recordHit(span.detector, token, { seq: pieces[first]!.seq });
      for (let i = first; i <= last; i++) {
        const from = Math.max(span.start, starts[i]!) - starts[i]!;
        const to = Math.min(span.end, starts[i]! + pieces[i]!.text.length) - starts[i]!;
        const list = perPiece.get(i) ?? [];
        list.push({ from, to, text: i === first ? token : '' });
        perPiece.set(i, list);
      }
    }
    for (const [i, list] of perPiece) {
      const src = pieces[i]!.text;
      let out = '';
      let pos = 0;
      for (const e of list.sort((a, b) => a.from - b.from)) {
        out += src.slice(pos, e.from) + e.text;
        pos = e.to;
      }
      out += src.slice(pos);
      this.edits.set(pieces[i]!.seq, out);
    }
  }
}

export function pieceAt(starts: number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
