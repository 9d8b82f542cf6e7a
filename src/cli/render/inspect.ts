import type { ChalkInstance } from 'chalk';
import type { SessionInspection } from '../../api/log.js';
import { type SessionSummary, healthOf } from '../../api/views.js';
export type { Health } from '../../api/views.js';

export { healthOf };
import { escapeControl } from '../io.js';
import { formatCount } from '../../api/log.js';

const n = formatCount;

function iso(ms: unknown): string {
  return typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms);
}


/** The ten-second incident summary. Pure: data in, text out. */
export function renderInspect(r: SessionInspection, c: ChalkInstance, summary?: SessionSummary): string {
  const out: string[] = [];
  const label = (s: string) => c.bold(s.padEnd(9));
  const meta = r.meta ?? r.artifact.meta ?? null;
  const health = healthOf(r);
  const healthText =
    health === 'ok'
      ? c.green('ok')
      : health === 'needs-repair'
        ? c.yellow('needs repair (open turn closed by synthetic closers)')
        : health === 'torn'
          ? c.yellow('torn tail (recoverable; DSH load() would repair it)')
          : health === 'refused'
            ? c.red('REFUSED by DSH')
            : c.red('CORRUPT (DSH refuses to load it)');
  out.push(`${label('session')}${c.cyan(escapeControl(meta ? String(meta.id) : '(unknown)'))}`);
  out.push(`${label('file')}${escapeControl(r.target.path)}`);
  const frameText = r.frames ? `, ${n(r.frames.length)} complete frames${r.tornFrame ? ' + 1 torn' : ''}` : '';
  out.push(`${label('encoding')}${r.encoding === 'zstd' ? 'zstd' : 'raw JSONL'} (${n(r.bytes)} bytes${frameText})${r.decoder ? c.dim(` decoder ${r.decoder}`) : ''}`);
  if (meta) {
    out.push(`${label('created')}${iso(meta.createdAt)}${meta.cwd !== undefined ? `  cwd ${escapeControl(String(meta.cwd))}` : ''}`);
    const lineage: string[] = [];
    if (meta.parentSession !== undefined) lineage.push(`parent ${escapeControl(String(meta.parentSession))}`);
    if (meta.seedLength !== undefined) lineage.push(`seedLength ${meta.seedLength}`);
    if (meta.origin !== undefined) lineage.push(`origin ${meta.origin}`);
    lineage.push(`delegationDepth ${meta.delegationDepth ?? 0}`);
    if (meta.agentPreset !== undefined) lineage.push(`preset ${escapeControl(String(meta.agentPreset))}`);
    if (meta.version !== 0) lineage.push(c.red(`format v${meta.version}`));
    out.push(`${label('lineage')}${lineage.join(', ')}`);
  }
  out.push(`${label('health')}${healthText}`);
  if (r.error) {
    out.push('');
    out.push(`${label('error')}${c.red(r.error.class)}: ${escapeControl(r.error.message)}`);
    if (r.error.cause) out.push(`${label('cause')}${escapeControl(r.error.cause.message)}${r.error.cause.code ? ` (${r.error.cause.code})` : ''}`);
    const where: string[] = [];
    if (r.error.seq !== undefined) where.push(`seq ${r.error.seq}`);
    if (r.error.byteOffset !== undefined) where.push(`byte ${r.error.byteOffset}`);
    if (where.length) out.push(`${label('at')}${where.join(', ')}`);
    out.push(c.dim(`  stage: ${r.error.stage}. The artifact view (what an export holds) ${r.artifact.error ? 'is unreadable too' : 'is still readable: dsh inspect --view artifact'}.`));
  }
  if (summary && !r.error) {
    out.push('');
    out.push(`${label('events')}${n(r.storedEventCount)} stored${r.closers.length ? `, ${n(summary.eventCount)} logical (+${r.closers.length} synthetic closers)` : ''}${r.migratedEvents ? `, ${n(r.migratedEvents)} legacy shapes normalized` : ''}`);
    const turns = summary.turns;
    out.push(`${label('turns')}${n(turns.length)} turns, ${n(summary.steps)} steps${summary.firstTime !== null && summary.lastTime !== null ? `, ${iso(summary.firstTime)} .. ${iso(summary.lastTime)}` : ''}`);
    for (const t of turns.slice(-12)) {
      const reason = t.synthetic ? c.yellow(`${t.reason} (synthetic)`) : t.reason === 'completed' ? c.green(t.reason) : t.reason === 'open' ? c.yellow(t.reason) : c.red(t.reason);
      out.push(`  turn ${String(t.turn).padStart(3)}  seq ${String(t.startSeq).padStart(6)}..${t.endSeq === null ? '?' : t.endSeq}  ${String(t.steps).padStart(3)} step${t.steps === 1 ? ' ' : 's'}  ${escapeControl(reason)}`);
    }
    if (turns.length > 12) out.push(c.dim(`  (${turns.length - 12} earlier turns not shown)`));
    const counts = summary.countsByType;
    out.push(`${label('by type')}${counts.slice(0, 12).map(([t, k]) => `${escapeControl(t)} ${n(k)}`).join(', ')}${counts.length > 12 ? `, … ${counts.length - 12} more types` : ''}`);
    if (r.surface) {
      out.push(`${label('surface')}${n(r.surface.nodes.length)} current nodes, ${n(r.surface.replacements.length)} replacements (generation ${r.surface.replaceGeneration})`);
    }
  }
  if (r.torn) {
    out.push('');
    const rec = r.torn.recoveredEventSeqs;
    out.push(`${label('torn')}${c.yellow(`tail torn at byte ${n(r.torn.truncateTo)}`)}: ${n(r.torn.tornBytes)} bytes after the last complete ${r.encoding === 'zstd' ? 'frame' : 'record'}`);
    if (r.encoding === 'zstd') {
      out.push(`  recovered ${rec.length ? `${rec.length} events (seq ${rec[0]}..${rec[rec.length - 1]})` : 'no events'} from the torn frame${r.tornFrame ? ` (${n(r.tornFrame.recoveredPlaintextBytes)} plaintext bytes decodable)` : ''}`);
    }
    out.push(`  lost: ${n(r.torn.lostPlaintextBytes)} ${r.encoding === 'zstd' ? 'decoded bytes of an incomplete record' : 'bytes of a partial line'} (never committed)`);
  }
  if (r.defect) out.push(`${label('defect')}${escapeControl(r.defect.message)} — tolerated: no later turn/end, the prefix before it is kept`);
  if (r.closerReasons.length) {
    out.push('');
    out.push(`${label('closers')}DSH adds these in memory (inspect) and writes them on load():`);
    for (const reason of r.closerReasons) out.push(`  seq ${String(reason.seq).padStart(6)}  ${reason.type.padEnd(12)} ${escapeControl(reason.why)}`);
  }
  if (r.repairPlan) {
    const p = r.repairPlan;
    out.push('');
    if (!p.writes) out.push(`${label('load()')}would write nothing (the log is balanced and complete)`);
    else {
      const parts: string[] = [];
      if (p.truncateTo !== null) parts.push(`truncate to byte ${n(p.truncateTo)} (dropping ${n(p.truncatedBytes)} bytes)`);
      if (p.appendAs) {
        const what: string[] = [];
        if (p.reappendSeqs.length) what.push(`${p.reappendSeqs.length} recovered events`);
        if (p.closerSeqs.length) what.push(`${p.closerSeqs.length} closers`);
        parts.push(`append ${p.appendAs === 'zstd-frame' ? 'one checksummed zstd frame' : 'lines'} with ${what.join(' + ')} (${n(Buffer.byteLength(p.appendText))} bytes of JSONL)`);
      }
      out.push(`${label('load()')}${c.yellow('would')} ${parts.join(', then ')}. dsh never does this.`);
    }
  }
  for (const w of r.warnings) out.push(c.yellow(`warning: ${escapeControl(w)}`));
  return out.join('\n') + '\n';
}
