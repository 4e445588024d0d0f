//! Column defaults as PostgreSQL shows them (`information_schema.columns.column_default`,
//! `pg_get_expr(adbin, adrelid)`).
//!
//! PostgreSQL stores a default as an expression tree and prints it back: a literal becomes a
//! constant of the type it was coerced to, printed in that type's canonical form with a cast
//! (`'x'::character varying`, `'2020-01-02'::date`, `'-1'::integer`), except the constants
//! that need none — booleans, non-negative integers, and numbers with a point or exponent —
//! while implicit conversions (an integer literal for a `bigint` column) are not shown. Kiln
//! keeps a default as the text it was written in; this prints a literal one the same way.
//! Any other default (a call, an expression) is shown as written.

use sqlparser::ast;

use crate::types::{DataType, Value};

/// The default `stored` of a column of type `ty`, as PostgreSQL shows it; user types are
/// named `public.t` when `qualify` (the search path lacks `public`).
pub(crate) fn shown(stored: &str, ty: DataType, qualify: bool) -> String {
    let Ok(expr) = crate::parse::parse_expr(stored) else { return stored.to_string() };
    match constant(&expr, ty, qualify) {
        Some(c) => c,
        // Off the search path, its `nextval` calls name their sequences `public.s`.
        // Its `nextval` calls name their sequences as the session's path shows them.
        None if qualify || stored.contains('.') => {
            crate::exec::sequences::default_shown(stored, qualify)
        }
        None => stored.to_string(),
    }
}

fn constant(expr: &ast::Expr, ty: DataType, qualify: bool) -> Option<String> {
    match expr {
        ast::Expr::Nested(inner) => constant(inner, ty, qualify),
        ast::Expr::Value(v) => match &v.value {
            // An untyped string is read as the column's type.
            ast::Value::SingleQuotedString(s) => typed(s, ty, qualify),
            ast::Value::Boolean(b) => Some(b.to_string()),
            ast::Value::Number(n, _) => Some(number(n)),
            _ => None,
        },
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => match expr.as_ref() {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) => Some(number(&format!("-{n}"))),
                _ => None,
            },
            _ => None,
        },
        // `'x'::t`: a constant of type t, whatever the column's type.
        ast::Expr::Cast {
            kind: ast::CastKind::DoubleColon | ast::CastKind::Cast,
            expr,
            data_type,
            ..
        } => {
            let ast::Expr::Value(v) = expr.as_ref() else { return None };
            let ast::Value::SingleQuotedString(s) = &v.value else { return None };
            let t = crate::bind::data_type(data_type).ok()?;
            typed(s, t, qualify)
        }
        _ => None,
    }
}

/// A numeric literal: an integer that fits `integer`, else one that fits `bigint`, else a
/// `numeric`.
fn number(n: &str) -> String {
    match n.parse::<i64>() {
        Ok(i) if i32::try_from(i).is_ok() => {
            if i < 0 {
                format!("'{i}'::integer")
            } else {
                i.to_string()
            }
        }
        Ok(i) => format!("'{i}'::bigint"),
        Err(_) => numeric_text(n),
    }
}

/// A `numeric` constant: bare when it starts with a digit and has a point or exponent.
fn numeric_text(n: &str) -> String {
    if n.starts_with(|c: char| c.is_ascii_digit()) && n.contains(['.', 'e', 'E']) {
        n.to_string()
    } else {
        format!("'{n}'::numeric")
    }
}

/// String `s` read as a constant of type `ty` (without its modifiers: the conversion to a
/// length or scale is not shown), printed as PostgreSQL prints one.
fn typed(s: &str, ty: DataType, qualify: bool) -> Option<String> {
    let base = unmodified(ty);
    let value = Value::Text(s.to_string()).cast(base).ok()?;
    let canonical = value.to_text(base)?;
    Some(match base {
        DataType::Bool => (value == Value::Bool(true)).to_string(),
        DataType::Int4 if !canonical.starts_with('-') => canonical,
        DataType::Numeric(None) => numeric_text(&canonical),
        _ => format!("'{}'::{}", canonical.replace('\'', "''"), label(ty, qualify)),
    })
}

/// The type without its modifiers (`character(n)` as text: a `bpchar` constant is unpadded).
fn unmodified(ty: DataType) -> DataType {
    match ty {
        DataType::Array(e) => crate::array::array_of(unmodified(*e)).unwrap_or(ty),
        DataType::Char(_) => DataType::Text,
        DataType::Varchar(_) => DataType::Varchar(None),
        DataType::Numeric(_) => DataType::Numeric(None),
        DataType::Interval(_) => DataType::Interval(None),
        t => t,
    }
}

