//! Server-side cursors: `DECLARE name [[NO] SCROLL] CURSOR [WITH HOLD] FOR query`,
//! `FETCH` and `MOVE` in every direction (`NEXT`, `PRIOR`, `FIRST`, `LAST`, `ABSOLUTE n`,
//! `RELATIVE n`, `n`, `ALL`, `FORWARD [n | ALL]`, `BACKWARD [n | ALL]`), `CLOSE name | ALL`.
//!
//! A cursor's query runs when it is declared, in the declaring transaction's snapshot, and
//! its rows are kept (at most the statement row limit, as for any query); the cursor has a
//! position among them, as PostgreSQL's does: before the first row, on a row, or after the
//! last. A NO SCROLL cursor refuses to move backward (55000); others may, the rows being
//! kept. A cursor without HOLD ends with its transaction; one WITH HOLD outlives the commit
//! of the transaction that declared it (a rollback removes it), as in PostgreSQL.
//!
//! A portal the extended protocol binds under a name is a cursor of the same name, as in
//! PostgreSQL, so that `FETCH` and `MOVE` in SQL reach it (asyncpg moves its cursors so). Its
//! statement runs at the first Execute, FETCH or MOVE; it ends with its transaction, or at
//! the Sync that ends the extended-protocol exchange outside a transaction block.

use std::collections::HashMap;

use sqlparser::ast;

use crate::error::{code, Result, SqlError};
use crate::session::{Output, Prepared, Session};
use crate::types::{Columns, Row, Value};

/// One open cursor.
pub(crate) struct Cursor {
    /// The DECLARE statement's text (pg_cursors).
    statement: String,
    columns: Columns,
    origins: crate::types::Origins,
    rows: Vec<Row>,
    /// 0 before the first row, `k` on row `k`, `rows.len() + 1` after the last.
    position: usize,
    /// NO SCROLL: backward moves are refused.
    no_scroll: bool,
    hold: bool,
    /// The transaction that declared it (`Session::txn_serial`); `None` once that
    /// transaction committed (only cursors WITH HOLD survive it).
    declared_in: Option<u64>,
    /// A protocol portal's statement and parameters, until it first runs.
    unrun: Option<(std::sync::Arc<Prepared>, Vec<Value>)>,
    /// Bound by the protocol (not DECLAREd).
    portal: bool,
}

/// A session's cursors, by name.
#[derive(Default)]
pub(crate) struct Cursors {
    open: HashMap<String, Cursor>,
}

