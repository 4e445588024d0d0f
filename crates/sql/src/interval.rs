//! The `interval` type, as PostgreSQL defines it: a span of months, days and microseconds,
//! kept apart because a month is not a fixed number of days, nor a day (across a daylight
//! saving change) a fixed number of hours. Comparison treats a month as 30 days and a day as
//! 24 hours, so `'1 mon' = '30 days'`.
//!
//! This module reads and writes its text form (PostgreSQL's `postgres` IntervalStyle, with
//! the unit words, `hh:mm:ss` fields, `@ … ago`, SQL `years-months` and ISO 8601 `P…T…`
//! input), applies type modifiers (`interval day to second(3)`), and does the arithmetic with
//! dates, times and timestamps: `timestamp + interval` adds months, then days, then time;
//! `timestamp - timestamp` is a span of days and time; `age` is the symbolic difference in
//! years, months and days.

use std::cmp::Ordering;

use chrono::{Datelike, Months, NaiveDate, Timelike};

use crate::error::{code, Result, SqlError};
use crate::types::{MICROS_PER_DAY, TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY};

pub const MICROS_PER_SECOND: i64 = 1_000_000;
pub const MICROS_PER_MINUTE: i64 = 60 * MICROS_PER_SECOND;
pub const MICROS_PER_HOUR: i64 = 60 * MICROS_PER_MINUTE;
const DAYS_PER_MONTH: i64 = 30;

/// A span of time: months, days and microseconds, each with its own sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

/// 22008: a result outside the interval's range.
pub fn out_of_range() -> SqlError {
    SqlError::new(code::DATETIME_OVERFLOW, "interval out of range")
}

fn timestamp_out_of_range() -> SqlError {
    SqlError::new(code::DATETIME_OVERFLOW, "timestamp out of range")
}

impl Interval {
    pub const ZERO: Interval = Interval { months: 0, days: 0, micros: 0 };

    /// The span in microseconds with a month as 30 days: what comparison, keys and grouping
    /// use.
    pub fn span(&self) -> i128 {
        (self.months as i128 * DAYS_PER_MONTH as i128 + self.days as i128) * MICROS_PER_DAY as i128
            + self.micros as i128
    }

    pub fn cmp_span(&self, other: &Interval) -> Ordering {
        self.span().cmp(&other.span())
    }

    fn from_wide(months: i64, days: i64, micros: i64) -> Result<Interval> {
        Ok(Interval {
            months: i32::try_from(months).map_err(|_| out_of_range())?,
            days: i32::try_from(days).map_err(|_| out_of_range())?,
            micros,
        })
    }

    pub fn checked_add(self, o: Interval) -> Result<Interval> {
        Ok(Interval {
            months: self.months.checked_add(o.months).ok_or_else(out_of_range)?,
            days: self.days.checked_add(o.days).ok_or_else(out_of_range)?,
            micros: self.micros.checked_add(o.micros).ok_or_else(out_of_range)?,
        })
    }

    pub fn checked_neg(self) -> Result<Interval> {
        Ok(Interval {
            months: self.months.checked_neg().ok_or_else(out_of_range)?,
            days: self.days.checked_neg().ok_or_else(out_of_range)?,
            micros: self.micros.checked_neg().ok_or_else(out_of_range)?,
        })
    }

    pub fn checked_sub(self, o: Interval) -> Result<Interval> {
        self.checked_add(o.checked_neg()?)
    }

    /// `interval * factor`: whole months and days stay, and their fractions spill into the
    /// next smaller part (a month as 30 days, a day as 24 hours), as PostgreSQL does.
    pub fn checked_mul(self, factor: f64) -> Result<Interval> {
        self.scale(|x| x * factor)
    }

    /// `interval / divisor`; 22012 for zero.
    pub fn checked_div(self, divisor: f64) -> Result<Interval> {
        if divisor == 0.0 {
            return Err(SqlError::new(code::DIVISION_BY_ZERO, "division by zero"));
        }
        self.scale(|x| x / divisor)
    }

    fn scale(self, f: impl Fn(f64) -> f64) -> Result<Interval> {
        let fit_i32 = |x: f64| {
            if x.is_finite() && x >= i32::MIN as f64 && x <= i32::MAX as f64 {
                Ok(x as i32)
            } else {
                Err(out_of_range())
            }
        };
        let round_micro = |x: f64| (x * 1e6).round_ties_even() / 1e6;
        let months_f = f(self.months as f64);
        let months = fit_i32(months_f)?;
        let days_f = f(self.days as f64);
        let mut days = fit_i32(days_f)? as i64;
        let month_remainder_days = round_micro((months_f - months as f64) * DAYS_PER_MONTH as f64);
        let mut sec_remainder = round_micro(
            (days_f - days as f64 + month_remainder_days - month_remainder_days.trunc()) * 86_400.0,
        );
        if sec_remainder.abs() >= 86_400.0 {
            let whole = (sec_remainder / 86_400.0).trunc();
            days += whole as i64;
            sec_remainder -= whole * 86_400.0;
        }
        days += month_remainder_days.trunc() as i64;
        let micros = (f(self.micros as f64) + sec_remainder * 1e6).round_ties_even();
        if !micros.is_finite() || micros >= i64::MAX as f64 || micros < i64::MIN as f64 {
            return Err(out_of_range());
        }
        Interval::from_wide(months as i64, days, micros as i64)
    }

    /// `justify_hours`: whole days of the time part move to the days.
    pub fn justify_hours(self) -> Result<Interval> {
        let mut days = self.days as i64 + self.micros / MICROS_PER_DAY;
        let mut micros = self.micros % MICROS_PER_DAY;
        if days > 0 && micros < 0 {
            micros += MICROS_PER_DAY;
            days -= 1;
        } else if days < 0 && micros > 0 {
            micros -= MICROS_PER_DAY;
            days += 1;
        }
        Interval::from_wide(self.months as i64, days, micros)
    }

