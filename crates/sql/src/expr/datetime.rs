//! Fields and truncation of dates and timestamps: `EXTRACT` / `date_part` and `date_trunc`,
//! as PostgreSQL computes them (a timestamp with time zone by its local time in the
//! session's zone, or the zone date_trunc is given).

use crate::numeric::Numeric;
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Timelike};

use crate::error::{code, Result, SqlError};
use crate::types::{
    date_micros, micros_date, Value, DATE_INFINITY, DATE_NEG_INFINITY, MICROS_PER_DAY,
    TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY,
};
use crate::zone::Zone;

/// A field name as PostgreSQL reads it (singular, plural and abbreviated forms).
fn canonical(field: &str) -> Option<&'static str> {
    Some(match field.trim().to_ascii_lowercase().as_str() {
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" => "microseconds",
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => "milliseconds",
        "second" | "seconds" | "s" | "sec" | "secs" => "second",
        "minute" | "minutes" | "m" | "min" | "mins" => "minute",
        "hour" | "hours" | "h" | "hr" | "hrs" => "hour",
        "day" | "days" | "d" => "day",
        "week" | "weeks" | "w" => "week",
        "month" | "months" | "mon" | "mons" => "month",
        "quarter" | "qtr" => "quarter",
        "year" | "years" | "y" | "yr" | "yrs" => "year",
        "decade" | "decades" => "decade",
        "century" | "centuries" => "century",
        "millennium" | "millennia" | "mil" | "mils" => "millennium",
        "dow" => "dow",
        "isodow" => "isodow",
        "doy" => "doy",
        "isoyear" => "isoyear",
        "epoch" => "epoch",
        "julian" => "julian",
        "timezone" => "timezone",
        "timezone_hour" => "timezone_hour",
        "timezone_minute" => "timezone_minute",
        _ => return None,
    })
}

fn unit_error(field: &str, ty: &str) -> SqlError {
    match canonical(field) {
        Some(_) => SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            format!("unit \"{}\" not supported for type {ty}", field.trim().to_lowercase()),
        ),
        None => SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("unit \"{}\" not recognized for type {ty}", field.trim().to_lowercase()),
        ),
    }
}

fn datetime(micros: i64) -> Option<NaiveDateTime> {
    DateTime::from_timestamp_micros(micros).map(|d| d.naive_utc())
}

fn year_based(field: &str, year: i32) -> Option<i64> {
    let year = year as i64;
    Some(match field {
        "year" => {
            if year <= 0 {
                year - 1 // there is no year 0: 1 BC is year -1
            } else {
                year
            }
        }
        "decade" => year.div_euclid(10),
        "century" => {
            if year > 0 {
                (year + 99) / 100
            } else {
                -((99 - (year - 1)) / 100)
            }
        }
        "millennium" => {
            if year > 0 {
                (year + 999) / 1000
            } else {
                -((999 - (year - 1)) / 1000)
            }
        }
        _ => return None,
    })
}

/// The fields a date has.
fn date_field(field: &str, d: NaiveDate) -> Option<i64> {
    if let Some(v) = year_based(field, d.year()) {
        return Some(v);
    }
    Some(match field {
        "month" => d.month() as i64,
        "day" => d.day() as i64,
        "quarter" => (d.month() as i64 - 1) / 3 + 1,
        "week" => d.iso_week().week() as i64,
        "isoyear" => d.iso_week().year() as i64,
        "dow" => d.weekday().num_days_from_sunday() as i64,
        "isodow" => d.weekday().number_from_monday() as i64,
        "doy" => d.ordinal() as i64,
        "julian" => d.num_days_from_ce() as i64 + 1_721_425,
        _ => return None,
    })
}

