//! # Kiln's SQL layer
//!
//! Parses PostgreSQL-flavoured SQL (the `sqlparser` crate), binds it against the catalog kept
//! in the engine, plans it onto the engine's keyspaces and executes it in engine
//! transactions. It knows nothing of the wire protocol: a [`Session`] takes statement text
//! (or a prepared statement and parameter values) and answers [`Output`]s or [`SqlError`]s
//! with PostgreSQL SQLSTATEs.
//!
//! - [`types`], [`encoding`]: values, their text forms, and their byte forms in the engine.
//! - [`catalog`]: table and index definitions, stored transactionally in the engine.
//! - [`query`]: binding, access-path choice and execution of queries.
//! - [`session`]: statements, transaction control, settings and the ED surface.

pub mod bind;
pub mod catalog;
pub mod ed;
pub mod encoding;
pub mod error;
pub mod exec;
pub mod expr;
pub mod locks;
pub mod parse;
pub mod pg;
pub mod plan;
pub mod session;
pub mod types;

pub use ed::Notification;
pub use error::{code, Result, SqlError};
pub use session::{Database, Output, Prepared, Session, SessionConfig, STATEMENT_STACK_BYTES};
pub use types::{DataType, Value};

/// The engine settings a server chooses when it opens a [`Database`] (the server never holds
/// the engine itself).
pub mod engine_config {
    pub use kiln_engine::{CommitModel, Config, Faults, FaultyVfs, IsolationLevel, OsVfs, Vfs};
}

/// What `SELECT version()` answers (clients parse the leading PostgreSQL version).
pub const VERSION_STRING: &str =
    concat!("PostgreSQL 15.0 (Kiln ", env!("CARGO_PKG_VERSION"), ", eventually durable)");

/// The `server_version` reported at startup.
pub const SERVER_VERSION: &str = "15.0";
