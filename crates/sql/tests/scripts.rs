//! Golden-script tests of the SQL layer: each file in `tests/scripts/` is a list of
//! statements (`> SQL`, optionally prefixed by a session name `s2: > SQL`) with the rows,
//! command tag or error each one answers. Regenerate after an intended change with
//! `UPDATE_GOLDENFILES=1 cargo test -p kiln-sql --test scripts` and review the diff.
//!
//! Other commands: `restart` (close and reopen the engine: what was durable survives),
//! `persist` (flush the log now), `wait s2` (the output of `s2`'s statement that was started
//! with `[nowait]`). Tags: `[header]` prints column names and types; `[status]` prints the
//! session's ReadyForQuery status after the statement; `[nowait]` starts the statement and
//! goes on once it has finished or waits for a row lock (so a concurrent schedule is written
//! down step by step and replays the same way every time).
//!
//! Each session runs on a thread of its own, so one can wait for another's row lock.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt::Write as _;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use goldenscript::Command;
use kiln_engine::{Config, Engine};
use kiln_sql::{Database, Output, Session, SessionConfig};

type Res<T> = Result<T, Box<dyn StdError>>;

/// A session on a thread of its own: statements in, rendered output out.
struct Worker {
    statements: Option<mpsc::Sender<(String, Tags)>>,
    outputs: mpsc::Receiver<String>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// A `[nowait]` statement whose output has not been read yet.
    pending: bool,
}

impl Worker {
    fn start(mut session: Session) -> Worker {
        let (statements, inbox) = mpsc::channel::<(String, Tags)>();
        let (outbox, outputs) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            for (sql, tags) in inbox {
                let out = execute(&mut session, &sql, tags);
                if outbox.send(out).is_err() {
                    return;
                }
            }
        });
        Worker { statements: Some(statements), outputs, thread: Some(thread), pending: false }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.statements.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Runner {
    dir: tempfile::TempDir,
    db: Option<Arc<Database>>,
    sessions: HashMap<String, Worker>,
}

impl Runner {
    fn new() -> Res<Runner> {
        let dir = tempfile::tempdir()?;
        let mut r = Runner { dir, db: None, sessions: HashMap::new() };
        r.open()?;
        Ok(r)
    }

    fn open(&mut self) -> Res<()> {
        let engine = Engine::open(self.dir.path(), Config::default())?;
        let config = SessionConfig { rows_max: 10_000, ..SessionConfig::default() };
        self.db = Some(Database::open(engine, config)?);
        Ok(())
    }

    fn worker(&mut self, name: &str) -> Res<&mut Worker> {
        if !self.sessions.contains_key(name) {
            let db = self.db.as_ref().ok_or("no database")?;
            // Each session its own pid, as a server gives them (pg_stat_activity, pg_locks).
            let pid = self.sessions.len() as i32 + 1;
            let s = db.session("kiln", "kiln", pid)?;
            self.sessions.insert(name.to_string(), Worker::start(s));
        }
        Ok(self.sessions.get_mut(name).expect("inserted"))
    }
}

/// What a command's tags ask for.
#[derive(Debug, Clone, Copy)]
struct Tags {
    header: bool,
    status: bool,
    plan: bool,
    ops: bool,
}

/// Runs one statement and renders what it answered.
fn execute(session: &mut Session, sql: &str, tags: Tags) -> String {
    let Tags { header, status: show_status, plan, ops } = tags;
    let mut out = String::new();
    if plan {
        let (outputs, error) = session.simple_query(&format!("EXPLAIN {sql}"));
        for o in outputs {
            if let Output::Rows { rows, .. } = o {
                for r in rows {
                    writeln!(
                        out,
                        "plan: {}",
                        r[0].to_text(kiln_sql::DataType::Text).unwrap_or_default()
                    )
                    .ok();
                }
            }
        }
        if let Some(e) = error {
            writeln!(out, "plan: Error {}: {}", e.code, e.message).ok();
        }
    }
    let (outputs, error) = session.simple_query(sql);
    if ops {
        if let Some(o) = session.last_statement_operations() {
            writeln!(
                out,
                "ops: gets={} scans={} rows_scanned={} puts={} deletes={}",
                o.gets, o.scans, o.rows_scanned, o.puts, o.deletes
            )
            .ok();
        }
    }
    for o in &outputs {
        render(&mut out, o, header);
    }
    if let Some(e) = error {
        write!(out, "Error {}: {}", e.code, e.message).ok();
        if let Some(p) = e.position {
            write!(out, " [at {p}]").ok();
        }
        if let Some(d) = &e.detail {
            write!(out, " ({d})").ok();
        }
        writeln!(out).ok();
    }
    if show_status {
        writeln!(out, "status {}", session.transaction_status() as char).ok();
    }
    for n in session.take_notifications() {
        writeln!(out, "notify {}", n.channel).ok();
    }
    out
}

