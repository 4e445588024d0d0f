//! The Prometheus text endpoint: `GET /metrics` answers the `kiln_stat` counters.
//!
//! This is deliberately tiny (one request per connection, HTTP/1.0 semantics, a bounded
//! request size); it serves scrapers, nothing else.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kiln_sql::Database;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The metrics page.
pub fn render(db: &Database, connections: usize) -> String {
    let mut out = String::new();
    for (name, value, help) in kiln_sql::pg::system::kiln_stat(db) {
        let metric = format!("kiln_{name}");
        let kind = if name.ends_with("_csn")
            || name == "epoch"
            || name.starts_with("backlog")
            || name == "rows"
            || name == "store_bytes"
            || name.contains("mean")
            || name.ends_with("_max")
            || name == "locked_rows"
        {
            "gauge"
        } else {
            "counter"
        };
        out.push_str(&format!(
            "# HELP {metric} {help}\n# TYPE {metric} {kind}\n{metric} {value}\n"
        ));
    }
    out.push_str(&format!("# HELP kiln_connections open client connections\n# TYPE kiln_connections gauge\nkiln_connections {connections}\n"));
    render_cluster(db, &mut out);
    out
}

/// A member's value of one gauge, if known.
type MemberGauge = fn(&kiln_sql::ClusterMember) -> Option<String>;

/// A cluster node's replication gauges: each level's watermark beyond `quorum`, and each
/// member's lag as the leader sees it (only the leader knows the others' logs).
fn render_cluster(db: &Database, out: &mut String) {
    let members = db.cluster_members();
    if members.is_empty() {
        return;
    }
    let (all, sites) = db.engine().level_marks();
    out.push_str("# HELP kiln_level_csn commits that reached a durability level beyond quorum (computed on the leader)\n# TYPE kiln_level_csn gauge\n");
    out.push_str(&format!("kiln_level_csn{{level=\"all\"}} {all}\n"));
    for (site, csn) in sites {
        out.push_str(&format!("kiln_level_csn{{level=\"site:{site}\"}} {csn}\n"));
    }
    let gauges: [(&str, &str, MemberGauge); 5] = [
        ("kiln_replica_lag_entries", "log entries a member is behind the leader", |m| {
            m.lag_entries.map(|v| v.to_string())
        }),
        ("kiln_replica_lag_csns", "commits a member is behind the leader", |m| {
            m.lag_csns.map(|v| v.to_string())
        }),
        ("kiln_replica_lag_bytes", "bytes of log a member is behind the leader", |m| {
            m.lag_bytes.map(|v| v.to_string())
        }),
        (
            "kiln_replica_lag_seconds",
            "age of the oldest entry a member lacks, on the leader's clock",
            |m| m.lag_ms.map(|v| format!("{:.3}", v as f64 / 1000.0)),
        ),
        (
            "kiln_replica_last_heard_seconds",
            "time since the leader last heard from a member",
            |m| m.last_heard_ms.map(|v| format!("{:.3}", v as f64 / 1000.0)),
        ),
    ];
    for (metric, help, value) in gauges {
        let rows: Vec<String> = members
            .iter()
            .filter(|m| !m.is_self)
            .filter_map(|m| {
                value(m).map(|v| {
                    format!("{metric}{{node_id=\"{}\",site=\"{}\"}} {v}\n", m.node_id, m.site)
                })
            })
            .collect();
        if !rows.is_empty() {
            out.push_str(&format!("# HELP {metric} {help}\n# TYPE {metric} gauge\n"));
            rows.iter().for_each(|r| out.push_str(r));
        }
    }
}

pub(crate) async fn serve(listener: TcpListener, db: Arc<Database>, slots: Arc<AtomicUsize>) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else { continue };
        let db = db.clone();
        let slots = slots.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            let mut len = 0;
            let read = tokio::time::timeout(Duration::from_secs(5), async {
                while len < buf.len() {
                    let n = stream.read(&mut buf[len..]).await?;
                    if n == 0 {
                        break;
                    }
                    len += n;
                    if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                Ok::<_, std::io::Error>(())
            })
            .await;
            if !matches!(read, Ok(Ok(()))) {
                return;
            }
            let request = String::from_utf8_lossy(&buf[..len]);
            let mut parts = request.split_whitespace();
            let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let (status, body) = if method == "GET"
                && (path == "/metrics" || path.starts_with("/metrics?"))
            {
                let db2 = db.clone();
                let n = slots.load(Ordering::Relaxed);
                (
                    "200 OK",
                    tokio::task::spawn_blocking(move || render(&db2, n)).await.unwrap_or_default(),
                )
            } else {
                ("404 Not Found", "only GET /metrics is served here\n".to_string())
            };
            let response = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}
