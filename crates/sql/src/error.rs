//! SQL errors: a PostgreSQL SQLSTATE, a message a person can act on, and where it applies.

use std::fmt;

use kiln_engine::Error as EngineError;

/// The SQLSTATE codes Kiln answers with (the names are PostgreSQL's).
pub mod code {
    /// successful_completion (used for notices).
    pub const WARNING: &str = "01000";
    /// feature_not_supported
    pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
    /// invalid_parameter_value
    pub const INVALID_PARAMETER_VALUE: &str = "22023";
    /// datetime_field_overflow
    pub const DATETIME_OVERFLOW: &str = "22008";
    /// numeric_value_out_of_range
    pub const NUMERIC_OUT_OF_RANGE: &str = "22003";
    /// invalid_text_representation
    pub const INVALID_TEXT: &str = "22P02";
    /// invalid_datetime_format
    pub const INVALID_DATETIME: &str = "22007";
    /// string_data_right_truncation
    pub const STRING_TRUNCATION: &str = "22001";
    /// division_by_zero
    pub const DIVISION_BY_ZERO: &str = "22012";
    /// cardinality_violation (a scalar subquery returned more than one row)
    pub const CARDINALITY: &str = "21000";
    /// not_null_violation
    pub const NOT_NULL: &str = "23502";
    /// unique_violation
    pub const UNIQUE: &str = "23505";
    /// invalid_transaction_state
    pub const INVALID_TXN_STATE: &str = "25000";
    /// active_sql_transaction
    pub const ACTIVE_TXN: &str = "25001";
    /// no_active_sql_transaction
    pub const NO_ACTIVE_TXN: &str = "25P01";
    /// read_only_sql_transaction
    pub const READ_ONLY_TXN: &str = "25006";
    /// in_failed_sql_transaction
    pub const IN_FAILED_TXN: &str = "25P02";
    /// transaction_rollback
    pub const TXN_ROLLBACK: &str = "40000";
    /// serialization_failure
    pub const SERIALIZATION: &str = "40001";
    /// deadlock_detected
    pub const DEADLOCK: &str = "40P01";
    /// syntax_error
    pub const SYNTAX: &str = "42601";
    /// undefined_column
    pub const UNDEFINED_COLUMN: &str = "42703";
    /// undefined_table
    pub const UNDEFINED_TABLE: &str = "42P01";
    /// undefined_object (indexes, databases, savepoints)
    pub const UNDEFINED_OBJECT: &str = "42704";
    /// undefined_function
    pub const UNDEFINED_FUNCTION: &str = "42883";
    /// duplicate_table
    pub const DUPLICATE_TABLE: &str = "42P07";
    /// duplicate_object
    pub const DUPLICATE_OBJECT: &str = "42710";
    /// duplicate_database
    pub const DUPLICATE_DATABASE: &str = "42P04";
    /// undefined database (invalid_catalog_name)
    pub const INVALID_CATALOG: &str = "3D000";
    /// ambiguous_column
    pub const AMBIGUOUS_COLUMN: &str = "42702";
    /// grouping_error
    pub const GROUPING: &str = "42803";
    /// datatype_mismatch
    pub const DATATYPE_MISMATCH: &str = "42804";
    /// too_many_arguments
    pub const TOO_MANY_ARGUMENTS: &str = "54023";
    /// "cannot cast type x to y".
    pub const CANNOT_COERCE: &str = "42846";
    /// invalid_table_definition
    pub const INVALID_TABLE_DEFINITION: &str = "42P16";
    /// undefined_parameter
    pub const UNDEFINED_PARAMETER: &str = "42P02";
    /// duplicate_column
    pub const DUPLICATE_COLUMN: &str = "42701";
    /// invalid_column_reference
    pub const INVALID_COLUMN_REFERENCE: &str = "42P10";
    /// invalid_sql_statement_name (unknown prepared statement)
    pub const INVALID_STATEMENT_NAME: &str = "26000";
    /// invalid_cursor_name (unknown portal)
    pub const INVALID_CURSOR_NAME: &str = "34000";
    /// undefined_object for settings: unrecognized configuration parameter
    pub const UNDEFINED_SETTING: &str = "42704";
    /// program_limit_exceeded
    pub const PROGRAM_LIMIT: &str = "54000";
    /// statement_too_complex / too long
    pub const STATEMENT_TOO_COMPLEX: &str = "54001";
    /// out_of_memory
    pub const OUT_OF_MEMORY: &str = "53200";
    /// disk_full
    pub const DISK_FULL: &str = "53100";
    /// too_many_connections
    pub const TOO_MANY_CONNECTIONS: &str = "53300";
    /// query_canceled
    pub const QUERY_CANCELED: &str = "57014";
    /// admin_shutdown
    pub const ADMIN_SHUTDOWN: &str = "57P01";
    /// idle_in_transaction_session_timeout
    pub const IDLE_IN_TXN_TIMEOUT: &str = "25P03";
    /// io_error
    pub const IO_ERROR: &str = "58030";
    /// data_corrupted
    pub const DATA_CORRUPTED: &str = "XX001";
    /// internal_error
    pub const INTERNAL: &str = "XX000";
    /// protocol_violation
    pub const PROTOCOL_VIOLATION: &str = "08P01";
    /// invalid_authorization_specification
    pub const INVALID_AUTHORIZATION: &str = "28000";
    /// invalid_password
    pub const INVALID_PASSWORD: &str = "28P01";
    /// bad_copy_file_format
    pub const BAD_COPY_FORMAT: &str = "22P04";
    /// character_not_in_repertoire (bad UTF-8)
    pub const BAD_ENCODING: &str = "22021";
    /// sequence_generator_limit_exceeded
    pub const SEQUENCE_LIMIT: &str = "2200H";
    /// invalid_schema_name
    pub const UNDEFINED_SCHEMA: &str = "3F000";
    /// duplicate_schema
    pub const DUPLICATE_SCHEMA: &str = "42P06";
    /// insufficient_privilege
    pub const INSUFFICIENT_PRIVILEGE: &str = "42501";
    /// invalid_name
    pub const INVALID_NAME: &str = "42602";
    /// object_not_in_prerequisite_state (currval before nextval)
    pub const NOT_IN_PREREQUISITE_STATE: &str = "55000";
    /// dependent_objects_still_exist
    pub const DEPENDENT_OBJECTS: &str = "2BP01";
    /// generated_always (a value for a GENERATED ALWAYS identity column)
    pub const GENERATED_ALWAYS: &str = "428C9";
    /// wrong_object_type
    pub const WRONG_OBJECT_TYPE: &str = "42809";
    /// foreign_key_violation
    pub const FOREIGN_KEY: &str = "23503";
    /// duplicate_function
    pub const DUPLICATE_FUNCTION: &str = "42723";
    /// invalid_function_definition
    pub const INVALID_FUNCTION_DEFINITION: &str = "42P13";
    /// check_violation
    pub const CHECK: &str = "23514";
    /// invalid_foreign_key
    pub const INVALID_FOREIGN_KEY: &str = "42830";
    /// invalid_object_definition (a view that reads itself)
    pub const INVALID_OBJECT_DEFINITION: &str = "42P17";
}

