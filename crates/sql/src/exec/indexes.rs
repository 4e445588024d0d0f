//! Secondary indexes: CREATE INDEX (on columns, on expressions, partial), building one over
//! the rows already there, and each row's entry.
//!
//! An entry's key is the encoded key values, then — unless the index is unique and no value
//! is NULL — the row's primary key, so equal values keep one entry per row. A unique entry's
//! value is the primary key it points to. An index on expressions (`lower(email)`) keys
//! each row by the expressions' values; a partial index (`WHERE NOT deleted`) has entries
//! only for the rows its condition is true of. Both are bound once per definition
//! ([`crate::catalog::Catalog::bound_index`]) and must be immutable, as PostgreSQL requires:
//! an entry written today must be found with the same key tomorrow, in any session's time
//! zone.

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::dml::table_scope;
use crate::bind::*;
use crate::catalog::{beside, unqualified};
use crate::catalog::{BoundIndex, Index, Table};
use crate::encoding::{decode_row, encode_key};
use crate::error::{code, Result, SqlError};
use crate::exec::write::*;
use crate::expr::{CatalogFunc, Ctx, Env, Expr, Func, SeqFunc};
use crate::session::Output;
use crate::types::{DataType, Value};

/// What an index expression may ask of the session: nothing that could differ between
/// sessions or over time (the binder refuses such expressions; this answers the rest).
pub(crate) struct IndexEnv;

impl Env for IndexEnv {
    fn now(&self) -> i64 {
        0
    }
    fn style(&self) -> crate::style::Style {
        crate::style::Style::DEFAULT
    }
    fn database(&self) -> String {
        String::new()
    }
    fn user(&self) -> String {
        String::new()
    }
    fn backend_pid(&self) -> i32 {
        0
    }
    fn kiln(&self, _: Func, _: &[Value]) -> Result<Value> {
        Err(not_immutable())
    }
    fn catalog(&self, _: CatalogFunc, _: &[Value]) -> Result<Value> {
        Err(not_immutable())
    }
    fn sequence(&self, _: SeqFunc, _: &crate::sequence::Sequence, _: &[Value]) -> Result<Value> {
        Err(not_immutable())
    }
}

fn not_immutable() -> SqlError {
    SqlError::new(
        code::INVALID_OBJECT_DEFINITION,
        "functions in index expression must be marked IMMUTABLE",
    )
}

/// Refuses what could give another value for the same row: anything not immutable, and
/// anything reading a `timestamp with time zone` column other than the column itself (its
/// text, date or local time depend on the session's time zone).
pub(crate) fn check_immutable(e: &Expr, table: &Table, what: &str) -> Result<()> {
    if matches!(e, Expr::Column(_)) {
        return Ok(());
    }
    let mut refused: Option<SqlError> = None;
    e.walk(&mut |x| {
        if refused.is_some() {
            return;
        }
        refused = match x {
            Expr::Subquery(..) | Expr::InValues(..) => Some(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                format!("cannot use subquery in {what}"),
            )),
            Expr::Param(_) | Expr::Outer(_) => Some(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                format!("there is no parameter in {what}"),
            )),
            Expr::Agg(..) | Expr::Window(..) => Some(SqlError::new(
                code::GROUPING,
                format!("aggregate and window functions are not allowed in {what}"),
            )),
            Expr::Sequence(..) | Expr::Routine(..) => Some(not_immutable()),
            Expr::Func(f, _) => match f {
                Func::Json(..) => None,
                f => match crate::functions::of(*f) {
                    Some(def) if def.immutable => None,
                    _ => Some(not_immutable()),
                },
            },
            Expr::Column(c) if matches!(table.columns[*c].ty, DataType::TimestampTz(_)) => {
                Some(not_immutable())
            }
            _ => None,
        };
    });
    refused.map_or(Ok(()), Err)
}

