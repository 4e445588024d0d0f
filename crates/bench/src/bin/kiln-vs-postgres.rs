//! `kiln-vs-postgres`: Kiln's server against a stock PostgreSQL, both driven by pgbench
//! `-M prepared`, in one run on one machine.
//!
//! ```sh
//! cargo run --release -p kiln-bench --bin kiln-vs-postgres -- --out docs/benchmarks.md
//! ```
//!
//! It installs PostgreSQL 15 and gnuplot from Debian if they are missing, builds `kiln`,
//! starts a throwaway PostgreSQL cluster and Kiln servers on free loopback ports (data on the
//! same disk, under `target/bench-work`), and runs:
//!
//! 1. The ED paper's Fig. 6: one client updating a random row of a 1,000,000-row `kv`
//!    table while one client reads a random row; Kiln fast / safe / classic against
//!    PostgreSQL `synchronous_commit` on / off.
//! 2. The paper's Fig. 8: 256 rows, 128 clients, 95% of updates on 12 hot rows,
//!    SERIALIZABLE, `--max-tries=5`, offered load swept with `-R`.
//! 3. pgbench's built-in TPC-B (scale 10, 8 clients).
//! 4. TPC-C, the paper's Fig. 9, with Kiln's own driver (`kiln-tpcc`): W warehouses loaded
//!    into each system (load time; Kiln's memory per warehouse), then Kiln all-safe, Kiln
//!    with New-Order fast and the rest safe, Kiln all-fast, PostgreSQL `synchronous_commit`
//!    on and off, each run repeatedly; the twelve consistency conditions are checked after
//!    every run, and any violation stops the benchmark.
//!
//! `--sections` picks a subset. It writes the tables, the ratios the project targets, and
//! PNG plots of Fig. 8 and Fig. 9.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Parser;
use kiln_bench::*;
use kiln_tpcc::{Mode, RunConfig, Scale, TxnType};

#[derive(Parser)]
#[command(about = "Kiln vs PostgreSQL with pgbench")]
struct Args {
    /// Where to write the report (Markdown); the Fig. 8 plot goes next to it.
    #[arg(long, default_value = "docs/benchmarks.md")]
    out: PathBuf,
    /// Seconds per Fig. 6 run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Runs per configuration and point (the report gives medians across runs).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Seconds per Fig. 8 run.
    #[arg(long, default_value_t = 5)]
    fig8_seconds: u64,
    /// Offered loads (TPS) for Fig. 8.
    #[arg(long, value_delimiter = ',', default_value = "1000,2000,4000,8000,16000,32000,64000")]
    rates: Vec<u64>,
    /// Seconds per TPC-B run.
    #[arg(long, default_value_t = 10)]
    tpcb_seconds: u64,
    /// TPC-B scale.
    #[arg(long, default_value_t = 10)]
    tpcb_scale: u32,
    /// Rows of the Fig. 6 table.
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// Sections to run: fig6, fig8, tpcb, tpcc.
    #[arg(long, value_delimiter = ',', default_value = "fig6,fig8,tpcb,tpcc")]
    sections: Vec<String>,
    /// TPC-C warehouses (the specification's population per warehouse).
    #[arg(long, default_value_t = 1)]
    tpcc_warehouses: u32,
    /// TPC-C terminals (connections), spread over the warehouses.
    #[arg(long, default_value_t = 4)]
    tpcc_terminals: u32,
    /// Seconds per TPC-C run.
    #[arg(long, default_value_t = 20)]
    tpcc_seconds: u64,
}

struct Fig6Row {
    name: &'static str,
    update: Stats,
    read: Stats,
    update_tps: f64,
}

fn fig6(args: &Args, s: &dyn Server, name: &'static str, options: &str, work: &Path) -> Fig6Row {
    let mut ups = Vec::new();
    let mut reads = Vec::new();
    let mut tps = Vec::new();
    for rep in 0..args.repeat {
        let secs = args.seconds.to_string();
        let one_client = |script: &str, prefix: String| {
            [
                "-n",
                "-M",
                "prepared",
                "-c",
                "1",
                "-j",
                "1",
                "-T",
                &secs,
                "-f",
                script,
                "-l",
                "--log-prefix",
                &prefix,
            ]
            .map(String::from)
        };
        let up = pgbench(s, options, work, &one_client("update.sql", format!("up{rep}")));
        let rd = pgbench(s, options, work, &one_client("select.sql", format!("rd{rep}")));
        let up_out = finish(up);
        finish(rd);
        tps.push(field(&up_out, "tps = ").unwrap_or(0.0));
        ups.push(stats(latencies(work, &format!("up{rep}"))));
        reads.push(stats(latencies(work, &format!("rd{rep}"))));
    }
    let row = Fig6Row {
        name,
        update: median_stats(&ups),
        read: median_stats(&reads),
        update_tps: median(tps),
    };
    eprintln!("fig6 {name}: update {:?} read {:?}", row.update, row.read);
    row
}

