//! A leader of three real `kiln serve` processes partitioned away from the others by a proxy
//! in front of every node's Raft port, then healed. Cut off, the leader takes fast commits
//! until its lease runs out and then refuses commits (25006); a safe commit there answers
//! 40003 (in doubt), never success; the others elect a new leader and go on. Healed, the old
//! leader follows, and on every node each acknowledged safe commit is durable and present,
//! each fast one durable and present or lost and absent, the lost ones a suffix, and the
//! stranded ones (and the one in doubt) lost.

mod common;

use common::free_port;

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

/// A proxy in front of one node's Raft port that can drop the links of chosen peers. Each
/// connection opens with the peer's hello, whose sender node id tells whose link it is (the
/// frame is a little-endian u32 length and a postcard body: protocol, cluster name, from, to,
/// nonce; varints and a length-prefixed string).
struct Proxy {
    port: u16,
    state: Arc<Mutex<ProxyState>>,
}

#[derive(Default)]
struct ProxyState {
    /// Peers whose connections to this node are dropped.
    blocked: HashSet<u64>,
    /// Open connections by peer, to shut down when the peer is blocked.
    open: Vec<(u64, TcpStream)>,
}

fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// The sender of a hello frame's body.
fn hello_from(body: &[u8]) -> Option<u64> {
    let mut at = 0;
    varint(body, &mut at)?; // protocol
    let name = varint(body, &mut at)? as usize;
    at += name;
    varint(body, &mut at)
}

impl Proxy {
    fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(ProxyState::default()));
        let shared = state.clone();
        std::thread::spawn(move || {
            for inbound in listener.incoming() {
                let Ok(mut inbound) = inbound else { continue };
                let state = shared.clone();
                std::thread::spawn(move || {
                    let mut len = [0u8; 4];
                    if inbound.read_exact(&mut len).is_err() {
                        return;
                    }
                    let mut body = vec![0u8; u32::from_le_bytes(len).min(4096) as usize];
                    if inbound.read_exact(&mut body).is_err() {
                        return;
                    }
                    let Some(from) = hello_from(&body) else { return };
                    if state.lock().unwrap().blocked.contains(&from) {
                        return;
                    }
                    let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", target)) else {
                        return;
                    };
                    {
                        let mut state = state.lock().unwrap();
                        if state.blocked.contains(&from) {
                            return;
                        }
                        state.open.push((from, inbound.try_clone().unwrap()));
                        state.open.push((from, outbound.try_clone().unwrap()));
                    }
                    let _ = outbound.write_all(&len).and_then(|_| outbound.write_all(&body));
                    let _ = inbound.set_nodelay(true);
                    let _ = outbound.set_nodelay(true);
                    let (mut a, mut b) =
                        (inbound.try_clone().unwrap(), outbound.try_clone().unwrap());
                    // Each direction ends on its own, as TCP's half-close does: a peer that
                    // has sent its last request still reads the answers to it.
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut a, &mut b);
                        let _ = b.shutdown(Shutdown::Write);
                    });
                    let _ = std::io::copy(&mut outbound, &mut inbound);
                    let _ = inbound.shutdown(Shutdown::Write);
                });
            }
        });
        Proxy { port, state }
    }

    /// Drops (or lets through again) every connection from `peers` to this node.
    fn block(&self, peers: &[u64], blocked: bool) {
        let mut state = self.state.lock().unwrap();
        for &peer in peers {
            if blocked {
                state.blocked.insert(peer);
            } else {
                state.blocked.remove(&peer);
            }
        }
        if blocked {
            state.open.retain(|(from, stream)| {
                if peers.contains(from) {
                    let _ = stream.shutdown(Shutdown::Both);
                    false
                } else {
                    true
                }
            });
        }
    }
}

