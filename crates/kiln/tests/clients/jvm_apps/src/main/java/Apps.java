import java.sql.*;
import java.util.*;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.MigrationInfo;
import liquibase.Liquibase;
import liquibase.database.DatabaseFactory;
import liquibase.database.jvm.JdbcConnection;
import liquibase.resource.ClassLoaderResourceAccessor;
import jakarta.persistence.*;
import org.hibernate.SessionFactory;
import org.hibernate.cfg.Configuration;

/**
 * Flyway 13 (clean, migrate with versioned and repeatable migrations, info, validate),
 * Liquibase 4 (an XML changelog: tables, keys, an identity and a uuid default, add and rename
 * column, indexes, unique constraints, a sequence, a view, NOT NULL with a default, a type
 * change; update, rollback, update again) and Hibernate ORM 7 (schema create and validate,
 * entities with a sequence and an identity key, a version, an enum, timestamps and a uuid,
 * one-to-many with orphan removal, JPQL with joins and LIKE, pagination by OFFSET/FETCH,
 * a pessimistic lock, a native query, a foreign-key violation) against one database. Prints
 * what it saw; Kiln's test compares that with stock PostgreSQL's. With `true` as its third
 * argument (the server is Kiln) it also uses the ED surface.
 * Usage: java Apps <jdbc url> <user> <true|false>
 */
public class Apps {
  static void out(Object... a) { StringBuilder b = new StringBuilder(); for (Object o : a) b.append(o).append(' '); System.out.println(b.toString().trim()); }

  @Entity @Table(name = "hb_dept") public static class Dept {
    @Id @GeneratedValue(strategy = GenerationType.SEQUENCE) public Long id;
    @Column(nullable = false, unique = true, length = 60) public String name;
    @OneToMany(mappedBy = "dept", cascade = CascadeType.ALL, orphanRemoval = true) @OrderBy("name") public List<Emp> emps = new ArrayList<>();
  }
  @Entity @Table(name = "hb_emp", indexes = @Index(name = "hb_emp_name", columnList = "name")) public static class Emp {
    @Id @GeneratedValue(strategy = GenerationType.IDENTITY) public Long id;
    public String name;
    public java.math.BigDecimal salary;
    public java.time.LocalDate hired;
    public java.time.OffsetDateTime seen;
    public java.time.Instant at;
    public java.util.UUID token;
    @Enumerated(EnumType.STRING) public Role role;
    @Version public int version;
    @ManyToOne(fetch = FetchType.LAZY) @JoinColumn(name = "dept_id") public Dept dept;
  }
  public enum Role { ADMIN, USER }