    /// `justify_days`: whole 30-day months of the days move to the months.
    pub fn justify_days(self) -> Result<Interval> {
        let mut months = self.months as i64 + self.days as i64 / DAYS_PER_MONTH;
        let mut days = self.days as i64 % DAYS_PER_MONTH;
        if months > 0 && days < 0 {
            days += DAYS_PER_MONTH;
            months -= 1;
        } else if months < 0 && days > 0 {
            days -= DAYS_PER_MONTH;
            months += 1;
        }
        Interval::from_wide(months, days, self.micros)
    }

    /// `justify_interval`: both, with the signs of the parts made to agree.
    pub fn justify(self) -> Result<Interval> {
        let mut months = self.months as i64;
        let mut days = self.days as i64;
        let mut micros = self.micros;
        days += micros / MICROS_PER_DAY;
        micros %= MICROS_PER_DAY;
        months += days / DAYS_PER_MONTH;
        days %= DAYS_PER_MONTH;
        if months > 0 && (days < 0 || (days == 0 && micros < 0)) {
            days += DAYS_PER_MONTH;
            months -= 1;
        } else if months < 0 && (days > 0 || (days == 0 && micros > 0)) {
            days -= DAYS_PER_MONTH;
            months += 1;
        }
        if days > 0 && micros < 0 {
            micros += MICROS_PER_DAY;
            days -= 1;
        } else if days < 0 && micros > 0 {
            micros -= MICROS_PER_DAY;
            days += 1;
        }
        Interval::from_wide(months, days, micros)
    }

    /// The fields PostgreSQL's `interval2tm` splits a span into, each with the part's sign:
    /// years, months, days, hours, minutes, seconds, microseconds.
    pub fn fields(&self) -> [i64; 7] {
        let t = self.micros;
        [
            (self.months / 12) as i64,
            (self.months % 12) as i64,
            self.days as i64,
            t / MICROS_PER_HOUR,
            t % MICROS_PER_HOUR / MICROS_PER_MINUTE,
            t % MICROS_PER_MINUTE / MICROS_PER_SECOND,
            t % MICROS_PER_SECOND,
        ]
    }

    /// The span in seconds with a year as 365.25 days and a month as 30 (`EXTRACT(epoch …)`),
    /// in microseconds.
    pub fn epoch_micros(&self) -> i128 {
        let secs = 31_557_600i128 * (self.months / 12) as i128
            + 2_592_000i128 * (self.months % 12) as i128
            + 86_400i128 * self.days as i128;
        secs * 1_000_000 + self.micros as i128
    }
}

// Type modifiers: PostgreSQL's encoding, `(range << 16) | precision`, with the range a mask
// of the fields an `interval year to month`-style qualifier names.
pub const MONTH: u32 = 1 << 1;
pub const YEAR: u32 = 1 << 2;
pub const DAY: u32 = 1 << 3;
pub const HOUR: u32 = 1 << 10;
pub const MINUTE: u32 = 1 << 11;
pub const SECOND: u32 = 1 << 12;
pub const FULL_RANGE: u32 = 0x7FFF;
pub const FULL_PRECISION: u32 = 0xFFFF;
/// The most fractional digits a precision may ask for.
pub const MAX_PRECISION: u32 = 6;

/// The type modifier for a range mask and an optional precision.
pub fn typmod(range: u32, precision: Option<u32>) -> u32 {
    (range << 16) | precision.unwrap_or(FULL_PRECISION)
}

fn range_of(typmod: Option<u32>) -> u32 {
    typmod.map_or(FULL_RANGE, |t| (t >> 16) & 0x7FFF)
}

/// The modifier's text as `format_type` shows it after `interval`: ` day to second(3)`.
pub fn typmod_text(typmod: u32) -> String {
    let range = range_of(Some(typmod));
    let fields = match range {
        YEAR => " year",
        MONTH => " month",
        DAY => " day",
        HOUR => " hour",
        MINUTE => " minute",
        SECOND => " second",
        r if r == YEAR | MONTH => " year to month",
        r if r == DAY | HOUR => " day to hour",
        r if r == DAY | HOUR | MINUTE => " day to minute",
        r if r == DAY | HOUR | MINUTE | SECOND => " day to second",
        r if r == HOUR | MINUTE => " hour to minute",
        r if r == HOUR | MINUTE | SECOND => " hour to second",
        r if r == MINUTE | SECOND => " minute to second",
        _ => "",
    };
    let precision = typmod & 0xFFFF;
    if precision == FULL_PRECISION {
        fields.to_string()
    } else {
        format!("{fields}({precision})")
    }
}

/// Applies a type modifier: fields below the range's last are dropped, and the seconds are
/// rounded to the precision.
pub fn apply_typmod(iv: Interval, typmod: Option<u32>) -> Result<Interval> {
    let Some(t) = typmod else { return Ok(iv) };
    let range = range_of(typmod);
    let mut iv = iv;
    let truncate = |micros: i64, unit: i64| micros / unit * unit;
    match range {
        FULL_RANGE => {}
        YEAR => iv = Interval { months: iv.months / 12 * 12, days: 0, micros: 0 },
        r if r == MONTH || r == YEAR | MONTH => iv = Interval { days: 0, micros: 0, ..iv },
        DAY => iv.micros = 0,
        r if r == HOUR || r == DAY | HOUR => iv.micros = truncate(iv.micros, MICROS_PER_HOUR),
        r if r == MINUTE || r == HOUR | MINUTE || r == DAY | HOUR | MINUTE => {
            iv.micros = truncate(iv.micros, MICROS_PER_MINUTE)
        }
        _ => {}
    }
    let precision = t & 0xFFFF;
    if precision != FULL_PRECISION && precision < MAX_PRECISION {
        let unit = 10i64.pow(MAX_PRECISION - precision);
        let half = unit / 2;
        iv.micros = if iv.micros >= 0 {
            iv.micros.checked_add(half).ok_or_else(out_of_range)? / unit * unit
        } else {
            -((iv.micros.checked_neg().ok_or_else(out_of_range)? + half) / unit * unit)
        };
    }
    Ok(iv)
}

