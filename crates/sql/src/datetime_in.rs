//! PostgreSQL's date and timestamp input: the text is split into fields (numbers, dates with
//! `-`, `/` or `.` between their parts, times, signed offsets, words), then each field takes
//! its meaning from its shape and from what the fields before it gave, as PostgreSQL's
//! `ParseDateTime` and `DecodeDateTime` do. So `2024-01-02 03:04:05+02`, `January 8, 1999`,
//! `08-Jan-1999`, `1/8/1999` (read in the DateStyle's field order), `19990108 040506`,
//! `1999.008`, `J2451187`, `Tue Jan 02 03:04:05 2024 EST`, `2024-01-02 04:05 PM`,
//! `today 10:00` and `2024-01-02 America/New_York` all read.
//!
//! The whole-text words (`now`, `epoch`, `infinity`, …) are the callers'.

use chrono::{Datelike, NaiveDate};

use crate::style::DateOrder;
use crate::zone::Zone;

/// Why a text is not a date or timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bad {
    /// 22007: not a date or time.
    Syntax,
    /// 22008: a field is out of range.
    Field,
    /// 22008: a month or day is out of range, which another DateStyle may have read.
    MonthDay,
    /// 22023: a zone name that is no zone.
    Zone(String),
}

/// What a text gave: a day, a time of day (microseconds; `24:00:00` is a whole day), and
/// the zone it named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub date: NaiveDate,
    pub micros: i64,
    pub zone: Option<Zone>,
}

/// A field of the text, as PostgreSQL's tokenizer classifies it.
#[derive(Debug, Clone, PartialEq)]
enum Field {
    /// Digits, perhaps with one `.` (`1999`, `040506.5`, `1999.008`).
    Number(String),
    /// Parts joined by `-`, `/` or `.` (`2024-01-02`, `jan-08-1999`, `america/new_york`).
    Date(String),
    /// `h:m[:s[.f]]`
    Time(String),
    /// A signed number: an offset (`+02`, `-08:00`, `+0530`).
    Offset(String),
    /// A word, lower case.
    Word(String),
}

/// The longest input read: the longest form PostgreSQL takes is well within it.
const TEXT_MAX: usize = 256;

fn fields(text: &str) -> Result<Vec<Field>, Bad> {
    if text.len() > TEXT_MAX || !text.is_ascii() {
        return Err(Bad::Syntax);
    }
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let take = |i: &mut usize, ok: &dyn Fn(u8) -> bool| {
        let start = *i;
        while *i < b.len() && ok(b[*i]) {
            *i += 1;
        }
        text[start..*i].to_ascii_lowercase()
    };
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            take(&mut i, &|c| c.is_ascii_digit());
            match b.get(i) {
                Some(b':') => {
                    take(&mut i, &|c| c.is_ascii_digit() || c == b':' || c == b'.');
                    out.push(Field::Time(text[start..i].to_string()));
                }
                Some(&delim @ (b'-' | b'/' | b'.')) => {
                    i += 1;
                    if b.get(i).is_some_and(u8::is_ascii_digit) {
                        take(&mut i, &|c| c.is_ascii_digit());
                        // A third part only with the same separator; `12.5` is a number.
                        if b.get(i) == Some(&delim) {
                            take(&mut i, &|c| c.is_ascii_digit() || c == delim);
                            out.push(Field::Date(text[start..i].to_string()));
                        } else if delim == b'.' {
                            out.push(Field::Number(text[start..i].to_string()));
                        } else {
                            out.push(Field::Date(text[start..i].to_string()));
                        }
                    } else {
                        take(&mut i, &|c| c.is_ascii_alphanumeric() || c == delim);
                        out.push(Field::Date(text[start..i].to_ascii_lowercase()));
                    }
                }
                _ => out.push(Field::Number(text[start..i].to_string())),
            }
        } else if c == b'.' {
            let start = i;
            i += 1;
            take(&mut i, &|c| c.is_ascii_digit());
            out.push(Field::Number(text[start..i].to_string()));
        } else if c.is_ascii_alphabetic() {
            let start = i;
            take(&mut i, &|c| c.is_ascii_alphabetic());
            let word = text[start..i].to_ascii_lowercase();
            let next = b.get(i).copied();
            // A date with a month name (`jan-08-1999`), or a zone name with punctuation
            // (`america/new_york`, `etc/gmt+5`), unless the word is a keyword before a
            // number (`t03:04`, `j2451187`).
            let joined = matches!(next, Some(b'-' | b'/' | b'.'))
                || (matches!(next, Some(b'+')) || next.is_some_and(|c| c.is_ascii_digit()))
                    && keyword(&word).is_none();
            if joined {
                take(&mut i, &|c| {
                    c.is_ascii_alphanumeric()
                        || matches!(c, b'+' | b'-' | b'/' | b'_' | b'.' | b':')
                });
                out.push(Field::Date(text[start..i].to_ascii_lowercase()));
            } else {
                out.push(Field::Word(word));
            }
        } else if c == b'+' || c == b'-' {
            let start = i;
            i += 1;
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if b.get(i).is_some_and(u8::is_ascii_digit) {
                let digits = i;
                take(&mut i, &|c| c.is_ascii_digit() || matches!(c, b':' | b'.' | b'-'));
                out.push(Field::Offset(format!("{}{}", &text[start..start + 1], &text[digits..i])));
            } else {
                // `-infinity` among other fields, or a sign alone.
                return Err(Bad::Syntax);
            }
        } else if c.is_ascii_punctuation() {
            // Other punctuation only separates (`January 8, 1999`).
            i += 1;
        } else {
            return Err(Bad::Syntax);
        }
    }
    Ok(out)
}

