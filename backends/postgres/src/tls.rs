//! TLS for the connection, with rustls: libpq's `sslmode` rules on which checks are made.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tenure_core::SettingsError;
use tenure_store::tls::Unchecked;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, TlsConnect};

use crate::options::{PostgresOptions, SslMode};

/// The TLS client settings the options ask for; `None` for `sslmode=disable`.
pub(crate) fn client_config(options: &PostgresOptions) -> Result<Option<Arc<ClientConfig>>, SettingsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verify_chain = match options.ssl_mode {
        SslMode::Disable => return Ok(None),
        // libpq: `require` with a root certificate behaves like `verify-ca`.
        SslMode::Prefer => false,
        SslMode::Require => options.root_certificate.is_some(),
        SslMode::VerifyCa | SslMode::VerifyFull => true,
    };
    let verifier: Arc<dyn ServerCertVerifier> = if verify_chain {
        let roots = Arc::new(roots(options)?);
        let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| SettingsError::field("sslrootcert", format!("cannot use the root certificates: {e}")))?;
        Arc::new(Checked { webpki, names: options.ssl_mode == SslMode::VerifyFull })
    } else {
        Arc::new(Unchecked(provider.clone()))
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| SettingsError::field("sslmode", format!("cannot set up TLS: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Some(Arc::new(config)))
}

/// The roots to verify against: `sslrootcert` (a PEM file, or `system`), else the system's.
fn roots(options: &PostgresOptions) -> Result<RootCertStore, SettingsError> {
    let file = options.root_certificate.as_deref().filter(|path| path.as_os_str() != "system");
    tenure_store::tls::roots(file, "sslrootcert")
}

/// `verify-ca` and `verify-full`: the chain is checked; the name only for `verify-full`.
#[derive(Debug)]
struct Checked {
    webpki: Arc<WebPkiServerVerifier>,
    names: bool,
}

impl ServerCertVerifier for Checked {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.names => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// Wraps one connection's stream in TLS for `host`.
pub(crate) struct Connector {
    pub(crate) config: Option<Arc<ClientConfig>>,
    pub(crate) host: String,
}

impl<S> TlsConnect<S> for Connector
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let config = self.config.ok_or_else(|| io::Error::other("TLS is disabled (sslmode=disable)"))?;
            let name = ServerName::try_from(self.host.clone())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{}: {e}", self.host)))?;
            let stream = tokio_rustls::TlsConnector::from(config).connect(name, stream).await?;
            Ok(TlsStream(stream))
        })
    }
}

/// A TLS session over `S`.
pub(crate) struct TlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for TlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for TlsStream<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TlsStream<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
