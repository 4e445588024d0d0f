//! PL/pgSQL: the code of `DO` blocks and of PL/pgSQL functions.
//!
//! ```sql
//! DO $$ DECLARE r record; BEGIN
//!     IF NOT EXISTS (SELECT 1 FROM pg_type WHERE typname = 'status') THEN
//!         CREATE TYPE status AS ENUM ('new', 'done');
//!     END IF;
//!     FOR r IN SELECT tablename FROM pg_tables WHERE tablename LIKE 'tmp\_%' LOOP
//!         EXECUTE format('DROP TABLE %I', r.tablename);
//!     END LOOP;
//! EXCEPTION
//!     WHEN duplicate_object THEN NULL;
//! END $$;
//! ```
//!
//! A body is an optional `DECLARE` section (variables with types, `CONSTANT`, `NOT NULL`,
//! defaults; `record` variables) and a block: SQL statements (`SELECT … INTO`, `… RETURNING
//! … INTO`), assignments, `IF … THEN … [ELSIF …] [ELSE …] END IF`, `LOOP` / `WHILE` / integer
//! `FOR` loops and `FOR … IN query` / `FOR … IN EXECUTE string [USING …]` loops with `EXIT` and `CONTINUE`, `RAISE` (with `%`
//! parameters and `USING` options), `PERFORM`, `ASSERT`, `EXECUTE string [INTO [STRICT] …]
//! [USING …]`, `GET DIAGNOSTICS … ROW_COUNT`, `RETURN`, `NULL`, and nested `BEGIN …
//! [EXCEPTION WHEN … THEN …] END` blocks whose handlers run statements too. Conditions and
//! parameters are SQL expressions, kept as text. Cursors, labels, nested DECLARE sections
//! and languages other than `plpgsql` are refused with 0A000 before anything runs.
//!
//! The session runs a DO block statement by statement (`exec::do_block`); a function's body
//! (`function_body`) is bound once and run by `exec::plpgsql`, which binds EXECUTE's text
//! (and `FOR … IN EXECUTE`'s) when it runs.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{code, Result, SqlError};
use crate::parse::Tok;

/// A `DO` block.
#[derive(Debug, Clone, PartialEq)]
pub struct DoBlock {
    /// Its variables (the DECLARE section before the outermost block).
    pub declarations: Vec<Declaration>,
    /// Its outermost block.
    pub body: Block,
}

/// `BEGIN statements [EXCEPTION handlers] END`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Block {
    /// The statements, in order.
    pub statements: Vec<Stmt>,
    /// The handlers, tried in order (none: errors go up; the block takes no savepoint).
    pub handlers: Vec<Handler>,
}

/// `WHEN condition [OR condition …] THEN statements`.
#[derive(Debug, Clone, PartialEq)]
pub struct Handler {
    /// The SQLSTATEs (or classes, `23000`) it catches; `OTHERS` is `*`.
    pub conditions: Vec<String>,
    /// What it runs.
    pub statements: Vec<Stmt>,
}

impl Handler {
    /// Whether it catches an error with SQLSTATE `state` (`OTHERS` catches all but a
    /// cancel, as in PL/pgSQL).
    pub fn catches(&self, state: &str) -> bool {
        self.conditions.iter().any(|c| {
            (c == "*" && state != code::QUERY_CANCELED)
                || c == state
                || (c.ends_with("000") && state.get(..2) == c.get(..2))
        })
    }
}

/// One PL/pgSQL statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    /// An SQL statement, as written.
    Sql(String),
    /// `PERFORM query`: the query run, its rows dropped (`SELECT …`).
    Perform(String),
    /// `IF c THEN … [ELSIF c THEN …] [ELSE …] END IF`: the conditions with their
    /// statements, and the ELSE statements.
    If(Vec<(String, Vec<Stmt>)>, Vec<Stmt>),
    /// `RAISE …`.
    Raise(Raise),
    /// `ASSERT condition [, message]`.
    Assert(String, Option<String>),
    /// `EXECUTE string [INTO [STRICT] target, …] [USING expression, …]`: dynamic SQL.
    Execute(Box<Execute>),
    /// A nested block.
    Block(Block),
    /// `target := expression` (or `=`): a variable, or a field of one (`NEW.col`), as
    /// written (lowercased unless quoted); only in functions.
    Assign(Vec<String>, String),
    /// `RETURN [expression]`; only in functions.
    Return(Option<String>),
    /// `RETURN NEXT [expression]`: a row of a set-returning function; only in functions.
    ReturnNext(Option<String>),
    /// `RETURN QUERY query`: the query's rows, of a set-returning function; only in
    /// functions.
    ReturnQuery(String),
    /// `RETURN QUERY EXECUTE string [USING expression, …]`: a dynamic query's rows; only in
    /// functions.
    ReturnExecute(Box<Execute>),
    /// `[WHILE condition] LOOP … END LOOP`; only in functions.
    Loop(Option<String>, Vec<Stmt>),
    /// `FOR name IN [REVERSE] low .. high [BY step] LOOP … END LOOP`: the loop variable
    /// (an integer of its own), the bounds' and step's expressions, REVERSE, the body; only
    /// in functions.
    ForRange(Box<ForRange>),
    /// `FOR target IN query LOOP … END LOOP`: the target (a record, or a variable for a
    /// one-column query), the query's text, the body; only in functions.
    ForQuery(Box<ForQuery>),
    /// `EXIT [WHEN condition]` (true) or `CONTINUE [WHEN condition]` (false); only in a loop.
    Exit(bool, Option<String>),
    /// `GET [CURRENT] DIAGNOSTICS var = ROW_COUNT [, …]`: the variables; only in functions.
    GetDiagnostics(Vec<String>),
}

/// Dynamic SQL (see [`Stmt::Execute`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Execute {
    /// The expression whose value is the statement's text.
    pub sql: String,
    /// The variables (or `record.field`s) the first row goes into; none without INTO.
    pub into: Vec<String>,
    /// INTO STRICT: exactly one row.
    pub strict: bool,
    /// The expressions whose values are the statement's `$1`, `$2`, ….
    pub using: Vec<String>,
}

/// A loop over a query's rows (see [`Stmt::ForQuery`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ForQuery {
    /// The target.
    pub var: String,
    /// The query (for `FOR … IN EXECUTE`, the expression whose value is its text).
    pub query: String,
    /// `FOR … IN EXECUTE e [USING …]`: the USING expressions (the query is dynamic).
    pub execute: Option<Vec<String>>,
    /// The body.
    pub body: Vec<Stmt>,
}

/// A counted loop (see [`Stmt::ForRange`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ForRange {
    /// The loop variable.
    pub var: String,
    /// The first value's expression.
    pub low: String,
    /// The last value's expression.
    pub high: String,
    /// The step's expression (1 when none).
    pub step: Option<String>,
    /// Counting down.
    pub reverse: bool,
    /// The body.
    pub body: Vec<Stmt>,
}

