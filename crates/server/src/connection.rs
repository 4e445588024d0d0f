//! One client connection: startup and authentication, then the simple and extended query
//! protocols, COPY, notifications and cancellation, on pgwire's message codec.
//!
//! Each connection runs on its own thread with a single-threaded tokio runtime: a statement
//! (and a safe commit waiting for its durability point) blocks only its own connection, as a
//! PostgreSQL backend process would, and the engine's synchronous API is called directly.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::{FutureExt, SinkExt, StreamExt};
use kiln_sql::session::{CopyFormat, CopyOutData};
use kiln_sql::{code, Output, Prepared, Session, SqlError, Value};
use pgwire::api::auth::{
    save_startup_parameters_to_metadata, ServerParameterProvider, StartupHandler,
};
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::PgWireError;
use pgwire::messages::copy::{CopyData, CopyDone, CopyInResponse, CopyOutResponse};
use pgwire::messages::data::{
    DataRow, FieldDescription, NoData, ParameterDescription, RowDescription,
};
use pgwire::messages::extendedquery::{
    BindComplete, CloseComplete, ParseComplete, PortalSuspended,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ErrorResponse, NoticeResponse, NotificationResponse,
    ReadyForQuery, TransactionStatus,
};
use pgwire::messages::startup::{Authentication, BackendKeyData, ParameterStatus, SecretKey};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{negotiate_tls, MaybeTls};
use tokio::net::TcpStream;
use tokio_util::codec::Framed;
use tracing::{debug, info, warn};

use crate::wire::{decode_param, encode_value};
use crate::Shared;

type Socket = Framed<MaybeTls, LimitedCodec>;

pub(crate) use crate::codec::{LimitedCodec, MESSAGE_BYTES_MIN_LIMIT};

/// Parameters reported to the client at startup and whenever they change.
const REPORTED: &[(&str, &str)] = &[
    ("server_version", "server_version"),
    ("server_encoding", "server_encoding"),
    ("client_encoding", "client_encoding"),
    ("DateStyle", "datestyle"),
    ("integer_datetimes", "integer_datetimes"),
    ("standard_conforming_strings", "standard_conforming_strings"),
    ("TimeZone", "timezone"),
    ("IntervalStyle", "intervalstyle"),
    ("application_name", "application_name"),
    ("is_superuser", "is_superuser"),
    ("default_transaction_read_only", "default_transaction_read_only"),
    ("in_hot_standby", "in_hot_standby"),
];

/// Server parameters for pgwire's SCRAM startup handler.
pub(crate) struct KilnParameters;

impl ServerParameterProvider for KilnParameters {
    fn server_parameters<C: ClientInfo>(&self, client: &C) -> Option<HashMap<String, String>> {
        let meta = client.metadata();
        let mut out = HashMap::new();
        for (name, _) in REPORTED {
            out.insert(name.to_string(), default_reported(name, meta));
        }
        out.insert("session_authorization".into(), meta.get("user").cloned().unwrap_or_default());
        Some(out)
    }
}

fn default_reported(name: &str, meta: &HashMap<String, String>) -> String {
    match name {
        "server_version" => kiln_sql::SERVER_VERSION.into(),
        "server_encoding" | "client_encoding" => "UTF8".into(),
        "DateStyle" => "ISO, MDY".into(),
        "integer_datetimes" | "standard_conforming_strings" | "is_superuser" => "on".into(),
        "TimeZone" => "UTC".into(),
        "IntervalStyle" => "postgres".into(),
        "application_name" => meta.get("application_name").cloned().unwrap_or_default(),
        _ => "off".into(),
    }
}

fn error_response(e: &SqlError, severity: &str) -> PgWireBackendMessage {
    PgWireBackendMessage::ErrorResponse(ErrorResponse::new(error_fields(e, severity)))
}

/// The fields of an ErrorResponse or NoticeResponse.
fn error_fields(e: &SqlError, severity: &str) -> Vec<(u8, String)> {
    let mut fields = vec![
        (b'S', severity.to_string()),
        (b'V', severity.to_string()),
        (b'C', e.code.to_string()),
        (b'M', e.message.clone()),
    ];
    if let Some(d) = &e.detail {
        fields.push((b'D', d.clone()));
    }
    if let Some(h) = &e.hint {
        fields.push((b'H', h.clone()));
    }
    if let Some(p) = e.position {
        fields.push((b'P', p.to_string()));
    }
    if let Some(w) = e.context_text() {
        fields.push((b'W', w.to_string()));
    }
    if let Some(o) = &e.object {
        let named = [
            (b's', &o.schema),
            (b't', &o.table),
            (b'c', &o.column),
            (b'd', &o.datatype),
            (b'n', &o.constraint),
        ];
        fields.extend(named.into_iter().filter_map(|(k, v)| v.clone().map(|v| (k, v))));
    }
    fields
}

