//! Binding expressions: names to columns, literals to values, operators to typed nodes.

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::*;
use crate::error::{code, Result, SqlError};
use crate::expr::*;
use crate::types::{check_int_range, DataType, Value};

impl<'a> Planner<'a> {
    /// `a << n` and `a >> n` of an integer `a` (its type's width: a shift wraps as in
    /// PostgreSQL, the count taken modulo the width) by an integer count.
    fn shift(
        &mut self,
        left_shift: bool,
        left: &ast::Expr,
        right: &ast::Expr,
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        let (a, at) = self.expr(left, scope, aggs)?;
        let (n, nt) = self.expr(right, scope, aggs)?;
        if let Some(net) =
            self.network_operator(if left_shift { "<<" } else { ">>" }, &a, at, &n, nt)
        {
            return net;
        }
        let want = if at == DataType::Unknown { DataType::Int4 } else { at };
        let (a, at) = self.coerce(a, at, want)?;
        let (n, nt) = self.coerce(n, nt, DataType::Int4)?;
        // An untyped NULL count is an integer one.
        let nt = if matches!(n, Expr::Const(Value::Null)) { DataType::Int4 } else { nt };
        if !at.is_integer() || !nt.is_integer() {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} {} {}",
                    at.sql_name(),
                    if left_shift { "<<" } else { ">>" },
                    nt.sql_name()
                ),
            )
            .hint("No operator matches the given name and argument types. You might need to add explicit type casts."));
        }
        let bits = match at {
            DataType::Int2 => 16,
            DataType::Int4 => 32,
            _ => 64,
        };
        let f = Func::Math(crate::expr::MathFunc::Shift { left: left_shift, bits });
        Ok((Expr::Func(f, vec![a, n]), at))
    }

    /// Binds an expression in `scope`. Aggregates are allowed when `aggs` is set.
    #[recursive::recursive]
    pub fn expr(&mut self, e: &ast::Expr, scope: &Scope, aggs: bool) -> Result<(Expr, DataType)> {
        use ast::Expr as E;
        if !matches!(e, E::Nested(_) | E::Function(_)) {
            // A set-returning call is a whole select-list item, not part of one.
            self.set_item = false;
        }
        Ok(match e {
            E::Identifier(i) => {
                let name = ident(i);
                match scope
                    .resolve(None, &name)
                    .map(|(i, t)| (Expr::Column(i), t))
                    .or_else(|e| self.resolve_outer(None, &name, e))
                {
                    Ok(found) => found,
                    Err(err) => match name.as_str() {
                        "current_timestamp" | "now" => {
                            (Expr::Func(Func::Now, vec![]), DataType::TimestampTz(None))
                        }
                        "localtimestamp" => {
                            (Expr::Func(Func::LocalTimestamp, vec![]), DataType::Timestamp(None))
                        }
                        "localtime" => (Expr::Func(Func::LocalTime, vec![]), DataType::Time(None)),
                        "current_date" => (Expr::Func(Func::CurrentDate, vec![]), DataType::Date),
                        "current_user" | "session_user" | "user" => {
                            (Expr::Func(Func::CurrentUser, vec![]), DataType::Text)
                        }
                        "current_schema" => {
                            (Expr::Func(Func::CurrentSchema, vec![]), DataType::Text)
                        }
                        "current_catalog" => {
                            (Expr::Func(Func::CurrentDatabase, vec![]), DataType::Text)
                        }
                        // A table's `tableoid` system column: its OID on every row.
                        "tableoid" if scope.table_oid(None).is_some() => (
                            Expr::Const(Value::Int(scope.table_oid(None).unwrap_or(0).into())),
                            DataType::Oid,
                        ),
                        "default" if i.quote_style.is_none() => {
                            return Err(SqlError::syntax("DEFAULT is not allowed in this context")
                                .located(location_of(i)))
                        }
                        _ => return Err(err.located(location_of(i))),
                    },
                }
            }
            E::CompoundIdentifier(parts) => {
                let names: Vec<String> = parts.iter().map(ident).collect();
                let (table, col) = match names.as_slice() {
                    [t, c] => (t.as_str(), c.as_str()),
                    [_, t, c] => (t.as_str(), c.as_str()),
                    _ => return Err(SqlError::unsupported(format!("the reference {e}"))),
                };
                scope
                    .resolve(Some(table), col)
                    .map(|(i, t)| (Expr::Column(i), t))
                    .or_else(|e| match scope.table_oid(Some(table)) {
                        Some(oid) if col == "tableoid" => {
                            Ok((Expr::Const(Value::Int(oid.into())), DataType::Oid))
                        }
                        _ => self.resolve_outer(Some(table), col, e),
                    })
                    .map_err(|err| err.located(parts.first().and_then(location_of)))?
            }
            E::Value(v) => self.literal(&v.value)?,
            E::Nested(inner) => self.expr(inner, scope, aggs)?,
            E::UnaryOp { op, expr } => {
                let (x, ty) = self.expr(expr, scope, aggs)?;
                match op {
                    ast::UnaryOperator::Not => {
                        let (x, _) = self.coerce(x, ty, DataType::Bool)?;
                        (fold_constant_logic(Expr::Not(Box::new(x)), self.env)?, DataType::Bool)
                    }
                    ast::UnaryOperator::Minus => match x {
                        Expr::Const(Value::Int(i))
                            if i.checked_neg().is_some_and(|n| check_int_range(n, ty).is_ok()) =>
                        {
                            (Expr::Const(Value::Int(-i)), ty)
                        }
                        Expr::Const(Value::Numeric(d)) => {
                            (Expr::Const(Value::Numeric(d.neg())), ty)
                        }
                        // Negation is done in 64 bits (22003 past them); a narrower result
                        // is range-checked, as for the other arithmetic operators.
                        x if matches!(ty, DataType::Int2 | DataType::Int4) => {
                            (Expr::Cast(Box::new(Expr::Neg(Box::new(x))), ty), ty)
                        }
                        x => (Expr::Neg(Box::new(x)), ty),
                    },
                    ast::UnaryOperator::Plus => (x, ty),
                    // !! of a text search query: its negation.
                    ast::UnaryOperator::PGPrefixFactorial
                        if matches!(ty, DataType::TsQuery | DataType::Unknown) =>
                    {
                        let (x, _) = self.coerce(x, ty, DataType::TsQuery)?;
                        let not = Func::Ts(crate::expr::TsFunc::QueryNot);
                        self.fold(not, vec![x], DataType::TsQuery)?
                    }
                    // ~ of an address: its bits inverted.
                    ast::UnaryOperator::BitwiseNot
                        if matches!(ty, DataType::Inet | DataType::Cidr) =>
                    {
                        (Expr::Func(Func::Net(NetFunc::Not), vec![x]), DataType::Inet)
                    }
                    // ~ of an integer: its bits inverted, in its own width.
                    ast::UnaryOperator::BitwiseNot => {
                        let want = if ty == DataType::Unknown { DataType::Int4 } else { ty };
                        let (x, ty) = self.coerce(x, ty, want)?;
                        if !ty.is_integer() {
                            return Err(SqlError::new(
                                code::UNDEFINED_FUNCTION,
                                format!("operator does not exist: ~ {}", ty.sql_name()),
                            ));
                        }
                        let not = Func::Math(crate::expr::MathFunc::BitNot);
                        (Expr::Func(not, vec![x]), ty)
                    }
                    other => return Err(SqlError::unsupported(format!("the operator {other}"))),
                }
            }
            E::BinaryOp {
                left,
                op:
                    op @ (ast::BinaryOperator::Eq
                    | ast::BinaryOperator::NotEq
                    | ast::BinaryOperator::Lt
                    | ast::BinaryOperator::LtEq
                    | ast::BinaryOperator::Gt
                    | ast::BinaryOperator::GtEq),
                right,
            } if row_items(left).is_some() || row_items(right).is_some() => {
                (self.row_compare(left, op, right, scope, aggs)?, DataType::Bool)
            }
            E::BinaryOp { left, op, right } => self.binary(left, op, right, scope, aggs)?,
            E::IsNull(x) | E::IsNotNull(x) => {
                let (x, _) = self.expr(x, scope, aggs)?;
                let e = Expr::IsNull(Box::new(x), matches!(e, E::IsNotNull(_)));
                (fold_constant_logic(e, self.env)?, DataType::Bool)
            }
            E::IsTrue(x) | E::IsNotTrue(x) | E::IsFalse(x) | E::IsNotFalse(x) => {
                let (x, _) = self.expr(x, scope, aggs)?;
                let want = matches!(e, E::IsTrue(_) | E::IsNotTrue(_));
                let negated = matches!(e, E::IsNotTrue(_) | E::IsNotFalse(_));
                (
                    Expr::IsDistinct(
                        Box::new(x),
                        Box::new(Expr::Const(Value::Bool(want))),
                        !negated,
                    ),
                    DataType::Bool,
                )
            }
            E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
                let (a, b) = self.comparable(a, b, scope, aggs)?;
                let e = Expr::IsDistinct(
                    Box::new(a),
                    Box::new(b),
                    matches!(e, E::IsNotDistinctFrom(..)),
                );
                (fold_constant_logic(e, self.env)?, DataType::Bool)
            }
            E::InList { expr, list, negated } if row_items(expr).is_some() => {
                // (a, b) IN ((1, 2), (3, 4)) is (a = 1 AND b = 2) OR (a = 3 AND b = 4).
                let mut alternatives = Vec::with_capacity(list.len());
                for item in list {
                    alternatives.push(self.row_equal(expr, item, scope, aggs)?);
                }
                let any = balanced(false, alternatives);
                (if *negated { Expr::Not(Box::new(any)) } else { any }, DataType::Bool)
            }
            E::InList { expr, list, negated } => {
                let (x, ty) = self.expr(expr, scope, aggs)?;
                let mut items = Vec::with_capacity(list.len());
                // Untyped items take the expression's type without its modifier.
                let mut ty = ty.unmodified();
                for item in list {
                    let (i, ity) = self.expr(item, scope, aggs)?;
                    let (i, ity) = self.coerce(i, ity, ty)?;
                    if ty == DataType::Unknown {
                        ty = ity;
                    }
                    items.push(i);
                }
                let (x, _) = self.coerce(x, DataType::Unknown.min_known(ty), ty)?;
                (Expr::InList(Box::new(x), items, *negated), DataType::Bool)
            }
            E::InSubquery { expr, subquery, negated } if row_items(expr).is_some() => {
                // (a, b) IN (SELECT x, y …): each item compared with its column.
                let items = row_items(expr).unwrap_or_default();
                let (plan, refs, outer) = self.plan_subquery(subquery, scope)?;
                if plan.columns.len() != items.len() {
                    let which = if plan.columns.len() > items.len() { "many" } else { "few" };
                    return Err(SqlError::syntax(format!("subquery has too {which} columns")));
                }
                let mut xs = Vec::with_capacity(items.len());
                for (item, (_, cty)) in items.into_iter().zip(&plan.columns) {
                    let (x, ty) = self.expr(item, scope, aggs)?;
                    xs.push(self.coerce(x, ty, *cty)?.0);
                }
                (
                    Expr::Subquery(
                        SubPlan(Arc::new(plan), outer),
                        SubqueryKind::InRow(xs, *negated),
                        refs,
                    ),
                    DataType::Bool,
                )
            }
            E::InSubquery { expr, subquery, negated } => {
                let (x, ty) = self.expr(expr, scope, aggs)?;
                let (plan, refs, outer) = self.plan_subquery(subquery, scope)?;
                if plan.columns.len() != 1 {
                    return Err(SqlError::syntax("subquery has too many columns"));
                }
                let (x, _) = self.coerce(x, ty, plan.columns[0].1)?;
                (
                    Expr::Subquery(
                        SubPlan(Arc::new(plan), outer),
                        SubqueryKind::In(Box::new(x), *negated),
                        refs,
                    ),
                    DataType::Bool,
                )
            }
            E::Subquery(q) => {
                let (plan, refs, outer) = self.plan_subquery(q, scope)?;
                if plan.columns.len() != 1 {
                    return Err(SqlError::syntax("subquery must return only one column"));
                }
                let ty = plan.columns[0].1;
                (Expr::Subquery(SubPlan(Arc::new(plan), outer), SubqueryKind::Scalar, refs), ty)
            }
            E::Exists { subquery, negated } => {
                let (plan, refs, outer) = self.plan_subquery(subquery, scope)?;
                (
                    Expr::Subquery(
                        SubPlan(Arc::new(plan), outer),
                        SubqueryKind::Exists(*negated),
                        refs,
                    ),
                    DataType::Bool,
                )
            }
            E::AnyOp { left, compare_op, right, .. } => {
                self.quantified(left, compare_op, right, false, scope, aggs)?
            }
            E::AllOp { left, compare_op, right } => {
                self.quantified(left, compare_op, right, true, scope, aggs)?
            }
            E::Array(ast::Array { elem, .. }) => self.array_constructor(elem, scope, aggs)?,
            E::Collate { expr, .. } => self.expr(expr, scope, aggs)?,
            E::CompoundFieldAccess { root, access_chain } => {
                self.subscript(root, access_chain, scope, aggs)?
            }
            E::Between { expr, negated, low, high } => {
                let (x1, l) = self.comparable(expr, low, scope, aggs)?;
                let (x2, h) = self.comparable(expr, high, scope, aggs)?;
                let env = self.env;
                let both = Expr::And(
                    Box::new(fold_constant_logic(
                        Expr::Binary(BinOp::GtEq, Box::new(x1), Box::new(l)),
                        env,
                    )?),
                    Box::new(fold_constant_logic(
                        Expr::Binary(BinOp::LtEq, Box::new(x2), Box::new(h)),
                        env,
                    )?),
                );
                let both = fold_constant_logic(both, env)?;
                let e = if *negated { Expr::Not(Box::new(both)) } else { both };
                (fold_constant_logic(e, self.env)?, DataType::Bool)
            }
            E::Like { negated, expr, pattern, escape_char, any: false }
            | E::ILike { negated, expr, pattern, escape_char, any: false } => {
                let (x, _) = self.expr(expr, scope, aggs)?;
                let (p, pty) = self.expr(pattern, scope, aggs)?;
                let (mut p, _) = self.coerce(p, pty, DataType::Text)?;
                // `ESCAPE 'c'` (or `''`: none): the pattern rewritten to backslash escapes.
                if let Some(escape) = escape_char {
                    let (c, cty) = self.expr(escape, scope, aggs)?;
                    let (c, _) = self.coerce(c, cty, DataType::Text)?;
                    p = Expr::Func(Func::Str(crate::expr::StrFunc::LikeEscape), vec![p, c]);
                }
                (
                    Expr::Like {
                        expr: Box::new(x),
                        pattern: Box::new(p),
                        negated: *negated,
                        case_insensitive: matches!(e, E::ILike { .. }),
                    },
                    DataType::Bool,
                )
            }
            E::SimilarTo { negated, expr, pattern, escape_char } => {
                let (x, xty) = self.expr(expr, scope, aggs)?;
                let (x, _) = self.coerce(x, xty, DataType::Text)?;
                let (p, pty) = self.expr(pattern, scope, aggs)?;
                let (p, _) = self.coerce(p, pty, DataType::Text)?;
                let mut args = vec![p];
                if let Some(escape) = escape_char {
                    let (c, cty) = self.expr(escape, scope, aggs)?;
                    args.push(self.coerce(c, cty, DataType::Text)?.0);
                }
                let regex = Expr::Func(Func::Str(crate::expr::StrFunc::SimilarEscape), args);
                let op = if *negated { BinOp::RegexNotMatch } else { BinOp::RegexMatch };
                (Expr::Binary(op, Box::new(x), Box::new(regex)), DataType::Bool)
            }
            E::Case { operand, conditions, else_result, .. } => {
                let operand = match operand {
                    Some(o) => Some(Box::new(self.expr(o, scope, aggs)?.0)),
                    None => None,
                };
                let mut whens = Vec::new();
                let mut ty = DataType::Unknown;
                for cw in conditions {
                    let (w, _) = self.expr(&cw.condition, scope, aggs)?;
                    let dead = operand.is_none()
                        && matches!(w, Expr::Const(Value::Bool(false) | Value::Null));
                    let outer_dead = self.dead_arm;
                    self.dead_arm |= dead;
                    let result = self.expr(&cw.result, scope, aggs);
                    self.dead_arm = outer_dead;
                    let (t, tty) = result?;
                    ty = DataType::common(ty, tty);
                    whens.push((w, (t, tty)));
                }
                let otherwise = match else_result {
                    Some(x) => {
                        let (x, xty) = self.expr(x, scope, aggs)?;
                        ty = DataType::common(ty, xty);
                        Some((x, xty))
                    }
                    None => None,
                };
                let mut unified = Vec::with_capacity(whens.len());
                for (w, (t, tty)) in whens {
                    unified.push((w, self.unify(t, tty, ty)?));
                }
                let mut otherwise = match otherwise {
                    Some((x, xty)) => Some(Box::new(self.unify(x, xty, ty)?)),
                    None => None,
                };
                if operand.is_none() {
                    // As PostgreSQL folds it: an arm whose condition is constantly false or
                    // NULL can never be taken, and one constantly true ends the CASE.
                    let mut kept = Vec::with_capacity(unified.len());
                    for (w, t) in unified {
                        match w {
                            Expr::Const(Value::Bool(false) | Value::Null) => {}
                            Expr::Const(Value::Bool(true)) => {
                                otherwise = Some(Box::new(t));
                                break;
                            }
                            w => kept.push((w, t)),
                        }
                    }
                    unified = kept;
                }
                if unified.is_empty() {
                    (otherwise.map_or(Expr::Const(Value::Null), |e| *e), ty)
                } else {
                    (Expr::Case { operand, whens: unified, otherwise }, ty)
                }
            }
            E::AtTimeZone { timestamp, time_zone } => {
                let (zone, zt) = self.expr(time_zone, scope, aggs)?;
                let (x, t) = self.expr(timestamp, scope, aggs)?;
                return self.at_time_zone(zone, zt, x, t);
            }
            E::Extract { field, expr, .. } => {
                let name = field.to_string().trim_matches('\'').to_lowercase();
                let (source, st) = self.expr(expr, scope, aggs)?;
                let unit = Expr::Const(Value::Text(name));
                return self.datetime_call("extract", Func::Extract, unit, source, st);
            }
            E::Cast { kind, expr, data_type: dt, format } => {
                // A cast to a domain: the cast to its base type, then its constraints.
                if let Some(domain) =
                    crate::bind::domain_named(dt, self.catalog, self.txn, self.db)?
                {
                    let base = crate::parse::parse_data_type(&domain.base.sql_name())?;
                    let to_base = E::Cast {
                        kind: kind.clone(),
                        expr: expr.clone(),
                        data_type: base,
                        format: format.clone(),
                    };
                    let (x, ty) = self.expr(&to_base, scope, aggs)?;
                    let mut planner = Planner::new(
                        self.txn,
                        self.catalog,
                        self.db,
                        vec![],
                        &crate::exec::constraints::NoSystemTables,
                        self.env,
                    );
                    let bound = crate::domains::bind(&mut planner, &domain)?;
                    return Ok((crate::domains::checked(x, bound), ty));
                }
                if let Some(kind) = crate::bind::reg::reg_kind(dt) {
                    return self.reg_cast(kind, expr, scope, aggs);
                }
                if let Some(name) = crate::bind::reg::regproc_constant(dt, expr) {
                    return Ok((Expr::Const(Value::Text(name)), DataType::Text));
                }
                let ty = self.data_type(dt)?;
                if matches!(ty, DataType::Oid | DataType::Int4 | DataType::Int8) {
                    if let Some(o) = self.regproc_oid(expr)? {
                        return Ok((Expr::Const(Value::Int(o)), ty));
                    }
                }
                // `x::regclass::text`: the name.
                if ty.is_string() {
                    let mut inner = expr.as_ref();
                    while let E::Nested(x) = inner {
                        inner = x;
                    }
                    if let E::Cast { expr: x, data_type: idt, .. } = inner {
                        if let Some(kind) = crate::bind::reg::reg_kind(idt) {
                            let (e, _) = self.reg_name(kind, x, scope, aggs)?;
                            return Ok(match e {
                                Expr::Const(v) => {
                                    (Expr::Const(v.cast_explicit(ty, self.env.style())?), ty)
                                }
                                e if ty == DataType::Text => (e, ty),
                                e => (Expr::Cast(Box::new(e), ty), ty),
                            });
                        }
                    }
                }
                let (x, xty) = self.expr(expr, scope, aggs)?;
                // An enum value casts to itself and to strings, and from strings only.
                let from_enum = xty.is_enum() && xty != ty && !ty.is_string();
                let to_enum = ty.is_enum()
                    && xty != ty
                    && !(xty.is_string()
                        || (ty.element().is_some()
                            && xty.element().is_some_and(DataType::is_string)));
                if from_enum || to_enum {
                    return Err(SqlError::new(
                        code::CANNOT_COERCE,
                        format!("cannot cast type {} to {}", xty.sql_name(), ty.sql_name()),
                    ));
                }
                match x {
                    // A quoted literal that is no value of the type: the error points at it
                    // (PostgreSQL's input functions report where their text was).
                    Expr::Const(v) => {
                        let at = if xty == DataType::Unknown { literal_location(expr) } else { None };
                        let v = v.cast_explicit(ty, self.env.style()).map_err(|e| e.located(at))?;
                        (Expr::Const(v), ty)
                    }
                    // A cast to the type it has already changes nothing (and a column so
                    // cast still shows that column).
                    x if xty == ty => (x, ty),
                    x => {
                        let (x, _) = self.coerce(x, xty, ty)?;
                        (Expr::Cast(Box::new(x), ty), ty)
                    }
                }
            }
            E::Interval(iv) => {
                let text = match iv.value.as_ref() {
                    E::Value(v) => match &v.value {
                        ast::Value::SingleQuotedString(s) => s.clone(),
                        _ => {
                            return Err(SqlError::unsupported(format!(
                                "{e} (an interval literal is a quoted string)"
                            )))
                        }
                    },
                    _ => {
                        return Err(SqlError::unsupported(format!(
                            "{e} (an interval literal is a quoted string)"
                        )))
                    }
                };
                let ty = DataType::Interval(interval_qualifier(iv)?);
                (Expr::Const(Value::parse_in(&text, ty, self.env.style())?), ty)
            }
            E::TypedString(ts) => {
                let ty = self.data_type(&ts.data_type)?;
                let text = match &ts.value.value {
                    ast::Value::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                let location = crate::bind::span_location(ts.value.span);
                let v = Value::parse_in(&text, ty, self.env.style()).map_err(|e| e.located(location))?;
                (Expr::Const(v), ty)
            }
            E::Tuple(_) | E::Function(_) if row_items(e).is_some() => {
                return Err(SqlError::unsupported(
                    "a row value outside a comparison (Kiln compares row values, as in (a, b) < (1, 2), but has no record type)",
                ))
            }
            E::Function(f) => self.function(f, scope, aggs)?,
            E::Ceil { expr, .. } | E::Floor { expr, .. } => {
                let (x, ty) = self.expr(expr, scope, aggs)?;
                let f = if matches!(e, E::Ceil { .. }) { Func::Ceil } else { Func::Floor };
                (Expr::Func(f, vec![x]), ty)
            }
            E::Substring { expr, substring_from, substring_for, .. } => {
                let mut args = vec![self.expr(expr, scope, aggs)?.0];
                if let Some(f) = substring_from {
                    let (x, t) = self.expr(f, scope, aggs)?;
                    args.push(self.coerce(x, t, DataType::Int4)?.0);
                } else {
                    args.push(Expr::Const(Value::Int(1)));
                }
                if let Some(f) = substring_for {
                    let (x, t) = self.expr(f, scope, aggs)?;
                    args.push(self.coerce(x, t, DataType::Int4)?.0);
                }
                (Expr::Func(Func::Substr, args), DataType::Text)
            }
            // position(sub IN s): strpos(s, sub).
            E::Position { expr, r#in } => {
                let mut args = Vec::with_capacity(2);
                for x in [r#in, expr] {
                    let (x, t) = self.expr(x, scope, aggs)?;
                    args.push(self.coerce(x, t, DataType::Text)?.0);
                }
                (Expr::Func(Func::Str(crate::expr::StrFunc::Strpos), args), DataType::Int4)
            }
            E::Overlay { expr, overlay_what, overlay_from, overlay_for } => {
                let mut args = Vec::with_capacity(4);
                for x in [expr, overlay_what] {
                    let (x, t) = self.expr(x, scope, aggs)?;
                    args.push(self.coerce(x, t, DataType::Text)?.0);
                }
                for x in std::iter::once(overlay_from).chain(overlay_for) {
                    let (x, t) = self.expr(x, scope, aggs)?;
                    args.push(self.coerce(x, t, DataType::Int8)?.0);
                }
                (Expr::Func(Func::Str(crate::expr::StrFunc::Overlay), args), DataType::Text)
            }
            E::Trim { expr, trim_where: None, trim_what: None, .. } => {
                (Expr::Func(Func::Trim, vec![self.expr(expr, scope, aggs)?.0]), DataType::Text)
            }
            E::Trim { expr, trim_where, trim_what, trim_characters: None } => {
                let (x, xt) = self.expr(expr, scope, aggs)?;
                let x = self.coerce(x, xt, DataType::Text)?.0;
                let chars = match trim_what {
                    Some(w) => {
                        let (c, ct) = self.expr(w, scope, aggs)?;
                        self.coerce(c, ct, DataType::Text)?.0
                    }
                    None => Expr::Const(Value::Text(" ".into())),
                };
                let side = match trim_where {
                    Some(ast::TrimWhereField::Leading) => 1,
                    Some(ast::TrimWhereField::Trailing) => 2,
                    _ => 0,
                };
                let f = match side {
                    1 => Func::Ltrim,
                    2 => Func::Rtrim,
                    _ => Func::Btrim,
                };
                (Expr::Func(f, vec![x, chars]), DataType::Text)
            }
            other => return Err(SqlError::unsupported(format!("the expression {other}"))),
        })
    }

    pub(crate) fn literal(&mut self, v: &ast::Value) -> Result<(Expr, DataType)> {
        Ok(match v {
            ast::Value::Number(n, _) => {
                if let Ok(i) = n.parse::<i64>() {
                    let ty = if i32::try_from(i).is_ok() { DataType::Int4 } else { DataType::Int8 };
                    (Expr::Const(Value::Int(i)), ty)
                } else {
                    (
                        Expr::Const(Value::parse(n, DataType::Numeric(None))?),
                        DataType::Numeric(None),
                    )
                }
            }
            ast::Value::SingleQuotedString(s)
            | ast::Value::EscapedStringLiteral(s)
            | ast::Value::DollarQuotedString(ast::DollarQuotedString { value: s, .. }) => {
                (Expr::Const(Value::Text(s.clone())), DataType::Unknown)
            }
            ast::Value::Boolean(b) => (Expr::Const(Value::Bool(*b)), DataType::Bool),
            ast::Value::Null => (Expr::Const(Value::Null), DataType::Unknown),
            ast::Value::Placeholder(p) => {
                let n: usize = p
                    .strip_prefix('$')
                    .and_then(|n| n.parse().ok())
                    .filter(|n| *n >= 1 && *n <= 65535)
                    .ok_or_else(|| SqlError::syntax(format!("syntax error at or near \"{p}\"")))?;
                let ty = self.param(n);
                (Expr::Param(n - 1), ty)
            }
            other => return Err(SqlError::unsupported(format!("the literal {other}"))),
        })
    }

    /// `(a, b) = (x, y)` as `a = x AND b = y`.
    pub(crate) fn row_equal(
        &mut self,
        left: &ast::Expr,
        right: &ast::Expr,
        scope: &Scope,
        aggs: bool,
    ) -> Result<Expr> {
        self.row_compare(left, &ast::BinaryOperator::Eq, right, scope, aggs)
    }

    /// A comparison of two row values, pair by pair from the left as PostgreSQL compares
    /// them: `=` holds when every pair is equal, `<>` when one pair differs; `<`, `<=`, `>`
    /// and `>=` are decided by the first pair that is not equal (NULL when that pair has a
    /// NULL), so `(a, b) < (x, y)` is `a < x OR (a = x AND b < y)`. The ordering forms also
    /// say `a <= x` (or `a >= x`) outright, which they imply, so that an index on the first
    /// column can bound the scan (keyset pagination: `WHERE (t, id) > ($1, $2)`).
    pub(crate) fn row_compare(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        scope: &Scope,
        aggs: bool,
    ) -> Result<Expr> {
        use ast::BinaryOperator as O;
        let (Some(l), Some(r)) = (row_items(left), row_items(right)) else {
            return Err(SqlError::unsupported("comparing a row value with a non-row value"));
        };
        if l.len() != r.len() {
            return Err(SqlError::syntax("unequal number of entries in row expressions"));
        }
        if l.is_empty() {
            return Err(SqlError::unsupported("comparing empty row values"));
        }
        let mut pairs = Vec::with_capacity(l.len());
        for (a, b) in l.into_iter().zip(r) {
            pairs.push(self.comparable(a, b, scope, aggs)?);
        }
        let pair = |op: BinOp, (a, b): &(Expr, Expr)| {
            Expr::Binary(op, Box::new(a.clone()), Box::new(b.clone()))
        };
        let (strict, last) = match op {
            O::Eq | O::NotEq => {
                let all = pairs.iter().map(|p| pair(BinOp::Eq, p)).collect();
                let eq = balanced(true, all);
                return Ok(if *op == O::NotEq { Expr::Not(Box::new(eq)) } else { eq });
            }
            O::Lt => (BinOp::Lt, BinOp::Lt),
            O::LtEq => (BinOp::Lt, BinOp::LtEq),
            O::Gt => (BinOp::Gt, BinOp::Gt),
            _ => (BinOp::Gt, BinOp::GtEq),
        };
        // Built from the last pair back, without recursion.
        let mut rest = pair(last, pairs.last().expect("at least one pair"));
        for p in pairs[..pairs.len() - 1].iter().rev() {
            let tie = Expr::And(Box::new(pair(BinOp::Eq, p)), Box::new(rest));
            rest = Expr::Or(Box::new(pair(strict, p)), Box::new(tie));
        }
        if pairs.len() == 1 {
            return Ok(rest);
        }
        let bound = if strict == BinOp::Lt { BinOp::LtEq } else { BinOp::GtEq };
        Ok(Expr::And(Box::new(pair(bound, &pairs[0])), Box::new(rest)))
    }

    pub(crate) fn comparable(
        &mut self,
        a: &ast::Expr,
        b: &ast::Expr,
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, Expr)> {
        let (a, at) = self.expr(a, scope, aggs)?;
        let (b, bt) = self.expr(b, scope, aggs)?;
        let (a, at) = self.coerce(a, at, bt.unmodified())?;
        let (b, _) = self.coerce(b, bt, at.unmodified())?;
        Ok((a, b))
    }

    pub(crate) fn binary(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        use ast::BinaryOperator as O;
        // `OPERATOR(pg_catalog.op)`, as pg_dump writes operators in function bodies: the
        // built-in operator.
        if let O::PGCustomBinaryOperator(parts) = op {
            if let [schema, name] = parts.as_slice() {
                if let Some(builtin) = builtin_operator(name) {
                    if schema.eq_ignore_ascii_case("pg_catalog") {
                        return self.binary(left, &builtin, right, scope, aggs);
                    }
                    // No operator is made in another schema (Kiln has no CREATE OPERATOR).
                    let (_, at) = self.expr(left, scope, aggs)?;
                    let (_, bt) = self.expr(right, scope, aggs)?;
                    return Err(no_operator(at, &format!("{schema}.{name}"), bt));
                }
            }
        }
        // `~~`, `!~~`, `~~*`, `!~~*`: LIKE and ILIKE by their operator names, as PostgreSQL
        // writes them back (pg_dump's CHECK constraints).
        let custom = match op {
            O::PGCustomBinaryOperator(parts) => parts.last().map(String::as_str),
            _ => None,
        };
        let like = match (op, custom) {
            (O::PGLikeMatch, _) | (_, Some("~~")) => Some((false, false)),
            (O::PGNotLikeMatch, _) | (_, Some("!~~")) => Some((true, false)),
            (O::PGILikeMatch, _) | (_, Some("~~*")) => Some((false, true)),
            (O::PGNotILikeMatch, _) | (_, Some("!~~*")) => Some((true, true)),
            _ => None,
        };
        if let Some((negated, insensitive)) = like {
            let (expr, pattern) = (Box::new(left.clone()), Box::new(right.clone()));
            let e = if insensitive {
                ast::Expr::ILike { negated, any: false, expr, pattern, escape_char: None }
            } else {
                ast::Expr::Like { negated, any: false, expr, pattern, escape_char: None }
            };
            return self.expr(&e, scope, aggs);
        }
        // Text search: `@@` (matching), `<->` (phrase of queries).
        let ts_name = match (op, custom) {
            (O::AtAt, _) => Some("@@"),
            (O::LtDashGt, _) => Some("<->"),
            _ => None,
        };
        if let Some(name) = ts_name {
            let (a, at) = self.expr(left, scope, aggs)?;
            let (b, bt) = self.expr(right, scope, aggs)?;
            return self
                .text_search_operator(name, &a, at, &b, bt)
                .unwrap_or_else(|| Err(no_operator(at, name, bt)));
        }
        let array_op = match op {
            O::AtArrow => Some(Func::ArrayContains),
            O::ArrowAt => Some(Func::ArrayContainedBy),
            O::PGOverlap => Some(Func::ArrayOverlap),
            _ => None,
        };
        if let Some(func) = array_op {
            // @> and <@ contain arrays, or jsonb documents; && overlaps arrays or networks.
            let (a, at) = self.expr(left, scope, aggs)?;
            let (b, bt) = self.expr(right, scope, aggs)?;
            if func == Func::ArrayOverlap {
                if let Some(ts) = self.text_search_operator("&&", &a, at, &b, bt) {
                    return ts;
                }
                if let Some(net) = self.network_operator("&&", &a, at, &b, bt) {
                    return net;
                }
                return self.array_predicate_bound(a, at, func, b, bt);
            }
            if let Some(op) = crate::bind::json::JsonOp::of(op, at, bt) {
                return self.json_binary(op, a, at, b, bt);
            }
            return self.array_predicate_bound(a, at, func, b, bt);
        }
        if let Some(op) = crate::bind::json::JsonOp::of(op, DataType::Jsonb, DataType::Jsonb)
            .filter(|o| o.json_only())
        {
            let (a, at) = self.expr(left, scope, aggs)?;
            let (b, bt) = self.expr(right, scope, aggs)?;
            return self.json_binary(op, a, at, b, bt);
        }
        if *op == O::PGExp {
            // `x ^ y` is pg_catalog.power(x, y).
            let arg =
                |e: &ast::Expr| ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e.clone()));
            let call = ast::Function {
                name: ast::ObjectName::from(vec![
                    ast::Ident::new("pg_catalog"),
                    ast::Ident::new("power"),
                ]),
                uses_odbc_syntax: false,
                parameters: ast::FunctionArguments::None,
                args: ast::FunctionArguments::List(ast::FunctionArgumentList {
                    duplicate_treatment: None,
                    args: vec![arg(left), arg(right)],
                    clauses: vec![],
                }),
                within_group: vec![],
                filter: None,
                null_treatment: None,
                over: None,
            };
            return self.function(&call, scope, aggs);
        }
        if let O::PGBitwiseShiftLeft | O::PGBitwiseShiftRight = op {
            return self.shift(matches!(op, O::PGBitwiseShiftLeft), left, right, scope, aggs);
        }
        // `<<=` and `>>=`: network containment (no other type has them).
        let custom = match op {
            O::Custom(name) => Some(name.as_str()),
            O::PGCustomBinaryOperator(parts) => parts.last().map(String::as_str),
            _ => None,
        };
        if let Some(name @ ("<<=" | ">>=")) = custom {
            let (a, at) = self.expr(left, scope, aggs)?;
            let (b, bt) = self.expr(right, scope, aggs)?;
            if let Some(net) = self.network_operator(name, &a, at, &b, bt) {
                return net;
            }
            return Err(no_operator(at, name, bt));
        }
        let bop = match op {
            O::And | O::Or => {
                // `a AND b AND c …` arrives as a left-deep chain: collect its operands without
                // recursing down the chain, and bind them as a balanced tree, so that evaluating
                // a chain of thousands of terms recurses only logarithmically deep. (AND and
                // OR are associative in three-valued logic; evaluation stays left to right.)
                let mut operands = vec![right];
                let mut rest = left;
                while let ast::Expr::BinaryOp { left: l, op: o, right: r } = rest {
                    if o != op {
                        break;
                    }
                    operands.push(r);
                    rest = l;
                }
                operands.push(rest);
                operands.reverse();
                let and = *op == O::And;
                let mut bound = Vec::with_capacity(operands.len());
                for operand in operands {
                    let (x, ty) = self.expr(operand, scope, aggs)?;
                    let x = self.coerce(x, ty, DataType::Bool)?.0;
                    // Folded as PostgreSQL does: a constant that decides the result (false
                    // under AND, true under OR) is the result; one that cannot is dropped.
                    match x {
                        Expr::Const(Value::Bool(b)) if b != and => {
                            return Ok((Expr::Const(Value::Bool(b)), DataType::Bool))
                        }
                        Expr::Const(Value::Bool(_)) => {}
                        x => bound.push(x),
                    }
                }
                if bound.is_empty() {
                    return Ok((Expr::Const(Value::Bool(and)), DataType::Bool));
                }
                return Ok((balanced(and, bound), DataType::Bool));
            }
            O::Plus => BinOp::Add,
            O::Minus => BinOp::Sub,
            O::Multiply => BinOp::Mul,
            O::Divide => BinOp::Div,
            O::Modulo => BinOp::Mod,
            O::StringConcat => BinOp::Concat,
            O::Eq => BinOp::Eq,
            O::NotEq => BinOp::NotEq,
            O::Lt => BinOp::Lt,
            O::LtEq => BinOp::LtEq,
            O::Gt => BinOp::Gt,
            O::GtEq => BinOp::GtEq,
            O::BitwiseAnd => BinOp::BitAnd,
            O::BitwiseOr => BinOp::BitOr,
            O::PGBitwiseXor => BinOp::BitXor,
            O::PGRegexMatch => BinOp::RegexMatch,
            O::PGRegexNotMatch => BinOp::RegexNotMatch,
            O::PGRegexIMatch => BinOp::RegexIMatch,
            O::PGRegexNotIMatch => BinOp::RegexNotIMatch,
            O::PGCustomBinaryOperator(parts) => match parts.last().map(String::as_str) {
                Some("~") => BinOp::RegexMatch,
                Some("!~") => BinOp::RegexNotMatch,
                Some("~*") => BinOp::RegexIMatch,
                Some("!~*") => BinOp::RegexNotIMatch,
                Some("=") => BinOp::Eq,
                Some("<>") => BinOp::NotEq,
                _ => return Err(SqlError::unsupported(format!("the operator {op}"))),
            },
            other => return Err(SqlError::unsupported(format!("the operator {other}"))),
        };
        let (a, at) = self.expr(left, scope, aggs)?;
        let (b, bt) = self.expr(right, scope, aggs)?;
        let net_op = match bop {
            BinOp::Add => Some("+"),
            BinOp::Sub => Some("-"),
            BinOp::BitAnd => Some("&"),
            BinOp::BitOr => Some("|"),
            _ => None,
        };
        if let Some(name) = net_op {
            if let Some(net) = self.network_operator(name, &a, at, &b, bt) {
                return net;
            }
        }
        if bop == BinOp::Concat {
            if let Some(ts) = self.text_search_operator("||", &a, at, &b, bt) {
                return ts;
            }
        }
        // jsonb || jsonb and jsonb - key.
        if let Some(json) = crate::bind::json::JsonOp::of(op, at, bt) {
            return self.json_binary(json, a, at, b, bt);
        }
        if let Some(types) = datetime_operator(bop, at, bt) {
            let (left_ty, right_ty, ty) = types?;
            let (a, _) = self.coerce(a, at, left_ty)?;
            let (b, _) = self.coerce(b, bt, right_ty)?;
            let style = self.env.style();
            // An integer or numeric factor of an interval is a double, as in PostgreSQL.
            let widen = |x: Expr, from: DataType, to: DataType| match x {
                Expr::Const(v) if from != to && from != DataType::Unknown => {
                    v.cast_in(to, style).map(Expr::Const)
                }
                x if from != to && from != DataType::Unknown => Ok(Expr::Cast(Box::new(x), to)),
                x => Ok(x),
            };
            let a = widen(a, at, left_ty)?;
            let b = widen(b, bt, right_ty)?;
            if let (Expr::Const(x), Expr::Const(y)) = (&a, &b) {
                match crate::expr::binary(bop, x.clone(), y.clone(), self.env.style()) {
                    Ok(v) => return Ok((Expr::Const(v), ty)),
                    Err(e) if !self.dead_arm => return Err(e),
                    Err(_) => {}
                }
            }
            return Ok((Expr::Binary(bop, Box::new(a), Box::new(b)), ty));
        }
        let ty = match bop {
            BinOp::Concat => {
                if at.element().is_some() || bt.element().is_some() {
                    return self.array_concat(a, at, b, bt);
                }
                let (a, _) = self.coerce(a, at, DataType::Text)?;
                let (b, _) = self.coerce(b, bt, DataType::Text)?;
                return Ok((Expr::Binary(bop, Box::new(a), Box::new(b)), DataType::Text));
            }
            BinOp::Eq
            | BinOp::NotEq
            | BinOp::Lt
            | BinOp::LtEq
            | BinOp::Gt
            | BinOp::GtEq
            | BinOp::RegexMatch
            | BinOp::RegexNotMatch
            | BinOp::RegexIMatch
            | BinOp::RegexNotIMatch => DataType::Bool,
            _ => {
                let common = DataType::common(at, bt);
                match common {
                    DataType::Unknown => DataType::Numeric(None),
                    t => t,
                }
            }
        };
        let regex = matches!(
            bop,
            BinOp::RegexMatch | BinOp::RegexNotMatch | BinOp::RegexIMatch | BinOp::RegexNotIMatch
        );
        if regex && (at.is_enum() || bt.is_enum()) {
            let shown =
                |t: DataType| if t == DataType::Unknown { "unknown".into() } else { t.sql_name() };
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("operator does not exist: {} {} {}", shown(at), crate::expr::op_name(bop), shown(bt)),
            )
            .hint("No operator matches the given name and argument types. You might need to add explicit type casts."));
        }
        // An untyped literal takes the other side's type without its modifier (a string
        // longer than a `varchar(4)` column compares unequal to it, as in PostgreSQL).
        let literal_to = |from: DataType, to: DataType| {
            if from == DataType::Unknown {
                to.unmodified()
            } else {
                to
            }
        };
        let (a, at2) = self.coerce(a, at, literal_to(at, bt))?;
        let (b, bt2) = self.coerce(b, bt, literal_to(bt, at2))?;
        // An enum value compares only with its own type (no implicit cast to text or from
        // a typed string), as in PostgreSQL.
        if ty == DataType::Bool && at2 != bt2 && (at2.is_enum() || bt2.is_enum()) {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} {} {}",
                    at2.sql_name(),
                    crate::expr::op_name(bop),
                    bt2.sql_name()
                ),
            )
            .hint("No operator matches the given name and argument types. You might need to add explicit type casts."));
        }
        // A timestamp or date compared with a timestamp with time zone is read as a local
        // time in the session's zone first, as PostgreSQL's implicit cast does.
        let (a, b) = match (at2, bt2) {
            (DataType::Date | DataType::Timestamp(_), DataType::TimestampTz(_)) => {
                (self.to_timestamptz(a)?, b)
            }
            (DataType::TimestampTz(_), DataType::Date | DataType::Timestamp(_)) => {
                (a, self.to_timestamptz(b)?)
            }
            _ => (a, b),
        };
        // jsonb equality compares documents (numbers by value), not their text.
        if at2 == DataType::Jsonb
            && bt2 == DataType::Jsonb
            && matches!(bop, BinOp::Eq | BinOp::NotEq)
        {
            let func = Func::Json(crate::expr::JsonFunc::Equal, true);
            let eq = match (a, b) {
                (Expr::Const(x), Expr::Const(y)) => {
                    Expr::Const(crate::expr::call(func, vec![x, y], &Ctx::new(&[], self.env))?)
                }
                (a, b) => Expr::Func(func, vec![a, b]),
            };
            let e = if bop == BinOp::NotEq { Expr::Not(Box::new(eq)) } else { eq };
            return Ok((fold_constant_logic(e, self.env)?, DataType::Bool));
        }
        if at2 == DataType::Jsonb
            && bt2 == DataType::Jsonb
            && matches!(bop, BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq)
        {
            let cmp = Expr::Func(Func::Json(crate::expr::JsonFunc::Compare, true), vec![a, b]);
            let e = Expr::Binary(bop, Box::new(cmp), Box::new(Expr::Const(Value::Int(0))));
            return Ok((fold_constant_logic(e, self.env)?, DataType::Bool));
        }
        let ty = if ty == DataType::Bool { ty } else { DataType::common(ty, DataType::Unknown) };
        // Fold constants so a key lookup sees a plain value. As in PostgreSQL, a constant
        // expression that fails (overflow, division by zero) fails the statement when it is
        // planned, whether or not a row would have evaluated it.
        if let (Expr::Const(x), Expr::Const(y)) = (&a, &b) {
            let folded = crate::expr::binary(bop, x.clone(), y.clone(), self.env.style()).and_then(
                |v| match (&v, ty) {
                    (Value::Int(_), DataType::Int4 | DataType::Int2) => v.cast(ty),
                    _ => Ok(v),
                },
            );
            match folded {
                Ok(v) => return Ok((Expr::Const(v), ty)),
                Err(e) if !self.dead_arm => return Err(e),
                Err(_) => {} // in an arm PostgreSQL drops unfolded: left for run time
            }
        }
        let e = Expr::Binary(bop, Box::new(a), Box::new(b));
        // Integer arithmetic is done in 64 bits; narrower results are range-checked.
        if matches!(ty, DataType::Int4 | DataType::Int2)
            && !matches!(
                bop,
                BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq
            )
        {
            return Ok((Expr::Cast(Box::new(e), ty), ty));
        }
        Ok((e, ty))
    }
}

