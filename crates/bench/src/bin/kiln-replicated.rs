//! `kiln-replicated`: the ED paper's Fig. 5/6 per durability configuration — a three-node
//! Kiln cluster against PostgreSQL with a synchronous streaming standby, both across the same
//! simulated links, in one run on one machine.
//!
//! ```sh
//! cargo run --release -p kiln-bench --bin kiln-replicated -- --out docs/benchmarks-replicated.md
//! ```
//!
//! For each link round-trip time (`--rtts`, in ms: 0 stands for one zone, ~2 for one region,
//! ~20 for two regions) it puts a delay proxy (`kiln_bench::DelayProxy`) in front of every
//! node's Raft port and in front of the PostgreSQL primary for its standby's replication
//! connection, so every replication message of both systems crosses a link of that RTT. One
//! pgbench client (`-M prepared`) then updates a random row of a `--rows`-row table, and
//! another run reads one, against:
//!
//! - Kiln's leader with `synchronous_commit = off` (fast) and `on` (safe: the `quorum` level,
//!   a majority of the three nodes has the commit on disk), and safe at a follower's site and
//!   at `all`;
//! - PostgreSQL's primary with `synchronous_commit = on` (the standby has flushed it) and `off`;
//! - and, once, a standalone Kiln (fast and safe), the unreplicated reference, and the disk's
//!   raw fdatasync, the floor.
//!
//! Each system first runs one unmeasured safe run (a warm-up: the followers apply the
//! table's load). Each measurement is repeated `--repeat` times; the tables give the medians of the runs'
//! mean, p50 and p99 latencies, and the ratios the project targets.
//!
//! Then, at `--contention-rtt`, the paper's Fig. 8 workload (95% of updates on 12 hot rows)
//! at each client count of `--contention-clients`: Kiln safe, fast and classic against
//! PostgreSQL on and off. The report draws both (gnuplot) next to itself:
//! `replicated-latency.png` and `replicated-contention.png`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Parser;
use kiln_bench::*;

#[derive(Parser)]
#[command(
    about = "A Kiln cluster against PostgreSQL with a synchronous standby, across delayed links"
)]
struct Args {
    /// Link round-trip times to simulate, in milliseconds.
    #[arg(long, value_delimiter = ',', default_value = "0,2,20")]
    rtts: Vec<f64>,
    /// Transactions per measured run.
    #[arg(long, default_value_t = 400)]
    ops: u64,
    /// Runs per measurement (the tables show the medians).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Rows in the table.
    #[arg(long, default_value_t = 10_000)]
    rows: u64,
    /// Where to write the report (Markdown); stdout if absent.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The link RTT (ms) of the contention runs (the paper's Fig. 8 at 1Region).
    #[arg(long, default_value_t = 2.0)]
    contention_rtt: f64,
    /// Seconds per contention run (0: no contention runs).
    #[arg(long, default_value_t = 8)]
    contention_secs: u64,
    /// Concurrent clients of the contention runs: one point of the sweep each (the offered
    /// load of closed-loop clients grows with their number).
    #[arg(long, value_delimiter = ',', default_value = "8,32,128")]
    contention_clients: Vec<u64>,
    /// Rows of the contention runs' table; 95% of updates go to its first 12 (the hot keys of
    /// the paper's Fig. 8 workload, as in `kiln-vs-postgres`).
    #[arg(long, default_value_t = 256)]
    contention_rows: u64,
}

/// One configuration's contention sweep: (clients, TPS, % failed after retries) per point.
struct Sweep {
    name: String,
    points: Vec<(u64, f64, f64)>,
}

