//! The ED surface of a session: the `kiln_*` functions (and the other functions that need the
//! session: pg_cancel_backend, pg_sleep …), evaluated through `SessionEnv`, and the router
//! that turns the engine's durability events into `kiln_durable` / `kiln_lost` notifications
//! for exactly the sessions whose transactions they concern.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use kiln_engine::{DurabilityEvent, TxnId, TxnKind};
use parking_lot::Mutex;

use crate::error::{code, Result, SqlError};
use crate::expr::{CatalogFunc, Env, Func};
use crate::pg::activity::{Activity, Wait};
use crate::types::{DataType, Value};

use crate::database::*;

/// A durability notification for one of a session's transactions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// `kiln_durable` or `kiln_lost`.
    pub channel: String,
    /// The transaction id (`epoch.csn`).
    pub payload: String,
}

pub(crate) struct Inbox {
    pub(crate) queue: Mutex<VecDeque<Notification>>,
    pub(crate) channels: Mutex<HashSet<String>>,
    pub(crate) waker: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
}

impl Inbox {
    pub(crate) fn deliver(&self, channel: &str, id: TxnId) {
        if !self.channels.lock().contains(channel) {
            return;
        }
        self.queue.lock().push_back(Notification {
            channel: channel.to_string(),
            payload: format!("{}.{}", id.epoch, id.csn),
        });
        if let Some(w) = &*self.waker.lock() {
            w();
        }
    }
}

/// The sessions waiting to hear about one transaction.
pub(crate) type Watchers = Vec<Weak<Inbox>>;

/// A transaction (epoch, CSN) and who watches it.
pub(crate) type Watched = ((u32, u64), Watchers);

/// Routes the engine's durability events to the sessions whose transactions they concern.
#[derive(Default)]
pub(crate) struct Notifier {
    pub(crate) pending: Mutex<BTreeMap<(u32, u64), Watchers>>,
}

impl Notifier {
    pub(crate) fn watch(&self, id: TxnId, inbox: &Arc<Inbox>) {
        self.pending.lock().entry((id.epoch, id.csn)).or_default().push(Arc::downgrade(inbox));
    }

    pub(crate) fn on_event(&self, event: &DurabilityEvent) {
        let mut pending = self.pending.lock();
        let (channel, hit): (&str, Vec<Watched>) = match event {
            DurabilityEvent::Durable { epoch, csn } => {
                let keys: Vec<(u32, u64)> =
                    pending.range(..=(*epoch, *csn)).map(|(k, _)| *k).collect();
                (
                    "kiln_durable",
                    keys.into_iter().filter_map(|k| pending.remove(&k).map(|v| (k, v))).collect(),
                )
            }
            DurabilityEvent::Lost { epoch, from_csn, .. } => {
                let keys: Vec<(u32, u64)> = pending
                    .range((*epoch, *from_csn)..(*epoch, u64::MAX))
                    .map(|(k, _)| *k)
                    .collect();
                (
                    "kiln_lost",
                    keys.into_iter().filter_map(|k| pending.remove(&k).map(|v| (k, v))).collect(),
                )
            }
        };
        // Delivered under the lock, so whoever takes the lock next sees them queued.
        for ((epoch, csn), inboxes) in hit {
            for inbox in inboxes.iter().filter_map(Weak::upgrade) {
                inbox.deliver(channel, TxnId { epoch, csn, kind: TxnKind::Update });
            }
        }
        drop(pending);
    }
}

pub(crate) struct SessionEnv<'a> {
    pub(crate) db: &'a Database,
    /// The session's last committed transaction that wrote.
    pub(crate) last_write: Option<TxnId>,
    pub(crate) engine_session: &'a kiln_engine::Session,
    pub(crate) user: &'a str,
    pub(crate) database: &'a str,
    pub(crate) pid: i32,
    pub(crate) now: i64,
    pub(crate) activity: &'a Activity,
}

/// Waits run in slices this long, checking for an interrupt between them.
pub(crate) const WAIT_SLICE: Duration = Duration::from_millis(20);

