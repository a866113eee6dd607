//! HTTPS for the server: a private CA (kept under the data directory so a
//! restart keeps clients' kubeconfigs valid), a fresh server certificate
//! per start, and an axum listener that completes TLS handshakes off the
//! accept loop so one slow client cannot stall the others.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// File names of the persisted CA inside the data directory.
pub(crate) const CA_CERT_FILE: &str = "ca.crt";
pub(crate) const CA_KEY_FILE: &str = "ca.key";

/// A client that has not finished its handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot {action} {path}")]
    Io {
        action: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a usable CA {what}: {message}; remove {CA_CERT_FILE} and {CA_KEY_FILE} there to generate a new CA (clients must then use the new kubeconfig)")]
    BadCa {
        path: String,
        what: &'static str,
        message: String,
    },
    #[error("cannot generate certificates")]
    Generate(#[from] rcgen::Error),
    #[error("cannot configure TLS")]
    Config(#[from] rustls::Error),
}

/// What a TLS server needs: its rustls config, plus the CA clients trust.
pub(crate) struct TlsMaterial {
    /// The CA certificate in PEM form (what kubeconfigs embed).
    pub(crate) ca_pem: String,
    /// The CA certificate in DER form (what kube-rs `root_cert` wants).
    pub(crate) ca_der: Vec<u8>,
    pub(crate) server_config: Arc<rustls::ServerConfig>,
}

/// The subject every CA generated here carries; it must stay stable because
/// server certificates issued after a restart name it as their issuer.
fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "rudder-apiserver CA");
    params
        .distinguished_name
        .push(DnType::OrganizationName, "rudder");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

/// Names the server certificate covers: loopback under every spelling
/// clients use, plus the address actually listened on.
fn server_names(listen: IpAddr) -> Vec<SanType> {
    let mut ips = vec![
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(Ipv6Addr::LOCALHOST),
    ];
    if !listen.is_unspecified() && !ips.contains(&listen) {
        ips.push(listen);
    }
    let mut names: Vec<SanType> = ips.into_iter().map(SanType::IpAddress).collect();
    for dns in ["localhost", "rudder-apiserver"] {
        if let Ok(name) = dns.to_string().try_into() {
            names.push(SanType::DnsName(name));
        }
    }
    names
}

fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> TlsError + 'a {
    move |source| TlsError::Io {
        action,
        path: path.display().to_string(),
        source,
    }
}

/// Loads the CA from `dir` (creating and saving one when absent) or makes
/// a throwaway CA when there is no directory.
fn load_or_create_ca(dir: Option<&Path>) -> Result<(String, KeyPair), TlsError> {
    let Some(dir) = dir else {
        let key = KeyPair::generate()?;
        let cert = ca_params().self_signed(&key)?;
        return Ok((cert.pem(), key));
    };
    let cert_path = dir.join(CA_CERT_FILE);
    let key_path = dir.join(CA_KEY_FILE);
    if cert_path.exists() || key_path.exists() {
        return load_ca(&cert_path, &key_path);
    }
    std::fs::create_dir_all(dir).map_err(io_err("create", dir))?;
    let key = KeyPair::generate()?;
    let cert = ca_params().self_signed(&key)?;
    write_private(&key_path, &key.serialize_pem())?;
    std::fs::write(&cert_path, cert.pem()).map_err(io_err("write", &cert_path))?;
    Ok((cert.pem(), key))
}

fn load_ca(cert_path: &Path, key_path: &Path) -> Result<(String, KeyPair), TlsError> {
    let bad = |path: &PathBuf, what, message: String| TlsError::BadCa {
        path: path.display().to_string(),
        what,
        message,
    };
    let cert_pem = std::fs::read_to_string(cert_path).map_err(io_err("read", cert_path))?;
    let key_pem = std::fs::read_to_string(key_path).map_err(io_err("read", key_path))?;
    let key = KeyPair::from_pem(&key_pem)
        .map_err(|e| bad(&key_path.to_path_buf(), "key", e.to_string()))?;
    let cert_der = CertificateDer::from_pem_slice(cert_pem.as_bytes())
        .map_err(|e| bad(&cert_path.to_path_buf(), "certificate", e.to_string()))?;
    // Certificates signed with a key that is not the CA's would fail every
    // client's verification far from the cause; catch the mismatch here.
    if !contains(cert_der.as_ref(), key.public_key_raw()) {
        return Err(bad(
            &cert_path.to_path_buf(),
            "certificate",
            format!("it does not match the key in {}", key_path.display()),
        ));
    }
    Ok((cert_pem, key))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// Writes a private key readable only by its owner.
fn write_private(path: &Path, text: &str) -> Result<(), TlsError> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path).map_err(io_err("write", path))?;
    f.write_all(text.as_bytes()).map_err(io_err("write", path))
}

