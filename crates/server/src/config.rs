//! Server configuration: defaults, then a TOML file, then command-line flags and
//! environment variables (applied by the `kiln` command).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// How clients prove who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AuthMethod {
    /// Anyone may connect (only sensible on loopback, the default listen address).
    #[default]
    Trust,
    /// SCRAM-SHA-256 with the passwords in `[auth.users]`.
    #[serde(rename = "scram-sha-256")]
    ScramSha256,
}

/// Authentication settings.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// The method.
    pub method: AuthMethod,
    /// user → password (for scram-sha-256).
    pub users: std::collections::BTreeMap<String, String>,
    /// Accept connections from addresses other than loopback.
    pub allow_remote: bool,
}

/// TLS settings: both paths set enables TLS (clients that ask for SSL get it).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain.
    pub cert: Option<PathBuf>,
    /// PEM private key.
    pub key: Option<PathBuf>,
}

/// One voter of a cluster.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MemberConfig {
    /// Its node id (1 or more, unique in the cluster).
    pub id: u64,
    /// The address it receives Raft messages on.
    pub raft: String,
    /// The address its SQL clients connect to.
    pub sql: String,
    /// Its site tag (a zone, region or data centre; may be empty).
    #[serde(default)]
    pub site: String,
}

/// Settings of a node of a cluster (`[cluster]`); without them the server runs alone.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// The cluster's name; nodes of another cluster are refused.
    pub name: String,
    /// This node's id, among `members`.
    pub node_id: u64,
    /// The address this node receives Raft messages on (it must be `members`' `raft` of this
    /// node, or where that address leads).
    pub raft_listen: Option<SocketAddr>,
    /// The file holding the cluster's shared secret (at least 16 bytes; surrounding whitespace
    /// is ignored). The `KILN_CLUSTER_SECRET` environment variable may give it instead.
    pub secret_file: Option<PathBuf>,
    /// The secret itself (prefer `secret_file` or the environment).
    pub secret: Option<String>,
    /// Every voter, this node included. Every node must be given the same list.
    pub members: Vec<MemberConfig>,
    /// The leader's heartbeat interval in milliseconds.
    pub heartbeat_ms: u64,
    /// A follower that hears from no leader for a random time between this and twice this
    /// starts an election, in milliseconds.
    pub election_timeout_ms: u64,
    /// Log entries kept behind the newest snapshot: a member behind by fewer catches up from
    /// the log; one behind by more is sent the snapshot. (A snapshot is taken whenever the
    /// node has logged the engine's checkpoint interval, 256 MiB, since its last.)
    pub log_kept_behind_snapshot: u64,
    /// The level a safe commit waits for unless a session or transaction says otherwise:
    /// `local`, `quorum`, `all` or `site:<name>` (a site some member is tagged with).
    pub durability_level: String,
    /// This node joins a running cluster: it does not form one from `members`, and waits for
    /// the leader to add it (`kiln_cluster_add_node`).
    pub join: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            name: "kiln".into(),
            node_id: 0,
            raft_listen: None,
            secret_file: None,
            secret: None,
            members: Vec::new(),
            heartbeat_ms: 50,
            election_timeout_ms: 500,
            log_kept_behind_snapshot: kiln_replication::LOG_KEPT_BEHIND_SNAPSHOT,
            durability_level: "quorum".into(),
            join: false,
        }
    }
}

impl ClusterConfig {
    /// The cluster's default durability level.
    pub fn level(&self) -> Result<kiln_sql::engine_config::DurabilityLevel, String> {
        self.durability_level.parse().map_err(|e| format!("cluster.durability_level: {e}"))
    }

