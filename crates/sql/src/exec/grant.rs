//! GRANT and REVOKE on tables, views, sequences, schemas and databases. Kiln has no
//! privilege system: every connection may do everything, as a PostgreSQL superuser may, so
//! these statements change nothing. They are accepted, rather than refused, because schema
//! scripts and migrations carry them (pg_dump writes them for every object with privileges);
//! like PostgreSQL they fail when an object they name does not exist.

use sqlparser::ast;

use crate::bind::object_name;
use crate::error::{code, Result, SqlError};
use crate::exec::write::Writer;
use crate::session::Output;

impl Writer<'_> {
    /// Checks the objects of a GRANT or REVOKE (`tag`), which then changes nothing.
    pub(crate) fn grant(
        &mut self,
        objects: Option<&ast::GrantObjects>,
        grantees: &[ast::Grantee],
        with_grant_option: bool,
        tag: &str,
        database: &str,
    ) -> Result<Output> {
        use ast::GrantObjects as G;
        let public = |g: &ast::Grantee| {
            g.grantee_type == ast::GranteesType::Public
                || matches!(&g.name, Some(ast::GranteeName::ObjectName(n))
                    if crate::bind::name_as_written(n).is_ok_and(|n| n == "public"))
        };
        if with_grant_option && grantees.iter().any(public) {
            return Err(SqlError::new("0LP01", "grant options can only be granted to roles"));
        }
        let Some(objects) = objects else {
            return Err(SqlError::unsupported(format!("{tag} of role membership")));
        };
        match objects {
            G::Tables(names) | G::Views(names) => {
                for n in names {
                    let name = object_name(n)?;
                    if !self.db.catalog.relation_exists(&mut self.ts.txn, database, &name)? {
                        return Err(SqlError::new(
                            code::UNDEFINED_TABLE,
                            format!("relation \"{name}\" does not exist"),
                        ));
                    }
                }
            }
            G::Sequences(names) => {
                for n in names {
                    let name = object_name(n)?;
                    if self.db.catalog.sequence(&mut self.ts.txn, database, &name)?.is_none() {
                        let exists =
                            self.db.catalog.relation_exists(&mut self.ts.txn, database, &name)?;
                        return Err(if exists {
                            SqlError::new(
                                code::WRONG_OBJECT_TYPE,
                                format!("\"{name}\" is not a sequence"),
                            )
                        } else {
                            SqlError::new(
                                code::UNDEFINED_TABLE,
                                format!("relation \"{name}\" does not exist"),
                            )
                        });
                    }
                }
            }
            G::Schemas(schemas)
            | G::AllTablesInSchema { schemas }
            | G::AllSequencesInSchema { schemas }
            | G::AllViewsInSchema { schemas }
            | G::AllFunctionsInSchema { schemas } => {
                for s in schemas {
                    let name = crate::bind::name_as_written(s)?;
                    let created = self.db.catalog.schema(&mut self.ts.txn, database, &name)?;
                    if !crate::exec::schema::SCHEMAS.contains(&name.as_str()) && created.is_none() {
                        return Err(SqlError::new(
                            code::UNDEFINED_SCHEMA,
                            format!("schema \"{name}\" does not exist"),
                        ));
                    }
                }
            }
            G::Databases(names) => {
                for n in names {
                    let name = object_name(n)?;
                    if !self.db.catalog.database_exists(&mut self.ts.txn, &name)? {
                        return Err(SqlError::new(
                            code::INVALID_CATALOG,
                            format!("database \"{name}\" does not exist"),
                        ));
                    }
                }
            }
            other => return Err(SqlError::unsupported(format!("{tag} ON {other}"))),
        }
        Ok(Output::Command(tag.to_string()))
    }
}
