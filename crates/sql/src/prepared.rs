//! Prepared statements: parsing once, describing parameter and result types without
//! executing, and the session's one registry of them (the protocol's Parse/Close and SQL
//! PREPARE/DEALLOCATE share it).

use std::sync::Arc;

use kiln_engine::Transaction;
use parking_lot::Mutex;

use kiln_engine::{IsolationLevel, TxnOptions};
use sqlparser::ast;

use crate::bind::*;
use crate::catalog::{Catalog, Table};
use crate::error::{code, Result, SqlError};
use crate::parse::{commit_hint, parse};
use crate::pg::system::System;
use crate::plan::SelectPlan;
use crate::types::{now_micros, Columns, DataType};

use crate::bind::dml::*;
use crate::ed::*;
use crate::pg::settings::*;

use crate::session::*;

impl Session {
    /// Prepares a statement (extended protocol Parse): `declared` are the client's parameter
    /// types (`Unknown` for unspecified).
    pub fn prepare(&mut self, sql: &str, declared: &[DataType]) -> Result<Prepared> {
        with_stack(|| self.prepare_inner(sql, declared))
    }

    pub(crate) fn prepare_inner(&mut self, sql: &str, declared: &[DataType]) -> Result<Prepared> {
        if sql.len() > self.db.config.statement_bytes_max {
            return Err(SqlError::new(code::PROGRAM_LIMIT, "statement too long"));
        }
        // A statement sqlparser does not read runs from its text at execution.
        let mut statements =
            if crate::parse::utility(sql)?.is_some() { vec![] } else { parse(sql)? };
        if statements.len() > 1 {
            return Err(SqlError::syntax(
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        let statement = statements.pop();
        // Describe: bind without executing to learn parameter and result types. Notices
        // its constant folding raises are raised again when the statement is bound to run.
        let before = self.notices.lock().len();
        let described = match &statement {
            Some(stmt) => self.describe(stmt, declared).map_err(|e| e.resolve_position(sql)),
            None => Ok((declared.to_vec(), None, vec![])),
        };
        self.notices.lock().truncate(before);
        let (param_types, columns, origins) = described?;
        Ok(Prepared {
            sql: sql.to_string(),
            statement,
            hint: commit_hint(sql)?,
            plan: PlanSlot::new(param_types.clone(), columns.clone()),
            param_types,
            columns,
            origins,
        })
    }

    /// Runs `f` on the catalog in the session's transaction, or in a read-only one of its
    /// own when none is open.
    pub(crate) fn with_catalog<T>(
        &mut self,
        f: impl FnOnce(&crate::catalog::Catalog, &mut kiln_engine::Transaction, &str) -> Result<T>,
    ) -> Result<T> {
        match &mut self.txn {
            Some(t) => f(&self.db.catalog, &mut t.txn, &self.database),
            None => {
                let mut own = self.db.engine.begin(
                    TxnOptions::new().read_only().isolation(IsolationLevel::ReadCommitted),
                )?;
                f(&self.db.catalog, &mut own, &self.database)
            }
        }
    }

    /// `types` with each enum type's definition as the session's transaction sees it now
    /// (labels added since a statement was prepared are then taken as its parameters).
    pub fn current_types(&mut self, types: &[DataType]) -> Result<Vec<DataType>> {
        if !types.iter().any(|t| t.is_enum()) {
            return Ok(types.to_vec());
        }
        self.with_catalog(|catalog, txn, db| {
            types
                .iter()
                .map(|t| match *t {
                    DataType::Enum(e) | DataType::Array(&DataType::Enum(e)) => {
                        match catalog.enum_type_by_oid(txn, db, e.oid)? {
                            Some(now) => crate::enums::replace(*t, now),
                            None => Ok(*t),
                        }
                    }
                    t => Ok(t),
                })
                .collect()
        })
    }

    /// The type with PostgreSQL OID `oid`: a built-in type, or one of the database's enum
    /// types (or an array of one), as a parameter type a client declares.
    pub fn type_of_oid(&mut self, oid: u32) -> Result<Option<DataType>> {
        if let Some(t) = DataType::from_oid(oid) {
            return Ok(Some(t));
        }
        if oid < crate::pg::system::oid::FIRST as u32 {
            return Ok(None);
        }
        self.with_catalog(|catalog, txn, db| {
            let e = catalog.enum_type_by_oid(txn, db, oid)?;
            Ok(e.map(|e| crate::enums::type_with_oid(e, oid)))
        })
    }

    pub(crate) fn describe(
        &mut self,
        stmt: &ast::Statement,
        declared: &[DataType],
    ) -> Result<(Vec<DataType>, Option<Columns>, crate::types::Origins)> {
        let describable = matches!(
            stmt,
            ast::Statement::Query(_)
                | ast::Statement::Insert(_)
                | ast::Statement::Update(_)
                | ast::Statement::Delete(_)
                | ast::Statement::Merge(_)
        );
        if !describable {
            // Statements that answer rows without a plan describe their columns too: a driver
            // told NoData and then sent a DataRow raises.
            let (columns, origins) = match stmt {
                ast::Statement::ShowVariable { variable } => (
                    Some(match show_name(variable) {
                        n if n == "all" => vec![
                            ("name".to_string(), DataType::Text),
                            ("setting".to_string(), DataType::Text),
                        ],
                        n => vec![(crate::pg::settings::show_column(&n), DataType::Text)],
                    }),
                    vec![],
                ),
                ast::Statement::Explain { .. } => {
                    (Some(vec![("QUERY PLAN".to_string(), DataType::Text)]), vec![])
                }
                ast::Statement::Fetch { name, .. } => match self.cursors.columns(&name.value) {
                    Some((c, o)) => (Some(c), o),
                    None => (None, vec![]),
                },
                _ => (None, vec![]),
            };
            return Ok((
                declared
                    .iter()
                    .map(|t| if *t == DataType::Unknown { DataType::Text } else { *t })
                    .collect(),
                columns,
                origins,
            ));
        }
        let failed = self.txn.as_ref().is_some_and(|t| t.failed);
        if failed {
            return Err(in_failed());
        }
        let style = self.style();
        let settings = crate::pg::settings::settings_in_force(
            &self.settings,
            self.txn.as_ref().map(|t| &t.local),
        );
        let mut own = None;
        let txn = match &mut self.txn {
            Some(t) => &mut t.txn,
            None => {
                own = Some(self.db.engine.begin(
                    TxnOptions::new().read_only().isolation(IsolationLevel::ReadCommitted),
                )?);
                own.as_mut().expect("just set")
            }
        };
        let mut path = settings.get("search_path").cloned().unwrap_or_default();
        if self.temps.used {
            path = format!("{}{}, {path}", crate::exec::temp::PREFIX, self.pid);
        }
        let search =
            crate::bind::search::SearchPath::load(&self.db.catalog, txn, &self.database, &path)?;
        let _installed = crate::bind::search::install(search);
        let env = session_env!(self, style, &settings);
        let system = System::new(&self.db, &self.database, &settings, &self.cursors);
        let mut planner =
            Planner::new(txn, &self.db.catalog, &self.database, declared.to_vec(), &system, &env);
        planner.describing = true;
        let returning = |r: Option<Returning>| match r {
            Some(r) => (Some(r.columns), r.origins),
            None => (None, vec![]),
        };
        let (with, stmt) = crate::bind::split_with(stmt);
        let (columns, origins) = match stmt {
            ast::Statement::Query(q) => {
                let plan = planner.query(q, None)?;
                (Some(plan.columns), plan.origins)
            }
            ast::Statement::Insert(ins) => {
                returning(planner.with_ctes(with, |p| plan_insert(p, ins))?.returning)
            }
            ast::Statement::Update(u) => {
                returning(planner.with_ctes(with, |p| plan_update(p, u))?.returning)
            }
            ast::Statement::Delete(d) => {
                returning(planner.with_ctes(with, |p| plan_delete(p, d))?.returning)
            }
            ast::Statement::Merge(m) => {
                planner.with_ctes(with, |p| crate::bind::merge::plan_merge(p, m))?;
                (None, vec![])
            }
            _ => (None, vec![]),
        };
        let params = planner
            .params
            .iter()
            .map(|t| if *t == DataType::Unknown { DataType::Text } else { *t })
            .collect();
        if let Some(own) = own {
            own.close_unused();
        }
        Ok((params, columns, origins))
    }

    /// Stores a prepared statement under `name` (the unnamed one, `""`, is replaced; a named
    /// one that exists is 42P05, as in PostgreSQL).
    pub fn store_prepared(&mut self, name: &str, prepared: Prepared) -> Result<Arc<Prepared>> {
        if !name.is_empty() && self.prepared.contains_key(name) {
            return Err(SqlError::new(
                "42P05",
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        let prepared = Arc::new(prepared);
        self.prepared.insert(name.to_string(), prepared.clone());
        Ok(prepared)
    }

    /// A prepared statement by name.
    pub fn get_prepared(&self, name: &str) -> Option<Arc<Prepared>> {
        self.prepared.get(name).cloned()
    }

    /// Drops a prepared statement (nothing happens when there is none, as for Close).
    pub fn close_prepared(&mut self, name: &str) {
        self.prepared.remove(name);
    }
}

/// A prepared statement's plan, bound at its first execution and reused by the next ones
/// — PostgreSQL's generic plan. Access paths never depend on parameter values, so one plan
/// serves them all. It is bound again when it may no longer be the plan binding would make:
/// - a table (or sequence) it was bound against is defined differently in the transaction that executes
///   it (DDL — CREATE or DROP INDEX, ALTER TABLE, DROP and CREATE — changes the definition,
///   and definitions are read through the transaction, so a schema change is seen exactly
///   when the transaction sees it);
/// - it holds rows read while binding (system tables): such a plan is never kept.
pub(crate) struct PlanSlot {
    /// The parameter types the statement is bound with: those it was prepared with (the
    /// protocol layer decodes values by them), not the values' own types.
    pub(crate) params: Vec<DataType>,
    /// The result columns the client was told about at Describe; a plan bound again may not
    /// change their number or types (0A000, as PostgreSQL).
    described: Option<Columns>,
    plan: Mutex<Option<Arc<CachedPlan>>>,
}

impl Clone for PlanSlot {
    fn clone(&self) -> PlanSlot {
        PlanSlot {
            params: self.params.clone(),
            described: self.described.clone(),
            plan: Mutex::new(self.plan.lock().clone()),
        }
    }
}

impl std::fmt::Debug for PlanSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.plan.lock().is_some() { "PlanSlot(kept)" } else { "PlanSlot(empty)" })
    }
}

/// Whether two equal table definitions hold the very same enum definitions (equality
/// compares enum types by OID only; a plan holds the labels it was bound with).
fn same_enum_types(a: &Table, b: &Table) -> bool {
    a.columns.iter().zip(&b.columns).all(|(x, y)| crate::enums::identical(x.ty, y.ty))
}

pub(crate) struct CachedPlan {
    deps: Dependencies,
    plan: StatementPlan,
}

/// The definitions a bound plan depends on, and the session state it was bound under: the
/// plan stays valid while each is still what the transaction sees.
#[derive(Clone, Default)]
pub(crate) struct Dependencies {
    tables: Vec<Arc<Table>>,
    sequences: Vec<Arc<crate::sequence::Sequence>>,
    views: Vec<Arc<crate::catalog::View>>,
    enum_types: Vec<&'static crate::enums::EnumType>,
    /// The functions made with CREATE FUNCTION it calls, as they were.
    functions: Vec<crate::catalog::Function>,
    /// The time zone, DateStyle and IntervalStyle its constants were read and written in (a
    /// timestamp with time zone literal without an offset is a local time in the zone; an
    /// interval cast to text is written in the IntervalStyle).
    style: Option<crate::style::Style>,
    /// The search path's schemas it was bound under (empty: the default).
    search: Vec<String>,
    /// Cleared when a planner read something no definition above covers.
    reusable: bool,
}

impl Dependencies {
    /// Nothing yet: reusable until a planner says otherwise.
    pub(crate) fn new() -> Dependencies {
        Dependencies { reusable: true, ..Default::default() }
    }

    /// Dependencies that are never valid (nothing bound may be used again).
    pub(crate) fn unusable() -> Dependencies {
        Dependencies::default()
    }

    /// Adds what `planner` bound against.
    pub(crate) fn absorb(&mut self, planner: &Planner) {
        merge_shared(&mut self.tables, &planner.tables);
        merge_shared(&mut self.sequences, &planner.sequences);
        merge_shared(&mut self.views, &planner.views);
        merge_enum_types(&mut self.enum_types, &planner.enum_types);
        merge_equal(&mut self.functions, &planner.functions);
        self.style = Some(planner.env.style());
        self.search = crate::bind::search::installed_schemas();
        self.reusable &= planner.reusable;
    }

    /// Adds a table read outside a planner.
    pub(crate) fn table(&mut self, t: &Arc<Table>) {
        if !self.tables.iter().any(|x| Arc::ptr_eq(x, t)) {
            self.tables.push(t.clone());
        }
    }

    /// Adds `other`'s definitions (and the style and search path it was bound under).
    pub(crate) fn extend(&mut self, other: &Dependencies) {
        merge_shared(&mut self.tables, &other.tables);
        merge_shared(&mut self.sequences, &other.sequences);
        merge_shared(&mut self.views, &other.views);
        merge_enum_types(&mut self.enum_types, &other.enum_types);
        merge_equal(&mut self.functions, &other.functions);
        if other.style.is_some() {
            self.style = other.style;
            self.search = other.search.clone();
        }
        self.reusable &= other.reusable;
    }

    /// Whether it holds a definition (something [`Dependencies::definitions_valid`] checks).
    pub(crate) fn has_definitions(&self) -> bool {
        !(self.tables.is_empty()
            && self.sequences.is_empty()
            && self.views.is_empty()
            && self.enum_types.is_empty()
            && self.functions.is_empty())
    }

    /// Whether what was bound can be used again here.
    pub(crate) fn reusable(&self) -> bool {
        self.reusable
    }

    /// Whether every definition is still the one the transaction sees, under the same style
    /// and search path.
    pub(crate) fn still_valid(
        &self,
        txn: &mut Transaction,
        catalog: &Catalog,
        db: &str,
        style: crate::style::Style,
    ) -> Result<bool> {
        if self.style.is_some_and(|s| s != style)
            || self.search != crate::bind::search::installed_schemas()
        {
            return Ok(false);
        }
        self.definitions_valid(txn, catalog, db)
    }

    /// Whether every definition (table, sequence, view, enum type, function) is still the
    /// one the transaction sees.
    pub(crate) fn definitions_valid(
        &self,
        txn: &mut Transaction,
        catalog: &Catalog,
        db: &str,
    ) -> Result<bool> {
        for t in &self.tables {
            match catalog.table(txn, db, &t.name)? {
                Some(now) if Arc::ptr_eq(&now, t) || (now == *t && same_enum_types(&now, t)) => {}
                _ => return Ok(false),
            }
        }
        for s in &self.sequences {
            match catalog.sequence(txn, db, &s.name)? {
                Some(now) if Arc::ptr_eq(&now, s) || now == *s => {}
                _ => return Ok(false),
            }
        }
        for v in &self.views {
            match catalog.view(txn, db, &v.name)? {
                Some(now)
                    if Arc::ptr_eq(&now, v)
                        || (now == *v
                            && now
                                .columns
                                .iter()
                                .zip(&v.columns)
                                .all(|(a, b)| crate::enums::identical(a.1, b.1))) => {}
                _ => return Ok(false),
            }
        }
        for e in &self.enum_types {
            match catalog.enum_type(txn, db, &e.name)? {
                Some(now) if std::ptr::eq(now, *e) => {}
                _ => return Ok(false),
            }
        }
        for f in &self.functions {
            let types: Vec<DataType> = f.args.iter().map(|a| a.ty).collect();
            if catalog.function_with(txn, db, &f.name, &types)?.as_ref() != Some(f) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

impl Planner<'_> {
    /// Makes this statement's plan depend on what a function body bound for it did.
    pub(crate) fn depend_on(&mut self, deps: &Dependencies) {
        merge_shared(&mut self.tables, &deps.tables);
        merge_shared(&mut self.sequences, &deps.sequences);
        merge_shared(&mut self.views, &deps.views);
        merge_enum_types(&mut self.enum_types, &deps.enum_types);
        merge_equal(&mut self.functions, &deps.functions);
        self.reusable &= deps.reusable;
    }
}

/// Adds to `into` the definitions of `from` it lacks (the same definition: the same `Arc`).
fn merge_shared<T>(into: &mut Vec<Arc<T>>, from: &[Arc<T>]) {
    for x in from {
        if !into.iter().any(|y| Arc::ptr_eq(x, y)) {
            into.push(x.clone());
        }
    }
}

/// Likewise for enum types (the same definition: the same address).
fn merge_enum_types(
    into: &mut Vec<&'static crate::enums::EnumType>,
    from: &[&'static crate::enums::EnumType],
) {
    for x in from {
        if !into.iter().any(|y| std::ptr::eq(*x, *y)) {
            into.push(x);
        }
    }
}

/// Likewise for definitions compared by value (functions).
fn merge_equal<T: PartialEq + Clone>(into: &mut Vec<T>, from: &[T]) {
    for x in from {
        if !into.contains(x) {
            into.push(x.clone());
        }
    }
}

/// A bound, planned statement.
#[derive(Clone)]
pub(crate) enum StatementPlan {
    Select(SelectPlan),
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
    Merge(crate::bind::merge::MergePlan),
}

impl StatementPlan {
    /// The result columns (a DML statement's RETURNING).
    fn columns(&self) -> Option<&Columns> {
        match self {
            StatementPlan::Select(s) => Some(&s.columns),
            StatementPlan::Insert(i) => i.returning.as_ref().map(|r| &r.columns),
            StatementPlan::Update(u) => u.returning.as_ref().map(|r| &r.columns),
            StatementPlan::Delete(d) => d.returning.as_ref().map(|r| &r.columns),
            StatementPlan::Merge(_) => None,
        }
    }
}

impl PlanSlot {
    pub(crate) fn new(params: Vec<DataType>, described: Option<Columns>) -> PlanSlot {
        PlanSlot { params, described, plan: Mutex::new(None) }
    }

    /// The kept plan, when it is still valid in `txn`, the session's `style` and the search
    /// path installed now.
    pub(crate) fn get(
        &self,
        txn: &mut Transaction,
        catalog: &Catalog,
        db: &str,
        style: crate::style::Style,
    ) -> Result<Option<StatementPlan>> {
        let Some(cached) = self.plan.lock().clone() else { return Ok(None) };
        if !cached.deps.still_valid(txn, catalog, db, style)? {
            *self.plan.lock() = None;
            return Ok(None);
        }
        Ok(Some(cached.plan.clone()))
    }

    /// Keeps a plan just bound by `planner`, after checking that its result columns are the
    /// ones described.
    pub(crate) fn put(&self, planner: &Planner, plan: StatementPlan) -> Result<()> {
        if let (Some(described), Some(now)) = (&self.described, plan.columns()) {
            let same = described.len() == now.len()
                && described.iter().zip(now).all(|((_, a), (_, b))| a == b);
            if !same {
                *self.plan.lock() = None;
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    "cached plan must not change result type",
                ));
            }
        }
        let mut deps = Dependencies::new();
        deps.absorb(planner);
        *self.plan.lock() = deps.reusable().then(|| Arc::new(CachedPlan { deps, plan }));
        Ok(())
    }
}
