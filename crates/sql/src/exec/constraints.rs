//! CHECK and FOREIGN KEY constraints, enforced on every row write.
//!
//! **CHECK**: the condition is bound once per table definition (cached in the catalog) and
//! evaluated on each new row version; false fails the statement with 23514, NULL passes.
//!
//! **FOREIGN KEY** (MATCH SIMPLE), as PostgreSQL enforces it, so that no committed state
//! violates a constraint whatever runs concurrently:
//!
//! - A row written with a key **references** a row: the referenced row is locked *shared*
//!   (many writers may reference one row at once) and read — under READ COMMITTED in its
//!   newest committed version, under REPEATABLE READ and SERIALIZABLE in the snapshot, with
//!   40001 when it changed since. The lock is held to the commit point, so the row cannot be
//!   deleted or its key changed before the referencing row is visible.
//! - A referenced row that is **deleted or has its key updated** is already locked
//!   *exclusively* by that statement; the referencing rows are then looked for in the newest
//!   committed data (every transaction that referenced the row committed before the lock was
//!   granted), and the constraint's action applies: NO ACTION fails at the end of the
//!   statement if references remain and the key is gone, RESTRICT fails at once, CASCADE
//!   deletes or re-keys them, SET NULL / SET DEFAULT rewrite them. A referencing row the
//!   transaction's snapshot cannot see is 40001 under REPEATABLE READ and SERIALIZABLE.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use kiln_engine::IsolationLevel;
use sqlparser::ast;

use crate::bind::dml::table_scope;
use crate::bind::{Planner, Scope, SystemTables};
use crate::catalog::{beside, unqualified};
use crate::catalog::{BoundCheck, FkAction, ForeignKey, Table};
use crate::ed::SessionEnv;
use crate::encoding::{decode_row, encode_key};
use crate::error::{code, Result, SqlError};
use crate::exec::select::*;
use crate::exec::triggers::{Cause, Event};
use crate::exec::write::*;
use crate::expr::{assign, BinOp, Ctx, Env, Expr};
use crate::locks::LockMode;
use crate::plan::access::choose_access;
use crate::plan::Relation;
use crate::plan::*;
use crate::session::{session_env, session_writer, Output, Session, TxnState};
use crate::types::{now_micros, DataType, Value};

/// No system tables: a CHECK condition reads only its row.
pub(crate) struct NoSystemTables;

impl SystemTables for NoSystemTables {
    fn system_table(
        &self,
        _txn: &mut kiln_engine::Transaction,
        _name: &str,
    ) -> Result<Option<Relation>> {
        Ok(None)
    }
}

/// Binds a CHECK condition over `table`'s row: boolean, no subqueries, aggregates,
/// parameters or sequence functions.
pub(crate) fn bind_check(planner: &mut Planner, table: &Table, e: &ast::Expr) -> Result<Expr> {
    let scope = table_scope(table, &table.name);
    let (bound, ty) = planner.expr(e, &scope, false)?;
    let mut refused = None;
    bound.walk(&mut |x| match x {
        Expr::Subquery(..) | Expr::InValues(..) => refused = Some("subquery"),
        Expr::Sequence(..) => refused = Some("sequence functions"),
        Expr::Routine(..) => refused = Some("functions made with CREATE FUNCTION"),
        Expr::Param(_) => refused = Some("parameters"),
        _ => {}
    });
    if let Some(what) = refused {
        return Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            format!("cannot use {what} in check constraint"),
        ));
    }
    if !matches!(ty, DataType::Bool | DataType::Unknown) {
        return Err(SqlError::new(
            code::DATATYPE_MISMATCH,
            format!("argument of CHECK must be type boolean, not type {}", ty.sql_name()),
        ));
    }
    Ok(bound)
}

/// Binds the generation expression of column `column` of `table` over the row, as
/// PostgreSQL allows one: immutable, without subqueries or aggregates, reading no generated
/// column; its value converted to the column's type.
pub(crate) fn bind_generation(
    planner: &mut Planner,
    table: &Table,
    column: usize,
    e: &ast::Expr,
) -> Result<Expr> {
    let scope = table_scope(table, &table.name);
    let (bound, ty) = planner.expr(e, &scope, false)?;
    let mut generated = None;
    bound.walk(&mut |x| {
        if let Expr::Column(c) = x {
            if table.columns[*c].generated.is_some() || *c == column {
                generated.get_or_insert(*c);
            }
        }
    });
    if let Some(c) = generated {
        return Err(SqlError::new(
            code::INVALID_OBJECT_DEFINITION,
            format!(
                "cannot use generated column \"{}\" in column generation expression",
                table.columns[c].name
            ),
        )
        .detail("A generated column cannot reference another generated column."));
    }
    crate::exec::indexes::check_immutable(&bound, table, "column generation expression").map_err(
        |e| {
            if e.code == code::INVALID_OBJECT_DEFINITION {
                SqlError::new(
                    code::INVALID_OBJECT_DEFINITION,
                    "generation expression is not immutable",
                )
            } else {
                e
            }
        },
    )?;
    Ok(planner.coerce(bound, ty, table.columns[column].ty)?.0)
}

/// Renders key values as PostgreSQL's DETAIL does: `(a, b)=(1, x)`.
pub(crate) fn key_text(table: &Table, cols: &[usize], values: &[Value]) -> String {
    key_text_named(&names_of(table, cols), values)
}

/// The names of columns `cols` of `table`, quoted where SQL needs it (as a key's DETAIL
/// writes them: `("Id")=(4)`).
pub(crate) fn names_of(table: &Table, cols: &[usize]) -> Vec<String> {
    cols.iter().map(|&c| crate::bind::quote_ident(&table.columns[c].name)).collect()
}

/// [`key_text`] of key parts by their names (an index's expressions).
pub(crate) fn key_text_named(names: &[String], values: &[Value]) -> String {
    let vals = values
        .iter()
        .map(|v| v.to_text(DataType::Text).unwrap_or_else(|| "null".into()))
        .collect::<Vec<_>>();
    format!("({})=({})", names.join(", "), vals.join(", "))
}

