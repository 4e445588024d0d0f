//! `WITH` whose common table expressions include INSERT, UPDATE or DELETE (data-modifying
//! CTEs). PostgreSQL runs every part of such a statement against one snapshot: no part sees
//! another's changes, and the main query reads a data-modifying CTE only through its
//! RETURNING rows. Kiln runs each data-modifying CTE first, in order, keeping its RETURNING
//! rows, and then the rest; the two orders agree exactly when no part that runs later reads
//! (or, for an INSERT, writes) a table an earlier one changed, which [`check_disjoint`]
//! requires, refusing the statement otherwise (0A000) rather than answering differently.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast;

use crate::bind::*;
use crate::error::{Result, SqlError};

/// The statement a `WITH` with data-modifying CTEs leads to.
pub(crate) enum Main<'s> {
    /// A query (its own `WITH` taken off).
    Query(Box<ast::Query>),
    /// INSERT, UPDATE, DELETE or MERGE.
    Dml(&'s ast::Statement),
}

/// The `WITH` of `stmt` and the statement it leads to, when one of its CTEs is an INSERT,
/// UPDATE or DELETE.
pub(crate) fn modifying_with(stmt: &ast::Statement) -> Option<(&ast::With, Main<'_>)> {
    let ast::Statement::Query(q) = stmt else { return None };
    let with = q.with.as_ref()?;
    with.cte_tables.iter().find(|c| modifying(&c.query).is_some())?;
    let main = match q.body.as_ref() {
        ast::SetExpr::Insert(s)
        | ast::SetExpr::Update(s)
        | ast::SetExpr::Delete(s)
        | ast::SetExpr::Merge(s) => Main::Dml(s),
        _ => {
            let mut body = q.clone();
            body.with = None;
            Main::Query(body)
        }
    };
    Some((with, main))
}

/// The INSERT, UPDATE or DELETE a CTE's query is, if it is one.
pub(crate) fn modifying(q: &ast::Query) -> Option<&ast::Statement> {
    match q.body.as_ref() {
        ast::SetExpr::Insert(s) | ast::SetExpr::Update(s) | ast::SetExpr::Delete(s) => Some(s),
        _ => None,
    }
}

/// The table an INSERT, UPDATE or DELETE writes.
fn target(stmt: &ast::Statement) -> Result<Option<String>> {
    Ok(match stmt {
        ast::Statement::Insert(i) => match &i.table {
            ast::TableObject::TableName(n) => Some(object_name(n)?),
            _ => None,
        },
        ast::Statement::Update(u) => match &u.table.relation {
            ast::TableFactor::Table { name, .. } => Some(object_name(name)?),
            _ => None,
        },
        ast::Statement::Delete(d) => {
            let tables = match &d.from {
                ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
            };
            match tables.first().map(|t| &t.relation) {
                Some(ast::TableFactor::Table { name, .. }) => Some(object_name(name)?),
                _ => None,
            }
        }
        _ => None,
    })
}

