//! `to_char`: dates, timestamps, intervals and numbers written by a template, as PostgreSQL's
//! formatting functions write them (its template patterns, the `FM` and `TH` modifiers,
//! quoted literal text).

use crate::numeric::Numeric;
use chrono::{DateTime, Datelike, NaiveDateTime, Timelike};

use crate::error::{code, Result, SqlError};
use crate::types::{date_micros, Value, DATE_INFINITY, DATE_NEG_INFINITY};
use crate::types::{TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY};
use crate::zone::{format_offset, Zone};

/// The longest template Kiln formats (PostgreSQL has no limit; a template is as long as the
/// text it makes, so this bounds the work of one call).
const TEMPLATE_MAX: usize = 10_000;

/// `to_char(value, template)`.
pub fn to_char(v: &Value, template: &str, zone: Zone) -> Result<Value> {
    if template.len() > TEMPLATE_MAX {
        return Err(SqlError::new(
            code::PROGRAM_LIMIT,
            format!("a to_char template is at most {TEMPLATE_MAX} bytes"),
        ));
    }
    Ok(match v {
        Value::Null => Value::Null,
        Value::Date(DATE_INFINITY | DATE_NEG_INFINITY)
        | Value::Timestamp(TIMESTAMP_INFINITY | TIMESTAMP_NEG_INFINITY)
        | Value::TimestampTz(TIMESTAMP_INFINITY | TIMESTAMP_NEG_INFINITY) => Value::Null,
        Value::Date(d) => {
            let local = datetime(date_micros(*d))?;
            Value::Text(format_datetime(&Moment::Local(local), template))
        }
        Value::Timestamp(us) => Value::Text(format_datetime(&Moment::Local(datetime(*us)?), template)),
        Value::TimestampTz(us) => {
            let local = datetime(zone.to_local(*us))?;
            let offset = zone.offset_at(*us);
            let name = zone.abbreviation_at(*us);
            Value::Text(format_datetime(&Moment::Zoned(local, offset, name), template))
        }
        Value::Interval(iv) => {
            let [years, months, days, hours, minutes, seconds, micros] = iv.fields();
            Value::Text(format_datetime(
                &Moment::Span { years, months, days, hours, minutes, seconds, micros },
                template,
            ))
        }
        Value::Int(i) => Value::Text(format_number(Numeric::from(*i), template)?),
        Value::Numeric(d) => Value::Text(format_number(d.clone(), template)?),
        Value::Float(f) => {
            if !f.is_finite() {
                return Ok(Value::Text(format_number_overflow(template)?));
            }
            // A double has about 15 significant digits; the rest is binary noise.
            let Some(d) = Numeric::from_f64(*f) else {
                return Ok(Value::Text(format_number_overflow(template)?));
            };
            Value::Text(format_number(d, template)?)
        }
        other => {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function to_char({}, text) does not exist", other.kind()),
            )
            .hint("No function matches the given name and argument types. You might need to add explicit type casts."))
        }
    })
}

fn datetime(micros: i64) -> Result<NaiveDateTime> {
    DateTime::from_timestamp_micros(micros)
        .map(|d| d.naive_utc())
        .ok_or_else(|| SqlError::new(code::DATETIME_OVERFLOW, "timestamp out of range"))
}

/// What a date/time template is applied to.
enum Moment {
    /// A date or a timestamp without time zone.
    Local(NaiveDateTime),
    /// A timestamp with time zone: its local time, offset (seconds east) and zone's name.
    Zoned(NaiveDateTime, i32, String),
    /// An interval's fields.
    Span { years: i64, months: i64, days: i64, hours: i64, minutes: i64, seconds: i64, micros: i64 },
}