/// The meaning of a word.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Keyword {
    Month(u32),
    /// A day of the week: read and not checked, as in PostgreSQL.
    Weekday,
    Am,
    Pm,
    Ad,
    Bc,
    /// `T` between an ISO date and its time.
    IsoTime,
    /// `today` (0), `tomorrow` (1), `yesterday` (-1).
    Relative(i64),
    Allballs,
    Julian,
    /// Read and dropped (`on`).
    Ignored,
}

fn keyword(word: &str) -> Option<Keyword> {
    const MONTHS: [&str; 12] =
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    const FULL: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    if let Some(m) = MONTHS.iter().chain(&FULL).position(|m| *m == word) {
        return Some(Keyword::Month(m as u32 % 12 + 1));
    }
    Some(match word {
        "sept" => Keyword::Month(9),
        "sun" | "mon" | "tue" | "tues" | "wed" | "wednesday" | "thu" | "thur" | "thurs" | "fri"
        | "sat" | "sunday" | "monday" | "tuesday" | "thursday" | "friday" | "saturday" => {
            Keyword::Weekday
        }
        "am" => Keyword::Am,
        "pm" => Keyword::Pm,
        "ad" => Keyword::Ad,
        "bc" => Keyword::Bc,
        "t" => Keyword::IsoTime,
        "today" => Keyword::Relative(0),
        "tomorrow" => Keyword::Relative(1),
        "yesterday" => Keyword::Relative(-1),
        "allballs" => Keyword::Allballs,
        "j" | "jd" | "julian" => Keyword::Julian,
        "on" => Keyword::Ignored,
        _ => return None,
    })
}

/// The date fields read so far, and the time.
#[derive(Default)]
struct Parts {
    year: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    /// Day of the year (`1999.008`).
    doy: Option<i64>,
    /// The year was written with one or two digits (then it is 1970–2069).
    two_digit_year: bool,
    text_month: bool,
    julian: bool,
    time: Option<(i64, i64, i64, i64)>,
}

impl Parts {
    fn date_complete(&self) -> bool {
        self.year.is_some() && self.month.is_some() && self.day.is_some()
    }

    fn set(slot: &mut Option<i64>, v: i64) -> Result<(), Bad> {
        if slot.is_some() {
            return Err(Bad::Syntax);
        }
        *slot = Some(v);
        Ok(())
    }

