//! Functions made with CREATE FUNCTION, and calls of them.
//!
//! **Definitions.** `CREATE [OR REPLACE] FUNCTION name([arg type [DEFAULT e], …]) RETURNS
//! type | void | trigger LANGUAGE sql | plpgsql [IMMUTABLE | STABLE | VOLATILE] [STRICT] AS
//! $$ … $$` (or an SQL function's `RETURN e`) stores a `catalog::Function`, kept under its name
//! and argument types, so one name may have several (overloading). Its body is read when it
//! is made (a syntax error fails the CREATE); what it names is looked up when a statement
//! calls it, as PostgreSQL does with `check_function_bodies` off.
//!
//! **Calls.** A call of a name no built-in function has resolves among the functions of
//! that name ([`Planner::routine_call`]) by the number of arguments (defaults filling the
//! rest) and their types (an exact match preferred, then any that converts implicitly).
//! The function's body is bound then, inside the calling statement's binding, into a
//! [`Routine`]: an SQL function's statements become planned queries whose parameters are
//! the arguments (a name that is no column of the query is an argument, as in PostgreSQL); a
//! PL/pgSQL function becomes a `plpgsql::Program`. The call is an expression
//! (`Expr::Routine`) evaluated by the statement's subquery runner: a STRICT function of a
//! NULL argument is NULL without running; otherwise the program runs on the arguments,
//! reading in the statement's transaction and snapshot. A plan that calls a function
//! depends on its definition (a prepared statement is bound again after CREATE OR REPLACE).
//!
//! A function that writes (INSERT, UPDATE, DELETE in its body) runs those writes as
//! statements of their own when the statement is the call alone — `SELECT f(…)` without
//! FROM — or a PL/pgSQL `PERFORM f(…)` of one; called inside a query or a write, it is
//! refused (0A000) when it reaches a write. A call of a function inside its own body, or
//! inside a body it calls (recursion), refers to the routine being bound rather than
//! binding the body again; calls nest at most 500 deep when they run (54001), distinct
//! bodies 16 deep where they are bound.

use std::cell::RefCell;
use std::sync::{Arc, Weak};

use sqlparser::ast;

use crate::bind::{name_as_written, Planner, Scope};
use crate::catalog::{ArgMode, Function, FunctionArg, Returns, Table};
use crate::error::{code, Result, SqlError};
use crate::exec::plpgsql::{Binder, Kind, Program, Shape};
use crate::exec::select::{execute_select, Exec};
use crate::exec::write::Writer;
use crate::expr::{subquery_values, Ctx, Expr, SubPlan, SubqueryRunner, SubqueryValues};
use crate::parse::do_block;
use crate::plan::{FromItem, SelectPlan, Source};
use crate::prepared::Dependencies;
use crate::session::Output;
use crate::types::{DataType, Value};

/// The most function bodies one statement binds (its calls, the calls in their bodies, …).
const ROUTINES_BOUND_MAX: usize = 1000;

/// The most arguments a function takes or a call passes (PostgreSQL's FUNC_MAX_ARGS).
const ARGS_MAX: usize = 100;

/// A function's body bound for a call: what `Expr::Routine` runs.
pub struct Routine {
    /// The function as messages name it: `f(integer, text)`.
    pub(crate) name: String,
    /// STRICT: NULL for a NULL argument, without running.
    pub(crate) strict: bool,
    /// LANGUAGE sql (whose void is NULL, where PL/pgSQL's is the empty string).
    pub(crate) sql: bool,
    /// What a call gives.
    shape: Shape,
    /// The body (`None` for a call of a function from inside its own body).
    program: Option<Program>,
    /// A call of a function from inside its own body, or a body it calls (recursion): the
    /// routine being bound, whose program runs (weak: the call is part of its program).
    target: Option<Weak<Routine>>,
}

/// The functions whose bodies are being bound around a binding, innermost last: their ids
/// and their routines (a call of one of them is a recursive call of that routine).
pub(crate) type Binding = Vec<(u64, Weak<Routine>)>;

/// The deepest functions call one another at run time (recursion), PostgreSQL's
/// `max_stack_depth` in effect.
const CALL_DEPTH_MAX: usize = 500;

thread_local! {
    /// How deep the calls running on this thread nest.
    static CALL_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl std::fmt::Debug for Routine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)
    }
}

impl PartialEq for Routine {
    fn eq(&self, other: &Routine) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Routine {
    /// Whether its body writes (only a writer may run it). A recursive call writes when its
    /// function does — taken as true while that function is still being bound, its writes
    /// not known yet, so that a function reached through mutual recursion runs where its
    /// partner's writes may run.
    pub(crate) fn writes(&self) -> bool {
        match (&self.program, &self.target) {
            (Some(p), _) => p.writes,
            (None, Some(t)) => t.upgrade().is_none_or(|t| t.writes()),
            (None, None) => false,
        }
    }

    /// What a call gives.
    pub(crate) fn shape(&self) -> &Shape {
        &self.shape
    }
}

/// Whether `plan` calls a function whose body writes where the writer runs it
/// ([`Writer::call_alone`]): in a select list alone (no FROM, WHERE, grouping, ordering or
/// limit), or as its first FROM item (`SELECT * FROM f(…)`).
pub(crate) fn writing_call(plan: &SelectPlan) -> bool {
    let writes = |e: &Expr| {
        let mut writes = false;
        e.walk(&mut |x| {
            if let Expr::Routine(r, _) = x {
                writes |= r.writes();
            }
        });
        writes
    };
    if let Some(FromItem { source: Source::Call(call, ..), .. }) = plan.from.first() {
        return writes(call);
    }
    let alone = plan.from.is_empty()
        && plan.constant_filters.is_empty()
        && plan.grouping.is_none()
        && plan.having.is_none()
        && !plan.distinct
        && plan.distinct_on.is_empty()
        && plan.limit.is_none()
        && plan.offset.is_none()
        && plan.windows.is_empty();
    alone && plan.projection.iter().any(writes)
}

/// Runs a statement's subqueries and calls with the writer: its calls of functions run
/// their writes.
struct WriterRunner<'w, 'a> {
    w: RefCell<&'w mut Writer<'a>>,
}

impl SubqueryRunner for WriterRunner<'_, '_> {
    fn run(&self, plan: &SelectPlan, ctx: &Ctx) -> Result<Vec<Vec<Value>>> {
        let mut w = self.w.borrow_mut();
        let limits = w.limits.clone();
        let cell = RefCell::new(&mut w.ts.txn);
        let exec = Exec::new(&cell, &limits);
        execute_select(plan, &cell, &Ctx { runner: Some(&exec), ..*ctx }, &limits)
    }

    fn run_once(&self, plan: &SubPlan, ctx: &Ctx) -> Result<SubqueryValues> {
        Ok(subquery_values(self.run(&plan.0, &Ctx { outer: &[], ..*ctx })?))
    }

    fn call(&self, routine: &Routine, args: Vec<Value>, ctx: &Ctx) -> Result<Value> {
        let mut w = self.w.borrow_mut();
        call(routine, &mut **w, args, ctx.env)
    }
}

impl Writer<'_> {
    /// The rows of a query whose calls of a function that writes the writer runs
    /// ([`writing_call`]): a select list alone (its set-returning items expanded), or a
    /// query whose first FROM item is such a call — run first, its rows then read by the
    /// rest of the query.
    pub(crate) fn call_alone(&mut self, plan: &SelectPlan, ctx: &Ctx) -> Result<Vec<Vec<Value>>> {
        // A call with other reads around it (another FROM item, a subquery) may not change
        // the schema those reads were bound against.
        let guarded = !call_only(plan);
        self.ddl_guard += u32::from(guarded);
        let rows = self.call_alone_unguarded(plan, ctx);
        self.ddl_guard -= u32::from(guarded);
        rows
    }

