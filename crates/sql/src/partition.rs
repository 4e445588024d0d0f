//! Partition bounds: what rows a partition holds, which partition a row belongs to, and
//! whether two partitions' bounds overlap. The catalog keeps bounds as text
//! (`catalog::PartitionBound`); here they are read back as values of the key's types.
//!
//! A partitioned table (`PARTITION BY RANGE | LIST`) holds no rows of its own: reads of it
//! read its partitions (`bind::query`), and rows written to it are routed to the partition
//! whose bound holds their key (`exec::partitions`).

use std::cmp::Ordering;

use crate::catalog::{PartitionBound, PartitionStrategy, Partitioning, RangeDatum, Table};
use crate::error::{code, Result, SqlError};
use crate::style::Style;
use crate::types::{DataType, Value};

/// How many partitions one partitioned table may have.
pub const PARTITIONS_MAX: usize = 4096;

/// How deep partitions may be partitioned in turn.
pub const PARTITION_DEPTH_MAX: usize = 16;

/// One column's datum of a range bound, read back.
#[derive(Debug, Clone, PartialEq)]
pub enum Datum {
    Min,
    Value(Value),
    Max,
}

/// A partition's bound, read back as values of the key's types.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    Range { from: Vec<Datum>, to: Vec<Datum> },
    List(Vec<Value>),
    Default,
}

/// The types of `parent`'s key columns.
pub fn key_types(parent: &Table, p: &Partitioning) -> Vec<DataType> {
    p.key.iter().map(|&c| parent.columns[c].ty).collect()
}

/// Reads a stored bound back with the key's `types`.
pub fn decode(bound: &PartitionBound, types: &[DataType]) -> Result<Bound> {
    let value = |text: &str, ty: DataType| {
        Value::parse(text, ty).map_err(|e| {
            SqlError::new(
                code::DATA_CORRUPTED,
                format!("stored partition bound {text} does not read as {}: {}", ty.sql_name(), e),
            )
        })
    };
    let range = |data: &[RangeDatum]| -> Result<Vec<Datum>> {
        data.iter()
            .zip(types)
            .map(|(d, &ty)| {
                Ok(match d {
                    RangeDatum::MinValue => Datum::Min,
                    RangeDatum::MaxValue => Datum::Max,
                    RangeDatum::Value(text) => Datum::Value(value(text, ty)?),
                })
            })
            .collect()
    };
    Ok(match bound {
        PartitionBound::Range { from, to } => Bound::Range { from: range(from)?, to: range(to)? },
        PartitionBound::List(values) => {
            let ty = types.first().copied().unwrap_or(DataType::Text);
            Bound::List(
                values
                    .iter()
                    .map(|v| match v {
                        Some(text) => value(text, ty),
                        None => Ok(Value::Null),
                    })
                    .collect::<Result<_>>()?,
            )
        }
        PartitionBound::Default => Bound::Default,
    })
}

/// Compares two range data of one column.
fn datum_cmp(a: &Datum, b: &Datum) -> Ordering {
    match (a, b) {
        (Datum::Min, Datum::Min) | (Datum::Max, Datum::Max) => Ordering::Equal,
        (Datum::Min, _) | (_, Datum::Max) => Ordering::Less,
        (_, Datum::Min) | (Datum::Max, _) => Ordering::Greater,
        (Datum::Value(x), Datum::Value(y)) => x.total_cmp(y),
    }
}

/// Compares two range bounds column by column; past a MINVALUE or MAXVALUE the later
/// columns do not matter (PostgreSQL's rule).
fn bound_cmp(a: &[Datum], b: &[Datum]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match datum_cmp(x, y) {
            Ordering::Equal if matches!(x, Datum::Min | Datum::Max) => return Ordering::Equal,
            Ordering::Equal => {}
            other => return other,
        }
    }
    Ordering::Equal
}