    /// Checks the settings; returns the secret.
    pub fn validate(&self) -> Result<Vec<u8>, String> {
        if self.node_id == 0 {
            return Err("cluster.node_id must be set (1 or more)".into());
        }
        let mut ids = std::collections::BTreeSet::new();
        for m in &self.members {
            if m.id == 0 || !ids.insert(m.id) {
                return Err(format!("cluster.members: node id {} is 0 or given twice", m.id));
            }
            if !m.site.is_empty() {
                format!("site:{}", m.site)
                    .parse::<kiln_sql::engine_config::DurabilityLevel>()
                    .map_err(|e| format!("cluster.members: node {}: {e}", m.id))?;
            }
        }
        if !ids.contains(&self.node_id) {
            return Err(format!("cluster.members does not list this node ({})", self.node_id));
        }
        if let kiln_sql::engine_config::DurabilityLevel::Site(site) = self.level()? {
            if !self.members.iter().any(|m| m.site == *site) {
                return Err(format!(
                    "cluster.durability_level names site {site}, but no member is tagged with it"
                ));
            }
        }
        if self.raft_listen.is_none() {
            return Err("cluster.raft_listen must be set".into());
        }
        if self.heartbeat_ms == 0 || self.election_timeout_ms < 3 * self.heartbeat_ms {
            return Err(format!(
                "cluster.election_timeout_ms ({}) must be at least 3 heartbeats ({} ms each)",
                self.election_timeout_ms, self.heartbeat_ms
            ));
        }
        let secret = match (&self.secret, &self.secret_file) {
            (Some(s), None) => s.trim().as_bytes().to_vec(),
            (None, Some(path)) => std::fs::read_to_string(path)
                .map_err(|e| format!("cluster.secret_file {}: {e}", path.display()))?
                .trim()
                .as_bytes()
                .to_vec(),
            (Some(_), Some(_)) => {
                return Err("give cluster.secret or cluster.secret_file, not both".into())
            }
            (None, None) => {
                return Err("a cluster needs a shared secret: cluster.secret_file, or \
                            KILN_CLUSTER_SECRET"
                    .into())
            }
        };
        Ok(secret)
    }
}

/// Everything `kiln serve` can be told.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Where the database lives.
    pub data_dir: PathBuf,
    /// The PostgreSQL protocol address.
    pub listen: SocketAddr,
    /// The Prometheus `/metrics` address (none to disable).
    pub metrics_listen: Option<SocketAddr>,
    /// Maximum concurrent connections (53300 beyond).
    pub max_connections: usize,
    /// `synchronous_commit` of new sessions: true = safe (on), false = fast (off).
    pub synchronous_commit: bool,
    /// Default isolation: "read committed", "repeatable read" or "serializable".
    pub default_isolation: String,
    /// `classic` makes every commit wait for durability before it is visible.
    pub commit_model: String,
    /// Target bound on how long a fast commit stays non-durable, in milliseconds.
    pub vulnerability_window_ms: u64,
    /// Bytes of committed-but-not-durable log before commits wait.
    pub backlog_bytes_max: u64,
    /// Bytes one transaction may write.
    pub txn_bytes_max: u64,
    /// Writes (rows and index entries) one transaction may make.
    pub txn_writes_max: usize,
    /// Keys and ranges one transaction may read and have validated.
    pub txn_reads_max: usize,
    /// Rows one statement may hold in memory (53200 beyond).
    pub rows_max: usize,
    /// Statement text size limit in bytes.
    pub statement_bytes_max: usize,
    /// Memory for stored rows, in bytes.
    pub memory_bytes_max: u64,
    /// Log space zero-filled ahead of the log, at most this many bytes per extension (0: none;
    /// every flush then appends and its fdatasync also commits the file's new size).
    pub log_preallocate_bytes: u64,
    /// Authentication.
    pub auth: AuthConfig,
    /// TLS.
    pub tls: TlsConfig,
    /// How long SIGTERM waits for running statements before closing anyway, in seconds.
    pub shutdown_grace_s: u64,
    /// Tests only: run the engine on a fault-injecting file system and enable
    /// `kiln_fault_fail_syncs(n)`.
    pub fault_injection: bool,
    /// Run as one node of a cluster.
    pub cluster: Option<ClusterConfig>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            data_dir: PathBuf::from("kiln-data"),
            listen: "127.0.0.1:5433".parse().expect("valid address"),
            metrics_listen: Some("127.0.0.1:9187".parse().expect("valid address")),
            max_connections: 100,
            synchronous_commit: true,
            default_isolation: "read committed".into(),
            commit_model: "eventually-durable".into(),
            vulnerability_window_ms: 10,
            backlog_bytes_max: 64 << 20,
            txn_bytes_max: 128 << 20,
            txn_writes_max: 4 << 20,
            txn_reads_max: 4 << 20,
            rows_max: 10_000_000,
            statement_bytes_max: 16 << 20,
            memory_bytes_max: 8 << 30,
            log_preallocate_bytes: kiln_sql::engine_config::Config::default().log_preallocate_bytes,
            auth: AuthConfig::default(),
            tls: TlsConfig::default(),
            shutdown_grace_s: 30,
            fault_injection: false,
            cluster: None,
        }
    }
}

