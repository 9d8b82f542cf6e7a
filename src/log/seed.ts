/**
 * Fork seed equality (format.md §10.1-10.2, query-export.md §6.1 "offline
 * checks"): a fork child's `events[0..seedLength-1]` must equal its parent's
 * same prefix (everything but `time`), and a `session/end-seed` must sit at
 * `seedLength` (or end the seed). One comparison, used by `check` (rule L1)
 * and by the usage ledger (which attributes a verified seed to the ancestor).
 */
import { createHash } from 'node:crypto';
import { deepEqualJson } from './surface.js';
import type { SessionEvent } from './types.js';
import { canonicalJson } from '../core/json.js';

/** Event identity for seed equality: everything but `time` (DSH's own recorded fixtures re-stamp times). */
function withoutTime(e: SessionEvent | undefined): unknown {
  if (e === undefined) return undefined;
  const { time: _time, ...rest } = e;
  void _time;
  return rest;
}

/**
 * A seed fingerprint: type and seq, and a digest of everything but `time`,
 * canonical in key order. Two events compare equal under
 * `compareForkSeed` exactly when their fingerprints do.
 */
export function seedFingerprint(e: SessionEvent): SessionEvent {
  // Its `data` is the digest string (a JSON value no view reads: fingerprints are only compared).
  return { type: e.type, seq: e.seq, time: 0, data: createHash('sha1').update(canonicalJson(withoutTime(e))).digest('base64') } as unknown as SessionEvent;
}

export interface SeedComparison {
  seedLength: number;
  /** The child log is shorter than its seed: `childEvents` events. */
  childTooShort: { childEvents: number } | null;
  /** No `session/end-seed` at `seedLength` and the seed does not end with one: what was found there. */
  missingEndSeed: { found: string } | null;
  /** The parent was not available (missing, unreadable, or not looked up). */
  parentMissing: boolean;
  /** The parent has fewer events than the seed. */
  parentTooShort: { parentEvents: number } | null;
  /** The first seq below `seedLength` whose event differs from the parent's (null: none, or not compared). */
  firstDifferingSeq: number | null;
  /** Seqs `0..verifiedThrough-1` are proven equal to the parent's (0 when nothing could be compared). */
  verifiedThrough: number;
}

/** Compare a fork child's seed with its parent's prefix (events or fingerprints, both sides alike). */
export function compareForkSeed(child: readonly SessionEvent[], seedLength: number, parent: readonly SessionEvent[] | undefined): SeedComparison {
  const out: SeedComparison = { seedLength, childTooShort: null, missingEndSeed: null, parentMissing: parent === undefined, parentTooShort: null, firstDifferingSeq: null, verifiedThrough: 0 };
  if (child.length < seedLength) {
    out.childTooShort = { childEvents: child.length };
    return out;
  }
  const at = child[seedLength];
  const endedSeed = seedLength > 0 && child[seedLength - 1]?.type === 'session/end-seed';
  if (at?.type !== 'session/end-seed' && !endedSeed) out.missingEndSeed = { found: at ? at.type : 'end of log' };
  if (parent === undefined) return out;
  if (parent.length < seedLength) {
    out.parentTooShort = { parentEvents: parent.length };
    return out;
  }
  for (let i = 0; i < seedLength; i++) {
    if (!deepEqualJson(withoutTime(child[i]), withoutTime(parent[i]))) {
      out.firstDifferingSeq = i;
      out.verifiedThrough = i;
      return out;
    }
  }
  out.verifiedThrough = seedLength;
  return out;
}
