//! Step 2 of a statement: binding. The [`Planner`] resolves names against the catalog and the
//! scopes of the FROM clause, gives every expression a type (inferring parameter types from
//! their context), and produces a plan (`crate::plan`). Expressions are bound in `expr`,
//! function calls in `function`, queries in `query`.

pub mod array;
pub mod dml;
pub mod expr;
pub mod function;
pub mod json;
pub mod merge;
pub mod partitioned;
pub(crate) mod pushdown;
pub mod query;
pub mod reg;
pub(crate) mod search;
pub mod srf;
pub mod view;
pub mod window;
pub mod with;

use kiln_engine::Transaction;
use sqlparser::ast;

use std::sync::Arc;

use crate::catalog::{Catalog, Table};
use crate::error::{code, Result, SqlError};
use crate::expr::*;
use crate::plan::*;
use crate::types::{DataType, Value};

/// A common table expression in scope.
#[derive(Debug, Clone)]
pub(crate) struct Cte {
    /// Its name.
    pub name: String,
    /// Its query.
    pub query: Arc<ast::Query>,
    /// Its column names (WITH name (a, b) AS …), when given.
    pub columns: Vec<String>,
    /// WITH RECURSIVE: whether its query may refer to it.
    pub recursive: bool,
    /// While its recursive term is planned: the work table id and its columns.
    pub work_table: Option<(usize, crate::types::Columns)>,
    /// A data-modifying CTE, already run: what reading it gives.
    pub ran: Option<Ran>,
}

impl Cte {
    /// A CTE of a `WITH` (RECURSIVE or not), and what it gave if it already ran.
    pub(crate) fn new(cte: &ast::Cte, recursive: bool, ran: Option<Ran>) -> Cte {
        Cte {
            name: ident(&cte.alias.name),
            query: Arc::new((*cte.query).clone()),
            columns: cte.alias.columns.iter().map(|c| ident(&c.name)).collect(),
            recursive,
            work_table: None,
            ran,
        }
    }
}

/// 42712: a `WITH` names two of its queries alike.
pub(crate) fn duplicate_cte(name: &str) -> SqlError {
    SqlError::new("42712", format!("WITH query name \"{name}\" specified more than once"))
}

/// What a data-modifying CTE that already ran gives a reader (see [`with`]).
#[derive(Debug, Clone)]
pub(crate) enum Ran {
    /// Its RETURNING columns, the table columns they show (as RowDescription reports
    /// them), and its rows.
    Returned(Arc<crate::types::Columns>, crate::types::Origins, Arc<Vec<Vec<crate::types::Value>>>),
    /// It has no RETURNING: it cannot be read.
    Nothing,
}

/// A column of the scope expressions are bound in.
#[derive(Debug, Clone)]
pub struct ScopeCol {
    /// The table alias it belongs to.
    pub table: Option<String>,
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: DataType,
    /// The table column it shows unchanged, when it does: the table's OID and the column's
    /// number (1-based), as RowDescription reports them.
    pub origin: Option<(u32, i16)>,
    /// A system column (a catalog's `tableoid`): named, never in `*`.
    pub system: bool,
}

/// The columns visible to an expression.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Columns in row order.
    pub cols: Vec<ScopeCol>,
    /// Columns a `JOIN … USING` / NATURAL join merged into the other side's: reachable by
    /// their table's name only, and not in `*`.
    pub hidden: Vec<usize>,
    /// The columns `*` lists, in order, when a join merged some (the merged ones first, as
    /// PostgreSQL lists them); `None`: every column in row order.
    pub star: Option<Vec<usize>>,
    /// The one column of each scalar function in FROM, which the function's alias also names
    /// (PostgreSQL's whole-row reference of a scalar function: `jsonb_array_elements(…) e`
    /// … `e ->> 'k'`).
    pub function_columns: Vec<usize>,
}

impl Scope {
    /// The table column each of `exprs` shows unchanged, when it does.
    pub(crate) fn origins(&self, exprs: &[Expr]) -> crate::types::Origins {
        exprs
            .iter()
            .map(|e| match e {
                Expr::Column(i) => self.cols.get(*i).and_then(|c| c.origin),
                _ => None,
            })
            .collect()
    }

    /// The columns `*` lists.
    pub(crate) fn star_columns(&self) -> Vec<usize> {
        match &self.star {
            Some(order) => order.clone(),
            None => (0..self.cols.len())
                .filter(|&i| !self.hidden.contains(&i) && !self.cols[i].system)
                .collect(),
        }
    }

    /// The OID of the one table whose columns `table` (or, unqualified, the whole scope)
    /// names: what its `tableoid` system column holds. `None` when there is not exactly one.
    pub(crate) fn table_oid(&self, table: Option<&str>) -> Option<u32> {
        let mut cols = self.cols.iter().filter(|c| !c.system);
        let cols: Vec<&ScopeCol> = match table {
            Some(t) => cols.filter(|c| c.table.as_deref() == Some(t)).collect(),
            None => cols.by_ref().collect(),
        };
        let first = cols.first()?;
        let oid = first.origin?.0;
        cols.iter()
            .all(|c| c.table == first.table && c.origin.is_some_and(|o| o.0 == oid))
            .then_some(oid)
    }

