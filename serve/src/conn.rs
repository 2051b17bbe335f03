//! One HTTP connection's byte stream, held to what the listener promises.
//!
//! - **Strict request heads.** hyper's parser takes a bare line feed as a line ending
//!   (RFC 9112 lets a server refuse it, and a proxy in front may read the same bytes
//!   differently: request smuggling). [`Guarded`] follows the framing of every request on the
//!   connection (its head, then a `content-length` or chunked body) and turns a bare line feed
//!   inside a head into a NUL byte, which the parser refuses: hyper answers `400` and closes.
//! - **Writes that stall.** An answer whose bytes the client has not taken for the write
//!   timeout ends the connection (`TimedOut`), so a client that never reads holds nothing (an
//!   export's permit, a connection) for longer.
//!
//! May not touch: anything but the bytes (no parsing beyond the framing).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use kledger_runtime::metrics as m;

/// The longest request head followed (a longer one is left to hyper, which refuses it).
const HEAD_BYTES_MAX: usize = 64 << 10;

/// Where the byte stream from the client is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Framing {
    /// In a request head: the bytes so far, and whether the last byte was a carriage return.
    Head { bytes: Vec<u8>, cr: bool },
    /// In a body of known length: bytes left.
    Body(u64),
    /// In a chunked body, reading a chunk-size line (its bytes so far).
    ChunkSize(Vec<u8>),
    /// In a chunk's data: bytes left, then its line end.
    ChunkData(u64),
    /// At the line end after a chunk's data: bytes of it left.
    ChunkEnd(u8),
    /// In the trailer section after the last chunk: the current line's length.
    Trailers(usize),
    /// Lost (a framing hyper will refuse, or a head too long): bytes pass unchecked.
    Untracked,
}

impl Default for Framing {
    fn default() -> Self {
        Framing::Head {
            bytes: Vec::new(),
            cr: false,
        }
    }
}

/// The framing of what follows a complete head `head` (its bytes up to the blank line).
fn after_head(head: &[u8]) -> Framing {
    let text = String::from_utf8_lossy(head);
    let mut length: Option<u64> = None;
    let mut chunked = false;
    for line in text.split("\r\n").skip(1) {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked |= value
                .split(',')
                .any(|v| v.trim().eq_ignore_ascii_case("chunked"));
        } else if name.eq_ignore_ascii_case("content-length") {
            match value.trim().parse::<u64>() {
                Ok(n) if length.is_none_or(|l| l == n) => length = Some(n),
                // Two lengths, or one that is no number: hyper refuses the request.
                _ => return Framing::Untracked,
            }
        }
    }
    if chunked {
        Framing::ChunkSize(Vec::new())
    } else {
        match length {
            Some(n) if n > 0 => Framing::Body(n),
            _ => Framing::default(),
        }
    }
}

/// Follows `bytes` through the framing, turning each bare line feed of a head into a NUL.
/// Returns how many it turned.
fn follow(framing: &mut Framing, bytes: &mut [u8]) -> usize {
    let mut turned = 0;
    let mut i = 0;
    while i < bytes.len() {
        match framing {
            Framing::Head { bytes: head, cr } => {
                let b = bytes[i];
                if b == b'\n' && !*cr {
                    bytes[i] = 0;
                    turned += 1;
                    *framing = Framing::Untracked;
                    continue;
                }
                *cr = b == b'\r';
                if b == b'\n' {
                    // A line ended. Empty lines before the request line are skipped (RFC
                    // 9112 2.2); an empty line after it ends the head.
                    let line_empty = head.len() < 2 || head.ends_with(b"\n\r");
                    if line_empty && head.len() <= 1 {
                        head.clear();
                        i += 1;
                        continue;
                    }
                    head.push(b);
                    if line_empty {
                        *framing = after_head(head);
                    }
                } else {
                    head.push(b);
                    if head.len() > HEAD_BYTES_MAX {
                        *framing = Framing::Untracked;
                    }
                }
                i += 1;
            }
            Framing::Body(left) => {
                let n = (*left).min((bytes.len() - i) as u64);
                *left -= n;
                i += n as usize;
                if *left == 0 {
                    *framing = Framing::default();
                }
            }
            Framing::ChunkSize(line) => {
                let b = bytes[i];
                i += 1;
                if b != b'\n' {
                    line.push(b);
                    if line.len() > 1024 {
                        *framing = Framing::Untracked;
                    }
                    continue;
                }
                let text = String::from_utf8_lossy(line);
                let size = text.trim_end_matches('\r');
                let size = size.split(';').next().unwrap_or("").trim();
                *framing = match u64::from_str_radix(size, 16) {
                    Ok(0) => Framing::Trailers(0),
                    Ok(n) => Framing::ChunkData(n),
                    Err(_) => Framing::Untracked,
                };
            }
            Framing::ChunkData(left) => {
                let n = (*left).min((bytes.len() - i) as u64);
                *left -= n;
                i += n as usize;
                if *left == 0 {
                    *framing = Framing::ChunkEnd(2);
                }
            }
            Framing::ChunkEnd(left) => {
                i += 1;
                *left -= 1;
                if *left == 0 {
                    *framing = Framing::ChunkSize(Vec::new());
                }
            }
            Framing::Trailers(len) => {
                let b = bytes[i];
                i += 1;
                if b == b'\n' {
                    if *len == 0 {
                        *framing = Framing::default();
                    } else {
                        *len = 0;
                    }
                } else if b != b'\r' {
                    *len += 1;
                }
            }
            Framing::Untracked => return turned,
        }
    }
    turned
}