/// Compares a key to a range bound.
fn key_cmp(key: &[Value], bound: &[Datum]) -> Ordering {
    for (k, d) in key.iter().zip(bound) {
        let o = match d {
            Datum::Min => Ordering::Greater,
            Datum::Max => Ordering::Less,
            Datum::Value(v) => k.total_cmp(v),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

impl Bound {
    /// Whether this (non-default) bound holds `key`. A range holds no key with a NULL part;
    /// a list holds NULL when it lists it.
    pub fn holds(&self, key: &[Value]) -> bool {
        match self {
            Bound::Range { from, to } => {
                !key.iter().any(Value::is_null)
                    && key_cmp(key, from) != Ordering::Less
                    && key_cmp(key, to) == Ordering::Less
            }
            Bound::List(values) => {
                let k = &key[0];
                values.iter().any(|v| match (v, k) {
                    (Value::Null, Value::Null) => true,
                    (Value::Null, _) | (_, Value::Null) => false,
                    (v, k) => v.total_cmp(k) == Ordering::Equal,
                })
            }
            Bound::Default => false,
        }
    }

    /// Whether two bounds hold a key in common (a default partition overlaps none: it
    /// holds what the others do not).
    pub fn overlaps(&self, other: &Bound) -> bool {
        match (self, other) {
            (Bound::Range { from: f1, to: t1 }, Bound::Range { from: f2, to: t2 }) => {
                bound_cmp(f1, t2) == Ordering::Less && bound_cmp(f2, t1) == Ordering::Less
            }
            (Bound::List(a), Bound::List(b)) => a.iter().any(|x| {
                b.iter().any(|y| match (x, y) {
                    (Value::Null, Value::Null) => true,
                    (Value::Null, _) | (_, Value::Null) => false,
                    (x, y) => x.total_cmp(y) == Ordering::Equal,
                })
            }),
            _ => false,
        }
    }

    /// Whether a range bound holds nothing (its lower bound is not below its upper).
    pub fn is_empty_range(&self) -> bool {
        matches!(self, Bound::Range { from, to } if bound_cmp(from, to) != Ordering::Less)
    }
}

impl Bound {
    /// Orders partitions as PostgreSQL lists and scans them: ranges by their lower bound,
    /// lists by their least value (a list of NULL alone after them), the default last.
    pub fn order(&self, other: &Bound) -> Ordering {
        let rank = |b: &Bound| match b {
            Bound::Range { .. } | Bound::List(_) if !b.list_only_null() => 0,
            Bound::Default => 2,
            _ => 1,
        };
        match (self, other) {
            (Bound::Range { from: a, .. }, Bound::Range { from: b, .. }) => bound_cmp(a, b),
            (Bound::List(a), Bound::List(b)) if rank(self) == 0 && rank(other) == 0 => {
                let least = |l: &[Value]| {
                    l.iter().filter(|v| !v.is_null()).min_by(|x, y| x.total_cmp(y)).cloned()
                };
                match (least(a), least(b)) {
                    (Some(x), Some(y)) => x.total_cmp(&y),
                    _ => Ordering::Equal,
                }
            }
            _ => rank(self).cmp(&rank(other)),
        }
    }

    fn list_only_null(&self) -> bool {
        matches!(self, Bound::List(l) if l.iter().all(Value::is_null))
    }
}

/// The key of `row` (a row of the partitioned table `parent`).
pub fn key_of(p: &Partitioning, row: &[Value]) -> Vec<Value> {
    p.key.iter().map(|&c| row[c].clone()).collect()
}

/// A constant as PostgreSQL's deparser writes it, and whether a type label must follow it
/// to give its type: a non-negative integer or decimal number and a boolean bare, anything
/// else quoted.
fn deparsed(v: &Value, ty: DataType, style: Style) -> (String, bool) {
    let Some(text) = v.to_text_in(ty, style) else { return ("NULL".into(), false) };
    match (v, ty) {
        (Value::Bool(b), _) => (b.to_string(), false),
        (_, DataType::Int4) if !text.starts_with('-') => (text, false),
        (_, DataType::Numeric(_))
            if !text.starts_with('-') && text.contains(['.', 'e', 'E']) && text != "NaN" =>
        {
            (text, false)
        }
        _ => (format!("'{}'", text.replace('\'', "''")), true),
    }
}

/// A value of a bound as PostgreSQL shows it in `pg_get_expr(relpartbound, …)`.
fn shown_value(v: &Value, ty: DataType, style: Style) -> String {
    deparsed(v, ty, style).0
}

/// The text of a stored bound as PostgreSQL shows it (`FOR VALUES FROM (…) TO (…)`,
/// `FOR VALUES IN (…)`, `DEFAULT`), its values in the session's `style`.
pub fn shown(bound: &PartitionBound, types: &[DataType], style: Style) -> String {
    let Ok(decoded) = decode(bound, types) else { return "?".into() };
    let datum = |d: &Datum, ty: DataType| match d {
        Datum::Min => "MINVALUE".to_string(),
        Datum::Max => "MAXVALUE".to_string(),
        Datum::Value(v) => shown_value(v, ty, style),
    };
    let list = |data: &[Datum]| {
        data.iter().zip(types).map(|(d, &ty)| datum(d, ty)).collect::<Vec<_>>().join(", ")
    };
    match &decoded {
        Bound::Range { from, to } => format!("FOR VALUES FROM ({}) TO ({})", list(from), list(to)),
        Bound::List(values) => {
            let ty = types.first().copied().unwrap_or(DataType::Text);
            let shown: Vec<String> = values.iter().map(|v| shown_value(v, ty, style)).collect();
            format!("FOR VALUES IN ({})", shown.join(", "))
        }
        Bound::Default => "DEFAULT".into(),
    }
}

/// The key as PostgreSQL shows it (`pg_get_partkeydef`): `RANGE (a, b)`, `LIST (c)`.
pub fn shown_key(table: &Table, p: &Partitioning) -> String {
    let strategy = match p.strategy {
        PartitionStrategy::Range => "RANGE",
        PartitionStrategy::List => "LIST",
    };
    let columns: Vec<String> =
        p.key.iter().map(|&c| crate::bind::quote_ident(&table.columns[c].name)).collect();
    format!("{strategy} ({})", columns.join(", "))
}

/// The partition constraint of a bound as PostgreSQL shows it
/// (`pg_get_partition_constraintdef`), over the key `columns`; `None` for a default
/// partition (whose constraint is the negation of its siblings', not shown here).
pub fn constraint_text(
    bound: &PartitionBound,
    columns: &[(String, DataType)],
    style: Style,
) -> Option<String> {
    let types: Vec<DataType> = columns.iter().map(|(_, t)| *t).collect();
    let decoded = decode(bound, &types).ok()?;
    let col = |i: usize| crate::bind::quote_ident(&columns[i].0);
    let typed = |v: &Value, i: usize| {
        let ty = columns[i].1;
        match deparsed(v, ty, style) {
            (text, true) => format!("{text}::{}", ty.sql_name()),
            (text, false) => text,
        }
    };
    match decoded {
        Bound::Default => None,
        Bound::List(values) => {
            let has_null = values.iter().any(Value::is_null);
            let listed: Vec<String> =
                values.iter().filter(|v| !v.is_null()).map(|v| typed(v, 0)).collect();
            let c = col(0);
            let inside = match listed.as_slice() {
                [] => None,
                [one] => Some(format!("({c} = {one})")),
                _ => Some(format!("({c} = ANY (ARRAY[{}]))", listed.join(", "))),
            };
            Some(match (inside, has_null) {
                (Some(i), false) => format!("(({c} IS NOT NULL) AND {i})"),
                (Some(i), true) => format!("(({c} IS NULL) OR {i})"),
                (None, _) => format!("({c} IS NULL)"),
            })
        }
        Bound::Range { from, to } => {
            let mut parts: Vec<String> =
                (0..columns.len()).map(|i| format!("({} IS NOT NULL)", col(i))).collect();
            // (c1, c2, …) compared with the bound's values, up to its first MINVALUE or
            // MAXVALUE: the first column that differs decides.
            let side = |data: &[Datum], strict: &str, last: &str| -> Option<String> {
                let n = data.iter().take_while(|d| matches!(d, Datum::Value(_))).count();
                if n == 0 {
                    return None;
                }
                let values: Vec<&Value> = data[..n]
                    .iter()
                    .map(|d| match d {
                        Datum::Value(v) => v,
                        _ => unreachable!("counted values only"),
                    })
                    .collect();
                let exact = n == data.len();
                // Each alternative: its comparisons (a prefix equal, then one compared).
                let mut alternatives: Vec<Vec<String>> = Vec::new();
                for i in 0..n {
                    let mut terms: Vec<String> =
                        (0..i).map(|j| format!("({} = {})", col(j), typed(values[j], j))).collect();
                    let op = if i + 1 == n && exact { last } else { strict };
                    terms.push(format!("({} {op} {})", col(i), typed(values[i], i)));
                    alternatives.push(terms);
                }
                // Past the values, a MINVALUE lower bound holds every rest (equal prefix
                // included); a MAXVALUE upper bound likewise.
                if !exact {
                    let equal: Vec<String> =
                        (0..n).map(|j| format!("({} = {})", col(j), typed(values[j], j))).collect();
                    let rest_included = matches!(data[n], Datum::Min) == (last == ">=");
                    if rest_included {
                        alternatives.push(equal);
                    }
                }
                // A single comparison stands alone; several are one parenthesized AND.
                let shown: Vec<String> = alternatives
                    .iter()
                    .map(|a| match a.as_slice() {
                        [one] => one.clone(),
                        many => format!("({})", many.join(" AND ")),
                    })
                    .collect();
                Some(match shown.as_slice() {
                    [one] => one.clone(),
                    _ => format!("({})", shown.join(" OR ")),
                })
            };
            parts.extend(side(&from, ">", ">="));
            parts.extend(side(&to, "<", "<"));
            Some(format!("({})", parts.join(" AND ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(from: i64, to: i64) -> Bound {
        Bound::Range {
            from: vec![Datum::Value(Value::Int(from))],
            to: vec![Datum::Value(Value::Int(to))],
        }
    }

    #[test]
    fn ranges_hold_their_lower_bound_not_their_upper() {
        let b = range(10, 20);
        assert!(b.holds(&[Value::Int(10)]));
        assert!(b.holds(&[Value::Int(19)]));
        assert!(!b.holds(&[Value::Int(20)]));
        assert!(!b.holds(&[Value::Int(9)]));
        assert!(!b.holds(&[Value::Null]));
    }

    #[test]
    fn adjacent_ranges_do_not_overlap() {
        assert!(!range(0, 10).overlaps(&range(10, 20)));
        assert!(range(0, 11).overlaps(&range(10, 20)));
        assert!(range(5, 6).overlaps(&range(0, 20)));
        assert!(range(10, 10).is_empty_range());
        assert!(range(11, 10).is_empty_range());
    }

    #[test]
    fn min_and_max_values_end_the_comparison() {
        let b = Bound::Range {
            from: vec![Datum::Value(Value::Int(1)), Datum::Min],
            to: vec![Datum::Value(Value::Int(1)), Datum::Max],
        };
        assert!(b.holds(&[Value::Int(1), Value::Int(-5)]));
        assert!(b.holds(&[Value::Int(1), Value::Int(i64::MAX)]));
        assert!(!b.holds(&[Value::Int(2), Value::Int(0)]));
        let all = Bound::Range { from: vec![Datum::Min], to: vec![Datum::Max] };
        assert!(all.holds(&[Value::Int(i64::MIN)]));
        assert!(all.overlaps(&range(0, 1)));
    }

    #[test]
    fn lists_match_values_and_null() {
        let b = Bound::List(vec![Value::Int(1), Value::Null]);
        assert!(b.holds(&[Value::Int(1)]));
        assert!(b.holds(&[Value::Null]));
        assert!(!b.holds(&[Value::Int(2)]));
        assert!(b.overlaps(&Bound::List(vec![Value::Null])));
        assert!(!b.overlaps(&Bound::List(vec![Value::Int(3)])));
        assert!(!Bound::Default.holds(&[Value::Int(1)]));
    }
}