/// 23503 for a referenced row deleted or re-keyed while references remain in table
/// `child` (named as its constraint's owner: a partition's copy is its root's).
fn still_referenced(parent: &Table, child: &str, fk: &ForeignKey, key: &[Value]) -> SqlError {
    SqlError::new(
        code::FOREIGN_KEY,
        format!(
            "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"",
            unqualified(&parent.name),
            fk.name,
            unqualified(child)
        ),
    )
    .detail(format!(
        "Key {} is still referenced from table \"{}\".",
        key_text(parent, &fk.ref_columns, key),
        unqualified(child)
    ))
    .constraint(child, &fk.name)
}

/// 23503 for a row of `table` whose foreign key `fk` holds `values`, which no row of table
/// `parent` has.
fn not_present(table: &Table, fk: &ForeignKey, values: &[Value], parent: &str) -> SqlError {
    SqlError::new(
        code::FOREIGN_KEY,
        format!(
            "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
            unqualified(&table.name),
            fk.name
        ),
    )
    .detail(format!(
        "Key {} is not present in table \"{}\".",
        key_text(table, &fk.columns, values),
        unqualified(parent)
    ))
    .constraint(&table.name, &fk.name)
}

/// A foreign-key check put off to the commit (its constraint is deferred).
#[derive(Debug, Clone)]
pub(crate) enum PendingCheck {
    /// A row of `child` was written with `key` in foreign key `fk`, and no row had it then.
    References { database: String, child: String, fk: String, key: Vec<Value> },
    /// A key `key` that foreign key `fk` of `child` references (NO ACTION) went away from
    /// the referenced table.
    Referenced { database: String, child: String, fk: String, key: Vec<Value> },
}

impl PendingCheck {
    fn constraint(&self) -> &str {
        match self {
            PendingCheck::References { fk, .. } | PendingCheck::Referenced { fk, .. } => fk,
        }
    }
}

/// A transaction's SET CONSTRAINTS: for all deferrable constraints, then by name (what was
/// set last wins).
#[derive(Debug, Clone, Default)]
pub(crate) struct ConstraintModes {
    all: Option<bool>,
    named: HashMap<String, bool>,
}

impl ConstraintModes {
    /// Whether foreign key `fk`'s checks wait for the commit.
    pub(crate) fn deferred(&self, fk: &ForeignKey) -> bool {
        fk.deferrable
            && self.named.get(&fk.name).copied().or(self.all).unwrap_or(fk.initially_deferred)
    }

    /// SET CONSTRAINTS {ALL | names} {DEFERRED | IMMEDIATE}.
    pub(crate) fn set(&mut self, names: Option<&[String]>, deferred: bool) {
        match names {
            None => {
                self.all = Some(deferred);
                self.named.clear();
            }
            Some(names) => {
                for n in names {
                    self.named.insert(n.clone(), deferred);
                }
            }
        }
    }
}

/// A NO ACTION check left for the end of the statement: a referenced key went away.
pub(crate) struct DeferredCheck {
    parent: Arc<Table>,
    child: Arc<Table>,
    fk: ForeignKey,
    key: Vec<Value>,
}

/// Per-statement state of constraint enforcement.
#[derive(Default)]
pub(crate) struct Constraints {
    /// Tables read by name during the statement (referenced and referencing tables).
    tables: HashMap<String, Arc<Table>>,
    /// NO ACTION checks to run when the statement's rows are written.
    deferred: Vec<DeferredCheck>,
}

