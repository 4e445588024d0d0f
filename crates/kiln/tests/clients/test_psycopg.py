"""psycopg 3 against a running Kiln server (KILN_DSN): parameters, executemany pipelining,
COPY both ways, transactions, fast/safe commits and durability notifications.

Run by `cargo test -p kiln --test psycopg`, which starts the server."""

import os
import time
from decimal import Decimal

import psycopg
import pytest
from psycopg import errors

DSN = os.environ["KILN_DSN"]


@pytest.fixture
def conn():
    with psycopg.connect(DSN, autocommit=True) as c:
        yield c


def test_parameters_and_types(conn):
    conn.execute("DROP TABLE IF EXISTS p")
    conn.execute(
        "CREATE TABLE p (id int PRIMARY KEY, small smallint, big bigint, f double precision,"
        " n numeric(10,2), t text, b boolean, by bytea)"
    )
    conn.execute(
        "INSERT INTO p VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        (1, 7, 2**40, 1.5, Decimal("12.34"), "héllo", True, b"\x00\xff"),
    )
    row = conn.execute("SELECT * FROM p WHERE id = %s", (1,)).fetchone()
    assert row == (1, 7, 2**40, 1.5, Decimal("12.34"), "héllo", True, b"\x00\xff")
    # Small Python ints travel as int2 (binary) and compare with int4/int8 columns.
    assert conn.execute("SELECT count(*) FROM p WHERE big > %s AND id = %s", (5, 1)).fetchone() == (1,)
    # Binary results.
    with conn.cursor(binary=True) as cur:
        assert cur.execute("SELECT id, big, t, n FROM p").fetchone() == (1, 2**40, "héllo", Decimal("12.34"))
    # NULL parameters.
    conn.execute("INSERT INTO p (id, t) VALUES (%s, %s)", (2, None))
    assert conn.execute("SELECT t IS NULL FROM p WHERE id = 2").fetchone() == (True,)


def test_time_zones():
    """The session's zone (a startup option here) reads and writes timestamps with time zone:
    aware datetimes round-trip as instants in text and binary, and local times, day
    boundaries and SET TIME ZONE follow the zone."""
    from datetime import datetime, timedelta, timezone
    from zoneinfo import ZoneInfo

    with psycopg.connect(DSN, autocommit=True, options="-c TimeZone=Asia/Tokyo") as c:
        assert c.execute("SHOW TimeZone").fetchone() == ("Asia/Tokyo",)
        assert c.info.parameter_status("TimeZone") == "Asia/Tokyo"
        c.execute("DROP TABLE IF EXISTS tz")
        c.execute("CREATE TABLE tz (id int PRIMARY KEY, at timestamptz, local timestamp)")
        at = datetime(2024, 3, 10, 1, 30, tzinfo=timezone.utc)
        c.execute("INSERT INTO tz VALUES (1, %s, %s)", (at, datetime(2024, 3, 10, 1, 30)))
        c.execute("INSERT INTO tz VALUES (2, '2024-03-10 09:00', '2024-03-10 09:00')")
        tokyo = ZoneInfo("Asia/Tokyo")
        for binary in (False, True):
            with c.cursor(binary=binary) as cur:
                rows = cur.execute("SELECT id, at, at::text, at::date, local::timestamptz FROM tz ORDER BY id").fetchall()
            assert rows[0][1] == at and rows[0][1].utcoffset() == timedelta(hours=9)
            assert rows[0][2] == "2024-03-10 10:30:00+09"
            assert rows[0][3].isoformat() == "2024-03-10"
            assert rows[0][4] == datetime(2024, 3, 10, 1, 30, tzinfo=tokyo)
            assert rows[1][1] == datetime(2024, 3, 10, 9, 0, tzinfo=tokyo)
        # A day boundary is local: both rows fall on 10 March in Tokyo.
        assert c.execute("SELECT count(*) FROM tz WHERE at >= '2024-03-10' AND at < '2024-03-11'").fetchone() == (2,)
        c.execute("SET TIME ZONE 'America/New_York'")
        assert c.info.parameter_status("TimeZone") == "America/New_York"
        assert c.execute("SELECT at::text FROM tz WHERE id = 1").fetchone() == ("2024-03-09 20:30:00-05",)
        # 10 March 2024 is 23 hours long in New York: a day of calendar is not 24 hours.
        assert c.execute(
            "SELECT ('2024-03-10 00:00'::timestamptz + interval '1 day')::text"
        ).fetchone() == ("2024-03-11 00:00:00-04",)
        with pytest.raises(errors.InvalidParameterValue):
            c.execute("SET TIME ZONE 'Nowhere/Else'")
        c.execute("DROP TABLE tz")
        # RESET and DISCARD ALL (a pool's reset) return to the zone given at startup.
        c.execute("RESET TimeZone")
        assert c.execute("SHOW TimeZone").fetchone() == ("Asia/Tokyo",)
        c.execute("SET TIME ZONE 'UTC'")
        c.execute("DISCARD ALL")
        assert c.execute("SHOW TimeZone").fetchone() == ("Asia/Tokyo",)
        c.execute("SET TIME ZONE 'UTC'")
        c.execute("SET TIME ZONE LOCAL")
        assert c.execute("SHOW TimeZone").fetchone() == ("Asia/Tokyo",)
        assert c.info.parameter_status("TimeZone") == "Asia/Tokyo"


