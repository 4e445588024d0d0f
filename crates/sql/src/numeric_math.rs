//! The numeric functions without exact results: `sqrt`, `exp`, `ln`, `log` and `power`.
//!
//! Each result is rounded (half away from zero) to the scale PostgreSQL chooses for it — at
//! least 16 significant digits and no fewer digits after the point than an argument has —
//! so the same call gives the same digits on both. Square roots are exact before rounding.
//! The others are computed in [`Approx`] values carrying a fixed number of significant
//! digits, chosen so that the error stays well below the last digit kept: logarithms by
//! square roots towards 1 and the series of `atanh`, exponentials by halving towards 0, the
//! Taylor series and squaring back, powers by `exp(y × ln x)` or, for integer exponents, by
//! repeated squaring (exact while the digits fit).

use num_bigint::BigInt;
use num_traits::{One, Signed, ToPrimitive, Zero};

use crate::error::{Result, SqlError};
use crate::numeric::{
    digit_count, overflow, pow10, Numeric, INT_DIGITS_MAX, MIN_SIG_DIGITS, RESULT_SCALE_MAX,
};

/// Digits kept beyond those a result needs.
const GUARD: i64 = 12;

/// `m × 10^e`, an approximation carried to a number of significant digits.
#[derive(Clone, Debug)]
struct Approx {
    m: BigInt,
    e: i64,
}

impl Approx {
    fn exact(n: &Numeric) -> Approx {
        Approx { m: n.unscaled().into_owned(), e: -(n.scale() as i64) }
    }

    fn int(i: i64) -> Approx {
        Approx { m: BigInt::from(i), e: 0 }
    }

    /// The power of ten just above the magnitude (`m`'s digits plus `e`); very negative
    /// for zero.
    fn top(&self) -> i64 {
        if self.m.is_zero() {
            i64::MIN / 4
        } else {
            digit_count(&self.m) as i64 + self.e
        }
    }

    /// Rounded half away from zero to `scale` digits after the point.
    fn to_numeric(&self, scale: i64) -> Result<Numeric> {
        let shift = self.e + scale;
        let v = if shift >= 0 {
            &self.m * pow10(shift as u64)
        } else if -shift > digit_count(&self.m) as i64 + 1 {
            BigInt::zero()
        } else {
            let d = pow10((-shift) as u64);
            let (q, r) = (&self.m / &d, &self.m % &d);
            if (r.abs() << 1) >= d {
                q + self.m.signum()
            } else {
                q
            }
        };
        Numeric::from_parts(v, scale as u32)
    }

    /// The value as a double (for estimates only).
    fn to_f64(&self) -> f64 {
        let digits = digit_count(&self.m) as i64;
        let keep = digits.min(17);
        let lead = (&self.m / pow10((digits - keep) as u64)).to_f64().unwrap_or(0.0);
        lead * 10f64.powi((self.e + digits - keep).clamp(-400, 400) as i32)
    }
}

/// Arithmetic on [`Approx`] values to `digits` significant digits (truncating).
struct Work {
    digits: i64,
}

impl Work {
    fn trim(&self, mut a: Approx) -> Approx {
        let d = digit_count(&a.m) as i64;
        if d > self.digits {
            let cut = d - self.digits;
            a.m /= pow10(cut as u64);
            a.e += cut;
        }
        a
    }

    fn mul(&self, a: &Approx, b: &Approx) -> Approx {
        self.trim(Approx { m: &a.m * &b.m, e: a.e + b.e })
    }

    fn div(&self, a: &Approx, b: &Approx) -> Approx {
        let k = (self.digits + digit_count(&b.m) as i64 - digit_count(&a.m) as i64 + 1).max(0);
        self.trim(Approx { m: (&a.m * pow10(k as u64)) / &b.m, e: a.e - k - b.e })
    }

    fn add(&self, a: &Approx, b: &Approx) -> Approx {
        // A term below the other's last kept digit changes nothing.
        if b.m.is_zero() || a.top() - b.top() > self.digits + 2 {
            return self.trim(a.clone());
        }
        if a.m.is_zero() || b.top() - a.top() > self.digits + 2 {
            return self.trim(b.clone());
        }
        let e = a.e.min(b.e);
        let m = &a.m * pow10((a.e - e) as u64) + &b.m * pow10((b.e - e) as u64);
        self.trim(Approx { m, e })
    }