    pub(crate) fn resolve(&self, table: Option<&str>, name: &str) -> Result<(usize, DataType)> {
        let mut found = None;
        for (i, c) in self.cols.iter().enumerate() {
            if table.is_none() && self.hidden.contains(&i) {
                continue;
            }
            if c.name == name && (table.is_none() || c.table.as_deref() == table) {
                if found.is_some() {
                    return Err(SqlError::new(
                        code::AMBIGUOUS_COLUMN,
                        format!("column reference \"{name}\" is ambiguous"),
                    ));
                }
                found = Some((i, c.ty));
            }
        }
        if found.is_none() && table.is_none() {
            found = self
                .function_columns
                .iter()
                .find(|&&i| self.cols[i].table.as_deref() == Some(name))
                .map(|&i| (i, self.cols[i].ty));
        }
        found.ok_or_else(|| match table {
            Some(t) if !self.cols.iter().any(|c| c.table.as_deref() == Some(t)) => SqlError::new(
                code::UNDEFINED_TABLE,
                format!("missing FROM-clause entry for table \"{t}\""),
            ),
            Some(t) => {
                SqlError::new(code::UNDEFINED_COLUMN, format!("column {t}.{name} does not exist"))
            }
            None => {
                SqlError::new(code::UNDEFINED_COLUMN, format!("column \"{name}\" does not exist"))
            }
        })
    }
}

/// Something that supplies rows of tables Kiln computes (pg_catalog, information_schema,
/// kiln_stat).
pub trait SystemTables {
    /// The columns and rows of system table `name`, or `None` when there is no such table.
    fn system_table(&self, txn: &mut Transaction, name: &str) -> Result<Option<Relation>>;

    /// The session's value of a setting (`current_setting`), when there is one.
    fn setting(&self, _name: &str) -> Option<String> {
        None
    }

    /// Refreshes what catalog functions evaluated at execution look up by OID (index,
    /// constraint and view definitions; enum types) from the catalog `txn` sees.
    fn remember_catalog(&self, _txn: &mut Transaction) -> Result<()> {
        Ok(())
    }
}

/// A query enclosing the subquery being bound.
#[derive(Debug, Clone)]
pub struct Enclosing {
    /// Its columns.
    pub scope: Scope,
    /// Those the subquery directly inside it reads (from it or any subquery of its own).
    pub refs: Vec<usize>,
    /// Whether the subquery directly inside it reads a query further out.
    pub deep: bool,
}

/// The binder and planner for one statement.
pub struct Planner<'a> {
    /// The transaction, for catalog reads only: binding executes nothing.
    pub txn: &'a mut Transaction,
    /// The catalog.
    pub catalog: &'a Catalog,
    /// The current database.
    pub db: &'a str,
    /// Parameter types ($1 is index 0); `Unknown` until the context fixes them.
    pub params: Vec<DataType>,
    /// System tables.
    pub system: &'a dyn SystemTables,
    /// The session, for folding constant function calls.
    pub env: &'a dyn crate::expr::Env,
    /// The enclosing queries of the subquery being bound, outermost first: a subquery may
    /// refer to any of them.
    pub outer: Vec<Enclosing>,
    /// Set while binding a CASE arm whose condition is constantly false or NULL: PostgreSQL
    /// drops such an arm before folding it, so a folding error there (an overflow, a
    /// division by zero) must not fail the statement; the expression stays unfolded.
    pub dead_arm: bool,
    /// The table definitions the plan was bound against: a prepared statement's plan stays
    /// valid while every one of them is still the definition its transaction sees.
    pub tables: Vec<Arc<Table>>,
    /// Likewise the sequence definitions its `nextval`/`currval`/`setval` calls name.
    pub sequences: Vec<Arc<crate::sequence::Sequence>>,
    /// Likewise the views it reads.
    pub views: Vec<Arc<crate::catalog::View>>,
    /// The enum types named in the statement, as resolved: its plan depends on them.
    pub enum_types: Vec<&'static crate::enums::EnumType>,
    /// The views being expanded, innermost last (a view that reads itself is refused).
    pub(crate) expanding: Vec<String>,
    /// How many view reads the statement planned (bounded: views reading views reading
    /// views can multiply).
    pub(crate) expansions: usize,
    /// Cleared when the plan holds something read while binding that no definition above
    /// covers (system tables' rows): such a plan is bound again at every execution.
    pub reusable: bool,
    /// Whether window functions may appear where aggregates may not (ORDER BY of a query
    /// that does not group).
    pub(crate) windows_here: bool,
    /// Binding the aggregate of a window call (see `agg_arg`).
    pub(crate) window_aggregate: bool,
    /// Only describing the statement (its parameters and columns), not running it: a
    /// data-modifying CTE is then planned for its RETURNING columns, not refused.
    pub(crate) describing: bool,
    /// Common table expressions in scope (WITH): name, query, column names, and for a
    /// recursive one being planned the work table id and columns its recursive term reads.
    pub(crate) ctes: Vec<Cte>,
    /// Work table ids handed out (recursive CTEs).
    pub(crate) work_tables: usize,
    /// Likewise the functions made with CREATE FUNCTION it calls.
    pub(crate) functions: Vec<crate::catalog::Function>,
    /// The functions whose bodies are being bound around this statement (one of them
    /// calling itself is refused).
    pub(crate) routines: crate::exec::routines::Binding,
    /// Binding an SQL function's query: the function's name and its arguments' names and
    /// parameters, which a name no column has refers to (`arg` or `function.arg`).
    pub(crate) routine_args: Option<(String, Vec<(String, usize)>)>,
    /// Whether it calls a function whose body writes.
    pub(crate) calls_writing: bool,
    /// Set while a whole select-list item that is a call is bound: a set-returning
    /// function made with CREATE FUNCTION may be called there (its rows expand the row).
    pub(crate) set_item: bool,
    /// How many function bodies the statement has bound (shared with the planners of the
    /// bodies it binds): bounded, as a function calling another twice at each of 16 levels
    /// would otherwise bind 65,536 bodies.
    pub(crate) routines_bound: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