def test_json_and_jsonb(conn):
    """json and jsonb columns: psycopg's Json/Jsonb adapters in text and binary, documents
    loaded back as Python objects, the operators in WHERE, and bad documents refused."""
    from psycopg.types.json import Json, Jsonb

    conn.execute("DROP TABLE IF EXISTS js")
    conn.execute("CREATE TABLE js (id int PRIMARY KEY, doc jsonb, raw json)")
    doc = {"name": "ada", "tags": ["x", "y"], "n": 1.5, "nested": {"ok": True, "none": None}}
    conn.execute("INSERT INTO js VALUES (%s, %s, %s)", (1, Jsonb(doc), Json(doc)))
    with conn.cursor(binary=True) as cur:
        cur.execute("INSERT INTO js VALUES (%s, %s, %s)", (2, Jsonb([1, "two"]), Json({"b": 1, "a": 2})))
        assert cur.execute("SELECT doc, raw FROM js WHERE id = 1").fetchone() == (doc, doc)
    assert conn.execute("SELECT doc, raw FROM js WHERE id = 2").fetchone() == ([1, "two"], {"b": 1, "a": 2})
    assert conn.execute("SELECT id FROM js WHERE doc @> %s", (Jsonb({"tags": ["y"]}),)).fetchall() == [(1,)]
    assert conn.execute("SELECT doc ->> 'name', doc #> '{nested,ok}', raw -> 'tags' -> 0 FROM js WHERE id = 1").fetchone() == ("ada", True, "x")
    assert conn.execute("SELECT count(*) FROM js WHERE doc ? 'name'").fetchone() == (1,)
    assert conn.execute("SELECT jsonb_typeof(doc) FROM js ORDER BY id").fetchall() == [("object",), ("array",)]
    with pytest.raises(errors.InvalidTextRepresentation):
        conn.execute("INSERT INTO js VALUES (3, %s::jsonb, null)", ('{"a":',))
    assert conn.execute("SELECT count(*) FROM js").fetchone() == (2,)
    conn.execute("DROP TABLE js")


def test_prepared_after_five_executions(conn):
    conn.execute("DROP TABLE IF EXISTS kv")
    conn.execute("CREATE TABLE kv (k int PRIMARY KEY, v int)")
    conn.execute("INSERT INTO kv SELECT g, 0 FROM generate_series(1, 10) AS g")
    for i in range(12):
        conn.execute("UPDATE kv SET v = v + 1 WHERE k = %s", (1 + i % 3,))
        assert conn.execute("SELECT v FROM kv WHERE k = %s", (1,)).fetchone()[0] >= 1
    assert conn.execute("SELECT sum(v) FROM kv").fetchone() == (12,)
    # Derived tables and subqueries in server-side prepared statements (Parse describes them
    # without running them; each execution runs them with its own parameters).
    q = (
        "SELECT n, (SELECT max(k) FROM kv WHERE k < %s) FROM"
        " (SELECT count(*) AS n FROM kv WHERE k <= %s) AS s"
    )
    for i in range(1, 8):
        assert conn.execute(q, (i, i), prepare=True).fetchone() == (i, i - 1 if i > 1 else None)


