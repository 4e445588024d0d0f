//! Binding and planning of queries, and their execution.
//!
//! A SELECT becomes a [`SelectPlan`]: a left-deep list of FROM items joined by nested loops,
//! each with an access path chosen from the conjuncts that constrain it (primary-key point
//! lookup, primary-key range, secondary index, or full scan), then grouping and aggregates,
//! projection, DISTINCT, ORDER BY and LIMIT. Key expressions may use columns of earlier FROM
//! items, so a join on the inner table's key is an index nested-loop join.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

use kiln_engine::{Scan, Transaction};
use sqlparser::ast;

use crate::catalog::{Catalog, Index, Table};
use crate::encoding::{decode_row, encode_key, prefix_end};
use crate::error::{code, Result, SqlError};
use crate::expr::{
    AggFunc, BinOp, CatalogFunc, Ctx, Expr, Func, SubPlan, SubqueryKind, SubqueryRunner,
};
use crate::types::{check_int_range, Columns, DataType, Row, Value};

/// A column of the scope expressions are bound in.
#[derive(Debug, Clone)]
pub struct ScopeCol {
    /// The table alias it belongs to.
    pub table: Option<String>,
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: DataType,
}

/// The columns visible to an expression.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Columns in row order.
    pub cols: Vec<ScopeCol>,
}

impl Scope {
    fn resolve(&self, table: Option<&str>, name: &str) -> Result<(usize, DataType)> {
        let mut found = None;
        for (i, c) in self.cols.iter().enumerate() {
            if c.name == name && (table.is_none() || c.table.as_deref() == table) {
                if found.is_some() {
                    return Err(SqlError::new(
                        code::AMBIGUOUS_COLUMN,
                        format!("column reference \"{name}\" is ambiguous"),
                    ));
                }
                found = Some((i, c.ty));
            }
        }
        found.ok_or_else(|| match table {
            Some(t) if !self.cols.iter().any(|c| c.table.as_deref() == Some(t)) => SqlError::new(
                code::UNDEFINED_TABLE,
                format!("missing FROM-clause entry for table \"{t}\""),
            ),
            Some(t) => {
                SqlError::new(code::UNDEFINED_COLUMN, format!("column {t}.{name} does not exist"))
            }
            None => {
                SqlError::new(code::UNDEFINED_COLUMN, format!("column \"{name}\" does not exist"))
            }
        })
    }
}

/// The statement's transaction, shared by the executor and the subqueries it runs (each
/// borrows it only around an engine call).
pub type TxnCell<'t> = RefCell<&'t mut Transaction>;

/// Runs subqueries with the statement's transaction.
pub struct Exec<'a, 't> {
    /// The transaction.
    pub txn: &'a TxnCell<'t>,
    /// The statement's limits.
    pub limits: &'a ExecLimits,
}

impl SubqueryRunner for Exec<'_, '_> {
    fn run(&self, plan: &SelectPlan, ctx: &Ctx) -> Result<Vec<Row>> {
        execute_select(plan, self.txn, ctx, self.limits)
    }
}

/// A computed table: its columns and rows.
pub type Relation = (Columns, Vec<Row>);

/// A joined row with the primary key of the first FROM item's row (when it is a table).
pub type KeyedRow = (Option<Vec<u8>>, Row);

/// Something that supplies rows of tables Kiln computes (pg_catalog, information_schema,
/// kiln_stat).
pub trait SystemTables {
    /// The columns and rows of system table `name`, or `None` when there is no such table.
    fn system_table(&self, txn: &mut Transaction, name: &str) -> Result<Option<Relation>>;
}

/// How a FROM item's rows are found.
#[derive(Debug, Clone)]
pub enum Access {
    /// Every row.
    Full,
    /// The row with this primary key.
    Point(Vec<Expr>),
    /// The rows with these values of a one-column primary key (`k IN (…)`).
    Points(Vec<Expr>),
    /// Rows whose primary key starts with `prefix` and whose next key column is in bounds.
    Range {
        /// Equalities on leading key columns.
        prefix: Vec<Expr>,
        /// Lower bound on the next key column (value, inclusive).
        lower: Option<(Expr, bool)>,
        /// Upper bound on the next key column (value, inclusive).
        upper: Option<(Expr, bool)>,
    },
    /// Rows whose index entry starts with these values.
    Index(Index, Vec<Expr>),
}

/// Where a FROM item's rows come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A stored table.
    Table(Arc<Table>, Access),
    /// generate_series(start, stop [, step])
    Series(Expr, Expr, Option<Expr>),
    /// Rows computed at plan time (system tables, VALUES, derived tables).
    Rows(Arc<Vec<Vec<Value>>>),
    /// UNION / INTERSECT / EXCEPT of two queries, run at execution.
    SetOp(Box<SelectPlan>, Box<SelectPlan>, SetOpKind, bool),
}

/// A set operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOpKind {
    /// UNION
    Union,
    /// INTERSECT
    Intersect,
    /// EXCEPT
    Except,
}

/// How an item joins the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// Inner (or cross) join.
    Inner,
    /// Left outer join.
    Left,
}

/// One item of FROM.
#[derive(Debug, Clone)]
pub struct FromItem {
    /// Its rows.
    pub source: Source,
    /// Its first column in the joined row.
    pub offset: usize,
    /// Its number of columns.
    pub width: usize,
    /// How it joins.
    pub join: JoinKind,
    /// Join conditions (decide whether a left-join row matched).
    pub on: Vec<Expr>,
    /// Conditions applied once this item's columns are set.
    pub filters: Vec<Expr>,
    /// The name shown by EXPLAIN.
    pub label: String,
}

/// Grouping: key expressions and aggregates over the joined row.
#[derive(Debug, Clone)]
pub struct Grouping {
    /// GROUP BY expressions.
    pub keys: Vec<Expr>,
    /// Aggregates (function, DISTINCT, argument, result type).
    pub aggs: Vec<(AggFunc, bool, Option<Expr>, DataType)>,
}

/// A planned SELECT.
#[derive(Debug, Clone)]
pub struct SelectPlan {
    /// FROM items, joined left to right.
    pub from: Vec<FromItem>,
    /// Width of the joined row.
    pub width: usize,
    /// Conditions with no columns (evaluated once).
    pub constant_filters: Vec<Expr>,
    /// Grouping, when the query aggregates.
    pub grouping: Option<Grouping>,
    /// HAVING, over the grouped row.
    pub having: Option<Expr>,
    /// Output expressions (visible columns, then hidden sort columns).
    pub projection: Vec<Expr>,
    /// Visible output columns.
    pub columns: Vec<(String, DataType)>,
    /// DISTINCT
    pub distinct: bool,
    /// ORDER BY: output position, descending, nulls first.
    pub order: Vec<(usize, bool, bool)>,
    /// LIMIT
    pub limit: Option<Expr>,
    /// OFFSET
    pub offset: Option<Expr>,
    /// FOR UPDATE / FOR SHARE: lock the rows of the first table.
    pub lock: bool,
}

impl SelectPlan {
    /// All rows of one FROM item, every column, nothing else.
    pub fn over(item: FromItem, columns: Columns) -> SelectPlan {
        let width = item.width;
        SelectPlan {
            from: vec![item],
            width,
            constant_filters: vec![],
            grouping: None,
            having: None,
            projection: (0..width).map(Expr::Column).collect(),
            columns,
            distinct: false,
            order: vec![],
            limit: None,
            offset: None,
            lock: false,
        }
    }
}

/// The binder and planner for one statement.
pub struct Planner<'a> {
    /// The transaction (catalog reads and uncorrelated subqueries).
    pub txn: &'a mut Transaction,
    /// The catalog.
    pub catalog: &'a Catalog,
    /// The current database.
    pub db: &'a str,
    /// Parameter types ($1 is index 0); `Unknown` until the context fixes them.
    pub params: Vec<DataType>,
    /// Parameter values when executing (subqueries are run at plan time); `None` when only
    /// describing.
    pub param_values: Option<&'a [Value]>,
    /// System tables.
    pub system: &'a dyn SystemTables,
    /// The session, for evaluating subqueries.
    pub env: &'a dyn crate::expr::Env,
    /// Scopes of enclosing queries (a subquery may refer to the innermost one).
    pub outer: Vec<Scope>,
    /// Set when binding referred to an enclosing query's column.
    pub correlated: bool,
    /// The enclosing query's columns referred to while binding the current subquery.
    pub outer_refs: Vec<usize>,
}

fn ident(i: &ast::Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_lowercase()
    }
}

/// The last part of an object name, lowercased unless quoted; a `public.` or `pg_catalog.`
/// schema is accepted and dropped.
pub fn object_name(name: &ast::ObjectName) -> Result<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p.as_ident() {
            Some(i) => Ok(ident(i)),
            None => Err(SqlError::unsupported(format!("the name {p}"))),
        })
        .collect::<Result<_>>()?;
    match parts.as_slice() {
        [n] => Ok(n.clone()),
        [schema, n]
            if schema == "public" || schema == "pg_catalog" || schema == "information_schema" =>
        {
            Ok(if schema == "information_schema" {
                format!("information_schema.{n}")
            } else {
                n.clone()
            })
        }
        _ => Err(SqlError::unsupported(format!("the qualified name {name}"))),
    }
}

/// Converts an SQL type name.
pub fn data_type(t: &ast::DataType) -> Result<DataType> {
    use ast::DataType as D;
    let len = |l: &Option<ast::CharacterLength>| match l {
        Some(ast::CharacterLength::IntegerLength { length, .. }) => Some(*length as u32),
        _ => None,
    };
    Ok(match t {
        D::Bool | D::Boolean => DataType::Bool,
        D::SmallInt(_) | D::Int2(_) => DataType::Int2,
        D::Int(_) | D::Integer(_) | D::Int4(_) => DataType::Int4,
        D::BigInt(_) | D::Int8(_) => DataType::Int8,
        D::Real | D::Float4 => DataType::Float4,
        D::DoublePrecision | D::Float8 | D::Double(_) => DataType::Float8,
        D::Float(ast::ExactNumberInfo::Precision(p)) if *p <= 24 => DataType::Float4,
        D::Float(_) => DataType::Float8,
        D::Numeric(info) | D::Decimal(info) | D::Dec(info) => DataType::Numeric(match info {
            ast::ExactNumberInfo::None => None,
            ast::ExactNumberInfo::Precision(p) => Some((*p as u32, 0)),
            ast::ExactNumberInfo::PrecisionAndScale(p, s) => {
                if *p == 0 || *p > 28 || *s < 0 || *s as u64 > *p {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!("NUMERIC precision {p} and scale {s} must be within 1..28 and 0..precision"),
                    ));
                }
                Some((*p as u32, *s as u32))
            }
        }),
        D::Text | D::String(_) => DataType::Text,
        D::Varchar(l) | D::CharacterVarying(l) | D::CharVarying(l) => DataType::Varchar(len(l)),
        D::Char(l) | D::Character(l) => DataType::Char(len(l).unwrap_or(1)),
        D::Bytea => DataType::Bytea,
        D::Date => DataType::Date,
        D::Timestamp(_, tz) => match tz {
            ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz => DataType::TimestampTz,
            _ => DataType::Timestamp,
        },
        D::Custom(name, _) => match object_name(name)?.as_str() {
            "timestamptz" => DataType::TimestampTz,
            "bpchar" => DataType::Char(1),
            "name" | "regclass" | "regtype" | "regnamespace" | "regproc" | "regrole" | "text" => {
                DataType::Text
            }
            "oid" | "xid" => DataType::Int8,
            other => return Err(SqlError::unsupported(format!("type {other}"))),
        },
        D::Regclass => DataType::Text,
        // Arrays travel as their text form ('{a,b}'); Kiln has no array columns.
        D::Array(_) => DataType::Text,
        other => return Err(SqlError::unsupported(format!("type {other}"))),
    })
}

