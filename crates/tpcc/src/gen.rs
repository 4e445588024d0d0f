//! The specification's random data (TPC-C clause 4.3.2): strings, NURand, last names.

use rand::Rng;

const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// A random alphanumeric string of `lo..=hi` characters (a-string).
pub fn astring(rng: &mut impl Rng, lo: usize, hi: usize) -> String {
    let n = rng.gen_range(lo..=hi);
    (0..n).map(|_| ALNUM[rng.gen_range(0..ALNUM.len())] as char).collect()
}

/// A random numeric string of `lo..=hi` digits (n-string).
pub fn nstring(rng: &mut impl Rng, lo: usize, hi: usize) -> String {
    let n = rng.gen_range(lo..=hi);
    (0..n).map(|_| (b'0' + rng.gen_range(0..10u8)) as char).collect()
}

/// `i_data` / `s_data`: 26–50 characters, 10% with "ORIGINAL" at a random place.
pub fn data_with_original(rng: &mut impl Rng) -> String {
    let mut s = astring(rng, 26, 50);
    if rng.gen_range(0..10) == 0 {
        let at = rng.gen_range(0..=s.len() - 8);
        s.replace_range(at..at + 8, "ORIGINAL");
    }
    s
}

/// A zip code: four random digits and "11111".
pub fn zip(rng: &mut impl Rng) -> String {
    format!("{}11111", nstring(rng, 4, 4))
}

/// Two random upper-case letters.
pub fn state(rng: &mut impl Rng) -> String {
    (0..2).map(|_| (b'A' + rng.gen_range(0..26u8)) as char).collect()
}

const SYLLABLES: [&str; 10] =
    ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"];

/// The customer last name for a number in 0..=999 (clause 4.3.2.3).
pub fn last_name(n: u32) -> String {
    let n = n % 1000;
    format!(
        "{}{}{}",
        SYLLABLES[(n / 100) as usize],
        SYLLABLES[(n / 10 % 10) as usize],
        SYLLABLES[(n % 10) as usize]
    )
}

/// The run-time constants C of NURand (clause 2.1.6): one set for loading, one for the run,
/// with the run's last-name constant chosen by clause 2.1.6.1's rule against the load's.
#[derive(Clone, Copy, Debug)]
pub struct NuRandC {
    pub c_last: u32,
    pub c_id: u32,
    pub ol_i_id: u32,
}

impl NuRandC {
    pub fn for_load(rng: &mut impl Rng) -> NuRandC {
        NuRandC {
            c_last: rng.gen_range(0..=255),
            c_id: rng.gen_range(0..=1023),
            ol_i_id: rng.gen_range(0..=8191),
        }
    }

    pub fn for_run(load: &NuRandC, rng: &mut impl Rng) -> NuRandC {
        let c_last = loop {
            let c = rng.gen_range(0..=255u32);
            let delta = c.abs_diff(load.c_last);
            if (65..=119).contains(&delta) && delta != 96 && delta != 112 {
                break c;
            }
        };
        NuRandC { c_last, c_id: rng.gen_range(0..=1023), ol_i_id: rng.gen_range(0..=8191) }
    }
}

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y − x + 1)) + x.
pub fn nurand(rng: &mut impl Rng, a: u32, c: u32, x: u32, y: u32) -> u32 {
    ((rng.gen_range(0..=a) | rng.gen_range(x..=y)) + c) % (y - x + 1) + x
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn last_names_and_nurand_stay_in_range() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for _ in 0..10_000 {
            let v = nurand(&mut rng, 8191, 77, 1, 1000);
            assert!((1..=1000).contains(&v));
        }
        let load = NuRandC::for_load(&mut rng);
        let run = NuRandC::for_run(&load, &mut rng);
        let d = run.c_last.abs_diff(load.c_last);
        assert!((65..=119).contains(&d) && d != 96 && d != 112);
        for _ in 0..1000 {
            let s = data_with_original(&mut rng);
            assert!((26..=50).contains(&s.len()));
        }
    }
}
