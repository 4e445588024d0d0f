//! SQL types and values: PostgreSQL's text forms, comparison, casts.

use std::cmp::Ordering;
use std::fmt::Write as _;

use crate::numeric::{self, Numeric};
use chrono::{DateTime, Datelike, NaiveDate};
use serde::{Deserialize, Serialize};

use crate::error::{code, Result, SqlError};
use crate::style::Style;
use crate::zone::Zone;

/// A column or expression type. OIDs are PostgreSQL's, so clients decode values unchanged.
///
/// Stored catalogs hold it as JSON. The derived form is reached through `DataType::serialize`
/// and `DataType::deserialize` (serde's `remote = "Self"`); the trait implementations below
/// wrap it so that definitions written before `timestamp`, `timestamptz` and `time` carried
/// a precision still read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub enum DataType {
    /// boolean
    Bool,
    /// smallint
    Int2,
    /// integer
    Int4,
    /// bigint
    Int8,
    /// real
    Float4,
    /// double precision
    Float8,
    /// numeric(p, s); `None` for unconstrained numeric
    Numeric(Option<(u32, i32)>),
    /// text
    Text,
    /// varchar(n)
    Varchar(Option<u32>),
    /// char(n) (blank-padded)
    Char(u32),
    /// bytea
    Bytea,
    /// date
    Date,
    /// timestamp(p) without time zone; `None` for all six fractional digits unbounded by a
    /// type modifier.
    Timestamp(Option<u8>),
    /// timestamp(p) with time zone (an instant, kept as microseconds since 1970-01-01 UTC)
    TimestampTz(Option<u8>),
    /// uuid
    Uuid,
    /// time(p) without time zone
    Time(Option<u8>),
    /// A string literal or parameter whose type the context has not fixed yet.
    Unknown,
    /// An array of the element type (one dimension; see [`crate::array`]).
    Array(#[serde(with = "element_serde")] &'static DataType),
    /// int2vector (`pg_index.indkey`): a smallint array shown space-separated, subscripts
    /// from 0.
    Int2Vector,
    /// oidvector (`pg_index.indclass`): an oid array shown space-separated, subscripts from 0.
    OidVector,
    /// The record `information_schema._pg_expandarray` returns, `(x, n)`: an element of
    /// this type and its position. Its value is a two-element `Value::Array`.
    ExpandedElement(#[serde(with = "element_serde")] &'static DataType),
    /// interval, with PostgreSQL's type modifier (fields and precision; see
    /// [`crate::interval`]). Last among the variants, so stored catalogs keep their meaning.
    Interval(Option<u32>),
    /// json: its text as written, validated (see [`crate::json`]).
    Json,
    /// jsonb: its canonical text (see [`crate::json`]).
    Jsonb,
    /// A user's enum type, its definition whole (see [`crate::enums`]).
    Enum(#[serde(with = "crate::enums::serde_ref")] &'static crate::enums::EnumType),
    /// oid: an object identifier, 0 to 2^32 - 1 (an integer value), as the system catalogs
    /// type their OID columns.
    Oid,
    /// name: a catalog's identifier (a string value).
    Name,
    /// "char": a catalog's one-byte code (`relkind`, `typtype`; a string value).
    PgChar,
    /// inet: a host address with a netmask length (see [`crate::inet`]).
    Inet,
    /// cidr: a network address (see [`crate::inet`]).
    Cidr,
    /// tsvector: a document's lexemes and positions, as its canonical text (see
    /// [`crate::textsearch`]).
    TsVector,
    /// tsquery: a text search query, as its canonical text.
    TsQuery,
    /// regconfig: a text search configuration, as its name.
    RegConfig,
}

/// Array element types are stored as the type itself and interned again when read.
mod element_serde {
    use super::DataType;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(t: &&'static DataType, s: S) -> Result<S::Ok, S::Error> {
        (**t).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<&'static DataType, D::Error> {
        let t = <DataType as Deserialize>::deserialize(d)?;
        match crate::array::array_of(t) {
            Ok(DataType::Array(e)) => Ok(e),
            _ => Err(serde::de::Error::custom("an array element type")),
        }
    }
}

impl Serialize for DataType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        DataType::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for DataType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<DataType, D::Error> {
        let stored = serde_json::Value::deserialize(d)?;
        // Written before these types carried a precision: a unit variant's bare name.
        match stored.as_str() {
            Some("Timestamp") => return Ok(DataType::Timestamp(None)),
            Some("TimestampTz") => return Ok(DataType::TimestampTz(None)),
            Some("Time") => return Ok(DataType::Time(None)),
            _ => {}
        }
        DataType::deserialize(stored).map_err(serde::de::Error::custom)
    }
}

/// `(p)` after a type's name when it has a precision.
fn precision_text(precision: Option<u8>) -> String {
    precision.map(|p| format!("({p})")).unwrap_or_default()
}

/// [`round_micros`] for a timestamp: the infinities stay as they are.
/// PostgreSQL counts timestamps from 2000-01-01, and a tie rounds away from that instant
/// (`1999-01-08 04:05:06.5` to `…:06`), so Kiln rounds from there too.
pub fn round_timestamp(micros: i64, precision: Option<u8>) -> i64 {
    const Y2000: i64 = 946_684_800_000_000;
    match micros {
        TIMESTAMP_INFINITY | TIMESTAMP_NEG_INFINITY => micros,
        _ => round_micros(micros.saturating_sub(Y2000), precision).saturating_add(Y2000),
    }
}

/// The most fractional digits `timestamp(p)`, `timestamptz(p)` and `time(p)` keep.
pub const MAX_TIME_PRECISION: u8 = 6;

/// Rounds microseconds to `precision` fractional digits, half away from zero, as
/// PostgreSQL's typmod adjustment does; `None` keeps them all.
pub fn round_micros(micros: i64, precision: Option<u8>) -> i64 {
    let Some(p) = precision.filter(|p| *p < MAX_TIME_PRECISION) else { return micros };
    let unit = 10i64.pow((MAX_TIME_PRECISION - p) as u32);
    let half = unit / 2;
    if micros >= 0 {
        micros.saturating_add(half) / unit * unit
    } else {
        -(micros.saturating_neg().saturating_add(half) / unit * unit)
    }
}

impl DataType {
    /// The PostgreSQL type OID.
    pub fn oid(self) -> u32 {
        match self {
            DataType::Bool => 16,
            DataType::Bytea => 17,
            DataType::Int8 => 20,
            DataType::Int2 => 21,
            DataType::Int4 => 23,
            DataType::Text => 25,
            DataType::Float4 => 700,
            DataType::Float8 => 701,
            DataType::Unknown => 25,
            DataType::Char(_) => 1042,
            DataType::Varchar(_) => 1043,
            DataType::Date => 1082,
            DataType::Timestamp(_) => 1114,
            DataType::TimestampTz(_) => 1184,
            DataType::Numeric(_) => 1700,
            DataType::Uuid => 2950,
            DataType::Time(_) => 1083,
            DataType::Interval(_) => 1186,
            DataType::Json => 114,
            DataType::Jsonb => 3802,
            DataType::Array(e) => crate::array::array_oid(*e),
            DataType::Int2Vector => 22,
            DataType::OidVector => 30,
            DataType::ExpandedElement(_) => 2249,
            DataType::Enum(e) => e.oid,
            DataType::Oid => 26,
            DataType::Name => 19,
            DataType::PgChar => 18,
            DataType::Inet => 869,
            DataType::Cidr => 650,
            DataType::TsVector => 3614,
            DataType::TsQuery => 3615,
            DataType::RegConfig => 3734,
        }
    }

    /// The element type of an array type.
    pub fn element(self) -> Option<DataType> {
        match self {
            DataType::Array(e) => Some(*e),
            DataType::Int2Vector => Some(DataType::Int2),
            DataType::OidVector => Some(DataType::Int8),
            _ => None,
        }
    }

    /// The type of a PostgreSQL OID, when Kiln has it.
    pub fn from_oid(oid: u32) -> Option<DataType> {
        Some(match oid {
            16 => DataType::Bool,
            17 => DataType::Bytea,
            20 => DataType::Int8,
            21 => DataType::Int2,
            23 => DataType::Int4,
            25 => DataType::Text,
            19 => DataType::Name,
            18 => DataType::PgChar,
            700 => DataType::Float4,
            701 => DataType::Float8,
            705 | 0 => DataType::Unknown,
            1042 => DataType::Char(1),
            1043 => DataType::Varchar(None),
            1082 => DataType::Date,
            1114 => DataType::Timestamp(None),
            1184 => DataType::TimestampTz(None),
            1700 => DataType::Numeric(None),
            2950 => DataType::Uuid,
            1083 => DataType::Time(None),
            1186 => DataType::Interval(None),
            114 => DataType::Json,
            3802 => DataType::Jsonb,
            26 => DataType::Oid,
            869 => DataType::Inet,
            650 => DataType::Cidr,
            3614 => DataType::TsVector,
            3615 => DataType::TsQuery,
            3734 => DataType::RegConfig,
            22 => DataType::Int2Vector,
            30 => DataType::OidVector,
            oid => return crate::array::from_array_oid(oid),
        })
    }

    /// The type's size in bytes for RowDescription (-1 for variable length).
    pub fn size(self) -> i16 {
        match self {
            DataType::Bool | DataType::PgChar => 1,
            DataType::Int2 => 2,
            DataType::Int4
            | DataType::Float4
            | DataType::Date
            | DataType::Enum(_)
            | DataType::Oid
            | DataType::RegConfig => 4,
            DataType::Name => 64,
            DataType::Int8
            | DataType::Float8
            | DataType::Timestamp(_)
            | DataType::TimestampTz(_)
            | DataType::Time(_) => 8,
            DataType::Uuid | DataType::Interval(_) => 16,
            _ => -1,
        }
    }

    /// The type modifier for RowDescription (-1 when none).
    pub fn modifier(self) -> i32 {
        match self {
            DataType::Varchar(Some(n)) | DataType::Char(n) => n as i32 + 4,
            // PostgreSQL's packing: the scale's low 11 bits (it may be negative).
            DataType::Numeric(Some((p, s))) => ((p << 16) as i32 | (s & 0x7ff)) + 4,
            DataType::Array(e) => e.modifier(),
            DataType::Interval(Some(t)) => t as i32,
            DataType::Timestamp(Some(p))
            | DataType::TimestampTz(Some(p))
            | DataType::Time(Some(p)) => p as i32,
            _ => -1,
        }
    }

    /// The name PostgreSQL's `format_type` gives (as `\d` shows it).
    pub fn sql_name(self) -> String {
        match self {
            DataType::Bool => "boolean".into(),
            DataType::Int2 => "smallint".into(),
            DataType::Int4 => "integer".into(),
            DataType::Int8 => "bigint".into(),
            DataType::Float4 => "real".into(),
            DataType::Float8 => "double precision".into(),
            DataType::Numeric(None) => "numeric".into(),
            DataType::Numeric(Some((p, s))) => format!("numeric({p},{s})"),
            DataType::Text | DataType::Unknown => "text".into(),
            DataType::Varchar(None) => "character varying".into(),
            DataType::Varchar(Some(n)) => format!("character varying({n})"),
            DataType::Char(n) => format!("character({n})"),
            DataType::Bytea => "bytea".into(),
            DataType::Date => "date".into(),
            DataType::Timestamp(p) => format!("timestamp{} without time zone", precision_text(p)),
            DataType::TimestampTz(p) => format!("timestamp{} with time zone", precision_text(p)),
            DataType::Uuid => "uuid".into(),
            DataType::Time(p) => format!("time{} without time zone", precision_text(p)),
            DataType::Interval(None) => "interval".into(),
            DataType::Interval(Some(t)) => format!("interval{}", crate::interval::typmod_text(t)),
            DataType::Json => "json".into(),
            DataType::Jsonb => "jsonb".into(),
            DataType::Array(e) => format!("{}[]", e.sql_name()),
            DataType::Int2Vector => "int2vector".into(),
            DataType::OidVector => "oidvector".into(),
            DataType::ExpandedElement(_) => "record".into(),
            DataType::Enum(e) => crate::bind::quote_ident(&e.name),
            DataType::Oid => "oid".into(),
            DataType::Name => "name".into(),
            DataType::PgChar => "\"char\"".into(),
            DataType::Inet => "inet".into(),
            DataType::Cidr => "cidr".into(),
            DataType::TsVector => "tsvector".into(),
            DataType::TsQuery => "tsquery".into(),
            DataType::RegConfig => "regconfig".into(),
        }
    }

    /// The name in `pg_type.typname` (`int4`, `_int4` for its array).
    pub fn type_name(self) -> String {
        match self {
            DataType::Int2 => "int2".into(),
            DataType::Int4 => "int4".into(),
            DataType::Int8 => "int8".into(),
            DataType::Float4 => "float4".into(),
            DataType::Float8 => "float8".into(),
            DataType::Bool => "bool".into(),
            DataType::Numeric(_) => "numeric".into(),
            DataType::Varchar(_) => "varchar".into(),
            DataType::Char(_) => "bpchar".into(),
            DataType::Text | DataType::Unknown => "text".into(),
            DataType::Bytea => "bytea".into(),
            DataType::Date => "date".into(),
            DataType::Timestamp(_) => "timestamp".into(),
            DataType::TimestampTz(_) => "timestamptz".into(),
            DataType::Uuid => "uuid".into(),
            DataType::Time(_) => "time".into(),
            DataType::Interval(_) => "interval".into(),
            DataType::Json => "json".into(),
            DataType::Jsonb => "jsonb".into(),
            DataType::Array(e) => format!("_{}", e.type_name()),
            DataType::Int2Vector => "int2vector".into(),
            DataType::OidVector => "oidvector".into(),
            DataType::ExpandedElement(_) => "record".into(),
            DataType::Enum(e) => e.name.clone(),
            DataType::Oid => "oid".into(),
            DataType::Name => "name".into(),
            DataType::PgChar => "char".into(),
            DataType::Inet => "inet".into(),
            DataType::Cidr => "cidr".into(),
            DataType::TsVector => "tsvector".into(),
            DataType::TsQuery => "tsquery".into(),
            DataType::RegConfig => "regconfig".into(),
        }
    }

    /// The type without its type modifier (a `timestamp(3)` column's value plus an interval
    /// is a `timestamp`).
    pub fn unmodified(self) -> DataType {
        match self {
            DataType::Timestamp(_) => DataType::Timestamp(None),
            DataType::TimestampTz(_) => DataType::TimestampTz(None),
            DataType::Time(_) => DataType::Time(None),
            DataType::Interval(_) => DataType::Interval(None),
            DataType::Varchar(_) => DataType::Varchar(None),
            DataType::Numeric(_) => DataType::Numeric(None),
            t => t,
        }
    }

    /// The type's name as `regtype` shows it (`pg_typeof`): without a type modifier.
    pub fn regtype_name(self) -> String {
        match self {
            DataType::Array(e) => format!("{}[]", e.regtype_name()),
            DataType::Char(_) => "character".into(),
            t => t.unmodified().sql_name(),
        }
    }

    /// Whether values of the type are integers.
    pub fn is_integer(self) -> bool {
        matches!(self, DataType::Int2 | DataType::Int4 | DataType::Int8 | DataType::Oid)
    }

    /// Whether values of the type are numbers.
    pub fn is_numeric(self) -> bool {
        self.is_integer()
            || matches!(self, DataType::Float4 | DataType::Float8 | DataType::Numeric(_))
    }

    /// Whether it is an enum type or an array of one.
    pub fn is_enum(self) -> bool {
        matches!(self, DataType::Enum(_) | DataType::Array(DataType::Enum(_)))
    }

    /// Whether values of the type are strings.
    pub fn is_string(self) -> bool {
        matches!(
            self,
            DataType::Text
                | DataType::Varchar(_)
                | DataType::Char(_)
                | DataType::Unknown
                | DataType::Name
                | DataType::PgChar
        )
    }

    /// The common type of two operands of arithmetic or comparison (PostgreSQL's numeric
    /// promotion: integers widen, then numeric, then double precision).
    pub fn common(a: DataType, b: DataType) -> DataType {
        use DataType::*;
        match (a, b) {
            // An untyped literal takes the other side's type, without its modifier: a
            // `varchar(4)` compared with a longer string is false, not an error.
            (Unknown, t) | (t, Unknown) => t.unmodified(),
            (x, y) if x == y => x,
            (Interval(_), Interval(_)) => Interval(None),
            (Float8, _) | (_, Float8) | (Float4, _) | (_, Float4)
                if a.is_numeric() && b.is_numeric() =>
            {
                Float8
            }
            (Numeric(_), _) | (_, Numeric(_)) if a.is_numeric() && b.is_numeric() => Numeric(None),
            // An oid with another integer: bigint holds both.
            (Oid, _) | (_, Oid) if a.is_integer() && b.is_integer() => Int8,
            (Int8, _) | (_, Int8) if a.is_integer() && b.is_integer() => Int8,
            (Int4, _) | (_, Int4) if a.is_integer() && b.is_integer() => Int4,
            (x, y) if x.is_string() && y.is_string() => Text,
            (Timestamp(_), Timestamp(_)) => Timestamp(None),
            (TimestampTz(_), TimestampTz(_)) => TimestampTz(None),
            (Time(_), Time(_)) => Time(None),
            (Timestamp(_), TimestampTz(_)) | (TimestampTz(_), Timestamp(_)) => TimestampTz(None),
            (Date, Timestamp(_)) | (Timestamp(_), Date) => Timestamp(None),
            (Date, TimestampTz(_)) | (TimestampTz(_), Date) => TimestampTz(None),
            (x, _) => x,
        }
    }
}

/// A value. Integers of every width are `Int`; the column type bounds them.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL
    Null,
    /// boolean
    Bool(bool),
    /// smallint, integer, bigint
    Int(i64),
    /// real, double precision
    Float(f64),
    /// numeric
    Numeric(Numeric),
    /// text, varchar, char (char is stored without its padding)
    Text(String),
    /// bytea
    Bytea(Vec<u8>),
    /// uuid: its 16 bytes
    Uuid([u8; 16]),
    /// time: microseconds since midnight (0 to 24:00:00 inclusive, as PostgreSQL allows)
    Time(i64),
    /// interval: months, days and microseconds
    Interval(crate::interval::Interval),
    /// date: days since 1970-01-01
    Date(i32),
    /// timestamp: microseconds since 1970-01-01 00:00:00
    Timestamp(i64),
    /// timestamptz: microseconds since the Unix epoch, UTC
    TimestampTz(i64),
    /// An array's elements (NULL elements are `Null`).
    Array(Vec<Value>),
    /// A value of an enum type: its label and sort order (see [`crate::enums`]).
    Enum(crate::enums::EnumValue),
    /// inet, cidr
    Inet(crate::inet::Inet),
}

