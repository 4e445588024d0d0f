//! `tsquery`: lexemes joined by `&`, `|`, `!` and the phrase operators `<->` / `<N>`, as
//! PostgreSQL reads, writes, matches (`@@`) and ranks them.

use super::vector::{pos_of, read_quoted, weight_letter, weight_of, Pos, TsVector, MAX_LEXEME};
use crate::error::{code, Result, SqlError};

/// The largest phrase distance (`<N>`).
pub const MAX_DISTANCE: u16 = 16384;
/// The most nodes a query may have, and the deepest nesting its text may have.
pub const MAX_NODES: usize = 100_000;
const MAX_DEPTH: usize = 1_000;

/// A query operand: a lexeme, the weights it must have (a bit per weight, D = 1 … A = 8;
/// 0 for any) and whether it matches as a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operand {
    pub word: String,
    pub weights: u8,
    pub prefix: bool,
}

/// A query tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Val(Operand),
    /// An operand the configuration dropped (a stop word), until the query is cleaned.
    Stop,
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    /// `left <distance> right`
    Phrase(Box<Node>, Box<Node>, u16),
}

/// A tsquery: a tree, or nothing (a query of no lexemes, which matches nothing).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TsQuery {
    pub root: Option<Node>,
}

fn syntax(text: &str) -> SqlError {
    SqlError::new(code::SYNTAX, format!("syntax error in tsquery: \"{text}\""))
}

/// The operator priorities PostgreSQL writes a query by.
fn priority(n: &Node) -> u8 {
    match n {
        Node::Val(_) | Node::Stop => 5,
        Node::Not(_) => 4,
        Node::Phrase(..) => 3,
        Node::And(..) => 2,
        Node::Or(..) => 1,
    }
}

/// One token of a query's text.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Operand(String, u8, bool),
    Not,
    And,
    Or,
    Phrase(u16),
    Open,
    Close,
}

fn tokens(text: &str) -> Result<Vec<Tok>> {
    // (No text value holds NUL; the binary form ends lexemes with it.)
    if text.contains('\0') {
        return Err(syntax(text));
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let special = |c: char| matches!(c, '!' | '&' | '|' | '(' | ')' | '<' | ':');
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '!' => {
                out.push(Tok::Not);
                i += 1;
            }
            '&' => {
                out.push(Tok::And);
                i += 1;
            }
            '|' => {
                out.push(Tok::Or);
                i += 1;
            }
            '(' => {
                out.push(Tok::Open);
                i += 1;
            }
            ')' => {
                out.push(Tok::Close);
                i += 1;
            }
            '<' => {
                // `<->` or `<N>`: digits or a hyphen, then `>`.
                let close = chars[i + 1..]
                    .iter()
                    .position(|c| !(c.is_ascii_digit() || *c == '-' || *c == ' '))
                    .map(|k| k + 1)
                    .filter(|k| chars[i + k] == '>')
                    .ok_or_else(|| syntax(text))?;
                let inner: String = chars[i + 1..i + close].iter().collect();
                let distance = if inner == "-" {
                    1
                } else {
                    let n: i64 = inner.trim().parse().map_err(|_| syntax(text))?;
                    if !(0..=MAX_DISTANCE as i64).contains(&n) {
                        return Err(SqlError::new(
                            code::INVALID_PARAMETER_VALUE,
                            format!("distance in phrase operator must be an integer value between zero and {MAX_DISTANCE} inclusive"),
                        ));
                    }
                    n as u16
                };
                out.push(Tok::Phrase(distance));
                i += close + 1;
            }
            ':' => return Err(syntax(text)),
            _ => {
                let mut word = String::new();
                if c == '\'' {
                    word = read_quoted(&chars, &mut i).ok_or_else(|| syntax(text))?;
                } else {
                    while let Some(&c) = chars.get(i) {
                        if c.is_whitespace() || special(c) {
                            break;
                        }
                        if c == '\\' {
                            word.push(*chars.get(i + 1).ok_or_else(|| syntax(text))?);
                            i += 2;
                            continue;
                        }
                        word.push(c);
                        i += 1;
                    }
                }
                let (mut weights, mut prefix) = (0u8, false);
                if chars.get(i) == Some(&':') {
                    i += 1;
                    while let Some(&c) = chars.get(i) {
                        if c == '*' {
                            prefix = true;
                        } else if let Some(w) = weight_letter(c) {
                            weights |= 1 << w;
                        } else {
                            break;
                        }
                        i += 1;
                    }
                }
                if word.len() > MAX_LEXEME {
                    return Err(SqlError::new(
                        code::PROGRAM_LIMIT,
                        format!("word is too long in tsquery: \"{text}\""),
                    ));
                }
                out.push(Tok::Operand(word, weights, prefix));
            }
        }
        if out.len() > MAX_NODES {
            return Err(SqlError::new(
                code::PROGRAM_LIMIT,
                format!("tsquery is too large (more than {MAX_NODES} items)"),
            ));
        }
    }
    Ok(out)
}