/// Whether an ORDER BY item sorts descending: `DESC` or `USING >` (`USING <` is ascending;
/// another operator is no ordering operator, 42809).
pub(crate) fn sorts_descending(options: &ast::OrderByOptions) -> Result<bool> {
    Ok(match &options.sort {
        None | Some(ast::OrderBySort::Asc) => false,
        Some(ast::OrderBySort::Desc) => true,
        Some(ast::OrderBySort::Using(op)) => {
            let op = op.to_string();
            let op = op.strip_prefix("pg_catalog.").unwrap_or(&op).trim_start_matches("OPERATOR(");
            match op.trim_end_matches(')') {
                "<" => false,
                ">" => true,
                other => return Err(SqlError::new(
                    code::WRONG_OBJECT_TYPE,
                    format!("operator {other} is not a valid ordering operator"),
                )
                .hint(
                    "Ordering operators must be \"<\" or \">\" members of btree operator families.",
                )),
            }
        }
    })
}

/// An identifier as SQL text: as it is when case folding keeps it and it is no keyword
/// that needs quoting, else in double quotes (PostgreSQL's `quote_ident`).
pub fn quote_ident(s: &str) -> String {
    if !s.is_empty()
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && crate::pg::keywords::keyword(s).is_none_or(|(category, _)| category == 'U')
    {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

pub(crate) fn ident(i: &ast::Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_lowercase()
    }
}

/// An object's catalog name, each part lowercased unless quoted: `t` for `t` (or the
/// relation the search path finds first, see [`search`]), `public.t` and `pg_catalog.t`; `s.t` for `s.t` in any other schema (`information_schema.tables` too),
/// which is how the catalog names a relation in a schema made with CREATE SCHEMA. A name
/// within a schema may not hold a dot, the boundary of those names.
pub fn object_name(name: &ast::ObjectName) -> Result<String> {
    match name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(i)] if !ident(i).contains('.') => {
            Ok(search::resolve(&ident(i)))
        }
        _ => name_as_written(name),
    }
}

/// An object's catalog name without the search path: `t` for `t`, `s.t` for `s.t`. For the
/// names of what schemas do not hold in Kiln (functions, types, extensions, schemas,
/// prepared statements, columns, constraints) and of a relation named within its table's
/// schema (an index's new name).
pub fn name_as_written(name: &ast::ObjectName) -> Result<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p.as_ident() {
            Some(i) => Ok(ident(i)),
            None => Err(SqlError::unsupported(format!("the name {p}"))),
        })
        .collect::<Result<_>>()?;
    match parts.as_slice() {
        [n] if n.contains('.') => Err(dotted_name(n)),
        [n] => Ok(n.clone()),
        [schema, n] if schema == "public" || schema == "pg_catalog" => Ok(n.clone()),
        // `pg_temp`: the session's temporary schema, when it has one.
        [schema, n] if schema == "pg_temp" && search::temp_schema().is_some() => {
            Ok(format!("{}.{n}", search::temp_schema().unwrap_or_default()))
        }
        [schema, _] if schema.contains('.') => Err(dotted_name(schema)),
        [schema, n] => Ok(format!("{schema}.{n}")),
        [_, _, _] => Err(SqlError::unsupported(format!("the qualified name {name}"))),
        _ => Err(SqlError::new(
            code::SYNTAX,
            format!("improper qualified name (too many dotted names): {name}"),
        )),
    }
}

/// The catalog name of a relation a CREATE statement names: an unqualified name is placed
/// in the first schema of the search path ([`search::creation_name`]), not looked up.
pub fn new_object_name(name: &ast::ObjectName) -> Result<String> {
    match name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(i)] => {
            let n = ident(i);
            if n.contains('.') {
                return Err(dotted_name(&n));
            }
            Ok(search::creation_name(&n))
        }
        _ => name_as_written(name),
    }
}

/// The name an object name gives without the search path: its last part when it has one
/// part (a common table expression's name is matched so, before any relation).
pub(crate) fn unresolved_name(name: &ast::ObjectName) -> Option<String> {
    match name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(i)] => Some(ident(i)),
        _ => None,
    }
}

/// The error for a name holding a dot, which Kiln uses to join a schema's name to its
/// objects'.
pub(crate) fn dotted_name(n: &str) -> SqlError {
    SqlError::unsupported(format!("the name \"{n}\", which contains a dot")).hint(
        "Kiln separates a schema's name from its objects' with a dot; choose a name without one.",
    )
}

/// The type modifier of `interval [fields] [(precision)]`: `None` for a plain interval.
pub(crate) fn interval_typmod(range: Option<u32>, precision: Option<u64>) -> Result<Option<u32>> {
    use crate::interval::{typmod, FULL_RANGE, MAX_PRECISION, SECOND};
    if range.is_none() && precision.is_none() {
        return Ok(None);
    }
    let range = range.unwrap_or(FULL_RANGE);
    if precision.is_some() && range != FULL_RANGE && range & SECOND == 0 {
        return Err(SqlError::new(
            code::SYNTAX,
            "interval precision can only be given for fields that end in SECOND",
        ));
    }
    // PostgreSQL reduces a larger precision to the most it keeps, with a warning.
    let precision = precision.map(|p| (p as u32).min(MAX_PRECISION));
    Ok(Some(typmod(range, precision)))
}

/// The fractional digits of `timestamp(p)`, `timestamptz(p)` or `time(p)`: a larger precision
/// is reduced to the six PostgreSQL keeps, as PostgreSQL does (with a warning there), and
/// `(6)` is all of them but still shown.
fn time_precision(precision: Option<u64>) -> Option<u8> {
    precision.map(|p| p.min(crate::types::MAX_TIME_PRECISION as u64) as u8)
}