pub(crate) const UNIX_EPOCH_DATE: NaiveDate = match NaiveDate::from_ymd_opt(1970, 1, 1) {
    Some(d) => d,
    None => panic!("1970-01-01 is a date"),
};

impl Value {
    /// Whether the value is NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value as a boolean for WHERE/AND/OR (NULL is `None`).
    pub fn as_bool(&self) -> Result<Option<bool>> {
        match self {
            Value::Null => Ok(None),
            Value::Bool(b) => Ok(Some(*b)),
            Value::Text(s) => parse_bool(s).map(Some),
            other => Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!("argument must be type boolean, not {}", other.kind()),
            )),
        }
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "double precision",
            Value::Numeric(_) => "numeric",
            Value::Text(_) => "text",
            Value::Bytea(_) => "bytea",
            Value::Uuid(_) => "uuid",
            Value::Time(_) => "time",
            Value::Interval(_) => "interval",
            Value::Date(_) => "date",
            Value::Timestamp(_) => "timestamp",
            Value::TimestampTz(_) => "timestamptz",
            Value::Array(_) => "array",
            Value::Enum(_) => "anyenum",
            Value::Inet(a) if a.cidr => "cidr",
            Value::Inet(_) => "inet",
        }
    }

    /// Parses PostgreSQL's text form of a value of type `ty`.
    pub fn parse(text: &str, ty: DataType) -> Result<Value> {
        Value::parse_in(text, ty, Style::DEFAULT)
    }

    /// [`Value::parse`] in the session's `style`: a `timestamp with time zone` given without
    /// an offset is a local time in its zone; an interval reads as its IntervalStyle says.
    pub fn parse_in(text: &str, ty: DataType, style: Style) -> Result<Value> {
        let bad = |what: &str| {
            SqlError::new(
                code::INVALID_TEXT,
                format!("invalid input syntax for type {what}: \"{text}\""),
            )
        };
        let t = text.trim();
        Ok(match ty {
            DataType::Bool => Value::Bool(parse_bool(text)?),
            DataType::Int2 | DataType::Int4 | DataType::Int8 | DataType::Oid => {
                let v: i64 = t.parse().map_err(|_| {
                    if !t.is_empty()
                        && t.trim_start_matches(['-', '+']).bytes().all(|b| b.is_ascii_digit())
                    {
                        out_of_range(ty)
                    } else {
                        bad(&ty.sql_name())
                    }
                })?;
                // oid input takes negative 32-bit integers too, as their unsigned bits.
                let v = if ty == DataType::Oid && (i64::from(i32::MIN)..0).contains(&v) {
                    v + (1 << 32)
                } else {
                    v
                };
                check_int_range(v, ty)?;
                Value::Int(v)
            }
            DataType::Float4 | DataType::Float8 => {
                let v = match t.to_ascii_lowercase().as_str() {
                    "nan" => f64::NAN,
                    "infinity" | "inf" | "+infinity" | "+inf" => f64::INFINITY,
                    "-infinity" | "-inf" => f64::NEG_INFINITY,
                    _ => t.parse().map_err(|_| bad(&ty.sql_name()))?,
                };
                Value::Float(if ty == DataType::Float4 { v as f32 as f64 } else { v })
            }
            DataType::Numeric(m) => {
                let d = Numeric::parse(t).map_err(|e| match e {
                    numeric::ParseError::Syntax => bad("numeric"),
                    numeric::ParseError::Overflow => numeric::overflow(),
                    numeric::ParseError::Special => SqlError::unsupported(format!(
                        "the numeric value \"{t}\" (Kiln's numeric holds no NaN or infinity)"
                    )),
                })?;
                Value::Numeric(fit_numeric(d, m)?)
            }
            DataType::Text | DataType::Unknown | DataType::Name => Value::Text(text.to_string()),
            // "char" keeps the first byte (PostgreSQL's charin); an empty string is NUL,
            // shown as empty.
            DataType::PgChar => {
                Value::Text(text.chars().next().map(String::from).unwrap_or_default())
            }
            DataType::Varchar(n) => Value::Text(fit_string(text, n, false)?),
            DataType::Char(n) => Value::Text(fit_string(text, Some(n), true)?),
            DataType::Bytea => Value::Bytea(parse_bytea(text)?),
            DataType::Uuid => Value::Uuid(parse_uuid(t).ok_or_else(|| bad("uuid"))?),
            DataType::Inet => Value::Inet(crate::inet::Inet::parse(text, false)?),
            DataType::TsVector => Value::Text(crate::textsearch::TsVector::parse(text)?.to_text()),
            DataType::TsQuery => {
                Value::Text(crate::textsearch::TsQuery::parse(text, &mut |_| {})?.to_text())
            }
            DataType::RegConfig => {
                let i = crate::textsearch::config_index(text)?;
                Value::Text(crate::textsearch::CONFIGS[i].name.to_string())
            }
            DataType::Cidr => Value::Inet(crate::inet::Inet::parse(text, true)?),
            DataType::Time(p) => {
                let micros = parse_time(t).map_err(|in_range| match in_range {
                    false => SqlError::new(
                        "22008",
                        format!("date/time field value out of range: \"{t}\""),
                    ),
                    true => SqlError::new(
                        "22007",
                        format!("invalid input syntax for type time: \"{t}\""),
                    ),
                })?;
                Value::Time(round_micros(micros, p))
            }
            DataType::Interval(m) => {
                Value::Interval(crate::interval::parse_in(text, m, style.intervals)?)
            }
            DataType::Json => Value::Text(crate::json::json_in(text)?),
            DataType::Jsonb => Value::Text(crate::json::jsonb_in(text)?),
            DataType::Date => {
                Value::Date(parse_date(t, style).map_err(|bad| datetime_error(t, "date", bad))?)
            }
            DataType::Timestamp(p) => Value::Timestamp(round_timestamp(
                parse_timestamp(t, false, style)
                    .map_err(|bad| datetime_error(t, "timestamp", bad))?,
                p,
            )),
            DataType::TimestampTz(p) => Value::TimestampTz(round_timestamp(
                parse_timestamp(t, true, style)
                    .map_err(|bad| datetime_error(t, "timestamp with time zone", bad))?,
                p,
            )),
            DataType::Array(e) => Value::Array(crate::array::parse(text, *e, style)?),
            DataType::Enum(e) => e.parse(text)?,
            DataType::ExpandedElement(_) => {
                return Err(SqlError::unsupported("input of a record value"))
            }
            DataType::Int2Vector | DataType::OidVector => {
                let items = t
                    .split_ascii_whitespace()
                    .map(|x| Value::parse(x, DataType::Int8))
                    .collect::<Result<Vec<_>>>()?;
                crate::array::check_len(items.len())?;
                Value::Array(items)
            }
        })
    }

    /// PostgreSQL's text output of the value as type `ty` (`None` for NULL).
    pub fn to_text(&self, ty: DataType) -> Option<String> {
        self.to_text_in(ty, Style::DEFAULT)
    }

    /// [`Value::to_text`] in the session's `style`: a `timestamp with time zone` is written
    /// as the local time in its zone, dates and times as its DateStyle, intervals as its
    /// IntervalStyle.
    pub fn to_text_in(&self, ty: DataType, style: Style) -> Option<String> {
        Some(match self {
            Value::Null => return None,
            Value::Bool(b) => if *b { "t" } else { "f" }.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => format_float(*f, ty == DataType::Float4),
            Value::Numeric(d) => d.to_string(),
            Value::Text(s) => match ty {
                DataType::Char(n) => {
                    let len = s.chars().count();
                    let mut out = s.clone();
                    out.extend(std::iter::repeat_n(' ', (n as usize).saturating_sub(len)));
                    out
                }
                _ => s.clone(),
            },
            Value::Bytea(b) => {
                let mut out = String::with_capacity(2 + b.len() * 2);
                out.push_str("\\x");
                for byte in b {
                    let _ = write!(out, "{byte:02x}");
                }
                out
            }
            Value::Uuid(u) => uuid::Uuid::from_bytes(*u).hyphenated().to_string(),
            Value::Inet(a) => a.to_text(),
            Value::Enum(e) => e.label.clone(),
            Value::Time(us) => format_time(*us),
            Value::Interval(iv) => crate::interval::format_in(iv, style.intervals),
            Value::Date(d) => format_date(*d, style),
            Value::Timestamp(us) => format_timestamp(*us, None, style),
            Value::TimestampTz(us @ (TIMESTAMP_INFINITY | TIMESTAMP_NEG_INFINITY)) => {
                format_timestamp(*us, None, style)
            }
            Value::TimestampTz(us) => {
                let zone = style.zone;
                let shown = (zone.offset_at(*us), zone.abbreviation_at(*us));
                format_timestamp(zone.to_local(*us), Some(shown), style)
            }
            Value::Array(items) => match ty {
                DataType::ExpandedElement(e) => format!(
                    "({},{})",
                    items.first().and_then(|v| v.to_text(*e)).unwrap_or_default(),
                    items.get(1).and_then(|v| v.to_text(DataType::Int4)).unwrap_or_default()
                ),
                DataType::Int2Vector | DataType::OidVector => items
                    .iter()
                    .map(|v| v.to_text(DataType::Int8).unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(" "),
                _ => crate::array::format(
                    items,
                    ty.element().unwrap_or_else(|| crate::array::natural_element(items)),
                    style,
                ),
            },
        })
    }

    /// The value as a cast to a string type writes it: as its text, but a boolean as
    /// `true` / `false` (PostgreSQL's `bool::text`, where its output is `t` / `f`).
    pub fn to_text_cast(&self, style: Style) -> Option<String> {
        match self {
            Value::Bool(b) => Some(if *b { "true" } else { "false" }.to_string()),
            // PostgreSQL's text(inet): the mask shown even when it covers the address.
            Value::Inet(a) => Some(a.full_text()),
            v => v.to_text_in(DataType::Text, style),
        }
    }

    /// An explicit cast (`CAST`, `::`): like [`Value::cast`], but a string too long for
    /// varchar(n) or char(n) is cut to n characters, as PostgreSQL does.
    pub fn cast_explicit(self, ty: DataType, style: Style) -> Result<Value> {
        match (&self, ty) {
            (Value::Null, _) => Ok(Value::Null),
            (_, DataType::Varchar(Some(n)) | DataType::Char(n)) => {
                let s = self.to_text_cast(style).unwrap_or_default();
                let cut: String = s.chars().take(n as usize).collect();
                Value::Text(cut).cast(ty)
            }
            _ => self.cast_in(ty, style),
        }
    }

    /// Converts the value to type `ty` (an assignment cast: too-long strings are errors), as
    /// in UTC: for values that are not `timestamp with time zone`, or conversions that do
    /// not read one as a local time.
    pub fn cast(self, ty: DataType) -> Result<Value> {
        self.cast_in(ty, Style::DEFAULT)
    }

    /// [`Value::cast`] in the session's `style`: its zone converts between `timestamp with
    /// time zone` and `timestamp`, `date` and `time` (local times there), and it writes and
    /// reads text.
    pub fn cast_in(self, ty: DataType, style: Style) -> Result<Value> {
        let zone = style.zone;
        if self.is_null() {
            return Ok(Value::Null);
        }
        let bad = |v: &Value| {
            SqlError::new(
                code::CANNOT_COERCE,
                format!("cannot cast type {} to {}", v.kind(), ty.sql_name()),
            )
        };
        Ok(match (self, ty) {
            (Value::Text(s), ty) => Value::parse_in(&s, ty, style)?,
            (Value::Array(items), ty) if ty.element().is_some() => {
                let elem = ty.element().unwrap_or(DataType::Text);
                Value::Array(
                    items.into_iter().map(|v| v.cast_in(elem, style)).collect::<Result<_>>()?,
                )
            }
            (v, DataType::Text | DataType::Unknown | DataType::Name) => {
                Value::Text(v.to_text_cast(style).unwrap_or_default())
            }
            (v, DataType::PgChar) => Value::parse_in(
                &v.to_text_cast(style).unwrap_or_default(),
                DataType::PgChar,
                style,
            )?,
            (v, DataType::Varchar(n)) => {
                Value::Text(fit_string(&v.to_text_cast(style).unwrap_or_default(), n, false)?)
            }
            (v, DataType::Char(n)) => {
                Value::Text(fit_string(&v.to_text_cast(style).unwrap_or_default(), Some(n), true)?)
            }
            (Value::Int(i), t) if t.is_integer() => {
                check_int_range(i, t)?;
                Value::Int(i)
            }
            (Value::Int(i), DataType::Float4) => Value::Float(i as f32 as f64),
            (Value::Int(i), DataType::Float8) => Value::Float(i as f64),
            (Value::Int(i), DataType::Numeric(m)) => {
                Value::Numeric(fit_numeric(Numeric::from(i), m)?)
            }
            (Value::Int(i), DataType::Bool) => Value::Bool(i != 0),
            (Value::Float(f), t) if t.is_integer() => {
                if !f.is_finite() || f.round() > i64::MAX as f64 || f.round() < i64::MIN as f64 {
                    return Err(out_of_range(t));
                }
                let i = f.round_ties_even() as i64;
                check_int_range(i, t)?;
                Value::Int(i)
            }
            (Value::Float(f), DataType::Float4) => Value::Float(f as f32 as f64),
            (Value::Float(f), DataType::Float8) => Value::Float(f),
            (Value::Float(f), DataType::Numeric(m)) => {
                let d = Numeric::from_f64(f).ok_or_else(|| {
                    SqlError::unsupported(format!(
                        "the numeric value {f} (Kiln's numeric holds no NaN or infinity)"
                    ))
                })?;
                Value::Numeric(fit_numeric(d, m)?)
            }
            (Value::Numeric(d), t) if t.is_integer() => {
                let i = d.to_i64().ok_or_else(|| out_of_range(t))?;
                check_int_range(i, t)?;
                Value::Int(i)
            }
            (Value::Numeric(d), DataType::Float4 | DataType::Float8) => {
                let f = d.to_f64().ok_or_else(|| {
                    SqlError::new(
                        code::NUMERIC_OUT_OF_RANGE,
                        format!("\"{d}\" is out of range for type {}", ty.sql_name()),
                    )
                })?;
                Value::Float(if ty == DataType::Float4 { f as f32 as f64 } else { f })
            }
            (Value::Numeric(d), DataType::Numeric(m)) => Value::Numeric(fit_numeric(d, m)?),
            (Value::Bool(b), DataType::Bool) => Value::Bool(b),
            (Value::Bool(b), DataType::Int4) => Value::Int(b as i64),
            (Value::Bytea(b), DataType::Bytea) => Value::Bytea(b),
            // Of the same type (the binder sees to it), whichever definition this is: a value
            // with a label added since a plan was bound stays itself.
            (Value::Enum(v), DataType::Enum(_)) => Value::Enum(v),
            (Value::Uuid(u), DataType::Uuid) => Value::Uuid(u),
            (Value::Inet(a), DataType::Inet) => Value::Inet(a.to_inet()),
            (Value::Inet(a), DataType::Cidr) => Value::Inet(a.to_cidr()),
            (Value::Time(t), DataType::Time(p)) => Value::Time(round_micros(t, p)),
            (Value::Interval(iv), DataType::Interval(m)) => {
                Value::Interval(crate::interval::apply_typmod(iv, m)?)
            }
            // A time of day is the span since midnight, and back.
            (Value::Time(t), DataType::Interval(m)) => {
                Value::Interval(crate::interval::apply_typmod(
                    crate::interval::Interval { micros: t, ..Default::default() },
                    m,
                )?)
            }
            (Value::Interval(iv), DataType::Time(p)) => {
                Value::Time(round_micros(crate::interval::add_to_time(0, iv), p))
            }
            // A timestamp with time zone reads as its local time in the zone.
            (
                Value::TimestampTz(t),
                DataType::Time(_) | DataType::Date | DataType::Timestamp(_),
            ) => Value::Timestamp(zone.to_local(t)).cast_in(ty, style)?,
            (Value::Timestamp(t), DataType::Time(p))
                if t != TIMESTAMP_INFINITY && t != TIMESTAMP_NEG_INFINITY =>
            {
                Value::Time(round_micros(t.rem_euclid(MICROS_PER_DAY), p))
            }
            (Value::Date(d), DataType::Date) => Value::Date(d),
            (Value::Date(d), DataType::Timestamp(_)) => Value::Timestamp(date_micros(d)),
            (Value::Date(d), DataType::TimestampTz(_)) => {
                Value::TimestampTz(zone.from_local(date_micros(d)))
            }
            (Value::Timestamp(t), DataType::Date) => Value::Date(micros_date(t)),
            (Value::Timestamp(t), DataType::Timestamp(p)) => {
                Value::Timestamp(round_timestamp(t, p))
            }
            (Value::Timestamp(t), DataType::TimestampTz(p)) => {
                Value::TimestampTz(round_timestamp(zone.from_local(t), p))
            }
            (Value::TimestampTz(t), DataType::TimestampTz(p)) => {
                Value::TimestampTz(round_timestamp(t, p))
            }
            (v, _) => return Err(bad(&v)),
        })
    }

    /// Total order used by ORDER BY, DISTINCT, GROUP BY and indexes: NULL sorts last;
    /// numbers compare across widths.
    pub fn total_cmp(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Greater,
            (_, Value::Null) => Ordering::Less,
            (a, b) => a.sql_cmp(b).unwrap_or_else(|| a.rank().cmp(&b.rank())),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Value::Null => 9,
            Value::Bool(_) => 0,
            Value::Int(_) | Value::Float(_) | Value::Numeric(_) => 1,
            Value::Text(_) => 2,
            Value::Bytea(_) => 3,
            Value::Uuid(_) => 6,
            Value::Time(_) => 7,
            Value::Interval(_) => 8,
            Value::Date(_) | Value::Timestamp(_) | Value::TimestampTz(_) => 4,
            Value::Array(_) => 5,
            Value::Enum(_) => 10,
            Value::Inet(_) => 11,
        }
    }

    /// SQL comparison of two non-NULL values; `None` when they are not comparable.
    pub fn sql_cmp(&self, other: &Value) -> Option<Ordering> {
        Some(match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => float_cmp(*a, *b),
            (Value::Int(a), Value::Float(b)) => float_cmp(*a as f64, *b),
            (Value::Float(a), Value::Int(b)) => float_cmp(*a, *b as f64),
            (Value::Numeric(a), Value::Numeric(b)) => a.cmp(b),
            (Value::Int(a), Value::Numeric(b)) => Numeric::from(*a).cmp(b),
            (Value::Numeric(a), Value::Int(b)) => a.cmp(&Numeric::from(*b)),
            (Value::Numeric(a), Value::Float(b)) => float_cmp(numeric_f64(a), *b),
            (Value::Float(a), Value::Numeric(b)) => float_cmp(*a, numeric_f64(b)),
            (Value::Text(a), Value::Text(b)) => a.as_str().cmp(b.as_str()),
            (Value::Bytea(a), Value::Bytea(b)) => a.cmp(b),
            (Value::Uuid(a), Value::Uuid(b)) => a.cmp(b),
            (Value::Inet(a), Value::Inet(b)) => a.cmp_network(b),
            (Value::Enum(a), Value::Enum(b)) => float_cmp(a.sort, b.sort),
            (Value::Time(a), Value::Time(b)) => a.cmp(b),
            (Value::Interval(a), Value::Interval(b)) => a.cmp_span(b),
            (Value::Date(a), Value::Date(b)) => a.cmp(b),
            (Value::Date(a), Value::Timestamp(b) | Value::TimestampTz(b)) => date_micros(*a).cmp(b),
            (Value::Timestamp(a) | Value::TimestampTz(a), Value::Date(b)) => {
                a.cmp(&date_micros(*b))
            }
            (
                Value::Timestamp(a) | Value::TimestampTz(a),
                Value::Timestamp(b) | Value::TimestampTz(b),
            ) => a.cmp(b),
            (Value::Array(a), Value::Array(b)) => {
                // Element by element (NULL elements last), then the shorter first.
                for (x, y) in a.iter().zip(b) {
                    let o = x.total_cmp(y);
                    if o != Ordering::Equal {
                        return Some(o);
                    }
                }
                a.len().cmp(&b.len())
            }
            // (An enum value's type is not its own: it never meets a string here, the
            // binder having refused the comparison or made the string a label.)
            (Value::Text(s), other) | (other, Value::Text(s))
                if !matches!(other, Value::Text(_) | Value::Enum(_)) =>
            {
                // An untyped literal compared with a typed value takes the value's type.
                let ty = other.natural_type();
                let parsed = Value::parse(s, ty).ok()?;
                let ord = parsed.sql_cmp(other)?;
                if matches!(self, Value::Text(_)) {
                    ord
                } else {
                    ord.reverse()
                }
            }
            _ => return None,
        })
    }

    /// The type a value has by itself.
    pub fn natural_type(&self) -> DataType {
        match self {
            Value::Null => DataType::Unknown,
            Value::Bool(_) => DataType::Bool,
            Value::Int(_) => DataType::Int8,
            Value::Float(_) => DataType::Float8,
            Value::Numeric(_) => DataType::Numeric(None),
            Value::Text(_) => DataType::Text,
            Value::Bytea(_) => DataType::Bytea,
            Value::Uuid(_) => DataType::Uuid,
            Value::Inet(a) if a.cidr => DataType::Cidr,
            Value::Inet(_) => DataType::Inet,
            Value::Time(_) => DataType::Time(None),
            Value::Interval(_) => DataType::Interval(None),
            Value::Date(_) => DataType::Date,
            Value::Timestamp(_) => DataType::Timestamp(None),
            Value::TimestampTz(_) => DataType::TimestampTz(None),
            Value::Array(items) => {
                crate::array::array_of_plain(crate::array::natural_element(items))
            }
            // Its type is the column's or expression's; by itself, a label.
            Value::Enum(_) => DataType::Text,
        }
    }
}