async fn connect(port: u16) -> Result<Client, tokio_postgres::Error> {
    let conninfo = format!("host=127.0.0.1 port={port} user=kiln dbname=kiln connect_timeout=5");
    let (client, connection) = tokio_postgres::connect(&conninfo, NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

async fn leading(port: u16) -> bool {
    let Ok(client) = connect(port).await else { return false };
    let q = "SELECT value FROM kiln_stat WHERE name = 'leading_term'";
    client.query_one(q, &[]).await.is_ok_and(|r| r.get::<_, i64>(0) > 0)
}

async fn leader_among(sql: &[u16], candidates: &[usize]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for &i in candidates {
            if leading(sql[i]).await {
                return i;
            }
        }
        assert!(Instant::now() < deadline, "no leader among {candidates:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn status(client: &Client, id: &str) -> String {
    common::read_one(client, "SELECT kiln_txn_status($1)", &[&id]).await.get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_leader_loses_exactly_its_stranded_commits_once_healed() {
    let n = 3;
    let dirs: Vec<_> = (0..=n).map(|_| tempfile::tempdir().unwrap()).collect();
    let secret = dirs[n].path().join("secret");
    std::fs::write(&secret, "a test cluster's shared secret\n").unwrap();
    let sql: Vec<u16> = (0..n).map(|_| free_port()).collect();
    let raft: Vec<u16> = (0..n).map(|_| free_port()).collect();
    let proxies: Vec<Proxy> = raft.iter().map(|&port| Proxy::start(port)).collect();
    // Every node reaches node j through j's proxy.
    let members: Vec<String> = (0..n)
        .map(|j| {
            format!("{}=127.0.0.1:{},127.0.0.1:{},site-{}", j + 1, proxies[j].port, sql[j], j + 1)
        })
        .collect();
    let mut nodes: Vec<common::Kiln> = (0..n)
        .map(|i| {
            let id = (i + 1).to_string();
            let raft_listen = format!("127.0.0.1:{}", raft[i]);
            let secret = secret.to_str().unwrap().to_string();
            let mut args = vec![
                "--node-id".to_string(),
                id,
                "--raft-listen".into(),
                raft_listen,
                "--cluster-secret-file".into(),
                secret,
            ];
            for m in &members {
                args.push("--member".into());
                args.push(m.clone());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            common::Kiln::start_at(dirs[i].path(), &format!("127.0.0.1:{}", sql[i]), &args)
        })
        .collect();

    let first = leader_among(&sql, &[0, 1, 2]).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let client = loop {
        if let Ok(c) = connect(sql[first]).await {
            if c.batch_execute("CREATE TABLE p (id int PRIMARY KEY, v text)").await.is_ok() {
                break c;
            }
        }
        assert!(Instant::now() < deadline, "the leader takes no writes");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let txid = "SELECT kiln_last_txid()";
    let mut safe = Vec::new();
    for i in 0..10 {
        client.execute("INSERT INTO p VALUES ($1, 'safe')", &[&i]).await.unwrap();
        safe.push((i, client.query_one(txid, &[]).await.unwrap().get::<_, String>(0)));
    }

    // The leader is cut off: no connection to or from it gets through.
    let others: Vec<usize> = (0..n).filter(|&i| i != first).collect();
    let other_ids: Vec<u64> = others.iter().map(|&i| i as u64 + 1).collect();
    proxies[first].block(&other_ids, true);
    for &o in &others {
        proxies[o].block(&[first as u64 + 1], true);
    }
    let cut_at = Instant::now();
    // A safe commit there cannot reach a quorum: it is answered "in doubt", not success.
    let safe_client = Arc::new(connect(sql[first]).await.unwrap());
    let in_doubt = tokio::spawn({
        let c = safe_client.clone();
        async move { c.execute("INSERT INTO p VALUES (-1, 'doubt')", &[]).await }
    });
    // Fast commits go on there until its lease runs out; then it refuses commits.
    client.batch_execute("SET synchronous_commit = off").await.unwrap();
    let mut fast = Vec::new();
    let mut key = 100;
    loop {
        match client.execute("INSERT INTO p VALUES ($1, 'fast')", &[&key]).await {
            Ok(_) => {
                fast.push((key, client.query_one(txid, &[]).await.unwrap().get::<_, String>(0)))
            }
            Err(e) => {
                let code = e.as_db_error().map(|d| d.code().clone());
                assert_eq!(code, Some(SqlState::READ_ONLY_SQL_TRANSACTION), "{e}");
                break;
            }
        }
        key += 1;
        assert!(cut_at.elapsed() < Duration::from_secs(20), "a cut-off leader kept committing");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!fast.is_empty(), "the cut-off leader committed nothing before its lease ran out");
    // The safe commit made just after the cut was never acknowledged: it is in doubt.
    let err = in_doubt.await.unwrap().expect_err("a safe commit acknowledged without a quorum");
    assert_eq!(err.as_db_error().map(|d| d.code().code()), Some("40003"), "{err}");
    let doubtful: String = safe_client.query_one(txid, &[]).await.unwrap().get(0);

    // The others elect a new leader and commit safely.
    let second = leader_among(&sql, &others).await;
    let new_leader = connect(sql[second]).await.unwrap();
    new_leader.execute("INSERT INTO p VALUES (1000, 'after')", &[]).await.unwrap();
    let after: String = new_leader.query_one(txid, &[]).await.unwrap().get(0);

    // Healed: the old leader follows, and every node answers alike.
    proxies[first].block(&other_ids, false);
    for &o in &others {
        proxies[o].block(&[first as u64 + 1], false);
    }
    let old = connect(sql[first]).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while status(&old, &after).await != "durable" {
        assert!(Instant::now() < deadline, "the old leader never caught up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for port in &sql {
        let c = connect(*port).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while status(&c, &after).await != "durable" {
            assert!(Instant::now() < deadline, "a node never caught up");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let present = |k: i32| {
            let c = &c;
            async move {
                let q = "SELECT count(*) FROM p WHERE id = $1";
                common::read_one(c, q, &[&k]).await.get::<_, i64>(0) == 1
            }
        };
        for (k, id) in &safe {
            assert_eq!(status(&c, id).await, "durable", "safe {id}");
            assert!(present(*k).await, "safe row {k}");
        }
        let mut lost_seen = false;
        for (k, id) in &fast {
            match status(&c, id).await.as_str() {
                "durable" => {
                    assert!(!lost_seen, "{id} durable after a lost commit");
                    assert!(present(*k).await, "durable row {k}");
                }
                "lost" => {
                    lost_seen = true;
                    assert!(!present(*k).await, "lost row {k}");
                }
                other => panic!("fast commit {id} is {other} after healing"),
            }
        }
        // Cut off before a quorum had them, the leader's fast commits were stranded: lost.
        assert!(lost_seen, "no stranded commit was lost on port {port}");
        assert_eq!(status(&c, &doubtful).await, "lost", "the commit in doubt");
        assert!(!present(-1).await, "the row of the commit in doubt");
    }
    for node in &mut nodes {
        assert!(node.stop(), "a node did not stop cleanly");
    }
}
