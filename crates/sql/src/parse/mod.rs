//! Step 1 of a statement: text → syntax tree.
//!
//! A query string is split into statements at top-level semicolons (one pass of sqlparser's
//! tokenizer), each with its `/*+ FAST */` / `/*+ SAFE */` commit hint; each statement is then
//! parsed by sqlparser (PostgreSQL dialect). Nothing here reads the catalog or the engine.
//!
//! This is also the first line of defence against hostile input. sqlparser builds chains of
//! infix operators (`1+1+1+…`, `a OR b OR …`, `x::int::int…`) iteratively, so a statement of a
//! few megabytes can become a tree millions of levels deep — and every recursive walk of that
//! tree (binding, evaluation, even dropping it) would overflow the thread's stack and abort
//! the whole process. So before parsing, [`split`] bounds the nesting a statement's tokens
//! *could* produce ([`NESTING_BOUND_MAX`]), and after parsing [`parse`] measures the real
//! depth of the tree ([`EXPRESSION_DEPTH_MAX`]). Both answer 54001, as PostgreSQL's "stack
//! depth limit exceeded" does, and nothing has run.

use std::ops::ControlFlow;

use kiln_engine::DurabilityLevel;
use sqlparser::ast::{self, Visit, Visitor};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

use crate::error::{code, Result, SqlError};

pub mod aggregate;
pub mod do_block;
pub mod domain;
pub mod sequence;
pub mod trigger;

/// The deepest nesting of expressions and subqueries a statement may have.
pub const EXPRESSION_DEPTH_MAX: usize = 4_000;

/// The most nesting a statement's tokens may be able to produce (checked before parsing; a
/// conservative over-estimate of the tree's depth, see [`nesting_bound`]).
pub const NESTING_BOUND_MAX: usize = 16_000;

/// One statement of a query string.
#[derive(Debug, Clone, PartialEq)]
pub struct StatementText {
    /// The statement's text, without the separating semicolon.
    pub text: String,
    /// Its `/*+ FAST */`, `/*+ SAFE */` or `/*+ SAFE(level) */` hint.
    pub hint: Option<CommitHint>,
    /// How deep its tree can be (see [`nesting_bound`]).
    pub nesting: usize,
}

/// How a statement's hint asks its transaction to commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitHint {
    /// `/*+ FAST */`: acknowledged at the commit point.
    Fast,
    /// `/*+ SAFE */` (the session's level) or `/*+ SAFE(level) */`: acknowledged once the
    /// commit reached the level.
    Safe(Option<DurabilityLevel>),
}

/// The commit a `/*+ FAST */`, `/*+ SAFE */` or `/*+ SAFE(level) */` comment token asks for,
/// if it is one; a `SAFE(…)` naming no level is an error, not a comment to skip, since
/// skipping it would acknowledge the commit earlier than asked.
fn hint_of(token: &Token) -> Option<Result<CommitHint>> {
    let Token::Whitespace(Whitespace::MultiLineComment(c)) = token else { return None };
    let text = c.strip_prefix('+')?.trim();
    let upper = text.to_ascii_uppercase();
    match upper.as_str() {
        "FAST" => return Some(Ok(CommitHint::Fast)),
        "SAFE" => return Some(Ok(CommitHint::Safe(None))),
        _ => {}
    }
    let inner = text.get(4..).filter(|_| upper.starts_with("SAFE"))?.trim();
    let level = inner.strip_prefix('(')?.strip_suffix(')')?;
    Some(level.parse().map(|l| CommitHint::Safe(Some(l))).map_err(|e: String| {
        SqlError::new(code::INVALID_PARAMETER_VALUE, format!("in the hint /*+ {text} */: {e}"))
    }))
}

/// Splits a query string into statements at top-level semicolons, with each statement's
/// commit hint. A statement whose tokens could nest deeper than [`NESTING_BOUND_MAX`] is
/// refused here, before sqlparser builds its tree. Text the tokenizer cannot read is returned
/// whole, so that [`parse`] reports the syntax error with its position.
///
/// Each statement's text is cut from `sql` itself, never rebuilt from tokens: a token's
/// display is not always its source (`'it''s'` displays as `'it's'`).
pub fn split(sql: &str) -> Result<Vec<StatementText>> {
    let Ok(spanned) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location() else {
        return Ok(vec![StatementText { text: sql.to_string(), hint: None, nesting: 0 }]);
    };
    let tokens: Vec<Token> = spanned.iter().map(|t| t.token.clone()).collect();
    let mut cursor = Cursor::new(sql);
    let mut out = Vec::new();
    let (mut start, mut start_byte) = (0, 0);
    for (i, t) in spanned.iter().enumerate() {
        if t.token == Token::SemiColon {
            let at = cursor.advance_to(t.span.start.line, t.span.start.column);
            push_statement(&tokens[start..i], &sql[start_byte..at], &mut out)?;
            start = i + 1;
            start_byte = at + 1;
        }
    }
    push_statement(&tokens[start..], &sql[start_byte.min(sql.len())..], &mut out)?;
    Ok(out)
}

/// A position in statement text, moved forward to tokens' locations (line and column in
/// characters, 1-based, as the tokenizer counts them) in one pass over the text.
pub(crate) struct Cursor<'a> {
    sql: &'a str,
    byte: usize,
    line: u64,
    column: u64,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `sql`.
    pub(crate) fn new(sql: &'a str) -> Cursor<'a> {
        Cursor { sql, byte: 0, line: 1, column: 1 }
    }

    /// The byte offset of `(line, column)`, at or after the cursor.
    pub(crate) fn advance_to(&mut self, line: u64, column: u64) -> usize {
        while (self.line, self.column) < (line, column) {
            let Some(c) = self.sql[self.byte..].chars().next() else { break };
            self.byte += c.len_utf8();
            if c == '\n' {
                self.line += 1;
                self.column = 1;
            } else {
                self.column += 1;
            }
        }
        self.byte
    }
}