impl Writer<'_> {
    pub(crate) fn interrupted(&self) -> Result<()> {
        if self.interrupt.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(SqlError::new(
                code::QUERY_CANCELED,
                "canceling statement due to user request or statement timeout",
            ));
        }
        Ok(())
    }

    /// The table foreign key `fk` of `child` belongs to, as errors name it: for a
    /// partition's copy of its parent's key, the topmost ancestor that has it.
    fn constraint_owner(&mut self, child: &Table, fk: &ForeignKey) -> Result<String> {
        let mut owner = child.name.clone();
        let mut of = child.partition_of.clone();
        let mut depth = 0;
        while let Some(o) = of {
            depth += 1;
            if depth > crate::partition::PARTITION_DEPTH_MAX {
                break;
            }
            let up = self.related_table(&child.database, &o.parent)?;
            if !up.foreign_keys.iter().any(|f| f.name == fk.name && f.same_definition(fk)) {
                break;
            }
            owner = up.name.clone();
            of = up.partition_of.clone();
        }
        Ok(owner)
    }

    /// A table of the current database, read once per statement.
    fn related_table(&mut self, database: &str, name: &str) -> Result<Arc<Table>> {
        if let Some(t) = self.constraints.tables.get(name) {
            return Ok(t.clone());
        }
        let t = self.db.catalog.table_or_err(&mut self.ts.txn, database, name)?;
        self.constraints.tables.insert(name.to_string(), t.clone());
        Ok(t)
    }

    /// The CHECK constraints of `table`, bound (once per definition): those of its columns'
    /// domains first, column by column, then its own.
    fn bound_checks(&mut self, table: &Table, env: &dyn Env) -> Result<Arc<Vec<BoundCheck>>> {
        if let Some(bound) = self.db.catalog.bound_checks(table) {
            return Ok(bound);
        }
        let mut out = Vec::with_capacity(table.checks.len());
        for (i, c) in table.columns.iter().enumerate() {
            let Some(domain) = &c.domain else { continue };
            let mut planner = self.definition_planner(&table.database, env);
            let bound = crate::domains::bind(&mut planner, domain)?;
            for (name, cond) in bound.checks {
                out.push(BoundCheck {
                    name,
                    expr: crate::domains::on_column(cond, i)?,
                    domain: Some(domain.name.clone()),
                });
            }
        }
        for check in &table.checks {
            let parsed = crate::parse::parse_expr(&check.expr).map_err(|e| {
                SqlError::new(
                    code::DATA_CORRUPTED,
                    format!("stored CHECK {} does not parse: {e}", check.expr),
                )
            })?;
            let mut planner = self.definition_planner(&table.database, env);
            let expr = bind_check(&mut planner, table, &parsed)?;
            out.push(BoundCheck { name: check.name.clone(), expr, domain: None });
        }
        let bound = Arc::new(out);
        self.db.catalog.remember_checks(table, bound.clone());
        Ok(bound)
    }

    /// The generation expressions of `table`'s generated columns, bound (once per
    /// definition).
    pub(crate) fn bound_generated(
        &mut self,
        table: &Table,
        env: &dyn Env,
    ) -> Result<Arc<Vec<(usize, Expr)>>> {
        if let Some(bound) = self.db.catalog.bound_generated(table) {
            return Ok(bound);
        }
        let mut out = Vec::new();
        for (i, c) in table.columns.iter().enumerate() {
            let Some(text) = &c.generated else { continue };
            let parsed = crate::parse::parse_expr(text).map_err(|e| {
                SqlError::new(
                    code::DATA_CORRUPTED,
                    format!("stored generation expression {text} does not parse: {e}"),
                )
            })?;
            let mut planner = self.definition_planner(&table.database, env);
            out.push((i, bind_generation(&mut planner, table, i, &parsed)?));
        }
        let bound = Arc::new(out);
        self.db.catalog.remember_generated(table, bound.clone());
        Ok(bound)
    }

    /// Fails with 23514 when a CHECK constraint of `table` or of one of its columns' domains
    /// is false for `row`, 23502 when a column of a NOT NULL domain is NULL.
    pub(crate) fn check_row(&mut self, table: &Table, row: &[Value], ctx: &Ctx) -> Result<()> {
        let mut domains = false;
        for (c, v) in table.columns.iter().zip(row) {
            if let Some(d) = &c.domain {
                domains = true;
                if d.not_null && v.is_null() {
                    return Err(crate::domains::null_violation(&d.name));
                }
            }
        }
        if table.checks.is_empty() && !domains {
            return Ok(());
        }
        for check in self.bound_checks(table, ctx.env)?.iter() {
            let (name, cond) = (&check.name, &check.expr);
            if cond.eval(row, ctx)?.as_bool()? == Some(false) {
                if let Some(domain) = &check.domain {
                    return Err(crate::domains::check_violation(domain, name));
                }
                let vals = row
                    .iter()
                    .map(|v| {
                        v.to_text_in(DataType::Text, ctx.env.style())
                            .unwrap_or_else(|| "null".into())
                    })
                    .collect::<Vec<_>>();
                return Err(SqlError::new(
                    code::CHECK,
                    format!(
                        "new row for relation \"{}\" violates check constraint \"{name}\"",
                        unqualified(&table.name)
                    ),
                )
                .detail(format!("Failing row contains ({}).", vals.join(", ")))
                .constraint(&table.name, name));
            }
        }
        Ok(())
    }

    /// Fails with 23503 unless every foreign key of `row` (whose key changed from `old`, for
    /// an update) references an existing row; locks each referenced row shared.
    pub(crate) fn check_references(
        &mut self,
        table: &Table,
        row: &[Value],
        old: Option<&[Value]>,
        style: crate::style::Style,
    ) -> Result<()> {
        for fk in &table.foreign_keys {
            let values: Vec<Value> = fk.columns.iter().map(|&c| row[c].clone()).collect();
            if values.iter().any(Value::is_null) {
                continue; // MATCH SIMPLE: a NULL in the key references nothing
            }
            if let Some(old) = old {
                if fk.columns.iter().all(|&c| old[c].total_cmp(&row[c]) == Ordering::Equal) {
                    continue;
                }
            }
            let parent = self.related_table(&table.database, &fk.table)?;
            if self.referenced_row(&parent, &fk.ref_columns, &values, style)?.is_none() {
                if self.ts.modes.deferred(fk) {
                    self.ts.pending.push(PendingCheck::References {
                        database: table.database.clone(),
                        child: table.name.clone(),
                        fk: fk.name.clone(),
                        key: values,
                    });
                    continue;
                }
                return Err(not_present(table, fk, &values, &parent.name));
            }
        }
        Ok(())
    }

    /// Runs the foreign-key checks put off to the commit (all of them, or with `immediate`
    /// those SET CONSTRAINTS has just made immediate): a referenced row must exist (it is
    /// locked shared), or the rows that reference a key that went away must be gone.
    pub(crate) fn run_pending(&mut self, immediate: bool, ctx: &Ctx) -> Result<()> {
        let pending = std::mem::take(&mut self.ts.pending);
        let mut rest = pending.into_iter();
        let result = self.run_checks(&mut rest, immediate, ctx);
        // Checks not done (one failed, or an error came first) stay pending: a savepoint
        // may roll the failure back, and the commit checks them again.
        self.ts.pending.extend(rest);
        result
    }

    fn run_checks(
        &mut self,
        checks: &mut std::vec::IntoIter<PendingCheck>,
        immediate: bool,
        ctx: &Ctx,
    ) -> Result<()> {
        // A check leaves the list only once it passed (or stays deferred).
        while let Some(check) = checks.as_slice().first().cloned() {
            self.interrupted()?;
            self.run_check(check, immediate, ctx)?;
            checks.next();
        }
        Ok(())
    }

    /// One pending check; one still deferred goes back on the transaction's list.
    fn run_check(&mut self, check: PendingCheck, immediate: bool, ctx: &Ctx) -> Result<()> {
        let (database, child_name) = match &check {
            PendingCheck::References { database, child, .. }
            | PendingCheck::Referenced { database, child, .. } => (database, child),
        };
        let Some(child) = self.db.catalog.table(&mut self.ts.txn, database, child_name)? else {
            return Ok(()); // the referencing table went, and the constraint with it
        };
        let Some(fk) = child.foreign_keys.iter().find(|f| f.name == check.constraint()).cloned()
        else {
            return Ok(());
        };
        if immediate && self.ts.modes.deferred(&fk) {
            self.ts.pending.push(check);
            return Ok(());
        }
        let Some(parent) = self.db.catalog.table(&mut self.ts.txn, database, &fk.table)? else {
            return Ok(());
        };
        match &check {
            PendingCheck::References { key, .. } => {
                if self.referenced_row(&parent, &fk.ref_columns, key, ctx.env.style())?.is_some() {
                    return Ok(());
                }
                // The row written then may be gone, or hold another key by now.
                if !self.referencing_rows(&child, &fk, key, 1, ctx)?.is_empty() {
                    return Err(not_present(&child, &fk, key, &parent.name));
                }
            }
            PendingCheck::Referenced { key, .. } => {
                if self.key_exists(&parent, &fk.ref_columns, key)? {
                    return Ok(());
                }
                if !self.referencing_rows(&child, &fk, key, 1, ctx)?.is_empty() {
                    let owner = self.constraint_owner(&child, &fk)?;
                    return Err(still_referenced(&parent, &owner, &fk, key));
                }
            }
        }
        Ok(())
    }

    /// The primary key of `parent`'s row whose `cols` hold `values`, locked shared, or None.
    fn referenced_row(
        &mut self,
        parent: &Table,
        cols: &[usize],
        values: &[Value],
        style: crate::style::Style,
    ) -> Result<Option<Vec<u8>>> {
        // The values as the referenced columns' types (a value that does not fit is absent).
        let mut typed = Vec::with_capacity(values.len());
        for (&c, v) in cols.iter().zip(values) {
            match assign(v.clone(), parent.columns[c].ty, style) {
                Ok(v) => typed.push(v),
                Err(_) => return Ok(None),
            }
        }
        let in_order = |order: &[usize]| -> Vec<&Value> {
            order
                .iter()
                .map(|oc| &typed[cols.iter().position(|c| c == oc).expect("same set")])
                .collect()
        };
        let by_pk = same_set(cols, &parent.primary_key);
        let index = if by_pk {
            None
        } else {
            Some(
                parent
                    .indexes
                    .iter()
                    .find(|i| i.unique && i.is_plain() && same_set(cols, &i.columns))
                    .ok_or_else(|| {
                        SqlError::new(
                            code::DATA_CORRUPTED,
                            format!(
                                "the key a foreign key references in \"{}\" is gone",
                                parent.name
                            ),
                        )
                    })?,
            )
        };
        // Under READ COMMITTED a unique index may point elsewhere once the lock is granted:
        // look again a few times (each look follows a committed change of that key).
        for _ in 0..8 {
            self.interrupted()?;
            let pk = match index {
                None => encode_key(&in_order(&parent.primary_key))?,
                Some(index) => {
                    let key = encode_key(&in_order(&index.columns))?;
                    match self.ts.txn.get(&index.keyspace(), &key)? {
                        Some(pk) => pk,
                        None => return Ok(None),
                    }
                }
            };
            self.lock_in(parent.id, &pk, LockMode::Shared)?;
            if self.ts.isolation == IsolationLevel::ReadCommitted {
                self.ts.txn.refresh_snapshot()?;
            } else if self.ts.txn.written_since_snapshot(&parent.keyspace(), &pk)? {
                return Err(SqlError::new(
                    code::SERIALIZATION,
                    "could not serialize access due to concurrent update",
                )
                .hint("The transaction might succeed if retried."));
            }
            let Some(raw) = self.ts.txn.get(&parent.keyspace(), &pk)? else {
                if index.is_some() && self.ts.isolation == IsolationLevel::ReadCommitted {
                    continue;
                }
                return Ok(None);
            };
            let current = decode_row(&raw, parent.columns.len())?;
            let matches =
                cols.iter().zip(&typed).all(|(&c, v)| current[c].total_cmp(v) == Ordering::Equal);
            if matches {
                return Ok(Some(pk));
            }
            if index.is_none() || self.ts.isolation != IsolationLevel::ReadCommitted {
                return Ok(None);
            }
        }
        Ok(None)
    }

    /// The rows of `child` whose foreign key `fk` holds `key`, each with its primary key,
    /// from the newest committed data (at most `limit`).
    fn referencing_rows(
        &mut self,
        child: &Arc<Table>,
        fk: &ForeignKey,
        key: &[Value],
        limit: usize,
        ctx: &Ctx,
    ) -> Result<Vec<(Vec<u8>, Vec<Value>)>> {
        let mut filters = Vec::with_capacity(key.len());
        for (&c, v) in fk.columns.iter().zip(key) {
            let v = match assign(v.clone(), child.columns[c].ty, ctx.env.style()) {
                Ok(v) => v,
                Err(_) => return Ok(vec![]),
            };
            filters.push(Expr::Binary(
                BinOp::Eq,
                Box::new(Expr::Column(c)),
                Box::new(Expr::Const(v)),
            ));
        }
        let mut item = FromItem {
            source: Source::Table(child.clone(), Access::Full),
            offset: 0,
            width: child.columns.len(),
            join: JoinKind::Inner,
            on: vec![],
            filters,
            label: child.name.clone(),
        };
        choose_access(&mut item);
        let mut plan =
            SelectPlan::over(item, child.columns.iter().map(|c| (c.name.clone(), c.ty)).collect());
        if limit != usize::MAX {
            plan.limit = Some(Expr::Const(Value::Int(limit as i64)));
        }
        let limits = self.limits.clone();
        let run = |txn: &mut kiln_engine::Transaction| -> Result<Vec<(Vec<u8>, Vec<Value>)>> {
            let cell = std::cell::RefCell::new(txn);
            let exec = Exec::new(&cell, &limits);
            let ctx = Ctx { runner: Some(&exec), ..*ctx };
            let rows = crate::exec::join::execute_from(&plan, &cell, &ctx, &limits)?;
            Ok(rows
                .into_iter()
                .take(limit)
                .map(|(pk, row)| (pk.expect("table rows have keys"), row))
                .collect())
        };
        if self.ts.isolation == IsolationLevel::ReadCommitted {
            self.ts.txn.refresh_snapshot()?;
            return run(&mut self.ts.txn);
        }
        let rows = self.ts.txn.with_newest_snapshot(run)?;
        for (pk, _) in &rows {
            if self.ts.txn.written_since_snapshot(&child.keyspace(), pk)? {
                return Err(SqlError::new(
                    code::SERIALIZATION,
                    "could not serialize access due to concurrent update",
                )
                .detail(format!(
                    "A row of \"{}\" referencing the changed key was written after this transaction's snapshot.",
                    child.name
                ))
                .hint("The transaction might succeed if retried."));
            }
        }
        Ok(rows)
    }

    /// Applies the foreign keys that reference `table` to a row of it that was deleted
    /// (`new` None) or updated from `old` to `new`: called after the row itself is written.
    #[recursive::recursive]
    pub(crate) fn referenced_row_changed(
        &mut self,
        table: &Table,
        old: &[Value],
        new: Option<&[Value]>,
        ctx: &Ctx,
    ) -> Result<()> {
        for reference in &table.referenced_by {
            self.interrupted()?;
            let child = self.related_table(&table.database, &reference.table)?;
            if child.partitioning.is_some() {
                continue; // holds no rows: its partitions reference the row, each its own
            }
            let Some(fk) = child
                .foreign_keys
                .iter()
                .find(|f| f.name == reference.constraint && f.table == table.name)
                .cloned()
            else {
                continue;
            };
            let key: Vec<Value> = fk.ref_columns.iter().map(|&c| old[c].clone()).collect();
            if key.iter().any(Value::is_null) {
                continue;
            }
            let action = match new {
                None => fk.on_delete,
                Some(new) => {
                    if fk.ref_columns.iter().all(|&c| old[c].total_cmp(&new[c]) == Ordering::Equal)
                    {
                        continue;
                    }
                    fk.on_update
                }
            };
            if action == FkAction::NoAction {
                let parent = self.related_table(&table.database, &table.name)?;
                self.constraints.deferred.push(DeferredCheck { parent, child, fk, key });
                continue;
            }
            if action == FkAction::Restrict {
                if !self.referencing_rows(&child, &fk, &key, 1, ctx)?.is_empty() {
                    let owner = self.constraint_owner(&child, &fk)?;
                    return Err(still_referenced(table, &owner, &fk, &key));
                }
                continue;
            }
            let defaults = match action {
                FkAction::SetDefault => Some(self.defaults(&child, ctx.env)?),
                _ => None,
            };
            for (pk, row) in self.referencing_rows(&child, &fk, &key, usize::MAX, ctx)? {
                self.interrupted()?;
                let Some(current) =
                    self.lock_current(&child, &pk, row, &[], LockMode::Exclusive, ctx)?
                else {
                    continue;
                };
                let still = fk
                    .columns
                    .iter()
                    .zip(&key)
                    .all(|(&c, v)| current[c].total_cmp(v) == Ordering::Equal);
                if !still {
                    continue;
                }
                let mut changed = current.clone();
                match (action, new) {
                    (FkAction::Cascade, None) => {
                        // The child's row triggers fire as for a DELETE of the row (a
                        // BEFORE trigger that skips it leaves it, as in PostgreSQL).
                        if Self::has_row_triggers(&child, Event::Delete, true)
                            && self
                                .before_row(
                                    &child,
                                    Event::Delete,
                                    None,
                                    Some(&current),
                                    None,
                                    ctx.env,
                                )?
                                .is_none()
                        {
                            continue;
                        }
                        self.delete_row(&child, &pk, &current)?;
                        self.referenced_row_changed(&child, &current, None, ctx)?;
                        self.after_row(
                            &child,
                            Event::Delete,
                            (None, Some(&current)),
                            None,
                            Cause::Action,
                        );
                        continue;
                    }
                    (FkAction::Cascade, Some(new)) => {
                        for (&c, &p) in fk.columns.iter().zip(&fk.ref_columns) {
                            changed[c] = new[p].clone();
                        }
                    }
                    (FkAction::SetNull, _) => {
                        for &c in &fk.columns {
                            changed[c] = Value::Null;
                        }
                    }
                    _ => {
                        let defaults = defaults.as_ref().expect("read above");
                        for &c in &fk.columns {
                            changed[c] = match &defaults[c] {
                                Some(d) => d.eval(&[], ctx)?,
                                None => Value::Null,
                            };
                        }
                    }
                }
                let changed = if Self::has_row_triggers(&child, Event::Update, true) {
                    let set = Some(&fk.columns[..]);
                    let old = Some(&current[..]);
                    match self.before_row(
                        &child,
                        Event::Update,
                        Some(changed),
                        old,
                        set,
                        ctx.env,
                    )? {
                        Some(row) => row,
                        None => continue,
                    }
                } else {
                    changed
                };
                let written = self.update_row(&child, &pk, &current, changed, ctx)?;
                self.after_row(
                    &child,
                    Event::Update,
                    (Some(&written), Some(&current)),
                    Some(&fk.columns),
                    Cause::Action,
                );
            }
        }
        Ok(())
    }

    /// Runs the NO ACTION checks the statement left: a referenced key that is gone at the
    /// end of the statement must have no referencing rows.
    pub(crate) fn finish_constraints(&mut self, ctx: &Ctx) -> Result<()> {
        for d in std::mem::take(&mut self.constraints.deferred) {
            self.interrupted()?;
            if self.ts.modes.deferred(&d.fk) {
                self.ts.pending.push(PendingCheck::Referenced {
                    database: d.parent.database.clone(),
                    child: d.child.name.clone(),
                    fk: d.fk.name.clone(),
                    key: d.key,
                });
                continue;
            }
            if self.key_exists(&d.parent, &d.fk.ref_columns, &d.key)? {
                continue; // the key is there again (updated back, or re-inserted)
            }
            if !self.referencing_rows(&d.child, &d.fk, &d.key, 1, ctx)?.is_empty() {
                let owner = self.constraint_owner(&d.child, &d.fk)?;
                return Err(still_referenced(&d.parent, &owner, &d.fk, &d.key));
            }
        }
        Ok(())
    }

    /// Whether `parent` has a row whose `cols` hold `values` (as this transaction sees it).
    fn key_exists(&mut self, parent: &Table, cols: &[usize], values: &[Value]) -> Result<bool> {
        let order: Vec<usize> = if same_set(cols, &parent.primary_key) {
            parent.primary_key.clone()
        } else {
            match parent
                .indexes
                .iter()
                .find(|i| i.unique && i.is_plain() && same_set(cols, &i.columns))
            {
                Some(i) => i.columns.clone(),
                None => return Ok(false),
            }
        };
        let vals: Vec<&Value> = order
            .iter()
            .map(|oc| &values[cols.iter().position(|c| c == oc).expect("same set")])
            .collect();
        let key = encode_key(&vals)?;
        if order == parent.primary_key {
            return Ok(self.ts.txn.get(&parent.keyspace(), &key)?.is_some());
        }
        let index = parent
            .indexes
            .iter()
            .find(|i| i.is_plain() && i.columns == order)
            .expect("found above");
        Ok(self.ts.txn.get(&index.keyspace(), &key)?.is_some())
    }
}