/// An error answered to a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError {
    /// The SQLSTATE.
    pub code: &'static str,
    /// The primary message.
    pub message: String,
    /// An optional detail line.
    pub detail: Option<String>,
    /// An optional hint.
    pub hint: Option<String>,
    /// 1-based character position in the statement text, when known.
    pub position: Option<u32>,
    /// Line and column (1-based) in the statement text, before the session turns them into
    /// a position.
    pub location: Option<(u32, u32)>,
    /// The database object the error is about, when it is about one (a constraint
    /// violation names its table and constraint or column, so a client can tell which
    /// constraint failed without reading the message).
    pub object: Option<Box<ErrorObject>>,
}

/// The object an error is about: ErrorResponse's schema, table, column, data type and
/// constraint fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErrorObject {
    /// The schema of the table (or type).
    pub schema: Option<String>,
    /// The table.
    pub table: Option<String>,
    /// The column.
    pub column: Option<String>,
    /// The data type.
    pub datatype: Option<String>,
    /// The constraint.
    pub constraint: Option<String>,
    /// Where it happened, beyond the statement (`PL/pgSQL function f(integer)`): the wire's
    /// CONTEXT field.
    pub context: Option<String>,
}

/// Result type of the SQL layer.
pub type Result<T> = std::result::Result<T, SqlError>;

