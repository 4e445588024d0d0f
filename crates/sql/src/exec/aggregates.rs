//! Aggregates made with CREATE AGGREGATE, and calls of them.
//!
//! **Definitions.** `CREATE [OR REPLACE] AGGREGATE name(types) (SFUNC = f, STYPE = t
//! [, FINALFUNC = g] [, FINALFUNC_EXTRA] [, INITCOND = 'text'] …)` stores a
//! `catalog::Function` whose `aggregate` says how it runs (PostgreSQL keeps an aggregate in
//! `pg_proc` too, with its `pg_aggregate` row beside it). The functions it names are checked
//! when it is made, as PostgreSQL checks them: the transition function must take the state
//! and the arguments and return the state's type; the final function the state (and, with
//! FINALFUNC_EXTRA, the arguments); the initial condition must read as the state's type. A
//! function of either kind may be one made with CREATE FUNCTION — which then cannot be
//! dropped while the aggregate uses it, and is followed when renamed — or a built-in one.
//! The options that tune how PostgreSQL runs an aggregate (partial states combined across
//! parallel workers, an inverse transition for moving window frames, a sort operator for
//! min/max-like aggregates) are checked and kept for the catalogs: Kiln runs an aggregate in
//! one pass over a group's rows, and a window frame's state forward from the frame's start,
//! which gives the same result by the contract those options promise.
//!
//! **Calls.** A call of a name that is no built-in aggregate but an aggregate made here
//! ([`Planner::user_aggregate`]) binds its arguments, picks the aggregate of that name by
//! their types (exact first, then implicit conversions), and binds the transition and final
//! functions as calls over a row `[state, argument…]`, as any call is bound (so a function
//! replaced since the aggregate was made is called as it is now). Each row's arguments reach
//! the aggregate packed in one array, with the call's ORDER BY keys after them; FILTER makes
//! the packed value NULL, which no aggregate takes. The state then follows PostgreSQL's
//! rules ([`step`]): a strict transition function skips rows with a NULL argument, takes a
//! NULL initial state from the first row's argument, and keeps a NULL state NULL; a
//! non-strict one sees every row. With ORDER BY (or DISTINCT, whose values PostgreSQL takes
//! sorted) the inputs are collected, sorted, then taken in order. The final function, when
//! there is one, makes the result of the last state (a strict one gives NULL for a NULL
//! state); else the result is the state. A call with OVER is a window aggregate of the frame.

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::{name_as_written, quote_ident, Planner, Scope, ScopeCol};
use crate::catalog::{Aggregate, AggregateFn, Function, FunctionArg, Returns};
use crate::error::{code, Result, SqlError};
use crate::exec::scan::ExecLimits;
use crate::exec::select::{sort_rows, Acc};
use crate::exec::write::Writer;
use crate::expr::{AggFunc, Ctx, Expr, Func, UserAggregate};
use crate::parse::aggregate::{
    AggregateValue, AlterAggregate, AlterAggregateAction, CommentOnRoutine, CreateAggregate,
    DropAggregate,
};
use crate::session::Output;
use crate::types::{DataType, Value};

/// The most arguments an aggregate takes (PostgreSQL's FUNC_MAX_ARGS, less the state its
/// transition function takes first).
const ARGS_MAX: usize = 99;

/// One row's step of an aggregate's state: `inputs` are the row's packed input (arguments,
/// then sort keys); the state, and whether there is one yet, before and after.
pub(crate) fn step(
    u: &UserAggregate,
    state: Value,
    started: bool,
    inputs: &[Value],
    ctx: &Ctx,
) -> Result<(Value, bool)> {
    let Some(args) = inputs.get(..u.args) else {
        return Err(SqlError::new(code::INTERNAL, "an aggregate's input lacks arguments"));
    };
    if u.strict {
        if args.iter().any(Value::is_null) {
            return Ok((state, started));
        }
        if !started {
            // A strict transition function never sees a NULL initial state: the first
            // row's argument is the state (CREATE checked that its type is the state's).
            return Ok((args.first().cloned().unwrap_or(Value::Null), true));
        }
        if state.is_null() {
            return Ok((state, true));
        }
    }
    let mut row = Vec::with_capacity(args.len() + 1);
    row.push(state);
    row.extend_from_slice(args);
    Ok((u.transition.eval(&row, ctx)?, true))
}