fn status_of(b: u8) -> TransactionStatus {
    match b {
        b'T' => TransactionStatus::Transaction,
        b'E' => TransactionStatus::Error,
        _ => TransactionStatus::Idle,
    }
}

/// A bound portal: the statement, its parameters, the result formats, and rows left over by
/// an Execute with a row limit.
struct Portal {
    prepared: Arc<Prepared>,
    params: Vec<Value>,
    formats: Vec<i16>,
    pending: Option<(Vec<Vec<Value>>, String)>,
    /// A named portal of a query: the session keeps it as a cursor of that name (FETCH and
    /// MOVE in SQL reach it), and Execute reads its rows from there.
    in_session: bool,
}

struct Conn {
    shared: Arc<Shared>,
    socket: Socket,
    user: String,
    session: Session,
    pid: i32,
    portals: HashMap<String, Portal>,
    /// After an error in the extended protocol, messages are skipped until Sync.
    skip_to_sync: bool,
    copy_in: bool,
    /// The COPY was started by Execute (extended protocol): after CopyDone the client sends
    /// Sync, which answers ReadyForQuery.
    copy_extended: bool,
    copy_bytes: usize,
    /// The reader of binary COPY FROM STDIN data, when the COPY is binary.
    copy_binary: Option<crate::copy_binary::BinaryCopyIn>,
    reported: HashMap<&'static str, String>,
    notify: Arc<tokio::sync::Notify>,
    /// A handle on the socket for the watchdog that notices a client gone mid-statement.
    watch: Option<Arc<std::net::TcpStream>>,
}

/// RowDescription of `columns`: each with the table OID and column number it shows unchanged
/// (0 and 0 for computed columns), its type, and its format from `formats`.
fn row_description(
    columns: &[(String, kiln_sql::DataType)],
    origins: &[Option<(u32, i16)>],
    formats: &[i16],
) -> PgWireBackendMessage {
    let fields = columns
        .iter()
        .enumerate()
        .map(|(i, (name, ty))| {
            let (table, column) = origins.get(i).copied().flatten().unwrap_or((0, 0));
            FieldDescription::new(
                name.clone(),
                table as i32,
                column,
                ty.oid(),
                ty.size(),
                ty.modifier(),
                format_for(formats, i),
            )
        })
        .collect();
    PgWireBackendMessage::RowDescription(RowDescription::new(fields))
}

fn format_for(formats: &[i16], i: usize) -> i16 {
    match formats.len() {
        0 => 0,
        1 => formats[0],
        _ => formats.get(i).copied().unwrap_or(0),
    }
}