impl SqlError {
    /// An error with `code` and `message`.
    pub fn new(code: &'static str, message: impl Into<String>) -> SqlError {
        SqlError {
            code,
            message: message.into(),
            detail: None,
            hint: None,
            position: None,
            location: None,
            object: None,
        }
    }

    fn object_mut(&mut self) -> &mut ErrorObject {
        self.object.get_or_insert_with(Default::default)
    }

    /// Names the table the error is about, by its catalog name (`t`, or `s.t` in schema `s`).
    pub fn table(mut self, table: &str) -> SqlError {
        let o = self.object_mut();
        o.schema = Some(crate::catalog::schema_of(table).into());
        o.table = Some(crate::catalog::unqualified(table).into());
        self
    }

    /// Names the constraint the error is about, on `table`.
    pub fn constraint(self, table: &str, constraint: &str) -> SqlError {
        let mut e = self.table(table);
        e.object_mut().constraint = Some(constraint.into());
        e
    }

    /// Names a system catalog's constraint (`pg_catalog.table`) as the one the error is about.
    pub fn catalog_constraint(mut self, table: &str, constraint: &str) -> SqlError {
        let o = self.object_mut();
        o.schema = Some("pg_catalog".into());
        o.table = Some(table.into());
        o.constraint = Some(constraint.into());
        self
    }

    /// Names the data type the error is about (a domain of schema `public`).
    pub fn datatype(mut self, name: &str) -> SqlError {
        let o = self.object_mut();
        o.schema = Some("public".into());
        o.datatype = Some(name.into());
        self
    }

    /// Names the constraint the error is about, of the data type it names.
    pub fn with_constraint(mut self, constraint: &str) -> SqlError {
        self.object_mut().constraint = Some(constraint.into());
        self
    }

    /// Names the column the error is about, of `table`.
    pub fn column(self, table: &str, column: &str) -> SqlError {
        let mut e = self.table(table);
        e.object_mut().column = Some(column.into());
        e
    }

    /// Adds a detail line.
    pub fn detail(mut self, detail: impl Into<String>) -> SqlError {
        self.detail = Some(detail.into());
        self
    }

    /// Adds a context (where the error happened).
    pub fn context(mut self, context: impl Into<String>) -> SqlError {
        self.object_mut().context = Some(context.into());
        self
    }

    /// Its context, when it has one.
    pub fn context_text(&self) -> Option<&str> {
        self.object.as_ref().and_then(|o| o.context.as_deref())
    }

    /// Adds a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> SqlError {
        self.hint = Some(hint.into());
        self
    }

    /// Sets the position if none is set yet.
    pub fn at(mut self, position: Option<usize>) -> SqlError {
        if self.position.is_none() {
            self.position = position.and_then(|p| u32::try_from(p).ok());
        }
        self
    }

    /// Sets the line and column if no location is set yet.
    pub fn located(mut self, location: Option<(u32, u32)>) -> SqlError {
        if self.location.is_none() && self.position.is_none() {
            self.location = location;
        }
        self
    }

    /// Turns the line and column into a position in `sql`.
    pub fn resolve_position(mut self, sql: &str) -> SqlError {
        if let (None, Some((line, col))) = (self.position, self.location) {
            self.position =
                char_position(sql, line as usize, col as usize).and_then(|p| u32::try_from(p).ok());
        }
        self
    }

    /// 0A000 naming the unsupported feature.
    pub fn unsupported(feature: impl fmt::Display) -> SqlError {
        SqlError::new(code::FEATURE_NOT_SUPPORTED, format!("{feature} is not supported by Kiln"))
    }

    /// 42601.
    pub fn syntax(message: impl Into<String>) -> SqlError {
        SqlError::new(code::SYNTAX, message)
    }

    /// Whether a client should retry the transaction (serialization failure or deadlock).
    pub fn is_retryable(&self) -> bool {
        self.code == code::SERIALIZATION || self.code == code::DEADLOCK
    }
}

