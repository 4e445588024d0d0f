//! Tables Kiln computes instead of storing: `kiln_stat` (the ED counters) and the parts of
//! `pg_catalog` and `information_schema` that clients read.

use std::collections::BTreeMap;

use kiln_engine::Transaction;

use crate::error::Result;
use crate::query::SystemTables;
use crate::session::Database;
use crate::types::{DataType, Value};

/// The system tables of one session.
pub struct System<'a> {
    /// The database server.
    pub db: &'a Database,
    /// The session's database.
    pub database: &'a str,
    /// The session's settings (pg_settings).
    pub settings: &'a BTreeMap<String, String>,
}

/// The `kiln_stat` counters, by name (also served as Prometheus metrics).
pub fn kiln_stat(db: &Database) -> Vec<(&'static str, i64, &'static str)> {
    let s = db.engine().stats();
    vec![
        ("epoch", s.epoch as i64, "current epoch (a new one begins after each loss)"),
        ("committed_csn", s.committed_csn as i64, "last commit sequence number assigned"),
        ("visible_csn", s.visible_csn as i64, "commits visible to new snapshots"),
        ("durable_csn", s.durable_csn as i64, "commits durable (the durable watermark)"),
        ("commits_fast", s.commits_fast as i64, "update transactions committed fast"),
        ("commits_safe", s.commits_safe as i64, "update transactions committed safe"),
        ("commits_read_only", s.commits_read_only as i64, "read-only transactions committed"),
        ("aborts", s.aborts as i64, "transactions rolled back or failed"),
        ("conflicts", s.conflicts as i64, "serialization conflicts (40001)"),
        ("dependency_lost", s.dependency_lost as i64, "transactions that read lost data"),
        ("durable_txns", s.durable_txns as i64, "update transactions made durable"),
        ("lost_txns", s.lost_txns as i64, "committed transactions lost before durability"),
        ("loss_events", s.loss_events as i64, "durability failures that lost a suffix"),
        ("flushes", s.flushes as i64, "log flushes (fdatasync)"),
        ("log_bytes", s.log_bytes as i64, "bytes written to the log"),
        (
            "group_commit_mean_x100",
            s.group_commit_mean_x100 as i64,
            "mean transactions per flush, times 100",
        ),
        ("flush_micros_mean", s.flush_micros_mean as i64, "mean flush latency in microseconds"),
        ("flush_micros_max", s.flush_micros_max as i64, "largest flush latency in microseconds"),
        ("backlog_bytes", s.backlog_bytes as i64, "committed bytes not yet durable"),
        ("stalls", s.stalls as i64, "times commits waited for durability to catch up"),
        ("store_bytes", s.store_bytes as i64, "bytes of row versions in memory"),
        ("rows", s.rows as i64, "stored keys (rows and index entries)"),
        ("checkpoints", s.checkpoints as i64, "checkpoints written"),
        ("locked_rows", db.locked_rows() as i64, "row locks held now"),
    ]
}

impl SystemTables for System<'_> {
    fn system_table(
        &self,
        txn: &mut Transaction,
        name: &str,
    ) -> Result<Option<crate::query::Relation>> {
        let text = |s: &str| Value::Text(s.to_string());
        Ok(Some(match name {
            "kiln_stat" => (
                vec![
                    ("name".into(), DataType::Text),
                    ("value".into(), DataType::Int8),
                    ("description".into(), DataType::Text),
                ],
                kiln_stat(self.db)
                    .into_iter()
                    .map(|(n, v, d)| vec![text(n), Value::Int(v), text(d)])
                    .collect(),
            ),
            "pg_settings" => (
                vec![("name".into(), DataType::Text), ("setting".into(), DataType::Text)],
                self.settings.iter().map(|(k, v)| vec![text(k), text(v)]).collect(),
            ),
            "pg_database" => {
                let dbs = crate::catalog::Catalog::default();
                let _ = dbs;
                let names = self.db_catalog_databases(txn)?;
                (
                    vec![("oid".into(), DataType::Int8), ("datname".into(), DataType::Text)],
                    names
                        .into_iter()
                        .enumerate()
                        .map(|(i, n)| vec![Value::Int(16384 + i as i64), Value::Text(n)])
                        .collect(),
                )
            }
            "pg_namespace" => (
                vec![("oid".into(), DataType::Int8), ("nspname".into(), DataType::Text)],
                vec![
                    vec![Value::Int(11), text("pg_catalog")],
                    vec![Value::Int(2200), text("public")],
                ],
            ),
            "information_schema.tables" => {
                let tables = self.db_tables(txn)?;
                (
                    vec![
                        ("table_catalog".into(), DataType::Text),
                        ("table_schema".into(), DataType::Text),
                        ("table_name".into(), DataType::Text),
                        ("table_type".into(), DataType::Text),
                    ],
                    tables
                        .iter()
                        .map(|t| {
                            vec![
                                text(self.database),
                                text("public"),
                                text(&t.name),
                                text("BASE TABLE"),
                            ]
                        })
                        .collect(),
                )
            }
            "information_schema.columns" => {
                let tables = self.db_tables(txn)?;
                let mut rows = Vec::new();
                for t in &tables {
                    for (i, c) in t.columns.iter().enumerate() {
                        rows.push(vec![
                            text(self.database),
                            text("public"),
                            text(&t.name),
                            text(&c.name),
                            Value::Int(i as i64 + 1),
                            c.default.clone().map(Value::Text).unwrap_or(Value::Null),
                            text(if c.nullable { "YES" } else { "NO" }),
                            text(&c.ty.sql_name()),
                        ]);
                    }
                }
                (
                    vec![
                        ("table_catalog".into(), DataType::Text),
                        ("table_schema".into(), DataType::Text),
                        ("table_name".into(), DataType::Text),
                        ("column_name".into(), DataType::Text),
                        ("ordinal_position".into(), DataType::Int4),
                        ("column_default".into(), DataType::Text),
                        ("is_nullable".into(), DataType::Text),
                        ("data_type".into(), DataType::Text),
                    ],
                    rows,
                )
            }
            _ => return Ok(None),
        }))
    }
}

impl System<'_> {
    fn db_tables(
        &self,
        txn: &mut Transaction,
    ) -> Result<Vec<std::sync::Arc<crate::catalog::Table>>> {
        self.db.catalog().tables(txn, self.database)
    }

    fn db_catalog_databases(&self, txn: &mut Transaction) -> Result<Vec<String>> {
        self.db.catalog().databases(txn)
    }
}
