//! `CREATE TRIGGER`, read from its tokens: sqlparser does not take a trigger function's
//! arguments (`EXECUTE FUNCTION f('a', 2)`) as PostgreSQL writes them.
//!
//! ```sql
//! CREATE [OR REPLACE] TRIGGER name {BEFORE | AFTER} event [OR event …] ON table
//!     [FOR [EACH] {ROW | STATEMENT}] [WHEN (condition)]
//!     EXECUTE {FUNCTION | PROCEDURE} function([argument, …])
//! ```
//!
//! where an event is `INSERT`, `UPDATE [OF column, …]` or `DELETE`. Constraint triggers,
//! `INSTEAD OF`, `TRUNCATE`, `REFERENCING` (transition tables) and `FROM` are refused (0A000).

use sqlparser::ast::{Ident, ObjectName};
use sqlparser::tokenizer::Token;

use crate::error::{Result, SqlError};
use crate::parse::Tok;

/// A parsed `CREATE TRIGGER`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTrigger {
    /// `OR REPLACE`.
    pub or_replace: bool,
    /// Its name (lowercased unless quoted).
    pub name: String,
    /// BEFORE (true) or AFTER (false).
    pub before: bool,
    /// Fires on INSERT.
    pub insert: bool,
    /// Fires on UPDATE.
    pub update: bool,
    /// Fires on DELETE.
    pub delete: bool,
    /// `UPDATE OF` columns (empty: any UPDATE).
    pub update_of: Vec<String>,
    /// The table.
    pub table: ObjectName,
    /// FOR EACH ROW (true) or STATEMENT (false, the default).
    pub row: bool,
    /// The WHEN condition's text.
    pub when: Option<String>,
    /// The function.
    pub function: ObjectName,
    /// Its arguments, as text (`TG_ARGV`).
    pub args: Vec<String>,
}

