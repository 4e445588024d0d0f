//! Row writes: INSERT (with ON CONFLICT), UPDATE, DELETE and SELECT … FOR UPDATE under row
//! locks, with index maintenance and constraint checks.

use std::cell::RefCell;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use kiln_engine::IsolationLevel;

use crate::bind::dml::Arbiters;
use crate::catalog::Table;
use crate::encoding::{decode_row, encode_key, encode_row};
use crate::error::{code, Result, SqlError};
use crate::exec::constraints::{key_text_named, names_of};
use crate::exec::select::*;
use crate::exec::triggers::{Cause, Event};
use crate::expr::{assign, Ctx, Env, Expr};
use crate::locks::LockMode;
use crate::pg::activity::{Activity, Wait};
use crate::plan::*;
use crate::style::Style;
use crate::types::Value;

use crate::bind::dml::*;
use crate::database::*;
use crate::session::*;

/// Row writes of one statement, with row locks and index maintenance.
pub(crate) struct Writer<'a> {
    pub(crate) db: &'a Database,
    pub(crate) ts: &'a mut TxnState,
    pub(crate) lock_timeout: Option<Duration>,
    pub(crate) interrupt: &'a AtomicBool,
    pub(crate) activity: &'a Activity,
    /// Limits of the statement's internal reads (a foreign key's referencing rows).
    pub(crate) limits: ExecLimits,
    /// Constraint enforcement's state for the statement.
    pub(crate) constraints: crate::exec::constraints::Constraints,
    /// The session's notices for the client.
    pub(crate) notices: &'a parking_lot::Mutex<Vec<crate::session::Notice>>,
    /// What a CASCADE dropped beyond the objects the statement names (`view v`,
    /// `constraint c on table t`), reported by [`Writer::report_cascade`].
    pub(crate) cascaded: Vec<String>,
    /// Triggers' bound programs and pending AFTER calls (`exec::triggers`).
    pub(crate) triggers: crate::exec::triggers::TriggerState,
    /// The session's temporary schema and tables, its process id (which names the schema)
    /// and the serial number of its transaction (`Session::txn_serial`).
    pub(crate) temps: &'a mut crate::exec::temp::Temps,
    pub(crate) pid: i32,
    pub(crate) txn_serial: u64,
    /// Whether a function ran a schema statement in this statement.
    pub(crate) routine_ddl: bool,
    /// How many running calls have reads around them that a function's schema statement
    /// could change under them (`Writer::call_alone`): none may run while any do.
    pub(crate) ddl_guard: u32,
}

impl Writer<'_> {
    /// Tells the client that an `IF [NOT] EXISTS` skipped its object (a NOTICE, as in
    /// PostgreSQL; `code` is the error's SQLSTATE the clause avoided, or 00000).
    pub(crate) fn skipping(&self, code: &'static str, message: String) {
        crate::session::raise_notice(
            self.notices,
            crate::session::Notice::new(code, format!("{message}, skipping")),
        );
    }

    /// A NOTICE for the client (SQLSTATE 00000).
    pub(crate) fn notice(&self, message: String) {
        crate::session::raise_notice(self.notices, crate::session::Notice::new("00000", message));
    }

    /// Records an object a CASCADE drops beyond those the statement names.
    pub(crate) fn cascade_to(&mut self, object: String) {
        self.cascaded.push(object);
    }

    /// Tells the client what CASCADE dropped: one NOTICE, naming the object or counting
    /// them with a DETAIL line each, as PostgreSQL reports it.
    pub(crate) fn report_cascade(&mut self) {
        let objects = std::mem::take(&mut self.cascaded);
        let notice = match objects.as_slice() {
            [] => return,
            [one] => crate::session::Notice::new("00000", format!("drop cascades to {one}")),
            many => {
                let mut n = crate::session::Notice::new(
                    "00000",
                    format!("drop cascades to {} other objects", many.len()),
                );
                let lines: Vec<String> =
                    many.iter().map(|o| format!("drop cascades to {o}")).collect();
                n.fields = n.fields.detail(lines.join("\n"));
                n
            }
        };
        crate::session::raise_notice(self.notices, notice);
    }
}

/// 2BP01 for dropping `object` (`table t`, `column c of table t`) while `dependents` depend
/// on it (a DETAIL line each, as PostgreSQL lists them), without CASCADE.
pub(crate) fn depended_on(object: &str, dependents: &[String]) -> SqlError {
    SqlError::new(
        code::DEPENDENT_OBJECTS,
        format!("cannot drop {object} because other objects depend on it"),
    )
    .detail(dependents.join("\n"))
    .hint("Use DROP ... CASCADE to drop the dependent objects too.")
}

/// 23505 for a new key `values` of the key parts named `parts` (columns or expressions).
pub(crate) fn unique_violation(
    table: &Table,
    what: &str,
    values: &[Value],
    parts: &[String],
) -> SqlError {
    SqlError::new(
        code::UNIQUE,
        format!("duplicate key value violates unique constraint \"{what}\""),
    )
    .detail(format!("Key {} already exists.", key_text_named(parts, values)))
    .constraint(&table.name, what)
}