impl Stmt {
    /// 42804 for a statement only a function's body holds (RETURN of a value, RETURN NEXT,
    /// RETURN QUERY: a DO block returns nothing), as PL/pgSQL reports it.
    pub fn not_in_do_block(&self) -> SqlError {
        SqlError::new(
            code::DATATYPE_MISMATCH,
            match self {
                Stmt::ReturnNext(_) => "cannot use RETURN NEXT in a non-SETOF function",
                Stmt::ReturnQuery(_) | Stmt::ReturnExecute(_) => {
                    "cannot use RETURN QUERY in a non-SETOF function"
                }
                _ => "RETURN cannot have a parameter in function returning void",
            },
        )
    }
}

/// The body of a PL/pgSQL function: `[DECLARE declarations] BEGIN … END`.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionBody {
    /// Its variables, in order.
    pub declarations: Vec<Declaration>,
    /// Its outermost block.
    pub body: Block,
}

/// `name [CONSTANT] type [NOT NULL] [{:= | = | DEFAULT} expression];` in DECLARE.
#[derive(Debug, Clone, PartialEq)]
pub struct Declaration {
    /// The variable's name (lowercased unless quoted).
    pub name: String,
    /// Its type, as written.
    pub ty: String,
    /// Whether it is CONSTANT.
    pub constant: bool,
    /// Whether it is NOT NULL.
    pub not_null: bool,
    /// Its initial value's expression (NULL when none).
    pub default: Option<String>,
}

/// The levels of RAISE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// DEBUG
    Debug,
    /// LOG
    Log,
    /// INFO (always sent to the client)
    Info,
    /// NOTICE
    Notice,
    /// WARNING
    Warning,
    /// EXCEPTION: an error.
    Exception,
}

impl Level {
    /// Its name in a message's severity field.
    pub fn severity(self) -> &'static str {
        match self {
            Level::Debug => "DEBUG",
            Level::Log => "LOG",
            Level::Info => "INFO",
            Level::Notice => "NOTICE",
            Level::Warning => "WARNING",
            Level::Exception => "ERROR",
        }
    }
}

/// `RAISE [level] [format [, expression …] | condition] [USING option = expression, …]`;
/// with nothing after RAISE, the error being handled is raised again.
#[derive(Debug, Clone, PartialEq)]
pub struct Raise {
    /// Its level.
    pub level: Level,
    /// The message's format (`%` takes the next parameter, `%%` is a `%`).
    pub format: Option<String>,
    /// The parameters, SQL expressions.
    pub params: Vec<String>,
    /// The SQLSTATE of a condition named after the level, and the name as written (the
    /// message, when no other is given).
    pub condition: Option<(String, String)>,
    /// USING options: MESSAGE, DETAIL, HINT, ERRCODE (lowercased) and their expressions.
    pub using: Vec<(String, String)>,
}

/// PL/pgSQL's condition names Kiln's errors can have, and their SQLSTATEs (a name ending in
/// `000` names a class).
const CONDITIONS: &[(&str, &str)] = &[
    ("duplicate_object", "42710"),
    ("duplicate_table", "42P07"),
    ("duplicate_column", "42701"),
    ("duplicate_schema", "42P06"),
    ("duplicate_database", "42P04"),
    ("duplicate_function", "42723"),
    ("undefined_object", "42704"),
    ("undefined_table", "42P01"),
    ("undefined_column", "42703"),
    ("undefined_function", "42883"),
    ("invalid_schema_name", "3F000"),
    ("wrong_object_type", "42809"),
    ("dependent_objects_still_exist", "2BP01"),
    ("feature_not_supported", "0A000"),
    ("raise_exception", "P0001"),
    ("assert_failure", "P0004"),
    ("no_data_found", "P0002"),
    ("too_many_rows", "P0003"),
    ("query_canceled", "57014"),
    ("invalid_transaction_state", "25000"),
    ("read_only_sql_transaction", "25006"),
    ("in_failed_sql_transaction", "25P02"),
    ("datetime_field_overflow", "22008"),
    ("invalid_datetime_format", "22007"),
    ("null_value_not_allowed", "22004"),
    ("undefined_parameter", "42P02"),
    ("ambiguous_column", "42702"),
    ("datatype_mismatch", "42804"),
    ("invalid_column_reference", "42P10"),
    ("program_limit_exceeded", "54000"),
    ("exclusion_violation", "23P01"),
    ("restrict_violation", "23001"),
    ("transaction_rollback", "40000"),
    ("insufficient_privilege", "42501"),
    ("syntax_error", "42601"),
    ("invalid_parameter_value", "22023"),
    ("invalid_text_representation", "22P02"),
    ("division_by_zero", "22012"),
    ("numeric_value_out_of_range", "22003"),
    ("string_data_right_truncation", "22001"),
    ("object_not_in_prerequisite_state", "55000"),
    ("lock_not_available", "55P03"),
    ("unique_violation", "23505"),
    ("foreign_key_violation", "23503"),
    ("check_violation", "23514"),
    ("not_null_violation", "23502"),
    ("serialization_failure", "40001"),
    ("deadlock_detected", "40P01"),
    ("integrity_constraint_violation", "23000"),
    ("data_exception", "22000"),
    ("syntax_error_or_access_rule_violation", "42000"),
];

/// What Kiln's PL/pgSQL has, for the hint of a construct it refuses.
const PLPGSQL_HINT: &str = "Kiln's PL/pgSQL has variables (DECLARE, records), assignments, IF, LOOP, WHILE, FOR over integers and queries, EXIT, CONTINUE, RAISE, PERFORM, ASSERT, SELECT … INTO, INSERT, UPDATE, DELETE (… RETURNING … INTO), MERGE, GET DIAGNOSTICS … ROW_COUNT, EXECUTE (… INTO … USING), FOR … IN EXECUTE, exception handlers and RETURN; it has no cursors, labels or nested DECLARE sections.";

fn refused(what: &str) -> SqlError {
    SqlError::unsupported(format!("{what} in a DO block")).hint(PLPGSQL_HINT)
}

/// 0A000 for a PL/pgSQL construct Kiln does not run in functions.
pub(crate) fn refused_in_function(what: &str) -> SqlError {
    SqlError::unsupported(format!("{what} in a PL/pgSQL function")).hint(PLPGSQL_HINT)
}

fn word_is(t: &Token, s: &str) -> bool {
    matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(s))
}

/// Recognises `DO [LANGUAGE l] body [LANGUAGE l]` (`None`: another statement).
pub fn do_block(sql: &str) -> Result<Option<DoBlock>> {
    let head = sql.trim_start();
    if !head.get(..2).is_some_and(|w| w.eq_ignore_ascii_case("do"))
        || head[2..].chars().next().is_some_and(|c| c.is_alphanumeric() || c == '_')
    {
        return Ok(None);
    }
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else { return Ok(None) };
    let mut words = tokens.iter().filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon));
    if !words.next().is_some_and(|t| word_is(t, "do")) {
        return Ok(None);
    }
    let mut body = None;
    let mut rest: Vec<&Token> = words.collect();
    rest.reverse();
    while let Some(t) = rest.pop() {
        match t {
            Token::Word(w) if w.keyword == Keyword::LANGUAGE => {
                let lang = match rest.pop() {
                    Some(Token::Word(w)) => w.value.to_lowercase(),
                    Some(Token::SingleQuotedString(s)) => s.to_lowercase(),
                    _ => return Err(SqlError::syntax("syntax error at or near \"LANGUAGE\"")),
                };
                if lang != "plpgsql" {
                    return Err(SqlError::unsupported(format!("the language {lang}")));
                }
            }
            Token::SingleQuotedString(s) | Token::EscapedStringLiteral(s) if body.is_none() => {
                body = Some(s.clone())
            }
            Token::DollarQuotedString(s) if body.is_none() => body = Some(s.value.clone()),
            other => return Err(SqlError::syntax(format!("syntax error at or near \"{other}\""))),
        }
    }
    let body = body.ok_or_else(|| SqlError::syntax("DO needs the code of its block"))?;
    let read = read_body(&body, false)?;
    Ok(Some(DoBlock { declarations: read.declarations, body: read.body }))
}

