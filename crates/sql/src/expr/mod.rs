//! Bound expressions and their evaluation.

mod builtins;
mod crypto;
pub mod dates;
pub use crypto::UuidNamespace;
pub mod datetime;
mod display;
mod ops;
mod strings;
pub use dates::TimeFunc;
pub use strings::{MathFunc, StrFunc};
pub mod from_char;
pub mod to_char;
pub mod to_number;

pub use builtins::*;
pub use ops::*;

use std::cmp::Ordering;

use crate::error::{code, Result, SqlError};
use crate::types::{DataType, Value};

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// +
    Add,
    /// -
    Sub,
    /// *
    Mul,
    /// /
    Div,
    /// %
    Mod,
    /// ||
    Concat,
    /// =
    Eq,
    /// <>
    NotEq,
    /// <
    Lt,
    /// <=
    LtEq,
    /// >
    Gt,
    /// >=
    GtEq,
    /// ~ (POSIX regular expression match)
    RegexMatch,
    /// !~
    RegexNotMatch,
    /// ~*
    RegexIMatch,
    /// !~*
    RegexNotIMatch,
    /// & (integers)
    BitAnd,
    /// | (integers)
    BitOr,
    /// # (integers)
    BitXor,
}

/// Aggregate functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AggFunc {
    /// count(*) or count(x)
    Count,
    /// sum
    Sum,
    /// min
    Min,
    /// max
    Max,
    /// avg
    Avg,
    /// string_agg(x, separator [ORDER BY …]) with a constant separator; its argument is
    /// packed with the sort keys as `[value, key…]`, ordered by (descending, nulls first).
    StringAgg(String, Vec<(bool, bool)>),
    /// array_agg(x [ORDER BY …]), its argument packed as for `StringAgg`.
    ArrayAgg(Vec<(bool, bool)>),
    /// bool_and / every
    BoolAnd,
    /// bool_or
    BoolOr,
    /// bit_and / bit_or / bit_xor of integers
    Bits(BitOp),
    /// An ordered-set aggregate (`… WITHIN GROUP (ORDER BY x)`): its argument packed as
    /// for `ArrayAgg`, ordered by (descending, nulls first).
    OrderedSet(OrderedSet, (bool, bool)),
    /// corr, covar_*, regr_* of (y, x) pairs of doubles, packed as `[y, x]`.
    Regression(Regression),
    /// variance / var_samp / var_pop, and (`root`) stddev / stddev_samp / stddev_pop
    Variance {
        /// The sample's (divided by n - 1), not the population's (by n).
        sample: bool,
        /// The standard deviation: the variance's square root.
        root: bool,
    },
    /// An aggregate made with CREATE AGGREGATE: its arguments packed as
    /// `[argument…, sort key…]`.
    User(std::sync::Arc<UserAggregate>),
}

/// An aggregate made with CREATE AGGREGATE, bound for one call (`exec::aggregates`).
pub struct UserAggregate {
    /// Its name, as EXPLAIN shows the call.
    pub name: String,
    /// How many arguments it takes (the first items of each packed input).
    pub args: usize,
    /// The transition function's call over the row `[state, argument…]`.
    pub transition: Expr,
    /// Whether the transition function is strict: rows with a NULL argument are skipped,
    /// a NULL first state becomes the first row's argument, a NULL state stays NULL.
    pub strict: bool,
    /// The state's first value (`INITCOND`; `None`: NULL).
    pub init: Option<Value>,
    /// The final function's call over the row `[state, NULL…]`, and whether it is strict
    /// (its result NULL for a NULL state, without calling it).
    pub finish: Option<(Expr, bool)>,
    /// The call's ORDER BY: (descending, nulls first) of each sort key.
    pub order: Vec<(bool, bool)>,
    /// Whether the inputs are collected, sorted, then taken in order (an ORDER BY, or
    /// DISTINCT, whose values PostgreSQL takes sorted), rather than taken as they come.
    pub collect: bool,
}

impl std::fmt::Debug for UserAggregate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

impl PartialEq for UserAggregate {
    fn eq(&self, other: &UserAggregate) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for UserAggregate {}

/// Which statistic of (y, x) pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Regression {
    /// corr
    Corr,
    /// covar_pop
    CovarPop,
    /// covar_samp
    CovarSamp,
    /// regr_count
    Count,
    /// regr_avgx
    AvgX,
    /// regr_avgy
    AvgY,
    /// regr_sxx
    Sxx,
    /// regr_syy
    Syy,
    /// regr_sxy
    Sxy,
    /// regr_slope
    Slope,
    /// regr_intercept
    Intercept,
    /// regr_r2
    R2,
}

impl Regression {
    /// The aggregate of this name.
    pub fn of(name: &str) -> Option<Regression> {
        Some(match name {
            "corr" => Regression::Corr,
            "covar_pop" => Regression::CovarPop,
            "covar_samp" => Regression::CovarSamp,
            "regr_count" => Regression::Count,
            "regr_avgx" => Regression::AvgX,
            "regr_avgy" => Regression::AvgY,
            "regr_sxx" => Regression::Sxx,
            "regr_syy" => Regression::Syy,
            "regr_sxy" => Regression::Sxy,
            "regr_slope" => Regression::Slope,
            "regr_intercept" => Regression::Intercept,
            "regr_r2" => Regression::R2,
            _ => return None,
        })
    }
}

/// Which ordered-set aggregate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrderedSet {
    /// percentile_cont (`continuous`: interpolated) or percentile_disc (the first value at
    /// or past the fraction) of constant fractions, each as its bits (`None`: NULL); `array`
    /// when they came as an array (the result is then one).
    Percentile {
        /// percentile_cont.
        continuous: bool,
        /// The fractions, as `f64::to_bits`.
        fractions: Vec<Option<u64>>,
        /// Whether the fractions were an array.
        array: bool,
    },
    /// mode(): the most frequent value (the first in the order among equally frequent).
    Mode,
}

/// The operation of a bitwise aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOp {
    /// bit_and
    And,
    /// bit_or
    Or,
    /// bit_xor
    Xor,
}

/// What an advisory lock function does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdvisoryOp {
    /// pg_advisory_lock…: waits for the lock
    Lock,
    /// pg_try_advisory_lock…: takes it if free
    TryLock,
    /// pg_advisory_unlock…
    Unlock,
    /// pg_advisory_unlock_all()
    UnlockAll,
}