/// A template's date/time patterns, longest first where one is a prefix of another.
pub(super) const PATTERNS: &[&str] = &[
    "HH24", "HH12", "HH", "MI", "SSSSS", "SSSS", "SS", "MS", "US", "FF1", "FF2", "FF3", "FF4",
    "FF5", "FF6", "A.M.", "P.M.", "AM", "PM", "B.C.", "A.D.", "BC", "AD", "Y,YYY", "YYYY", "YYY",
    "YY", "Y", "IYYY", "IYY", "IY", "IDDD", "ID", "IW", "I", "MONTH", "MON", "MM", "DAY", "DDD",
    "DD", "DY", "D", "WW", "W", "CC", "J", "Q", "RM", "TZH", "TZM", "TZ", "OF",
];

/// The spelling case of a word pattern: `MONTH`, `Month` or `month`.
#[derive(Clone, Copy)]
enum Case {
    Upper,
    Capital,
    Lower,
}

fn case_of(written: &str) -> Case {
    let mut chars = written.chars();
    let first = chars.next().is_some_and(|c| c.is_ascii_uppercase());
    let second = chars.next().is_some_and(|c| c.is_ascii_uppercase());
    match (first, second) {
        (true, true) => Case::Upper,
        (true, false) => Case::Capital,
        _ => Case::Lower,
    }
}

fn cased(word: &str, case: Case) -> String {
    match case {
        Case::Upper => word.to_uppercase(),
        Case::Lower => word.to_lowercase(),
        Case::Capital => word.to_string(),
    }
}

pub(super) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
pub(super) const DAYS: [&str; 7] =
    ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const ROMAN: [&str; 12] =
    ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"];

/// `n` with its English ordinal suffix (`TH`: upper case).
fn ordinal(n: i64, upper: bool) -> &'static str {
    let s = match (n.abs() % 100, n.abs() % 10) {
        (11..=13, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    };
    if upper {
        match s {
            "st" => "ST",
            "nd" => "ND",
            "rd" => "RD",
            _ => "TH",
        }
    } else {
        s
    }
}

fn format_datetime(m: &Moment, template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while !rest.is_empty() {
        // FM (fill mode): no padding for the pattern it precedes.
        let mut fill = false;
        let mut t = rest;
        if super::from_char::starts_with_ci(t, "FM") {
            fill = true;
            t = &t[2..];
        }
        let found = PATTERNS.iter().find(|p| super::from_char::starts_with_ci(t, p));
        let Some(p) = found else {
            // FX (fixed format) matters to to_timestamp only.
            if super::from_char::starts_with_ci(t, "FX") {
                rest = &t[2..];
                continue;
            }
            if fill {
                // A lone FM: nothing to write.
                rest = t;
                continue;
            }
            let mut chars = rest.chars();
            match chars.next() {
                Some('"') => {
                    let (text, after) = quoted(chars.as_str());
                    out.push_str(&text);
                    rest = after;
                }
                // `\"`: a double quote; any other backslash is itself.
                Some('\\') if chars.as_str().starts_with('"') => {
                    out.push('"');
                    rest = &chars.as_str()[1..];
                }
                Some(c) => {
                    out.push(c);
                    rest = chars.as_str();
                }
                None => break,
            }
            continue;
        };
        let written = &t[..p.len()];
        t = &t[p.len()..];
        // TH / th: the number's ordinal suffix.
        let suffix = if super::from_char::starts_with_ci(t, "TH") {
            let upper = t.starts_with("TH");
            t = &t[2..];
            Some(upper)
        } else {
            None
        };
        out.push_str(&pattern(m, p, written, fill, suffix));
        rest = t;
    }
    out
}

/// A template's double-quoted text, read from just after the opening quote: its characters
/// (a backslash escapes the next one) and what follows the closing quote (nothing when the
/// quote is never closed), as every template reader takes it.
pub(super) fn quoted(after_quote: &str) -> (String, &str) {
    let mut text = String::new();
    let mut chars = after_quote.chars();
    loop {
        match chars.next() {
            None | Some('"') => break,
            Some('\\') => match chars.next() {
                Some(c) => text.push(c),
                None => break,
            },
            Some(c) => text.push(c),
        }
    }
    (text, chars.as_str())
}

