//! Golden-script tests of the engine: MVCC visibility, the anomaly catalogue per isolation
//! level, and the durability state machine (committed → durable / lost, watermarks, read-only
//! durability points, epochs across restarts, classic mode).
//!
//! Each file in `tests/scripts/` is a list of commands with their expected output. To
//! regenerate the output after an intended change, run `UPDATE_GOLDENFILES=1 cargo test -p
//! kiln-engine --test scripts` and review the diff.
//!
//! Commands (a `tN:` prefix names a transaction):
//! ```text
//! open [classic]                 open a new engine (timer-less flushing, fault-injecting fs)
//! reopen                         close cleanly and open again
//! crash                          power loss: nothing more reaches the disk; then reopen
//! tN: begin [rc|rr|ser] [readonly]
//! tN: get KS KEY   | scan KS [from=K] [to=K] [reverse] [limit=N]
//! tN: put KS KEY=VALUE | delete KS KEY | refresh
//! tN: commit [fast|safe] [async] | join | abort
//! status tN... | wait tN         the status of each transaction's id
//! persist | watermarks | checkpoint | gc | dump KS
//! fail-syncs N | disk-full BYTES | disk-free
//! wait-stalled                   wait until the log writer has met the full disk
//! subscribe | events
//! ```

use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt::Write as _;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use goldenscript::Command;
use kiln_engine::{
    CommitMode, CommitModel, Config, Engine, Faults, FaultyVfs, IsolationLevel, Scan, Subscription,
    Transaction, TxnId, TxnOptions,
};

type Res<T> = Result<T, Box<dyn StdError>>;

#[derive(Default)]
struct Runner {
    dir: Option<tempfile::TempDir>,
    faults: Option<Arc<Faults>>,
    model: CommitModel,
    engine: Option<Engine>,
    txns: HashMap<String, Transaction>,
    ids: HashMap<String, TxnId>,
    pending: HashMap<String, JoinHandle<kiln_engine::Result<TxnId>>>,
    subscription: Option<Subscription>,
}

impl Runner {
    fn engine(&self) -> Res<&Engine> {
        self.engine.as_ref().ok_or_else(|| "no engine open".into())
    }

    fn open_engine(&mut self) -> Res<()> {
        let faults = Faults::new();
        let config = Config {
            commit_model: self.model,
            timed_flush: false,
            vfs: Arc::new(FaultyVfs::new(faults.clone())),
            // `disk-full` must stall the very next flush: no space zero-filled ahead.
            log_preallocate_bytes: 0,
            checkpoint_log_bytes: 0,
            ..Config::default()
        };
        let dir = self.dir.as_ref().expect("dir").path().to_path_buf();
        self.engine = Some(Engine::open(dir, config)?);
        self.faults = Some(faults);
        Ok(())
    }

    fn close(&mut self) {
        self.txns.clear();
        self.subscription = None;
        for (_, handle) in self.pending.drain() {
            let _ = handle.join();
        }
        if let Some(engine) = self.engine.take() {
            let _ = engine.close();
        }
    }

    fn txn(&mut self, name: &str) -> Res<&mut Transaction> {
        self.txns.get_mut(name).ok_or_else(|| format!("no open transaction {name}").into())
    }

    fn id_of(&self, name: &str) -> Res<TxnId> {
        self.ids.get(name).copied().ok_or_else(|| format!("{name} has no id").into())
    }

