//! `CREATE DOMAIN` and `ALTER DOMAIN` as PostgreSQL writes them.
//!
//! sqlparser reads `CREATE DOMAIN` without `NOT NULL` / `NULL` constraints and with its
//! DEFAULT only before them, and has no `ALTER DOMAIN`; both are read here with its
//! token-level parser.

use sqlparser::ast;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use super::sequence::{contains_word, parser_for, starts_with_word, unexpected};
use crate::error::{Result, SqlError};

/// A constraint of a domain as written: `[CONSTRAINT name] {NOT NULL | NULL | CHECK (e)}`.
#[derive(Debug, Clone, PartialEq)]
pub enum DomainConstraint {
    /// `NOT NULL` (true) or `NULL` (false).
    NotNull(Option<ast::Ident>, bool),
    /// `CHECK (expr)`, and whether `NOT VALID` follows (ALTER DOMAIN ADD only).
    Check(Option<ast::Ident>, Box<ast::Expr>, bool),
}

/// `CREATE DOMAIN name [AS] type [COLLATE c] [DEFAULT e] [constraint …]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateDomain {
    pub name: ast::ObjectName,
    pub data_type: ast::DataType,
    pub collation: Option<ast::ObjectName>,
    pub default: Option<ast::Expr>,
    pub constraints: Vec<DomainConstraint>,
}

/// `ALTER DOMAIN name action`.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterDomain {
    pub name: ast::ObjectName,
    pub action: AlterDomainAction,
}

/// What an `ALTER DOMAIN` does.
#[derive(Debug, Clone, PartialEq)]
pub enum AlterDomainAction {
    /// `SET DEFAULT e` (`Some`) or `DROP DEFAULT`.
    Default(Option<ast::Expr>),
    /// `SET NOT NULL` (true) or `DROP NOT NULL`.
    NotNull(bool),
    /// `ADD constraint [NOT VALID]`.
    Add(DomainConstraint),
    /// `DROP CONSTRAINT [IF EXISTS] name [RESTRICT | CASCADE]`: the name and IF EXISTS.
    DropConstraint(ast::Ident, bool),
    /// `RENAME CONSTRAINT a TO b`.
    RenameConstraint(ast::Ident, ast::Ident),
    /// `VALIDATE CONSTRAINT name`.
    ValidateConstraint(ast::Ident),
    /// `OWNER TO role`.
    OwnerTo,
    /// `RENAME TO name`.
    RenameTo(ast::Ident),
    /// `SET SCHEMA schema`.
    SetSchema(ast::Ident),
}

/// Reads one constraint, if one follows.
fn constraint(p: &mut Parser, alter: bool) -> Result<Option<DomainConstraint>> {
    let name = if p.parse_keyword(Keyword::CONSTRAINT) {
        Some(p.parse_identifier().map_err(|_| unexpected(p, "a constraint name"))?)
    } else {
        None
    };
    let c = if p.parse_keywords(&[Keyword::NOT, Keyword::NULL]) {
        DomainConstraint::NotNull(name, true)
    } else if p.parse_keyword(Keyword::NULL) {
        DomainConstraint::NotNull(name, false)
    } else if p.parse_keyword(Keyword::CHECK) {
        if !p.consume_token(&Token::LParen) {
            return Err(unexpected(p, "("));
        }
        let e = p.parse_expr().map_err(|e| SqlError::syntax(e.to_string()))?;
        if !p.consume_token(&Token::RParen) {
            return Err(unexpected(p, ")"));
        }
        let not_valid = alter && p.parse_keywords(&[Keyword::NOT, Keyword::VALID]);
        DomainConstraint::Check(name, Box::new(e), not_valid)
    } else if name.is_some() {
        return Err(unexpected(p, "NOT NULL, NULL or CHECK"));
    } else {
        return Ok(None);
    };
    Ok(Some(c))
}

/// The end of the statement.
fn end(p: &mut Parser) -> Result<()> {
    let _ = p.consume_token(&Token::SemiColon);
    if p.peek_token().token == Token::EOF {
        Ok(())
    } else {
        Err(unexpected(p, "the end of the statement"))
    }
}

