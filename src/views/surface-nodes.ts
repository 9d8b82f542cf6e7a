/**
 * A value per node of a surface fold (the node's event, whether it derives a
 * message, …), kept only while the node is on the surface: a view that folds
 * the surface while it walks a re-read of the log holds what the surface holds,
 * never the log.
 */
export class NodeValues<T> {
  private values = new Map<number, T>();
  private length = 0;
  private last: number | undefined;

  get(seq: number): T | undefined {
    return this.values.get(seq);
  }

  /** Before an event is folded: the surface as it was. */
  before(nodes: readonly number[]): void {
    this.length = nodes.length;
    this.last = nodes[nodes.length - 1];
  }

  /** After the event with `seq` was folded (its value `value`; `replaces`: a non-append surfaceOp): keep the values of `nodes` only. */
  after(nodes: readonly number[], seq: number, value: T, replaces: boolean): void {
    const { length, last } = this;
    if (!replaces && nodes.length === length && nodes[length - 1] === last) return;
    if (nodes.length === length + 1 && nodes[length - 1] === last && nodes[length] === seq) {
      this.values.set(seq, value);
      return;
    }
    const kept = new Map<number, T>();
    for (const s of nodes) {
      const v = s === seq ? value : this.values.get(s);
      if (v !== undefined) kept.set(s, v);
    }
    this.values = kept;
  }
}
