import type { FieldValue, RecordQuery } from '../kernel/store.js';

/** Field names a query may name: plain identifiers, so they can be written into SQL safely. */
export const FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function checkFields(query: RecordQuery): void {
  for (const field of [...Object.keys(query.where ?? {}), ...(query.orderBy ?? []).map((o) => o.field)]) {
    if (!FIELD.test(field)) throw new Error(`invalid field name "${field}" in a store query`);
  }
}

const compare = (a: unknown, b: unknown): number => {
  if (a === b) return 0;
  if (a === undefined || a === null) return -1;
  if (b === undefined || b === null) return 1;
  return (a as FieldValue) < (b as FieldValue) ? -1 : 1;
};

/** Records in a query's order: by each field (nulls first), ties by id in the direction of the last key. */
export function orderRecords<R extends { id: string; value: unknown }>(rows: R[], order: RecordQuery['orderBy'] = []): R[] {
  const tieDesc = order.at(-1)?.desc ?? false;
  return [...rows].sort((a, b) => {
    for (const { field, desc } of order) {
      const c = compare((a.value as Record<string, unknown>)[field], (b.value as Record<string, unknown>)[field]);
      if (c !== 0) return desc ? -c : c;
    }
    const c = compare(a.id, b.id);
    return tieDesc ? -c : c;
  });
}

/**
 * The reference semantics of `Collection.query`, over records in memory: the lowdb store uses it,
 * and the SQLite store's SQL must agree with it (the store contract tests run both).
 */
export function queryInMemory<T>(entries: Array<[string, T]>, query: RecordQuery): { items: T[]; total: number } {
  checkFields(query);
  const where = Object.entries(query.where ?? {});
  const matching = entries.filter(([, value]) =>
    where.every(([field, wanted]) => {
      const actual = (value as Record<string, unknown>)[field];
      return Array.isArray(wanted) ? wanted.includes(actual as FieldValue) : actual === wanted;
    }),
  );
  const ordered = orderRecords(
    matching.map(([id, value]) => ({ id, value })),
    query.orderBy ?? [],
  ).map(({ id, value }) => [id, value] as [string, T]);
  matching.splice(0, matching.length, ...ordered);
  const offset = query.offset ?? 0;
  const end = query.limit === undefined ? undefined : offset + query.limit;
  return { items: matching.slice(offset, end).map(([, value]) => value), total: matching.length };
}
