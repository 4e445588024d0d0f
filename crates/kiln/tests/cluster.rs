//! A three-node cluster of real `kiln serve` processes on loopback: writes go to the leader
//! and replicate, a follower serves reads and answers writes with 25006 and the leader's
//! address, `kiln_cluster` lists the nodes. The leader is killed (SIGKILL) after a mix of
//! safe and fast commits: a new leader is elected, every acknowledged safe commit is on it,
//! every fast one is durable and present or lost and absent (the lost ones a suffix), and
//! the killed node, restarted, catches up and answers the same statuses.

mod common;

use common::free_port;

use std::path::Path;
use std::time::{Duration, Instant};

use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

/// One cluster at a time: the ports each test picks are free when picked, and another
/// cluster's outgoing connections could take one before its node binds it.
static ONE_CLUSTER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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

/// The body of an HTTP GET (the metrics endpoint speaks HTTP/1.0).
fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(
        response.starts_with("HTTP/1.0 200") || response.starts_with("HTTP/1.1 200"),
        "{response}"
    );
    response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default()
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
    common::read_one(client, "SELECT kiln_txn_status($1)", &[&id]).await.get(0)
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
    let _one_at_a_time = ONE_CLUSTER.lock().await;
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
    // … in bytes and time as well, and in the same figures on /metrics.
    eventually(10, "the followers lag by no byte", || async {
        let q = "SELECT count(*) FROM kiln_cluster WHERE NOT is_self AND lag_bytes = 0 \
                 AND lag_ms = 0 AND log_csn = (SELECT log_csn FROM kiln_cluster WHERE is_self)";
        let n: i64 = client.query_one(q, &[]).await.unwrap().get(0);
        n == 2
    })
    .await;
    let metrics = http_get(cluster.nodes[first].as_ref().unwrap().metrics.unwrap(), "/metrics");
    for follower in (0..3).filter(|&i| i != first) {
        let line = format!(
            "kiln_replica_lag_bytes{{node_id=\"{}\",site=\"site-{}\"}} 0",
            follower + 1,
            follower + 1
        );
        assert!(metrics.contains(&line), "no {line} in\n{metrics}");
    }
    assert!(metrics.contains("kiln_level_csn{level=\"all\"}"), "{metrics}");
    assert!(metrics.contains("kiln_level_csn{level=\"site:site-1\"}"), "{metrics}");

    // Durability levels beyond quorum: `all`, and a site (node N is tagged site-N).
    let levels = "SELECT kiln_txn_levels(kiln_last_txid())";
    let every = "local,quorum,site:site-1,site:site-2,site:site-3,all";
    client.execute("INSERT INTO acc VALUES (-10, 'all') /*+ SAFE(all) */", &[]).await.unwrap();
    assert_eq!(client.query_one(levels, &[]).await.unwrap().get::<_, String>(0), every);
    let far = (first + 2) % 3;
    client
        .batch_execute(&format!("SET kiln.durability_level = 'site:site-{}'", far + 1))
        .await
        .unwrap();
    client.execute("INSERT INTO acc VALUES (-11, 'site')", &[]).await.unwrap();
    let reached: String = client.query_one(levels, &[]).await.unwrap().get(0);
    assert!(reached.contains(&format!("site:site-{}", far + 1)), "{reached}");
    let err = client.batch_execute("SET kiln.durability_level = 'site:nowhere'").await.unwrap_err();
    assert_eq!(
        err.as_db_error().map(|e| e.code().clone()),
        Some(SqlState::INVALID_PARAMETER_VALUE)
    );
    client.batch_execute("RESET kiln.durability_level").await.unwrap();

    // A follower killed: quorum commits go on, a commit at `all` is not acknowledged (its
    // wait ends with an error that says it is committed, never with a silent downgrade),
    // and once the follower is back the commit reaches `all`.
    cluster.nodes[far].as_mut().unwrap().crash();
    client.execute("INSERT INTO acc VALUES (-12, 'quorum')", &[]).await.unwrap();
    client.batch_execute("SET statement_timeout = 500").await.unwrap();
    let err = client.execute("INSERT INTO acc VALUES (-13, 'all') /*+ SAFE(all) */", &[]).await;
    let err = err.expect_err("a commit at `all` acknowledged with a voter down");
    let db = err.as_db_error().expect("a database error");
    assert_eq!(*db.code(), SqlState::QUERY_CANCELED, "{err}");
    assert!(db.detail().unwrap_or("").contains("committed and visible"), "{:?}", db.detail());
    client.batch_execute("RESET statement_timeout").await.unwrap();
    let waiting: String = client.query_one("SELECT kiln_last_txid()", &[]).await.unwrap().get(0);
    assert_eq!(status(&client, &waiting).await, "durable", "durable on the quorum left");
    let reached: String =
        client.query_one("SELECT kiln_txn_levels($1)", &[&waiting]).await.unwrap().get(0);
    assert!(!reached.ends_with(",all"), "{reached} with a voter down");
    cluster.start_node(far);
    let got: String =
        client.query_one("SELECT kiln_wait($1, 30000, 'all')", &[&waiting]).await.unwrap().get(0);
    assert_eq!(got, "durable", "the restarted follower brings {waiting} to `all`");
    assert_eq!(
        client
            .query_one(levels.replace("kiln_last_txid()", "$1").as_str(), &[&waiting])
            .await
            .unwrap()
            .get::<_, String>(0),
        every
    );

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
    // Only the leader learns the levels beyond quorum; a follower says so.
    let err = reader.query_one("SELECT kiln_wait($1, 100, 'all')", &[&waiting]).await.unwrap_err();
    assert_eq!(err.as_db_error().map(|e| e.code().code()), Some("40003"), "{err}");

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
    let on_back: i64 = common::read_one(&back, count, &[]).await.get(0);
    assert_eq!(on_leader, on_back);
    for node in cluster.nodes.iter_mut().flatten() {
        assert!(node.stop(), "a node did not stop cleanly");
    }
}

