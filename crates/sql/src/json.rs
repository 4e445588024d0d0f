//! `json` and `jsonb`: parsing, PostgreSQL's text forms, and the operators' navigation.
//!
//! A value of either type is held as text (`Value::Text`); the type says how to read it. A
//! `json` value is its input, validated and kept as written (whitespace, key order, duplicate
//! keys), and `->` on it answers the member's text as written, the last of duplicate keys
//! winning. A `jsonb` value is kept in PostgreSQL's canonical form: keys deduplicated (the
//! last wins) and ordered shorter first, then bytewise; numbers as `numeric` writes them
//! (`1e3` is `1000`, `1.50` stays); `", "` and `": "` between items.
//!
//! Parsing bounds nesting (a deep document answers 54001, never a stack overflow).

use crate::error::{code, Result, SqlError};

/// How deep arrays and objects may nest.
pub const DEPTH_MAX: usize = 1000;

/// The largest exponent a number may be written with (its digits are spelled out).
const EXPONENT_MAX: i64 = 10_000;

/// A parsed JSON value. Numbers keep their text; every value remembers where it was in the
/// input (`json`'s operators answer that text).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// null
    Null,
    /// true / false
    Bool(bool),
    /// A number, as written.
    Number(String),
    /// A string, unescaped.
    String(String),
    /// An array's elements with their spans.
    Array(Vec<(Json, Span)>),
    /// An object's members in input order (duplicates kept) with their values' spans.
    Object(Vec<(String, Json, Span)>),
}

/// Byte offsets of a value in the input.
pub type Span = (usize, usize);

fn invalid(detail: impl Into<String>, text: &str) -> SqlError {
    let mut context: String = text.chars().take(60).collect();
    if context.len() < text.len() {
        context.push_str("...");
    }
    SqlError::new(code::INVALID_TEXT, "invalid input syntax for type json")
        .detail(detail.into())
        .hint(format!("JSON data: {context}"))
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn token_error(&self) -> SqlError {
        if self.at >= self.bytes.len() {
            return invalid("The input string ended unexpectedly.", self.text);
        }
        let rest = &self.text[self.at..];
        let end = rest
            .char_indices()
            .find(|(i, c)| *i > 0 && !(c.is_alphanumeric() || *c == '_'))
            .map_or(rest.len(), |(i, _)| i);
        invalid(format!("Token \"{}\" is invalid.", &rest[..end.max(1).min(rest.len())]), self.text)
    }

    #[recursive::recursive]
    fn value(&mut self, depth: usize) -> Result<(Json, Span)> {
        if depth > DEPTH_MAX {
            return Err(SqlError::new(
                "54001",
                format!("stack depth limit exceeded: JSON nests over {DEPTH_MAX} levels deep"),
            ));
        }
        self.skip_ws();
        let start = self.at;
        let v = match self.bytes.get(self.at) {
            None => return Err(invalid("The input string ended unexpectedly.", self.text)),
            Some(b'{') => {
                let mut members = Vec::new();
                self.list(b'}', |p| {
                    p.skip_ws();
                    if p.bytes.get(p.at) != Some(&b'"') {
                        return Err(p.expected("string"));
                    }
                    let key = p.string()?;
                    p.skip_ws();
                    if p.bytes.get(p.at) != Some(&b':') {
                        return Err(p.expected("\":\""));
                    }
                    p.at += 1;
                    let (v, span) = p.value(depth + 1)?;
                    members.push((key, v, span));
                    Ok(())
                })?;
                Json::Object(members)
            }
            Some(b'[') => {
                let mut items = Vec::new();
                self.list(b']', |p| {
                    items.push(p.value(depth + 1)?);
                    Ok(())
                })?;
                Json::Array(items)
            }
            Some(b'"') => Json::String(self.string()?),
            Some(b'-' | b'0'..=b'9') => Json::Number(self.number()?),
            Some(_) => {
                for (word, v) in [("true", Json::Bool(true)), ("false", Json::Bool(false))]
                    .into_iter()
                    .chain([("null", Json::Null)])
                {
                    if self.text[self.at..].starts_with(word)
                        && !self
                            .bytes
                            .get(self.at + word.len())
                            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
                    {
                        self.at += word.len();
                        return Ok((v, (start, self.at)));
                    }
                }
                return Err(self.token_error());
            }
        };
        Ok((v, (start, self.at)))
    }

    /// The items of an array or object after its opening bracket, each read by `item`,
    /// separated by commas, up to `close`.
    fn list(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Result<()>) -> Result<()> {
        self.at += 1;
        self.skip_ws();
        if self.bytes.get(self.at) == Some(&close) {
            self.at += 1;
            return Ok(());
        }
        loop {
            item(self)?;
            self.skip_ws();
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(&c) if c == close => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(self.expected(&format!("\",\" or \"{}\"", char::from(close)))),
            }
        }
    }

    fn expected(&self, what: &str) -> SqlError {
        if self.at >= self.bytes.len() {
            return invalid("The input string ended unexpectedly.", self.text);
        }
        let e = self.token_error();
        let detail = e.detail.clone().unwrap_or_default();
        invalid(
            format!("Expected {what}, but found {}", detail.trim_start_matches("Token ")),
            self.text,
        )
    }

    fn number(&mut self) -> Result<String> {
        let start = self.at;
        let b = self.bytes;
        if b.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let digits = |p: &mut Self| {
            let s = p.at;
            while p.bytes.get(p.at).is_some_and(u8::is_ascii_digit) {
                p.at += 1;
            }
            p.at - s
        };
        let int_start = self.at;
        let n = digits(self);
        // No leading zeros, at least one digit.
        if n == 0 || (n > 1 && b[int_start] == b'0') {
            return Err(self.token_error_from(start));
        }
        if b.get(self.at) == Some(&b'.') {
            self.at += 1;
            if digits(self) == 0 {
                return Err(self.token_error_from(start));
            }
        }
        if let Some(b'e' | b'E') = b.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = b.get(self.at) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return Err(self.token_error_from(start));
            }
        }
        if b.get(self.at).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'.') {
            return Err(self.token_error_from(start));
        }
        Ok(self.text[start..self.at].to_string())
    }

    fn token_error_from(&mut self, start: usize) -> SqlError {
        self.at = start;
        self.token_error()
    }

    fn string(&mut self) -> Result<String> {
        self.at += 1; // the opening quote
        let mut out = String::new();
        loop {
            let rest = &self.text[self.at..];
            let stop = rest.find(['"', '\\']).unwrap_or(rest.len());
            let plain = &rest[..stop];
            if let Some(c) = plain.chars().find(|c| (*c as u32) < 0x20) {
                return Err(invalid(
                    format!("Character with value 0x{:02x} must be escaped.", c as u32),
                    self.text,
                ));
            }
            out.push_str(plain);
            self.at += stop;
            match self.bytes.get(self.at) {
                None => return Err(invalid("The input string ended unexpectedly.", self.text)),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                _ => {
                    self.at += 1;
                    let Some(&e) = self.bytes.get(self.at) else {
                        return Err(invalid("The input string ended unexpectedly.", self.text));
                    };
                    self.at += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let c = if (0xd800..0xdc00).contains(&hi) {
                                if !self.text[self.at..].starts_with("\\u") {
                                    return Err(surrogate(self.text));
                                }
                                self.at += 2;
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return Err(surrogate(self.text));
                                }
                                char::from_u32(0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00))
                            } else if (0xdc00..0xe000).contains(&hi) {
                                return Err(surrogate(self.text));
                            } else {
                                char::from_u32(hi)
                            };
                            match c {
                                Some('\0') | None => {
                                    return Err(SqlError::new(
                                        "22P05",
                                        "unsupported Unicode escape sequence",
                                    )
                                    .detail("\\u0000 cannot be converted to text."))
                                }
                                Some(c) => out.push(c),
                            }
                        }
                        other => {
                            return Err(invalid(
                                format!(
                                    "Escape sequence \"\\{}\" is invalid.",
                                    char::from(other).escape_default()
                                ),
                                self.text,
                            ))
                        }
                    }
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32> {
        let h = self
            .text
            .get(self.at..self.at + 4)
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
        let Some(h) = h else {
            return Err(invalid("\"\\u\" must be followed by four hexadecimal digits.", self.text));
        };
        self.at += 4;
        Ok(u32::from_str_radix(h, 16).unwrap_or(0))
    }
}