/// The text output in IntervalStyle `style`.
pub fn format_in(iv: &Interval, style: crate::style::IntervalStyle) -> String {
    use crate::style::IntervalStyle as S;
    match style {
        S::Postgres => format(iv),
        S::PostgresVerbose => format_verbose(iv),
        S::SqlStandard => format_sql_standard(iv),
        S::Iso8601 => format_iso_8601(iv),
    }
}

/// Seconds and their fraction without trailing zeros, unsigned; `pad` writes at least two
/// digits of seconds.
fn seconds_text(sec: i64, frac: i64, pad: bool) -> String {
    let mut out = if pad { format!("{:02}", sec.abs()) } else { sec.abs().to_string() };
    if frac != 0 {
        let digits = format!("{:06}", frac.abs());
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
    out
}

/// `postgres_verbose`: `@ 1 year 2 mons -3 days 4 hours 5 mins 6.5 secs ago`, a leading
/// negative field turning the whole into `… ago` with the others' signs flipped.
fn format_verbose(iv: &Interval) -> String {
    let [year, mon, day, hour, min, sec, frac] = iv.fields();
    let mut out = String::from("@");
    let (mut is_zero, mut is_before) = (true, false);
    for (value, unit) in [(year, "year"), (mon, "mon"), (day, "day"), (hour, "hour"), (min, "min")]
    {
        if value == 0 {
            continue;
        }
        let value = if is_zero {
            is_before = value < 0;
            value.abs()
        } else if is_before {
            -value
        } else {
            value
        };
        out.push_str(&format!(" {value} {unit}{}", if value == 1 { "" } else { "s" }));
        is_zero = false;
    }
    if sec != 0 || frac != 0 {
        out.push(' ');
        if sec < 0 || (sec == 0 && frac < 0) {
            if is_zero {
                is_before = true;
            } else if !is_before {
                out.push('-');
            }
        } else if is_before {
            out.push('-');
        }
        out.push_str(&seconds_text(sec, frac, false));
        out.push_str(if sec.abs() != 1 || frac != 0 { " secs" } else { " sec" });
        is_zero = false;
    }
    if is_zero {
        out.push_str(" 0");
    }
    if is_before {
        out.push_str(" ago");
    }
    out
}

/// `sql_standard`: `1-2` (years-months), `3 4:05:06` (days and time), one sign in front;
/// a value mixing signs, or years-months with days-time, writes every part signed
/// (`+1-2 -3 +4:05:06`).
fn format_sql_standard(iv: &Interval) -> String {
    let [mut year, mut mon, mut day, mut hour, mut min, mut sec, mut frac] = iv.fields();
    let parts = [year, mon, day, hour, min, sec, frac];
    let negative = parts.iter().any(|p| *p < 0);
    let positive = parts.iter().any(|p| *p > 0);
    let year_month = year != 0 || mon != 0;
    let day_time = day != 0 || hour != 0 || min != 0 || sec != 0 || frac != 0;
    let standard = !((negative && positive) || (year_month && day_time));
    let mut out = String::new();
    if negative && standard {
        out.push('-');
        for p in [&mut year, &mut mon, &mut day, &mut hour, &mut min, &mut sec, &mut frac] {
            *p = -*p;
        }
    }
    if !negative && !positive {
        out.push('0');
    } else if !standard {
        let year_sign = if year < 0 || mon < 0 { '-' } else { '+' };
        let day_sign = if day < 0 { '-' } else { '+' };
        let time_sign = if hour < 0 || min < 0 || sec < 0 || frac < 0 { '-' } else { '+' };
        out.push_str(&format!(
            "{year_sign}{}-{} {day_sign}{} {time_sign}{}:{:02}:{}",
            year.abs(),
            mon.abs(),
            day.abs(),
            hour.abs(),
            min.abs(),
            seconds_text(sec, frac, true)
        ));
    } else if year_month {
        out.push_str(&format!("{year}-{mon}"));
    } else if day != 0 {
        out.push_str(&format!("{day} {hour}:{min:02}:{}", seconds_text(sec, frac, true)));
    } else {
        out.push_str(&format!("{hour}:{min:02}:{}", seconds_text(sec, frac, true)));
    }
    out
}

/// `iso_8601`: `P1Y2M3DT4H5M6.5S`, each part with its own sign; zero is `PT0S`.
fn format_iso_8601(iv: &Interval) -> String {
    let [year, mon, day, hour, min, sec, frac] = iv.fields();
    if [year, mon, day, hour, min, sec, frac].iter().all(|p| *p == 0) {
        return "PT0S".into();
    }
    let mut out = String::from("P");
    let part = |out: &mut String, value: i64, unit: char| {
        if value != 0 {
            out.push_str(&format!("{value}{unit}"));
        }
    };
    part(&mut out, year, 'Y');
    part(&mut out, mon, 'M');
    part(&mut out, day, 'D');
    if hour != 0 || min != 0 || sec != 0 || frac != 0 {
        out.push('T');
    }
    part(&mut out, hour, 'H');
    part(&mut out, min, 'M');
    if sec != 0 || frac != 0 {
        if sec < 0 || frac < 0 {
            out.push('-');
        }
        out.push_str(&seconds_text(sec, frac, false));
        out.push('S');
    }
    out
}

/// PostgreSQL's text output in the `postgres` IntervalStyle:
/// `1 year 2 mons -3 days +04:05:06.5`.
pub fn format(iv: &Interval) -> String {
    let [year, mon, day, hour, min, sec, frac] = iv.fields();
    let mut out = String::new();
    let mut is_before = false;
    for (value, unit) in [(year, "year"), (mon, "mon"), (day, "day")] {
        if value == 0 {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        if is_before && value > 0 {
            out.push('+');
        }
        out.push_str(&format!("{value} {unit}{}", if value != 1 { "s" } else { "" }));
        is_before = value < 0;
    }
    if out.is_empty() || iv.micros != 0 {
        let minus = iv.micros < 0;
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(if minus {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        });
        out.push_str(&format!("{:02}:{:02}:{:02}", hour.abs(), min.abs(), sec.abs()));
        if frac != 0 {
            let digits = format!("{:06}", frac.abs());
            out.push('.');
            out.push_str(digits.trim_end_matches('0'));
        }
    }
    out
}

/// Why a text form is not an interval.
enum Bad {
    /// 22007: not an interval at all.
    Syntax,
    /// 22015: a field is outside its range.
    Field,
}

/// Reads an interval's text form, the range of a type modifier (if any) deciding what a
/// number without a unit means (`interval '2' hour`) and which fields are kept.
pub fn parse(text: &str, typmod: Option<u32>) -> Result<Interval> {
    parse_in(text, typmod, crate::style::IntervalStyle::Postgres)
}

/// [`parse`] in IntervalStyle `style`: under `sql_standard` a minus before the first field,
/// when no other field has a sign of its own, applies to every field (`-1 2:03:04` is minus
/// a day, two hours, three minutes and four seconds), as in PostgreSQL.
pub fn parse_in(
    text: &str,
    typmod: Option<u32>,
    style: crate::style::IntervalStyle,
) -> Result<Interval> {
    let sql_standard = style == crate::style::IntervalStyle::SqlStandard;
    let iv = read(text, range_of(typmod), sql_standard).map_err(|bad| match bad {
        Bad::Syntax => SqlError::new(
            code::INVALID_DATETIME,
            format!("invalid input syntax for type interval: \"{text}\""),
        ),
        Bad::Field => {
            SqlError::new("22015", format!("interval field value out of range: \"{text}\""))
        }
    })?;
    apply_typmod(iv, typmod)
}

/// The units a number may carry, each a field that may appear once.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Microsecond,
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
    Decade,
    Century,
    Millennium,
}

impl Unit {
    fn of(word: &str) -> Option<Unit> {
        Some(match word {
            "microsecond" | "microseconds" | "microsecon" | "us" | "usec" | "usecs" | "usecond"
            | "useconds" => Unit::Microsecond,
            "millisecond" | "milliseconds" | "millisecon" | "ms" | "msec" | "msecs" | "msecond"
            | "mseconds" => Unit::Millisecond,
            "second" | "seconds" | "s" | "sec" | "secs" => Unit::Second,
            "minute" | "minutes" | "m" | "min" | "mins" => Unit::Minute,
            "hour" | "hours" | "h" | "hr" | "hrs" => Unit::Hour,
            "day" | "days" | "d" => Unit::Day,
            "week" | "weeks" | "w" => Unit::Week,
            "month" | "months" | "mon" | "mons" => Unit::Month,
            "year" | "years" | "y" | "yr" | "yrs" => Unit::Year,
            "decade" | "decades" | "dec" | "decs" => Unit::Decade,
            "century" | "centuries" | "c" | "cent" => Unit::Century,
            "millennium" | "millennia" | "mil" | "mils" => Unit::Millennium,
            _ => return None,
        })
    }

    fn mask(self) -> u32 {
        1 << (self as u32)
    }
}

const TIME_FIELDS: u32 = (1 << Unit::Hour as u32)
    | (1 << Unit::Minute as u32)
    | (1 << Unit::Second as u32)
    | (1 << Unit::Millisecond as u32)
    | (1 << Unit::Microsecond as u32);

/// Parts being summed, wide enough that no input overflows them before the final check.
#[derive(Default)]
struct Sum {
    months: i128,
    days: i128,
    micros: i128,
    seen: u32,
}

impl Sum {
    fn claim(&mut self, mask: u32) -> std::result::Result<(), Bad> {
        if self.seen & mask != 0 {
            return Err(Bad::Syntax);
        }
        self.seen |= mask;
        Ok(())
    }

    /// Adds `whole + frac` of `unit`; fractions of a month or larger become days, fractions
    /// of a day become time, each rounded to the microsecond as PostgreSQL does.
    fn add(&mut self, whole: i64, frac: f64, unit: Unit) -> std::result::Result<(), Bad> {
        self.claim(unit.mask())?;
        let whole = whole as i128;
        let frac_micros =
            |scale_seconds: f64| (frac * scale_seconds * 1e6).round_ties_even() as i128;
        match unit {
            Unit::Microsecond => self.micros += whole + (frac).round_ties_even() as i128,
            Unit::Millisecond => {
                self.micros += whole * 1000 + (frac * 1000.0).round_ties_even() as i128
            }
            Unit::Second => self.micros += whole * 1_000_000 + frac_micros(1.0),
            Unit::Minute => self.micros += whole * MICROS_PER_MINUTE as i128 + frac_micros(60.0),
            Unit::Hour => self.micros += whole * MICROS_PER_HOUR as i128 + frac_micros(3600.0),
            Unit::Day => {
                self.days += whole;
                self.micros += frac_micros(86_400.0);
            }
            Unit::Week => {
                self.days += whole * 7;
                self.fract_days(frac * 7.0);
            }
            Unit::Month => {
                self.months += whole;
                self.fract_days(frac * DAYS_PER_MONTH as f64);
            }
            Unit::Year | Unit::Decade | Unit::Century | Unit::Millennium => {
                let years = match unit {
                    Unit::Year => 1,
                    Unit::Decade => 10,
                    Unit::Century => 100,
                    _ => 1000,
                };
                self.months +=
                    whole * years * 12 + (frac * (years * 12) as f64).round_ties_even() as i128;
            }
        }
        if self.months.abs() > i64::MAX as i128
            || self.days.abs() > i64::MAX as i128
            || self.micros.abs() > i64::MAX as i128
        {
            return Err(Bad::Field);
        }
        Ok(())
    }

    fn fract_days(&mut self, days: f64) {
        let whole = days.trunc();
        self.days += whole as i128;
        self.micros += ((days - whole) * 86_400e6).round_ties_even() as i128;
    }
}

/// A lexical piece of an interval's text.
#[derive(Debug, PartialEq)]
enum Token {
    /// A number with its sign: the whole part and the fraction (both signed).
    Number(i64, f64),
    /// `[-]h:m[:s[.f]]`.
    Time(bool, Vec<String>),
    /// `[-]y-m`, SQL's year-month form.
    YearMonth(i64, i64),
    Word(String),
}

fn lex(s: &str) -> std::result::Result<Vec<Token>, Bad> {
    let mut tokens = Vec::new();
    let mut pending_sign: Option<bool> = None;
    for chunk in s.split_ascii_whitespace() {
        let mut rest = chunk;
        while !rest.is_empty() {
            let alpha = rest.as_bytes()[0].is_ascii_alphabetic();
            let end = rest.find(|c: char| c.is_ascii_alphabetic() != alpha).unwrap_or(rest.len());
            let (piece, tail) = rest.split_at(end);
            rest = tail;
            if alpha {
                if pending_sign.is_some() {
                    return Err(Bad::Syntax);
                }
                tokens.push(Token::Word(piece.to_string()));
                continue;
            }
            if piece == "-" || piece == "+" {
                if pending_sign.is_some() || !rest.is_empty() {
                    return Err(Bad::Syntax);
                }
                pending_sign = Some(piece == "-");
                continue;
            }
            let (negative, body) = match piece.as_bytes()[0] {
                b'-' => (true, &piece[1..]),
                b'+' => (false, &piece[1..]),
                _ => (false, piece),
            };
            let negative = match pending_sign.take() {
                // `- -1` is not a number.
                Some(_) if body.len() < piece.len() => return Err(Bad::Syntax),
                Some(outer) => outer,
                None => negative,
            };
            tokens.push(number_token(negative, body)?);
        }
    }
    if pending_sign.is_some() {
        return Err(Bad::Syntax);
    }
    Ok(tokens)
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn number_token(negative: bool, body: &str) -> std::result::Result<Token, Bad> {
    let int = |s: &str| -> std::result::Result<i64, Bad> {
        if !digits(s) {
            return Err(Bad::Syntax);
        }
        s.parse::<i64>().map_err(|_| Bad::Field)
    };
    if body.contains(':') {
        let parts: Vec<String> = body.split(':').map(str::to_string).collect();
        if !(2..=3).contains(&parts.len()) {
            return Err(Bad::Syntax);
        }
        return Ok(Token::Time(negative, parts));
    }
    if let Some((y, m)) = body.split_once('-') {
        let (y, m) = (int(y)?, int(m)?);
        return Ok(if negative { Token::YearMonth(-y, -m) } else { Token::YearMonth(y, m) });
    }
    let (whole, frac) = match body.split_once('.') {
        Some((w, f)) => {
            if (w.is_empty() && f.is_empty())
                || !(w.is_empty() || digits(w))
                || !(f.is_empty() || digits(f))
            {
                return Err(Bad::Syntax);
            }
            let frac: f64 = format!("0.{f}0").parse().map_err(|_| Bad::Syntax)?;
            (if w.is_empty() { 0 } else { int(w)? }, frac)
        }
        None => (int(body)?, 0.0),
    };
    Ok(if negative { Token::Number(-whole, -frac) } else { Token::Number(whole, frac) })
}

/// Adds a `h:m[:s]` field (or, for a `minute to second` range, `m:s`).
fn add_time(
    sum: &mut Sum,
    negative: bool,
    parts: &[String],
    range: u32,
) -> std::result::Result<(), Bad> {
    sum.claim(TIME_FIELDS)?;
    let whole = |s: &str| -> std::result::Result<i128, Bad> {
        if !digits(s) {
            return Err(Bad::Syntax);
        }
        // At most an i64, so that scaling to microseconds cannot overflow an i128.
        s.parse::<i64>().map(i128::from).map_err(|_| Bad::Field)
    };
    let seconds = |s: &str| -> std::result::Result<i128, Bad> {
        let (w, f) = s.split_once('.').unwrap_or((s, ""));
        let w = whole(w)?;
        if !f.is_empty() && !digits(f) {
            return Err(Bad::Syntax);
        }
        let frac: f64 = format!("0.{f}0").parse().map_err(|_| Bad::Syntax)?;
        if w >= 60 {
            return Err(Bad::Field);
        }
        Ok(w * 1_000_000 + (frac * 1e6).round_ties_even() as i128)
    };
    let minutes_seconds = parts.len() == 2 && range == MINUTE | SECOND;
    let micros = if minutes_seconds {
        whole(&parts[0])? * MICROS_PER_MINUTE as i128 + seconds(&parts[1])?
    } else {
        let h = whole(&parts[0])?;
        let m = whole(&parts[1])?;
        if m >= 60 {
            return Err(Bad::Field);
        }
        let s = match parts.get(2) {
            Some(s) => seconds(s)?,
            None => 0,
        };
        h * MICROS_PER_HOUR as i128 + m * MICROS_PER_MINUTE as i128 + s
    };
    sum.micros += if negative { -micros } else { micros };
    Ok(())
}

/// The unit of a number written without one: the last field of the range.
fn bare_unit(range: u32) -> Unit {
    match range {
        YEAR => Unit::Year,
        r if r == MONTH || r == YEAR | MONTH => Unit::Month,
        DAY => Unit::Day,
        r if r == HOUR || r == DAY | HOUR => Unit::Hour,
        r if r == MINUTE || r == HOUR | MINUTE || r == DAY | HOUR | MINUTE => Unit::Minute,
        _ => Unit::Second,
    }
}

fn read(text: &str, range: u32, sql_standard: bool) -> std::result::Result<Interval, Bad> {
    let s = text.trim().to_ascii_lowercase();
    if s.is_empty() {
        return Err(Bad::Syntax);
    }
    let sum = match s.strip_prefix('p') {
        Some(iso) => read_iso(iso)?,
        None => {
            let s = s.strip_prefix('@').unwrap_or(&s);
            let mut fields = s.split_ascii_whitespace();
            let leading_sign_for_all = sql_standard
                && fields.next().is_some_and(|f| f.starts_with('-'))
                && !fields.any(|f| f.starts_with(['-', '+']));
            read_postgres(s, range, leading_sign_for_all)?
        }
    };
    let fit = |v: i128| i32::try_from(v).map_err(|_| Bad::Field);
    Ok(Interval {
        months: fit(sum.months)?,
        days: fit(sum.days)?,
        micros: i64::try_from(sum.micros).map_err(|_| Bad::Field)?,
    })
}

fn read_postgres(s: &str, range: u32, all_negative: bool) -> std::result::Result<Sum, Bad> {
    let mut tokens = lex(s)?;
    if all_negative {
        for token in &mut tokens {
            match token {
                Token::Number(whole, frac) => (*whole, *frac) = (-whole.abs(), -frac.abs()),
                Token::Time(negative, _) => *negative = true,
                Token::YearMonth(y, m) => (*y, *m) = (-y.abs(), -m.abs()),
                Token::Word(_) => {}
            }
        }
    }
    if tokens.is_empty() {
        return Err(Bad::Syntax);
    }
    let mut sum = Sum::default();
    let mut ago = false;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Number(whole, frac) => {
                let unit = match tokens.get(i + 1) {
                    Some(Token::Word(w)) => {
                        i += 1;
                        Unit::of(w).ok_or(Bad::Syntax)?
                    }
                    // `1 02:00` is a day and a time, and so is `1 2` in a day-to-hour range.
                    Some(Token::Time(..)) => Unit::Day,
                    Some(Token::Number(..)) if range == DAY | HOUR && i + 2 == tokens.len() => {
                        Unit::Day
                    }
                    _ => bare_unit(range),
                };
                sum.add(*whole, *frac, unit)?;
            }
            Token::Time(negative, parts) => add_time(&mut sum, *negative, parts, range)?,
            Token::YearMonth(y, m) => {
                sum.claim(Unit::Year.mask() | Unit::Month.mask())?;
                sum.months += *y as i128 * 12 + *m as i128;
            }
            // `ago` ends the text, after a unit or a time.
            Token::Word(w) if w == "ago" && i + 1 == tokens.len() && i > 0 => {
                if !matches!(tokens[i - 1], Token::Word(_) | Token::Time(..)) {
                    return Err(Bad::Syntax);
                }
                ago = true;
            }
            Token::Word(_) => return Err(Bad::Syntax),
        }
        i += 1;
    }
    if ago {
        sum.months = -sum.months;
        sum.days = -sum.days;
        sum.micros = -sum.micros;
    }
    Ok(sum)
}

