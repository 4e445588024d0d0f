//! Partitioned tables: `CREATE TABLE … PARTITION BY`, `CREATE TABLE … PARTITION OF`,
//! `ALTER TABLE … ATTACH | DETACH PARTITION`, and the routing of written rows.
//!
//! A partitioned table holds no rows: each of its partitions is a table of its own, with
//! the parent's columns in the parent's order, its own indexes (one for each of the
//! parent's, made with it), and a bound (`crate::partition`). A row written to the parent
//! is routed to the partition whose bound holds its key; a row written to a partition must
//! lie within its bound (and its ancestors'), else 23514. An UPDATE through the parent that
//! moves a row's key out of its partition deletes it there and routes it anew.

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::dml::Arbiters;
use crate::bind::*;
use crate::catalog::{
    unqualified, ForeignKey, Index, PartitionBound, PartitionOf, PartitionStrategy, Partitioning,
    RangeDatum, Reference, Table,
};
use crate::encoding::decode_row;
use crate::error::{code, Result, SqlError};
use crate::exec::write::Writer;
use crate::expr::{Ctx, Env};
use crate::partition::{decode, key_types, Bound, PARTITIONS_MAX, PARTITION_DEPTH_MAX};
use crate::session::*;
use crate::types::{DataType, Value};

/// 23514: a row that no partition of `parent` holds.
fn no_partition(
    parent: &Table,
    key_names: &[String],
    key: &[Value],
    style: crate::style::Style,
) -> SqlError {
    let shown: Vec<String> = key
        .iter()
        .map(|v| v.to_text_in(DataType::Text, style).unwrap_or_else(|| "null".into()))
        .collect();
    SqlError::new(
        code::CHECK,
        format!("no partition of relation \"{}\" found for row", unqualified(&parent.name)),
    )
    .detail(format!(
        "Partition key of the failing row contains ({}) = ({}).",
        key_names.join(", "),
        shown.join(", ")
    ))
    .table(&parent.name)
}

/// 23514: a row written to partition `table` that its bound does not hold.
fn outside_partition(table: &Table, row: &[Value], style: crate::style::Style) -> SqlError {
    let shown: Vec<String> = row
        .iter()
        .map(|v| v.to_text_in(DataType::Text, style).unwrap_or_else(|| "null".into()))
        .collect();
    SqlError::new(
        code::CHECK,
        format!(
            "new row for relation \"{}\" violates partition constraint",
            unqualified(&table.name)
        ),
    )
    .detail(format!("Failing row contains ({}).", shown.join(", ")))
    .table(&table.name)
}

/// Where the rows written to a partitioned table go: each partition with its bound, and
/// the routes of its own partitions when it is partitioned in turn.
pub(crate) struct Router {
    parent: Arc<Table>,
    partitioning: Partitioning,
    routes: Vec<Route>,
    default: Option<usize>,
}

struct Route {
    table: Arc<Table>,
    bound: Bound,
    sub: Option<Router>,
}

impl Router {
    /// The leaf partition that holds `row` (a row of the routed table, whose layout every
    /// partition shares), or 23514.
    pub(crate) fn route(&self, row: &[Value], style: crate::style::Style) -> Result<&Arc<Table>> {
        let key = crate::partition::key_of(&self.partitioning, row);
        let found = self.routes.iter().position(|r| r.bound.holds(&key)).or(self.default);
        let Some(i) = found else {
            let names: Vec<String> = self
                .partitioning
                .key
                .iter()
                .map(|&c| self.parent.columns[c].name.clone())
                .collect();
            return Err(no_partition(&self.parent, &names, &key, style));
        };
        let route = &self.routes[i];
        match &route.sub {
            Some(sub) => sub.route(row, style),
            None => Ok(&route.table),
        }
    }
}

/// The checks a row written straight to a partition must pass: its bound, and its
/// ancestors' (nearest first); a default partition's is that no sibling holds the key.
pub(crate) struct PartitionCheck {
    levels: Vec<(Vec<usize>, Bound, Vec<Bound>)>,
}

impl PartitionCheck {
    /// 23514 unless `row`, written to partition `table`, lies within the bounds.
    pub(crate) fn check(
        &self,
        table: &Table,
        row: &[Value],
        style: crate::style::Style,
    ) -> Result<()> {
        if self.holds(row) {
            return Ok(());
        }
        Err(outside_partition(table, row, style))
    }

    pub(crate) fn holds(&self, row: &[Value]) -> bool {
        self.levels.iter().all(|(key, bound, siblings)| {
            let k: Vec<Value> = key.iter().map(|&c| row[c].clone()).collect();
            match bound {
                Bound::Default => !siblings.iter().any(|s| s.holds(&k)),
                b => b.holds(&k),
            }
        })
    }
}

