//! Bound expressions and their evaluation.

use std::cmp::Ordering;

use rust_decimal::Decimal;

use crate::error::{code, Result, SqlError};
use crate::types::{check_int_range, DataType, Value};

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// +
    Add,
    /// -
    Sub,
    /// *
    Mul,
    /// /
    Div,
    /// %
    Mod,
    /// ||
    Concat,
    /// =
    Eq,
    /// <>
    NotEq,
    /// <
    Lt,
    /// <=
    LtEq,
    /// >
    Gt,
    /// >=
    GtEq,
    /// ~ (POSIX regular expression match)
    RegexMatch,
    /// !~
    RegexNotMatch,
    /// ~*
    RegexIMatch,
    /// !~*
    RegexNotIMatch,
}

/// Aggregate functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AggFunc {
    /// count(*) or count(x)
    Count,
    /// sum
    Sum,
    /// min
    Min,
    /// max
    Max,
    /// avg
    Avg,
    /// string_agg(x, separator) with a constant separator
    StringAgg(String),
}

/// Scalar functions. The `Kiln*` ones are the ED surface; the session evaluates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// lower(text)
    Lower,
    /// upper(text)
    Upper,
    /// length(text)
    Length,
    /// abs(x)
    Abs,
    /// coalesce(...)
    Coalesce,
    /// nullif(a, b)
    Nullif,
    /// greatest(...)
    Greatest,
    /// least(...)
    Least,
    /// round(x [, n])
    Round,
    /// floor(x)
    Floor,
    /// ceil(x)
    Ceil,
    /// substr(text, from [, count])
    Substr,
    /// trim(text)
    Trim,
    /// concat(...)
    Concat,
    /// repeat(text, n)
    Repeat,
    /// pg_cancel_backend(pid)
    CancelBackend,
    /// pg_terminate_backend(pid)
    TerminateBackend,
    /// pg_sleep(seconds): interruptible
    Sleep,
    /// now(), current_timestamp
    Now,
    /// current_date
    CurrentDate,
    /// random()
    Random,
    /// version()
    Version,
    /// current_database()
    CurrentDatabase,
    /// current_schema()
    CurrentSchema,
    /// current_user, session_user
    CurrentUser,
    /// pg_backend_pid()
    BackendPid,
    /// kiln_sync(): waits until every transaction this session committed is durable
    KilnSync,
    /// kiln_persist(): flushes the log now; returns the durable position
    KilnPersist,
    /// kiln_last_txid(): the id of the session's last committed transaction that wrote (else its
    /// last transaction)
    KilnLastTxid,
    /// kiln_txn_status(id)
    KilnTxnStatus,
    /// kiln_wait(id, timeout_ms)
    KilnWait,
    /// kiln_fault_fail_syncs(n): fail the next n log fsyncs (only with fault injection on)
    KilnFaultFailSyncs,
    /// kiln_fault_disk_full(bytes): the log's disk has this many bytes free (negative or
    /// NULL: unlimited again); fault injection only.
    KilnFaultDiskFull,
    /// kiln_fault_panic(): panics (fault injection only), to test that a bug ends one
    /// connection and releases what it held.
    KilnFaultPanic,
    /// A catalog function clients call (psql's \d): answered by the session.
    Catalog(CatalogFunc),
    /// array_to_string(array, separator)
    ArrayToString,
    /// array_upper(array, dimension)
    ArrayUpper,
    /// array_position(array, element)
    ArrayPosition,
    /// array[index] (1-based)
    ArrayElement,
    /// quote_ident(text)
    QuoteIdent,
}

/// The catalog functions Kiln answers (enough for psql's describe commands).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogFunc {
    /// pg_table_is_visible(oid): true
    TableIsVisible,
    /// pg_get_userbyid(oid)
    UserById,
    /// format_type(type oid, typmod)
    FormatType,
    /// pg_get_expr(expr text, relation oid [, pretty])
    GetExpr,
    /// pg_get_indexdef(index oid [, column, pretty])
    IndexDef,
    /// pg_get_constraintdef(constraint oid [, pretty])
    ConstraintDef,
    /// pg_encoding_to_char(int)
    EncodingToChar,
    /// pg_relation_is_publishable(oid): false
    RelationIsPublishable,
    /// pg_get_statisticsobjdef_columns(oid): NULL
    StatisticsColumns,
    /// obj_description / col_description / shobj_description: NULL
    Description,
    /// current_schemas(bool)
    CurrentSchemas,
    /// has_*_privilege(...): true
    HasPrivilege,
}

/// What a subquery expression computes.
#[derive(Debug, Clone, PartialEq)]
pub enum SubqueryKind {
    /// (SELECT …): the single value of the single row (NULL for none; 21000 for several).
    Scalar,
    /// [NOT] EXISTS (SELECT …)
    Exists(bool),
    /// x [NOT] IN (SELECT …)
    In(Box<Expr>, bool),
    /// ARRAY(SELECT …): the values as an array literal ('{a,b}').
    Array,
}

/// A planned subquery, shared by clones of the expression that holds it.
#[derive(Clone)]
pub struct SubPlan(pub std::sync::Arc<crate::plan::SelectPlan>);

impl PartialEq for SubPlan {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for SubPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubPlan")
    }
}

/// Runs correlated subqueries during execution (it holds the transaction).
pub trait SubqueryRunner {
    /// Every row of `plan`, evaluated with `ctx` (whose `outer` is the referencing row).
    fn run(&self, plan: &crate::plan::SelectPlan, ctx: &Ctx) -> Result<Vec<Vec<Value>>>;
}

