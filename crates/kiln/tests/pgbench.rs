//! pgbench against a `kiln serve` process: both initialization modes, then the built-in
//! TPC-B script for 10 s with 8 clients in `-M simple` and `-M prepared`, each followed by
//! the balance invariant sum(abalance) = sum(tbalance) = sum(bbalance) = sum(delta).

mod common;

use std::process::Command;

fn pgbench(kiln: &common::Kiln, args: &[&str]) -> String {
    let mut cmd = Command::new(common::require("pgbench"));
    kiln.pg_env(&mut cmd);
    cmd.args(args);
    let out = cmd.output().expect("pgbench runs");
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "pgbench {args:?} failed:\n{text}");
    text
}

fn check_invariant(kiln: &common::Kiln, expect_history: bool) {
    let v = kiln.query_value(
        "SELECT (SELECT sum(abalance) FROM pgbench_accounts) || ',' || (SELECT sum(tbalance) FROM pgbench_tellers) || ',' || \
         (SELECT sum(bbalance) FROM pgbench_branches) || ',' || (SELECT coalesce(sum(delta), 0) FROM pgbench_history) || ',' || \
         (SELECT count(*) FROM pgbench_history)",
    );
    let parts: Vec<i64> = v.split(',').map(|p| p.parse().expect("a number")).collect();
    assert_eq!(parts.len(), 5, "{v}");
    assert!(
        parts[0] == parts[1] && parts[1] == parts[2] && parts[2] == parts[3],
        "balances disagree: {v}"
    );
    if expect_history {
        assert!(parts[4] > 0, "no transactions ran: {v}");
    }
}

fn processed(out: &str) -> u64 {
    out.lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
        .and_then(|n| n.split('/').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no transaction count in:\n{out}"))
}

#[test]
fn init_and_tpcb() {
    let kiln = common::Kiln::start(&[]);
    // Client-side generation (COPY) and server-side generation (generate_series).
    let out = pgbench(&kiln, &["-i", "-s", "1"]);
    assert!(out.contains("client-side generate"), "{out}");
    assert_eq!(kiln.query_value("SELECT count(*) FROM pgbench_accounts"), "100000");
    assert_eq!(kiln.query_value("SELECT count(*) FROM pgbench_tellers"), "10");
    check_invariant(&kiln, false);
    let out = pgbench(&kiln, &["-i", "-s", "1", "-I", "dtGvp"]);
    assert!(out.contains("server-side generate"), "{out}");
    assert_eq!(kiln.query_value("SELECT count(*) FROM pgbench_accounts"), "100000");
    assert_eq!(kiln.query_value("SELECT count(DISTINCT bid) FROM pgbench_accounts"), "1");
    // The primary keys pgbench added are used.
    let plan =
        kiln.psql(&["-At", "-c", "EXPLAIN SELECT abalance FROM pgbench_accounts WHERE aid = 7"]);
    assert!(plan.contains("Index Lookup on pgbench_accounts using primary key"), "{plan}");

    for mode in ["simple", "prepared"] {
        pgbench(&kiln, &["-i", "-s", "1", "-q"]);
        let out = pgbench(&kiln, &["-c", "8", "-j", "2", "-T", "10", "-M", mode]);
        println!("{mode}:\n{out}");
        assert!(out.contains("number of failed transactions: 0"), "{out}");
        let n = processed(&out);
        assert!(n > 0);
        check_invariant(&kiln, true);
        assert_eq!(kiln.query_value("SELECT count(*) FROM pgbench_history"), n.to_string());
    }
}
