//! Binding function calls: the function table, arity and argument types, constant folding.

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::*;
use crate::error::{code, Result, SqlError};
use crate::expr::*;
use crate::functions::Arg;
use crate::types::{DataType, Value};

/// 42883 unless a call of `name` has between `lo` and `hi` arguments.
pub(crate) fn check_arity(name: &str, given: usize, lo: usize, hi: usize) -> Result<()> {
    if (lo..=hi).contains(&given) {
        return Ok(());
    }
    Err(SqlError::new(
        code::UNDEFINED_FUNCTION,
        format!("function {name} with {given} arguments does not exist"),
    )
    .hint("No function matches the given name and argument types."))
}

impl<'a> Planner<'a> {
    /// `make_interval(years, months, weeks, days, hours, mins, secs)`, each argument
    /// positional or named (`make_interval(days => 10)`), missing ones zero.
    fn make_interval(
        &mut self,
        list: &ast::FunctionArgumentList,
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        const NAMES: [&str; 7] = ["years", "months", "weeks", "days", "hours", "mins", "secs"];
        let mut given: [Option<&ast::Expr>; 7] = [None; 7];
        let mut named = false;
        let bad = |why: String| {
            SqlError::new(code::UNDEFINED_FUNCTION, why)
                .hint("make_interval takes years, months, weeks, days, hours, mins and secs.")
        };
        for (i, a) in list.args.iter().enumerate() {
            let (slot, x) = match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) if !named => (i, x),
                ast::FunctionArg::Named { name, arg: ast::FunctionArgExpr::Expr(x), .. }
                | ast::FunctionArg::ExprNamed {
                    name: ast::Expr::Identifier(name),
                    arg: ast::FunctionArgExpr::Expr(x),
                    ..
                } => {
                    named = true;
                    let n = name.value.to_lowercase();
                    let slot = NAMES.iter().position(|k| *k == n).ok_or_else(|| {
                        bad(format!("function make_interval({n} => …) does not exist"))
                    })?;
                    (slot, x)
                }
                _ => {
                    return Err(bad(
                        "positional arguments of make_interval come before named ones".into()
                    ))
                }
            };
            if slot >= NAMES.len() || given[slot].is_some() {
                return Err(bad(format!(
                    "function make_interval with {} arguments does not exist",
                    list.args.len()
                )));
            }
            given[slot] = Some(x);
        }
        let mut args = Vec::with_capacity(7);
        for (i, g) in given.iter().enumerate() {
            let want = if i == 6 { DataType::Float8 } else { DataType::Int4 };
            let (x, t) = match g {
                Some(x) => self.expr(x, scope, aggs)?,
                None if i == 6 => (Expr::Const(Value::Float(0.0)), DataType::Float8),
                None => (Expr::Const(Value::Int(0)), DataType::Int4),
            };
            let ok =
                if i == 6 { t.is_numeric() } else { matches!(t, DataType::Int2 | DataType::Int4) };
            if !ok && t != DataType::Unknown {
                return Err(bad(format!(
                    "function make_interval(…, {} …) does not exist",
                    t.sql_name()
                )));
            }
            let (x, t) = self.coerce(x, t, want)?;
            args.push(if t != want { Expr::Cast(Box::new(x), want) } else { x });
        }
        let ty = DataType::Interval(None);
        if args.iter().all(|a| matches!(a, Expr::Const(_))) {
            let ctx = crate::expr::Ctx::new(&[], self.env);
            return Ok((Expr::Const(Expr::Func(Func::MakeInterval, args).eval(&[], &ctx)?), ty));
        }
        Ok((Expr::Func(Func::MakeInterval, args), ty))
    }

    /// EXTRACT / date_part / date_trunc over `source` of type `st`: a date or a timestamp
    /// (an untyped literal is ambiguous, 42725, as in PostgreSQL).
    pub(crate) fn datetime_call(
        &mut self,
        name: &str,
        func: Func,
        unit: Expr,
        source: Expr,
        st: DataType,
    ) -> Result<(Expr, DataType)> {
        let out = match st {
            DataType::Unknown => {
                return Err(SqlError::new(
                    "42725",
                    format!("function {name}(unknown, unknown) is not unique"),
                )
                .hint("Could not choose a best candidate function. You might need to add explicit type casts."))
            }
            DataType::Time(_) if func != Func::DateTrunc => match func {
                Func::Extract => DataType::Numeric(None),
                _ => DataType::Float8,
            },
            DataType::Interval(_) => match func {
                Func::Extract => DataType::Numeric(None),
                Func::DatePart => DataType::Float8,
                _ => DataType::Interval(None),
            },
            DataType::Date | DataType::Timestamp(_) | DataType::TimestampTz(_) => match func {
                Func::Extract => DataType::Numeric(None),
                Func::DatePart => DataType::Float8,
                _ if st == DataType::Date => DataType::TimestampTz(None),
                _ => st,
            },
            other => {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name}(text, {}) does not exist", other.sql_name()),
                ))
            }
        };
        Ok((Expr::Func(func, vec![unit, source]), out))
    }

    /// `ts AT TIME ZONE zone` / `timezone(zone, ts)`: a timestamp with time zone (or a date,
    /// or an untyped literal, read as one) becomes the local time in `zone`; a timestamp
    /// without one becomes the instant of that local time there. The zone is text (a tz
    /// database name, an abbreviation, a POSIX offset) or an interval east of UTC.
    pub(crate) fn at_time_zone(
        &mut self,
        zone: Expr,
        zt: DataType,
        x: Expr,
        t: DataType,
    ) -> Result<(Expr, DataType)> {
        let no_function = |zt: DataType, t: DataType| {
            let name = |t: DataType| {
                if t == DataType::Unknown {
                    "unknown".to_string()
                } else {
                    t.sql_name()
                }
            };
            SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function timezone({}, {}) does not exist", name(zt), name(t)),
            )
            .hint("No function matches the given name and argument types. You might need to add explicit type casts.")
        };
        let zone = match zt {
            DataType::Text | DataType::Varchar(_) | DataType::Char(_) | DataType::Interval(_) => {
                zone
            }
            DataType::Unknown => self.coerce(zone, zt, DataType::Text)?.0,
            other => return Err(no_function(other, t)),
        };
        let (x, to) = match t {
            DataType::TimestampTz(_) => (x, DataType::Timestamp(None)),
            DataType::Timestamp(_) => (x, DataType::TimestampTz(None)),
            DataType::Unknown => {
                (self.coerce(x, t, DataType::TimestampTz(None))?.0, DataType::Timestamp(None))
            }
            DataType::Date => {
                (Expr::Cast(Box::new(x), DataType::TimestampTz(None)), DataType::Timestamp(None))
            }
            other => return Err(no_function(zt, other)),
        };
        self.fold(Func::Timezone, vec![zone, x], to)
    }

    /// A call of an immutable function, evaluated now when every argument is a constant
    /// (its error fails the statement at planning, except in a CASE arm PostgreSQL drops).
    pub(crate) fn fold(
        &mut self,
        func: Func,
        args: Vec<Expr>,
        ty: DataType,
    ) -> Result<(Expr, DataType)> {
        if args.iter().all(|a| matches!(a, Expr::Const(_))) {
            let ctx = crate::expr::Ctx::new(&[], self.env);
            match Expr::Func(func, args.clone()).eval(&[], &ctx) {
                Ok(v) => return Ok((Expr::Const(v), ty)),
                Err(e) if !self.dead_arm => return Err(e),
                Err(_) => {}
            }
        }
        Ok((Expr::Func(func, args), ty))
    }

    /// An aggregate's argument (or FILTER condition, or sort key): no aggregate in it,
    /// unless the aggregate is a window call's, whose argument may use the query's own
    /// aggregates (`sum(count(*)) OVER ()`); the aggregates inside it may not nest again.
    pub(crate) fn agg_arg(&mut self, e: &ast::Expr, scope: &Scope) -> Result<(Expr, DataType)> {
        let window = std::mem::take(&mut self.window_aggregate);
        let bound = self.expr(e, scope, window);
        self.window_aggregate = window;
        bound.map_err(|e| {
            if e.code == code::GROUPING && e.message == "aggregate functions are not allowed here" {
                SqlError::new(code::GROUPING, "aggregate function calls cannot be nested")
            } else {
                e
            }
        })
    }

    /// An ordered aggregate call's ORDER BY keys, bound and pushed after its arguments in
    /// `packed` (`[argument…, key…]`, which its accumulator sorts by the keys): each key's
    /// (descending, nulls first). With DISTINCT, which compares the arguments, a key must be
    /// one of them — sorting by anything else would keep duplicates (PostgreSQL refuses it
    /// too).
    pub(crate) fn sort_keys(
        &mut self,
        order_by: &[ast::OrderByExpr],
        distinct: bool,
        packed: &mut Vec<Expr>,
        scope: &Scope,
    ) -> Result<Vec<(bool, bool)>> {
        let args = packed.len();
        let mut order = Vec::with_capacity(order_by.len());
        for o in order_by {
            let key = self.agg_arg(&o.expr, scope)?.0;
            if distinct && !packed[..args].contains(&key) {
                return Err(SqlError::new(
                    code::INVALID_COLUMN_REFERENCE,
                    "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
                ));
            }
            packed.push(key);
            let desc = crate::bind::sorts_descending(&o.options)?;
            order.push((desc, o.options.nulls_first.unwrap_or(desc)));
        }
        Ok(order)
    }

    /// An aggregate's input under `FILTER (WHERE cond)`: NULL (skipped) where cond is not
    /// true.
    pub(crate) fn filtered(&mut self, f: &ast::Function, x: Expr, scope: &Scope) -> Result<Expr> {
        Ok(match &f.filter {
            Some(cond) => {
                let (c, cty) = self.agg_arg(cond, scope)?;
                let (c, _) = self.coerce(c, cty, DataType::Bool)?;
                Expr::Case { operand: None, whens: vec![(c, x)], otherwise: None }
            }
            None => x,
        })
    }

    /// corr(y, x), covar_pop / covar_samp and the regr_* family: (y, x) pairs as doubles,
    /// rows with either NULL skipped.
    #[allow(clippy::too_many_arguments)]
    fn regression_aggregate(
        &mut self,
        f: &ast::Function,
        name: &str,
        kind: crate::expr::Regression,
        args: &[ast::Expr],
        distinct: bool,
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        if !aggs {
            return Err(SqlError::new(code::GROUPING, "aggregate functions are not allowed here"));
        }
        if distinct {
            return Err(SqlError::unsupported(format!("{name}(DISTINCT …)")));
        }
        let mut pair = Vec::with_capacity(2);
        let mut types = Vec::with_capacity(2);
        for a in args {
            let (x, t) = self.agg_arg(a, scope)?;
            let (x, t) = self.coerce(x, t, DataType::Float8)?;
            types.push(t);
            pair.push(if t == DataType::Float8 {
                x
            } else {
                Expr::Cast(Box::new(x), DataType::Float8)
            });
        }
        if pair.len() != 2 || types.iter().any(|t| !t.is_numeric()) {
            let shown: Vec<String> = types.iter().map(|t| t.sql_name()).collect();
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", shown.join(", ")),
            )
            .hint("No function matches the given name and argument types. You might need to add explicit type casts."));
        }
        let packed = Expr::Func(Func::MakeArray, pair);
        let packed = self.filtered(f, packed, scope)?;
        let out =
            if kind == crate::expr::Regression::Count { DataType::Int8 } else { DataType::Float8 };
        Ok((Expr::Agg(AggFunc::Regression(kind), false, Some(Box::new(packed)), out), out))
    }

    /// `percentile_cont(f) | percentile_disc(f) | mode() WITHIN GROUP (ORDER BY x)`: the
    /// fractions are constants (one, or an array of them); the values are collected, sorted
    /// and read at the end.
    fn ordered_set_aggregate(
        &mut self,
        f: &ast::Function,
        name: &str,
        args: &[ast::Expr],
        distinct: bool,
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        use crate::expr::OrderedSet;
        let missing = |what: &str| {
            SqlError::new(code::UNDEFINED_FUNCTION, format!("function {name}({what}) does not exist"))
                .hint("No function matches the given name and argument types. You might need to add explicit type casts.")
        };
        if f.within_group.is_empty() {
            // Without WITHIN GROUP there is no such function (PostgreSQL's answer too).
            let mut types = Vec::with_capacity(args.len());
            for a in args {
                let t = self.expr(a, scope, aggs)?.1;
                types.push(if t == DataType::Unknown { "unknown".into() } else { t.sql_name() });
            }
            return Err(missing(&types.join(", ")));
        }
        if f.over.is_some() {
            return Err(SqlError::unsupported(format!(
                "OVER for the ordered-set aggregate {name} (PostgreSQL has none either)"
            )));
        }
        if distinct {
            return Err(SqlError::syntax("cannot use DISTINCT with WITHIN GROUP"));
        }
        if !aggs {
            return Err(SqlError::new(code::GROUPING, "aggregate functions are not allowed here"));
        }
        let [order] = f.within_group.as_slice() else {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {name} with {} sort keys does not exist", f.within_group.len()),
            ));
        };
        let desc = crate::bind::sorts_descending(&order.options)?;
        let nulls_first = order.options.nulls_first.unwrap_or(desc);
        let (x, ty) = self.agg_arg(&order.expr, scope)?;
        let ty = if ty == DataType::Unknown { DataType::Text } else { ty };
        let (kind, x, out) = if name == "mode" {
            if !args.is_empty() {
                return Err(missing("with direct arguments"));
            }
            (OrderedSet::Mode, x, ty)
        } else {
            let [fraction] = args else {
                return Err(missing("with other than one direct argument"));
            };
            let (fx, fty) = self.expr(fraction, scope, false)?;
            // The fractions, when the expression is constant: literals, casts of them,
            // arrays of them.
            fn constant(e: &Expr) -> Option<Value> {
                match e {
                    Expr::Const(v) => Some(v.clone()),
                    Expr::Cast(inner, ty) => constant(inner)?.cast(*ty).ok(),
                    Expr::Func(Func::MakeArray, items) => {
                        items.iter().map(constant).collect::<Option<Vec<_>>>().map(Value::Array)
                    }
                    _ => None,
                }
            }
            let number = |v: &Value| -> Result<Option<u64>> {
                let f = match v {
                    Value::Null => return Ok(None),
                    Value::Int(i) => *i as f64,
                    Value::Float(f) => *f,
                    Value::Numeric(d) => d.to_f64().unwrap_or(f64::NAN),
                    Value::Text(t) => t.trim().parse().map_err(|_| missing("text"))?,
                    other => return Err(missing(&other.natural_type().sql_name())),
                };
                if !(0.0..=1.0).contains(&f) {
                    return Err(SqlError::new(
                        code::NUMERIC_OUT_OF_RANGE,
                        format!("percentile value {f} is not between 0 and 1"),
                    ));
                }
                Ok(Some(f.to_bits()))
            };
            let (fractions, array) = match constant(&fx) {
                Some(Value::Array(items)) => {
                    (items.iter().map(number).collect::<Result<Vec<_>>>()?, true)
                }
                Some(v) => (vec![number(&v)?], false),
                None => {
                    return Err(SqlError::unsupported(format!(
                        "a {name} fraction that is not a constant"
                    )))
                }
            };
            let continuous = name == "percentile_cont";
            let (x, elem) = if !continuous {
                (x, ty)
            } else if matches!(ty, DataType::Interval(_)) {
                (x, DataType::Interval(None))
            } else if ty.is_numeric() {
                (Expr::Cast(Box::new(x), DataType::Float8), DataType::Float8)
            } else {
                let shown =
                    if fty == DataType::Unknown { "unknown".into() } else { fty.sql_name() };
                return Err(missing(&format!("{shown}, {}", ty.sql_name())));
            };
            let out = if array { crate::array::array_of(elem)? } else { elem };
            (OrderedSet::Percentile { continuous, fractions, array }, x, out)
        };
        let packed = Expr::Func(Func::MakeArray, vec![x]);
        let packed = self.filtered(f, packed, scope)?;
        Ok((
            Expr::Agg(
                AggFunc::OrderedSet(kind, (desc, nulls_first)),
                false,
                Some(Box::new(packed)),
                out,
            ),
            out,
        ))
    }

    pub(crate) fn function(
        &mut self,
        f: &ast::Function,
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        let name = crate::bind::srf::function_name(&crate::bind::name_as_written(&f.name)?);
        // Only this call may be set-returning, not the calls in its arguments.
        let set_item = std::mem::take(&mut self.set_item);
        let mut order_by: &[ast::OrderByExpr] = &[];
        // Arguments in named notation (`name => value`), which only functions made with
        // CREATE FUNCTION take here.
        let mut named: Vec<(String, ast::Expr)> = Vec::new();
        let (args, distinct, star) = match &f.args {
            ast::FunctionArguments::None => (vec![], false, false),
            ast::FunctionArguments::List(list) if name == "make_interval" => {
                return self.make_interval(list, scope, aggs);
            }
            ast::FunctionArguments::List(list) => {
                let distinct =
                    matches!(list.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct));
                for clause in &list.clauses {
                    match clause {
                        ast::FunctionArgumentClause::OrderBy(o) => order_by = o,
                        other => {
                            return Err(SqlError::unsupported(format!(
                                "the function argument clause {other}"
                            )))
                        }
                    }
                }
                let mut star = false;
                let mut args = Vec::new();
                for a in &list.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                        a => crate::exec::routines::push_argument(a, &mut args, &mut named)?,
                    }
                }
                (args, distinct, star)
            }
            ast::FunctionArguments::Subquery(q) => {
                if name != "array" {
                    return Err(SqlError::unsupported(format!("{name}(subquery)")));
                }
                let (plan, refs, outer) = self.plan_subquery(q, scope)?;
                if plan.columns.len() != 1 {
                    return Err(SqlError::syntax("subquery must return only one column"));
                }
                let elem = match plan.columns[0].1 {
                    DataType::Unknown => DataType::Text,
                    t => t,
                };
                let ty = crate::array::array_of(elem)?;
                return Ok((
                    Expr::Subquery(SubPlan(Arc::new(plan), outer), SubqueryKind::Array, refs),
                    ty,
                ));
            }
        };
        if !named.is_empty() {
            // Only a function made with CREATE FUNCTION has arguments named here.
            self.set_item = set_item;
            let bound = match self.routine_call(&name, &args, &named, scope, aggs) {
                Ok(Some(bound)) => Ok(bound),
                Ok(None) => {
                    Err(crate::exec::routines::no_call(self, "function", &name, &args, &named)?)
                }
                Err(e) => Err(e),
            };
            return bound.map_err(|e| crate::exec::routines::at_call(f, e));
        }
        if f.over.is_some() {
            if !aggs && !self.windows_here {
                return Err(SqlError::new("42P20", "window functions are not allowed here"));
            }
            return self.window_call(f, &name, &args, scope);
        }
        if matches!(
            name.as_str(),
            "row_to_json" | "to_json" | "to_jsonb" | "json_agg" | "jsonb_agg"
        ) {
            if let Some(bound) =
                self.row_json_call(f, &name, &args, distinct, order_by, scope, aggs)?
            {
                return Ok(bound);
            }
        }
        if let (Some(kind), None) = (crate::expr::Regression::of(&name), &f.over) {
            return self.regression_aggregate(f, &name, kind, &args, distinct, scope, aggs);
        }
        if matches!(name.as_str(), "percentile_cont" | "percentile_disc" | "mode") {
            return self.ordered_set_aggregate(f, &name, &args, distinct, scope, aggs);
        }
        if !f.within_group.is_empty() {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("{name} is not an ordered-set aggregate, so it cannot have WITHIN GROUP"),
            ));
        }
        if matches!(name.as_str(), "json_object_agg" | "jsonb_object_agg") {
            return self.json_object_agg(f, &name, &args, distinct, order_by, scope, aggs);
        }
        let agg = match name.as_str() {
            "count" => Some(AggFunc::Count),
            "sum" => Some(AggFunc::Sum),
            "min" => Some(AggFunc::Min),
            "max" => Some(AggFunc::Max),
            "avg" => Some(AggFunc::Avg),
            "string_agg" => {
                let sep = match args.get(1) {
                    Some(ast::Expr::Value(v)) => match &v.value {
                        ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => {
                            s.clone()
                        }
                        _ => {
                            return Err(SqlError::unsupported(
                                "string_agg with a non-text separator",
                            ))
                        }
                    },
                    _ => {
                        return Err(SqlError::unsupported(
                            "string_agg without a constant separator",
                        ))
                    }
                };
                Some(AggFunc::StringAgg(sep, vec![]))
            }
            // json_agg collects as array_agg does; its result is then written as JSON.
            "array_agg" | "json_agg" | "jsonb_agg" => Some(AggFunc::ArrayAgg(vec![])),
            "bool_and" | "every" => Some(AggFunc::BoolAnd),
            "bool_or" => Some(AggFunc::BoolOr),
            "bit_and" => Some(AggFunc::Bits(crate::expr::BitOp::And)),
            "bit_or" => Some(AggFunc::Bits(crate::expr::BitOp::Or)),
            "bit_xor" => Some(AggFunc::Bits(crate::expr::BitOp::Xor)),
            "variance" | "var_samp" => Some(AggFunc::Variance { sample: true, root: false }),
            "var_pop" => Some(AggFunc::Variance { sample: false, root: false }),
            "stddev" | "stddev_samp" => Some(AggFunc::Variance { sample: true, root: true }),
            "stddev_pop" => Some(AggFunc::Variance { sample: false, root: true }),
            _ => None,
        };
        // ORDER BY or FILTER: an aggregate made with CREATE AGGREGATE, or an error.
        if agg.is_none() && (!order_by.is_empty() || f.filter.is_some()) {
            if let Some(bound) = self
                .user_aggregate(f, &name, &args, distinct, star, order_by, scope, aggs)
                .map_err(|e| crate::exec::routines::at_call(f, e))?
            {
                return Ok(bound);
            }
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("ORDER BY or FILTER specified, but {name} is not an aggregate function"),
            ));
        }
        if let Some(agg) = agg {
            if !aggs {
                return Err(SqlError::new(
                    code::GROUPING,
                    "aggregate functions are not allowed here",
                ));
            }
            if star {
                if agg != AggFunc::Count {
                    return Err(SqlError::syntax(format!("{name}(*) is not valid")));
                }
                // count(*) FILTER (WHERE c) counts the rows where c is true.
                let arg = match f.filter {
                    Some(_) => {
                        Some(Box::new(self.filtered(f, Expr::Const(Value::Bool(true)), scope)?))
                    }
                    None => None,
                };
                return Ok((Expr::Agg(AggFunc::Count, false, arg, DataType::Int8), DataType::Int8));
            }
            let args = if matches!(agg, AggFunc::StringAgg(..)) { &args[..1] } else { &args[..] };
            let [arg] = args else {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name} takes exactly one argument"),
                ));
            };
            let (x, ty) = self.agg_arg(arg, scope)?;
            let out = aggregate_type(&name, &agg, ty)?;
            let x = match agg {
                AggFunc::BoolAnd | AggFunc::BoolOr => self.coerce(x, ty, DataType::Bool)?.0,
                AggFunc::Bits(_) => self.coerce(x, ty, out)?.0,
                _ => x,
            };
            // Ordered aggregates see each value packed with its sort keys: [value, key…].
            let (agg, x) = match agg {
                AggFunc::StringAgg(..) | AggFunc::ArrayAgg(..) => {
                    let mut packed = vec![x];
                    let order = self.sort_keys(order_by, distinct, &mut packed, scope)?;
                    let agg = match agg {
                        AggFunc::StringAgg(sep, _) => AggFunc::StringAgg(sep, order),
                        _ => AggFunc::ArrayAgg(order),
                    };
                    (agg, Expr::Func(Func::MakeArray, packed))
                }
                agg => {
                    if !order_by.is_empty() {
                        // The order of the input does not change these results.
                        for o in order_by {
                            self.agg_arg(&o.expr, scope)?;
                        }
                    }
                    (agg, x)
                }
            };
            let x = self.filtered(f, x, scope)?;
            let agg = Expr::Agg(agg, distinct, Some(Box::new(x)), out);
            if let Some(jsonb) = match name.as_str() {
                "json_agg" => Some(false),
                "jsonb_agg" => Some(true),
                _ => None,
            } {
                let elem = out.element().unwrap_or(DataType::Text);
                let ty = if jsonb { DataType::Jsonb } else { DataType::Json };
                return Ok((Expr::Func(Func::JsonAgg(elem, jsonb), vec![agg]), ty));
            }
            return Ok((agg, out));
        }
        let seq_func = match name.as_str() {
            "nextval" => Some(SeqFunc::NextVal),
            "currval" => Some(SeqFunc::CurrVal),
            "setval" => Some(SeqFunc::SetVal),
            _ => None,
        };
        if let Some(func) = seq_func {
            return self.sequence_call(func, &args, scope);
        }
        if name == "current_setting" {
            return self.current_setting(&args, scope);
        }
        if let Some(bound) = self.json_function(&name, &args, scope, aggs)? {
            return Ok(bound);
        }
        if name == "timezone" {
            check_arity(&name, args.len(), 2, 2)?;
            let (zone, zt) = self.expr(&args[0], scope, aggs)?;
            let (x, t) = self.expr(&args[1], scope, aggs)?;
            return self.at_time_zone(zone, zt, x, t);
        }
        if name == "date_trunc" && args.len() == 3 {
            // date_trunc(unit, timestamptz, zone): cut down in that zone.
            let (unit, ut) = self.expr(&args[0], scope, aggs)?;
            let (unit, _) = self.coerce(unit, ut, DataType::Text)?;
            let (source, st) = self.expr(&args[1], scope, aggs)?;
            let (source, st) = self.coerce(source, st, DataType::TimestampTz(None))?;
            let source = match st {
                DataType::TimestampTz(_) => source,
                DataType::Date | DataType::Timestamp(_) => {
                    Expr::Cast(Box::new(source), DataType::TimestampTz(None))
                }
                other => {
                    return Err(SqlError::new(
                        code::UNDEFINED_FUNCTION,
                        format!(
                            "function date_trunc(text, {}, text) does not exist",
                            other.sql_name()
                        ),
                    ))
                }
            };
            let (zone, zt) = self.expr(&args[2], scope, aggs)?;
            let (zone, _) = self.coerce(zone, zt, DataType::Text)?;
            let args = vec![unit, source, zone];
            return Ok((Expr::Func(Func::DateTrunc, args), DataType::TimestampTz(None)));
        }
        if name == "grouping" {
            // Replaced by its bits once the query's grouping is known (`post_agg`).
            if args.is_empty() {
                return Err(SqlError::syntax("GROUPING needs at least one argument"));
            }
            if args.len() > 31 {
                return Err(SqlError::new(
                    code::TOO_MANY_ARGUMENTS,
                    "GROUPING must have fewer than 32 arguments",
                ));
            }
            let mut bound = Vec::with_capacity(args.len());
            for a in &args {
                bound.push(self.expr(a, scope, false)?.0);
            }
            return Ok((Expr::Func(Func::Grouping, bound), DataType::Int4));
        }
        if name == "date_bin" {
            return self.date_bin(&args, scope, aggs);
        }
        if name == "date_part" || name == "date_trunc" {
            check_arity(&name, args.len(), 2, 2)?;
            let (unit, ut) = self.expr(&args[0], scope, aggs)?;
            let (unit, _) = self.coerce(unit, ut, DataType::Text)?;
            let (source, st) = self.expr(&args[1], scope, aggs)?;
            let func = if name == "date_part" { Func::DatePart } else { Func::DateTrunc };
            return self.datetime_call(&name, func, unit, source, st);
        }
        if name == "pg_typeof" {
            // The argument's type, known when binding (shown by name, as regtype is).
            check_arity("pg_typeof", args.len(), 1, 1)?;
            let (x, ty) = self.expr(&args[0], scope, aggs)?;
            let shown =
                if ty == DataType::Unknown { "unknown".to_string() } else { ty.regtype_name() };
            let shown = Expr::Const(Value::Text(shown));
            // Of an aggregate, the query still aggregates: the aggregate stays in the
            // expression (COALESCE answers the name before evaluating it).
            if x.has_agg() {
                return Ok((Expr::Func(Func::Coalesce, vec![shown, x]), DataType::Text));
            }
            return Ok((shown, DataType::Text));
        }
        if matches!(name.as_str(), "enum_first" | "enum_last" | "enum_range") {
            return self.enum_function(&name, &args, scope, aggs);
        }
        if name == "pg_get_serial_sequence" {
            return self.serial_sequence(&args, scope);
        }
        if let Some(query) = description_query(&name, &args)? {
            // As PostgreSQL defines them: a lookup in pg_description.
            return self.expr(&crate::parse::parse_expr(&query)?, scope, aggs);
        }
        if let Some(bound) = self.array_function(&name, &args, scope, aggs)? {
            return Ok(bound);
        }
        if crate::bind::srf::is_srf(&name) {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                format!("set-returning function {name}() is not allowed here"),
            )
            .hint("Kiln takes a set-returning function as a whole select-list item or as a FROM item."));
        }
        // A function made with CREATE FUNCTION, where no built-in one has the name.
        if crate::functions::by_name(&name).is_none() {
            if let Some(bound) = self
                .user_aggregate(f, &name, &args, distinct, star, order_by, scope, aggs)
                .map_err(|e| crate::exec::routines::at_call(f, e))?
            {
                return Ok(bound);
            }
            if distinct || star || !order_by.is_empty() {
                return Err(SqlError::new(
                    code::WRONG_OBJECT_TYPE,
                    format!("DISTINCT, ORDER BY or * specified, but {name} is not an aggregate function"),
                ));
            }
            self.set_item = set_item;
            if let Some(bound) = self
                .routine_call(&name, &args, &named, scope, aggs)
                .map_err(|e| crate::exec::routines::at_call(f, e))?
            {
                return Ok(bound);
            }
        }
        let mut bound = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for a in &args {
            let (x, t) = self.expr(a, scope, aggs)?;
            bound.push(x);
            types.push(t);
        }
        let def = match name.as_str() {
            // to_timestamp(seconds) and to_timestamp(text, template).
            "to_timestamp" if args.len() == 2 => {
                crate::functions::of(Func::Time(crate::expr::TimeFunc::ToTimestampText))
            }
            _ => crate::functions::by_call(&name, &types),
        };
        // A type's name called on one value is a cast (`date(ts)`, `int8(x)`, `text(n)`), as
        // PostgreSQL's conversion functions of those names are.
        if def.is_none() && args.len() == 1 && named.is_empty() && CAST_FUNCTIONS.contains(&&*name)
        {
            let cast = ast::Expr::Cast {
                kind: ast::CastKind::Cast,
                expr: Box::new(args[0].clone()),
                data_type: crate::exec::plpgsql::type_named(&name)?,
                format: None,
            };
            return self.expr(&cast, scope, aggs);
        }
        let Some(def) = def else {
            let shown: Vec<String> = types
                .iter()
                .map(|t| if *t == DataType::Unknown { "unknown".into() } else { t.sql_name() })
                .collect();
            return Err(crate::exec::routines::at_call(
                f,
                SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name}({}) does not exist", shown.join(", ")),
                )
                .hint("No function matches the given name and argument types. You might need to add explicit type casts."),
            ));
        };
        if !(def.args_min..=def.args_max).contains(&args.len()) {
            let shown: Vec<String> = types
                .iter()
                .map(|t| if *t == DataType::Unknown { "unknown".into() } else { t.sql_name() })
                .collect();
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", shown.join(", ")),
            )
            .hint("No function matches the given name and argument types. You might need to add explicit type casts."));
        }
        let (mut func, ty) = (def.func, def.result_type(&types));
        // to_hex(integer) shows a negative value in 32 bits, to_hex(bigint) in 64.
        if func == Func::Math(crate::expr::MathFunc::ToHex(false))
            && matches!(types.first(), Some(DataType::Int2 | DataType::Int4))
        {
            func = Func::Math(crate::expr::MathFunc::ToHex(true));
        }
        // age(timestamp) and age(timestamptz) both take an untyped literal.
        if func == Func::Age && types.iter().all(|t| *t == DataType::Unknown) {
            let unknowns = vec!["unknown"; types.len()].join(", ");
            return Err(SqlError::new("42725", format!("function age({unknowns}) is not unique"))
                .hint("Could not choose a best candidate function. You might need to add explicit type casts."));
        }
        // Untyped arguments take the type the function wants; CASE-like functions unify
        // their arguments with the result.
        // Beside a timestamp with time zone an untyped timestamp argument is one too (read
        // with its offset), then taken as a local time, as PostgreSQL's age(timestamptz,
        // timestamptz) reads both.
        let zoned = types.iter().any(|t| matches!(t, DataType::TimestampTz(_)));
        let numeric = crate::functions::numeric_call(&types);
        let mut fixed = Vec::with_capacity(bound.len());
        for (i, (x, t)) in bound.into_iter().zip(types).enumerate() {
            if zoned && t == DataType::Unknown && def.arg(i) == Arg::Timestamp {
                let (x, _) = self.coerce(x, t, DataType::TimestampTz(None))?;
                fixed.push(Expr::Cast(Box::new(x), DataType::Timestamp(None)));
                continue;
            }
            let want = match def.arg(i) {
                Arg::Result => {
                    fixed.push(self.unify(x, t, ty)?);
                    continue;
                }
                Arg::Text => DataType::Text,
                Arg::Int4 => DataType::Int4,
                Arg::Int8 => DataType::Int8,
                Arg::Float8 => DataType::Float8,
                Arg::Numeric => DataType::Numeric(None),
                Arg::Number if numeric => DataType::Numeric(None),
                Arg::Number => DataType::Float8,
                Arg::Timestamp => DataType::Timestamp(None),
                Arg::Interval => DataType::Interval(None),
                Arg::Bytea => DataType::Bytea,
                Arg::Uuid => DataType::Uuid,
                Arg::Inet => DataType::Inet,
                Arg::Document => DataType::Text,
                Arg::TsVector => DataType::TsVector,
                Arg::TsQuery => DataType::TsQuery,
                Arg::RegConfig => DataType::RegConfig,
                Arg::Any => DataType::Unknown,
            };
            // Arguments of a date/time type must be of it or convert to it implicitly.
            let converts = match want {
                DataType::Timestamp(_) => {
                    matches!(t, DataType::Date | DataType::Timestamp(_) | DataType::TimestampTz(_))
                }
                DataType::Interval(_) => matches!(t, DataType::Interval(_)),
                DataType::Bytea | DataType::Uuid => t == want,
                DataType::Inet => matches!(t, DataType::Inet | DataType::Cidr),
                DataType::Text if def.arg(i) == Arg::Document => t.is_string(),
                DataType::TsVector | DataType::TsQuery | DataType::RegConfig => t == want,
                _ => true,
            };
            if !converts && t != DataType::Unknown {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name}({}) does not exist", t.sql_name()),
                )
                .hint("No function matches the given name and argument types. You might need to add explicit type casts."));
            }
            let (x, t) = self.coerce(x, t, want)?;
            fixed.push(match (want, t) {
                (DataType::Timestamp(_), DataType::Date | DataType::TimestampTz(_)) => {
                    Expr::Cast(Box::new(x), want)
                }
                _ => x,
            });
        }
        // COALESCE stops at its first non-null constant (so `coalesce(1, x)` is the constant
        // 1, which may fold further, as in PostgreSQL).
        if func == Func::Coalesce {
            let first_constant =
                fixed.iter().position(|a| matches!(a, Expr::Const(v) if !v.is_null()));
            if let Some(i) = first_constant {
                fixed.truncate(i + 1);
                if i == 0 {
                    return Ok((fixed.pop().expect("one argument"), ty));
                }
            }
        }
        // An immutable function of constants is evaluated now, as PostgreSQL folds it (its
        // errors fail the statement at planning, whether or not a row reaches it).
        if def.immutable && fixed.iter().all(|a| matches!(a, Expr::Const(_))) {
            let ctx = crate::expr::Ctx::new(&[], self.env);
            let folded = Expr::Func(func, fixed.clone()).eval(&[], &ctx).and_then(|value| {
                match (&value, ty) {
                    (Value::Int(_), DataType::Int4 | DataType::Int2) => value.cast(ty),
                    _ => Ok(value),
                }
            });
            match folded {
                Ok(value) => return Ok((Expr::Const(value), ty)),
                Err(e) if !self.dead_arm => return Err(e),
                Err(_) => {} // in a CASE arm PostgreSQL drops: left for run time
            }
        }
        // pg_get_viewdef(text): the view named (PostgreSQL's older form, which a string
        // literal resolves to).
        if func == Func::Catalog(CatalogFunc::ViewDef) {
            if let Some(Expr::Const(Value::Text(name))) = fixed.first() {
                let name = name.clone();
                let o = self
                    .relation_oid(&name)?
                    .ok_or_else(|| crate::bind::reg::undefined_relation(&name))?;
                fixed[0] = Expr::Const(Value::Int(o));
            }
        }
        match func {
            // to_regclass(name) searches the relations this transaction sees (see reg.rs).
            Func::Catalog(CatalogFunc::RegClassOid(true)) => {
                fixed.extend(self.relation_directory()?);
            }
            // These look definitions and enum types up by OID at execution.
            Func::Catalog(
                CatalogFunc::IndexDef
                | CatalogFunc::PartKeyDef
                | CatalogFunc::PartitionConstraintDef
                | CatalogFunc::ConstraintDef
                | CatalogFunc::ViewDef
                | CatalogFunc::TriggerDef
                | CatalogFunc::FunctionDef
                | CatalogFunc::FunctionResult
                | CatalogFunc::FunctionArguments
                | CatalogFunc::FormatType
                | CatalogFunc::OidVectorTypes
                | CatalogFunc::RegTypeOid(_),
            ) => {
                self.reusable = false;
                self.system.remember_catalog(self.txn)?;
            }
            _ => {}
        }
        Ok((Expr::Func(func, fixed), ty))
    }

    /// A constant text argument (`'s'`, `'s'::regclass`), as the function names it.
    fn constant_text(&mut self, arg: &ast::Expr, scope: &Scope, what: &str) -> Result<String> {
        // 's'::regclass names the relation by its text (the cast would give its OID).
        let arg = match arg {
            ast::Expr::Cast { expr, data_type, .. }
                if crate::bind::reg::reg_kind(data_type) == Some(crate::bind::reg::Reg::Class) =>
            {
                expr.as_ref()
            }
            a => a,
        };
        let (x, _) = self.expr(arg, scope, false)?;
        let x = match x {
            Expr::Cast(inner, DataType::Text) => *inner,
            x => x,
        };
        match x {
            Expr::Const(Value::Text(s)) => Ok(s),
            _ => Err(SqlError::unsupported(format!(
                "{what} with an argument that is not a constant"
            ))
            .hint("Name the sequence with a string literal, as in nextval('orders_id_seq').")),
        }
    }

    /// `nextval('s')`, `currval('s')`, `setval('s', v [, is_called])`: the sequence is found
    /// now, in the statement's transaction (so one created in it is seen), and the plan is
    /// bound again if its definition changes.
    fn sequence_call(
        &mut self,
        func: SeqFunc,
        args: &[ast::Expr],
        scope: &Scope,
    ) -> Result<(Expr, DataType)> {
        let arity = match func {
            SeqFunc::NextVal | SeqFunc::CurrVal => 1..=1,
            SeqFunc::SetVal => 2..=3,
            SeqFunc::LastValue | SeqFunc::IsCalled => 1..=1,
        };
        if !arity.contains(&args.len()) {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {} with {} arguments does not exist", func.name(), args.len()),
            )
            .hint("No function matches the given name and argument types."));
        }
        let text = self.constant_text(&args[0], scope, func.name())?;
        let name = crate::sequence::parse_name(&text, Some(self.db))?;
        let seq = match self.catalog.sequence(self.txn, self.db, &name)? {
            Some(seq) => seq,
            None if self.catalog.relation_exists(self.txn, self.db, &name)? => {
                return Err(SqlError::new(
                    code::WRONG_OBJECT_TYPE,
                    format!("\"{name}\" is not a sequence"),
                ))
            }
            None => {
                self.catalog.check_schema_of(self.txn, self.db, &name)?;
                return Err(SqlError::new(
                    code::UNDEFINED_TABLE,
                    format!("relation \"{name}\" does not exist"),
                ));
            }
        };
        let mut rest = Vec::with_capacity(args.len() - 1);
        for (i, a) in args[1..].iter().enumerate() {
            let (x, t) = self.expr(a, scope, false)?;
            let want = if i == 0 { DataType::Int8 } else { DataType::Bool };
            rest.push(self.coerce(x, t, want)?.0);
        }
        self.uses_sequence(&seq);
        Ok((Expr::Sequence(func, seq, rest), DataType::Int8))
    }

    /// Records that the plan uses `seq` (a prepared plan is re-bound when it changes).
    pub(crate) fn uses_sequence(&mut self, seq: &Arc<crate::sequence::Sequence>) {
        if !self.sequences.iter().any(|s| Arc::ptr_eq(s, seq)) {
            self.sequences.push(seq.clone());
        }
    }

    /// `current_setting(name [, missing_ok])`: the session's value, read when the statement
    /// is bound, or when it runs if the name or `missing_ok` is not a constant (a parameter,
    /// a column).
    fn current_setting(&mut self, args: &[ast::Expr], scope: &Scope) -> Result<(Expr, DataType)> {
        check_arity("current_setting", args.len(), 1, 2)?;
        let mut bound = Vec::with_capacity(2);
        for a in args {
            let (x, ty) = self.expr(a, scope, false)?;
            let want = if bound.is_empty() { DataType::Text } else { DataType::Bool };
            let x = self.coerce(x, ty, want)?.0;
            bound.push(x);
        }
        let constant = |x: &Expr| match x {
            Expr::Const(Value::Text(s)) => Some(Some(s.clone())),
            Expr::Cast(inner, _) => match inner.as_ref() {
                Expr::Const(Value::Text(s)) => Some(Some(s.clone())),
                _ => None,
            },
            Expr::Const(Value::Null) => Some(None),
            _ => None,
        };
        let missing_ok = match bound.get(1) {
            None => Some(false),
            Some(Expr::Const(Value::Bool(b))) => Some(*b),
            Some(Expr::Const(Value::Null)) => Some(false),
            Some(_) => None,
        };
        let (Some(name), Some(missing_ok)) = (constant(&bound[0]), missing_ok) else {
            self.reusable = false;
            return Ok((Expr::Func(Func::CurrentSetting, bound), DataType::Text));
        };
        let Some(name) = name else {
            // current_setting is strict.
            return Ok((Expr::Const(Value::Null), DataType::Text));
        };
        self.reusable = false;
        let value = match self.system.setting(&name) {
            Some(v) => Value::Text(v),
            None if missing_ok => Value::Null,
            None => {
                return Err(SqlError::new(
                    code::UNDEFINED_SETTING,
                    format!("unrecognized configuration parameter \"{name}\""),
                ))
            }
        };
        Ok((Expr::Const(value), DataType::Text))
    }

    /// `enum_first(x)`, `enum_last(x)`, `enum_range(x)` — of `x`'s enum type, whatever its
    /// value — and `enum_range(a, b)`, the labels from `a` to `b` (NULL: open).
    fn enum_function(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        let hi = if name == "enum_range" { 2 } else { 1 };
        check_arity(name, args.len(), 1, hi)?;
        let mut bound = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for a in args {
            let (e, t) = self.expr(a, scope, aggs)?;
            bound.push(e);
            types.push(t);
        }
        let def = match types.iter().find(|t| **t != DataType::Unknown) {
            Some(DataType::Enum(def)) => *def,
            _ => {
                let shown: Vec<String> = types
                    .iter()
                    .map(|t| if *t == DataType::Unknown { "unknown".into() } else { t.sql_name() })
                    .collect();
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name}({}) does not exist", shown.join(", ")),
                )
                .hint("No function matches the given name and argument types. You might need to add explicit type casts."));
            }
        };
        let ty = DataType::Enum(def);
        let mut exprs = Vec::with_capacity(bound.len());
        for (e, t) in bound.into_iter().zip(types) {
            let (e, t) = self.coerce(e, t, ty)?;
            if t != ty && t != DataType::Unknown {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name}({}, {}) does not exist", ty.sql_name(), t.sql_name()),
                ));
            }
            exprs.push(e);
        }
        let n = def.labels.len();
        if n == 0 && name != "enum_range" {
            return Err(SqlError::new(
                code::NOT_IN_PREREQUISITE_STATE,
                format!("enum {} contains no values", ty.sql_name()),
            ));
        }
        Ok(match (name, exprs.len()) {
            ("enum_first", _) => (Expr::Const(if n == 0 { Value::Null } else { def.value(0) }), ty),
            ("enum_last", _) => {
                (Expr::Const(if n == 0 { Value::Null } else { def.value(n - 1) }), ty)
            }
            (_, 1) => (
                Expr::Const(Value::Array((0..n).map(|i| def.value(i)).collect())),
                crate::array::array_of(ty)?,
            ),
            _ => (Expr::Func(Func::EnumRange(def), exprs), crate::array::array_of(ty)?),
        })
    }

    /// `pg_get_serial_sequence('table', 'column')`: the sequence a `serial` or identity
    /// column draws from (`public.<name>`), NULL when it has none.
    fn serial_sequence(&mut self, args: &[ast::Expr], scope: &Scope) -> Result<(Expr, DataType)> {
        if args.len() != 2 {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!(
                    "function pg_get_serial_sequence with {} arguments does not exist",
                    args.len()
                ),
            ));
        }
        let constant = |p: &mut Self, a: &ast::Expr| -> Result<Option<String>> {
            match p.expr(a, scope, false)?.0 {
                Expr::Const(Value::Text(s)) => Ok(Some(s)),
                Expr::Cast(inner, DataType::Text) => match *inner {
                    Expr::Const(Value::Text(s)) => Ok(Some(s)),
                    _ => Ok(None),
                },
                _ => Ok(None),
            }
        };
        let (Some(table), Some(column)) = (constant(self, &args[0])?, constant(self, &args[1])?)
        else {
            // Names known only at execution (a catalog query's columns): looked up then in
            // the owned sequences this transaction sees, given as three constant arrays
            // (tables, columns, sequences).
            let mut bound = Vec::with_capacity(5);
            for a in args {
                let (x, t) = self.expr(a, scope, false)?;
                bound.push(self.coerce(x, t, DataType::Text)?.0);
            }
            self.reusable = false;
            let mut owned = [vec![], vec![], vec![]];
            let mut own = |table: &str, column: &str, sequence: &str| {
                owned[0].push(Value::Text(table.to_string()));
                owned[1].push(Value::Text(column.to_string()));
                owned[2].push(Value::Text(crate::pg::system::shown_relation(sequence, true)));
            };
            for s in self.catalog.sequences(self.txn, self.db)? {
                if let Some((t, c)) = &s.owned_by {
                    own(t, c, &s.name);
                }
            }
            for t in self.catalog.tables(self.txn, self.db)? {
                for c in &t.columns {
                    if let Some(identity) = &c.identity {
                        own(&t.name, &c.name, &identity.sequence);
                    }
                }
            }
            bound.extend(owned.map(|list| Expr::Const(Value::Array(list))));
            return Ok((
                Expr::Func(Func::Catalog(CatalogFunc::SerialSequence), bound),
                DataType::Text,
            ));
        };
        let table = crate::sequence::parse_name(&table, Some(self.db))?;
        let t = self.catalog.table_or_err(self.txn, self.db, &table)?;
        // The column is named as written: it is not case-folded (PostgreSQL's rule).
        let col = t.column_or_err(&column)?;
        if !self.tables.iter().any(|x| Arc::ptr_eq(x, &t)) {
            self.tables.push(t.clone());
        }
        let c = &t.columns[col];
        let owned = match &c.identity {
            Some(identity) => Some(identity.sequence.clone()),
            None => self
                .catalog
                .sequences(self.txn, self.db)?
                .into_iter()
                .find(|s| {
                    s.owned_by.as_ref().is_some_and(|(ot, oc)| *ot == t.name && *oc == c.name)
                })
                .map(|s| s.name.clone()),
        };
        // The answer depends on sequences the plan does not track: not kept.
        self.reusable = false;
        Ok((
            Expr::Const(
                owned.map_or(Value::Null, |n| {
                    Value::Text(crate::pg::system::shown_relation(&n, true))
                }),
            ),
            DataType::Text,
        ))
    }
}

