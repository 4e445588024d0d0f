//! Binding queries: SELECT, VALUES, set operations, FROM items, grouping, ORDER BY / LIMIT.

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::*;
use crate::error::{code, Result, SqlError};
use crate::expr::*;
use crate::plan::access::*;
use crate::plan::*;
use crate::types::{DataType, Value};

impl<'a> Planner<'a> {
    /// One GROUP BY item bound: a position in the select list (`GROUP BY 1`), an output
    /// column's alias, or an expression over the FROM items.
    fn group_item(&mut self, g: &ast::Expr, s: &ast::Select, scope: &Scope) -> Result<Expr> {
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
                return Ok(self.expr(x, scope, false)?.0);
            }
        }
        // A bare name may be an output alias.
        if let ast::Expr::Identifier(id) = g {
            let name = ident(id);
            if scope.resolve(None, &name).is_err() {
                if let Some(x) = s.projection.iter().find_map(|p| match p {
                    ast::SelectItem::ExprWithAlias { expr, alias } if ident(alias) == name => {
                        Some(expr)
                    }
                    _ => None,
                }) {
                    return Ok(self.expr(x, scope, false)?.0);
                }
            }
        }
        Ok(self.expr(g, scope, false)?.0)
    }

    /// Plans a query (SELECT, VALUES). `expected` gives target types for VALUES rows.
    pub fn query(&mut self, q: &ast::Query, expected: Option<&[DataType]>) -> Result<SelectPlan> {
        if let Some(with) = &q.with {
            return self.with_query(with, q, expected);
        }
        if let Some(fetch) = &q.fetch {
            // `[OFFSET n ROWS] FETCH {FIRST | NEXT} [m] {ROW | ROWS} ONLY` is the standard's
            // spelling of LIMIT m (1 when m is left out).
            if fetch.with_ties || fetch.percent {
                return Err(SqlError::unsupported("FETCH FIRST … WITH TIES or PERCENT"));
            }
            let limit = fetch
                .quantity
                .clone()
                .unwrap_or_else(|| ast::Expr::value(ast::Value::Number("1".into(), false)));
            let offset = match &q.limit_clause {
                None => None,
                Some(ast::LimitClause::LimitOffset { limit: None, offset, limit_by })
                    if limit_by.is_empty() =>
                {
                    offset.clone()
                }
                Some(_) => {
                    return Err(SqlError::syntax("multiple LIMIT clauses not allowed"));
                }
            };
            let mut q = q.clone();
            q.fetch = None;
            q.limit_clause = Some(ast::LimitClause::LimitOffset {
                limit: Some(limit),
                offset,
                limit_by: vec![],
            });
            return self.query(&q, expected);
        }
        if let ast::SetExpr::Select(s) = q.body.as_ref() {
            if !s.named_window.is_empty() {
                // WINDOW w AS (…): the query again with each reference to w spelled out.
                let q = crate::bind::window::inline_named_windows(q)?;
                return self.query(&q, expected);
            }
        }
        let mut plan = match q.body.as_ref() {
            ast::SetExpr::Select(s) => self.select(s, Some(q))?,
            ast::SetExpr::Values(v) => self.values(v, expected, None)?,
            ast::SetExpr::Query(inner) => return self.query(inner, expected),
            ast::SetExpr::SetOperation { .. } => {
                let mut plan = self.set_expr(q.body.as_ref(), expected)?;
                // ORDER BY and LIMIT apply to the combined rows, by output name or position.
                let scope = Scope {
                    cols: plan
                        .columns
                        .iter()
                        .map(|(n, t)| ScopeCol {
                            system: false,
                            table: None,
                            name: n.clone(),
                            ty: *t,
                            origin: None,
                        })
                        .collect(),
                    ..Default::default()
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

    /// `WITH a AS (…), b AS (…) query`: the names are visible to the query and to the
    /// common table expressions after them; each reference plans the CTE as a derived table
    /// (PostgreSQL's inlining; a CTE is read once per reference).
    fn with_query(
        &mut self,
        with: &ast::With,
        q: &ast::Query,
        expected: Option<&[DataType]>,
    ) -> Result<SelectPlan> {
        let mut body = q.clone();
        body.with = None;
        self.with_ctes(Some(with), |p| p.query(&body, expected))
    }

    /// Plans `f` with the common table expressions of `with` in scope (a query's, or an
    /// INSERT's, UPDATE's or DELETE's: `WITH c AS (…) UPDATE …`).
    pub(crate) fn with_ctes<T>(
        &mut self,
        with: Option<&ast::With>,
        f: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        let Some(with) = with else { return f(self) };
        let depth = self.ctes.len();
        for cte in &with.cte_tables {
            let name = ident(&cte.alias.name);
            if self.ctes[depth..].iter().any(|c| c.name == name) {
                self.ctes.truncate(depth);
                return Err(duplicate_cte(&name));
            }
            // A data-modifying CTE runs before the statement (`exec::statement`), which
            // plans it then; here it is only described, or misplaced.
            let ran = match crate::bind::with::modifying(&cte.query) {
                None => None,
                Some(stmt) if self.describing && depth == 0 => {
                    match self.described_returning(stmt) {
                        Ok(ran) => Some(ran),
                        Err(e) => {
                            self.ctes.truncate(depth);
                            return Err(e);
                        }
                    }
                }
                Some(_) => {
                    self.ctes.truncate(depth);
                    return Err(SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        "WITH clause containing a data-modifying statement must be at the top level",
                    ));
                }
            };
            self.ctes.push(Cte::new(cte, with.recursive, ran));
        }
        let planned = f(self);
        self.ctes.truncate(depth);
        planned
    }

    /// A FROM item reading common table expression `i`: its query planned as a derived
    /// table, seeing only the CTEs before it; with RECURSIVE, `anchor UNION [ALL] step`
    /// where the step reads the rows of the previous round; inside its own recursive term,
    /// the work table.
    fn cte_item(
        &mut self,
        i: usize,
        alias: String,
        rename: &[String],
        offset: usize,
    ) -> Result<(FromItem, Vec<ScopeCol>)> {
        let cte = self.ctes[i].clone();
        let names = |columns: &[(String, DataType)], given: &[String]| -> Result<Vec<String>> {
            if given.len() > columns.len() {
                return Err(SqlError::new(
                    code::INVALID_COLUMN_REFERENCE,
                    format!(
                        "WITH query \"{}\" has {} columns available but {} columns specified",
                        cte.name,
                        columns.len(),
                        given.len()
                    ),
                ));
            }
            Ok(columns
                .iter()
                .enumerate()
                .map(|(k, (n, _))| given.get(k).cloned().unwrap_or_else(|| n.clone()))
                .collect())
        };
        match &cte.ran {
            Some(Ran::Nothing) => {
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    format!("WITH query \"{}\" does not have a RETURNING clause", cte.name),
                ))
            }
            Some(Ran::Returned(columns, origins, rows)) => {
                let names = names(columns, if rename.is_empty() { &cte.columns } else { rename })?;
                let cols: Vec<ScopeCol> = columns
                    .iter()
                    .zip(names)
                    .enumerate()
                    .map(|(k, ((_, ty), name))| ScopeCol {
                        system: false,
                        table: Some(alias.clone()),
                        name,
                        ty: *ty,
                        origin: origins.get(k).copied().flatten(),
                    })
                    .collect();
                let item = FromItem {
                    source: Source::Rows(rows.clone()),
                    offset,
                    width: cols.len(),
                    join: JoinKind::Inner,
                    on: vec![],
                    filters: vec![],
                    label: alias,
                };
                return Ok((item, cols));
            }
            None => {}
        }
        if let Some((id, columns)) = &cte.work_table {
            let names = names(columns, if rename.is_empty() { &cte.columns } else { rename })?;
            let cols: Vec<ScopeCol> = columns
                .iter()
                .zip(names)
                .map(|((_, ty), name)| ScopeCol {
                    system: false,
                    table: Some(alias.clone()),
                    name,
                    ty: *ty,
                    origin: None,
                })
                .collect();
            let item = FromItem {
                source: Source::WorkTable(*id),
                offset,
                width: cols.len(),
                join: JoinKind::Inner,
                on: vec![],
                filters: vec![],
                label: alias,
            };
            return Ok((item, cols));
        }
        let recursive_parts = match (cte.recursive, cte.query.body.as_ref()) {
            (
                true,
                ast::SetExpr::SetOperation {
                    op: ast::SetOperator::Union,
                    left,
                    right,
                    set_quantifier,
                },
            ) if cte.query.order_by.is_none() && cte.query.limit_clause.is_none() => {
                Some((left, right, matches!(set_quantifier, ast::SetQuantifier::All)))
            }
            _ => None,
        };
        // The CTEs after this one are not visible to it.
        let outer = self.ctes.split_off(i + 1);
        let planned = match recursive_parts {
            Some((left, right, all)) => self.recursive_cte(i, left, right, all),
            None => {
                let hidden = self.ctes.pop().expect("the CTE being planned");
                let plan = self.query(&cte.query, None);
                self.ctes.push(hidden);
                plan
            }
        };
        self.ctes.extend(outer);
        let plan = planned?;
        let names = names(&plan.columns, if rename.is_empty() { &cte.columns } else { rename })?;
        Ok(derived_item(plan, Some(alias), &names, offset))
    }

    /// The plan of a recursive CTE (`self.ctes[i]` is it, the last in scope).
    fn recursive_cte(
        &mut self,
        i: usize,
        anchor: &ast::SetExpr,
        step: &ast::SetExpr,
        all: bool,
    ) -> Result<SelectPlan> {
        // The non-recursive term may not read the CTE itself.
        let hidden = self.ctes.pop().expect("the CTE being planned");
        let anchor = self.set_expr(anchor, None);
        self.ctes.push(hidden);
        let anchor = anchor?;
        let columns: Vec<(String, DataType)> = anchor
            .columns
            .iter()
            .map(|(n, t)| (n.clone(), if *t == DataType::Unknown { DataType::Text } else { *t }))
            .collect();
        let id = self.work_tables;
        self.work_tables += 1;
        self.ctes[i].work_table = Some((id, columns.clone()));
        let step = self.set_expr(step, None);
        self.ctes[i].work_table = None;
        let step = step?;
        if step.columns.len() != columns.len() {
            return Err(SqlError::syntax("each UNION query must have the same number of columns"));
        }
        let width = columns.len();
        // A UNION that never reads the CTE is just a UNION.
        let source = if step.reads_work_table(id) {
            Source::Recursive(Box::new(anchor), Box::new(step), id, all)
        } else {
            Source::SetOp(Box::new(anchor), Box::new(step), SetOpKind::Union, all)
        };
        Ok(SelectPlan::over(
            FromItem {
                source,
                offset: 0,
                width,
                join: JoinKind::Inner,
                on: vec![],
                filters: vec![],
                label: self.ctes[i].name.clone(),
            },
            columns,
        ))
    }

    /// Plans one operand of a set operation (no ORDER BY or LIMIT of its own).
    pub(crate) fn set_expr(
        &mut self,
        e: &ast::SetExpr,
        expected: Option<&[DataType]>,
    ) -> Result<SelectPlan> {
        match e {
            ast::SetExpr::Select(s) => self.select(s, None),
            ast::SetExpr::Values(v) => self.values(v, expected, None),
            ast::SetExpr::Query(q) => self.query(q, expected),
            ast::SetExpr::SetOperation { left, op, set_quantifier, right } => {
                let mut l = self.set_expr(left, expected)?;
                let mut r = self.set_expr(right, expected)?;
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
                // An untyped string in one branch is a label of the other's enum type (its
                // values compare by the type's order).
                for (i, (_, ty)) in columns.iter().enumerate() {
                    if ty.is_enum() {
                        for side in [&mut l, &mut r] {
                            let literal = matches!(
                                side.projection.get(i),
                                Some(Expr::Const(Value::Text(_) | Value::Null))
                            );
                            if side.columns[i].1 == DataType::Unknown
                                || (literal && !side.columns[i].1.is_enum())
                            {
                                let p = std::mem::replace(
                                    &mut side.projection[i],
                                    Expr::Const(Value::Null),
                                );
                                side.projection[i] = Expr::Cast(Box::new(p), *ty);
                                side.columns[i].1 = *ty;
                            }
                        }
                    }
                }
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

    /// Plans VALUES rows. `defaults` is given for the rows of an INSERT, where `DEFAULT`
    /// stands for the target column's default (NULL when it has none).
    pub(crate) fn values(
        &mut self,
        v: &ast::Values,
        expected: Option<&[DataType]>,
        defaults: Option<&[Option<Expr>]>,
    ) -> Result<SelectPlan> {
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
                let (e, t) = match defaults {
                    Some(d) if is_default_keyword(x) => match d.get(i) {
                        Some(Some(e)) => (e.clone(), expected.map_or(DataType::Unknown, |t| t[i])),
                        Some(None) => (Expr::Const(Value::Null), DataType::Unknown),
                        None => {
                            return Err(SqlError::syntax(
                                "INSERT has more expressions than target columns",
                            ))
                        }
                    },
                    _ => self.expr(x, &Scope::default(), false)?,
                };
                let target = expected.and_then(|t| t.get(i).copied()).unwrap_or(DataType::Unknown);
                let (e, t) = self.coerce(e, t, target)?;
                types[i] = DataType::common(types[i], t);
                exprs.push((e, t));
            }
            exprs_rows.push(exprs);
        }
        // A column's values take its common type (`VALUES (1), (2.5)` is numeric, so its 1
        // divides as a numeric); an INSERT's rows take their target columns' types instead.
        let exprs_rows: Vec<Vec<Expr>> = exprs_rows
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .zip(&types)
                    .map(|((e, t), common)| match expected {
                        None if t != *common => self.unify(e, t, *common),
                        _ => Ok(e),
                    })
                    .collect::<Result<Vec<Expr>>>()
            })
            .collect::<Result<_>>()?;
        // Constant rows are stored as they are; rows with parameters or functions are
        // evaluated at execution.
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
        Ok(SelectPlan::over(
            FromItem {
                source: Source::Values(exprs_rows),
                offset: 0,
                width,
                join: JoinKind::Inner,
                on: vec![],
                filters: vec![],
                label: "VALUES".into(),
            },
            columns,
        ))
    }

    /// Adds a FROM item for a table factor; returns its scope columns. A function call sees
    /// the `earlier` items' columns (PostgreSQL's function calls in FROM are LATERAL).
    pub(crate) fn bind_from_item(
        &mut self,
        f: &ast::TableFactor,
        offset: usize,
        earlier: &Scope,
    ) -> Result<(FromItem, Vec<ScopeCol>)> {
        match f {
            // `LATERAL f(…)`: what a function in FROM is anyway.
            ast::TableFactor::Function { lateral: true, name, args, with_ordinality, alias } => {
                let plain = ast::TableFactor::Table {
                    name: name.clone(),
                    alias: alias.clone(),
                    args: Some(ast::TableFunctionArgs { args: args.clone(), settings: None }),
                    with_hints: vec![],
                    version: None,
                    with_ordinality: *with_ordinality,
                    partitions: vec![],
                    json_path: None,
                    sample: None,
                    index_hints: vec![],
                };
                self.bind_from_item(&plain, offset, earlier)
            }
            ast::TableFactor::UNNEST {
                alias,
                array_exprs,
                with_offset: false,
                with_ordinality,
                ..
            } => {
                let exprs: Vec<&ast::Expr> = array_exprs.iter().collect();
                let ordinality = *with_ordinality;
                self.srf_from_item("unnest", &exprs, alias.as_ref(), ordinality, offset, earlier)
            }
            ast::TableFactor::Table { name, alias, args, with_ordinality, .. } => {
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
                    let fname = crate::bind::srf::function_name(&tname);
                    if crate::bind::function::is_aggregate(&fname) {
                        return Err(SqlError::new(
                            code::GROUPING,
                            "aggregate functions are not allowed in functions in FROM",
                        ));
                    }
                    if !crate::bind::srf::is_srf(&fname)
                        && crate::functions::by_name(&fname).is_none()
                        && self.has_routine(&fname)?
                    {
                        let call = ast::Function {
                            name: name.clone(),
                            uses_odbc_syntax: false,
                            parameters: ast::FunctionArguments::None,
                            args: ast::FunctionArguments::List(ast::FunctionArgumentList {
                                duplicate_treatment: None,
                                args: args.args.clone(),
                                clauses: vec![],
                            }),
                            within_group: vec![],
                            filter: None,
                            null_treatment: None,
                            over: None,
                        };
                        let item = self.routine_from_item(
                            &call,
                            alias.as_ref(),
                            *with_ordinality,
                            offset,
                            earlier,
                        )?;
                        if let Some(item) = item {
                            return Ok(item);
                        }
                    }
                    if fname != "generate_series" {
                        // Every function but an integer series is bound by its call: a
                        // set-returning one gives its rows, any other one row.
                        let exprs: Vec<&ast::Expr> = args
                            .args
                            .iter()
                            .map(|a| match a {
                                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Ok(x),
                                other => {
                                    Err(SqlError::unsupported(format!("the argument {other}")))
                                }
                            })
                            .collect::<Result<_>>()?;
                        return self.srf_from_item(
                            &tname,
                            &exprs,
                            alias.as_ref(),
                            *with_ordinality,
                            offset,
                            earlier,
                        );
                    }
                    let mut bound = Vec::new();
                    let mut asts = Vec::new();
                    for a in &args.args {
                        match a {
                            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => {
                                bound.push(self.expr(x, earlier, false)?);
                                asts.push(x);
                            }
                            other => {
                                return Err(SqlError::unsupported(format!("the argument {other}")))
                            }
                        }
                    }
                    // A series of timestamps is the set-returning call's (its step an
                    // interval); integers stream from `Source::Series`.
                    let temporal = bound.iter().take(2).any(|(_, t)| {
                        matches!(
                            t,
                            DataType::Date | DataType::Timestamp(_) | DataType::TimestampTz(_)
                        )
                    });
                    // So is a series of numerics, and any call that is neither (its error).
                    let integers =
                        bound.iter().all(|(_, t)| t.is_integer() || *t == DataType::Unknown);
                    if temporal || !integers {
                        return self.srf_from_item(
                            &tname,
                            &asts,
                            alias.as_ref(),
                            *with_ordinality,
                            offset,
                            earlier,
                        );
                    }
                    let mut exprs = Vec::new();
                    let mut ty = DataType::Int4;
                    for (e, t) in bound {
                        if t == DataType::Int8 {
                            ty = DataType::Int8;
                        }
                        exprs.push(self.coerce(e, t, DataType::Int8)?.0);
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
                        source: Source::Series(
                            Box::new(exprs[0].clone()),
                            Box::new(exprs[1].clone()),
                            step.map(Box::new),
                        ),
                        offset,
                        width: 1,
                        join: JoinKind::Inner,
                        on: vec![],
                        filters: vec![],
                        label: "generate_series".into(),
                    };
                    return Ok((
                        item,
                        vec![ScopeCol {
                            system: false,
                            table: Some(alias_name),
                            name: col,
                            ty,
                            origin: None,
                        }],
                    ));
                }
                // A common table expression's name is matched as written, before the search
                // path finds a relation of that name.
                let as_written = crate::bind::unresolved_name(name);
                let cte_name = as_written.as_deref().unwrap_or(&tname);
                if let Some(i) = self.ctes.iter().rposition(|c| c.name == cte_name) {
                    return self.cte_item(i, alias_name, &rename, offset);
                }
                let table = self.table(&tname)?;
                if let Some(t) = &table {
                    if t.matview.as_ref().is_some_and(|m| !m.populated) {
                        return Err(crate::exec::matviews::not_populated(&t.name));
                    }
                    if t.partitioning.is_some() {
                        return self.partitioned_item(t, alias_name, &rename, offset);
                    }
                }
                if table.is_none() {
                    if let Some(view) = self.catalog.view(self.txn, self.db, &tname)? {
                        return self.view_item(&view, alias_name, &rename, offset);
                    }
                    if let Some(sql) = crate::pg::views::system_view(&tname) {
                        return self.system_view_item(&tname, sql, alias_name, &rename, offset);
                    }
                }
                let mut origins = Vec::new();
                let mut system_columns = 0;
                let (source, cols, label) = match table {
                    Some(t) => {
                        origins = (0..t.columns.len())
                            .map(|i| Some(crate::bind::dml::table_origin(&t, i)))
                            .collect();
                        let cols: Vec<(String, DataType)> =
                            t.columns.iter().map(|c| (c.name.clone(), c.ty)).collect();
                        let label = t.name.clone();
                        (Source::Table(t, Access::Full), cols, label)
                    }
                    None => match self.system.system_table(self.txn, &tname)? {
                        Some((mut cols, mut rows)) => {
                            self.reusable = false;
                            // A catalog's `tableoid` system column (pg_dump reads it).
                            if let Some(o) = crate::bind::reg::system_relation_oid(&tname) {
                                system_columns = 1;
                                cols.push(("tableoid".into(), DataType::Oid));
                                for row in &mut rows {
                                    row.push(Value::Int(o));
                                }
                            }
                            (Source::Rows(Arc::new(rows)), cols, tname.clone())
                        }
                        None => match self.catalog.sequence(self.txn, self.db, &tname)? {
                            // `SELECT … FROM sequence`: its one row, read at execution.
                            Some(seq) => {
                                self.uses_sequence(&seq);
                                let seq_oid = crate::pg::system::oid::object(seq.id) as u32;
                                origins = (1..=3).map(|n| Some((seq_oid, n))).collect();
                                let call = |f| Expr::Sequence(f, seq.clone(), vec![]);
                                let row = vec![
                                    call(SeqFunc::LastValue),
                                    Expr::Const(Value::Int(0)),
                                    call(SeqFunc::IsCalled),
                                ];
                                let cols = vec![
                                    ("last_value".to_string(), DataType::Int8),
                                    ("log_cnt".to_string(), DataType::Int8),
                                    ("is_called".to_string(), DataType::Bool),
                                ];
                                (Source::Values(vec![row]), cols, tname.clone())
                            }
                            None => {
                                let at = name.0.first().and_then(|p| p.as_ident());
                                return Err(SqlError::new(
                                    code::UNDEFINED_TABLE,
                                    format!("relation \"{tname}\" does not exist"),
                                )
                                .located(at.and_then(crate::bind::location_of)));
                            }
                        },
                    },
                };
                let scope = cols
                    .iter()
                    .enumerate()
                    .map(|(i, (n, ty))| ScopeCol {
                        table: Some(alias_name.clone()),
                        name: match rename.get(i) {
                            Some(r) if i < cols.len() - system_columns => r.clone(),
                            _ => n.clone(),
                        },
                        ty: *ty,
                        origin: origins.get(i).copied().flatten(),
                        system: i >= cols.len() - system_columns,
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
            // LATERAL (SELECT …) sees the earlier items' columns as a correlated subquery
            // sees its enclosing row's; one that uses none is a plain derived table.
            ast::TableFactor::Derived { lateral, subquery, alias, .. } => {
                let (plan, reads_earlier) = if *lateral {
                    let (plan, refs, outer) = self.plan_subquery(subquery, earlier)?;
                    (plan, !refs.is_empty() || outer.deep)
                } else {
                    (self.query(subquery, None)?, false)
                };
                let alias_name = alias.as_ref().map(|a| ident(&a.name));
                let rename: Vec<String> = alias
                    .as_ref()
                    .map(|a| a.columns.iter().map(|c| ident(&c.name)).collect())
                    .unwrap_or_default();
                check_rename(alias_name.as_deref(), rename.len(), plan.columns.len())?;
                let (mut item, cols) = derived_item(plan, alias_name, &rename, offset);
                if reads_earlier {
                    if let Source::Derived(plan) = item.source {
                        item.source = Source::Lateral(plan);
                    }
                }
                Ok((item, cols))
            }
            ast::TableFactor::NestedJoin { table_with_joins, alias } => {
                self.nested_join_item(table_with_joins, alias.as_ref(), offset)
            }
            other => Err(SqlError::unsupported(format!("the FROM item {other}"))),
        }
    }

    /// The key parts of the indexes on expressions of `item`'s table, bound over the joined
    /// row as the query's own expressions are, for [`choose_access_with`].
    pub(crate) fn expression_keys(&mut self, item: &FromItem) -> Result<Vec<ExpressionKey>> {
        let Source::Table(table, _) = &item.source else { return Ok(vec![]) };
        let mut keys = Vec::new();
        for index in table.indexes.iter().filter(|i| !i.expressions.is_empty()) {
            if index.predicate.is_some() {
                continue;
            }
            let scope = crate::bind::dml::table_scope(table, &table.name);
            let mut parts = Vec::with_capacity(index.expressions.len());
            for text in &index.expressions {
                let (e, ty) = self.expr(&crate::parse::parse_expr(text)?, &scope, false)?;
                // Over the joined row: this item's columns start at its offset.
                let e = e.map(&mut |x| {
                    Ok(match x {
                        Expr::Column(c) => Expr::Column(c + item.offset),
                        x => x,
                    })
                })?;
                parts.push((e, ty));
            }
            keys.push((index.id, parts));
        }
        Ok(keys)
    }

    /// A parenthesized join that cannot be spliced into the chain around it (it is joined
    /// to earlier items, or named): run as `SELECT *` of the join, its columns keeping their
    /// tables' names (or all taking the alias, which hides those names, as in PostgreSQL).
    fn nested_join_item(
        &mut self,
        twj: &ast::TableWithJoins,
        alias: Option<&ast::TableAlias>,
        offset: usize,
    ) -> Result<(FromItem, Vec<ScopeCol>)> {
        // The tables each column of `*` comes from.
        let mut inner = Scope::default();
        self.bind_from(std::slice::from_ref(twj), &mut inner, &mut Vec::new())?;
        let tables: Vec<Option<String>> =
            inner.star_columns().into_iter().map(|i| inner.cols[i].table.clone()).collect();
        let mut query = match crate::parse::parse("SELECT *")?.pop() {
            Some(ast::Statement::Query(q)) => q,
            _ => unreachable!("SELECT * parses as a query"),
        };
        if let ast::SetExpr::Select(select) = query.body.as_mut() {
            select.from = vec![twj.clone()];
        }
        let plan = self.query(&query, None)?;
        let alias_name = alias.map(|a| ident(&a.name));
        let rename: Vec<String> =
            alias.map(|a| a.columns.iter().map(|c| ident(&c.name)).collect()).unwrap_or_default();
        check_rename(alias_name.as_deref(), rename.len(), plan.columns.len())?;
        let (item, mut cols) = derived_item(plan, alias_name.clone(), &rename, offset);
        if alias_name.is_none() {
            for (c, t) in cols.iter_mut().zip(tables) {
                c.table = t;
            }
        }
        Ok((item, cols))
    }

    /// Binds FROM items (`list`, each with its joins) after those already in `from`: their
    /// columns join `scope`, ON conditions are bound in the scope so far. A name may appear
    /// once (42712).
    pub(crate) fn bind_from(
        &mut self,
        list: &[ast::TableWithJoins],
        scope: &mut Scope,
        from: &mut Vec<FromItem>,
    ) -> Result<()> {
        let mut names: Vec<String> = scope.cols.iter().filter_map(|c| c.table.clone()).collect();
        names.dedup();
        // Each item's table names (a parenthesized join brings several).
        let mut named = |cols: &[ScopeCol]| -> Result<()> {
            let mut own: Vec<&String> = cols.iter().filter_map(|c| c.table.as_ref()).collect();
            own.dedup();
            for n in own {
                if names.contains(n) {
                    return Err(SqlError::new(
                        "42712",
                        format!("table name \"{n}\" specified more than once"),
                    ));
                }
                names.push(n.clone());
            }
            Ok(())
        };
        // What `*` lists: the earlier columns, then each item's (a USING join's merged
        // columns first).
        let mut star = scope.star_columns();
        let mut merged_any = false;
        for twj in list {
            // `(a JOIN b ON …) JOIN c …` is `a JOIN b ON … JOIN c …`: joins group to the left.
            let twj = &splice_leading_joins(twj);
            let chain_start = scope.cols.len();
            let (item, cols) = self.bind_from_item(&twj.relation, scope.cols.len(), scope)?;
            named(&cols)?;
            mark_function_column(scope, &item, &cols);
            scope.cols.extend(cols);
            from.push(item);
            // The columns `*` lists of the joins so far in this chain.
            let mut chain: Vec<usize> =
                (chain_start..scope.cols.len()).filter(|&i| !scope.cols[i].system).collect();
            for j in &twj.joins {
                let (kind, constraint) = match &j.join_operator {
                    ast::JoinOperator::Join(c) | ast::JoinOperator::Inner(c) => {
                        (JoinKind::Inner, Some(c))
                    }
                    ast::JoinOperator::Left(c) | ast::JoinOperator::LeftOuter(c) => {
                        (JoinKind::Left, Some(c))
                    }
                    ast::JoinOperator::Right(c) | ast::JoinOperator::RightOuter(c) => {
                        (JoinKind::Right, Some(c))
                    }
                    ast::JoinOperator::FullOuter(c) => (JoinKind::Full, Some(c)),
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
                let (mut item, cols) = self.bind_from_item(&j.relation, scope.cols.len(), scope)?;
                named(&cols)?;
                mark_function_column(scope, &item, &cols);
                let start = scope.cols.len();
                scope.cols.extend(cols);
                item.join = kind;
                if kind.keeps_right() {
                    // Its rows are read once, whole, to find those no earlier row matched:
                    // a function that reads earlier items' columns cannot be.
                    let mut lateral = false;
                    match &item.source {
                        Source::Unnest(exprs, _) => {
                            lateral = exprs.iter().any(|e| e.uses_columns_in(0..start))
                        }
                        Source::Call(e, ..) => lateral = e.uses_columns_in(0..start),
                        Source::Series(a, b, c) => {
                            lateral = [Some(a), Some(b), c.as_ref()]
                                .into_iter()
                                .flatten()
                                .any(|e| e.uses_columns_in(0..start))
                        }
                        Source::Values(rows) => {
                            lateral = rows.iter().flatten().any(|e| e.uses_columns_in(0..start))
                        }
                        Source::Lateral(_) => lateral = true,
                        _ => {}
                    }
                    if lateral {
                        return Err(SqlError::new(
                            "42P10",
                            "invalid reference to FROM-clause entry: an item on the right of a RIGHT or FULL join reads an earlier FROM item's columns",
                        )
                        .detail("The combining JOIN type must be INNER or LEFT for a LATERAL reference."));
                    }
                }
                let right: Vec<usize> =
                    (start..scope.cols.len()).filter(|&i| !scope.cols[i].system).collect();
                let using: Vec<String> = match constraint {
                    Some(ast::JoinConstraint::On(on)) => {
                        let (e, t) = self.expr(on, scope, false)?;
                        let (e, _) = self.coerce(e, t, DataType::Bool)?;
                        split_and(e, &mut item.on);
                        vec![]
                    }
                    Some(ast::JoinConstraint::Using(cols)) => {
                        cols.iter().map(object_name).collect::<Result<_>>()?
                    }
                    // NATURAL: every name both sides show.
                    Some(ast::JoinConstraint::Natural) => {
                        let mut names: Vec<String> = Vec::new();
                        for &l in &chain {
                            let n = &scope.cols[l].name;
                            if right.iter().any(|&r| scope.cols[r].name == *n) && !names.contains(n)
                            {
                                names.push(n.clone());
                            }
                        }
                        names
                    }
                    Some(ast::JoinConstraint::None) | None => vec![],
                };
                // Each USING column pairs the left side's one column of the name with the
                // right's; the pair becomes one column (the right's for a RIGHT join, the
                // left's otherwise), listed first by `*`. A FULL join's merged column would
                // be COALESCE(left, right): there both stay.
                let mut merged = Vec::with_capacity(using.len());
                for name in &using {
                    let find = |side: &[usize], what: &str| -> Result<usize> {
                        let mut hits = side.iter().filter(|&&i| {
                            scope.cols[i].name == *name && !scope.hidden.contains(&i)
                        });
                        match (hits.next(), hits.next()) {
                            (Some(&i), None) => Ok(i),
                            (Some(_), Some(_)) => Err(SqlError::new(
                                code::AMBIGUOUS_COLUMN,
                                format!("common column name \"{name}\" appears more than once in {what} table"),
                            )),
                            (None, _) => Err(SqlError::new(
                                code::UNDEFINED_COLUMN,
                                format!("column \"{name}\" specified in USING clause does not exist in {what} table"),
                            )),
                        }
                    };
                    let (l, r) = (find(&chain, "left")?, find(&right, "right")?);
                    if merged.iter().any(|&(ml, _)| ml == l) {
                        return Err(SqlError::new(
                            "42701",
                            format!(
                                "column name \"{name}\" appears more than once in USING clause"
                            ),
                        ));
                    }
                    item.on.push(Expr::Binary(
                        BinOp::Eq,
                        Box::new(Expr::Column(l)),
                        Box::new(Expr::Column(r)),
                    ));
                    merged.push((l, r));
                }
                if merged.is_empty() || kind == JoinKind::Full {
                    chain.extend(right);
                } else {
                    merged_any = true;
                    let keep =
                        |&(l, r): &(usize, usize)| if kind == JoinKind::Right { r } else { l };
                    let drop =
                        |&(l, r): &(usize, usize)| if kind == JoinKind::Right { l } else { r };
                    let kept: Vec<usize> = merged.iter().map(keep).collect();
                    let dropped: Vec<usize> = merged.iter().map(drop).collect();
                    scope.hidden.extend(&dropped);
                    let rest = chain
                        .iter()
                        .chain(&right)
                        .copied()
                        .filter(|i| !kept.contains(i) && !dropped.contains(i));
                    chain = kept.iter().copied().chain(rest).collect();
                }
                from.push(item);
            }
            star.extend(chain);
        }
        if merged_any {
            scope.star = Some(star);
        }
        Ok(())
    }

    /// Places each WHERE conjunct at the first FROM item after which it can be evaluated
    /// (the rest, which read no columns, are returned): after the last RIGHT or FULL join at
    /// the earliest, since that join makes every earlier item's columns NULL in the rows it
    /// adds.
    pub(crate) fn place_filters(from: &mut [FromItem], conjuncts: Vec<Expr>) -> Vec<Expr> {
        let mut constant_filters = Vec::new();
        let last_right = from.iter().rposition(|item| item.join.keeps_right());
        for c in conjuncts {
            let level = from
                .iter()
                .rposition(|item| c.uses_columns_in(item.offset..item.offset + item.width))
                .map(|l| l.max(last_right.unwrap_or(0)));
            match level {
                None => constant_filters.push(c),
                Some(l) => from[l].filters.push(c),
            }
        }
        constant_filters
    }

    pub(crate) fn select(&mut self, s: &ast::Select, q: Option<&ast::Query>) -> Result<SelectPlan> {
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
        self.bind_from(&s.from, &mut scope, &mut from)?;
        let width = scope.cols.len();
        if let Some(w) = &s.selection {
            let (e, t) = self.expr(w, &scope, false)?;
            let (e, _) = self.coerce(e, t, DataType::Bool)?;
            split_and(e, &mut where_conjuncts);
        }
        propagate_constants(
            &mut where_conjuncts,
            from.iter().filter(|i| i.join == JoinKind::Inner).flat_map(|i| i.on.iter()),
            width,
        );
        let constant_filters = Self::place_filters(&mut from, where_conjuncts);
        // Access paths.
        for item in &mut from {
            self.settle(item)?;
        }
        // Grouping and projection.
        let (group_exprs, grouping_sets): (Vec<Expr>, Vec<Vec<usize>>) = match &s.group_by {
            ast::GroupByExpr::Expressions(exprs, mods) if mods.is_empty() => {
                if exprs.iter().any(is_grouping_set) {
                    // GROUPING SETS, ROLLUP, CUBE: the distinct expressions of every set,
                    // each set the positions of its own, then the set number's key.
                    let mut keys: Vec<Expr> = Vec::new();
                    let mut sets = Vec::new();
                    for set in grouping_sets(exprs)? {
                        let mut at = Vec::with_capacity(set.len());
                        for g in set {
                            let e = self.group_item(g, s, &scope)?;
                            let k = match keys.iter().position(|k| *k == e) {
                                Some(k) => k,
                                None => {
                                    keys.push(e);
                                    keys.len() - 1
                                }
                            };
                            if !at.contains(&k) {
                                at.push(k);
                            }
                        }
                        sets.push(at);
                    }
                    keys.push(Expr::Func(Func::GroupingSet, vec![]));
                    (keys, sets)
                } else {
                    let mut out = Vec::with_capacity(exprs.len());
                    for g in exprs {
                        out.push(self.group_item(g, s, &scope)?);
                    }
                    (out, vec![])
                }
            }
            _ => return Err(SqlError::unsupported("this GROUP BY")),
        };
        let mut projection = Vec::new();
        let mut columns = Vec::new();
        let mut expand = Vec::new();
        for item in &s.projection {
            let srf = match item {
                ast::SelectItem::UnnamedExpr(x)
                | ast::SelectItem::ExprWithAlias { expr: x, .. } => {
                    self.select_list_srf(x, &scope)?
                }
                _ => None,
            };
            // A select item that is `x::regclass` / `x::regtype`, or a call of `to_regclass` /
            // `to_regtype` (which answer those types), shows the name, as PostgreSQL prints
            // those types.
            let srf = match (srf, item) {
                (
                    None,
                    ast::SelectItem::UnnamedExpr(x)
                    | ast::SelectItem::ExprWithAlias { expr: x, .. },
                ) => {
                    let named = match x {
                        ast::Expr::Cast { expr, data_type, .. } => {
                            match crate::bind::reg::reg_kind(data_type) {
                                Some(kind) => Some(self.reg_name(kind, expr, &scope, true)?),
                                None => None,
                            }
                        }
                        ast::Expr::Function(f) => match reg_lookup(f) {
                            Some(kind) => {
                                let (e, _) = self.expr(x, &scope, true)?;
                                Some(self.oid_name(kind, e)?)
                            }
                            None => None,
                        },
                        _ => None,
                    };
                    if let Some((e, t)) = named {
                        projection.push(e);
                        let name = match item {
                            ast::SelectItem::ExprWithAlias { alias, .. } => ident(alias),
                            _ => output_name(x),
                        };
                        columns.push((name, t));
                        continue;
                    }
                    None
                }
                (srf, _) => srf,
            };
            if let Some((e, t, name)) = srf {
                expand.push(projection.len());
                projection.push(e);
                let name = match item {
                    ast::SelectItem::ExprWithAlias { alias, .. } => ident(alias),
                    _ => name,
                };
                columns.push((name, t));
                continue;
            }
            match item {
                ast::SelectItem::Wildcard(_) => {
                    for i in scope.star_columns() {
                        let c = &scope.cols[i];
                        projection.push(Expr::Column(i));
                        columns.push((c.name.clone(), c.ty));
                    }
                }
                ast::SelectItem::QualifiedWildcard(kind, _) => {
                    let name = match kind {
                        // `s.t.*`: a FROM item is known by its table's own name.
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                            let name = crate::bind::name_as_written(n)?;
                            crate::catalog::unqualified(&name).to_string()
                        }
                        _ => return Err(SqlError::unsupported("this wildcard")),
                    };
                    let mut any = false;
                    for (i, c) in scope.cols.iter().enumerate() {
                        if c.table.as_deref() == Some(name.as_str()) && !c.system {
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
                    let (e, t) = self.select_item(x, &scope, projection.len(), &mut expand)?;
                    projection.push(e);
                    columns.push((
                        output_name(x),
                        if t == DataType::Unknown { DataType::Text } else { t },
                    ));
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    let (e, t) = self.select_item(expr, &scope, projection.len(), &mut expand)?;
                    projection.push(e);
                    columns.push((
                        ident(alias),
                        if t == DataType::Unknown { DataType::Text } else { t },
                    ));
                }
                other => return Err(SqlError::unsupported(format!("the select item {other}"))),
            }
        }
        let origins = scope.origins(&projection[..columns.len()]);
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
            origins,
            distinct: matches!(s.distinct, Some(ast::Distinct::Distinct)),
            distinct_on: vec![],
            order: vec![],
            limit: None,
            offset: None,
            // The strongest lock the clauses ask for (FOR UPDATE wins over FOR SHARE).
            lock: q.and_then(|q| {
                q.locks
                    .iter()
                    .map(|l| match l.lock_type {
                        ast::LockType::Update => crate::locks::LockMode::Exclusive,
                        ast::LockType::Share => crate::locks::LockMode::Shared,
                    })
                    .max_by_key(|m| *m == crate::locks::LockMode::Exclusive)
            }),
            key_order: None,
            expand,
            windows: vec![],
        };
        if plan.lock.is_some() && plan.from.iter().any(|i| i.join.keeps_right()) {
            return Err(SqlError::unsupported(
                "FOR UPDATE/SHARE with a RIGHT or FULL join (it cannot lock the nullable side of an outer join)",
            ));
        }

        let aggregating = !group_exprs.is_empty()
            || plan.projection.iter().any(Expr::has_agg)
            || having.as_ref().is_some_and(Expr::has_agg);
        if aggregating {
            let mut grouping = Grouping { keys: group_exprs, aggs: vec![], sets: grouping_sets };
            if grouping.sets.is_empty() {
                add_dependent_columns(&plan.from, &mut grouping.keys);
            }
            let projection = std::mem::take(&mut plan.projection);
            plan.projection = projection
                .into_iter()
                .map(|e| post_agg(e, &mut grouping, &scope))
                .collect::<Result<_>>()?;
            plan.having = match having {
                Some(h) => Some(post_agg(h, &mut grouping, &scope)?),
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
        if let Some(ast::Distinct::On(exprs)) = &s.distinct {
            self.distinct_on(exprs, &mut plan, &scope)?;
        }
        let base = match &plan.grouping {
            Some(g) => g.keys.len() + g.aggs.len(),
            None => plan.width,
        };
        crate::bind::window::take_windows(&mut plan, base)?;
        if plan.lock.is_some()
            && !matches!(plan.from.first().map(|f| &f.source), Some(Source::Table(..)))
        {
            let partitioned = plan.from.first().is_some_and(|f| {
                matches!(&f.source, Source::Derived(_))
                    && self.tables.iter().any(|t| t.name == f.label && t.partitioning.is_some())
            });
            if partitioned {
                return Err(SqlError::unsupported("FOR UPDATE / FOR SHARE of a partitioned table")
                    .hint(
                        "Lock the rows in its partitions, or UPDATE through the partitioned table.",
                    ));
            }
            return Err(SqlError::unsupported("FOR UPDATE without a table"));
        }
        key_order(&mut plan);
        Ok(plan)
    }

    /// `DISTINCT ON (e, …)`: each expression is an output column (by name or position) or
    /// becomes a hidden one; ORDER BY must begin with them (42P10), and sorts by them when
    /// absent.
    fn distinct_on(
        &mut self,
        exprs: &[ast::Expr],
        plan: &mut SelectPlan,
        scope: &Scope,
    ) -> Result<()> {
        let mut positions = Vec::with_capacity(exprs.len());
        for x in exprs {
            let pos = match x {
                ast::Expr::Value(v) if matches!(v.value, ast::Value::Number(..)) => {
                    let ast::Value::Number(n, _) = &v.value else { unreachable!("matched") };
                    let idx: usize = n.parse().unwrap_or(0);
                    if idx == 0 || idx > plan.columns.len() {
                        return Err(SqlError::new(
                            code::INVALID_COLUMN_REFERENCE,
                            format!("SELECT DISTINCT ON position {n} is not in select list"),
                        ));
                    }
                    idx - 1
                }
                x => {
                    let (mut e, _) = self.expr(x, scope, plan.grouping.is_some())?;
                    if let Some(g) = plan.grouping.as_mut() {
                        e = post_agg(e, g, scope)?;
                    }
                    match plan.projection.iter().position(|p| *p == e) {
                        Some(p) => p,
                        None => {
                            plan.projection.push(e);
                            plan.projection.len() - 1
                        }
                    }
                }
            };
            positions.push(pos);
        }
        if plan.order.is_empty() {
            plan.order = positions.iter().map(|&p| (p, false, false)).collect();
        } else {
            let leading: Vec<usize> =
                plan.order.iter().take(positions.len()).map(|o| o.0).collect();
            let mut a = leading.clone();
            let mut b = positions.clone();
            a.sort_unstable();
            b.sort_unstable();
            b.dedup();
            a.dedup();
            if leading.len() < positions.len() || a != b {
                return Err(SqlError::new(
                    code::INVALID_COLUMN_REFERENCE,
                    "SELECT DISTINCT ON expressions must match initial ORDER BY expressions",
                ));
            }
        }
        plan.distinct_on = positions;
        Ok(())
    }

    /// ORDER BY, LIMIT, OFFSET. Sort keys that are not output columns become hidden output
    /// columns (bound in `scope`, the input row, when not aggregating).
    pub(crate) fn order_limit(
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
                let desc = crate::bind::sorts_descending(&item.options)?;
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
                            let outer = std::mem::replace(&mut self.windows_here, true);
                            let bound = self.expr(x, scope, plan.grouping.is_some());
                            self.windows_here = outer;
                            let (mut e, _) = bound?;
                            if let Some(g) = plan.grouping.as_mut() {
                                // Over the grouped row, like the projection.
                                e = post_agg(e, g, scope)?;
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

/// A FROM item over a planned query (a derived table or a common table expression), its
/// columns named by `rename` where given.
/// `twj` with its leading unnamed parenthesized joins spliced into its chain.
fn splice_leading_joins(twj: &ast::TableWithJoins) -> std::borrow::Cow<'_, ast::TableWithJoins> {
    let ast::TableFactor::NestedJoin { table_with_joins: inner, alias: None } = &twj.relation
    else {
        return std::borrow::Cow::Borrowed(twj);
    };
    let mut spliced = splice_leading_joins(inner).into_owned();
    spliced.joins.extend(twj.joins.iter().cloned());
    std::borrow::Cow::Owned(spliced)
}

/// 42P10 for an alias that names more columns than its item has (42601 for the names of
/// `CREATE TABLE t (a, b) AS …`, which arrive as such an alias).
pub(crate) fn check_rename(alias: Option<&str>, names: usize, columns: usize) -> Result<()> {
    if names <= columns {
        return Ok(());
    }
    if alias == Some(crate::parse::CREATED_AS) {
        return Err(SqlError::syntax("too many column names were specified"));
    }
    Err(SqlError::new(
        code::INVALID_COLUMN_REFERENCE,
        format!(
            "table \"{}\" has {columns} columns available but {names} columns specified",
            alias.unwrap_or("subquery")
        ),
    ))
}

pub(crate) fn derived_item(
    plan: SelectPlan,
    alias_name: Option<String>,
    rename: &[String],
    offset: usize,
) -> (FromItem, Vec<ScopeCol>) {
    let scope = plan
        .columns
        .iter()
        .enumerate()
        .map(|(i, (n, ty))| ScopeCol {
            system: false,
            table: alias_name.clone(),
            name: rename.get(i).cloned().unwrap_or_else(|| n.clone()),
            ty: *ty,
            origin: plan.origins.get(i).copied().flatten(),
        })
        .collect::<Vec<_>>();
    let width = scope.len();
    (
        FromItem {
            source: Source::Derived(Box::new(plan)),
            offset,
            width,
            join: JoinKind::Inner,
            on: vec![],
            filters: vec![],
            label: alias_name.unwrap_or_else(|| "subquery".into()),
        },
        scope,
    )
}

/// PostgreSQL's functional dependency rule: grouping by a table's whole primary key makes
/// every column of that table usable outside aggregates (its value is the same across the
/// group). The columns are added as grouping keys, which cannot split any group.
fn add_dependent_columns(from: &[FromItem], keys: &mut Vec<Expr>) {
    for item in from {
        let Source::Table(table, _) = &item.source else { continue };
        if table.primary_key.is_empty() {
            continue;
        }
        let grouped = |c: &usize| keys.contains(&Expr::Column(item.offset + c));
        if !table.primary_key.iter().all(grouped) {
            continue;
        }
        for c in 0..item.width {
            let col = Expr::Column(item.offset + c);
            if !keys.contains(&col) {
                keys.push(col);
            }
        }
    }
}

impl Planner<'_> {
    /// A select-list item at `position`: a call of a set-returning function made with
    /// CREATE FUNCTION is marked to expand the row (its value is the array of its set).
    fn select_item(
        &mut self,
        x: &ast::Expr,
        scope: &Scope,
        position: usize,
        expand: &mut Vec<usize>,
    ) -> Result<(Expr, DataType)> {
        let mut call = x;
        while let ast::Expr::Nested(inner) = call {
            call = inner;
        }
        self.set_item = matches!(call, ast::Expr::Function(_));
        let bound = self.expr(x, scope, true);
        self.set_item = false;
        let (e, t) = bound?;
        if matches!(&e, Expr::Routine(r, _) if r.shape().set) {
            expand.push(position);
        }
        Ok((e, t))
    }
}

/// Whether an expression is the bare keyword `DEFAULT` (in INSERT VALUES and UPDATE SET).
pub(crate) fn is_default_keyword(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("default"))
}

/// Records the column of a FROM item that is a scalar function (one column, from a
/// set-returning call), which its alias names too.
fn mark_function_column(scope: &mut Scope, item: &FromItem, cols: &[ScopeCol]) {
    if cols.len() == 1
        && matches!(item.source, Source::Unnest(..) | Source::Series(..) | Source::Call(..))
    {
        scope.function_columns.push(scope.cols.len());
    }
}

/// Whether a call is `to_regclass(…)` or `to_regtype(…)`, and which.
fn reg_lookup(f: &ast::Function) -> Option<crate::bind::reg::Reg> {
    match f.name.to_string().to_ascii_lowercase().as_str() {
        "to_regclass" | "pg_catalog.to_regclass" => Some(crate::bind::reg::Reg::Class),
        "to_regtype" | "pg_catalog.to_regtype" => Some(crate::bind::reg::Reg::Type),
        _ => None,
    }
}

/// The most grouping sets a GROUP BY may expand to (PostgreSQL's limit).
const GROUPING_SETS_MAX: usize = 4096;

/// Whether a GROUP BY item is GROUPING SETS, ROLLUP or CUBE.
fn is_grouping_set(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::GroupingSets(_) | ast::Expr::Rollup(_) | ast::Expr::Cube(_))
}

/// The grouping sets of a GROUP BY list, as PostgreSQL expands them: each item's sets (a
/// plain expression is one set of itself; `ROLLUP (a, b)` is `(a, b), (a), ()`; `CUBE (a,
/// b)` every subset; `GROUPING SETS (…)` its sets, each expanded), combined across items
/// by concatenating one set of each in every way.
fn grouping_sets(items: &[ast::Expr]) -> Result<Vec<Vec<&ast::Expr>>> {
    let mut out: Vec<Vec<&ast::Expr>> = vec![vec![]];
    for item in items {
        out = cross(&out, &item_sets(item)?)?;
    }
    Ok(out)
}

fn too_many_sets() -> SqlError {
    SqlError::new(
        code::STATEMENT_TOO_COMPLEX,
        format!("too many grouping sets present (maximum {GROUPING_SETS_MAX})"),
    )
}

fn cross<'e>(
    a: &[Vec<&'e ast::Expr>],
    b: &[Vec<&'e ast::Expr>],
) -> Result<Vec<Vec<&'e ast::Expr>>> {
    if a.len().saturating_mul(b.len()) > GROUPING_SETS_MAX {
        return Err(too_many_sets());
    }
    let mut out = Vec::with_capacity(a.len() * b.len());
    for x in a {
        for y in b {
            out.push(x.iter().chain(y).copied().collect());
        }
    }
    Ok(out)
}

fn flat(elems: &[Vec<ast::Expr>]) -> Vec<&ast::Expr> {
    elems.iter().flatten().collect()
}

fn item_sets(item: &ast::Expr) -> Result<Vec<Vec<&ast::Expr>>> {
    Ok(match item {
        ast::Expr::Rollup(elems) => (0..=elems.len()).rev().map(|n| flat(&elems[..n])).collect(),
        ast::Expr::Cube(elems) => {
            if elems.len() > 12 {
                return Err(SqlError::new("54011", "CUBE is limited to 12 elements"));
            }
            // Every subset, the whole first (as PostgreSQL lists them, largest first).
            let n = elems.len();
            let mut masks: Vec<u32> = (0..1u32 << n).collect();
            masks.sort_by_key(|m| std::cmp::Reverse(m.count_ones()));
            masks
                .into_iter()
                .map(|m| {
                    (0..n).filter(|i| m & (1 << (n - 1 - i)) != 0).flat_map(|i| &elems[i]).collect()
                })
                .collect()
        }
        ast::Expr::GroupingSets(sets) => {
            let mut out = Vec::new();
            for set in sets {
                let mut expanded: Vec<Vec<&ast::Expr>> = vec![vec![]];
                for e in set {
                    expanded = cross(&expanded, &item_sets(e)?)?;
                }
                out.extend(expanded);
                if out.len() > GROUPING_SETS_MAX {
                    return Err(too_many_sets());
                }
            }
            out
        }
        // `(a, b)` in a set: both.
        ast::Expr::Tuple(parts) => vec![parts.iter().collect()],
        // ROLLUP and CUBE inside GROUPING SETS, which the SQL parser reads as calls.
        ast::Expr::Function(f) if rollup_or_cube(f).is_some() => {
            let (cube, args) = rollup_or_cube(f).expect("matched");
            let elems: Vec<Vec<ast::Expr>> = args
                .into_iter()
                .map(|a| match a {
                    ast::Expr::Tuple(parts) => parts.clone(),
                    ast::Expr::Nested(inner) => vec![(**inner).clone()],
                    a => vec![a.clone()],
                })
                .collect();
            let e = if cube { ast::Expr::Cube(elems) } else { ast::Expr::Rollup(elems) };
            // The sets name the call's arguments, which live as long as the call.
            return item_sets(&e)?
                .into_iter()
                .map(|set| set.into_iter().map(|x| find_in(f, x)).collect())
                .collect();
        }
        e => vec![vec![e]],
    })
}

/// `ROLLUP(…)` or `CUBE(…)` read as a function call: whether it is CUBE, and its
/// arguments.
fn rollup_or_cube(f: &ast::Function) -> Option<(bool, Vec<&ast::Expr>)> {
    let [ast::ObjectNamePart::Identifier(name)] = f.name.0.as_slice() else { return None };
    if name.quote_style.is_some() {
        return None;
    }
    let cube = match name.value.to_lowercase().as_str() {
        "rollup" => false,
        "cube" => true,
        _ => return None,
    };
    let ast::FunctionArguments::List(list) = &f.args else { return None };
    let args = list
        .args
        .iter()
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Some(x),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some((cube, args))
}

/// The expression of a ROLLUP/CUBE call's arguments equal to `x` (a copy's element), so the
/// sets borrow from the statement.
fn find_in<'e>(f: &'e ast::Function, x: &ast::Expr) -> Result<&'e ast::Expr> {
    let (_, args) = rollup_or_cube(f).unwrap_or_default();
    for a in args {
        if a == x {
            return Ok(a);
        }
        if let ast::Expr::Tuple(parts) = a {
            if let Some(p) = parts.iter().find(|p| *p == x) {
                return Ok(p);
            }
        }
        if let ast::Expr::Nested(inner) = a {
            if inner.as_ref() == x {
                return Ok(inner);
            }
        }
    }
    Err(SqlError::new(code::INTERNAL, "a grouping set names what its ROLLUP or CUBE does not"))
}
