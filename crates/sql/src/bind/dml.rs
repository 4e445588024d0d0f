//! Binding INSERT, UPDATE and DELETE: targets, defaults, ON CONFLICT, SET lists, RETURNING.

use std::collections::HashSet;
use std::sync::Arc;

use sqlparser::ast;

use crate::bind::query::is_default_keyword;
use crate::bind::*;
use crate::catalog::{Column, Table};
use crate::error::{code, Result, SqlError};
use crate::expr::{Expr, Func};
use crate::plan::*;
use crate::types::{DataType, Value};

pub(crate) fn table_object(t: &ast::TableObject) -> Result<ast::ObjectName> {
    match t {
        ast::TableObject::TableName(n) => Ok(n.clone()),
        _ => Err(SqlError::unsupported("INSERT into a table function")),
    }
}

/// RETURNING: expressions over the table's row.
#[derive(Clone)]
pub(crate) struct Returning {
    pub(crate) exprs: Vec<Expr>,
    pub(crate) columns: Vec<(String, DataType)>,
    /// The table column each result column shows unchanged, when it does.
    pub(crate) origins: crate::types::Origins,
}

pub(crate) fn plan_returning(
    planner: &mut Planner,
    items: &Option<Vec<ast::SelectItem>>,
    scope: &Scope,
) -> Result<Option<Returning>> {
    let Some(items) = items else { return Ok(None) };
    let mut exprs = Vec::new();
    let mut columns = Vec::new();
    for item in items {
        match item {
            ast::SelectItem::Wildcard(_) => {
                for i in 0..scope.cols.len() {
                    exprs.push(Expr::Column(i));
                }
                columns.extend(scope.cols.iter().map(|c| (c.name.clone(), c.ty)));
            }
            ast::SelectItem::UnnamedExpr(x) if reg_cast(x).is_some() => {
                let (kind, inner) = reg_cast(x).expect("matched");
                let (e, t) = planner.reg_name(kind, inner, scope, false)?;
                exprs.push(e);
                columns.push((output_name(x), t));
            }
            ast::SelectItem::ExprWithAlias { expr, alias } if reg_cast(expr).is_some() => {
                let (kind, inner) = reg_cast(expr).expect("matched");
                let (e, t) = planner.reg_name(kind, inner, scope, false)?;
                exprs.push(e);
                columns.push((ident(alias), t));
            }
            ast::SelectItem::UnnamedExpr(x) => {
                let (e, t) = planner.expr(x, scope, false)?;
                exprs.push(e);
                columns.push((
                    output_name(x),
                    if t == DataType::Unknown { DataType::Text } else { t },
                ));
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                let (e, t) = planner.expr(expr, scope, false)?;
                exprs.push(e);
                columns
                    .push((ident(alias), if t == DataType::Unknown { DataType::Text } else { t }));
            }
            // RETURNING t.*: the columns of the target or of a FROM / USING item.
            ast::SelectItem::QualifiedWildcard(
                ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                _,
            ) => {
                let name = crate::bind::name_as_written(n)?;
                let before = exprs.len();
                for (i, c) in scope.cols.iter().enumerate() {
                    if c.table.as_deref() == Some(name.as_str()) && !c.system {
                        exprs.push(Expr::Column(i));
                        columns.push((c.name.clone(), c.ty));
                    }
                }
                if exprs.len() == before {
                    return Err(SqlError::new(
                        code::UNDEFINED_TABLE,
                        format!("missing FROM-clause entry for table \"{name}\""),
                    ));
                }
            }
            other => return Err(SqlError::unsupported(format!("RETURNING {other}"))),
        }
    }
    let origins = scope.origins(&exprs);
    Ok(Some(Returning { exprs, columns, origins }))
}

/// `x::regclass` / `x::regtype`: shown as the name, as a select item is.
fn reg_cast(e: &ast::Expr) -> Option<(crate::bind::reg::Reg, &ast::Expr)> {
    match e {
        ast::Expr::Cast { expr, data_type, .. } => {
            crate::bind::reg::reg_kind(data_type).map(|k| (k, &**expr))
        }
        _ => None,
    }
}

