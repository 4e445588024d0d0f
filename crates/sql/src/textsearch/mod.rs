//! Full text search: the `tsvector` and `tsquery` types, the text search configurations
//! (`simple` and the Snowball languages, with PostgreSQL's stop word lists), and the
//! functions and operators over them (`to_tsvector`, `to_tsquery` and its plain, phrase
//! and web-search forms, `@@`, `ts_rank`, `setweight`, `||` …).
//!
//! Values travel as their canonical text (as jsonb does) and are read again where an
//! operator needs their structure.

pub mod parser;
pub mod query;
pub mod vector;

use std::collections::HashSet;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

use crate::error::{code, Result, SqlError};
use crate::expr::TsFunc;
use crate::types::Value;
pub use query::TsQuery;
use query::{Node, Operand};
use vector::Lexeme;
pub use vector::TsVector;

/// A built-in text search configuration.
pub struct ConfigDef {
    /// Its name (in `pg_catalog`).
    pub name: &'static str,
    /// Its OID, as in PostgreSQL.
    pub oid: u32,
    /// The Snowball stemmer of its words (`None`: words are only lower-cased).
    language: Option<Algorithm>,
    /// Its stop words (a file of `stopwords/`).
    stop: Option<&'static str>,
    /// Words of ASCII letters are stemmed as English (PostgreSQL's `russian`).
    ascii_english: bool,
}

const fn cfg(
    name: &'static str,
    oid: u32,
    language: Option<Algorithm>,
    stop: Option<&'static str>,
) -> ConfigDef {
    ConfigDef { name, oid, language, stop, ascii_english: false }
}

/// The configurations Kiln has: PostgreSQL's, but for the languages without a Snowball
/// stemmer here (armenian, basque, catalan, hindi, indonesian, irish, lithuanian, nepali,
/// serbian, yiddish).
pub static CONFIGS: &[ConfigDef] = &[
    cfg("simple", 3748, None, None),
    cfg("arabic", 13152, Some(Algorithm::Arabic), None),
    cfg("danish", 13160, Some(Algorithm::Danish), Some(include_str!("stopwords/danish.stop"))),
    cfg("dutch", 13162, Some(Algorithm::Dutch), Some(include_str!("stopwords/dutch.stop"))),
    cfg("english", 13164, Some(Algorithm::English), Some(include_str!("stopwords/english.stop"))),
    cfg("finnish", 13166, Some(Algorithm::Finnish), Some(include_str!("stopwords/finnish.stop"))),
    cfg("french", 13168, Some(Algorithm::French), Some(include_str!("stopwords/french.stop"))),
    cfg("german", 13170, Some(Algorithm::German), Some(include_str!("stopwords/german.stop"))),
    cfg("greek", 13172, Some(Algorithm::Greek), None),
    cfg(
        "hungarian",
        13176,
        Some(Algorithm::Hungarian),
        Some(include_str!("stopwords/hungarian.stop")),
    ),
    cfg("italian", 13182, Some(Algorithm::Italian), Some(include_str!("stopwords/italian.stop"))),
    cfg(
        "norwegian",
        13188,
        Some(Algorithm::Norwegian),
        Some(include_str!("stopwords/norwegian.stop")),
    ),
    cfg(
        "portuguese",
        13190,
        Some(Algorithm::Portuguese),
        Some(include_str!("stopwords/portuguese.stop")),
    ),
    cfg("romanian", 13192, Some(Algorithm::Romanian), None),
    ConfigDef {
        name: "russian",
        oid: 13194,
        language: Some(Algorithm::Russian),
        stop: Some(include_str!("stopwords/russian.stop")),
        ascii_english: true,
    },
    cfg("spanish", 13198, Some(Algorithm::Spanish), Some(include_str!("stopwords/spanish.stop"))),
    cfg("swedish", 13200, Some(Algorithm::Swedish), Some(include_str!("stopwords/swedish.stop"))),
    cfg("tamil", 13202, Some(Algorithm::Tamil), None),
    cfg("turkish", 13204, Some(Algorithm::Turkish), Some(include_str!("stopwords/turkish.stop"))),
];