/// A uuid's text form as PostgreSQL reads it: 32 hex digits, optionally in braces, with a
/// hyphen allowed after any group of four digits.
pub fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    let inner = match text.strip_prefix('{') {
        Some(rest) => rest.strip_suffix('}')?,
        None => text,
    };
    let mut digits = String::with_capacity(32);
    for (i, part) in inner.split('-').enumerate() {
        // Each hyphen follows a multiple of four digits, and none leads or trails.
        if (i > 0 && (!digits.len().is_multiple_of(4) || part.is_empty()))
            || (i == 0 && part.is_empty())
        {
            return None;
        }
        if !part.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        digits.push_str(part);
    }
    if digits.len() != 32 {
        return None;
    }
    uuid::Uuid::try_parse(&digits).ok().map(|u| u.into_bytes())
}

/// Result columns: names and types.
pub type Columns = Vec<(String, DataType)>;

/// For each result column, the table column it shows unchanged, when it does: the table's
/// OID and the column's number (RowDescription reports them).
pub type Origins = Vec<Option<(u32, i16)>>;

/// A row of values.
pub type Row = Vec<Value>;

/// Microseconds in a day.
pub const MICROS_PER_DAY: i64 = 86_400_000_000;

/// A date's first microsecond (the infinities stay infinite).
pub fn date_micros(days: i32) -> i64 {
    match days {
        DATE_INFINITY => TIMESTAMP_INFINITY,
        DATE_NEG_INFINITY => TIMESTAMP_NEG_INFINITY,
        d => d as i64 * MICROS_PER_DAY,
    }
}