pub(crate) fn table_scope(table: &Table, alias: &str) -> Scope {
    Scope {
        cols: table
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| ScopeCol {
                system: false,
                table: Some(alias.to_string()),
                name: c.name.clone(),
                ty: c.ty,
                origin: Some(table_origin(table, i)),
            })
            .collect(),
        ..Default::default()
    }
}

/// The origin RowDescription reports for column `i` of `table`: its OID and column number.
pub(crate) fn table_origin(table: &Table, i: usize) -> (u32, i16) {
    (crate::pg::system::oid::object(table.id) as u32, table.attnum(i))
}

/// ON CONFLICT DO UPDATE: assignments and the optional WHERE.
pub(crate) type ConflictUpdate = (Vec<(usize, Expr)>, Option<Expr>);

/// The unique keys whose conflicts an ON CONFLICT clause handles; a conflict on any other
/// key fails the INSERT (23505), as in PostgreSQL.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arbiters {
    /// Every unique key (`ON CONFLICT DO NOTHING` without a target).
    Any,
    /// The keys the target infers (`(columns)`: every unique key on exactly those columns)
    /// or names (`ON CONSTRAINT name`): the primary key, unique indexes by id.
    Keys { primary: bool, indexes: Vec<u64> },
}

impl Arbiters {
    /// Whether a conflict on the primary key is handled.
    pub(crate) fn primary(&self) -> bool {
        match self {
            Arbiters::Any => true,
            Arbiters::Keys { primary, .. } => *primary,
        }
    }

    /// Whether a conflict on the unique index `id` is handled.
    pub(crate) fn index(&self, id: u64) -> bool {
        match self {
            Arbiters::Any => true,
            Arbiters::Keys { indexes, .. } => indexes.contains(&id),
        }
    }
}

#[derive(Clone)]
pub(crate) struct InsertPlan {
    pub(crate) table: Arc<Table>,
    /// Target column of each source column (`None`: its value is ignored, the column takes
    /// its default — an identity column under OVERRIDING USER VALUE).
    pub(crate) targets: Vec<Option<usize>>,
    pub(crate) source: SelectPlan,
    pub(crate) defaults: Vec<Option<Expr>>,
    pub(crate) on_conflict: Option<(Arbiters, Option<ConflictUpdate>)>,
    pub(crate) returning: Option<Returning>,
}

/// 428C9 for a value given to a GENERATED ALWAYS identity column.
pub(crate) fn generated_always(c: &Column, message: String) -> SqlError {
    SqlError::new(code::GENERATED_ALWAYS, message)
        .detail(format!("Column \"{}\" is an identity column defined as GENERATED ALWAYS.", c.name))
}

/// 428C9 for a value given to a generated column.
pub(crate) fn generated_column(c: &Column, message: String) -> SqlError {
    SqlError::new(code::GENERATED_ALWAYS, message)
        .detail(format!("Column \"{}\" is a generated column.", c.name))
}

/// A column's default bound for a statement: its DEFAULT, or for an identity column the
/// next value of its sequence.
pub(crate) fn column_default(planner: &mut Planner, c: &Column) -> Result<Option<Expr>> {
    if let Some(identity) = &c.identity {
        let call = crate::exec::sequences::nextval_call(&identity.sequence);
        return bind_default(planner, &call).map(Some);
    }
    c.default_text().map(|d| bind_default(planner, d)).transpose()
}

pub(crate) fn bind_default(planner: &mut Planner, text: &str) -> Result<Expr> {
    let expr = crate::parse::parse_expr(text).map_err(|e| {
        SqlError::new(code::DATA_CORRUPTED, format!("stored DEFAULT {text} does not parse: {e}"))
    })?;
    // Stored names are the catalog's, read without the search path.
    let _unsearched = crate::bind::search::install(None);
    Ok(planner.expr(&expr, &Scope::default(), false)?.0)
}

