//! DDL: CREATE / DROP / ALTER TABLE, CREATE / DROP INDEX, in the statement's transaction (the
//! catalog lives in the engine, so DDL commits or rolls back with it).

use std::ops::Bound;

use kiln_engine::Scan;
use sqlparser::ast;

use crate::bind::*;
use crate::catalog::unqualified;
use crate::catalog::{Column, Identity, Table};
use crate::encoding::{decode_row, encode_key};
use crate::error::{code, Result, SqlError};
use crate::types::{DataType, Value};

use crate::exec::sequences::{default_stored, nextval_call, nextval_of, written};
use crate::exec::write::*;
use crate::expr::Env;
use crate::session::*;

/// An identity column as written: GENERATED ALWAYS (true) or BY DEFAULT, and the options
/// of its sequence.
type IdentitySpec = (bool, Vec<ast::SequenceOptions>);

/// Rows read per scan when DDL walks a whole table (ADD PRIMARY KEY, CREATE INDEX).
const DDL_BATCH_ROWS: usize = 4096;

impl Writer<'_> {
    /// Whether relation `name` exists: Ok(true) when IF NOT EXISTS lets the statement do
    /// nothing, 42P07 otherwise.
    /// [`Writer::relation_taken`] for a table or view, whose row type also takes the name:
    /// 42710 when an enum type has it.
    pub(crate) fn table_name_taken(
        &mut self,
        database: &str,
        name: &str,
        if_not_exists: bool,
    ) -> Result<bool> {
        if self.relation_taken(database, name, if_not_exists)? {
            return Ok(true);
        }
        if self.db.catalog.enum_type(&mut self.ts.txn, database, name)?.is_some() {
            return Err(SqlError::new(
                code::DUPLICATE_OBJECT,
                format!("type \"{name}\" already exists"),
            )
            .hint("A relation has an associated type of the same name, so you must use a name that doesn't conflict with any existing type."));
        }
        Ok(false)
    }

    pub(crate) fn relation_taken(
        &mut self,
        database: &str,
        name: &str,
        if_not_exists: bool,
    ) -> Result<bool> {
        self.check_schema_of(database, name)?;
        if !self.db.catalog.relation_exists(&mut self.ts.txn, database, name)? {
            return Ok(false);
        }
        // PostgreSQL names the relation without its schema here.
        let shown = unqualified(name);
        if if_not_exists {
            self.skipping(code::DUPLICATE_TABLE, format!("relation \"{shown}\" already exists"));
            return Ok(true);
        }
        Err(SqlError::new(code::DUPLICATE_TABLE, format!("relation \"{shown}\" already exists")))
    }

    /// CREATE TABLE … AS: a table with the query's columns (no keys or constraints, every
    /// column nullable, as PostgreSQL makes it) holding its rows.
    pub(crate) fn create_table_as(
        &mut self,
        name: &str,
        columns: Vec<(String, DataType)>,
        rows: Vec<Vec<Value>>,
        database: &str,
        ctx: &crate::expr::Ctx,
    ) -> Result<Output> {
        if columns.len() > 1600 {
            return Err(SqlError::new(code::PROGRAM_LIMIT, "tables can have at most 1600 columns"));
        }
        let mut cols: Vec<Column> = Vec::with_capacity(columns.len());
        for (cname, ty) in columns {
            if cols.iter().any(|c| c.name == cname) {
                return Err(SqlError::new(
                    code::DUPLICATE_COLUMN,
                    format!("column \"{cname}\" specified more than once"),
                ));
            }
            let ty = if ty == DataType::Unknown { DataType::Text } else { ty };
            if matches!(ty, DataType::ExpandedElement(_)) {
                return Err(SqlError::unsupported(format!("a column of type {}", ty.sql_name())));
            }
            cols.push(Column::new(cname, ty));
        }
        let table = Table {
            id: self.db.catalog.next_id(&mut self.ts.txn)?,
            database: database.to_string(),
            name: name.to_string(),
            columns: cols,
            primary_key: vec![],
            primary_key_name: None,
            indexes: vec![],
            options: vec![],
            foreign_keys: vec![],
            referenced_by: vec![],
            checks: vec![],
            last_attnum: 0,
            comment: None,
            triggers: vec![],
            matview: None,
            partitioning: None,
            partition_of: None,
        };
        self.db.catalog.put_table(&mut self.ts.txn, &table)?;
        let n = rows.len();
        self.insert_rows(&table, rows, ctx)?;
        Ok(Output::Command(format!("SELECT {n}")))
    }

    /// Inserts computed rows (a query's, fitted to the columns here) into `table`, with its
    /// indexes: CREATE TABLE AS, REFRESH MATERIALIZED VIEW.
    pub(crate) fn insert_rows(
        &mut self,
        table: &Table,
        rows: Vec<Vec<Value>>,
        ctx: &crate::expr::Ctx,
    ) -> Result<()> {
        for row in rows {
            self.interrupted()?;
            let row = Self::fit_row(table, row, ctx.env.style())?;
            self.insert_row(table, row, None, ctx)?;
        }
        Ok(())
    }

    /// `CREATE TABLE t (LIKE source [INCLUDING | EXCLUDING DEFAULTS])`: the statement with
    /// the source's columns written out first — names, types and NOT NULL, and the defaults
    /// with INCLUDING DEFAULTS, as PostgreSQL copies them (no other constraints, indexes,
    /// identity or generation).
    fn like_columns(
        &mut self,
        like: &ast::CreateTableLikeKind,
        ct: &ast::CreateTable,
        database: &str,
    ) -> Result<ast::CreateTable> {
        let (ast::CreateTableLikeKind::Parenthesized(l) | ast::CreateTableLikeKind::Plain(l)) =
            like;
        let source = object_name(&l.name)?;
        let table = self.db.catalog.table_or_err(&mut self.ts.txn, database, &source)?;
        let defaults = l.defaults == Some(ast::CreateTableLikeDefaults::Including);
        let mut written = Vec::with_capacity(table.columns.len());
        for c in &table.columns {
            let mut def = format!("{} {}", quote_ident(&c.name), c.ty.sql_name());
            if !c.nullable {
                def.push_str(" NOT NULL");
            }
            if let (true, Some(d)) = (defaults, &c.default) {
                def.push_str(&format!(" DEFAULT {d}"));
            }
            written.push(def);
        }
        let sql = format!("CREATE TABLE t ({})", written.join(", "));
        let mut columns = match crate::parse::parse(&sql)?.pop() {
            Some(ast::Statement::CreateTable(t)) => t.columns,
            _ => {
                return Err(SqlError::new(
                    code::INTERNAL,
                    "a LIKE table's columns did not read back",
                ))
            }
        };
        columns.extend(ct.columns.iter().cloned());
        Ok(ast::CreateTable { columns, like: None, ..ct.clone() })
    }

    pub(crate) fn create_table(
        &mut self,
        ct: &ast::CreateTable,
        database: &str,
        env: &dyn Env,
    ) -> Result<Output> {
        let name = new_object_name(&ct.name)?;
        if ct.query.is_some() {
            return Err(SqlError::unsupported("CREATE TABLE … AS"));
        }
        refuse_table_kinds(ct)?;
        if ct.partition_of.is_some() {
            return self.create_partition(ct, database, env);
        }
        if let Some(like) = &ct.like {
            let expanded = self.like_columns(like, ct, database)?;
            return self.create_table(&expanded, database, env);
        }
        if self.table_name_taken(database, &name, ct.if_not_exists)? {
            return Ok(Output::Command("CREATE TABLE".into()));
        }
        if ct.columns.len() > 1600 {
            return Err(SqlError::new(code::PROGRAM_LIMIT, "tables can have at most 1600 columns"));
        }
        let mut columns: Vec<Column> = Vec::new();
        let mut primary_key: Vec<usize> = Vec::new();
        let mut primary_key_name: Option<String> = None;
        let mut uniques: Vec<(Option<String>, Vec<usize>, &ast::UniqueConstraint)> = Vec::new();
        // FOREIGN KEY and CHECK constraints, defined once the columns are known.
        let mut foreign_keys: Vec<(Option<String>, Vec<usize>, &ast::ForeignKeyConstraint)> =
            Vec::new();
        let mut checks: Vec<(Option<String>, &ast::Expr)> = Vec::new();
        // Columns whose values come from a sequence: `serial` (None) or identity.
        let mut generated: Vec<(usize, Option<IdentitySpec>)> = Vec::new();
        // Generated columns' expressions, bound once the columns are known.
        let mut generation: Vec<(usize, &ast::Expr)> = Vec::new();
        for (i, c) in ct.columns.iter().enumerate() {
            let cname = ident(&c.name);
            if columns.iter().any(|x| x.name == cname) {
                return Err(SqlError::new(
                    "42701",
                    format!("column \"{cname}\" specified more than once"),
                ));
            }
            let (mut col, serial) = self.new_column(cname, &c.data_type, database)?;
            let ty = col.ty;
            if serial.is_some() {
                col.nullable = false;
                generated.push((i, None));
            }
            for opt in &c.options {
                let cname = opt.name.as_ref().map(ident);
                match &opt.option {
                    ast::ColumnOption::NotNull => col.nullable = false,
                    ast::ColumnOption::Null => col.nullable = true,
                    ast::ColumnOption::Default(_) if serial.is_some() => {
                        return Err(SqlError::syntax(format!(
                            "multiple default values specified for column \"{}\" of table \"{name}\"",
                            col.name
                        )));
                    }
                    ast::ColumnOption::Default(e) => match nextval_of(e).map(|s| written(&s)) {
                        // A sequence's next value: the sequence must exist.
                        Some(seq) => {
                            self.db.catalog.sequence_or_err(&mut self.ts.txn, database, &seq)?;
                            col.default = Some(nextval_call(&seq));
                        }
                        None => {
                            // Check now that it binds (no columns, no subqueries).
                            self.bind_default_expr(database, e, col.ty, env)?;
                            col.default = Some(default_stored(&stored_text(e), database));
                        }
                    },
                    ast::ColumnOption::Generated {
                        generated_as:
                            generated_as @ (ast::GeneratedAs::Always | ast::GeneratedAs::ByDefault),
                        sequence_options,
                        generation_expr: None,
                        ..
                    } => {
                        if serial.is_some() || generated.iter().any(|(c, _)| *c == i) {
                            return Err(SqlError::syntax(format!(
                                "multiple identity specifications for column \"{}\" of table \"{name}\"",
                                col.name
                            )));
                        }
                        crate::exec::sequences::check_identity_type(ty)?;
                        let always = matches!(generated_as, ast::GeneratedAs::Always);
                        generated.push((
                            i,
                            Some((always, sequence_options.clone().unwrap_or_default())),
                        ));
                        col.nullable = false;
                    }
                    ast::ColumnOption::Generated {
                        generation_expr: Some(e),
                        generation_expr_mode: Some(ast::GeneratedExpressionMode::Stored),
                        ..
                    } => {
                        if col.generated.is_some() {
                            return Err(SqlError::syntax(format!(
                                "multiple generation clauses specified for column \"{}\" of table \"{name}\"",
                                col.name
                            )));
                        }
                        col.generated = Some(stored_text(e));
                        generation.push((i, e));
                    }
                    ast::ColumnOption::Generated { .. } => {
                        return Err(SqlError::unsupported(
                            "virtual generated columns (Kiln stores them: GENERATED ALWAYS AS (expression) STORED)",
                        ));
                    }
                    ast::ColumnOption::PrimaryKey(pk) => {
                        if !pk.include.is_empty() {
                            return Err(SqlError::unsupported("INCLUDE on a primary key"));
                        }
                        if !primary_key.is_empty() {
                            return Err(SqlError::new(
                                code::INVALID_TABLE_DEFINITION,
                                format!(
                                    "multiple primary keys for table \"{name}\" are not allowed"
                                ),
                            ));
                        }
                        primary_key.push(i);
                        primary_key_name = cname;
                        col.nullable = false;
                    }
                    ast::ColumnOption::Unique(u) => uniques.push((cname, vec![i], u)),
                    ast::ColumnOption::ForeignKey(fk) => {
                        foreign_keys.push((cname.or(fk.name.as_ref().map(ident)), vec![i], fk))
                    }
                    ast::ColumnOption::Check(ck) => {
                        checks.push((cname.or(ck.name.as_ref().map(ident)), &ck.expr))
                    }
                    other => {
                        return Err(SqlError::unsupported(format!("the column option {other}")))
                    }
                }
            }
            columns.push(col);
        }
        let find = |cols: &[ast::IndexColumn], columns: &[Column]| -> Result<Vec<usize>> {
            cols.iter()
                .map(|ic| match &ic.column.expr {
                    ast::Expr::Identifier(id) => {
                        let n = ident(id);
                        columns.iter().position(|c| c.name == n).ok_or_else(|| {
                            SqlError::new(
                                code::UNDEFINED_COLUMN,
                                format!("column \"{n}\" named in key does not exist"),
                            )
                        })
                    }
                    other => Err(SqlError::unsupported(format!("a key on the expression {other}"))),
                })
                .collect()
        };
        for constraint in &ct.constraints {
            match constraint {
                ast::TableConstraint::PrimaryKey(pk) => {
                    if !primary_key.is_empty() {
                        return Err(SqlError::new(
                            code::INVALID_TABLE_DEFINITION,
                            format!("multiple primary keys for table \"{name}\" are not allowed"),
                        ));
                    }
                    if !pk.include.is_empty() {
                        return Err(SqlError::unsupported("INCLUDE on a primary key"));
                    }
                    primary_key = find(&pk.columns, &columns)?;
                    primary_key_name = pk.name.as_ref().map(ident);
                    for &c in &primary_key {
                        columns[c].nullable = false;
                    }
                }
                ast::TableConstraint::Unique(u) => {
                    uniques.push((u.name.as_ref().map(ident), find(&u.columns, &columns)?, u))
                }
                ast::TableConstraint::ForeignKey(fk) => {
                    let cols = fk
                        .columns
                        .iter()
                        .map(|c| {
                            let n = ident(c);
                            columns.iter().position(|x| x.name == n).ok_or_else(|| {
                                SqlError::new(
                                    code::UNDEFINED_COLUMN,
                                    format!("column \"{n}\" referenced in foreign key constraint does not exist"),
                                )
                            })
                        })
                        .collect::<Result<Vec<_>>>()?;
                    foreign_keys.push((fk.name.as_ref().map(ident), cols, fk));
                }
                ast::TableConstraint::Check(ck) => {
                    checks.push((ck.name.as_ref().map(ident), &ck.expr))
                }
                other => return Err(SqlError::unsupported(format!("the constraint {other}"))),
            }
        }
        for &c in &primary_key {
            if !crate::encoding::key_type_supported(columns[c].ty) {
                return Err(SqlError::unsupported(format!(
                    "a primary key on column \"{}\" of type {}",
                    columns[c].name,
                    columns[c].ty.sql_name()
                )));
            }
        }
        let options = match &ct.table_options {
            ast::CreateTableOptions::With(opts) => opts
                .iter()
                .map(|o| {
                    let s = o.to_string();
                    let (k, v) = s.split_once('=').unwrap_or((&s, ""));
                    (k.trim().to_string(), v.trim().to_string())
                })
                .collect(),
            _ => vec![],
        };
        let id = self.db.catalog.next_id(&mut self.ts.txn)?;
        let mut table = Table {
            id,
            database: database.to_string(),
            name: name.clone(),
            columns,
            primary_key,
            primary_key_name: None,
            indexes: vec![],
            options,
            foreign_keys: vec![],
            referenced_by: vec![],
            checks: vec![],
            last_attnum: 0,
            comment: None,
            triggers: vec![],
            matview: None,
            partitioning: None,
            partition_of: None,
        };
        if let Some(by) = &ct.partition_by {
            let p = self.partition_key(&table, by)?;
            table.partitioning = Some(p);
            if !table.primary_key.is_empty() {
                crate::exec::partitions::check_unique_key(
                    &table,
                    &table.primary_key,
                    "PRIMARY KEY",
                )?;
            }
            for (_, cols, _) in &uniques {
                crate::exec::partitions::check_unique_key(&table, cols, "UNIQUE")?;
            }
        }
        if !table.primary_key.is_empty() {
            let base = format!("{}_pkey", unqualified(&name));
            let name = self.index_name(&table, primary_key_name, base)?;
            table.primary_key_name = Some(name);
        }
        for (i, identity) in generated {
            let column = table.columns[i].name.clone();
            if identity.is_some() && table.columns[i].default.is_some() {
                return Err(SqlError::syntax(format!(
                    "both default and identity specified for column \"{column}\" of table \"{name}\""
                )));
            }
            let ty = table.columns[i].ty;
            let options = identity.as_ref().map(|(_, o)| o.as_slice()).unwrap_or(&[]);
            let seq = self.create_owned_sequence(database, &name, &column, ty, options)?;
            match identity {
                Some((always, _)) => {
                    table.columns[i].identity = Some(Identity { always, sequence: seq })
                }
                None => table.columns[i].default = Some(nextval_call(&seq)),
            }
        }
        for (i, e) in generation {
            let c = &table.columns[i];
            let both = if c.default.is_some() {
                "default"
            } else if c.identity.is_some() {
                "identity"
            } else {
                ""
            };
            if !both.is_empty() {
                return Err(SqlError::syntax(format!(
                    "both {both} and generation expression specified for column \"{}\" of table \"{name}\"",
                    c.name
                )));
            }
            let mut planner = self.definition_planner(database, env);
            crate::exec::constraints::bind_generation(&mut planner, &table, i, e)?;
        }
        for (given, cols, u) in uniques {
            let index = self.unique_constraint(&table, given, cols, Some(u))?;
            table.indexes.push(index);
        }
        for (given, expr) in checks {
            self.define_check(&mut table, given, expr, env)?;
        }
        // Referenced tables gain the reference; several keys may reference one table.
        let mut parents: Vec<Table> = Vec::new();
        for (given, cols, fk) in foreign_keys {
            if let Some(parent) = self.define_foreign_key(&mut table, given, cols, fk)? {
                match parents.iter_mut().find(|p| p.name == parent.name) {
                    Some(p) => p
                        .referenced_by
                        .push(parent.referenced_by.last().expect("just added").clone()),
                    None => parents.push(parent),
                }
            }
        }
        for parent in &parents {
            self.db.catalog.put_table(&mut self.ts.txn, parent)?;
        }
        self.db.catalog.put_table(&mut self.ts.txn, &table)?;
        Ok(Output::Command("CREATE TABLE".into()))
    }

    pub(crate) fn drop(
        &mut self,
        object_type: ast::ObjectType,
        if_exists: bool,
        cascade: bool,
        names: &[ast::ObjectName],
        database: &str,
    ) -> Result<Output> {
        match object_type {
            ast::ObjectType::Table => {
                let dropping = names.iter().map(object_name).collect::<Result<Vec<_>>>()?;
                for name in &dropping {
                    match self.db.catalog.table(&mut self.ts.txn, database, name)? {
                        Some(t) if t.matview.is_some() => {
                            return Err(SqlError::new(
                                code::WRONG_OBJECT_TYPE,
                                format!("\"{}\" is not a table", unqualified(name)),
                            )
                            .hint("Use DROP MATERIALIZED VIEW to remove a materialized view."));
                        }
                        Some(t) => {
                            self.drop_dependent_matviews(
                                "table", name, cascade, &dropping, database,
                            )?;
                            // With CASCADE the foreign keys go first, as PostgreSQL lists them.
                            if cascade {
                                self.drop_table_references(&t, cascade, &dropping)?;
                            }
                            self.drop_dependent_views("table", name, cascade, &dropping, database)?;
                            if !cascade {
                                self.drop_table_references(&t, cascade, &dropping)?;
                            }
                            self.drop_partitioned(&t, cascade, &dropping)?;
                            self.truncate(&t)?;
                            self.db.catalog.delete_table(&mut self.ts.txn, &t)?;
                            self.drop_owned_sequences(&t)?;
                        }
                        None if self
                            .db
                            .catalog
                            .view(&mut self.ts.txn, database, name)?
                            .is_some() =>
                        {
                            return Err(SqlError::new(
                                code::WRONG_OBJECT_TYPE,
                                format!("\"{name}\" is not a table"),
                            )
                            .hint("Use DROP VIEW to remove a view."));
                        }
                        None if if_exists => {
                            self.skipping("00000", format!("table \"{name}\" does not exist"));
                        }
                        None => {
                            return Err(SqlError::new(
                                code::UNDEFINED_TABLE,
                                format!("table \"{name}\" does not exist"),
                            ))
                        }
                    }
                }
                Ok(Output::Command("DROP TABLE".into()))
            }
            ast::ObjectType::Index => {
                for n in names {
                    let name = object_name(n)?;
                    let Some(tname) =
                        self.db.catalog.index_table(&mut self.ts.txn, database, &name)?
                    else {
                        if if_exists {
                            self.skipping("00000", format!("index \"{name}\" does not exist"));
                            continue;
                        }
                        return Err(SqlError::new(
                            code::UNDEFINED_OBJECT,
                            format!("index \"{name}\" does not exist"),
                        ));
                    };
                    let table = self.db.catalog.table_or_err(&mut self.ts.txn, database, &tname)?;
                    let mut t = (*table).clone();
                    let name = unqualified(&name).to_string();
                    let pos = t.indexes.iter().position(|i| i.name == name);
                    // The index of a primary key or unique constraint goes with the constraint.
                    if pos.is_none_or(|p| t.indexes[p].constraint) {
                        return Err(SqlError::new(
                            code::DEPENDENT_OBJECTS,
                            format!("cannot drop index {name} because constraint {name} on table {tname} requires it"),
                        )
                        .hint(format!("You can drop constraint {name} on table {tname} instead.")));
                    }
                    let Some(pos) = pos else { continue };
                    let index = t.indexes.remove(pos);
                    self.ts.txn.clear(&index.keyspace())?;
                    // Writing the table without it frees its name.
                    self.db.catalog.put_table(&mut self.ts.txn, &t)?;
                }
                Ok(Output::Command("DROP INDEX".into()))
            }
            ast::ObjectType::Database => {
                if self.ts.explicit {
                    return Err(SqlError::new(
                        code::ACTIVE_TXN,
                        "DROP DATABASE cannot run inside a transaction block",
                    ));
                }
                for n in names {
                    let name = crate::bind::name_as_written(n)?;
                    if name == database {
                        return Err(SqlError::new(
                            "55006",
                            "cannot drop the currently open database",
                        ));
                    }
                    if !self.db.catalog.database_exists(&mut self.ts.txn, &name)? {
                        if if_exists {
                            self.skipping("00000", format!("database \"{name}\" does not exist"));
                            continue;
                        }
                        return Err(SqlError::new(
                            code::INVALID_CATALOG,
                            format!("database \"{name}\" does not exist"),
                        ));
                    }
                    for t in self.db.catalog.tables(&mut self.ts.txn, &name)? {
                        self.truncate(&t)?;
                        self.db.catalog.delete_table(&mut self.ts.txn, &t)?;
                    }
                    for seq in self.db.catalog.sequences(&mut self.ts.txn, &name)? {
                        self.db.catalog.delete_sequence(&mut self.ts.txn, &seq)?;
                        self.db.sequences.forget(seq.key);
                    }
                    for view in self.db.catalog.views(&mut self.ts.txn, &name)? {
                        self.db.catalog.delete_view(&mut self.ts.txn, &view)?;
                    }
                    for schema in self.db.catalog.schemas(&mut self.ts.txn, &name)? {
                        self.db.catalog.delete_schema(&mut self.ts.txn, &name, &schema.name)?;
                    }
                    for f in self.db.catalog.functions(&mut self.ts.txn, &name)? {
                        self.db.catalog.delete_function(&mut self.ts.txn, &name, &f)?;
                    }
                    for ext in self.db.catalog.extensions(&mut self.ts.txn, &name)? {
                        self.db.catalog.delete_extension(&mut self.ts.txn, &name, &ext.name)?;
                    }
                    for ty in self.db.catalog.enum_types(&mut self.ts.txn, &name)? {
                        self.db.catalog.delete_enum_type(&mut self.ts.txn, &name, &ty.name)?;
                    }
                    self.db.catalog.drop_database(&mut self.ts.txn, &name)?;
                }
                Ok(Output::Command("DROP DATABASE".into()))
            }
            other => Err(SqlError::unsupported(format!("DROP {other}"))),
        }
    }

    /// Calls `f` with every row of `keyspace` the transaction sees, in key order, reading
    /// [`DDL_BATCH_ROWS`] at a time: a table rebuilt or indexed is never all copied out at
    /// once.
    pub(crate) fn each_row(
        &mut self,
        keyspace: &str,
        mut f: impl FnMut(&mut Self, Vec<u8>, Vec<u8>) -> Result<()>,
    ) -> Result<()> {
        let mut after: Option<Vec<u8>> = None;
        loop {
            let start = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            let scan = Scan::bounds(start, Bound::Unbounded).limit(DDL_BATCH_ROWS);
            let batch = self.ts.txn.scan(keyspace, scan)?;
            let done = batch.len() < DDL_BATCH_ROWS;
            after = batch.last().map(|(k, _)| k.clone());
            for (key, value) in batch {
                self.activity.check_interrupt()?;
                f(self, key, value)?;
            }
            if done {
                return Ok(());
            }
        }
    }

    /// Gives `t` a primary key on `cols` named `given` (else `<table>_pkey`): every row is
    /// keyed again under a new keyspace id, and its indexes are rebuilt.
    pub(crate) fn add_primary_key(
        &mut self,
        t: &mut Table,
        cols: Vec<usize>,
        given: Option<String>,
    ) -> Result<()> {
        let old = t.clone();
        t.id = self.db.catalog.next_id(&mut self.ts.txn)?;
        t.primary_key_name =
            Some(self.index_name(t, given, format!("{}_pkey", unqualified(&old.name)))?);
        t.primary_key = cols.clone();
        for &c in &cols {
            t.columns[c].nullable = false;
        }
        for index in &mut t.indexes {
            index.id = self.db.catalog.next_id(&mut self.ts.txn)?;
        }
        let new = t.clone();
        self.each_row(&old.keyspace(), |w, _, raw| w.rekey_row(&old, &new, raw))?;
        self.truncate(&old)?;
        for index in t.indexes.clone() {
            self.build_index(t, &index)?;
        }
        Ok(())
    }

    /// Writes one row of `old` under the primary key of `new` (ALTER TABLE … ADD PRIMARY KEY).
    fn rekey_row(&mut self, old: &Table, new: &Table, raw: Vec<u8>) -> Result<()> {
        let cols = &new.primary_key;
        let row = decode_row(&raw, old.columns.len())?;
        for &c in cols {
            if row[c].is_null() {
                return Err(SqlError::new(
                    code::NOT_NULL,
                    format!(
                        "column \"{}\" of relation \"{}\" contains null values",
                        new.columns[c].name, new.name
                    ),
                )
                .column(&new.name, &new.columns[c].name));
            }
        }
        let key = encode_key(&cols.iter().map(|&c| &row[c]).collect::<Vec<_>>())?;
        if !self.ts.txn.insert(&new.keyspace(), &key, &raw)? {
            let vals: Vec<Value> = cols.iter().map(|&c| row[c].clone()).collect();
            let name = new.pkey_name();
            let parts = crate::exec::constraints::names_of(new, cols);
            return Err(index_build_violation(new, &name, &vals, &parts));
        }
        Ok(())
    }

    pub(crate) fn alter_table(
        &mut self,
        at: &ast::AlterTable,
        database: &str,
        env: &dyn Env,
    ) -> Result<Output> {
        self.alter_table_in(at, database, env, false)
    }

    /// ALTER TABLE; `from_parent` when a partitioned table passes its change on to one of
    /// its partitions (which may not change their columns themselves).
    pub(crate) fn alter_table_in(
        &mut self,
        at: &ast::AlterTable,
        database: &str,
        env: &dyn Env,
        from_parent: bool,
    ) -> Result<Output> {
        let tname = object_name(&at.name)?;
        // OWNER TO: Kiln has one role, which owns every relation (pg_dump's scripts say
        // this of tables, views and sequences alike).
        if at.operations.iter().all(|op| matches!(op, ast::AlterTableOperation::OwnerTo { .. })) {
            if !self.db.catalog.relation_exists(&mut self.ts.txn, database, &tname)? {
                return Err(SqlError::new(
                    code::UNDEFINED_TABLE,
                    format!("relation \"{tname}\" does not exist"),
                ));
            }
            return Ok(Output::Command("ALTER TABLE".into()));
        }
        // RENAME of a sequence, view or index by ALTER TABLE renames it, as in PostgreSQL.
        if let [ast::AlterTableOperation::RenameTable {
            table_name: ast::RenameTableNameKind::To(new) | ast::RenameTableNameKind::As(new),
        }] = at.operations.as_slice()
        {
            if self.db.catalog.table(&mut self.ts.txn, database, &tname)?.is_none()
                && self.rename_other_relation(&tname, new, database)?.is_some()
            {
                return Ok(Output::Command("ALTER TABLE".into()));
            }
        }
        // ALTER TABLE IF EXISTS of a table that does not exist changes nothing (PostgreSQL
        // notes that it skips it).
        if at.if_exists && self.db.catalog.table(&mut self.ts.txn, database, &tname)?.is_none() {
            self.skipping("00000", format!("relation \"{tname}\" does not exist"));
            return Ok(Output::Command("ALTER TABLE".into()));
        }
        let table = self.db.catalog.table_or_err(&mut self.ts.txn, database, &tname)?;
        if let [ast::AlterTableOperation::RenameTable { table_name }] = at.operations.as_slice() {
            let (ast::RenameTableNameKind::To(new) | ast::RenameTableNameKind::As(new)) =
                table_name;
            return self.rename_table(&table, &crate::exec::schema::renamed(&table.name, new)?);
        }
        if table.matview.is_some() {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("ALTER TABLE cannot change materialized view \"{}\"", unqualified(&tname)),
            )
            .detail("This operation is not supported for materialized views."));
        }
        if table.partition_of.is_some() && !from_parent {
            self.check_partition_change(&table, &at.operations)?;
        }
        if table.partitioning.is_some() {
            crate::exec::partitions::check_partitioned_change(&table, &at.operations)?;
        }
        let mut t = (*table).clone();
        for op in &at.operations {
            match op {
                ast::AlterTableOperation::AddConstraint {
                    constraint: ast::TableConstraint::PrimaryKey(pk),
                    ..
                } => {
                    if !pk.include.is_empty() {
                        return Err(SqlError::unsupported("INCLUDE on a primary key"));
                    }
                    if !t.primary_key.is_empty() {
                        return Err(SqlError::new(
                            code::INVALID_TABLE_DEFINITION,
                            format!("multiple primary keys for table \"{tname}\" are not allowed"),
                        ));
                    }
                    let cols = pk
                        .columns
                        .iter()
                        .map(|ic| match &ic.column.expr {
                            ast::Expr::Identifier(id) => t.column_or_err(&ident(id)),
                            other => Err(SqlError::unsupported(format!(
                                "a key on the expression {other}"
                            ))),
                        })
                        .collect::<Result<Vec<_>>>()?;
                    for &c in &cols {
                        if !crate::encoding::key_type_supported(t.columns[c].ty) {
                            return Err(SqlError::unsupported(format!(
                                "a primary key on a column of type {}",
                                t.columns[c].ty.sql_name()
                            )));
                        }
                    }
                    self.add_primary_key(&mut t, cols, pk.name.as_ref().map(ident))?;
                }
                ast::AlterTableOperation::AddConstraint { constraint, not_valid } => {
                    self.add_constraint(&mut t, constraint, *not_valid, env)?;
                }
                ast::AlterTableOperation::ValidateConstraint { name } => {
                    self.validate_constraint(&t, &ident(name), env)?;
                }
                ast::AlterTableOperation::RenameConstraint { old_name, new_name } => {
                    self.rename_constraint(&mut t, &ident(old_name), &ident(new_name))?;
                }
                ast::AlterTableOperation::DropConstraint { if_exists, name, drop_behavior } => {
                    let cascade = matches!(drop_behavior, Some(ast::DropBehavior::Cascade));
                    self.drop_constraint(&mut t, &ident(name), *if_exists, cascade)?;
                    self.report_cascade();
                }
                ast::AlterTableOperation::AddColumn {
                    if_not_exists,
                    column_def,
                    column_position,
                    ..
                } => {
                    if column_position.is_some() {
                        return Err(SqlError::unsupported("ADD COLUMN … FIRST / AFTER"));
                    }
                    self.add_column(&mut t, column_def, *if_not_exists, env)?;
                }
                ast::AlterTableOperation::DropColumn {
                    column_names,
                    if_exists,
                    drop_behavior,
                    ..
                } => {
                    let cascade = matches!(drop_behavior, Some(ast::DropBehavior::Cascade));
                    for c in column_names {
                        self.drop_column(&mut t, &ident(c), *if_exists, cascade)?;
                    }
                    // Reported with the views the drop breaks, once the table is written.
                }
                ast::AlterTableOperation::RenameColumn { old_column_name, new_column_name } => {
                    self.rename_column(&mut t, &ident(old_column_name), &ident(new_column_name))?;
                }
                ast::AlterTableOperation::AlterColumn { column_name, op } => {
                    self.alter_column(&mut t, &ident(column_name), op, env)?;
                }
                ast::AlterTableOperation::EnableTrigger { name } => {
                    self.enable_trigger(&mut t, name, true)?;
                }
                ast::AlterTableOperation::DisableTrigger { name } => {
                    self.enable_trigger(&mut t, name, false)?;
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "ALTER TABLE … {}",
                        first_words(&other.to_string())
                    )))
                }
            }
        }
        self.db.catalog.put_table(&mut self.ts.txn, &t)?;
        // A partitioned table's change reaches its partitions (unless ONLY).
        if t.partitioning.is_some() && !at.only {
            for child in self.partitions_of(&t)? {
                let operations = crate::exec::partitions::partition_operations(
                    &table,
                    &t,
                    &child,
                    &at.operations,
                );
                if operations.is_empty() {
                    continue;
                }
                let name = ast::ObjectName::from(vec![
                    ast::Ident::with_quote('"', crate::catalog::schema_of(&child.name)),
                    ast::Ident::with_quote('"', unqualified(&child.name)),
                ]);
                let child_at = ast::AlterTable {
                    name,
                    if_exists: false,
                    only: false,
                    operations,
                    ..at.clone()
                };
                self.alter_table_in(&child_at, database, env, true)?;
            }
        }
        Ok(Output::Command("ALTER TABLE".into()))
    }

    /// 23503 unless every row of `t` references an existing row through foreign key `name`.
    pub(crate) fn validate_foreign_key(
        &mut self,
        t: &Table,
        name: &str,
        env: &dyn Env,
    ) -> Result<()> {
        let mut only = t.clone();
        only.foreign_keys.retain(|f| f.name == name);
        let style = env.style();
        self.each_row(&t.keyspace(), |w, _, raw| {
            let row = decode_row(&raw, only.columns.len())?;
            w.check_references(&only, &row, None, style)
        })
    }

    /// 23514 unless every row of `t` satisfies CHECK constraint `name` (`bound`).
    pub(crate) fn validate_check(
        &mut self,
        t: &Table,
        name: &str,
        bound: &crate::expr::Expr,
        env: &dyn Env,
    ) -> Result<()> {
        let ctx = crate::expr::Ctx::new(&[], env);
        let width = t.columns.len();
        let tname = t.name.clone();
        self.each_row(&t.keyspace(), |_, _, raw| {
            let row = decode_row(&raw, width)?;
            if bound.eval(&row, &ctx)?.as_bool()? == Some(false) {
                return Err(SqlError::new(
                    code::CHECK,
                    format!("check constraint \"{name}\" of relation \"{tname}\" is violated by some row"),
                )
                .constraint(&tname, name));
            }
            Ok(())
        })
    }

    /// `ALTER TABLE … VALIDATE CONSTRAINT name`: a foreign key or CHECK constraint (added NOT
    /// VALID) checked against every row; 23503 / 23514 if a row breaks it, as PostgreSQL
    /// validates. Others are 42809, an unknown name 42704.
    fn validate_constraint(&mut self, t: &Table, name: &str, env: &dyn Env) -> Result<()> {
        if t.foreign_keys.iter().any(|f| f.name == name) {
            return self.validate_foreign_key(t, name, env);
        }
        if let Some(check) = t.checks.iter().find(|c| c.name == name) {
            let expr = crate::parse::parse_expr(&check.expr)?;
            let mut planner = self.definition_planner(&t.database, env);
            let scope = crate::bind::dml::table_scope(t, crate::catalog::unqualified(&t.name));
            let (bound, _) = planner.expr(&expr, &scope, false)?;
            return self.validate_check(t, name, &bound, env);
        }
        let key = (!t.primary_key.is_empty() && t.pkey_name() == name)
            || t.indexes.iter().any(|x| x.name == name && x.constraint);
        if key {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!(
                    "constraint \"{name}\" of relation \"{}\" is not a foreign key or check constraint",
                    unqualified(&t.name)
                ),
            ));
        }
        Err(undefined_constraint(t, name))
    }

    /// `ALTER TABLE … RENAME CONSTRAINT old TO new`: a CHECK, foreign key, UNIQUE or primary
    /// key constraint (a key's index is renamed with it); 42710 if the table has a
    /// constraint of the new name, 42704 for an unknown one.
    fn rename_constraint(&mut self, t: &mut Table, old: &str, new: &str) -> Result<()> {
        let taken = t.checks.iter().any(|c| c.name == new)
            || t.foreign_keys.iter().any(|f| f.name == new)
            || t.indexes.iter().any(|x| x.name == new && x.constraint)
            || (!t.primary_key.is_empty() && t.pkey_name() == new);
        if taken && old != new {
            return Err(SqlError::new(
                code::DUPLICATE_OBJECT,
                format!(
                    "constraint \"{new}\" for relation \"{}\" already exists",
                    unqualified(&t.name)
                ),
            ));
        }
        if let Some(check) = t.checks.iter_mut().find(|c| c.name == old) {
            check.name = new.to_string();
            return Ok(());
        }
        if let Some(i) = t.foreign_keys.iter().position(|f| f.name == old) {
            t.foreign_keys[i].name = new.to_string();
            let parent = t.foreign_keys[i].table.clone();
            let rename = |refs: &mut Vec<crate::catalog::Reference>, child: &str| {
                for r in refs.iter_mut() {
                    if r.table == child && r.constraint == old {
                        r.constraint = new.to_string();
                    }
                }
            };
            if parent == t.name {
                let child = t.name.clone();
                rename(&mut t.referenced_by, &child);
            } else if let Some(p) = self.db.catalog.table(&mut self.ts.txn, &t.database, &parent)? {
                let mut p = (*p).clone();
                rename(&mut p.referenced_by, &t.name);
                self.db.catalog.put_table(&mut self.ts.txn, &p)?;
            }
            return Ok(());
        }
        let is_key = t.indexes.iter().any(|x| x.name == old && x.constraint)
            || (!t.primary_key.is_empty() && t.pkey_name() == old);
        if is_key {
            // The key's index takes the new name too: a relation name in the schema.
            if old != new {
                self.relation_taken(&t.database, &crate::catalog::beside(&t.name, new), false)?;
            }
            match t.indexes.iter_mut().find(|x| x.name == old && x.constraint) {
                Some(index) => index.name = new.to_string(),
                None => t.primary_key_name = Some(new.to_string()),
            }
            return Ok(());
        }
        Err(SqlError::new(
            code::UNDEFINED_OBJECT,
            format!("constraint \"{old}\" for table \"{}\" does not exist", unqualified(&t.name)),
        ))
    }

    /// `ALTER TABLE … ADD CONSTRAINT`: FOREIGN KEY, CHECK or UNIQUE, checked against the
    /// rows already there (unless NOT VALID, for the first two).
    pub(crate) fn add_constraint(
        &mut self,
        t: &mut Table,
        constraint: &ast::TableConstraint,
        not_valid: bool,
        env: &dyn Env,
    ) -> Result<()> {
        let column = |t: &Table, c: &ast::Ident| {
            let n = ident(c);
            t.column(&n).ok_or_else(|| {
                SqlError::new(
                    code::UNDEFINED_COLUMN,
                    format!("column \"{n}\" named in key does not exist"),
                )
            })
        };
        match constraint {
            ast::TableConstraint::ForeignKey(fk) => {
                let cols = fk.columns.iter().map(|c| column(t, c)).collect::<Result<Vec<_>>>()?;
                let name = fk.name.as_ref().map(ident);
                if let Some(parent) = self.define_foreign_key(t, name, cols, fk)? {
                    self.db.catalog.put_table(&mut self.ts.txn, &parent)?;
                }
                if !not_valid {
                    let name = t.foreign_keys.last().expect("just added").name.clone();
                    self.validate_foreign_key(t, &name, env)?;
                }
            }
            ast::TableConstraint::Check(ck) => {
                let bound = self.define_check(t, ck.name.as_ref().map(ident), &ck.expr, env)?;
                if !not_valid {
                    let name = t.checks.last().expect("just added").name.clone();
                    self.validate_check(t, &name, &bound, env)?;
                }
            }
            ast::TableConstraint::Unique(u) => {
                let cols = u
                    .columns
                    .iter()
                    .map(|ic| match &ic.column.expr {
                        ast::Expr::Identifier(id) => column(t, id),
                        other => {
                            Err(SqlError::unsupported(format!("a key on the expression {other}")))
                        }
                    })
                    .collect::<Result<Vec<_>>>()?;
                let index = self.unique_constraint(t, u.name.as_ref().map(ident), cols, Some(u))?;
                self.build_index(t, &index)?;
                t.indexes.push(index);
            }
            ast::TableConstraint::PrimaryKey(_) => {
                return Err(SqlError::unsupported(
                    "ADD CONSTRAINT … PRIMARY KEY (use ADD PRIMARY KEY)",
                ))
            }
            other => return Err(SqlError::unsupported(format!("the constraint {other}"))),
        }
        Ok(())
    }

    /// Before a primary key or unique constraint on `cols` of `t` is dropped: the foreign
    /// keys that reference it fail the drop (2BP01), or with CASCADE are dropped.
    fn release_key(
        &mut self,
        t: &mut Table,
        name: &str,
        cols: &[usize],
        cascade: bool,
    ) -> Result<()> {
        let users: Vec<crate::catalog::Reference> = t.referenced_by.clone();
        for r in users {
            let child = if r.table == t.name {
                t.clone()
            } else {
                (*self.db.catalog.table_or_err(&mut self.ts.txn, &t.database, &r.table)?).clone()
            };
            let uses = child.foreign_keys.iter().any(|f| {
                f.name == r.constraint
                    && f.table == t.name
                    && crate::exec::constraints::same_set(&f.ref_columns, cols)
            });
            if !uses {
                continue;
            }
            if !cascade {
                return Err(crate::exec::write::depended_on(
                    &format!("constraint {name} on table {}", t.name),
                    &[format!(
                        "constraint {} on table {} depends on index {name}",
                        r.constraint, r.table
                    )],
                ));
            }
            self.cascade_to(format!("constraint {} on table {}", r.constraint, r.table));
            t.referenced_by.retain(|x| x != &r);
            if r.table == t.name {
                t.foreign_keys.retain(|f| f.name != r.constraint);
            } else {
                let mut child = child;
                child.foreign_keys.retain(|f| f.name != r.constraint);
                self.db.catalog.put_table(&mut self.ts.txn, &child)?;
            }
        }
        Ok(())
    }

    /// `ALTER TABLE … DROP CONSTRAINT name`: a foreign key, a CHECK, a UNIQUE constraint or
    /// the primary key (a key a foreign key references goes only with CASCADE, which drops
    /// that foreign key).
    pub(crate) fn drop_constraint(
        &mut self,
        t: &mut Table,
        name: &str,
        if_exists: bool,
        cascade: bool,
    ) -> Result<()> {
        if let Some(i) = t.foreign_keys.iter().position(|f| f.name == name) {
            let fk = t.foreign_keys.remove(i);
            if fk.table == t.name {
                t.referenced_by.retain(|r| !(r.table == t.name && r.constraint == fk.name));
            } else if let Some(p) =
                self.db.catalog.table(&mut self.ts.txn, &t.database, &fk.table)?
            {
                let mut p = (*p).clone();
                p.referenced_by.retain(|r| !(r.table == t.name && r.constraint == fk.name));
                self.db.catalog.put_table(&mut self.ts.txn, &p)?;
            }
            return Ok(());
        }
        if let Some(i) = t.checks.iter().position(|c| c.name == name) {
            t.checks.remove(i);
            return Ok(());
        }
        if let Some(i) = t.indexes.iter().position(|x| x.name == name && x.unique && x.constraint) {
            let cols = t.indexes[i].columns.clone();
            self.release_key(t, name, &cols, cascade)?;
            let index = t.indexes.remove(i);
            self.ts.txn.clear(&index.keyspace())?;
            return Ok(());
        }
        if !t.primary_key.is_empty() && t.pkey_name() == name {
            let cols = t.primary_key.clone();
            self.release_key(t, name, &cols, cascade)?;
            // The rows are keyed by row numbers from now on (the columns stay NOT NULL, as
            // in PostgreSQL); the indexes, which hold each row's key, are built again.
            let old = t.clone();
            t.primary_key.clear();
            t.primary_key_name = None;
            t.id = self.db.catalog.next_id(&mut self.ts.txn)?;
            for index in &mut t.indexes {
                index.id = self.db.catalog.next_id(&mut self.ts.txn)?;
            }
            let target = t.clone();
            self.each_row(&old.keyspace(), |w, _, raw| {
                let id = w.db.catalog.next_rowid(&mut w.ts.txn, &target)?;
                w.ts.txn.insert(&target.keyspace(), &id.to_be_bytes(), &raw)?;
                Ok(())
            })?;
            self.truncate(&old)?;
            for index in t.indexes.clone() {
                self.build_index(t, &index)?;
            }
            return Ok(());
        }
        if if_exists {
            self.skipping(
                "00000",
                format!("constraint \"{name}\" of relation \"{}\" does not exist", t.name),
            );
            return Ok(());
        }
        Err(undefined_constraint(t, name))
    }
}