/// PostgreSQL's configurations Kiln does not have.
const MISSING: &[&str] = &[
    "armenian",
    "basque",
    "catalan",
    "hindi",
    "indonesian",
    "irish",
    "lithuanian",
    "nepali",
    "serbian",
    "yiddish",
];

/// The index in [`CONFIGS`] of `english`, the default configuration.
pub const ENGLISH: usize = 4;

/// A configuration: its index in [`CONFIGS`] (`english` by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigId(pub usize);

impl Default for ConfigId {
    fn default() -> ConfigId {
        ConfigId(ENGLISH)
    }
}

/// The configuration named `name` (`english`, `pg_catalog.English`, `"simple"`); 42704
/// for one that does not exist, 0A000 for one of PostgreSQL's that Kiln lacks.
pub fn config_index(name: &str) -> Result<usize> {
    let plain = name.trim();
    let plain = plain.strip_prefix("pg_catalog.").unwrap_or(plain);
    let plain = match plain.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
        Some(quoted) => quoted.to_string(),
        None => plain.to_lowercase(),
    };
    if let Some(i) = CONFIGS.iter().position(|c| c.name == plain) {
        return Ok(i);
    }
    if MISSING.contains(&plain.as_str()) {
        return Err(SqlError::unsupported(format!(
            "the text search configuration \"{plain}\" (Kiln has no stemmer for its language)"
        )));
    }
    Err(SqlError::new(
        code::UNDEFINED_OBJECT,
        format!("text search configuration \"{}\" does not exist", name.trim()),
    ))
}

/// The configuration of a `regconfig` value or name.
fn config_of(v: &Value) -> Result<&'static ConfigDef> {
    match v {
        Value::Text(name) => Ok(&CONFIGS[config_index(name)?]),
        Value::Int(oid) => CONFIGS.iter().find(|c| c.oid as i64 == *oid).ok_or_else(|| {
            SqlError::new(
                code::UNDEFINED_OBJECT,
                format!("text search configuration {oid} does not exist"),
            )
        }),
        other => Err(SqlError::new(
            code::DATATYPE_MISMATCH,
            format!("a text search configuration is named by text, not {}", other.kind()),
        )),
    }
}

fn stop_words(c: &ConfigDef) -> &'static HashSet<String> {
    static SETS: OnceLock<Vec<HashSet<String>>> = OnceLock::new();
    let sets = SETS.get_or_init(|| {
        CONFIGS
            .iter()
            .map(|c| {
                c.stop
                    .unwrap_or("")
                    .lines()
                    .map(|l| l.trim().to_lowercase())
                    .filter(|l| !l.is_empty())
                    .collect()
            })
            .collect()
    });
    let i = CONFIGS.iter().position(|x| std::ptr::eq(x, c)).unwrap_or(0);
    &sets[i]
}

/// The lexemes of one token under configuration `c`: none for a stop word.
fn lexize(c: &ConfigDef, token: &parser::Token) -> Vec<String> {
    // Lower-cased as `lower()` does: ASCII letters only (the C locale's rule, which is
    // Kiln's for every text function).
    let lower = token.text.to_ascii_lowercase();
    if !token.kind.is_word() {
        return vec![lower];
    }
    let (language, stops) = if c.ascii_english && token.kind.is_ascii() {
        (Some(Algorithm::English), stop_words(&CONFIGS[ENGLISH]))
    } else {
        (c.language, stop_words(c))
    };
    let Some(language) = language else { return vec![lower] };
    if stops.contains(&lower) {
        return vec![];
    }
    // PostgreSQL leaves very long words unstemmed.
    if lower.len() > 1000 {
        return vec![lower];
    }
    vec![Stemmer::create(language).stem(&lower).into_owned()]
}