/// A bound expression: columns are positions in the input row.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A constant.
    Const(Value),
    /// A column of the input row.
    Column(usize),
    /// A statement parameter ($n, 0-based).
    Param(usize),
    /// A column of the enclosing query's row (in a correlated subquery).
    Outer(usize),
    /// A subquery evaluated for each row: the plan, what it computes, and the columns of the
    /// enclosing row it refers to.
    Subquery(SubPlan, SubqueryKind, Vec<usize>),
    /// x op ANY (array)
    AnyOp(Box<Expr>, BinOp, Box<Expr>),
    /// NOT
    Not(Box<Expr>),
    /// unary minus
    Neg(Box<Expr>),
    /// A binary operator.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// AND (three-valued)
    And(Box<Expr>, Box<Expr>),
    /// OR (three-valued)
    Or(Box<Expr>, Box<Expr>),
    /// IS [NOT] NULL
    IsNull(Box<Expr>, bool),
    /// IS [NOT] DISTINCT FROM
    IsDistinct(Box<Expr>, Box<Expr>, bool),
    /// x [NOT] IN (list)
    InList(Box<Expr>, Vec<Expr>, bool),
    /// x [NOT] IN (values computed by a subquery, filled before evaluation)
    InValues(Box<Expr>, std::sync::Arc<Vec<Value>>, bool),
    /// [NOT] LIKE / ILIKE
    Like {
        /// The string.
        expr: Box<Expr>,
        /// The pattern.
        pattern: Box<Expr>,
        /// NOT LIKE
        negated: bool,
        /// ILIKE
        case_insensitive: bool,
    },
    /// CASE
    Case {
        /// CASE x WHEN ...
        operand: Option<Box<Expr>>,
        /// WHEN a THEN b
        whens: Vec<(Expr, Expr)>,
        /// ELSE
        otherwise: Option<Box<Expr>>,
    },
    /// CAST / ::
    Cast(Box<Expr>, DataType),
    /// A scalar function.
    Func(Func, Vec<Expr>),
    /// An aggregate (only before aggregation is planned; evaluation never sees it): the
    /// function, DISTINCT, the argument (none for count(*)) and the result type.
    Agg(AggFunc, bool, Option<Box<Expr>>, DataType),
}

/// What expression evaluation needs from the session.
pub trait Env {
    /// The statement's timestamp (now()).
    fn now(&self) -> i64;
    /// current_database()
    fn database(&self) -> String;
    /// current_user
    fn user(&self) -> String;
    /// pg_backend_pid()
    fn backend_pid(&self) -> i32;
    /// The ED functions.
    fn kiln(&self, func: Func, args: &[Value]) -> Result<Value>;
    /// Catalog functions (definitions of indexes and constraints by oid, type names).
    fn catalog(&self, func: CatalogFunc, args: &[Value]) -> Result<Value>;
}

/// Evaluation context: parameters, the session, the enclosing row of a correlated
/// subquery, and who runs subqueries.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// $1... values.
    pub params: &'a [Value],
    /// The session.
    pub env: &'a dyn Env,
    /// The enclosing query's row (empty at the top level).
    pub outer: &'a [Value],
    /// Runs subqueries (absent where the transaction is busy writing).
    pub runner: Option<&'a dyn SubqueryRunner>,
}

impl<'a> Ctx<'a> {
    /// A context without subquery execution.
    pub fn new(params: &'a [Value], env: &'a dyn Env) -> Ctx<'a> {
        Ctx { params, env, outer: &[], runner: None }
    }
}