fn is(t: Option<&Tok>, word: &str) -> bool {
    matches!(t.map(|t| &t.token), Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// Recognises `CREATE [OR REPLACE] [CONSTRAINT] TRIGGER …` (`None`: another statement).
pub fn create_trigger(sql: &str) -> Result<Option<CreateTrigger>> {
    let head = sql.trim_start();
    if !head.get(..6).is_some_and(|w| w.eq_ignore_ascii_case("create")) {
        return Ok(None);
    }
    let Ok(mut toks) = crate::parse::tokens_with_offsets(sql) else { return Ok(None) };
    while toks.last().is_some_and(|t| t.token == Token::SemiColon) {
        toks.pop();
    }
    let mut at = 1;
    let or_replace = is(toks.get(at), "or") && is(toks.get(at + 1), "replace");
    if or_replace {
        at += 2;
    }
    if is(toks.get(at), "constraint") && is(toks.get(at + 1), "trigger") {
        return Err(SqlError::unsupported("constraint triggers"));
    }
    if !is(toks.get(at), "trigger") {
        return Ok(None);
    }
    at += 1;
    let mut p = Parser { sql, toks, at };
    let name = p.ident()?;
    let before = if p.eat("before") {
        true
    } else if p.eat("after") {
        false
    } else if p.eat("instead") {
        return Err(SqlError::unsupported("INSTEAD OF triggers (Kiln's views are read-only)"));
    } else {
        return Err(p.error("BEFORE or AFTER"));
    };
    let mut t = CreateTrigger {
        or_replace,
        name,
        before,
        insert: false,
        update: false,
        delete: false,
        update_of: Vec::new(),
        table: ObjectName::from(Vec::<Ident>::new()),
        row: false,
        when: None,
        function: ObjectName::from(Vec::<Ident>::new()),
        args: Vec::new(),
    };
    loop {
        if p.eat("insert") {
            t.insert = true;
        } else if p.eat("delete") {
            t.delete = true;
        } else if p.eat("update") {
            t.update = true;
            if p.eat("of") {
                loop {
                    t.update_of.push(p.ident()?);
                    if !p.eat_token(&Token::Comma) {
                        break;
                    }
                }
            }
        } else if p.eat("truncate") {
            return Err(SqlError::unsupported("TRUNCATE triggers"));
        } else {
            return Err(p.error("INSERT, UPDATE or DELETE"));
        }
        if !p.eat("or") {
            break;
        }
    }
    if !p.eat("on") {
        return Err(p.error("ON"));
    }
    t.table = p.object_name()?;
    if p.eat("from") {
        return Err(SqlError::unsupported("FROM in CREATE TRIGGER (constraint triggers)"));
    }
    if p.eat("referencing") {
        return Err(SqlError::unsupported("REFERENCING (transition tables) in CREATE TRIGGER"));
    }
    if p.eat("not") || p.eat("deferrable") || p.eat("initially") {
        return Err(SqlError::unsupported("deferrable triggers (constraint triggers)"));
    }
    if p.eat("for") {
        p.eat("each");
        t.row = if p.eat("row") {
            true
        } else if p.eat("statement") {
            false
        } else {
            return Err(p.error("ROW or STATEMENT"));
        };
    }
    if p.eat("when") {
        if !p.eat_token(&Token::LParen) {
            return Err(p.error("( after WHEN"));
        }
        let start = p.at;
        let mut depth = 1;
        while depth > 0 {
            match p.toks.get(p.at).map(|t| &t.token) {
                Some(Token::LParen) => depth += 1,
                Some(Token::RParen) => depth -= 1,
                Some(_) => {}
                None => return Err(p.error(") to close WHEN (")),
            }
            p.at += 1;
        }
        let text = p.text(start, p.at - 1);
        if text.is_empty() {
            return Err(p.error("a condition in WHEN ( )"));
        }
        t.when = Some(text);
    }
    if !p.eat("execute") || !(p.eat("function") || p.eat("procedure")) {
        return Err(p.error("EXECUTE FUNCTION"));
    }
    t.function = p.object_name()?;
    if !p.eat_token(&Token::LParen) {
        return Err(p.error("( after the function's name"));
    }
    if !p.eat_token(&Token::RParen) {
        loop {
            let arg = match p.toks.get(p.at).map(|t| t.token.clone()) {
                Some(Token::SingleQuotedString(s)) | Some(Token::EscapedStringLiteral(s)) => s,
                Some(Token::Number(n, _)) => n,
                Some(Token::Word(w)) => w.value,
                Some(Token::Minus) => {
                    p.at += 1;
                    match p.toks.get(p.at).map(|t| t.token.clone()) {
                        Some(Token::Number(n, _)) => format!("-{n}"),
                        _ => return Err(p.error("a number after -")),
                    }
                }
                _ => return Err(p.error("a string, a number or a name as an argument")),
            };
            p.at += 1;
            t.args.push(arg);
            if p.eat_token(&Token::RParen) {
                break;
            }
            if !p.eat_token(&Token::Comma) {
                return Err(p.error(", or )"));
            }
        }
    }
    if let Some(extra) = p.toks.get(p.at) {
        return Err(SqlError::syntax(format!("syntax error at or near \"{}\"", extra.token)));
    }
    Ok(Some(t))
}

struct Parser<'a> {
    sql: &'a str,
    toks: Vec<Tok>,
    at: usize,
}

impl Parser<'_> {
    fn eat(&mut self, word: &str) -> bool {
        if is(self.toks.get(self.at), word) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn eat_token(&mut self, t: &Token) -> bool {
        if self.toks.get(self.at).is_some_and(|x| x.token == *t) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn error(&self, wanted: &str) -> SqlError {
        match self.toks.get(self.at) {
            Some(t) => SqlError::syntax(format!(
                "syntax error at or near \"{}\" (expected {wanted})",
                t.token
            )),
            None => SqlError::syntax(format!("syntax error at end of input (expected {wanted})")),
        }
    }

    fn text(&self, from: usize, to: usize) -> String {
        if from >= to {
            return String::new();
        }
        self.sql[self.toks[from].start..self.toks[to - 1].end].trim().to_string()
    }

    fn raw_ident(&mut self) -> Result<Ident> {
        match self.toks.get(self.at).map(|t| &t.token) {
            Some(Token::Word(w)) => {
                let ident = match w.quote_style {
                    Some(q) => Ident::with_quote(q, w.value.clone()),
                    None => Ident::new(w.value.clone()),
                };
                self.at += 1;
                Ok(ident)
            }
            _ => Err(self.error("a name")),
        }
    }

    /// A name: lowercased unless quoted.
    fn ident(&mut self) -> Result<String> {
        let i = self.raw_ident()?;
        Ok(if i.quote_style.is_some() { i.value } else { i.value.to_lowercase() })
    }

    fn object_name(&mut self) -> Result<ObjectName> {
        let mut parts = vec![self.raw_ident()?];
        while self.eat_token(&Token::Period) {
            parts.push(self.raw_ident()?);
        }
        Ok(ObjectName::from(parts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::code;

    #[test]
    fn triggers_are_read() {
        let t = create_trigger(
            "CREATE OR REPLACE TRIGGER \"T1\" BEFORE INSERT OR UPDATE OF a, \"B\" ON s.t FOR EACH ROW WHEN (NEW.a IS DISTINCT FROM (OLD.a)) EXECUTE PROCEDURE f('x''y', 2, -3, z);",
        )
        .unwrap()
        .unwrap();
        assert!(t.or_replace && t.before && t.insert && t.update && !t.delete && t.row);
        assert_eq!(t.name, "T1");
        assert_eq!(t.update_of, ["a", "B"]);
        assert_eq!(t.table.to_string(), "s.t");
        assert_eq!(t.when.as_deref(), Some("NEW.a IS DISTINCT FROM (OLD.a)"));
        assert_eq!(t.function.to_string(), "f");
        assert_eq!(t.args, ["x'y", "2", "-3", "z"]);
        let t = create_trigger("create trigger x after delete on t execute function g()")
            .unwrap()
            .unwrap();
        assert!(!t.before && t.delete && !t.row && t.args.is_empty());
        assert!(create_trigger("CREATE TABLE t (a int)").unwrap().is_none());
    }

    #[test]
    fn unsupported_forms_are_refused() {
        for sql in [
            "CREATE CONSTRAINT TRIGGER x AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION f()",
            "CREATE TRIGGER x INSTEAD OF INSERT ON v FOR EACH ROW EXECUTE FUNCTION f()",
            "CREATE TRIGGER x AFTER TRUNCATE ON t EXECUTE FUNCTION f()",
            "CREATE TRIGGER x AFTER INSERT ON t REFERENCING NEW TABLE AS n EXECUTE FUNCTION f()",
        ] {
            assert_eq!(create_trigger(sql).unwrap_err().code, code::FEATURE_NOT_SUPPORTED, "{sql}");
        }
        for sql in [
            "CREATE TRIGGER x INSERT ON t EXECUTE FUNCTION f()",
            "CREATE TRIGGER x AFTER INSERT t EXECUTE FUNCTION f()",
            "CREATE TRIGGER x AFTER INSERT ON t EXECUTE FUNCTION f",
            "CREATE TRIGGER x AFTER INSERT ON t WHEN (a EXECUTE FUNCTION f()",
            "CREATE TRIGGER x AFTER INSERT ON t EXECUTE FUNCTION f() extra",
        ] {
            assert_eq!(create_trigger(sql).unwrap_err().code, code::SYNTAX, "{sql}");
        }
    }
}
