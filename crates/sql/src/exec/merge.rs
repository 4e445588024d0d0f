//! Executing MERGE: each row of `source LEFT JOIN target` takes the action of its first WHEN
//! clause whose condition holds — UPDATE or DELETE of the matched target row, INSERT of a new
//! one — under the same row locks, triggers and constraint checks as those statements.
//!
//! As in PostgreSQL: a matched target row is locked when an action is about to change it and,
//! under READ COMMITTED, read again in its newest version; if that version no longer joins
//! the source row (or is gone), the row is treated as NOT MATCHED, and if it still joins, the
//! WHEN clauses are evaluated again against it. A target row the statement already updated or
//! deleted may not be changed a second time (21000): that means two source rows matched it.

use std::cell::RefCell;
use std::collections::HashSet;

use crate::bind::merge::{MergeAction, MergePlan, MergeWhen};
use crate::error::{code, Result, SqlError};
use crate::exec::select::*;
use crate::exec::triggers::{Cause, Event};
use crate::expr::Ctx;
use crate::locks::LockMode;
use crate::session::Output;
use crate::types::Value;

use super::write::Writer;

/// What a matched row comes to once its target row is locked.
enum MatchedRow<'p> {
    /// This UPDATE or DELETE applies to it.
    Act(&'p MergeAction),
    /// No clause acts on it (none holds, or DO NOTHING).
    Skip,
    /// Its target row was deleted, or changed so that it no longer joins the source row,
    /// by a transaction that committed meanwhile: it is NOT MATCHED now.
    NotMatched,
}

/// The first clause of `clauses` whose condition holds for `row`.
fn first_clause<'p>(
    clauses: &'p [MergeWhen],
    row: &[Value],
    ctx: &Ctx,
) -> Result<Option<&'p MergeAction>> {
    for w in clauses {
        match &w.condition {
            Some(c) if !c.eval_bool(row, ctx)? => continue,
            _ => return Ok(Some(&w.action)),
        }
    }
    Ok(None)
}

