//! Time zones: the session's `TimeZone`, zones written in timestamp input, and the zone of
//! `AT TIME ZONE`.
//!
//! A `timestamp with time zone` is an instant, kept as microseconds since 1970-01-01 UTC; a
//! zone says how it reads as a local wall-clock time (output, casts to `timestamp`, `date`
//! and `time`, the fields EXTRACT and date_trunc see, calendar arithmetic) and how a local
//! time given without an offset becomes an instant. Zones come from the tz database (built
//! into Kiln, so every machine agrees) or are fixed offsets.
//!
//! A local time that a daylight-saving change skips (`02:30` on a spring-forward night) is
//! read with the offset in force before the change; one that occurs twice (fall-back) with
//! the offset in force after it — PostgreSQL's rules.

use std::collections::HashMap;
use std::sync::LazyLock;

use chrono::{DateTime, Offset, TimeZone};
use chrono_tz::Tz;

use crate::types::{TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY};

const MICROS_PER_SECOND: i64 = 1_000_000;
const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;

/// The largest offset from UTC a timestamp's input may give: PostgreSQL's limit, 15:59:59.
pub const OFFSET_SECONDS_MAX: i32 = 15 * 3600 + 59 * 60 + 59;

/// The largest offset from UTC a `TimeZone` setting may give: a day.
pub const SETTING_OFFSET_SECONDS_MAX: i32 = 24 * 3600;

/// A time zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zone {
    /// A fixed offset, in seconds east of UTC.
    Fixed(i32),
    /// A zone of the tz database, whose offset follows its rules and history.
    Named(Tz),
}

impl Default for Zone {
    fn default() -> Zone {
        Zone::UTC
    }
}

/// The tz database's zones by lower-case name.
static NAMES: LazyLock<HashMap<String, Tz>> = LazyLock::new(|| {
    chrono_tz::TZ_VARIANTS.iter().map(|tz| (tz.name().to_ascii_lowercase(), *tz)).collect()
});

impl Zone {
    /// Coordinated Universal Time.
    pub const UTC: Zone = Zone::Fixed(0);

    /// The zone of the tz database called `name`, whatever its case.
    pub fn named(name: &str) -> Option<Zone> {
        let name = name.trim().to_ascii_lowercase();
        if matches!(name.as_str(), "utc" | "etc/utc" | "z" | "zulu" | "gmt" | "etc/gmt") {
            return Some(Zone::UTC);
        }
        NAMES.get(&name).map(|tz| Zone::Named(*tz))
    }

    /// The offset, in seconds east of UTC, in force at the instant `utc` (microseconds since
    /// the epoch).
    pub fn offset_at(self, utc: i64) -> i32 {
        match self {
            Zone::Fixed(secs) => secs,
            Zone::Named(tz) => {
                // Instants past chrono's calendar take the offset at its edge (the zone's
                // last rule, or its first offset).
                let t = DateTime::from_timestamp_micros(utc).unwrap_or(if utc < 0 {
                    DateTime::<chrono::Utc>::MIN_UTC
                } else {
                    DateTime::<chrono::Utc>::MAX_UTC
                });
                tz.offset_from_utc_datetime(&t.naive_utc()).fix().local_minus_utc()
            }
        }
    }

    /// The local wall-clock time (as microseconds since a local 1970-01-01 00:00) of the
    /// instant `utc`. The infinities stay infinite.
    pub fn to_local(self, utc: i64) -> i64 {
        if utc == TIMESTAMP_INFINITY || utc == TIMESTAMP_NEG_INFINITY {
            return utc;
        }
        utc.saturating_add(self.offset_at(utc) as i64 * MICROS_PER_SECOND)
    }

