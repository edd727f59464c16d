//! The server's limits (docs/server.md, Limits): a request rate per token
//! (a token bucket each), and a bound on connections at once (a listener
//! that answers 503 past it and closes).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Token buckets by key: `rate` tokens a second, at most `burst` saved.
pub struct RateLimiter {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

/// Most buckets kept; past it, full ones are forgotten.
const BUCKETS_MAX: usize = 100_000;

impl RateLimiter {
    /// Buckets refilled at `rate` a second holding at most `burst`.
    pub fn new(rate: u32, burst: u32) -> RateLimiter {
        RateLimiter {
            rate: f64::from(rate.max(1)),
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request from `key`'s bucket; false when it is empty.
    pub fn allow(&self, key: &str) -> bool {
        let now = Instant::now();
        let Ok(mut buckets) = self.buckets.lock() else {
            return true;
        };
        if buckets.len() >= BUCKETS_MAX && !buckets.contains_key(key) {
            let (rate, burst) = (self.rate, self.burst);
            buckets.retain(|_, (level, at)| {
                (*level + now.duration_since(*at).as_secs_f64() * rate) < burst
            });
        }
        let (level, at) = buckets.entry(key.to_owned()).or_insert((self.burst, now));
        *level = (*level + now.duration_since(*at).as_secs_f64() * self.rate).min(self.burst);
        *at = now;
        if *level >= 1.0 {
            *level -= 1.0;
            true
        } else {
            false
        }
    }
}

/// A TCP listener that holds at most `max` connections at once: past
/// that, a connection gets a 503 with a JSON error and is closed.
pub struct Limited {
    listener: TcpListener,
    permits: Arc<Semaphore>,
}

impl Limited {
    /// Limits `listener` to `max` connections at once.
    pub fn new(listener: TcpListener, max: usize) -> Limited {
        Limited {
            listener,
            permits: Arc::new(Semaphore::new(max.max(1))),
        }
    }
}

/// A connection holding its place under the limit.
pub struct Conn {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
}

const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: 70\r\nconnection: close\r\n\r\n{\"code\":\"too_many_connections\",\"message\":\"the server is at its limit\"}";

impl axum::serve::Listener for Limited {
    type Io = Conn;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Conn, std::net::SocketAddr) {
        loop {
            let (mut stream, addr) = match self.listener.accept().await {
                Ok(c) => c,
                Err(e) => {
                    // Out of descriptors and the like: wait a moment.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            match self.permits.clone().try_acquire_owned() {
                Ok(permit) => {
                    return (
                        Conn {
                            stream,
                            _permit: permit,
                        },
                        addr,
                    )
                }
                Err(_) => {
                    metrics::counter!("digipology_connections_refused_total").increment(1);
                    tokio::spawn(async move {
                        let _ = stream.write_all(BUSY).await;
                        let _ = stream.shutdown().await;
                    });
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
