import type { Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, LineWriter } from '../io.js';
import { addCommon, decoderFor, envFor, indexUseFor, EXIT, type CommonOptions, isRootDir, speculativeAction } from '../shared.js';
import { progressOption } from '../progress.js';
import { failureObject, inspectTargetIndexed, type SessionInspection, type ResolvedTarget, UsageError, resolveTarget, scanRoot, toJson, toJsonAround } from '../../api/log.js';
import { auditCompactionsStreamed, compactionsJson, DISPATCHES, foldOf, type AuditedCompactions, type CompactionsReport } from '../../api/views.js';
import { renderCompactions, renderRootCompactions, type RootCompactionRow } from '../render/compactions.js';
import { answer, sessionFor } from '../session.js';

interface CompactionsOptions extends CommonOptions {
  id?: string;
  strict?: boolean;
  verdicts?: boolean;
  all?: boolean;
}


const failing = (r: CompactionsReport) => r.verdicts.some((v) => v.state === 'fail');

/**
 * One validating pass (or the saved session index) keeps the dispatch index; the audit then walks a
 * re-read of the log holding only the folded surface's events, never the log. Its attempts are
 * printed one at a time (`audit.full`), never as one document.
 */
async function auditTarget(io: Io, target: ResolvedTarget, opts: CompactionsOptions, progress: boolean): Promise<{ r: SessionInspection; audit?: AuditedCompactions }> {
  const indexed = await inspectTargetIndexed(target, { decoder: decoderFor(opts), ...(progress ? progressOption(io, opts) : {}) }, indexUseFor(io, opts, [DISPATCHES]));
  try {
    const r = indexed.inspection;
    const { stream, events } = indexed;
    if (r.error || !stream || !events) return { r };
    const dispatches = foldOf(indexed.folds, DISPATCHES);
    const audit = await auditCompactionsStreamed(stream(), dispatches, (ranges) => events(ranges), {
      sessionId: r.meta?.id ?? null,
    });
    return { r, audit };
  } finally {
    indexed.close();
  }
}

