//! `to_date(text, template)` and `to_timestamp(text, template)`: text read by the template
//! patterns `to_char` writes, with PostgreSQL's rules for reading them — a numeric field takes
//! exactly its width when a digit field follows it and as many digits as there are otherwise
//! (or with `FM`); blanks and separators in the template match one blank or separator in the
//! input, or nothing; other template characters skip one input character; `FX` makes every
//! template character consume exactly one; a field set twice must agree; unset fields default
//! to the start of the year 1 BC, as PostgreSQL's do.

use chrono::{Datelike, NaiveDate};

use super::to_char::{quoted, DAYS, MONTHS, PATTERNS};
use crate::error::{code, Result, SqlError};
use crate::types::{
    Value, MICROS_PER_DAY, TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY, UNIX_EPOCH_DATE,
};
use crate::zone::Zone;

/// The longest template or input read (one pass over each; this bounds the work of a call).
const TEXT_MAX: usize = 10_000;

/// `to_date(input, template)`.
pub fn to_date(input: &str, template: &str) -> Result<Value> {
    let moment = read(input, template)?;
    let days = moment
        .days()
        .and_then(|d| crate::types::check_date(d).ok())
        .ok_or_else(|| out_of_range(format!("date out of range: \"{input}\"")))?;
    Ok(Value::Date(days))
}

/// `to_timestamp(input, template)`: the local time read, in the zone the input names with
/// `TZH`/`TZM` or else the session's.
pub fn to_timestamp(input: &str, template: &str, zone: Zone) -> Result<Value> {
    let moment = read(input, template)?;
    let local = moment
        .days()
        .and_then(|d| d.checked_mul(MICROS_PER_DAY))
        .and_then(|m| m.checked_add(moment.time))
        .filter(|m| fits(*m))
        .ok_or_else(|| out_of_range("timestamp out of range".into()))?;
    let utc = match moment.offset {
        Some(east) => local - east * 1_000_000,
        None => zone.from_local(local),
    };
    let utc = round_fraction(utc, moment.precision);
    if !fits(utc) {
        return Err(out_of_range("timestamp out of range".into()));
    }
    Ok(Value::TimestampTz(utc))
}

/// Whether a timestamp is within the calendar Kiln shows (and not one of the infinities).
fn fits(micros: i64) -> bool {
    micros != TIMESTAMP_INFINITY
        && micros != TIMESTAMP_NEG_INFINITY
        && chrono::DateTime::from_timestamp_micros(micros).is_some()
}

fn out_of_range(message: String) -> SqlError {
    SqlError::new(code::DATETIME_OVERFLOW, message)
}

fn invalid(message: String) -> SqlError {
    SqlError::new(code::INVALID_DATETIME, message)
}

/// Rounds microseconds to `digits` fractional digits (an `FFn` field's precision).
fn round_fraction(micros: i64, digits: Option<u32>) -> i64 {
    match digits {
        Some(d) if d < 6 => {
            let unit = 10i64.pow(6 - d);
            let rem = micros.rem_euclid(unit);
            let down = micros - rem;
            if rem * 2 >= unit {
                down + unit
            } else {
                down
            }
        }
        _ => micros,
    }
}

/// What the input said: an astronomical year (0 is 1 BC), month and day of month (which may
/// run past the month's end when no year was read, as PostgreSQL lets it), the time of day in
/// microseconds, and the offset read (seconds east).
struct Moment {
    year: i64,
    month: i64,
    day: i64,
    time: i64,
    offset: Option<i64>,
    precision: Option<u32>,
}

impl Moment {
    /// Days since 1970-01-01.
    fn days(&self) -> Option<i64> {
        let year = i32::try_from(self.year).ok()?;
        let first = NaiveDate::from_ymd_opt(year, u32::try_from(self.month).ok()?, 1)?;
        Some((first - UNIX_EPOCH_DATE).num_days() + self.day - 1)
    }
}

