//! A short TPC-C run against the real server, in each commit mode the benchmark measures:
//! every transaction type commits, nothing fails, and all twelve consistency conditions of
//! clause 3.3.2 hold afterwards.

mod common;

use std::time::Duration;

use common::Kiln;
use kiln_tpcc::{driver, Mode, RunConfig, Scale, TxnType};

#[test]
fn tpcc_keeps_every_consistency_condition_in_every_mode() {
    let server = Kiln::start(&[]);
    let conninfo = server.conninfo();
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let scale = Scale::small(1);
        let client = driver::connect(&conninfo).await.expect("connect");
        for (i, mode) in
            [Mode::all_safe(), Mode::new_order_fast(), Mode::all_fast()].into_iter().enumerate()
        {
            // A fresh population per mode, so condition 11's count starts from the load.
            let loaded = kiln_tpcc::load(&client, scale, 7 + i as u64).await.expect("load");
            let cfg = RunConfig {
                conninfo: conninfo.clone(),
                scale,
                load_c: loaded.c,
                terminals: 4,
                duration: Duration::from_secs(3),
                mode,
                seed: 11 + i as u64,
            };
            let r = kiln_tpcc::run(&cfg).await.unwrap_or_else(|e| panic!("{}: {e}", mode.name));
            for t in TxnType::ALL {
                let s = r.stats(t);
                assert_eq!(s.failed, 0, "{}: {} failed after retries", mode.name, t.name());
                // 45% of a few hundred transactions: every type runs at least once.
                assert!(s.committed > 0, "{}: no {} committed", mode.name, t.name());
            }
            let conditions =
                kiln_tpcc::check(&client, &scale, &r.delivered).await.expect("check runs");
            assert_eq!(conditions.len(), 12);
            for c in &conditions {
                assert!(
                    c.holds(),
                    "{}: condition {} ({}) violated by {} rows",
                    mode.name,
                    c.number,
                    c.rule,
                    c.violations
                );
            }
            let delivered: u64 = r.delivered.iter().sum();
            assert!(delivered > 0, "{}: no order delivered", mode.name);
        }
    });
}
