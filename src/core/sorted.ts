/** The position of the first value >= x in ascending `values` (its length if none). */
export function lowerBound(values: ArrayLike<number>, x: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((values[mid] as number) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The position of the first value > x in ascending `values` (its length if none). */
export function upperBound(values: ArrayLike<number>, x: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((values[mid] as number) <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A map of numbers to numbers that lists its entries in ascending key order (the dispatch index's owners). */
export interface NumberMap extends Iterable<[number, number]> {
  readonly size: number;
  get(key: number): number | undefined;
  has(key: number): boolean;
  set(key: number, value: number): this;
  /** Drop every entry whose key is not below `key`. */
  truncate(key: number): void;
  /** The keys in ascending order (a copy). */
  keys(): Float64Array;
  /** The values in ascending key order (a copy). */
  values(): Float64Array;
}

/**
 * A map from numbers to numbers kept as two parallel arrays sorted by key: a set with a key above
 * every key held appends (the way a log's folds fill it, in seq order), any other set inserts in
 * place. Lookups are binary searches. It holds 16 bytes per entry and no object per entry, where a
 * `Map` of a few hundred thousand entries costs a hash table the collector walks.
 */
export class AscendingNumberMap implements NumberMap {
  private keyList = new Float64Array(16);
  private valueList = new Float64Array(16);
  private count = 0;

  constructor(entries?: Iterable<readonly [number, number]>) {
    if (entries) for (const [k, v] of entries) this.set(k, v);
  }

  /** The map of `keys[i]` to `values[i]` (taken over, not copied), for keys strictly ascending. */
  static fromSorted(keys: Float64Array<ArrayBuffer>, values: Float64Array<ArrayBuffer>): AscendingNumberMap {
    if (keys.length !== values.length) throw new RangeError('AscendingNumberMap: as many keys as values');
    if (keys.length > 0 && Number.isNaN(keys[0])) throw new RangeError('AscendingNumberMap: a NaN key');
    for (let i = 1; i < keys.length; i++) if (!((keys[i] as number) > (keys[i - 1] as number))) throw new RangeError('AscendingNumberMap: keys not strictly ascending');
    const m = new AscendingNumberMap();
    if (keys.length > 0) {
      m.keyList = keys;
      m.valueList = values;
      m.count = keys.length;
    }
    return m;
  }

  get size(): number {
    return this.count;
  }

  /** Where `key` is, or where it would go (the position of the first key >= it). */
  private find(key: number): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.keyList[mid] as number) < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  get(key: number): number | undefined {
    const n = this.count;
    if (n === 0 || !(key <= (this.keyList[n - 1] as number))) return undefined;
    const at = this.find(key);
    return at < n && this.keyList[at] === key ? this.valueList[at] : undefined;
  }

  has(key: number): boolean {
    return this.get(key) !== undefined;
  }

  set(key: number, value: number): this {
    const n = this.count;
    if (Number.isNaN(key)) throw new RangeError('AscendingNumberMap: a NaN key');
    let at = n;
    if (n > 0 && !(key > (this.keyList[n - 1] as number))) {
      at = this.find(key);
      if (this.keyList[at] === key) {
        this.valueList[at] = value;
        return this;
      }
    }
    if (n === this.keyList.length) {
      const keys = new Float64Array(n * 2);
      keys.set(this.keyList);
      this.keyList = keys;
      const values = new Float64Array(n * 2);
      values.set(this.valueList);
      this.valueList = values;
    }
    if (at < n) {
      this.keyList.copyWithin(at + 1, at, n);
      this.valueList.copyWithin(at + 1, at, n);
    }
    this.keyList[at] = key;
    this.valueList[at] = value;
    this.count = n + 1;
    return this;
  }

  /** Drop every entry whose key is not below `key`. */
  truncate(key: number): void {
    this.count = this.find(key);
  }

  /** The entries in ascending key order. */
  *[Symbol.iterator](): Generator<[number, number]> {
    for (let i = 0; i < this.count; i++) yield [this.keyList[i] as number, this.valueList[i] as number];
  }

  /** The keys in ascending order (a copy). */
  keys(): Float64Array {
    return this.keyList.slice(0, this.count);
  }

  /** The values in ascending key order (a copy). */
  values(): Float64Array {
    return this.valueList.slice(0, this.count);
  }
}

/**
 * A map whose first entries (`baseCount` of them, the highest key `baseLastKey`) are loaded only
 * when a read or write needs them, and whose keys above those are held apart (`tail`): a fold that
 * goes on from a saved map in seq order mostly sets and reads keys above every saved one, so the
 * saved entries are never decoded, and can be written out again as the bytes they were read from.
 */
export class LayeredNumberMap implements NumberMap {
  private base: AscendingNumberMap | undefined;
  private changed = false;
  /** The entries with keys above every base key, in ascending order. */
  readonly tail = new AscendingNumberMap();
  /**
   * `peek`: a read of one saved key without loading the base (a scan of its saved form), for the
   * first `peeks` reads of saved keys (a resumed fold reads a few: the open step's); later reads load it.
   */
  constructor(
    private baseCount: number,
    private baseLastKey: number,
    private readonly load: () => AscendingNumberMap,
    private readonly peek?: (key: number) => number | undefined,
    private peeks = 8,
  ) {}

  /** Whether a set or truncate changed the base entries (reads only load them). */
  get baseChanged(): boolean {
    return this.changed;
  }

  private loaded(): AscendingNumberMap {
    if (!this.base) {
      const base = this.load();
      if (base.size !== this.baseCount) throw new RangeError('LayeredNumberMap: the base loaded is not of its size');
      this.base = base;
    }
    return this.base;
  }

  get size(): number {
    return (this.base ? this.base.size : this.baseCount) + this.tail.size;
  }

  get(key: number): number | undefined {
    if (key > this.baseLastKey) return this.tail.get(key);
    if (!this.base && this.peek && this.peeks > 0) {
      this.peeks--;
      return this.peek(key);
    }
    return this.loaded().get(key);
  }

  has(key: number): boolean {
    return this.get(key) !== undefined;
  }

  set(key: number, value: number): this {
    if (Number.isNaN(key)) throw new RangeError('AscendingNumberMap: a NaN key');
    if (key > this.baseLastKey) this.tail.set(key, value);
    else {
      this.loaded().set(key, value);
      this.changed = true;
    }
    return this;
  }

  truncate(key: number): void {
    if (key > this.baseLastKey) {
      this.tail.truncate(key);
      return;
    }
    this.tail.truncate(-Infinity);
    const base = this.loaded();
    base.truncate(key);
    this.changed = true;
    const keys = base.keys();
    this.baseCount = keys.length;
    this.baseLastKey = keys.length > 0 ? (keys[keys.length - 1] as number) : -Infinity;
  }

  *[Symbol.iterator](): Generator<[number, number]> {
    yield* this.loaded();
    yield* this.tail;
  }

  keys(): Float64Array {
    return concat(this.loaded().keys(), this.tail.keys());
  }

  values(): Float64Array {
    return concat(this.loaded().values(), this.tail.values());
  }
}

function concat(a: Float64Array, b: Float64Array): Float64Array {
  const out = new Float64Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