/// Membership changes while the cluster serves: a fourth node started with `--join` is added
/// through SQL on the leader (a learner that catches up, then a voter), has every commit,
/// counts toward `all`; then a follower is removed and the cluster goes on committing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_join_and_leave_a_serving_cluster() {
    let _one_at_a_time = ONE_CLUSTER.lock().await;
    let mut cluster = Cluster::start(3);
    let first = leader(&cluster, &[0, 1, 2]).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let client = loop {
        if let Ok(client) = connect(&cluster.conninfo(first)).await {
            if client.batch_execute("CREATE TABLE m (id int PRIMARY KEY)").await.is_ok() {
                break client;
            }
        }
        assert!(Instant::now() < deadline, "the leader takes no writes");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    for i in 0..20 {
        client.execute("INSERT INTO m VALUES ($1)", &[&i]).await.unwrap();
    }

    // Node 4 starts alone, told only about itself, and waits to be added.
    let (sql4, raft4) = (free_port(), free_port());
    let dir4 = tempfile::tempdir().unwrap();
    let me = format!("4=127.0.0.1:{raft4},127.0.0.1:{sql4},site-4");
    let raft_listen = format!("127.0.0.1:{raft4}");
    let secret = cluster.secret.to_str().unwrap().to_string();
    let args = [
        "--node-id",
        "4",
        "--raft-listen",
        &raft_listen,
        "--cluster-secret-file",
        &secret,
        "--member",
        &me,
        "--join",
    ];
    let mut node4 = common::Kiln::start_at(dir4.path(), &format!("127.0.0.1:{sql4}"), &args);

    // Added on a follower: refused, naming the leader.
    let follower = connect(&cluster.conninfo((first + 1) % 3)).await.unwrap();
    let add = format!(
        "SELECT kiln_cluster_add_node(4, '127.0.0.1:{raft4}', '127.0.0.1:{sql4}', 'site-4')"
    );
    let err = follower.query_one(&add, &[]).await.unwrap_err();
    assert_eq!(
        err.as_db_error().map(|e| e.code().clone()),
        Some(SqlState::READ_ONLY_SQL_TRANSACTION)
    );
    // On the leader it returns once node 4 is a voter.
    let added: String = client.query_one(&add, &[]).await.unwrap().get(0);
    assert_eq!(added, "added");
    let err = client.query_one(&add, &[]).await.unwrap_err();
    assert_eq!(
        err.as_db_error().map(|e| e.code().clone()),
        Some(SqlState::INVALID_PARAMETER_VALUE)
    );
    let voters = "SELECT count(*) FROM kiln_cluster WHERE role IN ('leader', 'follower')";
    let n: i64 = client.query_one(voters, &[]).await.unwrap().get(0);
    assert_eq!(n, 4);

    // It has every commit, and a commit at `all` now waits for it as well.
    client.execute("INSERT INTO m VALUES (100) /*+ SAFE(all) */", &[]).await.unwrap();
    let token: String = client.query_one("SELECT kiln_last_txid()", &[]).await.unwrap().get(0);
    let reached: String =
        client.query_one("SELECT kiln_txn_levels($1)", &[&token]).await.unwrap().get(0);
    assert!(reached.contains("site:site-4") && reached.ends_with(",all"), "{reached}");
    let on4 =
        connect(&format!("host=127.0.0.1 port={sql4} user=kiln dbname=kiln connect_timeout=5"))
            .await
            .unwrap();
    on4.batch_execute(&format!("SET kiln.read_after = '{token}'")).await.unwrap();
    let n: i64 = on4.query_one("SELECT count(*) FROM m", &[]).await.unwrap().get(0);
    assert_eq!(n, 21, "the new node has every row");

    // A follower is removed: three voters remain, and safe commits go on.
    let gone = (0..3).find(|&i| i != first).unwrap();
    let removed: String = client
        .query_one("SELECT kiln_cluster_remove_node($1)", &[&(gone as i64 + 1)])
        .await
        .unwrap()
        .get(0);
    assert_eq!(removed, "removed");
    let n: i64 = client.query_one("SELECT count(*) FROM kiln_cluster", &[]).await.unwrap().get(0);
    assert_eq!(n, 3);
    cluster.nodes[gone].as_mut().unwrap().crash();
    for i in 200..210 {
        client.execute("INSERT INTO m VALUES ($1) /*+ SAFE(all) */", &[&i]).await.unwrap();
    }
    let err = client.query_one("SELECT kiln_cluster_remove_node(99)", &[]).await.unwrap_err();
    assert_eq!(
        err.as_db_error().map(|e| e.code().clone()),
        Some(SqlState::INVALID_PARAMETER_VALUE)
    );

    drop(on4);
    assert!(node4.stop(), "node 4 did not stop cleanly");
    for (i, node) in cluster.nodes.iter_mut().enumerate() {
        if let (Some(node), true) = (node.as_mut(), i != gone) {
            assert!(node.stop(), "a node did not stop cleanly");
        }
    }
}
