//! PostgreSQL's string functions beyond the core ones in `builtins.rs` (replace,
//! split_part, left/right, padding, regular-expression replace/match/split, format …) and a
//! few mathematical ones. Every result is bounded by [`TEXT_BYTES_MAX`]; regular expressions
//! by the compiled-size limit of [`super::ops::with_regex`].

use crate::error::{code, Result, SqlError};
use crate::expr::builtins::{quote_literal, text_arg, too_long, TEXT_BYTES_MAX};
use crate::style::Style;
use crate::types::Value;

/// A string function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrFunc {
    /// replace(s, from, to)
    Replace,
    /// translate(s, from, to)
    Translate,
    /// split_part(s, delimiter, n)
    SplitPart,
    /// strpos(s, sub), position(sub IN s)
    Strpos,
    /// left(s, n)
    Left,
    /// right(s, n)
    Right,
    /// lpad(s, length [, fill])
    Lpad,
    /// rpad(s, length [, fill])
    Rpad,
    /// reverse(s)
    Reverse,
    /// initcap(s)
    Initcap,
    /// ascii(s)
    Ascii,
    /// chr(n)
    Chr,
    /// concat_ws(separator, …)
    ConcatWs,
    /// starts_with(s, prefix)
    StartsWith,
    /// quote_nullable(x)
    QuoteNullable,
    /// format(template, …)
    Format,
    /// regexp_replace(s, pattern, replacement [, flags])
    RegexpReplace,
    /// regexp_match(s, pattern [, flags])
    RegexpMatch,
    /// regexp_matches(s, pattern [, flags]): as a value, the array of its rows (each the
    /// text array regexp_match would give; flag `g`: one per match)
    RegexpMatches,
    /// regexp_split_to_array(s, pattern [, flags])
    RegexpSplit,
    /// overlay(s PLACING r FROM n [FOR m])
    Overlay,
    /// A LIKE pattern with escape character `c` (none when empty) as one with backslash
    /// escapes: `LIKE p ESCAPE c`.
    LikeEscape,
    /// A SIMILAR TO pattern (and its escape character, when given) as an anchored regular
    /// expression: `SIMILAR TO p [ESCAPE c]`.
    SimilarEscape,
}

/// A mathematical function over double precision (or numeric, where noted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MathFunc {
    Sqrt,
    Cbrt,
    Exp,
    Ln,
    /// log(x): base 10; log(b, x): base b
    Log,
    Pi,
    Degrees,
    Radians,
    /// trunc(x [, digits]): numeric or double precision
    Trunc,
    /// sign(x): numeric or double precision
    Sign,
    /// mod(a, b): integers or numeric
    Mod,
    /// div(a, b): the integer quotient of numerics
    Div,
    /// scale(n): a numeric's digits after the point
    Scale,
    /// min_scale(n): the fewest digits after the point that show a numeric exactly
    MinScale,
    /// trim_scale(n): a numeric without trailing zeros after the point
    TrimScale,
    /// to_hex(n): `true` of an integer (negative values as their 32-bit two's complement),
    /// `false` of a bigint
    ToHex(bool),
    /// width_bucket(operand, low, high, count)
    WidthBucket,
    /// `a << n` (left) and `a >> n` of an integer `bits` wide
    Shift {
        /// A left shift.
        left: bool,
        /// The width of the integer type (16, 32 or 64).
        bits: u8,
    },
    /// `~a`: the bits of an integer inverted
    BitNot,
    /// gcd(a, b) (`false`) or lcm(a, b) (`true`): integers or numeric
    Gcd(bool),
    /// factorial(n): a numeric
    Factorial,
}

fn invalid(message: impl Into<String>) -> SqlError {
    SqlError::new(code::INVALID_PARAMETER_VALUE, message)
}

fn int_arg(v: &Value, what: &str) -> Result<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        other => Err(invalid(format!(
            "{what}: an integer was expected, not {}",
            other.natural_type().sql_name()
        ))),
    }
}

fn bounded(s: String) -> Result<Value> {
    if s.len() > TEXT_BYTES_MAX {
        return Err(too_long());
    }
    Ok(Value::Text(s))
}