/// ISO 8601's designator form, after the `P`: `1Y2M3W4DT5H6M7.5S`.
fn read_iso(s: &str) -> std::result::Result<Sum, Bad> {
    let mut sum = Sum::default();
    let mut in_time = false;
    let mut rest = s;
    if rest.is_empty() {
        return Err(Bad::Syntax);
    }
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('t') {
            if in_time {
                return Err(Bad::Syntax);
            }
            in_time = true;
            rest = r;
            continue;
        }
        let end = rest.find(|c: char| c.is_ascii_alphabetic()).ok_or(Bad::Syntax)?;
        let (num, tail) = rest.split_at(end);
        let designator = tail.as_bytes()[0];
        rest = &tail[1..];
        let (negative, body) = match num.strip_prefix('-') {
            Some(b) => (true, b),
            None => (false, num.strip_prefix('+').unwrap_or(num)),
        };
        let Token::Number(whole, frac) = number_token(negative, body)? else {
            return Err(Bad::Syntax);
        };
        let unit = match (in_time, designator) {
            (false, b'y') => Unit::Year,
            (false, b'm') => Unit::Month,
            (false, b'w') => Unit::Week,
            (false, b'd') => Unit::Day,
            (true, b'h') => Unit::Hour,
            (true, b'm') => Unit::Minute,
            (true, b's') => Unit::Second,
            _ => return Err(Bad::Syntax),
        };
        sum.add(whole, frac, unit)?;
    }
    Ok(sum)
}

