//! A deliberately raw PostgreSQL protocol client: it sends whatever bytes it is given (so the
//! fuzzer controls lengths, encodings and message order exactly) and reads the server's
//! messages one at a time.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One message from the server: its type byte and body.
#[derive(Debug, Clone)]
pub struct Message {
    /// The type byte (`E` error, `Z` ReadyForQuery, …).
    pub kind: u8,
    /// The body, after the length.
    pub body: Vec<u8>,
}

impl Message {
    /// An ErrorResponse's fields: (severity, SQLSTATE, message).
    pub fn error(&self) -> Option<(String, String, String)> {
        if self.kind != b'E' {
            return None;
        }
        let (mut severity, mut code, mut message) = (String::new(), String::new(), String::new());
        for field in self.body.split(|b| *b == 0) {
            let Some((&tag, value)) = field.split_first() else { continue };
            let value = String::from_utf8_lossy(value).into_owned();
            match tag {
                b'S' => severity = value,
                b'C' => code = value,
                b'M' => message = value,
                _ => {}
            }
        }
        Some((severity, code, message))
    }
}

/// What reading up to ReadyForQuery found.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Errors: (severity, SQLSTATE, message).
    pub errors: Vec<(String, String, String)>,
    /// Rows received.
    pub rows: usize,
    /// Command completions received.
    pub completions: usize,
    /// ReadyForQuery arrived.
    pub ready: bool,
    /// The server closed the connection.
    pub closed: bool,
    /// Nothing more arrived within the time allowed.
    pub timed_out: bool,
}

/// A connection.
pub struct Connection {
    stream: TcpStream,
}

/// A frontend message: type byte and body (the length is computed).
pub fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 5);
    out.push(kind);
    out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// A NUL-terminated string.
pub fn cstr(s: &[u8]) -> Vec<u8> {
    let mut v = s.to_vec();
    v.push(0);
    v
}

impl Connection {
    /// Connects and completes startup (trust authentication) with the given settings.
    pub fn open(addr: SocketAddr, options: &[(&str, &str)]) -> std::io::Result<Connection> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10))?;
        stream.set_nodelay(true)?;
        let mut c = Connection { stream };
        let mut body = Vec::new();
        body.extend_from_slice(&196608i32.to_be_bytes());
        for (k, v) in [("user", "kiln"), ("database", "kiln")].iter().chain(options) {
            body.extend(cstr(k.as_bytes()));
            body.extend(cstr(v.as_bytes()));
        }
        body.push(0);
        let mut startup = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        startup.extend(body);
        c.send(&startup)?;
        let outcome = c.read_until_ready(Duration::from_secs(30));
        if !outcome.ready {
            return Err(std::io::Error::other(format!("startup failed: {outcome:?}")));
        }
        Ok(c)
    }

    /// Sends raw bytes.
    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Reads one message, or `None` when the server closed the connection (or after
    /// `timeout` with nothing: `Err(TimedOut)`).
    pub fn read(&mut self, timeout: Duration) -> std::io::Result<Option<Message>> {
        self.stream.set_read_timeout(Some(timeout))?;
        let mut header = [0u8; 5];
        if let Err(e) = self.stream.read_exact(&mut header) {
            return match e.kind() {
                std::io::ErrorKind::UnexpectedEof
                | std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::BrokenPipe => Ok(None),
                _ => Err(e),
            };
        }
        let len = i32::from_be_bytes([header[1], header[2], header[3], header[4]]);
        if !(4..=(1 << 30)).contains(&len) {
            return Err(std::io::Error::other(format!("server sent a bad length {len}")));
        }
        let mut body = vec![0u8; len as usize - 4];
        self.stream.read_exact(&mut body)?;
        Ok(Some(Message { kind: header[0], body }))
    }

    /// Reads messages until ReadyForQuery, the end of the connection, or `timeout` without a
    /// message.
    pub fn read_until_ready(&mut self, timeout: Duration) -> Outcome {
        self.read_until_ready_in(timeout, false)
    }

    /// As [`Connection::read_until_ready`]; `extended` says the statement came through the
    /// extended protocol (a failed COPY then waits for a Sync of its own).
    fn read_until_ready_in(&mut self, timeout: Duration, extended: bool) -> Outcome {
        let mut outcome = Outcome::default();
        loop {
            match self.read(timeout) {
                Ok(Some(m)) => match m.kind {
                    b'Z' => {
                        outcome.ready = true;
                        return outcome;
                    }
                    b'E' => outcome.errors.extend(m.error()),
                    b'D' => outcome.rows += 1,
                    b'C' => outcome.completions += 1,
                    // COPY IN: the fuzzer has no data to send; fail it so the server answers.
                    b'G' => {
                        let mut fail = message(b'f', &cstr(b"fuzzer sends no COPY data"));
                        if extended {
                            fail.extend(message(b'S', &[]));
                        }
                        if self.send(&fail).is_err() {
                            outcome.closed = true;
                            return outcome;
                        }
                    }
                    _ => {}
                },
                Ok(None) => {
                    outcome.closed = true;
                    return outcome;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    outcome.timed_out = true;
                    return outcome;
                }
                Err(_) => {
                    outcome.closed = true;
                    return outcome;
                }
            }
        }
    }

    /// A simple-protocol query.
    pub fn query(&mut self, sql: &[u8], timeout: Duration) -> Outcome {
        if self.send(&message(b'Q', &cstr(sql))).is_err() {
            return Outcome { closed: true, ..Outcome::default() };
        }
        self.read_until_ready(timeout)
    }

    /// The same statement through Parse / Bind / Describe / Execute / Sync, no parameters.
    pub fn extended(&mut self, sql: &[u8], timeout: Duration) -> Outcome {
        let mut bytes = Vec::new();
        let mut parse = cstr(b"");
        parse.extend(cstr(sql));
        parse.extend(0i16.to_be_bytes());
        bytes.extend(message(b'P', &parse));
        let mut bind = cstr(b"");
        bind.extend(cstr(b""));
        bind.extend([0, 0, 0, 0, 0, 0]);
        bytes.extend(message(b'B', &bind));
        bytes.extend(message(b'D', &[b'P', 0]));
        let mut execute = cstr(b"");
        execute.extend(0i32.to_be_bytes());
        bytes.extend(message(b'E', &execute));
        bytes.extend(message(b'S', &[]));
        if self.send(&bytes).is_err() {
            return Outcome { closed: true, ..Outcome::default() };
        }
        self.read_until_ready_in(timeout, true)
    }
}
