import { statSync } from 'node:fs';
import { Option, type Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, decoderFor, envFor, intOption, parseSince, resolveOptionsFor, EXIT, type CommonOptions, addExamples } from '../shared.js';
import { failureObject, inspectTarget, defaultRoot, looksLikeRoot, resolveTarget, scanRoot, readStdin, type ResolvedTarget, type ResolveOptions, UsageError, type SessionEvent, toJson } from '../../api/log.js';
import { Labels, type SurfaceLabel, SessionQueryError, compileTextFilter, searchFold, type SearchHit } from '../../api/views.js';
import { guardedConsumer } from '../stream.js';
import { renderSearch } from '../render/search.js';

interface SearchOptions extends CommonOptions {
  type?: string[];
  label?: SurfaceLabel[];
  session?: string[];
  since?: string;
  limit?: string;
  snippetChars?: string;
}

/** Expand inputs: a root directory → its sessions (scanRoot); anything else → one target. */
export function expandTargets(inputs: readonly string[], opts: ResolveOptions, warn: (text: string) => void): ResolvedTarget[] {
  const out: ResolvedTarget[] = [];
  const fromRoot = (root: string) => {
    const scan = scanRoot(root);
    for (const p of scan.problems) warn(`${p.path}: ${p.message}`);
    for (const s of scan.sessions) {
      const t = resolveTarget(s.path, opts.encoding !== undefined ? { encoding: opts.encoding } : {});
      t.root = scan.root;
      out.push(t);
    }
  };
  if (inputs.length === 0) {
    fromRoot(opts.root ?? defaultRoot());
    return out;
  }
  for (const input of inputs) {
    let dir = false;
    try {
      dir = input !== '-' && statSync(input).isDirectory();
    } catch {
      dir = false;
    }
    if (dir && looksLikeRoot(input)) fromRoot(input);
    else out.push(resolveTarget(input, opts));
  }
  return out;
}

export interface SearchResult {
  pattern: string;
  sessionsSearched: number;
  hits: SearchHit[];
  failures: { path: string; sessionId?: string; class: string; message: string }[];
}

export function registerSearch(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('search')
    .description("literal, whitespace-flexible, case-insensitive search over every event's semantic text (session-query filterEvents rules), with snippets")
    .argument('<pattern>', 'literal text (whitespace runs match any whitespace)')
    .argument('[targets...]', 'session roots, session files/directories/ids, or - (default: the session root)')
    .option('--type <types...>', 'only these event types (a trailing / is a prefix, e.g. tool/)')
    .addOption(new Option('--label <labels...>', 'only events with these surface labels').choices(['current', 'shadowed', 'log-only']))
    .option('--session <ids...>', 'only these session ids')
    .option('--since <time>', 'only events at or after this time (ISO date/time or epoch ms)')
    .option('--limit <n>', 'stop after this many matches')
    .option('--snippet-chars <n>', 'snippet size in code points (DSH default 240)', '240');
  addCommon(cmd, { json: 'print {pattern, sessionsSearched, hits, failures} as JSON' });
  addExamples(
    cmd,
    'dsh search "one cent" --root fixtures/incident',
    'dsh search deploy fixtures/incident --type tool/ --json',
  );
  cmd.action(
    action(io, setExit, async (patternText: string, targets: string[], opts: SearchOptions) => {
      const env = envFor(io, opts);
      let pattern: RegExp;
      try {
        pattern = compileTextFilter(patternText);
      } catch (error) {
        if (error instanceof SessionQueryError) throw new UsageError(error.message);
        throw error;
      }
      const since = opts.since !== undefined ? parseSince(opts.since) : undefined;
      if (opts.since !== undefined && since === undefined) throw new UsageError(`--since must be an ISO date/time or epoch milliseconds, got ${toJson(opts.since)}`);
      const limit = intOption('--limit', opts.limit, 1);
      const snippetChars = intOption('--snippet-chars', opts.snippetChars, 1) ?? 240;
      const stdin = targets.includes('-') ? await readStdin() : undefined;
      const resolved = expandTargets(targets, resolveOptionsFor(opts, stdin), (w) => io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`));
      const result: SearchResult = { pattern: patternText, sessionsSearched: 0, hits: [], failures: [] };
      const found: { createdAt: number; id: string; hits: SearchHit[] }[] = [];
      for (const t of resolved) {
        if (opts.session && t.expectedId !== undefined && !opts.session.includes(t.expectedId)) continue;
        // One streaming pass per session: hits keep their snippets, never the events.
        let fold: ReturnType<typeof searchFold> | undefined;
        const consumer = guardedConsumer((e: SessionEvent) => fold?.observe(e));
        const r = await inspectTarget(t, {
          decoder: decoderFor(opts),
          collect: false,
          skipArtifact: true,
          keepReplacements: true,
          onMeta: (meta) => {
            fold = searchFold(meta.id, pattern, {
              ...(opts.type ? { types: opts.type } : {}),
              ...(opts.label ? { labels: opts.label } : {}),
              ...(since !== undefined ? { since } : {}),
              snippetChars,
            });
          },
          onLogical: consumer.observe,
        });
        if (r.error || !r.meta || !r.surface || !fold) {
          const e = failureObject(r.error);
          const id = r.meta?.id ?? r.artifact.meta?.id ?? t.expectedId;
          if (opts.session && id !== undefined && !opts.session.includes(id)) continue;
          result.failures.push({ path: t.path, ...(id !== undefined ? { sessionId: id } : {}), class: e.class, message: e.message });
          if (!opts.json) io.stderr.write(`dsh: ${escapeControl(t.path)}: ${e.class}: ${escapeControl(e.message)}\n`);
          continue;
        }
        if (opts.session && !opts.session.includes(r.meta.id)) continue;
        result.sessionsSearched++;
        consumer.rethrow();
        for (const c of r.closers) fold.observe(c);
        const hits = fold.finish(new Labels(r.surface.nodes, r.surface.replacements), r.storedEventCount);
        if (hits.length) found.push({ createdAt: r.meta.createdAt, id: r.meta.id, hits });
      }
      // session-query's corpus order: newest first, then id.
      found.sort((a, b) => b.createdAt - a.createdAt || a.id.localeCompare(b.id));
      for (const f of found) result.hits.push(...f.hits);
      if (limit !== undefined) result.hits = result.hits.slice(0, limit);
      if (opts.json) await writeOut(io.stdout, toJson(result) + '\n');
      else await writeOut(io.stdout, renderSearch(result.hits, env.c, result.sessionsSearched));
      return result.failures.length > 0 ? EXIT.failed : EXIT.ok;
    }),
  );
}
