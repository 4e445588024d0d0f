//! Settings: their defaults, `SET` / `SET LOCAL` / `RESET` / `SHOW`, and the values they take.

use kiln_engine::{DurabilityLevel, IsolationLevel, TxnOptions};
use sqlparser::ast;

use crate::bind::*;
use crate::error::{code, Result, SqlError};

use crate::database::*;
use crate::session::*;

pub(crate) fn default_settings(config: &SessionConfig) -> Vec<(&'static str, String)> {
    vec![
        ("synchronous_commit", if config.synchronous_commit { "on" } else { "off" }.into()),
        ("kiln.durability_level", config.durability_level.to_string()),
        ("default_transaction_isolation", isolation_name(config.default_isolation).into()),
        ("default_transaction_read_only", "off".into()),
        ("application_name", String::new()),
        ("client_encoding", "UTF8".into()),
        ("server_encoding", "UTF8".into()),
        ("datestyle", "ISO, MDY".into()),
        ("intervalstyle", "postgres".into()),
        ("default_text_search_config", "pg_catalog.english".into()),
        ("timezone", "UTC".into()),
        ("extra_float_digits", "1".into()),
        ("statement_timeout", "0".into()),
        ("lock_timeout", "0".into()),
        ("idle_in_transaction_session_timeout", "0".into()),
        ("search_path", "\"$user\", public".into()),
        ("standard_conforming_strings", "on".into()),
        ("integer_datetimes", "on".into()),
        ("server_version", crate::SERVER_VERSION.into()),
        ("server_version_num", "150000".into()),
        ("max_connections", "100".into()),
        ("transaction_isolation", isolation_name(config.default_isolation).into()),
        ("transaction_read_only", "off".into()),
        ("is_superuser", "on".into()),
        // SET ROLE: the one role a session can take is its own (`none`: the session user).
        ("role", "none".into()),
        ("bytea_output", "hex".into()),
        ("client_min_messages", "notice".into()),
        ("row_security", "on".into()),
        ("lc_messages", "C".into()),
        ("lc_monetary", "C".into()),
        ("lc_numeric", "C".into()),
        ("lc_time", "C".into()),
        ("work_mem", "4MB".into()),
        ("jit", "off".into()),
        // Settings pg_dump's scripts set first; Kiln keeps the value and acts on none of them.
        ("check_function_bodies", "on".into()),
        ("xmloption", "content".into()),
        ("default_tablespace", String::new()),
        ("default_table_access_method", "heap".into()),
        ("default_with_oids", "off".into()),
        ("maintenance_work_mem", "64MB".into()),
        ("synchronize_seqscans", "on".into()),
        // Compile-time limits PostgreSQL reports (pgJDBC reads max_index_keys).
        ("max_index_keys", "32".into()),
        ("max_identifier_length", "63".into()),
        ("block_size", "8192".into()),
    ]
}

/// A `kiln.durability_level` value: `local`, `quorum`, `all` or `site:<name>`.
/// `what` names where the value was given, for the error.
pub(crate) fn parse_level(value: &str, what: &str) -> Result<DurabilityLevel> {
    if value.trim().is_empty() {
        return Ok(DurabilityLevel::Quorum);
    }
    value.parse().map_err(|e: String| {
        SqlError::new(code::INVALID_PARAMETER_VALUE, format!("{what}: {e}"))
            .hint("Available values: local, quorum, all, site:<name>.")
    })
}

pub(crate) fn isolation_name(i: IsolationLevel) -> &'static str {
    match i {
        IsolationLevel::ReadCommitted => "read committed",
        IsolationLevel::RepeatableRead => "repeatable read",
        IsolationLevel::Serializable => "serializable",
    }
}

pub(crate) fn parse_isolation(s: &str) -> Result<IsolationLevel> {
    match s.trim().to_lowercase().replace('_', " ").as_str() {
        "read committed" | "read uncommitted" => Ok(IsolationLevel::ReadCommitted),
        "repeatable read" => Ok(IsolationLevel::RepeatableRead),
        "serializable" => Ok(IsolationLevel::Serializable),
        other => Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"default_transaction_isolation\": \"{other}\""),
        )),
    }
}

/// The setting `SHOW` names (and the name of the column it answers).
pub(crate) fn show_name(variable: &[ast::Ident]) -> String {
    let name = variable.iter().map(|i| i.value.to_lowercase()).collect::<Vec<_>>().join(" ");
    match name.as_str() {
        "transaction isolation level" => "transaction_isolation".to_string(),
        "time zone" => "timezone".to_string(),
        // `SHOW prefix.name` (a custom setting) arrives as two words.
        _ if variable.len() == 2 => {
            variable.iter().map(|i| i.value.to_lowercase()).collect::<Vec<_>>().join(".")
        }
        n => n.to_string(),
    }
}