/// 42883 for operator `op` of operands of these types.
fn no_operator(at: DataType, op: &str, bt: DataType) -> SqlError {
    let shown = |t: DataType| if t == DataType::Unknown { "unknown".into() } else { t.sql_name() };
    SqlError::new(
        code::UNDEFINED_FUNCTION,
        format!("operator does not exist: {} {op} {}", shown(at), shown(bt)),
    )
    .hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
}

impl Planner<'_> {
    /// The text search operators: `@@` (a tsvector, or text read by the session's
    /// configuration, matching a tsquery, or text a plain query's text), `||` of tsvectors
    /// (concatenation) or of tsqueries (OR), `&&` of tsqueries (AND), `<->` of tsqueries;
    /// `None` for operands of other types (`@@` and `<->` are always text search).
    pub(crate) fn text_search_operator(
        &mut self,
        op: &str,
        a: &Expr,
        at: DataType,
        b: &Expr,
        bt: DataType,
    ) -> Option<Result<(Expr, DataType)>> {
        use crate::expr::TsFunc as F;
        let ts = |t: DataType| matches!(t, DataType::TsVector | DataType::TsQuery);
        if !matches!(op, "@@" | "<->") && !ts(at) && !ts(bt) {
            return None;
        }
        Some((|| {
            let text = |t: DataType| t.is_string() || t == DataType::Unknown;
            let (func, args, ty) = match op {
                "@@" => match (at, bt) {
                    (DataType::TsVector, DataType::TsQuery | DataType::Unknown) => {
                        let (b, _) = self.coerce(b.clone(), bt, DataType::TsQuery)?;
                        (F::Match, vec![a.clone(), b], DataType::Bool)
                    }
                    (DataType::TsQuery | DataType::Unknown, DataType::TsVector) => {
                        let (a, _) = self.coerce(a.clone(), at, DataType::TsQuery)?;
                        (F::Match, vec![b.clone(), a], DataType::Bool)
                    }
                    (DataType::TsQuery, DataType::TsQuery) => {
                        return Err(no_operator(at, op, bt));
                    }
                    (x, DataType::TsQuery) if text(x) => {
                        let (a, _) = self.coerce(a.clone(), at, DataType::Text)?;
                        (F::MatchText, vec![a, b.clone()], DataType::Bool)
                    }
                    (x, y) if text(x) && text(y) => {
                        let (a, _) = self.coerce(a.clone(), at, DataType::Text)?;
                        let (b, _) = self.coerce(b.clone(), bt, DataType::Text)?;
                        let query = Expr::Func(Func::Ts(F::PlainToTsQuery), vec![b]);
                        (F::MatchText, vec![a, query], DataType::Bool)
                    }
                    _ => return Err(no_operator(at, op, bt)),
                },
                "||" | "&&" | "<->" => {
                    let want =
                        if op == "||" && (at == DataType::TsVector || bt == DataType::TsVector) {
                            DataType::TsVector
                        } else {
                            DataType::TsQuery
                        };
                    let (a, at2) = self.coerce(a.clone(), at, want)?;
                    let (b, bt2) = self.coerce(b.clone(), bt, want)?;
                    if at2 != want || bt2 != want || (op != "||" && want != DataType::TsQuery) {
                        return Err(no_operator(at, op, bt));
                    }
                    let func = match (op, want) {
                        ("||", DataType::TsVector) => F::Concat,
                        ("||", _) => F::QueryOr,
                        ("&&", _) => F::QueryAnd,
                        _ => F::QueryPhrase,
                    };
                    (func, vec![a, b], want)
                }
                _ => return Err(no_operator(at, op, bt)),
            };
            // Constant operands of an immutable operator: evaluated now, as PostgreSQL folds
            // them (text @@ reads the session's configuration: left to run time).
            if func == F::MatchText {
                return Ok((Expr::Func(Func::Ts(func), args), ty));
            }
            self.fold(Func::Ts(func), args, ty)
        })())
    }

    /// The network address operators (`<<`, `<<=`, `>>`, `>>=`, `&&`, `+`, `-`, `&`, `|`)
    /// when an operand is an inet or cidr (an untyped literal beside one is read as inet);
    /// `None` for operands of other types.
    pub(crate) fn network_operator(
        &mut self,
        op: &str,
        a: &Expr,
        at: DataType,
        b: &Expr,
        bt: DataType,
    ) -> Option<Result<(Expr, DataType)>> {
        let net = |t: DataType| matches!(t, DataType::Inet | DataType::Cidr);
        if !net(at) && !net(bt) {
            return None;
        }
        Some((|| {
            let address = |p: &mut Self, x: &Expr, t: DataType| -> Result<(Expr, DataType)> {
                p.coerce(x.clone(), t, DataType::Inet)
            };
            let integer = |p: &mut Self, x: &Expr, t: DataType| -> Result<(Expr, DataType)> {
                p.coerce(x.clone(), t, DataType::Int8)
            };
            let (func, args, ty) = match op {
                "<<" | "<<=" | ">>" | ">>=" | "&&" | "&" | "|" => {
                    let (x, xt) = address(self, a, at)?;
                    let (y, yt) = address(self, b, bt)?;
                    // (An untyped NULL stays untyped: the result is NULL.)
                    let fits = |t: DataType| net(t) || t == DataType::Unknown;
                    if !fits(xt) || !fits(yt) {
                        return Err(no_operator(at, op, bt));
                    }
                    let (func, ty) = match op {
                        "<<" => (NetFunc::Within(true), DataType::Bool),
                        "<<=" => (NetFunc::Within(false), DataType::Bool),
                        ">>" => (NetFunc::Contains(true), DataType::Bool),
                        ">>=" => (NetFunc::Contains(false), DataType::Bool),
                        "&&" => (NetFunc::Overlaps, DataType::Bool),
                        "&" => (NetFunc::And, DataType::Inet),
                        _ => (NetFunc::Or, DataType::Inet),
                    };
                    (func, vec![x, y], ty)
                }
                "+" if net(at) => {
                    let (y, yt) = integer(self, b, bt)?;
                    if !yt.is_integer() {
                        return Err(no_operator(at, op, bt));
                    }
                    (NetFunc::Add(true), vec![a.clone(), y], DataType::Inet)
                }
                "+" => {
                    let (x, xt) = integer(self, a, at)?;
                    if !xt.is_integer() {
                        return Err(no_operator(at, op, bt));
                    }
                    (NetFunc::Add(true), vec![b.clone(), x], DataType::Inet)
                }
                "-" if (net(at) || at == DataType::Unknown)
                    && (net(bt) || bt == DataType::Unknown) =>
                {
                    let (x, _) = address(self, a, at)?;
                    let (y, _) = address(self, b, bt)?;
                    (NetFunc::Difference, vec![x, y], DataType::Int8)
                }
                "-" if net(at) && bt.is_integer() => {
                    (NetFunc::Add(false), vec![a.clone(), b.clone()], DataType::Inet)
                }
                _ => return Err(no_operator(at, op, bt)),
            };
            let e = Expr::Func(Func::Net(func), args);
            // Constant operands: evaluated now, as PostgreSQL folds them.
            let e = match &e {
                Expr::Func(_, args) if args.iter().all(|x| matches!(x, Expr::Const(_))) => {
                    Expr::Const(e.eval(&[], &Ctx::new(&[], self.env))?)
                }
                _ => e,
            };
            Ok((e, ty))
        })())
    }

    /// `x` (a date or timestamp) as a timestamp with time zone in the session's zone.
    fn to_timestamptz(&self, x: Expr) -> Result<Expr> {
        Ok(match x {
            Expr::Const(v) => {
                Expr::Const(v.cast_in(DataType::TimestampTz(None), self.env.style())?)
            }
            x => Expr::Cast(Box::new(x), DataType::TimestampTz(None)),
        })
    }
}