impl Planner<'_> {
    /// `json_object_agg(key, value [ORDER BY …]) [FILTER (WHERE …)]`: the pairs collected as
    /// array_agg collects (a pair with a NULL value too), then written as one object.
    #[allow(clippy::too_many_arguments)]
    fn json_object_agg(
        &mut self,
        f: &ast::Function,
        name: &str,
        args: &[ast::Expr],
        distinct: bool,
        order_by: &[ast::OrderByExpr],
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        let [k, v] = args else {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {name} takes exactly two arguments"),
            ));
        };
        let (k, kt) = self.agg_arg(k, scope)?;
        let (k, kt) = self.coerce(k, kt, DataType::Text)?;
        let (v, vt) = self.agg_arg(v, scope)?;
        let (v, vt) = self.coerce(v, vt, DataType::Text)?;
        let pair = Expr::Func(Func::MakeArray, vec![k, v]);
        let agg = self.collecting_agg(f, pair, distinct, order_by, scope, aggs)?;
        let jsonb = name == "jsonb_object_agg";
        let ty = if jsonb { DataType::Jsonb } else { DataType::Json };
        Ok((Expr::Func(Func::JsonObjectAgg(kt, vt, jsonb), vec![agg]), ty))
    }

    /// An aggregate that collects `x` (as array_agg does, NULLs skipped), in the order of
    /// `order_by`, over the rows `f`'s FILTER keeps; 42803 where aggregates are not allowed.
    fn collecting_agg(
        &mut self,
        f: &ast::Function,
        x: Expr,
        distinct: bool,
        order_by: &[ast::OrderByExpr],
        scope: &Scope,
        aggs: bool,
    ) -> Result<Expr> {
        if !aggs {
            return Err(SqlError::new(code::GROUPING, "aggregate functions are not allowed here"));
        }
        let mut packed = vec![x];
        let mut order = Vec::with_capacity(order_by.len());
        for o in order_by {
            packed.push(self.agg_arg(&o.expr, scope)?.0);
            let desc = crate::bind::sorts_descending(&o.options)?;
            order.push((desc, o.options.nulls_first.unwrap_or(desc)));
        }
        // Packed with its sort keys, as every collecting aggregate's input is.
        let x = Expr::Func(Func::MakeArray, packed);
        let x = self.filtered(f, x, scope)?;
        Ok(Expr::Agg(AggFunc::ArrayAgg(order), distinct, Some(Box::new(x)), DataType::Text))
    }

    /// A whole-row reference (`t`, a FROM item's name where no column of that name is in
    /// scope) as the row's JSON object, `{"a":1,"b":"x"}`: `None` when `arg` is not one.
    fn whole_row_json(&mut self, arg: Option<&ast::Expr>, scope: &Scope) -> Option<Expr> {
        let Some(ast::Expr::Identifier(i)) = arg else { return None };
        let name = ident(i);
        if scope.resolve(None, &name).is_ok() {
            return None;
        }
        let (mut names, mut parts) = (Vec::new(), vec![Expr::Const(Value::Null)]);
        for (n, c) in scope.cols.iter().enumerate() {
            if c.table.as_deref() != Some(name.as_str()) {
                continue;
            }
            names.push(Value::Text(c.name.clone()));
            parts.push(match c.ty {
                DataType::Json | DataType::Jsonb => Expr::Column(n),
                ty => Expr::Func(Func::ToJson(ty, false), vec![Expr::Column(n)]),
            });
        }
        if names.is_empty() {
            return None;
        }
        parts[0] = Expr::Const(Value::Array(names));
        Some(Expr::Func(Func::RowJson, parts))
    }

    /// `row_to_json(t)`, `to_json(t)`, `to_jsonb(t)`, `json_agg(t)`, `jsonb_agg(t)` of a whole
    /// row (`None`: the argument is not one).
    #[allow(clippy::too_many_arguments)]
    fn row_json_call(
        &mut self,
        f: &ast::Function,
        name: &str,
        args: &[ast::Expr],
        distinct: bool,
        order_by: &[ast::OrderByExpr],
        scope: &Scope,
        aggs: bool,
    ) -> Result<Option<(Expr, DataType)>> {
        let Some(row) = self.whole_row_json(args.first(), scope) else { return Ok(None) };
        if args.len() != 1 {
            return Err(SqlError::unsupported(format!("{name} with more than one argument")));
        }
        Ok(Some(match name {
            "row_to_json" | "to_json" => (row, DataType::Json),
            "to_jsonb" => {
                (Expr::Func(Func::ToJson(DataType::Json, true), vec![row]), DataType::Jsonb)
            }
            _ => {
                let jsonb = name == "jsonb_agg";
                let agg = self.collecting_agg(f, row, distinct, order_by, scope, aggs)?;
                let func =
                    if jsonb { Func::JsonAgg(DataType::Json, true) } else { Func::JsonAggRows };
                (Expr::Func(func, vec![agg]), if jsonb { DataType::Jsonb } else { DataType::Json })
            }
        }))
    }
}

