import type { ByteSource } from '../physical/source.js';
import type { StoredAt } from './layout.js';

/** A resolved input: where the bytes are and what DSH's layout says about them. */
export interface ResolvedTarget {
  /** Path of the artifact file (or `-`, or `zip:entry`). */
  path: string;
  /** Session id implied by the layout (the session directory name), if any. */
  expectedId?: string;
  /** Root the artifact lives under (for lineage), if it sits in DSH's layout. */
  root?: string;
  /** Path text DSH would print in messages (`raw log: …`). */
  rawPath: string;
  open(): ByteSource;
  /** A target given by id: where DSH's by-id lookup found it (its identity check then refuses, not warns). */
  storedAt?: StoredAt;
  /** `--encoding`: the codec forced over the file name. */
  encoding?: 'zstd' | 'none';
  /** Layout findings that are not fatal for a forensic read (identity mismatches). */
  layoutWarnings: string[];
}
