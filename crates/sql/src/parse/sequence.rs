//! Sequence options as PostgreSQL reads them: in any order, each at most once.
//!
//! sqlparser reads `CREATE SEQUENCE` options and an identity column's `( … )` options only
//! in one fixed order, has no `RESTART`, `SEQUENCE NAME` or `ALTER SEQUENCE`, so a dump
//! (`CREATE SEQUENCE s AS integer START WITH 1 INCREMENT BY 1 …`) did not parse. Here the
//! options are read with sqlparser's own token-level parser, in any order: `CREATE
//! SEQUENCE` becomes sqlparser's statement, `ALTER SEQUENCE` a [`super::Utility`], and an
//! identity column's option list is written back in the order sqlparser reads.

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{Result, SqlError};

/// Options of `CREATE SEQUENCE`, `ALTER SEQUENCE` or an identity column, as written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SequenceSpec {
    /// `AS type`
    pub data_type: Option<ast::DataType>,
    /// INCREMENT, MINVALUE, MAXVALUE, START, CACHE and CYCLE.
    pub options: Vec<ast::SequenceOptions>,
    /// `RESTART [[WITH] n]` (ALTER SEQUENCE only): `Some(None)` restarts at START.
    pub restart: Option<Option<ast::Expr>>,
    /// `OWNED BY table.column | NONE`
    pub owned_by: Option<ast::ObjectName>,
    /// `SEQUENCE NAME name` (identity columns only).
    pub sequence_name: Option<ast::ObjectName>,
}

/// `ALTER SEQUENCE [IF EXISTS] name …`.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterSequence {
    pub if_exists: bool,
    pub name: ast::ObjectName,
    pub action: AlterSequenceAction,
}

/// What an `ALTER SEQUENCE` does.
#[derive(Debug, Clone, PartialEq)]
pub enum AlterSequenceAction {
    /// Options (at least one).
    Options(Box<SequenceSpec>),
    /// `OWNER TO role`: Kiln has one role, which owns everything.
    OwnerTo,
    /// `RENAME TO name`
    RenameTo(ast::ObjectName),
}

/// Where an option list is read: what it may hold.
#[derive(Clone, Copy, PartialEq)]
enum Context {
    Create,
    Alter,
    Identity,
}