impl Writer<'_> {
    /// The bound expressions and condition of `index` (None for a plain index).
    fn bound_index(&mut self, table: &Table, index: &Index) -> Result<Option<Arc<BoundIndex>>> {
        if index.is_plain() {
            return Ok(None);
        }
        if let Some(bound) = self.db.catalog.bound_index(table, index) {
            return Ok(Some(bound));
        }
        let stored = |text: &str| {
            crate::parse::parse_expr(text).map_err(|e| {
                SqlError::new(
                    code::DATA_CORRUPTED,
                    format!("stored index expression {text} does not parse: {e}"),
                )
            })
        };
        let parts = index.expressions.iter().map(|t| stored(t)).collect::<Result<Vec<_>>>()?;
        let predicate = index.predicate.as_deref().map(stored).transpose()?;
        let bound = Arc::new(self.bind_index(table, &parts, predicate.as_ref())?.0);
        self.db.catalog.remember_index(table, index, bound.clone());
        Ok(Some(bound))
    }

    /// Binds key expressions and a condition over `table`'s row; also gives the parts'
    /// types.
    fn bind_index(
        &mut self,
        table: &Table,
        parts: &[ast::Expr],
        predicate: Option<&ast::Expr>,
    ) -> Result<(BoundIndex, Vec<DataType>)> {
        let database = table.database.clone();
        let mut planner = self.definition_planner(&database, &IndexEnv);
        let scope = table_scope(table, &table.name);
        let mut bound = Vec::with_capacity(parts.len());
        let mut types = Vec::with_capacity(parts.len());
        for p in parts {
            let (e, ty) = planner.expr(p, &scope, false)?;
            check_immutable(&e, table, "index expressions")?;
            bound.push(e);
            types.push(ty);
        }
        let predicate = match predicate {
            None => None,
            Some(p) => {
                let (e, ty) = planner.expr(p, &scope, false)?;
                check_immutable(&e, table, "index predicate")?;
                if !matches!(ty, DataType::Bool | DataType::Unknown) {
                    return Err(SqlError::new(
                        code::DATATYPE_MISMATCH,
                        format!(
                            "argument of WHERE must be type boolean, not type {}",
                            ty.sql_name()
                        ),
                    ));
                }
                Some(planner.coerce(e, ty, DataType::Bool)?.0)
            }
        };
        Ok((BoundIndex { parts: bound, predicate }, types))
    }

    /// The key values of `row` in `index`; None when a partial index leaves the row out.
    pub(crate) fn index_values(
        &mut self,
        table: &Table,
        index: &Index,
        row: &[Value],
    ) -> Result<Option<Vec<Value>>> {
        let Some(bound) = self.bound_index(table, index)? else {
            return Ok(Some(index.columns.iter().map(|&c| row[c].clone()).collect()));
        };
        let ctx = Ctx::new(&[], &IndexEnv);
        if let Some(p) = &bound.predicate {
            if p.eval(row, &ctx)?.as_bool()? != Some(true) {
                return Ok(None);
            }
        }
        if index.expressions.is_empty() {
            return Ok(Some(index.columns.iter().map(|&c| row[c].clone()).collect()));
        }
        bound.parts.iter().map(|e| e.eval(row, &ctx)).collect::<Result<Vec<_>>>().map(Some)
    }

    /// The entry of `row` (primary key `pk`) in `index`: key, value and whether the key is
    /// unique on its own (a unique index, no NULL); None when a partial index leaves the row
    /// out. Also gives the key values.
    pub(crate) fn index_entry(
        &mut self,
        table: &Table,
        index: &Index,
        row: &[Value],
        pk: &[u8],
    ) -> Result<Option<IndexEntry>> {
        // An index of a method Kiln does not build holds nothing.
        if !index.is_built() {
            return Ok(None);
        }
        let Some(values) = self.index_values(table, index, row)? else { return Ok(None) };
        let mut key = encode_key(&values.iter().collect::<Vec<_>>())?;
        if index.unique && (index.nulls_not_distinct || !values.iter().any(Value::is_null)) {
            Ok(Some(IndexEntry { key, value: pk.to_vec(), unique: true, values }))
        } else {
            key.extend_from_slice(pk);
            key.extend_from_slice(&(pk.len() as u16).to_be_bytes());
            Ok(Some(IndexEntry { key, value: Vec::new(), unique: false, values }))
        }
    }

    pub(crate) fn build_index(&mut self, table: &Table, index: &Index) -> Result<()> {
        if !index.is_built() {
            return Ok(());
        }
        self.each_row(&table.keyspace(), |w, pk, raw| w.index_row(table, index, pk, raw))
    }

    fn index_row(&mut self, table: &Table, index: &Index, pk: Vec<u8>, raw: Vec<u8>) -> Result<()> {
        let row = decode_row(&raw, table.columns.len())?;
        let Some(entry) = self.index_entry(table, index, &row, &pk)? else { return Ok(()) };
        if entry.unique && !self.ts.txn.insert(&index.keyspace(), &entry.key, &entry.value)? {
            if let Some(existing) = self.ts.txn.get(&index.keyspace(), &entry.key)? {
                if existing != pk {
                    return Err(index_build_violation(
                        table,
                        &index.name,
                        &entry.values,
                        &index.part_names(table),
                    ));
                }
            }
        } else if !entry.unique {
            self.ts.txn.put(&index.keyspace(), &entry.key, &entry.value)?;
        }
        Ok(())
    }

    /// REINDEX: each index named (an index, a table's, a schema's or the database's) emptied
    /// and built again from its table's rows — a unique index over rows that repeat a key
    /// fails with 23505, as in PostgreSQL. A primary key is its table's own order, and the
    /// system catalogs are computed, so neither has anything to rebuild.
    pub(crate) fn reindex(&mut self, r: &crate::parse::Reindex, database: &str) -> Result<Output> {
        use crate::parse::ReindexKind as K;
        let tables: Vec<(Arc<Table>, Option<String>)> = match (r.kind, &r.name) {
            (K::Index, Some(name)) => {
                let name = object_name(name)?;
                let owner = match self.db.catalog.index_table(&mut self.ts.txn, database, &name)? {
                    Some(t) => {
                        Some(self.db.catalog.table_or_err(&mut self.ts.txn, database, &t)?)
                    }
                    None => None,
                };
                match owner {
                    Some(t) => {
                        let index = unqualified(&name).to_string();
                        vec![(t, Some(index))]
                    }
                    None if self.db.catalog.table(&mut self.ts.txn, database, &name)?.is_some() => {
                        return Err(SqlError::new(
                            code::WRONG_OBJECT_TYPE,
                            format!("\"{}\" is not an index", unqualified(&name)),
                        ))
                    }
                    None => {
                        // A primary key of a table written before key names were relation
                        // names, or no such relation.
                        let tables = self.db.catalog.tables(&mut self.ts.txn, database)?;
                        if tables.iter().any(|t| {
                            !t.primary_key.is_empty() && beside(&t.name, &t.pkey_name()) == name
                        }) {
                            vec![]
                        } else {
                            return Err(SqlError::new(
                                code::UNDEFINED_TABLE,
                                format!("relation \"{name}\" does not exist"),
                            ));
                        }
                    }
                }
            }
            (K::Table, Some(name)) => {
                let name = object_name(name)?;
                vec![(self.db.catalog.table_or_err(&mut self.ts.txn, database, &name)?, None)]
            }
            (K::Schema, Some(name)) => {
                let schema = name_as_written(name)?;
                let builtin = crate::exec::schema::SCHEMAS.contains(&schema.as_str());
                if !builtin
                    && self.db.catalog.schema(&mut self.ts.txn, database, &schema)?.is_none()
                {
                    return Err(crate::exec::schema::undefined_schema(&schema));
                }
                self.db
                    .catalog
                    .tables(&mut self.ts.txn, database)?
                    .into_iter()
                    .filter(|t| crate::catalog::schema_of(&t.name) == schema)
                    .map(|t| (t, None))
                    .collect()
            }
            (K::Database | K::System, name) => {
                if let Some(name) = name {
                    let name = name_as_written(name)?;
                    if name != database {
                        return Err(SqlError::unsupported(
                            "reindexing a database other than the one connected to",
                        )
                        .hint(format!("Connect to \"{name}\" and run REINDEX there.")));
                    }
                }
                if r.kind == K::System {
                    vec![]
                } else {
                    self.db
                        .catalog
                        .tables(&mut self.ts.txn, database)?
                        .into_iter()
                        .map(|t| (t, None))
                        .collect()
                }
            }
            (_, None) => {
                return Err(SqlError::syntax("REINDEX needs the name of what it rebuilds"))
            }
        };
        for (table, only) in tables {
            for index in &table.indexes {
                if only.as_ref().is_some_and(|n| *n != index.name) {
                    continue;
                }
                self.interrupted()?;
                self.ts.txn.clear(&index.keyspace())?;
                self.build_index(&table, index)?;
            }
        }
        Ok(Output::Command("REINDEX".into()))
    }

    /// ALTER INDEX name RENAME TO new. The index of a primary key or a unique constraint
    /// renames the constraint with it, as in PostgreSQL.
    pub(crate) fn rename_index(
        &mut self,
        name: &ast::ObjectName,
        operation: &ast::AlterIndexOperation,
        database: &str,
    ) -> Result<Output> {
        let ast::AlterIndexOperation::RenameIndex { index_name } = operation;
        let name = object_name(name)?;
        let new = crate::bind::name_as_written(index_name)?;
        let table = match self.db.catalog.index_table(&mut self.ts.txn, database, &name)? {
            Some(t) => Some(self.db.catalog.table_or_err(&mut self.ts.txn, database, &t)?),
            // A primary key of a table written before key names were registered as relation
            // names: found by its table.
            None => self
                .db
                .catalog
                .tables(&mut self.ts.txn, database)?
                .into_iter()
                .find(|t| !t.primary_key.is_empty() && beside(&t.name, &t.pkey_name()) == name),
        };
        let Some(table) = table else {
            // ALTER INDEX … RENAME of another relation renames it, as in PostgreSQL.
            let done = || Ok(Output::Command("ALTER INDEX".into()));
            if let Some(table) = self.db.catalog.table(&mut self.ts.txn, database, &name)? {
                let new = crate::exec::schema::renamed(&table.name, index_name)?;
                self.rename_table(&table, &new)?;
                return done();
            }
            if self.rename_other_relation(&name, index_name, database)?.is_some() {
                return done();
            }
            return Err(SqlError::new(
                code::UNDEFINED_TABLE,
                format!("relation \"{name}\" does not exist"),
            ));
        };
        // The index stays in its table's schema; its own name is unqualified.
        let (name, new) = (unqualified(&name).to_string(), index_name_only(&new)?);
        if new != name {
            self.relation_taken(database, &beside(&table.name, &new), false)?;
            let mut t = (*table).clone();
            match t.indexes.iter_mut().find(|i| i.name == name) {
                Some(index) => index.name = new,
                None => t.primary_key_name = Some(new),
            }
            self.db.catalog.put_table(&mut self.ts.txn, &t)?;
        }
        Ok(Output::Command("ALTER INDEX".into()))
    }

    /// CREATE [UNIQUE] INDEX [name] ON table (column | expression, …) [WHERE condition].
    pub(crate) fn create_index(&mut self, ci: &ast::CreateIndex, database: &str) -> Result<Output> {
        let tname = object_name(&ci.table_name)?;
        let table = self.db.catalog.table_or_err(&mut self.ts.txn, database, &tname)?;
        let method = match &ci.using {
            None => None,
            Some(m) => {
                let m = m.to_string().to_lowercase();
                if !crate::catalog::INDEX_METHODS.contains(&m.as_str()) {
                    return Err(SqlError::new(
                        code::UNDEFINED_OBJECT,
                        format!("access method \"{m}\" does not exist"),
                    ));
                }
                if ci.unique && !matches!(m.as_str(), "btree") {
                    return Err(SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        format!("access method \"{m}\" does not support unique indexes"),
                    ));
                }
                (m != "btree").then_some(m)
            }
        };
        let include = included_columns(&table, &ci.include)?;
        // Plain columns, or (any part an expression) every part as an expression.
        let mut columns = Vec::new();
        let mut on_expressions = false;
        for ic in &ci.columns {
            match &ic.column.expr {
                ast::Expr::Identifier(id) => columns.push(table.column_or_err(&ident(id))?),
                ast::Expr::Nested(inner) if matches!(**inner, ast::Expr::Identifier(_)) => {
                    let ast::Expr::Identifier(id) = &**inner else { unreachable!() };
                    columns.push(table.column_or_err(&ident(id))?)
                }
                _ => on_expressions = true,
            }
        }
        let parts: Vec<ast::Expr> = ci.columns.iter().map(|ic| ic.column.expr.clone()).collect();
        let (_, types) = self.bind_index(&table, &parts, ci.predicate.as_ref())?;
        for ty in &types {
            if !crate::encoding::key_type_supported(*ty) {
                return Err(SqlError::unsupported(format!(
                    "an index on a value of type {}",
                    ty.sql_name()
                )));
            }
        }
        let expressions: Vec<String> =
            if on_expressions { parts.iter().map(stored_text).collect() } else { vec![] };
        if on_expressions {
            columns.clear();
        }
        let name = match &ci.name {
            Some(n) => index_name_only(&crate::bind::name_as_written(n)?)?,
            None => {
                // PostgreSQL's choice: each part's column or function name, else "expr".
                let mut base = format!("{}_", unqualified(&tname));
                let named: Vec<String> = parts
                    .iter()
                    .map(part_name)
                    .chain(include.iter().map(|&c| table.columns[c].name.clone()))
                    .collect();
                base.push_str(&named.join("_"));
                let base = format!("{base}_idx");
                let mut name = base.clone();
                let mut n = 0;
                while self.db.catalog.relation_exists(
                    &mut self.ts.txn,
                    database,
                    &beside(&tname, &name),
                )? {
                    n += 1;
                    name = format!("{base}{n}");
                }
                name
            }
        };
        if self.relation_taken(database, &beside(&tname, &name), ci.if_not_exists)? {
            return Ok(Output::Command("CREATE INDEX".into()));
        }
        let id = self.db.catalog.next_id(&mut self.ts.txn)?;
        let index = Index {
            name,
            id,
            columns,
            unique: ci.unique,
            constraint: false,
            comment: None,
            expressions,
            predicate: ci.predicate.as_ref().map(stored_text),
            include,
            nulls_not_distinct: ci.nulls_distinct == Some(false),
            method,
        };
        if index.unique {
            crate::exec::partitions::check_unique_key(&table, &index.columns, "UNIQUE")?;
        }
        self.build_index(&table, &index)?;
        let mut t = (*table).clone();
        t.indexes.push(index);
        // An index of a partitioned table is made on each of its partitions too.
        let only = ci.with.iter().any(
            |e| matches!(e, ast::Expr::Identifier(i) if i.value == crate::parse::INDEX_ON_ONLY),
        );
        if t.partitioning.is_some() && !only {
            for child in self.partitions_of(&t)? {
                let mut child = (*child).clone();
                self.inherit_indexes(&t, &mut child)?;
                self.db.catalog.put_table(&mut self.ts.txn, &child)?;
            }
        }
        self.db.catalog.put_table(&mut self.ts.txn, &t)?;
        Ok(Output::Command("CREATE INDEX".into()))
    }
}

