//! COPY FROM STDIN (streamed in chunks of whole records, with limits on row and statement
//! size) and the text and CSV formats of COPY TO STDOUT.

use std::sync::Arc;

use sqlparser::ast;

use crate::catalog::Table;
use crate::error::{code, Result, SqlError};
use crate::expr::Ctx;
use crate::types::{now_micros, DataType, Value};

use crate::ed::*;
use crate::exec::triggers::{Cause, Event};
use crate::session::*;

/// COPY FROM STDIN is inserted in chunks of about this many bytes.
pub const COPY_CHUNK_BYTES: usize = 1 << 20;

/// The longest COPY row (a record without its line end past this is refused: 54000).
pub const COPY_ROW_BYTES_MAX: usize = 64 << 20;

/// The most data one COPY FROM STDIN may send (it is one transaction, held in memory until
/// its commit).
pub(crate) const COPY_BYTES_MAX: u64 = 1 << 30;

/// Where the last complete record of COPY data ends (0 when none does): after the last line
/// end outside a quoted CSV field. `scanned` carries how far the buffer was already scanned
/// and whether that point is inside quotes, so each byte is looked at once.
pub(crate) fn last_record_end(
    buffer: &[u8],
    csv: Option<(u8, u8)>,
    scanned: &mut (usize, bool),
) -> usize {
    let Some((quote, escape)) = csv else {
        return buffer.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    };
    let (from, mut quoted) = *scanned;
    let mut end = 0;
    let mut i = from;
    while i < buffer.len() {
        let b = buffer[i];
        if quoted && escape != quote && b == escape {
            i += 2;
            continue;
        }
        if b == quote {
            quoted = !quoted;
        } else if b == b'\n' && !quoted {
            end = i + 1;
        }
        i += 1;
    }
    *scanned = (buffer.len().max(i), quoted);
    end
}

/// COPY's options (`WITH (FORMAT csv, DELIMITER ';', …)` or the older `WITH CSV HEADER …`).
#[derive(Debug, Clone)]
pub(crate) struct CopyOptions {
    pub(crate) format: CopyFormat,
    pub(crate) delimiter: char,
    /// The text that stands for NULL.
    pub(crate) null: String,
    pub(crate) header: bool,
    pub(crate) quote: char,
    pub(crate) escape: char,
    /// Columns whose non-NULL values are always quoted (CSV output); `*`: all.
    pub(crate) force_quote: Vec<String>,
    /// Columns whose unquoted null text is read as text, not NULL (CSV input).
    pub(crate) force_not_null: Vec<String>,
    /// Columns whose quoted null text is read as NULL too (CSV input).
    pub(crate) force_null: Vec<String>,
}

impl CopyOptions {
    /// The quote and escape bytes that matter when finding record ends (CSV only).
    fn csv_bytes(&self) -> Option<(u8, u8)> {
        (self.format == CopyFormat::Csv).then_some((self.quote as u8, self.escape as u8))
    }
}