/// The date of a timestamp (the infinities stay infinite).
pub fn micros_date(micros: i64) -> i32 {
    match micros {
        TIMESTAMP_INFINITY => DATE_INFINITY,
        TIMESTAMP_NEG_INFINITY => DATE_NEG_INFINITY,
        t => t.div_euclid(MICROS_PER_DAY) as i32,
    }
}

fn float_cmp(a: f64, b: f64) -> Ordering {
    // PostgreSQL: NaN equals NaN and sorts above every other value.
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// 22003 for a value outside `ty`'s range.
pub fn out_of_range(ty: DataType) -> SqlError {
    let name = match ty {
        DataType::Int2 => "smallint",
        DataType::Int4 => "integer",
        DataType::Int8 => "bigint",
        DataType::Oid => "type oid",
        other => {
            return SqlError::new(
                code::NUMERIC_OUT_OF_RANGE,
                format!("value out of range for type {}", other.sql_name()),
            )
        }
    };
    SqlError::new(code::NUMERIC_OUT_OF_RANGE, format!("{name} out of range"))
}

/// Checks that `v` fits integer type `ty`.
pub fn check_int_range(v: i64, ty: DataType) -> Result<()> {
    let ok = match ty {
        DataType::Int2 => i16::try_from(v).is_ok(),
        DataType::Int4 => i32::try_from(v).is_ok(),
        DataType::Oid => u32::try_from(v).is_ok(),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(out_of_range(ty))
    }
}

fn fit_numeric(d: Numeric, m: Option<(u32, i32)>) -> Result<Numeric> {
    match m {
        None => Ok(d),
        Some((p, s)) => d.fit(p, s),
    }
}

/// A numeric as a double for comparison with one (beyond a double's range, an infinity).
pub(crate) fn numeric_f64(d: &Numeric) -> f64 {
    d.to_f64().unwrap_or(if d.is_negative() { f64::NEG_INFINITY } else { f64::INFINITY })
}

fn fit_string(s: &str, n: Option<u32>, pad: bool) -> Result<String> {
    let Some(n) = n else { return Ok(s.to_string()) };
    let len = s.chars().count();
    let trimmed = if pad { s.trim_end_matches(' ') } else { s };
    if len > n as usize {
        // PostgreSQL allows the excess only when it is all spaces.
        let tail: String = s.chars().skip(n as usize).collect();
        if tail.chars().all(|c| c == ' ') {
            let cut: String = s.chars().take(n as usize).collect();
            return Ok(if pad { cut.trim_end_matches(' ').to_string() } else { cut });
        }
        let name = if pad { "character" } else { "character varying" };
        return Err(SqlError::new(
            code::STRING_TRUNCATION,
            format!("value too long for type {name}({n})"),
        ));
    }
    Ok(trimmed.to_string())
}

/// The error for text that is no date or timestamp (`what`), as PostgreSQL words it.
fn datetime_error(t: &str, what: &str, bad: crate::datetime_in::Bad) -> SqlError {
    use crate::datetime_in::Bad;
    let out_of_range =
        || SqlError::new("22008", format!("date/time field value out of range: \"{t}\""));
    match bad {
        Bad::Syntax => SqlError::new(
            code::INVALID_DATETIME,
            format!("invalid input syntax for type {what}: \"{t}\""),
        ),
        Bad::Field => out_of_range(),
        Bad::MonthDay => out_of_range().hint("Perhaps you need a different \"datestyle\" setting."),
        Bad::Zone(z) => SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("time zone \"{z}\" not recognized"),
        ),
    }
}

