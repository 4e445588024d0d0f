//! Materialized views: `CREATE MATERIALIZED VIEW … [WITH [NO] DATA]`, `REFRESH MATERIALIZED
//! VIEW [CONCURRENTLY] … [WITH [NO] DATA]`, `DROP MATERIALIZED VIEW`.
//!
//! A materialized view is a table (`catalog::Table::matview` set) that holds its query's rows
//! as of its last refresh: it is read, scanned and indexed as a table is, and written only by
//! REFRESH, which runs the stored query in the refreshing transaction and replaces the rows
//! (an INSERT, UPDATE, DELETE, MERGE, COPY FROM or TRUNCATE of it is 42809). One created or
//! refreshed `WITH NO DATA` holds no rows and cannot be read until refreshed (55000). Like a
//! view's, its query is stored with the relations the search path resolved qualified, and
//! the relations it reads cannot be dropped while it exists (2BP01, or dropped with it by
//! CASCADE). `REFRESH … CONCURRENTLY` needs a unique index on it, as in PostgreSQL; Kiln's
//! refresh never blocks readers anyway (they read their snapshot), so it is the same
//! replacement.

use sqlparser::ast;

use crate::bind::{new_object_name, object_name, Planner};
use crate::catalog::{MatView, Table};
use crate::ed::SessionEnv;
use crate::error::{code, Result, SqlError};
use crate::expr::Ctx;
use crate::parse::domain::{CreateMatView, RefreshMatView};
use crate::pg::system::System;
use crate::session::{session_env, session_writer, Output, Session};
use crate::types::{now_micros, Value};

/// 42809 for a write to materialized view `name`.
pub(crate) fn cannot_change(name: &str) -> SqlError {
    SqlError::new(
        code::WRONG_OBJECT_TYPE,
        format!("cannot change materialized view \"{}\"", crate::catalog::unqualified(name)),
    )
}

/// 55000 for a read of a materialized view that holds no data.
pub(crate) fn not_populated(name: &str) -> SqlError {
    SqlError::new(
        code::NOT_IN_PREREQUISITE_STATE,
        format!(
            "materialized view \"{}\" has not been populated",
            crate::catalog::unqualified(name)
        ),
    )
    .hint("Use the REFRESH MATERIALIZED VIEW command.")
}

/// 42809 unless `t` is a table that is no materialized view (a write's target).
pub(crate) fn check_writable(t: &Table) -> Result<()> {
    match t.matview {
        Some(_) => Err(cannot_change(&t.name)),
        None => Ok(()),
    }
}

impl Session {
    /// The rows of a materialized view's query, run in the open transaction.
    fn matview_rows(&mut self, query: &str) -> Result<Vec<Vec<Value>>> {
        let stmt = crate::parse::parse(query)?.pop().ok_or_else(|| {
            SqlError::new(code::DATA_CORRUPTED, "a materialized view's query is empty")
        })?;
        // Stored names are the catalog's, read without the search path.
        let _unsearched = crate::bind::search::install(None);
        match self.run(&stmt, &[], None)? {
            Output::Rows { rows, .. } => Ok(rows),
            _ => {
                Err(SqlError::new(code::DATA_CORRUPTED, "a materialized view's query gave no rows"))
            }
        }
    }

    /// `CREATE MATERIALIZED VIEW [IF NOT EXISTS] name [(columns)] AS query [WITH [NO] DATA]`.
    pub(crate) fn create_matview(&mut self, m: &CreateMatView) -> Result<Output> {
        let name = new_object_name(&m.name)?;
        let style = self.style();
        let settings = crate::pg::settings::settings_in_force(
            &self.settings,
            self.txn.as_ref().map(|t| &t.local),
        );
        let view = {
            let env = session_env!(self, style, &settings);
            let ts = self.txn.as_mut().expect("a transaction is open");
            {
                let mut w = session_writer!(self, ts, None);
                if w.table_name_taken(&self.database, &name, m.if_not_exists)? {
                    return Ok(Output::Command("CREATE MATERIALIZED VIEW".into()));
                }
            }
            let system = System::new(&self.db, &self.database, &settings, &self.cursors);
            let mut planner =
                Planner::new(&mut ts.txn, &self.db.catalog, &self.database, vec![], &system, &env);
            let aliases = m.columns.iter().map(crate::bind::ident).collect();
            crate::exec::views::plan_new_view(
                &mut planner,
                &self.database,
                &name,
                aliases,
                &m.query,
            )?
        };
        let rows = if m.with_data { self.matview_rows(&view.query)? } else { Vec::new() };
        let columns =
            view.column_names().into_iter().zip(view.columns.iter().map(|c| c.1)).collect();
        let settings = crate::pg::settings::settings_in_force(
            &self.settings,
            self.txn.as_ref().map(|t| &t.local),
        );
        let env = session_env!(self, style, &settings);
        let ctx = Ctx::new(&[], &env);
        let ts = self.txn.as_mut().expect("a transaction is open");
        let mut w = session_writer!(self, ts, None);
        let out = w.create_table_as(&name, columns, rows, &self.database, &ctx)?;
        let mut t = (*w.db.catalog.table_or_err(&mut w.ts.txn, &self.database, &name)?).clone();
        t.matview = Some(MatView {
            query: view.query.clone(),
            populated: m.with_data,
            depends_on: view.depends_on.clone(),
        });
        w.db.catalog.put_table(&mut w.ts.txn, &t)?;
        Ok(if m.with_data { out } else { Output::Command("CREATE MATERIALIZED VIEW".into()) })
    }