    fn sub(&self, a: &Approx, b: &Approx) -> Approx {
        self.add(a, &Approx { m: -&b.m, e: b.e })
    }

    /// The square root of a positive value.
    fn sqrt(&self, a: &Approx) -> Approx {
        let d = digit_count(&a.m) as i64;
        let mut k = (2 * self.digits + 2 - d).max(0);
        if (a.e - k).rem_euclid(2) != 0 {
            k += 1;
        }
        let m = (&a.m * pow10(k as u64)).sqrt();
        self.trim(Approx { m, e: (a.e - k) / 2 })
    }
}

fn log_error(message: &str) -> SqlError {
    SqlError::new("2201E", message.to_string())
}

fn power_error(message: &str) -> SqlError {
    SqlError::new("2201F", message.to_string())
}

/// PostgreSQL's choice of a result scale: `MIN_SIG_DIGITS - weight`, no less than the
/// arguments' scales, within 0 to 1000.
fn result_scale(weight: i64, scales: &[u32]) -> i64 {
    let mut r = MIN_SIG_DIGITS - weight;
    for s in scales {
        r = r.max(*s as i64);
    }
    r.clamp(0, RESULT_SCALE_MAX)
}

/// The weight (base 10000) and the first two base-10000 digits of a nonzero value, as
/// PostgreSQL's numeric stores them.
fn base_digits(x: &Numeric) -> (i64, u32, Option<u32>) {
    let b = x.to_pg_binary();
    let word = |i: usize| u16::from_be_bytes([b[i * 2], b[i * 2 + 1]]) as u32;
    let count = word(0) as usize;
    let weight = word(1) as u16 as i16 as i64;
    (weight, if count > 0 { word(4) } else { 0 }, (count > 1).then(|| word(5)))
}

/// PostgreSQL's estimate of the decimal weight of `ln(x)` (`x` positive), from which the
/// scale of a logarithm is chosen.
fn ln_weight(x: &Numeric) -> i64 {
    if *x >= Numeric::from_scaled(9, 1) && *x <= Numeric::from_scaled(11, 1) {
        // ln(x) is about x - 1.
        return x.sub(&Numeric::from(1)).map_or(0, |d| d.decimal_weight());
    }
    let (weight, first, second) = base_digits(x);
    let (digits, dweight) = match second {
        Some(s) => (first as f64 * 10000.0 + s as f64, weight * 4 - 4),
        None => (first as f64, weight * 4),
    };
    let ln = digits.ln() + dweight as f64 * std::f64::consts::LN_10;
    ln.abs().log10() as i64
}

/// `ln(x)` to within about `10^-digits` (x positive): square roots bring x within 10% of 1,
/// where `ln(x) = 2 atanh((x-1)/(x+1))` converges fast.
fn ln_approx(x: &Approx, digits: i64) -> Approx {
    // How many square roots: each halves ln(x); an estimate, then the digits to carry.
    let mut estimate = x.to_f64().ln().abs();
    if !estimate.is_finite() {
        // Beyond a double: ln(m × 10^e) is about e × ln(10).
        estimate = ((digit_count(&x.m) as i64 + x.e) as f64 * std::f64::consts::LN_10).abs();
    }
    let mut roots = 0i64;
    while estimate > 0.09 {
        estimate /= 2.0;
        roots += 1;
    }
    let w = Work { digits: digits + GUARD + roots * 3 / 10 + 2 + (x.top().abs() / 2).min(4) };
    let (lo, hi) = (Approx { m: BigInt::from(9), e: -1 }, Approx { m: BigInt::from(11), e: -1 });
    let mut y = w.trim(x.clone());
    let mut doublings = 0u32;
    while w.sub(&y, &lo).m.is_negative() || w.sub(&hi, &y).m.is_negative() {
        y = w.sqrt(&y);
        doublings += 1;
    }
    let one = Approx::int(1);
    let z = w.div(&w.sub(&y, &one), &w.add(&y, &one));
    let z2 = w.mul(&z, &z);
    let mut power = z.clone();
    let mut sum = z;
    let stop = -(w.digits + 2);
    for n in 1i64.. {
        power = w.mul(&power, &z2);
        if power.m.is_zero() || power.top() < stop {
            break;
        }
        sum = w.add(&sum, &w.div(&power, &Approx::int(2 * n + 1)));
    }
    // × 2^(doublings + 1)
    let factor = Approx { m: BigInt::one() << (doublings + 1), e: 0 };
    w.mul(&sum, &factor)
}