/// Evaluates a string function on arguments already NULL-checked where it is strict.
pub(crate) fn eval(f: StrFunc, args: &[Value], style: Style) -> Result<Value> {
    let text = |i: usize| args.get(i).map(text_arg).unwrap_or_default();
    Ok(match f {
        StrFunc::Replace => {
            let (s, from) = (text(0), text(1));
            if from.is_empty() {
                Value::Text(s)
            } else {
                let to = text(2);
                let hits = s.matches(from.as_str()).count();
                if s.len() + hits.saturating_mul(to.len()) > TEXT_BYTES_MAX {
                    return Err(too_long());
                }
                Value::Text(s.replace(&from, &to))
            }
        }
        StrFunc::Translate => {
            let (from, to): (Vec<char>, Vec<char>) =
                (text(1).chars().collect(), text(2).chars().collect());
            let mut out = String::new();
            for c in text(0).chars() {
                match from.iter().position(|&x| x == c) {
                    Some(i) => out.extend(to.get(i)),
                    None => out.push(c),
                }
            }
            Value::Text(out)
        }
        StrFunc::SplitPart => {
            let (s, delimiter) = (text(0), text(1));
            let n = int_arg(&args[2], "split_part")?;
            if n == 0 {
                return Err(invalid("field position must not be zero"));
            }
            let parts: Vec<&str> = if delimiter.is_empty() {
                if s.is_empty() {
                    vec![]
                } else {
                    vec![s.as_str()]
                }
            } else {
                s.split(delimiter.as_str()).collect()
            };
            let at = if n > 0 { n - 1 } else { parts.len() as i64 + n };
            let part = usize::try_from(at).ok().and_then(|i| parts.get(i)).copied().unwrap_or("");
            Value::Text(part.to_string())
        }
        StrFunc::Strpos => {
            let (s, sub) = (text(0), text(1));
            Value::Int(match s.find(&sub) {
                Some(byte) => s[..byte].chars().count() as i64 + 1,
                None => 0,
            })
        }
        StrFunc::Left | StrFunc::Right => {
            let chars: Vec<char> = text(0).chars().collect();
            let n = int_arg(&args[1], "left/right")?;
            let len = chars.len() as i64;
            let keep = if n >= 0 { n.min(len) } else { (len + n).max(0) } as usize;
            let part =
                if f == StrFunc::Left { &chars[..keep] } else { &chars[chars.len() - keep..] };
            Value::Text(part.iter().collect())
        }
        StrFunc::Lpad | StrFunc::Rpad => {
            let s: Vec<char> = text(0).chars().collect();
            let len = int_arg(&args[1], "lpad/rpad")?.max(0) as usize;
            if len.saturating_mul(4) > TEXT_BYTES_MAX {
                return Err(too_long());
            }
            let fill: Vec<char> =
                if args.len() > 2 { text(2).chars().collect() } else { vec![' '] };
            if s.len() >= len || fill.is_empty() {
                return Ok(Value::Text(s[..len.min(s.len())].iter().collect()));
            }
            let pad: String = fill.iter().cycle().take(len - s.len()).collect();
            let s: String = s.iter().collect();
            Value::Text(if f == StrFunc::Lpad { pad + &s } else { s + &pad })
        }
        StrFunc::Reverse => Value::Text(text(0).chars().rev().collect()),
        StrFunc::Initcap => {
            let mut out = String::new();
            let mut in_word = false;
            for c in text(0).chars() {
                if in_word {
                    out.extend(c.to_lowercase());
                } else {
                    out.extend(c.to_uppercase());
                }
                in_word = c.is_alphanumeric();
            }
            Value::Text(out)
        }
        StrFunc::Ascii => Value::Int(text(0).chars().next().map_or(0, |c| c as i64)),
        StrFunc::Chr => {
            let n = int_arg(&args[0], "chr")?;
            if n == 0 {
                return Err(SqlError::new(code::PROGRAM_LIMIT, "null character not permitted"));
            }
            match u32::try_from(n).ok().and_then(char::from_u32) {
                Some(c) => Value::Text(c.to_string()),
                None => {
                    return Err(SqlError::new(
                        code::PROGRAM_LIMIT,
                        "requested character too large for encoding",
                    ))
                }
            }
        }
        StrFunc::ConcatWs => {
            let Some(separator) = args.first().filter(|v| !v.is_null()).map(text_arg) else {
                return Ok(Value::Null);
            };
            let parts: Vec<String> =
                args[1..].iter().filter(|v| !v.is_null()).map(|v| value_text(v, style)).collect();
            bounded(parts.join(&separator))?
        }
        StrFunc::StartsWith => Value::Bool(text(0).starts_with(&text(1))),
        StrFunc::QuoteNullable => match args.first() {
            None | Some(Value::Null) => Value::Text("NULL".into()),
            Some(v) => Value::Text(quote_literal(&value_text(v, style))),
        },
        StrFunc::Format => format(args, style)?,
        StrFunc::RegexpReplace => {
            let flags = flags(args.get(3))?;
            let replacement = replacement(&text(2));
            let s = text(0);
            let out = super::ops::with_regex(&text(1), flags.options, |re| {
                if flags.global {
                    re.replace_all(&s, replacement.as_str()).into_owned()
                } else {
                    re.replace(&s, replacement.as_str()).into_owned()
                }
            })?;
            bounded(out)?
        }
        StrFunc::RegexpMatch => {
            let flags = flags(args.get(2))?;
            if flags.global {
                return Err(invalid("regexp_match() does not support the \"global\" option"));
            }
            let s = text(0);
            super::ops::with_regex(&text(1), flags.options, |re| {
                re.captures(&s).map_or(Value::Null, |caps| {
                    let groups: Vec<Value> = if caps.len() == 1 {
                        vec![Value::Text(caps[0].to_string())]
                    } else {
                        caps.iter()
                            .skip(1)
                            .map(|m| m.map_or(Value::Null, |m| Value::Text(m.as_str().into())))
                            .collect()
                    };
                    Value::Array(groups)
                })
            })?
        }
        // No rows of a NULL argument (the function is strict).
        StrFunc::RegexpMatches if args.iter().any(Value::is_null) => Value::Array(vec![]),
        StrFunc::RegexpMatches => {
            let flags = flags(args.get(2))?;
            let s = text(0);
            let limit = crate::array::ELEMENTS_MAX;
            super::ops::with_regex(&text(1), flags.options, |re| {
                let mut rows = Vec::new();
                for caps in re.captures_iter(&s) {
                    if rows.len() == limit {
                        return Err(SqlError::new(
                            code::PROGRAM_LIMIT,
                            format!("regexp_matches yields at most {limit} rows per call"),
                        ));
                    }
                    rows.push(Value::Array(if caps.len() == 1 {
                        vec![Value::Text(caps[0].to_string())]
                    } else {
                        caps.iter()
                            .skip(1)
                            .map(|m| m.map_or(Value::Null, |m| Value::Text(m.as_str().into())))
                            .collect()
                    }));
                    if !flags.global {
                        break;
                    }
                }
                Ok(Value::Array(rows))
            })??
        }
        StrFunc::RegexpSplit => {
            let flags = flags(args.get(2))?;
            if flags.global {
                return Err(invalid(
                    "regexp_split_to_array() does not support the \"global\" option",
                ));
            }
            let s = text(0);
            let parts = super::ops::with_regex(&text(1), flags.options, |re| {
                split(re, &s).into_iter().map(|p| Value::Text(p.to_string())).collect::<Vec<_>>()
            })?;
            crate::array::check_len(parts.len())?;
            Value::Array(parts)
        }
        StrFunc::SimilarEscape => {
            if args.iter().any(Value::is_null) {
                return Ok(Value::Null);
            }
            let escape = args.get(1).map(text_arg);
            Value::Text(super::ops::similar_to_regex(&text(0), escape.as_deref())?)
        }
        StrFunc::LikeEscape => {
            let escape: Vec<char> = text(1).chars().collect();
            if escape.len() > 1 {
                return Err(SqlError::new("22025", "invalid escape string")
                    .hint("Escape string must be empty or one character."));
            }
            let (pattern, mut out) = (text(0), String::new());
            let mut chars = pattern.chars();
            while let Some(c) = chars.next() {
                if escape.first() == Some(&c) {
                    match chars.next() {
                        Some(next) => {
                            out.push('\\');
                            out.push(next);
                        }
                        None => {
                            return Err(SqlError::new(
                                "22025",
                                "LIKE pattern must not end with escape character",
                            ))
                        }
                    }
                } else if c == '\\' {
                    out.push_str("\\\\");
                } else {
                    out.push(c);
                }
            }
            bounded(out)?
        }
        StrFunc::Overlay => {
            let s: Vec<char> = text(0).chars().collect();
            let placing = text(1);
            let from = int_arg(&args[2], "overlay")?;
            let count = match args.get(3) {
                Some(v) => int_arg(v, "overlay")?,
                None => placing.chars().count() as i64,
            };
            if from < 1 || count < 0 {
                return Err(SqlError::new("22011", "negative substring length not allowed"));
            }
            let start = ((from - 1) as usize).min(s.len());
            let end = start.saturating_add(count as usize).min(s.len());
            let mut out: String = s[..start].iter().collect();
            out.push_str(&placing);
            out.extend(&s[end..]);
            bounded(out)?
        }
    })
}