impl Expr {
    /// Evaluates against `row`.
    #[recursive::recursive]
    pub fn eval(&self, row: &[Value], ctx: &Ctx) -> Result<Value> {
        Ok(match self {
            Expr::Const(v) => v.clone(),
            Expr::Column(i) => row.get(*i).cloned().unwrap_or(Value::Null),
            Expr::Param(i) => ctx.params.get(*i).cloned().ok_or_else(|| {
                SqlError::new(
                    code::UNDEFINED_PARAMETER,
                    format!("there is no parameter ${}", i + 1),
                )
            })?,
            Expr::Outer(i) => ctx.outer.get(*i).cloned().unwrap_or(Value::Null),
            Expr::Subquery(plan, kind, _) => {
                let Some(runner) = ctx.runner else {
                    return Err(SqlError::unsupported("a correlated subquery in this position"));
                };
                let inner = Ctx { outer: row, ..*ctx };
                let rows = runner.run(&plan.0, &inner)?;
                match kind {
                    SubqueryKind::Scalar => {
                        if rows.len() > 1 {
                            return Err(SqlError::new(
                                code::CARDINALITY,
                                "more than one row returned by a subquery used as an expression",
                            ));
                        }
                        rows.into_iter()
                            .next()
                            .and_then(|r| r.into_iter().next())
                            .unwrap_or(Value::Null)
                    }
                    SubqueryKind::Exists(negated) => Value::Bool(rows.is_empty() == *negated),
                    SubqueryKind::In(x, negated) => {
                        let v = x.eval(row, ctx)?;
                        let values: Vec<Value> =
                            rows.into_iter().filter_map(|r| r.into_iter().next()).collect();
                        in_values(&v, &values, *negated)
                    }
                    SubqueryKind::Array => {
                        let items: Vec<String> = rows
                            .into_iter()
                            .filter_map(|r| r.into_iter().next())
                            .map(|v| array_item(&v))
                            .collect();
                        Value::Text(format!("{{{}}}", items.join(",")))
                    }
                }
            }
            Expr::AnyOp(x, op, arr) => {
                let v = x.eval(row, ctx)?;
                let arr = arr.eval(row, ctx)?;
                if v.is_null() || arr.is_null() {
                    return Ok(Value::Null);
                }
                let items = parse_array(&arr.to_text(DataType::Text).unwrap_or_default())?;
                let mut saw_null = false;
                for item in items {
                    match item {
                        None => saw_null = true,
                        Some(s) => {
                            if binary(*op, v.clone(), Value::Text(s))?.as_bool()? == Some(true) {
                                return Ok(Value::Bool(true));
                            }
                        }
                    }
                }
                if saw_null {
                    Value::Null
                } else {
                    Value::Bool(false)
                }
            }
            Expr::Not(e) => match e.eval(row, ctx)?.as_bool()? {
                None => Value::Null,
                Some(b) => Value::Bool(!b),
            },
            Expr::Neg(e) => match e.eval(row, ctx)? {
                Value::Null => Value::Null,
                Value::Int(i) => Value::Int(i.checked_neg().ok_or_else(|| overflow("bigint"))?),
                Value::Float(f) => Value::Float(-f),
                Value::Numeric(d) => Value::Numeric(-d),
                Value::Text(s) => match Value::parse(&s, DataType::Numeric(None))? {
                    Value::Numeric(d) => Value::Numeric(-d),
                    v => v,
                },
                v => return Err(type_error("-", &v)),
            },
            Expr::Binary(op, a, b) => binary(*op, a.eval(row, ctx)?, b.eval(row, ctx)?)?,
            Expr::And(a, b) => {
                let a = a.eval(row, ctx)?.as_bool()?;
                if a == Some(false) {
                    return Ok(Value::Bool(false));
                }
                match (a, b.eval(row, ctx)?.as_bool()?) {
                    (_, Some(false)) => Value::Bool(false),
                    (Some(true), Some(true)) => Value::Bool(true),
                    _ => Value::Null,
                }
            }
            Expr::Or(a, b) => {
                let a = a.eval(row, ctx)?.as_bool()?;
                if a == Some(true) {
                    return Ok(Value::Bool(true));
                }
                match (a, b.eval(row, ctx)?.as_bool()?) {
                    (_, Some(true)) => Value::Bool(true),
                    (Some(false), Some(false)) => Value::Bool(false),
                    _ => Value::Null,
                }
            }
            Expr::IsNull(e, negated) => Value::Bool(e.eval(row, ctx)?.is_null() != *negated),
            Expr::IsDistinct(a, b, negated) => {
                let (a, b) = (a.eval(row, ctx)?, b.eval(row, ctx)?);
                let distinct = match (a.is_null(), b.is_null()) {
                    (true, true) => false,
                    (true, false) | (false, true) => true,
                    _ => a.sql_cmp(&b) != Some(Ordering::Equal),
                };
                Value::Bool(distinct != *negated)
            }
            Expr::InList(e, list, negated) => {
                let v = e.eval(row, ctx)?;
                let mut values = Vec::with_capacity(list.len());
                for item in list {
                    values.push(item.eval(row, ctx)?);
                }
                in_values(&v, &values, *negated)
            }
            Expr::InValues(e, values, negated) => in_values(&e.eval(row, ctx)?, values, *negated),
            Expr::Like { expr, pattern, negated, case_insensitive } => {
                let (s, p) = (expr.eval(row, ctx)?, pattern.eval(row, ctx)?);
                match (s, p) {
                    (Value::Null, _) | (_, Value::Null) => Value::Null,
                    (s, p) => {
                        let s = s.to_text(DataType::Text).unwrap_or_default();
                        let p = p.to_text(DataType::Text).unwrap_or_default();
                        let m = if *case_insensitive {
                            like(&s.to_lowercase(), &p.to_lowercase())?
                        } else {
                            like(&s, &p)?
                        };
                        Value::Bool(m != *negated)
                    }
                }
            }
            Expr::Case { operand, whens, otherwise } => {
                let op = match operand {
                    Some(o) => Some(o.eval(row, ctx)?),
                    None => None,
                };
                for (when, then) in whens {
                    let w = when.eval(row, ctx)?;
                    let hit = match &op {
                        Some(o) => {
                            !o.is_null() && !w.is_null() && o.sql_cmp(&w) == Some(Ordering::Equal)
                        }
                        None => w.as_bool()? == Some(true),
                    };
                    if hit {
                        return then.eval(row, ctx);
                    }
                }
                match otherwise {
                    Some(e) => e.eval(row, ctx)?,
                    None => Value::Null,
                }
            }
            Expr::Cast(e, ty) => e.eval(row, ctx)?.cast_explicit(*ty)?,
            Expr::Func(f, args) => {
                let mut values = Vec::with_capacity(args.len());
                // coalesce is lazy.
                if *f == Func::Coalesce {
                    for a in args {
                        let v = a.eval(row, ctx)?;
                        if !v.is_null() {
                            return Ok(v);
                        }
                    }
                    return Ok(Value::Null);
                }
                for a in args {
                    values.push(a.eval(row, ctx)?);
                }
                call(*f, values, ctx)?
            }
            Expr::Agg(..) => {
                return Err(SqlError::new(
                    code::GROUPING,
                    "aggregate functions are not allowed here",
                ))
            }
        })
    }

    /// Evaluates as a condition: true only when the value is true.
    pub fn eval_bool(&self, row: &[Value], ctx: &Ctx) -> Result<bool> {
        Ok(self.eval(row, ctx)?.as_bool()? == Some(true))
    }

    /// Whether the expression reads any column at or above `from`.
    pub fn uses_columns_from(&self, from: usize) -> bool {
        let mut hit = false;
        self.walk(&mut |e| {
            if let Expr::Column(i) = e {
                if *i >= from {
                    hit = true;
                }
            }
        });
        hit
    }

