//! `to_number(text, template)`: a number read by a `to_char` number template, with
//! PostgreSQL's rules — each `9`/`0` reads a digit when there is one, `.`/`D` the decimal
//! point, `,`/`G` a group separator when one is there, `S`/`MI`/`PL`/`SG`/`PR` the sign,
//! `L` a currency symbol, `V` shifts the point; other template characters skip one input
//! character; digits past the template's decimal places are dropped. The result is a numeric
//! with as many decimals as were read (C locale: `.` point, `,` group, `-`/`+` signs).

use crate::error::{code, Result, SqlError};
use crate::types::{DataType, Value};

/// The longest template or input read.
const TEXT_MAX: usize = 10_000;

/// One element of a number template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Nine,
    Zero,
    /// `.` or `D`.
    Point,
    /// `,`.
    Comma,
    /// `G`.
    Group,
    /// `L`: a currency symbol.
    Currency,
    /// `S`: a sign anchored to the number.
    Sign,
    Minus,
    Plus,
    SignHere,
    /// `PR`: a negative number in angle brackets.
    Brackets,
    /// `TH`/`th`: an ordinal suffix.
    Ordinal,
    /// `V`: digits after it shift the point left.
    Shift,
    /// `B`, `SP` and the like: read nothing.
    Nothing,
    /// Text that skips one input character.
    Char,
}

fn syntax(message: &str) -> SqlError {
    SqlError::new(code::SYNTAX, message.to_string())
}

/// The template's parts and what they say about the number.
#[derive(Default)]
struct Template {
    parts: Vec<Part>,
    /// Digit places before the point, and after `V`.
    pre: u32,
    shift: u32,
    fill: bool,
    point: bool,
    sign: bool,
    minus: bool,
    plus: bool,
    brackets: bool,
}

fn template(text: &str) -> Result<Template> {
    let mut t = Template::default();
    let mut rest = text;
    while !rest.is_empty() {
        // Keywords are all upper or all lower case, as PostgreSQL's list has them.
        let word = |w: &str| rest.starts_with(w) || rest.starts_with(&w.to_ascii_lowercase()[..]);
        let (part, len) = if word("EEEE") {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                "\"EEEE\" not supported for input",
            ));
        } else if word("RN") {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                "\"RN\" not supported for input",
            ));
        } else if word("FM") {
            t.fill = true;
            rest = &rest[2..];
            continue;
        } else if word("MI") {
            (Part::Minus, 2)
        } else if word("PL") {
            (Part::Plus, 2)
        } else if word("SG") {
            (Part::SignHere, 2)
        } else if word("PR") {
            (Part::Brackets, 2)
        } else if word("TH") {
            (Part::Ordinal, 2)
        } else if word("SP") {
            (Part::Nothing, 2)
        } else {
            let mut chars = rest.chars();
            let c = chars.next().unwrap_or(' ');
            let part = match c {
                '9' => Part::Nine,
                '0' => Part::Zero,
                '.' | 'D' | 'd' => Part::Point,
                ',' => Part::Comma,
                'G' | 'g' => Part::Group,
                'L' | 'l' => Part::Currency,
                'S' | 's' => Part::Sign,
                'V' | 'v' => Part::Shift,
                'B' | 'b' => Part::Nothing,
                '"' => {
                    // Quoted text: each character skips one of the input.
                    let (text, after) = super::to_char::quoted(chars.as_str());
                    t.parts.extend(text.chars().map(|_| Part::Char));
                    rest = after;
                    continue;
                }
                '\\' if chars.as_str().starts_with('"') => {
                    chars.next();
                    t.parts.push(Part::Char);
                    rest = chars.as_str();
                    continue;
                }
                _ => Part::Char,
            };
            (part, c.len_utf8())
        };
        rest = &rest[len..];
        match part {
            Part::Nine | Part::Zero => {
                if t.brackets {
                    return Err(syntax(if part == Part::Nine {
                        "\"9\" must be ahead of \"PR\""
                    } else {
                        "\"0\" must be ahead of \"PR\""
                    }));
                }
                if t.shift > 0 || t.parts.contains(&Part::Shift) {
                    t.shift += 1;
                } else if !t.point {
                    t.pre += 1;
                }
            }
            Part::Point => {
                if t.point {
                    return Err(syntax("multiple decimal points"));
                }
                if t.parts.contains(&Part::Shift) {
                    return Err(syntax("cannot use \"V\" and decimal point together"));
                }
                t.point = true;
            }
            Part::Sign => {
                if t.sign {
                    return Err(syntax("cannot use \"S\" twice"));
                }
                if t.plus || t.minus || t.brackets {
                    return Err(syntax(
                        "cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together",
                    ));
                }
                t.sign = true;
            }
            Part::Minus | Part::Plus | Part::SignHere => {
                if t.sign {
                    return Err(syntax(match part {
                        Part::Minus => "cannot use \"S\" and \"MI\" together",
                        Part::Plus => "cannot use \"S\" and \"PL\" together",
                        _ => "cannot use \"S\" and \"SG\" together",
                    }));
                }
                t.minus |= part != Part::Plus;
                t.plus |= part != Part::Minus;
            }
            Part::Brackets => {
                if t.sign || t.plus || t.minus {
                    return Err(syntax(
                        "cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together",
                    ));
                }
                t.brackets = true;
            }
            Part::Shift if t.point => {
                return Err(syntax("cannot use \"V\" and decimal point together"));
            }
            _ => {}
        }
        t.parts.push(part);
    }
    Ok(t)
}