    fn call_alone_unguarded(&mut self, plan: &SelectPlan, ctx: &Ctx) -> Result<Vec<Vec<Value>>> {
        let limits = self.limits.clone();
        let Some(FromItem { source: Source::Call(call, shape), .. }) = plan.from.first() else {
            let row = self.eval_alone(&plan.projection, ctx)?;
            if plan.expand.is_empty() {
                return Ok(vec![row]);
            }
            let mut out = Vec::new();
            crate::exec::select::expand_row(plan, row, &mut out, &limits)?;
            return Ok(out);
        };
        let value = self.eval_alone(std::slice::from_ref(&**call), ctx)?.pop();
        let rows = shape.rows(value.unwrap_or(Value::Null))?;
        let mut plan = plan.clone();
        plan.from[0].source = Source::Rows(Arc::new(rows));
        let cell = RefCell::new(&mut self.ts.txn);
        let exec = Exec::new(&cell, &limits);
        execute_select(&plan, &cell, &Ctx { runner: Some(&exec), ..*ctx }, &limits)
    }

    /// Evaluates expressions of no row, their calls run by the writer (so a function's or a
    /// procedure's writes run).
    pub(crate) fn eval_alone(&mut self, exprs: &[Expr], ctx: &Ctx) -> Result<Vec<Value>> {
        let runner = WriterRunner { w: RefCell::new(self) };
        let ctx = Ctx { runner: Some(&runner), ..*ctx };
        exprs.iter().map(|e| e.eval(&[], &ctx)).collect()
    }
}

/// Whether `plan` reads nothing but through its calls: `SELECT f(…), …` or `SELECT … FROM
/// f(…)`, without another FROM item or a subquery.
fn call_only(plan: &SelectPlan) -> bool {
    let subquery = |e: &Expr| {
        let mut found = false;
        e.walk(&mut |x| found |= matches!(x, Expr::Subquery(..)));
        found
    };
    let exprs = plan.projection.iter().chain(&plan.constant_filters).chain(plan.having.iter());
    match plan.from.as_slice() {
        [] => !exprs.into_iter().any(subquery),
        [item @ FromItem { source: Source::Call(call, _), .. }] => {
            !exprs.chain(&item.filters).chain(&item.on).chain([&**call]).any(subquery)
        }
        _ => false,
    }
}

/// Arguments in named notation: name and expression.
pub(crate) type Named = Vec<(String, ast::Expr)>;

/// Adds one argument of a call to the positional ones or, in named notation (`name => x`,
/// or the older `name := x`), to the named ones: a name given twice is an error, and so is a
/// positional argument after a named one, as in PostgreSQL.
pub(crate) fn push_argument(
    a: &ast::FunctionArg,
    args: &mut Vec<ast::Expr>,
    named: &mut Named,
) -> Result<()> {
    // `name := x`: an assignment to an identifier.
    let assigned = match a {
        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::Assignment,
            right,
        })) => match left.as_ref() {
            ast::Expr::Identifier(i) => Some((i, right.as_ref())),
            _ => None,
        },
        _ => None,
    };
    let (name, x) = match (assigned, a) {
        (Some(named_arg), _) => named_arg,
        (None, ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x))) => {
            if !named.is_empty() {
                return Err(SqlError::syntax("positional argument cannot follow named argument"));
            }
            args.push(x.clone());
            return Ok(());
        }
        (
            None,
            ast::FunctionArg::Named { name, arg: ast::FunctionArgExpr::Expr(x), .. }
            | ast::FunctionArg::ExprNamed {
                name: ast::Expr::Identifier(name),
                arg: ast::FunctionArgExpr::Expr(x),
                ..
            },
        ) => (name, x),
        (None, other) => return Err(SqlError::unsupported(format!("the argument {other}"))),
    };
    let n = crate::bind::ident(name);
    if named.iter().any(|(m, _)| *m == n) {
        return Err(SqlError::syntax(format!("argument name \"{n}\" used more than once")));
    }
    named.push((n, x.clone()));
    Ok(())
}

/// A call's arguments: the positional ones, and the named ones.
fn call_arguments(f: &ast::Function) -> Result<(Vec<ast::Expr>, Named)> {
    let mut args = Vec::new();
    let mut named = Named::new();
    if let ast::FunctionArguments::List(list) = &f.args {
        if !list.clauses.is_empty() || list.duplicate_treatment.is_some() {
            return Err(SqlError::unsupported(format!("this call of {}", f.name)));
        }
        for a in &list.args {
            push_argument(a, &mut args, &mut named)?;
        }
    }
    Ok((args, named))
}

/// The error for a call no function takes (`name` in named notation), as PostgreSQL words
/// it: its arguments' types bound in no scope.
pub(crate) fn no_call(
    planner: &mut Planner,
    kind: &str,
    name: &str,
    args: &[ast::Expr],
    named: &[(String, ast::Expr)],
) -> Result<SqlError> {
    let mut types = Vec::with_capacity(args.len() + named.len());
    for a in args.iter().chain(named.iter().map(|(_, x)| x)) {
        types.push(planner.expr(a, &Scope::default(), false)?.1);
    }
    Ok(no_function(kind, name, &types, named))
}

/// An error about a call — no such function, not unique, a procedure called as a function
/// or the reverse, too many arguments — placed at the call's name, as PostgreSQL places it.
pub(crate) fn at_call(f: &ast::Function, e: SqlError) -> SqlError {
    let about_call =
        [code::UNDEFINED_FUNCTION, "42725", code::WRONG_OBJECT_TYPE, code::TOO_MANY_ARGUMENTS]
            .contains(&e.code);
    if e.location.is_some() || !about_call {
        return e;
    }
    let at = match f.name.0.first() {
        Some(ast::ObjectNamePart::Identifier(i)) => crate::bind::location_of(i),
        _ => None,
    };
    e.located(at)
}

/// The error for a function that does not exist, as PostgreSQL words it (the last of
/// `types` are those of the arguments `named`).
fn no_function(
    kind: &str,
    name: &str,
    types: &[DataType],
    named: &[(String, ast::Expr)],
) -> SqlError {
    let positional = types.len() - named.len();
    let shown: Vec<String> = types
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let t = if *t == DataType::Unknown { "unknown".into() } else { t.sql_name() };
            match k.checked_sub(positional) {
                Some(j) => format!("{} => {t}", named[j].0),
                None => t,
            }
        })
        .collect();
    SqlError::new(
        code::UNDEFINED_FUNCTION,
        format!("{kind} {}({}) does not exist", crate::catalog::unqualified(name), shown.join(", ")),
    )
    .hint(format!("No {kind} matches the given name and argument types. You might need to add explicit type casts."))
}

