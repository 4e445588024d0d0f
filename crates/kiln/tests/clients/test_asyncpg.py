"""asyncpg against a running Kiln server (KILN_DSN) and a stock PostgreSQL (PG_DSN), with the
same expectations: asyncpg speaks the binary format for every value, describes every
statement and resolves unknown types with its own catalog query on first use, copies in
binary, and reads constraint and table names off errors.

Run by `cargo test -p kiln --test asyncpg`, which starts both servers."""

import asyncio
import datetime
import decimal
import ipaddress
import json
import os
import uuid
from decimal import Decimal

import asyncpg
import pytest

SERVERS = [k for k in ("KILN_DSN", "PG_DSN") if os.environ.get(k)]


@pytest.fixture(params=SERVERS)
def dsn(request):
    return os.environ[request.param]


def run(coro):
    return asyncio.run(coro)


async def schema(c):
    await c.execute(
        """
        DROP TABLE IF EXISTS ap_item, ap_owner CASCADE;
        DROP TYPE IF EXISTS ap_mood;
        CREATE TYPE ap_mood AS ENUM ('sad', 'ok', 'happy');
        CREATE TABLE ap_owner (id serial PRIMARY KEY, name text NOT NULL UNIQUE);
        CREATE TABLE ap_item (
            id bigserial PRIMARY KEY,
            owner_id int REFERENCES ap_owner (id) ON DELETE CASCADE,
            name varchar(40), price numeric(10, 2), qty int, tags text[], meta jsonb,
            made timestamptz, day date, dur interval, u uuid DEFAULT gen_random_uuid(),
            mood ap_mood, flag bool, raw bytea, f8 float8, t time, small int2
        );
        """
    )


ROW = (
    "n1",
    Decimal("0.00"),
    3,
    ["a", "b c", None],
    json.dumps({"k": [1, 2]}),
    datetime.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.timezone.utc),
    datetime.date(2024, 2, 29),
    datetime.timedelta(days=1, seconds=5, microseconds=7),
    "happy",
    True,
    b"\x00\xff\x01",
    -1.5,
    datetime.time(23, 59, 58, 123456),
    -7,
)
COLUMNS = "name, price, qty, tags, meta, made, day, dur, mood, flag, raw, f8, t, small"


def test_binary_values_round_trip(dsn):
    async def go():
        c = await asyncpg.connect(dsn)
        try:
            await schema(c)
            oid = await c.fetchval("INSERT INTO ap_owner (name) VALUES ($1) RETURNING id", "ann")
            args = ", ".join(f"${i}" for i in range(2, len(ROW) + 2))
            await c.execute(f"INSERT INTO ap_item (owner_id, {COLUMNS}) VALUES ($1, {args})", oid, *ROW)
            got = await c.fetchrow(f"SELECT {COLUMNS} FROM ap_item")
            assert tuple(got) == ROW
            # numeric keeps its scale in binary, zero too.
            assert str(got["price"]) == "0.00"
            assert isinstance(await c.fetchval("SELECT u FROM ap_item"), uuid.UUID)
            # NULLs of every type, and the types asyncpg was told.
            nulls = ", ".join("NULL" for _ in ROW)
            await c.execute(f"INSERT INTO ap_item ({COLUMNS}) VALUES ({nulls})")
            row = await c.fetchrow(f"SELECT {COLUMNS} FROM ap_item WHERE name IS NULL")
            assert tuple(row) == (None,) * len(ROW)
            stmt = await c.prepare(f"SELECT {COLUMNS} FROM ap_item WHERE qty > $1")
            assert [p.name for p in stmt.get_parameters()] == ["int4"]
            assert [a.type.name for a in stmt.get_attributes()] == [
                "varchar", "numeric", "int4", "text[]", "jsonb", "timestamptz", "date",
                "interval", "ap_mood", "bool", "bytea", "float8", "time", "int2",
            ]
            # A codec for jsonb, set through asyncpg's type introspection.
            await c.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
            assert await c.fetchval("SELECT meta FROM ap_item WHERE qty = 3") == {"k": [1, 2]}
            assert await c.fetchval("SELECT $1::jsonb -> 'k' -> 1", {"k": [5, 6]}) == 6
        finally:
            await c.close()

    run(go())


