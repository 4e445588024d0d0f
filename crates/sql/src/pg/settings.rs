//! Settings: their defaults, `SET` / `SET LOCAL` / `RESET` / `SHOW`, and the values they take.

use kiln_engine::{DurabilityLevel, IsolationLevel, TxnOptions};
use sqlparser::ast;

use crate::bind::*;
use crate::error::{code, Result, SqlError};

use crate::database::*;
use crate::session::*;
use crate::types::{DataType, Value};

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
    for part in path.split(',') {
        let part = part.trim();
        let name = match part.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
            Some(quoted) => quoted.to_string(),
            None => part.to_lowercase(),
        };
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
/// `SELECT set_config(name, value, is_local)` alone, with constant or parameter arguments:
/// the setting, its value and whether it is local. PostgreSQL's function changes a setting
/// like SET does; Kiln runs it as the SET it is.
pub(crate) fn set_config_call(
    stmt: &ast::Statement,
    params: &[Value],
) -> Result<Option<(String, String, bool)>> {
    let ast::Statement::Query(q) = stmt else { return Ok(None) };
    let ast::SetExpr::Select(s) = q.body.as_ref() else { return Ok(None) };
    if !s.from.is_empty() || s.selection.is_some() || q.order_by.is_some() {
        return Ok(None);
    }
    let [item] = s.projection.as_slice() else { return Ok(None) };
    let (ast::SelectItem::UnnamedExpr(ast::Expr::Function(f))
    | ast::SelectItem::ExprWithAlias { expr: ast::Expr::Function(f), .. }) = item
    else {
        return Ok(None);
    };
    if !crate::bind::object_name(&f.name).is_ok_and(|n| n == "set_config") {
        return Ok(None);
    }
    let ast::FunctionArguments::List(list) = &f.args else { return Ok(None) };
    let mut args = Vec::with_capacity(3);
    for a in &list.args {
        let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a else { return Ok(None) };
        let v = match e {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) => Value::Text(s.clone()),
                ast::Value::Boolean(b) => Value::Bool(*b),
                ast::Value::Placeholder(p) => {
                    let n: usize = p.trim_start_matches('$').parse().unwrap_or(0);
                    // Unknown while the statement is only described.
                    n.checked_sub(1).and_then(|i| params.get(i)).cloned().unwrap_or(Value::Null)
                }
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        args.push(v);
    }
    let [name, value, local] = args.as_slice() else {
        return Err(SqlError::new(
            code::UNDEFINED_FUNCTION,
            format!("function set_config with {} arguments does not exist", args.len()),
        ));
    };
    let text = |v: &Value| v.to_text(DataType::Text).unwrap_or_default();
    let local = match local {
        Value::Bool(b) => *b,
        Value::Null => false,
        other => crate::types::parse_bool(&text(other))?,
    };
    Ok(Some((text(name).to_lowercase(), text(value), local)))
}

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

pub(crate) fn parse_duration_ms(name: &str, v: &str) -> Result<u64> {
    let v = v.trim().to_lowercase();
    let (num, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len()));
    let n: u64 = num.parse().map_err(|_| {
        SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"{name}\": \"{v}\""),
        )
    })?;
    Ok(match unit.trim() {
        "" | "ms" => n,
        "s" => n * 1000,
        "min" => n * 60_000,
        "h" => n * 3_600_000,
        _ => {
            return Err(SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                format!("invalid value for parameter \"{name}\": \"{v}\""),
            )
            .hint("Valid units are \"ms\", \"s\", \"min\" and \"h\"."))
        }
    })
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
        let value = self.startup.get(name).cloned().or_else(|| {
            default_settings(&self.db.config).into_iter().find(|(k, _)| *k == name).map(|(_, v)| v)
        });
        if let Some(t) = &mut self.txn {
            // The transaction's own characteristics stay what it began with.
            if !name.starts_with("transaction_") {
                t.local.remove(name);
            }
        }
        self.settings.insert(name.to_string(), value.unwrap_or_default());
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
        let value = value.trim().to_string();
        if name == "application_name" {
            self.activity.set_application_name(&value);
        }
        let normalized = match name.as_str() {
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
                parse_duration_ms(&name, &value)?.to_string()
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
            "intervalstyle" => match value.to_lowercase().as_str() {
                "postgres" => "postgres".into(),
                "postgres_verbose" | "sql_standard" | "iso_8601" => {
                    return Err(SqlError::unsupported(format!(
                        "IntervalStyle {value} (Kiln writes intervals in the postgres style)"
                    )))
                }
                _ => {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!("invalid value for parameter \"IntervalStyle\": \"{value}\""),
                    )
                    .hint("Available values: postgres, postgres_verbose, sql_standard, iso_8601."))
                }
            },
            "kiln.read_after" => {
                if value.is_empty() {
                    String::new()
                } else {
                    crate::ed::id_arg(&crate::types::Value::Text(value.clone()))?.to_string()
                }
            }
            "kiln.read_after_timeout" => parse_duration_ms(&name, &value)?.to_string(),
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
            | "datestyle"
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
                let value = values.iter().map(set_value).collect::<Vec<_>>().join(", ");
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
