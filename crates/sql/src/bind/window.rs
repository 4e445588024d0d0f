//! Binding window functions: `f(…) OVER ([PARTITION BY …] [ORDER BY …] [frame])` in the
//! select list and ORDER BY. The call stays an `Expr::Window` node through grouping (so its
//! arguments may use aggregates); `take_windows` then moves every call into the plan's window
//! stage and leaves a column reference in its place.

use sqlparser::ast;

use crate::bind::*;
use crate::error::{Result, SqlError};
use crate::expr::*;
use crate::types::DataType;

/// A frame offset: a non-negative integer constant.
fn offset(e: &Option<Box<ast::Expr>>) -> Result<Option<u64>> {
    let Some(e) = e else { return Ok(None) };
    match e.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.parse::<u64>().map(Some).map_err(|_| {
                SqlError::new("22013", "frame starting or ending offset must not be negative")
            }),
            _ => Err(SqlError::unsupported("a frame offset that is not an integer constant")),
        },
        _ => Err(SqlError::unsupported("a frame offset that is not an integer constant")),
    }
}

fn bound(b: &ast::WindowFrameBound) -> Result<FrameBound> {
    Ok(match b {
        ast::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
        ast::WindowFrameBound::Preceding(e) => match offset(e)? {
            None => FrameBound::UnboundedPreceding,
            Some(n) => FrameBound::Preceding(n),
        },
        ast::WindowFrameBound::Following(e) => match offset(e)? {
            None => FrameBound::UnboundedFollowing,
            Some(n) => FrameBound::Following(n),
        },
    })
}

impl<'a> Planner<'a> {
    /// `name(args) OVER (…)`.
    pub(crate) fn window_call(
        &mut self,
        f: &ast::Function,
        name: &str,
        args: &[ast::Expr],
        star: bool,
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
        if f.filter.is_some() {
            return Err(SqlError::unsupported("FILTER on a window function"));
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
        let raw_first_type = bound_args.first().map_or(DataType::Unknown, |(_, t)| *t);
        let first_type =
            if raw_first_type == DataType::Unknown { DataType::Text } else { raw_first_type };
        let (func, ty) = match name {
            "row_number" => (WindowFunc::RowNumber, DataType::Int8),
            "rank" => (WindowFunc::Rank, DataType::Int8),
            "dense_rank" => (WindowFunc::DenseRank, DataType::Int8),
            "percent_rank" => (WindowFunc::PercentRank, DataType::Float8),
            "cume_dist" => (WindowFunc::CumeDist, DataType::Float8),
            "ntile" => (WindowFunc::Ntile, DataType::Int4),
            "lag" => (WindowFunc::Lag, first_type),
            "lead" => (WindowFunc::Lead, first_type),
            "first_value" => (WindowFunc::FirstValue, first_type),
            "last_value" => (WindowFunc::LastValue, first_type),
            "nth_value" => (WindowFunc::NthValue, first_type),
            "count" => (WindowFunc::Agg(AggFunc::Count), DataType::Int8),
            "sum" | "avg" | "min" | "max" | "bool_and" | "every" | "bool_or" => {
                let agg = match name {
                    "sum" => AggFunc::Sum,
                    "avg" => AggFunc::Avg,
                    "min" => AggFunc::Min,
                    "max" => AggFunc::Max,
                    "bool_or" => AggFunc::BoolOr,
                    _ => AggFunc::BoolAnd,
                };
                let ty = match crate::bind::function::aggregate_type(name, &agg, raw_first_type)? {
                    DataType::Unknown => DataType::Text,
                    t => t,
                };
                (WindowFunc::Agg(agg), ty)
            }
            other => return Err(SqlError::unsupported(format!("{other}() as a window function"))),
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
            WindowFunc::Agg(AggFunc::Count) if star => arity(0, 0)?,
            WindowFunc::Agg(_) => arity(1, 1)?,
        }
        if matches!(f.args, ast::FunctionArguments::List(ref l) if l.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct))
        {
            return Err(SqlError::unsupported("DISTINCT in a window function"));
        }
        // Arguments take the types the function wants.
        let mut fixed = Vec::with_capacity(bound_args.len());
        for (i, (x, t)) in bound_args.into_iter().enumerate() {
            let want = match (&func, i) {
                (WindowFunc::Ntile, _) | (WindowFunc::NthValue, 1) => DataType::Int8,
                (WindowFunc::Lag | WindowFunc::Lead, 1) => DataType::Int8,
                (WindowFunc::Lag | WindowFunc::Lead, 2) => ty,
                (WindowFunc::Agg(AggFunc::BoolAnd | AggFunc::BoolOr), _) => DataType::Bool,
                _ => t,
            };
            let (x, xt) = self.coerce(x, t, want)?;
            fixed.push(if xt != want && want != DataType::Unknown && xt != DataType::Unknown {
                Expr::Cast(Box::new(x), want)
            } else {
                x
            });
        }
        let mut partition = Vec::with_capacity(spec.partition_by.len());
        for p in &spec.partition_by {
            partition.push(self.expr(p, scope, true)?.0);
        }
        let mut order = Vec::with_capacity(spec.order_by.len());
        let mut directions = Vec::with_capacity(spec.order_by.len());
        for o in &spec.order_by {
            order.push(self.expr(&o.expr, scope, true)?.0);
            let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
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
                let start = bound(&wf.start_bound)?;
                let end = match &wf.end_bound {
                    Some(b) => bound(b)?,
                    None => FrameBound::CurrentRow,
                };
                if units == FrameUnits::Range
                    && [start, end]
                        .iter()
                        .any(|b| matches!(b, FrameBound::Preceding(_) | FrameBound::Following(_)))
                {
                    return Err(SqlError::unsupported("RANGE frames with an offset"));
                }
                if start == FrameBound::UnboundedFollowing {
                    return Err(SqlError::new(
                        "42P20",
                        "frame start cannot be UNBOUNDED FOLLOWING",
                    ));
                }
                if end == FrameBound::UnboundedPreceding {
                    return Err(SqlError::new("42P20", "frame end cannot be UNBOUNDED PRECEDING"));
                }
                (units, start, end)
            }
        };
        let call = WindowCall { func, args: fixed, partition, order, directions, frame, ty };
        Ok((Expr::Window(Box::new(call)), ty))
    }
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
