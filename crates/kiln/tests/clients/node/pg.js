// node-postgres (pg) directly: serial and bigserial keys, every common type as a parameter
// and a result (JS Dates, arrays with NULLs and quotes, jsonb, bytea, intervals, uuid),
// named prepared statements, = ANY($1), the fields of a result's description and of error
// responses (constraint, table, column), savepoints, multi-statement simple queries,
// LISTEN/NOTIFY, ON DELETE CASCADE; on Kiln, the ED surface.
// Usage: node pg.js <connection url> <true|false: the server is Kiln>
const { Client } = require('pg');
const edSurface = require('./ed');

const out = (...a) => console.log(...a.map(x => typeof x === 'string' ? x : JSON.stringify(x)));
(async () => {
  const c = new Client({ connectionString: process.argv[2] });
  await c.connect();
  try {
    await c.query('DROP TABLE IF EXISTS np_item'); await c.query('DROP TABLE IF EXISTS np_owner');
    await c.query(`CREATE TABLE np_owner (id bigserial PRIMARY KEY, name text NOT NULL UNIQUE)`);
    await c.query(`CREATE TABLE np_item (id serial PRIMARY KEY, owner_id bigint REFERENCES np_owner(id) ON DELETE CASCADE, label varchar(20) NOT NULL CHECK (label <> ''), qty int DEFAULT 1, price numeric(8,2), at timestamptz, day date, tags text[], doc jsonb, raw bytea, flag boolean, ratio float8, u uuid DEFAULT gen_random_uuid(), span interval)`);
    const o = await c.query('INSERT INTO np_owner (name) VALUES ($1) RETURNING id', ['ann']);
    out('owner id', o.rows[0].id, typeof o.rows[0].id);
    const when = new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678));
    const ins = { name: 'ins', text: 'INSERT INTO np_item (owner_id, label, price, at, day, tags, doc, raw, flag, ratio, span) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11) RETURNING *' };
    const r = await c.query({ ...ins, values: [o.rows[0].id, 'first', 12.5, when, '2024-02-29', ['a', 'b,c', 'd"e', null], { k: [1, { z: null }] }, Buffer.from([0, 255, 10]), true, 0.25, '1 day 02:03:04'] });
    const row = r.rows[0];
    out('row', row.id, row.label, row.qty, row.price, row.at.toISOString(), row.day instanceof Date, row.tags, row.doc, [...row.raw], row.flag, row.ratio, typeof row.u, row.span);
    await c.query({ ...ins, values: [o.rows[0].id, 'second', null, null, null, [], null, null, false, null, null] });
    out('fields', r.fields.map(f => [f.name, f.dataTypeID, f.tableID !== 0, f.columnID]));
    out('any', (await c.query('SELECT label FROM np_item WHERE id = ANY($1) ORDER BY id', [[1, 2, 3]])).rows);
    out('ts param', (await c.query('SELECT $1::timestamptz AS t, $2::date AS d', [when, '2024-03-01'])).rows.map(x => [x.t.toISOString(), x.d.getFullYear()]));
    out('arrays', (await c.query(`SELECT ARRAY[1,2]::int[] AS i, ARRAY['x', NULL]::text[] AS t, ARRAY[1.5]::numeric[] AS n, ARRAY[true] AS b`)).rows);
    out('json', (await c.query(`SELECT doc->'k'->1->>'z' IS NULL AS z, doc @> '{"k":[1]}' AS has, jsonb_array_length(doc->'k') AS n FROM np_item WHERE doc IS NOT NULL`)).rows);
    out('bigint', (await c.query('SELECT 9007199254740993::bigint AS b, 2::int2 AS s, 1.5::real AS r, 12345678901234567890.5::numeric AS n')).rows);
    out('interval', (await c.query(`SELECT interval '1 year 2 mons 3 days 04:05:06.5' AS i, '-1 day'::interval AS j`)).rows.map(x => [x.i.toPostgres(), x.j.toPostgres()]));
    try { await c.query('INSERT INTO np_item (owner_id, label) VALUES ($1, $2)', [999, 'x']); } catch (e) { out('fk', e.code, e.constraint, e.table, e.schema, e.detail); }
    try { await c.query('INSERT INTO np_item (owner_id, label) VALUES ($1, $2)', [1, '']); } catch (e) { out('check', e.code, e.constraint, e.table); }
    try { await c.query('INSERT INTO np_owner (name) VALUES ($1)', ['ann']); } catch (e) { out('unique', e.code, e.constraint, e.detail); }
    try { await c.query('INSERT INTO np_item (owner_id) VALUES (1)'); } catch (e) { out('notnull', e.code, e.column, e.table); }
    try { await c.query('SELECT 1/0'); } catch (e) { out('div', e.code, e.message); }
    try { await c.query('SELEC 1'); } catch (e) { out('syntax', e.code, e.position); }
    await c.query('BEGIN');
    await c.query('SAVEPOINT s1');
    await c.query('INSERT INTO np_owner (name) VALUES ($1)', ['bob']);
    await c.query('ROLLBACK TO SAVEPOINT s1');
    await c.query('INSERT INTO np_owner (name) VALUES ($1)', ['cy']);
    await c.query('COMMIT');
    out('owners', (await c.query('SELECT name FROM np_owner ORDER BY id')).rows.map(x => x.name));
    const multi = await c.query('SELECT 1 AS a; SELECT 2 AS b');
    out('multi', multi.map(m => m.rows));
    out('rowMode', (await c.query({ text: 'SELECT 1 AS a, 2 AS a', rowMode: 'array' })).rows);
    const l = new Client({ connectionString: process.argv[2] }); await l.connect();
    const got = new Promise(res => l.on('notification', n => res([n.channel, n.payload])));
    await l.query('LISTEN np_chan');
    await c.query("SELECT pg_notify('np_chan', 'hello')");
    out('notify', await got);
    await l.end();
    await c.query('DELETE FROM np_owner WHERE name = $1', ['ann']);
    out('cascade', (await c.query('SELECT count(*)::int AS n FROM np_item')).rows[0].n);
    if (process.argv[3] === 'true') {
      await edSurface(async (sql) => (await c.query(sql)).rows, (n) => `INSERT INTO np_owner (name) VALUES ('${n}')`);
    }
    await c.query('DROP TABLE np_item'); await c.query('DROP TABLE np_owner');
    out('ok');
  } catch (e) { out('FAIL', e.message, e.code, e.stack); process.exitCode = 1; }
  await c.end();
})();
