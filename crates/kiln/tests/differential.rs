//! The differential test: every statement of `tests/differential/corpus.sql` runs on Kiln and
//! on a throwaway stock PostgreSQL started by the test; column names, rows (as text), row
//! counts, error SQLSTATEs and the objects errors name (schema, table, column, data type,
//! constraint) must agree, and so must the table column each result column of a query shows
//! (RowDescription's table OID, compared by the table's name, and column number), and the
//! notices (NOTICE, WARNING, …) each statement sends: severity, SQLSTATE and message.

mod common;

use std::sync::{Arc, Mutex};

use tokio_postgres::{AsyncMessage, SimpleQueryMessage};

/// The notices (NOTICE, WARNING, …) a connection has received and not yet compared.
type Notices = Arc<Mutex<Vec<String>>>;

/// A client whose connection keeps the notices the server sends.
async fn connect(conninfo: &str) -> (tokio_postgres::Client, Notices) {
    let (client, mut connection) =
        tokio_postgres::connect(conninfo, tokio_postgres::NoTls).await.expect("connects");
    let notices = Notices::default();
    let kept = notices.clone();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(m)) = futures::StreamExt::next(&mut messages).await {
            if let AsyncMessage::Notice(n) = m {
                let mut shown = format!("{} {} {}", n.severity(), n.code().code(), n.message());
                if let Some(detail) = n.detail() {
                    shown.push_str(&format!(" ({detail})"));
                }
                kept.lock().unwrap().push(shown);
            }
        }
    });
    (client, notices)
}

fn statements(corpus: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in corpus.lines() {
        if line.trim_start().starts_with("--") || line.trim().is_empty() {
            continue;
        }
        cur.push_str(line);
        cur.push('\n');
        if line.trim_end().ends_with(';') {
            out.push(std::mem::take(&mut cur));
        }
    }
    out
}

async fn outcome(client: &(tokio_postgres::Client, Notices), sql: &str) -> String {
    let (client, notices) = client;
    let mut out = match client.simple_query(sql).await {
        Ok(messages) => {
            let mut out = String::new();
            for m in messages {
                match m {
                    SimpleQueryMessage::RowDescription(cols) => {
                        let names: Vec<&str> = cols.iter().map(|c| c.name()).collect();
                        out.push_str(&format!("columns {}\n", names.join(",")));
                    }
                    SimpleQueryMessage::Row(row) => {
                        let vals: Vec<String> = (0..row.len())
                            .map(|i| row.get(i).map_or("NULL".to_string(), str::to_string))
                            .collect();
                        out.push_str(&format!("  {}\n", vals.join("|")));
                    }
                    SimpleQueryMessage::CommandComplete(n) => out.push_str(&format!("done {n}\n")),
                    _ => {}
                }
            }
            if out.starts_with("columns ") {
                out.push_str(&origins(client, sql).await);
            }
            out
        }
        Err(e) => match e.as_db_error() {
            Some(d) => {
                let named = [
                    ("schema", d.schema()),
                    ("table", d.table()),
                    ("column", d.column()),
                    ("datatype", d.datatype()),
                    ("constraint", d.constraint()),
                ];
                let named: Vec<String> =
                    named.iter().filter_map(|(k, v)| v.map(|v| format!(" {k}={v}"))).collect();
                format!("ERROR {}{}\n", d.code().code(), named.concat())
            }
            None => format!("ERROR {e}\n"),
        },
    };
    // The notices the statement raised (the origins query above raises none).
    for n in notices.lock().unwrap().drain(..) {
        out.push_str(&format!("{n}\n"));
    }
    out
}

