//! Values on the wire: PostgreSQL's text and binary formats of each type.

use bytes::{Bytes, BytesMut};
use kiln_sql::numeric::{self, Numeric};
use kiln_sql::style::Style;
use kiln_sql::{code, DataType, SqlError, Value};
use postgres_types::{FromSql, ToSql, Type};

/// Days between 1970-01-01 and 2000-01-01 (PostgreSQL's binary epoch).
const PG_EPOCH_DAYS: i32 = 10_957;
/// Microseconds between the Unix epoch and 2000-01-01.
const PG_EPOCH_MICROS: i64 = PG_EPOCH_DAYS as i64 * 86_400_000_000;

/// Days since 2000-01-01, as the binary format counts them (the infinities are the extreme
/// values in both forms).
fn to_pg_days(d: i32) -> i32 {
    if d == i32::MAX || d == i32::MIN {
        d
    } else {
        d - PG_EPOCH_DAYS
    }
}

fn from_pg_days(d: i32) -> i32 {
    if d == i32::MAX || d == i32::MIN {
        d
    } else {
        d.saturating_add(PG_EPOCH_DAYS)
    }
}

/// Microseconds since 2000-01-01, likewise.
fn to_pg_micros(t: i64) -> i64 {
    if t == i64::MAX || t == i64::MIN {
        t
    } else {
        t - PG_EPOCH_MICROS
    }
}

fn from_pg_micros(t: i64) -> i64 {
    if t == i64::MAX || t == i64::MIN {
        t
    } else {
        t.saturating_add(PG_EPOCH_MICROS)
    }
}

fn bad_binary(ty: DataType) -> SqlError {
    SqlError::new(
        "22P03",
        format!("incorrect binary data format in bind parameter of type {}", ty.sql_name()),
    )
}