/// How long a safe commit waits for a log that cannot be written (a full disk) before it
/// answers 53100; the commit itself stands and hardens when space returns.
pub(crate) const DISK_FULL_WAIT: Duration = Duration::from_secs(5);

pub(crate) fn id_arg(v: &Value) -> Result<TxnId> {
    let s = v.to_text(DataType::Text).unwrap_or_default();
    s.trim().parse::<TxnId>().map_err(|_| {
        SqlError::new(
            code::INVALID_TEXT,
            format!(
                "invalid transaction id \"{s}\": expected epoch.csn, as kiln_last_txid() returns"
            ),
        )
    })
}

impl SessionEnv<'_> {
    /// The fault switches, when the server was started with fault injection (0A000 else).
    fn faults(&self) -> Result<&kiln_engine::Faults> {
        self.db.config.faults.as_deref().ok_or_else(|| {
            SqlError::new(code::FEATURE_NOT_SUPPORTED, "fault injection is disabled")
                .hint("Start kiln serve with --enable-fault-injection (for tests only).")
        })
    }
}

impl Env for SessionEnv<'_> {
    fn now(&self) -> i64 {
        self.now
    }
    fn database(&self) -> String {
        self.database.to_string()
    }
    fn user(&self) -> String {
        self.user.to_string()
    }
    fn backend_pid(&self) -> i32 {
        self.pid
    }
    fn kiln(&self, func: Func, args: &[Value]) -> Result<Value> {
        let engine = &self.db.engine;
        Ok(match func {
            Func::KilnSync => {
                self.activity.set_wait(Some(Wait::Durability));
                let synced = loop {
                    match self.engine_session.sync_within(WAIT_SLICE) {
                        Ok(true) => break Ok(()),
                        Ok(false) => {}
                        Err(e) => break Err(SqlError::from(e)),
                    }
                    if let Err(e) = self.activity.check_interrupt() {
                        break Err(e);
                    }
                };
                self.activity.set_wait(None);
                synced?;
                let stats = engine.stats();
                Value::Text(format!("{}.{}", stats.epoch, stats.durable_csn))
            }
            Func::KilnPersist => {
                let (epoch, csn) = engine.persist()?;
                Value::Text(format!("{epoch}.{csn}"))
            }
            Func::KilnLastTxid => {
                match self.last_write.or_else(|| self.engine_session.last_txn_id()) {
                    Some(id) => Value::Text(id.to_string()),
                    None => Value::Null,
                }
            }
            Func::KilnTxnStatus => Value::Text(engine.status(id_arg(&args[0])?).as_str().into()),
            Func::KilnWait => {
                let id = id_arg(&args[0])?;
                let ms = match args.get(1) {
                    Some(Value::Int(ms)) if *ms >= 0 => *ms as u64,
                    None | Some(Value::Null) => 10_000,
                    Some(v) => {
                        return Err(SqlError::new(
                            code::INVALID_PARAMETER_VALUE,
                            format!("kiln_wait timeout must be a non-negative number of milliseconds, not {v:?}"),
                        ))
                    }
                };
                let deadline = std::time::Instant::now() + Duration::from_millis(ms);
                self.activity.set_wait(Some(Wait::Durability));
                let status = loop {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    let status = match engine.wait(id, left.min(WAIT_SLICE)) {
                        Ok(s) => s,
                        Err(kiln_engine::Error::Lost { .. }) => kiln_engine::TxnStatus::Lost,
                        Err(e) => break Err(e.into()),
                    };
                    if status != kiln_engine::TxnStatus::Committed || left.is_zero() {
                        break Ok(status);
                    }
                    if let Err(e) = self.activity.check_interrupt() {
                        break Err(e);
                    }
                };
                self.activity.set_wait(None);
                Value::Text(status?.as_str().into())
            }
            Func::CancelBackend | Func::TerminateBackend => {
                let Value::Int(pid) = args[0] else {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        "a backend pid is an integer",
                    ));
                };
                let pid = i32::try_from(pid).unwrap_or(-1);
                let found = if func == Func::CancelBackend {
                    self.db.activities.cancel(pid)
                } else {
                    self.db.activities.terminate(pid)
                };
                if !found {
                    tracing::warn!(pid, "PID {pid} is not a Kiln server process");
                }
                Value::Bool(found)
            }
            Func::Sleep => {
                let seconds = match &args[0] {
                    Value::Float(f) => *f,
                    Value::Int(i) => *i as f64,
                    Value::Numeric(d) => d.to_string().parse().unwrap_or(0.0),
                    _ => 0.0,
                };
                let total = Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or(Duration::MAX);
                let deadline = std::time::Instant::now().checked_add(total);
                loop {
                    self.activity.check_interrupt()?;
                    let left = match deadline {
                        Some(d) => d.saturating_duration_since(std::time::Instant::now()),
                        None => WAIT_SLICE,
                    };
                    if left.is_zero() {
                        break;
                    }
                    std::thread::sleep(left.min(WAIT_SLICE));
                }
                Value::Null
            }
            Func::KilnFaultPanic => {
                self.faults()?;
                panic!("kiln_fault_panic() was called");
            }
            Func::KilnFaultFailSyncs => {
                let faults = self.faults()?;
                let n = match args.first() {
                    Some(Value::Int(n)) if *n >= 0 => *n as u64,
                    _ => {
                        return Err(SqlError::new(
                            code::INVALID_PARAMETER_VALUE,
                            "kiln_fault_fail_syncs needs a non-negative count",
                        ))
                    }
                };
                *faults.path_filter.lock() = ".log".into();
                faults.fail_syncs.store(n, Ordering::SeqCst);
                Value::Text(format!("the next {n} log fsyncs will fail"))
            }
            Func::KilnFaultDiskFull => {
                let faults = self.faults()?;
                let free = match args.first() {
                    Some(Value::Int(n)) if *n >= 0 => *n as u64,
                    _ => u64::MAX,
                };
                *faults.path_filter.lock() = ".log".into();
                faults.free_bytes.store(free, Ordering::SeqCst);
                Value::Text(if free == u64::MAX {
                    "the log's disk has room again".into()
                } else {
                    format!("the log's disk has {free} bytes free")
                })
            }
            _ => Value::Null,
        })
    }

    fn catalog(&self, func: CatalogFunc, args: &[Value]) -> Result<Value> {
        let arg_int = |i: usize| match args.get(i) {
            Some(Value::Int(n)) => Some(*n),
            Some(Value::Text(s)) => s.trim().parse().ok(),
            _ => None,
        };
        Ok(match func {
            CatalogFunc::TableIsVisible | CatalogFunc::HasPrivilege => Value::Bool(true),
            CatalogFunc::RelationIsPublishable => Value::Bool(false),
            CatalogFunc::UserById => Value::Text("kiln".into()),
            CatalogFunc::EncodingToChar => Value::Text("UTF8".into()),
            CatalogFunc::CurrentSchemas => Value::Text("{pg_catalog,public}".into()),
            CatalogFunc::StatisticsColumns | CatalogFunc::Description => Value::Null,
            CatalogFunc::GetExpr => args.first().cloned().unwrap_or(Value::Null),
            CatalogFunc::FormatType => {
                let Some(oid) = arg_int(0) else { return Ok(Value::Null) };
                let typmod = arg_int(1).unwrap_or(-1);
                let ty = match DataType::from_oid(oid as u32) {
                    Some(DataType::Varchar(_)) if typmod >= 4 => {
                        DataType::Varchar(Some(typmod as u32 - 4))
                    }
                    Some(DataType::Char(_)) if typmod >= 4 => DataType::Char(typmod as u32 - 4),
                    Some(DataType::Numeric(_)) if typmod >= 4 => {
                        let m = (typmod - 4) as u32;
                        DataType::Numeric(Some((m >> 16, m & 0xffff)))
                    }
                    Some(t) => t,
                    None => return Ok(Value::Text("???".into())),
                };
                Value::Text(ty.sql_name())
            }
            CatalogFunc::IndexDef | CatalogFunc::ConstraintDef => match arg_int(0) {
                Some(oid) => self
                    .db
                    .definitions
                    .lock()
                    .get(&oid)
                    .cloned()
                    .map(Value::Text)
                    .unwrap_or(Value::Null),
                None => Value::Null,
            },
        })
    }
}