/// For a query (SELECT or WITH) that just answered rows: the table and column number each
/// result column shows, as its RowDescription after Parse reports them (`-` for none).
/// Queries of the system catalogs are left out: Kiln's catalogs are computed and report no
/// origin, where PostgreSQL's are tables of their own.
async fn origins(client: &tokio_postgres::Client, sql: &str) -> String {
    let head = sql.trim_start().to_ascii_lowercase();
    if !(head.starts_with("select") || head.starts_with("with"))
        || head.contains("pg_")
        || head.contains("information_schema")
    {
        return String::new();
    }
    let statement = match client.prepare(sql.trim_end().trim_end_matches(';')).await {
        Ok(s) => s,
        Err(e) => return format!("prepare failed: {e}\n"),
    };
    let mut shown = Vec::new();
    for c in statement.columns() {
        shown.push(match c.table_oid() {
            Some(oid) if oid != 0 => {
                let rel = client
                    .query_one(
                        &format!("SELECT relname::text FROM pg_class WHERE oid = {oid}"),
                        &[],
                    )
                    .await
                    .map_or_else(|e| format!("?{e}"), |r| r.get::<_, String>(0));
                format!("{rel}.{}", c.column_id().unwrap_or(0))
            }
            _ => "-".into(),
        });
    }
    format!("origins {}\n", shown.join(","))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kiln_agrees_with_postgresql() {
    let kiln = common::Kiln::start(&[]);
    let pg = common::Postgres::start();
    let k = connect(&kiln.conninfo()).await;
    let p = connect(&pg.conninfo()).await;
    let corpus = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/differential/corpus.sql"
    ))
    .unwrap();
    let stmts = statements(&corpus);
    assert!(stmts.len() > 100, "the corpus has {} statements", stmts.len());
    let mut mismatches = Vec::new();
    let mut in_block = false;
    for sql in &stmts {
        let (a, b) = (outcome(&k, sql).await, outcome(&p, sql).await);
        // A statement answered 25P02 compares nothing: only a block the corpus opened on a
        // line of its own may be failed (a query string stops at its first error, so one
        // that opens a block and fails leaves it open for the statements after it).
        let words = sql.trim().trim_end_matches(';').to_ascii_lowercase();
        let ends = |w: &str| w == "rollback" || w == "commit" || w == "end";
        if words == "begin" || words.starts_with("start transaction") {
            in_block = true;
        } else if ends(&words) {
            in_block = false;
        }
        assert!(
            in_block || !b.starts_with("ERROR 25P02"),
            "the corpus left a failed transaction block open before:\n{sql}"
        );
        if a != b {
            mismatches.push(format!("{sql}--- kiln\n{a}--- postgresql\n{b}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} statements disagree:\n\n{}",
        mismatches.len(),
        stmts.len(),
        mismatches.join("\n")
    );
}

/// Full text search reads prose as PostgreSQL does: each line of `prose.txt` (400 lines of
/// this project's documentation, code and SQL among them) made a tsvector under `english`
/// and `simple`, and a plain query, on both servers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_search_reads_prose_as_postgresql() {
    let kiln = common::Kiln::start(&[]);
    let pg = common::Postgres::start();
    let k = connect(&kiln.conninfo()).await;
    let p = connect(&pg.conninfo()).await;
    let prose = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/differential/prose.txt"
    ))
    .unwrap();
    let sql = "SELECT to_tsvector('english', $1)::text, to_tsvector('simple', $1)::text, \
               plainto_tsquery('english', $1)::text";
    let mut mismatches = Vec::new();
    let lines: Vec<&str> = prose.lines().collect();
    assert!(lines.len() >= 400, "the prose has {} lines", lines.len());
    async fn answer(client: &tokio_postgres::Client, sql: &str, line: &str) -> String {
        match client.query_one(sql, &[&line]).await {
            Ok(r) => (0..3).map(|i| r.get::<_, String>(i)).collect::<Vec<_>>().join(" | "),
            Err(e) => format!("ERROR {e}"),
        }
    }
    for line in &lines {
        let (a, b) = (answer(&k.0, sql, line).await, answer(&p.0, sql, line).await);
        if a != b {
            mismatches.push(format!("{line}\n--- kiln\n{a}\n--- postgresql\n{b}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} lines disagree:\n\n{}",
        mismatches.len(),
        lines.len(),
        mismatches.join("\n\n")
    );
}
