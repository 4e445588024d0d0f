//! The network address types `inet` (a host address with an optional netmask length) and
//! `cidr` (a network: no bits set right of its mask), as PostgreSQL reads, shows, orders and
//! computes with them.

use std::cmp::Ordering;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::error::{code, Result, SqlError};
use crate::types::Value;

/// An IPv4 or IPv6 address with its netmask length; `cidr` marks a value of type cidr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Inet {
    /// IPv6 (else IPv4, in the first 4 bytes of `addr`).
    pub v6: bool,
    /// The netmask length, 0 to 32 or 128.
    pub bits: u8,
    /// The address (network byte order); bytes past an IPv4 address's four are zero.
    pub addr: [u8; 16],
    /// A cidr value (its output always shows the mask).
    pub cidr: bool,
}

fn invalid(kind: &str, text: &str) -> SqlError {
    SqlError::new(code::INVALID_TEXT, format!("invalid input syntax for type {kind}: \"{text}\""))
}

impl Inet {
    /// The address's length in bits (32 or 128).
    pub fn max_bits(&self) -> u8 {
        if self.v6 {
            128
        } else {
            32
        }
    }

    /// The address's bytes (4 or 16).
    pub fn bytes(&self) -> &[u8] {
        if self.v6 {
            &self.addr
        } else {
            &self.addr[..4]
        }
    }

    /// PostgreSQL's family number: 4 or 6.
    pub fn family(&self) -> i64 {
        if self.v6 {
            6
        } else {
            4
        }
    }