/// Reads options until none follows; each at most once (42601 otherwise).
fn read_options(p: &mut Parser, context: Context) -> std::result::Result<SequenceSpec, String> {
    let mut spec = SequenceSpec::default();
    let mut seen: Vec<&str> = Vec::new();
    let mut once = |name: &'static str| {
        if seen.contains(&name) {
            Err("conflicting or redundant options".to_string())
        } else {
            seen.push(name);
            Ok(())
        }
    };
    let e = |err: ParserError| err.to_string();
    loop {
        if context != Context::Identity && p.parse_keyword(Keyword::AS) {
            once("as")?;
            spec.data_type = Some(p.parse_data_type().map_err(e)?);
        } else if p.parse_keyword(Keyword::INCREMENT) {
            once("increment")?;
            let by = p.parse_keyword(Keyword::BY);
            spec.options.push(ast::SequenceOptions::IncrementBy(p.parse_number().map_err(e)?, by));
        } else if p.parse_keyword(Keyword::MINVALUE) {
            once("minvalue")?;
            spec.options.push(ast::SequenceOptions::MinValue(Some(p.parse_number().map_err(e)?)));
        } else if p.parse_keyword(Keyword::MAXVALUE) {
            once("maxvalue")?;
            spec.options.push(ast::SequenceOptions::MaxValue(Some(p.parse_number().map_err(e)?)));
        } else if p.parse_keywords(&[Keyword::NO, Keyword::MINVALUE]) {
            once("minvalue")?;
            spec.options.push(ast::SequenceOptions::MinValue(None));
        } else if p.parse_keywords(&[Keyword::NO, Keyword::MAXVALUE]) {
            once("maxvalue")?;
            spec.options.push(ast::SequenceOptions::MaxValue(None));
        } else if p.parse_keywords(&[Keyword::NO, Keyword::CYCLE]) {
            once("cycle")?;
            spec.options.push(ast::SequenceOptions::Cycle(true));
        } else if p.parse_keyword(Keyword::CYCLE) {
            once("cycle")?;
            spec.options.push(ast::SequenceOptions::Cycle(false));
        } else if p.parse_keyword(Keyword::START) {
            once("start")?;
            let with = p.parse_keyword(Keyword::WITH);
            spec.options.push(ast::SequenceOptions::StartWith(p.parse_number().map_err(e)?, with));
        } else if p.parse_keyword(Keyword::CACHE) {
            once("cache")?;
            spec.options.push(ast::SequenceOptions::Cache(p.parse_number().map_err(e)?));
        } else if context == Context::Alter && p.parse_keyword(Keyword::RESTART) {
            once("restart")?;
            let with = p.parse_keyword(Keyword::WITH);
            let starts_number =
                matches!(p.peek_token().token, Token::Number(..) | Token::Minus | Token::Plus);
            spec.restart =
                Some(if with || starts_number { Some(p.parse_number().map_err(e)?) } else { None });
        } else if context != Context::Identity && p.parse_keywords(&[Keyword::OWNED, Keyword::BY]) {
            once("owned")?;
            spec.owned_by = Some(if p.parse_keyword(Keyword::NONE) {
                ast::ObjectName::from(vec![ast::Ident::new("none")])
            } else {
                p.parse_object_name(false).map_err(e)?
            });
        } else if context == Context::Identity
            && p.parse_keywords(&[Keyword::SEQUENCE, Keyword::NAME])
        {
            once("name")?;
            spec.sequence_name = Some(p.parse_object_name(false).map_err(e)?);
        } else {
            return Ok(spec);
        }
    }
}

/// A syntax error at the token the parser stopped on.
pub(super) fn unexpected(p: &Parser, what: &str) -> SqlError {
    let t = p.peek_token();
    if t.token == Token::EOF {
        SqlError::syntax("syntax error at end of input").detail(format!("Expected {what}."))
    } else {
        SqlError::syntax(format!("syntax error at or near \"{}\"", t.token))
            .detail(format!("Expected {what}."))
    }
}

/// A parser over `sql` positioned at its first token.
pub(super) fn parser_for(sql: &str) -> Option<Parser<'static>> {
    static DIALECT: PostgreSqlDialect = PostgreSqlDialect {};
    Parser::new(&DIALECT).try_with_sql(sql).ok()
}

/// `CREATE [TEMPORARY] SEQUENCE [IF NOT EXISTS] name [options]` as sqlparser's statement
/// (`None`: another statement).
pub(crate) fn create_sequence(sql: &str) -> Result<Option<ast::Statement>> {
    if !starts_with_word(sql, "create") || !contains_word(sql, "sequence") {
        return Ok(None);
    }
    let Some(mut p) = parser_for(sql) else { return Ok(None) };
    if !p.parse_keyword(Keyword::CREATE) {
        return Ok(None);
    }
    let temporary = p.parse_keyword(Keyword::TEMPORARY) || p.parse_keyword(Keyword::TEMP);
    if !p.parse_keyword(Keyword::SEQUENCE) {
        return Ok(None);
    }
    let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = p.parse_object_name(false).map_err(|_| unexpected(&p, "a sequence name"))?;
    let spec = read_options(&mut p, Context::Create).map_err(SqlError::syntax)?;
    end(&mut p)?;
    Ok(Some(ast::Statement::CreateSequence {
        temporary,
        if_not_exists,
        name,
        data_type: spec.data_type,
        sequence_options: spec.options,
        owned_by: spec.owned_by,
    }))
}

/// The end of the statement (an optional semicolon).
fn end(p: &mut Parser) -> Result<()> {
    let _ = p.consume_token(&Token::SemiColon);
    if p.peek_token().token == Token::EOF {
        Ok(())
    } else {
        Err(unexpected(p, "another sequence option or the end of the statement"))
    }
}