impl Writer<'_> {
    /// The key of `PARTITION BY RANGE | LIST (columns)` for `table`.
    pub(crate) fn partition_key(&self, table: &Table, by: &ast::Expr) -> Result<Partitioning> {
        let bad = || {
            SqlError::syntax(
                "PARTITION BY takes RANGE (columns), LIST (column) or HASH (columns)".to_string(),
            )
        };
        let ast::Expr::Function(f) = by else { return Err(bad()) };
        let strategy = match f.name.to_string().to_lowercase().as_str() {
            "range" => PartitionStrategy::Range,
            "list" => PartitionStrategy::List,
            "hash" => {
                return Err(SqlError::unsupported("PARTITION BY HASH").hint(
                    "Partition by RANGE or LIST; a hash of the key can be a generated column.",
                ))
            }
            other => {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER_VALUE,
                    format!("unrecognized partitioning strategy \"{other}\""),
                ))
            }
        };
        let ast::FunctionArguments::List(list) = &f.args else { return Err(bad()) };
        let mut key = Vec::new();
        for a in &list.args {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a else {
                return Err(bad());
            };
            let c = match e {
                ast::Expr::Identifier(id) => {
                    let name = ident(id);
                    table.column(&name).ok_or_else(|| {
                        SqlError::new(
                            code::UNDEFINED_COLUMN,
                            format!("column \"{name}\" named in partition key does not exist"),
                        )
                    })?
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "a partition key on the expression {other}"
                    ))
                    .hint("Partition by a column; a generated column can hold the expression."))
                }
            };
            if key.contains(&c) {
                return Err(SqlError::new(
                    code::DUPLICATE_COLUMN,
                    format!(
                        "column \"{}\" appears more than once in partition key",
                        table.columns[c].name
                    ),
                ));
            }
            if !crate::encoding::key_type_supported(table.columns[c].ty) {
                return Err(SqlError::unsupported(format!(
                    "a partition key on a column of type {}",
                    table.columns[c].ty.sql_name()
                )));
            }
            key.push(c);
        }
        if key.is_empty() {
            return Err(bad());
        }
        if strategy == PartitionStrategy::List && key.len() > 1 {
            return Err(SqlError::new(
                code::INVALID_OBJECT_DEFINITION,
                "cannot use \"list\" partition strategy with more than one column",
            ));
        }
        Ok(Partitioning { strategy, key, partitions: vec![] })
    }

    /// The bound `FOR VALUES …` (or `DEFAULT`) gives a partition of `parent`: each value
    /// evaluated once and kept as text of its key column's type.
    pub(crate) fn partition_bound(
        &mut self,
        parent: &Table,
        fv: &ast::ForValues,
        env: &dyn Env,
    ) -> Result<PartitionBound> {
        let p = partitioning(parent)?;
        let types = key_types(parent, p);
        let mismatch = || {
            SqlError::new(
                code::INVALID_TABLE_DEFINITION,
                format!(
                    "invalid bound specification for a {} partition",
                    match p.strategy {
                        PartitionStrategy::Range => "range",
                        PartitionStrategy::List => "list",
                    }
                ),
            )
        };
        match (fv, p.strategy) {
            (ast::ForValues::Default, _) => Ok(PartitionBound::Default),
            (ast::ForValues::From { from, to }, PartitionStrategy::Range) => {
                let mut side = |data: &[ast::PartitionBoundValue], which: &str| {
                    if data.len() != types.len() {
                        return Err(SqlError::new(
                            code::INVALID_TABLE_DEFINITION,
                            format!(
                                "{which} bound must have as many values ({}) as the partition key has columns",
                                types.len()
                            ),
                        ));
                    }
                    let mut out = Vec::with_capacity(data.len());
                    for (d, &ty) in data.iter().zip(&types) {
                        out.push(match d {
                            ast::PartitionBoundValue::MinValue => RangeDatum::MinValue,
                            ast::PartitionBoundValue::MaxValue => RangeDatum::MaxValue,
                            ast::PartitionBoundValue::Expr(e) => {
                                match self.bound_value(&parent.database, e, ty, env)? {
                                    Some(text) => RangeDatum::Value(text),
                                    None => {
                                        return Err(SqlError::new(
                                            code::INVALID_TABLE_DEFINITION,
                                            "cannot specify NULL in range bound",
                                        ))
                                    }
                                }
                            }
                        });
                    }
                    Ok(out)
                };
                let from = side(from, "FROM")?;
                let to = side(to, "TO")?;
                Ok(PartitionBound::Range { from, to })
            }
            (ast::ForValues::In(values), PartitionStrategy::List) => {
                let mut out: Vec<Option<String>> = Vec::with_capacity(values.len());
                for e in values {
                    let v = self.bound_value(&parent.database, e, types[0], env)?;
                    if !out.contains(&v) {
                        out.push(v);
                    }
                }
                Ok(PartitionBound::List(out))
            }
            _ => Err(mismatch()),
        }
    }

    /// One value of a bound: a constant expression of the key column's type `ty`, as text.
    fn bound_value(
        &mut self,
        database: &str,
        e: &ast::Expr,
        ty: DataType,
        env: &dyn Env,
    ) -> Result<Option<String>> {
        let bound = self.bind_default_expr(database, e, ty, env).map_err(|err| {
            if err.code == code::FEATURE_NOT_SUPPORTED {
                SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    "cannot use column references in partition bound expression",
                )
            } else {
                err
            }
        })?;
        let v = bound.eval(&[], &Ctx::new(&[], env))?;
        let v = crate::expr::assign(v, ty, env.style())?;
        Ok(v.to_text(ty))
    }

    /// Checks a new bound of partition `name` against its siblings: an empty range is
    /// 42P17, a bound that overlaps another partition's 42P17, a second default partition
    /// 42P17; and the rows of the default partition must not belong to it (23514).
    fn check_new_bound(
        &mut self,
        parent: &Table,
        name: &str,
        bound: &PartitionBound,
        env: &dyn Env,
    ) -> Result<()> {
        let p = partitioning(parent)?;
        if p.partitions.len() >= PARTITIONS_MAX {
            return Err(SqlError::new(
                code::PROGRAM_LIMIT,
                format!("a partitioned table can have at most {PARTITIONS_MAX} partitions"),
            ));
        }
        let types = key_types(parent, p);
        let new = decode(bound, &types)?;
        if new.is_empty_range() {
            let PartitionBound::Range { .. } = bound else { unreachable!("a range") };
            let shown = crate::partition::shown(bound, &types, env.style());
            return Err(SqlError::new(
                code::INVALID_OBJECT_DEFINITION,
                format!("empty range bound specified for partition \"{}\"", unqualified(name)),
            )
            .detail(format!(
                "Bound {shown} holds no value: its lower bound is not below its upper bound."
            )));
        }
        let mut default = None;
        for sibling in &p.partitions {
            let s = self.db.catalog.table_or_err(&mut self.ts.txn, &parent.database, sibling)?;
            let Some(of) = &s.partition_of else { continue };
            let theirs = decode(&of.bound, &types)?;
            if theirs == Bound::Default {
                if new == Bound::Default {
                    return Err(SqlError::new(
                        code::INVALID_OBJECT_DEFINITION,
                        format!(
                            "partition \"{}\" conflicts with existing default partition \"{}\"",
                            unqualified(name),
                            unqualified(sibling)
                        ),
                    ));
                }
                default = Some(s);
                continue;
            }
            if new.overlaps(&theirs) {
                return Err(SqlError::new(
                    code::INVALID_OBJECT_DEFINITION,
                    format!(
                        "partition \"{}\" would overlap partition \"{}\"",
                        unqualified(name),
                        unqualified(sibling)
                    ),
                ));
            }
        }
        // The default partition may hold rows the new partition would hold.
        if let (Some(d), false) = (default, new == Bound::Default) {
            for leaf in self.leaves_of(&d, 0)? {
                let key: Vec<usize> = p.key.clone();
                let mut bad = false;
                self.each_row(&leaf.keyspace(), |_, _, raw: Vec<u8>| {
                    let row = decode_row(&raw, leaf.columns.len())?;
                    let k: Vec<Value> = key.iter().map(|&c| row[c].clone()).collect();
                    bad |= new.holds(&k);
                    Ok(())
                })?;
                if bad {
                    return Err(SqlError::new(
                        code::CHECK,
                        format!(
                            "updated partition constraint for default partition \"{}\" would be violated by some row",
                            unqualified(&d.name)
                        ),
                    )
                    .table(&d.name));
                }
            }
        }
        Ok(())
    }

    /// The leaf partitions under `t` (`t` itself when it is not partitioned).
    pub(crate) fn leaves_of(&mut self, t: &Arc<Table>, depth: usize) -> Result<Vec<Arc<Table>>> {
        let Some(p) = &t.partitioning else { return Ok(vec![t.clone()]) };
        if depth > PARTITION_DEPTH_MAX {
            return Err(too_deep());
        }
        let mut out = Vec::new();
        for name in &p.partitions {
            let child = self.db.catalog.table_or_err(&mut self.ts.txn, &t.database, name)?;
            out.extend(self.leaves_of(&child, depth + 1)?);
        }
        Ok(out)
    }

    /// The direct partitions of `t`.
    pub(crate) fn partitions_of(&mut self, t: &Table) -> Result<Vec<Arc<Table>>> {
        let Some(p) = &t.partitioning else { return Ok(vec![]) };
        p.partitions
            .iter()
            .map(|n| self.db.catalog.table_or_err(&mut self.ts.txn, &t.database, n))
            .collect()
    }

    /// The routes of rows written to partitioned table `t`.
    pub(crate) fn router(&mut self, t: &Arc<Table>) -> Result<Router> {
        self.router_at(t, 0)
    }

    fn router_at(&mut self, t: &Arc<Table>, depth: usize) -> Result<Router> {
        if depth > PARTITION_DEPTH_MAX {
            return Err(too_deep());
        }
        let p = partitioning(t)?.clone();
        let types = key_types(t, &p);
        let mut routes = Vec::with_capacity(p.partitions.len());
        let mut default = None;
        for child in self.partitions_of(t)? {
            let Some(of) = &child.partition_of else { continue };
            let bound = decode(&of.bound, &types)?;
            if bound == Bound::Default {
                default = Some(routes.len());
            }
            let sub = match child.partitioning {
                Some(_) => Some(self.router_at(&child, depth + 1)?),
                None => None,
            };
            routes.push(Route { table: child, bound, sub });
        }
        Ok(Router { parent: t.clone(), partitioning: p, routes, default })
    }

    /// The partition constraint of partition `table` (its bound and its ancestors').
    pub(crate) fn partition_check(&mut self, table: &Table) -> Result<Option<PartitionCheck>> {
        let mut levels = Vec::new();
        let mut of = table.partition_of.clone();
        while let Some(o) = of {
            if levels.len() > PARTITION_DEPTH_MAX {
                return Err(too_deep());
            }
            let parent =
                self.db.catalog.table_or_err(&mut self.ts.txn, &table.database, &o.parent)?;
            let p = partitioning(&parent)?;
            let types = key_types(&parent, p);
            // The layouts agree: the parent's key positions are the partition's.
            let bound = decode(&o.bound, &types)?;
            let mut siblings = Vec::new();
            if bound == Bound::Default {
                for s in self.partitions_of(&parent)? {
                    if let Some(so) = &s.partition_of {
                        let b = decode(&so.bound, &types)?;
                        if b != Bound::Default {
                            siblings.push(b);
                        }
                    }
                }
            }
            levels.push((p.key.clone(), bound, siblings));
            of = parent.partition_of.clone();
        }
        Ok((!levels.is_empty()).then_some(PartitionCheck { levels }))
    }

    /// 23514 unless `row`, written to partition `table`, lies within its bound.
    pub(crate) fn check_partition(
        &mut self,
        table: &Table,
        row: &[Value],
        ctx: &Ctx,
    ) -> Result<()> {
        if table.partition_of.is_none() {
            return Ok(());
        }
        if let Some(check) = self.partition_check(table)? {
            if !check.holds(row) {
                return Err(outside_partition(table, row, ctx.env.style()));
            }
        }
        Ok(())
    }

    /// A row routed to partition `leaf`: through its BEFORE ROW INSERT triggers (`None`
    /// when one skips it), fitted to its columns. A trigger may not move the row out of the
    /// partition (0A000, as in PostgreSQL).
    pub(crate) fn routed_row(
        &mut self,
        leaf: &Arc<Table>,
        row: Vec<Value>,
        ctx: &Ctx,
    ) -> Result<Option<Vec<Value>>> {
        if !Self::has_row_triggers(leaf, crate::exec::triggers::Event::Insert, true) {
            return Ok(Some(row));
        }
        let before = row.clone();
        let event = crate::exec::triggers::Event::Insert;
        let Some(row) = self.before_row(leaf, event, Some(row), None, None, ctx.env)? else {
            return Ok(None);
        };
        let row = Self::fit_row(leaf, row, ctx.env.style())?;
        let row = self.generate(leaf, row, ctx)?;
        if row != before {
            if let Some(check) = self.partition_check(leaf)? {
                if !check.holds(&row) {
                    return Err(SqlError::unsupported(
                        "moving a row to another partition in a BEFORE FOR EACH ROW trigger",
                    )
                    .detail(format!(
                        "Before the trigger ran, the row was to be in partition \"{}\".",
                        unqualified(&leaf.name)
                    )));
                }
            }
        }
        Ok(Some(row))
    }

    /// 42P16 (42809 for ADD COLUMN) for a change of partition `t`'s columns or of what it
    /// has from its parent: its columns are its parent's.
    pub(crate) fn check_partition_change(
        &mut self,
        t: &Table,
        ops: &[ast::AlterTableOperation],
    ) -> Result<()> {
        use ast::AlterTableOperation as Op;
        let of = t.partition_of.as_ref().expect("a partition");
        let parent = self.db.catalog.table_or_err(&mut self.ts.txn, &t.database, &of.parent)?;
        let inherited = |what: &str, n: &str| {
            SqlError::new(
                code::INVALID_TABLE_DEFINITION,
                format!("cannot {what} inherited column \"{n}\""),
            )
        };
        for op in ops {
            match op {
                Op::AddColumn { .. } => {
                    return Err(SqlError::new(
                        code::WRONG_OBJECT_TYPE,
                        "cannot add column to a partition",
                    ))
                }
                Op::DropColumn { column_names, .. } => {
                    if let Some(c) = column_names.first() {
                        return Err(inherited("drop", &ident(c)));
                    }
                }
                Op::RenameColumn { old_column_name, .. } => {
                    return Err(inherited("rename", &ident(old_column_name)))
                }
                Op::AlterColumn { column_name, op } => {
                    let n = ident(column_name);
                    match op {
                        ast::AlterColumnOperation::SetDataType { .. } => {
                            return Err(inherited("alter", &n))
                        }
                        // (A primary key column says so first.)
                        ast::AlterColumnOperation::DropNotNull
                            if parent.column(&n).is_some_and(|c| !parent.columns[c].nullable)
                                && !t.column(&n).is_some_and(|c| t.primary_key.contains(&c)) =>
                        {
                            return Err(SqlError::new(
                                code::INVALID_TABLE_DEFINITION,
                                format!("column \"{n}\" is marked NOT NULL in parent table"),
                            ))
                        }
                        _ => {}
                    }
                }
                Op::DropConstraint { name, .. } => {
                    let n = ident(name);
                    let from_parent = (!parent.primary_key.is_empty()
                        && !t.primary_key.is_empty()
                        && n == t.pkey_name())
                        || parent.checks.iter().any(|c| c.name == n)
                        || parent.foreign_keys.iter().any(|f| f.name == n);
                    if from_parent {
                        return Err(SqlError::new(
                            code::INVALID_TABLE_DEFINITION,
                            format!(
                                "cannot drop inherited constraint \"{n}\" of relation \"{}\"",
                                unqualified(&t.name)
                            ),
                        ));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// `ALTER INDEX parent_index ATTACH PARTITION partition_index`: a partition's index
    /// belongs to its parent's when it has the same definition (Kiln pairs them so), so
    /// this checks that it does and changes nothing.
    pub(crate) fn attach_index(
        &mut self,
        parent_index: &ast::ObjectName,
        child_index: &ast::ObjectName,
        database: &str,
    ) -> Result<Output> {
        let (parent_index, child_index) = (object_name(parent_index)?, object_name(child_index)?);
        let owner = |w: &mut Self, name: &str| -> Result<Arc<Table>> {
            let table =
                w.db.catalog.index_table(&mut w.ts.txn, database, name)?.ok_or_else(|| {
                    SqlError::new(
                        code::UNDEFINED_TABLE,
                        format!("relation \"{}\" does not exist", unqualified(name)),
                    )
                })?;
            w.db.catalog.table_or_err(&mut w.ts.txn, database, &table)
        };
        let parent = owner(self, &parent_index)?;
        let child = owner(self, &child_index)?;
        let definition = |t: &Table, name: &str| {
            if !t.primary_key.is_empty() && unqualified(name) == t.pkey_name() {
                return Some((t.primary_key.clone(), vec![], None, true, true));
            }
            t.indexes.iter().find(|i| i.name == unqualified(name)).map(|i| {
                (i.columns.clone(), i.expressions.clone(), i.predicate.clone(), i.unique, false)
            })
        };
        let is_partition = child.partition_of.as_ref().is_some_and(|o| o.parent == parent.name);
        if !is_partition || definition(&parent, &parent_index) != definition(&child, &child_index) {
            return Err(SqlError::new(
                code::INVALID_OBJECT_DEFINITION,
                format!(
                    "cannot attach index \"{}\" as a partition of index \"{}\"",
                    unqualified(&child_index),
                    unqualified(&parent_index)
                ),
            )
            .detail(if is_partition {
                "The index definitions do not match.".to_string()
            } else {
                format!(
                    "Index \"{}\" is not an index on any partition of table \"{}\".",
                    unqualified(&child_index),
                    unqualified(&parent.name)
                )
            }));
        }
        Ok(Output::Command("ALTER INDEX".into()))
    }

    /// `CREATE TABLE name PARTITION OF parent FOR VALUES … [PARTITION BY …]`: a table with
    /// the parent's columns, defaults, NOT NULLs, CHECKs, primary key and indexes.
    pub(crate) fn create_partition(
        &mut self,
        ct: &ast::CreateTable,
        database: &str,
        env: &dyn Env,
    ) -> Result<Output> {
        let name = new_object_name(&ct.name)?;
        let parent_name = object_name(ct.partition_of.as_ref().expect("a partition"))?;
        if !ct.columns.is_empty() {
            return Err(SqlError::unsupported("column definitions in CREATE TABLE … PARTITION OF")
                .hint("A partition takes its parent's columns; change them on the parent."));
        }
        if ct.like.is_some() || ct.query.is_some() {
            return Err(SqlError::syntax("PARTITION OF takes neither LIKE nor AS"));
        }
        if self.table_name_taken(database, &name, ct.if_not_exists)? {
            return Ok(Output::Command("CREATE TABLE".into()));
        }
        let parent = self.db.catalog.table_or_err(&mut self.ts.txn, database, &parent_name)?;
        partitioning(&parent)?;
        let fv = ct
            .for_values
            .as_ref()
            .ok_or_else(|| SqlError::syntax("PARTITION OF needs FOR VALUES … or DEFAULT"))?;
        let bound = self.partition_bound(&parent, fv, env)?;
        self.check_new_bound(&parent, &name, &bound, env)?;
        let id = self.db.catalog.next_id(&mut self.ts.txn)?;
        let mut child = Table {
            id,
            database: database.to_string(),
            name: name.clone(),
            columns: parent
                .columns
                .iter()
                .map(|c| {
                    let mut c = c.clone();
                    // An identity column takes its value from the parent's sequence when
                    // the row is written through the parent.
                    if let Some(identity) = c.identity.take() {
                        c.default = Some(crate::exec::sequences::nextval_call(&identity.sequence));
                    }
                    c.comment = None;
                    c
                })
                .collect(),
            primary_key: vec![],
            primary_key_name: None,
            indexes: vec![],
            options: vec![],
            foreign_keys: vec![],
            referenced_by: vec![],
            checks: parent.checks.clone(),
            last_attnum: 0,
            comment: None,
            triggers: vec![],
            matview: None,
            partitioning: None,
            partition_of: Some(PartitionOf { parent: parent.name.clone(), bound }),
        };
        for constraint in &ct.constraints {
            match constraint {
                ast::TableConstraint::Check(ck) => {
                    self.define_check(&mut child, ck.name.as_ref().map(ident), &ck.expr, env)?;
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "the constraint {other} in CREATE TABLE … PARTITION OF"
                    ))
                    .hint("Add it to the partition with ALTER TABLE afterwards."))
                }
            }
        }
        if let Some(by) = &ct.partition_by {
            child.partitioning = Some(self.partition_key(&child, by)?);
            check_inherited_keys(&parent, &child)?;
        }
        self.inherit_indexes(&parent, &mut child)?;
        self.inherit_foreign_keys(&parent, &mut child, false, env)?;
        let mut parent = (*parent).clone();
        let bound = child.partition_of.as_ref().expect("a partition").bound.clone();
        self.list_partition(&mut parent, &name, &bound)?;
        self.db.catalog.put_table(&mut self.ts.txn, &child)?;
        self.db.catalog.put_table(&mut self.ts.txn, &parent)?;
        Ok(Output::Command("CREATE TABLE".into()))
    }

    /// Gives partition `child` the parent's primary key and an index for each of the
    /// parent's that it lacks (built over its rows, uniqueness checked).
    pub(crate) fn inherit_indexes(&mut self, parent: &Table, child: &mut Table) -> Result<()> {
        if !parent.primary_key.is_empty() {
            if child.primary_key.is_empty() {
                let cols = parent.primary_key.clone();
                self.add_primary_key(child, cols, None)?;
            } else if child.primary_key != parent.primary_key {
                return Err(SqlError::new(
                    code::INVALID_TABLE_DEFINITION,
                    format!(
                        "multiple primary keys for table \"{}\" are not allowed",
                        unqualified(&child.name)
                    ),
                ));
            }
        }
        for index in &parent.indexes {
            if child.indexes.iter().any(|i| i.same_definition(index)) {
                continue;
            }
            let made = self.index_for_partition(index, child)?;
            self.build_index(child, &made)?;
            child.indexes.push(made);
        }
        // A partitioned partition passes them on to its own partitions.
        for grandchild in self.partitions_of(child)? {
            let mut grandchild = (*grandchild).clone();
            self.inherit_indexes(child, &mut grandchild)?;
            self.db.catalog.put_table(&mut self.ts.txn, &grandchild)?;
        }
        Ok(())
    }

    /// Gives partition `child` each of the parent's foreign keys it has no equivalent of,
    /// under the parent's name (PostgreSQL's rule), recorded in the table it references;
    /// with `validate` (ATTACH: its rows were written without it) every row is checked
    /// against it. A partitioned partition passes them on to its own partitions.
    pub(crate) fn inherit_foreign_keys(
        &mut self,
        parent: &Table,
        child: &mut Table,
        validate: bool,
        env: &dyn Env,
    ) -> Result<()> {
        // One the partition already had stands for the parent's (PostgreSQL adopts it).
        let own = child.foreign_keys.clone();
        // By name, as PostgreSQL clones (and so validates) them.
        let mut keys: Vec<&ForeignKey> = parent.foreign_keys.iter().collect();
        keys.sort_by(|a, b| a.name.cmp(&b.name));
        for fk in keys {
            if own.iter().any(|f| f.same_definition(fk)) {
                continue;
            }
            let name = crate::exec::constraints::constraint_name(
                child,
                Some(fk.name.clone()),
                String::new(),
            )?;
            child.foreign_keys.push(ForeignKey { name: name.clone(), ..fk.clone() });
            let mut referenced =
                (*self.db.catalog.table_or_err(&mut self.ts.txn, &child.database, &fk.table)?)
                    .clone();
            referenced
                .referenced_by
                .push(Reference { table: child.name.clone(), constraint: name.clone() });
            self.db.catalog.put_table(&mut self.ts.txn, &referenced)?;
            if validate {
                self.validate_foreign_key(child, &name, env)?;
            }
        }
        for grandchild in self.partitions_of(child)? {
            let mut grandchild = (*grandchild).clone();
            self.inherit_foreign_keys(child, &mut grandchild, validate, env)?;
            self.db.catalog.put_table(&mut self.ts.txn, &grandchild)?;
        }
        Ok(())
    }

    /// A copy of `index` (of a partitioned table) for its partition `child`, named as
    /// PostgreSQL names it: `<child>_<columns>_key` for a unique constraint, else
    /// `<child>_<parts>_idx`.
    pub(crate) fn index_for_partition(&mut self, index: &Index, child: &Table) -> Result<Index> {
        let parts: Vec<String> = if index.expressions.is_empty() {
            index
                .columns
                .iter()
                .chain(&index.include)
                .map(|&c| child.columns[c].name.clone())
                .collect()
        } else {
            index
                .expressions
                .iter()
                .map(|e| match crate::parse::parse_expr(e) {
                    Ok(ast::Expr::Identifier(i)) => ident(&i),
                    Ok(ast::Expr::Function(f)) => f.name.to_string(),
                    _ => "expr".to_string(),
                })
                .collect()
        };
        let suffix = if index.constraint { "key" } else { "idx" };
        let base = format!("{}_{}_{suffix}", unqualified(&child.name), parts.join("_"));
        let name = self.index_name(child, None, base)?;
        let id = self.db.catalog.next_id(&mut self.ts.txn)?;
        Ok(Index { name, id, comment: None, ..index.clone() })
    }

    /// `ALTER TABLE parent ATTACH PARTITION child FOR VALUES …`: `child` must have the
    /// parent's columns (names, types, order; NOT NULL where the parent has it) and every
    /// row it holds must lie within the bound.
    pub(crate) fn attach_partition(
        &mut self,
        a: &crate::parse::AttachPartition,
        database: &str,
        env: &dyn Env,
    ) -> Result<Output> {
        let parent =
            self.db.catalog.table_or_err(&mut self.ts.txn, database, &object_name(&a.parent)?)?;
        partitioning(&parent)?;
        let child_name = object_name(&a.partition)?;
        let child = self.db.catalog.table_or_err(&mut self.ts.txn, database, &child_name)?;
        if child.name == parent.name {
            return Err(SqlError::new(
                code::DUPLICATE_TABLE,
                format!(
                    "cannot attach table \"{}\" as a partition of itself",
                    unqualified(&child.name)
                ),
            ));
        }
        if let Some(of) = &child.partition_of {
            return Err(SqlError::new(
                code::INVALID_OBJECT_DEFINITION,
                format!("\"{}\" is already a partition", unqualified(&child.name)),
            )
            .detail(format!("It is a partition of \"{}\".", unqualified(&of.parent))));
        }
        if child.matview.is_some() {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("\"{}\" is not a table", unqualified(&child.name)),
            ));
        }
        // A partitioned table cannot become a partition of its own partitions.
        let mut up = parent.partition_of.clone();
        while let Some(o) = up {
            if o.parent == child.name {
                return Err(SqlError::new(
                    code::DUPLICATE_TABLE,
                    format!(
                        "circular inheritance not allowed: \"{}\" is already a child of \"{}\"",
                        unqualified(&parent.name),
                        unqualified(&child.name)
                    ),
                ));
            }
            up = self
                .db
                .catalog
                .table_or_err(&mut self.ts.txn, database, &o.parent)?
                .partition_of
                .clone();
        }
        self.check_same_columns(&parent, &child)?;
        check_inherited_keys(&parent, &child)?;
        if !child.referenced_by.is_empty() {
            return Err(SqlError::unsupported(
                "attaching a table that foreign keys reference as a partition",
            ));
        }
        if child.triggers.iter().any(|t| !t.row) {
            return Err(SqlError::unsupported(
                "attaching a table with statement triggers as a partition",
            ));
        }
        let bound = self.partition_bound(&parent, &a.bound, env)?;
        self.check_new_bound(&parent, &child.name, &bound, env)?;
        let mut child = (*child).clone();
        child.partition_of = Some(PartitionOf { parent: parent.name.clone(), bound });
        // Every row already in it must lie within its bound.
        if let Some(check) = self.partition_check(&child)? {
            for leaf in self.leaves_of(&Arc::new(child.clone()), 0)? {
                let mut bad = false;
                let width = leaf.columns.len();
                self.each_row(&leaf.keyspace(), |_, _, raw: Vec<u8>| {
                    bad |= !check.holds(&decode_row(&raw, width)?);
                    Ok(())
                })?;
                if bad {
                    return Err(SqlError::new(
                        code::CHECK,
                        format!(
                            "partition constraint of relation \"{}\" is violated by some row",
                            unqualified(&leaf.name)
                        ),
                    )
                    .table(&leaf.name));
                }
            }
        }
        // The parent's CHECK constraints hold for the partition too.
        for ck in &parent.checks {
            if !child.checks.iter().any(|c| c.name == ck.name) {
                let expr = crate::parse::parse_expr(&ck.expr)?;
                let bound = self.define_check(&mut child, Some(ck.name.clone()), &expr, env)?;
                let t = child.clone();
                self.validate_check(&t, &ck.name, &bound, env)?;
            }
        }
        self.inherit_indexes(&parent, &mut child)?;
        self.inherit_foreign_keys(&parent, &mut child, true, env)?;
        let mut parent = (*parent).clone();
        let bound = child.partition_of.as_ref().expect("a partition").bound.clone();
        self.list_partition(&mut parent, &child.name, &bound)?;
        self.db.catalog.put_table(&mut self.ts.txn, &child)?;
        self.db.catalog.put_table(&mut self.ts.txn, &parent)?;
        Ok(Output::Command("ALTER TABLE".into()))
    }

    /// 42804 unless `child` has `parent`'s columns: the same names and types in the same
    /// order, NOT NULL where the parent's are.
    fn check_same_columns(&self, parent: &Table, child: &Table) -> Result<()> {
        let mismatch = |m: String| SqlError::new(code::DATATYPE_MISMATCH, m);
        for c in &child.columns {
            if parent.column(&c.name).is_none() {
                return Err(mismatch(format!(
                    "table \"{}\" contains column \"{}\" not found in parent \"{}\"",
                    unqualified(&child.name),
                    c.name,
                    unqualified(&parent.name)
                ))
                .detail("The new partition may contain only the columns present in parent."));
            }
        }
        for (i, pc) in parent.columns.iter().enumerate() {
            let Some(j) = child.column(&pc.name) else {
                return Err(mismatch(format!("child table is missing column \"{}\"", pc.name)));
            };
            let cc = &child.columns[j];
            if cc.ty != pc.ty {
                return Err(mismatch(format!(
                    "child table \"{}\" has different type for column \"{}\"",
                    unqualified(&child.name),
                    pc.name
                )));
            }
            if !pc.nullable && cc.nullable {
                return Err(mismatch(format!(
                    "column \"{}\" in child table must be marked NOT NULL",
                    pc.name
                )));
            }
            if i != j {
                return Err(SqlError::unsupported(format!(
                    "a partition whose columns are in another order than its parent's (column \"{}\" of \"{}\")",
                    pc.name,
                    unqualified(&child.name)
                ))
                .hint("Create the partition with CREATE TABLE … PARTITION OF, or with the parent's columns in the parent's order."));
            }
        }
        Ok(())
    }

    /// `ALTER TABLE parent DETACH PARTITION child`: `child` becomes a table of its own,
    /// with its rows and indexes.
    pub(crate) fn detach_partition(
        &mut self,
        parent_name: &ast::ObjectName,
        child_name: &ast::ObjectName,
        database: &str,
    ) -> Result<Output> {
        let parent =
            self.db.catalog.table_or_err(&mut self.ts.txn, database, &object_name(parent_name)?)?;
        partitioning(&parent)?;
        let child =
            self.db.catalog.table_or_err(&mut self.ts.txn, database, &object_name(child_name)?)?;
        if child.partition_of.as_ref().map(|o| o.parent.as_str()) != Some(parent.name.as_str()) {
            return Err(SqlError::new(
                code::UNDEFINED_TABLE,
                format!(
                    "relation \"{}\" is not a partition of relation \"{}\"",
                    unqualified(&child.name),
                    unqualified(&parent.name)
                ),
            ));
        }
        let mut child = (*child).clone();
        child.partition_of = None;
        let mut parent = (*parent).clone();
        partitioning_mut(&mut parent).partitions.retain(|n| *n != child.name);
        self.db.catalog.put_table(&mut self.ts.txn, &child)?;
        self.db.catalog.put_table(&mut self.ts.txn, &parent)?;
        Ok(Output::Command("ALTER TABLE".into()))
    }

    /// Before `table` is dropped: its partitions go with it (as in PostgreSQL, without
    /// CASCADE), and a partition leaves its parent's list.
    pub(crate) fn drop_partitioned(
        &mut self,
        table: &Table,
        cascade: bool,
        dropping: &[String],
    ) -> Result<()> {
        let db = table.database.clone();
        if let Some(of) = &table.partition_of {
            if !dropping.contains(&of.parent) {
                if let Some(parent) = self.db.catalog.table(&mut self.ts.txn, &db, &of.parent)? {
                    let mut parent = (*parent).clone();
                    partitioning_mut(&mut parent).partitions.retain(|n| *n != table.name);
                    self.db.catalog.put_table(&mut self.ts.txn, &parent)?;
                }
            }
        }
        let names = table.partitioning.as_ref().map(|p| p.partitions.clone()).unwrap_or_default();
        for name in names {
            // One the statement names itself is dropped in its turn (or was already).
            if dropping.contains(&name) {
                continue;
            }
            let Some(child) = self.db.catalog.table(&mut self.ts.txn, &db, &name)? else {
                continue;
            };
            let orphan = Table { partition_of: None, ..(*child).clone() };
            self.drop_partitioned(&orphan, cascade, dropping)?;
            self.drop_dependent_matviews("table", &child.name, cascade, dropping, &db)?;
            self.drop_dependent_views("table", &child.name, cascade, dropping, &db)?;
            self.drop_table_references(&child, cascade, dropping)?;
            self.truncate(&child)?;
            self.db.catalog.delete_table(&mut self.ts.txn, &child)?;
            self.drop_owned_sequences(&child)?;
        }
        Ok(())
    }
}