/// Evaluates a logical node (AND, OR, NOT, IS [NOT] DISTINCT FROM, IS [NOT] NULL, a
/// comparison) whose operands are all constants, as PostgreSQL folds them while planning; returns any other
/// expression unchanged.
pub(crate) fn fold_constant_logic(e: Expr, env: &dyn crate::expr::Env) -> Result<Expr> {
    let foldable = matches!(
        e,
        Expr::And(..)
            | Expr::Or(..)
            | Expr::Not(_)
            | Expr::IsDistinct(..)
            | Expr::IsNull(..)
            | Expr::Binary(
                BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq,
                ..
            )
    );
    if !foldable {
        return Ok(e);
    }
    let mut all_constant = true;
    e.for_each_child(&mut |c| all_constant &= matches!(c, Expr::Const(_)));
    if !all_constant {
        return Ok(e);
    }
    Ok(Expr::Const(e.eval(&[], &crate::expr::Ctx::new(&[], env))?))
}

/// The type modifier of `INTERVAL '…' <fields>`: a leading field, optionally `TO` a last one.
fn interval_qualifier(iv: &ast::Interval) -> Result<Option<u32>> {
    use crate::interval::{DAY, HOUR, MINUTE, MONTH, SECOND, YEAR};
    use ast::DateTimeField as F;
    let mask = |f: &F| -> Result<u32> {
        Ok(match f {
            F::Year | F::Years => YEAR,
            F::Month | F::Months => MONTH,
            F::Day | F::Days => DAY,
            F::Hour | F::Hours => HOUR,
            F::Minute | F::Minutes => MINUTE,
            F::Second | F::Seconds => SECOND,
            other => {
                return Err(SqlError::new(
                    code::SYNTAX,
                    format!("syntax error at or near \"{other}\""),
                ))
            }
        })
    };
    let Some(lead) = &iv.leading_field else {
        return crate::bind::interval_typmod(None, iv.fractional_seconds_precision);
    };
    // `SECOND(p)` alone: its precision.
    if iv.last_field.is_none() && mask(lead)? == SECOND {
        let precision = iv.fractional_seconds_precision.or(iv.leading_precision);
        return crate::bind::interval_typmod(Some(SECOND), precision);
    }
    let first = mask(lead)?;
    let range = match &iv.last_field {
        None => first,
        Some(last) => {
            let last = mask(last)?;
            // Every field from the first to the last, as PostgreSQL allows them.
            let allowed = [
                (YEAR, MONTH),
                (DAY, HOUR),
                (DAY, MINUTE),
                (DAY, SECOND),
                (HOUR, MINUTE),
                (HOUR, SECOND),
                (MINUTE, SECOND),
            ];
            if !allowed.contains(&(first, last)) {
                return Err(SqlError::new(
                    code::SYNTAX,
                    format!("syntax error in interval qualifier {lead} TO {last}"),
                ));
            }
            let order = [YEAR, MONTH, DAY, HOUR, MINUTE, SECOND];
            let (a, b) =
                (order.iter().position(|m| *m == first), order.iter().position(|m| *m == last));
            match (a, b) {
                (Some(a), Some(b)) => order[a..=b].iter().fold(0, |acc, m| acc | m),
                _ => first | last,
            }
        }
    };
    crate::bind::interval_typmod(Some(range), iv.fractional_seconds_precision)
}

