//! Server-side cursors: `DECLARE name [NO SCROLL] CURSOR [WITH HOLD] FOR query`,
//! `FETCH [NEXT | n | FORWARD [n | ALL] | ALL] FROM name`, `CLOSE name | ALL`.
//!
//! A cursor's query runs when it is declared, in the declaring transaction's snapshot, and
//! its rows are kept (at most the statement row limit, as for any query); FETCH hands them
//! out in order. A cursor without HOLD ends with its transaction; one WITH HOLD outlives the
//! commit of the transaction that declared it (a rollback removes it), as in PostgreSQL.
//! Cursors only move forward: FETCH PRIOR / BACKWARD / ABSOLUTE / … answer 0A000 (PostgreSQL
//! too refuses backward moves on a NO SCROLL cursor), and MOVE is not parsed.

use std::collections::HashMap;

use sqlparser::ast;

use crate::error::{code, Result, SqlError};
use crate::session::{Output, Session};
use crate::types::{Columns, Row};

/// One open cursor.
pub(crate) struct Cursor {
    /// The DECLARE statement's text (pg_cursors).
    statement: String,
    columns: Columns,
    origins: crate::types::Origins,
    rows: std::vec::IntoIter<Row>,
    hold: bool,
    /// The transaction that declared it (`Session::txn_serial`); `None` once that
    /// transaction committed (only cursors WITH HOLD survive it).
    declared_in: Option<u64>,
}

/// A session's cursors, by name.
#[derive(Default)]
pub(crate) struct Cursors {
    open: HashMap<String, Cursor>,
}

impl Cursors {
    /// Each open cursor's name, DECLARE text and WITH HOLD (pg_cursors).
    pub(crate) fn listed(&self) -> Vec<(String, String, bool)> {
        let mut all: Vec<_> =
            self.open.iter().map(|(n, c)| (n.clone(), c.statement.clone(), c.hold)).collect();
        all.sort();
        all
    }

    /// The columns of an open cursor and their origins (for Describe of a FETCH).
    pub(crate) fn columns(&self, name: &str) -> Option<(Columns, crate::types::Origins)> {
        self.open.get(name).map(|c| (c.columns.clone(), c.origins.clone()))
    }

    /// The transaction `serial` committed: its cursors WITH HOLD stay, the others close.
    pub(crate) fn committed(&mut self, serial: u64) {
        self.open.retain(|_, c| c.declared_in != Some(serial) || c.hold);
        for c in self.open.values_mut() {
            if c.declared_in == Some(serial) {
                c.declared_in = None;
            }
        }
    }

    /// The transaction `serial` rolled back: every cursor it declared closes.
    pub(crate) fn rolled_back(&mut self, serial: u64) {
        self.open.retain(|_, c| c.declared_in != Some(serial));
    }
}

fn no_cursor(name: &str) -> SqlError {
    SqlError::new(code::INVALID_CURSOR_NAME, format!("cursor \"{name}\" does not exist"))
}

fn count_of(v: &ast::ValueWithSpan) -> Result<u64> {
    match &v.value {
        ast::Value::Number(n, _) => n.parse::<i64>().ok().filter(|n| *n >= 0).map(|n| n as u64),
        _ => None,
    }
    .ok_or_else(|| SqlError::unsupported(format!("FETCH {v} (cursors move forward only)")))
}

impl Session {
    /// `DECLARE`: runs the query now and keeps its rows.
    pub(crate) fn declare_cursor(
        &mut self,
        d: &ast::Declare,
        params: &[crate::types::Value],
        in_implicit: bool,
    ) -> Result<Output> {
        let [name] = d.names.as_slice() else {
            return Err(SqlError::syntax("DECLARE names one cursor"));
        };
        let name = name.value.clone();
        let Some(query) = &d.for_query else {
            return Err(SqlError::unsupported("DECLARE without a cursor query"));
        };
        if d.scroll == Some(true) {
            return Err(SqlError::unsupported("SCROLL cursors (cursors move forward only)"));
        }
        let hold = d.hold == Some(true);
        let in_block = self.txn.as_ref().is_some_and(|t| t.explicit);
        if !hold && !in_block {
            return Err(SqlError::new(
                code::NO_ACTIVE_TXN,
                "DECLARE CURSOR can only be used in transaction blocks",
            ));
        }
        if self.cursors.open.contains_key(&name) {
            return Err(SqlError::new("42P03", format!("cursor \"{name}\" already exists")));
        }
        let statement = format!("DECLARE {d}");
        let stmt = ast::Statement::Query(query.clone());
        let in_txn = self.txn.is_some();
        let serial = self.txn_serial;
        let (columns, origins, rows) =
            match self.in_transaction(&stmt, None, params, in_implicit, None)? {
                Output::Rows { columns, origins, rows, .. } => (columns, origins, rows),
                _ => {
                    return Err(SqlError::unsupported(
                        "a cursor over a statement that returns no rows",
                    ))
                }
            };
        // Outside a transaction the query ran in one of its own, already committed.
        let declared_in = in_txn.then_some(serial);
        self.cursors.open.insert(
            name,
            Cursor { statement, columns, origins, rows: rows.into_iter(), hold, declared_in },
        );
        Ok(Output::Command("DECLARE CURSOR".into()))
    }

    /// `FETCH`: the next rows of a cursor.
    pub(crate) fn fetch_cursor(
        &mut self,
        name: &ast::Ident,
        direction: &ast::FetchDirection,
    ) -> Result<Output> {
        use ast::FetchDirection as D;
        let count = match direction {
            D::Next | D::Forward { limit: None } => 1,
            D::Count { limit } | D::Forward { limit: Some(limit) } => count_of(limit)?,
            D::All | D::ForwardAll => u64::MAX,
            other => {
                return Err(SqlError::unsupported(format!(
                    "FETCH {other} (cursors move forward only)"
                )))
            }
        };
        let cursor =
            self.cursors.open.get_mut(&name.value).ok_or_else(|| no_cursor(&name.value))?;
        let rows: Vec<Row> =
            cursor.rows.by_ref().take(count.min(usize::MAX as u64) as usize).collect();
        let tag = format!("FETCH {}", rows.len());
        Ok(Output::Rows {
            columns: cursor.columns.clone(),
            origins: cursor.origins.clone(),
            rows,
            tag,
        })
    }

    /// `CLOSE name` / `CLOSE ALL`.
    pub(crate) fn close_cursor(&mut self, which: &ast::CloseCursor) -> Result<Output> {
        match which {
            ast::CloseCursor::All => self.cursors.open.clear(),
            ast::CloseCursor::Specific { name } => {
                self.cursors.open.remove(&name.value).ok_or_else(|| no_cursor(&name.value))?;
            }
        }
        Ok(Output::Command("CLOSE CURSOR".into()))
    }
}
