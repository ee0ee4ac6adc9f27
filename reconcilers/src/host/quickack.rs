//! The SSH connection's TCP stream, acknowledging what it receives at once.
//!
//! Why: OpenSSH's server leaves Nagle's algorithm on for anything but an
//! interactive session, so on a forwarded channel it holds back a small
//! segment until the previous one is acknowledged. The engine writes a
//! response in pieces (`docker inspect`: about 4.8 KB, then the last 300
//! bytes), and Linux delays the acknowledgement of a request-response
//! stream by up to 40 ms to piggyback it on the next request: each such
//! response then waited 40 ms on a loopback connection (issue #33: 20
//! sequential inspects took 57-190 ms over SSH, 8 ms on the socket). The
//! server is the Playroom's sshd, out of play's hands, so the client asks
//! its kernel for an immediate acknowledgement (`TCP_QUICKACK`) after every
//! read that returned data. The kernel clears the flag as it sees fit, so
//! it is set again each time: one `setsockopt` per read, against a 40 ms
//! stall. Other systems keep their own delayed-ACK rules: the stream is
//! passed through unchanged there.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A TCP stream that asks for an immediate acknowledgement after each read.
#[derive(Debug)]
pub struct QuickAck(TcpStream);

impl QuickAck {
    pub fn new(stream: TcpStream) -> Self {
        QuickAck(stream)
    }

    /// Best effort: a failure leaves the kernel's delayed acknowledgement,
    /// which is slower, never wrong.
    fn acknowledge(&self) {
        #[cfg(target_os = "linux")]
        {
            let _ = socket2::SockRef::from(&self.0).set_tcp_quickack(true);
        }
    }
}

impl AsyncRead for QuickAck {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.0).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.acknowledge();
        }
        polled
    }
}

impl AsyncWrite for QuickAck {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    const EXCHANGES: usize = 20;

    /// A server answering each 16-byte request in two writes, as the
    /// engine answers an inspect (the second is what Nagle holds back).
    async fn server() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 16];
            for _ in 0..EXCHANGES {
                stream.read_exact(&mut request).await.unwrap();
                stream.write_all(&[1u8; 4800]).await.unwrap();
                stream.write_all(&[2u8; 300]).await.unwrap();
            }
        });
        (address, task)
    }

    /// Whether the client still acknowledges at once after `EXCHANGES`
    /// request-response exchanges (`TCP_QUICKACK` as the kernel reports it).
    async fn quick_after_exchanges<S: AsyncRead + AsyncWrite + Unpin>(
        mut stream: S,
        quickack: impl Fn(&S) -> bool,
    ) -> bool {
        let mut response = vec![0u8; 5100];
        let mut quick = true;
        for _ in 0..EXCHANGES {
            stream.write_all(&[0u8; 16]).await.unwrap();
            stream.read_exact(&mut response).await.unwrap();
            quick &= quickack(&stream);
        }
        assert!(response.ends_with(&[2u8; 300]), "the bytes pass through unchanged");
        quick
    }

    #[tokio::test]
    async fn every_read_leaves_the_socket_acknowledging_at_once() {
        // Without the wrapper the kernel goes over to delayed
        // acknowledgements (what stalled each response 40 ms).
        let (address, task) = server().await;
        let plain = TcpStream::connect(address).await.unwrap();
        plain.set_nodelay(true).unwrap();
        let quick = quick_after_exchanges(plain, |s| socket2::SockRef::from(s).tcp_quickack().unwrap()).await;
        task.await.unwrap();
        assert!(!quick, "a plain socket delays its acknowledgements after request-response exchanges");

        let (address, task) = server().await;
        let tcp = TcpStream::connect(address).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let wrapped = QuickAck::new(tcp);
        let quick = quick_after_exchanges(wrapped, |s| socket2::SockRef::from(&s.0).tcp_quickack().unwrap()).await;
        task.await.unwrap();
        assert!(quick, "through QuickAck every read asks for an immediate acknowledgement");
    }
}
