//! The window stage: after grouping and HAVING, before the projection, each window call of
//! the plan is computed over the rows and appended to every row as a column.
//!
//! Rows are sorted by (partition keys, order keys) once per call; within a partition,
//! ranking functions follow the peer groups (rows equal in the order keys), offsets read
//! neighbours, and aggregates run over each row's frame — incrementally when the frame
//! starts at the partition's first row (the common running total), else over the frame's
//! rows, with an interrupt check per row.

use std::cmp::Ordering;

use crate::error::{code, Result, SqlError};
use crate::exec::scan::ExecLimits;
use crate::expr::*;
use crate::types::{DataType, Value};

/// Compares two key lists with per-key directions (descending, nulls first).
fn cmp_keys(a: &[Value], b: &[Value], dirs: &[(bool, bool)]) -> Ordering {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let (desc, nulls_first) = dirs.get(i).copied().unwrap_or((false, false));
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => {
                if nulls_first {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (false, true) => {
                if nulls_first {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            _ if desc => x.total_cmp(y).reverse(),
            _ => x.total_cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// A running aggregate over a frame.
struct Acc {
    func: AggFunc,
    count: i64,
    value: Option<Value>,
}

impl Acc {
    fn new(func: &AggFunc) -> Acc {
        Acc { func: func.clone(), count: 0, value: None }
    }

    fn add(&mut self, v: &Value) -> Result<()> {
        if v.is_null() {
            return Ok(());
        }
        self.count += 1;
        self.value = Some(match (self.value.take(), &self.func) {
            (None, AggFunc::Sum | AggFunc::Avg) => crate::exec::select::widen(v.clone()),
            (None, _) => v.clone(),
            (Some(s), AggFunc::Sum | AggFunc::Avg) => binary(
                BinOp::Add,
                s,
                crate::exec::select::widen(v.clone()),
                crate::exec::select::NUMBERS,
            )?,
            (Some(m), AggFunc::Min) => {
                if v.total_cmp(&m) == Ordering::Less {
                    v.clone()
                } else {
                    m
                }
            }
            (Some(m), AggFunc::Max) => {
                if v.total_cmp(&m) == Ordering::Greater {
                    v.clone()
                } else {
                    m
                }
            }
            (Some(b), AggFunc::BoolAnd) => {
                Value::Bool(b.as_bool()? == Some(true) && v.as_bool()? == Some(true))
            }
            (Some(b), AggFunc::BoolOr) => {
                Value::Bool(b.as_bool()? == Some(true) || v.as_bool()? == Some(true))
            }
            (Some(s), _) => s,
        });
        Ok(())
    }

    fn result(&self, ty: DataType) -> Result<Value> {
        Ok(match (&self.func, &self.value) {
            (AggFunc::Count, _) => Value::Int(self.count),
            (_, None) => Value::Null,
            (AggFunc::Avg, Some(Value::Float(f))) => Value::Float(f / self.count as f64),
            (AggFunc::Avg, Some(Value::Interval(iv))) => {
                Value::Interval(iv.checked_div(self.count as f64)?)
            }
            (AggFunc::Avg, Some(s)) => binary(
                BinOp::Div,
                s.clone().cast(DataType::Numeric(None))?,
                Value::Numeric(rust_decimal::Decimal::from(self.count)),
                crate::exec::select::NUMBERS,
            )?,
            (AggFunc::Sum, Some(s)) => s.clone().cast(ty)?,
            (_, Some(v)) => v.clone(),
        })
    }
}

/// Appends one column per window call to every row.
pub(crate) fn compute_windows(
    windows: &[WindowCall],
    rows: &mut [Vec<Value>],
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<()> {
    let mut results: Vec<Vec<Value>> = Vec::with_capacity(windows.len());
    for w in windows {
        results.push(window_values(w, rows, ctx, limits)?);
    }
    for (i, row) in rows.iter_mut().enumerate() {
        for r in &mut results {
            row.push(std::mem::replace(&mut r[i], Value::Null));
        }
    }
    Ok(())
}

/// The value of one window call for each row, in row order.
fn window_values(
    w: &WindowCall,
    rows: &[Vec<Value>],
    ctx: &Ctx,
    limits: &ExecLimits,
) -> Result<Vec<Value>> {
    let n = rows.len();
    // Per row: partition keys, order keys, arguments.
    let mut keyed = Vec::with_capacity(n);
    for (i, r) in rows.iter().enumerate() {
        if i % 4096 == 0 {
            limits.check()?;
        }
        let eval = |es: &[Expr]| es.iter().map(|e| e.eval(r, ctx)).collect::<Result<Vec<_>>>();
        keyed.push((eval(&w.partition)?, eval(&w.order)?, eval(&w.args)?));
    }
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&a, &b| {
        cmp_keys(&keyed[a].0, &keyed[b].0, &[])
            .then_with(|| cmp_keys(&keyed[a].1, &keyed[b].1, &w.directions))
    });
    let mut out = vec![Value::Null; n];
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && cmp_keys(&keyed[idx[start]].0, &keyed[idx[end]].0, &[]) == Ordering::Equal
        {
            end += 1;
        }
        partition(w, &idx[start..end], &keyed, &mut out, limits)?;
        start = end;
    }
    Ok(out)
}

type Keyed = (Vec<Value>, Vec<Value>, Vec<Value>);

/// One partition (`part` holds row indexes in window order).
fn partition(
    w: &WindowCall,
    part: &[usize],
    keyed: &[Keyed],
    out: &mut [Value],
    limits: &ExecLimits,
) -> Result<()> {
    let n = part.len();
    let peers = |a: usize, b: usize| {
        cmp_keys(&keyed[part[a]].1, &keyed[part[b]].1, &w.directions) == Ordering::Equal
    };
    // Each position's peer group: [first, last], and its number; each group's bounds.
    let mut group_first = vec![0; n];
    let mut group_last = vec![0; n];
    let mut group_of = vec![0usize; n];
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut g = 0;
    while g < n {
        let mut e = g + 1;
        while e < n && peers(g, e) {
            e += 1;
        }
        for k in g..e {
            group_first[k] = g;
            group_last[k] = e - 1;
            group_of[k] = groups.len();
        }
        groups.push((g, e - 1));
        g = e;
    }
    let arg = |pos: usize, i: usize| keyed[part[pos]].2.get(i).cloned().unwrap_or(Value::Null);
    let int_arg = |pos: usize, i: usize, default: i64| -> Result<Option<i64>> {
        match keyed[part[pos]].2.get(i) {
            None => Ok(Some(default)),
            Some(Value::Null) => Ok(None),
            Some(Value::Int(v)) => Ok(Some(*v)),
            Some(v) => Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!(
                    "an integer argument, not {}",
                    v.to_text(DataType::Text).unwrap_or_default()
                ),
            )),
        }
    };
    // The frame of position `p`: [lo, hi] (empty when lo > hi).
    let (units, fs, fe) = w.frame;
    let rows_mode = units == FrameUnits::Rows;
    let offset = |k: u64| k.min(i64::MAX as u64) as i64;
    // GROUPS: the group `k` groups before or after position `p`'s (None: past the ends).
    let group_at = |p: usize, k: i64| -> Option<(usize, usize)> {
        let target = (group_of[p] as i64).checked_add(k)?;
        usize::try_from(target).ok().and_then(|t| groups.get(t).copied())
    };
    let frame = |p: usize| -> (i64, i64) {
        let lo = match fs {
            FrameBound::UnboundedPreceding => 0,
            FrameBound::Preceding(k) if units == FrameUnits::Groups => {
                group_at(p, -offset(k)).map_or(0, |(first, _)| first as i64)
            }
            FrameBound::Following(k) if units == FrameUnits::Groups => {
                group_at(p, offset(k)).map_or(n as i64, |(first, _)| first as i64)
            }
            FrameBound::Preceding(k) => p as i64 - offset(k),
            FrameBound::CurrentRow if rows_mode => p as i64,
            FrameBound::CurrentRow => group_first[p] as i64,
            FrameBound::Following(k) => (p as i64).saturating_add(offset(k)),
            FrameBound::UnboundedFollowing => n as i64,
        };
        let hi = match fe {
            FrameBound::UnboundedFollowing => n as i64 - 1,
            FrameBound::Following(k) if units == FrameUnits::Groups => {
                group_at(p, offset(k)).map_or(n as i64 - 1, |(_, last)| last as i64)
            }
            FrameBound::Preceding(k) if units == FrameUnits::Groups => {
                group_at(p, -offset(k)).map_or(-1, |(_, last)| last as i64)
            }
            FrameBound::Following(k) => (p as i64).saturating_add(offset(k)),
            FrameBound::CurrentRow if rows_mode => p as i64,
            FrameBound::CurrentRow => group_last[p] as i64,
            FrameBound::Preceding(k) => p as i64 - offset(k),
            FrameBound::UnboundedPreceding => -1,
        };
        (lo.max(0), hi.min(n as i64 - 1))
    };
    // Without ORDER BY every row is a peer of every other: the whole partition.
    let mut dense = 0i64;
    let mut running: Option<(Acc, i64)> = None;
    for p in 0..n {
        if p % 1024 == 1023 {
            limits.check()?;
        }
        let v = match &w.func {
            WindowFunc::RowNumber => Value::Int(p as i64 + 1),
            WindowFunc::Rank => Value::Int(group_first[p] as i64 + 1),
            WindowFunc::DenseRank => {
                if group_first[p] == p {
                    dense += 1;
                }
                Value::Int(dense)
            }
            WindowFunc::PercentRank => {
                Value::Float(if n > 1 { group_first[p] as f64 / (n - 1) as f64 } else { 0.0 })
            }
            WindowFunc::CumeDist => Value::Float((group_last[p] + 1) as f64 / n as f64),
            WindowFunc::Ntile => match int_arg(p, 0, 1)? {
                None => Value::Null,
                Some(b) if b <= 0 => {
                    return Err(SqlError::new(
                        "22014",
                        "argument of ntile must be greater than zero",
                    ))
                }
                Some(b) => {
                    let b = (b as usize).min(n.max(1));
                    let (size, extra) = (n / b, n % b);
                    // The first `extra` buckets hold one row more.
                    let big = extra * (size + 1);
                    let bucket =
                        if p < big { p / (size + 1) } else { extra + (p - big) / size.max(1) };
                    Value::Int(bucket as i64 + 1)
                }
            },
            WindowFunc::Lag | WindowFunc::Lead => match int_arg(p, 1, 1)? {
                None => Value::Null,
                Some(k) => {
                    let target =
                        if w.func == WindowFunc::Lag { p as i64 - k } else { p as i64 + k };
                    if (0..n as i64).contains(&target) {
                        arg(target as usize, 0)
                    } else {
                        arg(p, 2)
                    }
                }
            },
            WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue => {
                let (lo, hi) = frame(p);
                let pos = match w.func {
                    WindowFunc::FirstValue => Some(lo),
                    WindowFunc::LastValue => Some(hi),
                    _ => match int_arg(p, 1, 1)? {
                        None => None,
                        Some(k) if k <= 0 => {
                            return Err(SqlError::new(
                                "22016",
                                "argument of nth_value must be greater than zero",
                            ))
                        }
                        Some(k) => Some(lo.saturating_add(k - 1)),
                    },
                };
                match pos {
                    Some(q) if lo <= hi && q <= hi => arg(q as usize, 0),
                    _ => Value::Null,
                }
            }
            WindowFunc::Agg(f) => {
                let (lo, hi) = frame(p);
                let value =
                    |q: usize| if w.args.is_empty() { Value::Bool(true) } else { arg(q, 0) };
                if fs == FrameBound::UnboundedPreceding {
                    // Running: extend the previous row's accumulator to this frame's end.
                    let (mut acc, mut done) = running.take().unwrap_or((Acc::new(f), -1));
                    while done < hi {
                        done += 1;
                        acc.add(&value(done as usize))?;
                    }
                    let r = acc.result(w.ty)?;
                    running = Some((acc, done));
                    r
                } else {
                    let mut acc = Acc::new(f);
                    let mut q = lo;
                    while q <= hi {
                        acc.add(&value(q as usize))?;
                        q += 1;
                    }
                    acc.result(w.ty)?
                }
            }
        };
        out[part[p]] = v;
    }
    Ok(())
}