/// Builds a tree from tokens by precedence (`!` over `<->` over `&` over `|`, each
/// left-associative); `operand` makes a node of each operand.
struct Builder<'a, F: FnMut(String, u8, bool) -> Result<Node>> {
    toks: &'a [Tok],
    at: usize,
    text: &'a str,
    operand: F,
    depth: usize,
}

impl<F: FnMut(String, u8, bool) -> Result<Node>> Builder<'_, F> {
    fn or(&mut self) -> Result<Node> {
        let mut left = self.and()?;
        while self.toks.get(self.at) == Some(&Tok::Or) {
            self.at += 1;
            left = Node::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Node> {
        let mut left = self.phrase()?;
        while self.toks.get(self.at) == Some(&Tok::And) {
            self.at += 1;
            left = Node::And(Box::new(left), Box::new(self.phrase()?));
        }
        Ok(left)
    }

    fn phrase(&mut self) -> Result<Node> {
        let mut left = self.unary()?;
        while let Some(Tok::Phrase(d)) = self.toks.get(self.at) {
            let d = *d;
            self.at += 1;
            left = Node::Phrase(Box::new(left), Box::new(self.unary()?), d);
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Node> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(SqlError::new(
                code::PROGRAM_LIMIT,
                "tsquery is nested too deeply".to_string(),
            ));
        }
        let n = match self.toks.get(self.at).cloned() {
            Some(Tok::Not) => {
                self.at += 1;
                Node::Not(Box::new(self.unary()?))
            }
            Some(Tok::Open) => {
                self.at += 1;
                let inner = self.or()?;
                if self.toks.get(self.at) != Some(&Tok::Close) {
                    return Err(syntax(self.text));
                }
                self.at += 1;
                inner
            }
            Some(Tok::Operand(w, weights, prefix)) => {
                self.at += 1;
                (self.operand)(w, weights, prefix)?
            }
            None => {
                return Err(SqlError::new(
                    code::SYNTAX,
                    format!("no operand in tsquery: \"{}\"", self.text),
                ))
            }
            Some(_) => return Err(syntax(self.text)),
        };
        self.depth -= 1;
        Ok(n)
    }
}

/// Parses a query's text, each operand made a node by `operand` (the operand's text, its
/// weights and prefix flag); `None` for text with no tokens.
pub fn parse_with(
    text: &str,
    operand: impl FnMut(String, u8, bool) -> Result<Node>,
) -> Result<Option<Node>> {
    let toks = tokens(text)?;
    if toks.is_empty() {
        return Ok(None);
    }
    let mut b = Builder { toks: &toks, at: 0, text, operand, depth: 0 };
    let root = b.or()?;
    if b.at != toks.len() {
        return Err(syntax(text));
    }
    Ok(Some(root))
}

impl TsQuery {
    /// Reads PostgreSQL's text form (operands as written, not normalized). A query of no
    /// operands is empty; `notice` receives PostgreSQL's notice for it.
    pub fn parse(text: &str, notice: &mut dyn FnMut(String)) -> Result<TsQuery> {
        let root = parse_with(text, |word, weights, prefix| {
            if word.is_empty() {
                return Err(syntax(text));
            }
            Ok(Node::Val(Operand { word, weights, prefix }))
        })?;
        if root.is_none() {
            notice(format!("text-search query doesn't contain lexemes: \"{text}\""));
        }
        Ok(TsQuery { root })
    }

    /// PostgreSQL's text form.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if let Some(root) = &self.root {
            write_node(&mut out, root, 0, false);
        }
        out
    }

    /// `numnode(q)`
    pub fn nodes(&self) -> i64 {
        fn count(n: &Node) -> i64 {
            match n {
                Node::Val(_) | Node::Stop => 1,
                Node::Not(x) => 1 + count(x),
                Node::And(a, b) | Node::Or(a, b) | Node::Phrase(a, b, _) => 1 + count(a) + count(b),
            }
        }
        self.root.as_ref().map_or(0, count)
    }

    /// The query's operands, left to right.
    pub fn operands(&self) -> Vec<&Operand> {
        fn walk<'a>(n: &'a Node, out: &mut Vec<&'a Operand>) {
            match n {
                Node::Val(o) => out.push(o),
                Node::Stop => {}
                Node::Not(x) => walk(x, out),
                Node::And(a, b) | Node::Or(a, b) | Node::Phrase(a, b, _) => {
                    walk(a, out);
                    walk(b, out);
                }
            }
        }
        let mut out = Vec::new();
        if let Some(r) = &self.root {
            walk(r, &mut out);
        }
        out
    }

    /// `a && b`, `a || b`, `a <-> b` (`a <N> b`): an empty side gives the other.
    pub fn combine(self, other: TsQuery, op: fn(Box<Node>, Box<Node>) -> Node) -> TsQuery {
        match (self.root, other.root) {
            (None, r) | (r, None) => TsQuery { root: r },
            (Some(a), Some(b)) => TsQuery { root: Some(op(Box::new(a), Box::new(b))) },
        }
    }

    /// `!! q`
    pub fn negate(self) -> TsQuery {
        TsQuery { root: self.root.map(|r| Node::Not(Box::new(r))) }
    }

    /// Whether `v @@ q`.
    pub fn matches(&self, v: &TsVector) -> bool {
        match &self.root {
            None => false,
            Some(r) => execute(r, v) != Ternary::No,
        }
    }
}

