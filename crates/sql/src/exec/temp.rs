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
        let parts: Vec<String> = ct
            .name
            .0
            .iter()
            .map(|p| p.as_ident().map(crate::bind::ident).unwrap_or_default())
            .collect();
        if let [s, _] = parts.as_slice() {
            if is_temp_schema(s) && *s != self.temp_schema() {
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
            [s, n] if s == "pg_temp" || *s == self.temp_schema() => n.clone(),
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
        self.make_temp_schema()?;
        let schema = self.temp_schema();
        let on_commit = match ct.on_commit {
            Some(ast::OnCommit::DeleteRows) => Some(OnCommit::DeleteRows),
            Some(ast::OnCommit::Drop) => Some(OnCommit::Drop),
            Some(ast::OnCommit::PreserveRows) | None => None,
        };
        if let Some(action) = on_commit {
            self.temp_on_commit.push((format!("{schema}.{name}"), action, self.txn_serial));
        }
        let qualified = ast::ObjectName::from(vec![
            ast::Ident::with_quote('"', schema),
            ast::Ident::with_quote('"', name),
        ]);
        Ok(Some(ast::CreateTable {
            name: qualified,
            temporary: false,
            on_commit: None,
            ..ct.clone()
        }))
    }

    /// Makes the session's temporary schema in its transaction, unless it exists.
    fn make_temp_schema(&mut self) -> Result<()> {
        let schema = self.temp_schema();
        let ts = self.txn.as_mut().expect("a transaction is open");
        if self.db.catalog.schema(&mut ts.txn, &self.database, &schema)?.is_none() {
            let id = self.db.catalog.next_id(&mut ts.txn)?;
            let def = crate::catalog::Schema { id, name: schema, comment: None };
            self.db.catalog.put_schema(&mut ts.txn, &self.database, &def)?;
        }
        self.temp_used = true;
        Ok(())
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
        let actions = std::mem::take(&mut self.temp_on_commit);
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
                    self.temp_on_commit.push((name.clone(), action, made));
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
        if !self.temp_used {
            return;
        }
        self.temp_used = false;
        self.temp_on_commit.clear();
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.temp_schema());
        let (_, err) = self.simple_query(&sql);
        if let Some(e) = err {
            tracing::warn!(pid = self.pid, error = %e.message, "the session's temporary tables were not dropped");
        }
    }
}