/// The zone `AT TIME ZONE`, `timezone()` and `date_trunc(…, zone)` are given: text (a tz
/// database name, an abbreviation, a POSIX offset) or an interval east of UTC.
pub fn zone_arg(v: &Value) -> Result<Zone> {
    match v {
        Value::Text(name) => crate::zone::parse_at(name).ok_or_else(|| {
            SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                format!("time zone \"{name}\" not recognized"),
            )
        }),
        Value::Interval(iv) => {
            let secs = iv.micros / 1_000_000;
            if iv.months != 0 || iv.days != 0 {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER_VALUE,
                    format!(
                        "interval time zone \"{}\" must not include months or days",
                        crate::interval::format(iv)
                    ),
                ));
            }
            if secs.abs() > crate::zone::SETTING_OFFSET_SECONDS_MAX as i64 {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER_VALUE,
                    format!(
                        "interval time zone \"{}\" is out of range",
                        crate::interval::format(iv)
                    ),
                ));
            }
            Ok(Zone::Fixed(secs as i32))
        }
        other => Err(SqlError::new(
            code::UNDEFINED_FUNCTION,
            format!("function timezone({}, …) does not exist", other.natural_type().sql_name()),
        )),
    }
}

/// `EXTRACT(field FROM v)` (numeric) or, with `float`, `date_part(field, v)` (double
/// precision), a timestamp with time zone read in `zone`. Infinite inputs give NULL.
pub fn extract(field: &str, v: &Value, float: bool, zone: Zone) -> Result<Value> {
    let Some(f) = canonical(field) else {
        let ty = match v {
            Value::Date(_) => "date",
            Value::TimestampTz(_) => "timestamp with time zone",
            Value::Time(_) => "time without time zone",
            Value::Interval(_) => "interval",
            _ => "timestamp without time zone",
        };
        return Err(unit_error(field, ty));
    };
    let number = |micros_scaled: i128, scale: u32| -> Value {
        if float {
            Value::Float(micros_scaled as f64 / 10f64.powi(scale as i32))
        } else {
            Value::Numeric(Numeric::from_scaled(micros_scaled, scale))
        }
    };
    let int = |i: i64| number(i as i128, 0);
    match v {
        Value::Null => Ok(Value::Null),
        Value::Date(DATE_INFINITY | DATE_NEG_INFINITY) => Ok(Value::Null),
        Value::Timestamp(TIMESTAMP_INFINITY | TIMESTAMP_NEG_INFINITY)
        | Value::TimestampTz(TIMESTAMP_INFINITY | TIMESTAMP_NEG_INFINITY) => Ok(Value::Null),
        Value::Time(us) => {
            let in_minute = us % 60_000_000;
            Ok(match f {
                "microseconds" => int(in_minute),
                "milliseconds" => number(in_minute as i128, 3),
                "second" => number(in_minute as i128, 6),
                "minute" => int(us / 60_000_000 % 60),
                "hour" => int(us / 3_600_000_000),
                "epoch" => number(*us as i128, 6),
                _ => return Err(unit_error(field, "time without time zone")),
            })
        }
        Value::Interval(iv) => {
            let [year, mon, day, hour, min, sec, usec] = iv.fields();
            let in_minute = sec * 1_000_000 + usec;
            Ok(match f {
                "microseconds" => int(in_minute),
                "milliseconds" => number(in_minute as i128, 3),
                "second" => number(in_minute as i128, 6),
                "minute" => int(min),
                "hour" => int(hour),
                "day" => int(day),
                "month" => int(mon),
                "quarter" => int(mon / 3 + 1),
                "year" => int(year),
                "decade" => int(year / 10),
                "century" => int(year / 100),
                "millennium" => int(year / 1000),
                "epoch" => number(iv.epoch_micros(), 6),
                _ => return Err(unit_error(field, "interval")),
            })
        }
        Value::Date(days) => {
            let d = datetime(date_micros(*days)).map(|t| t.date()).ok_or_else(out_of_range)?;
            if f == "epoch" {
                return Ok(int(*days as i64 * 86_400));
            }
            date_field(f, d).map(int).ok_or_else(|| unit_error(field, "date"))
        }
        Value::Timestamp(utc) | Value::TimestampTz(utc) => {
            let tz = matches!(v, Value::TimestampTz(_));
            // The fields of the local time; the epoch is the instant's.
            let offset = if tz { zone.offset_at(*utc) } else { 0 };
            let us = &utc.saturating_add(offset as i64 * 1_000_000);
            let t = datetime(*us).ok_or_else(out_of_range)?;
            let in_minute = (t.second() as i64) * 1_000_000 + (t.nanosecond() / 1000) as i64;
            Ok(match f {
                "microseconds" => int(in_minute),
                "milliseconds" => number(in_minute as i128, 3),
                "second" => number(in_minute as i128, 6),
                "minute" => int(t.minute() as i64),
                "hour" => int(t.hour() as i64),
                "epoch" => number(*utc as i128, 6),
                "julian" => {
                    // The day number plus the fraction of the day gone.
                    let day = date_field("julian", t.date()).unwrap_or(0) as i128;
                    let micros = us.rem_euclid(MICROS_PER_DAY) as i128;
                    let scaled = day * MICROS_PER_DAY as i128 + micros;
                    if float {
                        Value::Float(scaled as f64 / MICROS_PER_DAY as f64)
                    } else {
                        let d = Numeric::from_scaled(scaled, 0)
                            .div_to(&Numeric::from(MICROS_PER_DAY), 20)?
                            .normalized();
                        Value::Numeric(d)
                    }
                }
                "timezone" if tz => int(offset as i64),
                "timezone_hour" if tz => int(offset as i64 / 3600),
                "timezone_minute" if tz => int(offset as i64 / 60 % 60),
                "timezone" | "timezone_hour" | "timezone_minute" => {
                    return Err(unit_error(field, "timestamp without time zone"))
                }
                other => match date_field(other, t.date()) {
                    Some(n) => int(n),
                    None => return Err(unit_error(field, "timestamp")),
                },
            })
        }
        _ => Err(SqlError::new(
            code::UNDEFINED_FUNCTION,
            "EXTRACT and date_part take a date or a timestamp",
        )),
    }
}

