//! How rows and keys become engine bytes.
//!
//! **Keys** (primary keys and index entries) use an order-preserving encoding, so the
//! engine's byte order is SQL order and a range of values is a range of keys: each value is a
//! tag byte (`0x01` not NULL, `0x02` NULL — NULLs sort last, as in PostgreSQL's default)
//! followed by the value: integers, dates, times and timestamps as 8 big-endian bytes with the sign
//! bit flipped; doubles with the usual sign trick; booleans as one byte; uuids as their 16
//! bytes; intervals as their span in microseconds (16 bytes, sign bit flipped); strings and bytea with `0x00` escaped as `0x00 0xFF` and terminated by `0x00 0x00`.
//!
//! **Rows** are a column count (u16 LE) and one tagged value per column; see
//! `docs/storage-format.md`.

use crate::numeric::Numeric;

use crate::error::{code, Result, SqlError};
use crate::types::{DataType, Value};

/// Appends the order-preserving key encoding of `v` to `out`.
pub fn encode_key_value(out: &mut Vec<u8>, v: &Value) -> Result<()> {
    match v {
        Value::Null => out.push(0x02),
        Value::Bool(b) => {
            out.push(0x01);
            out.push(*b as u8);
        }
        Value::Int(i) | Value::Timestamp(i) | Value::TimestampTz(i) | Value::Time(i) => {
            out.push(0x01);
            out.extend_from_slice(&((*i as u64) ^ (1 << 63)).to_be_bytes());
        }
        Value::Date(d) => {
            out.push(0x01);
            out.extend_from_slice(&(((*d as i64) as u64) ^ (1 << 63)).to_be_bytes());
        }
        // An enum value by its label's sort order, which is unique within its type.
        Value::Float(f) | Value::Enum(crate::enums::EnumValue { sort: f, .. }) => {
            out.push(0x01);
            let f = if *f == 0.0 { 0.0 } else { *f };
            let bits = f.to_bits();
            let ordered = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
            out.extend_from_slice(&ordered.to_be_bytes());
        }
        Value::Text(s) => {
            out.push(0x01);
            encode_bytes(out, s.as_bytes());
        }
        Value::Bytea(b) => {
            out.push(0x01);
            encode_bytes(out, b);
        }
        Value::Uuid(u) => {
            out.push(0x01);
            out.extend_from_slice(u);
        }
        // PostgreSQL's order (family, network, mask length, address); a family's keys are
        // all of one length.
        Value::Inet(a) => {
            out.push(0x01);
            out.extend_from_slice(&a.key());
        }
        Value::Interval(iv) => {
            // Its span (a month as 30 days), as PostgreSQL compares: '1 mon' = '30 days'.
            out.push(0x01);
            out.extend_from_slice(&((iv.span() as u128) ^ (1 << 127)).to_be_bytes());
        }
        Value::Numeric(d) => {
            out.push(0x01);
            encode_decimal(out, d);
        }
        Value::Array(items) => {
            // Each element behind a 0x01, then 0x00: element order, then the shorter first.
            out.push(0x01);
            for item in items {
                out.push(0x01);
                encode_key_value(out, item)?;
            }
            out.push(0x00);
        }
    }
    Ok(())
}

/// Order-preserving numeric: a sign byte (0 negative, 1 zero, 2 positive), then for
/// 0.DIGITS × 10^EXP the exponent and the digits (each digit + 1) ended by 0; negatives
/// complement every byte after the sign (and end with 0xFF), so larger magnitudes sort
/// first. The exponent is a u16 biased by 0x8000 when within ±0x3FFF (every exponent below
/// zero a numeric can have), else 0xC000 and the exponent as a big-endian u32 — which sorts
/// after every smaller exponent.
fn encode_decimal(out: &mut Vec<u8>, d: &Numeric) {
    if d.is_zero() {
        out.push(1);
        return;
    }
    let negative = d.is_negative();
    let text = d.abs().normalized().to_string();
    let (int, frac) = text.split_once('.').unwrap_or((text.as_str(), ""));
    let int = int.trim_start_matches('0');
    let (exp, digits): (i64, String) = if int.is_empty() {
        let zeros = frac.len() - frac.trim_start_matches('0').len();
        (-(zeros as i64), frac.trim_start_matches('0').to_string())
    } else {
        (int.len() as i64, format!("{int}{frac}"))
    };
    let digits = digits.trim_end_matches('0');
    let mut body = Vec::with_capacity(digits.len() + 7);
    if exp.abs() <= 0x3FFF {
        body.extend_from_slice(&((exp + 0x8000) as u16).to_be_bytes());
    } else {
        body.extend_from_slice(&0xC000u16.to_be_bytes());
        body.extend_from_slice(&(exp as u32).to_be_bytes());
    }
    body.extend(digits.bytes().map(|b| b - b'0' + 1));
    body.push(0);
    if negative {
        out.push(0);
        out.extend(body.iter().map(|b| !b));
    } else {
        out.push(2);
        out.extend_from_slice(&body);
    }
}