/// Runs one connection to completion (on the calling thread's runtime).
pub(crate) async fn serve(
    tcp: TcpStream,
    shared: Arc<Shared>,
    _slot: crate::Slot,
    watch: Option<Arc<std::net::TcpStream>>,
) {
    let peer = tcp.peer_addr().ok();
    let local = tcp.local_addr().ok();
    let Ok(Some(mut socket)) = negotiate_tls::<()>(tcp, shared.tls.clone()).await else {
        return;
    };
    // Startup: the StartupMessage (or a CancelRequest on its own connection).
    let first = match tokio::time::timeout(Duration::from_secs(60), socket.next()).await {
        Ok(Some(Ok(m))) => m,
        _ => return,
    };
    let startup = match first {
        PgWireFrontendMessage::CancelRequest(c) => {
            shared.cancel(c.pid, &c.secret_key);
            return;
        }
        PgWireFrontendMessage::Startup(s) => s,
        _ => return,
    };
    if startup.protocol_number_major != 3 {
        let e = SqlError::new(
            code::PROTOCOL_VIOLATION,
            format!(
                "unsupported frontend protocol {}.{}",
                startup.protocol_number_major, startup.protocol_number_minor
            ),
        );
        let _ = socket.send(error_response(&e, "FATAL")).await;
        return;
    }
    save_startup_parameters_to_metadata(&mut socket, &startup);
    let fatal = |e: SqlError| error_response(&e, "FATAL");
    if let Some(peer) = peer {
        if !peer.ip().is_loopback() && !shared.config.auth.allow_remote {
            let e = SqlError::new(code::INVALID_AUTHORIZATION, format!("connections from {} are not allowed", peer.ip()))
                .hint("Set auth.allow_remote = true (with scram-sha-256 authentication) to accept remote clients.");
            let _ = socket.send(fatal(e)).await;
            return;
        }
    }
    let meta = socket.metadata().clone();
    let user = meta.get("user").cloned().unwrap_or_else(|| "kiln".into());
    let database = meta.get("database").cloned().unwrap_or_else(|| user.clone());
    // Authentication.
    let (pid, secret) = shared.new_backend_key();
    match shared.config.auth.method {
        crate::config::AuthMethod::Trust => {
            let _ = socket.feed(PgWireBackendMessage::Authentication(Authentication::Ok)).await;
        }
        crate::config::AuthMethod::ScramSha256 => {
            let handler = shared.scram_handler();
            socket.set_state(PgWireConnectionState::AuthenticationInProgress);
            if let Err(e) =
                handler.on_startup(&mut socket, PgWireFrontendMessage::Startup(startup)).await
            {
                let _ = socket.send(fatal(pg_error(e))).await;
                return;
            }
            loop {
                if matches!(socket.state(), PgWireConnectionState::ReadyForQuery) {
                    break;
                }
                let msg = match tokio::time::timeout(Duration::from_secs(60), socket.next()).await {
                    Ok(Some(Ok(m))) => m,
                    _ => return,
                };
                if let Err(e) = handler.on_startup(&mut socket, msg).await {
                    let err = SqlError::new(
                        code::INVALID_PASSWORD,
                        format!("password authentication failed for user \"{user}\""),
                    );
                    debug!(error = %e, "authentication failed");
                    let _ = socket.send(fatal(err)).await;
                    return;
                }
            }
        }
    }
    let mut session = match shared.db.session(&user, &database, pid) {
        Ok(s) => s,
        Err(e) => {
            let _ = socket.send(fatal(e)).await;
            return;
        }
    };
    if let (Some(peer), Some(local)) = (peer, local) {
        session.set_addresses(peer, local);
    }
    // Startup parameters and `options` (-c name=value).
    for (k, v) in &meta {
        let result = match k.as_str() {
            "options" => apply_options(&mut session, v),
            "user" | "database" | "replication" => Ok(()),
            name => session.set_startup_parameter(name, v).or(Ok(())),
        };
        if let Err(e) = result {
            let _ = socket.send(fatal(e)).await;
            return;
        }
    }
    let notify = Arc::new(tokio::sync::Notify::new());
    let n = notify.clone();
    session.set_notification_waker(Box::new(move || n.notify_one()));
    let interrupt = session.interrupt_handle();
    shared.register_cancel(pid, secret, interrupt.clone());
    let scram_key = socket.pid_and_secret_key();
    socket.set_state(PgWireConnectionState::ReadyForQuery);
    let max_bytes = MESSAGE_BYTES_MIN_LIMIT.max(shared.config.statement_bytes_max + (1 << 20));
    let socket = socket.map_codec(|inner| LimitedCodec { inner, max_bytes });
    let mut conn = Conn {
        shared: shared.clone(),
        socket,
        user: user.clone(),
        session,
        pid,
        portals: HashMap::new(),
        skip_to_sync: false,
        copy_in: false,
        copy_extended: false,
        copy_bytes: 0,
        copy_binary: None,
        reported: HashMap::new(),
        notify,
        watch,
    };
    // Authentication was ok (trust); report parameters, the cancel key, and ready.
    if shared.config.auth.method == crate::config::AuthMethod::Trust {
        let _ = conn.report_parameters(true).await;
        let _ = conn
            .socket
            .feed(PgWireBackendMessage::BackendKeyData(BackendKeyData::new(
                pid,
                SecretKey::I32(secret),
            )))
            .await;
    } else {
        // pgwire's handler already sent the parameters; remember what it reported.
        for (name, setting) in REPORTED {
            conn.reported.insert(name, conn.current(setting));
        }
        let (hpid, hsecret) = scram_key;
        shared.register_cancel_key(hpid, hsecret, interrupt.clone());
    }
    // pgwire's SCRAM handler already sent ReadyForQuery; with trust it is ours to send.
    let ready = if shared.config.auth.method == crate::config::AuthMethod::Trust {
        conn.ready().await
    } else {
        conn.socket.flush().await
    };
    if ready.is_err() {
        conn.session.abort();
        shared.unregister_cancel(pid);
        return;
    }
    info!(pid, user = %user, database = %database, "connection started");
    let result = conn.run().await;
    if let Err(e) = result {
        debug!(pid, error = %e, "connection ended with an error");
    }
    // A connection that drops mid-transaction rolls it back.
    conn.session.abort();
    shared.unregister_cancel(pid);
    info!(pid, "connection ended");
}

/// The text of a panic's payload.
fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic".to_string()
    }
}

/// Answers a connection over the limit: a cancel request is served (it needs no slot), a
/// startup gets 53300.
pub(crate) async fn reject(tcp: TcpStream, shared: &Shared) {
    let answer = async {
        let Ok(Some(mut socket)) = negotiate_tls::<()>(tcp, shared.tls.clone()).await else {
            return;
        };
        match socket.next().await {
            Some(Ok(PgWireFrontendMessage::CancelRequest(c))) => {
                shared.cancel(c.pid, &c.secret_key)
            }
            Some(Ok(PgWireFrontendMessage::Startup(_))) => {
                let e =
                    SqlError::new(code::TOO_MANY_CONNECTIONS, "sorry, too many clients already")
                        .detail(format!("max_connections is {}", shared.config.max_connections));
                let _ = socket.send(error_response(&e, "FATAL")).await;
            }
            _ => {}
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), answer).await;
}

