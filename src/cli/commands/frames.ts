import { Command } from 'commander';
import type { Io } from '../io.js';
import { writeOut } from '../io.js';
import { action, addCommon, decoderFor, envFor, resolveCli, EXIT, type CommonOptions, addExamples } from '../shared.js';
import { scanFrames, frameBlocks, type FrameScan, detectEncoding, readArtifact, LogError, toJson } from '../../api/log.js';

interface FramesOptions extends CommonOptions {
  decode?: boolean;
}

export interface FrameRow {
  index: number;
  start: number;
  end: number;
  bytes: number;
  checksum: boolean;
  contentSize: number | null;
  blocks: number;
  plaintextBytes?: number;
  records?: number;
  plaintextSha256?: string;
  status: 'complete' | 'torn' | 'failed';
  error?: string;
}

export interface FramesReport {
  file: string;
  encoding: 'zstd' | 'none';
  bytes: number;
  frames: FrameRow[];
  torn: null | { start: number; bytes: number; stoppedIn: string; completeBlocks: number; cutBlock?: { type: string; size: number; present: number }; recoveredPlaintextBytes?: number; recoveredCompleteRecords?: number };
  error?: { class: string; message: string; byteOffset?: number };
}

export function registerFrames(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('frames')
    .description('physical listing of a zstd artifact: frame byte ranges, checksum flags, blocks, torn tail (forensics on damaged files)')
    .argument('<target>', 'session file, directory, id, or -')
    .option('--decode', 'also decode every frame (checksums verified): plaintext bytes, records, sha256');
  addCommon(cmd);
  addExamples(
    cmd,
    'dsh frames fixtures/incident/--home-dev-acme-api--/session-incident-1/session.jsonl.zstd',
    'dsh frames session-incident-1 --root fixtures/incident --decode --json',
  );
  cmd.action(
    action(io, setExit, async (target: string, opts: FramesOptions) => {
      const env = envFor(io, opts);
      const resolved = await resolveCli(target, opts);
      const source = resolved.open();
      const report: FramesReport = { file: resolved.path, encoding: 'zstd', bytes: source.size, frames: [], torn: null };
      try {
        const enc = detectEncoding(source);
        report.encoding = enc.encoding;
        if (enc.encoding === 'none') {
          const msg = 'raw-mode artifact (plain JSONL): there are no frames; use `dsh events` or `dsh inspect`';
          if (opts.json) await writeOut(io.stdout, toJson(report) + '\n');
          else await writeOut(io.stdout, `${msg}\n`);
          return EXIT.ok;
        }
        let scan: FrameScan | undefined;
        try {
          scan = scanFrames(source);
        } catch (error) {
          const e = error as LogError;
          report.error = { class: 'Error', message: e.message, ...(e.byteOffset !== undefined ? { byteOffset: e.byteOffset } : {}) };
        }
        if (scan) {
          report.frames = scan.frames.map((f) => ({
            index: f.index,
            start: f.start,
            end: f.end,
            bytes: f.end - f.start,
            checksum: f.checksumFlag,
            contentSize: f.contentSize,
            blocks: f.blocks,
            status: 'complete' as const,
          }));
          if (scan.torn) {
            const t = scan.torn;
            const tail = source.read(t.start, source.size);
            const fb = frameBlocks(tail);
            const cut = fb.blocks.find((b) => !b.complete);
            report.torn = { start: t.start, bytes: t.bytes, stoppedIn: t.stoppedIn, completeBlocks: t.completeBlocks, ...(cut ? { cutBlock: { type: cut.type, size: cut.size, present: cut.present } } : {}) };
          }
          if (opts.decode) {
            const outcome = await readArtifact(source, { frameDetail: true, artifactOnly: true, decoder: decoderFor(opts) });
            for (const fr of outcome.frames ?? []) {
              const row = report.frames[fr.index]!;
              if (fr.error) {
                row.status = 'failed';
                row.error = fr.error.message;
              } else if (fr.plaintextBytes !== undefined) {
                row.plaintextBytes = fr.plaintextBytes;
                row.records = fr.records as number;
                row.plaintextSha256 = fr.plaintextSha256 as string;
              }
            }
            if (report.torn && outcome.tornFrame) {
              report.torn.recoveredPlaintextBytes = outcome.tornFrame.recoveredPlaintextBytes;
              report.torn.recoveredCompleteRecords = outcome.tornFrame.recoveredCompleteRecords;
            }
          }
        }
      } finally {
        source.close();
      }
      const failed = report.error !== undefined || report.frames.some((f) => f.status === 'failed');
      if (opts.json) {
        await writeOut(io.stdout, toJson(report) + '\n');
        return failed ? EXIT.failed : EXIT.ok;
      }
      const lines: string[] = [];
      lines.push(env.c.bold(`${'frame'.padStart(7)} ${'start'.padStart(12)} ${'end'.padStart(12)} ${'bytes'.padStart(9)} blocks chk ${opts.decode ? 'plaintext  records ' : ''}status`));
      for (const f of report.frames) {
        const status = f.status === 'failed' ? env.c.red(`FAILED ${f.error ?? ''}`) : env.c.green('complete');
        lines.push(
          `${String(f.index).padStart(7)} ${String(f.start).padStart(12)} ${String(f.end).padStart(12)} ${String(f.bytes).padStart(9)} ${String(f.blocks).padStart(6)} ${f.checksum ? 'yes' : env.c.yellow('no ')} ${opts.decode ? `${String(f.plaintextBytes ?? '-').padStart(9)} ${String(f.records ?? '-').padStart(8)} ` : ''}${status}`,
        );
      }
      if (report.torn) {
        const t = report.torn;
        lines.push(
          env.c.yellow(
            `   torn ${String(t.start).padStart(12)} ${String(report.bytes).padStart(12)} ${String(t.bytes).padStart(9)} ${String(t.completeBlocks).padStart(6)}     EOF inside ${t.stoppedIn}${t.cutBlock ? ` (${t.cutBlock.type} block, ${t.cutBlock.present}/${t.cutBlock.type === 'rle' ? 1 : t.cutBlock.size} bytes present)` : ''}${t.recoveredPlaintextBytes !== undefined ? `; prefix decode recovers ${t.recoveredPlaintextBytes} bytes, ${t.recoveredCompleteRecords} complete records` : ''}`,
          ),
        );
      }
      if (report.error) lines.push(env.c.red(`error: ${report.error.message}`));
      lines.push(env.c.dim(`${report.frames.length} complete frames, ${report.bytes} bytes${report.torn ? ', torn final frame' : ''}${opts.decode ? '' : ' (structure only; --decode verifies checksums)'}`));
      await writeOut(io.stdout, lines.join('\n') + '\n');
      return failed ? EXIT.failed : EXIT.ok;
    }),
  );
}