/// One pattern's text.
fn pattern(m: &Moment, p: &str, written: &str, fill: bool, suffix: Option<bool>) -> String {
    let num = |n: i64, width: usize| -> String {
        let mut s = if fill || n < 0 { n.to_string() } else { format!("{n:0width$}") };
        if let Some(upper) = suffix {
            s.push_str(ordinal(n, upper));
        }
        s
    };
    let word = |w: &str, pad: usize| -> String {
        let w = cased(w, case_of(written));
        if fill {
            w
        } else {
            format!("{w:<pad$}")
        }
    };
    let (local, offset, zone) = match m {
        Moment::Local(d) => (*d, None, None),
        Moment::Zoned(d, o, z) => (*d, Some(*o), Some(z.as_str())),
        Moment::Span { years, months, days, hours, minutes, seconds, micros } => {
            return span_pattern(
                p,
                written,
                [*years, *months, *days, *hours, *minutes, *seconds, *micros],
                num,
            );
        }
    };
    let year = local.year() as i64;
    // BC years count back from 1 BC (year 0).
    let shown_year = if year <= 0 { 1 - year } else { year };
    let hour12 = match local.hour() % 12 {
        0 => 12,
        h => h as i64,
    };
    let pm = local.hour() >= 12;
    let lower = written.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    let marker = |upper: &str| if lower { upper.to_lowercase() } else { upper.to_string() };
    let micros = local.nanosecond() as i64 / 1000;
    let iso = local.iso_week();
    match p {
        "HH24" => num(local.hour() as i64, 2),
        "HH12" | "HH" => num(hour12, 2),
        "MI" => num(local.minute() as i64, 2),
        "SS" => num(local.second() as i64, 2),
        "SSSS" | "SSSSS" => num(local.num_seconds_from_midnight() as i64, 0),
        "MS" => num(micros / 1000, 3),
        "US" => num(micros, 6),
        "FF1" | "FF2" | "FF3" | "FF4" | "FF5" | "FF6" => {
            let digits = (p.as_bytes()[2] - b'0') as u32;
            num(micros / 10i64.pow(6 - digits), digits as usize)
        }
        "AM" | "PM" => marker(if pm { "PM" } else { "AM" }),
        "A.M." | "P.M." => marker(if pm { "P.M." } else { "A.M." }),
        "BC" | "AD" => marker(if year <= 0 { "BC" } else { "AD" }),
        "B.C." | "A.D." => marker(if year <= 0 { "B.C." } else { "A.D." }),
        "Y,YYY" => {
            let s = format!("{},{:03}", shown_year / 1000, shown_year % 1000);
            match suffix {
                Some(upper) => s + ordinal(shown_year, upper),
                None => s,
            }
        }
        "YYYY" => num(shown_year, 4),
        "YYY" => num(shown_year % 1000, 3),
        "YY" => num(shown_year % 100, 2),
        "Y" => num(shown_year % 10, 1),
        "IYYY" => num(iso.year() as i64, 4),
        "IYY" => num(iso.year() as i64 % 1000, 3),
        "IY" => num(iso.year() as i64 % 100, 2),
        "I" => num(iso.year() as i64 % 10, 1),
        "IDDD" => num((iso.week() as i64 - 1) * 7 + local.weekday().number_from_monday() as i64, 3),
        "ID" => num(local.weekday().number_from_monday() as i64, 1),
        "IW" => num(iso.week() as i64, 2),
        "MONTH" => word(MONTHS[local.month0() as usize], 9),
        "MON" => word(&MONTHS[local.month0() as usize][..3], 0),
        "MM" => num(local.month() as i64, 2),
        "DAY" => word(DAYS[local.weekday().num_days_from_sunday() as usize], 9),
        "DY" => word(&DAYS[local.weekday().num_days_from_sunday() as usize][..3], 0),
        "DDD" => num(local.ordinal() as i64, 3),
        "DD" => num(local.day() as i64, 2),
        "D" => num(local.weekday().number_from_sunday() as i64, 1),
        "WW" => num((local.ordinal() as i64 - 1) / 7 + 1, 2),
        "W" => num((local.day() as i64 - 1) / 7 + 1, 1),
        "CC" => {
            let cc = if year > 0 { (year + 99) / 100 } else { -((99 - year) / 100) };
            num(cc, 2)
        }
        "J" => num(local.date().num_days_from_ce() as i64 + 1_721_425, 0),
        "Q" => num(local.month0() as i64 / 3 + 1, 1),
        "RM" => word(ROMAN[local.month0() as usize], 4),
        "TZ" => match zone {
            Some(z) if lower => z.to_lowercase(),
            Some(z) => z.to_string(),
            None => String::new(),
        },
        "OF" => offset.map(format_offset).unwrap_or_else(|| "+00".into()),
        "TZH" => {
            let o = offset.unwrap_or(0);
            format!("{}{:02}", if o < 0 { '-' } else { '+' }, o.abs() / 3600)
        }
        "TZM" => format!("{:02}", offset.unwrap_or(0).abs() / 60 % 60),
        _ => String::new(),
    }
}

