//! `numeric`: exact decimal numbers with PostgreSQL's range, scales and rounding.
//!
//! A value is an integer and a display scale: `12.50` is 1250 at scale 2. Arithmetic keeps
//! scales as PostgreSQL does (a sum takes the larger scale, a product the sum of the scales,
//! a quotient at least 16 significant digits), rounds half away from zero, and bounds every
//! value as PostgreSQL bounds it: at most 131072 digits before the point and 16383 after.
//! Integers of up to 18 digits are held inline; larger ones as a [`BigInt`].
//!
//! The functions without exact results (square root, exponential, logarithms, powers with
//! fractional exponents) live in [`crate::numeric_math`].

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;

use num_bigint::{BigInt, Sign};
use num_integer::Integer;
use num_traits::{Signed, ToPrimitive, Zero};

use crate::error::{code, Result, SqlError};

/// Digits a numeric may have before its decimal point.
pub const INT_DIGITS_MAX: u64 = 131_072;
/// Digits a numeric may have after its decimal point.
pub const SCALE_MAX: u32 = 16_383;
/// The precision a `numeric(p, s)` type may declare, and the bound of its scale's magnitude.
pub const PRECISION_MAX: u32 = 1000;
/// The largest scale an inexact result (a quotient, a root, a logarithm) is given.
pub(crate) const RESULT_SCALE_MAX: i64 = 1000;
/// Significant digits an inexact result has at least.
pub(crate) const MIN_SIG_DIGITS: i64 = 16;

/// An exact decimal number (see the module documentation).
#[derive(Clone)]
pub struct Numeric {
    int: Int,
    scale: u16,
}

/// The unscaled integer: inline while it fits an `i64` (never `i64::MIN`, so it negates).
#[derive(Clone)]
enum Int {
    Small(i64),
    Big(Box<BigInt>),
}

/// Why text is not a numeric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Not a number.
    Syntax,
    /// A number beyond numeric's range.
    Overflow,
    /// `NaN` or an infinity, which Kiln's numeric does not hold.
    Special,
}

/// PostgreSQL's error for a result beyond numeric's range.
pub fn overflow() -> SqlError {
    SqlError::new(code::NUMERIC_OUT_OF_RANGE, "value overflows numeric format")
}

/// `10^n`.
pub(crate) fn pow10(n: u64) -> BigInt {
    if n < 19 {
        return BigInt::from(10i64.pow(n as u32));
    }
    num_traits::pow(BigInt::from(10u8), n as usize)
}

/// The number of decimal digits of `v`'s magnitude (1 for zero).
pub(crate) fn digit_count(v: &BigInt) -> u64 {
    let bits = v.bits();
    if bits < 64 {
        return v.magnitude().to_u64().map_or(1, |m| m.checked_ilog10().unwrap_or(0) as u64 + 1);
    }
    // 2^(bits-1) <= |v| < 2^bits, so the count is this estimate or one more.
    let estimate = ((bits - 1) as f64 * std::f64::consts::LOG10_2) as u64 + 1;
    if v.magnitude() >= pow10(estimate).magnitude() {
        estimate + 1
    } else {
        estimate
    }
}

/// `n / d` rounded half away from zero (`d` positive).
fn div_round(n: &BigInt, d: &BigInt) -> BigInt {
    let (q, r) = n.div_rem(d);
    let twice: BigInt = r.abs() << 1;
    if twice >= *d {
        if n.is_negative() {
            q - 1
        } else {
            q + 1
        }
    } else {
        q
    }
}

impl Numeric {
    /// Zero, at scale 0.
    pub const ZERO: Numeric = Numeric { int: Int::Small(0), scale: 0 };

    /// `v × 10^-scale`, checked against numeric's range.
    pub(crate) fn from_parts(v: BigInt, scale: u32) -> Result<Numeric> {
        if scale > SCALE_MAX {
            return Err(overflow());
        }
        if !v.is_zero() {
            let rough = (v.bits() as f64 * std::f64::consts::LOG10_2) as u64 + 1;
            if rough > INT_DIGITS_MAX + scale as u64
                && digit_count(&v) > INT_DIGITS_MAX + scale as u64
            {
                return Err(overflow());
            }
        }
        Ok(Numeric::raw(v, scale))
    }

    /// `v × 10^-scale` without range checks (`scale` at most [`SCALE_MAX`]).
    fn raw(v: BigInt, scale: u32) -> Numeric {
        let int = match v.to_i64() {
            Some(i) if i != i64::MIN => Int::Small(i),
            _ => Int::Big(Box::new(v)),
        };
        Numeric { int, scale: scale as u16 }
    }

    /// `v × 10^-scale` from a 128-bit integer.
    fn from_i128(v: i128, scale: u32) -> Result<Numeric> {
        match i64::try_from(v) {
            Ok(i) if i != i64::MIN => Ok(Numeric { int: Int::Small(i), scale: scale as u16 }),
            _ => Numeric::from_parts(BigInt::from(v), scale),
        }
    }

