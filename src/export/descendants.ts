import { realpathSync } from 'node:fs';
import path from 'node:path';
import { createDecoder, type FrameDecoder } from '../physical/decoders.js';
import { readHeaderCheap } from '../views/listing.js';
import { LogError } from '../log/errors.js';
import { scanRoot, type RootSession } from '../log/target.js';
import type { SessionHeader } from '../log/types.js';
import { toJson } from '../core/json.js';

/** One session of a root, with the header its listing shows. */
export interface IndexedSession {
  id: string;
  path: string;
  header: SessionHeader;
}

export interface RootIndex {
  root: string;
  byId: Map<string, IndexedSession>;
  /** parentSession → children (unsorted). */
  children: Map<string, IndexedSession[]>;
  /** Sessions left out of the index, with why (unreadable header, id mismatch, duplicates, links). */
  warnings: string[];
}

function within(root: string, file: string): boolean {
  const rel = path.relative(root, file);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

/**
 * Index every session of a root by `header.parentSession` (forks and subagents
 * alike), as session-query's listing does. Symbolic links are never followed
 * (scanRoot uses lstat), and every artifact must resolve inside the root.
 */
export async function indexRoot(root: string, decoder: FrameDecoder = createDecoder()): Promise<RootIndex> {
  const scan = scanRoot(root);
  const realRoot = realpathSync(scan.root);
  const byId = new Map<string, IndexedSession>();
  const children = new Map<string, IndexedSession[]>();
  const warnings = scan.problems.map((p) => `session root: ${p.message}`);
  for (const s of scan.sessions as RootSession[]) {
    let real: string;
    try {
      real = realpathSync(s.path);
    } catch {
      continue;
    }
    if (!within(realRoot, real)) {
      warnings.push(`skipping ${s.path}: it resolves outside the session root`);
      continue;
    }
    // The header as DSH's listing reads it (first line, or frame 0 only).
    const read = await readHeaderCheap(s.path, s.encoding, decoder);
    if (!read.header) {
      warnings.push(`skipping ${s.path}: no readable session header (${read.reason}; left out of lineage)`);
      continue;
    }
    const header = read.header;
    if (header.id !== s.id) {
      warnings.push(`skipping ${s.path}: header id ${toJson(header.id)} does not match its directory id ${toJson(s.id)}`);
      continue;
    }
    if (byId.has(s.id)) {
      warnings.push(`skipping ${s.path}: duplicate session id ${toJson(s.id)} (also at ${byId.get(s.id)!.path})`);
      continue;
    }
    const entry: IndexedSession = { id: s.id, path: s.path, header };
    byId.set(s.id, entry);
    if (header.parentSession !== undefined) {
      const list = children.get(header.parentSession) ?? [];
      list.push(entry);
      children.set(header.parentSession, list);
    }
  }
  return { root: scan.root, byId, children, warnings };
}

function siblingOrder(a: IndexedSession, b: IndexedSession): number {
  return a.header.createdAt - b.header.createdAt || a.id.localeCompare(b.id);
}

/**
 * Check the target's ancestry the way `traceSession` does: a cycle through the
 * target's parents is corruption (`session lineage contains a cycle at "<id>"`);
 * a parent missing from the root just ends the walk.
 */
export function assertAcyclicAncestry(index: RootIndex, targetId: string, parentOfTarget: string | undefined): void {
  const seen = new Set<string>([targetId]);
  let next = parentOfTarget;
  while (next !== undefined) {
    if (seen.has(next)) throw new LogError(`session lineage contains a cycle at "${next}"`, { kind: 'corrupt' });
    const node = index.byId.get(next);
    if (!node) return;
    seen.add(next);
    next = node.header.parentSession;
  }
}

/**
 * Every descendant of `targetId` in DFS pre-order (siblings by createdAt
 * ascending, then id.localeCompare), iterative, with a seen set seeded with
 * the target: exactly the order DSH's export writes `subagents/` entries in.
 */
export function descendantsOf(index: RootIndex, targetId: string): IndexedSession[] {
  const out: IndexedSession[] = [];
  const seen = new Set<string>([targetId]);
  const kids = (id: string) => [...(index.children.get(id) ?? [])].sort(siblingOrder);
  const stack: IndexedSession[] = kids(targetId).reverse();
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (seen.has(node.id)) continue;
    seen.add(node.id);
    out.push(node);
    const c = kids(node.id);
    for (let i = c.length - 1; i >= 0; i--) stack.push(c[i]!);
  }
  return out;
}