export function registerCompactions(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('compactions')
    .description('audit every compaction and tool-result prune: trigger, summary call, replaced range, coverage, tool pairing, outcome and failure class, orphan locks, budget effect, next request; with a per-session acceptance table (over a root: one row per session)')
    .argument('<target>', 'session file, directory, id (under --root), -, or a session root')
    .option('--id <compactionId|#n>', 'single session: show only this attempt (a compactionId, or #n / n as numbered in the output); verdicts stay session-wide')
    .option('--strict', 'exit 1 when any acceptance verdict fails')
    .option('--verdicts', 'print only the acceptance table (single session)')
    .option('--all', 'root: list sessions without compaction activity too (columns: CMP compactions, OK succeeded, FAIL failed, OPEN unclosed, BARE checkpoint without a bracket)');
  addCommon(cmd, { json: 'print the audit as JSON (root: {root, totals, sessions})' });
  cmd.addHelpText(
    'after',
    `
Attempts: each compaction/start..compaction/end bracket (manual turn:null, or automatic in a turn), each
compaction/prune + its tool/result replacement, any other surface replacement, and each /compact command that
never opened a bracket. Triggers: manual (/compact), pressure (agent/pre-step, before step/start), context-overflow
(inside the step whose attempt finished with CONTEXT_WINDOW_EXCEEDED), request-error (another failure code).
Failure classes follow DSH's ManualCompactionErrorCode: busy, cancelled, changed, summary, commit, persistence
(else other). Locks follow format.md §9.4: active unless a later session/end-seed makes the start stale.
Token estimates use DSH's token-meter heuristic (4 chars/token, +4 per block, +4 per message; system and tools
priced from the next request's header).

Acceptance table (pass/warn/fail/n/a): raw fact integrity, surface legality, request reconstructable,
failure recovery, budget gain.

Examples:
  dsh compactions session.jsonl.zstd
  dsh compactions ~/.dsh/sessions --strict
  dsh compactions <id> --json`,
  );
  cmd.action(
    speculativeAction(io, setExit, async (target: string, opts: CompactionsOptions) => {
      const env = envFor(io, opts);
      if (target !== '-' && isRootDir(target)) {
        if (opts.id !== undefined || opts.verdicts) throw new UsageError('--id and --verdicts apply to a single session, not a root');
        const scan = scanRoot(target);
        for (const p of scan.problems) io.stderr.write(`dsh: warning: ${escapeControl(p.path)}: ${escapeControl(p.message)}\n`);
        const rows: RootCompactionRow[] = [];
        const audits = new Map<RootCompactionRow, AuditedCompactions>();
        for (const s of scan.sessions) {
          const t = resolveTarget(s.path);
          t.root = scan.root;
          const { r, audit } = await auditTarget(io, t, opts, false);
          if (!audit) {
            const e = failureObject(r.error);
            rows.push({ sessionId: r.artifact.meta?.id ?? s.id, path: s.path, error: e });
            if (!opts.json) io.stderr.write(`dsh: ${escapeControl(s.path)}: ${e.class}: ${escapeControl(e.message)}\n`);
            continue;
          }
          const sessionId = r.meta?.id ?? s.id;
          const { report } = audit;
          report.sessionId = sessionId;
          const row = { sessionId, path: s.path, report };
          rows.push(row);
          audits.set(row, audit);
        }
        const reports = rows.filter((x) => x.report).map((x) => x.report as CompactionsReport);
        const totals = {
          sessions: rows.length,
          unreadable: rows.length - reports.length,
          withCompactionActivity: reports.filter((x) => x.attempts.length > 0).length,
          compactions: reports.reduce((n, x) => n + x.counts.compactions, 0),
          succeeded: reports.reduce((n, x) => n + x.counts.succeeded, 0),
          failed: reports.reduce((n, x) => n + x.counts.failed, 0),
          unclosed: reports.reduce((n, x) => n + x.counts.unclosed, 0),
          unbracketed: reports.reduce((n, x) => n + x.counts.unbracketed, 0),
          prunes: reports.reduce((n, x) => n + x.counts.prunes, 0),
          activeLocks: reports.reduce((n, x) => n + x.counts.activeLocks, 0),
          staleLocks: reports.reduce((n, x) => n + x.counts.staleLocks, 0),
          failingSessions: reports.filter(failing).length,
        };
        const out = new LineWriter(io.stdout);
        if (opts.json) {
          // toJson({root, totals, sessions: rows}), one attempt at a time.
          const doc = toJsonAround({ root: scan.root, totals, sessions: null }, 'sessions');
          await out.text(`${doc.before}[`);
          for (const [i, row] of rows.entries()) {
            const audit = audits.get(row);
            if (i > 0) await out.text(',');
            if (!audit) {
              await out.text(toJson(row));
              continue;
            }
            const around = toJsonAround({ ...row, report: null }, 'report');
            await out.text(around.before);
            for (const piece of compactionsJson(audit)) await out.text(piece);
            await out.text(around.after);
          }
          await out.text(`]${doc.after}\n`);
        } else await out.text(renderRootCompactions(rows, env.c, { all: Boolean(opts.all) }));
        await out.flush();
        if (totals.unreadable > 0) return EXIT.failed;
        return opts.strict && totals.failingSessions > 0 ? EXIT.failed : EXIT.ok;
      }
      const session = await sessionFor(io, target, opts);
      let audit: AuditedCompactions;
      try {
        const answered = await answer(io, opts, session, await session.compactionAudit());
        if (typeof answered === 'number') return answered;
        audit = answered.value;
      } finally {
        session.close();
      }
      let { report } = audit;
      if (opts.id !== undefined) {
        const want = opts.id.trim();
        const n = /^#?(\d+)$/.exec(want);
        const picked = report.attempts.filter((a) => a.compactionId === want || (n !== null && a.index + 1 === Number(n[1])));
        if (picked.length === 0) {
          const known = report.attempts.map((a) => `#${a.index + 1}${a.compactionId !== null ? ` (${a.compactionId})` : ''}`);
          throw new UsageError(`no attempt ${toJson(want)} in this session${known.length ? `; attempts: ${known.slice(0, 20).join(', ')}${known.length > 20 ? ', …' : ''}` : ' (it has no compaction activity)'}`);
        }
        report = { ...report, attempts: picked };
      }
      const out = new LineWriter(io.stdout);
      if (opts.json) {
        for (const piece of compactionsJson(audit, report.attempts)) await out.text(piece);
        await out.text('\n');
      } else for (const piece of renderCompactions(report, env.c, { verdictsOnly: Boolean(opts.verdicts) }, audit.full)) await out.text(piece);
      await out.flush();
      return opts.strict && failing(report) ? EXIT.failed : EXIT.ok;
    }),
  );
}
