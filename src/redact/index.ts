/**
 * Redaction (used by `dsh redact`, `dsh export --redact`, `dsh dataset --redact`): the writer of a
 * redacted artifact lives here; the detectors and the text redactor it applies are read-only
 * analysis shared with `dsh secrets` and sit with the views (src/views/redactor.ts, detectors.ts,
 * secret-split.ts).
 */
export { createRedactor, Redactor, RedactingText, redactArtifactText, redactionToken, hashTag, isProtectedKey } from '../views/redactor.js';
export type { RedactOptions, RedactStats, ProtectedHit } from '../views/redactor.js';
export { BUILTIN_DETECTORS, DETECTOR_NAMES, isSecretKeyName } from '../views/detectors.js';
export { SplitSecretScanner } from '../views/secret-split.js';
export { redactTarget, splitSecretEdits, verify as verifyRedaction } from './artifact.js';
export type { RedactReport, RedactRunOptions, RedactVerify } from './artifact.js';
