//! COPY FROM STDIN (streamed in chunks of whole records, with limits on row and statement
//! size) and the text and CSV formats of COPY TO STDOUT.

use std::sync::Arc;

use sqlparser::ast;

use crate::catalog::Table;
use crate::error::{code, Result, SqlError};
use crate::expr::Ctx;
use crate::types::{now_micros, DataType, Value};

use crate::ed::*;
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
pub(crate) fn last_record_end(buffer: &[u8], csv: bool, scanned: &mut (usize, bool)) -> usize {
    if !csv {
        return buffer.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    }
    let (from, mut quoted) = *scanned;
    let mut end = 0;
    for (i, b) in buffer.iter().enumerate().skip(from) {
        match b {
            b'"' => quoted = !quoted,
            b'\n' if !quoted => end = i + 1,
            _ => {}
        }
    }
    *scanned = (buffer.len(), quoted);
    end
}

pub(crate) struct CopyState {
    /// Bytes received so far.
    pub(crate) bytes: u64,
    /// How far `buffer` was scanned for record ends, and whether that point is quoted.
    pub(crate) scanned: (usize, bool),
    pub(crate) table: Arc<Table>,
    pub(crate) columns: Vec<usize>,
    pub(crate) format: CopyFormat,
    pub(crate) buffer: Vec<u8>,
    pub(crate) rows: u64,
    pub(crate) implicit: bool,
}

pub(crate) fn copy_format(
    options: &[ast::CopyOption],
    legacy: &[ast::CopyLegacyOption],
) -> Result<CopyFormat> {
    let mut format = CopyFormat::Text;
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
            other => return Err(SqlError::unsupported(format!("the COPY option {other}"))),
        }
    }
    for o in legacy {
        match o {
            ast::CopyLegacyOption::Csv(_) => format = CopyFormat::Csv,
            ast::CopyLegacyOption::Binary => format = CopyFormat::Binary,
            other => return Err(SqlError::unsupported(format!("the COPY option {other}"))),
        }
    }
    Ok(format)
}

pub(crate) fn parse_copy_text_line(line: &str) -> Result<Vec<Option<String>>> {
    if line == "\\." {
        return Ok(vec![Some("\\.".into())]);
    }
    line.split('\t')
        .map(|f| {
            if f == "\\N" {
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

pub(crate) fn parse_csv(text: &str) -> Result<Vec<Option<Vec<Option<String>>>>> {
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
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    field.push('"');
                    chars.next();
                } else {
                    in_quotes = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' => {
                in_quotes = true;
                quoted_field = true;
            }
            ',' | '\n' => {
                // An unquoted empty field is NULL; a quoted one is the empty string.
                record.push(if field.is_empty() && !quoted_field {
                    None
                } else {
                    Some(std::mem::take(&mut field))
                });
                quoted_field = false;
                if c == '\n' {
                    records.push(Some(std::mem::take(&mut record)));
                    any = false;
                }
            }
            '\r' => {}
            c => field.push(c),
        }
    }
    if in_quotes {
        return Err(SqlError::new(code::BAD_COPY_FORMAT, "unterminated CSV quoted field"));
    }
    if any {
        record.push(if field.is_empty() && !quoted_field { None } else { Some(field) });
        records.push(Some(record));
    }
    Ok(records)
}

pub(crate) fn format_copy_line(
    row: &[Value],
    columns: &[(String, DataType)],
    csv: bool,
    zone: crate::zone::Zone,
) -> String {
    let mut line = String::new();
    for (i, (v, (_, ty))) in row.iter().zip(columns).enumerate() {
        if i > 0 {
            line.push(if csv { ',' } else { '\t' });
        }
        match v.to_text_in(*ty, zone) {
            None => {
                if !csv {
                    line.push_str("\\N");
                }
            }
            Some(s) => {
                if csv {
                    if s.is_empty() || s.contains([',', '"', '\n', '\r']) {
                        line.push('"');
                        line.push_str(&s.replace('"', "\"\""));
                        line.push('"');
                    } else {
                        line.push_str(&s);
                    }
                } else {
                    for c in s.chars() {
                        match c {
                            '\\' => line.push_str("\\\\"),
                            '\n' => line.push_str("\\n"),
                            '\t' => line.push_str("\\t"),
                            '\r' => line.push_str("\\r"),
                            c => line.push(c),
                        }
                    }
                }
            }
        }
    }
    line.push('\n');
    line
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
            let csv = copy.format == CopyFormat::Csv;
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
        let zone = self.zone();
        let copy = self.copy.as_mut().expect("copy in progress");
        let text = std::str::from_utf8(chunk).map_err(|_| {
            SqlError::new(
                code::BAD_ENCODING,
                "invalid byte sequence for encoding \"UTF8\" in COPY data",
            )
        })?;
        let table = copy.table.clone();
        let columns = copy.columns.clone();
        let records = match copy.format {
            CopyFormat::Csv => parse_csv(text)?,
            CopyFormat::Text => text
                .lines()
                .map(|l| Ok(Some(parse_copy_text_line(l)?)))
                .collect::<Result<Vec<_>>>()?,
            CopyFormat::Binary => Vec::new(),
        };
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
                    Some(s) => Value::parse_in(&s, table.columns[c].ty, zone)?,
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
        let zone = self.zone();
        let settings = crate::pg::settings::settings_in_force(
            &self.settings,
            self.txn.as_ref().map(|t| &t.local),
        );
        let env = session_env!(self, zone, &settings);
        let ctx = Ctx::new(&[], &env);
        let ts = self.txn.as_mut().expect("copy runs in a transaction");
        let mut w = session_writer!(self, ts, None);
        let defaults = w.defaults(&table, &env)?;
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
            let full = crate::exec::write::Writer::fit_row(&table, full, ctx.env.zone())?;
            w.insert_row(&table, full, None, &ctx)?;
        }
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
