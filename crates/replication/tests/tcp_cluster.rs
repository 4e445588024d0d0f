//! Three nodes in one process that talk over loopback TCP, authenticated with the cluster
//! secret: a leader is elected, safe commits reach a quorum, and when the leader stops the
//! other two elect a new one and go on committing.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kiln_engine::{CommitMode, Config, Engine, TxnOptions, TxnStatus};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_over_tcp_replicate_and_fail_over() {
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
        let id = i as u64 + 1;
        let dir = dirs[i].path().to_path_buf();
        let engine = blocking(move || {
            Engine::open(dir.join("engine"), Config { replicated_log: true, ..Config::default() })
        })
        .await
        .unwrap();
        let config = NodeConfig::new(id, dirs[i].path().join("raft"));
        let node = Node::start(config, engine, TcpNetwork::new(id, auth.clone())).await.unwrap();
        let engine = node.engine().clone();
        servers.push(tcp::serve(listener, node.raft.clone(), engine, auth.clone(), id));
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
            txn.put("kv", key.as_bytes(), b"v")?;
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
    old.shutdown().await;
    blocking(move || old_engine.close()).await.unwrap();
    eventually(20, "another node leads", || leader_of(&nodes).is_some()).await;
    let second = leader_of(&nodes).unwrap();
    let engine = nodes[second].as_ref().unwrap().engine().clone();
    let after = put(engine, "after".into()).await.unwrap();
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
    for node in nodes.into_iter().flatten() {
        let engine = node.engine().clone();
        node.shutdown().await;
        blocking(move || engine.close()).await.unwrap();
    }
}