// Arithmetic with timestamps (microseconds since 1970-01-01; a `timestamptz` is an instant,
// whose calendar arithmetic happens in a zone's local time) and times.

fn naive(micros: i64) -> Option<chrono::NaiveDateTime> {
    chrono::DateTime::from_timestamp_micros(micros).map(|d| d.naive_utc())
}

fn check_timestamp(micros: i64) -> Result<i64> {
    if micros == TIMESTAMP_INFINITY || micros == TIMESTAMP_NEG_INFINITY || naive(micros).is_none() {
        return Err(timestamp_out_of_range());
    }
    Ok(micros)
}

/// `timestamp + interval`: the months first (a day past the month's end becomes its last
/// day), then the days and the time. The infinities stay infinite.
pub fn add_to_timestamp(ts: i64, iv: Interval) -> Result<i64> {
    if ts == TIMESTAMP_INFINITY || ts == TIMESTAMP_NEG_INFINITY {
        return Ok(ts);
    }
    let mut t = ts;
    if iv.months != 0 {
        let n = naive(t).ok_or_else(timestamp_out_of_range)?;
        let months = Months::new(iv.months.unsigned_abs());
        let moved =
            if iv.months > 0 { n.checked_add_months(months) } else { n.checked_sub_months(months) };
        t = moved.ok_or_else(timestamp_out_of_range)?.and_utc().timestamp_micros();
    }
    let delta = iv.days as i64 as i128 * MICROS_PER_DAY as i128 + iv.micros as i128;
    let t = i64::try_from(t as i128 + delta).map_err(|_| timestamp_out_of_range())?;
    check_timestamp(t)
}