/// Builds the CA (persisted under `data_dir` when given) and a server
/// certificate valid for loopback and `listen`.
pub(crate) fn material(data_dir: Option<&Path>, listen: IpAddr) -> Result<TlsMaterial, TlsError> {
    let (ca_pem, ca_key) = load_or_create_ca(data_dir)?;
    let ca_der = CertificateDer::from_pem_slice(ca_pem.as_bytes())
        .map_err(|e| TlsError::BadCa {
            path: data_dir
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            what: "certificate",
            message: e.to_string(),
        })?
        .to_vec();
    let issuer = Issuer::new(ca_params(), ca_key);

    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "rudder-apiserver");
    params.subject_alt_names = server_names(listen);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    let server_key = KeyPair::generate()?;
    let server_cert = params.signed_by(&server_key, &issuer)?;

    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
    let chain = vec![
        server_cert.der().clone(),
        CertificateDer::from(ca_der.clone()),
    ];
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)?;
    // The router speaks HTTP/1.1 only; Go and kube-rs clients fall back.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsMaterial {
        ca_pem,
        ca_der,
        server_config: Arc::new(config),
    })
}

/// An axum listener yielding connections whose TLS handshake completed.
pub(crate) struct TlsListener {
    rx: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Starts accepting on `tcp`; handshakes run concurrently and the
    /// accept task ends when the listener is dropped.
    pub(crate) fn new(
        tcp: TcpListener,
        config: Arc<rustls::ServerConfig>,
    ) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let acceptor = TlsAcceptor::from(config);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = tokio::select! {
                    _ = tx.closed() => return,
                    r = tcp.accept() => match r {
                        Ok(c) => c,
                        Err(e) => {
                            // Usually out of file descriptors: back off
                            // instead of spinning.
                            tracing::warn!("accept failed: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    },
                };
                let _ = stream.set_nodelay(true);
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!("TLS handshake with {peer} failed: {e}"),
                        Err(_) => tracing::debug!("TLS handshake with {peer} timed out"),
                    }
                });
            }
        });
        Ok(TlsListener { rx, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(conn) => conn,
            // The accept task only ends once we are dropped; never yield.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rudder-tls-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn ca_is_kept_across_starts() {
        let dir = temp_dir("keep");
        let a = material(Some(&dir), IpAddr::V4(Ipv4Addr::LOCALHOST)).unwrap();
        let b = material(Some(&dir), IpAddr::V4(Ipv4Addr::LOCALHOST)).unwrap();
        assert_eq!(a.ca_pem, b.ca_pem);
        assert!(a.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(CA_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "CA key must be private");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn mismatched_ca_files_are_reported() {
        let dir = temp_dir("mismatch");
        material(Some(&dir), IpAddr::V4(Ipv4Addr::LOCALHOST)).unwrap();
        let other = KeyPair::generate().unwrap();
        std::fs::write(dir.join(CA_KEY_FILE), other.serialize_pem()).unwrap();
        let err = material(Some(&dir), IpAddr::V4(Ipv4Addr::LOCALHOST))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("does not match"), "{err}");
        std::fs::write(dir.join(CA_KEY_FILE), "garbage").unwrap();
        let err = material(Some(&dir), IpAddr::V4(Ipv4Addr::LOCALHOST))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("remove ca.crt and ca.key"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn listen_address_is_a_server_name() {
        let ip: IpAddr = "10.1.2.3".parse().unwrap();
        let names = server_names(ip);
        assert!(names.contains(&SanType::IpAddress(ip)));
        assert!(names.contains(&SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST))));
        let unspecified = server_names(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        assert!(!unspecified.contains(&SanType::IpAddress(IpAddr::V4(Ipv4Addr::UNSPECIFIED))));
    }
}