/// Whether two column lists name the same set of columns.
pub(crate) fn same_set(a: &[usize], b: &[usize]) -> bool {
    if a.len() != b.len() || a.is_empty() {
        return false;
    }
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_unstable();
    b.sort_unstable();
    a == b
}

/// The constraint names a table already uses (primary key, unique, foreign keys, checks).
fn constraint_names(table: &Table) -> Vec<String> {
    let mut names: Vec<String> = table.primary_key_name.iter().cloned().collect();
    names.extend(table.indexes.iter().filter(|i| i.unique).map(|i| i.name.clone()));
    names.extend(table.foreign_keys.iter().map(|f| f.name.clone()));
    names.extend(table.checks.iter().map(|c| c.name.clone()));
    names
}

/// `base`, or `base1`, `base2`, … : the first not in `taken` (PostgreSQL's choice).
fn unused_name(base: String, taken: &[String]) -> String {
    if !taken.contains(&base) {
        return base;
    }
    (1..).map(|n| format!("{base}{n}")).find(|n| !taken.contains(n)).expect("a free name")
}

/// `<table>_<columns>_<suffix>`, PostgreSQL's base for a constraint's name.
fn columns_base(table: &Table, cols: &[usize], suffix: &str) -> String {
    let names = cols.iter().map(|&c| table.columns[c].name.clone()).collect::<Vec<_>>();
    format!("{}_{}_{suffix}", unqualified(&table.name), names.join("_"))
}