fn surrogate(text: &str) -> SqlError {
    invalid("Unicode low surrogate must follow a high surrogate.", text)
}

/// Parses a JSON document (one value, whitespace around it).
pub fn parse(text: &str) -> Result<Json> {
    let mut p = Parser { text, bytes: text.as_bytes(), at: 0 };
    let (v, _) = p.value(0)?;
    p.skip_ws();
    if p.at < p.bytes.len() {
        return Err(p.token_error());
    }
    Ok(v)
}

/// A `json` value's text: the input, once it parses.
pub fn json_in(text: &str) -> Result<String> {
    parse(text)?;
    Ok(text.to_string())
}

/// A `jsonb` value's text: the canonical form of the input.
pub fn jsonb_in(text: &str) -> Result<String> {
    let v = parse(text)?;
    let mut out = String::with_capacity(text.len());
    write_jsonb(&mut out, &v)?;
    Ok(out)
}

/// The members of an object as jsonb keeps them: the last of duplicate keys, ordered by
/// length, then bytes.
pub fn jsonb_members(members: &[(String, Json, Span)]) -> Vec<(&str, &Json)> {
    let mut kept: Vec<(&str, &Json)> = Vec::with_capacity(members.len());
    for (k, v, _) in members {
        match kept.iter_mut().find(|(key, _)| *key == k) {
            Some(slot) => slot.1 = v,
            None => kept.push((k, v)),
        }
    }
    kept.sort_by(|a, b| a.0.len().cmp(&b.0.len()).then_with(|| a.0.as_bytes().cmp(b.0.as_bytes())));
    kept
}

/// Writes `v` in jsonb's canonical text.
#[recursive::recursive]
pub fn write_jsonb(out: &mut String, v: &Json) -> Result<()> {
    match v {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => out.push_str(&numeric_text(n)?),
        Json::String(s) => write_string(out, s),
        Json::Array(items) => {
            out.push('[');
            for (i, (item, _)) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_jsonb(out, item)?;
            }
            out.push(']');
        }
        Json::Object(members) => {
            out.push('{');
            for (i, (k, v)) in jsonb_members(members).into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(out, k);
                out.push_str(": ");
                write_jsonb(out, v)?;
            }
            out.push('}');
        }
    }
    if out.len() > crate::expr::TEXT_BYTES_MAX {
        return Err(crate::expr::too_long());
    }
    Ok(())
}

/// A string as JSON writes it: quotes, backslash escapes for `"`, `\` and control
/// characters, everything else as itself.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A JSON number as PostgreSQL's `numeric` writes it: the exponent spelled out, the digits
/// after the point kept (`1.50`), `-0` as `0`.
pub fn numeric_text(n: &str) -> Result<String> {
    let (negative, body) = match n.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, n),
    };
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], body[i + 1..].parse::<i64>().unwrap_or(i64::MAX)),
        None => (body, 0),
    };
    if exponent.abs() > EXPONENT_MAX {
        return Err(SqlError::new(
            code::NUMERIC_OUT_OF_RANGE,
            format!("value overflows numeric format: {n}"),
        ));
    }
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = format!("{int}{frac}");
    // The value is digits × 10^(exponent − frac.len()); it keeps max(0, frac − exponent)
    // places after the point.
    let scale = (frac.len() as i64 - exponent).max(0) as usize;
    let point = int.len() as i64 + exponent; // digits before the point
    let mut whole = String::new();
    let mut fraction = String::new();
    for (i, d) in digits.chars().enumerate() {
        if (i as i64) < point {
            whole.push(d);
        } else {
            fraction.push(d);
        }
    }
    if point > digits.len() as i64 {
        whole.extend(std::iter::repeat_n('0', (point - digits.len() as i64) as usize));
    }
    if point < 0 {
        fraction.insert_str(0, &"0".repeat((-point) as usize));
    }
    let whole = whole.trim_start_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    fraction.truncate(scale);
    while fraction.len() < scale {
        fraction.push('0');
    }
    let zero = whole == "0" && fraction.bytes().all(|b| b == b'0');
    let mut out = String::new();
    if negative && !zero {
        out.push('-');
    }
    out.push_str(whole);
    if scale > 0 {
        out.push('.');
        out.push_str(&fraction);
    }
    Ok(out)
}