/// Committed transactions per second of pgbench clients updating a row for
/// `contention_secs` seconds, 95% of them one of 12 hot rows (serialization failures retried
/// up to 10 times, as a client would), at each client count of the sweep; medians over
/// `repeat` runs, with the share of transactions that failed anyway.
fn contention(args: &Args, s: &dyn Server, name: &str, options: &str, work: &Path) -> Sweep {
    let script = work.join("contention.sql");
    std::fs::write(
        &script,
        format!(
            "\\set r random(1, 100)\n\\if :r <= 95\n\\set k random(1, 12)\n\\else\n\\set k random(13, {})\n\\endif\nUPDATE kv SET v = v + 1 WHERE k = :k;\n",
            args.contention_rows.max(13)
        ),
    )
    .unwrap();
    let mut points = Vec::new();
    for &clients in &args.contention_clients {
        let mut tps = Vec::new();
        let mut failed = Vec::new();
        for _ in 0..args.repeat {
            let run_args: Vec<String> = [
                "-n",
                "-M",
                "prepared",
                "-c",
                &clients.to_string(),
                "-j",
                "2",
                "-T",
                &args.contention_secs.to_string(),
                "--max-tries",
                "10",
                "-f",
                script.to_str().unwrap(),
            ]
            .iter()
            .map(|a| a.to_string())
            .collect();
            let out = finish(pgbench(s, options, work, &run_args));
            let processed =
                field(&out, "number of transactions actually processed:").unwrap_or(0.0);
            let failures = field(&out, "number of failed transactions:").unwrap_or(0.0);
            tps.push(field(&out, "tps =").unwrap_or(0.0));
            failed.push(if processed + failures > 0.0 {
                100.0 * failures / (processed + failures)
            } else {
                0.0
            });
        }
        let (tps, failed) = (median(tps), median(failed));
        eprintln!("  {name}, {clients} clients: {tps:.0} TPS, {failed:.1}% failed");
        points.push((clients, tps, failed));
    }
    Sweep { name: name.to_string(), points }
}

