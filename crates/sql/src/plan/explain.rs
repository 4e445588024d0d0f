//! EXPLAIN: a plan as text.

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
            Source::SetOp(..) => format!("{} of two queries", item.label),
        };
        lines.push(format!("{pad}{join}{access}"));
        if !item.filters.is_empty() || !item.on.is_empty() {
            lines.push(format!(
                "{pad}  Filter: {} condition(s)",
                item.filters.len() + item.on.len()
            ));
        }
    }
    if plan.from.is_empty() {
        lines.push("Result".to_string());
    }
    lines
}
