//! The TLS pieces the stores share (feature `rustls`): the root certificates a server is checked
//! against, and the verifier of a connection that is encrypted without checking who answers.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use tenure_core::SettingsError;

/// The certificates in the PEM file `path`, or the system's roots without one. An unreadable
/// file, or no certificate at all, is an error on `field` (the option that named the file).
pub fn roots(path: Option<&Path>, field: &str) -> Result<RootCertStore, SettingsError> {
    let mut roots = RootCertStore::empty();
    if let Some(path) = path {
        let bad =
            |e: &dyn std::fmt::Display| SettingsError::field(field, format!("cannot read {}: {e}", path.display()));
        for cert in CertificateDer::pem_file_iter(path).map_err(|e| bad(&e))? {
            roots.add(cert.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
        }
    } else {
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    }
    if roots.is_empty() {
        return Err(SettingsError::field(field, "no root certificate to verify the server against"));
    }
    Ok(roots)
}

/// Encryption without a check of the certificate chain or name (libpq's `prefer`/`require`, a
/// Redis URL's `#insecure`); the handshake's signatures are still checked against the
/// certificate the server sent.
#[derive(Debug)]
pub struct Unchecked(pub Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
