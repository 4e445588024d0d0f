//! The object-identifier types `regclass` and `regtype`: a cast of a name gives the object's
//! OID, a cast of an OID to text gives the name. Constant names are resolved while binding,
//! in the statement's transaction; names and OIDs only known at execution are resolved by
//! the session (`CatalogFunc::RegClassOid` and friends).
//!
//! Kiln holds OIDs as bigint, so `x::regclass` alone shows the number where PostgreSQL
//! shows the name; `x::regclass::text` (what clients write to get the name) gives the name.

use sqlparser::ast;

use crate::bind::*;
use crate::error::{code, Result, SqlError};
use crate::expr::*;
use crate::pg::system::oid;
use crate::types::{DataType, Value};

/// Which object-identifier type a cast names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reg {
    /// regclass: relations
    Class,
    /// regtype: types
    Type,
}

/// `'pg_catalog.f'::regproc`: the function's name as catalogs show it (`pg_type.typinput`
/// holds `array_in`), for a constant; `None` when `x` is not a constant string.
pub(crate) fn regproc_constant(dt: &ast::DataType, x: &ast::Expr) -> Option<String> {
    let ast::DataType::Custom(name, _) = dt else { return None };
    if !crate::bind::name_as_written(name).is_ok_and(|n| n == "regproc" || n == "regprocedure") {
        return None;
    }
    let ast::Expr::Value(v) = x else { return None };
    let ast::Value::SingleQuotedString(s) = &v.value else { return None };
    let s = s.trim();
    Some(s.strip_prefix("pg_catalog.").unwrap_or(s).to_string())
}

/// `regproc` (false) or `regprocedure` (true) for a cast to either, of a constant string:
/// the string.
fn regproc_cast(x: &ast::Expr) -> Option<(bool, String)> {
    let mut x = x;
    while let ast::Expr::Nested(inner) = x {
        x = inner;
    }
    let ast::Expr::Cast { expr, data_type: ast::DataType::Custom(name, _), .. } = x else {
        return None;
    };
    let procedure = match crate::bind::name_as_written(name).ok()?.as_str() {
        "regproc" | "pg_catalog.regproc" => false,
        "regprocedure" | "pg_catalog.regprocedure" => true,
        _ => return None,
    };
    let ast::Expr::Value(v) = expr.as_ref() else { return None };
    let ast::Value::SingleQuotedString(s) = &v.value else { return None };
    Some((procedure, s.trim().to_string()))
}

impl Planner<'_> {
    /// `'f'::regproc::oid` and `'f(integer)'::regprocedure::oid` (psql's `\sf` and `\ef`
    /// ask so): the OID of the function made with CREATE FUNCTION that the text names —
    /// by name alone (42725 when several have it), or by name and argument types. `None`
    /// when `x` is no such cast.
    pub(crate) fn regproc_oid(&mut self, x: &ast::Expr) -> Result<Option<i64>> {
        let Some((procedure, text)) = regproc_cast(x) else { return Ok(None) };
        let (name, types) = match (procedure, text.find('(')) {
            (true, Some(open)) if text.ends_with(')') => {
                (text[..open].trim().to_string(), Some(text[open + 1..text.len() - 1].to_string()))
            }
            (true, found) => {
                let side = if found.is_some() { "right" } else { "left" };
                return Err(SqlError::new(
                    code::INVALID_TEXT,
                    format!("expected a {side} parenthesis"),
                ));
            }
            (false, _) => (text.clone(), None),
        };
        let parts = crate::sequence::name_parts(&name)?;
        let name = match parts.as_slice() {
            [(n, _)] => n.clone(),
            [(schema, _), (n, _)] if schema == "public" => n.clone(),
            _ => return Err(undefined_function(&text)),
        };
        let functions = self.catalog.functions_named(self.txn, self.db, &name)?;
        let found = match types {
            None => match functions.as_slice() {
                [f] => f.clone(),
                [] => return Err(undefined_function(&text)),
                _ => {
                    return Err(SqlError::new(
                        "42725",
                        format!("more than one function named \"{text}\""),
                    ))
                }
            },
            Some(list) => {
                let mut wanted = Vec::new();
                for t in split_types(&list) {
                    let dialect = sqlparser::dialect::PostgreSqlDialect {};
                    let mut parser = sqlparser::parser::Parser::new(&dialect)
                        .try_with_sql(t)
                        .map_err(|e| SqlError::syntax(e.to_string()))?;
                    let dt =
                        parser.parse_data_type().map_err(|e| SqlError::syntax(e.to_string()))?;
                    wanted.push(resolve_type(&dt, self.catalog, self.txn, self.db)?.unmodified());
                }
                let found = functions.into_iter().find(|f| f.input_types() == wanted);
                found.ok_or_else(|| undefined_function(&text))?
            }
        };
        Ok(Some(oid::object(found.id)))
    }
}

