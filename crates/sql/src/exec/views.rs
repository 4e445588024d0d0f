//! CREATE [OR REPLACE] VIEW, DROP VIEW, and what a view's dependencies forbid: dropping a
//! relation a view reads (unless CASCADE drops the view too) and changing a table so that a
//! view reading it would no longer give its columns.

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::view::view_query;
use crate::bind::Planner;
use crate::bind::{ident, object_name};
use crate::catalog::{unqualified, View};
use crate::error::{code, Result, SqlError};
use crate::exec::write::Writer;
use crate::parse::sequence::{AlterView, AlterViewAction};
use crate::session::Output;

/// Plans `query` as the query of a new view `name` in `database`: its columns and what it
/// reads. The view's id is given when it is stored.
pub(crate) fn plan_new_view(
    planner: &mut Planner,
    database: &str,
    name: &str,
    aliases: Vec<String>,
    query: &sqlparser::ast::Query,
) -> Result<View> {
    // The names the search path resolves are kept with their schemas.
    let query = &crate::bind::search::qualify_query(query);
    let plan = planner.plan_view_query(name, query)?;
    if !planner.params.is_empty() {
        return Err(SqlError::new(code::UNDEFINED_PARAMETER, "there is no parameter $1"));
    }
    if aliases.len() > plan.columns.len() {
        return Err(SqlError::syntax("CREATE VIEW specifies more column names than columns"));
    }
    let mut depends_on: Vec<String> = planner.tables.iter().map(|t| t.name.clone()).collect();
    depends_on.extend(planner.views.iter().map(|v| v.name.clone()));
    depends_on.sort();
    depends_on.dedup();
    if depends_on.iter().any(|d| d == name) {
        return Err(SqlError::new(
            code::INVALID_OBJECT_DEFINITION,
            format!("infinite recursion detected in rules for relation \"{name}\""),
        ));
    }
    let view = View {
        id: 0,
        database: database.to_string(),
        name: name.to_string(),
        query: query.to_string(),
        columns: plan.columns,
        aliases,
        depends_on,
        comment: None,
        functions: {
            let mut called: Vec<String> = planner.functions.iter().map(|f| f.signature()).collect();
            called.sort();
            called.dedup();
            called
        },
    };
    let names = view.column_names();
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(SqlError::new(
                code::DUPLICATE_COLUMN,
                format!("column \"{n}\" specified more than once"),
            ));
        }
    }
    Ok(view)
}

/// Every view that reads relation `name`, directly or through other views, each once, the
/// readers of a view after it.
fn dependents(w: &mut Writer, database: &str, name: &str) -> Result<Vec<Arc<View>>> {
    let mut out: Vec<Arc<View>> = Vec::new();
    let mut i = 0;
    let mut next = w.db.catalog.views_on(&mut w.ts.txn, database, name)?;
    loop {
        for v in next {
            if !out.iter().any(|o| o.name == v.name) {
                out.push(v);
            }
        }
        if i == out.len() {
            return Ok(out);
        }
        let n = out[i].name.clone();
        next = w.db.catalog.views_on(&mut w.ts.txn, database, &n)?;
        i += 1;
    }
}