/// The result type of aggregate `agg` (named `name`) over an argument of type `ty`, as
/// PostgreSQL types it (`sum(integer)` is bigint, `avg(interval)` an interval); 42883 for an
/// argument type it does not take.
/// Whether `name` is an aggregate function.
pub(crate) fn is_aggregate(name: &str) -> bool {
    matches!(
        name,
        "count"
            | "sum"
            | "min"
            | "max"
            | "avg"
            | "string_agg"
            | "array_agg"
            | "json_agg"
            | "jsonb_agg"
            | "json_object_agg"
            | "jsonb_object_agg"
            | "bool_and"
            | "every"
            | "bool_or"
            | "bit_and"
            | "bit_or"
            | "bit_xor"
            | "variance"
            | "var_samp"
            | "var_pop"
            | "stddev"
            | "stddev_samp"
            | "stddev_pop"
            | "percentile_cont"
            | "percentile_disc"
            | "mode"
            | "corr"
            | "covar_pop"
            | "covar_samp"
            | "regr_count"
            | "regr_avgx"
            | "regr_avgy"
            | "regr_sxx"
            | "regr_syy"
            | "regr_sxy"
            | "regr_slope"
            | "regr_intercept"
            | "regr_r2"
    )
}

pub(crate) fn aggregate_type(name: &str, agg: &AggFunc, ty: DataType) -> Result<DataType> {
    Ok(match agg {
        AggFunc::StringAgg(..) => DataType::Text,
        // Typed where they are bound (ordered_set_aggregate, regression_aggregate).
        AggFunc::OrderedSet(..) | AggFunc::Regression(_) | AggFunc::User(_) => ty,
        AggFunc::ArrayAgg(_) => {
            if ty.element().is_some() {
                return Err(SqlError::unsupported("array_agg of arrays"));
            }
            crate::array::array_of(if ty == DataType::Unknown { DataType::Text } else { ty })?
        }
        AggFunc::BoolAnd | AggFunc::BoolOr => {
            if !matches!(ty, DataType::Bool | DataType::Unknown) {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name}({}) does not exist", ty.sql_name()),
                ));
            }
            DataType::Bool
        }
        AggFunc::Bits(_) => match ty {
            DataType::Int2 | DataType::Int4 | DataType::Int8 => ty,
            DataType::Unknown => DataType::Int4,
            t => {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name}({}) does not exist", t.sql_name()),
                )
                .hint("No function matches the given name and argument types. You might need to add explicit type casts."))
            }
        },
        AggFunc::Count => DataType::Int8,
        AggFunc::Sum => match ty {
            DataType::Int2 | DataType::Int4 => DataType::Int8,
            DataType::Int8 | DataType::Numeric(_) | DataType::Unknown => DataType::Numeric(None),
            DataType::Float4 | DataType::Float8 => DataType::Float8,
            DataType::Interval(_) => DataType::Interval(None),
            t => {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function sum({}) does not exist", t.sql_name()),
                ))
            }
        },
        // Exact (numeric) for integers and numerics, double precision for floats.
        AggFunc::Variance { .. } => match ty {
            DataType::Float4 | DataType::Float8 => DataType::Float8,
            t if t.is_numeric() || t == DataType::Unknown => DataType::Numeric(None),
            t => {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name}({}) does not exist", t.sql_name()),
                )
                .hint("No function matches the given name and argument types. You might need to add explicit type casts."))
            }
        },
        AggFunc::Avg => match ty {
            DataType::Float4 | DataType::Float8 => DataType::Float8,
            t if t.is_numeric() || t == DataType::Unknown => DataType::Numeric(None),
            DataType::Interval(_) => DataType::Interval(None),
            t => {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function avg({}) does not exist", t.sql_name()),
                ))
            }
        },
        // PostgreSQL has no min or max of these types.
        AggFunc::Min | AggFunc::Max => match ty {
            DataType::Bool | DataType::Bytea | DataType::Uuid => {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name}({}) does not exist", ty.sql_name()),
                ))
            }
            t => t,
        },
    })
}