def test_network_addresses(dsn):
    """inet and cidr in asyncpg's binary form: addresses with and without a mask, IPv6,
    arrays, and the containment operators in a parameterized query."""
    async def go():
        c = await asyncpg.connect(dsn)
        try:
            await c.execute("DROP TABLE IF EXISTS ap_net")
            await c.execute(
                "CREATE TABLE ap_net (id int PRIMARY KEY, addr inet, net cidr, seen inet[])"
            )
            rows = [
                (1, ipaddress.ip_interface("10.1.2.3/24"), ipaddress.ip_network("10.0.0.0/8"),
                 [ipaddress.ip_address("10.1.2.3"), ipaddress.ip_address("::1")]),
                (2, ipaddress.ip_address("192.168.0.7"), ipaddress.ip_network("192.168.0.0/16"), []),
                (3, ipaddress.ip_interface("2001:db8::5/64"), ipaddress.ip_network("2001:db8::/32"), None),
            ]
            await c.executemany("INSERT INTO ap_net VALUES ($1, $2, $3, $4)", rows)
            got = await c.fetch("SELECT id, addr, net, seen FROM ap_net ORDER BY id")
            assert [tuple(r) for r in got] == [
                (1, ipaddress.ip_interface("10.1.2.3/24"), ipaddress.ip_network("10.0.0.0/8"),
                 [ipaddress.ip_address("10.1.2.3"), ipaddress.ip_address("::1")]),
                (2, ipaddress.ip_address("192.168.0.7"), ipaddress.ip_network("192.168.0.0/16"), []),
                (3, ipaddress.ip_interface("2001:db8::5/64"), ipaddress.ip_network("2001:db8::/32"), None),
            ]
            inside = await c.fetch(
                "SELECT id FROM ap_net WHERE addr << $1 ORDER BY id", ipaddress.ip_network("10.0.0.0/8")
            )
            assert [r["id"] for r in inside] == [1]
            assert await c.fetchval(
                "SELECT host(addr) FROM ap_net WHERE net >>= $1::inet", ipaddress.ip_address("2001:db8::1")
            ) == "2001:db8::5"
            assert await c.fetchval("SELECT network(addr) FROM ap_net WHERE id = 1") == ipaddress.ip_network("10.1.2.0/24")
            with pytest.raises(asyncpg.exceptions.InvalidTextRepresentationError):
                await c.fetchval("SELECT '10.1.2.3/24'::cidr")
        finally:
            await c.close()

    run(go())


def test_executemany_arrays_and_keyset_pages(dsn):
    async def go():
        c = await asyncpg.connect(dsn)
        try:
            await schema(c)
            oid = await c.fetchval("INSERT INTO ap_owner (name) VALUES ('bo') RETURNING id")
            await c.executemany(
                "INSERT INTO ap_item (owner_id, name, qty, price) VALUES ($1, $2, $3, $4)",
                [(oid, f"i{i:02}", i % 4, Decimal(i) / 4) for i in range(40)],
            )
            assert await c.fetchval("SELECT count(*) FROM ap_item") == 40
            ids = await c.fetch("SELECT id FROM ap_item WHERE id = ANY($1::bigint[]) ORDER BY id", [3, 5, 99])
            assert [r["id"] for r in ids] == [3, 5]
            total = await c.fetchrow("SELECT sum(price), array_agg(name ORDER BY id) FROM ap_item WHERE qty = $1", 2)
            assert total[0] == sum(Decimal(i) / 4 for i in range(40) if i % 4 == 2)
            assert total[1] == [f"i{i:02}" for i in range(40) if i % 4 == 2]
            # Keyset pagination over (qty, id), a row comparison, in pages of 7.
            seen, last = [], (-1, 0)
            while True:
                page = await c.fetch(
                    "SELECT qty, id FROM ap_item WHERE (qty, id) > ($1, $2) ORDER BY qty, id LIMIT 7", *last
                )
                if not page:
                    break
                seen += [(r["qty"], r["id"]) for r in page]
                last = seen[-1]
            assert seen == sorted((i % 4, i + 1) for i in range(40))
        finally:
            await c.close()

    run(go())


def test_binary_copy_both_ways(dsn, tmp_path):
    async def go():
        c = await asyncpg.connect(dsn)
        try:
            await schema(c)
            oid = await c.fetchval("INSERT INTO ap_owner (name) VALUES ('cy') RETURNING id")
            records = [(oid, *ROW[:1], Decimal(i), i, *ROW[3:]) for i in range(100)]
            res = await c.copy_records_to_table("ap_item", records=records, columns=["owner_id", *COLUMNS.split(", ")])
            assert res == "COPY 100"
            got = await c.fetch(f"SELECT owner_id, {COLUMNS} FROM ap_item ORDER BY qty")
            assert [tuple(r) for r in got] == records
            out = tmp_path / "items.bin"
            assert await c.copy_from_table("ap_item", columns=["qty", "name"], output=str(out), format="binary") == "COPY 100"
            await c.execute("DELETE FROM ap_item")
            assert await c.copy_to_table("ap_item", source=str(out), columns=["qty", "name"], format="binary") == "COPY 100"
            assert await c.fetchval("SELECT sum(qty) FROM ap_item WHERE name = 'n1'") == sum(range(100))
            # A bad row fails the COPY and leaves nothing behind.
            with pytest.raises(asyncpg.NotNullViolationError):
                await c.copy_records_to_table("ap_owner", records=[("x",), (None,)], columns=["name"])
            assert await c.fetchval("SELECT count(*) FROM ap_owner") == 1
        finally:
            await c.close()

    run(go())


