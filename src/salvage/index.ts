/** Public salvage API (used by `dsh salvage`; `salvageWouldRecoverMore` for the inspect hint). */
export { salvageSource } from './salvage.js';
export type { SalvageResult, SalvageSummary, SalvageGap, SalvageDefect, SalvageOptions, EventOrigin, DefectKind } from './salvage.js';
export { SalvageArtifactBuilder, SALVAGE_NOTE_TYPE, mapThroughRuns } from './artifact.js';
export type { SalvageArtifactPlan, SeqRun, DroppedEvent } from './artifact.js';
export { runSalvage } from './run.js';
export type { SalvageReport, SalvageRunOptions, SalvageArtifactReport } from './run.js';
export { salvageMayHelp, salvageWouldRecoverMore } from './hint.js';
export type { SalvageHint } from './hint.js';
export { walkSegments, findMagic, parseFrameAt } from './walker.js';
export { prepareOutputDir } from '../core/publish.js';
