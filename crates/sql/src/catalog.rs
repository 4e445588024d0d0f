//! The catalog: table, index and database definitions, stored in the engine's
//! `kiln_catalog` keyspace and read through the transaction like any other data, so DDL is
//! transactional and a statement conflicts with concurrent DDL on the tables it uses. Every
//! catalog write is guarded (`Transaction::put_guarded`): a definition read, changed and
//! written back fails with 40001 at commit if another transaction committed a change to it
//! meanwhile, at every isolation level, READ COMMITTED included — two concurrent ALTERs of
//! one table, or two CREATEs drawing the same id, cannot both commit.
//!
//! Keys: `d/<db>` (a database), `t/<db>/<table>` (a table, JSON), `i/<db>/<index>` (the
//! table an index belongs to), `s/<db>/<sequence>` (a sequence, JSON), `next_id` (the next
//! table, index or sequence id, 8 bytes BE), `y/<db>/<type>` (an enum type, JSON;
//! `crate::enums`), `n/<db>/<schema>` (a schema made with CREATE SCHEMA, JSON), `D/<db>/<domain>` (a domain,
//! JSON). A relation
//! in such a schema is named `<schema>.<name>` in these keys and in its definition (see
//! [`schema_of`]); one in `public` by its bare name. Table `id` N keeps its rows in keyspace `t<N>`,
//! index N its entries in `i<N>`; a sequence keeps its durable record in `kiln_sequences`
//! under a key drawn at random when it is created (`crate::sequence`).

use std::collections::HashMap;
use std::sync::Arc;

use kiln_engine::{Scan, Transaction};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::enums::EnumType;
use crate::error::{code, Result, SqlError};
use crate::sequence::Sequence;
use crate::types::DataType;

/// The catalog keyspace.
pub const CATALOG: &str = "kiln_catalog";

/// A column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: DataType,
    /// Whether it accepts NULL.
    pub nullable: bool,
    /// The DEFAULT expression, as SQL text.
    pub default: Option<String>,
    /// `GENERATED … AS IDENTITY`: values come from the sequence it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    /// Its number (`attnum`), kept when other columns are dropped, as PostgreSQL keeps it;
    /// 0 until the table's columns first change ([`Table::attnum`]: its position + 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub number: i16,
    /// Its `COMMENT ON` text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// `GENERATED ALWAYS AS (expression) STORED`: the expression, as SQL text, over the
    /// row's other columns; its value is computed and stored whenever the row is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<String>,
    /// The domain the column was declared with (`release_year year`): a copy of its
    /// definition, whose NOT NULL and CHECK constraints every value written to the column
    /// meets and whose DEFAULT the column takes when it has none of its own. Its type `ty`
    /// is the domain's base type. `ALTER DOMAIN` rewrites the copies with the domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<Box<Domain>>,
}

impl Column {
    /// The DEFAULT a row takes when it gives no value: the column's own, else its domain's.
    pub fn default_text(&self) -> Option<&str> {
        self.default.as_deref().or_else(|| self.domain.as_ref()?.default.as_deref())
    }

    /// A nullable column with no default, numbered when its table takes it.
    pub fn new(name: String, ty: DataType) -> Column {
        Column {
            name,
            ty,
            nullable: true,
            default: None,
            identity: None,
            number: 0,
            comment: None,
            generated: None,
            domain: None,
        }
    }
}

/// A domain (`CREATE DOMAIN year AS integer CHECK (VALUE >= 1901)`): a base type with
/// constraints on its values and a default. Kiln gives expressions of a domain its base
/// type; a column of one keeps a copy of the definition ([`Column::domain`]) and a cast to
/// one (`x::year`) checks its constraints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Domain {
    /// Its OID (`pg_type.oid`).
    pub oid: u32,
    /// Its name (domains live in schema `public`).
    pub name: String,
    /// Its base type, with the type modifier given (`varchar(20)`).
    pub base: DataType,
    /// `NOT NULL`: a column of the domain takes no NULL.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_null: bool,
    /// Its DEFAULT, as SQL text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Its CHECK constraints, over `VALUE`, in the order they were added.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<DomainCheck>,
    /// Its `COMMENT ON DOMAIN` text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// A CHECK constraint of a domain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DomainCheck {
    /// Its name (`<domain>_check` unless given).
    pub name: String,
    /// Its condition, as SQL text over `VALUE`.
    pub expr: String,
    /// Its OID (`pg_constraint.oid`).
    pub oid: u32,
    /// Added `NOT VALID` and not validated since: the values already stored were not
    /// checked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_valid: bool,
}

fn is_zero(n: &i16) -> bool {
    *n == 0
}

/// An identity column's generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    /// GENERATED ALWAYS (true: an INSERT may not give a value, an UPDATE may only set
    /// DEFAULT) or BY DEFAULT.
    pub always: bool,
    /// The sequence (owned by the column).
    pub sequence: String,
}

/// A secondary index (or the index of a UNIQUE constraint).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Index {
    /// Its name.
    pub name: String,
    /// Its id: entries live in keyspace `i<id>`.
    pub id: u64,
    /// Indexed columns, by position (empty for an index on expressions).
    pub columns: Vec<usize>,
    /// Whether values must be unique.
    pub unique: bool,
    /// Whether it implements a UNIQUE constraint (not only CREATE UNIQUE INDEX).
    #[serde(default)]
    pub constraint: bool,
    /// Its `COMMENT ON` text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// An index on expressions: every key part as SQL text over the table's columns (a
    /// column part as its name); `columns` is then empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expressions: Vec<String>,
    /// A partial index's `WHERE` condition (SQL text): rows for which it is not true have
    /// no entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate: Option<String>,
    /// `INCLUDE (…)` columns, by position: carried by the index in PostgreSQL, not part of
    /// its key (Kiln's entries hold the key and the row's primary key; these columns only
    /// tie the index to them, so dropping one drops the index).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<usize>,
    /// `NULLS NOT DISTINCT`: a unique index on which NULLs are equal to one another.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nulls_not_distinct: bool,
    /// Its access method as written (`USING gin`; none: btree). A btree or hash index is
    /// built and kept; a gin, gist, spgist or brin index is recorded, shown and dumped but
    /// holds no entries, and no query uses it (see [`Index::is_built`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

/// The access methods `CREATE INDEX … USING` takes; the first two are built.
pub const INDEX_METHODS: &[&str] = &["btree", "hash", "gin", "gist", "spgist", "brin"];

impl Index {
    /// Its access method (`btree` unless written otherwise).
    pub fn method(&self) -> &str {
        self.method.as_deref().unwrap_or("btree")
    }

    /// Whether it holds entries (btree, hash): indexes of the other methods are recorded
    /// only, so that schemas and dumps that declare them load; queries scan instead.
    pub fn is_built(&self) -> bool {
        matches!(self.method(), "btree" | "hash")
    }

    /// Whether `other` indexes the same thing: columns, expressions, condition, uniqueness
    /// and method (a partition's index made for its parent's has its definition).
    pub fn same_definition(&self, other: &Index) -> bool {
        self.columns == other.columns
            && self.expressions == other.expressions
            && self.predicate == other.predicate
            && self.unique == other.unique
            && self.method() == other.method()
    }

    /// The index's keyspace.
    pub fn keyspace(&self) -> String {
        format!("i{}", self.id)
    }

    /// Whether it holds every row under its columns' values: what a lookup by columns, a
    /// foreign key or an ON CONFLICT (columns) may use.
    pub fn is_plain(&self) -> bool {
        self.expressions.is_empty() && self.predicate.is_none() && self.is_built()
    }