/// The lexemes of `text` with their positions (a stop word takes a position and yields no
/// lexeme); words too long to index are skipped with PostgreSQL's notice.
fn lexemes(c: &ConfigDef, text: &str, notice: &mut dyn FnMut(SqlError)) -> Vec<(u32, Vec<String>)> {
    let mut out = Vec::new();
    let mut pos = 0u32;
    for token in parser::tokens(text) {
        if token.text.len() >= vector::MAX_LEXEME {
            notice(SqlError::new(code::PROGRAM_LIMIT, "word is too long to be indexed").detail(
                format!("Words longer than {} characters are ignored.", vector::MAX_LEXEME),
            ));
            continue;
        }
        pos += 1;
        out.push((pos, lexize(c, &token)));
    }
    out
}

/// `to_tsvector(config, text)`
pub fn to_tsvector(
    c: &ConfigDef,
    text: &str,
    notice: &mut dyn FnMut(SqlError),
) -> Result<TsVector> {
    let mut all = Vec::new();
    for (pos, words) in lexemes(c, text, notice) {
        let p = pos.min(vector::MAX_POS as u32) as u16;
        all.extend(words.into_iter().map(|word| Lexeme { word, positions: vec![p] }));
    }
    TsVector::from_lexemes(all, vector::MAX_POSITIONS)
}

/// How the words of one operand combine.
#[derive(Clone, Copy, PartialEq)]
enum Join {
    /// `&` (plainto_tsquery)
    And,
    /// `<N>` by their distance (to_tsquery's operands, phraseto_tsquery)
    Phrase,
}

/// The node of an operand's text: its lexemes joined by `join`; [`Node::Stop`] when it
/// has none.
fn operand_node(
    c: &ConfigDef,
    text: &str,
    weights: u8,
    prefix: bool,
    join: Join,
    notice: &mut dyn FnMut(SqlError),
) -> Node {
    let mut node: Option<Node> = None;
    let mut last_pos = 0u32;
    for (pos, words) in lexemes(c, text, notice) {
        // Lexemes at one position (one token) are alternatives.
        let mut here: Option<Node> = None;
        for word in words {
            let v = Node::Val(Operand { word, weights, prefix });
            here = Some(match here {
                None => v,
                Some(h) => Node::Or(Box::new(h), Box::new(v)),
            });
        }
        let here = here.unwrap_or(Node::Stop);
        node = Some(match node {
            None => here,
            Some(prev) => match join {
                Join::And => Node::And(Box::new(prev), Box::new(here)),
                Join::Phrase => Node::Phrase(
                    Box::new(prev),
                    Box::new(here),
                    (pos - last_pos).min(query::MAX_DISTANCE as u32) as u16,
                ),
            },
        });
        last_pos = pos;
    }
    node.unwrap_or(Node::Stop)
}

/// The query left once stop words are taken out, with PostgreSQL's notice when nothing is.
fn cleaned(root: Option<Node>, text: &str, notice: &mut dyn FnMut(SqlError)) -> TsQuery {
    let Some(root) = root else {
        notice(SqlError::new(
            "00000",
            format!("text-search query doesn't contain lexemes: \"{text}\""),
        ));
        return TsQuery::default();
    };
    let root = query::clean_stopwords(root);
    if root.is_none() {
        notice(SqlError::new(
            "00000",
            "text-search query contains only stop words or doesn't contain lexemes, ignored",
        ));
    }
    TsQuery { root }
}

/// `to_tsquery(config, text)`: the query syntax, each operand normalized.
pub fn to_tsquery(c: &ConfigDef, text: &str, notice: &mut dyn FnMut(SqlError)) -> Result<TsQuery> {
    let root = query::parse_with(text, |word, weights, prefix| {
        Ok(operand_node(c, &word, weights, prefix, Join::Phrase, notice))
    })?;
    Ok(cleaned(root, text, notice))
}