impl TsQuery {
    /// PostgreSQL's binary form: the item count, then the items in its prefix order (an
    /// operator, its right operand, its left operand): type 1 and weight, prefix flag and
    /// NUL-terminated lexeme for an operand; type 2, the operator (NOT 1, AND 2, OR 3,
    /// PHRASE 4) and a phrase's distance for an operator.
    pub fn to_binary(&self) -> Vec<u8> {
        fn walk(n: &Node, out: &mut Vec<u8>, count: &mut i32) {
            *count += 1;
            match n {
                Node::Val(o) => {
                    out.extend_from_slice(&[1, o.weights, o.prefix as u8]);
                    out.extend_from_slice(o.word.as_bytes());
                    out.push(0);
                }
                Node::Stop => {}
                Node::Not(x) => {
                    out.extend_from_slice(&[2, 1]);
                    walk(x, out, count);
                }
                Node::And(a, b) | Node::Or(a, b) | Node::Phrase(a, b, _) => {
                    match n {
                        Node::And(..) => out.extend_from_slice(&[2, 2]),
                        Node::Or(..) => out.extend_from_slice(&[2, 3]),
                        Node::Phrase(_, _, d) => {
                            out.extend_from_slice(&[2, 4]);
                            out.extend_from_slice(&d.to_be_bytes());
                        }
                        _ => {}
                    }
                    walk(b, out, count);
                    walk(a, out, count);
                }
            }
        }
        let (mut items, mut count) = (Vec::new(), 0);
        if let Some(r) = &self.root {
            walk(r, &mut items, &mut count);
        }
        let mut out = count.to_be_bytes().to_vec();
        out.extend(items);
        out
    }