/// PostgreSQL's boolean input.
pub fn parse_bool(s: &str) -> Result<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "t" | "true" | "y" | "yes" | "on" | "1" => Ok(true),
        "f" | "false" | "n" | "no" | "off" | "0" => Ok(false),
        _ => Err(SqlError::new(
            code::INVALID_TEXT,
            format!("invalid input syntax for type boolean: \"{s}\""),
        )),
    }
}

fn parse_bytea(s: &str) -> Result<Vec<u8>> {
    if let Some(hex) = s.strip_prefix("\\x") {
        let bad = || SqlError::new(code::INVALID_TEXT, "invalid hexadecimal data in bytea");
        let digits: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        if !digits.len().is_multiple_of(2) {
            return Err(bad());
        }
        digits
            .chunks(2)
            .map(|pair| {
                let hi = (pair[0] as char).to_digit(16).ok_or_else(bad)?;
                let lo = (pair[1] as char).to_digit(16).ok_or_else(bad)?;
                Ok((hi * 16 + lo) as u8)
            })
            .collect()
    } else {
        // Escape format: backslash-octal and doubled backslashes.
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'\\' {
                if bytes.get(i + 1) == Some(&b'\\') {
                    out.push(b'\\');
                    i += 2;
                } else if i + 3 < bytes.len() + 1
                    && bytes[i + 1..].len() >= 3
                    && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b))
                {
                    let v = (bytes[i + 1] - b'0') as u32 * 64
                        + (bytes[i + 2] - b'0') as u32 * 8
                        + (bytes[i + 3] - b'0') as u32;
                    out.push(v as u8);
                    i += 4;
                } else {
                    return Err(SqlError::new(
                        code::INVALID_TEXT,
                        "invalid input syntax for type bytea",
                    ));
                }
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        Ok(out)
    }
}