/// Scalar functions. The `Kiln*` ones are the ED surface; the session evaluates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// lower(text)
    Lower,
    /// upper(text)
    Upper,
    /// length(text)
    Length,
    /// abs(x)
    Abs,
    /// power(x, y)
    Power,
    /// coalesce(...)
    Coalesce,
    /// nullif(a, b)
    Nullif,
    /// greatest(...)
    Greatest,
    /// least(...)
    Least,
    /// round(x [, n])
    Round,
    /// floor(x)
    Floor,
    /// ceil(x)
    Ceil,
    /// substr(text, from [, count])
    Substr,
    /// trim(text)
    Trim,
    /// btrim(text, characters), trim(both characters from text)
    Btrim,
    /// ltrim(text [, characters]), trim(leading …)
    Ltrim,
    /// rtrim(text [, characters]), trim(trailing …)
    Rtrim,
    /// concat(...)
    Concat,
    /// repeat(text, n)
    Repeat,
    /// pg_cancel_backend(pid)
    CancelBackend,
    /// pg_terminate_backend(pid)
    TerminateBackend,
    /// pg_sleep(seconds): interruptible
    Sleep,
    /// now(), current_timestamp
    Now,
    /// current_date
    CurrentDate,
    /// EXTRACT(field FROM date or timestamp): numeric
    Extract,
    /// date_part(field, date or timestamp): double precision
    DatePart,
    /// date_trunc(unit, date or timestamp)
    DateTrunc,
    /// to_char(value, template)
    ToChar,
    /// to_number(text, template)
    ToNumber,
    /// age(timestamp [, timestamp]): the calendar difference (from today's midnight with one
    /// argument)
    Age,
    /// timezone(zone, ts) / `ts AT TIME ZONE zone` (bound by `Planner::at_time_zone`).
    Timezone,
    /// localtimestamp: the statement's timestamp as a local time in the session's zone.
    LocalTimestamp,
    /// localtime / current_time: the statement's time of day in the session's zone.
    LocalTime,
    /// justify_days / justify_hours / justify_interval
    JustifyDays,
    JustifyHours,
    JustifyInterval,
    /// make_interval(years, months, weeks, days, hours, mins, secs)
    MakeInterval,
    /// random()
    Random,
    /// gen_random_uuid(): a version 4 uuid from the operating system's random source
    GenRandomUuid,
    /// octet_length(text | bytea)
    OctetLength,
    /// bit_length(text | bytea)
    BitLength,
    /// pg_notify(channel, payload): NOTIFY with computed arguments
    PgNotify,
    /// The advisory lock functions: what they do, and to which hold.
    Advisory(AdvisoryOp, crate::advisory::Hold),
    /// md5(text | bytea): the hex MD5 digest
    Md5,
    /// sha224 … sha512(bytea)
    Sha2(u16),
    /// digest(data, algorithm) (pgcrypto)
    Digest,
    /// hmac(data, key, algorithm) (pgcrypto)
    Hmac,
    /// gen_random_bytes(n) (pgcrypto)
    GenRandomBytes,
    /// pgcrypto's crypt(password, salt)
    Crypt,
    /// pgcrypto's gen_salt(type [, rounds])
    GenSalt,
    /// uuid_generate_v1() / uuid_generate_v1mc() (uuid-ossp)
    UuidV1,
    /// uuid_generate_v3 / v5(namespace, name) (uuid-ossp): the version
    UuidNameBased(u8),
    /// encode(bytea, format)
    Encode,
    /// decode(text, format)
    Decode,
    /// uuid_nil() (uuid-ossp)
    UuidNil,
    /// uuid_ns_dns() … (uuid-ossp)
    UuidNs(crypto::UuidNamespace),
    /// version()
    Version,
    /// current_database()
    CurrentDatabase,
    /// current_schema()
    CurrentSchema,
    /// current_user, session_user
    CurrentUser,
    /// pg_backend_pid()
    BackendPid,
    /// txid_current() / pg_current_xact_id(): the transaction's id, given on first use.
    TxidCurrent,
    /// inet_client_addr(), inet_client_port() (false), inet_server_addr(),
    /// inet_server_port() (true): the connection's ends; `true` for the address.
    InetEnd(bool, bool),
    /// kiln_sync(): waits until every transaction this session committed is durable
    KilnSync,
    /// kiln_persist(): flushes the log now; returns the durable position
    KilnPersist,
    /// kiln_last_txid(): the id of the session's last committed transaction that wrote (else its
    /// last transaction)
    KilnLastTxid,
    /// lastval(): the value this session's last nextval returned
    LastVal,
    /// kiln_txn_status(id)
    KilnTxnStatus,
    /// kiln_txn_levels(id): the durability levels it reached, comma-separated
    KilnTxnLevels,
    /// kiln_cluster_add_node(id, raft_addr, sql_addr[, site])
    KilnClusterAddNode,
    /// kiln_cluster_remove_node(id)
    KilnClusterRemoveNode,
    /// kiln_wait(id, timeout_ms[, level])
    KilnWait,
    /// kiln_fault_fail_syncs(n): fail the next n log fsyncs (only with fault injection on)
    KilnFaultFailSyncs,
    /// kiln_fault_disk_full(bytes): the log's disk has this many bytes free (negative or
    /// NULL: unlimited again); fault injection only.
    KilnFaultDiskFull,
    /// kiln_fault_panic(): panics (fault injection only), to test that a bug ends one
    /// connection and releases what it held.
    KilnFaultPanic,
    /// A catalog function clients call (psql's \d): answered by the session.
    Catalog(CatalogFunc),
    /// A string function (replace, split_part, format …; see `strings.rs`).
    Str(StrFunc),
    /// A mathematical function (sqrt, ln, trunc, mod …; see `strings.rs`).
    Math(MathFunc),
    /// array_to_string(array, separator [, null string])
    ArrayToString,
    /// string_to_array(text, separator [, null string])
    StringToArray,
    /// array_upper(array, dimension)
    ArrayUpper,
    /// array_lower(array, dimension)
    ArrayLower,
    /// array_length(array, dimension)
    ArrayLength,
    /// array_ndims(array)
    ArrayNdims,
    /// pg_postmaster_start_time(): when the server started
    StartTime,
    /// array_dims(array): `[lower:upper]`
    ArrayDims,
    /// Date/time constructors (`expr::dates`).
    Time(TimeFunc),
    /// cardinality(array)
    Cardinality,
    /// array_position(array, element)
    ArrayPosition,
    /// array[index] (1-based; the binder shifts 0-based vectors)
    ArrayElement,
    /// ARRAY[a, b, …]
    MakeArray,
    /// array_cat(a, b), a || b
    ArrayCat,
    /// array_append(a, x)
    ArrayAppend,
    /// array_prepend(x, a)
    ArrayPrepend,
    /// array_remove(a, x)
    ArrayRemove,
    /// a @> b
    ArrayContains,
    /// a <@ b
    ArrayContainedBy,
    /// a && b
    ArrayOverlap,
    /// unnest(array): as a value, the array; a select item or FROM item expands it.
    Unnest,
    /// generate_subscripts(array, dim [, reverse]): as a value, the array of subscripts.
    GenerateSubscripts,
    /// information_schema._pg_expandarray(array): as a value, the array of (element,
    /// position) records.
    ExpandArray,
    /// generate_series(start, stop [, step]) as a select item: as a value, the array of
    /// the series.
    GenerateSeries,
    /// quote_ident(text)
    QuoteIdent,
    /// quote_literal(text), quote_nullable(text): a string literal of the text.
    QuoteLiteral,
    /// pg_options_to_table(text[]) in FROM: `false` the names of its `name=value` options,
    /// `true` their values.
    OptionsToTable(bool),
    /// pg_partition_ancestors(relation): the relation, its parent, its parent's parent, …
    /// as an array of OIDs; the binder gives every partition's OID and its parent's as two
    /// arrays after the argument.
    PartitionAncestors,
    /// acldefault(kind, owner): the privileges an object of that kind has by default.
    AclDefault,
    /// pg_is_in_recovery(): whether this node does not take writes (a cluster follower).
    IsInRecovery,
    /// set_config(name, value, is_local) inside a larger query: checked when called, applied
    /// when the statement succeeds (a lone `SELECT set_config(…)` runs as SET).
    SetConfig,
    /// current_setting(name, missing_ok) of a name known only when the statement runs.
    CurrentSetting,
    /// enum_range(a, b) of an enum type: its labels from a to b (NULL: from the first, to
    /// the last).
    EnumRange(&'static crate::enums::EnumType),
    /// pg_size_pretty(bytes)
    SizePretty,
    /// num_nulls(…) (true) / num_nonnulls(…) (false): how many arguments are (not) NULL
    CountNulls(bool),
    /// GROUPING(a, …) as bound, before the grouping it refers to is known (`post_agg`
    /// replaces it).
    Grouping,
    /// The grouping set a grouped row belongs to: the last key of a grouping with sets (the
    /// executor gives it the set's number).
    GroupingSet,
    /// GROUPING(a, …) of a grouped row: (masks per set, the row's set number) → its mask.
    GroupingBits,
    /// json_build_object(key, value, …), jsonb_build_object with `true`: keys and the
    /// values' JSON texts (the binder wraps each value in `ToJson`).
    JsonBuildObject(bool),
    /// json_build_array(value, …), jsonb_build_array with `true`: the values' JSON texts.
    JsonBuildArray(bool),
    /// to_json(x) / to_jsonb(x) (`true`) of a value of the type given.
    ToJson(DataType, bool),
    /// json_agg / jsonb_agg (`true`): the array its array_agg collected, of values of the
    /// type given, as a JSON array.
    JsonAgg(DataType, bool),
    /// json_object_agg / jsonb_object_agg (true) over collected `[key, value]` pairs of
    /// these types.
    JsonObjectAgg(DataType, DataType, bool),
    /// json_agg of whole rows: their objects written as PostgreSQL writes them, one per line.
    JsonAggRows,
    /// A whole row as a JSON object: the first argument the columns' names (a text array),
    /// the others their JSON texts.
    RowJson,
    /// A json (`false`) or jsonb (`true`) operator or function; the document is the first
    /// argument.
    Json(JsonFunc, bool),
    /// The inet and cidr operators and functions (see [`crate::inet`]).
    Net(NetFunc),
    /// The full text search functions and operators (see [`crate::textsearch`]).
    Ts(TsFunc),
}