/// A token and the byte range of its text.
pub(crate) struct Tok {
    pub(crate) token: Token,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// The tokens of `sql` but whitespace, each with where its text starts and ends (for the
/// hand-written readers that keep pieces of the text: DO blocks, function bodies, CREATE
/// TRIGGER).
pub(crate) fn tokens_with_offsets(
    sql: &str,
) -> std::result::Result<Vec<Tok>, sqlparser::tokenizer::TokenizerError> {
    let spanned = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location()?;
    let mut cursor = Cursor::new(sql);
    let mut toks = Vec::with_capacity(spanned.len());
    for t in spanned {
        let start = cursor.advance_to(t.span.start.line, t.span.start.column);
        let end = cursor.advance_to(t.span.end.line, t.span.end.column);
        if !matches!(t.token, Token::Whitespace(_)) {
            toks.push(Tok { token: t.token, start, end });
        }
    }
    Ok(toks)
}

fn push_statement(tokens: &[Token], text: &str, out: &mut Vec<StatementText>) -> Result<()> {
    if tokens.iter().all(|t| matches!(t, Token::Whitespace(_))) {
        return Ok(());
    }
    let nesting = check_nesting(tokens)?;
    let hint = tokens.iter().find_map(hint_of).transpose()?;
    out.push(StatementText { text: text.to_string(), hint, nesting });
    Ok(())
}

/// An upper bound on how deep the tree of a statement with these tokens can be.
///
/// Every level of a syntax tree either opens a parenthesis or bracket, or consumes an
/// operator or keyword token of the list it sits in; a comma starts a new list item, whose
/// operators nest separately. So the bound is, at any point, the number of open parentheses
/// plus the operator and keyword tokens seen in the current item of every open one.
/// Literals and plain identifiers never add a level.
pub fn nesting_bound(tokens: &[Token]) -> usize {
    let mut levels: Vec<usize> = vec![0];
    let mut current = 0usize;
    let mut max = 0usize;
    for t in tokens {
        match t {
            Token::Whitespace(_)
            | Token::Period
            | Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::DollarQuotedString(_)
            | Token::EscapedStringLiteral(_)
            | Token::NationalStringLiteral(_)
            | Token::HexStringLiteral(_)
            | Token::SingleQuotedByteStringLiteral(_)
            | Token::UnicodeStringLiteral(_)
            | Token::Placeholder(_) => {}
            Token::Word(w)
                if matches!(
                    w.keyword,
                    Keyword::NoKeyword | Keyword::NULL | Keyword::TRUE | Keyword::FALSE
                ) => {}
            Token::Comma | Token::SemiColon => {
                let last = levels.last_mut().expect("the outermost level is never popped");
                current -= *last;
                *last = 0;
            }
            Token::LParen | Token::LBracket => {
                levels.push(0);
                current += 1;
            }
            Token::RParen | Token::RBracket => {
                if levels.len() > 1 {
                    let last = levels.pop().expect("checked above");
                    current -= last + 1;
                }
            }
            _ => {
                *levels.last_mut().expect("the outermost level is never popped") += 1;
                current += 1;
            }
        }
        max = max.max(current);
    }
    max
}

fn check_nesting(tokens: &[Token]) -> Result<usize> {
    let bound = nesting_bound(tokens);
    if bound > NESTING_BOUND_MAX {
        return Err(too_complex(format!(
            "statement too complex: it could nest {bound} levels deep, over the limit of {NESTING_BOUND_MAX}"
        )));
    }
    Ok(bound)
}

fn too_complex(message: String) -> SqlError {
    SqlError::new(code::STATEMENT_TOO_COMPLEX, message).hint(
        "Simplify the statement: replace long chains of AND/OR or of operators with IN lists, \
         a VALUES list or a join, or split it into several statements.",
    )
}

/// The commit hint of a single statement's text, if any.
pub fn commit_hint(sql: &str) -> Result<Option<CommitHint>> {
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else {
        return Ok(None);
    };
    tokens.iter().find_map(hint_of).transpose()
}

/// Statements sqlparser does not take as PostgreSQL writes them, recognised first.
#[derive(Debug, Clone, PartialEq)]
pub enum Utility {
    /// `VACUUM [options] [tables]`: the tables named.
    Vacuum(Vec<String>),
    /// `SET CONSTRAINTS {ALL | name, …} {DEFERRED | IMMEDIATE}`: the names (`None` for ALL)
    /// and whether deferred.
    SetConstraints(Option<Vec<String>>, bool),
    /// `MOVE [direction] [FROM | IN] cursor`: FETCH's movement without its rows.
    Move(ast::Ident, ast::FetchDirection),
    /// `ALTER SEQUENCE …` (runs in a transaction, as DDL does).
    AlterSequence(Box<sequence::AlterSequence>),
    /// `DO $$ BEGIN … EXCEPTION WHEN … THEN NULL; END $$` (see [`do_block`]).
    Do(Box<do_block::DoBlock>),
    /// `ALTER TYPE name OWNER TO role | SET SCHEMA schema`: the type and the schema.
    AlterTypeOwner(ast::ObjectName, Option<ast::Ident>),
    /// `ALTER TABLE … ALTER COLUMN …` of an identity column (DROP IDENTITY, SET GENERATED,
    /// SET option, RESTART), transactional too.
    AlterIdentity(Box<sequence::AlterIdentity>),
    /// `CREATE TRIGGER …` (see [`trigger`]).
    CreateTrigger(Box<trigger::CreateTrigger>),
    /// `ALTER VIEW … {RENAME TO | RENAME COLUMN | OWNER TO}`.
    AlterView(Box<sequence::AlterView>),
    /// `CREATE [OR REPLACE] PROCEDURE name(args) LANGUAGE … AS …`, read as the function it
    /// would be (sqlparser reads another dialect's procedures).
    CreateProcedure(Box<ast::CreateFunction>),
    /// `REINDEX [(options)] {INDEX | TABLE | SCHEMA | DATABASE | SYSTEM} [CONCURRENTLY] [name]`.
    Reindex(Box<Reindex>),
    /// `CREATE DOMAIN …` (see [`domain`]).
    CreateDomain(Box<domain::CreateDomain>),
    /// `ALTER DOMAIN …`.
    AlterDomain(Box<domain::AlterDomain>),
    /// `CREATE MATERIALIZED VIEW …` (see [`domain`]).
    CreateMatView(Box<domain::CreateMatView>),
    /// `REFRESH MATERIALIZED VIEW …`.
    RefreshMatView(Box<domain::RefreshMatView>),
    /// `CREATE [OR REPLACE] AGGREGATE …` (see [`aggregate`]).
    CreateAggregate(Box<aggregate::CreateAggregate>),
    /// `DROP AGGREGATE …`.
    DropAggregate(Box<aggregate::DropAggregate>),
    /// `ALTER AGGREGATE …`.
    AlterAggregate(Box<aggregate::AlterAggregate>),
    /// `COMMENT ON {FUNCTION | PROCEDURE | AGGREGATE} …`.
    CommentOnRoutine(Box<aggregate::CommentOnRoutine>),
    /// `ALTER TABLE parent ATTACH PARTITION child FOR VALUES … | DEFAULT`.
    AttachPartition(Box<AttachPartition>),
    /// `ALTER TABLE parent DETACH PARTITION child`: the parent and the partition.
    DetachPartition(ast::ObjectName, ast::ObjectName),
    /// `ALTER INDEX parent_index ATTACH PARTITION partition_index`.
    AttachIndex(ast::ObjectName, ast::ObjectName),
}

/// A parsed `ALTER TABLE … ATTACH PARTITION`.
#[derive(Debug, Clone, PartialEq)]
pub struct AttachPartition {
    pub parent: ast::ObjectName,
    pub partition: ast::ObjectName,
    pub bound: ast::ForValues,
}

/// `ALTER TABLE [IF EXISTS] [ONLY] parent {ATTACH PARTITION child FOR VALUES … | DEFAULT |
/// DETACH PARTITION child [CONCURRENTLY | FINALIZE]}`. The attach form is read as the
/// `CREATE TABLE child PARTITION OF parent …` it matches, whose bound sqlparser reads.
fn attach_or_detach(sql: &str) -> Result<Option<Utility>> {
    if !sql.trim_start().get(..5).is_some_and(|w| w.eq_ignore_ascii_case("alter")) {
        return Ok(None);
    }
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else {
        return Ok(None);
    };
    let is = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let sig: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i], Token::Whitespace(_) | Token::SemiColon))
        .collect();
    let word = |n: usize, w: &str| sig.get(n).is_some_and(|&i| is(&tokens[i], w));
    if !(word(0, "alter") && (word(1, "table") || word(1, "index"))) {
        return Ok(None);
    }
    if word(1, "index") {
        // `ALTER INDEX parent_index ATTACH PARTITION partition_index` (pg_dump's).
        let Some(at) = (2..sig.len()).find(|&n| word(n, "attach") && word(n + 1, "partition"))
        else {
            return Ok(None);
        };
        let text = |a: usize, b: usize| -> String {
            let from = sig.get(a).copied().unwrap_or(tokens.len());
            let to = sig.get(b).copied().unwrap_or(tokens.len());
            tokens[from..to].iter().map(|t| t.to_string()).collect()
        };
        let name = |t: String| -> Result<ast::ObjectName> {
            match parse(&format!("CREATE TABLE {t} (kiln_column int)"))?.as_slice() {
                [ast::Statement::CreateTable(ct)] => Ok(ct.name.clone()),
                _ => Err(SqlError::syntax("ALTER INDEX … ATTACH PARTITION names two indexes")),
            }
        };
        let parent = name(text(2, at))?;
        let child = name(text(at + 2, sig.len()))?;
        return Ok(Some(Utility::AttachIndex(parent, child)));
    }
    let Some(at) = (2..sig.len())
        .find(|&n| (word(n, "attach") || word(n, "detach")) && word(n + 1, "partition"))
    else {
        return Ok(None);
    };
    let mut start = 2;
    if word(start, "if") && word(start + 1, "exists") {
        start += 2;
    }
    if word(start, "only") {
        start += 1;
    }
    let text = |a: usize, b: usize| -> String {
        let from = sig.get(a).copied().unwrap_or(tokens.len());
        let to = sig.get(b).copied().unwrap_or(tokens.len());
        tokens[from..to].iter().map(|t| t.to_string()).collect()
    };
    let parent = text(start, at);
    let parsed = parse(&format!("CREATE TABLE kiln_partition PARTITION OF {parent} DEFAULT"))?;
    let [ast::Statement::CreateTable(ct)] = parsed.as_slice() else {
        return Err(SqlError::syntax("ALTER TABLE … PARTITION names a table"));
    };
    let parent = ct.partition_of.clone().ok_or_else(|| SqlError::syntax("a table name"))?;
    if word(at, "detach") {
        // CONCURRENTLY and FINALIZE change how PostgreSQL waits, not the outcome.
        let mut end = sig.len();
        while end > at + 2 && (word(end - 1, "concurrently") || word(end - 1, "finalize")) {
            end -= 1;
        }
        let child = text(at + 2, end);
        let parsed = parse(&format!("CREATE TABLE {child} (kiln_column int)"))?;
        let [ast::Statement::CreateTable(ct)] = parsed.as_slice() else {
            return Err(SqlError::syntax("DETACH PARTITION names a table"));
        };
        return Ok(Some(Utility::DetachPartition(parent, ct.name.clone())));
    }
    // `child FOR VALUES …` reads as `CREATE TABLE child PARTITION OF parent FOR VALUES …`.
    let n = (at + 3..=sig.len())
        .find(|&n| word(n, "for") || word(n, "default"))
        .ok_or_else(|| SqlError::syntax("ATTACH PARTITION needs FOR VALUES … or DEFAULT"))?;
    let child = text(at + 2, n);
    let bound = text(n, sig.len());
    let parsed = parse(&format!("CREATE TABLE {child} PARTITION OF kiln_parent {bound}"))?;
    let [ast::Statement::CreateTable(ct)] = parsed.as_slice() else {
        return Err(SqlError::syntax("ATTACH PARTITION names a table and its bound"));
    };
    let bound = ct
        .for_values
        .clone()
        .ok_or_else(|| SqlError::syntax("ATTACH PARTITION needs FOR VALUES … or DEFAULT"))?;
    Ok(Some(Utility::AttachPartition(Box::new(AttachPartition {
        parent,
        partition: ct.name.clone(),
        bound,
    }))))
}

