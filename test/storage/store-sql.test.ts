import { describe, expect, it } from 'vitest';
import { compiledOnce, queryBuilder, RecordQueries, storeStatements } from '../../core/storage/store-sql.js';

/**
 * The store's query layer speaks both dialects: the SQLite store runs what it compiles, and team
 * mode's PostgreSQL store reuses the same statements compiled for PostgreSQL.
 */
describe('the store query layer', () => {
  it('compiles every statement for SQLite (? parameters) and PostgreSQL ($n parameters) alike', () => {
    const lite = storeStatements('sqlite');
    const pg = storeStatements('postgres');
    const append = lite.appendItem(3, null, '{}');
    expect(append.sql).toBe('insert into "log_items" ("item", "shape", "value") values (?, ?, ?)');
    expect(append.parameters).toEqual([3, null, '{}']);
    const liteGet = lite.getRecord('tasks', 't1');
    expect(liteGet.sql).toBe('select "value" from "records" where "collection" = ? and "id" = ?');
    const pgGet = pg.getRecord('tasks', 't1');
    expect(pgGet.sql).toBe('select "value" from "records" where "collection" = $1 and "id" = $2');
    expect(pgGet.parameters).toEqual(['tasks', 't1']);
    expect(pg.putRecord('tasks', 't1', '{}').sql).toMatch(/on conflict \("collection", "id"\) do update set "value" = "excluded"\."value"/);
  });

  it('compiles a statement once and maps each call onto its parameters', () => {
    let builds = 0;
    const db = queryBuilder('sqlite');
    const head = compiledOnce((log: string, key: string) => {
      builds++;
      return db.selectFrom('log_keys').select('version').where('log', '=', log).where('key', '=', key).limit(1);
    });
    expect(head('a', 'b')).toEqual({
      sql: 'select "version" from "log_keys" where "log" = ? and "key" = ? limit ?',
      parameters: ['a', 'b', 1],
    });
    expect(head('c', 'd').parameters).toEqual(['c', 'd', 1]);
    expect(builds).toBe(1);
  });

  it('writes a collection query with the collection as a literal (partial indexes) and each field in its dialect', () => {
    const query = { where: { status: ['queued', 'working'], principal: 'ada' }, orderBy: [{ field: 'created_at', desc: true }], limit: 20 };
    const lite = new RecordQueries('sqlite', 'tasks').compile(query)!;
    expect(lite.page.sql).toBe(
      `select "id", "value" from "records" where "collection" = 'tasks' and json_extract(value, '$.status') in (?, ?) and json_extract(value, '$.principal') in (?) order by json_extract(value, '$.created_at') desc, "id" desc limit ? offset ?`,
    );
    expect(lite.page.parameters).toEqual(['queued', 'working', 'ada', 20, 0]);
    expect(lite.count.parameters).toEqual(['queued', 'working', 'ada']);
    const pg = new RecordQueries('postgres', 'tasks').compile({ ...query, limit: undefined })!;
    expect(pg.page.sql).toContain(`(value::jsonb ->> 'status') in ($1, $2)`);
    expect(pg.page.sql).toMatch(/limit \$4 offset \$5$/);
    expect(pg.page.parameters).toEqual(['queued', 'working', 'ada', null, 0]);
  });

  it('reuses one compiled shape for other values, and a different shape for other fields', () => {
    const queries = new RecordQueries('sqlite', 'threads');
    const a = queries.compile({ where: { agent_name: 'echo' }, limit: 5 })!;
    const b = queries.compile({ where: { agent_name: 'other' }, limit: 9, offset: 2 })!;
    expect(b.page.sql).toBe(a.page.sql);
    expect(b.page.parameters).toEqual(['other', 9, 2]);
    expect(queries.compile({ where: { user_id: 'u' } })!.page.sql).not.toBe(a.page.sql);
    expect(queries.compile({ where: { flag: true } })!.page.parameters).toEqual([1, -1, 0]);
  });

  it('answers nothing for an empty list of values, and refuses a field name that is no identifier', () => {
    expect(new RecordQueries('sqlite', 'tasks').compile({ where: { status: [] } })).toBeUndefined();
    expect(() => new RecordQueries('sqlite', 'tasks').compile({ where: { "x') OR 1=1 --": 'y' } })).toThrow(/invalid field name/);
  });
});