    /// Its key parts as text: the columns' names (quoted where SQL needs it), or the
    /// expressions as
    /// [`shown_part`] writes them.
    pub fn part_names(&self, table: &Table) -> Vec<String> {
        if self.expressions.is_empty() {
            self.columns.iter().map(|&c| crate::bind::quote_ident(&table.columns[c].name)).collect()
        } else {
            self.expressions.iter().map(|e| shown_part(e)).collect()
        }
    }
}

/// An index key part as PostgreSQL writes it alone (`pg_get_indexdef(index, n)`, a duplicate
/// key's detail): a column, a function call or a cast as it is, an operator expression in
/// parentheses (`(n * 2)`).
pub fn shown_part(e: &str) -> String {
    let mut e = e.trim();
    while let Some(inner) = enclosed(e, '(') {
        e = inner.trim();
    }
    if top_level_space(e) {
        format!("({e})")
    } else {
        e.to_string()
    }
}

/// An index key part as PostgreSQL writes it in the index's definition: a column or a
/// function call as it is, any other expression (as [`shown_part`] writes it) in parentheses
/// of its own (`((n * 2))`).
pub fn defined_part(e: &str) -> String {
    let e = shown_part(e);
    let word = |s: &str| {
        !s.is_empty()
            && (s.chars().all(|c| c.is_alphanumeric() || c == '_') || enclosed(s, '"').is_some())
    };
    let call =
        e.find('(').is_some_and(|open| word(&e[..open]) && enclosed(&e[open..], '(').is_some());
    if word(&e) || call {
        e
    } else {
        format!("({e})")
    }
}

/// The text between `s`'s first character (an opening `(` or `"`) and its match, when that
/// match is `s`'s last character.
fn enclosed(s: &str, open: char) -> Option<&str> {
    if !s.starts_with(open) || s.len() < 2 {
        return None;
    }
    if open == '"' {
        let inner = &s[1..s.len() - 1];
        return (s.ends_with('"') && !inner.replace("\"\"", "").contains('"')).then_some(inner);
    }
    let (mut depth, mut quoted) = (0usize, false);
    for (i, c) in s.char_indices() {
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => {
                depth -= 1;
                if depth == 0 {
                    return (i == s.len() - 1).then(|| &s[1..i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether `s` has a space outside parentheses, string literals and quoted names: an
/// operator expression.
fn top_level_space(s: &str) -> bool {
    let (mut depth, mut quote) = (0i32, None);
    for c in s.chars() {
        match (c, quote) {
            ('\'' | '"', None) => quote = Some(c),
            (_, Some(q)) if c == q => quote = None,
            (_, Some(_)) => {}
            ('(', None) => depth += 1,
            (')', None) => depth -= 1,
            (' ', None) if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// An index's key expressions and condition, bound over its table's row.
#[derive(Debug)]
pub struct BoundIndex {
    /// One per key part.
    pub parts: Vec<crate::expr::Expr>,
    /// The partial index's condition.
    pub predicate: Option<crate::expr::Expr>,
}

/// A table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// Its id: rows live in keyspace `t<id>`.
    pub id: u64,
    /// The database it belongs to.
    pub database: String,
    /// Its name.
    pub name: String,
    /// Its columns.
    pub columns: Vec<Column>,
    /// Primary key columns by position; empty when the table has none (rows are then keyed
    /// by a hidden row id).
    pub primary_key: Vec<usize>,
    /// The primary key constraint's name.
    #[serde(default)]
    pub primary_key_name: Option<String>,
    /// Secondary indexes.
    pub indexes: Vec<Index>,
    /// `WITH (...)` storage options, kept for display.
    #[serde(default)]
    pub options: Vec<(String, String)>,
    /// FOREIGN KEY constraints this table's rows must satisfy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_keys: Vec<ForeignKey>,
    /// The foreign keys of other tables (or this one) that reference this table: a
    /// referenced table's definition names them, so a plan that deletes or updates its rows
    /// is re-bound when one is added or dropped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub referenced_by: Vec<Reference>,
    /// CHECK constraints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    /// The highest column number any column ever had (dropped ones included), once columns
    /// were dropped; a new column is numbered after it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub last_attnum: i16,
    /// Its `COMMENT ON` text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Its triggers (`CREATE TRIGGER`), by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<Trigger>,
    /// A materialized view: the table holds its query's rows as of its last refresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matview: Option<MatView>,
    /// A partitioned table (`PARTITION BY`): it holds no rows itself; its partitions do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitioning: Option<Partitioning>,
    /// A partition (`PARTITION OF`, `ATTACH PARTITION`): its parent and its bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_of: Option<PartitionOf>,
}

/// How a partitioned table divides its rows (`PARTITION BY`, see `crate::partition`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Partitioning {
    /// RANGE or LIST.
    pub strategy: PartitionStrategy,
    /// The key's columns, by position.
    pub key: Vec<usize>,
    /// Its partitions, by catalog name, in the order of their bounds (PostgreSQL's order:
    /// ranges by lower bound, lists by least value, the default last).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<String>,
}

/// A partitioning strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PartitionStrategy {
    /// `PARTITION BY RANGE`: each partition holds the keys from its lower bound (included)
    /// to its upper bound (excluded).
    Range,
    /// `PARTITION BY LIST`: each partition holds the keys it lists (one key column).
    List,
}

/// What makes a table a partition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionOf {
    /// The partitioned table, by catalog name.
    pub parent: String,
    /// The keys it holds.
    pub bound: PartitionBound,
}

/// A partition's bound; values are kept as their text in the key column's type (ISO dates,
/// UTC times), read back with `Value::parse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PartitionBound {
    /// `FOR VALUES FROM (…) TO (…)`: one datum per key column each.
    Range { from: Vec<RangeDatum>, to: Vec<RangeDatum> },
    /// `FOR VALUES IN (…)`: the listed keys (`None` is NULL).
    List(Vec<Option<String>>),
    /// `DEFAULT`: every key no other partition holds.
    Default,
}

/// One column's datum of a range bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RangeDatum {
    MinValue,
    Value(String),
    MaxValue,
}

/// What makes a table a materialized view (`CREATE MATERIALIZED VIEW`, `exec::views`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatView {
    /// Its query, as SQL text (relations named as the catalog names them).
    pub query: String,
    /// Whether it holds its query's rows (false after `WITH NO DATA`: reading it is 55000).
    pub populated: bool,
    /// The tables and views its query reads: none can be dropped while it exists.
    pub depends_on: Vec<String>,
}

/// A trigger on a table (`CREATE TRIGGER`, see `exec::triggers`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trigger {
    /// Its id (its OID is derived from it).
    pub id: u64,
    /// Its name, unique among the table's triggers.
    pub name: String,
    /// BEFORE (true) or AFTER (false).
    pub before: bool,
    /// Whether it fires on INSERT.
    pub insert: bool,
    /// Whether it fires on UPDATE.
    pub update: bool,
    /// Whether it fires on DELETE.
    pub delete: bool,
    /// `UPDATE OF` columns, by name (empty: any UPDATE).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub update_of: Vec<String>,
    /// FOR EACH ROW (true) or FOR EACH STATEMENT (false).
    pub row: bool,
    /// The WHEN condition, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// The function it runs (its catalog name).
    pub function: String,
    /// The arguments given to it (`TG_ARGV`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Set by `ALTER TABLE … DISABLE TRIGGER`: it does not fire.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
}

impl Trigger {
    /// Whether it fires for an event (`INSERT`, `UPDATE`, `DELETE`).
    pub fn fires_on(&self, event: &str) -> bool {
        if self.disabled {
            return false;
        }
        match event {
            "INSERT" => self.insert,
            "UPDATE" => self.update,
            "DELETE" => self.delete,
            _ => false,
        }
    }
}

/// A function made with CREATE FUNCTION (see `exec::routines`): a PL/pgSQL trigger
/// function, or a function of SQL or PL/pgSQL that returns a value, or a procedure.
///
/// Functions of one name are told apart by their argument types (overloading): each is
/// kept under its name and those types ([`Function::signature`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Function {
    /// Its id (its OID is derived from it).
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Its language (`plpgsql` or `sql`).
    pub language: String,
    /// Its body, as written.
    pub body: String,
    /// Its `COMMENT ON` text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Its arguments, in order, of every mode (a trigger function has none): a call gives
    /// the IN and INOUT ones ([`Function::inputs`]); the OUT and INOUT ones, and `RETURNS
    /// TABLE`'s columns (mode [`ArgMode::Table`], last), are its result's columns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<FunctionArg>,
    /// What it returns (a function stored before functions returned values is a trigger
    /// function).
    #[serde(default)]
    pub returns: Returns,
    /// `RETURNS SETOF …` / `RETURNS TABLE (…)`: a set of rows (`proretset`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub set: bool,
    /// `IMMUTABLE` (`i`), `STABLE` (`s`) or `VOLATILE` (`v`, the default), as `provolatile`.
    #[serde(default = "volatile")]
    pub volatility: char,
    /// `STRICT`: a call with a NULL argument is NULL without running the body.
    #[serde(default)]
    pub strict: bool,
    /// What makes it an aggregate, when CREATE AGGREGATE made it (`prokind` `a`; its
    /// language is then `internal` and its body PostgreSQL's `aggregate_dummy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate: Option<Aggregate>,
}