/// `plainto_tsquery` (`phrase` false) and `phraseto_tsquery` (true): the words of plain
/// text, all required (in order, at their distances).
pub fn plain_tsquery(
    c: &ConfigDef,
    text: &str,
    phrase: bool,
    notice: &mut dyn FnMut(SqlError),
) -> TsQuery {
    let join = if phrase { Join::Phrase } else { Join::And };
    let node = operand_node(c, text, 0, false, join, notice);
    let root =
        if node == Node::Stop && parser::tokens(text).is_empty() { None } else { Some(node) };
    match root {
        None => {
            notice(SqlError::new(
                "00000",
                "text-search query doesn't contain lexemes: \"\"".to_string(),
            ));
            TsQuery::default()
        }
        root => cleaned(root, text, notice),
    }
}

/// `websearch_to_tsquery(config, text)`: words (all required), `"quoted phrases"`, `or`,
/// and `-word` (must not occur); other punctuation is ignored.
pub fn websearch_tsquery(c: &ConfigDef, text: &str, notice: &mut dyn FnMut(SqlError)) -> TsQuery {
    let chars: Vec<char> = text.chars().collect();
    let mut groups: Vec<Vec<Node>> = vec![vec![]];
    let mut i = 0;
    let mut negate = false;
    while i < chars.len() {
        let ch = chars[i];
        if ch.is_whitespace() {
            i += 1;
            continue;
        }
        if ch == '-' {
            negate = true;
            i += 1;
            continue;
        }
        let (chunk, next, quoted) = if ch == '"' {
            let end =
                chars[i + 1..].iter().position(|c| *c == '"').map_or(chars.len(), |k| i + 1 + k);
            (chars[i + 1..end].iter().collect::<String>(), (end + 1).min(chars.len()), true)
        } else {
            let end = chars[i..]
                .iter()
                .position(|c| c.is_whitespace() || *c == '"')
                .map_or(chars.len(), |k| i + k);
            (chars[i..end].iter().collect::<String>(), end, false)
        };
        i = next;
        if !quoted && chunk.eq_ignore_ascii_case("or") {
            if groups.last().is_some_and(|g| !g.is_empty()) {
                groups.push(vec![]);
            }
            negate = false;
            continue;
        }
        let node = operand_node(c, &chunk, 0, false, Join::Phrase, notice);
        let node = if negate { Node::Not(Box::new(node)) } else { node };
        negate = false;
        if let Some(g) = groups.last_mut() {
            g.push(node);
        }
    }
    let mut root: Option<Node> = None;
    for g in groups.into_iter().filter(|g| !g.is_empty()) {
        let mut it = g.into_iter();
        let Some(first) = it.next() else { continue };
        let and = it.fold(first, |a, b| Node::And(Box::new(a), Box::new(b)));
        root = Some(match root {
            None => and,
            Some(r) => Node::Or(Box::new(r), Box::new(and)),
        });
    }
    cleaned(root, text, notice)
}

fn vector_arg(v: &Value) -> Result<TsVector> {
    match v {
        Value::Text(t) => TsVector::parse(t),
        other => Err(SqlError::new(
            code::DATATYPE_MISMATCH,
            format!("expected a tsvector, not {}", other.kind()),
        )),
    }
}

fn query_arg(v: &Value) -> Result<TsQuery> {
    match v {
        Value::Text(t) => TsQuery::parse(t, &mut |_| {}),
        other => Err(SqlError::new(
            code::DATATYPE_MISMATCH,
            format!("expected a tsquery, not {}", other.kind()),
        )),
    }
}

fn text_arg(v: &Value) -> Result<String> {
    Ok(v.to_text(crate::types::DataType::Text).unwrap_or_default())
}

fn weight_arg(v: &Value) -> Result<u8> {
    let t = text_arg(v)?;
    let mut chars = t.chars();
    match (chars.next().and_then(vector::weight_letter), chars.next()) {
        (Some(w), None) => Ok(w),
        _ => Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("unrecognized weight: \"{t}\""),
        )),
    }
}

