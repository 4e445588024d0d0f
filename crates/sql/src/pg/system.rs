//! Tables Kiln computes instead of storing: `kiln_stat` (the ED counters) and the parts of
//! `pg_catalog` and `information_schema` that clients read.

use std::collections::{BTreeMap, HashSet};

use kiln_engine::Transaction;

use crate::bind::SystemTables;
use crate::catalog::{schema_of, unqualified, Table};
use crate::database::Database;
use crate::error::Result;
use crate::plan::Relation;
use crate::types::{Columns, DataType, Value};

/// The system tables of one session.
pub struct System<'a> {
    /// The database server.
    pub db: &'a Database,
    /// The session's database.
    pub database: &'a str,
    /// The session's settings (pg_settings).
    pub settings: &'a BTreeMap<String, String>,
    /// The session's open cursors (pg_cursors): name, query, WITH HOLD.
    pub cursors: Vec<(String, String, bool, bool)>,
}

impl<'a> System<'a> {
    /// The system tables as a session sees them (its settings, its cursors).
    pub(crate) fn new(
        db: &'a Database,
        database: &'a str,
        settings: &'a BTreeMap<String, String>,
        cursors: &crate::cursor::Cursors,
    ) -> System<'a> {
        System { db, database, settings, cursors: cursors.listed() }
    }
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
        ("log_zero_fills", s.zero_fills as i64, "extensions of the zeroed space ahead of the log"),
        ("store_bytes", s.store_bytes as i64, "bytes of row versions in memory"),
        ("rows", s.rows as i64, "stored keys (rows and index entries)"),
        ("checkpoints", s.checkpoints as i64, "checkpoints written"),
        ("locked_rows", db.locked_rows() as i64, "row locks held now"),
        (
            "local_csn",
            s.local_csn.map_or(-1, |c| c as i64),
            "cluster: commits on this node's own disk (-1 standalone, where durable_csn is local)",
        ),
        (
            "all_csn",
            s.all_csn.map_or(-1, |c| c as i64),
            "cluster, on the leader: commits fsynced on every voter (-1 standalone)",
        ),
        (
            "leading_term",
            s.leading_term.map_or(0, |t| t as i64),
            "cluster: the term this node leads and takes writes in (0: it does not)",
        ),
    ]
}

/// The one role's name: it owns every object.
pub const ROLE_NAME: &str = "kiln";

/// OIDs of catalog objects: tables and indexes by catalog id, primary-key indexes and
/// constraints in their own ranges.
pub mod oid {
    /// First user object OID (as in PostgreSQL).
    pub const FIRST: i64 = 16384;
    /// The `public` schema.
    pub const PUBLIC: i64 = 2200;
    /// information_schema.
    pub const INFORMATION_SCHEMA: i64 = 13000;
    /// The `pg_catalog` schema.
    pub const PG_CATALOG: i64 = 11;
    /// The only role.
    pub const ROLE: i64 = 10;
    /// The `plpgsql` language (PostgreSQL gives it an OID at initdb; this is 15's).
    pub const PLPGSQL: i64 = 13563;
    /// The `trigger` pseudo-type.
    pub const TRIGGER: i64 = 2279;
    /// The predefined role `pg_database_owner` (owner of the `public` schema).
    pub const DATABASE_OWNER: i64 = 6171;
    /// A table or index with catalog id `id`.
    pub fn object(id: u64) -> i64 {
        FIRST + id as i64
    }
    /// The primary-key index of table `id`.
    pub fn pkey_index(id: u64) -> i64 {
        FIRST + 1_000_000 + id as i64
    }
    /// The constraint behind index OID `index_oid`.
    pub fn constraint(index_oid: i64) -> i64 {
        index_oid + 2_000_000
    }
    /// The `_RETURN` rule of view `id` (its query, as pg_rewrite shows it).
    pub fn rule(id: u64) -> i64 {
        FIRST + 4_000_000 + id as i64
    }
    /// The default of the column at position `i` of the relation with OID `table`.
    pub fn attrdef(table: i64, i: usize) -> i64 {
        table * 1000 + i as i64
    }
    /// The `n`th foreign key or CHECK constraint (checks from 500) of table `id`.
    pub fn table_constraint(id: u64, n: usize) -> i64 {
        FIRST + 1_000_000_000 + id as i64 * 1000 + n as i64
    }
}

/// A statistics view of `tables`: each table's OID, schema and name, then `counters`, all
/// NULL (Kiln counts none of them).
fn tables_with_null_counters(
    tables: &[std::sync::Arc<crate::catalog::Table>],
    counters: &[(&str, DataType)],
) -> Relation {
    let mut columns = cols(&[("relid", O), ("schemaname", N), ("relname", N)]);
    columns.extend(counters.iter().map(|(c, t)| (c.to_string(), *t)));
    let rows = tables
        .iter()
        .map(|t| {
            let mut row = vec![
                Value::Int(oid::object(t.id)),
                Value::Text(schema_of(&t.name).to_string()),
                Value::Text(unqualified(&t.name).to_string()),
            ];
            row.resize(columns.len(), Value::Null);
            row
        })
        .collect();
    (columns, rows)
}

fn cols(spec: &[(&str, DataType)]) -> Columns {
    spec.iter().map(|(n, t)| (n.to_string(), *t)).collect()
}

use DataType::{Bool as B, Int2 as I2, Int4 as I4, Int8 as I8, Text as T};
/// int2[] (pg_constraint.conkey)
const I2A: DataType = DataType::Array(&DataType::Int2);
/// text[] (pg_class.reloptions)
const TA: DataType = DataType::Array(&DataType::Text);
/// oid[] (pg_policy.polroles)
const OA: DataType = DataType::Array(&DataType::Oid);
/// oid: the catalogs' object identifiers
const O: DataType = DataType::Oid;
/// name: the catalogs' identifiers
const N: DataType = DataType::Name;
/// "char": the catalogs' one-byte codes
const C: DataType = DataType::PgChar;

/// The numbers of `table`'s columns at `columns`, as the catalogs list a key's columns.
fn attnums(table: &crate::catalog::Table, columns: &[usize]) -> Value {
    Value::Array(columns.iter().map(|&c| Value::Int(table.attnum(c).into())).collect())
}