/// What an ALTER TABLE of a partitioned table (`parent` as it was before, `altered` after)
/// does to its partition `child`: the changes of columns and CHECKs as they are; a foreign
/// key named as the parent's; a primary key or
/// unique constraint unnamed (the partition names its own), unless it has one already;
/// a dropped primary key or unique constraint under the partition's name for it.
pub(crate) fn partition_operations(
    parent: &Table,
    altered: &Table,
    child: &Table,
    ops: &[ast::AlterTableOperation],
) -> Vec<ast::AlterTableOperation> {
    use ast::AlterTableOperation as Op;
    // The foreign keys the change gave the parent, in order: each partition's is named
    // as the parent's (PostgreSQL's rule), given or made up.
    let mut added_keys = altered
        .foreign_keys
        .iter()
        .filter(|f| !parent.foreign_keys.iter().any(|p| p.name == f.name))
        .map(|f| f.name.clone());
    let mut out = Vec::new();
    for op in ops {
        match op {
            Op::AddConstraint { constraint: ast::TableConstraint::ForeignKey(fk), not_valid } => {
                let mut fk = fk.clone();
                if let Some(name) = added_keys.next() {
                    fk.name = Some(ast::Ident::with_quote('"', name));
                }
                out.push(Op::AddConstraint {
                    constraint: ast::TableConstraint::ForeignKey(fk),
                    not_valid: *not_valid,
                });
            }
            Op::AddConstraint { constraint: ast::TableConstraint::PrimaryKey(pk), not_valid } => {
                if child.primary_key.is_empty() {
                    let mut pk = pk.clone();
                    pk.name = None;
                    out.push(Op::AddConstraint {
                        constraint: ast::TableConstraint::PrimaryKey(pk),
                        not_valid: *not_valid,
                    });
                }
            }
            Op::AddConstraint { constraint: ast::TableConstraint::Unique(u), not_valid } => {
                let mut u = u.clone();
                u.name = None;
                out.push(Op::AddConstraint {
                    constraint: ast::TableConstraint::Unique(u),
                    not_valid: *not_valid,
                });
            }
            Op::DropConstraint { if_exists, name, drop_behavior } => {
                let n = ident(name);
                let mapped = if !parent.primary_key.is_empty() && n == parent.pkey_name() {
                    (!child.primary_key.is_empty()).then(|| child.pkey_name())
                } else if let Some(pi) = parent.indexes.iter().find(|i| i.name == n) {
                    child.indexes.iter().find(|ci| ci.same_definition(pi)).map(|ci| ci.name.clone())
                } else if let Some(pf) = parent.foreign_keys.iter().find(|f| f.name == n) {
                    // Its copy, or the equivalent one it had when attached.
                    child
                        .foreign_keys
                        .iter()
                        .find(|cf| cf.name == n)
                        .or_else(|| child.foreign_keys.iter().find(|cf| cf.same_definition(pf)))
                        .map(|cf| cf.name.clone())
                } else {
                    Some(n)
                };
                if let Some(m) = mapped {
                    out.push(Op::DropConstraint {
                        if_exists: *if_exists,
                        name: ast::Ident::with_quote('"', m),
                        drop_behavior: *drop_behavior,
                    });
                }
            }
            Op::RenameConstraint { .. }
            | Op::EnableTrigger { .. }
            | Op::DisableTrigger { .. }
            | Op::OwnerTo { .. } => {}
            other => out.push(other.clone()),
        }
    }
    out
}

