//! End to end: a server under a mixed fast/safe psycopg load is killed with SIGKILL; after a
//! restart every acknowledged safe transaction is present, and every acknowledged fast
//! transaction reports `durable` (and is present) or `lost` (and is absent), with the lost
//! ones a suffix of each epoch.

mod common;

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn sigkill_under_mixed_load() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let acks = tmp.path().join("acks.txt");
    let rounds: usize =
        std::env::var("KILN_E2E_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let mut checked_safe = 0;
    let mut checked_fast = 0;
    let mut lost_fast = 0;
    for round in 0..rounds {
        let mut kiln = common::Kiln::start_in(&data, &[]);
        if round == 0 {
            kiln.psql(&["-c", "CREATE TABLE d (k bigint PRIMARY KEY, w int)"]);
        }
        std::fs::write(&acks, "").unwrap();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/durability_load.py");
        let mut load = Command::new("python3")
            .args([script, acks.to_str().unwrap(), "30", "6", &(round * 100_000_000).to_string()])
            .env("KILN_DSN", kiln.conninfo())
            .stdout(Stdio::null())
            .spawn()
            .expect("python3 runs");
        std::thread::sleep(Duration::from_millis(1500 + 500 * round as u64));
        kiln.crash();
        let _ = load.wait();

        // Restart and check every acknowledged commit.
        let kiln = common::Kiln::start_in(&data, &[]);
        let text = std::fs::read_to_string(&acks).unwrap();
        let mut present_keys = std::collections::HashSet::new();
        for line in kiln.psql(&["-At", "-c", "SELECT k FROM d"]).lines() {
            present_keys.insert(line.trim().to_string());
        }
        let mut fast: Vec<(String, String)> = Vec::new();
        for line in text.lines() {
            let parts: Vec<&str> = line.split_whitespace().collect();
            let [mode, key, txid] = parts[..] else { continue };
            match mode {
                "safe" => {
                    assert!(
                        present_keys.contains(key),
                        "acknowledged safe commit {txid} (key {key}) is missing after SIGKILL"
                    );
                    checked_safe += 1;
                }
                _ => fast.push((key.to_string(), txid.to_string())),
            }
        }
        assert!(!text.is_empty(), "the load acknowledged nothing");
        // Statuses of the fast commits, in batches.
        let mut per_epoch: HashMap<u64, (u64, u64)> = HashMap::new(); // epoch -> (max durable, min lost)
        for chunk in fast.chunks(500) {
            let ids: Vec<String> = chunk.iter().map(|(_, t)| format!("('{t}')")).collect();
            let sql =
                format!("SELECT kiln_txn_status(id) FROM (VALUES {}) AS v (id)", ids.join(","));
            let statuses: Vec<String> =
                kiln.psql(&["-At", "-c", &sql]).lines().map(str::to_string).collect();
            assert_eq!(statuses.len(), chunk.len());
            for ((key, txid), status) in chunk.iter().zip(statuses) {
                let (epoch, csn) = txid
                    .split_once('.')
                    .map(|(e, c)| {
                        (
                            e.parse::<u64>().unwrap(),
                            c.trim_end_matches(['r', 'a']).parse::<u64>().unwrap(),
                        )
                    })
                    .unwrap();
                let entry = per_epoch.entry(epoch).or_insert((0, u64::MAX));
                match status.as_str() {
                    "durable" => {
                        assert!(
                            present_keys.contains(key),
                            "fast commit {txid} reports durable but key {key} is missing"
                        );
                        entry.0 = entry.0.max(csn);
                    }
                    "lost" => {
                        assert!(
                            !present_keys.contains(key),
                            "fast commit {txid} reports lost but key {key} is present"
                        );
                        entry.1 = entry.1.min(csn);
                        lost_fast += 1;
                    }
                    other => {
                        panic!("acknowledged fast commit {txid} reports {other} after restart")
                    }
                }
                checked_fast += 1;
            }
        }
        for (epoch, (max_durable, min_lost)) in per_epoch {
            assert!(max_durable < min_lost, "epoch {epoch}: durable CSN {max_durable} after lost CSN {min_lost}: loss is not a suffix");
        }
        drop(kiln);
    }
    println!("checked {checked_safe} safe and {checked_fast} fast acknowledged commits over {rounds} SIGKILLs; {lost_fast} fast commits lost and reported lost");
    assert!(checked_safe > 0 && checked_fast > 0);
}