/// The schemas a `search_path` names that exist (Kiln's are `pg_catalog`, `public` and
/// `information_schema`), in order: what `current_schemas(false)` lists. Without `public`,
/// catalog functions qualify the names of user objects (`public.t`), as PostgreSQL does for
/// objects off the path; pg_dump relies on that.
pub(crate) fn search_path(
    settings: &std::collections::BTreeMap<String, String>,
) -> Vec<&'static str> {
    let path = settings.get("search_path").map_or("\"$user\", public", |s| s.as_str());
    let mut schemas = Vec::new();
    for name in crate::bind::search::listed(path) {
        let known = ["pg_catalog", "public", "information_schema"];
        if let Some(k) = known.iter().find(|k| **k == name) {
            if !schemas.contains(k) {
                schemas.push(*k);
            }
        }
    }
    schemas
}

/// The column `SHOW name` answers in: the setting's name as PostgreSQL spells it.
pub(crate) fn show_column(name: &str) -> String {
    match name {
        "timezone" => "TimeZone".into(),
        "datestyle" => "DateStyle".into(),
        "intervalstyle" => "IntervalStyle".into(),
        n => n.into(),
    }
}

/// A setting's name as `SET` and `RESET` give it: `name`, or a custom one with a prefix
/// (`kiln.read_after`, `myapp.tenant`), as PostgreSQL allows.
pub(crate) fn setting_name(variable: &ast::ObjectName) -> Result<String> {
    let parts = variable
        .0
        .iter()
        .map(|p| match p.as_ident() {
            Some(i) => Ok(ident(i)),
            None => Err(SqlError::unsupported(format!("the setting name {p}"))),
        })
        .collect::<Result<Vec<_>>>()?;
    match parts.as_slice() {
        [_] | [_, _] => Ok(parts.join(".")),
        _ => Err(SqlError::new(
            code::SYNTAX,
            format!("improper qualified name (too many dotted names): {variable}"),
        )),
    }
}

/// A schema of `SET search_path = …` as the setting keeps it: a name written quoted, or as a
/// string, is quoted where it needs to be (`"$user"`), as PostgreSQL keeps a list setting's
/// items; an unquoted name is lowercased.
fn search_path_item(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(i) if i.quote_style.is_none() => i.value.to_lowercase(),
        ast::Expr::Identifier(i) => crate::bind::quote_ident(&i.value),
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => crate::bind::quote_ident(s),
            _ => set_value(e),
        },
        _ => set_value(e),
    }
}

pub(crate) fn set_value(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            ast::Value::Number(n, _) => n.clone(),
            ast::Value::Boolean(b) => {
                if *b {
                    "on".into()
                } else {
                    "off".into()
                }
            }
            other => other.to_string(),
        },
        ast::Expr::Identifier(i) => i.value.clone(),
        other => other.to_string(),
    }
}

/// A duration setting's value in milliseconds, as PostgreSQL reads it: a number (decimals and
/// an exponent allowed; rounded to whole milliseconds) and an optional unit (`us`, `ms`, `s`,
/// `min`, `h`, `d`), from 0 to `i32::MAX` ms.
pub(crate) fn parse_duration_ms(name: &str, v: &str) -> Result<u64> {
    let invalid = || {
        SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"{name}\": \"{v}\""),
        )
    };
    let t = v.trim();
    let b = t.as_bytes();
    let mut end = 0;
    if matches!(b.first(), Some(b'-' | b'+')) {
        end = 1;
    }
    let digits = |from: usize| from + b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    end = digits(end);
    if b.get(end) == Some(&b'.') {
        end = digits(end + 1);
    }
    if matches!(b.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(end + 1), Some(b'-' | b'+')));
        if b.get(end + 1 + sign).is_some_and(u8::is_ascii_digit) {
            end = digits(end + 1 + sign);
        }
    }
    let number: f64 = t[..end].parse().map_err(|_| invalid())?;
    let scale = match t[end..].trim_start() {
        "" | "ms" => 1.0,
        "us" => 0.001,
        "s" => 1_000.0,
        "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => return Err(invalid().hint(
            "Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\".",
        )),
    };
    let ms = (number * scale).round();
    if !ms.is_finite() || ms > f64::from(i32::MAX) || ms < f64::from(i32::MIN) {
        return Err(invalid().hint("Value exceeds integer range."));
    }
    if ms < 0.0 {
        return Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!(
                "{ms} ms is outside the valid range for parameter \"{name}\" (0 .. {})",
                i32::MAX
            ),
        ));
    }
    Ok(ms as u64)
}