    /// Whether the expression reads any column in `range`.
    pub fn uses_columns_in(&self, range: std::ops::Range<usize>) -> bool {
        let mut hit = false;
        self.walk(&mut |e| {
            if let Expr::Column(i) = e {
                if range.contains(i) {
                    hit = true;
                }
            }
        });
        hit
    }

    /// Whether the expression contains an aggregate.
    pub fn has_agg(&self) -> bool {
        let mut hit = false;
        self.walk(&mut |e| {
            if matches!(e, Expr::Agg(..)) {
                hit = true;
            }
        });
        hit
    }

    /// Calls `f` on each direct child. Every traversal of the tree is built on this and on
    /// [`Expr::try_map_children`]; both list every variant, so a new kind of node cannot be
    /// skipped silently by a rewrite.
    pub fn for_each_child<'e>(&'e self, f: &mut dyn FnMut(&'e Expr)) {
        match self {
            Expr::Const(_) | Expr::Column(_) | Expr::Param(_) | Expr::Outer(_) => {}
            Expr::Subquery(_, kind, _) => match kind {
                SubqueryKind::In(x, _) => f(x),
                SubqueryKind::Scalar | SubqueryKind::Exists(_) | SubqueryKind::Array => {}
            },
            Expr::Not(x)
            | Expr::Neg(x)
            | Expr::IsNull(x, _)
            | Expr::Cast(x, _)
            | Expr::InValues(x, _, _) => f(x),
            Expr::AnyOp(a, _, b)
            | Expr::Binary(_, a, b)
            | Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::IsDistinct(a, b, _) => {
                f(a);
                f(b);
            }
            Expr::InList(x, list, _) => {
                f(x);
                list.iter().for_each(f);
            }
            Expr::Like { expr, pattern, negated: _, case_insensitive: _ } => {
                f(expr);
                f(pattern);
            }
            Expr::Case { operand, whens, otherwise } => {
                if let Some(o) = operand {
                    f(o);
                }
                for (w, t) in whens {
                    f(w);
                    f(t);
                }
                if let Some(o) = otherwise {
                    f(o);
                }
            }
            Expr::Func(_, args) => args.iter().for_each(f),
            Expr::Agg(_, _, arg, _) => {
                if let Some(a) = arg {
                    f(a);
                }
            }
        }
    }

    /// Rebuilds the node with each direct child replaced by `f(child)`, in the order
    /// [`Expr::for_each_child`] visits them.
    pub fn try_map_children(self, f: &mut dyn FnMut(Expr) -> Result<Expr>) -> Result<Expr> {
        let mut b = |x: Box<Expr>| -> Result<Box<Expr>> { Ok(Box::new(f(*x)?)) };
        Ok(match self {
            e @ (Expr::Const(_) | Expr::Column(_) | Expr::Param(_) | Expr::Outer(_)) => e,
            Expr::Subquery(plan, kind, refs) => {
                let kind = match kind {
                    SubqueryKind::In(x, negated) => SubqueryKind::In(b(x)?, negated),
                    k @ (SubqueryKind::Scalar | SubqueryKind::Exists(_) | SubqueryKind::Array) => k,
                };
                Expr::Subquery(plan, kind, refs)
            }
            Expr::Not(x) => Expr::Not(b(x)?),
            Expr::Neg(x) => Expr::Neg(b(x)?),
            Expr::IsNull(x, n) => Expr::IsNull(b(x)?, n),
            Expr::Cast(x, t) => Expr::Cast(b(x)?, t),
            Expr::InValues(x, v, n) => Expr::InValues(b(x)?, v, n),
            Expr::AnyOp(x, op, y) => {
                let x = b(x)?;
                Expr::AnyOp(x, op, b(y)?)
            }
            Expr::Binary(op, x, y) => {
                let x = b(x)?;
                Expr::Binary(op, x, b(y)?)
            }
            Expr::And(x, y) => {
                let x = b(x)?;
                Expr::And(x, b(y)?)
            }
            Expr::Or(x, y) => {
                let x = b(x)?;
                Expr::Or(x, b(y)?)
            }
            Expr::IsDistinct(x, y, n) => {
                let x = b(x)?;
                Expr::IsDistinct(x, b(y)?, n)
            }
            Expr::InList(x, list, n) => {
                let x = b(x)?;
                Expr::InList(x, list.into_iter().map(&mut *f).collect::<Result<_>>()?, n)
            }
            Expr::Like { expr, pattern, negated, case_insensitive } => {
                let expr = b(expr)?;
                Expr::Like { expr, pattern: b(pattern)?, negated, case_insensitive }
            }
            Expr::Case { operand, whens, otherwise } => {
                let operand = operand.map(&mut b).transpose()?;
                let whens = whens
                    .into_iter()
                    .map(|(w, t)| Ok((f(w)?, f(t)?)))
                    .collect::<Result<Vec<_>>>()?;
                let otherwise =
                    otherwise.map(|o| Ok::<_, SqlError>(Box::new(f(*o)?))).transpose()?;
                Expr::Case { operand, whens, otherwise }
            }
            Expr::Func(func, args) => {
                Expr::Func(func, args.into_iter().map(f).collect::<Result<_>>()?)
            }
            Expr::Agg(func, distinct, arg, ty) => Expr::Agg(
                func,
                distinct,
                arg.map(|a| Ok::<_, SqlError>(Box::new(f(*a)?))).transpose()?,
                ty,
            ),
        })
    }

