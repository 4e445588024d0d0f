// The ED surface as an application uses it through its driver: a fast transaction (commit
// acknowledged before it is durable), its status, a wait for its durability point, and a
// safe one (acknowledged once durable). `query(sql)` runs one statement and returns its rows.
const assert = require('node:assert/strict');

module.exports = async function edSurface(query, insertSql) {
  await query('SET synchronous_commit = off');
  await query(insertSql('fast'));
  let [{ t }] = await query('SELECT kiln_last_txid() AS t');
  const [{ s }] = await query(`SELECT kiln_txn_status('${t}') AS s`);
  assert.ok(['committed', 'durable'].includes(s), `a fast commit is committed or durable, not ${s}`);
  const [{ w }] = await query(`SELECT kiln_wait('${t}', 5000) AS w`);
  assert.equal(w, 'durable');
  await query('SET synchronous_commit = on');
  await query(insertSql('safe'));
  [{ t }] = await query('SELECT kiln_last_txid() AS t');
  const [{ d }] = await query(`SELECT kiln_txn_status('${t}') AS d`);
  assert.equal(d, 'durable', 'a safe commit is durable when acknowledged');
};
