import type { Command } from 'commander';
import type { Io } from '../io.js';

/** A command registers itself on the program; `setExit` records its exit code. */
export type RegisterCommand = (program: Command, io: Io, setExit: (code: number) => void) => void;

/** One command of the registry: its name and how to load its module (only when it is needed). */
export interface CommandEntry {
  name: string;
  load: () => Promise<RegisterCommand>;
}

/** The command registry, in help order: one line per command module. */
export const COMMANDS: readonly CommandEntry[] = [
  { name: 'inspect', load: async () => (await import('./inspect.js')).registerInspect },
  { name: 'check', load: async () => (await import('./check.js')).registerCheck },
  { name: 'events', load: async () => (await import('./events.js')).registerEvents },
  { name: 'frames', load: async () => (await import('./frames.js')).registerFrames },
  { name: 'export', load: async () => (await import('./export.js')).registerExport },
  { name: 'request', load: async () => (await import('./request.js')).registerRequest },
  { name: 'surface', load: async () => (await import('./surface.js')).registerSurface },
  { name: 'trace', load: async () => (await import('./trace.js')).registerTrace },
  { name: 'transcript', load: async () => (await import('./transcript.js')).registerTranscript },
  { name: 'ls', load: async () => (await import('./ls.js')).registerLs },
  { name: 'lineage', load: async () => (await import('./lineage.js')).registerLineage },
  { name: 'replay', load: async () => (await import('./replay.js')).registerReplay },
  { name: 'history', load: async () => (await import('./history.js')).registerHistory },
  { name: 'salvage', load: async () => (await import('./salvage.js')).registerSalvage },
  { name: 'redact', load: async () => (await import('./redact.js')).registerRedact },
  { name: 'search', load: async () => (await import('./search.js')).registerSearch },
  { name: 'fork', load: async () => (await import('./fork.js')).registerFork },
  { name: 'stats', load: async () => (await import('./stats.js')).registerStats },
  { name: 'report', load: async () => (await import('./report.js')).registerReport },
  { name: 'context', load: async () => (await import('./context.js')).registerContext },
  { name: 'compactions', load: async () => (await import('./compactions.js')).registerCompactions },
  { name: 'diff', load: async () => (await import('./diff.js')).registerDiff },
  { name: 'secrets', load: async () => (await import('./secrets.js')).registerSecrets },
  { name: 'dataset', load: async () => (await import('./dataset.js')).registerDataset },
  { name: 'sql', load: async () => (await import('./sql.js')).registerSql },
  { name: 'cache', load: async () => (await import('./cache.js')).registerCache },
];

/**
 * The registrations a command line needs: only the named command's module
 * when argv names one (a command starts ~40 ms sooner than with all twenty
 * loaded), none for the version alone, every command otherwise (help, an unknown name and its
 * suggestions).
 */
export async function commandsFor(argv: readonly string[]): Promise<RegisterCommand[]> {
  const name = argv[2];
  // The version alone needs no command (loading all twenty doubled its time).
  if (argv.length === 3 && (name === '--version' || name === '-V')) return [];
  const one = name !== undefined ? COMMANDS.find((c) => c.name === name) : undefined;
  return Promise.all((one ? [one] : COMMANDS).map((c) => c.load()));
}