/// An aggregate made with CREATE AGGREGATE (see `exec::aggregates`): a state of type
/// `stype`, starting at `initcond`, that the transition function takes each row into, and
/// the final function that makes the result of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    /// The transition function (`SFUNC`): state and arguments in, state out.
    pub sfunc: AggregateFn,
    /// The state's type (`STYPE`).
    pub stype: DataType,
    /// The final function (`FINALFUNC`): state in (and a NULL per argument with
    /// `FINALFUNC_EXTRA`), result out. Without one the result is the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalfunc: Option<AggregateFn>,
    /// `FINALFUNC_EXTRA`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub finalfunc_extra: bool,
    /// The state's first value, as text (`INITCOND`; none: NULL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initcond: Option<String>,
    /// The options checked and kept for the catalogs (`pg_aggregate`) that Kiln's way of
    /// running aggregates has no use for — one pass over a group's rows, a window frame's
    /// state computed forward: `combinefunc`, the moving-aggregate `msfunc`, `minvfunc`,
    /// `mfinalfunc`, `mfinalfunc_extra`, `minitcond`, `sortop`, `sspace`,
    /// `msspace`, `finalfunc_modify`, `mfinalfunc_modify`, `parallel` — by name.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub kept: std::collections::BTreeMap<String, String>,
    /// The moving-aggregate state's type (`MSTYPE`), kept as `kept` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mstype: Option<DataType>,
    /// The functions `kept` names, by option: what the aggregate depends on beyond its
    /// transition and final functions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<(String, AggregateFn)>,
}

impl Aggregate {
    /// Every function it calls or names.
    pub fn functions_mut(&mut self) -> impl Iterator<Item = &mut AggregateFn> {
        std::iter::once(&mut self.sfunc)
            .chain(self.finalfunc.as_mut())
            .chain(self.others.iter_mut().map(|(_, f)| f))
    }

    /// Whether it calls or names function `f`.
    pub fn uses(&self, f: &Function) -> bool {
        self.sfunc.is(f)
            || self.finalfunc.as_ref().is_some_and(|x| x.is(f))
            || self.others.iter().any(|(_, x)| x.is(f))
    }
}

/// A function an aggregate calls: a function made with CREATE FUNCTION (its name and
/// argument types, which identify it) or a built-in function (its name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggregateFn {
    /// Its name.
    pub name: String,
    /// Its argument types when CREATE FUNCTION made it (`None`: built in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<DataType>>,
}

impl AggregateFn {
    /// Whether it is `f`.
    pub fn is(&self, f: &Function) -> bool {
        self.name == f.name && self.args.as_ref().is_some_and(|a| *a == f.input_types())
    }
}

fn volatile() -> char {
    'v'
}

/// An argument of a function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionArg {
    /// Its name, when it has one (the body may refer to it by it).
    pub name: Option<String>,
    /// Its type.
    pub ty: DataType,
    /// Its default, as written (an expression of no variables).
    pub default: Option<String>,
    /// IN, OUT, INOUT, or a column of `RETURNS TABLE`.
    #[serde(default, skip_serializing_if = "ArgMode::is_in")]
    pub mode: ArgMode,
}

/// How an argument passes (`proargmodes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ArgMode {
    /// IN: given by the call.
    #[default]
    In,
    /// OUT: a column of the result.
    Out,
    /// INOUT: both.
    InOut,
    /// A column of `RETURNS TABLE (…)`.
    Table,
}

impl ArgMode {
    fn is_in(&self) -> bool {
        *self == ArgMode::In
    }

    /// Whether a call gives it.
    pub fn input(self) -> bool {
        matches!(self, ArgMode::In | ArgMode::InOut)
    }

    /// Whether it is a column of the result.
    pub fn output(self) -> bool {
        !matches!(self, ArgMode::In)
    }

    /// Its letter in `proargmodes`.
    pub fn letter(self) -> char {
        match self {
            ArgMode::In => 'i',
            ArgMode::Out => 'o',
            ArgMode::InOut => 'b',
            ArgMode::Table => 't',
        }
    }
}

/// What a function returns.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub enum Returns {
    /// `RETURNS trigger`.
    #[default]
    Trigger,
    /// `RETURNS type`: one value.
    Value(DataType),
    /// `RETURNS void`.
    Void,
    /// A procedure (CREATE PROCEDURE), run by CALL.
    Procedure,
    /// A row of the OUT and INOUT arguments' (or `RETURNS TABLE`'s) columns, two or more
    /// (`record`; one such argument makes the function return its type, `Value`).
    Record,
    /// A row of a table's columns (`RETURNS t`, `RETURNS SETOF t`; the table's row type),
    /// as the table has them when a call is bound.
    Row(String),
}

impl Function {
    /// The argument types, as a call names them: `(integer, text)`.
    pub fn signature(&self) -> String {
        let types: Vec<String> = self.inputs().map(|a| a.ty.sql_name()).collect();
        format!("{}({})", unqualified(&self.name), types.join(", "))
    }

    /// The arguments a call gives (IN and INOUT), in order.
    pub fn inputs(&self) -> impl Iterator<Item = &FunctionArg> {
        self.args.iter().filter(|a| a.mode.input())
    }

    /// The types of the arguments a call gives: what tells functions of a name apart.
    pub fn input_types(&self) -> Vec<DataType> {
        self.inputs().map(|a| a.ty).collect()
    }

    /// The arguments that are columns of its result (OUT, INOUT, `RETURNS TABLE`'s).
    pub fn outputs(&self) -> impl Iterator<Item = &FunctionArg> {
        self.args.iter().filter(|a| a.mode.output())
    }

