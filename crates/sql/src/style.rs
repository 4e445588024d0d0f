//! How a session writes dates, times and intervals as text, and reads ambiguous dates: the
//! `TimeZone`, `DateStyle` and `IntervalStyle` settings, gathered into one [`Style`] that
//! text output and input take. Binary forms do not depend on them.
//!
//! `DateStyle` is PostgreSQL's pair of an output format (`ISO`, `SQL`, `Postgres`, `German`)
//! and a field order for reading and writing day-month-year dates (`MDY`, `DMY`, `YMD`);
//! `IntervalStyle` is one of `postgres`, `postgres_verbose`, `sql_standard`, `iso_8601`.

use crate::error::{code, Result, SqlError};
use crate::zone::Zone;

/// The output format half of `DateStyle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DateFormat {
    /// `2024-01-02 03:04:05+00`
    #[default]
    Iso,
    /// `01/02/2024 03:04:05 UTC` (`02/01/2024` with DMY order)
    Sql,
    /// `Tue Jan 02 03:04:05 2024 UTC`, dates `01-02-2024`
    Postgres,
    /// `02.01.2024 03:04:05 UTC`
    German,
}

/// The field order half of `DateStyle`: how `01/02/03` reads, and how the SQL and Postgres
/// formats order day and month.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DateOrder {
    #[default]
    Mdy,
    Dmy,
    Ymd,
}

/// `IntervalStyle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IntervalStyle {
    /// `1 year 2 mons -3 days +04:05:06`
    #[default]
    Postgres,
    /// `@ 1 year 2 mons -3 days 4 hours 5 mins 6 secs ago`
    PostgresVerbose,
    /// `+1-2 -3 +4:05:06`; its input reads a leading minus as applying to every field
    SqlStandard,
    /// `P1Y2M-3DT4H5M6S`
    Iso8601,
}

/// The settings text output and input follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Style {
    pub zone: Zone,
    pub dates: DateFormat,
    pub order: DateOrder,
    pub intervals: IntervalStyle,
    /// `default_text_search_config`: the configuration of `to_tsvector(text)` and friends.
    pub text_search: crate::textsearch::ConfigId,
}

impl Style {
    /// UTC, `ISO, MDY`, `postgres`: what a new session has unless told otherwise.
    pub const DEFAULT: Style = Style {
        zone: Zone::UTC,
        dates: DateFormat::Iso,
        order: DateOrder::Mdy,
        intervals: IntervalStyle::Postgres,
        text_search: crate::textsearch::ConfigId(crate::textsearch::ENGLISH),
    };

    /// The style of a session's settings as [`normalize_datestyle`] and
    /// [`normalize_intervalstyle`] stored them (anything else reads as the default).
    pub fn of(zone: Zone, datestyle: Option<&str>, intervalstyle: Option<&str>) -> Style {
        let (dates, order) = datestyle
            .and_then(|v| read_datestyle(v, (DateFormat::Iso, DateOrder::Mdy)).ok())
            .unwrap_or_default();
        let intervals = intervalstyle.and_then(interval_style).unwrap_or_default();
        Style { zone, dates, order, intervals, text_search: Default::default() }
    }
}

impl From<Zone> for Style {
    /// The default style in `zone`.
    fn from(zone: Zone) -> Style {
        Style { zone, ..Style::DEFAULT }
    }
}

fn interval_style(value: &str) -> Option<IntervalStyle> {
    Some(match value.trim().to_ascii_lowercase().as_str() {
        "postgres" => IntervalStyle::Postgres,
        "postgres_verbose" => IntervalStyle::PostgresVerbose,
        "sql_standard" => IntervalStyle::SqlStandard,
        "iso_8601" => IntervalStyle::Iso8601,
        _ => return None,
    })
}

/// A value for `SET IntervalStyle`, as SHOW will give it back; 22023 for anything else.
pub fn normalize_intervalstyle(value: &str) -> Result<String> {
    match interval_style(value) {
        Some(_) => Ok(value.trim().to_ascii_lowercase()),
        None => Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"intervalstyle\": \"{value}\""),
        )
        .hint("Available values: postgres, postgres_verbose, sql_standard, iso_8601.")),
    }
}