impl Writer<'_> {
    /// CREATE [OR REPLACE] VIEW.
    pub(crate) fn create_view(&mut self, mut view: View, or_replace: bool) -> Result<Output> {
        let database = view.database.clone();
        let old = self.db.catalog.view(&mut self.ts.txn, &database, &view.name)?;
        view.id = match &old {
            Some(old) if or_replace => {
                // The new query may only add columns after the old ones.
                let (was, now) = (old.column_names(), view.column_names());
                if now.len() < was.len() {
                    return Err(SqlError::new(
                        code::INVALID_TABLE_DEFINITION,
                        "cannot drop columns from view",
                    ));
                }
                for (i, name) in was.iter().enumerate() {
                    if now[i] != *name {
                        return Err(SqlError::new(
                            code::INVALID_TABLE_DEFINITION,
                            format!("cannot change name of view column \"{name}\" to \"{}\"", now[i]),
                        )
                        .hint("Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead."));
                    }
                    let (a, b) = (old.columns[i].1, view.columns[i].1);
                    if a != b {
                        return Err(SqlError::new(
                            code::INVALID_TABLE_DEFINITION,
                            format!(
                                "cannot change data type of view column \"{name}\" from {} to {}",
                                a.sql_name(),
                                b.sql_name()
                            ),
                        ));
                    }
                }
                // A replaced view keeps its comment, as in PostgreSQL.
                view.comment = old.comment.clone();
                old.id
            }
            _ => {
                // 42P07 when the name is taken (by this view too, without OR REPLACE).
                self.table_name_taken(&database, &view.name, false)?;
                self.db.catalog.next_id(&mut self.ts.txn)?
            }
        };
        self.db.catalog.put_view(&mut self.ts.txn, &view)?;
        Ok(Output::Command("CREATE VIEW".into()))
    }

    /// `ALTER VIEW [IF EXISTS] name {RENAME TO new | RENAME [COLUMN] a TO b | OWNER TO role}`
    /// (a view's owner is Kiln's one role: OWNER TO checks the view and changes nothing).
    pub(crate) fn alter_view(&mut self, a: &AlterView, database: &str) -> Result<Output> {
        let done = || Ok(Output::Command("ALTER VIEW".into()));
        let name = object_name(&a.name)?;
        let Some(view) = self.db.catalog.view(&mut self.ts.txn, database, &name)? else {
            if self.db.catalog.relation_exists(&mut self.ts.txn, database, &name)? {
                return Err(SqlError::new(
                    code::WRONG_OBJECT_TYPE,
                    format!("\"{}\" is not a view", unqualified(&name)),
                ));
            }
            let missing = format!("relation \"{name}\" does not exist");
            if a.if_exists {
                self.skipping("00000", missing);
                return done();
            }
            return Err(SqlError::new(code::UNDEFINED_TABLE, missing));
        };
        match &a.action {
            AlterViewAction::OwnerTo => {}
            AlterViewAction::RenameTo(new) => {
                let new = crate::exec::schema::renamed(&view.name, new)?;
                self.rename_view(&view, &new)?;
            }
            AlterViewAction::RenameColumn(old, new) => {
                self.rename_view_column(&view, &ident(old), &ident(new))?;
            }
        }
        done()
    }

    /// Renames a view; the views that read it read it under its new name.
    pub(crate) fn rename_view(&mut self, view: &View, new: &str) -> Result<()> {
        let db = view.database.clone();
        self.table_name_taken(&db, new, false)?;
        self.follow_rename_in_views(&db, &view.name, new)?;
        self.db.catalog.delete_view(&mut self.ts.txn, view)?;
        let mut renamed = view.clone();
        renamed.name = new.to_string();
        self.db.catalog.put_view(&mut self.ts.txn, &renamed)
    }

    /// `ALTER VIEW … RENAME COLUMN old TO new`: the view's column takes a new name (kept as
    /// its alias; the query stays as written). Refused while another view reads this one,
    /// as renaming a column another view reads is (the reader keeps its query's text).
    fn rename_view_column(&mut self, view: &View, old: &str, new: &str) -> Result<()> {
        let names = view.column_names();
        let Some(at) = names.iter().position(|n| n == old) else {
            return Err(SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("column \"{old}\" does not exist"),
            ));
        };
        if names.iter().any(|n| n == new) {
            return Err(SqlError::new(
                code::DUPLICATE_COLUMN,
                format!(
                    "column \"{new}\" of relation \"{}\" already exists",
                    unqualified(&view.name)
                ),
            ));
        }
        if let Some(reader) =
            self.db.catalog.views_on(&mut self.ts.txn, &view.database, &view.name)?.first()
        {
            return Err(SqlError::unsupported(format!(
                "renaming a column of view \"{}\", which view \"{}\" reads",
                view.name, reader.name
            )));
        }
        let mut renamed = view.clone();
        renamed.aliases = names;
        renamed.aliases[at] = new.to_string();
        self.db.catalog.put_view(&mut self.ts.txn, &renamed)
    }

    /// DROP VIEW.
    pub(crate) fn drop_views(
        &mut self,
        names: &[String],
        if_exists: bool,
        cascade: bool,
        database: &str,
    ) -> Result<Output> {
        for name in names {
            let Some(view) = self.db.catalog.view(&mut self.ts.txn, database, name)? else {
                if let Some(t) = self.db.catalog.table(&mut self.ts.txn, database, name)? {
                    let hint = match t.matview {
                        Some(_) => "Use DROP MATERIALIZED VIEW to remove a materialized view.",
                        None => "Use DROP TABLE to remove a table.",
                    };
                    return Err(SqlError::new(
                        code::WRONG_OBJECT_TYPE,
                        format!("\"{name}\" is not a view"),
                    )
                    .hint(hint));
                }
                if if_exists {
                    self.skipping("00000", format!("view \"{name}\" does not exist"));
                    continue;
                }
                return Err(SqlError::new(
                    code::UNDEFINED_TABLE,
                    format!("view \"{name}\" does not exist"),
                ));
            };
            self.drop_dependent_views("view", name, cascade, names, database)?;
            self.drop_dependent_matviews("view", name, cascade, names, database)?;
            self.db.catalog.delete_view(&mut self.ts.txn, &view)?;
        }
        Ok(Output::Command("DROP VIEW".into()))
    }

    /// After a column of `table` was dropped: the views that no longer plan (`broken`) go
    /// too with CASCADE (each told to the client), and without it make the drop fail (2BP01),
    /// naming the first and the views that read it, as PostgreSQL does.
    pub(crate) fn drop_broken_views(
        &mut self,
        table: &str,
        column: &str,
        broken: &[String],
        cascade: bool,
        database: &str,
    ) -> Result<()> {
        let Some(first) = broken.first() else { return Ok(()) };
        if !cascade {
            let mut lines =
                vec![format!("view {first} depends on column {column} of table {table}")];
            let chain = dependents(self, database, first)?;
            for v in &chain {
                let via = v
                    .depends_on
                    .iter()
                    .find(|d| *d == first || chain.iter().any(|x| x.name == **d))
                    .map_or("?", |s| s.as_str());
                lines.push(format!("view {} depends on view {via}", v.name));
            }
            let object = format!("column {column} of table {table}");
            return Err(crate::exec::write::depended_on(&object, &lines));
        }
        for v in broken {
            self.cascade_to(format!("view {v}"));
        }
        for v in broken {
            // A view an earlier one's CASCADE took is gone already.
            if let Some(view) = self.db.catalog.view(&mut self.ts.txn, database, v)? {
                self.drop_dependent_views("view", v, true, broken, database)?;
                self.db.catalog.delete_view(&mut self.ts.txn, &view)?;
            }
        }
        Ok(())
    }

    /// Before function or aggregate `f` goes: the views that call it go too with CASCADE
    /// (and the views reading those), and without it make the drop fail (2BP01), as in
    /// PostgreSQL.
    pub(crate) fn drop_views_calling(
        &mut self,
        f: &crate::catalog::Function,
        cascade: bool,
        database: &str,
    ) -> Result<()> {
        let signature = f.signature();
        let shown = signature.replace(", ", ",");
        let views: Vec<Arc<View>> = self
            .db
            .catalog
            .views(&mut self.ts.txn, database)?
            .into_iter()
            .filter(|v| v.functions.contains(&signature))
            .collect();
        if views.is_empty() {
            return Ok(());
        }
        if !cascade {
            let lines: Vec<String> = views
                .iter()
                .map(|v| format!("view {} depends on function {shown}", v.name))
                .collect();
            return Err(crate::exec::write::depended_on(&format!("function {shown}"), &lines));
        }
        for v in &views {
            // A view an earlier one's CASCADE took is gone already.
            if self.db.catalog.view(&mut self.ts.txn, database, &v.name)?.is_some() {
                self.cascade_to(format!("view {}", v.name));
                self.drop_dependent_views("view", &v.name, true, &[], database)?;
                self.db.catalog.delete_view(&mut self.ts.txn, v)?;
            }
        }
        Ok(())
    }

    /// Before relation `name` (a `kind`) goes: the views that read it go too with CASCADE,
    /// and without it make the drop fail (2BP01) unless they are being dropped as well.
    pub(crate) fn drop_dependent_views(
        &mut self,
        kind: &str,
        name: &str,
        cascade: bool,
        dropping: &[String],
        database: &str,
    ) -> Result<()> {
        let views = dependents(self, database, name)?;
        if !cascade && views.iter().any(|v| !dropping.contains(&v.name)) {
            // Each view and what it reads, as PostgreSQL lists the dependency chain.
            let lines: Vec<String> = views
                .iter()
                .map(|v| match v.depends_on.iter().find(|d| *d == name) {
                    Some(_) => format!("view {} depends on {kind} {name}", v.name),
                    None => {
                        let via = v.depends_on.iter().find(|d| views.iter().any(|x| x.name == **d));
                        format!("view {} depends on view {}", v.name, via.map_or("?", |s| s))
                    }
                })
                .collect();
            return Err(crate::exec::write::depended_on(&format!("{kind} {name}"), &lines));
        }
        if cascade {
            for v in &views {
                if !dropping.contains(&v.name) {
                    self.cascade_to(format!("view {}", v.name));
                }
                self.db.catalog.delete_view(&mut self.ts.txn, v)?;
            }
        }
        Ok(())
    }
}