/// `obj_description(oid [, catalog])` and `col_description(table, column)` as the queries of
/// pg_description PostgreSQL defines them by (`None` for another function).
fn description_query(name: &str, args: &[ast::Expr]) -> Result<Option<String>> {
    let lookup = |objoid: &ast::Expr, class: Option<String>, sub: String| {
        let class = class.map(|c| format!(" AND d.classoid = ({c})::regclass")).unwrap_or_default();
        format!(
            "(SELECT d.description FROM pg_catalog.pg_description d WHERE d.objoid = ({objoid}){class} AND d.objsubid = {sub} LIMIT 1)"
        )
    };
    Ok(match name {
        "obj_description" => {
            check_arity(name, args.len(), 1, 2)?;
            Some(lookup(&args[0], args.get(1).map(|c| c.to_string()), "0".into()))
        }
        "col_description" => {
            check_arity(name, args.len(), 2, 2)?;
            Some(lookup(&args[0], Some("'pg_class'".into()), format!("({})", args[1])))
        }
        _ => None,
    })
}

impl Planner<'_> {
    /// `date_bin(interval, source, origin)` of timestamps with time zone or without, as
    /// PostgreSQL resolves it: with time zone when an argument has one, or neither is a
    /// timestamp without (dates and untyped literals).
    fn date_bin(
        &mut self,
        args: &[ast::Expr],
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        check_arity("date_bin", args.len(), 3, 3)?;
        let (stride, st) = self.expr(&args[0], scope, aggs)?;
        let (stride, st) = self.coerce(stride, st, DataType::Interval(None))?;
        let (source, xt) = self.expr(&args[1], scope, aggs)?;
        let (origin, ot) = self.expr(&args[2], scope, aggs)?;
        let zoned = matches!(xt, DataType::TimestampTz(_))
            || matches!(ot, DataType::TimestampTz(_))
            || !(matches!(xt, DataType::Timestamp(_)) || matches!(ot, DataType::Timestamp(_)));
        let ty = if zoned { DataType::TimestampTz(None) } else { DataType::Timestamp(None) };
        let missing = |types: [DataType; 3]| {
            SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!(
                    "function date_bin({}, {}, {}) does not exist",
                    types[0].sql_name(),
                    types[1].sql_name(),
                    types[2].sql_name()
                ),
            )
            .hint("date_bin takes an interval and two timestamps.")
        };
        if !matches!(st, DataType::Interval(_)) {
            return Err(missing([st, xt, ot]));
        }
        let mut bound = vec![stride];
        for (x, t) in [(source, xt), (origin, ot)] {
            let (x, t) = self.coerce(x, t, ty)?;
            bound.push(match t {
                _ if t == ty => x,
                DataType::Date | DataType::Timestamp(_) | DataType::TimestampTz(_) => {
                    Expr::Cast(Box::new(x), ty)
                }
                _ => return Err(missing([st, xt, ot])),
            });
        }
        Ok((Expr::Func(Func::Time(crate::expr::dates::TimeFunc::DateBin), bound), ty))
    }
}

/// The type names PostgreSQL has conversion functions of (`date(timestamptz)`,
/// `int4(numeric)`, …), which a call of one value binds as a cast.
const CAST_FUNCTIONS: &[&str] = &[
    "date",
    "time",
    "timestamp",
    "timestamptz",
    "interval",
    "text",
    "varchar",
    "bpchar",
    "name",
    "int2",
    "int4",
    "int8",
    "float4",
    "float8",
    "numeric",
    "bool",
    "inet",
    "cidr",
];