    /// Visits every node, parents first. A correlated subquery's references to the row are
    /// visited as the columns they read.
    #[recursive::recursive]
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        if let Expr::Subquery(_, _, refs) = self {
            for &i in refs {
                f(&Expr::Column(i));
            }
        }
        self.for_each_child(&mut |c| c.walk(f));
    }

    /// Rewrites bottom-up: children first, then `f` on the rebuilt node.
    #[recursive::recursive]
    pub fn map(self, f: &mut dyn FnMut(Expr) -> Result<Expr>) -> Result<Expr> {
        let e = self.try_map_children(&mut |c| c.map(f))?;
        f(e)
    }
}

fn in_values(v: &Value, values: &[Value], negated: bool) -> Value {
    // Nothing is in an empty set, not even NULL.
    if values.is_empty() {
        return Value::Bool(negated);
    }
    if v.is_null() {
        return Value::Null;
    }
    let mut saw_null = false;
    for item in values {
        if item.is_null() {
            saw_null = true;
        } else if v.sql_cmp(item) == Some(Ordering::Equal) {
            return Value::Bool(!negated);
        }
    }
    if saw_null {
        Value::Null
    } else {
        Value::Bool(negated)
    }
}

fn overflow(what: &str) -> SqlError {
    SqlError::new(code::NUMERIC_OUT_OF_RANGE, format!("{what} out of range"))
}

fn type_error(op: &str, v: &Value) -> SqlError {
    SqlError::new(
        code::UNDEFINED_FUNCTION,
        format!("operator does not exist: {op} {}", v.natural_type().sql_name()),
    )
}

/// Coerces an untyped text operand to a number for arithmetic.
fn numeric_operand(v: Value) -> Result<Value> {
    match v {
        Value::Text(s) => {
            if let Ok(i) = s.trim().parse::<i64>() {
                Ok(Value::Int(i))
            } else {
                Value::parse(&s, DataType::Numeric(None))
            }
        }
        v => Ok(v),
    }
}

/// Applies a binary operator (NULL in, NULL out).
pub fn binary(op: BinOp, a: Value, b: Value) -> Result<Value> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    let cmp = |a: &Value, b: &Value| {
        a.sql_cmp(b).ok_or_else(|| {
            SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} {} {}",
                    a.natural_type().sql_name(),
                    op_name(op),
                    b.natural_type().sql_name()
                ),
            )
            .hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
        })
    };
    Ok(match op {
        BinOp::Eq => Value::Bool(cmp(&a, &b)? == Ordering::Equal),
        BinOp::NotEq => Value::Bool(cmp(&a, &b)? != Ordering::Equal),
        BinOp::Lt => Value::Bool(cmp(&a, &b)? == Ordering::Less),
        BinOp::LtEq => Value::Bool(cmp(&a, &b)? != Ordering::Greater),
        BinOp::Gt => Value::Bool(cmp(&a, &b)? == Ordering::Greater),
        BinOp::GtEq => Value::Bool(cmp(&a, &b)? != Ordering::Less),
        BinOp::Concat => {
            let mut s = a.to_text(DataType::Text).unwrap_or_default();
            let t = b.to_text(DataType::Text).unwrap_or_default();
            if s.len() + t.len() > TEXT_BYTES_MAX {
                return Err(SqlError::new(code::PROGRAM_LIMIT, "requested length too large")
                    .detail(format!(
                        "A computed string may hold at most {TEXT_BYTES_MAX} bytes."
                    )));
            }
            s.push_str(&t);
            Value::Text(s)
        }
        BinOp::RegexMatch | BinOp::RegexNotMatch | BinOp::RegexIMatch | BinOp::RegexNotIMatch => {
            let text = a.to_text(DataType::Text).unwrap_or_default();
            let pattern = b.to_text(DataType::Text).unwrap_or_default();
            let insensitive = matches!(op, BinOp::RegexIMatch | BinOp::RegexNotIMatch);
            let negated = matches!(op, BinOp::RegexNotMatch | BinOp::RegexNotIMatch);
            Value::Bool(regex_match(&text, &pattern, insensitive)? != negated)
        }
        _ => arithmetic(op, numeric_operand(a)?, numeric_operand(b)?)?,
    })
}

fn op_name(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::Mod => "%",
        BinOp::Concat => "||",
        BinOp::Eq => "=",
        BinOp::NotEq => "<>",
        BinOp::Lt => "<",
        BinOp::LtEq => "<=",
        BinOp::Gt => ">",
        BinOp::GtEq => ">=",
        BinOp::RegexMatch => "~",
        BinOp::RegexNotMatch => "!~",
        BinOp::RegexIMatch => "~*",
        BinOp::RegexNotIMatch => "!~*",
    }
}

/// A regular-expression match with a per-thread cache of compiled patterns.
fn regex_match(text: &str, pattern: &str, insensitive: bool) -> Result<bool> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    thread_local! {
        static CACHE: RefCell<HashMap<(String, bool), regex::Regex>> = RefCell::new(HashMap::new());
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let key = (pattern.to_string(), insensitive);
        if !cache.contains_key(&key) {
            if cache.len() > 256 {
                cache.clear();
            }
            let re = regex::RegexBuilder::new(pattern)
                .case_insensitive(insensitive)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| SqlError::new("2201B", format!("invalid regular expression: {e}")))?;
            cache.insert(key.clone(), re);
        }
        Ok(cache[&key].is_match(text))
    })
}