/// How deep blocks and IFs may nest.
const NESTING_MAX: usize = 64;

struct Parser<'a> {
    body: &'a str,
    toks: Vec<Tok>,
    at: usize,
    depth: usize,
    /// A function's body, not a DO block's (for messages; both hold the same statements).
    function: bool,
    /// How many loops enclose the statement being read (EXIT and CONTINUE need one).
    loops: usize,
}

impl Parser<'_> {
    fn refused(&self, what: &str) -> SqlError {
        if self.function {
            refused_in_function(what)
        } else {
            refused(what)
        }
    }
}

/// Reads the body of a PL/pgSQL function (`CREATE FUNCTION … AS $$ body $$`).
pub fn function_body(body: &str) -> Result<FunctionBody> {
    read_body(body, true)
}

/// `[DECLARE declarations] BEGIN … END [;]`, of a function or a DO block.
fn read_body(body: &str, function: bool) -> Result<FunctionBody> {
    let mut p = Parser::new(body, function)?;
    let declarations = if p.eat_word("declare") { p.declarations()? } else { Vec::new() };
    if p.peek().is_some_and(|t| *t == Token::ShiftLeft) {
        return Err(p.refused("a block label"));
    }
    let block = p.block()?;
    // END may be followed by a semicolon.
    p.eat(&Token::SemiColon);
    if let Some(t) = p.peek() {
        return Err(SqlError::syntax(format!("syntax error at or near \"{t}\"")));
    }
    Ok(FunctionBody { declarations, body: block })
}