    /// How many arguments a call must give (those after the first with a default may be
    /// left out).
    pub fn required_args(&self) -> usize {
        let inputs: Vec<&FunctionArg> = self.inputs().collect();
        inputs.iter().position(|a| a.default.is_some()).unwrap_or(inputs.len())
    }
}

/// What a foreign key does to referencing rows when the referenced row is deleted or its
/// key updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FkAction {
    /// Fail if referencing rows remain at the end of the statement (the default).
    NoAction,
    /// Fail at once if referencing rows exist.
    Restrict,
    /// Delete the referencing rows, or update their keys with the referenced row's.
    Cascade,
    /// Set the referencing columns to NULL.
    SetNull,
    /// Set the referencing columns to their defaults (which must then be referenced).
    SetDefault,
}

impl FkAction {
    /// The SQL words.
    pub fn sql(self) -> &'static str {
        match self {
            FkAction::NoAction => "NO ACTION",
            FkAction::Restrict => "RESTRICT",
            FkAction::Cascade => "CASCADE",
            FkAction::SetNull => "SET NULL",
            FkAction::SetDefault => "SET DEFAULT",
        }
    }

    /// `pg_constraint.confdeltype` / `confupdtype`.
    pub fn code(self) -> &'static str {
        match self {
            FkAction::NoAction => "a",
            FkAction::Restrict => "r",
            FkAction::Cascade => "c",
            FkAction::SetNull => "n",
            FkAction::SetDefault => "d",
        }
    }
}

/// A FOREIGN KEY constraint (MATCH SIMPLE: a row with a NULL in its key references nothing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForeignKey {
    /// The constraint's name.
    pub name: String,
    /// The referencing columns, by position.
    pub columns: Vec<usize>,
    /// The referenced table.
    pub table: String,
    /// The referenced columns, by position: its primary key or a unique constraint's.
    pub ref_columns: Vec<usize>,
    /// ON DELETE.
    pub on_delete: FkAction,
    /// ON UPDATE.
    pub on_update: FkAction,
    /// DEFERRABLE: SET CONSTRAINTS may put its checks off to the commit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deferrable: bool,
    /// INITIALLY DEFERRED: its checks wait for the commit unless SET CONSTRAINTS says
    /// otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub initially_deferred: bool,
}

impl ForeignKey {
    /// Whether `other` is the same constraint, whatever its name: the same columns
    /// referencing the same key (a partition's copy of its parent's, or one ATTACH adopts).
    pub fn same_definition(&self, other: &ForeignKey) -> bool {
        self.columns == other.columns
            && self.table == other.table
            && self.ref_columns == other.ref_columns
    }
}

/// A foreign key that references a table: the referencing table and the constraint's name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    /// The referencing table.
    pub table: String,
    /// The constraint's name there.
    pub constraint: String,
}

/// A CHECK constraint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The constraint's name.
    pub name: String,
    /// The condition, as SQL text over the table's columns.
    pub expr: String,
}

impl Table {
    /// The table's keyspace.
    pub fn keyspace(&self) -> String {
        format!("t{}", self.id)
    }

    /// The name of its primary key (constraint and index): as given, else `<table>_pkey`.
    pub fn pkey_name(&self) -> String {
        self.primary_key_name.clone().unwrap_or_else(|| format!("{}_pkey", unqualified(&self.name)))
    }

    /// The number (`attnum`) of column `i`: 1-based, and unchanged when earlier columns are
    /// dropped.
    pub fn attnum(&self, i: usize) -> i16 {
        match self.columns[i].number {
            0 => i as i16 + 1,
            n => n,
        }
    }

    /// Gives every column its number for good, before the column list changes.
    fn pin_attnums(&mut self) {
        for i in 0..self.columns.len() {
            self.columns[i].number = self.attnum(i);
        }
        let highest = self.columns.iter().map(|c| c.number).max().unwrap_or(0);
        self.last_attnum = self.last_attnum.max(highest);
    }

    /// Appends `column`, numbered after every column the table ever had.
    pub fn push_column(&mut self, mut column: Column) {
        self.pin_attnums();
        self.last_attnum += 1;
        column.number = self.last_attnum;
        self.columns.push(column);
    }

    /// Removes column `i`; the others keep their numbers.
    pub fn remove_column(&mut self, i: usize) -> Column {
        self.pin_attnums();
        self.columns.remove(i)
    }

    /// The position of column `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// A column position or 42703.
    pub fn column_or_err(&self, name: &str) -> Result<usize> {
        self.column(name).ok_or_else(|| {
            SqlError::new(
                code::UNDEFINED_COLUMN,
                format!(
                    "column \"{name}\" of relation \"{}\" does not exist",
                    unqualified(&self.name)
                ),
            )
        })
    }
}

impl View {
    /// Its columns' names.
    pub fn column_names(&self) -> Vec<String> {
        let given = |i: usize| self.aliases.get(i).cloned();
        self.columns.iter().enumerate().map(|(i, (n, _))| given(i).unwrap_or(n.clone())).collect()
    }
}

/// A view: a stored query, planned again wherever it is read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct View {
    /// Its id (its OID is derived from it, as a table's is).
    pub id: u64,
    /// The database it belongs to.
    pub database: String,
    /// Its name.
    pub name: String,
    /// The query, as SQL text.
    pub query: String,
    /// The columns its query gave when it was created, as the query names them: a view's
    /// columns are fixed then (a `*` in its query does not take columns added to a table
    /// later).
    pub columns: Vec<(String, DataType)>,
    /// Column names given in `CREATE VIEW name (a, b, …)`; the first columns take them.
    pub aliases: Vec<String>,
    /// The tables and views its query reads, by name: none of them can be dropped or have
    /// their columns changed while it exists.
    pub depends_on: Vec<String>,
    /// Its `COMMENT ON` text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// The functions and aggregates made with CREATE FUNCTION / CREATE AGGREGATE its query
    /// calls, by signature (`name(integer, text)`): none of them can be dropped while it
    /// exists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<String>,
}

fn table_key(db: &str, name: &str) -> Vec<u8> {
    format!("t/{db}/{name}").into_bytes()
}

/// The relation names a table's definition holds besides its own: its indexes' and its primary
/// key's (whose index is the table's own keyspace, but whose name is a relation's in
/// PostgreSQL, so that no other relation may take it), as catalog names in the table's
/// schema (an index's own name is unqualified, as a constraint's is).
fn index_names(table: &Table) -> Vec<String> {
    let mut names: Vec<String> =
        table.indexes.iter().map(|i| beside(&table.name, &i.name)).collect();
    if !table.primary_key.is_empty() {
        names.push(beside(&table.name, &table.pkey_name()));
    }
    names
}

fn index_key(db: &str, name: &str) -> Vec<u8> {
    format!("i/{db}/{name}").into_bytes()
}

fn sequence_key(db: &str, name: &str) -> Vec<u8> {
    format!("s/{db}/{name}").into_bytes()
}

fn view_key(db: &str, name: &str) -> Vec<u8> {
    format!("v/{db}/{name}").into_bytes()
}

fn domain_key(db: &str, name: &str) -> Vec<u8> {
    format!("D/{db}/{name}").into_bytes()
}

fn schema_key(db: &str, name: &str) -> Vec<u8> {
    format!("n/{db}/{name}").into_bytes()
}

/// A schema made with CREATE SCHEMA (`public`, `pg_catalog` and `information_schema` are
/// built in and have no entry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schema {
    /// Its id (its OID is derived from it).
    pub id: u64,
    /// Its name (never containing a dot).
    pub name: String,
    /// Its `COMMENT ON` text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The schema a relation's catalog name places it in: `s` of `s.t`, `public` of `t`.
