import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { Option, type Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, envFor, intOption, EXIT, type CommonOptions } from '../shared.js';
import { inspectTarget, UsageError, ARTIFACT_NAMES, scanRoot, encodeSegment, sessionPath, writeArtifactFile, deepEqualJson, type Encoding, resolveTarget, toJson } from '../../api/log.js';
import { ForkUnavailable, childEvents, planFork, hostServableWarning } from '../../api/views.js';
import { renderFork } from '../render/fork.js';
import { decoderFor } from '../shared.js';
import { loadTarget } from './replay.js';

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
      const loaded = await loadTarget(io, target, readOpts);
      if (!loaded.ok) return loaded.code;
      const servable = hostServableWarning(loaded.header);
      if (servable) io.stderr.write(`dsh: note: ${escapeControl(servable)}\n`);
      let plan;
      try {
        plan = planFork(loaded.header, loaded.events, {
          ...(atSeq !== undefined ? { atSeq } : {}),
          ...(opts.id !== undefined ? { childId: opts.id } : {}),
          ...(createdAt !== undefined ? { createdAt } : {}),
          storedEventCount: loaded.r.storedEventCount,
        });
      } catch (error) {
        if (error instanceof ForkUnavailable) {
          if (opts.json) await writeOut(io.stdout, toJson({ error: { class: error.name, message: error.message, code: error.code } }) + '\n');
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
        const events = childEvents(plan, loaded.events);
        await writeArtifactFile(childPath, { header: plan.child, encoding, batches: [events] });
        // Self-check: the written child reads back as exactly the seed + end-seed and its lineage.
        const back = await inspectTarget(resolveTarget(childPath), { decoder: decoderFor(opts), collect: true });
        verified = !back.error && deepEqualJson(back.events, events) && deepEqualJson(back.meta, plan.child);
        if (!verified) io.stderr.write(`dsh: error: the written child ${childPath} does not read back as the planned seed${back.error ? `: ${escapeControl(back.error.message)}` : ''}\n`);
      }
      if (opts.json) {
        await writeOut(io.stdout, toJson({ plan, path: childPath, written: !dryRun, ...(verified !== null ? { verified } : {}) }) + '\n');
      } else {
        await writeOut(io.stdout, renderFork(plan, env.c, childPath !== null ? { path: childPath, dryRun } : null));
      }
      return verified === false ? 3 : EXIT.ok;
    }),
  );
}