/// `timestamptz + interval` in time zone `zone`: months and days move the local time (so a
/// day across a daylight-saving change is 23 or 25 hours, and noon stays noon), then the
/// time part moves the instant, as PostgreSQL does.
pub fn add_to_timestamptz(ts: i64, iv: Interval, zone: crate::zone::Zone) -> Result<i64> {
    if ts == TIMESTAMP_INFINITY || ts == TIMESTAMP_NEG_INFINITY {
        return Ok(ts);
    }
    let mut t = ts;
    if iv.months != 0 || iv.days != 0 {
        let calendar = Interval { micros: 0, ..iv };
        let local = add_to_timestamp(zone.to_local(t), calendar)?;
        t = zone.from_local(local);
    }
    let t = i64::try_from(t as i128 + iv.micros as i128).map_err(|_| timestamp_out_of_range())?;
    check_timestamp(t)
}

/// `timestamp - timestamp`: days and time (PostgreSQL's `justify_hours` of the difference).
pub fn timestamp_diff(a: i64, b: i64) -> Result<Interval> {
    let infinite = |t| t == TIMESTAMP_INFINITY || t == TIMESTAMP_NEG_INFINITY;
    if infinite(a) || infinite(b) {
        return Err(SqlError::new(code::DATETIME_OVERFLOW, "cannot subtract infinite timestamps"));
    }
    let micros = a.checked_sub(b).ok_or_else(out_of_range)?;
    Interval { months: 0, days: 0, micros }.justify_hours()
}