/// A value as `concat` shows it: its own type's text, written in the session's `style`.
fn value_text(v: &Value, style: Style) -> String {
    v.to_text_in(v.natural_type(), style).unwrap_or_default()
}

struct Flags {
    global: bool,
    options: super::ops::RegexOptions,
}

/// PostgreSQL's regular-expression flags that Kiln applies: `g`, `i`, `c` (the default),
/// `n` (and its synonym `m`), `s` (the default) and `x`.
fn flags(v: Option<&Value>) -> Result<Flags> {
    let mut f = Flags { global: false, options: Default::default() };
    for c in v.map(text_arg).unwrap_or_default().chars() {
        match c {
            'g' => f.global = true,
            'i' => f.options.insensitive = true,
            'c' => f.options.insensitive = false,
            'n' | 'm' => f.options.newline = true,
            's' => f.options.newline = false,
            'x' => f.options.expanded = true,
            't' => f.options.expanded = false,
            other => {
                return Err(invalid(format!("invalid regular expression option: \"{other}\""))
                    .hint("Kiln applies the flags g, i, c, n, m, s, x and t."))
            }
        }
    }
    Ok(f)
}

/// A PostgreSQL replacement (`\1` … `\9` groups, `\&` the whole match, `\\` a backslash) in
/// the regex crate's syntax.
fn replacement(r: &str) -> String {
    let mut out = String::with_capacity(r.len());
    let mut chars = r.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek().copied() {
                Some(d @ '1'..='9') => {
                    chars.next();
                    out.push_str(&format!("${{{d}}}"));
                }
                Some('&') => {
                    chars.next();
                    out.push_str("${0}");
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            },
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out
}

/// PostgreSQL's regexp split: an empty match splits between characters, but not at either
/// end of the string nor right where the previous match ended.
fn split<'s>(re: &regex::Regex, s: &'s str) -> Vec<&'s str> {
    let mut parts = Vec::new();
    let mut start = 0;
    for m in re.find_iter(s) {
        if m.start() == m.end() && (m.start() == 0 || m.start() >= s.len() || m.start() == start) {
            continue;
        }
        parts.push(&s[start..m.start()]);
        start = m.end();
    }
    parts.push(&s[start..]);
    parts
}