/// Decodes a parameter sent in `format` (0 text, 1 binary) as type `ty`; a timestamp with
/// time zone in text without an offset is a local time in the `style`'s zone (binary forms are
/// instants).
pub fn decode_param(
    raw: Option<&Bytes>,
    format: i16,
    ty: DataType,
    style: Style,
) -> Result<Value, SqlError> {
    let Some(raw) = raw else { return Ok(Value::Null) };
    if format == 0 {
        let text = std::str::from_utf8(raw).map_err(|_| {
            SqlError::new(code::BAD_ENCODING, "invalid byte sequence for encoding \"UTF8\"")
        })?;
        return Value::parse_in(text, ty, style);
    }
    let b = raw.as_ref();
    let v = match ty {
        DataType::Bool => Value::Bool(bool::from_sql(&Type::BOOL, b).map_err(|_| bad_binary(ty))?),
        DataType::Int2 => {
            Value::Int(i16::from_sql(&Type::INT2, b).map_err(|_| bad_binary(ty))? as i64)
        }
        DataType::Int4 => {
            Value::Int(i32::from_sql(&Type::INT4, b).map_err(|_| bad_binary(ty))? as i64)
        }
        DataType::Int8 => Value::Int(i64::from_sql(&Type::INT8, b).map_err(|_| bad_binary(ty))?),
        DataType::Oid => {
            Value::Int(u32::from_sql(&Type::OID, b).map_err(|_| bad_binary(ty))?.into())
        }
        DataType::Float4 => {
            Value::Float(f32::from_sql(&Type::FLOAT4, b).map_err(|_| bad_binary(ty))? as f64)
        }
        DataType::Float8 => {
            Value::Float(f64::from_sql(&Type::FLOAT8, b).map_err(|_| bad_binary(ty))?)
        }
        DataType::Numeric(_) => {
            Value::Numeric(Numeric::from_pg_binary(b).map_err(|e| match e {
                numeric::ParseError::Overflow => numeric::overflow(),
                numeric::ParseError::Special => SqlError::unsupported(
                    "a numeric NaN or infinity (Kiln's numeric holds neither)",
                ),
                numeric::ParseError::Syntax => bad_binary(ty),
            })?)
        }
        // An enum value's binary form is its label, as text's.
        DataType::Text
        | DataType::Varchar(_)
        | DataType::Char(_)
        | DataType::Unknown
        | DataType::Name
        | DataType::PgChar
        | DataType::Enum(_) => {
            let s = std::str::from_utf8(b).map_err(|_| {
                SqlError::new(code::BAD_ENCODING, "invalid byte sequence for encoding \"UTF8\"")
            })?;
            Value::parse(s, ty)?
        }
        // json's binary form is its text; jsonb's a version byte (1) and its text.
        DataType::Json | DataType::Jsonb => {
            let text = match (ty, b.split_first()) {
                (DataType::Json, _) => b,
                (_, Some((1, rest))) => rest,
                _ => return Err(bad_binary(ty)),
            };
            let s = std::str::from_utf8(text).map_err(|_| {
                SqlError::new(code::BAD_ENCODING, "invalid byte sequence for encoding \"UTF8\"")
            })?;
            Value::parse(s, ty)?
        }
        DataType::Bytea => Value::Bytea(b.to_vec()),
        DataType::Uuid => Value::Uuid(b.try_into().map_err(|_| bad_binary(ty))?),
        DataType::TsVector => Value::Text(
            kiln_sql::textsearch::TsVector::from_binary(b).ok_or_else(|| bad_binary(ty))?.to_text(),
        ),
        DataType::TsQuery => Value::Text(
            kiln_sql::textsearch::TsQuery::from_binary(b).ok_or_else(|| bad_binary(ty))?.to_text(),
        ),
        DataType::RegConfig => {
            let oid = u32::from_sql(&Type::OID, b).map_err(|_| bad_binary(ty))?;
            kiln_sql::textsearch::call(
                kiln_sql::expr::TsFunc::Config,
                &[Value::Int(oid.into())],
                Default::default(),
                &mut |_| {},
            )?
        }
        DataType::Inet | DataType::Cidr => Value::Inet(
            kiln_sql::inet::Inet::from_binary(b, ty == DataType::Cidr)
                .ok_or_else(|| bad_binary(ty))?,
        ),
        DataType::Time(_) => {
            let t = i64::from_sql(&Type::INT8, b).map_err(|_| bad_binary(ty))?;
            if !(0..=kiln_sql::types::MICROS_PER_DAY).contains(&t) {
                return Err(bad_binary(ty));
            }
            Value::Time(t)
        }
        // Microseconds, days, months, each big-endian.
        DataType::Interval(_) => {
            let b: &[u8; 16] = b.try_into().map_err(|_| bad_binary(ty))?;
            let (micros, rest) = b.split_at(8);
            let (days, months) = rest.split_at(4);
            Value::Interval(kiln_sql::interval::Interval {
                micros: i64::from_be_bytes(micros.try_into().map_err(|_| bad_binary(ty))?),
                days: i32::from_be_bytes(days.try_into().map_err(|_| bad_binary(ty))?),
                months: i32::from_be_bytes(months.try_into().map_err(|_| bad_binary(ty))?),
            })
        }
        DataType::Date => {
            Value::Date(from_pg_days(i32::from_sql(&Type::INT4, b).map_err(|_| bad_binary(ty))?))
        }
        DataType::Timestamp(_) => Value::Timestamp(from_pg_micros(
            i64::from_sql(&Type::INT8, b).map_err(|_| bad_binary(ty))?,
        )),
        DataType::TimestampTz(_) => Value::TimestampTz(from_pg_micros(
            i64::from_sql(&Type::INT8, b).map_err(|_| bad_binary(ty))?,
        )),
        DataType::Array(_) | DataType::Int2Vector | DataType::OidVector => {
            decode_array(b, ty).ok_or_else(|| bad_binary(ty))??
        }
        DataType::ExpandedElement(_) => {
            return Err(SqlError::unsupported("a record parameter"));
        }
    };
    // Values arrive typed; fit them to the parameter's type (e.g. varchar(n)).
    v.cast_in(ty, style)
}