impl Planner<'_> {
    /// A call of a function made with CREATE FUNCTION (`None` when no function of that name
    /// returns a value): the arguments bound and converted to the function's types, its
    /// body bound. `args` are the call's arguments, positional.
    pub(crate) fn routine_call(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        named: &[(String, ast::Expr)],
        scope: &Scope,
        aggs: bool,
    ) -> Result<Option<(Expr, DataType)>> {
        let set_item = std::mem::take(&mut self.set_item);
        let bound = self.resolve_routine(name, args, named, scope, aggs, false)?;
        if let Some((Expr::Routine(r, _), _)) = &bound {
            let shape = r.shape();
            if shape.set && shape.columns.is_none() && set_item {
                return Ok(bound);
            }
            if shape.set && shape.columns.is_none() {
                return Err(SqlError::unsupported(format!(
                    "set-returning function {} inside an expression or outside a select list",
                    r.name
                ))
                .hint("Kiln takes a set-returning function as a whole select-list item or as a FROM item (SELECT * FROM f(…))."));
            }
            if shape.columns.is_some() {
                return Err(SqlError::unsupported(format!(
                    "the row (record) of function {} as a value",
                    r.name
                ))
                .hint("Kiln has no record values: call it in FROM (SELECT * FROM f(…)), or take one column, (f(…)).col."));
            }
        }
        Ok(bound)
    }

    /// Whether a function made with CREATE FUNCTION has this name.
    pub(crate) fn has_routine(&mut self, name: &str) -> Result<bool> {
        let name = name.strip_prefix("public.").unwrap_or(name);
        Ok(!self.catalog.functions_named(self.txn, self.db, name)?.is_empty())
    }

    /// Whether a function made with CREATE FUNCTION of this name returns rows — a set, or
    /// a row of columns — so that a call of it is bound by [`Planner::routine_rows`].
    pub(crate) fn returns_rows(&mut self, name: &str) -> Result<bool> {
        let name = name.strip_prefix("public.").unwrap_or(name);
        let functions = self.catalog.functions_named(self.txn, self.db, name)?;
        Ok(functions
            .iter()
            .any(|f| f.set || matches!(f.returns, Returns::Record | Returns::Row(_))))
    }

    /// A call, in FROM or as a select-list item, of a function made with CREATE FUNCTION:
    /// the call and what it gives (`None` when no function has the name).
    pub(crate) fn routine_rows(
        &mut self,
        f: &ast::Function,
        scope: &Scope,
    ) -> Result<Option<(Expr, Shape)>> {
        let bound = (|| {
            let name = name_as_written(&f.name)?;
            let (args, named) = call_arguments(f)?;
            match self.resolve_routine(&name, &args, &named, scope, false, false)? {
                Some((Expr::Routine(r, args), _)) => {
                    let shape = r.shape().clone();
                    Ok(Some((Expr::Routine(r, args), shape)))
                }
                Some(_) => Err(SqlError::new(code::INTERNAL, "a routine call is no routine")),
                None => {
                    // The name has functions, but none this call fits.
                    if self.returns_rows(&name)? {
                        return Err(no_call(self, "function", &name, &args, &named)?);
                    }
                    Ok(None)
                }
            }
        })();
        bound.map_err(|e| at_call(f, e))
    }

    /// `CALL name(args)`: the call of the procedure, to be run by the writer.
    pub(crate) fn procedure_call(&mut self, f: &ast::Function) -> Result<Expr> {
        self.call_of_procedure(f).map_err(|e| at_call(f, e))
    }

    fn call_of_procedure(&mut self, f: &ast::Function) -> Result<Expr> {
        let name = name_as_written(&f.name)?;
        let (args, named) = call_arguments(f)?;
        match self.resolve_routine(&name, &args, &named, &Scope::default(), false, true)? {
            Some((call, _)) => Ok(call),
            None => Err(no_call(self, "procedure", &name, &args, &named)?),
        }
    }

    /// A call of a function (`procedures`: of a procedure) of that name, its arguments
    /// bound and its body bound (`None` when none has the name).
    fn resolve_routine(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        named: &[(String, ast::Expr)],
        scope: &Scope,
        aggs: bool,
        procedures: bool,
    ) -> Result<Option<(Expr, DataType)>> {
        if args.len() + named.len() > ARGS_MAX {
            return Err(SqlError::new(
                code::TOO_MANY_ARGUMENTS,
                format!("cannot pass more than {ARGS_MAX} arguments to a function"),
            ));
        }
        let name = name.strip_prefix("public.").unwrap_or(name);
        let candidates: Vec<Function> = self
            .catalog
            .functions_named(self.txn, self.db, name)?
            .into_iter()
            .filter(|f| f.aggregate.is_none())
            .filter(|f| match f.returns {
                Returns::Value(_) | Returns::Void | Returns::Record | Returns::Row(_) => {
                    !procedures
                }
                Returns::Procedure => procedures,
                Returns::Trigger => false,
            })
            .collect();
        if candidates.is_empty() {
            if !procedures
                && self
                    .catalog
                    .functions_named(self.txn, self.db, name)?
                    .iter()
                    .any(|f| f.returns == Returns::Procedure)
            {
                let mut types = Vec::with_capacity(args.len());
                for a in args {
                    types.push(self.expr(a, scope, aggs)?.1.sql_name());
                }
                return Err(SqlError::new(
                    code::WRONG_OBJECT_TYPE,
                    format!("{name}({}) is a procedure", types.join(", ")),
                )
                .hint("To call a procedure, use CALL."));
            }
            return Ok(None);
        }
        let mut bound = Vec::with_capacity(args.len() + named.len());
        let mut types = Vec::with_capacity(args.len() + named.len());
        for a in args.iter().chain(named.iter().map(|(_, x)| x)) {
            let (x, t) = self.expr(a, scope, aggs)?;
            bound.push(x);
            types.push(t);
        }
        // Which given argument each parameter of `f` takes (`None`: its default), when the
        // call fits its parameters: positional ones in order, named ones by name.
        let fitting = |f: &Function| -> Option<Vec<Option<usize>>> {
            let inputs: Vec<&FunctionArg> = f.inputs().collect();
            if args.len() > inputs.len() {
                return None;
            }
            let mut slots: Vec<Option<usize>> =
                (0..inputs.len()).map(|k| (k < args.len()).then_some(k)).collect();
            for (j, (n, _)) in named.iter().enumerate() {
                let k = inputs.iter().position(|a| a.name.as_deref() == Some(n.as_str()))?;
                if slots[k].is_some() {
                    return None;
                }
                slots[k] = Some(args.len() + j);
            }
            let complete =
                slots.iter().zip(&inputs).all(|(s, a)| s.is_some() || a.default.is_some());
            complete.then_some(slots)
        };
        // Each candidate the call fits whose types the arguments have or convert to
        // implicitly, ranked by how many they have exactly.
        let mut best: Vec<(usize, &Function, Vec<Option<usize>>)> = Vec::new();
        for f in &candidates {
            let Some(slots) = fitting(f) else { continue };
            let mut exact = 0;
            let fits = slots.iter().zip(f.inputs()).all(|(s, a)| {
                let Some(i) = s else { return true };
                let t = types[*i];
                if t == a.ty.unmodified() || t == a.ty {
                    exact += 1;
                    true
                } else {
                    t == DataType::Unknown || implicitly_converts(t, a.ty)
                }
            });
            if fits {
                match best.first() {
                    Some((e, _, _)) if *e > exact => {}
                    Some((e, _, _)) if *e == exact => best.push((exact, f, slots)),
                    _ => best = vec![(exact, f, slots)],
                }
            }
        }
        // An untyped literal prefers a string type, as PostgreSQL's resolution prefers the
        // string category for unknown arguments.
        if best.len() > 1 {
            let stringy = |f: &Function, slots: &[Option<usize>]| {
                slots
                    .iter()
                    .zip(f.inputs())
                    .filter(|(s, a)| {
                        s.is_some_and(|i| types[i] == DataType::Unknown)
                            && matches!(a.ty, DataType::Text | DataType::Varchar(_))
                    })
                    .count()
            };
            let most = best.iter().map(|(_, f, s)| stringy(f, s)).max().unwrap_or(0);
            best.retain(|(_, f, s)| stringy(f, s) == most);
        }
        let (f, slots) = match best.as_slice() {
            [] => {
                let kind = if procedures { "procedure" } else { "function" };
                return Err(no_function(kind, name, &types, named));
            }
            [(_, f, slots)] => ((*f).clone(), slots.clone()),
            _ => {
                let shown: Vec<String> = types.iter().map(|t| t.sql_name()).collect();
                return Err(SqlError::new(
                    "42725",
                    format!("function {name}({}) is not unique", shown.join(", ")),
                )
                .hint("Could not choose a best candidate function. You might need to add explicit type casts."));
            }
        };
        let mut call_args = Vec::with_capacity(f.args.len());
        for (a, slot) in f.inputs().zip(slots) {
            let (x, t) = match slot {
                Some(i) => (bound[i].clone(), types[i]),
                None => {
                    let default = a.default.as_deref().expect("a default fills a missing argument");
                    self.expr(&crate::parse::parse_expr(default)?, &Scope::default(), false)?
                }
            };
            let (x, t) = self.coerce(x, t, a.ty)?;
            call_args.push(if t == a.ty { x } else { Expr::Cast(Box::new(x), a.ty) });
        }
        let routine = self.bind_routine(&f)?;
        self.calls_writing |= routine.writes();
        let ty = routine.shape().value.unwrap_or(DataType::Unknown);
        Ok(Some((Expr::Routine(routine, call_args), ty)))
    }

    /// The columns of a table's or view's row type (`RETURNS SETOF t`), as it has them now.
    fn row_type(&mut self, name: &str) -> Result<Vec<(String, DataType)>> {
        if let Some(t) = self.table(name)? {
            return Ok(t.columns.iter().map(|c| (c.name.clone(), c.ty)).collect());
        }
        if let Some(v) = self.catalog.view(self.txn, self.db, name)? {
            if !self.views.iter().any(|x| Arc::ptr_eq(x, &v)) {
                self.views.push(v.clone());
            }
            return Ok(v.column_names().into_iter().zip(v.columns.iter().map(|c| c.1)).collect());
        }
        Err(SqlError::new(
            code::UNDEFINED_OBJECT,
            format!("type \"{}\" does not exist", crate::catalog::unqualified(name)),
        ))
    }

    /// What a call of `f` gives: its shape, a table's row type looked up now.
    fn shape_of(&mut self, f: &Function) -> Result<Shape> {
        let outputs: Vec<(usize, &FunctionArg)> =
            f.args.iter().enumerate().filter(|(_, a)| a.mode.output()).collect();
        let named =
            |k: usize, a: &FunctionArg| a.name.clone().unwrap_or(format!("column{}", k + 1));
        let mut shape = Shape {
            set: f.set,
            column: crate::catalog::unqualified(&f.name).to_string(),
            out: outputs.iter().map(|(k, _)| *k).collect(),
            ..Shape::default()
        };
        match &f.returns {
            Returns::Value(t) => {
                shape.value = Some(*t);
                if let [(k, a)] = outputs.as_slice() {
                    shape.column = named(*k, a);
                }
            }
            Returns::Record => {
                let columns = outputs.iter().enumerate().map(|(k, (_, a))| (named(k, a), a.ty));
                shape.columns = Some(columns.collect());
            }
            Returns::Row(table) => {
                let columns = self.row_type(table)?;
                shape.columns = Some(columns);
            }
            Returns::Void | Returns::Procedure | Returns::Trigger => {}
        }
        Ok(shape)
    }

    /// Binds a function's body for a call from this statement (a call from inside the body
    /// itself, or from a body it calls, refers to the routine being bound: recursion).
    fn bind_routine(&mut self, f: &Function) -> Result<Arc<Routine>> {
        let shape = self.shape_of(f)?;
        let (name, strict, sql) = (f.signature(), f.strict, f.language == "sql");
        if let Some((_, target)) = self.routines.iter().find(|(id, _)| *id == f.id) {
            let target = Some(target.clone());
            return Ok(Arc::new(Routine { name, strict, sql, shape, program: None, target }));
        }
        let bound = self.routines_bound.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if bound > ROUTINES_BOUND_MAX {
            return Err(SqlError::new(
                code::STATEMENT_TOO_COMPLEX,
                format!("statement calls more than {ROUTINES_BOUND_MAX} function bodies"),
            )
            .hint("Each call of a function binds its body, and the calls in it theirs."));
        }
        // The routine is made around its body, so that the body's calls of it can refer to
        // it before it exists.
        let mut failed = None;
        let mut deps = Dependencies::new();
        let routine = Arc::new_cyclic(|me| {
            let mut routines = self.routines.clone();
            routines.push((f.id, me.clone()));
            let mut binder = Binder {
                txn: self.txn,
                catalog: self.catalog,
                database: self.db,
                env: self.env,
                routines,
                sql_args: None,
                bound: self.routines_bound.clone(),
                defer: true,
            };
            let bound = match f.language.as_str() {
                "sql" => {
                    let inputs = f.inputs().map(|a| (a.name.clone(), a.ty)).collect();
                    binder.sql(&f.name, inputs, shape.clone(), &f.body)
                }
                _ => {
                    let args = f.args.iter().map(|a| (a.name.clone(), a.ty)).collect();
                    let inputs =
                        f.args.iter().enumerate().filter(|(_, a)| a.mode.input()).map(|(k, _)| k);
                    let kind = Kind::Function {
                        name: f.name.clone(),
                        args,
                        inputs: inputs.collect(),
                        shape: shape.clone(),
                    };
                    binder.plpgsql(kind, &f.body, None)
                }
            };
            let program = match bound {
                Ok((program, d)) => {
                    deps = d;
                    Some(program)
                }
                Err(mut e) => {
                    // A place in the body is no place in the calling statement.
                    (e.location, e.position) = (None, None);
                    failed = Some(e);
                    None
                }
            };
            Routine { name, strict, sql, shape, program, target: None }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        self.depend_on(&deps);
        self.functions.push(f.clone());
        Ok(routine)
    }
}

/// Whether `check_function_bodies` is on.
pub(crate) fn check_bodies(settings: &std::collections::BTreeMap<String, String>) -> bool {
    settings
        .get("check_function_bodies")
        .is_none_or(|v| !matches!(v.to_lowercase().as_str(), "off" | "false" | "no" | "0"))
}

/// Whether a value of `from` converts implicitly to `to` for a function's argument, as
/// PostgreSQL's implicit casts do: a number to a wider one, a date or timestamp to a
/// timestamp (with time zone), a string type to another, any type to itself.
pub(crate) fn implicitly_converts(from: DataType, to: DataType) -> bool {
    use DataType as T;
    let rank = |t: DataType| match t {
        T::Int2 => Some(0),
        T::Int4 => Some(1),
        T::Int8 => Some(2),
        T::Numeric(_) => Some(3),
        T::Float4 => Some(4),
        T::Float8 => Some(5),
        _ => None,
    };
    if let (Some(a), Some(b)) = (rank(from), rank(to)) {
        return a <= b;
    }
    let text = |t: DataType| matches!(t, T::Text | T::Varchar(_) | T::Char(_) | T::Name);
    from.unmodified() == to.unmodified()
        || (text(from) && text(to))
        || matches!(
            (from, to),
            (T::Date, T::Timestamp(_) | T::TimestampTz(_)) | (T::Timestamp(_), T::TimestampTz(_))
        )
}

/// The type a `CREATE FUNCTION` names for an argument or a result.
fn function_type(ty: &ast::DataType, w: &mut Writer, database: &str) -> Result<DataType> {
    crate::bind::resolve_type(ty, &w.db.catalog, &mut w.ts.txn, database)
}

/// A type as PostgreSQL's grammar names it in a message: the SQL standard's type words as
/// `pg_catalog.int4` …, any other name as written.
pub(crate) fn grammar_type(ty: &ast::DataType) -> String {
    let written = ty.to_string();
    let bare = written.split('(').next().unwrap_or(&written).trim().to_uppercase();
    let internal = match bare.as_str() {
        "INT" | "INTEGER" => "int4",
        "BIGINT" => "int8",
        "SMALLINT" => "int2",
        "REAL" => "float4",
        "FLOAT" | "DOUBLE PRECISION" => "float8",
        "NUMERIC" | "DECIMAL" | "DEC" => "numeric",
        "BOOLEAN" => "bool",
        "VARCHAR" | "CHARACTER VARYING" => "varchar",
        "CHAR" | "CHARACTER" => "bpchar",
        "TIMESTAMP" | "TIMESTAMP WITHOUT TIME ZONE" => "timestamp",
        "TIMESTAMP WITH TIME ZONE" => "timestamptz",
        "TIME" | "TIME WITHOUT TIME ZONE" => "time",
        "INTERVAL" => "interval",
        _ => return written.to_lowercase(),
    };
    format!("pg_catalog.{internal}")
}

/// Whether a type as written is the pseudo-type `name` (`trigger`, `void`).
fn is_pseudo(ty: &ast::DataType, name: &str) -> bool {
    match ty {
        ast::DataType::Trigger => name == "trigger",
        ast::DataType::Custom(n, _) => n.to_string().eq_ignore_ascii_case(name),
        _ => false,
    }
}

impl Writer<'_> {
    /// The table or view a `RETURNS` type names (its row type), when it names one.
    fn row_type_named(&mut self, ty: &ast::DataType, database: &str) -> Result<Option<String>> {
        let ast::DataType::Custom(name, modifiers) = ty else { return Ok(None) };
        if !modifiers.is_empty() {
            return Ok(None);
        }
        let name = crate::bind::object_name(name)?;
        if crate::bind::resolve_type(ty, &self.db.catalog, &mut self.ts.txn, database).is_ok() {
            return Ok(None);
        }
        let catalog = &self.db.catalog;
        if let Some(t) = catalog.table(&mut self.ts.txn, database, &name)? {
            return Ok(Some(t.name.clone()));
        }
        Ok(catalog.view(&mut self.ts.txn, database, &name)?.map(|v| v.name.clone()))
    }

    /// `CREATE [OR REPLACE] FUNCTION`.
    /// With `check_bodies` (the `check_function_bodies` setting, which pg_dump turns off)
    /// an SQL function's statements are bound now, so that one naming what does not exist
    /// or returning the wrong shape fails the CREATE, as in PostgreSQL.
    pub(crate) fn create_function(
        &mut self,
        cf: &ast::CreateFunction,
        database: &str,
        check_bodies: bool,
        env: &dyn crate::expr::Env,
        procedure: bool,
    ) -> Result<Output> {
        let kind = if procedure { "procedure" } else { "function" };
        let name = name_as_written(&cf.name)?;
        let name = name.strip_prefix("public.").map(str::to_string).unwrap_or(name);
        if name.contains('.') {
            return Err(SqlError::unsupported("functions in a schema other than public"));
        }
        if cf.args.as_ref().is_some_and(|a| a.len() > ARGS_MAX) {
            return Err(SqlError::new(
                code::TOO_MANY_ARGUMENTS,
                format!("functions cannot have more than {ARGS_MAX} arguments"),
            ));
        }
        let mut args: Vec<FunctionArg> = Vec::new();
        for a in cf.args.iter().flatten() {
            let mode = match a.mode {
                None | Some(ast::ArgMode::In) => ArgMode::In,
                Some(ast::ArgMode::Out) => ArgMode::Out,
                Some(ast::ArgMode::InOut) => ArgMode::InOut,
                Some(ast::ArgMode::Variadic) => {
                    return Err(SqlError::unsupported("VARIADIC arguments")
                        .hint("Pass an array argument instead."))
                }
            };
            if procedure && mode != ArgMode::In {
                return Err(SqlError::unsupported("OUT and INOUT arguments of procedures")
                    .hint("A function with OUT arguments returns them as a row."));
            }
            let default = a.default_expr.as_ref().map(|e| e.to_string());
            if default.is_some() && !mode.input() {
                return Err(SqlError::new(
                    code::INVALID_FUNCTION_DEFINITION,
                    "only input parameters can have default values",
                ));
            }
            if mode.input()
                && default.is_none()
                && args.iter().rev().find(|p| p.mode.input()).is_some_and(|p| p.default.is_some())
            {
                return Err(SqlError::new(
                    code::INVALID_FUNCTION_DEFINITION,
                    "input parameters after one with a default value must also have defaults",
                ));
            }
            let arg_name = a.name.as_ref().map(crate::bind::ident);
            // As in PostgreSQL, an IN and an OUT argument may share a name; two inputs or
            // two outputs may not.
            let clash = |p: &FunctionArg| {
                p.name == arg_name
                    && ((p.mode.input() && mode.input()) || (p.mode.output() && mode.output()))
            };
            if let Some(n) = &arg_name {
                if args.iter().any(clash) {
                    return Err(SqlError::new(
                        code::INVALID_FUNCTION_DEFINITION,
                        format!("parameter name \"{n}\" used more than once"),
                    ));
                }
            }
            // As in PostgreSQL, an argument's type modifier is not kept (`varchar(10)` takes
            // any varchar).
            let ty = function_type(&a.data_type, self, database)?.unmodified();
            args.push(FunctionArg { name: arg_name, ty, default, mode });
        }
        let outputs: Vec<DataType> =
            args.iter().filter(|a| a.mode.output()).map(|a| a.ty).collect();
        // The result the OUT arguments make: their one type, or a record of them.
        let from_outputs = match outputs.as_slice() {
            [] => None,
            [t] => Some(Returns::Value(*t)),
            _ => Some(Returns::Record),
        };
        let mut set = false;
        let returns = match &cf.return_type {
            None => match from_outputs.clone() {
                Some(r) => r,
                None if procedure => Returns::Procedure,
                None => {
                    return Err(SqlError::new(
                        code::INVALID_FUNCTION_DEFINITION,
                        "function result type must be specified",
                    ))
                }
            },
            Some(ast::FunctionReturnType::DataType(ast::DataType::Table(columns))) => {
                if from_outputs.is_some() {
                    // A syntax error in PostgreSQL's grammar.
                    return Err(SqlError::syntax(
                        "OUT and INOUT arguments aren't allowed in TABLE functions",
                    ));
                }
                let columns = columns.as_deref().unwrap_or_default();
                if columns.is_empty() {
                    return Err(SqlError::syntax("RETURNS TABLE needs its columns"));
                }
                for c in columns {
                    let name = crate::bind::ident(&c.name);
                    if args.iter().any(|p| p.mode.output() && p.name.as_deref() == Some(&name)) {
                        return Err(SqlError::new(
                            code::INVALID_FUNCTION_DEFINITION,
                            format!("parameter name \"{name}\" used more than once"),
                        ));
                    }
                    let ty = function_type(&c.data_type, self, database)?.unmodified();
                    args.push(FunctionArg {
                        name: Some(name),
                        ty,
                        default: None,
                        mode: ArgMode::Table,
                    });
                }
                set = true;
                match columns {
                    [_] => Returns::Value(args.last().expect("a column").ty),
                    _ => Returns::Record,
                }
            }
            Some(ast::FunctionReturnType::DataType(t) | ast::FunctionReturnType::SetOf(t)) => {
                set = matches!(cf.return_type, Some(ast::FunctionReturnType::SetOf(_)));
                let declared = if is_pseudo(t, "trigger") {
                    Returns::Trigger
                } else if is_pseudo(t, "void") {
                    Returns::Void
                } else if is_pseudo(t, "record") {
                    Returns::Record
                } else if let Some(row) = self.row_type_named(t, database)? {
                    Returns::Row(row)
                } else {
                    Returns::Value(function_type(t, self, database)?.unmodified())
                };
                if set && declared == Returns::Trigger {
                    return Err(SqlError::new(
                        code::INVALID_FUNCTION_DEFINITION,
                        "function returning a set cannot return type trigger",
                    ));
                }
                match (&from_outputs, &declared) {
                    (None, Returns::Record) => return Err(SqlError::unsupported(
                        "functions returning record without OUT arguments",
                    )
                    .hint(
                        "Name the columns: RETURNS TABLE (a integer, b text), or OUT arguments.",
                    )),
                    (Some(Returns::Record), Returns::Record) | (None, _) => declared,
                    (Some(Returns::Value(o)), Returns::Value(d)) if o == d => declared,
                    (Some(Returns::Record), _) => {
                        return Err(SqlError::new(
                            code::INVALID_FUNCTION_DEFINITION,
                            "function result type must be record because of OUT parameters",
                        ))
                    }
                    (Some(Returns::Value(o)), _) => {
                        return Err(SqlError::new(
                            code::INVALID_FUNCTION_DEFINITION,
                            format!(
                                "function result type must be {} because of OUT parameters",
                                o.sql_name()
                            ),
                        ))
                    }
                    (Some(_), _) => declared,
                }
            }
        };
        let returns = if procedure { Returns::Procedure } else { returns };
        if returns == Returns::Trigger && !args.is_empty() {
            return Err(SqlError::new(
                code::INVALID_FUNCTION_DEFINITION,
                "trigger functions cannot have declared arguments",
            )
            .hint("The arguments of the trigger can be accessed through TG_NARGS and TG_ARGV instead."));
        }
        let standard = matches!(cf.function_body, Some(ast::CreateFunctionBody::Return(_)));
        let language = match cf.language.as_ref().map(|l| l.value.to_lowercase()) {
            Some(l) => l,
            None if standard => "sql".into(),
            None => {
                return Err(SqlError::new(
                    code::INVALID_FUNCTION_DEFINITION,
                    "no language specified",
                ))
            }
        };
        let body = match &cf.function_body {
            Some(ast::CreateFunctionBody::Return(e)) if language == "sql" => format!("SELECT {e}"),
            body => body_text(body)?,
        };
        match language.as_str() {
            "plpgsql" => {
                let read = do_block::function_body(&body)?;
                // RETURN's forms fit the function's kind, as PL/pgSQL checks when it reads
                // a function.
                let out = args.iter().any(|a| a.mode.output());
                let value =
                    !matches!(returns, Returns::Void | Returns::Procedure | Returns::Trigger);
                let block = do_block::Stmt::Block(read.body);
                if returns != Returns::Trigger {
                    if let Some(e) = crate::exec::plpgsql::return_misfit(&block, set, out, value) {
                        return Err(e);
                    }
                }
            }
            "sql" if returns == Returns::Trigger => {
                return Err(SqlError::new(
                    code::INVALID_FUNCTION_DEFINITION,
                    "SQL functions cannot return type trigger",
                ))
            }
            "sql" => {
                crate::parse::parse(&body)?;
            }
            other @ ("c" | "internal") => {
                return Err(SqlError::unsupported(format!("functions in language {other}"))
                    .hint("Kiln runs functions in LANGUAGE sql and LANGUAGE plpgsql."))
            }
            other => {
                return Err(SqlError::new(
                    code::UNDEFINED_OBJECT,
                    format!("language \"{other}\" does not exist"),
                ))
            }
        }
        let types: Vec<DataType> = args.iter().filter(|a| a.mode.input()).map(|a| a.ty).collect();
        let existing = self.db.catalog.function_with(&mut self.ts.txn, database, &name, &types)?;
        let comment = existing.as_ref().and_then(|f| f.comment.clone());
        let f = Function {
            id: 0,
            name: name.clone(),
            language,
            body,
            comment,
            args,
            returns,
            set,
            volatility: match cf.behavior {
                Some(ast::FunctionBehavior::Immutable) => 'i',
                Some(ast::FunctionBehavior::Stable) => 's',
                _ => 'v',
            },
            strict: matches!(
                cf.called_on_null,
                Some(
                    ast::FunctionCalledOnNull::Strict
                        | ast::FunctionCalledOnNull::ReturnsNullOnNullInput
                )
            ),
            aggregate: None,
        };
        let id = match existing {
            Some(old) if old.aggregate.is_some() => {
                return Err(SqlError::new(
                    code::WRONG_OBJECT_TYPE,
                    format!("function \"{name}\" is an aggregate function"),
                ))
            }
            Some(old) if cf.or_replace => {
                if (old.returns == Returns::Procedure) != procedure {
                    return Err(SqlError::new(
                        code::WRONG_OBJECT_TYPE,
                        "cannot change routine kind",
                    )
                    .detail(if procedure {
                        format!("\"{name}\" is a function.")
                    } else {
                        format!("\"{name}\" is a procedure.")
                    }));
                }
                let outputs = |f: &Function| -> Vec<(Option<String>, DataType)> {
                    f.outputs().map(|a| (a.name.clone(), a.ty)).collect()
                };
                if outputs(&old) != outputs(&f) && old.returns == f.returns {
                    return Err(SqlError::new(
                        code::INVALID_FUNCTION_DEFINITION,
                        "cannot change return type of existing function",
                    )
                    .detail("Row type defined by OUT parameters is different.")
                    .hint(format!(
                        "Use DROP FUNCTION {} first.",
                        old.signature().replace(", ", ",")
                    )));
                }
                if old.returns != f.returns || old.set != f.set || outputs(&old) != outputs(&f) {
                    return Err(SqlError::new(
                        code::INVALID_FUNCTION_DEFINITION,
                        "cannot change return type of existing function",
                    )
                    .hint(format!(
                        "Use DROP FUNCTION {} first.",
                        old.signature().replace(", ", ",")
                    )));
                }
                old.id
            }
            Some(_) => {
                return Err(SqlError::new(
                    code::DUPLICATE_FUNCTION,
                    format!("{kind} \"{name}\" already exists with same argument types"),
                ))
            }
            None => self.db.catalog.next_id(&mut self.ts.txn)?,
        };
        let f = Function { id, ..f };
        self.db.catalog.put_function(&mut self.ts.txn, database, &f)?;
        if check_bodies && f.language == "sql" {
            let shape = {
                let system = crate::exec::constraints::NoSystemTables;
                let catalog = &self.db.catalog;
                let mut planner =
                    Planner::new(&mut self.ts.txn, catalog, database, vec![], &system, env);
                planner.shape_of(&f)?
            };
            let mut binder = Binder {
                txn: &mut self.ts.txn,
                catalog: &self.db.catalog,
                database,
                env,
                // Its calls of itself refer to nothing: the body is bound, not run.
                routines: vec![(f.id, Weak::new())],
                sql_args: None,
                bound: Default::default(),
                defer: false,
            };
            let args = f.inputs().map(|a| (a.name.clone(), a.ty)).collect();
            match binder.sql(&f.name, args, shape, &f.body) {
                Ok(_) => {}
                Err(mut e) if e.context_text().is_none() => {
                    // A place in the body is no place in the CREATE statement.
                    (e.location, e.position) = (None, None);
                    return Err(e.context(format!("SQL function \"{}\"", f.name)));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Output::Command(if procedure { "CREATE PROCEDURE" } else { "CREATE FUNCTION" }.into()))
    }

    /// The function a DROP or ALTER names: by its argument types when they are given, by
    /// its name when it is the only one (`None`: there is none).
    fn named_function(
        &mut self,
        desc: &ast::FunctionDesc,
        database: &str,
        procedure: bool,
    ) -> Result<Option<Function>> {
        let found = self.named_routine(desc, database)?;
        if let Some(f) = &found {
            if f.aggregate.is_some() {
                return Err(SqlError::new(
                    code::WRONG_OBJECT_TYPE,
                    format!("\"{}\" is an aggregate function", f.name),
                )
                .hint("Use DROP AGGREGATE to drop aggregate functions."));
            }
            if (f.returns == Returns::Procedure) != procedure {
                return Err(SqlError::new(
                    code::WRONG_OBJECT_TYPE,
                    format!(
                        "{} is not a {}",
                        f.signature(),
                        if procedure { "procedure" } else { "function" }
                    ),
                ));
            }
        }
        Ok(found)
    }

    fn named_routine(
        &mut self,
        desc: &ast::FunctionDesc,
        database: &str,
    ) -> Result<Option<Function>> {
        let name = name_as_written(&desc.name)?;
        let name = name.strip_prefix("public.").unwrap_or(&name).to_string();
        match &desc.args {
            Some(args) => {
                let mut types = Vec::with_capacity(args.len());
                for a in args {
                    if matches!(a.mode, Some(ast::ArgMode::Out)) {
                        continue; // OUT arguments are not part of the signature
                    }
                    types.push(function_type(&a.data_type, self, database)?.unmodified());
                }
                self.db.catalog.function_with(&mut self.ts.txn, database, &name, &types)
            }
            None => {
                let mut all = self.db.catalog.functions_named(&mut self.ts.txn, database, &name)?;
                if all.len() > 1 {
                    return Err(SqlError::new(
                        "42725",
                        format!("function name \"{name}\" is not unique"),
                    )
                    .hint("Specify the argument list to select the function unambiguously."));
                }
                Ok(all.pop())
            }
        }
    }

    /// The tables with triggers that run function `f` (a trigger function), and those
    /// triggers' names.
    fn triggers_running(
        &mut self,
        database: &str,
        f: &Function,
    ) -> Result<Vec<(Arc<Table>, String)>> {
        let mut out = Vec::new();
        if f.returns != Returns::Trigger {
            return Ok(out);
        }
        for t in self.db.catalog.tables(&mut self.ts.txn, database)? {
            for tr in &t.triggers {
                if tr.function == f.name {
                    out.push((t.clone(), tr.name.clone()));
                }
            }
        }
        Ok(out)
    }

    /// `DROP FUNCTION [IF EXISTS] name[(types)] [, …] [CASCADE | RESTRICT]`.
    pub(crate) fn drop_functions(
        &mut self,
        if_exists: bool,
        descs: &[ast::FunctionDesc],
        behavior: Option<&ast::DropBehavior>,
        database: &str,
        procedure: bool,
    ) -> Result<Output> {
        let kind = if procedure { "procedure" } else { "function" };
        let cascade = matches!(behavior, Some(ast::DropBehavior::Cascade));
        for desc in descs {
            let Some(f) = self.named_function(desc, database, procedure)? else {
                let name = name_as_written(&desc.name)?;
                let shown = match &desc.args {
                    Some(_) => desc.to_string(),
                    None => crate::catalog::unqualified(&name).to_string(),
                };
                if if_exists {
                    // As PostgreSQL's notice names the types: by the grammar's names.
                    let types: Vec<String> =
                        desc.args.iter().flatten().map(|a| grammar_type(&a.data_type)).collect();
                    let name = crate::catalog::unqualified(&name);
                    self.skipping(
                        "00000",
                        format!("{kind} {name}({}) does not exist", types.join(",")),
                    );
                    continue;
                }
                let message = match &desc.args {
                    Some(args) => {
                        let mut types = Vec::with_capacity(args.len());
                        for a in args {
                            types.push(function_type(&a.data_type, self, database)?.sql_name());
                        }
                        let name = crate::catalog::unqualified(&name);
                        format!("{kind} {name}({}) does not exist", types.join(", "))
                    }
                    None => format!("could not find a {kind} named \"{shown}\""),
                };
                return Err(SqlError::new(code::UNDEFINED_FUNCTION, message));
            };
            let users = self.triggers_running(database, &f)?;
            if !users.is_empty() && !cascade {
                let lines: Vec<String> = users
                    .iter()
                    .map(|(t, tr)| {
                        format!(
                            "trigger {tr} on table {} depends on function {}",
                            crate::catalog::unqualified(&t.name),
                            f.signature()
                        )
                    })
                    .collect();
                return Err(crate::exec::write::depended_on(
                    &format!("function {}", f.signature()),
                    &lines,
                ));
            }
            self.drop_views_calling(&f, cascade, database)?;
            let aggregates = self.aggregates_calling(database, &f)?;
            if !aggregates.is_empty() && !cascade {
                let lines: Vec<String> = aggregates
                    .iter()
                    .map(|a| {
                        format!(
                            "function {} depends on function {}",
                            a.signature().replace(", ", ","),
                            f.signature().replace(", ", ",")
                        )
                    })
                    .collect();
                return Err(crate::exec::write::depended_on(
                    &format!("function {}", f.signature().replace(", ", ",")),
                    &lines,
                ));
            }
            for a in aggregates {
                self.drop_views_calling(&a, true, database)?;
                self.db.catalog.delete_function(&mut self.ts.txn, database, &a)?;
                self.cascade_to(format!("function {}", a.signature().replace(", ", ",")));
            }
            for (t, tr) in users {
                let mut table = (*t).clone();
                table.triggers.retain(|x| x.name != tr);
                self.db.catalog.put_table(&mut self.ts.txn, &table)?;
                self.cascade_to(format!(
                    "trigger {tr} on table {}",
                    crate::catalog::unqualified(&t.name)
                ));
            }
            self.db.catalog.delete_function(&mut self.ts.txn, database, &f)?;
        }
        self.report_cascade();
        Ok(Output::Command(if procedure { "DROP PROCEDURE" } else { "DROP FUNCTION" }.into()))
    }

    /// Renames function (or aggregate) `f` to `new`: 42723 when a routine of that name
    /// takes the same types; the triggers and aggregates calling it call it by its new name.
    pub(crate) fn rename_routine(&mut self, database: &str, f: &Function, new: &str) -> Result<()> {
        let types = f.input_types();
        if self.db.catalog.function_with(&mut self.ts.txn, database, new, &types)?.is_some() {
            let renamed = Function { name: new.to_string(), ..f.clone() };
            return Err(SqlError::new(
                code::DUPLICATE_FUNCTION,
                format!("function {} already exists in schema \"public\"", renamed.signature()),
            ));
        }
        for (t, _) in self.triggers_running(database, f)? {
            let mut table = (*t).clone();
            for tr in &mut table.triggers {
                if tr.function == f.name {
                    tr.function = new.to_string();
                }
            }
            self.db.catalog.put_table(&mut self.ts.txn, &table)?;
        }
        self.follow_rename(database, f, new)?;
        self.db.catalog.delete_function(&mut self.ts.txn, database, f)?;
        let renamed = Function { name: new.to_string(), ..f.clone() };
        self.db.catalog.put_function(&mut self.ts.txn, database, &renamed)?;
        Ok(())
    }

    /// `ALTER FUNCTION name[(types)] OWNER TO role | RENAME TO new` (owners change nothing:
    /// Kiln has no privileges).
    pub(crate) fn alter_function(
        &mut self,
        af: &ast::AlterFunction,
        database: &str,
    ) -> Result<Output> {
        if af.kind != ast::AlterFunctionKind::Function {
            return Err(SqlError::unsupported("ALTER AGGREGATE"));
        }
        let Some(f) = self.named_function(&af.function, database, false)? else {
            let shown = match &af.function.args {
                Some(_) => af.function.to_string(),
                None => format!("{}()", af.function),
            };
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {shown} does not exist"),
            ));
        };
        match &af.operation {
            ast::AlterFunctionOperation::OwnerTo(_) => {}
            ast::AlterFunctionOperation::RenameTo { new_name } => {
                self.rename_routine(database, &f, &crate::bind::ident(new_name))?;
            }
            _ => return Err(SqlError::unsupported("this form of ALTER FUNCTION")),
        }
        Ok(Output::Command("ALTER FUNCTION".into()))
    }
}