/// The full text search functions and operators (see [`crate::textsearch::call`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsFunc {
    /// `to_tsvector([config,] text)`
    ToTsVector,
    /// `to_tsquery([config,] text)`
    ToTsQuery,
    PlainToTsQuery,
    PhraseToTsQuery,
    WebSearchToTsQuery,
    /// `tsvector @@ tsquery` (arguments in that order)
    Match,
    /// `text @@ tsquery`: the text read by the session's configuration
    MatchText,
    /// `ts_rank`; true when the weights array comes first
    Rank(bool),
    SetWeight,
    Strip,
    Length,
    NumNode,
    /// `tsvector || tsvector`
    Concat,
    /// `ts_delete`
    Delete,
    /// `ts_filter`
    Filter,
    /// `tsvector_to_array`
    ToArray,
    /// `array_to_tsvector`
    FromArray,
    /// `tsquery && tsquery`
    QueryAnd,
    /// `tsquery || tsquery`
    QueryOr,
    /// `!! tsquery`
    QueryNot,
    /// `tsquery <-> tsquery`, `tsquery_phrase(a, b [, distance])`
    QueryPhrase,
    /// `get_current_ts_config()`
    CurrentConfig,
    /// A text search configuration's name as a `regconfig` value (`'english'::regconfig`).
    Config,
}

/// The network address operators and functions (see [`crate::inet::call`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetFunc {
    /// `a << b` (true) / `a <<= b`: `a` is within `b`.
    Within(bool),
    /// `a >> b` (true) / `a >>= b`: `a` contains `b`.
    Contains(bool),
    /// `a && b`
    Overlaps,
    /// `inet + bigint`, `bigint + inet` (the address first), `inet - bigint`
    Add(bool),
    /// `inet - inet`
    Difference,
    /// `inet & inet`
    And,
    /// `inet | inet`
    Or,
    /// `~inet`
    Not,
    Host,
    Text,
    Abbrev,
    Masklen,
    SetMasklen,
    Network,
    Broadcast,
    Netmask,
    Hostmask,
    Family,
    SameFamily,
    Merge,
}

/// The json and jsonb operators and functions (see [`crate::json`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonFunc {
    /// `->` a key or index
    Field,
    /// `->>` a key or index
    FieldText,
    /// `#>` a path (text[]), json_extract_path
    Path,
    /// `#>>` a path, json_extract_path_text
    PathText,
    /// `@>` (`<@` swaps the operands)
    Contains,
    /// `?` a key
    Exists,
    /// `?|` any of the keys
    ExistsAny,
    /// `?&` all of the keys
    ExistsAll,
    /// `||`
    Concat,
    /// `-` a key or an index
    Delete,
    /// `#-` a path
    DeletePath,
    /// jsonb_typeof
    Typeof,
    /// jsonb `=`: equal as jsonb compares (numbers by value)
    Equal,
    /// jsonb `<`, `>` …: -1, 0 or 1 in jsonb's order
    Compare,
    /// jsonb_array_length
    ArrayLength,
    /// jsonb_strip_nulls
    StripNulls,
    /// jsonb_set(doc, path, new [, create_missing])
    Set,
    /// jsonb_pretty
    Pretty,
    /// jsonb_array_elements (set-returning: the array of the elements)
    ArrayElements,
    /// jsonb_array_elements_text
    ArrayElementsText,
    /// jsonb_object_keys
    ObjectKeys,
    /// jsonb_each's key column: every member's key (jsonb: the kept ones, in its order)
    EachKeys,
    /// jsonb_each's value column
    EachValues,
    /// jsonb_each_text's value column
    EachValuesText,
    /// jsonb_to_record(set)'s column named by the second argument: its value in each row
    /// (the object, or each object of the array with `set`), as text to be cast to the
    /// column's type (`text`), or as JSON text for a json or jsonb column.
    RecordColumn {
        /// jsonb_to_recordset (an array of objects), not jsonb_to_record (one object).
        set: bool,
        /// Strings unquoted, for a column of another type than json or jsonb.
        text: bool,
    },
}