/// A new constraint's name: the one given (42710 when the table already uses it), or `base`
/// made unique among the table's constraints.
pub(crate) fn constraint_name(
    table: &Table,
    given: Option<String>,
    base: String,
) -> Result<String> {
    let taken = constraint_names(table);
    match given {
        Some(n) if taken.contains(&n) => Err(SqlError::new(
            code::DUPLICATE_OBJECT,
            format!("constraint \"{n}\" for relation \"{}\" already exists", table.name),
        )),
        Some(n) => Ok(n),
        None => Ok(unused_name(base, &taken)),
    }
}

/// Whether a referencing column of type `a` can reference one of type `b` (one family:
/// integers, exact or approximate numbers, strings; else the same type).
fn key_types_compatible(a: DataType, b: DataType) -> bool {
    use DataType as T;
    let family = |t: DataType| match t {
        T::Int2 | T::Int4 | T::Int8 | T::Numeric(_) => 1,
        T::Float4 | T::Float8 => 2,
        T::Text | T::Varchar(_) | T::Char(_) => 3,
        _ => 0,
    };
    match (family(a), family(b)) {
        (0, _) | (_, 0) => std::mem::discriminant(&a) == std::mem::discriminant(&b),
        (x, y) => x == y,
    }
}

fn fk_action(a: &Option<ast::ReferentialAction>) -> FkAction {
    match a {
        None | Some(ast::ReferentialAction::NoAction) => FkAction::NoAction,
        Some(ast::ReferentialAction::Restrict) => FkAction::Restrict,
        Some(ast::ReferentialAction::Cascade) => FkAction::Cascade,
        Some(ast::ReferentialAction::SetNull) => FkAction::SetNull,
        Some(ast::ReferentialAction::SetDefault) => FkAction::SetDefault,
    }
}