/// A pattern applied to an interval's fields (years, months, days, hours, minutes, seconds,
/// microseconds); the calendar patterns that need a date write nothing.
fn span_pattern(p: &str, written: &str, f: [i64; 7], num: impl Fn(i64, usize) -> String) -> String {
    let [years, months, days, hours, minutes, seconds, micros] = f;
    match p {
        "HH24" => num(hours, 2),
        "HH12" | "HH" => num(
            match hours % 12 {
                0 => 12,
                h => h,
            },
            2,
        ),
        "MI" => num(minutes, 2),
        "SS" => num(seconds, 2),
        "SSSS" | "SSSSS" => num(hours * 3600 + minutes * 60 + seconds, 0),
        "MS" => num(micros / 1000, 3),
        "US" => num(micros, 6),
        "YYYY" => num(years, 4),
        "YYY" => num(years % 1000, 3),
        "YY" => num(years % 100, 2),
        "Y" => num(years % 10, 1),
        "MM" => num(months, 2),
        "DD" => num(days, 2),
        "DDD" => num(days, 3),
        "AM" | "PM" | "A.M." | "P.M." => {
            let m = if hours % 24 >= 12 { p.replace('A', "P") } else { p.replace('P', "A") };
            if written.starts_with(|c: char| c.is_ascii_lowercase()) {
                m.to_lowercase()
            } else {
                m
            }
        }
        _ => String::new(),
    }
}

/// One element of a number template.
#[derive(Debug, Clone, Copy, PartialEq)]
enum NumPart {
    /// `9`: a digit, or a space where the number has none.
    Nine,
    /// `0`: a digit, or a zero where the number has none.
    Zero,
    /// `.` or `D`: the decimal point.
    Point,
    /// `,` or `G`: a group separator.
    Group,
    /// `S`: the sign, `+` or `-`, anchored to the number.
    Sign,
    /// `MI`: `-` for a negative number, else a space.
    Minus,
    /// `PL`: `+` for a positive number, else a space.
    Plus,
    /// `SG`: `+` or `-` in this place.
    SignHere,
    /// Text copied as it is.
    Char(char),
}

struct NumTemplate {
    parts: Vec<NumPart>,
    fill: bool,
    ordinal: Option<bool>,
}

