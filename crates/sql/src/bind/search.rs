//! Where unqualified relation names are found: the `search_path`.
//!
//! A relation of a schema made with CREATE SCHEMA has the catalog name `schema.name`, one of
//! `public` its bare name (see [`crate::catalog::schema_of`]). With the default path
//! (`"$user", public`), or any path that names no created schema, an unqualified name is a
//! relation of `public`, as it always was, and nothing here is read. When the path in force
//! names created schemas (`SET search_path TO app, public`), the session installs a
//! [`SearchPath`] for the statement: [`resolve`] then gives an unqualified name the catalog
//! name of the first relation of that name in the path's schemas, in order (or its bare name,
//! when none has it: a relation of `public` when the path names `public`, a system relation
//! else; a relation of `public` that a path without `public` leaves out is not found, as in
//! PostgreSQL), and [`creation_name`] places a new relation in the path's first existing
//! schema. The path is read once per statement: the relations it can find are listed then,
//! so the cost is paid only by sessions whose path names created schemas.
//!
//! `"$user"` is not searched (a schema named after the session's user is found only by its
//! name). A view's query is stored with the names it resolved qualified
//! ([`qualify_query`]), so a view reads the same relations whatever path its readers have.

use std::cell::RefCell;
use std::collections::HashSet;
use std::ops::ControlFlow;
use std::rc::Rc;

use kiln_engine::Transaction;
use sqlparser::ast;

use crate::catalog::{qualified, schema_of, Catalog};
use crate::error::Result;

/// The schemas of a path that names created schemas, and the relations they hold.
#[derive(Debug)]
pub(crate) struct SearchPath {
    /// The path's existing schemas, in order (`public` among them where the path names it).
    schemas: Vec<String>,
    /// The catalog names of the relations (tables, views, sequences, indexes) in them.
    relations: HashSet<String>,
    /// `public`'s relations when the path leaves `public` out: names it must not find.
    hidden: HashSet<String>,
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<SearchPath>>> = const { RefCell::new(None) };
}

/// The path installed for a statement; the one before comes back when it is dropped.
pub(crate) struct Installed(Option<Rc<SearchPath>>);

impl Drop for Installed {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Installs `path` (none: unqualified names are `public`'s) until the result is dropped.
pub(crate) fn install(path: Option<Rc<SearchPath>>) -> Installed {
    Installed(CURRENT.with(|c| std::mem::replace(&mut *c.borrow_mut(), path)))
}

/// Whether `search_path` may name a schema made with CREATE SCHEMA: false for a path of the
/// built-in schemas and `"$user"` as they are usually written (the default among them), which
/// is answered without allocating.
pub(crate) fn may_name_created_schema(search_path: &str) -> bool {
    search_path.split(',').any(|p| {
        let p = p.trim();
        let p = p.strip_prefix('"').and_then(|q| q.strip_suffix('"')).unwrap_or(p);
        !(p.is_empty()
            || p == "$user"
            || p == "public"
            || p == "pg_catalog"
            || p == "information_schema")
    })
}

/// The schema names `search_path` lists, in order, unquoted (`"$user"` and empty entries
/// left out).
pub(crate) fn listed(path: &str) -> Vec<String> {
    path.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| match p.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
            Some(quoted) => quoted.replace("\"\"", "\""),
            None => p.to_lowercase(),
        })
        .filter(|n| n != "$user")
        .collect()
}

impl SearchPath {
    /// The path to install for `search_path` in database `db`: none when it names no schema
    /// made with CREATE SCHEMA that exists (the common case, which reads no catalog).
    pub(crate) fn load(
        catalog: &Catalog,
        txn: &mut Transaction,
        db: &str,
        search_path: &str,
    ) -> Result<Option<Rc<SearchPath>>> {
        let names = listed(search_path);
        let built_in = |n: &str| ["public", "pg_catalog", "information_schema"].contains(&n);
        if names.iter().all(|n| built_in(n)) {
            return Ok(None);
        }
        let mut schemas = Vec::new();
        for n in names {
            if schemas.contains(&n) {
                continue;
            }
            if n == "public" || (!built_in(&n) && catalog.schema(txn, db, &n)?.is_some()) {
                schemas.push(n);
            }
        }
        if schemas.iter().all(|s| s == "public") {
            return Ok(None);
        }
        // The relations of each schema but a last `public` (a name found nowhere before it is
        // `public`'s anyway): read from the catalog's keys, a prefix per schema.
        let mut relations = HashSet::new();
        let searched = match schemas.last().map(String::as_str) {
            Some("public") => &schemas[..schemas.len() - 1],
            _ => &schemas[..],
        };
        for schema in searched {
            relations.extend(catalog.relations_in(txn, db, schema)?);
        }
        let hidden = if schemas.iter().any(|s| s == "public") {
            HashSet::new()
        } else {
            catalog.relations_in(txn, db, "public")?.into_iter().collect()
        };
        Ok(Some(Rc::new(SearchPath { schemas, relations, hidden })))
    }
}