/// Converts an SQL type name.
pub fn data_type(t: &ast::DataType) -> Result<DataType> {
    use ast::DataType as D;
    let len = |l: &Option<ast::CharacterLength>| match l {
        Some(ast::CharacterLength::IntegerLength { length, .. }) => Some(*length as u32),
        _ => None,
    };
    Ok(match t {
        D::Bool | D::Boolean => DataType::Bool,
        D::SmallInt(_) | D::Int2(_) => DataType::Int2,
        D::Int(_) | D::Integer(_) | D::Int4(_) => DataType::Int4,
        D::BigInt(_) | D::Int8(_) => DataType::Int8,
        D::Real | D::Float4 => DataType::Float4,
        D::DoublePrecision | D::Float8 | D::Double(_) => DataType::Float8,
        D::Float(ast::ExactNumberInfo::Precision(p)) if *p <= 24 => DataType::Float4,
        D::Float(_) => DataType::Float8,
        D::Numeric(info) | D::Decimal(info) | D::Dec(info) => DataType::Numeric(match info {
            ast::ExactNumberInfo::None => None,
            // PostgreSQL's bounds: a precision of 1 to 1000 digits, a scale of -1000 to 1000.
            ast::ExactNumberInfo::Precision(p) | ast::ExactNumberInfo::PrecisionAndScale(p, _) => {
                let s = match info {
                    ast::ExactNumberInfo::PrecisionAndScale(_, s) => s,
                    _ => &0,
                };
                if *p == 0 || *p > 1000 {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!("NUMERIC precision {p} must be between 1 and 1000"),
                    ));
                }
                if !(-1000..=1000).contains(s) {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!("NUMERIC scale {s} must be between -1000 and 1000"),
                    ));
                }
                Some((*p as u32, *s as i32))
            }
        }),
        D::Text | D::String(_) => DataType::Text,
        D::Varchar(l) | D::CharacterVarying(l) | D::CharVarying(l) => DataType::Varchar(len(l)),
        D::Char(l) | D::Character(l) => DataType::Char(len(l).unwrap_or(1)),
        D::Bytea => DataType::Bytea,
        D::Uuid => DataType::Uuid,
        D::Date => DataType::Date,
        D::Time(precision, tz) => match tz {
            ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz => {
                return Err(SqlError::unsupported("time with time zone"))
            }
            _ => DataType::Time(time_precision(*precision)),
        },
        D::Interval { fields, precision } => {
            use crate::interval::{DAY, HOUR, MINUTE, MONTH, SECOND, YEAR};
            use ast::IntervalFields as F;
            let range = fields.map(|f| match f {
                F::Year => YEAR,
                F::Month => MONTH,
                F::Day => DAY,
                F::Hour => HOUR,
                F::Minute => MINUTE,
                F::Second => SECOND,
                F::YearToMonth => YEAR | MONTH,
                F::DayToHour => DAY | HOUR,
                F::DayToMinute => DAY | HOUR | MINUTE,
                F::DayToSecond => DAY | HOUR | MINUTE | SECOND,
                F::HourToMinute => HOUR | MINUTE,
                F::HourToSecond => HOUR | MINUTE | SECOND,
                F::MinuteToSecond => MINUTE | SECOND,
            });
            DataType::Interval(interval_typmod(range, *precision)?)
        }
        D::Timestamp(precision, tz) => match tz {
            ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz => {
                DataType::TimestampTz(time_precision(*precision))
            }
            _ => DataType::Timestamp(time_precision(*precision)),
        },
        D::JSON => DataType::Json,
        D::JSONB => DataType::Jsonb,
        D::TsVector => DataType::TsVector,
        D::TsQuery => DataType::TsQuery,
        D::Custom(name, modifiers) => match name_as_written(name)?.as_str() {
            "timestamptz" => match modifiers.as_slice() {
                [] => DataType::TimestampTz(None),
                [p] => DataType::TimestampTz(time_precision(Some(p.parse().map_err(|_| {
                    SqlError::new(code::SYNTAX, format!("invalid type modifier \"{p}\""))
                })?))),
                _ => {
                    return Err(SqlError::new(
                        code::SYNTAX,
                        "invalid type modifier: timestamptz takes one precision",
                    ))
                }
            },
            "json" => DataType::Json,
            "jsonb" => DataType::Jsonb,
            "bpchar" => DataType::Char(1),
            "regclass" | "regtype" | "regnamespace" | "regproc" | "regrole" | "text" => {
                DataType::Text
            }
            "name" => DataType::Name,
            "char" => DataType::PgChar,
            "oid" => DataType::Oid,
            "inet" => DataType::Inet,
            "cidr" => DataType::Cidr,
            "tsvector" => DataType::TsVector,
            "tsquery" => DataType::TsQuery,
            "regconfig" => DataType::RegConfig,
            "xid" => DataType::Int8,
            "int2vector" => DataType::Int2Vector,
            "oidvector" => DataType::OidVector,
            // PostgreSQL's internal array type names: _int4, _text …
            other if other.starts_with('_') && other.len() > 1 => {
                let elem = crate::bind::reg::type_by_name(&other[1..])
                    .ok_or_else(|| unknown_type(other))?;
                crate::array::array_of(elem)?
            }
            // pg_catalog.int2 and the like: the unqualified name is one sqlparser knows (a
            // name of another schema stays qualified, and names no type: Kiln's types are
            // all pg_catalog's and public's).
            other if name.0.len() > 1 && !other.contains('.') => {
                crate::bind::reg::type_by_name(other).ok_or_else(|| unknown_type(other))?
            }
            other => return Err(unknown_type(other)),
        },
        D::Regclass => DataType::Text,
        D::Array(
            ast::ArrayElemTypeDef::SquareBracket(inner, _)
            | ast::ArrayElemTypeDef::AngleBracket(inner)
            | ast::ArrayElemTypeDef::Parenthesis(inner)
            | ast::ArrayElemTypeDef::Qualified(inner, _),
        ) => crate::array::array_of(data_type(inner)?)?,
        other => return Err(SqlError::unsupported(format!("type {other}"))),
    })
}