fn strings(v: &Value, what: &str, array_only: bool) -> Result<Vec<String>> {
    // An untyped literal where only an array is taken: read as text[].
    let parsed;
    let v = match v {
        Value::Text(t) if array_only => {
            parsed = Value::parse(t, crate::array::array_of(crate::types::DataType::Text)?)?;
            &parsed
        }
        v => v,
    };
    match v {
        Value::Array(items) => items
            .iter()
            .map(|x| match x {
                Value::Null => {
                    Err(SqlError::new("22004", format!("{what} array must not contain nulls")))
                }
                x => text_arg(x),
            })
            .collect(),
        other => Ok(vec![text_arg(other)?]),
    }
}

/// Evaluates a text search function; `default` is the session's configuration (for the
/// one-argument forms), `notice` sends PostgreSQL's notices.
pub fn call(
    f: TsFunc,
    args: &[Value],
    default: ConfigId,
    notice: &mut dyn FnMut(SqlError),
) -> Result<Value> {
    let default = default.0.min(CONFIGS.len() - 1);
    // (All are strict.)
    if args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let with_config = |args: &[Value]| -> Result<(&'static ConfigDef, String)> {
        match args {
            [text] => Ok((&CONFIGS[default], text_arg(text)?)),
            [c, text] => Ok((config_of(c)?, text_arg(text)?)),
            _ => Err(SqlError::new(code::UNDEFINED_FUNCTION, "wrong number of arguments")),
        }
    };
    let vtext = |v: TsVector| Value::Text(v.to_text());
    let qtext = |q: TsQuery| Value::Text(q.to_text());
    Ok(match f {
        TsFunc::ToTsVector => {
            let (c, text) = with_config(args)?;
            vtext(to_tsvector(c, &text, notice)?)
        }
        TsFunc::ToTsQuery => {
            let (c, text) = with_config(args)?;
            qtext(to_tsquery(c, &text, notice)?)
        }
        TsFunc::PlainToTsQuery | TsFunc::PhraseToTsQuery => {
            let (c, text) = with_config(args)?;
            qtext(plain_tsquery(c, &text, f == TsFunc::PhraseToTsQuery, notice))
        }
        TsFunc::WebSearchToTsQuery => {
            let (c, text) = with_config(args)?;
            qtext(websearch_tsquery(c, &text, notice))
        }
        TsFunc::Match => Value::Bool(query_arg(&args[1])?.matches(&vector_arg(&args[0])?)),
        TsFunc::MatchText => {
            let v = to_tsvector(&CONFIGS[default], &text_arg(&args[0])?, notice)?;
            Value::Bool(query_arg(&args[1])?.matches(&v))
        }
        TsFunc::Rank(with_weights) => {
            let (weights, rest) = if with_weights {
                (rank_weights(&args[0])?, &args[1..])
            } else {
                (query::DEFAULT_WEIGHTS, args)
            };
            let method = match rest.get(2) {
                Some(Value::Int(m)) => *m,
                _ => 0,
            };
            let r = query::rank(&weights, &vector_arg(&rest[0])?, &query_arg(&rest[1])?, method);
            Value::Float(r as f64)
        }
        TsFunc::SetWeight => {
            let only = match args.get(2) {
                Some(v) => Some(strings(v, "lexeme", true)?),
                None => None,
            };
            vtext(vector_arg(&args[0])?.set_weight(weight_arg(&args[1])?, only.as_deref()))
        }
        TsFunc::Strip => vtext(vector_arg(&args[0])?.strip()),
        TsFunc::Length => Value::Int(vector_arg(&args[0])?.lexemes.len() as i64),
        TsFunc::NumNode => Value::Int(query_arg(&args[0])?.nodes()),
        TsFunc::Concat => vtext(vector_arg(&args[0])?.concat(vector_arg(&args[1])?)?),
        TsFunc::Delete => vtext(vector_arg(&args[0])?.delete(&strings(&args[1], "lexeme", false)?)),
        TsFunc::Filter => {
            let weights = strings(&args[1], "weight", true)?
                .iter()
                .map(|w| weight_arg(&Value::Text(w.clone())))
                .collect::<Result<Vec<_>>>()?;
            vtext(vector_arg(&args[0])?.filter(&weights))
        }
        TsFunc::ToArray => Value::Array(
            vector_arg(&args[0])?.lexemes.into_iter().map(|l| Value::Text(l.word)).collect(),
        ),
        TsFunc::FromArray => {
            let words = strings(&args[0], "lexeme", true)?;
            if words.iter().any(String::is_empty) {
                return Err(SqlError::new("2200F", "lexeme array may not contain empty strings"));
            }
            let lexemes = words.into_iter().map(|word| Lexeme { word, positions: vec![] });
            vtext(TsVector::from_lexemes(lexemes.collect(), vector::MAX_POSITIONS)?)
        }
        TsFunc::QueryAnd => qtext(query_arg(&args[0])?.combine(query_arg(&args[1])?, Node::And)),
        TsFunc::QueryOr => qtext(query_arg(&args[0])?.combine(query_arg(&args[1])?, Node::Or)),
        TsFunc::QueryNot => qtext(query_arg(&args[0])?.negate()),
        TsFunc::QueryPhrase => {
            let distance = match args.get(2) {
                Some(Value::Int(d)) if (0..=query::MAX_DISTANCE as i64).contains(d) => *d as u16,
                Some(_) => {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!(
                            "distance in phrase operator must be an integer value between zero and {} inclusive",
                            query::MAX_DISTANCE
                        ),
                    ))
                }
                None => 1,
            };
            let a = query_arg(&args[0])?;
            let b = query_arg(&args[1])?;
            qtext(match (a.root, b.root) {
                (None, r) | (r, None) => TsQuery { root: r },
                (Some(x), Some(y)) => {
                    TsQuery { root: Some(Node::Phrase(Box::new(x), Box::new(y), distance)) }
                }
            })
        }
        TsFunc::CurrentConfig => Value::Text(CONFIGS[default].name.to_string()),
        TsFunc::Config => Value::Text(config_of(&args[0])?.name.to_string()),
    })
}

