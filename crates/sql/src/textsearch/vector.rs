//! `tsvector`: a sorted set of distinct lexemes, each with the positions (1 to 16383) and
//! weights (A to D) where it occurred. Its text form is PostgreSQL's: `'fat':2,4A 'rat':3`.

use crate::error::{code, Result, SqlError};

/// The largest position a lexeme keeps; later ones are stored as it.
pub const MAX_POS: u16 = 16383;
/// The most positions one lexeme keeps.
pub const MAX_POSITIONS: usize = 256;
/// The longest lexeme, in bytes.
pub const MAX_LEXEME: usize = 2047;
/// The largest tsvector, in bytes of its lexemes (PostgreSQL's 1 MB).
pub const MAX_BYTES: usize = (1 << 20) - 1;

/// A position and its weight: the weight (D = 0, C = 1, B = 2, A = 3) in the top two bits.
pub type Pos = u16;

/// The position part of a [`Pos`].
pub fn pos_of(p: Pos) -> u16 {
    p & 0x3fff
}

/// The weight part of a [`Pos`] (0 = D … 3 = A).
pub fn weight_of(p: Pos) -> u8 {
    (p >> 14) as u8
}

/// A position with a weight.
pub fn with_weight(p: Pos, weight: u8) -> Pos {
    (p & 0x3fff) | ((weight as u16 & 3) << 14)
}

/// One lexeme and its positions (sorted by position, each position once; empty when the
/// vector carries no positions for it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lexeme {
    pub word: String,
    pub positions: Vec<Pos>,
}

/// A tsvector: lexemes sorted by their bytes, each once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TsVector {
    pub lexemes: Vec<Lexeme>,
}

fn syntax(text: &str) -> SqlError {
    SqlError::new(code::SYNTAX, format!("syntax error in tsvector: \"{text}\""))
}

/// A weight letter's number (`A` = 3 … `D` = 0).
pub fn weight_letter(c: char) -> Option<u8> {
    Some(match c.to_ascii_uppercase() {
        'A' => 3,
        'B' => 2,
        'C' => 1,
        'D' => 0,
        _ => return None,
    })
}

/// Sorts positions and keeps each once (the highest weight of a repeated position), at
/// most `limit` of them.
pub fn unique_positions(positions: &mut Vec<Pos>, limit: usize) {
    positions.sort_by_key(|p| (pos_of(*p), std::cmp::Reverse(weight_of(*p))));
    positions.dedup_by_key(|p| pos_of(*p));
    positions.truncate(limit);
}

impl TsVector {
    /// Builds a vector from lexemes in any order: duplicates merge their positions.
    pub fn from_lexemes(mut lexemes: Vec<Lexeme>, limit: usize) -> Result<TsVector> {
        lexemes.sort_by(|a, b| a.word.cmp(&b.word));
        let mut out: Vec<Lexeme> = Vec::with_capacity(lexemes.len());
        for l in lexemes {
            match out.last_mut() {
                Some(last) if last.word == l.word => last.positions.extend(l.positions),
                _ => out.push(l),
            }
        }
        let mut bytes = 0usize;
        for l in &mut out {
            unique_positions(&mut l.positions, limit);
            bytes += l.word.len() + 2 * l.positions.len();
        }
        if bytes > MAX_BYTES {
            return Err(SqlError::new(
                code::PROGRAM_LIMIT,
                format!("string is too long for tsvector ({bytes} bytes, max {MAX_BYTES} bytes)"),
            ));
        }
        Ok(TsVector { lexemes: out })
    }

