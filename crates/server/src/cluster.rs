//! A server that is one node of a cluster: the Raft node over the database's engine, its
//! TCP listener for other nodes, the catalog bootstrap a new leader runs, and what
//! `kiln_cluster` shows.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kiln_replication::tcp::{self, ClusterAuth, TcpNetwork};
use kiln_replication::{Member, Node, NodeConfig};
use kiln_sql::{ClusterAdmin, ClusterChangeError, ClusterMember, Database};
use tracing::{info, warn};

use crate::config::ClusterConfig;

/// The cluster side of a running server.
pub(crate) struct ClusterNode {
    runtime: tokio::runtime::Runtime,
    node: Option<Node>,
    listener: tokio::task::JoinHandle<()>,
    stop: Arc<AtomicBool>,
}

/// How often a node checks whether it has just become the leader (to bootstrap the catalog).
const BOOTSTRAP_POLL: Duration = Duration::from_millis(50);

impl ClusterNode {
    /// Starts node `config.node_id` over `db`'s engine (opened with a replicated log), with
    /// its Raft state in `data_dir/raft`.
    pub(crate) fn start(
        config: &ClusterConfig,
        data_dir: &std::path::Path,
        db: &Arc<Database>,
    ) -> Result<ClusterNode, String> {
        let secret = config.validate()?;
        let auth = ClusterAuth::new(&config.name, &secret)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("kiln-raft")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the cluster runtime: {e}"))?;
        let raft_listen: SocketAddr = config.raft_listen.expect("validated");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(raft_listen))
            .map_err(|e| format!("cannot listen on {raft_listen} for the cluster: {e}"))?;
        let node_config = NodeConfig {
            id: config.node_id,
            state_dir: data_dir.join("raft"),
            heartbeat: Duration::from_millis(config.heartbeat_ms),
            election_timeout: (
                Duration::from_millis(config.election_timeout_ms),
                Duration::from_millis(2 * config.election_timeout_ms),
            ),
            log_kept_behind_snapshot: config.log_kept_behind_snapshot,
        };
        let engine = db.engine().clone();
        let network = TcpNetwork::new(config.node_id, auth.clone());
        let node = runtime
            .block_on(Node::start(node_config, engine, network))
            .map_err(|e| format!("cannot start the cluster node: {e}"))?;
        let raft = node.raft.clone();
        let listener = runtime.spawn({
            let (raft, engine, id) = (raft.clone(), node.engine().clone(), config.node_id);
            async move {
                let _ = tcp::serve(listener, raft, engine, auth, id).await;
            }
        });
        let members: std::collections::BTreeMap<u64, Member> = config
            .members
            .iter()
            .map(|m| {
                let member = Member {
                    raft_addr: m.raft.clone(),
                    sql_addr: m.sql.clone(),
                    site: m.site.clone(),
                };
                (m.id, member)
            })
            .collect();
        let join = config.join;
        runtime.block_on(async {
            // Every node is given the same members; the first to ask forms the cluster, and
            // the others' attempts are refused harmlessly once they hear from it.
            match raft.is_initialized().await {
                Ok(false) if join => {
                    info!("waiting for the cluster's leader to add this node")
                }
                Ok(false) => {
                    if let Err(e) = raft.initialize(members).await {
                        info!(error = %e, "the cluster was formed elsewhere");
                    }
                }
                Ok(true) => {}
                Err(e) => warn!(error = %e, "cannot ask the Raft core whether it is initialized"),
            }
        });
        let (view_raft, view_engine) = (raft.clone(), db.engine().clone());
        let id = config.node_id;
        db.set_cluster_view(Arc::new(move || {
            members_view(kiln_replication::members(&view_raft, &view_engine, id))
        }));

        db.set_cluster_admin(Arc::new(Admin {
            raft: raft.clone(),
            runtime: runtime.handle().clone(),
        }));

        let stop = Arc::new(AtomicBool::new(false));
        let (stop_flag, db) = (stop.clone(), db.clone());
        std::thread::Builder::new()
            .name("kiln-bootstrap".into())
            .spawn(move || bootstrap_when_leading(&db, &stop_flag))
            .map_err(|e| e.to_string())?;
        info!(node = config.node_id, raft = %raft_listen, cluster = %config.name, "cluster node started");
        Ok(ClusterNode { runtime, node: Some(node), listener, stop })
    }

    /// Stops the node: no more Raft messages in or out, and the engine stops leading.
    pub(crate) fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.listener.abort();
        if let Some(node) = self.node.take() {
            self.runtime.block_on(node.shutdown());
        }
        self.runtime.shutdown_timeout(Duration::from_secs(1));
    }
}