/// What a window function computes.
#[derive(Debug, Clone, PartialEq)]
pub enum WindowFunc {
    /// row_number()
    RowNumber,
    /// rank()
    Rank,
    /// dense_rank()
    DenseRank,
    /// percent_rank()
    PercentRank,
    /// cume_dist()
    CumeDist,
    /// ntile(n)
    Ntile,
    /// lag(x [, offset [, default]])
    Lag,
    /// lead(x [, offset [, default]])
    Lead,
    /// first_value(x)
    FirstValue,
    /// last_value(x)
    LastValue,
    /// nth_value(x, n)
    NthValue,
    /// An aggregate over the frame, computed as a GROUP BY computes it (its one argument
    /// packed as that aggregate wants it; none for count(*)); `ty` is the aggregate's own
    /// result type, and `finish`, over that value as column 0, turns it into the call's
    /// result where the function is more than the aggregate (json_agg writes the values
    /// array_agg collects as JSON).
    Agg {
        /// The aggregate.
        func: AggFunc,
        /// Its result type.
        ty: DataType,
        /// What the call makes of the aggregate's value (column 0).
        finish: Option<Box<Expr>>,
    },
}

/// What a window frame's offsets count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameUnits {
    /// ROWS: rows.
    Rows,
    /// RANGE: values of the one ORDER BY key (an offset is a distance from the current
    /// row's value); CURRENT ROW takes its peers.
    Range,
    /// GROUPS: peer groups (rows equal in the ORDER BY keys).
    Groups,
}

/// One end of a window frame. An offset is an expression of no column (a constant or a
/// parameter), evaluated once per execution: a row or group count (bigint) for ROWS and
/// GROUPS, a distance in the ORDER BY key's terms for RANGE.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameBound {
    /// UNBOUNDED PRECEDING
    UnboundedPreceding,
    /// offset PRECEDING
    Preceding(Box<Expr>),
    /// CURRENT ROW (with RANGE and GROUPS: the row and its peers)
    CurrentRow,
    /// offset FOLLOWING
    Following(Box<Expr>),
    /// UNBOUNDED FOLLOWING
    UnboundedFollowing,
}

/// A window function call, before the plan's window stage computes it into a column.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCall {
    /// The function.
    pub func: WindowFunc,
    /// Its arguments.
    pub args: Vec<Expr>,
    /// PARTITION BY
    pub partition: Vec<Expr>,
    /// ORDER BY keys.
    pub order: Vec<Expr>,
    /// Per ORDER BY key: descending, nulls first.
    pub directions: Vec<(bool, bool)>,
    /// The frame: its units, start, end.
    pub frame: (FrameUnits, FrameBound, FrameBound),
    /// The result type.
    pub ty: DataType,
}

/// The functions of a sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqFunc {
    /// nextval(sequence): the next value (never handed out again)
    NextVal,
    /// currval(sequence): the value this session's last nextval of it returned
    CurrVal,
    /// setval(sequence, value [, is_called])
    SetVal,
    /// The sequence's last value (`last_value` of `SELECT … FROM sequence`)
    LastValue,
    /// Whether the last value was handed out (`is_called` of `SELECT … FROM sequence`)
    IsCalled,
}

impl SeqFunc {
    /// Its SQL name.
    pub fn name(self) -> &'static str {
        match self {
            SeqFunc::NextVal => "nextval",
            SeqFunc::CurrVal => "currval",
            SeqFunc::SetVal => "setval",
            SeqFunc::LastValue => "pg_sequence_last_value",
            SeqFunc::IsCalled => "is_called",
        }
    }
}

/// The catalog functions Kiln answers (enough for psql's describe commands).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogFunc {
    /// pg_table_is_visible(oid): true
    TableIsVisible,
    /// pg_get_userbyid(oid)
    UserById,
    /// format_type(type oid, typmod)
    FormatType,
    /// `oidvectortypes(oidvector)`.
    OidVectorTypes,
    /// pg_get_expr(expr text, relation oid [, pretty])
    GetExpr,
    /// pg_get_indexdef(index oid [, column, pretty])
    IndexDef,
    /// pg_get_partkeydef(table oid): `RANGE (a)`, NULL unless partitioned
    PartKeyDef,
    /// pg_get_partition_constraintdef(table oid): a partition's bound as a condition
    PartitionConstraintDef,
    /// pg_get_constraintdef(constraint oid [, pretty])
    ConstraintDef,
    /// pg_get_viewdef(view oid [, pretty]): the view's query as stored
    ViewDef,
    /// pg_get_triggerdef(trigger oid [, pretty])
    TriggerDef,
    /// pg_get_functiondef(function oid): `CREATE OR REPLACE FUNCTION …`
    FunctionDef,
    /// pg_get_function_result(oid): the type a function made with CREATE FUNCTION
    /// returns, NULL for any other OID
    FunctionResult,
    /// pg_get_function_arguments(oid): its arguments with their names and defaults
    FunctionArguments,
    /// pg_get_function_identity_arguments(oid): its arguments without defaults
    FunctionIdentityArguments,
    /// pg_encoding_to_char(int)
    EncodingToChar,
    /// pg_relation_is_publishable(oid): false
    RelationIsPublishable,
    /// pg_get_statisticsobjdef_columns(oid): NULL
    StatisticsColumns,
    /// obj_description / col_description / shobj_description: NULL
    Description,
    /// current_schemas(bool)
    CurrentSchemas,
    /// has_*_privilege(...): true
    HasPrivilege,
    /// `oid::regclass::text`: the relation's name (the number when there is none).
    RegClassName,
    /// `oid::regtype::text`: the type's name (the number when there is none).
    RegTypeName,
    /// `name::regclass` at execution (`true`: `to_regclass`, NULL when there is none).
    RegClassOid(bool),
    /// pg_get_serial_sequence(table, column) with names known only at execution.
    SerialSequence,
    /// `name::regtype` at execution (`true`: `to_regtype`, NULL when there is none).
    RegTypeOid(bool),
}