/// The member `key` of an object (the last of duplicates), with its span.
pub fn member<'a>(v: &'a Json, key: &str) -> Option<(&'a Json, Span)> {
    match v {
        Json::Object(members) => {
            members.iter().rev().find(|(k, _, _)| k == key).map(|(_, v, s)| (v, *s))
        }
        _ => None,
    }
}

/// Element `i` of an array (negative counts from the end), with its span.
pub fn element(v: &Json, i: i64) -> Option<(&Json, Span)> {
    match v {
        Json::Array(items) => {
            let n = items.len() as i64;
            let i = if i < 0 { n + i } else { i };
            (0..n).contains(&i).then(|| (&items[i as usize].0, items[i as usize].1))
        }
        _ => None,
    }
}

/// A path step applied to `v`: a key of an object, or an index (in text) of an array.
pub fn step<'a>(v: &'a Json, key: &str) -> Option<(&'a Json, Span)> {
    match v {
        Json::Object(_) => member(v, key),
        Json::Array(_) => key.trim().parse::<i64>().ok().and_then(|i| element(v, i)),
        _ => None,
    }
}

/// The text a value answers as `json` (its input text) or `jsonb` (canonical).
pub fn value_text(v: &Json, span: Span, source: &str, jsonb: bool) -> Result<String> {
    if jsonb {
        let mut out = String::new();
        write_jsonb(&mut out, v)?;
        Ok(out)
    } else {
        Ok(source[span.0..span.1].to_string())
    }
}

/// What `->>` answers: a string unquoted, null as SQL NULL, anything else its text.
pub fn value_as_text(v: &Json, span: Span, source: &str, jsonb: bool) -> Result<Option<String>> {
    Ok(match v {
        Json::Null => None,
        Json::String(s) => Some(s.clone()),
        other => Some(value_text(other, span, source, jsonb)?),
    })
}

/// Whether two values are equal as jsonb compares them (numbers by value, objects by their
/// kept members).
#[recursive::recursive]
pub fn equal(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Null, Json::Null) => true,
        (Json::Bool(x), Json::Bool(y)) => x == y,
        (Json::String(x), Json::String(y)) => x == y,
        (Json::Number(x), Json::Number(y)) => numbers_equal(x, y),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((p, _), (q, _))| equal(p, q))
        }
        (Json::Object(x), Json::Object(y)) => {
            let (x, y) = (jsonb_members(x), jsonb_members(y));
            x.len() == y.len() && x.iter().zip(&y).all(|(p, q)| p.0 == q.0 && equal(p.1, q.1))
        }
        _ => false,
    }
}