/// `exp(a)` to about `digits` significant digits: halved until below 0.01, the Taylor
/// series, then squared back.
fn exp_approx(a: &Approx, digits: i64) -> Approx {
    let magnitude = a.to_f64().abs();
    let mut halvings = 0u32;
    let mut m = magnitude;
    while m > 0.01 {
        m /= 2.0;
        halvings += 1;
    }
    let w = Work {
        digits: digits + GUARD + halvings as i64 * 3 / 10 + 2 + magnitude.log10().max(0.0) as i64,
    };
    // a / 2^k is a × 5^k / 10^k, exactly.
    let r = w.trim(Approx {
        m: &a.m * num_traits::pow(BigInt::from(5), halvings as usize),
        e: a.e - halvings as i64,
    });
    let mut term = Approx::int(1);
    let mut sum = Approx::int(1);
    let stop = -(w.digits + 2);
    for n in 1i64.. {
        term = w.div(&w.mul(&term, &r), &Approx::int(n));
        if term.m.is_zero() || term.top() < stop {
            break;
        }
        sum = w.add(&sum, &term);
    }
    for _ in 0..halvings {
        sum = w.mul(&sum, &sum);
    }
    sum
}

/// `sqrt(x)`, at PostgreSQL's scale, correctly rounded.
pub fn sqrt(x: &Numeric) -> Result<Numeric> {
    if x.is_negative() {
        return Err(power_error("cannot take square root of a negative number"));
    }
    let (weight, _, _) = if x.is_zero() { (0, 0, None) } else { base_digits(x) };
    let sweight = (weight + 1) * 2 - 1;
    sqrt_to(x, result_scale(sweight, &[x.scale()]))
}

/// The square root of a value not below zero, correctly rounded to `scale` digits.
pub fn sqrt_to(x: &Numeric, scale: i64) -> Result<Numeric> {
    if x.is_negative() {
        return Err(power_error("cannot take square root of a negative number"));
    }
    // floor(sqrt(x × 10^(2 scale + 2))) has one digit more than the result: round on it.
    let shift = 2 * (scale + 1) - x.scale() as i64;
    let n = x.unscaled().into_owned() * pow10(shift as u64);
    let root = Approx { m: n.sqrt(), e: -(scale + 1) };
    root.to_numeric(scale)
}

/// `exp(x)`, at PostgreSQL's scale.
pub fn exp(x: &Numeric) -> Result<Numeric> {
    let val = x.to_f64().unwrap_or(if x.is_negative() { f64::MIN } else { f64::MAX });
    // The result's decimal weight, about.
    let weight = (val * std::f64::consts::LOG10_E).clamp(-2000.0, 2000.0);
    let scale = result_scale(weight as i64, &[x.scale()]);
    if val.abs() >= 6000.0 {
        return if val > 0.0 { Err(overflow()) } else { Numeric::ZERO.with_scale(scale as u32) };
    }
    exp_to(&Approx::exact(x), weight, scale)
}

/// `exp(a)` rounded to `scale`, for a result of decimal weight about `weight`.
fn exp_to(a: &Approx, weight: f64, scale: i64) -> Result<Numeric> {
    if weight > INT_DIGITS_MAX as f64 + 1.0 {
        return Err(overflow());
    }
    if weight < -(scale as f64) - 2.0 {
        return Numeric::ZERO.with_scale(scale as u32);
    }
    let digits = (scale as f64 + weight).max(0.0) as i64 + 1;
    exp_approx(a, digits).to_numeric(scale)
}

fn check_log_argument(x: &Numeric) -> Result<()> {
    if x.is_zero() {
        return Err(log_error("cannot take logarithm of zero"));
    }
    if x.is_negative() {
        return Err(log_error("cannot take logarithm of a negative number"));
    }
    Ok(())
}

/// `ln(x)`, at PostgreSQL's scale.
pub fn ln(x: &Numeric) -> Result<Numeric> {
    check_log_argument(x)?;
    let scale = result_scale(ln_weight(x), &[x.scale()]);
    ln_approx(&Approx::exact(x), scale).to_numeric(scale)
}