/// What a subquery expression computes.
#[derive(Debug, Clone, PartialEq)]
pub enum SubqueryKind {
    /// (SELECT …): the single value of the single row (NULL for none; 21000 for several).
    Scalar,
    /// [NOT] EXISTS (SELECT …)
    Exists(bool),
    /// x [NOT] IN (SELECT …)
    In(Box<Expr>, bool),
    /// (x, y, …) [NOT] IN (SELECT a, b, …): row values, compared pair by pair.
    InRow(Vec<Expr>, bool),
    /// ARRAY(SELECT …): the values as an array literal ('{a,b}').
    Array,
}

/// What a subquery returned: the first column of each row (all any kind of subquery
/// expression reads), shared by every use of the result.
pub type SubqueryValues = std::sync::Arc<Vec<Value>>;

/// The first column of each row; a row of several columns (only a row-valued IN reads
/// them) as an array of its values.
pub fn subquery_values(rows: Vec<Vec<Value>>) -> SubqueryValues {
    std::sync::Arc::new(
        rows.into_iter()
            .map(|r| match <[Value; 1]>::try_from(r) {
                Ok([v]) => v,
                Err(r) => Value::Array(r),
            })
            .collect(),
    )
}

impl SubqueryKind {
    /// The expression that stands for the subquery once its values are known: a constant,
    /// or for `x IN (…)` the test against the values.
    pub fn resolve(self, values: SubqueryValues) -> Result<Expr> {
        Ok(match self {
            SubqueryKind::In(x, negated) => Expr::InValues(x, values, negated),
            SubqueryKind::InRow(xs, negated) => {
                // OR of the row equalities, one per row the subquery returned.
                let rows = values
                    .iter()
                    .map(|r| {
                        let Value::Array(items) = r else { return Expr::Const(Value::Null) };
                        let pairs = xs
                            .iter()
                            .zip(items)
                            .map(|(x, v)| {
                                Expr::Binary(
                                    BinOp::Eq,
                                    Box::new(x.clone()),
                                    Box::new(Expr::Const(v.clone())),
                                )
                            })
                            .collect();
                        crate::bind::balanced(true, pairs)
                    })
                    .collect();
                let any = crate::bind::balanced(false, rows);
                if negated {
                    Expr::Not(Box::new(any))
                } else {
                    any
                }
            }
            other => Expr::Const(other.value(&values, &Value::Null)?),
        })
    }

    /// The value of the subquery expression given the subquery's values (and, for IN, the
    /// value of the left operand).
    pub fn value(&self, values: &[Value], left: &Value) -> Result<Value> {
        Ok(match self {
            SubqueryKind::Scalar => {
                if values.len() > 1 {
                    return Err(SqlError::new(
                        code::CARDINALITY,
                        "more than one row returned by a subquery used as an expression",
                    ));
                }
                values.first().cloned().unwrap_or(Value::Null)
            }
            SubqueryKind::Exists(negated) => Value::Bool(values.is_empty() == *negated),
            SubqueryKind::In(_, negated) => in_values(left, values, *negated),
            SubqueryKind::InRow(_, negated) => in_rows(left, values, *negated),
            SubqueryKind::Array => {
                crate::array::check_len(values.len())?;
                Value::Array(values.to_vec())
            }
        })
    }
}

/// A planned subquery, shared by clones of the expression that holds it, and how it reads
/// the rows of the queries enclosing it.
#[derive(Clone)]
pub struct SubPlan(pub std::sync::Arc<crate::plan::SelectPlan>, pub OuterRow);

/// How a subquery sees the rows of the queries enclosing it: as one row, the enclosing
/// queries' rows laid end to end (outermost first), `Expr::Outer` indexing into it.
#[derive(Debug, Clone, Copy, Default)]
pub struct OuterRow {
    /// The width of the directly enclosing query's row, as bound.
    pub width: usize,
    /// Whether it (or a subquery of its own) reads a query further out than the directly
    /// enclosing one: it must run again for each of that query's rows.
    pub deep: bool,
}

impl OuterRow {
    /// The row a subquery run from `row` sees: `outer` (the enclosing queries' rows) then
    /// the first `width` values of `row`.
    pub fn of<'r>(&self, outer: &'r [Value], row: &'r [Value]) -> std::borrow::Cow<'r, [Value]> {
        if outer.is_empty() && row.len() >= self.width {
            return std::borrow::Cow::Borrowed(&row[..self.width]);
        }
        let mut v = Vec::with_capacity(outer.len() + self.width);
        v.extend_from_slice(outer);
        v.extend(row.iter().take(self.width).cloned());
        v.resize(outer.len() + self.width, Value::Null);
        std::borrow::Cow::Owned(v)
    }
}

impl PartialEq for SubPlan {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for SubPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubPlan")
    }
}

/// Runs subqueries during execution (it holds the transaction).
pub trait SubqueryRunner {
    /// Every row of `plan`, evaluated with `ctx` (whose `outer` is the referencing row).
    fn run(&self, plan: &crate::plan::SelectPlan, ctx: &Ctx) -> Result<Vec<Vec<Value>>>;

    /// The values of an uncorrelated subquery: run on the first call, remembered for the
    /// rest of the statement (PostgreSQL's InitPlan).
    fn run_once(&self, plan: &SubPlan, ctx: &Ctx) -> Result<SubqueryValues>;

    /// Calls a function made with CREATE FUNCTION on its arguments' values.
    fn call(
        &self,
        routine: &crate::exec::routines::Routine,
        args: Vec<Value>,
        ctx: &Ctx,
    ) -> Result<Value>;
}

