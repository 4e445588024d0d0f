//! Dates and times built from their parts or from a count of seconds: `make_date`,
//! `make_time`, `make_timestamp`, `make_timestamptz`, `to_timestamp(seconds)`, and the wall
//! clock `clock_timestamp()`, and `to_date`/`to_timestamp` of text read by a template
//! (`from_char`) — with PostgreSQL's rules for years before 1 (negative years
//! are BC: `make_date(-44, 3, 15)` is 0044-03-15 BC) and its errors for fields out of range.

use chrono::NaiveDate;

use crate::error::{Result, SqlError};
use crate::types::{
    Value, MICROS_PER_DAY, TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY, UNIX_EPOCH_DATE,
};
use crate::zone::Zone;

/// A date/time constructor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeFunc {
    /// make_date(year, month, day)
    MakeDate,
    /// make_time(hour, min, sec)
    MakeTime,
    /// make_timestamp(year, month, day, hour, min, sec)
    MakeTimestamp,
    /// make_timestamptz(year, month, day, hour, min, sec [, zone])
    MakeTimestampTz,
    /// to_timestamp(seconds since 1970-01-01 00:00 UTC)
    ToTimestamp,
    /// clock_timestamp(): the time now, changing during a statement
    ClockTimestamp,
    /// to_date(text, template)
    ToDate,
    /// to_timestamp(text, template)
    ToTimestampText,
    /// date_bin(stride, source, origin), of timestamps with or without time zone
    DateBin,
}

const MICROS_PER_SECOND: f64 = 1e6;

fn field_error(kind: &str, shown: String) -> SqlError {
    SqlError::new("22008", format!("{kind} field value out of range: {shown}"))
}

fn int(args: &[Value], i: usize) -> i64 {
    match args.get(i) {
        Some(Value::Int(n)) => *n,
        _ => 0,
    }
}

fn float(args: &[Value], i: usize) -> f64 {
    match args.get(i) {
        Some(Value::Float(f)) => *f,
        Some(Value::Int(n)) => *n as f64,
        Some(Value::Numeric(d)) => d.to_f64().unwrap_or(f64::NAN),
        _ => 0.0,
    }
}

/// Seconds as C's `%02g` writes them in PostgreSQL's messages.
fn seconds_text(sec: f64) -> String {
    let s = if sec.fract() == 0.0 && sec.abs() < 1e15 {
        format!("{}", sec as i64)
    } else {
        crate::types::format_float(sec, false)
    };
    format!("{s:0>2}")
}

/// Days since 1970-01-01 of year/month/day (a negative year is BC, there is no year 0).
fn days(year: i64, month: i64, day: i64) -> Result<i64> {
    // PostgreSQL names the proleptic year (-43 for 44 BC).
    let shown = || format!("{}-{month:02}-{day:02}", if year < 0 { year + 1 } else { year });
    if year == 0 {
        return Err(field_error("date", shown()));
    }
    // 1 BC is chrono's year 0.
    let proleptic = if year < 0 { year + 1 } else { year };
    let date = i32::try_from(proleptic)
        .ok()
        .zip(u32::try_from(month).ok())
        .zip(u32::try_from(day).ok())
        .and_then(|((y, m), d)| NaiveDate::from_ymd_opt(y, m, d))
        .ok_or_else(|| field_error("date", shown()))?;
    Ok((date - UNIX_EPOCH_DATE).num_days())
}

/// Microseconds since midnight of hour/min/sec (24:00:00 is the end of the day, as in
/// PostgreSQL).
fn time_of_day(hour: i64, min: i64, sec: f64) -> Result<i64> {
    let shown = || format!("{hour}:{min:02}:{}", seconds_text(sec));
    if !(0..=24).contains(&hour) || !(0..60).contains(&min) || !(0.0..=60.0).contains(&sec) {
        return Err(field_error("time", shown()));
    }
    let micros = hour * 3_600_000_000 + min * 60_000_000 + (sec * MICROS_PER_SECOND).round() as i64;
    if micros > MICROS_PER_DAY {
        return Err(field_error("time", shown()));
    }
    Ok(micros)
}

