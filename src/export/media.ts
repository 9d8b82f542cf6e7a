import { createHash } from 'node:crypto';
import { lstatSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { toJson } from '../core/json.js';

/** An image reference as stored in a log (`ImageAttachmentRef`, fields dsh uses). */
export interface ImageRef {
  attachmentId: unknown;
  mediaType?: unknown;
  bytes?: unknown;
  [key: string]: unknown;
}

/** DSH's media-type → extension table. */
export const MEDIA_EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
};

export const ATTACHMENT_ID = /^sha256:([a-f0-9]{64})$/;

/**
 * Image references inside one content array, with DSH's traversal: a stack
 * (so order within an event is not source order), every `type: "image"` block
 * with an object `attachment`, descending into any array-valued `content`.
 */
function collectImageRefs(content: unknown, refs: Map<string, ImageRef>): void {
  if (!Array.isArray(content)) return;
  const pending: unknown[] = [...content];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value !== 'object' || value === null || Array.isArray(value)) continue;
    const block = value as { type?: unknown; attachment?: unknown; content?: unknown };
    if (block.type === 'image' && typeof block.attachment === 'object' && block.attachment !== null) {
      const ref = block.attachment as ImageRef;
      refs.set(String(ref.attachmentId), ref);
    }
    if (Array.isArray(block.content)) for (const item of block.content) pending.push(item);
  }
}

/** The carriers DSH scans: data.content, data.message.content, data.inserted[].content, a block-end chunk's block. */
export function collectEventImageRefs(event: unknown, refs: Map<string, ImageRef>): void {
  if (typeof event !== 'object' || event === null) return;
  const data = (event as { data?: unknown }).data;
  if (typeof data !== 'object' || data === null) return;
  const carrier = data as { content?: unknown; message?: unknown; inserted?: unknown; chunk?: unknown };
  collectImageRefs(carrier.content, refs);
  if (typeof carrier.message === 'object' && carrier.message !== null) {
    collectImageRefs((carrier.message as { content?: unknown }).content, refs);
  }
  if (Array.isArray(carrier.inserted)) {
    for (const message of carrier.inserted) {
      if (typeof message === 'object' && message !== null) collectImageRefs((message as { content?: unknown }).content, refs);
    }
  }
  const chunk = carrier.chunk as { type?: unknown; block?: unknown } | undefined;
  if (typeof chunk === 'object' && chunk !== null && chunk.type === 'block-end') collectImageRefs([chunk.block], refs);
}

const IMAGE_TOKEN = Buffer.from('"image"');
const UNICODE_ESCAPE = Buffer.from('\\u');

/**
 * Splits artifact text into lines as chunks arrive and collects every image
 * reference (unparsable lines skipped, as DSH does). Refs of one artifact are
 * keyed by attachment id: first sight fixes the position, the last one wins.
 */
export class MediaScanner {
  readonly refs = new Map<string, ImageRef>();
  private partial: Buffer[] = [];

  write(chunk: Buffer): void {
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      if (this.partial.length > 0) {
        this.partial.push(chunk.subarray(start, nl));
        this.line(Buffer.concat(this.partial));
        this.partial = [];
      } else this.line(chunk.subarray(start, nl));
      start = nl + 1;
    }
    if (start < chunk.length) this.partial.push(Buffer.from(chunk.subarray(start)));
  }

  end(): void {
    if (this.partial.length > 0) this.line(Buffer.concat(this.partial));
    this.partial = [];
  }

  private line(bytes: Buffer): void {
    if (bytes.length === 0) return;
    // Exact prefilter: an image block needs the string "image", which JSON can
    // only spell literally or through a \u escape. Other lines cannot carry one.
    if (bytes.indexOf(IMAGE_TOKEN) === -1 && bytes.indexOf(UNICODE_ESCAPE) === -1) return;
    let event: unknown;
    try {
      event = JSON.parse(bytes.toString('utf8'));
    } catch {
      return;
    }
    collectEventImageRefs(event, this.refs);
  }
}

/**
 * The attachment store root (`…/attachments/v1`, which holds `objects/`).
 * `--attachments DIR` may name that directory, `…/attachments`, or a DSH home.
 * By default: the `attachments/v1` beside the session root when the root is a
 * DSH home's `sessions`, else `$DSH_HOME/attachments/v1`, else `~/.dsh/attachments/v1`.
 */
export function attachmentStore(explicit: string | undefined, sessionRoot: string | undefined, env: NodeJS.ProcessEnv): string {
  const isDir = (p: string) => {
    try {
      return lstatSync(p).isDirectory();
    } catch {
      return false;
    }
  };
  if (explicit !== undefined) {
    const abs = path.resolve(explicit);
    for (const candidate of [abs, path.join(abs, 'v1'), path.join(abs, 'attachments', 'v1')]) {
      if (isDir(path.join(candidate, 'objects'))) return candidate;
    }
    return abs;
  }
  if (sessionRoot !== undefined) {
    const beside = path.join(path.dirname(path.resolve(sessionRoot)), 'attachments', 'v1');
    if (isDir(beside)) return beside;
  }
  const home = env['DSH_HOME'];
  return path.join(home && home.length > 0 ? home : path.join(os.homedir(), '.dsh'), 'attachments', 'v1');
}

export type MediaRead =
  | { ok: true; name: string; data: Buffer; path: string }
  | { ok: false; warning: string };

/**
 * Read one referenced image from the store, verified the way DSH's `readImage`
 * does as far as an offline tool can: valid id, known media type, a regular
 * file (never a link), sha256 = id, byte count = `ref.bytes` when present.
 */
export function readMedia(store: string, id: string, ref: ImageRef, referencedBy: string): MediaRead {
  const label = `attachment ${toJson(id)} referenced by session ${toJson(referencedBy)}`;
  const m = ATTACHMENT_ID.exec(id);
  if (!m) return { ok: false, warning: `${label}: invalid attachment id (DSH: "Attachment reference is invalid."); media entry skipped` };
  const hex = m[1]!;
  const ext = typeof ref.mediaType === 'string' ? MEDIA_EXTENSIONS[ref.mediaType] : undefined;
  if (ext === undefined) {
    return { ok: false, warning: `${label}: unsupported media type ${toJson(ref.mediaType)}; media entry skipped` };
  }
  const file = path.join(store, 'objects', hex.slice(0, 2), hex);
  let st;
  try {
    st = lstatSync(file);
  } catch {
    return { ok: false, warning: `${label} is missing from the attachment store (${file}); media entry skipped` };
  }
  if (!st.isFile()) {
    return { ok: false, warning: `${label}: ${file} is not a regular file (links are never followed); media entry skipped` };
  }
  let data: Buffer;
  try {
    data = readFileSync(file);
  } catch (error) {
    return { ok: false, warning: `${label}: cannot read ${file}: ${(error as Error).message}; media entry skipped` };
  }
  if (createHash('sha256').update(data).digest('hex') !== hex) {
    return { ok: false, warning: `${label}: ${file} failed integrity verification (sha256 differs); media entry skipped` };
  }
  if (typeof ref.bytes === 'number' && ref.bytes !== data.length) {
    return { ok: false, warning: `${label}: ${file} has ${data.length} bytes but the reference says ${ref.bytes}; media entry skipped` };
  }
  return { ok: true, name: `media/${id}.${ext}`, data, path: file };
}
