//! The text search parser: splits a document into tokens of PostgreSQL's default parser's
//! types (words, hyphenated words and their parts, numbers, e-mail addresses, hosts, URLs,
//! file paths), skipping what it does not index (spaces and punctuation, XML tags and
//! entities, URL protocols).
//!
//! It follows the default parser's rules for the common forms; rarer ones (say, `a.b`
//! read as a file name rather than a host) may split differently from PostgreSQL's. It reads
//! characters as PostgreSQL does in a database of the C locale, as Kiln's databases are:
//! every character beyond ASCII is a letter (so `—` or `“` join the word beside them, where
//! a UTF-8 locale would make them punctuation).

/// A token's type, as `ts_token_type('default')` numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenType {
    AsciiWord = 1,
    Word = 2,
    NumWord = 3,
    Email = 4,
    Url = 5,
    Host = 6,
    SFloat = 7,
    Version = 8,
    HWordNumPart = 9,
    HWordPart = 10,
    HWordAsciiPart = 11,
    NumHWord = 15,
    AsciiHWord = 16,
    HWord = 17,
    UrlPath = 18,
    File = 19,
    Float = 20,
    Int = 21,
    UInt = 22,
}

impl TokenType {
    /// Whether a language's stemmer takes tokens of this type (the others are kept as
    /// written, lower-cased), as PostgreSQL's built-in configurations map them.
    pub fn is_word(self) -> bool {
        matches!(
            self,
            TokenType::AsciiWord
                | TokenType::Word
                | TokenType::AsciiHWord
                | TokenType::HWord
                | TokenType::HWordAsciiPart
                | TokenType::HWordPart
        )
    }

    /// Whether the token is all ASCII letters (a configuration may stem those with
    /// another language, as `russian` stems them as English).
    pub fn is_ascii(self) -> bool {
        matches!(self, TokenType::AsciiWord | TokenType::AsciiHWord | TokenType::HWordAsciiPart)
    }
}

/// A token: its type and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenType,
    pub text: String,
}

fn word_kind(s: &[char]) -> TokenType {
    if s.iter().all(|c| c.is_ascii_alphabetic()) {
        TokenType::AsciiWord
    } else if s.iter().all(|c| is_letter(*c)) {
        TokenType::Word
    } else if s.iter().all(|c| c.is_ascii_digit()) {
        TokenType::UInt
    } else {
        TokenType::NumWord
    }
}

/// A letter as PostgreSQL's parser reads one in the C locale (Kiln's): an ASCII letter, or
/// any character beyond ASCII.
fn is_letter(c: char) -> bool {
    c.is_ascii_alphabetic() || !c.is_ascii()
}

fn is_word_char(c: char) -> bool {
    is_letter(c) || c.is_ascii_digit()
}

fn has_letter(s: &[char]) -> bool {
    s.iter().any(|c| is_letter(*c))
}

