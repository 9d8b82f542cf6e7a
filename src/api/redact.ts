/**
 * Secrets (`dsh/redact`): redacting a session into a new artifact, and which secrets reached the model.
 *
 * A public entry point: the CLI (src/cli) imports the library only through
 * the entry points in src/api and src/index.ts, so whatever it uses is public
 * API, typed and in the API reference (docs/api).
 *
 * @packageDocumentation
 */
export { redactTarget } from '../redact/artifact.js';
export type { RedactReport, RedactRunOptions, RedactVerify } from '../redact/artifact.js';
export { DETECTOR_NAMES } from '../views/detectors.js';
export type { RedactStats } from '../redact/index.js';
export { secretsOfRoot, secretsOfTarget } from '../views/secrets.js';
export type { AnalyzeOptions, SecretInSession, SecretsReport } from '../views/secrets.js';
