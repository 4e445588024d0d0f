//! Domains (`CREATE DOMAIN year AS integer CONSTRAINT year_check CHECK (VALUE >= 1901)`):
//! their constraints bound and checked.
//!
//! A domain is its base type with constraints: Kiln gives every expression of a domain its
//! base type (as PostgreSQL describes a domain column to clients by its base type), and
//! checks the domain's NOT NULL and CHECK constraints where a value takes the domain — a
//! value written to a column declared with it (INSERT, UPDATE, COPY, ON CONFLICT DO UPDATE,
//! MERGE, foreign-key actions, after BEFORE triggers: [`crate::exec::write::Writer`]'s row
//! checks), and a cast to it (`x::year`, [`crate::expr::Expr::Domain`]). A CHECK is bound
//! over a row of one column, `VALUE`.

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::Planner;
use crate::catalog::{Column, Domain, Table};
use crate::error::{code, Result, SqlError};
use crate::expr::{Ctx, Expr};
use crate::types::Value;

/// A domain's constraints bound over a row of one column (its value).
#[derive(Debug, PartialEq)]
pub struct BoundDomain {
    /// The domain's name.
    pub name: String,
    /// NOT NULL.
    pub not_null: bool,
    /// The CHECK constraints: name and condition over `[value]`.
    pub checks: Vec<(String, Expr)>,
}

impl BoundDomain {
    /// Fails unless `v` meets every constraint (NOT NULL first, then each CHECK in order;
    /// a CHECK that is NULL passes).
    pub fn check(&self, v: &Value, ctx: &Ctx) -> Result<()> {
        if v.is_null() {
            if self.not_null {
                return Err(null_violation(&self.name));
            }
            if self.checks.is_empty() {
                return Ok(());
            }
        }
        let row = std::slice::from_ref(v);
        for (name, cond) in &self.checks {
            if cond.eval(row, ctx)?.as_bool()? == Some(false) {
                return Err(check_violation(&self.name, name));
            }
        }
        Ok(())
    }
}

/// 23502: a NULL for a NOT NULL domain.
pub fn null_violation(domain: &str) -> SqlError {
    SqlError::new(code::NOT_NULL, format!("domain {domain} does not allow null values"))
        .datatype(domain)
}

/// 23514: a value that fails a domain's CHECK.
pub fn check_violation(domain: &str, constraint: &str) -> SqlError {
    SqlError::new(
        code::CHECK,
        format!("value for domain {domain} violates check constraint \"{constraint}\""),
    )
    .datatype(domain)
    .with_constraint(constraint)
}

/// The one-column table a domain's CHECK is bound over: `VALUE` of its base type.
fn value_table(domain: &Domain) -> Table {
    Table {
        id: 0,
        database: String::new(),
        name: domain.name.clone(),
        columns: vec![Column::new("value".into(), domain.base)],
        primary_key: Vec::new(),
        primary_key_name: None,
        indexes: Vec::new(),
        options: Vec::new(),
        foreign_keys: Vec::new(),
        referenced_by: Vec::new(),
        checks: Vec::new(),
        last_attnum: 0,
        comment: None,
        triggers: Vec::new(),
        matview: None,
        partitioning: None,
        partition_of: None,
    }
}

/// Binds a CHECK condition of `domain` over its value: boolean, reading `VALUE` only, no
/// subqueries, parameters or sequence functions (as a table's CHECK).
pub fn bind_check(planner: &mut Planner, domain: &Domain, e: &ast::Expr) -> Result<Expr> {
    crate::exec::constraints::bind_check(planner, &value_table(domain), e)
}

/// Binds every constraint of `domain`.
pub fn bind(planner: &mut Planner, domain: &Domain) -> Result<BoundDomain> {
    let mut checks = Vec::with_capacity(domain.checks.len());
    for c in &domain.checks {
        let parsed = crate::parse::parse_expr(&c.expr).map_err(|e| {
            SqlError::new(
                code::DATA_CORRUPTED,
                format!("stored CHECK {} of domain {} does not parse: {e}", c.expr, domain.name),
            )
        })?;
        checks.push((c.name.clone(), bind_check(planner, domain, &parsed)?));
    }
    Ok(BoundDomain { name: domain.name.clone(), not_null: domain.not_null, checks })
}

/// `Expr::Domain` of `e`: its value, once the domain's constraints hold for it.
pub fn checked(e: Expr, bound: BoundDomain) -> Expr {
    if !bound.not_null && bound.checks.is_empty() {
        return e;
    }
    Expr::Domain(Box::new(e), Arc::new(bound))
}

/// Moves a condition bound over `[value]` onto column `column` of a table's row.
pub fn on_column(cond: Expr, column: usize) -> Result<Expr> {
    cond.map(&mut |x| Ok(if x == Expr::Column(0) { Expr::Column(column) } else { x }))
}