pub(crate) fn plan_insert(planner: &mut Planner, ins: &ast::Insert) -> Result<InsertPlan> {
    let target = table_object(&ins.table)?;
    let name = object_name(&target)?;
    let at = target.0.first().and_then(|p| p.as_ident()).and_then(crate::bind::location_of);
    let table = planner.table_or_err(&name).map_err(|e| e.located(at))?;
    crate::exec::matviews::check_writable(&table)?;
    // OVERRIDING SYSTEM VALUE: identity columns take the values given, even GENERATED
    // ALWAYS ones; OVERRIDING USER VALUE: they ignore them and take their sequence's next.
    let mut overriding = None;
    for s in ins.settings.iter().flatten() {
        match (&s.value, s.key.value.as_str()) {
            (ast::Expr::Value(v), crate::parse::OVERRIDING) => {
                overriding = match &v.value {
                    ast::Value::SingleQuotedString(m) if m == "system" => Some(true),
                    _ => Some(false),
                }
            }
            _ => return Err(SqlError::unsupported(format!("the INSERT setting {}", s.key))),
        }
    }
    let targets: Vec<usize> = if ins.columns.is_empty() {
        (0..table.columns.len()).collect()
    } else {
        ins.columns
            .iter()
            .map(|c| table.column_or_err(&crate::bind::name_as_written(c)?))
            .collect::<Result<_>>()?
    };
    let mut seen = HashSet::new();
    for t in &targets {
        if !seen.insert(*t) {
            return Err(SqlError::new(
                code::DUPLICATE_COLUMN,
                format!("column \"{}\" specified more than once", table.columns[*t].name),
            ));
        }
    }
    let expected: Vec<DataType> = targets.iter().map(|&c| table.columns[c].ty).collect();
    let mut defaults = Vec::with_capacity(table.columns.len());
    for c in &table.columns {
        defaults.push(column_default(planner, c)?);
    }
    // `DEFAULT` may stand for a value only in the INSERT's own VALUES rows.
    let plain_values = ins.source.as_deref().and_then(|q| match q.body.as_ref() {
        ast::SetExpr::Values(v)
            if q.with.is_none() && q.order_by.is_none() && q.limit_clause.is_none() =>
        {
            Some(v)
        }
        _ => None,
    });
    let source = match (&ins.source, plain_values) {
        (_, Some(v)) => {
            let target_defaults: Vec<Option<Expr>> =
                targets.iter().map(|&t| defaults[t].clone()).collect();
            planner.values(v, Some(&expected), Some(&target_defaults))?
        }
        (Some(q), None) => planner.query(q, Some(&expected))?,
        (None, None) => {
            if !ins.columns.is_empty() {
                return Err(SqlError::syntax("syntax error at or near \"DEFAULT\""));
            }
            // DEFAULT VALUES: one row that gives no column, so every column takes its default.
            SelectPlan::over(
                FromItem {
                    source: Source::Rows(Arc::new(vec![vec![]])),
                    offset: 0,
                    width: 0,
                    join: JoinKind::Inner,
                    on: vec![],
                    filters: vec![],
                    label: "DEFAULT VALUES".into(),
                },
                vec![],
            )
        }
    };
    if source.columns.len() > targets.len() {
        return Err(SqlError::syntax("INSERT has more expressions than target columns"));
    }
    for (i, &t) in targets.iter().enumerate().take(source.columns.len()) {
        let c = &table.columns[t];
        let all_default = plain_values
            .is_some_and(|v| v.rows.iter().all(|r| r.get(i).is_some_and(is_default_keyword)));
        if c.generated.is_some() && !all_default {
            return Err(generated_column(
                c,
                format!("cannot insert a non-DEFAULT value into column \"{}\"", c.name),
            ));
        }
        if c.identity.as_ref().is_some_and(|i| i.always) && !all_default && overriding.is_none() {
            return Err(generated_always(
                c,
                format!("cannot insert a non-DEFAULT value into column \"{}\"", c.name),
            )
            .hint("Use OVERRIDING SYSTEM VALUE to override."));
        }
    }
    // A table is known by its own name (its schema's left off).
    let alias = crate::catalog::unqualified(&table.name).to_string();
    let scope = table_scope(&table, &alias);
    let on_conflict = match &ins.on {
        None => None,
        Some(ast::OnInsert::OnConflict(oc)) => {
            let arbiters = match &oc.conflict_target {
                None => Arbiters::Any,
                Some(ast::ConflictTarget::Columns(cols)) => {
                    let mut cols = cols
                        .iter()
                        .map(|c| table.column_or_err(&ident(c)))
                        .collect::<Result<Vec<_>>>()?;
                    cols.sort_unstable();
                    cols.dedup();
                    let same = |key: &[usize]| {
                        let mut key = key.to_vec();
                        key.sort_unstable();
                        key.dedup();
                        key == cols
                    };
                    let primary = !table.primary_key.is_empty() && same(&table.primary_key);
                    let indexes: Vec<u64> = table
                        .indexes
                        .iter()
                        .filter(|i| i.unique && i.is_plain() && same(&i.columns))
                        .map(|i| i.id)
                        .collect();
                    if !primary && indexes.is_empty() {
                        return Err(SqlError::new(code::INVALID_COLUMN_REFERENCE, "there is no unique or exclusion constraint matching the ON CONFLICT specification"));
                    }
                    Arbiters::Keys { primary, indexes }
                }
                Some(ast::ConflictTarget::OnConstraint(name)) => {
                    let name = crate::bind::name_as_written(name)?;
                    let pk_name = table.pkey_name();
                    if !table.primary_key.is_empty() && name == pk_name {
                        Arbiters::Keys { primary: true, indexes: vec![] }
                    } else if let Some(i) =
                        table.indexes.iter().find(|i| i.name == name && i.unique && i.constraint)
                    {
                        Arbiters::Keys { primary: false, indexes: vec![i.id] }
                    } else {
                        return Err(SqlError::new(
                            code::UNDEFINED_OBJECT,
                            format!(
                                "constraint \"{name}\" for table \"{}\" does not exist",
                                table.name
                            ),
                        ));
                    }
                }
            };
            let action = match &oc.action {
                ast::OnConflictAction::DoNothing => None,
                ast::OnConflictAction::DoUpdate(du) => {
                    if arbiters == Arbiters::Any {
                        return Err(SqlError::syntax("ON CONFLICT DO UPDATE requires inference specification or constraint name").hint("For example, ON CONFLICT (column_name)."));
                    }
                    // The row scope is the existing row, then `excluded`.
                    let mut both = scope.clone();
                    both.cols.extend(table.columns.iter().map(|c| ScopeCol {
                        system: false,
                        table: Some("excluded".into()),
                        name: c.name.clone(),
                        ty: c.ty,
                        origin: None,
                    }));
                    let mut sets = Vec::new();
                    for a in &du.assignments {
                        let col = assignment_column(&table, &a.target)?;
                        check_assigned_once(&table, &sets, col)?;
                        let (e, t) = if is_default_keyword(&a.value) {
                            match &defaults[col] {
                                Some(d) => (d.clone(), table.columns[col].ty),
                                None => (Expr::Const(Value::Null), DataType::Unknown),
                            }
                        } else {
                            let c = &table.columns[col];
                            if c.generated.is_some() {
                                return Err(generated_column(
                                    c,
                                    format!("column \"{}\" can only be updated to DEFAULT", c.name),
                                ));
                            }
                            planner.expr(&a.value, &both, false)?
                        };
                        let (e, _) = planner.coerce(e, t, table.columns[col].ty)?;
                        sets.push((col, e));
                    }
                    let cond = match &du.selection {
                        Some(s) => Some(planner.expr(s, &both, false)?.0),
                        None => None,
                    };
                    Some((sets, cond))
                }
            };
            Some((arbiters, action))
        }
        Some(_) => return Err(SqlError::unsupported("ON DUPLICATE KEY")),
    };
    // A row inserted through a partitioned table is written to a partition the statement
    // does not know when it is bound: its `tableoid` cannot be returned.
    if table.partitioning.is_some() {
        for item in ins.returning.iter().flatten() {
            let mut reads = false;
            let _ = ast::visit_expressions(item, |e| {
                match e {
                    ast::Expr::Identifier(i) if ident(i) == "tableoid" => reads = true,
                    ast::Expr::CompoundIdentifier(p)
                        if p.last().is_some_and(|l| ident(l) == "tableoid") =>
                    {
                        reads = true
                    }
                    _ => {}
                }
                std::ops::ControlFlow::<()>::Continue(())
            });
            if reads {
                return Err(SqlError::unsupported(
                    "tableoid in RETURNING of an INSERT into a partitioned table",
                ));
            }
        }
    }
    let returning = plan_returning(planner, &ins.returning, &scope)?;
    let targets = targets
        .into_iter()
        .map(|t| (overriding != Some(false) || table.columns[t].identity.is_none()).then_some(t))
        .collect();
    Ok(InsertPlan { table, targets, source, defaults, on_conflict, returning })
}