/// A duration in milliseconds as SHOW gives it: in the largest unit that holds it whole.
pub(crate) fn show_duration_ms(ms: u64) -> String {
    if ms == 0 {
        return "0".into();
    }
    let (n, unit) = [(86_400_000, "d"), (3_600_000, "h"), (60_000, "min"), (1_000, "s")]
        .into_iter()
        .find(|(n, _)| ms.is_multiple_of(*n))
        .unwrap_or((1, "ms"));
    format!("{}{unit}", ms / n)
}

pub(crate) fn txn_modes(
    modes: &[ast::TransactionMode],
) -> Result<(Option<IsolationLevel>, Option<bool>)> {
    let mut isolation = None;
    let mut read_only = None;
    for m in modes {
        match m {
            ast::TransactionMode::IsolationLevel(l) => {
                isolation = Some(match l {
                    ast::TransactionIsolationLevel::ReadUncommitted
                    | ast::TransactionIsolationLevel::ReadCommitted => {
                        IsolationLevel::ReadCommitted
                    }
                    ast::TransactionIsolationLevel::RepeatableRead => {
                        IsolationLevel::RepeatableRead
                    }
                    ast::TransactionIsolationLevel::Serializable => IsolationLevel::Serializable,
                    other => return Err(SqlError::unsupported(format!("isolation level {other}"))),
                })
            }
            ast::TransactionMode::AccessMode(a) => {
                read_only = Some(matches!(a, ast::TransactionAccessMode::ReadOnly))
            }
        }
    }
    Ok((isolation, read_only))
}

/// The settings in force: the session's, with a transaction's `SET LOCAL` values (and its own
/// isolation and read-only mode) over them. Borrowed unless the transaction changed one.
pub(crate) fn settings_in_force<'a>(
    settings: &'a std::collections::BTreeMap<String, String>,
    local: Option<&std::collections::HashMap<String, String>>,
) -> std::borrow::Cow<'a, std::collections::BTreeMap<String, String>> {
    let Some(local) = local.filter(|l| l.iter().any(|(k, v)| settings.get(k) != Some(v))) else {
        return std::borrow::Cow::Borrowed(settings);
    };
    let mut merged = settings.clone();
    for (k, v) in local {
        merged.insert(k.clone(), v.clone());
    }
    std::borrow::Cow::Owned(merged)
}

/// The time zone the `TimeZone` setting in force names: a transaction's `SET LOCAL` value,
/// else the session's.
pub(crate) fn zone_setting(
    local: Option<&std::collections::HashMap<String, String>>,
    settings: &std::collections::BTreeMap<String, String>,
) -> crate::zone::Zone {
    let value = local.and_then(|l| l.get("timezone")).or_else(|| settings.get("timezone"));
    // The setting holds only values that parsed when they were set.
    value.and_then(|v| crate::zone::parse_setting(v)).map_or(crate::zone::Zone::UTC, |z| z.0)
}

/// The [`crate::style::Style`] of a session's settings (a transaction's SET LOCAL values
/// over its own).
pub(crate) fn style_setting(
    local: Option<&std::collections::HashMap<String, String>>,
    settings: &std::collections::BTreeMap<String, String>,
) -> crate::style::Style {
    let get = |name: &str| local.and_then(|l| l.get(name)).or_else(|| settings.get(name));
    let mut style = crate::style::Style::of(
        zone_setting(local, settings),
        get("datestyle").map(String::as_str),
        get("intervalstyle").map(String::as_str),
    );
    // The setting holds only configurations that exist.
    if let Some(Ok(i)) =
        get("default_text_search_config").map(|v| crate::textsearch::config_index(v))
    {
        style.text_search = crate::textsearch::ConfigId(i);
    }
    style
}

impl Session {
    /// A setting's current value.
    pub fn setting(&self, name: &str) -> Option<String> {
        // Names are stored lowercased; most lookups already are (this runs several times
        // per statement).
        let lowered;
        let name = if name.chars().any(char::is_uppercase) {
            lowered = name.to_lowercase();
            lowered.as_str()
        } else {
            name
        };
        if let Some(t) = &self.txn {
            if let Some(v) = t.local.get(name) {
                return Some(v.clone());
            }
        }
        self.settings.get(name).cloned()
    }

