//! Arrays: one-dimensional, lower bound 1 (PostgreSQL's common case), of any scalar type;
//! their text form (`{1,2,NULL,"a b"}`), element types, and the limits on their size.
//!
//! An array type is [`DataType::Array`] holding a `&'static DataType` for its element, so
//! that `DataType` stays `Copy`. Element types without a modifier are statics; those with
//! one (`varchar(20)[]`, `numeric(10,2)[]`) are interned once each, up to
//! [`ELEMENT_TYPES_MAX`] distinct ones.
//!
//! Multi-dimensional arrays and explicit lower bounds (`'[0:1]={1,2}'`) are refused with
//! 0A000: no column, literal or result carries them.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::error::{code, Result, SqlError};
use crate::style::Style;
use crate::types::{DataType, Value};

/// Most elements one array may hold (PostgreSQL's limit is about 134 million): an array is
/// built in memory, so this bounds what one value of a statement may take (about 128 MiB).
pub const ELEMENTS_MAX: usize = 1 << 22;

/// Most distinct element types with a modifier (`varchar(n)[]` for distinct n …).
pub const ELEMENT_TYPES_MAX: usize = 4096;

static BOOL: DataType = DataType::Bool;
static INT2: DataType = DataType::Int2;
static INT4: DataType = DataType::Int4;
static INT8: DataType = DataType::Int8;
static FLOAT4: DataType = DataType::Float4;
static FLOAT8: DataType = DataType::Float8;
static NUMERIC: DataType = DataType::Numeric(None);
static TEXT: DataType = DataType::Text;
static VARCHAR: DataType = DataType::Varchar(None);
static CHAR1: DataType = DataType::Char(1);
static BYTEA: DataType = DataType::Bytea;
static DATE: DataType = DataType::Date;
static TIMESTAMP: DataType = DataType::Timestamp(None);
static TIMESTAMPTZ: DataType = DataType::TimestampTz(None);
static UUID: DataType = DataType::Uuid;
static INET: DataType = DataType::Inet;
static CIDR: DataType = DataType::Cidr;
static TSVECTOR: DataType = DataType::TsVector;
static TSQUERY: DataType = DataType::TsQuery;
static REGCONFIG: DataType = DataType::RegConfig;
static TIME: DataType = DataType::Time(None);
static INTERVAL: DataType = DataType::Interval(None);
static JSON: DataType = DataType::Json;
static JSONB: DataType = DataType::Jsonb;
static OID: DataType = DataType::Oid;
static NAME: DataType = DataType::Name;
static PG_CHAR: DataType = DataType::PgChar;

/// The static element type for `t`, when it has no modifier.
fn plain(t: DataType) -> Option<&'static DataType> {
    Some(match t {
        DataType::Bool => &BOOL,
        DataType::Int2 => &INT2,
        DataType::Int4 => &INT4,
        DataType::Int8 => &INT8,
        DataType::Float4 => &FLOAT4,
        DataType::Float8 => &FLOAT8,
        DataType::Numeric(None) => &NUMERIC,
        DataType::Text | DataType::Unknown => &TEXT,
        DataType::Varchar(None) => &VARCHAR,
        DataType::Char(1) => &CHAR1,
        DataType::Bytea => &BYTEA,
        DataType::Date => &DATE,
        DataType::Timestamp(None) => &TIMESTAMP,
        DataType::TimestampTz(None) => &TIMESTAMPTZ,
        DataType::Uuid => &UUID,
        DataType::Inet => &INET,
        DataType::Cidr => &CIDR,
        DataType::TsVector => &TSVECTOR,
        DataType::TsQuery => &TSQUERY,
        DataType::RegConfig => &REGCONFIG,
        DataType::Time(None) => &TIME,
        DataType::Interval(None) => &INTERVAL,
        DataType::Json => &JSON,
        DataType::Jsonb => &JSONB,
        DataType::Oid => &OID,
        DataType::Name => &NAME,
        DataType::PgChar => &PG_CHAR,
        _ => return None,
    })
}

/// The array type of element type `elem`: 0A000 for an array of arrays, 54000 past
/// [`ELEMENT_TYPES_MAX`] distinct element modifiers.
pub fn array_of(elem: DataType) -> Result<DataType> {
    if let Some(e) = plain(elem) {
        return Ok(DataType::Array(e));
    }
    if elem.element().is_some() {
        return Err(SqlError::unsupported("arrays of arrays (multi-dimensional arrays)"));
    }
    if let DataType::Enum(def) = elem {
        return Ok(DataType::Array(enum_element(def)));
    }
    static INTERNED: OnceLock<Mutex<HashMap<DataType, &'static DataType>>> = OnceLock::new();
    let mut map = INTERNED.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = map.get(&elem) {
        return Ok(DataType::Array(e));
    }
    if map.len() >= ELEMENT_TYPES_MAX {
        return Err(SqlError::new(
            code::PROGRAM_LIMIT,
            format!("too many distinct array element types (at most {ELEMENT_TYPES_MAX})"),
        ));
    }
    // Leaked once per distinct element type, bounded above.
    let e: &'static DataType = Box::leak(Box::new(elem));
    map.insert(elem, e);
    Ok(DataType::Array(e))
}

