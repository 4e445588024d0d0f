//! `COMMENT ON {TABLE | VIEW | SEQUENCE | INDEX | COLUMN | TYPE | DOMAIN | SCHEMA} name IS 'text' | NULL`: the comment
//! is kept with the object's definition (so it is dropped and renamed with it) and shown by
//! `pg_description`, `obj_description` and `col_description`. (`COMMENT ON FUNCTION |
//! PROCEDURE | AGGREGATE`, whose signatures sqlparser does not read, is
//! `Writer::comment_on_routine`.)

use sqlparser::ast;

use crate::bind::*;
use crate::error::{code, Result, SqlError};
use crate::exec::write::Writer;
use crate::session::Output;

impl Writer<'_> {
    pub(crate) fn comment_on(
        &mut self,
        object_type: &ast::CommentObject,
        name: &ast::ObjectName,
        comment: Option<&str>,
        if_exists: bool,
        database: &str,
    ) -> Result<Output> {
        use ast::CommentObject as O;
        let done = || Ok(Output::Command("COMMENT".into()));
        // `IS ''` removes the comment, as `IS NULL` does.
        let comment = comment.filter(|c| !c.is_empty()).map(str::to_string);
        if let O::Schema = object_type {
            return self.comment_on_schema(name, comment, if_exists, database);
        }
        let domain = match object_type {
            O::Domain => true,
            O::Type => {
                let n = crate::bind::name_as_written(name)?;
                self.db.catalog.domain(&mut self.ts.txn, database, &n)?.is_some()
            }
            _ => false,
        };
        if domain {
            return self.comment_on_domain(name, comment, database);
        }
        if let O::Type = object_type {
            return self.comment_on_type(
                &crate::bind::name_as_written(name)?,
                comment,
                if_exists,
                database,
            );
        }
        let txn = &mut self.ts.txn;
        let catalog = &self.db.catalog;
        let missing = |what: &str, name: &str| {
            SqlError::new(code::UNDEFINED_TABLE, format!("{what} \"{name}\" does not exist"))
        };
        match object_type {
            O::Table => {
                let n = object_name(name)?;
                let Some(t) = catalog.table(txn, database, &n)? else {
                    if if_exists {
                        return done();
                    }
                    return Err(not_a(catalog, txn, database, &n, "table")?);
                };
                let mut t = (*t).clone();
                t.comment = comment;
                catalog.put_table(txn, &t)?;
            }
            O::View => {
                let n = object_name(name)?;
                let Some(v) = catalog.view(txn, database, &n)? else {
                    if if_exists {
                        return done();
                    }
                    return Err(not_a(catalog, txn, database, &n, "view")?);
                };
                let mut v = (*v).clone();
                v.comment = comment;
                catalog.put_view(txn, &v)?;
            }
            O::Sequence => {
                let n = object_name(name)?;
                let Some(seq) = catalog.sequence(txn, database, &n)? else {
                    if if_exists {
                        return done();
                    }
                    return Err(not_a(catalog, txn, database, &n, "sequence")?);
                };
                let mut seq = (*seq).clone();
                seq.comment = comment;
                catalog.put_sequence(txn, &seq)?;
            }
            O::Index => {
                let n = object_name(name)?;
                let Some(table) = catalog.index_table(txn, database, &n)? else {
                    if if_exists {
                        return done();
                    }
                    return Err(missing("index", &n));
                };
                let mut t = (*catalog.table_or_err(txn, database, &table)?).clone();
                let own = crate::catalog::unqualified(&n);
                let Some(ix) = t.indexes.iter_mut().find(|ix| ix.name == own) else {
                    return Err(SqlError::unsupported(format!(
                        "COMMENT ON INDEX {n}, a primary key's index"
                    )));
                };
                ix.comment = comment;
                catalog.put_table(txn, &t)?;
            }
            O::Column => {
                let parts: Vec<String> = name.0.iter().filter_map(|p| p.as_ident()).map(ident).collect();
                let (table, column) = match parts.as_slice() {
                    [t, c] => (t.clone(), c.clone()),
                    [s, t, c] if s == "public" => (t.clone(), c.clone()),
                    [s, t, c] => (crate::catalog::qualified(s, t), c.clone()),
                    _ => {
                        return Err(SqlError::syntax(format!(
                            "column name must be qualified by its table: {name}"
                        )))
                    }
                };
                let Some(t) = catalog.table(txn, database, &table)? else {
                    if catalog.view(txn, database, &table)?.is_some() {
                        return Err(SqlError::unsupported("COMMENT ON COLUMN of a view"));
                    }
                    return Err(missing("relation", &table));
                };
                let mut t = (*t).clone();
                let i = t.column_or_err(&column)?;
                t.columns[i].comment = comment;
                catalog.put_table(txn, &t)?;
            }
            other => {
                return Err(SqlError::unsupported(format!(
                    "COMMENT ON {other} (Kiln keeps comments on tables, views, sequences, indexes, columns, types, schemas and routines)"
                )))
            }
        }
        done()
    }
}

/// The error for `name` not being a `kind`: 42809 when it names another kind of relation,
/// 42P01 when nothing.
fn not_a(
    catalog: &crate::catalog::Catalog,
    txn: &mut kiln_engine::Transaction,
    database: &str,
    name: &str,
    kind: &str,
) -> Result<SqlError> {
    Ok(if catalog.relation_exists(txn, database, name)? {
        SqlError::new(code::WRONG_OBJECT_TYPE, format!("\"{name}\" is not a {kind}"))
    } else {
        SqlError::new(code::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist"))
    })
}