/// `CREATE DOMAIN …` (`None`: another statement).
pub(crate) fn create_domain(sql: &str) -> Result<Option<CreateDomain>> {
    if !starts_with_word(sql, "create") || !contains_word(sql, "domain") {
        return Ok(None);
    }
    let Some(mut p) = parser_for(sql) else { return Ok(None) };
    if !p.parse_keywords(&[Keyword::CREATE, Keyword::DOMAIN]) {
        return Ok(None);
    }
    let name = p.parse_object_name(false).map_err(|_| unexpected(&p, "a domain name"))?;
    let _ = p.parse_keyword(Keyword::AS);
    let data_type = p.parse_data_type().map_err(|_| unexpected(&p, "a data type"))?;
    let mut d =
        CreateDomain { name, data_type, collation: None, default: None, constraints: vec![] };
    loop {
        if p.parse_keyword(Keyword::COLLATE) {
            d.collation =
                Some(p.parse_object_name(false).map_err(|_| unexpected(&p, "a collation"))?);
        } else if p.parse_keyword(Keyword::DEFAULT) {
            if d.default.is_some() {
                return Err(SqlError::syntax("multiple default expressions"));
            }
            d.default = Some(default_expr(&mut p)?);
        } else if let Some(c) = constraint(&mut p, false)? {
            d.constraints.push(c);
        } else {
            break;
        }
    }
    end(&mut p)?;
    Ok(Some(d))
}

/// A DEFAULT expression, which ends before a `NOT NULL`, `NULL`, `CHECK` or `CONSTRAINT`
/// that follows it (sqlparser would read `0 NOT NULL` as one expression).
fn default_expr(p: &mut Parser) -> Result<ast::Expr> {
    // The expression's tokens: up to the first constraint keyword outside parentheses.
    let mut depth = 0i32;
    let mut n = 0;
    loop {
        let t = p.peek_nth_token(n).token;
        match &t {
            Token::EOF | Token::SemiColon => break,
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Word(w) if depth == 0 && w.quote_style.is_none() => {
                let follows_not_null = w.keyword == Keyword::NOT
                    && matches!(p.peek_nth_token(n + 1).token, Token::Word(ref x) if x.keyword == Keyword::NULL);
                if follows_not_null
                    || (n > 0 && matches!(w.keyword, Keyword::NULL | Keyword::CHECK))
                    || matches!(w.keyword, Keyword::CONSTRAINT | Keyword::COLLATE)
                {
                    break;
                }
            }
            _ => {}
        }
        n += 1;
    }
    let mut text = String::new();
    for _ in 0..n {
        text.push_str(&p.next_token().token.to_string());
        text.push(' ');
    }
    super::parse_expr(&text)
}