def test_transactions_cursors_and_errors(dsn):
    async def go():
        c = await asyncpg.connect(dsn)
        try:
            await schema(c)
            await c.execute("INSERT INTO ap_owner (name) VALUES ('ann'), ('bo')")
            await c.execute("INSERT INTO ap_item (owner_id, qty) SELECT 1, g FROM generate_series(1, 12) g")
            async with c.transaction():
                cur = await c.cursor("SELECT qty FROM ap_item ORDER BY qty")
                assert [r["qty"] for r in await cur.fetch(3)] == [1, 2, 3]
                await cur.forward(2)
                assert (await cur.fetchrow())["qty"] == 6
                assert [r["qty"] async for r in c.cursor("SELECT qty FROM ap_item WHERE qty > $1", 9, prefetch=2)] == [10, 11, 12]
            # A savepoint (a nested transaction) rolls back alone; errors name their constraint.
            async with c.transaction():
                await c.execute("UPDATE ap_item SET qty = qty + 100")
                with pytest.raises(asyncpg.UniqueViolationError) as e:
                    async with c.transaction():
                        await c.execute("INSERT INTO ap_owner (name) VALUES ('ann')")
                assert e.value.constraint_name == "ap_owner_name_key"
                assert e.value.table_name == "ap_owner"
                assert e.value.schema_name == "public"
            assert await c.fetchval("SELECT min(qty) FROM ap_item") == 101
            with pytest.raises(asyncpg.ForeignKeyViolationError) as e:
                await c.execute("INSERT INTO ap_item (owner_id) VALUES (42)")
            assert e.value.constraint_name == "ap_item_owner_id_fkey"
            with pytest.raises(asyncpg.CheckViolationError):
                await c.execute("ALTER TABLE ap_item ADD CONSTRAINT ap_qty_small CHECK (qty < 50)")
            # A failed transaction rolls back everything in it.
            with pytest.raises(asyncpg.DivisionByZeroError):
                async with c.transaction(isolation="serializable"):
                    await c.execute("DELETE FROM ap_item")
                    await c.fetchval("SELECT 1 / count(*) FROM ap_item")
            assert await c.fetchval("SELECT count(*) FROM ap_item") == 12
            async with c.transaction(isolation="repeatable_read", readonly=True):
                with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
                    await c.execute("DELETE FROM ap_item")
            # ON DELETE CASCADE.
            await c.execute("DELETE FROM ap_owner WHERE id = 1")
            assert await c.fetchval("SELECT count(*) FROM ap_item") == 0
        finally:
            await c.close()

    run(go())


def test_functions_returning_rows(dsn):
    """RPC-style calls of functions that return rows, in binary: a table's rows, RETURNS
    TABLE, OUT arguments, one that writes (called as the FROM item), and recursion."""

    async def go():
        c = await asyncpg.connect(dsn)
        try:
            await schema(c)
            await c.execute(
                """
                CREATE OR REPLACE FUNCTION ap_add_owner(who text) RETURNS SETOF ap_owner
                    LANGUAGE sql AS $$ INSERT INTO ap_owner (name) VALUES (who) RETURNING * $$;
                CREATE OR REPLACE FUNCTION ap_owners_from(first int) RETURNS SETOF ap_owner
                    LANGUAGE sql STABLE AS $$ SELECT * FROM ap_owner WHERE id >= first ORDER BY id $$;
                CREATE OR REPLACE FUNCTION ap_series(n int) RETURNS TABLE (k int, label text)
                    LANGUAGE plpgsql AS $$
                    BEGIN FOR i IN 1..n LOOP k := i; label := 'n' || i; RETURN NEXT; END LOOP; END $$;
                CREATE OR REPLACE FUNCTION ap_bounds(x numeric, OUT lo numeric, OUT hi numeric)
                    LANGUAGE plpgsql AS $$ BEGIN lo := floor(x); hi := ceil(x); END $$;
                CREATE OR REPLACE FUNCTION ap_fib(n int) RETURNS bigint LANGUAGE plpgsql AS $$
                    BEGIN IF n < 2 THEN RETURN n; END IF; RETURN ap_fib(n - 1) + ap_fib(n - 2); END $$;
                """
            )
            first = await c.fetchrow("SELECT * FROM ap_add_owner($1)", "ann")
            await c.fetch("SELECT * FROM ap_add_owner($1)", "bob")
            assert first["name"] == "ann"
            rows = await c.fetch("SELECT id, name FROM ap_owners_from($1)", first["id"])
            assert [r["name"] for r in rows] == ["ann", "bob"]
            rows = await c.fetch("SELECT * FROM ap_series($1) WHERE k > 1", 3)
            assert [tuple(r) for r in rows] == [(2, "n2"), (3, "n3")]
            row = await c.fetchrow("SELECT * FROM ap_bounds($1)", Decimal("2.5"))
            assert (row["lo"], row["hi"]) == (Decimal("2"), Decimal("3"))
            assert await c.fetchval("SELECT ap_fib($1)", 20) == 6765
            assert await c.fetchval("SELECT count(*) FROM ap_series(10)") == 10
        finally:
            await c.execute(
                "DROP FUNCTION IF EXISTS ap_add_owner, ap_owners_from, ap_series, ap_bounds, ap_fib"
            )
            await c.close()

    run(go())