/// 42601 when SET names a column twice (PostgreSQL refuses `SET x = 1, x = 2`).
pub(crate) fn check_assigned_once(table: &Table, sets: &[(usize, Expr)], col: usize) -> Result<()> {
    if sets.iter().any(|(c, _)| *c == col) {
        return Err(SqlError::syntax(format!(
            "multiple assignments to same column \"{}\"",
            table.columns[col].name
        )));
    }
    Ok(())
}

pub(crate) fn assignment_column(table: &Table, target: &ast::AssignmentTarget) -> Result<usize> {
    match target {
        ast::AssignmentTarget::ColumnName(n) => {
            let name = n.0.last().and_then(|p| p.as_ident()).map(ident).unwrap_or_default();
            table.column_or_err(&name)
        }
        ast::AssignmentTarget::Tuple(_) => Err(SqlError::unsupported("assigning a column tuple")),
    }
}

/// An UPDATE's (or MERGE's) `SET col = expr, …` over the row of `scope`: each target column
/// with its value converted to the column's type; `DEFAULT` is the column's default; a
/// generated or GENERATED ALWAYS identity column takes only DEFAULT (428C9).
pub(crate) fn bind_assignments(
    planner: &mut Planner,
    table: &Table,
    assignments: &[ast::Assignment],
    scope: &Scope,
) -> Result<Vec<(usize, Expr)>> {
    let mut sets = Vec::new();
    for a in assignments {
        let col = assignment_column(table, &a.target)?;
        check_assigned_once(table, &sets, col)?;
        let c = &table.columns[col];
        let (e, t) = if is_default_keyword(&a.value) {
            match column_default(planner, c)? {
                Some(d) => (d, c.ty),
                None => (Expr::Const(Value::Null), DataType::Unknown),
            }
        } else {
            if c.generated.is_some() {
                return Err(generated_column(
                    c,
                    format!("column \"{}\" can only be updated to DEFAULT", c.name),
                ));
            }
            if c.identity.as_ref().is_some_and(|i| i.always) {
                return Err(generated_always(
                    c,
                    format!("column \"{}\" can only be updated to DEFAULT", c.name),
                ));
            }
            planner.expr(&a.value, scope, false)?
        };
        sets.push((col, planner.coerce(e, t, c.ty)?.0));
    }
    Ok(sets)
}

