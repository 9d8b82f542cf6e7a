/**
 * The one catalogue of DSH rule codes. A detector attaches its code where it
 * detects the rule (`LogError.rule`, `SurfaceError.rule`, relational findings),
 * and `dsh check` reports that code as it is; `src/check/rules.ts` holds each
 * code's severity, name and hint. Codes are spelled `DSH-<family><n>[B]`.
 */
export const RULE_CODES = [
  // A. physical / JSONL
  'DSH-A1', 'DSH-A2', 'DSH-A3', 'DSH-A4', 'DSH-A5', 'DSH-A6', 'DSH-A7', 'DSH-A8', 'DSH-A9', 'DSH-A10', 'DSH-A11',
  // B. coordinator import
  'DSH-B1', 'DSH-B2', 'DSH-B3', 'DSH-B4', 'DSH-B5', 'DSH-B6', 'DSH-B7',
  // C. session restore, S. surface fold
  'DSH-C1', 'DSH-C2', 'DSH-C3', 'DSH-C4', 'DSH-C5', 'DSH-C6', 'DSH-C7',
  'DSH-S1', 'DSH-S2', 'DSH-S3', 'DSH-S4', 'DSH-S5', 'DSH-S6', 'DSH-S7', 'DSH-S8', 'DSH-S9', 'DSH-S10', 'DSH-S10B', 'DSH-S11', 'DSH-S12',
  // R. crash repair
  'DSH-R1', 'DSH-R2',
  // E. core invariants, F. plugin invariants (and dsh's compaction tool pairing, F5)
  'DSH-E1', 'DSH-E2', 'DSH-E3', 'DSH-E4', 'DSH-E5', 'DSH-E6', 'DSH-E7', 'DSH-E8',
  'DSH-F1', 'DSH-F2', 'DSH-F3', 'DSH-F4', 'DSH-F5',
  // L. lineage
  'DSH-L1',
  // K. secrets (dsh's own; only with `dsh check --secrets`)
  'DSH-K1', 'DSH-K2',
  // X. agent behaviour (dsh's own; only with `dsh check --behaviour` or a rule level set in the config)
  'DSH-X1', 'DSH-X2', 'DSH-X3', 'DSH-X4', 'DSH-X5', 'DSH-X6', 'DSH-X7', 'DSH-X8', 'DSH-X9', 'DSH-X10', 'DSH-X11', 'DSH-X12',
] as const;

export type RuleCode = (typeof RULE_CODES)[number];

const CODES: ReadonlySet<string> = new Set(RULE_CODES);

export function isRuleCode(code: string): code is RuleCode {
  return CODES.has(code);
}