/// A bound expression: columns are positions in the input row.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A constant.
    Const(Value),
    /// A column of the input row.
    Column(usize),
    /// A statement parameter ($n, 0-based).
    Param(usize),
    /// A column of the enclosing query's row (in a correlated subquery).
    Outer(usize),
    /// A subquery evaluated for each row: the plan, what it computes, and the columns of the
    /// enclosing row it refers to.
    Subquery(SubPlan, SubqueryKind, Vec<usize>),
    /// x op ANY (array), or with `true` x op ALL (array)
    AnyOp(Box<Expr>, BinOp, Box<Expr>, bool),
    /// NOT
    Not(Box<Expr>),
    /// unary minus
    Neg(Box<Expr>),
    /// A binary operator.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// AND (three-valued)
    And(Box<Expr>, Box<Expr>),
    /// OR (three-valued)
    Or(Box<Expr>, Box<Expr>),
    /// IS [NOT] NULL
    IsNull(Box<Expr>, bool),
    /// IS [NOT] DISTINCT FROM
    IsDistinct(Box<Expr>, Box<Expr>, bool),
    /// x [NOT] IN (list)
    InList(Box<Expr>, Vec<Expr>, bool),
    /// x [NOT] IN (values computed by a subquery, filled before evaluation)
    InValues(Box<Expr>, std::sync::Arc<Vec<Value>>, bool),
    /// [NOT] LIKE / ILIKE
    Like {
        /// The string.
        expr: Box<Expr>,
        /// The pattern.
        pattern: Box<Expr>,
        /// NOT LIKE
        negated: bool,
        /// ILIKE
        case_insensitive: bool,
    },
    /// CASE
    Case {
        /// CASE x WHEN ...
        operand: Option<Box<Expr>>,
        /// WHEN a THEN b
        whens: Vec<(Expr, Expr)>,
        /// ELSE
        otherwise: Option<Box<Expr>>,
    },
    /// CAST / ::
    Cast(Box<Expr>, DataType),
    /// A scalar function.
    Func(Func, Vec<Expr>),
    /// `nextval`, `currval` or `setval` on the sequence its first argument named when the
    /// statement was bound, with the other arguments.
    Sequence(SeqFunc, std::sync::Arc<crate::sequence::Sequence>, Vec<Expr>),
    /// A call of a function made with CREATE FUNCTION: its body bound, and the arguments
    /// (converted to its argument types, defaults filled in).
    Routine(std::sync::Arc<crate::exec::routines::Routine>, Vec<Expr>),
    /// An aggregate (only before aggregation is planned; evaluation never sees it): the
    /// function, DISTINCT, the argument (none for count(*)) and the result type.
    Agg(AggFunc, bool, Option<Box<Expr>>, DataType),
    /// A window function (only before the plan's window stage takes it out; evaluation
    /// never sees it).
    Window(Box<WindowCall>),
    /// A value cast to a domain: the value, once the domain's constraints hold for it
    /// (`crate::domains`).
    Domain(Box<Expr>, std::sync::Arc<crate::domains::BoundDomain>),
}

/// What expression evaluation needs from the session.
pub trait Env {
    /// The statement's timestamp (now()).
    fn now(&self) -> i64;
    /// The session's time zone, DateStyle and IntervalStyle.
    fn style(&self) -> crate::style::Style;
    /// The session's time zone (the `TimeZone` setting).
    fn zone(&self) -> crate::zone::Zone {
        self.style().zone
    }
    /// current_database()
    fn database(&self) -> String;
    /// current_user
    fn user(&self) -> String;
    /// pg_backend_pid()
    fn backend_pid(&self) -> i32;
    /// The ED functions.
    fn kiln(&self, func: Func, args: &[Value]) -> Result<Value>;
    /// Catalog functions (definitions of indexes and constraints by oid, type names).
    fn catalog(&self, func: CatalogFunc, args: &[Value]) -> Result<Value>;
    /// Sends a notice to the client (RAISE NOTICE in a function); dropped by default.
    fn notice(&self, _notice: crate::session::Notice) {}
    /// A sequence function; `args` are the arguments after the sequence.
    fn sequence(
        &self,
        func: SeqFunc,
        seq: &crate::sequence::Sequence,
        args: &[Value],
    ) -> Result<Value>;
}

/// Evaluation context: parameters, the session, the enclosing row of a correlated
/// subquery, and who runs subqueries.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// $1... values.
    pub params: &'a [Value],
    /// The session.
    pub env: &'a dyn Env,
    /// The enclosing query's row (empty at the top level).
    pub outer: &'a [Value],
    /// Runs subqueries (absent where the transaction is busy writing).
    pub runner: Option<&'a dyn SubqueryRunner>,
}

impl<'a> Ctx<'a> {
    /// A context without subquery execution.
    pub fn new(params: &'a [Value], env: &'a dyn Env) -> Ctx<'a> {
        Ctx { params, env, outer: &[], runner: None }
    }
}