/// One element of a template.
#[derive(Debug, Clone, Copy)]
enum Node<'t> {
    /// A pattern (`YYYY`, `Mon`, …) as written, with the `FM` and `TH` modifiers.
    Field { key: &'static str, written: &'t str, fill: bool, th: bool },
    /// A blank.
    Space,
    /// ASCII punctuation outside quotes.
    Separator,
    /// Any other character, or one inside double quotes; `digit` when it is an ASCII digit.
    Text { digit: bool },
}

/// Whether `s` begins with `p`, ASCII case ignored (never slicing inside a character).
pub(crate) fn starts_with_ci(s: &str, p: &str) -> bool {
    s.len() >= p.len() && s.is_char_boundary(p.len()) && s[..p.len()].eq_ignore_ascii_case(p)
}

/// ASCII punctuation: printable, not a blank, letter or digit.
fn is_separator(b: u8) -> bool {
    b.is_ascii_graphic() && !b.is_ascii_alphanumeric()
}

/// C's `isspace`.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

fn nodes(template: &str) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        let mut t = rest;
        let fill = starts_with_ci(t, "FM");
        if fill {
            t = &t[2..];
        }
        let key = if starts_with_ci(t, "FX") {
            Some("FX")
        } else {
            PATTERNS.iter().copied().find(|p| starts_with_ci(t, p))
        };
        if let Some(key) = key {
            let written = &t[..key.len()];
            t = &t[key.len()..];
            let th = t.starts_with("TH") || t.starts_with("th");
            if th {
                t = &t[2..];
            }
            out.push(Node::Field { key, written, fill, th });
            rest = t;
            continue;
        }
        if fill {
            rest = t;
            continue;
        }
        let mut chars = rest.chars();
        match chars.next() {
            Some('"') => {
                // Quoted text: each character skips one of the input.
                let (text, after) = quoted(chars.as_str());
                out.extend(text.chars().map(|c| Node::Text { digit: c.is_ascii_digit() }));
                rest = after;
            }
            Some(c) => {
                // Outside quotes a backslash only matters before a double quote.
                let c = if c == '\\' && chars.as_str().starts_with('"') {
                    chars.next();
                    '"'
                } else {
                    c
                };
                out.push(match u8::try_from(c) {
                    Ok(b) if is_separator(b) => Node::Separator,
                    Ok(b) if is_space(b) => Node::Space,
                    _ => Node::Text { digit: c.is_ascii_digit() },
                });
                rest = chars.as_str();
            }
            None => break,
        }
    }
    out
}

