//! The ED surface of a session: the `kiln_*` functions (and the other functions that need the
//! session: pg_cancel_backend, pg_sleep …), evaluated through `SessionEnv`, and the router
//! that turns the engine's durability events into `kiln_durable` / `kiln_lost` notifications
//! for exactly the sessions whose transactions they concern.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use kiln_engine::{DurabilityEvent, DurabilityLevel, TxnId, TxnKind};
use parking_lot::Mutex;

use crate::error::{code, Result, SqlError};
use crate::expr::{AdvisoryOp, CatalogFunc, Env, Func, SeqFunc};
use crate::pg::activity::{Activity, Wait};
use crate::sequence::Sequence;
use crate::types::{DataType, Value};

use crate::database::*;

/// A notification for a session: a durability notification for one of its transactions
/// (`kiln_durable`, `kiln_lost`, `kiln_durable_<level>`, the payload its id `epoch.csn`), or
/// one a transaction sent with NOTIFY or `pg_notify`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// The channel.
    pub channel: String,
    /// The payload.
    pub payload: String,
    /// The sending session's process id; none for durability notifications, which the
    /// session's own process sends.
    pub sender: Option<i32>,
}

/// The largest NOTIFY payload, in bytes (PostgreSQL's limit).
pub(crate) const NOTIFY_PAYLOAD_MAX: usize = 7999;

/// How many bytes of notifications may wait in one session's queue (or be sent by one
/// transaction): past it, NOTIFY fails with 54000 rather than grow memory without bound for
/// a listener that does not read.
pub(crate) const NOTIFY_QUEUE_BYTES_MAX: usize = 64 << 20;

/// What one notification costs in a queue.
pub(crate) fn notification_bytes(channel: &str, payload: &str) -> usize {
    channel.len() + payload.len() + 64
}

/// Checks a NOTIFY's channel and payload as PostgreSQL does (22023), and keeps Kiln's
/// durability channels for the server (42939).
fn check_notify(channel: &str, payload: &str) -> Result<()> {
    let invalid = |m: &str| Err(SqlError::new(code::INVALID_PARAMETER_VALUE, m.to_string()));
    if channel.is_empty() {
        return invalid("channel name cannot be empty");
    }
    if channel.len() > 63 {
        return invalid("channel name too long");
    }
    if payload.len() > NOTIFY_PAYLOAD_MAX {
        return invalid("payload string too long");
    }
    if channel == "kiln_durable" || channel == "kiln_lost" || channel_level(channel).is_some() {
        return Err(SqlError::new(
            "42939",
            format!("channel \"{channel}\" is reserved for Kiln's durability notifications"),
        )
        .hint("LISTEN to it to hear when your own transactions become durable or are lost."));
    }
    Ok(())
}

/// Delivers a committed transaction's notifications to every session listening to their
/// channels (the sender's own included), in the order they were sent.
pub(crate) fn deliver_notifications(
    listeners: &Mutex<Vec<Weak<Inbox>>>,
    sender: i32,
    notes: &[(String, String)],
) {
    let inboxes: Vec<Arc<Inbox>> = {
        let mut listeners = listeners.lock();
        listeners.retain(|w| w.strong_count() > 0);
        listeners.iter().filter_map(Weak::upgrade).collect()
    };
    for inbox in inboxes {
        let wanted: Vec<&(String, String)> = {
            let channels = inbox.channels.lock();
            notes.iter().filter(|(c, _)| channels.contains(c)).collect()
        };
        if wanted.is_empty() {
            continue;
        }
        {
            let mut queue = inbox.queue.lock();
            for (channel, payload) in wanted {
                inbox.bytes.fetch_add(notification_bytes(channel, payload), Ordering::Relaxed);
                queue.push_back(Notification {
                    channel: channel.clone(),
                    payload: payload.clone(),
                    sender: Some(sender),
                });
            }
        }
        if let Some(w) = &*inbox.waker.lock() {
            w();
        }
    }
}

/// A transaction's NOTIFYs, in the order sent, each (channel, payload) once.
#[derive(Default)]
pub(crate) struct PendingNotifies {
    list: Vec<(String, String)>,
    seen: HashSet<(String, String)>,
    bytes: usize,
}

impl PendingNotifies {
    /// Queues one (checked, and folded into an identical one already queued).
    pub(crate) fn push(
        &mut self,
        listeners: &Mutex<Vec<Weak<Inbox>>>,
        channel: String,
        payload: String,
    ) -> Result<()> {
        check_notify(&channel, &payload)?;
        check_queues(listeners, &channel, self.bytes)?;
        let note = (channel, payload);
        if self.seen.insert(note.clone()) {
            self.bytes += notification_bytes(&note.0, &note.1);
            self.list.push(note);
        }
        Ok(())
    }

    /// How many are queued (a savepoint's mark).
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// Forgets those queued after the first `n` (a rollback to a savepoint).
    pub(crate) fn truncate(&mut self, n: usize) {
        for note in self.list.drain(n.min(self.list.len())..) {
            self.bytes -= notification_bytes(&note.0, &note.1);
            self.seen.remove(&note);
        }
    }

    /// Takes them all (at the commit point), leaving none.
    pub(crate) fn take(&mut self) -> Vec<(String, String)> {
        self.seen.clear();
        self.bytes = 0;
        std::mem::take(&mut self.list)
    }
}

