/** Public redaction API (used by `dsh redact`; intended for `dsh export --redact`). */
export { createRedactor, Redactor, RedactingText, redactArtifactText, redactionToken, hashTag, isProtectedKey } from './redactor.js';
export type { RedactOptions, RedactStats, ProtectedHit } from './redactor.js';
export { BUILTIN_DETECTORS, DETECTOR_NAMES, isSecretKeyName } from './detectors.js';
export { SplitSecretScanner } from './split.js';
export { redactTarget, splitSecretEdits, verify as verifyRedaction } from './artifact.js';
export type { RedactReport, RedactRunOptions, RedactVerify } from './artifact.js';
