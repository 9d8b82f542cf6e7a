import type { ChalkInstance } from 'chalk';
import { escapeControl, preview } from '../io.js';
import type { SurfaceView } from '../../api/views.js';
import { errorDocument, toJson, type BlockView, type KindView, type MessageView } from '../../api/log.js';

function iso(ms: number): string {
  return Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms);
}

/** `--json` failure document shared by the query commands: DSH's inspection error. */
export function failureJson(error: Parameters<typeof errorDocument>[0]): string {
  return toJson(errorDocument(error)) + '\n';
}

/** Human failure line (stderr). */
export function renderFailure(error: { class: string; message: string; cause?: { message: string } | undefined; note?: string | undefined }, label = ''): string {
  let out = `dsh: ${label}${escapeControl(error.class)}: ${escapeControl(error.message)}\n`;
  if (error.cause) out += `dsh: ${label}  cause: ${escapeControl(error.cause.message)}\n`;
  if (error.note !== undefined) out += `dsh: ${label}note: ${escapeControl(error.note)}\n`;
  return out;
}

function blockLines(content: unknown, width: number, c: ChalkInstance): string[] {
  if (!Array.isArray(content)) return [c.dim(`(content is not a block list: ${preview(toJson(content) ?? '', width)})`)];
  if (content.length === 0) return [c.dim('(no content blocks)')];
  const out: string[] = [];
  for (const raw of content as unknown[]) {
    const b = (raw ?? {}) as NonNullable<BlockView>;
    switch (b.type) {
      case 'text':
        out.push(`${c.dim('text')}        ${preview(String(b.text ?? ''), width)}`);
        break;
      case 'reasoning':
        out.push(`${c.dim('reasoning')}   ${c.dim(preview(String(b.text ?? ''), width))}`);
        break;
      case 'tool-call':
        out.push(`${c.dim('tool-call')}   ${c.cyan(escapeControl(String(b.name)))} ${c.dim(escapeControl(String(b.id)))} ${preview(typeof b.arguments === 'string' ? b.arguments : toJson(b.arguments), width)}`);
        break;
      case 'tool-result': {
        const inner = Array.isArray(b.content)
          ? (b.content as BlockView[]).map((x) => (x?.type === 'text' ? String(x.text ?? '') : `[${String(x?.type)}]`)).join(' ')
          : String(b.content ?? '');
        out.push(`${c.dim('tool-result')} ${b.isError ? c.red('[error] ') : ''}${c.dim(escapeControl(String(b.toolCallId)))} ${preview(inner, width)}`);
        break;
      }
      case 'image':
        out.push(`${c.dim('image')}       ${escapeControl(String(b.attachment?.attachmentId ?? b.attachment?.id ?? toJson(b.attachment ?? null)))}`);
        break;
      default:
        out.push(`${c.dim(escapeControl(String(b.type)).padEnd(11))} ${preview(toJson(b), width)}`);
    }
  }
  return out;
}

function sourceText(src: KindView): string {
  if (!src || typeof src !== 'object') return '';
  if (src.kind === 'plugin') return `plugin:${src.plugin}${src.compactionId ? ` ${src.compactionId}` : ''}`;
  if (src.kind === 'model') return `${src.provider}/${src.model}`;
  if (src.kind === 'tool') return `tool ${src.callId}`;
  return String(src.kind);
}

/** The model's context, message by message. Pure: data in, text out. */
export function renderSurface(v: SurfaceView, c: ChalkInstance, width = 100): string {
  const out: string[] = [];
  const atText =
    v.at === null ? 'empty log' : v.at === v.lastSeq ? `as of seq ${v.at} (end of log)` : `as of seq ${v.at} (log continues to ${v.lastSeq})`;
  out.push(
    `${c.bold('surface')} ${c.cyan(escapeControl(v.sessionId))}  ${atText}: ${v.entries.length} nodes, ${v.messages.length} messages, ${v.surface.replacements.length} replacements`,
  );
  let n = 0;
  for (const e of v.entries) {
    const m = (e.message ?? null) as MessageView;
    const role = m ? String(m.role ?? '?') : '-';
    const origin = e.op === 'append' ? '' : c.yellow(` [replaces ${e.replaced.join(', ')}]`);
    const syn = e.synthetic ? c.magenta(' [synthetic closer]') : '';
    const src = m ? c.dim(escapeControl(sourceText(m.source))) : '';
    const idx = m ? `#${++n}` : '  ';
    out.push('');
    out.push(`${c.bold(idx.padEnd(4))} ${c.dim('seq')} ${String(e.seq).padStart(5)}  ${c.green(role.padEnd(9))} ${escapeControl(e.type)}${origin}${syn}  ${src}  ${c.dim(iso(e.time))}`);
    if (!m) {
      out.push(`      ${c.dim('(empty-content assistant message: contributes no model message)')}`);
      continue;
    }
    if (e.interrupted) out.push(`      ${c.yellow('(interrupted)')}`);
    for (const line of blockLines(m.content, width, c)) out.push(`      ${line}`);
  }
  return out.join('\n') + '\n';
}