/// The operand and result types of arithmetic on dates, times, timestamps and intervals,
/// PostgreSQL's operators (`timestamp - timestamp` is an interval, `date + interval` a
/// timestamp …); `None` when neither operand is one of those types, or the operator is not
/// arithmetic. An untyped operand takes the type PostgreSQL would pick for it: the other
/// operand's own type when that type has the operator with itself, else an interval (or a
/// double as an interval's factor).
fn datetime_operator(
    op: BinOp,
    a: DataType,
    b: DataType,
) -> Option<Result<(DataType, DataType, DataType)>> {
    use DataType::{Date, Float8, Int4, Time, Timestamp, TimestampTz, Unknown};
    const IV: DataType = DataType::Interval(None);
    let iv = |t: DataType| matches!(t, DataType::Interval(_));
    let temporal =
        |t: DataType| matches!(t, Date | Time(_) | Timestamp(_) | TimestampTz(_)) || iv(t);
    if !matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div)
        || !(temporal(a) || temporal(b))
    {
        return None;
    }
    let no_operator = || {
        Some(Err(SqlError::new(
            code::UNDEFINED_FUNCTION,
            format!(
                "operator does not exist: {} {} {}",
                a.sql_name(),
                crate::expr::op_name(op),
                b.sql_name()
            ),
        )
        .hint("No operator matches the given name and argument types. You might need to add explicit type casts.")))
    };
    let ok = |l: DataType, r: DataType, res: DataType| Some(Ok((l, r, res)));
    let number = |t: DataType| t.is_numeric() || t == Unknown;
    match op {
        BinOp::Add => match (a, b) {
            (Date, t) if t.is_integer() => ok(Date, Int4, Date),
            (t, Date) if t.is_integer() => ok(Int4, Date, Date),
            (Date, Unknown) | (Unknown, Date) => Some(Err(SqlError::new(
                "42725",
                format!("operator is not unique: {} + {}", if a == Date { "date" } else { "unknown" }, if b == Date { "date" } else { "unknown" }),
            )
            .hint("Could not choose a best candidate operator. You might need to add explicit type casts."))),
            (Date, t) if iv(t) => ok(Date, IV, Timestamp(None)),
            (t, Date) if iv(t) => ok(IV, Date, Timestamp(None)),
            (Date, Time(_)) => ok(Date, Time(None), Timestamp(None)),
            (Time(_), Date) => ok(Time(None), Date, Timestamp(None)),
            (Timestamp(_) | TimestampTz(_) | Time(_), t) if iv(t) || t == Unknown => {
                ok(a.unmodified(), IV, a.unmodified())
            }
            (t, Timestamp(_) | TimestampTz(_) | Time(_)) if iv(t) || t == Unknown => {
                ok(IV, b.unmodified(), b.unmodified())
            }
            (x, y) if (iv(x) || x == Unknown) && (iv(y) || y == Unknown) => ok(IV, IV, IV),
            _ => no_operator(),
        },
        BinOp::Sub => match (a, b) {
            (Date, t) if t.is_integer() => ok(Date, Int4, Date),
            (Date, Date | Unknown) | (Unknown, Date) => ok(Date, Date, Int4),
            (Date, t) if iv(t) => ok(Date, IV, Timestamp(None)),
            (Time(_), Time(_) | Unknown) | (Unknown, Time(_)) => ok(Time(None), Time(None), IV),
            (Time(_), t) if iv(t) => ok(Time(None), IV, Time(None)),
            (Timestamp(_) | TimestampTz(_), t) if iv(t) => ok(a.unmodified(), IV, a.unmodified()),
            (Timestamp(_) | TimestampTz(_) | Date, Timestamp(_) | TimestampTz(_) | Date | Unknown)
            | (Unknown, Timestamp(_) | TimestampTz(_)) => {
                let common = match (a, b) {
                    (TimestampTz(_), _) | (_, TimestampTz(_)) => TimestampTz(None),
                    _ => Timestamp(None),
                };
                ok(common, common, IV)
            }
            (x, y) if (iv(x) || x == Unknown) && (iv(y) || y == Unknown) => ok(IV, IV, IV),
            _ => no_operator(),
        },
        BinOp::Mul => match (a, b) {
            (x, y) if iv(x) && number(y) => ok(IV, Float8, IV),
            (x, y) if number(x) && iv(y) => ok(Float8, IV, IV),
            _ => no_operator(),
        },
        _ => match (a, b) {
            (x, y) if iv(x) && number(y) => ok(IV, Float8, IV),
            _ => no_operator(),
        },
    }
}