impl SystemTables for System<'_> {
    fn setting(&self, name: &str) -> Option<String> {
        self.settings.get(&name.to_lowercase()).cloned()
    }

    fn remember_catalog(&self, txn: &mut Transaction) -> Result<()> {
        self.relations(txn, "").map(drop)
    }

    fn system_table(&self, txn: &mut Transaction, name: &str) -> Result<Option<Relation>> {
        let text = |s: &str| Value::Text(s.to_string());
        let empty = |spec: &[(&str, DataType)]| Some((cols(spec), vec![]));
        Ok(match name {
            "kiln_stat" => Some((
                cols(&[("name", T), ("value", I8), ("description", T)]),
                kiln_stat(self.db)
                    .into_iter()
                    .map(|(n, v, d)| vec![text(n), Value::Int(v), text(d)])
                    .collect(),
            )),
            "kiln_cluster" => {
                let opt = |v: Option<i64>| v.map_or(Value::Null, Value::Int);
                Some((
                    cols(&[
                        ("node_id", I8),
                        ("role", T),
                        ("is_self", B),
                        ("site", T),
                        ("sql_addr", T),
                        ("raft_addr", T),
                        ("term", I8),
                        ("log_index", I8),
                        ("log_csn", I8),
                        ("lag_entries", I8),
                        ("lag_csns", I8),
                        ("lag_bytes", I8),
                        ("lag_ms", I8),
                        ("last_heard_ms", I8),
                    ]),
                    self.db
                        .cluster_members()
                        .into_iter()
                        .map(|m| {
                            vec![
                                Value::Int(m.node_id),
                                text(&m.role),
                                Value::Bool(m.is_self),
                                text(&m.site),
                                text(&m.sql_addr),
                                text(&m.raft_addr),
                                Value::Int(m.term),
                                opt(m.log_index),
                                opt(m.log_csn),
                                opt(m.lag_entries),
                                opt(m.lag_csns),
                                opt(m.lag_bytes),
                                opt(m.lag_ms),
                                opt(m.last_heard_ms),
                            ]
                        })
                        .collect(),
                ))
            }
            "pg_stat_activity" => {
                let ts = |t: Option<i64>| t.map_or(Value::Null, Value::TimestampTz);
                let opt = |t: Option<&str>| t.map_or(Value::Null, text);
                Some((
                    cols(&[
                        ("datid", O),
                        ("datname", N),
                        ("pid", I4),
                        ("leader_pid", I4),
                        ("usesysid", O),
                        ("usename", N),
                        ("application_name", T),
                        ("client_addr", DataType::Inet),
                        ("client_hostname", T),
                        ("client_port", I4),
                        ("backend_start", DataType::TimestampTz(None)),
                        ("xact_start", DataType::TimestampTz(None)),
                        ("query_start", DataType::TimestampTz(None)),
                        ("state_change", DataType::TimestampTz(None)),
                        ("wait_event_type", T),
                        ("wait_event", T),
                        ("state", T),
                        ("backend_xid", T),
                        ("backend_xmin", T),
                        ("query_id", I8),
                        ("query", T),
                        ("backend_type", T),
                    ]),
                    self.db
                        .activities()
                        .snapshots()
                        .into_iter()
                        .map(|a| {
                            vec![
                                Value::Null,
                                text(&a.database),
                                Value::Int(a.pid as i64),
                                Value::Null,
                                Value::Int(10),
                                text(&a.user),
                                text(&a.application_name),
                                a.client.map_or(Value::Null, |c| {
                                    Value::Inet(crate::inet::Inet::from(c.ip()))
                                }),
                                Value::Null,
                                a.client.map_or(Value::Null, |c| Value::Int(c.port().into())),
                                Value::TimestampTz(a.backend_start),
                                ts(a.xact_start),
                                ts(a.query_start),
                                Value::TimestampTz(a.state_change),
                                opt(a.wait.map(|w| w.0)),
                                opt(a.wait.map(|w| w.1)),
                                text(a.state),
                                Value::Null,
                                Value::Null,
                                Value::Null,
                                text(&a.query),
                                text("client backend"),
                            ]
                        })
                        .collect(),
                ))
            }
            // The advisory locks held and waited for, as PostgreSQL lists them: a bigint
            // key's high half in classid and low half in objid (objsubid 1), a pair of
            // integers as classid and objid (objsubid 2). Kiln lists no relation, row or
            // transaction locks (its row locks are not table-level locks).
            "pg_locks" => {
                let databases = self.db.catalog().databases(txn)?;
                let db_oid = |name: &str| {
                    let i = databases.iter().position(|d| d == name);
                    i.map_or(Value::Null, |i| Value::Int(oid::FIRST - 1000 + i as i64))
                };
                let sessions = self.db.activities().snapshots();
                let mut rows = Vec::new();
                for lock in self.db.locks.advisory() {
                    let Some(s) = sessions.iter().find(|s| s.lock_owner == lock.owner) else {
                        continue;
                    };
                    let mode = match lock.mode {
                        crate::locks::LockMode::Exclusive => "ExclusiveLock",
                        crate::locks::LockMode::Shared => "ShareLock",
                    };
                    rows.push(vec![
                        text("advisory"),
                        db_oid(&s.database),
                        Value::Null,
                        Value::Null,
                        Value::Null,
                        Value::Null,
                        Value::Null,
                        Value::Int((lock.key >> 32) as i64),
                        Value::Int((lock.key & 0xffff_ffff) as i64),
                        Value::Int(if lock.pair { 2 } else { 1 }),
                        text(&format!("{}/1", s.pid)),
                        Value::Int(s.pid.into()),
                        text(mode),
                        Value::Bool(lock.granted),
                        Value::Bool(false),
                        Value::Null,
                    ]);
                }
                Some((
                    cols(&[
                        ("locktype", T),
                        ("database", O),
                        ("relation", O),
                        ("page", I4),
                        ("tuple", DataType::Int2),
                        ("virtualxid", T),
                        ("transactionid", T),
                        ("classid", O),
                        ("objid", O),
                        ("objsubid", DataType::Int2),
                        ("virtualtransaction", T),
                        ("pid", I4),
                        ("mode", T),
                        ("granted", B),
                        ("fastpath", B),
                        ("waitstart", DataType::TimestampTz(None)),
                    ]),
                    rows,
                ))
            }
            "pg_settings" => {
                use crate::pg::settings::{default_settings, setting_in_unit, setting_info};
                let defaults: BTreeMap<&str, String> =
                    default_settings(&self.db.config).into_iter().collect();
                let opt = |s: Option<String>| s.map_or(Value::Null, Value::Text);
                let rows = self
                    .settings
                    .iter()
                    .map(|(k, v)| {
                        let info = setting_info(k);
                        let boot = defaults.get(k.as_str()).map(|d| setting_in_unit(&info, d));
                        let source = match defaults.get(k.as_str()) {
                            Some(d) if d == v => "default",
                            _ => "session",
                        };
                        let choices = (!info.choices.is_empty())
                            .then(|| Value::Array(info.choices.iter().map(|c| text(c)).collect()));
                        vec![
                            text(&info.name),
                            text(&setting_in_unit(&info, v)),
                            opt(info.unit.map(str::to_string)),
                            text(info.category),
                            opt((!info.short_desc.is_empty()).then(|| info.short_desc.to_string())),
                            Value::Null,
                            text(info.context),
                            text(info.vartype),
                            text(source),
                            opt(info.bounds.map(|b| b.0.to_string())),
                            opt(info.bounds.map(|b| b.1.to_string())),
                            choices.unwrap_or(Value::Null),
                            opt(boot.clone()),
                            opt(boot),
                            Value::Null,
                            Value::Null,
                            Value::Bool(false),
                        ]
                    })
                    .collect();
                Some((
                    cols(&[
                        ("name", T),
                        ("setting", T),
                        ("unit", T),
                        ("category", T),
                        ("short_desc", T),
                        ("extra_desc", T),
                        ("context", T),
                        ("vartype", T),
                        ("source", T),
                        ("min_val", T),
                        ("max_val", T),
                        ("enumvals", TA),
                        ("boot_val", T),
                        ("reset_val", T),
                        ("sourcefile", T),
                        ("sourceline", I4),
                        ("pending_restart", B),
                    ]),
                    rows,
                ))
            }
            "pg_database" => {
                let names = self.db.catalog().databases(txn)?;
                Some((
                    cols(&[
                        ("oid", O),
                        ("datname", N),
                        ("datdba", O),
                        ("encoding", I4),
                        ("datlocprovider", C),
                        ("datistemplate", B),
                        ("datallowconn", B),
                        ("datconnlimit", I4),
                        ("dattablespace", O),
                        ("datcollate", T),
                        ("datctype", T),
                        ("daticulocale", T),
                        ("datcollversion", T),
                        ("datacl", TA),
                        ("datfrozenxid", O),
                        ("datminmxid", O),
                    ]),
                    names
                        .into_iter()
                        .enumerate()
                        .map(|(i, n)| {
                            vec![
                                Value::Int(oid::FIRST - 1000 + i as i64),
                                Value::Text(n),
                                Value::Int(oid::ROLE),
                                Value::Int(6),
                                text("c"),
                                Value::Bool(false),
                                Value::Bool(true),
                                Value::Int(-1),
                                Value::Int(1663),
                                text("C"),
                                text("C"),
                                Value::Null,
                                Value::Null,
                                Value::Null,
                                Value::Int(0),
                                Value::Int(1),
                            ]
                        })
                        .collect(),
                ))
            }
            "pg_namespace" => {
                let mut rows = vec![
                    vec![
                        Value::Int(oid::PG_CATALOG),
                        text("pg_catalog"),
                        Value::Int(oid::ROLE),
                        Value::Null,
                    ],
                    // Owned by pg_database_owner, with its default privileges, as
                    // PostgreSQL 15 creates it.
                    vec![
                        Value::Int(oid::PUBLIC),
                        text("public"),
                        Value::Int(oid::DATABASE_OWNER),
                        public_schema_acl(),
                    ],
                    vec![
                        Value::Int(oid::INFORMATION_SCHEMA),
                        text("information_schema"),
                        Value::Int(oid::ROLE),
                        Value::Null,
                    ],
                ];
                // The schemas made with CREATE SCHEMA, owned by their creator.
                for schema in self.db.catalog().schemas(txn, self.database)? {
                    rows.push(vec![
                        Value::Int(oid::object(schema.id)),
                        text(&schema.name),
                        Value::Int(oid::ROLE),
                        Value::Null,
                    ]);
                }
                Some((cols(&[("oid", O), ("nspname", N), ("nspowner", O), ("nspacl", TA)]), rows))
            }
            "pg_am" => Some((
                cols(&[("oid", O), ("amname", N), ("amhandler", T), ("amtype", C)]),
                vec![
                    vec![Value::Int(2), text("heap"), text("heap_tableam_handler"), text("t")],
                    vec![Value::Int(403), text("btree"), text("bthandler"), text("i")],
                    vec![Value::Int(405), text("hash"), text("hashhandler"), text("i")],
                    vec![Value::Int(783), text("gist"), text("gisthandler"), text("i")],
                    vec![Value::Int(2742), text("gin"), text("ginhandler"), text("i")],
                    vec![Value::Int(4000), text("spgist"), text("spghandler"), text("i")],
                    vec![Value::Int(3580), text("brin"), text("brinhandler"), text("i")],
                ],
            )),
            "pg_roles" | "pg_user" | "pg_authid" => Some((
                cols(&[
                    ("oid", O),
                    ("rolname", N),
                    ("rolsuper", B),
                    ("rolinherit", B),
                    ("rolcreaterole", B),
                    ("rolcreatedb", B),
                    ("rolcanlogin", B),
                    ("rolreplication", B),
                    ("rolconnlimit", I4),
                    ("rolbypassrls", B),
                    ("rolconfig", TA),
                    ("usename", N),
                    ("usesysid", O),
                    ("rolvaliduntil", DataType::TimestampTz(None)),
                    ("rolpassword", T),
                ]),
                {
                    let role = |oid: i64, name: &str, login: bool| {
                        vec![
                            Value::Int(oid),
                            text(name),
                            Value::Bool(login),
                            Value::Bool(true),
                            Value::Bool(login),
                            Value::Bool(login),
                            Value::Bool(login),
                            Value::Bool(false),
                            Value::Int(-1),
                            Value::Bool(login),
                            Value::Null,
                            text(name),
                            Value::Int(oid),
                            Value::Null,
                            Value::Null,
                        ]
                    };
                    let mut rows = vec![role(oid::ROLE, ROLE_NAME, true)];
                    // The predefined role that owns the public schema (no login: pg_user,
                    // which lists users, leaves it out).
                    if name != "pg_user" {
                        rows.push(role(oid::DATABASE_OWNER, "pg_database_owner", false));
                    }
                    rows
                },
            )),
            // Kiln's own functions are built in and have no rows; the trigger functions made
            // with CREATE FUNCTION do.
            "pg_proc" => Some(self.functions(txn)?),
            "pg_aggregate" => Some(self.aggregates(txn)?),
            // Catalogs of objects Kiln does not have (operators, operator families, text
            // search, foreign data, default privileges, conversions, casts, transforms,
            // event triggers, subscriptions, large objects, security labels, initial
            // privileges): empty, with PostgreSQL's columns, so that tools which list every
            // kind of object (pg_dump, GUI browsers) read none.
            "pg_operator" => empty(&[
                ("oid", O),
                ("oprname", N),
                ("oprnamespace", O),
                ("oprowner", O),
                ("oprkind", C),
                ("oprcanmerge", B),
                ("oprcanhash", B),
                ("oprleft", O),
                ("oprright", O),
                ("oprresult", O),
                ("oprcom", O),
                ("oprnegate", O),
                ("oprcode", O),
                ("oprrest", O),
                ("oprjoin", O),
            ]),
            "pg_opfamily" => empty(&[
                ("oid", O),
                ("opfmethod", O),
                ("opfname", N),
                ("opfnamespace", O),
                ("opfowner", O),
            ]),
            "pg_amop" => empty(&[
                ("oid", O),
                ("amopfamily", O),
                ("amoplefttype", O),
                ("amoprighttype", O),
                ("amopstrategy", I2),
                ("amoppurpose", C),
                ("amopopr", O),
                ("amopmethod", O),
                ("amopsortfamily", O),
            ]),
            "pg_amproc" => empty(&[
                ("oid", O),
                ("amprocfamily", O),
                ("amproclefttype", O),
                ("amprocrighttype", O),
                ("amprocnum", I2),
                ("amproc", O),
            ]),
            "pg_ts_parser" => empty(&[
                ("oid", O),
                ("prsname", N),
                ("prsnamespace", O),
                ("prsstart", O),
                ("prstoken", O),
                ("prsend", O),
                ("prsheadline", O),
                ("prslextype", O),
            ]),
            "pg_ts_template" => empty(&[
                ("oid", O),
                ("tmplname", N),
                ("tmplnamespace", O),
                ("tmplinit", O),
                ("tmpllexize", O),
            ]),
            "pg_ts_dict" => empty(&[
                ("oid", O),
                ("dictname", N),
                ("dictnamespace", O),
                ("dictowner", O),
                ("dicttemplate", O),
                ("dictinitoption", T),
            ]),
            "pg_ts_config" => empty(&[
                ("oid", O),
                ("cfgname", N),
                ("cfgnamespace", O),
                ("cfgowner", O),
                ("cfgparser", O),
            ]),
            "pg_foreign_data_wrapper" => empty(&[
                ("oid", O),
                ("fdwname", N),
                ("fdwowner", O),
                ("fdwhandler", O),
                ("fdwvalidator", O),
                ("fdwacl", TA),
                ("fdwoptions", TA),
            ]),
            "pg_foreign_server" => empty(&[
                ("oid", O),
                ("srvname", N),
                ("srvowner", O),
                ("srvfdw", O),
                ("srvtype", T),
                ("srvversion", T),
                ("srvacl", TA),
                ("srvoptions", TA),
            ]),
            "pg_foreign_table" => empty(&[("ftrelid", O), ("ftserver", O), ("ftoptions", TA)]),
            "pg_user_mapping" | "pg_user_mappings" => {
                empty(&[("oid", O), ("umuser", O), ("umserver", O), ("umoptions", TA)])
            }
            "pg_default_acl" => empty(&[
                ("oid", O),
                ("defaclrole", O),
                ("defaclnamespace", O),
                ("defaclobjtype", C),
                ("defaclacl", TA),
            ]),
            "pg_conversion" => empty(&[
                ("oid", O),
                ("conname", N),
                ("connamespace", O),
                ("conowner", O),
                ("conforencoding", I4),
                ("contoencoding", I4),
                ("conproc", O),
                ("condefault", B),
            ]),
            "pg_cast" => empty(&[
                ("oid", O),
                ("castsource", O),
                ("casttarget", O),
                ("castfunc", O),
                ("castcontext", C),
                ("castmethod", C),
            ]),
            "pg_transform" => empty(&[
                ("oid", O),
                ("trftype", O),
                ("trflang", O),
                ("trffromsql", O),
                ("trftosql", O),
            ]),
            "pg_event_trigger" => empty(&[
                ("oid", O),
                ("evtname", N),
                ("evtevent", N),
                ("evtowner", O),
                ("evtfoid", O),
                ("evtenabled", C),
                ("evttags", TA),
            ]),
            "pg_subscription" => empty(&[
                ("oid", O),
                ("subdbid", O),
                ("subskiplsn", T),
                ("subname", N),
                ("subowner", O),
                ("subenabled", B),
                ("subbinary", B),
                ("substream", B),
                ("subtwophasestate", C),
                ("subdisableonerr", B),
                ("subconninfo", T),
                ("subslotname", N),
                ("subsynccommit", T),
                ("subpublications", TA),
            ]),
            "pg_largeobject_metadata" => empty(&[("oid", O), ("lomowner", O), ("lomacl", TA)]),
            "pg_seclabel" | "pg_seclabels" => empty(&[
                ("objoid", O),
                ("classoid", O),
                ("objsubid", I4),
                ("objtype", T),
                ("objnamespace", O),
                ("objname", T),
                ("provider", T),
                ("label", T),
            ]),
            "pg_shseclabel" => {
                empty(&[("objoid", O), ("classoid", O), ("provider", T), ("label", T)])
            }
            "pg_db_role_setting" => empty(&[("setdatabase", O), ("setrole", O), ("setconfig", TA)]),
            "pg_shdescription" => empty(&[("objoid", O), ("classoid", O), ("description", T)]),
            // The privileges objects had when the database was created: the public
            // schema's (pg_dump dumps only changes to them).
            "pg_init_privs" => Some((
                cols(&[
                    ("objoid", O),
                    ("classoid", O),
                    ("objsubid", I4),
                    ("privtype", C),
                    ("initprivs", TA),
                ]),
                vec![vec![
                    Value::Int(oid::PUBLIC),
                    Value::Int(2615),
                    Value::Int(0),
                    text("i"),
                    public_schema_acl(),
                ]],
            )),
            "pg_auth_members" => empty(&[
                ("oid", O),
                ("roleid", O),
                ("member", O),
                ("grantor", O),
                ("admin_option", B),
            ]),
            "pg_extension" => {
                use crate::exec::extension::{BUILT_IN, BUILT_IN_OID};
                let row = |oid: i64, name: &str, namespace: i64, version: &str| {
                    vec![
                        Value::Int(oid),
                        text(name),
                        Value::Int(oid::ROLE),
                        Value::Int(namespace),
                        Value::Bool(name != BUILT_IN),
                        text(version),
                        Value::Null,
                        Value::Null,
                    ]
                };
                let mut rows = vec![row(BUILT_IN_OID, BUILT_IN, oid::PG_CATALOG, "1.0")];
                for e in self.db.catalog().extensions(txn, self.database)? {
                    rows.push(row(oid::object(e.id), &e.name, oid::PUBLIC, &e.version));
                }
                Some((
                    cols(&[
                        ("oid", O),
                        ("extname", N),
                        ("extowner", O),
                        ("extnamespace", O),
                        ("extrelocatable", B),
                        ("extversion", T),
                        ("extconfig", OA),
                        ("extcondition", TA),
                    ]),
                    rows,
                ))
            }
            "pg_available_extensions" => {
                let installed = self.db.catalog().extensions(txn, self.database)?;
                let rows = crate::exec::extension::AVAILABLE
                    .iter()
                    .map(|a| {
                        let here = a.name == crate::exec::extension::BUILT_IN
                            || installed.iter().any(|e| e.name == a.name);
                        vec![
                            text(a.name),
                            text(a.version),
                            if here { text(a.version) } else { Value::Null },
                            text(a.comment),
                        ]
                    })
                    .collect();
                Some((
                    cols(&[
                        ("name", T),
                        ("default_version", T),
                        ("installed_version", T),
                        ("comment", T),
                    ]),
                    rows,
                ))
            }
            "pg_language" => {
                let row = |oid: i64, name: &str, validator: i64| {
                    vec![
                        Value::Int(oid),
                        text(name),
                        Value::Int(oid::ROLE),
                        Value::Bool(false),
                        Value::Bool(oid == 14),
                        Value::Int(0),
                        Value::Int(0),
                        Value::Int(validator),
                        Value::Null,
                    ]
                };
                Some((
                    cols(&[
                        ("oid", O),
                        ("lanname", N),
                        ("lanowner", O),
                        ("lanispl", B),
                        ("lanpltrusted", B),
                        ("lanplcallfoid", O),
                        ("laninline", O),
                        ("lanvalidator", O),
                        ("lanacl", TA),
                    ]),
                    vec![
                        row(12, "internal", 2246),
                        row(14, "sql", 2248),
                        row(oid::PLPGSQL, "plpgsql", 0),
                    ],
                ))
            }
            "pg_type" => {
                let scalars = [
                    DataType::Bool,
                    DataType::Bytea,
                    DataType::Int8,
                    DataType::Int2,
                    DataType::Int4,
                    DataType::Text,
                    DataType::Float4,
                    DataType::Float8,
                    DataType::Char(1),
                    DataType::Varchar(None),
                    DataType::Date,
                    DataType::Timestamp(None),
                    DataType::TimestampTz(None),
                    DataType::Numeric(None),
                    DataType::Uuid,
                    DataType::Inet,
                    DataType::Cidr,
                    DataType::Time(None),
                    DataType::Interval(None),
                    DataType::Json,
                    DataType::Jsonb,
                    DataType::Oid,
                    DataType::Name,
                    DataType::PgChar,
                    DataType::TsVector,
                    DataType::TsQuery,
                    DataType::RegConfig,
                ];
                let mut types: Vec<DataType> = scalars.to_vec();
                types.extend(scalars.iter().map(|t| crate::array::array_of_plain(*t)));
                types.extend([DataType::Int2Vector, DataType::OidVector]);
                // The database's enum types, and their arrays.
                let enums = self.db.catalog().enum_types(txn, self.database)?;
                self.db.remember_enum_types(self.database, &enums);
                for e in enums {
                    types.push(DataType::Enum(e));
                    types.push(crate::array::array_of(DataType::Enum(e))?);
                }
                let type_row = |t: &DataType| {
                    let user = t.is_enum();
                    let elem = t.element();
                    let collatable = t.is_string();
                    let array = match t {
                        DataType::Array(_) => 0,
                        DataType::Int2Vector => 1006,
                        DataType::OidVector => 1013,
                        t => crate::array::array_oid(*t) as i64,
                    };
                    let category = match t {
                        _ if elem.is_some() => "A",
                        DataType::Enum(_) => "E",
                        DataType::Bool => "B",
                        DataType::Date
                        | DataType::Timestamp(_)
                        | DataType::TimestampTz(_)
                        | DataType::Time(_) => "D",
                        DataType::Interval(_) => "T",
                        DataType::Json | DataType::Jsonb => "U",
                        DataType::Inet | DataType::Cidr => "I",
                        DataType::RegConfig => "N",
                        t if t.is_numeric() => "N",
                        _ if collatable => "S",
                        _ => "U",
                    };
                    let io = match t {
                        DataType::Enum(_) => "enum".to_string(),
                        t => t.type_name().trim_start_matches('_').to_string(),
                    };
                    let (input, output, receive, send) = if matches!(t, DataType::Array(_)) {
                        (
                            "array_in".into(),
                            "array_out".into(),
                            "array_recv".into(),
                            "array_send".into(),
                        )
                    } else {
                        // PostgreSQL's newer types name their I/O functions with an underscore.
                        let sep = match t {
                            DataType::Date
                            | DataType::Time(_)
                            | DataType::Timestamp(_)
                            | DataType::TimestampTz(_)
                            | DataType::Interval(_)
                            | DataType::Uuid
                            | DataType::Inet
                            | DataType::Cidr
                            | DataType::Json
                            | DataType::Enum(_)
                            | DataType::Numeric(_) => "_",
                            _ => "",
                        };
                        (
                            format!("{io}{sep}in"),
                            format!("{io}{sep}out"),
                            format!("{io}{sep}recv"),
                            format!("{io}{sep}send"),
                        )
                    };
                    vec![
                        Value::Int(t.oid() as i64),
                        text(&t.type_name()),
                        Value::Int(if user { oid::PUBLIC } else { oid::PG_CATALOG }),
                        Value::Int(oid::ROLE),
                        Value::Int(t.size() as i64),
                        Value::Bool((1..=8).contains(&t.size())),
                        text(if matches!(t, DataType::Enum(_)) { "e" } else { "b" }),
                        text(category),
                        Value::Bool(matches!(
                            t,
                            DataType::Text
                                | DataType::Bool
                                | DataType::Float8
                                | DataType::TimestampTz(_)
                                | DataType::Numeric(_)
                                | DataType::Interval(_)
                        )),
                        Value::Bool(true),
                        text(","),
                        Value::Int(0),
                        Value::Int(elem.map_or(0, |e| {
                            if *t == DataType::OidVector {
                                26
                            } else {
                                e.oid() as i64
                            }
                        })),
                        Value::Int(array),
                        text(&input),
                        text(&output),
                        text(&receive),
                        text(&send),
                        text(alignment(*t)),
                        text(storage(*t)),
                        Value::Bool(false),
                        Value::Int(0),
                        Value::Int(-1),
                        Value::Int(i64::from(elem.is_some())),
                        Value::Int(if collatable { 100 } else { 0 }),
                        Value::Null,
                        Value::Null,
                        text(if elem.is_some() { "array_subscript_handler" } else { "-" }),
                        Value::Null,
                    ]
                };
                Some((
                    cols(&[
                        ("oid", O),
                        ("typname", N),
                        ("typnamespace", O),
                        ("typowner", O),
                        ("typlen", I2),
                        ("typbyval", B),
                        ("typtype", C),
                        ("typcategory", C),
                        ("typispreferred", B),
                        ("typisdefined", B),
                        ("typdelim", C),
                        ("typrelid", O),
                        ("typelem", O),
                        ("typarray", O),
                        ("typinput", T),
                        ("typoutput", T),
                        ("typreceive", T),
                        ("typsend", T),
                        ("typalign", C),
                        ("typstorage", C),
                        ("typnotnull", B),
                        ("typbasetype", O),
                        ("typtypmod", I4),
                        ("typndims", I4),
                        ("typcollation", O),
                        ("typdefault", T),
                        ("typacl", TA),
                        ("typsubscript", T),
                        ("typdefaultbin", T),
                    ]),
                    {
                        let mut rows: Vec<Vec<Value>> = types.iter().map(type_row).collect();
                        // Domains: their base type's row, as a domain of it.
                        let domains = self.db.catalog().domains(txn, self.database)?;
                        self.db.remember_domains(self.database, &domains);
                        for d in &domains {
                            let mut row = type_row(&d.base);
                            row[0] = Value::Int(d.oid.into());
                            row[1] = text(&d.name);
                            row[2] = Value::Int(oid::PUBLIC);
                            row[6] = text("d");
                            row[13] = Value::Int(0);
                            row[14] = text("domain_in");
                            row[16] = text("domain_recv");
                            row[20] = Value::Bool(d.not_null);
                            row[21] = Value::Int(d.base.oid().into());
                            row[22] = Value::Int(d.base.modifier().into());
                            row[25] = d.default.as_deref().map_or(Value::Null, |x| {
                                text(&crate::pg::defaults::shown(x, d.base, false))
                            });
                            row[28] = row[25].clone();
                            rows.push(row);
                        }
                        rows
                    },
                ))
            }
            "pg_sequence" => {
                let sequences = self.db.catalog().sequences(txn, self.database)?;
                Some((
                    cols(&[
                        ("seqrelid", O),
                        ("seqtypid", O),
                        ("seqstart", I8),
                        ("seqincrement", I8),
                        ("seqmax", I8),
                        ("seqmin", I8),
                        ("seqcache", I8),
                        ("seqcycle", B),
                    ]),
                    sequences
                        .iter()
                        .map(|s| {
                            vec![
                                Value::Int(oid::object(s.id)),
                                Value::Int(s.ty.oid() as i64),
                                Value::Int(s.start),
                                Value::Int(s.increment),
                                Value::Int(s.max),
                                Value::Int(s.min),
                                Value::Int(s.cache),
                                Value::Bool(s.cycle),
                            ]
                        })
                        .collect(),
                ))
            }
            "information_schema.sequences" => {
                let sequences = self.db.catalog().sequences(txn, self.database)?;
                let bits = |t: DataType| match t {
                    DataType::Int2 => 16,
                    DataType::Int4 => 32,
                    _ => 64,
                };
                Some((
                    cols(&[
                        ("sequence_catalog", T),
                        ("sequence_schema", T),
                        ("sequence_name", T),
                        ("data_type", T),
                        ("numeric_precision", I4),
                        ("numeric_precision_radix", I4),
                        ("numeric_scale", I4),
                        ("start_value", T),
                        ("minimum_value", T),
                        ("maximum_value", T),
                        ("increment", T),
                        ("cycle_option", T),
                    ]),
                    sequences
                        .iter()
                        .map(|s| {
                            vec![
                                text(self.database),
                                text(schema_of(&s.name)),
                                text(unqualified(&s.name)),
                                text(&s.ty.sql_name()),
                                Value::Int(bits(s.ty)),
                                Value::Int(2),
                                Value::Int(0),
                                text(&s.start.to_string()),
                                text(&s.min.to_string()),
                                text(&s.max.to_string()),
                                text(&s.increment.to_string()),
                                text(if s.cycle { "YES" } else { "NO" }),
                            ]
                        })
                        .collect(),
                ))
            }
            // Kiln's indexes use each type's default operator class; none other exists.
            "pg_opclass" => empty(&[
                ("oid", O),
                ("opcmethod", O),
                ("opcname", N),
                ("opcnamespace", O),
                ("opcowner", O),
                ("opcfamily", O),
                ("opcintype", O),
                ("opcdefault", B),
                ("opckeytype", O),
            ]),
            "pg_collation" => Some((
                cols(&[
                    ("oid", O),
                    ("collname", N),
                    ("collnamespace", O),
                    ("collprovider", C),
                    ("collcollate", T),
                    ("collctype", T),
                    ("collowner", O),
                    ("collencoding", I4),
                    ("collisdeterministic", B),
                ]),
                vec![
                    vec![
                        Value::Int(100),
                        text("default"),
                        Value::Int(oid::PG_CATALOG),
                        text("d"),
                        Value::Null,
                        Value::Null,
                        Value::Int(oid::ROLE),
                        Value::Int(-1),
                        Value::Bool(true),
                    ],
                    vec![
                        Value::Int(950),
                        text("C"),
                        Value::Int(oid::PG_CATALOG),
                        text("c"),
                        text("C"),
                        text("C"),
                        Value::Int(oid::ROLE),
                        Value::Int(-1),
                        Value::Bool(true),
                    ],
                ],
            )),
            "pg_class"
            | "pg_attribute"
            | "pg_attrdef"
            | "pg_index"
            | "pg_constraint"
            | "pg_indexes"
            | "pg_tables"
            | "pg_inherits"
            | "pg_partitioned_table" => Some(self.relations(txn, name)?),
            "pg_policy" => empty(&[
                ("oid", O),
                ("polname", N),
                ("polrelid", O),
                ("polcmd", C),
                ("polpermissive", B),
                ("polroles", OA),
                ("polqual", T),
                ("polwithcheck", T),
            ]),
            "pg_statistic_ext" => empty(&[
                ("oid", O),
                ("stxrelid", O),
                ("stxname", N),
                ("stxnamespace", O),
                ("stxowner", O),
                ("stxstattarget", I4),
                ("stxkeys", DataType::Int2Vector),
                ("stxkind", TA),
            ]),
            "pg_publication" => empty(&[
                ("oid", O),
                ("pubname", N),
                ("pubowner", O),
                ("puballtables", B),
                ("pubinsert", B),
                ("pubupdate", B),
                ("pubdelete", B),
                ("pubtruncate", B),
                ("pubviaroot", B),
            ]),
            "pg_publication_namespace" => empty(&[("oid", O), ("pnpubid", O), ("pnnspid", O)]),
            "pg_publication_rel" => empty(&[
                ("oid", O),
                ("prpubid", O),
                ("prrelid", O),
                ("prqual", T),
                ("prattrs", DataType::Int2Vector),
            ]),
            "pg_description" => Some(self.descriptions(txn)?),
            "pg_trigger" => Some(self.triggers(txn)?),
            "pg_rewrite" => Some(self.rules(txn)?),
            "pg_depend" => Some(self.dependencies(txn)?),
            "pg_cursors" => Some((
                cols(&[
                    ("name", T),
                    ("statement", T),
                    ("is_holdable", B),
                    ("is_binary", B),
                    ("is_scrollable", B),
                    ("creation_time", DataType::TimestampTz(None)),
                ]),
                self.cursors
                    .iter()
                    .map(|(name, statement, hold, scroll)| {
                        vec![
                            text(name),
                            text(statement),
                            Value::Bool(*hold),
                            Value::Bool(false),
                            Value::Bool(*scroll),
                            Value::Null,
                        ]
                    })
                    .collect(),
            )),
            // Kiln has no range types; clients that map type OIDs read it (Sequelize on
            // connect).
            "pg_range" => empty(&[
                ("rngtypid", O),
                ("rngsubtype", O),
                ("rngmultitypid", O),
                ("rngcollation", O),
                ("rngsubopc", O),
                ("rngcanonical", T),
                ("rngsubdiff", T),
            ]),
            // Per-table I/O statistics: the tables, their counters NULL (Kiln counts no
            // buffer blocks). Tools join it to name a table's comment (Sequelize).
            "pg_statio_all_tables" | "pg_statio_user_tables" => {
                let tables = self.db.catalog().tables(txn, self.database)?;
                let counters = [
                    ("heap_blks_read", I8),
                    ("heap_blks_hit", I8),
                    ("idx_blks_read", I8),
                    ("idx_blks_hit", I8),
                    ("toast_blks_read", I8),
                    ("toast_blks_hit", I8),
                    ("tidx_blks_read", I8),
                    ("tidx_blks_hit", I8),
                ];
                Some(tables_with_null_counters(&tables, &counters))
            }
            // The tz database's zones as they are now: name, abbreviation, offset from UTC
            // and whether daylight-saving time is in force (Kiln's tz database is built in).
            "pg_timezone_names" => {
                let now = crate::types::now_micros();
                let rows = crate::zone::named_zones()
                    .map(|(name, zone)| {
                        let offset = zone.offset_at(now) as i64 * 1_000_000;
                        vec![
                            text(name),
                            text(&zone.abbreviation_at(now)),
                            Value::Interval(crate::interval::Interval {
                                micros: offset,
                                ..Default::default()
                            }),
                            Value::Bool(zone.dst_at(now)),
                        ]
                    })
                    .collect();
                Some((
                    cols(&[
                        ("name", T),
                        ("abbrev", T),
                        ("utc_offset", DataType::Interval(None)),
                        ("is_dst", B),
                    ]),
                    rows,
                ))
            }
            // Per-table activity statistics: the tables, their counters NULL (Kiln counts
            // no scans, tuples or vacuums). Monitoring tools and admin consoles list it.
            "pg_stat_all_tables" | "pg_stat_user_tables" => {
                let tables = self.db.catalog().tables(txn, self.database)?;
                let counters: &[(&str, DataType)] = &[
                    ("seq_scan", I8),
                    ("seq_tup_read", I8),
                    ("idx_scan", I8),
                    ("idx_tup_fetch", I8),
                    ("n_tup_ins", I8),
                    ("n_tup_upd", I8),
                    ("n_tup_del", I8),
                    ("n_tup_hot_upd", I8),
                    ("n_live_tup", I8),
                    ("n_dead_tup", I8),
                    ("n_mod_since_analyze", I8),
                    ("n_ins_since_vacuum", I8),
                    ("last_vacuum", DataType::TimestampTz(None)),
                    ("last_autovacuum", DataType::TimestampTz(None)),
                    ("last_analyze", DataType::TimestampTz(None)),
                    ("last_autoanalyze", DataType::TimestampTz(None)),
                    ("vacuum_count", I8),
                    ("autovacuum_count", I8),
                    ("analyze_count", I8),
                    ("autoanalyze_count", I8),
                ];
                Some(tables_with_null_counters(&tables, counters))
            }
            // Per-index statistics, likewise: the indexes (a primary key's too), their
            // counters NULL.
            "pg_stat_all_indexes"
            | "pg_stat_user_indexes"
            | "pg_statio_all_indexes"
            | "pg_statio_user_indexes" => {
                let tables = self.db.catalog().tables(txn, self.database)?;
                let counters: &[&str] = if name.starts_with("pg_statio") {
                    &["idx_blks_read", "idx_blks_hit"]
                } else {
                    &["idx_scan", "idx_tup_read", "idx_tup_fetch"]
                };
                let mut columns = cols(&[
                    ("relid", O),
                    ("indexrelid", O),
                    ("schemaname", N),
                    ("relname", N),
                    ("indexrelname", N),
                ]);
                columns.extend(counters.iter().map(|c| (c.to_string(), I8)));
                let mut rows = Vec::new();
                for t in &tables {
                    let mut indexes: Vec<(i64, String)> =
                        t.indexes.iter().map(|ix| (oid::object(ix.id), ix.name.clone())).collect();
                    if !t.primary_key.is_empty() {
                        indexes.insert(0, (oid::pkey_index(t.id), t.pkey_name()));
                    }
                    for (ioid, iname) in indexes {
                        let mut row = vec![
                            Value::Int(oid::object(t.id)),
                            Value::Int(ioid),
                            text(schema_of(&t.name)),
                            text(unqualified(&t.name)),
                            text(&iname),
                        ];
                        row.extend(counters.iter().map(|_| Value::Null));
                        rows.push(row);
                    }
                }
                Some((columns, rows))
            }
            // Per-database statistics: each database with its sessions counted, its other
            // counters NULL.
            "pg_stat_database" => {
                let names = self.db.catalog().databases(txn)?;
                let sessions = self.db.activities().snapshots();
                let counters = [
                    "xact_commit",
                    "xact_rollback",
                    "blks_read",
                    "blks_hit",
                    "tup_returned",
                    "tup_fetched",
                    "tup_inserted",
                    "tup_updated",
                    "tup_deleted",
                    "conflicts",
                    "temp_files",
                    "temp_bytes",
                    "deadlocks",
                    "checksum_failures",
                ];
                let mut columns = cols(&[("datid", O), ("datname", N), ("numbackends", I4)]);
                columns.extend(counters.iter().map(|c| (c.to_string(), I8)));
                columns.extend(cols(&[
                    ("checksum_last_failure", DataType::TimestampTz(None)),
                    ("blk_read_time", DataType::Float8),
                    ("blk_write_time", DataType::Float8),
                    ("session_time", DataType::Float8),
                    ("active_time", DataType::Float8),
                    ("idle_in_transaction_time", DataType::Float8),
                    ("sessions", I8),
                    ("sessions_abandoned", I8),
                    ("sessions_fatal", I8),
                    ("sessions_killed", I8),
                    ("stats_reset", DataType::TimestampTz(None)),
                ]));
                let width = columns.len();
                let rows = names
                    .into_iter()
                    .enumerate()
                    .map(|(i, n)| {
                        let backends = sessions.iter().filter(|a| a.database == n).count();
                        let mut row = vec![
                            Value::Int(oid::FIRST - 1000 + i as i64),
                            Value::Text(n),
                            Value::Int(backends as i64),
                        ];
                        row.resize(width, Value::Null);
                        row
                    })
                    .collect();
                Some((columns, rows))
            }
            "pg_enum" => {
                let enums = self.db.catalog().enum_types(txn, self.database)?;
                self.db.remember_enum_types(self.database, &enums);
                let rows = enums
                    .iter()
                    .flat_map(|e| {
                        e.labels.iter().map(|l| {
                            vec![
                                Value::Int(l.oid.into()),
                                Value::Int(e.oid.into()),
                                Value::Float(l.sort as f32 as f64),
                                text(&l.label),
                            ]
                        })
                    })
                    .collect();
                Some((
                    cols(&[
                        ("oid", O),
                        ("enumtypid", O),
                        ("enumsortorder", DataType::Float4),
                        ("enumlabel", N),
                    ]),
                    rows,
                ))
            }
            "pg_tablespace" => Some((
                cols(&[("oid", O), ("spcname", N), ("spcowner", O)]),
                vec![vec![Value::Int(1663), text("pg_default"), Value::Int(oid::ROLE)]],
            )),
            "information_schema.schemata" => {
                let row = |name: &str, owner: &str| {
                    let mut row = vec![text(self.database), text(name), text(owner)];
                    row.extend((0..4).map(|_| Value::Null));
                    row
                };
                let mut rows = vec![
                    row("pg_catalog", "kiln"),
                    row("public", "pg_database_owner"),
                    row("information_schema", "kiln"),
                ];
                for schema in self.db.catalog().schemas(txn, self.database)? {
                    rows.push(row(&schema.name, "kiln"));
                }
                Some((
                    cols(&[
                        ("catalog_name", N),
                        ("schema_name", N),
                        ("schema_owner", N),
                        ("default_character_set_catalog", N),
                        ("default_character_set_schema", N),
                        ("default_character_set_name", N),
                        ("sql_path", T),
                    ]),
                    rows,
                ))
            }
            "information_schema.tables" => {
                let tables = self.db.catalog().tables(txn, self.database)?;
                let views = self.db.catalog().views(txn, self.database)?;
                let row = |name: &str, kind: &str| {
                    let (schema, name) = (schema_of(name), unqualified(name));
                    vec![text(self.database), text(schema), text(name), text(kind)]
                };
                // Materialized views are not among them, as in PostgreSQL.
                let mut rows: Vec<Vec<Value>> = tables
                    .iter()
                    .filter(|t| t.matview.is_none())
                    .map(|t| row(&t.name, "BASE TABLE"))
                    .collect();
                rows.extend(views.iter().map(|v| row(&v.name, "VIEW")));
                Some((
                    cols(&[
                        ("table_catalog", T),
                        ("table_schema", T),
                        ("table_name", T),
                        ("table_type", T),
                    ]),
                    rows,
                ))
            }
            "pg_matviews" => {
                let tables = self.db.catalog().tables(txn, self.database)?;
                let rows = tables
                    .iter()
                    .filter_map(|t| t.matview.as_ref().map(|m| (t, m)))
                    .map(|(t, m)| {
                        vec![
                            text(schema_of(&t.name)),
                            text(unqualified(&t.name)),
                            text("kiln"),
                            Value::Null,
                            Value::Bool(!t.indexes.is_empty()),
                            Value::Bool(m.populated),
                            text(&format!(" {};", m.query)),
                        ]
                    })
                    .collect();
                Some((
                    cols(&[
                        ("schemaname", N),
                        ("matviewname", N),
                        ("matviewowner", N),
                        ("tablespace", N),
                        ("hasindexes", B),
                        ("ispopulated", B),
                        ("definition", T),
                    ]),
                    rows,
                ))
            }
            "pg_views" | "information_schema.views" => {
                let views = self.db.catalog().views(txn, self.database)?;
                let definition = |v: &crate::catalog::View| text(&format!(" {};", v.query));
                Some(if name == "pg_views" {
                    (
                        cols(&[
                            ("schemaname", N),
                            ("viewname", N),
                            ("viewowner", N),
                            ("definition", T),
                        ]),
                        views
                            .iter()
                            .map(|v| {
                                vec![
                                    text(schema_of(&v.name)),
                                    text(unqualified(&v.name)),
                                    text("kiln"),
                                    definition(v),
                                ]
                            })
                            .collect(),
                    )
                } else {
                    (
                        cols(&[
                            ("table_catalog", T),
                            ("table_schema", T),
                            ("table_name", T),
                            ("view_definition", T),
                            ("check_option", T),
                            ("is_updatable", T),
                            ("is_insertable_into", T),
                            ("is_trigger_updatable", T),
                            ("is_trigger_deletable", T),
                            ("is_trigger_insertable_into", T),
                        ]),
                        views
                            .iter()
                            .map(|v| {
                                let mut row = vec![
                                    text(self.database),
                                    text(schema_of(&v.name)),
                                    text(unqualified(&v.name)),
                                    definition(v),
                                    text("NONE"),
                                ];
                                row.extend((0..5).map(|_| text("NO")));
                                row
                            })
                            .collect(),
                    )
                })
            }
            "information_schema.columns" => {
                let qualify = !crate::pg::settings::search_path(self.settings).contains(&"public");
                let tables = self.db.catalog().tables(txn, self.database)?;
                let sequences = self.db.catalog().sequences(txn, self.database)?;
                let mut rows = Vec::new();
                for t in tables.iter().filter(|t| t.matview.is_none()) {
                    for (i, c) in t.columns.iter().enumerate() {
                        let mut row = vec![
                            text(self.database),
                            text(schema_of(&t.name)),
                            text(unqualified(&t.name)),
                            text(&c.name),
                            Value::Int(t.attnum(i).into()),
                            c.default.as_deref().map_or(Value::Null, |d| {
                                text(&crate::pg::defaults::shown(d, c.ty, qualify))
                            }),
                            text(if c.nullable { "YES" } else { "NO" }),
                            text(&column_data_type(c.ty)),
                        ];
                        row.extend(type_facts(c.ty));
                        row.extend([
                            text(self.database),
                            text(if c.ty.is_enum() { "public" } else { "pg_catalog" }),
                            text(&c.ty.type_name()),
                        ]);
                        // The identity's generation and its sequence's options.
                        let identity = c.identity.as_ref();
                        let seq = identity
                            .and_then(|id| sequences.iter().find(|s| s.name == id.sequence));
                        let seq_text = |f: fn(&crate::sequence::Sequence) -> String| {
                            seq.map_or(Value::Null, |s| Value::Text(f(s)))
                        };
                        row.extend([
                            text(if identity.is_some() { "YES" } else { "NO" }),
                            identity.map_or(Value::Null, |id| {
                                text(if id.always { "ALWAYS" } else { "BY DEFAULT" })
                            }),
                            seq_text(|s| s.start.to_string()),
                            seq_text(|s| s.increment.to_string()),
                            seq_text(|s| s.max.to_string()),
                            seq_text(|s| s.min.to_string()),
                            if identity.is_some() {
                                text(if seq.is_some_and(|s| s.cycle) { "YES" } else { "NO" })
                            } else {
                                text("NO")
                            },
                            text(if c.generated.is_some() { "ALWAYS" } else { "NEVER" }),
                            c.generated.as_deref().map_or(Value::Null, text),
                            text("YES"),
                        ]);
                        match &c.domain {
                            Some(d) => {
                                row.extend([text(self.database), text("public"), text(&d.name)])
                            }
                            None => row.extend([Value::Null, Value::Null, Value::Null]),
                        }
                        rows.push(row);
                    }
                }
                for v in self.db.catalog().views(txn, self.database)? {
                    for (i, (name, (_, ty))) in v.column_names().iter().zip(&v.columns).enumerate()
                    {
                        let mut row = vec![
                            text(self.database),
                            text(schema_of(&v.name)),
                            text(unqualified(&v.name)),
                            text(name),
                            Value::Int(i as i64 + 1),
                            Value::Null,
                            text("YES"),
                            text(&column_data_type(*ty)),
                        ];
                        row.extend(type_facts(*ty));
                        row.extend([
                            text(self.database),
                            text("pg_catalog"),
                            text(&ty.type_name()),
                        ]);
                        row.extend([text("NO"), Value::Null, Value::Null, Value::Null]);
                        row.extend([Value::Null, Value::Null, text("NO"), text("NEVER")]);
                        row.extend([Value::Null, text("NO")]);
                        row.extend([Value::Null, Value::Null, Value::Null]);
                        rows.push(row);
                    }
                }
                Some((
                    cols(&[
                        ("table_catalog", T),
                        ("table_schema", T),
                        ("table_name", T),
                        ("column_name", T),
                        ("ordinal_position", I4),
                        ("column_default", T),
                        ("is_nullable", T),
                        ("data_type", T),
                        ("character_maximum_length", I4),
                        ("character_octet_length", I4),
                        ("numeric_precision", I4),
                        ("numeric_precision_radix", I4),
                        ("numeric_scale", I4),
                        ("datetime_precision", I4),
                        ("udt_catalog", T),
                        ("udt_schema", T),
                        ("udt_name", T),
                        ("is_identity", T),
                        ("identity_generation", T),
                        ("identity_start", T),
                        ("identity_increment", T),
                        ("identity_maximum", T),
                        ("identity_minimum", T),
                        ("identity_cycle", T),
                        ("is_generated", T),
                        ("generation_expression", T),
                        ("is_updatable", T),
                        ("domain_catalog", T),
                        ("domain_schema", T),
                        ("domain_name", T),
                    ]),
                    rows,
                ))
            }
            "information_schema.domains" => {
                let domains = self.db.catalog().domains(txn, self.database)?;
                let rows = domains
                    .iter()
                    .map(|d| {
                        let mut row = vec![
                            text(self.database),
                            text("public"),
                            text(&d.name),
                            text(&column_data_type(d.base)),
                        ];
                        row.extend(type_facts(d.base));
                        row.extend([
                            d.default.as_deref().map_or(Value::Null, |x| {
                                text(&crate::pg::defaults::shown(x, d.base, false))
                            }),
                            text(self.database),
                            text("pg_catalog"),
                            text(&d.base.type_name()),
                        ]);
                        row
                    })
                    .collect();
                Some((
                    cols(&[
                        ("domain_catalog", T),
                        ("domain_schema", T),
                        ("domain_name", T),
                        ("data_type", T),
                        ("character_maximum_length", I4),
                        ("character_octet_length", I4),
                        ("numeric_precision", I4),
                        ("numeric_precision_radix", I4),
                        ("numeric_scale", I4),
                        ("datetime_precision", I4),
                        ("domain_default", T),
                        ("udt_catalog", T),
                        ("udt_schema", T),
                        ("udt_name", T),
                    ]),
                    rows,
                ))
            }
            "information_schema.domain_constraints" => {
                let domains = self.db.catalog().domains(txn, self.database)?;
                let rows = domains
                    .iter()
                    .flat_map(|d| {
                        d.checks.iter().map(|c| {
                            vec![
                                text(self.database),
                                text("public"),
                                text(&c.name),
                                text(self.database),
                                text("public"),
                                text(&d.name),
                                text("NO"),
                                text("NO"),
                            ]
                        })
                    })
                    .collect();
                Some((
                    cols(&[
                        ("constraint_catalog", T),
                        ("constraint_schema", T),
                        ("constraint_name", T),
                        ("domain_catalog", T),
                        ("domain_schema", T),
                        ("domain_name", T),
                        ("is_deferrable", T),
                        ("initially_deferred", T),
                    ]),
                    rows,
                ))
            }
            _ => None,
        })
    }
}