impl Planner<'_> {
    /// What a data-modifying CTE gives its readers, as far as describing the statement
    /// needs: the columns of its RETURNING (no rows).
    pub(crate) fn described_returning(&mut self, stmt: &ast::Statement) -> Result<Ran> {
        use crate::bind::dml::{plan_delete, plan_insert, plan_update};
        let returning = match stmt {
            ast::Statement::Insert(i) => plan_insert(self, i)?.returning,
            ast::Statement::Update(u) => plan_update(self, u)?.returning,
            ast::Statement::Delete(d) => plan_delete(self, d)?.returning,
            _ => None,
        };
        Ok(match returning {
            Some(r) => Ran::Returned(std::sync::Arc::new(r.columns), r.origins, Default::default()),
            None => Ran::Nothing,
        })
    }

    /// Every relation `node` names (tables, views, CTE names), with the tables the views
    /// among them read, through views of views.
    fn relations<V: ast::Visit>(&mut self, node: &V, out: &mut BTreeSet<String>) -> Result<()> {
        let mut names = Vec::new();
        let _ = ast::visit_relations(node, |n| {
            names.push(n.clone());
            ControlFlow::<()>::Continue(())
        });
        let mut pending: Vec<(String, usize)> = Vec::new();
        for n in names {
            pending.push((object_name(&n)?, 0));
        }
        while let Some((name, depth)) = pending.pop() {
            if !out.insert(name.clone()) {
                continue;
            }
            if depth >= 32 {
                return Err(SqlError::unsupported("views nested more than 32 deep in WITH"));
            }
            if let Some(view) = self.catalog.view(self.txn, self.db, &name)? {
                let stmt = crate::parse::parse(&view.query)?;
                let mut inner = Vec::new();
                let _ = ast::visit_relations(&stmt, |n| {
                    inner.push(n.clone());
                    ControlFlow::<()>::Continue(())
                });
                for n in inner {
                    pending.push((object_name(&n)?, depth + 1));
                }
            }
        }
        Ok(())
    }

    /// The tables a data-modifying statement may change: its target, and for UPDATE and
    /// DELETE the tables whose foreign keys reference it, through their own references (their
    /// ON DELETE / ON UPDATE actions may change them).
    fn changed_by(&mut self, stmt: &ast::Statement) -> Result<BTreeSet<String>> {
        let mut out = BTreeSet::new();
        let Some(t) = target(stmt)? else { return Ok(out) };
        let cascades = !matches!(stmt, ast::Statement::Insert(_));
        let mut pending = vec![t];
        while let Some(name) = pending.pop() {
            if !out.insert(name.clone()) || !cascades {
                continue;
            }
            if let Some(table) = self.catalog.table(self.txn, self.db, &name)? {
                pending.extend(table.referenced_by.iter().map(|r| r.table.clone()));
            }
        }
        Ok(out)
    }

    /// Refuses a `WITH` whose parts, run one after another, could see each other's changes
    /// (see the module's comment): every part that runs after a data-modifying CTE — later
    /// CTEs and the main statement; the plain CTEs are read by the main statement — must not
    /// read a table that CTE may have changed, nor INSERT into it.
    pub(crate) fn check_disjoint(&mut self, with: &ast::With, main: &Main) -> Result<()> {
        let mut changed: BTreeSet<String> = BTreeSet::new();
        let cte_names: BTreeSet<String> =
            with.cte_tables.iter().map(|c| ident(&c.alias.name)).collect();
        let conflict = |read: &BTreeSet<String>, changed: &BTreeSet<String>| {
            read.iter().find(|r| changed.contains(*r) && !cte_names.contains(*r)).cloned()
        };
        let refuse = |table: String| {
            SqlError::unsupported(format!(
                "a statement whose data-modifying WITH query changes table \"{table}\" and another part of which reads or writes it (each part would have to see the table as it was)"
            ))
        };
        for cte in &with.cte_tables {
            if let Some(stmt) = modifying(&cte.query) {
                if cte.query.with.is_some() {
                    return Err(SqlError::unsupported("WITH inside a data-modifying WITH query"));
                }
                let mut reads = BTreeSet::new();
                self.relations(stmt, &mut reads)?;
                if let Some(t) = conflict(&reads, &changed) {
                    return Err(refuse(t));
                }
                changed.extend(self.changed_by(stmt)?);
            }
        }
        let mut reads = BTreeSet::new();
        for cte in &with.cte_tables {
            if modifying(&cte.query).is_none() {
                self.relations(cte.query.as_ref(), &mut reads)?;
            }
        }
        match main {
            Main::Query(q) => self.relations(q.as_ref(), &mut reads)?,
            Main::Dml(s) => self.relations(*s, &mut reads)?,
        }
        match conflict(&reads, &changed) {
            Some(t) => Err(refuse(t)),
            None => Ok(()),
        }
    }
}