    /// Reads [`TsQuery::to_binary`]'s form; `None` when malformed.
    pub fn from_binary(b: &[u8]) -> Option<TsQuery> {
        struct R<'a>(&'a [u8], usize);
        impl R<'_> {
            fn take(&mut self, n: usize) -> Option<&[u8]> {
                let head = self.0.get(..n)?;
                self.0 = &self.0[n..];
                Some(head)
            }
            fn node(&mut self, depth: usize) -> Option<Node> {
                if depth > MAX_DEPTH || self.1 == 0 {
                    return None;
                }
                self.1 -= 1;
                match self.take(1)?[0] {
                    1 => {
                        let [weights, prefix] = <[u8; 2]>::try_from(self.take(2)?).ok()?;
                        let end = self.0.iter().position(|c| *c == 0)?;
                        let word = String::from_utf8(self.take(end)?.to_vec()).ok()?;
                        self.take(1)?;
                        if weights > 15 || prefix > 1 || word.len() > MAX_LEXEME {
                            return None;
                        }
                        Some(Node::Val(Operand { word, weights, prefix: prefix == 1 }))
                    }
                    2 => match self.take(1)?[0] {
                        1 => Some(Node::Not(Box::new(self.node(depth + 1)?))),
                        op @ 2..=4 => {
                            let distance = if op == 4 {
                                let d = u16::from_be_bytes(self.take(2)?.try_into().ok()?);
                                (d <= MAX_DISTANCE).then_some(d)?
                            } else {
                                0
                            };
                            let right = Box::new(self.node(depth + 1)?);
                            let left = Box::new(self.node(depth + 1)?);
                            Some(match op {
                                2 => Node::And(left, right),
                                3 => Node::Or(left, right),
                                _ => Node::Phrase(left, right, distance),
                            })
                        }
                        _ => None,
                    },
                    _ => None,
                }
            }
        }
        let count = i32::from_be_bytes(b.get(..4)?.try_into().ok()?);
        if count < 0 || count as usize > MAX_NODES {
            return None;
        }
        let mut r = R(&b[4..], count as usize);
        let root = if count == 0 { None } else { Some(r.node(0)?) };
        (r.0.is_empty() && r.1 == 0).then_some(TsQuery { root })
    }
}

/// Removes the stop-word operands a configuration dropped, moving phrase distances across
/// them as PostgreSQL does; `None` when nothing is left.
pub fn clean_stopwords(root: Node) -> Option<Node> {
    fn clean(n: Node) -> (Option<Node>, u32, u32) {
        match n {
            Node::Val(_) => (Some(n), 0, 0),
            Node::Stop => (None, 0, 0),
            Node::Not(x) => {
                let (x, l, r) = clean(*x);
                (x.map(|x| Node::Not(Box::new(x))), l, r)
            }
            n => {
                let (a, b, distance, kind) = match n {
                    Node::And(a, b) => (a, b, 0u32, 0),
                    Node::Or(a, b) => (a, b, 0, 1),
                    Node::Phrase(a, b, d) => (a, b, d as u32, 2),
                    _ => unreachable!("operators only"),
                };
                let phrase = kind == 2;
                let (left, ll, lr) = clean(*a);
                let (right, rl, rr) = clean(*b);
                match (left, right) {
                    (None, None) => {
                        let add = if phrase { ll + distance + rl } else { ll.max(rl) };
                        (None, add, add)
                    }
                    (None, Some(r)) => {
                        if phrase {
                            (Some(r), ll + distance + rl, rr)
                        } else {
                            (Some(r), rl, rr)
                        }
                    }
                    (Some(l), None) => {
                        if phrase {
                            (Some(l), ll, lr + distance + rr)
                        } else {
                            (Some(l), ll, lr)
                        }
                    }
                    (Some(l), Some(r)) => {
                        let (l, r) = (Box::new(l), Box::new(r));
                        match kind {
                            0 => (Some(Node::And(l, r)), 0, 0),
                            1 => (Some(Node::Or(l, r)), 0, 0),
                            _ => {
                                let d = (distance + lr + rl).min(MAX_DISTANCE as u32) as u16;
                                (Some(Node::Phrase(l, r, d)), ll, rr)
                            }
                        }
                    }
                }
            }
        }
    }
    clean(root).0
}

