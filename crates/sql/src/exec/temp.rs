//! Temporary tables (`CREATE TEMP TABLE t …`, `CREATE TABLE pg_temp.t …`).
//!
//! A session's temporary tables live in a schema of its own, `pg_temp_<pid>`, made the first
//! time it creates one; its unqualified names find them before the `search_path`'s schemas
//! (PostgreSQL's implicit `pg_temp` first), and no other session's path reaches them. New
//! relations named without a schema never go there. The schema and everything in it are
//! dropped when the session ends (and, after a crash, when the server starts again).
//! `ON COMMIT DELETE ROWS` empties a table at each commit of the session's transactions,
//! `ON COMMIT DROP` drops it at the commit of the transaction that made it;
//! `PRESERVE ROWS` is the default.
//!
//! Kiln writes a temporary table's rows like any other's (through the engine's log, so
//! under the ED model they are as durable as the session's commits); PostgreSQL keeps
//! them out of its WAL. Their names and definitions are in the catalog, visible to other
//! sessions as PostgreSQL's are.

use sqlparser::ast;

use crate::error::{Result, SqlError};
use crate::session::Session;

/// The prefix of sessions' temporary schemas.
pub(crate) const PREFIX: &str = "pg_temp_";

/// What happens to a temporary table at the commit of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnCommit {
    /// `ON COMMIT DELETE ROWS`: emptied.
    DeleteRows,
    /// `ON COMMIT DROP`: dropped (at the end of the transaction that made it).
    Drop,
}

/// A session's temporary schema and tables.
#[derive(Default)]
pub(crate) struct Temps {
    /// Whether the session made its temporary schema.
    pub(crate) used: bool,
    /// Temporary tables' ON COMMIT actions: the table, the action and the transaction
    /// (`Session::txn_serial`) that made it.
    pub(crate) on_commit: Vec<(String, OnCommit, u64)>,
}

/// Whether `name` is a session's temporary schema.
pub(crate) fn is_temp_schema(name: &str) -> bool {
    name.strip_prefix(PREFIX)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

impl Session {
    /// This session's temporary schema.
    pub(crate) fn temp_schema(&self) -> String {
        format!("{PREFIX}{}", self.pid)
    }

    /// A `CREATE TEMP TABLE` rewritten as the CREATE TABLE of a relation of the session's
    /// temporary schema (made now when the session has none), its ON COMMIT action kept by
    /// the session; `None` for any other statement.
    pub(crate) fn temp_table(&mut self, ct: &ast::CreateTable) -> Result<Option<ast::CreateTable>> {
        let ts = self.txn.as_mut().expect("a transaction is open");
        let made = Made { pid: self.pid, serial: self.txn_serial };
        temp_table(&mut self.temps, made, &self.db.catalog, &mut ts.txn, &self.database, ct)
    }

    /// After a temporary table is made: the statements that follow in the running one (a DO
    /// block's) find it. The search path installed for the statement, which listed the
    /// relations of its schemas when the statement began, is replaced until the statement
    /// ends, when the statement's own guard puts back what was there before it.
    pub(crate) fn reinstall_search_path(&mut self) -> Result<()> {
        let path = self.search_path()?;
        std::mem::forget(crate::bind::search::install(path));
        Ok(())
    }

    /// The ON COMMIT actions, run in the committing transaction just before its commit:
    /// the tables to empty and those to drop (which then leave the list).
    pub(crate) fn temp_on_commit(&mut self) -> Result<()> {
        let actions = std::mem::take(&mut self.temps.on_commit);
        for (name, action, made) in actions {
            let ts = self.txn.as_mut().expect("a transaction is open");
            // A table dropped since is forgotten.
            if self.db.catalog.table(&mut ts.txn, &self.database, &name)?.is_none() {
                continue;
            }
            let (schema, table) = name.split_once('.').unwrap_or(("", &name));
            let quoted =
                format!("{}.{}", crate::bind::quote_ident(schema), crate::bind::quote_ident(table));
            let sql = match action {
                OnCommit::DeleteRows => {
                    self.temps.on_commit.push((name.clone(), action, made));
                    format!("TRUNCATE {quoted}")
                }
                OnCommit::Drop => format!("DROP TABLE {quoted} CASCADE"),
            };
            let stmt = crate::parse::parse(&sql)?.pop().expect("one statement");
            self.run(&stmt, &[], None)?;
        }
        // What a CASCADE reported is not the client's business at its COMMIT.
        self.take_notices();
        Ok(())
    }

    /// Drops the session's temporary schema and everything in it (the session is ending).
    pub(crate) fn drop_temp_schema(&mut self) {
        if !self.temps.used {
            return;
        }
        self.temps.used = false;
        self.temps.on_commit.clear();
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.temp_schema());
        let (_, err) = self.simple_query(&sql);
        if let Some(e) = err {
            tracing::warn!(pid = self.pid, error = %e.message, "the session's temporary tables were not dropped");
        }
    }
}