fn out_of_range() -> SqlError {
    SqlError::new(code::DATETIME_OVERFLOW, "timestamp out of range")
}

/// `date_trunc(unit, v)`: the timestamp (a date is taken as midnight, giving a timestamp with
/// time zone) cut down to the unit; a timestamp with time zone is cut in `zone`'s local
/// time (a unit of a day or more starts at local midnight, whatever its offset; a smaller
/// one keeps the instant's offset, as PostgreSQL does).
pub fn date_trunc(unit: &str, v: &Value, zone: Zone) -> Result<Value> {
    let instant = match v {
        Value::Date(d) => Some(zone.from_local(date_micros(*d))),
        Value::TimestampTz(utc) => Some(*utc),
        _ => None,
    };
    if let Some(utc) = instant {
        if utc == TIMESTAMP_INFINITY || utc == TIMESTAMP_NEG_INFINITY {
            return Ok(Value::TimestampTz(utc));
        }
        let offset = zone.offset_at(utc) as i64 * 1_000_000;
        let local = Value::Timestamp(utc.saturating_add(offset));
        let Value::Timestamp(cut) = date_trunc(unit, &local, zone).map_err(|e| {
            if e.message.contains("timestamp without time zone") {
                unit_error(unit, "timestamp with time zone")
            } else {
                e
            }
        })?
        else {
            return Err(out_of_range());
        };
        let whole_days = matches!(
            canonical(unit),
            Some(
                "day" | "week" | "month" | "quarter" | "year" | "decade" | "century" | "millennium"
            )
        );
        return Ok(Value::TimestampTz(if whole_days {
            zone.from_local(cut)
        } else {
            cut - offset
        }));
    }
    let (us, tz) = match v {
        Value::Null => return Ok(Value::Null),
        Value::Timestamp(us) => (*us, false),
        Value::Interval(iv) => {
            let f = canonical(unit).ok_or_else(|| unit_error(unit, "interval"))?;
            if f == "week" {
                return Err(
                    unit_error(unit, "interval").detail("Months usually have fractional weeks.")
                );
            }
            return crate::interval::trunc(f, *iv)
                .map(Value::Interval)
                .ok_or_else(|| unit_error(unit, "interval"));
        }
        _ => {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                "date_trunc takes a unit and a date or a timestamp",
            ))
        }
    };
    let wrap = |us: i64| if tz { Value::TimestampTz(us) } else { Value::Timestamp(us) };
    if us == TIMESTAMP_INFINITY || us == TIMESTAMP_NEG_INFINITY {
        return Ok(wrap(us));
    }
    let ty = if tz { "timestamp with time zone" } else { "timestamp without time zone" };
    let f = canonical(unit).ok_or_else(|| unit_error(unit, ty))?;
    let step = |n: i64| us.div_euclid(n) * n;
    let t = datetime(us).ok_or_else(out_of_range)?;
    let midnight = |d: NaiveDate| date_micros(days_of(d));
    let year_start = |y: i32| NaiveDate::from_ymd_opt(y, 1, 1).map(midnight);
    let cut = match f {
        "microseconds" => Some(us),
        "milliseconds" => Some(step(1_000)),
        "second" => Some(step(1_000_000)),
        "minute" => Some(step(60_000_000)),
        "hour" => Some(step(3_600_000_000)),
        "day" => Some(step(MICROS_PER_DAY)),
        "week" => {
            let d = t.date();
            Some(midnight(d) - d.weekday().num_days_from_monday() as i64 * MICROS_PER_DAY)
        }
        "month" => NaiveDate::from_ymd_opt(t.year(), t.month(), 1).map(midnight),
        "quarter" => {
            NaiveDate::from_ymd_opt(t.year(), (t.month() - 1) / 3 * 3 + 1, 1).map(midnight)
        }
        "year" => year_start(t.year()),
        "decade" => year_start(t.year().div_euclid(10) * 10),
        "century" => {
            let y = t.year();
            year_start(if y > 0 { (y - 1) / 100 * 100 + 1 } else { -((99 - y) / 100 * 100) + 1 })
        }
        "millennium" => {
            let y = t.year();
            year_start(if y > 0 {
                (y - 1) / 1000 * 1000 + 1
            } else {
                -((999 - y) / 1000 * 1000) + 1
            })
        }
        _ => return Err(unit_error(unit, ty)),
    };
    cut.map(wrap).ok_or_else(out_of_range)
}

