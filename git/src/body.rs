//! A request body as Git reads it. A gzip body (`Content-Encoding: gzip`,
//! what `git` sends for a large fetch negotiation) is inflated here, not
//! by `git http-backend`, so that the bound counts the bytes Git reads:
//! a few kilobytes on the wire can inflate to gigabytes.
//!
//! # Invariants
//!
//! - [`Body`] yields at most its bound of inflated bytes, and reads at
//!   most the same bound on the wire; past either it fails with
//!   [`BodyError::TooLarge`], having inflated at most one buffer more.
//! - Inflation is incremental (`flate2`'s decoder fed as bytes arrive, a
//!   `WouldBlock` meaning "more input"), so a body never sits whole in
//!   memory.

use std::io::{self, BufRead, Read};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use flate2::bufread::GzDecoder;
use play_model::scm::http::ByteReader;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};

/// How a body is encoded (`Content-Encoding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    Identity,
    Gzip,
}

impl Encoding {
    /// `None` for an encoding Git does not send (and play does not read).
    pub(crate) fn parse(header: Option<&str>) -> Option<Encoding> {
        match header.map(str::trim) {
            None | Some("") | Some("identity") => Some(Encoding::Identity),
            Some("gzip" | "x-gzip") => Some(Encoding::Gzip),
            Some(_) => None,
        }
    }
}

/// Why a body could not be read whole.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BodyError {
    #[error("the request is larger than {0} bytes")]
    TooLarge(u64),
    #[error("the request's gzip encoding is corrupt")]
    Corrupt,
}

impl BodyError {
    /// What a read of a [`Body`] failed with, if it was the body's own
    /// failure (not the connection's).
    pub(crate) fn of(error: &io::Error) -> Option<&BodyError> {
        error.get_ref().and_then(|inner| inner.downcast_ref::<BodyError>())
    }
}

/// The compressed bytes received and not yet inflated; a read with
/// nothing left and more to come is `WouldBlock`.
#[derive(Debug, Default)]
struct Feed {
    bytes: Vec<u8>,
    at: usize,
    ended: bool,
}

impl Read for Feed {
    fn read(&mut self, into: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(into.len());
        into[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Feed {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.at < self.bytes.len() || self.ended {
            Ok(&self.bytes[self.at..])
        } else {
            Err(io::ErrorKind::WouldBlock.into())
        }
    }

    fn consume(&mut self, n: usize) {
        self.at = (self.at + n).min(self.bytes.len());
        if self.at == self.bytes.len() {
            self.bytes.clear();
            self.at = 0;
        }
    }
}

/// A request body, inflated and bounded; see the [module
/// documentation](self).
pub(crate) struct Body {
    wire: ByteReader,
    decoder: Option<GzDecoder<Feed>>,
    /// Bytes yielded (inflated).
    read: u64,
    /// Bytes received on the wire.
    received: u64,
    limit: u64,
    /// The bound as the operator set it, for messages.
    bound: u64,
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body").field("read", &self.read).field("limit", &self.limit).finish_non_exhaustive()
    }
}

/// Compressed bytes taken from the wire at a time.
const WIRE_CHUNK: usize = 16 * 1024;

impl Body {
    pub(crate) fn new(wire: ByteReader, encoding: Encoding, bound: u64) -> Body {
        let decoder = (encoding == Encoding::Gzip).then(|| GzDecoder::new(Feed::default()));
        Body { wire, decoder, read: 0, received: 0, limit: bound, bound }
    }

    /// Bytes yielded so far.
    #[cfg(test)]
    pub(crate) fn read(&self) -> u64 {
        self.read
    }

    /// Lets `more` bytes be read past what was read so far (a push's pack
    /// after its commands), the wire bound following.
    pub(crate) fn allow(&mut self, more: u64) {
        self.limit = self.read.saturating_add(more);
    }

    /// Reads and drops what is left on the wire, up to the bound, so that
    /// the client, still sending, reads the answer sent before its body
    /// ended.
    pub(crate) async fn drain(mut self) {
        let mut buffer = vec![0u8; WIRE_CHUNK];
        while self.received < self.bound {
            match self.wire.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => self.received += n as u64,
            }
        }
    }

    /// Counts `n` bytes about to be yielded; past the bound, an error (and
    /// the caller yields nothing: a failed read fills no byte).
    fn count(&mut self, n: usize) -> io::Result<()> {
        let read = self.read + n as u64;
        if read > self.limit || self.received > self.limit.max(self.bound) {
            return Err(io::Error::other(BodyError::TooLarge(self.bound)));
        }
        self.read = read;
        Ok(())
    }
}

