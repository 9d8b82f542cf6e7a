import type { ByteSource } from '../physical/source.js';

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
  /** Layout findings that are not fatal for a forensic read (identity mismatches). */
  layoutWarnings: string[];
}