    /// A duration setting's value in milliseconds (`statement_timeout`, …; none when unset).
    pub fn setting_ms(&self, name: &str) -> Option<u64> {
        self.setting(name).and_then(|v| parse_duration_ms(name, &v).ok())
    }

    /// The session's time zone, DateStyle and IntervalStyle in force.
    pub fn style(&self) -> crate::style::Style {
        style_setting(self.txn.as_ref().map(|t| &t.local), &self.settings)
    }

    /// The session's time zone: the `TimeZone` setting in force.
    pub fn zone(&self) -> crate::zone::Zone {
        zone_setting(self.txn.as_ref().map(|t| &t.local), &self.settings)
    }

    /// Applies a startup parameter (from the StartupMessage or `-c name=value` options); it
    /// becomes the value RESET returns to.
    pub fn set_startup_parameter(&mut self, name: &str, value: &str) -> Result<()> {
        self.set(name, value, false)?;
        let name = name.to_lowercase();
        if let Some(v) = self.settings.get(&name).cloned() {
            self.startup.insert(name, v);
        }
        Ok(())
    }

    /// Keeps the session's settings as they are before a transaction's first change to them,
    /// for its rollback to restore.
    fn remember_settings(&mut self) {
        if self.txn.as_ref().is_some_and(|t| t.settings_before.is_none()) {
            let before = self.settings.clone();
            if let Some(t) = &mut self.txn {
                t.settings_before = Some(before);
            }
        }
    }

    /// RESET name: back to the value the client gave at startup, else the default.
    pub(crate) fn reset(&mut self, name: &str) {
        self.remember_settings();
        let value = self.setting_default(name);
        if let Some(t) = &mut self.txn {
            // The transaction's own characteristics stay what it began with.
            if !name.starts_with("transaction_") {
                t.local.remove(name);
            }
        }
        self.settings.insert(name.to_string(), value);
    }

    /// RESET ALL: every setting back to its startup value or default.
    pub(crate) fn reset_all(&mut self) {
        self.remember_settings();
        for (k, v) in default_settings(&self.db.config) {
            let v = self.startup.get(k).cloned().unwrap_or(v);
            self.settings.insert(k.to_string(), v);
        }
        for (k, v) in self.startup.clone() {
            self.settings.insert(k, v);
        }
    }

    pub(crate) fn set(&mut self, name: &str, value: &str, local: bool) -> Result<()> {
        let name = name.to_lowercase();
        let datestyle = self.setting("datestyle").unwrap_or_else(|| "ISO, MDY".into());
        let normalized = SettingRules {
            db: &self.db,
            user: &self.user,
            settings: &self.settings,
            startup: &self.startup,
            datestyle: &datestyle,
        }
        .normalize(&name, value)?;
        if name == "application_name" {
            self.activity.set_application_name(&normalized);
        }
        self.store(name, normalized, local)
    }

    /// Applies the `set_config` calls of the statement that just succeeded, in order.
    pub(crate) fn apply_set_configs(&mut self) -> Result<()> {
        let calls = std::mem::take(&mut *self.set_configs.lock());
        for call in calls {
            match call {
                SetConfig::Set { name, value, local } => self.set(&name, &value, local)?,
                SetConfig::Reset { name, local: true } => {
                    let value = self.setting_default(&name);
                    self.set(&name, &value, true)?
                }
                SetConfig::Reset { name, local: false } => self.reset(&name),
            }
        }
        Ok(())
    }

    /// What RESET returns a setting to: its startup value, else its default.
    fn setting_default(&self, name: &str) -> String {
        setting_default(&self.db.config, &self.startup, name)
    }

