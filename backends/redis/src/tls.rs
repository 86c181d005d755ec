//! TLS on a connection of Tenure's own ([`crate::dial`]): `rediss+sentinel://` reaches the
//! sentinels and the master they name over TLS, checked against the system's roots, a private
//! root certificate (`tls_root_cert=`), or nothing (`#insecure`, for tests), as `rediss://` is
//! through the redis crate.

use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tenure::net::Socket;
use tenure_core::SettingsError;
use tenure_store::tls::Unchecked;

/// How a connection's TLS is made.
#[derive(Clone)]
pub(crate) struct Tls {
    connector: tokio_rustls::TlsConnector,
}

impl Tls {
    /// TLS checked against the PEM certificates in `root` (else the system's roots), or not
    /// checked at all when `insecure`.
    pub(crate) fn new(root: Option<&Path>, insecure: bool) -> Result<Self, SettingsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| SettingsError::field("url", format!("cannot set up TLS: {e}")))?;
        let config = if insecure {
            let unchecked = Unchecked(provider);
            builder.dangerous().with_custom_certificate_verifier(Arc::new(unchecked)).with_no_client_auth()
        } else {
            builder.with_root_certificates(tenure_store::tls::roots(root, "tls_root_cert")?).with_no_client_auth()
        };
        Ok(Self { connector: tokio_rustls::TlsConnector::from(Arc::new(config)) })
    }

    /// `socket`, to `host`, with TLS over it.
    pub(crate) async fn wrap(&self, host: &str, socket: Socket) -> io::Result<Socket> {
        let name = ServerName::try_from(host.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{host:?} is no TLS server name: {e}")))?;
        let stream = self.connector.connect(name, socket.stream).await?;
        Ok(Socket { stream: Box::new(stream), spawn: socket.spawn, alive: socket.alive })
    }
}