impl<'a> Parser<'a> {
    fn new(body: &'a str, function: bool) -> Result<Parser<'a>> {
        let toks =
            crate::parse::tokens_with_offsets(body).map_err(|e| SqlError::syntax(e.to_string()))?;
        Ok(Parser { body, toks, at: 0, depth: 0, function, loops: 0 })
    }

    /// The declarations after DECLARE, up to BEGIN.
    fn declarations(&mut self) -> Result<Vec<Declaration>> {
        let mut out: Vec<Declaration> = Vec::new();
        while !self.peek_is("begin") {
            let Some(Token::Word(w)) = self.peek().cloned() else {
                return Err(match self.peek() {
                    Some(t) => SqlError::syntax(format!("syntax error at or near \"{t}\"")),
                    None => SqlError::syntax("syntax error at end of the block (expected BEGIN)"),
                });
            };
            self.at += 1;
            let name = if w.quote_style.is_some() { w.value } else { w.value.to_lowercase() };
            if out.iter().any(|d| d.name == name) {
                return Err(SqlError::new(
                    code::DUPLICATE_OBJECT,
                    format!("duplicate declaration of \"{name}\""),
                ));
            }
            let end = self.semicolon()?;
            let constant = self.eat_word("constant");
            if self.peek_is("alias") || self.peek_is("cursor") || self.peek_is("refcursor") {
                return Err(self.refused(&format!(
                    "{} declarations",
                    self.peek().map(|t| t.to_string().to_uppercase()).unwrap_or_default()
                )));
            }
            let mut i = self.at;
            let mut depth = 0i32;
            while i < end {
                match &self.toks[i].token {
                    Token::LParen => depth += 1,
                    Token::RParen => depth -= 1,
                    Token::Assignment | Token::Eq if depth == 0 => break,
                    t if depth == 0 && (word_is(t, "default") || word_is(t, "not")) => break,
                    t if depth == 0 && (word_is(t, "collate")) => break,
                    _ => {}
                }
                i += 1;
            }
            let ty = self.text(self.at, i);
            if ty.is_empty() {
                return Err(SqlError::syntax(format!("variable \"{name}\" needs a type")));
            }
            if ty.contains('%') {
                return Err(self.refused("%TYPE and %ROWTYPE"));
            }
            self.at = i;
            let not_null = if self.eat_word("not") {
                self.expect_word("null")?;
                true
            } else {
                false
            };
            let default = if self.at < end {
                if !(self.eat(&Token::Assignment)
                    || self.eat(&Token::Eq)
                    || self.eat_word("default"))
                {
                    return Err(SqlError::syntax(format!(
                        "syntax error at or near \"{}\"",
                        self.toks[self.at].token
                    )));
                }
                let e = self.text(self.at, end);
                if e.is_empty() {
                    return Err(SqlError::syntax(format!("variable \"{name}\" needs a value")));
                }
                Some(e)
            } else {
                None
            };
            if (constant || not_null) && default.is_none() {
                return Err(SqlError::syntax(format!(
                    "variable \"{name}\" must have a default value, since it's declared {}",
                    if constant { "CONSTANT" } else { "NOT NULL" }
                )));
            }
            self.at = end + 1;
            out.push(Declaration { name, ty, constant, not_null, default });
        }
        Ok(out)
    }

    /// One level deeper into a block or IF (54000 past [`NESTING_MAX`]).
    fn nest(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > NESTING_MAX {
            return Err(SqlError::new(
                code::PROGRAM_LIMIT,
                format!("a DO block nests at most {NESTING_MAX} blocks and IFs deep"),
            ));
        }
        Ok(())
    }

    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.at).map(|t| &t.token)
    }

    fn peek_is(&self, word: &str) -> bool {
        self.peek().is_some_and(|t| word_is(t, word))
    }

    fn eat(&mut self, t: &Token) -> bool {
        if self.peek() == Some(t) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn eat_word(&mut self, word: &str) -> bool {
        if self.peek_is(word) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect_word(&mut self, word: &str) -> Result<()> {
        if self.eat_word(word) {
            return Ok(());
        }
        Err(match self.peek() {
            Some(t) => SqlError::syntax(format!(
                "syntax error at or near \"{t}\" (expected {})",
                word.to_uppercase()
            )),
            None => SqlError::syntax(format!(
                "syntax error at end of the block (expected {})",
                word.to_uppercase()
            )),
        })
    }

    fn expect_semicolon(&mut self) -> Result<()> {
        if self.eat(&Token::SemiColon) {
            return Ok(());
        }
        Err(match self.peek() {
            Some(t) => SqlError::syntax(format!("syntax error at or near \"{t}\" (expected ;)")),
            None => SqlError::syntax("syntax error at end of the block (expected ;)"),
        })
    }

    /// The text of tokens `from..to`.
    fn text(&self, from: usize, to: usize) -> String {
        if from >= to {
            return String::new();
        }
        self.body[self.toks[from].start..self.toks[to - 1].end].trim().to_string()
    }

    /// `BEGIN … [EXCEPTION …] END`, at BEGIN.
    fn block(&mut self) -> Result<Block> {
        self.nest()?;
        self.expect_word("begin")?;
        let statements = self.statements(&["exception", "end"])?;
        let mut handlers = Vec::new();
        if self.eat_word("exception") {
            while self.eat_word("when") {
                let conditions = self.conditions()?;
                self.expect_word("then")?;
                let statements = self.statements(&["when", "end"])?;
                handlers.push(Handler { conditions, statements });
            }
            if handlers.is_empty() {
                return Err(SqlError::syntax("EXCEPTION needs WHEN … THEN"));
            }
        }
        self.expect_word("end")?;
        // `END label` is not taken: labels are refused.
        self.depth -= 1;
        Ok(Block { statements, handlers })
    }

    /// `condition [OR condition …]` after WHEN.
    fn conditions(&mut self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        loop {
            match self.peek().cloned() {
                Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("sqlstate") => {
                    self.at += 1;
                    let Some(Token::SingleQuotedString(state)) = self.peek().cloned() else {
                        return Err(SqlError::syntax("SQLSTATE needs a five-character code"));
                    };
                    self.at += 1;
                    out.push(sqlstate(&state)?);
                }
                Some(Token::Word(w)) => {
                    self.at += 1;
                    let name = w.value.to_lowercase();
                    if name == "others" {
                        out.push("*".into());
                    } else {
                        out.push(condition(&name)?.to_string());
                    }
                }
                _ => return Err(SqlError::syntax("WHEN needs a condition")),
            }
            if !self.eat_word("or") {
                return Ok(out);
            }
        }
    }

    /// Statements up to (not including) one of the words `until`.
    fn statements(&mut self, until: &[&str]) -> Result<Vec<Stmt>> {
        let mut out = Vec::new();
        loop {
            let Some(t) = self.peek() else {
                return Err(SqlError::syntax(format!(
                    "syntax error at end of the block (expected {})",
                    until.join(" or ").to_uppercase()
                )));
            };
            if until.iter().any(|w| word_is(t, w)) {
                return Ok(out);
            }
            if let Some(s) = self.statement()? {
                out.push(s);
            }
        }
    }

    /// The index of the next `;` (the end of a statement's text).
    fn semicolon(&self) -> Result<usize> {
        (self.at..self.toks.len())
            .find(|&i| self.toks[i].token == Token::SemiColon)
            .ok_or_else(|| SqlError::syntax("syntax error at end of the block (expected ;)"))
    }

    /// One statement (`None`: `NULL;`).
    fn statement(&mut self) -> Result<Option<Stmt>> {
        const REFUSED: &[&str] = &[
            "declare", "case", "loop", "while", "for", "foreach", "exit", "continue", "return",
            "get", "open", "fetch", "move", "close", "call", "commit", "rollback",
        ];
        let Some(Token::Word(w)) = self.peek().cloned() else {
            if self.peek() == Some(&Token::ShiftLeft) {
                return Err(self.refused("a block label"));
            }
            return self.sql().map(Some);
        };
        let word = if w.quote_style.is_none() { w.value.to_lowercase() } else { String::new() };
        {
            if let Some(target) = self.assignment_target() {
                let end = self.semicolon()?;
                let expr = self.text(self.at, end);
                if expr.is_empty() {
                    return Err(SqlError::syntax("an assignment needs an expression"));
                }
                self.at = end + 1;
                return Ok(Some(Stmt::Assign(target, expr)));
            }
            if word == "return" {
                self.at += 1;
                // RETURN NEXT and RETURN QUERY (a variable named `next` or `query` cannot
                // be returned without parentheses, as in PL/pgSQL).
                let next = self.eat_word("next");
                let query = !next && self.eat_word("query");
                if query && self.peek_is("execute") {
                    self.at += 1;
                    let end = self.semicolon()?;
                    let execute = self.execute(end)?;
                    if !execute.into.is_empty() {
                        return Err(SqlError::syntax("syntax error at or near \"INTO\""));
                    }
                    self.at = end + 1;
                    return Ok(Some(Stmt::ReturnExecute(Box::new(execute))));
                }
                let end = self.semicolon()?;
                let expr = self.text(self.at, end);
                self.at = end + 1;
                let expr = (!expr.is_empty()).then_some(expr);
                return Ok(Some(if next {
                    Stmt::ReturnNext(expr)
                } else if query {
                    let Some(q) = expr else {
                        return Err(SqlError::syntax("missing SQL statement at or near \";\""));
                    };
                    Stmt::ReturnQuery(q)
                } else {
                    Stmt::Return(expr)
                }));
            }
            if word == "get" {
                return self.get_diagnostics().map(Some);
            }
            if word == "loop" || word == "while" {
                return self.loop_statement().map(Some);
            }
            if word == "for" {
                return self.for_statement().map(Some);
            }
            if word == "exit" || word == "continue" {
                if self.loops == 0 {
                    return Err(SqlError::syntax(if word == "exit" {
                        "EXIT cannot be used outside a loop, unless it has a label"
                    } else {
                        "CONTINUE cannot be used outside a loop"
                    }));
                }
                self.at += 1;
                let end = self.semicolon()?;
                let condition = if self.eat_word("when") {
                    let c = self.text(self.at, end);
                    if c.is_empty() {
                        return Err(SqlError::syntax("WHEN needs a condition"));
                    }
                    Some(c)
                } else if self.at < end {
                    return Err(self.refused("EXIT or CONTINUE with a label"));
                } else {
                    None
                };
                self.at = end + 1;
                return Ok(Some(Stmt::Exit(word == "exit", condition)));
            }
        }
        if REFUSED.contains(&word.as_str()) {
            return Err(self.refused(&word.to_uppercase()));
        }
        match word.as_str() {
            "begin" => {
                let block = self.block()?;
                self.expect_semicolon()?;
                Ok(Some(Stmt::Block(block)))
            }
            "null" if self.toks.get(self.at + 1).is_some_and(|t| t.token == Token::SemiColon) => {
                self.at += 2;
                Ok(None)
            }
            "if" => self.if_statement().map(Some),
            "raise" => self.raise().map(Some),
            "perform" => {
                self.at += 1;
                let end = self.semicolon()?;
                let query = self.text(self.at, end);
                self.at = end + 1;
                Ok(Some(Stmt::Perform(format!("SELECT {query}"))))
            }
            "assert" => {
                self.at += 1;
                let end = self.semicolon()?;
                let mut parts = self.split_commas(self.at, end);
                self.at = end + 1;
                if parts.is_empty() || parts.len() > 2 {
                    return Err(SqlError::syntax("ASSERT takes a condition and a message"));
                }
                let message = (parts.len() == 2).then(|| parts.remove(1));
                Ok(Some(Stmt::Assert(parts.remove(0), message)))
            }
            "execute" => {
                self.at += 1;
                let end = self.semicolon()?;
                let execute = self.execute(end)?;
                self.at = end + 1;
                Ok(Some(Stmt::Execute(Box::new(execute))))
            }
            _ => self.sql().map(Some),
        }
    }

    /// `string [INTO [STRICT] target, …] [USING expression, …]` up to token `end`, after
    /// EXECUTE (INTO and USING in either order, as PL/pgSQL takes them).
    fn execute(&mut self, end: usize) -> Result<Execute> {
        // The clauses' keywords outside parentheses.
        let mut depth = 0i32;
        let (mut into_at, mut using_at) = (None, None);
        for i in self.at..end {
            match &self.toks[i].token {
                Token::LParen | Token::LBracket => depth += 1,
                Token::RParen | Token::RBracket => depth -= 1,
                t if depth == 0 && word_is(t, "into") && into_at.is_none() => into_at = Some(i),
                t if depth == 0 && word_is(t, "using") && using_at.is_none() => using_at = Some(i),
                _ => {}
            }
        }
        let first = [into_at, using_at].into_iter().flatten().min().unwrap_or(end);
        let sql = self.text(self.at, first);
        if sql.is_empty() {
            return Err(SqlError::syntax("EXECUTE needs the statement's text"));
        }
        let clause_end = |from: usize| {
            [into_at, using_at, Some(end)].into_iter().flatten().filter(|&i| i > from).min()
        };
        let mut into = Vec::new();
        let mut strict = false;
        if let Some(i) = into_at {
            let to = clause_end(i).unwrap_or(end);
            let mut from = i + 1;
            if self.toks.get(from).is_some_and(|t| word_is(&t.token, "strict")) {
                strict = true;
                from += 1;
            }
            into = self.split_commas(from, to);
            if into.is_empty() {
                return Err(SqlError::syntax("INTO needs a variable"));
            }
        }
        let mut using = Vec::new();
        if let Some(u) = using_at {
            let to = clause_end(u).unwrap_or(end);
            using = self.split_commas(u + 1, to);
            if using.is_empty() {
                return Err(SqlError::syntax("USING needs an expression"));
            }
        }
        Ok(Execute { sql, into, strict, using })
    }

    /// `target :=` or `target =` at the statement's start (`x`, `new.col`): the target's
    /// parts, after which the parser stands at the expression.
    fn assignment_target(&mut self) -> Option<Vec<String>> {
        let mut parts = Vec::new();
        let mut i = self.at;
        loop {
            let Some(Token::Word(w)) = self.toks.get(i).map(|t| &t.token) else { return None };
            parts.push(if w.quote_style.is_some() {
                w.value.clone()
            } else {
                w.value.to_lowercase()
            });
            i += 1;
            match self.toks.get(i).map(|t| &t.token) {
                Some(Token::Period) if parts.len() < 2 => i += 1,
                Some(Token::Assignment) | Some(Token::Eq) => break,
                _ => return None,
            }
        }
        self.at = i + 1;
        Some(parts)
    }

    /// An SQL statement, up to its `;`.
    fn sql(&mut self) -> Result<Stmt> {
        let end = self.semicolon()?;
        if (self.at..end).any(|i| self.toks[i].token == Token::Assignment) {
            return Err(self.refused("assignments"));
        }
        let text = self.text(self.at, end);
        self.at = end + 1;
        Ok(Stmt::Sql(text))
    }

    /// The texts between commas outside parentheses and brackets in tokens `from..to`.
    fn split_commas(&self, from: usize, to: usize) -> Vec<String> {
        let mut out = Vec::new();
        let (mut depth, mut start) = (0i32, from);
        for i in from..to {
            match self.toks[i].token {
                Token::LParen | Token::LBracket => depth += 1,
                Token::RParen | Token::RBracket => depth -= 1,
                Token::Comma if depth == 0 => {
                    out.push(self.text(start, i));
                    start = i + 1;
                }
                _ => {}
            }
        }
        if start < to {
            out.push(self.text(start, to));
        }
        out
    }

    /// The condition after IF or ELSIF, up to THEN (CASE … END inside it skipped).
    fn condition_text(&mut self) -> Result<String> {
        let (mut cases, start) = (0usize, self.at);
        while let Some(t) = self.peek() {
            if word_is(t, "case") {
                cases += 1;
            } else if word_is(t, "end") && cases > 0 {
                cases -= 1;
            } else if word_is(t, "then") && cases == 0 {
                let text = self.text(start, self.at);
                self.at += 1;
                if text.is_empty() {
                    return Err(SqlError::syntax("IF needs a condition before THEN"));
                }
                return Ok(text);
            } else if *t == Token::SemiColon {
                break;
            }
            self.at += 1;
        }
        Err(SqlError::syntax("IF … needs THEN"))
    }

    /// `GET [CURRENT] DIAGNOSTICS var {= | :=} ROW_COUNT [, …];`, at GET.
    fn get_diagnostics(&mut self) -> Result<Stmt> {
        self.at += 1;
        self.eat_word("current");
        if self.peek_is("stacked") {
            return Err(self.refused("GET STACKED DIAGNOSTICS"));
        }
        self.expect_word("diagnostics")?;
        let end = self.semicolon()?;
        let mut targets = Vec::new();
        loop {
            let Some(Token::Word(w)) = self.peek().cloned() else {
                return Err(SqlError::syntax("GET DIAGNOSTICS needs a variable"));
            };
            self.at += 1;
            targets.push(if w.quote_style.is_some() { w.value } else { w.value.to_lowercase() });
            if !(self.eat(&Token::Assignment) || self.eat(&Token::Eq)) {
                return Err(SqlError::syntax("GET DIAGNOSTICS takes variable = item"));
            }
            if !self.eat_word("row_count") {
                return Err(self.refused("GET DIAGNOSTICS items other than ROW_COUNT"));
            }
            if !self.eat(&Token::Comma) {
                break;
            }
        }
        if self.at != end {
            return Err(SqlError::syntax("syntax error in GET DIAGNOSTICS"));
        }
        self.at = end + 1;
        Ok(Stmt::GetDiagnostics(targets))
    }

    /// `[WHILE condition] LOOP … END LOOP;`, at LOOP or WHILE.
    fn loop_statement(&mut self) -> Result<Stmt> {
        self.nest()?;
        let condition = if self.eat_word("while") {
            let start = self.at;
            while self.peek().is_some_and(|t| !word_is(t, "loop") && *t != Token::SemiColon) {
                self.at += 1;
            }
            let c = self.text(start, self.at);
            if c.is_empty() {
                return Err(SqlError::syntax("WHILE needs a condition"));
            }
            Some(c)
        } else {
            None
        };
        let body = self.loop_body()?;
        self.depth -= 1;
        Ok(Stmt::Loop(condition, body))
    }

    /// `LOOP statements END LOOP;`, at LOOP.
    fn loop_body(&mut self) -> Result<Vec<Stmt>> {
        self.expect_word("loop")?;
        self.loops += 1;
        let body = self.statements(&["end"]);
        self.loops -= 1;
        let body = body?;
        self.expect_word("end")?;
        self.expect_word("loop")?;
        self.expect_semicolon()?;
        Ok(body)
    }

    /// `FOR i IN [REVERSE] low .. high [BY step] LOOP … END LOOP;`, at FOR.
    fn for_statement(&mut self) -> Result<Stmt> {
        self.nest()?;
        self.at += 1;
        let var = match self.peek().cloned() {
            Some(Token::Word(w)) => {
                self.at += 1;
                if w.quote_style.is_some() {
                    w.value
                } else {
                    w.value.to_lowercase()
                }
            }
            _ => return Err(SqlError::syntax("FOR needs a loop variable")),
        };
        self.expect_word("in")?;
        if self.eat_word("execute") {
            // FOR target IN EXECUTE string [USING expression, …] LOOP
            let start = self.at;
            let mut depth = 0i32;
            let mut using = None;
            while let Some(t) = self.peek() {
                match t {
                    Token::LParen => depth += 1,
                    Token::RParen => depth -= 1,
                    t if depth == 0 && word_is(t, "loop") => break,
                    t if depth == 0 && word_is(t, "using") && using.is_none() => {
                        using = Some(self.at)
                    }
                    Token::SemiColon => break,
                    _ => {}
                }
                self.at += 1;
            }
            let query = self.text(start, using.unwrap_or(self.at));
            let using = match using {
                Some(u) => self.split_commas(u + 1, self.at),
                None => Vec::new(),
            };
            if query.is_empty() {
                return Err(SqlError::syntax("EXECUTE needs the statement's text"));
            }
            let body = self.loop_body()?;
            self.depth -= 1;
            let execute = Some(using);
            return Ok(Stmt::ForQuery(Box::new(ForQuery { var, query, execute, body })));
        }
        let reverse = self.eat_word("reverse");
        let start = self.at;
        let mut by = None;
        let mut depth = 0i32;
        while let Some(t) = self.peek() {
            match t {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                t if depth == 0 && word_is(t, "loop") => break,
                t if depth == 0 && word_is(t, "by") => by = Some(self.at),
                Token::SemiColon => break,
                _ => {}
            }
            self.at += 1;
        }
        // A query's rows (its BY is its own: ORDER BY, GROUP BY).
        let whole = self.text(start, self.at);
        let first = whole.split_whitespace().next().unwrap_or_default().to_lowercase();
        if !reverse && matches!(first.trim_start_matches('('), "select" | "with" | "values") {
            let body = self.loop_body()?;
            self.depth -= 1;
            let query = whole;
            return Ok(Stmt::ForQuery(Box::new(ForQuery { var, query, execute: None, body })));
        }
        // `1..10` may be read as the numbers `1.` and `.10`: the range is split in its text.
        let range = self.text(start, by.unwrap_or(self.at));
        let Some((low, high)) = split_range(&range) else {
            return Err(self.refused("FOR over anything but a range or a query"));
        };
        let step = by.map(|b| self.text(b + 1, self.at));
        if low.is_empty() || high.is_empty() || step.as_ref().is_some_and(String::is_empty) {
            return Err(SqlError::syntax("FOR needs low .. high [BY step]"));
        }
        let body = self.loop_body()?;
        self.depth -= 1;
        Ok(Stmt::ForRange(Box::new(ForRange { var, low, high, step, reverse, body })))
    }

    /// `IF … END IF;`, at IF.
    fn if_statement(&mut self) -> Result<Stmt> {
        self.nest()?;
        self.at += 1;
        let mut arms = Vec::new();
        let mut otherwise = Vec::new();
        loop {
            let condition = self.condition_text()?;
            let body = self.statements(&["elsif", "elseif", "else", "end"])?;
            arms.push((condition, body));
            if self.eat_word("elsif") || self.eat_word("elseif") {
                continue;
            }
            if self.eat_word("else") {
                otherwise = self.statements(&["end"])?;
            }
            break;
        }
        self.expect_word("end")?;
        self.expect_word("if")?;
        self.expect_semicolon()?;
        self.depth -= 1;
        Ok(Stmt::If(arms, otherwise))
    }

    /// `RAISE …;`, at RAISE.
    fn raise(&mut self) -> Result<Stmt> {
        self.at += 1;
        let level = match self.peek() {
            Some(t) if word_is(t, "debug") => Some(Level::Debug),
            Some(t) if word_is(t, "log") => Some(Level::Log),
            Some(t) if word_is(t, "info") => Some(Level::Info),
            Some(t) if word_is(t, "notice") => Some(Level::Notice),
            Some(t) if word_is(t, "warning") => Some(Level::Warning),
            Some(t) if word_is(t, "exception") => Some(Level::Exception),
            _ => None,
        };
        if level.is_some() {
            self.at += 1;
        }
        let end = self.semicolon()?;
        let using_at = (self.at..end).find(|&i| word_is(&self.toks[i].token, "using"));
        let head_end = using_at.unwrap_or(end);
        let mut raise = Raise {
            level: level.unwrap_or(Level::Exception),
            format: None,
            params: Vec::new(),
            condition: None,
            using: Vec::new(),
        };
        match self.toks.get(self.at).map(|t| t.token.clone()) {
            _ if self.at == head_end => {}
            Some(Token::SingleQuotedString(f)) | Some(Token::EscapedStringLiteral(f)) => {
                if self.at + 1 < head_end && self.toks[self.at + 1].token != Token::Comma {
                    return Err(SqlError::syntax("RAISE takes a format string, then , parameters"));
                }
                let parts = self.split_commas((self.at + 2).min(head_end), head_end);
                let wanted = placeholders(&f);
                if wanted > parts.len() {
                    return Err(SqlError::syntax("too few parameters specified for RAISE"));
                }
                if wanted < parts.len() {
                    return Err(SqlError::syntax("too many parameters specified for RAISE"));
                }
                raise.format = Some(f);
                raise.params = parts;
            }
            Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("sqlstate") => {
                let Some(Token::SingleQuotedString(state)) =
                    self.toks.get(self.at + 1).map(|t| t.token.clone())
                else {
                    return Err(SqlError::syntax("SQLSTATE needs a five-character code"));
                };
                raise.condition = Some((sqlstate(&state)?, state.clone()));
                if self.at + 2 != head_end {
                    return Err(SqlError::syntax("syntax error after RAISE … SQLSTATE"));
                }
            }
            Some(Token::Word(w)) => {
                let name = w.value.to_lowercase();
                raise.condition = Some((condition(&name)?.to_string(), name));
                if self.at + 1 != head_end {
                    return Err(SqlError::syntax("syntax error after RAISE condition"));
                }
            }
            Some(t) => return Err(SqlError::syntax(format!("syntax error at or near \"{t}\""))),
            None => {}
        }
        if let Some(u) = using_at {
            for option in self.split_commas(u + 1, end) {
                let Some((name, value)) = option.split_once('=') else {
                    return Err(SqlError::syntax("RAISE … USING takes option = expression"));
                };
                let name = name.trim().to_lowercase();
                if !matches!(
                    name.as_str(),
                    "message"
                        | "detail"
                        | "hint"
                        | "errcode"
                        | "column"
                        | "constraint"
                        | "datatype"
                        | "table"
                        | "schema"
                ) {
                    return Err(SqlError::syntax(format!(
                        "unrecognized RAISE statement option \"{name}\""
                    )));
                }
                if raise.using.iter().any(|(n, _)| *n == name) {
                    return Err(SqlError::syntax(format!(
                        "RAISE option already specified: {}",
                        name.to_uppercase()
                    )));
                }
                if name == "message" && raise.format.is_some() {
                    return Err(SqlError::syntax("RAISE option already specified: MESSAGE"));
                }
                raise.using.push((name, value.trim().to_string()));
            }
        }
        self.at = end + 1;
        Ok(Stmt::Raise(raise))
    }
}

/// What a RAISE raises, given the texts of its parameters and of its USING options (in
/// their order): the error or notice's fields (SQLSTATE, message, DETAIL, HINT); `None` for
/// a bare `RAISE`, which raises again the error being handled.
pub fn raised(
    r: &Raise,
    params: &[Option<String>],
    using: &[Option<String>],
) -> Result<Option<SqlError>> {
    if r.format.is_none() && r.condition.is_none() && r.using.is_empty() {
        return Ok(None);
    }
    let option = |name: &str| {
        r.using.iter().position(|(n, _)| n == name).and_then(|i| using.get(i).cloned().flatten())
    };
    let errcode_given = option("errcode");
    let code_text = match &errcode_given {
        Some(c) => Some(errcode(c)?),
        None => r.condition.as_ref().map(|(code, _)| code.clone()),
    };
    let message = match (&r.format, option("message")) {
        (Some(f), _) => format_message(f, params),
        (None, Some(m)) => m,
        // Named by its condition only: the condition is the message.
        (None, None) => {
            r.condition.as_ref().map(|(_, name)| name.clone()).or(errcode_given).unwrap_or_default()
        }
    };
    let default = match r.level {
        Level::Exception => "P0001",
        Level::Warning => "01000",
        _ => "00000",
    };
    let mut e = SqlError::new(code_text.as_deref().map_or(default, static_code), message);
    e.detail = option("detail");
    e.hint = option("hint");
    Ok(Some(e))
}

/// A SQLSTATE as the `&'static str` errors carry (RAISE may name any): interned, at most
/// 4,096 distinct codes (`P0001` past that).
pub(crate) fn static_code(state: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::OnceLock;
    static INTERNED: OnceLock<parking_lot::Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut set = INTERNED.get_or_init(Default::default).lock();
    if let Some(s) = set.get(state) {
        return s;
    }
    if set.len() >= 4096 {
        return "P0001";
    }
    let s: &'static str = Box::leak(state.to_string().into_boxed_str());
    set.insert(s);
    s
}

/// `low .. high` split at its `..` outside quotes and parentheses.
fn split_range(text: &str) -> Option<(String, String)> {
    let (mut depth, mut quoted) = (0i32, false);
    let bytes = text.as_bytes();
    for i in 0..bytes.len() {
        match bytes[i] {
            b'\'' => quoted = !quoted,
            b'(' if !quoted => depth += 1,
            b')' if !quoted => depth -= 1,
            b'.' if !quoted && depth == 0 && bytes.get(i + 1) == Some(&b'.') => {
                return Some((text[..i].trim().to_string(), text[i + 2..].trim().to_string()));
            }
            _ => {}
        }
    }
    None
}

/// How many `%` parameters a RAISE format takes (`%%` is a `%`).
fn placeholders(format: &str) -> usize {
    let mut n = 0;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '%' {
            if chars.peek() == Some(&'%') {
                chars.next();
            } else {
                n += 1;
            }
        }
    }
    n
}