/// COPY's options, checked as PostgreSQL checks them; `to` for COPY TO.
pub(crate) fn copy_options(
    options: &[ast::CopyOption],
    legacy: &[ast::CopyLegacyOption],
    to: bool,
) -> Result<CopyOptions> {
    let mut format = CopyFormat::Text;
    let (mut delimiter, mut null, mut header) = (None, None, false);
    let (mut quote, mut escape) = (None, None);
    let (mut force_quote, mut force_not_null, mut force_null) = (None, None, None);
    let names = |cols: &[ast::Ident]| cols.iter().map(crate::bind::ident).collect::<Vec<_>>();
    for o in options {
        match o {
            ast::CopyOption::Format(f) => match f.value.to_lowercase().as_str() {
                "csv" => format = CopyFormat::Csv,
                "text" => format = CopyFormat::Text,
                "binary" => format = CopyFormat::Binary,
                other => {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER_VALUE,
                        format!("COPY format \"{other}\" not recognized"),
                    ))
                }
            },
            ast::CopyOption::Freeze(_) => {}
            ast::CopyOption::Delimiter(c) => delimiter = Some(*c),
            ast::CopyOption::Null(n) => null = Some(n.clone()),
            ast::CopyOption::Header(h) => header = *h,
            ast::CopyOption::Quote(c) => quote = Some(*c),
            ast::CopyOption::Escape(c) => escape = Some(*c),
            ast::CopyOption::ForceQuote(c) => force_quote = Some(names(c)),
            ast::CopyOption::ForceNotNull(c) => force_not_null = Some(names(c)),
            ast::CopyOption::ForceNull(c) => force_null = Some(names(c)),
            ast::CopyOption::Encoding(e) => {
                let e = e.to_uppercase().replace(['-', '_'], "");
                if e != "UTF8" && e != "UNICODE" {
                    return Err(SqlError::unsupported(format!(
                        "COPY ENCODING '{e}' (Kiln's data is UTF8)"
                    )));
                }
            }
        }
    }
    for o in legacy {
        match o {
            ast::CopyLegacyOption::Csv(csv) => {
                format = CopyFormat::Csv;
                for c in csv {
                    match c {
                        ast::CopyLegacyCsvOption::Header => header = true,
                        ast::CopyLegacyCsvOption::Quote(c) => quote = Some(*c),
                        ast::CopyLegacyCsvOption::Escape(c) => escape = Some(*c),
                        ast::CopyLegacyCsvOption::ForceQuote(c) => force_quote = Some(names(c)),
                        ast::CopyLegacyCsvOption::ForceNotNull(c) => {
                            force_not_null = Some(names(c))
                        }
                    }
                }
            }
            ast::CopyLegacyOption::Binary => format = CopyFormat::Binary,
            ast::CopyLegacyOption::Delimiter(c) => delimiter = Some(*c),
            ast::CopyLegacyOption::Null(n) => null = Some(n.clone()),
            ast::CopyLegacyOption::Header => header = true,
            other => return Err(SqlError::unsupported(format!("the COPY option {other}"))),
        }
    }
    let csv = format == CopyFormat::Csv;
    let syntax = |m: &str| SqlError::syntax(m.to_string());
    let unsupported = |m: &str| SqlError::new(code::FEATURE_NOT_SUPPORTED, m.to_string());
    if format == CopyFormat::Binary {
        if delimiter.is_some() {
            return Err(syntax("cannot specify DELIMITER in BINARY mode"));
        }
        if null.is_some() {
            return Err(syntax("cannot specify NULL in BINARY mode"));
        }
        if header {
            return Err(syntax("cannot specify HEADER in BINARY mode"));
        }
    }
    let delimiter = delimiter.unwrap_or(if csv { ',' } else { '\t' });
    let null = null.unwrap_or_else(|| if csv { String::new() } else { "\\N".into() });
    if !delimiter.is_ascii() {
        return Err(unsupported("COPY delimiter must be a single one-byte character"));
    }
    if delimiter == '\n' || delimiter == '\r' {
        return Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            "COPY delimiter cannot be newline or carriage return",
        ));
    }
    if null.contains(['\n', '\r']) {
        return Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            "COPY null representation cannot use newline or carriage return",
        ));
    }
    if !csv
        && (delimiter == '\\'
            || "abcdefghijklmnopqrstuvwxyz0123456789.".contains(delimiter.to_ascii_lowercase()))
    {
        return Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("COPY delimiter cannot be \"{}\"", delimiter.escape_default()),
        ));
    }
    if !csv && quote.is_some() {
        return Err(unsupported("COPY quote available only in CSV mode"));
    }
    if !csv && escape.is_some() {
        return Err(unsupported("COPY escape available only in CSV mode"));
    }
    let quote = quote.unwrap_or('"');
    let escape = escape.unwrap_or(quote);
    if !quote.is_ascii() {
        return Err(unsupported("COPY quote must be a single one-byte character"));
    }
    if !escape.is_ascii() {
        return Err(unsupported("COPY escape must be a single one-byte character"));
    }
    if csv && delimiter == quote {
        return Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            "COPY delimiter and quote must be different",
        ));
    }
    if csv && null.contains(delimiter) {
        return Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            "COPY delimiter must not appear in the NULL specification",
        ));
    }
    for (given, what, only_csv, only_to) in [
        (&force_quote, "force quote", true, Some(true)),
        (&force_not_null, "force not null", true, Some(false)),
        (&force_null, "force null", true, Some(false)),
    ] {
        if given.is_none() {
            continue;
        }
        if only_csv && !csv {
            return Err(unsupported(&format!("COPY {what} available only in CSV mode")));
        }
        if only_to == Some(true) && !to {
            return Err(unsupported(&format!("COPY {what} only available using COPY TO")));
        }
        if only_to == Some(false) && to {
            return Err(unsupported(&format!("COPY {what} only available using COPY FROM")));
        }
    }
    Ok(CopyOptions {
        format,
        delimiter,
        null,
        header,
        quote,
        escape,
        force_quote: force_quote.unwrap_or_default(),
        force_not_null: force_not_null.unwrap_or_default(),
        force_null: force_null.unwrap_or_default(),
    })
}