fn pg_error(e: PgWireError) -> SqlError {
    SqlError::new(code::PROTOCOL_VIOLATION, e.to_string())
}

fn apply_options(session: &mut Session, options: &str) -> Result<(), SqlError> {
    // `-c name=value` pairs, also `--name=value`; backslash escapes spaces.
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    let mut i = 0;
    while i < words.len() {
        let pair = if words[i] == "-c" {
            i += 1;
            words.get(i).cloned()
        } else if let Some(rest) = words[i].strip_prefix("-c") {
            Some(rest.to_string())
        } else {
            words[i].strip_prefix("--").map(str::to_string)
        };
        i += 1;
        let Some(pair) = pair else { continue };
        let Some((name, value)) = pair.split_once('=') else {
            return Err(SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                format!("invalid command-line argument for server process: {pair}"),
            ));
        };
        session.set_startup_parameter(&name.replace('-', "_"), value)?;
    }
    Ok(())
}

impl Conn {
    fn current(&self, setting: &str) -> String {
        self.session.setting(setting).unwrap_or_else(|| {
            if setting == "in_hot_standby" {
                "off".into()
            } else {
                String::new()
            }
        })
    }

    async fn report_parameters(&mut self, all: bool) -> std::io::Result<()> {
        for (name, setting) in REPORTED {
            let value = match *name {
                "DateStyle" | "TimeZone" | "IntervalStyle" if self.current(setting).is_empty() => {
                    default_reported(name, &HashMap::new())
                }
                _ => self.current(setting),
            };
            if all || self.reported.get(name) != Some(&value) {
                self.socket
                    .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                        name.to_string(),
                        value.clone(),
                    )))
                    .await?;
                self.reported.insert(name, value);
            }
        }
        if all {
            let user = self.user.clone();
            self.socket
                .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                    "session_authorization".into(),
                    user,
                )))
                .await?;
        }
        Ok(())
    }

    async fn ready(&mut self) -> std::io::Result<()> {
        self.send_notices().await?;
        self.report_parameters(false).await?;
        self.deliver_notifications().await?;
        let status = status_of(self.session.transaction_status());
        self.socket.feed(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(status))).await?;
        self.socket.flush().await
    }

    async fn deliver_notifications(&mut self) -> std::io::Result<bool> {
        let notes = self.session.take_notifications();
        let any = !notes.is_empty();
        for n in notes {
            self.socket
                .feed(PgWireBackendMessage::NotificationResponse(NotificationResponse::new(
                    n.sender.unwrap_or(self.pid),
                    n.channel,
                    n.payload,
                )))
                .await?;
        }
        Ok(any)
    }

    async fn run(&mut self) -> std::io::Result<()> {
        let mut shutdown = self.shared.shutdown.subscribe();
        loop {
            let idle_timeout = match self.session.transaction_status() {
                b'T' | b'E' => self
                    .session
                    .setting_ms("idle_in_transaction_session_timeout")
                    .filter(|v| *v > 0),
                _ => None,
            };
            let idle = async {
                match idle_timeout {
                    Some(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
                    None => std::future::pending().await,
                }
            };
            let notified = self.notify.clone();
            tokio::select! {
                msg = self.socket.next() => {
                    let msg = match msg {
                        None => return Ok(()),
                        Some(Ok(msg)) => msg,
                        Some(Err(e)) => {
                            // A message the codec cannot decode: the stream cannot be resynced.
                            let e = SqlError::new(code::PROTOCOL_VIOLATION, format!("invalid message: {e}"));
                            let _ = self.socket.send(error_response(&e, "FATAL")).await;
                            return Ok(());
                        }
                    };
                    if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
                        return Ok(());
                    }
                    // A panic is a bug in Kiln, not the client's fault: it ends this connection
                    // alone. Unwinding drops the session, which rolls back its transaction and
                    // releases its row locks; every other session carries on.
                    let handled = std::panic::AssertUnwindSafe(self.handle(msg)).catch_unwind().await;
                    match handled {
                        Ok(result) => {
                            result?;
                            if self.session.terminating() {
                                return self.terminated().await;
                            }
                        }
                        Err(panic) => {
                            let what = panic_message(&panic);
                            tracing::error!(pid = self.pid, panic = %what, "internal error: the connection is closed");
                            let e = SqlError::new(code::INTERNAL, format!("internal error: {what}"))
                                .hint("This is a bug in Kiln: the connection was closed and its transaction rolled back. Please report it with the statement that caused it.");
                            let _ = self.socket.send(error_response(&e, "FATAL")).await;
                            return Ok(());
                        }
                    }
                }
                _ = notified.notified() => {
                    if self.session.terminating() {
                        return self.terminated().await;
                    }
                    // Asynchronous notifications go out while the session is idle.
                    if !self.skip_to_sync && !self.copy_in && self.deliver_notifications().await? {
                        self.socket.flush().await?;
                    }
                }
                _ = idle => {
                    let e = SqlError::new(code::IDLE_IN_TXN_TIMEOUT, "terminating connection due to idle-in-transaction timeout");
                    self.socket.send(error_response(&e, "FATAL")).await?;
                    return Ok(());
                }
                _ = shutdown.changed() => {
                    let e = SqlError::new(code::ADMIN_SHUTDOWN, "terminating connection due to administrator command");
                    self.socket.send(error_response(&e, "FATAL")).await?;
                    return Ok(());
                }
            }
        }
    }

    /// pg_terminate_backend or shutdown ended this session: 57P01, then the connection closes.
    async fn terminated(&mut self) -> std::io::Result<()> {
        let e = SqlError::new(
            code::ADMIN_SHUTDOWN,
            "terminating connection due to administrator command",
        );
        self.socket.send(error_response(&e, "FATAL")).await
    }

    async fn send_error(&mut self, e: &SqlError) -> std::io::Result<()> {
        self.send_notices().await?;
        self.socket.feed(error_response(e, "ERROR")).await
    }

    /// Sends the notices the session raised (RAISE NOTICE, skipped IF EXISTS, …).
    async fn send_notices(&mut self) -> std::io::Result<()> {
        for n in self.session.take_notices() {
            let fields = error_fields(&n.fields, n.severity());
            self.socket
                .feed(PgWireBackendMessage::NoticeResponse(NoticeResponse::new(fields)))
                .await?;
        }
        Ok(())
    }

    async fn handle(&mut self, msg: PgWireFrontendMessage) -> std::io::Result<()> {
        use PgWireFrontendMessage as F;
        if self.copy_in {
            return self.handle_copy(msg).await;
        }
        if self.skip_to_sync {
            if let F::Sync(_) = msg {
                self.skip_to_sync = false;
                return self.ready().await;
            }
            return Ok(());
        }
        match msg {
            F::Query(q) => {
                self.portals.remove("");
                self.session.close_prepared("");
                let timer = self.shared.start_statement_timer(&self.session, self.watch.as_ref());
                let (outputs, error) = self.session.simple_query(&q.query);
                drop(timer);
                for o in outputs {
                    self.send_output(o, &[], None).await?;
                }
                if let Some(e) = error {
                    self.send_error(&e).await?;
                }
                if !self.copy_in {
                    self.ready().await?;
                } else {
                    self.socket.flush().await?;
                }
            }
            F::Parse(p) => {
                let name = p.name.clone().unwrap_or_default();
                let mut types = Vec::with_capacity(p.type_oids.len());
                for oid in &p.type_oids {
                    match self.session.type_of_oid(*oid) {
                        Err(e) => return self.extended_error(e).await,
                        Ok(Some(t)) => types.push(t),
                        Ok(None) => {
                            return self
                                .extended_error(SqlError::unsupported(format!(
                                    "parameters of type OID {oid}"
                                )))
                                .await
                        }
                    }
                }
                match self.session.prepare(&p.query, &types) {
                    Ok(prepared) => {
                        if let Err(e) = self.session.store_prepared(&name, prepared) {
                            return self.extended_error(e).await;
                        }
                        self.socket
                            .feed(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
                            .await?;
                    }
                    Err(e) => return self.extended_error(e).await,
                }
            }
            F::Bind(b) => {
                let sname = b.statement_name.clone().unwrap_or_default();
                let Some(prepared) = self.session.get_prepared(&sname) else {
                    let e = SqlError::new(
                        code::INVALID_STATEMENT_NAME,
                        format!("prepared statement \"{sname}\" does not exist"),
                    );
                    return self.extended_error(e).await;
                };
                if b.parameters.len() != prepared.param_types.len() {
                    let e = SqlError::new(code::PROTOCOL_VIOLATION, format!("bind message supplies {} parameters, but prepared statement \"{sname}\" requires {}", b.parameters.len(), prepared.param_types.len()));
                    return self.extended_error(e).await;
                }
                let mut params = Vec::with_capacity(b.parameters.len());
                let style = self.session.style();
                let types = match self.session.current_types(&prepared.param_types) {
                    Ok(t) => t,
                    Err(e) => return self.extended_error(e).await,
                };
                for (i, raw) in b.parameters.iter().enumerate() {
                    let format = format_for(&b.parameter_format_codes, i);
                    match decode_param(raw.as_ref(), format, types[i], style) {
                        Ok(v) => params.push(v),
                        Err(e) => return self.extended_error(e).await,
                    }
                }
                let pname = b.portal_name.clone().unwrap_or_default();
                let in_session = !pname.is_empty() && prepared.is_query();
                if in_session {
                    self.session.close_portal(&pname);
                    if let Err(e) = self.session.bind_portal(
                        &pname,
                        prepared.clone(),
                        std::mem::take(&mut params),
                    ) {
                        return self.extended_error(e).await;
                    }
                }
                self.portals.insert(
                    pname,
                    Portal {
                        prepared,
                        params,
                        formats: b.result_column_format_codes.clone(),
                        pending: None,
                        in_session,
                    },
                );
                self.socket.feed(PgWireBackendMessage::BindComplete(BindComplete::new())).await?;
            }
            F::Describe(d) => {
                let name = d.name.clone().unwrap_or_default();
                if d.target_type == b'S' {
                    let Some(prepared) = self.session.get_prepared(&name) else {
                        let e = SqlError::new(
                            code::INVALID_STATEMENT_NAME,
                            format!("prepared statement \"{name}\" does not exist"),
                        );
                        return self.extended_error(e).await;
                    };
                    let types = prepared.param_types.iter().map(|t| t.oid()).collect();
                    self.socket
                        .feed(PgWireBackendMessage::ParameterDescription(
                            ParameterDescription::new(types),
                        ))
                        .await?;
                    self.describe_rows(&prepared, &[]).await?;
                } else {
                    let Some(portal) = self.portals.get(&name) else {
                        // A cursor DECLAREd in SQL is a portal too (psycopg's server-side
                        // cursors describe it so).
                        if let Some((columns, origins)) = self.session.cursor_columns(&name) {
                            self.describe_columns(Some(&columns), &origins, &[]).await?;
                            return Ok(());
                        }
                        let e = SqlError::new(
                            code::INVALID_CURSOR_NAME,
                            format!("portal \"{name}\" does not exist"),
                        );
                        return self.extended_error(e).await;
                    };
                    let (prepared, formats) = (portal.prepared.clone(), portal.formats.clone());
                    self.describe_rows(&prepared, &formats).await?;
                }
            }
            F::Execute(x) => {
                let name = x.name.clone().unwrap_or_default();
                let Some(mut portal) = self.portals.remove(&name) else {
                    let e = SqlError::new(
                        code::INVALID_CURSOR_NAME,
                        format!("portal \"{name}\" does not exist"),
                    );
                    return self.extended_error(e).await;
                };
                let max = if x.max_rows > 0 { Some(x.max_rows as usize) } else { None };
                if portal.in_session {
                    let formats = portal.formats.clone();
                    self.portals.insert(name.clone(), portal);
                    let timer =
                        self.shared.start_statement_timer(&self.session, self.watch.as_ref());
                    let result = self.session.fetch_portal(&name, max);
                    drop(timer);
                    let (rows, more, columns) = match result {
                        Ok(r) => r,
                        Err(e) => {
                            self.portals.remove(&name);
                            return self.extended_error(e).await;
                        }
                    };
                    let tag = format!("SELECT {}", rows.len());
                    self.send_rows(&columns, rows, &formats, None).await?;
                    let done = if more {
                        PgWireBackendMessage::PortalSuspended(PortalSuspended::new())
                    } else {
                        PgWireBackendMessage::CommandComplete(CommandComplete::new(tag))
                    };
                    self.socket.feed(done).await?;
                    return Ok(());
                }
                if let Some((rows, tag)) = portal.pending.take() {
                    let columns = portal.prepared.columns.clone().unwrap_or_default();
                    let rest = self.send_rows(&columns, rows, &portal.formats, max).await?;
                    match rest {
                        Some(rest) => {
                            portal.pending = Some((rest, tag));
                            self.socket
                                .feed(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
                                .await?;
                        }
                        None => {
                            self.socket
                                .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                                    tag,
                                )))
                                .await?;
                        }
                    }
                    self.portals.insert(name, portal);
                    return Ok(());
                }
                let timer = self.shared.start_statement_timer(&self.session, self.watch.as_ref());
                let result = self.session.execute_prepared(&portal.prepared, &portal.params);
                drop(timer);
                match result {
                    Ok(Output::Rows { columns, rows, tag, .. }) => {
                        match self.send_rows(&columns, rows, &portal.formats, max).await? {
                            Some(rest) => {
                                portal.pending = Some((rest, tag));
                                self.socket
                                    .feed(PgWireBackendMessage::PortalSuspended(
                                        PortalSuspended::new(),
                                    ))
                                    .await?;
                            }
                            None => {
                                self.socket
                                    .feed(PgWireBackendMessage::CommandComplete(
                                        CommandComplete::new(tag),
                                    ))
                                    .await?;
                            }
                        }
                        self.portals.insert(name, portal);
                    }
                    Ok(o) => {
                        let formats = portal.formats.clone();
                        self.portals.insert(name, portal);
                        self.send_output(o, &formats, Some(true)).await?;
                    }
                    Err(e) => return self.extended_error(e).await,
                }
            }
            F::Sync(_) => {
                // Outside a transaction block the exchange's portals end here; a portal kept
                // as a cursor is gone once its transaction ended.
                self.session.close_portals_outside_block();
                let session = &self.session;
                self.portals.retain(|n, p| !p.in_session || session.has_portal(n));
                self.ready().await?;
            }
            F::Flush(_) => {
                self.socket.flush().await?;
            }
            F::Close(c) => {
                let name = c.name.clone().unwrap_or_default();
                if c.target_type == b'S' {
                    self.session.close_prepared(&name);
                } else {
                    self.portals.remove(&name);
                    self.session.close_portal(&name);
                }
                self.socket.feed(PgWireBackendMessage::CloseComplete(CloseComplete::new())).await?;
            }
            F::CopyData(_) | F::CopyDone(_) | F::CopyFail(_) => {
                // COPY data outside COPY is ignored, as PostgreSQL does after a failed COPY.
            }
            other => {
                warn!(message = ?other, "unexpected message");
                let e = SqlError::new(code::PROTOCOL_VIOLATION, "unexpected message type");
                self.send_error(&e).await?;
                self.ready().await?;
            }
        }
        Ok(())
    }

    async fn extended_error(&mut self, e: SqlError) -> std::io::Result<()> {
        self.send_error(&e).await?;
        self.skip_to_sync = true;
        // Nothing more is answered until Sync; let the client see the error now.
        self.socket.flush().await
    }

    async fn describe_rows(&mut self, prepared: &Prepared, formats: &[i16]) -> std::io::Result<()> {
        self.describe_columns(prepared.columns.as_ref(), &prepared.origins, formats).await
    }

    /// RowDescription of `columns` (NoData for none).
    async fn describe_columns(
        &mut self,
        columns: Option<&Vec<(String, kiln_sql::DataType)>>,
        origins: &[Option<(u32, i16)>],
        formats: &[i16],
    ) -> std::io::Result<()> {
        let message = match columns {
            Some(columns) => row_description(columns, origins, formats),
            None => PgWireBackendMessage::NoData(NoData::new()),
        };
        self.socket.feed(message).await
    }

    /// Sends rows (at most `max`); returns the rows left over.
    async fn send_rows(
        &mut self,
        columns: &[(String, kiln_sql::DataType)],
        rows: Vec<Vec<Value>>,
        formats: &[i16],
        max: Option<usize>,
    ) -> std::io::Result<Option<Vec<Vec<Value>>>> {
        let mut rows = rows;
        let rest = match max {
            Some(m) if rows.len() > m => Some(rows.split_off(m)),
            _ => None,
        };
        let style = self.session.style();
        for row in rows {
            let mut data = BytesMut::new();
            for (i, (v, (_, ty))) in row.iter().zip(columns).enumerate() {
                match encode_value(v, format_for(formats, i), *ty, style) {
                    Ok(Some(b)) => {
                        data.extend_from_slice(&(b.len() as i32).to_be_bytes());
                        data.extend_from_slice(&b);
                    }
                    Ok(None) => data.extend_from_slice(&(-1i32).to_be_bytes()),
                    Err(e) => {
                        warn!(error = %e, "cannot encode a value");
                        data.extend_from_slice(&(-1i32).to_be_bytes());
                    }
                }
            }
            self.socket
                .feed(PgWireBackendMessage::DataRow(DataRow::new(data, columns.len() as i16)))
                .await?;
        }
        Ok(rest)
    }

    /// Sends one statement's output. `extended` is `Some` in the extended protocol (no
    /// RowDescription: the client asked with Describe).
    async fn send_output(
        &mut self,
        o: Output,
        formats: &[i16],
        extended: Option<bool>,
    ) -> std::io::Result<()> {
        self.send_notices().await?;
        match o {
            Output::Rows { columns, origins, rows, tag } => {
                if extended.is_none() {
                    self.socket.feed(row_description(&columns, &origins, &[])).await?;
                }
                self.send_rows(&columns, rows, formats, None).await?;
                self.socket
                    .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(tag)))
                    .await?;
            }
            Output::Command(tag) => {
                self.socket
                    .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(tag)))
                    .await?;
            }
            Output::Empty => {
                self.socket
                    .feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()))
                    .await?;
            }
            Output::CopyIn { columns, format } => {
                let n = columns.len() as i16;
                let binary = format == CopyFormat::Binary;
                self.copy_binary = binary.then(|| {
                    crate::copy_binary::BinaryCopyIn::new(columns.iter().map(|c| c.1).collect())
                });
                let f = i16::from(binary);
                self.socket
                    .feed(PgWireBackendMessage::CopyInResponse(CopyInResponse::new(
                        f as i8,
                        n,
                        vec![f; n as usize],
                    )))
                    .await?;
                self.copy_in = true;
                self.copy_extended = extended.is_some();
                self.copy_bytes = 0;
                // The client waits for this before it sends any data.
                self.socket.flush().await?;
            }
            Output::CopyOut { columns, data, tag } => {
                let n = columns.len() as i16;
                let f = i16::from(matches!(data, CopyOutData::Rows(_)));
                self.socket
                    .feed(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
                        f as i8,
                        n,
                        vec![f; n as usize],
                    )))
                    .await?;
                match data {
                    CopyOutData::Lines(lines) => {
                        for l in lines {
                            self.socket
                                .feed(PgWireBackendMessage::CopyData(CopyData::new(Bytes::from(l))))
                                .await?;
                        }
                    }
                    CopyOutData::Rows(rows) => {
                        let types: Vec<_> = columns.iter().map(|c| c.1).collect();
                        // The rows were read already; a value that cannot be encoded ends the
                        // data early, and the error follows it.
                        // As PostgreSQL sends it (and clients read it): the header in the
                        // first message, with the first row or the end marker.
                        let mut encoded = Vec::with_capacity(rows.len() + 1);
                        for r in &rows {
                            match crate::copy_binary::row(r, &types) {
                                Ok(b) => encoded.push(b),
                                Err(e) => return self.send_error(&e).await,
                            }
                        }
                        encoded.push(crate::copy_binary::trailer());
                        let mut first = crate::copy_binary::header().to_vec();
                        first.extend_from_slice(&encoded[0]);
                        encoded[0] = Bytes::from(first);
                        for b in encoded {
                            self.socket
                                .feed(PgWireBackendMessage::CopyData(CopyData::new(b)))
                                .await?;
                        }
                    }
                }
                self.socket.feed(PgWireBackendMessage::CopyDone(CopyDone::new())).await?;
                self.socket
                    .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(tag)))
                    .await?;
            }
        }
        Ok(())
    }

    /// An error ends COPY IN: ReadyForQuery at once after a simple Query; after an Execute,
    /// only once the client's Sync arrives.
    async fn copy_error(&mut self, e: SqlError) -> std::io::Result<()> {
        self.send_error(&e).await?;
        if self.copy_extended {
            self.skip_to_sync = true;
            self.socket.flush().await
        } else {
            self.ready().await
        }
    }

    async fn handle_copy(&mut self, msg: PgWireFrontendMessage) -> std::io::Result<()> {
        use PgWireFrontendMessage as F;
        match msg {
            F::CopyData(d) => {
                self.copy_bytes += d.data.len();
                let result = match &mut self.copy_binary {
                    Some(reader) => match reader.feed(&d.data) {
                        Ok(rows) => self.session.copy_rows(rows, d.data.len()),
                        Err(e) => Err(self.session.copy_abort(e)),
                    },
                    None => self.session.copy_data(&d.data),
                };
                if let Err(e) = result {
                    self.copy_in = false;
                    self.copy_binary = None;
                    return self.copy_error(e).await;
                }
            }
            F::CopyDone(_) => {
                self.copy_in = false;
                if let Some(reader) = self.copy_binary.take() {
                    if let Err(e) = reader.finish() {
                        let e = self.session.copy_abort(e);
                        return self.copy_error(e).await;
                    }
                }
                match self.session.copy_done() {
                    Ok(o) => self.send_output(o, &[], None).await?,
                    Err(e) => return self.copy_error(e).await,
                }
                if self.copy_extended {
                    self.socket.flush().await?;
                } else {
                    self.ready().await?;
                }
            }
            F::CopyFail(f) => {
                self.copy_in = false;
                self.copy_binary = None;
                let e = self.session.copy_fail(&f.message);
                return self.copy_error(e).await;
            }
            F::Flush(_) | F::Sync(_) => {}
            _ => {
                self.copy_in = false;
                self.copy_binary = None;
                let e = self.session.copy_fail("unexpected message type during COPY");
                self.send_error(&SqlError::new(code::PROTOCOL_VIOLATION, e.message)).await?;
                self.ready().await?;
            }
        }
        Ok(())
    }
}

/// Sets an interrupt flag after `statement_timeout` unless dropped first, and keeps the
/// statement's socket under the watchdog's eye.
pub(crate) struct StatementTimer {
    pub(crate) cancel: Option<Arc<AtomicBool>>,
    pub(crate) watch: Option<(Arc<Shared>, u64)>,
}

impl Drop for StatementTimer {
    fn drop(&mut self) {
        if let Some(c) = &self.cancel {
            c.store(true, Ordering::Relaxed);
        }
        if let Some((shared, token)) = self.watch.take() {
            shared.unwatch(token);
        }
    }
}