impl Writer<'_> {
    /// Defines a foreign key of `table` (being created, or altered) over `cols`: checks the
    /// referenced key and the types, names it, and adds it to `table`; a referenced table
    /// other than `table` is returned with the reference recorded, for the caller to store.
    pub(crate) fn define_foreign_key(
        &mut self,
        table: &mut Table,
        name: Option<String>,
        cols: Vec<usize>,
        fk: &ast::ForeignKeyConstraint,
    ) -> Result<Option<Table>> {
        if matches!(
            fk.match_kind,
            Some(
                ast::ConstraintReferenceMatchKind::Full
                    | ast::ConstraintReferenceMatchKind::Partial
            )
        ) {
            return Err(SqlError::unsupported("MATCH FULL / MATCH PARTIAL foreign keys"));
        }
        let pname = crate::bind::object_name(&fk.foreign_table)?;
        let is_self = pname == table.name;
        let mut parent: Option<Table> = if is_self {
            None
        } else {
            Some(
                (*self.db.catalog.table_or_err(&mut self.ts.txn, &table.database, &pname)?).clone(),
            )
        };
        let p: &Table = parent.as_ref().unwrap_or(table);
        if p.partitioning.is_some() {
            return Err(SqlError::unsupported("foreign keys that reference a partitioned table")
                .hint("Reference a partition, or a table of the keys."));
        }
        let ref_cols: Vec<usize> = if fk.referred_columns.is_empty() {
            if p.primary_key.is_empty() {
                return Err(SqlError::new(
                    code::INVALID_FOREIGN_KEY,
                    format!("there is no primary key for referenced table \"{pname}\""),
                ));
            }
            p.primary_key.clone()
        } else {
            fk.referred_columns
                .iter()
                .map(|c| {
                    let n = crate::bind::ident(c);
                    p.column(&n).ok_or_else(|| {
                        SqlError::new(
                            code::UNDEFINED_COLUMN,
                            format!("column \"{n}\" referenced in foreign key constraint does not exist"),
                        )
                    })
                })
                .collect::<Result<_>>()?
        };
        if ref_cols.len() != cols.len() {
            return Err(SqlError::new(
                code::INVALID_FOREIGN_KEY,
                "number of referencing and referenced columns for foreign key disagree",
            ));
        }
        let keyed = same_set(&ref_cols, &p.primary_key)
            || p.indexes
                .iter()
                .any(|i| i.unique && i.is_plain() && same_set(&ref_cols, &i.columns));
        if !keyed {
            return Err(SqlError::new(
                code::INVALID_FOREIGN_KEY,
                format!("there is no unique constraint matching given keys for referenced table \"{pname}\""),
            ));
        }
        let name = constraint_name(table, name, columns_base(table, &cols, "fkey"))?;
        for (&c, &r) in cols.iter().zip(&ref_cols) {
            let (a, b) = (table.columns[c].ty, p.columns[r].ty);
            if !key_types_compatible(a, b) {
                return Err(SqlError::new(
                    code::DATATYPE_MISMATCH,
                    format!("foreign key constraint \"{name}\" cannot be implemented"),
                )
                .detail(format!(
                    "Key columns \"{}\" and \"{}\" are of incompatible types: {} and {}.",
                    table.columns[c].name,
                    p.columns[r].name,
                    a.sql_name(),
                    b.sql_name()
                )));
            }
        }
        let on_delete = fk_action(&fk.on_delete);
        let on_update = fk_action(&fk.on_update);
        let (deferrable, initially_deferred) = match &fk.characteristics {
            None => (false, false),
            Some(c) => {
                if c.enforced == Some(false) {
                    return Err(SqlError::unsupported("NOT ENFORCED constraints"));
                }
                let initially = c.initially == Some(ast::DeferrableInitial::Deferred);
                if initially && c.deferrable == Some(false) {
                    return Err(SqlError::syntax(
                        "constraint declared INITIALLY DEFERRED must be DEFERRABLE",
                    ));
                }
                (c.deferrable == Some(true) || initially, initially)
            }
        };
        let reference =
            crate::catalog::Reference { table: table.name.clone(), constraint: name.clone() };
        table.foreign_keys.push(ForeignKey {
            name,
            columns: cols,
            table: pname,
            ref_columns: ref_cols,
            on_delete,
            on_update,
            deferrable,
            initially_deferred,
        });
        match &mut parent {
            None => table.referenced_by.push(reference),
            Some(p) => p.referenced_by.push(reference),
        }
        Ok(parent)
    }

    /// A planner for expressions stored in definitions (CHECK conditions, DEFAULTs, ALTER
    /// COLUMN … USING): no parameters, no system tables.
    pub(crate) fn definition_planner<'p>(
        &'p mut self,
        database: &'p str,
        env: &'p dyn Env,
    ) -> Planner<'p> {
        Planner::new(&mut self.ts.txn, &self.db.catalog, database, vec![], &NoSystemTables, env)
    }

    /// Binds a DEFAULT expression of a column of type `ty`: any expression of no columns,
    /// no subqueries and no parameters (0A000 otherwise, as PostgreSQL answers), cast to the
    /// column's type.
    pub(crate) fn bind_default_expr(
        &mut self,
        database: &str,
        e: &ast::Expr,
        ty: DataType,
        env: &dyn Env,
    ) -> Result<Expr> {
        let mut planner = self.definition_planner(database, env);
        let (bound, t) = planner.expr(e, &Scope::default(), false).map_err(|err| {
            if err.code == code::UNDEFINED_COLUMN {
                SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    "cannot use column references in default expression",
                )
            } else {
                err
            }
        })?;
        let mut subquery = false;
        bound.walk(&mut |n| subquery |= matches!(n, Expr::Subquery(..)));
        if subquery {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                "cannot use subquery in DEFAULT expression",
            ));
        }
        if !planner.params.is_empty() {
            return Err(SqlError::new(code::UNDEFINED_PARAMETER, "there is no parameter $1"));
        }
        Ok(planner.coerce(bound, t, ty)?.0)
    }

    /// Defines a CHECK constraint of `table`: binds it (boolean, over the row), names it
    /// (`<table>_<column>_check` when it reads one column, `<table>_check` otherwise).
    pub(crate) fn define_check(
        &mut self,
        table: &mut Table,
        name: Option<String>,
        expr: &ast::Expr,
        env: &dyn Env,
    ) -> Result<Expr> {
        let mut planner = self.definition_planner(&table.database, env);
        let bound = bind_check(&mut planner, table, expr)?;
        let mut used = std::collections::BTreeSet::new();
        bound.walk(&mut |e| {
            if let Expr::Column(i) = e {
                used.insert(*i);
            }
        });
        let base = match used.iter().collect::<Vec<_>>().as_slice() {
            [one] => format!("{}_{}_check", unqualified(&table.name), table.columns[**one].name),
            _ => format!("{}_check", unqualified(&table.name)),
        };
        let name = constraint_name(table, name, base)?;
        table.checks.push(crate::catalog::Check { name, expr: crate::bind::stored_text(expr) });
        Ok(bound)
    }

    /// The name of a new primary key or unique constraint of `table` (and of its index, a
    /// relation in PostgreSQL): the one given — 42P07 when a relation, the table itself or
    /// one of its constraints has it — or `base`, `base1`, …: the first that none has.
    pub(crate) fn index_name(
        &mut self,
        table: &Table,
        given: Option<String>,
        base: String,
    ) -> Result<String> {
        let mut taken = constraint_names(table);
        taken.push(unqualified(&table.name).to_string());
        let db = table.database.as_str();
        if let Some(n) = given {
            if taken.contains(&n)
                || self.db.catalog.relation_exists(
                    &mut self.ts.txn,
                    db,
                    &beside(&table.name, &n),
                )?
            {
                return Err(SqlError::new(
                    code::DUPLICATE_TABLE,
                    format!("relation \"{n}\" already exists"),
                ));
            }
            return Ok(n);
        }
        let mut n = 0u32;
        loop {
            let name = if n == 0 { base.clone() } else { format!("{base}{n}") };
            if !taken.contains(&name)
                && !self.db.catalog.relation_exists(
                    &mut self.ts.txn,
                    db,
                    &beside(&table.name, &name),
                )?
            {
                return Ok(name);
            }
            n += 1;
        }
    }

    /// The index of a UNIQUE constraint on `cols` of `table`: named as given (42P07 when a
    /// relation or another constraint has the name) or `<table>_<columns>_key`.
    pub(crate) fn unique_constraint(
        &mut self,
        table: &Table,
        given: Option<String>,
        cols: Vec<usize>,
        u: Option<&ast::UniqueConstraint>,
    ) -> Result<crate::catalog::Index> {
        for &c in &cols {
            if !crate::encoding::key_type_supported(table.columns[c].ty) {
                return Err(SqlError::unsupported(format!(
                    "a unique constraint on a column of type {}",
                    table.columns[c].ty.sql_name()
                )));
            }
        }
        let include = match u {
            Some(u) => crate::exec::indexes::included_columns(table, &u.include)?,
            None => vec![],
        };
        let nulls_not_distinct =
            u.is_some_and(|u| u.nulls_distinct == ast::NullsDistinctOption::NotDistinct);
        // PostgreSQL names it after its key and INCLUDE columns.
        let named: Vec<usize> = cols.iter().chain(&include).copied().collect();
        let name = self.index_name(table, given, columns_base(table, &named, "key"))?;
        let id = self.db.catalog.next_id(&mut self.ts.txn)?;
        Ok(crate::catalog::Index {
            name,
            id,
            columns: cols,
            unique: true,
            constraint: true,
            comment: None,
            expressions: vec![],
            predicate: None,
            include,
            nulls_not_distinct,
            method: None,
        })
    }

    /// Before `table` is dropped: the foreign keys of other tables that reference it fail
    /// the drop (2BP01), or with CASCADE are dropped; its own foreign keys leave the tables
    /// they reference.
    pub(crate) fn drop_table_references(
        &mut self,
        table: &Table,
        cascade: bool,
        dropping: &[String],
    ) -> Result<()> {
        for r in &table.referenced_by {
            if r.table == table.name || dropping.contains(&r.table) {
                continue;
            }
            if !cascade {
                return Err(crate::exec::write::depended_on(
                    &format!("table {}", table.name),
                    &[format!(
                        "constraint {} on table {} depends on table {}",
                        r.constraint, r.table, table.name
                    )],
                ));
            }
            self.cascade_to(format!("constraint {} on table {}", r.constraint, r.table));
            let mut child =
                (*self.db.catalog.table_or_err(&mut self.ts.txn, &table.database, &r.table)?)
                    .clone();
            child.foreign_keys.retain(|f| !(f.name == r.constraint && f.table == table.name));
            self.db.catalog.put_table(&mut self.ts.txn, &child)?;
        }
        for fk in &table.foreign_keys {
            if fk.table == table.name {
                continue;
            }
            if let Some(parent) =
                self.db.catalog.table(&mut self.ts.txn, &table.database, &fk.table)?
            {
                let mut parent = (*parent).clone();
                parent
                    .referenced_by
                    .retain(|r| !(r.table == table.name && r.constraint == fk.name));
                self.db.catalog.put_table(&mut self.ts.txn, &parent)?;
            }
        }
        Ok(())
    }
}

