//! Helpers the SQL layer's integration tests share.

use kiln_sql::{Output, Session, Value};

/// Runs `sql`; fails the test on an error.
pub fn ok(session: &mut Session, sql: &str) -> Vec<Output> {
    let (outputs, error) = session.simple_query(sql);
    assert!(error.is_none(), "{sql}: {error:?}");
    outputs
}

/// The one integer of the last output's one row.
pub fn single_int(outputs: &[Output]) -> i64 {
    match outputs.last() {
        Some(Output::Rows { rows, .. }) => match rows.as_slice() {
            [row] => match row.as_slice() {
                [Value::Int(n)] => *n,
                other => panic!("not one integer: {other:?}"),
            },
            other => panic!("not one row: {other:?}"),
        },
        other => panic!("no rows: {other:?}"),
    }
}
