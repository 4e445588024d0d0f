//! A three-node cluster in one process (real engines on disk, openraft, an in-process
//! network that can cut links): commits replicate and a safe commit returns once a quorum has
//! it; a leader cut off from the others keeps committing fast, a new leader is elected, and
//! when the old one comes back exactly its unreplicated commits are lost, on every node.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use kiln_engine::{
    Acknowledgement, CommitMode, Config, DurabilityLevel, Engine, Error, TxnId, TxnOptions,
    TxnStatus,
};
use kiln_replication::network::Router;
use kiln_replication::{Node, NodeConfig};

async fn start(id: u64, dir: &Path, router: &Router) -> Node {
    let engine_dir = dir.join("engine");
    let engine = tokio::task::spawn_blocking(move || {
        Engine::open(engine_dir, Config { replicated_log: true, ..Config::default() })
    })
    .await
    .unwrap()
    .unwrap();
    let config = NodeConfig::new(id, dir.join("raft"));
    let node = Node::start(config, engine, router.network(id)).await.unwrap();
    router.register(id, node.raft.clone());
    node
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

async fn put(
    engine: &Engine,
    key: &str,
    value: &str,
    mode: CommitMode,
) -> kiln_engine::Result<TxnId> {
    let (engine, key, value) = (engine.clone(), key.to_string(), value.to_string());
    blocking(move || {
        let mut txn = engine.begin(TxnOptions::new())?;
        txn.put("kv", key.as_bytes(), value.as_bytes())?;
        txn.commit_with(mode)
    })
    .await
}

/// A safe commit at `level`.
async fn put_at(engine: &Engine, key: &str, level: DurabilityLevel) -> kiln_engine::Result<TxnId> {
    let (engine, key) = (engine.clone(), key.to_string());
    blocking(move || {
        let mut txn = engine.begin(TxnOptions::new())?;
        txn.put("kv", key.as_bytes(), b"v")?;
        txn.commit_point(CommitMode::Safe)?.at_level(level).acknowledge()
    })
    .await
}

async fn get(engine: &Engine, key: &str) -> Option<String> {
    let (engine, key) = (engine.clone(), key.to_string());
    blocking(move || {
        let mut txn = engine.begin(TxnOptions::new().read_only()).unwrap();
        txn.get("kv", key.as_bytes()).unwrap().map(|v| String::from_utf8(v).unwrap())
    })
    .await
}

/// Polls `check` until it holds, for at most `secs` seconds.
async fn eventually(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The index of the node whose engine leads, among `candidates`, once one does.
async fn leader(nodes: &[Node], candidates: &[usize]) -> usize {
    let mut found = None;
    eventually(20, "a node leads", || {
        found = candidates.iter().copied().find(|&i| nodes[i].engine().leading_term().is_some());
        found.is_some()
    })
    .await;
    found.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_replicates_fails_over_and_loses_exactly_the_unreplicated_commits() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let router = Router::default();
    let mut nodes = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        nodes.push(start(i as u64 + 1, dir.path(), &router).await);
    }
    let members: BTreeMap<u64, kiln_replication::Member> =
        (1..=3).map(|id| (id, kiln_replication::Member::default())).collect();
    nodes[0].raft.initialize(members).await.unwrap();

    // Safe commits return once a quorum has them; every node ends up with them.
    let first = leader(&nodes, &[0, 1, 2]).await;
    let mut safe = Vec::new();
    for i in 0..20 {
        let id = put(nodes[first].engine(), &format!("k{i}"), "v", CommitMode::Safe).await.unwrap();
        assert_eq!(nodes[first].engine().status(id), TxnStatus::Durable);
        safe.push(id);
    }
    for node in &nodes {
        let engine = node.engine().clone();
        let last = *safe.last().unwrap();
        eventually(10, "every node has the safe commits", || {
            engine.status(last) == TxnStatus::Durable
        })
        .await;
        assert_eq!(get(node.engine(), "k19").await, Some("v".into()));
    }
    let follower = (first + 1) % 3;
    assert!(matches!(
        put(nodes[follower].engine(), "x", "y", CommitMode::Fast).await,
        Err(Error::NotLeader { .. })
    ));

    // The leader is cut off: its fast commits stay in its own log, in doubt, until its lease
    // runs out (no quorum has answered for an election timeout) and it refuses commits.
    let others: Vec<usize> = (0..3).filter(|&i| i != first).collect();
    let other_ids: Vec<u64> = others.iter().map(|&i| i as u64 + 1).collect();
    router.set_partitioned(first as u64 + 1, &other_ids, true);
    let cut_at = Instant::now();
    // A safe commit there cannot reach a quorum: once the leader gives its term up, the
    // committer hears that the outcome is in doubt (it is not kept waiting).
    let in_doubt = tokio::spawn({
        let engine = nodes[first].engine().clone();
        async move { put(&engine, "in doubt", "v", CommitMode::Safe).await }
    });
    // The `local` level returns once the leader's own log has the commit, quorum or not;
    // a failover can still lose it.
    let local = put_at(nodes[first].engine(), "local", DurabilityLevel::Local).await.unwrap();
    assert_eq!(nodes[first].engine().status(local), TxnStatus::Committed);
    let mut stranded = vec![local];
    loop {
        match put(nodes[first].engine(), &format!("lost{}", stranded.len()), "v", CommitMode::Fast)
            .await
        {
            Ok(id) => stranded.push(id),
            Err(Error::NotLeader { .. }) => break,
            Err(e) => panic!("{e}"),
        }
        assert!(cut_at.elapsed() < Duration::from_secs(10), "a cut-off leader kept committing");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(stranded.len() > 1, "the leader committed nothing fast before its lease ran out");
    let in_doubt = match in_doubt.await.unwrap() {
        Err(Error::InDoubt { id }) => id,
        other => panic!("a safe commit without a quorum returned {other:?}"),
    };
    stranded.push(in_doubt);
    for id in &stranded {
        assert_eq!(nodes[first].engine().status(*id), TxnStatus::Committed);
    }

    // The others elect a new leader, which commits safely with the quorum they form.
    let second = leader(&nodes, &others).await;
    let after = put(nodes[second].engine(), "k0", "term 2", CommitMode::Safe).await.unwrap();
    assert!(after.epoch > safe[0].epoch, "a new term is a new epoch");

    // The old leader comes back: it follows, cuts its stranded commits, and they are lost on
    // every node; everything acknowledged safe is durable everywhere.
    router.set_partitioned(first as u64 + 1, &other_ids, false);
    for node in &nodes {
        let engine = node.engine().clone();
        eventually(20, "every node has the new leader's commit", || {
            engine.status(after) == TxnStatus::Durable
        })
        .await;
        for id in &stranded {
            assert_eq!(node.engine().status(*id), TxnStatus::Lost, "{id} on a node");
        }
        for id in &safe {
            assert_eq!(node.engine().status(*id), TxnStatus::Durable, "{id} on a node");
        }
        assert_eq!(get(node.engine(), "k0").await, Some("term 2".into()));
        assert_eq!(get(node.engine(), "lost0").await, None);
    }
    assert_eq!(nodes[first].engine().leading_term(), None);

    for node in nodes {
        let engine = node.engine().clone();
        node.shutdown().await;
        blocking(move || engine.close()).await.unwrap();
    }
}

fn site(name: &str) -> DurabilityLevel {
    DurabilityLevel::site(name).unwrap()
}

/// The levels beyond `quorum`: `all` waits for every voter and `site:<name>` for a node of
/// the site; with one follower cut off, neither is acknowledged for that follower's site (a
/// bounded wait comes back pending, never acknowledged), while `quorum` and the reachable
/// site are; once the link heals, the waiting commits reach their levels.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn levels_beyond_quorum_wait_for_every_voter_or_for_a_site() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let router = Router::default();
    let mut nodes = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        nodes.push(start(i as u64 + 1, dir.path(), &router).await);
    }
    // Each node is a site of its own: s1, s2, s3.
    let members: BTreeMap<u64, kiln_replication::Member> = (1..=3)
        .map(|id| (id, kiln_replication::Member { site: format!("s{id}"), ..Default::default() }))
        .collect();
    nodes[0].raft.initialize(members).await.unwrap();
    let first = leader(&nodes, &[0, 1, 2]).await;
    let engine = nodes[first].engine().clone();

    let all = put_at(&engine, "all", DurabilityLevel::All).await.unwrap();
    let names = |levels: Vec<DurabilityLevel>| {
        levels.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(",")
    };
    assert_eq!(names(engine.levels_reached(all)), "local,quorum,site:s1,site:s2,site:s3,all");
    for (i, _) in nodes.iter().enumerate() {
        put_at(&engine, "site", site(&format!("s{}", i + 1))).await.unwrap();
    }

    // Cut one follower off: the leader and the other follower still form a quorum.
    let far = (first + 1) % 3;
    let near = (first + 2) % 3;
    let far_site = format!("s{}", far + 1);
    let near_site = format!("s{}", near + 1);
    let ids = |idx: &[usize]| idx.iter().map(|&i| i as u64 + 1).collect::<Vec<_>>();
    router.set_partitioned(far as u64 + 1, &ids(&[first, near]), true);
    let quorum = put(&engine, "quorum", "v", CommitMode::Safe).await.unwrap();
    // The leader computes the marks beyond `quorum` as the followers' answers arrive.
    let near_level = format!("site:{near_site}");
    eventually(5, "the near site has the commit", || {
        names(engine.levels_reached(quorum)).contains(&near_level)
    })
    .await;
    let reached = names(engine.levels_reached(quorum));
    assert!(reached.starts_with("local,quorum"), "{reached}");
    assert!(
        !reached.contains(&format!("site:{far_site}")) && !reached.ends_with("all"),
        "{reached}"
    );
    put_at(&engine, "near", site(&near_site)).await.unwrap();

    // Commits at `all` and at the far site wait; a bounded wait hands the commit back.
    let pending = |level: DurabilityLevel| {
        let engine = engine.clone();
        blocking(move || {
            let mut txn = engine.begin(TxnOptions::new()).unwrap();
            txn.put("kv", b"pending", b"v").unwrap();
            let committed = txn.commit_point(CommitMode::Safe).unwrap().at_level(level);
            match committed.acknowledge_within(Duration::from_millis(300)).unwrap() {
                Acknowledgement::Pending(c) => c,
                Acknowledgement::Acknowledged(id) => panic!("{id} acknowledged without its level"),
            }
        })
    };
    let waiting_all = pending(DurabilityLevel::All).await;
    let waiting_far = pending(site(&far_site)).await;
    assert_eq!(engine.status(waiting_all.id()), TxnStatus::Durable, "durable on a quorum");
    let (status, reached) = {
        let (engine, id) = (engine.clone(), waiting_all.id());
        blocking(move || engine.wait_level(id, Duration::from_millis(100), &DurabilityLevel::All))
            .await
            .unwrap()
    };
    assert_eq!((status, reached), (TxnStatus::Durable, false));

    // Healed, the far follower catches up and both reach their levels.
    router.set_partitioned(far as u64 + 1, &ids(&[first, near]), false);
    let (id_all, id_far) = (waiting_all.id(), waiting_far.id());
    blocking(move || {
        waiting_all.acknowledge().unwrap();
        waiting_far.acknowledge().unwrap();
    })
    .await;
    for id in [id_all, id_far, quorum] {
        assert_eq!(
            names(engine.levels_reached(id)),
            "local,quorum,site:s1,site:s2,site:s3,all",
            "{id}"
        );
    }
    // A follower knows `local` and `quorum`; the levels beyond are the leader's to compute.
    let follower = nodes[near].engine().clone();
    eventually(10, "the follower has the commit", || follower.status(id_all) == TxnStatus::Durable)
        .await;
    assert!(matches!(
        blocking(move || follower.wait_level(
            id_all,
            Duration::from_millis(50),
            &DurabilityLevel::All
        ))
        .await,
        Err(Error::LevelUnconfirmed { .. })
    ));

    for node in nodes {
        let engine = node.engine().clone();
        node.shutdown().await;
        blocking(move || engine.close()).await.unwrap();
    }
}