/// jsonb's order: object > array > boolean > number > string > null; objects with more
/// pairs and arrays with more elements are greater, then members (key, then value, in
/// jsonb's key order) and elements compare in turn; numbers by value.
#[recursive::recursive]
pub fn compare(a: &Json, b: &Json) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let rank = |v: &Json| match v {
        Json::Null => 0,
        Json::String(_) => 1,
        Json::Number(_) => 2,
        Json::Bool(_) => 3,
        Json::Array(_) => 4,
        Json::Object(_) => 5,
    };
    match (a, b) {
        (Json::String(x), Json::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Json::Number(x), Json::Number(y)) => number_cmp(x, y),
        (Json::Bool(x), Json::Bool(y)) => x.cmp(y),
        (Json::Array(x), Json::Array(y)) => x.len().cmp(&y.len()).then_with(|| {
            x.iter()
                .zip(y)
                .map(|((p, _), (q, _))| compare(p, q))
                .find(|o| *o != Ordering::Equal)
                .unwrap_or(Ordering::Equal)
        }),
        (Json::Object(x), Json::Object(y)) => {
            let (x, y) = (jsonb_members(x), jsonb_members(y));
            x.len().cmp(&y.len()).then_with(|| {
                x.iter()
                    .zip(&y)
                    .map(|(p, q)| {
                        (p.0.len(), p.0.as_bytes())
                            .cmp(&(q.0.len(), q.0.as_bytes()))
                            .then_with(|| compare(p.1, q.1))
                    })
                    .find(|o| *o != Ordering::Equal)
                    .unwrap_or(Ordering::Equal)
            })
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Two JSON numbers by value (any size: compared as decimal digit strings).
fn number_cmp(x: &str, y: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let split = |n: &str| {
        let t = numeric_text(n).unwrap_or_else(|_| n.to_string());
        let (neg, body) = match t.strip_prefix('-') {
            Some(b) => (true, b.to_string()),
            None => (false, t),
        };
        let (w, f) = body
            .split_once('.')
            .map_or((body.clone(), String::new()), |(w, f)| (w.to_string(), f.to_string()));
        (neg, w, f.trim_end_matches('0').to_string())
    };
    let (xn, xw, xf) = split(x);
    let (yn, yw, yf) = split(y);
    let x_zero = xw == "0" && xf.is_empty();
    let y_zero = yw == "0" && yf.is_empty();
    let xn = xn && !x_zero;
    let yn = yn && !y_zero;
    let magnitude = xw.len().cmp(&yw.len()).then_with(|| xw.cmp(&yw)).then_with(|| xf.cmp(&yf));
    match (xn, yn) {
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
        (false, false) => magnitude,
        (true, true) => magnitude.reverse(),
    }
}

fn numbers_equal(x: &str, y: &str) -> bool {
    let norm = |n: &str| {
        let t = numeric_text(n).unwrap_or_else(|_| n.to_string());
        match t.split_once('.') {
            Some((w, f)) => {
                let f = f.trim_end_matches('0');
                if f.is_empty() {
                    w.to_string()
                } else {
                    format!("{w}.{f}")
                }
            }
            None => t,
        }
    };
    norm(x) == norm(y)
}

/// jsonb's `@>`: whether `a` contains `b` (objects: every member of `b` is contained in
/// `a`'s member of that key; arrays: every element of `b` is contained in some element of
/// `a`, and a scalar in an array contains as an element; scalars: equal).
#[recursive::recursive]
pub fn contains(a: &Json, b: &Json, top: bool) -> bool {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => jsonb_members(y).into_iter().all(|(k, bv)| {
            jsonb_members(x)
                .into_iter()
                .find(|(ka, _)| *ka == k)
                .is_some_and(|(_, av)| contains(av, bv, false))
        }),
        (Json::Array(x), Json::Array(y)) => {
            y.iter().all(|(bv, _)| x.iter().any(|(av, _)| contains(av, bv, false)))
        }
        // A raw scalar at the top contains in an array of it.
        (Json::Array(x), scalar) if top && !matches!(scalar, Json::Object(_)) => {
            x.iter().any(|(av, _)| equal(av, scalar))
        }
        (Json::Array(_) | Json::Object(_), _) | (_, Json::Array(_) | Json::Object(_)) => false,
        (x, y) => equal(x, y),
    }
}

/// jsonb's `?`: a key of an object, a string element of an array, or the string itself.
pub fn exists(v: &Json, key: &str) -> bool {
    match v {
        Json::Object(_) => member(v, key).is_some(),
        Json::Array(items) => items.iter().any(|(i, _)| matches!(i, Json::String(s) if s == key)),
        Json::String(s) => s == key,
        _ => false,
    }
}

/// The type name `jsonb_typeof` answers.
pub fn type_name(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

/// Removes nulls from objects, at every depth (`jsonb_strip_nulls`).
#[recursive::recursive]
pub fn strip_nulls(v: &Json) -> Json {
    match v {
        Json::Object(m) => Json::Object(
            m.iter()
                .filter(|(_, v, _)| !matches!(v, Json::Null))
                .map(|(k, v, s)| (k.clone(), strip_nulls(v), *s))
                .collect(),
        ),
        Json::Array(items) => {
            Json::Array(items.iter().map(|(v, s)| (strip_nulls(v), *s)).collect())
        }
        other => other.clone(),
    }
}

/// jsonb `||`: objects merge (the right's keys win), arrays concatenate, anything else is
/// wrapped in an array first.
pub fn concat(a: Json, b: Json) -> Json {
    let none = (0, 0);
    match (a, b) {
        (Json::Object(mut x), Json::Object(y)) => {
            x.extend(y);
            Json::Object(x)
        }
        (Json::Array(mut x), Json::Array(y)) => {
            x.extend(y);
            Json::Array(x)
        }
        (Json::Array(mut x), y) => {
            x.push((y, none));
            Json::Array(x)
        }
        (x, Json::Array(mut y)) => {
            y.insert(0, (x, none));
            Json::Array(y)
        }
        (x, y) => Json::Array(vec![(x, none), (y, none)]),
    }
}

/// jsonb `- key`: an object without the key, an array without the string elements equal to
/// it; `- index`: an array without that element.
pub fn delete(v: Json, key: Option<&str>, index: Option<i64>) -> Result<Json> {
    Ok(match (v, key, index) {
        (Json::Object(m), Some(k), _) => {
            Json::Object(m.into_iter().filter(|(mk, _, _)| mk != k).collect())
        }
        (Json::Array(items), Some(k), _) => Json::Array(
            items.into_iter().filter(|(i, _)| !matches!(i, Json::String(s) if s == k)).collect(),
        ),
        (Json::Array(mut items), None, Some(i)) => {
            let n = items.len() as i64;
            let i = if i < 0 { n + i } else { i };
            if (0..n).contains(&i) {
                items.remove(i as usize);
            }
            Json::Array(items)
        }
        (Json::Object(_), None, Some(_)) => {
            return Err(SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                "cannot delete from object using integer index",
            ))
        }
        _ => return Err(SqlError::new(code::INVALID_PARAMETER_VALUE, "cannot delete from scalar")),
    })
}

/// `jsonb_set(target, path, new, create_missing)`: `new` at `path`, the last step added when
/// missing and `create` allows it.
#[recursive::recursive]
pub fn set_path(v: Json, path: &[String], new: &Json, create: bool) -> Result<Json> {
    let Some((first, rest)) = path.split_first() else { return Ok(new.clone()) };
    let none = (0, 0);
    Ok(match v {
        Json::Object(mut m) => {
            match m.iter().rposition(|(k, _, _)| k == first) {
                Some(i) => {
                    let old = std::mem::replace(&mut m[i].1, Json::Null);
                    m[i].1 = set_path(old, rest, new, create)?;
                }
                None if rest.is_empty() && create => m.push((first.clone(), new.clone(), none)),
                None => {}
            }
            Json::Object(m)
        }
        Json::Array(mut items) => {
            let Ok(i) = first.trim().parse::<i64>() else {
                return Err(SqlError::new(
                    code::INVALID_TEXT,
                    format!("path element at position 1 is not an integer: \"{first}\""),
                ));
            };
            let n = items.len() as i64;
            let at = if i < 0 { n + i } else { i };
            if (0..n).contains(&at) {
                let old = std::mem::replace(&mut items[at as usize].0, Json::Null);
                items[at as usize].0 = set_path(old, rest, new, create)?;
            } else if rest.is_empty() && create {
                if at < 0 {
                    items.insert(0, (new.clone(), none));
                } else {
                    items.push((new.clone(), none));
                }
            }
            Json::Array(items)
        }
        _ => return Err(SqlError::new(code::INVALID_PARAMETER_VALUE, "cannot set path in scalar")),
    })
}

/// `jsonb_pretty`: four-space indentation, one member or element a line.
pub fn pretty(v: &Json) -> Result<String> {
    #[recursive::recursive]
    fn go(out: &mut String, v: &Json, indent: usize) -> Result<()> {
        let pad = |out: &mut String, n: usize| out.extend(std::iter::repeat_n(' ', n * 4));
        match v {
            // Even an empty array or object takes two lines, as PostgreSQL writes it.
            Json::Array(items) => {
                out.push('[');
                for (i, (item, _)) in items.iter().enumerate() {
                    out.push_str(if i > 0 { ",\n" } else { "\n" });
                    pad(out, indent + 1);
                    go(out, item, indent + 1)?;
                }
                out.push('\n');
                pad(out, indent);
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (i, (k, v)) in jsonb_members(members).into_iter().enumerate() {
                    out.push_str(if i > 0 { ",\n" } else { "\n" });
                    pad(out, indent + 1);
                    write_string(out, k);
                    out.push_str(": ");
                    go(out, v, indent + 1)?;
                }
                out.push('\n');
                pad(out, indent);
                out.push('}');
            }
            other => write_jsonb(out, other)?,
        }
        if out.len() > crate::expr::TEXT_BYTES_MAX {
            return Err(crate::expr::too_long());
        }
        Ok(())
    }
    let mut out = String::new();
    go(&mut out, v, 0)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonb_text_is_postgresql_s() {
        let j = |s: &str| jsonb_in(s).unwrap();
        assert_eq!(
            j(r#"{"b":1, "aa":[1, 2 ,3], "a": null}"#),
            r#"{"a": null, "b": 1, "aa": [1, 2, 3]}"#
        );
        assert_eq!(j(r#"{"a":1, "a":2}"#), r#"{"a": 2}"#);
        assert_eq!(j(r#"{"a":1.50, "n": 1e3}"#), r#"{"a": 1.50, "n": 1000}"#);
        assert_eq!(j("-0"), "0");
        assert_eq!(j("0.00"), "0.00");
        assert_eq!(j("12e-3"), "0.012");
        assert_eq!(j("1.0e2"), "100");
        assert_eq!(j("-1.5E+1"), "-15");
        assert_eq!(j(r#""x\u00e9\n\ud83d\ude00""#), "\"xé\\n\u{1F600}\"");
        assert_eq!(j(" [ ] "), "[]");
        for bad in [
            "{\"a\":1",
            "{\"a\":1} x",
            "01",
            "1.",
            "-",
            "tru",
            "[1,]",
            "\"\\u0000\"",
            "\"\\ud800\"",
            "{1:2}",
            "\"a\nb\"",
        ] {
            assert!(jsonb_in(bad).is_err(), "{bad}");
        }
        let deep = "[".repeat(DEPTH_MAX + 5);
        assert_eq!(jsonb_in(&deep).unwrap_err().code, "54001");
    }

    proptest::proptest! {
        /// Any text: the parser answers, never panics; what parses as jsonb is canonical
        /// (reading its text again gives the same text) and equal to itself.
        #[test]
        fn jsonb_text_is_a_fixed_point(s in "[\\[\\]{}\":,0-9a-z.eE+\\- \\\\]{0,40}") {
            if let Ok(c) = jsonb_in(&s) {
                proptest::prop_assert_eq!(jsonb_in(&c).unwrap(), c.clone());
                let v = parse(&c).unwrap();
                proptest::prop_assert!(equal(&v, &parse(&s).unwrap()));
                proptest::prop_assert_eq!(compare(&v, &v), std::cmp::Ordering::Equal);
            }
        }
    }

    #[test]
    fn navigation_and_containment() {
        let src = r#"{"a":1, "a" : {"y": 1,  "x":2}, "l": [1, "two", {"k": true}]}"#;
        let v = parse(src).unwrap();
        let (a, span) = member(&v, "a").unwrap();
        assert_eq!(value_text(a, span, src, false).unwrap(), r#"{"y": 1,  "x":2}"#);
        assert_eq!(value_text(a, span, src, true).unwrap(), r#"{"x": 2, "y": 1}"#);
        let (l, _) = member(&v, "l").unwrap();
        assert!(matches!(element(l, -2), Some((Json::String(s), _)) if s == "two"));
        assert!(element(l, 3).is_none());
        let c = |a: &str, b: &str| contains(&parse(a).unwrap(), &parse(b).unwrap(), true);
        assert!(c(r#"{"a":1,"b":[1,2,3]}"#, r#"{"b":[3,1]}"#));
        assert!(!c(r#"{"a":1}"#, r#"{"a":2}"#));
        assert!(c(r#"[1,2]"#, "1"));
        assert!(c(r#"{"a":1.0}"#, r#"{"a":1}"#));
        assert!(c(r#"{}"#, r#"{}"#));
        assert!(exists(&parse(r#"["a","b"]"#).unwrap(), "b"));
        let o = |a: &str, b: &str| compare(&parse(a).unwrap(), &parse(b).unwrap());
        use std::cmp::Ordering::*;
        assert_eq!(o("10", "9"), Greater);
        assert_eq!(o("-10", "-9"), Less);
        assert_eq!(o("1.0", "1"), Equal);
        assert_eq!(o("-0", "0"), Equal);
        assert_eq!(o("0.5", "-0.5"), Greater);
        assert_eq!(o("\"b\"", "\"a\""), Greater);
        assert_eq!(o("null", "\"a\""), Less);
        assert_eq!(o("[1]", "true"), Greater);
        assert_eq!(o("[9]", "[1, 2]"), Less);
        assert_eq!(o(r#"{"a":1}"#, r#"{"b":0}"#), Less);
    }
}

// Evaluation: SQL values in, SQL values out (a json or jsonb value is its text).

use crate::expr::JsonFunc;
use crate::style::Style;
use crate::types::{DataType, Value};

fn doc_of(v: &Value) -> Result<&str> {
    match v {
        Value::Text(s) => Ok(s),
        other => Err(SqlError::new(
            code::DATATYPE_MISMATCH,
            format!("a json document, not {}", other.natural_type().sql_name()),
        )),
    }
}

fn text_items(v: &Value) -> Result<Vec<Option<String>>> {
    match v {
        Value::Array(items) => Ok(items
            .iter()
            .map(|i| match i {
                Value::Null => None,
                other => other.to_text(DataType::Text),
            })
            .collect()),
        Value::Text(s) => Ok(crate::array::parse_text(s)?),
        other => Err(SqlError::new(
            code::DATATYPE_MISMATCH,
            format!("a text array, not {}", other.natural_type().sql_name()),
        )),
    }
}

/// A value's JSON text as `to_json` writes it: numbers and booleans as themselves (a float
/// that is not finite as a string), json as it is, arrays as arrays, timestamps in ISO 8601
/// (with time zone in the `style`'s zone), everything else a string of its text form in the
/// session's `style`.
pub fn to_json(v: &Value, ty: DataType, style: Style) -> Result<String> {
    let mut out = String::new();
    write_value(&mut out, v, ty, style)?;
    Ok(out)
}

#[recursive::recursive]
fn write_value(out: &mut String, v: &Value, ty: DataType, style: Style) -> Result<()> {
    let zone = style.zone;
    match (v, ty) {
        (Value::Null, _) => out.push_str("null"),
        (Value::Text(s), DataType::Json | DataType::Jsonb) => out.push_str(s),
        (Value::Bool(b), _) => out.push_str(if *b { "true" } else { "false" }),
        (Value::Int(i), _) => out.push_str(&i.to_string()),
        (Value::Numeric(d), _) => out.push_str(&d.to_string()),
        (Value::Float(f), _) if f.is_finite() => {
            out.push_str(&crate::types::format_float(*f, ty == DataType::Float4))
        }
        (Value::Array(items), _) => {
            let elem = ty.element().unwrap_or_else(|| crate::array::natural_element(items));
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, elem, style)?;
            }
            out.push(']');
        }
        (Value::Timestamp(t) | Value::TimestampTz(t), _)
            if *t != crate::types::TIMESTAMP_INFINITY
                && *t != crate::types::TIMESTAMP_NEG_INFINITY =>
        {
            let local = match v {
                Value::TimestampTz(_) => zone.to_local(*t),
                _ => *t,
            };
            let mut text =
                Value::Timestamp(local).to_text(DataType::Timestamp(None)).unwrap_or_default();
            text = text.replacen(' ', "T", 1);
            if let Value::TimestampTz(_) = v {
                // The offset goes before a BC year's ` BC`, as PostgreSQL writes it.
                let bc = text.strip_suffix(" BC").map(str::len);
                if let Some(len) = bc {
                    text.truncate(len);
                }
                let offset = crate::zone::format_offset(zone.offset_at(*t));
                text.push_str(&offset);
                if offset.len() == 3 {
                    text.push_str(":00");
                }
                if bc.is_some() {
                    text.push_str(" BC");
                }
            }
            write_string(out, &text);
        }
        // Dates in ISO 8601 whatever the DateStyle, as PostgreSQL writes them in JSON.
        (Value::Date(_), _) => {
            write_string(out, &v.to_text_in(ty, Style::DEFAULT).unwrap_or_default())
        }
        (other, _) => write_string(out, &other.to_text_in(ty, style).unwrap_or_default()),
    }
    if out.len() > crate::expr::TEXT_BYTES_MAX {
        return Err(crate::expr::too_long());
    }
    Ok(())
}

/// json_build_object / jsonb_build_object of keys and values' JSON texts (NULL: null).
pub fn build_object(args: &[Value], jsonb: bool) -> Result<Value> {
    if !args.len().is_multiple_of(2) {
        return Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            "argument list must have even number of elements",
        ));
    }
    let mut out = String::from("{");
    for (i, pair) in args.chunks(2).enumerate() {
        let key = match &pair[0] {
            Value::Null => {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER_VALUE,
                    format!("argument {} cannot be null", i * 2 + 1),
                )
                .hint("Object keys should be text."))
            }
            k => k.to_text(DataType::Text).unwrap_or_default(),
        };
        if i > 0 {
            out.push_str(", ");
        }
        write_string(&mut out, &key);
        out.push_str(" : ");
        match &pair[1] {
            Value::Null => out.push_str("null"),
            v => out.push_str(doc_of(v)?),
        }
        if out.len() > crate::expr::TEXT_BYTES_MAX {
            return Err(crate::expr::too_long());
        }
    }
    out.push('}');
    Ok(Value::Text(if jsonb { jsonb_in(&out)? } else { out }))
}

/// json_agg / jsonb_agg: the collected values of type `elem` as a JSON array.
pub fn aggregate(items: &[Value], elem: DataType, jsonb: bool, style: Style) -> Result<Value> {
    let mut out = String::from("[");
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_value(&mut out, v, elem, style)?;
    }
    out.push(']');
    Ok(Value::Text(if jsonb { jsonb_in(&out)? } else { out }))
}

/// json_object_agg / jsonb_object_agg: an object of the collected `[key, value]` pairs, the
/// keys as text, the values (of type `value_ty`) as to_json writes them. A NULL key is an
/// error, as in PostgreSQL.
pub fn object_aggregate(
    pairs: &[Value],
    key_ty: DataType,
    value_ty: DataType,
    jsonb: bool,
    style: Style,
) -> Result<Value> {
    let mut out = String::from("{ ");
    for (i, pair) in pairs.iter().enumerate() {
        let Value::Array(kv) = pair else { continue };
        let (key, value) = (kv.first().unwrap_or(&Value::Null), kv.get(1).unwrap_or(&Value::Null));
        if key.is_null() {
            return Err(SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                "field name must not be null",
            ));
        }
        if i > 0 {
            out.push_str(", ");
        }
        write_string(&mut out, &key.to_text_in(key_ty, style).unwrap_or_default());
        out.push_str(" : ");
        write_value(&mut out, value, value_ty, style)?;
    }
    out.push_str(" }");
    Ok(Value::Text(if jsonb { jsonb_in(&out)? } else { out }))
}

/// A row as row_to_json writes it: `{"name":value,…}` without spaces, from the columns' JSON
/// texts (NULL: null).
pub fn row_object(names: &[Value], values: &[Value]) -> Result<Value> {
    let mut out = String::from("{");
    for (i, (name, v)) in names.iter().zip(values).enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(&mut out, &name.to_text(DataType::Text).unwrap_or_default());
        out.push(':');
        match v {
            Value::Null => out.push_str("null"),
            v => out.push_str(doc_of(v)?),
        }
        if out.len() > crate::expr::TEXT_BYTES_MAX {
            return Err(crate::expr::too_long());
        }
    }
    out.push('}');
    Ok(Value::Text(out))
}

/// json_agg of rows' objects: `[{…}, \n {…}]`, as PostgreSQL writes an array of records.
pub fn aggregate_rows(items: &[Value]) -> Result<Value> {
    Ok(Value::Text(array_of_docs(items, ", \n ")?))
}

/// json_build_array / jsonb_build_array of values' JSON texts (NULL: null).
pub fn build_array(args: &[Value], jsonb: bool) -> Result<Value> {
    let out = array_of_docs(args, ", ")?;
    Ok(Value::Text(if jsonb { jsonb_in(&out)? } else { out }))
}

/// A JSON array of values' JSON texts (NULL: null), `separator` between them.
fn array_of_docs(values: &[Value], separator: &str) -> Result<String> {
    let mut out = String::from("[");
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        match v {
            Value::Null => out.push_str("null"),
            v => out.push_str(doc_of(v)?),
        }
        if out.len() > crate::expr::TEXT_BYTES_MAX {
            return Err(crate::expr::too_long());
        }
    }
    out.push(']');
    Ok(out)
}

fn jsonb_value(v: &Json) -> Result<Value> {
    let mut out = String::new();
    write_jsonb(&mut out, v)?;
    Ok(Value::Text(out))
}

/// A json or jsonb operator or function; `args[0]` is the document. NULL in, NULL out.
pub fn call(func: JsonFunc, jsonb: bool, args: &[Value]) -> Result<Value> {
    if args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let source = doc_of(&args[0])?;
    let doc = parse(source)?;
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::Null);
    let found = |found: Option<(&Json, Span)>, text: bool| -> Result<Value> {
        Ok(match found {
            None => Value::Null,
            Some((v, span)) if text => {
                value_as_text(v, span, source, jsonb)?.map_or(Value::Null, Value::Text)
            }
            Some((v, span)) => Value::Text(value_text(v, span, source, jsonb)?),
        })
    };
    Ok(match func {
        JsonFunc::Field | JsonFunc::FieldText => {
            let hit = match arg(1) {
                // jsonb reads a scalar as an array of it, as PostgreSQL does.
                Value::Int(0 | -1) if jsonb && !matches!(doc, Json::Array(_) | Json::Object(_)) => {
                    Some((&doc, (0, source.len())))
                }
                Value::Int(i) => element(&doc, i),
                key => member(&doc, &key.to_text(DataType::Text).unwrap_or_default()),
            };
            found(hit, func == JsonFunc::FieldText)?
        }
        JsonFunc::Path | JsonFunc::PathText => {
            let path = text_items(&arg(1))?;
            let mut at: Option<(&Json, Span)> = Some((&doc, (0, source.len())));
            for key in &path {
                at = match (at, key) {
                    (Some((v, _)), Some(k)) => step(v, k),
                    _ => None,
                };
            }
            found(at, func == JsonFunc::PathText)?
        }
        JsonFunc::Contains => Value::Bool(contains(&doc, &parse(doc_of(&arg(1))?)?, true)),
        JsonFunc::Exists => {
            Value::Bool(exists(&doc, &arg(1).to_text(DataType::Text).unwrap_or_default()))
        }
        JsonFunc::ExistsAny | JsonFunc::ExistsAll => {
            let keys = text_items(&arg(1))?;
            let mut hits = keys.iter().flatten().map(|k| exists(&doc, k));
            Value::Bool(if func == JsonFunc::ExistsAny { hits.any(|h| h) } else { hits.all(|h| h) })
        }
        JsonFunc::Concat => jsonb_value(&concat(doc, parse(doc_of(&arg(1))?)?))?,
        JsonFunc::Delete => match arg(1) {
            Value::Int(i) => jsonb_value(&delete(doc, None, Some(i))?)?,
            Value::Array(_) => {
                let mut v = doc;
                for k in text_items(&arg(1))?.into_iter().flatten() {
                    v = delete(v, Some(&k), None)?;
                }
                jsonb_value(&v)?
            }
            key => jsonb_value(&delete(
                doc,
                Some(&key.to_text(DataType::Text).unwrap_or_default()),
                None,
            )?)?,
        },
        JsonFunc::DeletePath => {
            let path: Vec<String> = text_items(&arg(1))?.into_iter().flatten().collect();
            jsonb_value(&delete_path(doc, &path)?)?
        }
        JsonFunc::Typeof => Value::Text(type_name(&doc).into()),
        JsonFunc::Equal => Value::Bool(equal(&doc, &parse(doc_of(&arg(1))?)?)),
        JsonFunc::Compare => Value::Int(compare(&doc, &parse(doc_of(&arg(1))?)?) as i64),
        JsonFunc::ArrayLength => match &doc {
            Json::Array(items) => Value::Int(items.len() as i64),
            Json::Object(_) => {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER_VALUE,
                    "cannot get array length of a non-array",
                ))
            }
            _ => {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER_VALUE,
                    "cannot get array length of a scalar",
                ))
            }
        },
        JsonFunc::StripNulls => {
            let stripped = strip_nulls(&doc);
            if jsonb {
                jsonb_value(&stripped)?
            } else {
                // json keeps its members' order: written compactly, as PostgreSQL does.
                Value::Text(compact(&stripped)?)
            }
        }
        JsonFunc::Set => {
            let path: Vec<String> = text_items(&arg(1))?.into_iter().flatten().collect();
            let new = parse(doc_of(&arg(2))?)?;
            let create = !matches!(arg(3), Value::Bool(false));
            jsonb_value(&set_path(doc, &path, &new, create)?)?
        }
        JsonFunc::Pretty => Value::Text(pretty(&doc)?),
        JsonFunc::ArrayElements | JsonFunc::ArrayElementsText => {
            let Json::Array(items) = &doc else {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER_VALUE,
                    if matches!(doc, Json::Object(_)) {
                        "cannot extract elements from an object"
                    } else {
                        "cannot extract elements from a scalar"
                    },
                ));
            };
            crate::array::check_len(items.len())?;
            let text = func == JsonFunc::ArrayElementsText;
            let mut out = Vec::with_capacity(items.len());
            for (v, span) in items {
                out.push(found(Some((v, *span)), text)?);
            }
            Value::Array(out)
        }
        JsonFunc::RecordColumn { set, text } => {
            let name = match (set, jsonb) {
                (true, true) => "jsonb_to_recordset",
                (true, false) => "json_to_recordset",
                (false, true) => "jsonb_to_record",
                (false, false) => "json_to_record",
            };
            let key = arg(1).to_text(DataType::Text).unwrap_or_default();
            let rows: Vec<&Json> = match (&doc, set) {
                (Json::Array(items), true) => items.iter().map(|(v, _)| v).collect(),
                (Json::Object(_), false) => vec![&doc],
                (_, true) => {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!("cannot call {name} on a non-array"),
                    ))
                }
                (other, false) => {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        if matches!(other, Json::Array(_)) {
                            "cannot call populate_composite on an array"
                        } else {
                            "cannot call populate_composite on a scalar"
                        },
                    ))
                }
            };
            crate::array::check_len(rows.len())?;
            let mut out = Vec::with_capacity(rows.len());
            for row in rows {
                if !matches!(row, Json::Object(_)) {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!("argument of {name} must be an array of objects"),
                    ));
                }
                out.push(match member(row, &key) {
                    Some((Json::Null, _)) => Value::Null,
                    hit => found(hit, text)?,
                });
            }
            Value::Array(out)
        }
        JsonFunc::EachKeys => Value::Array(
            each_members(&doc, jsonb)?
                .into_iter()
                .map(|(k, _, _)| Value::Text(k.to_string()))
                .collect(),
        ),
        JsonFunc::EachValues | JsonFunc::EachValuesText => {
            let text = func == JsonFunc::EachValuesText;
            let mut out = Vec::new();
            for (_, v, span) in each_members(&doc, jsonb)? {
                out.push(found(Some((v, span)), text)?);
            }
            Value::Array(out)
        }
        JsonFunc::ObjectKeys => {
            let Json::Object(members) = &doc else {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER_VALUE,
                    format!(
                        "cannot call {} on a{} {}",
                        if jsonb { "jsonb_object_keys" } else { "json_object_keys" },
                        if matches!(doc, Json::Array(_)) { "n" } else { "" },
                        if matches!(doc, Json::Array(_)) { "array" } else { "scalar" }
                    ),
                ));
            };
            let keys: Vec<Value> = if jsonb {
                jsonb_members(members)
                    .into_iter()
                    .map(|(k, _)| Value::Text(k.to_string()))
                    .collect()
            } else {
                members.iter().map(|(k, _, _)| Value::Text(k.clone())).collect()
            };
            crate::array::check_len(keys.len())?;
            Value::Array(keys)
        }
    })
}