/// The 1-based character position of (1-based) `line` and `column` in `sql`.
pub fn char_position(sql: &str, line: usize, column: usize) -> Option<usize> {
    if line == 0 {
        return None;
    }
    let mut pos = 0;
    for (i, l) in sql.split('\n').enumerate() {
        if i + 1 == line {
            return Some(pos + column);
        }
        pos += l.chars().count() + 1;
    }
    None
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for SqlError {}

impl From<EngineError> for SqlError {
    fn from(e: EngineError) -> SqlError {
        match &e {
            EngineError::Conflict { reason } => SqlError::new(
                code::SERIALIZATION,
                "could not serialize access due to concurrent update",
            )
            .detail(reason.clone())
            .hint("The transaction might succeed if retried."),
            EngineError::DependencyLost { .. } => SqlError::new(
                code::SERIALIZATION,
                "could not serialize access: data this transaction read was lost by a durability failure",
            )
            .detail(e.to_string())
            .hint("The transaction might succeed if retried."),
            EngineError::Lost { .. } => SqlError::new(
                code::TXN_ROLLBACK,
                "the transaction committed but was lost before it became durable",
            )
            .detail(e.to_string())
            .hint("Nothing of it remains; it may be retried."),
            EngineError::DurabilityStalled { .. } => SqlError::new(
                code::DISK_FULL,
                "the commit could not be admitted: the log cannot be made durable (disk full?)",
            )
            .detail(e.to_string())
            .hint("Free disk space; commits resume by themselves."),
            EngineError::LimitExceeded { what, actual, limit } => {
                let code =
                    if what.contains("memory") { code::OUT_OF_MEMORY } else { code::PROGRAM_LIMIT };
                SqlError::new(code, format!("limit exceeded: {what} is {actual}, over the limit of {limit}"))
            }
            EngineError::ReadOnlyTransaction => {
                SqlError::new(code::READ_ONLY_TXN, "cannot write in a read-only transaction")
            }
            EngineError::InDoubt { id } => SqlError::new(
                "40003",
                format!("the outcome of transaction {id} is not known yet"),
            )
            .detail(e.to_string())
            .hint(format!(
                "Ask SELECT kiln_txn_status('{id}') on any node once a leader is elected; \
                 it will say durable or lost."
            )),
            EngineError::LevelUnconfirmed { id, level } => SqlError::new(
                "40003",
                format!("transaction {id} is durable, but whether it reached level {level} is not known here"),
            )
            .detail(e.to_string())
            .hint(format!(
                "Ask SELECT kiln_txn_levels('{id}') on the cluster's leader."
            )),
            EngineError::NotLeader { detail, leader } => SqlError::new(
                code::READ_ONLY_TXN,
                "cannot commit writes on this node: it is not the cluster's leader",
            )
            .detail(detail.clone())
            .hint(match leader {
                Some(at) => format!("Send writes to the leader at {at}; this node serves reads."),
                None => "Retry once a leader is elected; this node serves reads.".into(),
            }),
            EngineError::InvalidArgument(m) => SqlError::new(code::INVALID_PARAMETER_VALUE, m.clone()),
            EngineError::Closed => {
                SqlError::new(code::ADMIN_SHUTDOWN, "the database is shutting down")
            }
            EngineError::Corruption { .. } => SqlError::new(code::DATA_CORRUPTED, e.to_string()),
            _ => SqlError::new(code::IO_ERROR, e.to_string()),
        }
    }
}