/// The types of a `regprocedure` text's list, split at its top-level commas.
fn split_types(list: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in list.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(list[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = list[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

fn undefined_function(text: &str) -> SqlError {
    SqlError::new(code::UNDEFINED_FUNCTION, format!("function \"{text}\" does not exist"))
}

/// `regclass` / `regtype` (`None` for any other type; the other reg* types are text).
pub(crate) fn reg_kind(dt: &ast::DataType) -> Option<Reg> {
    match dt {
        ast::DataType::Regclass => Some(Reg::Class),
        ast::DataType::Custom(name, _) => match crate::bind::name_as_written(name).ok()?.as_str() {
            "regclass" => Some(Reg::Class),
            "regtype" => Some(Reg::Type),
            _ => None,
        },
        _ => None,
    }
}

/// The OIDs PostgreSQL gives the system catalogs clients name in casts (`'pg_class'::regclass`
/// as the `classoid` of pg_description, say).
const SYSTEM_RELATIONS: &[(&str, i64)] = &[
    ("pg_type", 1247),
    ("pg_attribute", 1249),
    ("pg_proc", 1255),
    ("pg_class", 1259),
    ("pg_authid", 1260),
    ("pg_auth_members", 1261),
    ("pg_database", 1262),
    ("pg_tablespace", 1213),
    ("pg_shdepend", 1214),
    ("pg_foreign_server", 1417),
    ("pg_shdescription", 2396),
    ("pg_sequence", 2224),
    ("pg_foreign_data_wrapper", 2328),
    ("pg_aggregate", 2600),
    ("pg_am", 2601),
    ("pg_amop", 2602),
    ("pg_amproc", 2603),
    ("pg_attrdef", 2604),
    ("pg_cast", 2605),
    ("pg_constraint", 2606),
    ("pg_conversion", 2607),
    ("pg_depend", 2608),
    ("pg_description", 2609),
    ("pg_index", 2610),
    ("pg_inherits", 2611),
    ("pg_language", 2612),
    ("pg_namespace", 2615),
    ("pg_opclass", 2616),
    ("pg_operator", 2617),
    ("pg_rewrite", 2618),
    ("pg_trigger", 2620),
    ("pg_opfamily", 2753),
    ("pg_default_acl", 826),
    ("pg_largeobject_metadata", 2995),
    ("pg_extension", 3079),
    ("pg_foreign_table", 3118),
    ("pg_policy", 3256),
    ("pg_partitioned_table", 3350),
    ("pg_statistic_ext", 3381),
    ("pg_init_privs", 3394),
    ("pg_collation", 3456),
    ("pg_event_trigger", 3466),
    ("pg_enum", 3501),
    ("pg_range", 3541),
    ("pg_transform", 3576),
    ("pg_seclabel", 3596),
    ("pg_shseclabel", 3592),
    ("pg_db_role_setting", 2964),
    ("pg_ts_dict", 3600),
    ("pg_ts_parser", 3601),
    ("pg_ts_config", 3602),
    ("pg_ts_template", 3764),
    ("pg_subscription", 6100),
    ("pg_publication", 6104),
    ("pg_publication_rel", 6106),
    ("pg_publication_namespace", 6237),
];

/// The OID of the system catalog named `name` (with or without `pg_catalog.`).
pub fn system_relation_oid(name: &str) -> Option<i64> {
    let name = name.strip_prefix("pg_catalog.").unwrap_or(name);
    SYSTEM_RELATIONS.iter().find(|(n, _)| *n == name).map(|(_, o)| *o)
}

/// The OID of the system catalog a relation name given as text denotes (`pg_class`,
/// `pg_catalog.pg_class`, `"pg_catalog"."pg_class"`).
pub fn system_relation_named(text: &str) -> Option<i64> {
    match crate::sequence::name_parts(text).ok()?.as_slice() {
        [(name, _)] => system_relation_oid(name),
        [(schema, _), (name, _)] if schema == "pg_catalog" => system_relation_oid(name),
        _ => None,
    }
}

/// The name of the system catalog with OID `o`.
pub fn system_relation_name(o: i64) -> Option<&'static str> {
    SYSTEM_RELATIONS.iter().find(|(_, x)| *x == o).map(|(n, _)| *n)
}

/// The type a name denotes (`int4`, `integer`, `character varying`, `text[]` …).
pub fn type_by_name(name: &str) -> Option<DataType> {
    let name = name.trim();
    let name = name.strip_prefix("pg_catalog.").unwrap_or(name);
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let mut parser = sqlparser::parser::Parser::new(&dialect).try_with_sql(name).ok()?;
    let dt = parser.parse_data_type().ok()?;
    if parser.peek_token().token != sqlparser::tokenizer::Token::EOF {
        return None;
    }
    data_type(&dt).ok()
}

/// A type named by text as an identifier chain (`int4`, `"Mood"`, `public.mood`,
/// `"pg_catalog"."int4"`, `mood[]`): its schema, its name (quoted parts as written, others
/// folded) and whether its array type is meant. `None` for other type syntax
/// (`character varying(3)`, `timestamp with time zone`).
pub fn type_name_parts(text: &str) -> Option<(Option<String>, String, bool)> {
    let text = text.trim();
    let (text, array) = match text.strip_suffix("[]") {
        Some(t) => (t.trim_end(), true),
        None => (text, false),
    };
    let parts = crate::sequence::name_parts(text).ok()?;
    if parts.iter().any(|(p, quoted)| !quoted && p.contains(char::is_whitespace)) {
        return None;
    }
    match parts.as_slice() {
        [(name, _)] => Some((None, name.clone(), array)),
        [(schema, _), (name, _)] => Some((Some(schema.clone()), name.clone(), array)),
        _ => None,
    }
}

/// The built-in type an identifier-chain name denotes (`"int4"`, `pg_catalog.text[]`).
pub fn builtin_type_named(text: &str) -> Option<DataType> {
    let (schema, name, array) = type_name_parts(text)?;
    if schema.is_some_and(|s| s != "pg_catalog")
        || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        return None;
    }
    let t = type_by_name(&name)?;
    if array {
        crate::array::array_of(t).ok()
    } else {
        Some(t)
    }
}

/// A type name as PostgreSQL's errors show it: an identifier chain's parts unquoted.
pub fn type_display_name(text: &str) -> String {
    match type_name_parts(text) {
        Some((schema, name, array)) => format!(
            "{}{name}{}",
            schema.map(|s| s + ".").unwrap_or_default(),
            if array { "[]" } else { "" }
        ),
        None => text.trim().to_string(),
    }
}

/// 42704 for a type name Kiln does not have.
pub fn undefined_type(name: &str) -> SqlError {
    let name = type_display_name(name);
    SqlError::new(code::UNDEFINED_OBJECT, format!("type \"{name}\" does not exist"))
}

/// 42P01 for a relation name that does not exist, named as PostgreSQL names it: its parts
/// as read (quotes taken off, unquoted parts folded), joined by dots.
pub fn undefined_relation(name: &str) -> SqlError {
    let shown = match crate::sequence::name_parts(name) {
        Ok(parts) => parts.into_iter().map(|(p, _)| p).collect::<Vec<_>>().join("."),
        Err(_) => name.to_string(),
    };
    SqlError::new(code::UNDEFINED_TABLE, format!("relation \"{shown}\" does not exist"))
}

impl<'a> Planner<'a> {
    /// Every relation of the database the statement's transaction sees, with its OID:
    /// tables, sequences, views, and the tables' primary-key and other indexes.
    fn visible_relations(&mut self) -> Result<Vec<(i64, String)>> {
        self.reusable = false;
        let tables = self.catalog.tables(self.txn, self.db)?;
        let mut all: Vec<(i64, String)> =
            tables.iter().map(|t| (oid::object(t.id), t.name.clone())).collect();
        for s in self.catalog.sequences(self.txn, self.db)? {
            all.push((oid::object(s.id), s.name.clone()));
        }
        for v in self.catalog.views(self.txn, self.db)? {
            all.push((oid::object(v.id), v.name.clone()));
        }
        for t in &tables {
            if !t.primary_key.is_empty() {
                // Indexes are named in their table's schema.
                let pkey = crate::catalog::beside(&t.name, &t.pkey_name());
                all.push((oid::pkey_index(t.id), pkey));
            }
            all.extend(
                t.indexes
                    .iter()
                    .map(|ix| (oid::object(ix.id), crate::catalog::beside(&t.name, &ix.name))),
            );
        }
        Ok(all)
    }

    /// The relations as two constant arrays (OIDs, names) that a conversion evaluated at
    /// execution searches: the names this statement's transaction sees, nobody else's.
    pub(crate) fn relation_directory(&mut self) -> Result<[Expr; 2]> {
        let (oids, names) = self
            .visible_relations()?
            .into_iter()
            .map(|(o, n)| (Value::Int(o), Value::Text(n)))
            .unzip();
        Ok([Expr::Const(Value::Array(oids)), Expr::Const(Value::Array(names))])
    }

    /// The OID of the relation (table, index, sequence, view or system catalog) a name
    /// denotes.
    pub(crate) fn relation_oid(&mut self, text: &str) -> Result<Option<i64>> {
        if let Some(o) = system_relation_named(text) {
            return Ok(Some(o));
        }
        let name = crate::sequence::parse_name(text, Some(self.db))?;
        self.reusable = false;
        // A table, sequence or view is found by its key; only an index needs the list.
        if let Some(t) = self.catalog.table(self.txn, self.db, &name)? {
            return Ok(Some(oid::object(t.id)));
        }
        if let Some(s) = self.catalog.sequence(self.txn, self.db, &name)? {
            return Ok(Some(oid::object(s.id)));
        }
        if let Some(v) = self.catalog.view(self.txn, self.db, &name)? {
            return Ok(Some(oid::object(v.id)));
        }
        let found = self.visible_relations()?.into_iter().find(|(_, n)| *n == name);
        if found.is_none() {
            self.catalog.check_schema_of(self.txn, self.db, &name)?;
        }
        Ok(found.map(|(o, _)| o))
    }

    /// The type a name denotes: a built-in type ([`type_by_name`]) or one of the database's
    /// enum types (`mood`, `public.mood`, `mood[]`, `_mood`).
    pub(crate) fn type_named(&mut self, text: &str) -> Result<Option<DataType>> {
        if let Some(t) = type_by_name(text).or_else(|| builtin_type_named(text)) {
            return Ok(Some(t));
        }
        let Some(dt) = parsed_type_name(text) else { return Ok(None) };
        self.reusable = false;
        match resolve_type(&dt, self.catalog, self.txn, self.db) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.code == code::UNDEFINED_OBJECT => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The OID of the domain a type name names (`year`, `public.year`), if it names one.
    fn domain_oid_named(&mut self, text: &str) -> Result<Option<u32>> {
        if type_by_name(text).or_else(|| builtin_type_named(text)).is_some() {
            return Ok(None);
        }
        let Some(dt) = parsed_type_name(text) else { return Ok(None) };
        self.reusable = false;
        Ok(crate::bind::domain_named(&dt, self.catalog, self.txn, self.db)?.map(|d| d.oid))
    }

    /// The enum type (or array of one) with OID `o`.
    pub(crate) fn enum_type_by_oid(&mut self, o: u32) -> Result<Option<DataType>> {
        self.reusable = false;
        let e = self.catalog.enum_type_by_oid(self.txn, self.db, o)?;
        Ok(e.map(|e| crate::enums::type_with_oid(e, o)))
    }

    /// `x::regclass` / `x::regtype`: a constant name becomes its OID now; an OID stays
    /// itself; a name known only at execution is resolved then.
    pub(crate) fn reg_cast(
        &mut self,
        kind: Reg,
        x: &ast::Expr,
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        let (e, t) = self.expr(x, scope, aggs)?;
        let e = match e {
            Expr::Cast(inner, DataType::Text) => *inner,
            e => e,
        };
        Ok(match e {
            Expr::Const(Value::Null) => (Expr::Const(Value::Null), DataType::Int8),
            Expr::Const(Value::Text(s)) => {
                if let Ok(n) = s.trim().parse::<i64>() {
                    return Ok((Expr::Const(Value::Int(n)), DataType::Int8));
                }
                let o = match kind {
                    Reg::Class => self.relation_oid(&s)?.ok_or_else(|| undefined_relation(&s))?,
                    Reg::Type => match self.domain_oid_named(&s)? {
                        Some(o) => i64::from(o),
                        None => {
                            self.type_named(&s)?.ok_or_else(|| undefined_type(&s))?.oid() as i64
                        }
                    },
                };
                (Expr::Const(Value::Int(o)), DataType::Int8)
            }
            e if t.is_integer() => (e, DataType::Int8),
            e => {
                let (e, _) = self.coerce(e, t, DataType::Text)?;
                self.reusable = false;
                match kind {
                    Reg::Class => {
                        let [oids, names] = self.relation_directory()?;
                        let f = Func::Catalog(CatalogFunc::RegClassOid(false));
                        (Expr::Func(f, vec![e, oids, names]), DataType::Int8)
                    }
                    Reg::Type => {
                        self.system.remember_catalog(self.txn)?;
                        let f = Func::Catalog(CatalogFunc::RegTypeOid(false));
                        (Expr::Func(f, vec![e]), DataType::Int8)
                    }
                }
            }
        })
    }

    /// The name of the relation with this OID, when there is one.
    pub(crate) fn relation_name(&mut self, o: i64) -> Result<Option<String>> {
        if let Some(n) = system_relation_name(o) {
            return Ok(Some(n.to_string()));
        }
        Ok(self.visible_relations()?.into_iter().find(|(x, _)| *x == o).map(|(_, n)| n))
    }

    /// `x::regclass::text` (and varchar, name): the name of the relation or type.
    pub(crate) fn reg_name(
        &mut self,
        kind: Reg,
        x: &ast::Expr,
        scope: &Scope,
        aggs: bool,
    ) -> Result<(Expr, DataType)> {
        let (e, _) = self.reg_cast(kind, x, scope, aggs)?;
        self.oid_name(kind, e)
    }

    /// The name of the relation or type whose OID `e` gives (NULL for NULL), as a
    /// `regclass` / `regtype` value prints.
    pub(crate) fn oid_name(&mut self, kind: Reg, e: Expr) -> Result<(Expr, DataType)> {
        if let (Reg::Class, Expr::Const(Value::Int(o))) = (kind, &e) {
            self.reusable = false;
            let name = self.relation_name(*o)?.unwrap_or_else(|| o.to_string());
            return Ok((Expr::Const(Value::Text(name)), DataType::Text));
        }
        let f = match kind {
            Reg::Class => CatalogFunc::RegClassName,
            Reg::Type => CatalogFunc::RegTypeName,
        };
        Ok(match e {
            Expr::Const(Value::Int(o)) if kind == Reg::Type => {
                let ty = match DataType::from_oid(o as u32) {
                    Some(t) => Some(t),
                    None => self.enum_type_by_oid(o as u32)?,
                };
                let name = ty.map_or_else(|| o.to_string(), |t| t.sql_name());
                (Expr::Const(Value::Text(name)), DataType::Text)
            }
            e => {
                self.reusable = false;
                let mut args = vec![e];
                match kind {
                    Reg::Class => args.extend(self.relation_directory()?),
                    Reg::Type => self.system.remember_catalog(self.txn)?,
                }
                (Expr::Func(Func::Catalog(f), args), DataType::Text)
            }
        })
    }
}

/// `text` read as one SQL type name (`None` when it is not one).
fn parsed_type_name(text: &str) -> Option<ast::DataType> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let mut parser = sqlparser::parser::Parser::new(&dialect).try_with_sql(text.trim()).ok()?;
    let dt = parser.parse_data_type().ok()?;
    (parser.peek_token().token == sqlparser::tokenizer::Token::EOF).then_some(dt)
}