/// The element type `Enum(def)`, interned once per (interned) definition: types of one enum
/// type compare equal whatever their labels, so the definition itself is the key.
fn enum_element(def: &'static crate::enums::EnumType) -> &'static DataType {
    static INTERNED: OnceLock<Mutex<HashMap<usize, &'static DataType>>> = OnceLock::new();
    let mut map = INTERNED.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    // One per interned definition, which are bounded (`crate::enums::INTERNED_BYTES_MAX`).
    map.entry(def as *const _ as usize).or_insert_with(|| Box::leak(Box::new(DataType::Enum(def))))
}

/// The array type of a value's own element type (never fails: those have no modifier).
pub fn array_of_plain(elem: DataType) -> DataType {
    DataType::Array(plain(elem).unwrap_or(&TEXT))
}

/// 54000 for an array with more than [`ELEMENTS_MAX`] elements.
pub fn check_len(n: usize) -> Result<()> {
    if n > ELEMENTS_MAX {
        return Err(SqlError::new(
            code::PROGRAM_LIMIT,
            format!("array size exceeds the maximum allowed ({ELEMENTS_MAX})"),
        ));
    }
    Ok(())
}

/// The items of an array's text form, unquoted (`None` for an unquoted NULL).
pub fn parse_text(s: &str) -> Result<Vec<Option<String>>> {
    let bad = |why: &str| {
        SqlError::new(code::INVALID_TEXT, format!("malformed array literal: \"{s}\""))
            .detail(why.to_string())
    };
    let t = s.trim();
    if t.starts_with('[') {
        return Err(SqlError::unsupported("array literals with explicit bounds"));
    }
    let inner = t
        .strip_prefix('{')
        .ok_or_else(|| bad("Array value must start with \"{\" or dimension information."))?
        .strip_suffix('}')
        .ok_or_else(|| bad("Unexpected end of input."))?;
    let mut out = Vec::new();
    if inner.trim().is_empty() {
        return Ok(out);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            chars.next();
        }
        let mut item = String::new();
        let quoted = chars.peek() == Some(&'"');
        if chars.peek() == Some(&'{') {
            return Err(SqlError::unsupported("multi-dimensional arrays"));
        }
        if quoted {
            chars.next();
            loop {
                match chars.next() {
                    Some('\\') => {
                        item.push(chars.next().ok_or_else(|| bad("Unexpected end of input."))?)
                    }
                    Some('"') => break,
                    Some(c) => item.push(c),
                    None => return Err(bad("Unexpected end of input.")),
                }
            }
            while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                chars.next();
            }
        } else {
            while let Some(&c) = chars.peek() {
                match c {
                    ',' => break,
                    '"' | '{' | '}' => return Err(bad(&format!("Unexpected \"{c}\" character."))),
                    '\\' => {
                        chars.next();
                        item.push(chars.next().ok_or_else(|| bad("Unexpected end of input."))?);
                    }
                    c => {
                        item.push(c);
                        chars.next();
                    }
                }
            }
        }
        let item = if quoted { item } else { item.trim_end().to_string() };
        if !quoted && item.is_empty() {
            return Err(bad("Unexpected \",\" character."));
        }
        out.push(if !quoted && item.eq_ignore_ascii_case("null") { None } else { Some(item) });
        check_len(out.len())?;
        match chars.next() {
            Some(',') => continue,
            None => break,
            Some(c) => return Err(bad(&format!("Unexpected \"{c}\" character."))),
        }
    }
    Ok(out)
}

/// Parses an array's text form with elements of type `elem`, read in the session's `style`
/// (timestamps with time zone without an offset in its zone).
pub fn parse(s: &str, elem: DataType, style: Style) -> Result<Vec<Value>> {
    parse_text(s)?
        .into_iter()
        .map(|item| match item {
            None => Ok(Value::Null),
            Some(t) => Value::parse_in(&t, elem, style),
        })
        .collect()
}

