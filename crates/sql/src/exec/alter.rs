//! ALTER TABLE on columns: ADD / DROP / RENAME COLUMN and ALTER COLUMN (SET / DROP NOT NULL,
//! SET / DROP DEFAULT, TYPE … USING), in the statement's transaction like all DDL.
//!
//! A change to what rows hold (a new column with a default, a dropped column, a new type)
//! rewrites the table: every row is read, changed and written under a new keyspace, the
//! indexes are rebuilt, and the old keyspaces are cleared (`Writer::rewrite_table`), as
//! PostgreSQL rewrites a table for these. Concurrent statements on the table read its
//! definition in their transactions, so they conflict with the change instead of writing to
//! the old keyspace unseen.

use std::ops::ControlFlow;

use sqlparser::ast;

use crate::bind::*;
use crate::catalog::unqualified;
use crate::catalog::Table;
use crate::encoding::{decode_row, encode_key, encode_row};
use crate::error::{code, Result, SqlError};
use crate::exec::write::*;
use crate::expr::{Ctx, Env};
use crate::session::Output;
use crate::types::{DataType, Value};

/// A column name as written (quoted names keep their case).
fn column_name(i: &ast::Ident) -> String {
    ident(i)
}

/// 42703 for a column the table does not have.
fn no_column(t: &Table, name: &str) -> SqlError {
    SqlError::new(
        code::UNDEFINED_COLUMN,
        format!("column \"{name}\" of relation \"{}\" does not exist", t.name),
    )
}

/// Positions after a dropped column move down by one.
fn shift(cols: &mut [usize], dropped: usize) {
    for c in cols {
        if *c > dropped {
            *c -= 1;
        }
    }
}

