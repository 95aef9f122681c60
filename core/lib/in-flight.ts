/**
 * A table of what is in flight under an owner that lives as long as the server: the calls on a
 * host's link, a pool's running tasks. Entries come and go by the thousand a second.
 *
 * Why not a Map or a Set: V8 keeps their entries in a hash table it replaces whenever the table has
 * filled with deleted slots, grows or shrinks, and a replaced table keeps a link to its successor
 * (for iterators still walking it). A table that has reached the old generation is a root of every
 * young collection, so each later table, and every object any of them held, survives it and is
 * copied until the next full collection. Measured under `POST /invoke` load (#27), with the calls
 * on a link kept in Maps: the server thread copied ~40 MB in each young collection (137 → 97 MB,
 * 17 ms) and the agent's host thread ~12 MB (62 → 21 MB, 11 ms), against 0.5 and 0.1 ms with
 * this table. A plain object's dictionary has no such link: a deleted entry is gone.
 *
 * Keys are numbers: the caller's own (a call's number on its link) or the next one `add` gives.
 * Iteration is in key order, oldest first.
 */
export class InFlight<V> {
  #entries: Record<number, V> = Object.create(null);
  #size = 0;
  #last = 0;

  get size(): number {
    return this.#size;
  }

  get(key: number): V | undefined {
    return this.#entries[key];
  }

  has(key: number): boolean {
    return key in this.#entries;
  }

  set(key: number, value: V): this {
    if (!(key in this.#entries)) this.#size++;
    this.#entries[key] = value;
    return this;
  }

  /** Keep `value` under a new key (greater than any `add` gave before), returned to delete it by. */
  add(value: V): number {
    const key = ++this.#last;
    this.set(key, value);
    return key;
  }

  delete(key: number): boolean {
    if (!(key in this.#entries)) return false;
    delete this.#entries[key];
    this.#size--;
    return true;
  }

  /** Empty the table, returning what it held (in iteration order). */
  drain(): V[] {
    const values = [...this.values()];
    this.#entries = Object.create(null);
    this.#size = 0;
    return values;
  }

  *values(): IterableIterator<V> {
    for (const key in this.#entries) yield this.#entries[key]!;
  }

  *[Symbol.iterator](): IterableIterator<[number, V]> {
    for (const key in this.#entries) yield [Number(key), this.#entries[key]!];
  }
}
