//! The implementations of the scalar functions the registry (`crate::functions`) lists, and
//! the array helpers they share. The session's own functions (kiln_*, pg_sleep …) are in
//! `crate::ed`.

use std::cmp::Ordering;

use crate::error::{code, Result, SqlError};
use crate::types::{check_int_range, DataType, Value};

use crate::expr::*;

/// Parses a one-dimensional PostgreSQL array literal ('{a,"b c",NULL}').
pub fn parse_array(s: &str) -> Result<Vec<Option<String>>> {
    let bad = || SqlError::new(code::INVALID_TEXT, format!("malformed array literal: \"{s}\""));
    let inner = s.trim().strip_prefix('{').and_then(|r| r.strip_suffix('}')).ok_or_else(bad)?;
    let mut out = Vec::new();
    if inner.trim().is_empty() {
        return Ok(out);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        let mut item = String::new();
        let quoted = chars.peek() == Some(&'"');
        if quoted {
            chars.next();
            loop {
                match chars.next() {
                    Some('\\') => item.push(chars.next().ok_or_else(bad)?),
                    Some('"') => break,
                    Some(c) => item.push(c),
                    None => return Err(bad()),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                item.push(c);
                chars.next();
            }
        }
        let item = if quoted { item } else { item.trim().to_string() };
        out.push(if !quoted && item.eq_ignore_ascii_case("null") { None } else { Some(item) });
        match chars.next() {
            Some(',') => continue,
            None => break,
            Some(_) => return Err(bad()),
        }
    }
    Ok(out)
}

/// One element of an array literal, quoted when it needs to be.
pub(crate) fn array_item(v: &Value) -> String {
    match v.to_text(DataType::Text) {
        None => "NULL".into(),
        Some(s) => {
            if s.is_empty()
                || s.contains([',', '"', '{', '}', ' ', '\\'])
                || s.eq_ignore_ascii_case("null")
            {
                format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
            } else {
                s
            }
        }
    }
}

/// The largest string an expression may compute (repeat, concatenation …): beyond it, 54000.
pub const TEXT_BYTES_MAX: usize = 64 << 20;

pub(crate) fn text_arg(v: &Value) -> String {
    v.to_text(DataType::Text).unwrap_or_default()
}

pub(crate) fn call(f: Func, args: Vec<Value>, ctx: &Ctx) -> Result<Value> {
    if args.iter().any(Value::is_null) && crate::functions::of(f).strict {
        return Ok(Value::Null);
    }
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::Null);
    Ok(match f {
        // The C locale (Kiln's collation) changes the case of ASCII letters only.
        Func::Lower => Value::Text(text_arg(&arg(0)).to_ascii_lowercase()),
        Func::Upper => Value::Text(text_arg(&arg(0)).to_ascii_uppercase()),
        Func::Length => Value::Int(text_arg(&arg(0)).chars().count() as i64),
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
                Value::Int(n) => n as i32,
                _ => 0,
            };
            match numeric_operand(arg(0))? {
                Value::Int(i) => Value::Int(i),
                Value::Float(x) => Value::Float(match f {
                    Func::Round => {
                        let m = 10f64.powi(digits);
                        (x * m).round() / m
                    }
                    Func::Floor => x.floor(),
                    _ => x.ceil(),
                }),
                Value::Numeric(d) => Value::Numeric(match f {
                    Func::Round => {
                        let mut r = d.round_dp_with_strategy(
                            digits.max(0) as u32,
                            rust_decimal::RoundingStrategy::MidpointAwayFromZero,
                        );
                        r.rescale(digits.max(0) as u32);
                        r
                    }
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
        Func::Concat => {
            Value::Text(args.iter().filter_map(|v| v.to_text(DataType::Text)).collect())
        }
        Func::Repeat => match (&args[0], &args[1]) {
            (Value::Null, _) | (_, Value::Null) => Value::Null,
            (s, Value::Int(n)) => {
                let s = text_arg(s);
                let n = (*n).max(0) as usize;
                if s.len().saturating_mul(n) > TEXT_BYTES_MAX {
                    return Err(SqlError::new(code::PROGRAM_LIMIT, "requested length too large")
                        .detail(format!(
                            "A computed string may hold at most {TEXT_BYTES_MAX} bytes."
                        )));
                }
                Value::Text(s.repeat(n))
            }
            (_, n) => return Err(type_error("repeat", n)),
        },
        Func::Now => Value::TimestampTz(ctx.env.now()),
        Func::CurrentDate => {
            Value::Date(ctx.env.now().div_euclid(crate::types::MICROS_PER_DAY) as i32)
        }
        Func::Random => Value::Float(pseudo_random()),
        Func::Version => Value::Text(crate::VERSION_STRING.to_string()),
        Func::CurrentDatabase => Value::Text(ctx.env.database()),
        Func::CurrentSchema => Value::Text("public".into()),
        Func::CurrentUser => Value::Text(ctx.env.user()),
        Func::BackendPid => Value::Int(ctx.env.backend_pid() as i64),
        Func::KilnSync
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
        | Func::Sleep => ctx.env.kiln(f, &args)?,
        Func::Catalog(c) => ctx.env.catalog(c, &args)?,
        Func::ArrayToString => {
            let (arr, sep) = (arg(0), arg(1));
            if arr.is_null() || sep.is_null() {
                return Ok(Value::Null);
            }
            let items = parse_array(&text_arg(&arr))?;
            Value::Text(items.into_iter().flatten().collect::<Vec<_>>().join(&text_arg(&sep)))
        }
        Func::ArrayUpper => {
            let items = parse_array(&text_arg(&arg(0)))?;
            if items.is_empty() {
                Value::Null
            } else {
                Value::Int(items.len() as i64)
            }
        }
        Func::ArrayPosition => {
            let items = parse_array(&text_arg(&arg(0)))?;
            let want = text_arg(&arg(1));
            match items.iter().position(|i| i.as_deref() == Some(want.as_str())) {
                Some(p) => Value::Int(p as i64 + 1),
                None => Value::Null,
            }
        }
        Func::ArrayElement => {
            let items = parse_array(&text_arg(&arg(0)))?;
            match arg(1) {
                Value::Int(i) if i >= 1 && (i as usize) <= items.len() => {
                    items[i as usize - 1].clone().map(Value::Text).unwrap_or(Value::Null)
                }
                _ => Value::Null,
            }
        }
        Func::QuoteIdent => {
            let s = text_arg(&arg(0));
            if !s.is_empty()
                && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                && !s.starts_with(|c: char| c.is_ascii_digit())
            {
                Value::Text(s)
            } else {
                Value::Text(format!("\"{}\"", s.replace('"', "\"\"")))
            }
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

/// Checks an integer result against a column type (used on assignment).
pub fn assign(v: Value, ty: DataType) -> Result<Value> {
    match (&v, ty) {
        (Value::Int(i), t) if t.is_integer() => {
            check_int_range(*i, t)?;
            Ok(v)
        }
        _ => v.cast(ty),
    }
}

/// power(x, y): numeric when either operand is numeric (and neither is a float), else
/// double precision, with PostgreSQL's errors for the undefined cases.
fn power(x: Value, y: Value) -> Result<Value> {
    use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
    use rust_decimal::MathematicalOps as _;
    let undefined = |m: &str| SqlError::new("2201F", m.to_string());
    let as_f64 = |v: &Value| match v {
        Value::Int(i) => Ok(*i as f64),
        Value::Float(f) => Ok(*f),
        Value::Numeric(d) => d.to_f64().ok_or_else(|| overflow("numeric")),
        v => Err(type_error("power", v)),
    };
    let numeric = matches!(
        (&x, &y),
        (Value::Numeric(_), Value::Numeric(_) | Value::Int(_)) | (Value::Int(_), Value::Numeric(_))
    );
    let (fx, fy) = (as_f64(&x)?, as_f64(&y)?);
    if fx == 0.0 && fy < 0.0 {
        return Err(undefined("zero raised to a negative power is undefined"));
    }
    if fx < 0.0 && fy.fract() != 0.0 {
        return Err(undefined(
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    if numeric {
        let to_dec = |v: &Value| match v {
            Value::Int(i) => rust_decimal::Decimal::from(*i),
            Value::Numeric(d) => *d,
            _ => unreachable!("checked above"),
        };
        let (dx, dy) = (to_dec(&x), to_dec(&y));
        // Integer exponents are exact; others go through double precision (as precise as
        // the operation's inputs usually are).
        let exact =
            if dy.fract().is_zero() { dy.to_i64().and_then(|n| dx.checked_powi(n)) } else { None };
        return match exact.or_else(|| rust_decimal::Decimal::from_f64(fx.powf(fy))) {
            Some(d) => Ok(Value::Numeric(d.normalize())),
            None => Err(overflow("value")),
        };
    }
    let r = fx.powf(fy);
    if r.is_infinite() {
        return Err(SqlError::new(code::NUMERIC_OUT_OF_RANGE, "value out of range: overflow"));
    }
    Ok(Value::Float(r))
}