/// `time + interval`: the time part only, around the clock.
pub fn add_to_time(t: i64, iv: Interval) -> i64 {
    (t as i128 + iv.micros as i128).rem_euclid(MICROS_PER_DAY as i128) as i64
}

fn days_in_month(year: i32, month: u32) -> i64 {
    let first = NaiveDate::from_ymd_opt(year, month, 1);
    let next = if month == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)
    };
    match (first, next) {
        (Some(a), Some(b)) => (b - a).num_days(),
        _ => 30,
    }
}

/// `age(a, b)`: the difference in years, months, days and time, counting months on the
/// calendar, as PostgreSQL does.
pub fn age(a: i64, b: i64) -> Result<Interval> {
    let infinite = |t| t == TIMESTAMP_INFINITY || t == TIMESTAMP_NEG_INFINITY;
    if infinite(a) || infinite(b) {
        return Err(out_of_range());
    }
    let (x, y) = (naive(a).ok_or_else(out_of_range)?, naive(b).ok_or_else(out_of_range)?);
    let field = |t: &chrono::NaiveDateTime| {
        [
            t.year() as i64,
            t.month() as i64,
            t.day() as i64,
            t.hour() as i64,
            t.minute() as i64,
            t.second() as i64,
            (t.nanosecond() / 1000) as i64,
        ]
    };
    let (fx, fy) = (field(&x), field(&y));
    let mut d: Vec<i64> = fx.iter().zip(&fy).map(|(p, q)| p - q).collect();
    let flip = a < b;
    if flip {
        d.iter_mut().for_each(|v| *v = -*v);
    }
    let [mut year, mut mon, mut day, mut hour, mut min, mut sec, mut usec] =
        [d[0], d[1], d[2], d[3], d[4], d[5], d[6]];
    // Negative fields borrow from the next larger one.
    fn borrow(low: &mut i64, high: &mut i64, unit: i64) {
        while *low < 0 {
            *low += unit;
            *high -= 1;
        }
    }
    borrow(&mut usec, &mut sec, 1_000_000);
    borrow(&mut sec, &mut min, 60);
    borrow(&mut min, &mut hour, 60);
    borrow(&mut hour, &mut day, 24);
    while day < 0 {
        // Borrow the length of the earlier operand's month.
        let t = if flip { &x } else { &y };
        day += days_in_month(t.year(), t.month());
        mon -= 1;
    }
    borrow(&mut mon, &mut year, 12);
    let sign = if flip { -1 } else { 1 };
    let months = (year * 12 + mon) * sign;
    let micros = (((hour * 60 + min) * 60 + sec) * 1_000_000 + usec) * sign;
    Interval::from_wide(months, day * sign, micros)
}