fn fig8(
    args: &Args,
    s: &dyn Server,
    name: &str,
    options: &str,
    work: &Path,
) -> Vec<(u64, f64, f64)> {
    let mut points = Vec::new();
    for &rate in &args.rates {
        let mut tps_runs = Vec::new();
        let mut fail_runs = Vec::new();
        for _ in 0..args.repeat {
            psql(s, "UPDATE kvhot SET v = 0");
            let out = finish(pgbench(
                s,
                options,
                work,
                &[
                    "-n",
                    "-M",
                    "prepared",
                    "-c",
                    "128",
                    "-j",
                    "2",
                    "-T",
                    &args.fig8_seconds.to_string(),
                    "-R",
                    &rate.to_string(),
                    "--max-tries=5",
                    "-f",
                    "hot.sql",
                ]
                .map(String::from),
            ));
            let processed =
                field(&out, "number of transactions actually processed:").unwrap_or(0.0);
            let failed = field(&out, "number of failed transactions:").unwrap_or(0.0);
            tps_runs.push(field(&out, "tps = ").unwrap_or(0.0));
            fail_runs.push(if processed + failed > 0.0 {
                100.0 * failed / (processed + failed)
            } else {
                0.0
            });
        }
        let (tps, fail_pct) = (median(tps_runs), median(fail_runs));
        eprintln!("fig8 {name} offered {rate}: committed {tps:.0} TPS, failed {fail_pct:.1}%");
        points.push((rate, tps, fail_pct));
    }
    points
}

struct TpcbRow {
    name: &'static str,
    tps: f64,
    lat: Stats,
}

fn tpcb(args: &Args, s: &dyn Server, name: &'static str, options: &str, work: &Path) -> TpcbRow {
    let mut tps = Vec::new();
    let mut lats = Vec::new();
    for _ in 0..args.repeat {
        let out = finish(pgbench(
            s,
            options,
            work,
            &[
                "-n",
                "-M",
                "prepared",
                "-c",
                "8",
                "-j",
                "2",
                "-T",
                &args.tpcb_seconds.to_string(),
                "-l",
                "--log-prefix",
                "tpcb",
            ]
            .map(String::from),
        ));
        tps.push(field(&out, "tps = ").unwrap_or(0.0));
        lats.push(stats(latencies(work, "tpcb")));
    }
    let row = TpcbRow { name, tps: median(tps), lat: median_stats(&lats) };
    eprintln!("tpcb {name}: {:.0} TPS {:?}", row.tps, row.lat);
    row
}

fn setup_tables(s: &dyn Server, rows: u64) {
    psql(s, "DROP TABLE IF EXISTS kv");
    psql(s, "DROP TABLE IF EXISTS kvhot");
    psql(s, "CREATE TABLE kv (k int PRIMARY KEY, v int NOT NULL)");
    // In chunks, so no single transaction is huge.
    let chunk = 250_000;
    let mut start = 1;
    while start <= rows {
        let end = (start + chunk - 1).min(rows);
        psql(s, &format!("INSERT INTO kv SELECT g, 0 FROM generate_series({start}, {end}) AS g"));
        start = end + 1;
    }
    psql(s, "CREATE TABLE kvhot (k int PRIMARY KEY, v int NOT NULL)");
    psql(s, "INSERT INTO kvhot SELECT g, 0 FROM generate_series(1, 256) AS g");
}