/// `information_schema.columns.data_type`: the SQL name without modifiers, `ARRAY` for
/// arrays, as PostgreSQL writes it.
fn column_data_type(ty: DataType) -> String {
    match ty {
        DataType::Array(_) => "ARRAY".into(),
        DataType::Enum(_) => "USER-DEFINED".into(),
        DataType::Varchar(_) => "character varying".into(),
        DataType::Char(_) => "character".into(),
        DataType::Numeric(_) => "numeric".into(),
        t => t.unmodified().sql_name(),
    }
}

/// `information_schema.columns`' character_maximum_length, character_octet_length,
/// numeric_precision, numeric_precision_radix, numeric_scale and datetime_precision.
fn type_facts(ty: DataType) -> [Value; 6] {
    let n = |v: i64| Value::Int(v);
    let null = || Value::Null;
    match ty {
        DataType::Varchar(Some(len)) | DataType::Char(len) => {
            [n(len.into()), n(i64::from(len) * 4), null(), null(), null(), null()]
        }
        DataType::Varchar(None) | DataType::Text => {
            [null(), n(1_073_741_824), null(), null(), null(), null()]
        }
        DataType::Int2 => [null(), null(), n(16), n(2), n(0), null()],
        DataType::Int4 => [null(), null(), n(32), n(2), n(0), null()],
        DataType::Int8 => [null(), null(), n(64), n(2), n(0), null()],
        DataType::Float4 => [null(), null(), n(24), n(2), null(), null()],
        DataType::Float8 => [null(), null(), n(53), n(2), null(), null()],
        DataType::Numeric(Some((p, s))) => {
            [null(), null(), n(p.into()), n(10), n(s.into()), null()]
        }
        DataType::Numeric(None) => [null(), null(), null(), n(10), null(), null()],
        DataType::Date => [null(), null(), null(), null(), null(), n(0)],
        DataType::Timestamp(p) | DataType::TimestampTz(p) | DataType::Time(p) => {
            [null(), null(), null(), null(), null(), n(p.unwrap_or(6).into())]
        }
        DataType::Interval(m) => {
            let precision = m.map_or(6, |m| match m & 0xFFFF {
                p if p < 6 => p,
                _ => 6,
            });
            [null(), null(), null(), null(), null(), n(precision.into())]
        }
        _ => [null(), null(), null(), null(), null(), null()],
    }
}

