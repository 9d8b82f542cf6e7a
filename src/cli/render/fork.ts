import type { ChalkInstance } from 'chalk';
import { escapeControl } from '../io.js';
import type { ForkPlan } from '../../api/views.js';
import { formatCount } from '../../api/log.js';

const n = formatCount;

/** What the child inherits (pure). */
export function renderFork(plan: ForkPlan, c: ChalkInstance, written: { path: string; dryRun: boolean } | null): string {
  const out: string[] = [];
  const label = (s: string) => c.bold(s.padEnd(11));
  out.push(`${label('source')}${c.cyan(escapeControl(plan.source.id))}  ${n(plan.source.events)} events${plan.source.cwd !== undefined ? `  cwd ${escapeControl(plan.source.cwd)}` : ''}`);
  const anchor = plan.atSeq === null ? 'no --at: the last completed turn' : plan.boundary.rule === 'anchored' ? `--at ${plan.atSeq}: first turn/end at or after it` : `--at ${plan.atSeq} is past the tail: the last completed turn`;
  out.push(`${label('boundary')}turn/end seq ${plan.boundary.boundarySeq} (${anchor})`);
  out.push(
    `${label('cut')}${plan.boundary.cut} events = seedLength${plan.trailingSeqs.length ? `; includes ${plan.trailingSeqs.length} trailing standalone event(s) seq ${plan.trailingSeqs[0]}..${plan.trailingSeqs[plan.trailingSeqs.length - 1]}` : ''}${plan.nextTurnStartSeq !== null ? `; stops before turn/start seq ${plan.nextTurnStartSeq}` : '; reaches the end of the log'}`,
  );
  out.push(`${label('excluded')}${n(plan.excludedEvents)} later source events never flow into the child`);
  const i = plan.inherits;
  out.push(`${label('inherits')}${i.turns} completed turn(s)${i.lastTurn ? `, last turn ${i.lastTurn.turn ?? '?'} ended ${escapeControl(i.lastTurn.reason)} at seq ${i.lastTurn.endSeq}` : ''}`);
  out.push(`${label('surface')}${n(i.surfaceNodes)} current nodes (${n(i.modelMessages)} model messages), ${i.replacements} replacement(s)`);
  if (i.title !== null) out.push(`${label('title')}${escapeControl(i.title)} ${c.dim('(inherited: the child shows the parent title until renamed)')}`);
  const types = Object.entries(i.countsByType).sort((a, b) => b[1] - a[1]);
  out.push(`${label('by type')}${types.slice(0, 10).map(([t, k]) => `${escapeControl(t)} ${n(k)}`).join(', ')}${types.length > 10 ? `, … ${types.length - 10} more` : ''}`);
  if (i.syntheticSeqs.length) out.push(c.yellow(`${label('note')}the seed includes ${i.syntheticSeqs.length} synthetic crash closer(s) (seq ${i.syntheticSeqs.join(', ')}): the Host forks the logical view, so the child stores them for real`));
  out.push(
    `${label('end-seed')}${plan.endSeedSeq === null ? 'none appended: the seed already ends with session/end-seed' : `session/end-seed {} appended at seq ${plan.endSeedSeq}`}`,
  );
  const h = plan.child;
  out.push(
    `${label('child')}${c.cyan(escapeControl(h.id))}  parentSession ${escapeControl(String(h.parentSession))}, seedLength ${h.seedLength}${h.cwd !== undefined ? `, cwd ${escapeControl(h.cwd)}` : ''}${h.agentPreset !== undefined ? `, agentPreset ${escapeControl(h.agentPreset)}` : ''}, createdAt ${new Date(h.createdAt).toISOString()}`,
  );
  if (written) out.push(`${label(written.dryRun ? 'would write' : 'wrote')}${escapeControl(written.path)}`);
  else out.push(c.dim('dry run: nothing written (add --out <root> to write the child session)'));
  return out.join('\n') + '\n';
}