/// PostgreSQL's built-in types that Kiln does not have (0A000 rather than "does not exist").
const TYPES_NOT_BUILT: &[&str] = &[
    "money",
    "inet",
    "cidr",
    "macaddr",
    "macaddr8",
    "point",
    "line",
    "lseg",
    "box",
    "path",
    "polygon",
    "circle",
    "xml",
    "bit",
    "varbit",
    "timetz",
    "pg_lsn",
    "int4range",
    "int8range",
    "numrange",
    "tsrange",
    "tstzrange",
    "daterange",
    "record",
    "txid_snapshot",
    "pg_snapshot",
    "jsonpath",
    "int4multirange",
    "int8multirange",
    "nummultirange",
    "tsmultirange",
    "tstzmultirange",
    "datemultirange",
    "regoper",
    "regoperator",
    "regprocedure",
    "regdictionary",
    "regcollation",
    "cid",
    "tid",
    "xid8",
    "aclitem",
    "void",
    "anyelement",
    "anyarray",
    "anyenum",
    "any",
];

/// The error for a type name that is not built in: 0A000 for one of PostgreSQL's that Kiln
/// lacks, 42704 for any other (which may still name an enum type: [`resolve_type`]).
fn unknown_type(name: &str) -> SqlError {
    if TYPES_NOT_BUILT.contains(&name) {
        SqlError::unsupported(format!("type {name}"))
    } else {
        crate::bind::reg::undefined_type(name)
    }
}

/// Converts an SQL type name as [`data_type`] does, and a name that is no built-in type to
/// the database's enum type of that name (`mood`, `public.mood`, `mood[]`, `_mood`).
pub fn resolve_type(
    t: &ast::DataType,
    catalog: &Catalog,
    txn: &mut Transaction,
    db: &str,
) -> Result<DataType> {
    match t {
        ast::DataType::Custom(name, modifiers) => match data_type(t) {
            Err(e) if e.code == code::UNDEFINED_OBJECT => {
                let n = name_as_written(name)?;
                if let Some(d) = catalog.domain(txn, db, &n)? {
                    if !modifiers.is_empty() {
                        return Err(SqlError::syntax(format!(
                            "type modifier is not allowed for type \"{}\"",
                            d.name
                        )));
                    }
                    return Ok(d.base);
                }
                if let Some(d) = n.strip_prefix('_').map(|d| catalog.domain(txn, db, d)) {
                    if let Some(d) = d? {
                        return Err(domain_array(&d.name));
                    }
                }
                let (def, array) = match catalog.enum_type(txn, db, &n)? {
                    Some(d) => (d, false),
                    None => match n.strip_prefix('_').map(|e| catalog.enum_type(txn, db, e)) {
                        Some(found) => match found? {
                            Some(d) => (d, true),
                            None => return Err(e),
                        },
                        None => return Err(e),
                    },
                };
                if !modifiers.is_empty() {
                    return Err(SqlError::syntax(format!(
                        "type modifier is not allowed for type \"{}\"",
                        def.name
                    )));
                }
                let ty = DataType::Enum(def);
                if array {
                    crate::array::array_of(ty)
                } else {
                    Ok(ty)
                }
            }
            other => other,
        },
        ast::DataType::Array(
            ast::ArrayElemTypeDef::SquareBracket(inner, _)
            | ast::ArrayElemTypeDef::AngleBracket(inner)
            | ast::ArrayElemTypeDef::Parenthesis(inner)
            | ast::ArrayElemTypeDef::Qualified(inner, _),
        ) => {
            if let Some(d) = domain_named(inner, catalog, txn, db)? {
                return Err(domain_array(&d.name));
            }
            crate::array::array_of(resolve_type(inner, catalog, txn, db)?)
        }
        _ => data_type(t),
    }
}

/// 0A000 for an array of a domain, which Kiln lacks.
fn domain_array(name: &str) -> SqlError {
    SqlError::unsupported(format!("arrays of the domain {name}"))
        .hint("Kiln checks a domain's constraints on single values: declare the array of the domain's base type.")
}

/// The domain an SQL type name names, if it names one (a built-in type's name never does).
pub fn domain_named(
    t: &ast::DataType,
    catalog: &Catalog,
    txn: &mut Transaction,
    db: &str,
) -> Result<Option<crate::catalog::Domain>> {
    let ast::DataType::Custom(name, _) = t else { return Ok(None) };
    match data_type(t) {
        Err(e) if e.code == code::UNDEFINED_OBJECT => {
            let Ok(n) = name_as_written(name) else { return Ok(None) };
            catalog.domain(txn, db, &n)
        }
        _ => Ok(None),
    }
}

impl<'a> Planner<'a> {
    /// Converts an SQL type name, the database's enum types included ([`resolve_type`]).
    pub(crate) fn data_type(&mut self, t: &ast::DataType) -> Result<DataType> {
        let ty = resolve_type(t, self.catalog, self.txn, self.db)?;
        if let DataType::Enum(e) | DataType::Array(&DataType::Enum(e)) = ty {
            if !self.enum_types.iter().any(|d| std::ptr::eq(*d, e)) {
                self.enum_types.push(e);
            }
        }
        Ok(ty)
    }