impl<'a> Planner<'a> {
    /// A planner for one statement; `param_values` is `None` when only describing it.
    pub fn new(
        txn: &'a mut Transaction,
        catalog: &'a Catalog,
        db: &'a str,
        params: Vec<DataType>,
        param_values: Option<&'a [Value]>,
        system: &'a dyn SystemTables,
        env: &'a dyn crate::expr::Env,
    ) -> Planner<'a> {
        Planner {
            txn,
            catalog,
            db,
            params,
            param_values,
            system,
            env,
            outer: Vec::new(),
            correlated: false,
            outer_refs: Vec::new(),
        }
    }

    /// Resolves a name in the innermost enclosing query (a correlated reference).
    fn resolve_outer(
        &mut self,
        table: Option<&str>,
        name: &str,
        err: SqlError,
    ) -> Result<(Expr, DataType)> {
        let Some(outer) = self.outer.last() else { return Err(err) };
        match outer.resolve(table, name) {
            Ok((i, t)) => {
                self.correlated = true;
                if !self.outer_refs.contains(&i) {
                    self.outer_refs.push(i);
                }
                Ok((Expr::Outer(i), t))
            }
            Err(_) => Err(err),
        }
    }

    /// Plans a subquery that may refer to `scope`; returns the plan and whether it did.
    fn plan_subquery(&mut self, q: &ast::Query, scope: &Scope) -> Result<(SelectPlan, Vec<usize>)> {
        self.outer.push(scope.clone());
        let saved = std::mem::replace(&mut self.correlated, false);
        let saved_refs = std::mem::take(&mut self.outer_refs);
        let plan = self.query(q, None);
        let refs = std::mem::replace(&mut self.outer_refs, saved_refs);
        self.correlated = saved;
        self.outer.pop();
        Ok((plan?, refs))
    }

    /// Runs an uncorrelated subquery now, when parameter values are known.
    fn run_now(&mut self, plan: &SelectPlan) -> Result<Option<Vec<Row>>> {
        let Some(params) = self.param_values else { return Ok(None) };
        let limits = ExecLimits::default();
        let cell = RefCell::new(&mut *self.txn);
        let exec = Exec { txn: &cell, limits: &limits };
        let ctx = Ctx { params, env: self.env, outer: &[], runner: Some(&exec) };
        Ok(Some(execute_select(plan, &cell, &ctx, &limits)?))
    }

    fn param(&mut self, n: usize) -> DataType {
        if self.params.len() < n {
            self.params.resize(n, DataType::Unknown);
        }
        self.params[n - 1]
    }

    /// Fixes the type of an untyped parameter or literal from its context.
    pub fn coerce(&mut self, e: Expr, ty: DataType, target: DataType) -> Result<(Expr, DataType)> {
        if ty != DataType::Unknown || target == DataType::Unknown {
            return Ok((e, ty));
        }
        match e {
            Expr::Param(i) => {
                if self.params.len() <= i {
                    self.params.resize(i + 1, DataType::Unknown);
                }
                if self.params[i] == DataType::Unknown {
                    self.params[i] = target;
                }
                Ok((Expr::Param(i), target))
            }
            Expr::Const(Value::Text(s)) => Ok((Expr::Const(Value::parse(&s, target)?), target)),
            e => Ok((e, ty)),
        }
    }

    /// Converts a value of one branch of CASE / COALESCE / GREATEST / LEAST / NULLIF to the
    /// common type of all branches (PostgreSQL's UNION-style resolution), so that
    /// `coalesce(7, 1.5) / 2` divides numerics, not integers.
    pub fn unify(&mut self, e: Expr, ty: DataType, target: DataType) -> Result<Expr> {
        let (e, ty) = self.coerce(e, ty, target)?;
        let widen = ty != target
            && ty != DataType::Unknown
            && ty.is_numeric()
            && target.is_numeric()
            && !(ty.is_integer() && target.is_integer());
        Ok(match e {
            Expr::Const(v) if widen => Expr::Const(v.cast(target)?),
            e if widen => Expr::Cast(Box::new(e), target),
            e => e,
        })
    }

    /// Binds an expression in `scope`. Aggregates are allowed when `aggs` is set.
    #[recursive::recursive]
    pub fn expr(&mut self, e: &ast::Expr, scope: &Scope, aggs: bool) -> Result<(Expr, DataType)> {
        use ast::Expr as E;
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
                        "current_timestamp" | "localtimestamp" | "now" => {
                            (Expr::Func(Func::Now, vec![]), DataType::TimestampTz)
                        }
                        "current_date" => (Expr::Func(Func::CurrentDate, vec![]), DataType::Date),
                        "current_user" | "session_user" | "user" => {
                            (Expr::Func(Func::CurrentUser, vec![]), DataType::Text)
                        }
                        "current_schema" => {
                            (Expr::Func(Func::CurrentSchema, vec![]), DataType::Text)
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
                    .or_else(|e| self.resolve_outer(Some(table), col, e))
                    .map_err(|err| err.located(parts.first().and_then(location_of)))?
            }
            E::Value(v) => self.literal(&v.value)?,
            E::Nested(inner) => self.expr(inner, scope, aggs)?,
            E::UnaryOp { op, expr } => {
                let (x, ty) = self.expr(expr, scope, aggs)?;
                match op {
                    ast::UnaryOperator::Not => {
                        let (x, _) = self.coerce(x, ty, DataType::Bool)?;
                        (Expr::Not(Box::new(x)), DataType::Bool)
                    }
                    ast::UnaryOperator::Minus => match x {
                        Expr::Const(Value::Int(i))
                            if i.checked_neg().is_some_and(|n| check_int_range(n, ty).is_ok()) =>
                        {
                            (Expr::Const(Value::Int(-i)), ty)
                        }
                        Expr::Const(Value::Numeric(d)) => (Expr::Const(Value::Numeric(-d)), ty),
                        // Negation is done in 64 bits (22003 past them); a narrower result
                        // is range-checked, as for the other arithmetic operators.
                        x if matches!(ty, DataType::Int2 | DataType::Int4) => {
                            (Expr::Cast(Box::new(Expr::Neg(Box::new(x))), ty), ty)
                        }
                        x => (Expr::Neg(Box::new(x)), ty),
                    },
                    ast::UnaryOperator::Plus => (x, ty),
                    other => return Err(SqlError::unsupported(format!("the operator {other}"))),
                }
            }
            E::BinaryOp {
                left,
                op: op @ (ast::BinaryOperator::Eq | ast::BinaryOperator::NotEq),
                right,
            } if matches!(left.as_ref(), E::Tuple(_)) => {
                let eq = self.row_equal(left, right, scope, aggs)?;
                (
                    if *op == ast::BinaryOperator::NotEq { Expr::Not(Box::new(eq)) } else { eq },
                    DataType::Bool,
                )
            }
            E::BinaryOp { left, op, right } => self.binary(left, op, right, scope, aggs)?,
            E::IsNull(x) | E::IsNotNull(x) => {
                let (x, _) = self.expr(x, scope, aggs)?;
                (Expr::IsNull(Box::new(x), matches!(e, E::IsNotNull(_))), DataType::Bool)
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
                (
                    Expr::IsDistinct(
                        Box::new(a),
                        Box::new(b),
                        matches!(e, E::IsNotDistinctFrom(..)),
                    ),
                    DataType::Bool,
                )
            }
            E::InList { expr, list, negated } if matches!(expr.as_ref(), E::Tuple(_)) => {
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
                let mut ty = ty;
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
            E::InSubquery { expr, subquery, negated } => {
                let (x, ty) = self.expr(expr, scope, aggs)?;
                let (plan, refs) = self.plan_subquery(subquery, scope)?;
                if plan.columns.len() != 1 {
                    return Err(SqlError::syntax("subquery has too many columns"));
                }
                let (x, _) = self.coerce(x, ty, plan.columns[0].1)?;
                if refs.is_empty() {
                    if let Some(rows) = self.run_now(&plan)? {
                        let values =
                            rows.into_iter().filter_map(|r| r.into_iter().next()).collect();
                        return Ok((
                            Expr::InValues(Box::new(x), Arc::new(values), *negated),
                            DataType::Bool,
                        ));
                    }
                }
                (
                    Expr::Subquery(
                        SubPlan(Arc::new(plan)),
                        SubqueryKind::In(Box::new(x), *negated),
                        refs,
                    ),
                    DataType::Bool,
                )
            }
            E::Subquery(q) => {
                let (plan, refs) = self.plan_subquery(q, scope)?;
                if plan.columns.len() != 1 {
                    return Err(SqlError::syntax("subquery must return only one column"));
                }
                let ty = plan.columns[0].1;
                if refs.is_empty() {
                    if let Some(rows) = self.run_now(&plan)? {
                        if rows.len() > 1 {
                            return Err(SqlError::new(
                                code::CARDINALITY,
                                "more than one row returned by a subquery used as an expression",
                            ));
                        }
                        let v = rows
                            .into_iter()
                            .next()
                            .and_then(|r| r.into_iter().next())
                            .unwrap_or(Value::Null);
                        return Ok((Expr::Const(v), ty));
                    }
                }
                (Expr::Subquery(SubPlan(Arc::new(plan)), SubqueryKind::Scalar, refs), ty)
            }
            E::Exists { subquery, negated } => {
                let (plan, refs) = self.plan_subquery(subquery, scope)?;
                if refs.is_empty() {
                    if let Some(rows) = self.run_now(&plan)? {
                        return Ok((
                            Expr::Const(Value::Bool(rows.is_empty() == *negated)),
                            DataType::Bool,
                        ));
                    }
                }
                (
                    Expr::Subquery(SubPlan(Arc::new(plan)), SubqueryKind::Exists(*negated), refs),
                    DataType::Bool,
                )
            }
            E::AnyOp { left, compare_op, right, .. } => {
                let op = match compare_op {
                    ast::BinaryOperator::Eq => BinOp::Eq,
                    ast::BinaryOperator::NotEq => BinOp::NotEq,
                    ast::BinaryOperator::Lt => BinOp::Lt,
                    ast::BinaryOperator::LtEq => BinOp::LtEq,
                    ast::BinaryOperator::Gt => BinOp::Gt,
                    ast::BinaryOperator::GtEq => BinOp::GtEq,
                    other => return Err(SqlError::unsupported(format!("{other} ANY"))),
                };
                let (x, _) = self.expr(left, scope, aggs)?;
                let (arr, _) = self.expr(right, scope, aggs)?;
                (Expr::AnyOp(Box::new(x), op, Box::new(arr)), DataType::Bool)
            }
            E::Collate { expr, .. } => self.expr(expr, scope, aggs)?,
            E::CompoundFieldAccess { root, access_chain } => {
                let [ast::AccessExpr::Subscript(ast::Subscript::Index { index })] =
                    access_chain.as_slice()
                else {
                    return Err(SqlError::unsupported(format!("the expression {e}")));
                };
                let (arr, _) = self.expr(root, scope, aggs)?;
                let (i, ity) = self.expr(index, scope, aggs)?;
                let (i, _) = self.coerce(i, ity, DataType::Int8)?;
                (Expr::Func(Func::ArrayElement, vec![arr, i]), DataType::Text)
            }
            E::Between { expr, negated, low, high } => {
                let (x1, l) = self.comparable(expr, low, scope, aggs)?;
                let (x2, h) = self.comparable(expr, high, scope, aggs)?;
                let both = Expr::And(
                    Box::new(Expr::Binary(BinOp::GtEq, Box::new(x1), Box::new(l))),
                    Box::new(Expr::Binary(BinOp::LtEq, Box::new(x2), Box::new(h))),
                );
                (if *negated { Expr::Not(Box::new(both)) } else { both }, DataType::Bool)
            }
            E::Like { negated, expr, pattern, escape_char, any: false }
            | E::ILike { negated, expr, pattern, escape_char, any: false } => {
                if escape_char.is_some() {
                    return Err(SqlError::unsupported("LIKE … ESCAPE"));
                }
                let (x, _) = self.expr(expr, scope, aggs)?;
                let (p, pty) = self.expr(pattern, scope, aggs)?;
                let (p, _) = self.coerce(p, pty, DataType::Text)?;
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
            E::Case { operand, conditions, else_result, .. } => {
                let operand = match operand {
                    Some(o) => Some(Box::new(self.expr(o, scope, aggs)?.0)),
                    None => None,
                };
                let mut whens = Vec::new();
                let mut ty = DataType::Unknown;
                for cw in conditions {
                    let (w, _) = self.expr(&cw.condition, scope, aggs)?;
                    let (t, tty) = self.expr(&cw.result, scope, aggs)?;
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
                let otherwise = match otherwise {
                    Some((x, xty)) => Some(Box::new(self.unify(x, xty, ty)?)),
                    None => None,
                };
                (Expr::Case { operand, whens: unified, otherwise }, ty)
            }
            E::Cast { expr, data_type: dt, .. } => {
                let ty = data_type(dt)?;
                let (x, xty) = self.expr(expr, scope, aggs)?;
                match x {
                    Expr::Const(v) => (Expr::Const(v.cast_explicit(ty)?), ty),
                    x => {
                        let (x, _) = self.coerce(x, xty, ty)?;
                        (Expr::Cast(Box::new(x), ty), ty)
                    }
                }
            }
            E::TypedString(ts) => {
                let ty = data_type(&ts.data_type)?;
                let text = match &ts.value.value {
                    ast::Value::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                (Expr::Const(Value::parse(&text, ty)?), ty)
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
            E::Trim { expr, trim_where: None, trim_what: None, .. } => {
                (Expr::Func(Func::Trim, vec![self.expr(expr, scope, aggs)?.0]), DataType::Text)
            }
            other => return Err(SqlError::unsupported(format!("the expression {other}"))),
        })
    }

    fn literal(&mut self, v: &ast::Value) -> Result<(Expr, DataType)> {
        Ok(match v {
            ast::Value::Number(n, _) => {
                if let Ok(i) = n.parse::<i64>() {
                    let ty = if i32::try_from(i).is_ok() { DataType::Int4 } else { DataType::Int8 };
                    (Expr::Const(Value::Int(i)), ty)
                } else {
                    match Value::parse(n, DataType::Numeric(None)) {
                        Ok(v) => (Expr::Const(v), DataType::Numeric(None)),
                        // Beyond numeric's 28 digits: a double, rather than no value at all.
                        Err(e) if e.code == code::NUMERIC_OUT_OF_RANGE => {
                            (Expr::Const(Value::parse(n, DataType::Float8)?), DataType::Float8)
                        }
                        Err(e) => return Err(e),
                    }
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
    fn row_equal(
        &mut self,
        left: &ast::Expr,
        right: &ast::Expr,
        scope: &Scope,
        aggs: bool,
    ) -> Result<Expr> {
        let (ast::Expr::Tuple(l), ast::Expr::Tuple(r)) = (left, right) else {
            return Err(SqlError::unsupported("comparing a row value with a non-row value"));
        };
        if l.len() != r.len() {
            return Err(SqlError::syntax("row values of different sizes cannot be compared"));
        }
        let mut all = Vec::with_capacity(l.len());
        for (a, b) in l.iter().zip(r) {
            let (a, b) = self.comparable(a, b, scope, aggs)?;
            all.push(Expr::Binary(BinOp::Eq, Box::new(a), Box::new(b)));
        }
        Ok(balanced(true, all))
    }

    fn comparable(
        &mut self,
        a: &ast::Expr,
        b: &ast::Expr,
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, Expr)> {
        let (a, at) = self.expr(a, scope, aggs)?;
        let (b, bt) = self.expr(b, scope, aggs)?;
        let (a, at) = self.coerce(a, at, bt)?;
        let (b, _) = self.coerce(b, bt, at)?;
        Ok((a, b))
    }

    fn binary(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        use ast::BinaryOperator as O;
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
                let mut bound = Vec::with_capacity(operands.len());
                for operand in operands {
                    let (x, ty) = self.expr(operand, scope, aggs)?;
                    bound.push(self.coerce(x, ty, DataType::Bool)?.0);
                }
                return Ok((balanced(*op == O::And, bound), DataType::Bool));
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
        let ty = match bop {
            BinOp::Concat => {
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
        let (a, at2) = self.coerce(a, at, bt)?;
        let (b, _) = self.coerce(b, bt, at2)?;
        let ty = if ty == DataType::Bool { ty } else { DataType::common(ty, DataType::Unknown) };
        // Fold constants so a key lookup sees a plain value. As in PostgreSQL, a constant
        // expression that fails (overflow, division by zero) fails the statement when it is
        // planned, whether or not a row would have evaluated it.
        if let (Expr::Const(x), Expr::Const(y)) = (&a, &b) {
            let v = crate::expr::binary(bop, x.clone(), y.clone())?;
            let v = match (&v, ty) {
                (Value::Int(_), DataType::Int4 | DataType::Int2) => v.cast(ty)?,
                _ => v,
            };
            return Ok((Expr::Const(v), ty));
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

    fn function(
        &mut self,
        f: &ast::Function,
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        let name = object_name(&f.name)?;
        if f.over.is_some() {
            return Err(SqlError::unsupported("window functions"));
        }
        let (args, distinct, star) = match &f.args {
            ast::FunctionArguments::None => (vec![], false, false),
            ast::FunctionArguments::List(list) => {
                let distinct =
                    matches!(list.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct));
                let mut star = false;
                let mut args = Vec::new();
                for a in &list.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => {
                            args.push(x.clone())
                        }
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                        other => {
                            return Err(SqlError::unsupported(format!("the argument {other}")))
                        }
                    }
                }
                (args, distinct, star)
            }
            ast::FunctionArguments::Subquery(q) => {
                if name != "array" {
                    return Err(SqlError::unsupported(format!("{name}(subquery)")));
                }
                let (plan, refs) = self.plan_subquery(q, scope)?;
                return Ok((
                    Expr::Subquery(SubPlan(Arc::new(plan)), SubqueryKind::Array, refs),
                    DataType::Text,
                ));
            }
        };
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
                Some(AggFunc::StringAgg(sep))
            }
            _ => None,
        };
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
                return Ok((
                    Expr::Agg(AggFunc::Count, false, None, DataType::Int8),
                    DataType::Int8,
                ));
            }
            let args = if matches!(agg, AggFunc::StringAgg(_)) { &args[..1] } else { &args[..] };
            let [arg] = args else {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name} takes exactly one argument"),
                ));
            };
            let (x, ty) = self.expr(arg, scope, false)?;
            let out = match agg {
                AggFunc::StringAgg(_) => DataType::Text,
                AggFunc::Count => DataType::Int8,
                AggFunc::Sum => match ty {
                    DataType::Int2 | DataType::Int4 => DataType::Int8,
                    DataType::Int8 | DataType::Numeric(_) | DataType::Unknown => {
                        DataType::Numeric(None)
                    }
                    DataType::Float4 | DataType::Float8 => DataType::Float8,
                    t => {
                        return Err(SqlError::new(
                            code::UNDEFINED_FUNCTION,
                            format!("function sum({}) does not exist", t.sql_name()),
                        ))
                    }
                },
                AggFunc::Avg => match ty {
                    DataType::Float4 | DataType::Float8 => DataType::Float8,
                    t if t.is_numeric() || t == DataType::Unknown => DataType::Numeric(None),
                    t => {
                        return Err(SqlError::new(
                            code::UNDEFINED_FUNCTION,
                            format!("function avg({}) does not exist", t.sql_name()),
                        ))
                    }
                },
                AggFunc::Min | AggFunc::Max => ty,
            };
            return Ok((Expr::Agg(agg, distinct, Some(Box::new(x)), out), out));
        }
        let mut bound = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for a in &args {
            let (x, t) = self.expr(a, scope, aggs)?;
            bound.push(x);
            types.push(t);
        }
        let arity = |n: std::ops::RangeInclusive<usize>| -> Result<()> {
            if n.contains(&args.len()) {
                Ok(())
            } else {
                Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name} with {} arguments does not exist", args.len()),
                )
                .hint("No function matches the given name and argument types."))
            }
        };
        let (func, ty) = match name.as_str() {
            "lower" => (Func::Lower, DataType::Text),
            "upper" => (Func::Upper, DataType::Text),
            "length" | "char_length" | "character_length" => (Func::Length, DataType::Int4),
            "abs" => (Func::Abs, types.first().copied().unwrap_or(DataType::Numeric(None))),
            "coalesce" => (Func::Coalesce, types.iter().fold(DataType::Unknown, |a, b| DataType::common(a, *b))),
            "nullif" => (Func::Nullif, types.iter().fold(DataType::Unknown, |a, b| DataType::common(a, *b))),
            "greatest" => (Func::Greatest, types.iter().fold(DataType::Unknown, |a, b| DataType::common(a, *b))),
            "least" => (Func::Least, types.iter().fold(DataType::Unknown, |a, b| DataType::common(a, *b))),
            "round" => (Func::Round, types.first().copied().unwrap_or(DataType::Numeric(None))),
            "floor" => (Func::Floor, types.first().copied().unwrap_or(DataType::Numeric(None))),
            "ceil" | "ceiling" => (Func::Ceil, types.first().copied().unwrap_or(DataType::Numeric(None))),
            "substr" | "substring" => (Func::Substr, DataType::Text),
            "btrim" => (Func::Trim, DataType::Text),
            "concat" => (Func::Concat, DataType::Text),
            "repeat" => (Func::Repeat, DataType::Text),
            "pg_cancel_backend" => (Func::CancelBackend, DataType::Bool),
            "pg_terminate_backend" => (Func::TerminateBackend, DataType::Bool),
            "pg_sleep" => (Func::Sleep, DataType::Text),
            "now" | "transaction_timestamp" | "statement_timestamp" | "current_timestamp" | "localtimestamp" => {
                (Func::Now, DataType::TimestampTz)
            }
            "current_date" => (Func::CurrentDate, DataType::Date),
            "random" => (Func::Random, DataType::Float8),
            "version" => (Func::Version, DataType::Text),
            "current_database" => (Func::CurrentDatabase, DataType::Text),
            "current_schema" => (Func::CurrentSchema, DataType::Text),
            "current_user" | "session_user" => (Func::CurrentUser, DataType::Text),
            "pg_backend_pid" => (Func::BackendPid, DataType::Int4),
            "kiln_sync" => (Func::KilnSync, DataType::Text),
            "kiln_persist" => (Func::KilnPersist, DataType::Text),
            "kiln_last_txid" => (Func::KilnLastTxid, DataType::Text),
            "kiln_txn_status" => (Func::KilnTxnStatus, DataType::Text),
            "kiln_wait" => (Func::KilnWait, DataType::Text),
            "kiln_fault_fail_syncs" => (Func::KilnFaultFailSyncs, DataType::Text),
            "kiln_fault_panic" => (Func::KilnFaultPanic, DataType::Text),
            "kiln_fault_disk_full" => (Func::KilnFaultDiskFull, DataType::Text),
            "pg_table_is_visible" | "pg_type_is_visible" | "pg_function_is_visible" => (Func::Catalog(CatalogFunc::TableIsVisible), DataType::Bool),
            "pg_get_userbyid" => (Func::Catalog(CatalogFunc::UserById), DataType::Text),
            "format_type" => (Func::Catalog(CatalogFunc::FormatType), DataType::Text),
            "pg_get_expr" => (Func::Catalog(CatalogFunc::GetExpr), DataType::Text),
            "pg_get_indexdef" => (Func::Catalog(CatalogFunc::IndexDef), DataType::Text),
            "pg_get_constraintdef" => (Func::Catalog(CatalogFunc::ConstraintDef), DataType::Text),
            "pg_encoding_to_char" => (Func::Catalog(CatalogFunc::EncodingToChar), DataType::Text),
            "pg_relation_is_publishable" => (Func::Catalog(CatalogFunc::RelationIsPublishable), DataType::Bool),
            "pg_get_statisticsobjdef_columns" => (Func::Catalog(CatalogFunc::StatisticsColumns), DataType::Text),
            "obj_description" | "col_description" | "shobj_description" => (Func::Catalog(CatalogFunc::Description), DataType::Text),
            "current_schemas" => (Func::Catalog(CatalogFunc::CurrentSchemas), DataType::Text),
            "has_table_privilege" | "has_schema_privilege" | "has_database_privilege" => (Func::Catalog(CatalogFunc::HasPrivilege), DataType::Bool),
            "array_to_string" => (Func::ArrayToString, DataType::Text),
            "array_upper" | "array_length" | "cardinality" => (Func::ArrayUpper, DataType::Int4),
            "array_position" => (Func::ArrayPosition, DataType::Int4),
            "quote_ident" => (Func::QuoteIdent, DataType::Text),
            _ => {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name} does not exist"),
                )
                .hint("Kiln supports the common scalar functions, count/sum/min/max/avg and the kiln_* functions."))
            }
        };
        match func {
            Func::Lower
            | Func::Upper
            | Func::Length
            | Func::Abs
            | Func::Floor
            | Func::Ceil
            | Func::Trim => arity(1..=1)?,
            Func::Round => arity(1..=2)?,
            Func::Nullif => arity(2..=2)?,
            Func::Substr => arity(2..=3)?,
            Func::Repeat => arity(2..=2)?,
            Func::CancelBackend | Func::Sleep => arity(1..=1)?,
            Func::TerminateBackend => arity(1..=2)?,
            Func::Coalesce | Func::Greatest | Func::Least | Func::Concat => arity(1..=100)?,
            Func::KilnTxnStatus => arity(1..=1)?,
            Func::KilnWait => arity(1..=2)?,
            Func::KilnFaultFailSyncs | Func::KilnFaultDiskFull => arity(1..=1)?,
            Func::Catalog(_) => arity(0..=4)?,
            Func::ArrayToString | Func::ArrayPosition | Func::ArrayElement => arity(2..=3)?,
            Func::ArrayUpper => arity(1..=2)?,
            Func::QuoteIdent => arity(1..=1)?,
            _ => arity(0..=0)?,
        }
        // Untyped arguments take the type the function wants.
        let mut fixed = Vec::with_capacity(bound.len());
        for (i, (x, t)) in bound.into_iter().zip(types).enumerate() {
            let want = match (func, i) {
                (Func::Substr, 1 | 2)
                | (Func::Repeat, 1)
                | (Func::Round, 1)
                | (Func::KilnWait, 1)
                | (Func::KilnFaultFailSyncs | Func::KilnFaultDiskFull, 0)
                | (Func::ArrayUpper, 1)
                | (Func::ArrayElement, 1) => DataType::Int8,
                (Func::Catalog(_), _) => DataType::Unknown,
                (Func::Abs | Func::Round | Func::Floor | Func::Ceil, 0) => DataType::Numeric(None),
                (Func::Sleep, 0) => DataType::Float8,
                (Func::CancelBackend | Func::TerminateBackend, 0) => DataType::Int4,
                (Func::TerminateBackend, 1) => DataType::Int8,
                (Func::Coalesce | Func::Greatest | Func::Least | Func::Nullif, _) => {
                    fixed.push(self.unify(x, t, ty)?);
                    continue;
                }
                _ => DataType::Text,
            };
            fixed.push(self.coerce(x, t, want)?.0);
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
        if func.is_immutable() && fixed.iter().all(|a| matches!(a, Expr::Const(_))) {
            let ctx = crate::expr::Ctx::new(&[], self.env);
            let value = Expr::Func(func, fixed).eval(&[], &ctx)?;
            let value = match (&value, ty) {
                (Value::Int(_), DataType::Int4 | DataType::Int2) => value.cast(ty)?,
                _ => value,
            };
            return Ok((Expr::Const(value), ty));
        }
        Ok((Expr::Func(func, fixed), ty))
    }

    /// Plans a query (SELECT, VALUES). `expected` gives target types for VALUES rows.
    pub fn query(&mut self, q: &ast::Query, expected: Option<&[DataType]>) -> Result<SelectPlan> {
        if q.with.is_some() {
            return Err(SqlError::unsupported("WITH (common table expressions)"));
        }
        if q.fetch.is_some() {
            return Err(SqlError::unsupported("FETCH FIRST"));
        }
        let mut plan = match q.body.as_ref() {
            ast::SetExpr::Select(s) => self.select(s, Some(q))?,
            ast::SetExpr::Values(v) => self.values(v, expected)?,
            ast::SetExpr::Query(inner) => return self.query(inner, expected),
            ast::SetExpr::SetOperation { .. } => {
                let mut plan = self.set_expr(q.body.as_ref(), expected)?;
                // ORDER BY and LIMIT apply to the combined rows, by output name or position.
                let scope = Scope {
                    cols: plan
                        .columns
                        .iter()
                        .map(|(n, t)| ScopeCol { table: None, name: n.clone(), ty: *t })
                        .collect(),
                };
                self.order_limit(q, &mut plan, Some(&scope))?;
                return Ok(plan);
            }
            other => return Err(SqlError::unsupported(format!("the query {other}"))),
        };
        if matches!(q.body.as_ref(), ast::SetExpr::Values(_)) {
            self.order_limit(q, &mut plan, None)?;
        }
        Ok(plan)
    }

    /// Plans one operand of a set operation (no ORDER BY or LIMIT of its own).
    fn set_expr(&mut self, e: &ast::SetExpr, expected: Option<&[DataType]>) -> Result<SelectPlan> {
        match e {
            ast::SetExpr::Select(s) => self.select(s, None),
            ast::SetExpr::Values(v) => self.values(v, expected),
            ast::SetExpr::Query(q) => self.query(q, expected),
            ast::SetExpr::SetOperation { left, op, set_quantifier, right } => {
                let l = self.set_expr(left, expected)?;
                let r = self.set_expr(right, expected)?;
                if l.columns.len() != r.columns.len() {
                    return Err(SqlError::syntax(format!(
                        "each {op} query must have the same number of columns"
                    )));
                }
                let kind = match op {
                    ast::SetOperator::Union => SetOpKind::Union,
                    ast::SetOperator::Intersect => SetOpKind::Intersect,
                    ast::SetOperator::Except => SetOpKind::Except,
                    other => return Err(SqlError::unsupported(format!("{other}"))),
                };
                let all = match set_quantifier {
                    ast::SetQuantifier::All => true,
                    ast::SetQuantifier::Distinct | ast::SetQuantifier::None => false,
                    other => return Err(SqlError::unsupported(format!("{op} {other}"))),
                };
                let columns: Vec<(String, DataType)> = l
                    .columns
                    .iter()
                    .zip(&r.columns)
                    .map(|((n, a), (_, b))| (n.clone(), DataType::common(*a, *b)))
                    .collect();
                let width = columns.len();
                Ok(SelectPlan::over(
                    FromItem {
                        source: Source::SetOp(Box::new(l), Box::new(r), kind, all),
                        offset: 0,
                        width,
                        join: JoinKind::Inner,
                        on: vec![],
                        filters: vec![],
                        label: format!("{op}"),
                    },
                    columns,
                ))
            }
            other => Err(SqlError::unsupported(format!("the query {other}"))),
        }
    }

    fn values(&mut self, v: &ast::Values, expected: Option<&[DataType]>) -> Result<SelectPlan> {
        let width = v.rows.first().map_or(0, |r| r.len());
        let mut rows = Vec::with_capacity(v.rows.len());
        let mut types = vec![DataType::Unknown; width];
        let mut exprs_rows = Vec::new();
        for row in &v.rows {
            if row.len() != width {
                return Err(SqlError::syntax("VALUES lists must all be the same length"));
            }
            let mut exprs = Vec::with_capacity(width);
            for (i, x) in row.iter().enumerate() {
                let (e, t) = self.expr(x, &Scope::default(), false)?;
                let target = expected.and_then(|t| t.get(i).copied()).unwrap_or(DataType::Unknown);
                let (e, t) = self.coerce(e, t, target)?;
                types[i] = DataType::common(types[i], t);
                exprs.push(e);
            }
            exprs_rows.push(exprs);
        }
        // VALUES rows become a derived row source evaluated at execution (they may hold
        // parameters), expressed as a UNION of one-row projections: keep them as projections
        // over a constant source, one plan per row, by storing them in `Source::Rows` when
        // constant and otherwise evaluating in `execute_values`.
        for exprs in &exprs_rows {
            if exprs.iter().all(|e| matches!(e, Expr::Const(_))) {
                rows.push(
                    exprs
                        .iter()
                        .map(|e| if let Expr::Const(v) = e { v.clone() } else { Value::Null })
                        .collect(),
                );
            }
        }
        let columns: Vec<(String, DataType)> = types
            .iter()
            .enumerate()
            .map(|(i, t)| {
                (
                    format!("column{}", i + 1),
                    if *t == DataType::Unknown { DataType::Text } else { *t },
                )
            })
            .collect();
        if rows.len() == exprs_rows.len() {
            return Ok(SelectPlan::over(
                FromItem {
                    source: Source::Rows(Arc::new(rows)),
                    offset: 0,
                    width,
                    join: JoinKind::Inner,
                    on: vec![],
                    filters: vec![],
                    label: "VALUES".into(),
                },
                columns,
            ));
        }
        // Rows with parameters or functions: one source row per VALUES row, selected by a
        // CASE on a generated row number.
        let n = exprs_rows.len() as i64;
        let projection = (0..width)
            .map(|c| Expr::Case {
                operand: Some(Box::new(Expr::Column(0))),
                whens: exprs_rows
                    .iter()
                    .enumerate()
                    .map(|(r, exprs)| (Expr::Const(Value::Int(r as i64 + 1)), exprs[c].clone()))
                    .collect(),
                otherwise: None,
            })
            .collect();
        Ok(SelectPlan {
            from: vec![FromItem {
                source: Source::Series(
                    Expr::Const(Value::Int(1)),
                    Expr::Const(Value::Int(n)),
                    None,
                ),
                offset: 0,
                width: 1,
                join: JoinKind::Inner,
                on: vec![],
                filters: vec![],
                label: "VALUES".into(),
            }],
            width: 1,
            constant_filters: vec![],
            grouping: None,
            having: None,
            projection,
            columns,
            distinct: false,
            order: vec![],
            limit: None,
            offset: None,
            lock: false,
        })
    }

    /// Adds a FROM item for a table factor; returns its scope columns.
    fn bind_from_item(
        &mut self,
        f: &ast::TableFactor,
        offset: usize,
    ) -> Result<(FromItem, Vec<ScopeCol>)> {
        match f {
            ast::TableFactor::Table { name, alias, args, .. } => {
                let tname = object_name(name)?;
                let alias_name = alias
                    .as_ref()
                    .map(|a| ident(&a.name))
                    .unwrap_or_else(|| tname.rsplit('.').next().unwrap_or(&tname).to_string());
                let rename: Vec<String> = alias
                    .as_ref()
                    .map(|a| a.columns.iter().map(|c| ident(&c.name)).collect())
                    .unwrap_or_default();
                if let Some(args) = args {
                    if tname != "generate_series" {
                        return Err(SqlError::unsupported(format!("the table function {tname}")));
                    }
                    let mut exprs = Vec::new();
                    for a in &args.args {
                        match a {
                            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => {
                                let (e, t) = self.expr(x, &Scope::default(), false)?;
                                exprs.push(self.coerce(e, t, DataType::Int8)?.0);
                            }
                            other => {
                                return Err(SqlError::unsupported(format!("the argument {other}")))
                            }
                        }
                    }
                    if !(2..=3).contains(&exprs.len()) {
                        return Err(SqlError::new(
                            code::UNDEFINED_FUNCTION,
                            "generate_series takes 2 or 3 arguments",
                        ));
                    }
                    let step = exprs.get(2).cloned();
                    let col = rename.first().cloned().unwrap_or_else(|| alias_name.clone());
                    let item = FromItem {
                        source: Source::Series(exprs[0].clone(), exprs[1].clone(), step),
                        offset,
                        width: 1,
                        join: JoinKind::Inner,
                        on: vec![],
                        filters: vec![],
                        label: "generate_series".into(),
                    };
                    return Ok((
                        item,
                        vec![ScopeCol { table: Some(alias_name), name: col, ty: DataType::Int4 }],
                    ));
                }
                let (source, cols, label) = match self.catalog.table(self.txn, self.db, &tname)? {
                    Some(t) => {
                        let cols: Vec<(String, DataType)> =
                            t.columns.iter().map(|c| (c.name.clone(), c.ty)).collect();
                        let label = t.name.clone();
                        (Source::Table(t, Access::Full), cols, label)
                    }
                    None => match self.system.system_table(self.txn, &tname)? {
                        Some((cols, rows)) => (Source::Rows(Arc::new(rows)), cols, tname.clone()),
                        None => {
                            return Err(SqlError::new(
                                code::UNDEFINED_TABLE,
                                format!("relation \"{tname}\" does not exist"),
                            ))
                        }
                    },
                };
                let scope = cols
                    .iter()
                    .enumerate()
                    .map(|(i, (n, ty))| ScopeCol {
                        table: Some(alias_name.clone()),
                        name: rename.get(i).cloned().unwrap_or_else(|| n.clone()),
                        ty: *ty,
                    })
                    .collect::<Vec<_>>();
                let item = FromItem {
                    source,
                    offset,
                    width: cols.len(),
                    join: JoinKind::Inner,
                    on: vec![],
                    filters: vec![],
                    label,
                };
                Ok((item, scope))
            }
            ast::TableFactor::Derived { lateral: false, subquery, alias, .. } => {
                let plan = self.query(subquery, None)?;
                let Some(rows) = self.run_now(&plan)? else {
                    return Err(SqlError::unsupported("a derived table in a prepared statement"));
                };
                let alias_name = alias.as_ref().map(|a| ident(&a.name));
                let rename: Vec<String> = alias
                    .as_ref()
                    .map(|a| a.columns.iter().map(|c| ident(&c.name)).collect())
                    .unwrap_or_default();
                let scope = plan
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(i, (n, ty))| ScopeCol {
                        table: alias_name.clone(),
                        name: rename.get(i).cloned().unwrap_or_else(|| n.clone()),
                        ty: *ty,
                    })
                    .collect::<Vec<_>>();
                let width = scope.len();
                Ok((
                    FromItem {
                        source: Source::Rows(Arc::new(rows)),
                        offset,
                        width,
                        join: JoinKind::Inner,
                        on: vec![],
                        filters: vec![],
                        label: "subquery".into(),
                    },
                    scope,
                ))
            }
            other => Err(SqlError::unsupported(format!("the FROM item {other}"))),
        }
    }

    fn select(&mut self, s: &ast::Select, q: Option<&ast::Query>) -> Result<SelectPlan> {
        if s.having.is_some() && matches!(s.group_by, ast::GroupByExpr::All(_)) {
            return Err(SqlError::unsupported("GROUP BY ALL"));
        }
        if !s.lateral_views.is_empty() || s.qualify.is_some() || !s.named_window.is_empty() {
            return Err(SqlError::unsupported("this SELECT clause"));
        }
        // FROM: items in order; ON conditions bound in the scope so far.
        let mut scope = Scope::default();
        let mut from: Vec<FromItem> = Vec::new();
        let mut where_conjuncts: Vec<Expr> = Vec::new();
        for twj in &s.from {
            let (item, cols) = self.bind_from_item(&twj.relation, scope.cols.len())?;
            scope.cols.extend(cols);
            from.push(item);
            for j in &twj.joins {
                let (kind, constraint) = match &j.join_operator {
                    ast::JoinOperator::Join(c) | ast::JoinOperator::Inner(c) => {
                        (JoinKind::Inner, Some(c))
                    }
                    ast::JoinOperator::Left(c) | ast::JoinOperator::LeftOuter(c) => {
                        (JoinKind::Left, Some(c))
                    }
                    ast::JoinOperator::CrossJoin(_) => (JoinKind::Inner, None),
                    other => {
                        return Err(SqlError::unsupported(
                            format!("the join {other:?}")
                                .split('(')
                                .next()
                                .unwrap_or("this join")
                                .to_string(),
                        ))
                    }
                };
                if let ast::TableFactor::Derived { lateral: true, .. } = &j.relation {
                    return Err(SqlError::unsupported("LATERAL"));
                }
                let (mut item, cols) = self.bind_from_item(&j.relation, scope.cols.len())?;
                let start = scope.cols.len();
                scope.cols.extend(cols);
                item.join = kind;
                match constraint {
                    Some(ast::JoinConstraint::On(on)) => {
                        let (e, t) = self.expr(on, &scope, false)?;
                        let (e, _) = self.coerce(e, t, DataType::Bool)?;
                        split_and(e, &mut item.on);
                    }
                    Some(ast::JoinConstraint::Using(cols)) => {
                        for c in cols {
                            let name = object_name(c)?;
                            let left = scope.cols[..start].iter().position(|x| x.name == name);
                            let right = scope.cols[start..]
                                .iter()
                                .position(|x| x.name == name)
                                .map(|i| i + start);
                            match (left, right) {
                                (Some(l), Some(r)) => item.on.push(Expr::Binary(BinOp::Eq, Box::new(Expr::Column(l)), Box::new(Expr::Column(r)))),
                                _ => return Err(SqlError::new(code::UNDEFINED_COLUMN, format!("column \"{name}\" specified in USING clause does not exist"))),
                            }
                        }
                    }
                    Some(ast::JoinConstraint::None) | None => {}
                    Some(ast::JoinConstraint::Natural) => {
                        return Err(SqlError::unsupported("NATURAL JOIN"))
                    }
                }
                from.push(item);
            }
        }
        let width = scope.cols.len();
        if let Some(w) = &s.selection {
            let (e, t) = self.expr(w, &scope, false)?;
            let (e, _) = self.coerce(e, t, DataType::Bool)?;
            split_and(e, &mut where_conjuncts);
        }
        // Place each WHERE conjunct at the first item after which it can be evaluated.
        let mut constant_filters = Vec::new();
        for c in where_conjuncts {
            let level = from
                .iter()
                .rposition(|item| c.uses_columns_in(item.offset..item.offset + item.width));
            match level {
                None => constant_filters.push(c),
                Some(l) => from[l].filters.push(c),
            }
        }
        // Access paths.
        for item in &mut from {
            choose_access(item);
        }
        // Grouping and projection.
        let group_exprs: Vec<Expr> = match &s.group_by {
            ast::GroupByExpr::Expressions(exprs, mods) if mods.is_empty() => {
                let mut out = Vec::new();
                for g in exprs {
                    // GROUP BY 1 refers to an output column.
                    if let ast::Expr::Value(v) = g {
                        if let ast::Value::Number(n, _) = &v.value {
                            let idx: usize =
                                n.parse().map_err(|_| SqlError::syntax("bad GROUP BY position"))?;
                            let item = s.projection.get(idx.wrapping_sub(1)).ok_or_else(|| {
                                SqlError::new(
                                    code::INVALID_COLUMN_REFERENCE,
                                    format!("GROUP BY position {idx} is not in select list"),
                                )
                            })?;
                            let x = match item {
                                ast::SelectItem::UnnamedExpr(x)
                                | ast::SelectItem::ExprWithAlias { expr: x, .. } => x,
                                _ => return Err(SqlError::unsupported("GROUP BY a wildcard")),
                            };
                            out.push(self.expr(x, &scope, false)?.0);
                            continue;
                        }
                    }
                    // A bare name may be an output alias.
                    if let ast::Expr::Identifier(id) = g {
                        let name = ident(id);
                        if scope.resolve(None, &name).is_err() {
                            if let Some(x) = s.projection.iter().find_map(|p| match p {
                                ast::SelectItem::ExprWithAlias { expr, alias }
                                    if ident(alias) == name =>
                                {
                                    Some(expr)
                                }
                                _ => None,
                            }) {
                                out.push(self.expr(x, &scope, false)?.0);
                                continue;
                            }
                        }
                    }
                    out.push(self.expr(g, &scope, false)?.0);
                }
                out
            }
            _ => return Err(SqlError::unsupported("this GROUP BY")),
        };
        let mut projection = Vec::new();
        let mut columns = Vec::new();
        for item in &s.projection {
            match item {
                ast::SelectItem::Wildcard(_) => {
                    for (i, c) in scope.cols.iter().enumerate() {
                        projection.push(Expr::Column(i));
                        columns.push((c.name.clone(), c.ty));
                    }
                }
                ast::SelectItem::QualifiedWildcard(kind, _) => {
                    let name = match kind {
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => object_name(n)?,
                        _ => return Err(SqlError::unsupported("this wildcard")),
                    };
                    let mut any = false;
                    for (i, c) in scope.cols.iter().enumerate() {
                        if c.table.as_deref() == Some(name.as_str()) {
                            projection.push(Expr::Column(i));
                            columns.push((c.name.clone(), c.ty));
                            any = true;
                        }
                    }
                    if !any {
                        return Err(SqlError::new(
                            code::UNDEFINED_TABLE,
                            format!("missing FROM-clause entry for table \"{name}\""),
                        ));
                    }
                }
                ast::SelectItem::UnnamedExpr(x) => {
                    let (e, t) = self.expr(x, &scope, true)?;
                    projection.push(e);
                    columns.push((
                        output_name(x),
                        if t == DataType::Unknown { DataType::Text } else { t },
                    ));
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    let (e, t) = self.expr(expr, &scope, true)?;
                    projection.push(e);
                    columns.push((
                        ident(alias),
                        if t == DataType::Unknown { DataType::Text } else { t },
                    ));
                }
                other => return Err(SqlError::unsupported(format!("the select item {other}"))),
            }
        }
        let having = match &s.having {
            Some(h) => Some(self.expr(h, &scope, true)?.0),
            None => None,
        };
        let mut plan = SelectPlan {
            from,
            width,
            constant_filters,
            grouping: None,
            having: None,
            projection,
            columns,
            distinct: matches!(s.distinct, Some(ast::Distinct::Distinct)),
            order: vec![],
            limit: None,
            offset: None,
            lock: q.is_some_and(|q| !q.locks.is_empty()),
        };
        if matches!(s.distinct, Some(ast::Distinct::On(_))) {
            return Err(SqlError::unsupported("DISTINCT ON"));
        }
        let aggregating = !group_exprs.is_empty()
            || plan.projection.iter().any(Expr::has_agg)
            || having.as_ref().is_some_and(Expr::has_agg);
        if aggregating {
            let mut grouping = Grouping { keys: group_exprs, aggs: vec![] };
            let projection = std::mem::take(&mut plan.projection);
            plan.projection = projection
                .into_iter()
                .map(|e| post_agg(e, &mut grouping))
                .collect::<Result<_>>()?;
            plan.having = match having {
                Some(h) => Some(post_agg(h, &mut grouping)?),
                None => None,
            };
            plan.grouping = Some(grouping);
            if let Some(q) = q {
                self.order_limit(q, &mut plan, Some(&scope))?;
            }
        } else {
            if having.is_some() {
                plan.having = having;
            }
            if let Some(q) = q {
                self.order_limit(q, &mut plan, Some(&scope))?;
            }
        }
        if plan.lock && !matches!(plan.from.first().map(|f| &f.source), Some(Source::Table(..))) {
            return Err(SqlError::unsupported("FOR UPDATE without a table"));
        }
        Ok(plan)
    }

    /// ORDER BY, LIMIT, OFFSET. Sort keys that are not output columns become hidden output
    /// columns (bound in `scope`, the input row, when not aggregating).
    fn order_limit(
        &mut self,
        q: &ast::Query,
        plan: &mut SelectPlan,
        scope: Option<&Scope>,
    ) -> Result<()> {
        if let Some(ob) = &q.order_by {
            let items = match &ob.kind {
                ast::OrderByKind::Expressions(items) => items,
                ast::OrderByKind::All(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
            };
            for item in items {
                let desc = matches!(item.options.sort, Some(ast::OrderBySort::Desc));
                let nulls_first = item.options.nulls_first.unwrap_or(desc);
                let pos = match &item.expr {
                    ast::Expr::Value(v) if matches!(v.value, ast::Value::Number(..)) => {
                        let ast::Value::Number(n, _) = &v.value else { unreachable!("matched") };
                        let idx: usize = n.parse().unwrap_or(0);
                        if idx == 0 || idx > plan.columns.len() {
                            return Err(SqlError::new(code::INVALID_COLUMN_REFERENCE, format!("ORDER BY position {n} is not in select list")));
                        }
                        idx - 1
                    }
                    ast::Expr::Identifier(id)
                        if plan.columns.iter().filter(|c| c.0 == ident(id)).count() == 1
                            && scope.is_none_or(|s| s.resolve(None, &ident(id)).is_err() || plan.columns.iter().any(|c| c.0 == ident(id))) =>
                    {
                        plan.columns.iter().position(|c| c.0 == ident(id)).unwrap_or(0)
                    }
                    x => match scope {
                        Some(scope) => {
                            let (mut e, _) = self.expr(x, scope, plan.grouping.is_some())?;
                            if let Some(g) = plan.grouping.as_mut() {
                                // Over the grouped row, like the projection.
                                e = post_agg(e, g)?;
                            }
                            match plan.projection[..plan.columns.len()].iter().position(|p| *p == e) {
                                Some(p) => p,
                                None => {
                                    plan.projection.push(e);
                                    plan.projection.len() - 1
                                }
                            }
                        }
                        None => {
                            return Err(SqlError::unsupported(
                                "ORDER BY an expression that is not an output column of an aggregating query",
                            ))
                        }
                    },
                };
                plan.order.push((pos, desc, nulls_first));
            }
        }
        if let Some(lc) = &q.limit_clause {
            match lc {
                ast::LimitClause::LimitOffset { limit, offset, limit_by }
                    if limit_by.is_empty() =>
                {
                    if let Some(l) = limit {
                        let (e, t) = self.expr(l, &Scope::default(), false)?;
                        plan.limit = Some(self.coerce(e, t, DataType::Int8)?.0);
                    }
                    if let Some(o) = offset {
                        let (e, t) = self.expr(&o.value, &Scope::default(), false)?;
                        plan.offset = Some(self.coerce(e, t, DataType::Int8)?.0);
                    }
                }
                _ => return Err(SqlError::unsupported("this LIMIT form")),
            }
        }
        Ok(())
    }
}