/// 42P16 for a change of a partitioned table's key columns; 0A000 for a primary key or
/// unique constraint without them.
pub(crate) fn check_partitioned_change(t: &Table, ops: &[ast::AlterTableOperation]) -> Result<()> {
    use ast::AlterTableOperation as Op;
    let p = partitioning(t)?;
    let in_key = |name: &ast::Ident| {
        let n = ident(name);
        t.column(&n).filter(|c| p.key.contains(c)).map(|_| n)
    };
    let key_change = |what: &str, n: String| {
        SqlError::new(
            code::INVALID_TABLE_DEFINITION,
            format!(
                "cannot {what} column \"{n}\" because it is part of the partition key of relation \"{}\"",
                unqualified(&t.name)
            ),
        )
    };
    for op in ops {
        match op {
            Op::DropColumn { column_names, .. } => {
                if let Some(n) = column_names.iter().find_map(in_key) {
                    return Err(key_change("drop", n));
                }
            }
            Op::AlterColumn { column_name, op: ast::AlterColumnOperation::SetDataType { .. } } => {
                if let Some(n) = in_key(column_name) {
                    return Err(key_change("alter", n));
                }
            }
            Op::AddConstraint { constraint, .. } => match constraint {
                ast::TableConstraint::PrimaryKey(pk) => {
                    let cols = key_columns(t, &pk.columns);
                    check_unique_key(t, &cols, "PRIMARY KEY")?;
                }
                ast::TableConstraint::Unique(u) => {
                    let cols = key_columns(t, &u.columns);
                    check_unique_key(t, &cols, "UNIQUE")?;
                }
                _ => {}
            },
            _ => {}
        }
    }
    Ok(())
}