/// The text of a function's body given as a string.
fn body_text(body: &Option<ast::CreateFunctionBody>) -> Result<String> {
    let expr = match body {
        Some(ast::CreateFunctionBody::AsBeforeOptions { body, .. }) => body,
        Some(ast::CreateFunctionBody::AsAfterOptions(body)) => body,
        Some(_) => return Err(SqlError::unsupported("this form of a function's body")),
        None => {
            return Err(SqlError::new(
                code::INVALID_FUNCTION_DEFINITION,
                "no function body specified",
            ))
        }
    };
    match expr {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => {
                Ok(s.clone())
            }
            ast::Value::DollarQuotedString(d) => Ok(d.value.clone()),
            _ => Err(SqlError::syntax("a function's body is a string")),
        },
        _ => Err(SqlError::syntax("a function's body is a string")),
    }
}

/// `pg_get_function_arguments`: `a integer, b text DEFAULT 'x'` (`identity`: without the
/// defaults, as `pg_get_function_identity_arguments` writes them).
pub(crate) fn function_arguments(f: &Function, identity: bool) -> String {
    // A procedure's arguments are written with their mode.
    let procedure = f.returns == Returns::Procedure;
    let parts: Vec<String> = f
        .args
        .iter()
        .filter(|a| a.mode != ArgMode::Table)
        .map(|a| {
            let mut s = match a.mode {
                ArgMode::In if procedure => "IN ",
                ArgMode::In | ArgMode::Table => "",
                ArgMode::Out => "OUT ",
                ArgMode::InOut => "INOUT ",
            }
            .to_string();
            s += &match &a.name {
                Some(n) => format!("{} {}", crate::bind::quote_ident(n), a.ty.sql_name()),
                None => a.ty.sql_name(),
            };
            if let (Some(d), false) = (&a.default, identity) {
                s.push_str(" DEFAULT ");
                s.push_str(&crate::pg::defaults::shown(d, a.ty, false));
            }
            s
        })
        .collect();
    parts.join(", ")
}

