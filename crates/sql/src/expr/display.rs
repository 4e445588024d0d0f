//! Bound expressions as EXPLAIN shows them.

use crate::types::Value;

use crate::expr::*;

/// How a function or aggregate is shown by EXPLAIN: its Rust name in snake case.
pub(crate) fn snake_name(debug: &str) -> String {
    let mut out = String::new();
    for (i, c) in debug.chars().take_while(|c| c.is_alphanumeric()).enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

pub(crate) fn list(f: &mut std::fmt::Formatter<'_>, items: &[Expr]) -> std::fmt::Result {
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{e}")?;
    }
    Ok(())
}

/// A bound expression as EXPLAIN shows it: columns by their position in the row (`#0`),
/// parameters as `$1`, an enclosing query's columns as `outer.#0`.
impl std::fmt::Display for Expr {
    #[recursive::recursive]
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expr::Const(v) => match v {
                Value::Null => f.write_str("NULL"),
                Value::Text(s) => write!(f, "'{}'", s.replace('\'', "''")),
                v => f.write_str(&v.to_text(v.natural_type()).unwrap_or_default()),
            },
            Expr::Column(i) => write!(f, "#{i}"),
            Expr::Param(i) => write!(f, "${}", i + 1),
            Expr::Outer(i) => write!(f, "outer.#{i}"),
            Expr::Subquery(_, kind, _) => match kind {
                SubqueryKind::Scalar => f.write_str("(subquery)"),
                SubqueryKind::Exists(false) => f.write_str("EXISTS (subquery)"),
                SubqueryKind::Exists(true) => f.write_str("NOT EXISTS (subquery)"),
                SubqueryKind::In(x, false) => write!(f, "({x} IN (subquery))"),
                SubqueryKind::In(x, true) => write!(f, "({x} NOT IN (subquery))"),
                SubqueryKind::InRow(xs, negated) => {
                    f.write_str("((")?;
                    list(f, xs)?;
                    write!(f, ") {}IN (subquery))", if *negated { "NOT " } else { "" })
                }
                SubqueryKind::Array => f.write_str("ARRAY(subquery)"),
            },
            Expr::AnyOp(x, op, arr, all) => {
                let q = if *all { "ALL" } else { "ANY" };
                write!(f, "({x} {} {q} ({arr}))", op_name(*op))
            }
            Expr::Not(x) => write!(f, "(NOT {x})"),
            Expr::Domain(x, d) => write!(f, "{x}::{}", d.name),
            Expr::Neg(x) => write!(f, "(-{x})"),
            Expr::Binary(op, a, b) => write!(f, "({a} {} {b})", op_name(*op)),
            Expr::And(a, b) => write!(f, "({a} AND {b})"),
            Expr::Or(a, b) => write!(f, "({a} OR {b})"),
            Expr::IsNull(x, false) => write!(f, "({x} IS NULL)"),
            Expr::IsNull(x, true) => write!(f, "({x} IS NOT NULL)"),
            Expr::IsDistinct(a, b, false) => write!(f, "({a} IS DISTINCT FROM {b})"),
            Expr::IsDistinct(a, b, true) => write!(f, "({a} IS NOT DISTINCT FROM {b})"),
            Expr::InList(x, items, negated) => {
                write!(f, "({x} {}IN (", if *negated { "NOT " } else { "" })?;
                list(f, items)?;
                f.write_str("))")
            }
            Expr::InValues(x, values, negated) => {
                let not = if *negated { "NOT " } else { "" };
                write!(f, "({x} {not}IN ({} values))", values.len())
            }
            Expr::Like { expr, pattern, negated, case_insensitive } => {
                let not = if *negated { "NOT " } else { "" };
                let op = if *case_insensitive { "ILIKE" } else { "LIKE" };
                write!(f, "({expr} {not}{op} {pattern})")
            }
            Expr::Case { operand, whens, otherwise } => {
                f.write_str("CASE")?;
                if let Some(o) = operand {
                    write!(f, " {o}")?;
                }
                for (w, t) in whens {
                    write!(f, " WHEN {w} THEN {t}")?;
                }
                if let Some(o) = otherwise {
                    write!(f, " ELSE {o}")?;
                }
                f.write_str(" END")
            }
            Expr::Cast(x, ty) => write!(f, "{x}::{}", ty.sql_name()),
            Expr::Func(Func::Json(json, jsonb), args) => {
                use crate::expr::JsonFunc as J;
                let op = match json {
                    J::Field => Some("->"),
                    J::FieldText => Some("->>"),
                    J::Path => Some("#>"),
                    J::PathText => Some("#>>"),
                    J::Contains => Some("@>"),
                    J::Exists => Some("?"),
                    J::ExistsAny => Some("?|"),
                    J::ExistsAll => Some("?&"),
                    J::Concat => Some("||"),
                    J::Delete => Some("-"),
                    J::DeletePath => Some("#-"),
                    J::Equal => Some("="),
                    _ => None,
                };
                match (op, args.as_slice()) {
                    (Some(op), [a, b]) => write!(f, "({a} {op} {b})"),
                    _ => {
                        let prefix = if *jsonb { "jsonb_" } else { "json_" };
                        write!(f, "{prefix}{}(", snake_name(&format!("{json:?}")))?;
                        list(f, args)?;
                        f.write_str(")")
                    }
                }
            }
            Expr::Func(func, args) => {
                write!(f, "{}(", snake_name(&format!("{func:?}")))?;
                list(f, args)?;
                f.write_str(")")
            }
            Expr::Routine(routine, args) => {
                let name = routine.name.split('(').next().unwrap_or_default();
                write!(f, "{name}(")?;
                list(f, args)?;
                f.write_str(")")
            }
            Expr::Sequence(func, seq, args) => {
                write!(f, "{}('{}'::regclass", func.name(), seq.name.replace('\'', "''"))?;
                for a in args {
                    write!(f, ", {a}")?;
                }
                f.write_str(")")
            }
            Expr::Agg(func, distinct, arg, _) => {
                match func {
                    AggFunc::User(u) => write!(f, "{}(", u.name)?,
                    func => write!(f, "{}(", snake_name(&format!("{func:?}")))?,
                }
                if *distinct {
                    f.write_str("DISTINCT ")?;
                }
                match arg {
                    Some(a) => write!(f, "{a})"),
                    None => f.write_str("*)"),
                }
            }
            Expr::Window(w) => {
                let name = snake_name(&format!("{:?}", w.func));
                let args: Vec<String> = w.args.iter().map(|a| a.to_string()).collect();
                write!(f, "{name}({}) OVER (…)", args.join(", "))
            }
        }
    }
}