  public static void main(String[] args) throws Exception {
    String url = args[0], user = args[1];
    // Flyway
    Flyway fw = Flyway.configure().dataSource(url, user, null).cleanDisabled(false).load();
    fw.clean();
    out("flyway migrate", fw.migrate().migrationsExecuted);
    for (MigrationInfo i : fw.info().all()) out("flyway info", i.getVersion(), i.getDescription(), i.getState());
    fw.validate();
    out("flyway again", fw.migrate().migrationsExecuted);
    try (Connection c = DriverManager.getConnection(url, user, null); Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT owner, kind FROM fw_pets_v ORDER BY 1")) {
      while (r.next()) out("view", r.getString(1), r.getString(2));
    }
    // Liquibase
    try (Connection c = DriverManager.getConnection(url, user, null)) {
      var db = DatabaseFactory.getInstance().findCorrectDatabaseImplementation(new JdbcConnection(c));
      Liquibase lb = new Liquibase("changelog.xml", new ClassLoaderResourceAccessor(), db);
      lb.update("");
      out("liquibase unrun", lb.listUnrunChangeSets(null, null).size());
      lb.rollback(2, "");
      out("liquibase unrun after rollback", lb.listUnrunChangeSets(null, null).size());
      lb.update("");
      try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT name, books FROM lb_v ORDER BY 1")) { while (r.next()) out("lb view", r.getString(1), r.getLong(2)); }
      try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT id, author, filename, exectype FROM databasechangelog ORDER BY orderexecuted")) { while (r.next()) out("changelog", r.getString(1), r.getString(2), r.getString(3), r.getString(4)); }
    }
    // Hibernate
    for (String mode : new String[] {"create", "validate"}) {
      Configuration cfg = new Configuration().addAnnotatedClass(Dept.class).addAnnotatedClass(Emp.class)
        .setProperty("hibernate.connection.url", url).setProperty("hibernate.connection.username", user)
        .setProperty("hibernate.hbm2ddl.auto", mode).setProperty("hibernate.show_sql", "false");
      try (SessionFactory sf = cfg.buildSessionFactory()) {
        if (mode.equals("validate")) { out("hibernate validate ok"); continue; }
        sf.inTransaction(s -> {
          Dept d = new Dept(); d.name = "eng"; s.persist(d);
          for (String n : new String[] {"zed", "amy"}) { Emp e = new Emp(); e.name = n; e.salary = new java.math.BigDecimal("10.50"); e.hired = java.time.LocalDate.of(2024, 2, 29); e.seen = java.time.OffsetDateTime.parse("2024-01-02T03:04:05+02:00"); e.at = java.time.Instant.parse("2024-05-06T07:08:09.123456Z"); e.token = java.util.UUID.fromString("123e4567-e89b-12d3-a456-426614174000"); e.role = Role.ADMIN; e.dept = d; d.emps.add(e); s.persist(e); }
        });
        sf.inTransaction(s -> {
          Dept d = s.createQuery("from Apps$Dept where name = :n", Dept.class).setParameter("n", "eng").getSingleResult();
          for (Emp e : d.emps) out("emp", e.name, e.salary, e.hired, e.seen.toInstant(), e.at, e.token, e.role, e.version);
          Emp e = d.emps.get(0); e.salary = e.salary.add(java.math.BigDecimal.ONE);
        });
        sf.inTransaction(s -> {
          out("jpql", s.createQuery("select e.name, e.version from Apps$Emp e where e.salary > ?1 order by e.name", Object[].class).setParameter(1, new java.math.BigDecimal("11")).getResultList().stream().map(Arrays::toString).toList());
          out("count", s.createQuery("select count(e) from Apps$Emp e join e.dept d where d.name like 'e%'", Long.class).getSingleResult());
          out("page", s.createQuery("from Apps$Emp order by name", Emp.class).setFirstResult(1).setMaxResults(1).getResultList().get(0).name);
          Emp locked = s.find(Emp.class, 1L, LockModeType.PESSIMISTIC_WRITE);
          out("locked", locked.name);
          out("native", s.createNativeQuery("select upper(name) from hb_emp order by id", String.class).getResultList());
        });
        try { sf.inTransaction(s -> { Emp e = new Emp(); e.name = "x"; e.dept = new Dept(); e.dept.id = 999L; s.merge(e); s.flush(); }); } catch (Exception ex) { out("fk error", ex.getClass().getSimpleName()); }
        sf.inTransaction(s -> { Dept d = s.createQuery("from Apps$Dept", Dept.class).getSingleResult(); d.emps.remove(0); });
        sf.inTransaction(s -> out("orphan removed", s.createQuery("select count(e) from Apps$Emp e", Long.class).getSingleResult()));
      }
    }
    if (args.length > 2 && args[2].equals("true")) edSurface(url, user);
    out("ok");
  }

  /** A fast transaction (acknowledged at commit), its status and durability; a safe one. */
  static void edSurface(String url, String user) throws SQLException {
    try (Connection c = DriverManager.getConnection(url, user, null); Statement s = c.createStatement()) {
      s.execute("SET synchronous_commit = off");
      s.executeUpdate("INSERT INTO fw_owner (name) VALUES ('fast')");
      String t = one(s, "SELECT kiln_last_txid()");
      String status = one(s, "SELECT kiln_txn_status('" + t + "')");
      if (!status.equals("committed") && !status.equals("durable")) throw new AssertionError("fast: " + status);
      if (!one(s, "SELECT kiln_wait('" + t + "', 5000)").equals("durable")) throw new AssertionError("not durable");
      s.execute("SET synchronous_commit = on");
      s.executeUpdate("INSERT INTO fw_owner (name) VALUES ('safe')");
      t = one(s, "SELECT kiln_last_txid()");
      if (!one(s, "SELECT kiln_txn_status('" + t + "')").equals("durable")) throw new AssertionError("safe not durable");
    }
  }

  static String one(Statement s, String sql) throws SQLException {
    try (ResultSet r = s.executeQuery(sql)) { r.next(); return r.getString(1); }
  }
}
