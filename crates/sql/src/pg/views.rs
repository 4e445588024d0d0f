//! The parts of `information_schema` that PostgreSQL defines as views over `pg_catalog`,
//! defined the same way here: each is SQL over Kiln's own `pg_catalog` tables, planned where
//! it is read, as a user's view is. ORMs read these to find keys and references
//! (Sequelize's `sync` and `describeTable`, TypeORM, Hibernate's schema validation).
//!
//! Differences from PostgreSQL: `table_constraints` has no rows for NOT NULL constraints
//! (PostgreSQL 15 lists them as CHECK constraints named from OIDs), and
//! `constraint_column_usage` has no rows for CHECK constraints.

/// The SQL of system view `name`, if it is one.
pub(crate) fn system_view(name: &str) -> Option<&'static str> {
    Some(match name {
        "information_schema.table_constraints" => TABLE_CONSTRAINTS,
        "information_schema.key_column_usage" => KEY_COLUMN_USAGE,
        "information_schema.constraint_column_usage" => CONSTRAINT_COLUMN_USAGE,
        "information_schema.referential_constraints" => REFERENTIAL_CONSTRAINTS,
        _ => return None,
    })
}

const TABLE_CONSTRAINTS: &str = "\
SELECT current_database()::text AS constraint_catalog, n.nspname::text AS constraint_schema, \
  c.conname::text AS constraint_name, current_database()::text AS table_catalog, \
  n.nspname::text AS table_schema, r.relname::text AS table_name, \
  CASE c.contype WHEN 'c' THEN 'CHECK' WHEN 'f' THEN 'FOREIGN KEY' WHEN 'p' THEN 'PRIMARY KEY' \
    WHEN 'u' THEN 'UNIQUE' END AS constraint_type, \
  CASE WHEN c.condeferrable THEN 'YES' ELSE 'NO' END AS is_deferrable, \
  CASE WHEN c.condeferred THEN 'YES' ELSE 'NO' END AS initially_deferred, \
  'YES'::text AS enforced, \
  CASE WHEN c.contype = 'u' THEN CASE WHEN (SELECT NOT i.indnullsnotdistinct FROM pg_index i \
    WHERE i.indexrelid = c.conindid) THEN 'YES' ELSE 'NO' END END AS nulls_distinct \
FROM pg_constraint c JOIN pg_class r ON r.oid = c.conrelid \
  JOIN pg_namespace n ON n.oid = r.relnamespace \
WHERE c.contype IN ('c', 'f', 'p', 'u')";

const KEY_COLUMN_USAGE: &str = "\
SELECT current_database()::text AS constraint_catalog, n.nspname::text AS constraint_schema, \
  c.conname::text AS constraint_name, current_database()::text AS table_catalog, \
  n.nspname::text AS table_schema, r.relname::text AS table_name, a.attname::text AS column_name, \
  k.n::int AS ordinal_position, \
  CASE WHEN c.contype = 'f' THEN array_position((SELECT u.conkey FROM pg_constraint u \
    WHERE u.conindid = c.conindid AND u.contype IN ('p', 'u')), c.confkey[k.n])::int END \
    AS position_in_unique_constraint \
FROM pg_constraint c JOIN pg_class r ON r.oid = c.conrelid \
  JOIN pg_namespace n ON n.oid = r.relnamespace \
  CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, n) \
  JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum = k.attnum \
WHERE c.contype IN ('f', 'p', 'u')";

const CONSTRAINT_COLUMN_USAGE: &str = "\
SELECT current_database()::text AS table_catalog, rn.nspname::text AS table_schema, \
  r.relname::text AS table_name, a.attname::text AS column_name, \
  current_database()::text AS constraint_catalog, cn.nspname::text AS constraint_schema, \
  c.conname::text AS constraint_name \
FROM pg_constraint c \
  JOIN pg_class r ON r.oid = CASE WHEN c.contype = 'f' THEN c.confrelid ELSE c.conrelid END \
  JOIN pg_namespace rn ON rn.oid = r.relnamespace \
  JOIN pg_namespace cn ON cn.oid = c.connamespace \
  CROSS JOIN LATERAL unnest(CASE WHEN c.contype = 'f' THEN c.confkey ELSE c.conkey END) \
    AS k(attnum) \
  JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum = k.attnum \
WHERE c.contype IN ('f', 'p', 'u')";

const REFERENTIAL_CONSTRAINTS: &str = "\
SELECT current_database()::text AS constraint_catalog, cn.nspname::text AS constraint_schema, \
  c.conname::text AS constraint_name, current_database()::text AS unique_constraint_catalog, \
  un.nspname::text AS unique_constraint_schema, u.conname::text AS unique_constraint_name, \
  CASE c.confmatchtype WHEN 'f' THEN 'FULL' WHEN 'p' THEN 'PARTIAL' ELSE 'NONE' END \
    AS match_option, \
  CASE c.confupdtype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' \
    WHEN 'r' THEN 'RESTRICT' ELSE 'NO ACTION' END AS update_rule, \
  CASE c.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' \
    WHEN 'r' THEN 'RESTRICT' ELSE 'NO ACTION' END AS delete_rule \
FROM pg_constraint c \
  JOIN pg_namespace cn ON cn.oid = c.connamespace \
  LEFT JOIN pg_constraint u ON u.conindid = c.conindid AND u.contype IN ('p', 'u') \
  LEFT JOIN pg_namespace un ON un.oid = u.connamespace \
WHERE c.contype = 'f'";

#[cfg(test)]
mod tests {
    #[test]
    fn every_system_view_parses_as_one_query() {
        for name in [
            "information_schema.table_constraints",
            "information_schema.key_column_usage",
            "information_schema.constraint_column_usage",
            "information_schema.referential_constraints",
        ] {
            let sql = super::system_view(name).expect(name);
            let statements = crate::parse::parse(sql).expect(name);
            assert!(
                matches!(statements.as_slice(), [sqlparser::ast::Statement::Query(_)]),
                "{name}"
            );
        }
    }
}
