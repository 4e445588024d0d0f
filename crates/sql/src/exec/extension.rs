//! CREATE EXTENSION and DROP EXTENSION. Kiln loads no code: the extensions it accepts are
//! the ones whose functions it has built in (`pgcrypto`'s `digest`, `hmac`,
//! `gen_random_bytes`, `gen_random_uuid`; `uuid-ossp`'s `uuid_generate_v1` … `v5`), so
//! migrations that begin with `CREATE EXTENSION IF NOT EXISTS "uuid-ossp"` run unchanged.
//! The statement records the extension (shown in `pg_extension`, dropped by DROP EXTENSION);
//! the functions are callable either way. `plpgsql` is listed in every database, as in
//! PostgreSQL, though Kiln runs no procedural code (CREATE FUNCTION is refused). Any other
//! extension is refused with 0A000.

use sqlparser::ast;

use crate::catalog::Extension;
use crate::error::{code, Result, SqlError};
use crate::exec::write::Writer;
use crate::session::Output;

/// An extension Kiln has built in: its name, version and `pg_available_extensions` comment.
pub struct Available {
    /// Its name.
    pub name: &'static str,
    /// The version CREATE EXTENSION installs (PostgreSQL 15's).
    pub version: &'static str,
    /// What it provides.
    pub comment: &'static str,
}

/// The extensions CREATE EXTENSION accepts.
pub const AVAILABLE: &[Available] = &[
    Available { name: "pgcrypto", version: "1.3", comment: "cryptographic functions" },
    Available { name: "plpgsql", version: "1.0", comment: "PL/pgSQL procedural language" },
    Available {
        name: "uuid-ossp",
        version: "1.1",
        comment: "generate universally unique identifiers (UUIDs)",
    },
];

/// The extension every database has from the start.
pub const BUILT_IN: &str = "plpgsql";

/// The OID `pg_extension` gives plpgsql.
pub const BUILT_IN_OID: i64 = 13500;

impl Writer<'_> {
    /// CREATE EXTENSION [IF NOT EXISTS] name [WITH] [SCHEMA s] [VERSION v] [CASCADE].
    pub(crate) fn create_extension(
        &mut self,
        ce: &ast::CreateExtension,
        database: &str,
    ) -> Result<Output> {
        let name = crate::bind::ident(&ce.name);
        let Some(available) = AVAILABLE.iter().find(|a| a.name == name) else {
            let names: Vec<&str> = AVAILABLE.iter().map(|a| a.name).collect();
            return Err(SqlError::unsupported(format!("the extension \"{name}\"")).hint(format!(
                "Kiln has the functions of these extensions built in: {}.",
                names.join(", ")
            )));
        };
        let exists = name == BUILT_IN
            || self
                .db
                .catalog
                .extensions(&mut self.ts.txn, database)?
                .iter()
                .any(|e| e.name == name);
        if exists {
            if ce.if_not_exists {
                self.skipping("42710", format!("extension \"{name}\" already exists"));
                return Ok(Output::Command("CREATE EXTENSION".into()));
            }
            return Err(SqlError::new(
                code::DUPLICATE_OBJECT,
                format!("extension \"{name}\" already exists"),
            ));
        }
        if let Some(schema) = &ce.schema {
            let schema = crate::bind::ident(schema);
            let home = if name == BUILT_IN { "pg_catalog" } else { "public" };
            if schema != home && schema != "public" {
                return Err(SqlError::new(
                    code::UNDEFINED_SCHEMA,
                    format!("schema \"{schema}\" does not exist"),
                ));
            }
        }
        if let Some(version) = &ce.version {
            let version = crate::bind::ident(version);
            if version != available.version {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER_VALUE,
                    format!("extension \"{name}\" has no installation script nor update path for version \"{version}\""),
                ));
            }
        }
        let id = self.db.catalog.next_id(&mut self.ts.txn)?;
        let ext = Extension { id, name, version: available.version.to_string() };
        self.db.catalog.put_extension(&mut self.ts.txn, database, &ext)?;
        Ok(Output::Command("CREATE EXTENSION".into()))
    }

    /// DROP EXTENSION [IF EXISTS] name, … [CASCADE | RESTRICT]. Nothing depends on an
    /// extension's record (its functions stay built in), so CASCADE changes nothing.
    pub(crate) fn drop_extensions(
        &mut self,
        de: &ast::DropExtension,
        database: &str,
    ) -> Result<Output> {
        let installed = self.db.catalog.extensions(&mut self.ts.txn, database)?;
        for name in &de.names {
            let name = crate::bind::ident(name);
            if name == BUILT_IN {
                return Err(SqlError::unsupported("dropping the extension \"plpgsql\"")
                    .hint("Kiln lists plpgsql in every database, as PostgreSQL does."));
            }
            if installed.iter().any(|e| e.name == name) {
                self.db.catalog.delete_extension(&mut self.ts.txn, database, &name)?;
            } else if !de.if_exists {
                return Err(SqlError::new(
                    code::UNDEFINED_OBJECT,
                    format!("extension \"{name}\" does not exist"),
                ));
            } else {
                self.skipping("00000", format!("extension \"{name}\" does not exist"));
            }
        }
        Ok(Output::Command("DROP EXTENSION".into()))
    }
}