/// Evaluates `f` (its arguments never NULL: the functions are strict); `now` is the wall
/// clock in microseconds since the epoch, `zone` the session's time zone.
pub fn eval(f: TimeFunc, args: &[Value], zone: Zone, now: i64) -> Result<Value> {
    Ok(match f {
        TimeFunc::DateBin => date_bin(args)?,
        TimeFunc::MakeDate => {
            let d = days(int(args, 0), int(args, 1), int(args, 2))?;
            Value::Date(crate::types::check_date(d)?)
        }
        TimeFunc::MakeTime => Value::Time(time_of_day(int(args, 0), int(args, 1), float(args, 2))?),
        TimeFunc::MakeTimestamp | TimeFunc::MakeTimestampTz => {
            let (year, month, day) = (int(args, 0), int(args, 1), int(args, 2));
            let (hour, min, sec) = (int(args, 3), int(args, 4), float(args, 5));
            let d = days(year, month, day)
                .map_err(|_| field_error("date", format!("{year}-{month:02}-{day:02}")))?;
            let t = time_of_day(hour, min, sec)?;
            let local = d
                .checked_mul(MICROS_PER_DAY)
                .and_then(|m| m.checked_add(t))
                .filter(|m| *m != TIMESTAMP_INFINITY && *m != TIMESTAMP_NEG_INFINITY)
                .ok_or_else(|| SqlError::new("22008", "timestamp out of range"))?;
            if f == TimeFunc::MakeTimestamp {
                Value::Timestamp(local)
            } else {
                let zone = match args.get(6) {
                    Some(z) => crate::expr::datetime::zone_arg(z)?,
                    None => zone,
                };
                Value::TimestampTz(zone.from_local(local))
            }
        }
        TimeFunc::ToTimestamp => {
            let secs = float(args, 0);
            if secs.is_nan() {
                return Err(SqlError::new("22008", "timestamp cannot be NaN"));
            }
            if secs.is_infinite() {
                return Ok(Value::TimestampTz(if secs > 0.0 {
                    TIMESTAMP_INFINITY
                } else {
                    TIMESTAMP_NEG_INFINITY
                }));
            }
            let micros = (secs * MICROS_PER_SECOND).round();
            // chrono's calendar bounds what Kiln can show.
            if !(-8.2e18..8.2e18).contains(&micros)
                || chrono::DateTime::from_timestamp_micros(micros as i64).is_none()
            {
                return Err(SqlError::new(
                    "22008",
                    format!(
                        "timestamp out of range: \"{}\"",
                        crate::types::format_float(secs, false)
                    ),
                ));
            }
            Value::TimestampTz(micros as i64)
        }
        TimeFunc::ClockTimestamp => Value::TimestampTz(now),
        TimeFunc::ToDate | TimeFunc::ToTimestampText => {
            let text = |i: usize| args.get(i).and_then(|v| v.to_text(crate::types::DataType::Text));
            match (text(0), text(1)) {
                (Some(input), Some(template)) if f == TimeFunc::ToDate => {
                    super::from_char::to_date(&input, &template)?
                }
                (Some(input), Some(template)) => {
                    super::from_char::to_timestamp(&input, &template, zone)?
                }
                _ => Value::Null,
            }
        }
    })
}