impl Cursors {
    /// Each open cursor's name, DECLARE text, WITH HOLD and whether it scrolls (pg_cursors).
    pub(crate) fn listed(&self) -> Vec<(String, String, bool, bool)> {
        let mut all: Vec<_> = self
            .open
            .iter()
            .map(|(n, c)| (n.clone(), c.statement.clone(), c.hold, !c.no_scroll))
            .collect();
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

/// A FETCH count (negative counts go the other way).
fn signed(v: &ast::ValueWithSpan) -> Result<i64> {
    match &v.value {
        ast::Value::Number(n, _) => n.parse::<i64>().ok(),
        _ => None,
    }
    .ok_or_else(|| SqlError::syntax(format!("a FETCH count must be an integer, not {v}")))
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
        let no_scroll = d.scroll == Some(false);
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
        let cursor = Cursor {
            statement,
            columns,
            origins,
            rows,
            position: 0,
            no_scroll,
            hold,
            declared_in,
            unrun: None,
            portal: false,
        };
        self.cursors.open.insert(name, cursor);
        Ok(Output::Command("DECLARE CURSOR".into()))
    }

    /// `FETCH` (or, with `only_move`, `MOVE`): moves the cursor and answers the rows it
    /// passed onto, in the order it met them.
    pub(crate) fn fetch_cursor(
        &mut self,
        name: &ast::Ident,
        direction: &ast::FetchDirection,
        only_move: bool,
    ) -> Result<Output> {
        use ast::FetchDirection as D;
        self.run_portal(&name.value)?;
        let cursor =
            self.cursors.open.get_mut(&name.value).ok_or_else(|| no_cursor(&name.value))?;
        let n = cursor.rows.len() as i64;
        let pos = cursor.position as i64;
        // A step: (from where, how many rows to step over, forward or backward).
        enum Step {
            /// Go to this position and answer its row, if it is one.
            To(i64),
            /// Step `count` rows (forward when positive), answering each row reached.
            By(i64),
        }
        let step = match direction {
            D::Next => Step::By(1),
            D::Prior => Step::By(-1),
            D::First => Step::To(1),
            D::Last => Step::To(n),
            D::Absolute { limit } => {
                let k = signed(limit)?;
                Step::To(if k < 0 { n + 1 + k } else { k })
            }
            D::Relative { limit } => match signed(limit)? {
                0 => Step::To(pos),
                k => Step::To(pos + k),
            },
            D::Count { limit } | D::Forward { limit: Some(limit) } => match signed(limit)? {
                0 => Step::To(pos),
                k => Step::By(k),
            },
            D::Forward { limit: None } => Step::By(1),
            D::All | D::ForwardAll => Step::By(i64::MAX),
            D::Backward { limit: None } => Step::By(-1),
            D::Backward { limit: Some(limit) } => match signed(limit)? {
                0 => Step::To(pos),
                k => Step::By(k.saturating_neg()),
            },
            D::BackwardAll => Step::By(i64::MIN + 1),
        };
        let backward = match step {
            Step::To(p) => p < pos,
            Step::By(k) => k < 0,
        };
        if backward && cursor.no_scroll {
            return Err(SqlError::new(
                code::NOT_IN_PREREQUISITE_STATE,
                "cursor can only scan forward",
            )
            .hint("Declare it with SCROLL option to enable backward scan."));
        }
        let mut rows: Vec<Row> = Vec::new();
        let mut passed = 0u64;
        match step {
            Step::To(p) => {
                let p = p.clamp(0, n + 1);
                cursor.position = p as usize;
                if (1..=n).contains(&p) {
                    passed = 1;
                    if !only_move {
                        rows.push(cursor.rows[p as usize - 1].clone());
                    }
                }
            }
            Step::By(k) => {
                // Each step reaches the next (or previous) row; past either end the cursor
                // rests after the last (before the first) row.
                let target = if k > 0 {
                    pos.saturating_add(k).min(n + 1)
                } else {
                    pos.saturating_add(k).max(0)
                };
                let reached: Box<dyn Iterator<Item = i64>> = if k > 0 {
                    Box::new(pos + 1..=target.min(n))
                } else {
                    Box::new((target.max(1)..pos.min(n + 1)).rev())
                };
                for p in reached {
                    passed += 1;
                    if !only_move {
                        rows.push(cursor.rows[p as usize - 1].clone());
                    }
                }
                cursor.position = target as usize;
            }
        }
        if only_move {
            return Ok(Output::Command(format!("MOVE {passed}")));
        }
        let tag = format!("FETCH {}", rows.len());
        Ok(Output::Rows {
            columns: cursor.columns.clone(),
            origins: cursor.origins.clone(),
            rows,
            tag,
        })
    }

    /// Binds a protocol portal `name` to a statement that returns rows; it runs when first
    /// read. 42P03 when a cursor or portal of that name is open.
    pub fn bind_portal(
        &mut self,
        name: &str,
        prepared: std::sync::Arc<Prepared>,
        params: Vec<Value>,
    ) -> Result<()> {
        if self.cursors.open.contains_key(name) {
            return Err(SqlError::new("42P03", format!("cursor \"{name}\" already exists")));
        }
        let in_block = self.txn.as_ref().is_some_and(|t| t.explicit);
        let cursor = Cursor {
            statement: prepared.sql.clone(),
            columns: prepared.columns.clone().unwrap_or_default(),
            origins: prepared.origins.clone(),
            rows: Vec::new(),
            position: 0,
            no_scroll: false,
            hold: false,
            declared_in: in_block.then_some(self.txn_serial),
            unrun: Some((prepared, params)),
            portal: true,
        };
        self.cursors.open.insert(name.to_string(), cursor);
        Ok(())
    }

    /// Whether a protocol portal `name` is open here.
    pub fn has_portal(&self, name: &str) -> bool {
        self.cursors.open.get(name).is_some_and(|c| c.portal)
    }

    /// The next rows of portal `name`, at most `max` (all when none): the rows, whether
    /// more are left, and their columns. Runs its statement first if it has not run; an
    /// error closes the portal.
    pub fn fetch_portal(
        &mut self,
        name: &str,
        max: Option<usize>,
    ) -> Result<(Vec<Row>, bool, Columns)> {
        self.run_portal(name)?;
        let cursor = self.cursors.open.get_mut(name).ok_or_else(|| no_cursor(name))?;
        let from = cursor.position.min(cursor.rows.len());
        let to = match max {
            Some(m) => from.saturating_add(m).min(cursor.rows.len()),
            None => cursor.rows.len(),
        };
        let rows = cursor.rows[from..to].to_vec();
        cursor.position = to;
        Ok((rows, to < cursor.rows.len(), cursor.columns.clone()))
    }

    /// Closes protocol portal `name` (Close, or its statement's error).
    pub fn close_portal(&mut self, name: &str) {
        if self.has_portal(name) {
            self.cursors.open.remove(name);
        }
    }

    /// The Sync that ends an exchange outside a transaction block closes its portals (the
    /// implicit transaction they belonged to has ended).
    pub fn close_portals_outside_block(&mut self) {
        if self.transaction_status() == b'I' {
            self.cursors.open.retain(|_, c| !c.portal);
        }
    }

    /// Runs a portal's statement if it has not run yet, keeping its rows.
    fn run_portal(&mut self, name: &str) -> Result<()> {
        let Some((prepared, params)) = self.cursors.open.get_mut(name).and_then(|c| c.unrun.take())
        else {
            return Ok(());
        };
        let out = self.execute_prepared(&prepared, &params);
        let rows = match out {
            Ok(Output::Rows { rows, .. }) => rows,
            Ok(_) => Vec::new(),
            Err(e) => {
                self.cursors.open.remove(name);
                return Err(e);
            }
        };
        if let Some(c) = self.cursors.open.get_mut(name) {
            c.rows = rows;
        }
        Ok(())
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