/// One element in an array's text form: quoted when it must be.
pub fn format_item(out: &mut String, v: &Value, elem: DataType, style: Style) {
    match v.to_text_in(elem, style) {
        None => out.push_str("NULL"),
        Some(s) => {
            if s.is_empty()
                || s.contains([',', '"', '{', '}', '\\'])
                || s.contains(|c: char| c.is_ascii_whitespace())
                || s.eq_ignore_ascii_case("null")
            {
                out.push('"');
                for c in s.chars() {
                    if c == '"' || c == '\\' {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out.push('"');
            } else {
                out.push_str(&s);
            }
        }
    }
}

/// An array's text form (`{…}`), its elements written in the session's `style`.
pub fn format(items: &[Value], elem: DataType, style: Style) -> String {
    let mut out = String::from("{");
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        format_item(&mut out, v, elem, style);
    }
    out.push('}');
    out
}

/// The element type of a value's items, as far as the items tell (text when they are all
/// NULL or there are none).
pub fn natural_element(items: &[Value]) -> DataType {
    items.iter().find(|v| !v.is_null()).map(Value::natural_type).unwrap_or(DataType::Text)
}

/// PostgreSQL's array type OID for an element type OID (0 when there is none).
pub fn array_oid(elem: DataType) -> u32 {
    match elem {
        DataType::Bool => 1000,
        DataType::Bytea => 1001,
        DataType::Char(_) => 1014,
        DataType::Int2 => 1005,
        DataType::Int4 => 1007,
        DataType::Text | DataType::Unknown => 1009,
        DataType::Varchar(_) => 1015,
        DataType::Int8 => 1016,
        DataType::Float4 => 1021,
        DataType::Float8 => 1022,
        DataType::Timestamp(_) => 1115,
        DataType::Date => 1182,
        DataType::TimestampTz(_) => 1185,
        DataType::Numeric(_) => 1231,
        DataType::Uuid => 2951,
        DataType::Inet => 1041,
        DataType::Cidr => 651,
        DataType::TsVector => 3643,
        DataType::TsQuery => 3645,
        DataType::RegConfig => 3735,
        DataType::Time(_) => 1183,
        DataType::Interval(_) => 1187,
        DataType::Json => 199,
        DataType::Jsonb => 3807,
        DataType::Enum(e) => e.array_oid,
        DataType::Oid => 1028,
        DataType::Name => 1003,
        DataType::PgChar => 1002,
        _ => 0,
    }
}

/// The array type of an array type OID.
pub fn from_array_oid(oid: u32) -> Option<DataType> {
    let elem = match oid {
        1000 => DataType::Bool,
        1001 => DataType::Bytea,
        1014 => DataType::Char(1),
        1005 => DataType::Int2,
        1007 => DataType::Int4,
        1009 => DataType::Text,
        1003 => DataType::Name,
        1002 => DataType::PgChar,
        1015 => DataType::Varchar(None),
        1016 => DataType::Int8,
        1028 => DataType::Oid,
        1021 => DataType::Float4,
        1022 => DataType::Float8,
        1115 => DataType::Timestamp(None),
        1182 => DataType::Date,
        1185 => DataType::TimestampTz(None),
        1231 => DataType::Numeric(None),
        2951 => DataType::Uuid,
        1041 => DataType::Inet,
        651 => DataType::Cidr,
        3643 => DataType::TsVector,
        3645 => DataType::TsQuery,
        3735 => DataType::RegConfig,
        1183 => DataType::Time(None),
        1187 => DataType::Interval(None),
        199 => DataType::Json,
        3807 => DataType::Jsonb,
        _ => return None,
    };
    Some(array_of_plain(elem))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_round_trip() {
        let items = vec![
            Value::Text("a b".into()),
            Value::Null,
            Value::Text("NULL".into()),
            Value::Text("".into()),
            Value::Text("x\"y\\z".into()),
            Value::Text("plain".into()),
        ];
        let text = format(&items, DataType::Text, Style::DEFAULT);
        assert_eq!(text, r#"{"a b",NULL,"NULL","","x\"y\\z",plain}"#);
        assert_eq!(parse(&text, DataType::Text, Style::DEFAULT).unwrap(), items);
        assert_eq!(
            parse(" { 1 , 2,NULL } ", DataType::Int4, Style::DEFAULT).unwrap(),
            vec![Value::Int(1), Value::Int(2), Value::Null]
        );
        assert_eq!(parse("{}", DataType::Int4, Style::DEFAULT).unwrap(), vec![]);
        for bad in ["1,2", "{1,,2}", "{1,2", "{\"a}", "{a\"b}", "{1} x"] {
            assert_eq!(
                parse(bad, DataType::Text, Style::DEFAULT).unwrap_err().code,
                code::INVALID_TEXT,
                "{bad}"
            );
        }
        assert_eq!(
            parse("{{1},{2}}", DataType::Int4, Style::DEFAULT).unwrap_err().code,
            code::FEATURE_NOT_SUPPORTED
        );
        assert_eq!(
            parse("[0:1]={1,2}", DataType::Int4, Style::DEFAULT).unwrap_err().code,
            code::FEATURE_NOT_SUPPORTED
        );
    }

    #[test]
    fn element_types_are_interned() {
        let a = array_of(DataType::Varchar(Some(20))).unwrap();
        let b = array_of(DataType::Varchar(Some(20))).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.element(), Some(DataType::Varchar(Some(20))));
        assert!(array_of(a).is_err());
    }
}