    /// Keeps a normalized value: for the transaction (`SET LOCAL`) or the session.
    fn store(&mut self, name: String, normalized: String, local: bool) -> Result<()> {
        if name == "transaction_isolation" {
            if let Some(t) = &self.txn {
                if t.txn.has_writes() || t.txn.read_dependency() > 0 {
                    return Err(SqlError::new(
                        code::ACTIVE_TXN,
                        "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                    ));
                }
            }
            if let Some(t) = &mut self.txn {
                let level = parse_isolation(&normalized)?;
                if level != t.isolation {
                    let read_only =
                        t.local.get("transaction_read_only").map(|v| v == "on").unwrap_or(false);
                    let mut options = TxnOptions::new().isolation(level);
                    if read_only {
                        options = options.read_only();
                    }
                    t.txn = self.engine_session.begin(options)?;
                    t.isolation = level;
                }
                t.local.insert(name, normalized);
            }
            return Ok(());
        }
        if local || name == "transaction_read_only" {
            if let Some(t) = &mut self.txn {
                t.local.insert(name, normalized);
            }
            // SET LOCAL outside a transaction block has no effect (PostgreSQL warns).
            return Ok(());
        }
        self.remember_settings();
        if let Some(t) = &mut self.txn {
            t.local.remove(&name);
        }
        self.settings.insert(name, normalized);
        Ok(())
    }

    pub(crate) fn execute_set(&mut self, set: &ast::Set) -> Result<Output> {
        match set {
            ast::Set::SingleAssignment { scope, variable, values, .. } => {
                let name = setting_name(variable)?;
                let default = matches!(values.as_slice(), [ast::Expr::Identifier(i)] if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("default"));
                let value = if default {
                    // `SET name TO DEFAULT`: as RESET.
                    self.setting_default(&name.to_lowercase())
                } else if name.eq_ignore_ascii_case("search_path") {
                    values.iter().map(search_path_item).collect::<Vec<_>>().join(", ")
                } else {
                    values.iter().map(set_value).collect::<Vec<_>>().join(", ")
                };
                let local = matches!(scope, Some(ast::ContextModifier::Local));
                self.set(&name, &value, local)?;
            }
            ast::Set::SetTransaction { modes, session, .. } => {
                let (isolation, read_only) = txn_modes(modes)?;
                if let Some(i) = isolation {
                    let key = if *session {
                        "default_transaction_isolation"
                    } else {
                        "transaction_isolation"
                    };
                    self.set(key, isolation_name(i), false)?;
                }
                if let Some(r) = read_only {
                    let key = if *session {
                        "default_transaction_read_only"
                    } else {
                        "transaction_read_only"
                    };
                    self.set(key, if r { "on" } else { "off" }, false)?;
                    if !*session {
                        if let Some(t) = &mut self.txn {
                            if r {
                                let level = t.isolation;
                                t.txn = self
                                    .engine_session
                                    .begin(TxnOptions::new().isolation(level).read_only())?;
                            }
                        }
                    }
                }
            }
            ast::Set::SetTimeZone { local, value } => {
                let value = match value {
                    // `INTERVAL '+02:00' HOUR TO MINUTE`: an offset east of UTC.
                    ast::Expr::Interval(iv) => {
                        let text = match iv.value.as_ref() {
                            ast::Expr::Value(v) => match &v.value {
                                ast::Value::SingleQuotedString(s) => s.clone(),
                                _ => String::new(),
                            },
                            _ => String::new(),
                        };
                        let invalid = |detail: &str| {
                            SqlError::new(
                                code::INVALID_PARAMETER_VALUE,
                                format!("invalid value for parameter \"TimeZone\": \"{value}\""),
                            )
                            .detail(detail.to_string())
                        };
                        let span = crate::interval::parse(&text, None)
                            .map_err(|_| invalid("The interval is not valid."))?;
                        if span.months != 0 {
                            return Err(invalid("Cannot specify months in time zone interval."));
                        }
                        if span.days != 0 {
                            return Err(invalid("Cannot specify days in time zone interval."));
                        }
                        let secs = span.micros / 1_000_000;
                        if secs.abs() > crate::zone::SETTING_OFFSET_SECONDS_MAX as i64 {
                            return Err(invalid("The offset is more than a day."));
                        }
                        crate::zone::fixed_setting(secs as i32).1
                    }
                    // `SET TIME ZONE -7`: hours east of UTC.
                    ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => {
                        format!("-{}", set_value(expr))
                    }
                    other => set_value(other),
                };
                self.set("timezone", &value, *local)?;
            }
            ast::Set::SetRole { context_modifier, role_name } => {
                let local = matches!(context_modifier, Some(ast::ContextModifier::Local));
                let role = role_name.as_ref().map_or_else(|| "none".into(), |r| r.value.clone());
                self.set("role", &role, local)?;
            }
            ast::Set::SetNames { charset_name, .. } => {
                self.set("client_encoding", &charset_name.value, false)?;
            }
            other => return Err(SqlError::unsupported(format!("the statement {other}"))),
        }
        Ok(Output::Command("SET".into()))
    }
}

/// What a setting's value must be, and how it is shown: the checks of SET and `set_config`.
pub(crate) struct SettingRules<'a> {
    pub(crate) db: &'a Database,
    pub(crate) user: &'a str,
    pub(crate) settings: &'a std::collections::BTreeMap<String, String>,
    pub(crate) startup: &'a std::collections::BTreeMap<String, String>,
    /// The DateStyle in force, which a new value's missing half keeps.
    pub(crate) datestyle: &'a str,
}

impl SettingRules<'_> {
    /// The value `name` (lowercased) takes for `value`, as SHOW will show it; refused when the
    /// setting is unknown, fixed or the value is not one it takes.
    pub(crate) fn normalize(&self, name: &str, value: &str) -> Result<String> {
        let value = value.trim().to_string();
        let normalized = match name {
            "synchronous_commit" => match value.to_lowercase().as_str() {
                // In a cluster `local` waits for this node's disk only; alone it is `on`.
                "local" => "local".to_string(),
                "on" | "true" | "yes" | "1" | "remote_write" | "remote_apply" => "on".to_string(),
                "off" | "false" | "no" | "0" => "off".to_string(),
                _ => {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!("invalid value for parameter \"synchronous_commit\": \"{value}\""),
                    )
                    .hint("Available values: local, remote_write, remote_apply, on, off."))
                }
            },
            "default_transaction_isolation" | "transaction_isolation" => {
                isolation_name(parse_isolation(&value)?).to_string()
            }
            "statement_timeout" | "lock_timeout" | "idle_in_transaction_session_timeout" => {
                show_duration_ms(parse_duration_ms(name, &value)?)
            }
            "client_encoding" => {
                let v = value.to_uppercase().replace('-', "");
                if v != "UTF8" && v != "UNICODE" && v != "SQL_ASCII" {
                    return Err(SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        format!("client_encoding {value} is not supported by Kiln; use UTF8"),
                    ));
                }
                "UTF8".into()
            }
            "timezone" => match crate::zone::parse_setting(&value) {
                Some((_, shown)) => shown,
                // SET TIME ZONE LOCAL / DEFAULT: the zone the session started with.
                None if value.eq_ignore_ascii_case("default")
                    || value.eq_ignore_ascii_case("local") =>
                {
                    self.startup.get("timezone").cloned().unwrap_or_else(|| "UTC".into())
                }
                None => {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!("invalid value for parameter \"TimeZone\": \"{value}\""),
                    )
                    .hint("Give a zone of the tz database (Europe/Berlin, America/New_York, UTC), hours east of UTC (5.5), or a POSIX offset (UTC+3 is three hours west)."))
                }
            },
            "intervalstyle" => crate::style::normalize_intervalstyle(&value)?,
            "default_text_search_config" => {
                let i = crate::textsearch::config_index(&value).map_err(|_| {
                    SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!("invalid value for parameter \"default_text_search_config\": \"{value}\""),
                    )
                })?;
                format!("pg_catalog.{}", crate::textsearch::CONFIGS[i].name)
            }
            "datestyle" => crate::style::normalize_datestyle(&value, self.datestyle)?,
            "kiln.read_after" => {
                if value.is_empty() {
                    String::new()
                } else {
                    crate::ed::id_arg(&crate::types::Value::Text(value.clone()))?.to_string()
                }
            }
            "kiln.read_after_timeout" => show_duration_ms(parse_duration_ms(name, &value)?),
            "kiln.durability_level" => {
                let level =
                    parse_level(&value, "invalid value for parameter \"kiln.durability_level\"")?;
                self.db.check_level(&level)?;
                level.to_string()
            }
            "role" => {
                if value.eq_ignore_ascii_case("none") || value.eq_ignore_ascii_case("default") {
                    "none".into()
                } else if value == self.user {
                    value.clone()
                } else {
                    return Err(SqlError::new(
                        code::UNDEFINED_OBJECT,
                        format!("role \"{value}\" does not exist"),
                    )
                    .hint("Kiln has one role per session: its own user's."));
                }
            }
            "default_transaction_read_only" | "transaction_read_only" => {
                if crate::types::parse_bool(&value)? {
                    "on".into()
                } else {
                    "off".into()
                }
            }
            "server_version" | "server_version_num" | "server_encoding" | "integer_datetimes"
            | "max_connections" | "is_superuser" => {
                return Err(SqlError::new(
                    "55P02",
                    format!("parameter \"{name}\" cannot be changed"),
                ));
            }
            n if self.settings.contains_key(n) => value.clone(),
            "search_path"
            | "application_name"
            | "extra_float_digits"
            | "client_min_messages"
            | "work_mem"
            | "jit"
            | "row_security" => value.clone(),
            n if n.contains('.') => value.clone(),
            _ => {
                return Err(SqlError::new(
                    code::UNDEFINED_SETTING,
                    format!("unrecognized configuration parameter \"{name}\""),
                ))
            }
        };
        Ok(normalized)
    }
}