/// `to_number(input, template)`; NULL for an empty template, as in PostgreSQL.
pub fn to_number(input: &str, template_text: &str) -> Result<Value> {
    if template_text.len() > TEXT_MAX || input.len() > TEXT_MAX {
        return Err(SqlError::new(
            code::PROGRAM_LIMIT,
            format!("a to_number template and input are at most {TEXT_MAX} bytes each"),
        ));
    }
    if template_text.is_empty() {
        return Ok(Value::Null);
    }
    let t = template(template_text)?;
    let s = input.as_bytes();
    let mut r = Reader {
        s,
        text: input,
        pos: 0,
        sign: None,
        digits: String::new(),
        pre: 0,
        post: 0,
        point: false,
    };
    let post_places = {
        let at = t.parts.iter().position(|p| *p == Part::Point);
        at.map_or(0, |i| {
            t.parts[i..].iter().filter(|p| matches!(p, Part::Nine | Part::Zero)).count()
        })
    };
    for part in &t.parts {
        if r.pos >= s.len() {
            break;
        }
        match part {
            Part::Nine | Part::Zero | Part::Point => r.numeric_part(&t, *part, post_places),
            // A group separator is read only when the input has one there (never in fill
            // mode, where PostgreSQL leaves it to the next digit place to pass over).
            Part::Comma | Part::Group => {
                if t.fill || s[r.pos] != b',' {
                    continue;
                }
            }
            Part::Currency => {
                r.skip_non_data(1);
                continue;
            }
            Part::Ordinal => {
                if t.point {
                    continue;
                }
                r.skip_non_data(2);
                continue;
            }
            Part::Minus | Part::Plus | Part::SignHere => {
                let b = s[r.pos];
                let here = match part {
                    Part::Minus => b == b'-',
                    Part::Plus => b == b'+',
                    _ => b == b'-' || b == b'+',
                };
                if here {
                    r.sign = Some(b);
                } else {
                    r.skip_non_data(1);
                    continue;
                }
            }
            Part::Char => {
                r.step();
                continue;
            }
            Part::Sign | Part::Brackets | Part::Shift | Part::Nothing => continue,
        }
        // Past the character the part read or looked at (a whole one, when not ASCII).
        r.step();
    }
    // The number as PostgreSQL hands it to numeric input: a sign or a blank, the digits
    // (a point with nothing after it dropped).
    let digits = r.digits.strip_suffix('.').unwrap_or(&r.digits);
    let number = format!("{}{digits}", r.sign.map_or(' ', |b| b as char));
    let scale = r.post;
    let precision = t.pre + t.shift + scale;
    if digits.is_empty() {
        return Err(SqlError::new(
            code::INVALID_TEXT,
            format!("invalid input syntax for type numeric: \"{number}\""),
        ));
    }
    let unsigned = if digits.starts_with('.') { format!("0{digits}") } else { digits.to_string() };
    let signed = if r.sign == Some(b'-') { format!("-{unsigned}") } else { unsigned };
    let d = Value::parse(&signed, DataType::Numeric(None))?;
    let typmod = (precision > 0).then_some((precision.min(1000), scale as i32));
    let mut d = match d.cast(DataType::Numeric(typmod))? {
        Value::Numeric(d) => d,
        other => return Ok(other),
    };
    if t.shift > 0 {
        // Shifted right by V's places: a multiplication by 10^-places, at 16 decimals as
        // PostgreSQL's power() gives it.
        let shifted = d.shifted(t.shift)?;
        d = shifted.with_scale(shifted.scale().max(16))?;
    }
    Ok(Value::Numeric(d))
}