    /// The offset that local time `local` reads with: the one in force there, or where a
    /// change skips it the one before the change, and where a change repeats it the one
    /// after.
    pub fn local_offset(self, local: i64) -> i32 {
        let Zone::Named(_) = self else { return self.offset_at(local) };
        // Offsets a day either side of the (local-as-UTC) instant cover any change near it.
        let before = self.offset_at(local.saturating_sub(MICROS_PER_DAY));
        let after = self.offset_at(local.saturating_add(MICROS_PER_DAY));
        let fits = |o: i32| self.offset_at(local.saturating_sub(o as i64 * MICROS_PER_SECOND)) == o;
        match (fits(before), fits(after)) {
            (_, true) => after, // in force, or repeated: the later reading
            (true, false) => before,
            // Skipped by a change: the offset before it.
            (false, false) if before != after => before,
            (false, false) => {
                self.offset_at(local.saturating_sub(before as i64 * MICROS_PER_SECOND))
            }
        }
    }

    /// The zone's abbreviation at the instant `utc`, as PostgreSQL writes it after a time
    /// (`to_char`'s `TZ`, the SQL, Postgres and German DateStyles): `UTC`, `EST`, `CEST`,
    /// or for a zone without letters its offset (`+0530`, `-03`).
    pub fn abbreviation_at(self, utc: i64) -> String {
        match self {
            Zone::Fixed(0) => "UTC".to_string(),
            Zone::Fixed(secs) => format_offset(secs),
            Zone::Named(tz) => {
                let t = DateTime::from_timestamp_micros(utc).unwrap_or(if utc < 0 {
                    DateTime::<chrono::Utc>::MIN_UTC
                } else {
                    DateTime::<chrono::Utc>::MAX_UTC
                });
                chrono_tz::OffsetName::abbreviation(&tz.offset_from_utc_datetime(&t.naive_utc()))
                    .to_string()
            }
        }
    }

    /// Whether daylight-saving time is in force at the instant `utc` (never in a fixed
    /// offset).
    pub fn dst_at(self, utc: i64) -> bool {
        match self {
            Zone::Fixed(_) => false,
            Zone::Named(tz) => {
                let Some(t) = DateTime::from_timestamp_micros(utc) else { return false };
                let offset = tz.offset_from_utc_datetime(&t.naive_utc());
                chrono_tz::OffsetComponents::dst_offset(&offset).num_seconds() != 0
            }
        }
    }

    /// The instant of local wall-clock time `local` in this zone. The infinities stay
    /// infinite.
    pub fn from_local(self, local: i64) -> i64 {
        if local == TIMESTAMP_INFINITY || local == TIMESTAMP_NEG_INFINITY {
            return local;
        }
        local.saturating_sub(self.local_offset(local) as i64 * MICROS_PER_SECOND)
    }
}

/// An offset as PostgreSQL writes it after a time: `+HH`, `+HH:MM` or `+HH:MM:SS`.
/// Every zone of the tz database, by name (`pg_timezone_names`).
pub fn named_zones() -> impl Iterator<Item = (&'static str, Zone)> {
    chrono_tz::TZ_VARIANTS.iter().map(|tz| (tz.name(), Zone::Named(*tz)))
}

pub fn format_offset(secs: i32) -> String {
    let sign = if secs < 0 { '-' } else { '+' };
    let a = secs.unsigned_abs();
    let (h, m, s) = (a / 3600, a / 60 % 60, a % 60);
    match (m, s) {
        (0, 0) => format!("{sign}{h:02}"),
        (_, 0) => format!("{sign}{h:02}:{m:02}"),
        _ => format!("{sign}{h:02}:{m:02}:{s:02}"),
    }
}

/// `+HH[:MM[:SS]]` / `-…` (the sign required), or `HHMM` / `HHMMSS` packed: seconds east.
fn parse_signed_offset(s: &str, max: i32) -> Option<i32> {
    let sign = match s.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    parse_unsigned_offset(&s[1..], max).map(|secs| sign * secs)
}

