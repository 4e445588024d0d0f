//! Reading a view: its stored query is planned in place, as a derived table, with its own
//! scope (no enclosing query's columns or CTEs are visible to it).

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::query::derived_item;
use crate::bind::*;
use crate::catalog::View;
use crate::error::{code, Result, SqlError};
use crate::plan::*;

/// How many views may be read inside one another.
pub const VIEW_DEPTH_MAX: usize = 32;

/// How many view reads one statement may plan in all (each view read is planned in full).
pub const VIEW_EXPANSIONS_MAX: usize = 1024;

/// The stored query of `view`, parsed.
pub(crate) fn view_query(view: &View) -> Result<ast::Query> {
    let mut statements = crate::parse::parse(&view.query)?;
    match statements.pop() {
        Some(ast::Statement::Query(q)) if statements.is_empty() => Ok(*q),
        _ => Err(SqlError::new(
            code::DATA_CORRUPTED,
            format!("the stored query of view \"{}\" is not a query", view.name),
        )),
    }
}

impl Planner<'_> {
    /// Plans `query` as a view's query: nothing of the statement around it is in scope.
    /// A view's query names relations as the catalog does (a new view's query is qualified
    /// first, `search::qualify_query`), so it is read without the search path.
    pub(crate) fn plan_view_query(&mut self, name: &str, query: &ast::Query) -> Result<SelectPlan> {
        let _unsearched = crate::bind::search::install(None);
        if self.expanding.iter().any(|n| n == name) {
            return Err(SqlError::new(
                code::INVALID_OBJECT_DEFINITION,
                format!("infinite recursion detected in rules for relation \"{name}\""),
            ));
        }
        if self.expanding.len() >= VIEW_DEPTH_MAX {
            return Err(SqlError::new(
                code::STATEMENT_TOO_COMPLEX,
                format!("views are nested more than {VIEW_DEPTH_MAX} deep"),
            ));
        }
        self.expansions += 1;
        if self.expansions > VIEW_EXPANSIONS_MAX {
            return Err(SqlError::new(
                code::STATEMENT_TOO_COMPLEX,
                format!("the statement reads views more than {VIEW_EXPANSIONS_MAX} times"),
            ));
        }
        let outer = std::mem::take(&mut self.outer);
        let ctes = std::mem::take(&mut self.ctes);
        self.expanding.push(name.to_string());
        let plan = self.query(query, None);
        self.expanding.pop();
        self.outer = outer;
        self.ctes = ctes;
        plan
    }

    /// The FROM item that reads system view `name` (`crate::pg::views`), whose query is
    /// `sql`, named `alias`, its columns renamed by `rename`.
    pub(crate) fn system_view_item(
        &mut self,
        name: &str,
        sql: &str,
        alias: String,
        rename: &[String],
        offset: usize,
    ) -> Result<(FromItem, Vec<ScopeCol>)> {
        let query = match crate::parse::parse(sql)?.pop() {
            Some(ast::Statement::Query(q)) => *q,
            _ => return Err(SqlError::new(code::INTERNAL, format!("system view {name}"))),
        };
        let plan = self.plan_view_query(name, &query)?;
        let names = renamed(plan.columns.iter().map(|(n, _)| n.clone()).collect(), rename, &alias)?;
        Ok(derived_item(plan, Some(alias), &names, offset))
    }

    /// The FROM item that reads `view`, named `alias`, its columns renamed by `rename`.
    pub(crate) fn view_item(
        &mut self,
        view: &Arc<View>,
        alias: String,
        rename: &[String],
        offset: usize,
    ) -> Result<(FromItem, Vec<ScopeCol>)> {
        if !self.views.iter().any(|v| Arc::ptr_eq(v, view)) {
            self.views.push(view.clone());
        }
        let mut plan = self.plan_view_query(&view.name, &view_query(view)?)?;
        let n = view.columns.len();
        if plan.columns.len() < n || plan.columns[..n] != view.columns[..] {
            return Err(SqlError::new(
                code::NOT_IN_PREREQUISITE_STATE,
                format!("view \"{}\" no longer gives the columns it was created with", view.name),
            )
            .hint("Define it again with CREATE OR REPLACE VIEW."));
        }
        if plan.columns.len() > n {
            // Columns added to a table its `*` reads since: the view keeps its own.
            let (inner, _) = derived_item(plan, None, &[], 0);
            plan = SelectPlan::over(inner, view.columns.clone());
            plan.projection.truncate(n);
        }
        // Its columns show as the view's own, as PostgreSQL describes them.
        let oid = crate::pg::system::oid::object(view.id) as u32;
        plan.origins = (1..=n as i16).map(|i| Some((oid, i))).collect();
        let names = renamed(view.column_names(), rename, &alias)?;
        Ok(derived_item(plan, Some(alias), &names, offset))
    }
}

/// A view's column `names` with the first ones renamed by `rename` (an alias's column list).
fn renamed(mut names: Vec<String>, rename: &[String], alias: &str) -> Result<Vec<String>> {
    crate::bind::query::check_rename(Some(alias), rename.len(), names.len())?;
    names[..rename.len()].clone_from_slice(rename);
    Ok(names)
}