/// Parses a one-dimensional PostgreSQL array literal ('{a,"b c",NULL}').
pub fn parse_array(s: &str) -> Result<Vec<Option<String>>> {
    let bad = || SqlError::new(code::INVALID_TEXT, format!("malformed array literal: \"{s}\""));
    let inner = s.trim().strip_prefix('{').and_then(|r| r.strip_suffix('}')).ok_or_else(bad)?;
    let mut out = Vec::new();
    if inner.trim().is_empty() {
        return Ok(out);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        let mut item = String::new();
        let quoted = chars.peek() == Some(&'"');
        if quoted {
            chars.next();
            loop {
                match chars.next() {
                    Some('\\') => item.push(chars.next().ok_or_else(bad)?),
                    Some('"') => break,
                    Some(c) => item.push(c),
                    None => return Err(bad()),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                item.push(c);
                chars.next();
            }
        }
        let item = if quoted { item } else { item.trim().to_string() };
        out.push(if !quoted && item.eq_ignore_ascii_case("null") { None } else { Some(item) });
        match chars.next() {
            Some(',') => continue,
            None => break,
            Some(_) => return Err(bad()),
        }
    }
    Ok(out)
}

/// One element of an array literal, quoted when it needs to be.
fn array_item(v: &Value) -> String {
    match v.to_text(DataType::Text) {
        None => "NULL".into(),
        Some(s) => {
            if s.is_empty()
                || s.contains([',', '"', '{', '}', ' ', '\\'])
                || s.eq_ignore_ascii_case("null")
            {
                format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
            } else {
                s
            }
        }
    }
}

fn div_zero() -> SqlError {
    SqlError::new(code::DIVISION_BY_ZERO, "division by zero")
}

fn arithmetic(op: BinOp, a: Value, b: Value) -> Result<Value> {
    use Value::*;
    Ok(match (a, b) {
        (Int(x), Int(y)) => Int(match op {
            BinOp::Add => x.checked_add(y),
            BinOp::Sub => x.checked_sub(y),
            BinOp::Mul => x.checked_mul(y),
            BinOp::Div => {
                if y == 0 {
                    return Err(div_zero());
                }
                x.checked_div(y)
            }
            BinOp::Mod => {
                if y == 0 {
                    return Err(div_zero());
                }
                x.checked_rem(y)
            }
            _ => unreachable!("comparison handled by binary"),
        }
        .ok_or_else(|| overflow("bigint"))?),
        (Float(x), Float(y)) => Float(float_op(op, x, y)?),
        (Int(x), Float(y)) => Float(float_op(op, x as f64, y)?),
        (Float(x), Int(y)) => Float(float_op(op, x, y as f64)?),
        (Numeric(x), Float(y)) => Float(float_op(op, f64::try_from(x).unwrap_or(f64::NAN), y)?),
        (Float(x), Numeric(y)) => Float(float_op(op, x, f64::try_from(y).unwrap_or(f64::NAN))?),
        (Numeric(x), Numeric(y)) => Numeric(decimal_op(op, x, y)?),
        (Int(x), Numeric(y)) => Numeric(decimal_op(op, Decimal::from(x), y)?),
        (Numeric(x), Int(y)) => Numeric(decimal_op(op, x, Decimal::from(y))?),
        (Date(d), Int(n)) if matches!(op, BinOp::Add | BinOp::Sub) => {
            let days = if op == BinOp::Add { d as i64 + n } else { d as i64 - n };
            Date(crate::types::check_date(days)?)
        }
        (Int(n), Date(d)) if op == BinOp::Add => Date(crate::types::check_date(d as i64 + n)?),
        (Date(x), Date(y)) if op == BinOp::Sub => Int(x as i64 - y as i64),
        (a, b) => {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} {} {}",
                    a.natural_type().sql_name(),
                    op_name(op),
                    b.natural_type().sql_name()
                ),
            ))
        }
    })
}

fn float_op(op: BinOp, x: f64, y: f64) -> Result<f64> {
    Ok(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => {
            if y == 0.0 {
                return Err(div_zero());
            }
            x / y
        }
        BinOp::Mod => {
            if y == 0.0 {
                return Err(div_zero());
            }
            x % y
        }
        _ => unreachable!("comparison handled by binary"),
    })
}

fn decimal_op(op: BinOp, x: Decimal, y: Decimal) -> Result<Decimal> {
    let r = match op {
        BinOp::Add => x.checked_add(y),
        BinOp::Sub => x.checked_sub(y),
        BinOp::Mul => x.checked_mul(y),
        BinOp::Div => {
            if y.is_zero() {
                return Err(div_zero());
            }
            let scale = div_scale(x, y);
            x.checked_div(y).map(|d| {
                let mut r = d.round_dp_with_strategy(
                    scale,
                    rust_decimal::RoundingStrategy::MidpointAwayFromZero,
                );
                r.rescale(scale);
                r
            })
        }
        BinOp::Mod => {
            if y.is_zero() {
                return Err(div_zero());
            }
            x.checked_rem(y)
        }
        _ => unreachable!("comparison handled by binary"),
    };
    r.ok_or_else(|| overflow("numeric"))
}

/// The result scale of numeric division, as PostgreSQL chooses it (`select_div_scale`): at
/// least 16 significant digits, and no less than either operand's scale; capped at 28,
/// the precision Kiln's numeric carries.
pub fn div_scale(x: Decimal, y: Decimal) -> u32 {
    // Weight and first digit in base 10000, as PostgreSQL's numeric stores them.
    fn weight_first(d: Decimal) -> (i32, u32) {
        let a = d.abs();
        if a.is_zero() {
            return (0, 0);
        }
        let digits = a.trunc().to_string();
        if a >= Decimal::ONE {
            let n = digits.len() as i32;
            let w = (n - 1) / 4;
            let lead = n - w * 4;
            (w, digits[..lead as usize].parse().unwrap_or(0))
        } else {
            let s = a.to_string();
            let frac = s.split('.').nth(1).unwrap_or("");
            let zeros = frac.chars().take_while(|c| *c == '0').count() as i32;
            let w = -(zeros / 4) - 1;
            let start = ((-w - 1) * 4) as usize;
            let chunk: String = frac.chars().skip(start).take(4).collect();
            let chunk = format!("{chunk:0<4}");
            (w, chunk.parse().unwrap_or(0))
        }
    }
    let (w1, f1) = weight_first(x);
    let (w2, f2) = weight_first(y);
    let mut qweight = w1 - w2;
    if f1 <= f2 {
        qweight -= 1;
    }
    let rscale = 16 - qweight * 4;
    (rscale.max(x.scale() as i32).max(y.scale() as i32).max(0) as u32).min(28)
}

