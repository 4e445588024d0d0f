//! CREATE SCHEMA and DROP SCHEMA. Kiln has one schema, `public` (beside the system ones,
//! `pg_catalog` and `information_schema`), so these statements only do what PostgreSQL does
//! for those: `CREATE SCHEMA IF NOT EXISTS public` changes nothing, `CREATE SCHEMA public`
//! answers 42P06, `DROP SCHEMA IF EXISTS` of any other name changes nothing (it does not
//! exist) and without IF EXISTS answers 3F000. Creating another schema, or dropping `public`,
//! is refused (0A000).

use sqlparser::ast;

use crate::bind::object_name;
use crate::error::{code, Result, SqlError};
use crate::exec::write::Writer;
use crate::session::Output;

/// The schemas every database has.
pub(crate) const SCHEMAS: &[&str] = &["public", "pg_catalog", "information_schema"];

fn only_public() -> SqlError {
    SqlError::unsupported("a schema other than public")
        .hint("Kiln keeps every table, view and sequence in the schema public.")
}

impl Writer<'_> {
    /// CREATE SCHEMA [IF NOT EXISTS] name [AUTHORIZATION role].
    pub(crate) fn create_schema(
        &mut self,
        name: &ast::SchemaName,
        if_not_exists: bool,
    ) -> Result<Output> {
        let name = match name {
            ast::SchemaName::Simple(n) | ast::SchemaName::NamedAuthorization(n, _) => {
                object_name(n)?
            }
            // The schema is named after the role.
            ast::SchemaName::UnnamedAuthorization(role) => crate::bind::ident(role),
        };
        if name.starts_with("pg_") {
            return Err(SqlError::new("42939", format!("unacceptable schema name \"{name}\""))
                .detail("The prefix \"pg_\" is reserved for system schemas."));
        }
        if !SCHEMAS.contains(&name.as_str()) {
            return Err(only_public());
        }
        if if_not_exists {
            self.skipping("42P06", format!("schema \"{name}\" already exists"));
            return Ok(Output::Command("CREATE SCHEMA".into()));
        }
        Err(SqlError::new("42P06", format!("schema \"{name}\" already exists")))
    }

    /// DROP SCHEMA [IF EXISTS] name, … [CASCADE | RESTRICT].
    pub(crate) fn drop_schemas(
        &mut self,
        names: &[ast::ObjectName],
        if_exists: bool,
    ) -> Result<Output> {
        for n in names {
            let name = object_name(n)?;
            if SCHEMAS.contains(&name.as_str()) {
                return Err(SqlError::unsupported(format!("dropping the schema {name}"))
                    .hint("Kiln keeps every table, view and sequence in the schema public."));
            }
            if !if_exists {
                return Err(SqlError::new(
                    code::UNDEFINED_SCHEMA,
                    format!("schema \"{name}\" does not exist"),
                ));
            }
            self.skipping("00000", format!("schema \"{name}\" does not exist"));
        }
        Ok(Output::Command("DROP SCHEMA".into()))
    }
}
