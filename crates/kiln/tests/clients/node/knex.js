// Knex 3: the schema builder (increments, foreign keys with ON DELETE CASCADE, check-based
// and native enums, jsonb, arrays, timestamps, uuid defaults), inserts with RETURNING,
// joins, JSON predicates, upserts (onConflict merge / ignore), transactions with row locks,
// ALTER TABLE through the builder (add, rename, drop, retype, indexes, uniques), columnInfo
// reflection, renameTable, and the migrator (latest, status, rollback with its lock table);
// on Kiln, the ED surface.
// Usage: node knex.js <connection url> <true|false: the server is Kiln>
const fs = require('node:fs');
const path = require('node:path');
const knex = require('knex');
const edSurface = require('./ed');

const out = (...a) => console.log(...a.map(x => typeof x === 'string' ? x : JSON.stringify(x)));
(async () => {
  const db = knex({ client: 'pg', connection: process.argv[2] });
  try {
    await db.schema.dropTableIfExists('kx_post'); await db.schema.dropTableIfExists('kx_user');
    await db.schema.createTable('kx_user', t => {
      t.increments('id'); t.string('email', 120).notNullable().unique(); t.enu('role', ['a', 'b']).defaultTo('a');
      t.enu('mood', ['hi', 'lo'], { useNative: true, enumName: 'kx_mood' }); t.jsonb('data'); t.specificType('tags', 'text[]');
      t.decimal('bal', 10, 2).defaultTo(0); t.timestamps(true, true); t.uuid('u').defaultTo(db.raw('gen_random_uuid()')); t.bigInteger('big'); t.boolean('ok').defaultTo(false);
    });
    await db.schema.createTable('kx_post', t => {
      t.bigIncrements('id').primary(); t.integer('user_id').unsigned().references('id').inTable('kx_user').onDelete('CASCADE'); t.text('body'); t.index(['user_id', 'body'], 'kx_post_ub'); t.date('day'); t.time('at'); t.float('f'); t.double('d');
    });
    out('has', await db.schema.hasTable('kx_user'), await db.schema.hasColumn('kx_user', 'email'), await db.schema.hasColumn('kx_user', 'nope'));
    const ids = await db('kx_user').insert([{ email: 'a@x', data: { a: 1 }, tags: ['t1'], mood: 'hi' }, { email: 'b@x', role: 'b' }]).returning(['id', 'bal', 'role']);
    out('ids', ids);
    await db('kx_post').insert({ user_id: ids[0].id, body: 'p1', day: '2024-01-02', at: '10:11:12', f: 1.5, d: 2.25 });
    out('join', await db('kx_post').join('kx_user', 'kx_user.id', 'kx_post.user_id').select('kx_post.body', 'kx_user.email', 'kx_post.day', 'kx_post.at'));
    out('where', await db('kx_user').where('email', 'like', '%a%').orWhereIn('id', [2]).orderBy('id').pluck('email'));
    out('json', await db('kx_user').whereRaw("data->>'a' = ?", ['1']).pluck('email'));
    out('first', await db('kx_user').first('email').where({ id: 1 }));
    out('count', await db('kx_user').count('* as n'));
    out('upsert', await db('kx_user').insert({ email: 'a@x', role: 'b' }).onConflict('email').merge(['role']).returning('role'));
    out('ignore', await db('kx_user').insert({ email: 'a@x' }).onConflict('email').ignore().returning('id'));
    await db.transaction(async trx => { await trx('kx_user').where({ id: 1 }).forUpdate().first(); await trx('kx_user').update({ bal: 5.5 }).where({ id: 1 }); });
    try { await db.transaction(async trx => { await trx('kx_user').insert({ email: 'c@x' }); throw new Error('no'); }); } catch (e) { out('rb', e.message); }
    out('bal', await db('kx_user').orderBy('id').pluck('bal'));
    await db.schema.alterTable('kx_user', t => { t.string('nick').nullable(); t.renameColumn('big', 'bigger'); t.dropColumn('ok'); t.string('email', 200).notNullable().alter(); t.index(['nick']); });
    await db.schema.alterTable('kx_user', t => { t.dropIndex(['nick']); t.dropUnique(['email']); t.unique(['email', 'nick']); });
    out('columns', Object.entries(await db('kx_user').columnInfo()).map(([k, v]) => [k, v.type, v.maxLength, v.nullable, v.defaultValue]).sort());
    await db.schema.renameTable('kx_post', 'kx_posts'); await db.schema.renameTable('kx_posts', 'kx_post');
    await db('kx_user').where({ id: ids[0].id }).del();
    out('cascade', await db('kx_post').count('* as n'));
    await db.schema.dropTable('kx_post'); await db.schema.dropTable('kx_user'); await db.raw('DROP TYPE kx_mood');
    // migrations
    const dir = path.join(__dirname, 'migrations'); fs.rmSync(dir, { recursive: true, force: true }); fs.mkdirSync(dir);
    fs.writeFileSync(dir + '/001_a.js', "exports.up = k => k.schema.createTable('kx_m', t => { t.increments(); t.string('n'); }); exports.down = k => k.schema.dropTable('kx_m');");
    fs.writeFileSync(dir + '/002_b.js', "exports.up = k => k.schema.alterTable('kx_m', t => { t.integer('v').defaultTo(3); }); exports.down = k => k.schema.alterTable('kx_m', t => { t.dropColumn('v'); });");
    await db.schema.dropTableIfExists('knex_migrations'); await db.schema.dropTableIfExists('knex_migrations_lock'); await db.schema.dropTableIfExists('kx_m');
    out('up', await db.migrate.up({ directory: dir }));
    await db('kx_m').insert([{ n: 'x' }, { n: 'y' }]);
    out('latest', await db.migrate.latest({ directory: dir }));
    out('defaulted', await db('kx_m').orderBy('id').select('n', 'v'));
    out('status', await db.migrate.status({ directory: dir }));
    out('rollback', await db.migrate.rollback({ directory: dir }, true));
    out('hasm', await db.schema.hasTable('kx_m'));
    if (process.argv[3] === 'true') {
      // One connection, so that the session's synchronous_commit applies to its inserts.
      const one = knex({ client: 'pg', connection: process.argv[2], pool: { min: 1, max: 1 } });
      await one.schema.createTable('kx_ed', t => { t.increments(); t.string('name'); });
      await edSurface(async (sql) => (await one.raw(sql)).rows, (n) => `INSERT INTO kx_ed (name) VALUES ('${n}')`);
      await one.schema.dropTable('kx_ed');
      await one.destroy();
    }
    await db.schema.dropTable('knex_migrations'); await db.schema.dropTable('knex_migrations_lock');
    out('ok');
  } catch (e) { console.error(e.stack); out('FAIL', e.message, e.code); process.exitCode = 1; }
  await db.destroy();
})();