/// The aggregate's result from what it accumulated: its state as it went, or its collected
/// inputs, sorted and then taken in order.
pub(crate) fn finish(u: &UserAggregate, acc: Acc, limits: &ExecLimits, ctx: &Ctx) -> Result<Value> {
    let state = match acc {
        Acc::User(state, _) => state,
        Acc::Collect(mut items) => {
            let keys: Vec<(usize, bool, bool)> = if u.order.is_empty() {
                (0..u.args).map(|i| (i, false, false)).collect()
            } else {
                u.order.iter().enumerate().map(|(i, &(d, n))| (u.args + i, d, n)).collect()
            };
            sort_rows(&mut items, &keys, limits)?;
            let (mut state, mut started) =
                (u.init.clone().unwrap_or(Value::Null), u.init.is_some());
            for (i, item) in items.iter().enumerate() {
                if i % 1024 == 1023 {
                    limits.check()?;
                }
                (state, started) = step(u, state, started, item, ctx)?;
            }
            state
        }
        _ => return Err(SqlError::new(code::INTERNAL, "an aggregate's state of another kind")),
    };
    match &u.finish {
        None => Ok(state),
        Some((_, true)) if state.is_null() => Ok(Value::Null),
        Some((call, _)) => {
            let mut row = Vec::with_capacity(u.args + 1);
            row.push(state);
            row.resize(u.args + 1, Value::Null);
            call.eval(&row, ctx)
        }
    }
}

/// A call of a function an aggregate names, bound over a row of given types.
pub(crate) struct SupportCall {
    /// The call, over the row.
    expr: Expr,
    /// Its result type.
    ty: DataType,
    /// Whether the function is strict.
    strict: bool,
    /// What it is: a function made with CREATE FUNCTION, or a built-in one.
    function: AggregateFn,
}

/// The state's first value: `INITCOND` read as the state's type.
fn initial(text: &str, stype: DataType, env: &dyn crate::expr::Env) -> Result<Value> {
    Value::Text(text.to_string()).cast_in(stype, env.style())
}

/// The types that stand for any type in PostgreSQL (polymorphic aggregates).
fn polymorphic(ty: &ast::DataType) -> bool {
    const PSEUDO: &[&str] = &[
        "any",
        "anyelement",
        "anyarray",
        "anynonarray",
        "anyenum",
        "anyrange",
        "anymultirange",
        "anycompatible",
        "anycompatiblearray",
        "anycompatiblenonarray",
        "anycompatiblerange",
        "anycompatiblemultirange",
        "internal",
    ];
    let name = ty.to_string().to_lowercase();
    let name = name.trim_matches('"');
    PSEUDO.contains(&name.strip_prefix("pg_catalog.").unwrap_or(name))
}