/// Tokenizes `text`, reading each character a bounded number of times.
pub fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let n = chars.len();
    let s = |a: usize, b: usize| -> String { chars[a..b].iter().collect() };
    let run_end = |mut j: usize| {
        while j < n && is_word_char(chars[j]) {
            j += 1;
        }
        j
    };
    // The labels of a dotted name from `start` (alphanumerics and inner hyphens), and
    // where it ends.
    // The labels of a dotted name from `start` (alphanumerics and inner hyphens; inner
    // underscores too in a host's labels before its last), and where it ends.
    let dotted = |start: usize, underscores: bool| -> (Vec<(usize, usize)>, usize) {
        let mut labels = Vec::new();
        let mut j = start;
        loop {
            let a = j;
            while j < n
                && (is_word_char(chars[j])
                    || ((chars[j] == '-' || (underscores && chars[j] == '_'))
                        && j > a
                        && j + 1 < n
                        && is_word_char(chars[j + 1])))
            {
                j += 1;
            }
            if j == a {
                break;
            }
            if j + 1 < n && chars[j] == '.' && is_word_char(chars[j + 1]) {
                labels.push((a, j));
                j += 1;
                continue;
            }
            // The last label ends at an underscore.
            let cut = chars[a..j].iter().position(|c| *c == '_').map_or(j, |k| a + k);
            labels.push((a, cut));
            break;
        }
        let end = labels.last().map_or(start, |l| l.1);
        (labels, end)
    };
    let is_host = |labels: &[(usize, usize)]| -> bool {
        labels.len() >= 2
            && labels
                .last()
                .is_some_and(|&(a, b)| b - a >= 2 && chars[a..b].iter().all(|c| is_letter(*c)))
            && labels.iter().all(|&(a, b)| has_letter(&chars[a..b]) || b > a)
    };
    // A path from `j` (at a `/`): path characters.
    let path_end = |mut j: usize| -> usize {
        while j < n
            && (is_word_char(chars[j]) || matches!(chars[j], '/' | '.' | '_' | '-' | '~' | '%'))
        {
            j += 1;
        }
        // A trailing dot or hyphen ends the sentence, not the path.
        while j > 0 && matches!(chars[j - 1], '.' | '-') {
            j -= 1;
        }
        j
    };
    // A host from `a` to `hend`, alone or (`with_path`) as a URL with the path after it:
    // the URL, its host and its path. Where the tokens end.
    let host_or_url = |out: &mut Vec<Token>, a: usize, hend: usize, with_path: bool| -> usize {
        if !with_path {
            out.push(Token { kind: TokenType::Host, text: s(a, hend) });
            return hend;
        }
        let pend = path_end(hend);
        out.push(Token { kind: TokenType::Url, text: s(a, pend) });
        out.push(Token { kind: TokenType::Host, text: s(a, hend) });
        out.push(Token { kind: TokenType::UrlPath, text: s(hend, pend) });
        pend
    };
    while i < n {
        let c = chars[i];
        // An XML/HTML tag or entity: skipped.
        if c == '<' {
            let j = i + 1 + usize::from(chars.get(i + 1) == Some(&'/'));
            if chars.get(j).is_some_and(|c| c.is_ascii_alphabetic()) {
                // To the first `>` (a `<` first: no tag), so each character is read once.
                if let Some(close) = chars[j..].iter().position(|c| matches!(c, '<' | '>')) {
                    if chars[j + close] == '>' {
                        i = j + close + 1;
                        continue;
                    }
                }
            }
            i += 1;
            continue;
        }
        if c == '&' {
            let j = i + 1;
            let k = if chars.get(j) == Some(&'#') {
                let mut k = j + 1;
                while k < n && chars[k].is_ascii_alphanumeric() {
                    k += 1;
                }
                k
            } else {
                let mut k = j;
                while k < n && chars[k].is_ascii_alphabetic() {
                    k += 1;
                }
                k
            };
            if k > j && chars.get(k) == Some(&';') {
                i = k + 1;
                continue;
            }
            i += 1;
            continue;
        }
        // A file path from the root: `/usr/bin/x`.
        if c == '/' && chars.get(i + 1).is_some_and(|c| is_word_char(*c)) {
            let end = path_end(i + 1);
            out.push(Token { kind: TokenType::File, text: s(i, end) });
            i = end;
            continue;
        }
        // A signed number.
        if (c == '-' || c == '+') && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
            let (kind, end) = number(&chars, i + 1);
            let kind = if kind == TokenType::UInt { TokenType::Int } else { kind };
            out.push(Token { kind, text: s(i, end) });
            i = end;
            continue;
        }
        if !is_word_char(c) {
            i += 1;
            continue;
        }
        // An e-mail address: a local part of word characters, `.`, `-`, `_`, `+`, then `@`
        // and a host.
        {
            let mut j = i;
            while j < n && (is_word_char(chars[j]) || matches!(chars[j], '.' | '-' | '_' | '+')) {
                j += 1;
            }
            if chars.get(j) == Some(&'@') && is_word_char(chars[j - 1]) {
                let (host, hend) = dotted(j + 1, true);
                if is_host(&host) {
                    out.push(Token { kind: TokenType::Email, text: s(i, hend) });
                    i = hend;
                    continue;
                }
            }
        }
        let end = run_end(i);
        // A protocol: `http://` then a host and path.
        if chars[i..end].iter().all(|c| c.is_ascii_alphabetic())
            && chars.get(end) == Some(&':')
            && chars.get(end + 1) == Some(&'/')
            && chars.get(end + 2) == Some(&'/')
        {
            let at = end + 3;
            let (labels, hend) = dotted(at, true);
            if is_host(&labels) {
                let with_path = chars.get(hend) == Some(&'/');
                i = host_or_url(&mut out, at, hend, with_path);
                continue;
            }
            i = at;
            continue;
        }
        // A dotted name (its labels may hold `-` and `_`): number, version, host or file
        // name.
        let (host, hend) = dotted(i, true);
        let (file, fend) = dotted(i, false);
        if file.len() >= 2 || is_host(&host) {
            let all_digits = |a: usize, b: usize| chars[a..b].iter().all(char::is_ascii_digit);
            if all_digits(i, end) {
                let (kind, nend) = number(&chars, i);
                if matches!(kind, TokenType::Float | TokenType::SFloat | TokenType::Version)
                    && !chars.get(nend).is_some_and(|c| is_word_char(*c))
                {
                    out.push(Token { kind, text: s(i, nend) });
                    i = nend;
                    continue;
                }
            }
            let (labels, dend) = if is_host(&host) { (host, hend) } else { (file, fend) };
            if is_host(&labels) {
                let with_path = chars.get(dend) == Some(&'/')
                    && chars.get(dend + 1).is_some_and(|c| is_word_char(*c));
                i = host_or_url(&mut out, i, dend, with_path);
                continue;
            }
            let fend = if chars.get(dend) == Some(&'/') { path_end(dend) } else { dend };
            out.push(Token { kind: TokenType::File, text: s(i, fend) });
            i = fend;
            continue;
        }
        // A relative path: `x/y`.
        if chars.get(end) == Some(&'/') && chars.get(end + 1).is_some_and(|c| is_word_char(*c)) {
            let pend = path_end(end);
            out.push(Token { kind: TokenType::File, text: s(i, pend) });
            i = pend;
            continue;
        }
        // A hyphenated word: parts that each have a letter.
        if has_letter(&chars[i..end]) && chars.get(end) == Some(&'-') {
            let mut parts = vec![(i, end)];
            let mut j = end;
            while chars.get(j) == Some(&'-') && chars.get(j + 1).is_some_and(|c| is_word_char(*c)) {
                let pe = run_end(j + 1);
                if !has_letter(&chars[j + 1..pe]) {
                    break;
                }
                parts.push((j + 1, pe));
                j = pe;
            }
            if parts.len() >= 2 {
                let kinds: Vec<TokenType> =
                    parts.iter().map(|&(a, b)| word_kind(&chars[a..b])).collect();
                let compound = if kinds.iter().all(|k| *k == TokenType::AsciiWord) {
                    TokenType::AsciiHWord
                } else if kinds.contains(&TokenType::NumWord) {
                    TokenType::NumHWord
                } else {
                    TokenType::HWord
                };
                out.push(Token { kind: compound, text: s(i, j) });
                for (&(a, b), k) in parts.iter().zip(kinds) {
                    let kind = match k {
                        TokenType::AsciiWord => TokenType::HWordAsciiPart,
                        TokenType::Word => TokenType::HWordPart,
                        _ => TokenType::HWordNumPart,
                    };
                    out.push(Token { kind, text: s(a, b) });
                }
                // A hyphen that ended the compound is no sign of a number after it
                // (`SHA-256`'s `256`).
                i = if chars.get(j) == Some(&'-') { j + 1 } else { j };
                continue;
            }
        }
        // A number with an exponent: `1e10`.
        if chars[i].is_ascii_digit() {
            let (kind, nend) = number(&chars, i);
            if kind == TokenType::SFloat && nend >= end {
                out.push(Token { kind, text: s(i, nend) });
                i = nend;
                continue;
            }
        }
        out.push(Token { kind: word_kind(&chars[i..end]), text: s(i, end) });
        i = end;
    }
    out
}