/// format(template, args…): `%s`, `%I`, `%L`, `%%`, with `n$` positions and `-`/width.
fn format(args: &[Value], style: Style) -> Result<Value> {
    let Some(template) = args.first().filter(|v| !v.is_null()).map(text_arg) else {
        return Ok(Value::Null);
    };
    let values = &args[1..];
    let mut out = String::new();
    let mut next = 0usize;
    let mut chars = template.chars().peekable();
    let unterminated =
        || invalid("unterminated format() type specifier").hint("For a single \"%\" use \"%%\".");
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        // [n$][-][width]type
        let mut digits = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        let mut position = None;
        if chars.peek() == Some(&'$') && !digits.is_empty() {
            chars.next();
            let n: usize =
                digits.parse().map_err(|_| invalid("argument number is out of range"))?;
            if n == 0 {
                return Err(invalid(
                    "format specifies argument 0, but arguments are numbered from 1",
                ));
            }
            position = Some(n - 1);
            digits.clear();
        }
        let left = chars.peek() == Some(&'-');
        if left {
            chars.next();
        }
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        let width: usize = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| invalid("number is out of range"))?
        };
        if width > TEXT_BYTES_MAX {
            return Err(too_long());
        }
        let kind = chars.next().ok_or_else(unterminated)?;
        let i = position.unwrap_or(next);
        next = i + 1;
        let Some(v) = values.get(i) else {
            return Err(invalid("too few arguments for format()"));
        };
        let piece = match kind {
            's' => {
                if v.is_null() {
                    String::new()
                } else {
                    value_text(v, style)
                }
            }
            'I' => {
                if v.is_null() {
                    return Err(SqlError::new(
                        "22004",
                        "null values cannot be formatted as an SQL identifier",
                    ));
                }
                crate::bind::quote_ident(&value_text(v, style))
            }
            'L' => {
                if v.is_null() {
                    "NULL".into()
                } else {
                    quote_literal(&value_text(v, style))
                }
            }
            other => {
                return Err(invalid(format!("unrecognized format() type specifier \"{other}\""))
                    .hint("For a single \"%\" use \"%%\"."))
            }
        };
        let pad = width.saturating_sub(piece.chars().count());
        if left {
            out.push_str(&piece);
            out.extend(std::iter::repeat_n(' ', pad));
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&piece);
        }
        if out.len() > TEXT_BYTES_MAX {
            return Err(too_long());
        }
    }
    Ok(Value::Text(out))
}

