//! `CREATE AGGREGATE`, `DROP AGGREGATE` and `ALTER AGGREGATE` as PostgreSQL writes them, and
//! `COMMENT ON {FUNCTION | PROCEDURE | AGGREGATE} name(types)`.
//!
//! sqlparser reads none of these with a routine's signature (`name(*)`, argument names and
//! modes, an aggregate's option list); they are read here with its token-level parser. Option
//! values are kept as written and checked where the aggregate is made (`exec::aggregates`).

use sqlparser::ast;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use super::sequence::{contains_word, parser_for, starts_with_word, unexpected};
use crate::error::{Result, SqlError};

/// `CREATE [OR REPLACE] AGGREGATE name (args) (option = value, …)`, or the old form
/// `CREATE AGGREGATE name (BASETYPE = type, option = value, …)`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateAggregate {
    pub or_replace: bool,
    pub name: ast::ObjectName,
    /// The argument types (`name(*)`: none). The old form's BASETYPE, unless it is `"any"`.
    pub args: Vec<ast::DataType>,
    /// The options in order: each name lowercased, with its value (`None`: a flag written
    /// alone, as `FINALFUNC_EXTRA`).
    pub options: Vec<(String, Option<AggregateValue>)>,
}

/// An option's value as written.
#[derive(Debug, Clone, PartialEq)]
pub enum AggregateValue {
    /// A name or a type name (`SFUNC = f`, `STYPE = integer[]`, `PARALLEL = SAFE`): a type
    /// as sqlparser reads it, which a function's name also is.
    Type(ast::DataType),
    /// A string or a number (`INITCOND = '0'`, `INITCOND = 0`, `SSPACE = 16`).
    Literal(String),
    /// Anything else, as its tokens' text (`SORTOP = >`).
    Other(String),
}

impl AggregateValue {
    /// The value as text: a literal's text, a name's or type's as written.
    pub fn text(&self) -> String {
        match self {
            AggregateValue::Type(t) => t.to_string(),
            AggregateValue::Literal(s) | AggregateValue::Other(s) => s.clone(),
        }
    }
}

/// `DROP AGGREGATE [IF EXISTS] name(args) [, …] [CASCADE | RESTRICT]`.
#[derive(Debug, Clone, PartialEq)]
pub struct DropAggregate {
    pub if_exists: bool,
    /// Each aggregate named, with its argument types.
    pub names: Vec<(ast::ObjectName, Vec<ast::DataType>)>,
    pub cascade: bool,
}

/// `ALTER AGGREGATE name(args) {RENAME TO new | OWNER TO role | SET SCHEMA s}`.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterAggregate {
    pub name: ast::ObjectName,
    pub args: Vec<ast::DataType>,
    pub action: AlterAggregateAction,
}

/// What an ALTER AGGREGATE does.
#[derive(Debug, Clone, PartialEq)]
pub enum AlterAggregateAction {
    RenameTo(ast::Ident),
    OwnerTo,
    SetSchema(ast::Ident),
}

/// `COMMENT ON {FUNCTION | PROCEDURE | AGGREGATE} name[(types)] IS 'text' | NULL`.
#[derive(Debug, Clone, PartialEq)]
pub struct CommentOnRoutine {
    /// `FUNCTION`, `PROCEDURE` or `AGGREGATE`.
    pub kind: &'static str,
    pub name: ast::ObjectName,
    /// The argument types a call gives (`None`: no list, the name's only routine).
    pub args: Option<Vec<ast::DataType>>,
    /// The comment (`None`: `IS NULL`, which removes it).
    pub comment: Option<String>,
}

/// An aggregate's signature in parentheses: `(*)`, `()`, or argument types, each with an
/// optional mode (IN) and name. An ordered-set aggregate's `ORDER BY` is refused.
fn signature(p: &mut Parser) -> Result<Vec<ast::DataType>> {
    routine_signature(p, true)
}

