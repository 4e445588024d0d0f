//! The implementations of the scalar functions the registry (`crate::functions`) lists, and
//! the array helpers they share. The session's own functions (kiln_*, pg_sleep …) are in
//! `crate::ed`.

use std::cmp::Ordering;

use crate::error::{code, Result, SqlError};
use crate::types::{check_int_range, DataType, Value};

use crate::expr::*;

/// The elements of an array value. A text value (an array in its text form, as older
/// catalogs and untyped operands give) is parsed, its elements left as text.
pub fn array_items(v: Value) -> Result<Vec<Value>> {
    match v {
        Value::Array(items) => Ok(items),
        Value::Null => Ok(vec![]),
        Value::Text(s) => crate::array::parse(&s, DataType::Text, crate::style::Style::DEFAULT),
        other => Err(SqlError::new(
            code::DATATYPE_MISMATCH,
            format!("{} is not an array", other.to_text(DataType::Text).unwrap_or_default()),
        )),
    }
}

fn array_result(items: Vec<Value>) -> Result<Value> {
    crate::array::check_len(items.len())?;
    Ok(Value::Array(items))
}

/// Whether `x` is one of `items` (NULL matches nothing: `@>` and `&&` use plain equality).
fn contains(items: &[Value], x: &Value) -> bool {
    !x.is_null() && items.iter().any(|i| !i.is_null() && i.sql_cmp(x) == Some(Ordering::Equal))
}

/// PostgreSQL's pg_size_pretty: bytes below 10 kB, then kB, MB, GB, TB, PB, each rounded
/// half away from zero.
fn size_pretty(size: i128) -> String {
    const LIMIT: i128 = 10 * 1024;
    if size.abs() < LIMIT {
        return format!("{size} bytes");
    }
    let half = |x: i128| (x + if x < 0 { -1 } else { 1 }) / 2;
    // One extra bit kept for rounding.
    let mut size = size >> 9;
    for unit in ["kB", "MB", "GB", "TB"] {
        if size.abs() < LIMIT * 2 - 1 {
            return format!("{} {unit}", half(size));
        }
        size >>= 10;
    }
    format!("{} PB", half(size))
}

/// A dimension argument of array_upper/lower/length: only 1 exists.
fn first_dimension(items: &[Value], dim: &Value) -> bool {
    !items.is_empty() && matches!(dim, Value::Int(1))
}

/// The largest string an expression may compute (repeat, concatenation …): beyond it, 54000.
pub const TEXT_BYTES_MAX: usize = 64 << 20;

/// 54000 for a computed string past [`TEXT_BYTES_MAX`].
pub(crate) fn too_long() -> SqlError {
    SqlError::new(code::PROGRAM_LIMIT, "requested length too large")
        .detail(format!("A computed string may hold at most {TEXT_BYTES_MAX} bytes."))
}

pub(crate) fn text_arg(v: &Value) -> String {
    v.to_text(DataType::Text).unwrap_or_default()
}

