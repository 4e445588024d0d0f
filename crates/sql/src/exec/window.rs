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

/// The most values the results of one window aggregate may hold between them (an
/// array_agg over a growing frame repeats every earlier value in each row's result).
const WINDOW_VALUES_MAX: usize = 16 << 20;

/// One end of a frame, its offset evaluated.
enum Edge {
    UnboundedPreceding,
    /// ROWS and GROUPS: a count; RANGE: a distance in the ORDER BY key's terms.
    Preceding(Value),
    CurrentRow,
    Following(Value),
    UnboundedFollowing,
}

/// Evaluates a bound's offset: not NULL, not negative.
fn edge(b: &FrameBound, units: FrameUnits, start: bool, ctx: &Ctx) -> Result<Edge> {
    let (x, preceding) = match b {
        FrameBound::UnboundedPreceding => return Ok(Edge::UnboundedPreceding),
        FrameBound::CurrentRow => return Ok(Edge::CurrentRow),
        FrameBound::UnboundedFollowing => return Ok(Edge::UnboundedFollowing),
        FrameBound::Preceding(x) => (x, true),
        FrameBound::Following(x) => (x, false),
    };
    let which = if start { "starting" } else { "ending" };
    let v = x.eval(&[], ctx)?;
    let negative = match &v {
        Value::Null => {
            return Err(SqlError::new("22004", format!("frame {which} offset must not be null")))
        }
        Value::Int(k) => *k < 0,
        Value::Numeric(d) => d.is_negative(),
        Value::Float(f) => *f < 0.0 || f.is_nan(),
        Value::Interval(iv) => iv.span() < 0,
        _ => false,
    };
    if negative {
        return Err(if units == FrameUnits::Range {
            SqlError::new("22013", "invalid preceding or following size in window function")
        } else {
            SqlError::new("22013", format!("frame {which} offset must not be negative"))
        });
    }
    Ok(if preceding { Edge::Preceding(v) } else { Edge::Following(v) })
}

/// Where `key ± offset` falls among the values of the key's type.
enum Target {
    /// Below every value (the arithmetic went below the type's range).
    Below,
    At(Value),
    /// Above every value.
    Above,
}

impl Target {
    /// How `x` compares with the target.
    fn cmp(&self, x: &Value) -> Ordering {
        match self {
            Target::Below => Ordering::Greater,
            Target::At(t) => x.total_cmp(t),
            Target::Above => Ordering::Less,
        }
    }
}

/// `key + offset` (`add`) or `key - offset`, for a RANGE offset bound; a result past the
/// type's range is below or above every value, as PostgreSQL's in_range functions treat it.
fn range_target(key: &Value, offset: &Value, add: bool, ctx: &Ctx) -> Target {
    let past = if add { Target::Above } else { Target::Below };
    match (key, offset) {
        (Value::Int(a), Value::Int(k)) => {
            let r = if add { *a as i128 + *k as i128 } else { *a as i128 - *k as i128 };
            i64::try_from(r).map(|r| Target::At(Value::Int(r))).unwrap_or(past)
        }
        (Value::Float(a), Value::Float(k)) => {
            let r = if add { a + k } else { a - k };
            // An infinite key less an infinite offset (+inf - inf, -inf + inf): PostgreSQL
            // takes every row to lie within the bound, as though the arithmetic ran past
            // the end.
            if r.is_nan() && !a.is_nan() {
                past
            } else {
                Target::At(Value::Float(r))
            }
        }
        (Value::Time(a), Value::Interval(k)) => {
            // time ± interval without wrapping around midnight (the interval's time part).
            let r = if add { a.checked_add(k.micros) } else { a.checked_sub(k.micros) };
            r.map(|r| Target::At(Value::Time(r))).unwrap_or(past)
        }
        (key, offset) => {
            let op = if add { BinOp::Add } else { BinOp::Sub };
            match binary(op, key.clone(), offset.clone(), ctx.env.style()) {
                Ok(v) => Target::At(v),
                Err(_) => past,
            }
        }
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
    let (units, fs, fe) = &w.frame;
    let edges = (edge(fs, *units, true, ctx)?, edge(fe, *units, false, ctx)?);
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
    let mut budget = WINDOW_VALUES_MAX;
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && cmp_keys(&keyed[idx[start]].0, &keyed[idx[end]].0, &[]) == Ordering::Equal
        {
            end += 1;
        }
        let part = Partition { w, part: &idx[start..end], keyed: &keyed, edges: &edges };
        part.compute(&mut out, &mut budget, ctx, limits)?;
        start = end;
    }
    Ok(out)
}

