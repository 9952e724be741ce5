//! TLS to the database with libpq's `sslmode` meanings, through a TLS front for the test
//! cluster's primary (whose PostgreSQL build has no TLS): the front answers the client's
//! SSLRequest, completes the handshake with a certificate for 127.0.0.1 signed by an
//! authority made here, and relays the decrypted protocol to the primary.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cfs_postgres::Database;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::support::test_db;

/// The front: its port, the authority's certificate file, and the handshakes it
/// completed.
struct Front {
    port: u16,
    ca: PathBuf,
    handshakes: Arc<AtomicUsize>,
    _dir: tempfile::TempDir,
}

fn front(primary: &str) -> Front {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.crt");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let upstream = primary
        .split_once('@')
        .and_then(|(_, rest)| rest.split('/').next())
        .unwrap()
        .to_owned();
    let handshakes = Arc::new(AtomicUsize::new(0));
    let counted = handshakes.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let (config, upstream, counted) = (config.clone(), upstream.clone(), counted.clone());
            std::thread::spawn(move || relay(client, &upstream, config, &counted));
        }
    });
    Front {
        port,
        ca: ca_file,
        handshakes,
        _dir: dir,
    }
}

/// One client: its SSLRequest answered, then TLS relayed to `upstream` in plain text.
fn relay(
    mut client: TcpStream,
    upstream: &str,
    config: Arc<rustls::ServerConfig>,
    handshakes: &AtomicUsize,
) -> std::io::Result<()> {
    let mut request = [0u8; 8];
    client.read_exact(&mut request)?;
    if request != [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f] {
        return Ok(()); // not an SSLRequest: this front speaks TLS only
    }
    client.write_all(b"S")?;
    let mut tls = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut server = TcpStream::connect(upstream)?;
    client.set_nonblocking(true)?;
    server.set_nonblocking(true)?;
    let mut counted = false;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let mut idle = true;
        match tls.read_tls(&mut client) {
            Ok(0) => return Ok(()),
            Ok(_) => {
                idle = false;
                tls.process_new_packets().map_err(std::io::Error::other)?;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        if !counted && !tls.is_handshaking() {
            counted = true;
            handshakes.fetch_add(1, Ordering::SeqCst);
        }
        loop {
            match tls.reader().read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => send_all(&mut server, &buf[..n])?,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        match server.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                idle = false;
                tls.writer().write_all(&buf[..n])?;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        while tls.wants_write() {
            match tls.write_tls(&mut client) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) => return Err(e),
            }
        }
        if idle {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Writes all of `bytes` to a non-blocking socket.
fn send_all(to: &mut TcpStream, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match to.write(bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// What `SELECT 1` over a connection to `url` gives, or the connection's error.
fn one(url: &str) -> Result<i32, String> {
    let mut db = Database::connect(url).map_err(|e| format!("{e:#}"))?;
    db.client()
        .query_one("SELECT 1", &[])
        .map(|r| r.get(0))
        .map_err(|e| e.to_string())
}

/// `require` and `prefer` encrypt without checking the certificate; a root certificate
/// given makes them check the chain; `verify-full` checks the chain and the host name
/// (the web's roots do not know this authority; `localhost` is not the certificate's
/// name), `verify-ca` the chain alone; a bad `sslrootcert` is named.
#[test]
fn sslmodes_mean_what_libpq_means() {
    let Some(t) = test_db() else { return };
    let f = front(&t.url());
    let ca = f.ca.display().to_string();
    let at =
        |host: &str, query: &str| format!("postgresql://cfs@{host}:{}/postgres?{query}", f.port);
    for query in ["sslmode=require", "sslmode=prefer", "application_name=x"] {
        assert_eq!(one(&at("127.0.0.1", query)), Ok(1), "{query}");
    }
    assert_eq!(f.handshakes.load(Ordering::SeqCst), 3);
    let verified = format!("sslmode=verify-full&sslrootcert={ca}");
    assert_eq!(one(&at("127.0.0.1", &verified)), Ok(1));
    assert_eq!(
        one(&at(
            "127.0.0.1",
            &format!("sslmode=require&sslrootcert={ca}")
        )),
        Ok(1)
    );
    let refused = one(&at("127.0.0.1", "sslmode=verify-full")).unwrap_err();
    assert!(refused.contains("certificate"), "{refused}");
    let refused = one(&at("localhost", &verified)).unwrap_err();
    assert!(refused.contains("certificate"), "{refused}");
    assert_eq!(
        one(&at(
            "localhost",
            &format!("sslmode=verify-ca&sslrootcert={ca}")
        )),
        Ok(1)
    );
    let missing = one(&at(
        "127.0.0.1",
        "sslmode=verify-ca&sslrootcert=/nonexistent.pem",
    ))
    .unwrap_err();
    assert!(missing.contains("/nonexistent.pem"), "{missing}");
    // The primary itself has no TLS: `prefer` falls back to plain text, `require` fails.
    assert_eq!(one(&t.url()), Ok(1));
    assert!(one(&format!("{}?sslmode=require", t.url())).is_err());
}
