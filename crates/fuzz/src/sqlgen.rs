//! Random SQL: statements generated from a grammar over the fuzzer's schema (expressions of
//! random depth, joins, grouping, subqueries, DML, transaction control, settings and date
//! styles, triggers, generated columns, functions and procedures, domains, temporary tables
//! and materialized views), hostile
//! shapes (deep chains, huge lists, huge and odd literals), and byte-level mutations of
//! both.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;

/// The statements that create the schema the generator uses.
pub const SCHEMA: &[&str] = &[
    "CREATE TABLE f0 (k int PRIMARY KEY, a int, b text, c numeric(12,2), d boolean, e date, f bigint)",
    "CREATE TABLE f1 (k int, j int, v text, w double precision, PRIMARY KEY (k, j))",
    "CREATE INDEX f1_v ON f1 (v)",
    "CREATE TABLE f2 (id bigint PRIMARY KEY, s varchar(20) UNIQUE, t timestamp, n smallint)",
    "INSERT INTO f0 SELECT g, g % 7, 'b' || g, g * 1.5, g % 2 = 0, date '2020-01-01' + g, g * 1000 FROM generate_series(1, 200) AS s (g)",
    "INSERT INTO f1 SELECT g % 20, g, 'v' || (g % 13), g / 3.0 FROM generate_series(1, 300) AS s (g)",
    "INSERT INTO f2 VALUES (1, 'one', '2024-01-01 10:00:00', 1), (2, 'two', NULL, -5), (3, NULL, '1999-12-31 23:59:59', 32767)",
];

const COLUMNS: &[(&str, &[&str])] = &[
    ("f0", &["k", "a", "b", "c", "d", "e", "f"]),
    ("f1", &["k", "j", "v", "w"]),
    ("f2", &["id", "s", "t", "n"]),
];

const FUNCTIONS: &[&str] = &[
    "lower",
    "upper",
    "length",
    "abs",
    "coalesce",
    "nullif",
    "greatest",
    "least",
    "round",
    "floor",
    "ceil",
    "substr",
    "btrim",
    "concat",
    "repeat",
    "now",
    "random",
    "version",
    "current_database",
    "kiln_last_txid",
    "kiln_txn_status",
    "array_to_string",
    "quote_ident",
    "no_such_function",
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "string_agg",
    "age",
    "justify_interval",
    "make_interval",
    "date_trunc",
    "date_part",
    "timezone",
    "generate_series",
    "jsonb_set",
    "jsonb_build_object",
    "to_jsonb",
    "jsonb_array_elements",
    "jsonb_pretty",
    "to_char",
    "to_date",
    "to_timestamp",
    "to_number",
    "current_setting",
    "sqrt",
    "exp",
    "ln",
    "log",
    "power",
    "scale",
    "trim_scale",
    "stddev",
    "host",
    "set_masklen",
    "inet_merge",
    "broadcast",
    "to_tsvector",
    "to_tsquery",
    "plainto_tsquery",
    "phraseto_tsquery",
    "websearch_to_tsquery",
    "ts_rank",
    "setweight",
    "strip",
    "tsquery_phrase",
];

const BINARY: &[&str] = &[
    "@@",
    "+",
    "-",
    "*",
    "/",
    "%",
    "||",
    "=",
    "<>",
    "<",
    "<=",
    ">",
    ">=",
    "AND",
    "OR",
    "~",
    "!~*",
    "IS DISTINCT FROM",
    "IS NOT DISTINCT FROM",
    "->",
    "->>",
    "#>",
    "@>",
    "^",
    "?",
    "#-",
    "<<",
    ">>=",
    "&&",
    "&",
];

const LITERALS: &[&str] = &[
    "0",
    "1",
    "-1",
    "42",
    "2147483647",
    "-2147483648",
    "9223372036854775807",
    "(-9223372036854775807 - 1)",
    "99999999999999999999999999999999999",
    "1e131071::numeric",
    "-1e-16383::numeric",
    "115792089237316195423570985008687907853269984665640564039457584007913129639935",
    "5999.5::numeric",
    "0.0000000000000000000000000000000000000001",
    "1.5",
    "-0.0001",
    "1e308",
    "'NaN'::float8",
    "'Infinity'::float8",
    "NULL",
    "TRUE",
    "FALSE",
    "''",
    "'x'",
    "'it''s'",
    "'%a_b\\'",
    "E'\\\\x'",
    "'{1,2,NULL}'",
    "'2020-02-29'::date",
    "'0001-01-01'::date",
    "'294276-12-31'::date",
    "'2024-01-01 00:00:00'::timestamp",
    "'2024-03-10 02:30'::timestamptz",
    "'2024-11-03 01:30 America/New_York'::timestamptz",
    "'January 8, 99 BC'::date",
    "'1/2/03 04:05 PM'::timestamp",
    "'Tue Jan 02 03:04:05.5 2024 EST'::timestamptz",
    "'19990108 040506.789'::timestamp",
    "'J2451187'::date",
    "'today allballs'::timestamp",
    "'-1 2:03:04'::interval",
    "'2024-01-02 03:04:05.123456'::timestamp(2)",
    "'1850-01-01 00:00+05:53:28'::timestamptz",
    "'294276-12-31 23:59:59+15:59'::timestamptz",
    "'infinity'::timestamptz",
    "'{\"a\": [1, {\"b\": null}], \"c\": 1e3}'::jsonb",
    "'[1, \"x\", 2.50]'::json",
    "'\"s\"'::jsonb",
    "'10.1.2.3/8'::inet",
    "'2001:db8::/32'::cidr",
    "'255.255.255.255'::inet",
    "'::ffff:1.2.3.4/120'::inet",
    "'fat:1A,3 rat:2 ''it''''s'':4'::tsvector",
    "'fat & !(rat | cat) <2> sup:*AB'::tsquery",
    "'english'::regconfig",
    "'The quick-brown foxes, foo@bar.com http://x.org/a 3.14 <b>&amp;'",
    "'{a,0}'",
    "'Europe/Berlin'",
    "'UTC+25'",
    "'day'",
    "interval '1 day 02:03:04.5'",
    "'-178000000 years'::interval",
    "interval 'P1Y2M3DT4H'",
    "'@ 1 mon ago'::interval hour",
    "time '23:59:59'",
    "32767::smallint",
    "'héllo wörld'",
    "'\u{1F600}'",
    "$1",
    "$99",
];

