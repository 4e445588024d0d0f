//! `kiln-crash-test --kills N [--seed S]`: the crash test at any scale (CI runs 30 kills as a
//! cargo test; this runs thousands). Needs the worker built alongside:
//! `cargo run --release -p kiln-crashtest --bin kiln-crash-test -- --kills 2000`.

use std::path::PathBuf;

use clap::Parser;

/// Kill a Kiln process at random moments and check every recovery.
#[derive(Parser)]
struct Args {
    /// How many kill-and-recover cycles to run.
    #[arg(long, default_value_t = 1000)]
    kills: u64,
    /// Seed of the random kill times and workloads.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Start over in a fresh directory every this many kills (0: never).
    #[arg(long, default_value_t = 250)]
    fresh_every: u64,
}

fn main() {
    let args = Args::parse();
    let worker: PathBuf = std::env::current_exe()
        .expect("own path")
        .with_file_name(format!("kiln-crash-worker{}", std::env::consts::EXE_SUFFIX));
    if !worker.exists() {
        eprintln!(
            "missing {}; build it with: cargo build --release -p kiln-crashtest",
            worker.display()
        );
        std::process::exit(2);
    }
    let started = std::time::Instant::now();
    let summary = kiln_crashtest::run(&worker, args.kills, args.seed, args.fresh_every, |s| {
        if s.kills % 100 == 0 {
            eprintln!(
                "{} kills, {} acknowledged transactions checked so far",
                s.kills, s.acknowledged
            );
        }
    });
    println!(
        "{} kills in {:.1} s: {} acknowledged transactions checked ({} safe), {} acknowledged fast transactions reported lost and absent; every guarantee held",
        summary.kills,
        started.elapsed().as_secs_f64(),
        summary.acknowledged,
        summary.safe,
        summary.fast_lost
    );
}