/// Where an identifier starts in the statement (line, column), for error positions.
/// `a AND b AND …` (or OR) over `terms` as a balanced tree, left to right; TRUE (FALSE) for
/// no terms.
pub fn balanced(and: bool, mut terms: Vec<Expr>) -> Expr {
    match terms.len() {
        0 => Expr::Const(Value::Bool(and)),
        1 => terms.pop().expect("one term"),
        n => {
            let right = terms.split_off(n / 2);
            let (l, r) = (Box::new(balanced(and, terms)), Box::new(balanced(and, right)));
            if and {
                Expr::And(l, r)
            } else {
                Expr::Or(l, r)
            }
        }
    }
}

fn location_of(i: &ast::Ident) -> Option<(u32, u32)> {
    let start = i.span.start;
    Some((u32::try_from(start.line).ok()?, u32::try_from(start.column).ok()?))
        .filter(|(l, _)| *l > 0)
}

trait MinKnown {
    fn min_known(self, other: DataType) -> DataType;
}

impl MinKnown for DataType {
    fn min_known(self, other: DataType) -> DataType {
        if self == DataType::Unknown {
            other
        } else {
            self
        }
    }
}

/// Splits a condition into its AND-ed parts.
#[recursive::recursive]
pub fn split_and(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::And(a, b) => {
            split_and(*a, out);
            split_and(*b, out);
        }
        e => out.push(e),
    }
}