impl Expr {
    /// Evaluates against `row`.
    #[recursive::recursive]
    pub fn eval(&self, row: &[Value], ctx: &Ctx) -> Result<Value> {
        Ok(match self {
            Expr::Const(v) => v.clone(),
            Expr::Column(i) => row.get(*i).cloned().unwrap_or(Value::Null),
            Expr::Param(i) => ctx.params.get(*i).cloned().ok_or_else(|| {
                SqlError::new(
                    code::UNDEFINED_PARAMETER,
                    format!("there is no parameter ${}", i + 1),
                )
            })?,
            Expr::Outer(i) => ctx.outer.get(*i).cloned().unwrap_or(Value::Null),
            Expr::Subquery(plan, kind, refs) => {
                let Some(runner) = ctx.runner else {
                    return Err(SqlError::unsupported("a correlated subquery in this position"));
                };
                let left = match kind {
                    SubqueryKind::In(x, _) => x.eval(row, ctx)?,
                    SubqueryKind::InRow(xs, _) => {
                        Value::Array(xs.iter().map(|x| x.eval(row, ctx)).collect::<Result<_>>()?)
                    }
                    _ => Value::Null,
                };
                let values = if refs.is_empty() && !plan.1.deep {
                    // Uncorrelated: runs on first use, once per statement.
                    runner.run_once(plan, ctx)?
                } else {
                    let outer = plan.1.of(ctx.outer, row);
                    let inner = Ctx { outer: &outer, ..*ctx };
                    subquery_values(runner.run(&plan.0, &inner)?)
                };
                kind.value(&values, &left)?
            }
            Expr::AnyOp(x, op, arr, all) => {
                let arr = arr.eval(row, ctx)?;
                if arr.is_null() {
                    return Ok(Value::Null);
                }
                let items = array_items(arr)?;
                if items.is_empty() {
                    // ANY of nothing is false, ALL of nothing true, whatever x is.
                    return Ok(Value::Bool(*all));
                }
                let v = x.eval(row, ctx)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                // ANY: true at the first true; ALL: false at the first false; else NULL if
                // a comparison was NULL.
                let mut saw_null = false;
                for item in items {
                    match binary(*op, v.clone(), item, ctx.env.style())?.as_bool()? {
                        None => saw_null = true,
                        Some(b) if b != *all => return Ok(Value::Bool(b)),
                        Some(_) => {}
                    }
                }
                if saw_null {
                    Value::Null
                } else {
                    Value::Bool(*all)
                }
            }
            Expr::Not(e) => match e.eval(row, ctx)?.as_bool()? {
                None => Value::Null,
                Some(b) => Value::Bool(!b),
            },
            Expr::Neg(e) => match e.eval(row, ctx)? {
                Value::Null => Value::Null,
                Value::Int(i) => Value::Int(i.checked_neg().ok_or_else(|| overflow("bigint"))?),
                Value::Float(f) => Value::Float(-f),
                Value::Numeric(d) => Value::Numeric(d.neg()),
                Value::Interval(iv) => Value::Interval(iv.checked_neg()?),
                Value::Text(s) => match Value::parse(&s, DataType::Numeric(None))? {
                    Value::Numeric(d) => Value::Numeric(d.neg()),
                    v => v,
                },
                v => return Err(type_error("-", &v)),
            },
            Expr::Binary(op, a, b) => {
                binary(*op, a.eval(row, ctx)?, b.eval(row, ctx)?, ctx.env.style())?
            }
            Expr::And(a, b) => {
                let a = a.eval(row, ctx)?.as_bool()?;
                if a == Some(false) {
                    return Ok(Value::Bool(false));
                }
                match (a, b.eval(row, ctx)?.as_bool()?) {
                    (_, Some(false)) => Value::Bool(false),
                    (Some(true), Some(true)) => Value::Bool(true),
                    _ => Value::Null,
                }
            }
            Expr::Or(a, b) => {
                let a = a.eval(row, ctx)?.as_bool()?;
                if a == Some(true) {
                    return Ok(Value::Bool(true));
                }
                match (a, b.eval(row, ctx)?.as_bool()?) {
                    (_, Some(true)) => Value::Bool(true),
                    (Some(false), Some(false)) => Value::Bool(false),
                    _ => Value::Null,
                }
            }
            Expr::IsNull(e, negated) => Value::Bool(e.eval(row, ctx)?.is_null() != *negated),
            Expr::IsDistinct(a, b, negated) => {
                let (a, b) = (a.eval(row, ctx)?, b.eval(row, ctx)?);
                let distinct = match (a.is_null(), b.is_null()) {
                    (true, true) => false,
                    (true, false) | (false, true) => true,
                    _ => a.sql_cmp(&b) != Some(Ordering::Equal),
                };
                Value::Bool(distinct != *negated)
            }
            Expr::InList(e, list, negated) => {
                let v = e.eval(row, ctx)?;
                let mut values = Vec::with_capacity(list.len());
                for item in list {
                    values.push(item.eval(row, ctx)?);
                }
                in_values(&v, &values, *negated)
            }
            Expr::InValues(e, values, negated) => in_values(&e.eval(row, ctx)?, values, *negated),
            Expr::Like { expr, pattern, negated, case_insensitive } => {
                let (s, p) = (expr.eval(row, ctx)?, pattern.eval(row, ctx)?);
                match (s, p) {
                    (Value::Null, _) | (_, Value::Null) => Value::Null,
                    (s, p) => {
                        let s = s.to_text(DataType::Text).unwrap_or_default();
                        let p = p.to_text(DataType::Text).unwrap_or_default();
                        let m = if *case_insensitive {
                            like(&s.to_lowercase(), &p.to_lowercase())?
                        } else {
                            like(&s, &p)?
                        };
                        Value::Bool(m != *negated)
                    }
                }
            }
            Expr::Case { operand, whens, otherwise } => {
                let op = match operand {
                    Some(o) => Some(o.eval(row, ctx)?),
                    None => None,
                };
                for (when, then) in whens {
                    let w = when.eval(row, ctx)?;
                    let hit = match &op {
                        Some(o) => {
                            !o.is_null() && !w.is_null() && o.sql_cmp(&w) == Some(Ordering::Equal)
                        }
                        None => w.as_bool()? == Some(true),
                    };
                    if hit {
                        return then.eval(row, ctx);
                    }
                }
                match otherwise {
                    Some(e) => e.eval(row, ctx)?,
                    None => Value::Null,
                }
            }
            Expr::Cast(e, ty) => e.eval(row, ctx)?.cast_explicit(*ty, ctx.env.style())?,
            Expr::Domain(e, domain) => {
                let v = e.eval(row, ctx)?;
                domain.check(&v, ctx)?;
                v
            }
            Expr::Func(f, args) => {
                let mut values = Vec::with_capacity(args.len());
                // coalesce is lazy.
                if *f == Func::Coalesce {
                    for a in args {
                        let v = a.eval(row, ctx)?;
                        if !v.is_null() {
                            return Ok(v);
                        }
                    }
                    return Ok(Value::Null);
                }
                for a in args {
                    values.push(a.eval(row, ctx)?);
                }
                call(*f, values, ctx)?
            }
            Expr::Sequence(f, seq, args) => {
                let values = args.iter().map(|a| a.eval(row, ctx)).collect::<Result<Vec<_>>>()?;
                ctx.env.sequence(*f, seq, &values)?
            }
            Expr::Routine(routine, args) => {
                let values = args.iter().map(|a| a.eval(row, ctx)).collect::<Result<Vec<_>>>()?;
                let Some(runner) = ctx.runner else {
                    return Err(SqlError::unsupported(format!(
                        "a call of function {} in this position",
                        routine.name
                    )));
                };
                runner.call(routine, values, ctx)?
            }
            Expr::Agg(..) => {
                return Err(SqlError::new(
                    code::GROUPING,
                    "aggregate functions are not allowed here",
                ))
            }
            Expr::Window(_) => {
                return Err(SqlError::new("42P20", "window functions are not allowed here"))
            }
        })
    }

    /// Evaluates as a condition: true only when the value is true.
    pub fn eval_bool(&self, row: &[Value], ctx: &Ctx) -> Result<bool> {
        Ok(self.eval(row, ctx)?.as_bool()? == Some(true))
    }

    /// Whether the expression reads any column at or above `from`.
    pub fn uses_columns_from(&self, from: usize) -> bool {
        let mut hit = false;
        self.walk(&mut |e| {
            if let Expr::Column(i) = e {
                if *i >= from {
                    hit = true;
                }
            }
        });
        hit
    }

    /// Whether the expression reads any column in `range`.
    pub fn uses_columns_in(&self, range: std::ops::Range<usize>) -> bool {
        let mut hit = false;
        self.walk(&mut |e| {
            if let Expr::Column(i) = e {
                if range.contains(i) {
                    hit = true;
                }
            }
        });
        hit
    }

    /// Whether the expression contains an aggregate.
    pub fn has_agg(&self) -> bool {
        let mut hit = false;
        self.walk(&mut |e| {
            if matches!(e, Expr::Agg(..)) {
                hit = true;
            }
        });
        hit
    }