/// A type's name in a cast PostgreSQL prints: without its modifiers (`character varying`,
/// `numeric`), `bpchar` for `character(n)`.
fn label(ty: DataType, qualify: bool) -> String {
    match ty {
        DataType::Array(e) => format!("{}[]", label(*e, qualify)),
        DataType::Char(_) => "bpchar".into(),
        DataType::Varchar(_) => "character varying".into(),
        DataType::Numeric(_) => "numeric".into(),
        DataType::Interval(_) => "interval".into(),
        t if t.is_enum() && qualify => format!("public.{}", t.sql_name()),
        t => t.sql_name(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_defaults_print_as_postgresql_prints_them() {
        let cases = [
            ("-1", DataType::Int4, "'-1'::integer"),
            ("5", DataType::Int4, "5"),
            ("7", DataType::Int8, "7"),
            ("'7'", DataType::Int8, "'7'::bigint"),
            ("'5'", DataType::Int4, "5"),
            ("'0'", DataType::Numeric(Some((5, 2))), "'0'::numeric"),
            ("1.5", DataType::Numeric(None), "1.5"),
            ("-1.5", DataType::Float8, "'-1.5'::numeric"),
            ("'x'", DataType::Varchar(Some(20)), "'x'::character varying"),
            ("'a'", DataType::Char(3), "'a'::bpchar"),
            ("'it''s'", DataType::Text, "'it''s'::text"),
            ("'true'", DataType::Bool, "true"),
            ("false", DataType::Bool, "false"),
            ("('y')", DataType::Varchar(None), "'y'::character varying"),
            ("'a'::text", DataType::Varchar(None), "'a'::text"),
            ("'10:00'", DataType::Time(None), "'10:00:00'::time without time zone"),
            ("now()", DataType::TimestampTz(None), "now()"),
            ("CURRENT_TIMESTAMP", DataType::TimestampTz(None), "CURRENT_TIMESTAMP"),
            ("nextval('s'::regclass)", DataType::Int4, "nextval('s'::regclass)"),
            ("3000000000", DataType::Int8, "'3000000000'::bigint"),
        ];
        for (stored, ty, want) in cases {
            assert_eq!(shown(stored, ty, false), want, "{stored} as {}", ty.sql_name());
        }
    }
}

/// A CHECK constraint's definition (`CHECK (cond)`, its condition as written, perhaps with
/// ` NOT VALID` after it) as `pg_get_constraintdef` writes it without `pretty`: every
/// operator, NOT, IS, BETWEEN, IN, LIKE and ANY in parentheses of its own inside the CHECK's
/// (`CHECK ((a > 0))`, `CHECK (((a > 0) AND (b IS NOT NULL)))`), which ORMs that read a
/// constraint back rely on. Any other definition, or one that does not parse, as it is.
pub(crate) fn check_def_parenthesized(def: &str) -> String {
    let (body, suffix) = match def.strip_suffix(" NOT VALID") {
        Some(body) => (body, " NOT VALID"),
        None => (def, ""),
    };
    let Some(cond) = body.strip_prefix("CHECK (").and_then(|r| r.strip_suffix(')')) else {
        return def.to_string();
    };
    let Ok(mut expr) = crate::parse::parse_expr(cond) else { return def.to_string() };
    use ast::Expr as E;
    // Children first: an operator is wrapped once, and parentheses the text already had
    // around it are not doubled.
    let _ = ast::visit_expressions_mut(&mut expr, |e| {
        let operator = matches!(
            e,
            E::BinaryOp { .. }
                | E::UnaryOp { .. }
                | E::IsNull(_)
                | E::IsNotNull(_)
                | E::IsTrue(_)
                | E::IsNotTrue(_)
                | E::IsFalse(_)
                | E::IsNotFalse(_)
                | E::IsUnknown(_)
                | E::IsNotUnknown(_)
                | E::IsDistinctFrom(..)
                | E::IsNotDistinctFrom(..)
                | E::InList { .. }
                | E::Between { .. }
                | E::Like { .. }
                | E::ILike { .. }
                | E::SimilarTo { .. }
                | E::AnyOp { .. }
                | E::AllOp { .. }
        );
        if operator {
            *e = E::Nested(Box::new(e.clone()));
        } else if let E::Nested(inner) = e {
            if let E::Nested(innermost) = &**inner {
                *e = E::Nested(innermost.clone());
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    crate::bind::casts_named_as_catalog(&mut expr);
    format!("CHECK ({expr}){suffix}")
}

#[cfg(test)]
mod check_tests {
    use super::check_def_parenthesized as p;

    #[test]
    fn check_conditions_parenthesized_as_postgresql_deparses_them() {
        assert_eq!(p("CHECK (pages > 0)"), "CHECK ((pages > 0))");
        assert_eq!(p("CHECK ((pages > 0))"), "CHECK ((pages > 0))");
        assert_eq!(p("CHECK (a > 0 AND (b < 5))"), "CHECK (((a > 0) AND (b < 5)))");
        assert_eq!(p("CHECK (NOT flag)"), "CHECK ((NOT flag))");
        assert_eq!(p("CHECK (flag)"), "CHECK (flag)");
        assert_eq!(p("CHECK (a::text ~~ 'x'::text)"), "CHECK ((a::text ~~ 'x'::text))");
        assert_eq!(
            p("CHECK (a IS NOT NULL OR b > 1) NOT VALID"),
            "CHECK (((a IS NOT NULL) OR (b > 1))) NOT VALID"
        );
        assert_eq!(p("FOREIGN KEY (a) REFERENCES t(id)"), "FOREIGN KEY (a) REFERENCES t(id)");
        assert_eq!(p("CHECK (((("), "CHECK ((((");
    }
}
