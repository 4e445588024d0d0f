//! Golden-script tests of the SQL layer: each file in `tests/scripts/` is a list of
//! statements (`> SQL`, optionally prefixed by a session name `s2: > SQL`) with the rows,
//! command tag or error each one answers. Regenerate after an intended change with
//! `UPDATE_GOLDENFILES=1 cargo test -p kiln-sql --test scripts` and review the diff.
//!
//! Other commands: `restart` (close and reopen the engine: what was durable survives),
//! `persist` (flush the log now). Tags: `[header]` prints column names and types;
//! `[status]` prints the session's ReadyForQuery status after the statement.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt::Write as _;
use std::sync::Arc;

use goldenscript::Command;
use kiln_engine::{Config, Engine};
use kiln_sql::{Database, Output, Session, SessionConfig};

type Res<T> = Result<T, Box<dyn StdError>>;

struct Runner {
    dir: tempfile::TempDir,
    db: Option<Arc<Database>>,
    sessions: HashMap<String, Session>,
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

    fn session(&mut self, name: &str) -> Res<&mut Session> {
        if !self.sessions.contains_key(name) {
            let db = self.db.as_ref().ok_or("no database")?;
            let s = db.session("kiln", "kiln", 1)?;
            self.sessions.insert(name.to_string(), s);
        }
        Ok(self.sessions.get_mut(name).expect("inserted"))
    }
}

fn render(out: &mut String, o: &Output, header: bool) {
    match o {
        Output::Rows { columns, rows, tag } => {
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
        Output::CopyOut { lines, tag, .. } => {
            for l in lines {
                out.push_str(l);
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
        let mut out = String::new();
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
        let header = command.tags.contains("header");
        let show_status = command.tags.contains("status");
        let name = command.prefix.clone().unwrap_or_else(|| "s".into());
        let session = self.session(&name)?;
        let sql = command.name.clone();
        let (outputs, error) = session.simple_query(&sql);
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
        Ok(out)
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

scripts!(ddl, dml, select, transactions, ed, errors);
