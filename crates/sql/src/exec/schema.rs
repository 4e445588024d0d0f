//! CREATE SCHEMA and DROP SCHEMA. Every database has `public` (where unqualified names
//! live) and the system schemas `pg_catalog` and `information_schema`; CREATE SCHEMA makes
//! others, whose tables, views, sequences and indexes are named `schema.name` (the catalog
//! names them so too: see [`crate::catalog::schema_of`]). DROP SCHEMA removes an empty
//! schema, or with CASCADE its relations first, reporting each as PostgreSQL does.
//! Dropping `public` and the system schemas is refused (0A000).

use sqlparser::ast;

use crate::bind::name_as_written;
use crate::catalog::{schema_of, unqualified, Schema};
use crate::error::{code, Result, SqlError};
use crate::exec::write::Writer;
use crate::session::Output;

/// The schemas every database has.
pub(crate) const SCHEMAS: &[&str] = &["public", "pg_catalog", "information_schema"];

/// The name of the schema a CREATE or DROP SCHEMA names.
fn schema_name(name: &ast::ObjectName) -> Result<String> {
    let name = name_as_written(name)?;
    if name.contains('.') {
        // `a.b`: a schema has no schema of its own.
        return Err(SqlError::new(
            code::SYNTAX,
            format!("improper qualified name (too many dotted names): {name}"),
        ));
    }
    Ok(name)
}

impl Writer<'_> {
    /// CREATE SCHEMA [IF NOT EXISTS] name [AUTHORIZATION role].
    pub(crate) fn create_schema(
        &mut self,
        name: &ast::SchemaName,
        if_not_exists: bool,
        database: &str,
    ) -> Result<Output> {
        let name = match name {
            ast::SchemaName::Simple(n) | ast::SchemaName::NamedAuthorization(n, _) => {
                schema_name(n)?
            }
            // The schema is named after the role.
            ast::SchemaName::UnnamedAuthorization(role) => crate::bind::ident(role),
        };
        if name.contains('.') {
            return Err(crate::bind::dotted_name(&name));
        }
        if name.starts_with("pg_") {
            return Err(SqlError::new("42939", format!("unacceptable schema name \"{name}\""))
                .detail("The prefix \"pg_\" is reserved for system schemas."));
        }
        let exists = SCHEMAS.contains(&name.as_str())
            || self.db.catalog.schema(&mut self.ts.txn, database, &name)?.is_some();
        if exists {
            if if_not_exists {
                self.skipping(code::DUPLICATE_SCHEMA, format!("schema \"{name}\" already exists"));
                return Ok(Output::Command("CREATE SCHEMA".into()));
            }
            return Err(SqlError::new(
                code::DUPLICATE_SCHEMA,
                format!("schema \"{name}\" already exists"),
            ));
        }
        let id = self.db.catalog.next_id(&mut self.ts.txn)?;
        let schema = Schema { id, name, comment: None };
        self.db.catalog.put_schema(&mut self.ts.txn, database, &schema)?;
        Ok(Output::Command("CREATE SCHEMA".into()))
    }

    /// 3F000 unless the schema a new relation's catalog name places it in exists; 42501 for
    /// the system schemas, which hold only Kiln's own relations.
    pub(crate) fn check_schema_of(&mut self, database: &str, name: &str) -> Result<()> {
        let schema = schema_of(name);
        if schema == "public" {
            return Ok(());
        }
        if SCHEMAS.contains(&schema) {
            return Err(SqlError::new(
                code::INSUFFICIENT_PRIVILEGE,
                format!("permission denied to create \"{name}\""),
            )
            .detail(format!("System catalog modifications are currently disallowed; {schema} holds Kiln's own relations.")));
        }
        self.db.catalog.check_schema_of(&mut self.ts.txn, database, name)
    }

    /// DROP SCHEMA [IF EXISTS] name, … [CASCADE | RESTRICT].
    pub(crate) fn drop_schemas(
        &mut self,
        names: &[ast::ObjectName],
        if_exists: bool,
        cascade: bool,
        database: &str,
    ) -> Result<Output> {
        for n in names {
            let name = schema_name(n)?;
            if SCHEMAS.contains(&name.as_str()) {
                return Err(SqlError::unsupported(format!("dropping the schema {name}"))
                    .hint("Kiln keeps unqualified names in the schema public, which always exists; drop its tables instead."));
            }
            if self.db.catalog.schema(&mut self.ts.txn, database, &name)?.is_none() {
                if !if_exists {
                    return Err(undefined_schema(&name));
                }
                self.skipping("00000", format!("schema \"{name}\" does not exist"));
                continue;
            }
            self.drop_schema_objects(&name, cascade, database)?;
            self.db.catalog.delete_schema(&mut self.ts.txn, database, &name)?;
        }
        Ok(Output::Command("DROP SCHEMA".into()))
    }

    /// Drops the relations of schema `name` (2BP01 without `cascade` when it has any):
    /// views first, then tables (with their indexes, constraints and owned sequences), then
    /// the other sequences.
    fn drop_schema_objects(&mut self, name: &str, cascade: bool, database: &str) -> Result<()> {
        let catalog = &self.db.catalog;
        let txn = &mut self.ts.txn;
        let mine = |n: &str| n.contains('.') && schema_of(n) == name;
        let mut objects: Vec<(u64, &'static str, String)> = Vec::new();
        for t in catalog.tables(txn, database)? {
            if mine(&t.name) {
                objects.push((t.id, "table", t.name.clone()));
            }
        }
        for v in catalog.views(txn, database)? {
            if mine(&v.name) {
                objects.push((v.id, "view", v.name.clone()));
            }
        }
        for s in catalog.sequences(txn, database)? {
            if mine(&s.name) && s.owned_by.is_none() {
                objects.push((s.id, "sequence", s.name.clone()));
            }
        }
        objects.sort();
        if objects.is_empty() {
            return Ok(());
        }
        if !cascade {
            let lines: Vec<String> = objects
                .iter()
                .map(|(_, kind, n)| format!("{kind} {n} depends on schema {name}"))
                .collect();
            return Err(crate::exec::write::depended_on(&format!("schema {name}"), &lines));
        }
        for (_, kind, n) in &objects {
            self.cascade_to(format!("{kind} {n}"));
        }
        let as_name = |n: &str| {
            ast::ObjectName::from(vec![ast::Ident::new(name), ast::Ident::new(unqualified(n))])
        };
        let views: Vec<String> =
            objects.iter().filter(|o| o.1 == "view").map(|o| o.2.clone()).collect();
        if !views.is_empty() {
            self.drop_views(&views, true, true, database)?;
        }
        let tables: Vec<ast::ObjectName> =
            objects.iter().filter(|o| o.1 == "table").map(|o| as_name(&o.2)).collect();
        if !tables.is_empty() {
            self.drop(ast::ObjectType::Table, true, true, &tables, database)?;
        }
        let sequences: Vec<ast::ObjectName> =
            objects.iter().filter(|o| o.1 == "sequence").map(|o| as_name(&o.2)).collect();
        if !sequences.is_empty() {
            self.drop_sequences(&sequences, true, true, database)?;
        }
        Ok(())
    }
}