    /// A planner for one statement.
    pub fn new(
        txn: &'a mut Transaction,
        catalog: &'a Catalog,
        db: &'a str,
        params: Vec<DataType>,
        system: &'a dyn SystemTables,
        env: &'a dyn crate::expr::Env,
    ) -> Planner<'a> {
        Planner {
            txn,
            catalog,
            db,
            params,
            system,
            env,
            outer: Vec::new(),
            dead_arm: false,
            tables: Vec::new(),
            sequences: Vec::new(),
            views: Vec::new(),
            enum_types: Vec::new(),
            expanding: Vec::new(),
            expansions: 0,
            reusable: true,
            windows_here: false,
            window_aggregate: false,
            describing: false,
            ctes: Vec::new(),
            work_tables: 0,
            functions: Vec::new(),
            routines: Vec::new(),
            routine_args: None,
            calls_writing: false,
            set_item: false,
            routines_bound: Default::default(),
        }
    }

    /// A table's definition as this statement's transaction sees it, remembered as one the
    /// plan depends on.
    pub(crate) fn table(&mut self, name: &str) -> Result<Option<Arc<Table>>> {
        let t = self.catalog.table(self.txn, self.db, name)?;
        if let Some(t) = &t {
            if !self.tables.iter().any(|d| Arc::ptr_eq(d, t)) {
                self.tables.push(t.clone());
            }
        }
        Ok(t)
    }

    /// [`Planner::table`], or 42P01 when there is none.
    pub(crate) fn table_or_err(&mut self, name: &str) -> Result<Arc<Table>> {
        match self.table(name)? {
            Some(t) => Ok(t),
            // 42P01, or 42809 naming a view.
            None => self.catalog.table_or_err(self.txn, self.db, name),
        }
    }

    /// Resolves a name in the enclosing queries, innermost first (a correlated reference):
    /// an `Expr::Outer` into their rows laid end to end, outermost first. The subquery
    /// directly inside the query that has the column records it among its references; the
    /// subqueries between that one and this are marked as reading further out.
    pub(crate) fn resolve_outer(
        &mut self,
        table: Option<&str>,
        name: &str,
        err: SqlError,
    ) -> Result<(Expr, DataType)> {
        for k in (0..self.outer.len()).rev() {
            match self.outer[k].scope.resolve(table, name) {
                Ok((i, t)) => {
                    let base: usize = self.outer[..k].iter().map(|l| l.scope.cols.len()).sum();
                    let level = &mut self.outer[k];
                    if !level.refs.contains(&i) {
                        level.refs.push(i);
                    }
                    for inner in &mut self.outer[k + 1..] {
                        inner.deep = true;
                    }
                    return Ok((Expr::Outer(base + i), t));
                }
                Err(e) if e.code == code::AMBIGUOUS_COLUMN => return Err(e),
                Err(_) => {}
            }
        }
        // An SQL function's argument, where no column has the name.
        if let Some((function, args)) = &self.routine_args {
            if table.is_none_or(|t| t == function) {
                if let Some(&(_, k)) = args.iter().find(|(n, _)| n == name) {
                    return Ok((Expr::Param(k), self.params[k]));
                }
            }
        }
        Err(err)
    }

    /// Plans a subquery that may refer to `scope` (and the queries enclosing it); returns
    /// the plan, the columns of `scope` it reads, and how it reads enclosing rows.
    pub(crate) fn plan_subquery(
        &mut self,
        q: &ast::Query,
        scope: &Scope,
    ) -> Result<(SelectPlan, Vec<usize>, crate::expr::OuterRow)> {
        self.outer.push(Enclosing { scope: scope.clone(), refs: Vec::new(), deep: false });
        let plan = self.query(q, None);
        let level = self.outer.pop().expect("pushed above");
        let shape = crate::expr::OuterRow { width: level.scope.cols.len(), deep: level.deep };
        Ok((plan?, level.refs, shape))
    }

    pub(crate) fn param(&mut self, n: usize) -> DataType {
        if self.params.len() < n {
            self.params.resize(n, DataType::Unknown);
        }
        self.params[n - 1]
    }

    /// Fixes the type of an untyped parameter or literal from its context.
    pub fn coerce(&mut self, e: Expr, ty: DataType, target: DataType) -> Result<(Expr, DataType)> {
        if ty != DataType::Unknown || target == DataType::Unknown {
            return Ok((e, ty));
        }
        match e {
            Expr::Param(i) => {
                if self.params.len() <= i {
                    self.params.resize(i + 1, DataType::Unknown);
                }
                if self.params[i] == DataType::Unknown {
                    self.params[i] = target;
                }
                Ok((Expr::Param(i), target))
            }
            Expr::Const(Value::Text(s)) => {
                Ok((Expr::Const(Value::parse_in(&s, target, self.env.style())?), target))
            }
            e => Ok((e, ty)),
        }
    }

    /// Converts a value of one branch of CASE / COALESCE / GREATEST / LEAST / NULLIF to the
    /// common type of all branches (PostgreSQL's UNION-style resolution), so that
    /// `coalesce(7, 1.5) / 2` divides numerics, not integers.
    pub fn unify(&mut self, e: Expr, ty: DataType, target: DataType) -> Result<Expr> {
        let (e, ty) = self.coerce(e, ty, target)?;
        let widen = ty != target
            && ty != DataType::Unknown
            && ty.is_numeric()
            && target.is_numeric()
            && !(ty.is_integer() && target.is_integer());
        Ok(match e {
            Expr::Const(v) if widen => Expr::Const(v.cast(target)?),
            e if widen => Expr::Cast(Box::new(e), target),
            e => e,
        })
    }
}

/// Where an identifier starts in the statement (line, column), for error positions.
/// `a AND b AND …` (or OR) over `terms` as a balanced tree, left to right; TRUE (FALSE) for
/// no terms.
pub fn balanced(and: bool, mut terms: Vec<Expr>) -> Expr {
    match terms.len() {
        0 => Expr::Const(Value::Bool(and)),
        1 => terms.pop().expect("one term"),
        n => {
            let right = terms.split_off(n / 2);
            let (l, r) = (Box::new(balanced(and, terms)), Box::new(balanced(and, right)));
            if and {
                Expr::And(l, r)
            } else {
                Expr::Or(l, r)
            }
        }
    }
}