pub(crate) fn call(f: Func, args: Vec<Value>, ctx: &Ctx) -> Result<Value> {
    if args.iter().any(Value::is_null) && crate::functions::of(f).is_some_and(|d| d.strict) {
        return Ok(Value::Null);
    }
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::Null);
    Ok(match f {
        // The C locale (Kiln's collation) changes the case of ASCII letters only.
        Func::Lower => Value::Text(text_arg(&arg(0)).to_ascii_lowercase()),
        Func::Upper => Value::Text(text_arg(&arg(0)).to_ascii_uppercase()),
        // A bytea's length is its number of bytes; a text's, its number of characters.
        Func::Length => match arg(0) {
            Value::Bytea(b) => Value::Int(b.len() as i64),
            v => Value::Int(text_arg(&v).chars().count() as i64),
        },
        Func::OctetLength | Func::BitLength => {
            let bytes = match arg(0) {
                Value::Bytea(b) => b.len(),
                v => text_arg(&v).len(),
            } as i64;
            Value::Int(if f == Func::BitLength { bytes * 8 } else { bytes })
        }
        Func::Abs => match numeric_operand(arg(0))? {
            Value::Int(i) => Value::Int(i.checked_abs().ok_or_else(|| overflow("bigint"))?),
            Value::Float(x) => Value::Float(x.abs()),
            Value::Numeric(d) => Value::Numeric(d.abs()),
            v => return Err(type_error("abs", &v)),
        },
        Func::Power => power(numeric_operand(arg(0))?, numeric_operand(arg(1))?)?,
        Func::Coalesce => unreachable!("coalesce is evaluated lazily"),
        Func::Nullif => {
            let (a, b) = (arg(0), arg(1));
            if !a.is_null() && !b.is_null() && a.sql_cmp(&b) == Some(Ordering::Equal) {
                Value::Null
            } else {
                a
            }
        }
        Func::Greatest | Func::Least => {
            let mut best: Option<Value> = None;
            for v in args.into_iter().filter(|v| !v.is_null()) {
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let ord = v.total_cmp(&b);
                        let take = if f == Func::Greatest {
                            ord == Ordering::Greater
                        } else {
                            ord == Ordering::Less
                        };
                        if take {
                            v
                        } else {
                            b
                        }
                    }
                });
            }
            best.unwrap_or(Value::Null)
        }
        Func::Round | Func::Floor | Func::Ceil => {
            let digits = match arg(1) {
                Value::Int(n) => n,
                _ => 0,
            };
            match numeric_operand(arg(0))? {
                Value::Int(i) => Value::Int(i),
                Value::Float(x) => Value::Float(match f {
                    // round(double precision) is C's rint: halves to even.
                    Func::Round => {
                        let m = 10f64.powi(digits.clamp(-400, 400) as i32);
                        (x * m).round_ties_even() / m
                    }
                    Func::Floor => x.floor(),
                    _ => x.ceil(),
                }),
                Value::Numeric(d) => Value::Numeric(match f {
                    Func::Round => d.round(digits)?,
                    Func::Floor => d.floor(),
                    _ => d.ceil(),
                }),
                v => return Err(type_error("round", &v)),
            }
        }
        Func::Substr => {
            let s: Vec<char> = text_arg(&arg(0)).chars().collect();
            let from = match arg(1) {
                Value::Int(i) => i,
                v => return Err(type_error("substr", &v)),
            };
            let count = match args.get(2) {
                Some(Value::Int(n)) => {
                    if *n < 0 {
                        return Err(SqlError::new(
                            "22011",
                            "negative substring length not allowed",
                        ));
                    }
                    Some(*n)
                }
                _ => None,
            };
            let start = from.max(1);
            let end = match count {
                Some(n) => (from + n).max(start),
                None => i64::MAX,
            };
            let out: String = s
                .iter()
                .enumerate()
                .filter(|(i, _)| (*i as i64 + 1) >= start && ((*i as i64) + 1) < end)
                .map(|(_, c)| *c)
                .collect();
            Value::Text(out)
        }
        Func::Trim => Value::Text(text_arg(&arg(0)).trim_matches(' ').to_string()),
        Func::Btrim | Func::Ltrim | Func::Rtrim => {
            let s = text_arg(&arg(0));
            let chars: Vec<char> =
                if args.len() > 1 { text_arg(&arg(1)).chars().collect() } else { vec![' '] };
            let hit = |c: char| chars.contains(&c);
            Value::Text(
                match f {
                    Func::Btrim => s.trim_matches(hit),
                    Func::Ltrim => s.trim_start_matches(hit),
                    _ => s.trim_end_matches(hit),
                }
                .to_string(),
            )
        }
        Func::Concat => Value::Text(
            args.iter().filter_map(|v| v.to_text_in(DataType::Text, ctx.env.style())).collect(),
        ),
        Func::Repeat => match (&args[0], &args[1]) {
            (Value::Null, _) | (_, Value::Null) => Value::Null,
            (s, Value::Int(n)) => {
                let s = text_arg(s);
                let n = (*n).max(0) as usize;
                if s.len().saturating_mul(n) > TEXT_BYTES_MAX {
                    return Err(too_long());
                }
                Value::Text(s.repeat(n))
            }
            (_, n) => return Err(type_error("repeat", n)),
        },
        Func::Now => Value::TimestampTz(ctx.env.now()),
        Func::LocalTimestamp => Value::Timestamp(ctx.env.zone().to_local(ctx.env.now())),
        Func::LocalTime => Value::Time(
            ctx.env.zone().to_local(ctx.env.now()).rem_euclid(crate::types::MICROS_PER_DAY),
        ),
        Func::Timezone => {
            let [zone, source] = args.as_slice() else {
                return Err(type_error("timezone", &Value::Null));
            };
            let zone = super::datetime::zone_arg(zone)?;
            match source {
                Value::TimestampTz(t) => Value::Timestamp(zone.to_local(*t)),
                Value::Timestamp(t) => Value::TimestampTz(zone.from_local(*t)),
                other => return Err(type_error("timezone", other)),
            }
        }
        Func::Extract | Func::DatePart | Func::DateTrunc => {
            let (field, source, zone) = match args.as_slice() {
                [field, source] => (field, source, ctx.env.zone()),
                [field, source, zone] if f == Func::DateTrunc => {
                    (field, source, super::datetime::zone_arg(zone)?)
                }
                _ => {
                    return Err(SqlError::new(
                        code::UNDEFINED_FUNCTION,
                        "date_part takes two arguments",
                    ))
                }
            };
            let Value::Text(field) = field else {
                return Ok(Value::Null); // a NULL field
            };
            match f {
                Func::DateTrunc => super::datetime::date_trunc(field, source, zone)?,
                _ => super::datetime::extract(field, source, f == Func::DatePart, zone)?,
            }
        }
        Func::ToNumber => match (arg(0).to_text(DataType::Text), arg(1).to_text(DataType::Text)) {
            (Some(input), Some(template)) => super::to_number::to_number(&input, &template)?,
            _ => Value::Null,
        },
        Func::ToChar => match (arg(0), arg(1)) {
            (v, Value::Text(template)) => super::to_char::to_char(&v, &template, ctx.env.zone())?,
            _ => Value::Null,
        },
        Func::Age => {
            let ts = |v: &Value| match v {
                Value::Timestamp(t) | Value::TimestampTz(t) => Ok(*t),
                Value::Date(d) => Ok(crate::types::date_micros(*d)),
                other => Err(type_error("age", other)),
            };
            match args.as_slice() {
                [a, b] => Value::Interval(crate::interval::age(ts(a)?, ts(b)?)?),
                [a] => {
                    // From today's local midnight (the argument is a local time already).
                    let today = ctx.env.zone().to_local(ctx.env.now());
                    let midnight = today.div_euclid(crate::types::MICROS_PER_DAY)
                        * crate::types::MICROS_PER_DAY;
                    Value::Interval(crate::interval::age(midnight, ts(a)?)?)
                }
                _ => return Err(type_error("age", &Value::Null)),
            }
        }
        Func::JustifyDays | Func::JustifyHours | Func::JustifyInterval => match args.first() {
            Some(Value::Interval(iv)) => Value::Interval(match f {
                Func::JustifyDays => iv.justify_days()?,
                Func::JustifyHours => iv.justify_hours()?,
                _ => iv.justify()?,
            }),
            other => return Err(type_error("justify_interval", other.unwrap_or(&Value::Null))),
        },
        Func::MakeInterval => {
            let int = |i: usize| match args.get(i) {
                Some(Value::Int(n)) => Ok(*n as i128),
                other => Err(type_error("make_interval", other.unwrap_or(&Value::Null))),
            };
            let secs = match args.get(6) {
                Some(Value::Float(f)) => *f,
                other => return Err(type_error("make_interval", other.unwrap_or(&Value::Null))),
            };
            let micros = (secs * 1e6).round_ties_even();
            if !micros.is_finite() {
                return Err(crate::interval::out_of_range());
            }
            let months = int(0)? * 12 + int(1)?;
            let days = int(2)? * 7 + int(3)?;
            let micros = int(4)? * crate::interval::MICROS_PER_HOUR as i128
                + int(5)? * crate::interval::MICROS_PER_MINUTE as i128
                + micros as i128;
            Value::Interval(crate::interval::Interval {
                months: i32::try_from(months).map_err(|_| crate::interval::out_of_range())?,
                days: i32::try_from(days).map_err(|_| crate::interval::out_of_range())?,
                micros: i64::try_from(micros).map_err(|_| crate::interval::out_of_range())?,
            })
        }
        Func::CurrentDate => {
            let today = ctx.env.zone().to_local(ctx.env.now());
            Value::Date(today.div_euclid(crate::types::MICROS_PER_DAY) as i32)
        }
        Func::Random => Value::Float(pseudo_random()),
        Func::GenRandomUuid => {
            let bytes: [u8; 16] = rand::random();
            Value::Uuid(uuid::Builder::from_random_bytes(bytes).into_uuid().into_bytes())
        }
        Func::Md5
        | Func::Sha2(_)
        | Func::Digest
        | Func::Hmac
        | Func::GenRandomBytes
        | Func::Crypt
        | Func::GenSalt
        | Func::UuidV1
        | Func::UuidNameBased(_)
        | Func::UuidNil
        | Func::Encode
        | Func::Decode
        | Func::UuidNs(_) => crate::expr::crypto::call(f, &args, ctx.env.now())?,
        Func::Version => Value::Text(crate::VERSION_STRING.to_string()),
        Func::CurrentDatabase => Value::Text(ctx.env.database()),
        // The first schema of the search path that exists.
        Func::CurrentSchema => Value::Text(
            crate::bind::search::current_schemas().into_iter().next().unwrap_or("public".into()),
        ),
        Func::CurrentUser => Value::Text(ctx.env.user()),
        Func::BackendPid => Value::Int(ctx.env.backend_pid() as i64),
        Func::StartTime
        | Func::InetEnd(..)
        | Func::TxidCurrent
        | Func::KilnSync
        | Func::KilnPersist
        | Func::KilnLastTxid
        | Func::LastVal
        | Func::KilnTxnStatus
        | Func::KilnTxnLevels
        | Func::KilnClusterAddNode
        | Func::KilnClusterRemoveNode
        | Func::KilnWait
        | Func::KilnFaultFailSyncs
        | Func::KilnFaultPanic
        | Func::KilnFaultDiskFull
        | Func::CancelBackend
        | Func::TerminateBackend
        | Func::Advisory(..)
        | Func::PgNotify
        | Func::IsInRecovery
        | Func::SetConfig
        | Func::CurrentSetting
        | Func::Sleep => ctx.env.kiln(f, &args)?,
        Func::Catalog(c) => ctx.env.catalog(c, &args)?,
        Func::Str(s) => super::strings::eval(s, &args, ctx.env.style())?,
        Func::Math(m) => super::strings::eval_math(m, &args)?,
        Func::Time(TimeFunc::ClockTimestamp) => Value::TimestampTz(crate::types::now_micros()),
        Func::Time(t) => super::dates::eval(t, &args, ctx.env.zone(), ctx.env.now())?,
        Func::ArrayToString => {
            let items = array_items(arg(0))?;
            let sep = text_arg(&arg(1));
            let null = args.get(2).filter(|v| !v.is_null()).map(text_arg);
            let mut out = String::new();
            let mut first = true;
            for item in &items {
                let text = match (item.to_text_in(DataType::Text, ctx.env.style()), &null) {
                    (Some(t), _) => t,
                    (None, Some(n)) => n.clone(),
                    (None, None) => continue,
                };
                if !first {
                    out.push_str(&sep);
                }
                first = false;
                if out.len() + text.len() > TEXT_BYTES_MAX {
                    return Err(too_long());
                }
                out.push_str(&text);
            }
            Value::Text(out)
        }
        Func::StringToArray => {
            let (s, sep) = (arg(0), arg(1));
            if s.is_null() {
                return Ok(Value::Null);
            }
            let s = text_arg(&s);
            let null = args.get(2).filter(|v| !v.is_null()).map(text_arg);
            // The element count is checked before the elements are built.
            let parts: Vec<String> = match sep {
                _ if s.is_empty() => vec![],
                Value::Null => {
                    crate::array::check_len(s.chars().count())?;
                    s.chars().map(String::from).collect()
                }
                sep => {
                    let sep = text_arg(&sep);
                    if sep.is_empty() {
                        vec![s]
                    } else {
                        crate::array::check_len(s.matches(sep.as_str()).count() + 1)?;
                        s.split(sep.as_str()).map(String::from).collect()
                    }
                }
            };
            array_result(
                parts
                    .into_iter()
                    .map(|p| if Some(&p) == null.as_ref() { Value::Null } else { Value::Text(p) })
                    .collect(),
            )?
        }
        Func::ArrayUpper | Func::ArrayLength => {
            let items = array_items(arg(0))?;
            if first_dimension(&items, &arg(1)) {
                Value::Int(items.len() as i64)
            } else {
                Value::Null
            }
        }
        Func::ArrayLower => {
            let items = array_items(arg(0))?;
            if first_dimension(&items, &arg(1)) {
                Value::Int(1)
            } else {
                Value::Null
            }
        }
        Func::ArrayNdims => {
            let items = array_items(arg(0))?;
            if items.is_empty() {
                Value::Null
            } else {
                Value::Int(1)
            }
        }
        Func::ArrayDims => {
            let items = array_items(arg(0))?;
            if items.is_empty() {
                Value::Null
            } else {
                Value::Text(format!("[1:{}]", items.len()))
            }
        }
        Func::Cardinality => Value::Int(array_items(arg(0))?.len() as i64),
        Func::ArrayPosition => {
            if arg(0).is_null() {
                return Ok(Value::Null);
            }
            let want = arg(1);
            // IS NOT DISTINCT FROM: array_position finds a NULL too.
            let hit =
                array_items(arg(0))?.iter().position(|i| match (i.is_null(), want.is_null()) {
                    (true, true) => true,
                    (false, false) => i.sql_cmp(&want) == Some(Ordering::Equal),
                    _ => false,
                });
            match hit {
                Some(p) => Value::Int(p as i64 + 1),
                None => Value::Null,
            }
        }
        Func::ArrayElement => {
            let items = array_items(arg(0))?;
            match arg(1) {
                Value::Int(i) if i >= 1 && (i as usize) <= items.len() => {
                    items.into_iter().nth(i as usize - 1).unwrap_or(Value::Null)
                }
                _ => Value::Null,
            }
        }
        Func::MakeArray => array_result(args)?,
        Func::ArrayCat => match (arg(0), arg(1)) {
            (Value::Null, b) => b,
            (a, Value::Null) => a,
            (a, b) => {
                let mut items = array_items(a)?;
                let more = array_items(b)?;
                crate::array::check_len(items.len() + more.len())?;
                items.extend(more);
                Value::Array(items)
            }
        },
        Func::ArrayAppend => {
            let mut items = array_items(arg(0))?;
            items.push(arg(1));
            array_result(items)?
        }
        Func::ArrayPrepend => {
            let mut items = vec![arg(0)];
            items.extend(array_items(arg(1))?);
            array_result(items)?
        }
        Func::ArrayRemove => {
            if arg(0).is_null() {
                return Ok(Value::Null);
            }
            let x = arg(1);
            let items = array_items(arg(0))?;
            Value::Array(
                items
                    .into_iter()
                    .filter(|i| match (i.is_null(), x.is_null()) {
                        (true, true) => false,
                        (false, false) => i.sql_cmp(&x) != Some(Ordering::Equal),
                        _ => true,
                    })
                    .collect(),
            )
        }
        Func::ArrayContains | Func::ArrayContainedBy => {
            let (mut a, mut b) = (array_items(arg(0))?, array_items(arg(1))?);
            if f == Func::ArrayContainedBy {
                std::mem::swap(&mut a, &mut b);
            }
            Value::Bool(b.iter().all(|x| contains(&a, x)))
        }
        Func::ArrayOverlap => {
            let (a, b) = (array_items(arg(0))?, array_items(arg(1))?);
            Value::Bool(b.iter().any(|x| contains(&a, x)))
        }
        Func::Unnest => Value::Array(array_items(arg(0))?),
        Func::ExpandArray => Value::Array(
            array_items(arg(0))?
                .into_iter()
                .enumerate()
                .map(|(i, x)| Value::Array(vec![x, Value::Int(i as i64 + 1)]))
                .collect(),
        ),
        Func::GenerateSubscripts => {
            let items = array_items(arg(0))?;
            if !first_dimension(&items, &arg(1)) {
                return Ok(Value::Array(vec![]));
            }
            let reverse = matches!(arg(2), Value::Bool(true));
            // Vectors (int2vector, oidvector) count from 0, arrays from 1.
            let first = if matches!(arg(3), Value::Bool(true)) { 0 } else { 1 };
            let n = items.len() as i64;
            let subscripts = first..first + n;
            Value::Array(if reverse {
                subscripts.rev().map(Value::Int).collect()
            } else {
                subscripts.map(Value::Int).collect()
            })
        }
        Func::GenerateSeries => {
            let (start, stop) = (arg(0), arg(1));
            let step = if args.len() > 2 { arg(2) } else { Value::Int(1) };
            if let Value::Interval(step) = step {
                return timestamp_series(start, stop, step, ctx.env.zone());
            }
            if let (Value::Numeric(_), _, _)
            | (_, Value::Numeric(_), _)
            | (_, _, Value::Numeric(_)) = (&start, &stop, &step)
            {
                return numeric_series(start, stop, step);
            }
            let (Value::Int(a), Value::Int(b), Value::Int(st)) = (start, stop, step) else {
                return Err(SqlError::unsupported("generate_series of non-integers"));
            };
            if st == 0 {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER_VALUE,
                    "step size cannot equal zero",
                ));
            }
            let count = if (st > 0 && a > b) || (st < 0 && a < b) {
                0
            } else {
                ((b as i128 - a as i128) / st as i128 + 1) as u128
            };
            if count > crate::array::ELEMENTS_MAX as u128 {
                return Err(SqlError::new(
                    code::PROGRAM_LIMIT,
                    format!(
                        "generate_series in a select list yields at most {} rows per input row",
                        crate::array::ELEMENTS_MAX
                    ),
                ));
            }
            Value::Array((0..count as i64).map(|k| Value::Int(a + k * st)).collect())
        }
        Func::JsonBuildObject(jsonb) => crate::json::build_object(&args, jsonb)?,
        Func::JsonBuildArray(jsonb) => crate::json::build_array(&args, jsonb)?,
        Func::ToJson(ty, jsonb) => match arg(0) {
            Value::Null => Value::Null,
            v => {
                let text = crate::json::to_json(&v, ty, ctx.env.style())?;
                Value::Text(if jsonb { crate::json::jsonb_in(&text)? } else { text })
            }
        },
        Func::Json(f, jsonb) => crate::json::call(f, jsonb, &args)?,
        Func::Net(f) => crate::inet::call(f, &args)?,
        Func::Ts(f) => {
            let style = ctx.env.style();
            crate::textsearch::call(f, &args, style.text_search, &mut |e| {
                ctx.env.notice(crate::session::Notice::of(e))
            })?
        }
        Func::JsonObjectAgg(key, value, jsonb) => match arg(0) {
            Value::Array(pairs) => {
                crate::json::object_aggregate(&pairs, key, value, jsonb, ctx.env.style())?
            }
            _ => Value::Null, // no rows
        },
        Func::RowJson => match args.split_first() {
            Some((Value::Array(names), values)) => crate::json::row_object(names, values)?,
            _ => Value::Null,
        },
        Func::JsonAggRows => match arg(0) {
            Value::Array(items) => crate::json::aggregate_rows(&items)?,
            _ => Value::Null, // no rows
        },
        Func::JsonAgg(elem, jsonb) => match arg(0) {
            Value::Array(items) => crate::json::aggregate(&items, elem, jsonb, ctx.env.style())?,
            _ => Value::Null, // no rows
        },
        Func::Grouping => {
            return Err(SqlError::new(
                code::GROUPING,
                "arguments to GROUPING must be grouping expressions of the associated query level",
            ))
        }
        Func::GroupingSet => Value::Int(0),
        Func::GroupingBits => match (arg(0), arg(1)) {
            (Value::Array(masks), Value::Int(set)) => {
                masks.get(set as usize).cloned().unwrap_or(Value::Int(0))
            }
            _ => Value::Int(0),
        },
        Func::CountNulls(nulls) => {
            Value::Int(args.iter().filter(|a| a.is_null() == nulls).count() as i64)
        }
        Func::SizePretty => {
            let size: i128 = match numeric_operand(arg(0))? {
                Value::Int(i) => i as i128,
                Value::Numeric(d) => d.to_i128().unwrap_or(i128::MAX),
                Value::Float(f) => f.round() as i128,
                v => return Err(type_error("pg_size_pretty", &v)),
            };
            Value::Text(size_pretty(size))
        }
        Func::QuoteIdent => Value::Text(crate::bind::quote_ident(&text_arg(&arg(0)))),
        Func::QuoteLiteral => Value::Text(quote_literal(&text_arg(&arg(0)))),
        Func::PartitionAncestors => {
            let Value::Int(mut relation) = arg(0) else { return Ok(Value::Array(vec![])) };
            let (children, parents) = (array_items(arg(1))?, array_items(arg(2))?);
            let mut chain = vec![Value::Int(relation)];
            while let Some(i) = children.iter().position(|c| *c == Value::Int(relation)) {
                let Some(Value::Int(parent)) = parents.get(i) else { break };
                if chain.len() > crate::partition::PARTITION_DEPTH_MAX {
                    break;
                }
                relation = *parent;
                chain.push(Value::Int(relation));
            }
            Value::Array(chain)
        }
        Func::OptionsToTable(values) => Value::Array(
            array_items(arg(0))?
                .iter()
                .map(|o| {
                    if o.is_null() {
                        return Value::Null;
                    }
                    // `name=value`; an option without `=` has no value (NULL).
                    let o = text_arg(o);
                    match (o.split_once('='), values) {
                        (Some((name, _)), false) => Value::Text(name.to_string()),
                        (Some((_, value)), true) => Value::Text(value.to_string()),
                        (None, false) => Value::Text(o),
                        (None, true) => Value::Null,
                    }
                })
                .collect(),
        ),
        Func::AclDefault => acl_default(&text_arg(&arg(0)))?,
        Func::EnumRange(def) => {
            let sort = |v: &Value| match v {
                Value::Enum(e) => Some(e.sort),
                _ => None,
            };
            let (low, high) = (sort(&arg(0)), sort(&arg(1)));
            Value::Array(
                (0..def.labels.len())
                    .filter(|&i| {
                        let s = def.labels[i].sort;
                        low.is_none_or(|l| s >= l) && high.is_none_or(|h| s <= h)
                    })
                    .map(|i| def.value(i))
                    .collect(),
            )
        }
    })
}