/// One element of a LIKE pattern.
#[derive(Debug, Clone, Copy, PartialEq)]
enum LikeItem {
    /// `%`: any run of characters.
    Any,
    /// `_`: exactly one character.
    One,
    /// A literal character (backslash escapes one).
    Char(char),
}

/// SQL LIKE with `%`, `_` and backslash escapes, in O(|s|·|pattern|) time at worst and
/// constant stack: a mismatch backtracks only to the latest `%`, never further, because a
/// later `%` can absorb anything an earlier one could.
pub fn like(s: &str, pattern: &str) -> Result<bool> {
    let mut items = Vec::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        items.push(match c {
            '%' => {
                if items.last() == Some(&LikeItem::Any) {
                    continue;
                }
                LikeItem::Any
            }
            '_' => LikeItem::One,
            '\\' => match chars.next() {
                Some(e) => LikeItem::Char(e),
                None => {
                    return Err(SqlError::new(
                        "22025",
                        "LIKE pattern must not end with escape character",
                    ))
                }
            },
            c => LikeItem::Char(c),
        });
    }
    let s: Vec<char> = s.chars().collect();
    let (mut si, mut pi) = (0usize, 0usize);
    // Where the latest `%` is in the pattern, and where in `s` its run would end next.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match items.get(pi) {
            Some(LikeItem::Any) => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(LikeItem::One) => {
                si += 1;
                pi += 1;
            }
            Some(LikeItem::Char(c)) if *c == s[si] => {
                si += 1;
                pi += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return Ok(false),
            },
        }
    }
    Ok(items[pi..].iter().all(|i| *i == LikeItem::Any))
}

/// The largest string an expression may compute (repeat, concatenation …): beyond it, 54000.
pub const TEXT_BYTES_MAX: usize = 64 << 20;

fn text_arg(v: &Value) -> String {
    v.to_text(DataType::Text).unwrap_or_default()
}