/// A routine's signature in parentheses (`aggregate`: an aggregate's, see [`signature`]; a
/// function's OUT arguments are no part of it, as in PostgreSQL).
fn routine_signature(p: &mut Parser, aggregate: bool) -> Result<Vec<ast::DataType>> {
    p.expect_token(&Token::LParen).map_err(|_| unexpected(p, "\"(\""))?;
    if p.consume_token(&Token::Mul) {
        p.expect_token(&Token::RParen).map_err(|_| unexpected(p, "\")\""))?;
        return Ok(vec![]);
    }
    let mut args = Vec::new();
    if p.consume_token(&Token::RParen) {
        return Ok(args);
    }
    loop {
        if p.parse_keywords(&[Keyword::ORDER, Keyword::BY]) {
            return Err(ordered_set());
        }
        if p.parse_keyword(Keyword::VARIADIC) {
            return Err(SqlError::unsupported("VARIADIC arguments"));
        }
        let out = matches!(p.peek_token().token, Token::Word(ref w) if w.keyword == Keyword::OUT);
        if aggregate
            && matches!(p.peek_token().token, Token::Word(ref w) if w.keyword == Keyword::OUT || w.keyword == Keyword::INOUT)
        {
            return Err(SqlError::new(
                crate::error::code::INVALID_FUNCTION_DEFINITION,
                "aggregates cannot have output arguments",
            ));
        }
        let _ = p.parse_keyword(Keyword::IN)
            || p.parse_keyword(Keyword::OUT)
            || p.parse_keyword(Keyword::INOUT);
        let ty = argument(p)?;
        if !out {
            args.push(ty);
        }
        if p.consume_token(&Token::Comma) {
            continue;
        }
        if p.parse_keywords(&[Keyword::ORDER, Keyword::BY]) {
            return Err(ordered_set());
        }
        p.expect_token(&Token::RParen).map_err(|_| unexpected(p, "\",\" or \")\""))?;
        return Ok(args);
    }
}

fn ordered_set() -> SqlError {
    SqlError::unsupported("ordered-set aggregates (CREATE AGGREGATE … ORDER BY …)")
}

/// One argument: a type, or a name and a type (the type read first, as a name alone is
/// also a type's name: `(double precision)` against `(x integer)`).
fn argument(p: &mut Parser) -> Result<ast::DataType> {
    let ends = |p: &Parser| {
        matches!(p.peek_token().token, Token::Comma | Token::RParen)
            || matches!(p.peek_token().token, Token::Word(ref w) if w.keyword == Keyword::ORDER)
    };
    if let Ok(Some(t)) = p.maybe_parse(|p| {
        let t = p.parse_data_type()?;
        if ends(p) {
            Ok(t)
        } else {
            p.expected("an argument's end", p.peek_token())
        }
    }) {
        return Ok(t);
    }
    p.parse_identifier().map_err(|_| unexpected(p, "an argument"))?;
    p.parse_data_type().map_err(|_| unexpected(p, "a data type"))
}

/// An option's value: up to the next `,` or `)` outside parentheses.
fn value(p: &mut Parser) -> Result<AggregateValue> {
    let literal = match p.peek_token().token {
        Token::SingleQuotedString(s) => Some(s),
        Token::Number(n, _) => Some(n),
        Token::Minus => match p.peek_nth_token(1).token {
            Token::Number(n, _) => {
                p.next_token();
                Some(format!("-{n}"))
            }
            _ => None,
        },
        _ => None,
    };
    if let Some(s) = literal {
        p.next_token();
        return Ok(AggregateValue::Literal(s));
    }
    if let Ok(Some(t)) = p.maybe_parse(|p| {
        let t = p.parse_data_type()?;
        if matches!(p.peek_token().token, Token::Comma | Token::RParen) {
            Ok(t)
        } else {
            p.expected("\",\" or \")\"", p.peek_token())
        }
    }) {
        return Ok(AggregateValue::Type(t));
    }
    let mut text = String::new();
    let mut depth = 0;
    loop {
        match p.peek_token().token {
            Token::EOF => return Err(unexpected(p, "\")\"")),
            Token::Comma | Token::RParen if depth == 0 => break,
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ => {}
        }
        text.push_str(&p.next_token().token.to_string());
    }
    if text.is_empty() {
        return Err(unexpected(p, "a value"));
    }
    Ok(AggregateValue::Other(text))
}

