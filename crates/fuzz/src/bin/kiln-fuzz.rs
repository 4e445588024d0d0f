//! `kiln-fuzz`: fuzz a fresh `kiln serve` over SQL and the wire protocol for a while.
//!
//! ```sh
//! cargo build --release -p kiln -p kiln-fuzz
//! ./target/release/kiln-fuzz --seconds 3600
//! ```

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

#[derive(Parser)]
#[command(about = "Fuzz a fresh kiln serve with hostile SQL and protocol input")]
struct Args {
    /// The kiln binary to start.
    #[arg(long, default_value = "target/release/kiln")]
    kiln: PathBuf,
    /// How long to run.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Seed (each worker adds its number).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// SQL workers.
    #[arg(long, default_value_t = 3)]
    sql_workers: usize,
    /// Wire-protocol workers.
    #[arg(long, default_value_t = 2)]
    wire_workers: usize,
    /// Fuzz a server already running at this address (for debugging a failure).
    #[arg(long)]
    addr: Option<std::net::SocketAddr>,
}

fn main() {
    let args = Args::parse();
    let config = kiln_fuzz::Config {
        kiln: args.kiln,
        duration: Duration::from_secs(args.seconds),
        seed: args.seed,
        sql_workers: args.sql_workers,
        wire_workers: args.wire_workers,
        answer_timeout: Duration::from_secs(60),
        addr: args.addr,
    };
    match kiln_fuzz::run(&config) {
        Ok(report) => {
            println!(
                "kiln-fuzz: {} s, seed {}: {} SQL statements ({} answered with an error), {} wire inputs, {} health checks, {} failures",
                args.seconds,
                args.seed,
                report.statements,
                report.errors,
                report.wire_inputs,
                report.health_checks,
                report.failures.len()
            );
            for f in &report.failures {
                println!("  FAILURE: {f}");
            }
            if !report.failures.is_empty() {
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("kiln-fuzz: {e}");
            std::process::exit(2);
        }
    }
}