fn ms(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

fn main() {
    let args = Args::parse();
    ensure_tools();
    let root = root();
    eprintln!("building kiln (release)");
    run(Command::new("cargo").current_dir(&root).args(["build", "--release", "-q", "-p", "kiln"]));
    let work = root.join("target/bench-work");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    if is_root() {
        let _ = Command::new("chmod").args(["777", work.to_str().unwrap()]).status();
    }
    std::fs::write(
        work.join("update.sql"),
        format!("\\set k random(1, {})\nUPDATE kv SET v = v + 1 WHERE k = :k;\n", args.rows),
    )
    .unwrap();
    std::fs::write(
        work.join("select.sql"),
        format!("\\set k random(1, {})\nSELECT v FROM kv WHERE k = :k;\n", args.rows),
    )
    .unwrap();
    std::fs::write(
        work.join("hot.sql"),
        "\\set r random(1, 100)\n\\if :r <= 95\n\\set k random(1, 12)\n\\else\n\\set k random(13, 256)\n\\endif\nUPDATE kvhot SET v = v + 1 WHERE k = :k;\n",
    )
    .unwrap();
    let started = Instant::now();
    let floor = fdatasync_floor(&work);
    eprintln!("fdatasync floor {floor:?}");

    const FAST: &str = "-c synchronous_commit=off";
    const SAFE: &str = "-c synchronous_commit=on";
    const SER_FAST: &str =
        "-c synchronous_commit=off -c default_transaction_isolation=serializable";
    const SER_SAFE: &str = "-c synchronous_commit=on -c default_transaction_isolation=serializable";

    let on = |section: &str| args.sections.iter().any(|s| s == section);
    let mut f6 = Vec::new();
    let mut f8: BTreeMap<&'static str, Vec<(u64, f64, f64)>> = BTreeMap::new();
    let mut tb = Vec::new();
    let mut tc = Tpcc::default();
    // Every workload on one server, in its safe (on) and fast (off) modes.
    let mut all_workloads = |s: &dyn Server, safe: &'static str, fast: &'static str| {
        if on("fig6") || on("fig8") {
            setup_tables(s, args.rows);
        }
        if on("fig6") {
            f6.push(fig6(&args, s, safe, SAFE, &work));
            f6.push(fig6(&args, s, fast, FAST, &work));
        }
        if on("fig8") {
            f8.insert(safe, fig8(&args, s, safe, SER_SAFE, &work));
            f8.insert(fast, fig8(&args, s, fast, SER_FAST, &work));
        }
        if on("tpcb") {
            let mut init = Command::new(format!("{PG_BIN}/pgbench"));
            env(&mut init, s, "");
            run(init.args(["-i", "-q", "-s", &args.tpcb_scale.to_string()]));
            tb.push(tpcb(&args, s, safe, SAFE, &work));
            tb.push(tpcb(&args, s, fast, FAST, &work));
        }
    };
    {
        let pg = Postgres::start(&work.join("pg"));
        all_workloads(&pg, "PostgreSQL on", "PostgreSQL off");
        if on("tpcc") {
            tpcc(
                &args,
                &pg,
                None,
                "PostgreSQL",
                &[("PostgreSQL on", Mode::all_safe()), ("PostgreSQL off", Mode::all_fast())],
                &mut tc,
            );
        }
    }
    {
        let kiln = Kiln::start(&work.join("kiln"), &[]);
        all_workloads(&kiln, "Kiln safe", "Kiln fast");
        if on("tpcc") {
            // A fresh server, so its memory after the load is the population's.
            drop(kiln);
            let kiln = Kiln::start(&work.join("kiln-tpcc"), &[]);
            tpcc(
                &args,
                &kiln,
                Some(kiln.child.id()),
                "Kiln",
                &[
                    ("Kiln all safe", Mode::all_safe()),
                    ("Kiln New-Order fast", Mode::new_order_fast()),
                    ("Kiln all fast", Mode::all_fast()),
                ],
                &mut tc,
            );
        }
    }
    if on("fig6") {
        let kiln = Kiln::start(&work.join("kiln-classic"), &["--commit-model", "classic"]);
        setup_tables(&kiln, args.rows);
        f6.push(fig6(&args, &kiln, "Kiln classic", SAFE, &work));
    }
    report(&args, &floor, &f6, &f8, &tb, &tc, started.elapsed());
}

/// What the TPC-C section measured.
#[derive(Default)]
struct Tpcc {
    /// Per system: name, load seconds, rows, resident memory added by the load (bytes).
    loads: Vec<(&'static str, f64, u64, Option<u64>)>,
    rows: Vec<TpccRow>,
}

struct TpccRow {
    name: &'static str,
    /// Per run: tpmC.
    tpmc: Vec<f64>,
    /// Per transaction type, per run: mean, p50, p99 (ms).
    lat: Vec<Vec<(f64, f64, f64)>>,
    retries: u64,
    failed: u64,
    /// Runs after which all twelve conditions were checked and held.
    checked: usize,
}

/// A process's resident memory in bytes (VmRSS).
fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Loads TPC-C into `s` and runs each configuration `args.repeat` times (interleaved), with
/// the consistency conditions checked after every run; a violation stops the benchmark.
fn tpcc(
    args: &Args,
    s: &dyn Server,
    pid: Option<u32>,
    system: &'static str,
    configs: &[(&'static str, Mode)],
    out: &mut Tpcc,
) {
    let conninfo =
        format!("host=127.0.0.1 port={} user={} dbname={}", s.port(), s.user(), s.database());
    let scale = Scale::standard(args.tpcc_warehouses);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let client = kiln_tpcc::driver::connect(&conninfo).await.expect("connect");
        let before = pid.and_then(rss);
        eprintln!("tpcc: loading {} warehouse(s) into {system}", scale.warehouses);
        let loaded = kiln_tpcc::load(&client, scale, 1).await.expect("TPC-C load");
        // What a user of PostgreSQL does after a bulk load; Kiln accepts it and has no
        // statistics to gather.
        client.batch_execute("ANALYZE").await.expect("ANALYZE");
        let after = pid.and_then(rss);
        out.loads.push((
            system,
            loaded.took.as_secs_f64(),
            loaded.rows,
            before.zip(after).map(|(b, a)| a.saturating_sub(b)),
        ));
        let mut delivered = vec![0u64; (scale.warehouses * kiln_tpcc::DISTRICTS) as usize];
        let first = out.rows.len();
        for &(name, _) in configs {
            out.rows.push(TpccRow {
                name,
                tpmc: vec![],
                lat: vec![vec![]; 5],
                retries: 0,
                failed: 0,
                checked: 0,
            });
        }
        for rep in 0..args.repeat {
            for (i, &(name, mode)) in configs.iter().enumerate() {
                let cfg = RunConfig {
                    conninfo: conninfo.clone(),
                    scale,
                    load_c: loaded.c,
                    terminals: args.tpcc_terminals,
                    duration: Duration::from_secs(args.tpcc_seconds),
                    mode,
                    seed: 100 + (rep * configs.len() + i) as u64,
                };
                let r = kiln_tpcc::run(&cfg)
                    .await
                    .unwrap_or_else(|e| panic!("TPC-C run {name} failed: {e}"));
                for (d, n) in delivered.iter_mut().zip(&r.delivered) {
                    *d += n;
                }
                let conditions = kiln_tpcc::check(&client, &scale, &delivered)
                    .await
                    .unwrap_or_else(|e| panic!("TPC-C consistency check on {name}: {e}"));
                for c in &conditions {
                    assert!(
                        c.holds(),
                        "TPC-C consistency condition {} ({}) does not hold after {name}: {} violations",
                        c.number,
                        c.rule,
                        c.violations
                    );
                }
                let row = &mut out.rows[first + i];
                row.checked += 1;
                row.tpmc.push(r.tpmc());
                for (t, lat) in TxnType::ALL.iter().zip(row.lat.iter_mut()) {
                    let st = r.stats(*t);
                    lat.push((st.mean_ms(), st.quantile_ms(0.5), st.quantile_ms(0.99)));
                    row.retries += st.retries;
                    row.failed += st.failed;
                }
                eprintln!("tpcc: {name} run {}: tpmC {:.0}", rep + 1, r.tpmc());
            }
        }
    });
}

fn report(
    args: &Args,
    floor: &Stats,
    f6: &[Fig6Row],
    f8: &BTreeMap<&'static str, Vec<(u64, f64, f64)>>,
    tb: &[TpcbRow],
    tc: &Tpcc,
    took: Duration,
) {
    if let Some(parent) = args.out.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let kernel = Command::new("uname")
        .arg("-r")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let pgv = Command::new(format!("{PG_BIN}/postgres"))
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let mut md = String::new();
    let w = &mut md;
    let _ = writeln!(w, "# Kiln vs PostgreSQL (pgbench -M prepared)\n");
    let rates: Vec<String> = args.rates.iter().map(u64::to_string).collect();
    let _ = writeln!(w, "Generated by\n\n```sh\ncargo run --release -p kiln-bench --bin kiln-vs-postgres -- --seconds {} --repeat {} --rows {} --fig8-seconds {} --rates {} --tpcb-seconds {} --tpcb-scale {} --tpcc-warehouses {} --tpcc-terminals {} --tpcc-seconds {} --sections {} --out {}\n```\n", args.seconds, args.repeat, args.rows, args.fig8_seconds, rates.join(","), args.tpcb_seconds, args.tpcb_scale, args.tpcc_warehouses, args.tpcc_terminals, args.tpcc_seconds, args.sections.join(","), args.out.display());
    let _ = writeln!(w, "Machine: {cores} cores, Linux {kernel}; {pgv} (stock settings, fsync on; `synchronous_commit` per session). Both servers and pgbench share the machine; data on the same disk. The run took {:.0} s. The engine's own micro-benchmarks are in [benchmarks-engine.md](benchmarks-engine.md); a three-node cluster against PostgreSQL with a synchronous standby, per simulated link delay, in [benchmarks-replicated.md](benchmarks-replicated.md).\n", took.as_secs_f64());
    let _ = writeln!(w, "The floor: a 512-byte append + fdatasync on the data disk, p50 {} ms, p99 {} ms ({} samples).\n", ms(floor.p50), ms(floor.p99), floor.count);

    if !f6.is_empty() {
        let _ = writeln!(w, "## Fig. 6: one updater and one reader on a {}-row table\n", args.rows);
        let _ = writeln!(w, "Each configuration ran {} times for {} s; the table gives the median over runs of each run's mean, p50 and p99 (ms).\n", args.repeat, args.seconds);
        let _ = writeln!(w, "| system | update mean | update p50 | update p99 | update TPS | read mean | read p50 | read p99 |");
        let _ = writeln!(w, "|---|---|---|---|---|---|---|---|");
        for r in f6 {
            let _ = writeln!(
                w,
                "| {} | {} | {} | {} | {:.0} | {} | {} | {} |",
                r.name,
                ms(r.update.mean),
                ms(r.update.p50),
                ms(r.update.p99),
                r.update_tps,
                ms(r.read.mean),
                ms(r.read.p50),
                ms(r.read.p99)
            );
        }
        let get = |n: &str| f6.iter().find(|r| r.name == n);
        if let (Some(kf), Some(ks), Some(pon), Some(poff)) =
            (get("Kiln fast"), get("Kiln safe"), get("PostgreSQL on"), get("PostgreSQL off"))
        {
            let _ = writeln!(w, "\n| ratio (same run) | value | target |");
            let _ = writeln!(w, "|---|---|---|");
            let _ = writeln!(
                w,
                "| Kiln fast update mean ÷ PostgreSQL off | {:.2} | ≤ 0.6 |",
                kf.update.mean / poff.update.mean
            );
            let _ = writeln!(
                w,
                "| Kiln safe update mean ÷ PostgreSQL on | {:.2} | ≤ 0.8 |",
                ks.update.mean / pon.update.mean
            );
            let _ = writeln!(
                w,
                "| Kiln safe read-only mean ÷ Kiln fast read-only mean | {:.2} | ≤ 1.1 |",
                ks.read.mean / kf.read.mean
            );
            let _ = writeln!(
                w,
                "| Kiln safe update p50 ÷ raw fdatasync p50 | {:.2} | — |",
                ks.update.p50 / floor.p50
            );
        }
    }
    if !f8.is_empty() {
        let _ = writeln!(w, "\n## Fig. 8: contention (256 rows, 128 clients, 95% of updates on 12 rows, SERIALIZABLE, --max-tries=5)\n");
        let _ = writeln!(w, "Committed TPS and the share of transactions that failed after 5 tries, per offered load (`-R`): the median of {} runs of {} s per point.\n", args.repeat, args.fig8_seconds);
        let names: Vec<&str> = f8.keys().copied().collect();
        let _ = write!(w, "| offered TPS |");
        for n in &names {
            let _ = write!(w, " {n} committed | {n} failed |");
        }
        let _ = writeln!(w);
        let _ = writeln!(w, "|---|{}", "---|---|".repeat(names.len()));
        for (i, rate) in args.rates.iter().enumerate() {
            let _ = write!(w, "| {rate} |");
            for n in &names {
                let (_, tps, fail) = f8[n][i];
                let _ = write!(w, " {tps:.0} | {fail:.1}% |");
            }
            let _ = writeln!(w);
        }
        let peak =
            |n: &str| f8.get(n).map(|v| v.iter().map(|p| p.1).fold(0.0, f64::max)).unwrap_or(0.0);
        let _ = writeln!(w, "\n| ratio (same run) | value | target |");
        let _ = writeln!(w, "|---|---|---|");
        let _ = writeln!(
            w,
            "| Kiln safe peak committed TPS ÷ PostgreSQL on peak | {:.2} | ≥ 5 |",
            peak("Kiln safe") / peak("PostgreSQL on")
        );
        let _ = writeln!(
            w,
            "| Kiln safe peak ÷ Kiln fast peak | {:.2} | ≥ 0.9 |",
            peak("Kiln safe") / peak("Kiln fast")
        );
        let png = args.out.with_file_name("fig8.png");
        if plot(f8, &args.rates, &png) {
            let _ = writeln!(w, "\n![Fig. 8: committed TPS against offered load](fig8.png)");
        }
    }
    if !tb.is_empty() {
        let _ = writeln!(
            w,
            "\n## TPC-B (pgbench built-in, scale {}, 8 clients)\n\nThe median of {} runs of {} s each (latencies: the median over runs of each run's mean, p50 and p99).\n",
            args.tpcb_scale, args.repeat, args.tpcb_seconds
        );
        let _ = writeln!(w, "| system | TPS | mean (ms) | p50 | p99 |");
        let _ = writeln!(w, "|---|---|---|---|---|");
        for r in tb {
            let _ = writeln!(
                w,
                "| {} | {:.0} | {} | {} | {} |",
                r.name,
                r.tps,
                ms(r.lat.mean),
                ms(r.lat.p50),
                ms(r.lat.p99)
            );
        }
    }
    if !tc.rows.is_empty() {
        tpcc_report(w, args, tc);
    }
    std::fs::write(&args.out, md).unwrap();
    eprintln!("wrote {}", args.out.display());
}

fn plot(f8: &BTreeMap<&'static str, Vec<(u64, f64, f64)>>, rates: &[u64], png: &Path) -> bool {
    let names: Vec<&str> = f8.keys().copied().collect();
    let mut data = String::new();
    for (i, rate) in rates.iter().enumerate() {
        let _ = write!(data, "{rate}");
        for n in &names {
            let _ = write!(data, " {:.1}", f8[n][i].1);
        }
        let _ = writeln!(data);
    }
    gnuplot(&[("fig8.dat", data)], |dir| {
        let mut script = format!(
            "set terminal png size 900,560\nset output '{}'\nset title 'Fig. 8: 256 rows, 128 clients, 95% on 12 hot rows, SERIALIZABLE'\nset xlabel 'offered load (TPS)'\nset ylabel 'committed TPS'\nset logscale x\nset key left top\nset grid\nplot ",
            png.display()
        );
        let plots: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                format!(
                    "'{}' using 1:{} with linespoints lw 2 title '{n}'",
                    dir.join("fig8.dat").display(),
                    i + 2
                )
            })
            .collect();
        script.push_str(&plots.join(", "));
        script.push('\n');
        script
    })
}