/// `CREATE [OR REPLACE] AGGREGATE …` (`None`: another statement).
pub(crate) fn create_aggregate(sql: &str) -> Result<Option<CreateAggregate>> {
    if !starts_with_word(sql, "create") || !contains_word(sql, "aggregate") {
        return Ok(None);
    }
    let Some(mut p) = parser_for(sql) else { return Ok(None) };
    if !p.parse_keyword(Keyword::CREATE) {
        return Ok(None);
    }
    let or_replace = p.parse_keywords(&[Keyword::OR, Keyword::REPLACE]);
    if !p.parse_keyword(Keyword::AGGREGATE) {
        return Ok(None);
    }
    let name = p.parse_object_name(false).map_err(|_| unexpected(&p, "an aggregate's name"))?;
    // The old form has one parenthesized list, of options.
    let old = p.peek_token().token == Token::LParen
        && matches!(p.peek_nth_token(1).token, Token::Word(_))
        && p.peek_nth_token(2).token == Token::Eq;
    let mut args = if old { Vec::new() } else { signature(&mut p)? };
    p.expect_token(&Token::LParen).map_err(|_| unexpected(&p, "\"(\""))?;
    let mut options: Vec<(String, Option<AggregateValue>)> = Vec::new();
    loop {
        let key = match p.next_token().token {
            Token::Word(w) => w.value.to_lowercase(),
            _ => {
                p.prev_token();
                return Err(unexpected(&p, "an aggregate option"));
            }
        };
        let value = if p.consume_token(&Token::Eq) { Some(value(&mut p)?) } else { None };
        if options.iter().any(|(k, _)| *k == key) {
            return Err(SqlError::syntax("conflicting or redundant options"));
        }
        options.push((key, value));
        if p.consume_token(&Token::Comma) {
            continue;
        }
        p.expect_token(&Token::RParen).map_err(|_| unexpected(&p, "\",\" or \")\""))?;
        break;
    }
    end(&mut p)?;
    if old {
        let Some(at) = options.iter().position(|(k, _)| k == "basetype") else {
            return Err(SqlError::new(
                crate::error::code::INVALID_FUNCTION_DEFINITION,
                "aggregate input type must be specified",
            ));
        };
        let (_, base) = options.remove(at);
        let any = |t: &str| t.trim_matches('"').eq_ignore_ascii_case("any");
        match base {
            Some(AggregateValue::Type(t)) if !any(&t.to_string()) => args.push(t),
            Some(AggregateValue::Literal(t)) if !any(&t) => {
                let t = super::parse_data_type(&t)?;
                args.push(t);
            }
            Some(_) => {}
            None => return Err(SqlError::syntax("BASETYPE requires a type")),
        }
    } else if options.iter().any(|(k, _)| k == "basetype") {
        return Err(SqlError::syntax(
            "basetype is redundant with aggregate input type specification",
        ));
    }
    Ok(Some(CreateAggregate { or_replace, name, args, options }))
}

/// `DROP AGGREGATE …` (`None`: another statement).
pub(crate) fn drop_aggregate(sql: &str) -> Result<Option<DropAggregate>> {
    if !starts_with_word(sql, "drop") || !contains_word(sql, "aggregate") {
        return Ok(None);
    }
    let Some(mut p) = parser_for(sql) else { return Ok(None) };
    if !p.parse_keywords(&[Keyword::DROP, Keyword::AGGREGATE]) {
        return Ok(None);
    }
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let mut names = Vec::new();
    loop {
        let name = p.parse_object_name(false).map_err(|_| unexpected(&p, "an aggregate's name"))?;
        names.push((name, signature(&mut p)?));
        if !p.consume_token(&Token::Comma) {
            break;
        }
    }
    let cascade = p.parse_keyword(Keyword::CASCADE);
    if !cascade {
        let _ = p.parse_keyword(Keyword::RESTRICT);
    }
    end(&mut p)?;
    Ok(Some(DropAggregate { if_exists, names, cascade }))
}

/// `ALTER AGGREGATE …` (`None`: another statement).
pub(crate) fn alter_aggregate(sql: &str) -> Result<Option<AlterAggregate>> {
    if !starts_with_word(sql, "alter") || !contains_word(sql, "aggregate") {
        return Ok(None);
    }
    let Some(mut p) = parser_for(sql) else { return Ok(None) };
    if !p.parse_keywords(&[Keyword::ALTER, Keyword::AGGREGATE]) {
        return Ok(None);
    }
    let name = p.parse_object_name(false).map_err(|_| unexpected(&p, "an aggregate's name"))?;
    let args = signature(&mut p)?;
    let action = if p.parse_keywords(&[Keyword::RENAME, Keyword::TO]) {
        AlterAggregateAction::RenameTo(p.parse_identifier().map_err(|_| unexpected(&p, "a name"))?)
    } else if p.parse_keywords(&[Keyword::OWNER, Keyword::TO]) {
        p.parse_identifier().map_err(|_| unexpected(&p, "a role"))?;
        AlterAggregateAction::OwnerTo
    } else if p.parse_keywords(&[Keyword::SET, Keyword::SCHEMA]) {
        AlterAggregateAction::SetSchema(
            p.parse_identifier().map_err(|_| unexpected(&p, "a schema"))?,
        )
    } else {
        return Err(unexpected(&p, "RENAME TO, OWNER TO or SET SCHEMA"));
    };
    end(&mut p)?;
    Ok(Some(AlterAggregate { name, args, action }))
}

