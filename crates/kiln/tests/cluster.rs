//! A three-node cluster of real `kiln serve` processes on loopback: writes go to the leader
//! and replicate, a follower serves reads and answers writes with 25006 and the leader's
//! address, `kiln_cluster` lists the nodes. The leader is killed (SIGKILL) after a mix of
//! safe and fast commits: a new leader is elected, every acknowledged safe commit is on it,
//! every fast one is durable and present or lost and absent (the lost ones a suffix), and
//! the killed node, restarted, catches up and answers the same statuses.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

/// A free loopback port (bound and released; the small race is acceptable in a test).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Cluster {
    sql: Vec<u16>,
    raft: Vec<u16>,
    secret: std::path::PathBuf,
    nodes: Vec<Option<common::Kiln>>,
    dirs: Vec<tempfile::TempDir>,
}

impl Cluster {
    fn start(n: usize) -> Cluster {
        let dirs: Vec<_> = (0..=n).map(|_| tempfile::tempdir().unwrap()).collect();
        let secret = dirs[n].path().join("secret");
        std::fs::write(&secret, "a test cluster's shared secret\n").unwrap();
        let mut cluster = Cluster {
            sql: (0..n).map(|_| free_port()).collect(),
            raft: (0..n).map(|_| free_port()).collect(),
            secret,
            nodes: (0..n).map(|_| None).collect(),
            dirs,
        };
        for i in 0..n {
            cluster.start_node(i);
        }
        cluster
    }

    fn start_node(&mut self, i: usize) {
        let members: Vec<String> = (0..self.sql.len())
            .map(|j| {
                format!(
                    "{}=127.0.0.1:{},127.0.0.1:{},site-{}",
                    j + 1,
                    self.raft[j],
                    self.sql[j],
                    j + 1
                )
            })
            .collect();
        let id = (i + 1).to_string();
        let raft = format!("127.0.0.1:{}", self.raft[i]);
        let secret = self.secret.to_str().unwrap().to_string();
        let mut args =
            vec!["--node-id", &id, "--raft-listen", &raft, "--cluster-secret-file", &secret];
        for m in &members {
            args.push("--member");
            args.push(m);
        }
        let dir: &Path = self.dirs[i].path();
        let listen = format!("127.0.0.1:{}", self.sql[i]);
        self.nodes[i] = Some(common::Kiln::start_at(dir, &listen, &args));
    }

    fn conninfo(&self, i: usize) -> String {
        format!("host=127.0.0.1 port={} user=kiln dbname=kiln connect_timeout=5", self.sql[i])
    }
}

