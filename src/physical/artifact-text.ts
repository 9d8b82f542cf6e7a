import { createHash, type Hash } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import { StringDecoder } from 'node:string_decoder';

/**
 * The artifact view's bytes: DSH decodes the artifact to a JS string (invalid
 * UTF-8 becomes U+FFFD) and exports it re-encoded as UTF-8. Valid input passes
 * through untouched; invalid input is normalized exactly as that round trip does.
 */
export class ArtifactText {
  private decoder: StringDecoder | undefined;
  private hash: Hash = createHash('sha256');
  bytes = 0;
  private newlines = 0;
  private lastByte = -1;
  private firstLineParts: Buffer[] = [];
  private firstLineDone = false;
  private firstLineBytes = 0;

  constructor(
    private readonly sink?: (chunk: Buffer) => void,
    private readonly firstLineCap = 64 << 20,
    /** Only track the first line (no hashing, no normalization): for reads that do not report the artifact view. */
    private readonly light = false,
  ) {}

  write(chunk: Buffer): void {
    if (chunk.length === 0) return;
    if (this.light) {
      this.trackFirstLine(chunk);
      return;
    }
    let out: Buffer;
    if (this.decoder === undefined && isUtf8(chunk)) {
      out = chunk;
    } else {
      this.decoder ??= new StringDecoder('utf8');
      out = Buffer.from(this.decoder.write(chunk), 'utf8');
    }
    this.emit(out);
  }

  end(): void {
    if (this.decoder) this.emit(Buffer.from(this.decoder.end(), 'utf8'));
  }

  /** Only the first line is tracked: no bytes, lines or digest (see `isLight`). */
  get isLight(): boolean {
    return this.light;
  }

  private emit(out: Buffer): void {
    if (out.length === 0) return;
    this.hash.update(out);
    this.bytes += out.length;
    this.trackFirstLine(out);
    for (let i = out.indexOf(0x0a); i !== -1; i = out.indexOf(0x0a, i + 1)) this.newlines += 1;
    this.lastByte = out[out.length - 1] as number;
    this.sink?.(out);
  }

  private trackFirstLine(out: Buffer): void {
    if (this.firstLineDone) return;
    const i = out.indexOf(0x0a);
    const take = i === -1 ? out : out.subarray(0, i);
    if (this.firstLineBytes + take.length <= this.firstLineCap) this.firstLineParts.push(Buffer.from(take));
    this.firstLineBytes += take.length;
    if (i !== -1) this.firstLineDone = true;
  }

  /** The text before the first LF (what DSH re-parses as the header). */
  firstLine(): string {
    return Buffer.concat(this.firstLineParts).toString('utf8');
  }

  get lines(): number {
    return this.newlines + (this.bytes > 0 && this.lastByte !== 0x0a ? 1 : 0);
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}
