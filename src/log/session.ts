import { inspectSource, type InspectOptions, type Inspection } from './inspect.js';
import { identityWarnings, type ResolvedTarget } from './target.js';

export interface SessionInspection extends Inspection {
  target: { path: string; root?: string; expectedId?: string };
  warnings: string[];
}

/** Open a resolved target read-only, inspect it, close it. */
export async function inspectTarget(target: ResolvedTarget, options: InspectOptions = {}): Promise<SessionInspection> {
  const source = target.open();
  try {
    const result = await inspectSource(source, {
      rawPath: target.rawPath,
      ...(target.expectedId !== undefined ? { expectedId: target.expectedId } : {}),
      ...options,
    });
    const warnings = [...target.layoutWarnings];
    if (result.meta) warnings.push(...identityWarnings(target, result.meta, result.encoding));
    if (result.encodingBy === 'content' && target.path.endsWith('.zstd')) {
      warnings.push('the artifact is named .zstd but holds plain JSONL; read as raw mode');
    }
    return {
      ...result,
      target: {
        path: target.path,
        ...(target.root !== undefined ? { root: target.root } : {}),
        ...(target.expectedId !== undefined ? { expectedId: target.expectedId } : {}),
      },
      warnings,
    };
  } finally {
    source.close();
  }
}