/// `ALTER TYPE name OWNER TO role` or `ALTER TYPE name SET SCHEMA schema` — what pg_dump
/// writes after each type, and sqlparser does not read: the type's name and the schema
/// (`None` for OWNER TO). `None`: another statement.
pub(crate) fn alter_type_owner(sql: &str) -> Result<Option<(ast::ObjectName, Option<ast::Ident>)>> {
    if !starts_with_word(sql, "alter") || !contains_word(sql, "type") {
        return Ok(None);
    }
    let Some(mut p) = parser_for(sql) else { return Ok(None) };
    if !p.parse_keywords(&[Keyword::ALTER, Keyword::TYPE]) {
        return Ok(None);
    }
    let Ok(name) = p.parse_object_name(false) else { return Ok(None) };
    let schema = if p.parse_keywords(&[Keyword::OWNER, Keyword::TO]) {
        p.parse_identifier().map_err(|_| unexpected(&p, "a role name"))?;
        None
    } else if p.parse_keywords(&[Keyword::SET, Keyword::SCHEMA]) {
        Some(p.parse_identifier().map_err(|_| unexpected(&p, "a schema name"))?)
    } else {
        return Ok(None);
    };
    end(&mut p)?;
    Ok(Some((name, schema)))
}

/// `ALTER SEQUENCE [IF EXISTS] name {options | OWNER TO role | RENAME TO name}` (`None`:
/// another statement).
pub(crate) fn alter_sequence(sql: &str) -> Result<Option<AlterSequence>> {
    if !starts_with_word(sql, "alter") || !contains_word(sql, "sequence") {
        return Ok(None);
    }
    let Some(mut p) = parser_for(sql) else { return Ok(None) };
    if !p.parse_keywords(&[Keyword::ALTER, Keyword::SEQUENCE]) {
        return Ok(None);
    }
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = p.parse_object_name(false).map_err(|_| unexpected(&p, "a sequence name"))?;
    let action = if p.parse_keywords(&[Keyword::OWNER, Keyword::TO]) {
        p.parse_identifier().map_err(|_| unexpected(&p, "a role name"))?;
        AlterSequenceAction::OwnerTo
    } else if p.parse_keywords(&[Keyword::RENAME, Keyword::TO]) {
        AlterSequenceAction::RenameTo(
            p.parse_object_name(false).map_err(|_| unexpected(&p, "a new name"))?,
        )
    } else {
        let spec = read_options(&mut p, Context::Alter).map_err(SqlError::syntax)?;
        if spec == SequenceSpec::default() {
            return Err(unexpected(&p, "a sequence option, OWNER TO or RENAME TO"));
        }
        AlterSequenceAction::Options(Box::new(spec))
    };
    end(&mut p)?;
    Ok(Some(AlterSequence { if_exists, name, action }))
}

/// `ALTER VIEW [IF EXISTS] name …`, which sqlparser reads only in other dialects' forms.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterView {
    pub if_exists: bool,
    pub name: ast::ObjectName,
    pub action: AlterViewAction,
}

/// What an ALTER VIEW does.
#[derive(Debug, Clone, PartialEq)]
pub enum AlterViewAction {
    /// `RENAME TO new`
    RenameTo(ast::ObjectName),
    /// `RENAME [COLUMN] old TO new`
    RenameColumn(ast::Ident, ast::Ident),
    /// `OWNER TO role`
    OwnerTo,
}