    /// Reads PostgreSQL's text form: `a.b.c.d[/n]` (with a mask, fewer octets may be
    /// given, the rest zero; a cidr without a mask takes the classful one), or an IPv6
    /// address `[/n]`. A cidr with bits set right of its mask is refused, as in PostgreSQL.
    pub fn parse(text: &str, cidr: bool) -> Result<Inet> {
        let kind = if cidr { "cidr" } else { "inet" };
        let (address, mask) = match text.split_once('/') {
            Some((a, m)) => (a, Some(m)),
            None => (text, None),
        };
        let mask = match mask {
            Some(m) if !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()) && m.len() <= 3 => {
                Some(m.parse::<u16>().map_err(|_| invalid(kind, text))?)
            }
            Some(_) => return Err(invalid(kind, text)),
            None => None,
        };
        let mut out = Inet { v6: false, bits: 32, addr: [0; 16], cidr };
        if address.contains(':') {
            let a: Ipv6Addr = address.parse().map_err(|_| invalid(kind, text))?;
            out.v6 = true;
            out.addr = a.octets();
            out.bits = 128;
        } else {
            let parts: Vec<&str> = address.split('.').collect();
            if parts.is_empty() || parts.len() > 4 || (parts.len() < 4 && mask.is_none() && !cidr) {
                return Err(invalid(kind, text));
            }
            for (i, p) in parts.iter().enumerate() {
                if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(invalid(kind, text));
                }
                out.addr[i] = p.parse::<u8>().map_err(|_| invalid(kind, text))?;
            }
            if mask.is_none() && cidr {
                // The classful mask, widened to the octets given (PostgreSQL's rule).
                let first = out.addr[0];
                let mut bits: u8 = match first {
                    240.. => 32,
                    224.. => 8,
                    192.. => 24,
                    128.. => 16,
                    _ => 8,
                };
                if (bits as usize) < parts.len() * 8 {
                    bits = parts.len() as u8 * 8;
                }
                // A class D network given by its first octet alone.
                if bits == 8 && first == 224 {
                    bits = 4;
                }
                out.bits = bits;
            }
        }
        if let Some(m) = mask {
            if m > out.max_bits() as u16 {
                return Err(invalid(kind, text));
            }
            out.bits = m as u8;
        }
        if cidr && out.masked() != out.addr {
            return Err(SqlError::new(
                code::INVALID_TEXT,
                format!("invalid cidr value: \"{text}\""),
            )
            .detail("Value has bits set to right of mask."));
        }
        Ok(out)
    }

    /// The address with the bits right of the mask cleared.
    fn masked(&self) -> [u8; 16] {
        mask_bytes(&self.addr, self.bits, self.max_bits(), false)
    }

    /// The address alone, as `host()` shows it.
    pub fn host(&self) -> String {
        if self.v6 {
            format_v6(&self.addr)
        } else {
            Ipv4Addr::new(self.addr[0], self.addr[1], self.addr[2], self.addr[3]).to_string()
        }
    }

    /// PostgreSQL's output: the address, and the mask unless an inet's covers it all.
    pub fn to_text(&self) -> String {
        if !self.cidr && self.bits == self.max_bits() {
            self.host()
        } else {
            format!("{}/{}", self.host(), self.bits)
        }
    }

    /// `text(inet)`: the address and its mask, always.
    pub fn full_text(&self) -> String {
        format!("{}/{}", self.host(), self.bits)
    }

    /// `abbrev()`: an IPv4 cidr without its trailing zero octets; an inet as shown; an IPv6
    /// cidr whole (PostgreSQL may leave off some of its zero groups).
    pub fn abbrev(&self) -> String {
        if !self.cidr {
            return self.to_text();
        }
        if self.v6 {
            return format!("{}/{}", self.host(), self.bits);
        }
        // Octets up to the last one the mask reaches or that holds a bit.
        let mut n = (self.bits as usize).div_ceil(8);
        while n < 4 && self.addr[n..4].iter().any(|b| *b != 0) {
            n += 1;
        }
        let n = n.max(1);
        let octets: Vec<String> = self.addr[..n].iter().map(|b| b.to_string()).collect();
        format!("{}/{}", octets.join("."), self.bits)
    }

    /// As a cidr: the bits right of the mask cleared.
    pub fn to_cidr(self) -> Inet {
        Inet { addr: self.masked(), cidr: true, ..self }
    }

    /// As an inet.
    pub fn to_inet(self) -> Inet {
        Inet { cidr: false, ..self }
    }

    /// `network()`: the network part, as a cidr.
    pub fn network(&self) -> Inet {
        self.to_cidr()
    }

    /// `broadcast()`: the host bits set.
    pub fn broadcast(&self) -> Inet {
        Inet {
            addr: mask_bytes(&self.addr, self.bits, self.max_bits(), true),
            cidr: false,
            ..*self
        }
    }

    /// `netmask()` (`host` false) or `hostmask()` (true), as a full-length inet.
    pub fn mask(&self, host: bool) -> Inet {
        let mut addr = [0u8; 16];
        let n = self.max_bits() as usize / 8;
        for (i, byte) in addr.iter_mut().enumerate().take(n) {
            let covered = (self.bits as usize).saturating_sub(i * 8).min(8);
            let net = if covered == 0 { 0 } else { 0xffu8 << (8 - covered) };
            *byte = if host { !net } else { net };
        }
        Inet { addr, bits: self.max_bits(), cidr: false, ..*self }
    }

    /// `set_masklen()`: a cidr's host bits are cleared.
    pub fn set_masklen(&self, bits: i64) -> Result<Inet> {
        let bits = if bits == -1 { self.max_bits() as i64 } else { bits };
        if !(0..=self.max_bits() as i64).contains(&bits) {
            return Err(SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                format!("invalid mask length: {bits}"),
            ));
        }
        let out = Inet { bits: bits as u8, ..*self };
        Ok(if self.cidr { out.to_cidr() } else { out })
    }

    /// PostgreSQL's order: family, the common prefix, the mask length, the address.
    pub fn cmp_network(&self, other: &Inet) -> Ordering {
        if self.v6 != other.v6 {
            return self.v6.cmp(&other.v6);
        }
        let common = self.bits.min(other.bits);
        let max = self.max_bits();
        mask_bytes(&self.addr, common, max, false)
            .cmp(&mask_bytes(&other.addr, common, max, false))
            .then(self.bits.cmp(&other.bits))
            .then(self.addr.cmp(&other.addr))
    }

    /// A byte string that sorts as [`Inet::cmp_network`] orders: family, the network
    /// address, the mask length, the address.
    pub fn key(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(34);
        out.push(self.v6 as u8);
        out.extend_from_slice(&self.masked()[..self.bytes().len()]);
        out.push(self.bits);
        out.extend_from_slice(self.bytes());
        out
    }

    /// `a << b` (`strict`) or `a <<= b`: whether `b`'s network holds `a`'s.
    pub fn within(&self, other: &Inet, strict: bool) -> bool {
        self.v6 == other.v6
            && (if strict { self.bits > other.bits } else { self.bits >= other.bits })
            && mask_bytes(&self.addr, other.bits, self.max_bits(), false) == other.masked()
    }

    /// `a && b`: whether either network holds the other.
    pub fn overlaps(&self, other: &Inet) -> bool {
        self.v6 == other.v6 && {
            let common = self.bits.min(other.bits);
            let max = self.max_bits();
            mask_bytes(&self.addr, common, max, false)
                == mask_bytes(&other.addr, common, max, false)
        }
    }

    /// `inet_merge()`: the smallest network holding both (22023 across families).
    pub fn merge(&self, other: &Inet) -> Result<Inet> {
        if self.v6 != other.v6 {
            return Err(SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                "cannot merge addresses from different families",
            ));
        }
        let mut bits = self.bits.min(other.bits);
        let (a, b) = (self.bytes(), other.bytes());
        let mut same = 0u8;
        for (x, y) in a.iter().zip(b) {
            let d = x ^ y;
            if d == 0 {
                same += 8;
            } else {
                same += d.leading_zeros() as u8;
                break;
            }
        }
        bits = bits.min(same);
        Ok(Inet { bits, cidr: true, ..*self }.to_cidr())
    }

    /// The address as an unsigned integer (IPv4 in the low 32 bits).
    fn number(&self) -> u128 {
        let mut n = 0u128;
        for b in self.bytes() {
            n = (n << 8) | *b as u128;
        }
        n
    }

    fn with_number(&self, n: u128) -> Inet {
        let mut addr = [0u8; 16];
        let len = self.bytes().len();
        for (i, byte) in addr.iter_mut().enumerate().take(len) {
            *byte = (n >> (8 * (len - 1 - i))) as u8;
        }
        Inet { addr, ..*self }
    }

    /// `inet + n` / `inet - n`: 22003 past either end of the family's addresses.
    pub fn add(&self, n: i64) -> Result<Inet> {
        let max: u128 = if self.v6 { u128::MAX } else { u32::MAX as u128 };
        let now = self.number();
        let out = if n >= 0 {
            now.checked_add(n as u128)
        } else {
            now.checked_sub(n.unsigned_abs() as u128)
        };
        match out {
            Some(v) if v <= max => {
                let r = self.with_number(v);
                // A cidr result must still be a network.
                if self.cidr && r.masked() != r.addr {
                    return Err(out_of_range());
                }
                Ok(r)
            }
            _ => Err(out_of_range()),
        }
    }

    /// `inet - inet`: the difference of the addresses (22023 across families).
    pub fn minus(&self, other: &Inet) -> Result<i64> {
        if self.v6 != other.v6 {
            return Err(SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                "cannot subtract inet values of different sizes",
            ));
        }
        let (a, b) = (self.number() as i128, other.number() as i128);
        let d = a.checked_sub(b).ok_or_else(out_of_range)?;
        i64::try_from(d).map_err(|_| out_of_range())
    }

    /// `~inet`, `inet & inet`, `inet | inet`.
    pub fn bitwise(&self, other: Option<&Inet>, op: char) -> Result<Inet> {
        if let Some(o) = other {
            if o.v6 != self.v6 {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER_VALUE,
                    format!(
                        "cannot {} inet values of different sizes",
                        if op == '&' { "AND" } else { "OR" }
                    ),
                ));
            }
        }
        let mut addr = self.addr;
        for (i, b) in addr.iter_mut().enumerate().take(self.bytes().len()) {
            *b = match (op, other) {
                ('&', Some(o)) => *b & o.addr[i],
                ('|', Some(o)) => *b | o.addr[i],
                _ => !*b,
            };
        }
        Ok(Inet { addr, cidr: false, ..*self })
    }

    /// PostgreSQL's binary form: family (2 for IPv4, 3 for IPv6), mask length, the cidr
    /// flag, the address length and the address.
    pub fn to_binary(&self) -> Vec<u8> {
        let mut out = vec![if self.v6 { 3 } else { 2 }, self.bits, self.cidr as u8];
        out.push(self.bytes().len() as u8);
        out.extend_from_slice(self.bytes());
        out
    }

    /// Reads the binary form ([`Inet::to_binary`]).
    pub fn from_binary(b: &[u8], cidr: bool) -> Option<Inet> {
        let (&family, rest) = b.split_first()?;
        let (&bits, rest) = rest.split_first()?;
        let (_, rest) = rest.split_first()?;
        let (&len, addr) = rest.split_first()?;
        let v6 = match (family, len) {
            (2, 4) => false,
            (3, 16) => true,
            _ => return None,
        };
        if addr.len() != len as usize || bits > if v6 { 128 } else { 32 } {
            return None;
        }
        let mut a = [0u8; 16];
        a[..addr.len()].copy_from_slice(addr);
        let out = Inet { v6, bits, addr: a, cidr };
        (!cidr || out.masked() == out.addr).then_some(out)
    }
}

