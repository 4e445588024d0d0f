//! Snapshots through the Raft library: with small checkpoints and a short log kept behind
//! them, the leader and an up-to-date follower purge their logs; a follower cut off for longer
//! than the log keeps is sent the leader's snapshot when it comes back, ends with the same
//! rows and statuses (rows deleted meanwhile are gone there too), and keeps them across a
//! restart; a node added after the purge starts from the snapshot as well.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use kiln_engine::{CommitMode, Config, Engine, Scan, TxnId, TxnOptions, TxnStatus};
use kiln_replication::network::Router;
use kiln_replication::{Member, Node, NodeConfig};

fn engine_config() -> Config {
    Config {
        replicated_log: true,
        segment_bytes_max: 32 << 10,
        checkpoint_log_bytes: 64 << 10,
        ..Config::default()
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

async fn start(id: u64, dir: &Path, router: &Router) -> Node {
    let engine_dir = dir.join("engine");
    let engine = blocking(move || Engine::open(engine_dir, engine_config())).await.unwrap();
    let config =
        NodeConfig { log_kept_behind_snapshot: 20, ..NodeConfig::new(id, dir.join("raft")) };
    let node = Node::start(config, engine, router.network(id)).await.unwrap();
    router.register(id, node.raft.clone());
    node
}

async fn stop(node: Node) {
    let engine = node.engine().clone();
    node.shutdown().await;
    blocking(move || engine.close()).await.unwrap();
}

async fn eventually(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn rows(engine: &Engine) -> Vec<(Vec<u8>, Vec<u8>)> {
    let engine = engine.clone();
    blocking(move || {
        let mut txn = engine.begin(TxnOptions::new().read_only()).unwrap();
        txn.scan("kv", Scan::all()).unwrap()
    })
    .await
}

/// One transaction: puts `puts` keys with a 300-byte value and deletes `deletes`.
async fn write(engine: &Engine, puts: &[String], deletes: &[String], mode: CommitMode) -> TxnId {
    let (engine, puts, deletes) = (engine.clone(), puts.to_vec(), deletes.to_vec());
    blocking(move || {
        let mut txn = engine.begin(TxnOptions::new()).unwrap();
        for key in &puts {
            txn.put("kv", key.as_bytes(), &[b'v'; 300]).unwrap();
        }
        for key in &deletes {
            txn.delete("kv", key.as_bytes()).unwrap();
        }
        txn.commit_with(mode).unwrap()
    })
    .await
}

fn first_on_disk(node: &Node) -> u64 {
    node.engine().log_position().unwrap().first.map_or(0, |(_, index)| index)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_behind_the_purged_log_is_sent_a_snapshot_and_keeps_it_across_a_restart() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    let router = Router::default();
    let mut nodes = Vec::new();
    for (i, dir) in dirs.iter().take(3).enumerate() {
        nodes.push(start(i as u64 + 1, dir.path(), &router).await);
    }
    let members: BTreeMap<u64, Member> = (1..=3).map(|id| (id, Member::default())).collect();
    nodes[0].raft.initialize(members).await.unwrap();
    let mut leader = None;
    eventually(20, "a node leads", || {
        leader = (0..3).find(|&i| nodes[i].engine().leading_term().is_some());
        leader.is_some()
    })
    .await;
    let leader = leader.unwrap();
    let (near, far) = ((leader + 1) % 3, (leader + 2) % 3);
    let engine = nodes[leader].engine().clone();

    // Rows every node has; the cluster deletes them while `far` is away.
    let doomed: Vec<String> = (0..20).map(|i| format!("doomed{i:02}")).collect();
    let early = write(&engine, &doomed, &[], CommitMode::Safe).await;
    let far_engine = nodes[far].engine().clone();
    eventually(10, "the far follower has the early rows", || {
        far_engine.status(early) == TxnStatus::Durable
    })
    .await;
    assert_eq!(rows(&far_engine).await.len(), 20);

    let others: Vec<u64> = [leader, near].iter().map(|&i| i as u64 + 1).collect();
    router.set_partitioned(far as u64 + 1, &others, true);
    let mut ids = vec![early];
    for i in 0..400 {
        let keys = vec![format!("k{i:04}")];
        let deletes: Vec<String> = doomed.get(i).cloned().into_iter().collect();
        let mode = if i % 10 == 0 { CommitMode::Safe } else { CommitMode::Fast };
        ids.push(write(&engine, &keys, &deletes, mode).await);
    }
    let last = *ids.last().unwrap();
    let near_engine = nodes[near].engine().clone();
    eventually(20, "the near follower has everything", || {
        near_engine.status(last) == TxnStatus::Durable
    })
    .await;
    // Snapshots were taken and the logs purged behind them, on the leader and on the
    // follower that kept up (each takes its own).
    let far_last = far_engine.log_position().unwrap().last.unwrap().1;
    for i in [leader, near] {
        let node = &nodes[i];
        eventually(20, "a snapshot beyond the far follower's log, and a purge", || {
            let taken =
                node.engine().newest_checkpoint().and_then(|c| c.log).map_or(0, |l| l.index);
            taken > far_last + 20 && first_on_disk(node) > far_last + 1
        })
        .await;
    }

    // Healed, the far follower is sent the leader's snapshot (its log ends before what the
    // leader holds) and then the rest of the log.
    router.set_partitioned(far as u64 + 1, &others, false);
    let after = write(&engine, &["after".to_string()], &[], CommitMode::Safe).await;
    eventually(30, "the far follower catches up", || {
        far_engine.status(after) == TxnStatus::Durable
    })
    .await;
    let installed = far_engine.newest_checkpoint().expect("the far follower holds a snapshot");
    assert!(installed.log.unwrap().index > far_last);
    let expected = rows(&engine).await;
    assert_eq!(expected.len(), 401, "400 keys and `after`; the doomed rows are gone");
    assert_eq!(rows(&far_engine).await, expected);
    for id in [early, ids[1], ids[200], last, after] {
        assert_eq!(far_engine.status(id), TxnStatus::Durable, "{id}");
    }

    // Restarted, it comes back from its snapshot and log with the same rows and statuses,
    // and follows on.
    let far_node = nodes.remove(far);
    router.unregister(far as u64 + 1);
    stop(far_node).await;
    let far_node = start(far as u64 + 1, dirs[far].path(), &router).await;
    let far_engine = far_node.engine().clone();
    eventually(20, "the restarted follower knows the last commit", || {
        far_engine.status(after) == TxnStatus::Durable
    })
    .await;
    assert_eq!(rows(&far_engine).await, expected);
    let later = write(&engine, &["later".to_string()], &[], CommitMode::Safe).await;
    eventually(20, "the restarted follower follows", || {
        far_engine.status(later) == TxnStatus::Durable
    })
    .await;
    nodes.insert(far, far_node);

    // A node added now starts from a snapshot too: the log's beginning is gone.
    let added = start(4, dirs[3].path(), &router).await;
    let leader_raft = nodes[leader].raft.clone();
    leader_raft.add_learner(4, Member::default(), true).await.unwrap();
    let added_engine = added.engine().clone();
    eventually(30, "the added node catches up", || {
        added_engine.status(later) == TxnStatus::Durable
    })
    .await;
    assert!(added_engine.newest_checkpoint().is_some(), "the added node started from a snapshot");
    let mut want = expected.clone();
    want.push((b"later".to_vec(), vec![b'v'; 300]));
    want.sort();
    assert_eq!(rows(&added_engine).await, want);

    stop(added).await;
    for node in nodes {
        stop(node).await;
    }
}