/// `ALTER DOMAIN …` (`None`: another statement).
pub(crate) fn alter_domain(sql: &str) -> Result<Option<AlterDomain>> {
    if !starts_with_word(sql, "alter") || !contains_word(sql, "domain") {
        return Ok(None);
    }
    let Some(mut p) = parser_for(sql) else { return Ok(None) };
    if !p.parse_keywords(&[Keyword::ALTER, Keyword::DOMAIN]) {
        return Ok(None);
    }
    let name = p.parse_object_name(false).map_err(|_| unexpected(&p, "a domain name"))?;
    let ident = |p: &mut Parser, what: &str| p.parse_identifier().map_err(|_| unexpected(p, what));
    let action = if p.parse_keywords(&[Keyword::SET, Keyword::DEFAULT]) {
        AlterDomainAction::Default(Some(
            p.parse_expr().map_err(|e| SqlError::syntax(e.to_string()))?,
        ))
    } else if p.parse_keywords(&[Keyword::DROP, Keyword::DEFAULT]) {
        AlterDomainAction::Default(None)
    } else if p.parse_keywords(&[Keyword::SET, Keyword::NOT, Keyword::NULL]) {
        AlterDomainAction::NotNull(true)
    } else if p.parse_keywords(&[Keyword::DROP, Keyword::NOT, Keyword::NULL]) {
        AlterDomainAction::NotNull(false)
    } else if p.parse_keyword(Keyword::ADD) {
        match constraint(&mut p, true)? {
            Some(c) => AlterDomainAction::Add(c),
            None => return Err(unexpected(&p, "CONSTRAINT, NOT NULL or CHECK")),
        }
    } else if p.parse_keywords(&[Keyword::DROP, Keyword::CONSTRAINT]) {
        let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        let n = ident(&mut p, "a constraint name")?;
        let _ = p.parse_one_of_keywords(&[Keyword::RESTRICT, Keyword::CASCADE]);
        AlterDomainAction::DropConstraint(n, if_exists)
    } else if p.parse_keywords(&[Keyword::RENAME, Keyword::CONSTRAINT]) {
        let from = ident(&mut p, "a constraint name")?;
        if !p.parse_keyword(Keyword::TO) {
            return Err(unexpected(&p, "TO"));
        }
        AlterDomainAction::RenameConstraint(from, ident(&mut p, "a new name")?)
    } else if p.parse_keywords(&[Keyword::VALIDATE, Keyword::CONSTRAINT]) {
        AlterDomainAction::ValidateConstraint(ident(&mut p, "a constraint name")?)
    } else if p.parse_keywords(&[Keyword::OWNER, Keyword::TO]) {
        ident(&mut p, "a role name")?;
        AlterDomainAction::OwnerTo
    } else if p.parse_keywords(&[Keyword::RENAME, Keyword::TO]) {
        AlterDomainAction::RenameTo(ident(&mut p, "a new name")?)
    } else if p.parse_keywords(&[Keyword::SET, Keyword::SCHEMA]) {
        AlterDomainAction::SetSchema(ident(&mut p, "a schema name")?)
    } else {
        return Err(unexpected(
            &p,
            "SET DEFAULT, DROP DEFAULT, SET NOT NULL, DROP NOT NULL, ADD, DROP CONSTRAINT, \
             RENAME CONSTRAINT, VALIDATE CONSTRAINT, OWNER TO, RENAME TO or SET SCHEMA",
        ));
    };
    end(&mut p)?;
    Ok(Some(AlterDomain { name, action }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_domain_reads_postgres_forms() {
        let d = create_domain(
            "CREATE DOMAIN public.year AS integer\n\tCONSTRAINT year_check CHECK (((VALUE >= 1901) AND (VALUE <= 2155)));",
        )
        .unwrap()
        .unwrap();
        assert_eq!(d.name.to_string(), "public.year");
        assert!(
            matches!(&d.constraints[..], [DomainConstraint::Check(Some(n), _, false)] if n.value == "year_check")
        );
        let d = create_domain("create domain d int default 0 not null check (value > -1) null")
            .unwrap()
            .unwrap();
        assert_eq!(d.default.unwrap().to_string(), "0");
        assert_eq!(d.constraints.len(), 3);
        assert!(matches!(d.constraints[0], DomainConstraint::NotNull(None, true)));
        assert!(matches!(d.constraints[2], DomainConstraint::NotNull(None, false)));
        let d =
            create_domain("CREATE DOMAIN d AS text NOT NULL DEFAULT 'a' || 'b'").unwrap().unwrap();
        assert_eq!(d.default.unwrap().to_string(), "'a' || 'b'");
        assert_eq!(
            create_domain("CREATE DOMAIN d AS int CHECK VALUE > 0").unwrap_err().code,
            "42601"
        );
        assert_eq!(create_domain("CREATE DOMAIN d AS int x").unwrap_err().code, "42601");
        assert_eq!(create_domain("CREATE TABLE domain (a int)").unwrap(), None);
    }

    #[test]
    fn alter_domain_reads_its_actions() {
        let a = |sql: &str| alter_domain(sql).unwrap().unwrap().action;
        assert_eq!(a("ALTER DOMAIN d DROP DEFAULT"), AlterDomainAction::Default(None));
        assert_eq!(a("ALTER DOMAIN d SET NOT NULL"), AlterDomainAction::NotNull(true));
        assert!(matches!(
            a("ALTER DOMAIN d ADD CONSTRAINT c CHECK (VALUE > 0) NOT VALID"),
            AlterDomainAction::Add(DomainConstraint::Check(Some(_), _, true))
        ));
        assert!(matches!(
            a("ALTER DOMAIN d DROP CONSTRAINT IF EXISTS c CASCADE"),
            AlterDomainAction::DropConstraint(_, true)
        ));
        assert_eq!(a("ALTER DOMAIN public.d OWNER TO postgres;"), AlterDomainAction::OwnerTo);
        assert_eq!(alter_domain("ALTER DOMAIN d FROB").unwrap_err().code, "42601");
    }
}

/// `CREATE MATERIALIZED VIEW [IF NOT EXISTS] name [(columns)] AS query [WITH [NO] DATA]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateMatView {
    pub if_not_exists: bool,
    pub name: ast::ObjectName,
    pub columns: Vec<ast::Ident>,
    pub query: Box<ast::Query>,
    pub with_data: bool,
}

/// `REFRESH MATERIALIZED VIEW [CONCURRENTLY] name [WITH [NO] DATA]`.
#[derive(Debug, Clone, PartialEq)]
pub struct RefreshMatView {
    pub concurrently: bool,
    pub name: ast::ObjectName,
    pub with_data: bool,
}

/// Reads a trailing `WITH [NO] DATA`: whether it says DATA (true when absent) and the
/// statement's text without it.
fn with_data_suffix(sql: &str) -> (bool, String) {
    // `s` without a last word `w` (any case) that follows whitespace.
    fn without<'a>(s: &'a str, w: &str) -> Option<&'a str> {
        let t = s.trim_end();
        let at = t.len().checked_sub(w.len())?;
        let rest = &t[..t.is_char_boundary(at).then_some(at)?];
        (t[at..].eq_ignore_ascii_case(w) && rest.ends_with(char::is_whitespace)).then_some(rest)
    }
    let trimmed = sql.trim_end().trim_end_matches(';');
    if let Some(rest) = without(trimmed, "data") {
        if let Some(with) = without(rest, "no").and_then(|r| without(r, "with")) {
            return (false, with.to_string());
        }
        if let Some(with) = without(rest, "with") {
            return (true, with.to_string());
        }
    }
    (true, trimmed.to_string())
}