/// What RESET returns a setting to: its startup value, else its default.
pub(crate) fn setting_default(
    config: &SessionConfig,
    startup: &std::collections::BTreeMap<String, String>,
    name: &str,
) -> String {
    startup
        .get(name)
        .cloned()
        .or_else(|| default_settings(config).into_iter().find(|(k, _)| *k == name).map(|(_, v)| v))
        .unwrap_or_default()
}

/// A `set_config` call inside a larger query, applied when its statement succeeds.
#[derive(Debug, Clone)]
pub(crate) enum SetConfig {
    Set {
        name: String,
        value: String,
        local: bool,
    },
    /// A NULL value: back to the default (`RESET`).
    Reset {
        name: String,
        local: bool,
    },
}

/// What pg_settings tells of a setting besides its value.
pub(crate) struct SettingInfo {
    /// The name as PostgreSQL spells it (`TimeZone`).
    pub(crate) name: String,
    pub(crate) vartype: &'static str,
    /// The unit `setting` is given in (`ms`, `kB`).
    pub(crate) unit: Option<&'static str>,
    pub(crate) category: &'static str,
    pub(crate) short_desc: &'static str,
    /// Who may change it: `user`, or `internal` (fixed) / `postmaster` (at start).
    pub(crate) context: &'static str,
    pub(crate) bounds: Option<(i64, i64)>,
    pub(crate) choices: &'static [&'static str],
}