/// `ALTER VIEW [IF EXISTS] name {RENAME TO new | RENAME [COLUMN] a TO b | OWNER TO role}`
/// (`None`: another statement); its other forms are refused (0A000).
pub(crate) fn alter_view(sql: &str) -> Result<Option<AlterView>> {
    if !starts_with_word(sql, "alter") || !contains_word(sql, "view") {
        return Ok(None);
    }
    let Some(mut p) = parser_for(sql) else { return Ok(None) };
    if !p.parse_keywords(&[Keyword::ALTER, Keyword::VIEW]) {
        return Ok(None);
    }
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = p.parse_object_name(false).map_err(|_| unexpected(&p, "a view name"))?;
    let action = if p.parse_keywords(&[Keyword::OWNER, Keyword::TO]) {
        p.parse_identifier().map_err(|_| unexpected(&p, "a role name"))?;
        AlterViewAction::OwnerTo
    } else if p.parse_keywords(&[Keyword::RENAME, Keyword::TO]) {
        AlterViewAction::RenameTo(
            p.parse_object_name(false).map_err(|_| unexpected(&p, "a new name"))?,
        )
    } else if p.parse_keyword(Keyword::RENAME) {
        let _ = p.parse_keyword(Keyword::COLUMN);
        let old = p.parse_identifier().map_err(|_| unexpected(&p, "a column name"))?;
        if !p.parse_keyword(Keyword::TO) {
            return Err(unexpected(&p, "TO"));
        }
        let new = p.parse_identifier().map_err(|_| unexpected(&p, "a new column name"))?;
        AlterViewAction::RenameColumn(old, new)
    } else if p.parse_keyword(Keyword::AS) {
        return Err(unexpected(&p, "RENAME, OWNER TO or ALTER COLUMN"));
    } else {
        return Err(SqlError::unsupported(
            "ALTER VIEW other than RENAME TO, RENAME COLUMN and OWNER TO (views in Kiln are \
             read-only and have no defaults, options or schema moves)",
        ));
    };
    end(&mut p)?;
    Ok(Some(AlterView { if_exists, name, action }))
}

/// `ALTER TABLE [IF EXISTS] [ONLY] t ALTER [COLUMN] c` and an identity action, which
/// sqlparser does not read.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterIdentity {
    pub if_exists: bool,
    pub table: ast::ObjectName,
    pub column: ast::Ident,
    pub action: IdentityAction,
}

/// What an identity ALTER does.
#[derive(Debug, Clone, PartialEq)]
pub enum IdentityAction {
    /// `DROP IDENTITY [IF EXISTS]`: the column keeps its values, its sequence goes.
    Drop { if_exists: bool },
    /// `DROP EXPRESSION [IF EXISTS]`: a generated column becomes an ordinary one, keeping
    /// its values.
    DropExpression { if_exists: bool },
    /// Any of `SET GENERATED {ALWAYS | BY DEFAULT}`, `SET option`, `RESTART [[WITH] n]`.
    Change { always: Option<bool>, spec: Box<SequenceSpec> },
}