#[derive(Clone)]
pub(crate) struct UpdatePlan {
    pub(crate) table: Arc<Table>,
    pub(crate) scan: SelectPlan,
    pub(crate) sets: Vec<(usize, Expr)>,
    pub(crate) returning: Option<Returning>,
    /// An UPDATE of a partitioned table: the statement bound for each leaf partition
    /// (whose columns are the table's), run one after another.
    pub(crate) partitions: Option<Vec<UpdatePlan>>,
}

/// A partitioned target's leaf partitions, each with the statement's target rewritten to
/// name it (under the alias the statement gives the target, or the table's own name).
fn partition_targets(
    planner: &mut Planner,
    table: &Table,
    relation: &ast::TableFactor,
) -> Result<Option<Vec<ast::TableFactor>>> {
    let ast::TableFactor::Table { alias, .. } = relation else { return Ok(None) };
    if table.partitioning.is_none() {
        return Ok(None);
    }
    let alias = alias.clone().unwrap_or_else(|| ast::TableAlias {
        explicit: true,
        name: ast::Ident::with_quote('"', crate::catalog::unqualified(&table.name)),
        columns: vec![],
        at: None,
    });
    let leaves = planner.leaf_partitions(table)?;
    Ok(Some(
        leaves
            .iter()
            .map(|leaf| {
                let mut r = relation.clone();
                if let ast::TableFactor::Table { name, alias: a, .. } = &mut r {
                    *name = ast::ObjectName::from(vec![
                        ast::Ident::with_quote('"', crate::catalog::schema_of(&leaf.name)),
                        ast::Ident::with_quote('"', crate::catalog::unqualified(&leaf.name)),
                    ]);
                    *a = Some(alias.clone());
                }
                r
            })
            .collect(),
    ))
}