/// Schema names hold no dot and a relation in `public` has none in its name (both are
/// refused when created), so the first dot is the boundary.
pub fn schema_of(name: &str) -> &str {
    name.split_once('.').map_or("public", |(s, _)| s)
}

/// A relation's name within its schema: `t` of `s.t` and of `t`.
pub fn unqualified(name: &str) -> &str {
    name.split_once('.').map_or(name, |(_, n)| n)
}

/// The catalog name of relation `name` of schema `schema`.
pub fn qualified(schema: &str, name: &str) -> String {
    if schema == "public" {
        name.to_string()
    } else {
        format!("{schema}.{name}")
    }
}

/// The catalog name of `name` in the schema of relation `sibling`: an index, a table's
/// sequence and a renamed relation live in the schema of the relation they come from.
pub fn beside(sibling: &str, name: &str) -> String {
    qualified(schema_of(sibling), unqualified(name))
}

/// A function's key: its name, and when it takes arguments their types' OIDs (a function
/// without arguments — every trigger function — is kept under its name alone).
fn function_key(db: &str, name: &str, args: &[DataType]) -> Vec<u8> {
    let mut key = format!("f/{db}/{name}");
    if !args.is_empty() {
        let oids: Vec<String> = args.iter().map(|t| t.oid().to_string()).collect();
        key.push('\u{1}');
        key.push_str(&oids.join(","));
    }
    key.into_bytes()
}

fn extension_key(db: &str, name: &str) -> Vec<u8> {
    format!("x/{db}/{name}").into_bytes()
}

/// An extension created with CREATE EXTENSION (see `exec::extension`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extension {
    /// Its id (its OID is derived from it).
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
}

fn type_key(db: &str, name: &str) -> Vec<u8> {
    format!("y/{db}/{name}").into_bytes()
}