/// `date_trunc(unit, interval)`.
pub fn trunc(unit: &str, iv: Interval) -> Option<Interval> {
    let [year, mon, day, hour, min, _, usec] = iv.fields();
    let (months, days, micros) = match unit {
        "millennium" => (year / 1000 * 1000 * 12, 0, 0),
        "century" => (year / 100 * 100 * 12, 0, 0),
        "decade" => (year / 10 * 10 * 12, 0, 0),
        "year" => (year * 12, 0, 0),
        "quarter" => (year * 12 + mon / 3 * 3, 0, 0),
        "month" => (year * 12 + mon, 0, 0),
        "day" => (year * 12 + mon, day, 0),
        "hour" => (year * 12 + mon, day, hour * MICROS_PER_HOUR),
        "minute" => (year * 12 + mon, day, hour * MICROS_PER_HOUR + min * MICROS_PER_MINUTE),
        "second" => (year * 12 + mon, day, iv.micros - usec),
        "milliseconds" => (year * 12 + mon, day, iv.micros - usec % 1000),
        "microseconds" => (year * 12 + mon, day, iv.micros),
        _ => return None,
    };
    Some(Interval { months: months as i32, days: days as i32, micros })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> String {
        match parse(s, None) {
            Ok(iv) => format(&iv),
            Err(e) => format!("error {}", e.code),
        }
    }

    #[test]
    fn text_forms_read_and_written_as_postgresql_does() {
        for (input, output) in [
            ("1 day", "1 day"),
            ("1.5 days", "1 day 12:00:00"),
            ("1.5 months", "1 mon 15 days"),
            ("-1 day 2 hours", "-1 days +02:00:00"),
            ("1 year 2 months 3 days 04:05:06.789", "1 year 2 mons 3 days 04:05:06.789"),
            ("@ 1 day ago", "-1 days"),
            ("10", "00:00:10"),
            ("1-2", "1 year 2 mons"),
            ("P1Y2M3DT4H5M6S", "1 year 2 mons 3 days 04:05:06"),
            ("1 week", "7 days"),
            ("90 minutes", "01:30:00"),
            ("-00:00:01", "-00:00:01"),
            ("1 day -1 hours", "1 day -01:00:00"),
            ("-1 years -2 mons +3 days", "-1 years -2 mons +3 days"),
            ("0", "00:00:00"),
            ("1.5 years", "1 year 6 mons"),
            ("0.5 weeks", "3 days 12:00:00"),
            ("1 century 2 millennium", "2100 years"),
            ("3 microseconds 4 ms", "00:00:00.004003"),
            ("1:2", "01:02:00"),
            ("1:2:3.5", "01:02:03.5"),
            ("- 1 day", "-1 days"),
            ("+1 -1:00", "1 day -01:00:00"),
            ("1 d 2 h 3 m 4 s", "1 day 02:03:04"),
            ("1y2mon", "1 year 2 mons"),
            ("1:00 ago", "-01:00:00"),
            ("1.123456789 seconds", "00:00:01.123457"),
            ("PT1.5S", "00:00:01.5"),
            ("P1.5D", "1 day 12:00:00"),
            ("1-2 3 4:05", "1 year 2 mons 3 days 04:05:00"),
            ("178000000 years", "178000000 years"),
        ] {
            assert_eq!(text(input), output, "{input}");
        }
        for bad in [
            "abc",
            "1 fortnight",
            "",
            "1 mon 1 mon",
            "1 day 1 d",
            "ago",
            "1 ago",
            "-",
            "1e3 s",
            "1:2:3:4",
            "1 hour 1:00",
            "1:00 5 ms",
        ] {
            assert_eq!(text(bad), "error 22007", "{bad}");
        }
        for out in ["3000000000 years", "2147483648 days", "1 days 25:61:61"] {
            assert_eq!(text(out), "error 22015", "{out}");
        }
    }

    #[test]
    fn modifiers_pick_the_unit_and_drop_fields() {
        let with = |s: &str, range: u32, p: Option<u32>| {
            format(&parse(s, Some(typmod(range, p))).unwrap())
        };
        assert_eq!(with("1 year 2 months 3 days 4:05:06", YEAR, None), "1 year");
        assert_eq!(
            with("1 year 2 months 3 days 4:05:06", DAY | HOUR, None),
            "1 year 2 mons 3 days 04:00:00"
        );
        assert_eq!(with("1:2", MINUTE | SECOND, None), "00:01:02");
        assert_eq!(with("5", YEAR | MONTH, None), "5 mons");
        assert_eq!(with("2", HOUR, None), "02:00:00");
        assert_eq!(with("1.555 s", FULL_RANGE, Some(2)), "00:00:01.56");
        assert_eq!(with("-1.555 s", FULL_RANGE, Some(0)), "-00:00:02");
        assert_eq!(typmod_text(typmod(DAY | HOUR | MINUTE | SECOND, Some(3))), " day to second(3)");
    }

    #[test]
    fn arithmetic_matches_postgresql() {
        let iv = |s: &str| parse(s, None).unwrap();
        assert_eq!(format(&iv("1 day").checked_mul(1.5).unwrap()), "1 day 12:00:00");
        assert_eq!(format(&iv("1 mon").checked_div(3.0).unwrap()), "10 days");
        assert_eq!(format(&iv("3 mons").checked_mul(0.1).unwrap()), "9 days");
        assert_eq!(format(&iv("1 day 1 sec").checked_mul(1e-7).unwrap()), "00:00:00.00864");
        assert!(iv("1 day").checked_mul(1e300).is_err());
        assert!(iv("1 day").checked_div(0.0).is_err());
        assert_eq!(iv("1 mon").cmp_span(&iv("30 days")), Ordering::Equal);
        assert_eq!(format(&iv("35 days").justify_days().unwrap()), "1 mon 5 days");
        assert_eq!(format(&iv("50 hours").justify_hours().unwrap()), "2 days 02:00:00");
        assert_eq!(format(&iv("1 mon -1 hour").justify().unwrap()), "29 days 23:00:00");
        let ts = |s: &str| match crate::types::Value::parse(
            s,
            crate::types::DataType::Timestamp(None),
        ) {
            Ok(crate::types::Value::Timestamp(t)) => t,
            other => panic!("{other:?}"),
        };
        let feb29 = add_to_timestamp(ts("2024-01-31"), iv("1 month")).unwrap();
        assert_eq!(feb29, ts("2024-02-29"));
        assert_eq!(
            format(&timestamp_diff(ts("2024-03-01"), ts("2024-01-01 12:00")).unwrap()),
            "59 days 12:00:00"
        );
        assert_eq!(
            format(&age(ts("2024-03-15"), ts("2023-01-20 10:00")).unwrap()),
            "1 year 1 mon 25 days 14:00:00"
        );
        assert_eq!(
            format(&age(ts("2023-01-20"), ts("2024-03-15 10:00")).unwrap()),
            "-1 years -1 mons -26 days -10:00:00"
        );
        assert_eq!(format(&age(ts("2024-03-31"), ts("2024-02-29")).unwrap()), "1 mon 2 days");
        assert_eq!(format(&age(ts("2024-01-31"), ts("2024-03-01")).unwrap()), "-1 mons -1 days");
        assert_eq!(add_to_time(3_600_000_000, iv("-2 hours")), 23 * MICROS_PER_HOUR);
    }

    #[test]
    fn any_text_is_read_or_refused_and_every_output_reads_back() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let pieces = [
            "1",
            "-2",
            "+3",
            "0.5",
            "9223372036854775807",
            "99999999999999999999999",
            ".",
            ":",
            "-",
            "+",
            " ",
            "@",
            "ago",
            "day",
            "mons",
            "y",
            "h",
            "m",
            "s",
            "us",
            "week",
            "p",
            "t",
            "12:30",
            "1:2:3.456",
            "1-2",
            "century",
            "é",
            "\u{0}",
        ];
        for _ in 0..20_000 {
            let n = rng.gen_range(1..8);
            let text: String = (0..n).map(|_| pieces[rng.gen_range(0..pieces.len())]).collect();
            let range = [None, Some(typmod(DAY | HOUR, None)), Some(typmod(FULL_RANGE, Some(2)))]
                [rng.gen_range(0..3)];
            if let Ok(iv) = parse(&text, range) {
                let shown = format(&iv);
                assert_eq!(parse(&shown, None).ok(), Some(iv), "{text:?} shown as {shown:?}");
            }
        }
        for iv in [
            Interval { months: i32::MIN, days: i32::MIN, micros: i64::MIN },
            Interval { months: i32::MAX, days: i32::MAX, micros: i64::MAX },
            Interval { months: -1, days: 1, micros: -1 },
        ] {
            assert_eq!(parse(&format(&iv), None).ok(), Some(iv), "{}", format(&iv));
        }
    }
}
