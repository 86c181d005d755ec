//! Certificates for the stores' TLS tests, made with `openssl`: a CA, a server certificate for
//! `localhost` and 127.0.0.1 signed by it, and a client certificate signed by it.

use std::path::Path;
use std::process::{Command, Stdio};

/// Writes `ca.pem`/`ca.key`, `server.pem`/`server.key` (for `localhost` and 127.0.0.1) and
/// `client.pem`/`client.key` (CN `tenure-test-client`) into `dir`; the keys are mode 0600.
pub fn certificates(dir: &Path) {
    let shown = dir.display().to_string();
    let openssl = |args: &str| {
        let ok = Command::new("sh")
            .arg("-c")
            .arg(format!("cd '{shown}' && openssl {args}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        assert!(ok, "openssl {args}");
    };
    openssl("req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=tenure-test-ca");
    std::fs::write(dir.join("server.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n").expect("ext");
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").expect("ext");
    for (who, subject) in [("server", "localhost"), ("client", "tenure-test-client")] {
        openssl(&format!("req -newkey rsa:2048 -nodes -keyout {who}.key -out {who}.csr -subj /CN={subject}"));
        openssl(&format!(
            "x509 -req -in {who}.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out {who}.pem -days 2 -extfile {who}.ext"
        ));
        let key = dir.join(format!("{who}.key"));
        std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).expect("key mode");
    }
}
