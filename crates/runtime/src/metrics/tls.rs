//! The metrics server's certificate, as controller-runtime's metrics server picks
//! it: `tls.crt`/`tls.key` from the certificate directory when both exist (re-read
//! when they change, as its certwatcher does, so cert-manager rotations need no
//! restart), else a self-signed certificate for `localhost`/`127.0.0.1` generated at
//! start ("it's just important that we encrypt the communication").

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::Metrics;

/// How often the certificate files are checked for a change (certwatcher's polling
/// interval).
const RELOAD_EVERY: Duration = Duration::from_secs(10);

/// A certificate that cannot be used; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read the metrics certificate {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the metrics certificate {} or its key {} is not usable: {message}", cert.display(), key.display())]
    Invalid {
        cert: PathBuf,
        key: PathBuf,
        message: String,
    },
    #[error("cannot generate the self-signed metrics certificate: {0}")]
    Generate(String),
    #[error("cannot configure TLS for the metrics server")]
    Config(#[from] rustls::Error),
}

/// Where the serving certificate comes from (`--metrics-cert-path` with
/// `--metrics-cert-name`/`--metrics-cert-key`, or controller-runtime's default
/// `<tmp>/k8s-metrics-server/serving-certs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsCerts {
    pub dir: PathBuf,
    pub cert_name: String,
    pub key_name: String,
}

impl Default for MetricsCerts {
    fn default() -> Self {
        MetricsCerts {
            dir: std::env::temp_dir()
                .join("k8s-metrics-server")
                .join("serving-certs"),
            cert_name: "tls.crt".into(),
            key_name: "tls.key".into(),
        }
    }
}

impl MetricsCerts {
    fn cert_path(&self) -> PathBuf {
        self.dir.join(&self.cert_name)
    }

    fn key_path(&self) -> PathBuf {
        self.dir.join(&self.key_name)
    }

    /// The files, when both exist (otherwise the self-signed fallback applies).
    fn files(&self) -> Option<(PathBuf, PathBuf)> {
        let (cert, key) = (self.cert_path(), self.key_path());
        (cert.exists() && key.exists()).then_some((cert, key))
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Reads a PEM chain and key into a rustls key pair.
fn load_pair(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<CertifiedKey, TlsError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    let invalid = |message: String| TlsError::Invalid {
        cert: cert.to_path_buf(),
        key: key.to_path_buf(),
        message,
    };
    let cert_pem = read(cert)?;
    let key_pem = read(key)?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("certificate: {e}")))?;
    if chain.is_empty() {
        return Err(invalid(
            "no CERTIFICATE block in the certificate file".into(),
        ));
    }
    let key_der =
        PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| invalid(format!("key: {e}")))?;
    CertifiedKey::from_der(chain, key_der, provider).map_err(|e| invalid(e.to_string()))
}

/// A self-signed certificate for `localhost` and `127.0.0.1`.
fn self_signed(provider: &CryptoProvider) -> Result<CertifiedKey, TlsError> {
    let generate = |e: rcgen::Error| TlsError::Generate(e.to_string());
    let key = rcgen::KeyPair::generate().map_err(generate)?;
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .map_err(generate)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    let cert = params.self_signed(&key).map_err(generate)?;
    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    CertifiedKey::from_der(vec![cert.der().clone()], key_der, provider).map_err(TlsError::from)
}

/// The current certificate, swapped when its files change.
#[derive(Debug)]
struct Current {
    key: RwLock<Arc<CertifiedKey>>,
}

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(
            &self.key.read().unwrap_or_else(|e| e.into_inner()),
        ))
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The TLS configuration of the metrics server, and the task that keeps a
/// file-based certificate fresh (dropped with the server).
pub(super) struct ServerTls {
    pub(super) config: Arc<rustls::ServerConfig>,
    pub(super) reloader: Option<tokio::task::JoinHandle<()>>,
    /// Where the certificate came from, for the startup log line.
    pub(super) source: String,
}

impl Drop for ServerTls {
    fn drop(&mut self) {
        if let Some(task) = self.reloader.take() {
            task.abort();
        }
    }
}

/// Builds the server's TLS: HTTP/1.1 only unless `http2` (the Go operator disables
/// HTTP/2 unless `--enable-http2`; this server speaks HTTP/1.1 in both cases).
pub(super) fn server_tls(certs: &MetricsCerts, metrics: &Metrics) -> Result<ServerTls, TlsError> {
    let provider = provider();
    let (key, files) = match certs.files() {
        Some((cert, key)) => {
            let pair = load_pair(&cert, &key, &provider);
            metrics.certificate_read(pair.is_ok());
            (pair?, Some((cert, key)))
        }
        None => (self_signed(&provider)?, None),
    };
    let current = Arc::new(Current {
        key: RwLock::new(Arc::new(key)),
    });
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(current.clone());
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let source = match &files {
        Some((cert, key)) => format!("{} and {}", cert.display(), key.display()),
        None => "a self-signed certificate".to_string(),
    };
    let reloader = files.map(|(cert, key)| {
        let metrics = metrics.clone();
        tokio::spawn(watch_files(cert, key, current, provider, metrics))
    });
    Ok(ServerTls {
        config: Arc::new(config),
        reloader,
        source,
    })
}

/// Re-reads the pair whenever either file's modification time changes; a pair that
/// does not load keeps the previous one in use (and says why).
async fn watch_files(
    cert: PathBuf,
    key: PathBuf,
    current: Arc<Current>,
    provider: Arc<CryptoProvider>,
    metrics: Metrics,
) {
    let mut seen = (modified(&cert), modified(&key));
    loop {
        tokio::time::sleep(RELOAD_EVERY).await;
        let now = (modified(&cert), modified(&key));
        if now == seen {
            continue;
        }
        seen = now;
        match load_pair(&cert, &key, &provider) {
            Ok(pair) => {
                metrics.certificate_read(true);
                *current.key.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(pair);
                tracing::info!(target: "controller-runtime.certwatcher", "Updated current TLS certificate");
            }
            Err(e) => {
                metrics.certificate_read(false);
                tracing::error!(target: "controller-runtime.certwatcher", error = %apierror::Chain(&e), "error re-reading certificate");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("rudder-metrics-tls-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("scratch dir");
        d
    }

    #[tokio::test]
    async fn self_signed_without_files_and_the_files_when_present() {
        let metrics = Metrics::new();
        let dir = scratch("files");
        let certs = MetricsCerts {
            dir: dir.clone(),
            ..MetricsCerts::default()
        };
        let tls = server_tls(&certs, &metrics).expect("self-signed");
        assert_eq!(tls.source, "a self-signed certificate");
        assert!(tls.reloader.is_none());

        // A pair written by hand (as cert-manager would mount it).
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["metrics.example".to_string()])
            .expect("params")
            .self_signed(&key)
            .expect("cert");
        std::fs::write(dir.join("tls.crt"), cert.pem()).expect("write cert");
        std::fs::write(dir.join("tls.key"), key.serialize_pem()).expect("write key");
        let tls = server_tls(&certs, &metrics).expect("from files");
        assert!(tls.source.contains("tls.crt"), "{}", tls.source);
        assert!(tls.reloader.is_some());
        assert!(metrics
            .encode()
            .lines()
            .any(|l| l == "certwatcher_read_certificate_total 1"));

        // A broken key names both files.
        std::fs::write(dir.join("tls.key"), "not a key").expect("write key");
        let e = server_tls(&certs, &metrics)
            .err()
            .expect("bad key")
            .to_string();
        assert!(e.contains("tls.crt") && e.contains("tls.key"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
