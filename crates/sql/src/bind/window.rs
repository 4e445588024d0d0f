//! Binding window functions: `f(…) OVER ([PARTITION BY …] [ORDER BY …] [frame])` in the
//! select list and ORDER BY. The call stays an `Expr::Window` node through grouping (so its
//! arguments may use aggregates); `take_windows` then moves every call into the plan's window
//! stage and leaves a column reference in its place.

use sqlparser::ast;

use crate::bind::*;
use crate::error::{Result, SqlError};
use crate::expr::*;
use crate::types::{DataType, Value};

/// The functions that only exist as window functions; any other name with OVER is an
/// aggregate over the frame.
fn window_only(name: &str) -> Option<WindowFunc> {
    Some(match name {
        "row_number" => WindowFunc::RowNumber,
        "rank" => WindowFunc::Rank,
        "dense_rank" => WindowFunc::DenseRank,
        "percent_rank" => WindowFunc::PercentRank,
        "cume_dist" => WindowFunc::CumeDist,
        "ntile" => WindowFunc::Ntile,
        "lag" => WindowFunc::Lag,
        "lead" => WindowFunc::Lead,
        "first_value" => WindowFunc::FirstValue,
        "last_value" => WindowFunc::LastValue,
        "nth_value" => WindowFunc::NthValue,
        _ => return None,
    })
}

/// Takes the outermost aggregate out of a bound aggregate call (`json_agg(x)` binds as a
/// function of `array_agg(x)`), leaving column 0 in its place.
fn take_agg(e: Expr, found: &mut Option<(AggFunc, Option<Box<Expr>>, DataType)>) -> Result<Expr> {
    if found.is_some() {
        return Ok(e);
    }
    match e {
        Expr::Agg(func, _, arg, ty) => {
            *found = Some((func, arg, ty));
            Ok(Expr::Column(0))
        }
        e => e.try_map_children(&mut |c| take_agg(c, found)),
    }
}

