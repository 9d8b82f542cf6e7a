import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { decoderFor, intOption, resolveCli, EXIT, type CommandEnv } from '../shared.js';
import { UsageError, VERSION, toJson } from '../../api/log.js';
import { abandonNewFile, prepareNewFile, writeNewFile, batches, exportRequest, exportRequestText, otlpSpans, otlpTargets, OtlpSendError, sendRequest, tracesUrl, type OtlpProtocol } from '../../api/export.js';
import type { CommonOptions } from '../shared.js';

/** The `export` options the OTLP path reads (export.ts's options extend these). */
export interface OtlpCliOptions extends CommonOptions {
  output?: string;
  force?: boolean;
  rawArtifacts?: boolean;
  redact?: boolean;
  redactPattern?: string[];
  redactPaths?: boolean;
  content?: boolean;
  contentMaxBytes?: string;
  endpoint?: string;
  protocol: string;
  batchSize: string;
  header?: string[];
}

/** `dsh export --format otlp`: OTLP/JSON to -o (or stdout), or OTLP/HTTP to --endpoint. */
export async function runOtlpExport(io: Io, env: CommandEnv, target: string, opts: OtlpCliOptions): Promise<number> {
  if (opts.rawArtifacts) throw new UsageError('--raw-artifacts is a ZIP option; it cannot be combined with --format otlp');
  if (opts.endpoint !== undefined && opts.output !== undefined) throw new UsageError('--endpoint and -o are alternatives: send the spans, or write them to a file');
  const batchSize = intOption('--batch-size', opts.batchSize, 1) as number;
  const maxInputBytes = intOption('--content-max-bytes', opts.contentMaxBytes, 2);
  const headers: Record<string, string> = {};
  for (const h of opts.header ?? []) {
    const i = h.indexOf('=');
    if (i <= 0) throw new UsageError(`--header must be name=value, got ${toJson(h)}`);
    headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
  }
  let url: URL | undefined;
  if (opts.endpoint !== undefined) {
    try {
      url = tracesUrl(opts.endpoint);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  }
  const redacting = Boolean(opts.redact || opts.redactPattern || opts.redactPaths);
  if (redacting && !opts.content) io.stderr.write('dsh: note: --redact applies to exported content; without --content no message text is exported\n');
  // Resolve the inputs, then check the output against them before reading any events:
  // never an input, nothing inside an input's session directory or root, whatever --force says.
  const targets = await otlpTargets(target, () => resolveCli(target, opts));
  const out = opts.output !== undefined && opts.output !== '-' ? prepareNewFile(opts.output, Boolean(opts.force), 0o666, targets.map((t) => t.path)) : undefined;
  try {
    const run = await otlpSpans(targets, {
      ...(opts.content ? { content: true } : {}),
      ...(maxInputBytes !== undefined ? { maxInputBytes } : {}),
      ...(redacting ? { redact: { ...(opts.redactPattern ? { patterns: opts.redactPattern } : {}), ...(opts.redactPaths ? { paths: true } : {}) } } : {}),
      decoder: decoderFor(opts),
      onWarning: (m) => io.stderr.write(env.c.yellow(`dsh: warning: ${escapeControl(m)}`) + '\n'),
    });
    const failed = run.sessions.filter((s) => s.error);
    for (const s of failed) io.stderr.write(`dsh: ${escapeControl(s.path)}: ${s.error!.class}: ${escapeControl(s.error!.message)} (not exported)\n`);
    const exported = run.sessions.length - failed.length;
    const summary: Record<string, unknown> = { sessions: exported, failed: failed.length, spans: run.spans.length };
    if (url) {
      const protocol = opts.protocol as OtlpProtocol;
      const groups = batches(run.spans, batchSize);
      let rejected = 0;
      for (const group of groups) {
        const r = await sendRequest(url, exportRequest(group, VERSION), {
          protocol,
          headers,
          onRetry: ({ attempt, delayMs, reason }) => io.stderr.write(`dsh: OTLP endpoint: attempt ${attempt} failed (${escapeControl(reason)}); retrying in ${delayMs} ms\n`),
        }).catch((error: unknown) => {
          if (error instanceof OtlpSendError) throw new UsageError(error.message, 'io');
          throw error;
        });
        rejected += r.partialRejected ?? 0;
      }
      if (rejected > 0) io.stderr.write(env.c.yellow(`dsh: warning: the endpoint rejected ${rejected} span(s) (partial success)`) + '\n');
      Object.assign(summary, { endpoint: url.href, protocol, requests: groups.length, rejectedSpans: rejected });
      if (opts.json) await writeOut(io.stdout, toJson(summary) + '\n');
      else await writeOut(io.stdout, `sent ${run.spans.length} span(s) of ${exported} session(s) in ${groups.length} request(s) to ${url.href} (${protocol})\n`);
    } else {
      if (out) {
        writeNewFile(out, withNewline(exportRequestText(run.spans, VERSION)), Boolean(opts.force));
        if (opts.json) await writeOut(io.stdout, toJson({ ...summary, output: out.abs }) + '\n');
        else io.stderr.write(`wrote ${escapeControl(out.abs)}: ${run.spans.length} span(s) of ${exported} session(s)\n`);
      } else {
        for (const piece of exportRequestText(run.spans, VERSION)) await writeOut(io.stdout, piece);
        await writeOut(io.stdout, '\n');
      }
    }
    return failed.length > 0 ? EXIT.failed : EXIT.ok;
  } finally {
    if (out) abandonNewFile(out);
  }
}

function* withNewline(pieces: Iterable<string>): Generator<string> {
  yield* pieces;
  yield '\n';
}