/// The rows an UPDATE or DELETE changes: the target table's, joined to the FROM (UPDATE) or
/// USING (DELETE) items `joined`, filtered by WHERE. The scan's rows are whole joined rows,
/// the target's columns first; the scope is theirs (for SET and RETURNING).
pub(crate) fn target_scan(
    planner: &mut Planner,
    relation: &ast::TableFactor,
    joined: &[ast::TableWithJoins],
    selection: &Option<ast::Expr>,
) -> Result<(Arc<Table>, SelectPlan, Scope)> {
    let ast::TableFactor::Table { name, alias, args: None, .. } = relation else {
        return Err(SqlError::unsupported("this UPDATE/DELETE target"));
    };
    let tname = object_name(name)?;
    let at = name.0.first().and_then(|p| p.as_ident()).and_then(crate::bind::location_of);
    let table = planner.table_or_err(&tname).map_err(|e| e.located(at))?;
    crate::exec::matviews::check_writable(&table)?;
    let alias = alias
        .as_ref()
        .map(|a| ident(&a.name))
        .unwrap_or_else(|| crate::catalog::unqualified(&table.name).to_string());
    let mut scope = table_scope(&table, &alias);
    let mut from = vec![FromItem {
        source: Source::Table(table.clone(), Access::Full),
        offset: 0,
        width: table.columns.len(),
        join: JoinKind::Inner,
        on: vec![],
        filters: vec![],
        label: table.name.clone(),
    }];
    planner.bind_from(joined, &mut scope, &mut from)?;
    if from.iter().any(|i| i.join.keeps_right()) {
        // The target's rows are what is changed: none may be made up of NULLs.
        return Err(SqlError::unsupported(
            "a RIGHT or FULL join in UPDATE … FROM or DELETE … USING",
        ));
    }
    let mut conjuncts = Vec::new();
    if let Some(w) = selection {
        let (e, t) = planner.expr(w, &scope, false)?;
        let (e, _) = planner.coerce(e, t, DataType::Bool)?;
        split_and(e, &mut conjuncts);
    }
    let constant_filters = Planner::place_filters(&mut from, conjuncts);
    for item in &mut from {
        planner.settle(item)?;
    }
    let width = scope.cols.len();
    let mut plan = SelectPlan::over(
        from.remove(0),
        table.columns.iter().map(|c| (c.name.clone(), c.ty)).collect(),
    );
    plan.from.extend(from);
    plan.width = width;
    plan.constant_filters = constant_filters;
    // A partition (the target, or one an UPDATE/DELETE of its parent reaches) whose bound
    // rules the conditions out is not read.
    if table.partition_of.is_some() {
        let conds = plan.from[0].filters.clone();
        planner.guard_partition(&mut plan, &conds)?;
    }
    Ok((table, plan, scope))
}

pub(crate) fn plan_update(planner: &mut Planner, u: &ast::Update) -> Result<UpdatePlan> {
    if !u.table.joins.is_empty() {
        return Err(SqlError::unsupported("UPDATE of a join"));
    }
    let joined = match &u.from {
        None => &[][..],
        Some(ast::UpdateTableFromKind::AfterSet(f)) => f.as_slice(),
        Some(ast::UpdateTableFromKind::BeforeSet(_)) => {
            return Err(SqlError::syntax("FROM goes after SET in UPDATE"))
        }
    };
    let (table, scan, scope) = target_scan(planner, &u.table.relation, joined, &u.selection)?;
    let partitions = match partition_targets(planner, &table, &u.table.relation)? {
        Some(targets) => Some(
            targets
                .into_iter()
                .map(|relation| {
                    let mut leaf = u.clone();
                    leaf.table.relation = relation;
                    plan_update(planner, &leaf)
                })
                .collect::<Result<Vec<_>>>()?,
        ),
        None => None,
    };
    let sets = bind_assignments(planner, &table, &u.assignments, &scope)?;
    let returning = plan_returning(planner, &u.returning, &scope)?;
    Ok(UpdatePlan { table, scan, sets, returning, partitions })
}

#[derive(Clone)]
pub(crate) struct DeletePlan {
    pub(crate) table: Arc<Table>,
    pub(crate) scan: SelectPlan,
    pub(crate) returning: Option<Returning>,
    /// A DELETE from a partitioned table: the statement bound for each leaf partition.
    pub(crate) partitions: Option<Vec<DeletePlan>>,
}