/// An enum type's entry as the catalog caches it: interned once per change of its bytes.
#[derive(Deserialize)]
struct StoredType(#[serde(with = "crate::enums::serde_ref")] &'static EnumType);

fn database_key(db: &str) -> Vec<u8> {
    format!("d/{db}").into_bytes()
}

/// A cached definition: the bytes it was decoded from, and the definition.
type Cached<T> = (Vec<u8>, Arc<T>);

/// Definitions of one kind, by catalog key.
type DefinitionCache<T> = Mutex<HashMap<Vec<u8>, Cached<T>>>;

/// The definition stored as `raw` under `key`: decoded once per change of the bytes.
fn decoded<T: serde::de::DeserializeOwned>(
    cache: &DefinitionCache<T>,
    key: Vec<u8>,
    raw: Vec<u8>,
    name: &str,
) -> Result<Arc<T>> {
    if let Some((cached, def)) = cache.lock().get(&key) {
        if *cached == raw {
            return Ok(def.clone());
        }
    }
    let def: Arc<T> = Arc::new(serde_json::from_slice(&raw).map_err(|e| {
        SqlError::new(code::DATA_CORRUPTED, format!("catalog entry for {name} is damaged: {e}"))
    })?);
    cache.lock().insert(key, (raw, def.clone()));
    Ok(def)
}

/// Every definition of one kind stored under `prefix`, by name.
fn all_decoded<T: serde::de::DeserializeOwned>(
    txn: &mut Transaction,
    cache: &DefinitionCache<T>,
    prefix: Vec<u8>,
) -> Result<Vec<Arc<T>>> {
    let end = crate::encoding::prefix_end(&prefix).expect("prefix ends");
    let rows = txn.scan(CATALOG, Scan::range(&prefix, &end))?;
    let mut out = Vec::with_capacity(rows.len());
    for (key, raw) in rows {
        let name = String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
        out.push(decoded(cache, key, raw, &name)?);
    }
    Ok(out)
}

/// The JSON entries under `prefix`, decoded (uncached: schemas and extensions are few and
/// read by DDL and the system catalogs only).
fn entries<T: serde::de::DeserializeOwned>(
    txn: &mut Transaction,
    prefix: Vec<u8>,
    what: &str,
) -> Result<Vec<T>> {
    let end = crate::encoding::prefix_end(&prefix).expect("prefix ends");
    let rows = txn.scan(CATALOG, Scan::range(&prefix, &end))?;
    rows.into_iter()
        .map(|(_, raw)| {
            serde_json::from_slice(&raw).map_err(|e| {
                SqlError::new(code::DATA_CORRUPTED, format!("{what} entry is damaged: {e}"))
            })
        })
        .collect()
}

/// Decoded-definition cache: the raw bytes read through the transaction are compared with the
/// cached bytes, so a definition is parsed once per change, and reads stay transactional.
#[derive(Default)]
pub struct Catalog {
    cache: DefinitionCache<Table>,
    sequence_cache: DefinitionCache<Sequence>,
    view_cache: DefinitionCache<View>,
    type_cache: DefinitionCache<StoredType>,
    rowids: Mutex<HashMap<u64, u64>>,
    /// CHECK constraints bound once per definition, by table id.
    check_cache: Mutex<HashMap<u64, CachedChecks>>,
    /// Index expressions and conditions bound once per definition, by index id.
    index_cache: Mutex<HashMap<u64, CachedIndex>>,
    /// Generated columns' expressions bound once per definition, by table id.
    generated_cache: Mutex<HashMap<u64, CachedGenerated>>,
}

/// A table's bound generation expressions (by column) and what they were bound against.
type CachedGenerated =
    (Vec<Option<String>>, Vec<(String, DataType)>, Arc<Vec<(usize, crate::expr::Expr)>>);

/// A table's bound CHECK constraints (its own and its columns' domains') and what they were
/// bound against: the constraints, the columns' names and types (a dropped column moves the
/// ones after it) and domains.
type CachedChecks =
    (Vec<Check>, Vec<(String, DataType)>, Vec<Option<Domain>>, Arc<Vec<BoundCheck>>);

/// A CHECK constraint bound over a table's row: the table's own, or one of a column's
/// domain.
#[derive(Debug)]
pub struct BoundCheck {
    /// The constraint's name.
    pub name: String,
    /// The condition over the row.
    pub expr: crate::expr::Expr,
    /// The domain whose constraint it is, if it is one.
    pub domain: Option<String>,
}

/// The domains of `table`'s columns, by column.
fn column_domains(table: &Table) -> Vec<Option<Domain>> {
    table.columns.iter().map(|c| c.domain.as_deref().cloned()).collect()
}

/// An index's bound expressions and what they were bound against.
type CachedIndex = (Vec<String>, Option<String>, Vec<(String, DataType)>, Arc<BoundIndex>);

/// The columns a definition over `table` is bound against.
fn row_shape(table: &Table) -> Vec<(String, DataType)> {
    table.columns.iter().map(|c| (c.name.clone(), c.ty)).collect()
}

impl Catalog {
    /// The bound CHECK constraints of `table`, if bound for its current definition.
    pub(crate) fn bound_checks(&self, table: &Table) -> Option<Arc<Vec<BoundCheck>>> {
        let cache = self.check_cache.lock();
        let (checks, shape, domains, bound) = cache.get(&table.id)?;
        (*checks == table.checks && *shape == row_shape(table) && *domains == column_domains(table))
            .then(|| bound.clone())
    }

    /// The bound generation expressions of `table`'s generated columns, if bound for its
    /// current definition.
    pub(crate) fn bound_generated(
        &self,
        table: &Table,
    ) -> Option<Arc<Vec<(usize, crate::expr::Expr)>>> {
        let cache = self.generated_cache.lock();
        let (exprs, shape, bound) = cache.get(&table.id)?;
        let now: Vec<Option<String>> = table.columns.iter().map(|c| c.generated.clone()).collect();
        (*exprs == now && *shape == row_shape(table)).then(|| bound.clone())
    }

    /// Keeps the bound generation expressions of `table`.
    pub(crate) fn remember_generated(
        &self,
        table: &Table,
        bound: Arc<Vec<(usize, crate::expr::Expr)>>,
    ) {
        let exprs = table.columns.iter().map(|c| c.generated.clone()).collect();
        self.generated_cache.lock().insert(table.id, (exprs, row_shape(table), bound));
    }

    /// The bound expressions of `index` of `table`, if bound for their current definitions.
    pub(crate) fn bound_index(&self, table: &Table, index: &Index) -> Option<Arc<BoundIndex>> {
        let cache = self.index_cache.lock();
        let (exprs, predicate, shape, bound) = cache.get(&index.id)?;
        (*exprs == index.expressions && *predicate == index.predicate && *shape == row_shape(table))
            .then(|| bound.clone())
    }

    /// Remembers the bound expressions of `index` of `table`.
    pub(crate) fn remember_index(&self, table: &Table, index: &Index, bound: Arc<BoundIndex>) {
        let entry = (index.expressions.clone(), index.predicate.clone(), row_shape(table), bound);
        self.index_cache.lock().insert(index.id, entry);
    }

    /// Remembers the bound CHECK constraints of `table`.
    pub(crate) fn remember_checks(&self, table: &Table, bound: Arc<Vec<BoundCheck>>) {
        let entry = (table.checks.clone(), row_shape(table), column_domains(table), bound);
        self.check_cache.lock().insert(table.id, entry);
    }

    /// Reads a table definition.
    pub fn table(&self, txn: &mut Transaction, db: &str, name: &str) -> Result<Option<Arc<Table>>> {
        let key = table_key(db, name);
        let Some(raw) = txn.get(CATALOG, &key)? else { return Ok(None) };
        decoded(&self.cache, key, raw, name).map(Some)
    }

    /// Reads a table definition or answers 42P01 (42809 for a view: views are only read).
    pub fn table_or_err(&self, txn: &mut Transaction, db: &str, name: &str) -> Result<Arc<Table>> {
        if let Some(t) = self.table(txn, db, name)? {
            return Ok(t);
        }
        if self.view(txn, db, name)?.is_some() {
            return Err(SqlError::new(code::WRONG_OBJECT_TYPE, format!("\"{name}\" is a view"))
                .hint("Kiln reads views in queries only: write into, alter or copy the tables the view reads."));
        }
        Err(SqlError::new(code::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist")))
    }

    /// Writes a table definition (create or replace).
    pub fn put_table(&self, txn: &mut Transaction, table: &Table) -> Result<()> {
        // The enum types its columns newly use are held; those its definition used before
        // are held by that definition (changing the type rewrites it, which conflicts).
        let before = self.table(txn, &table.database, &table.name)?;
        let new_types =
            table.columns.iter().map(|c| c.ty).filter(|ty| {
                before.as_ref().is_none_or(|b| !b.columns.iter().any(|c| c.ty == *ty))
            });
        let new_types: Vec<DataType> = new_types.collect();
        let raw = serde_json::to_vec(table).expect("table definitions serialize");
        txn.put_guarded(CATALOG, &table_key(&table.database, &table.name), &raw)?;
        self.hold_enum_types(txn, &table.database, new_types.into_iter())?;
        // Likewise the domains its columns newly use: a concurrent ALTER or DROP DOMAIN
        // conflicts with this definition's copy of the domain.
        let mut held: Vec<u32> = Vec::new();
        for d in table.columns.iter().filter_map(|c| c.domain.as_deref()) {
            let old = before.as_ref().is_some_and(|b| {
                b.columns.iter().any(|c| c.domain.as_deref().is_some_and(|x| x == d))
            });
            if !old && !held.contains(&d.oid) {
                held.push(d.oid);
                self.put_domain(txn, &table.database, d)?;
            }
        }
        for name in index_names(table) {
            txn.put_guarded(CATALOG, &index_key(&table.database, &name), table.name.as_bytes())?;
        }
        // The names the new definition no longer has (a dropped primary key or unique
        // constraint, an index on a dropped column, a renamed index) are free again.
        let now = index_names(table);
        for gone in before.iter().flat_map(|b| index_names(b)) {
            if !now.contains(&gone) {
                txn.delete_guarded(CATALOG, &index_key(&table.database, &gone))?;
            }
        }
        Ok(())
    }

    /// Removes a table definition and its index names.
    pub fn delete_table(&self, txn: &mut Transaction, table: &Table) -> Result<()> {
        txn.delete_guarded(CATALOG, &table_key(&table.database, &table.name))?;
        for name in index_names(table) {
            txn.delete_guarded(CATALOG, &index_key(&table.database, &name))?;
        }
        Ok(())
    }

    /// The table an index belongs to.
    pub fn index_table(
        &self,
        txn: &mut Transaction,
        db: &str,
        index: &str,
    ) -> Result<Option<String>> {
        Ok(txn
            .get(CATALOG, &index_key(db, index))?
            .map(|raw| String::from_utf8_lossy(&raw).into_owned()))
    }

    /// Whether a relation (table, index, sequence or view) named `name` exists.
    pub fn relation_exists(&self, txn: &mut Transaction, db: &str, name: &str) -> Result<bool> {
        Ok(txn.get(CATALOG, &table_key(db, name))?.is_some()
            || txn.get(CATALOG, &index_key(db, name))?.is_some()
            || txn.get(CATALOG, &sequence_key(db, name))?.is_some()
            || txn.get(CATALOG, &view_key(db, name))?.is_some())
    }

    /// Reads a view definition (decoded once per change, as tables are).
    pub fn view(&self, txn: &mut Transaction, db: &str, name: &str) -> Result<Option<Arc<View>>> {
        let key = view_key(db, name);
        let Some(raw) = txn.get(CATALOG, &key)? else { return Ok(None) };
        decoded(&self.view_cache, key, raw, name).map(Some)
    }

    /// Writes a view definition (create or replace).
    pub fn put_view(&self, txn: &mut Transaction, view: &View) -> Result<()> {
        let raw = serde_json::to_vec(view).expect("view definitions serialize");
        txn.put_guarded(CATALOG, &view_key(&view.database, &view.name), &raw)?;
        self.hold_enum_types(txn, &view.database, view.columns.iter().map(|c| c.1))?;
        Ok(())
    }

    /// Removes a view definition.
    pub fn delete_view(&self, txn: &mut Transaction, view: &View) -> Result<()> {
        txn.delete_guarded(CATALOG, &view_key(&view.database, &view.name))?;
        Ok(())
    }

    /// All views of a database, by name.
    pub fn views(&self, txn: &mut Transaction, db: &str) -> Result<Vec<Arc<View>>> {
        all_decoded(txn, &self.view_cache, view_key(db, ""))
    }

    /// The views that read relation `name` directly.
    pub fn views_on(&self, txn: &mut Transaction, db: &str, name: &str) -> Result<Vec<Arc<View>>> {
        let mut views = self.views(txn, db)?;
        views.retain(|v| v.depends_on.iter().any(|d| d == name));
        Ok(views)
    }

    /// Reads a sequence definition (decoded once per change, as tables are).
    pub fn sequence(
        &self,
        txn: &mut Transaction,
        db: &str,
        name: &str,
    ) -> Result<Option<Arc<Sequence>>> {
        let key = sequence_key(db, name);
        let Some(raw) = txn.get(CATALOG, &key)? else { return Ok(None) };
        decoded(&self.sequence_cache, key, raw, name).map(Some)
    }

    /// Reads a sequence definition or answers 42P01.
    pub fn sequence_or_err(
        &self,
        txn: &mut Transaction,
        db: &str,
        name: &str,
    ) -> Result<Arc<Sequence>> {
        self.sequence(txn, db, name)?.ok_or_else(|| {
            SqlError::new(code::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist"))
        })
    }

    /// Writes a sequence definition (create or replace).
    pub fn put_sequence(&self, txn: &mut Transaction, seq: &Sequence) -> Result<()> {
        let raw = serde_json::to_vec(seq).expect("sequence definitions serialize");
        txn.put_guarded(CATALOG, &sequence_key(&seq.database, &seq.name), &raw)?;
        Ok(())
    }

    /// Removes a sequence definition and its record.
    pub fn delete_sequence(&self, txn: &mut Transaction, seq: &Sequence) -> Result<()> {
        txn.delete_guarded(CATALOG, &sequence_key(&seq.database, &seq.name))?;
        txn.delete(crate::sequence::SEQUENCES, &seq.key.to_be_bytes())?;
        Ok(())
    }

    /// All sequences of a database, by name.
    pub fn sequences(&self, txn: &mut Transaction, db: &str) -> Result<Vec<Arc<Sequence>>> {
        all_decoded(txn, &self.sequence_cache, sequence_key(db, ""))
    }

    /// All tables of a database, by name.
    pub fn tables(&self, txn: &mut Transaction, db: &str) -> Result<Vec<Arc<Table>>> {
        all_decoded(txn, &self.cache, table_key(db, ""))
    }

    /// Allocates a table or index id.
    pub fn next_id(&self, txn: &mut Transaction) -> Result<u64> {
        self.next_ids(txn, 1)
    }

    /// Allocates `n` consecutive ids (an enum type's, its array type's and its labels'):
    /// the first of them.
    pub fn next_ids(&self, txn: &mut Transaction, n: u64) -> Result<u64> {
        let current = match txn.get(CATALOG, b"next_id")? {
            Some(raw) => u64::from_be_bytes(raw.as_slice().try_into().map_err(|_| {
                SqlError::new(code::DATA_CORRUPTED, "catalog id counter is damaged")
            })?),
            None => 1,
        };
        txn.put_guarded(CATALOG, b"next_id", &(current + n).to_be_bytes())?;
        Ok(current)
    }

    /// A schema made with CREATE SCHEMA.
    pub fn schema(&self, txn: &mut Transaction, db: &str, name: &str) -> Result<Option<Schema>> {
        let Some(raw) = txn.get(CATALOG, &schema_key(db, name))? else { return Ok(None) };
        serde_json::from_slice(&raw).map(Some).map_err(|e| {
            SqlError::new(code::DATA_CORRUPTED, format!("schema entry \"{name}\" is damaged: {e}"))
        })
    }

    /// 3F000 when the catalog name `name` places its relation in a schema that does not
    /// exist (as PostgreSQL answers for a relation named by text, `nextval('s.q')`).
    pub fn check_schema_of(&self, txn: &mut Transaction, db: &str, name: &str) -> Result<()> {
        let schema = schema_of(name);
        let built_in = ["public", "pg_catalog", "information_schema"].contains(&schema);
        if built_in || self.schema(txn, db, schema)?.is_some() {
            return Ok(());
        }
        Err(SqlError::new(code::UNDEFINED_SCHEMA, format!("schema \"{schema}\" does not exist")))
    }

    /// The catalog names of the relations (tables, views, sequences, indexes) of schema
    /// `schema`, read from the keys alone (a schema's relations share a key prefix; those of
    /// `public` are the names without a dot).
    pub fn relations_in(
        &self,
        txn: &mut Transaction,
        db: &str,
        schema: &str,
    ) -> Result<Vec<String>> {
        let prefix_of = if schema == "public" { String::new() } else { format!("{schema}.") };
        let mut names = Vec::new();
        for key in [table_key, view_key, sequence_key, index_key] {
            let prefix = key(db, &prefix_of);
            let end = crate::encoding::prefix_end(&prefix).expect("prefix ends");
            let whole = key(db, "").len();
            for (k, _) in txn.scan(CATALOG, Scan::range(&prefix, &end))? {
                let name = String::from_utf8_lossy(&k[whole..]).into_owned();
                if schema_of(&name) == schema {
                    names.push(name);
                }
            }
        }
        Ok(names)
    }

    /// The schemas made with CREATE SCHEMA in a database, by name.
    pub fn schemas(&self, txn: &mut Transaction, db: &str) -> Result<Vec<Schema>> {
        entries(txn, schema_key(db, ""), "a schema")
    }

    /// Records a schema (create or replace).
    pub fn put_schema(&self, txn: &mut Transaction, db: &str, schema: &Schema) -> Result<()> {
        let raw = serde_json::to_vec(schema).expect("schemas serialize");
        txn.put_guarded(CATALOG, &schema_key(db, &schema.name), &raw)?;
        Ok(())
    }

    /// Removes a schema's record (its objects are dropped by the caller).
    pub fn delete_schema(&self, txn: &mut Transaction, db: &str, name: &str) -> Result<()> {
        txn.delete_guarded(CATALOG, &schema_key(db, name))?;
        Ok(())
    }

    /// A function made with CREATE FUNCTION.
    pub fn function(
        &self,
        txn: &mut Transaction,
        db: &str,
        name: &str,
    ) -> Result<Option<Function>> {
        self.function_with(txn, db, name, &[])
    }

    /// The function `name` whose arguments have types `args` exactly.
    pub fn function_with(
        &self,
        txn: &mut Transaction,
        db: &str,
        name: &str,
        args: &[DataType],
    ) -> Result<Option<Function>> {
        let Some(raw) = txn.get(CATALOG, &function_key(db, name, args))? else {
            return Ok(None);
        };
        serde_json::from_slice(&raw).map(Some).map_err(|e| {
            SqlError::new(
                code::DATA_CORRUPTED,
                format!("function entry \"{name}\" is damaged: {e}"),
            )
        })
    }

    /// The functions named `name`, whatever their arguments.
    pub fn functions_named(
        &self,
        txn: &mut Transaction,
        db: &str,
        name: &str,
    ) -> Result<Vec<Function>> {
        let all: Vec<Function> = entries(txn, function_key(db, name, &[]), "a function")?;
        Ok(all.into_iter().filter(|f| f.name == name).collect())
    }

    /// The functions made in a database, by name.
    pub fn functions(&self, txn: &mut Transaction, db: &str) -> Result<Vec<Function>> {
        entries(txn, function_key(db, "", &[]), "a function")
    }

    /// Records a function (create or replace).
    pub fn put_function(&self, txn: &mut Transaction, db: &str, f: &Function) -> Result<()> {
        let raw = serde_json::to_vec(f).expect("functions serialize");
        txn.put_guarded(CATALOG, &function_key(db, &f.name, &f.input_types()), &raw)?;
        Ok(())
    }

    /// Removes a function's record.
    pub fn delete_function(&self, txn: &mut Transaction, db: &str, f: &Function) -> Result<()> {
        txn.delete_guarded(CATALOG, &function_key(db, &f.name, &f.input_types()))?;
        Ok(())
    }

    /// The extensions created in a database, by name.
    pub fn extensions(&self, txn: &mut Transaction, db: &str) -> Result<Vec<Extension>> {
        entries(txn, extension_key(db, ""), "an extension")
    }

    /// Records an extension.
    pub fn put_extension(&self, txn: &mut Transaction, db: &str, ext: &Extension) -> Result<()> {
        let raw = serde_json::to_vec(ext).expect("extensions serialize");
        txn.put_guarded(CATALOG, &extension_key(db, &ext.name), &raw)?;
        Ok(())
    }

    /// Removes an extension's record.
    pub fn delete_extension(&self, txn: &mut Transaction, db: &str, name: &str) -> Result<()> {
        txn.delete_guarded(CATALOG, &extension_key(db, name))?;
        Ok(())
    }

    /// Reads a domain's definition.
    pub fn domain(&self, txn: &mut Transaction, db: &str, name: &str) -> Result<Option<Domain>> {
        let Some(raw) = txn.get(CATALOG, &domain_key(db, name))? else { return Ok(None) };
        serde_json::from_slice(&raw).map(Some).map_err(|e| {
            SqlError::new(code::DATA_CORRUPTED, format!("catalog entry for {name} is damaged: {e}"))
        })
    }

    /// The domains of a database, by name.
    pub fn domains(&self, txn: &mut Transaction, db: &str) -> Result<Vec<Domain>> {
        entries(txn, domain_key(db, ""), "a domain")
    }

    /// Writes a domain's definition (create or replace).
    pub fn put_domain(&self, txn: &mut Transaction, db: &str, def: &Domain) -> Result<()> {
        let raw = serde_json::to_vec(def).expect("domains serialize");
        txn.put_guarded(CATALOG, &domain_key(db, &def.name), &raw)?;
        Ok(())
    }

    /// Removes a domain's definition.
    pub fn delete_domain(&self, txn: &mut Transaction, db: &str, name: &str) -> Result<()> {
        txn.delete_guarded(CATALOG, &domain_key(db, name))?;
        Ok(())
    }

    /// Reads an enum type's definition (the one interned copy of it).
    pub fn enum_type(
        &self,
        txn: &mut Transaction,
        db: &str,
        name: &str,
    ) -> Result<Option<&'static EnumType>> {
        let key = type_key(db, name);
        let Some(raw) = txn.get(CATALOG, &key)? else { return Ok(None) };
        Ok(Some(decoded(&self.type_cache, key, raw, name)?.0))
    }

    /// The enum types of a database, by name.
    pub fn enum_types(&self, txn: &mut Transaction, db: &str) -> Result<Vec<&'static EnumType>> {
        Ok(all_decoded(txn, &self.type_cache, type_key(db, ""))?.into_iter().map(|d| d.0).collect())
    }

    /// The enum type with OID `oid`.
    pub fn enum_type_by_oid(
        &self,
        txn: &mut Transaction,
        db: &str,
        oid: u32,
    ) -> Result<Option<&'static EnumType>> {
        Ok(self.enum_types(txn, db)?.into_iter().find(|t| t.oid == oid || t.array_oid == oid))
    }

    /// Writes an enum type's definition (create or replace). Writing it again unchanged is
    /// how a statement that makes a column of the type holds it: an `ALTER TYPE` or `DROP
    /// TYPE` committing meanwhile conflicts with it.
    pub fn put_enum_type(&self, txn: &mut Transaction, db: &str, def: &EnumType) -> Result<()> {
        let raw = serde_json::to_vec(def).expect("type definitions serialize");
        txn.put_guarded(CATALOG, &type_key(db, &def.name), &raw)?;
        Ok(())
    }

    /// Writes again the enum types among `types`, unchanged: a definition that makes
    /// columns of a type thereby conflicts with a concurrent `ALTER TYPE` or `DROP TYPE`,
    /// whatever the isolation level, so no column can keep a stale copy of its type.
    fn hold_enum_types(
        &self,
        txn: &mut Transaction,
        db: &str,
        types: impl Iterator<Item = DataType>,
    ) -> Result<()> {
        let mut held: Vec<u32> = Vec::new();
        for ty in types {
            if let DataType::Enum(e) | DataType::Array(&DataType::Enum(e)) = ty {
                if !held.contains(&e.oid) {
                    held.push(e.oid);
                    self.put_enum_type(txn, db, e)?;
                }
            }
        }
        Ok(())
    }

    /// Removes an enum type's definition.
    pub fn delete_enum_type(&self, txn: &mut Transaction, db: &str, name: &str) -> Result<()> {
        txn.delete_guarded(CATALOG, &type_key(db, name))?;
        Ok(())
    }

    /// Whether a database exists.
    pub fn database_exists(&self, txn: &mut Transaction, db: &str) -> Result<bool> {
        Ok(txn.get(CATALOG, &database_key(db))?.is_some())
    }

    /// Creates a database (namespace).
    pub fn create_database(&self, txn: &mut Transaction, db: &str) -> Result<()> {
        txn.put_guarded(CATALOG, &database_key(db), b"")?;
        Ok(())
    }

    /// Drops a database's name (its tables are dropped by the caller).
    pub fn drop_database(&self, txn: &mut Transaction, db: &str) -> Result<()> {
        txn.delete_guarded(CATALOG, &database_key(db))?;
        Ok(())
    }

    /// All databases.
    pub fn databases(&self, txn: &mut Transaction) -> Result<Vec<String>> {
        let rows = txn.scan(CATALOG, Scan::range(b"d/", b"d0"))?;
        Ok(rows.into_iter().map(|(k, _)| String::from_utf8_lossy(&k[2..]).into_owned()).collect())
    }

    /// The next hidden row id of a table without a primary key. Row ids need not be
    /// transactional (gaps are harmless), so they come from memory, seeded from the largest
    /// stored id on first use.
    pub fn next_rowid(&self, txn: &mut Transaction, table: &Table) -> Result<u64> {
        let mut rowids = self.rowids.lock();
        if let Some(next) = rowids.get_mut(&table.id) {
            *next += 1;
            return Ok(*next);
        }
        drop(rowids);
        let last = txn.scan(&table.keyspace(), Scan::all().reverse().limit(1))?;
        let seed = match last.first() {
            Some((k, _)) if k.len() == 8 => {
                u64::from_be_bytes(k.as_slice().try_into().unwrap_or([0; 8]))
            }
            _ => 0,
        };
        let mut rowids = self.rowids.lock();
        let next = rowids.entry(table.id).or_insert(seed);
        *next = (*next).max(seed) + 1;
        Ok(*next)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn index_parts_are_written_as_pg_get_indexdef_writes_them() {
        let cases = [
            ("a", "a"),
            ("\"Mixed Case\"", "\"Mixed Case\""),
            ("lower(email)", "lower(email)"),
            ("n * 2", "((n * 2))"),
            ("(n * 2)", "((n * 2))"),
            ("a::text", "(a::text)"),
            ("lower(a) || 'x'", "((lower(a) || 'x'))"),
            ("(a) + (b)", "(((a) + (b)))"),
        ];
        for (stored, shown) in cases {
            assert_eq!(super::defined_part(stored), shown, "{stored}");
        }
        assert_eq!(super::shown_part("n % 2"), "(n % 2)");
        assert_eq!(super::shown_part("((n % 2))"), "(n % 2)");
        assert_eq!(super::shown_part("lower(a)"), "lower(a)");
    }
}
