//! Operators on values: comparison, arithmetic on integers, numerics, floats and dates (with
//! their overflow and division checks), concatenation, LIKE (linear time) and regular
//! expressions, and IN over a list of values.

use std::cmp::Ordering;

use crate::error::{code, Result, SqlError};
use crate::style::Style;
use crate::types::{DataType, Value};
use crate::zone::Zone;

use crate::expr::*;

pub(crate) fn in_values(v: &Value, values: &[Value], negated: bool) -> Value {
    // Nothing is in an empty set, not even NULL.
    if values.is_empty() {
        return Value::Bool(negated);
    }
    if v.is_null() {
        return Value::Null;
    }
    let mut saw_null = false;
    for item in values {
        if item.is_null() {
            saw_null = true;
        } else if v.sql_cmp(item) == Some(Ordering::Equal) {
            return Value::Bool(!negated);
        }
    }
    if saw_null {
        Value::Null
    } else {
        Value::Bool(negated)
    }
}

/// `(x, y, …) [NOT] IN (rows)`, each row an array of its values: true when a row equals the
/// left one pair by pair, else NULL when some row's comparison was NULL (no pair differed,
/// one had a NULL), else false.
pub(crate) fn in_rows(left: &Value, rows: &[Value], negated: bool) -> Value {
    let Value::Array(left) = left else { return Value::Null };
    let mut saw_null = false;
    for row in rows {
        let Value::Array(items) = row else { continue };
        let mut unknown = false;
        let mut differs = false;
        for (a, b) in left.iter().zip(items) {
            if a.is_null() || b.is_null() {
                unknown = true;
            } else if a.sql_cmp(b) != Some(Ordering::Equal) {
                differs = true;
                break;
            }
        }
        if differs {
            continue;
        }
        if !unknown {
            return Value::Bool(!negated);
        }
        saw_null = true;
    }
    if saw_null {
        Value::Null
    } else {
        Value::Bool(negated)
    }
}

pub(crate) fn overflow(what: &str) -> SqlError {
    SqlError::new(code::NUMERIC_OUT_OF_RANGE, format!("{what} out of range"))
}

pub(crate) fn type_error(op: &str, v: &Value) -> SqlError {
    SqlError::new(
        code::UNDEFINED_FUNCTION,
        format!("operator does not exist: {op} {}", v.natural_type().sql_name()),
    )
}

/// 42883: no operator `op` takes these two values.
fn no_operator(op: BinOp, a: &Value, b: &Value) -> SqlError {
    SqlError::new(
        code::UNDEFINED_FUNCTION,
        format!(
            "operator does not exist: {} {} {}",
            a.natural_type().sql_name(),
            op_name(op),
            b.natural_type().sql_name()
        ),
    )
    .hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
}

/// Coerces an untyped text operand to a number for arithmetic.
pub(crate) fn numeric_operand(v: Value) -> Result<Value> {
    match v {
        Value::Text(s) => {
            if let Ok(i) = s.trim().parse::<i64>() {
                Ok(Value::Int(i))
            } else {
                Value::parse(&s, DataType::Numeric(None))
            }
        }
        v => Ok(v),
    }
}

/// Applies a binary operator (NULL in, NULL out) in the session's `style` (which writes a
/// date, time or interval concatenated to text; its zone places calendar arithmetic on a
/// timestamp with time zone).
pub fn binary(op: BinOp, a: Value, b: Value, style: Style) -> Result<Value> {
    let zone = style.zone;
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    let cmp = |a: &Value, b: &Value| a.sql_cmp(b).ok_or_else(|| no_operator(op, a, b));
    Ok(match op {
        BinOp::Eq => Value::Bool(cmp(&a, &b)? == Ordering::Equal),
        BinOp::NotEq => Value::Bool(cmp(&a, &b)? != Ordering::Equal),
        BinOp::Lt => Value::Bool(cmp(&a, &b)? == Ordering::Less),
        BinOp::LtEq => Value::Bool(cmp(&a, &b)? != Ordering::Greater),
        BinOp::Gt => Value::Bool(cmp(&a, &b)? == Ordering::Greater),
        BinOp::GtEq => Value::Bool(cmp(&a, &b)? != Ordering::Less),
        BinOp::Concat => {
            // A non-string operand is cast to text (a boolean is `true` / `false`).
            let mut s = a.to_text_cast(style).unwrap_or_default();
            let t = b.to_text_cast(style).unwrap_or_default();
            if s.len() + t.len() > TEXT_BYTES_MAX {
                return Err(too_long());
            }
            s.push_str(&t);
            Value::Text(s)
        }
        BinOp::RegexMatch | BinOp::RegexNotMatch | BinOp::RegexIMatch | BinOp::RegexNotIMatch => {
            let text = a.to_text(DataType::Text).unwrap_or_default();
            let pattern = b.to_text(DataType::Text).unwrap_or_default();
            let insensitive = matches!(op, BinOp::RegexIMatch | BinOp::RegexNotIMatch);
            let negated = matches!(op, BinOp::RegexNotMatch | BinOp::RegexNotIMatch);
            Value::Bool(regex_match(&text, &pattern, insensitive)? != negated)
        }
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => match (a, b) {
            (Value::Int(x), Value::Int(y)) => Value::Int(match op {
                BinOp::BitAnd => x & y,
                BinOp::BitOr => x | y,
                _ => x ^ y,
            }),
            (a, b) => return Err(no_operator(op, &a, &b)),
        },
        _ => arithmetic(op, numeric_operand(a)?, numeric_operand(b)?, zone)?,
    })
}