def test_numerics_beyond_28_digits(dsn):
    """Values of a token ledger (uint256 amounts, 18 decimals) in binary, both ways."""
    decimal.getcontext().prec = 200  # Python's own arithmetic keeps 28 digits otherwise

    async def go():
        c = await asyncpg.connect(dsn)
        try:
            await c.execute("DROP TABLE IF EXISTS ap_wei")
            await c.execute("CREATE TABLE ap_wei (id int PRIMARY KEY, amount numeric(78, 0), rate numeric(38, 18))")
            top = Decimal(2**256 - 1)
            rate = Decimal("12345678901234567890.123456789012345678")
            await c.executemany(
                "INSERT INTO ap_wei VALUES ($1, $2, $3)",
                [(1, top, rate), (2, Decimal(-1), Decimal("-0.000000000000000001")), (3, Decimal(0), Decimal("0E-18"))],
            )
            rows = await c.fetch("SELECT amount, rate FROM ap_wei ORDER BY id")
            assert [tuple(r) for r in rows] == [(top, rate), (Decimal(-1), Decimal("-0.000000000000000001")), (Decimal(0), Decimal("0E-18"))]
            assert str(rows[2]["rate"]) == "0E-18"
            # Arithmetic stays exact; a value past the column is 22003 and writes nothing.
            assert await c.fetchval("SELECT sum(amount) FROM ap_wei") == top - 1
            assert await c.fetchval("SELECT $1::numeric * $1::numeric", rate) == rate * rate
            with pytest.raises(asyncpg.NumericValueOutOfRangeError):
                await c.execute("INSERT INTO ap_wei VALUES (4, $1, 0)", top * 10)
            assert await c.fetchval("SELECT count(*) FROM ap_wei") == 3
        finally:
            await c.execute("DROP TABLE IF EXISTS ap_wei")
            await c.close()

    run(go())


def test_pool(dsn):
    async def go():
        async with asyncpg.create_pool(dsn, min_size=2, max_size=4) as pool:
            got = await asyncio.gather(*[pool.fetchval("SELECT $1::int * 2", i) for i in range(20)])
            assert got == [i * 2 for i in range(20)]
            async with pool.acquire() as c:
                await c.execute("SET application_name = 'pooled'")
            # The pool resets a connection it takes back (RESET ALL and friends).
            names = await asyncio.gather(*[pool.fetchval("SHOW application_name") for _ in range(8)])
            assert set(names) == {""}

    run(go())


def test_ed_surface():
    if "KILN_DSN" not in SERVERS:
        pytest.skip("the ED surface is Kiln's")

    async def go():
        c = await asyncpg.connect(os.environ["KILN_DSN"])
        try:
            await schema(c)
            # A fast transaction: acknowledged at commit, durable later.
            await c.execute("SET synchronous_commit = off")
            await c.execute("INSERT INTO ap_owner (name) VALUES ('fast')")
            txid = await c.fetchval("SELECT kiln_last_txid()")
            assert await c.fetchval("SELECT kiln_txn_status($1)", txid) in ("committed", "durable")
            assert await c.fetchval("SELECT kiln_wait($1, 5000)", txid) == "durable"
            # A safe one: durable when acknowledged.
            await c.execute("SET synchronous_commit = on")
            async with c.transaction():
                await c.execute("INSERT INTO ap_owner (name) VALUES ('safe')")
            txid = await c.fetchval("SELECT kiln_last_txid()")
            assert await c.fetchval("SELECT kiln_txn_status($1)", txid) == "durable"
        finally:
            await c.close()

    run(go())