    /// Reads PostgreSQL's text form: lexemes (quoted with `'`, or bare) separated by white
    /// space, each optionally followed by `:` and positions with weight letters.
    pub fn parse(text: &str) -> Result<TsVector> {
        // (No text value holds NUL; the binary form ends lexemes with it.)
        if text.contains('\0') {
            return Err(syntax(text));
        }
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        let mut lexemes = Vec::new();
        loop {
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            if i >= chars.len() {
                break;
            }
            let mut word = String::new();
            if chars[i] == '\'' {
                word = read_quoted(&chars, &mut i).ok_or_else(|| syntax(text))?;
            } else {
                while let Some(&c) = chars.get(i) {
                    if c.is_whitespace() || (c == ':' && !word.is_empty()) {
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
            if word.is_empty() {
                return Err(syntax(text));
            }
            if word.len() > MAX_LEXEME {
                return Err(SqlError::new(
                    code::PROGRAM_LIMIT,
                    format!("word is too long ({} bytes, max {MAX_LEXEME} bytes)", word.len()),
                ));
            }
            let mut positions = Vec::new();
            if chars.get(i) == Some(&':') {
                i += 1;
                loop {
                    let start = i;
                    while chars.get(i).is_some_and(char::is_ascii_digit) {
                        i += 1;
                    }
                    if start == i {
                        return Err(syntax(text));
                    }
                    let digits: String = chars[start..i].iter().collect();
                    let n: u64 = digits.parse().unwrap_or(u64::MAX);
                    if n == 0 {
                        return Err(SqlError::new(
                            code::SYNTAX,
                            format!("wrong position info in tsvector: \"{text}\""),
                        ));
                    }
                    let mut p = n.min(MAX_POS as u64) as u16;
                    // (`*` is weight A, as PostgreSQL reads it.)
                    let w =
                        chars
                            .get(i)
                            .and_then(|c| if *c == '*' { Some(3) } else { weight_letter(*c) });
                    if let Some(w) = w {
                        p = with_weight(p, w);
                        i += 1;
                    }
                    positions.push(p);
                    if chars.get(i) == Some(&',') {
                        i += 1;
                        continue;
                    }
                    break;
                }
                if chars.get(i).is_some_and(|c| !c.is_whitespace()) {
                    return Err(syntax(text));
                }
            }
            lexemes.push(Lexeme { word, positions });
        }
        TsVector::from_lexemes(lexemes, MAX_POSITIONS)
    }

    /// PostgreSQL's text form.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (n, l) in self.lexemes.iter().enumerate() {
            if n > 0 {
                out.push(' ');
            }
            quote_into(&mut out, &l.word);
            for (k, p) in l.positions.iter().enumerate() {
                out.push(if k == 0 { ':' } else { ',' });
                out.push_str(&pos_of(*p).to_string());
                match weight_of(*p) {
                    3 => out.push('A'),
                    2 => out.push('B'),
                    1 => out.push('C'),
                    _ => {}
                }
            }
        }
        out
    }

    /// The lexeme `word`, if present.
    pub fn find(&self, word: &str) -> Option<&Lexeme> {
        self.lexemes.binary_search_by(|l| l.word.as_str().cmp(word)).ok().map(|i| &self.lexemes[i])
    }

    /// The lexemes starting with `prefix`.
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a Lexeme> + 'a {
        let start = self.lexemes.partition_point(|l| l.word.as_str() < prefix);
        self.lexemes[start..].iter().take_while(move |l| l.word.starts_with(prefix))
    }

    /// `setweight(v, w [, lexemes])`: every position (of the named lexemes) takes weight `w`.
    pub fn set_weight(mut self, weight: u8, only: Option<&[String]>) -> TsVector {
        for l in &mut self.lexemes {
            if only.is_some_and(|names| !names.contains(&l.word)) {
                continue;
            }
            for p in &mut l.positions {
                *p = with_weight(*p, weight);
            }
        }
        self
    }

    /// `strip(v)`: the lexemes without positions.
    pub fn strip(mut self) -> TsVector {
        for l in &mut self.lexemes {
            l.positions.clear();
        }
        self
    }

    /// `a || b`: the lexemes of both, `b`'s positions moved past `a`'s last position.
    pub fn concat(self, other: TsVector) -> Result<TsVector> {
        let shift = self
            .lexemes
            .iter()
            .flat_map(|l| l.positions.iter().map(|p| pos_of(*p)))
            .max()
            .unwrap_or(0);
        let mut lexemes = self.lexemes;
        for mut l in other.lexemes {
            for p in &mut l.positions {
                let moved = (pos_of(*p) as u32 + shift as u32).min(MAX_POS as u32) as u16;
                *p = with_weight(moved, weight_of(*p));
            }
            lexemes.push(l);
        }
        TsVector::from_lexemes(lexemes, MAX_POSITIONS)
    }