/// The items of a row constructor: `(a, b)` or `ROW(a, …)`.
pub(crate) fn row_items(e: &ast::Expr) -> Option<Vec<&ast::Expr>> {
    match e {
        ast::Expr::Tuple(items) => Some(items.iter().collect()),
        ast::Expr::Function(f)
            if f.name.0.len() == 1
                && f.name.0[0].as_ident().is_some_and(|i| {
                    i.quote_style.is_none() && i.value.eq_ignore_ascii_case("row")
                }) =>
        {
            let ast::FunctionArguments::List(list) = &f.args else { return None };
            // Only plain positional items make a row constructor.
            if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
                return None;
            }
            list.args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
                    _ => None,
                })
                .collect()
        }
        _ => None,
    }
}

/// Where a literal (possibly in parentheses) starts in the statement, for an error about it.
fn literal_location(e: &ast::Expr) -> Option<(u32, u32)> {
    match e {
        ast::Expr::Value(v) => crate::bind::span_location(v.span),
        ast::Expr::Nested(inner) => literal_location(inner),
        _ => None,
    }
}

/// The parser's form of built-in binary operator `name` (`None`: one it reads only as a
/// custom operator, such as `~~`).
fn builtin_operator(name: &str) -> Option<ast::BinaryOperator> {
    use ast::BinaryOperator as O;
    Some(match name {
        "+" => O::Plus,
        "-" => O::Minus,
        "*" => O::Multiply,
        "/" => O::Divide,
        "%" => O::Modulo,
        "^" => O::PGExp,
        "||" => O::StringConcat,
        "=" => O::Eq,
        "<>" | "!=" => O::NotEq,
        "<" => O::Lt,
        "<=" => O::LtEq,
        ">" => O::Gt,
        ">=" => O::GtEq,
        "&" => O::BitwiseAnd,
        "|" => O::BitwiseOr,
        "#" => O::PGBitwiseXor,
        "<<" => O::PGBitwiseShiftLeft,
        ">>" => O::PGBitwiseShiftRight,
        "~" => O::PGRegexMatch,
        "~*" => O::PGRegexIMatch,
        "!~" => O::PGRegexNotMatch,
        "!~*" => O::PGRegexNotIMatch,
        "&&" => O::PGOverlap,
        "^@" => O::PGStartsWith,
        "->" => O::Arrow,
        "->>" => O::LongArrow,
        "#>" => O::HashArrow,
        "#>>" => O::HashLongArrow,
        "#-" => O::HashMinus,
        "@>" => O::AtArrow,
        "<@" => O::ArrowAt,
        "?" => O::Question,
        "?&" => O::QuestionAnd,
        "?|" => O::QuestionPipe,
        "@@" => O::AtAt,
        "<->" => O::LtDashGt,
        _ => return None,
    })
}