    /// A number of a date whose meaning depends on the fields before it and the DateOrder
    /// (PostgreSQL's `DecodeNumber`).
    fn number(&mut self, digits: &str, order: DateOrder) -> Result<(), Bad> {
        let v: i64 = digits.parse().map_err(|_| Bad::Field)?;
        let len = digits.len();
        let known = (self.year.is_some(), self.month.is_some(), self.day.is_some());
        if len == 3 && known == (true, false, false) && (1..=366).contains(&v) {
            self.doy = Some(v);
            self.month = Some(1);
            self.day = Some(1);
            return Ok(());
        }
        let year = |p: &mut Parts| {
            p.two_digit_year = len <= 2;
            Parts::set(&mut p.year, v)
        };
        match known {
            (false, false, false) if len >= 3 || order == DateOrder::Ymd => year(self),
            (false, false, false) if order == DateOrder::Dmy => Parts::set(&mut self.day, v),
            (false, false, false) => Parts::set(&mut self.month, v),
            (true, false, false) => Parts::set(&mut self.month, v),
            (false, true, false) if self.text_month => {
                if len >= 3 || order == DateOrder::Ymd {
                    year(self)
                } else {
                    Parts::set(&mut self.day, v)
                }
            }
            (false, true, false) => Parts::set(&mut self.day, v),
            (true, true, false) if self.text_month && len >= 3 && self.two_digit_year => {
                // `08-Jan-1999`: the first number was the day.
                self.day = self.year.take();
                self.two_digit_year = false;
                Parts::set(&mut self.year, v)
            }
            (true, true, false) => Parts::set(&mut self.day, v),
            (false, false, true) => Parts::set(&mut self.month, v),
            (false, true, true) => year(self),
            (true, true, true) => self.run_together(digits),
            _ => Err(Bad::Syntax),
        }
    }

    /// Digits run together: `YYYYMMDD` or `YYMMDD` before the date is complete, `hhmmss`
    /// or `hhmm` after (PostgreSQL's `DecodeNumberField`).
    fn run_together(&mut self, digits: &str) -> Result<(), Bad> {
        let (whole, frac) = match digits.split_once('.') {
            Some((w, f)) => (w, Some(f)),
            None => (digits, None),
        };
        let n = |s: &str| s.parse::<i64>().map_err(|_| Bad::Syntax);
        let len = whole.len();
        if frac.is_none() && !self.date_complete() {
            if len >= 6 {
                self.day = Some(n(&whole[len - 2..])?);
                self.month = Some(n(&whole[len - 4..len - 2])?);
                self.year = Some(n(&whole[..len - 4])?);
                self.two_digit_year = len - 4 == 2;
                return Ok(());
            }
            return Err(Bad::Syntax);
        }
        if self.time.is_some() {
            return Err(Bad::Syntax);
        }
        let fraction = frac.map_or(Ok(0), fraction_micros)?;
        self.time = Some(match len {
            6 => (n(&whole[..2])?, n(&whole[2..4])?, n(&whole[4..])?, fraction),
            4 if frac.is_none() => (n(&whole[..2])?, n(&whole[2..])?, 0, 0),
            _ => return Err(Bad::Syntax),
        });
        Ok(())
    }

    /// A field with separators: a month name anywhere, then its numbers in order
    /// (PostgreSQL's `DecodeDate`).
    fn date(&mut self, text: &str, order: DateOrder) -> Result<(), Bad> {
        let mut parts: Vec<&str> = Vec::new();
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            while i < b.len() && !b[i].is_ascii_alphanumeric() {
                i += 1;
            }
            if i == b.len() {
                return Err(Bad::Syntax);
            }
            let start = i;
            let digit = b[i].is_ascii_digit();
            while i < b.len()
                && (if digit { b[i].is_ascii_digit() } else { b[i].is_ascii_alphabetic() })
            {
                i += 1;
            }
            parts.push(&text[start..i]);
            if i < b.len() {
                i += 1;
            }
        }
        if parts.len() > 3 {
            return Err(Bad::Syntax);
        }
        let mut numbers = Vec::new();
        for p in parts {
            if p.as_bytes()[0].is_ascii_alphabetic() {
                match keyword(p) {
                    Some(Keyword::Month(m)) => {
                        Parts::set(&mut self.month, m as i64)?;
                        self.text_month = true;
                    }
                    _ => return Err(Bad::Syntax),
                }
            } else {
                numbers.push(p);
            }
        }
        for p in numbers {
            self.number(p, order)?;
        }
        if !self.date_complete() {
            return Err(Bad::Syntax);
        }
        Ok(())
    }
}