/// After table `name` changed: every view that reads it must still give its columns, or the
/// change fails (2BP01), as PostgreSQL refuses to drop or retype a column a view uses.
pub(crate) fn recheck_views(planner: &mut Planner, name: &str) -> Result<()> {
    if let Some((view, reason)) = broken_views(planner, name)?.into_iter().next() {
        return Err(match reason {
            // The columns it reads are still there, with other types.
            None => SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                "cannot alter type of a column used by a view or rule",
            )
            .detail(format!("view {view} depends on table {name}")),
            Some(reason) => SqlError::new(
                code::DEPENDENT_OBJECTS,
                format!("cannot alter table {name} because view {view} depends on it"),
            )
            .detail(format!("view {view}: {reason}"))
            .hint("Drop the view first, or change the table so that the view still reads it."),
        });
    }
    Ok(())
}

/// The views reading table `name` that no longer give their columns: each with why it
/// cannot be planned, or None when it plans but its columns' types changed.
pub(crate) fn broken_views(
    planner: &mut Planner,
    name: &str,
) -> Result<Vec<(String, Option<String>)>> {
    let mut broken = Vec::new();
    for view in planner.catalog.views_on(planner.txn, planner.db, name)? {
        let fits = view_query(&view).and_then(|q| {
            let plan = planner.plan_view_query(&view.name, &q)?;
            let n = view.columns.len();
            Ok(plan.columns.len() >= n && plan.columns[..n] == view.columns[..])
        });
        match fits {
            Ok(true) => {}
            Ok(false) => broken.push((view.name.clone(), None)),
            Err(e) => broken.push((view.name.clone(), Some(e.message))),
        }
    }
    Ok(broken)
}

