//! `CREATE DOMAIN`, `ALTER DOMAIN` and `DROP DOMAIN` (see [`crate::domains`]).
//!
//! A domain's definition lives in the catalog and, copied, in every table column declared
//! with it ([`crate::catalog::Column::domain`]); a change to the domain rewrites those
//! copies in the same transaction, so a table's row checks always see the domain as its
//! transaction does. A constraint added to a domain in use is first checked against the
//! values the columns hold (unless `NOT VALID`), as PostgreSQL checks it.

use sqlparser::ast;

use crate::bind::{ident, stored_text};
use crate::catalog::{Column, Domain, DomainCheck, Table};
use crate::encoding::decode_row;
use crate::error::{code, Result, SqlError};
use crate::exec::sequences::default_stored;
use crate::exec::write::Writer;
use crate::expr::{Ctx, Env};
use crate::parse::domain::{AlterDomain, AlterDomainAction, CreateDomain, DomainConstraint};
use crate::pg::system::oid;
use crate::session::Output;
use crate::types::{DataType, Value};

/// A domain's catalog name: domains live in schema `public`, as Kiln's enum types do.
fn domain_name(name: &ast::ObjectName) -> Result<String> {
    let name = crate::bind::name_as_written(name)?;
    if name.contains('.') {
        return Err(SqlError::unsupported(format!(
            "the domain {name}, in a schema other than public"
        ))
        .hint("Kiln keeps domains in schema public: name the domain without a schema."));
    }
    Ok(name)
}

/// 42704 for a domain that does not exist.
fn no_domain(name: &str) -> SqlError {
    SqlError::new(code::UNDEFINED_OBJECT, format!("type \"{name}\" does not exist"))
}

/// 42704 for a constraint a domain does not have.
fn no_constraint(constraint: &str, domain: &str) -> SqlError {
    SqlError::new(
        code::UNDEFINED_OBJECT,
        format!("constraint \"{constraint}\" of domain \"{domain}\" does not exist"),
    )
}

