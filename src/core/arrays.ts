/**
 * `list` with `value` appended: pushed onto a list that holds something, else a new array of one.
 * V8 gives an empty array its first push 17 slots; an index that keeps a short list per step (most
 * hold one value, and a long log has tens of thousands of steps) would hold mostly empty slots.
 */
export function appendTo<T>(list: T[] | undefined, value: T): T[] {
  if (list === undefined || list.length === 0) return [value];
  list.push(value);
  return list;
}
