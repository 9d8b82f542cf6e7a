import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { Option, type Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, envFor, indexUseFor, intOption, resolveCli, EXIT, type CommonOptions } from '../shared.js';
import { progressOption } from '../progress.js';
import { inspectTargetIndexed, type IndexedInspection, UsageError, ARTIFACT_NAMES, scanRoot, encodeSegment, sessionPath, writeArtifactFile, deepEqualJson, type Encoding, type SessionEvent, resolveTarget, toJson } from '../../api/log.js';
import { ForkUnavailable, endSeedOf, planForkStreamed, type ForkPlan, hostServableWarning } from '../../api/views.js';
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

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** Logical events per durable append of the child (estimated JSON bytes): one append for any seed below it, as before. */
const CHILD_BATCH_BYTES = 4 << 20;

/** The child's events (the seed re-read from `read`, then its end-seed), in appends of bounded size. */
async function* childBatches(plan: ForkPlan, read: () => AsyncIterable<readonly SessionEvent[]>): AsyncGenerator<SessionEvent[]> {
  let batch: SessionEvent[] = [];
  let bytes = 0;
  let i = 0;
  walk: for await (const events of read()) {
    for (const e of events) {
      if (i++ >= plan.seedLength) break walk;
      batch.push(e);
      bytes += JSON.stringify(e).length;
      if (bytes >= CHILD_BATCH_BYTES) {
        yield batch;
        batch = [];
        bytes = 0;
      }
    }
  }
  const end = endSeedOf(plan);
  if (end) batch.push(end);
  if (batch.length > 0) yield batch;
}

/** Events of batches, one at a time. */
async function* each(batches: AsyncIterable<readonly SessionEvent[]>): AsyncGenerator<SessionEvent> {
  for await (const b of batches) yield* b;
}

/** Whether two event streams are equal, event by event (as JSON values). */
async function sameEvents(a: AsyncIterable<readonly SessionEvent[]>, b: AsyncIterable<readonly SessionEvent[]>): Promise<boolean> {
  const x = each(a);
  const y = each(b);
  try {
    for (;;) {
      const [p, q] = await Promise.all([x.next(), y.next()]);
      if (p.done || q.done) return Boolean(p.done) && Boolean(q.done);
      if (!deepEqualJson(p.value, q.value)) return false;
    }
  } finally {
    await x.return(undefined);
    await y.return(undefined);
  }
}

function inside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
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
  const read = ix.stream;
  if (r.error || !r.meta || !read) return reportLoadFailure(io, opts, r.error);
  for (const w of r.warnings) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
  const loaded = { r, header: r.meta };
  const servable = hostServableWarning(loaded.header);
  if (servable) io.stderr.write(`dsh: note: ${escapeControl(servable)}\n`);
  let plan;
  try {
    plan = await planForkStreamed(loaded.header, read, {
      ...(atSeq !== undefined ? { atSeq } : {}),
      ...(opts.id !== undefined ? { childId: opts.id } : {}),
      ...(createdAt !== undefined ? { createdAt } : {}),
      storedEventCount: loaded.r.storedEventCount,
    });
  } catch (error) {
    if (error instanceof ForkUnavailable) {
      if (opts.json) await writeOut(io.stdout, failureJson({ class: error.name, message: error.message, code: error.code }));
      else io.stderr.write(`dsh: fork-unavailable: ${escapeControl(error.message)}\n`);
      return EXIT.failed;
    }
    throw error;
  }
  let childPath: string | null = null;
  const encoding: Encoding = opts.encoding ?? 'zstd';
  if (opts.out !== undefined) {
    const outRoot = real(opts.out);
    const source = loaded.r.target;
    const srcPath = source.path === '-' || source.path.includes('.zip:') ? undefined : real(source.path);
    let sourceRoot = source.root !== undefined ? real(source.root) : undefined;
    if (sourceRoot === undefined && srcPath && (ARTIFACT_NAMES as readonly string[]).includes(path.basename(srcPath))) {
      sourceRoot = path.dirname(path.dirname(path.dirname(srcPath)));
    }
    if (sourceRoot !== undefined && inside(outRoot, sourceRoot)) {
      throw new UsageError(`--out ${opts.out} is the source session's own root (or inside it): a fork is written only into a different root`);
    }
    childPath = sessionPath(outRoot, plan.child, encoding);
    if (srcPath && (inside(srcPath, path.dirname(childPath)) || path.dirname(childPath) === path.dirname(srcPath))) {
      throw new UsageError(`refusing to write the child beside or over the source (${srcPath})`);
    }
    if (existsSync(childPath) || existsSync(path.dirname(childPath))) throw new UsageError(`child session path ${childPath} already exists`);
    if (existsSync(outRoot)) {
      const scan = scanRoot(outRoot);
      if (scan.sessions.some((s) => s.id === plan.child.id)) throw new UsageError(`session "${plan.child.id}" already exists`);
      const other = scan.sessions.find((s) => s.encoding !== encoding);
      if (other) throw new UsageError(`--out ${opts.out} already holds ${other.encoding === 'zstd' ? 'zstd' : 'raw'} sessions (${other.path}); a root uses one encoding — pass --encoding ${other.encoding}`);
    }
  }
  const dryRun = Boolean(opts.dryRun) || childPath === null;
  let verified: boolean | null = null;
  if (!dryRun && childPath !== null) {
    const planned = plan;
    await writeArtifactFile(childPath, { header: plan.child, encoding, batches: childBatches(plan, read) });
    // Self-check: the written child reads back as exactly the seed + end-seed and its lineage.
    const back = await inspectTargetIndexed(resolveTarget(childPath), { decoder: decoderFor(opts) });
    try {
      const again = back.stream;
      verified = !back.inspection.error && again !== undefined && deepEqualJson(back.inspection.meta, plan.child) && (await sameEvents(again(), childBatches(planned, read)));
      if (!verified) io.stderr.write(`dsh: error: the written child ${childPath} does not read back as the planned seed${back.inspection.error ? `: ${escapeControl(back.inspection.error.message)}` : ''}\n`);
    } finally {
      back.close();
    }
  }
  if (opts.json) {
    await writeOut(io.stdout, toJson({ plan, path: childPath, written: !dryRun, ...(verified !== null ? { verified } : {}) }) + '\n');
  } else {
    await writeOut(io.stdout, renderFork(plan, env.c, childPath !== null ? { path: childPath, dryRun } : null));
  }
  return verified === false ? 3 : EXIT.ok;
}
