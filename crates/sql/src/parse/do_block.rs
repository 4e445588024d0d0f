//! `DO` blocks of the one shape migration tools write (Drizzle, Sequelize and others):
//!
//! ```sql
//! DO $$ BEGIN
//!     CREATE TYPE status AS ENUM ('new', 'done');
//! EXCEPTION
//!     WHEN duplicate_object THEN null;
//! END $$;
//! ```
//!
//! — SQL statements run in order, and errors of the named conditions ignored (the statements'
//! effects then undone, as PL/pgSQL's block undoes them). Kiln runs no procedural code:
//! declarations, assignments, `IF`, loops, `PERFORM`, `RAISE` and handlers that do more than
//! `NULL` are refused with 0A000, as is any language but `plpgsql`.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::error::{code, Result, SqlError};

/// A `DO` block: its statements' texts, and the conditions whose errors it ignores.
#[derive(Debug, Clone, PartialEq)]
pub struct DoBlock {
    /// The statements, in order.
    pub statements: Vec<String>,
    /// The SQLSTATEs (or classes, `23000`) whose errors the block ignores; `OTHERS` is `*`.
    pub ignored: Vec<String>,
}

impl DoBlock {
    /// Whether the block's handler ignores an error with SQLSTATE `state`.
    pub fn ignores(&self, state: &str) -> bool {
        self.ignored.iter().any(|c| {
            (c == "*" && state != code::QUERY_CANCELED)
                || c == state
                || (c.ends_with("000") && state.get(..2) == c.get(..2))
        })
    }
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

fn refused(what: &str) -> SqlError {
    SqlError::unsupported(format!("{what} in a DO block")).hint(
        "Kiln runs DO blocks of SQL statements with an EXCEPTION WHEN … THEN NULL handler only; it runs no procedural code.",
    )
}

fn is_word(t: &Token, k: Keyword) -> bool {
    matches!(t, Token::Word(w) if w.keyword == k)
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
    parse_body(&body).map(Some)
}

/// The block `BEGIN statements [EXCEPTION WHEN c [OR c] THEN NULL; …] END [;]`.
fn parse_body(body: &str) -> Result<DoBlock> {
    let spanned = Tokenizer::new(&PostgreSqlDialect {}, body)
        .tokenize_with_location()
        .map_err(|e| SqlError::syntax(e.to_string()))?;
    let significant: Vec<&TokenWithSpan> =
        spanned.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    let Some(first) = significant.first() else {
        return Err(SqlError::syntax("a DO block needs BEGIN … END"));
    };
    if word_is(&first.token, "declare") {
        return Err(refused("DECLARE"));
    }
    if !is_word(&first.token, Keyword::BEGIN) {
        return Err(SqlError::syntax(format!("syntax error at or near \"{}\"", first.token)));
    }
    // END, then an optional semicolon (and label), closes the block.
    let mut last = significant.len();
    while last > 1 && !is_word(&significant[last - 1].token, Keyword::END) {
        last -= 1;
    }
    if last <= 1 {
        return Err(SqlError::syntax("a DO block ends with END"));
    }
    let end = last - 1;
    // The handler section starts at the first EXCEPTION outside parentheses.
    let mut depth = 0i32;
    let mut exception = None;
    for (i, t) in significant.iter().enumerate().take(end).skip(1) {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Word(w) if depth == 0 && w.keyword == Keyword::EXCEPTION => {
                exception = Some(i);
                break;
            }
            Token::Assignment => return Err(refused("assignments")),
            _ => {}
        }
    }
    let statements_end = exception.unwrap_or(end);
    let mut cursor = crate::parse::Cursor::new(body);
    let from = cursor.advance_to(first.span.end.line, first.span.end.column);
    let to = cursor.advance_to(
        significant[statements_end].span.start.line,
        significant[statements_end].span.start.column,
    );
    // PL/pgSQL's empty statement, `NULL;`, does nothing.
    let statements: Vec<String> = crate::parse::split(&body[from..to])?
        .into_iter()
        .map(|s| s.text)
        .filter(|t| !t.trim().eq_ignore_ascii_case("null"))
        .collect();
    // PL/pgSQL's own statements start with words SQL's do not (or mean otherwise there).
    const PROCEDURAL: &[&str] = &[
        "begin", "declare", "if", "case", "loop", "while", "for", "foreach", "exit", "continue",
        "return", "raise", "perform", "execute", "get", "open", "fetch", "move", "close", "call",
        "commit", "rollback", "assert",
    ];
    for s in &statements {
        let first = s.split(|c: char| !c.is_alphanumeric() && c != '_').find(|w| !w.is_empty());
        if let Some(w) = first.filter(|w| PROCEDURAL.contains(&w.to_lowercase().as_str())) {
            return Err(refused(&w.to_uppercase()));
        }
    }
    let mut ignored = Vec::new();
    if let Some(e) = exception {
        let handlers: Vec<&Token> = significant[e + 1..end].iter().map(|t| &t.token).collect();
        let mut i = 0;
        while i < handlers.len() {
            if !is_word(handlers[i], Keyword::WHEN) {
                return Err(SqlError::syntax(format!(
                    "syntax error at or near \"{}\"",
                    handlers[i]
                )));
            }
            i += 1;
            loop {
                match handlers.get(i) {
                    Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("sqlstate") => {
                        let Some(Token::SingleQuotedString(state)) = handlers.get(i + 1) else {
                            return Err(SqlError::syntax("SQLSTATE needs a five-character code"));
                        };
                        if state.len() != 5 || !state.bytes().all(|b| b.is_ascii_alphanumeric()) {
                            return Err(SqlError::syntax(format!(
                                "invalid SQLSTATE code \"{state}\""
                            )));
                        }
                        ignored.push(state.to_uppercase());
                        i += 2;
                    }
                    Some(Token::Word(w)) => {
                        let name = w.value.to_lowercase();
                        if name == "others" {
                            ignored.push("*".into());
                        } else {
                            let Some((_, state)) = CONDITIONS.iter().find(|(n, _)| *n == name)
                            else {
                                return Err(SqlError::new(
                                    code::UNDEFINED_OBJECT,
                                    format!("unrecognized exception condition \"{name}\""),
                                ));
                            };
                            ignored.push(state.to_string());
                        }
                        i += 1;
                    }
                    _ => return Err(SqlError::syntax("WHEN needs a condition")),
                }
                if handlers.get(i).is_some_and(|t| is_word(t, Keyword::OR)) {
                    i += 1;
                    continue;
                }
                break;
            }
            if !handlers.get(i).is_some_and(|t| is_word(t, Keyword::THEN)) {
                return Err(SqlError::syntax("WHEN … needs THEN"));
            }
            i += 1;
            if !(handlers.get(i).is_some_and(|t| is_word(t, Keyword::NULL))
                && handlers.get(i + 1) == Some(&&Token::SemiColon))
            {
                return Err(refused("a handler that does more than NULL"));
            }
            i += 2;
        }
        if ignored.is_empty() {
            return Err(SqlError::syntax("EXCEPTION needs WHEN … THEN"));
        }
    }
    Ok(DoBlock { statements, ignored })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_migration_tools_block_is_read() {
        let sql = "DO $$ BEGIN\n CREATE TYPE \"public\".\"s\" AS ENUM('a', 'b');\nEXCEPTION\n WHEN duplicate_object THEN null;\nEND $$;";
        let b = do_block(sql).unwrap().unwrap();
        assert_eq!(b.statements, ["\n CREATE TYPE \"public\".\"s\" AS ENUM('a', 'b')"]);
        assert!(b.ignores("42710") && !b.ignores("42P07"));
        let quoted = "DO 'BEGIN CREATE TYPE \"e\" AS ENUM(''a''); ALTER TABLE t ADD x int; EXCEPTION WHEN duplicate_object OR SQLSTATE ''42701'' THEN null; WHEN integrity_constraint_violation THEN NULL; END'";
        let b = do_block(quoted).unwrap().unwrap();
        assert_eq!(b.statements.len(), 2);
        assert!(b.ignores("42701") && b.ignores("23505") && !b.ignores("22012"));
        let b = do_block("do language plpgsql $x$ begin drop table t; end $x$").unwrap().unwrap();
        assert_eq!(b.statements.len(), 1);
        assert!(b.ignored.is_empty());
        assert!(do_block("DOUBLE").unwrap().is_none());
        assert!(do_block("SELECT 1").unwrap().is_none());
    }

    #[test]
    fn procedural_code_is_refused() {
        for body in [
            "DO $$ DECLARE x int; BEGIN x := 1; END $$",
            "DO $$ BEGIN IF true THEN DROP TABLE t; END IF; END $$",
            "DO $$ BEGIN PERFORM 1; END $$",
            "DO $$ BEGIN RAISE NOTICE 'x'; END $$",
            "DO $$ BEGIN DROP TABLE t; EXCEPTION WHEN others THEN RAISE NOTICE 'x'; END $$",
            "DO LANGUAGE plpython3u $$ print(1) $$",
        ] {
            assert_eq!(do_block(body).unwrap_err().code, code::FEATURE_NOT_SUPPORTED, "{body}");
        }
        assert_eq!(
            do_block("DO $$ BEGIN NULL; EXCEPTION WHEN no_such_thing THEN NULL; END $$")
                .unwrap_err()
                .code,
            code::UNDEFINED_OBJECT
        );
    }
}