impl ServerConfig {
    /// Reads a TOML file over the defaults.
    pub fn from_toml_file(path: &std::path::Path) -> Result<ServerConfig, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The engine configuration these settings imply (with the fault switches when fault
    /// injection is on).
    pub fn engine_config(
        &self,
        faults: Option<&std::sync::Arc<kiln_sql::engine_config::Faults>>,
    ) -> Result<kiln_sql::engine_config::Config, String> {
        let commit_model = match self.commit_model.as_str() {
            "eventually-durable" | "ed" => kiln_sql::engine_config::CommitModel::EventuallyDurable,
            "classic" => kiln_sql::engine_config::CommitModel::Classic,
            other => {
                return Err(format!(
                    "commit_model must be eventually-durable or classic, not {other}"
                ))
            }
        };
        let vfs: std::sync::Arc<dyn kiln_sql::engine_config::Vfs> = match faults {
            Some(f) => std::sync::Arc::new(kiln_sql::engine_config::FaultyVfs::new(f.clone())),
            None => std::sync::Arc::new(kiln_sql::engine_config::OsVfs),
        };
        Ok(kiln_sql::engine_config::Config {
            vfs,
            commit_model,
            vulnerability_window: Duration::from_millis(self.vulnerability_window_ms),
            backlog_bytes_max: self.backlog_bytes_max,
            txn_bytes_max: self.txn_bytes_max,
            memory_bytes_max: self.memory_bytes_max,
            txn_writes_max: self.txn_writes_max,
            txn_reads_max: self.txn_reads_max,
            log_preallocate_bytes: self.log_preallocate_bytes,
            replicated_log: self.cluster.is_some(),
            ..kiln_sql::engine_config::Config::default()
        })
    }

    /// The SQL layer's settings.
    pub fn session_config(
        &self,
        faults: Option<std::sync::Arc<kiln_sql::engine_config::Faults>>,
    ) -> Result<kiln_sql::SessionConfig, String> {
        let default_isolation = match self.default_isolation.to_lowercase().replace(['_', '-'], " ").as_str() {
            "read committed" => kiln_sql::engine_config::IsolationLevel::ReadCommitted,
            "repeatable read" => kiln_sql::engine_config::IsolationLevel::RepeatableRead,
            "serializable" => kiln_sql::engine_config::IsolationLevel::Serializable,
            other => return Err(format!("default_isolation must be read committed, repeatable read or serializable, not {other}")),
        };
        Ok(kiln_sql::SessionConfig {
            synchronous_commit: self.synchronous_commit,
            default_isolation,
            rows_max: self.rows_max,
            statement_bytes_max: self.statement_bytes_max,
            faults,
            durability_level: match &self.cluster {
                Some(cluster) => cluster.level()?,
                None => kiln_sql::engine_config::DurabilityLevel::Quorum,
            },
        })
    }
}