/// Whether a pattern reads digits (a numeric field right before it reads exactly its width).
fn is_digit_field(key: &str) -> bool {
    !matches!(
        key,
        "A.D."
            | "A.M."
            | "AD"
            | "AM"
            | "B.C."
            | "BC"
            | "DAY"
            | "DY"
            | "FX"
            | "MONTH"
            | "MON"
            | "OF"
            | "P.M."
            | "PM"
            | "RM"
            | "TZH"
            | "TZ"
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Convention {
    None,
    Gregorian,
    IsoWeek,
}

fn convention(key: &str) -> Convention {
    match key {
        "DDD" | "DD" | "D" | "MM" | "MONTH" | "MON" | "RM" | "WW" | "W" | "Y,YYY" | "YYYY"
        | "YYY" | "YY" | "Y" => Convention::Gregorian,
        "IDDD" | "ID" | "IW" | "IYYY" | "IYY" | "IY" | "I" => Convention::IsoWeek,
        _ => Convention::None,
    }
}

/// The fields read; 0 is "not given", as in PostgreSQL.
#[derive(Default)]
struct Fields {
    convention: Option<Convention>,
    hh: i64,
    pm: i64,
    twelve_hour: bool,
    mi: i64,
    ss: i64,
    ssss: i64,
    d: i64,
    dd: i64,
    ddd: i64,
    mm: i64,
    ms: i64,
    year: i64,
    bc: i64,
    ww: i64,
    w: i64,
    cc: i64,
    j: i64,
    us: i64,
    yysz: i64,
    tzsign: i64,
    tzh: i64,
    tzm: i64,
    ff: u32,
}

/// Sets a field, refusing a second, different value.
fn set(field: &mut i64, value: i64, name: &str) -> Result<()> {
    if *field != 0 && *field != value {
        return Err(invalid(format!(
            "conflicting values for \"{name}\" field in formatting string"
        ))
        .detail("This value contradicts a previous setting for the same field type."));
    }
    *field = value;
    Ok(())
}

/// A two-digit (or shorter) year taken to be the one nearest 2020.
fn near_2020(year: i64) -> i64 {
    match year {
        ..=69 => year + 2000,
        70..=99 => year + 1900,
        100..=519 => year + 2000,
        520..=999 => year + 1000,
        _ => year,
    }
}

/// The input being read.
struct Input<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl Input<'_> {
    fn more(&self) -> bool {
        self.pos < self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    /// Skips one character.
    fn step(&mut self) {
        if let Some(c) = self.text[self.pos..].chars().next() {
            self.pos += c.len_utf8();
        }
    }

    fn skip_spaces(&mut self) -> i64 {
        let mut n = 0;
        while self.peek().is_some_and(is_space) {
            self.pos += 1;
            n += 1;
        }
        n
    }

    /// Up to `len` bytes from `at` (cut back to a character boundary), for messages.
    fn excerpt(&self, at: usize, len: usize) -> &str {
        let mut end = (at + len).min(self.s.len());
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        &self.text[at..end]
    }

    /// C's `strtol` from `at`: blanks, a sign, digits. The number (saturated) and where it
    /// ends, or None when there are no digits.
    fn strtol(&self, at: usize, end: usize) -> Option<(i64, usize)> {
        let s = &self.s[..end];
        let mut i = at;
        while i < s.len() && is_space(s[i]) {
            i += 1;
        }
        let negative = s.get(i) == Some(&b'-');
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let digits = i;
        let mut n: i64 = 0;
        while i < s.len() && s[i].is_ascii_digit() {
            n = n.saturating_mul(10).saturating_add((s[i] - b'0') as i64);
            i += 1;
        }
        if i == digits {
            return None;
        }
        Some((if negative { -n } else { n }, i))
    }

    /// Reads an integer field of width `len` (all the digits there are when `slurp`); the
    /// number and how many bytes were consumed.
    fn int(&mut self, len: usize, slurp: bool, name: &str) -> Result<(i64, usize)> {
        let init = self.pos;
        self.skip_spaces();
        let copy = self.excerpt(self.pos, len).to_string();
        let not_integer = || {
            invalid(format!("invalid value \"{copy}\" for \"{name}\""))
                .detail("Value must be an integer.")
        };
        let value = if slurp {
            let (n, end) = self.strtol(init, self.s.len()).ok_or_else(not_integer)?;
            self.pos = end;
            n
        } else {
            let available = (self.s.len() - self.pos).min(len);
            if available < len {
                return Err(invalid(format!(
                    "source string too short for \"{name}\" formatting field"
                ))
                .detail(format!("Field requires {len} characters, but only {available} remain."))
                .hint("If your source string is not fixed-width, try using the \"FM\" modifier."));
            }
            let (n, end) = self.strtol(self.pos, self.pos + len).ok_or_else(not_integer)?;
            let used = end - self.pos;
            if used < len {
                return Err(invalid(format!("invalid value \"{copy}\" for \"{name}\""))
                    .detail(format!(
                        "Field requires {len} characters, but only {used} could be parsed."
                    ))
                    .hint(
                        "If your source string is not fixed-width, try using the \"FM\" modifier.",
                    ));
            }
            self.pos = end;
            n
        };
        if !(i32::MIN as i64..=i32::MAX as i64).contains(&value) {
            return Err(SqlError::new(
                code::DATETIME_OVERFLOW,
                format!("value for \"{name}\" in source string is out of range"),
            )
            .detail("Value must be in the range -2147483648 to 2147483647."));
        }
        Ok((value, self.pos - init))
    }

    /// Reads one of `words` (case-insensitively, the first that matches); its index.
    fn word(&mut self, words: &[&str], name: &str) -> Result<usize> {
        let rest = &self.s[self.pos..];
        for (i, w) in words.iter().enumerate() {
            if rest.len() >= w.len() && rest[..w.len()].eq_ignore_ascii_case(w.as_bytes()) {
                self.pos += w.len();
                return Ok(i);
            }
        }
        let shown: String = self.text[self.pos..]
            .chars()
            .take_while(|c| !matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c'))
            .collect();
        Err(invalid(format!("invalid value \"{shown}\" for \"{name}\""))
            .detail("The given value did not match any of the allowed values for this field."))
    }

    /// Skips an ordinal suffix (`st`, `nd`, …) after a field written with `TH`.
    fn skip_th(&mut self, th: bool) {
        if th {
            self.step();
            self.step();
        }
    }

    /// `Y,YYY`: thousands, a comma, then up to three digits.
    fn thousands(&mut self, name: &str) -> Result<i64> {
        let bad = || invalid(format!("invalid input string for \"{name}\""));
        let (thousands, end) = self.strtol(self.pos, self.s.len()).ok_or_else(bad)?;
        if self.s.get(end) != Some(&b',') {
            return Err(bad());
        }
        let (rest, last) = self.strtol(end + 1, (end + 4).min(self.s.len())).ok_or_else(bad)?;
        self.pos = last;
        Ok(thousands.clamp(i32::MIN as i64, i32::MAX as i64) * 1000 + rest)
    }
}

const MONTHS_SHORT: [&str; 12] =
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const DAYS_SHORT: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
/// Roman month numbers, longest first where one begins another (XII is 12 - 0).
const ROMAN_DESC: [&str; 12] =
    ["xii", "xi", "x", "ix", "viii", "vii", "vi", "v", "iv", "iii", "ii", "i"];

/// Reads `input` by `template` into a date and time.
fn read(input: &str, template: &str) -> Result<Moment> {
    if template.len() > TEXT_MAX || input.len() > TEXT_MAX {
        return Err(SqlError::new(
            code::PROGRAM_LIMIT,
            format!("a to_date/to_timestamp template and input are at most {TEXT_MAX} bytes each"),
        ));
    }
    let nodes = nodes(template);
    let mut f = Fields::default();
    let mut s = Input { s: input.as_bytes(), text: input, pos: 0 };
    let mut fixed = false;
    // Blanks skipped beyond what the template asked for.
    let mut extra: i64 = 0;
    for (i, node) in nodes.iter().enumerate() {
        if !s.more() {
            break;
        }
        let is_field = matches!(node, Node::Field { .. });
        let is_fx = matches!(node, Node::Field { key: "FX", .. });
        if !fixed && !is_fx && (is_field || i == 0) {
            extra += s.skip_spaces();
        }
        let (key, written, fill, th) = match *node {
            Node::Space | Node::Separator => {
                if fixed {
                    s.step();
                } else {
                    extra -= 1;
                    if s.peek().is_some_and(|b| is_space(b) || is_separator(b)) {
                        s.pos += 1;
                        extra += 1;
                    }
                }
                continue;
            }
            Node::Text { .. } => {
                if !fixed && extra > 0 {
                    // The blanks skipped stand for this character.
                    extra -= 1;
                } else {
                    s.step();
                }
                continue;
            }
            Node::Field { key, written, fill, th } => (key, written, fill, th),
        };
        let mode = convention(key);
        if mode != Convention::None {
            match f.convention {
                None => f.convention = Some(mode),
                Some(m) if m != mode => return Err(invalid(
                    "invalid combination of date conventions".into(),
                )
                .hint(
                    "Do not mix Gregorian and ISO week date conventions in a formatting template.",
                )),
                Some(_) => {}
            }
        }
        // A field followed by a non-digit reads as many digits as there are.
        let slurp = fill
            || th
            || match nodes.get(i + 1) {
                None => true,
                Some(Node::Field { key, .. }) => !is_digit_field(key),
                Some(Node::Text { digit }) => !digit,
                Some(Node::Space | Node::Separator) => true,
            };
        let int = |s: &mut Input, len: usize| s.int(len, slurp, written);
        match key {
            "FX" => fixed = true,
            "A.M." | "P.M." => {
                let v = s.word(&["a.m.", "p.m.", "A.M.", "P.M."], written)?;
                set(&mut f.pm, (v % 2) as i64, written)?;
                f.twelve_hour = true;
            }
            "AM" | "PM" => {
                let v = s.word(&["am", "pm", "AM", "PM"], written)?;
                set(&mut f.pm, (v % 2) as i64, written)?;
                f.twelve_hour = true;
            }
            "A.D." | "B.C." => {
                let v = s.word(&["a.d.", "b.c.", "A.D.", "B.C."], written)?;
                set(&mut f.bc, (v % 2) as i64, written)?;
            }
            "AD" | "BC" => {
                let v = s.word(&["ad", "bc", "AD", "BC"], written)?;
                set(&mut f.bc, (v % 2) as i64, written)?;
            }
            "HH" | "HH12" | "HH24" => {
                let (v, _) = int(&mut s, 2)?;
                set(&mut f.hh, v, written)?;
                f.twelve_hour |= key != "HH24";
                s.skip_th(th);
            }
            "MI" | "SS" | "MM" | "DDD" | "DD" | "D" | "WW" | "IW" | "CC" | "W" | "J" | "SSSS"
            | "SSSSS" | "Q" => {
                let (v, _) = int(&mut s, key.len())?;
                let field = match key {
                    "MI" => &mut f.mi,
                    "SS" => &mut f.ss,
                    "MM" => &mut f.mm,
                    "DDD" => &mut f.ddd,
                    "DD" => &mut f.dd,
                    "D" => &mut f.d,
                    "WW" | "IW" => &mut f.ww,
                    "CC" => &mut f.cc,
                    "W" => &mut f.w,
                    "J" => &mut f.j,
                    "SSSS" | "SSSSS" => &mut f.ssss,
                    // The quarter is read and ignored.
                    _ => &mut 0,
                };
                set(field, v, written)?;
                s.skip_th(th);
            }
            "IDDD" => {
                let (v, _) = int(&mut s, 3)?;
                set(&mut f.ddd, v, written)?;
                s.skip_th(th);
            }
            "ID" => {
                let (v, _) = int(&mut s, 1)?;
                set(&mut f.d, v, written)?;
                // Numbered from Sunday (1), as D is.
                f.d += 1;
                if f.d > 7 {
                    f.d = 1;
                }
                s.skip_th(th);
            }
            "MS" => {
                let (v, len) = int(&mut s, 3)?;
                set(&mut f.ms, v, written)?;
                // 25 is 0.25 and 250 is 0.25 too; 025 is 0.025.
                f.ms *= match len {
                    1 => 100,
                    2 => 10,
                    _ => 1,
                };
                s.skip_th(th);
            }
            "US" | "FF1" | "FF2" | "FF3" | "FF4" | "FF5" | "FF6" => {
                let width = if key == "US" {
                    6
                } else {
                    f.ff = (key.as_bytes()[2] - b'0') as u32;
                    f.ff as usize
                };
                let (v, len) = int(&mut s, width)?;
                set(&mut f.us, v, written)?;
                f.us *= 10i64.pow(6u32.saturating_sub(len as u32));
                s.skip_th(th);
            }
            "TZ" | "OF" => {
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    format!("formatting field \"{written}\" is only supported in to_char"),
                ))
            }
            "TZH" => {
                // A minus skipped as a separator just before is the offset's sign.
                match s.peek() {
                    Some(b @ (b'+' | b'-' | b' ')) => {
                        f.tzsign = if b == b'-' { -1 } else { 1 };
                        s.pos += 1;
                    }
                    _ => {
                        let minus = extra > 0 && s.pos > 0 && s.s[s.pos - 1] == b'-';
                        f.tzsign = if minus { -1 } else { 1 };
                    }
                }
                let (v, _) = int(&mut s, 2)?;
                set(&mut f.tzh, v, written)?;
            }
            "TZM" => {
                if f.tzsign == 0 {
                    f.tzsign = 1;
                }
                let (v, _) = int(&mut s, 2)?;
                set(&mut f.tzm, v, written)?;
            }
            "MONTH" => {
                let v = s.word(&MONTHS, written)?;
                set(&mut f.mm, v as i64 + 1, written)?;
            }
            "MON" => {
                let v = s.word(&MONTHS_SHORT, written)?;
                set(&mut f.mm, v as i64 + 1, written)?;
            }
            "RM" => {
                let v = s.word(&ROMAN_DESC, written)?;
                set(&mut f.mm, 12 - v as i64, written)?;
            }
            "DAY" | "DY" => {
                let v = if key == "DAY" {
                    s.word(&DAYS, written)?
                } else {
                    s.word(&DAYS_SHORT, written)?
                };
                set(&mut f.d, v as i64, written)?;
                f.d += 1;
            }
            "Y,YYY" => {
                let v = s.thousands(written)?;
                set(&mut f.year, v, written)?;
                f.yysz = 4;
                s.skip_th(th);
            }
            "YYYY" | "IYYY" | "YYY" | "IYY" | "YY" | "IY" | "Y" | "I" => {
                let digits = key.len();
                let (v, len) = int(&mut s, digits)?;
                set(&mut f.year, v, written)?;
                if digits < 4 && len < 4 {
                    f.year = near_2020(f.year);
                }
                f.yysz = digits as i64;
                s.skip_th(th);
            }
            // Written by to_char only (`SP` and the like are not patterns).
            _ => {}
        }
        if !fixed {
            extra = s.skip_spaces();
        }
    }
    finish(f, input)
}

/// Turns the fields read into a date and time, with PostgreSQL's defaults and checks.
fn finish(mut f: Fields, input: &str) -> Result<Moment> {
    let field_overflow =
        || out_of_range(format!("date/time field value out of range: \"{input}\""));
    let (mut hour, mut min, mut sec) = (0, 0, 0);
    if f.ssss != 0 {
        hour = f.ssss / 3600;
        min = f.ssss % 3600 / 60;
        sec = f.ssss % 60;
    }
    if f.ss != 0 {
        sec = f.ss;
    }
    if f.mi != 0 {
        min = f.mi;
    }
    if f.hh != 0 {
        hour = f.hh;
    }
    if f.twelve_hour {
        if !(1..=12).contains(&hour) {
            return Err(invalid(format!("hour \"{hour}\" is invalid for the 12-hour clock"))
                .hint("Use the 24-hour clock, or give an hour between 1 and 12."));
        }
        if f.pm != 0 && hour < 12 {
            hour += 12;
        } else if f.pm == 0 && hour == 12 {
            hour = 0;
        }
    }
    // Astronomical years: 0 is 1 BC.
    let (mut year, mut month, mut day) = (0i64, 1i64, 1i64);
    let (mut has_year, mut has_month, mut has_day) = (false, false, false);
    if f.year != 0 {
        if f.cc != 0 && f.yysz <= 2 {
            // YY within the century CC.
            if f.bc != 0 {
                f.cc = -f.cc;
            }
            year = f.year % 100;
            if year != 0 {
                if f.cc >= 0 {
                    year += (f.cc - 1) * 100;
                } else {
                    year = (f.cc + 1) * 100 - year + 1;
                }
            } else {
                year = f.cc * 100 + if f.cc >= 0 { 0 } else { 1 };
            }
        } else {
            year = if f.bc != 0 { -f.year } else { f.year };
            if year < 0 {
                year += 1;
            }
        }
        has_year = true;
    } else if f.cc != 0 {
        // The century's first year.
        if f.bc != 0 {
            f.cc = -f.cc;
        }
        year = if f.cc >= 0 { (f.cc - 1) * 100 + 1 } else { f.cc * 100 + 1 };
        has_year = true;
    }
    // A whole date (Julian day, ISO week) sets all three; fields read later may still
    // replace its parts.
    if f.j != 0 {
        // Julian day 2440588 is 1970-01-01.
        (year, month, day) = civil(Some(f.j - 2_440_588));
        (has_year, has_month, has_day) = (true, true, true);
    }
    let iso = f.convention == Some(Convention::IsoWeek);
    if f.ww != 0 {
        if iso {
            // Monday of the ISO week, then the day (Sunday numbered 1) within it.
            let offset = match f.d {
                0 | 2 => 0,
                1 => 6,
                d => d - 2,
            };
            let days = iso_week_monday(year, f.ww).map(|m| m + offset);
            (year, month, day) = civil(days);
            (has_year, has_month, has_day) = (true, true, true);
        } else {
            f.ddd = (f.ww - 1) * 7 + 1;
        }
    }
    if f.w != 0 {
        f.dd = (f.w - 1) * 7 + 1;
    }
    if f.dd != 0 {
        day = f.dd;
        has_day = true;
    }
    if f.mm != 0 {
        month = f.mm;
        has_month = true;
    }
    if f.ddd != 0 && (month <= 1 || day <= 1) {
        if year == 0 && f.bc == 0 {
            return Err(invalid("cannot calculate day of year without year information".into()));
        }
        if iso {
            let days = iso_week_monday(year, 1).map(|m| m - 1 + f.ddd);
            (year, month, day) = civil(days);
            (has_year, has_month, has_day) = (true, true, true);
        } else {
            let lengths = month_lengths(year);
            let mut before = 0;
            let mut m = 1;
            while m <= 12 && f.ddd > before + lengths[m as usize - 1] {
                before += lengths[m as usize - 1];
                m += 1;
            }
            if month <= 1 {
                month = m;
            }
            if day <= 1 {
                day = f.ddd - before;
            }
            (has_month, has_day) = (true, true);
        }
    }
    let fraction = f.ms * 1000 + f.us;
    let month_ok = (1..=12).contains(&month);
    if (has_month && !month_ok)
        || (has_day && !(1..=31).contains(&day))
        || (has_year && has_month && has_day && day > month_lengths(year)[month as usize - 1])
        // Without a month read, a day of the year past its end still names month 13.
        || !month_ok
    {
        return Err(field_overflow());
    }
    if !(0..24).contains(&hour)
        || !(0..60).contains(&min)
        || !(0..60).contains(&sec)
        || !(0..1_000_000).contains(&fraction)
    {
        return Err(field_overflow());
    }
    Ok(Moment {
        year,
        month,
        day,
        time: ((hour * 60 + min) * 60 + sec) * 1_000_000 + fraction,
        offset: (f.tzsign != 0).then(|| f.tzsign * (f.tzh * 3600 + f.tzm * 60)),
        precision: (f.ff != 0).then_some(f.ff),
    })
}

/// The lengths of the months of an astronomical year.
fn month_lengths(year: i64) -> [i64; 12] {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
}

/// Year, month and day of a count of days since 1970-01-01; a year past the calendar's reach
/// (so that the date is refused as out of range) when there is none.
fn civil(days: Option<i64>) -> (i64, i64, i64) {
    match days.and_then(|d| UNIX_EPOCH_DATE.checked_add_signed(chrono::Duration::try_days(d)?)) {
        Some(d) => (d.year() as i64, d.month() as i64, d.day() as i64),
        None => (i64::MAX, 1, 1),
    }
}

/// Days since 1970-01-01 of the Monday of ISO week `week` of ISO year `year` (weeks past the
/// year's end run on into the next, as PostgreSQL counts them).
fn iso_week_monday(year: i64, week: i64) -> Option<i64> {
    let jan4 = NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, 1, 4)?;
    let monday = (jan4 - UNIX_EPOCH_DATE).num_days() - jan4.weekday().num_days_from_monday() as i64;
    Some(monday + (week - 1) * 7)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(input: &str, template: &str) -> Result<String> {
        to_date(input, template)
            .map(|v| v.to_text(crate::types::DataType::Date).unwrap_or_default())
    }

    #[test]
    fn fields_by_width_or_by_separator() {
        assert_eq!(date("2024-01-02", "YYYY-MM-DD").unwrap(), "2024-01-02");
        assert_eq!(date("20240102", "YYYYMMDD").unwrap(), "2024-01-02");
        assert_eq!(date("2024/1/2", "YYYY-MM-DD").unwrap(), "2024-01-02");
        assert_eq!(date("05 Dec 2000", "DD Mon YYYY").unwrap(), "2000-12-05");
        assert_eq!(date("12", "MM").unwrap(), "0001-12-01 BC");
        assert_eq!(date("97-2-16", "YY-MM-DD").unwrap(), "1997-02-16");
    }

    #[test]
    fn errors_name_the_field() {
        let e = date("2024-xx-01", "YYYY-MM-DD").unwrap_err();
        assert_eq!((e.code, e.message.as_str()), ("22007", "invalid value \"xx\" for \"MM\""));
        let e = date("202", "YYYYMMDD").unwrap_err();
        assert!(e.message.contains("source string too short"), "{}", e.message);
        assert_eq!(date("2024-02-30", "YYYY-MM-DD").unwrap_err().code, "22008");
        assert_eq!(date("2024 2025", "YYYY YYYY").unwrap_err().code, "22007");
        assert_eq!(date("2024-13-01", "YYYY-IW-ID").unwrap_err().code, "22007");
        assert_eq!(date("x", "TZ").unwrap_err().code, "0A000");
        let long = "Y".repeat(TEXT_MAX + 1);
        assert_eq!(date("1", &long).unwrap_err().code, "54000");
    }

    #[test]
    fn timestamps_with_offsets_and_clocks() {
        let ts = |i: &str, t: &str| to_timestamp(i, t, Zone::Fixed(0));
        let v = ts("2024-01-02 03:04 -05", "YYYY-MM-DD HH24:MI TZH").unwrap();
        let want =
            Value::parse("2024-01-02 08:04:00+00", crate::types::DataType::TimestampTz(None));
        assert_eq!(v, want.unwrap());
        assert_eq!(ts("2024-01-02 13:04", "YYYY-MM-DD HH:MI").unwrap_err().code, "22007");
        assert_eq!(ts("2024-01-02 24:00", "YYYY-MM-DD HH24:MI").unwrap_err().code, "22008");
        // Nothing in the input may make the reader panic.
        for input in ["", " ", "é", "-", "+", "9999999999999999999999", "1,", ",5", "\u{10ffff}"] {
            for template in ["YYYY", "Y,YYY", "TZH:TZM", "FXYYYY", "\"é\"MM", "Month", "RM", "J"] {
                let _ = ts(input, template);
            }
        }
    }

    #[test]
    fn no_input_or_template_panics() {
        let parts = [
            "YYYY", "MM", "DD", "HH12", "AM", "Mon", "TZH", "TZM", "Y,YYY", "FX", "FM", "-", " ",
            "\"é\"", "x", "IW", "J",
        ];
        let chars = ["1", "-", "+", ",", "é", " ", "a", "\u{10ffff}"];
        for a in parts {
            for b in parts {
                let template = format!("{a}{b}");
                for x in chars {
                    for y in chars {
                        for z in chars {
                            let input = format!("{x}{y}{z}");
                            let _ = to_date(&input, &template);
                            let _ = to_timestamp(&input, &template, Zone::Fixed(0));
                        }
                    }
                }
            }
        }
    }
}