/// `ALTER TABLE … ALTER [COLUMN] c {DROP IDENTITY [IF EXISTS] | SET GENERATED … | SET
/// sequence option | RESTART …}…` (`None`: another statement).
pub(crate) fn alter_identity(sql: &str) -> Result<Option<AlterIdentity>> {
    if !starts_with_word(sql, "alter")
        || !(contains_word(sql, "identity")
            || contains_word(sql, "expression")
            || contains_word(sql, "generated")
            || contains_word(sql, "restart")
            || contains_word(sql, "increment")
            || contains_word(sql, "start"))
    {
        return Ok(None);
    }
    let Some(mut p) = parser_for(sql) else { return Ok(None) };
    if !p.parse_keywords(&[Keyword::ALTER, Keyword::TABLE]) {
        return Ok(None);
    }
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let _ = p.parse_keyword(Keyword::ONLY);
    let Ok(table) = p.parse_object_name(false) else { return Ok(None) };
    if !p.parse_keyword(Keyword::ALTER) {
        return Ok(None);
    }
    let _ = p.parse_keyword(Keyword::COLUMN);
    let Ok(column) = p.parse_identifier() else { return Ok(None) };
    let action = if p.parse_keywords(&[Keyword::DROP, Keyword::IDENTITY]) {
        IdentityAction::Drop { if_exists: p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]) }
    } else if p
        .peek_tokens::<2>()
        .iter()
        .map(|t| t.to_string().to_ascii_lowercase())
        .eq(["drop", "expression"])
    {
        p.next_token();
        p.next_token();
        IdentityAction::DropExpression {
            if_exists: p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]),
        }
    } else {
        let (mut always, mut spec) = (None, SequenceSpec::default());
        loop {
            if p.parse_keywords(&[Keyword::SET, Keyword::GENERATED]) {
                always = Some(if p.parse_keyword(Keyword::ALWAYS) {
                    true
                } else if p.parse_keywords(&[Keyword::BY, Keyword::DEFAULT]) {
                    false
                } else {
                    return Err(unexpected(&p, "ALWAYS or BY DEFAULT"));
                });
                continue;
            }
            let set = p.parse_keyword(Keyword::SET);
            let restart =
                matches!(&p.peek_token().token, Token::Word(w) if w.keyword == Keyword::RESTART);
            if !set && !restart {
                break;
            }
            // One option: SET takes any sequence option but RESTART, which comes alone.
            let Some(mut one) = parser_for(&next_option_text(&mut p)) else { break };
            let mut got = read_options(&mut one, Context::Alter).map_err(SqlError::syntax)?;
            if got == SequenceSpec::default() {
                // SET DEFAULT, SET NOT NULL …: another ALTER COLUMN form, sqlparser's.
                return Ok(None);
            }
            match one.peek_token().token {
                Token::EOF => {}
                Token::Comma => {
                    return Err(SqlError::unsupported(
                        "an identity change together with other ALTER TABLE actions",
                    ))
                }
                _ => return Err(unexpected(&one, "an identity option")),
            }
            if (set && got.restart.is_some()) || got.owned_by.is_some() || got.data_type.is_some() {
                return Err(SqlError::syntax("syntax error in an identity option"));
            }
            if got.restart.is_some() {
                if spec.restart.is_some() {
                    return Err(SqlError::syntax("conflicting or redundant options"));
                }
                spec.restart = got.restart.take();
            }
            spec.options.append(&mut got.options);
        }
        if always.is_none() && spec == SequenceSpec::default() {
            return Ok(None);
        }
        IdentityAction::Change { always, spec: Box::new(spec) }
    };
    end(&mut p)?;
    Ok(Some(AlterIdentity { if_exists, table, column, action }))
}

/// The text of one sequence option at `p` (up to the next SET, RESTART or the end),
/// consumed.
fn next_option_text(p: &mut Parser) -> String {
    let mut text = String::new();
    let mut first = true;
    loop {
        let t = p.peek_token().token;
        let stop = match &t {
            Token::EOF | Token::SemiColon => true,
            Token::Word(w) => !first && matches!(w.keyword, Keyword::SET | Keyword::RESTART),
            _ => false,
        };
        if stop {
            return text;
        }
        text.push_str(&t.to_string());
        text.push(' ');
        p.next_token();
        first = false;
    }
}

/// The place of an option in the order sqlparser reads them.
fn rank(o: &ast::SequenceOptions) -> u8 {
    match o {
        ast::SequenceOptions::IncrementBy(..) => 0,
        ast::SequenceOptions::MinValue(_) => 1,
        ast::SequenceOptions::MaxValue(_) => 2,
        ast::SequenceOptions::StartWith(..) => 3,
        ast::SequenceOptions::Cache(_) => 4,
        ast::SequenceOptions::Cycle(_) => 5,
    }
}