    /// `REFRESH MATERIALIZED VIEW [CONCURRENTLY] name [WITH [NO] DATA]`: its rows replaced by
    /// its query's, in the refreshing transaction.
    pub(crate) fn refresh_matview(&mut self, r: &RefreshMatView) -> Result<Output> {
        let name = object_name(&r.name)?;
        let ts = self.txn.as_mut().expect("a transaction is open");
        let t = self.db.catalog.table(&mut ts.txn, &self.database, &name)?.ok_or_else(|| {
            SqlError::new(code::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist"))
        })?;
        let Some(mv) = t.matview.clone() else {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                format!("\"{}\" is not a materialized view", crate::catalog::unqualified(&name)),
            ));
        };
        if r.concurrently {
            if !r.with_data {
                return Err(SqlError::new(
                    code::SYNTAX,
                    "REFRESH options CONCURRENTLY and WITH NO DATA cannot be used together",
                ));
            }
            if !mv.populated {
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    "CONCURRENTLY cannot be used when the materialized view is not populated",
                ));
            }
            let unique = t.indexes.iter().any(|i| {
                i.unique
                    && i.predicate.is_none()
                    && i.expressions.is_empty()
                    && !i.columns.is_empty()
            });
            if !unique {
                return Err(SqlError::new(
                    code::NOT_IN_PREREQUISITE_STATE,
                    format!(
                        "cannot refresh materialized view \"{}.{}\" concurrently",
                        crate::catalog::schema_of(&name),
                        crate::catalog::unqualified(&name)
                    ),
                )
                .hint("Create a unique index with no WHERE clause on one or more columns of the materialized view."));
            }
        }
        let rows = if r.with_data { self.matview_rows(&mv.query)? } else { Vec::new() };
        let style = self.style();
        let settings = crate::pg::settings::settings_in_force(
            &self.settings,
            self.txn.as_ref().map(|t| &t.local),
        );
        let env = session_env!(self, style, &settings);
        let ctx = Ctx::new(&[], &env);
        let ts = self.txn.as_mut().expect("a transaction is open");
        let mut w = session_writer!(self, ts, None);
        // The definition as the refresh found it: a concurrent change conflicts with it.
        let mut t = (*t).clone();
        w.truncate(&t)?;
        w.insert_rows(&t, rows, &ctx)?;
        t.matview = Some(MatView { populated: r.with_data, ..mv });
        w.db.catalog.put_table(&mut w.ts.txn, &t)?;
        Ok(Output::Command("REFRESH MATERIALIZED VIEW".into()))
    }
}

impl crate::exec::write::Writer<'_> {
    /// `DROP MATERIALIZED VIEW [IF EXISTS] name, … [CASCADE]`.
    pub(crate) fn drop_matviews(
        &mut self,
        names: &[ast::ObjectName],
        if_exists: bool,
        cascade: bool,
        database: &str,
    ) -> Result<Output> {
        let dropping = names.iter().map(object_name).collect::<Result<Vec<_>>>()?;
        for name in &dropping {
            let t = self.db.catalog.table(&mut self.ts.txn, database, name)?;
            match t {
                Some(t) if t.matview.is_some() => {
                    self.drop_dependent_views(
                        "materialized view",
                        name,
                        cascade,
                        &dropping,
                        database,
                    )?;
                    self.drop_dependent_matviews(
                        "materialized view",
                        name,
                        cascade,
                        &dropping,
                        database,
                    )?;
                    self.truncate(&t)?;
                    self.db.catalog.delete_table(&mut self.ts.txn, &t)?;
                }
                Some(_) => {
                    return Err(SqlError::new(
                        code::WRONG_OBJECT_TYPE,
                        format!(
                            "\"{}\" is not a materialized view",
                            crate::catalog::unqualified(name)
                        ),
                    )
                    .hint("Use DROP TABLE to remove a table."))
                }
                None if if_exists => {
                    self.skipping("00000", format!("materialized view \"{name}\" does not exist"))
                }
                None => {
                    return Err(SqlError::new(
                        code::UNDEFINED_TABLE,
                        format!("materialized view \"{name}\" does not exist"),
                    ))
                }
            }
        }
        Ok(Output::Command("DROP MATERIALIZED VIEW".into()))
    }

    /// Drops (with CASCADE; 2BP01 without) the materialized views that read relation `name`
    /// of kind `kind`, unless the statement drops them itself.
    pub(crate) fn drop_dependent_matviews(
        &mut self,
        kind: &str,
        name: &str,
        cascade: bool,
        dropping: &[String],
        database: &str,
    ) -> Result<()> {
        let readers: Vec<std::sync::Arc<Table>> = self
            .db
            .catalog
            .tables(&mut self.ts.txn, database)?
            .into_iter()
            .filter(|t| t.matview.as_ref().is_some_and(|m| m.depends_on.iter().any(|d| d == name)))
            .filter(|t| !dropping.contains(&t.name))
            .collect();
        if readers.is_empty() {
            return Ok(());
        }
        if !cascade {
            let lines: Vec<String> = readers
                .iter()
                .map(|t| format!("materialized view {} depends on {kind} {name}", t.name))
                .collect();
            return Err(crate::exec::write::depended_on(&format!("{kind} {name}"), &lines));
        }
        for t in readers {
            self.cascade_to(format!("materialized view {}", t.name));
            self.drop_dependent_views("materialized view", &t.name, true, dropping, database)?;
            self.drop_dependent_matviews("materialized view", &t.name, true, dropping, database)?;
            self.truncate(&t)?;
            self.db.catalog.delete_table(&mut self.ts.txn, &t)?;
        }
        Ok(())
    }
}