/// `date_bin(stride, source, origin)`: the start of the bin of `stride` (no months or
/// years) that holds `source`, bins counted from `origin` either way, as PostgreSQL bins
/// (an infinite source is its own bin).
fn date_bin(args: &[Value]) -> Result<Value> {
    let (Some(Value::Interval(stride)), Some(source), Some(origin)) =
        (args.first(), args.get(1), args.get(2))
    else {
        return Ok(Value::Null);
    };
    let micros = |v: &Value| match v {
        Value::Timestamp(t) | Value::TimestampTz(t) => Some(*t),
        _ => None,
    };
    let (Some(t), Some(o)) = (micros(source), micros(origin)) else {
        return Ok(Value::Null);
    };
    if stride.months != 0 {
        return Err(SqlError::new(
            crate::error::code::FEATURE_NOT_SUPPORTED,
            "timestamps cannot be binned into intervals containing months or years",
        ));
    }
    let stride = i64::from(stride.days)
        .checked_mul(MICROS_PER_DAY)
        .and_then(|d| d.checked_add(stride.micros))
        .ok_or_else(|| SqlError::new("22008", "interval out of range"))?;
    if stride <= 0 {
        return Err(SqlError::new("22008", "stride must be greater than zero"));
    }
    if t == TIMESTAMP_INFINITY || t == TIMESTAMP_NEG_INFINITY {
        return Ok(source.clone());
    }
    if o == TIMESTAMP_INFINITY || o == TIMESTAMP_NEG_INFINITY {
        return Err(SqlError::new("22008", "origin out of range"));
    }
    let out_of_range = || SqlError::new("22008", "timestamp out of range");
    let diff = t.checked_sub(o).ok_or_else(out_of_range)?;
    let mut delta = diff - diff % stride;
    // The start of the bin when the origin lies after the source.
    if diff < 0 && delta != diff {
        delta -= stride;
    }
    let bin = o.checked_add(delta).ok_or_else(out_of_range)?;
    Ok(match source {
        Value::TimestampTz(_) => Value::TimestampTz(bin),
        _ => Value::Timestamp(bin),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_from_parts() {
        let utc = Zone::Fixed(0);
        let d = |y, m, d| {
            eval(TimeFunc::MakeDate, &[Value::Int(y), Value::Int(m), Value::Int(d)], utc, 0)
        };
        assert_eq!(d(1970, 1, 2).unwrap(), Value::Date(1));
        assert_eq!(d(2024, 2, 29).unwrap(), Value::Date(19_782));
        assert_eq!(d(2023, 2, 29).unwrap_err().code, "22008");
        assert_eq!(d(0, 1, 1).unwrap_err().code, "22008");
        // 1 BC is the year before 1 AD.
        let bc = d(-1, 12, 31).unwrap();
        let ad = d(1, 1, 1).unwrap();
        assert!(matches!((bc, ad), (Value::Date(a), Value::Date(b)) if b - a == 1));
    }

    #[test]
    fn times_from_parts() {
        let utc = Zone::Fixed(0);
        let t = |h, m, s| {
            eval(TimeFunc::MakeTime, &[Value::Int(h), Value::Int(m), Value::Float(s)], utc, 0)
        };
        assert_eq!(t(1, 2, 3.5).unwrap(), Value::Time(3_723_500_000));
        assert_eq!(t(24, 0, 0.0).unwrap(), Value::Time(MICROS_PER_DAY));
        assert_eq!(t(24, 0, 1.0).unwrap_err().code, "22008");
        assert_eq!(t(-1, 0, 0.0).unwrap_err().code, "22008");
        assert_eq!(t(1, 60, 0.0).unwrap_err().code, "22008");
    }

    #[test]
    fn timestamps_from_seconds() {
        let utc = Zone::Fixed(0);
        let ts = |s: f64| eval(TimeFunc::ToTimestamp, &[Value::Float(s)], utc, 0);
        assert_eq!(ts(1.5).unwrap(), Value::TimestampTz(1_500_000));
        assert_eq!(ts(f64::INFINITY).unwrap(), Value::TimestampTz(TIMESTAMP_INFINITY));
        assert_eq!(ts(f64::NAN).unwrap_err().code, "22008");
        assert_eq!(ts(1e300).unwrap_err().code, "22008");
        let zoned = eval(
            TimeFunc::MakeTimestampTz,
            &[1970, 1, 1, 1, 0]
                .map(Value::Int)
                .into_iter()
                .chain([Value::Float(0.0)])
                .collect::<Vec<_>>(),
            Zone::Fixed(3600),
            0,
        );
        assert_eq!(zoned.unwrap(), Value::TimestampTz(0));
    }
}
