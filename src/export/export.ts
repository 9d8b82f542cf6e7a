import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { readArtifact } from '../log/read.js';
import { LogError, UsageError } from '../log/errors.js';
import type { ResolvedTarget } from '../log/target.js';
import type { Encoding, SessionHeader } from '../log/types.js';
import { FileSource, type ByteSource } from '../physical/source.js';
import { createDecoder, type FrameDecoder } from '../physical/decoders.js';
import { assertAcyclicAncestry, descendantsOf, indexRoot, type IndexedSession } from './descendants.js';
import { attachmentStore, MediaScanner, readMedia, type ImageRef } from './media.js';
import { safeSegment } from './names.js';
import { Spool } from './spool.js';
import { abandonNewFile, outputRefusal, prepareNewFile, publishNewFile } from '../core/publish.js';
import { createRedactor, RedactingText, type RedactOptions, type RedactStats } from '../views/redactor.js';
import { splitSecretEdits } from '../redact/artifact.js';
import { DETERMINISTIC_DATE, ZipWriter, type ZipProgress } from './zip-writer.js';
import { toJson } from '../core/json.js';

export interface ExportOptions {
  /** Where to write the archive (a temporary sibling is renamed onto it at the end). */
  output: string;
  /** Include every `parentSession` descendant under `subagents/` (default true). */
  descendants?: boolean;
  /** Copy referenced images to `media/` (default true). */
  media?: boolean;
  /** Attachment store (`…/attachments/v1`, `…/attachments` or a DSH home). */
  attachments?: string;
  /** Also store the original artifact files under `raw/`. */
  rawArtifacts?: boolean;
  /** Fixed entry times (1980-01-01 00:00 UTC) so equal inputs give byte-identical archives. */
  deterministic?: boolean;
  /** Deflate level 0-9 (default 6, DSH's default). */
  level?: number;
  /** Replace an existing output file. */
  force?: boolean;
  /** Redact secrets in every session.jsonl entry (event text only; see `dsh redact`). */
  redact?: RedactOptions;
  /** Called once per session with what redaction replaced. */
  onRedaction?: (sessionId: string, stats: RedactStats) => void;
  env?: NodeJS.ProcessEnv;
  decoder?: FrameDecoder;
  /** Called for each warning as it happens (the manifest lists them too). */
  onWarning?: (message: string) => void;
  onProgress?: (progress: ZipProgress) => void;
  /** Remove the temporary file and re-raise on SIGINT/SIGTERM (CLI use). */
  handleSignals?: boolean;
}

export interface ManifestEntry {
  name: string;
  /** Uncompressed bytes. */
  bytes: number;
  sha256: string;
  /** Where the bytes came from: an artifact path (its artifact view), an attachment object, or `raw:` + artifact path. */
  source: string;
  /** Session id, for session and raw entries. */
  session?: string;
}

export interface ExportManifest {
  output: string;
  archive: { bytes: number; sha256: string };
  root: { id: string; path: string };
  /** Descendants in archive order, with their parent (lineage is rebuilt from headers, not folder names). */
  descendants: { id: string; parentSession: string; entry: string }[];
  entries: ManifestEntry[];
  warnings: string[];
}

interface ArtifactRead {
  spool: Spool;
  meta: SessionHeader;
  refs: Map<string, ImageRef>;
  encoding: Encoding;
  /** Source size at read time (what `raw/` copies). */
  size: number;
  /** What redaction replaced, when redacting. */
  redaction?: RedactStats;
}

async function readView(
  source: ByteSource,
  opts: { rawPath: string; expectedId?: string; decoder: FrameDecoder; media: boolean; redact?: RedactOptions },
): Promise<ArtifactRead> {
  const spool = new Spool();
  const scanner = opts.media ? new MediaScanner() : undefined;
  let rt: RedactingText | undefined;
  if (opts.redact) {
    const redactor = createRedactor(opts.redact);
    // One more read finds secrets split across streamed chunks.
    rt = new RedactingText(redactor, await splitSecretEdits(source, redactor, opts.decoder));
  }
  const put = (chunk: Buffer) => {
    if (chunk.length === 0) return;
    spool.write(chunk);
    scanner?.write(chunk);
  };
  try {
    const outcome = await readArtifact(source, {
      artifactOnly: true,
      rawPath: opts.rawPath,
      ...(opts.expectedId !== undefined ? { expectedId: opts.expectedId } : {}),
      decoder: opts.decoder,
      onArtifact: (chunk) => put(rt ? rt.write(chunk) : chunk),
    });
    if (outcome.artifact.error) throw outcome.artifact.error;
    if (outcome.error && !outcome.artifact.meta) throw outcome.error;
    if (rt) put(rt.end());
    scanner?.end();
    return {
      spool,
      meta: outcome.artifact.meta!,
      refs: scanner?.refs ?? new Map(),
      encoding: outcome.encoding,
      size: source.size,
      ...(rt ? { redaction: rt.stats } : {}),
    };
  } catch (error) {
    spool.dispose();
    throw error;
  }
}

