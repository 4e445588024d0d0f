import java.math.BigDecimal;
import java.sql.*;
import java.time.*;
import java.util.*;

/** pgJDBC against one server: args url user kiln(true|false). Prints "jdbc ok". */
public class Check {
    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        boolean kiln = Boolean.parseBoolean(args[2]);
        Properties props = new Properties();
        props.setProperty("user", args[1]);
        props.setProperty("reWriteBatchedInserts", "true");
        try (Connection c = DriverManager.getConnection(url, props)) {
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS jd_item");
                s.execute("DROP TABLE IF EXISTS jd_owner");
                s.execute("CREATE TABLE jd_owner (id bigserial PRIMARY KEY, name text NOT NULL UNIQUE)");
                s.execute("CREATE TABLE jd_item (id serial PRIMARY KEY, owner_id bigint REFERENCES jd_owner (id) ON DELETE CASCADE,"
                    + " label varchar(40) NOT NULL, qty int, big bigint, price numeric(10,2), ratio double precision,"
                    + " ok boolean, day date, at timestamp, at_tz timestamptz, data bytea, tags text[], nums int[], uid uuid DEFAULT gen_random_uuid())");
                s.execute("CREATE INDEX jd_item_label ON jd_item (label)");
            }
            // The session runs in the JVM's zone (pgJDBC sends it at startup): a timestamp
            // with time zone reads as the local time there, with its offset.
            try (Statement s = c.createStatement();
                 ResultSet r = s.executeQuery("SELECT current_setting('TimeZone'), '2024-07-01 12:00+00'::timestamptz::text,"
                     + " extract(hour from '2024-01-01 12:00+00'::timestamptz), '2024-07-01 12:00'::timestamptz")) {
                check(r.next(), "a zone row");
                ZoneId zone = ZoneId.systemDefault();
                check(r.getString(1).equals(zone.getId()), "session zone " + r.getString(1) + ", JVM " + zone);
                String local = Instant.parse("2024-07-01T12:00:00Z").atZone(zone)
                    .format(java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ssx"));
                check(r.getString(2).equals(local), "timestamptz text " + r.getString(2) + ", expected " + local);
                int hour = Instant.parse("2024-01-01T12:00:00Z").atZone(zone).getHour();
                check(r.getInt(3) == hour, "local hour " + r.getInt(3) + ", expected " + hour);
                Instant noon = LocalDateTime.of(2024, 7, 1, 12, 0).atZone(zone).toInstant();
                check(r.getObject(4, OffsetDateTime.class).toInstant().equals(noon), "local noon " + r.getString(4));
            }
            // Generated keys through RETURNING.
            long owner;
            try (PreparedStatement p = c.prepareStatement("INSERT INTO jd_owner (name) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
                p.setString(1, "ada");
                check(p.executeUpdate() == 1, "insert owner");
                try (ResultSet k = p.getGeneratedKeys()) {
                    check(k.next(), "a generated key");
                    owner = k.getLong("id");
                }
            }
            // Every type as a parameter.
            Timestamp at = Timestamp.valueOf(LocalDateTime.of(2024, 1, 2, 3, 4, 5, 123_000_000));
            OffsetDateTime atTz = OffsetDateTime.of(2024, 1, 2, 3, 4, 5, 0, ZoneOffset.ofHours(2));
            java.util.UUID uid = java.util.UUID.fromString("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
            try (PreparedStatement p = c.prepareStatement(
                    "INSERT INTO jd_item (owner_id, label, qty, big, price, ratio, ok, day, at, at_tz, data, tags, nums, uid)"
                    + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
                p.setLong(1, owner);
                p.setString(2, "first");
                p.setInt(3, 7);
                p.setLong(4, 1L << 40);
                p.setBigDecimal(5, new BigDecimal("12.34"));
                p.setDouble(6, 0.5);
                p.setBoolean(7, true);
                p.setDate(8, java.sql.Date.valueOf(LocalDate.of(2024, 2, 29)));
                p.setTimestamp(9, at);
                p.setObject(10, atTz);
                p.setBytes(11, new byte[] {0, 1, (byte) 255});
                p.setArray(12, c.createArrayOf("text", new String[] {"a", "b c"}));
                p.setArray(13, c.createArrayOf("int4", new Integer[] {1, 2, 3}));
                p.setObject(14, uid);
                check(p.executeUpdate() == 1, "insert item");
            }
            try (PreparedStatement p = c.prepareStatement("SELECT * FROM jd_item WHERE label = ? AND qty = ANY(?)")) {
                p.setString(1, "first");
                p.setArray(2, c.createArrayOf("int4", new Integer[] {6, 7}));
                try (ResultSet r = p.executeQuery()) {
                    check(r.next(), "the item");
                    check(r.getInt("qty") == 7, "qty");
                    check(r.getLong("big") == 1L << 40, "big");
                    check(r.getBigDecimal("price").compareTo(new BigDecimal("12.34")) == 0, "price");
                    check(r.getDouble("ratio") == 0.5, "ratio");
                    check(r.getBoolean("ok"), "ok");
                    check(r.getDate("day").toLocalDate().equals(LocalDate.of(2024, 2, 29)), "day " + r.getDate("day"));
                    check(r.getTimestamp("at").equals(at), "at " + r.getTimestamp("at"));
                    check(r.getObject("at_tz", OffsetDateTime.class).toInstant().equals(atTz.toInstant()), "at_tz " + r.getString("at_tz"));
                    check(Arrays.equals(r.getBytes("data"), new byte[] {0, 1, (byte) 255}), "data");
                    check(Arrays.equals((Object[]) r.getArray("tags").getArray(), new String[] {"a", "b c"}), "tags");
                    check(Arrays.equals((Object[]) r.getArray("nums").getArray(), new Integer[] {1, 2, 3}), "nums");
                    check(uid.equals(r.getObject("uid", java.util.UUID.class)), "uid " + r.getString("uid"));
                    // Result columns name their table (RowDescription's table OID).
                    org.postgresql.PGResultSetMetaData meta = (org.postgresql.PGResultSetMetaData) r.getMetaData();
                    check("jd_item".equals(meta.getBaseTableName(r.findColumn("label"))), "base table " + meta.getBaseTableName(r.findColumn("label")));
                    check("label".equals(meta.getBaseColumnName(r.findColumn("label"))), "base column");
                    check(!r.next(), "one item");
                }
            }
            // jsonb through PGobject, its operators with parameters, and getObject's type.
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS jd_doc");
                s.execute("CREATE TABLE jd_doc (id int PRIMARY KEY, doc jsonb NOT NULL)");
            }
            org.postgresql.util.PGobject json = new org.postgresql.util.PGobject();
            json.setType("jsonb");
            json.setValue("{\"b\":\"x\", \"a\":[1, 2]}");
            try (PreparedStatement p = c.prepareStatement("INSERT INTO jd_doc VALUES (?, ?)")) {
                p.setInt(1, 1);
                p.setObject(2, json);
                check(p.executeUpdate() == 1, "insert jsonb");
            }
            try (PreparedStatement p = c.prepareStatement("SELECT doc, doc ->> ?, doc @> ?::jsonb FROM jd_doc WHERE id = ?")) {
                p.setString(1, "b");
                p.setString(2, "{\"a\":[2]}");
                p.setInt(3, 1);
                try (ResultSet r = p.executeQuery()) {
                    check(r.next(), "a jsonb row");
                    check(r.getString(1).equals("{\"a\": [1, 2], \"b\": \"x\"}"), "jsonb text " + r.getString(1));
                    Object o = r.getObject(1);
                    check(o instanceof org.postgresql.util.PGobject && ((org.postgresql.util.PGobject) o).getType().equals("jsonb"), "jsonb object " + o);
                    check(r.getString(2).equals("x") && r.getBoolean(3), "jsonb operators");
                }
            }
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE jd_doc");
            }
            // Batch inserts (rewritten into multi-row INSERTs by the driver).
            c.setAutoCommit(false);
            try (PreparedStatement p = c.prepareStatement("INSERT INTO jd_item (owner_id, label, qty) VALUES (?, ?, ?)")) {
                for (int i = 0; i < 250; i++) {
                    p.setLong(1, owner);
                    p.setString(2, "batch" + i);
                    p.setInt(3, i);
                    p.addBatch();
                }
                int[] counts = p.executeBatch();
                check(Arrays.stream(counts).allMatch(n -> n == 1 || n == Statement.SUCCESS_NO_INFO), "batch counts");
            }
            c.commit();
            c.setAutoCommit(true);
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT count(*), sum(qty) FROM jd_item")) {
                check(r.next() && r.getLong(1) == 251 && r.getLong(2) == 7 + 249 * 250 / 2, "batch rows");
            }
            // A constraint error names its constraint.
            try (PreparedStatement p = c.prepareStatement("INSERT INTO jd_owner (name) VALUES (?)")) {
                p.setString(1, "ada");
                p.executeUpdate();
                check(false, "a duplicate was accepted");
            } catch (SQLException e) {
                check("23505".equals(e.getSQLState()), "23505, not " + e.getSQLState());
                org.postgresql.util.ServerErrorMessage m = ((org.postgresql.util.PSQLException) e).getServerErrorMessage();
                check("jd_owner_name_key".equals(m.getConstraint()) && "jd_owner".equals(m.getTable()) && "public".equals(m.getSchema()),
                    "the error names its constraint: " + m.getConstraint() + " " + m.getTable() + " " + m.getSchema());
            }
            // Rows made with a generated uuid each get their own.
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT count(DISTINCT uid), count(*) FROM jd_item")) {
                check(r.next() && r.getLong(1) == r.getLong(2), "distinct generated uuids");
            }
            // An interval parameter and result (PGInterval), and a timestamp moved by one.
            try (PreparedStatement p = c.prepareStatement("SELECT ? * 2, CAST(? AS timestamp) + ?")) {
                p.setObject(1, new org.postgresql.util.PGInterval("1 day 02:00:00.5"));
                p.setTimestamp(2, at);
                p.setObject(3, new org.postgresql.util.PGInterval(0, 1, 0, 0, 0, 0));
                try (ResultSet r = p.executeQuery()) {
                    check(r.next(), "the interval row");
                    org.postgresql.util.PGInterval got = (org.postgresql.util.PGInterval) r.getObject(1);
                    check(got.getDays() == 2 && got.getHours() == 4 && got.getSeconds() == 1.0, "interval " + r.getString(1));
                    check(r.getTimestamp(2).equals(Timestamp.valueOf(LocalDateTime.of(2024, 2, 2, 3, 4, 5, 123_000_000))),
                        "timestamp + interval " + r.getString(2));
                }
            }
            // DatabaseMetaData, as SQL tools use it.
            DatabaseMetaData md = c.getMetaData();
            List<String> tables = new ArrayList<>();
            try (ResultSet r = md.getTables(null, "public", "jd_%", new String[] {"TABLE"})) {
                while (r.next()) tables.add(r.getString("TABLE_NAME"));
            }
            check(tables.equals(List.of("jd_item", "jd_owner")), "getTables " + tables);
            List<String> cols = new ArrayList<>();
            try (ResultSet r = md.getColumns(null, "public", "jd_item", null)) {
                while (r.next()) cols.add(r.getString("COLUMN_NAME") + ":" + r.getString("TYPE_NAME") + ":" + r.getInt("NULLABLE"));
            }
            check(cols.size() == 15 && cols.get(0).equals("id:serial:0") && cols.get(2).equals("label:varchar:0")
                && cols.get(12).equals("tags:_text:1") && cols.get(14).equals("uid:uuid:1"), "getColumns " + cols);
            try (ResultSet r = md.getPrimaryKeys(null, "public", "jd_item")) {
                check(r.next() && r.getString("COLUMN_NAME").equals("id") && r.getString("PK_NAME").equals("jd_item_pkey"), "getPrimaryKeys");
            }
            try (ResultSet r = md.getImportedKeys(null, "public", "jd_item")) {
                check(r.next() && r.getString("PKTABLE_NAME").equals("jd_owner") && r.getString("FKCOLUMN_NAME").equals("owner_id")
                    && r.getInt("DELETE_RULE") == DatabaseMetaData.importedKeyCascade, "getImportedKeys");
            }
            List<String> indexes = new ArrayList<>();
            try (ResultSet r = md.getIndexInfo(null, "public", "jd_item", false, false)) {
                while (r.next()) indexes.add(r.getString("INDEX_NAME") + ":" + r.getString("COLUMN_NAME") + ":" + r.getBoolean("NON_UNIQUE"));
            }
            check(indexes.contains("jd_item_pkey:id:false") && indexes.contains("jd_item_label:label:true"), "getIndexInfo " + indexes);
            Set<String> types = new HashSet<>();
            try (ResultSet r = md.getTypeInfo()) {
                while (r.next()) types.add(r.getString("TYPE_NAME"));
            }
            check(types.containsAll(List.of("int4", "text", "numeric", "timestamptz", "_int4")), "getTypeInfo " + types);
            // The ED surface.
            if (kiln) {
                try (Statement s = c.createStatement()) {
                    s.execute("SET synchronous_commit = off");
                    s.executeUpdate("INSERT INTO jd_owner (name) VALUES ('fast')");
                    String txid;
                    try (ResultSet r = s.executeQuery("SELECT kiln_last_txid()")) { r.next(); txid = r.getString(1); }
                    try (PreparedStatement p = c.prepareStatement("SELECT kiln_wait(?, 5000)")) {
                        p.setString(1, txid);
                        try (ResultSet r = p.executeQuery()) { check(r.next() && r.getString(1).equals("durable"), "kiln_wait"); }
                    }
                    s.execute("SET synchronous_commit = on");
                    s.executeUpdate("INSERT INTO jd_owner (name) VALUES ('safe')");
                    try (ResultSet r = s.executeQuery("SELECT kiln_txn_status(kiln_last_txid())")) {
                        check(r.next() && r.getString(1).equals("durable"), "safe status");
                    }
                }
            }
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE jd_item");
                s.execute("DROP TABLE jd_owner");
            }
        }
        System.out.println("jdbc ok");
    }
}
