/** The file names of a session artifact in DSH's layout: zstd first, then plain JSONL (no imports: `bin/dsh.js` reads it before the CLI loads). */
export const ARTIFACT_NAMES = ['session.jsonl.zstd', 'session.jsonl'] as const;