    fn run_txn(&mut self, name: &str, command: &Command) -> Res<String> {
        let mut args = command.consume_args();
        let mut out = String::new();
        match command.name.as_str() {
            "begin" => {
                let mut options = TxnOptions::new();
                for arg in args.by_ref() {
                    options = match arg.value.as_str() {
                        "rc" => options.isolation(IsolationLevel::ReadCommitted),
                        "rr" => options.isolation(IsolationLevel::RepeatableRead),
                        "ser" => options.isolation(IsolationLevel::Serializable),
                        "readonly" => options.read_only(),
                        other => return Err(format!("unknown begin option {other}").into()),
                    };
                }
                let txn = self.engine()?.begin(options)?;
                write!(out, "snapshot={}", txn.snapshot())?;
                self.txns.insert(name.to_string(), txn);
            }
            "get" => {
                let (ks, key) = (next(&mut args)?, next(&mut args)?);
                let value = self.txn(name)?.get(&ks, key.as_bytes())?;
                write!(out, "{ks} {key} → {}", show(value.as_deref()))?;
            }
            "scan" => {
                let ks = next(&mut args)?;
                let (mut from, mut to, mut reverse, mut limit) = (None, None, false, usize::MAX);
                for arg in args.by_ref() {
                    match (arg.key.as_deref(), arg.value.as_str()) {
                        (Some("from"), v) => from = Some(v.to_string()),
                        (Some("to"), v) => to = Some(v.to_string()),
                        (Some("limit"), v) => limit = v.parse()?,
                        (None, "reverse") => reverse = true,
                        _ => return Err(format!("unknown scan option {arg:?}").into()),
                    }
                }
                let bound = |b: &Option<String>, incl: bool| match b {
                    Some(k) if incl => std::ops::Bound::Included(k.as_bytes().to_vec()),
                    Some(k) => std::ops::Bound::Excluded(k.as_bytes().to_vec()),
                    None => std::ops::Bound::Unbounded,
                };
                let (start, end) = (bound(&from, true), bound(&to, false));
                let mut scan =
                    Scan::bounds(start.as_ref().map(|k| &k[..]), end.as_ref().map(|k| &k[..]));
                scan = scan.limit(limit);
                if reverse {
                    scan = scan.reverse();
                }
                let rows = self.txn(name)?.scan(&ks, scan)?;
                write!(out, "{ks} [{}]", show_rows(&rows))?;
            }
            "put" => {
                let ks = next(&mut args)?;
                for arg in args.by_ref() {
                    let key = arg.key.as_deref().ok_or("put takes KEY=VALUE")?;
                    self.txn(name)?.put(&ks, key.as_bytes(), arg.value.as_bytes())?;
                }
                return Ok(String::new());
            }
            "delete" => {
                let ks = next(&mut args)?;
                for arg in args.by_ref() {
                    self.txn(name)?.delete(&ks, arg.value.as_bytes())?;
                }
                return Ok(String::new());
            }
            "refresh" => {
                self.txn(name)?.refresh_snapshot()?;
                write!(out, "snapshot={}", self.txn(name)?.snapshot())?;
            }
            "commit" => {
                let (mut mode, mut run_async) = (CommitMode::Fast, false);
                for arg in args.by_ref() {
                    match arg.value.as_str() {
                        "fast" => mode = CommitMode::Fast,
                        "safe" => mode = CommitMode::Safe,
                        "async" => run_async = true,
                        other => return Err(format!("unknown commit option {other}").into()),
                    }
                }
                let txn = self.txns.remove(name).ok_or("no such transaction")?;
                if run_async {
                    // Wait for the commit point, so that later commands see it deterministically.
                    let before = self.engine()?.stats().committed_csn;
                    let handle = std::thread::spawn(move || txn.commit_with(mode));
                    let deadline = std::time::Instant::now() + Duration::from_secs(10);
                    while self.engine()?.stats().committed_csn == before && !handle.is_finished() {
                        if std::time::Instant::now() > deadline {
                            return Err(
                                "the background commit never reached its commit point".into()
                            );
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    self.pending.insert(name.to_string(), handle);
                    return Ok("committed; waiting for durability in the background".into());
                }
                let id = txn.commit_with(mode)?;
                self.ids.insert(name.to_string(), id);
                write!(out, "id={id} {}", self.engine()?.status(id))?;
            }
            "join" => {
                let handle = self.pending.remove(name).ok_or("nothing pending")?;
                let id = handle.join().map_err(|_| "commit thread panicked")??;
                self.ids.insert(name.to_string(), id);
                write!(out, "id={id} {}", self.engine()?.status(id))?;
            }
            "abort" => {
                let id = self.txns.remove(name).ok_or("no such transaction")?.abort();
                self.ids.insert(name.to_string(), id);
                write!(out, "id={id} {}", self.engine()?.status(id))?;
            }
            other => return Err(format!("unknown transaction command {other}").into()),
        }
        Ok(out)
    }
}

fn next(args: &mut goldenscript::ArgumentConsumer<'_>) -> Res<String> {
    Ok(args.next().ok_or("missing argument")?.value.clone())
}

fn show(value: Option<&[u8]>) -> String {
    match value {
        Some(v) => String::from_utf8_lossy(v).into_owned(),
        None => "None".into(),
    }
}

fn show_rows(rows: &[(Vec<u8>, Vec<u8>)]) -> String {
    let shown: Vec<String> =
        rows.iter().map(|(k, v)| format!("{}={}", show(Some(k)), show(Some(v)))).collect();
    shown.join(" ")
}

impl goldenscript::Runner for Runner {
    fn run(&mut self, command: &Command) -> Res<String> {
        if let Some(name) = &command.prefix {
            let name = name.clone();
            return self.run_txn(&name, command);
        }
        let mut out = String::new();
        let mut args = command.consume_args();
        match command.name.as_str() {
            "open" => {
                self.model = match args.next().map(|a| a.value.as_str()) {
                    Some("classic") => CommitModel::Classic,
                    None => CommitModel::EventuallyDurable,
                    Some(other) => return Err(format!("unknown model {other}").into()),
                };
                self.close();
                self.dir = Some(tempfile::tempdir()?);
                self.open_engine()?;
            }
            "reopen" => {
                self.close();
                self.open_engine()?;
                write!(out, "epoch={}", self.engine()?.stats().epoch)?;
            }
            "crash" => {
                let faults = self.faults.clone().ok_or("no engine")?;
                faults.crashed.store(true, std::sync::atomic::Ordering::SeqCst);
                self.close();
                self.open_engine()?;
                write!(out, "epoch={}", self.engine()?.stats().epoch)?;
            }
            "status" | "wait" => {
                for arg in args.by_ref() {
                    let id = self.id_of(&arg.value)?;
                    let status = if command.name == "wait" {
                        self.engine()?.wait(id, Duration::from_secs(10))?
                    } else {
                        self.engine()?.status(id)
                    };
                    writeln!(out, "{} {id} {status}", arg.value)?;
                }
            }
            "persist" => {
                let (epoch, csn) = self.engine()?.persist()?;
                write!(out, "durable epoch={epoch} csn={csn}")?;
            }
            "watermarks" => {
                let s = self.engine()?.stats();
                write!(
                    out,
                    "epoch={} committed={} visible={} durable={} backlog_bytes={}",
                    s.epoch, s.committed_csn, s.visible_csn, s.durable_csn, s.backlog_bytes
                )?;
                if let Some(cause) = s.stalled {
                    write!(out, " stalled: {cause}")?;
                }
            }
            "wait-stalled" => {
                // The log writer notices a full disk when it next tries to write: wait for
                // that, so the script's output does not depend on thread timing.
                let deadline = std::time::Instant::now() + Duration::from_secs(30);
                while self.engine()?.stats().stalled.is_none() {
                    if std::time::Instant::now() > deadline {
                        return Err("the log writer never stalled".into());
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                write!(out, "stalled")?;
            }
            "checkpoint" => write!(out, "checkpoint csn={}", self.engine()?.checkpoint()?)?,
            "gc" => {
                self.engine()?.gc();
                let s = self.engine()?.stats();
                write!(out, "rows={} store_bytes={}", s.rows, s.store_bytes)?;
            }
            "dump" => {
                let ks = next(&mut args)?;
                let mut txn = self.engine()?.begin(TxnOptions::new().read_only())?;
                let rows = txn.scan(&ks, Scan::all())?;
                write!(out, "{ks} [{}]", show_rows(&rows))?;
            }
            "fail-syncs" => {
                let n: u64 = next(&mut args)?.parse()?;
                let faults = self.faults.as_ref().ok_or("no engine")?;
                faults.fail_syncs.store(n, std::sync::atomic::Ordering::SeqCst);
            }
            "disk-full" => {
                let free: u64 = next(&mut args)?.parse()?;
                let faults = self.faults.as_ref().ok_or("no engine")?;
                faults.free_bytes.store(free, std::sync::atomic::Ordering::SeqCst);
            }
            "disk-free" => {
                let faults = self.faults.as_ref().ok_or("no engine")?;
                faults.free_bytes.store(u64::MAX, std::sync::atomic::Ordering::SeqCst);
            }
            "subscribe" => self.subscription = Some(self.engine()?.subscribe()),
            "events" => {
                let subscription = self.subscription.as_ref().ok_or("no subscription")?;
                let dir = self.dir.as_ref().expect("dir").path().display().to_string();
                while let Some(event) = subscription.try_recv() {
                    writeln!(out, "{}", format!("{event:?}").replace(&dir, "$DIR"))?;
                }
            }
            other => return Err(format!("unknown command {other}").into()),
        }
        if let Some(arg) = args.next() {
            return Err(format!("unexpected argument {arg:?}").into());
        }
        Ok(out)
    }

    fn end_script(&mut self) -> Res<()> {
        self.close();
        Ok(())
    }
}

macro_rules! scripts {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/", stringify!($name));
            goldenscript::run(&mut Runner::default(), path).expect("goldenscript failed");
        }
    )*};
}

scripts!(
    mvcc,
    anomalies_serializable,
    anomalies_repeatable_read,
    anomalies_read_committed,
    durability,
    durability_loss,
    durability_restart,
    classic,
);