pub(crate) struct CopyState {
    /// Bytes received so far.
    pub(crate) bytes: u64,
    /// How far `buffer` was scanned for record ends, and whether that point is quoted.
    pub(crate) scanned: (usize, bool),
    pub(crate) table: Arc<Table>,
    pub(crate) columns: Vec<usize>,
    pub(crate) format: CopyFormat,
    pub(crate) options: CopyOptions,
    /// HEADER: the first line is still to be skipped.
    pub(crate) header_pending: bool,
    pub(crate) buffer: Vec<u8>,
    pub(crate) rows: u64,
    pub(crate) implicit: bool,
}

pub(crate) fn parse_copy_text_line(
    line: &str,
    delimiter: char,
    null: &str,
) -> Result<Vec<Option<String>>> {
    if line == "\\." {
        return Ok(vec![Some("\\.".into())]);
    }
    split_text_fields(line, delimiter)
        .into_iter()
        .map(|f| {
            if f == null {
                return Ok(None);
            }
            let mut out = String::with_capacity(f.len());
            let mut chars = f.chars();
            while let Some(c) = chars.next() {
                if c != '\\' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some('b') => out.push('\u{8}'),
                    Some('f') => out.push('\u{c}'),
                    Some('v') => out.push('\u{b}'),
                    Some('\\') => out.push('\\'),
                    Some(other) => out.push(other),
                    None => {
                        return Err(SqlError::new(
                            code::BAD_COPY_FORMAT,
                            "unterminated backslash escape in COPY data",
                        ))
                    }
                }
            }
            Ok(Some(out))
        })
        .collect()
}

/// A text-format line's fields: split at each delimiter that no backslash escapes.
fn split_text_fields(line: &str, delimiter: char) -> Vec<&str> {
    let mut fields = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == delimiter {
            fields.push(&line[start..i]);
            start = i + c.len_utf8();
        }
    }
    fields.push(&line[start..]);
    fields
}