/// `date` / `timestamp` infinities, as PostgreSQL keeps them: the extreme values.
pub const DATE_INFINITY: i32 = i32::MAX;
/// `-infinity` for `date`.
pub const DATE_NEG_INFINITY: i32 = i32::MIN;
/// `infinity` for `timestamp` and `timestamptz`.
pub const TIMESTAMP_INFINITY: i64 = i64::MAX;
/// `-infinity` for `timestamp` and `timestamptz`.
pub const TIMESTAMP_NEG_INFINITY: i64 = i64::MIN;

/// A time of day as PostgreSQL reads it: `HH:MM[:SS[.ffffff]]` (up to `24:00:00`), `allballs`,
/// a zone after it read and dropped; microseconds since midnight. The error says whether the
/// fields were in range (a syntax error) or not.
fn parse_time(s: &str) -> std::result::Result<i64, bool> {
    let fields = time_fields(s).ok_or(true)?;
    let (h, m, sec, frac) = fields;
    let micros = ((h * 60 + m) * 60 + sec) * 1_000_000 + frac;
    if m > 59 || sec > 60 || !(0..=MICROS_PER_DAY).contains(&micros) {
        return Err(false);
    }
    Ok(micros)
}

/// Hours, minutes, seconds and microseconds of a time's text.
fn time_fields(s: &str) -> Option<(i64, i64, i64, i64)> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("allballs") {
        return Some((0, 0, 0, 0));
    }
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == ':' || c == '.')).unwrap_or(s.len());
    let (t, zone) = s.split_at(end);
    let zone = zone.trim();
    if !zone.is_empty()
        && !zone.starts_with(['+', '-'])
        && !zone.eq_ignore_ascii_case("utc")
        && !zone.eq_ignore_ascii_case("z")
    {
        return None;
    }
    let mut parts = t.split(':');
    let h: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let (sec, frac) = match parts.next() {
        None => (0, 0),
        Some(sp) => {
            let (whole, frac) = sp.split_once('.').unwrap_or((sp, ""));
            let sec: i64 = whole.parse().ok()?;
            if !frac.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Rounded to microseconds, as PostgreSQL does.
            let digits: String = frac.chars().chain(std::iter::repeat('0')).take(7).collect();
            let tenths: i64 = digits.parse().ok()?;
            (sec, (tenths + 5) / 10)
        }
    };
    if parts.next().is_some() || h < 0 || m < 0 || sec < 0 || h > 1_000_000 {
        return None;
    }
    Some((h, m, sec, frac))
}