/// Creates the catalog's databases each time this node begins leading a term, if they are
/// missing (a new cluster's first leader; a no-op after).
fn bootstrap_when_leading(db: &Database, stop: &AtomicBool) {
    let mut done_in = None;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(BOOTSTRAP_POLL);
        let Some(term) = db.engine().leading_term() else { continue };
        if done_in == Some(term) {
            continue;
        }
        match db.bootstrap() {
            Ok(created) => {
                if created {
                    info!(term, "created the kiln and postgres databases");
                }
                done_in = Some(term);
            }
            Err(e) => {
                warn!(term, error = %e.message, "could not create the catalog's databases yet")
            }
        }
    }
}

/// Membership changes on this node's Raft instance, for the SQL functions.
struct Admin {
    raft: kiln_replication::Raft,
    runtime: tokio::runtime::Handle,
}

impl Admin {
    /// Runs `change` on the cluster runtime, waiting for it in slices so that the session can
    /// give up (the change then goes on without it).
    fn wait<F>(&self, change: F, interrupted: &dyn Fn() -> bool) -> Result<(), ClusterChangeError>
    where
        F: std::future::Future<Output = Result<(), kiln_replication::MembershipError>>
            + Send
            + 'static,
    {
        // The caller is a session's thread, which may itself be inside the server's runtime:
        // the result comes back over a channel rather than through `block_on`.
        let (tx, rx) = std::sync::mpsc::channel();
        self.runtime.spawn(async move {
            let _ = tx.send(change.await);
        });
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(result) => return result.map_err(change_error),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(ClusterChangeError::Failed("the cluster node stopped".into()))
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if interrupted() => {
                    return Err(ClusterChangeError::Failed(
                        "the session stopped waiting; the change goes on and may still complete"
                            .into(),
                    ))
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
    }
}

fn change_error(e: kiln_replication::MembershipError) -> ClusterChangeError {
    match e {
        kiln_replication::MembershipError::NotLeader(at) => ClusterChangeError::NotLeader(at),
        kiln_replication::MembershipError::Invalid(why) => ClusterChangeError::Invalid(why),
        kiln_replication::MembershipError::Failed(why) => ClusterChangeError::Failed(why),
    }
}

impl ClusterAdmin for Admin {
    fn sites(&self) -> Vec<String> {
        kiln_replication::sites(&self.raft)
    }

    fn add_node(
        &self,
        id: u64,
        raft_addr: &str,
        sql_addr: &str,
        site: &str,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<(), ClusterChangeError> {
        let member =
            Member { raft_addr: raft_addr.into(), sql_addr: sql_addr.into(), site: site.into() };
        let raft = self.raft.clone();
        info!(node = id, raft = raft_addr, "adding a node to the cluster");
        self.wait(async move { kiln_replication::add_voter(&raft, id, member).await }, interrupted)
    }

    fn remove_node(
        &self,
        id: u64,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<(), ClusterChangeError> {
        let raft = self.raft.clone();
        info!(node = id, "removing a node from the cluster");
        self.wait(async move { kiln_replication::remove_node(&raft, id).await }, interrupted)
    }
}

/// `kiln_cluster`: every member as this node sees it.
fn members_view(members: Vec<kiln_replication::MemberStatus>) -> Vec<ClusterMember> {
    members
        .into_iter()
        .map(|m| ClusterMember {
            node_id: m.node_id as i64,
            role: m.role.into(),
            is_self: m.is_self,
            site: m.member.site,
            sql_addr: m.member.sql_addr,
            raft_addr: m.member.raft_addr,
            term: m.term as i64,
            log_index: m.log_index.map(|i| i as i64),
            lag_entries: m.lag_entries.map(|i| i as i64),
            log_csn: m.log_csn.map(|i| i as i64),
            lag_csns: m.lag_csns.map(|i| i as i64),
            lag_bytes: m.lag_bytes.map(|i| i as i64),
            lag_ms: m.lag_time.map(|d| d.as_millis() as i64),
            last_heard_ms: m.last_heard.map(|d| d.as_millis() as i64),
        })
        .collect()
}