/// CSV records: fields split at `o.delimiter`, quoted with `o.quote` (inside which
/// `o.escape` takes the next quote or escape literally); an unquoted field equal to the null
/// text is NULL.
pub(crate) fn parse_csv(text: &str, o: &CopyOptions) -> Result<Vec<Option<Vec<Option<String>>>>> {
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let mut record: Vec<Option<String>> = Vec::new();
    let mut field = String::new();
    let mut quoted_field = false;
    let mut in_quotes = false;
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        if in_quotes {
            if c == o.escape && o.escape != o.quote {
                match chars.peek() {
                    Some(&n) if n == o.quote || n == o.escape => {
                        field.push(n);
                        chars.next();
                    }
                    _ => field.push(c),
                }
            } else if c == o.quote {
                if o.escape == o.quote && chars.peek() == Some(&o.quote) {
                    field.push(o.quote);
                    chars.next();
                } else {
                    in_quotes = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        if c == o.quote {
            in_quotes = true;
            quoted_field = true;
        } else if c == o.delimiter || c == '\n' {
            // An unquoted field equal to the null text is NULL; a quoted one is text.
            record.push(if !quoted_field && field == o.null {
                field.clear();
                None
            } else {
                Some(std::mem::take(&mut field))
            });
            quoted_field = false;
            if c == '\n' {
                records.push(Some(std::mem::take(&mut record)));
                any = false;
            }
        } else if c != '\r' {
            field.push(c);
        }
    }
    if in_quotes {
        return Err(SqlError::new(code::BAD_COPY_FORMAT, "unterminated CSV quoted field"));
    }
    if any {
        record.push(if !quoted_field && field == o.null { None } else { Some(field) });
        records.push(Some(record));
    }
    Ok(records)
}

/// Where column `name`, given to a COPY option, is among the columns COPY reads or writes.
pub(crate) fn option_column(
    names: &[&str],
    name: &str,
    option: &str,
    table: Option<&Table>,
) -> Result<usize> {
    names.iter().position(|c| *c == name).ok_or_else(|| match table {
        Some(t) if t.columns.iter().any(|c| c.name == name) => SqlError::new(
            code::INVALID_COLUMN_REFERENCE,
            format!("{option} column \"{name}\" not referenced by COPY"),
        ),
        Some(t) => SqlError::new(
            code::UNDEFINED_COLUMN,
            format!("column \"{name}\" of relation \"{}\" does not exist", t.name),
        ),
        None => SqlError::new(code::UNDEFINED_COLUMN, format!("column \"{name}\" does not exist")),
    })
}

/// One line of COPY TO output: `row`'s values (`texts` when a header line is wanted: the
/// column names) in text or CSV form under options `o`; `force` marks the columns always
/// quoted.
pub(crate) fn format_copy_line(row: &[Option<String>], o: &CopyOptions, force: &[bool]) -> String {
    let csv = o.format == CopyFormat::Csv;
    let mut line = String::new();
    for (i, v) in row.iter().enumerate() {
        if i > 0 {
            line.push(o.delimiter);
        }
        let Some(s) = v else {
            line.push_str(&o.null);
            continue;
        };
        if csv {
            let quote = force.get(i).copied().unwrap_or(false)
                || *s == o.null
                || s.contains([o.delimiter, o.quote, '\n', '\r'])
                || (row.len() == 1 && s == "\\.");
            if quote {
                line.push(o.quote);
                for c in s.chars() {
                    if c == o.quote || c == o.escape {
                        line.push(o.escape);
                    }
                    line.push(c);
                }
                line.push(o.quote);
            } else {
                line.push_str(s);
            }
        } else {
            for c in s.chars() {
                match c {
                    '\\' => line.push_str("\\\\"),
                    '\n' => line.push_str("\\n"),
                    '\t' => line.push_str("\\t"),
                    '\r' => line.push_str("\\r"),
                    c if c == o.delimiter => {
                        line.push('\\');
                        line.push(c);
                    }
                    c => line.push(c),
                }
            }
        }
    }
    line.push('\n');
    line
}

/// The lines of COPY TO in text or CSV: the header line when asked for, then a line per row.
/// `table` is the table COPY reads, when it names one.
pub(crate) fn copy_out_lines(
    rows: &[Vec<Value>],
    columns: &[(String, DataType)],
    o: &CopyOptions,
    style: crate::style::Style,
    table: Option<&Table>,
) -> Result<Vec<String>> {
    let mut force = vec![false; columns.len()];
    let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
    for name in &o.force_quote {
        force[option_column(&names, name, "FORCE_QUOTE", table)?] = true;
    }
    let mut lines = Vec::with_capacity(rows.len() + 1);
    if o.header {
        let names: Vec<Option<String>> = columns.iter().map(|(n, _)| Some(n.clone())).collect();
        lines.push(format_copy_line(&names, o, &[]));
    }
    for r in rows {
        let texts: Vec<Option<String>> =
            r.iter().zip(columns).map(|(v, (_, ty))| v.to_text_in(*ty, style)).collect();
        lines.push(format_copy_line(&texts, o, &force));
    }
    Ok(lines)
}

impl Session {
    /// COPY FROM STDIN data (any chunking).
    pub fn copy_data(&mut self, data: &[u8]) -> Result<()> {
        self.count_copy_bytes(data.len())?;
        let Some(copy) = &mut self.copy else {
            return Err(SqlError::new(code::PROTOCOL_VIOLATION, "unexpected COPY data"));
        };
        if copy.format == CopyFormat::Binary {
            return Err(SqlError::new(
                code::PROTOCOL_VIOLATION,
                "binary COPY data is read by the protocol layer (Session::copy_rows)",
            ));
        }
        copy.buffer.extend_from_slice(data);
        // Insert complete records as they arrive, so memory stays bounded: everything up to
        // the last line end that is not inside a quoted CSV field.
        if copy.buffer.len() > COPY_CHUNK_BYTES {
            let csv = copy.options.csv_bytes();
            let cut = last_record_end(&copy.buffer, csv, &mut copy.scanned);
            if cut == 0 {
                if copy.buffer.len() > COPY_ROW_BYTES_MAX {
                    let e = SqlError::new(
                        code::PROGRAM_LIMIT,
                        format!("a COPY row is over the limit of {COPY_ROW_BYTES_MAX} bytes"),
                    );
                    self.fail();
                    return Err(e);
                }
                return Ok(());
            }
            let rest = copy.buffer.split_off(cut);
            let chunk = std::mem::replace(&mut copy.buffer, rest);
            copy.scanned = (0, false);
            if let Err(e) = self.copy_lines(&chunk) {
                self.fail();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Counts COPY data against the per-statement limit (54000 past it, failing the COPY).
    fn count_copy_bytes(&mut self, n: usize) -> Result<()> {
        let Some(copy) = &mut self.copy else {
            return Err(SqlError::new(code::PROTOCOL_VIOLATION, "unexpected COPY data"));
        };
        copy.bytes += n as u64;
        if copy.bytes > COPY_BYTES_MAX {
            let e = SqlError::new(
                code::PROGRAM_LIMIT,
                format!("COPY data is over the limit of {COPY_BYTES_MAX} bytes per statement"),
            )
            .hint("Split the data into several COPY statements (each is one transaction).");
            self.fail();
            return Err(e);
        }
        Ok(())
    }

    /// Rows of binary COPY FROM STDIN, decoded by the protocol layer: one value per COPY
    /// column, in the columns' types; `bytes` is how much data they came in.
    pub fn copy_rows(&mut self, rows: Vec<Vec<Value>>, bytes: usize) -> Result<()> {
        self.count_copy_bytes(bytes)?;
        let result =
            self.insert_copy_rows(rows.into_iter().map(|r| r.into_iter().map(Some).collect()));
        if result.is_err() {
            self.fail();
        }
        result
    }

    /// Ends a COPY FROM STDIN that failed outside the session (malformed binary data): the
    /// transaction fails, and `e` is the error to report.
    pub fn copy_abort(&mut self, e: SqlError) -> SqlError {
        self.copy = None;
        self.fail();
        e
    }

    pub(crate) fn copy_lines(&mut self, chunk: &[u8]) -> Result<()> {
        let style = self.style();
        let copy = self.copy.as_mut().expect("copy in progress");
        let text = std::str::from_utf8(chunk).map_err(|_| {
            SqlError::new(
                code::BAD_ENCODING,
                "invalid byte sequence for encoding \"UTF8\" in COPY data",
            )
        })?;
        let table = copy.table.clone();
        let columns = copy.columns.clone();
        let o = copy.options.clone();
        let mut records = match copy.format {
            CopyFormat::Csv => parse_csv(text, &o)?,
            CopyFormat::Text => text
                .lines()
                .map(|l| Ok(Some(parse_copy_text_line(l, o.delimiter, &o.null)?)))
                .collect::<Result<Vec<_>>>()?,
            CopyFormat::Binary => Vec::new(),
        };
        if copy.header_pending && !records.is_empty() {
            // HEADER: the first line names the columns and is not data.
            copy.header_pending = false;
            records.remove(0);
        }
        // FORCE_NOT_NULL / FORCE_NULL: the columns whose null text reads otherwise.
        let names: Vec<&str> = columns.iter().map(|&c| table.columns[c].name.as_str()).collect();
        let position = |n: &String, what: &str| option_column(&names, n, what, Some(&table));
        let not_null = o
            .force_not_null
            .iter()
            .map(|n| position(n, "FORCE_NOT_NULL"))
            .collect::<Result<Vec<_>>>()?;
        let null =
            o.force_null.iter().map(|n| position(n, "FORCE_NULL")).collect::<Result<Vec<_>>>()?;
        if !not_null.is_empty() || !null.is_empty() {
            for rec in records.iter_mut().flatten() {
                for &i in &not_null {
                    if let Some(f @ None) = rec.get_mut(i) {
                        *f = Some(o.null.clone());
                    }
                }
                for &i in &null {
                    if rec.get(i).is_some_and(|f| f.as_deref() == Some(o.null.as_str())) {
                        rec[i] = None;
                    }
                }
            }
        }
        let mut rows = Vec::with_capacity(records.len());
        for rec in records.into_iter().flatten() {
            if rec.len() == 1 && rec[0].as_deref() == Some("\\.") {
                break;
            }
            if rec.len() != columns.len() {
                return Err(SqlError::new(
                    code::BAD_COPY_FORMAT,
                    format!("COPY row has {} fields, expected {}", rec.len(), columns.len()),
                ));
            }
            let mut row = Vec::with_capacity(rec.len());
            for (field, &c) in rec.into_iter().zip(&columns) {
                row.push(Some(match field {
                    None => Value::Null,
                    Some(s) => Value::parse_in(&s, table.columns[c].ty, style)?,
                }));
            }
            rows.push(row);
        }
        self.insert_copy_rows(rows.into_iter())
    }

    /// Inserts COPY rows (one value per COPY column; a short row is refused, 22P04), the
    /// table's defaults filling the columns COPY does not name.
    fn insert_copy_rows(
        &mut self,
        records: impl Iterator<Item = Vec<Option<Value>>>,
    ) -> Result<()> {
        let copy = self.copy.as_mut().expect("copy in progress");
        let table = copy.table.clone();
        let columns = copy.columns.clone();
        let mut rows = Vec::new();
        for rec in records {
            if rec.len() != columns.len() {
                return Err(SqlError::new(
                    code::BAD_COPY_FORMAT,
                    format!("COPY row has {} fields, expected {}", rec.len(), columns.len()),
                ));
            }
            let mut row = vec![None; table.columns.len()];
            for (v, &c) in rec.into_iter().zip(&columns) {
                row[c] = v;
            }
            rows.push(row);
        }
        let n = rows.len() as u64;
        let style = self.style();
        let settings = crate::pg::settings::settings_in_force(
            &self.settings,
            self.txn.as_ref().map(|t| &t.local),
        );
        let env = session_env!(self, style, &settings);
        let ctx = Ctx::new(&[], &env);
        let ts = self.txn.as_mut().expect("copy runs in a transaction");
        let mut w = session_writer!(self, ts, None);
        let defaults = w.defaults(&table, &env)?;
        let before = crate::exec::write::Writer::has_row_triggers(&table, Event::Insert, true);
        // Rows copied into a partitioned table go to their partitions; rows copied into a
        // partition must lie within its bound.
        let router = match table.partitioning {
            Some(_) => Some(w.router(&table)?),
            None => None,
        };
        let own_check = match router {
            None => w.partition_check(&table)?,
            Some(_) => None,
        };
        for row in rows {
            self.activity.check_interrupt()?;
            let full = row
                .into_iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Some(v) => Ok(v),
                    None => match &defaults[i] {
                        Some(d) => d.eval(&[], &ctx),
                        None => Ok(Value::Null),
                    },
                })
                .collect::<Result<Vec<_>>>()?;
            let full = if before {
                match w.before_row(&table, Event::Insert, Some(full), None, None, ctx.env)? {
                    Some(row) => row,
                    None => continue,
                }
            } else {
                full
            };
            let full = crate::exec::write::Writer::fit_row(&table, full, ctx.env.style())?;
            let full = w.generate(&table, full, &ctx)?;
            let (target, full) = match &router {
                Some(router) => {
                    let leaf = router.route(&full, ctx.env.style())?.clone();
                    let Some(full) = w.routed_row(&leaf, full, &ctx)? else { continue };
                    (leaf, full)
                }
                None => {
                    if let Some(check) = &own_check {
                        check.check(&table, &full, ctx.env.style())?;
                    }
                    (table.clone(), full)
                }
            };
            w.insert_row(&target, full.clone(), None, &ctx)?;
            w.after_row(&target, Event::Insert, (Some(&full), None), None, Cause::Statement);
        }
        // The AFTER ROW triggers of the rows of this piece of the data (COPY runs them as
        // each piece is written, not once at its end as PostgreSQL does).
        w.end_of_statement(&table, &[], ctx.env)?;
        if let Some(c) = &mut self.copy {
            c.rows += n;
        }
        Ok(())
    }

    /// Ends COPY FROM STDIN: inserts what remains and commits when autocommitting.
    pub fn copy_done(&mut self) -> Result<Output> {
        let Some(copy) = &mut self.copy else {
            return Err(SqlError::new(code::PROTOCOL_VIOLATION, "unexpected CopyDone"));
        };
        let rest = std::mem::take(&mut copy.buffer);
        let result = self.copy_lines(&rest);
        let copy = self.copy.take().expect("copy in progress");
        let result = result.and_then(|()| {
            // AFTER STATEMENT triggers, at the end of the data.
            if !copy.table.triggers.iter().any(|t| !t.row) {
                return Ok(());
            }
            let style = self.style();
            let settings = crate::pg::settings::settings_in_force(
                &self.settings,
                self.txn.as_ref().map(|t| &t.local),
            );
            let env = session_env!(self, style, &settings);
            let ts = self.txn.as_mut().expect("copy runs in a transaction");
            let mut w = session_writer!(self, ts, None);
            w.end_of_statement(&copy.table, &[Event::Insert], &env)
        });
        if let Err(e) = result {
            self.fail();
            return Err(e);
        }
        if copy.implicit {
            if let Some(ts) = self.txn.take() {
                self.commit_txn(ts, None)?;
            }
        }
        Ok(Output::Command(format!("COPY {}", copy.rows)))
    }

    /// Aborts COPY FROM STDIN (CopyFail).
    pub fn copy_fail(&mut self, message: &str) -> SqlError {
        self.fail();
        SqlError::new(code::QUERY_CANCELED, format!("COPY from stdin failed: {message}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(sql_options: &str) -> CopyOptions {
        let stmt = crate::parse::parse(&format!("COPY t FROM STDIN {sql_options}")).unwrap();
        let ast::Statement::Copy { options, legacy_options, .. } = &stmt[0] else { panic!() };
        copy_options(options, legacy_options, false).unwrap()
    }

    /// What COPY TO writes, COPY FROM reads back, under every quoting option: values with
    /// delimiters, quotes, escapes, line ends, the null text and NULL itself.
    #[test]
    fn lines_written_read_back() {
        let values = [
            Some("plain"),
            Some(""),
            None,
            Some("a,b;c|d"),
            Some("q\"u'o\\te"),
            Some("line\nend\r"),
            Some("NULL"),
            Some("\\N"),
            Some("tab\there"),
        ];
        for opts in [
            "",
            "WITH (FORMAT csv)",
            "WITH (FORMAT csv, DELIMITER ';', NULL 'NULL')",
            "WITH (FORMAT csv, QUOTE '''', ESCAPE '\\')",
            "WITH DELIMITER '|' NULL 'NULL'",
            "WITH (DELIMITER ',')",
        ] {
            let o = options(opts);
            // In text format a value equal to the null text reads back as NULL, as in
            // PostgreSQL (only CSV quotes it).
            let row: Vec<Option<String>> = values
                .iter()
                .filter(|v| o.format == CopyFormat::Csv || **v != Some(o.null.as_str()))
                .map(|v| v.map(str::to_string))
                .collect();
            let line = format_copy_line(&row, &o, &[]);
            let back = match o.format {
                CopyFormat::Csv => parse_csv(&line, &o).unwrap().pop().flatten().unwrap(),
                _ => {
                    parse_copy_text_line(line.trim_end_matches('\n'), o.delimiter, &o.null).unwrap()
                }
            };
            assert_eq!(back, row, "{opts}: {line:?}");
            // The whole line is one record however it is cut.
            let csv = o.csv_bytes();
            assert_eq!(
                last_record_end(line.as_bytes(), csv, &mut (0, false)),
                line.len(),
                "{opts}"
            );
        }
    }

    #[test]
    fn options_are_checked() {
        for bad in [
            "WITH (FORMAT binary, DELIMITER ',')",
            "WITH (FORMAT binary, HEADER)",
            "WITH (QUOTE '\"')",
            "WITH (FORMAT csv, DELIMITER '\"')",
            "WITH (DELIMITER 'a')",
            "WITH (FORMAT csv, FORCE_QUOTE (a))",
            "WITH (ENCODING 'LATIN1')",
        ] {
            let stmt = crate::parse::parse(&format!("COPY t FROM STDIN {bad}")).unwrap();
            let ast::Statement::Copy { options, legacy_options, .. } = &stmt[0] else { panic!() };
            assert!(copy_options(options, legacy_options, false).is_err(), "{bad}");
        }
    }
}
