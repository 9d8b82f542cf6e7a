/** The keys views use for steps and dispatches (one spelling for every map and lookup). */

/** The `turn/step` key every view uses for a step. */
export function stepKey(turn: unknown, step: unknown): string {
  return `${turn}/${step}`;
}

/** The `turn/step#attempt` key of one dispatch (attempt counted from 0 within the step). */
export function dispatchKey(turn: unknown, step: unknown, attemptInStep: number): string {
  return `${stepKey(turn, step)}#${attemptInStep}`;
}