/// The input being read and the number gathered so far.
struct Reader<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
    sign: Option<u8>,
    digits: String,
    pre: u32,
    post: u32,
    point: bool,
}

impl Reader<'_> {
    fn step(&mut self) {
        if let Some(c) = self.text[self.pos..].chars().next() {
            self.pos += c.len_utf8();
        }
    }

    /// Skips up to `n` characters that are not part of a number.
    fn skip_non_data(&mut self, n: usize) {
        for _ in 0..n {
            match self.s.get(self.pos) {
                Some(b) if !b"0123456789.,+-".contains(b) => self.step(),
                _ => break,
            }
        }
    }

    /// A digit place or the point: a sign before the first digit, a digit or the point, and
    /// a sign right after the last digit.
    fn numeric_part(&mut self, t: &Template, part: Part, post_places: usize) {
        let s = self.s;
        if s[self.pos] == b' ' {
            self.pos += 1;
        }
        if self.pos >= s.len() {
            return;
        }
        if self.sign.is_none() && part != Part::Point && self.pre + self.post == 0 {
            let b = s[self.pos];
            if b == b'-' || (t.brackets && b == b'<') || b == b'+' {
                self.sign = Some(if b == b'+' { b'+' } else { b'-' });
                self.pos += 1;
            }
        }
        if self.pos >= s.len() {
            return;
        }
        let mut read = false;
        let b = s[self.pos];
        if b.is_ascii_digit() {
            if self.point && self.post as usize == post_places {
                return;
            }
            self.digits.push(b as char);
            if self.point {
                self.post += 1;
            } else {
                self.pre += 1;
            }
            read = true;
        } else if t.point && !self.point && b == b'.' {
            self.digits.push('.');
            self.point = true;
            read = true;
        }
        if self.sign.is_none() && self.pre + self.post > 0 {
            let next = s.get(self.pos + 1).copied();
            if t.sign && read && next.is_some_and(|n| !n.is_ascii_digit()) {
                if let Some(n @ (b'-' | b'+')) = next {
                    self.pos += 1;
                    self.sign = Some(n);
                }
            } else if !read && !t.sign && (t.plus || t.minus) && matches!(b, b'-' | b'+') {
                self.sign = Some(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(input: &str, template: &str) -> Result<String> {
        to_number(input, template).map(|v| v.to_text(DataType::Numeric(None)).unwrap_or_default())
    }

    #[test]
    fn reads_signs_groups_and_points() {
        assert_eq!(num("12,454.8-", "99G999D9S").unwrap(), "-12454.8");
        assert_eq!(num("$1,234.56", "L9G999D99").unwrap(), "1234.56");
        assert_eq!(num("<123>", "999PR").unwrap(), "-123");
        assert_eq!(num("1234.56", "9999.9").unwrap(), "1234.5");
        assert_eq!(num("1234", "9G999").unwrap(), "1234");
        assert_eq!(num("5.01-", "FM9.999999MI").unwrap(), "-5.01");
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert_eq!(num("abc", "999").unwrap_err().code, "22P02");
        assert_eq!(num("1234.5", "999.9").unwrap_err().code, "22003");
        assert_eq!(num("1", "9.9.9").unwrap_err().code, "42601");
        assert_eq!(num("1", "9EEEE").unwrap_err().code, "0A000");
        assert_eq!(to_number("1", "").unwrap(), Value::Null);
        for input in ["", "-", ".", "é", "é1é", "1é2", "<", "9".repeat(40).as_str()] {
            for template in ["999", "9x9", "S9", "FM9.9MI", "\"é\"9", "L9", "9V99", "99th", "9,9"]
            {
                let _ = to_number(input, template);
            }
        }
    }

    #[test]
    fn no_input_or_template_panics() {
        // Every pairing of short templates and inputs built from the pieces that matter
        // (multi-byte characters beside digits, signs, points and separators).
        let parts = ["9", "0", ".", ",", "G", "S", "MI", "PR", "L", "V", "TH", "x", "\"é\"", "FM"];
        let chars = ["1", "-", "+", ".", ",", "<", "é", " ", "$"];
        for a in parts {
            for b in parts {
                let template = format!("{a}{b}");
                for x in chars {
                    for y in chars {
                        for z in chars {
                            let _ = to_number(&format!("{x}{y}{z}"), &template);
                        }
                    }
                }
            }
        }
    }
}
