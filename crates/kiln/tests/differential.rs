//! The differential test: every statement of `tests/differential/corpus.sql` runs on Kiln and
//! on a throwaway stock PostgreSQL started by the test; column names, rows (as text), row
//! counts and error SQLSTATEs must agree.

mod common;

use tokio_postgres::SimpleQueryMessage;

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

async fn outcome(client: &tokio_postgres::Client, sql: &str) -> String {
    match client.simple_query(sql).await {
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
            out
        }
        Err(e) => format!("ERROR {}\n", e.code().map_or("?", |c| c.code())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kiln_agrees_with_postgresql() {
    let kiln = common::Kiln::start(&[]);
    let pg = common::Postgres::start();
    let k = common::connect(&kiln.conninfo()).await;
    let p = common::connect(&pg.conninfo()).await;
    let corpus = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/differential/corpus.sql"
    ))
    .unwrap();
    let stmts = statements(&corpus);
    assert!(stmts.len() > 100, "the corpus has {} statements", stmts.len());
    let mut mismatches = Vec::new();
    for sql in &stmts {
        let (a, b) = (outcome(&k, sql).await, outcome(&p, sql).await);
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