async fn connect(conninfo: &str) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(conninfo, NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

/// The node (index) that says it leads, asking each of `candidates`, within 30 s.
async fn leader(cluster: &Cluster, candidates: &[usize]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for &i in candidates {
            if let Ok(client) = connect(&cluster.conninfo(i)).await {
                let q = "SELECT value FROM kiln_stat WHERE name = 'leading_term'";
                if let Ok(row) = client.query_one(q, &[]).await {
                    if row.get::<_, i64>(0) > 0 {
                        return i;
                    }
                }
            }
        }
        assert!(Instant::now() < deadline, "no leader among {candidates:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn status(client: &Client, id: &str) -> String {
    client.query_one("SELECT kiln_txn_status($1)", &[&id]).await.unwrap().get(0)
}

/// Polls `check` until it holds, for at most `secs` seconds.
async fn eventually<F: std::future::Future<Output = bool>>(
    secs: u64,
    what: &str,
    mut check: impl FnMut() -> F,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_of_processes_fails_over_and_loses_only_an_unreplicated_suffix() {
    let mut cluster = Cluster::start(3);
    let first = leader(&cluster, &[0, 1, 2]).await;
    // The leader creates the catalog's databases when it begins; wait until it has.
    let deadline = Instant::now() + Duration::from_secs(20);
    let client = loop {
        if let Ok(client) = connect(&cluster.conninfo(first)).await {
            break client;
        }
        assert!(Instant::now() < deadline, "the leader takes no connections");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    client.batch_execute("CREATE TABLE acc (id int PRIMARY KEY, v text)").await.unwrap();

    // Safe commits (the default) return once a quorum has them; fast ones at their commit.
    let mut safe = Vec::new();
    for i in 0..30 {
        client.execute("INSERT INTO acc VALUES ($1, 'safe')", &[&i]).await.unwrap();
        safe.push((
            i,
            client.query_one("SELECT kiln_last_txid()", &[]).await.unwrap().get::<_, String>(0),
        ));
    }
    let members: Vec<(i64, String, bool)> = client
        .query("SELECT node_id, role, is_self FROM kiln_cluster ORDER BY node_id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(members.len(), 3);
    assert_eq!(members[first], (first as i64 + 1, "leader".to_string(), true));

    // The leader sees its followers catch up, in commits.
    eventually(10, "the followers lag by no commit", || async {
        let q = "SELECT count(*) FROM kiln_cluster WHERE NOT is_self AND lag_csns = 0";
        let n: i64 = client.query_one(q, &[]).await.unwrap().get(0);
        n == 2
    })
    .await;

    // A follower serves reads at the committed watermark and refuses writes, naming the leader.
    let follower = (first + 1) % 3;
    let reader = connect(&cluster.conninfo(follower)).await.unwrap();
    eventually(10, "the follower reads the safe commits", || async {
        let n: i64 = reader.query_one("SELECT count(*) FROM acc", &[]).await.unwrap().get(0);
        n >= 30
    })
    .await;
    let err = reader.execute("INSERT INTO acc VALUES (-1, 'x')", &[]).await.unwrap_err();
    let db = err.as_db_error().expect("a database error");
    assert_eq!(*db.code(), SqlState::READ_ONLY_SQL_TRANSACTION);
    let leader_addr = format!("127.0.0.1:{}", cluster.sql[first]);
    assert!(db.hint().unwrap_or("").contains(&leader_addr), "{:?}", db.hint());

    // A session token: a read on a follower after `kiln.read_after` sees that commit (it
    // waits until the follower has it); one the cluster never made times out.
    client.execute("INSERT INTO acc VALUES (30, 'token')", &[]).await.unwrap();
    let token: String = client.query_one("SELECT kiln_last_txid()", &[]).await.unwrap().get(0);
    let other = connect(&cluster.conninfo((first + 2) % 3)).await.unwrap();
    other.batch_execute(&format!("SET kiln.read_after = '{token}'")).await.unwrap();
    let n: i64 =
        other.query_one("SELECT count(*) FROM acc WHERE id = 30", &[]).await.unwrap().get(0);
    assert_eq!(n, 1, "read after {token} on a follower");
    other
        .batch_execute("SET kiln.read_after = '999.1'; SET kiln.read_after_timeout = 200")
        .await
        .unwrap();
    let err = other.query_one("SELECT 1", &[]).await.unwrap_err();
    assert_eq!(
        err.as_db_error().map(|e| e.code().clone()),
        Some(SqlState::QUERY_CANCELED),
        "{err}"
    );
    drop(other);

    // Fast commits, and the leader is killed right after them.
    client.batch_execute("SET synchronous_commit = off").await.unwrap();
    let mut fast = Vec::new();
    for i in 100..160 {
        client.execute("INSERT INTO acc VALUES ($1, 'fast')", &[&i]).await.unwrap();
        fast.push((
            i,
            client.query_one("SELECT kiln_last_txid()", &[]).await.unwrap().get::<_, String>(0),
        ));
    }
    drop(client);
    cluster.nodes[first].as_mut().unwrap().crash();

    let others: Vec<usize> = (0..3).filter(|&i| i != first).collect();
    let second = leader(&cluster, &others).await;
    let new_leader = connect(&cluster.conninfo(second)).await.unwrap();
    // A new term commits on the new leader; it decides the old leader's tail.
    new_leader.execute("INSERT INTO acc VALUES (1000, 'after')", &[]).await.unwrap();
    let after: String = new_leader.query_one("SELECT kiln_last_txid()", &[]).await.unwrap().get(0);
    for (key, id) in &safe {
        assert_eq!(status(&new_leader, id).await, "durable", "safe commit {id}");
        let n: i64 = new_leader
            .query_one("SELECT count(*) FROM acc WHERE id = $1", &[key])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 1, "safe row {key}");
    }
    let mut lost_seen = false;
    let mut statuses = Vec::new();
    for (key, id) in &fast {
        let s = status(&new_leader, id).await;
        let n: i64 = new_leader
            .query_one("SELECT count(*) FROM acc WHERE id = $1", &[key])
            .await
            .unwrap()
            .get(0);
        match s.as_str() {
            "durable" => {
                assert!(!lost_seen, "{id} is durable after a lost commit: not a suffix");
                assert_eq!(n, 1, "durable row {key}");
            }
            "lost" => {
                lost_seen = true;
                assert_eq!(n, 0, "lost row {key}");
            }
            other => panic!("fast commit {id} is {other} after the failover"),
        }
        statuses.push(s);
    }

    // The killed node comes back, follows, and answers the same.
    cluster.start_node(first);
    let back = loop {
        if let Ok(c) = connect(&cluster.conninfo(first)).await {
            break c;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eventually(30, "the restarted node has the new term's commit", || async {
        status(&back, &after).await == "durable"
    })
    .await;
    for ((_, id), s) in fast.iter().zip(&statuses) {
        assert_eq!(&status(&back, id).await, s, "{id} on the restarted node");
    }
    let count = "SELECT count(*) FROM acc";
    let on_leader: i64 = new_leader.query_one(count, &[]).await.unwrap().get(0);
    let on_back: i64 = back.query_one(count, &[]).await.unwrap().get(0);
    assert_eq!(on_leader, on_back);
    for node in cluster.nodes.iter_mut().flatten() {
        assert!(node.stop(), "a node did not stop cleanly");
    }
}
