/** The keys views use for steps and dispatches (one spelling for every map, lookup and message). */

/** The `turn/step` key every view uses for a step. */
export function stepKey(turn: unknown, step: unknown): string {
  return `${turn}/${step}`;
}

/** `turn/step#attempt`, or `turn/step` when the attempt is unknown (never `#null`). */
export function attemptKey(turn: unknown, step: unknown, attempt: number | null | undefined): string {
  return attempt === null || attempt === undefined ? stepKey(turn, step) : `${stepKey(turn, step)}#${attempt}`;
}

/** The `turn/step#attempt` key of one dispatch (attempt counted from 0 within the step). */
export function dispatchKey(turn: unknown, step: unknown, attemptInStep: number): string {
  return attemptKey(turn, step, attemptInStep);
}

/**
 * Where a record sits, for messages: `T/S#A`, `T/S` without an attempt, `turn T` without a step,
 * '' without a turn. Unknown parts are left out, never printed as `null`.
 */
export function placeText(turn: number | null | undefined, step: number | null | undefined, attempt?: number | null): string {
  if (turn === null || turn === undefined) return '';
  if (step === null || step === undefined) return `turn ${turn}`;
  return attemptKey(turn, step, attempt);
}