/// `log(base, x)`: `ln(x) / ln(base)`, at PostgreSQL's scale.
pub fn log(base: &Numeric, x: &Numeric) -> Result<Numeric> {
    check_log_argument(base)?;
    check_log_argument(x)?;
    if *base == Numeric::from(1) {
        return Err(crate::expr::div_zero());
    }
    let (wb, wx) = (ln_weight(base), ln_weight(x));
    let scale = result_scale(wx - wb, &[base.scale(), x.scale()]);
    // Both logarithms to enough digits that their quotient is good to the scale.
    let digits = scale + (wx - wb).max(0) + 2 * (-wb).max(0) + GUARD;
    let lx = ln_approx(&Approx::exact(x), digits);
    let lb = ln_approx(&Approx::exact(base), digits);
    let w = Work { digits: digits + (wx - wb).abs() + GUARD };
    w.div(&lx, &lb).to_numeric(scale)
}

/// `x ^ y` on numerics, with PostgreSQL's scales and errors.
pub fn power(x: &Numeric, y: &Numeric) -> Result<Numeric> {
    if x.is_zero() {
        if y.is_negative() {
            return Err(power_error("zero raised to a negative power is undefined"));
        }
    } else if x.is_negative() && !y.is_integer() {
        return Err(power_error(
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    if y.is_integer() {
        if let Some(n) = y.to_i64().filter(|n| i32::try_from(*n).is_ok()) {
            let scale = (MIN_SIG_DIGITS.max(x.scale() as i64)).min(RESULT_SCALE_MAX);
            return power_int(x, n, scale);
        }
    }
    if x.is_zero() {
        // 0 ^ y for a positive y beyond the integers handled above.
        return Numeric::ZERO.with_scale(result_scale(0, &[x.scale(), y.scale()]) as u32);
    }
    if x.is_negative() {
        // An integer power beyond the ones handled above: |x| ^ y, negated for an odd y
        // (as PostgreSQL computes it; ln x is not real).
        let odd = !y.rem(&Numeric::from(2))?.is_zero();
        let r = power(&x.abs(), y)?;
        return Ok(if odd { r.neg() } else { r });
    }
    // PostgreSQL picks the scale from ln(x) × y taken to a few digits; so does this, to
    // pick the same.
    let rough_scale = (8 - ln_weight(x)).clamp(0, RESULT_SCALE_MAX);
    let ln_rough = ln_approx(&Approx::exact(x), rough_scale).to_numeric(rough_scale)?;
    let product = ln_rough.mul(y)?.round(rough_scale)?;
    let val = product.to_f64().unwrap_or(if product.is_negative() { f64::MIN } else { f64::MAX });
    if val.abs() > 2000.0 * 3.01 {
        if val > 0.0 {
            return Err(overflow());
        }
        return Numeric::ZERO.with_scale(RESULT_SCALE_MAX as u32);
    }
    let weight = val * std::f64::consts::LOG10_E;
    let scale = result_scale(weight as i64, &[x.scale(), y.scale()]);
    if weight < -(scale as f64) - 2.0 {
        return Numeric::ZERO.with_scale(scale as u32);
    }
    // exp(y × ln x): ln x to enough digits that the product is good to the result's.
    let sig = (scale as f64 + weight).max(0.0) as i64 + 1;
    let y_digits = y.decimal_weight().max(0) + 1;
    let lnx = ln_approx(&Approx::exact(x), sig + y_digits + GUARD);
    let w = Work { digits: sig + y_digits + 2 * GUARD };
    let arg = w.mul(&lnx, &Approx::exact(y));
    exp_to(&arg, weight, scale)
}

/// `x ^ n` for an integer `n`, rounded to `scale`: exact by repeated squaring while the
/// digits fit what the result needs.
fn power_int(x: &Numeric, n: i64, scale: i64) -> Result<Numeric> {
    if n == 0 {
        return Numeric::from(1).with_scale(scale as u32);
    }
    if x.is_zero() {
        return Numeric::ZERO.with_scale(scale as u32);
    }
    // The result's decimal weight, about: n × log10|x|.
    let (weight, first, second) = base_digits(x);
    let lead = first as f64 + second.map_or(0.0, |s| s as f64 / 10000.0);
    let log10 = lead.log10() + weight as f64 * 4.0;
    let result_weight = n as f64 * log10;
    if result_weight > INT_DIGITS_MAX as f64 + 1.0 {
        return Err(overflow());
    }
    if result_weight < -(scale as f64) - 2.0 {
        return Numeric::ZERO.with_scale(scale as u32);
    }
    let sig = (scale as f64 + result_weight).max(0.0) as i64 + 1;
    let steps = 64 - n.unsigned_abs().leading_zeros() as i64;
    let w = Work { digits: sig + GUARD + steps };
    let mut base = w.trim(Approx::exact(x));
    let mut acc = Approx::int(1);
    let mut k = n.unsigned_abs();
    while k > 0 {
        if k & 1 == 1 {
            acc = w.mul(&acc, &base);
        }
        k >>= 1;
        if k > 0 {
            base = w.mul(&base, &base);
        }
    }
    if n < 0 {
        acc = w.div(&Approx::int(1), &acc);
    }
    acc.to_numeric(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Numeric {
        Numeric::parse(s).unwrap()
    }

    /// Every expected value here is what PostgreSQL 15 returns for the same call.
    #[test]
    fn results_match_postgresql() {
        let cases: Vec<(Result<Numeric>, &str)> = vec![
            (sqrt(&n("2")), "1.414213562373095"),
            (sqrt(&n("0")), "0.000000000000000"),
            (sqrt(&n("0.0001")), "0.01000000000000000"),
            (sqrt(&n("1e-20")), "0.0000000001000000000000000"),
            (ln(&n("2")), "0.6931471805599453"),
            (ln(&n("1")), "0.0000000000000000"),
            (ln(&n("1e100")), "230.25850929940457"),
            (exp(&n("1")), "2.7182818284590452"),
            (exp(&n("0")), "1.0000000000000000"),
            (log(&n("10"), &n("100")), "2.0000000000000000"),
            (log(&n("2"), &n("8")), "3.0000000000000000"),
            (log(&n("10"), &n("1.0000001")), "0.00000004342944601885292"),
            (log(&n("10"), &n("0.5")), "-0.3010299956639812"),
            (power(&n("2"), &n("100")), "1267650600228229401496703205376.0000000000000000"),
            (power(&n("1.5"), &n("20")), "3325.2567300796508789"),
            (power(&n("2"), &n("-2")), "0.2500000000000000"),
            (power(&n("0.1"), &n("30")), "0.0000000000000000"),
            (power(&n("2.5"), &n("0")), "1.0000000000000000"),
            (power(&n("-2"), &n("3")), "-8.0000000000000000"),
            (power(&n("1.000001"), &n("1000000")), "2.7182804693193769"),
            (power(&n("2"), &n("0.5")), "1.4142135623730950"),
            (power(&n("0.5"), &n("0.5")), "0.7071067811865475"),
            (power(&n("1.1"), &n("2.0")), "1.2100000000000000"),
            (power(&n("1e-10"), &n("2.5")), "0.0000000000000000000000001000000000000000"),
            (power(&n("100"), &n("-0.5")), "0.10000000000000000"),
        ];
        for (got, want) in cases {
            assert_eq!(got.unwrap().to_string(), want);
        }
        assert_eq!(exp(&n("-5000")).unwrap().scale(), 1000);
        assert!(exp(&n("6000")).is_err());
        assert!(power(&n("10"), &n("131072")).is_err());
        assert_eq!(power(&n("2"), &n("10000")).unwrap().to_string().len(), 3028);
        assert_eq!(sqrt(&n("-1")).unwrap_err().code, "2201F");
        // A negative base to an integer power past the int32 range: |x| ^ y, signed.
        assert_eq!(power(&n("-1"), &n("1e20")).unwrap(), power(&n("1"), &n("1e20")).unwrap());
        assert_eq!(
            power(&n("-1"), &n("10000000001")).unwrap(),
            power(&n("1"), &n("10000000001")).unwrap().neg()
        );
        assert_eq!(power(&n("-9223372036854775808"), &n("1e131071")).unwrap_err().code, "22003");
        assert_eq!(ln(&n("0")).unwrap_err().code, "2201E");
        assert_eq!(power(&n("0"), &n("-1")).unwrap_err().code, "2201F");
        assert_eq!(power(&n("-8"), &n("0.5")).unwrap_err().code, "2201F");
    }
}
