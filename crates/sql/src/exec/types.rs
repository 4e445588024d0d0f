//! `CREATE TYPE … AS ENUM`, `ALTER TYPE` (`ADD VALUE`, `RENAME VALUE`, `RENAME TO`,
//! `OWNER TO`) and `DROP TYPE`: enum types, as [`crate::enums`] defines them. Composite,
//! range and base types are refused (0A000).
//!
//! A type change reaches everything that holds a copy of the definition in the same
//! transaction: the columns of tables and views of the type (or of arrays of it) take the
//! new definition, and a renamed label is written again into every stored row that has it.

use sqlparser::ast;

use crate::bind::ident;
use crate::catalog::Table;
use crate::enums::{self, EnumLabel, EnumType};
use crate::error::{code, Result, SqlError};
use crate::exec::write::Writer;
use crate::pg::system::oid;
use crate::session::Output;
use crate::types::Value;

/// A label as written: a string literal (`'happy'`); anything else is a syntax error, as in
/// PostgreSQL.
fn label(i: &ast::Ident) -> Result<String> {
    if i.quote_style == Some('\'') {
        Ok(i.value.clone())
    } else {
        Err(SqlError::syntax(format!("syntax error at or near \"{}\"", i.value)))
    }
}

fn no_label(label: &str) -> SqlError {
    SqlError::new(
        code::INVALID_PARAMETER_VALUE,
        format!("\"{label}\" is not an existing enum label"),
    )
}

fn label_exists(label: &str) -> SqlError {
    SqlError::new(code::DUPLICATE_OBJECT, format!("enum label \"{label}\" already exists"))
}

/// What depends on an enum type: table columns (table, column, whether of an array of the
/// type) and views.
struct Dependents {
    columns: Vec<(String, String, bool)>,
    views: Vec<String>,
}