impl Session {
    /// Runs the transaction's deferred foreign-key checks (with `immediate`, only those SET
    /// CONSTRAINTS made immediate); `ts` is the transaction, taken out of the session.
    pub(crate) fn check_pending(&mut self, ts: &mut TxnState, immediate: bool) -> Result<()> {
        let style = crate::pg::settings::style_setting(Some(&ts.local), &self.settings);
        let settings = crate::pg::settings::settings_in_force(&self.settings, Some(&ts.local));
        let env = session_env!(self, style, &settings);
        let ctx = Ctx::new(&[], &env);
        session_writer!(self, ts, None).run_pending(immediate, &ctx)
    }

    /// SET CONSTRAINTS {ALL | names} {DEFERRED | IMMEDIATE}: for the rest of the transaction
    /// (outside one it changes nothing, as in PostgreSQL); checks that become immediate run
    /// now.
    pub(crate) fn set_constraints(
        &mut self,
        names: Option<&[String]>,
        deferred: bool,
    ) -> Result<Output> {
        let done = || Ok(Output::Command("SET CONSTRAINTS".into()));
        let Some(mut ts) = self.txn.take() else { return done() };
        let result = (|| -> Result<()> {
            if let Some(names) = names {
                // Each name must be a foreign key of this database; deferring one that is
                // not deferrable is refused.
                let tables = self.db.catalog.tables(&mut ts.txn, &self.database)?;
                for n in names {
                    let fk = tables.iter().flat_map(|t| &t.foreign_keys).find(|f| f.name == *n);
                    match fk {
                        None => {
                            return Err(SqlError::new(
                                code::UNDEFINED_OBJECT,
                                format!("constraint \"{n}\" does not exist"),
                            ))
                        }
                        Some(f) if deferred && !f.deferrable => {
                            return Err(SqlError::new(
                                code::WRONG_OBJECT_TYPE,
                                format!("constraint \"{n}\" is not deferrable"),
                            ))
                        }
                        Some(_) => {}
                    }
                }
            }
            ts.modes.set(names, deferred);
            if !deferred && !ts.pending.is_empty() {
                self.check_pending(&mut ts, true)?;
            }
            Ok(())
        })();
        self.txn = Some(ts);
        result?;
        done()
    }
}