pub(crate) fn op_name(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::Mod => "%",
        BinOp::Concat => "||",
        BinOp::Eq => "=",
        BinOp::NotEq => "<>",
        BinOp::Lt => "<",
        BinOp::LtEq => "<=",
        BinOp::Gt => ">",
        BinOp::GtEq => ">=",
        BinOp::RegexMatch => "~",
        BinOp::RegexNotMatch => "!~",
        BinOp::RegexIMatch => "~*",
        BinOp::RegexNotIMatch => "!~*",
        BinOp::BitAnd => "&",
        BinOp::BitOr => "|",
        BinOp::BitXor => "#",
    }
}

/// A regular-expression match with a per-thread cache of compiled patterns.
pub(crate) fn regex_match(text: &str, pattern: &str, insensitive: bool) -> Result<bool> {
    with_regex(pattern, RegexOptions { insensitive, ..RegexOptions::default() }, |re| {
        re.is_match(text)
    })
}

/// How a pattern is compiled: PostgreSQL's flags `i` (case-insensitive), `n` (newline-
/// sensitive: `.` and `[^…]` do not match a newline, `^` and `$` match at lines) and `x`
/// (expanded: whitespace and `#` comments ignored). Without `n`, `.` matches a newline, as
/// in PostgreSQL's advanced regular expressions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct RegexOptions {
    pub(crate) insensitive: bool,
    pub(crate) newline: bool,
    pub(crate) expanded: bool,
}

/// Calls `f` with `pattern` compiled (at most 1 MiB of program; 2201B when it is invalid or
/// larger), from a per-thread cache of compiled patterns.
pub(crate) fn with_regex<R>(
    pattern: &str,
    options: RegexOptions,
    f: impl FnOnce(&regex::Regex) -> R,
) -> Result<R> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    type Cache = HashMap<(String, RegexOptions), regex::Regex>;
    thread_local! {
        static CACHE: RefCell<Cache> = RefCell::new(HashMap::new());
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let key = (pattern.to_string(), options);
        if !cache.contains_key(&key) {
            if cache.len() > 256 {
                cache.clear();
            }
            let re = regex::RegexBuilder::new(pattern)
                .case_insensitive(options.insensitive)
                .dot_matches_new_line(!options.newline)
                .multi_line(options.newline)
                .ignore_whitespace(options.expanded)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| SqlError::new("2201B", format!("invalid regular expression: {e}")))?;
            cache.insert(key.clone(), re);
        }
        Ok(f(&cache[&key]))
    })
}