/// A view's query as PostgreSQL shows it to a session whose search path lacks `public`:
/// the tables and views it reads named `public.t` (names of its own CTEs stay as they are).
/// The stored text when it does not parse.
fn query_qualified(query: &str, relations: &HashSet<String>) -> String {
    use sqlparser::ast::{self, Visit, Visitor};
    use std::ops::ControlFlow;
    let Ok(mut statements) = crate::parse::parse(query) else { return query.to_string() };
    // The names WITH clauses define anywhere in the query.
    struct Ctes(HashSet<String>);
    impl Visitor for Ctes {
        type Break = ();
        fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
            if let Some(with) = &q.with {
                for cte in &with.cte_tables {
                    self.0.insert(crate::bind::ident(&cte.alias.name));
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut ctes = Ctes(HashSet::new());
    let _ = statements.visit(&mut ctes);
    let _ = ast::visit_relations_mut(&mut statements, |name| {
        if let [ast::ObjectNamePart::Identifier(id)] = name.0.as_slice() {
            let n = crate::bind::ident(id);
            if relations.contains(&n) && !ctes.0.contains(&n) {
                name.0.insert(0, ast::ObjectNamePart::Identifier(ast::Ident::new("public")));
            }
        }
        ControlFlow::<()>::Continue(())
    });
    statements.iter().map(|s| s.to_string()).collect::<Vec<_>>().join("; ")
}

/// The `public` schema's privileges: all to its owner, USAGE to everyone.
fn public_schema_acl() -> Value {
    Value::Array(vec![
        Value::Text("pg_database_owner=UC/pg_database_owner".into()),
        Value::Text("=U/pg_database_owner".into()),
    ])
}

/// A type's alignment (`typalign`, `attalign`), as PostgreSQL's types have it.
fn alignment(t: DataType) -> &'static str {
    if t.size() == 8 || matches!(t, DataType::Interval(_)) {
        "d"
    } else if t.size() == 2 {
        "s"
    } else if t.size() == 1 || t == DataType::Uuid {
        "c"
    } else {
        "i"
    }
}

/// A type's storage strategy, as PostgreSQL's types have them: fixed-size types plain,
/// numeric main, the others extended.
fn storage(ty: DataType) -> &'static str {
    match ty {
        DataType::Numeric(_) | DataType::Inet | DataType::Cidr => "m",
        t if t.size() > 0 => "p",
        _ => "x",
    }
}

/// A pg_attribute row for column number `attnum` of relation `rel`, nullable, with no
/// default and no identity.
fn attribute_row(rel: i64, name: &str, ty: DataType, attnum: i16) -> Vec<Value> {
    let text = |s: &str| Value::Text(s.to_string());
    let int = Value::Int;
    let collation = if ty.is_string() { 100 } else { 0 };
    vec![
        int(rel),
        text(name),
        int(ty.oid() as i64),
        int(ty.size() as i64),
        int(attnum.into()),
        int(ty.modifier() as i64),
        Value::Bool(false),
        Value::Bool(false),
        text(""),
        text(""),
        Value::Bool(false),
        int(collation),
        int(0),
        Value::Bool(true),
        text(storage(ty)),
        text(""),
        int(-1),
        int(i64::from(matches!(ty, DataType::Array(_)))),
        text(alignment(ty)),
        Value::Null,
        Value::Null,
        Value::Bool(false),
        Value::Null,
        Value::Null,
    ]
}

/// A pg_class row.
/// The indexes of partition `t` made for those of its parent: each index's OID with its
/// parent index's (the primary keys; indexes of the same definition).
fn partition_index_parents(t: &Table, parent: &Table) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    if !t.primary_key.is_empty() && t.primary_key == parent.primary_key {
        out.push((oid::pkey_index(t.id), oid::pkey_index(parent.id)));
    }
    for ix in &t.indexes {
        let same = parent.indexes.iter().find(|p| p.same_definition(ix));
        if let Some(p) = same {
            out.push((oid::object(ix.id), oid::object(p.id)));
        }
    }
    out
}