/// Evaluates a mathematical function.
pub(crate) fn eval_math(f: MathFunc, args: &[Value]) -> Result<Value> {
    use crate::numeric::Numeric;
    let float = |i: usize| -> Result<f64> {
        match args.get(i) {
            Some(Value::Float(x)) => Ok(*x),
            Some(Value::Int(x)) => Ok(*x as f64),
            Some(Value::Numeric(d)) => super::ops::numeric_to_float(d),
            other => Err(invalid(format!(
                "a number was expected, not {}",
                other.map_or("nothing".into(), |v| v.natural_type().sql_name())
            ))),
        }
    };
    let domain = |what: &str| SqlError::new("2201F", what.to_string());
    // The numeric forms: an argument is numeric (the binder sees that none is a double;
    // integers may stay integers).
    let exact: Option<Vec<Numeric>> = args
        .iter()
        .map(|a| match a {
            Value::Numeric(d) => Some(d.clone()),
            Value::Int(i) => Some(Numeric::from(*i)),
            _ => None,
        })
        .collect();
    let any_numeric = args.iter().any(|a| matches!(a, Value::Numeric(_)));
    if let (Some(exact), true) = (exact, any_numeric) {
        use crate::numeric_math as m;
        let numeric = match (f, exact.as_slice()) {
            (MathFunc::Sqrt, [x]) => Some(m::sqrt(x)?),
            (MathFunc::Exp, [x]) => Some(m::exp(x)?),
            (MathFunc::Ln, [x]) => Some(m::ln(x)?),
            (MathFunc::Log, [x]) => Some(m::log(&Numeric::from(10), x)?),
            (MathFunc::Log, [base, x]) => Some(m::log(base, x)?),
            _ => None,
        };
        if let Some(n) = numeric {
            return Ok(Value::Numeric(n));
        }
    }
    Ok(match f {
        MathFunc::Sqrt => {
            let x = float(0)?;
            if x < 0.0 {
                return Err(domain("cannot take square root of a negative number"));
            }
            Value::Float(x.sqrt())
        }
        MathFunc::Cbrt => Value::Float(float(0)?.cbrt()),
        MathFunc::Exp => {
            let r = float(0)?.exp();
            if r.is_infinite() {
                return Err(SqlError::new(
                    code::NUMERIC_OUT_OF_RANGE,
                    "value out of range: overflow",
                ));
            }
            Value::Float(r)
        }
        MathFunc::Ln | MathFunc::Log => {
            let (base, x) =
                if args.len() == 2 { (Some(float(0)?), float(1)?) } else { (None, float(0)?) };
            let log_error = |what: &str| SqlError::new("2201E", what.to_string());
            if x == 0.0 || base == Some(0.0) {
                return Err(log_error("cannot take logarithm of zero"));
            }
            if x < 0.0 || base.is_some_and(|b| b < 0.0) {
                return Err(log_error("cannot take logarithm of a negative number"));
            }
            Value::Float(match (f, base) {
                (MathFunc::Ln, _) => x.ln(),
                (_, Some(b)) => x.ln() / b.ln(),
                _ => x.log10(),
            })
        }
        MathFunc::Pi => Value::Float(std::f64::consts::PI),
        MathFunc::Degrees => Value::Float(float(0)?.to_degrees()),
        MathFunc::Radians => Value::Float(float(0)?.to_radians()),
        MathFunc::Trunc => {
            let digits = match args.get(1) {
                Some(v) => int_arg(v, "trunc")?,
                None => 0,
            };
            match &args[0] {
                Value::Numeric(d) => Value::Numeric(d.trunc(digits)),
                _ => {
                    let scale = 10f64.powi(digits.clamp(-300, 300) as i32);
                    Value::Float((float(0)? * scale).trunc() / scale)
                }
            }
        }
        MathFunc::Scale | MathFunc::MinScale | MathFunc::TrimScale => {
            let Value::Numeric(d) = &args[0] else {
                return Err(invalid("a numeric was expected".to_string()));
            };
            match f {
                MathFunc::Scale => Value::Int(d.scale() as i64),
                MathFunc::MinScale => Value::Int(d.min_scale() as i64),
                _ => Value::Numeric(d.normalized()),
            }
        }
        MathFunc::Sign => match &args[0] {
            Value::Numeric(d) => Value::Numeric(Numeric::from(d.signum() as i64)),
            _ => {
                let x = float(0)?;
                Value::Float(if x == 0.0 || x.is_nan() { x } else { x.signum() })
            }
        },
        MathFunc::ToHex(narrow) => {
            let n = int_arg(&args[0], "to_hex")?;
            Value::Text(if narrow { format!("{:x}", n as i32 as u32) } else { format!("{n:x}") })
        }
        MathFunc::WidthBucket => width_bucket(args)?,
        MathFunc::Gcd(lcm) => gcd(&args[0], &args[1], lcm)?,
        MathFunc::Factorial => {
            let n = int_arg(&args[0], "factorial")?;
            if n < 0 {
                return Err(SqlError::new(
                    code::NUMERIC_OUT_OF_RANGE,
                    "factorial of a negative number is undefined",
                ));
            }
            // 32178! has more digits than a numeric holds (PostgreSQL's bound too).
            if n > 32_177 {
                return Err(SqlError::new(
                    code::NUMERIC_OUT_OF_RANGE,
                    "value overflows numeric format",
                ));
            }
            let mut product = Numeric::from(1);
            for k in 2..=n {
                product = product.mul(&Numeric::from(k))?;
            }
            Value::Numeric(product)
        }
        MathFunc::BitNot => Value::Int(!int_arg(&args[0], "~")?),
        MathFunc::Shift { left, bits } => {
            let (a, n) = (int_arg(&args[0], "shift")?, int_arg(&args[1], "shift")?);
            // As PostgreSQL computes it in C on x86: the count modulo the width of the
            // (promoted) operand, the result cut to the type.
            Value::Int(match bits {
                64 => {
                    let n = (n as u32) & 63;
                    if left {
                        a.wrapping_shl(n)
                    } else {
                        a >> n
                    }
                }
                _ => {
                    let n = (n as u32) & 31;
                    let r = if left { (a as i32).wrapping_shl(n) } else { (a as i32) >> n };
                    if bits == 16 {
                        r as i16 as i64
                    } else {
                        r as i64
                    }
                }
            })
        }
        MathFunc::Mod | MathFunc::Div => match (&args[0], &args[1]) {
            (Value::Int(a), Value::Int(b)) => {
                if *b == 0 {
                    return Err(super::ops::div_zero());
                }
                Value::Int(if f == MathFunc::Mod { a.wrapping_rem(*b) } else { a.wrapping_div(*b) })
            }
            (a, b) => {
                let num = |v: &Value| match v {
                    Value::Numeric(d) => Ok(d.clone()),
                    Value::Int(i) => Ok(Numeric::from(*i)),
                    other => Err(invalid(format!(
                        "a number was expected, not {}",
                        other.natural_type().sql_name()
                    ))),
                };
                let (a, b) = (num(a)?, num(b)?);
                Value::Numeric(if f == MathFunc::Mod { a.rem(&b)? } else { a.div_trunc(&b)? })
            }
        },
    })
}