/// A view's query with table `old` renamed `new`: in its FROM items and in the column
/// references qualified by the table's name (`old.a`, `public.old.a`, `old.*`). None when a
/// name in the query could mean something else (an alias or a common table expression
/// named `old`), where renaming by text would change what the query reads. Whatever this
/// gives is planned again afterwards and must give the view's columns (`recheck_views`).
pub(crate) fn rename_table_in_query(q: &ast::Query, old: &str, new: &str) -> Option<ast::Query> {
    use std::ops::ControlFlow;

    use sqlparser::ast::{VisitMut, VisitorMut};

    struct Rename<'n> {
        old: &'n str,
        new: ast::Ident,
        shadowed: bool,
    }
    impl Rename<'_> {
        fn is_old(&self, id: &ast::Ident) -> bool {
            crate::bind::ident(id) == self.old
        }
        /// `[public.]old` as the leading parts of a name of `width` more parts.
        fn rename_qualifier(&self, parts: &mut [ast::Ident], width: usize) {
            let n = parts.len();
            if n < width + 1 {
                return;
            }
            let at = n - width - 1;
            let schema_ok = at == 0 || (at == 1 && crate::bind::ident(&parts[0]) == "public");
            if schema_ok && self.is_old(&parts[at]) {
                parts[at] = self.new.clone();
            }
        }
        fn set_expr(&mut self, body: &mut ast::SetExpr) {
            match body {
                ast::SetExpr::Select(s) => {
                    for item in &mut s.projection {
                        if let ast::SelectItem::QualifiedWildcard(
                            ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                            _,
                        ) = item
                        {
                            let mut parts: Vec<ast::Ident> =
                                n.0.iter().filter_map(|p| p.as_ident().cloned()).collect();
                            if parts.len() == n.0.len() {
                                self.rename_qualifier(&mut parts, 0);
                                *n = ast::ObjectName::from(parts);
                            }
                        }
                    }
                }
                ast::SetExpr::SetOperation { left, right, .. } => {
                    self.set_expr(left);
                    self.set_expr(right);
                }
                _ => {}
            }
        }
    }
    impl VisitorMut for Rename<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
            if let Some(with) = &q.with {
                self.shadowed |= with.cte_tables.iter().any(|c| self.is_old(&c.alias.name));
            }
            self.set_expr(&mut q.body);
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, t: &mut ast::TableFactor) -> ControlFlow<()> {
            let alias = match t {
                ast::TableFactor::Table { name, alias, .. } => {
                    let mut parts: Vec<ast::Ident> =
                        name.0.iter().filter_map(|p| p.as_ident().cloned()).collect();
                    if parts.len() == name.0.len() {
                        self.rename_qualifier(&mut parts, 0);
                        *name = ast::ObjectName::from(parts);
                    }
                    alias.as_ref()
                }
                ast::TableFactor::Derived { alias, .. }
                | ast::TableFactor::Function { alias, .. }
                | ast::TableFactor::UNNEST { alias, .. }
                | ast::TableFactor::NestedJoin { alias, .. } => alias.as_ref(),
                _ => None,
            };
            self.shadowed |= alias.is_some_and(|a| self.is_old(&a.name));
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
            if let ast::Expr::CompoundIdentifier(parts) = e {
                self.rename_qualifier(parts, 1);
            }
            ControlFlow::Continue(())
        }
    }
    let plain = new.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !new.starts_with(|c: char| c.is_ascii_digit());
    let new = if plain { ast::Ident::new(new) } else { ast::Ident::with_quote('"', new) };
    let mut renamer = Rename { old, new, shadowed: false };
    let mut q = q.clone();
    let _ = q.visit(&mut renamer);
    (!renamer.shadowed).then_some(q)
}