impl Writer<'_> {
    /// The type of a column declared as `dt`: the type named, or a domain's base type with
    /// the domain (which the column keeps a copy of).
    pub(crate) fn column_type(
        &mut self,
        dt: &ast::DataType,
        database: &str,
    ) -> Result<(DataType, Option<Box<Domain>>)> {
        let catalog = &self.db.catalog;
        if let Some(d) = crate::bind::domain_named(dt, catalog, &mut self.ts.txn, database)? {
            return Ok((d.base, Some(Box::new(d))));
        }
        Ok((crate::bind::resolve_type(dt, catalog, &mut self.ts.txn, database)?, None))
    }

    /// A new column `name` declared as `dt` (CREATE TABLE, ADD COLUMN), and the integer type
    /// of a `serial` one, whose values its own sequence gives.
    pub(crate) fn new_column(
        &mut self,
        name: String,
        dt: &ast::DataType,
        database: &str,
    ) -> Result<(Column, Option<DataType>)> {
        if let Some(int) = crate::exec::sequences::serial_type(dt) {
            return Ok((Column::new(name, int), Some(int)));
        }
        let (ty, domain) = self.column_type(dt, database)?;
        let mut col = Column::new(name, ty);
        col.domain = domain;
        Ok((col, None))
    }

    /// The domain named `name`, or 42704 (42809 for another kind of type).
    fn domain_or_err(&mut self, database: &str, name: &str) -> Result<Domain> {
        if let Some(d) = self.db.catalog.domain(&mut self.ts.txn, database, name)? {
            return Ok(d);
        }
        if self.db.catalog.enum_type(&mut self.ts.txn, database, name)?.is_some()
            || crate::bind::reg::type_by_name(name).is_some()
        {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("\"{name}\" is not a domain"),
            ));
        }
        Err(no_domain(name))
    }

    /// The columns declared with domain `oid`: each table and its columns' positions.
    fn domain_columns(&mut self, database: &str, oid: u32) -> Result<Vec<(Table, Vec<usize>)>> {
        let mut out = Vec::new();
        for t in self.db.catalog.tables(&mut self.ts.txn, database)? {
            let cols: Vec<usize> = (0..t.columns.len())
                .filter(|&i| t.columns[i].domain.as_ref().is_some_and(|d| d.oid == oid))
                .collect();
            if !cols.is_empty() {
                out.push(((*t).clone(), cols));
            }
        }
        // The newest first, as PostgreSQL lists dependent columns.
        out.sort_by_key(|(t, _)| std::cmp::Reverse(t.id));
        for (_, cols) in &mut out {
            cols.reverse();
        }
        Ok(out)
    }

    /// Calls `f` on every value stored in a column declared with domain `oid`, with the
    /// table and column; the first error stops it.
    fn each_domain_value(
        &mut self,
        database: &str,
        oid: u32,
        mut f: impl FnMut(&Value, &Table, usize) -> Result<()>,
    ) -> Result<()> {
        for (t, cols) in self.domain_columns(database, oid)? {
            let width = t.columns.len();
            self.each_row(&t.keyspace(), |_, _, raw| {
                let row = decode_row(&raw, width)?;
                for &c in &cols {
                    f(&row[c], &t, c)?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Stores `new` (under `old_name` before a rename) and gives every column declared with
    /// the domain the new copy.
    fn put_domain_everywhere(
        &mut self,
        database: &str,
        old_name: &str,
        new: &Domain,
    ) -> Result<()> {
        if old_name != new.name {
            self.db.catalog.delete_domain(&mut self.ts.txn, database, old_name)?;
        }
        self.db.catalog.put_domain(&mut self.ts.txn, database, new)?;
        for (mut t, cols) in self.domain_columns(database, new.oid)? {
            for c in cols {
                t.columns[c].domain = Some(Box::new(new.clone()));
            }
            self.db.catalog.put_table(&mut self.ts.txn, &t)?;
        }
        Ok(())
    }

    /// Binds a CHECK of `domain` (boolean, reading VALUE only) and names it: as given
    /// (42710 when the domain has it already) or `<domain>_check`, `<domain>_check1`, ….
    fn domain_check(
        &mut self,
        database: &str,
        domain: &Domain,
        name: Option<&ast::Ident>,
        e: &ast::Expr,
        not_valid: bool,
        env: &dyn Env,
    ) -> Result<(DomainCheck, crate::expr::Expr)> {
        let mut planner = self.definition_planner(database, env);
        let bound = crate::domains::bind_check(&mut planner, domain, e)?;
        let taken = |n: &str| domain.checks.iter().any(|c| c.name == n);
        let name = match name.map(ident) {
            Some(n) if taken(&n) => {
                return Err(SqlError::new(
                    code::DUPLICATE_OBJECT,
                    format!("constraint \"{n}\" for domain \"{}\" already exists", domain.name),
                ))
            }
            Some(n) => n,
            None => {
                let base = format!("{}_check", domain.name);
                let mut n = base.clone();
                let mut i = 0;
                while taken(&n) {
                    i += 1;
                    n = format!("{base}{i}");
                }
                n
            }
        };
        let id = self.db.catalog.next_id(&mut self.ts.txn)?;
        // `VALUE` is a keyword: kept in capitals, as PostgreSQL shows it.
        let mut e = e.clone();
        let _ = ast::visit_expressions_mut(&mut e, |x| {
            if let ast::Expr::Identifier(i) = x {
                if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("value") {
                    i.value = "VALUE".into();
                }
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        let check =
            DomainCheck { name, expr: stored_text(&e), oid: oid::object(id) as u32, not_valid };
        Ok((check, bound))
    }

    /// 23514 unless every value stored in a column of `domain` meets `cond` (bound over
    /// `[value]`), as PostgreSQL checks a constraint added to a domain in use.
    fn check_stored_values(
        &mut self,
        database: &str,
        domain: &Domain,
        cond: &crate::expr::Expr,
        env: &dyn Env,
    ) -> Result<()> {
        let ctx = Ctx::new(&[], env);
        self.each_domain_value(database, domain.oid, |v, t, c| {
            if cond.eval(std::slice::from_ref(v), &ctx)?.as_bool()? == Some(false) {
                return Err(SqlError::new(
                    code::CHECK,
                    format!(
                        "column \"{}\" of table \"{}\" contains values that violate the new constraint",
                        t.columns[c].name,
                        crate::catalog::unqualified(&t.name)
                    ),
                )
                .column(&t.name, &t.columns[c].name));
            }
            Ok(())
        })
    }

    /// `CREATE DOMAIN name [AS] type [DEFAULT e] [[CONSTRAINT n] {NOT NULL | NULL | CHECK
    /// (e)}] …`.
    pub(crate) fn create_domain(
        &mut self,
        d: &CreateDomain,
        database: &str,
        env: &dyn Env,
    ) -> Result<Output> {
        let name = domain_name(&d.name)?;
        self.type_name_free(database, &name)?;
        if let Some(c) = &d.collation {
            let c = crate::bind::name_as_written(c)?;
            if c != "default" {
                return Err(SqlError::unsupported(format!("the collation {c}")).hint(
                    "Kiln compares strings by their bytes (the C collation), whatever is asked.",
                ));
            }
        }
        if let Some(over) =
            crate::bind::domain_named(&d.data_type, &self.db.catalog, &mut self.ts.txn, database)?
        {
            return Err(SqlError::unsupported(format!("a domain over the domain {}", over.name))
                .hint(
                    "Declare the domain over the other domain's base type, with its constraints.",
                ));
        }
        let base =
            crate::bind::resolve_type(&d.data_type, &self.db.catalog, &mut self.ts.txn, database)?;
        if base.is_enum() {
            return Err(SqlError::unsupported(format!(
                "a domain over the enum type {}",
                base.sql_name()
            )));
        }
        if matches!(base, crate::types::DataType::Unknown) {
            return Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!("\"{}\" is not a valid base type for a domain", base.sql_name()),
            ));
        }
        let id = self.db.catalog.next_id(&mut self.ts.txn)?;
        let mut domain = Domain {
            oid: oid::object(id) as u32,
            name: name.clone(),
            base,
            not_null: false,
            default: None,
            checks: Vec::new(),
            comment: None,
        };
        if let Some(e) = &d.default {
            self.bind_default_expr(database, e, base, env)?;
            domain.default = Some(default_stored(&stored_text(e), database));
        }
        let mut nullness: Option<bool> = None;
        for c in &d.constraints {
            match c {
                DomainConstraint::NotNull(_, not_null) => {
                    if nullness.is_some_and(|n| n != *not_null) {
                        return Err(SqlError::syntax("conflicting NULL/NOT NULL constraints"));
                    }
                    nullness = Some(*not_null);
                }
                DomainConstraint::Check(cname, e, _) => {
                    let (check, _) =
                        self.domain_check(database, &domain, cname.as_ref(), e, false, env)?;
                    domain.checks.push(check);
                }
            }
        }
        domain.not_null = nullness == Some(true);
        self.db.catalog.put_domain(&mut self.ts.txn, database, &domain)?;
        Ok(Output::Command("CREATE DOMAIN".into()))
    }

    /// `ALTER DOMAIN name …`.
    pub(crate) fn alter_domain(
        &mut self,
        a: &AlterDomain,
        database: &str,
        env: &dyn Env,
    ) -> Result<Output> {
        let name = domain_name(&a.name)?;
        let old = self.domain_or_err(database, &name)?;
        let mut new = old.clone();
        let done = || Ok(Output::Command("ALTER DOMAIN".into()));
        match &a.action {
            AlterDomainAction::Default(None) => new.default = None,
            AlterDomainAction::Default(Some(e)) => {
                self.bind_default_expr(database, e, new.base, env)?;
                new.default = Some(default_stored(&stored_text(e), database));
            }
            AlterDomainAction::NotNull(false) => new.not_null = false,
            AlterDomainAction::NotNull(true)
            | AlterDomainAction::Add(DomainConstraint::NotNull(_, true)) => {
                if !old.not_null {
                    self.each_domain_value(database, old.oid, |v, t, c| {
                        if v.is_null() {
                            return Err(SqlError::new(
                                code::NOT_NULL,
                                format!(
                                    "column \"{}\" of table \"{}\" contains null values",
                                    t.columns[c].name,
                                    crate::catalog::unqualified(&t.name)
                                ),
                            )
                            .column(&t.name, &t.columns[c].name));
                        }
                        Ok(())
                    })?;
                }
                new.not_null = true;
            }
            AlterDomainAction::Add(DomainConstraint::NotNull(_, false)) => {
                return Err(SqlError::syntax("syntax error at or near \"NULL\""));
            }
            AlterDomainAction::Add(DomainConstraint::Check(cname, e, not_valid)) => {
                let (check, bound) =
                    self.domain_check(database, &old, cname.as_ref(), e, *not_valid, env)?;
                if !not_valid {
                    self.check_stored_values(database, &old, &bound, env)?;
                }
                new.checks.push(check);
            }
            AlterDomainAction::DropConstraint(c, if_exists) => {
                let c = ident(c);
                match new.checks.iter().position(|x| x.name == c) {
                    Some(i) => {
                        new.checks.remove(i);
                    }
                    None if *if_exists => {
                        self.notice(format!(
                            "constraint \"{c}\" of domain \"{name}\" does not exist, skipping"
                        ));
                        return done();
                    }
                    None => return Err(no_constraint(&c, &name)),
                }
            }
            AlterDomainAction::RenameConstraint(from, to) => {
                let (from, to) = (ident(from), ident(to));
                let i = new
                    .checks
                    .iter()
                    .position(|x| x.name == from)
                    .ok_or_else(|| no_constraint(&from, &name))?;
                if new.checks.iter().any(|x| x.name == to) {
                    return Err(SqlError::new(
                        code::DUPLICATE_OBJECT,
                        format!("constraint \"{to}\" for domain \"{name}\" already exists"),
                    ));
                }
                new.checks[i].name = to;
            }
            AlterDomainAction::ValidateConstraint(c) => {
                let c = ident(c);
                let i = new
                    .checks
                    .iter()
                    .position(|x| x.name == c)
                    .ok_or_else(|| no_constraint(&c, &name))?;
                if new.checks[i].not_valid {
                    let parsed = crate::parse::parse_expr(&new.checks[i].expr)?;
                    let mut planner = self.definition_planner(database, env);
                    let bound = crate::domains::bind_check(&mut planner, &old, &parsed)?;
                    self.check_stored_values(database, &old, &bound, env)?;
                    new.checks[i].not_valid = false;
                }
            }
            AlterDomainAction::OwnerTo => return done(),
            AlterDomainAction::SetSchema(s) => {
                let s = ident(s);
                if s == "public" {
                    return done();
                }
                return Err(if crate::exec::schema::SCHEMAS.contains(&s.as_str()) {
                    SqlError::unsupported(format!("moving a domain to schema {s}"))
                } else {
                    SqlError::new(code::UNDEFINED_SCHEMA, format!("schema \"{s}\" does not exist"))
                });
            }
            AlterDomainAction::RenameTo(to) => {
                let to = ident(to);
                self.type_name_free(database, &to)?;
                new.name = to;
            }
        }
        self.put_domain_everywhere(database, &name, &new)?;
        done()
    }

    /// `DROP DOMAIN [IF EXISTS] name [CASCADE | RESTRICT]`: with CASCADE the columns
    /// declared with it go too, as in PostgreSQL.
    pub(crate) fn drop_domain(
        &mut self,
        name: &ast::ObjectName,
        if_exists: bool,
        cascade: bool,
        database: &str,
    ) -> Result<Output> {
        let name = domain_name(name)?;
        let Some(domain) = self.db.catalog.domain(&mut self.ts.txn, database, &name)? else {
            if self.db.catalog.enum_type(&mut self.ts.txn, database, &name)?.is_some() {
                return Err(SqlError::new(
                    code::WRONG_OBJECT_TYPE,
                    format!("\"{name}\" is not a domain"),
                ));
            }
            if if_exists {
                self.skipping("00000", format!("type \"{name}\" does not exist"));
                return Ok(Output::Command("DROP DOMAIN".into()));
            }
            return Err(no_domain(&name));
        };
        let users = self.domain_columns(database, domain.oid)?;
        if !users.is_empty() {
            let mut lines = Vec::new();
            for (t, cols) in &users {
                for &c in cols {
                    lines.push(format!(
                        "column {} of table {} depends on type {name}",
                        t.columns[c].name, t.name
                    ));
                }
            }
            if !cascade {
                return Err(crate::exec::write::depended_on(&format!("type {name}"), &lines));
            }
            for (t, cols) in users {
                for &c in &cols {
                    self.cascade_to(format!("column {} of table {}", t.columns[c].name, t.name));
                }
                let Some(current) = self.db.catalog.table(&mut self.ts.txn, database, &t.name)?
                else {
                    continue;
                };
                let mut current = (*current).clone();
                for &c in &cols {
                    let column = t.columns[c].name.clone();
                    self.drop_column(&mut current, &column, true, true)?;
                }
                self.db.catalog.put_table(&mut self.ts.txn, &current)?;
            }
        }
        self.db.catalog.delete_domain(&mut self.ts.txn, database, &name)?;
        Ok(Output::Command("DROP DOMAIN".into()))
    }

    /// `COMMENT ON DOMAIN name IS 'text' | NULL`.
    pub(crate) fn comment_on_domain(
        &mut self,
        name: &ast::ObjectName,
        comment: Option<String>,
        database: &str,
    ) -> Result<Output> {
        let name = domain_name(name)?;
        let mut d = self.domain_or_err(database, &name)?;
        d.comment = comment;
        self.put_domain_everywhere(database, &name, &d)?;
        Ok(Output::Command("COMMENT".into()))
    }
}