/// `COMMENT ON {FUNCTION | PROCEDURE | AGGREGATE} …` (`None`: another statement).
pub(crate) fn comment_on_routine(sql: &str) -> Result<Option<CommentOnRoutine>> {
    if !starts_with_word(sql, "comment") {
        return Ok(None);
    }
    let Some(mut p) = parser_for(sql) else { return Ok(None) };
    if !p.parse_keywords(&[Keyword::COMMENT, Keyword::ON]) {
        return Ok(None);
    }
    let kind = if p.parse_keyword(Keyword::FUNCTION) {
        "FUNCTION"
    } else if p.parse_keyword(Keyword::PROCEDURE) {
        "PROCEDURE"
    } else if p.parse_keyword(Keyword::AGGREGATE) {
        "AGGREGATE"
    } else {
        return Ok(None);
    };
    let name = p.parse_object_name(false).map_err(|_| unexpected(&p, "a name"))?;
    let args = if p.peek_token().token == Token::LParen {
        Some(routine_signature(&mut p, kind == "AGGREGATE")?)
    } else {
        None
    };
    if !p.parse_keyword(Keyword::IS) {
        return Err(unexpected(&p, "IS"));
    }
    let comment = match p.next_token().token {
        Token::SingleQuotedString(s) | Token::EscapedStringLiteral(s) => Some(s),
        Token::Word(w) if w.keyword == Keyword::NULL => None,
        _ => {
            p.prev_token();
            return Err(unexpected(&p, "a string or NULL"));
        }
    };
    end(&mut p)?;
    Ok(Some(CommentOnRoutine { kind, name, args, comment }))
}

fn end(p: &mut Parser) -> Result<()> {
    let _ = p.consume_token(&Token::SemiColon);
    if p.peek_token().token == Token::EOF {
        Ok(())
    } else {
        Err(unexpected(p, "the end of the statement"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(sql: &str) -> CreateAggregate {
        create_aggregate(sql).unwrap().unwrap()
    }

    #[test]
    fn reads_both_forms_of_create() {
        let c = create("CREATE AGGREGATE public.group_concat(text) (SFUNC = public._group_concat, STYPE = text)");
        assert_eq!(c.name.to_string(), "public.group_concat");
        assert_eq!(c.args.len(), 1);
        assert_eq!(c.options[0].0, "sfunc");
        assert_eq!(c.options[0].1.as_ref().unwrap().text(), "public._group_concat");
        let c = create("create or replace aggregate s(x double precision, integer) (sfunc = f, stype = numeric(10,2), initcond = '0', finalfunc_extra, sspace = 16, sortop = >)");
        assert!(c.or_replace);
        assert_eq!(c.args.len(), 2);
        assert_eq!(c.args[0].to_string(), "DOUBLE PRECISION");
        assert_eq!(c.options[2], ("initcond".into(), Some(AggregateValue::Literal("0".into()))));
        assert_eq!(c.options[3], ("finalfunc_extra".into(), None));
        assert_eq!(c.options[5].1.as_ref().unwrap().text(), ">");
        let c = create("CREATE AGGREGATE n(*) (sfunc = f, stype = int8, initcond = 0)");
        assert!(c.args.is_empty());
        let c = create("CREATE AGGREGATE old (basetype = int4, sfunc = f, stype = int4)");
        assert_eq!(c.args.len(), 1);
        assert!(c.options.iter().all(|(k, _)| k != "basetype"));
        let c = create("CREATE AGGREGATE old (basetype = 'any', sfunc = f, stype = int4)");
        assert!(c.args.is_empty());
    }

    #[test]
    fn refuses_what_it_does_not_read() {
        assert!(create_aggregate(
            "CREATE AGGREGATE p(float8 ORDER BY float8) (sfunc = f, stype = int)"
        )
        .is_err());
        assert!(create_aggregate("CREATE AGGREGATE p(int) (sfunc = f, sfunc = g)").is_err());
        assert!(create_aggregate("CREATE AGGREGATE p(int) (sfunc = f").is_err());
        assert!(create_aggregate("CREATE TABLE aggregate (a int)").unwrap().is_none());
    }

    #[test]
    fn reads_drop_and_alter() {
        let d = drop_aggregate("DROP AGGREGATE IF EXISTS a(*), b(integer, text) CASCADE")
            .unwrap()
            .unwrap();
        assert!(d.if_exists && d.cascade);
        assert_eq!(d.names.len(), 2);
        assert!(d.names[0].1.is_empty());
        assert!(drop_aggregate("DROP AGGREGATE a").is_err());
        let c =
            comment_on_routine("COMMENT ON FUNCTION f(a int, OUT b text, INOUT c bigint) IS 'x'")
                .unwrap()
                .unwrap();
        assert_eq!(
            (c.kind, c.args.map(|a| a.len()), c.comment),
            ("FUNCTION", Some(2), Some("x".into()))
        );
        let c = comment_on_routine("COMMENT ON AGGREGATE a(*) IS NULL").unwrap().unwrap();
        assert_eq!((c.args, c.comment), (Some(vec![]), None));
        assert!(comment_on_routine("COMMENT ON TABLE t IS 'x'").unwrap().is_none());
        let a = alter_aggregate("ALTER AGGREGATE a(int) RENAME TO b").unwrap().unwrap();
        assert_eq!(a.action, AlterAggregateAction::RenameTo(ast::Ident::new("b")));
    }
}
