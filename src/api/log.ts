/**
 * Reading DSH session logs: targets and roots, the artifact reader and its encodings, frames, DSH's inspection of a log, the persistent index cache, and the shared error, JSON and key helpers (`dsh/log`). The lowest public layer; everything else builds on it.
 *
 * A public entry point: the CLI (src/cli) imports the library only through
 * the entry points in src/api and src/index.ts, so whatever it uses is public
 * API, typed and in the API reference (docs/api).
 *
 * @packageDocumentation
 */
export { LogError, UsageError, errorDocument, failureObject } from '../core/errors.js';
export type { ErrorLocation, ErrorObject, SerializedError } from '../core/errors.js';
export { toJson, toJsonAround, jsonText } from '../core/json.js';
export { placeText, stepKey } from '../core/keys.js';
export { codePointLength, escapeControl, formatCount, preview, textPieces } from '../core/text.js';
export { VERSION } from '../core/version.js';
export type { CloserReason, CloserTracker } from '../log/closers.js';
export type { Compression } from '../log/host-open.js';
export { cacheConfig, clearEntries, listEntryFiles } from '../log/index/cache.js';
export type { CacheConfig, CacheEntryFile } from '../log/index/cache.js';
export { listingOfFile } from '../log/index/session-index.js';
export type { FoldBuilder, FoldResults, IndexListing, PersistentFold } from '../log/index/session-index.js';
export type { Bytes } from '../log/index/codec.js';
export { heldBytesBudget } from '../log/inspect.js';
export type { InspectOptions, TornSummary, View } from '../log/inspect.js';
export { encodeSegment } from '../log/layout.js';
export type { StoredAt } from '../log/layout.js';
export { SINGLE_PASS_BYTES, forEachLogicalEvent, logicalEventJson, streamValidated, streamPassBytes, targetBytes, type LineEmit, type RowMemberBytes } from '../log/logical-stream.js';
export { decimalBefore } from '../core/decimal.js';
export type { Emit, Flushable } from '../log/logical-stream.js';
export type { PipelineResume } from '../log/logical.js';
export type { DeferredRewrite } from '../log/surface.js';
export { PARALLEL_MIN_BYTES, defaultReadThreads, parallelStats, setReadJobs, setReadTuning } from '../log/parallel.js';
export type { ParallelStats, ReadTuning } from '../log/parallel.js';
export { defaultJobs } from '../log/pool.js';
export { detectEncoding, readArtifact } from '../log/read.js';
export type { ArtifactView, FrameReport, PlaintextSegment, ReadOptions, ReadOutcome, ReadProgress, ResumeAt, StoredRead, TornFrameReport, TornMarker } from '../log/read.js';
export { floorIndexBy } from '../log/reread.js';
export type { Rereader, SeqRange } from '../log/reread.js';
export type { EventSink, LineInfo, ScanPoint } from '../log/scanner.js';
export { inspectDocument, inspectTarget, inspectTargetIndexed } from '../log/session.js';
export type { IndexUse, IndexedInspection, SessionInspection, Speculation } from '../log/session.js';
export { deriveEventMessage } from '../log/surface.js';
export { defaultRoot, looksLikeRoot, readStdin, resolveTarget, scanRoot } from '../log/target.js';
export type { ResolveOptions, ResolvedTarget, RootScan, RootSession } from '../log/target.js';
export type { AttachmentView, BlockView, Encoding, KindView, KnownEvent, MessageView, PayloadViews, SessionEvent, SessionHeader, StreamChunkView, UnknownEvent, UsageView } from '../log/types.js';
export { isEventOf } from '../log/payloads.js';
export { createDecoder } from '../physical/decoders.js';
export type { DecoderName, FrameDecoder } from '../physical/decoders.js';
export type { EncoderName } from '../physical/encoder.js';
export type { ByteSource } from '../physical/source.js';
export { frameBlocks, scanFrames } from '../physical/zstd-frames.js';
export type { BlockInfo, BlockType, FrameInfo, FrameScan, TornFrameInfo } from '../physical/zstd-frames.js';