fn parse_number_template(template: &str) -> Result<NumTemplate> {
    let mut parts = Vec::new();
    let (mut fill, mut ordinal) = (false, None);
    let mut rest = template;
    while !rest.is_empty() {
        let upper2 = rest.get(..2).map(str::to_ascii_uppercase);
        let two = |s: &str| upper2.as_deref() == Some(s);
        if two("FM") {
            fill = true;
            rest = &rest[2..];
            continue;
        }
        if two("TH") {
            ordinal = Some(rest.starts_with("TH"));
            rest = &rest[2..];
            continue;
        }
        if two("MI") || two("PL") || two("SG") {
            parts.push(match upper2.as_deref() {
                Some("MI") => NumPart::Minus,
                Some("PL") => NumPart::Plus,
                _ => NumPart::SignHere,
            });
            rest = &rest[2..];
            continue;
        }
        if two("RN") || two("EE") || rest.starts_with(['V', 'v', 'L', 'l']) {
            let what = match upper2.as_deref() {
                Some("RN") => "RN (roman numerals)",
                Some("EE") => "EEEE (scientific notation)",
                _ if rest.starts_with(['V', 'v']) => "V (shifted digits)",
                _ => "L (currency symbol)",
            };
            return Err(SqlError::unsupported(format!("the to_char number pattern {what}")));
        }
        let mut chars = rest.chars();
        let c = chars.next().unwrap_or(' ');
        rest = chars.as_str();
        parts.push(match c {
            '9' => NumPart::Nine,
            '0' => NumPart::Zero,
            '.' | 'D' | 'd' => NumPart::Point,
            ',' | 'G' | 'g' => NumPart::Group,
            'S' | 's' => NumPart::Sign,
            '"' => {
                // Literal text up to the closing quote.
                let end = rest.find('"').unwrap_or(rest.len());
                parts.extend(rest[..end].chars().map(NumPart::Char));
                rest = rest.get(end + 1..).unwrap_or("");
                continue;
            }
            '\\' => {
                let mut cs = rest.chars();
                let Some(c) = cs.next() else { continue };
                rest = cs.as_str();
                NumPart::Char(c)
            }
            c => NumPart::Char(c),
        });
    }
    if parts.iter().filter(|p| **p == NumPart::Point).count() > 1 {
        return Err(SqlError::new(code::SYNTAX, "multiple decimal points"));
    }
    if parts
        .iter()
        .filter(|p| matches!(p, NumPart::Sign | NumPart::Minus | NumPart::Plus | NumPart::SignHere))
        .count()
        > 1
    {
        return Err(SqlError::new(code::SYNTAX, "cannot use \"S\" twice"));
    }
    Ok(NumTemplate { parts, fill, ordinal })
}