const STATEMENT: &str = "Client Connection Defaults / Statement Behavior";
const LOCALE: &str = "Client Connection Defaults / Locale and Formatting";
const PRESET: &str = "Preset Options";
const ISOLATIONS: &[&str] =
    &["serializable", "repeatable read", "read committed", "read uncommitted"];

/// pg_settings' description of setting `name` (lowercased).
pub(crate) fn setting_info(name: &str) -> SettingInfo {
    let ms = Some((0, i64::from(i32::MAX)));
    #[rustfmt::skip]
    let (vartype, unit, category, short_desc, context, bounds, choices): (_, _, _, _, _, _, &[&str]) = match name {
        "statement_timeout" => ("integer", Some("ms"), STATEMENT, "Sets the maximum allowed duration of any statement.", "user", ms, &[]),
        "lock_timeout" => ("integer", Some("ms"), STATEMENT, "Sets the maximum allowed duration of any wait for a lock.", "user", ms, &[]),
        "idle_in_transaction_session_timeout" => ("integer", Some("ms"), STATEMENT, "Sets the maximum allowed idle time between queries, when in a transaction.", "user", ms, &[]),
        "kiln.read_after_timeout" => ("integer", Some("ms"), "Kiln", "How long a transaction waits for the commit kiln.read_after names.", "user", ms, &[]),
        "work_mem" | "maintenance_work_mem" => ("integer", Some("kB"), "Resource Usage / Memory", "Sets the maximum memory to be used for query workspaces.", "user", Some((64, i64::from(i32::MAX))), &[]),
        "synchronous_commit" => ("enum", None, "Write-Ahead Log / Settings", "Sets the current transaction's synchronization level.", "user", None, &["local", "remote_write", "remote_apply", "on", "off"]),
        "default_transaction_isolation" => ("enum", None, STATEMENT, "Sets the transaction isolation level of each new transaction.", "user", None, ISOLATIONS),
        "transaction_isolation" => ("enum", None, STATEMENT, "Sets the current transaction's isolation level.", "user", None, ISOLATIONS),
        "default_transaction_read_only" => ("bool", None, STATEMENT, "Sets the default read-only status of new transactions.", "user", None, &[]),
        "transaction_read_only" => ("bool", None, STATEMENT, "Sets the current transaction's read-only status.", "user", None, &[]),
        "search_path" => ("string", None, STATEMENT, "Sets the schema search order for names that are not schema-qualified.", "user", None, &[]),
        "bytea_output" => ("enum", None, STATEMENT, "Sets the output format for bytea.", "user", None, &["escape", "hex"]),
        "client_min_messages" => ("enum", None, STATEMENT, "Sets the message levels that are sent to the client.", "user", None, &["debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error"]),
        "row_security" => ("bool", None, STATEMENT, "Enable row security.", "user", None, &[]),
        "client_encoding" => ("string", None, LOCALE, "Sets the client's character set encoding.", "user", None, &[]),
        "datestyle" => ("string", None, LOCALE, "Sets the display format for date and time values.", "user", None, &[]),
        "default_text_search_config" => ("string", None, LOCALE, "Sets default text search configuration.", "user", None, &[]),
        "intervalstyle" => ("enum", None, LOCALE, "Sets the display format for interval values.", "user", None, &["postgres", "postgres_verbose", "sql_standard", "iso_8601"]),
        "timezone" => ("string", None, LOCALE, "Sets the time zone for displaying and interpreting time stamps.", "user", None, &[]),
        "extra_float_digits" => ("integer", None, LOCALE, "Sets the number of digits displayed for floating-point values.", "user", Some((-15, 3)), &[]),
        "application_name" => ("string", None, "Reporting and Logging / What to Log", "Sets the application name to be reported in statistics and logs.", "user", None, &[]),
        "standard_conforming_strings" => ("bool", None, "Version and Platform Compatibility / Previous PostgreSQL Versions", "Causes '...' strings to treat backslashes literally.", "user", None, &[]),
        "jit" => ("bool", None, "Query Tuning / Other Planner Options", "Allow JIT compilation.", "user", None, &[]),
        "max_connections" => ("integer", None, "Connections and Authentication / Connection Settings", "Sets the maximum number of concurrent connections.", "postmaster", Some((1, 262_143)), &[]),
        "server_version" => ("string", None, PRESET, "Shows the server version.", "internal", None, &[]),
        "server_version_num" => ("integer", None, PRESET, "Shows the server version as an integer.", "internal", None, &[]),
        "server_encoding" => ("string", None, PRESET, "Shows the server (database) character set encoding.", "internal", None, &[]),
        "integer_datetimes" => ("bool", None, PRESET, "Shows whether datetimes are integer based.", "internal", None, &[]),
        "max_index_keys" => ("integer", None, PRESET, "Shows the maximum number of index keys.", "internal", None, &[]),
        "max_identifier_length" => ("integer", None, PRESET, "Shows the maximum identifier length.", "internal", None, &[]),
        "block_size" => ("integer", None, PRESET, "Shows the size of a disk block.", "internal", None, &[]),
        "is_superuser" => ("bool", None, "Customized Options", "Shows whether the current user is a superuser.", "internal", None, &[]),
        "kiln.durability_level" => ("string", None, "Kiln", "Where a safe commit must be durable: local, quorum, all or site:<name>.", "user", None, &[]),
        "kiln.read_after" => ("string", None, "Kiln", "The commit each transaction begins after (a kiln_last_txid()).", "user", None, &[]),
        _ => ("string", None, "Customized Options", "", "user", None, &[]),
    };
    SettingInfo {
        name: show_column(name),
        vartype,
        unit,
        category,
        short_desc,
        context,
        bounds,
        choices,
    }
}