/// The positions of the plain columns of a key (others are left for the key's own checks).
fn key_columns(t: &Table, cols: &[ast::IndexColumn]) -> Vec<usize> {
    cols.iter()
        .filter_map(|ic| match &ic.column.expr {
            ast::Expr::Identifier(id) => t.column(&ident(id)),
            _ => None,
        })
        .collect()
}

impl Writer<'_> {
    /// Adds partition `child` (whose bound is `bound`) to `parent`'s list, which is kept
    /// in the order of the partitions' bounds.
    fn list_partition(
        &mut self,
        parent: &mut Table,
        child: &str,
        bound: &PartitionBound,
    ) -> Result<()> {
        let types = key_types(parent, partitioning(parent)?);
        let new = decode(bound, &types)?;
        let mut at = 0;
        for (i, name) in partitioning(parent)?.partitions.clone().iter().enumerate() {
            let s = self.db.catalog.table_or_err(&mut self.ts.txn, &parent.database, name)?;
            let Some(of) = &s.partition_of else { continue };
            if decode(&of.bound, &types)?.order(&new) != std::cmp::Ordering::Greater {
                at = i + 1;
            }
        }
        partitioning_mut(parent).partitions.insert(at, child.to_string());
        Ok(())
    }
}

fn too_deep() -> SqlError {
    SqlError::new(
        code::STATEMENT_TOO_COMPLEX,
        format!("partitions are nested more than {PARTITION_DEPTH_MAX} deep"),
    )
}