/// `CREATE MATERIALIZED VIEW …` (`None`: another statement).
pub(crate) fn create_matview(sql: &str) -> Result<Option<CreateMatView>> {
    if !starts_with_word(sql, "create") || !contains_word(sql, "materialized") {
        return Ok(None);
    }
    let Some(mut p) = parser_for(sql) else { return Ok(None) };
    if !p.parse_keywords(&[Keyword::CREATE, Keyword::MATERIALIZED, Keyword::VIEW]) {
        return Ok(None);
    }
    let (with_data, text) = with_data_suffix(sql);
    match super::parse(&text)?.pop() {
        Some(ast::Statement::CreateView(cv)) if cv.materialized => {
            if cv.or_replace || cv.temporary {
                return Err(SqlError::syntax(
                    "CREATE MATERIALIZED VIEW takes no OR REPLACE or TEMPORARY",
                ));
            }
            Ok(Some(CreateMatView {
                if_not_exists: cv.if_not_exists,
                name: cv.name,
                columns: cv.columns.into_iter().map(|c| c.name).collect(),
                query: cv.query,
                with_data,
            }))
        }
        _ => Err(SqlError::syntax("syntax error in CREATE MATERIALIZED VIEW")),
    }
}

/// `REFRESH MATERIALIZED VIEW …` (`None`: another statement).
pub(crate) fn refresh_matview(sql: &str) -> Result<Option<RefreshMatView>> {
    if !starts_with_word(sql, "refresh") {
        return Ok(None);
    }
    let (with_data, text) = with_data_suffix(sql);
    let Some(mut p) = parser_for(&text) else { return Ok(None) };
    let refresh = matches!(p.next_token().token, Token::Word(ref w) if w.value.eq_ignore_ascii_case("refresh"));
    if !refresh || !p.parse_keywords(&[Keyword::MATERIALIZED, Keyword::VIEW]) {
        return Err(unexpected(&p, "MATERIALIZED VIEW"));
    }
    let concurrently = p.parse_keyword(Keyword::CONCURRENTLY);
    let name =
        p.parse_object_name(false).map_err(|_| unexpected(&p, "a materialized view name"))?;
    end(&mut p)?;
    Ok(Some(RefreshMatView { concurrently, name, with_data }))
}

#[cfg(test)]
mod matview_tests {
    use super::*;

    #[test]
    fn materialized_views_read_with_and_without_data() {
        let c =
            create_matview("CREATE MATERIALIZED VIEW public.m AS\n SELECT 1 AS a\n  WITH NO DATA;")
                .unwrap()
                .unwrap();
        assert!(!c.with_data);
        assert_eq!(c.query.to_string(), "SELECT 1 AS a");
        let c =
            create_matview("create materialized view if not exists m (x) as select 1 with data")
                .unwrap()
                .unwrap();
        assert!(c.with_data && c.if_not_exists);
        assert_eq!(c.columns.len(), 1);
        let c = create_matview("CREATE MATERIALIZED VIEW m AS SELECT 1").unwrap().unwrap();
        assert!(c.with_data);
        let r = refresh_matview("REFRESH MATERIALIZED VIEW CONCURRENTLY s.m WITH NO DATA;")
            .unwrap()
            .unwrap();
        assert!(r.concurrently && !r.with_data);
        assert_eq!(r.name.to_string(), "s.m");
        assert_eq!(refresh_matview("REFRESH VIEW m").unwrap_err().code, "42601");
        assert_eq!(create_matview("CREATE VIEW m AS SELECT 1").unwrap(), None);
    }
}