/// 42704 for a constraint table `t` does not have.
fn undefined_constraint(t: &Table, name: &str) -> SqlError {
    SqlError::new(
        code::UNDEFINED_OBJECT,
        format!("constraint \"{name}\" of relation \"{}\" does not exist", unqualified(&t.name)),
    )
}

/// 0A000 for the kinds of table Kiln lacks, which it must not make as plain tables:
/// inheritance (`INHERITS`), temporary partitioned tables and partitions, and tables made
/// by a query that are partitioned.
pub(crate) fn refuse_table_kinds(ct: &ast::CreateTable) -> Result<()> {
    let partitioned = ct.partition_by.is_some() || ct.partition_of.is_some();
    if partitioned && (ct.temporary || ct.query.is_some()) {
        return Err(SqlError::unsupported(
            "a temporary or CREATE TABLE … AS table that is partitioned or a partition",
        ));
    }
    if ct.inherits.is_some() {
        return Err(SqlError::unsupported("table inheritance (INHERITS)"));
    }
    // The session makes a temporary table in its own schema before it gets here
    // (`exec::temp`); one that did not must not become a permanent table.
    if ct.temporary || ct.on_commit.is_some() {
        return Err(SqlError::unsupported("a temporary table in this context"));
    }
    Ok(())
}