fn tpcc_report(w: &mut String, args: &Args, tc: &Tpcc) {
    let _ = writeln!(
        w,
        "\n## TPC-C (the paper's Fig. 9): {} warehouse(s), {} terminals\n",
        args.tpcc_warehouses, args.tpcc_terminals
    );
    let _ = writeln!(w, "Kiln's driver (`crates/tpcc`, also `kiln-tpcc` on its own): the five transactions in the specification's mix (45/43/4/4/4), keying and think times off, one connection per terminal, prepared statements; within a transaction, statements whose inputs do not depend on an earlier answer are pipelined (sent without waiting), and COMMIT travels with the last statements — the same for both systems. *Fast* is `synchronous_commit = off` for that transaction type (acknowledged at its commit point), *safe* is on. Each configuration ran {} times for {} s, interleaved; tpmC is New-Orders committed per minute (median of runs); latencies run from BEGIN to COMMIT's answer, retries included (the median over runs of each run's mean, p50 and p99). PostgreSQL was given `ANALYZE` after the load.\n", args.repeat, args.tpcc_seconds);
    let _ = writeln!(w, "| system | load (s) | rows | resident memory added by the load |");
    let _ = writeln!(w, "|---|---|---|---|");
    for (name, secs, rows, mem) in &tc.loads {
        let mem = match mem {
            Some(b) => format!(
                "{:.0} MiB ({:.0} MiB per warehouse, {:.0} bytes per row)",
                *b as f64 / 1048576.0,
                *b as f64 / 1048576.0 / f64::from(args.tpcc_warehouses),
                *b as f64 / (*rows).max(1) as f64
            ),
            None => "—".to_string(),
        };
        let _ = writeln!(w, "| {name} | {secs:.1} | {rows} | {mem} |");
    }
    let _ = writeln!(w, "\n| configuration | tpmC | retried tries | failed | conditions checked |");
    let _ = writeln!(w, "|---|---|---|---|---|");
    for r in &tc.rows {
        let _ = writeln!(
            w,
            "| {} | {:.0} | {} | {} | all 12 held after each of {} runs |",
            r.name,
            median(r.tpmc.clone()),
            r.retries,
            r.failed,
            r.checked
        );
    }
    let _ = writeln!(w, "\n| transaction | configuration | mean (ms) | p50 | p99 |");
    let _ = writeln!(w, "|---|---|---|---|---|");
    let lat = |r: &TpccRow, t: usize| {
        let v = &r.lat[t];
        (
            median(v.iter().map(|x| x.0).collect()),
            median(v.iter().map(|x| x.1).collect()),
            median(v.iter().map(|x| x.2).collect()),
        )
    };
    for t in TxnType::ALL {
        for r in &tc.rows {
            let (mean, p50, p99) = lat(r, t as usize);
            let _ = writeln!(w, "| {} | {} | {mean:.2} | {p50:.2} | {p99:.2} |", t.name(), r.name);
        }
    }
    let find = |n: &str| tc.rows.iter().find(|r| r.name == n);
    let tpmc = |n: &str| find(n).map(|r| median(r.tpmc.clone()));
    let _ = writeln!(w, "\n| ratio (same run) | value | target |");
    let _ = writeln!(w, "|---|---|---|");
    if let (Some(k), Some(p)) = (tpmc("Kiln all safe"), tpmc("PostgreSQL on")) {
        let _ = writeln!(w, "| Kiln all-safe tpmC ÷ PostgreSQL on tpmC | {:.2} | ≥ 2 |", k / p);
    }
    if let (Some(k), Some(p)) = (tpmc("Kiln all fast"), tpmc("PostgreSQL off")) {
        let _ = writeln!(w, "| Kiln all-fast tpmC ÷ PostgreSQL off tpmC | {:.2} | — |", k / p);
    }
    if let (Some(f), Some(s)) = (find("Kiln New-Order fast"), find("Kiln all safe")) {
        let no = TxnType::NewOrder as usize;
        let _ = writeln!(
            w,
            "| Kiln New-Order p50, New-Order fast ÷ all safe | {:.2} | ≤ 0.5 |",
            lat(f, no).1 / lat(s, no).1
        );
        let _ = writeln!(
            w,
            "| Kiln tpmC, New-Order fast ÷ all safe | {:.2} | — |",
            median(f.tpmc.clone()) / median(s.tpmc.clone())
        );
    }
    let png = args.out.with_file_name("fig9.png");
    if plot_fig9(tc, &png) {
        let _ = writeln!(w, "\n![Fig. 9: TPC-C p50 latency per transaction type](fig9.png)");
    }
}