impl AsyncRead for Body {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, into: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            let Some(decoder) = this.decoder.as_mut() else {
                let before = into.filled().len();
                ready!(Pin::new(&mut this.wire).poll_read(cx, into))?;
                let n = into.filled().len() - before;
                this.received += n as u64;
                let counted = this.count(n);
                if counted.is_err() {
                    into.set_filled(before);
                }
                return Poll::Ready(counted);
            };
            match decoder.read(into.initialize_unfilled()) {
                Ok(n) => {
                    this.count(n)?;
                    into.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let mut chunk = [0u8; WIRE_CHUNK];
                    let mut wire = ReadBuf::new(&mut chunk);
                    ready!(Pin::new(&mut this.wire).poll_read(cx, &mut wire))?;
                    let feed = decoder.get_mut();
                    if wire.filled().is_empty() {
                        feed.ended = true;
                    } else {
                        feed.bytes.extend_from_slice(wire.filled());
                        this.received += wire.filled().len() as u64;
                        // Deflate blocks that inflate to nothing still
                        // count on the wire.
                        if this.received > this.limit.max(this.bound) {
                            return Poll::Ready(Err(io::Error::other(BodyError::TooLarge(this.bound))));
                        }
                    }
                }
                Err(_) => return Poll::Ready(Err(io::Error::other(BodyError::Corrupt))),
            }
        }
    }
}

#[cfg(test)]
mod tests {

    use std::io::Write as _;

    use super::*;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    /// `bytes` arriving a few at a time, as over a slow connection.
    fn trickle(bytes: Vec<u8>) -> ByteReader {
        let chunks: Vec<io::Result<std::io::Cursor<Vec<u8>>>> =
            bytes.chunks(7).map(|c| Ok(std::io::Cursor::new(c.to_vec()))).collect();
        Box::new(tokio_util::io::StreamReader::new(futures::stream::iter(chunks)))
    }

    async fn read_all(body: &mut Body) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        body.read_to_end(&mut out).await.map(|_| out)
    }

    #[tokio::test]
    async fn a_gzip_body_is_inflated_whatever_the_pieces_it_arrives_in() {
        let text: Vec<u8> = (0..50_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut body = Body::new(trickle(gzip(&text)), Encoding::Gzip, 1 << 20);
        assert_eq!(read_all(&mut body).await.unwrap(), text);
        let mut plain = Body::new(trickle(text.clone()), Encoding::Identity, 1 << 20);
        assert_eq!(read_all(&mut plain).await.unwrap(), text);
    }

    #[tokio::test]
    async fn a_gzip_bomb_stops_at_the_bound_counted_inflated() {
        let bomb = gzip(&vec![0u8; 64 << 20]);
        assert!(bomb.len() < 128 << 10, "64 MiB of zeros is {} bytes on the wire", bomb.len());
        let mut body = Body::new(trickle(bomb), Encoding::Gzip, 1 << 20);
        let error = read_all(&mut body).await.unwrap_err();
        assert_eq!(BodyError::of(&error), Some(&BodyError::TooLarge(1 << 20)));
        assert!(body.read() <= (1 << 20) + (64 << 10), "inflated {} bytes", body.read());
    }

    #[tokio::test]
    async fn the_wire_is_bounded_too_and_corrupt_gzip_is_an_error() {
        let mut plain = Body::new(trickle(vec![1u8; 5000]), Encoding::Identity, 4096);
        let error = read_all(&mut plain).await.unwrap_err();
        assert_eq!(BodyError::of(&error), Some(&BodyError::TooLarge(4096)));
        let mut corrupt = Body::new(trickle(b"\x1f\x8b\x08\x00not deflate at all".to_vec()), Encoding::Gzip, 4096);
        let error = read_all(&mut corrupt).await.unwrap_err();
        assert_eq!(BodyError::of(&error), Some(&BodyError::Corrupt));
    }

    #[tokio::test]
    async fn allow_lets_more_be_read_after_what_was_read() {
        let mut body = Body::new(trickle(vec![1u8; 3000]), Encoding::Identity, 2000);
        let mut first = [0u8; 1000];
        body.read_exact(&mut first).await.unwrap();
        body.allow(2000);
        assert_eq!(read_all(&mut body).await.unwrap().len(), 2000);
    }

    #[test]
    fn only_the_encodings_git_sends_are_read() {
        assert_eq!(Encoding::parse(None), Some(Encoding::Identity));
        assert_eq!(Encoding::parse(Some("gzip")), Some(Encoding::Gzip));
        assert_eq!(Encoding::parse(Some("x-gzip")), Some(Encoding::Gzip));
        assert_eq!(Encoding::parse(Some("br")), None);
    }
}