impl Planner<'_> {
    /// Whether an aggregate made with CREATE AGGREGATE has this name.
    pub(crate) fn has_user_aggregate(&mut self, name: &str) -> Result<bool> {
        let name = name.strip_prefix("public.").unwrap_or(name);
        Ok(self
            .catalog
            .functions_named(self.txn, self.db, name)?
            .iter()
            .any(|f| f.aggregate.is_some()))
    }

    /// A call of function `name` on a row of `types`, bound as any call is (a function made
    /// with CREATE FUNCTION or a built-in one; an argument converted as a call converts it).
    fn support_call(&mut self, name: &str, types: &[DataType]) -> Result<SupportCall> {
        let column = |i: usize| format!("aggregate input {i}");
        let scope = Scope {
            cols: types
                .iter()
                .enumerate()
                .map(|(i, t)| ScopeCol {
                    table: None,
                    name: column(i),
                    ty: *t,
                    origin: None,
                    system: false,
                })
                .collect(),
            ..Scope::default()
        };
        let args: Vec<String> = (0..types.len()).map(|i| quote_ident(&column(i))).collect();
        let call =
            crate::parse::parse_expr(&format!("{}({})", quote_ident(name), args.join(", ")))?;
        // The call is made up here: a place in it is no place in the statement.
        let (expr, ty) = self.expr(&call, &scope, false).map_err(|mut e| {
            (e.location, e.position) = (None, None);
            e
        })?;
        let (strict, function) = match &expr {
            Expr::Routine(r, _) => {
                let made = self.catalog.functions_named(self.txn, self.db, name)?;
                let f = made.iter().find(|f| f.aggregate.is_none() && f.signature() == r.name);
                let args = f.map(|f| f.input_types());
                // As PostgreSQL, the function must take the types as they are (or as
                // strings of another length): no conversion runs on the state.
                if let Some(want) = &args {
                    let same = |a: &DataType, b: &DataType| {
                        a.unmodified() == b.unmodified() || (a.is_string() && b.is_string())
                    };
                    if want.len() != types.len() || !want.iter().zip(types).all(|(a, b)| same(a, b))
                    {
                        let shown: Vec<String> = want.iter().map(|t| t.sql_name()).collect();
                        return Err(SqlError::new(
                            code::DATATYPE_MISMATCH,
                            format!(
                                "function {name}({}) requires run-time type coercion",
                                shown.join(", ")
                            ),
                        ));
                    }
                }
                (r.strict, AggregateFn { name: name.to_string(), args })
            }
            _ => {
                let strict = crate::functions::by_name(name).is_some_and(|d| d.strict);
                (strict, AggregateFn { name: name.to_string(), args: None })
            }
        };
        Ok(SupportCall { expr, ty, strict, function })
    }

    /// What CREATE AGGREGATE checks of a function it names on a row of `types`: its result
    /// type, whether it is strict, and what it is — without binding a body, as PostgreSQL
    /// reads a function's body only when it runs (so a body may use the aggregate being
    /// made). A function made with CREATE FUNCTION must take the types as they are; a
    /// built-in one is bound as a call (it has no body).
    fn support_signature(
        &mut self,
        name: &str,
        types: &[DataType],
    ) -> Result<(DataType, bool, AggregateFn)> {
        let made: Vec<Function> = self
            .catalog
            .functions_named(self.txn, self.db, name)?
            .into_iter()
            .filter(|f| {
                f.aggregate.is_none() && !matches!(f.returns, Returns::Procedure | Returns::Trigger)
            })
            .collect();
        if made.is_empty() {
            let call = self.support_call(name, types)?;
            return Ok((call.ty, call.strict, call.function));
        }
        let same = |a: &DataType, b: &DataType| {
            a.unmodified() == b.unmodified() || (a.is_string() && b.is_string())
        };
        let fits = |f: &Function, t: &dyn Fn(&DataType, &DataType) -> bool| {
            let inputs = f.input_types();
            inputs.len() == types.len() && inputs.iter().zip(types).all(|(a, b)| t(b, a))
        };
        let Some(f) = made.iter().find(|f| fits(f, &same)) else {
            let converts = |from: &DataType, to: &DataType| {
                crate::exec::routines::implicitly_converts(*from, *to)
            };
            if let Some(f) = made.iter().find(|f| fits(f, &converts)) {
                let shown: Vec<String> = f.input_types().iter().map(|t| t.sql_name()).collect();
                return Err(SqlError::new(
                    code::DATATYPE_MISMATCH,
                    format!(
                        "function {name}({}) requires run-time type coercion",
                        shown.join(", ")
                    ),
                ));
            }
            let shown: Vec<String> = types.iter().map(|t| t.sql_name()).collect();
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", shown.join(", ")),
            ));
        };
        let ty = match (&f.returns, f.set) {
            (Returns::Value(t), false) => *t,
            _ => {
                return Err(definition(&format!(
                    "function {} does not return a single value",
                    f.signature()
                )))
            }
        };
        Ok((ty, f.strict, AggregateFn { name: name.to_string(), args: Some(f.input_types()) }))
    }

    /// A call of an aggregate made with CREATE AGGREGATE (`None`: no such aggregate has the
    /// name).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn user_aggregate(
        &mut self,
        f: &ast::Function,
        name: &str,
        args: &[ast::Expr],
        distinct: bool,
        star: bool,
        order_by: &[ast::OrderByExpr],
        scope: &Scope,
        aggs: bool,
    ) -> Result<Option<(Expr, DataType)>> {
        let short = name.strip_prefix("public.").unwrap_or(name);
        let candidates: Vec<Function> = self
            .catalog
            .functions_named(self.txn, self.db, short)?
            .into_iter()
            .filter(|c| c.aggregate.is_some())
            .collect();
        if candidates.is_empty() {
            return Ok(None);
        }
        if !aggs {
            return Err(SqlError::new(code::GROUPING, "aggregate functions are not allowed here"));
        }
        if args.is_empty() && !star && candidates.iter().any(|c| c.inputs().next().is_none()) {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("{short}(*) must be used to call a parameterless aggregate function"),
            ));
        }
        let mut bound = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for a in args {
            let (x, t) = self.agg_arg(a, scope)?;
            bound.push(x);
            types.push(t);
        }
        // The aggregates these arguments fit, ranked by how many types they have exactly.
        let mut best: Vec<(usize, &Function)> = Vec::new();
        for c in &candidates {
            let inputs = c.input_types();
            if inputs.len() != types.len() {
                continue;
            }
            let mut exact = 0;
            let fits = types.iter().zip(&inputs).all(|(t, a)| {
                if *t == a.unmodified() || t == a {
                    exact += 1;
                    true
                } else {
                    *t == DataType::Unknown || crate::exec::routines::implicitly_converts(*t, *a)
                }
            });
            if fits {
                match best.first() {
                    Some((e, _)) if *e > exact => {}
                    Some((e, _)) if *e == exact => best.push((exact, c)),
                    _ => best = vec![(exact, c)],
                }
            }
        }
        let shown = || -> String {
            if star {
                "*".to_string()
            } else {
                types.iter().map(|t| t.sql_name()).collect::<Vec<_>>().join(", ")
            }
        };
        let c = match best.as_slice() {
            [(_, c)] => (*c).clone(),
            [] => {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {short}({}) does not exist", shown()),
                )
                .hint("No function matches the given name and argument types. You might need to add explicit type casts."))
            }
            _ => {
                return Err(SqlError::new(
                    "42725",
                    format!("function {short}({}) is not unique", shown()),
                )
                .hint("Could not choose a best candidate function. You might need to add explicit type casts."))
            }
        };
        let Some(agg) = c.aggregate.clone() else {
            return Err(SqlError::new(code::INTERNAL, "an aggregate without its definition"));
        };
        // A plan (a prepared statement's, a view's) depends on the aggregate as it is now.
        self.functions.push(c.clone());
        let inputs = c.input_types();
        let mut packed = Vec::with_capacity(inputs.len() + order_by.len());
        for ((x, t), want) in bound.into_iter().zip(types).zip(&inputs) {
            let (x, t) = self.coerce(x, t, *want)?;
            packed.push(if t == *want { x } else { Expr::Cast(Box::new(x), *want) });
        }
        let order = self.sort_keys(order_by, distinct, &mut packed, scope)?;
        let mut row = vec![agg.stype];
        row.extend(&inputs);
        let transition = self.support_call(&agg.sfunc.name, &row)?;
        if transition.ty != agg.stype {
            return Err(transition_type(&agg.sfunc.name, transition.ty, agg.stype));
        }
        let finish = match &agg.finalfunc {
            Some(ff) => {
                let types = if agg.finalfunc_extra { &row[..] } else { &row[..1] };
                let call = self.support_call(&ff.name, types)?;
                Some((call.expr, call.strict))
            }
            None => None,
        };
        let out = match c.returns {
            Returns::Value(t) => t,
            _ => agg.stype,
        };
        let init = match &agg.initcond {
            Some(text) => Some(initial(text, agg.stype, self.env)?),
            None => None,
        };
        let u = UserAggregate {
            name: short.to_string(),
            args: inputs.len(),
            transition: transition.expr,
            strict: transition.strict,
            init,
            finish,
            collect: distinct || !order.is_empty(),
            order,
        };
        let x = self.filtered(f, Expr::Func(Func::MakeArray, packed), scope)?;
        Ok(Some((Expr::Agg(AggFunc::User(Arc::new(u)), distinct, Some(Box::new(x)), out), out)))
    }
}