const TYPES: &[&str] = &[
    "int",
    "smallint",
    "bigint",
    "text",
    "varchar(3)",
    "numeric",
    "numeric(5,2)",
    "numeric(78,0)",
    "numeric(3,-2)",
    "real",
    "double precision",
    "boolean",
    "date",
    "timestamp",
    "timestamptz",
    "time",
    "bytea",
    "char(2)",
    "json",
    "jsonb",
    "interval",
    "tsvector",
    "tsquery",
];

/// A statement generator.
pub struct Gen<'r> {
    rng: &'r mut StdRng,
    tables: Vec<(&'static str, &'static [&'static str])>,
}

impl<'r> Gen<'r> {
    /// A generator drawing from `rng`.
    pub fn new(rng: &'r mut StdRng) -> Gen<'r> {
        Gen { rng, tables: COLUMNS.to_vec() }
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        *items.choose(self.rng).expect("non-empty")
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.gen_bool(p)
    }

    /// One statement: mostly grammatical, sometimes hostile, sometimes mutated.
    pub fn statement(&mut self) -> Vec<u8> {
        let text = match self.rng.gen_range(0..100) {
            0..=44 => self.select(3),
            45..=54 => self.insert(),
            55..=62 => self.update(),
            63..=65 => self.delete(),
            66..=67 => self.merge(),
            68..=77 => self.utility(),
            78..=89 => self.hostile(),
            _ => self.token_soup(),
        };
        let mut bytes = text.into_bytes();
        if self.chance(0.15) {
            self.mutate(&mut bytes);
        }
        bytes
    }

    fn table(&mut self) -> (&'static str, &'static [&'static str]) {
        let i = self.rng.gen_range(0..self.tables.len());
        self.tables[i]
    }

    fn column(&mut self, cols: &[&'static str], alias: Option<&str>) -> String {
        let c = self.pick(cols);
        match alias {
            Some(a) if self.chance(0.7) => format!("{a}.{c}"),
            _ => c.to_string(),
        }
    }

    /// An expression over `cols` (qualified by `alias` sometimes), at most `depth` deep.
    pub fn expr(&mut self, depth: u32, cols: &[&'static str], alias: Option<&str>) -> String {
        if depth == 0 || self.chance(0.3) {
            return if self.chance(0.5) && !cols.is_empty() {
                self.column(cols, alias)
            } else {
                self.pick(LITERALS).to_string()
            };
        }
        let d = depth - 1;
        match self.rng.gen_range(0..16) {
            0..=4 => {
                let op = self.pick(BINARY);
                format!("({} {op} {})", self.expr(d, cols, alias), self.expr(d, cols, alias))
            }
            5 => format!("(NOT {})", self.expr(d, cols, alias)),
            6 => format!("(-{})", self.expr(d, cols, alias)),
            7 => {
                let f = self.pick(FUNCTIONS);
                let n = self.rng.gen_range(0..4);
                let args: Vec<String> = (0..n).map(|_| self.expr(d, cols, alias)).collect();
                format!("{f}({})", args.join(", "))
            }
            8 => {
                let t = self.pick(TYPES);
                format!("CAST({} AS {t})", self.expr(d, cols, alias))
            }
            9 => format!(
                "CASE WHEN {} THEN {} ELSE {} END",
                self.expr(d, cols, alias),
                self.expr(d, cols, alias),
                self.expr(d, cols, alias)
            ),
            10 => {
                let n = self.rng.gen_range(0..6);
                let items: Vec<String> = (0..n).map(|_| self.expr(d, cols, alias)).collect();
                let not = if self.chance(0.3) { "NOT " } else { "" };
                format!("({} {not}IN ({}))", self.expr(d, cols, alias), items.join(", "))
            }
            11 => format!(
                "({} BETWEEN {} AND {})",
                self.expr(d, cols, alias),
                self.expr(d, cols, alias),
                self.expr(d, cols, alias)
            ),
            12 => {
                let like = if self.chance(0.5) { "LIKE" } else { "ILIKE" };
                let pattern = self.pick(&["'%'", "'a%b_'", "'%%%%%%%%%x'", "'\\'", "NULL"]);
                format!("({} {like} {pattern})", self.expr(d, cols, alias))
            }
            13 => format!(
                "({} IS {}NULL)",
                self.expr(d, cols, alias),
                if self.chance(0.5) { "NOT " } else { "" }
            ),
            14 => {
                let (t, tc) = self.table();
                let kind = self.rng.gen_range(0..3);
                let inner = format!(
                    "SELECT {} FROM {t} WHERE {}",
                    self.expr(1, tc, None),
                    self.expr(2, tc, None)
                );
                match kind {
                    0 => format!("({inner} LIMIT 1)"),
                    1 => format!("EXISTS ({inner})"),
                    _ => format!("({} IN ({inner}))", self.expr(d, cols, alias)),
                }
            }
            _ => {
                // Row values: compared pair by pair, or IN a two-column subquery.
                let left = format!(
                    "{}({}, {})",
                    if self.chance(0.3) { "ROW" } else { "" },
                    self.expr(d, cols, alias),
                    self.expr(d, cols, alias)
                );
                if self.chance(0.25) {
                    let (t, tc) = self.table();
                    let not = if self.chance(0.3) { "NOT " } else { "" };
                    return format!(
                        "({left} {not}IN (SELECT {}, {} FROM {t}))",
                        self.expr(1, tc, None),
                        self.expr(1, tc, None)
                    );
                }
                let op = self.pick(&["=", "<>", "<", "<=", ">", ">="]);
                format!(
                    "({left} {op} ({}, {}))",
                    self.expr(d, cols, alias),
                    self.expr(d, cols, alias)
                )
            }
        }
    }

    /// A SELECT.
    pub fn select(&mut self, depth: u32) -> String {
        let (t, cols) = self.table();
        let join = self.chance(0.3);
        let (mut all_cols, from) = if join {
            let (u, ucols) = self.table();
            let kind = self.pick(&["JOIN", "LEFT JOIN", "CROSS JOIN", "RIGHT JOIN"]);
            let on = if kind == "CROSS JOIN" {
                String::new()
            } else {
                format!(" ON {}", self.expr(2, &[cols, ucols].concat(), None))
            };
            ([cols, ucols].concat(), format!("{t} x {kind} {u} y{on}"))
        } else {
            (cols.to_vec(), format!("{t} x"))
        };
        if join {
            all_cols.dedup();
        }
        let alias = if join { None } else { Some("x") };
        let n = self.rng.gen_range(1..4);
        let items: Vec<String> = (0..n).map(|_| self.expr(depth, &all_cols, alias)).collect();
        let mut sql = format!(
            "SELECT {}{} FROM {from}",
            if self.chance(0.1) { "DISTINCT " } else { "" },
            items.join(", ")
        );
        if self.chance(0.7) {
            sql += &format!(" WHERE {}", self.expr(depth, &all_cols, alias));
        }
        if self.chance(0.25) {
            let key = self.column(&all_cols, alias);
            let other = self.column(&all_cols, alias);
            sql += &match self.rng.gen_range(0..5) {
                0 => format!(" GROUP BY ROLLUP ({key}, {other})"),
                1 => format!(" GROUP BY CUBE ({key}, ({other}, {key}))"),
                2 => format!(" GROUP BY GROUPING SETS (({key}), (), ROLLUP ({other}))"),
                _ => format!(" GROUP BY {key}"),
            };
            if self.chance(0.5) {
                sql += &format!(" HAVING {}", self.expr(2, &all_cols, alias));
            }
        }
        if self.chance(0.4) {
            sql += &format!(" ORDER BY {}", self.rng.gen_range(1..=n + 1));
            if self.chance(0.3) {
                sql += " DESC NULLS FIRST";
            }
        }
        if self.chance(0.3) {
            sql += &format!(
                " LIMIT {}",
                self.pick(&["0", "1", "5", "-1", "NULL", "9223372036854775807"])
            );
        }
        if self.chance(0.1) {
            sql += &format!(" OFFSET {}", self.pick(&["0", "3", "-2"]));
        }
        if self.chance(0.08) {
            sql += " FOR UPDATE";
        }
        if self.chance(0.1) {
            sql = format!(
                "{sql} {} {}",
                self.pick(&["UNION", "UNION ALL", "INTERSECT", "EXCEPT"]),
                self.select(1)
            );
        }
        sql
    }

    fn insert(&mut self) -> String {
        let (t, cols) = self.table();
        let n = self.rng.gen_range(1..4);
        let rows: Vec<String> = (0..n)
            .map(|_| {
                let vals: Vec<String> = cols.iter().map(|_| self.expr(1, &[], None)).collect();
                format!("({})", vals.join(", "))
            })
            .collect();
        let conflict = match self.rng.gen_range(0..4) {
            0 => " ON CONFLICT DO NOTHING".to_string(),
            1 => format!(
                " ON CONFLICT ({}) DO UPDATE SET {} = excluded.{}",
                cols[0], cols[1], cols[1]
            ),
            _ => String::new(),
        };
        let returning = if self.chance(0.3) { " RETURNING *" } else { "" };
        format!("INSERT INTO {t} VALUES {}{conflict}{returning}", rows.join(", "))
    }

    fn update(&mut self) -> String {
        let (t, cols) = self.table();
        let c = self.pick(&cols[1..]);
        format!(
            "UPDATE {t} SET {c} = {} WHERE {}",
            self.expr(2, cols, None),
            self.expr(2, cols, None)
        )
    }

    fn delete(&mut self) -> String {
        let (t, cols) = self.table();
        format!("DELETE FROM {t} WHERE {}", self.expr(2, cols, None))
    }

    /// MERGE of one table into another (or into itself), or of VALUES, with every kind of
    /// WHEN clause.
    fn merge(&mut self) -> String {
        let (t, cols) = self.table();
        let (src, scols) = self.table();
        let source = match self.rng.gen_range(0..3) {
            0 => format!("{src} AS s"),
            1 => format!("(SELECT * FROM {src} WHERE {}) AS s", self.expr(1, scols, None)),
            _ => {
                let vals: Vec<String> = scols.iter().map(|_| self.expr(1, &[], None)).collect();
                format!("(VALUES ({})) AS s ({})", vals.join(", "), scols.join(", "))
            }
        };
        let mut sql =
            format!("MERGE INTO {t} AS m USING {source} ON m.{} = s.{}", cols[0], scols[0]);
        if self.chance(0.3) {
            sql += &format!(" AND {}", self.expr(1, cols, Some("m")));
        }
        for _ in 0..self.rng.gen_range(1..4) {
            let cond = if self.chance(0.5) {
                format!(" AND {}", self.expr(1, scols, Some("s")))
            } else {
                String::new()
            };
            sql += &match self.rng.gen_range(0..5) {
                0 => {
                    let c = self.pick(&cols[1..]);
                    format!(
                        " WHEN MATCHED{cond} THEN UPDATE SET {c} = {}",
                        self.expr(2, cols, Some("m"))
                    )
                }
                1 => format!(" WHEN MATCHED{cond} THEN DELETE"),
                2 => format!(" WHEN MATCHED{cond} THEN DO NOTHING"),
                3 => " WHEN NOT MATCHED THEN INSERT DEFAULT VALUES".to_string(),
                _ => {
                    let vals: Vec<String> =
                        cols.iter().map(|_| self.expr(1, scols, Some("s"))).collect();
                    format!(" WHEN NOT MATCHED{cond} THEN INSERT VALUES ({})", vals.join(", "))
                }
            };
        }
        sql
    }

    fn utility(&mut self) -> String {
        self.pick(&[
            "BEGIN",
            "COMMIT",
            "ROLLBACK",
            "SAVEPOINT s1",
            "ROLLBACK TO SAVEPOINT s1",
            "RELEASE SAVEPOINT s1",
            "BEGIN ISOLATION LEVEL SERIALIZABLE",
            "BEGIN ISOLATION LEVEL REPEATABLE READ",
            "SET synchronous_commit = off",
            "SET synchronous_commit = on",
            "SHOW synchronous_commit",
            "SHOW ALL",
            "SHOW no_such_setting",
            "SET statement_timeout = 2000",
            "SELECT set_config('app.k', k::text, true), current_setting('app.k', true) FROM f0",
            "SELECT set_config('lock_timeout', '1.5s', false), 1 / 0",
            "SELECT current_setting(name, true) FROM (VALUES ('app.k'), ('work_mem'), (NULL)) v(name)",
            "SET TIME ZONE 'America/New_York'",
            "SET TIME ZONE 'Australia/Lord_Howe'",
            "SET TIME ZONE -15.5",
            "SET TIME ZONE INTERVAL '+05:45' HOUR TO MINUTE",
            "SET LOCAL TIME ZONE 'Asia/Kathmandu'",
            "SET timezone = 'Nowhere/Else'",
            "SET datestyle = 'SQL, DMY'",
            "SET datestyle = 'Postgres, YMD'",
            "SET datestyle = 'German'",
            "SET datestyle = 'iso, sql'",
            "SET intervalstyle = iso_8601",
            "SET intervalstyle = sql_standard",
            "SET LOCAL intervalstyle = postgres_verbose",
            "SELECT e, e::text, t, t::text, e - date '2000-01-01', interval '-1 2:03:04' FROM f0, f2",
            "CREATE TABLE IF NOT EXISTS fz_gen (k int PRIMARY KEY, a int, g int GENERATED ALWAYS AS (a * 2) STORED, h text GENERATED ALWAYS AS (upper(a::text)) STORED)",
            "INSERT INTO fz_gen (k, a) SELECT k, a FROM f0 ON CONFLICT (k) DO UPDATE SET a = excluded.a + 1",
            "UPDATE fz_gen SET a = a + k, g = DEFAULT",
            "INSERT INTO fz_gen VALUES (0, 0, 0)",
            "ALTER TABLE fz_gen ADD COLUMN IF NOT EXISTS i bigint GENERATED ALWAYS AS (k + a) STORED",
            "ALTER TABLE fz_gen ALTER COLUMN g DROP EXPRESSION IF EXISTS",
            "CREATE OR REPLACE FUNCTION fz_add(a int, b int DEFAULT 1) RETURNS int LANGUAGE sql AS $$ SELECT a + b $$",
            "CREATE OR REPLACE FUNCTION fz_add(a text, b text) RETURNS text LANGUAGE sql STRICT AS 'SELECT a || b'",
            "CREATE OR REPLACE FUNCTION fz_loop(n int) RETURNS bigint LANGUAGE plpgsql AS $$ DECLARE r record; s bigint := 0; BEGIN FOR r IN SELECT k FROM f0 LOOP s := s + r.k; EXIT WHEN s > n; END LOOP; WHILE s > 0 LOOP s := s - 1; END LOOP; RETURN s; END $$",
            "CREATE OR REPLACE FUNCTION fz_write(x int) RETURNS int LANGUAGE plpgsql AS $$ DECLARE got int; BEGIN UPDATE f0 SET k = k WHERE k = x RETURNING k INTO got; RETURN got; END $$",
            "CREATE OR REPLACE FUNCTION fz_fan(x int) RETURNS int LANGUAGE sql AS $$ SELECT fz_add(x) + fz_add(x, x) + fz_loop(x) $$",
            "CREATE OR REPLACE PROCEDURE fz_proc(x int) LANGUAGE plpgsql AS $$ BEGIN PERFORM fz_write(x); END $$",
            "SELECT fz_add(k), fz_add(k::text, 'x'), fz_fan(k), fz_loop(k) FROM f0 ORDER BY 1 LIMIT 5",
            "SELECT fz_write(1), fz_add(NULL, NULL)",
            "SELECT k, fz_write(k) FROM f0",
            "CREATE OR REPLACE FUNCTION fz_catch(x int) RETURNS text LANGUAGE plpgsql AS $$ BEGIN INSERT INTO f0 (k) VALUES (x); RETURN 'new'; EXCEPTION WHEN unique_violation OR not_null_violation THEN RETURN SQLSTATE; WHEN others THEN RAISE; END $$",
            "SELECT fz_catch(1), fz_catch(1)",
            "CREATE OR REPLACE FUNCTION fz_rows(x int) RETURNS SETOF f0 LANGUAGE sql STABLE AS $$ SELECT * FROM f0 WHERE k >= x $$",
            "CREATE OR REPLACE FUNCTION fz_tab(n int) RETURNS TABLE (i int, t text) LANGUAGE plpgsql AS $$ BEGIN FOR j IN 1..n LOOP i := j; t := repeat('x', j % 7); RETURN NEXT; END LOOP; RETURN QUERY SELECT k, NULL::text FROM f0 WHERE k < n; END $$",
            "CREATE OR REPLACE FUNCTION fz_out(x int, OUT lo int, INOUT hi int) LANGUAGE plpgsql AS $$ BEGIN lo := x - 1; hi := coalesce(hi, 0) + x; END $$",
            "CREATE OR REPLACE FUNCTION fz_ins(x int) RETURNS SETOF f0 LANGUAGE sql AS $$ INSERT INTO f0 (k) VALUES (x) ON CONFLICT DO NOTHING RETURNING * $$",
            "SELECT * FROM fz_rows(2) r JOIN fz_tab(5) t ON t.i = r.k",
            "SELECT f0.k, t.* FROM f0, fz_tab(f0.k % 9) WITH ORDINALITY t",
            "SELECT fz_tab(3), (fz_out(1, 2)).hi, * FROM fz_out(3, NULL)",
            "SELECT * FROM fz_ins(77), fz_rows(0) LIMIT 3",
            "SELECT * FROM fz_ins(78)",
            "SELECT count(*) FROM fz_tab(100000)",
            "CREATE OR REPLACE FUNCTION fz_rec(n int) RETURNS int LANGUAGE sql AS $$ SELECT CASE WHEN n <= 0 THEN 0 ELSE 1 + fz_rec(n - 1) END $$",
            "CREATE OR REPLACE FUNCTION fz_exp(n int) RETURNS bigint LANGUAGE plpgsql AS $$ BEGIN IF n <= 0 THEN RETURN 1; END IF; RETURN fz_exp(n - 1) + fz_exp(n - 1); END $$",
            "CREATE OR REPLACE FUNCTION fz_walk(n int) RETURNS SETOF int LANGUAGE plpgsql AS $$ BEGIN RETURN NEXT n; IF n > 0 THEN RETURN QUERY SELECT * FROM fz_walk(n - 1); END IF; END $$",
            "SELECT fz_rec(k * 60), fz_exp(k) FROM f0 ORDER BY k LIMIT 9",
            "SELECT fz_rec(100000)",
            "SELECT fz_exp(40)",
            "SELECT count(*) FROM fz_walk(450), fz_walk(3)",
            "CALL fz_proc(2)",
            "CALL fz_add(1, 2)",
            "DROP FUNCTION IF EXISTS fz_add(int, int)",
            "DROP FUNCTION fz_add",
            "DISCARD ALL",
            "RESET ALL",
            "EXPLAIN SELECT * FROM f0 WHERE k = 1",
            "SELECT rank() OVER w, sum(k) OVER (w ROWS 2 PRECEDING) FROM f0 WINDOW w AS (ORDER BY k)",
            "SELECT * FROM f0, jsonb_each(jsonb_build_object('k', f0.k)) e",
            "SELECT * FROM pg_stat_activity",
            "SELECT * FROM kiln_stat",
            "SELECT kiln_sync()",
            "TABLE f0",
            "VALUES (1, 2), (3)",
            "CREATE TABLE f0 (x int)",
            "DROP TABLE no_such_table",
            "CREATE TABLE tmp_fuzz (x int)",
            "DROP TABLE IF EXISTS tmp_fuzz",
            "CREATE SCHEMA IF NOT EXISTS fz",
            "CREATE TABLE IF NOT EXISTS fz.f0 (k int PRIMARY KEY, v text)",
            "INSERT INTO fz.f0 SELECT k, 'fz' FROM f0 ON CONFLICT DO NOTHING",
            "SET search_path TO fz, public",
            "SET LOCAL search_path = fz",
            "SELECT set_config('search_path', 'fz, public', false), current_schemas(true)",
            "RESET search_path",
            "CREATE VIEW fz.v AS SELECT k FROM f0",
            "DROP SCHEMA fz",
            "DROP SCHEMA IF EXISTS fz CASCADE",
            "CREATE TABLE \"a.b\" (x int)",
            "SELECT * FROM fz.f0 JOIN public.f0 USING (k)",
            "DEALLOCATE nope",
            "DEALLOCATE ALL",
            "PREPARE p1 AS SELECT $1::int",
            "EXECUTE p1 (1)",
            "EXECUTE p1 ('x')",
            "LISTEN kiln_durable",
            "UNLISTEN *",
            "COPY f0 TO STDOUT",
            "COPY f1 FROM STDIN",
            "VACUUM",
            "ANALYZE",
            "DISCARD ALL",
            "SELECT 1; SELECT 2; SELECT 1/0",
            "CREATE DOMAIN fzd AS int DEFAULT 3 NOT NULL CHECK (VALUE > 0 AND VALUE < 1000)",
            "CREATE DOMAIN fzs AS varchar(5) CHECK (VALUE ~ '^[a-z]*$')",
            "CREATE TABLE IF NOT EXISTS fzdt (k int PRIMARY KEY, d fzd, s fzs)",
            "INSERT INTO fzdt SELECT k, a + 1, lower(b) FROM f0 ON CONFLICT (k) DO UPDATE SET d = excluded.d * 7",
            "INSERT INTO fzdt (k) VALUES (-1)",
            "UPDATE fzdt SET d = d - 5, s = s || 'xyz'",
            "SELECT 5::fzd, NULL::fzd, 'abc'::fzs, CAST(k AS fzd) FROM f0",
            "ALTER DOMAIN fzd ADD CONSTRAINT fzd_even CHECK (VALUE % 2 = 0)",
            "ALTER DOMAIN fzd ADD CONSTRAINT fzd_odd CHECK (VALUE % 2 = 1) NOT VALID",
            "ALTER DOMAIN fzd VALIDATE CONSTRAINT fzd_odd",
            "ALTER DOMAIN fzd DROP CONSTRAINT IF EXISTS fzd_odd",
            "ALTER DOMAIN fzd DROP DEFAULT",
            "ALTER DOMAIN fzd SET NOT NULL",
            "ALTER TABLE fzdt ADD COLUMN IF NOT EXISTS e fzd",
            "DROP DOMAIN IF EXISTS fzd CASCADE",
            "DROP DOMAIN fzs",
            "CREATE TEMP TABLE IF NOT EXISTS fzt_tmp (k int PRIMARY KEY, v text) ON COMMIT DELETE ROWS",
            "CREATE TEMP TABLE f0 (k int)",
            "INSERT INTO fzt_tmp SELECT k, b FROM f0 ON CONFLICT DO NOTHING",
            "SELECT count(*) FROM fzt_tmp JOIN f0 USING (k)",
            "DROP TABLE IF EXISTS fzt_tmp",
            "BEGIN; CREATE TEMP TABLE fzt_drop ON COMMIT DROP AS SELECT * FROM f1; COMMIT",
            "CREATE MATERIALIZED VIEW IF NOT EXISTS fzmv AS SELECT a, count(*) AS n, sum(c) AS s FROM f0 GROUP BY a",
            "CREATE MATERIALIZED VIEW fzmv2 AS SELECT * FROM f1 WITH NO DATA",
            "REFRESH MATERIALIZED VIEW fzmv",
            "REFRESH MATERIALIZED VIEW CONCURRENTLY fzmv",
            "CREATE UNIQUE INDEX IF NOT EXISTS fzmv_a ON fzmv (a)",
            "REFRESH MATERIALIZED VIEW fzmv2 WITH NO DATA",
            "SELECT * FROM fzmv JOIN fzmv2 ON fzmv.a = fzmv2.k",
            "INSERT INTO fzmv VALUES (1, 1, 1)",
            "DROP MATERIALIZED VIEW IF EXISTS fzmv, fzmv2 CASCADE",
            "CREATE TYPE fz AS ENUM ('a', 'b', 'c')",
            "ALTER TYPE fz ADD VALUE IF NOT EXISTS 'ab' AFTER 'a'",
            "ALTER TYPE fz RENAME VALUE 'b' TO 'z'",
            "ALTER TYPE fz OWNER TO nobody",
            "CREATE TABLE fze (e fz[] PRIMARY KEY, f fz)",
            "INSERT INTO fze VALUES ('{a,c}', 'c'), (ARRAY['z']::fz[], NULL)",
            "SELECT f, enum_range(f, NULL), e FROM fze ORDER BY e, f",
            "DROP TYPE IF EXISTS fz CASCADE",
            "DO $$ BEGIN CREATE TYPE fz AS ENUM ('a'); EXCEPTION WHEN duplicate_object THEN NULL; END $$",
            "DO 'BEGIN INSERT INTO f2 VALUES (98, NULL, NULL, NULL); EXCEPTION WHEN unique_violation OR SQLSTATE ''23505'' THEN NULL; END'",
            "CREATE OR REPLACE FUNCTION fzt() RETURNS trigger LANGUAGE plpgsql AS $$ DECLARE n bigint := 0; BEGIN SELECT count(*) INTO n FROM f1 WHERE k = NEW.k; IF n > 5 THEN NEW.b := NEW.b || n; ELSIF NEW.a IS NULL THEN RETURN NULL; END IF; IF TG_OP = 'UPDATE' AND NEW IS DISTINCT FROM OLD THEN NEW.f := coalesce(OLD.f, 0) + 1; END IF; RETURN NEW; END $$",
            "CREATE OR REPLACE TRIGGER fzt BEFORE INSERT OR UPDATE OF a, b ON f0 FOR EACH ROW WHEN (NEW.k % 3 = 0) EXECUTE FUNCTION fzt()",
            "CREATE OR REPLACE FUNCTION fzlog() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO f1 VALUES (coalesce(NEW.k, OLD.k) % 20, 1000 + coalesce(NEW.k, OLD.k), TG_OP || TG_ARGV[0], 0) ON CONFLICT DO NOTHING; RAISE NOTICE '% %', TG_OP, TG_LEVEL; RETURN coalesce(NEW, OLD); END $$",
            "CREATE OR REPLACE TRIGGER fzlog AFTER INSERT OR DELETE ON f2 FOR EACH ROW EXECUTE FUNCTION fzlog('x')",
            "CREATE OR REPLACE TRIGGER fzstmt BEFORE UPDATE ON f1 EXECUTE FUNCTION fzlog()",
            "CREATE OR REPLACE FUNCTION fzloop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE f2 SET n = n WHERE id = NEW.id; RETURN NEW; END $$",
            "CREATE OR REPLACE TRIGGER fzloop AFTER UPDATE ON f2 FOR EACH ROW EXECUTE FUNCTION fzloop()",
            "CREATE OR REPLACE FUNCTION fzbad() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.nosuch := 1; RETURN NEW; END $$",
            "CREATE OR REPLACE TRIGGER fzbad BEFORE DELETE ON f2 FOR EACH ROW EXECUTE FUNCTION fzbad()",
            "DROP TRIGGER IF EXISTS fzt ON f0",
            "DROP TRIGGER IF EXISTS fzloop ON f2",
            "DROP TRIGGER IF EXISTS fzbad ON f2",
            "DROP FUNCTION IF EXISTS fzlog() CASCADE",
            "ALTER TABLE f0 RENAME COLUMN a TO a2",
            "ALTER TABLE f0 RENAME COLUMN a2 TO a",
            "SELECT tgname, pg_get_triggerdef(oid, true) FROM pg_trigger",
            "DO $$ DECLARE r record; n int := 0; BEGIN FOR r IN SELECT * FROM f1 ORDER BY 1 LIMIT 50 LOOP n := n + 1; EXIT WHEN n > 40; END LOOP; RAISE NOTICE '%', n; END $$",
            "DO $$ DECLARE t text; c bigint; BEGIN FOR t IN SELECT tablename FROM pg_tables WHERE tablename LIKE 'f%' LOOP EXECUTE format('SELECT count(*) FROM %I', t) INTO c; END LOOP; END $$",
            "DO $$ DECLARE k int; BEGIN EXECUTE 'INSERT INTO f2 VALUES ($1, NULL, NULL, NULL) RETURNING id' INTO STRICT k USING 97; DELETE FROM f2 WHERE id = k; END $$",
            "DO $$ DECLARE i int := 0; BEGIN LOOP i := i + 1; EXIT WHEN i > 100000; END LOOP; END $$",
            "DO $$ BEGIN EXECUTE 'DO $i$ BEGIN EXECUTE ''SELECT 1''; END $i$'; END $$",
            "CREATE OR REPLACE FUNCTION fzdyn(t text) RETURNS bigint LANGUAGE plpgsql AS $$ DECLARE c bigint; BEGIN EXECUTE format('SELECT count(*) FROM %I', t) INTO c; RETURN c; END $$",
            "SELECT fzdyn('f1'), fzdyn('nosuch')",
            "SELECT k, fzdyn('f2') FROM f1 LIMIT 2",
            "CREATE OR REPLACE FUNCTION fzrows(t text) RETURNS bigint LANGUAGE plpgsql AS $$ DECLARE r record; n bigint := 0; BEGIN FOR r IN EXECUTE format('SELECT * FROM %I LIMIT 20', t) LOOP n := n + 1; END LOOP; RETURN n; END $$",
            "SELECT fzrows('f1'), fzrows('f2')",
            "CREATE OR REPLACE FUNCTION fzddl() RETURNS bigint LANGUAGE plpgsql AS $$ DECLARE c bigint; BEGIN CREATE TEMP TABLE IF NOT EXISTS fztmp (v int); INSERT INTO fztmp SELECT k FROM f1 LIMIT 5; SELECT count(*) INTO c FROM fztmp; DROP TABLE fztmp; RETURN c; END $$",
            "SELECT fzddl()",
            "SELECT fzddl(), (SELECT count(*) FROM f1)",
            "CREATE OR REPLACE FUNCTION fzalter() RETURNS int LANGUAGE plpgsql AS $$ BEGIN ALTER TABLE f2 ADD COLUMN IF NOT EXISTS fz int; ALTER TABLE f2 DROP COLUMN fz; RETURN 1; END $$",
            "SELECT fzalter()",
            "CREATE OR REPLACE FUNCTION fzlate(b bool) RETURNS int LANGUAGE plpgsql AS $$ BEGIN IF b THEN RETURN (SELECT count(*) FROM fz_never); END IF; RETURN 0; END $$",
            "SELECT fzlate(false), fzlate(true)",
            "CREATE TABLE IF NOT EXISTS fzp (k int NOT NULL, v text, PRIMARY KEY (k)) PARTITION BY RANGE (k)",
            "CREATE TABLE IF NOT EXISTS fzp_lo PARTITION OF fzp FOR VALUES FROM (MINVALUE) TO (50)",
            "CREATE TABLE IF NOT EXISTS fzp_hi PARTITION OF fzp FOR VALUES FROM (50) TO (100)",
            "CREATE TABLE IF NOT EXISTS fzp_rest PARTITION OF fzp DEFAULT",
            "INSERT INTO fzp SELECT k, 'v' FROM f1 ON CONFLICT DO NOTHING",
            "UPDATE fzp SET k = k + 37 WHERE k < 70 RETURNING tableoid::regclass, k",
            "DELETE FROM fzp WHERE k % 3 = 0 RETURNING k",
            "SELECT tableoid::regclass, count(*) FROM fzp GROUP BY 1",
            "SELECT * FROM fzp a JOIN f1 b ON a.k = b.k WHERE a.k BETWEEN 10 AND 90",
            "ALTER TABLE fzp DETACH PARTITION fzp_hi",
            "ALTER TABLE fzp ATTACH PARTITION fzp_hi FOR VALUES FROM (50) TO (100)",
            "ALTER TABLE fzp ADD COLUMN IF NOT EXISTS w int DEFAULT 1",
            "ALTER TABLE fzp DROP COLUMN IF EXISTS w",
            "INSERT INTO fzp_lo VALUES (500, 'out')",
            "TRUNCATE fzp",
            "ALTER TABLE fzp ADD FOREIGN KEY (k) REFERENCES f0 ON DELETE CASCADE",
            "ALTER TABLE fzp DROP CONSTRAINT IF EXISTS fzp_k_fkey",
            "DELETE FROM f0 WHERE k IN (SELECT k FROM fzp WHERE k % 5 = 1)",
            "SELECT count(*) FROM fzp WHERE k = 7 OR k IN (60, 200)",
            "SELECT * FROM (SELECT k, count(*) FROM fzp GROUP BY k) s WHERE k < 60 AND k >= 40",
            "SELECT * FROM (SELECT k FROM fzp UNION SELECT k FROM f1) u WHERE k BETWEEN 45 AND 55",
            "DROP TABLE IF EXISTS fzp",
            "/*+ FAST */ INSERT INTO f2 VALUES (99, NULL, NULL, NULL)",
            "/*+ SAFE */ DELETE FROM f2 WHERE id = 99",
        ])
        .to_string()
    }

    /// Shapes made to break things: deep chains, huge lists and values, odd bytes.
    fn hostile(&mut self) -> String {
        let n = *[10usize, 500, 3_000, 5_000, 20_000, 100_000].choose(self.rng).expect("non-empty");
        match self.rng.gen_range(0..11) {
            10 => format!(
                "CREATE OR REPLACE FUNCTION fzdeep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {} NULL; {} RETURN NEW; END $$",
                "IF true THEN ".repeat(n.min(5_000)),
                "END IF; ".repeat(n.min(5_000))
            ),
            0 => format!("SELECT 1{}", " + 1".repeat(n)),
            1 => format!("SELECT 1 WHERE {}", vec!["k = 1"; n.min(20_000)].join(" OR ")),
            2 => format!("SELECT {}1{}", "(".repeat(n.min(2_000)), ")".repeat(n.min(2_000))),
            3 => format!(
                "SELECT * FROM f0 WHERE k IN ({})",
                (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
            ),
            4 => format!(
                "SELECT * FROM f1 WHERE (k, j) IN ({})",
                (0..n.min(20_000)).map(|i| format!("({i}, {i})")).collect::<Vec<_>>().join(",")
            ),
            5 => format!("SELECT '{}'", "x".repeat(n * 10)),
            6 => format!("SELECT {}", "NOT ".repeat(n.min(5_000)) + "TRUE"),
            7 => format!("SELECT {}1{}", "(SELECT ".repeat(n.min(500)), ")".repeat(n.min(500))),
            8 => format!("SELECT 'a' {}", "|| 'a' ".repeat(n)),
            _ => format!("SELECT 1::int{}", "::text::int".repeat(n.min(10_000))),
        }
    }

    fn token_soup(&mut self) -> String {
        let tokens = [
            "SELECT", "FROM", "WHERE", "(", ")", ",", "f0", "k", "1", "'x'", "=", "AND", "OR",
            "NOT", "NULL", "GROUP", "BY", "ORDER", "JOIN", "ON", "*", "+", "::", "int", "IN",
            "CASE", "WHEN", "THEN", "END", ";", "$1", "[", "]", "INSERT", "INTO", "VALUES",
            "UPDATE", "SET",
        ];
        let n = self.rng.gen_range(1..40);
        (0..n).map(|_| self.pick(&tokens)).collect::<Vec<_>>().join(" ")
    }

    /// Byte-level damage: truncation, random bytes (NUL and invalid UTF-8 included),
    /// duplication.
    pub fn mutate(&mut self, bytes: &mut Vec<u8>) {
        for _ in 0..self.rng.gen_range(1..4) {
            if bytes.is_empty() {
                bytes.push(b'x');
            }
            let at = self.rng.gen_range(0..bytes.len());
            match self.rng.gen_range(0..5) {
                0 => bytes.truncate(at),
                1 => bytes[at] = self.rng.gen(),
                2 => {
                    bytes.insert(at, self.pick(&[0u8, 0xff, 0xc3, b'\'', b'"', b'(', b'\\', b';']))
                }
                3 => {
                    let end = (at + self.rng.gen_range(1..20)).min(bytes.len());
                    let piece = bytes[at..end].to_vec();
                    bytes.splice(at..at, piece);
                }
                _ => {
                    bytes.remove(at);
                }
            }
        }
    }
}
