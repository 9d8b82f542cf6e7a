import { promises as fsp, constants as fsc } from 'node:fs';
import { detectEncoding } from '../log/read.js';
import path from 'node:path';
import type { FrameDecoder } from '../physical/decoders.js';
import type { ByteSource } from '../physical/source.js';
import { ArtifactFileWriter } from '../log/writer.js';
import { sessionPath } from '../log/layout.js';
import { resolveTarget, type ResolvedTarget } from '../log/target.js';
import { inspectTarget } from '../log/session.js';
import type { SessionEvent, SessionHeader } from '../log/types.js';
import { salvageSource, type SalvageResult, type SalvageSummary } from './salvage.js';
import { SalvageArtifactBuilder, type SalvageArtifactPlan } from './artifact.js';
import { prepareOutputDir } from '../core/publish.js';
import { jsonText, toJson } from '../core/json.js';
import { textPieces } from '../core/text.js';

export interface SalvageRunOptions {
  /** Also write a loadable DSH artifact under `<out>/root/…`. */
  artifact?: boolean;
  decoder?: FrameDecoder;
}

export interface SalvageArtifactReport {
  path: string;
  root: string;
  encoding: 'zstd' | 'none';
  events: number;
  notes: number[];
  dropped: SalvageArtifactPlan['dropped'];
  unmappedRefs: SalvageArtifactPlan['unmappedRefs'];
  seqMapFile: string;
  /** `dsh inspect` over the written artifact. */
  verify: { ok: boolean; events?: number; closers?: number; error?: string };
}

/** What `dsh salvage` recovered and wrote. */
export interface SalvageReport extends SalvageSummary {
  output: { dir: string; events: string; gaps: string };
  artifact?: SalvageArtifactReport;
  /** Why no artifact was written although asked for. */
  artifactSkipped?: string;
  /** The header lost: the artifact got this minimal header (id from the session directory, no cwd). */
  headerSynthesized?: SessionHeader;
}

class NdjsonFile {
  private buf: string[] = [];
  private size = 0;
  private constructor(private readonly handle: fsp.FileHandle) {}
  static async create(file: string): Promise<NdjsonFile> {
    return new NdjsonFile(await fsp.open(file, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o600));
  }
  /** One value as a JSON line; a value holding a huge string is written in pieces, never serialized whole. */
  async value(value: unknown): Promise<void> {
    for (const piece of jsonText(value)) {
      if (piece.length >= 1 << 20) {
        await this.flush();
        for (const slice of textPieces(piece)) await this.handle.write(slice);
        continue;
      }
      this.buf.push(piece);
      this.size += piece.length;
    }
    this.buf.push('\n');
    this.size += 1;
    if (this.size >= 1 << 20) await this.flush();
  }
  async flush(): Promise<void> {
    if (this.buf.length === 0) return;
    const text = this.buf.join('');
    this.buf = [];
    this.size = 0;
    await this.handle.write(text);
  }
  async close(): Promise<void> {
    await this.flush();
    await this.handle.sync();
    await this.handle.close();
  }
}

function summaryOf(r: SalvageResult): SalvageSummary {
  const { events: _events, ...rest } = r;
  void _events;
  return rest;
}

/**
 * Salvage `target` into the NEW directory `out`: `events.ndjson` (kept events,
 * original seqs, one JSON per line), `gaps.json` (this report), and with
 * `artifact` a loadable DSH session under `out/root/<project>/<id>/` plus
 * `seq-map.json`. Streams: events are written as they are read.
 */