/// The members json(b)_each answers: jsonb's kept ones in its order, json's all as written.
fn each_members(doc: &Json, jsonb: bool) -> Result<Vec<(&str, &Json, Span)>> {
    let Json::Object(members) = doc else {
        return Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!(
                "cannot call {} on a non-object",
                if jsonb { "jsonb_each" } else { "json_each" }
            ),
        ));
    };
    crate::array::check_len(members.len())?;
    Ok(if jsonb {
        jsonb_members(members).into_iter().map(|(k, v)| (k, v, (0, 0))).collect()
    } else {
        members.iter().map(|(k, v, s)| (k.as_str(), v, *s)).collect()
    })
}

/// json text without insignificant whitespace, members in their order.
fn compact(v: &Json) -> Result<String> {
    #[recursive::recursive]
    fn go(out: &mut String, v: &Json) -> Result<()> {
        match v {
            Json::Array(items) => {
                out.push('[');
                for (i, (item, _)) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    go(out, item)?;
                }
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (i, (k, v, _)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(out, k);
                    out.push(':');
                    go(out, v)?;
                }
                out.push('}');
            }
            Json::Number(n) => out.push_str(n),
            other => write_jsonb(out, other)?,
        }
        Ok(())
    }
    let mut out = String::new();
    go(&mut out, v)?;
    Ok(out)
}