fn encode_bytes(out: &mut Vec<u8>, b: &[u8]) {
    for &byte in b {
        if byte == 0 {
            out.extend_from_slice(&[0, 0xFF]);
        } else {
            out.push(byte);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// Encodes a key of several values.
pub fn encode_key(values: &[&Value]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(values.len() * 9);
    for v in values {
        encode_key_value(&mut out, v)?;
    }
    Ok(out)
}

/// The smallest key greater than every key starting with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

const T_NULL: u8 = 0;
const T_FALSE: u8 = 1;
const T_TRUE: u8 = 2;
const T_INT: u8 = 3;
const T_FLOAT: u8 = 4;
/// numeric as versions before arbitrary precision stored it (read, never written).
const T_NUMERIC_LEGACY: u8 = 5;
const T_TEXT: u8 = 6;
const T_BYTEA: u8 = 7;
const T_DATE: u8 = 8;
const T_TIMESTAMP: u8 = 9;
const T_TIMESTAMPTZ: u8 = 10;
const T_ARRAY: u8 = 11;
const T_UUID: u8 = 12;
const T_TIME: u8 = 13;
const T_INTERVAL: u8 = 14;
const T_ENUM: u8 = 15;
const T_NUMERIC: u8 = 16;
/// inet / cidr: IPv6 (1) or IPv4 (0), the mask length, cidr (1) or inet (0), the address's
/// 4 or 16 bytes.
const T_INET: u8 = 17;

/// Encodes a row.
pub fn encode_row(values: &[Value]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + values.len() * 9);
    out.extend_from_slice(&(values.len() as u16).to_le_bytes());
    for v in values {
        encode_value(&mut out, v);
    }
    out
}

/// One tagged value of a row (arrays: a count and their tagged elements).
fn encode_value(out: &mut Vec<u8>, v: &Value) {
    {
        match v {
            Value::Null => out.push(T_NULL),
            Value::Bool(false) => out.push(T_FALSE),
            Value::Bool(true) => out.push(T_TRUE),
            Value::Int(i) => {
                out.push(T_INT);
                out.extend_from_slice(&i.to_le_bytes());
            }
            Value::Float(f) => {
                out.push(T_FLOAT);
                out.extend_from_slice(&f.to_le_bytes());
            }
            Value::Numeric(d) => {
                out.push(T_NUMERIC);
                d.encode(out);
            }
            Value::Text(s) => {
                out.push(T_TEXT);
                put_bytes(out, s.as_bytes());
            }
            Value::Bytea(b) => {
                out.push(T_BYTEA);
                put_bytes(out, b);
            }
            Value::Uuid(u) => {
                out.push(T_UUID);
                out.extend_from_slice(u);
            }
            Value::Inet(a) => {
                out.push(T_INET);
                out.extend_from_slice(&[a.v6 as u8, a.bits, a.cidr as u8]);
                out.extend_from_slice(a.bytes());
            }
            Value::Time(t) => {
                out.push(T_TIME);
                out.extend_from_slice(&t.to_le_bytes());
            }
            Value::Interval(iv) => {
                out.push(T_INTERVAL);
                out.extend_from_slice(&iv.months.to_le_bytes());
                out.extend_from_slice(&iv.days.to_le_bytes());
                out.extend_from_slice(&iv.micros.to_le_bytes());
            }
            Value::Date(d) => {
                out.push(T_DATE);
                out.extend_from_slice(&d.to_le_bytes());
            }
            Value::Timestamp(t) => {
                out.push(T_TIMESTAMP);
                out.extend_from_slice(&t.to_le_bytes());
            }
            Value::TimestampTz(t) => {
                out.push(T_TIMESTAMPTZ);
                out.extend_from_slice(&t.to_le_bytes());
            }
            Value::Enum(e) => {
                out.push(T_ENUM);
                out.extend_from_slice(&e.sort.to_le_bytes());
                put_bytes(out, e.label.as_bytes());
            }
            Value::Array(items) => {
                out.push(T_ARRAY);
                out.extend_from_slice(&(items.len() as u32).to_le_bytes());
                for item in items {
                    encode_value(out, item);
                }
            }
        }
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn corrupt() -> SqlError {
    SqlError::new(code::DATA_CORRUPTED, "a stored row could not be decoded")
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() < n {
            return Err(corrupt());
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        self.take(N)?.try_into().map_err(|_| corrupt())
    }
}

/// Decodes a row of `width` columns (missing trailing columns are NULL).
pub fn decode_row(buf: &[u8], width: usize) -> Result<Vec<Value>> {
    let mut r = Reader { buf };
    let count = u16::from_le_bytes(r.array()?) as usize;
    let mut out = Vec::with_capacity(width.max(count));
    for _ in 0..count {
        out.push(r.value(0)?);
    }
    out.resize(width.max(count), Value::Null);
    out.truncate(width);
    Ok(out)
}

impl Reader<'_> {
    /// One tagged value; `depth` counts enclosing arrays (stored arrays have one level).
    fn value(&mut self, depth: usize) -> Result<Value> {
        let r = self;
        let tag = r.take(1)?[0];
        Ok(match tag {
            T_NULL => Value::Null,
            T_FALSE => Value::Bool(false),
            T_TRUE => Value::Bool(true),
            T_INT => Value::Int(i64::from_le_bytes(r.array()?)),
            T_FLOAT => Value::Float(f64::from_le_bytes(r.array()?)),
            T_NUMERIC => {
                let scale = u16::from_le_bytes(r.array()?);
                let len = u32::from_le_bytes(r.array()?) as usize;
                Value::Numeric(Numeric::decode(scale, r.take(len)?).ok_or_else(corrupt)?)
            }
            T_NUMERIC_LEGACY => {
                Value::Numeric(Numeric::decode_legacy(r.array()?).ok_or_else(corrupt)?)
            }
            T_UUID => Value::Uuid(r.array()?),
            T_INET => {
                let [v6, bits, cidr] = r.array()?;
                let mut addr = [0u8; 16];
                let len = if v6 == 1 { 16 } else { 4 };
                addr[..len].copy_from_slice(r.take(len)?);
                if bits > if v6 == 1 { 128 } else { 32 } {
                    return Err(corrupt());
                }
                Value::Inet(crate::inet::Inet { v6: v6 == 1, bits, addr, cidr: cidr == 1 })
            }
            T_TIME => Value::Time(i64::from_le_bytes(r.array()?)),
            T_INTERVAL => Value::Interval(crate::interval::Interval {
                months: i32::from_le_bytes(r.array()?),
                days: i32::from_le_bytes(r.array()?),
                micros: i64::from_le_bytes(r.array()?),
            }),
            T_TEXT | T_BYTEA => {
                let len = u32::from_le_bytes(r.array()?) as usize;
                let bytes = r.take(len)?;
                if tag == T_TEXT {
                    Value::Text(String::from_utf8(bytes.to_vec()).map_err(|_| corrupt())?)
                } else {
                    Value::Bytea(bytes.to_vec())
                }
            }
            T_DATE => Value::Date(i32::from_le_bytes(r.array()?)),
            T_ENUM => {
                let sort = f64::from_le_bytes(r.array()?);
                let len = u32::from_le_bytes(r.array()?) as usize;
                let label = String::from_utf8(r.take(len)?.to_vec()).map_err(|_| corrupt())?;
                Value::Enum(crate::enums::EnumValue { sort, label })
            }
            T_TIMESTAMP => Value::Timestamp(i64::from_le_bytes(r.array()?)),
            T_TIMESTAMPTZ => Value::TimestampTz(i64::from_le_bytes(r.array()?)),
            T_ARRAY if depth == 0 => {
                let n = u32::from_le_bytes(r.array()?) as usize;
                // Every element takes at least one byte.
                if n > r.buf.len() {
                    return Err(corrupt());
                }
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(r.value(depth + 1)?);
                }
                Value::Array(items)
            }
            _ => return Err(corrupt()),
        })
    }
}

/// Whether `ty` may be part of a key (every type Kiln has may).
pub fn key_type_supported(_ty: DataType) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_is_value_order() {
        let values = [
            Value::Int(i64::MIN),
            Value::Int(-5),
            Value::Int(0),
            Value::Int(7),
            Value::Int(i64::MAX),
            Value::Null,
        ];
        let keys: Vec<Vec<u8>> = values.iter().map(|v| encode_key(&[v]).unwrap()).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        let floats = [f64::NEG_INFINITY, -1.5, -0.0, 0.0, 1e-9, 2.5, f64::INFINITY];
        let keys: Vec<Vec<u8>> =
            floats.iter().map(|f| encode_key(&[&Value::Float(*f)]).unwrap()).collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]), "{keys:?}");
        let texts = ["", "a", "a\0", "a\0b", "ab", "b"];
        let keys: Vec<Vec<u8>> =
            texts.iter().map(|t| encode_key(&[&Value::Text(t.to_string())]).unwrap()).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        let decimals = [
            "-1e40000",
            "-1e16384",
            "-1e40",
            "-1000",
            "-12.5",
            "-12.34",
            "-0.5",
            "-0.05",
            "-1e-16000",
            "0",
            "1e-16383",
            "0.001",
            "0.1",
            "0.12",
            "1",
            "1.5",
            "10",
            "99.99",
            "100",
            "123456789012345678901234567890.5",
            "1e16383",
            "1e16384",
            "2e16384",
            "1e40000",
        ];
        let keys: Vec<Vec<u8>> = decimals
            .iter()
            .map(|t| encode_key(&[&Value::Numeric(t.parse().unwrap())]).unwrap())
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        // Equal values at different scales are one key.
        let a = encode_key(&[&Value::Numeric("1.50".parse().unwrap())]).unwrap();
        let b = encode_key(&[&Value::Numeric("1.5".parse().unwrap())]).unwrap();
        assert_eq!(a, b);
        // Composite keys: ("a", 2) < ("ab", 1): the terminator keeps components apart.
        let arrays = [
            Value::Array(vec![]),
            Value::Array(vec![Value::Int(1)]),
            Value::Array(vec![Value::Int(1), Value::Int(2)]),
            Value::Array(vec![Value::Int(1), Value::Null]),
            Value::Array(vec![Value::Int(2)]),
        ];
        let keys: Vec<Vec<u8>> = arrays.iter().map(|a| encode_key(&[a]).unwrap()).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        for w in arrays.windows(2) {
            assert_eq!(w[0].total_cmp(&w[1]), std::cmp::Ordering::Less);
        }
        // uuids: byte order, as PostgreSQL compares them.
        let uuids = [[0u8; 16], [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [255; 16]];
        let keys: Vec<Vec<u8>> =
            uuids.iter().map(|u| encode_key(&[&Value::Uuid(*u)]).unwrap()).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        let a2 = encode_key(&[&Value::Text("a".into()), &Value::Int(2)]).unwrap();
        let ab1 = encode_key(&[&Value::Text("ab".into()), &Value::Int(1)]).unwrap();
        assert!(a2 < ab1);
    }

    #[test]
    fn legacy_numerics_still_read() {
        // Rows written before numeric held arbitrary precision: tag 5, rust_decimal's bytes.
        for text in
            ["0", "-12.50", "79228162514264337593543950335", "0.0000000000000000000000000001"]
        {
            let d: rust_decimal::Decimal = text.parse().unwrap();
            let mut row = 1u16.to_le_bytes().to_vec();
            row.push(T_NUMERIC_LEGACY);
            row.extend_from_slice(&d.serialize());
            let back = decode_row(&row, 1).unwrap();
            assert_eq!(back, vec![Value::Numeric(text.parse().unwrap())]);
            let Value::Numeric(n) = &back[0] else { unreachable!() };
            assert_eq!(n.to_string(), text);
        }
    }

    #[test]
    fn rows_round_trip() {
        let row = vec![
            Value::Null,
            Value::Bool(true),
            Value::Int(-3),
            Value::Float(2.5),
            Value::Numeric("123.45".parse().unwrap()),
            Value::Numeric("-1e-40".parse().unwrap()),
            Value::Numeric("123456789012345678901234567890.123456789".parse().unwrap()),
            Value::Text("héllo".into()),
            Value::Bytea(vec![0, 1, 255]),
            Value::Date(-10),
            Value::Timestamp(123),
            Value::TimestampTz(-456),
            Value::Array(vec![Value::Int(1), Value::Null, Value::Text("x".into())]),
            Value::Array(vec![]),
            Value::Uuid([7; 16]),
            Value::Time(45_296_000_001),
            Value::Interval(crate::interval::Interval { months: -14, days: 3, micros: i64::MIN }),
        ];
        let bytes = encode_row(&row);
        assert_eq!(decode_row(&bytes, row.len()).unwrap(), row);
        assert_eq!(decode_row(&bytes, 2).unwrap(), row[..2].to_vec());
        assert!(decode_row(&bytes[..bytes.len() - 1], row.len()).is_err());
    }
}
