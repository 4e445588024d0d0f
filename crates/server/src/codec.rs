//! The protocol codec a connection uses after startup: pgwire's message codec behind checks
//! that keep one client from hurting others — a size limit read from each message's header,
//! a check that each message is exactly as long as it says, and a boundary around pgwire's
//! decoders, which panic on some malformed messages.

use bytes::BytesMut;
use pgwire::error::PgWireError;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::PgWireMessageServerCodec;
use tracing::debug;

/// The largest message a client may send (a query, a Bind with its values, a chunk of COPY
/// data). pgwire accepts up to 1 GiB and buffers a message whole before decoding it, so
/// without this check every connection could make the server hold a gigabyte.
pub(crate) const MESSAGE_BYTES_MIN_LIMIT: usize = 64 << 20;

/// pgwire's codec behind a check of each message's declared length, made as soon as its
/// header arrives (before the body is buffered).
pub(crate) struct LimitedCodec {
    pub(crate) inner: PgWireMessageServerCodec<()>,
    pub(crate) max_bytes: usize,
}

impl tokio_util::codec::Decoder for LimitedCodec {
    type Item = PgWireFrontendMessage;
    type Error = PgWireError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        let mut whole = None;
        if src.len() >= 5 {
            let declared = i32::from_be_bytes([src[1], src[2], src[3], src[4]]);
            if declared < 4 || declared as usize > self.max_bytes {
                return Err(PgWireError::MessageTooLarge(self.max_bytes, declared.max(0) as usize));
            }
            whole = Some(1 + declared as usize);
        }
        let before = src.len();
        // pgwire's decoders index into the body without checking every count a client
        // declares, and panic on a message that lies about them. Such a panic is a malformed
        // message, not a bug of ours: it is caught here and ends the connection with 08P01.
        DECODING.with(|d| d.set(true));
        let decoded =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.inner.decode(src)));
        DECODING.with(|d| d.set(false));
        match decoded {
            // A message must be exactly as long as it says: a Query with a NUL inside, or a
            // body with bytes past what its fields hold, would leave the rest to be read as
            // the next message, and the connection would never find its footing again.
            Ok(Ok(Some(_))) if whole.is_some_and(|w| before - src.len() != w) => {
                src.clear();
                Err(PgWireError::IoError(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "invalid message format: its contents do not fill its declared length",
                )))
            }
            Ok(result) => result,
            Err(_) => {
                src.clear();
                Err(PgWireError::IoError(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "malformed message (its counts or lengths do not match its body)",
                )))
            }
        }
    }
}

thread_local! {
    /// Set while pgwire decodes a client's message (see [`quiet_decoder_panics`]).
    static DECODING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs a panic hook that stays silent for panics inside pgwire's decoders (they are
/// reported to the client as 08P01 and logged at debug level) and reports every other panic
/// as the process would.
pub(crate) fn quiet_decoder_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if DECODING.with(|d| d.get()) {
            debug!(panic = %info, "malformed client message");
            return;
        }
        previous(info);
    }));
}

impl tokio_util::codec::Encoder<PgWireBackendMessage> for LimitedCodec {
    type Error = std::io::Error;

    fn encode(&mut self, item: PgWireBackendMessage, dst: &mut BytesMut) -> std::io::Result<()> {
        self.inner.encode(item, dst)
    }
}