/// A `CREATE TEMP TABLE` of the session `made` describes, rewritten as the CREATE TABLE of
/// a relation of its temporary schema (made now in `txn` when it has none), its ON COMMIT
/// action kept in `temps`; `None` for any other statement.
pub(crate) fn temp_table(
    temps: &mut Temps,
    made: Made,
    catalog: &crate::catalog::Catalog,
    txn: &mut kiln_engine::Transaction,
    database: &str,
    ct: &ast::CreateTable,
) -> Result<Option<ast::CreateTable>> {
    let parts: Vec<String> = ct
        .name
        .0
        .iter()
        .map(|p| p.as_ident().map(crate::bind::ident).unwrap_or_default())
        .collect();
    if let [s, _] = parts.as_slice() {
        if is_temp_schema(s) && *s != made.schema() {
            return Err(SqlError::unsupported(
                "creating relations in temporary schemas of other sessions",
            ));
        }
    }
    // (A name in the session's own temporary schema is what this rewrites to: it is made
    // as any table there.)
    let in_pg_temp = matches!(parts.as_slice(), [s, _] if s == "pg_temp");
    if !ct.temporary && !in_pg_temp {
        if ct.on_commit.is_some() {
            return Err(SqlError::new(
                crate::error::code::INVALID_TABLE_DEFINITION,
                "ON COMMIT can only be used on temporary tables",
            ));
        }
        return Ok(None);
    }
    let name = match parts.as_slice() {
        [n] => n.clone(),
        [s, n] if s == "pg_temp" || *s == made.schema() => n.clone(),
        _ => {
            return Err(SqlError::new(
                crate::error::code::INVALID_TABLE_DEFINITION,
                "cannot create temporary relation in non-temporary schema",
            ))
        }
    };
    if name.contains('.') {
        return Err(crate::bind::dotted_name(&name));
    }
    let schema = made.schema();
    if catalog.schema(txn, database, &schema)?.is_none() {
        let id = catalog.next_id(txn)?;
        let def = crate::catalog::Schema { id, name: schema.clone(), comment: None };
        catalog.put_schema(txn, database, &def)?;
    }
    temps.used = true;
    let on_commit = match ct.on_commit {
        Some(ast::OnCommit::DeleteRows) => Some(OnCommit::DeleteRows),
        Some(ast::OnCommit::Drop) => Some(OnCommit::Drop),
        Some(ast::OnCommit::PreserveRows) | None => None,
    };
    if let Some(action) = on_commit {
        temps.on_commit.push((format!("{schema}.{name}"), action, made.serial));
    }
    let qualified = ast::ObjectName::from(vec![
        ast::Ident::with_quote('"', schema),
        ast::Ident::with_quote('"', name),
    ]);
    Ok(Some(ast::CreateTable { name: qualified, temporary: false, on_commit: None, ..ct.clone() }))
}

/// Who makes a temporary table: the session's process id (which names its temporary
/// schema) and its transaction's serial number.
#[derive(Clone, Copy)]
pub(crate) struct Made {
    pub(crate) pid: i32,
    pub(crate) serial: u64,
}

impl Made {
    /// The session's temporary schema.
    pub(crate) fn schema(self) -> String {
        format!("{PREFIX}{}", self.pid)
    }
}

impl crate::exec::write::Writer<'_> {
    /// [`temp_table`] for the writer's session.
    pub(crate) fn temp_table(
        &mut self,
        ct: &ast::CreateTable,
        database: &str,
    ) -> Result<Option<ast::CreateTable>> {
        let made = Made { pid: self.pid, serial: self.txn_serial };
        temp_table(self.temps, made, &self.db.catalog, &mut self.ts.txn, database, ct)
    }

    /// After a relation is made by a running statement (a function's CREATE TEMP TABLE):
    /// the installed search path is loaded again, the session's temporary schema first once
    /// it has one, so that the statement's later parts find the relation.
    pub(crate) fn refresh_search_path(&mut self, database: &str) -> Result<()> {
        let mut schemas = crate::bind::search::installed_schemas();
        if schemas.is_empty() {
            schemas.push("public".to_string());
        }
        let temp = Made { pid: self.pid, serial: self.txn_serial }.schema();
        if self.temps.used && !schemas.contains(&temp) {
            schemas.insert(0, temp);
        }
        let path: Vec<String> = schemas.iter().map(|s| crate::bind::quote_ident(s)).collect();
        let loaded = crate::bind::search::SearchPath::load(
            &self.db.catalog,
            &mut self.ts.txn,
            database,
            &path.join(", "),
        )?;
        // The statement's own guard puts back what was there before it.
        std::mem::forget(crate::bind::search::install(loaded));
        Ok(())
    }
}