/// A value for `SET DateStyle` given the setting in force: a comma-separated list of a
/// format and an order keyword (either may be left out and keeps its current value;
/// `German` alone also sets DMY order), written back as PostgreSQL writes it (`SQL, DMY`).
pub fn normalize_datestyle(value: &str, current: &str) -> Result<String> {
    let now = read_datestyle(current, (DateFormat::Iso, DateOrder::Mdy))
        .unwrap_or((DateFormat::Iso, DateOrder::Mdy));
    let (format, order) = read_datestyle(value, now)?;
    let format = match format {
        DateFormat::Iso => "ISO",
        DateFormat::Sql => "SQL",
        DateFormat::Postgres => "Postgres",
        DateFormat::German => "German",
    };
    let order = match order {
        DateOrder::Mdy => "MDY",
        DateOrder::Dmy => "DMY",
        DateOrder::Ymd => "YMD",
    };
    Ok(format!("{format}, {order}"))
}

/// PostgreSQL's reading of a DateStyle list, starting from `(format, order)`.
fn read_datestyle(value: &str, now: (DateFormat, DateOrder)) -> Result<(DateFormat, DateOrder)> {
    let bad = |detail: String| {
        SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"DateStyle\": \"{value}\""),
        )
        .detail(detail)
    };
    let (mut format, mut order) = (None, None);
    // DEFAULT fills in what no keyword gives, without conflicting with one.
    let mut fallback = None;
    let mut german = false;
    for word in value.split(',') {
        let word = word.trim();
        let (f, o) = match word.to_ascii_lowercase().as_str() {
            "iso" => (Some(DateFormat::Iso), None),
            "sql" => (Some(DateFormat::Sql), None),
            "postgres" => (Some(DateFormat::Postgres), None),
            "german" => (Some(DateFormat::German), None),
            "ymd" => (None, Some(DateOrder::Ymd)),
            "dmy" | "euro" | "european" => (None, Some(DateOrder::Dmy)),
            "mdy" | "us" | "noneuro" | "noneuropean" => (None, Some(DateOrder::Mdy)),
            "default" => {
                fallback = Some((DateFormat::Iso, DateOrder::Mdy));
                continue;
            }
            _ => return Err(bad(format!("Unrecognized key word: \"{word}\"."))),
        };
        if let Some(f) = f {
            if format.is_some_and(|had| had != f) {
                return Err(bad("Conflicting \"datestyle\" specifications.".into()));
            }
            german |= f == DateFormat::German;
            format = Some(f);
        }
        if let Some(o) = o {
            if order.is_some_and(|had| had != o) {
                return Err(bad("Conflicting \"datestyle\" specifications.".into()));
            }
            order = Some(o);
        }
    }
    if german && order.is_none() {
        order = Some(DateOrder::Dmy);
    }
    let (format_then, order_then) = fallback.unwrap_or(now);
    Ok((format.unwrap_or(format_then), order.unwrap_or(order_then)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datestyle_settings_read_as_postgresql_reads_them() {
        let set = |v: &str, now: &str| normalize_datestyle(v, now).map_err(|e| e.message);
        assert_eq!(set("SQL, DMY", "ISO, MDY").unwrap(), "SQL, DMY");
        assert_eq!(set("german", "ISO, MDY").unwrap(), "German, DMY");
        assert_eq!(set("German, YMD", "ISO, MDY").unwrap(), "German, YMD");
        assert_eq!(set("ymd", "SQL, DMY").unwrap(), "SQL, YMD");
        assert_eq!(set("Postgres", "ISO, DMY").unwrap(), "Postgres, DMY");
        assert_eq!(set("euro", "ISO, MDY").unwrap(), "ISO, DMY");
        assert_eq!(set("default", "SQL, DMY").unwrap(), "ISO, MDY");
        assert_eq!(set("sql, default", "German, DMY").unwrap(), "SQL, MDY");
        assert!(set("iso, sql", "ISO, MDY").is_err());
        assert!(set("dmy, mdy", "ISO, MDY").is_err());
        assert!(set("foo", "ISO, MDY").is_err());
        assert!(normalize_intervalstyle("ISO_8601").is_ok());
        assert!(normalize_intervalstyle("iso").is_err());
    }
}