/// `.ddd`: microseconds, rounded.
fn fraction_micros(digits: &str) -> Result<i64, Bad> {
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Bad::Syntax);
    }
    let padded: String = digits.chars().chain(std::iter::repeat('0')).take(7).collect();
    let tenths: i64 = padded.parse().map_err(|_| Bad::Syntax)?;
    Ok((tenths + 5) / 10)
}

/// `h:m[:s[.f]]`, or `m:s.f`.
fn time(text: &str) -> Result<(i64, i64, i64, i64), Bad> {
    let n = |s: &str| -> Result<i64, Bad> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 9 {
            return Err(Bad::Syntax);
        }
        s.parse().map_err(|_| Bad::Syntax)
    };
    let parts: Vec<&str> = text.split(':').collect();
    let (h, m, s, f) = match parts.as_slice() {
        [h, m] => match m.split_once('.') {
            // `mm:ss.fff`
            Some((s, f)) => (0, n(h)?, n(s)?, fraction_micros(f)?),
            None => (n(h)?, n(m)?, 0, 0),
        },
        [h, m, s] => match s.split_once('.') {
            Some((s, f)) => (n(h)?, n(m)?, n(s)?, fraction_micros(f)?),
            None => (n(h)?, n(m)?, n(s)?, 0),
        },
        _ => return Err(Bad::Syntax),
    };
    if m > 59 || s > 60 || f > 1_000_000 {
        return Err(Bad::Field);
    }
    Ok((h, m, s, f))
}