/// The columns of an `INCLUDE (…)` list, by position.
pub(crate) fn included_columns(table: &Table, names: &[ast::Ident]) -> Result<Vec<usize>> {
    names.iter().map(|n| table.column_or_err(&ident(n))).collect()
}

/// A row's entry in an index.
pub(crate) struct IndexEntry {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    /// The key alone is unique (a unique index, no NULL in it).
    pub unique: bool,
    /// The key values, for a violation's message.
    pub values: Vec<Value>,
}

/// The name a key part gives an index named after it (PostgreSQL's FigureColname): a
/// column's name, a function's, a cast's argument's, else `expr`.
fn part_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(i) => ident(i),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(ident).unwrap_or_default(),
        ast::Expr::Function(f) => {
            f.name.0.last().and_then(|p| p.as_ident()).map(ident).unwrap_or_default()
        }
        ast::Expr::Cast { expr, .. } | ast::Expr::Nested(expr) => part_name(expr),
        ast::Expr::Case { .. } => "case".into(),
        _ => "expr".into(),
    }
}

/// An index's own name: it lives in its table's schema, so it may not name one (PostgreSQL's
/// grammar takes no schema there either).
fn index_name_only(name: &str) -> Result<String> {
    if name.contains('.') {
        return Err(SqlError::new(
            code::SYNTAX,
            format!("an index is created in its table's schema: name it without one ({name})"),
        ));
    }
    Ok(name.to_string())
}
