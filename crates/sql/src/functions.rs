//! The one registry of scalar functions: each function's SQL names, arity, argument types,
//! result type, strictness and volatility, in one row. Binding (`bind::function`) types a
//! call from it; evaluation (`expr::call`, and `ed` for the functions that need the session)
//! implements each [`Func`]. Adding a function is a variant of [`Func`], a row here, and its
//! implementation.
//!
//! Aggregates (count, sum, min, max, avg, string_agg) are bound separately: they change the
//! shape of the query, not just of an expression.

use crate::advisory::Hold;
use crate::expr::{AdvisoryOp, CatalogFunc, Func, UuidNamespace};
use crate::types::DataType;

/// The type an argument is converted to (an untyped literal or parameter takes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// text
    Text,
    /// integer
    Int4,
    /// bigint
    Int8,
    /// double precision
    Float8,
    /// numeric
    Numeric,
    /// timestamp (a date or a timestamp with time zone converts to it)
    Timestamp,
    /// interval
    Interval,
    /// bytea (an untyped literal is read as bytea input: `'\\x6162'` is two bytes)
    Bytea,
    /// uuid
    Uuid,
    /// As it is (catalog functions take what clients send).
    Any,
    /// The function's result type (CASE-like functions: their branches are unified).
    Result,
}

/// How the result type follows from the arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returns {
    /// Always this type.
    Type(DataType),
    /// The first argument's type (this one when it is untyped).
    FirstArg(DataType),
    /// The common type of all arguments.
    Common,
    /// numeric when an argument is numeric, else double precision (PostgreSQL's
    /// `power(numeric, numeric)` and `power(float8, float8)`).
    NumericOrFloat,
}

/// One function.
#[derive(Debug, Clone, Copy)]
pub struct FuncDef {
    /// Its SQL names (empty for functions only the binder produces).
    pub names: &'static [&'static str],
    /// What evaluates it.
    pub func: Func,
    /// Fewest arguments.
    pub args_min: usize,
    /// Most arguments.
    pub args_max: usize,
    /// Argument types by position; the last one repeats (none: text).
    pub args: &'static [Arg],
    /// The result type.
    pub returns: Returns,
    /// NULL in, NULL out (without calling the implementation).
    pub strict: bool,
    /// Same arguments, same result, no effects: a call with constant arguments is evaluated
    /// once, when the statement is planned (PostgreSQL's IMMUTABLE).
    pub immutable: bool,
}

impl FuncDef {
    /// The type argument `i` is converted to.
    pub fn arg(&self, i: usize) -> Arg {
        self.args.get(i).or(self.args.last()).copied().unwrap_or(Arg::Text)
    }