/// Fig. 9: p50 latency per transaction type, one bar per configuration.
fn plot_fig9(tc: &Tpcc, png: &Path) -> bool {
    let mut data = String::new();
    for t in TxnType::ALL {
        let _ = write!(data, "\"{}\"", t.name());
        for r in &tc.rows {
            let _ = write!(data, " {:.3}", median(r.lat[t as usize].iter().map(|x| x.1).collect()));
        }
        let _ = writeln!(data);
    }
    gnuplot(&[("fig9.dat", data)], |dir| {
        let file = dir.join("fig9.dat");
        let mut script = format!(
            "set terminal png size 1000,560\nset output '{}'\nset title 'Fig. 9: TPC-C, p50 latency per transaction type'\nset ylabel 'p50 latency (ms)'\nset logscale y\nset style data histogram\nset style histogram cluster gap 1\nset style fill solid border -1\nset key left top\nset grid ytics\nplot ",
            png.display()
        );
        let plots: Vec<String> = tc
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                if i == 0 {
                    format!("'{}' using {}:xtic(1) title '{}'", file.display(), i + 2, r.name)
                } else {
                    format!("'' using {} title '{}'", i + 2, r.name)
                }
            })
            .collect();
        script.push_str(&plots.join(", "));
        script.push('\n');
        script
    })
}