def test_executemany_pipeline(conn):
    conn.execute("DROP TABLE IF EXISTS t")
    conn.execute("CREATE TABLE t (a int PRIMARY KEY, b text)")
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO t (a, b) VALUES (%s, %s)", [(i, f"row {i}") for i in range(500)])
    assert conn.execute("SELECT count(*), min(a), max(a) FROM t").fetchone() == (500, 0, 499)
    with conn.pipeline():
        for i in range(50):
            conn.execute("UPDATE t SET b = %s WHERE a = %s", (f"new {i}", i))
    assert conn.execute("SELECT count(*) FROM t WHERE b LIKE 'new%%'").fetchone() == (50,)


def test_copy_both_ways(conn):
    conn.execute("DROP TABLE IF EXISTS c")
    conn.execute("CREATE TABLE c (a int PRIMARY KEY, b text, n numeric)")
    with conn.cursor() as cur:
        with cur.copy("COPY c (a, b, n) FROM STDIN") as copy:
            for i in range(1000):
                copy.write_row((i, f"tab\there {i}" if i % 100 == 0 else f"v{i}", None if i % 7 == 0 else Decimal(i) / 4))
        assert cur.execute("SELECT count(*), sum(a) FROM c").fetchone() == (1000, 499500)
        assert cur.execute("SELECT b FROM c WHERE a = 100").fetchone() == ("tab\there 100",)
        with cur.copy("COPY (SELECT a, b, n FROM c WHERE a < 10) TO STDOUT") as copy:
            rows = list(copy.rows())
        assert len(rows) == 10
        assert rows[0] == ("0", "tab\there 0", None)
        assert rows[1] == ("1", "v1", "0.25")
        with cur.copy("COPY c TO STDOUT (FORMAT csv)") as copy:
            csv = b"".join(bytes(chunk) for chunk in copy)
        assert csv.count(b"\n") == 1000
        # CSV in.
        cur.execute("DROP TABLE IF EXISTS c2")
        cur.execute("CREATE TABLE c2 (a int PRIMARY KEY, b text)")
        with cur.copy("COPY c2 FROM STDIN (FORMAT csv)") as copy:
            copy.write(b'1,"a, quoted"\n2,\n3,"say ""hi"""\n')
        assert cur.execute("SELECT a, b FROM c2 ORDER BY a").fetchall() == [(1, "a, quoted"), (2, None), (3, 'say "hi"')]


def test_copy_error_loses_nothing(conn):
    conn.execute("DROP TABLE IF EXISTS ce")
    conn.execute("CREATE TABLE ce (a int PRIMARY KEY)")
    with pytest.raises(errors.InvalidTextRepresentation):
        with conn.cursor().copy("COPY ce FROM STDIN") as copy:
            copy.write(b"1\n2\nnot a number\n")
    assert conn.execute("SELECT count(*) FROM ce").fetchone() == (0,)


