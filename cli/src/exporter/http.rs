//! Just enough HTTP/1.1 for a Prometheus scrape: read a request head (bounded in size and time),
//! answer `GET /metrics` with the exposition, `GET /` with a pointer to it, and close.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest request head read; Prometheus sends a few hundred bytes.
const HEAD_LIMIT: usize = 8192;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// What a request asks for.
pub(crate) enum Request {
    Metrics,
    Index,
    NotFound,
    /// Not a GET or HEAD, or not HTTP: answered 400 or 405.
    Refused(&'static str),
}

/// Reads one request head from `stream`; `None` if the client went away, was too slow, or sent
/// more than [`HEAD_LIMIT`] bytes without ending its head.
pub(crate) async fn read(stream: &mut TcpStream) -> Option<(Request, bool)> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0_u8; 1024];
    let ended = tokio::time::timeout(HEAD_TIMEOUT, async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 || head.len() + n > HEAD_LIMIT {
                return None;
            }
            head.extend_from_slice(&chunk[..n]);
        }
        Some(())
    })
    .await;
    ended.ok().flatten()?;
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_whitespace();
    let (method, target, version) = (parts.next()?, parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let head_only = method == "HEAD";
    if !version.starts_with("HTTP/1.") {
        return Some((Request::Refused("400 Bad Request"), head_only));
    }
    if method != "GET" && !head_only {
        return Some((Request::Refused("405 Method Not Allowed"), head_only));
    }
    let path = target.split('?').next().unwrap_or(target);
    let request = match path {
        "/metrics" => Request::Metrics,
        "/" => Request::Index,
        _ => Request::NotFound,
    };
    Some((request, head_only))
}

/// How long a client may take to read an answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Writes a response and closes; a client that went away, or does not read within
/// [`ANSWER_TIMEOUT`], is no error of ours.
pub(crate) async fn answer(mut stream: TcpStream, status: &str, content_type: &str, body: &str, head_only: bool) {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = tokio::time::timeout(ANSWER_TIMEOUT, async {
        stream.write_all(head.as_bytes()).await?;
        if !head_only {
            stream.write_all(body.as_bytes()).await?;
        }
        stream.shutdown().await
    })
    .await;
}