impl<'a> Planner<'a> {
    /// `name(args) OVER (…)`.
    pub(crate) fn window_call(
        &mut self,
        f: &ast::Function,
        name: &str,
        args: &[ast::Expr],
        scope: &Scope,
    ) -> Result<(Expr, DataType)> {
        let spec = match f.over.as_ref() {
            Some(ast::WindowType::WindowSpec(spec)) => spec,
            Some(ast::WindowType::NamedWindow(_)) => {
                return Err(SqlError::unsupported("named windows (WINDOW w AS …)"))
            }
            None => return Err(SqlError::syntax("OVER is missing")),
        };
        if spec.window_name.is_some() {
            return Err(SqlError::unsupported("named windows (WINDOW w AS …)"));
        }
        let (func, fixed, ty) = match window_only(name) {
            Some(func) => self.window_function(f, func, name, args, scope)?,
            None => self.window_aggregate(f, name, scope)?,
        };
        let mut partition = Vec::with_capacity(spec.partition_by.len());
        for p in &spec.partition_by {
            partition.push(self.expr(p, scope, true)?.0);
        }
        let mut order = Vec::with_capacity(spec.order_by.len());
        let mut order_types = Vec::with_capacity(spec.order_by.len());
        let mut directions = Vec::with_capacity(spec.order_by.len());
        for o in &spec.order_by {
            let (x, t) = self.expr(&o.expr, scope, true)?;
            order.push(x);
            order_types.push(t);
            let desc = crate::bind::sorts_descending(&o.options)?;
            directions.push((desc, o.options.nulls_first.unwrap_or(desc)));
        }
        if partition.iter().chain(&order).any(Expr::has_window) {
            return Err(SqlError::new("42P20", "window function calls cannot be nested"));
        }
        // PostgreSQL's default frame: RANGE UNBOUNDED PRECEDING to the current row's last peer.
        let frame = match &spec.window_frame {
            None => (FrameUnits::Range, FrameBound::UnboundedPreceding, FrameBound::CurrentRow),
            Some(wf) => {
                let units = match wf.units {
                    ast::WindowFrameUnits::Rows => FrameUnits::Rows,
                    ast::WindowFrameUnits::Range => FrameUnits::Range,
                    ast::WindowFrameUnits::Groups => {
                        if order.is_empty() {
                            return Err(SqlError::new(
                                "42P20",
                                "GROUPS mode requires an ORDER BY clause",
                            ));
                        }
                        FrameUnits::Groups
                    }
                };
                // RANGE offsets are distances in the one ORDER BY key's terms.
                let has_offset = |b: &ast::WindowFrameBound| {
                    matches!(
                        b,
                        ast::WindowFrameBound::Preceding(Some(_))
                            | ast::WindowFrameBound::Following(Some(_))
                    )
                };
                let mut offset_type = DataType::Int8;
                if units == FrameUnits::Range
                    && (has_offset(&wf.start_bound)
                        || wf.end_bound.as_ref().is_some_and(has_offset))
                {
                    if order.len() != 1 {
                        return Err(SqlError::new(
                            "42P20",
                            "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
                        ));
                    }
                    offset_type = match order_types[0] {
                        DataType::Int2 | DataType::Int4 | DataType::Int8 => DataType::Int8,
                        DataType::Numeric(_) => DataType::Numeric(None),
                        DataType::Float4 | DataType::Float8 => DataType::Float8,
                        DataType::Date => {
                            // Compared as timestamps: date ± interval is one.
                            let key = order.pop().unwrap_or(Expr::Const(Value::Null));
                            order.push(Expr::Cast(Box::new(key), DataType::Timestamp(None)));
                            DataType::Interval(None)
                        }
                        DataType::Timestamp(_)
                        | DataType::TimestampTz(_)
                        | DataType::Time(_)
                        | DataType::Interval(_) => DataType::Interval(None),
                        t => {
                            return Err(SqlError::new(
                                code::FEATURE_NOT_SUPPORTED,
                                format!(
                                    "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {}",
                                    t.sql_name()
                                ),
                            ))
                        }
                    };
                }
                let ctx =
                    FrameContext { units, offset_type, key_type: order_types.first().copied() };
                let start = self.frame_bound(&wf.start_bound, &ctx, scope)?;
                let end = match &wf.end_bound {
                    Some(b) => self.frame_bound(b, &ctx, scope)?,
                    None => FrameBound::CurrentRow,
                };
                if start == FrameBound::UnboundedFollowing {
                    return Err(SqlError::new(
                        "42P20",
                        "frame start cannot be UNBOUNDED FOLLOWING",
                    ));
                }
                if end == FrameBound::UnboundedPreceding {
                    return Err(SqlError::new("42P20", "frame end cannot be UNBOUNDED PRECEDING"));
                }
                // A start after the current row cannot end before it (PostgreSQL's checks).
                match (&start, &end) {
                    (FrameBound::CurrentRow, FrameBound::Preceding(_)) => {
                        return Err(SqlError::new(
                            "42P20",
                            "frame starting from current row cannot have preceding rows",
                        ))
                    }
                    (
                        FrameBound::Following(_),
                        FrameBound::Preceding(_) | FrameBound::CurrentRow,
                    ) => {
                        return Err(SqlError::new(
                            "42P20",
                            "frame starting from following row cannot have preceding rows",
                        ))
                    }
                    _ => {}
                }
                (units, start, end)
            }
        };
        let call = WindowCall { func, args: fixed, partition, order, directions, frame, ty };
        Ok((Expr::Window(Box::new(call)), ty))
    }

