import v8 from 'node:v8';
import vm from 'node:vm';

let collect: (() => void) | null | undefined;

/**
 * Full garbage collections, so that a huge buffer just let go (the smaller one a growing record
 * was copied out of) is freed now rather than when V8 decides: otherwise every size the record
 * went through is held at once. The collector is reached through V8's `--expose-gc` flag, set
 * for a fresh context; where that is not possible this does nothing.
 */
export function releaseMemory(): void {
  if (collect === undefined) {
    try {
      v8.setFlagsFromString('--expose-gc');
      const gc = vm.runInNewContext('gc') as unknown;
      collect = typeof gc === 'function' ? (gc as () => void) : null;
    } catch {
      collect = null;
    }
  }
  // Twice: the first collection finds the buffer unreachable, the second frees its memory.
  collect?.();
  collect?.();
}