/// 42P13: a transition function returns another type than the state's.
fn transition_type(name: &str, got: DataType, stype: DataType) -> SqlError {
    SqlError::new(
        code::INVALID_FUNCTION_DEFINITION,
        format!("return type of transition function {name} is not {}", stype.sql_name()),
    )
    .detail(format!("It returns {}.", got.sql_name()))
}

/// A function an option names.
fn function_name(key: &str, value: &Option<AggregateValue>) -> Result<String> {
    match value {
        Some(AggregateValue::Type(ast::DataType::Custom(name, modifiers)))
            if modifiers.is_empty() =>
        {
            let name = name_as_written(name)?;
            let name = name.strip_prefix("public.").map(str::to_string).unwrap_or(name);
            if name.contains('.') && !name.starts_with("pg_catalog.") {
                return Err(SqlError::unsupported("functions in a schema other than public"));
            }
            Ok(name.strip_prefix("pg_catalog.").map(str::to_string).unwrap_or(name))
        }
        Some(AggregateValue::Type(t)) => Ok(t.to_string().to_lowercase()),
        Some(AggregateValue::Literal(s)) => Ok(s.clone()),
        _ => Err(SqlError::syntax(format!("{key} requires a function name"))),
    }
}

impl Writer<'_> {
    /// A type an option or an argument names (polymorphic types refused).
    fn aggregate_type(&mut self, ty: &ast::DataType, database: &str) -> Result<DataType> {
        if polymorphic(ty) {
            return Err(SqlError::unsupported(format!("polymorphic aggregates (type {ty})"))
                .hint("Kiln's aggregates take and keep values of named types."));
        }
        Ok(crate::bind::resolve_type(ty, &self.db.catalog, &mut self.ts.txn, database)?
            .unmodified())
    }

    /// `CREATE [OR REPLACE] AGGREGATE …`.
    pub(crate) fn create_aggregate(
        &mut self,
        a: &CreateAggregate,
        database: &str,
        env: &dyn crate::expr::Env,
    ) -> Result<Output> {
        let name = name_as_written(&a.name)?;
        let name = name.strip_prefix("public.").map(str::to_string).unwrap_or(name);
        if name.contains('.') {
            return Err(SqlError::unsupported("aggregates in a schema other than public"));
        }
        if a.args.len() > ARGS_MAX {
            return Err(SqlError::new(
                code::TOO_MANY_ARGUMENTS,
                format!("aggregates cannot have more than {ARGS_MAX} arguments"),
            ));
        }
        let mut args = Vec::with_capacity(a.args.len());
        for t in &a.args {
            args.push(self.aggregate_type(t, database)?);
        }
        let (mut sfunc, mut stype, mut finalfunc, mut initcond) = (None, None, None, None);
        let mut finalfunc_extra = false;
        let mut kept = std::collections::BTreeMap::new();
        let mut moving: Vec<(&str, String)> = Vec::new();
        let mut mstype = None;
        for (key, value) in &a.options {
            let text = || -> Result<String> {
                value
                    .as_ref()
                    .map(AggregateValue::text)
                    .ok_or_else(|| SqlError::syntax(format!("{key} requires a parameter")))
            };
            let flag = || -> Result<bool> {
                match value.as_ref().map(|v| v.text().to_lowercase()) {
                    None => Ok(true),
                    Some(v) if ["true", "on", "1"].contains(&v.as_str()) => Ok(true),
                    Some(v) if ["false", "off", "0"].contains(&v.as_str()) => Ok(false),
                    Some(_) => Err(SqlError::syntax(format!("{key} requires a Boolean value"))),
                }
            };
            match key.as_str() {
                "sfunc" | "sfunc1" => sfunc = Some(function_name(key, value)?),
                "stype" | "stype1" => match value {
                    Some(AggregateValue::Type(t)) => {
                        stype = Some(self.aggregate_type(t, database)?)
                    }
                    _ => return Err(SqlError::syntax(format!("{key} requires a type name"))),
                },
                "finalfunc" => finalfunc = Some(function_name(key, value)?),
                "finalfunc_extra" => finalfunc_extra = flag()?,
                "initcond" | "initcond1" => initcond = Some(text()?),
                "combinefunc" | "msfunc" | "minvfunc" | "mfinalfunc" => {
                    moving.push((key.as_str(), function_name(key, value)?));
                }
                "mstype" => match value {
                    Some(AggregateValue::Type(t)) => {
                        mstype = Some(self.aggregate_type(t, database)?)
                    }
                    _ => return Err(SqlError::syntax(format!("{key} requires a type name"))),
                },
                "mfinalfunc_extra" => {
                    if flag()? {
                        kept.insert(key.clone(), "true".to_string());
                    }
                }
                "minitcond" | "sortop" => {
                    kept.insert(key.clone(), text()?);
                }
                "sspace" | "msspace" => {
                    let v = text()?;
                    v.parse::<i32>().map_err(|_| {
                        SqlError::syntax(format!("{key} requires an integer value"))
                    })?;
                    kept.insert(key.clone(), v);
                }
                "finalfunc_modify" | "mfinalfunc_modify" => {
                    let v = text()?.to_lowercase();
                    if !["read_only", "shareable", "read_write"].contains(&v.as_str()) {
                        return Err(SqlError::syntax(format!(
                            "parameter \"{key}\" must be READ_ONLY, SHAREABLE, or READ_WRITE"
                        )));
                    }
                    kept.insert(key.clone(), v);
                }
                "parallel" => {
                    let v = text()?.to_lowercase();
                    if !["safe", "restricted", "unsafe"].contains(&v.as_str()) {
                        return Err(SqlError::syntax(
                            "parameter \"parallel\" must be SAFE, RESTRICTED, or UNSAFE",
                        ));
                    }
                    kept.insert(key.clone(), v);
                }
                "serialfunc" | "deserialfunc" => {
                    // Only a state of type internal is serialized, and no type of Kiln's is.
                    let both = ["serialfunc", "deserialfunc"]
                        .iter()
                        .all(|k| a.options.iter().any(|(o, _)| o == k));
                    return Err(definition(if both {
                        "serialization functions may be specified only when the aggregate transition data type is internal"
                    } else {
                        "must specify both or neither of serialization and deserialization functions"
                    }));
                }
                "hypothetical" => {
                    return Err(SqlError::new(
                        code::INVALID_FUNCTION_DEFINITION,
                        "only ordered-set aggregates can be hypothetical",
                    ))
                }
                other => crate::session::raise_notice(
                    self.notices,
                    crate::session::Notice {
                        level: crate::parse::do_block::Level::Warning,
                        fields: SqlError::new(
                            "42601",
                            format!("aggregate attribute \"{other}\" not recognized"),
                        ),
                    },
                ),
            }
        }
        let Some(stype) = stype else {
            return Err(SqlError::new(
                code::INVALID_FUNCTION_DEFINITION,
                "aggregate stype must be specified",
            ));
        };
        let Some(sfunc) = sfunc else {
            return Err(SqlError::new(
                code::INVALID_FUNCTION_DEFINITION,
                "aggregate sfunc must be specified",
            ));
        };
        let has = |k: &str| moving.iter().any(|(m, _)| *m == k);
        if mstype.is_some() && !has("msfunc") {
            return Err(definition("aggregate msfunc must be specified when mstype is specified"));
        }
        if mstype.is_some() && !has("minvfunc") {
            return Err(definition(
                "aggregate minvfunc must be specified when mstype is specified",
            ));
        }
        if mstype.is_none() {
            for k in ["msfunc", "minvfunc", "mfinalfunc"] {
                if has(k) {
                    return Err(definition(&format!(
                        "aggregate {k} must not be specified without mstype"
                    )));
                }
            }
            for k in ["mfinalfunc_extra", "minitcond", "msspace", "mfinalfunc_modify"] {
                if kept.contains_key(k) {
                    return Err(definition(&format!(
                        "aggregate {k} must not be specified without mstype"
                    )));
                }
            }
        }
        // The functions, bound as calls are (so that what a call would refuse, CREATE
        // refuses), and the initial conditions read.
        let system = crate::exec::constraints::NoSystemTables;
        let catalog = &self.db.catalog;
        let mut p = Planner::new(&mut self.ts.txn, catalog, database, vec![], &system, env);
        let mut row = vec![stype];
        row.extend(&args);
        let (transition_ty, transition_strict, transition_fn) =
            p.support_signature(&sfunc, &row)?;
        if transition_ty != stype {
            return Err(transition_type(&sfunc, transition_ty, stype));
        }
        let init = match &initcond {
            Some(text) => Some(initial(text, stype, env)?),
            None => None,
        };
        // A strict transition function's first state is the first argument.
        if transition_strict
            && init.is_none()
            && args.first().is_none_or(|t| t.unmodified() != stype.unmodified())
        {
            return Err(definition(
                "must not omit initial value when transition function is strict and transition type is not compatible with input type",
            ));
        }
        let (finish, result) = match &finalfunc {
            Some(ff) => {
                let types = if finalfunc_extra { &row[..] } else { &row[..1] };
                let (ty, _, function) = p.support_signature(ff, types)?;
                (Some(function), ty)
            }
            None => (None, stype),
        };
        if result == DataType::Unknown {
            return Err(definition("an aggregate's result type must be known"));
        }
        let mut others = Vec::new();
        for (k, fname) in &moving {
            let call = match *k {
                "combinefunc" => {
                    let call = p.support_signature(fname, &[stype, stype])?;
                    if call.0 != stype {
                        return Err(SqlError::new(
                            code::DATATYPE_MISMATCH,
                            format!(
                                "return type of combine function {fname} is not {}",
                                stype.sql_name()
                            ),
                        ));
                    }
                    call
                }
                "msfunc" | "minvfunc" => {
                    let mstype = mstype.expect("checked above");
                    let mut row = vec![mstype];
                    row.extend(&args);
                    let call = p.support_signature(fname, &row)?;
                    if call.0 != mstype {
                        return Err(definition(&format!(
                            "return type of {} function {fname} is not {}",
                            if *k == "msfunc" { "transition" } else { "inverse transition" },
                            mstype.sql_name()
                        )));
                    }
                    call
                }
                _ => {
                    let mstype = mstype.expect("checked above");
                    let mut row = vec![mstype];
                    if kept.contains_key("mfinalfunc_extra") {
                        row.extend(&args);
                    }
                    let call = p.support_signature(fname, &row)?;
                    if call.0 != result {
                        return Err(definition(&format!(
                            "moving-aggregate implementation returns type {}, but plain implementation returns type {}",
                            call.0.sql_name(),
                            result.sql_name()
                        )));
                    }
                    call
                }
            };
            kept.insert(k.to_string(), fname.clone());
            others.push((k.to_string(), call.2));
        }
        if let Some(mstype) = mstype {
            if let Some(text) = kept.get("minitcond") {
                initial(text, mstype, env)?;
            }
        }
        drop(p);
        let def = Aggregate {
            sfunc: transition_fn,
            stype,
            finalfunc: finish,
            finalfunc_extra,
            initcond,
            kept,
            mstype,
            others,
        };
        let existing = self.db.catalog.function_with(&mut self.ts.txn, database, &name, &args)?;
        let (id, comment) = match existing {
            Some(old) if a.or_replace => {
                if old.aggregate.is_none() {
                    return Err(SqlError::new(
                        code::WRONG_OBJECT_TYPE,
                        "cannot change routine kind",
                    )
                    .detail(format!("\"{name}\" is a function.")));
                }
                if old.returns != Returns::Value(result) {
                    return Err(definition("cannot change return type of existing function").hint(
                        format!("Use DROP AGGREGATE {} first.", old.signature().replace(", ", ",")),
                    ));
                }
                (old.id, old.comment)
            }
            Some(_) => {
                return Err(SqlError::new(
                    code::DUPLICATE_FUNCTION,
                    format!("function \"{name}\" already exists with same argument types"),
                ))
            }
            None => (self.db.catalog.next_id(&mut self.ts.txn)?, None),
        };
        let f = Function {
            id,
            name,
            language: "internal".into(),
            body: "aggregate_dummy".into(),
            comment,
            args: args
                .iter()
                .map(|t| FunctionArg {
                    name: None,
                    ty: *t,
                    default: None,
                    mode: Default::default(),
                })
                .collect(),
            returns: Returns::Value(result),
            set: false,
            volatility: 'i',
            strict: false,
            aggregate: Some(def),
        };
        self.db.catalog.put_function(&mut self.ts.txn, database, &f)?;
        Ok(Output::Command("CREATE AGGREGATE".into()))
    }

    /// The aggregate DROP or ALTER AGGREGATE names (`None`: there is none; an error when
    /// the name and types are a function's).
    fn named_aggregate(
        &mut self,
        name: &ast::ObjectName,
        args: &[ast::DataType],
        database: &str,
    ) -> Result<(String, Vec<DataType>, Option<Function>)> {
        let name = name_as_written(name)?;
        let name = name.strip_prefix("public.").map(str::to_string).unwrap_or(name);
        let mut types = Vec::with_capacity(args.len());
        for t in args {
            types.push(
                crate::bind::resolve_type(t, &self.db.catalog, &mut self.ts.txn, database)?
                    .unmodified(),
            );
        }
        let found = self.db.catalog.function_with(&mut self.ts.txn, database, &name, &types)?;
        if let Some(f) = &found {
            if f.aggregate.is_none() {
                return Err(SqlError::new(
                    code::WRONG_OBJECT_TYPE,
                    format!("function {} is not an aggregate", f.signature()),
                ));
            }
        }
        Ok((name, types, found))
    }

    /// `DROP AGGREGATE [IF EXISTS] name(types) [, …] [CASCADE | RESTRICT]`.
    pub(crate) fn drop_aggregates(&mut self, d: &DropAggregate, database: &str) -> Result<Output> {
        for (name, args) in &d.names {
            let (name, types, found) = self.named_aggregate(name, args, database)?;
            let Some(f) = found else {
                let shown = if types.is_empty() {
                    "*".to_string()
                } else {
                    types.iter().map(|t| t.sql_name()).collect::<Vec<_>>().join(", ")
                };
                if d.if_exists {
                    // As PostgreSQL's notice names the types: by the grammar's names.
                    let grammar: Vec<String> =
                        args.iter().map(crate::exec::routines::grammar_type).collect();
                    let message = format!("aggregate {name}({}) does not exist", grammar.join(","));
                    self.skipping("00000", message);
                    continue;
                }
                let message = format!("aggregate {name}({shown}) does not exist");
                return Err(SqlError::new(code::UNDEFINED_FUNCTION, message));
            };
            self.drop_views_calling(&f, d.cascade, database)?;
            self.db.catalog.delete_function(&mut self.ts.txn, database, &f)?;
        }
        self.report_cascade();
        Ok(Output::Command("DROP AGGREGATE".into()))
    }

    /// `ALTER AGGREGATE name(types) RENAME TO new | OWNER TO role | SET SCHEMA s`.
    pub(crate) fn alter_aggregate(&mut self, a: &AlterAggregate, database: &str) -> Result<Output> {
        let (name, types, found) = self.named_aggregate(&a.name, &a.args, database)?;
        let Some(f) = found else {
            let shown: Vec<String> = types.iter().map(|t| t.sql_name()).collect();
            let shown = if shown.is_empty() { "*".to_string() } else { shown.join(", ") };
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("aggregate {name}({shown}) does not exist"),
            ));
        };
        match &a.action {
            AlterAggregateAction::OwnerTo => {}
            AlterAggregateAction::SetSchema(s) => {
                if crate::bind::ident(s) != "public" {
                    return Err(SqlError::unsupported("aggregates in a schema other than public"));
                }
            }
            AlterAggregateAction::RenameTo(new) => {
                self.rename_routine(database, &f, &crate::bind::ident(new))?;
            }
        }
        Ok(Output::Command("ALTER AGGREGATE".into()))
    }

    /// `COMMENT ON {FUNCTION | PROCEDURE | AGGREGATE} name[(types)] IS …`: kept with the
    /// routine, shown by `pg_description` and `obj_description(oid, 'pg_proc')`.
    pub(crate) fn comment_on_routine(
        &mut self,
        c: &CommentOnRoutine,
        database: &str,
    ) -> Result<Output> {
        let name = name_as_written(&c.name)?;
        let name = name.strip_prefix("public.").map(str::to_string).unwrap_or(name);
        let kind = c.kind.to_lowercase();
        let found = match &c.args {
            Some(args) => {
                let mut types = Vec::with_capacity(args.len());
                for t in args {
                    types.push(
                        crate::bind::resolve_type(t, &self.db.catalog, &mut self.ts.txn, database)?
                            .unmodified(),
                    );
                }
                let found =
                    self.db.catalog.function_with(&mut self.ts.txn, database, &name, &types)?;
                if found.is_none() {
                    let shown: Vec<String> = types.iter().map(|t| t.sql_name()).collect();
                    let shown = match (c.kind, shown.is_empty()) {
                        ("AGGREGATE", true) => "*".to_string(),
                        _ => shown.join(", "),
                    };
                    return Err(SqlError::new(
                        code::UNDEFINED_FUNCTION,
                        format!("{kind} {name}({shown}) does not exist"),
                    ));
                }
                found
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
                match all.pop() {
                    Some(f) => Some(f),
                    None => {
                        return Err(SqlError::new(
                            code::UNDEFINED_FUNCTION,
                            format!("could not find a {kind} named \"{name}\""),
                        ))
                    }
                }
            }
        };
        let Some(mut f) = found else { return Err(SqlError::new(code::INTERNAL, "no routine")) };
        let fits = match c.kind {
            "AGGREGATE" => f.aggregate.is_some(),
            "PROCEDURE" => f.returns == Returns::Procedure,
            _ => f.returns != Returns::Procedure,
        };
        if !fits {
            let what = match c.kind {
                "AGGREGATE" => format!("function {} is not an aggregate", f.signature()),
                _ => format!("{} is not a {kind}", f.signature()),
            };
            return Err(SqlError::new(code::WRONG_OBJECT_TYPE, what));
        }
        f.comment = c.comment.clone().filter(|t| !t.is_empty());
        self.db.catalog.put_function(&mut self.ts.txn, database, &f)?;
        Ok(Output::Command("COMMENT".into()))
    }

    /// The aggregates that call function `f` (made with CREATE FUNCTION).
    pub(crate) fn aggregates_calling(
        &mut self,
        database: &str,
        f: &Function,
    ) -> Result<Vec<Function>> {
        let all = self.db.catalog.functions(&mut self.ts.txn, database)?;
        Ok(all.into_iter().filter(|a| a.aggregate.as_ref().is_some_and(|d| d.uses(f))).collect())
    }

    /// After function `f` is renamed to `new`, the aggregates calling it call it by its new
    /// name.
    pub(crate) fn follow_rename(&mut self, database: &str, f: &Function, new: &str) -> Result<()> {
        for mut a in self.aggregates_calling(database, f)? {
            if let Some(d) = a.aggregate.as_mut() {
                let renamed: Vec<String> =
                    d.others.iter().filter(|(_, x)| x.is(f)).map(|(k, _)| k.clone()).collect();
                for k in renamed {
                    d.kept.insert(k, new.to_string());
                }
                for x in d.functions_mut() {
                    if x.is(f) {
                        x.name = new.to_string();
                    }
                }
            }
            self.db.catalog.put_function(&mut self.ts.txn, database, &a)?;
        }
        Ok(())
    }
}

/// 42P13 with a message.
fn definition(message: &str) -> SqlError {
    SqlError::new(code::INVALID_FUNCTION_DEFINITION, message.to_string())
}
