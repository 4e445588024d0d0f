//! Three nodes in one process that talk over loopback TCP, authenticated with the cluster
//! secret: a leader is elected, safe commits reach a quorum, and when the leader stops the
//! other two elect a new one and go on committing, until they have purged the log the old
//! leader would need: restarted, it is sent a snapshot over TCP and catches up.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kiln_engine::{CommitMode, Config, Engine, Scan, TxnOptions, TxnStatus};
use kiln_replication::tcp::{self, ClusterAuth, TcpNetwork};
use kiln_replication::{Member, Node, NodeConfig};

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

async fn eventually(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Small segments and checkpoints, and a short log kept behind snapshots, so that a node
/// away for a few hundred commits needs a snapshot.
fn engine_config() -> Config {
    Config {
        replicated_log: true,
        segment_bytes_max: 32 << 10,
        checkpoint_log_bytes: 64 << 10,
        ..Config::default()
    }
}

async fn start_node(
    id: u64,
    dir: &std::path::Path,
    listener: tokio::net::TcpListener,
    auth: &ClusterAuth,
) -> (Node, tokio::task::JoinHandle<()>) {
    let engine_dir = dir.join("engine");
    let engine = blocking(move || Engine::open(engine_dir, engine_config())).await.unwrap();
    let config =
        NodeConfig { log_kept_behind_snapshot: 20, ..NodeConfig::new(id, dir.join("raft")) };
    let node = Node::start(config, engine, TcpNetwork::new(id, auth.clone())).await.unwrap();
    let engine = node.engine().clone();
    let server = tcp::serve(listener, node.raft.clone(), engine, auth.clone(), id);
    (node, server)
}

async fn rows(engine: &Engine) -> Vec<(Vec<u8>, Vec<u8>)> {
    let engine = engine.clone();
    blocking(move || {
        engine.begin(TxnOptions::new().read_only()).unwrap().scan("kv", Scan::all()).unwrap()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_over_tcp_replicate_fail_over_and_send_snapshots() {
    let auth = ClusterAuth::new("tcp-test", b"sixteen bytes or more").unwrap();
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut listeners = Vec::new();
    let mut members = BTreeMap::new();
    for id in 1..=3u64 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let member = Member {
            raft_addr: listener.local_addr().unwrap().to_string(),
            sql_addr: String::new(),
            site: format!("site-{id}"),
        };
        members.insert(id, member);
        listeners.push(listener);
    }
    let mut nodes = Vec::new();
    let mut servers = Vec::new();
    for (i, listener) in listeners.into_iter().enumerate() {
        let (node, server) = start_node(i as u64 + 1, dirs[i].path(), listener, &auth).await;
        servers.push(server);
        nodes.push(Some(node));
    }
    // Every node is told the same members; initializing more than one of them is allowed.
    for node in nodes.iter().flatten() {
        let _ = node.raft.initialize(members.clone()).await;
    }

    let leader_of = |nodes: &[Option<Node>]| {
        nodes.iter().position(|n| n.as_ref().is_some_and(|n| n.engine().leading_term().is_some()))
    };
    eventually(20, "a node leads", || leader_of(&nodes).is_some()).await;
    let first = leader_of(&nodes).unwrap();
    let put = |engine: Engine, key: String| {
        blocking(move || {
            let mut txn = engine.begin(TxnOptions::new())?;
            txn.put("kv", key.as_bytes(), &[b'v'; 300])?;
            txn.commit_with(CommitMode::Safe)
        })
    };
    let mut ids = Vec::new();
    for i in 0..10 {
        let engine = nodes[first].as_ref().unwrap().engine().clone();
        ids.push(put(engine, format!("k{i}")).await.unwrap());
    }
    for node in nodes.iter().flatten() {
        let engine = node.engine().clone();
        let last = *ids.last().unwrap();
        eventually(10, "every node has the commits", || engine.status(last) == TxnStatus::Durable)
            .await;
    }

    // The leader stops; the other two elect a new leader and commit with their quorum.
    let old = nodes[first].take().unwrap();
    servers[first].abort();
    let old_engine = old.engine().clone();
    let old_last = old_engine.log_position().unwrap().last.unwrap().1;
    old.shutdown().await;
    blocking(move || old_engine.close()).await.unwrap();
    eventually(20, "another node leads", || leader_of(&nodes).is_some()).await;
    let second = leader_of(&nodes).unwrap();
    let engine = nodes[second].as_ref().unwrap().engine().clone();
    let after = put(engine.clone(), "after".into()).await.unwrap();
    assert!(after.epoch > ids[0].epoch);
    for node in nodes.iter().flatten() {
        let engine = node.engine().clone();
        eventually(10, "both nodes have the new commit", || {
            engine.status(after) == TxnStatus::Durable
        })
        .await;
        for id in &ids {
            assert_eq!(node.engine().status(*id), TxnStatus::Durable);
        }
    }

    // The two go on until both have purged the log the stopped node would need.
    let mut last = after;
    for i in 0..300 {
        last = put(engine.clone(), format!("more{i}")).await.unwrap();
    }
    for node in nodes.iter().flatten() {
        let engine = node.engine().clone();
        eventually(20, "a snapshot and a purge beyond the stopped node's log", || {
            let first_on_disk = engine.log_position().unwrap().first.map_or(0, |(_, i)| i);
            engine.status(last) == TxnStatus::Durable && first_on_disk > old_last + 1
        })
        .await;
    }

    // Restarted, the old leader is sent a snapshot over TCP, then the rest of the log.
    let listener =
        tokio::net::TcpListener::bind(&members[&(first as u64 + 1)].raft_addr).await.unwrap();
    let (node, server) = start_node(first as u64 + 1, dirs[first].path(), listener, &auth).await;
    servers[first] = server;
    let back = node.engine().clone();
    nodes[first] = Some(node);
    let final_commit = put(engine.clone(), "final".into()).await.unwrap();
    eventually(30, "the restarted node catches up", || {
        back.status(final_commit) == TxnStatus::Durable
    })
    .await;
    let installed = back.newest_checkpoint().and_then(|c| c.log).map_or(0, |l| l.index);
    assert!(installed > old_last, "the restarted node was sent a snapshot");
    assert_eq!(rows(&back).await, rows(&engine).await);
    assert_eq!(rows(&back).await.len(), 312);
    for id in ids.iter().chain([&after, &last]) {
        assert_eq!(back.status(*id), TxnStatus::Durable);
    }

    for server in servers {
        server.abort();
    }
    for node in nodes.into_iter().flatten() {
        let engine = node.engine().clone();
        node.shutdown().await;
        blocking(move || engine.close()).await.unwrap();
    }
}