fn days_of(d: NaiveDate) -> i32 {
    micros_date(d.and_hms_opt(0, 0, 0).map(|t| t.and_utc().timestamp_micros()).unwrap_or(i64::MIN))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::DataType;

    fn ts(s: &str) -> Value {
        Value::parse(s, DataType::Timestamp(None)).unwrap()
    }

    #[test]
    fn fields_of_a_timestamp() {
        let t = ts("2024-02-29 13:04:05.123456");
        let n =
            |f: &str| extract(f, &t, false, Zone::UTC).unwrap().to_text(DataType::Text).unwrap();
        assert_eq!(n("year"), "2024");
        assert_eq!(n("quarter"), "1");
        assert_eq!(n("doy"), "60");
        assert_eq!(n("dow"), "4");
        assert_eq!(n("isodow"), "4");
        assert_eq!(n("week"), "9");
        assert_eq!(n("second"), "5.123456");
        assert_eq!(n("milliseconds"), "5123.456");
        assert_eq!(n("microseconds"), "5123456");
        assert_eq!(n("century"), "21");
        assert_eq!(n("millennium"), "3");
        assert_eq!(n("decade"), "202");
        assert_eq!(n("epoch"), "1709211845.123456");
        assert!(extract("timezone", &t, false, Zone::UTC).is_err());
        assert!(extract("fortnight", &t, false, Zone::UTC).is_err());
    }

    #[test]
    fn truncation() {
        let t = ts("2024-05-17 13:04:05.5");
        let cut = |u: &str| {
            date_trunc(u, &t, Zone::UTC).unwrap().to_text(DataType::Timestamp(None)).unwrap()
        };
        assert_eq!(cut("second"), "2024-05-17 13:04:05");
        assert_eq!(cut("hour"), "2024-05-17 13:00:00");
        assert_eq!(cut("day"), "2024-05-17 00:00:00");
        assert_eq!(cut("week"), "2024-05-13 00:00:00");
        assert_eq!(cut("month"), "2024-05-01 00:00:00");
        assert_eq!(cut("quarter"), "2024-04-01 00:00:00");
        assert_eq!(cut("year"), "2024-01-01 00:00:00");
        assert_eq!(cut("decade"), "2020-01-01 00:00:00");
        assert_eq!(cut("century"), "2001-01-01 00:00:00");
        assert_eq!(cut("millennium"), "2001-01-01 00:00:00");
        let before = ts("1969-12-31 23:59:59.5");
        let s = date_trunc("second", &before, Zone::UTC)
            .unwrap()
            .to_text(DataType::Timestamp(None))
            .unwrap();
        assert_eq!(s, "1969-12-31 23:59:59");
    }
}