/// `H[H][:MM[:SS]]` or packed `HHMM` / `HHMMSS`, at most `max`: seconds.
fn parse_unsigned_offset(s: &str, max: i32) -> Option<i32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit() || b == b':') {
        return None;
    }
    let parts: Vec<&str> = s.split(':').collect();
    let num = |p: &str| (!p.is_empty() && p.len() <= 2).then(|| p.parse::<i32>().ok()).flatten();
    let (h, m, sec) = match parts.as_slice() {
        [packed] => {
            let n = |r: std::ops::Range<usize>| packed.get(r).and_then(|d| d.parse::<i32>().ok());
            match packed.len() {
                1 | 2 => (n(0..packed.len())?, 0, 0),
                3 | 4 => (n(0..packed.len() - 2)?, n(packed.len() - 2..packed.len())?, 0),
                5 | 6 => (
                    n(0..packed.len() - 4)?,
                    n(packed.len() - 4..packed.len() - 2)?,
                    n(packed.len() - 2..packed.len())?,
                ),
                _ => return None,
            }
        }
        [h, m] => (num(h)?, num(m)?, 0),
        [h, m, s] => (num(h)?, num(m)?, num(s)?),
        _ => return None,
    };
    let secs = h * 3600 + m * 60 + sec;
    (m < 60 && sec < 60 && secs <= max).then_some(secs)
}

/// A time zone as the `TimeZone` setting takes it, and the name `SHOW TimeZone` gives it: a
/// number of hours east of UTC (`5.5`, shown `<+05:30>-05:30`), a zone of the tz database
/// (any case; shown with its own), or a POSIX-style fixed offset `STD[+-]hh[:mm[:ss]]` /
/// `<STD>[+-]hh…` whose offset is hours *west* of UTC (`UTC+3` is three hours behind UTC,
/// as in POSIX and PostgreSQL).
pub fn parse_setting(value: &str) -> Option<(Zone, String)> {
    let value = value.trim();
    if let Ok(hours) = value.parse::<f64>() {
        let secs = (hours * 3600.0).round();
        if secs.is_nan() || secs.abs() > SETTING_OFFSET_SECONDS_MAX as f64 {
            return None;
        }
        return Some(fixed_setting(secs as i32));
    }
    if let Some(zone) = Zone::named(value) {
        let shown = match zone {
            Zone::Named(tz) => tz.name().to_string(),
            Zone::Fixed(_) => match value.to_ascii_lowercase().as_str() {
                "gmt" => "GMT".to_string(),
                "etc/gmt" => "Etc/GMT".to_string(),
                "etc/utc" => "Etc/UTC".to_string(),
                "zulu" => "Zulu".to_string(),
                "z" => "Z".to_string(),
                _ => "UTC".to_string(),
            },
        };
        return Some((zone, shown));
    }
    posix_offset(value).map(|west| (Zone::Fixed(-west), value.to_string()))
}

/// The offset, in seconds west of UTC, of a POSIX-style fixed zone: a name of letters (or
/// anything in `<>`), then `[+-]hh[:mm[:ss]]`.
fn posix_offset(value: &str) -> Option<i32> {
    let rest = if let Some(inner) = value.strip_prefix('<') {
        let end = inner.find('>')?;
        &inner[end + 1..]
    } else {
        let letters = value.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(value.len());
        &value[letters..]
    };
    let max = SETTING_OFFSET_SECONDS_MAX;
    if rest.starts_with(['+', '-']) {
        parse_signed_offset(rest, max)
    } else {
        parse_unsigned_offset(rest, max)
    }
}

/// The `TimeZone` setting of a fixed offset given in hours or as an interval east of UTC
/// (`SET TIME ZONE 5.5`, `SET TIME ZONE INTERVAL '-07:00' HOUR TO MINUTE`), as PostgreSQL
/// shows it: `<+05:30>-05:30`.
pub fn fixed_setting(secs_east: i32) -> (Zone, String) {
    let iso = format_offset(secs_east);
    (Zone::Fixed(secs_east), format!("<{iso}>{}", format_offset(-secs_east)))
}