    /// `v × 10^-scale` (a count of microseconds at scale 6 is seconds), for scales a
    /// caller knows are small.
    pub fn from_scaled(v: i128, scale: u32) -> Numeric {
        Numeric::from_i128(v, scale.min(SCALE_MAX)).unwrap_or(Numeric::ZERO)
    }

    /// The value × `10^-places`, exactly (its scale grows by `places`).
    pub fn shifted(&self, places: u32) -> Result<Numeric> {
        Numeric::from_parts(self.unscaled().into_owned(), self.scale() + places)
    }

    /// The unscaled integer.
    pub(crate) fn unscaled(&self) -> Cow<'_, BigInt> {
        match &self.int {
            Int::Small(i) => Cow::Owned(BigInt::from(*i)),
            Int::Big(b) => Cow::Borrowed(b),
        }
    }

    /// Digits after the decimal point (PostgreSQL's display scale).
    pub fn scale(&self) -> u32 {
        self.scale as u32
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        match &self.int {
            Int::Small(i) => *i == 0,
            Int::Big(b) => b.is_zero(),
        }
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.signum() < 0
    }

    /// -1, 0 or 1.
    pub fn signum(&self) -> i32 {
        match &self.int {
            Int::Small(i) => i.signum() as i32,
            Int::Big(b) => match b.sign() {
                Sign::Minus => -1,
                Sign::NoSign => 0,
                Sign::Plus => 1,
            },
        }
    }

    /// `-self` (zero stays zero: numeric has no negative zero).
    pub fn neg(&self) -> Numeric {
        match &self.int {
            Int::Small(i) => Numeric { int: Int::Small(-i), scale: self.scale },
            Int::Big(b) => Numeric::raw(-(**b).clone(), self.scale()),
        }
    }

    /// `|self|`.
    pub fn abs(&self) -> Numeric {
        if self.is_negative() {
            self.neg()
        } else {
            self.clone()
        }
    }

    /// The unscaled integers of `self` and `other` brought to their larger scale.
    fn aligned(&self, other: &Numeric) -> (BigInt, BigInt, u32) {
        let scale = self.scale().max(other.scale());
        (self.unscaled_at(scale), other.unscaled_at(scale), scale)
    }

    /// The unscaled integer at a scale no smaller than this value's.
    fn unscaled_at(&self, scale: u32) -> BigInt {
        let up = (scale - self.scale()) as u64;
        if up == 0 {
            self.unscaled().into_owned()
        } else {
            self.unscaled().as_ref() * pow10(up)
        }
    }

    /// Both values as 128-bit integers at their larger scale, when they fit.
    fn aligned_small(&self, other: &Numeric) -> Option<(i128, i128, u32)> {
        let (Int::Small(a), Int::Small(b)) = (&self.int, &other.int) else { return None };
        let (sa, sb) = (self.scale(), other.scale());
        let scale = sa.max(sb);
        let up = |v: i64, from: u32| -> Option<i128> {
            let d = scale - from;
            (d <= 18).then(|| v as i128 * 10i128.pow(d))
        };
        Some((up(*a, sa)?, up(*b, sb)?, scale))
    }

    /// `self + other` at the larger scale.
    pub fn add(&self, other: &Numeric) -> Result<Numeric> {
        if let Some((a, b, s)) = self.aligned_small(other) {
            return Numeric::from_i128(a + b, s);
        }
        let (a, b, s) = self.aligned(other);
        Numeric::from_parts(a + b, s)
    }

    /// `self - other` at the larger scale.
    pub fn sub(&self, other: &Numeric) -> Result<Numeric> {
        self.add(&other.neg())
    }

    /// `self × other`, exact (at the sum of the scales, rounded to 16383 digits after the
    /// point if it has more).
    pub fn mul(&self, other: &Numeric) -> Result<Numeric> {
        let scale = self.scale() + other.scale();
        if let (Int::Small(a), Int::Small(b)) = (&self.int, &other.int) {
            if scale <= SCALE_MAX {
                return Numeric::from_i128(*a as i128 * *b as i128, scale);
            }
        }
        let product = self.unscaled().as_ref() * other.unscaled().as_ref();
        if scale > SCALE_MAX {
            let cut = pow10((scale - SCALE_MAX) as u64);
            return Numeric::from_parts(div_round(&product, &cut), SCALE_MAX);
        }
        Numeric::from_parts(product, scale)
    }

    /// `self / other` at PostgreSQL's scale for a quotient (see [`Numeric::div_scale`]).
    pub fn div(&self, other: &Numeric) -> Result<Numeric> {
        if other.is_zero() {
            return Err(crate::expr::div_zero());
        }
        self.div_to(other, self.div_scale(other))
    }

    /// `self / other` rounded to `scale` digits after the point (`other` nonzero).
    pub(crate) fn div_to(&self, other: &Numeric, scale: u32) -> Result<Numeric> {
        // self / other × 10^scale = (a × 10^(sb + scale)) / (b × 10^sa)
        if let (Int::Small(a), Int::Small(b)) = (&self.int, &other.int) {
            let up = other.scale() as i64 + scale as i64 - self.scale() as i64;
            if (0..=18).contains(&up) {
                let n = *a as i128 * 10i128.pow(up as u32);
                let d = *b as i128;
                let (q, r) = (n / d, n % d);
                let q = if r.unsigned_abs() * 2 >= d.unsigned_abs() {
                    q + if (n < 0) != (d < 0) { -1 } else { 1 }
                } else {
                    q
                };
                return Numeric::from_i128(q, scale);
            }
        }
        let mut n = self.unscaled().as_ref() * pow10(other.scale() as u64 + scale as u64);
        let mut d = other.unscaled().as_ref() * pow10(self.scale() as u64);
        if d.is_negative() {
            n = -n;
            d = -d;
        }
        Numeric::from_parts(div_round(&n, &d), scale)
    }

    /// The scale PostgreSQL gives `self / other`: at least 16 significant digits, no less
    /// than either operand's scale, at most 1000.
    pub fn div_scale(&self, other: &Numeric) -> u32 {
        let (w1, f1) = self.weight_first();
        let (w2, f2) = other.weight_first();
        let mut qweight = w1 - w2;
        if f1 <= f2 {
            qweight -= 1;
        }
        let rscale = MIN_SIG_DIGITS - qweight * 4;
        rscale.max(self.scale() as i64).max(other.scale() as i64).clamp(0, RESULT_SCALE_MAX) as u32
    }

    /// The weight and value of the first nonzero digit in base 10000, as PostgreSQL's
    /// numeric stores digits (zero is weight 0, digit 0).
    pub(crate) fn weight_first(&self) -> (i64, u32) {
        if self.is_zero() {
            return (0, 0);
        }
        let digits = self.unscaled().magnitude().to_string();
        // The first digit's power of ten, and its base-10000 weight.
        let dweight = digits.len() as i64 - 1 - self.scale() as i64;
        let weight = dweight.div_euclid(4);
        let lead = (dweight - weight * 4 + 1) as usize;
        let first: String = digits.chars().chain(std::iter::repeat('0')).take(lead).collect();
        (weight, first.parse().unwrap_or(0))
    }

    /// The power of ten of the first significant digit (`123.4` is 2, `0.05` is -2; zero
    /// is 0).
    pub(crate) fn decimal_weight(&self) -> i64 {
        if self.is_zero() {
            return 0;
        }
        digit_count(&self.unscaled()) as i64 - 1 - self.scale() as i64
    }

    /// `self % other`: the remainder of truncating division, at the larger scale.
    pub fn rem(&self, other: &Numeric) -> Result<Numeric> {
        if other.is_zero() {
            return Err(crate::expr::div_zero());
        }
        if let Some((a, b, s)) = self.aligned_small(other) {
            return Numeric::from_i128(a % b, s);
        }
        let (a, b, s) = self.aligned(other);
        Numeric::from_parts(a % b, s)
    }

    /// `div(self, other)`: the quotient truncated to an integer.
    pub fn div_trunc(&self, other: &Numeric) -> Result<Numeric> {
        if other.is_zero() {
            return Err(crate::expr::div_zero());
        }
        let (a, b, _) = self.aligned(other);
        Numeric::from_parts(a / b, 0)
    }

    /// The quotient rounded down to an integer.
    pub fn div_floor(&self, other: &Numeric) -> Result<Numeric> {
        if other.is_zero() {
            return Err(crate::expr::div_zero());
        }
        let (a, b, _) = self.aligned(other);
        Numeric::from_parts(a.div_floor(&b), 0)
    }

    /// The same value shown with `scale` digits after the point (rounding if fewer).
    pub fn with_scale(&self, scale: u32) -> Result<Numeric> {
        if scale > SCALE_MAX {
            return Err(overflow());
        }
        Ok(self.round_to(scale as i64, false))
    }

    /// Rounded (half away from zero) or truncated to `scale` digits after the point, or
    /// to a multiple of `10^-scale` when `scale` is negative; the result shows `max(scale,
    /// 0)` digits after the point.
    fn round_to(&self, scale: i64, truncate: bool) -> Numeric {
        let current = self.scale() as i64;
        let shown = scale.max(0) as u32;
        if scale >= current {
            if let Int::Small(i) = self.int {
                let up = (scale - current) as u32;
                if let Some(v) = 10i64.checked_pow(up).and_then(|p| i.checked_mul(p)) {
                    return Numeric { int: Int::Small(v), scale: shown as u16 };
                }
            }
            return Numeric::raw(self.unscaled_at(scale as u32), shown);
        }
        let cut = (current - scale) as u64;
        if let (Int::Small(i), true, true) = (&self.int, cut <= 18, scale >= 0) {
            // In 128 bits: the usual case of a money-sized value.
            let d = 10i128.pow(cut as u32);
            let (q, r) = (*i as i128 / d, *i as i128 % d);
            let q = if !truncate && r.abs() * 2 >= d { q + i.signum() as i128 } else { q };
            return Numeric::from_scaled(q, shown);
        }
        let v = self.unscaled();
        let q = if cut > digit_count(&v) + 1 {
            BigInt::zero()
        } else {
            let d = pow10(cut);
            if truncate {
                v.as_ref() / &d
            } else {
                div_round(&v, &d)
            }
        };
        if scale >= 0 {
            Numeric::raw(q, shown)
        } else {
            Numeric::raw(q * pow10((-scale) as u64), 0)
        }
    }

    /// `round(self, scale)` (scale clamped to numeric's range, as PostgreSQL does).
    pub fn round(&self, scale: i64) -> Result<Numeric> {
        let scale = scale.clamp(-(INT_DIGITS_MAX as i64) - 1, SCALE_MAX as i64);
        let r = self.round_to(scale, false);
        // Rounding up may add a digit before the point.
        Numeric::from_parts(r.unscaled().into_owned(), r.scale())
    }

    /// `trunc(self, scale)`.
    pub fn trunc(&self, scale: i64) -> Numeric {
        self.round_to(scale.clamp(-(INT_DIGITS_MAX as i64) - 1, SCALE_MAX as i64), true)
    }

    /// The greatest integer not above the value (scale 0).
    pub fn floor(&self) -> Numeric {
        let d = pow10(self.scale() as u64);
        Numeric::raw(self.unscaled().div_floor(&d), 0)
    }

    /// The least integer not below the value (scale 0).
    pub fn ceil(&self) -> Numeric {
        self.neg().floor().neg()
    }

    /// Whether the value has no fractional part.
    pub fn is_integer(&self) -> bool {
        match &self.int {
            _ if self.scale == 0 => true,
            Int::Small(i) => 10i64.checked_pow(self.scale()).map_or(*i == 0, |p| i % p == 0),
            Int::Big(b) => (b.as_ref() % pow10(self.scale() as u64)).is_zero(),
        }
    }

    /// The number of digits of the unscaled integer (1 for zero).
    fn digits(&self) -> u64 {
        match &self.int {
            Int::Small(i) => i.unsigned_abs().checked_ilog10().unwrap_or(0) as u64 + 1,
            Int::Big(b) => digit_count(b),
        }
    }

    /// The fewest digits after the point that show the value exactly (`min_scale`).
    pub fn min_scale(&self) -> u32 {
        if self.is_zero() {
            return 0;
        }
        let zeros = match &self.int {
            Int::Small(i) => {
                let (mut m, mut zeros) = (i.unsigned_abs(), 0u32);
                while m % 10 == 0 && zeros < self.scale() {
                    m /= 10;
                    zeros += 1;
                }
                zeros
            }
            Int::Big(b) => {
                let digits = b.magnitude().to_string();
                (digits.len() - digits.trim_end_matches('0').len()) as u32
            }
        };
        self.scale().saturating_sub(zeros)
    }

    /// The value without trailing zeros after the point (`trim_scale`).
    pub fn normalized(&self) -> Numeric {
        let s = self.min_scale();
        if s == self.scale() {
            self.clone()
        } else {
            self.round_to(s as i64, true)
        }
    }

    /// Fitted to `numeric(precision, scale)`: rounded to the scale (to tens, hundreds … when
    /// negative), and refused (22003) unless it is then below `10^(precision - scale)`.
    pub fn fit(&self, precision: u32, scale: i32) -> Result<Numeric> {
        let r = self.round_to(scale as i64, false);
        let room = precision as i64 - scale as i64;
        if !r.is_zero() && r.digits() as i64 - r.scale() as i64 > room {
            let bound = if room != 0 { format!("10^{room}") } else { "1".to_string() };
            return Err(SqlError::new(code::NUMERIC_OUT_OF_RANGE, "numeric field overflow")
                .detail(format!(
                    "A field with precision {precision}, scale {scale} must round to an \
                     absolute value less than {bound}."
                )));
        }
        Ok(r)
    }

    /// Parses PostgreSQL's numeric input: optional spaces and sign, digits with an optional
    /// point, an optional exponent.
    pub fn parse(text: &str) -> std::result::Result<Numeric, ParseError> {
        let t = text.trim_matches(|c: char| c.is_ascii_whitespace());
        let (negative, body) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        let lower = body.to_ascii_lowercase();
        if matches!(lower.as_str(), "nan" | "infinity" | "inf") && (lower != "nan" || t == body) {
            return Err(ParseError::Special);
        }
        let (mantissa, exponent) = match body.find(['e', 'E']) {
            Some(at) => (&body[..at], Some(&body[at + 1..])),
            None => (body, None),
        };
        let exponent: i64 = match exponent {
            None => 0,
            Some(e) => {
                let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(ParseError::Syntax);
                }
                if digits.trim_start_matches('0').len() > 9 {
                    return Err(ParseError::Overflow);
                }
                e.parse().map_err(|_| ParseError::Syntax)?
            }
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if (int.is_empty() && frac.is_empty())
            || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
        {
            return Err(ParseError::Syntax);
        }
        let all = format!("{int}{frac}");
        let significant = all.trim_start_matches('0');
        // Out of range before any big-integer work: too many digits after the point, or
        // before it.
        let scale = frac.len() as i64 - exponent;
        if scale > SCALE_MAX as i64
            || (!significant.is_empty() && significant.len() as i64 - scale > INT_DIGITS_MAX as i64)
        {
            return Err(ParseError::Overflow);
        }
        let mut v = if significant.len() <= 18 {
            BigInt::from(significant.parse::<i64>().unwrap_or(0))
        } else {
            significant.parse::<BigInt>().map_err(|_| ParseError::Syntax)?
        };
        if negative {
            v = -v;
        }
        if scale < 0 {
            if !v.is_zero() {
                v *= pow10((-scale) as u64);
            }
            return Numeric::from_parts(v, 0).map_err(|_| ParseError::Overflow);
        }
        Numeric::from_parts(v, scale as u32).map_err(|_| ParseError::Overflow)
    }

    /// The value rounded to an integer, if it fits an `i64`.
    pub fn to_i64(&self) -> Option<i64> {
        if self.scale == 0 {
            if let Int::Small(i) = self.int {
                return Some(i);
            }
        }
        self.round_to(0, false).unscaled().to_i64()
    }

    /// The value rounded to an integer, if it fits an `i128`.
    pub fn to_i128(&self) -> Option<i128> {
        self.round_to(0, false).unscaled().to_i128()
    }

    /// The nearest double (`None` beyond its range).
    pub fn to_f64(&self) -> Option<f64> {
        let f = match (&self.int, self.scale) {
            (Int::Small(i), 0) if i.unsigned_abs() < 1 << 53 => *i as f64,
            _ => self.to_string().parse::<f64>().ok()?,
        };
        f.is_finite().then_some(f)
    }

    /// A double as numeric, to its 15 significant digits as PostgreSQL converts it
    /// (`0.1::float8::numeric` is 0.1); `None` for NaN and the infinities.
    pub fn from_f64(f: f64) -> Option<Numeric> {
        if !f.is_finite() {
            return None;
        }
        let text = format!("{f:.14e}");
        let (mantissa, exponent) = text.split_once('e')?;
        let mantissa =
            if mantissa.contains('.') { mantissa.trim_end_matches('0') } else { mantissa };
        let mantissa = mantissa.trim_end_matches('.');
        Numeric::parse(&format!("{mantissa}e{exponent}")).ok()
    }

    /// PostgreSQL's binary form: digit count, weight, sign and display scale, then base-10000
    /// digits, each an `i16`.
    pub fn to_pg_binary(&self) -> Vec<u8> {
        // The magnitude with its fraction padded to whole base-10000 digits, as those digits
        // (least significant first).
        let frac_groups = (self.scale() as usize).div_ceil(4);
        let pad = (frac_groups * 4 - self.scale() as usize) as u32;
        let mut groups: Vec<u16> = Vec::new();
        match &self.int {
            Int::Small(i) => {
                let mut m = i.unsigned_abs() as u128 * 10u128.pow(pad);
                while m > 0 {
                    groups.push((m % 10000) as u16);
                    m /= 10000;
                }
            }
            Int::Big(b) => {
                let digits =
                    (b.magnitude() * num_bigint::BigUint::from(10u32).pow(pad)).to_string();
                groups = digits
                    .as_bytes()
                    .rchunks(4)
                    .map(|c| c.iter().fold(0u16, |n, d| n * 10 + (d - b'0') as u16))
                    .collect();
            }
        }
        // Most significant first; the weight of the first is its power of 10000.
        groups.reverse();
        let mut weight = groups.len() as i64 - frac_groups as i64 - 1;
        let leading = groups.iter().take_while(|g| **g == 0).count();
        groups.drain(..leading);
        weight -= leading as i64;
        while groups.last() == Some(&0) {
            groups.pop();
        }
        if groups.is_empty() {
            weight = 0;
        }
        let mut out = Vec::with_capacity(8 + groups.len() * 2);
        out.extend_from_slice(&(groups.len() as u16).to_be_bytes());
        out.extend_from_slice(&(weight as i16).to_be_bytes());
        out.extend_from_slice(&(if self.is_negative() { 0x4000u16 } else { 0 }).to_be_bytes());
        out.extend_from_slice(&(self.scale).to_be_bytes());
        for g in groups {
            out.extend_from_slice(&g.to_be_bytes());
        }
        out
    }

    /// Reads PostgreSQL's binary form (see [`Numeric::to_pg_binary`]).
    pub fn from_pg_binary(b: &[u8]) -> std::result::Result<Numeric, ParseError> {
        let word = |i: usize| -> std::result::Result<u16, ParseError> {
            b.get(i * 2..i * 2 + 2)
                .map(|w| u16::from_be_bytes([w[0], w[1]]))
                .ok_or(ParseError::Syntax)
        };
        let count = word(0)? as usize;
        let weight = word(1)? as i16 as i64;
        let sign = word(2)?;
        let scale = word(3)? as u32;
        // PostgreSQL's bound on the digits of a binary numeric (its precision and result
        // scale), and the length the header promises.
        if count > 3000 || b.len() != 8 + count * 2 {
            return Err(ParseError::Syntax);
        }
        match sign {
            0 | 0x4000 => {}
            0xC000 | 0xD000 | 0xF000 => return Err(ParseError::Special),
            _ => return Err(ParseError::Syntax),
        }
        if scale > SCALE_MAX {
            return Err(ParseError::Overflow);
        }
        // The digits are an integer × 10000^(weight - count + 1).
        let exponent = 4 * (weight - count as i64 + 1);
        if exponent + 4 * count as i64 > INT_DIGITS_MAX as i64 + 4 {
            return Err(ParseError::Overflow);
        }
        let mut small: i128 = 0;
        let mut big: Option<BigInt> = None;
        for i in 0..count {
            let g = word(4 + i)?;
            if g >= 10000 {
                return Err(ParseError::Syntax);
            }
            match &mut big {
                Some(v) => *v = &*v * 10000u32 + g,
                None if small < i128::MAX / 10001 => small = small * 10000 + g as i128,
                None => big = Some(BigInt::from(small) * 10000u32 + g),
            }
        }
        let mut v = big.unwrap_or_else(|| BigInt::from(small));
        if sign == 0x4000 {
            v = -v;
        }
        let (v, at) =
            if exponent >= 0 { (v * pow10(exponent as u64), 0) } else { (v, (-exponent) as u32) };
        if at > SCALE_MAX + 4 {
            return Err(ParseError::Overflow);
        }
        // Digits past the scale shown (a sender may send them) round away.
        let n = Numeric::raw(v, at);
        let r = n.round_to(scale as i64, false);
        Numeric::from_parts(r.unscaled().into_owned(), r.scale()).map_err(|_| ParseError::Overflow)
    }

    /// Kiln's stored form: the scale, then the unscaled integer's two's-complement bytes
    /// (little-endian, fewest that hold it).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.scale.to_le_bytes());
        match &self.int {
            Int::Small(i) => {
                let all = i.to_le_bytes();
                let mut n = 8;
                // Drop sign-extension bytes the byte below still implies.
                while n > 1
                    && ((all[n - 1] == 0 && all[n - 2] & 0x80 == 0)
                        || (all[n - 1] == 0xFF && all[n - 2] & 0x80 != 0))
                {
                    n -= 1;
                }
                out.extend_from_slice(&(n as u32).to_le_bytes());
                out.extend_from_slice(&all[..n]);
            }
            Int::Big(b) => {
                let bytes = b.to_signed_bytes_le();
                out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                out.extend_from_slice(&bytes);
            }
        }
    }

    /// Reads the stored form; `None` when it is malformed.
    pub fn decode(scale: u16, bytes: &[u8]) -> Option<Numeric> {
        if scale as u32 > SCALE_MAX || bytes.is_empty() {
            return None;
        }
        if bytes.len() <= 8 {
            // Sign-extended to 64 bits.
            let fill = if bytes[bytes.len() - 1] & 0x80 != 0 { 0xFF } else { 0 };
            let mut all = [fill; 8];
            all[..bytes.len()].copy_from_slice(bytes);
            let i = i64::from_le_bytes(all);
            if i != i64::MIN {
                return Some(Numeric { int: Int::Small(i), scale });
            }
        }
        Some(Numeric::raw(BigInt::from_signed_bytes_le(bytes), scale as u32))
    }

    /// Reads the 16-byte form earlier versions of Kiln stored: flags (scale in bits 16–23,
    /// sign in bit 31), then a 96-bit magnitude as three little-endian words.
    pub fn decode_legacy(b: [u8; 16]) -> Option<Numeric> {
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let flags = word(0);
        let scale = (flags >> 16) & 0xFF;
        if scale > 28 {
            return None;
        }
        let magnitude = (word(12) as u128) << 64 | (word(8) as u128) << 32 | word(4) as u128;
        let mut v = BigInt::from(magnitude);
        if flags & 0x8000_0000 != 0 {
            v = -v;
        }
        Some(Numeric::raw(v, scale))
    }
}

