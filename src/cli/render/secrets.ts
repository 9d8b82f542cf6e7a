import type { ChalkInstance } from 'chalk';
import { escapeControl } from '../io.js';
import type { SecretInSession, SecretsReport } from '../../api/redact.js';
import { formatCount } from '../../api/log.js';

const ranges = (rs: [number, number][]) => rs.map(([a, b]) => (a === b ? `#${a}` : `#${a}..#${b}`)).join(', ');

function eventsLine(s: SecretInSession, full: boolean): string {
  const shown = full ? s.events : s.events.slice(0, 8);
  const parts = shown.map((e) => `${e.seq} ${e.type} ${e.label}${e.place === 'message' || e.place === 'data' ? '' : ` (${e.place})`}`);
  if (shown.length < s.events.length) parts.push(`… ${s.events.length - shown.length} more (--full)`);
  return parts.join(', ');
}

/** `dsh secrets` text output (pure; never holds secret text, only the masked tokens). */
export function renderSecrets(r: SecretsReport, c: ChalkInstance, opts: { full?: boolean } = {}): string {
  const out: string[] = [];
  const sessions = r.sessions.filter((s) => !s.error);
  const dispatches = sessions.reduce((n, s) => n + s.dispatches, 0);
  out.push(
    `${c.bold('secrets')} ${r.secrets.length} distinct in ${r.sessions.length === 1 ? escapeControl(r.sessions[0]!.sessionId) : `${r.sessions.length} sessions`} (${formatCount(dispatches)} model dispatch(es) checked)`,
  );
  if (r.secrets.length === 0) {
    out.push('no secret found by the detectors (add --pattern REGEX or --paths to look for more)');
    return out.join('\n') + '\n';
  }
  const mark = { 'sent-current': c.red('SENT+CURRENT'), 'sent-removed': c.yellow('SENT'), 'current-unsent': c.yellow('CURRENT'), 'log-only': c.green('LOG-ONLY') } as const;
  for (const s of r.secrets) {
    out.push('');
    out.push(`${mark[s.exposure]} ${c.bold(s.token)} ${c.dim(s.detector)}`);
    out.push(`  verdict   ${escapeControl(s.verdict)}`);
    for (const x of s.sessions) {
      const head = r.sessions.length > 1 ? `  session   ${escapeControl(x.sessionId)}${x.relation !== 'own' ? ` (${x.relation})` : ''}\n  ` : '  ';
      const lines: string[] = [];
      lines.push(`events    ${eventsLine(x, Boolean(opts.full))}`);
      const d = x.dispatches;
      if (d.count > 0) {
        const models = d.models.map((m) => `${[m.provider, m.model].filter(Boolean).join('/') || 'unknown'} ×${m.count}`).join(', ');
        lines.push(`sent      ${d.count} dispatch(es) ${ranges(d.ranges)}: first ${d.first!.key} (chunk ${d.first!.firstChunkSeq}), last ${d.last!.key} (chunk ${d.last!.firstChunkSeq}); ${escapeControl(models)}`);
      } else lines.push('sent      no dispatch');
      for (const sc of x.summaryCalls) lines.push(`summary   compaction/summary seq ${sc.seq} (${escapeControl(String(sc.compactionId))}): its model call${sc.model ? ` to ${escapeControl([sc.provider, sc.model].filter(Boolean).join('/'))}` : ''} was given a node holding it`);
      for (const re of x.reembedded) lines.push(`re-embed  seq ${re.seq}: ${re.kind === 'compaction' ? `compaction ${escapeControl(String(re.compactionId))}'s checkpoint` : re.kind === 'prune' ? 'a prune rewrite' : 'a replacement'} still holds it`);
      if (x.removed) {
        const r0 = x.removed;
        lines.push(`removed   seq ${r0.seq} (${r0.kind}${r0.compactionId ? ` ${escapeControl(r0.compactionId)}` : ''}); ${r0.noLongerSentFrom ? `not sent from ${r0.noLongerSentFrom.key} (chunk ${r0.noLongerSentFrom.firstChunkSeq}) on` : 'no dispatch after it'}`);
      }
      if (x.finalSurface.length > 0 || x.inLatestHeader) {
        lines.push(`current   ${x.finalSurface.length > 0 ? `surface seq ${x.finalSurface.join(', ')}` : ''}${x.finalSurface.length > 0 && x.inLatestHeader ? ' and ' : ''}${x.inLatestHeader ? 'the latest request header' : ''}: a resumed session sends it again`);
      }
      out.push(head + lines.join('\n  '));
    }
  }
  return out.join('\n') + '\n';
}