/// PostgreSQL's binary array: dimensions, a has-NULL flag, the element type OID, then per
/// dimension its length and lower bound, then each element as a length (-1: NULL) and its
/// binary form. `None` when the bytes are malformed; an element that does not decode is
/// the inner error.
fn decode_array(b: &[u8], ty: DataType) -> Option<Result<Value, SqlError>> {
    let elem = ty.element()?;
    let mut r = b;
    let mut int = || -> Option<i32> {
        let (head, tail) = r.split_first_chunk::<4>()?;
        r = tail;
        Some(i32::from_be_bytes(*head))
    };
    let ndim = int()?;
    let _has_null = int()?;
    let _elem_oid = int()?;
    let len = match ndim {
        0 => 0,
        1 => {
            let len = int()?;
            let _lower = int()?;
            usize::try_from(len).ok()?
        }
        _ => return Some(Err(SqlError::unsupported("multi-dimensional array parameters"))),
    };
    if let Err(e) = kiln_sql::array::check_len(len) {
        return Some(Err(e));
    }
    let mut items = Vec::with_capacity(len.min(r.len() / 4));
    for _ in 0..len {
        let (head, tail) = r.split_first_chunk::<4>()?;
        let n = i32::from_be_bytes(*head);
        r = tail;
        if n < 0 {
            items.push(Value::Null);
            continue;
        }
        let n = n as usize;
        if n > r.len() {
            return None;
        }
        let raw = Bytes::copy_from_slice(&r[..n]);
        r = &r[n..];
        // oids are 4 bytes (Kiln holds them as bigint).
        let elem = if ty == DataType::OidVector { DataType::Int4 } else { elem };
        match decode_param(Some(&raw), 1, elem, Style::DEFAULT) {
            Ok(v) => items.push(v),
            Err(e) => return Some(Err(e)),
        }
    }
    if !r.is_empty() {
        return None;
    }
    Some(Ok(Value::Array(items)))
}

