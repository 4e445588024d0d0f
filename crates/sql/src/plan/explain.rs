//! EXPLAIN: a plan as text.

use crate::expr::Expr;
use crate::plan::*;

/// EXPLAIN output lines for a plan.
pub fn explain(plan: &SelectPlan) -> Vec<String> {
    let mut lines = Vec::new();
    if plan.grouping.is_some() {
        lines.push("Aggregate".to_string());
    }
    if !plan.order.is_empty() {
        lines.push("Sort".to_string());
    }
    for (i, item) in plan.from.iter().enumerate() {
        let pad = "  ".repeat(i + 1);
        let join = if i == 0 {
            String::new()
        } else if item.join == JoinKind::Left {
            "Nested Loop Left Join → ".into()
        } else {
            "Nested Loop → ".into()
        };
        let access = match &item.source {
            Source::Table(t, Access::Full) => format!("Seq Scan on {}", t.name),
            Source::Table(t, Access::Points(_)) => {
                format!("Index Lookups on {} using primary key", t.name)
            }
            Source::Table(t, Access::Point(_)) => {
                format!("Index Lookup on {} using primary key", t.name)
            }
            Source::Table(t, Access::Range { .. }) => {
                format!("Index Range Scan on {} using primary key", t.name)
            }
            Source::Table(t, Access::Index(ix, _)) => {
                format!("Index Scan on {} using {}", t.name, ix.name)
            }
            Source::Series(..) => "Function Scan on generate_series".into(),
            Source::Rows(_) => format!("Scan of {}", item.label),
            Source::Values(_) => "Values Scan".into(),
            Source::Derived(_) => format!("Subquery Scan on {}", item.label),
            Source::SetOp(..) => format!("{} of two queries", item.label),
        };
        lines.push(format!("{pad}{join}{access}"));
        let keys = |exprs: &[Expr]| exprs.iter().map(|e| e.to_string()).collect::<Vec<_>>();
        let key = match &item.source {
            Source::Table(_, Access::Point(k)) => Some(format!("({})", keys(k).join(", "))),
            Source::Table(_, Access::Points(k)) => Some(format!("any of ({})", keys(k).join(", "))),
            Source::Table(_, Access::Index(_, k)) => Some(format!("({})", keys(k).join(", "))),
            Source::Table(_, Access::Range { prefix, lower, upper }) => {
                let mut parts = vec![format!("prefix ({})", keys(prefix).join(", "))];
                if let Some((e, inclusive)) = lower {
                    parts.push(format!("from {e}{}", if *inclusive { " inclusive" } else { "" }));
                }
                if let Some((e, inclusive)) = upper {
                    parts.push(format!("to {e}{}", if *inclusive { " inclusive" } else { "" }));
                }
                Some(parts.join(" "))
            }
            _ => None,
        };
        if let Some(key) = key {
            lines.push(format!("{pad}  Key: {key}"));
        }
        if !item.on.is_empty() {
            lines.push(format!("{pad}  Join Filter: {}", keys(&item.on).join(" AND ")));
        }
        if !item.filters.is_empty() {
            lines.push(format!("{pad}  Filter: {}", keys(&item.filters).join(" AND ")));
        }
    }
    if plan.from.is_empty() {
        lines.push("Result".to_string());
    }
    lines
}