/// Evaluates a network operator or function on non-NULL arguments.
pub fn call(f: crate::expr::NetFunc, args: &[Value]) -> Result<Value> {
    use crate::expr::NetFunc as F;
    if args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let net = |i: usize| -> Result<Inet> {
        match args.get(i) {
            Some(Value::Inet(a)) => Ok(*a),
            Some(Value::Text(t)) => Inet::parse(t, false),
            other => Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!("expected an inet value, not {other:?}"),
            )),
        }
    };
    let int = |i: usize| -> Result<i64> {
        match args.get(i) {
            Some(Value::Int(n)) => Ok(*n),
            other => Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!("expected an integer, not {other:?}"),
            )),
        }
    };
    Ok(match f {
        F::Within(strict) => Value::Bool(net(0)?.within(&net(1)?, strict)),
        F::Contains(strict) => Value::Bool(net(1)?.within(&net(0)?, strict)),
        F::Overlaps => Value::Bool(net(0)?.overlaps(&net(1)?)),
        F::Add(true) => Value::Inet(net(0)?.add(int(1)?)?),
        F::Add(false) => {
            let n = int(1)?.checked_neg().ok_or_else(out_of_range)?;
            Value::Inet(net(0)?.add(n)?)
        }
        F::Difference => Value::Int(net(0)?.minus(&net(1)?)?),
        F::And => Value::Inet(net(0)?.bitwise(Some(&net(1)?), '&')?),
        F::Or => Value::Inet(net(0)?.bitwise(Some(&net(1)?), '|')?),
        F::Not => Value::Inet(net(0)?.bitwise(None, '~')?),
        F::Host => Value::Text(net(0)?.host()),
        F::Text => Value::Text(net(0)?.full_text()),
        F::Abbrev => Value::Text(net(0)?.abbrev()),
        F::Masklen => Value::Int(net(0)?.bits as i64),
        F::SetMasklen => Value::Inet(net(0)?.set_masklen(int(1)?)?),
        F::Network => Value::Inet(net(0)?.network()),
        F::Broadcast => Value::Inet(net(0)?.broadcast()),
        F::Netmask => Value::Inet(net(0)?.mask(false)),
        F::Hostmask => Value::Inet(net(0)?.mask(true)),
        F::Family => Value::Int(net(0)?.family()),
        F::SameFamily => Value::Bool(net(0)?.v6 == net(1)?.v6),
        F::Merge => Value::Inet(net(0)?.merge(&net(1)?)?),
    })
}