/// A `SIMILAR TO` pattern as a regular expression anchored at both ends (PostgreSQL's
/// `similar_to_escape`): `%` is `.*`, `_` is `.`, the escape character (a backslash unless
/// `escape` says otherwise; none for `''`) makes the next character literal, bracket
/// expressions pass through, and `|`, `*`, `+`, `?`, `{m,n}` and parentheses keep their
/// regular-expression meaning.
pub(crate) fn similar_to_regex(pattern: &str, escape: Option<&str>) -> Result<String> {
    let escape = match escape {
        None => Some('\\'),
        Some(e) => {
            let mut chars = e.chars();
            match (chars.next(), chars.next()) {
                (None, _) => None,
                (Some(c), None) => Some(c),
                _ => {
                    return Err(SqlError::new("22025", "invalid escape string")
                        .hint("Escape string must be empty or one character."))
                }
            }
        }
    };
    let mut out = String::with_capacity(pattern.len() + 8);
    out.push_str("^(?:");
    let (mut after_escape, mut in_class, mut class_pos) = (false, false, 0);
    for c in pattern.chars() {
        if after_escape {
            out.push_str(&regex::escape(&c.to_string()));
            after_escape = false;
        } else if escape == Some(c) {
            after_escape = true;
        } else if in_class {
            // A `]` first (or after `^`) is a member; the regex crate's own class syntax
            // (`[` nesting, `&&`, `~~`) is escaped.
            let closes = c == ']' && class_pos > 2;
            if matches!(c, '\\' | '[' | '&' | '~') || (c == ']' && !closes) {
                out.push('\\');
            }
            out.push(c);
            if closes {
                in_class = false;
            } else if c == '^' {
                class_pos += 1;
            } else {
                class_pos = 3;
            }
        } else {
            match c {
                '[' => {
                    out.push('[');
                    in_class = true;
                    class_pos = 1;
                }
                '%' => out.push_str(".*"),
                '_' => out.push('.'),
                '(' => out.push_str("(?:"),
                '\\' | '.' | '^' | '$' => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
    }
    // An escape character at the very end escapes nothing and is dropped, as in PostgreSQL.
    out.push_str(")$");
    Ok(out)
}

pub(crate) fn div_zero() -> SqlError {
    SqlError::new(code::DIVISION_BY_ZERO, "division by zero")
}

pub(crate) fn arithmetic(op: BinOp, a: Value, b: Value, zone: Zone) -> Result<Value> {
    use Value::*;
    Ok(match (a, b) {
        (Int(x), Int(y)) => Int(match op {
            BinOp::Add => x.checked_add(y),
            BinOp::Sub => x.checked_sub(y),
            BinOp::Mul => x.checked_mul(y),
            BinOp::Div => {
                if y == 0 {
                    return Err(div_zero());
                }
                x.checked_div(y)
            }
            BinOp::Mod => {
                if y == 0 {
                    return Err(div_zero());
                }
                x.checked_rem(y)
            }
            _ => unreachable!("comparison handled by binary"),
        }
        .ok_or_else(|| overflow("bigint"))?),
        (Float(x), Float(y)) => Float(float_op(op, x, y)?),
        (Int(x), Float(y)) => Float(float_op(op, x as f64, y)?),
        (Float(x), Int(y)) => Float(float_op(op, x, y as f64)?),
        (Numeric(x), Float(y)) => Float(float_op(op, numeric_to_float(&x)?, y)?),
        (Float(x), Numeric(y)) => Float(float_op(op, x, numeric_to_float(&y)?)?),
        (Numeric(x), Numeric(y)) => Numeric(numeric_op(op, &x, &y)?),
        (Int(x), Numeric(y)) => Numeric(numeric_op(op, &x.into(), &y)?),
        (Numeric(x), Int(y)) => Numeric(numeric_op(op, &x, &y.into())?),
        (Date(d), Int(n)) if matches!(op, BinOp::Add | BinOp::Sub) => {
            let days = if op == BinOp::Add { d as i64 + n } else { d as i64 - n };
            Date(crate::types::check_date(days)?)
        }
        (Int(n), Date(d)) if op == BinOp::Add => Date(crate::types::check_date(d as i64 + n)?),
        (Date(x), Date(y)) if op == BinOp::Sub => Int(x as i64 - y as i64),
        (a @ (Interval(_) | Timestamp(_) | TimestampTz(_) | Date(_) | Time(_)), b)
        | (a, b @ (Interval(_) | Timestamp(_) | TimestampTz(_) | Date(_) | Time(_))) => {
            datetime_arithmetic(op, a, b, zone)?
        }
        (a, b) => return Err(no_operator(op, &a, &b)),
    })
}

/// Arithmetic with intervals, and between timestamps, dates and times.
fn datetime_arithmetic(op: BinOp, a: Value, b: Value, zone: Zone) -> Result<Value> {
    use crate::interval::{self as iv, Interval as Span};
    use crate::types::date_micros;
    use Value::*;
    let factor = |v: &Value| match v {
        Float(f) => Some(*f),
        Int(i) => Some(*i as f64),
        Numeric(d) => d.to_f64(),
        _ => None,
    };
    let negate = |x: Span| if op == BinOp::Sub { x.checked_neg() } else { Ok(x) };
    Ok(match (op, &a, &b) {
        (BinOp::Add | BinOp::Sub, Interval(x), Interval(y)) => {
            Interval(if op == BinOp::Add { x.checked_add(*y)? } else { x.checked_sub(*y)? })
        }
        (BinOp::Add | BinOp::Sub, Timestamp(t), Interval(x)) => {
            Timestamp(iv::add_to_timestamp(*t, negate(*x)?)?)
        }
        (BinOp::Add | BinOp::Sub, TimestampTz(t), Interval(x)) => {
            TimestampTz(iv::add_to_timestamptz(*t, negate(*x)?, zone)?)
        }
        (BinOp::Add | BinOp::Sub, Date(d), Interval(x)) => {
            Timestamp(iv::add_to_timestamp(date_micros(*d), negate(*x)?)?)
        }
        (BinOp::Add, Interval(x), Timestamp(t)) => Timestamp(iv::add_to_timestamp(*t, *x)?),
        (BinOp::Add, Interval(x), TimestampTz(t)) => {
            TimestampTz(iv::add_to_timestamptz(*t, *x, zone)?)
        }
        (BinOp::Add, Interval(x), Date(d)) => Timestamp(iv::add_to_timestamp(date_micros(*d), *x)?),
        (BinOp::Add | BinOp::Sub, Time(t), Interval(x)) => Time(iv::add_to_time(*t, negate(*x)?)),
        (BinOp::Add, Interval(x), Time(t)) => Time(iv::add_to_time(*t, *x)),
        (BinOp::Add, Date(d), Time(t)) | (BinOp::Add, Time(t), Date(d)) => {
            Timestamp(iv::add_to_timestamp(date_micros(*d), Span { micros: *t, ..Span::ZERO })?)
        }
        (BinOp::Sub, Time(x), Time(y)) => Interval(Span { micros: x - y, ..Span::ZERO }),
        (BinOp::Sub, Timestamp(x) | TimestampTz(x), Timestamp(y) | TimestampTz(y)) => {
            Interval(iv::timestamp_diff(*x, *y)?)
        }
        (BinOp::Mul, Interval(x), f) | (BinOp::Mul, f, Interval(x)) if factor(f).is_some() => {
            Interval(x.checked_mul(factor(f).unwrap_or(f64::NAN))?)
        }
        (BinOp::Div, Interval(x), f) if factor(f).is_some() => {
            Interval(x.checked_div(factor(f).unwrap_or(f64::NAN))?)
        }
        _ => return Err(no_operator(op, &a, &b)),
    })
}

pub(crate) fn float_op(op: BinOp, x: f64, y: f64) -> Result<f64> {
    Ok(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => {
            if y == 0.0 {
                return Err(div_zero());
            }
            x / y
        }
        BinOp::Mod => {
            if y == 0.0 {
                return Err(div_zero());
            }
            x % y
        }
        _ => unreachable!("comparison handled by binary"),
    })
}

/// Arithmetic on numerics, with PostgreSQL's result scales (see [`crate::numeric`]).
pub(crate) fn numeric_op(
    op: BinOp,
    x: &crate::numeric::Numeric,
    y: &crate::numeric::Numeric,
) -> Result<crate::numeric::Numeric> {
    match op {
        BinOp::Add => x.add(y),
        BinOp::Sub => x.sub(y),
        BinOp::Mul => x.mul(y),
        BinOp::Div => x.div(y),
        BinOp::Mod => x.rem(y),
        _ => unreachable!("comparison handled by binary"),
    }
}

/// A numeric as a double for mixed arithmetic (22003 beyond a double's range).
pub(crate) fn numeric_to_float(d: &crate::numeric::Numeric) -> Result<f64> {
    d.to_f64().ok_or_else(|| {
        SqlError::new(
            code::NUMERIC_OUT_OF_RANGE,
            format!("\"{d}\" is out of range for type double precision"),
        )
    })
}

/// One element of a LIKE pattern.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum LikeItem {
    /// `%`: any run of characters.
    Any,
    /// `_`: exactly one character.
    One,
    /// A literal character (backslash escapes one).
    Char(char),
}

