/**
 * Pricing: a table of per-million-token prices (input cache hit, input cache
 * miss, output) by provider, model, currency and time window, shipped as
 * `data/prices.json` and replaceable with `--prices FILE`. Arithmetic is exact
 * (BigInt, 1e-18 currency units); an unknown model, provider, currency or a
 * time outside every window is unpriced, never zero.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bucketsOf, type Buckets } from './stats.js';
import type { DispatchEntry } from './requests.js';
import { UsageError } from '../core/errors.js';
import { toJson } from '../core/json.js';

export interface PriceEntry {
  provider: string;
  model: string;
  currency: string;
  /** ISO time the price took effect (inclusive); absent: always. */
  effectiveFrom?: string;
  /** ISO time the price stopped applying (exclusive); absent: still in effect. */
  effectiveUntil?: string;
  /** Decimal strings, currency per 1,000,000 tokens. */
  inputCacheHit: string;
  inputCacheMiss: string;
  output: string;
  source: string;
  retrieved: string;
  evidence?: string;
}

export interface PriceTable {
  /** Where the table came from (a path). */
  file: string;
  entries: PriceEntry[];
}

/** A price table that cannot be used (the CLI reports it as a usage/I-O error). */
export class PriceTableError extends UsageError {
  constructor(message: string) {
    super(message, 'io');
    this.name = 'PriceTableError';
  }
}

/** The table shipped with the package. */
export const DEFAULT_PRICES_FILE = fileURLToPath(new URL('../../data/prices.json', import.meta.url));

const DECIMAL = /^(0|[1-9]\d*)(\.\d{1,12})?$/;
const SCALE = 12;

function units(text: string): bigint {
  const m = DECIMAL.exec(text);
  if (!m) throw new PriceTableError(`not a non-negative decimal with at most ${SCALE} places: ${toJson(text)}`);
  const frac = (m[2] ?? '.').slice(1).padEnd(SCALE, '0');
  return BigInt(m[1]!) * 10n ** BigInt(SCALE) + BigInt(frac);
}

function time(text: unknown, field: string, where: string): void {
  if (text === undefined) return;
  if (typeof text !== 'string' || !Number.isFinite(Date.parse(text))) throw new PriceTableError(`${where}: ${field} is not an ISO date/time`);
}

/** Parse and validate a price table document. */
export function parsePriceTable(text: string, file: string): PriceTable {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    throw new PriceTableError(`${file}: not valid JSON (${(error as Error).message})`);
  }
  const list = (doc as { prices?: unknown } | null | undefined)?.prices;
  if (!Array.isArray(list)) throw new PriceTableError(`${file}: expected an object with a "prices" array`);
  const entries: PriceEntry[] = [];
  list.forEach((value: unknown, i: number) => {
    const e = value as Record<string, unknown>;
    const where = `${file}: prices[${i}]`;
    for (const k of ['provider', 'model', 'currency', 'inputCacheHit', 'inputCacheMiss', 'output', 'source', 'retrieved']) {
      if (typeof e?.[k] !== 'string' || e[k] === '') throw new PriceTableError(`${where}: "${k}" must be a non-empty string`);
    }
    for (const k of ['inputCacheHit', 'inputCacheMiss', 'output']) {
      try {
        units(e[k] as string);
      } catch (error) {
        throw new PriceTableError(`${where}: "${k}" is ${(error as Error).message}`);
      }
    }
    time(e.effectiveFrom, 'effectiveFrom', where);
    time(e.effectiveUntil, 'effectiveUntil', where);
    entries.push({ ...e } as unknown as PriceEntry);
  });
  return { file, entries };
}

export function loadPriceTable(file: string = DEFAULT_PRICES_FILE): PriceTable {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new PriceTableError(`cannot read price table ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  return parsePriceTable(text, file);
}

export type Priced =
  | { priced: true; currency: string; /** 1e-18 currency units. */ atto: bigint; entry: PriceEntry }
  | { priced: false; currency: string; reason: string };

export interface PriceOptions {
  currency?: string;
  /** Epoch ms of the call (selects the price window); absent: any window. */
  at?: number;
}

function inWindow(e: PriceEntry, at: number | undefined): boolean {
  if (at === undefined) return true;
  if (e.effectiveFrom !== undefined && at < Date.parse(e.effectiveFrom)) return false;
  if (e.effectiveUntil !== undefined && at >= Date.parse(e.effectiveUntil)) return false;
  return true;
}

/**
 * The price of one call's usage. Cache-miss rate for uncached input and for
 * cache writes, cache-hit rate for cache reads, output rate for output.
 */
export function priceUsage(usage: Buckets, model: string | null, provider: string | null, prices: PriceTable, options: PriceOptions = {}): Priced {
  const currency = options.currency ?? 'USD';
  const who = `${provider ?? '?'}/${model ?? '?'}`;
  if (model === null || provider === null) return { priced: false, currency, reason: `no provider/model recorded (${who})` };
  const same = prices.entries.filter((e) => e.provider === provider && e.model === model);
  if (same.length === 0) return { priced: false, currency, reason: `no price for ${who}` };
  const cur = same.filter((e) => e.currency === currency);
  if (cur.length === 0) return { priced: false, currency, reason: `no ${currency} price for ${who}` };
  const entry = cur.filter((e) => inWindow(e, options.at)).at(-1);
  if (!entry) return { priced: false, currency, reason: `no ${currency} price for ${who} in effect at ${new Date(options.at!).toISOString()}` };
  const atto =
    BigInt(usage.uncachedInputTokens + usage.cacheWriteTokens) * units(entry.inputCacheMiss) + BigInt(usage.cacheReadTokens) * units(entry.inputCacheHit) + BigInt(usage.outputTokens) * units(entry.output);
  return { priced: true, currency, atto, entry };
}

/** An exact amount (1e-18 units) as a decimal string, trailing zeros trimmed to at least 2 places. */
export function formatAtto(atto: bigint): string {
  const neg = atto < 0n;
  const s = (neg ? -atto : atto).toString().padStart(19, '0');
  const whole = s.slice(0, -18);
  const frac = s.slice(-18).replace(/0+$/, '').padEnd(2, '0');
  return `${neg ? '-' : ''}${whole}.${frac}`;
}

let shipped: PriceTable | null | undefined;

/** The shipped table, read once per process; null when it cannot be read (costs are then not computed). */
export function shippedPriceTable(): PriceTable | null {
  if (shipped === undefined) {
    try {
      shipped = loadPriceTable();
    } catch {
      shipped = null;
    }
  }
  return shipped;
}

/**
 * One dispatch's price in USD: its usage (the assistant/message's, else the
 * attempt's last usage chunk, as `dsh request` reports it) with its provider
 * and model, at its first chunk time. Null when the dispatch reported no usage.
 */
export function priceDispatch(entry: DispatchEntry, prices: PriceTable): Priced | null {
  const usage = entry.messageUsage ?? entry.chunkUsage ?? null;
  if (usage === null) return null;
  const provider = entry.header?.config?.provider ?? entry.requestContext?.provider ?? null;
  const model = entry.header?.config?.model ?? entry.requestContext?.model ?? null;
  const at = Number.isFinite(entry.firstChunkTime) ? { currency: 'USD', at: entry.firstChunkTime } : { currency: 'USD' };
  return priceUsage(bucketsOf(usage), typeof model === 'string' ? model : null, typeof provider === 'string' ? provider : null, prices, at);
}