/// PostgreSQL's output column name for an expression.
#[recursive::recursive]
pub fn output_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(i) => ident(i),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(ident).unwrap_or_default(),
        ast::Expr::Function(f) => {
            f.name.0.last().and_then(|p| p.as_ident()).map(ident).unwrap_or_default()
        }
        ast::Expr::Cast { expr, data_type, .. } => match expr.as_ref() {
            ast::Expr::Value(_) => data_type_output_name(data_type),
            inner => {
                let n = output_name(inner);
                if n == "?column?" {
                    data_type_output_name(data_type)
                } else {
                    n
                }
            }
        },
        ast::Expr::Nested(inner) => output_name(inner),
        ast::Expr::Case { .. } => "case".into(),
        ast::Expr::Substring { shorthand, .. } => {
            if *shorthand { "substr" } else { "substring" }.into()
        }
        ast::Expr::Floor { .. } => "floor".into(),
        ast::Expr::Ceil { .. } => "ceil".into(),
        ast::Expr::Trim { .. } => "btrim".into(),
        ast::Expr::Exists { .. } => "exists".into(),
        ast::Expr::Subquery(q) => match q.body.as_ref() {
            ast::SetExpr::Select(s) => match s.projection.first() {
                Some(ast::SelectItem::UnnamedExpr(x)) => output_name(x),
                Some(ast::SelectItem::ExprWithAlias { alias, .. }) => ident(alias),
                _ => "?column?".into(),
            },
            _ => "?column?".into(),
        },
        _ => "?column?".into(),
    }
}

