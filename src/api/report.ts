/**
 * The HTML incident report (`dsh/report`): one session, or two compared.
 *
 * A public entry point: the CLI (src/cli) imports the library only through
 * the entry points in src/api and src/index.ts, so whatever it uses is public
 * API, typed and in the API reference (docs/api).
 *
 * @packageDocumentation
 */
export { buildReport } from '../report/build.js';
export type { BuildOptions, BuiltReport } from '../report/build.js';
export { streamReport } from '../report/stream.js';
export type { StreamOptions, StreamedReport } from '../report/stream.js';
export { compareReportHtml } from '../report/compare.js';
export type { ReportData, ReportDispatch } from '../report/data.js';
export { reportParts } from '../report/html.js';
export type { HealthStatus, PageCompaction, PageError, PageEventFacts, PageHeader, PageLineage, PageReplacement, PageStep, PageSurfaceEntry, PageTorn, PageTurn } from '../report/page/model.js';
