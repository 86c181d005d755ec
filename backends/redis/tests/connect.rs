//! Reaching a server: TLS with a private certificate authority, passwords from the URL, and the
//! errors of a wrong certificate or password (never showing the password).

mod common;

use std::time::Duration;

use tenure::BackendErrorKind;
use tenure_redis::{OpenError, RedisBackend, RedisOptions};

use common::server::Server;
use tenure::backend::LockCalls;

async fn works(store: &RedisBackend) {
    let fence = LockCalls::acquire(store, "lock:tls", "w1", Duration::from_secs(5)).await.expect("acquire");
    assert_eq!(fence.map(|f| f.get()), Some(1));
    assert!(LockCalls::release(store, "lock:tls", "w1").await.expect("release"));
}

#[tokio::test]
async fn rediss_urls_speak_tls_trusting_the_given_authority() {
    let server = Server::with_tls();
    let ca = server.ca().display().to_string();
    let store = RedisBackend::open(&format!("{}?tls_root_cert={ca}", server.url()), tenure_tokio::Tokio::current())
        .await
        .expect("TLS with the CA");
    works(&store).await;
    let insecure = RedisBackend::open(&format!("{}#insecure", server.url()), tenure_tokio::Tokio::current())
        .await
        .expect("TLS unchecked");
    assert!(insecure.locked("lock:tls").await.is_ok());

    // The system's roots do not know the private authority: refused, naming the server.
    let e = RedisOptions::from_url(&server.url())
        .expect("url")
        .connect_timeout(Duration::from_secs(2))
        .open(tenure_tokio::Tokio::current())
        .await
        .expect_err("an unknown authority");
    assert!(e.to_string().contains("127.0.0.1"), "{e}");
    // And plain text to a TLS port fails within the connect timeout instead of hanging.
    let plain = server.url().replacen("rediss", "redis", 1);
    let e = RedisOptions::from_url(&plain)
        .expect("url")
        .connect_timeout(Duration::from_millis(500))
        .open(tenure_tokio::Tokio::current())
        .await
        .expect_err("plain text to a TLS port");
    assert!(matches!(e, OpenError::Store(_)), "{e}");
}

#[tokio::test]
async fn passwords_come_from_the_url_and_are_never_shown() {
    let server = Server::with_password("s3cret-pw");
    let with = server.url().replacen("://", "://:s3cret-pw@", 1);
    let store = RedisBackend::open(&with, tenure_tokio::Tokio::current()).await.expect("the right password");
    works(&store).await;
    assert!(!format!("{store:?}").contains("s3cret-pw"), "{store:?}");
    let wrong = server.url().replacen("://", "://:wrong-pw@", 1);
    let e = RedisBackend::open(&wrong, tenure_tokio::Tokio::current()).await.expect_err("the wrong password");
    let text = e.to_string();
    assert!(!text.contains("wrong-pw"), "{text}");
    assert!(text.to_lowercase().contains("auth") || text.contains("WRONGPASS"), "{text}");
    let none = RedisBackend::open(&server.url(), tenure_tokio::Tokio::current()).await.expect_err("no password");
    match none {
        OpenError::Store(e) => assert_eq!(e.kind(), BackendErrorKind::Rejected, "{e}"),
        other => panic!("{other}"),
    }
}