fn rank_weights(v: &Value) -> Result<[f32; 4]> {
    let float4s = crate::array::array_of(crate::types::DataType::Float4)?;
    let parsed;
    let items = match v {
        Value::Array(items) => items,
        // An untyped literal: read as real[].
        Value::Text(t) => {
            parsed = Value::parse(t, float4s)?;
            match &parsed {
                Value::Array(items) => items,
                _ => {
                    return Err(SqlError::new(code::DATATYPE_MISMATCH, "array of weight expected"))
                }
            }
        }
        _ => return Err(SqlError::new(code::DATATYPE_MISMATCH, "array of weight expected")),
    };
    if items.len() < 4 {
        return Err(SqlError::new("2202E", "array of weight is too short"));
    }
    let mut out = query::DEFAULT_WEIGHTS;
    for (i, w) in items.iter().take(4).enumerate() {
        let w = match w {
            Value::Null => {
                return Err(SqlError::new("22004", "array of weight must not contain nulls"))
            }
            Value::Float(f) => *f as f32,
            Value::Int(n) => *n as f32,
            other => text_arg(other)?.parse::<f32>().map_err(|_| {
                SqlError::new(code::INVALID_TEXT, "array of weight holds a non-number")
            })?,
        };
        if w > 1.0 {
            return Err(SqlError::new(code::INVALID_PARAMETER_VALUE, "weight out of range"));
        }
        if w >= 0.0 {
            out[i] = w;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn english() -> &'static ConfigDef {
        &CONFIGS[ENGLISH]
    }

    #[test]
    fn english_stems_and_drops_stop_words() {
        let v =
            to_tsvector(english(), "The quick brown foxes jumped over the lazy dogs", &mut |_| {})
                .unwrap();
        assert_eq!(v.to_text(), "'brown':3 'dog':9 'fox':4 'jump':5 'lazi':8 'quick':2");
        let v = to_tsvector(&CONFIGS[0], "Hello, World! 42", &mut |_| {}).unwrap();
        assert_eq!(v.to_text(), "'42':3 'hello':1 'world':2");
    }

    #[test]
    fn queries_from_text() {
        let mut n = 0;
        let mut notice = |_: SqlError| n += 1;
        let e = english();
        let cases = [
            (to_tsquery(e, "The & Fat & Rats", &mut notice).unwrap(), "'fat' & 'rat'"),
            (to_tsquery(e, "fat <-> the <-> rat", &mut notice).unwrap(), "'fat' <2> 'rat'"),
            (
                to_tsquery(e, "well-known & supernovae:*", &mut notice).unwrap(),
                "'well-known' <-> 'well' <-> 'known' & 'supernova':*",
            ),
            (plain_tsquery(e, "The Fat Rats", false, &mut notice), "'fat' & 'rat'"),
            (plain_tsquery(e, "The Fat Rats", true, &mut notice), "'fat' <-> 'rat'"),
            (
                websearch_tsquery(e, "\"fat rat\" or cat -dog", &mut notice),
                "'fat' <-> 'rat' | 'cat' & !'dog'",
            ),
            (to_tsquery(e, "the", &mut notice).unwrap(), ""),
        ];
        for (q, want) in cases {
            assert_eq!(q.to_text(), want);
        }
        assert_eq!(n, 1, "one notice for the query of stop words only");
    }

    proptest::proptest! {
        /// Any text: no panic; what is accepted reads back as itself; binary forms round
        /// trip.
        #[test]
        fn any_input_is_handled(text in ".{0,80}", words in "[a-zA-Z0-9 &|!():*<>'\\-]{0,60}") {
            let mut quiet = |_: SqlError| {};
            let mut quiet_text = |_: String| {};
            for input in [&text, &words] {
                if let Ok(v) = TsVector::parse(input) {
                    let again = TsVector::parse(&v.to_text()).unwrap();
                    proptest::prop_assert_eq!(&again, &v);
                    proptest::prop_assert_eq!(TsVector::from_binary(&v.to_binary()), Some(v));
                }
                if let Ok(q) = TsQuery::parse(input, &mut quiet_text) {
                    let again = TsQuery::parse(&q.to_text(), &mut quiet_text).unwrap();
                    proptest::prop_assert_eq!(&again, &q);
                    proptest::prop_assert_eq!(TsQuery::from_binary(&q.to_binary()), Some(q));
                }
                for c in CONFIGS {
                    let v = to_tsvector(c, input, &mut quiet).unwrap();
                    proptest::prop_assert_eq!(TsVector::parse(&v.to_text()).unwrap(), v.clone());
                    if let Ok(q) = to_tsquery(c, input, &mut quiet) {
                        let _ = q.matches(&v);
                    }
                    let q = websearch_tsquery(c, input, &mut quiet);
                    let _ = q.matches(&v);
                    let _ = query::rank(&query::DEFAULT_WEIGHTS, &v, &q, 63);
                    // A text's own plain and phrase queries find it.
                    for phrase in [false, true] {
                        let q = plain_tsquery(c, input, phrase, &mut quiet);
                        proptest::prop_assert!(q.root.is_none() || q.matches(&v), "{} {}", q.to_text(), v.to_text());
                    }
                }
            }
        }
    }

    #[test]
    fn ranks_as_postgres() {
        let v = to_tsvector(english(), "the fat cat sat on the fat mat", &mut |_| {}).unwrap();
        let q = to_tsquery(english(), "fat & cat", &mut |_| {}).unwrap();
        assert_eq!(query::rank(&query::DEFAULT_WEIGHTS, &v, &q, 0).to_string(), "0.18490733");
    }
}