/// A number written by a template; `#` in every digit place when it does not fit.
fn format_number(value: Numeric, template: &str) -> Result<String> {
    let t = parse_number_template(template)?;
    let point = t.parts.iter().position(|p| *p == NumPart::Point);
    let is_digit = |p: &NumPart| matches!(p, NumPart::Nine | NumPart::Zero);
    let int_places =
        t.parts[..point.unwrap_or(t.parts.len())].iter().filter(|p| is_digit(p)).count();
    let frac_places = point.map_or(0, |i| t.parts[i + 1..].iter().filter(|p| is_digit(p)).count());
    let rounded = value.round(frac_places as i64)?;
    let negative = rounded.is_negative();
    let abs = rounded.abs().to_string();
    // "12.25" → "12" and "25" (the rounded value has exactly the template's places).
    let (int_part, frac_part) = abs.split_once('.').unwrap_or((abs.as_str(), ""));
    let int_digits = if int_part == "0" { String::new() } else { int_part.to_string() };
    if int_digits.len() > int_places {
        return format_number_overflow(template);
    }
    let mut frac_digits = frac_part.to_string();
    while frac_digits.len() < frac_places {
        frac_digits.push('0');
    }
    // Where zero padding starts: the first 0 of the integer places.
    let first_zero = t.parts[..point.unwrap_or(t.parts.len())]
        .iter()
        .filter(|p| is_digit(p))
        .position(|p| *p == NumPart::Zero)
        .unwrap_or(int_places);
    // The number has no integer digit and the template has no point, or a 0 there: it
    // still writes its last integer place as 0 (PostgreSQL writes `0`, not nothing).
    let zero_shows_zero = int_digits.is_empty() && (point.is_none() || frac_places == 0);
    let mut int_digits = int_digits;
    if zero_shows_zero && int_places > 0 {
        int_digits = "0".into();
    }
    let lead = int_places - int_digits.len();
    let mut out = String::new();
    // PL adds a plus; the usual sign place stays.
    let explicit_sign =
        t.parts.iter().any(|p| matches!(p, NumPart::Sign | NumPart::Minus | NumPart::SignHere));
    let sign_at_end = matches!(t.parts.last(), Some(NumPart::Sign));
    // The sign, when not placed by the template: just before the first digit written.
    let mut sign_pending = !explicit_sign || matches!(t.parts.first(), Some(NumPart::Sign));
    let sign_char = |neg: bool| if neg { '-' } else { '+' };
    // What the first digit or point written comes after: the sign, unless the template
    // places it (without FM a positive number keeps a space for it).
    let lead_sign = if explicit_sign {
        Some(sign_char(negative))
    } else if negative || !t.fill {
        Some(if negative { '-' } else { ' ' })
    } else {
        None
    };
    let begin = |out: &mut String, sign_pending: &mut bool, started: &mut bool| {
        if *sign_pending && !*started {
            out.extend(lead_sign);
            *sign_pending = false;
        }
        *started = true;
    };
    let (mut int_seen, mut frac_seen, mut started) = (0usize, 0usize, false);
    let mut after_point = false;
    for part in &t.parts {
        match part {
            NumPart::Nine | NumPart::Zero if !after_point => {
                let place = int_seen;
                int_seen += 1;
                if place < lead {
                    if place >= first_zero {
                        begin(&mut out, &mut sign_pending, &mut started);
                        out.push('0');
                    } else if !t.fill {
                        out.push(' ');
                    }
                } else {
                    begin(&mut out, &mut sign_pending, &mut started);
                    out.push_str(&int_digits[place - lead..place - lead + 1]);
                }
            }
            NumPart::Nine | NumPart::Zero => {
                out.push_str(&frac_digits[frac_seen..frac_seen + 1]);
                frac_seen += 1;
            }
            NumPart::Point => {
                begin(&mut out, &mut sign_pending, &mut started);
                after_point = true;
                out.push('.');
            }
            NumPart::Group => {
                if started {
                    out.push(',');
                } else if !t.fill {
                    out.push(' ');
                }
            }
            NumPart::Sign => {
                if sign_at_end && !sign_pending {
                    out.push(sign_char(negative));
                }
            }
            NumPart::Minus => out.push(if negative {
                '-'
            } else if t.fill {
                '\0'
            } else {
                ' '
            }),
            NumPart::Plus => out.push(if negative { ' ' } else { '+' }),
            NumPart::SignHere => out.push(sign_char(negative)),
            NumPart::Char(c) => out.push(*c),
        }
    }
    if sign_at_end && sign_pending {
        out.push(sign_char(negative));
    }
    if t.fill {
        out.retain(|c| c != '\0');
        // FM drops the fraction's trailing zeros in 9 places (and a bare point then).
        if let Some(i) = point {
            let nines_at_end = t.parts[i + 1..]
                .iter()
                .rev()
                .filter(|p| is_digit(p))
                .take_while(|p| **p == NumPart::Nine)
                .count();
            let dot = out.rfind('.');
            if let Some(dot) = dot {
                let mut removable = nines_at_end;
                let tail_start = dot + 1;
                let digits_end = tail_start + frac_places;
                if digits_end <= out.len() {
                    let mut end = digits_end;
                    while removable > 0 && end > tail_start && out.as_bytes()[end - 1] == b'0' {
                        end -= 1;
                        removable -= 1;
                    }
                    out.replace_range(end..digits_end, "");
                }
            }
        }
    }
    if let Some(upper) = t.ordinal {
        // The ordinal suffix reads the last two digits.
        let n = int_part[int_part.len().saturating_sub(2)..].parse::<i64>().unwrap_or(0);
        out.push_str(ordinal(n, upper));
    }
    Ok(out)
}