/// 23505 for building unique index (or primary key) `name` over rows whose key parts
/// `parts` repeat `values`.
pub(crate) fn index_build_violation(
    table: &Table,
    name: &str,
    values: &[Value],
    parts: &[String],
) -> SqlError {
    SqlError::new(code::UNIQUE, format!("could not create unique index \"{name}\""))
        .detail(format!("Key {} is duplicated.", key_text_named(parts, values)))
        .constraint(&table.name, name)
}

/// Whether a joined row whose target part changed since it was read still satisfies the
/// conditions of the items joined to the target (inner joins: ON and WHERE; left joins:
/// WHERE).
fn rejoins(scan: &SelectPlan, row: &[Value], ctx: &Ctx) -> Result<bool> {
    for item in &scan.from[1..] {
        let on: &[Expr] = if item.join.outer() { &[] } else { &item.on };
        if !passes(on, row, ctx)? || !passes(&item.filters, row, ctx)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The command tag and, with RETURNING, its rows, for the rows a statement wrote.
pub(crate) fn returning_output(
    returning: Option<Returning>,
    rows: Vec<Vec<Value>>,
    verb: &str,
    ctx: &Ctx,
) -> Result<Output> {
    let tag = if verb == "INSERT" {
        format!("INSERT 0 {}", rows.len())
    } else {
        format!("{verb} {}", rows.len())
    };
    Ok(match returning {
        Some(r) => {
            let mut out = Vec::with_capacity(rows.len());
            for row in &rows {
                out.push(r.exprs.iter().map(|e| e.eval(row, ctx)).collect::<Result<Vec<_>>>()?);
            }
            Output::Rows { columns: r.columns, origins: r.origins, rows: out, tag }
        }
        None => Output::Command(tag),
    })
}

/// The RETURNING rows of `rows` (the rows themselves without RETURNING: only their number
/// is told).
fn returned(
    returning: Option<&Returning>,
    rows: Vec<Vec<Value>>,
    ctx: &Ctx,
) -> Result<Vec<Vec<Value>>> {
    let Some(r) = returning else { return Ok(rows) };
    rows.iter()
        .map(|row| r.exprs.iter().map(|e| e.eval(row, ctx)).collect::<Result<Vec<_>>>())
        .collect()
}

/// [`returning_output`] of a statement through a partitioned table, whose rows each
/// partition's statement already returned ([`returned`]).
fn partitioned_output(
    returning: Option<Returning>,
    rows: Vec<Vec<Value>>,
    verb: &str,
) -> Result<Output> {
    let tag = format!("{verb} {}", rows.len());
    Ok(match returning {
        Some(r) => Output::Rows { columns: r.columns, origins: r.origins, rows, tag },
        None => Output::Command(tag),
    })
}

impl Writer<'_> {
    pub(crate) fn lock(&mut self, table: u64, key: &[u8]) -> Result<()> {
        self.lock_in(table, key, LockMode::Exclusive)
    }

    /// Locks a row in `mode` until the commit point.
    pub(crate) fn lock_in(&mut self, table: u64, key: &[u8], mode: LockMode) -> Result<()> {
        self.activity.set_wait(Some(Wait::RowLock));
        let key = crate::locks::LockKey::new(table, key);
        let locked = self.ts.locks.lock(key, mode, self.lock_timeout, self.interrupt);
        self.activity.set_wait(None);
        locked
    }

    /// Each column's default, for rows COPY leaves it out of (and ON DELETE SET DEFAULT):
    /// the stored DEFAULT, or the next value of the column's sequence (`serial`, identity).
    pub(crate) fn defaults(&mut self, table: &Table, env: &dyn Env) -> Result<Vec<Option<Expr>>> {
        table
            .columns
            .iter()
            .map(|c| {
                if let Some(identity) = &c.identity {
                    return self.next_value(&table.database, &identity.sequence).map(Some);
                }
                let Some(d) = c.default_text() else { return Ok(None) };
                let mut planner = self.definition_planner(&table.database, env);
                crate::bind::dml::bind_default(&mut planner, d).map(Some)
            })
            .collect()
    }

    /// `nextval` of sequence `name`.
    fn next_value(&mut self, database: &str, name: &str) -> Result<Expr> {
        let seq = self.db.catalog.sequence_or_err(&mut self.ts.txn, database, name)?;
        Ok(Expr::Sequence(crate::expr::SeqFunc::NextVal, seq, vec![]))
    }

    pub(crate) fn primary_key(&mut self, table: &Table, row: &[Value]) -> Result<Vec<u8>> {
        if table.primary_key.is_empty() {
            let id = self.db.catalog.next_rowid(&mut self.ts.txn, table)?;
            return Ok(id.to_be_bytes().to_vec());
        }
        let vals: Vec<&Value> = table.primary_key.iter().map(|&c| &row[c]).collect();
        encode_key(&vals)
    }

    /// Checks types, NOT NULL, and fits values to their columns (text read in the session's
    /// `style`). A generated column is left to [`Self::generate`], which comes after.
    pub(crate) fn fit_row(table: &Table, row: Vec<Value>, style: Style) -> Result<Vec<Value>> {
        let mut out = Vec::with_capacity(row.len());
        for (v, c) in row.into_iter().zip(&table.columns) {
            let v = assign(v, c.ty, style).map_err(|e| {
                if e.code == code::DATATYPE_MISMATCH {
                    SqlError::new(
                        code::DATATYPE_MISMATCH,
                        format!(
                            "column \"{}\" is of type {} but expression is of another type",
                            c.name,
                            c.ty.sql_name()
                        ),
                    )
                } else {
                    e
                }
            })?;
            if v.is_null() && !c.nullable && c.generated.is_none() {
                return Err(not_null_violation(table, c));
            }
            out.push(v);
        }
        Ok(out)
    }

    /// Computes the generated columns of a fitted row from its other columns (after BEFORE
    /// triggers, before constraints, as PostgreSQL does), fitted to their types in turn.
    pub(crate) fn generate(
        &mut self,
        table: &Table,
        mut row: Vec<Value>,
        ctx: &Ctx,
    ) -> Result<Vec<Value>> {
        if table.columns.iter().all(|c| c.generated.is_none()) {
            return Ok(row);
        }
        for (i, e) in self.bound_generated(table, ctx.env)?.iter() {
            let c = &table.columns[*i];
            let v = assign(e.eval(&row, ctx)?, c.ty, ctx.env.style())?;
            if v.is_null() && !c.nullable {
                return Err(not_null_violation(table, c));
            }
            row[*i] = v;
        }
        Ok(row)
    }

    /// Inserts a row, already fitted to its columns ([`Self::fit_row`]). A key that holds
    /// another row already fails with 23505, unless it is one of `arbiters` (ON CONFLICT):
    /// then nothing is written and the other row's primary key is returned.
    pub(crate) fn insert_row(
        &mut self,
        table: &Table,
        row: Vec<Value>,
        arbiters: Option<&Arbiters>,
        ctx: &Ctx,
    ) -> Result<Inserted> {
        self.check_row(table, &row, ctx)?;
        let pk = self.primary_key(table, &row)?;
        let ks = table.keyspace();
        // The row is written with its key check in one step when nothing after the check can
        // make the statement skip this row: a failure past this point fails the statement
        // (and its transaction); only ON CONFLICT on a unique index must leave no trace.
        let written_early = arbiters.is_none() || !table.indexes.iter().any(|i| i.unique);
        // Arbiter indexes first: a conflict there decides, whatever other key the row would
        // also violate, as in PostgreSQL. A session inserting the same key waits here for
        // the one that did until it ends; under READ COMMITTED it then sees that row, as an
        // upsert in PostgreSQL does.
        for index in &table.indexes {
            if !(index.unique && arbiters.is_some_and(|a| a.index(index.id))) {
                continue;
            }
            let Some(entry) = self.index_entry(table, index, &row, &pk)? else { continue };
            if !entry.unique {
                continue;
            }
            self.lock(index.id, &entry.key)?;
            if self.ts.isolation == IsolationLevel::ReadCommitted {
                self.ts.txn.refresh_snapshot()?;
            }
            // (The row in the way may even have this row's primary key.)
            if let Some(existing) = self.ts.txn.get(&index.keyspace(), &entry.key)? {
                return Ok(Inserted::Conflict(existing));
            }
        }
        if !table.primary_key.is_empty() {
            self.lock(table.id, &pk)?;
            if self.ts.isolation == IsolationLevel::ReadCommitted {
                self.ts.txn.refresh_snapshot()?;
            }
            let exists = if written_early {
                !self.ts.txn.insert(&ks, &pk, &encode_row(&row))?
            } else {
                self.ts.txn.get(&ks, &pk)?.is_some()
            };
            if exists {
                if arbiters.is_some_and(Arbiters::primary) {
                    return Ok(Inserted::Conflict(pk));
                }
                let vals: Vec<Value> = table.primary_key.iter().map(|&c| row[c].clone()).collect();
                let name = table.pkey_name();
                let parts = names_of(table, &table.primary_key);
                return Err(unique_violation(table, &name, &vals, &parts));
            }
        }
        // Every unique entry is checked before any entry is written, so a row skipped for a
        // conflict leaves nothing behind.
        let mut entries = Vec::with_capacity(table.indexes.len());
        for index in &table.indexes {
            let Some(entry) = self.index_entry(table, index, &row, &pk)? else { continue };
            if entry.unique {
                let arbiter = arbiters.is_some_and(|a| a.index(index.id));
                if let Some(existing) = self.ts.txn.get(&index.keyspace(), &entry.key)? {
                    if existing != pk {
                        if arbiter {
                            return Ok(Inserted::Conflict(existing));
                        }
                        let parts = index.part_names(table);
                        return Err(unique_violation(table, &index.name, &entry.values, &parts));
                    }
                }
            }
            entries.push((index, entry));
        }
        for (index, entry) in entries {
            self.ts.txn.put(&index.keyspace(), &entry.key, &entry.value)?;
        }
        if table.primary_key.is_empty() || !written_early {
            self.ts.txn.put(&ks, &pk, &encode_row(&row))?;
        }
        if !table.foreign_keys.is_empty() {
            self.check_references(table, &row, None, ctx.env.style())?;
        }
        Ok(Inserted::Row(pk))
    }

    pub(crate) fn delete_row(&mut self, table: &Table, pk: &[u8], row: &[Value]) -> Result<()> {
        for index in &table.indexes {
            if let Some(entry) = self.index_entry(table, index, row, pk)? {
                self.ts.txn.delete(&index.keyspace(), &entry.key)?;
            }
        }
        self.ts.txn.delete(&table.keyspace(), pk)?;
        Ok(())
    }

    pub(crate) fn update_row(
        &mut self,
        table: &Table,
        pk: &[u8],
        old: &[Value],
        new: Vec<Value>,
        ctx: &Ctx,
    ) -> Result<Vec<Value>> {
        let new = Self::fit_row(table, new, ctx.env.style())?;
        let new = self.generate(table, new, ctx)?;
        self.check_row(table, &new, ctx)?;
        let pk_changed = table
            .primary_key
            .iter()
            .any(|&c| old[c].total_cmp(&new[c]) != std::cmp::Ordering::Equal);
        if pk_changed {
            self.delete_row(table, pk, old)?;
            // The new key is checked and written as an insert's, its references too.
            self.insert_row(table, new.clone(), None, ctx)?;
        } else {
            for index in &table.indexes {
                // An expression or a condition may read any column: its entries are
                // compared below.
                let changed = !index.is_plain()
                    || index
                        .columns
                        .iter()
                        .any(|&c| old[c].total_cmp(&new[c]) != std::cmp::Ordering::Equal);
                if !changed {
                    continue;
                }
                let old_entry = self.index_entry(table, index, old, pk)?;
                let entry = self.index_entry(table, index, &new, pk)?;
                if let Some(old_entry) = &old_entry {
                    if entry.as_ref().is_some_and(|e| e.key == old_entry.key) {
                        continue; // an expression or condition whose value did not change
                    }
                    self.ts.txn.delete(&index.keyspace(), &old_entry.key)?;
                }
                let Some(entry) = entry else { continue };
                if entry.unique {
                    if let Some(existing) = self.ts.txn.get(&index.keyspace(), &entry.key)? {
                        if existing != pk {
                            let parts = index.part_names(table);
                            return Err(unique_violation(
                                table,
                                &index.name,
                                &entry.values,
                                &parts,
                            ));
                        }
                    }
                }
                self.ts.txn.put(&index.keyspace(), &entry.key, &entry.value)?;
            }
            self.ts.txn.put(&table.keyspace(), pk, &encode_row(&new))?;
            if !table.foreign_keys.is_empty() {
                self.check_references(table, &new, Some(old), ctx.env.style())?;
            }
        }
        if !table.referenced_by.is_empty() {
            self.referenced_row_changed(table, old, Some(&new), ctx)?;
        }
        Ok(new)
    }

    /// Locks a row found by a scan and returns its newest version under READ COMMITTED
    /// (PostgreSQL's re-check after a concurrent update), or the snapshot's otherwise.
    /// `None` when it was deleted meanwhile or no longer matches.
    pub(crate) fn lock_current(
        &mut self,
        table: &Table,
        pk: &[u8],
        row: Vec<Value>,
        filters: &[Expr],
        mode: LockMode,
        ctx: &Ctx,
    ) -> Result<Option<Vec<Value>>> {
        self.lock_in(table.id, pk, mode)?;
        if self.ts.isolation != IsolationLevel::ReadCommitted {
            // A row a concurrent transaction changed after our snapshot cannot be updated
            // here (the commit would fail validation): say so now, as PostgreSQL does.
            if self.ts.txn.written_since_snapshot(&table.keyspace(), pk)? {
                return Err(SqlError::new(
                    code::SERIALIZATION,
                    "could not serialize access due to concurrent update",
                )
                .hint("The transaction might succeed if retried."));
            }
            return Ok(Some(row));
        }
        self.ts.txn.refresh_snapshot()?;
        let Some(raw) = self.ts.txn.get(&table.keyspace(), pk)? else { return Ok(None) };
        let current = decode_row(&raw, table.columns.len())?;
        if current != row {
            for f in filters {
                if !f.eval_bool(&current, ctx)? {
                    return Ok(None);
                }
            }
        }
        Ok(Some(current))
    }

    /// `SELECT … FOR UPDATE / FOR SHARE`: the rows of the first table are locked in ORDER BY
    /// order and, as PostgreSQL does, re-read after the lock: under READ COMMITTED a row that
    /// changed meanwhile is returned in its newest version if it still qualifies and skipped
    /// otherwise, and the next candidate is taken, until LIMIT rows are locked (so two
    /// workers taking `ORDER BY … LIMIT 1 FOR UPDATE` from a queue never get the same row);
    /// under REPEATABLE READ and SERIALIZABLE a concurrent change is 40001.
    pub(crate) fn select_for_update(
        &mut self,
        plan: &SelectPlan,
        mode: LockMode,
        ctx: &Ctx,
        limits: &ExecLimits,
    ) -> Result<Vec<Vec<Value>>> {
        if plan.grouping.is_some()
            || plan.having.is_some()
            || plan.distinct
            || !plan.distinct_on.is_empty()
        {
            return Err(SqlError::unsupported(
                "FOR UPDATE/FOR SHARE with DISTINCT, GROUP BY, HAVING or aggregate functions",
            ));
        }
        let Some(first) = plan.from.first() else {
            return Err(SqlError::unsupported("FOR UPDATE/FOR SHARE without a table"));
        };
        let Source::Table(table, _) = &first.source else {
            return Err(SqlError::unsupported(
                "FOR UPDATE/FOR SHARE on a subquery, function or VALUES",
            ));
        };
        let (table, width) = (table.clone(), first.width);
        debug_assert_eq!(first.offset, 0, "the first FROM item starts the joined row");
        let joined = {
            let cell = RefCell::new(&mut self.ts.txn);
            let exec = Exec::new(&cell, limits);
            let ctx = Ctx { runner: Some(&exec), ..*ctx };
            execute_from(plan, &cell, &ctx, limits)?
        };
        // Candidates in output order: (projected row, joined row, key).
        let mut candidates = Vec::with_capacity(joined.len());
        for (key, row) in joined {
            limits.check()?;
            let projected =
                plan.projection.iter().map(|e| e.eval(&row, ctx)).collect::<Result<Vec<_>>>()?;
            candidates.push((projected, row, key.expect("table rows have keys")));
        }
        let order = plan.order.clone();
        let mut sortable: Vec<Vec<Value>> = Vec::with_capacity(candidates.len());
        for (i, (projected, _, _)) in candidates.iter().enumerate() {
            let mut r = projected.clone();
            r.push(Value::Int(i as i64));
            sortable.push(r);
        }
        sort_rows(&mut sortable, &order, limits)?;
        let (offset, limit) = offset_limit(plan, ctx)?;
        let wanted = limit.map_or(usize::MAX, |l| l.saturating_add(offset));
        let mut out = Vec::new();
        for sorted in sortable {
            if out.len() >= wanted {
                break;
            }
            limits.check()?;
            let Some(Value::Int(i)) = sorted.last() else { unreachable!("pushed above") };
            let (_, row, key) = &candidates[*i as usize];
            let mine = row[..width].to_vec();
            let Some(current) = self.lock_current(&table, key, mine, &first.filters, mode, ctx)?
            else {
                continue;
            };
            let mut row = row.clone();
            row[..width].clone_from_slice(&current);
            // The other tables' rows are as read; the join conditions are checked again
            // against the newest version of this one.
            let mut still = true;
            for item in &plan.from[1..] {
                for c in item.on.iter().chain(&item.filters) {
                    if !c.eval_bool(&row, ctx)? {
                        still = false;
                    }
                }
            }
            if !still {
                continue;
            }
            out.push(
                plan.projection.iter().map(|e| e.eval(&row, ctx)).collect::<Result<Vec<_>>>()?,
            );
        }
        let visible = plan.columns.len();
        let mut rows: Vec<Vec<Value>> = out.into_iter().skip(offset).collect();
        for r in &mut rows {
            r.truncate(visible);
        }
        Ok(rows)
    }

    pub(crate) fn insert(
        &mut self,
        plan: InsertPlan,
        ctx: &Ctx,
        limits: &ExecLimits,
    ) -> Result<Output> {
        let table = plan.table.clone();
        let upserts = matches!(&plan.on_conflict, Some((_, Some(_))));
        let events: &[Event] =
            if upserts { &[Event::Insert, Event::Update] } else { &[Event::Insert] };
        for &event in events {
            self.statement_triggers(&table, event, true, ctx.env)?;
        }
        let before_insert = Self::has_row_triggers(&table, Event::Insert, true);
        // Rows written to a partitioned table go to the partition that holds their key;
        // rows written to a partition must lie within its bound.
        let router = match table.partitioning {
            Some(_) => Some(self.router(&table)?),
            None => None,
        };
        let own_check = match router {
            None => self.partition_check(&table)?,
            Some(_) => None,
        };
        let source_rows = {
            let cell = RefCell::new(&mut self.ts.txn);
            let exec = Exec::new(&cell, limits);
            let ctx = Ctx { runner: Some(&exec), ..*ctx };
            execute_select(&plan.source, &cell, &ctx, limits)?
        };
        let mut written_rows = Vec::new();
        // The rows this statement inserted or changed: DO UPDATE may not change one again.
        let mut touched: std::collections::HashSet<Vec<u8>> = Default::default();
        let arbiters = plan.on_conflict.as_ref().map(|(arbiters, _)| arbiters);
        let action = plan.on_conflict.as_ref().and_then(|(_, action)| action.as_ref());
        for src in source_rows {
            limits.check()?;
            let mut row: Vec<Option<Value>> = vec![None; table.columns.len()];
            for (v, t) in src.into_iter().zip(&plan.targets) {
                if let Some(t) = *t {
                    row[t] = Some(v);
                }
            }
            let mut full = Vec::with_capacity(row.len());
            for (i, v) in row.into_iter().enumerate() {
                full.push(match v {
                    Some(v) => v,
                    None => match &plan.defaults[i] {
                        Some(d) => d.eval(&[], ctx)?,
                        None => Value::Null,
                    },
                });
            }
            // BEFORE ROW triggers see the row with its defaults, and may change or skip it.
            let full = if before_insert {
                match self.before_row(&table, Event::Insert, Some(full), None, None, ctx.env)? {
                    Some(row) => row,
                    None => continue,
                }
            } else {
                full
            };
            // Fitted to the columns (a typmod's scale, a char's padding) before it is
            // written: RETURNING shows the row as stored.
            let full = Self::fit_row(&table, full, ctx.env.style())?;
            let full = self.generate(&table, full, ctx)?;
            let (target, full, leaf_arbiters) = match &router {
                Some(router) => {
                    let leaf = router.route(&full, ctx.env.style())?.clone();
                    let Some(full) = self.routed_row(&leaf, full, ctx)? else { continue };
                    let mapped =
                        arbiters.map(|a| crate::exec::partitions::arbiters_for(a, &table, &leaf));
                    (leaf, full, mapped)
                }
                None => {
                    if let Some(check) = &own_check {
                        check.check(&table, &full, ctx.env.style())?;
                    }
                    (table.clone(), full, None)
                }
            };
            let arbiters = leaf_arbiters.as_ref().or(arbiters);
            let written = match self.insert_row(&target, full.clone(), arbiters, ctx)? {
                Inserted::Row(pk) => {
                    if arbiters.is_some() {
                        touched.insert(pk);
                    }
                    self.after_row(
                        &target,
                        Event::Insert,
                        (Some(&full), None),
                        None,
                        Cause::Statement,
                    );
                    Some(full)
                }
                Inserted::Conflict(pk) => match action {
                    None => None,
                    Some((sets, cond)) => {
                        if touched.contains(&pk) {
                            return Err(SqlError::new(
                            code::CARDINALITY,
                            "ON CONFLICT DO UPDATE command cannot affect row a second time",
                        )
                        .hint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values."));
                        }
                        // The row in the way, locked and read in its newest version.
                        self.lock(target.id, &pk)?;
                        if self.ts.isolation == IsolationLevel::ReadCommitted {
                            self.ts.txn.refresh_snapshot()?;
                        }
                        let Some(raw) = self.ts.txn.get(&target.keyspace(), &pk)? else {
                            return Err(SqlError::new(
                                code::SERIALIZATION,
                                "could not serialize access due to concurrent delete",
                            ));
                        };
                        let existing = decode_row(&raw, target.columns.len())?;
                        let mut both = existing.clone();
                        both.extend(full.iter().cloned());
                        let go = match cond {
                            Some(c) => c.eval_bool(&both, ctx)?,
                            None => true,
                        };
                        if go {
                            let mut new = existing.clone();
                            for (c, e) in sets {
                                new[*c] = e.eval(&both, ctx)?;
                            }
                            let set: Vec<usize> = sets.iter().map(|(c, _)| *c).collect();
                            let new = if Self::has_row_triggers(&target, Event::Update, true) {
                                self.before_row(
                                    &target,
                                    Event::Update,
                                    Some(new),
                                    Some(&existing),
                                    Some(&set),
                                    ctx.env,
                                )?
                            } else {
                                Some(new)
                            };
                            match new {
                                Some(new) => {
                                    if target.partition_of.is_some() {
                                        self.check_partition(&target, &new, ctx)?;
                                    }
                                    let new = self.update_row(&target, &pk, &existing, new, ctx)?;
                                    touched.insert(self.primary_key(&target, &new)?);
                                    self.after_row(
                                        &target,
                                        Event::Update,
                                        (Some(&new), Some(&existing)),
                                        Some(&set),
                                        Cause::Statement,
                                    );
                                    Some(new)
                                }
                                None => None,
                            }
                        } else {
                            None
                        }
                    }
                },
            };
            if let Some(row) = written {
                written_rows.push(row);
            }
        }
        self.end_of_statement(&table, events, ctx.env)?;
        self.finish_constraints(ctx)?;
        returning_output(plan.returning, written_rows, "INSERT", ctx)
    }

    /// The rows an UPDATE or DELETE applies to: scanned, locked, and (under READ COMMITTED)
    /// re-read in their newest version; each with its primary key.
    pub(crate) fn target_rows(
        &mut self,
        table: &Table,
        scan: &SelectPlan,
        ctx: &Ctx,
        limits: &ExecLimits,
    ) -> Result<Vec<(Vec<u8>, Vec<Value>)>> {
        let filters = scan.from[0].filters.clone();
        let rows = {
            let cell = RefCell::new(&mut self.ts.txn);
            let exec = Exec::new(&cell, limits);
            let ctx = Ctx { runner: Some(&exec), ..*ctx };
            execute_from(scan, &cell, &ctx, limits)?
        };
        let width = table.columns.len();
        // With FROM / USING items a target row may join several of their rows: it changes
        // once, with the first.
        let mut done: std::collections::HashSet<Vec<u8>> = Default::default();
        let mut out = Vec::with_capacity(rows.len());
        for (pk, mut row) in rows {
            limits.check()?;
            let pk = pk.expect("table rows have keys");
            if done.contains(&pk) {
                continue;
            }
            let rest = row.split_off(width);
            let read = row.clone();
            let Some(mut current) =
                self.lock_current(table, &pk, row, &filters, LockMode::Exclusive, ctx)?
            else {
                continue;
            };
            current.extend(rest);
            // Changed since it was read (READ COMMITTED): the joined items' conditions must
            // still hold for the row as it is now.
            if current[..width] != read[..] && !rejoins(scan, &current, ctx)? {
                continue;
            }
            if scan.from.len() > 1 {
                done.insert(pk.clone());
            }
            out.push((pk, current));
        }
        Ok(out)
    }

    pub(crate) fn update(
        &mut self,
        plan: UpdatePlan,
        ctx: &Ctx,
        limits: &ExecLimits,
    ) -> Result<Output> {
        let table = plan.table.clone();
        self.statement_triggers(&table, Event::Update, true, ctx.env)?;
        let changed = match &plan.partitions {
            None => self.update_rows(&plan, None, ctx, limits)?,
            // Through a partitioned table: each leaf's rows; then the rows whose new key
            // left their partition (deleted there) are routed to the one that holds it.
            Some(parts) => {
                // Each row's RETURNING is its partition's statement's (`tableoid` differs).
                let mut changed = Vec::new();
                let mut moved = Vec::new();
                for part in parts {
                    let rows = self.update_rows(part, Some(&mut moved), ctx, limits)?;
                    changed.extend(returned(part.returning.as_ref(), rows, ctx)?);
                }
                if !moved.is_empty() {
                    let router = self.router(&table)?;
                    let width = table.columns.len();
                    for mut row in moved {
                        limits.check()?;
                        let rest = row.split_off(width);
                        let leaf = router.route(&row, ctx.env.style())?.clone();
                        let Some(mut row) = self.routed_row(&leaf, row, ctx)? else {
                            continue;
                        };
                        self.insert_row(&leaf, row.clone(), None, ctx)?;
                        let written = (Some(&row[..]), None);
                        self.after_row(&leaf, Event::Insert, written, None, Cause::Statement);
                        row.extend(rest);
                        let part = parts.iter().find(|p| p.table.id == leaf.id);
                        let returning = part.and_then(|p| p.returning.as_ref());
                        changed.extend(returned(returning, vec![row], ctx)?);
                    }
                }
                self.end_of_statement(&table, &[Event::Update], ctx.env)?;
                self.finish_constraints(ctx)?;
                return partitioned_output(plan.returning, changed, "UPDATE");
            }
        };
        self.end_of_statement(&table, &[Event::Update], ctx.env)?;
        self.finish_constraints(ctx)?;
        returning_output(plan.returning, changed, "UPDATE", ctx)
    }

    /// The rows of `plan`'s table the UPDATE changes, changed: each whole joined row (the
    /// table's columns first). With `moved` (an UPDATE through a partitioned table), a row
    /// whose new key its partition does not hold is deleted and left there to be routed.
    fn update_rows(
        &mut self,
        plan: &UpdatePlan,
        mut moved: Option<&mut Vec<Vec<Value>>>,
        ctx: &Ctx,
        limits: &ExecLimits,
    ) -> Result<Vec<Vec<Value>>> {
        let table = plan.table.clone();
        let mut changed = Vec::new();
        let width = table.columns.len();
        let before = Self::has_row_triggers(&table, Event::Update, true);
        let bound = self.partition_check(&table)?;
        let set: Vec<usize> = plan.sets.iter().map(|(c, _)| *c).collect();
        for (pk, mut joined) in self.target_rows(&table, &plan.scan, ctx, limits)? {
            let mut new = joined[..width].to_vec();
            for (c, e) in &plan.sets {
                new[*c] = e.eval(&joined, ctx)?;
            }
            let rest = joined.split_off(width);
            let new = if before {
                let old = Some(&joined[..]);
                match self.before_row(&table, Event::Update, Some(new), old, Some(&set), ctx.env)? {
                    Some(new) => new,
                    None => continue,
                }
            } else {
                new
            };
            if let Some(check) = &bound {
                let fitted = Self::fit_row(&table, new.clone(), ctx.env.style())?;
                let fitted = self.generate(&table, fitted, ctx)?;
                if !check.holds(&fitted) {
                    let Some(moved) = moved.as_deref_mut() else {
                        check.check(&table, &fitted, ctx.env.style())?;
                        unreachable!("the check failed");
                    };
                    // Row movement: deleted here (its DELETE triggers fire), inserted
                    // where its key belongs once every partition's rows are changed.
                    if Self::has_row_triggers(&table, Event::Delete, true)
                        && self
                            .before_row(&table, Event::Delete, None, Some(&joined), None, ctx.env)?
                            .is_none()
                    {
                        continue;
                    }
                    self.delete_row(&table, &pk, &joined)?;
                    if !table.referenced_by.is_empty() {
                        self.referenced_row_changed(&table, &joined, None, ctx)?;
                    }
                    self.after_row(
                        &table,
                        Event::Delete,
                        (None, Some(&joined)),
                        None,
                        Cause::Statement,
                    );
                    let mut row = fitted;
                    row.extend(rest);
                    moved.push(row);
                    continue;
                }
            }
            let mut row = self.update_row(&table, &pk, &joined, new, ctx)?;
            self.after_row(
                &table,
                Event::Update,
                (Some(&row), Some(&joined)),
                Some(&set),
                Cause::Statement,
            );
            row.extend(rest); // RETURNING may read the FROM items' columns
            changed.push(row);
        }
        Ok(changed)
    }

    pub(crate) fn delete(
        &mut self,
        plan: DeletePlan,
        ctx: &Ctx,
        limits: &ExecLimits,
    ) -> Result<Output> {
        let table = plan.table.clone();
        self.statement_triggers(&table, Event::Delete, true, ctx.env)?;
        let deleted = match &plan.partitions {
            None => self.delete_rows(&plan, ctx, limits)?,
            Some(parts) => {
                let mut deleted = Vec::new();
                for part in parts {
                    let rows = self.delete_rows(part, ctx, limits)?;
                    deleted.extend(returned(part.returning.as_ref(), rows, ctx)?);
                }
                self.end_of_statement(&table, &[Event::Delete], ctx.env)?;
                self.finish_constraints(ctx)?;
                return partitioned_output(plan.returning, deleted, "DELETE");
            }
        };
        self.end_of_statement(&table, &[Event::Delete], ctx.env)?;
        self.finish_constraints(ctx)?;
        returning_output(plan.returning, deleted, "DELETE", ctx)
    }

    /// The rows of `plan`'s table the DELETE removes, removed: each whole joined row.
    fn delete_rows(
        &mut self,
        plan: &DeletePlan,
        ctx: &Ctx,
        limits: &ExecLimits,
    ) -> Result<Vec<Vec<Value>>> {
        let table = plan.table.clone();
        let mut deleted = Vec::new();
        let width = table.columns.len();
        let before = Self::has_row_triggers(&table, Event::Delete, true);
        for (pk, joined) in self.target_rows(&table, &plan.scan, ctx, limits)? {
            let current = &joined[..width];
            if before
                && self
                    .before_row(&table, Event::Delete, None, Some(current), None, ctx.env)?
                    .is_none()
            {
                continue;
            }
            self.delete_row(&table, &pk, current)?;
            if !table.referenced_by.is_empty() {
                self.referenced_row_changed(&table, current, None, ctx)?;
            }
            self.after_row(&table, Event::Delete, (None, Some(current)), None, Cause::Statement);
            deleted.push(joined); // RETURNING may read the USING items' columns
        }
        Ok(deleted)
    }

    /// Deletes every row of `table` and its indexes: one engine clear per keyspace, not a
    /// delete per row.
    pub(crate) fn truncate(&mut self, table: &Table) -> Result<()> {
        self.ts.txn.clear(&table.keyspace())?;
        for index in &table.indexes {
            self.ts.txn.clear(&index.keyspace())?;
        }
        Ok(())
    }
}

/// What inserting a row did.
pub(crate) enum Inserted {
    /// The row is written, under this primary key.
    Row(Vec<u8>),
    /// An ON CONFLICT arbiter key holds another row, whose primary key this is; nothing
    /// was written.
    Conflict(Vec<u8>),
}

/// 23502 for a NULL in NOT NULL column `c` of `table`.
fn not_null_violation(table: &Table, c: &crate::catalog::Column) -> SqlError {
    SqlError::new(
        code::NOT_NULL,
        format!(
            "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
            c.name,
            crate::catalog::unqualified(&table.name)
        ),
    )
    .column(&table.name, &c.name)
}