/// The catalog name an unqualified relation name `name` denotes in the installed path.
pub(crate) fn resolve(name: &str) -> String {
    CURRENT.with(|c| {
        let current = c.borrow();
        let Some(path) = current.as_ref() else { return name.to_string() };
        let found =
            path.schemas.iter().map(|s| qualified(s, name)).find(|q| path.relations.contains(q));
        match found {
            Some(q) => q,
            // Named in the path's first schema, where it is not: not found, rather than
            // `public`'s, which the path leaves out.
            None if path.hidden.contains(name) => qualified(&path.schemas[0], name),
            None => name.to_string(),
        }
    })
}

/// The catalog name a new relation named `name` (unqualified) takes: in the installed path's
/// first schema, else in `public`.
pub(crate) fn creation_name(name: &str) -> String {
    // A session's temporary schema takes only what CREATE TEMP makes.
    let first =
        |p: &SearchPath| p.schemas.iter().find(|s| !crate::exec::temp::is_temp_schema(s)).cloned();
    CURRENT.with(|c| match c.borrow().as_ref().and_then(|p| first(p)) {
        Some(schema) => qualified(&schema, name),
        None => name.to_string(),
    })
}

/// Whether a relation of a created schema, by its catalog name, is the one its unqualified
/// name finds along the installed path (catalog functions then name it without its schema,
/// as PostgreSQL does).
pub(crate) fn visible(name: &str) -> bool {
    let own = crate::catalog::unqualified(name);
    name.contains('.') && resolve(own) == name
}

/// The schemas of the installed path (empty when none is), the session's temporary schema
/// among them: what a plan bound under it depends on, beside the definitions it read.
pub(crate) fn installed_schemas() -> Vec<String> {
    CURRENT.with(|c| c.borrow().as_ref().map(|p| p.schemas.clone()).unwrap_or_default())
}

/// The schemas of the installed path as `current_schemas` shows them: without the session's
/// temporary schema, which is searched implicitly.
pub(crate) fn current_schemas() -> Vec<String> {
    let mut schemas = installed_schemas();
    schemas.retain(|s| !crate::exec::temp::is_temp_schema(s));
    schemas
}

/// The session's temporary schema, when the installed path searches it.
pub(crate) fn temp_schema() -> Option<String> {
    installed_schemas().into_iter().find(|s| crate::exec::temp::is_temp_schema(s))
}

/// `query` with each unqualified relation name that the installed path resolves into a
/// created schema written with that schema (common table expressions' names left alone), so
/// that a view's stored query means the same under any path.
pub(crate) fn qualify_query(query: &ast::Query) -> ast::Query {
    let mut query = query.clone();
    if CURRENT.with(|c| c.borrow().is_none()) {
        return query;
    }
    struct Ctes(HashSet<String>);
    impl ast::Visitor for Ctes {
        type Break = ();
        fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
            if let Some(with) = &q.with {
                self.0.extend(with.cte_tables.iter().map(|c| crate::bind::ident(&c.alias.name)));
            }
            ControlFlow::Continue(())
        }
    }
    let mut ctes = Ctes(HashSet::new());
    let _ = ast::Visit::visit(&query, &mut ctes);
    let ctes = ctes.0;
    let _ = ast::visit_relations_mut(&mut query, |name| {
        if let [ast::ObjectNamePart::Identifier(id)] = name.0.as_slice() {
            let n = crate::bind::ident(id);
            let found = resolve(&n);
            if !ctes.contains(&n) && found.contains('.') {
                let schema = ast::Ident::with_quote('"', schema_of(&found));
                name.0.insert(0, ast::ObjectNamePart::Identifier(schema));
            }
        }
        ControlFlow::<()>::Continue(())
    });
    query
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_paths_that_may_name_created_schemas_are_read() {
        for built_in in ["\"$user\", public", "public", "", "pg_catalog, public", "\"public\""] {
            assert!(!super::may_name_created_schema(built_in), "{built_in}");
        }
        for other in ["app, public", "\"$user\", tenant1", "\"Public\"", "PUBLIC"] {
            assert!(super::may_name_created_schema(other), "{other}");
        }
        assert_eq!(
            super::listed("\"$user\", App, \"Mixed\"\"q\", public"),
            ["app", "Mixed\"q", "public"]
        );
    }
}
