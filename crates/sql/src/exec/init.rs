//! Step 4, first: a statement's uncorrelated subqueries (PostgreSQL's InitPlans) and derived
//! tables run once, before any of its rows is read or written. Their results replace them in
//! the plan: `k = (SELECT max(k) FROM t)` becomes `k = 42`, `x IN (SELECT …)` a test
//! against the values, `EXISTS (…)` a boolean, and `FROM (SELECT …) AS s` a scan of rows.
//!
//! Binding runs nothing, so a plan stays valid for any parameter values. This module is
//! where those queries run, with the statement's snapshot, parameters and limits. A
//! correlated subquery depends on the row that refers to it and runs per row, during
//! execution.
//!
//! Like run-time constant folding, this evaluates every uncorrelated subquery once, even
//! one in a branch no row reaches. PostgreSQL defers an InitPlan to its first use.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use kiln_engine::Transaction;

use crate::bind::dml::{DeletePlan, InsertPlan, Returning, UpdatePlan};
use crate::error::Result;
use crate::exec::select::{execute_select, Exec, ExecLimits, TxnCell};
use crate::expr::{Ctx, Expr};
use crate::plan::{SelectPlan, Source};
use crate::types::Row;

/// Runs the uncorrelated parts of a plan for one execution.
pub(crate) struct InitPlans<'a, 't> {
    txn: &'a TxnCell<'t>,
    ctx: &'a Ctx<'a>,
    limits: &'a ExecLimits,
    /// Rows of the subqueries run so far, by plan: a subquery the planner copied (a key
    /// and the filter it came from) runs once.
    done: RefCell<HashMap<*const SelectPlan, Vec<Row>>>,
}

impl InitPlans<'_, '_> {
    /// Calls `f` with an `InitPlans` over `txn`, with `ctx`'s parameters and session.
    pub(crate) fn with<T>(
        txn: &mut Transaction,
        ctx: &Ctx,
        limits: &ExecLimits,
        f: impl FnOnce(&InitPlans) -> Result<T>,
    ) -> Result<T> {
        let cell = RefCell::new(txn);
        let exec = Exec { txn: &cell, limits };
        let ctx = Ctx { runner: Some(&exec), outer: &[], ..*ctx };
        f(&InitPlans { txn: &cell, ctx: &ctx, limits, done: RefCell::default() })
    }

    /// Replaces every uncorrelated subquery in `e` by its result.
    pub(crate) fn expr(&self, e: Expr) -> Result<Expr> {
        e.map(&mut |node| match node {
            Expr::Subquery(plan, kind, refs) if refs.is_empty() => {
                let key = Arc::as_ptr(&plan.0);
                let known = self.done.borrow().get(&key).cloned();
                let rows = match known {
                    Some(rows) => rows,
                    None => {
                        self.limits.check()?;
                        let rows = execute_select(&plan.0, self.txn, self.ctx, self.limits)?;
                        self.done.borrow_mut().insert(key, rows.clone());
                        rows
                    }
                };
                kind.resolve(rows)
            }
            other => Ok(other),
        })
    }

    fn exprs(&self, v: Vec<Expr>) -> Result<Vec<Expr>> {
        v.into_iter().map(|e| self.expr(e)).collect()
    }

    /// A query with its uncorrelated subqueries and derived tables run.
    pub(crate) fn select(&self, plan: SelectPlan) -> Result<SelectPlan> {
        let mut plan = plan.try_map_exprs(&mut |e| self.expr(e))?;
        self.materialize(&mut plan)?;
        Ok(plan)
    }

    /// Runs the derived tables of `plan` (and of the operands of its set operations).
    fn materialize(&self, plan: &mut SelectPlan) -> Result<()> {
        for item in &mut plan.from {
            item.source = match std::mem::replace(&mut item.source, Source::Rows(Arc::default())) {
                Source::Derived(sub) => {
                    let sub = self.select(*sub)?;
                    Source::Rows(Arc::new(execute_select(&sub, self.txn, self.ctx, self.limits)?))
                }
                Source::SetOp(mut left, mut right, kind, all) => {
                    self.materialize(&mut left)?;
                    self.materialize(&mut right)?;
                    Source::SetOp(left, right, kind, all)
                }
                other @ (Source::Table(..)
                | Source::Series(..)
                | Source::Rows(_)
                | Source::Values(_)) => other,
            };
        }
        Ok(())
    }

    fn returning(&self, r: Option<Returning>) -> Result<Option<Returning>> {
        r.map(|r| Ok(Returning { exprs: self.exprs(r.exprs)?, columns: r.columns })).transpose()
    }

    fn assignments(&self, sets: Vec<(usize, Expr)>) -> Result<Vec<(usize, Expr)>> {
        sets.into_iter().map(|(c, e)| Ok((c, self.expr(e)?))).collect()
    }

    /// INSERT: its source query, ON CONFLICT and RETURNING.
    pub(crate) fn insert(&self, plan: InsertPlan) -> Result<InsertPlan> {
        let on_conflict = match plan.on_conflict {
            Some((cols, Some((sets, filter)))) => Some((
                cols,
                Some((self.assignments(sets)?, filter.map(|f| self.expr(f)).transpose()?)),
            )),
            other => other,
        };
        Ok(InsertPlan {
            source: self.select(plan.source)?,
            on_conflict,
            returning: self.returning(plan.returning)?,
            ..plan
        })
    }

    /// UPDATE: the scan, the assignments and RETURNING.
    pub(crate) fn update(&self, plan: UpdatePlan) -> Result<UpdatePlan> {
        Ok(UpdatePlan {
            scan: self.select(plan.scan)?,
            sets: self.assignments(plan.sets)?,
            returning: self.returning(plan.returning)?,
            ..plan
        })
    }

    /// DELETE: the scan and RETURNING.
    pub(crate) fn delete(&self, plan: DeletePlan) -> Result<DeletePlan> {
        Ok(DeletePlan {
            scan: self.select(plan.scan)?,
            returning: self.returning(plan.returning)?,
            ..plan
        })
    }
}