/// The template with `#` in every digit place: a number too large for it.
fn format_number_overflow(template: &str) -> Result<String> {
    let t = parse_number_template(template)?;
    let explicit_sign = t
        .parts
        .iter()
        .any(|p| matches!(p, NumPart::Sign | NumPart::Minus | NumPart::Plus | NumPart::SignHere));
    let mut out = String::new();
    if !explicit_sign {
        out.push(' ');
    }
    for part in &t.parts {
        match part {
            NumPart::Nine | NumPart::Zero => out.push('#'),
            NumPart::Point => out.push('.'),
            NumPart::Group => out.push(','),
            NumPart::Sign | NumPart::SignHere | NumPart::Plus | NumPart::Minus => out.push(' '),
            NumPart::Char(c) => out.push(*c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(v: Numeric, t: &str) -> String {
        format_number(v, t).unwrap()
    }

    #[test]
    fn numbers_as_postgresql_writes_them() {
        let d = |s: &str| s.parse::<Numeric>().unwrap();
        assert_eq!(num(d("123"), "999"), " 123");
        assert_eq!(num(d("-123"), "999"), "-123");
        assert_eq!(num(d("0"), "999"), "   0");
        assert_eq!(num(d("0.5"), "9.99"), "  .50");
        assert_eq!(num(d("3.1"), "FM999.99"), "3.1");
        assert_eq!(num(d("1234"), "99"), " ##");
        assert_eq!(num(d("1234567"), "9,999,999"), " 1,234,567");
        assert_eq!(num(d("-12"), "0000"), "-0012");
        assert_eq!(num(d("-12"), "9999MI"), "  12-");
        assert_eq!(num(d("12"), "S9999"), "  +12");
        assert_eq!(num(d("12"), "FM9999th"), "12th");
        assert!(format_number(d("1"), "9.9.9").is_err());
    }

    #[test]
    fn timestamps_as_postgresql_writes_them() {
        let at =
            NaiveDateTime::parse_from_str("2024-03-05 14:07:09.123456", "%Y-%m-%d %H:%M:%S%.f")
                .unwrap();
        let m = Moment::Local(at);
        assert_eq!(format_datetime(&m, "YYYY-MM-DD HH24:MI:SS.US"), "2024-03-05 14:07:09.123456");
        assert_eq!(format_datetime(&m, "FMDay, FMDDth FMMonth"), "Tuesday, 5th March");
        assert_eq!(
            format_datetime(&m, "Day|MON|mon|IW|\"HH\"HH12 PM"),
            "Tuesday  |MAR|mar|10|HH02 PM"
        );
        let zoned = Moment::Zoned(at, 3600, "CET".into());
        assert_eq!(format_datetime(&zoned, "TZ OF TZH:TZM"), "CET +01 +01:00");
    }

    /// Every template of up to three short pieces — pattern prefixes and multi-byte letters
    /// beside them — is written without a panic (`FM` before `é` sliced inside it once).
    #[test]
    fn no_template_panics() {
        let pieces = [
            "F", "M", "FM", "FX", "T", "H", "TH", "th", "é", "ö€", "\"", "9", "0", ".", "D", "Y",
            "HH", "MI", "S", "PL", "V", "EEEE", "RN", "\\", " ", "IY", "é\"",
        ];
        let at = NaiveDateTime::parse_from_str("2024-03-05 14:07:09", "%Y-%m-%d %H:%M:%S").unwrap();
        let moments = [Moment::Local(at), Moment::Zoned(at, -12600, "-0330".into())];
        let d = "-12.5".parse::<Numeric>().unwrap();
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let t = format!("{a}{b}{c}");
                    for m in &moments {
                        let _ = format_datetime(m, &t);
                    }
                    let _ = format_number(d.clone(), &t);
                }
            }
        }
    }
}