    /// `ts_delete(v, lexemes)`: without the named lexemes.
    pub fn delete(mut self, words: &[String]) -> TsVector {
        self.lexemes.retain(|l| !words.contains(&l.word));
        self
    }

    /// `ts_filter(v, weights)`: only positions of the given weights (lexemes left with
    /// none are dropped).
    pub fn filter(mut self, weights: &[u8]) -> TsVector {
        for l in &mut self.lexemes {
            l.positions.retain(|p| weights.contains(&weight_of(*p)));
        }
        self.lexemes.retain(|l| !l.positions.is_empty());
        self
    }
}

impl TsVector {
    /// PostgreSQL's binary form: the lexeme count, then each lexeme (NUL-terminated), its
    /// position count and positions.
    pub fn to_binary(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(self.lexemes.len() as i32).to_be_bytes());
        for l in &self.lexemes {
            out.extend_from_slice(l.word.as_bytes());
            out.push(0);
            out.extend_from_slice(&(l.positions.len() as u16).to_be_bytes());
            for p in &l.positions {
                out.extend_from_slice(&p.to_be_bytes());
            }
        }
        out
    }

    /// Reads [`TsVector::to_binary`]'s form; `None` when malformed.
    pub fn from_binary(b: &[u8]) -> Option<TsVector> {
        let mut r = b;
        let mut take = |n: usize| -> Option<&[u8]> {
            let (head, rest) = (r.get(..n)?, r.get(n..)?);
            r = rest;
            Some(head)
        };
        let count = i32::from_be_bytes(take(4)?.try_into().ok()?);
        let mut lexemes = Vec::new();
        for _ in 0..count.max(0) {
            let mut word = Vec::new();
            loop {
                match take(1)?[0] {
                    0 => break,
                    c => word.push(c),
                }
            }
            let word = String::from_utf8(word).ok().filter(|w| !w.is_empty())?;
            let n = u16::from_be_bytes(take(2)?.try_into().ok()?);
            let mut positions = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let p = u16::from_be_bytes(take(2)?.try_into().ok()?);
                if pos_of(p) == 0 {
                    return None;
                }
                positions.push(p);
            }
            lexemes.push(Lexeme { word, positions });
        }
        TsVector::from_lexemes(lexemes, MAX_POSITIONS).ok()
    }
}

/// A quoted lexeme from `chars[*i]` (its opening `'`): `''` is a quote, `\\` escapes the
/// next character. `None` when it is not closed.
pub(super) fn read_quoted(chars: &[char], i: &mut usize) -> Option<String> {
    let mut word = String::new();
    *i += 1;
    loop {
        match chars.get(*i)? {
            '\\' => {
                word.push(*chars.get(*i + 1)?);
                *i += 2;
            }
            '\'' if chars.get(*i + 1) == Some(&'\'') => {
                word.push('\'');
                *i += 2;
            }
            '\'' => {
                *i += 1;
                return Some(word);
            }
            c => {
                word.push(*c);
                *i += 1;
            }
        }
    }
}

/// `'word'` with `'` doubled and `\` doubled, as PostgreSQL writes lexemes.
pub fn quote_into(out: &mut String, word: &str) {
    out.push('\'');
    for c in word.chars() {
        if c == '\'' || c == '\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trip_sorts_merges_and_quotes() {
        let v = TsVector::parse("z:1 a:2 'it''s':3B a:1,1 'x y'").unwrap();
        assert_eq!(v.to_text(), "'a':1,2 'it''s':3B 'x y' 'z':1");
        assert_eq!(TsVector::parse("a:20000").unwrap().to_text(), "'a':16383");
        assert_eq!(TsVector::parse("a:1a,2b,3c,4d").unwrap().to_text(), "'a':1A,2B,3C,4");
        assert!(TsVector::parse("a:0").is_err());
        assert!(TsVector::parse("'a").is_err());
        assert_eq!(TsVector::parse("   ").unwrap().to_text(), "");
    }

    #[test]
    fn concat_moves_the_right_positions() {
        let a = TsVector::parse("a:1 b:2").unwrap();
        let b = TsVector::parse("a:1 c:1").unwrap();
        assert_eq!(a.concat(b).unwrap().to_text(), "'a':1,3 'b':2 'c':3");
    }
}