impl Writer<'_> {
    /// `ALTER SCHEMA name OWNER TO role` (Kiln has one role, which owns every schema: the
    /// schema is checked and nothing changes). Renaming a schema is refused (0A000).
    pub(crate) fn alter_schema(&mut self, a: &ast::AlterSchema, database: &str) -> Result<Output> {
        let name = schema_name(&a.name)?;
        let exists = SCHEMAS.contains(&name.as_str())
            || self.db.catalog.schema(&mut self.ts.txn, database, &name)?.is_some();
        if !exists {
            if a.if_exists {
                self.skipping("00000", format!("schema \"{name}\" does not exist"));
                return Ok(Output::Command("ALTER SCHEMA".into()));
            }
            return Err(undefined_schema(&name));
        }
        for op in &a.operations {
            match op {
                ast::AlterSchemaOperation::OwnerTo { .. } => {}
                ast::AlterSchemaOperation::Rename { .. } => {
                    return Err(SqlError::unsupported("renaming a schema").hint(
                        "Create the new schema and move each table with CREATE TABLE … AS, or keep the name.",
                    ))
                }
                other => return Err(SqlError::unsupported(format!("ALTER SCHEMA … {other}"))),
            }
        }
        Ok(Output::Command("ALTER SCHEMA".into()))
    }

    /// `COMMENT ON SCHEMA name IS 'text' | NULL`: kept with a created schema (`public`'s
    /// comment is PostgreSQL's own and stays).
    pub(crate) fn comment_on_schema(
        &mut self,
        name: &ast::ObjectName,
        comment: Option<String>,
        if_exists: bool,
        database: &str,
    ) -> Result<Output> {
        let name = schema_name(name)?;
        let done = Ok(Output::Command("COMMENT".into()));
        match self.db.catalog.schema(&mut self.ts.txn, database, &name)? {
            Some(mut schema) => {
                schema.comment = comment;
                self.db.catalog.put_schema(&mut self.ts.txn, database, &schema)?;
                done
            }
            None if SCHEMAS.contains(&name.as_str()) => Err(SqlError::unsupported(format!(
                "COMMENT ON SCHEMA {name}, a schema every database has"
            ))),
            None if if_exists => done,
            None => Err(undefined_schema(&name)),
        }
    }
}

/// The catalog name a relation `old` takes when renamed to `new`: it stays in its schema,
/// and the new name may not name one (as in PostgreSQL's grammar).
pub(crate) fn renamed(old: &str, new: &ast::ObjectName) -> Result<String> {
    let new = name_as_written(new)?;
    if new.contains('.') {
        return Err(SqlError::new(
            code::SYNTAX,
            format!("a renamed relation stays in its schema: name it without one ({new})"),
        ));
    }
    Ok(crate::catalog::beside(old, &new))
}

/// 3F000 for a schema that does not exist.
pub(crate) fn undefined_schema(name: &str) -> SqlError {
    SqlError::new(code::UNDEFINED_SCHEMA, format!("schema \"{name}\" does not exist"))
}