/// gcd(a, b), or (`lcm`) lcm(a, b), of integers or numerics: never negative; 0 when both
/// are 0 (lcm: when either is), as in PostgreSQL.
fn gcd(a: &Value, b: &Value, lcm: bool) -> Result<Value> {
    use crate::numeric::Numeric;
    use crate::types::DataType;
    if let (Value::Int(a), Value::Int(b)) = (a, b) {
        let (mut x, mut y) = ((*a as i128).abs(), (*b as i128).abs());
        while y != 0 {
            (x, y) = (y, x % y);
        }
        let out = match lcm {
            false => x,
            true if *a == 0 || *b == 0 => 0,
            true => (*a as i128 / x * *b as i128).abs(),
        };
        return i64::try_from(out)
            .map(Value::Int)
            .map_err(|_| crate::types::out_of_range(DataType::Int8));
    }
    let num = |v: &Value| match v {
        Value::Numeric(d) => Ok(d.clone()),
        Value::Int(i) => Ok(Numeric::from(*i)),
        other => {
            Err(invalid(format!("a number was expected, not {}", other.natural_type().sql_name())))
        }
    };
    let (a, b) = (num(a)?, num(b)?);
    let (mut x, mut y) = (a.abs(), b.abs());
    while !y.is_zero() {
        let r = x.rem(&y)?;
        x = y;
        y = r;
    }
    if !lcm {
        return Ok(Value::Numeric(x));
    }
    if a.is_zero() || b.is_zero() {
        return Ok(Value::Numeric(Numeric::ZERO));
    }
    Ok(Value::Numeric(a.div_trunc(&x)?.mul(&b)?.abs()))
}