pub(crate) fn plan_delete(planner: &mut Planner, d: &ast::Delete) -> Result<DeletePlan> {
    let from = match &d.from {
        ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
    };
    let [twj] = from.as_slice() else {
        return Err(SqlError::unsupported("DELETE from several tables"));
    };
    if !twj.joins.is_empty() {
        return Err(SqlError::unsupported("DELETE of a join"));
    }
    let joined = d.using.as_deref().unwrap_or(&[]);
    let (table, scan, scope) = target_scan(planner, &twj.relation, joined, &d.selection)?;
    let partitions = match partition_targets(planner, &table, &twj.relation)? {
        Some(targets) => Some(
            targets
                .into_iter()
                .map(|relation| {
                    let mut leaf = d.clone();
                    let from = match &mut leaf.from {
                        ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
                    };
                    from[0].relation = relation;
                    plan_delete(planner, &leaf)
                })
                .collect::<Result<Vec<_>>>()?,
        ),
        None => None,
    };
    let returning = plan_returning(planner, &d.returning, &scope)?;
    Ok(DeletePlan { table, scan, returning, partitions })
}

/// Binds an expression that refers to no table and needs no planner (constants, now(),
/// casts and arithmetic over them).
pub(crate) fn bind_free(e: &ast::Expr) -> Result<(Expr, DataType)> {
    use ast::Expr as E;
    Ok(match e {
        E::Value(v) => match &v.value {
            ast::Value::Number(n, _) => match n.parse::<i64>() {
                Ok(i) => (Expr::Const(Value::Int(i)), DataType::Int8),
                Err(_) => (
                    Expr::Const(Value::parse(n, DataType::Numeric(None))?),
                    DataType::Numeric(None),
                ),
            },
            ast::Value::SingleQuotedString(s) => {
                (Expr::Const(Value::Text(s.clone())), DataType::Unknown)
            }
            ast::Value::Boolean(b) => (Expr::Const(Value::Bool(*b)), DataType::Bool),
            ast::Value::Null => (Expr::Const(Value::Null), DataType::Unknown),
            other => return Err(SqlError::unsupported(format!("DEFAULT {other}"))),
        },
        E::UnaryOp { op: ast::UnaryOperator::Minus, expr } => {
            let (x, t) = bind_free(expr)?;
            (Expr::Neg(Box::new(x)), t)
        }
        E::Nested(x) => bind_free(x)?,
        E::Cast { expr, data_type: dt, .. } => {
            let ty = data_type(dt)?;
            let (x, _) = bind_free(expr)?;
            (Expr::Cast(Box::new(x), ty), ty)
        }
        E::Identifier(i) if i.value.eq_ignore_ascii_case("current_timestamp") => {
            (Expr::Func(Func::Now, vec![]), DataType::TimestampTz(None))
        }
        E::Identifier(i) if i.value.eq_ignore_ascii_case("localtimestamp") => {
            (Expr::Func(Func::LocalTimestamp, vec![]), DataType::Timestamp(None))
        }
        E::Identifier(i) if i.value.eq_ignore_ascii_case("localtime") => {
            (Expr::Func(Func::LocalTime, vec![]), DataType::Time(None))
        }
        E::Identifier(i) if i.value.eq_ignore_ascii_case("current_date") => {
            (Expr::Func(Func::CurrentDate, vec![]), DataType::Date)
        }
        E::Function(f) if f.name.to_string().eq_ignore_ascii_case("now") => {
            (Expr::Func(Func::Now, vec![]), DataType::TimestampTz(None))
        }
        E::BinaryOp { left, op, right } => {
            let (a, at) = bind_free(left)?;
            let (b, _) = bind_free(right)?;
            let op = match op {
                ast::BinaryOperator::Plus => crate::expr::BinOp::Add,
                ast::BinaryOperator::Minus => crate::expr::BinOp::Sub,
                ast::BinaryOperator::Multiply => crate::expr::BinOp::Mul,
                ast::BinaryOperator::StringConcat => crate::expr::BinOp::Concat,
                other => {
                    return Err(SqlError::unsupported(format!("the operator {other} in DEFAULT")))
                }
            };
            (Expr::Binary(op, Box::new(a), Box::new(b)), at)
        }
        other => return Err(SqlError::unsupported(format!("DEFAULT {other}"))),
    })
}
