//! Reaching a cluster that guards itself: TLS (`etcds://` trusting a given CA, client
//! certificates for members that require them) and etcd's user/password authentication. Every
//! refusal is a clear error within the connect timeout, and none shows the password.

mod common;

use std::time::{Duration, Instant};

use common::{ClientAuth, Member};
use tenure::backend::LockOperations;
use tenure_core::BackendErrorKind;
use tenure_etcd::EtcdBackend;

/// One lock cycle, and a second holder refused meanwhile.
async fn cycle(store: &EtcdBackend) {
    let fence = store.acquire("lock:tls", "a", Duration::from_secs(5)).await.expect("acquire").expect("free");
    assert!(fence.get() > 0);
    assert_eq!(store.acquire("lock:tls", "b", Duration::from_secs(5)).await.expect("acquire"), None);
    assert!(store.release("lock:tls", "a").await.expect("release"));
}

/// Opening `url` fails, soon, with an error whose text holds every word of `words`.
async fn refused(url: &str, words: &[&str]) -> String {
    let start = Instant::now();
    let e = EtcdBackend::open_url(url).await.expect_err(url);
    assert!(start.elapsed() < Duration::from_secs(8), "{url} took {:?}", start.elapsed());
    let text = e.to_string();
    for word in words {
        assert!(text.to_lowercase().contains(&word.to_lowercase()), "{url}: {text}");
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcds_trusts_the_given_ca_and_refuses_a_server_it_cannot_trust_or_plain_text() {
    let member = Member::start_tls(ClientAuth::Optional);
    cycle(&EtcdBackend::open_url(&member.url("s/")).await.expect("TLS with the member's CA")).await;
    // The system's roots do not know the test CA; plain text to a TLS port is no answer either.
    let port = member.client_port;
    refused(&format!("etcds://127.0.0.1:{port}/?connect_timeout=2"), &["connecting to etcds://", "certificate"]).await;
    refused(&format!("etcd://127.0.0.1:{port}/?connect_timeout=2&command_timeout=2"), &["connecting to etcd://"]).await;
    // A CA file that cannot be read is named.
    let text = refused(&format!("etcds://127.0.0.1:{port}/?ca=/nonexistent/ca.pem"), &["/nonexistent/ca.pem"]).await;
    assert!(text.contains("CA file"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_requiring_client_certificates_serves_one_that_gives_its_own() {
    let member = Member::start_tls(ClientAuth::Required);
    let file = |name: &str| member.dir.join(name).display().to_string();
    let with_identity = format!("{}&cert={}&key={}", member.url("s/"), file("client.pem"), file("client.key"));
    cycle(&EtcdBackend::open_url(&with_identity).await.expect("TLS with a client certificate")).await;
    // Without one the member refuses (the handshake, or the first call).
    match EtcdBackend::open_url(&format!("{}&connect_timeout=2&command_timeout=2", member.url("s/"))).await {
        Err(e) => assert!(e.to_string().contains("etcd"), "{e}"),
        Ok(store) => {
            let e = store.locked("lock:tls").await.expect_err("no client certificate");
            assert!(matches!(e.kind(), BackendErrorKind::Unavailable | BackendErrorKind::Timeout), "{e}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_and_passwords_are_given_to_etcd_and_a_wrong_password_is_refused_without_being_shown() {
    let member = Member::start();
    for args in [&["user", "add", "root:r00t-pw"][..], &["user", "add", "app:s3cret-pw"], &["auth", "enable"]] {
        let status = member.etcdctl(args).status().expect("etcdctl");
        assert!(status.success(), "etcdctl {args:?}");
    }
    // Only root may use the keyspace here (app has no role): root works, app is refused by name.
    let port = member.client_port;
    let root = EtcdBackend::open_url(&format!("etcd://root:r00t-pw@127.0.0.1:{port}/?prefix=a/")).await.expect("root");
    cycle(&root).await;
    let text = refused(&format!("etcd://root:wrong-pw@127.0.0.1:{port}/"), &["etcd"]).await;
    assert!(!text.contains("wrong-pw"), "{text}");
    let app = EtcdBackend::open_url(&format!("etcd://app:s3cret-pw@127.0.0.1:{port}/?prefix=a/")).await;
    let text = match app {
        Err(e) => e.to_string(),
        Ok(app) => {
            let e = app.acquire("lock:tls", "a", Duration::from_secs(5)).await.expect_err("app may not write");
            assert_eq!(e.kind(), BackendErrorKind::Rejected, "{e}");
            e.to_string()
        }
    };
    assert!(text.contains("permission denied") && !text.contains("s3cret-pw"), "{text}");
}
