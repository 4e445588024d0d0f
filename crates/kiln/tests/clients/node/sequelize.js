// Sequelize 6: models with every common column type, associations (one-to-many with
// ON DELETE CASCADE, many-to-many through a join table), sync({ force }) and sync({ alter })
// twice, the query interface's reflection (tables, columns, indexes, foreign keys), CRUD with
// operators (JSON paths, array containment, ILIKE), aggregates, eager loading, paranoid
// deletes, upsert, managed and nested transactions (savepoints), row locks, migrations
// (add/rename/change/remove column, indexes, CHECK constraints, rename table), raw queries
// with replacements and bind parameters; on Kiln, the ED surface.
// Usage: node sequelize.js <connection url> <true|false: the server is Kiln>
const { Sequelize, DataTypes, Op } = require('sequelize');
const edSurface = require('./ed');

const url = process.argv[2];
const log = [];
const sequelize = new Sequelize(url, { logging: (s) => log.push(s), define: { underscored: false } });
const out = (...a) => console.log(...a.map(x => typeof x === 'string' ? x : JSON.stringify(x)));
(async () => {
  try {
    const User = sequelize.define('User', {
      id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
      uuid: { type: DataTypes.UUID, defaultValue: DataTypes.UUIDV4 },
      name: { type: DataTypes.STRING, allowNull: false, unique: true },
      email: { type: DataTypes.STRING(100), validate: { isEmail: true } },
      age: DataTypes.INTEGER,
      score: DataTypes.DECIMAL(10, 2),
      ratio: DataTypes.FLOAT,
      dbl: DataTypes.DOUBLE,
      big: DataTypes.BIGINT,
      active: { type: DataTypes.BOOLEAN, defaultValue: true },
      bio: DataTypes.TEXT,
      born: DataTypes.DATEONLY,
      meta: DataTypes.JSONB,
      js: DataTypes.JSON,
      tags: DataTypes.ARRAY(DataTypes.STRING),
      role: DataTypes.ENUM('admin', 'user', 'guest'),
      blob: DataTypes.BLOB,
    }, { indexes: [{ fields: ['age'] }, { fields: ['name', 'age'], name: 'users_name_age' }] });
    const Post = sequelize.define('Post', {
      title: DataTypes.STRING,
      body: DataTypes.TEXT,
    }, { paranoid: true });
    const Tag = sequelize.define('Tag', { label: { type: DataTypes.STRING, unique: true } }, { timestamps: false });
    User.hasMany(Post, { onDelete: 'CASCADE' });
    Post.belongsTo(User);
    Post.belongsToMany(Tag, { through: 'PostTags' });
    Tag.belongsToMany(Post, { through: 'PostTags' });
    await sequelize.authenticate();
    out('version', typeof (await sequelize.databaseVersion()));
    await sequelize.drop({});
    await sequelize.sync({ force: true });
    await sequelize.sync({ alter: true });
    await sequelize.sync({ alter: true });
    const qi = sequelize.getQueryInterface();
    out('tables', (await qi.showAllTables()).sort());
    const desc = await qi.describeTable('Users');
    out('describe', Object.keys(desc).sort().map(k => [k, desc[k].type, desc[k].allowNull, desc[k].primaryKey, String(desc[k].defaultValue)]));
    const idx = await qi.showIndex('Users');
    out('indexes', idx.map(i => [i.name, i.unique, i.primary, i.fields.map(f => f.attribute)]).sort());
    const fks = await qi.getForeignKeyReferencesForTable('Posts');
    out('fks', fks.map(f => [f.columnName, f.referencedTableName, f.referencedColumnName]));
    const u = await User.create({ name: 'ann', email: 'a@x.io', age: 30, score: '12.50', ratio: 0.5, dbl: 1.25, big: '9007199254740993', bio: 'hi', born: '1990-02-03', meta: { a: 1, b: [1, 2] }, js: { x: 'y' }, tags: ['p', 'q'], role: 'admin', blob: Buffer.from([1, 2, 3]) });
    out('created', u.id, typeof u.uuid, u.active);
    await User.bulkCreate([{ name: 'bob', age: 20 }, { name: 'cy', age: 40, role: 'guest' }, { name: 'dee', age: 40, tags: [] }]);
    try { await User.create({ name: 'ann' }); } catch (e) { out('dup', e.name, e.errors && e.errors.map(x => [x.path, x.value])); }
    const all = await User.findAll({ order: [['id', 'ASC']], attributes: { exclude: ['uuid', 'createdAt', 'updatedAt'] } });
    out('all', all.map(x => x.toJSON()));
    out('where', (await User.findAll({ where: { age: { [Op.gte]: 30 }, name: { [Op.like]: '%n%' } } })).map(x => x.name));
    out('in', (await User.findAll({ where: { name: { [Op.in]: ['bob', 'cy'] } }, order: ['name'] })).map(x => x.name));
    out('json', (await User.findAll({ where: { meta: { a: 1 } } })).map(x => x.name));
    out('jsonpath', (await User.findAll({ where: { 'meta.b': { [Op.ne]: null } } })).map(x => x.name));
    out('contains', (await User.findAll({ where: { tags: { [Op.contains]: ['p'] } } })).map(x => x.name));
    out('overlap', (await User.findAll({ where: { tags: { [Op.overlap]: ['q', 'z'] } } })).map(x => x.name));
    out('iLike', (await User.findAll({ where: { name: { [Op.iLike]: 'A%' } } })).map(x => x.name));
    out('count', await User.count(), await User.count({ where: { role: 'guest' } }));
    out('agg', await User.max('age'), await User.min('age'), await User.sum('age'));
    out('group', (await User.findAll({ attributes: ['age', [sequelize.fn('COUNT', sequelize.col('id')), 'n']], group: ['age'], order: [['age', 'ASC']], raw: true })));
    const p1 = await Post.create({ title: 't1', body: 'b', UserId: u.id });
    const p2 = await Post.create({ title: 't2', body: 'c', UserId: u.id });
    const t1 = await Tag.create({ label: 'red' }); const t2 = await Tag.create({ label: 'blue' });
    await p1.addTags([t1, t2]); await p2.addTag(t1);
    const withPosts = await User.findOne({ where: { id: u.id }, include: [{ model: Post, include: [Tag] }], order: [[Post, 'id', 'ASC'], [Post, Tag, 'label', 'ASC']] });
    out('include', withPosts.Posts.map(p => [p.title, p.Tags.map(t => t.label)]));
    out('page', (await User.findAndCountAll({ limit: 2, offset: 1, order: [['id', 'ASC']] })).rows.map(x => x.name));
    await p2.destroy();
    out('paranoid', (await Post.findAll()).length, (await Post.findAll({ paranoid: false })).length);
    await User.update({ age: sequelize.literal('age + 1') }, { where: { name: 'bob' } });
    await User.increment('age', { by: 2, where: { name: 'cy' } });
    out('updated', (await User.findAll({ where: { name: ['bob', 'cy'] }, order: ['name'] })).map(x => [x.name, x.age]));
    const [up, created] = await User.upsert({ id: 2, name: 'bob', age: 99 });
    out('upsert', up.age, created);
    await sequelize.transaction(async (t) => {
      await User.create({ name: 'tx1' }, { transaction: t });
      const x = await User.findOne({ where: { name: 'bob' }, lock: t.LOCK.UPDATE, transaction: t });
      x.age = 5; await x.save({ transaction: t });
    });
    try {
      await sequelize.transaction(async (t) => { await User.create({ name: 'tx2' }, { transaction: t }); throw new Error('rollback'); });
    } catch (e) { out('rolled', e.message); }
    out('after tx', (await User.findAll({ where: { name: { [Op.startsWith]: 'tx' } } })).map(x => x.name));
    const sp = await sequelize.transaction();
    await User.create({ name: 'sp1' }, { transaction: sp });
    const inner = await sequelize.transaction({ transaction: sp });
    await User.create({ name: 'sp2' }, { transaction: inner });
    await inner.rollback();
    await sp.commit();
    out('savepoint', (await User.findAll({ where: { name: { [Op.startsWith]: 'sp' } } })).map(x => x.name));
    await u.destroy();
    out('cascade', await Post.count({ paranoid: false }));
    await qi.addColumn('Users', 'nick', { type: DataTypes.STRING, defaultValue: 'n' });
    await qi.renameColumn('Users', 'nick', 'nickname');
    await qi.changeColumn('Users', 'nickname', { type: DataTypes.TEXT, allowNull: true });
    await qi.addIndex('Users', ['nickname'], { name: 'nick_idx', unique: false });
    await qi.removeIndex('Users', 'nick_idx');
    await qi.addConstraint('Users', { fields: ['age'], type: 'check', where: { age: { [Op.gte]: 0 } }, name: 'age_nonneg' });
    try { await User.create({ name: 'neg', age: -1 }); } catch (e) { out('check', e.name, e.parent && e.parent.code); }
    await qi.removeConstraint('Users', 'age_nonneg');
    await qi.removeColumn('Users', 'nickname');
    await qi.renameTable('Tags', 'Labels'); await qi.renameTable('Labels', 'Tags');
    const [rows] = await sequelize.query('SELECT name FROM "Users" WHERE age > :a ORDER BY name', { replacements: { a: 10 } });
    out('raw', rows);
    const r2 = await sequelize.query('SELECT $1::int + 1 AS v', { bind: [41], type: sequelize.QueryTypes.SELECT });
    out('bind', r2);
    if (process.argv[3] === 'true') {
      // One connection, so that the session's synchronous_commit applies to its inserts.
      const one = new Sequelize(url, { logging: false, pool: { max: 1 } });
      await edSurface((sql) => one.query(sql, { type: one.QueryTypes.SELECT }), (n) => `INSERT INTO "Tags" (label) VALUES ('${n}')`);
      await one.close();
    }
    await sequelize.drop({});
    out('dropped', (await qi.showAllTables()).length);
    out('ok');
  } catch (e) {
    console.error(e.stack); out("FAIL", e.name, e.message, e.parent && e.parent.code, e.sql || (e.parent && e.parent.sql));
    console.error(log.slice(-5).join('\n'));
    process.exitCode = 1;
  }
  await sequelize.close();
})();