    /// A window-only function's call: its kind, its arguments (typed as it wants them),
    /// its result type.
    fn window_function(
        &mut self,
        f: &ast::Function,
        func: WindowFunc,
        name: &str,
        args: &[ast::Expr],
        scope: &Scope,
    ) -> Result<(WindowFunc, Vec<Expr>, DataType)> {
        if f.filter.is_some() {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                "FILTER is not implemented for non-aggregate window functions",
            ));
        }
        if matches!(f.args, ast::FunctionArguments::List(ref l) if l.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct))
        {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                "DISTINCT is not implemented for window functions",
            ));
        }
        let mut bound_args = Vec::with_capacity(args.len());
        for a in args {
            let (x, t) = self.expr(a, scope, true)?;
            if x.has_window() {
                return Err(SqlError::new("42P20", "window function calls cannot be nested"));
            }
            bound_args.push((x, t));
        }
        let arity = |lo, hi| crate::bind::function::check_arity(name, args.len(), lo, hi);
        let first_type = match bound_args.first().map_or(DataType::Unknown, |(_, t)| *t) {
            DataType::Unknown => DataType::Text,
            t => t,
        };
        let ty = match func {
            WindowFunc::RowNumber | WindowFunc::Rank | WindowFunc::DenseRank => DataType::Int8,
            WindowFunc::PercentRank | WindowFunc::CumeDist => DataType::Float8,
            WindowFunc::Ntile => DataType::Int4,
            _ => first_type,
        };
        match &func {
            WindowFunc::RowNumber
            | WindowFunc::Rank
            | WindowFunc::DenseRank
            | WindowFunc::PercentRank
            | WindowFunc::CumeDist => arity(0, 0)?,
            WindowFunc::Ntile => arity(1, 1)?,
            WindowFunc::Lag | WindowFunc::Lead => arity(1, 3)?,
            WindowFunc::FirstValue | WindowFunc::LastValue => arity(1, 1)?,
            WindowFunc::NthValue => arity(2, 2)?,
            WindowFunc::Agg { .. } => {}
        }
        // Arguments take the types the function wants.
        let mut fixed = Vec::with_capacity(bound_args.len());
        for (i, (x, t)) in bound_args.into_iter().enumerate() {
            let want = match (&func, i) {
                (WindowFunc::Ntile, _) | (WindowFunc::NthValue, 1) => DataType::Int8,
                (WindowFunc::Lag | WindowFunc::Lead, 1) => DataType::Int8,
                (WindowFunc::Lag | WindowFunc::Lead, 2) => ty,
                _ => t,
            };
            let (x, xt) = self.coerce(x, t, want)?;
            fixed.push(if xt != want && want != DataType::Unknown && xt != DataType::Unknown {
                Expr::Cast(Box::new(x), want)
            } else {
                x
            });
        }
        Ok((func, fixed, ty))
    }

    /// An aggregate with OVER: bound as the aggregate it is (so every aggregate, its FILTER
    /// and whatever the function makes of the aggregate's value work as they do with GROUP
    /// BY), then computed over each row's frame.
    fn window_aggregate(
        &mut self,
        f: &ast::Function,
        name: &str,
        scope: &Scope,
    ) -> Result<(WindowFunc, Vec<Expr>, DataType)> {
        if let ast::FunctionArguments::List(l) = &f.args {
            if l.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct) {
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    "DISTINCT is not implemented for window functions",
                ));
            }
            if l.clauses.iter().any(|c| matches!(c, ast::FunctionArgumentClause::OrderBy(_))) {
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    "aggregate ORDER BY is not implemented for window functions",
                ));
            }
        }
        if !crate::bind::function::is_aggregate(name) && !self.has_user_aggregate(name)? {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!(
                    "OVER specified, but {name} is not a window function nor an aggregate function"
                ),
            ));
        }
        let mut plain = f.clone();
        plain.over = None;
        let outer = std::mem::replace(&mut self.window_aggregate, true);
        let bound = self.expr(&ast::Expr::Function(plain), scope, true);
        self.window_aggregate = outer;
        let (bound, ty) = bound?;
        let mut found = None;
        let finish = take_agg(bound, &mut found)?;
        let Some((func, arg, agg_ty)) = found else {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!(
                    "OVER specified, but {name} is not a window function nor an aggregate function"
                ),
            ));
        };
        if arg.as_deref().is_some_and(Expr::has_window) {
            return Err(SqlError::new("42P20", "window function calls cannot be nested"));
        }
        let ty = if ty == DataType::Unknown { DataType::Text } else { ty };
        let finish = match finish {
            Expr::Column(0) => None,
            e => Some(Box::new(e)),
        };
        let args = arg.map(|a| vec![*a]).unwrap_or_default();
        Ok((WindowFunc::Agg { func, ty: agg_ty, finish }, args, ty))
    }

    /// One end of a frame; an offset is bound as an expression of no column, typed as the
    /// frame's units want it.
    fn frame_bound(
        &mut self,
        b: &ast::WindowFrameBound,
        frame: &FrameContext,
        scope: &Scope,
    ) -> Result<FrameBound> {
        let (e, preceding) = match b {
            ast::WindowFrameBound::CurrentRow => return Ok(FrameBound::CurrentRow),
            ast::WindowFrameBound::Preceding(None) => return Ok(FrameBound::UnboundedPreceding),
            ast::WindowFrameBound::Following(None) => return Ok(FrameBound::UnboundedFollowing),
            ast::WindowFrameBound::Preceding(Some(e)) => (e, true),
            ast::WindowFrameBound::Following(Some(e)) => (e, false),
        };
        let units = match frame.units {
            FrameUnits::Rows => "ROWS",
            FrameUnits::Range => "RANGE",
            FrameUnits::Groups => "GROUPS",
        };
        // The SQL parser reads a string before PRECEDING/FOLLOWING as an interval; in
        // PostgreSQL it is a literal of the type the offset takes.
        let e = match e.as_ref() {
            ast::Expr::Interval(ast::Interval {
                value,
                leading_field: None,
                leading_precision: None,
                last_field: None,
                fractional_seconds_precision: None,
            }) if matches!(value.as_ref(), ast::Expr::Value(_)) => value.as_ref(),
            e => e,
        };
        let (x, t) = self.expr(e, scope, false)?;
        let mut variables = false;
        x.walk(&mut |n| {
            variables |= matches!(n, Expr::Column(_) | Expr::Outer(_) | Expr::Subquery(..))
        });
        if variables {
            return Err(SqlError::new(
                code::INVALID_COLUMN_REFERENCE,
                format!("argument of {units} must not contain variables"),
            ));
        }
        let want = frame.offset_type;
        let fits = match want {
            _ if t == DataType::Unknown => true,
            // ROWS and GROUPS counts take any number, as an assignment would (1.5 is 2).
            DataType::Int8 if frame.units != FrameUnits::Range => t.is_numeric(),
            DataType::Int8 => t.is_integer(),
            DataType::Numeric(_) => t.is_integer() || matches!(t, DataType::Numeric(_)),
            DataType::Float8 => t.is_numeric(),
            DataType::Interval(_) => matches!(t, DataType::Interval(_)),
            _ => false,
        };
        if !fits {
            let message = match (frame.units, frame.key_type) {
                (FrameUnits::Range, Some(key)) => format!(
                    "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {} and offset type {}",
                    key.sql_name(),
                    t.sql_name()
                ),
                _ => format!(
                    "argument of {units} must be type bigint, not type {}",
                    t.sql_name()
                ),
            };
            let code = if frame.units == FrameUnits::Range {
                code::FEATURE_NOT_SUPPORTED
            } else {
                code::DATATYPE_MISMATCH
            };
            return Err(SqlError::new(code, message));
        }
        let (x, xt) = self.coerce(x, t, want)?;
        let x = if xt != want { Expr::Cast(Box::new(x), want) } else { x };
        Ok(if preceding {
            FrameBound::Preceding(Box::new(x))
        } else {
            FrameBound::Following(Box::new(x))
        })
    }
}