type Keyed = (Vec<Value>, Vec<Value>, Vec<Value>);

/// One partition of a window call: `part` holds row indexes in window order.
struct Partition<'p> {
    w: &'p WindowCall,
    part: &'p [usize],
    keyed: &'p [Keyed],
    edges: &'p (Edge, Edge),
}

impl Partition<'_> {
    fn compute(
        &self,
        out: &mut [Value],
        budget: &mut usize,
        ctx: &Ctx,
        limits: &ExecLimits,
    ) -> Result<()> {
        let (w, part, keyed) = (self.w, self.part, self.keyed);
        let n = part.len();
        let peers = Peers::of(w, part, keyed);
        let (group_first, group_last) = (&peers.first, &peers.last);
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
        let frame = |p: usize, ctx: &Ctx| self.frame(p, &peers, ctx);
        let mut dense = 0i64;
        let mut running: Option<(crate::exec::select::Acc, i64)> = None;
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
                    let (lo, hi) = frame(p, ctx);
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
                WindowFunc::Agg { func, ty, finish } => {
                    use crate::exec::select::Acc;
                    let (lo, hi) = frame(p, ctx);
                    let value =
                        |q: usize| if w.args.is_empty() { Value::Bool(true) } else { arg(q, 0) };
                    let add = |acc: &mut Acc, q: usize| -> Result<()> {
                        if q % 4096 == 4095 {
                            limits.check()?;
                        }
                        let v = value(q);
                        if v.is_null() {
                            return Ok(());
                        }
                        acc.add(func, v, ctx)
                    };
                    // A frame that starts at the partition's first row and never ends
                    // earlier than the previous row's extends that row's accumulator.
                    let reuse = matches!(self.edges.0, Edge::UnboundedPreceding)
                        && running.as_ref().is_some_and(|(_, done)| *done <= hi);
                    let (mut acc, mut done) = match running.take() {
                        Some(r) if reuse => r,
                        _ => (Acc::new(func), lo - 1),
                    };
                    while done < hi {
                        done += 1;
                        add(&mut acc, done as usize)?;
                    }
                    if let Acc::Collect(items) = &acc {
                        *budget = budget.checked_sub(items.len()).ok_or_else(|| {
                            SqlError::new(
                                code::PROGRAM_LIMIT,
                                "window function results too large",
                            )
                            .detail(format!(
                                "The results of one window aggregate may hold at most {WINDOW_VALUES_MAX} values between them."
                            ))
                        })?;
                    }
                    let value = acc.clone().finish(func, false, *ty, limits, ctx)?;
                    if matches!(self.edges.0, Edge::UnboundedPreceding) {
                        running = Some((acc, done));
                    }
                    match finish {
                        Some(f) => f.eval(&[value], ctx)?,
                        None => value,
                    }
                }
            };
            out[part[p]] = v;
        }
        Ok(())
    }

    /// The frame of position `p`: [lo, hi] (empty when lo > hi).
    fn frame(&self, p: usize, peers: &Peers, ctx: &Ctx) -> (i64, i64) {
        let n = self.part.len() as i64;
        let units = self.w.frame.0;
        let count = |k: &Value| match k {
            Value::Int(k) => *k,
            _ => 0,
        };
        // GROUPS: the group `k` groups before or after position `p`'s (None: past the ends).
        let group_at = |k: i64| -> Option<(usize, usize)> {
            let target = (peers.of[p] as i64).checked_add(k)?;
            usize::try_from(target).ok().and_then(|t| peers.groups.get(t).copied())
        };
        let lo = match &self.edges.0 {
            Edge::UnboundedPreceding => 0,
            Edge::UnboundedFollowing => n,
            Edge::CurrentRow if units == FrameUnits::Rows => p as i64,
            Edge::CurrentRow => peers.first[p] as i64,
            Edge::Preceding(k) | Edge::Following(k) => {
                let preceding = matches!(self.edges.0, Edge::Preceding(_));
                match units {
                    FrameUnits::Rows if preceding => p as i64 - count(k),
                    FrameUnits::Rows => (p as i64).saturating_add(count(k)),
                    FrameUnits::Groups if preceding => {
                        group_at(-count(k)).map_or(0, |(first, _)| first as i64)
                    }
                    FrameUnits::Groups => group_at(count(k)).map_or(n, |(first, _)| first as i64),
                    FrameUnits::Range => self.range_edge(p, peers, k, preceding, true, ctx),
                }
            }
        };
        let hi = match &self.edges.1 {
            Edge::UnboundedFollowing => n - 1,
            Edge::UnboundedPreceding => -1,
            Edge::CurrentRow if units == FrameUnits::Rows => p as i64,
            Edge::CurrentRow => peers.last[p] as i64,
            Edge::Preceding(k) | Edge::Following(k) => {
                let preceding = matches!(self.edges.1, Edge::Preceding(_));
                match units {
                    FrameUnits::Rows if preceding => p as i64 - count(k),
                    FrameUnits::Rows => (p as i64).saturating_add(count(k)),
                    FrameUnits::Groups if preceding => {
                        group_at(-count(k)).map_or(-1, |(_, last)| last as i64)
                    }
                    FrameUnits::Groups => group_at(count(k)).map_or(n - 1, |(_, last)| last as i64),
                    FrameUnits::Range => self.range_edge(p, peers, k, preceding, false, ctx),
                }
            }
        };
        (lo.max(0), hi.min(n - 1))
    }

    /// A RANGE offset bound of position `p`: the first position (for a frame's start) or
    /// the last (for its end) whose ORDER BY key lies within `offset` of p's, on the side
    /// the bound names. A NULL key's frame edge is its peers (the other NULLs); a
    /// non-NULL key's offset bound never takes a NULL.
    fn range_edge(
        &self,
        p: usize,
        peers: &Peers,
        offset: &Value,
        preceding: bool,
        start: bool,
        ctx: &Ctx,
    ) -> i64 {
        let key = |q: usize| self.keyed[self.part[q]].1.first().unwrap_or(&Value::Null);
        let v = key(p);
        if v.is_null() {
            return if start { peers.first[p] as i64 } else { peers.last[p] as i64 };
        }
        let desc = self.w.directions.first().is_some_and(|d| d.0);
        // Preceding values are smaller in ascending order, larger in descending order.
        let target = range_target(v, offset, preceding == desc, ctx);
        let (a, b) = peers.non_null;
        // How a key compares with the target when it comes after it in window order.
        let ahead = if desc { Ordering::Less } else { Ordering::Greater };
        // Positions come in window order: those before the target, then those at it, then
        // those after it. A start is the first not before it; an end, the last not after.
        let edge = if start {
            partition_point(a, b, |q| target.cmp(key(q)) == ahead.reverse())
        } else {
            partition_point(a, b, |q| target.cmp(key(q)) != ahead)
        } as i64;
        if start {
            edge
        } else {
            edge - 1
        }
    }
}

