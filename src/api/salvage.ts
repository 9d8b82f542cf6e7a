/**
 * Salvage (`dsh/salvage`): recovering what can be recovered from a damaged log into a new directory, and whether salvage would recover more than DSH's own reader.
 *
 * A public entry point: the CLI (src/cli) imports the library only through
 * the entry points in src/api and src/index.ts, so whatever it uses is public
 * API, typed and in the API reference (docs/api).
 *
 * @packageDocumentation
 */
export type { Inspection } from '../log/inspect.js';
export type { DroppedEvent } from '../salvage/artifact.js';
export { salvageMayHelp, salvageWouldRecoverMore } from '../salvage/hint.js';
export type { SalvageHint } from '../salvage/hint.js';
export { runSalvage } from '../salvage/run.js';
export type { SalvageArtifactReport, SalvageReport, SalvageRunOptions } from '../salvage/run.js';
export type { DefectKind, SalvageDefect, SalvageGap } from '../salvage/salvage.js';