/// Reads `text` as a date and perhaps a time and a zone, ambiguous numeric dates in
/// `order`; `relative(n)` is the day `n` days from today (for `today`, `tomorrow`,
/// `yesterday`).
pub fn decode(
    text: &str,
    order: DateOrder,
    relative: &dyn Fn(i64) -> NaiveDate,
) -> Result<Decoded, Bad> {
    let mut p = Parts::default();
    let mut zone: Option<Zone> = None;
    let (mut bc, mut meridian) = (false, None);
    let set_zone = |zone: &mut Option<Zone>, z: Zone| {
        if zone.replace(z).is_some() {
            return Err(Bad::Syntax);
        }
        Ok(())
    };
    let fields = fields(text)?;
    if fields.is_empty() {
        return Err(Bad::Syntax);
    }
    let mut i = 0;
    while i < fields.len() {
        match &fields[i] {
            Field::Date(s) if p.date_complete() => {
                if s.as_bytes()[0].is_ascii_digit() {
                    return Err(Bad::Syntax);
                }
                let z = crate::zone::parse_input(s).ok_or_else(|| Bad::Zone(s.clone()))?;
                set_zone(&mut zone, z)?;
            }
            Field::Date(s) => p.date(s, order)?,
            Field::Time(s) => {
                if p.time.is_some() {
                    return Err(Bad::Syntax);
                }
                p.time = Some(time(s)?);
            }
            Field::Offset(s) => {
                let z = crate::zone::parse_input(s).ok_or(Bad::Syntax)?;
                set_zone(&mut zone, z)?;
            }
            Field::Number(s) if p.julian => {
                let days: i64 = s.parse().map_err(|_| Bad::Syntax)?;
                let date = i32::try_from(days - 1_721_425)
                    .ok()
                    .and_then(NaiveDate::from_num_days_from_ce_opt)
                    .ok_or(Bad::Field)?;
                p.julian = false;
                Parts::set(&mut p.year, date.year() as i64)?;
                Parts::set(&mut p.month, date.month() as i64)?;
                Parts::set(&mut p.day, date.day() as i64)?;
            }
            Field::Number(s) => {
                let dotted = s.contains('.');
                let whole = s.split_once('.').map_or(s.as_str(), |(w, _)| w);
                if dotted && !p.date_complete() && !whole.is_empty() && whole.len() <= 4 {
                    // `1999.008`, a year and a day of the year.
                    p.date(s, order)?;
                } else if dotted && whole.len() > 2 {
                    // `040506.789`, a time with its fraction.
                    p.run_together(s)?;
                } else if dotted {
                    return Err(Bad::Syntax);
                } else if s.len() >= 6 && (!p.date_complete() || p.time.is_none()) {
                    p.run_together(s)?;
                } else {
                    p.number(s, order)?;
                }
            }
            Field::Word(w) => match keyword(w) {
                Some(Keyword::Month(m)) => {
                    // `2 Jan 2024` read in MDY order: the number taken for the month was
                    // the day.
                    match p.month {
                        Some(n) if !p.text_month && p.day.is_none() && (1..=31).contains(&n) => {
                            p.day = Some(n);
                            p.month = Some(m as i64);
                        }
                        _ => Parts::set(&mut p.month, m as i64)?,
                    }
                    p.text_month = true;
                }
                Some(Keyword::Weekday | Keyword::Ad | Keyword::Ignored) => {}
                Some(Keyword::IsoTime) => {
                    if !matches!(fields.get(i + 1), Some(Field::Time(_) | Field::Number(_))) {
                        return Err(Bad::Syntax);
                    }
                }
                Some(Keyword::Bc) => bc = true,
                Some(Keyword::Am) => meridian = Some(false),
                Some(Keyword::Pm) => meridian = Some(true),
                Some(Keyword::Relative(n)) => {
                    let d = relative(n);
                    Parts::set(&mut p.year, d.year() as i64)?;
                    Parts::set(&mut p.month, d.month() as i64)?;
                    Parts::set(&mut p.day, d.day() as i64)?;
                }
                Some(Keyword::Allballs) => {
                    if p.time.replace((0, 0, 0, 0)).is_some() {
                        return Err(Bad::Syntax);
                    }
                }
                Some(Keyword::Julian) => p.julian = true,
                None => {
                    let z = crate::zone::parse_input(w).ok_or(Bad::Syntax)?;
                    set_zone(&mut zone, z)?;
                }
            },
        }
        i += 1;
    }
    let (mut hour, min, sec, frac) = p.time.unwrap_or((0, 0, 0, 0));
    if let Some(pm) = meridian {
        if hour > 12 {
            return Err(Bad::Field);
        }
        hour = match (pm, hour) {
            (false, 12) => 0,
            (true, h) if h != 12 => h + 12,
            (_, h) => h,
        };
    }
    if hour > 24 || (hour == 24 && (min > 0 || sec > 0 || frac > 0)) {
        return Err(Bad::Field);
    }
    let (Some(mut year), Some(month), Some(day)) = (p.year, p.month, p.day) else {
        return Err(Bad::Syntax);
    };
    if bc {
        if year <= 0 {
            return Err(Bad::Field);
        }
        year = 1 - year;
    } else if p.two_digit_year {
        year += if year < 70 {
            2000
        } else if year < 100 {
            1900
        } else {
            0
        };
    } else if year <= 0 {
        return Err(Bad::Field);
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return Err(Bad::MonthDay);
    }
    let year = i32::try_from(year).map_err(|_| Bad::Field)?;
    let date = match p.doy {
        Some(doy) => NaiveDate::from_yo_opt(year, doy as u32),
        None => NaiveDate::from_ymd_opt(year, month as u32, day as u32),
    }
    .ok_or(Bad::Field)?;
    let micros = ((hour * 60 + min) * 60 + sec) * 1_000_000 + frac;
    Ok(Decoded { date, micros, zone })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, order: DateOrder) -> Result<String, Bad> {
        let today =
            |n: i64| NaiveDate::from_ymd_opt(2024, 6, 15).unwrap() + chrono::Days::new(n as u64);
        decode(text, order, &today).map(|d| {
            let z = match d.zone {
                Some(Zone::Fixed(s)) => format!(" {s}"),
                Some(Zone::Named(tz)) => format!(" {}", tz.name()),
                None => String::new(),
            };
            format!("{} {}{z}", d.date, d.micros / 1_000_000)
        })
    }

    #[test]
    fn postgresql_date_forms() {
        let mdy = |t: &str| read(t, DateOrder::Mdy);
        assert_eq!(mdy("2024-01-02").unwrap(), "2024-01-02 0");
        assert_eq!(mdy("1/8/1999").unwrap(), "1999-01-08 0");
        assert_eq!(read("1/8/1999", DateOrder::Dmy).unwrap(), "1999-08-01 0");
        assert_eq!(read("99/1/8", DateOrder::Ymd).unwrap(), "1999-01-08 0");
        assert_eq!(mdy("January 8, 1999").unwrap(), "1999-01-08 0");
        assert_eq!(mdy("08-Jan-1999").unwrap(), "1999-01-08 0");
        assert_eq!(mdy("Jan-08-1999").unwrap(), "1999-01-08 0");
        assert_eq!(mdy("1999-Jan-08").unwrap(), "1999-01-08 0");
        assert_eq!(mdy("19990108").unwrap(), "1999-01-08 0");
        assert_eq!(mdy("990108").unwrap(), "1999-01-08 0");
        assert_eq!(mdy("1999.008").unwrap(), "1999-01-08 0");
        assert_eq!(mdy("J2451187").unwrap(), "1999-01-08 0");
        assert_eq!(mdy("January 8, 99 BC").unwrap(), "-0098-01-08 0");
        assert_eq!(mdy("Tue Jan 02 03:04:05 2024").unwrap(), "2024-01-02 11045");
        assert_eq!(mdy("2024-01-02 04:05 PM").unwrap(), "2024-01-02 57900");
        assert_eq!(mdy("2024-01-02 12:00 am").unwrap(), "2024-01-02 0");
        assert_eq!(mdy("19990108 040506").unwrap(), "1999-01-08 14706");
        assert_eq!(mdy("2024-01-02T03:04:05Z").unwrap(), "2024-01-02 11045 0");
        assert_eq!(mdy("2024-01-02 03:04:05-08").unwrap(), "2024-01-02 11045 -28800");
        assert_eq!(mdy("2024-01-02+02").unwrap(), "2024-01-02 0 7200");
        assert_eq!(mdy("2024-01-02 America/New_York").unwrap(), "2024-01-02 0 America/New_York");
        assert_eq!(mdy("today 10:00").unwrap(), "2024-06-15 36000");
        assert_eq!(mdy("2024-01-02 24:00").unwrap(), "2024-01-02 86400");
        assert_eq!(mdy("2 Jan 2024").unwrap(), "2024-01-02 0");
        assert_eq!(mdy("Tue 02 Jan 03:04:05 2024 UTC").unwrap(), "2024-01-02 11045 0");
        assert_eq!(mdy("2024-13-01"), Err(Bad::MonthDay));
        assert_eq!(mdy("01/32/2024"), Err(Bad::MonthDay));
        assert_eq!(mdy("2024-02-30"), Err(Bad::Field));
        assert_eq!(mdy("2024-01-02 25:00"), Err(Bad::Field));
        assert_eq!(mdy("2024-01-02 foo"), Err(Bad::Syntax));
        assert_eq!(mdy("2024-01-02 america/nowhere"), Err(Bad::Zone("america/nowhere".into())));
        assert_eq!(mdy("0000-01-01"), Err(Bad::Field));
        assert_eq!(mdy("2024-01"), Err(Bad::Syntax));
        assert_eq!(mdy(""), Err(Bad::Syntax));
        assert_eq!(mdy("2024-01-02 10:00 10:00"), Err(Bad::Syntax));
    }

    proptest::proptest! {
        /// Any text is read or refused, never a panic, in every field order.
        #[test]
        fn any_text_is_read_or_refused(s in "\\PC{0,60}", pieces in proptest::collection::vec("[0-9]{1,8}|[a-z]{1,9}|[-/.:+, ]", 0..12)) {
            let today = |_: i64| NaiveDate::from_ymd_opt(2024, 6, 15).unwrap();
            let joined: String = pieces.concat();
            for order in [DateOrder::Mdy, DateOrder::Dmy, DateOrder::Ymd] {
                let _ = decode(&s, order, &today);
                let _ = decode(&joined, order, &today);
            }
        }
    }
}
