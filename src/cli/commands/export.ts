import { Command, Option } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, humanBytes, writeOut } from '../io.js';
import { action, addCommon, decoderFor, envFor, resolveCli, EXIT, type CommonOptions, addExamples } from '../shared.js';
import type { RedactStats } from '../../api/redact.js';
import { UsageError, readArtifact, toJson } from '../../api/log.js';
import { exportSession, type ExportManifest, exportFileName } from '../../api/export.js';

interface ExportCliOptions extends CommonOptions {
  output?: string;
  descendants: boolean;
  media: boolean;
  attachments?: string;
  rawArtifacts?: boolean;
  deterministic?: boolean;
  level: string;
  force?: boolean;
  redact?: boolean;
  redactPattern?: string[];
  redactPaths?: boolean;
  format: string;
  content?: boolean;
  endpoint?: string;
  protocol: string;
  batchSize: string;
  contentMaxBytes?: string;
  header?: string[];
}


function summary(m: ExportManifest): string {
  const count = (p: (n: string) => boolean) => m.entries.filter((e) => p(e.name)).length;
  const lines = [
    `wrote ${escapeControl(m.output)} (${humanBytes(m.archive.bytes)}, sha256 ${m.archive.sha256})`,
    `  session.jsonl            ${escapeControl(m.root.id)}`,
    `  subagents/               ${count((n) => n.startsWith('subagents/'))} descendant(s)`,
    `  media/                   ${count((n) => n.startsWith('media/'))} image(s)`,
  ];
  const raw = count((n) => n.startsWith('raw/'));
  if (raw > 0) lines.push(`  raw/                     ${raw} original artifact file(s)`);
  if (m.warnings.length > 0) lines.push(`  ${m.warnings.length} warning(s) (on stderr)`);
  return lines.join('\n') + '\n';
}