fn call(f: Func, args: Vec<Value>, ctx: &Ctx) -> Result<Value> {
    if args.iter().any(Value::is_null) && crate::functions::of(f).strict {
        return Ok(Value::Null);
    }
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::Null);
    Ok(match f {
        // The C locale (Kiln's collation) changes the case of ASCII letters only.
        Func::Lower => Value::Text(text_arg(&arg(0)).to_ascii_lowercase()),
        Func::Upper => Value::Text(text_arg(&arg(0)).to_ascii_uppercase()),
        Func::Length => Value::Int(text_arg(&arg(0)).chars().count() as i64),
        Func::Abs => match numeric_operand(arg(0))? {
            Value::Int(i) => Value::Int(i.checked_abs().ok_or_else(|| overflow("bigint"))?),
            Value::Float(x) => Value::Float(x.abs()),
            Value::Numeric(d) => Value::Numeric(d.abs()),
            v => return Err(type_error("abs", &v)),
        },
        Func::Coalesce => unreachable!("coalesce is evaluated lazily"),
        Func::Nullif => {
            let (a, b) = (arg(0), arg(1));
            if !a.is_null() && !b.is_null() && a.sql_cmp(&b) == Some(Ordering::Equal) {
                Value::Null
            } else {
                a
            }
        }
        Func::Greatest | Func::Least => {
            let mut best: Option<Value> = None;
            for v in args.into_iter().filter(|v| !v.is_null()) {
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let ord = v.total_cmp(&b);
                        let take = if f == Func::Greatest {
                            ord == Ordering::Greater
                        } else {
                            ord == Ordering::Less
                        };
                        if take {
                            v
                        } else {
                            b
                        }
                    }
                });
            }
            best.unwrap_or(Value::Null)
        }
        Func::Round | Func::Floor | Func::Ceil => {
            let digits = match arg(1) {
                Value::Int(n) => n as i32,
                _ => 0,
            };
            match numeric_operand(arg(0))? {
                Value::Int(i) => Value::Int(i),
                Value::Float(x) => Value::Float(match f {
                    Func::Round => {
                        let m = 10f64.powi(digits);
                        (x * m).round() / m
                    }
                    Func::Floor => x.floor(),
                    _ => x.ceil(),
                }),
                Value::Numeric(d) => Value::Numeric(match f {
                    Func::Round => {
                        let mut r = d.round_dp_with_strategy(
                            digits.max(0) as u32,
                            rust_decimal::RoundingStrategy::MidpointAwayFromZero,
                        );
                        r.rescale(digits.max(0) as u32);
                        r
                    }
                    Func::Floor => d.floor(),
                    _ => d.ceil(),
                }),
                v => return Err(type_error("round", &v)),
            }
        }
        Func::Substr => {
            let s: Vec<char> = text_arg(&arg(0)).chars().collect();
            let from = match arg(1) {
                Value::Int(i) => i,
                v => return Err(type_error("substr", &v)),
            };
            let count = match args.get(2) {
                Some(Value::Int(n)) => {
                    if *n < 0 {
                        return Err(SqlError::new(
                            "22011",
                            "negative substring length not allowed",
                        ));
                    }
                    Some(*n)
                }
                _ => None,
            };
            let start = from.max(1);
            let end = match count {
                Some(n) => (from + n).max(start),
                None => i64::MAX,
            };
            let out: String = s
                .iter()
                .enumerate()
                .filter(|(i, _)| (*i as i64 + 1) >= start && ((*i as i64) + 1) < end)
                .map(|(_, c)| *c)
                .collect();
            Value::Text(out)
        }
        Func::Trim => Value::Text(text_arg(&arg(0)).trim_matches(' ').to_string()),
        Func::Concat => {
            Value::Text(args.iter().filter_map(|v| v.to_text(DataType::Text)).collect())
        }
        Func::Repeat => match (&args[0], &args[1]) {
            (Value::Null, _) | (_, Value::Null) => Value::Null,
            (s, Value::Int(n)) => {
                let s = text_arg(s);
                let n = (*n).max(0) as usize;
                if s.len().saturating_mul(n) > TEXT_BYTES_MAX {
                    return Err(SqlError::new(code::PROGRAM_LIMIT, "requested length too large")
                        .detail(format!(
                            "A computed string may hold at most {TEXT_BYTES_MAX} bytes."
                        )));
                }
                Value::Text(s.repeat(n))
            }
            (_, n) => return Err(type_error("repeat", n)),
        },
        Func::Now => Value::TimestampTz(ctx.env.now()),
        Func::CurrentDate => {
            Value::Date(ctx.env.now().div_euclid(crate::types::MICROS_PER_DAY) as i32)
        }
        Func::Random => Value::Float(pseudo_random()),
        Func::Version => Value::Text(crate::VERSION_STRING.to_string()),
        Func::CurrentDatabase => Value::Text(ctx.env.database()),
        Func::CurrentSchema => Value::Text("public".into()),
        Func::CurrentUser => Value::Text(ctx.env.user()),
        Func::BackendPid => Value::Int(ctx.env.backend_pid() as i64),
        Func::KilnSync
        | Func::KilnPersist
        | Func::KilnLastTxid
        | Func::KilnTxnStatus
        | Func::KilnWait
        | Func::KilnFaultFailSyncs
        | Func::KilnFaultPanic
        | Func::KilnFaultDiskFull
        | Func::CancelBackend
        | Func::TerminateBackend
        | Func::Sleep => ctx.env.kiln(f, &args)?,
        Func::Catalog(c) => ctx.env.catalog(c, &args)?,
        Func::ArrayToString => {
            let (arr, sep) = (arg(0), arg(1));
            if arr.is_null() || sep.is_null() {
                return Ok(Value::Null);
            }
            let items = parse_array(&text_arg(&arr))?;
            Value::Text(items.into_iter().flatten().collect::<Vec<_>>().join(&text_arg(&sep)))
        }
        Func::ArrayUpper => {
            let items = parse_array(&text_arg(&arg(0)))?;
            if items.is_empty() {
                Value::Null
            } else {
                Value::Int(items.len() as i64)
            }
        }
        Func::ArrayPosition => {
            let items = parse_array(&text_arg(&arg(0)))?;
            let want = text_arg(&arg(1));
            match items.iter().position(|i| i.as_deref() == Some(want.as_str())) {
                Some(p) => Value::Int(p as i64 + 1),
                None => Value::Null,
            }
        }
        Func::ArrayElement => {
            let items = parse_array(&text_arg(&arg(0)))?;
            match arg(1) {
                Value::Int(i) if i >= 1 && (i as usize) <= items.len() => {
                    items[i as usize - 1].clone().map(Value::Text).unwrap_or(Value::Null)
                }
                _ => Value::Null,
            }
        }
        Func::QuoteIdent => {
            let s = text_arg(&arg(0));
            if !s.is_empty()
                && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                && !s.starts_with(|c: char| c.is_ascii_digit())
            {
                Value::Text(s)
            } else {
                Value::Text(format!("\"{}\"", s.replace('"', "\"\"")))
            }
        }
    })
}

fn pseudo_random() -> f64 {
    use std::cell::Cell;
    use std::time::{SystemTime, UNIX_EPOCH};
    thread_local! {
        static STATE: Cell<u64> = Cell::new(
            SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1) | 1,
        );
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// Checks an integer result against a column type (used on assignment).
pub fn assign(v: Value, ty: DataType) -> Result<Value> {
    match (&v, ty) {
        (Value::Int(i), t) if t.is_integer() => {
            check_int_range(*i, t)?;
            Ok(v)
        }
        _ => v.cast(ty),
    }
}

/// How a function or aggregate is shown by EXPLAIN: its Rust name in snake case.
fn snake_name(debug: &str) -> String {
    let mut out = String::new();
    for (i, c) in debug.chars().take_while(|c| c.is_alphanumeric()).enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

fn list(f: &mut std::fmt::Formatter<'_>, items: &[Expr]) -> std::fmt::Result {
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
                SubqueryKind::Array => f.write_str("ARRAY(subquery)"),
            },
            Expr::AnyOp(x, op, arr) => write!(f, "({x} {} ANY ({arr}))", op_name(*op)),
            Expr::Not(x) => write!(f, "(NOT {x})"),
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
            Expr::Func(func, args) => {
                write!(f, "{}(", snake_name(&format!("{func:?}")))?;
                list(f, args)?;
                f.write_str(")")
            }
            Expr::Agg(func, distinct, arg, _) => {
                write!(f, "{}(", snake_name(&format!("{func:?}")))?;
                if *distinct {
                    f.write_str("DISTINCT ")?;
                }
                match arg {
                    Some(a) => write!(f, "{a})"),
                    None => f.write_str("*)"),
                }
            }
        }
    }
}
