/**
 * Reading values of unchecked shape (parsed JSON a log holds) by key, without `any`.
 */

/** A parsed JSON object read by key: every value is `unknown` until checked where it is used. */
export type JsonRecord = Record<string, unknown>;

/**
 * `v` read as an object by key: `v` itself when it is a non-null object (an array included),
 * else an empty record (so a read of any key gives undefined).
 */
export function rec(v: unknown): JsonRecord {
  return typeof v === 'object' && v !== null ? (v as JsonRecord) : {};
}
