//! `kiln-tpcc`: load, run and check TPC-C against any server that speaks the PostgreSQL
//! protocol.
//!
//! ```text
//! kiln-tpcc --conninfo "host=127.0.0.1 port=5433 user=kiln dbname=kiln" \
//!     --warehouses 1 --terminals 4 --seconds 30 --mode new-order-fast
//! ```
//!
//! It loads the population (unless `--no-load`), runs the terminals for the given time,
//! prints tpmC and the latency of each transaction type, then checks the twelve consistency
//! conditions and exits non-zero if any does not hold.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use kiln_tpcc::{driver, Mode, RunConfig, Scale, TxnType};

#[derive(Parser, Debug)]
#[command(name = "kiln-tpcc", about = "TPC-C over the PostgreSQL protocol")]
struct Args {
    /// libpq-style connection string.
    #[arg(long, default_value = "host=127.0.0.1 port=5433 user=kiln dbname=kiln")]
    conninfo: String,
    #[arg(long, default_value_t = 1)]
    warehouses: u32,
    /// The reduced population (1,000 items, 300 customers per district).
    #[arg(long)]
    small: bool,
    #[arg(long, default_value_t = 4)]
    terminals: u32,
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// all-safe, new-order-fast or all-fast.
    #[arg(long, default_value = "all-safe")]
    mode: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match go(args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("kiln-tpcc: {e}");
            ExitCode::from(2)
        }
    }
}

async fn go(args: Args) -> Result<bool, String> {
    let mode = match args.mode.as_str() {
        "all-safe" => Mode::all_safe(),
        "new-order-fast" => Mode::new_order_fast(),
        "all-fast" => Mode::all_fast(),
        m => return Err(format!("unknown mode {m:?}: all-safe, new-order-fast or all-fast")),
    };
    let scale =
        if args.small { Scale::small(args.warehouses) } else { Scale::standard(args.warehouses) };
    let client = driver::connect(&args.conninfo).await?;
    let loaded =
        kiln_tpcc::load(&client, scale, args.seed).await.map_err(|e| format!("load: {e}"))?;
    println!("loaded {} rows in {:.1} s", loaded.rows, loaded.took.as_secs_f64());
    let cfg = RunConfig {
        conninfo: args.conninfo.clone(),
        scale,
        load_c: loaded.c,
        terminals: args.terminals,
        duration: Duration::from_secs(args.seconds),
        mode,
        seed: args.seed,
    };
    let r = kiln_tpcc::run(&cfg).await?;
    println!("tpmC {:.0} over {:.1} s ({})", r.tpmc(), r.elapsed.as_secs_f64(), mode.name);
    println!(
        "{:<12} {:>9} {:>7} {:>7} {:>6} {:>9} {:>9} {:>9}",
        "txn", "committed", "rolled", "retries", "failed", "mean ms", "p50 ms", "p99 ms"
    );
    for t in TxnType::ALL {
        let s = r.stats(t);
        println!(
            "{:<12} {:>9} {:>7} {:>7} {:>6} {:>9.2} {:>9.2} {:>9.2}",
            t.name(),
            s.committed,
            s.rolled_back,
            s.retries,
            s.failed,
            s.mean_ms(),
            s.quantile_ms(0.5),
            s.quantile_ms(0.99)
        );
    }
    let conds =
        kiln_tpcc::check(&client, &scale, &r.delivered).await.map_err(|e| format!("check: {e}"))?;
    let mut ok = true;
    for c in &conds {
        println!(
            "condition {:>2}: {} ({} violations) {}",
            c.number,
            if c.holds() { "holds" } else { "VIOLATED" },
            c.violations,
            c.rule
        );
        ok &= c.holds();
    }
    Ok(ok)
}
