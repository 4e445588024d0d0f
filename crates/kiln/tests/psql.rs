//! psql, scripted, against a `kiln serve` process: DDL and DML, the describe commands
//! (`\dt`, `\d table`, `\d+`, `\l`, `\du`, `\df`, `\sf`, `\ds`, `\dv`, `\d+ view`), errors, and the
//! ED functions; and a COPY script whose output must equal PostgreSQL's.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn psql_session() {
    let kiln = common::Kiln::start(&[]);
    let script = r#"
CREATE TABLE accounts (id int PRIMARY KEY, owner varchar(20) NOT NULL DEFAULT 'nobody', balance numeric(12,2) UNIQUE, opened date);
CREATE INDEX accounts_owner ON accounts (owner);
CREATE TABLE audit (at timestamptz, note text, id serial, account int REFERENCES accounts (id), CHECK (note <> ''));
INSERT INTO accounts VALUES (1, 'ann', 10.50, '2024-01-31'), (2, 'bob', 0, NULL);
\dt
\d accounts
\d+ audit
\l
\du
\df
\ds
CREATE FUNCTION note_it() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.note := upper(NEW.note); RETURN NEW; END $$;
CREATE TRIGGER audit_note BEFORE INSERT ON audit FOR EACH ROW EXECUTE FUNCTION note_it();
\d audit
\df note_it
CREATE FUNCTION richest(n int) RETURNS TABLE (who varchar, amount numeric) LANGUAGE sql AS $$ SELECT owner, balance FROM accounts ORDER BY balance DESC LIMIT n $$;
\df richest
\sf richest
SELECT * FROM richest(1);
CREATE VIEW rich (who, amount) AS SELECT owner, balance FROM accounts WHERE balance > 1;
\dv
\d+ rich
SELECT owner, balance FROM accounts ORDER BY id;
SET synchronous_commit = off;
UPDATE accounts SET balance = balance + 1 WHERE id = 2;
SELECT kiln_wait(kiln_last_txid(), 5000) AS status;
SHOW synchronous_commit;
PREPARE by_id (int) AS SELECT owner FROM accounts WHERE id = $1;
EXECUTE by_id (1);
DEALLOCATE by_id;
\x on
SELECT name, value FROM kiln_stat WHERE name = 'epoch';
\x off
\set ON_ERROR_STOP 0
SELECT * FROM missing;
SELECT nope FROM accounts;
SELECT 1 + 'abc'::int;
\set ON_ERROR_STOP 1
SELECT count(*) AS n FROM accounts;
"#;
    let mut cmd = Command::new(common::require("psql"));
    kiln.pg_env(&mut cmd);
    let mut child = cmd
        .args(["-X", "-v", "ON_ERROR_STOP=1", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("psql runs");
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}\n{stderr}");
    assert!(out.status.success(), "psql failed");
    // \dt lists both tables.
    assert!(stdout.contains(" public | accounts | table | kiln"), "{stdout}");
    assert!(stdout.contains(" public | audit    | table | kiln"), "{stdout}");
    // \d shows columns, types, nullability, defaults and every index.
    for expected in [
        "Table \"public.accounts\"",
        " id      | integer               |           | not null | ",
        " owner   | character varying(20) |           | not null | 'nobody'",
        " balance | numeric(12,2)         |           |          | ",
        " opened  | date                  |           |          | ",
        "\"accounts_pkey\" PRIMARY KEY, btree (id)",
        "\"accounts_balance_key\" UNIQUE CONSTRAINT, btree (balance)",
        "\"accounts_owner\" btree (owner)",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
    // \d+ adds storage; the constraints show both ways, as in PostgreSQL.
    for expected in [
        " note    | text                     |           |          |                                   | extended |",
        "\"audit_note_check\" CHECK (note <> '')",
        "\"audit_account_fkey\" FOREIGN KEY (account) REFERENCES accounts(id)",
        "TABLE \"audit\" CONSTRAINT \"audit_account_fkey\" FOREIGN KEY (account) REFERENCES accounts(id)",
        " public | audit_id_seq | sequence | kiln",
        " kiln      | Superuser",
        "List of functions",
        " public | rich | view | kiln",
        "View \"public.rich\"",
        " who    | character varying(20) |           |          |         | extended |",
        " amount | numeric(12,2)         |           |          |         | main     |",
        "View definition:",
        // Triggers and trigger functions.
        "Triggers:\n    audit_note BEFORE INSERT ON audit FOR EACH ROW EXECUTE FUNCTION note_it()",
        " public | note_it | trigger          |                     | func",
        // A function returning a table's rows: \df, \sf ('richest'::regproc::oid) and a call.
        " public | richest | TABLE(who character varying, amount numeric) | n integer           | func",
        "CREATE OR REPLACE FUNCTION public.richest(n integer)\n RETURNS TABLE(who character varying, amount numeric)\n LANGUAGE sql\nAS $function$ SELECT owner",
        " who | amount \n-----+--------\n ann |  10.50",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
    // \l lists the databases.
    assert!(stdout.contains(" kiln     | kiln  | UTF8"), "{stdout}");
    assert!(stdout.contains(" postgres | kiln  | UTF8"), "{stdout}");
    assert!(stdout.contains(" ann   |   10.50"), "{stdout}");
    assert!(stdout.contains(" durable"), "{stdout}");
    // SHOW, and PREPARE / EXECUTE / DEALLOCATE in SQL.
    assert!(stdout.contains(" synchronous_commit \n--------------------\n off"), "{stdout}");
    assert!(stdout.contains(" owner \n-------\n ann"), "{stdout}");
    assert!(stdout.contains("DEALLOCATE"), "{stdout}");
    assert!(stdout.contains("name  | epoch"), "{stdout}");
    // The error is reported with its SQLSTATE text and psql carries on.
    assert!(stderr.contains("ERROR:  relation \"missing\" does not exist"), "{stderr}");
    // Errors carry their position: psql points at it.
    assert!(stderr.contains("LINE 1: SELECT nope FROM accounts;\n               ^"), "{stderr}");
    // A quoted literal that is no value of its type: at the literal, as PostgreSQL points.
    assert!(stderr.contains("LINE 1: SELECT 1 + 'abc'::int;\n                   ^"), "{stderr}");
    assert!(stdout.contains("\n 2\n") || stdout.contains("  2\n"), "{stdout}");
}

#[test]
fn psql_describe_a_missing_table() {
    let kiln = common::Kiln::start(&[]);
    let mut cmd = Command::new(common::require("psql"));
    kiln.pg_env(&mut cmd);
    let out = cmd.args(["-X", "-c", "\\d nothing"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Did not find any relation named \"nothing\""), "{stderr}");
}

/// psql runs `tests/psql/copy_options.sql` (COPY with its options, in and out, and their
/// errors) on Kiln and on a throwaway stock PostgreSQL: the outputs, errors included, are
/// equal.
#[test]
fn copy_options_agree_with_postgresql() {
    let kiln = common::Kiln::start(&[]);
    let pg = common::Postgres::start();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/psql/copy_options.sql");
    let run = |conninfo: String| {
        let out = Command::new(common::require("psql"))
            .args(["-X", "-At", "-d", &conninfo, "-f", script])
            .env_remove("PGOPTIONS")
            .output()
            .expect("psql runs");
        // Errors go to stderr, each with its script line: compared on their own.
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let errors = String::from_utf8_lossy(&out.stderr).into_owned();
        (text, errors)
    };
    let (pg_out, pg_err) = run(pg.conninfo());
    let (kiln_out, kiln_err) = run(kiln.conninfo());
    assert!(pg_out.contains("a,b") && pg_err.contains("ERROR"), "{pg_out}\n{pg_err}");
    common::assert_same("COPY output on Kiln", &pg_out, &kiln_out);
    common::assert_same("COPY errors on Kiln", &pg_err, &kiln_err);
}