fn data_type_output_name(t: &ast::DataType) -> String {
    // PostgreSQL names a cast column after the type's catalog name.
    match data_type(t) {
        Ok(DataType::Int2) => "int2",
        Ok(DataType::Int4) => "int4",
        Ok(DataType::Int8) => "int8",
        Ok(DataType::Float4) => "float4",
        Ok(DataType::Float8) => "float8",
        Ok(DataType::Bool) => "bool",
        Ok(DataType::Numeric(_)) => "numeric",
        Ok(DataType::Varchar(_)) => "varchar",
        Ok(DataType::Char(_)) => "bpchar",
        Ok(DataType::Text | DataType::Unknown) => "text",
        Ok(DataType::Bytea) => "bytea",
        Ok(DataType::Date) => "date",
        Ok(DataType::Timestamp) => "timestamp",
        Ok(DataType::TimestampTz) => "timestamptz",
        Err(_) => "?column?",
    }
    .into()
}

/// Rewrites an expression over the input row into one over the grouped row
/// (group keys, then aggregates).
#[recursive::recursive]
fn post_agg(e: Expr, g: &mut Grouping) -> Result<Expr> {
    if let Some(i) = g.keys.iter().position(|k| *k == e) {
        return Ok(Expr::Column(i));
    }
    match e {
        Expr::Agg(f, d, arg, ty) => {
            let arg = arg.map(|a| *a);
            let entry = (f, d, arg, ty);
            let idx = match g.aggs.iter().position(|a| *a == entry) {
                Some(i) => i,
                None => {
                    g.aggs.push(entry);
                    g.aggs.len() - 1
                }
            };
            Ok(Expr::Column(g.keys.len() + idx))
        }
        Expr::Column(_) => Err(SqlError::new(
            code::GROUPING,
            "column must appear in the GROUP BY clause or be used in an aggregate function",
        )),
        Expr::Const(_) | Expr::Param(_) => Ok(e),
        Expr::Subquery(_, _, ref refs) if !refs.is_empty() => Err(SqlError::unsupported(
            "a correlated subquery in the select list, HAVING or ORDER BY of a grouped query",
        )),
        other => other.try_map_children(&mut |c| post_agg(c, g)),
    }
}