/// SQL LIKE with `%`, `_` and backslash escapes, in O(|s|·|pattern|) time at worst and
/// constant stack: a mismatch backtracks only to the latest `%`, never further, because a
/// later `%` can absorb anything an earlier one could.
pub fn like(s: &str, pattern: &str) -> Result<bool> {
    let mut items = Vec::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        items.push(match c {
            '%' => {
                if items.last() == Some(&LikeItem::Any) {
                    continue;
                }
                LikeItem::Any
            }
            '_' => LikeItem::One,
            '\\' => match chars.next() {
                Some(e) => LikeItem::Char(e),
                None => {
                    return Err(SqlError::new(
                        "22025",
                        "LIKE pattern must not end with escape character",
                    ))
                }
            },
            c => LikeItem::Char(c),
        });
    }
    let s: Vec<char> = s.chars().collect();
    let (mut si, mut pi) = (0usize, 0usize);
    // Where the latest `%` is in the pattern, and where in `s` its run would end next.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match items.get(pi) {
            Some(LikeItem::Any) => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(LikeItem::One) => {
                si += 1;
                pi += 1;
            }
            Some(LikeItem::Char(c)) if *c == s[si] => {
                si += 1;
                pi += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return Ok(false),
            },
        }
    }
    Ok(items[pi..].iter().all(|i| *i == LikeItem::Any))
}