/// What REINDEX rebuilds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReindexKind {
    Index,
    Table,
    Schema,
    Database,
    System,
}

/// A parsed REINDEX.
#[derive(Debug, Clone, PartialEq)]
pub struct Reindex {
    pub kind: ReindexKind,
    /// The object (optional for DATABASE and SYSTEM: the current database).
    pub name: Option<ast::ObjectName>,
    pub concurrently: bool,
}

impl ReindexKind {
    /// Its keyword, as errors name it.
    pub fn keyword(self) -> &'static str {
        match self {
            ReindexKind::Index => "INDEX",
            ReindexKind::Table => "TABLE",
            ReindexKind::Schema => "SCHEMA",
            ReindexKind::Database => "DATABASE",
            ReindexKind::System => "SYSTEM",
        }
    }
}

/// `REINDEX …`, read from its tokens.
fn reindex(sql: &str) -> Result<Option<Utility>> {
    if !sql.trim_start().get(..7).is_some_and(|w| w.eq_ignore_ascii_case("reindex")) {
        return Ok(None);
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .tokenize()
        .map_err(|e| SqlError::syntax(e.to_string()))?;
    let sig: Vec<&Token> =
        tokens.iter().filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon)).collect();
    let is = |t: Option<&&Token>, w: &str| matches!(t, Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    if !is(sig.first(), "reindex") {
        return Ok(None);
    }
    let bad = || {
        SqlError::syntax(
            "REINDEX takes [(options)] INDEX, TABLE, SCHEMA, DATABASE or SYSTEM, [CONCURRENTLY] and a name",
        )
    };
    let mut n = 1;
    let mut concurrently = false;
    // (CONCURRENTLY [bool], VERBOSE [bool], TABLESPACE name)
    if matches!(sig.get(n), Some(Token::LParen)) {
        n += 1;
        loop {
            match sig.get(n) {
                Some(Token::RParen) => {
                    n += 1;
                    break;
                }
                Some(Token::Comma) => n += 1,
                Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("concurrently") => {
                    concurrently = !is(sig.get(n + 1), "false") && !is(sig.get(n + 1), "off");
                    n += 1;
                }
                Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("verbose") => n += 1,
                Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("tablespace") => {
                    return Err(SqlError::unsupported(
                        "REINDEX (TABLESPACE …) (Kiln has no tablespaces)",
                    ))
                }
                Some(Token::Word(w))
                    if ["true", "false", "on", "off"]
                        .iter()
                        .any(|b| w.value.eq_ignore_ascii_case(b)) =>
                {
                    n += 1
                }
                Some(Token::Number(..)) => n += 1,
                Some(Token::Word(w)) => {
                    return Err(SqlError::syntax(format!(
                        "unrecognized REINDEX option \"{}\"",
                        w.value.to_lowercase()
                    )))
                }
                _ => return Err(bad()),
            }
        }
    }
    let kind = match sig.get(n) {
        t if is(t, "index") => ReindexKind::Index,
        t if is(t, "table") => ReindexKind::Table,
        t if is(t, "schema") => ReindexKind::Schema,
        t if is(t, "database") => ReindexKind::Database,
        t if is(t, "system") => ReindexKind::System,
        _ => return Err(bad()),
    };
    n += 1;
    if is(sig.get(n), "concurrently") {
        concurrently = true;
        n += 1;
    }
    let rest: String = sig[n..].iter().map(|t| t.to_string()).collect::<Vec<_>>().join("");
    let name = if rest.trim().is_empty() {
        if matches!(kind, ReindexKind::Index | ReindexKind::Table | ReindexKind::Schema) {
            return Err(bad());
        }
        None
    } else {
        let mut parser = Parser::new(&PostgreSqlDialect {})
            .try_with_sql(&rest)
            .map_err(|e| syntax_error(&rest, e))?;
        let name = parser.parse_object_name(false).map_err(|e| syntax_error(&rest, e))?;
        if parser.peek_token().token != Token::EOF {
            return Err(bad());
        }
        Some(name)
    };
    Ok(Some(Utility::Reindex(Box::new(Reindex { kind, name, concurrently }))))
}