/// A CHECK condition's text with column `old` renamed to `new`.
/// Whether an expression stored as SQL text reads column `name`.
fn reads_column(text: &str, name: &str) -> Result<bool> {
    let expr = crate::parse::parse_expr(text)?;
    let mut reads = false;
    let _ = ast::visit_expressions(&expr, |e| {
        match e {
            ast::Expr::Identifier(i) if ident(i) == name => reads = true,
            ast::Expr::CompoundIdentifier(parts)
                if parts.last().is_some_and(|l| ident(l) == name) =>
            {
                reads = true
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(reads)
}

fn rename_in_check(text: &str, old: &str, new: &str) -> Result<String> {
    let mut expr = crate::parse::parse_expr(text)?;
    let quoted = |n: &str| {
        if n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
            ast::Ident::new(n)
        } else {
            ast::Ident::with_quote('"', n)
        }
    };
    let _ = ast::visit_expressions_mut(&mut expr, |e| {
        match e {
            ast::Expr::Identifier(i) if ident(i) == old => *i = quoted(new),
            ast::Expr::CompoundIdentifier(parts) => {
                if let Some(last) = parts.last_mut() {
                    if ident(last) == old {
                        *last = quoted(new);
                    }
                }
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(expr.to_string())
}

impl Writer<'_> {
    /// `ALTER TABLE name RENAME TO new`: the table keeps its rows, OID, indexes and
    /// constraints (their names too, as in PostgreSQL); the foreign keys on both sides and the
    /// sequences it owns follow the new name.
    pub(crate) fn rename_table(&mut self, table: &Table, new: &str) -> Result<Output> {
        let (db, old) = (table.database.clone(), table.name.clone());
        self.table_name_taken(&db, new, false)?;
        self.follow_rename_in_views(&db, &old, new)?;
        let mut t = table.clone();
        if !t.primary_key.is_empty() && t.primary_key_name.is_none() {
            t.primary_key_name = Some(format!("{}_pkey", unqualified(&old)));
        }
        t.name = new.to_string();
        let rename = |n: &mut String| {
            if *n == old {
                *n = new.to_string();
            }
        };
        for fk in &mut t.foreign_keys {
            rename(&mut fk.table);
        }
        for r in &mut t.referenced_by {
            rename(&mut r.table);
        }
        // The other side of each foreign key, in the tables it joins this one to.
        let mut others: Vec<String> = t.foreign_keys.iter().map(|f| f.table.clone()).collect();
        others.extend(t.referenced_by.iter().map(|r| r.table.clone()));
        others.sort();
        others.dedup();
        self.db.catalog.delete_table(&mut self.ts.txn, table)?;
        self.db.catalog.put_table(&mut self.ts.txn, &t)?;
        for name in others.iter().filter(|n| **n != t.name) {
            let Some(other) = self.db.catalog.table(&mut self.ts.txn, &db, name)? else {
                continue;
            };
            let mut other = (*other).clone();
            for fk in &mut other.foreign_keys {
                rename(&mut fk.table);
            }
            for r in &mut other.referenced_by {
                rename(&mut r.table);
            }
            self.db.catalog.put_table(&mut self.ts.txn, &other)?;
        }
        // A partition's parent lists it by name; a partitioned table's partitions name it.
        if let Some(of) = &t.partition_of {
            if let Some(parent) = self.db.catalog.table(&mut self.ts.txn, &db, &of.parent)? {
                let mut parent = (*parent).clone();
                if let Some(p) = &mut parent.partitioning {
                    p.partitions.iter_mut().for_each(&rename);
                }
                self.db.catalog.put_table(&mut self.ts.txn, &parent)?;
            }
        }
        for child in self.partitions_of(&t)? {
            let mut child = (*child).clone();
            if let Some(of) = &mut child.partition_of {
                rename(&mut of.parent);
            }
            self.db.catalog.put_table(&mut self.ts.txn, &child)?;
        }
        for seq in self.db.catalog.sequences(&mut self.ts.txn, &db)? {
            if seq.owned_by.as_ref().is_some_and(|(tn, _)| *tn == old) {
                let mut seq = (*seq).clone();
                if let Some((tn, _)) = &mut seq.owned_by {
                    *tn = new.to_string();
                }
                self.db.catalog.put_sequence(&mut self.ts.txn, &seq)?;
            }
        }
        Ok(Output::Command("ALTER TABLE".into()))
    }

    /// The views that read relation `old` read it under its `new` name (each is planned
    /// again after the statement, and must still give its columns).
    pub(crate) fn follow_rename_in_views(&mut self, db: &str, old: &str, new: &str) -> Result<()> {
        // A materialized view's stored query keeps the names it read: those are not renamed.
        for t in self.db.catalog.tables(&mut self.ts.txn, db)? {
            if t.matview.as_ref().is_some_and(|m| m.depends_on.iter().any(|d| d == old)) {
                return Err(SqlError::unsupported(format!(
                    "renaming relation {old}, which materialized view {} reads",
                    t.name
                ))
                .hint("Drop the materialized view, rename, and create it again."));
            }
        }
        for v in self.db.catalog.views_on(&mut self.ts.txn, db, old)? {
            if old.contains('.') {
                return Err(SqlError::unsupported(format!(
                    "renaming relation {old}, which view {} reads (views rename only relations of schema public)",
                    v.name
                )));
            }
            let query = crate::bind::view::view_query(&v)?;
            let Some(renamed) = crate::exec::views::rename_table_in_query(&query, old, new) else {
                return Err(SqlError::unsupported(format!(
                    "renaming relation \"{old}\", which view \"{}\" reads under a name that also means something else there",
                    v.name
                )));
            };
            let mut v = (*v).clone();
            v.query = renamed.to_string();
            for d in &mut v.depends_on {
                if *d == old {
                    *d = new.to_string();
                }
            }
            self.db.catalog.put_view(&mut self.ts.txn, &v)?;
        }
        Ok(())
    }

    /// `ALTER TABLE name RENAME TO new` or `ALTER INDEX name RENAME TO new` where `name` is
    /// a relation of another kind, which PostgreSQL renames too: a sequence, a view or (for
    /// ALTER TABLE) an index. `None` when `name` is none of them.
    pub(crate) fn rename_other_relation(
        &mut self,
        name: &str,
        new: &ast::ObjectName,
        database: &str,
    ) -> Result<Option<()>> {
        if let Some(seq) = self.db.catalog.sequence(&mut self.ts.txn, database, name)? {
            let new = crate::exec::schema::renamed(&seq.name, new)?;
            self.rename_sequence(&seq, &new, database)?;
            return Ok(Some(()));
        }
        if let Some(view) = self.db.catalog.view(&mut self.ts.txn, database, name)? {
            let new = crate::exec::schema::renamed(&view.name, new)?;
            self.rename_view(&view, &new)?;
            return Ok(Some(()));
        }
        if self.db.catalog.index_table(&mut self.ts.txn, database, name)?.is_some() {
            let rename = ast::AlterIndexOperation::RenameIndex { index_name: new.clone() };
            let parts = name.split('.').map(|p| ast::Ident::with_quote('"', p)).collect::<Vec<_>>();
            self.rename_index(&ast::ObjectName::from(parts), &rename, database)?;
            return Ok(Some(()));
        }
        Ok(None)
    }

    /// Writes every row of `old` again into `new` (which gets a new keyspace and new index
    /// keyspaces), changed by `f`; then builds `new`'s indexes and clears `old`'s keyspaces.
    pub(crate) fn rewrite_table(
        &mut self,
        old: &Table,
        new: &mut Table,
        mut f: impl FnMut(&mut Self, Vec<Value>) -> Result<Vec<Value>>,
    ) -> Result<()> {
        new.id = self.db.catalog.next_id(&mut self.ts.txn)?;
        for index in &mut new.indexes {
            index.id = self.db.catalog.next_id(&mut self.ts.txn)?;
        }
        let target = new.clone();
        let width = old.columns.len();
        self.each_row(&old.keyspace(), |w, key, raw| {
            let row = f(w, decode_row(&raw, width)?)?;
            let key = if target.primary_key.is_empty() {
                key
            } else {
                encode_key(&target.primary_key.iter().map(|&c| &row[c]).collect::<Vec<_>>())?
            };
            if !w.ts.txn.insert(&target.keyspace(), &key, &encode_row(&row))? {
                let vals: Vec<Value> = target.primary_key.iter().map(|&c| row[c].clone()).collect();
                let name = target.primary_key_name.clone().unwrap_or_default();
                let parts = crate::exec::constraints::names_of(&target, &target.primary_key);
                return Err(index_build_violation(&target, &name, &vals, &parts));
            }
            Ok(())
        })?;
        self.truncate(old)?;
        for index in new.indexes.clone() {
            self.build_index(new, &index)?;
        }
        Ok(())
    }

    /// Checks every row of `t` against its CHECK constraints (after a rewrite).
    fn check_all_rows(&mut self, t: &Table, env: &dyn Env) -> Result<()> {
        if t.checks.is_empty() && t.columns.iter().all(|c| c.domain.is_none()) {
            return Ok(());
        }
        let width = t.columns.len();
        self.each_row(&t.keyspace(), |w, _, raw| {
            let row = decode_row(&raw, width)?;
            let ctx = Ctx::new(&[], env);
            w.check_row(t, &row, &ctx)
        })
    }

    /// `ADD [COLUMN] [IF NOT EXISTS] name type [NULL | NOT NULL] [DEFAULT e] [UNIQUE]
    /// [CHECK (…)] [REFERENCES …]`: existing rows take the default (NULL without one).
    pub(crate) fn add_column(
        &mut self,
        t: &mut Table,
        def: &ast::ColumnDef,
        if_not_exists: bool,
        env: &dyn Env,
    ) -> Result<()> {
        let name = column_name(&def.name);
        if t.column(&name).is_some() {
            if if_not_exists {
                self.skipping(
                    "42701",
                    format!("column \"{name}\" of relation \"{}\" already exists", t.name),
                );
                return Ok(());
            }
            return Err(SqlError::new(
                "42701",
                format!("column \"{name}\" of relation \"{}\" already exists", t.name),
            ));
        }
        if t.columns.len() >= 1600 {
            return Err(SqlError::new(code::PROGRAM_LIMIT, "tables can have at most 1600 columns"));
        }
        let (mut col, serial) = self.new_column(name.clone(), &def.data_type, &t.database)?;
        let ty = col.ty;
        if serial.is_some() {
            // A sequence of its own; the existing rows take its values in turn, as in
            // PostgreSQL.
            if def.options.iter().any(|o| matches!(o.option, ast::ColumnOption::Default(_))) {
                return Err(SqlError::syntax(format!(
                    "multiple default values specified for column \"{name}\" of table \"{}\"",
                    t.name
                )));
            }
            let (database, table) = (t.database.clone(), t.name.clone());
            let seq = self.create_owned_sequence(&database, &table, &name, ty, &[])?;
            col.default = Some(crate::exec::sequences::nextval_call(&seq));
            col.nullable = false;
        }
        let mut constraints = Vec::new();
        // GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [(options)].
        let mut identity: Option<(bool, Vec<ast::SequenceOptions>)> = None;
        let key = || ast::IndexColumn::from(def.name.clone());
        for opt in &def.options {
            let given = opt.name.clone();
            match &opt.option {
                ast::ColumnOption::NotNull => col.nullable = false,
                ast::ColumnOption::Null => col.nullable = true,
                ast::ColumnOption::Default(e) => match crate::exec::sequences::nextval_of(e) {
                    // nextval('s'): stored as PostgreSQL shows it; each existing row takes
                    // the sequence's next value.
                    Some(seq) => {
                        let seq = crate::exec::sequences::written(&seq);
                        self.db.catalog.sequence_or_err(&mut self.ts.txn, &t.database, &seq)?;
                        col.default = Some(crate::exec::sequences::nextval_call(&seq));
                    }
                    None => {
                        self.bind_default_expr(&t.database, e, ty, env)?;
                        let text = stored_text(e);
                        col.default =
                            Some(crate::exec::sequences::default_stored(&text, &t.database));
                    }
                },
                ast::ColumnOption::Unique(u) => {
                    let mut u = u.clone();
                    u.name = u.name.or(given);
                    u.columns = vec![key()];
                    constraints.push(ast::TableConstraint::Unique(u));
                }
                ast::ColumnOption::Check(ck) => {
                    let mut ck = ck.clone();
                    ck.name = ck.name.or(given);
                    constraints.push(ast::TableConstraint::Check(ck));
                }
                ast::ColumnOption::ForeignKey(fk) => {
                    let mut fk = fk.clone();
                    fk.name = fk.name.or(given);
                    fk.columns = vec![def.name.clone()];
                    constraints.push(ast::TableConstraint::ForeignKey(fk));
                }
                ast::ColumnOption::Generated {
                    generation_expr: Some(e),
                    generation_expr_mode: Some(ast::GeneratedExpressionMode::Stored),
                    ..
                } if serial.is_none() => col.generated = Some(stored_text(e)),
                ast::ColumnOption::Generated {
                    generated_as:
                        generated_as @ (ast::GeneratedAs::Always | ast::GeneratedAs::ByDefault),
                    sequence_options,
                    generation_expr: None,
                    ..
                } => {
                    if serial.is_some() || identity.is_some() {
                        // (A serial column's sequence is its default.)
                        let what = if serial.is_some() {
                            "both default and identity specified"
                        } else {
                            "multiple identity specifications"
                        };
                        return Err(SqlError::syntax(format!(
                            "{what} for column \"{name}\" of table \"{}\"",
                            unqualified(&t.name)
                        )));
                    }
                    crate::exec::sequences::check_identity_type(ty)?;
                    let always = matches!(generated_as, ast::GeneratedAs::Always);
                    identity = Some((always, sequence_options.clone().unwrap_or_default()));
                    col.nullable = false;
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "ADD COLUMN with the column option {other}"
                    )))
                }
            }
        }
        // An identity column: a sequence of its own, whose values the existing rows take in
        // turn, as in PostgreSQL.
        let mut next_identity = None;
        if let Some((always, options)) = identity {
            if col.default.is_some() {
                return Err(SqlError::syntax(format!(
                    "both default and identity specified for column \"{name}\" of table \"{}\"",
                    unqualified(&t.name)
                )));
            }
            let (database, table) = (t.database.clone(), t.name.clone());
            let seq = self.create_owned_sequence(&database, &table, &name, ty, &options)?;
            next_identity = Some(crate::exec::sequences::nextval_call(&seq));
            col.identity = Some(crate::catalog::Identity { always, sequence: seq });
        }
        // The value existing rows take: the default, evaluated for each row (a volatile
        // default such as gen_random_uuid() gives each its own, as in PostgreSQL).
        let fill = match col.default_text().map(str::to_string).or(next_identity) {
            Some(d) => {
                let expr = crate::parse::parse_expr(&d)?;
                Some(self.bind_default_expr(&t.database, &expr, ty, env)?)
            }
            None => None,
        };
        if col.generated.is_some() && col.default.is_some() {
            return Err(SqlError::syntax(format!(
                "both default and generation expression specified for column \"{name}\" of table \"{}\"",
                unqualified(&t.name)
            )));
        }
        let old = t.clone();
        t.push_column(col);
        let nullable = t.columns.last().is_some_and(|c| c.nullable);
        // A generated column: checked against the table as it now is, and computed for the
        // existing rows.
        let generated = match t.columns.last().and_then(|c| c.generated.clone()) {
            Some(text) => {
                let parsed = crate::parse::parse_expr(&text)?;
                let mut planner = self.definition_planner(&t.database, env);
                let at = t.columns.len() - 1;
                Some(crate::exec::constraints::bind_generation(&mut planner, t, at, &parsed)?)
            }
            None => None,
        };
        if fill.is_some() || !nullable || generated.is_some() {
            let tname = t.name.clone();
            let ctx = Ctx::new(&[], env);
            self.rewrite_table(&old, t, |_, mut row| {
                let value = match (&fill, &generated) {
                    (_, Some(g)) => g.eval(&row, &ctx)?.cast_in(ty, env.style())?,
                    (Some(e), None) => e.eval(&[], &ctx)?.cast_in(ty, env.style())?,
                    (None, None) => Value::Null,
                };
                if value.is_null() && !nullable {
                    return Err(SqlError::new(
                        code::NOT_NULL,
                        format!("column \"{name}\" of relation \"{tname}\" contains null values"),
                    )
                    .column(&tname, &name));
                }
                row.push(value);
                Ok(row)
            })?;
        }
        for c in constraints {
            self.add_constraint(t, &c, false, env)?;
        }
        self.check_all_rows(t, env)
    }

    /// `DROP [COLUMN] [IF EXISTS] name [CASCADE]`: the indexes and constraints of the
    /// table that use it go too; foreign keys of other tables that reference it only with
    /// CASCADE.
    pub(crate) fn drop_column(
        &mut self,
        t: &mut Table,
        name: &str,
        if_exists: bool,
        cascade: bool,
    ) -> Result<()> {
        let Some(p) = t.column(name) else {
            if if_exists {
                self.skipping(
                    "00000",
                    format!("column \"{name}\" of relation \"{}\" does not exist", t.name),
                );
                return Ok(());
            }
            return Err(no_column(t, name));
        };
        if t.columns.len() == 1 {
            // PostgreSQL allows zero-column tables; Kiln's rows need a column.
            return Err(SqlError::unsupported("dropping the only column of a table"));
        }
        // Foreign keys of other tables (and of this one) on this column.
        for r in t.referenced_by.clone() {
            let child = if r.table == t.name {
                t.clone()
            } else {
                (*self.db.catalog.table_or_err(&mut self.ts.txn, &t.database, &r.table)?).clone()
            };
            let uses = child
                .foreign_keys
                .iter()
                .any(|f| f.name == r.constraint && f.table == t.name && f.ref_columns.contains(&p));
            if !uses || r.table == t.name {
                continue;
            }
            if !cascade {
                return Err(crate::exec::write::depended_on(
                    &format!("column {name} of table {}", t.name),
                    &[format!(
                        "constraint {} on table {} depends on column {name} of table {}",
                        r.constraint, r.table, t.name
                    )],
                ));
            }
            self.cascade_to(format!("constraint {} on table {}", r.constraint, r.table));
            t.referenced_by.retain(|x| x != &r);
            let mut child = child;
            child.foreign_keys.retain(|f| f.name != r.constraint);
            self.db.catalog.put_table(&mut self.ts.txn, &child)?;
        }
        // Triggers that fire on an UPDATE OF the column, and generated columns that read it,
        // go with it only with CASCADE, as in PostgreSQL.
        let shown = crate::catalog::unqualified(&t.name).to_string();
        let triggers: Vec<String> = t
            .triggers
            .iter()
            .filter(|tr| tr.update_of.iter().any(|c| c == name))
            .map(|tr| tr.name.clone())
            .collect();
        let readers = generated_readers(t, name)?;
        let mut dependents: Vec<String> =
            triggers.iter().map(|tr| format!("trigger {tr} on table {shown}")).collect();
        dependents.extend(readers.iter().map(|g| format!("column {g} of table {shown}")));
        if !dependents.is_empty() && !cascade {
            let lines: Vec<String> = dependents
                .iter()
                .map(|d| format!("{d} depends on column {name} of table {shown}"))
                .collect();
            return Err(crate::exec::write::depended_on(
                &format!("column {name} of table {shown}"),
                &lines,
            ));
        }
        for d in dependents {
            self.cascade_to(d);
        }
        t.triggers.retain(|x| !triggers.contains(&x.name));
        for g in readers {
            self.drop_column(t, &g, false, cascade)?;
        }
        let p = t.column(name).ok_or_else(|| no_column(t, name))?;
        // A primary key on the column goes with it (the rows are then keyed by row number).
        if t.primary_key.contains(&p) {
            let pk = t.pkey_name();
            self.drop_constraint(t, &pk, false, cascade)?;
        }
        // This table's own constraints on the column.
        let own: Vec<String> = t
            .foreign_keys
            .iter()
            .filter(|f| f.columns.contains(&p) || (f.table == t.name && f.ref_columns.contains(&p)))
            .map(|f| f.name.clone())
            .collect();
        for n in own {
            self.drop_constraint(t, &n, true, cascade)?;
        }
        let uniques: Vec<String> = t
            .indexes
            .iter()
            .filter(|i| {
                (i.columns.contains(&p) || i.include.contains(&p)) && i.unique && i.constraint
            })
            .map(|i| i.name.clone())
            .collect();
        for n in uniques {
            self.drop_constraint(t, &n, true, cascade)?;
        }
        // Indexes on the column, or whose expressions or condition read it, go with it (as
        // in PostgreSQL).
        let mut kept = Vec::with_capacity(t.indexes.len());
        for i in std::mem::take(&mut t.indexes) {
            let mut reads = i.columns.contains(&p) || i.include.contains(&p);
            for text in i.expressions.iter().chain(&i.predicate) {
                reads |= reads_column(text, name)?;
            }
            if reads {
                self.ts.txn.clear(&i.keyspace())?;
            } else {
                kept.push(i);
            }
        }
        t.indexes = kept;
        // CHECKs that read the column.
        let mut kept = Vec::with_capacity(t.checks.len());
        for ck in std::mem::take(&mut t.checks) {
            if !reads_column(&ck.expr, name)? {
                kept.push(ck);
            }
        }
        t.checks = kept;
        // The column's own sequence (serial, identity) goes with it.
        let column = t.columns[p].clone();
        for seq in self.db.catalog.sequences(&mut self.ts.txn, &t.database)? {
            let owned =
                seq.owned_by.as_ref().is_some_and(|(ot, oc)| *ot == t.name && *oc == column.name);
            let identity = column.identity.as_ref().is_some_and(|i| i.sequence == seq.name);
            if owned || identity {
                self.db.catalog.delete_sequence(&mut self.ts.txn, &seq)?;
            }
        }
        let old = t.clone();
        t.remove_column(p);
        shift(&mut t.primary_key, p);
        if let Some(partitioning) = &mut t.partitioning {
            shift(&mut partitioning.key, p);
        }
        for i in &mut t.indexes {
            shift(&mut i.columns, p);
            shift(&mut i.include, p);
        }
        let tname = t.name.clone();
        for f in &mut t.foreign_keys {
            shift(&mut f.columns, p);
            if f.table == tname {
                shift(&mut f.ref_columns, p);
            }
        }
        // Other tables' keys that reference columns after this one.
        for r in t.referenced_by.clone() {
            if r.table == t.name {
                continue;
            }
            let mut child =
                (*self.db.catalog.table_or_err(&mut self.ts.txn, &t.database, &r.table)?).clone();
            for f in child.foreign_keys.iter_mut().filter(|f| f.table == tname) {
                shift(&mut f.ref_columns, p);
            }
            self.db.catalog.put_table(&mut self.ts.txn, &child)?;
        }
        self.rewrite_table(&old, t, |_, mut row| {
            row.remove(p);
            Ok(row)
        })
    }

    /// `RENAME [COLUMN] a TO b`.
    pub(crate) fn rename_column(&mut self, t: &mut Table, old: &str, new: &str) -> Result<()> {
        let p = t.column(old).ok_or_else(|| no_column(t, old))?;
        if t.column(new).is_some() {
            return Err(SqlError::new(
                "42701",
                format!("column \"{new}\" of relation \"{}\" already exists", t.name),
            ));
        }
        t.columns[p].name = new.to_string();
        for tr in &mut t.triggers {
            for c in &mut tr.update_of {
                if c == old {
                    *c = new.to_string();
                }
            }
            if let Some(w) = &tr.when {
                tr.when = Some(crate::exec::triggers::rename_in_when(w, old, new)?);
            }
        }
        for ck in &mut t.checks {
            ck.expr = rename_in_check(&ck.expr, old, new)?;
        }
        for c in &mut t.columns {
            if let Some(g) = &c.generated {
                c.generated = Some(rename_in_check(g, old, new)?);
            }
        }
        for i in &mut t.indexes {
            for e in &mut i.expressions {
                *e = rename_in_check(e, old, new)?;
            }
            if let Some(pred) = &mut i.predicate {
                *pred = rename_in_check(pred, old, new)?;
            }
        }
        for seq in self.db.catalog.sequences(&mut self.ts.txn, &t.database)? {
            if seq.owned_by.as_ref().is_some_and(|(ot, oc)| *ot == t.name && oc == old) {
                let mut seq = (*seq).clone();
                seq.owned_by = Some((t.name.clone(), new.to_string()));
                self.db.catalog.put_sequence(&mut self.ts.txn, &seq)?;
            }
        }
        Ok(())
    }

    /// `ALTER [COLUMN] name SET / DROP NOT NULL | SET / DROP DEFAULT | [SET DATA] TYPE t
    /// [USING e]`.
    pub(crate) fn alter_column(
        &mut self,
        t: &mut Table,
        name: &str,
        op: &ast::AlterColumnOperation,
        env: &dyn Env,
    ) -> Result<()> {
        let p = t.column(name).ok_or_else(|| no_column(t, name))?;
        match op {
            ast::AlterColumnOperation::DropNotNull => {
                if t.primary_key.contains(&p) {
                    return Err(SqlError::new(
                        code::INVALID_TABLE_DEFINITION,
                        format!("column \"{name}\" is in a primary key"),
                    ));
                }
                if t.columns[p].identity.is_some() {
                    return Err(SqlError::new(
                        code::INVALID_TABLE_DEFINITION,
                        format!(
                            "column \"{name}\" of relation \"{}\" is an identity column",
                            t.name
                        ),
                    ));
                }
                t.columns[p].nullable = true;
            }
            ast::AlterColumnOperation::SetNotNull => {
                if t.columns[p].nullable {
                    let width = t.columns.len();
                    let tname = t.name.clone();
                    self.each_row(&t.keyspace(), |_, _, raw| {
                        if decode_row(&raw, width)?[p].is_null() {
                            return Err(SqlError::new(
                                code::NOT_NULL,
                                format!("column \"{name}\" of relation \"{tname}\" contains null values"),
                            )
                            .column(&tname, name));
                        }
                        Ok(())
                    })?;
                }
                t.columns[p].nullable = false;
            }
            ast::AlterColumnOperation::SetDefault { .. }
            | ast::AlterColumnOperation::DropDefault
                if t.columns[p].generated.is_some() =>
            {
                let e = SqlError::syntax(format!(
                    "column \"{name}\" of relation \"{}\" is a generated column",
                    unqualified(&t.name)
                ));
                return Err(if matches!(op, ast::AlterColumnOperation::DropDefault) {
                    e.hint("Use ALTER TABLE ... ALTER COLUMN ... DROP EXPRESSION instead.")
                } else {
                    e
                });
            }
            ast::AlterColumnOperation::SetDefault { value } => {
                if t.columns[p].identity.is_some() {
                    return Err(SqlError::syntax(format!(
                        "column \"{name}\" of relation \"{}\" is an identity column",
                        t.name
                    )));
                }
                match crate::exec::sequences::nextval_of(value) {
                    Some(seq) => {
                        let seq = crate::exec::sequences::written(&seq);
                        self.db.catalog.sequence_or_err(&mut self.ts.txn, &t.database, &seq)?;
                        t.columns[p].default = Some(crate::exec::sequences::nextval_call(&seq));
                    }
                    None => {
                        let ty = t.columns[p].ty;
                        self.bind_default_expr(&t.database, value, ty, env)?;
                        let text = stored_text(value);
                        t.columns[p].default =
                            Some(crate::exec::sequences::default_stored(&text, &t.database));
                    }
                }
            }
            ast::AlterColumnOperation::DropDefault => t.columns[p].default = None,
            ast::AlterColumnOperation::SetDataType { data_type: dt, using, .. } => {
                if let Some(reader) = generated_readers(t, name)?.first() {
                    return Err(SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        "cannot alter type of a column used by a generated column",
                    )
                    .detail(format!(
                        "Column \"{name}\" is used by generated column \"{reader}\"."
                    )));
                }
                let (ty, domain) = self.column_type(dt, &t.database)?;
                t.columns[p].domain = domain;
                self.change_type(t, p, ty, using.as_ref(), env)?;
            }
            ast::AlterColumnOperation::AddGenerated { generated_as, sequence_options } => {
                let state = |m: String| SqlError::new(code::NOT_IN_PREREQUISITE_STATE, m);
                let column = &t.columns[p];
                let ty = column.ty;
                crate::exec::sequences::check_identity_type(ty)?;
                if column.nullable {
                    return Err(state(format!(
                        "column \"{name}\" of relation \"{}\" must be declared NOT NULL before identity can be added",
                        t.name
                    )));
                }
                if column.identity.is_some() {
                    return Err(state(format!(
                        "column \"{name}\" of relation \"{}\" is already an identity column",
                        t.name
                    )));
                }
                if column.default.is_some() {
                    return Err(state(format!(
                        "column \"{name}\" of relation \"{}\" already has a default value",
                        t.name
                    )));
                }
                let always = match generated_as {
                    Some(ast::GeneratedAs::Always) | None => true,
                    Some(ast::GeneratedAs::ByDefault) => false,
                    Some(ast::GeneratedAs::ExpStored) => {
                        return Err(SqlError::syntax("ADD GENERATED takes ALWAYS or BY DEFAULT"))
                    }
                };
                let options = sequence_options.as_deref().unwrap_or(&[]);
                let (database, table) = (t.database.clone(), t.name.clone());
                let sequence = self.create_owned_sequence(&database, &table, name, ty, options)?;
                t.columns[p].identity = Some(crate::catalog::Identity { always, sequence });
            }
        }
        Ok(())
    }

    /// `ALTER COLUMN … TYPE t [USING e]`: every row's value converted (by `e` over the row
    /// when given), the table rewritten, its indexes rebuilt and its CHECKs re-checked.
    fn change_type(
        &mut self,
        t: &mut Table,
        p: usize,
        ty: DataType,
        using: Option<&ast::Expr>,
        env: &dyn Env,
    ) -> Result<()> {
        let name = t.columns[p].name.clone();
        let mut in_foreign_key = t
            .foreign_keys
            .iter()
            .any(|f| f.columns.contains(&p) || (f.table == t.name && f.ref_columns.contains(&p)));
        for r in &t.referenced_by {
            if in_foreign_key || r.table == t.name {
                continue;
            }
            let child = self.db.catalog.table_or_err(&mut self.ts.txn, &t.database, &r.table)?;
            in_foreign_key = child
                .foreign_keys
                .iter()
                .any(|f| f.name == r.constraint && f.table == t.name && f.ref_columns.contains(&p));
        }
        if in_foreign_key && t.columns[p].ty != ty {
            return Err(SqlError::unsupported(format!(
                "changing the type of column \"{name}\", which a foreign key uses"
            )));
        }
        if t.columns[p].identity.is_some() {
            crate::exec::sequences::check_identity_type(ty)?;
        }
        let convert = match using {
            Some(e) => {
                let database = t.database.clone();
                let mut planner = self.definition_planner(&database, env);
                let scope = Scope {
                    cols: t
                        .columns
                        .iter()
                        .map(|c| ScopeCol {
                            system: false,
                            table: Some(t.name.clone()),
                            name: c.name.clone(),
                            ty: c.ty,
                            origin: None,
                        })
                        .collect(),
                    ..Default::default()
                };
                let (x, xty) = planner.expr(e, &scope, false)?;
                let (x, _) = planner.coerce(x, xty, ty)?;
                let mut subquery = false;
                x.walk(&mut |n| subquery |= matches!(n, crate::expr::Expr::Subquery(..)));
                if subquery {
                    return Err(SqlError::unsupported("a subquery in ALTER COLUMN … USING"));
                }
                Some(x)
            }
            None => None,
        };
        let old = t.clone();
        t.columns[p].ty = ty;
        let tname = t.name.clone();
        self.rewrite_table(&old, t, |_, mut row| {
            let v = match &convert {
                Some(x) => x.eval(&row, &Ctx::new(&[], env))?,
                None => std::mem::replace(&mut row[p], Value::Null),
            };
            row[p] = v.cast_in(ty, env.style()).map_err(|e| {
                if e.code == code::DATATYPE_MISMATCH {
                    SqlError::new(
                        code::DATATYPE_MISMATCH,
                        format!(
                            "column \"{name}\" cannot be cast automatically to type {}",
                            ty.sql_name()
                        ),
                    )
                    .hint(format!("You might need to specify \"USING {name}::{}\".", ty.sql_name()))
                } else {
                    e
                }
            })?;
            if row[p].is_null() && !old.columns[p].nullable {
                return Err(SqlError::new(
                    code::NOT_NULL,
                    format!("column \"{name}\" of relation \"{tname}\" contains null values"),
                )
                .column(&tname, &name));
            }
            Ok(row)
        })?;
        self.check_all_rows(t, env)
    }
}

/// The generated columns of `t` whose expressions read column `name`.
fn generated_readers(t: &Table, name: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for c in &t.columns {
        if let Some(g) = &c.generated {
            if c.name != name && reads_column(g, name)? {
                out.push(c.name.clone());
            }
        }
    }
    Ok(out)
}