fn render(out: &mut String, o: &Output, header: bool) {
    match o {
        Output::Rows { columns, rows, tag, .. } => {
            if header {
                let h: Vec<String> =
                    columns.iter().map(|(n, t)| format!("{n}:{}", t.sql_name())).collect();
                writeln!(out, "{}", h.join("|")).ok();
            }
            for r in rows {
                let cells: Vec<String> = r
                    .iter()
                    .zip(columns)
                    .map(|(v, (_, t))| v.to_text(*t).unwrap_or_else(|| "NULL".into()))
                    .collect();
                writeln!(out, "{}", cells.join("|")).ok();
            }
            writeln!(out, "{tag}").ok();
        }
        Output::Command(tag) => {
            writeln!(out, "{tag}").ok();
        }
        Output::CopyIn { .. } => {
            writeln!(out, "COPY IN").ok();
        }
        Output::CopyOut { data: kiln_sql::session::CopyOutData::Lines(lines), tag, .. } => {
            for l in lines {
                out.push_str(l);
            }
            writeln!(out, "{tag}").ok();
        }
        Output::CopyOut { data: kiln_sql::session::CopyOutData::Rows(rows), tag, .. } => {
            for r in rows {
                writeln!(out, "binary {r:?}").ok();
            }
            writeln!(out, "{tag}").ok();
        }
        Output::Empty => {
            writeln!(out, "EMPTY").ok();
        }
    }
}

impl goldenscript::Runner for Runner {
    fn run(&mut self, command: &Command) -> Res<String> {
        let out = String::new();
        match command.name.as_str() {
            "restart" => {
                self.sessions.clear();
                if let Some(db) = self.db.take() {
                    db.shutdown();
                    let db = Arc::try_unwrap(db).map_err(|_| "database still shared")?;
                    drop(db);
                }
                self.open()?;
                return Ok(out);
            }
            "persist" => {
                self.db.as_ref().ok_or("no database")?.engine().persist()?;
                return Ok(out);
            }
            _ => {}
        }
        if command.name == "wait" {
            let name =
                command.args.first().map(|a| a.value.clone()).ok_or("wait: which session?")?;
            let worker = self.sessions.get_mut(&name).ok_or("wait: no such session")?;
            if !worker.pending {
                return Err(format!("wait: {name} has no statement running").into());
            }
            worker.pending = false;
            return Ok(worker.outputs.recv_timeout(Duration::from_secs(30))?);
        }
        let tags = Tags {
            header: command.tags.contains("header"),
            status: command.tags.contains("status"),
            plan: command.tags.contains("plan"),
            ops: command.tags.contains("ops"),
        };
        let nowait = command.tags.contains("nowait");
        let name = command.prefix.clone().unwrap_or_else(|| "s".into());
        let db = self.db.clone().ok_or("no database")?;
        let waits_before = db.lock_waits();
        let worker = self.worker(&name)?;
        if worker.pending {
            return Err(format!("{name} is still running a statement: wait for it first").into());
        }
        let sender = worker.statements.as_ref().ok_or("worker stopped")?;
        sender.send((command.name.clone(), tags))?;
        if !nowait {
            return Ok(worker.outputs.recv_timeout(Duration::from_secs(30))?);
        }
        // Go on once the statement has finished or is waiting for a row lock.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match worker.outputs.try_recv() {
                Ok(done) => return Ok(done),
                Err(mpsc::TryRecvError::Disconnected) => return Err("worker died".into()),
                Err(mpsc::TryRecvError::Empty) => {}
            }
            if db.lock_waits() > waits_before {
                worker.pending = true;
                return Ok(out);
            }
            if Instant::now() > deadline {
                return Err("a [nowait] statement neither finished nor waited for a lock".into());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

macro_rules! scripts {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/", stringify!($name));
            let mut runner = Runner::new().expect("runner starts");
            goldenscript::run(&mut runner, path).expect("goldenscript failed");
        }
    )*};
}

scripts!(
    ddl,
    dml,
    select,
    transactions,
    ed,
    errors,
    concurrency,
    plans,
    pushdown,
    prepared,
    sequences,
    constraints,
    arrays,
    alter,
    cursors,
    windows,
    tpcc,
    enums,
    schemas,
    triggers,
    functions,
    set_functions,
    numeric,
    do_blocks,
    merge,
    domains,
    temp_tables,
    matviews,
    text_search,
    user_aggregates,
    plpgsql_dynamic,
    partitions,
);
