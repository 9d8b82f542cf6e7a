/**
 * Publish a report to a NEW file: checked before any log is read, written to
 * a temporary sibling, fsynced, then linked into place (no clobber) or, with
 * `force`, renamed over the old file. Nothing is left behind on failure.
 */
import { closeSync, fsyncSync, linkSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { UsageError } from '../log/errors.js';
import { prepareNewFile, type NewFile } from '../export/new-file.js';

export type PreparedOutput = NewFile;

/** Refuse existing files (unless forced) and directories; open the temporary sibling. */
export function prepareReportOutput(output: string, force: boolean, inputs: readonly string[] = []): PreparedOutput {
  return prepareNewFile(output, force, 0o644, inputs);
}

/** Remove the temporary file (after a failure). */
export function abandonReportOutput(out: PreparedOutput): void {
  try {
    closeSync(out.fd);
  } catch {
    /* already closed */
  }
  try {
    unlinkSync(out.tmp);
  } catch {
    /* gone */
  }
}

/** Write all parts, then publish. Returns the bytes written. */
export function publishReport(out: PreparedOutput, parts: Iterable<string>, force: boolean): number {
  let bytes = 0;
  try {
    for (const part of parts) {
      const buf = Buffer.from(part, 'utf8');
      let off = 0;
      while (off < buf.length) off += writeSync(out.fd, buf, off, buf.length - off);
      bytes += buf.length;
    }
    fsyncSync(out.fd);
    closeSync(out.fd);
  } catch (error) {
    abandonReportOutput(out);
    const e = error as NodeJS.ErrnoException;
    if (typeof e?.code === 'string') throw new UsageError(`cannot write ${out.abs}: ${e.message}`, 'io');
    throw error;
  }
  try {
    if (force) renameSync(out.tmp, out.abs);
    else {
      try {
        linkSync(out.tmp, out.abs);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') throw new UsageError(`refusing to overwrite ${out.abs}: it already exists (use --force to replace it)`, 'io');
        // Filesystems without hard links: the pre-check above is the no-clobber guard.
        renameSync(out.tmp, out.abs);
      }
      try {
        unlinkSync(out.tmp);
      } catch {
        /* renamed */
      }
    }
  } catch (error) {
    abandonReportOutput(out);
    throw error;
  }
  return bytes;
}
