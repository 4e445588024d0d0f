//! Reading a partitioned table: its rows are its leaf partitions' rows, read one partition
//! after another (a UNION ALL of their scans). A partition has its parent's columns in its
//! parent's order (`exec::partitions` keeps it so), so each scan is the partition's row as
//! it is.

use std::sync::Arc;

use crate::bind::query::derived_item;
use crate::bind::*;
use crate::catalog::Table;
use crate::error::{code, Result, SqlError};
use crate::expr::Expr;
use crate::plan::*;
use crate::types::{Columns, DataType, Value};

impl Planner<'_> {
    /// The leaf partitions of partitioned table `t` (partitions of its partitions, depth
    /// first), each recorded among the tables the plan depends on.
    pub(crate) fn leaf_partitions(&mut self, t: &Table) -> Result<Vec<Arc<Table>>> {
        let mut leaves = Vec::new();
        self.collect_leaves(t, 0, &mut leaves)?;
        Ok(leaves)
    }

    fn collect_leaves(&mut self, t: &Table, depth: usize, out: &mut Vec<Arc<Table>>) -> Result<()> {
        if depth > crate::partition::PARTITION_DEPTH_MAX {
            return Err(SqlError::new(
                code::STATEMENT_TOO_COMPLEX,
                format!(
                    "partitions are nested more than {} deep",
                    crate::partition::PARTITION_DEPTH_MAX
                ),
            ));
        }
        let Some(p) = &t.partitioning else { return Ok(()) };
        for name in &p.partitions {
            let child = self.table_or_err(name)?;
            if child.partitioning.is_some() {
                self.collect_leaves(&child, depth + 1, out)?;
            } else {
                out.push(child);
            }
        }
        Ok(())
    }

    /// The FROM item that reads partitioned table `t`, named `alias`, its columns renamed
    /// by `rename`: every leaf partition's rows.
    pub(crate) fn partitioned_item(
        &mut self,
        t: &Arc<Table>,
        alias: String,
        rename: &[String],
        offset: usize,
    ) -> Result<(FromItem, Vec<ScopeCol>)> {
        // The table's columns, then `tableoid`: the partition each row comes from.
        let mut columns: Columns = t.columns.iter().map(|c| (c.name.clone(), c.ty)).collect();
        columns.push(("tableoid".into(), DataType::Oid));
        let scans: Vec<SelectPlan> = self
            .leaf_partitions(t)?
            .into_iter()
            .map(|leaf| {
                let width = leaf.columns.len();
                let label = leaf.name.clone();
                let oid = crate::pg::system::oid::object(leaf.id);
                let mut scan = SelectPlan::over(
                    FromItem {
                        source: Source::Table(leaf, Access::Full),
                        offset: 0,
                        width,
                        join: JoinKind::Inner,
                        on: vec![],
                        filters: vec![],
                        label,
                    },
                    columns.clone(),
                );
                scan.projection.push(Expr::Const(Value::Int(oid)));
                scan
            })
            .collect();
        let mut plan = match union_all(scans, &columns) {
            Some(plan) => plan,
            None => SelectPlan::over(
                FromItem {
                    source: Source::Rows(Arc::new(vec![])),
                    offset: 0,
                    width: columns.len(),
                    join: JoinKind::Inner,
                    on: vec![],
                    filters: vec![],
                    label: t.name.clone(),
                },
                columns.clone(),
            ),
        };
        // Its columns show as the partitioned table's own.
        plan.origins =
            (0..t.columns.len()).map(|i| Some(crate::bind::dml::table_origin(t, i))).collect();
        plan.origins.push(None);
        crate::bind::query::check_rename(Some(&alias), rename.len(), t.columns.len())?;
        let names: Vec<String> = columns
            .iter()
            .enumerate()
            .map(|(i, (n, _))| rename.get(i).cloned().unwrap_or_else(|| n.clone()))
            .collect();
        let (mut item, mut scope) = derived_item(plan, Some(alias), &names, offset);
        item.label = t.name.clone();
        if let Some(last) = scope.last_mut() {
            last.system = true;
        }
        Ok((item, scope))
    }
}

/// UNION ALL of `plans` (all of `columns`), as a balanced tree of set operations so that
/// its depth grows with the logarithm of their number; `None` for no plans.
fn union_all(mut plans: Vec<SelectPlan>, columns: &Columns) -> Option<SelectPlan> {
    match plans.len() {
        0 => None,
        1 => plans.pop(),
        n => {
            let right = plans.split_off(n / 2);
            let l = union_all(plans, columns)?;
            let r = union_all(right, columns)?;
            Some(SelectPlan::over(
                FromItem {
                    source: Source::SetOp(Box::new(l), Box::new(r), SetOpKind::Union, true),
                    offset: 0,
                    width: columns.len(),
                    join: JoinKind::Inner,
                    on: vec![],
                    filters: vec![],
                    label: "UNION ALL".into(),
                },
                columns.clone(),
            ))
        }
    }
}