pub(crate) fn location_of(i: &ast::Ident) -> Option<(u32, u32)> {
    span_location(i.span)
}

/// Where a span starts (line and column, 1-based), when the parser recorded it.
pub(crate) fn span_location(span: sqlparser::tokenizer::Span) -> Option<(u32, u32)> {
    let start = span.start;
    Some((u32::try_from(start.line).ok()?, u32::try_from(start.column).ok()?))
        .filter(|(l, _)| *l > 0)
}

pub(crate) trait MinKnown {
    fn min_known(self, other: DataType) -> DataType;
}

impl MinKnown for DataType {
    fn min_known(self, other: DataType) -> DataType {
        if self == DataType::Unknown {
            other
        } else {
            self
        }
    }
}

/// Splits a condition into its AND-ed parts.
#[recursive::recursive]
pub fn split_and(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::And(a, b) => {
            split_and(*a, out);
            split_and(*b, out);
        }
        e => out.push(e),
    }
}

/// PostgreSQL's output column name for an expression.
pub fn output_name(e: &ast::Expr) -> String {
    named(e).0
}

/// An expression's output name and how strongly it names the column, as PostgreSQL ranks
/// them: 2 for a column, function or the like, 1 for a type (a cast's) or `case`, 0 for
/// none (`?column?`). A cast keeps its operand's name unless that is weaker than a type's.
#[recursive::recursive]
fn named(e: &ast::Expr) -> (String, u8) {
    match e {
        ast::Expr::Cast { expr, data_type, .. } => match named(expr) {
            (_, 0 | 1) => (data_type_output_name(data_type), 1),
            strong => strong,
        },
        ast::Expr::Nested(inner) => named(inner),
        ast::Expr::TypedString(ts) => (data_type_output_name(&ts.data_type), 1),
        ast::Expr::Interval(_) => ("interval".into(), 1),
        other => match plain_name(other) {
            n if n == "?column?" => (n, 0),
            n if n == "case" => (n, 1),
            n => (n, 2),
        },
    }
}

/// The output name of an expression that is not a cast.
fn plain_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(i) => ident(i),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(ident).unwrap_or_default(),
        ast::Expr::Function(f) => {
            f.name.0.last().and_then(|p| p.as_ident()).map(ident).unwrap_or_default()
        }
        ast::Expr::Array(_) => "array".into(),
        // a[1] is named after a; (r).x after x.
        ast::Expr::CompoundFieldAccess { root, access_chain } => match access_chain.last() {
            Some(ast::AccessExpr::Dot(ast::Expr::Identifier(i))) => ident(i),
            _ => output_name(root),
        },
        ast::Expr::Case { .. } => "case".into(),
        ast::Expr::Extract { .. } => "extract".into(),
        ast::Expr::AtTimeZone { .. } => "timezone".into(),
        ast::Expr::Substring { shorthand, .. } => {
            if *shorthand { "substr" } else { "substring" }.into()
        }
        ast::Expr::Position { .. } => "position".into(),
        ast::Expr::Overlay { .. } => "overlay".into(),
        ast::Expr::Floor { .. } => "floor".into(),
        ast::Expr::Ceil { .. } => "ceil".into(),
        ast::Expr::Trim { .. } => "btrim".into(),
        ast::Expr::Exists { .. } => "exists".into(),
        ast::Expr::Subquery(q) => match q.body.as_ref() {
            ast::SetExpr::Select(s) => match s.projection.first() {
                Some(ast::SelectItem::UnnamedExpr(x)) => output_name(x),
                Some(ast::SelectItem::ExprWithAlias { alias, .. }) => ident(alias),
                _ => "?column?".into(),
            },
            _ => "?column?".into(),
        },
        _ => "?column?".into(),
    }
}

/// An expression as Kiln stores it (a DEFAULT, a CHECK, an index's expressions and
/// condition) and shows it back, in PostgreSQL's spelling: without outermost parentheses,
/// cast types by their catalog names (`'x'::text`, `'a'::character varying`, not
/// `'x'::TEXT`).
pub(crate) fn stored_text(e: &ast::Expr) -> String {
    let mut e = e.clone();
    while let ast::Expr::Nested(inner) = e {
        e = *inner;
    }
    casts_named_as_catalog(&mut e);
    e.to_string()
}

