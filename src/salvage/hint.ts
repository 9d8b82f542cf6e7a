import type { ByteSource } from '../physical/source.js';
import type { FrameDecoder } from '../physical/decoders.js';
import type { Inspection } from '../log/inspect.js';
import { salvageSource } from './salvage.js';
import { toJson } from '../core/json.js';

/**
 * "inspect suggests salvage": cheap pre-check on an inspection. True when DSH
 * stopped reading at a physical defect — a corrupt log (physical-stage error:
 * failing frame, bad magic, reserved bits, torn record inside complete
 * frames, fatal unparsable line / seq gap) or a tolerated raw defect that
 * dropped every later line. A clean log, a plain torn tail, a refusal
 * (foreign version, unknown type) or a restore/validation failure is false:
 * salvage cannot do better there.
 */
export function salvageMayHelp(inspection: Pick<Inspection, 'error' | 'defect'>): boolean {
  const e = inspection.error;
  if (e) return e.stage === 'physical' && e.kind === 'corrupt' && !/^empty or header-less/.test(e.message);
  return inspection.defect !== undefined;
}

export interface SalvageHint {
  /** Salvage would keep more events than DSH reads. */
  more: boolean;
  /** Events salvage keeps (original seqs, gaps allowed). */
  salvageable: number;
  /** Events DSH reads (0 when DSH refuses the log). */
  stored: number;
  gaps: number;
  /** The command to suggest. */
  suggestion: string;
}

/**
 * Run salvage in memory (nothing written) when `salvageMayHelp`; null when it
 * cannot help. The caller owns `source` (it is not closed here). Suggested
 * wiring in `dsh inspect` (human output only, after the health line):
 *   `hint: dsh salvage <target> -o <dir> would keep N events (DSH reads M)`.
 */
export async function salvageWouldRecoverMore(
  source: ByteSource,
  inspection: Pick<Inspection, 'error' | 'defect' | 'storedEventCount'>,
  options: { decoder?: FrameDecoder; target?: string } = {},
): Promise<SalvageHint | null> {
  if (!salvageMayHelp(inspection)) return null;
  const r = await salvageSource(source, options.decoder ? { decoder: options.decoder } : {});
  const stored = inspection.error ? 0 : inspection.storedEventCount;
  const target = options.target ?? source.name;
  return {
    more: r.keptEvents > stored,
    salvageable: r.keptEvents,
    stored,
    gaps: r.gaps.length,
    suggestion: `dsh salvage ${toJson(target)} -o <new dir> [--artifact] would keep ${r.keptEvents} event(s) across ${r.gaps.length} gap(s); DSH reads ${stored}`,
  };
}