impl From<std::net::IpAddr> for Inet {
    /// A host address (the whole address as its mask); an IPv4-mapped IPv6 address (a
    /// dual-stack socket's view of an IPv4 client) as the IPv4 address it maps.
    fn from(ip: std::net::IpAddr) -> Inet {
        let ip = match ip {
            std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, std::net::IpAddr::V4),
            v4 => v4,
        };
        let mut addr = [0u8; 16];
        match ip {
            std::net::IpAddr::V4(v4) => {
                addr[..4].copy_from_slice(&v4.octets());
                Inet { v6: false, bits: 32, addr, cidr: false }
            }
            std::net::IpAddr::V6(v6) => {
                Inet { v6: true, bits: 128, addr: v6.octets(), cidr: false }
            }
        }
    }
}

fn out_of_range() -> SqlError {
    SqlError::new(code::NUMERIC_OUT_OF_RANGE, "result is out of range")
}

/// `addr` with the bits right of `bits` cleared, or set (`set`), within `max` bits.
fn mask_bytes(addr: &[u8; 16], bits: u8, max: u8, set: bool) -> [u8; 16] {
    let mut out = *addr;
    for (i, b) in out.iter_mut().enumerate().take(max as usize / 8) {
        let covered = (bits as usize).saturating_sub(i * 8).min(8);
        let net = if covered == 0 { 0 } else { 0xffu8 << (8 - covered) };
        *b = if set { *b | !net } else { *b & net };
    }
    out
}