impl From<i64> for Numeric {
    fn from(i: i64) -> Numeric {
        if i == i64::MIN {
            Numeric::raw(BigInt::from(i), 0)
        } else {
            Numeric { int: Int::Small(i), scale: 0 }
        }
    }
}

impl PartialEq for Numeric {
    fn eq(&self, other: &Numeric) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Numeric {}

impl PartialOrd for Numeric {
    fn partial_cmp(&self, other: &Numeric) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Numeric {
    fn cmp(&self, other: &Numeric) -> Ordering {
        if let Some((a, b, _)) = self.aligned_small(other) {
            return a.cmp(&b);
        }
        let (sa, sb) = (self.signum(), other.signum());
        if sa != sb || sa == 0 {
            return sa.cmp(&sb);
        }
        // Different magnitudes decide without aligning (which could mean large powers).
        let (wa, wb) = (self.decimal_weight(), other.decimal_weight());
        if wa != wb {
            return if sa > 0 { wa.cmp(&wb) } else { wb.cmp(&wa) };
        }
        let (a, b, _) = self.aligned(other);
        a.cmp(&b)
    }
}

impl fmt::Display for Numeric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = match &self.int {
            Int::Small(i) => i.unsigned_abs().to_string(),
            Int::Big(b) => b.magnitude().to_string(),
        };
        let scale = self.scale as usize;
        if scale > 0 {
            if s.len() <= scale {
                s.insert_str(0, &"0".repeat(scale + 1 - s.len()));
            }
            s.insert(s.len() - scale, '.');
        }
        if self.is_negative() {
            f.write_str("-")?;
        }
        f.write_str(&s)
    }
}