fn class_row(
    oid: i64,
    namespace: i64,
    name: &str,
    kind: &str,
    natts: usize,
    am: i64,
    has_index: bool,
) -> Vec<Value> {
    let text = |s: &str| Value::Text(s.to_string());
    let int = Value::Int;
    let boolean = Value::Bool;

    vec![
        int(oid),
        text(name),
        int(namespace),
        int(0),
        int(oid::ROLE),
        int(am),
        int(oid),
        int(0),
        int(0),
        Value::Float(-1.0),
        int(0),
        int(0),
        boolean(has_index),
        boolean(false),
        text("p"),
        text(kind),
        int(natts as i64),
        int(0),
        boolean(false),
        boolean(false),
        boolean(false),
        boolean(false),
        boolean(false),
        text("d"),
        boolean(false),
        Value::Null,
        Value::Null,
        int(0),
        Value::Null,
        int(0),
        int(0),
        boolean(true),
    ]
}

/// An index as the catalog tables show it: OID, name, columns, unique, primary, and the
/// kind of constraint it implements ('p', 'u').
type IndexRow = (i64, String, Vec<usize>, bool, bool, Option<char>, IndexShape);

/// An index on expressions' key parts (empty for one on columns) and a partial index's
/// condition, as SQL text; its INCLUDE columns; whether it is NULLS NOT DISTINCT.
type IndexShape = (Vec<String>, Option<String>, Vec<usize>, bool);

