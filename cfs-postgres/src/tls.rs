//! TLS to the database, with libpq's meaning of `sslmode` and `sslrootcert`, so that a
//! URL that works with `psql` works with cfs: `disable` speaks plain text; `prefer` (the
//! default) and `require` encrypt, checking the server's certificate only when a root
//! certificate is given (as libpq does when it finds one); `verify-ca` checks the chain
//! against the given roots (else the web's, webpki-roots); `verify-full` the chain and
//! the host name. `sslrootcert` comes from the URL or `PGSSLROOTCERT`.

use std::sync::Arc;

use postgres::config::SslMode;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{DbError, Result};

/// How the server's certificate is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// Not at all (libpq's `prefer` and `require` without a root certificate).
    None,
    /// Its chain up to a root (`verify-ca`, or a root certificate given).
    Chain,
    /// Its chain and the host name (`verify-full`).
    Full,
}

/// A connection string with `sslmode` and `sslrootcert` taken out, and what they said.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Split {
    /// The string the `postgres` crate parses (with `sslmode` disable, prefer or require).
    pub rest: String,
    /// The mode for the `postgres` crate.
    pub mode: SslMode,
    /// The certificate check.
    pub check: Check,
    /// The root certificate file.
    pub root_cert: Option<String>,
}

/// Splits `url` (a `postgresql://` URL or a `key=value` string).
pub(crate) fn split(url: &str) -> Result<Split> {
    let mut mode = None;
    let mut root_cert = None;
    let rest = if let Some((base, query)) = url.split_once('?').filter(|_| url.contains("://")) {
        let mut kept = Vec::new();
        for pair in query.split('&') {
            match pair.split_once('=') {
                Some(("sslmode", v)) => mode = Some(percent_decode(v)),
                Some(("sslrootcert", v)) => root_cert = Some(percent_decode(v)),
                _ => kept.push(pair),
            }
        }
        if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        }
    } else if url.contains("://") {
        url.to_owned()
    } else {
        let mut kept = Vec::new();
        for word in url.split_whitespace() {
            match word.split_once('=') {
                Some(("sslmode", v)) => mode = Some(v.to_owned()),
                Some(("sslrootcert", v)) => root_cert = Some(v.to_owned()),
                _ => kept.push(word),
            }
        }
        kept.join(" ")
    };
    let root_cert = root_cert.or_else(|| std::env::var("PGSSLROOTCERT").ok());
    let given = root_cert.is_some();
    let (mode, check) = match mode.as_deref().unwrap_or("prefer") {
        "disable" => (SslMode::Disable, Check::None),
        "allow" | "prefer" => (
            SslMode::Prefer,
            if given { Check::Chain } else { Check::None },
        ),
        "require" => (
            SslMode::Require,
            if given { Check::Chain } else { Check::None },
        ),
        "verify-ca" => (SslMode::Require, Check::Chain),
        "verify-full" => (SslMode::Require, Check::Full),
        other => {
            return Err(DbError::Config {
                what: format!(
                    "sslmode {other:?}: cfs takes disable, allow, prefer, require, verify-ca or \
                     verify-full"
                ),
            });
        }
    };
    Ok(Split {
        rest,
        mode,
        check,
        root_cert,
    })
}

/// `%XX` escapes of a URL's value decoded.
fn percent_decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The TLS connector for `split`'s check.
pub(crate) fn connector(split: &Split) -> Result<MakeRustlsConnect> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| config_error(format!("TLS: {e}")))?;
    let config = match split.check {
        Check::None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unchecked(
                provider.signature_verification_algorithms,
            )))
            .with_no_client_auth(),
        check => {
            let roots = Arc::new(roots(split.root_cert.as_deref())?);
            let chain = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| config_error(format!("TLS: {e}")))?;
            let verifier: Arc<dyn ServerCertVerifier> = if check == Check::Full {
                chain
            } else {
                Arc::new(ChainOnly(chain))
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth()
        }
    };
    Ok(MakeRustlsConnect::new(config))
}

fn config_error(what: String) -> DbError {
    DbError::Config { what }
}

/// The certificates of `file`, or the web's roots without one.
fn roots(file: Option<&str>) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    let Some(file) = file else {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        return Ok(roots);
    };
    let bad = |e: &dyn std::fmt::Display| config_error(format!("sslrootcert {file}: {e}"));
    for cert in CertificateDer::pem_file_iter(file).map_err(|e| bad(&e))? {
        roots.add(cert.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
    }
    if roots.is_empty() {
        return Err(bad(&"it holds no certificate"));
    }
    Ok(roots)
}

/// Encryption without a check of the server's certificate (the handshake's signatures
/// are still checked): libpq's `prefer` and `require`.
#[derive(Debug)]
struct Unchecked(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// The chain checked, the host name not: libpq's `verify-ca`.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_are_taken_out_of_urls_and_strings() {
        let s = split("postgresql://u@h:5/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&application_name=x")
            .unwrap();
        assert_eq!(s.rest, "postgresql://u@h:5/db?application_name=x");
        assert_eq!((s.mode, s.check), (SslMode::Require, Check::Full));
        assert_eq!(s.root_cert.as_deref(), Some("/tmp/ca.pem"));
        let s = split("host=h sslmode=require dbname=d").unwrap();
        assert_eq!(s.rest, "host=h dbname=d");
        assert_eq!(s.mode, SslMode::Require);
        let s = split("postgresql://u@h/db?sslmode=verify-ca").unwrap();
        assert_eq!(
            (s.rest.as_str(), s.check),
            ("postgresql://u@h/db", Check::Chain)
        );
        assert!(split("postgresql://h/db?sslmode=maybe").is_err());
    }
}