impl Utility {
    /// Whether it runs in the session's transaction (an implicit one when none is open).
    pub fn is_transactional(&self) -> bool {
        matches!(
            self,
            Utility::AlterSequence(_)
                | Utility::AlterIdentity(_)
                | Utility::AlterTypeOwner(..)
                | Utility::Do(_)
                | Utility::CreateTrigger(_)
                | Utility::AlterView(_)
                | Utility::CreateProcedure(_)
                | Utility::Reindex(_)
                | Utility::CreateDomain(_)
                | Utility::AlterDomain(_)
                | Utility::CreateMatView(_)
                | Utility::RefreshMatView(_)
                | Utility::CreateAggregate(_)
                | Utility::DropAggregate(_)
                | Utility::AlterAggregate(_)
                | Utility::CommentOnRoutine(_)
        )
    }
}

/// `CREATE [OR REPLACE] PROCEDURE name(args) …`: read as `CREATE FUNCTION name(args) RETURNS
/// void …` (the caller makes it a procedure).
fn create_procedure(sql: &str) -> Result<Option<ast::CreateFunction>> {
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else {
        return Ok(None);
    };
    let words: Vec<(usize, String)> = tokens
        .iter()
        .enumerate()
        .filter_map(|(i, t)| match t {
            Token::Word(w) if w.quote_style.is_none() => Some((i, w.value.to_uppercase())),
            Token::Whitespace(_) => None,
            _ => Some((i, String::new())),
        })
        .collect();
    let at = match words.as_slice() {
        [(_, c), (i, p), ..] if c == "CREATE" && p == "PROCEDURE" => *i,
        [(_, c), (_, o), (_, r), (i, p), ..]
            if c == "CREATE" && o == "OR" && r == "REPLACE" && p == "PROCEDURE" =>
        {
            *i
        }
        _ => return Ok(None),
    };
    // The argument list's end: the parenthesis closing the first one after the name.
    let mut depth = 0;
    let mut close = None;
    for (i, t) in tokens.iter().enumerate().skip(at) {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(close) = close else {
        return Err(SqlError::syntax("CREATE PROCEDURE needs an argument list"));
    };
    let mut text = String::with_capacity(sql.len() + 16);
    for (i, t) in tokens.iter().enumerate() {
        if i == at {
            text.push_str("FUNCTION");
        } else {
            text.push_str(&t.to_string());
        }
        if i == close {
            text.push_str(" RETURNS void");
        }
    }
    match parse(&text)?.pop() {
        Some(ast::Statement::CreateFunction(cf)) => Ok(Some(cf)),
        _ => Err(SqlError::syntax("syntax error in CREATE PROCEDURE")),
    }
}

/// Recognises a utility statement (a malformed SET CONSTRAINTS is a syntax error).
pub fn utility(sql: &str) -> Result<Option<Utility>> {
    let head = sql.trim_start();
    if head.get(..3).is_some_and(|w| w.eq_ignore_ascii_case("set"))
        && head[3..].trim_start().get(..11).is_some_and(|w| w.eq_ignore_ascii_case("constraints"))
    {
        return set_constraints(sql);
    }
    if let Some(alter) = sequence::alter_sequence(sql)? {
        return Ok(Some(Utility::AlterSequence(Box::new(alter))));
    }
    if let Some(r) = reindex(sql)? {
        return Ok(Some(r));
    }
    if let Some(a) = attach_or_detach(sql)? {
        return Ok(Some(a));
    }
    if let Some(d) = domain::create_domain(sql)? {
        return Ok(Some(Utility::CreateDomain(Box::new(d))));
    }
    if let Some(d) = domain::alter_domain(sql)? {
        return Ok(Some(Utility::AlterDomain(Box::new(d))));
    }
    if let Some(m) = domain::create_matview(sql)? {
        return Ok(Some(Utility::CreateMatView(Box::new(m))));
    }
    if let Some(r) = domain::refresh_matview(sql)? {
        return Ok(Some(Utility::RefreshMatView(Box::new(r))));
    }
    if let Some(create) = create_procedure(sql)? {
        return Ok(Some(Utility::CreateProcedure(Box::new(create))));
    }
    if let Some(alter) = sequence::alter_view(sql)? {
        return Ok(Some(Utility::AlterView(Box::new(alter))));
    }
    if let Some(t) = trigger::create_trigger(sql)? {
        return Ok(Some(Utility::CreateTrigger(Box::new(t))));
    }
    if let Some(a) = aggregate::create_aggregate(sql)? {
        return Ok(Some(Utility::CreateAggregate(Box::new(a))));
    }
    if let Some(a) = aggregate::drop_aggregate(sql)? {
        return Ok(Some(Utility::DropAggregate(Box::new(a))));
    }
    if let Some(a) = aggregate::alter_aggregate(sql)? {
        return Ok(Some(Utility::AlterAggregate(Box::new(a))));
    }
    if let Some(c) = aggregate::comment_on_routine(sql)? {
        return Ok(Some(Utility::CommentOnRoutine(Box::new(c))));
    }
    if let Some(block) = do_block::do_block(sql)? {
        return Ok(Some(Utility::Do(Box::new(block))));
    }
    if let Some((name, schema)) = sequence::alter_type_owner(sql)? {
        return Ok(Some(Utility::AlterTypeOwner(name, schema)));
    }
    if let Some(alter) = sequence::alter_identity(sql)? {
        return Ok(Some(Utility::AlterIdentity(Box::new(alter))));
    }
    if let Some((true, name, direction)) = cursor_command(sql)? {
        return Ok(Some(Utility::Move(name, direction)));
    }
    if !head.get(..6).is_some_and(|w| w.eq_ignore_ascii_case("vacuum")) {
        return Ok(None);
    }
    let words: Vec<String> = sql
        .trim()
        .trim_end_matches(';')
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    Ok(match words.first().map(String::as_str) {
        Some("vacuum") => Some(Utility::Vacuum(
            words[1..]
                .iter()
                .filter(|w| !matches!(w.as_str(), "analyze" | "full" | "verbose" | "freeze"))
                .cloned()
                .collect(),
        )),
        _ => None,
    })
}

/// `SET CONSTRAINTS …`, read from its tokens (names as identifiers are: lowercased unless
/// quoted).
fn set_constraints(sql: &str) -> Result<Option<Utility>> {
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else {
        return Ok(None);
    };
    let words: Vec<Token> = tokens
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
        .collect();
    let is = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    if words.len() < 2 || !is(&words[0], "set") || !is(&words[1], "constraints") {
        return Ok(None);
    }
    let bad = || {
        SqlError::syntax(
            "SET CONSTRAINTS takes ALL or constraint names, then DEFERRED or IMMEDIATE",
        )
    };
    let (last, list) = words[2..].split_last().ok_or_else(bad)?;
    let deferred = if is(last, "deferred") {
        true
    } else if is(last, "immediate") {
        false
    } else {
        return Err(bad());
    };
    if let [only] = list {
        if is(only, "all") {
            return Ok(Some(Utility::SetConstraints(None, deferred)));
        }
    }
    let mut names = Vec::new();
    for (i, t) in list.iter().enumerate() {
        match t {
            Token::Comma if i % 2 == 1 => {}
            Token::Word(w) if i % 2 == 0 => names.push(match w.quote_style {
                Some(_) => w.value.clone(),
                None => w.value.to_lowercase(),
            }),
            _ => return Err(bad()),
        }
    }
    if names.is_empty() || list.len().is_multiple_of(2) {
        return Err(bad());
    }
    Ok(Some(Utility::SetConstraints(Some(names), deferred)))
}

/// Parses statement text (sqlparser, PostgreSQL dialect) and checks the depth of every tree.
pub fn parse(sql: &str) -> Result<Vec<ast::Statement>> {
    let bound = match Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() {
        Ok(tokens) => check_nesting(&tokens)?,
        Err(_) => 0,
    };
    parse_bounded(sql, bound)
}

/// Parses one statement of [`split`], whose nesting bound is already known.
pub fn parse_statement(statement: &StatementText) -> Result<Vec<ast::Statement>> {
    if let Some(parsed) = transaction_control(&statement.text) {
        return Ok(parsed);
    }
    parse_bounded(&statement.text, statement.nesting)
}

/// The statements drivers send as simple queries around every transaction, parsed once per
/// process rather than once per transaction.
fn transaction_control(text: &str) -> Option<Vec<ast::Statement>> {
    const TEXTS: &[&str] = &[
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "END",
        "START TRANSACTION",
        "SET LOCAL synchronous_commit = off",
        "SET LOCAL synchronous_commit = on",
    ];
    static PARSED: std::sync::OnceLock<Vec<(&str, Vec<ast::Statement>)>> =
        std::sync::OnceLock::new();
    let text = text.trim();
    if text.len() > 40 {
        return None;
    }
    let parsed = PARSED
        .get_or_init(|| TEXTS.iter().filter_map(|t| Some((*t, parse_checked(t).ok()?))).collect());
    parsed.iter().find(|(t, _)| t.eq_ignore_ascii_case(text)).map(|(_, p)| p.clone())
}

fn parse_bounded(sql: &str, bound: usize) -> Result<Vec<ast::Statement>> {
    // A tree that may be deep is walked, and dropped when refused, on a stack sized for it,
    // whatever stack the caller runs on.
    if bound > SHALLOW_BOUND {
        stacker::grow(bound * STACK_BYTES_PER_LEVEL + (1 << 20), || parse_checked(sql))
    } else {
        parse_checked(sql)
    }
}

/// Up to this nesting bound, a tree is walked on the caller's stack.
const SHALLOW_BOUND: usize = 256;

/// Stack a walk of sqlparser's tree needs per level (measured: well under half of this).
const STACK_BYTES_PER_LEVEL: usize = 1024;

fn parse_checked(sql: &str) -> Result<Vec<ast::Statement>> {
    // pgbench writes `copy … with (freeze on)`; the option changes nothing here.
    let cleaned;
    let is_copy = sql.trim_start().get(..4).is_some_and(|w| w.eq_ignore_ascii_case("copy"));
    let sql = if is_copy && sql.to_lowercase().contains("freeze on") {
        cleaned = sql
            .replace("freeze on", "")
            .replace("FREEZE ON", "")
            .replace("(  )", "")
            .replace("with ()", "");
        cleaned.as_str()
    } else {
        sql
    };
    // FETCH as PostgreSQL writes it (FROM / IN optional, negative counts).
    if let Some((false, name, direction)) = cursor_command(sql)? {
        let position = ast::FetchPosition::From;
        return Ok(vec![ast::Statement::Fetch { name, direction, position, into: None }]);
    }
    // Sequence options in any order (`sequence`).
    if let Some(create) = sequence::create_sequence(sql)? {
        return Ok(vec![create]);
    }
    let reordered = sequence::identity_options_in_order(sql)?;
    let sql = reordered.as_deref().unwrap_or(sql);
    let named = create_table_as_named(sql);
    let sql = named.as_deref().unwrap_or(sql);
    let locks = stronger_row_locks(sql);
    let sql = locks.as_deref().unwrap_or(sql);
    let (without, overriding) = match overriding_clause(sql) {
        Some((text, mode)) => (Some(text), Some(mode)),
        None => (None, None),
    };
    let sql = without.as_deref().unwrap_or(sql);
    let defaults = merge_default_values(sql);
    let sql = defaults.as_deref().unwrap_or(sql);
    let dropped = drop_index_concurrently(sql);
    let sql = dropped.as_deref().unwrap_or(sql);
    let only_index = index_on_only(sql);
    let sql = only_index.as_deref().unwrap_or(sql);
    let mut statements =
        Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(|e| syntax_error(sql, e))?;
    if let (Some(mode), [ast::Statement::Insert(insert)]) = (overriding, statements.as_mut_slice())
    {
        insert.settings = Some(vec![ast::Setting {
            key: ast::Ident::new(OVERRIDING),
            value: ast::Expr::value(ast::Value::SingleQuotedString(mode.into())),
        }]);
    }
    if let (Some(_), [ast::Statement::CreateIndex(ci)]) = (&only_index, statements.as_mut_slice()) {
        ci.with.push(ast::Expr::Identifier(ast::Ident::new(INDEX_ON_ONLY)));
    }
    for s in &statements {
        check_depth(s)?;
    }
    Ok(statements)
}

/// The name of the derived table [`create_table_as_named`] reads the query through.
pub const CREATED_AS: &str = "kiln_created_as";

/// `CREATE TABLE t (a, b) AS query [WITH [NO] DATA]` (column names without types, which the
/// SQL parser does not read) as `CREATE TABLE t AS SELECT * FROM (query) AS t (a, b) …`: the
/// names rename the query's first columns, as in PostgreSQL.
/// `FOR NO KEY UPDATE` and `FOR KEY SHARE` (Hibernate's and pg_dump's row locks) as
/// `FOR UPDATE` and `FOR SHARE`, which sqlparser reads: Kiln's row locks have those two
/// strengths, each at least as strong as the weaker one it stands for, so the statement
/// keeps every guarantee it asked for (and may wait where PostgreSQL would not).
fn stronger_row_locks(sql: &str) -> Option<String> {
    // Most statements have no `key` at all: they are not tokenized a second time.
    if !sql.as_bytes().windows(3).any(|w| w.eq_ignore_ascii_case(b"key")) {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let sig: Vec<usize> =
        (0..tokens.len()).filter(|&i| !matches!(tokens[i], Token::Whitespace(_))).collect();
    let word = |n: usize, w: Keyword| matches!(sig.get(n).map(|&i| &tokens[i]), Some(Token::Word(x)) if x.keyword == w && x.quote_style.is_none());
    let mut drop = std::collections::HashSet::new();
    for n in 0..sig.len() {
        if !word(n, Keyword::FOR) {
            continue;
        }
        if word(n + 1, Keyword::NO) && word(n + 2, Keyword::KEY) && word(n + 3, Keyword::UPDATE) {
            drop.extend([sig[n + 1], sig[n + 2]]);
        } else if word(n + 1, Keyword::KEY) && word(n + 2, Keyword::SHARE) {
            drop.insert(sig[n + 1]);
        }
    }
    if drop.is_empty() {
        return None;
    }
    Some(
        tokens
            .iter()
            .enumerate()
            .filter(|(i, _)| !drop.contains(i))
            .map(|(_, t)| t.to_string())
            .collect(),
    )
}

fn create_table_as_named(sql: &str) -> Option<String> {
    if !sql.trim_start().get(..6)?.eq_ignore_ascii_case("create") {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let sig: Vec<usize> =
        (0..tokens.len()).filter(|&i| !matches!(tokens[i], Token::Whitespace(_))).collect();
    let word = |n: usize, w: Keyword| matches!(sig.get(n).map(|&i| &tokens[i]), Some(Token::Word(x)) if x.keyword == w);
    // CREATE [TEMP | TEMPORARY] TABLE [IF NOT EXISTS] name ( …
    let mut n = 1;
    if word(n, Keyword::TEMP) || word(n, Keyword::TEMPORARY) {
        n += 1;
    }
    if !word(0, Keyword::CREATE) || !word(n, Keyword::TABLE) {
        return None;
    }
    n += 1;
    if word(n, Keyword::IF) && word(n + 1, Keyword::NOT) && word(n + 2, Keyword::EXISTS) {
        n += 3;
    }
    // The name: words joined by dots.
    while matches!(sig.get(n).map(|&i| &tokens[i]), Some(Token::Word(_)))
        && matches!(sig.get(n + 1).map(|&i| &tokens[i]), Some(Token::Period))
    {
        n += 2;
    }
    if !matches!(sig.get(n).map(|&i| &tokens[i]), Some(Token::Word(_))) {
        return None;
    }
    let open = *sig.get(n + 1)?;
    if tokens[open] != Token::LParen {
        return None;
    }
    // Names only, separated by commas, then `) AS`.
    let mut m = n + 2;
    loop {
        if !matches!(sig.get(m).map(|&i| &tokens[i]), Some(Token::Word(_))) {
            return None;
        }
        match sig.get(m + 1).map(|&i| &tokens[i]) {
            Some(Token::Comma) => m += 2,
            Some(Token::RParen) => break,
            _ => return None,
        }
    }
    let close = sig[m + 1];
    if !word(m + 2, Keyword::AS) {
        return None;
    }
    let query_start = sig.get(m + 3).copied()?;
    // A trailing WITH [NO] DATA stays outside the derived table.
    let last = sig.len();
    let tail_from = if last >= 2 && word(last - 1, Keyword::DATA) && word(last - 2, Keyword::WITH) {
        last - 2
    } else if last >= 3
        && word(last - 1, Keyword::DATA)
        && word(last - 2, Keyword::NO)
        && word(last - 3, Keyword::WITH)
    {
        last - 3
    } else {
        last
    };
    // Without a trailing semicolon.
    let mut query_end = sig.get(tail_from).copied().unwrap_or(tokens.len());
    if tail_from == last {
        if let Some(&semi) = sig.last().filter(|&&i| tokens[i] == Token::SemiColon) {
            query_end = semi;
        }
    }
    let text = |range: std::ops::Range<usize>| -> String {
        tokens[range].iter().map(|t| t.to_string()).collect()
    };
    let head = text(0..open);
    let names = text(open..close + 1);
    let query = text(query_start..query_end);
    let rest = text(query_end..tokens.len());
    Some(format!("{head} AS SELECT * FROM ({query}) AS {CREATED_AS} {names} {rest}"))
}

/// `DROP INDEX CONCURRENTLY …` (which the SQL parser does not read) as `DROP INDEX …`:
/// Kiln drops an index in one short transaction either way, without blocking the table's
/// readers and writers while it waits, which is what CONCURRENTLY asks for.
fn drop_index_concurrently(sql: &str) -> Option<String> {
    let head = sql.trim_start().get(..4)?;
    let says = |w: &[u8]| sql.as_bytes().windows(w.len()).any(|x| x.eq_ignore_ascii_case(w));
    if !head.eq_ignore_ascii_case("drop") || !says(b"concurrently") {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let sig: Vec<usize> =
        (0..tokens.len()).filter(|&i| !matches!(tokens[i], Token::Whitespace(_))).collect();
    let word = |n: usize, w: &str| matches!(sig.get(n).map(|&i| &tokens[i]), Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    if !(word(0, "drop") && word(1, "index") && word(2, "concurrently")) {
        return None;
    }
    let skip = sig[2];
    Some(
        tokens.iter().enumerate().filter(|(i, _)| *i != skip).map(|(_, t)| t.to_string()).collect(),
    )
}

/// The marker [`index_on_only`] leaves in a CREATE INDEX's `WITH` options.
pub const INDEX_ON_ONLY: &str = "kiln_on_only";

/// `CREATE [UNIQUE] INDEX … ON ONLY table …` (pg_dump's index of a partitioned table alone)
/// without its `ONLY`, which the SQL parser does not read; the statement is marked with
/// [`INDEX_ON_ONLY`] once parsed.
fn index_on_only(sql: &str) -> Option<String> {
    let head = sql.trim_start().get(..6)?;
    let says = |w: &[u8]| sql.as_bytes().windows(w.len()).any(|x| x.eq_ignore_ascii_case(w));
    if !head.eq_ignore_ascii_case("create") || !says(b"only") {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let sig: Vec<usize> =
        (0..tokens.len()).filter(|&i| !matches!(tokens[i], Token::Whitespace(_))).collect();
    let word = |n: usize, w: &str| matches!(sig.get(n).map(|&i| &tokens[i]), Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let index_at = if word(1, "unique") { 2 } else { 1 };
    if !(word(0, "create") && word(index_at, "index")) {
        return None;
    }
    let on = (index_at + 1..sig.len()).find(|&n| word(n, "on"))?;
    if !word(on + 1, "only") {
        return None;
    }
    let skip = sig[on + 1];
    Some(
        tokens.iter().enumerate().filter(|(i, _)| *i != skip).map(|(_, t)| t.to_string()).collect(),
    )
}

/// MERGE's `INSERT DEFAULT VALUES` (which the SQL parser does not read) as `INSERT VALUES
/// (DEFAULT)`: the first column takes its default, and every column not given does too.
fn merge_default_values(sql: &str) -> Option<String> {
    let head = sql.trim_start().get(..5)?;
    let says = |w: &[u8]| sql.as_bytes().windows(w.len()).any(|x| x.eq_ignore_ascii_case(w));
    if !(head.eq_ignore_ascii_case("merge") || head.eq_ignore_ascii_case("with "))
        || !says(b"default")
    {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let sig: Vec<usize> =
        (0..tokens.len()).filter(|&i| !matches!(tokens[i], Token::Whitespace(_))).collect();
    let word = |n: usize, w: Keyword| matches!(sig.get(n).map(|&i| &tokens[i]), Some(Token::Word(x)) if x.keyword == w && x.quote_style.is_none());
    let mut replace = std::collections::HashMap::new();
    for n in 0..sig.len() {
        if word(n, Keyword::INSERT) && word(n + 1, Keyword::DEFAULT) && word(n + 2, Keyword::VALUES)
        {
            replace.insert(sig[n + 1], "VALUES");
            replace.insert(sig[n + 2], "(DEFAULT)");
        }
    }
    if replace.is_empty() {
        return None;
    }
    Some(
        tokens
            .iter()
            .enumerate()
            .map(|(i, t)| replace.get(&i).map_or_else(|| t.to_string(), |r| r.to_string()))
            .collect(),
    )
}

/// The INSERT setting that carries `OVERRIDING {SYSTEM | USER} VALUE` (which the SQL parser
/// does not read) from [`parse`] to the binder: `system` or `user`.
pub const OVERRIDING: &str = "overriding";

/// An INSERT's `OVERRIDING {SYSTEM | USER} VALUE` (before its VALUES or query, outside any
/// parentheses): the statement without it, and `system` or `user`.
fn overriding_clause(sql: &str) -> Option<(String, &'static str)> {
    let head = sql.trim_start().get(..6)?;
    // A byte scan first: every INSERT passes here, few say OVERRIDING.
    let says = |w: &[u8]| sql.as_bytes().windows(w.len()).any(|x| x.eq_ignore_ascii_case(w));
    if !head.eq_ignore_ascii_case("insert") || !says(b"overriding") {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let words: Vec<(usize, &Token)> =
        tokens.iter().enumerate().filter(|(_, t)| !matches!(t, Token::Whitespace(_))).collect();
    let mut depth = 0i32;
    for (n, (i, t)) in words.iter().enumerate() {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Word(w)
                if depth == 0
                    && w.quote_style.is_none()
                    && w.value.eq_ignore_ascii_case("overriding") =>
            {
                let mode = match words.get(n + 1) {
                    Some((_, Token::Word(m))) if m.keyword == Keyword::SYSTEM => "system",
                    Some((_, Token::Word(m))) if m.keyword == Keyword::USER => "user",
                    _ => return None,
                };
                let Some((end, Token::Word(v))) = words.get(n + 2) else { return None };
                if v.keyword != Keyword::VALUE {
                    return None;
                }
                let mut text = String::with_capacity(sql.len());
                for (j, t) in tokens.iter().enumerate() {
                    if j < *i || j > *end {
                        text.push_str(&t.to_string());
                    }
                }
                return Some((text, mode));
            }
            _ => {}
        }
    }
    None
}

/// `FETCH` / `MOVE` `[direction] [FROM | IN] cursor`, read from its tokens: whether it is
/// MOVE, the cursor and the direction (`None` for another statement).
fn cursor_command(sql: &str) -> Result<Option<(bool, ast::Ident, ast::FetchDirection)>> {
    use ast::FetchDirection as D;
    let head = sql.trim_start();
    let is_move = head.get(..4).is_some_and(|w| w.eq_ignore_ascii_case("move"));
    if !is_move && !head.get(..5).is_some_and(|w| w.eq_ignore_ascii_case("fetch")) {
        return Ok(None);
    }
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else {
        return Ok(None);
    };
    let mut words: Vec<Token> =
        tokens.into_iter().filter(|t| !matches!(t, Token::Whitespace(_))).collect();
    while words.last() == Some(&Token::SemiColon) {
        words.pop();
    }
    let keyword = |t: &Token, k: &str| matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k));
    if words.is_empty() || !(keyword(&words[0], "fetch") || keyword(&words[0], "move")) {
        return Ok(None);
    }
    let what = if is_move { "MOVE" } else { "FETCH" };
    let bad = || SqlError::syntax(format!("{what} takes a direction and a cursor name"));
    let Some(Token::Word(name)) = words.last() else { return Err(bad()) };
    let reserved = [
        "next", "prior", "first", "last", "all", "forward", "backward", "absolute", "relative",
        "from", "in",
    ];
    if words.len() < 2 || reserved.iter().any(|k| keyword(&words[words.len() - 1], k)) {
        return Err(bad());
    }
    let name = ast::Ident {
        value: name.value.clone(),
        quote_style: name.quote_style,
        span: sqlparser::tokenizer::Span::empty(),
    };
    let mut rest = &words[1..words.len() - 1];
    if let Some(last) = rest.last() {
        if keyword(last, "from") || keyword(last, "in") {
            rest = &rest[..rest.len() - 1];
        }
    }
    let count = |t: &[Token]| -> Result<ast::ValueWithSpan> {
        let text = match t {
            [Token::Number(n, _)] => n.clone(),
            [Token::Minus, Token::Number(n, _)] => format!("-{n}"),
            [Token::Plus, Token::Number(n, _)] => n.clone(),
            _ => return Err(bad()),
        };
        if text.parse::<i64>().is_err() {
            return Err(bad());
        }
        Ok(ast::ValueWithSpan {
            value: ast::Value::Number(text, false),
            span: sqlparser::tokenizer::Span::empty(),
        })
    };
    let direction = match rest {
        [] => D::Next,
        [w] if keyword(w, "next") => D::Next,
        [w] if keyword(w, "prior") => D::Prior,
        [w] if keyword(w, "first") => D::First,
        [w] if keyword(w, "last") => D::Last,
        [w] if keyword(w, "all") => D::All,
        [w] if keyword(w, "forward") => D::Forward { limit: None },
        [w] if keyword(w, "backward") => D::Backward { limit: None },
        [w, a] if keyword(w, "forward") && keyword(a, "all") => D::ForwardAll,
        [w, a] if keyword(w, "backward") && keyword(a, "all") => D::BackwardAll,
        [w, n @ ..] if keyword(w, "absolute") => D::Absolute { limit: count(n)? },
        [w, n @ ..] if keyword(w, "relative") => D::Relative { limit: count(n)? },
        [w, n @ ..] if keyword(w, "forward") => D::Forward { limit: Some(count(n)?) },
        [w, n @ ..] if keyword(w, "backward") => D::Backward { limit: Some(count(n)?) },
        n => D::Count { limit: count(n)? },
    };
    Ok(Some((is_move, name, direction)))
}

/// Parses one expression (a stored DEFAULT), with the same depth checks as a statement.
/// Parses a type name (`integer`, `character varying(20)`, `numeric(5,2)[]`).
pub fn parse_data_type(text: &str) -> Result<ast::DataType> {
    match parse_expr(&format!("NULL::{text}"))? {
        ast::Expr::Cast { data_type, .. } => Ok(data_type),
        _ => Err(SqlError::syntax(format!("not a type name: {text}"))),
    }
}

pub fn parse_expr(text: &str) -> Result<ast::Expr> {
    let wrapped = format!("SELECT {text}");
    let mut statements = parse(&wrapped)?;
    if let Some(ast::Statement::Query(q)) = statements.pop() {
        if let ast::SetExpr::Select(s) = *q.body {
            if let [ast::SelectItem::UnnamedExpr(e)] = s.projection.as_slice() {
                return Ok(e.clone());
            }
        }
    }
    Err(SqlError::syntax(format!("not one expression: {text}")))
}

/// PostgreSQL's form of a parser error: `syntax error at or near "TOKEN"`, with a position.
fn syntax_error(sql: &str, e: sqlparser::parser::ParserError) -> SqlError {
    if let sqlparser::parser::ParserError::RecursionLimitExceeded = e {
        return too_complex(
            "statement too complex: parentheses or subqueries nested too deeply".to_string(),
        );
    }
    let msg = e.to_string();
    let msg = msg.strip_prefix("sql parser error: ").unwrap_or(&msg).to_string();
    let position = msg.rsplit_once("Line: ").and_then(|(_, rest)| {
        let (line, col) = rest.split_once(", Column: ")?;
        crate::error::char_position(sql, line.trim().parse().ok()?, col.trim().parse().ok()?)
    });
    let near = msg
        .split_once("found: ")
        .map(|(_, rest)| rest.rsplit_once(" at Line:").map_or(rest, |(t, _)| t).to_string());
    let message = match near {
        Some(t) if t == "EOF" => "syntax error at end of input".to_string(),
        Some(t) => format!("syntax error at or near \"{t}\""),
        None => format!("syntax error: {msg}"),
    };
    SqlError::syntax(message).detail(msg.clone()).at(position)
}

/// Measures the nesting of expressions and queries, stopping as soon as it passes the limit
/// (so the walk itself never recurses deeper than [`EXPRESSION_DEPTH_MAX`]).
struct DepthCheck {
    depth: usize,
}

impl DepthCheck {
    fn enter(&mut self) -> ControlFlow<()> {
        self.depth += 1;
        if self.depth > EXPRESSION_DEPTH_MAX {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

impl Visitor for DepthCheck {
    type Break = ();
    fn pre_visit_expr(&mut self, _: &ast::Expr) -> ControlFlow<()> {
        self.enter()
    }
    fn post_visit_expr(&mut self, _: &ast::Expr) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }
    fn pre_visit_query(&mut self, _: &ast::Query) -> ControlFlow<()> {
        self.enter()
    }
    fn post_visit_query(&mut self, _: &ast::Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }
}

/// 54001 when a statement's expressions or subqueries nest deeper than the limit.
pub fn check_depth(statement: &ast::Statement) -> Result<()> {
    let mut check = DepthCheck { depth: 0 };
    match statement.visit(&mut check) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(()) => Err(too_complex(format!(
            "stack depth limit exceeded: expressions and subqueries nest more than {EXPRESSION_DEPTH_MAX} levels deep"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(sql: &str) -> usize {
        nesting_bound(&Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().unwrap())
    }

    #[test]
    fn nesting_bound_counts_operators_per_list_item() {
        assert_eq!(bound("1"), 0);
        assert_eq!(bound("SELECT 1 + 2 + 3"), 3);
        // Commas start a new item: a long VALUES list or IN list is shallow.
        assert_eq!(bound("VALUES (1, 2), (3, 4), (5, 6)"), 2);
        assert_eq!(bound("SELECT x IN (1, 2, 3, 4, 5, 6, 7, 8)"), 3);
        // Parentheses add a level, and the operators inside them count too.
        assert_eq!(bound("SELECT ((1 + 2))"), 4);
        let chain = format!("SELECT 1{}", " + 1".repeat(20_000));
        assert!(bound(&chain) > NESTING_BOUND_MAX);
    }

    #[test]
    fn deep_statements_are_refused_with_54001() {
        let chain = format!("SELECT 1{}", " + 1".repeat(NESTING_BOUND_MAX + 10));
        assert_eq!(split(&chain).unwrap_err().code, code::STATEMENT_TOO_COMPLEX);
        assert_eq!(parse(&chain).unwrap_err().code, code::STATEMENT_TOO_COMPLEX);
        let medium = format!("SELECT 1{}", " + 1".repeat(EXPRESSION_DEPTH_MAX + 10));
        assert_eq!(split(&medium).unwrap().len(), 1);
        assert_eq!(parse(&medium).unwrap_err().code, code::STATEMENT_TOO_COMPLEX);
        let ok = format!("SELECT 1{}", " + 1".repeat(EXPRESSION_DEPTH_MAX - 10));
        assert_eq!(parse(&ok).unwrap().len(), 1);
        let parens = format!("SELECT {}1{}", "(".repeat(200), ")".repeat(200));
        assert_eq!(parse(&parens).unwrap_err().code, code::STATEMENT_TOO_COMPLEX);
    }

    #[test]
    fn split_keeps_hints_per_statement() {
        let s = split("/*+ FAST */ INSERT INTO t VALUES (1); SELECT 1;; ").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].hint, Some(CommitHint::Fast));
        assert_eq!(s[1].hint, None);
    }

    #[test]
    fn split_cuts_statements_from_the_text_as_written() {
        let sql = "SELECT 'it''s', \"a\"\"b\", E'x\\'y';\n  INSERT INTO \"é\" VALUES ('ü;''');SELECT $$a;b$$";
        let s = split(sql).unwrap();
        let texts: Vec<&str> = s.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "SELECT 'it''s', \"a\"\"b\", E'x\\'y'",
                "\n  INSERT INTO \"é\" VALUES ('ü;''')",
                "SELECT $$a;b$$"
            ]
        );
        for t in &s {
            parse_statement(t).unwrap();
        }
    }

    #[test]
    fn safe_hints_name_a_level() {
        let s = split("/*+ SAFE(all) */ INSERT INTO t VALUES (1); /*+ safe( site:eu-west ) */ SELECT 1; /*+ SAFE */ SELECT 2").unwrap();
        assert_eq!(s[0].hint, Some(CommitHint::Safe(Some(DurabilityLevel::All))));
        assert_eq!(s[1].hint, Some(CommitHint::Safe(DurabilityLevel::site("eu-west"))));
        assert_eq!(s[2].hint, Some(CommitHint::Safe(None)));
        for bad in [
            "/*+ SAFE(everywhere) */ SELECT 1",
            "/*+ SAFE(site:) */ SELECT 1",
            "/*+ SAFE(site:a b) */ SELECT 1",
        ] {
            assert_eq!(split(bad).unwrap_err().code, code::INVALID_PARAMETER_VALUE, "{bad}");
        }
        // Other comments are not hints.
        assert_eq!(split("/*+ SAFETY */ SELECT 1").unwrap()[0].hint, None);
        assert_eq!(split("/* SAFE(all) */ SELECT 1").unwrap()[0].hint, None);
    }
}