/// What binding a frame's offsets needs to know.
struct FrameContext {
    units: FrameUnits,
    /// The type offsets take.
    offset_type: DataType,
    /// The first ORDER BY key's type.
    key_type: Option<DataType>,
}

/// Moves every window call out of the plan's output expressions into `plan.windows`,
/// leaving a reference to the column the window stage appends for it (after the `base`
/// columns of the row it reads: the joined row, or the grouped one).
pub(crate) fn take_windows(plan: &mut crate::plan::SelectPlan, base: usize) -> Result<()> {
    if !plan.projection.iter().any(Expr::has_window) {
        return Ok(());
    }
    if plan.having.as_ref().is_some_and(Expr::has_window) {
        return Err(SqlError::new("42P20", "window functions are not allowed in HAVING"));
    }
    let mut windows: Vec<WindowCall> = Vec::new();
    let projection = std::mem::take(&mut plan.projection);
    plan.projection = projection
        .into_iter()
        .map(|e| {
            e.map(&mut |n| match n {
                Expr::Window(w) => {
                    let i = match windows.iter().position(|x| *x == *w) {
                        Some(i) => i,
                        None => {
                            windows.push(*w);
                            windows.len() - 1
                        }
                    };
                    Ok(Expr::Column(base + i))
                }
                n => Ok(n),
            })
        })
        .collect::<Result<_>>()?;
    plan.windows = windows;
    Ok(())
}

