/**
 * Session lineage: session-query's `traceSession` (query-export.md §3.1) over
 * the header records of one root. Ancestors nearest first; descendants a
 * forest (forks and subagents alike) with siblings by createdAt asc, then id.
 */
import type { FrameDecoder } from '../physical/decoders.js';
import type { SessionHeader } from '../log/types.js';
import { SessionQueryError } from './messages.js';
import { sessionRecords, sessionKind, type SessionRecord, type SessionKind, type ListingProblem } from './listing.js';

export interface LineageNode {
  session: SessionRecord;
  descendants: LineageNode[];
}

export type LineageTrace =
  | { target: SessionRecord; ancestors: SessionRecord[]; descendants: LineageNode[]; complete: true; root: SessionRecord }
  | { target: SessionRecord; ancestors: SessionRecord[]; descendants: LineageNode[]; complete: false; unresolvedParentId: string };

function clone(r: SessionRecord): SessionRecord {
  return { ...r, header: structuredClone(r.header) };
}

/** session-query `traceSession` over a listing. */
export function traceSession(records: readonly SessionRecord[], sessionId: string): LineageTrace {
  const byId = new Map(records.map((r) => [r.header.id, r]));
  const target = byId.get(sessionId);
  if (!target) throw new SessionQueryError(`session "${sessionId}" not found`, 'SESSION_QUERY_SESSION_NOT_FOUND');
  const ancestors: SessionRecord[] = [];
  const seen = new Set<string>([sessionId]);
  let unresolved: string | undefined;
  let parentId = target.header.parentSession;
  while (parentId !== undefined) {
    if (seen.has(parentId)) {
      throw new SessionQueryError(`session lineage contains a cycle at "${parentId}"`, 'SESSION_QUERY_INVALID_LINEAGE');
    }
    seen.add(parentId);
    const parent = byId.get(parentId);
    if (!parent) {
      unresolved = parentId;
      break;
    }
    ancestors.push(parent);
    parentId = parent.header.parentSession;
  }
  const children = new Map<string, SessionRecord[]>();
  for (const r of records) {
    const p = r.header.parentSession;
    if (p === undefined) continue;
    const list = children.get(p);
    if (list) list.push(r);
    else children.set(p, [r]);
  }
  for (const list of children.values()) {
    list.sort((a, b) => a.header.createdAt - b.header.createdAt || a.header.id.localeCompare(b.header.id));
  }
  // Iterative build: no recursion limit on deep chains.
  const descendants: LineageNode[] = [];
  const stack: { id: string; into: LineageNode[] }[] = [{ id: sessionId, into: descendants }];
  const visited = new Set<string>([sessionId]);
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const nodes: LineageNode[] = [];
    for (const child of children.get(frame.id) ?? []) {
      const node: LineageNode = { session: clone(child), descendants: [] };
      nodes.push(node);
      frame.into.push(node);
    }
    for (let i = nodes.length - 1; i >= 0; i--) {
      const node = nodes[i]!;
      const id = node.session.header.id;
      // Unreachable in DSH's model (one parent per node, target ancestry cycle-checked); guard anyway.
      if (visited.has(id)) continue;
      visited.add(id);
      stack.push({ id, into: node.descendants });
    }
  }
  const common = { target: clone(target), ancestors: ancestors.map(clone), descendants };
  if (unresolved !== undefined) return { ...common, complete: false, unresolvedParentId: unresolved };
  return { ...common, complete: true, root: clone(ancestors.at(-1) ?? target) };
}

export interface LineageView {
  root: string | null;
  trace: LineageTrace;
  problems: ListingProblem[];
}

/** Lineage of `sessionId` among the sessions of `root` (headers only; no log is fully read). */
export async function lineageInRoot(root: string, sessionId: string, decoder?: FrameDecoder): Promise<LineageView> {
  const listed = await sessionRecords(root, decoder);
  return { root: listed.root, trace: traceSession(listed.records, sessionId), problems: listed.problems };
}

/**
 * Lineage of the session whose header is `header`: among the sessions of `root` when there is one,
 * and always including the session itself (a copied-out file or stdin has its own record).
 * Throws session-query's SessionQueryError when the walk cannot be done.
 */
export async function lineageOf(header: SessionHeader, root: string | undefined, decoder?: FrameDecoder): Promise<{ trace: LineageTrace; problems: ListingProblem[] }> {
  let records: SessionRecord[] = [];
  let problems: ListingProblem[] = [];
  if (root !== undefined) {
    const listed = await sessionRecords(root, decoder);
    records = listed.records;
    problems = listed.problems;
  }
  if (!records.some((r) => r.header.id === header.id)) records = [...records, { header, live: false, persisted: true }];
  return { trace: traceSession(records, header.id), problems };
}

export function kindOf(r: SessionRecord): SessionKind {
  return sessionKind(r.header);
}