/// A connection's stream with strict request heads and a bound on stalled writes.
#[derive(Debug)]
pub struct Guarded<S> {
    inner: S,
    framing: Framing,
    write_timeout: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> Guarded<S> {
    /// `inner`, whose writes may stall at most `write_timeout`.
    pub fn new(inner: S, write_timeout: Duration) -> Self {
        Self {
            inner,
            framing: Framing::default(),
            write_timeout,
            stalled: None,
        }
    }

    /// After a write made no progress: an error once it has made none for the write timeout
    /// (the sleep wakes the task then, whether or not the socket does).
    fn stall(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let timeout = self.write_timeout;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client took no bytes of the answer for the write timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            let fresh = &mut buf.filled_mut()[before..];
            if follow(&mut this.framing, fresh) > 0 {
                metrics::counter!(m::API_REFUSED_TOTAL, "reason" => "bad_request_head")
                    .increment(1);
            }
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_write(cx, buf) {
            Poll::Pending => this.stall(cx).map(|r| r.map(|()| 0)),
            done => {
                this.stalled = None;
                done
            }
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_write_vectored(cx, bufs) {
            Poll::Pending => this.stall(cx).map(|r| r.map(|()| 0)),
            done => {
                this.stalled = None;
                done
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_flush(cx) {
            Poll::Pending => this.stall(cx),
            done => {
                this.stalled = None;
                done
            }
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The framing after feeding `input` in pieces of `step` bytes, and the bytes as changed.
    fn feed(input: &[u8], step: usize) -> (Framing, Vec<u8>, usize) {
        let mut framing = Framing::default();
        let mut out = input.to_vec();
        let mut turned = 0;
        for piece in out.chunks_mut(step) {
            turned += follow(&mut framing, piece);
        }
        (framing, out, turned)
    }

    #[test]
    fn well_formed_requests_pass_unchanged_and_end_at_a_head() {
        let stream = b"\r\nGET /v1/profile HTTP/1.1\r\nHost: a\r\n\r\n\
            POST /v1/search HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\r\n{\"query\":1}\n\
            POST /v1/intents HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\
            5\r\nab\ncd\r\n3;x=y\r\n\n\n\n\r\n0\r\nTrailer: t\r\n\r\n\
            GET /readyz HTTP/1.1\r\nHost: a\r\n\r\n";
        for step in [1, 2, 3, 7, 64, stream.len()] {
            let (framing, out, turned) = feed(stream, step);
            assert_eq!(turned, 0, "step {step}");
            assert_eq!(out, stream.to_vec(), "step {step}");
            assert_eq!(framing, Framing::default(), "step {step}");
        }
    }

    #[test]
    fn a_bare_line_feed_in_any_head_is_turned_into_a_nul() {
        for stream in [
            &b"GET / HTTP/1.1\nHost: a\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nHost: a\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\n\n",
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\nHost: a\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n\n\nGET / HTTP/1.1\r\nX: 1\n\r\n",
        ] {
            for step in [1, 5, stream.len()] {
                let (_, out, turned) = feed(stream, step);
                assert_eq!(
                    turned,
                    1,
                    "{:?} step {step}",
                    String::from_utf8_lossy(stream)
                );
                assert!(out.contains(&0), "{:?}", String::from_utf8_lossy(stream));
            }
        }
        // A line feed inside a body is the body's.
        let (_, out, turned) = feed(b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\na\nb", 4);
        assert_eq!(turned, 0);
        assert!(!out.contains(&0));
    }

    #[test]
    fn framing_hyper_refuses_is_left_untracked() {
        let (framing, _, _) = feed(
            b"POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
            8,
        );
        assert_eq!(framing, Framing::Untracked);
    }
}
