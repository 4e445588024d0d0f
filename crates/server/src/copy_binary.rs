//! PostgreSQL's binary COPY format, the bulk path of drivers such as pgx, asyncpg and
//! psycopg: a signature, flags and a header extension, then per row a field count and each
//! field as a length (-1 for NULL) and its binary wire form, then a count of -1. Values are
//! read and written with the same binary codecs as parameters and results ([`crate::wire`]).

use bytes::{BufMut, Bytes, BytesMut};
use kiln_sql::error::{code, SqlError};
use kiln_sql::exec::copy::COPY_ROW_BYTES_MAX;
use kiln_sql::style::Style;
use kiln_sql::types::{DataType, Value};

use crate::wire::{decode_param, encode_value};

const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

fn bad(message: impl Into<String>) -> SqlError {
    SqlError::new(code::BAD_COPY_FORMAT, message)
}

/// The reading side of binary COPY FROM STDIN: data arrives in messages of any size, and
/// whole rows are decoded as soon as all their bytes are in.
pub struct BinaryCopyIn {
    types: Vec<DataType>,
    buffer: Vec<u8>,
    header_read: bool,
    ended: bool,
}

impl BinaryCopyIn {
    /// For columns of these types.
    pub fn new(types: Vec<DataType>) -> BinaryCopyIn {
        BinaryCopyIn { types, buffer: Vec::new(), header_read: false, ended: false }
    }

    /// Takes one message of data; returns the rows it completed.
    pub fn feed(&mut self, data: &[u8]) -> Result<Vec<Vec<Value>>, SqlError> {
        if self.ended && !data.is_empty() {
            return Err(bad("received copy data after EOF marker"));
        }
        self.buffer.extend_from_slice(data);
        let mut rows = Vec::new();
        let mut pos = 0;
        if !self.header_read {
            match self.header(&self.buffer)? {
                Some(len) => {
                    pos = len;
                    self.header_read = true;
                }
                None => return Ok(rows),
            }
        }
        while !self.ended {
            match self.row(&self.buffer[pos..])? {
                Row::Incomplete => break,
                Row::End(len) => {
                    pos += len;
                    self.ended = true;
                }
                Row::Values(values, len) => {
                    pos += len;
                    rows.push(values);
                }
            }
        }
        if self.ended && pos < self.buffer.len() {
            return Err(bad("received copy data after EOF marker"));
        }
        self.buffer.drain(..pos);
        if self.buffer.len() > COPY_ROW_BYTES_MAX {
            return Err(SqlError::new(
                code::PROGRAM_LIMIT,
                format!("a COPY row is over the limit of {COPY_ROW_BYTES_MAX} bytes"),
            ));
        }
        Ok(rows)
    }

    /// At CopyDone: the data must end between rows (the end marker is optional, as in
    /// PostgreSQL).
    pub fn finish(&self) -> Result<(), SqlError> {
        if !self.buffer.is_empty() || !self.header_read {
            return Err(bad("unexpected EOF in COPY data"));
        }
        Ok(())
    }

    /// The header's length once all of it is in.
    fn header(&self, b: &[u8]) -> Result<Option<usize>, SqlError> {
        let fixed = SIGNATURE.len() + 8;
        if b.len() < SIGNATURE.len() {
            return if SIGNATURE.starts_with(b) {
                Ok(None)
            } else {
                Err(bad("COPY file signature not recognized"))
            };
        }
        if &b[..SIGNATURE.len()] != SIGNATURE {
            return Err(bad("COPY file signature not recognized"));
        }
        if b.len() < fixed {
            return Ok(None);
        }
        let flags = u32::from_be_bytes(b[11..15].try_into().map_err(|_| bad("bad header"))?);
        // Bit 16 says OIDs are included; the other high bits are critical and unknown.
        if flags & 0xFFFF_0000 != 0 {
            return Err(bad("invalid COPY file header (WITH OIDS or unrecognized critical flags)"));
        }
        let ext = i32::from_be_bytes(b[15..19].try_into().map_err(|_| bad("bad header"))?);
        if ext < 0 {
            return Err(bad("invalid COPY file header (missing length)"));
        }
        let len = fixed + ext as usize;
        if ext as usize > COPY_ROW_BYTES_MAX {
            return Err(bad("invalid COPY file header (extension too long)"));
        }
        Ok((b.len() >= len).then_some(len))
    }