/// Names the types of `e`'s casts as PostgreSQL's catalog does (`::text`, not `::TEXT`).
pub(crate) fn casts_named_as_catalog(e: &mut ast::Expr) {
    let _ = ast::visit_expressions_mut(e, |x| {
        if let ast::Expr::Cast { data_type: t, .. } = x {
            let name = match t {
                ast::DataType::Custom(..) | ast::DataType::Regclass => t.to_string().to_lowercase(),
                _ => match data_type(t) {
                    Ok(ty) => ty.sql_name(),
                    Err(_) => t.to_string().to_lowercase(),
                },
            };
            *t = ast::DataType::Custom(ast::ObjectName::from(vec![ast::Ident::new(name)]), vec![]);
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

pub(crate) fn data_type_output_name(t: &ast::DataType) -> String {
    // PostgreSQL names a cast column after the type's catalog name (an array cast after
    // its element type's). The reg* types, which Kiln reads as their text, keep theirs.
    if matches!(t, ast::DataType::Regclass) {
        return "regclass".into();
    }
    if let ast::DataType::Custom(name, _) = t {
        let last = name.0.last().and_then(|p| p.as_ident()).map(ident).unwrap_or_default();
        if matches!(last.as_str(), "regclass" | "regtype" | "regnamespace" | "regproc" | "regrole")
        {
            return last;
        }
    }
    match (data_type(t), t) {
        (Ok(t), _) => {
            t.element().filter(|_| matches!(t, DataType::Array(_))).unwrap_or(t).type_name()
        }
        // A type of the database's own (an enum type): its name.
        (Err(_), ast::DataType::Custom(name, _)) => {
            match name.0.last().and_then(|p| p.as_ident()) {
                Some(i) => ident(i),
                None => "?column?".into(),
            }
        }
        (
            Err(_),
            ast::DataType::Array(
                ast::ArrayElemTypeDef::SquareBracket(inner, _)
                | ast::ArrayElemTypeDef::Qualified(inner, _),
            ),
        ) => data_type_output_name(inner),
        (Err(_), _) => "?column?".into(),
    }
}

/// Rewrites an expression over the input row into one over the grouped row
/// (group keys, then aggregates).
#[recursive::recursive]
pub(crate) fn post_agg(e: Expr, g: &mut Grouping, scope: &Scope) -> Result<Expr> {
    if let Some(i) = g.keys.iter().position(|k| *k == e) {
        return Ok(Expr::Column(i));
    }
    match e {
        // GROUPING(a, b, …): per grouping set, a bit for each argument (the first the most
        // significant) set when the set does not group by it.
        Expr::Func(Func::Grouping, args) => {
            let mut at = Vec::with_capacity(args.len());
            for a in &args {
                let Some(k) = g.keys.iter().position(|k| k == a) else {
                    return Err(SqlError::new(
                        code::GROUPING,
                        "arguments to GROUPING must be grouping expressions of the associated query level",
                    ));
                };
                at.push(k);
            }
            if g.sets.is_empty() {
                return Ok(Expr::Const(Value::Int(0)));
            }
            let masks = g
                .sets
                .iter()
                .map(|set| {
                    Value::Int(at.iter().fold(0i64, |m, k| (m << 1) | i64::from(!set.contains(k))))
                })
                .collect();
            let set = Expr::Column(g.keys.len() - 1);
            Ok(Expr::Func(Func::GroupingBits, vec![Expr::Const(Value::Array(masks)), set]))
        }
        Expr::Agg(f, d, arg, ty) => {
            let arg = arg.map(|a| *a);
            let entry = (f, d, arg, ty);
            let idx = match g.aggs.iter().position(|a| *a == entry) {
                Some(i) => i,
                None => {
                    g.aggs.push(entry);
                    g.aggs.len() - 1
                }
            };
            Ok(Expr::Column(g.keys.len() + idx))
        }
        Expr::Column(i) => {
            let name = match scope.cols.get(i) {
                Some(ScopeCol { table: Some(t), name, .. }) => format!("{t}.{name}"),
                Some(c) => c.name.clone(),
                None => format!("#{i}"),
            };
            Err(SqlError::new(
                code::GROUPING,
                format!(
                    "column \"{name}\" must appear in the GROUP BY clause or be used in an aggregate function"
                ),
            ))
        }
        Expr::Const(_) | Expr::Param(_) => Ok(e),
        Expr::Subquery(_, _, ref refs) if !refs.is_empty() => Err(SqlError::unsupported(
            "a correlated subquery in the select list, HAVING or ORDER BY of a grouped query",
        )),
        other => other.try_map_children(&mut |c| post_agg(c, g, scope)),
    }
}

/// `WITH … INSERT | UPDATE | DELETE …`, which the SQL parser reads as a query whose body is
/// the statement: that statement, and the common table expressions it sees. Any other
/// statement is itself, without any.
pub(crate) fn split_with(stmt: &ast::Statement) -> (Option<&ast::With>, &ast::Statement) {
    if let ast::Statement::Query(q) = stmt {
        if let Some(with) = &q.with {
            if let ast::SetExpr::Insert(s)
            | ast::SetExpr::Update(s)
            | ast::SetExpr::Delete(s)
            | ast::SetExpr::Merge(s) = q.body.as_ref()
            {
                return (Some(with), s);
            }
        }
    }
    (None, stmt)
}

#[cfg(test)]
mod keyword_tests {
    #[test]
    fn quoted_keywords_are_sorted_and_quoted() {
        assert_eq!(super::quote_ident("select"), "\"select\"");
        assert_eq!(super::quote_ident("user"), "\"user\"");
        // Unreserved keywords stand as they are, as in PostgreSQL.
        assert_eq!(super::quote_ident("name"), "name");
        assert_eq!(super::quote_ident("type"), "type");
        assert_eq!(super::quote_ident("Mixed"), "\"Mixed\"");
    }
}

#[cfg(test)]
mod type_name_tests {
    use crate::error::code;

    /// A type named with a schema: pg_catalog's and public's names are the types they name;
    /// any other schema's name is an unknown type, answered without recursing (`x.y` once
    /// sent the binder between the type's text and its parse until the stack overflowed).
    #[test]
    fn qualified_type_names_resolve_or_fail_cleanly() {
        let parse = |t: &str| {
            let dialect = sqlparser::dialect::PostgreSqlDialect {};
            let mut p = sqlparser::parser::Parser::new(&dialect).try_with_sql(t).unwrap();
            p.parse_data_type().unwrap()
        };
        let int2 = super::data_type(&parse("pg_catalog.int2")).unwrap();
        assert_eq!(int2, super::data_type(&parse("smallint")).unwrap());
        for name in ["app.mood", "dat.\"from\"", "x.y[]", "a.b.c"] {
            let e = super::data_type(&parse(name)).unwrap_err();
            assert!(
                [code::UNDEFINED_OBJECT, code::FEATURE_NOT_SUPPORTED].contains(&e.code),
                "{name}: {e:?}"
            );
        }
    }
}