/// `sql` with each identity column's `AS IDENTITY ( … )` option list written in the order
/// sqlparser reads, without `SEQUENCE NAME` (Kiln names an identity's sequence itself, as
/// PostgreSQL does by default: `<table>_<column>_seq`). `None`: nothing to rewrite.
pub(crate) fn identity_options_in_order(sql: &str) -> Result<Option<String>> {
    if !contains_word(sql, "identity") {
        return Ok(None);
    }
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else {
        return Ok(None);
    };
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let significant: Vec<usize> =
        (0..tokens.len()).filter(|&i| !matches!(tokens[i], Token::Whitespace(_))).collect();
    let mut out = String::with_capacity(sql.len());
    let mut copied = 0;
    let mut changed = false;
    for w in significant.windows(3) {
        let [a, b, open] = [w[0], w[1], w[2]];
        if !(word(&tokens[a], "as")
            && word(&tokens[b], "identity")
            && tokens[open] == Token::LParen)
        {
            continue;
        }
        let Some(close) = (open + 1..tokens.len()).find(|&i| tokens[i] == Token::RParen) else {
            continue;
        };
        let list: String = tokens[open + 1..close].iter().map(|t| t.to_string()).collect();
        let Some(mut p) = parser_for(&list) else { continue };
        let mut spec = read_options(&mut p, Context::Identity).map_err(SqlError::syntax)?;
        if p.peek_token().token != Token::EOF {
            return Err(unexpected(&p, "an identity option or \")\""));
        }
        spec.options.sort_by_key(rank);
        out.extend(tokens[copied..=open].iter().map(|t| t.to_string()));
        out.extend(spec.options.iter().map(|o| o.to_string()));
        copied = close;
        changed = true;
    }
    if !changed {
        return Ok(None);
    }
    out.extend(tokens[copied..].iter().map(|t| t.to_string()));
    Ok(Some(out))
}

/// Whether `sql` starts with `w` (ASCII, any case), after white space.
pub(super) fn starts_with_word(sql: &str, w: &str) -> bool {
    sql.trim_start().get(..w.len()).is_some_and(|x| x.eq_ignore_ascii_case(w))
}

