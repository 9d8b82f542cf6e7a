import type { Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, cacheFor, envFor, EXIT, type CommonOptions, addExamples } from '../shared.js';
import { UsageError, clearEntries, listEntryFiles, listingOfFile, toJson } from '../../api/log.js';
import { renderCacheListing, type CacheListing } from '../render/cache.js';

export function registerCache(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('cache')
    .description('the session index cache: show its directory and entries (session, log, size, last use), or clear it')
    .argument('[action]', 'list (default) or clear');
  addCommon(cmd, { json: 'print {dir, enabled, maxBytes, totalBytes, entries[]} as JSON' });
  cmd.addHelpText(
    'after',
    `
Indexes live in $DSH_CACHE_DIR, else $XDG_CACHE_HOME/dsh, else ~/.cache/dsh; they hold numbers and hashes
of the logs read (plus the session id and path, for this listing), never log text. At most
DSH_CACHE_MAX_BYTES (default 2 GiB) is kept, least recently used first out. --no-cache or DSH_NO_CACHE=1:
nothing is read from or written to it.`,
  );
  addExamples(
    cmd,
    'dsh cache',
    'dsh cache --json',
    'dsh cache clear',
  );
  cmd.action(
    action(io, setExit, async (what: string | undefined, opts: CommonOptions) => {
      const env = envFor(io, opts);
      const config = cacheFor(io, opts);
      const verb = what ?? 'list';
      if (verb === 'clear') {
        const n = clearEntries({ ...config, enabled: true });
        if (opts.json) await writeOut(io.stdout, toJson({ dir: config.dir, removed: n }) + '\n');
        else await writeOut(io.stdout, `removed ${n} session index(es) from ${escapeControl(config.dir)}\n`);
        return EXIT.ok;
      }
      if (verb !== 'list') throw new UsageError(`unknown cache action ${toJson(verb)}: use list or clear`);
      const files = listEntryFiles(config);
      const listing: CacheListing = {
        dir: config.dir,
        enabled: config.enabled,
        maxBytes: config.maxBytes,
        totalBytes: files.reduce((a, f) => a + f.bytes, 0),
        entries: files.map((f) => {
          const l = listingOfFile(f.file);
          return {
            entry: f.name,
            sessionId: l?.sessionId ?? null,
            path: l?.path ?? null,
            logBytes: l?.logBytes ?? null,
            indexBytes: f.bytes,
            usedMs: f.usedMs,
            createdMs: l?.createdMs ?? null,
          };
        }),
      };
      if (opts.json) await writeOut(io.stdout, toJson(listing) + '\n');
      else await writeOut(io.stdout, renderCacheListing(listing, env.c, Date.now()));
      return EXIT.ok;
    }),
  );
}