/// A three-node Kiln cluster whose Raft ports sit behind delay proxies.
struct Cluster {
    nodes: Vec<Kiln>,
    _proxies: Vec<DelayProxy>,
    leader: usize,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Cluster {
    fn start(work: &Path, one_way: Duration, extra: &[&str]) -> Cluster {
        let n = 3;
        let sql: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let raft: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let proxies: Vec<DelayProxy> = raft
            .iter()
            .map(|&p| DelayProxy::start(format!("127.0.0.1:{p}").parse().unwrap(), one_way))
            .collect();
        let secret = work.join("cluster.secret");
        std::fs::create_dir_all(work).unwrap();
        std::fs::write(&secret, "a benchmark cluster's shared secret").unwrap();
        // Every node reaches node j through j's proxy: each message crosses one delayed link.
        let members: Vec<String> = (0..n)
            .map(|j| {
                format!(
                    "{}=127.0.0.1:{},127.0.0.1:{},site-{}",
                    j + 1,
                    proxies[j].port,
                    sql[j],
                    j + 1
                )
            })
            .collect();
        let nodes: Vec<Kiln> = (0..n)
            .map(|i| {
                let (id, raft_listen) = ((i + 1).to_string(), format!("127.0.0.1:{}", raft[i]));
                let mut args = vec![
                    "--node-id",
                    &id,
                    "--raft-listen",
                    &raft_listen,
                    "--cluster-secret-file",
                    secret.to_str().unwrap(),
                ];
                for m in &members {
                    args.extend(["--member", m.as_str()]);
                }
                args.extend(extra);
                Kiln::start_at(
                    &work.join(format!("node{}", i + 1)),
                    &format!("127.0.0.1:{}", sql[i]),
                    &args,
                )
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        let leader = loop {
            let leading = nodes.iter().position(|k| {
                let mut cmd = Command::new(format!("{PG_BIN}/psql"));
                env(&mut cmd, k, "");
                cmd.args([
                    "-X",
                    "-At",
                    "-c",
                    "SELECT value FROM kiln_stat WHERE name = 'leading_term'",
                ])
                .output()
                .is_ok_and(|o| {
                    String::from_utf8_lossy(&o.stdout).trim().parse::<i64>().unwrap_or(0) > 0
                })
            });
            if let Some(i) = leading {
                break i;
            }
            assert!(Instant::now() < deadline, "no leader was elected");
            std::thread::sleep(Duration::from_millis(100));
        };
        // The leader creates the catalog as it begins: wait until the database is there.
        while Command::new(format!("{PG_BIN}/psql"))
            .env("PGHOST", "127.0.0.1")
            .env("PGPORT", nodes[leader].port().to_string())
            .env("PGUSER", "kiln")
            .env("PGDATABASE", "kiln")
            .args(["-X", "-c", "SELECT 1"])
            .output()
            .map_or(true, |o| !o.status.success())
        {
            assert!(Instant::now() < deadline, "the leader did not create its database");
            std::thread::sleep(Duration::from_millis(100));
        }
        Cluster { nodes, _proxies: proxies, leader }
    }
}

fn setup(s: &dyn Server, rows: u64) {
    psql(s, "DROP TABLE IF EXISTS kv");
    psql(s, "CREATE TABLE kv (k int PRIMARY KEY, v int NOT NULL)");
    psql(s, &format!("INSERT INTO kv SELECT g, 0 FROM generate_series(1, {rows}) AS g"));
}

/// Latencies (µs) of `ops` transactions of one client running `sql` (with `:k` a random row)
/// under PGOPTIONS `options`.
fn measure(s: &dyn Server, options: &str, sql: &str, rows: u64, ops: u64, work: &Path) -> Stats {
    let script = work.join("script.sql");
    std::fs::write(&script, format!("\\set k random(1, {rows})\n{sql}\n")).unwrap();
    let prefix = "lat";
    let args: Vec<String> = [
        "-n",
        "-M",
        "prepared",
        "-c",
        "1",
        "-j",
        "1",
        "-t",
        &ops.to_string(),
        "-l",
        "--log-prefix",
        prefix,
        "-f",
        script.to_str().unwrap(),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let out = finish(pgbench(s, options, work, &args));
    let done = format!("number of transactions actually processed: {ops}/{ops}");
    assert!(out.contains(&done), "pgbench did not finish every transaction:\n{out}");
    stats(latencies(work, prefix))
}

const UPDATE: &str = "UPDATE kv SET v = v + 1 WHERE k = :k;";
const READ: &str = "SELECT v FROM kv WHERE k = :k;";
const FAST: &str = "-c synchronous_commit=off";
const SAFE: &str = "-c synchronous_commit=on";

/// One configuration's update and read latencies (medians over the runs).
struct Row {
    name: String,
    update: Stats,
    read: Stats,
}

fn row(args: &Args, s: &dyn Server, name: &str, options: &str, work: &Path) -> Row {
    let mut updates = Vec::new();
    let mut reads = Vec::new();
    for _ in 0..args.repeat {
        updates.push(measure(s, options, UPDATE, args.rows, args.ops, work));
        reads.push(measure(s, options, READ, args.rows, args.ops, work));
    }
    let row = Row { name: name.into(), update: median_stats(&updates), read: median_stats(&reads) };
    eprintln!(
        "  {name}: update mean {} p99 {}; read mean {}",
        ms(row.update.mean),
        ms(row.update.p99),
        ms(row.read.mean)
    );
    row
}

fn ms(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

fn table(w: &mut String, rows: &[Row]) {
    writeln!(w, "| configuration | update mean | p50 | p99 | read mean | p50 | p99 |").unwrap();
    writeln!(w, "|---|---:|---:|---:|---:|---:|---:|").unwrap();
    for r in rows {
        writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.name,
            ms(r.update.mean),
            ms(r.update.p50),
            ms(r.update.p99),
            ms(r.read.mean),
            ms(r.read.p50),
            ms(r.read.p99)
        )
        .unwrap();
    }
}

fn main() {
    let args = Args::parse();
    ensure_tools();
    eprintln!("building kiln (release)");
    run(Command::new("cargo").current_dir(root()).args(["build", "--release", "-q", "-p", "kiln"]));
    let work = root().join("target/bench-work/replicated");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    if is_root() {
        run(Command::new("chmod").args(["-R", "a+rwx", work.to_str().unwrap()]));
    }
    let started = Instant::now();

    let floor = fdatasync_floor(&work);
    eprintln!("fdatasync floor: mean {} ms", ms(floor.mean));
    eprintln!("standalone Kiln");
    let standalone = {
        let kiln = Kiln::start(&work.join("standalone"), &[]);
        setup(&kiln, args.rows);
        vec![
            row(&args, &kiln, "Kiln standalone, fast", FAST, &work),
            row(&args, &kiln, "Kiln standalone, safe (local fsync)", SAFE, &work),
        ]
    };

    let mut per_rtt = Vec::new();
    for &rtt in &args.rtts {
        let one_way = Duration::from_secs_f64(rtt / 2000.0);
        let measured = measured_rtt(one_way, 200);
        eprintln!("RTT {rtt} ms: measured through the proxy {} ms", ms(measured));
        eprintln!("RTT {rtt} ms: Kiln cluster of 3");
        let mut rows = Vec::new();
        {
            let cluster = Cluster::start(&work.join(format!("cluster-{rtt}")), one_way, &[]);
            let leader = &cluster.nodes[cluster.leader];
            setup(leader, args.rows);
            // Warm up (the followers apply the load, the log's segments fill): not measured.
            measure(leader, SAFE, UPDATE, args.rows, args.ops, &work);
            rows.push(row(&args, leader, "Kiln leader, fast", FAST, &work));
            rows.push(row(&args, leader, "Kiln leader, safe (quorum)", SAFE, &work));
            // A follower's site: the commit must be on that remote node (and a quorum).
            let remote = (cluster.leader + 1) % cluster.nodes.len() + 1;
            let site = format!("{SAFE} -c kiln.durability_level=site:site-{remote}");
            rows.push(row(&args, leader, "Kiln leader, safe (site of a follower)", &site, &work));
            let all = format!("{SAFE} -c kiln.durability_level=all");
            rows.push(row(&args, leader, "Kiln leader, safe (all)", &all, &work));
            drop(cluster);
        }
        eprintln!("RTT {rtt} ms: PostgreSQL with a synchronous standby");
        {
            let primary = Postgres::start(&work.join(format!("pg-primary-{rtt}")));
            let link = DelayProxy::start(
                format!("127.0.0.1:{}", primary.port()).parse().unwrap(),
                one_way,
            );
            let standby = Postgres::standby(&work.join(format!("pg-standby-{rtt}")), link.port);
            primary.require_sync_standby();
            setup(&primary, args.rows);
            measure(&primary, SAFE, UPDATE, args.rows, args.ops, &work);
            rows.push(row(
                &args,
                &primary,
                "PostgreSQL, synchronous_commit on (standby flushed)",
                SAFE,
                &work,
            ));
            rows.push(row(&args, &primary, "PostgreSQL, synchronous_commit off", FAST, &work));
            drop(standby);
            drop(link);
        }
        per_rtt.push((rtt, measured, rows));
    }

    let mut contended = Vec::new();
    if args.contention_secs > 0 {
        let rtt = args.contention_rtt;
        let one_way = Duration::from_secs_f64(rtt / 2000.0);
        eprintln!("contention at RTT {rtt} ms");
        {
            let cluster = Cluster::start(&work.join("contention-ed"), one_way, &[]);
            let leader = &cluster.nodes[cluster.leader];
            setup(leader, args.contention_rows);
            contended.push(contention(&args, leader, "Kiln safe (quorum)", SAFE, &work));
            contended.push(contention(&args, leader, "Kiln fast", FAST, &work));
        }
        {
            let classic = ["--commit-model", "classic"];
            let cluster = Cluster::start(&work.join("contention-classic"), one_way, &classic);
            let leader = &cluster.nodes[cluster.leader];
            setup(leader, args.contention_rows);
            contended.push(contention(&args, leader, "Kiln classic (quorum)", SAFE, &work));
        }
        {
            let primary = Postgres::start(&work.join("contention-pg-primary"));
            let link = DelayProxy::start(
                format!("127.0.0.1:{}", primary.port()).parse().unwrap(),
                one_way,
            );
            let standby = Postgres::standby(&work.join("contention-pg-standby"), link.port);
            primary.require_sync_standby();
            setup(&primary, args.contention_rows);
            contended.push(contention(
                &args,
                &primary,
                "PostgreSQL, synchronous_commit on",
                SAFE,
                &work,
            ));
            contended.push(contention(
                &args,
                &primary,
                "PostgreSQL, synchronous_commit off",
                FAST,
                &work,
            ));
            drop(standby);
            drop(link);
        }
    }

    let mut w = String::new();
    writeln!(
        w,
        "# Kiln replicated: a three-node cluster against PostgreSQL with a synchronous standby\n"
    )
    .unwrap();
    writeln!(
        w,
        "Generated by `cargo run --release -p kiln-bench --bin kiln-replicated -- --rtts {} --ops {} --repeat {} --rows {} --contention-secs {} --out docs/benchmarks-replicated.md` \
         ({:.0} s). Latencies in milliseconds: medians over {} runs of each run's mean, p50 and p99; one client (pgbench `-M prepared -c 1`), \
         {} transactions per run, a random row of {} rows.\n",
        args.rtts.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(","),
        args.ops,
        args.repeat,
        args.rows,
        args.contention_secs,
        started.elapsed().as_secs_f64(),
        args.repeat,
        args.ops,
        args.rows
    )
    .unwrap();
    writeln!(
        w,
        "Every replication message crosses a delay proxy of the given round-trip time (both systems the same proxy program; \
         the kernel offers no delay here). Kiln: three `kiln serve` processes, the leader's Raft port and each follower's behind \
         a proxy; safe is the `quorum` level (the leader and one follower have the commit on disk) unless the row names \
         another: a follower's site (that follower has it, and a quorum), or `all` (both followers). PostgreSQL 15: a primary and \
         one streaming standby (`synchronous_standby_names = '*'`), the standby's replication connection through the proxy. All \
         processes share one machine and one disk (2 cores), so the nodes' fsyncs contend with each other.\n"
    )
    .unwrap();
    writeln!(
        w,
        "The disk's raw fdatasync (512 B appends): mean {} ms, p50 {}, p99 {}.\n",
        ms(floor.mean),
        ms(floor.p50),
        ms(floor.p99)
    )
    .unwrap();
    writeln!(w, "## Unreplicated reference\n").unwrap();
    table(&mut w, &standalone);
    for (rtt, measured, rows) in &per_rtt {
        writeln!(w, "\n## RTT {rtt} ms\n").unwrap();
        writeln!(
            w,
            "A 64-byte ping-pong through the proxy measured {} ms round trip (the mean of 200).\n",
            ms(*measured)
        )
        .unwrap();
        table(&mut w, rows);
        let find =
            |prefix: &str| rows.iter().find(|r| r.name.starts_with(prefix)).map(|r| r.update.mean);
        let (Some(fast), Some(safe), Some(pg_on)) = (
            find("Kiln leader, fast"),
            find("Kiln leader, safe"),
            find("PostgreSQL, synchronous_commit on"),
        ) else {
            continue;
        };
        let unreplicated_fast = standalone[0].update.mean;
        let budget = measured + 2.0 * floor.mean;
        writeln!(w, "\nRatios (update means; targets in brackets, reported, not asserted):\n")
            .unwrap();
        writeln!(
            w,
            "- Kiln fast / unreplicated Kiln fast: {:.2} [≤ 1.2]",
            fast / unreplicated_fast
        )
        .unwrap();
        writeln!(
            w,
            "- Kiln safe / (measured RTT + 2 fdatasync = {} ms): {:.2} [≤ 1]",
            ms(budget),
            safe / budget
        )
        .unwrap();
        writeln!(w, "- Kiln safe / PostgreSQL synchronous standby: {:.2} [≤ 0.8]", safe / pg_on)
            .unwrap();
    }
    if !contended.is_empty() {
        writeln!(
            w,
            "\n## Contention at RTT {} ms (the paper's Fig. 8 workload)\n",
            args.contention_rtt
        )
        .unwrap();
        writeln!(
            w,
            "pgbench clients (`-j 2`, `--max-tries 10`) each updating a row of {} for {} s per run, 95% of them one of 12 hot rows; committed transactions \
             per second, medians of {} runs, at {} clients (closed-loop clients: more of them offer more load). Kiln classic is a cluster started with \
             `--commit-model classic` (a commit is visible, and releases its row locks, only once durable at quorum), the control experiment.\n",
            args.contention_rows,
            args.contention_secs,
            args.repeat,
            args.contention_clients.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
        )
        .unwrap();
        let mut header = "| configuration |".to_string();
        let mut rule = "|---|".to_string();
        for c in &args.contention_clients {
            write!(header, " TPS, {c} clients | failed |").unwrap();
            rule.push_str("---:|---:|");
        }
        writeln!(w, "{header}\n{rule}").unwrap();
        for sweep in &contended {
            write!(w, "| {} |", sweep.name).unwrap();
            for (_, tps, failed) in &sweep.points {
                write!(w, " {tps:.0} | {failed:.1}% |").unwrap();
            }
            writeln!(w).unwrap();
        }
        let find = |prefix: &str| contended.iter().find(|r| r.name.starts_with(prefix));
        if let (Some(safe), Some(pg), Some(classic)) =
            (find("Kiln safe"), find("PostgreSQL, synchronous_commit on"), find("Kiln classic"))
        {
            writeln!(w, "\nRatios of TPS at each client count (target in brackets, reported, not asserted):\n")
                .unwrap();
            for (i, c) in args.contention_clients.iter().enumerate() {
                writeln!(
                    w,
                    "- {c} clients: Kiln safe / PostgreSQL synchronous standby {:.2} [≥ 5]; Kiln safe / Kiln classic {:.2}",
                    safe.points[i].1 / pg.points[i].1.max(1e-9),
                    safe.points[i].1 / classic.points[i].1.max(1e-9)
                )
                .unwrap();
            }
        }
    }
    if let Some(out) = &args.out {
        let png = root().join(out).with_file_name("replicated-latency.png");
        if plot_latency(&standalone, &per_rtt, &png) {
            writeln!(w, "\n![One-row update latency per configuration and link RTT](replicated-latency.png)")
                .unwrap();
        }
        let png = root().join(out).with_file_name("replicated-contention.png");
        if !contended.is_empty() && plot_contention(&args, &contended, &png) {
            writeln!(w, "\n![Contention at RTT {} ms: committed TPS against clients](replicated-contention.png)", args.contention_rtt)
                .unwrap();
        }
    }
    match &args.out {
        Some(path) => {
            std::fs::write(root().join(path), &w).unwrap();
            eprintln!("wrote {}", path.display());
        }
        None => print!("{w}"),
    }
}

/// The paper's Fig. 5/6 shape: one group of bars per link RTT, a bar per configuration
/// (mean one-row update latency, log scale), with the unreplicated references as lines.
fn plot_latency(standalone: &[Row], per_rtt: &[(f64, f64, Vec<Row>)], png: &Path) -> bool {
    let Some((_, _, first)) = per_rtt.first() else { return false };
    let names: Vec<&str> = first.iter().map(|r| r.name.as_str()).collect();
    let mut data = String::new();
    for (rtt, _, rows) in per_rtt {
        write!(data, "\"RTT {rtt} ms\"").unwrap();
        for n in &names {
            let mean = rows.iter().find(|r| r.name == *n).map_or(f64::NAN, |r| r.update.mean);
            write!(data, " {:.4}", mean / 1000.0).unwrap();
        }
        writeln!(data).unwrap();
    }
    gnuplot(&[("latency.dat", data)], |dir| {
        let file = dir.join("latency.dat");
        let mut script = format!(
            "set terminal png size 1100,600 noenhanced\nset output '{}'\nset title 'One-row update, mean latency: three-node Kiln against PostgreSQL with a synchronous standby'\n\
             set ylabel 'mean latency (ms)'\nset logscale y\nset yrange [0.01:*]\nset style data histogram\nset style histogram cluster gap 1\n\
             set style fill solid border -1\nset key outside right top font ',9'\nset grid ytics\n",
            png.display()
        );
        for r in standalone {
            writeln!(
                script,
                "set arrow from graph 0, first {0:.4} to graph 1, first {0:.4} nohead dt 2 lw 1.5",
                r.update.mean / 1000.0
            )
            .unwrap();
            writeln!(
                script,
                "set label '{} {:.3} ms' at graph 0.01, first {:.4} offset 0,0.6 font ',8'",
                r.name,
                r.update.mean / 1000.0,
                r.update.mean / 1000.0
            )
            .unwrap();
        }
        script.push_str("plot ");
        let plots: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                if i == 0 {
                    format!("'{}' using {}:xtic(1) title '{n}'", file.display(), i + 2)
                } else {
                    format!("'' using {} title '{n}'", i + 2)
                }
            })
            .collect();
        script.push_str(&plots.join(", "));
        script.push('\n');
        script
    })
}

/// The paper's Fig. 8 shape at one RTT: committed TPS against the number of clients.
fn plot_contention(args: &Args, sweeps: &[Sweep], png: &Path) -> bool {
    let mut data = String::new();
    for (i, c) in args.contention_clients.iter().enumerate() {
        write!(data, "{c}").unwrap();
        for s in sweeps {
            write!(data, " {:.1}", s.points[i].1).unwrap();
        }
        writeln!(data).unwrap();
    }
    gnuplot(&[("contention.dat", data)], |dir| {
        let mut script = format!(
            "set terminal png size 1000,560 noenhanced\nset output '{}'\nset title 'Contention at RTT {} ms: {} rows, 95% of updates on 12 hot rows'\n\
             set xlabel 'clients'\nset ylabel 'committed TPS'\nset logscale xy\nset xrange [{}:{}]\nset key outside right top\nset grid\nplot ",
            png.display(),
            args.contention_rtt,
            args.contention_rows,
            args.contention_clients.iter().min().copied().unwrap_or(1) as f64 / 1.5,
            args.contention_clients.iter().max().copied().unwrap_or(1) as f64 * 1.5
        );
        let plots: Vec<String> = sweeps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                format!(
                    "'{}' using 1:{} with linespoints lw 2 title '{}'",
                    dir.join("contention.dat").display(),
                    i + 2,
                    s.name
                )
            })
            .collect();
        script.push_str(&plots.join(", "));
        script.push('\n');
        script
    })
}
