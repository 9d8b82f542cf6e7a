/**
 * Writers of new files (`dsh/export`): DSH's raw ZIP export, OpenTelemetry (OTLP) traces to a file or a collector, the one write-safety check for new output files, and an offline Host fork (`forkSession`: the child session written into another root and read back).
 *
 * A public entry point: the CLI (src/cli) imports the library only through
 * the entry points in src/api and src/index.ts, so whatever it uses is public
 * API, typed and in the API reference (docs/api).
 *
 * @packageDocumentation
 */
export { exportSession } from '../export/export.js';
export type { ExportManifest } from '../export/export.js';
export { exportFileName } from '../export/names.js';
export { abandonNewFile, outputRefusal, prepareNewFile, writeNewFile, writeNewFileAsync } from '../core/publish.js';
export type { OutputInput, OutputRefusalOptions } from '../core/publish.js';
export type { NewFile } from '../core/publish.js';
export { otlpSpans, otlpTargets } from '../export/otlp-run.js';
export { OtlpSendError, sendRequest, tracesUrl } from '../export/otlp-send.js';
export type { OtlpProtocol } from '../export/otlp-send.js';
export { batches, exportRequest, exportRequestText } from '../export/otlp.js';
export { forkSession } from '../export/fork.js';
export type { ForkOptions, ForkOutcome, ForkSource } from '../export/fork.js';