/// `pg_get_function_result`: the type it returns, as a function definition names it (a
/// table of `public` as `public.t` when `qualify`: the search path lacks `public`).
pub(crate) fn function_result(f: &Function, qualify: bool) -> Option<String> {
    let table: Vec<String> = f
        .args
        .iter()
        .filter(|a| a.mode == ArgMode::Table)
        .map(|a| {
            format!(
                "{} {}",
                crate::bind::quote_ident(a.name.as_deref().unwrap_or("")),
                a.ty.sql_name()
            )
        })
        .collect();
    if !table.is_empty() {
        return Some(format!("TABLE({})", table.join(", ")));
    }
    let result = match &f.returns {
        Returns::Trigger => "trigger".into(),
        Returns::Void => "void".into(),
        Returns::Value(t) => t.sql_name(),
        Returns::Record => "record".into(),
        Returns::Row(t) => crate::pg::system::shown_relation(t, qualify),
        Returns::Procedure => return None,
    };
    Some(if f.set { format!("SETOF {result}") } else { result })
}

/// `pg_get_functiondef`: the function as CREATE OR REPLACE FUNCTION, as PostgreSQL writes it.
pub(crate) fn function_definition(f: &Function, qualify: bool) -> String {
    let procedure = f.returns == Returns::Procedure;
    let mut tag = if procedure { "$procedure" } else { "$function" }.to_string();
    while f.body.contains(&tag) {
        tag.push('x');
    }
    tag.push('$');
    let mut options = String::new();
    match f.volatility {
        'i' => options.push_str(" IMMUTABLE"),
        's' => options.push_str(" STABLE"),
        _ => {}
    }
    if f.strict {
        options.push_str(" STRICT");
    }
    if !options.is_empty() {
        options.push('\n');
    }
    let returns = match function_result(f, qualify) {
        Some(r) => format!("\n RETURNS {r}"),
        None => String::new(),
    };
    format!(
        "CREATE OR REPLACE {} public.{}({}){returns}\n LANGUAGE {}\n{options}AS {tag}{}{tag}\n",
        if procedure { "PROCEDURE" } else { "FUNCTION" },
        crate::bind::quote_ident(&f.name),
        function_arguments(f, false),
        f.language,
        f.body
    )
}

