//! Executing one statement inside the session's transaction: queries, DML, EXPLAIN, DDL and
//! COPY, dispatched on the statement kind.

use std::cell::RefCell;

use kiln_engine::IsolationLevel;
use sqlparser::ast;

use crate::bind::*;
use crate::error::{code, Result, SqlError};
use crate::exec::select::*;
use crate::expr::Ctx;
use crate::parse::parse;
use crate::pg::system::System;
use crate::plan::explain::*;
use crate::types::{now_micros, DataType, Value};

use crate::bind::dml::*;
use crate::ed::*;
use crate::exec::copy::*;
use crate::exec::init::InitPlans;
use crate::prepared::{PlanSlot, StatementPlan};
use crate::session::*;

impl Session {
    /// Runs `stmt`; `slot` is the prepared statement's kept plan, when it is one.
    pub(crate) fn run(
        &mut self,
        stmt: &ast::Statement,
        params: &[Value],
        slot: Option<&PlanSlot>,
    ) -> Result<Output> {
        use ast::Statement as S;
        // CREATE TEMP TABLE: a table of the session's temporary schema.
        if let S::CreateTable(ct) = stmt {
            if let Some(temp) = self.temp_table(ct)? {
                let out = self.run(&S::CreateTable(temp), params, slot)?;
                self.reinstall_search_path()?;
                return Ok(out);
            }
        }
        let style = self.style();
        let settings = crate::pg::settings::settings_in_force(
            &self.settings,
            self.txn.as_ref().map(|t| &t.local),
        );
        let ts = self.txn.as_mut().expect("a transaction is open");
        if ts.isolation == IsolationLevel::ReadCommitted {
            // READ COMMITTED: each statement sees what committed before it began.
            ts.txn.refresh_snapshot()?;
        }
        let env = session_env!(self, style, &settings);
        let system = System::new(&self.db, &self.database, &settings, &self.cursors);
        let limits = session_limits!(self);
        let ctx = Ctx::new(params, &env);
        let lock_timeout = crate::session::lock_timeout(&settings);
        let mut w = session_writer!(self, ts, lock_timeout);
        let types = match slot {
            Some(slot) => slot.params.clone(),
            None => param_types(params),
        };
        // A planner for this statement: it binds and plans, and runs nothing.
        macro_rules! planner {
            () => {
                Planner::new(
                    &mut w.ts.txn,
                    &self.db.catalog,
                    &self.database,
                    types.clone(),
                    &system,
                    &env,
                )
            };
        }
        // Runs a plan's uncorrelated subqueries and derived tables (`exec::init`).
        macro_rules! init {
            ($method:ident, $plan:expr) => {
                InitPlans::with(&mut w.ts.txn, &ctx, &limits, |init| init.$method($plan))?
            };
        }
        // Runs a planned query (its subqueries already run) in the statement's transaction.
        macro_rules! select_rows {
            ($plan:expr) => {{
                let cell = RefCell::new(&mut w.ts.txn);
                let exec = Exec::new(&cell, &limits);
                let ctx = Ctx { runner: Some(&exec), ..ctx };
                execute_select($plan, &cell, &ctx, &limits)?
            }};
        }
        // Runs a planned SELECT: its subqueries first, then its rows (locked with FOR UPDATE).
        macro_rules! run_select {
            ($plan:expr) => {{
                let plan = $plan;
                let plan = init!(select, plan);
                let rows = if let Some(mode) = plan.lock {
                    w.select_for_update(&plan, mode, &ctx, &limits)?
                } else if crate::exec::routines::writing_call(&plan) {
                    w.call_alone(&plan, &ctx)?
                } else {
                    select_rows!(&plan)
                };
                let tag = format!("SELECT {}", rows.len());
                Ok(Output::Rows { columns: plan.columns, origins: plan.origins, rows, tag })
            }};
        }
        // Runs a planned INSERT, UPDATE or DELETE (`insert`, `update`, `delete`).
        macro_rules! run_dml {
            ($kind:ident, $plan:expr) => {{
                let plan = $plan;
                let plan = init!($kind, plan);
                w.$kind(plan, &ctx, &limits)
            }};
        }
        // WITH with data-modifying CTEs (`bind::with`): each of those runs first, in order,
        // its RETURNING rows kept for the parts after it; then the statement. Planned anew
        // at every execution (the rows are part of the plan).
        if let Some((with, main)) = crate::bind::with::modifying_with(stmt) {
            use std::sync::Arc;

            use crate::bind::with::{modifying, Main};
            use crate::bind::{Cte, Ran};
            planner!().check_disjoint(with, &main)?;
            let mut ctes: Vec<Cte> = Vec::new();
            // Binds with the CTEs so far in scope.
            macro_rules! bound {
                ($bind:expr) => {{
                    let mut planner = planner!();
                    planner.ctes = ctes.clone();
                    #[allow(clippy::redundant_closure_call)]
                    let p = ($bind)(&mut planner)?;
                    p
                }};
            }
            for cte in &with.cte_tables {
                let ran = match modifying(&cte.query) {
                    None => None,
                    Some(inner) => {
                        let out = match inner {
                            S::Insert(ins) => {
                                run_dml!(insert, bound!(|p: &mut Planner| plan_insert(p, ins)))?
                            }
                            S::Update(u) => {
                                run_dml!(update, bound!(|p: &mut Planner| plan_update(p, u)))?
                            }
                            S::Delete(d) => {
                                run_dml!(delete, bound!(|p: &mut Planner| plan_delete(p, d)))?
                            }
                            _ => unreachable!("modifying() gives INSERT, UPDATE or DELETE"),
                        };
                        Some(match out {
                            Output::Rows { columns, origins, rows, .. } => {
                                Ran::Returned(Arc::new(columns), origins, Arc::new(rows))
                            }
                            _ => Ran::Nothing,
                        })
                    }
                };
                let cte = Cte::new(cte, with.recursive, ran);
                if ctes.iter().any(|c| c.name == cte.name) {
                    return Err(crate::bind::duplicate_cte(&cte.name));
                }
                ctes.push(cte);
            }
            return match main {
                Main::Query(q) => run_select!(bound!(|p: &mut Planner| p.query(&q, None))),
                Main::Dml(S::Insert(ins)) => {
                    run_dml!(insert, bound!(|p: &mut Planner| plan_insert(p, ins)))
                }
                Main::Dml(S::Update(u)) => {
                    run_dml!(update, bound!(|p: &mut Planner| plan_update(p, u)))
                }
                Main::Dml(S::Delete(d)) => {
                    run_dml!(delete, bound!(|p: &mut Planner| plan_delete(p, d)))
                }
                Main::Dml(S::Merge(m)) => {
                    run_dml!(merge, bound!(|p: &mut Planner| crate::bind::merge::plan_merge(p, m)))
                }
                Main::Dml(_) => {
                    unreachable!("modifying_with gives INSERT, UPDATE, DELETE or MERGE")
                }
            };
        }
        // The plan: the prepared statement's kept one while it is valid, else bound now
        // (and kept, for a prepared statement).
        let kept = match slot {
            Some(slot) => slot.get(&mut w.ts.txn, &self.db.catalog, &self.database, style)?,
            None => None,
        };
        macro_rules! plan {
            ($kind:ident, $bind:expr) => {
                match kept {
                    Some(StatementPlan::$kind(p)) => p,
                    _ => {
                        let mut planner = planner!();
                        #[allow(clippy::redundant_closure_call)]
                        let p = ($bind)(&mut planner)?;
                        if let Some(slot) = slot {
                            slot.put(&planner, StatementPlan::$kind(p.clone()))?;
                        }
                        p
                    }
                }
            };
        }
        let (with, stmt) = crate::bind::split_with(stmt);
        match stmt {
            S::Query(q) => run_select!(plan!(Select, |p: &mut Planner| p.query(q, None))),
            S::Insert(ins) => {
                let plan =
                    plan!(Insert, |p: &mut Planner| p.with_ctes(with, |p| plan_insert(p, ins)));
                run_dml!(insert, plan)
            }
            S::Update(u) => {
                let plan =
                    plan!(Update, |p: &mut Planner| p.with_ctes(with, |p| plan_update(p, u)));
                run_dml!(update, plan)
            }
            S::Delete(d) => {
                let plan =
                    plan!(Delete, |p: &mut Planner| p.with_ctes(with, |p| plan_delete(p, d)));
                run_dml!(delete, plan)
            }
            S::Merge(m) => {
                let plan = plan!(Merge, |p: &mut Planner| p
                    .with_ctes(with, |p| crate::bind::merge::plan_merge(p, m)));
                run_dml!(merge, plan)
            }
            S::Explain { statement, .. } => {
                let lines = match statement.as_ref() {
                    // EXPLAIN EXECUTE: the generic plan a prepared statement runs with.
                    S::Execute { name: Some(name), .. } => {
                        let name = crate::bind::name_as_written(name)?;
                        let prepared = self.prepared.get(&name).cloned().ok_or_else(|| {
                            SqlError::new(
                                code::INVALID_STATEMENT_NAME,
                                format!("prepared statement \"{name}\" does not exist"),
                            )
                        })?;
                        let Some(inner) = &prepared.statement else {
                            return Err(SqlError::unsupported("EXPLAIN of an empty statement"));
                        };
                        let mut planner = Planner::new(
                            &mut w.ts.txn,
                            &self.db.catalog,
                            &self.database,
                            prepared.param_types.clone(),
                            &system,
                            &env,
                        );
                        explain_statement(&mut planner, inner)?
                    }
                    inner => explain_statement(&mut planner!(), inner)?,
                };
                let rows = lines.into_iter().map(|l| vec![Value::Text(l)]).collect::<Vec<_>>();
                let tag = "EXPLAIN".to_string();
                Ok(Output::Rows {
                    columns: vec![("QUERY PLAN".into(), DataType::Text)],
                    origins: vec![],
                    rows,
                    tag,
                })
            }
            S::CreateFunction(cf) => {
                let check = crate::exec::routines::check_bodies(&settings);
                w.create_function(cf, &self.database, check, &env, false)
            }
            S::Call(f) => {
                let call = planner!().procedure_call(f)?;
                w.eval_alone(&[call], &ctx)?;
                Ok(Output::Command("CALL".into()))
            }
            S::CreateDatabase { db_name, if_not_exists, .. } => {
                let name = crate::bind::name_as_written(db_name)?;
                if self.db.catalog.database_exists(&mut w.ts.txn, &name)? {
                    if *if_not_exists {
                        return Ok(Output::Command("CREATE DATABASE".into()));
                    }
                    return Err(SqlError::new(
                        code::DUPLICATE_DATABASE,
                        format!("database \"{name}\" already exists"),
                    ));
                }
                self.db.catalog.create_database(&mut w.ts.txn, &name)?;
                Ok(Output::Command("CREATE DATABASE".into()))
            }
            S::Copy { source, to, target, options, legacy_options, .. } => {
                let opts = copy_options(options, legacy_options, *to)?;
                let format = opts.format;
                match (source, to, target) {
                    (
                        ast::CopySource::Table { table_name, columns },
                        false,
                        ast::CopyTarget::Stdin,
                    ) => {
                        let table = self.db.catalog.table_or_err(
                            &mut w.ts.txn,
                            &self.database,
                            &object_name(table_name)?,
                        )?;
                        crate::exec::matviews::check_writable(&table)?;
                        let cols = copy_columns(&table, columns)?;
                        let names: Vec<&str> =
                            cols.iter().map(|&c| table.columns[c].name.as_str()).collect();
                        for n in &opts.force_not_null {
                            option_column(&names, n, "FORCE_NOT_NULL", Some(&table))?;
                        }
                        for n in &opts.force_null {
                            option_column(&names, n, "FORCE_NULL", Some(&table))?;
                        }
                        let out_cols = cols
                            .iter()
                            .map(|&c| (table.columns[c].name.clone(), table.columns[c].ty))
                            .collect();
                        w.statement_triggers(
                            &table,
                            crate::exec::triggers::Event::Insert,
                            true,
                            &env,
                        )?;
                        self.copy = Some(CopyState {
                            bytes: 0,
                            scanned: (0, false),
                            table,
                            columns: cols,
                            format,
                            header_pending: opts.header,
                            options: opts,
                            buffer: Vec::new(),
                            rows: 0,
                            implicit: false,
                        });
                        Ok(Output::CopyIn { columns: out_cols, format })
                    }
                    (source, true, ast::CopyTarget::Stdout) => {
                        let mut planner = Planner::new(
                            &mut w.ts.txn,
                            &self.db.catalog,
                            &self.database,
                            param_types(params),
                            &system,
                            &env,
                        );
                        let mut source_table = None;
                        let plan = match source {
                            ast::CopySource::Query(q) => planner.query(q, None)?,
                            ast::CopySource::Table { table_name, columns } => {
                                source_table = self
                                    .db
                                    .catalog
                                    .table(
                                        &mut *planner.txn,
                                        &self.database,
                                        &object_name(table_name)?,
                                    )
                                    .ok()
                                    .flatten();
                                let cols = match &source_table {
                                    Some(t) if t.columns.iter().any(|c| c.generated.is_some()) => {
                                        copy_columns(t, columns)?
                                            .iter()
                                            .map(|&c| quote_ident(&t.columns[c].name))
                                            .collect::<Vec<_>>()
                                            .join(", ")
                                    }
                                    _ if columns.is_empty() => "*".to_string(),
                                    _ => columns
                                        .iter()
                                        .map(|c| c.to_string())
                                        .collect::<Vec<_>>()
                                        .join(", "),
                                };
                                let q = format!("SELECT {cols} FROM {table_name}");
                                let Some(ast::Statement::Query(q)) = parse(&q)?.pop() else {
                                    return Err(SqlError::syntax("bad COPY"));
                                };
                                planner.query(&q, None)?
                            }
                        };
                        let plan = init!(select, plan);
                        let rows = select_rows!(&plan);
                        let tag = format!("COPY {}", rows.len());
                        let data = if format == CopyFormat::Binary {
                            CopyOutData::Rows(rows)
                        } else {
                            CopyOutData::Lines(copy_out_lines(
                                &rows,
                                &plan.columns,
                                &opts,
                                style,
                                source_table.as_deref(),
                            )?)
                        };
                        Ok(Output::CopyOut { columns: plan.columns, data, tag })
                    }
                    _ => Err(SqlError::unsupported(
                        "COPY to or from a file or program (use STDIN/STDOUT)",
                    )),
                }
            }
            other => match w.ddl(other, &self.database, &system, &env)? {
                Some(out) => Ok(out),
                None => Err(SqlError::unsupported(format!(
                    "the statement {}",
                    first_words(&other.to_string())
                ))),
            },
        }
    }
}

