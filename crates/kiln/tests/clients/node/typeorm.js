// TypeORM 0.3: entity schemas with every common column type (enum, array, jsonb, uuid,
// numeric with precision, create/update/delete dates, versions), one-to-many, many-to-many
// and closure-table tree relations, synchronize (twice: the second finds nothing to do) and
// the schema diff a migration would be generated from, table reflection (columns, foreign
// keys, uniques, checks, indexes), repositories and query builders, soft delete, upsert,
// pessimistic locks, transactions, migrations through the query runner; on Kiln, the ED
// surface.
// Usage: node typeorm.js <connection url> <true|false: the server is Kiln>
require('reflect-metadata');
const { DataSource, EntitySchema, In, Like, MoreThan, IsNull, TableColumn, TableIndex } = require('typeorm');
const edSurface = require('./ed');

const out = (...a) => console.log(...a.map(x => typeof x === 'string' ? x : JSON.stringify(x)));
const [url, kiln] = process.argv.slice(2);
const authorColumns = {
    id: { type: Number, primary: true, generated: 'increment' },
    name: { type: 'varchar', length: 80, unique: true },
    email: { type: 'varchar', nullable: true },
    born: { type: 'date', nullable: true },
    createdAt: { type: 'timestamptz', createDate: true },
    updatedAt: { type: 'timestamp', updateDate: true },
    version: { type: Number, version: true },
    rating: { type: 'numeric', precision: 5, scale: 2, default: 0 },
    kind: { type: 'enum', enum: ['staff', 'guest'], default: 'guest' },
    prefs: { type: 'jsonb', nullable: true },
    tags: { type: 'text', array: true, default: () => "'{}'" },
    ext: { type: 'uuid', generated: 'uuid' },
    deletedAt: { type: 'timestamptz', deleteDate: true, nullable: true },
};
const author = (columns) => new EntitySchema({
  name: 'Author', tableName: 'author', columns,
  indices: [{ name: 'IDX_author_email', columns: ['email'] }],
  relations: { books: { type: 'one-to-many', target: 'Book', inverseSide: 'author' } },
});
const Author = author(authorColumns);
const Book = new EntitySchema({
  name: 'Book', tableName: 'book',
  columns: {
    id: { type: 'uuid', primary: true, generated: 'uuid' },
    title: { type: 'text' },
    pages: { type: 'int', nullable: true },
    price: { type: 'double precision', nullable: true },
    big: { type: 'bigint', nullable: true },
    flag: { type: 'boolean', default: false },
  },
  checks: [{ name: 'CHK_pages', expression: '"pages" IS NULL OR "pages" > 0' }],
  uniques: [{ name: 'UQ_title_author', columns: ['title', 'author'] }],
  relations: {
    author: { type: 'many-to-one', target: 'Author', inverseSide: 'books', onDelete: 'CASCADE', nullable: false },
    genres: { type: 'many-to-many', target: 'Genre', joinTable: true, cascade: true },
  },
});
const Genre = new EntitySchema({
  name: 'Genre', tableName: 'genre',
  columns: { id: { type: Number, primary: true, generated: 'identity' }, name: { type: String } },
});
const Node = new EntitySchema({
  name: 'Node', tableName: 'node', trees: [{ type: 'closure-table' }],
  columns: { id: { type: Number, primary: true, generated: true }, label: { type: String } },
  relations: { parent: { type: 'many-to-one', treeParent: true, target: 'Node' }, children: { type: 'one-to-many', treeChildren: true, target: 'Node' } },
});
(async () => {
  const ds = new DataSource({ type: 'postgres', url, entities: [Author, Book, Genre, Node], synchronize: false, logging: false });
  try {
    await ds.initialize();
    await ds.dropDatabase();
    await ds.synchronize();
    const pending = await ds.driver.createSchemaBuilder().log();
    out('pending after sync', pending.upQueries.map(q => q.query));
    await ds.synchronize();
    // The entities changed as a developer would change them: what a migration would do.
    const changed = new DataSource({
      type: 'postgres', url, logging: false,
      entities: [author({ ...authorColumns, name: { type: 'varchar', length: 120, unique: true }, nick: { type: 'varchar', length: 30, nullable: true }, rating: { type: 'numeric', precision: 6, scale: 2, default: 0 } }), Book, Genre, Node],
    });
    await changed.initialize();
    const diff = await changed.driver.createSchemaBuilder().log();
    out('migration up', diff.upQueries.map(q => q.query));
    out('migration down', diff.downQueries.map(q => q.query));
    // Applied, then reverted: each leaves nothing for the next diff to do.
    await changed.synchronize();
    out('after migration', (await changed.driver.createSchemaBuilder().log()).upQueries.length);
    await changed.destroy();
    await ds.synchronize();
    out('after revert', (await ds.driver.createSchemaBuilder().log()).upQueries.length);
    const qr = ds.createQueryRunner();
    const t = await qr.getTable('book');
    out('book columns', t.columns.map(c => [c.name, c.type, c.isNullable, c.isPrimary, c.isGenerated, c.generationStrategy, c.default]).sort());
    out('book fks', t.foreignKeys.map(f => [f.columnNames, f.referencedTableName, f.referencedColumnNames, f.onDelete]));
    out('book uniques', t.uniques.map(u => [u.name, u.columnNames]));
    // The CHECK's name only: PostgreSQL shows its expression deparsed, Kiln as written.
    out('book checks', t.checks.map(c => c.name));
    const at = await qr.getTable('author');
    out('author columns', at.columns.map(c => [c.name, c.type, c.isNullable, c.isGenerated, c.generationStrategy, c.default, c.enum, c.isArray, c.length, c.precision, c.scale]).sort());
    out('author indices', at.indices.map(i => [i.name, i.columnNames, i.isUnique]).sort());
    const ar = ds.getRepository('Author'), br = ds.getRepository('Book'), gr = ds.getRepository('Genre');
    const a = await ar.save({ name: 'ann', email: 'a@x', born: '1980-01-02', prefs: { dark: true }, tags: ['x', 'y'] });
    out('saved', a.id, a.version, a.kind, a.rating, typeof a.ext, a.createdAt instanceof Date);
    const b = await ar.save({ name: 'bob' });
    const g1 = await gr.save({ name: 'scifi' });
    await br.save([{ title: 'Dune', pages: 500, price: 9.5, big: '12345678901234', author: a, genres: [g1, { name: 'classic' }] }, { title: 'Emma', author: b }]);
    try { await br.save({ title: 'Bad', pages: -1, author: a }); } catch (e) { out('check', e.code, e.constraint); }
    try { await br.save({ title: 'Dune', author: a }); } catch (e) { out('unique', e.code, e.constraint, e.detail); }
    const withBooks = await ar.find({ relations: { books: { genres: true } }, order: { name: 'ASC', books: { title: 'ASC' } } });
    out('relations', withBooks.map(x => [x.name, x.books.map(bk => [bk.title, bk.genres.map(g => g.name).sort()])]));
    out('find where', (await ar.find({ where: { name: In(['ann', 'zed']) } })).map(x => x.name), (await ar.findBy({ name: Like('b%') })).map(x => x.name), (await ar.findBy({ email: IsNull() })).map(x => x.name));
    out('count', await br.count(), await br.countBy({ pages: MoreThan(100) }));
    const qb = await br.createQueryBuilder('b').leftJoinAndSelect('b.author', 'a').where('a.name = :n', { n: 'ann' }).andWhere('b.pages > :p', { p: 1 }).orderBy('b.title').getMany();
    out('qb', qb.map(x => [x.title, x.author.name]));
    const raw = await br.createQueryBuilder('b').select('a.name', 'name').addSelect('COUNT(*)', 'n').innerJoin('b.author', 'a').groupBy('a.name').orderBy('a.name').getRawMany();
    out('raw', raw);
    const [rows, total] = await br.findAndCount({ skip: 0, take: 1, order: { title: 'DESC' } });
    out('page', rows.map(x => x.title), total);
    const paged = await ar.find({ relations: { books: true }, skip: 1, take: 1, order: { id: 'ASC' } });
    out('paged join', paged.map(x => x.name));
    a.email = 'new@x'; await ar.save(a);
    out('version', (await ar.findOneBy({ id: a.id })).version);
    await ar.update({ name: 'bob' }, { rating: 4.5 });
    await ar.increment({ name: 'bob' }, 'rating', 1);
    out('updated', (await ar.findOneBy({ name: 'bob' })).rating);
    await ar.softDelete({ name: 'bob' });
    out('soft', (await ar.find()).map(x => x.name), (await ar.find({ withDeleted: true })).length);
    await ar.restore({ name: 'bob' });
    await ds.transaction(async (m) => { await m.save('Genre', { name: 'tx' }); await m.getRepository('Author').createQueryBuilder().setLock('pessimistic_write').where('id = :id', { id: a.id }).getOne(); });
    try { await ds.transaction(async (m) => { await m.save('Genre', { name: 'gone' }); throw new Error('boom'); }); } catch (e) { out('rolled', e.message); }
    out('genres', (await gr.find({ order: { id: 'ASC' } })).map(x => x.name));
    const up = await ar.upsert([{ name: 'ann', email: 'up@x' }, { name: 'cy' }], ['name']);
    out('upsert', up.identifiers.length);
    const nr = ds.getTreeRepository('Node');
    const root = await nr.save({ label: 'root' }); const c1 = await nr.save({ label: 'c1', parent: root }); await nr.save({ label: 'c2', parent: c1 });
    const tree = await nr.findDescendantsTree(root);
    out('tree', tree.label, tree.children.map(c => [c.label, c.children.map(d => d.label)]));
    out('ancestors', (await nr.findAncestors(await nr.findOneBy({ label: 'c2' }))).map(x => x.label).sort());
    await qr.addColumn('book', new TableColumn({ name: 'isbn', type: 'varchar', isNullable: true }));
    await qr.renameColumn('book', 'isbn', 'isbn13');
    await qr.changeColumn('book', 'isbn13', new TableColumn({ name: 'isbn13', type: 'varchar', length: '13', isNullable: true }));
    await qr.createIndex('book', new TableIndex({ name: 'IDX_isbn', columnNames: ['isbn13'], isUnique: true }));
    await qr.dropIndex('book', 'IDX_isbn');
    await qr.dropColumn('book', 'isbn13');
    const b2 = await qr.getTable('book');
    out('after alter', b2.columns.map(c => c.name).sort());
    out('raw query', await ds.query('SELECT $1::text || $2 AS s, now() IS NOT NULL AS t', ['a', 'b']));
    await ar.delete({ name: 'ann' });
    out('cascade', await br.count());
    if (kiln === 'true') {
      // A query runner holds one connection: the session's setting applies to its inserts.
      await edSurface((sql) => qr.query(sql), (n) => `INSERT INTO genre (name) VALUES ('${n}')`);
    }
    await qr.release();
    await ds.dropDatabase();
    out('ok');
  } catch (e) {
    console.error(e.stack);
    out('FAIL', e.message, e.code, e.query);
    process.exitCode = 1;
  }
  await ds.destroy();
})();