/// width_bucket(operand, b1, b2, count): which of `count` equal-width buckets between b1
/// and b2 the operand falls in (0 below, count + 1 above; b1 > b2 counts downwards), in
/// exact numeric arithmetic unless an argument is double precision.
fn width_bucket(args: &[Value]) -> Result<Value> {
    use crate::numeric::Numeric;
    let bucket_error = |m: &str| SqlError::new("2201G", m.to_string());
    let count = int_arg(&args[3], "width_bucket")?;
    if count <= 0 {
        return Err(bucket_error("count must be greater than zero"));
    }
    let floats = args[..3].iter().any(|v| matches!(v, Value::Float(_)));
    // The bucket number as a fraction of count: (x - lo) / (hi - lo), counted from lo.
    let position: Option<f64> = if floats {
        let f = |v: &Value| match v {
            Value::Float(x) => Ok(*x),
            Value::Int(i) => Ok(*i as f64),
            Value::Numeric(d) => super::ops::numeric_to_float(d),
            other => Err(invalid(format!(
                "width_bucket: a number was expected, not {}",
                other.natural_type().sql_name()
            ))),
        };
        let (x, lo, hi) = (f(&args[0])?, f(&args[1])?, f(&args[2])?);
        if x.is_nan() || lo.is_nan() || hi.is_nan() {
            return Err(bucket_error("operand, lower bound, and upper bound cannot be NaN"));
        }
        if !lo.is_finite() || !hi.is_finite() {
            return Err(bucket_error("lower and upper bounds must be finite"));
        }
        if lo == hi {
            return Err(bucket_error("lower bound cannot equal upper bound"));
        }
        match outside(x, lo, hi) {
            Some(side) => side,
            None => Some(((x - lo) / (hi - lo) * count as f64).floor()),
        }
    } else {
        let d = |v: &Value| match v {
            Value::Numeric(d) => Ok(d.clone()),
            Value::Int(i) => Ok(Numeric::from(*i)),
            other => Err(invalid(format!(
                "width_bucket: a number was expected, not {}",
                other.natural_type().sql_name()
            ))),
        };
        let (x, lo, hi) = (d(&args[0])?, d(&args[1])?, d(&args[2])?);
        if lo == hi {
            return Err(bucket_error("lower bound cannot equal upper bound"));
        }
        match outside(&x, &lo, &hi) {
            Some(side) => side,
            None => {
                // floor((x - lo) × count / (hi - lo)), exactly.
                let n = x.sub(&lo)?.mul(&Numeric::from(count))?;
                Some(n.div_floor(&hi.sub(&lo)?)?.to_f64().unwrap_or(0.0))
            }
        }
    };
    let bucket = match position {
        None => 0,
        Some(p) if p.is_infinite() => count.saturating_add(1),
        Some(p) => p as i64 + 1,
    };
    if bucket > i32::MAX as i64 {
        return Err(SqlError::new(code::NUMERIC_OUT_OF_RANGE, "integer out of range"));
    }
    Ok(Value::Int(bucket))
}

/// Where width_bucket's operand lies outside the buckets from `lo` to `hi` (counting down
/// when `lo > hi`): `Some(None)` before the first, `Some(Some(∞))` past the last, `None`
/// inside.
fn outside<T: PartialOrd>(x: T, lo: T, hi: T) -> Option<Option<f64>> {
    let (below, above) = if lo < hi { (x < lo, x >= hi) } else { (x > lo, x <= hi) };
    if below {
        Some(None)
    } else if above {
        Some(Some(f64::INFINITY))
    } else {
        None
    }
}