/// A number from `start` (at a digit): its type and end.
fn number(chars: &[char], start: usize) -> (TokenType, usize) {
    let n = chars.len();
    let digits = |mut j: usize| {
        while j < n && chars[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    let mut j = digits(start);
    let mut groups = 1;
    while j + 1 < n && chars[j] == '.' && chars[j + 1].is_ascii_digit() {
        j = digits(j + 1);
        groups += 1;
    }
    if groups > 2 {
        return (TokenType::Version, j);
    }
    // An exponent.
    if j < n && matches!(chars[j], 'e' | 'E') {
        let mut k = j + 1;
        if k < n && matches!(chars[k], '+' | '-') {
            k += 1;
        }
        if k < n && chars[k].is_ascii_digit() {
            let e = digits(k);
            if !(e < n && is_word_char(chars[e])) {
                return (TokenType::SFloat, e);
            }
        }
    }
    (if groups == 2 { TokenType::Float } else { TokenType::UInt }, j)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<(u8, String)> {
        tokens(text).into_iter().map(|t| (t.kind as u8, t.text)).collect()
    }

    #[test]
    fn splits_as_the_default_parser() {
        let t = |k: TokenType, s: &str| (k as u8, s.to_string());
        use TokenType::*;
        assert_eq!(
            split("The well-known fox, 42 -7 3.14 1.5e3 10.0.0.1"),
            vec![
                t(AsciiWord, "The"),
                t(AsciiHWord, "well-known"),
                t(HWordAsciiPart, "well"),
                t(HWordAsciiPart, "known"),
                t(AsciiWord, "fox"),
                t(UInt, "42"),
                t(Int, "-7"),
                t(Float, "3.14"),
                t(SFloat, "1.5e3"),
                t(Version, "10.0.0.1"),
            ]
        );
        assert_eq!(
            split("foo@bar.com http://example.com/x/y.html www.example.com /usr/bin/x"),
            vec![
                t(Email, "foo@bar.com"),
                t(Url, "example.com/x/y.html"),
                t(Host, "example.com"),
                t(UrlPath, "/x/y.html"),
                t(Host, "www.example.com"),
                t(File, "/usr/bin/x"),
            ]
        );
        assert_eq!(
            split("<b>café</b> &amp; naïve-test c-3 2024-01-02"),
            vec![
                t(Word, "café"),
                t(HWord, "naïve-test"),
                t(HWordPart, "naïve"),
                t(HWordAsciiPart, "test"),
                t(AsciiWord, "c"),
                t(Int, "-3"),
                t(UInt, "2024"),
                t(Int, "-01"),
                t(Int, "-02"),
            ]
        );
    }
}