/// Chooses how a FROM item's rows are found, from its conditions: `col = expr` on every
/// primary-key column → point lookup; on a leading part (and a range on the next) → range
/// scan; on an index's leading columns → index scan. `expr` may use earlier items' columns.
pub fn choose_access(item: &mut FromItem) {
    let Source::Table(table, access) = &mut item.source else { return };
    let conds: Vec<&Expr> = if item.join == JoinKind::Left {
        item.on.iter().collect()
    } else {
        item.on.iter().chain(item.filters.iter()).collect()
    };
    let (lo, hi) = (item.offset, item.offset + item.width);
    let eq_for = |col: usize| -> Option<Expr> {
        let target = lo + col;
        let ty = table.columns[col].ty;
        for c in &conds {
            if let Expr::Binary(BinOp::Eq, a, b) = c {
                for (x, y) in [(a, b), (b, a)] {
                    if **x == Expr::Column(target)
                        && !y.uses_columns_in(lo..hi)
                        && !y.uses_columns_from(hi)
                        && key_compatible(y, ty)
                    {
                        return Some((**y).clone());
                    }
                }
            }
        }
        None
    };
    let bound_for = |col: usize, lower: bool| -> Option<(Expr, bool)> {
        let target = lo + col;
        let ty = table.columns[col].ty;
        for c in &conds {
            if let Expr::Binary(op, a, b) = c {
                let (col_side, val, op) = if **a == Expr::Column(target) {
                    (true, b, *op)
                } else if **b == Expr::Column(target) {
                    (true, a, flip(*op))
                } else {
                    (false, a, *op)
                };
                if !col_side
                    || val.uses_columns_in(lo..hi)
                    || val.uses_columns_from(hi)
                    || !key_compatible(val, ty)
                {
                    continue;
                }
                match (op, lower) {
                    (BinOp::Gt, true) => return Some(((**val).clone(), false)),
                    (BinOp::GtEq, true) => return Some(((**val).clone(), true)),
                    (BinOp::Lt, false) => return Some(((**val).clone(), false)),
                    (BinOp::LtEq, false) => return Some(((**val).clone(), true)),
                    _ => {}
                }
            }
        }
        None
    };
    if !table.primary_key.is_empty() {
        let mut prefix = Vec::new();
        for &col in &table.primary_key {
            match eq_for(col) {
                Some(e) => prefix.push(e),
                None => break,
            }
        }
        if prefix.len() == table.primary_key.len() {
            *access = Access::Point(prefix);
            return;
        }
        if let [col] = table.primary_key[..] {
            let target = lo + col;
            let ty = table.columns[col].ty;
            for c in &conds {
                if let Expr::InList(x, list, false) = c {
                    if **x == Expr::Column(target)
                        && list.iter().all(|v| {
                            !v.uses_columns_in(lo..hi)
                                && !v.uses_columns_from(hi)
                                && key_compatible(v, ty)
                        })
                    {
                        *access = Access::Points(list.clone());
                        return;
                    }
                }
            }
        }
        let next = table.primary_key[prefix.len()];
        let (lower, upper) = (bound_for(next, true), bound_for(next, false));
        if !prefix.is_empty() || lower.is_some() || upper.is_some() {
            *access = Access::Range { prefix, lower, upper };
            return;
        }
    }
    for index in &table.indexes {
        let mut values = Vec::new();
        for &col in &index.columns {
            match eq_for(col) {
                Some(e) => values.push(e),
                None => break,
            }
        }
        if !values.is_empty() {
            *access = Access::Index(index.clone(), values);
            return;
        }
    }
}

fn flip(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::LtEq => BinOp::GtEq,
        BinOp::Gt => BinOp::Lt,
        BinOp::GtEq => BinOp::LtEq,
        o => o,
    }
}

/// Whether a value expression can be encoded as a key of a column of type `ty` (so the
/// lookup finds exactly the rows equality would).
fn key_compatible(e: &Expr, ty: DataType) -> bool {
    if !crate::encoding::key_type_supported(ty) {
        return false;
    }
    match e {
        Expr::Const(v) => {
            matches!(
                (v, ty),
                (Value::Int(_), t) if t.is_integer()
            ) || matches!((v, ty), (Value::Text(_), t) if t.is_string())
                || matches!(
                    (v, ty),
                    (Value::Bool(_), DataType::Bool)
                        | (Value::Date(_), DataType::Date)
                        | (Value::Timestamp(_), DataType::Timestamp)
                        | (Value::TimestampTz(_), DataType::TimestampTz)
                        | (Value::Bytea(_), DataType::Bytea)
                        | (Value::Float(_), DataType::Float8 | DataType::Float4)
                )
        }
        // Parameters are converted to the key type when evaluated (see `key_value`).
        Expr::Param(_)
        | Expr::Column(_)
        | Expr::Binary(..)
        | Expr::Neg(_)
        | Expr::Cast(..)
        | Expr::Func(..) => true,
        _ => false,
    }
}