impl Writer<'_> {
    pub(crate) fn merge(
        &mut self,
        plan: MergePlan,
        ctx: &Ctx,
        limits: &ExecLimits,
    ) -> Result<Output> {
        let table = plan.table.clone();
        let events = plan.events();
        for &event in &events {
            self.statement_triggers(&table, event, true, ctx.env)?;
        }
        let before_insert = Self::has_row_triggers(&table, Event::Insert, true);
        let before_update = Self::has_row_triggers(&table, Event::Update, true);
        let before_delete = Self::has_row_triggers(&table, Event::Delete, true);
        let target = &plan.scan.from[plan.target];
        let (lo, hi) = (target.offset, target.offset + target.width);
        let rows = {
            let cell = RefCell::new(&mut self.ts.txn);
            let exec = Exec::new(&cell, limits);
            let ctx = Ctx { runner: Some(&exec), ..*ctx };
            execute_from_keyed(&plan.scan, &cell, &ctx, limits, plan.target)?
        };
        // The target rows this statement updated or deleted.
        let mut touched: HashSet<Vec<u8>> = HashSet::new();
        let mut count = 0u64;
        for (key, mut joined) in rows {
            limits.check()?;
            if let Some(pk) = key {
                let matched = self.matched_action(&plan, &pk, &mut joined, &touched, ctx)?;
                let action = match matched {
                    MatchedRow::Skip => continue,
                    MatchedRow::Act(action) => action,
                    MatchedRow::NotMatched => {
                        for v in &mut joined[lo..hi] {
                            *v = Value::Null;
                        }
                        if self.merge_insert(&plan, &joined, before_insert, ctx)? {
                            count += 1;
                        }
                        continue;
                    }
                };
                let old = joined[lo..hi].to_vec();
                let done = match action {
                    MergeAction::Update(sets) => {
                        let mut new = old.clone();
                        for (c, e) in sets {
                            new[*c] = e.eval(&joined, ctx)?;
                        }
                        let set: Vec<usize> = sets.iter().map(|(c, _)| *c).collect();
                        let new = if before_update {
                            let (old, set) = (Some(&old[..]), Some(&set[..]));
                            self.before_row(&table, Event::Update, Some(new), old, set, ctx.env)?
                        } else {
                            Some(new)
                        };
                        match new {
                            Some(new) => {
                                let new = self.update_row(&table, &pk, &old, new, ctx)?;
                                self.after_row(
                                    &table,
                                    Event::Update,
                                    (Some(&new), Some(&old)),
                                    Some(&set),
                                    Cause::Statement,
                                );
                                true
                            }
                            None => false,
                        }
                    }
                    MergeAction::Delete => {
                        let skip = before_delete
                            && self
                                .before_row(&table, Event::Delete, None, Some(&old), None, ctx.env)?
                                .is_none();
                        if !skip {
                            self.delete_row(&table, &pk, &old)?;
                            if !table.referenced_by.is_empty() {
                                self.referenced_row_changed(&table, &old, None, ctx)?;
                            }
                            self.after_row(
                                &table,
                                Event::Delete,
                                (None, Some(&old)),
                                None,
                                Cause::Statement,
                            );
                        }
                        !skip
                    }
                    MergeAction::Insert(_) | MergeAction::Nothing => {
                        unreachable!("matched_action acts with UPDATE or DELETE only")
                    }
                };
                if done {
                    touched.insert(pk);
                    count += 1;
                }
            } else if self.merge_insert(&plan, &joined, before_insert, ctx)? {
                count += 1;
            }
        }
        // AFTER statement triggers in the reverse order (DELETE, UPDATE, INSERT), as in
        // PostgreSQL.
        let after: Vec<Event> = events.iter().rev().copied().collect();
        self.end_of_statement(&table, &after, ctx.env)?;
        self.finish_constraints(ctx)?;
        Ok(Output::Command(format!("MERGE {count}")))
    }

    /// The action a MATCHED row takes: its first WHEN MATCHED clause that holds, evaluated
    /// once more against the target row's newest version if that changed before it was
    /// locked (READ COMMITTED).
    fn matched_action<'p>(
        &mut self,
        plan: &'p MergePlan,
        pk: &[u8],
        joined: &mut [Value],
        touched: &HashSet<Vec<u8>>,
        ctx: &Ctx,
    ) -> Result<MatchedRow<'p>> {
        let target = &plan.scan.from[plan.target];
        let (lo, hi) = (target.offset, target.offset + target.width);
        let mut locked = false;
        loop {
            let action = match first_clause(&plan.matched, joined, ctx)? {
                None | Some(MergeAction::Nothing) => return Ok(MatchedRow::Skip),
                Some(action) => action,
            };
            if locked {
                return Ok(MatchedRow::Act(action));
            }
            if touched.contains(pk) {
                return Err(SqlError::new(
                    code::CARDINALITY,
                    "MERGE command cannot affect row a second time",
                )
                .hint("Ensure that not more than one source row matches any one target row."));
            }
            let read = joined[lo..hi].to_vec();
            let mode = LockMode::Exclusive;
            let Some(current) = self.lock_current(&plan.table, pk, read.clone(), &[], mode, ctx)?
            else {
                return Ok(MatchedRow::NotMatched);
            };
            if current == read {
                return Ok(MatchedRow::Act(action));
            }
            locked = true;
            joined[lo..hi].clone_from_slice(&current);
            if !passes(&target.on, joined, ctx)? {
                return Ok(MatchedRow::NotMatched);
            }
        }
    }

    /// A NOT MATCHED row: the INSERT of its first WHEN NOT MATCHED clause that holds, if
    /// any; whether a row was inserted.
    fn merge_insert(
        &mut self,
        plan: &MergePlan,
        joined: &[Value],
        before_insert: bool,
        ctx: &Ctx,
    ) -> Result<bool> {
        let Some(MergeAction::Insert(values)) = first_clause(&plan.not_matched, joined, ctx)?
        else {
            return Ok(false);
        };
        let table = &plan.table;
        let mut row = Vec::with_capacity(values.len());
        for v in values {
            row.push(match v {
                Some(e) => e.eval(joined, ctx)?,
                None => Value::Null,
            });
        }
        let row = if before_insert {
            match self.before_row(table, Event::Insert, Some(row), None, None, ctx.env)? {
                Some(row) => row,
                None => return Ok(false),
            }
        } else {
            row
        };
        let row = Self::fit_row(table, row, ctx.env.style())?;
        let row = self.generate(table, row, ctx)?;
        self.insert_row(table, row.clone(), None, ctx)?;
        self.after_row(table, Event::Insert, (Some(&row), None), None, Cause::Statement);
        Ok(true)
    }
}