/// Whether `sql` holds `w` (ASCII, any case) at all: a cheap test before tokenizing.
pub(super) fn contains_word(sql: &str, w: &str) -> bool {
    sql.as_bytes().windows(w.len()).any(|x| x.eq_ignore_ascii_case(w.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(sql: &str) -> Vec<String> {
        match create_sequence(sql).unwrap().unwrap() {
            ast::Statement::CreateSequence { sequence_options, .. } => {
                sequence_options.iter().map(|o| o.to_string().trim().to_string()).collect()
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn options_come_in_any_order() {
        assert_eq!(
            options("CREATE SEQUENCE s AS integer START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1"),
            ["START WITH 1", "INCREMENT BY 1", "NO MINVALUE", "NO MAXVALUE", "CACHE 1"]
        );
        assert_eq!(options("create sequence s cycle increment -2"), ["CYCLE", "INCREMENT -2"]);
        assert!(create_sequence("CREATE SEQUENCE s START 1 START 2").is_err());
        assert!(create_sequence("CREATE SEQUENCE s START 1 bogus").is_err());
        assert!(create_sequence("CREATE SEQUENCE s RESTART 1").is_err());
        assert_eq!(create_sequence("CREATE TABLE t (a int)").unwrap(), None);
    }

    #[test]
    fn alter_view_reads_its_forms() {
        let read = |sql: &str| alter_view(sql).map(|a| a.map(|a| (a.if_exists, a.action)));
        let id = |s: &str| ast::Ident::new(s);
        assert_eq!(
            read("ALTER VIEW IF EXISTS v RENAME COLUMN a TO b").unwrap(),
            Some((true, AlterViewAction::RenameColumn(id("a"), id("b"))))
        );
        assert_eq!(
            read("alter view v rename a to b;").unwrap(),
            Some((false, AlterViewAction::RenameColumn(id("a"), id("b"))))
        );
        assert!(matches!(
            read("ALTER VIEW s.v RENAME TO w").unwrap(),
            Some((false, AlterViewAction::RenameTo(_)))
        ));
        assert_eq!(
            read("ALTER VIEW v OWNER TO kiln").unwrap(),
            Some((false, AlterViewAction::OwnerTo))
        );
        assert_eq!(read("ALTER VIEW v ALTER COLUMN a SET DEFAULT 1").unwrap_err().code, "0A000");
        assert_eq!(read("ALTER VIEW v RENAME a b").unwrap_err().code, "42601");
        assert_eq!(read("ALTER VIEW v RENAME TO w x").unwrap_err().code, "42601");
        assert_eq!(read("ALTER TABLE v RENAME TO w").unwrap(), None);
    }

    #[test]
    fn alter_sequence_reads_restart_owner_and_rename() {
        let a = alter_sequence("ALTER SEQUENCE s RESTART").unwrap().unwrap();
        let AlterSequenceAction::Options(spec) = a.action else { unreachable!() };
        assert_eq!(spec.restart, Some(None));
        let a = alter_sequence("alter sequence if exists s restart with 5 increment by 2")
            .unwrap()
            .unwrap();
        assert!(a.if_exists);
        let AlterSequenceAction::Options(spec) = a.action else { unreachable!() };
        assert_eq!(spec.restart.unwrap().unwrap().to_string(), "5");
        assert_eq!(spec.options.len(), 1);
        let a = alter_sequence("ALTER SEQUENCE public.s OWNED BY public.t.id").unwrap().unwrap();
        let AlterSequenceAction::Options(spec) = a.action else { unreachable!() };
        assert_eq!(spec.owned_by.unwrap().to_string(), "public.t.id");
        assert!(alter_sequence("ALTER SEQUENCE s").is_err());
        assert!(alter_sequence("ALTER SEQUENCE s OWNER TO postgres").unwrap().is_some());
        assert_eq!(alter_sequence("ALTER TABLE s OWNER TO postgres").unwrap(), None);
    }

    #[test]
    fn identity_alters_are_read() {
        let a = alter_identity("ALTER TABLE ONLY t ALTER COLUMN id DROP IDENTITY IF EXISTS")
            .unwrap()
            .unwrap();
        assert_eq!((a.table.to_string(), a.column.value.as_str()), ("t".into(), "id"));
        assert_eq!(a.action, IdentityAction::Drop { if_exists: true });
        let a = alter_identity(
            "alter table t alter id set generated by default set increment by 3 restart with 9",
        )
        .unwrap()
        .unwrap();
        let IdentityAction::Change { always, spec } = a.action else { unreachable!() };
        assert_eq!(always, Some(false));
        assert_eq!(spec.options.len(), 1);
        assert_eq!(spec.restart.unwrap().unwrap().to_string(), "9");
        let a = alter_identity("ALTER TABLE t ALTER COLUMN id RESTART").unwrap().unwrap();
        let IdentityAction::Change { always: None, spec } = a.action else { unreachable!() };
        assert_eq!(spec.restart, Some(None));
        // Other ALTER COLUMN forms are sqlparser's.
        assert_eq!(alter_identity("ALTER TABLE t ALTER COLUMN id SET NOT NULL").unwrap(), None);
        assert_eq!(alter_identity("ALTER TABLE t ALTER COLUMN start SET DEFAULT 1").unwrap(), None);
        assert!(alter_identity("ALTER TABLE t ALTER COLUMN id SET GENERATED").is_err());
        assert!(alter_identity("ALTER TABLE t ALTER COLUMN id SET RESTART").is_err());
        let both = "ALTER TABLE t ALTER COLUMN id SET INCREMENT BY 2, ADD COLUMN x int";
        assert_eq!(
            alter_identity(both).unwrap_err().code,
            crate::error::code::FEATURE_NOT_SUPPORTED
        );
    }

    #[test]
    fn identity_options_are_put_in_order() {
        let sql = "ALTER TABLE t ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (\n    SEQUENCE NAME public.t_id_seq\n    START WITH 1000\n    INCREMENT BY 1\n    NO MINVALUE\n    CACHE 1\n)";
        let out = identity_options_in_order(sql).unwrap().unwrap();
        assert_eq!(
            out,
            "ALTER TABLE t ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY ( INCREMENT BY 1 NO MINVALUE START WITH 1000 CACHE 1)"
        );
        assert_eq!(identity_options_in_order("SELECT 1").unwrap(), None);
        assert!(identity_options_in_order(
            "CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY (START 1 RESTART 2))"
        )
        .is_err());
    }
}