/// Evaluates a key expression and converts it to the key column's type; `None` when the
/// value cannot equal any key (NULL, or a fractional number for an integer key).
fn key_value(e: &Expr, ty: DataType, row: &[Value], ctx: &Ctx) -> Result<Option<Value>> {
    let v = e.eval(row, ctx)?;
    Ok(match (v, ty) {
        (Value::Null, _) => None,
        (Value::Int(i), t) if t.is_integer() => Some(Value::Int(i)),
        (Value::Float(f), t) if t.is_integer() => {
            if f.fract() == 0.0 && f.abs() < 9.2e18 {
                Some(Value::Int(f as i64))
            } else {
                None
            }
        }
        (Value::Numeric(d), t) if t.is_integer() => {
            if d.fract().is_zero() {
                i64::try_from(d).ok().map(Value::Int)
            } else {
                None
            }
        }
        (Value::Int(i), DataType::Float4 | DataType::Float8) => Some(Value::Float(i as f64)),
        (Value::Int(i), DataType::Numeric(_)) => {
            Some(Value::Numeric(rust_decimal::Decimal::from(i)))
        }
        (Value::Numeric(d), DataType::Numeric(_)) => Some(Value::Numeric(d)),
        (Value::Text(s), t) if t.is_string() => Some(Value::Text(match t {
            DataType::Char(_) => s.trim_end_matches(' ').to_string(),
            _ => s,
        })),
        (Value::Text(s), t) => Value::parse(&s, t).ok(),
        (v, t) => match v.clone().cast(t) {
            Ok(c) if c.sql_cmp(&v) == Some(Ordering::Equal) => Some(c),
            _ => None,
        },
    })
}

/// Limits on what a statement may hold in memory.
#[derive(Debug, Clone)]
pub struct ExecLimits {
    /// Maximum rows a result may hold.
    pub rows_max: usize,
    /// The session running the statement: its interrupt flag stops the statement.
    pub activity: Option<Arc<crate::activity::Activity>>,
}

impl Default for ExecLimits {
    fn default() -> Self {
        ExecLimits { rows_max: 10_000_000, activity: None }
    }
}

impl ExecLimits {
    /// Fails with 57014 when the statement was canceled (a cancel request,
    /// statement_timeout, pg_cancel_backend, a client that went away), 57P01 when the
    /// session is being terminated. Every executor loop calls it.
    pub fn check(&self) -> Result<()> {
        match &self.activity {
            Some(a) => a.check_interrupt(),
            None => Ok(()),
        }
    }
}

/// Rows a scan reads from the engine at a time, checking for an interrupt and the row limit
/// between batches.
const SCAN_BATCH_ROWS: usize = 4096;

/// Every key and value in a range, read in batches so that a long scan can be interrupted and
/// is refused once it passes the statement's row limit (53200).
fn scan_chunked(
    txn: &TxnCell,
    keyspace: &str,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    limits: &ExecLimits,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut resume: Option<Vec<u8>> = None;
    loop {
        limits.check()?;
        let from = match &resume {
            Some(k) => Bound::Excluded(k.as_slice()),
            None => start,
        };
        let batch =
            txn.borrow_mut().scan(keyspace, Scan::bounds(from, end).limit(SCAN_BATCH_ROWS))?;
        let full = batch.len() == SCAN_BATCH_ROWS;
        resume = batch.last().map(|(k, _)| k.clone());
        out.extend(batch);
        if out.len() > limits.rows_max {
            return Err(too_many_rows(limits));
        }
        if !full {
            return Ok(out);
        }
    }
}

fn too_many_rows(limits: &ExecLimits) -> SqlError {
    SqlError::new(
        code::OUT_OF_MEMORY,
        format!("the statement would hold more than {} rows in memory", limits.rows_max),
    )
    .hint("Add a WHERE clause or LIMIT, or raise the server's rows limit.")
}

