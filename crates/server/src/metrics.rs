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
    out
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
