//! Step 4, first: what a statement computes once, before any of its rows is read or written.
//!
//! - Derived tables (`FROM (SELECT …) AS s`) run once and become scans of their rows.
//! - Uncorrelated subqueries (PostgreSQL's InitPlans) in queries stay in the plan and run on
//!   first use, once per statement (`Exec::run_once`), so one in a branch no row reaches
//!   never runs. Where the statement writes, the assignments, ON CONFLICT and RETURNING are
//!   evaluated while the transaction is busy writing and cannot run a query: there each
//!   uncorrelated subquery runs here and its result takes its place (`x = (SELECT max(k) …)`
//!   becomes `x = 42`, `x IN (SELECT …)` a test against the values).
//!
//! Binding runs nothing, so a plan stays valid for any parameter values: this module and
//! the executor are where those queries run, with the statement's snapshot, parameters and
//! limits. A correlated subquery depends on the row that refers to it and runs per row.

use std::cell::RefCell;
use std::sync::Arc;

use kiln_engine::Transaction;

use crate::bind::dml::{DeletePlan, InsertPlan, Returning, UpdatePlan};
use crate::bind::merge::{MergeAction, MergePlan, MergeWhen};
use crate::error::Result;
use crate::exec::select::{execute_select, Exec, ExecLimits};
use crate::expr::{Ctx, Expr, SubqueryRunner};
use crate::plan::{SelectPlan, Source};

/// Runs the once-per-statement parts of a plan.
pub(crate) struct InitPlans<'a> {
    exec: &'a Exec<'a, 'a>,
    ctx: &'a Ctx<'a>,
}

impl InitPlans<'_> {
    /// Calls `f` with an `InitPlans` over `txn`, with `ctx`'s parameters and session.
    pub(crate) fn with<T>(
        txn: &mut Transaction,
        ctx: &Ctx,
        limits: &ExecLimits,
        f: impl FnOnce(&InitPlans) -> Result<T>,
    ) -> Result<T> {
        let cell = RefCell::new(txn);
        let exec = Exec::new(&cell, limits);
        let ctx = Ctx { runner: Some(&exec), outer: &[], ..*ctx };
        f(&InitPlans { exec: &exec, ctx: &ctx })
    }

    /// Replaces every uncorrelated subquery in `e` by its result.
    fn expr(&self, e: Expr) -> Result<Expr> {
        e.map(&mut |node| match node {
            Expr::Subquery(plan, kind, refs) if refs.is_empty() && !plan.1.deep => {
                self.exec.limits.check()?;
                kind.resolve(self.exec.run_once(&plan, self.ctx)?)
            }
            other => Ok(other),
        })
    }

    fn exprs(&self, v: Vec<Expr>) -> Result<Vec<Expr>> {
        v.into_iter().map(|e| self.expr(e)).collect()
    }

    /// A query with its derived tables run.
    pub(crate) fn select(&self, mut plan: SelectPlan) -> Result<SelectPlan> {
        for item in &mut plan.from {
            item.source = match std::mem::replace(&mut item.source, Source::Rows(Arc::default())) {
                Source::Derived(sub) => {
                    let sub = self.select(*sub)?;
                    let rows = execute_select(&sub, self.exec.txn, self.ctx, self.exec.limits)?;
                    Source::Rows(Arc::new(rows))
                }
                Source::SetOp(left, right, kind, all) => Source::SetOp(
                    Box::new(self.select(*left)?),
                    Box::new(self.select(*right)?),
                    kind,
                    all,
                ),
                // Run for each combination of earlier rows, by the join.
                other @ (Source::Table(..)
                | Source::Lateral(_)
                | Source::Series(..)
                | Source::Unnest(..)
                | Source::Call(..)
                | Source::Recursive(..)
                | Source::WorkTable(_)
                | Source::Rows(_)
                | Source::Values(_)) => other,
            };
        }
        Ok(plan)
    }

    fn returning(&self, r: Option<Returning>) -> Result<Option<Returning>> {
        r.map(|r| Ok(Returning { exprs: self.exprs(r.exprs)?, ..r })).transpose()
    }

    fn assignments(&self, sets: Vec<(usize, Expr)>) -> Result<Vec<(usize, Expr)>> {
        sets.into_iter().map(|(c, e)| Ok((c, self.expr(e)?))).collect()
    }

    /// INSERT: its source query, ON CONFLICT and RETURNING.
    pub(crate) fn insert(&self, plan: InsertPlan) -> Result<InsertPlan> {
        let on_conflict = match plan.on_conflict {
            Some((arbiters, Some((sets, filter)))) => Some((
                arbiters,
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
            partitions: plan
                .partitions
                .map(|parts| parts.into_iter().map(|p| self.update(p)).collect())
                .transpose()?,
            ..plan
        })
    }

    /// MERGE: the join and the WHEN clauses.
    pub(crate) fn merge(&self, plan: MergePlan) -> Result<MergePlan> {
        let clauses = |list: Vec<MergeWhen>| -> Result<Vec<MergeWhen>> {
            list.into_iter()
                .map(|w| {
                    Ok(MergeWhen {
                        condition: w.condition.map(|c| self.expr(c)).transpose()?,
                        action: match w.action {
                            MergeAction::Update(sets) => {
                                MergeAction::Update(self.assignments(sets)?)
                            }
                            MergeAction::Insert(values) => MergeAction::Insert(
                                values
                                    .into_iter()
                                    .map(|v| v.map(|e| self.expr(e)).transpose())
                                    .collect::<Result<_>>()?,
                            ),
                            other => other,
                        },
                    })
                })
                .collect()
        };
        Ok(MergePlan {
            scan: self.select(plan.scan)?,
            matched: clauses(plan.matched)?,
            not_matched: clauses(plan.not_matched)?,
            ..plan
        })
    }

    /// DELETE: the scan and RETURNING.
    pub(crate) fn delete(&self, plan: DeletePlan) -> Result<DeletePlan> {
        Ok(DeletePlan {
            scan: self.select(plan.scan)?,
            returning: self.returning(plan.returning)?,
            partitions: plan
                .partitions
                .map(|parts| parts.into_iter().map(|p| self.delete(p)).collect())
                .transpose()?,
            ..plan
        })
    }
}