/// An IPv6 address as PostgreSQL writes it: compressed, an IPv4 tail for the mapped and
/// compatible forms.
fn format_v6(addr: &[u8; 16]) -> String {
    let a = Ipv6Addr::from(*addr);
    let s = a.segments();
    // `::a.b.c.d` (IPv4-compatible, not `::` or `::1`), which Rust writes in hex.
    if s[..6].iter().all(|x| *x == 0) && (s[6] != 0 || s[7] > 1) {
        return format!("::{}.{}.{}.{}", addr[12], addr[13], addr[14], addr[15]);
    }
    a.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inet(s: &str) -> Inet {
        Inet::parse(s, false).unwrap()
    }

    fn cidr(s: &str) -> Inet {
        Inet::parse(s, true).unwrap()
    }

    #[test]
    fn reads_and_shows_as_postgresql() {
        assert_eq!(inet("1.2.3.4").to_text(), "1.2.3.4");
        assert_eq!(inet("1.2.3.4/32").to_text(), "1.2.3.4");
        assert_eq!(inet("1.2.3.4/24").to_text(), "1.2.3.4/24");
        assert_eq!(inet("10/8").to_text(), "10.0.0.0/8");
        assert_eq!(inet("2001:DB8::1/64").to_text(), "2001:db8::1/64");
        assert_eq!(inet("::ffff:1.2.3.4").to_text(), "::ffff:1.2.3.4");
        assert_eq!(inet("::1.2.3.4").to_text(), "::1.2.3.4");
        assert_eq!(inet("::1").to_text(), "::1");
        assert_eq!(cidr("10").to_text(), "10.0.0.0/8");
        assert_eq!(cidr("192.168.1").to_text(), "192.168.1.0/24");
        assert_eq!(cidr("192.168.1.0").to_text(), "192.168.1.0/32");
        assert_eq!(cidr("128.1").to_text(), "128.1.0.0/16");
        assert_eq!(cidr("224").to_text(), "224.0.0.0/4");
        assert_eq!(cidr("::1").to_text(), "::1/128");
        for bad in ["10", "10.1.2", "1.2.3.4/33", " 1.2.3.4", "abc", "1.2.3.256", "1.2.3.4/", ""] {
            assert!(Inet::parse(bad, false).is_err(), "{bad}");
        }
        assert!(Inet::parse("1.2.3.4/24", true).is_err());
    }

    #[test]
    fn functions_agree_with_postgresql() {
        let a = inet("1.2.3.4/24");
        assert_eq!(a.network().to_text(), "1.2.3.0/24");
        assert_eq!(a.broadcast().to_text(), "1.2.3.255/24");
        assert_eq!(a.mask(false).to_text(), "255.255.255.0");
        assert_eq!(a.mask(true).to_text(), "0.0.0.255");
        assert_eq!(a.set_masklen(16).unwrap().to_text(), "1.2.3.4/16");
        assert_eq!(cidr("10.1.0.0/16").abbrev(), "10.1/16");
        assert_eq!(inet("1.2.3.4").add(300).unwrap().to_text(), "1.2.4.48");
        assert_eq!(inet("1.2.3.4").add(-5).unwrap().to_text(), "1.2.2.255");
        assert!(inet("255.255.255.255").add(1).is_err());
        assert_eq!(inet("1.2.3.4").minus(&inet("1.2.3.0")).unwrap(), 4);
        assert_eq!(inet("1.2.3.4").bitwise(None, '~').unwrap().to_text(), "254.253.252.251");
        let merged = inet("192.168.1.5/24").merge(&inet("192.168.2.5/24")).unwrap();
        assert_eq!(merged.to_text(), "192.168.0.0/22");
        assert!(inet("1.2.3.4").within(&inet("1.2.3.0/24"), true));
        assert!(inet("1.2.3.0/24").within(&inet("1.2.3.0/24"), false));
        assert!(!inet("1.2.3.0/24").within(&inet("1.2.3.0/24"), true));
        assert!(inet("1.2.3.0/24").overlaps(&inet("1.2.0.0/16")));
    }

    #[test]
    fn keys_sort_as_the_comparison_orders() {
        let values = [
            "10.0.0.0/8",
            "10.0.0.0/16",
            "10.0.0.1",
            "10.1.0.0/16",
            "1.2.3.0/24",
            "1.2.3.0/25",
            "1.2.3.4",
            "0.0.0.0/0",
            "::1",
            "::/0",
            "255.255.255.255",
        ];
        let mut v: Vec<Inet> = values.iter().map(|s| inet(s)).collect();
        for a in &v {
            for b in &v {
                assert_eq!(a.key().cmp(&b.key()), a.cmp_network(b), "{a:?} {b:?}");
            }
        }
        v.sort_by(|a, b| a.cmp_network(b));
        assert_eq!(v.first().unwrap().to_text(), "0.0.0.0/0");
        assert_eq!(v.last().unwrap().to_text(), "::1");
    }

    #[test]
    fn binary_form_round_trips() {
        for s in ["1.2.3.4/24", "::1", "2001:db8::/32"] {
            let a = inet(s);
            assert_eq!(Inet::from_binary(&a.to_binary(), false), Some(a));
        }
        assert_eq!(Inet::from_binary(&[2, 24, 1, 4, 1, 2, 3, 4], true), None);
    }
}
