//! The connection against the Redis server of this machine (`TENURE_REDIS_URL`'s host and port,
//! default 127.0.0.1:6379), and against servers of the test's own that close or answer garbage.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::{PushInfo, PushKind, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{Pushes, Wire};

fn address() -> String {
    let url = std::env::var("TENURE_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let rest = url.split("://").nth(1).unwrap_or("127.0.0.1:6379");
    let host_port = rest.split('/').next().unwrap_or(rest);
    host_port.rsplit('@').next().unwrap_or(host_port).to_owned()
}

/// A connection to `address`, its pushes collected, its listener running.
async fn wire_to(address: &str) -> (Arc<Wire>, Arc<Mutex<Vec<PushInfo>>>) {
    let stream = TcpStream::connect(address).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let pushes: Pushes = Arc::new(move |push| {
        sink.lock().expect("pushes").push(push);
        Ok(())
    });
    let wire = Wire::new(Box::new(stream), pushes);
    tokio::spawn(Wire::listen(&wire));
    (wire, seen)
}

async fn redis() -> (Arc<Wire>, Arc<Mutex<Vec<PushInfo>>>) {
    let (wire, seen) = wire_to(&address()).await;
    let hello = ask(&wire, &redis::cmd("HELLO").arg(3).clone()).await.expect("HELLO 3");
    assert!(matches!(hello, Value::Map(_)), "{hello:?}");
    (wire, seen)
}

async fn ask(wire: &Wire, cmd: &redis::Cmd) -> redis::RedisResult<Value> {
    let mut values = wire.request(|out| cmd.write_packed_command(out), 1, false).await?;
    Ok(values.pop().expect("one reply"))
}

fn text(value: &Value) -> String {
    redis::from_redis_value_ref(value).expect("a string")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tasks_share_one_connection_and_each_gets_its_own_replies() {
    let (wire, _) = redis().await;
    let tasks: Vec<_> = (0..16)
        .map(|task| {
            let wire = wire.clone();
            tokio::spawn(async move {
                for round in 0..200 {
                    let said = format!("{task}-{round}");
                    let echoed = ask(&wire, &redis::cmd("ECHO").arg(&said).clone()).await.expect("echo");
                    assert_eq!(text(&echoed), said);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("task");
    }
}

#[tokio::test]
async fn a_request_dropped_before_its_reply_keeps_its_place() {
    let (wire, _) = redis().await;
    let key = format!("tenure-wire-test-{}", std::process::id());
    let blocking = redis::cmd("BLPOP").arg(&key).arg(0.2).clone();
    // Written, then given up on: its (nil) reply must not answer the next request.
    let gave_up = tokio::time::timeout(Duration::from_millis(20), ask(&wire, &blocking)).await;
    assert!(gave_up.is_err(), "BLPOP answered within 20 ms: {gave_up:?}");
    let echoed = ask(&wire, &redis::cmd("ECHO").arg("after").clone()).await.expect("echo");
    assert_eq!(text(&echoed), "after");
    assert!(!wire.is_broken());
}

#[tokio::test]
async fn published_messages_are_read_while_no_request_waits() {
    let (wire, seen) = redis().await;
    let channel = format!("tenure-wire-test-{}", std::process::id());
    wire.subscribed();
    let cmd = redis::cmd("SUBSCRIBE").arg(&channel).clone();
    let confirmed = wire.request(|out| cmd.write_packed_command(out), 1, true).await.expect("subscribe");
    assert!(matches!(&confirmed[..], [Value::Push { kind: PushKind::Subscribe, .. }]), "{confirmed:?}");
    let client = redis::Client::open(format!("redis://{}", address())).expect("client");
    let mut other = client.get_multiplexed_async_connection().await.expect("publisher");
    let receivers: i64 = redis::cmd("PUBLISH").arg(&channel).arg("hi").query_async(&mut other).await.expect("publish");
    assert_eq!(receivers, 1);
    for _ in 0..200 {
        if !seen.lock().expect("pushes").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let seen = seen.lock().expect("pushes");
    assert!(
        matches!(&seen[..], [PushInfo { kind: PushKind::Message, data }] if text(&data[0]) == channel && text(&data[1]) == "hi"),
        "{seen:?}"
    );
}

/// A server of the test's own: answers the first request with `answer`, then closes.
async fn server_answering(answer: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("accept");
        let mut request = [0u8; 256];
        let _ = socket.read(&mut request).await;
        let _ = socket.write_all(answer).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    });
    address
}

#[tokio::test]
async fn a_server_that_closes_fails_the_request_and_breaks_the_connection() {
    let (wire, seen) = wire_to(&server_answering(b"").await).await;
    let e = ask(&wire, &redis::cmd("PING")).await.expect_err("closed");
    assert!(e.is_connection_dropped(), "{e}");
    assert!(e.to_string().contains("closed the connection"), "{e}");
    assert!(wire.is_broken());
    assert!(seen.lock().expect("pushes").iter().any(|p| p.kind == PushKind::Disconnection));
    let again = ask(&wire, &redis::cmd("PING")).await.expect_err("still broken");
    assert!(again.is_connection_dropped(), "{again}");
}

#[tokio::test]
async fn garbage_from_the_server_is_an_error_naming_it() {
    let (wire, _) = wire_to(&server_answering(b"HTTP/1.1 400 Bad Request\r\n\r\n").await).await;
    let e = ask(&wire, &redis::cmd("PING")).await.expect_err("garbage");
    assert!(e.to_string().contains("not RESP"), "{e}");
    assert!(wire.is_broken());
}

#[tokio::test]
async fn a_reply_nobody_asked_for_breaks_the_connection() {
    let (wire, _) = wire_to(&server_answering(b"+PONG\r\n:1\r\n").await).await;
    let e = ask(&wire, &redis::cmd("PING")).await;
    // The first reply answers the request; the second has nobody to go to.
    assert_eq!(e.map(|v| text(&v)).ok().as_deref(), Some("PONG"));
    for _ in 0..100 {
        if wire.is_broken() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let e = ask(&wire, &redis::cmd("PING")).await.expect_err("broken");
    assert!(e.to_string().contains("nobody asked for") || e.is_connection_dropped(), "{e}");
}