/// The partitioning of `t`, or 42809 when it is not partitioned.
pub(crate) fn partitioning(t: &Table) -> Result<&Partitioning> {
    t.partitioning.as_ref().ok_or_else(|| {
        SqlError::new(
            code::WRONG_OBJECT_TYPE,
            format!("table \"{}\" is not partitioned", unqualified(&t.name)),
        )
    })
}

fn partitioning_mut(t: &mut Table) -> &mut Partitioning {
    t.partitioning.as_mut().expect("checked to be partitioned")
}

/// The ON CONFLICT arbiters of an INSERT into partitioned table `parent`, for the row
/// routed to partition `leaf`: its primary key, and its indexes made for the parent's.
pub(crate) fn arbiters_for(a: &Arbiters, parent: &Table, leaf: &Table) -> Arbiters {
    match a {
        Arbiters::Any => Arbiters::Any,
        Arbiters::Keys { primary, indexes } => Arbiters::Keys {
            primary: *primary,
            indexes: parent
                .indexes
                .iter()
                .filter(|i| indexes.contains(&i.id))
                .filter_map(|pi| {
                    leaf.indexes.iter().find(|li| li.same_definition(pi)).map(|li| li.id)
                })
                .collect(),
        },
    }
}

/// 0A000 unless the unique keys partitioned table `child` takes from its `parent` include
/// every column of its own partition key too.
fn check_inherited_keys(parent: &Table, child: &Table) -> Result<()> {
    if !parent.primary_key.is_empty() {
        check_unique_key(child, &parent.primary_key, "PRIMARY KEY")?;
    }
    for ix in parent.indexes.iter().filter(|i| i.unique && i.is_plain()) {
        check_unique_key(child, &ix.columns, "UNIQUE")?;
    }
    Ok(())
}

/// 0A000 unless a unique key on `cols` of partitioned table `t` includes every column of
/// its partition key (so that one partition's index decides uniqueness).
pub(crate) fn check_unique_key(t: &Table, cols: &[usize], what: &str) -> Result<()> {
    let Some(p) = &t.partitioning else { return Ok(()) };
    for &k in &p.key {
        if !cols.contains(&k) {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                "unique constraint on partitioned table must include all partitioning columns",
            )
            .detail(format!(
                "{what} constraint on table \"{}\" lacks column \"{}\" which is part of the partition key.",
                unqualified(&t.name),
                t.columns[k].name
            )));
        }
    }
    Ok(())
}