def test_binary_copy_both_ways(conn):
    """The binary COPY format, the bulk path of binary-first drivers: every row in its
    values' binary forms, defaults for the columns COPY leaves out, errors that lose nothing."""
    import datetime
    import uuid

    conn.execute("DROP TABLE IF EXISTS bc")
    conn.execute(
        "CREATE TABLE bc (id int PRIMARY KEY, name text, price numeric(8,2), at timestamptz,"
        " tags int[], d interval, u uuid, note text DEFAULT 'dflt')"
    )
    utc = datetime.timezone.utc
    rows = [
        (i, None if i % 3 == 0 else f"n\t{i}", Decimal(i) / 4,
         datetime.datetime(2024, 1, 1, tzinfo=utc) + datetime.timedelta(minutes=i),
         [i, None], datetime.timedelta(hours=i), uuid.UUID(int=i))
        for i in range(1, 3001)
    ]
    types = ["int4", "text", "numeric", "timestamptz", "int4[]", "interval", "uuid"]
    with conn.cursor() as cur:
        with cur.copy("COPY bc (id, name, price, at, tags, d, u) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(types)
            for r in rows:
                copy.write_row(r)
        assert cur.execute("SELECT count(*), sum(price), min(note), max(note) FROM bc").fetchone() == (
            3000, Decimal("1125375.00"), "dflt", "dflt")
        with cur.copy("COPY (SELECT id, name, price, at, tags, d, u FROM bc ORDER BY id) TO STDOUT (FORMAT BINARY)") as copy:
            copy.set_types(types)
            assert list(copy.rows()) == rows
        with cur.copy("COPY (SELECT id FROM bc WHERE false) TO STDOUT (FORMAT BINARY)") as copy:
            copy.set_types(["int4"])
            assert list(copy.rows()) == []
    # A duplicate key, a wrong field count and bytes that are not the format: all refused,
    # nothing kept.
    with pytest.raises(errors.UniqueViolation):
        with conn.cursor().copy("COPY bc (id) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int4"])
            copy.write_row((3001,))
            copy.write_row((1,))
    with pytest.raises(errors.BadCopyFileFormat):
        with conn.cursor().copy("COPY bc (id, name) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int4"])
            copy.write_row((3002,))
    with pytest.raises(errors.BadCopyFileFormat):
        with conn.cursor().copy("COPY bc (id) FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(b"not the binary format")
    assert conn.execute("SELECT count(*) FROM bc WHERE id > 3000").fetchone() == (0,)


def test_transactions_and_isolation():
    with psycopg.connect(DSN) as c:
        c.execute("DROP TABLE IF EXISTS acct")
        c.execute("CREATE TABLE acct (id int PRIMARY KEY, bal int)")
        c.execute("INSERT INTO acct VALUES (1, 100), (2, 0)")
        c.commit()
        assert c.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        c.execute("UPDATE acct SET bal = bal - 10 WHERE id = 1")
        assert c.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        c.rollback()
        assert c.execute("SELECT bal FROM acct WHERE id = 1").fetchone() == (100,)
        c.rollback()
        # A failed statement leaves the transaction in error until rollback.
        with pytest.raises(errors.UndefinedColumn):
            c.execute("SELECT nope FROM acct")
        assert c.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        with pytest.raises(errors.InFailedSqlTransaction):
            c.execute("SELECT 1")
        c.rollback()
    # SERIALIZABLE: the loser of a write-write race gets 40001 and may retry.
    with psycopg.connect(DSN) as a, psycopg.connect(DSN) as b:
        a.isolation_level = psycopg.IsolationLevel.SERIALIZABLE
        b.isolation_level = psycopg.IsolationLevel.SERIALIZABLE
        a.execute("SELECT bal FROM acct WHERE id = 1")
        b.execute("SELECT bal FROM acct WHERE id = 1")
        a.execute("UPDATE acct SET bal = bal + 1 WHERE id = 1")
        a.commit()
        with pytest.raises(errors.SerializationFailure):
            b.execute("UPDATE acct SET bal = bal + 1 WHERE id = 1")
            b.commit()
        b.rollback()
        assert b.execute("SELECT bal FROM acct WHERE id = 1").fetchone() == (101,)
    # FOR UPDATE.
    with psycopg.connect(DSN) as c:
        assert c.execute("SELECT bal FROM acct WHERE id = %s FOR UPDATE", (2,)).fetchone() == (0,)
        c.commit()


def test_fast_and_safe(conn):
    conn.execute("DROP TABLE IF EXISTS fs")
    conn.execute("CREATE TABLE fs (k int PRIMARY KEY, v int)")
    conn.execute("INSERT INTO fs VALUES (1, 0)")
    stat = lambda name: conn.execute("SELECT value FROM kiln_stat WHERE name = %s", (name,)).fetchone()[0]
    fast0, safe0 = stat("commits_fast"), stat("commits_safe")
    conn.execute("SET synchronous_commit = off")
    for _ in range(5):
        conn.execute("UPDATE fs SET v = v + 1 WHERE k = 1")
    assert stat("commits_fast") - fast0 >= 5
    conn.execute("SET synchronous_commit = on")
    conn.execute("UPDATE fs SET v = v + 1 WHERE k = 1")
    assert stat("commits_safe") - safe0 >= 1
    assert conn.execute("SELECT kiln_txn_status(kiln_last_txid())").fetchone() == ("durable",)
    conn.execute("/*+ FAST */ UPDATE fs SET v = v + 1 WHERE k = 1")
    txid = conn.execute("SELECT kiln_last_txid()").fetchone()[0]
    assert conn.execute("SELECT kiln_wait(%s, 5000)", (txid,)).fetchone() == ("durable",)
    assert conn.execute("SELECT kiln_sync() IS NOT NULL").fetchone() == (True,)


def test_listen_durable_and_lost():
    with psycopg.connect(DSN, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS ln")
        c.execute("CREATE TABLE ln (k int PRIMARY KEY, v int)")
        c.execute("LISTEN kiln_durable")
        c.execute("LISTEN kiln_lost")
        c.execute("SET synchronous_commit = off")
        c.execute("INSERT INTO ln VALUES (1, 1)")
        durable_id = c.execute("SELECT kiln_last_txid()").fetchone()[0]
        got = {}
        for n in c.notifies(timeout=5, stop_after=1):
            got[n.channel] = n.payload
        assert got.get("kiln_durable") == durable_id
        # Make the next log fsync fail: the fast commit's durability fails, it is lost.
        c.execute("SELECT kiln_fault_fail_syncs(1)")
        c.execute("INSERT INTO ln VALUES (2, 2)")
        lost_id = c.execute("SELECT kiln_last_txid()").fetchone()[0]
        got = {}
        deadline = time.time() + 10
        while "kiln_lost" not in got and time.time() < deadline:
            for n in c.notifies(timeout=1, stop_after=1):
                got[n.channel] = n.payload
        assert got.get("kiln_lost") == lost_id
        assert c.execute("SELECT kiln_txn_status(%s)", (lost_id,)).fetchone() == ("lost",)
        # Lost atomically: the row is gone; the durable one stays.
        assert c.execute("SELECT k FROM ln ORDER BY k").fetchall() == [(1,)]
        assert c.execute("SELECT value > 0 FROM kiln_stat WHERE name = 'lost_txns'").fetchone() == (True,)


def test_errors_carry_sqlstate(conn):
    with pytest.raises(errors.UndefinedTable):
        conn.execute("SELECT * FROM no_such_table")
    with pytest.raises(errors.SyntaxError):
        conn.execute("SELEC 1")
    with pytest.raises(errors.FeatureNotSupported):
        conn.execute("SELECT jsonb_each('{}')")
    with pytest.raises(errors.DivisionByZero):
        conn.execute("SELECT 1 / 0")
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_nested_transactions_use_savepoints():
    with psycopg.connect(DSN) as c:
        c.execute("DROP TABLE IF EXISTS sp")
        c.execute("CREATE TABLE sp (a int PRIMARY KEY)")
        c.commit()
        with c.transaction():
            c.execute("INSERT INTO sp VALUES (1)")
            with pytest.raises(errors.UniqueViolation):
                with c.transaction():
                    c.execute("INSERT INTO sp VALUES (2)")
                    c.execute("INSERT INTO sp VALUES (1)")
            c.execute("INSERT INTO sp VALUES (3)")
        assert c.execute("SELECT a FROM sp ORDER BY a").fetchall() == [(1,), (3,)]


def test_statement_timeout_and_cancel(conn):
    conn.execute("SET statement_timeout = 50")
    with pytest.raises(errors.QueryCanceled):
        conn.execute("SELECT count(*) FROM generate_series(1, 5000000) AS a, generate_series(1, 1000) AS b")
    conn.execute("SET statement_timeout = 0")
    assert conn.execute("SELECT 1").fetchone() == (1,)
    # A trigger function's loop that never ends is stopped too, and its row is not written.
    conn.execute("DROP TABLE IF EXISTS spin")
    conn.execute("CREATE TABLE spin (a int)")
    conn.execute(
        "CREATE OR REPLACE FUNCTION spin() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "DECLARE n bigint := 0; BEGIN LOOP n := n + 1; CONTINUE WHEN n % 2 = 0; END LOOP; END $$"
    )
    conn.execute("CREATE TRIGGER spin BEFORE INSERT ON spin FOR EACH ROW EXECUTE FUNCTION spin()")
    conn.execute("SET statement_timeout = 200")
    with pytest.raises(errors.QueryCanceled):
        conn.execute("INSERT INTO spin VALUES (1)")
    conn.execute("SET statement_timeout = 0")
    assert conn.execute("SELECT count(*) FROM spin").fetchone() == (0,)


def test_show_and_deallocate(conn):
    # SHOW through the extended protocol: described as a row, not NoData.
    assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
    conn.execute("SET synchronous_commit = off")
    cur = conn.execute("SHOW synchronous_commit")
    assert cur.description[0].name == "synchronous_commit"
    assert cur.fetchone() == ("off",)
    conn.execute("SET synchronous_commit = on")
    # psycopg prepares a query on its fifth execution; DEALLOCATE ALL in SQL drops it from the
    # same registry, psycopg notices the command and prepares it again.
    for i in range(8):
        assert conn.execute("SELECT %s::int + 1", (i,)).fetchone() == (i + 1,)
    assert conn.execute("DEALLOCATE ALL").statusmessage == "DEALLOCATE ALL"
    for i in range(8):
        assert conn.execute("SELECT %s::int + 1", (i,)).fetchone() == (i + 1,)
    # PREPARE / EXECUTE / DEALLOCATE by name.
    conn.execute("PREPARE twice (int) AS SELECT $1 * 2")
    assert conn.execute("EXECUTE twice (21)").fetchone() == (42,)
    conn.execute("DEALLOCATE twice")
    with pytest.raises(errors.InvalidSqlStatementName):
        conn.execute("DEALLOCATE twice")


def test_triggers_notify_and_audit():
    """A trigger that stamps rows, audits them and notifies listeners, as realtime apps
    write one; its writes commit (fast) and harden with the row's, and a rolled-back
    savepoint takes its notification back."""
    with psycopg.connect(DSN, autocommit=True) as c, psycopg.connect(DSN, autocommit=True) as l:
        c.execute("DROP TABLE IF EXISTS tr_items, tr_audit")
        c.execute("CREATE TABLE tr_items (id serial PRIMARY KEY, name text, version int DEFAULT 0)")
        c.execute("CREATE TABLE tr_audit (seq serial PRIMARY KEY, op text, doc jsonb)")
        c.execute(
            """CREATE OR REPLACE FUNCTION tr_items_changed() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP = 'UPDATE' THEN
                    NEW.version := OLD.version + 1;
                END IF;
                INSERT INTO tr_audit (op, doc) VALUES (TG_OP, to_jsonb(NEW));
                PERFORM pg_notify('tr_items', json_build_object('op', TG_OP, 'id', NEW.id)::text);
                RETURN NEW;
            END $$"""
        )
        c.execute(
            "CREATE TRIGGER tr_items_changed BEFORE INSERT OR UPDATE ON tr_items "
            "FOR EACH ROW EXECUTE FUNCTION tr_items_changed()"
        )
        l.execute("LISTEN tr_items")
        c.execute("SET synchronous_commit = off")
        row = c.execute("INSERT INTO tr_items (name) VALUES (%s) RETURNING id, version", ("a",)).fetchone()
        txid = c.execute("SELECT kiln_last_txid()").fetchone()[0]
        assert c.execute("SELECT kiln_wait(%s, 5000)", (txid,)).fetchone() == ("durable",)
        with c.transaction():
            c.execute("UPDATE tr_items SET name = 'b' WHERE id = %s", (row[0],))
            with pytest.raises(errors.DivisionByZero):
                with c.transaction():
                    c.execute("UPDATE tr_items SET name = 'c' WHERE id = %s", (row[0],))
                    c.execute("SELECT 1 / 0")
        got = [n.payload for n in l.notifies(timeout=2, stop_after=2)]
        assert got == [f'{{"op" : "INSERT", "id" : {row[0]}}}', f'{{"op" : "UPDATE", "id" : {row[0]}}}'], got
        assert c.execute("SELECT name, version FROM tr_items").fetchall() == [("b", 1)]
        audit = c.execute("SELECT op, doc->>'name', (doc->>'version')::int FROM tr_audit ORDER BY seq").fetchall()
        assert audit == [("INSERT", "a", 0), ("UPDATE", "b", 1)], audit