/// 54000 when a session listening to `channel` has a full queue, or the transaction's
/// notifications so far (`sent` bytes) are too many.
fn check_queues(listeners: &Mutex<Vec<Weak<Inbox>>>, channel: &str, sent: usize) -> Result<()> {
    let full = || {
        SqlError::new(code::PROGRAM_LIMIT, "too many notifications in the NOTIFY queue")
            .hint("A session listening to this channel does not read its notifications, or the transaction sends too many.")
    };
    if sent > NOTIFY_QUEUE_BYTES_MAX {
        return Err(full());
    }
    for inbox in listeners.lock().iter().filter_map(Weak::upgrade) {
        if inbox.bytes.load(Ordering::Relaxed) > NOTIFY_QUEUE_BYTES_MAX
            && inbox.channels.lock().contains(channel)
        {
            return Err(full());
        }
    }
    Ok(())
}

pub(crate) struct Inbox {
    pub(crate) queue: Mutex<VecDeque<Notification>>,
    /// What the queue's NOTIFY notifications cost ([`NOTIFY_QUEUE_BYTES_MAX`]).
    pub(crate) bytes: std::sync::atomic::AtomicUsize,
    pub(crate) channels: Mutex<HashSet<String>>,
    pub(crate) waker: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
    /// Whether it is in the database's list of listeners (NOTIFY looks there).
    pub(crate) registered: std::sync::atomic::AtomicBool,
}