/// A query whose SELECT has a `WINDOW` clause, with every `OVER w` and `OVER (w …)` in its
/// select list and ORDER BY (not in its subqueries, which have their own) replaced by the
/// window it names, as PostgreSQL resolves them: a reference may add an ORDER BY the named
/// window lacks and a frame, but not a PARTITION BY, and not copy a window with a frame.
pub(crate) fn inline_named_windows(q: &ast::Query) -> Result<ast::Query> {
    use std::ops::ControlFlow;

    use sqlparser::ast::{VisitMut, VisitorMut};

    let mut q = q.clone();
    let ast::SetExpr::Select(select) = q.body.as_mut() else { return Ok(q) };
    // The definitions in order; each may build on an earlier one.
    let mut defined: Vec<(String, ast::WindowSpec)> = Vec::new();
    for ast::NamedWindowDefinition(name, expr) in std::mem::take(&mut select.named_window) {
        let spec = match expr {
            ast::NamedWindowExpr::NamedWindow(base) => lookup(&defined, &base)?.clone(),
            ast::NamedWindowExpr::WindowSpec(spec) => resolve(&defined, spec)?,
        };
        let name = ident(&name);
        if defined.iter().any(|(n, _)| *n == name) {
            return Err(SqlError::new("42P20", format!("window \"{name}\" is already defined")));
        }
        defined.push((name, spec));
    }

    struct Inline<'a> {
        defined: &'a [(String, ast::WindowSpec)],
        depth: usize,
        error: Option<SqlError>,
    }
    impl VisitorMut for Inline<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
            let ast::Expr::Function(f) = e else { return ControlFlow::Continue(()) };
            if self.depth > 0 {
                return ControlFlow::Continue(());
            }
            let resolved = match f.over.take() {
                Some(ast::WindowType::NamedWindow(name)) => {
                    lookup(self.defined, &name).cloned().map(ast::WindowType::WindowSpec)
                }
                Some(ast::WindowType::WindowSpec(spec)) => {
                    resolve(self.defined, spec).map(ast::WindowType::WindowSpec)
                }
                None => return ControlFlow::Continue(()),
            };
            match resolved {
                Ok(w) => f.over = Some(w),
                Err(e) => {
                    self.error = Some(e);
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut inline = Inline { defined: &defined, depth: 0, error: None };
    let _ = select.projection.visit(&mut inline);
    if let Some(e) = inline.error.take() {
        return Err(e);
    }
    if let Some(order_by) = q.order_by.as_mut() {
        let _ = order_by.visit(&mut inline);
        if let Some(e) = inline.error.take() {
            return Err(e);
        }
    }
    Ok(q)
}

fn lookup<'a>(
    defined: &'a [(String, ast::WindowSpec)],
    name: &ast::Ident,
) -> Result<&'a ast::WindowSpec> {
    let name = ident(name);
    defined.iter().find(|(n, _)| *n == name).map(|(_, s)| s).ok_or_else(|| {
        SqlError::new(code::UNDEFINED_OBJECT, format!("window \"{name}\" does not exist"))
    })
}

/// A window spec that may name a window to build on (`(w ORDER BY x)`), spelled out.
fn resolve(
    defined: &[(String, ast::WindowSpec)],
    spec: ast::WindowSpec,
) -> Result<ast::WindowSpec> {
    let Some(base_name) = &spec.window_name else { return Ok(spec) };
    let base = lookup(defined, base_name)?;
    let name = ident(base_name);
    if !spec.partition_by.is_empty() {
        return Err(SqlError::new(
            "42P20",
            format!("cannot override PARTITION BY clause of window \"{name}\""),
        ));
    }
    if !spec.order_by.is_empty() && !base.order_by.is_empty() {
        return Err(SqlError::new(
            "42P20",
            format!("cannot override ORDER BY clause of window \"{name}\""),
        ));
    }
    if base.window_frame.is_some() {
        return Err(SqlError::new(
            "42P20",
            format!("cannot copy window \"{name}\" because it has a frame clause"),
        ));
    }
    Ok(ast::WindowSpec {
        window_name: None,
        partition_by: base.partition_by.clone(),
        order_by: if spec.order_by.is_empty() { base.order_by.clone() } else { spec.order_by },
        window_frame: spec.window_frame,
    })
}