export function registerExport(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('export')
    .description("write a session's raw ZIP export in DSH's layout (session.jsonl, subagents/<id>/session.jsonl, media/)")
    .argument('<target>', 'session.jsonl[.zstd] file, session directory, session id (under --root), or an export .zip')
    .option('-o, --output <file.zip>', 'archive to write (default: dsh-session-<id>.zip in the current directory, as DSH names it)')
    .option('--no-descendants', 'only the session itself (DSH includeDescendants=false)')
    .option('--no-media', 'do not copy referenced images into media/')
    .option('--attachments <dir>', 'attachment store: <home>/attachments/v1 (default beside the session root, else $DSH_HOME/attachments/v1)')
    .option('--raw-artifacts', 'also store the original artifact files unmodified under raw/ (dsh extension)')
    .option('--deterministic', 'fixed entry times (1980-01-01 00:00 UTC): equal inputs give byte-identical archives')
    .addOption(new Option('--level <n>', 'deflate level 0-9 (0 stores)').default('6'))
    .option('--force', 'replace an existing output file')
    .option('--redact', 'redact secrets in every session.jsonl entry (event text only, as `dsh redact`)')
    .option('--redact-pattern <regex...>', 'extra secret patterns (implies --redact)')
    .option('--redact-paths', 'also redact home directories and the session cwd (implies --redact)')
    .addOption(new Option('--format <format>', 'zip: DSH\'s raw export; otlp: OpenTelemetry traces (OTLP/JSON to -o, or --endpoint)').choices(['zip', 'otlp']).default('zip'))
    .option('--content', 'otlp: include message content (system instructions, input/output messages, tool arguments and results)')
    .option('--content-max-bytes <n>', 'otlp: most bytes of gen_ai.input.messages per chat span, oldest messages left out first (default 65536)')
    .option('--endpoint <url>', 'otlp: send over OTLP/HTTP to this collector (a base URL gets /v1/traces)')
    .addOption(new Option('--protocol <protocol>', 'otlp: wire format for --endpoint').choices(['http/protobuf', 'http/json']).default('http/protobuf'))
    .option('--batch-size <n>', 'otlp: spans per request to --endpoint', '512')
    .option('--header <name=value...>', 'otlp: extra HTTP header for --endpoint (repeatable)');
  addCommon(cmd, { json: 'print the archive manifest (otlp: the export summary) as JSON on stdout' });
  cmd.addHelpText(
    'after',
    `
The archive holds each session's artifact view byte for byte (what DSH's own export contains):
the root as session.jsonl, every parentSession descendant (forks and subagents) flat under
subagents/<id with [^A-Za-z0-9_-] as _>/session.jsonl in lineage order, and each referenced image
as media/<attachmentId>.<png|jpg|webp|gif>. A missing image is a warning; a corrupt session fails
(exit 1) and leaves no file. The archive is written to a temporary file and renamed into place.`,
  );
  addExamples(
    cmd,
    'dsh export session-incident-1 --root fixtures/incident -o incident.zip',
    'dsh export session-incident-1 --root fixtures/incident --redact --deterministic -o incident-redacted.zip',
    'dsh export session-incident-1 --root fixtures/incident --format otlp -o incident.otlp.json',
  );
  cmd.action(
    action(io, setExit, async (target: string, opts: ExportCliOptions) => {
      const env = envFor(io, opts);
      if (opts.format === 'otlp') {
        const { runOtlpExport } = await import('./export-otlp.js');
        return runOtlpExport(io, env, target, opts);
      }
      for (const [flag, set] of [['--content', opts.content], ['--endpoint', opts.endpoint]] as const) {
        if (set) throw new UsageError(`${flag} needs --format otlp`);
      }
      if (!/^[0-9]$/.test(opts.level)) throw new UsageError(`--level must be an integer 0-9, got ${toJson(opts.level)}`);
      const resolved = await resolveCli(target, opts);
      const decoder = decoderFor(opts);
      let output = opts.output;
      if (output === undefined) {
        const source = resolved.open();
        try {
          const r = await readArtifact(source, { artifactOnly: true, rawPath: resolved.rawPath, decoder, ...(resolved.expectedId !== undefined ? { expectedId: resolved.expectedId } : {}) });
          if (r.artifact.error) throw r.artifact.error;
          output = exportFileName(r.artifact.meta!.id);
        } finally {
          source.close();
        }
      }
      const redacting = Boolean(opts.redact || opts.redactPattern || opts.redactPaths);
      if (redacting && opts.rawArtifacts) {
        throw new UsageError('--raw-artifacts stores the original bytes unredacted; it cannot be combined with --redact');
      }
      if (redacting && opts.media) io.stderr.write(env.c.yellow('dsh: warning: images under media/ are copied as they are; redaction covers event text only (add --no-media to leave them out)') + '\n');
      const tty = Boolean(io.stderr.isTTY);
      let lastDraw = 0;
      const manifest = await exportSession(resolved, {
        output,
        descendants: opts.descendants,
        media: opts.media,
        ...(opts.attachments !== undefined ? { attachments: opts.attachments } : {}),
        rawArtifacts: Boolean(opts.rawArtifacts),
        deterministic: Boolean(opts.deterministic),
        level: Number(opts.level),
        force: Boolean(opts.force),
        ...(redacting
          ? {
              redact: { ...(opts.redactPattern ? { patterns: opts.redactPattern } : {}), ...(opts.redactPaths ? { paths: true } : {}) },
              onRedaction: (id: string, stats: RedactStats) => {
                const by = Object.entries(stats.byDetector).map(([k, v]) => `${k} ${v}`).join(', ');
                io.stderr.write(`dsh: redacted ${escapeControl(id)}: ${stats.replacements} replacement(s), ${stats.distinctSecrets} distinct${by ? ` (${by})` : ''}\n`);
              },
            }
          : {}),
        env: io.env,
        decoder,
        handleSignals: io.stderr === process.stderr,
        onWarning: (message) => {
          if (tty) io.stderr.write('\r\x1b[K');
          io.stderr.write(env.c.yellow(`dsh: warning: ${escapeControl(message)}`) + '\n');
        },
        ...(tty
          ? {
              onProgress: (p) => {
                const now = Date.now();
                if (now - lastDraw < 100) return;
                lastDraw = now;
                io.stderr.write(`\r\x1b[Kexport: ${p.entries} entries, ${humanBytes(p.bytesIn)} in, ${humanBytes(p.bytesOut)} out`);
              },
            }
          : {}),
      });
      if (tty) io.stderr.write('\r\x1b[K');
      if (opts.json) await writeOut(io.stdout, toJson(manifest) + '\n');
      else await writeOut(io.stdout, summary(manifest));
      return EXIT.ok;
    }),
  );
}
