/**
 * dsh's exit codes, the one table every command and `bin/dsh.js` use:
 * 0 success, 1 the log failed (corrupt, refused, or findings at a failing level),
 * 2 usage or I/O error, 3 a bug in dsh (an internal error, reported with its stack).
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, internal: 3 } as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
