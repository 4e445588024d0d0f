//! # Kiln's SQL layer
//!
//! PostgreSQL-flavoured SQL on the engine. It knows nothing of the wire protocol: a
//! [`Session`] takes statement text (or a prepared statement and parameter values) and
//! answers [`Output`]s or [`SqlError`]s with PostgreSQL SQLSTATEs.
//!
//! ## One statement, step by step
//!
//! Take `UPDATE accounts SET balance = balance + $1 WHERE id = $2`, executed through the
//! extended protocol:
//!
//! 1. **Parse** ([`parse`]). `Session::prepare` splits the text into statements, reads a
//!    `/*+ FAST */` / `/*+ SAFE */` hint, bounds how deep the tokens could nest *before*
//!    sqlparser builds a tree, parses, and measures the tree's real depth (54001 past either
//!    limit). The statement runs on a stack sized for the deepest tree accepted
//!    ([`STATEMENT_STACK_BYTES`]).
//! 2. **Bind** ([`bind`]). The `Planner` resolves `accounts` in the catalog (kept in the
//!    engine, [`catalog`]), `balance` and `id` in the table's scope, types `$1` and `$2` from
//!    their context, and binds `balance + $1` into an [`expr::Expr`] (folding constants,
//!    checking overflow); DML targets and SET lists are bound in `bind::dml`. Binding reads
//!    the catalog and executes nothing.
//! 3. **Plan** ([`plan`]). The WHERE conjuncts choose the access path (`plan::access`: here
//!    a point lookup on the primary key); `EXPLAIN` prints the plan (`plan::explain`).
//! 4. **Execute** ([`exec`]). `exec::statement` dispatches on the statement kind;
//!    `exec::init` first runs the plan's derived tables (and a DML statement's uncorrelated
//!    subqueries) once and puts their results in their place; other uncorrelated subqueries
//!    run on first use;
//!    `exec::write` reads the row (`exec::select::table_rows`), locks it (a guard,
//!    [`locks::HeldLocks`], owns every row lock of the transaction), re-reads its newest
//!    version under READ COMMITTED, evaluates the new value and writes the row and its index
//!    entries. Every executor loop checks the session's interrupt flag (cancel,
//!    `statement_timeout`, a vanished client, `pg_cancel_backend`).
//! 5. **Commit** ([`session`]; the [`database`] holds the engine, the catalog and the row locks). Outside a block the statement commits at once, fast or safe
//!    (hint, `SET LOCAL`, `synchronous_commit`); row locks go at the commit point, and a safe
//!    commit then waits for its durability point in slices (cancelable; 53100 on a full
//!    disk). [`ed`] holds the `kiln_*` functions and turns the engine's durability events into
//!    `LISTEN kiln_durable` / `kiln_lost` notifications.
//!
//! Around these: [`types`] and [`encoding`] (values, text forms, order-preserving keys),
//! [`pg`] (settings, the system catalogs, `pg_stat_activity`), [`functions`] (the registry of
//! scalar functions), [`error`] (SQLSTATEs).

pub mod advisory;
pub mod array;
pub mod bind;
pub mod catalog;
mod cursor;
pub mod database;
pub mod datetime_in;
pub mod domains;
pub mod ed;
pub mod encoding;
pub mod enums;
pub mod error;
pub mod exec;
pub mod expr;
pub mod functions;
pub mod inet;
pub mod interval;
pub mod json;
pub mod locks;
pub mod numeric;
pub mod numeric_math;
pub mod parse;
pub mod partition;
pub mod pg;
pub mod plan;
pub mod prepared;
pub mod sequence;
pub mod session;
pub mod style;
pub mod textsearch;
pub mod types;
pub mod zone;

pub use database::{
    ClusterAdmin, ClusterChangeError, ClusterMember, ClusterView, Database, SessionConfig,
};
pub use ed::Notification;
pub use error::{code, Result, SqlError};
pub use kiln_engine::Operations;
pub use session::{Notice, Output, Prepared, Session, STATEMENT_STACK_BYTES};
pub use types::{DataType, Value};

/// The engine settings a server chooses when it opens a [`Database`] (the server never holds
/// the engine itself).
pub mod engine_config {
    pub use kiln_engine::{
        CommitModel, Config, DurabilityLevel, Faults, FaultyVfs, IsolationLevel, OsVfs, Vfs,
    };
}

/// What `SELECT version()` answers (clients parse the leading PostgreSQL version).
pub const VERSION_STRING: &str =
    concat!("PostgreSQL 15.0 (Kiln ", env!("CARGO_PKG_VERSION"), ", eventually durable)");

/// The `server_version` reported at startup.
pub const SERVER_VERSION: &str = "15.0";