    /// Calls `f` on each direct child. Every traversal of the tree is built on this and on
    /// [`Expr::try_map_children`]; both list every variant, so a new kind of node cannot be
    /// skipped silently by a rewrite.
    pub fn for_each_child<'e>(&'e self, f: &mut dyn FnMut(&'e Expr)) {
        match self {
            Expr::Const(_) | Expr::Column(_) | Expr::Param(_) | Expr::Outer(_) => {}
            Expr::Subquery(_, kind, _) => match kind {
                SubqueryKind::In(x, _) => f(x),
                SubqueryKind::InRow(xs, _) => xs.iter().for_each(f),
                SubqueryKind::Scalar | SubqueryKind::Exists(_) | SubqueryKind::Array => {}
            },
            Expr::Not(x)
            | Expr::Neg(x)
            | Expr::IsNull(x, _)
            | Expr::Cast(x, _)
            | Expr::Domain(x, _)
            | Expr::InValues(x, _, _) => f(x),
            Expr::AnyOp(a, _, b, _)
            | Expr::Binary(_, a, b)
            | Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::IsDistinct(a, b, _) => {
                f(a);
                f(b);
            }
            Expr::InList(x, list, _) => {
                f(x);
                list.iter().for_each(f);
            }
            Expr::Like { expr, pattern, negated: _, case_insensitive: _ } => {
                f(expr);
                f(pattern);
            }
            Expr::Case { operand, whens, otherwise } => {
                if let Some(o) = operand {
                    f(o);
                }
                for (w, t) in whens {
                    f(w);
                    f(t);
                }
                if let Some(o) = otherwise {
                    f(o);
                }
            }
            Expr::Func(_, args) | Expr::Sequence(_, _, args) | Expr::Routine(_, args) => {
                args.iter().for_each(f)
            }
            Expr::Agg(_, _, arg, _) => {
                if let Some(a) = arg {
                    f(a);
                }
            }
            Expr::Window(w) => {
                w.args.iter().chain(&w.partition).chain(&w.order).for_each(&mut *f);
                for b in [&w.frame.1, &w.frame.2] {
                    if let FrameBound::Preceding(x) | FrameBound::Following(x) = b {
                        f(x);
                    }
                }
            }
        }
    }

    /// Rebuilds the node with each direct child replaced by `f(child)`, in the order
    /// [`Expr::for_each_child`] visits them.
    pub fn try_map_children(self, f: &mut dyn FnMut(Expr) -> Result<Expr>) -> Result<Expr> {
        let mut b = |x: Box<Expr>| -> Result<Box<Expr>> { Ok(Box::new(f(*x)?)) };
        Ok(match self {
            e @ (Expr::Const(_) | Expr::Column(_) | Expr::Param(_) | Expr::Outer(_)) => e,
            Expr::Subquery(plan, kind, refs) => {
                let kind = match kind {
                    SubqueryKind::In(x, negated) => SubqueryKind::In(b(x)?, negated),
                    SubqueryKind::InRow(xs, negated) => SubqueryKind::InRow(
                        xs.into_iter().map(&mut *f).collect::<Result<_>>()?,
                        negated,
                    ),
                    k @ (SubqueryKind::Scalar | SubqueryKind::Exists(_) | SubqueryKind::Array) => k,
                };
                Expr::Subquery(plan, kind, refs)
            }
            Expr::Not(x) => Expr::Not(b(x)?),
            Expr::Neg(x) => Expr::Neg(b(x)?),
            Expr::IsNull(x, n) => Expr::IsNull(b(x)?, n),
            Expr::Cast(x, t) => Expr::Cast(b(x)?, t),
            Expr::Domain(x, d) => Expr::Domain(b(x)?, d),
            Expr::InValues(x, v, n) => Expr::InValues(b(x)?, v, n),
            Expr::AnyOp(x, op, y, all) => {
                let x = b(x)?;
                Expr::AnyOp(x, op, b(y)?, all)
            }
            Expr::Binary(op, x, y) => {
                let x = b(x)?;
                Expr::Binary(op, x, b(y)?)
            }
            Expr::And(x, y) => {
                let x = b(x)?;
                Expr::And(x, b(y)?)
            }
            Expr::Or(x, y) => {
                let x = b(x)?;
                Expr::Or(x, b(y)?)
            }
            Expr::IsDistinct(x, y, n) => {
                let x = b(x)?;
                Expr::IsDistinct(x, b(y)?, n)
            }
            Expr::InList(x, list, n) => {
                let x = b(x)?;
                Expr::InList(x, list.into_iter().map(&mut *f).collect::<Result<_>>()?, n)
            }
            Expr::Like { expr, pattern, negated, case_insensitive } => {
                let expr = b(expr)?;
                Expr::Like { expr, pattern: b(pattern)?, negated, case_insensitive }
            }
            Expr::Case { operand, whens, otherwise } => {
                let operand = operand.map(&mut b).transpose()?;
                let whens = whens
                    .into_iter()
                    .map(|(w, t)| Ok((f(w)?, f(t)?)))
                    .collect::<Result<Vec<_>>>()?;
                let otherwise =
                    otherwise.map(|o| Ok::<_, SqlError>(Box::new(f(*o)?))).transpose()?;
                Expr::Case { operand, whens, otherwise }
            }
            Expr::Func(func, args) => {
                Expr::Func(func, args.into_iter().map(f).collect::<Result<_>>()?)
            }
            Expr::Sequence(func, seq, args) => {
                Expr::Sequence(func, seq, args.into_iter().map(f).collect::<Result<_>>()?)
            }
            Expr::Routine(routine, args) => {
                Expr::Routine(routine, args.into_iter().map(f).collect::<Result<_>>()?)
            }
            Expr::Agg(func, distinct, arg, ty) => Expr::Agg(
                func,
                distinct,
                arg.map(|a| Ok::<_, SqlError>(Box::new(f(*a)?))).transpose()?,
                ty,
            ),
            Expr::Window(w) => {
                let WindowCall { func, args, partition, order, directions, frame, ty } = *w;
                let args = args.into_iter().map(&mut *f).collect::<Result<_>>()?;
                let partition = partition.into_iter().map(&mut *f).collect::<Result<_>>()?;
                let order = order.into_iter().map(&mut *f).collect::<Result<_>>()?;
                let mut bound = |b: FrameBound| -> Result<FrameBound> {
                    Ok(match b {
                        FrameBound::Preceding(x) => FrameBound::Preceding(Box::new(f(*x)?)),
                        FrameBound::Following(x) => FrameBound::Following(Box::new(f(*x)?)),
                        b => b,
                    })
                };
                let frame = (frame.0, bound(frame.1)?, bound(frame.2)?);
                Expr::Window(Box::new(WindowCall {
                    func,
                    args,
                    partition,
                    order,
                    directions,
                    frame,
                    ty,
                }))
            }
        })
    }

    /// Whether the expression contains a window function.
    pub fn has_window(&self) -> bool {
        let mut hit = false;
        self.walk(&mut |e| hit |= matches!(e, Expr::Window(_)));
        hit
    }

    /// Visits every node, parents first. A correlated subquery's references to the row are
    /// visited as the columns they read.
    #[recursive::recursive]
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        if let Expr::Subquery(_, _, refs) = self {
            for &i in refs {
                f(&Expr::Column(i));
            }
        }
        self.for_each_child(&mut |c| c.walk(f));
    }

    /// Rewrites bottom-up: children first, then `f` on the rebuilt node.
    #[recursive::recursive]
    pub fn map(self, f: &mut dyn FnMut(Expr) -> Result<Expr>) -> Result<Expr> {
        let e = self.try_map_children(&mut |c| c.map(f))?;
        f(e)
    }
}