export async function runSalvage(target: ResolvedTarget, out: string, options: SalvageRunOptions = {}): Promise<SalvageReport> {
  const dir = prepareOutputDir(out, target);
  const eventsFile = path.join(dir, 'events.ndjson');
  const gapsFile = path.join(dir, 'gaps.json');
  const ndjson = await NdjsonFile.create(eventsFile);
  let builder: SalvageArtifactBuilder | undefined;
  let writer: ArtifactFileWriter | undefined;
  let artifactPath: string | undefined;
  let encoding: 'zstd' | 'none' = 'none';
  let skipped: string | undefined;
  let synthesized: SessionHeader | undefined;
  const root = path.join(dir, 'root');
  const source: ByteSource = target.open();
  let result: SalvageResult;
  let plan: SalvageArtifactPlan | undefined;
  try {
    encoding = detectEncoding(source).encoding;
    // Batches wait while a fork child's new seedLength (a header field) is unknown.
    const held: SessionEvent[][] = [];
    const drain = async () => {
      if (!builder || !builder.seedResolved || held.length === 0) return;
      // DSH materializes an artifact with its first batch: create lazily.
      if (!writer) {
        artifactPath = sessionPath(root, builder.plan.header, encoding);
        writer = await ArtifactFileWriter.create(artifactPath, { header: builder.plan.header, encoding });
      }
      for (const b of held.splice(0)) await writer.append(b);
    };
    const sink = async (batch: SessionEvent[]) => {
      held.push(batch);
      await drain();
    };
    result = await salvageSource(source, {
      ...(options.decoder ? { decoder: options.decoder } : {}),
      onHeader: (h) => {
        if (!options.artifact) return;
        if (!h) {
          // The header frame/line is lost: synthesize a minimal one from the
          // layout (session directory name = id); cwd is unknown (`_no-cwd`).
          const id = target.expectedId;
          if (id === undefined || id === '') {
            skipped = 'no session header survived and the input is not in DSH layout (no session id); events.ndjson still has every salvaged event';
            return;
          }
          synthesized = { version: 0, id, createdAt: 0, delegationDepth: 0 };
          h = synthesized;
        }
        try {
          sessionPath(root, h, encoding);
        } catch (error) {
          skipped = `the header cannot name a storage path: ${(error as Error).message}`;
          return;
        }
        builder = new SalvageArtifactBuilder(h, sink, target.path, encoding === 'none');
      },
      onGap: (gap) => builder?.gap(gap),
      onEvent: async (event, origin) => {
        if (synthesized && builder && builder.plan.events === 0 && Number.isSafeInteger(event.time) && event.time >= 0) {
          builder.plan.header.createdAt = event.time;
        }
        await ndjson.value(event);
        await builder?.event(event, origin);
      },
    });
    if (builder) {
      if (result.keptEvents === 0) skipped = 'no event was salvaged; DSH never materializes an artifact without events';
      else {
        plan = await builder.finish();
        await drain();
      }
    }
  } catch (error) {
    await writer?.abort();
    throw error;
  } finally {
    source.close();
    await ndjson.close();
  }
  const report: SalvageReport = { ...summaryOf(result), output: { dir, events: eventsFile, gaps: gapsFile } };
  if (skipped) report.artifactSkipped = skipped;
  if (synthesized && report.artifactSkipped === undefined) report.headerSynthesized = plan?.header ?? synthesized;
  if (writer && plan && artifactPath) {
    await writer.close();
    const seqMapFile = path.join(dir, 'seq-map.json');
    await fsp.writeFile(seqMapFile, toJson({ runs: plan.seqMap, notes: plan.notes.map((n) => n.seq), dropped: plan.dropped }, null, 2) + '\n', { flag: 'wx', mode: 0o600 });
    const verify = await verifyArtifact(artifactPath);
    report.artifact = {
      path: artifactPath,
      root,
      encoding,
      events: plan.events,
      notes: plan.notes.map((n) => n.seq),
      dropped: plan.dropped,
      unmappedRefs: plan.unmappedRefs,
      seqMapFile,
      verify,
    };
  }
  await fsp.writeFile(gapsFile, toJson(report, null, 2) + '\n', { flag: 'wx', mode: 0o600 });
  return report;
}

async function verifyArtifact(file: string): Promise<SalvageArtifactReport['verify']> {
  try {
    const r = await inspectTarget(resolveTarget(file), { collect: false });
    if (r.error) return { ok: false, error: r.error.message };
    return { ok: true, events: r.storedEventCount, closers: r.closers.length };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}