/// A zone as `AT TIME ZONE` and `timezone()` take it: an abbreviation (`EST`), a tz
/// database name, or a POSIX-style offset — west of UTC even without a name (`'+05:30'` is
/// five and a half hours behind UTC there, as in PostgreSQL).
pub fn parse_at(value: &str) -> Option<Zone> {
    let value = value.trim();
    if let Some(secs) = abbreviation(value) {
        return Some(Zone::Fixed(secs));
    }
    Zone::named(value).or_else(|| posix_offset(value).map(|west| Zone::Fixed(-west)))
}

/// A zone written after a time in timestamp input: an offset east of UTC (`+02`, `-0530`,
/// `+05:30:15`), `Z`, a common abbreviation (`EST`, `CEST`), or a tz database name.
pub fn parse_input(value: &str) -> Option<Zone> {
    let value = value.trim();
    if value.starts_with(['+', '-']) {
        return parse_signed_offset(value, OFFSET_SECONDS_MAX).map(Zone::Fixed);
    }
    if let Some(secs) = abbreviation(value) {
        return Some(Zone::Fixed(secs));
    }
    Zone::named(value)
}

/// The offsets of the time zone abbreviations PostgreSQL's default set knows that
/// applications commonly write (seconds east of UTC).
fn abbreviation(name: &str) -> Option<i32> {
    let h = |hours: f64| (hours * 3600.0) as i32;
    Some(match name.to_ascii_uppercase().as_str() {
        "UTC" | "UT" | "GMT" | "Z" | "ZULU" | "WET" => 0,
        "BST" | "CET" | "MET" | "WEST" | "WAT" => h(1.0),
        "CEST" | "MEST" | "EET" | "SAST" | "IST" => h(2.0),
        "EEST" | "MSK" | "EAT" => h(3.0),
        "PKT" => h(5.0),
        "ICT" => h(7.0),
        "AWST" | "HKT" | "SGT" | "PHT" => h(8.0),
        "JST" | "KST" => h(9.0),
        "ACST" => h(9.5),
        "ACDT" => h(10.5),
        "AEST" => h(10.0),
        "AEDT" => h(11.0),
        "NZST" => h(12.0),
        "NZDT" => h(13.0),
        "AST" | "EDT" => h(-4.0),
        "ADT" => h(-3.0),
        "NST" => h(-3.5),
        "NDT" => h(-2.5),
        "EST" | "CDT" => h(-5.0),
        "CST" | "MDT" => h(-6.0),
        "MST" | "PDT" => h(-7.0),
        "PST" | "AKDT" => h(-8.0),
        "AKST" => h(-9.0),
        "HST" => h(-10.0),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(s: &str) -> i64 {
        chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S")
            .unwrap()
            .and_utc()
            .timestamp_micros()
    }

    #[test]
    fn daylight_saving_changes_follow_postgresql() {
        let ny = Zone::named("america/new_york").unwrap();
        // Skipped at the spring change: read with the offset before it (-05).
        let t = ny.from_local(micros("2024-03-10 02:30:00"));
        assert_eq!(t, micros("2024-03-10 07:30:00"));
        // Repeated at the autumn change: read with the offset after it (-05).
        let t = ny.from_local(micros("2024-11-03 01:30:00"));
        assert_eq!(t, micros("2024-11-03 06:30:00"));
        // Ordinary times either side.
        assert_eq!(ny.from_local(micros("2024-07-01 12:00:00")), micros("2024-07-01 16:00:00"));
        assert_eq!(ny.from_local(micros("2024-01-01 12:00:00")), micros("2024-01-01 17:00:00"));
        assert_eq!(ny.to_local(micros("2024-07-01 16:00:00")), micros("2024-07-01 12:00:00"));
        // Far outside the calendar chrono knows, the edge offset.
        assert_eq!(ny.from_local(TIMESTAMP_INFINITY), TIMESTAMP_INFINITY);
        let _ = ny.offset_at(i64::MAX - 1);
        let _ = ny.offset_at(i64::MIN + 1);
    }

    const ZONES: [&str; 6] = [
        "UTC",
        "America/New_York",
        "Europe/London",
        "Australia/Lord_Howe",
        "Asia/Kathmandu",
        "<+05:30>-05:30",
    ];

    proptest::proptest! {
        /// Any text: the parsers answer, never panic.
        #[test]
        fn parsers_take_any_text(s in "\\PC{0,40}") {
            let _ = parse_setting(&s);
            let _ = parse_input(&s);
            let _ = parse_at(&s);
            for z in ZONES {
                let zone = parse_setting(z).unwrap().0;
                let _ = crate::types::Value::parse_in(&s, crate::types::DataType::TimestampTz(None), zone.into());
                let _ = crate::types::Value::parse_in(&format!("2024-03-10 02:30 {s}"), crate::types::DataType::TimestampTz(None), zone.into());
            }
        }

        /// A timestamp with time zone written in any zone reads back as the same instant
        /// (the text carries its offset), and its local time maps back to it unless a
        /// daylight-saving change repeats that local time.
        #[test]
        fn instants_round_trip_through_local_time(
            t in -59_000_000_000_000_000i64..200_000_000_000_000_000i64,
            z in 0usize..ZONES.len(),
        ) {
            let zone = parse_setting(ZONES[z]).unwrap().0;
            let v = crate::types::Value::TimestampTz(t);
            let text = v.to_text_in(crate::types::DataType::TimestampTz(None), zone.into()).unwrap();
            let back = crate::types::Value::parse_in(&text, crate::types::DataType::TimestampTz(None), zone.into());
            proptest::prop_assert_eq!(back.unwrap(), v, "{}", text);
            let local = zone.to_local(t);
            let again = zone.from_local(local);
            let offset_before = zone.offset_at(t - 86_400_000_000);
            let offset_after = zone.offset_at(t + 86_400_000_000);
            proptest::prop_assert!(again == t || offset_before != offset_after, "{} {}", t, again);
        }
    }

    #[test]
    fn settings_and_offsets_read_as_postgresql_reads_them() {
        assert_eq!(parse_setting("europe/berlin").unwrap().1, "Europe/Berlin");
        assert_eq!(parse_setting("UTC+3").unwrap(), (Zone::Fixed(-3 * 3600), "UTC+3".into()));
        assert_eq!(parse_setting("GMT-01:00").unwrap().0, Zone::Fixed(3600));
        assert_eq!(parse_setting("<+03>-3").unwrap().0, Zone::Fixed(3 * 3600));
        assert!(parse_setting("Mars/Olympus").is_none());
        assert!(parse_setting("PST").is_none());
        assert_eq!(parse_setting("5.25").unwrap().1, "<+05:15>-05:15");
        assert_eq!(parse_setting("+05:30").unwrap().0, Zone::Fixed(-(5 * 3600 + 1800)));
        assert_eq!(parse_at("+05:30"), Some(Zone::Fixed(-(5 * 3600 + 1800))));
        assert_eq!(parse_at("est"), Some(Zone::Fixed(-5 * 3600)));
        assert_eq!(fixed_setting(5 * 3600 + 1800).1, "<+05:30>-05:30");
        assert_eq!(fixed_setting(-7 * 3600).1, "<-07>+07");
        assert_eq!(parse_input("+0530"), Some(Zone::Fixed(5 * 3600 + 1800)));
        assert_eq!(parse_input("-05:30:15"), Some(Zone::Fixed(-(5 * 3600 + 1800 + 15))));
        assert_eq!(parse_input("+16"), None);
        assert_eq!(parse_input("pst"), Some(Zone::Fixed(-8 * 3600)));
        assert_eq!(format_offset(-(4 * 3600 + 56 * 60 + 2)), "-04:56:02");
        assert_eq!(format_offset(0), "+00");
    }
}
