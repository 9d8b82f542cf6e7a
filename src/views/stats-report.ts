/**
 * `dsh stats` of one session as one document (what `--json` prints and `Session.stats()` returns):
 * DSH's token and timing folds, and the usage ledger across the session's lineage in its root (owned,
 * inherited, unattributed, rolled up), priced with a price table.
 */
import path from 'node:path';
import type { SessionInspection } from '../log/session.js';
import type { ResolvedTarget } from '../log/target.js';
import type { FrameDecoder } from '../physical/decoders.js';
import { buildLedger, descendantRows, filterExplain, lineageIds, readRootUsage, readSessionUsage, type ExplainRow, type LedgerSession, type SessionInput } from './ledger.js';
import type { PriceTable } from './prices.js';
import { STATS_EXPLAIN, type StatsView } from './stats.js';

/** One session's ledger figures as the documents show them (`single`: its per-model and per-turn tables too). */
export function ledgerJson(row: LedgerSession, single: boolean, descendantsRead = true): Record<string, unknown> {
  const { rolledUp: _r, tree: _t, ...cost } = row.cost;
  return {
    owned: row.owned,
    inherited: row.inherited,
    unattributed: row.unattributed,
    naive: row.naive,
    rolledUp: descendantsRead ? row.rolledUp : null,
    tree: descendantsRead ? row.tree : null,
    seed: row.seed ? { verified: row.seed.verified, firstDifferingSeq: row.seed.firstDifferingSeq, parentMissing: row.seed.parentMissing } : null,
    cost: descendantsRead ? row.cost : { ...cost, rolledUp: null, tree: null },
    ...(single ? { ledgerByModel: row.byModel, ledgerByTurn: row.byTurn } : {}),
  };
}

export interface StatsReportOptions {
  decoder?: FrameDecoder;
  prices: PriceTable;
  /** Currency of the cost figures (upper case). */
  currency: string;
  /** The session with all its descendants (forks and subagents) rolled up. */
  tree?: boolean;
  /** The counting rules and, for every usage sample and summary call, whether and where it was counted. */
  explain?: boolean;
  /** With `explain`: only the rows behind one figure. */
  figure?: string;
}

/** What `dsh stats --json` prints for one session: DSH's folds, then the ledger's figures and costs. */
export type StatsDocument = StatsView & { currency: string; prices: string } & Record<string, unknown>;

/** The stats of one session: the document `--json` prints, and what the text view draws from. */
export type StatsReport =
  | {
      ok: true;
      /** What `dsh stats --json` prints. */
      document: StatsDocument;
      view: StatsView;
      ledger: LedgerSession;
      /** With `tree`: the descendants' ledger rows. */
      descendants: LedgerSession[];
      explainRows: ExplainRow[];
      warnings: readonly string[];
    }
  | { ok: false; inspection: SessionInspection };

/**
 * The stats of the session at `t`: in a root, its lineage (ancestors own the seed, descendants roll
 * up) read from the root; else the log alone. A log DSH refuses gives its inspection back.
 */
export async function sessionStatsReport(t: ResolvedTarget, options: StatsReportOptions): Promise<StatsReport> {
  const { decoder, prices, currency } = options;
  let inputs: SessionInput[] | undefined;
  let mine: { r: SessionInspection; view?: StatsView } | undefined;
  if (t.root !== undefined && t.path !== '-') {
    // --tree needs every header (to find descendants); otherwise only the ancestors are read.
    const read = await readRootUsage(
      t.root,
      options.tree
        ? {
            ...(decoder ? { decoder } : {}),
            only: (headers, byPath) => {
              const h = byPath.get(path.resolve(t.path));
              return h ? lineageIds(headers, h.id) : new Set<string>();
            },
          }
        : { ...(decoder ? { decoder } : {}), ancestorsOf: t.path },
    );
    const at = read.reads.findIndex((x) => path.resolve(x.path) === path.resolve(t.path));
    if (at >= 0) {
      mine = read.reads[at]!;
      inputs = read.inputs;
    }
  }
  if (!mine) {
    const got = await readSessionUsage(t, decoder ? { decoder } : {});
    mine = got;
    if (got.view && got.r.meta) inputs = [{ id: got.r.meta.id, path: t.path, header: got.r.meta, view: got.view, records: got.records!, prefix: got.prefix! }];
  }
  const { r, view } = mine;
  if (!view || !r.meta || !inputs) return { ok: false, inspection: r };
  const ledger = buildLedger(inputs, { prices, currency });
  const row = ledger.sessions.find((s) => path.resolve(s.path) === path.resolve(t.path)) as LedgerSession;
  const tree = options.tree ? descendantRows(ledger, row.sessionId) : [];
  const explainRows = options.explain ? filterExplain(row.explain, options.figure) : [];
  const document: StatsDocument = {
    ...view,
    currency,
    prices: prices.file,
    ...ledgerJson(row, true, options.tree === true),
    ...(options.tree
      ? { descendants: tree.map((s) => ({ sessionId: s.sessionId, kind: s.kind, parentSession: s.parentSession, ...(s.error ? { error: s.error } : {}), owned: s.owned, unattributed: s.unattributed, cost: { owned: s.cost.owned } })) }
      : {}),
    ...(options.explain ? { explain: STATS_EXPLAIN, explainRows } : {}),
  };
  return { ok: true, document, view, ledger: row, descendants: tree, explainRows, warnings: r.warnings };
}