/// A value as pg_settings' `setting` gives it: durations in milliseconds, memory in kB,
/// booleans as `on`/`off`.
pub(crate) fn setting_in_unit(info: &SettingInfo, value: &str) -> String {
    match info.unit {
        Some("ms") => {
            parse_duration_ms(&info.name, value).map(|v| v.to_string()).unwrap_or_default()
        }
        Some("kB") => {
            let v = value.trim();
            let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
            let n: i64 = v[..digits].parse().unwrap_or(0);
            let scale = match v[digits..].trim() {
                "MB" => 1024,
                "GB" => 1024 * 1024,
                "TB" => 1024 * 1024 * 1024,
                _ => 1,
            };
            n.saturating_mul(scale).to_string()
        }
        _ => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_and_show_as_postgresql_does() {
        for (given, ms, shown) in [
            ("0", 0, "0"),
            ("1.5", 2, "2ms"),
            ("0.5s", 500, "500ms"),
            ("1 s", 1000, "1s"),
            ("1000us", 1, "1ms"),
            ("1e3", 1000, "1s"),
            ("90s", 90_000, "90s"),
            ("2min", 120_000, "2min"),
            ("86400000", 86_400_000, "1d"),
            ("0.0004s", 0, "0"),
            ("-0", 0, "0"),
            ("2147483647", 2_147_483_647, "2147483647ms"),
        ] {
            assert_eq!(parse_duration_ms("t", given).unwrap(), ms, "{given}");
            assert_eq!(show_duration_ms(ms), shown, "{given}");
        }
        for bad in ["", "-1", "3000000000", "10x", "1S", "1e400", "s", "1..2", "nan", "1e"] {
            assert!(parse_duration_ms("t", bad).is_err(), "{bad}");
        }
    }
}
