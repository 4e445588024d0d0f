//! The schema statements a writer runs alone — CREATE / DROP / ALTER of tables, views,
//! indexes, sequences, types, schemas; TRUNCATE; COMMENT; GRANT — for the session's
//! statements and for those a PL/pgSQL function runs (its own or through EXECUTE).

use std::cell::RefCell;

use sqlparser::ast;

use crate::bind::*;
use crate::error::{code, Result, SqlError};
use crate::exec::init::InitPlans;
use crate::exec::select::{execute_select, Exec};
use crate::exec::write::Writer;
use crate::expr::{Ctx, Env};
use crate::session::Output;

impl Writer<'_> {
    /// Runs `stmt` when it is one of the schema statements above (`None` otherwise).
    pub(crate) fn ddl(
        &mut self,
        stmt: &ast::Statement,
        database: &str,
        system: &dyn SystemTables,
        env: &dyn Env,
    ) -> Result<Option<Output>> {
        use ast::Statement as S;
        let ctx = Ctx::new(&[], env);
        // A planner for the statement's queries (a view's, CREATE TABLE AS's).
        macro_rules! planner {
            () => {
                Planner::new(&mut self.ts.txn, &self.db.catalog, database, vec![], system, env)
            };
        }
        // CREATE TEMP TABLE [AS] (a function's: the session rewrites its own before coming
        // here): a table of the session's temporary schema, which the statement's later
        // parts then find.
        if let S::CreateTable(ct) = stmt {
            if let Some(temp) = self.temp_table(ct, database)? {
                let out = self.ddl(&S::CreateTable(temp), database, system, env)?;
                self.refresh_search_path(database)?;
                return Ok(out);
            }
        }
        let out = match stmt {
            S::CreateTable(ct) if ct.query.is_some() => {
                let query = ct.query.as_ref().expect("matched");
                crate::exec::ddl::refuse_table_kinds(ct)?;
                let name = new_object_name(&ct.name)?;
                if self.table_name_taken(database, &name, ct.if_not_exists)? {
                    return Ok(Some(Output::Command("CREATE TABLE AS".into())));
                }
                // The parser reads a column list only with types, which PostgreSQL refuses
                // here (the list of names alone does not parse).
                if !ct.columns.is_empty() {
                    return Err(SqlError::syntax(
                        "CREATE TABLE … AS takes its columns from the query, without types",
                    ));
                }
                let plan = planner!().query(query, None)?;
                let columns = plan.columns.clone();
                // WITH NO DATA: the columns only.
                if ct.with_data.as_ref().is_some_and(|d| !d.data) {
                    self.create_table_as(&name, columns, vec![], database, &ctx)?;
                    return Ok(Some(Output::Command("CREATE TABLE AS".into())));
                }
                let limits = self.limits.clone();
                let plan =
                    InitPlans::with(&mut self.ts.txn, &ctx, &limits, |init| init.select(plan))?;
                let rows = {
                    let cell = RefCell::new(&mut self.ts.txn);
                    let exec = Exec::new(&cell, &limits);
                    let ctx = Ctx { runner: Some(&exec), ..ctx };
                    execute_select(&plan, &cell, &ctx, &limits)?
                };
                self.create_table_as(&name, columns, rows, database, &ctx)
            }
            S::CreateTable(ct) => self.create_table(ct, database, env),
            S::CreateView(cv) => {
                if cv.materialized || cv.temporary || cv.or_alter || cv.to.is_some() {
                    return Err(SqlError::unsupported("this CREATE VIEW"));
                }
                let name = new_object_name(&cv.name)?;
                let aliases = cv.columns.iter().map(|c| ident(&c.name)).collect();
                let view = crate::exec::views::plan_new_view(
                    &mut planner!(),
                    database,
                    &name,
                    aliases,
                    &cv.query,
                )?;
                self.create_view(view, cv.or_replace)
            }
            S::Drop { object_type: ast::ObjectType::Schema, if_exists, names, cascade, .. } => {
                let out = self.drop_schemas(names, *if_exists, *cascade, database);
                self.report_cascade();
                out
            }
            S::Drop {
                object_type: ast::ObjectType::Sequence, if_exists, names, cascade, ..
            } => {
                let out = self.drop_sequences(names, *if_exists, *cascade, database);
                self.report_cascade();
                out
            }
            S::Drop { object_type: ast::ObjectType::View, if_exists, names, cascade, .. } => {
                let names = names.iter().map(object_name).collect::<Result<Vec<_>>>()?;
                let out = self.drop_views(&names, *if_exists, *cascade, database);
                self.report_cascade();
                out
            }
            S::Drop {
                object_type: ast::ObjectType::MaterializedView,
                if_exists,
                names,
                cascade,
                ..
            } => {
                let out = self.drop_matviews(names, *if_exists, *cascade, database);
                self.report_cascade();
                out
            }
            S::Drop { object_type: ast::ObjectType::Type, if_exists, names, cascade, .. } => {
                let out = self.drop_types(names, *if_exists, *cascade, database);
                self.report_cascade();
                out
            }
            S::DropDomain(d) => {
                let cascade = matches!(d.drop_behavior, Some(ast::DropBehavior::Cascade));
                let out = self.drop_domain(&d.name, d.if_exists, cascade, database);
                self.report_cascade();
                out
            }
            S::CreateType { name, representation } => {
                self.create_type(name, representation.as_ref(), database)
            }
            S::AlterType(at) => self.alter_type(at, database),
            S::AlterSchema(a) => self.alter_schema(a, database),
            S::Drop { object_type, if_exists, names, cascade, .. } => {
                let out = self.drop(*object_type, *if_exists, *cascade, names, database);
                self.report_cascade();
                out
            }
            S::CreateSequence {
                temporary: false,
                if_not_exists,
                name,
                data_type,
                sequence_options,
                owned_by,
            } => self.create_sequence(
                *if_not_exists,
                name,
                data_type.as_ref(),
                sequence_options,
                owned_by.as_ref(),
                database,
            ),
            S::CreateIndex(ci) => self.create_index(ci, database),
            S::DropFunction(df) => self.drop_functions(
                df.if_exists,
                &df.func_desc,
                df.drop_behavior.as_ref(),
                database,
                false,
            ),
            S::DropProcedure { if_exists, proc_desc, drop_behavior } => {
                self.drop_functions(*if_exists, proc_desc, drop_behavior.as_ref(), database, true)
            }
            S::AlterFunction(af) => self.alter_function(af, database),
            S::DropTrigger(dt) => self.drop_trigger(dt, database),
            S::AlterIndex { name, operation } => self.rename_index(name, operation, database),
            S::CreateSchema { schema_name, if_not_exists, .. } => {
                self.create_schema(schema_name, *if_not_exists, database)
            }
            S::CreateExtension(ce) => self.create_extension(ce, database),
            S::DropExtension(de) => self.drop_extensions(de, database),
            S::Grant(g) => {
                self.grant(g.objects.as_ref(), &g.grantees, g.with_grant_option, "GRANT", database)
            }
            S::Revoke(r) => self.grant(r.objects.as_ref(), &r.grantees, false, "REVOKE", database),
            S::Comment { object_type, object_name, comment, if_exists } => {
                self.comment_on(object_type, object_name, comment.as_deref(), *if_exists, database)
            }
            S::AlterTable(at) => {
                let out = self.alter_table(at, database, env)?;
                let name = object_name(&at.name)?;
                // The views that read a dropped column go with it under CASCADE; without it
                // they make the drop fail, as in PostgreSQL.
                let mut dropped = Vec::new();
                let mut cascade = false;
                for op in &at.operations {
                    if let ast::AlterTableOperation::DropColumn {
                        column_names,
                        drop_behavior,
                        ..
                    } = op
                    {
                        dropped.extend(column_names.iter().map(ident));
                        cascade |= matches!(drop_behavior, Some(ast::DropBehavior::Cascade));
                    }
                }
                if !dropped.is_empty() {
                    let broken: Vec<String> =
                        crate::exec::views::broken_views(&mut planner!(), &name)?
                            .into_iter()
                            .map(|(v, _)| v)
                            .collect();
                    self.drop_broken_views(&name, &dropped[0], &broken, cascade, database)?;
                    self.report_cascade();
                }
                crate::exec::views::recheck_views(&mut planner!(), &name)?;
                // A renamed table's views now read it by its new name.
                for op in &at.operations {
                    if let ast::AlterTableOperation::RenameTable {
                        table_name:
                            ast::RenameTableNameKind::To(new) | ast::RenameTableNameKind::As(new),
                    } = op
                    {
                        let new = crate::exec::schema::renamed(&name, new)?;
                        crate::exec::views::recheck_views(&mut planner!(), &new)?;
                    }
                }
                Ok(out)
            }
            S::Truncate(t) => {
                let restart = matches!(t.identity, Some(ast::TruncateIdentityOption::Restart));
                let mut tables = Vec::new();
                for target in &t.table_names {
                    let name = object_name(&target.name)?;
                    let table = self.db.catalog.table_or_err(&mut self.ts.txn, database, &name)?;
                    if table.matview.is_some() {
                        return Err(SqlError::new(
                            code::WRONG_OBJECT_TYPE,
                            format!("\"{}\" is not a table", crate::catalog::unqualified(&name)),
                        ));
                    }
                    // A partitioned table's rows are its partitions'.
                    if table.partitioning.is_some() {
                        tables.extend(self.leaves_of(&table, 0)?);
                    }
                    tables.push(table);
                }
                let named = tables.len();
                // A table referenced by a foreign key goes only with its referencing tables
                // (which CASCADE adds, transitively).
                let cascade = matches!(t.cascade, Some(ast::CascadeOption::Cascade));
                let mut i = 0;
                while i < tables.len() {
                    for r in tables[i].referenced_by.clone() {
                        if tables.iter().any(|x| x.name == r.table) {
                            continue;
                        }
                        if !cascade {
                            return Err(SqlError::new(
                                code::FEATURE_NOT_SUPPORTED,
                                "cannot truncate a table referenced in a foreign key constraint",
                            )
                            .detail(format!(
                                "Table \"{}\" references \"{}\".",
                                r.table, tables[i].name
                            ))
                            .hint(format!(
                                "Truncate table \"{}\" at the same time, or use TRUNCATE ... CASCADE.",
                                r.table
                            )));
                        }
                        tables.push(self.db.catalog.table_or_err(
                            &mut self.ts.txn,
                            database,
                            &r.table,
                        )?);
                    }
                    i += 1;
                }
                // The tables CASCADE added, each told to the client as PostgreSQL does.
                for table in tables.iter().skip(named) {
                    let name = crate::catalog::unqualified(&table.name);
                    self.notice(format!("truncate cascades to table \"{name}\""));
                }
                for table in &tables {
                    self.truncate(table)?;
                    if restart {
                        self.restart_owned_sequences(table)?;
                    }
                }
                Ok(Output::Command("TRUNCATE TABLE".into()))
            }
            _ => return Ok(None),
        };
        out.map(Some)
    }
}
