import { Option, type Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, envFor, indexUseFor, intOption, resolveCli, EXIT, type CommonOptions, addExamples } from '../shared.js';
import { progressOption } from '../progress.js';
import { inspectTargetIndexed, type IndexedInspection, UsageError, encodeSegment, type Encoding, toJson } from '../../api/log.js';
import { ForkUnavailable, hostServableWarning } from '../../api/views.js';
import { forkSession } from '../../api/export.js';
import { renderFork } from '../render/fork.js';
import { decoderFor } from '../shared.js';
import { reportLoadFailure } from './replay.js';
import { failureJson } from '../render/surface.js';

interface ForkOptions extends CommonOptions {
  at?: string;
  dryRun?: boolean;
  out?: string;
  id?: string;
  createdAt?: string;
  encoding?: Encoding;
}

export function registerFork(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('fork')
    .description("plan (or write) a Host session.fork: the completed-turn boundary, the inherited prefix and the child's header; --out writes a NEW child session into another root")
    .argument('<target>', 'session file, directory, id, or -')
    .option('--at <seq>', 'anchor event seq: fork after the turn containing it (omit: the last completed turn)')
    .option('--dry-run', 'show what would be written, write nothing')
    .option('--out <root>', "write the child session into this root (DSH layout); never the source's own root")
    .option('--id <childId>', 'child session id (default session-<uuid>, as the Host mints)')
    .option('--created-at <ms>', 'child header createdAt (default now; for reproducible output)')
    .addOption(new Option('--encoding <enc>', 'child artifact encoding').choices(['zstd', 'none']).default('zstd'));
  addCommon(cmd, { json: 'print {plan, path?, written} as JSON', encoding: false });
  addExamples(
    cmd,
    'dsh fork session-incident-1 --root fixtures/incident --dry-run',
    'dsh fork session-incident-1 --root fixtures/incident --out forked-root --id session-retry-1',
  );
  cmd.action(
    action(io, setExit, async (target: string, opts: ForkOptions) => {
      const env = envFor(io, opts);
      const atSeq = intOption('--at', opts.at, 0);
      const createdAt = intOption('--created-at', opts.createdAt, 0);
      if (opts.id !== undefined) {
        if (opts.id.length === 0) throw new UsageError('--id must not be empty');
        encodeSegment(opts.id);
      }
      // fork's --encoding names the child's encoding, not how to read the source.
      const { encoding: _childEncoding, ...readOpts } = opts;
      // One validating pass (or the saved session index); the plan and the child are then made from
      // re-reads of the log, never holding it (a fork copies the prefix).
      const resolved = await resolveCli(target, readOpts);
      const indexed = await inspectTargetIndexed(resolved, { decoder: decoderFor(readOpts), ...progressOption(io, opts) }, indexUseFor(io, readOpts, []));
      try {
        return await forkIndexed(io, env, indexed, opts, atSeq, createdAt);
      } finally {
        indexed.close();
      }
    }),
  );
}

/** The fork of an inspected (indexed) source: plan, and with --out the child written and read back. */
async function forkIndexed(io: Io, env: ReturnType<typeof envFor>, ix: IndexedInspection, opts: ForkOptions, atSeq: number | undefined, createdAt: number | undefined): Promise<number> {
  const r = ix.inspection;
  if (r.error || !r.meta || !ix.stream) return reportLoadFailure(io, opts, r.error);
  for (const w of r.warnings) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
  const servable = hostServableWarning(r.meta);
  if (servable) io.stderr.write(`dsh: note: ${escapeControl(servable)}\n`);
  let fork;
  try {
    fork = await forkSession(
      { header: r.meta, storedEventCount: r.storedEventCount, target: r.target, read: ix.stream },
      {
        ...(atSeq !== undefined ? { atSeq } : {}),
        ...(opts.id !== undefined ? { childId: opts.id } : {}),
        ...(createdAt !== undefined ? { createdAt } : {}),
        ...(opts.out !== undefined ? { out: opts.out } : {}),
        dryRun: Boolean(opts.dryRun),
        encoding: opts.encoding ?? 'zstd',
        decoder: decoderFor(opts),
      },
    );
  } catch (error) {
    if (error instanceof ForkUnavailable) {
      if (opts.json) await writeOut(io.stdout, failureJson({ class: error.name, message: error.message, code: error.code }));
      else io.stderr.write(`dsh: fork-unavailable: ${escapeControl(error.message)}\n`);
      return EXIT.failed;
    }
    throw error;
  }
  const { plan, path: childPath, written, verified } = fork;
  if (verified === false) {
    io.stderr.write(`dsh: error: the written child ${childPath} does not read back as the planned seed${fork.readBackError !== undefined ? `: ${escapeControl(fork.readBackError)}` : ''}\n`);
  }
  if (opts.json) {
    await writeOut(io.stdout, toJson({ plan, path: childPath, written, ...(verified !== undefined ? { verified } : {}) }) + '\n');
  } else {
    await writeOut(io.stdout, renderFork(plan, env.c, childPath !== null ? { path: childPath, dryRun: !written } : null));
  }
  // A child that does not read back as written is a bug in dsh's writer.
  return verified === false ? EXIT.internal : EXIT.ok;
}