impl System<'_> {
    /// pg_class, pg_attribute, pg_attrdef, pg_index, pg_constraint, pg_indexes, pg_tables
    /// from the catalog; index and constraint definitions are remembered for
    /// pg_get_indexdef / pg_get_constraintdef.
    /// pg_description: the comments on relations (class pg_class; a column's sub-id is its
    /// number).
    fn descriptions(&self, txn: &mut Transaction) -> Result<Relation> {
        const PG_CLASS: i64 = 1259;
        let mut rows = Vec::new();
        let mut row = |oid: i64, sub: i16, text: &Option<String>| {
            if let Some(text) = text {
                rows.push(vec![
                    Value::Int(oid),
                    Value::Int(PG_CLASS),
                    Value::Int(sub.into()),
                    Value::Text(text.clone()),
                ]);
            }
        };
        let catalog = self.db.catalog();
        for t in catalog.tables(txn, self.database)? {
            row(oid::object(t.id), 0, &t.comment);
            for (i, c) in t.columns.iter().enumerate() {
                row(oid::object(t.id), t.attnum(i), &c.comment);
            }
            for ix in &t.indexes {
                row(oid::object(ix.id), 0, &ix.comment);
            }
        }
        for v in catalog.views(txn, self.database)? {
            row(oid::object(v.id), 0, &v.comment);
        }
        for seq in catalog.sequences(txn, self.database)? {
            row(oid::object(seq.id), 0, &seq.comment);
        }
        // Functions, procedures and aggregates are of class pg_proc.
        for f in catalog.functions(txn, self.database)? {
            if let Some(text) = f.comment {
                rows.push(vec![
                    Value::Int(oid::object(f.id)),
                    Value::Int(1255),
                    Value::Int(0),
                    Value::Text(text),
                ]);
            }
        }
        // Types are of class pg_type.
        for e in catalog.enum_types(txn, self.database)? {
            if let Some(text) = &e.comment {
                rows.push(vec![
                    Value::Int(e.oid.into()),
                    Value::Int(1247),
                    Value::Int(0),
                    Value::Text(text.clone()),
                ]);
            }
        }
        for d in catalog.domains(txn, self.database)? {
            if let Some(text) = d.comment {
                rows.push(vec![
                    Value::Int(d.oid.into()),
                    Value::Int(1247),
                    Value::Int(0),
                    Value::Text(text),
                ]);
            }
        }
        rows.push(vec![
            Value::Int(oid::PUBLIC),
            Value::Int(2615),
            Value::Int(0),
            Value::Text("standard public schema".into()),
        ]);
        for schema in catalog.schemas(txn, self.database)? {
            if let Some(text) = schema.comment {
                rows.push(vec![
                    Value::Int(oid::object(schema.id)),
                    Value::Int(2615),
                    Value::Int(0),
                    Value::Text(text),
                ]);
            }
        }
        let columns = cols(&[("objoid", O), ("classoid", O), ("objsubid", I4), ("description", T)]);
        Ok((columns, rows))
    }

    /// pg_rewrite: each view's `_RETURN` rule (PostgreSQL implements a view as a relation
    /// with that rule; tools find a view's dependencies through it).
    /// `pg_trigger`: the triggers of the database's tables.
    fn triggers(&self, txn: &mut Transaction) -> Result<Relation> {
        let text = |s: &str| Value::Text(s.to_string());
        let catalog = self.db.catalog();
        let functions = catalog.functions(txn, self.database)?;
        let mut rows = Vec::new();
        for t in catalog.tables(txn, self.database)? {
            for tr in &t.triggers {
                let foid = match crate::exec::triggers::BuiltinTrigger::named(&tr.function) {
                    Some(b) => b.oid(),
                    None => functions
                        .iter()
                        .find(|f| f.name == tr.function)
                        .map_or(0, |f| oid::object(f.id)),
                };
                let attrs: Vec<Value> = tr
                    .update_of
                    .iter()
                    .filter_map(|c| t.column(c).map(|i| Value::Int(t.attnum(i).into())))
                    .collect();
                let mut args = Vec::new();
                for a in &tr.args {
                    args.extend_from_slice(a.as_bytes());
                    args.push(0);
                }
                rows.push(vec![
                    Value::Int(oid::object(tr.id)),
                    Value::Int(oid::object(t.id)),
                    Value::Int(0),
                    text(&tr.name),
                    Value::Int(foid),
                    Value::Int(crate::exec::triggers::tgtype(tr).into()),
                    text(if tr.disabled { "D" } else { "O" }),
                    Value::Bool(false),
                    Value::Int(0),
                    Value::Int(0),
                    Value::Int(0),
                    Value::Bool(false),
                    Value::Bool(false),
                    Value::Int(tr.args.len() as i64),
                    Value::Array(attrs),
                    Value::Bytea(args),
                    tr.when.as_deref().map_or(Value::Null, text),
                    Value::Null,
                    Value::Null,
                ]);
            }
        }
        let columns = cols(&[
            ("oid", O),
            ("tgrelid", O),
            ("tgparentid", O),
            ("tgname", N),
            ("tgfoid", O),
            ("tgtype", I2),
            ("tgenabled", C),
            ("tgisinternal", B),
            ("tgconstrrelid", O),
            ("tgconstrindid", O),
            ("tgconstraint", O),
            ("tgdeferrable", B),
            ("tginitdeferred", B),
            ("tgnargs", I2),
            ("tgattr", DataType::Int2Vector),
            ("tgargs", DataType::Bytea),
            ("tgqual", T),
            ("tgoldtable", N),
            ("tgnewtable", N),
        ]);
        Ok((columns, rows))
    }

    /// `pg_proc`: the functions made with CREATE FUNCTION.
    fn functions(&self, txn: &mut Transaction) -> Result<Relation> {
        use crate::catalog::Returns;
        let text = |s: &str| Value::Text(s.to_string());
        let mut rows = Vec::new();
        for f in self.db.catalog().functions(txn, self.database)? {
            let rettype = match &f.returns {
                Returns::Trigger => oid::TRIGGER,
                Returns::Void => 2278,
                Returns::Value(t) => t.oid().into(),
                // Kiln's tables have no row types of their own in pg_type: `record`.
                Returns::Record | Returns::Row(_) => 2249,
                Returns::Procedure => 0,
            };
            // Every argument's type and mode, when some are not IN (NULL otherwise).
            let (all_types, modes) = if f.args.iter().all(|a| a.mode == crate::catalog::ArgMode::In)
            {
                (Value::Null, Value::Null)
            } else {
                let types = f.args.iter().map(|a| Value::Int(a.ty.oid().into()));
                let modes = f.args.iter().map(|a| text(&a.mode.letter().to_string()));
                (Value::Array(types.collect()), Value::Array(modes.collect()))
            };
            let inputs: Vec<Value> = f.inputs().map(|a| Value::Int(a.ty.oid().into())).collect();
            let names = if f.args.iter().any(|a| a.name.is_some()) {
                let names = f.args.iter().map(|a| text(a.name.as_deref().unwrap_or("")));
                Value::Array(names.collect())
            } else {
                Value::Null
            };
            let defaults = f.args.iter().filter(|a| a.default.is_some()).count();
            rows.push(vec![
                Value::Int(oid::object(f.id)),
                text(&f.name),
                Value::Int(oid::PUBLIC),
                Value::Int(oid::ROLE),
                Value::Int(match f.language.as_str() {
                    "sql" => 14,
                    "internal" => 12,
                    _ => oid::PLPGSQL,
                }),
                Value::Float(if f.aggregate.is_some() { 1.0 } else { 100.0 }),
                Value::Float(0.0),
                text("-"),
                text(match (&f.aggregate, &f.returns) {
                    (Some(_), _) => "a",
                    (None, Returns::Procedure) => "p",
                    (None, _) => "f",
                }),
                Value::Bool(false),
                Value::Bool(false),
                Value::Bool(f.strict),
                Value::Bool(f.set),
                text(&f.volatility.to_string()),
                text(match f.aggregate.as_ref().and_then(|a| a.kept.get("parallel")) {
                    Some(p) => &p[..1],
                    None => "u",
                }),
                Value::Int(inputs.len() as i64),
                Value::Int(defaults as i64),
                Value::Int(rettype),
                Value::Array(inputs),
                all_types,
                modes,
                names,
                Value::Null,
                Value::Null,
                text(&f.body),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
            ]);
        }
        let columns = cols(&[
            ("oid", O),
            ("proname", N),
            ("pronamespace", O),
            ("proowner", O),
            ("prolang", O),
            ("procost", DataType::Float4),
            ("prorows", DataType::Float4),
            // regproc, which Kiln shows as text: `-` for none.
            ("prosupport", T),
            ("prokind", C),
            ("prosecdef", B),
            ("proleakproof", B),
            ("proisstrict", B),
            ("proretset", B),
            ("provolatile", C),
            ("proparallel", C),
            ("pronargs", I2),
            ("pronargdefaults", I2),
            ("prorettype", O),
            ("proargtypes", DataType::OidVector),
            ("proallargtypes", OA),
            ("proargmodes", TA),
            ("proargnames", TA),
            ("proargdefaults", T),
            ("protrftypes", OA),
            ("prosrc", T),
            ("probin", T),
            ("prosqlbody", T),
            ("proconfig", TA),
            ("proacl", TA),
        ]);
        Ok((columns, rows))
    }

    /// `pg_aggregate`: the aggregates made with CREATE AGGREGATE (functions named as
    /// `regproc` shows them: `-` for none; a function of `public` qualified when the search
    /// path lacks it). A sort operator is kept by name, not as an operator's OID (Kiln has
    /// no `pg_operator` rows): `aggsortop` is 0.
    fn aggregates(&self, txn: &mut Transaction) -> Result<Relation> {
        let qualify = !crate::pg::settings::search_path(self.settings).contains(&"public");
        let text = |s: &str| Value::Text(s.to_string());
        let named = |f: Option<&crate::catalog::AggregateFn>| match f {
            None => text("-"),
            Some(f) if f.args.is_some() => Value::Text(shown_relation(&f.name, qualify)),
            Some(f) => Value::Text(f.name.clone()),
        };
        let mut rows = Vec::new();
        for f in self.db.catalog().functions(txn, self.database)? {
            let Some(a) = &f.aggregate else { continue };
            let other = |k: &str| a.others.iter().find(|(x, _)| x == k).map(|(_, f)| f);
            let kept = |k: &str| a.kept.get(k).map(String::as_str);
            let modify = |k: &str| text(kept(k).map_or("r", |m| &m[..1]));
            let space = |k: &str| Value::Int(kept(k).and_then(|s| s.parse().ok()).unwrap_or(0));
            let mstype = a.mstype.map_or(0, |t| i64::from(t.oid()));
            rows.push(vec![
                Value::Int(oid::object(f.id)),
                text("n"),
                Value::Int(0),
                named(Some(&a.sfunc)),
                named(a.finalfunc.as_ref()),
                named(other("combinefunc")),
                text("-"),
                text("-"),
                named(other("msfunc")),
                named(other("minvfunc")),
                named(other("mfinalfunc")),
                Value::Bool(a.finalfunc_extra),
                Value::Bool(kept("mfinalfunc_extra").is_some()),
                modify("finalfunc_modify"),
                modify("mfinalfunc_modify"),
                Value::Int(0),
                Value::Int(a.stype.oid().into()),
                space("sspace"),
                Value::Int(mstype),
                space("msspace"),
                a.initcond.as_deref().map_or(Value::Null, text),
                kept("minitcond").map_or(Value::Null, text),
            ]);
        }
        let columns = cols(&[
            ("aggfnoid", O),
            ("aggkind", C),
            ("aggnumdirectargs", I2),
            // regproc, which Kiln shows as text.
            ("aggtransfn", T),
            ("aggfinalfn", T),
            ("aggcombinefn", T),
            ("aggserialfn", T),
            ("aggdeserialfn", T),
            ("aggmtransfn", T),
            ("aggminvtransfn", T),
            ("aggmfinalfn", T),
            ("aggfinalextra", B),
            ("aggmfinalextra", B),
            ("aggfinalmodify", C),
            ("aggmfinalmodify", C),
            ("aggsortop", O),
            ("aggtranstype", O),
            ("aggtransspace", I4),
            ("aggmtranstype", O),
            ("aggmtransspace", I4),
            ("agginitval", T),
            ("aggminitval", T),
        ]);
        Ok((columns, rows))
    }

    fn rules(&self, txn: &mut Transaction) -> Result<Relation> {
        let text = |s: &str| Value::Text(s.to_string());
        let rule = |id: u64, query: &str| {
            vec![
                Value::Int(oid::rule(id)),
                text("_RETURN"),
                Value::Int(oid::object(id)),
                text("1"),
                text("O"),
                Value::Bool(true),
                text("<>"),
                text(query),
            ]
        };
        let catalog = self.db.catalog();
        let mut rows: Vec<Vec<Value>> =
            catalog.views(txn, self.database)?.iter().map(|v| rule(v.id, &v.query)).collect();
        // A materialized view has its query's rule too.
        for t in catalog.tables(txn, self.database)? {
            if let Some(m) = &t.matview {
                rows.push(rule(t.id, &m.query));
            }
        }
        let columns = cols(&[
            ("oid", O),
            ("rulename", N),
            ("ev_class", O),
            ("ev_type", C),
            ("ev_enabled", C),
            ("is_instead", B),
            ("ev_qual", T),
            ("ev_action", T),
        ]);
        Ok((columns, rows))
    }

    /// pg_depend: the dependencies PostgreSQL records between the objects Kiln has, which
    /// tools follow to order a dump or to find what uses what — a view's rule on the view
    /// (internal) and on the relations its query reads (normal), a sequence on the column
    /// that owns it (auto for `serial` and OWNED BY, internal for identity), a column
    /// default on its column (auto) and on the sequences it calls `nextval` on (normal), a
    /// column on its enum type (normal), an index on its table's columns (auto), a function
    /// on the table whose rows it returns (normal).
    fn dependencies(&self, txn: &mut Transaction) -> Result<Relation> {
        const CLASS: i64 = 1259;
        const REWRITE: i64 = 2618;
        const ATTRDEF: i64 = 2604;
        const TYPE: i64 = 1247;
        const PROC: i64 = 1255;
        let catalog = self.db.catalog();
        let tables = catalog.tables(txn, self.database)?;
        let views = catalog.views(txn, self.database)?;
        let sequences = catalog.sequences(txn, self.database)?;
        let mut rows = Vec::new();
        let mut dep = |class: i64, obj: i64, sub: i16, refclass: i64, r: i64, rsub: i16, kind| {
            rows.push(vec![
                Value::Int(class),
                Value::Int(obj),
                Value::Int(sub.into()),
                Value::Int(refclass),
                Value::Int(r),
                Value::Int(rsub.into()),
                Value::Text(String::from(kind)),
            ]);
        };
        let relation = |name: &str| {
            tables
                .iter()
                .find(|t| t.name == name)
                .map(|t| oid::object(t.id))
                .or_else(|| views.iter().find(|v| v.name == name).map(|v| oid::object(v.id)))
        };
        let readers = views
            .iter()
            .map(|v| (v.id, &v.depends_on))
            .chain(tables.iter().filter_map(|t| t.matview.as_ref().map(|m| (t.id, &m.depends_on))));
        for (id, depends_on) in readers {
            let rule = oid::rule(id);
            dep(REWRITE, rule, 0, CLASS, oid::object(id), 0, 'i');
            for name in depends_on {
                if let Some(r) = relation(name) {
                    dep(REWRITE, rule, 0, CLASS, r, 0, 'n');
                }
            }
        }
        for t in &tables {
            let toid = oid::object(t.id);
            for (i, c) in t.columns.iter().enumerate() {
                let attnum = t.attnum(i);
                let element = c.ty.element().unwrap_or(c.ty);
                if element.is_enum() {
                    dep(CLASS, toid, attnum, TYPE, element.oid() as i64, 0, 'n');
                }
                if let Some(d) = &c.default {
                    let def = oid::attrdef(toid, i);
                    dep(ATTRDEF, def, 0, CLASS, toid, attnum, 'a');
                    for name in crate::exec::sequences::default_sequences(d) {
                        if let Some(seq) = sequences.iter().find(|s| s.name == name) {
                            dep(ATTRDEF, def, 0, CLASS, oid::object(seq.id), 0, 'n');
                        }
                    }
                }
                if let Some(identity) = &c.identity {
                    if let Some(seq) = sequences.iter().find(|s| s.name == identity.sequence) {
                        dep(CLASS, oid::object(seq.id), 0, CLASS, toid, attnum, 'i');
                    }
                }
            }
            for ix in &t.indexes {
                for &k in &ix.columns {
                    dep(CLASS, oid::object(ix.id), 0, CLASS, toid, t.attnum(k), 'a');
                }
            }
        }
        // A function returning a table's row type depends on the table (PostgreSQL records
        // it on the row type, which Kiln's tables do not have in pg_type): a dump creates the
        // table first.
        for f in catalog.functions(txn, self.database)? {
            if let crate::catalog::Returns::Row(name) = &f.returns {
                if let Some(r) = relation(name) {
                    dep(PROC, oid::object(f.id), 0, CLASS, r, 0, 'n');
                }
            }
        }
        for seq in &sequences {
            let Some((table, column)) = &seq.owned_by else { continue };
            let Some(t) = tables.iter().find(|t| t.name == *table) else { continue };
            // An identity's sequence is listed above, as internal.
            if let Some(i) = t.column(column) {
                if t.columns[i].identity.is_none() {
                    dep(CLASS, oid::object(seq.id), 0, CLASS, oid::object(t.id), t.attnum(i), 'a');
                }
            }
        }
        let columns = cols(&[
            ("classid", O),
            ("objid", O),
            ("objsubid", I4),
            ("refclassid", O),
            ("refobjid", O),
            ("refobjsubid", I4),
            ("deptype", C),
        ]);
        Ok((columns, rows))
    }

    fn relations(&self, txn: &mut Transaction, which: &str) -> Result<Relation> {
        let tables = self.db.catalog().tables(txn, self.database)?;
        let text = |s: &str| Value::Text(s.to_string());
        let int = Value::Int;
        let boolean = Value::Bool;
        let mut rows = Vec::new();
        let mut defs = Vec::new();
        let sequences = self.db.catalog().sequences(txn, self.database)?;
        // Off the search path, user objects are named with their schema.
        let qualify = !crate::pg::settings::search_path(self.settings).contains(&"public");
        let ns = Namespaces::load(self.db, txn, self.database)?;
        for seq in &sequences {
            if which == "pg_class" {
                let (nsp, name) = (ns.oid(&seq.name), unqualified(&seq.name));
                let mut row = class_row(oid::object(seq.id), nsp, name, "S", 3, 0, false);
                if crate::exec::temp::is_temp_schema(schema_of(&seq.name)) {
                    row[14] = text("t");
                }
                rows.push(row);
            }
        }
        let style = crate::pg::settings::style_setting(None, self.settings);
        for t in &tables {
            let toid = oid::object(t.id);
            // Partitioning: the key of a partitioned table, the bound of a partition (as
            // pg_get_partkeydef, pg_get_expr(relpartbound) and
            // pg_get_partition_constraintdef show them).
            let mut bound_text = None;
            let mut parent_oid = None;
            // A partition's indexes made for its parent's: (index OID, parent index OID).
            let mut index_parents: Vec<(i64, i64)> = Vec::new();
            if let Some(p) = &t.partitioning {
                defs.push((toid, crate::partition::shown_key(t, p)));
            }
            if let Some(of) = &t.partition_of {
                if let Some(parent) = tables.iter().find(|x| x.name == of.parent) {
                    if let Some(p) = &parent.partitioning {
                        let types = crate::partition::key_types(parent, p);
                        bound_text = Some(crate::partition::shown(&of.bound, &types, style));
                        parent_oid = Some(oid::object(parent.id));
                        index_parents = partition_index_parents(t, parent);
                        let key: Vec<(String, DataType)> = p
                            .key
                            .iter()
                            .map(|&c| (parent.columns[c].name.clone(), parent.columns[c].ty))
                            .collect();
                        if let Some(c) = crate::partition::constraint_text(&of.bound, &key, style) {
                            defs.push((-toid, c));
                        }
                    }
                }
            }
            match which {
                "pg_inherits" => {
                    if let Some(parent) = parent_oid {
                        rows.push(vec![int(toid), int(parent), int(1), boolean(false)]);
                    }
                    for (index, parent) in &index_parents {
                        rows.push(vec![int(*index), int(*parent), int(1), boolean(false)]);
                    }
                    continue;
                }
                "pg_partitioned_table" => {
                    if let Some(p) = &t.partitioning {
                        let default = p.partitions.iter().find_map(|n| {
                            let c = tables.iter().find(|x| x.name == *n)?;
                            matches!(
                                c.partition_of.as_ref()?.bound,
                                crate::catalog::PartitionBound::Default
                            )
                            .then(|| oid::object(c.id))
                        });
                        let zeros = Value::Array(p.key.iter().map(|_| int(0)).collect());
                        rows.push(vec![
                            int(toid),
                            text(match p.strategy {
                                crate::catalog::PartitionStrategy::Range => "r",
                                crate::catalog::PartitionStrategy::List => "l",
                            }),
                            int(p.key.len() as i64),
                            int(default.unwrap_or(0)),
                            Value::Array(p.key.iter().map(|&c| int(t.attnum(c).into())).collect()),
                            zeros.clone(),
                            zeros,
                            Value::Null,
                        ]);
                    }
                    continue;
                }
                _ => {}
            }
            let colnames = |c: &[usize]| {
                c.iter()
                    .map(|&i| crate::bind::quote_ident(&t.columns[i].name))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            // An index's access method by its OID (a primary key's is btree).
            let method_of = |ioid: i64| {
                t.indexes
                    .iter()
                    .find(|ix| oid::object(ix.id) == ioid)
                    .map_or("btree", crate::catalog::Index::method)
            };
            // Indexes: (oid, name, columns, unique, primary, constraint kind).
            let mut indexes: Vec<IndexRow> = Vec::new();
            if !t.primary_key.is_empty() {
                let name = t.pkey_name();
                indexes.push((
                    oid::pkey_index(t.id),
                    name,
                    t.primary_key.clone(),
                    true,
                    true,
                    Some('p'),
                    (vec![], None, vec![], false),
                ));
            }
            for ix in &t.indexes {
                let is_constraint = ix.unique && (ix.constraint || ix.name.ends_with("_key"));
                indexes.push((
                    oid::object(ix.id),
                    ix.name.clone(),
                    ix.columns.clone(),
                    ix.unique,
                    false,
                    is_constraint.then_some('u'),
                    (
                        ix.expressions.clone(),
                        ix.predicate.clone(),
                        ix.include.clone(),
                        ix.nulls_not_distinct,
                    ),
                ));
            }
            for (ioid, name, c, unique, _, kind, (exprs, predicate, include, nnd)) in &indexes {
                let parts = if exprs.is_empty() {
                    colnames(c)
                } else {
                    exprs
                        .iter()
                        .map(|e| crate::catalog::defined_part(e))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let mut def = format!(
                    "CREATE {}INDEX {} ON {} USING {} ({parts})",
                    if *unique { "UNIQUE " } else { "" },
                    crate::bind::quote_ident(name),
                    shown_relation(&t.name, true),
                    method_of(*ioid),
                );
                let included = if include.is_empty() {
                    String::new()
                } else {
                    format!(" INCLUDE ({})", colnames(include))
                };
                let nulls = if *nnd { " NULLS NOT DISTINCT" } else { "" };
                def.push_str(&included);
                def.push_str(nulls);
                if let Some(p) = predicate {
                    def.push_str(&format!(" WHERE ({p})"));
                }
                defs.push((*ioid, def));
                if let Some(k) = kind {
                    let what = if *k == 'p' { "PRIMARY KEY" } else { "UNIQUE" };
                    defs.push((
                        oid::constraint(*ioid),
                        format!("{what}{nulls} ({}){included}", colnames(c)),
                    ));
                }
            }
            for (n, fk) in t.foreign_keys.iter().enumerate() {
                let Some(parent) = tables.iter().find(|p| p.name == fk.table) else { continue };
                let pcols = fk
                    .ref_columns
                    .iter()
                    .map(|&i| crate::bind::quote_ident(&parent.columns[i].name))
                    .collect::<Vec<_>>()
                    .join(", ");
                let mut def = format!(
                    "FOREIGN KEY ({}) REFERENCES {}({pcols})",
                    colnames(&fk.columns),
                    shown_relation(&fk.table, qualify)
                );
                if fk.on_update != crate::catalog::FkAction::NoAction {
                    def.push_str(&format!(" ON UPDATE {}", fk.on_update.sql()));
                }
                if fk.on_delete != crate::catalog::FkAction::NoAction {
                    def.push_str(&format!(" ON DELETE {}", fk.on_delete.sql()));
                }
                if fk.deferrable {
                    def.push_str(" DEFERRABLE");
                }
                if fk.initially_deferred {
                    def.push_str(" INITIALLY DEFERRED");
                }
                defs.push((oid::table_constraint(t.id, n), def));
            }
            for (n, ck) in t.checks.iter().enumerate() {
                defs.push((oid::table_constraint(t.id, 500 + n), format!("CHECK ({})", ck.expr)));
            }

            match which {
                "pg_class" | "pg_tables" => {
                    if which == "pg_tables" {
                        if t.matview.is_some() {
                            continue;
                        }
                        rows.push(vec![
                            text(schema_of(&t.name)),
                            text(unqualified(&t.name)),
                            text("kiln"),
                            Value::Null,
                            boolean(!indexes.is_empty()),
                        ]);
                        continue;
                    }
                    let (nsp, tname) = (ns.oid(&t.name), unqualified(&t.name));
                    let has_index = !indexes.is_empty();
                    let kind = if t.matview.is_some() {
                        "m"
                    } else if t.partitioning.is_some() {
                        "p"
                    } else {
                        "r"
                    };
                    let am = if kind == "p" { 0 } else { 2 };
                    let mut row = class_row(toid, nsp, tname, kind, t.columns.len(), am, has_index);
                    if let Some(p) = &t.partitioning {
                        row[20] = boolean(!p.partitions.is_empty());
                    }
                    if let Some(b) = &bound_text {
                        row[24] = boolean(true);
                        row[26] = text(b);
                    }
                    if let Some(m) = &t.matview {
                        row[31] = boolean(m.populated);
                    }
                    let temp = crate::exec::temp::is_temp_schema(schema_of(&t.name));
                    if temp {
                        row[14] = text("t");
                    }
                    // psql's \d shows CHECK constraints when relchecks > 0, and foreign keys
                    // (both ways) and triggers when relhastriggers (PostgreSQL's FKs are
                    // triggers).
                    row[17] = int(t.checks.len() as i64);
                    row[19] = boolean(
                        !t.foreign_keys.is_empty()
                            || !t.referenced_by.is_empty()
                            || !t.triggers.is_empty(),
                    );
                    rows.push(row);
                    for (ioid, name, c, .., (exprs, _, include, _)) in &indexes {
                        let parts = if exprs.is_empty() { c.len() } else { exprs.len() };
                        let parts = parts + include.len();
                        let am = match method_of(*ioid) {
                            "hash" => 405,
                            "gist" => 783,
                            "gin" => 2742,
                            "spgist" => 4000,
                            "brin" => 3580,
                            _ => 403,
                        };
                        let index_kind = if t.partitioning.is_some() { "I" } else { "i" };
                        let mut row = class_row(*ioid, nsp, name, index_kind, parts, am, false);
                        row[24] = boolean(index_parents.iter().any(|(i, _)| i == ioid));
                        if temp {
                            row[14] = text("t");
                        }
                        rows.push(row);
                    }
                }
                "pg_attribute" => {
                    for (i, c) in t.columns.iter().enumerate() {
                        let mut row = attribute_row(toid, &c.name, c.ty, t.attnum(i));
                        // A column of a domain has the domain's type; the base type's
                        // modifier is the domain's (pg_type.typtypmod).
                        if let Some(d) = &c.domain {
                            row[2] = int(d.oid.into());
                            row[5] = int(-1);
                        }
                        row[6] = boolean(!c.nullable);
                        row[7] = boolean(c.default.is_some() || c.generated.is_some());
                        row[8] = text(match &c.identity {
                            Some(i) if i.always => "a",
                            Some(_) => "d",
                            None => "",
                        });
                        row[9] = text(if c.generated.is_some() { "s" } else { "" });
                        rows.push(row);
                    }
                    // Dropped columns keep their numbers, listed as PostgreSQL lists them
                    // (the type is not kept: 0, with the length of a varlena).
                    let live: HashSet<i16> = (0..t.columns.len()).map(|i| t.attnum(i)).collect();
                    for n in (1..=t.last_attnum).filter(|n| !live.contains(n)) {
                        rows.push(vec![
                            int(toid),
                            text(&format!("........pg.dropped.{n}........")),
                            int(0),
                            int(-1),
                            int(n.into()),
                            int(-1),
                            boolean(false),
                            boolean(false),
                            text(""),
                            text(""),
                            boolean(true),
                            int(0),
                            int(0),
                            boolean(true),
                            text("x"),
                            text(""),
                            int(0),
                            int(0),
                            text("i"),
                            Value::Null,
                            Value::Null,
                            boolean(false),
                            Value::Null,
                            Value::Null,
                        ]);
                    }
                }
                "pg_attrdef" => {
                    for (i, c) in t.columns.iter().enumerate() {
                        if let Some(g) = &c.generated {
                            rows.push(vec![
                                int(oid::attrdef(toid, i)),
                                int(toid),
                                int(t.attnum(i).into()),
                                text(g),
                            ]);
                        }
                        if let Some(d) = &c.default {
                            let shown = crate::pg::defaults::shown(d, c.ty, qualify);
                            rows.push(vec![
                                int(oid::attrdef(toid, i)),
                                int(toid),
                                int(t.attnum(i).into()),
                                text(&shown),
                            ]);
                        }
                    }
                }
                "pg_index" | "pg_indexes" => {
                    for (ioid, name, c, unique, primary, _, (exprs, predicate, include, nnd)) in
                        &indexes
                    {
                        if which == "pg_indexes" {
                            let def = defs
                                .iter()
                                .find(|(o, _)| o == ioid)
                                .map(|(_, d)| d.clone())
                                .unwrap_or_default();
                            rows.push(vec![
                                text(schema_of(&t.name)),
                                text(unqualified(&t.name)),
                                text(name),
                                Value::Null,
                                text(&def),
                            ]);
                            continue;
                        }
                        let zeros = |n: usize| Value::Array(vec![Value::Int(0); n]);
                        // Each key part: its column, or none (0) for an expression.
                        let parts: Vec<Option<usize>> = if exprs.is_empty() {
                            c.iter().map(|&k| Some(k)).collect()
                        } else {
                            exprs.iter().map(|e| t.column(e.trim_matches('"'))).collect()
                        };
                        let n = parts.len();
                        let collations = Value::Array(
                            parts
                                .iter()
                                .map(|k| {
                                    let text = k.is_some_and(|k| t.columns[k].ty.is_string());
                                    Value::Int(if text { 100 } else { 0 })
                                })
                                .collect(),
                        );
                        // The key parts, then the INCLUDE columns.
                        let indkey = Value::Array(
                            parts
                                .iter()
                                .map(|k| Value::Int(k.map_or(0, |k| t.attnum(k).into())))
                                .chain(include.iter().map(|&k| Value::Int(t.attnum(k).into())))
                                .collect(),
                        );
                        let exprs_text = (!exprs.is_empty()).then(|| text(&exprs.join(", ")));
                        rows.push(vec![
                            int(*ioid),
                            int(toid),
                            int((n + include.len()) as i64),
                            int(n as i64),
                            boolean(*unique),
                            boolean(*primary),
                            boolean(false),
                            boolean(true),
                            boolean(false),
                            boolean(true),
                            boolean(true),
                            boolean(true),
                            boolean(false),
                            indkey,
                            collations,
                            zeros(n),
                            zeros(n),
                            exprs_text.unwrap_or(Value::Null),
                            // As pg_get_expr(indpred, indrelid) shows it.
                            predicate.as_deref().map_or(Value::Null, |p| text(&format!("({p})"))),
                            boolean(*nnd),
                        ]);
                    }
                }
                "pg_constraint" => {
                    for (ioid, name, c, _, _, kind, _) in &indexes {
                        let Some(k) = kind else { continue };
                        rows.push(vec![
                            int(oid::constraint(*ioid)),
                            text(name),
                            int(ns.oid(&t.name)),
                            text(&k.to_string()),
                            boolean(false),
                            boolean(false),
                            boolean(true),
                            int(toid),
                            int(0),
                            int(*ioid),
                            int(0),
                            int(0),
                            attnums(t, c),
                            Value::Null,
                            text(" "),
                            text(" "),
                            text(" "),
                            boolean(true),
                            int(0),
                            boolean(false),
                            Value::Null,
                        ]);
                    }
                    for (n, fk) in t.foreign_keys.iter().enumerate() {
                        let Some(parent) = tables.iter().find(|p| p.name == fk.table) else {
                            continue;
                        };
                        // The index that enforces the referenced key.
                        let index = if crate::exec::constraints::same_set(
                            &fk.ref_columns,
                            &parent.primary_key,
                        ) {
                            oid::pkey_index(parent.id)
                        } else {
                            parent
                                .indexes
                                .iter()
                                .find(|i| {
                                    i.unique
                                        && crate::exec::constraints::same_set(
                                            &fk.ref_columns,
                                            &i.columns,
                                        )
                                })
                                .map_or(0, |i| oid::object(i.id))
                        };
                        // A partition's copy of its parent's key names the parent's.
                        let inherited = t.partition_of.as_ref().and_then(|of| {
                            let up = tables.iter().find(|p| p.name == of.parent)?;
                            let i = up.foreign_keys.iter().position(|f| f.name == fk.name)?;
                            Some(oid::table_constraint(up.id, i))
                        });
                        rows.push(vec![
                            int(oid::table_constraint(t.id, n)),
                            text(&fk.name),
                            int(ns.oid(&t.name)),
                            text("f"),
                            boolean(fk.deferrable),
                            boolean(fk.initially_deferred),
                            boolean(true),
                            int(toid),
                            int(0),
                            int(index),
                            int(inherited.unwrap_or(0)),
                            int(oid::object(parent.id)),
                            attnums(t, &fk.columns),
                            attnums(parent, &fk.ref_columns),
                            text(fk.on_update.code()),
                            text(fk.on_delete.code()),
                            text("s"),
                            boolean(inherited.is_none()),
                            int(inherited.map_or(0, |_| 1)),
                            boolean(false),
                            Value::Null,
                        ]);
                    }
                    for (n, ck) in t.checks.iter().enumerate() {
                        rows.push(vec![
                            int(oid::table_constraint(t.id, 500 + n)),
                            text(&ck.name),
                            int(ns.oid(&t.name)),
                            text("c"),
                            boolean(false),
                            boolean(false),
                            boolean(true),
                            int(toid),
                            int(0),
                            int(0),
                            int(0),
                            int(0),
                            Value::Null,
                            Value::Null,
                            text(" "),
                            text(" "),
                            text(" "),
                            boolean(true),
                            int(0),
                            boolean(false),
                            text(&ck.expr),
                        ]);
                    }
                }
                _ => {}
            }
        }
        // Domains' CHECK constraints (contypid, no relation).
        let domains = self.db.catalog().domains(txn, self.database)?;
        self.db.remember_domains(self.database, &domains);
        for d in &domains {
            for ck in &d.checks {
                let valid = if ck.not_valid { " NOT VALID" } else { "" };
                defs.push((i64::from(ck.oid), format!("CHECK ({}){valid}", ck.expr)));
                if which == "pg_constraint" {
                    rows.push(vec![
                        int(ck.oid.into()),
                        text(&ck.name),
                        int(oid::PUBLIC),
                        text("c"),
                        boolean(false),
                        boolean(false),
                        boolean(!ck.not_valid),
                        int(0),
                        int(d.oid.into()),
                        int(0),
                        int(0),
                        int(0),
                        Value::Null,
                        Value::Null,
                        text(" "),
                        text(" "),
                        text(" "),
                        boolean(true),
                        int(0),
                        boolean(false),
                        text(&ck.expr),
                    ]);
                }
            }
        }
        let views = self.db.catalog().views(txn, self.database)?;
        let relations: HashSet<String> = if qualify {
            tables
                .iter()
                .map(|t| t.name.clone())
                .chain(views.iter().map(|v| v.name.clone()))
                .collect()
        } else {
            HashSet::new()
        };
        for t in &tables {
            if let Some(m) = &t.matview {
                let query =
                    if qualify { query_qualified(&m.query, &relations) } else { m.query.clone() };
                defs.push((oid::object(t.id), format!(" {query};")));
            }
        }
        for v in views {
            let voids = oid::object(v.id);
            let query =
                if qualify { query_qualified(&v.query, &relations) } else { v.query.clone() };
            defs.push((voids, format!(" {query};")));
            let columns = v.column_names().into_iter().zip(v.columns.iter().map(|(_, t)| *t));
            match which {
                "pg_class" => {
                    let (nsp, vname) = (ns.oid(&v.name), unqualified(&v.name));
                    rows.push(class_row(voids, nsp, vname, "v", v.columns.len(), 0, false))
                }
                "pg_attribute" => {
                    for (i, (name, ty)) in columns.enumerate() {
                        rows.push(attribute_row(voids, &name, ty, i as i16 + 1));
                    }
                }
                _ => {}
            }
        }
        for t in &tables {
            for tr in &t.triggers {
                defs.push((oid::object(tr.id), crate::exec::triggers::definition(t, tr, qualify)));
            }
        }
        for f in self.db.catalog().functions(txn, self.database)? {
            defs.push((oid::object(f.id), crate::exec::routines::function_definition(&f, qualify)));
        }
        self.db.remember_definitions(defs);
        // Column types: format_type(atttypid, …) names enum types by what it remembers.
        let enums = self.db.catalog().enum_types(txn, self.database)?;
        self.db.remember_enum_types(self.database, &enums);
        let columns = match which {
            "pg_class" => cols(&[
                ("oid", O),
                ("relname", N),
                ("relnamespace", O),
                ("reltype", O),
                ("relowner", O),
                ("relam", O),
                ("relfilenode", O),
                ("reltablespace", O),
                ("relpages", I4),
                ("reltuples", DataType::Float4),
                ("relallvisible", I4),
                ("reltoastrelid", O),
                ("relhasindex", B),
                ("relisshared", B),
                ("relpersistence", C),
                ("relkind", C),
                ("relnatts", I2),
                ("relchecks", I2),
                ("relhasrules", B),
                ("relhastriggers", B),
                ("relhassubclass", B),
                ("relrowsecurity", B),
                ("relforcerowsecurity", B),
                ("relreplident", C),
                ("relispartition", B),
                ("reloptions", TA),
                ("relpartbound", T),
                ("reloftype", O),
                ("relacl", TA),
                ("relfrozenxid", O),
                ("relminmxid", O),
                ("relispopulated", B),
            ]),
            "pg_tables" => cols(&[
                ("schemaname", N),
                ("tablename", N),
                ("tableowner", N),
                ("tablespace", N),
                ("hasindexes", B),
            ]),
            "pg_attribute" => cols(&[
                ("attrelid", O),
                ("attname", N),
                ("atttypid", O),
                ("attlen", I2),
                ("attnum", I2),
                ("atttypmod", I4),
                ("attnotnull", B),
                ("atthasdef", B),
                ("attidentity", C),
                ("attgenerated", C),
                ("attisdropped", B),
                ("attcollation", O),
                ("attinhcount", I4),
                ("attislocal", B),
                ("attstorage", C),
                ("attcompression", C),
                ("attstattarget", I4),
                ("attndims", I2),
                ("attalign", C),
                ("attoptions", TA),
                ("attfdwoptions", TA),
                ("atthasmissing", B),
                ("attmissingval", T),
                ("attacl", TA),
            ]),
            "pg_attrdef" => cols(&[("oid", O), ("adrelid", O), ("adnum", I2), ("adbin", T)]),
            "pg_index" => cols(&[
                ("indexrelid", O),
                ("indrelid", O),
                ("indnatts", I2),
                ("indnkeyatts", I2),
                ("indisunique", B),
                ("indisprimary", B),
                ("indisexclusion", B),
                ("indimmediate", B),
                ("indisclustered", B),
                ("indisvalid", B),
                ("indisready", B),
                ("indislive", B),
                ("indisreplident", B),
                ("indkey", DataType::Int2Vector),
                ("indcollation", DataType::OidVector),
                ("indclass", DataType::OidVector),
                ("indoption", DataType::Int2Vector),
                ("indexprs", T),
                ("indpred", T),
                ("indnullsnotdistinct", B),
            ]),
            "pg_inherits" => cols(&[
                ("inhrelid", O),
                ("inhparent", O),
                ("inhseqno", I4),
                ("inhdetachpending", B),
            ]),
            "pg_partitioned_table" => cols(&[
                ("partrelid", O),
                ("partstrat", C),
                ("partnatts", I2),
                ("partdefid", O),
                ("partattrs", DataType::Int2Vector),
                ("partclass", DataType::OidVector),
                ("partcollation", DataType::OidVector),
                ("partexprs", T),
            ]),
            "pg_indexes" => cols(&[
                ("schemaname", N),
                ("tablename", N),
                ("indexname", N),
                ("tablespace", N),
                ("indexdef", T),
            ]),
            _ => cols(&[
                ("oid", O),
                ("conname", N),
                ("connamespace", O),
                ("contype", C),
                ("condeferrable", B),
                ("condeferred", B),
                ("convalidated", B),
                ("conrelid", O),
                ("contypid", O),
                ("conindid", O),
                ("conparentid", O),
                ("confrelid", O),
                ("conkey", I2A),
                ("confkey", I2A),
                ("confupdtype", C),
                ("confdeltype", C),
                ("confmatchtype", C),
                ("conislocal", B),
                ("coninhcount", I4),
                ("connoinherit", B),
                ("conbin", T),
            ]),
        };
        Ok((columns, rows))
    }
}

/// The namespaces relations are in, by the schemas their catalog names give.
struct Namespaces(Vec<(String, i64)>);

impl Namespaces {
    fn load(db: &Database, txn: &mut Transaction, database: &str) -> Result<Namespaces> {
        let schemas = db.catalog().schemas(txn, database)?;
        Ok(Namespaces(schemas.into_iter().map(|s| (s.name, oid::object(s.id))).collect()))
    }

    /// The OID of the namespace of the relation with catalog name `name`.
    fn oid(&self, name: &str) -> i64 {
        match schema_of(name) {
            "public" => oid::PUBLIC,
            "pg_catalog" => oid::PG_CATALOG,
            "information_schema" => oid::INFORMATION_SCHEMA,
            schema => self.0.iter().find(|(n, _)| n == schema).map_or(0, |(_, o)| *o),
        }
    }
}

/// A relation's name as stored texts (defaults) name it: with its schema when not in
/// `public`, whatever the search path.
pub(crate) fn stored_relation(name: &str) -> String {
    let (schema, own) = (schema_of(name), unqualified(name));
    if schema == "public" {
        crate::bind::quote_ident(own)
    } else {
        format!("{}.{}", crate::bind::quote_ident(schema), crate::bind::quote_ident(own))
    }
}

/// A relation's name as catalog functions write it: with its schema when it is not in
/// `public`, or when `qualify` (`public` is off the search path).
pub(crate) fn shown_relation(name: &str, qualify: bool) -> String {
    let (schema, own) = (schema_of(name), unqualified(name));
    let on_path = schema != "public" && crate::bind::search::visible(name);
    if (schema == "public" && !qualify) || on_path {
        crate::bind::quote_ident(own)
    } else {
        format!("{}.{}", crate::bind::quote_ident(schema), crate::bind::quote_ident(own))
    }
}