function* sourceRange(open: () => ByteSource, size: number, piece = 1 << 20): Generator<Buffer> {
  const source = open();
  try {
    if (source.size < size) throw new LogError(`${source.name} shrank while it was exported (${size} → ${source.size} bytes)`);
    for (let at = 0; at < size; at += piece) yield source.read(at, Math.min(size, at + piece));
  } finally {
    source.close();
  }
}

/**
 * Export one session (and its descendants and media) as a ZIP in DSH's
 * export layout. Every input is opened read-only; the archive appears at
 * `output` only when complete (temporary file + rename), and nothing is left
 * behind on failure.
 */
export async function exportSession(target: ResolvedTarget, options: ExportOptions): Promise<ExportManifest> {
  const level = options.level ?? 6;
  if (!Number.isInteger(level) || level < 0 || level > 9) throw new UsageError(`--level must be an integer 0-9, got ${String(options.level)}`);
  const wantDescendants = options.descendants ?? true;
  const wantMedia = options.media ?? true;
  const env = options.env ?? process.env;
  const decoder = options.decoder ?? createDecoder();
  const warnings: string[] = [];
  const warn = (message: string) => {
    warnings.push(message);
    options.onWarning?.(message);
  };

  const out = prepareNewFile(options.output, options.force ?? false, 0o666, [target]);
  let published = false;
  const spools = new Set<Spool>();
  let writer: ZipWriter | undefined;
  const cleanup = () => {
    writer?.abort();
    for (const s of spools) s.dispose();
    spools.clear();
    if (!published) abandonNewFile(out);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.kill(process.pid, signal);
  };
  if (options.handleSignals) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  }

  try {
    // --- read and validate the root first: a corrupt root leaves no output ---
    const rootSource = target.open();
    let root: ArtifactRead;
    try {
      root = await readView(rootSource, {
        rawPath: target.rawPath,
        ...(target.expectedId !== undefined ? { expectedId: target.expectedId } : {}),
        decoder,
        media: wantMedia,
        ...(options.redact ? { redact: options.redact } : {}),
      });
      if (root.redaction) options.onRedaction?.(root.meta.id, root.redaction);
    } finally {
      rootSource.close();
    }
    spools.add(root.spool);
    const rootId = root.meta.id;

    // --- lineage ---
    let descendants: IndexedSession[] = [];
    if (wantDescendants) {
      if (target.root === undefined) {
        warn(`${target.path} is not inside a session root (<root>/<project>/<session>/), so no descendants can be found; exporting it alone`);
      } else {
        const index = await indexRoot(target.root, decoder);
        for (const w of index.warnings) warn(w);
        assertAcyclicAncestry(index, rootId, root.meta.parentSession);
        descendants = descendantsOf(index, rootId);
      }
    }

    // --- never write over an input ---
    // (the descendants are inputs too, known only now: the same one rule, checked again with them)
    const why = outputRefusal(out.abs, [target, ...descendants]);
    if (why) throw new UsageError(why, 'io');

    const stream = createWriteStream(out.tmp, { fd: out.fd, autoClose: false });
    const streamDone = new Promise<void>((resolve, reject) => {
      stream.on('finish', resolve);
      stream.on('error', reject);
    });
    streamDone.catch(() => undefined);
    const zip = new ZipWriter(stream, {
      level,
      date: options.deterministic ? DETERMINISTIC_DATE : new Date(),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    writer = zip;
    const entries: ManifestEntry[] = [];
    const media = new Map<string, { ref: ImageRef; session: string }>();
    const remember = (refs: Map<string, ImageRef>, session: string) => {
      for (const [id, ref] of refs) media.set(id, { ref, session: media.get(id)?.session ?? session });
    };

    // --- session.jsonl ---
    remember(root.refs, rootId);
    const rootEntry = await zip.add('session.jsonl', root.spool.read());
    entries.push({ ...rootEntry, source: target.path, session: rootId });
    root.spool.dispose();
    spools.delete(root.spool);

    // --- subagents/<safe>/session.jsonl, DFS pre-order ---
    const usedFolders = new Map<string, string>();
    const descendantFacts: ExportManifest['descendants'] = [];
    const folderOf = new Map<string, string>();
    const reads: { node: IndexedSession; encoding: Encoding; size: number }[] = [];
    for (const node of descendants) {
      const source = new FileSource(node.path);
      let read: ArtifactRead;
      try {
        read = await readView(source, { rawPath: node.path, expectedId: node.id, decoder, media: wantMedia, ...(options.redact ? { redact: options.redact } : {}) });
        if (read.redaction) options.onRedaction?.(node.id, read.redaction);
      } catch (error) {
        const message = (error as Error).message;
        throw new LogError(`descendant session "${node.id}" (${node.path}) cannot be exported: ${message}`, { kind: 'corrupt' });
      } finally {
        source.close();
      }
      spools.add(read.spool);
      let folder = safeSegment(node.id);
      if (usedFolders.has(folder)) {
        let n = 2;
        while (usedFolders.has(`${folder}.${n}`)) n++;
        warn(`descendant ids ${toJson(usedFolders.get(folder))} and ${toJson(node.id)} sanitize to the same folder "subagents/${folder}"; the second is stored as "subagents/${folder}.${n}" (DSH itself would write a duplicate entry)`);
        folder = `${folder}.${n}`;
      }
      usedFolders.set(folder, node.id);
      folderOf.set(node.id, folder);
      remember(read.refs, node.id);
      const name = `subagents/${folder}/session.jsonl`;
      const facts = await zip.add(name, read.spool.read());
      entries.push({ ...facts, source: node.path, session: node.id });
      descendantFacts.push({ id: node.id, parentSession: node.header.parentSession!, entry: name });
      reads.push({ node, encoding: read.encoding, size: read.size });
      read.spool.dispose();
      spools.delete(read.spool);
    }

    // --- media/<attachmentId>.<ext> ---
    if (wantMedia && media.size > 0) {
      const store = attachmentStore(options.attachments, target.root, env);
      for (const [id, { ref, session }] of media) {
        const got = readMedia(store, id, ref, session);
        if (!got.ok) {
          warn(got.warning);
          continue;
        }
        const facts = await zip.add(got.name, got.data);
        entries.push({ ...facts, source: got.path });
      }
    }

    // --- raw/… (dsh extension): the artifact files as they were read ---
    if (options.rawArtifacts) {
      const rawName = (p: string) => (path.basename(p).endsWith('.zstd') ? 'session.jsonl.zstd' : 'session.jsonl');
      const rootName = target.path.includes('.zip:') ? (root.encoding === 'zstd' ? 'session.jsonl.zstd' : 'session.jsonl') : rawName(target.path);
      const facts = await zip.add(`raw/${rootName}`, sourceRange(() => target.open(), root.size), { store: root.encoding === 'zstd' });
      entries.push({ ...facts, source: `raw:${target.path}`, session: rootId });
      for (const r of reads) {
        const name = `raw/subagents/${folderOf.get(r.node.id)}/${rawName(r.node.path)}`;
        const f = await zip.add(name, sourceRange(() => new FileSource(r.node.path), r.size), { store: r.encoding === 'zstd' });
        entries.push({ ...f, source: `raw:${r.node.path}`, session: r.node.id });
      }
    }

    const archive = await zip.finish();
    stream.end();
    await streamDone;
    // --- publish: no-clobber link unless --force, else atomic rename ---
    publishNewFile(out, options.force ?? false);
    published = true;
    writer = undefined;
    return {
      output: out.abs,
      archive,
      root: { id: rootId, path: target.path },
      descendants: descendantFacts,
      entries,
      warnings,
    };
  } finally {
    cleanup();
    if (options.handleSignals) {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }
}
