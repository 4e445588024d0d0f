//! Binding MERGE: the source joined to the target, and the WHEN clauses' conditions and
//! actions over the joined row.
//!
//! The rows MERGE considers are those of `source LEFT JOIN target ON condition`: a row with
//! the target's part present is MATCHED, one without is NOT MATCHED. The joined row holds the
//! source's columns, then the target's, so the target is found through its keys like any
//! joined table (a MERGE keyed on the primary key reads one target row per source row).

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::dml::*;
use crate::bind::query::is_default_keyword;
use crate::bind::*;
use crate::catalog::Table;
use crate::error::{code, Result, SqlError};
use crate::expr::Expr;
use crate::plan::access::*;
use crate::plan::*;
use crate::types::DataType;

/// What a WHEN clause does to its row.
#[derive(Clone)]
pub(crate) enum MergeAction {
    /// UPDATE SET: (target column, expression over the joined row).
    Update(Vec<(usize, Expr)>),
    Delete,
    /// INSERT: each target column's value, an expression over the joined row (a default
    /// is bound in), or `None` for NULL.
    Insert(Vec<Option<Expr>>),
    Nothing,
}

/// One `WHEN [NOT] MATCHED [AND condition] THEN action`.
#[derive(Clone)]
pub(crate) struct MergeWhen {
    pub(crate) condition: Option<Expr>,
    pub(crate) action: MergeAction,
}

#[derive(Clone)]
pub(crate) struct MergePlan {
    pub(crate) table: Arc<Table>,
    /// `source LEFT JOIN target ON condition`.
    pub(crate) scan: SelectPlan,
    /// The target's FROM item in `scan` (the last).
    pub(crate) target: usize,
    /// The WHEN MATCHED clauses, in order: the first whose condition holds acts.
    pub(crate) matched: Vec<MergeWhen>,
    /// The WHEN NOT MATCHED clauses, in order.
    pub(crate) not_matched: Vec<MergeWhen>,
}

impl MergePlan {
    /// The actions the statement may take, as trigger events (its statement triggers fire
    /// for each, whether or not a row takes it, as in PostgreSQL).
    pub(crate) fn events(&self) -> Vec<crate::exec::triggers::Event> {
        use crate::exec::triggers::Event;
        let mut events = Vec::new();
        for w in self.matched.iter().chain(&self.not_matched) {
            let e = match w.action {
                MergeAction::Insert(_) => Event::Insert,
                MergeAction::Update(_) => Event::Update,
                MergeAction::Delete => Event::Delete,
                MergeAction::Nothing => continue,
            };
            if !events.contains(&e) {
                events.push(e);
            }
        }
        // PostgreSQL's order: INSERT, UPDATE, DELETE.
        events.sort_by_key(|e| match e {
            Event::Insert => 0,
            Event::Update => 1,
            _ => 2,
        });
        events
    }
}

/// The name target columns take in a NOT MATCHED clause's scope: no SQL name can reach it
/// (a client's text cannot hold a NUL).
const UNREACHABLE: &str = "\0";