impl Inbox {
    pub(crate) fn deliver(&self, channel: &str, id: TxnId) {
        if !self.channels.lock().contains(channel) {
            return;
        }
        self.queue.lock().push_back(Notification {
            channel: channel.to_string(),
            payload: format!("{}.{}", id.epoch, id.csn),
            sender: None,
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

/// Watchers of commits keyed (CSN, epoch).
type ByCsn = BTreeMap<(u64, u32), Watchers>;

/// The channel that fires when a session's commit reaches `level`, beyond plain
/// `kiln_durable` (which fires at `quorum`, durable): `kiln_durable_local`,
/// `kiln_durable_all`, `kiln_durable_site_<name>`.
pub(crate) fn level_channel(level: &DurabilityLevel) -> String {
    match level {
        DurabilityLevel::Site(name) => format!("kiln_durable_site_{name}"),
        other => format!("kiln_durable_{other}"),
    }
}

/// The level a `kiln_durable_…` channel listens for, if it is one.
pub(crate) fn channel_level(channel: &str) -> Option<DurabilityLevel> {
    match channel.strip_prefix("kiln_durable_")? {
        "local" => Some(DurabilityLevel::Local),
        "quorum" => Some(DurabilityLevel::Quorum),
        "all" => Some(DurabilityLevel::All),
        other => DurabilityLevel::site(other.strip_prefix("site_")?),
    }
}

/// Routes the engine's durability events to the sessions whose transactions they concern.
#[derive(Default)]
pub(crate) struct Notifier {
    /// Commits waiting to be durable (`kiln_durable`) or lost (`kiln_lost`).
    pub(crate) pending: Mutex<BTreeMap<(u32, u64), Watchers>>,
    /// Commits waiting to reach a level, by level, keyed (CSN, epoch): a level's watermark
    /// is a position in the log, whatever the epoch.
    levels: Mutex<BTreeMap<DurabilityLevel, ByCsn>>,
    /// A standalone engine reaches every level at its fdatasync (a `Durable` event).
    standalone: bool,
}

impl Notifier {
    pub(crate) fn new(standalone: bool) -> Notifier {
        Notifier { standalone, ..Default::default() }
    }

    pub(crate) fn watch(&self, id: TxnId, inbox: &Arc<Inbox>) {
        self.pending.lock().entry((id.epoch, id.csn)).or_default().push(Arc::downgrade(inbox));
        let levels: Vec<DurabilityLevel> =
            inbox.channels.lock().iter().filter_map(|c| channel_level(c)).collect();
        if !levels.is_empty() {
            let mut by_level = self.levels.lock();
            for level in levels {
                let watchers = by_level.entry(level).or_default();
                watchers.entry((id.csn, id.epoch)).or_default().push(Arc::downgrade(inbox));
            }
        }
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
            DurabilityEvent::Reached { .. } => ("", Vec::new()),
        };
        // Delivered under the lock, so whoever takes the lock next sees them queued.
        for ((epoch, csn), inboxes) in hit {
            for inbox in inboxes.iter().filter_map(Weak::upgrade) {
                inbox.deliver(channel, TxnId { epoch, csn, kind: TxnKind::Update });
            }
        }
        drop(pending);
        self.on_level_event(event);
    }

    /// The `kiln_durable_<level>` notifications an event brings: a level's watermark moved
    /// (`Reached`); a commit that is durable also reached `local` and `quorum` (and, alone,
    /// every level); a lost one never reaches any, and stops being watched.
    fn on_level_event(&self, event: &DurabilityEvent) {
        let mut by_level = self.levels.lock();
        if by_level.is_empty() {
            return;
        }
        let mut hit: Vec<(DurabilityLevel, (u64, u32), Watchers)> = Vec::new();
        let levels: Vec<DurabilityLevel> = match event {
            DurabilityEvent::Reached { level, .. } => vec![level.clone()],
            DurabilityEvent::Durable { .. } if self.standalone => {
                by_level.keys().cloned().collect()
            }
            DurabilityEvent::Durable { .. } => {
                vec![DurabilityLevel::Local, DurabilityLevel::Quorum]
            }
            DurabilityEvent::Lost { .. } => Vec::new(),
        };
        match event {
            DurabilityEvent::Reached { csn, .. } | DurabilityEvent::Durable { csn, .. } => {
                for level in levels {
                    let Some(watchers) = by_level.get_mut(&level) else { continue };
                    let keys: Vec<(u64, u32)> =
                        watchers.range(..=(*csn, u32::MAX)).map(|(k, _)| *k).collect();
                    for k in keys {
                        if let Some(w) = watchers.remove(&k) {
                            hit.push((level.clone(), k, w));
                        }
                    }
                }
            }
            DurabilityEvent::Lost { epoch, from_csn, .. } => {
                for watchers in by_level.values_mut() {
                    watchers.retain(|&(csn, e), _| !(e == *epoch && csn >= *from_csn));
                }
            }
        }
        by_level.retain(|_, watchers| !watchers.is_empty());
        drop(by_level);
        for (level, (csn, epoch), inboxes) in hit {
            let channel = level_channel(&level);
            for inbox in inboxes.iter().filter_map(Weak::upgrade) {
                inbox.deliver(&channel, TxnId { epoch, csn, kind: TxnKind::Update });
            }
        }
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
    /// The session's time zone, DateStyle and IntervalStyle.
    pub(crate) style: crate::style::Style,
    pub(crate) activity: &'a Activity,
    pub(crate) sequence_values: &'a parking_lot::Mutex<crate::sequence::SessionValues>,
    /// The session's advisory locks.
    pub(crate) advisory: &'a parking_lot::Mutex<crate::advisory::AdvisoryLocks>,
    /// How long a lock is waited for (`lock_timeout`; none: no limit).
    pub(crate) lock_timeout: Option<Duration>,
    /// The transaction's NOTIFYs (`pg_notify` adds to them).
    pub(crate) notifies: &'a parking_lot::Mutex<PendingNotifies>,
    /// The session's settings (`search_path` is read from them where a function needs it).
    pub(crate) settings: &'a std::collections::BTreeMap<String, String>,
    /// The settings the client gave at startup (what a reset returns to).
    pub(crate) startup: &'a std::collections::BTreeMap<String, String>,
    /// The statement's `set_config` calls, applied when it succeeds.
    pub(crate) set_configs: &'a parking_lot::Mutex<Vec<crate::pg::settings::SetConfig>>,
    /// The session's notices for the client.
    pub(crate) notices: &'a parking_lot::Mutex<Vec<crate::session::Notice>>,
}

/// Waits run in slices this long, checking for an interrupt between them.
pub(crate) const WAIT_SLICE: Duration = Duration::from_millis(20);

/// How long a safe commit waits for a log that cannot be written (a full disk) before it
/// answers 53100; the commit itself stands and hardens when space returns.
pub(crate) const DISK_FULL_WAIT: Duration = Duration::from_secs(5);

/// Waits for a commit's acknowledgement (a safe one's durability point) in slices, so that
/// the wait can end early: a cancel or a terminated session answers 57014 / 57P01, and a disk
/// full for longer than [`DISK_FULL_WAIT`] answers 53100. Either way the transaction stays
/// committed and visible, and becomes durable once the log can be written again (or is lost
/// on a later failure): the error says so, with its id.
pub(crate) fn acknowledge(
    db: &Database,
    activity: &Activity,
    committed: kiln_engine::Committed,
) -> Result<TxnId> {
    let id = committed.id();
    let mut committed = committed;
    let mut stalled_since: Option<std::time::Instant> = None;
    loop {
        match committed.acknowledge_within(WAIT_SLICE)? {
            kiln_engine::Acknowledgement::Acknowledged(id) => return Ok(id),
            kiln_engine::Acknowledgement::Pending(c) => committed = c,
        }
        let unconfirmed = |e: SqlError| {
            e.detail(format!(
                "Transaction {id} is committed and visible, but its durability was not confirmed: kiln_txn_status('{id}') tells whether it became durable or was lost."
            ))
        };
        if let Err(e) = activity.check_interrupt() {
            return Err(unconfirmed(e));
        }
        match db.engine.stats().stalled {
            Some(cause) => {
                let since = *stalled_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() >= DISK_FULL_WAIT {
                    let e = SqlError::new(
                        code::DISK_FULL,
                        format!("could not make the commit durable: {cause}"),
                    )
                    .hint("Free disk space: waiting commits become durable as soon as the log can be written.");
                    return Err(unconfirmed(e));
                }
            }
            None => stalled_since = None,
        }
    }
}

/// The lock an advisory function names: one bigint, or two integers (a separate space).
fn advisory_key(args: &[Value]) -> Result<crate::locks::LockKey> {
    let int = |v: &Value| match v {
        Value::Int(i) => Ok(*i),
        _ => Err(no_such_key()),
    };
    match args {
        [key] => Ok(crate::locks::LockKey::advisory(int(key)? as u64, false)),
        [high, low] => {
            let half = |v: &Value| {
                let i = int(v)?;
                i32::try_from(i).map(|i| i as u32 as u64).map_err(|_| no_such_key())
            };
            Ok(crate::locks::LockKey::advisory(half(high)? << 32 | half(low)?, true))
        }
        _ => Err(no_such_key()),
    }
}

/// PostgreSQL finds no advisory lock function for other key types (42883).
fn no_such_key() -> SqlError {
    SqlError::new(code::UNDEFINED_FUNCTION, "no advisory lock function takes these keys")
        .hint("An advisory lock is named by one bigint or by two integers.")
}

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
    /// A user type's name (an enum type, or an array of one), with its schema when the
    /// search path lacks `public`, as PostgreSQL's format_type names types off the path.
    fn user_type_name(&self, t: DataType) -> String {
        self.user_name(&t.sql_name())
    }

    /// A name of schema `public`, with the schema when the search path lacks `public`.
    fn user_name(&self, name: &str) -> String {
        if crate::pg::settings::search_path(self.settings).contains(&"public") {
            name.to_string()
        } else {
            format!("public.{name}")
        }
    }

    /// `format_type(oid, typmod)`: the type's name, with its modifier when it has one.
    fn format_type(&self, oid: i64, typmod: i64) -> String {
        if let Some(t) = self.db.remembered_type(self.database, oid as u32) {
            return self.user_type_name(t);
        }
        if let Some(d) = self.db.remembered_domain(self.database, oid as u32) {
            return self.user_name(&d);
        }
        // An array's typmod is its element's.
        let array = DataType::from_oid(oid as u32).filter(|t| matches!(t, DataType::Array(_)));
        let oid = match array.and_then(DataType::element) {
            Some(e) => e.oid() as i64,
            None => oid,
        };
        let name = match DataType::from_oid(oid as u32) {
            Some(DataType::Varchar(_)) if typmod >= 4 => {
                DataType::Varchar(Some(typmod as u32 - 4)).sql_name()
            }
            Some(DataType::Char(_)) if typmod >= 4 => DataType::Char(typmod as u32 - 4).sql_name(),
            Some(DataType::Char(_)) => "bpchar".into(),
            Some(DataType::Interval(_)) if typmod >= 0 => {
                DataType::Interval(Some(typmod as u32)).sql_name()
            }
            Some(DataType::Timestamp(_)) if typmod >= 0 => {
                DataType::Timestamp(Some(typmod as u8)).sql_name()
            }
            Some(DataType::TimestampTz(_)) if typmod >= 0 => {
                DataType::TimestampTz(Some(typmod as u8)).sql_name()
            }
            Some(DataType::Time(_)) if typmod >= 0 => DataType::Time(Some(typmod as u8)).sql_name(),
            Some(DataType::Numeric(_)) if typmod >= 4 => {
                let m = typmod - 4;
                // The scale is 11 bits, sign-extended.
                let scale = (((m & 0x7ff) << 21) >> 21) as i32;
                DataType::Numeric(Some(((m >> 16) as u32, scale))).sql_name()
            }
            Some(t) => t.sql_name(),
            None => return pseudo_type_name(oid).unwrap_or("???").into(),
        };
        match array {
            Some(_) => format!("{name}[]"),
            None => name,
        }
    }

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
    fn notice(&self, notice: crate::session::Notice) {
        crate::session::raise_notice(self.notices, notice);
    }
    fn style(&self) -> crate::style::Style {
        self.style
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
            Func::StartTime => Value::TimestampTz(self.db.started),
            Func::KilnLastTxid => {
                match self.last_write.or_else(|| self.engine_session.last_txn_id()) {
                    Some(id) => Value::Text(id.to_string()),
                    None => Value::Null,
                }
            }
            Func::InetEnd(server, address) => match self.activity.addresses() {
                Some((client, local)) => {
                    let end = if server { local } else { client };
                    if address {
                        Value::Inet(crate::inet::Inet::from(end.ip()))
                    } else {
                        Value::Int(end.port().into())
                    }
                }
                None => Value::Null,
            },
            Func::TxidCurrent => {
                if let Some(id) = self.sequence_values.lock().transaction_id {
                    return Ok(Value::Int(id));
                }
                let wait = |c| acknowledge(self.db, self.activity, c).map(|_| ());
                self.activity.set_wait(Some(Wait::Durability));
                let next =
                    self.db.sequences.next(engine, &crate::sequence::transaction_ids(), &wait);
                self.activity.set_wait(None);
                let id = next?;
                self.sequence_values.lock().transaction_id = Some(id);
                Value::Int(id)
            }
            Func::LastVal => match self.sequence_values.lock().last {
                Some(v) => Value::Int(v),
                None => {
                    return Err(SqlError::new(
                        code::NOT_IN_PREREQUISITE_STATE,
                        "lastval is not yet defined in this session",
                    ))
                }
            },
            Func::KilnTxnStatus => Value::Text(engine.status(id_arg(&args[0])?).as_str().into()),
            Func::KilnClusterAddNode | Func::KilnClusterRemoveNode => {
                let admin = self.db.cluster_admin().ok_or_else(|| {
                    SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        "this server is not a node of a cluster",
                    )
                    .hint("Start kiln serve with --node-id, --raft-listen and --member.")
                })?;
                let id = match args[0] {
                    Value::Int(id) if id > 0 => id as u64,
                    _ => {
                        return Err(SqlError::new(
                            code::INVALID_PARAMETER_VALUE,
                            "a node id is a positive integer",
                        ))
                    }
                };
                let text = |i: usize| {
                    args.get(i).and_then(|v| v.to_text(DataType::Text)).unwrap_or_default()
                };
                let interrupted = || self.activity.check_interrupt().is_err();
                let done = if func == Func::KilnClusterAddNode {
                    let (raft, sql, site) = (text(1), text(2), text(3));
                    if raft.trim().is_empty() || sql.trim().is_empty() {
                        return Err(SqlError::new(
                            code::INVALID_PARAMETER_VALUE,
                            "a new node needs its Raft address and its SQL address",
                        ));
                    }
                    if !site.is_empty() {
                        crate::pg::settings::parse_level(
                            &format!("site:{site}"),
                            "kiln_cluster_add_node",
                        )?;
                    }
                    admin
                        .add_node(id, raft.trim(), sql.trim(), &site, &interrupted)
                        .map(|_| "added")
                } else {
                    admin.remove_node(id, &interrupted).map(|_| "removed")
                };
                match done {
                    Ok(done) => Value::Text(done.into()),
                    Err(crate::ClusterChangeError::NotLeader(at)) => {
                        let e = SqlError::new(
                            code::READ_ONLY_TXN,
                            "membership changes are made on the cluster's leader",
                        );
                        return Err(match at {
                            Some(at) => e.hint(format!("Connect to the leader at {at}.")),
                            None => e.hint("No leader is known right now; try again shortly."),
                        });
                    }
                    Err(crate::ClusterChangeError::Invalid(why)) => {
                        return Err(SqlError::new(code::INVALID_PARAMETER_VALUE, why))
                    }
                    Err(crate::ClusterChangeError::Failed(why)) => {
                        return Err(SqlError::new(
                            "55000",
                            format!("the membership change did not complete: {why}"),
                        )
                        .hint("SELECT * FROM kiln_cluster shows the members as they are now."))
                    }
                }
            }
            Func::KilnTxnLevels => {
                let levels = engine.levels_reached(id_arg(&args[0])?);
                Value::Text(levels.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(","))
            }
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
                // With a level, `durable` means it reached that level; `committed` that it
                // did not within the timeout (it may be durable at a lower one).
                let level = match args.get(2) {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(crate::pg::settings::parse_level(
                        &v.to_text(DataType::Text).unwrap_or_default(),
                        "kiln_wait",
                    )?),
                };
                if let Some(level) = &level {
                    self.db.check_level(level)?;
                }
                let deadline = std::time::Instant::now() + Duration::from_millis(ms);
                self.activity.set_wait(Some(Wait::Durability));
                let status = loop {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    let slice = left.min(WAIT_SLICE);
                    let waited = match &level {
                        None => engine.wait(id, slice),
                        Some(level) => {
                            engine.wait_level(id, slice, level).map(|(s, reached)| match s {
                                kiln_engine::TxnStatus::Durable if !reached => {
                                    kiln_engine::TxnStatus::Committed
                                }
                                s => s,
                            })
                        }
                    };
                    let status = match waited {
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
            Func::IsInRecovery => {
                // A cluster member that does not lead applies the leader's log, as a
                // PostgreSQL standby replays WAL; a standalone server takes writes.
                let s = engine.stats();
                Value::Bool(s.local_csn.is_some() && s.leading_term.is_none())
            }
            Func::CurrentSetting => {
                let Some(name) = args[0].to_text(DataType::Text) else {
                    return Ok(Value::Null);
                };
                let missing_ok = matches!(args.get(1), Some(Value::Bool(true)));
                match self.settings.get(&name.to_lowercase()) {
                    Some(v) => Value::Text(v.clone()),
                    None if missing_ok => Value::Null,
                    None => {
                        return Err(SqlError::new(
                            code::UNDEFINED_SETTING,
                            format!("unrecognized configuration parameter \"{name}\""),
                        ))
                    }
                }
            }
            Func::SetConfig => {
                // Checked and shown now, applied when the statement succeeds (a failed one
                // rolls its transaction's settings back in PostgreSQL too).
                use crate::pg::settings::{SetConfig, SettingRules};
                let text = |v: &Value| v.to_text(DataType::Text).unwrap_or_default();
                if args[0].is_null() {
                    return Err(SqlError::new("22004", "SET requires parameter name"));
                }
                let name = text(&args[0]).to_lowercase();
                let local = match &args[2] {
                    Value::Null => false,
                    Value::Bool(b) => *b,
                    other => crate::types::parse_bool(&text(other))?,
                };
                let rules = SettingRules {
                    db: self.db,
                    user: self.user,
                    settings: self.settings,
                    startup: self.startup,
                    datestyle: self.settings.get("datestyle").map_or("ISO, MDY", String::as_str),
                };
                let (call, value) = if args[1].is_null() {
                    // What RESET gives (which checks the name).
                    let default =
                        crate::pg::settings::setting_default(&self.db.config, self.startup, &name);
                    let value = rules.normalize(&name, &default)?;
                    (SetConfig::Reset { name, local }, value)
                } else {
                    let value = rules.normalize(&name, &text(&args[1]))?;
                    (SetConfig::Set { name, value: value.clone(), local }, value)
                };
                self.set_configs.lock().push(call);
                Value::Text(value)
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
            Func::Advisory(op, hold) => {
                let mut locks = self.advisory.lock();
                if op == AdvisoryOp::UnlockAll {
                    locks.unlock_all();
                    return Ok(Value::Text(String::new()));
                }
                let key = advisory_key(args)?;
                match op {
                    AdvisoryOp::Lock | AdvisoryOp::TryLock => {
                        let wait = op == AdvisoryOp::Lock;
                        if wait {
                            self.activity.set_wait(Some(Wait::AdvisoryLock));
                        }
                        let interrupt = self.activity.interrupt().clone();
                        let got = locks.lock(key, hold, wait, self.lock_timeout, &interrupt);
                        self.activity.set_wait(None);
                        let got = got?;
                        if wait {
                            Value::Text(String::new())
                        } else {
                            Value::Bool(got)
                        }
                    }
                    AdvisoryOp::Unlock => {
                        let unlocked = locks.unlock(key, hold.shared);
                        if !unlocked {
                            // As PostgreSQL warns, naming its lock modes.
                            let mode = if hold.shared { "ShareLock" } else { "ExclusiveLock" };
                            let message = format!("you don't own a lock of type {mode}");
                            crate::session::raise_notice(
                                self.notices,
                                crate::session::Notice {
                                    level: crate::parse::do_block::Level::Warning,
                                    fields: SqlError::new("01000", message),
                                },
                            );
                        }
                        Value::Bool(unlocked)
                    }
                    AdvisoryOp::UnlockAll => unreachable!("handled above"),
                }
            }
            Func::PgNotify => {
                let text = |v: &Value| match v {
                    Value::Null => String::new(),
                    v => v.to_text(DataType::Text).unwrap_or_default(),
                };
                self.notifies.lock().push(&self.db.listeners, text(&args[0]), text(&args[1]))?;
                Value::Text(String::new())
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

    fn sequence(&self, func: SeqFunc, seq: &Sequence, args: &[Value]) -> Result<Value> {
        let engine = &self.db.engine;
        let wait = |c| acknowledge(self.db, self.activity, c).map(|_| ());
        match func {
            SeqFunc::NextVal => {
                self.activity.set_wait(Some(Wait::Durability));
                let next = self.db.sequences.next(engine, seq, &wait);
                self.activity.set_wait(None);
                let v = next?;
                self.sequence_values.lock().handed(seq.key, v);
                Ok(Value::Int(v))
            }
            SeqFunc::CurrVal => match self.sequence_values.lock().values.get(&seq.key) {
                Some(v) => Ok(Value::Int(*v)),
                None => Err(SqlError::new(
                    code::NOT_IN_PREREQUISITE_STATE,
                    format!(
                        "currval of sequence \"{}\" is not yet defined in this session",
                        seq.name
                    ),
                )),
            },
            SeqFunc::SetVal => {
                let value = match args.first() {
                    Some(Value::Int(v)) => *v,
                    _ => return Ok(Value::Null),
                };
                let called = match args.get(1) {
                    None => true,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => return Ok(Value::Null),
                };
                self.activity.set_wait(Some(Wait::Durability));
                let set = self.db.sequences.set(engine, seq, value, called, &wait);
                self.activity.set_wait(None);
                set?;
                if called {
                    // currval reports the value set, as in PostgreSQL (lastval does not move).
                    self.sequence_values.lock().values.insert(seq.key, value);
                }
                Ok(Value::Int(value))
            }
            SeqFunc::LastValue => Ok(Value::Int(self.db.sequences.state(engine, seq)?.0)),
            SeqFunc::IsCalled => Ok(Value::Bool(self.db.sequences.state(engine, seq)?.1)),
        }
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
            CatalogFunc::CurrentSchemas => {
                // current_schemas(include_implicit): pg_catalog is searched first unless
                // the path names it.
                let implicit = matches!(args.first(), Some(Value::Bool(true)));
                let mut schemas = Vec::new();
                let path = crate::pg::settings::search_path(self.settings);
                if let Some(temp) = crate::bind::search::temp_schema().filter(|_| implicit) {
                    schemas.push(Value::Text(temp));
                }
                if implicit && !path.contains(&"pg_catalog") {
                    schemas.push(Value::Text("pg_catalog".into()));
                }
                let created = crate::bind::search::current_schemas();
                if created.is_empty() {
                    schemas.extend(path.iter().map(|s| Value::Text(s.to_string())));
                } else {
                    // A path naming created schemas: those that exist, in order.
                    schemas.extend(created.into_iter().map(Value::Text));
                }
                Value::Array(schemas)
            }
            CatalogFunc::StatisticsColumns | CatalogFunc::Description => Value::Null,
            CatalogFunc::GetExpr => args.first().cloned().unwrap_or(Value::Null),
            // Remembered with the relations (`pg::system`): a partitioned table's key under
            // its OID, a partition's constraint under its OID negated.
            CatalogFunc::PartKeyDef | CatalogFunc::PartitionConstraintDef => {
                let sign = if func == CatalogFunc::PartKeyDef { 1 } else { -1 };
                arg_int(0)
                    .and_then(|oid| self.db.definitions.lock().get(&(sign * oid)).cloned())
                    .map_or(Value::Null, Value::Text)
            }
            CatalogFunc::FormatType => match arg_int(0) {
                Some(oid) => Value::Text(self.format_type(oid, arg_int(1).unwrap_or(-1))),
                None => Value::Null,
            },
            // oidvectortypes(proargtypes): the types' names, comma-separated.
            CatalogFunc::OidVectorTypes => match args.first() {
                Some(Value::Array(oids)) => Value::Text(
                    oids.iter()
                        .filter_map(|o| match o {
                            Value::Int(o) => Some(self.format_type(*o, -1)),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
                _ => Value::Null,
            },
            CatalogFunc::RegTypeName => match arg_int(0) {
                Some(o) => Value::Text(match DataType::from_oid(o as u32) {
                    Some(t) => t.sql_name(),
                    None if pseudo_type_name(o).is_some() => {
                        pseudo_type_name(o).unwrap_or_default().to_string()
                    }
                    None => match self.db.remembered_domain(self.database, o as u32) {
                        Some(d) => self.user_name(&d),
                        None => self
                            .db
                            .remembered_type(self.database, o as u32)
                            .map_or_else(|| o.to_string(), |t| self.user_type_name(t)),
                    },
                }),
                None => Value::Null,
            },
            // The binder gives the relations the transaction sees as arrays (OIDs, names).
            CatalogFunc::RegClassName => match arg_int(0) {
                Some(o) => match crate::bind::reg::system_relation_name(o) {
                    Some(n) => Value::Text(n.to_string()),
                    None => {
                        let (oids, names) = relation_directory(args);
                        let at = oids.iter().position(|x| *x == Value::Int(o));
                        at.and_then(|i| names.get(i).cloned())
                            .unwrap_or_else(|| Value::Text(o.to_string()))
                    }
                },
                None => Value::Null,
            },
            // The binder gives the owned sequences as arrays (tables, columns, sequences).
            CatalogFunc::SerialSequence => {
                let (Some(Value::Text(t)), Some(Value::Text(c))) = (args.first(), args.get(1))
                else {
                    return Ok(Value::Null);
                };
                let Ok(table) = crate::sequence::parse_name(t, Some(self.database)) else {
                    return Ok(Value::Null);
                };
                let list = |i: usize| match args.get(i) {
                    Some(Value::Array(items)) => items.as_slice(),
                    _ => &[],
                };
                let (tables, columns, sequences) = (list(2), list(3), list(4));
                let at = (0..tables.len()).find(|&i| {
                    matches!(&tables[i], Value::Text(t) if *t == table)
                        && matches!(columns.get(i), Some(Value::Text(x)) if x == c)
                });
                at.and_then(|i| sequences.get(i).cloned()).unwrap_or(Value::Null)
            }
            CatalogFunc::RegTypeOid(missing_ok) => {
                let Some(Value::Text(name)) = args.first() else { return Ok(Value::Null) };
                let named = crate::bind::reg::type_by_name(name)
                    .or_else(|| crate::bind::reg::builtin_type_named(name))
                    .or_else(|| self.db.remembered_type_named(self.database, name));
                let named = named
                    .map(|t| t.oid())
                    .or_else(|| self.db.remembered_domain_named(self.database, name));
                match named {
                    Some(o) => Value::Int(o.into()),
                    None if missing_ok => Value::Null,
                    None => return Err(crate::bind::reg::undefined_type(name)),
                }
            }
            CatalogFunc::RegClassOid(missing_ok) => {
                let Some(Value::Text(name)) = args.first() else { return Ok(Value::Null) };
                if let Ok(n) = name.trim().parse::<i64>() {
                    return Ok(Value::Int(n));
                }
                if let Some(o) = crate::bind::reg::system_relation_named(name) {
                    return Ok(Value::Int(o));
                }
                let wanted = match crate::sequence::parse_name(name, Some(self.database)) {
                    Ok(wanted) => wanted,
                    // to_regclass: a schema that does not exist holds no relation.
                    Err(e) if missing_ok && e.code == code::UNDEFINED_SCHEMA => {
                        return Ok(Value::Null)
                    }
                    Err(e) => return Err(e),
                };
                let (oids, names) = relation_directory(args);
                let at = names.iter().position(|n| *n == Value::Text(wanted.clone()));
                let found = match at.and_then(|i| oids.get(i)) {
                    Some(Value::Int(o)) => Some(*o),
                    _ => None,
                };
                match found {
                    Some(o) => Value::Int(o),
                    None if missing_ok => Value::Null,
                    None => return Err(crate::bind::reg::undefined_relation(name)),
                }
            }
            // pg_get_indexdef(oid, n, pretty) with n > 0: the index's nth column.
            CatalogFunc::IndexDef if arg_int(1).is_some_and(|n| n > 0) => {
                let (Some(oid), Some(n)) = (arg_int(0), arg_int(1)) else {
                    return Ok(Value::Null);
                };
                let def = self.db.definitions.lock().get(&oid).cloned();
                let column = def.and_then(|d| index_parts(&d).into_iter().nth(n as usize - 1));
                column.map_or(Value::Text(String::new()), Value::Text)
            }
            // A function made with CREATE FUNCTION has its definition remembered, which
            // names its arguments and result as these functions do.
            CatalogFunc::FunctionResult
            | CatalogFunc::FunctionArguments
            | CatalogFunc::FunctionIdentityArguments => {
                let def = arg_int(0).and_then(|oid| self.db.definitions.lock().get(&oid).cloned());
                match def.as_deref().and_then(function_header) {
                    Some((args, result)) => match func {
                        CatalogFunc::FunctionResult => result.map_or(Value::Null, Value::Text),
                        CatalogFunc::FunctionArguments => Value::Text(args),
                        _ => {
                            let (parts, _) = part_list(&format!("{args})"));
                            let parts: Vec<&str> = parts
                                .iter()
                                .filter(|p| !p.is_empty())
                                .map(|p| p.split(" DEFAULT ").next().unwrap_or(p))
                                .collect();
                            Value::Text(parts.join(", "))
                        }
                    },
                    None => Value::Null,
                }
            }
            CatalogFunc::IndexDef
            | CatalogFunc::ConstraintDef
            | CatalogFunc::ViewDef
            | CatalogFunc::TriggerDef
            | CatalogFunc::FunctionDef => {
                let def = arg_int(0).and_then(|oid| self.db.definitions.lock().get(&oid).cloned());
                if func == CatalogFunc::FunctionDef {
                    if let Some(name) = def.as_deref().and_then(aggregate_name) {
                        return Err(SqlError::new(
                            code::WRONG_OBJECT_TYPE,
                            format!("\"{name}\" is an aggregate function"),
                        ));
                    }
                }
                // pg_get_indexdef(oid, 0, true), as psql's \d asks: the table not qualified
                // (public is on the search path), a partial index's condition without its
                // outer parentheses.
                let pretty = (func == CatalogFunc::IndexDef
                    && args.get(2) == Some(&Value::Bool(true)))
                    || (func == CatalogFunc::TriggerDef && args.get(1) == Some(&Value::Bool(true)));
                // pg_get_constraintdef(oid) without `pretty`: a CHECK condition parenthesized
                // as PostgreSQL's deparser writes it (`CHECK ((a > 0))`), which ORMs read.
                let def = match def {
                    Some(d)
                        if func == CatalogFunc::ConstraintDef
                            && args.get(1) != Some(&Value::Bool(true)) =>
                    {
                        Some(crate::pg::defaults::check_def_parenthesized(&d))
                    }
                    d => d,
                };
                match def.map(|d| if pretty { d.replacen(" ON public.", " ON ", 1) } else { d }) {
                    Some(d) if pretty => Value::Text(match d.split_once(" WHERE (") {
                        Some((head, cond)) if cond.ends_with(')') => {
                            format!("{head} WHERE {}", &cond[..cond.len() - 1])
                        }
                        _ => d,
                    }),
                    Some(d) => Value::Text(d),
                    None => Value::Null,
                }
            }
        })
    }
}

/// The name of the aggregate a definition of `routines::function_definition` is of (`None`:
/// it is a function's or a procedure's): an aggregate's is written in LANGUAGE internal,
/// which no other function of Kiln's has.
fn aggregate_name(def: &str) -> Option<String> {
    if !def.contains("\n LANGUAGE internal\n") {
        return None;
    }
    let rest = def.strip_prefix("CREATE OR REPLACE FUNCTION public.")?;
    let name = &rest[..rest.find("(")?];
    Some(match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => name.to_string(),
    })
}

/// The argument list and result of a function definition as `routines::function_definition`
/// writes it (`CREATE OR REPLACE FUNCTION public.name(args)\n RETURNS type\n …`).
fn function_header(def: &str) -> Option<(String, Option<String>)> {
    let rest = def
        .strip_prefix("CREATE OR REPLACE FUNCTION public.")
        .or_else(|| def.strip_prefix("CREATE OR REPLACE PROCEDURE public."))?;
    let (first, rest) = rest.split_once('\n')?;
    // After the name, quoted ("a""b") or not.
    let open = if first.starts_with('"') {
        let mut i = 1;
        let bytes = first.as_bytes();
        while i < bytes.len() {
            if bytes[i] == b'"' {
                if bytes.get(i + 1) == Some(&b'"') {
                    i += 2;
                    continue;
                }
                break;
            }
            i += 1;
        }
        i + 1
    } else {
        first.find('(')?
    };
    let args = first.get(open + 1..first.len().checked_sub(1)?)?.to_string();
    let result =
        rest.strip_prefix(" RETURNS ").and_then(|r| r.split('\n').next()).map(str::to_string);
    Some((args, result))
}

/// The name of a pseudo-type a catalog row may name (a trigger function's result).
fn pseudo_type_name(oid: i64) -> Option<&'static str> {
    match oid {
        2249 => Some("record"),
        2278 => Some("void"),
        2279 => Some("trigger"),
        _ => None,
    }
}

/// The relations a regclass conversion searches, as its binder gave them after the name or
/// OID: (OIDs, names), in the same order.
fn relation_directory(args: &[Value]) -> (&[Value], &[Value]) {
    match (args.get(1), args.get(2)) {
        (Some(Value::Array(oids)), Some(Value::Array(names))) => (oids, names),
        _ => (&[], &[]),
    }
}

/// The key parts of an index definition (`CREATE INDEX … USING btree (a, lower(b)) WHERE …`):
/// the list after `USING btree`, split at its top-level commas (string literals and nested
/// parentheses kept whole).
fn index_parts(def: &str) -> Vec<String> {
    // After `USING <method> (`.
    let Some(using) = def.find(" USING ") else { return vec![] };
    let Some(open) = def[using..].find(" (").map(|k| using + k + 2) else { return vec![] };
    let (mut parts, used) = part_list(&def[open..]);
    // Its INCLUDE columns follow, numbered after the key parts.
    let rest = &def[open + used..];
    if let Some(include) = rest.strip_prefix(" INCLUDE (") {
        parts.extend(part_list(include).0);
    }
    parts
}

/// A parenthesized list's parts (the text after its opening parenthesis), and the length
/// of the text through its closing one.
fn part_list(list: &str) -> (Vec<String>, usize) {
    let (mut parts, mut current, mut depth, mut quoted) = (Vec::new(), String::new(), 0, false);
    let mut used = list.len();
    for (i, c) in list.char_indices() {
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted && depth == 0 => {
                used = i + 1;
                break;
            }
            ')' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                parts.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current.trim().to_string());
    // An expression part is written in parentheses of its own (`((n * 2))`); alone, without.
    for part in &mut parts {
        if part.starts_with('(') && part.ends_with(')') {
            *part = part[1..part.len() - 1].to_string();
        }
    }
    (parts, used)
}

#[cfg(test)]
mod tests {
    #[test]
    fn index_parts_split_at_top_level_commas() {
        let def = "CREATE INDEX i ON public.t USING btree (((n * 2)), lower(a), b, replace(c, ',', ')')) WHERE (x > 1)";
        assert_eq!(super::index_parts(def), ["(n * 2)", "lower(a)", "b", "replace(c, ',', ')')"]);
        assert_eq!(
            super::index_parts("CREATE UNIQUE INDEX k ON public.t USING btree (id)"),
            ["id"]
        );
        assert_eq!(
            super::index_parts(
                "CREATE UNIQUE INDEX k ON public.t USING btree (a, (b + 1)) INCLUDE (c, d) NULLS NOT DISTINCT WHERE (a > 0)"
            ),
            ["a", "b + 1", "c", "d"]
        );
    }
}