/// The rows of a table item, found by its access path; each is (primary key, row).
pub fn table_rows(
    table: &Table,
    access: &Access,
    txn: &TxnCell,
    outer: &[Value],
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<(Vec<u8>, Vec<Value>)>> {
    let ks = table.keyspace();
    let width = table.columns.len();
    let key_of = |vals: &[Expr], cols: &[usize]| -> Result<Option<Vec<u8>>> {
        let mut values = Vec::with_capacity(vals.len());
        for (e, &c) in vals.iter().zip(cols) {
            match key_value(e, table.columns[c].ty, outer, ctx)? {
                Some(v) => values.push(v),
                None => return Ok(None),
            }
        }
        Ok(Some(encode_key(&values.iter().collect::<Vec<_>>())?))
    };
    match access {
        Access::Full => {
            let rows = scan_chunked(txn, &ks, Bound::Unbounded, Bound::Unbounded, limits)?;
            rows.into_iter().map(|(k, v)| Ok((k, decode_row(&v, width)?))).collect()
        }
        Access::Points(vals) => {
            let mut keys = Vec::with_capacity(vals.len());
            for v in vals {
                if let Some(key) = key_of(std::slice::from_ref(v), &table.primary_key)? {
                    keys.push(key);
                }
            }
            keys.sort();
            keys.dedup();
            let mut out = Vec::with_capacity(keys.len());
            for key in keys {
                if let Some(v) = txn.borrow_mut().get(&ks, &key)? {
                    out.push((key, decode_row(&v, width)?));
                }
            }
            Ok(out)
        }
        Access::Point(vals) => {
            let Some(key) = key_of(vals, &table.primary_key)? else { return Ok(vec![]) };
            match txn.borrow_mut().get(&ks, &key)? {
                Some(v) => Ok(vec![(key, decode_row(&v, width)?)]),
                None => Ok(vec![]),
            }
        }
        Access::Range { prefix, lower, upper } => {
            let Some(pk) = key_of(prefix, &table.primary_key[..prefix.len()])? else {
                return Ok(vec![]);
            };
            let next_ty = table.columns[table.primary_key[prefix.len()]].ty;
            let mut start = Bound::Included(pk.clone());
            let mut end = match prefix_end(&pk) {
                Some(e) if !pk.is_empty() => Bound::Excluded(e),
                _ => Bound::Unbounded,
            };
            if let Some((e, inclusive)) = lower {
                let Some(v) = key_value(e, next_ty, outer, ctx)? else { return Ok(vec![]) };
                let mut k = pk.clone();
                crate::encoding::encode_key_value(&mut k, &v)?;
                start = if *inclusive {
                    Bound::Included(k)
                } else {
                    match prefix_end(&k) {
                        Some(e) => Bound::Included(e),
                        None => return Ok(vec![]),
                    }
                };
            }
            if let Some((e, inclusive)) = upper {
                let Some(v) = key_value(e, next_ty, outer, ctx)? else { return Ok(vec![]) };
                let mut k = pk.clone();
                crate::encoding::encode_key_value(&mut k, &v)?;
                end = if *inclusive {
                    match prefix_end(&k) {
                        Some(e) => Bound::Excluded(e),
                        None => Bound::Unbounded,
                    }
                } else {
                    Bound::Excluded(k)
                };
            }
            let rows = scan_chunked(txn, &ks, as_ref(&start), as_ref(&end), limits)?;
            rows.into_iter().map(|(k, v)| Ok((k, decode_row(&v, width)?))).collect()
        }
        Access::Index(index, vals) => {
            let Some(prefix) = key_of(vals, &index.columns[..vals.len()])? else {
                return Ok(vec![]);
            };
            let end = prefix_end(&prefix);
            let end = match &end {
                Some(e) => Bound::Excluded(e.as_slice()),
                None => Bound::Unbounded,
            };
            let entries =
                scan_chunked(txn, &index.keyspace(), Bound::Included(&prefix), end, limits)?;
            let mut out = Vec::with_capacity(entries.len());
            for (entry, pk) in entries {
                // Unique entries keep the primary key as the value; others append it to the key.
                let pk = if pk.is_empty() { index_entry_pk(table, index, &entry)? } else { pk };
                if let Some(v) = txn.borrow_mut().get(&ks, &pk)? {
                    out.push((pk, decode_row(&v, width)?));
                }
            }
            Ok(out)
        }
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The primary key stored at the end of a non-unique index entry: its length is the last
/// two bytes.
fn index_entry_pk(_table: &Table, _index: &Index, entry: &[u8]) -> Result<Vec<u8>> {
    if entry.len() < 2 {
        return Err(SqlError::new(code::DATA_CORRUPTED, "an index entry is damaged"));
    }
    let n = u16::from_be_bytes([entry[entry.len() - 2], entry[entry.len() - 1]]) as usize;
    if entry.len() < 2 + n {
        return Err(SqlError::new(code::DATA_CORRUPTED, "an index entry is damaged"));
    }
    Ok(entry[entry.len() - 2 - n..entry.len() - 2].to_vec())
}

/// Runs the FROM/WHERE part: every joined row that passes the filters, with the primary key
/// of the first item's row when it is a table (for UPDATE, DELETE and FOR UPDATE).
pub fn execute_from(
    plan: &SelectPlan,
    txn: &TxnCell,
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<KeyedRow>> {
    let mut out = Vec::new();
    for c in &plan.constant_filters {
        if !c.eval_bool(&[], ctx)? {
            return Ok(out);
        }
    }
    let mut row = vec![Value::Null; plan.width];
    join_level(plan, 0, &mut row, None, txn, ctx, limits, &mut out)?;
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn join_level(
    plan: &SelectPlan,
    level: usize,
    row: &mut Vec<Value>,
    first_key: Option<&[u8]>,
    txn: &TxnCell,
    ctx: &Ctx,
    limits: &ExecLimits,
    out: &mut Vec<KeyedRow>,
) -> Result<()> {
    let Some(item) = plan.from.get(level) else {
        if out.len() >= limits.rows_max {
            return Err(SqlError::new(
                code::OUT_OF_MEMORY,
                format!("the statement would hold more than {} rows in memory", limits.rows_max),
            )
            .hint("Add a WHERE clause or LIMIT, or raise the server's rows limit."));
        }
        out.push((first_key.map(<[u8]>::to_vec), row.clone()));
        return Ok(());
    };
    limits.check()?;
    let candidates: Vec<KeyedRow> = match &item.source {
        Source::Table(table, access) => table_rows(table, access, txn, row, ctx, limits)?
            .into_iter()
            .map(|(k, r)| (Some(k), r))
            .collect(),
        Source::Rows(rows) => rows.iter().map(|r| (None, r.clone())).collect(),
        Source::SetOp(left, right, kind, all) => {
            let a = execute_select(left, txn, ctx, limits)?;
            let b = execute_select(right, txn, ctx, limits)?;
            set_operation(a, b, *kind, *all).into_iter().map(|r| (None, r)).collect()
        }
        Source::Series(start, stop, step) => {
            let int = |e: &Expr| -> Result<i64> {
                match e.eval(row, ctx)? {
                    Value::Int(i) => Ok(i),
                    Value::Null => Ok(i64::MIN),
                    v => match v.cast(DataType::Int8)? {
                        Value::Int(i) => Ok(i),
                        _ => Ok(i64::MIN),
                    },
                }
            };
            let (a, b) = (int(start)?, int(stop)?);
            let s = match step {
                Some(s) => int(s)?,
                None => 1,
            };
            if s == 0 {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER_VALUE,
                    "step size cannot equal zero",
                ));
            }
            let mut v = Vec::new();
            if a != i64::MIN && b != i64::MIN {
                let mut i = a;
                while (s > 0 && i <= b) || (s < 0 && i >= b) {
                    if v.len().is_multiple_of(SCAN_BATCH_ROWS) {
                        limits.check()?;
                    }
                    if v.len() >= limits.rows_max {
                        return Err(SqlError::new(
                            code::OUT_OF_MEMORY,
                            "generate_series would produce too many rows",
                        ));
                    }
                    v.push((None, vec![Value::Int(i)]));
                    i = match i.checked_add(s) {
                        Some(n) => n,
                        None => break,
                    };
                }
            }
            v
        }
    };
    let mut matched = false;
    for (key, cand) in candidates {
        limits.check()?;
        row[item.offset..item.offset + item.width].clone_from_slice(&cand[..item.width]);
        let mut ok = true;
        for c in &item.on {
            if !c.eval_bool(row, ctx)? {
                ok = false;
                break;
            }
        }
        if !ok {
            continue;
        }
        matched = true;
        if !passes(&item.filters, row, ctx)? {
            continue;
        }
        let fk = if level == 0 { key.as_deref() } else { first_key };
        join_level(plan, level + 1, row, fk, txn, ctx, limits, out)?;
    }
    if !matched && item.join == JoinKind::Left {
        for v in &mut row[item.offset..item.offset + item.width] {
            *v = Value::Null;
        }
        if passes(&item.filters, row, ctx)? {
            join_level(plan, level + 1, row, first_key, txn, ctx, limits, out)?;
        }
    }
    Ok(())
}

fn passes(filters: &[Expr], row: &[Value], ctx: &Ctx) -> Result<bool> {
    for f in filters {
        if !f.eval_bool(row, ctx)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Runs a SELECT to completion.
pub fn execute_select(
    plan: &SelectPlan,
    txn: &TxnCell,
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<Vec<Value>>> {
    let joined = execute_from(plan, txn, ctx, limits)?;
    finish_select(plan, joined.into_iter().map(|(_, r)| r).collect(), ctx, limits)
}

/// Grouping, projection, DISTINCT, ORDER BY and LIMIT over joined rows.
pub fn finish_select(
    plan: &SelectPlan,
    rows: Vec<Vec<Value>>,
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<Vec<Value>>> {
    let rows = match &plan.grouping {
        Some(g) => aggregate(g, rows, ctx, limits)?,
        None => rows,
    };
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        limits.check()?;
        if let Some(h) = &plan.having {
            if !h.eval_bool(r, ctx)? {
                continue;
            }
        }
        let mut o = Vec::with_capacity(plan.projection.len());
        for e in &plan.projection {
            o.push(e.eval(r, ctx)?);
        }
        out.push(o);
    }
    let visible = plan.columns.len();
    if plan.distinct {
        let mut seen: Vec<Vec<Value>> = Vec::new();
        out.sort_by(|a, b| cmp_rows(&a[..visible], &b[..visible]));
        out.retain(|r| {
            if seen
                .last()
                .is_some_and(|l| cmp_rows(&l[..visible], &r[..visible]) == Ordering::Equal)
            {
                false
            } else {
                seen.push(r.clone());
                true
            }
        });
    }
    sort_rows(&mut out, &plan.order, limits)?;
    let (offset, limit) = offset_limit(plan, ctx)?;
    let mut out: Vec<Vec<Value>> =
        out.into_iter().skip(offset).take(limit.unwrap_or(usize::MAX)).collect();
    for r in &mut out {
        r.truncate(visible);
    }
    Ok(out)
}

/// Sorts projected rows by ORDER BY (output position, descending, nulls first).
/// A sort checks for an interrupt every so many comparisons; once interrupted, every further
/// comparison answers "equal", so the sort ends quickly and the statement fails.
pub fn sort_rows(
    rows: &mut [Vec<Value>],
    order: &[(usize, bool, bool)],
    limits: &ExecLimits,
) -> Result<()> {
    if order.is_empty() {
        return Ok(());
    }
    let mut comparisons = 0usize;
    let mut interrupted = false;
    rows.sort_by(|a, b| {
        if interrupted {
            return Ordering::Equal;
        }
        comparisons += 1;
        if comparisons.is_multiple_of(65_536) && limits.check().is_err() {
            interrupted = true;
            return Ordering::Equal;
        }
        for &(pos, desc, nulls_first) in order {
            let (x, y) = (&a[pos], &b[pos]);
            let ord = match (x.is_null(), y.is_null()) {
                (true, true) => Ordering::Equal,
                (true, false) if nulls_first => Ordering::Less,
                (true, false) => Ordering::Greater,
                (false, true) if nulls_first => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ if desc => x.total_cmp(y).reverse(),
                _ => x.total_cmp(y),
            };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        Ordering::Equal
    });
    limits.check()
}

/// OFFSET (0 when absent) and LIMIT (none when absent or NULL); 2201W when negative.
pub fn offset_limit(plan: &SelectPlan, ctx: &Ctx) -> Result<(usize, Option<usize>)> {
    let count = |e: &Option<Expr>| -> Result<Option<usize>> {
        match e {
            None => Ok(None),
            Some(e) => match e.eval(&[], ctx)? {
                Value::Null => Ok(None),
                Value::Int(i) if i >= 0 => Ok(Some(i as usize)),
                _ => Err(SqlError::new("2201W", "LIMIT and OFFSET must not be negative")),
            },
        }
    };
    Ok((count(&plan.offset)?.unwrap_or(0), count(&plan.limit)?))
}

/// UNION / INTERSECT / EXCEPT, with ALL keeping duplicates (by multiset counts).
fn set_operation(a: Vec<Row>, b: Vec<Row>, kind: SetOpKind, all: bool) -> Vec<Row> {
    fn dedup(mut rows: Vec<Row>) -> Vec<Row> {
        rows.sort_by(|x, y| cmp_rows(x, y));
        rows.dedup_by(|x, y| cmp_rows(x, y) == Ordering::Equal);
        rows
    }
    match kind {
        SetOpKind::Union => {
            let mut out = a;
            out.extend(b);
            if all {
                out
            } else {
                dedup(out)
            }
        }
        SetOpKind::Intersect | SetOpKind::Except => {
            let mut b_sorted = b;
            b_sorted.sort_by(|x, y| cmp_rows(x, y));
            let mut used = vec![false; b_sorted.len()];
            let mut out = Vec::new();
            let a = if all { a } else { dedup(a) };
            for row in a {
                let found = b_sorted.binary_search_by(|probe| cmp_rows(probe, &row));
                // With ALL, each matching row of b pairs with one row of a.
                let hit = match found {
                    Ok(mut i) => {
                        while i > 0 && cmp_rows(&b_sorted[i - 1], &row) == Ordering::Equal {
                            i -= 1;
                        }
                        let mut j = i;
                        while j < b_sorted.len()
                            && cmp_rows(&b_sorted[j], &row) == Ordering::Equal
                            && (all && used[j])
                        {
                            j += 1;
                        }
                        if j < b_sorted.len() && cmp_rows(&b_sorted[j], &row) == Ordering::Equal {
                            if all {
                                used[j] = true;
                            }
                            true
                        } else {
                            false
                        }
                    }
                    Err(_) => false,
                };
                if hit == (kind == SetOpKind::Intersect) {
                    out.push(row);
                }
            }
            out
        }
    }
}

fn cmp_rows(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = x.total_cmp(y);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

#[derive(Clone)]
enum Acc {
    Count(i64),
    Sum(Option<Value>),
    MinMax(Option<Value>),
    Avg(Option<Value>, i64),
    Strings(Option<String>),
}

/// A value ordered by [`Value::total_cmp`], for the sets DISTINCT aggregates keep.
#[derive(Debug, Clone)]
struct Ordered(Value);

impl PartialEq for Ordered {
    fn eq(&self, other: &Self) -> bool {
        self.0.total_cmp(&other.0) == Ordering::Equal
    }
}
impl Eq for Ordered {}
impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

fn aggregate(
    g: &Grouping,
    rows: Vec<Vec<Value>>,
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<Vec<Value>>> {
    let init: Vec<Acc> = g
        .aggs
        .iter()
        .map(|(f, _, _, _)| match f {
            AggFunc::Count => Acc::Count(0),
            AggFunc::Sum => Acc::Sum(None),
            AggFunc::Min | AggFunc::Max => Acc::MinMax(None),
            AggFunc::Avg => Acc::Avg(None, 0),
            AggFunc::StringAgg(_) => Acc::Strings(None),
        })
        .collect();
    // Groups in first-seen order; keys compared by value.
    // Per group: key values, accumulators, values seen by each DISTINCT aggregate.
    type Group = (Row, Vec<Acc>, Vec<std::collections::BTreeSet<Ordered>>);
    let mut groups: Vec<Group> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for r in &rows {
        limits.check()?;
        let mut key = Vec::with_capacity(g.keys.len());
        for k in &g.keys {
            key.push(k.eval(r, ctx)?);
        }
        let hkey = format!("{key:?}");
        let gi = match index.get(&hkey) {
            Some(i) => *i,
            None => {
                groups.push((key, init.clone(), vec![Default::default(); g.aggs.len()]));
                index.insert(hkey, groups.len() - 1);
                groups.len() - 1
            }
        };
        let (_, accs, seen) = &mut groups[gi];
        for (ai, (f, distinct, arg, _)) in g.aggs.iter().enumerate() {
            let v = match arg {
                Some(a) => a.eval(r, ctx)?,
                None => Value::Bool(true),
            };
            if v.is_null() {
                continue;
            }
            if *distinct && !seen[ai].insert(Ordered(v.clone())) {
                continue;
            }
            accs[ai] = match (std::mem::replace(&mut accs[ai], Acc::Count(0)), f) {
                (Acc::Count(n), _) => Acc::Count(n + 1),
                (Acc::Sum(s), _) => Acc::Sum(Some(match s {
                    None => widen(v),
                    Some(s) => crate::expr::binary(BinOp::Add, s, widen(v))?,
                })),
                (Acc::MinMax(m), f) => Acc::MinMax(Some(match m {
                    None => v,
                    Some(m) => {
                        let o = v.total_cmp(&m);
                        if (*f == AggFunc::Min && o == Ordering::Less)
                            || (*f == AggFunc::Max && o == Ordering::Greater)
                        {
                            v
                        } else {
                            m
                        }
                    }
                })),
                (Acc::Strings(acc), f) => {
                    let text = v.to_text(DataType::Text).unwrap_or_default();
                    Acc::Strings(Some(match (acc, f) {
                        (None, _) => text,
                        (Some(mut a), AggFunc::StringAgg(sep)) => {
                            if a.len() + sep.len() + text.len() > crate::expr::TEXT_BYTES_MAX {
                                return Err(SqlError::new(
                                    code::PROGRAM_LIMIT,
                                    "string_agg result too large",
                                )
                                .detail(format!(
                                    "A computed string may hold at most {} bytes.",
                                    crate::expr::TEXT_BYTES_MAX
                                )));
                            }
                            a.push_str(sep);
                            a.push_str(&text);
                            a
                        }
                        (Some(a), _) => a,
                    }))
                }
                (Acc::Avg(s, n), _) => Acc::Avg(
                    Some(match s {
                        None => widen(v),
                        Some(s) => crate::expr::binary(BinOp::Add, s, widen(v))?,
                    }),
                    n + 1,
                ),
            };
        }
    }
    if groups.is_empty() && g.keys.is_empty() {
        groups.push((vec![], init, vec![]));
    }
    let mut out = Vec::with_capacity(groups.len());
    for (key, accs, _) in groups {
        let mut row = key;
        for (a, (_, _, _, ty)) in accs.into_iter().zip(&g.aggs) {
            row.push(match a {
                Acc::Count(n) => Value::Int(n),
                Acc::Sum(s) => match (s, ty) {
                    (None, _) => Value::Null,
                    // sum of smallint/integer is bigint.
                    (Some(Value::Numeric(d)), DataType::Int8) => Value::Int(
                        i64::try_from(d).map_err(|_| crate::types::out_of_range(DataType::Int8))?,
                    ),
                    (Some(v), _) => v,
                },
                Acc::MinMax(m) => m.unwrap_or(Value::Null),
                Acc::Strings(s) => s.map(Value::Text).unwrap_or(Value::Null),
                Acc::Avg(None, _) => Value::Null,
                Acc::Avg(Some(s), n) => match s {
                    Value::Float(f) => Value::Float(f / n as f64),
                    s => {
                        let d = match s {
                            Value::Numeric(d) => d,
                            Value::Int(i) => rust_decimal::Decimal::from(i),
                            _ => rust_decimal::Decimal::ZERO,
                        };
                        crate::expr::binary(
                            BinOp::Div,
                            Value::Numeric(d),
                            Value::Numeric(rust_decimal::Decimal::from(n)),
                        )?
                    }
                },
            });
        }
        out.push(row);
    }
    Ok(out)
}

/// Sums of integers are numeric (bigint for small integers would do, but numeric never
/// overflows).
fn widen(v: Value) -> Value {
    match v {
        Value::Int(i) => Value::Numeric(rust_decimal::Decimal::from(i)),
        v => v,
    }
}

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