pub(crate) fn plan_merge(planner: &mut Planner, m: &ast::Merge) -> Result<MergePlan> {
    if m.output.is_some() {
        return Err(SqlError::unsupported("MERGE … RETURNING"));
    }
    let ast::TableFactor::Table { name, alias, args: None, .. } = &m.table else {
        return Err(SqlError::syntax("MERGE INTO takes a table name"));
    };
    let tname = object_name(name)?;
    let at = name.0.first().and_then(|p| p.as_ident()).and_then(crate::bind::location_of);
    let table = planner.table_or_err(&tname).map_err(|e| {
        if e.code == code::WRONG_OBJECT_TYPE {
            // A view (PostgreSQL 15 merges into tables only).
            SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                format!("cannot execute MERGE on relation \"{tname}\""),
            )
            .detail("This operation is not supported for views.")
        } else {
            e.located(at)
        }
    })?;
    crate::exec::matviews::check_writable(&table)?;
    if table.partitioning.is_some() {
        return Err(SqlError::unsupported("MERGE into a partitioned table")
            .hint("MERGE into each partition, or use INSERT … ON CONFLICT."));
    }
    // source LEFT JOIN target ON condition.
    let join = ast::TableWithJoins {
        relation: m.source.clone(),
        joins: vec![ast::Join {
            relation: m.table.clone(),
            global: false,
            join_operator: ast::JoinOperator::LeftOuter(ast::JoinConstraint::On(
                m.on.as_ref().clone(),
            )),
        }],
    };
    let mut scope = Scope::default();
    let mut from = Vec::new();
    planner.bind_from(std::slice::from_ref(&join), &mut scope, &mut from).map_err(|e| {
        if e.code == "42712" {
            let alias = alias.as_ref().map_or_else(
                || crate::catalog::unqualified(&table.name).to_string(),
                |a| ident(&a.name),
            );
            SqlError::new(e.code, format!("name \"{alias}\" specified more than once"))
                .detail("The name is used both as MERGE target table and data source.")
        } else {
            e
        }
    })?;
    let target = from.len() - 1;
    match &from[target].source {
        Source::Table(t, _) if t.id == table.id => {}
        _ => {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("cannot execute MERGE on relation \"{tname}\""),
            ))
        }
    }
    let (lo, hi) = (from[target].offset, from[target].offset + from[target].width);
    // NOT MATCHED clauses see the source's columns only.
    let mut source_scope = scope.clone();
    for c in &mut source_scope.cols[lo..hi] {
        c.name = UNREACHABLE.into();
        c.table = Some(UNREACHABLE.into());
    }
    let mut defaults = Vec::with_capacity(table.columns.len());
    for c in &table.columns {
        defaults.push(column_default(planner, c)?);
    }
    let mut matched = Vec::new();
    let mut not_matched = Vec::new();
    for clause in &m.clauses {
        let is_matched = match clause.clause_kind {
            ast::MergeClauseKind::Matched => true,
            ast::MergeClauseKind::NotMatched | ast::MergeClauseKind::NotMatchedByTarget => false,
            ast::MergeClauseKind::NotMatchedBySource => {
                return Err(SqlError::unsupported("WHEN NOT MATCHED BY SOURCE"))
            }
        };
        let (list, scope) =
            if is_matched { (&mut matched, &scope) } else { (&mut not_matched, &source_scope) };
        if list.last().is_some_and(|w: &MergeWhen| w.condition.is_none()) {
            return Err(SqlError::syntax(
                "unreachable WHEN clause specified after unconditional WHEN clause",
            ));
        }
        let condition = match &clause.predicate {
            Some(p) => {
                let (e, t) = planner.expr(p, scope, false)?;
                Some(planner.coerce(e, t, DataType::Bool)?.0)
            }
            None => None,
        };
        let action = match &clause.action {
            ast::MergeAction::DoNothing { .. } => MergeAction::Nothing,
            ast::MergeAction::Delete { .. } => MergeAction::Delete,
            ast::MergeAction::Update(u) => {
                let ast::MergeUpdateKind::Set(assignments) = &u.kind else {
                    return Err(SqlError::syntax("UPDATE SET * in MERGE"));
                };
                if u.update_predicate.is_some() || u.delete_predicate.is_some() {
                    return Err(SqlError::syntax("a WHERE clause in MERGE's UPDATE"));
                }
                MergeAction::Update(bind_assignments(planner, &table, assignments, scope)?)
            }
            ast::MergeAction::Insert(i) => {
                MergeAction::Insert(merge_insert(planner, &table, i, scope, &defaults)?)
            }
        };
        list.push(MergeWhen { condition, action });
    }
    let mut plan = SelectPlan::over(from.remove(0), vec![]);
    plan.from.extend(from);
    for item in &mut plan.from {
        let keys = planner.expression_keys(item)?;
        choose_access_with(item, &keys);
    }
    plan.width = scope.cols.len();
    Ok(MergePlan { table, scan: plan, target, matched, not_matched })
}

/// A NOT MATCHED clause's `INSERT [(columns)] VALUES (…)`: each target column's value.
fn merge_insert(
    planner: &mut Planner,
    table: &Table,
    insert: &ast::MergeInsertExpr,
    scope: &Scope,
    defaults: &[Option<Expr>],
) -> Result<Vec<Option<Expr>>> {
    let ast::MergeInsertKind::Values(values) = &insert.kind else {
        return Err(SqlError::syntax("MERGE's INSERT takes VALUES or DEFAULT VALUES"));
    };
    if insert.insert_predicate.is_some() {
        return Err(SqlError::syntax("a WHERE clause in MERGE's INSERT"));
    }
    let [row] = values.rows.as_slice() else {
        return Err(SqlError::syntax("MERGE's INSERT takes a single VALUES row"));
    };
    let targets: Vec<usize> = if insert.columns.is_empty() {
        (0..table.columns.len()).collect()
    } else {
        insert
            .columns
            .iter()
            .map(|c| table.column_or_err(&crate::bind::name_as_written(c)?))
            .collect::<Result<_>>()?
    };
    let mut out: Vec<Option<Expr>> = vec![None; table.columns.len()];
    for (n, &t) in targets.iter().enumerate() {
        if targets[..n].contains(&t) {
            return Err(SqlError::new(
                code::DUPLICATE_COLUMN,
                format!("column \"{}\" specified more than once", table.columns[t].name),
            ));
        }
    }
    if row.len() > targets.len() {
        return Err(SqlError::syntax("INSERT has more expressions than target columns"));
    }
    if row.len() < targets.len() && !insert.columns.is_empty() {
        return Err(SqlError::syntax("INSERT has more target columns than expressions"));
    }
    for (x, &t) in row.iter().zip(&targets) {
        let c = &table.columns[t];
        if is_default_keyword(x) {
            out[t] = defaults[t].clone();
            continue;
        }
        if c.generated.is_some() {
            return Err(generated_column(
                c,
                format!("cannot insert a non-DEFAULT value into column \"{}\"", c.name),
            ));
        }
        if c.identity.as_ref().is_some_and(|i| i.always) {
            return Err(generated_always(
                c,
                format!("cannot insert a non-DEFAULT value into column \"{}\"", c.name),
            )
            .hint("Use OVERRIDING SYSTEM VALUE to override."));
        }
        let (e, ty) = planner.expr(x, scope, false)?;
        out[t] = Some(planner.coerce(e, ty, c.ty)?.0);
    }
    // Columns not given take their defaults; a column without one is NULL.
    for (t, v) in out.iter_mut().enumerate() {
        if v.is_none() && !targets[..row.len()].contains(&t) {
            *v = defaults[t].clone();
        }
    }
    Ok(out)
}