    /// The result type for arguments of these types.
    pub fn result_type(&self, types: &[DataType]) -> DataType {
        match self.returns {
            Returns::Type(t) => t,
            Returns::FirstArg(default) => match types.first() {
                Some(DataType::Unknown) | None => default,
                Some(t) => *t,
            },
            Returns::Common => types.iter().fold(DataType::Unknown, |a, b| DataType::common(a, *b)),
            Returns::NumericOrFloat => {
                if types.iter().any(|t| matches!(t, DataType::Numeric(_))) {
                    DataType::Numeric(None)
                } else {
                    DataType::Float8
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
const fn f(
    names: &'static [&'static str],
    func: Func,
    args_min: usize,
    args_max: usize,
    args: &'static [Arg],
    returns: Returns,
    strict: bool,
    immutable: bool,
) -> FuncDef {
    FuncDef { names, func, args_min, args_max, args, returns, strict, immutable }
}

use Arg as A;
use DataType as T;
use Returns::{Common, FirstArg, NumericOrFloat, Type};

const TA: DataType = DataType::Array(&DataType::Text);

const STRICT: bool = true;
const LENIENT: bool = false;
const IMMUTABLE: bool = true;
const VOLATILE: bool = false;
const MANY: usize = 100;

/// Every scalar function.
pub static FUNCTIONS: &[FuncDef] = &[
    f(&["lower"], Func::Lower, 1, 1, &[A::Text], Type(T::Text), STRICT, IMMUTABLE),
    f(&["upper"], Func::Upper, 1, 1, &[A::Text], Type(T::Text), STRICT, IMMUTABLE),
    f(
        &["length", "char_length", "character_length"],
        Func::Length,
        1,
        1,
        &[A::Any],
        Type(T::Int4),
        STRICT,
        IMMUTABLE,
    ),
    f(&["octet_length"], Func::OctetLength, 1, 1, &[A::Any], Type(T::Int4), STRICT, IMMUTABLE),
    f(&["bit_length"], Func::BitLength, 1, 1, &[A::Any], Type(T::Int4), STRICT, IMMUTABLE),
    f(&["abs"], Func::Abs, 1, 1, &[A::Numeric], FirstArg(T::Numeric(None)), STRICT, IMMUTABLE),
    f(&["power", "pow"], Func::Power, 2, 2, &[A::Any], NumericOrFloat, STRICT, IMMUTABLE),
    // COALESCE is lazy: evaluation stops at the first non-null argument.
    f(&["coalesce"], Func::Coalesce, 1, MANY, &[A::Result], Common, LENIENT, IMMUTABLE),
    f(&["nullif"], Func::Nullif, 2, 2, &[A::Result], Common, LENIENT, IMMUTABLE),
    f(&["greatest"], Func::Greatest, 1, MANY, &[A::Result], Common, LENIENT, IMMUTABLE),
    f(&["least"], Func::Least, 1, MANY, &[A::Result], Common, LENIENT, IMMUTABLE),
    f(
        &["round"],
        Func::Round,
        1,
        2,
        &[A::Numeric, A::Int8],
        FirstArg(T::Numeric(None)),
        STRICT,
        IMMUTABLE,
    ),
    f(&["floor"], Func::Floor, 1, 1, &[A::Numeric], FirstArg(T::Numeric(None)), STRICT, IMMUTABLE),
    f(
        &["ceil", "ceiling"],
        Func::Ceil,
        1,
        1,
        &[A::Numeric],
        FirstArg(T::Numeric(None)),
        STRICT,
        IMMUTABLE,
    ),
    f(
        &["substr", "substring"],
        Func::Substr,
        2,
        3,
        &[A::Text, A::Int8],
        Type(T::Text),
        STRICT,
        IMMUTABLE,
    ),
    f(&[], Func::Trim, 1, 1, &[A::Text], Type(T::Text), STRICT, IMMUTABLE),
    f(&["btrim"], Func::Btrim, 1, 2, &[A::Text], Type(T::Text), STRICT, IMMUTABLE),
    f(&["ltrim"], Func::Ltrim, 1, 2, &[A::Text], Type(T::Text), STRICT, IMMUTABLE),
    f(&["rtrim"], Func::Rtrim, 1, 2, &[A::Text], Type(T::Text), STRICT, IMMUTABLE),
    f(&["concat"], Func::Concat, 1, MANY, &[A::Text], Type(T::Text), LENIENT, IMMUTABLE),
    f(&["repeat"], Func::Repeat, 2, 2, &[A::Text, A::Int8], Type(T::Text), STRICT, IMMUTABLE),
    f(
        &["array_to_string"],
        Func::ArrayToString,
        2,
        3,
        &[A::Any, A::Text],
        Type(T::Text),
        STRICT,
        IMMUTABLE,
    ),
    f(
        &["string_to_array"],
        Func::StringToArray,
        2,
        3,
        &[A::Text],
        Type(T::Array(&T::Text)),
        LENIENT,
        IMMUTABLE,
    ),
    f(
        &["array_upper"],
        Func::ArrayUpper,
        2,
        2,
        &[A::Any, A::Int4],
        Type(T::Int4),
        STRICT,
        IMMUTABLE,
    ),
    f(
        &["array_lower"],
        Func::ArrayLower,
        2,
        2,
        &[A::Any, A::Int4],
        Type(T::Int4),
        STRICT,
        IMMUTABLE,
    ),
    f(
        &["array_length"],
        Func::ArrayLength,
        2,
        2,
        &[A::Any, A::Int4],
        Type(T::Int4),
        STRICT,
        IMMUTABLE,
    ),
    f(&["array_ndims"], Func::ArrayNdims, 1, 1, &[A::Any], Type(T::Int4), STRICT, IMMUTABLE),
    f(&["cardinality"], Func::Cardinality, 1, 1, &[A::Any], Type(T::Int4), STRICT, IMMUTABLE),
    // Bound by `bind::array` (their arguments follow the array's type).
    f(&[], Func::ArrayPosition, 2, 2, &[A::Any], Type(T::Int4), LENIENT, IMMUTABLE),
    f(&[], Func::ArrayAppend, 2, 2, &[A::Any], FirstArg(T::Text), LENIENT, IMMUTABLE),
    f(&[], Func::ArrayPrepend, 2, 2, &[A::Any], Common, LENIENT, IMMUTABLE),
    f(&[], Func::ArrayRemove, 2, 2, &[A::Any], FirstArg(T::Text), LENIENT, IMMUTABLE),
    f(&[], Func::ArrayCat, 2, 2, &[A::Any], FirstArg(T::Text), LENIENT, IMMUTABLE),
    f(&[], Func::MakeArray, 0, MANY, &[A::Any], Common, LENIENT, IMMUTABLE),
    f(&[], Func::ArrayContains, 2, 2, &[A::Any], Type(T::Bool), STRICT, IMMUTABLE),
    f(&[], Func::ArrayContainedBy, 2, 2, &[A::Any], Type(T::Bool), STRICT, IMMUTABLE),
    f(&[], Func::ArrayOverlap, 2, 2, &[A::Any], Type(T::Bool), STRICT, IMMUTABLE),
    f(&[], Func::ArrayElement, 2, 2, &[A::Any, A::Int8], Type(T::Text), STRICT, IMMUTABLE),
    // Set-returning: bound by `bind::srf` as a whole select item or a FROM item.
    f(&[], Func::Unnest, 1, 1, &[A::Any], Common, STRICT, VOLATILE),
    f(
        &[],
        Func::GenerateSubscripts,
        2,
        3,
        &[A::Any, A::Int4, A::Any],
        Type(T::Int4),
        STRICT,
        VOLATILE,
    ),
    f(&[], Func::GenerateSeries, 2, 3, &[A::Any], Common, STRICT, VOLATILE),
    f(&[], Func::ExpandArray, 1, 1, &[A::Any], Common, STRICT, VOLATILE),
    f(
        &["to_regclass"],
        Func::Catalog(CatalogFunc::RegClassOid(true)),
        1,
        1,
        &[A::Text],
        Type(T::Int8),
        STRICT,
        VOLATILE,
    ),
    f(
        &["to_regtype"],
        Func::Catalog(CatalogFunc::RegTypeOid(true)),
        1,
        1,
        &[A::Text],
        Type(T::Int8),
        STRICT,
        VOLATILE,
    ),
    // Bound by `Planner::json_function` (their arguments' types decide their JSON).
    f(&[], Func::JsonBuildObject(false), 0, MANY, &[A::Any], Type(T::Json), LENIENT, IMMUTABLE),
    f(
        &["pg_table_size", "pg_total_relation_size", "pg_relation_size", "pg_indexes_size"],
        Func::Catalog(CatalogFunc::Description),
        1,
        2,
        &[A::Any],
        Type(T::Int8),
        LENIENT,
        VOLATILE,
    ),
    f(&["pg_size_pretty"], Func::SizePretty, 1, 1, &[A::Numeric], Type(T::Text), STRICT, IMMUTABLE),
    f(&["quote_ident"], Func::QuoteIdent, 1, 1, &[A::Text], Type(T::Text), STRICT, IMMUTABLE),
    f(&["quote_literal"], Func::QuoteLiteral, 1, 1, &[A::Text], Type(T::Text), STRICT, IMMUTABLE),
    f(&[], Func::OptionsToTable(false), 1, 1, &[A::Any], Type(TA), STRICT, IMMUTABLE),
    f(&[], Func::OptionsToTable(true), 1, 1, &[A::Any], Type(TA), STRICT, IMMUTABLE),
    f(&["acldefault"], Func::AclDefault, 2, 2, &[A::Text, A::Any], Type(TA), STRICT, IMMUTABLE),
    f(&["pg_is_in_recovery"], Func::IsInRecovery, 0, 0, &[], Type(T::Bool), STRICT, VOLATILE),
    f(
        &["set_config"],
        Func::SetConfig,
        3,
        3,
        &[A::Text, A::Text, A::Any],
        Type(T::Text),
        LENIENT,
        VOLATILE,
    ),
    f(
        &["now", "transaction_timestamp", "statement_timestamp", "current_timestamp"],
        Func::Now,
        0,
        0,
        &[],
        Type(T::TimestampTz),
        STRICT,
        VOLATILE,
    ),
    f(&["current_date"], Func::CurrentDate, 0, 0, &[], Type(T::Date), STRICT, VOLATILE),
    f(&["localtimestamp"], Func::LocalTimestamp, 0, 0, &[], Type(T::Timestamp), STRICT, VOLATILE),
    f(&["localtime"], Func::LocalTime, 0, 0, &[], Type(T::Time), STRICT, VOLATILE),
    // Bound by `Planner::at_time_zone` (its result type follows the argument's).
    f(&[], Func::Timezone, 2, 2, &[A::Any, A::Any], Type(T::Timestamp), STRICT, IMMUTABLE),
    f(&["random"], Func::Random, 0, 0, &[], Type(T::Float8), STRICT, VOLATILE),
    // Bound by `Planner::datetime_call` (their result type follows the argument's).
    f(&[], Func::Extract, 2, 2, &[A::Text, A::Any], Type(T::Numeric(None)), STRICT, IMMUTABLE),
    f(&[], Func::DatePart, 2, 2, &[A::Text, A::Any], Type(T::Float8), STRICT, IMMUTABLE),
    f(&[], Func::DateTrunc, 2, 2, &[A::Text, A::Any], Type(T::Timestamp), STRICT, IMMUTABLE),
    f(&["to_char"], Func::ToChar, 2, 2, &[A::Any, A::Text], Type(T::Text), STRICT, IMMUTABLE),
    f(&["age"], Func::Age, 1, 2, &[A::Timestamp], Type(T::Interval(None)), STRICT, VOLATILE),
    f(
        &["justify_days"],
        Func::JustifyDays,
        1,
        1,
        &[A::Interval],
        Type(T::Interval(None)),
        STRICT,
        IMMUTABLE,
    ),
    f(
        &["justify_hours"],
        Func::JustifyHours,
        1,
        1,
        &[A::Interval],
        Type(T::Interval(None)),
        STRICT,
        IMMUTABLE,
    ),
    f(
        &["justify_interval"],
        Func::JustifyInterval,
        1,
        1,
        &[A::Interval],
        Type(T::Interval(None)),
        STRICT,
        IMMUTABLE,
    ),
    // Bound by `Planner::make_interval` (its arguments may be named).
    f(
        &[],
        Func::MakeInterval,
        7,
        7,
        &[A::Int4, A::Int4, A::Int4, A::Int4, A::Int4, A::Int4, A::Float8],
        Type(T::Interval(None)),
        STRICT,
        IMMUTABLE,
    ),
    f(
        &["gen_random_uuid", "uuid_generate_v4"],
        Func::GenRandomUuid,
        0,
        0,
        &[],
        Type(T::Uuid),
        STRICT,
        VOLATILE,
    ),
    f(&["md5"], Func::Md5, 1, 1, &[A::Any], Type(T::Text), STRICT, IMMUTABLE),
    f(&["sha224"], Func::Sha2(224), 1, 1, &[A::Bytea], Type(T::Bytea), STRICT, IMMUTABLE),
    f(&["sha256"], Func::Sha2(256), 1, 1, &[A::Bytea], Type(T::Bytea), STRICT, IMMUTABLE),
    f(&["sha384"], Func::Sha2(384), 1, 1, &[A::Bytea], Type(T::Bytea), STRICT, IMMUTABLE),
    f(&["sha512"], Func::Sha2(512), 1, 1, &[A::Bytea], Type(T::Bytea), STRICT, IMMUTABLE),
    f(&["digest"], Func::Digest, 2, 2, &[A::Any, A::Text], Type(T::Bytea), STRICT, IMMUTABLE),
    f(&["hmac"], Func::Hmac, 3, 3, &[A::Any, A::Any, A::Text], Type(T::Bytea), STRICT, IMMUTABLE),
    f(
        &["gen_random_bytes"],
        Func::GenRandomBytes,
        1,
        1,
        &[A::Int4],
        Type(T::Bytea),
        STRICT,
        VOLATILE,
    ),
    f(
        &["uuid_generate_v1", "uuid_generate_v1mc"],
        Func::UuidV1,
        0,
        0,
        &[],
        Type(T::Uuid),
        STRICT,
        VOLATILE,
    ),
    f(
        &["uuid_generate_v3"],
        Func::UuidNameBased(3),
        2,
        2,
        &[A::Uuid, A::Text],
        Type(T::Uuid),
        STRICT,
        IMMUTABLE,
    ),
    f(
        &["uuid_generate_v5"],
        Func::UuidNameBased(5),
        2,
        2,
        &[A::Uuid, A::Text],
        Type(T::Uuid),
        STRICT,
        IMMUTABLE,
    ),
    f(&["encode"], Func::Encode, 2, 2, &[A::Bytea, A::Text], Type(T::Text), STRICT, IMMUTABLE),
    f(&["decode"], Func::Decode, 2, 2, &[A::Text, A::Text], Type(T::Bytea), STRICT, IMMUTABLE),
    f(&["uuid_nil"], Func::UuidNil, 0, 0, &[], Type(T::Uuid), STRICT, IMMUTABLE),
    f(
        &["uuid_ns_dns"],
        Func::UuidNs(UuidNamespace::Dns),
        0,
        0,
        &[],
        Type(T::Uuid),
        STRICT,
        IMMUTABLE,
    ),
    f(
        &["uuid_ns_url"],
        Func::UuidNs(UuidNamespace::Url),
        0,
        0,
        &[],
        Type(T::Uuid),
        STRICT,
        IMMUTABLE,
    ),
    f(
        &["uuid_ns_oid"],
        Func::UuidNs(UuidNamespace::Oid),
        0,
        0,
        &[],
        Type(T::Uuid),
        STRICT,
        IMMUTABLE,
    ),
    f(
        &["uuid_ns_x500"],
        Func::UuidNs(UuidNamespace::X500),
        0,
        0,
        &[],
        Type(T::Uuid),
        STRICT,
        IMMUTABLE,
    ),
    f(&["version"], Func::Version, 0, 0, &[], Type(T::Text), STRICT, VOLATILE),
    f(
        &["current_database", "current_catalog"],
        Func::CurrentDatabase,
        0,
        0,
        &[],
        Type(T::Text),
        STRICT,
        VOLATILE,
    ),
    f(&["current_schema"], Func::CurrentSchema, 0, 0, &[], Type(T::Text), STRICT, VOLATILE),
    f(
        &["current_user", "session_user"],
        Func::CurrentUser,
        0,
        0,
        &[],
        Type(T::Text),
        STRICT,
        VOLATILE,
    ),
    f(&["pg_backend_pid"], Func::BackendPid, 0, 0, &[], Type(T::Int4), STRICT, VOLATILE),
    f(
        &["pg_cancel_backend"],
        Func::CancelBackend,
        1,
        1,
        &[A::Int4],
        Type(T::Bool),
        STRICT,
        VOLATILE,
    ),
    f(
        &["pg_terminate_backend"],
        Func::TerminateBackend,
        1,
        2,
        &[A::Int4, A::Int8],
        Type(T::Bool),
        STRICT,
        VOLATILE,
    ),
    f(
        &["pg_advisory_lock"],
        Func::Advisory(AdvisoryOp::Lock, Hold { xact: false, shared: false }),
        1,
        2,
        &[A::Int8],
        Type(T::Text),
        STRICT,
        VOLATILE,
    ),
    f(
        &["pg_advisory_lock_shared"],
        Func::Advisory(AdvisoryOp::Lock, Hold { xact: false, shared: true }),
        1,
        2,
        &[A::Int8],
        Type(T::Text),
        STRICT,
        VOLATILE,
    ),
    f(
        &["pg_advisory_xact_lock"],
        Func::Advisory(AdvisoryOp::Lock, Hold { xact: true, shared: false }),
        1,
        2,
        &[A::Int8],
        Type(T::Text),
        STRICT,
        VOLATILE,
    ),
    f(
        &["pg_advisory_xact_lock_shared"],
        Func::Advisory(AdvisoryOp::Lock, Hold { xact: true, shared: true }),
        1,
        2,
        &[A::Int8],
        Type(T::Text),
        STRICT,
        VOLATILE,
    ),
    f(
        &["pg_try_advisory_lock"],
        Func::Advisory(AdvisoryOp::TryLock, Hold { xact: false, shared: false }),
        1,
        2,
        &[A::Int8],
        Type(T::Bool),
        STRICT,
        VOLATILE,
    ),
    f(
        &["pg_try_advisory_lock_shared"],
        Func::Advisory(AdvisoryOp::TryLock, Hold { xact: false, shared: true }),
        1,
        2,
        &[A::Int8],
        Type(T::Bool),
        STRICT,
        VOLATILE,
    ),
    f(
        &["pg_try_advisory_xact_lock"],
        Func::Advisory(AdvisoryOp::TryLock, Hold { xact: true, shared: false }),
        1,
        2,
        &[A::Int8],
        Type(T::Bool),
        STRICT,
        VOLATILE,
    ),
    f(
        &["pg_try_advisory_xact_lock_shared"],
        Func::Advisory(AdvisoryOp::TryLock, Hold { xact: true, shared: true }),
        1,
        2,
        &[A::Int8],
        Type(T::Bool),
        STRICT,
        VOLATILE,
    ),
    f(
        &["pg_advisory_unlock"],
        Func::Advisory(AdvisoryOp::Unlock, Hold { xact: false, shared: false }),
        1,
        2,
        &[A::Int8],
        Type(T::Bool),
        STRICT,
        VOLATILE,
    ),
    f(
        &["pg_advisory_unlock_shared"],
        Func::Advisory(AdvisoryOp::Unlock, Hold { xact: false, shared: true }),
        1,
        2,
        &[A::Int8],
        Type(T::Bool),
        STRICT,
        VOLATILE,
    ),
    f(
        &["pg_advisory_unlock_all"],
        Func::Advisory(AdvisoryOp::UnlockAll, Hold { xact: false, shared: false }),
        0,
        0,
        &[],
        Type(T::Text),
        LENIENT,
        VOLATILE,
    ),
    f(&["pg_notify"], Func::PgNotify, 2, 2, &[A::Text], Type(T::Text), LENIENT, VOLATILE),
    f(&["pg_sleep"], Func::Sleep, 1, 1, &[A::Float8], Type(T::Text), STRICT, VOLATILE),
    f(&["kiln_sync"], Func::KilnSync, 0, 0, &[], Type(T::Text), LENIENT, VOLATILE),
    f(&["kiln_persist"], Func::KilnPersist, 0, 0, &[], Type(T::Text), LENIENT, VOLATILE),
    f(&["kiln_last_txid"], Func::KilnLastTxid, 0, 0, &[], Type(T::Text), LENIENT, VOLATILE),
    f(&["lastval"], Func::LastVal, 0, 0, &[], Type(T::Int8), LENIENT, VOLATILE),
    f(&["kiln_txn_status"], Func::KilnTxnStatus, 1, 1, &[A::Text], Type(T::Text), STRICT, VOLATILE),
    f(&["kiln_txn_levels"], Func::KilnTxnLevels, 1, 1, &[A::Text], Type(T::Text), STRICT, VOLATILE),
    f(
        &["kiln_cluster_add_node"],
        Func::KilnClusterAddNode,
        3,
        4,
        &[A::Int8, A::Text, A::Text, A::Text],
        Type(T::Text),
        STRICT,
        VOLATILE,
    ),
    f(
        &["kiln_cluster_remove_node"],
        Func::KilnClusterRemoveNode,
        1,
        1,
        &[A::Int8],
        Type(T::Text),
        STRICT,
        VOLATILE,
    ),
    f(
        &["kiln_wait"],
        Func::KilnWait,
        1,
        3,
        &[A::Text, A::Int8, A::Text],
        Type(T::Text),
        STRICT,
        VOLATILE,
    ),
    f(
        &["kiln_fault_fail_syncs"],
        Func::KilnFaultFailSyncs,
        1,
        1,
        &[A::Int8],
        Type(T::Text),
        LENIENT,
        VOLATILE,
    ),
    f(
        &["kiln_fault_disk_full"],
        Func::KilnFaultDiskFull,
        1,
        1,
        &[A::Int8],
        Type(T::Text),
        LENIENT,
        VOLATILE,
    ),
    f(&["kiln_fault_panic"], Func::KilnFaultPanic, 0, 0, &[], Type(T::Text), LENIENT, VOLATILE),
    f(
        &[
            "pg_table_is_visible",
            "pg_type_is_visible",
            "pg_function_is_visible",
            "pg_collation_is_visible",
        ],
        Func::Catalog(CatalogFunc::TableIsVisible),
        0,
        4,
        &[A::Any],
        Type(T::Bool),
        LENIENT,
        VOLATILE,
    ),
    f(
        &["pg_get_userbyid"],
        Func::Catalog(CatalogFunc::UserById),
        0,
        4,
        &[A::Any],
        Type(T::Text),
        LENIENT,
        VOLATILE,
    ),
    f(
        &["format_type"],
        Func::Catalog(CatalogFunc::FormatType),
        0,
        4,
        &[A::Any],
        Type(T::Text),
        LENIENT,
        VOLATILE,
    ),
    f(
        &["pg_get_expr"],
        Func::Catalog(CatalogFunc::GetExpr),
        0,
        4,
        &[A::Any],
        Type(T::Text),
        LENIENT,
        VOLATILE,
    ),
    f(
        &["pg_get_indexdef"],
        Func::Catalog(CatalogFunc::IndexDef),
        0,
        4,
        &[A::Any],
        Type(T::Text),
        LENIENT,
        VOLATILE,
    ),
    f(
        &["pg_get_viewdef"],
        Func::Catalog(CatalogFunc::ViewDef),
        0,
        3,
        &[A::Any],
        Type(T::Text),
        LENIENT,
        VOLATILE,
    ),
    f(
        &["pg_get_constraintdef"],
        Func::Catalog(CatalogFunc::ConstraintDef),
        0,
        4,
        &[A::Any],
        Type(T::Text),
        LENIENT,
        VOLATILE,
    ),
    f(
        &["pg_encoding_to_char"],
        Func::Catalog(CatalogFunc::EncodingToChar),
        0,
        4,
        &[A::Any],
        Type(T::Text),
        LENIENT,
        VOLATILE,
    ),
    f(
        &["pg_relation_is_publishable"],
        Func::Catalog(CatalogFunc::RelationIsPublishable),
        0,
        4,
        &[A::Any],
        Type(T::Bool),
        LENIENT,
        VOLATILE,
    ),
    f(
        &["pg_get_statisticsobjdef_columns"],
        Func::Catalog(CatalogFunc::StatisticsColumns),
        0,
        4,
        &[A::Any],
        Type(T::Text),
        LENIENT,
        VOLATILE,
    ),
    f(
        // shobj_description: Kiln keeps no comments on databases or roles.
        // pg_get_triggerdef and the function ones: Kiln has no triggers and no pg_proc rows.
        // The sizes: Kiln does not account storage per relation, so they are unknown.
        &[
            "shobj_description",
            "pg_get_triggerdef",
            "pg_get_function_result",
            "pg_get_function_arguments",
            "pg_get_function_identity_arguments",
        ],
        Func::Catalog(CatalogFunc::Description),
        0,
        4,
        &[A::Any],
        Type(T::Text),
        LENIENT,
        VOLATILE,
    ),
    f(
        &["oidvectortypes"],
        Func::Catalog(CatalogFunc::OidVectorTypes),
        1,
        1,
        &[A::Any],
        Type(T::Text),
        STRICT,
        VOLATILE,
    ),
    f(
        &["current_schemas"],
        Func::Catalog(CatalogFunc::CurrentSchemas),
        0,
        4,
        &[A::Any],
        Type(T::Array(&T::Text)),
        LENIENT,
        VOLATILE,
    ),
    f(
        &["has_table_privilege", "has_schema_privilege", "has_database_privilege"],
        Func::Catalog(CatalogFunc::HasPrivilege),
        0,
        4,
        &[A::Any],
        Type(T::Bool),
        LENIENT,
        VOLATILE,
    ),
];

/// The function a SQL name calls.
pub fn by_name(name: &str) -> Option<&'static FuncDef> {
    FUNCTIONS.iter().find(|d| d.names.contains(&name))
}

/// The registry's row of `func` (a function without one is bound elsewhere and handles NULL
/// arguments itself).
pub fn of(func: Func) -> Option<&'static FuncDef> {
    FUNCTIONS.iter().find(|d| d.func == func)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_row_is_found_by_its_func() {
        let mut seen = std::collections::HashSet::new();
        for d in FUNCTIONS {
            for n in d.names {
                assert!(seen.insert(*n), "{n} is in the registry twice");
            }
            assert_eq!(of(d.func).map(|r| r.func), Some(d.func));
            assert!(d.args_min <= d.args_max);
        }
    }
}