fn format_time(micros: i64) -> String {
    let (secs, frac) = (micros / 1_000_000, micros % 1_000_000);
    let mut out = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac != 0 {
        let f = format!(".{frac:06}");
        out.push_str(f.trim_end_matches('0'));
    }
    out
}

/// The local midnight of today (`days` 0), tomorrow (1) or yesterday (-1) in `zone`, as
/// microseconds of local time.
fn local_midnight(zone: Zone, days: i64) -> i64 {
    let today = zone.to_local(now_micros()).div_euclid(MICROS_PER_DAY);
    (today + days) * MICROS_PER_DAY
}

/// A date's text: a special word, or what [`crate::datetime_in::decode`] reads (a time and
/// zone after the date read and dropped, as PostgreSQL does).
fn parse_date(s: &str, style: Style) -> std::result::Result<i32, crate::datetime_in::Bad> {
    let zone = style.zone;
    let lower = s.trim().to_ascii_lowercase();
    match lower.as_str() {
        "infinity" | "+infinity" => return Ok(DATE_INFINITY),
        "-infinity" => return Ok(DATE_NEG_INFINITY),
        "epoch" => return Ok(0),
        "now" => return Ok(local_midnight(zone, 0).div_euclid(MICROS_PER_DAY) as i32),
        _ => {}
    }
    let d = decoded(s, style)?;
    i32::try_from((d.date - UNIX_EPOCH_DATE).num_days()).map_err(|_| crate::datetime_in::Bad::Field)
}

/// [`crate::datetime_in::decode`] in the session's DateStyle order, `today` in its zone.
fn decoded(
    s: &str,
    style: Style,
) -> std::result::Result<crate::datetime_in::Decoded, crate::datetime_in::Bad> {
    let relative = |days: i64| {
        let local = local_midnight(style.zone, days);
        UNIX_EPOCH_DATE + chrono::Duration::days(local.div_euclid(MICROS_PER_DAY))
    };
    crate::datetime_in::decode(s, style.order, &relative)
}

/// A date as days since 1970-01-01, checked against the range Kiln can represent
/// (chrono's: about ±262,000 years); 22008 outside it.
pub fn check_date(days: i64) -> Result<i32> {
    let ok = i32::try_from(days).ok().filter(|d| {
        UNIX_EPOCH_DATE.checked_add_signed(chrono::Duration::days(*d as i64)).is_some()
    });
    ok.ok_or_else(|| SqlError::new("22008", "date out of range"))
}

/// A timestamp's text (with time zone when `tz`: the instant of its local time in the zone
/// it names, or else in the session's).
fn parse_timestamp(
    s: &str,
    tz: bool,
    style: Style,
) -> std::result::Result<i64, crate::datetime_in::Bad> {
    let session = style.zone;
    match s.trim().to_ascii_lowercase().as_str() {
        "epoch" => return Ok(0),
        "now" if tz => return Ok(now_micros()),
        "now" => return Ok(session.to_local(now_micros())),
        "infinity" | "+infinity" => return Ok(TIMESTAMP_INFINITY),
        "-infinity" => return Ok(TIMESTAMP_NEG_INFINITY),
        _ => {}
    }
    let d = decoded(s, style)?;
    let local = d
        .date
        .and_hms_opt(0, 0, 0)
        .map(|t| t.and_utc().timestamp_micros())
        .and_then(|midnight| midnight.checked_add(d.micros))
        .ok_or(crate::datetime_in::Bad::Field)?;
    // timestamp without time zone ignores a zone, as PostgreSQL does; timestamptz is the
    // instant of the local time in the zone given, or else in the session's.
    Ok(match (tz, d.zone) {
        (true, Some(z)) => z.from_local(local),
        (true, None) => session.from_local(local),
        _ => local,
    })
}

/// Now, in microseconds since the Unix epoch.
pub fn now_micros() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

fn format_date(days: i32, style: Style) -> String {
    match days {
        DATE_INFINITY => return "infinity".into(),
        DATE_NEG_INFINITY => return "-infinity".into(),
        _ => {}
    }
    match UNIX_EPOCH_DATE.checked_add_signed(chrono::Duration::days(days as i64)) {
        Some(d) => {
            let (shown, bc) = date_text(d, style);
            if bc {
                shown + " BC"
            } else {
                shown
            }
        }
        None => "infinity".into(),
    }
}