impl fmt::Debug for Numeric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::str::FromStr for Numeric {
    type Err = ParseError;

    fn from_str(s: &str) -> std::result::Result<Numeric, ParseError> {
        Numeric::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Numeric {
        Numeric::parse(s).unwrap()
    }

    #[test]
    fn parse_and_display_keep_the_scale() {
        for (input, shown) in [
            ("0.000", "0.000"),
            ("-0.0", "0.0"),
            ("1e3", "1000"),
            ("1.5e-3", "0.0015"),
            ("  12.50  ", "12.50"),
            ("+.5", "0.5"),
            ("5.", "5"),
            (
                "-12345678901234567890.123456789012345678",
                "-12345678901234567890.123456789012345678",
            ),
            ("0.00000000000000000000000000000001", "0.00000000000000000000000000000001"),
        ] {
            assert_eq!(n(input).to_string(), shown, "{input}");
        }
        for bad in ["", ".", "1e", "e5", "1.2.3", "--1", "1 2", "0x10", "1e+"] {
            assert_eq!(Numeric::parse(bad).unwrap_err(), ParseError::Syntax, "{bad:?}");
        }
        assert_eq!(Numeric::parse("NaN").unwrap_err(), ParseError::Special);
        assert_eq!(Numeric::parse("-Infinity").unwrap_err(), ParseError::Special);
        assert_eq!(Numeric::parse("1e131072").unwrap_err(), ParseError::Overflow);
        assert_eq!(Numeric::parse("1e-16384").unwrap_err(), ParseError::Overflow);
        assert_eq!(Numeric::parse("1e99999999999").unwrap_err(), ParseError::Overflow);
        assert!(Numeric::parse("1e131071").is_ok());
        assert_eq!(n("1e-16383").scale(), 16383);
    }

    #[test]
    fn arithmetic_keeps_postgresql_scales() {
        assert_eq!(n("1.50").add(&n("2.1")).unwrap().to_string(), "3.60");
        assert_eq!(n("1.50").sub(&n("2.1")).unwrap().to_string(), "-0.60");
        assert_eq!(n("1.50").mul(&n("-2.1")).unwrap().to_string(), "-3.150");
        assert_eq!(n("0.00").mul(&n("10")).unwrap().to_string(), "0.00");
        assert_eq!(n("1").div(&n("3")).unwrap().to_string(), "0.33333333333333333333");
        assert_eq!(n("2").div(&n("3")).unwrap().to_string(), "0.66666666666666666667");
        assert_eq!(n("-2").div(&n("3")).unwrap().to_string(), "-0.66666666666666666667");
        assert_eq!(n("10").div(&n("4")).unwrap().to_string(), "2.5000000000000000");
        assert_eq!(
            n("1000000000000000000000000000001.5").div(&n("2")).unwrap().to_string(),
            "500000000000000000000000000000.8"
        );
        assert_eq!(n("-7.5").rem(&n("2")).unwrap().to_string(), "-1.5");
        assert_eq!(n("-7.5").div_trunc(&n("2")).unwrap().to_string(), "-3");
        let big = n("99999999999999999999999999999");
        assert_eq!(big.add(&n("1")).unwrap().to_string(), "100000000000000000000000000000");
        assert!(n("1").div(&n("0")).is_err());
    }

    #[test]
    fn rounding_is_half_away_from_zero() {
        assert_eq!(n("2.5").round(0).unwrap().to_string(), "3");
        assert_eq!(n("-2.5").round(0).unwrap().to_string(), "-3");
        assert_eq!(n("2.567").round(2).unwrap().to_string(), "2.57");
        assert_eq!(n("1.5").round(5).unwrap().to_string(), "1.50000");
        assert_eq!(n("12345.678").round(-2).unwrap().to_string(), "12300");
        assert_eq!(n("12345.678").trunc(-2).to_string(), "12300");
        assert_eq!(n("-0.001").round(2).unwrap().to_string(), "0.00");
        assert_eq!(n("-1.5").floor().to_string(), "-2");
        assert_eq!(n("-1.5").ceil().to_string(), "-1");
        assert_eq!(n("123.456").fit(5, -1).unwrap().to_string(), "120");
        assert_eq!(n("9.995").fit(3, 2).unwrap_err().code, code::NUMERIC_OUT_OF_RANGE);
        assert_eq!(n("1.2300").min_scale(), 2);
        assert_eq!(n("1.2300").normalized().to_string(), "1.23");
    }

    #[test]
    fn comparisons_ignore_the_scale() {
        assert_eq!(n("1.50"), n("1.5"));
        assert!(n("-1e40") < n("-1e39"));
        assert!(n("1e40") > n("99999.9"));
        assert!(n("0.001") > n("0"));
        assert!(n("-0.001") < n("0.0"));
    }

    #[test]
    fn doubles_convert_to_fifteen_digits() {
        let f = |x: f64| Numeric::from_f64(x).unwrap().to_string();
        assert_eq!(f(0.1), "0.1");
        assert_eq!(f(1.0 / 3.0), "0.333333333333333");
        assert_eq!(f(1e20), "100000000000000000000");
        assert_eq!(f(1.5e-10), "0.00000000015");
        assert_eq!(f(-0.0), "0");
        assert_eq!(n("12345678901234567890").to_f64(), Some(1.2345678901234567e19));
    }

    #[test]
    fn binary_and_stored_forms_round_trip() {
        for text in
            ["0", "0.00", "1", "-12.5", "10000", "0.0001", "123456789.000123456789", "-1e40"]
        {
            let v = n(text);
            let back = Numeric::from_pg_binary(&v.to_pg_binary()).unwrap();
            assert_eq!(back.to_string(), v.to_string(), "{text}");
            let mut stored = Vec::new();
            v.encode(&mut stored);
            let scale = u16::from_le_bytes([stored[0], stored[1]]);
            let back = Numeric::decode(scale, &stored[6..]).unwrap();
            assert_eq!(back.to_string(), v.to_string(), "{text}");
        }
        // PostgreSQL's bytes for -12.5: 2 digits, weight 0, negative, scale 1: 12, 5000.
        assert_eq!(n("-12.5").to_pg_binary(), [0, 2, 0, 0, 0x40, 0, 0, 1, 0, 12, 0x13, 0x88]);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// Values of every size: small ones, and ones past 64 and 128 bits.
        fn numeric() -> impl Strategy<Value = Numeric> {
            (any::<i64>(), 0u32..12, 0u32..4, any::<i64>()).prop_map(|(m, scale, widen, more)| {
                let mut v = BigInt::from(m);
                for _ in 0..widen {
                    v = v * BigInt::from(u64::MAX) + BigInt::from(more);
                }
                Numeric::from_parts(v, scale).unwrap()
            })
        }

        proptest! {
            #[test]
            fn forms_round_trip(a in numeric()) {
                let back = Numeric::parse(&a.to_string()).unwrap();
                prop_assert_eq!(back.to_string(), a.to_string());
                let back = Numeric::from_pg_binary(&a.to_pg_binary()).unwrap();
                prop_assert_eq!(back.to_string(), a.to_string());
                let mut stored = Vec::new();
                a.encode(&mut stored);
                let back = Numeric::decode(u16::from_le_bytes([stored[0], stored[1]]), &stored[6..]).unwrap();
                prop_assert_eq!(back.to_string(), a.to_string());
            }

            /// Exact arithmetic agrees with rust_decimal wherever that holds the operands and
            /// the result exactly.
            #[test]
            fn exact_arithmetic_agrees(x in any::<i32>(), xs in 0u32..8, y in any::<i32>(), ys in 0u32..8) {
                let (a, b) = (Numeric::from_scaled(x as i128, xs), Numeric::from_scaled(y as i128, ys));
                let (da, db) = (rust_decimal::Decimal::new(x as i64, xs), rust_decimal::Decimal::new(y as i64, ys));
                // rust_decimal drops a zero's scale; compare values, and scales by the rules.
                let d = |v: rust_decimal::Decimal| Numeric::parse(&v.to_string()).unwrap();
                let (sum, diff, product) = (a.add(&b).unwrap(), a.sub(&b).unwrap(), a.mul(&b).unwrap());
                prop_assert_eq!(&sum, &d(da + db));
                prop_assert_eq!(&diff, &d(da - db));
                prop_assert_eq!(&product, &d(da * db));
                prop_assert_eq!((sum.scale(), diff.scale(), product.scale()), (xs.max(ys), xs.max(ys), xs + ys));
                prop_assert_eq!(a.cmp(&b), da.cmp(&db));
                if y != 0 {
                    let rem = a.rem(&b).unwrap();
                    prop_assert_eq!(&rem, &d(da % db));
                    prop_assert_eq!(rem.scale(), xs.max(ys));
                    // The quotient is da / db rounded to the chosen scale.
                    let q = a.div(&b).unwrap();
                    let scale = q.scale();
                    if scale <= 20 {
                        let want = (da / db).round_dp_with_strategy(scale, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
                        prop_assert_eq!(q, Numeric::parse(&want.to_string()).unwrap());
                    }
                }
            }

            /// Sums and differences of big values undo each other; products divide back.
            #[test]
            fn big_arithmetic_is_consistent(a in numeric(), b in numeric()) {
                prop_assert_eq!(a.add(&b).unwrap().sub(&b).unwrap(), a.clone());
                if !b.is_zero() {
                    let p = a.mul(&b).unwrap();
                    prop_assert_eq!(p.div_to(&b, a.scale() + 2).unwrap(), a.clone());
                }
                prop_assert_eq!(a.cmp(&b), a.sub(&b).unwrap().signum().cmp(&0));
            }
        }
    }
}