fn write_node(out: &mut String, n: &Node, parent: u8, right_of_phrase: bool) {
    match n {
        Node::Val(o) => {
            super::vector::quote_into(out, &o.word);
            if o.weights != 0 || o.prefix {
                out.push(':');
                if o.prefix {
                    out.push('*');
                }
                for (bit, letter) in [(3, 'A'), (2, 'B'), (1, 'C'), (0, 'D')] {
                    if o.weights & (1 << bit) != 0 {
                        out.push(letter);
                    }
                }
            }
        }
        Node::Stop => {}
        Node::Not(x) => {
            let p = priority(n);
            if p < parent {
                out.push_str("( ");
            }
            out.push('!');
            write_node(out, x, p, false);
            if p < parent {
                out.push_str(" )");
            }
        }
        Node::And(a, b) | Node::Or(a, b) | Node::Phrase(a, b, _) => {
            let p = priority(n);
            let is_phrase = matches!(n, Node::Phrase(..));
            let parens = p < parent || (is_phrase && right_of_phrase);
            if parens {
                out.push_str("( ");
            }
            write_node(out, a, p, false);
            match n {
                Node::And(..) => out.push_str(" & "),
                Node::Or(..) => out.push_str(" | "),
                Node::Phrase(_, _, 1) => out.push_str(" <-> "),
                Node::Phrase(_, _, d) => out.push_str(&format!(" <{d}> ")),
                _ => {}
            }
            write_node(out, b, p, is_phrase);
            if parens {
                out.push_str(" )");
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ternary {
    No,
    Yes,
    Maybe,
}

/// Positions where a phrase part matches (or, negated, where it does not), and its width.
#[derive(Default)]
struct PhraseData {
    positions: Vec<u16>,
    negate: bool,
    width: u32,
}

/// The positions of operand `o` in `v` (of its weights); `None` when it is absent;
/// `Some(empty)` when it is present without positions.
fn operand_positions(o: &Operand, v: &TsVector) -> Option<Vec<Pos>> {
    let mut found = false;
    let mut all = Vec::new();
    let mut add = |positions: &[Pos]| {
        found = true;
        all.extend(positions.iter().copied());
    };
    if o.prefix {
        for l in v.with_prefix(&o.word) {
            add(&l.positions);
        }
    } else if let Some(l) = v.find(&o.word) {
        add(&l.positions);
    }
    found.then_some(all)
}

fn check_operand(o: &Operand, v: &TsVector, data: Option<&mut PhraseData>) -> Ternary {
    let Some(positions) = operand_positions(o, v) else { return Ternary::No };
    if positions.is_empty() {
        // Present without positions: weights cannot be checked, positions not known.
        return if data.is_some() { Ternary::Maybe } else { Ternary::Yes };
    }
    let kept: Vec<u16> = positions
        .iter()
        .filter(|p| o.weights == 0 || o.weights & (1 << weight_of(**p)) != 0)
        .map(|p| pos_of(*p))
        .collect();
    if kept.is_empty() {
        return Ternary::No;
    }
    if let Some(d) = data {
        let mut kept = kept;
        kept.sort_unstable();
        kept.dedup();
        d.positions = kept;
    }
    Ternary::Yes
}

fn execute(n: &Node, v: &TsVector) -> Ternary {
    match n {
        Node::Val(o) => check_operand(o, v, None),
        Node::Stop => Ternary::No,
        Node::Not(x) => match execute(x, v) {
            Ternary::No => Ternary::Yes,
            Ternary::Yes => Ternary::No,
            Ternary::Maybe => Ternary::Maybe,
        },
        Node::And(a, b) => match execute(a, v) {
            Ternary::No => Ternary::No,
            l => match execute(b, v) {
                Ternary::No => Ternary::No,
                Ternary::Yes => l,
                Ternary::Maybe => Ternary::Maybe,
            },
        },
        Node::Or(a, b) => match execute(a, v) {
            Ternary::Yes => Ternary::Yes,
            l => match execute(b, v) {
                Ternary::No => l,
                r => r,
            },
        },
        // Positions unknown at a phrase: no match (PostgreSQL's choice for @@).
        Node::Phrase(..) => match phrase(n, v, &mut PhraseData::default()) {
            Ternary::Yes => Ternary::Yes,
            _ => Ternary::No,
        },
    }
}

const L_ONLY: u8 = 1;
const R_ONLY: u8 = 2;
const BOTH: u8 = 4;

/// Merges two sorted position lists: positions only in the left (`L_ONLY`), only in the
/// right (`R_ONLY`) or in both (`BOTH`), after adding the offsets.
fn merge(
    out: &mut PhraseData,
    l: &PhraseData,
    r: &PhraseData,
    emit: u8,
    lo: u32,
    ro: u32,
) -> Ternary {
    let (mut i, mut j) = (0, 0);
    let mut result = Vec::new();
    while i < l.positions.len() || j < r.positions.len() {
        let lp = match l.positions.get(i) {
            Some(p) => *p as u32 + lo,
            None if emit & R_ONLY == 0 => break,
            None => u32::MAX,
        };
        let rp = match r.positions.get(j) {
            Some(p) => *p as u32 + ro,
            None if emit & L_ONLY == 0 => break,
            None => u32::MAX,
        };
        let emitted = if lp < rp {
            i += 1;
            (emit & L_ONLY != 0).then_some(lp)
        } else if lp == rp {
            i += 1;
            j += 1;
            (emit & BOTH != 0).then_some(rp)
        } else {
            j += 1;
            (emit & R_ONLY != 0).then_some(rp)
        };
        if let Some(p) = emitted {
            result.push(p.min(u16::MAX as u32) as u16);
        }
    }
    out.positions = result;
    if out.positions.is_empty() {
        Ternary::No
    } else {
        Ternary::Yes
    }
}

fn phrase(n: &Node, v: &TsVector, data: &mut PhraseData) -> Ternary {
    match n {
        Node::Val(o) => check_operand(o, v, Some(data)),
        Node::Stop => Ternary::No,
        Node::Not(x) => match phrase(x, v, data) {
            Ternary::No => {
                data.negate = true;
                Ternary::Yes
            }
            Ternary::Yes if !data.positions.is_empty() => {
                data.negate = !data.negate;
                Ternary::Yes
            }
            Ternary::Yes => {
                data.negate = false;
                Ternary::No
            }
            Ternary::Maybe => Ternary::Maybe,
        },
        Node::Phrase(a, b, _) | Node::And(a, b) => {
            let (mut l, mut r) = (PhraseData::default(), PhraseData::default());
            let lm = phrase(a, v, &mut l);
            if lm == Ternary::No {
                return Ternary::No;
            }
            let rm = phrase(b, v, &mut r);
            if rm == Ternary::No {
                return Ternary::No;
            }
            if lm == Ternary::Maybe || rm == Ternary::Maybe {
                return Ternary::Maybe;
            }
            let (lo, ro) = match n {
                Node::Phrase(_, _, d) => {
                    data.width = *d as u32 + l.width + r.width;
                    (*d as u32 + r.width, 0)
                }
                _ => {
                    let w = l.width.max(r.width);
                    data.width = w;
                    (w - l.width, w - r.width)
                }
            };
            if l.negate && r.negate {
                merge(data, &l, &r, BOTH | L_ONLY | R_ONLY, lo, ro);
                data.negate = true;
                Ternary::Yes
            } else if l.negate {
                merge(data, &l, &r, R_ONLY, lo, ro)
            } else if r.negate {
                merge(data, &l, &r, L_ONLY, lo, ro)
            } else {
                merge(data, &l, &r, BOTH, lo, ro)
            }
        }
        Node::Or(a, b) => {
            let (mut l, mut r) = (PhraseData::default(), PhraseData::default());
            let lm = phrase(a, v, &mut l);
            let rm = phrase(b, v, &mut r);
            if lm == Ternary::No && rm == Ternary::No {
                return Ternary::No;
            }
            if lm == Ternary::Maybe || rm == Ternary::Maybe {
                return Ternary::Maybe;
            }
            if lm == Ternary::No {
                l.width = 0;
            }
            if rm == Ternary::No {
                r.width = 0;
            }
            let w = l.width.max(r.width);
            let (lo, ro) = (w - l.width, w - r.width);
            data.width = w;
            let (emit, negate) = match (l.negate, r.negate) {
                (true, true) => (BOTH, true),
                (true, false) => (L_ONLY, true),
                (false, true) => (R_ONLY, true),
                (false, false) => (BOTH | L_ONLY | R_ONLY, false),
            };
            let m = merge(data, &l, &r, emit, lo, ro);
            if negate {
                data.negate = true;
                Ternary::Yes
            } else {
                m
            }
        }
    }
}

/// The default weights of `ts_rank`: D, C, B, A.
pub const DEFAULT_WEIGHTS: [f32; 4] = [0.1, 0.2, 0.4, 1.0];

fn word_distance(w: i32) -> f32 {
    if w > 100 {
        return 1e-30;
    }
    (1.0 / (1.005 + 0.05 * ((w as f32) as f64 / 1.5 - 2.0).exp())) as f32
}

/// The query's distinct operand words, sorted (PostgreSQL ranks each once).
fn distinct_operands(q: &TsQuery) -> Vec<&Operand> {
    let mut ops = q.operands();
    ops.sort_by(|a, b| a.word.cmp(&b.word));
    ops.dedup_by(|a, b| a.word == b.word);
    ops
}

/// The lexemes of `v` an operand matches (its word, or words it prefixes).
fn entries<'a>(v: &'a TsVector, o: &'a Operand) -> Vec<&'a super::vector::Lexeme> {
    if o.prefix {
        v.with_prefix(&o.word).collect()
    } else {
        v.find(&o.word).into_iter().collect()
    }
}

fn rank_or(w: &[f32; 4], v: &TsVector, q: &TsQuery) -> f32 {
    let ops = distinct_operands(q);
    let mut res: f32 = 0.0;
    for o in &ops {
        for l in entries(v, o) {
            let positions: &[Pos] = if l.positions.is_empty() { &[0] } else { &l.positions };
            let mut resj: f32 = 0.0;
            let mut wjm: f32 = -1.0;
            let mut jm: i32 = 0;
            for (j, p) in positions.iter().enumerate() {
                let wp = w[weight_of(*p) as usize];
                resj += wp / ((j as i32 + 1) * (j as i32 + 1)) as f32;
                if wp > wjm {
                    wjm = wp;
                    jm = j as i32;
                }
            }
            let term = (wjm + resj - wjm / ((jm + 1) * (jm + 1)) as f32) as f64 / 1.64493406685;
            res = (res as f64 + term) as f32;
        }
    }
    if !ops.is_empty() {
        res /= ops.len() as f32;
    }
    res
}

fn rank_and(w: &[f32; 4], v: &TsVector, q: &TsQuery) -> f32 {
    let ops = distinct_operands(q);
    if ops.len() < 2 {
        return rank_or(w, v, q);
    }
    let none: [Pos; 1] = [MAX_POS_NULL];
    // Each operand's positions (the stand-in for a lexeme without any: `true`).
    let mut pos: Vec<Option<(&[Pos], bool)>> = vec![None; ops.len()];
    let mut res: f32 = -1.0;
    for i in 0..ops.len() {
        for l in entries(v, ops[i]) {
            let null_here = l.positions.is_empty();
            let here: &[Pos] = if null_here { &none } else { &l.positions };
            pos[i] = Some((here, null_here));
            for &(other, null_other) in pos[..i].iter().flatten() {
                for p in here {
                    for c in other {
                        let mut dist = (pos_of(*p) as i32 - pos_of(*c) as i32).abs();
                        if dist != 0 || null_here || null_other {
                            if dist == 0 {
                                dist = super::vector::MAX_POS as i32 + 1;
                            }
                            let curw = ((w[weight_of(*p) as usize]
                                * w[weight_of(*c) as usize]
                                * word_distance(dist))
                                as f64)
                                .sqrt() as f32;
                            res = if res < 0.0 {
                                curw
                            } else {
                                (1.0 - (1.0 - res as f64) * (1.0 - curw as f64)) as f32
                            };
                        }
                    }
                }
            }
        }
    }
    res
}

/// The position PostgreSQL gives a lexeme without positions when ranking (the last one).
const MAX_POS_NULL: Pos = super::vector::MAX_POS;

/// `ts_rank([weights,] v, q [, normalization])`
pub fn rank(weights: &[f32; 4], v: &TsVector, q: &TsQuery, method: i64) -> f32 {
    let Some(root) = &q.root else { return 0.0 };
    if v.lexemes.is_empty() {
        return 0.0;
    }
    let mut res = match root {
        Node::And(..) | Node::Phrase(..) => rank_and(weights, v, q),
        _ => rank_or(weights, v, q),
    };
    if res < 0.0 {
        res = 1e-20;
    }
    let length = || -> usize { v.lexemes.iter().map(|l| l.positions.len().max(1)).sum() };
    let size = v.lexemes.len();
    if method & 0x01 != 0 {
        res = (res as f64 / ((length() as f64 + 1.0).ln() / 2f64.ln())) as f32;
    }
    if method & 0x02 != 0 {
        let len = length();
        if len > 0 {
            res /= len as f32;
        }
    }
    if method & 0x08 != 0 {
        res /= size as f32;
    }
    if method & 0x10 != 0 {
        res = (res as f64 / ((size as f64 + 1.0).ln() / 2f64.ln())) as f32;
    }
    if method & 0x20 != 0 {
        res /= res + 1.0;
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> TsQuery {
        TsQuery::parse(text, &mut |_| {}).unwrap()
    }

    #[test]
    fn writes_as_postgres_does() {
        assert_eq!(q("fat & rat").to_text(), "'fat' & 'rat'");
        assert_eq!(q("fat | rat & cat").to_text(), "'fat' | 'rat' & 'cat'");
        assert_eq!(q("(fat | rat) & cat").to_text(), "( 'fat' | 'rat' ) & 'cat'");
        assert_eq!(q("!fat & !(a|b)").to_text(), "!'fat' & !( 'a' | 'b' )");
        assert_eq!(q("a <-> b <2> c").to_text(), "'a' <-> 'b' <2> 'c'");
        assert_eq!(q("a <-> (b <-> c)").to_text(), "'a' <-> ( 'b' <-> 'c' )");
        assert_eq!(q("a:*AB & b:ba").to_text(), "'a':*AB & 'b':AB");
        assert_eq!(q("!!a").to_text(), "!!'a'");
        assert!(TsQuery::parse("a & ", &mut |_| {}).is_err());
        assert!(TsQuery::parse("a <16385> b", &mut |_| {}).is_err());
    }

    #[test]
    fn phrase_matching_uses_positions() {
        let v = TsVector::parse("a:1 b:2").unwrap();
        assert!(q("a <-> !c").matches(&v));
        assert!(!q("!a <-> b").matches(&v));
        assert!(q("b <-> !c").matches(&v));
        assert!(q("a <-> b").matches(&v));
        assert!(!q("b <-> a").matches(&v));
        let stripped = TsVector::parse("a b").unwrap();
        assert!(!q("a <-> b").matches(&stripped));
        assert!(q("a:A").matches(&stripped));
    }

    #[test]
    fn stop_words_leave_phrase_distances() {
        let val = |w: &str| Node::Val(Operand { word: w.into(), weights: 0, prefix: false });
        let tree = Node::Phrase(
            Box::new(Node::Phrase(Box::new(val("fat")), Box::new(Node::Stop), 1)),
            Box::new(val("rat")),
            1,
        );
        let cleaned = TsQuery { root: clean_stopwords(tree) };
        assert_eq!(cleaned.to_text(), "'fat' <2> 'rat'");
    }
}