/// A RAISE format with its parameters' texts in place (`<NULL>` for a NULL, as PL/pgSQL
/// writes it).
pub fn format_message(format: &str, params: &[Option<String>]) -> String {
    let mut out = String::with_capacity(format.len());
    let mut params = params.iter();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
        } else if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
        } else {
            match params.next() {
                Some(Some(p)) => out.push_str(p),
                Some(None) => out.push_str("<NULL>"),
                None => out.push('%'),
            }
        }
    }
    out
}

fn sqlstate(state: &str) -> Result<String> {
    if state.len() != 5 || !state.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(SqlError::syntax(format!("invalid SQLSTATE code \"{state}\"")));
    }
    Ok(state.to_uppercase())
}

/// The SQLSTATE of a PL/pgSQL condition name.
pub fn condition(name: &str) -> Result<&'static str> {
    CONDITIONS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s).ok_or_else(|| {
        SqlError::new(
            code::UNDEFINED_OBJECT,
            format!("unrecognized exception condition \"{name}\""),
        )
    })
}

/// A condition name or SQLSTATE given to RAISE … USING ERRCODE.
pub fn errcode(value: &str) -> Result<String> {
    if value.len() == 5 && value.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()) {
        return Ok(value.to_string());
    }
    condition(&value.to_lowercase()).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(sql: &str) -> Block {
        do_block(sql).unwrap().unwrap().body
    }

    #[test]
    fn the_migration_tools_block_is_read() {
        let sql = "DO $$ BEGIN\n CREATE TYPE \"public\".\"s\" AS ENUM('a', 'b');\nEXCEPTION\n WHEN duplicate_object THEN null;\nEND $$;";
        let b = body(sql);
        assert_eq!(
            b.statements,
            [Stmt::Sql("CREATE TYPE \"public\".\"s\" AS ENUM('a', 'b')".into())]
        );
        assert!(b.handlers[0].catches("42710") && !b.handlers[0].catches("42P07"));
        assert!(b.handlers[0].statements.is_empty());
        let quoted = "DO 'BEGIN CREATE TYPE \"e\" AS ENUM(''a''); ALTER TABLE t ADD x int; EXCEPTION WHEN duplicate_object OR SQLSTATE ''42701'' THEN null; WHEN integrity_constraint_violation THEN NULL; END'";
        let b = body(quoted);
        assert_eq!(b.statements.len(), 2);
        assert!(b.handlers[0].catches("42701") && b.handlers[1].catches("23505"));
        assert!(!b.handlers.iter().any(|h| h.catches("22012")));
        let b = body("do language plpgsql $x$ begin drop table t; end $x$");
        assert_eq!(b.statements.len(), 1);
        assert!(b.handlers.is_empty());
        assert!(do_block("DOUBLE").unwrap().is_none());
        assert!(do_block("SELECT 1").unwrap().is_none());
    }

    #[test]
    fn if_raise_and_nested_blocks_are_read() {
        let b = body(
            "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM t WHERE CASE WHEN a THEN b END) THEN CREATE TABLE t (a int); ELSIF 1 = 2 THEN NULL; ELSE RAISE NOTICE 'x % y %%', 1 + 2; END IF; BEGIN PERFORM f(); EXCEPTION WHEN others THEN RAISE WARNING USING MESSAGE = 'm', HINT = 'h'; END; END $$",
        );
        let Stmt::If(arms, otherwise) = &b.statements[0] else { panic!("{b:?}") };
        assert_eq!(arms[0].0, "NOT EXISTS (SELECT 1 FROM t WHERE CASE WHEN a THEN b END)");
        assert_eq!(arms[1].1, []);
        let Stmt::Raise(r) = &otherwise[0] else { panic!() };
        assert_eq!(
            (r.level, r.format.as_deref(), &r.params[..]),
            (Level::Notice, Some("x % y %%"), &["1 + 2".to_string()][..])
        );
        let Stmt::Block(inner) = &b.statements[1] else { panic!() };
        assert_eq!(inner.statements, [Stmt::Perform("SELECT f()".into())]);
        let Stmt::Raise(r) = &inner.handlers[0].statements[0] else { panic!() };
        assert_eq!(r.using, [("message".into(), "'m'".into()), ("hint".into(), "'h'".into())]);
        assert_eq!(format_message("x % y %% %", &[Some("3".into()), None]), "x 3 y % <NULL>");
    }

    #[test]
    fn function_bodies_are_read() {
        let f = function_body(
            "DECLARE n int := 0; s CONSTANT text = 'x'; BEGIN NEW.a := n; n = n + 1; WHILE n < 3 LOOP n := n + 1; EXIT WHEN n = 2; END LOOP; FOR i IN REVERSE 10..1 BY 2 LOOP CONTINUE; END LOOP; LOOP EXIT; END LOOP; RETURN NEW; END",
        )
        .unwrap();
        assert_eq!(f.declarations.len(), 2);
        assert!(f.declarations[1].constant && f.declarations[1].default.as_deref() == Some("'x'"));
        let s = &f.body.statements;
        assert_eq!(s[0], Stmt::Assign(vec!["new".into(), "a".into()], "n".into()));
        assert_eq!(s[1], Stmt::Assign(vec!["n".into()], "n + 1".into()));
        let Stmt::Loop(Some(c), body) = &s[2] else { panic!("{s:?}") };
        assert_eq!((c.as_str(), &body[1]), ("n < 3", &Stmt::Exit(true, Some("n = 2".into()))));
        let Stmt::ForRange(r) = &s[3] else { panic!("{s:?}") };
        assert_eq!((r.low.as_str(), r.high.as_str(), r.step.as_deref()), ("10", "1", Some("2")));
        assert!(r.reverse && r.body == [Stmt::Exit(false, None)]);
        assert_eq!(s[5], Stmt::Return(Some("NEW".into())));
        let h = function_body(
            "BEGIN NULL; EXCEPTION WHEN unique_violation OR SQLSTATE '22012' THEN NULL; END",
        );
        assert_eq!(h.unwrap().body.handlers[0].conditions, ["23505", "22012"]);
        let q = function_body("BEGIN FOR r IN SELECT a FROM t ORDER BY b LOOP NULL; END LOOP; END");
        let Stmt::ForQuery(q) = &q.unwrap().body.statements[0] else { panic!() };
        assert_eq!((q.var.as_str(), q.query.as_str()), ("r", "SELECT a FROM t ORDER BY b"));
        let g = function_body("BEGIN GET CURRENT DIAGNOSTICS a = ROW_COUNT, b := row_count; END");
        assert_eq!(
            g.unwrap().body.statements,
            [Stmt::GetDiagnostics(vec!["a".into(), "b".into()])]
        );
        for (body, code) in [
            ("BEGIN EXIT; END", code::SYNTAX),
            ("BEGIN NULL; EXCEPTION WHEN nosuch_condition THEN NULL; END", code::UNDEFINED_OBJECT),
            ("DECLARE x t%ROWTYPE; BEGIN NULL; END", code::FEATURE_NOT_SUPPORTED),
            ("DECLARE x int; x int; BEGIN NULL; END", code::DUPLICATE_OBJECT),
            ("DECLARE x CONSTANT int; BEGIN NULL; END", code::SYNTAX),
            ("BEGIN GET DIAGNOSTICS x = PG_CONTEXT; END", code::FEATURE_NOT_SUPPORTED),
            ("BEGIN GET STACKED DIAGNOSTICS x = MESSAGE_TEXT; END", code::FEATURE_NOT_SUPPORTED),
            ("BEGIN LOOP NULL; END; END", code::SYNTAX),
        ] {
            assert_eq!(function_body(body).unwrap_err().code, code, "{body}");
        }
    }

    #[test]
    fn do_blocks_hold_what_functions_hold() {
        let read = do_block(
            "DO $$ DECLARE x int := 1; r record; BEGIN x := x + 1; \
             FOR i IN 1..3 LOOP CONTINUE WHEN i = 2; END LOOP; \
             FOR r IN EXECUTE 'SELECT $1' USING x LOOP EXIT; END LOOP; \
             EXECUTE format('SELECT %s', x) INTO STRICT x USING 1, (2 + 3); \
             EXECUTE 'SELECT 1' USING 7 INTO x; RETURN; END $$",
        )
        .unwrap()
        .unwrap();
        assert_eq!(read.declarations.len(), 2);
        let executes: Vec<&Execute> = read
            .body
            .statements
            .iter()
            .filter_map(|s| match s {
                Stmt::Execute(e) => Some(e.as_ref()),
                _ => None,
            })
            .collect();
        assert_eq!(executes[0].sql, "format('SELECT %s', x)");
        assert_eq!(
            (executes[0].into.as_slice(), executes[0].strict),
            (&["x".to_string()][..], true)
        );
        assert_eq!(executes[0].using, ["1", "(2 + 3)"]);
        assert_eq!(
            (executes[1].into.as_slice(), executes[1].using.as_slice()),
            (&["x".to_string()][..], &["7".to_string()][..])
        );
        match &read.body.statements[2] {
            Stmt::ForQuery(f) => assert_eq!(f.execute.as_deref(), Some(&["x".to_string()][..])),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn procedural_code_is_refused() {
        for body in [
            "DO $$ <<l>> BEGIN NULL; END $$",
            "DO $$ BEGIN BEGIN DECLARE y int; BEGIN NULL; END; END; END $$",
            "DO $$ DECLARE c CURSOR FOR SELECT 1; BEGIN NULL; END $$",
            "DO LANGUAGE plpython3u $$ print(1) $$",
        ] {
            assert_eq!(do_block(body).unwrap_err().code, code::FEATURE_NOT_SUPPORTED, "{body}");
        }
        for body in [
            "DO $$ BEGIN RAISE NOTICE '% %', 1; END $$",
            "DO $$ BEGIN RAISE NOTICE '%', 1, 2; END $$",
            "DO $$ BEGIN IF true THEN NULL; END $$",
            "DO $$ BEGIN NULL; $$",
            "DO $$ BEGIN RAISE NOTICE 'x' USING BOGUS = 1; END $$",
        ] {
            assert_eq!(do_block(body).unwrap_err().code, code::SYNTAX, "{body}");
        }
        assert_eq!(
            do_block("DO $$ BEGIN NULL; EXCEPTION WHEN no_such_thing THEN NULL; END $$")
                .unwrap_err()
                .code,
            code::UNDEFINED_OBJECT
        );
        let deep = format!("DO $$ {} NULL; {} $$", "BEGIN ".repeat(100), "END; ".repeat(100));
        assert_eq!(do_block(&deep).unwrap_err().code, code::PROGRAM_LIMIT);
    }
}