/// EXPLAIN's lines for a statement: the plan of a query, or of the rows a DML statement
/// reads (its target's scan, an INSERT's source query).
fn explain_statement(planner: &mut Planner, stmt: &ast::Statement) -> Result<Vec<String>> {
    use ast::Statement as S;
    let (with, stmt) = crate::bind::split_with(stmt);
    Ok(match stmt {
        S::Query(q) => explain(&planner.query(q, None)?),
        S::Update(u) => {
            let p = planner.with_ctes(with, |p| plan_update(p, u))?;
            let mut l = vec![format!("Update on {}", p.table.name)];
            l.extend(explain(&p.scan));
            l
        }
        S::Delete(d) => {
            let p = planner.with_ctes(with, |p| plan_delete(p, d))?;
            let mut l = vec![format!("Delete on {}", p.table.name)];
            l.extend(explain(&p.scan));
            l
        }
        S::Merge(m) => {
            let p = planner.with_ctes(with, |p| crate::bind::merge::plan_merge(p, m))?;
            let mut l = vec![format!("Merge on {}", p.table.name)];
            l.extend(explain(&p.scan));
            l
        }
        S::Insert(i) => {
            let p = planner.with_ctes(with, |p| plan_insert(p, i))?;
            let mut l = vec![format!("Insert on {}", p.table.name)];
            l.extend(explain(&p.source));
            l
        }
        other => return Err(SqlError::unsupported(format!("EXPLAIN of {other}"))),
    })
}

/// The columns COPY moves: those named, or every column but the generated ones (which COPY
/// FROM computes); naming a generated column is 42P10, as in PostgreSQL.
fn copy_columns(table: &crate::catalog::Table, columns: &[ast::Ident]) -> Result<Vec<usize>> {
    if columns.is_empty() {
        return Ok((0..table.columns.len())
            .filter(|&c| table.columns[c].generated.is_none())
            .collect());
    }
    columns
        .iter()
        .map(|c| {
            let i = table.column_or_err(&ident(c))?;
            if table.columns[i].generated.is_some() {
                return Err(SqlError::new(
                    "42P10",
                    format!("column \"{}\" is a generated column", table.columns[i].name),
                )
                .detail("Generated columns cannot be used in COPY."));
            }
            Ok(i)
        })
        .collect()
}