/// Encodes a result value in `format` (0 text, 1 binary) as type `ty`; `None` is NULL. In
/// text values are written in the session's `style` (binary forms are instants).
pub fn encode_value(
    v: &Value,
    format: i16,
    ty: DataType,
    style: Style,
) -> Result<Option<Bytes>, SqlError> {
    if v.is_null() {
        return Ok(None);
    }
    if format == 0 {
        return Ok(v.to_text_in(ty, style).map(Bytes::from));
    }
    let mut buf = BytesMut::new();
    let err = |_| {
        SqlError::new(
            code::INTERNAL,
            format!("cannot encode a value of type {} in binary", ty.sql_name()),
        )
    };
    // Convert to the declared type first (an integer column computed as i64, say).
    let v = match v.clone().cast_in(ty, style) {
        Ok(v) => v,
        Err(_) => v.clone(),
    };
    match (&v, ty) {
        (_, DataType::ExpandedElement(_)) => {
            return Err(SqlError::unsupported("a record in binary format"));
        }
        (Value::Array(items), _) => {
            let elem = ty.element().unwrap_or_else(|| kiln_sql::array::natural_element(items));
            let elem_oid = match ty {
                DataType::Int2Vector => 21,
                DataType::OidVector => 26,
                _ => elem.oid(),
            };
            let lower: i32 =
                if ty.element().is_some() && !matches!(ty, DataType::Array(_)) { 0 } else { 1 };
            let has_null = items.iter().any(Value::is_null);
            buf.extend_from_slice(&(i32::from(!items.is_empty())).to_be_bytes());
            buf.extend_from_slice(&i32::from(has_null).to_be_bytes());
            buf.extend_from_slice(&elem_oid.to_be_bytes());
            if !items.is_empty() {
                buf.extend_from_slice(&(items.len() as i32).to_be_bytes());
                buf.extend_from_slice(&lower.to_be_bytes());
            }
            for item in items {
                let bytes = match (item, ty) {
                    // oids are 4 bytes (Kiln holds them as bigint).
                    (Value::Int(i), DataType::OidVector) => {
                        Some(Bytes::copy_from_slice(&(*i as u32).to_be_bytes()))
                    }
                    _ => encode_value(item, 1, elem, style)?,
                };
                match bytes {
                    None => buf.extend_from_slice(&(-1i32).to_be_bytes()),
                    Some(bytes) => {
                        buf.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                        buf.extend_from_slice(&bytes);
                    }
                }
            }
            postgres_types::IsNull::No
        }
        (Value::Bool(b), _) => b.to_sql(&Type::BOOL, &mut buf).map_err(err)?,
        (Value::Int(i), DataType::Int2) => {
            (*i as i16).to_sql(&Type::INT2, &mut buf).map_err(err)?
        }
        (Value::Int(i), DataType::Int4) => {
            (*i as i32).to_sql(&Type::INT4, &mut buf).map_err(err)?
        }
        (Value::Int(i), DataType::Oid) => (*i as u32).to_sql(&Type::OID, &mut buf).map_err(err)?,
        (Value::Int(i), _) => i.to_sql(&Type::INT8, &mut buf).map_err(err)?,
        (Value::Float(f), DataType::Float4) => {
            (*f as f32).to_sql(&Type::FLOAT4, &mut buf).map_err(err)?
        }
        (Value::Float(f), _) => f.to_sql(&Type::FLOAT8, &mut buf).map_err(err)?,
        (Value::Numeric(d), _) => {
            buf.extend_from_slice(&d.to_pg_binary());
            postgres_types::IsNull::No
        }
        (Value::Text(s), DataType::TsVector) => {
            let v = kiln_sql::textsearch::TsVector::parse(s)?;
            return Ok(Some(Bytes::from(v.to_binary())));
        }
        (Value::Text(s), DataType::TsQuery) => {
            let q = kiln_sql::textsearch::TsQuery::parse(s, &mut |_| {})?;
            return Ok(Some(Bytes::from(q.to_binary())));
        }
        (Value::Text(s), DataType::RegConfig) => {
            let i = kiln_sql::textsearch::config_index(s)?;
            kiln_sql::textsearch::CONFIGS[i].oid.to_sql(&Type::OID, &mut buf).map_err(err)?
        }
        (Value::Text(s), DataType::Jsonb) => {
            let mut out = Vec::with_capacity(s.len() + 1);
            out.push(1);
            out.extend_from_slice(s.as_bytes());
            return Ok(Some(Bytes::from(out)));
        }
        (Value::Text(_) | Value::Enum(_), _) => {
            return Ok(v.to_text_in(ty, style).map(Bytes::from))
        }
        (Value::Bytea(b), _) => return Ok(Some(Bytes::from(b.clone()))),
        (Value::Uuid(u), _) => return Ok(Some(Bytes::copy_from_slice(u))),
        (Value::Inet(a), _) => return Ok(Some(Bytes::from(a.to_binary()))),
        (Value::Time(t), _) => t.to_sql(&Type::INT8, &mut buf).map_err(err)?,
        (Value::Interval(iv), _) => {
            buf.extend_from_slice(&iv.micros.to_be_bytes());
            buf.extend_from_slice(&iv.days.to_be_bytes());
            buf.extend_from_slice(&iv.months.to_be_bytes());
            postgres_types::IsNull::No
        }
        (Value::Date(d), _) => to_pg_days(*d).to_sql(&Type::INT4, &mut buf).map_err(err)?,
        (Value::Timestamp(t) | Value::TimestampTz(t), _) => {
            to_pg_micros(*t).to_sql(&Type::INT8, &mut buf).map_err(err)?
        }
        (Value::Null, _) => return Ok(None),
    };
    Ok(Some(buf.freeze()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_round_trips() {
        let cases = [
            (Value::Bool(true), DataType::Bool),
            (Value::Int(-7), DataType::Int2),
            (Value::Int(1 << 20), DataType::Int4),
            (Value::Int(1 << 40), DataType::Int8),
            (Value::Float(1.5), DataType::Float4),
            (Value::Float(-2.25), DataType::Float8),
            (Value::Numeric("-12.345".parse().unwrap()), DataType::Numeric(None)),
            (
                Value::Numeric(
                    "-123456789012345678901234567890.000000000000000000001".parse().unwrap(),
                ),
                DataType::Numeric(None),
            ),
            (Value::Text("héllo".into()), DataType::Text),
            (Value::Bytea(vec![0, 1, 2]), DataType::Bytea),
            (
                Value::Uuid([0xa0, 0xee, 0xbc, 0x99, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
                DataType::Uuid,
            ),
            (
                Value::Array(vec![Value::Uuid([1; 16]), Value::Null]),
                kiln_sql::array::array_of(DataType::Uuid).unwrap(),
            ),
            (Value::Date(19_000), DataType::Date),
            (Value::Time(45_296_123_456), DataType::Time(None)),
            (
                Value::Interval(kiln_sql::interval::Interval { months: -14, days: 3, micros: -7 }),
                DataType::Interval(None),
            ),
            (Value::Timestamp(1_700_000_000_000_000), DataType::Timestamp(None)),
            (Value::TimestampTz(-5), DataType::TimestampTz(None)),
            (Value::TimestampTz(i64::MAX), DataType::TimestampTz(None)),
            (Value::Timestamp(i64::MIN), DataType::Timestamp(None)),
            (Value::Date(i32::MIN), DataType::Date),
            (
                Value::Array(vec![Value::Int(1), Value::Null, Value::Int(-3)]),
                kiln_sql::array::array_of(DataType::Int4).unwrap(),
            ),
            (
                Value::Array(vec![Value::Text("a b".into()), Value::Text("{,}".into())]),
                kiln_sql::array::array_of(DataType::Text).unwrap(),
            ),
            (Value::Array(vec![]), kiln_sql::array::array_of(DataType::Int8).unwrap()),
            (Value::Array(vec![Value::Int(1), Value::Int(2)]), DataType::Int2Vector),
            (Value::Array(vec![Value::Int(23), Value::Int(25)]), DataType::OidVector),
        ];
        for (v, ty) in cases {
            let bytes = encode_value(&v, 1, ty, Style::DEFAULT).unwrap().unwrap();
            assert_eq!(decode_param(Some(&bytes), 1, ty, Style::DEFAULT).unwrap(), v, "{ty:?}");
            let text = encode_value(&v, 0, ty, Style::DEFAULT).unwrap().unwrap();
            assert_eq!(
                decode_param(Some(&text), 0, ty, Style::DEFAULT).unwrap(),
                v,
                "{ty:?} as text"
            );
        }
        assert_eq!(decode_param(None, 1, DataType::Int4, Style::DEFAULT).unwrap(), Value::Null);
        assert!(decode_param(
            Some(&Bytes::from_static(&[1, 2, 3])),
            1,
            DataType::Int4,
            Style::DEFAULT
        )
        .is_err());
        assert!(decode_param(
            Some(&Bytes::from_static(&[1; 15])),
            1,
            DataType::Uuid,
            Style::DEFAULT
        )
        .is_err());
    }

    /// A numeric keeps its scale in binary, zero too (`0.00` is not `0` to a client).
    #[test]
    fn numeric_binary_keeps_scale() {
        for text in [
            "0.00",
            "0",
            "-1.50",
            "12345678.000100",
            "0.0000001",
            "0.0000000000000000000000000000000000000001",
            "-9000000000000000000000000000000000000000000000",
        ] {
            let v = Value::Numeric(text.parse().unwrap());
            let bytes =
                encode_value(&v, 1, DataType::Numeric(None), Style::DEFAULT).unwrap().unwrap();
            let dscale = u16::from_be_bytes([bytes[6], bytes[7]]);
            assert_eq!(usize::from(dscale), text.split_once('.').map_or(0, |(_, f)| f.len()));
            let back =
                decode_param(Some(&bytes), 1, DataType::Numeric(None), Style::DEFAULT).unwrap();
            let Value::Numeric(d) = back else { panic!("{back:?}") };
            assert_eq!(d.to_string(), text);
        }
    }
}