/// The first position in [a, b) where `pred` stops holding (it holds for a prefix).
fn partition_point(mut a: usize, mut b: usize, pred: impl Fn(usize) -> bool) -> usize {
    while a < b {
        let mid = a + (b - a) / 2;
        if pred(mid) {
            a = mid + 1;
        } else {
            b = mid;
        }
    }
    a
}

/// A partition's peer groups (rows equal in the ORDER BY keys).
struct Peers {
    /// Per position: the first and last position of its group, and the group's number.
    first: Vec<usize>,
    last: Vec<usize>,
    of: Vec<usize>,
    /// Per group: its first and last position.
    groups: Vec<(usize, usize)>,
    /// The positions [a, b) whose first ORDER BY key is not NULL (NULLs sort to one end).
    non_null: (usize, usize),
}

impl Peers {
    fn of(w: &WindowCall, part: &[usize], keyed: &[Keyed]) -> Peers {
        let n = part.len();
        let same = |a: usize, b: usize| {
            cmp_keys(&keyed[part[a]].1, &keyed[part[b]].1, &w.directions) == Ordering::Equal
        };
        let mut peers = Peers {
            first: vec![0; n],
            last: vec![0; n],
            of: vec![0; n],
            groups: Vec::new(),
            non_null: (0, n),
        };
        let mut g = 0;
        while g < n {
            let mut e = g + 1;
            while e < n && same(g, e) {
                e += 1;
            }
            for k in g..e {
                peers.first[k] = g;
                peers.last[k] = e - 1;
                peers.of[k] = peers.groups.len();
            }
            peers.groups.push((g, e - 1));
            g = e;
        }
        let null = |q: usize| keyed[part[q]].1.first().is_some_and(Value::is_null);
        let (mut a, mut b) = (0, n);
        while a < b && null(a) {
            a += 1;
        }
        while b > a && null(b - 1) {
            b -= 1;
        }
        peers.non_null = (a, b);
        peers
    }
}