    /// One row from the start of `b`.
    fn row(&self, b: &[u8]) -> Result<Row, SqlError> {
        let Some(count) = b.get(..2) else { return Ok(Row::Incomplete) };
        let count = i16::from_be_bytes([count[0], count[1]]);
        if count == -1 {
            return Ok(Row::End(2));
        }
        if count as usize != self.types.len() || count < 0 {
            return Err(bad(format!("row field count is {count}, expected {}", self.types.len())));
        }
        let mut pos = 2;
        let mut values = Vec::with_capacity(self.types.len());
        for ty in &self.types {
            let Some(len) = b.get(pos..pos + 4) else { return Ok(Row::Incomplete) };
            let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
            pos += 4;
            if len == -1 {
                values.push(Value::Null);
                continue;
            }
            if len < 0 {
                return Err(bad("invalid field size"));
            }
            if len as usize > COPY_ROW_BYTES_MAX {
                return Err(SqlError::new(
                    code::PROGRAM_LIMIT,
                    format!("a COPY row is over the limit of {COPY_ROW_BYTES_MAX} bytes"),
                ));
            }
            let Some(field) = b.get(pos..pos + len as usize) else { return Ok(Row::Incomplete) };
            pos += len as usize;
            // Binary forms are instants: no zone reads them.
            let raw = Bytes::copy_from_slice(field);
            values.push(decode_param(Some(&raw), 1, *ty, Style::DEFAULT)?);
        }
        Ok(Row::Values(values, pos))
    }
}

enum Row {
    Incomplete,
    End(usize),
    Values(Vec<Value>, usize),
}

/// The start of binary COPY TO STDOUT data: signature, no flags, no extension.
pub fn header() -> Bytes {
    let mut b = BytesMut::with_capacity(19);
    b.put_slice(SIGNATURE);
    b.put_u32(0);
    b.put_i32(0);
    b.freeze()
}

/// One row of binary COPY TO STDOUT data.
pub fn row(values: &[Value], types: &[DataType]) -> Result<Bytes, SqlError> {
    let mut b = BytesMut::new();
    b.put_i16(values.len() as i16);
    for (v, ty) in values.iter().zip(types) {
        // Binary forms are instants: no zone writes them.
        match encode_value(v, 1, *ty, Style::DEFAULT)? {
            None => b.put_i32(-1),
            Some(bytes) => {
                b.put_i32(bytes.len() as i32);
                b.put_slice(&bytes);
            }
        }
    }
    Ok(b.freeze())
}

/// The end of binary COPY data.
pub fn trailer() -> Bytes {
    Bytes::from_static(&[0xFF, 0xFF])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_written_read_back_in_any_chunking() {
        let types = vec![DataType::Int4, DataType::Text, DataType::Numeric(None)];
        let rows = vec![
            vec![Value::Int(1), Value::Text("a\tb".into()), Value::Null],
            vec![Value::Int(-7), Value::Null, Value::Numeric("12.50".parse().unwrap())],
        ];
        let mut data = header().to_vec();
        for r in &rows {
            data.extend_from_slice(&row(r, &types).unwrap());
        }
        data.extend_from_slice(&trailer());
        for chunk in [1, 3, 7, data.len()] {
            let mut reader = BinaryCopyIn::new(types.clone());
            let mut got = Vec::new();
            for piece in data.chunks(chunk) {
                got.extend(reader.feed(piece).unwrap());
            }
            reader.finish().unwrap();
            assert_eq!(got, rows, "chunks of {chunk}");
        }
        // A cut row, a wrong count, a bad signature, data after the end: 22P04.
        let mut reader = BinaryCopyIn::new(types.clone());
        reader.feed(&data[..data.len() - 5]).unwrap();
        assert_eq!(reader.finish().unwrap_err().code, "22P04");
        let mut reader = BinaryCopyIn::new(vec![DataType::Int4]);
        assert_eq!(reader.feed(&data).unwrap_err().code, "22P04");
        let mut reader = BinaryCopyIn::new(types.clone());
        assert_eq!(reader.feed(b"PGCOPX\n").unwrap_err().code, "22P04");
        let mut reader = BinaryCopyIn::new(types);
        let mut extra = data.clone();
        extra.push(0);
        assert_eq!(reader.feed(&extra).unwrap_err().code, "22P04");
    }
}
