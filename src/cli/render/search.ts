import type { ChalkInstance } from 'chalk';
import { escapeControl } from '../io.js';
import type { SearchHit } from '../../api/views.js';

/** The snippet with its matches highlighted (colour: inverse; no colour: «…»), control characters escaped. */
export function highlightSnippet(hit: Pick<SearchHit, 'snippet' | 'highlights'>, c: ChalkInstance): string {
  const chars = Array.from(hit.snippet);
  const plain = c.level === 0;
  let out = '';
  let at = 0;
  for (const [s, e] of hit.highlights) {
    out += escapeControl(chars.slice(at, s).join(''));
    const m = escapeControl(chars.slice(s, e).join(''));
    out += plain ? `«${m}»` : c.inverse.bold(m);
    at = e;
  }
  return out + escapeControl(chars.slice(at).join(''));
}

/** One line per hit: session, seq, label, type, highlighted snippet (pure). */
export function renderSearch(hits: readonly SearchHit[], c: ChalkInstance, sessionsSearched: number): string {
  const out: string[] = [];
  for (const h of hits) {
    const label = h.label === 'current' ? c.green('current ') : h.label === 'shadowed' ? c.yellow('shadowed') : c.dim('log-only');
    out.push(`${c.cyan(escapeControl(h.sessionId))}  ${String(h.seq).padStart(6)}  ${label}  ${escapeControl(h.type).padEnd(18)} ${highlightSnippet(h, c)}${h.synthetic ? c.magenta(' [synthetic]') : ''}`);
  }
  const sessions = new Set(hits.map((h) => h.sessionId)).size;
  out.push(c.dim(`${hits.length} match${hits.length === 1 ? '' : 'es'} in ${sessions} of ${sessionsSearched} session${sessionsSearched === 1 ? '' : 's'}`));
  return out.join('\n') + '\n';
}
