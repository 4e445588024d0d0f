//! EXPLAIN: a plan as text.

use crate::expr::Expr;
use crate::plan::*;

/// EXPLAIN output lines for a plan. The plans a node depends on follow it, indented: a
/// derived table's or set operation's queries, and the subqueries of its conditions and
/// expressions — `SubPlan` when correlated (run per row), `InitPlan` when not (run once).
pub fn explain(plan: &SelectPlan) -> Vec<String> {
    let mut lines = Vec::new();
    explain_into(plan, 0, &mut lines);
    lines
}

/// The subquery plans among `exprs`, each as `SubPlan`/`InitPlan` with its plan, at `depth`.
fn subplans<'e>(exprs: impl Iterator<Item = &'e Expr>, depth: usize, lines: &mut Vec<String>) {
    for e in exprs {
        e.walk(&mut |e| {
            if let Expr::Subquery(plan, _, refs) = e {
                let what = if refs.is_empty() && !plan.1.deep { "InitPlan" } else { "SubPlan" };
                lines.push(format!("{}{what}", "  ".repeat(depth)));
                explain_into(&plan.0, depth + 1, lines);
            }
        });
    }
}

#[recursive::recursive]
fn explain_into(plan: &SelectPlan, depth: usize, lines: &mut Vec<String>) {
    let top = "  ".repeat(depth);
    if plan.grouping.is_some() {
        lines.push(format!("{top}Aggregate"));
    }
    if !plan.order.is_empty() {
        lines.push(format!("{top}Sort"));
    }
    if let Some(g) = &plan.grouping {
        let args = g.aggs.iter().filter_map(|(_, _, a, _)| a.as_ref());
        subplans(g.keys.iter().chain(args).chain(&plan.having), depth + 1, lines);
    }
    subplans(plan.projection.iter().chain(&plan.constant_filters), depth + 1, lines);
    for (i, item) in plan.from.iter().enumerate() {
        let pad = "  ".repeat(depth + i + 1);
        let hash_keys = if plan.reads_once(i) { plan.hash_keys(i) } else { vec![] };
        let kind = match item.join {
            JoinKind::Inner => "",
            JoinKind::Left => " Left",
            JoinKind::Right => " Right",
            JoinKind::Full => " Full",
        };
        let join = match (i, hash_keys.is_empty()) {
            (0, _) => String::new(),
            (_, true) if item.join == JoinKind::Inner => "Nested Loop → ".to_string(),
            (_, true) => format!("Nested Loop{kind} Join → "),
            (_, false) => format!("Hash{kind} Join → "),
        };
        let keys = |exprs: &[Expr]| exprs.iter().map(|e| e.to_string()).collect::<Vec<_>>();
        let (access, key) = match &item.source {
            Source::Table(t, Access::Full) => (format!("Seq Scan on {}", t.name), None),
            Source::Table(t, Access::Key(k)) => {
                let using = match &k.index {
                    Some(ix) => ix.name.clone(),
                    None => "primary key".into(),
                };
                let tuple = |p: &[Expr]| format!("({})", keys(p).join(", "));
                let alternatives = || {
                    if k.prefixes.iter().all(|p| p.len() == 1) {
                        format!(
                            "any of ({})",
                            k.prefixes
                                .iter()
                                .map(|p| keys(p).join(""))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    } else {
                        format!(
                            "any of ({})",
                            k.prefixes.iter().map(|p| tuple(p)).collect::<Vec<_>>().join(", ")
                        )
                    }
                };
                let values =
                    if k.prefixes.len() == 1 { tuple(&k.prefixes[0]) } else { alternatives() };
                if k.is_points(t) {
                    let what = if k.prefixes.len() == 1 { "Index Lookup" } else { "Index Lookups" };
                    (format!("{what} on {} using {using}", t.name), Some(values))
                } else {
                    let scan = if k.index.is_none() { "Index Range Scan" } else { "Index Scan" };
                    let mut parts = vec![];
                    if k.index.is_none() {
                        parts.push(format!("prefix {values}"));
                    } else {
                        parts.push(values);
                    }
                    if let Some((e, inclusive)) = &k.lower {
                        parts.push(format!(
                            "from {e}{}",
                            if *inclusive { " inclusive" } else { "" }
                        ));
                    }
                    if let Some((e, inclusive)) = &k.upper {
                        parts.push(format!("to {e}{}", if *inclusive { " inclusive" } else { "" }));
                    }
                    (format!("{scan} on {} using {using}", t.name), Some(parts.join(" ")))
                }
            }
            Source::Series(..) => ("Function Scan on generate_series".into(), None),
            Source::Unnest(..) | Source::Call(..) => {
                (format!("Function Scan on {}", item.label), None)
            }
            Source::Rows(_) => (format!("Scan of {}", item.label), None),
            Source::Values(_) => ("Values Scan".into(), None),
            Source::Derived(_) => (format!("Subquery Scan on {}", item.label), None),
            Source::Lateral(_) => (format!("Lateral Subquery Scan on {}", item.label), None),
            Source::SetOp(..) => (format!("{} of two queries", item.label), None),
            Source::Recursive(..) => (format!("Recursive Union on {}", item.label), None),
            Source::WorkTable(_) => (format!("WorkTable Scan on {}", item.label), None),
        };
        lines.push(format!("{pad}{join}{access}"));
        match &item.source {
            Source::Derived(p) | Source::Lateral(p) => explain_into(p, depth + i + 2, lines),
            Source::SetOp(l, r, ..) | Source::Recursive(l, r, ..) => {
                explain_into(l, depth + i + 2, lines);
                explain_into(r, depth + i + 2, lines);
            }
            _ => {}
        }
        if let Some(key) = key {
            lines.push(format!("{pad}  Key: {key}"));
        }
        if let (0, Some(descending)) = (i, plan.key_order) {
            let way = if descending { "backward" } else { "forward" };
            lines.push(format!("{pad}  Order: key read {way}, stopping once enough rows passed"));
        }
        if !hash_keys.is_empty() {
            let conds: Vec<String> =
                hash_keys.iter().map(|(c, e)| format!("(#{} = {e})", item.offset + c)).collect();
            lines.push(format!("{pad}  Hash Cond: {}", conds.join(" AND ")));
        }
        if i == 0 && !plan.constant_filters.is_empty() {
            // Conditions on no column, evaluated once: when one fails nothing is read.
            lines.push(format!("{pad}  One-Time Filter: {}", one_time(&plan.constant_filters)));
        }
        if !item.on.is_empty() {
            lines.push(format!("{pad}  Join Filter: {}", keys(&item.on).join(" AND ")));
        }
        if !item.filters.is_empty() {
            lines.push(format!("{pad}  Filter: {}", keys(&item.filters).join(" AND ")));
        }
        subplans(item.on.iter().chain(&item.filters), depth + i + 2, lines);
    }
    if plan.from.is_empty() {
        lines.push(format!("{top}Result"));
        if !plan.constant_filters.is_empty() {
            lines.push(format!("{top}  One-Time Filter: {}", one_time(&plan.constant_filters)));
        }
    }
}

/// A plan's conditions on no column, as EXPLAIN shows them (a constant as `true`/`false`).
fn one_time(conds: &[Expr]) -> String {
    let shown: Vec<String> = conds
        .iter()
        .map(|e| match e {
            Expr::Const(crate::types::Value::Bool(b)) => b.to_string(),
            e => e.to_string(),
        })
        .collect();
    shown.join(" AND ")
}