/// jsonb `#-`: the document without the value at `path`.
#[recursive::recursive]
fn delete_path(v: Json, path: &[String]) -> Result<Json> {
    let Some((first, rest)) = path.split_first() else { return Ok(v) };
    Ok(match v {
        Json::Object(m) if rest.is_empty() => {
            Json::Object(m.into_iter().filter(|(k, _, _)| k != first).collect())
        }
        Json::Object(mut m) => {
            if let Some(i) = m.iter().rposition(|(k, _, _)| k == first) {
                let old = std::mem::replace(&mut m[i].1, Json::Null);
                m[i].1 = delete_path(old, rest)?;
            }
            Json::Object(m)
        }
        Json::Array(mut items) => {
            let Ok(i) = first.trim().parse::<i64>() else {
                return Err(SqlError::new(
                    code::INVALID_TEXT,
                    format!("path element at position 1 is not an integer: \"{first}\""),
                ));
            };
            let n = items.len() as i64;
            let at = if i < 0 { n + i } else { i };
            if (0..n).contains(&at) {
                if rest.is_empty() {
                    items.remove(at as usize);
                } else {
                    let old = std::mem::replace(&mut items[at as usize].0, Json::Null);
                    items[at as usize].0 = delete_path(old, rest)?;
                }
            }
            Json::Array(items)
        }
        _ => {
            return Err(SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                "cannot delete path in scalar",
            ))
        }
    })
}