/// The error for a call whose function's body is not bound (a recursive call made while
/// its function was being defined, which runs nowhere).
fn unbound() -> SqlError {
    SqlError::new(code::INTERNAL, "a function's body was called before it was bound")
}

/// Runs a call's routine on its arguments' values with `host`.
pub(crate) fn call(
    routine: &Routine,
    host: &mut dyn crate::exec::plpgsql::Host,
    args: Vec<Value>,
    env: &dyn crate::expr::Env,
) -> Result<Value> {
    let shape = routine.shape();
    if routine.strict && args.iter().any(Value::is_null) {
        // No row for a set (PostgreSQL's rule), NULL otherwise.
        return Ok(if shape.set { Value::Array(vec![]) } else { Value::Null });
    }
    let target = routine.target.as_ref().and_then(Weak::upgrade);
    let program = match (&routine.program, &target) {
        (Some(p), _) => p,
        (None, Some(t)) => t.program.as_ref().ok_or_else(unbound)?,
        (None, None) => return Err(unbound()),
    };
    // Calls nest one level deeper for as long as this one runs.
    struct Depth;
    impl Drop for Depth {
        fn drop(&mut self) {
            CALL_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        }
    }
    let depth = CALL_DEPTH.with(|d| {
        d.set(d.get() + 1);
        d.get()
    });
    let _depth = Depth;
    if depth > CALL_DEPTH_MAX {
        return Err(SqlError::new(code::STATEMENT_TOO_COMPLEX, "stack depth limit exceeded")
            .hint(format!("Function calls nest at most {CALL_DEPTH_MAX} deep (a function calling itself without end?).")));
    }
    let value = program.call(host, args, &routine.name, env)?;
    let void = shape.value.is_none() && shape.columns.is_none() && !shape.set;
    Ok(if routine.sql && void { Value::Null } else { value })
}