impl Writer<'_> {
    /// 42710 when `name` is taken by a type (an enum type, or a table's or view's row type);
    /// 0A000 for a built-in type's name (PostgreSQL would make a `public` type that
    /// unqualified names never reach).
    pub(crate) fn type_name_free(&mut self, database: &str, name: &str) -> Result<()> {
        let taken =
            || SqlError::new(code::DUPLICATE_OBJECT, format!("type \"{name}\" already exists"));
        if self.db.catalog.enum_type(&mut self.ts.txn, database, name)?.is_some()
            || self.db.catalog.domain(&mut self.ts.txn, database, name)?.is_some()
        {
            return Err(taken());
        }
        if self.db.catalog.table(&mut self.ts.txn, database, name)?.is_some()
            || self.db.catalog.view(&mut self.ts.txn, database, name)?.is_some()
        {
            return Err(taken().hint("A relation has an associated type of the same name, so you must use a name that doesn't conflict with any existing type."));
        }
        if crate::bind::reg::type_by_name(name).is_some() {
            return Err(SqlError::unsupported(format!(
                "a type named like the built-in type {name}"
            )));
        }
        Ok(())
    }

    /// `CREATE TYPE name AS ENUM ('label', …)`.
    pub(crate) fn create_type(
        &mut self,
        name: &ast::ObjectName,
        representation: Option<&ast::UserDefinedTypeRepresentation>,
        database: &str,
    ) -> Result<Output> {
        let Some(ast::UserDefinedTypeRepresentation::Enum { labels }) = representation else {
            return Err(SqlError::unsupported("composite, range and base types")
                .hint("Kiln has enum types: CREATE TYPE name AS ENUM ('a', 'b', …)."));
        };
        let name = crate::bind::name_as_written(name)?;
        if name.contains('.') {
            return Err(SqlError::unsupported(format!(
                "the enum type {name}, in a schema other than public"
            ))
            .hint("Kiln keeps enum types in schema public: name the type without a schema."));
        }
        self.type_name_free(database, &name)?;
        let labels = labels.iter().map(label).collect::<Result<Vec<_>>>()?;
        enums::check_count(labels.len())?;
        let first = self.db.catalog.next_ids(&mut self.ts.txn, 2 + labels.len() as u64)?;
        let oid_of = |n: u64| oid::object(first + n) as u32;
        let mut def = EnumType {
            oid: oid_of(0),
            array_oid: oid_of(1),
            name,
            labels: Vec::with_capacity(labels.len()),
            comment: None,
        };
        for (i, l) in labels.into_iter().enumerate() {
            enums::check_label(&l)?;
            if def.position(&l).is_some() {
                return Err(SqlError::new(
                    code::UNIQUE,
                    "duplicate key value violates unique constraint \"pg_enum_typid_label_index\"",
                )
                .detail(format!("Key (enumtypid, enumlabel)=({}, {l}) already exists.", def.oid))
                .catalog_constraint("pg_enum", "pg_enum_typid_label_index"));
            }
            def.labels.push(EnumLabel {
                oid: oid_of(2 + i as u64),
                sort: i as f64 + 1.0,
                label: l,
            });
        }
        self.db.catalog.put_enum_type(&mut self.ts.txn, database, &def)?;
        Ok(Output::Command("CREATE TYPE".into()))
    }

    /// The columns and views whose type is the enum type `def` or an array of it.
    fn dependents(&mut self, database: &str, def: &EnumType) -> Result<Dependents> {
        let mut out = Dependents { columns: Vec::new(), views: Vec::new() };
        for t in self.db.catalog.tables(&mut self.ts.txn, database)? {
            for c in t.columns.iter().filter(|c| enums::uses(c.ty, def.oid)) {
                out.columns.push((t.name.clone(), c.name.clone(), c.ty.element().is_some()));
            }
        }
        for v in self.db.catalog.views(&mut self.ts.txn, database)? {
            if v.columns.iter().any(|(_, ty)| enums::uses(*ty, def.oid)) {
                out.views.push(v.name.clone());
            }
        }
        Ok(out)
    }

    /// `DROP TYPE [IF EXISTS] name, … [CASCADE | RESTRICT]`: with CASCADE, the views and
    /// table columns of the type go too, as in PostgreSQL.
    pub(crate) fn drop_types(
        &mut self,
        names: &[ast::ObjectName],
        if_exists: bool,
        cascade: bool,
        database: &str,
    ) -> Result<Output> {
        for n in names {
            let name = crate::bind::name_as_written(n)?;
            // DROP TYPE drops a domain too, as in PostgreSQL.
            if self.db.catalog.domain(&mut self.ts.txn, database, &name)?.is_some() {
                self.drop_domain(n, if_exists, cascade, database)?;
                continue;
            }
            let Some(def) = self.db.catalog.enum_type(&mut self.ts.txn, database, &name)? else {
                let relation =
                    if self.db.catalog.table(&mut self.ts.txn, database, &name)?.is_some() {
                        Some("table")
                    } else if self.db.catalog.view(&mut self.ts.txn, database, &name)?.is_some() {
                        Some("view")
                    } else {
                        None
                    };
                match relation {
                    Some(kind) => {
                        return Err(SqlError::new(
                            code::DEPENDENT_OBJECTS,
                            format!("cannot drop type {name} because {kind} {name} requires it"),
                        )
                        .hint(format!("You can drop {kind} {name} instead.")))
                    }
                    None if if_exists => {
                        self.skipping("00000", format!("type \"{name}\" does not exist"));
                        continue;
                    }
                    None => return Err(crate::bind::reg::undefined_type(&name)),
                }
            };
            let deps = self.dependents(database, def)?;
            if !deps.columns.is_empty() || !deps.views.is_empty() {
                if !cascade {
                    let mut lines: Vec<String> = deps
                        .columns
                        .iter()
                        .map(|(t, c, array)| {
                            let ty = if *array { format!("{name}[]") } else { name.clone() };
                            format!("column {c} of table {t} depends on type {ty}")
                        })
                        .collect();
                    lines.extend(
                        deps.views.iter().map(|v| format!("view {v} depends on type {name}")),
                    );
                    return Err(crate::exec::write::depended_on(&format!("type {name}"), &lines));
                }
                // PostgreSQL reaches the columns of the type's array type first (through that
                // type), then the type's own.
                for want_array in [true, false] {
                    for (table, column, array) in &deps.columns {
                        if *array == want_array {
                            self.cascade_to(format!("column {column} of table {table}"));
                        }
                    }
                }
                for v in &deps.views {
                    self.cascade_to(format!("view {v}"));
                }
                if !deps.views.is_empty() {
                    self.drop_views(&deps.views, true, true, database)?;
                }
                for (table, column, _) in &deps.columns {
                    let Some(t) = self.db.catalog.table(&mut self.ts.txn, database, table)? else {
                        continue;
                    };
                    let mut t = (*t).clone();
                    self.drop_column(&mut t, column, true, true)?;
                    self.db.catalog.put_table(&mut self.ts.txn, &t)?;
                }
            }
            self.db.catalog.delete_enum_type(&mut self.ts.txn, database, &name)?;
        }
        Ok(Output::Command("DROP TYPE".into()))
    }

    /// `ALTER TYPE name {ADD VALUE [IF NOT EXISTS] 'l' [{BEFORE | AFTER} 'n'] | RENAME VALUE
    /// 'a' TO 'b' | RENAME TO new}`.
    pub(crate) fn alter_type(&mut self, at: &ast::AlterType, database: &str) -> Result<Output> {
        let name = crate::bind::name_as_written(&at.name)?;
        let def =
            self.db.catalog.enum_type(&mut self.ts.txn, database, &name)?.ok_or_else(|| {
                if let Some(t) = crate::bind::reg::type_by_name(&name) {
                    SqlError::new(
                        code::WRONG_OBJECT_TYPE,
                        format!("{} is not an enum", t.sql_name()),
                    )
                } else {
                    crate::bind::reg::undefined_type(&name)
                }
            })?;
        let done = || Ok(Output::Command("ALTER TYPE".into()));
        let mut new = def.clone();
        // A renamed label: (old, new).
        let mut renamed: Option<(String, String)> = None;
        match &at.operation {
            ast::AlterTypeOperation::Rename(r) => {
                let to = ident(&r.new_name);
                if to == name {
                    return Err(SqlError::new(
                        code::DUPLICATE_OBJECT,
                        format!("type \"{to}\" already exists"),
                    ));
                }
                self.type_name_free(database, &to)?;
                self.db.catalog.delete_enum_type(&mut self.ts.txn, database, &name)?;
                new.name = to;
            }
            ast::AlterTypeOperation::AddValue(a) => {
                let value = label(&a.value)?;
                enums::check_label(&value)?;
                if def.position(&value).is_some() {
                    if a.if_not_exists {
                        self.skipping(
                            code::DUPLICATE_OBJECT,
                            format!("enum label \"{value}\" already exists"),
                        );
                        return done();
                    }
                    return Err(label_exists(&value));
                }
                let neighbour = match &a.position {
                    None => None,
                    Some(ast::AlterTypeAddValuePosition::Before(n)) => {
                        let n = label(n)?;
                        Some((def.position(&n).ok_or_else(|| no_label(&n))?, true))
                    }
                    Some(ast::AlterTypeAddValuePosition::After(n)) => {
                        let n = label(n)?;
                        Some((def.position(&n).ok_or_else(|| no_label(&n))?, false))
                    }
                };
                enums::check_count(def.labels.len() + 1)?;
                let sort = def.sort_for(neighbour)?;
                let id = self.db.catalog.next_id(&mut self.ts.txn)?;
                let at = match neighbour {
                    None => new.labels.len(),
                    Some((i, true)) => i,
                    Some((i, false)) => i + 1,
                };
                new.labels
                    .insert(at, EnumLabel { oid: oid::object(id) as u32, sort, label: value });
            }
            ast::AlterTypeOperation::RenameValue(r) => {
                let (from, to) = (label(&r.from)?, label(&r.to)?);
                let i = def.position(&from).ok_or_else(|| no_label(&from))?;
                if def.position(&to).is_some() {
                    return Err(label_exists(&to));
                }
                enums::check_label(&to)?;
                new.labels[i].label = to.clone();
                renamed = Some((from, to));
            }
        }
        let new = enums::intern(new)?;
        self.db.catalog.put_enum_type(&mut self.ts.txn, database, new)?;
        self.retype(database, def, new, renamed.as_ref())?;
        done()
    }

    /// `ALTER TYPE name OWNER TO role` (Kiln has one role, which owns every type) and `ALTER
    /// TYPE name SET SCHEMA public` (the only schema types live in): they check the type and
    /// change nothing.
    pub(crate) fn alter_type_owner(
        &mut self,
        name: &ast::ObjectName,
        schema: Option<&ast::Ident>,
        database: &str,
    ) -> Result<Output> {
        let name = crate::bind::name_as_written(name)?;
        if self.db.catalog.enum_type(&mut self.ts.txn, database, &name)?.is_none() {
            return Err(crate::bind::reg::undefined_type(&name));
        }
        if let Some(schema) = schema.map(ident).filter(|s| s != "public") {
            return Err(if crate::exec::schema::SCHEMAS.contains(&schema.as_str()) {
                SqlError::unsupported(format!("moving a type to schema {schema}"))
            } else {
                SqlError::new(code::UNDEFINED_SCHEMA, format!("schema \"{schema}\" does not exist"))
            });
        }
        Ok(Output::Command("ALTER TYPE".into()))
    }

    /// `COMMENT ON TYPE name IS 'text' | NULL`.
    pub(crate) fn comment_on_type(
        &mut self,
        name: &str,
        comment: Option<String>,
        if_exists: bool,
        database: &str,
    ) -> Result<Output> {
        let Some(def) = self.db.catalog.enum_type(&mut self.ts.txn, database, name)? else {
            if if_exists {
                return Ok(Output::Command("COMMENT".into()));
            }
            return Err(crate::bind::reg::undefined_type(name));
        };
        let mut new = def.clone();
        new.comment = comment;
        let new = enums::intern(new)?;
        self.db.catalog.put_enum_type(&mut self.ts.txn, database, new)?;
        self.retype(database, def, new, None)?;
        Ok(Output::Command("COMMENT".into()))
    }

    /// Gives the columns of tables and views of type `old` the definition `new`; with a
    /// renamed label, writes every row that holds it again with the new label.
    fn retype(
        &mut self,
        database: &str,
        old: &EnumType,
        new: &'static EnumType,
        renamed: Option<&(String, String)>,
    ) -> Result<()> {
        for t in self.db.catalog.tables(&mut self.ts.txn, database)? {
            let cols: Vec<usize> =
                (0..t.columns.len()).filter(|&i| enums::uses(t.columns[i].ty, old.oid)).collect();
            if cols.is_empty() {
                continue;
            }
            let mut changed: Table = (*t).clone();
            for &i in &cols {
                changed.columns[i].ty = enums::replace(changed.columns[i].ty, new)?;
            }
            if let Some((from, to)) = renamed {
                self.rewrite_table(&t, &mut changed, |w, mut row| {
                    w.interrupted()?;
                    for &i in &cols {
                        relabel(&mut row[i], from, to);
                    }
                    Ok(row)
                })?;
            }
            self.db.catalog.put_table(&mut self.ts.txn, &changed)?;
        }
        for v in self.db.catalog.views(&mut self.ts.txn, database)? {
            if !v.columns.iter().any(|(_, ty)| enums::uses(*ty, old.oid)) {
                continue;
            }
            let mut changed = (*v).clone();
            for (_, ty) in &mut changed.columns {
                *ty = enums::replace(*ty, new)?;
            }
            self.db.catalog.put_view(&mut self.ts.txn, &changed)?;
        }
        Ok(())
    }
}

/// Renames label `from` to `to` in a stored value (an enum value or an array of them).
fn relabel(v: &mut Value, from: &str, to: &str) {
    match v {
        Value::Enum(e) if e.label == from => e.label = to.to_string(),
        Value::Array(items) => items.iter_mut().for_each(|x| relabel(x, from, to)),
        _ => {}
    }
}