/// A date as DateStyle `style` writes it (`2024-01-02`, `01/02/2024`, `01-02-2024`,
/// `02.01.2024`), and whether it is BC (then its year is counted back from 1 BC, which is
/// chrono's year 0).
fn date_text(d: NaiveDate, style: Style) -> (String, bool) {
    use crate::style::{DateFormat, DateOrder};
    let (year, bc) = if d.year() <= 0 { (1 - d.year(), true) } else { (d.year(), false) };
    let (m, day) = (d.month(), d.day());
    let dmy = style.order == DateOrder::Dmy;
    let shown = match style.dates {
        DateFormat::Iso => format!("{year:04}-{m:02}-{day:02}"),
        DateFormat::Sql if dmy => format!("{day:02}/{m:02}/{year:04}"),
        DateFormat::Sql => format!("{m:02}/{day:02}/{year:04}"),
        DateFormat::German => format!("{day:02}.{m:02}.{year:04}"),
        DateFormat::Postgres if dmy => format!("{day:02}-{m:02}-{year:04}"),
        DateFormat::Postgres => format!("{m:02}-{day:02}-{year:04}"),
    };
    (shown, bc)
}

/// A timestamp (local time) as DateStyle `style` writes it, with `zone` — an offset and
/// an abbreviation — for a timestamp with time zone: ISO writes the offset (`+05:30`), the
/// others the abbreviation (`IST`). `infinity` and `-infinity` in every style.
fn format_timestamp(micros: i64, zone: Option<(i32, String)>, style: Style) -> String {
    use crate::style::{DateFormat, DateOrder};
    match micros {
        TIMESTAMP_INFINITY => return "infinity".into(),
        TIMESTAMP_NEG_INFINITY => return "-infinity".into(),
        _ => {}
    }
    let Some(t) = DateTime::from_timestamp_micros(micros) else { return "infinity".into() };
    let t = t.naive_utc();
    let mut time = t.format("%H:%M:%S").to_string();
    let frac = micros.rem_euclid(1_000_000);
    if frac != 0 {
        let f = format!(".{frac:06}");
        time.push_str(f.trim_end_matches('0'));
    }
    let (date, bc) = date_text(t.date(), style);
    let mut out = match style.dates {
        DateFormat::Iso | DateFormat::Sql | DateFormat::German => format!("{date} {time}"),
        DateFormat::Postgres => {
            let (year, _) = if t.year() <= 0 { (1 - t.year(), true) } else { (t.year(), false) };
            let (dow, mon) = (t.format("%a"), t.format("%b"));
            if style.order == DateOrder::Dmy {
                format!("{dow} {:02} {mon} {time} {year:04}", t.day())
            } else {
                format!("{dow} {mon} {:02} {time} {year:04}", t.day())
            }
        }
    };
    if let Some((offset, name)) = zone {
        match style.dates {
            DateFormat::Iso => out.push_str(&crate::zone::format_offset(offset)),
            _ if name.is_empty() => {
                out.push(' ');
                out.push_str(&crate::zone::format_offset(offset));
            }
            _ => {
                out.push(' ');
                out.push_str(&name);
            }
        }
    }
    if bc {
        out.push_str(" BC");
    }
    out
}

/// PostgreSQL's float output (shortest exact form, as with extra_float_digits = 1).
pub fn format_float(f: f64, single: bool) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    let s = if single { format!("{}", f as f32) } else { format!("{f}") };
    let abs = f.abs();
    if abs != 0.0 && !(1e-4..1e15).contains(&abs) {
        // Exponent form, as PostgreSQL prints it: 1e+20, 1.5e-05.
        let e = if single { format!("{:e}", f as f32) } else { format!("{f:e}") };
        if let Some((mant, exp)) = e.split_once('e') {
            let exp: i32 = exp.parse().unwrap_or(0);
            let sign = if exp < 0 { '-' } else { '+' };
            return format!("{mant}e{sign}{:02}", exp.abs());
        }
    }
    if s == "-0" {
        return "-0".into();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_types_read_with_and_without_a_precision() {
        let read = |json: &str| serde_json::from_str::<DataType>(json).expect(json);
        // As catalogs written before these types had a precision hold them.
        assert_eq!(read("\"Timestamp\""), DataType::Timestamp(None));
        assert_eq!(read("\"TimestampTz\""), DataType::TimestampTz(None));
        assert_eq!(read("\"Time\""), DataType::Time(None));
        assert_eq!(
            read("{\"Array\":\"TimestampTz\"}"),
            crate::array::array_of_plain(DataType::TimestampTz(None))
        );
        assert_eq!(read("\"Int4\""), DataType::Int4);
        for t in [
            DataType::Timestamp(Some(3)),
            DataType::TimestampTz(Some(0)),
            DataType::Time(None),
            DataType::Interval(Some(7)),
            DataType::Varchar(Some(10)),
            crate::array::array_of(DataType::Timestamp(Some(2))).unwrap(),
        ] {
            assert_eq!(read(&serde_json::to_string(&t).unwrap()), t);
        }
        assert!(serde_json::from_str::<DataType>("\"Timestamps\"").is_err());
    }

    #[test]
    fn precision_rounds_half_away_from_2000() {
        let ts = |s: &str, p| {
            Value::parse(s, DataType::Timestamp(p))
                .unwrap()
                .to_text(DataType::Timestamp(None))
                .unwrap()
        };
        assert_eq!(ts("2024-01-01 00:00:00.5", Some(0)), "2024-01-01 00:00:01");
        assert_eq!(ts("1999-01-08 04:05:06.5", Some(0)), "1999-01-08 04:05:06");
        assert_eq!(ts("2024-01-01 00:00:00.1234567", None), "2024-01-01 00:00:00.123457");
        assert_eq!(ts("2024-12-31 23:59:59.96", Some(1)), "2025-01-01 00:00:00");
        assert_eq!(ts("infinity", Some(0)), "infinity");
        let time = |s: &str, p| {
            Value::parse(s, DataType::Time(p)).unwrap().to_text(DataType::Time(None)).unwrap()
        };
        assert_eq!(time("23:59:59.99", Some(1)), "24:00:00");
        assert_eq!(time("10:00:00.449", Some(2)), "10:00:00.45");
    }

    #[test]
    fn uuid_text_forms() {
        let canonical = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
        let expect = parse_uuid(canonical).expect("the canonical form");
        for form in [
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
        ] {
            assert_eq!(parse_uuid(form), Some(expect), "{form}");
        }
        for bad in [
            "",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
            "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
            "a0eebc999-c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "urn:uuid:a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        ] {
            assert_eq!(parse_uuid(bad), None, "{bad}");
        }
        let v = Value::parse(canonical, DataType::Uuid).unwrap();
        assert_eq!(v.to_text(DataType::Uuid).as_deref(), Some(canonical));
    }

    #[test]
    fn time_text_forms() {
        let t = |s: &str| {
            Value::parse(s, DataType::Time(None)).map(|v| v.to_text(DataType::Time(None)))
        };
        assert_eq!(t("13:04:05.123456").unwrap().as_deref(), Some("13:04:05.123456"));
        assert_eq!(t("7:5").unwrap().as_deref(), Some("07:05:00"));
        assert_eq!(t("24:00:00").unwrap().as_deref(), Some("24:00:00"));
        assert_eq!(t("allballs").unwrap().as_deref(), Some("00:00:00"));
        assert_eq!(t("12:30:00+02").unwrap().as_deref(), Some("12:30:00"));
        assert_eq!(t("1:02:03.4567891").unwrap().as_deref(), Some("01:02:03.456789"));
        assert_eq!(t("25:00").unwrap_err().code, "22008");
        assert_eq!(t("12:61").unwrap_err().code, "22008");
        assert_eq!(t("24:00:01").unwrap_err().code, "22008");
        assert_eq!(t("noon").unwrap_err().code, "22007");
        assert_eq!(t("12").unwrap_err().code, "22007");
        assert_eq!(t("-1:00").unwrap_err().code, "22007");
    }
}