pub(crate) fn pseudo_random() -> f64 {
    use std::cell::Cell;
    use std::time::{SystemTime, UNIX_EPOCH};
    thread_local! {
        static STATE: Cell<u64> = Cell::new(
            SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1) | 1,
        );
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// Converts a value to a column's type on assignment (integers range-checked; a timestamp
/// with time zone and a local time converted in the `style`'s zone, text read in it).
pub fn assign(v: Value, ty: DataType, style: crate::style::Style) -> Result<Value> {
    match (&v, ty) {
        (Value::Int(i), t) if t.is_integer() => {
            check_int_range(*i, t)?;
            Ok(v)
        }
        _ => v.cast_in(ty, style),
    }
}

/// generate_series(start, stop, step) of timestamps (with time zone: the step's months and
/// days move the local time in `zone`), each the one before plus the step, as PostgreSQL
/// adds them.
fn timestamp_series(
    start: Value,
    stop: Value,
    step: crate::interval::Interval,
    zone: crate::zone::Zone,
) -> Result<Value> {
    use crate::interval::{add_to_timestamp, add_to_timestamptz};
    let (a, b, tz) = match (start, stop) {
        (Value::Timestamp(a), Value::Timestamp(b)) => (a, b, false),
        (Value::TimestampTz(a), Value::TimestampTz(b)) => (a, b, true),
        (a, _) => return Err(type_error("generate_series", &a)),
    };
    let direction = step.span().cmp(&0);
    if direction == Ordering::Equal {
        return Err(SqlError::new(code::INVALID_PARAMETER_VALUE, "step size cannot equal zero"));
    }
    let mut out = Vec::new();
    let mut t = a;
    while (direction == Ordering::Greater && t <= b) || (direction == Ordering::Less && t >= b) {
        if out.len() >= crate::array::ELEMENTS_MAX {
            return Err(SqlError::new(
                code::PROGRAM_LIMIT,
                format!(
                    "generate_series in a select list yields at most {} rows per input row",
                    crate::array::ELEMENTS_MAX
                ),
            ));
        }
        out.push(if tz { Value::TimestampTz(t) } else { Value::Timestamp(t) });
        let next = if tz { add_to_timestamptz(t, step, zone) } else { add_to_timestamp(t, step) };
        match next {
            Ok(n) if n != t => t = n,
            _ => break, // past the end of time, or stuck at an infinity
        }
    }
    Ok(Value::Array(out))
}

/// power(x, y): numeric when either operand is numeric (and neither is a float), else
/// double precision, with PostgreSQL's errors for the undefined cases.
fn power(x: Value, y: Value) -> Result<Value> {
    let undefined = |m: &str| SqlError::new("2201F", m.to_string());
    let numeric = |v: &Value| match v {
        Value::Int(i) => Some(crate::numeric::Numeric::from(*i)),
        Value::Numeric(d) => Some(d.clone()),
        _ => None,
    };
    if matches!((&x, &y), (Value::Numeric(_), _) | (_, Value::Numeric(_))) {
        if let (Some(nx), Some(ny)) = (numeric(&x), numeric(&y)) {
            return Ok(Value::Numeric(crate::numeric_math::power(&nx, &ny)?));
        }
    }
    let as_f64 = |v: &Value| match v {
        Value::Int(i) => Ok(*i as f64),
        Value::Float(f) => Ok(*f),
        Value::Numeric(d) => super::ops::numeric_to_float(d),
        v => Err(type_error("power", v)),
    };
    let (fx, fy) = (as_f64(&x)?, as_f64(&y)?);
    if fx == 0.0 && fy < 0.0 {
        return Err(undefined("zero raised to a negative power is undefined"));
    }
    if fx < 0.0 && fy.fract() != 0.0 {
        return Err(undefined(
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    let r = fx.powf(fy);
    if r.is_infinite() {
        return Err(SqlError::new(code::NUMERIC_OUT_OF_RANGE, "value out of range: overflow"));
    }
    Ok(Value::Float(r))
}

/// A string literal PostgreSQL's `quote_literal` writes: quotes doubled, and an `E''` string
/// with doubled backslashes when there are any.
pub(crate) fn quote_literal(s: &str) -> String {
    let quoted = s.replace('\'', "''");
    if s.contains('\\') {
        format!("E'{}'", quoted.replace('\\', "\\\\"))
    } else {
        format!("'{quoted}'")
    }
}

/// `acldefault(kind, owner)`: the privileges an object of the kind (`r` table, `s` sequence,
/// `f` function, `l` language, `n` schema, `T` type, `d` database, …) grants by default, as
/// PostgreSQL writes them. Kiln has one role, which owns every object.
fn acl_default(kind: &str) -> Result<Value> {
    let owner = crate::pg::system::ROLE_NAME;
    let (own, public) = match kind {
        "r" => ("arwdDxt", ""),
        "s" => ("rwU", ""),
        "f" => ("X", "X"),
        "l" | "T" => ("U", "U"),
        "n" => ("UC", ""),
        "d" => ("CTc", "Tc"),
        "F" | "S" => ("U", ""),
        "L" => ("rw", ""),
        "t" => ("C", ""),
        "c" | "p" => ("", ""),
        other => {
            return Err(SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                format!("unrecognized object type abbreviation: {other}"),
            ))
        }
    };
    let mut items = Vec::new();
    if !public.is_empty() {
        items.push(Value::Text(format!("={public}/{owner}")));
    }
    if !own.is_empty() {
        items.push(Value::Text(format!("{owner}={own}/{owner}")));
    }
    Ok(Value::Array(items))
}

/// `generate_series(numeric, numeric [, numeric])`: from `start` by `step` while not past
/// `stop`, each value `start + k * step` at the larger of their scales (the first is
/// `start` as given), as PostgreSQL's series of numerics.
fn numeric_series(start: Value, stop: Value, step: Value) -> Result<Value> {
    use crate::numeric::Numeric;
    let numeric = |v: Value| -> Result<Numeric> {
        match v {
            Value::Numeric(n) => Ok(n),
            Value::Int(i) => Ok(Numeric::from(i)),
            v => Err(type_error("generate_series", &v)),
        }
    };
    let (start, stop, step) = (numeric(start)?, numeric(stop)?, numeric(step)?);
    if step.is_zero() {
        return Err(SqlError::new(code::INVALID_PARAMETER_VALUE, "step size cannot equal zero"));
    }
    let ahead = if step.is_negative() { start < stop } else { start > stop };
    let count = if ahead {
        0
    } else {
        // floor((stop - start) / step) + 1, bounded before any value is made.
        let n = stop.sub(&start)?.div_trunc(&step)?;
        match n.to_i64() {
            Some(n) if (n as u128) < crate::array::ELEMENTS_MAX as u128 => n as usize + 1,
            _ => {
                return Err(SqlError::new(
                    code::PROGRAM_LIMIT,
                    format!(
                        "generate_series in a select list yields at most {} rows per input row",
                        crate::array::ELEMENTS_MAX
                    ),
                ))
            }
        }
    };
    let mut out = Vec::with_capacity(count);
    let mut v = start;
    for _ in 0..count {
        let next = v.add(&step)?;
        out.push(Value::Numeric(v));
        v = next;
    }
    Ok(Value::Array(out))
}
