//! Sprig's crypto functions: private keys, X.509 certificates (`genCA`,
//! `genSelfSignedCert`, `genSignedCert` and their `WithKey` forms,
//! `buildCustomCert`), AES-CBC `encryptAES`/`decryptAES`, `bcrypt`,
//! `htpasswd`, plus Helm's DNS-less `getHostByName`.
//!
//! Certificates are assembled in DER here, field by field as Go's
//! `x509.CreateCertificate` lays them out for Sprig's template (serial,
//! CN-only subject, key usages, server+client auth, basic constraints,
//! SANs, key identifiers), and signed with the RustCrypto key types. PEM
//! block types follow Go's `pemBlockForKey`.

use std::any::Any;

use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit};
use gotmpl::{Func, FuncError, FuncMap, IntKind, ListKind, Object, Ty, Value};
use p256::pkcs8::{DecodePrivateKey, EncodePublicKey};
use rand::rngs::OsRng;
use rand::RngCore;
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
use rsa::signature::{SignatureEncoding, Signer};
use sha2::{Digest, Sha256};

use super::encoding::{base64_decode, base64_encode};
use gostd::time::{Duration, Location, Time};

// ---------------------------------------------------------------------------
// PEM

/// `pem.EncodeToMemory`: 64-column base64 between BEGIN/END lines.
pub(crate) fn pem_encode(kind: &str, der: &[u8]) -> String {
    let b64 = base64_encode(der);
    let mut out = format!("-----BEGIN {kind}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {kind}-----\n"));
    out
}

/// The first PEM block in `data` (Go's `pem.Decode`, without headers).
pub(crate) fn pem_decode(data: &str) -> Option<(String, Vec<u8>)> {
    let start = data.find("-----BEGIN ")?;
    let rest = &data[start + 11..];
    let kind_end = rest.find("-----")?;
    let kind = &rest[..kind_end];
    if kind.contains('\n') {
        return None;
    }
    let body = &rest[kind_end + 5..];
    let end_marker = format!("-----END {kind}-----");
    let end = body.find(&end_marker)?;
    let b64: Vec<u8> = body[..end]
        .bytes()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let der = base64_decode(&b64).ok()?;
    Some((kind.to_string(), der))
}

// ---------------------------------------------------------------------------
// Minimal DER

fn der_len(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
}

fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    der_len(&mut out, content.len());
    out.extend_from_slice(content);
    out
}

fn seq(parts: &[Vec<u8>]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

/// A non-negative INTEGER from big-endian magnitude bytes.
fn der_uint(mag: &[u8]) -> Vec<u8> {
    let skip = mag.iter().take_while(|&&b| b == 0).count();
    let mut v = mag[skip..].to_vec();
    if v.is_empty() || v[0] & 0x80 != 0 {
        v.insert(0, 0);
    }
    tlv(0x02, &v)
}

fn der_oid(arcs: &[u64]) -> Vec<u8> {
    let mut body = vec![(arcs[0] * 40 + arcs[1]) as u8];
    for &a in &arcs[2..] {
        let mut stack = vec![(a & 0x7f) as u8];
        let mut a = a >> 7;
        while a > 0 {
            stack.push(0x80 | (a & 0x7f) as u8);
            a >>= 7;
        }
        stack.reverse();
        body.extend(stack);
    }
    tlv(0x06, &body)
}

fn der_bits(bytes: &[u8], unused: u8) -> Vec<u8> {
    let mut body = vec![unused];
    body.extend_from_slice(bytes);
    tlv(0x03, &body)
}

/// One TLV: (tag, content, total length).
fn der_read(data: &[u8]) -> Option<(u8, &[u8], usize)> {
    let tag = *data.first()?;
    let first = *data.get(1)? as usize;
    let (len, hdr) = if first < 0x80 {
        (first, 2)
    } else {
        let n = first & 0x7f;
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = len << 8 | *data.get(2 + i)? as usize;
        }
        (len, 2 + n)
    };
    let content = data.get(hdr..hdr + len)?;
    Some((tag, content, hdr + len))
}

/// A TLV as (tag, content, whole encoding).
type Tlv<'a> = (u8, &'a [u8], &'a [u8]);

fn der_children(mut data: &[u8]) -> Option<Vec<Tlv<'_>>> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let (tag, content, total) = der_read(data)?;
        out.push((tag, content, &data[..total]));
        data = &data[total..];
    }
    Some(out)
}

/// What signing needs from a parent certificate.
struct ParsedCert {
    subject: Vec<u8>,
    subject_key_id: Option<Vec<u8>>,
}

const OID_SKI: &[u8] = &[0x55, 0x1d, 0x0e];

/// A structural parse of an X.509 certificate; `None` when malformed.
fn parse_cert(der: &[u8]) -> Option<ParsedCert> {
    let (tag, cert, total) = der_read(der)?;
    if tag != 0x30 || total != der.len() {
        return None;
    }
    let parts = der_children(cert)?;
    if parts.len() != 3 || parts[0].0 != 0x30 || parts[2].0 != 0x03 {
        return None;
    }
    let tbs = der_children(parts[0].1)?;
    let offset = usize::from(tbs.first()?.0 == 0xa0);
    // serial, signature, issuer, validity, subject, spki
    let fields = tbs.get(offset..offset + 6)?;
    let tags: Vec<u8> = fields.iter().map(|f| f.0).collect();
    if tags != [0x02, 0x30, 0x30, 0x30, 0x30, 0x30] {
        return None;
    }
    let subject = fields[4].2.to_vec();
    let mut ski = None;
    if let Some(ext) = tbs.iter().find(|f| f.0 == 0xa3) {
        let (_, list, _) = der_read(ext.1)?;
        for e in der_children(list)? {
            let items = der_children(e.1)?;
            let (oid, value) = (items.first()?, items.last()?);
            if oid.0 == 0x06 && oid.1 == OID_SKI && value.0 == 0x04 {
                let (_, id, _) = der_read(value.1)?;
                ski = Some(id.to_vec());
            }
        }
    }
    Some(ParsedCert {
        subject,
        subject_key_id: ski,
    })
}

// ---------------------------------------------------------------------------
// Keys

/// A private key of a type Sprig can generate or parse.
pub(crate) enum PrivateKey {
    Rsa(Box<rsa::RsaPrivateKey>),
    Ec(p256::SecretKey),
    Ed25519(ed25519_dalek::SigningKey),
    Dsa(Box<dsa::SigningKey>),
}

const ED25519_PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

impl PrivateKey {
    /// `pemBlockForKey` + `pem.EncodeToMemory`.
    pub(crate) fn to_pem(&self) -> Result<String, String> {
        let err = |e: &dyn std::fmt::Display| format!("failed to encode private key: {e}");
        Ok(match self {
            PrivateKey::Rsa(k) => {
                let der = k.to_pkcs1_der().map_err(|e| err(&e))?;
                pem_encode("RSA PRIVATE KEY", der.as_bytes())
            }
            PrivateKey::Ec(k) => {
                // Go's MarshalECPrivateKey names the curve ([0]); the
                // RustCrypto encoder leaves it out, which OpenSSL rejects.
                use p256::elliptic_curve::sec1::ToEncodedPoint;
                let point = k.public_key().to_encoded_point(false);
                let der = seq(&[
                    der_uint(&[1]),
                    tlv(0x04, &k.to_bytes()),
                    tlv(0xa0, &der_oid(&[1, 2, 840, 10045, 3, 1, 7])),
                    tlv(0xa1, &der_bits(point.as_bytes(), 0)),
                ]);
                pem_encode("EC PRIVATE KEY", &der)
            }
            PrivateKey::Ed25519(k) => {
                let mut der = ED25519_PKCS8_PREFIX.to_vec();
                der.extend_from_slice(&k.to_bytes());
                pem_encode("PRIVATE KEY", &der)
            }
            PrivateKey::Dsa(k) => {
                let c = k.verifying_key().components();
                let der = seq(&[
                    der_uint(&[0]),
                    der_uint(&c.p().to_bytes_be()),
                    der_uint(&c.q().to_bytes_be()),
                    der_uint(&c.g().to_bytes_be()),
                    der_uint(&k.verifying_key().y().to_bytes_be()),
                    der_uint(&k.x().to_bytes_be()),
                ]);
                pem_encode("DSA PRIVATE KEY", &der)
            }
        })
    }

    /// The DER SubjectPublicKeyInfo.
    fn public_key_der(&self) -> Result<Vec<u8>, String> {
        let err =
            |e: &dyn std::fmt::Display| format!("error retrieving public key from signee key: {e}");
        match self {
            PrivateKey::Rsa(k) => k
                .to_public_key()
                .to_public_key_der()
                .map(|d| d.as_bytes().to_vec())
                .map_err(|e| err(&e)),
            PrivateKey::Ec(k) => k
                .public_key()
                .to_public_key_der()
                .map(|d| d.as_bytes().to_vec())
                .map_err(|e| err(&e)),
            PrivateKey::Ed25519(k) => {
                let mut der = vec![
                    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
                ];
                der.extend_from_slice(k.verifying_key().as_bytes());
                Ok(der)
            }
            PrivateKey::Dsa(k) => k
                .verifying_key()
                .to_public_key_der()
                .map(|d| d.as_bytes().to_vec())
                .map_err(|e| err(&e)),
        }
    }

    /// The AlgorithmIdentifier of the signature this key makes.
    fn signature_algorithm(&self) -> Result<Vec<u8>, String> {
        match self {
            PrivateKey::Rsa(_) => Ok(seq(&[
                der_oid(&[1, 2, 840, 113549, 1, 1, 11]),
                vec![0x05, 0x00],
            ])),
            PrivateKey::Ec(_) => Ok(seq(&[der_oid(&[1, 2, 840, 10045, 4, 3, 2])])),
            PrivateKey::Ed25519(_) => Ok(seq(&[der_oid(&[1, 3, 101, 112])])),
            PrivateKey::Dsa(_) => Err(
                "error creating certificate: x509: only RSA, ECDSA and Ed25519 keys supported"
                    .into(),
            ),
        }
    }

    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, String> {
        let err = |e: &dyn std::fmt::Display| format!("error creating certificate: {e}");
        match self {
            PrivateKey::Rsa(k) => {
                let signer = rsa::pkcs1v15::SigningKey::<Sha256>::new(k.as_ref().clone());
                let sig = signer.try_sign(msg).map_err(|e| err(&e))?;
                Ok(sig.to_vec())
            }
            PrivateKey::Ec(k) => {
                let signer = p256::ecdsa::SigningKey::from(k);
                let sig: p256::ecdsa::Signature = signer.try_sign(msg).map_err(|e| err(&e))?;
                Ok(sig.to_der().as_bytes().to_vec())
            }
            PrivateKey::Ed25519(k) => Ok(k.sign(msg).to_bytes().to_vec()),
            PrivateKey::Dsa(_) => Err(err(&"x509: only RSA, ECDSA and Ed25519 keys supported")),
        }
    }
}

/// A fresh RSA key, as Go's `rsa.GenerateKey` makes one (two random
/// probable primes of half the size each, e = 65537), by AWS-LC's FIPS
/// 186-4 key generation (`aws-lc-rs`), several times faster than the `rsa`
/// crate's. AWS-LC seeds its generator from the operating system, as Go's
/// `crypto/rand` does: the workspace builds it without CPU-jitter entropy
/// (`.cargo/config.toml`), whose first sampling in a process costs more
/// than a key. Sizes AWS-LC does not make (Sprig asks for 2048 and 4096
/// bits only) come from the `rsa` crate.
fn generate_rsa(bits: usize) -> Result<PrivateKey, String> {
    use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der};
    use aws_lc_rs::rsa::{KeyPair, KeySize};
    let err = |e: &dyn std::fmt::Display| format!("error generating rsa key: {e}");
    let size = match bits {
        2048 => Some(KeySize::Rsa2048),
        3072 => Some(KeySize::Rsa3072),
        4096 => Some(KeySize::Rsa4096),
        8192 => Some(KeySize::Rsa8192),
        _ => None,
    };
    let key = match size {
        Some(size) => {
            let pair = KeyPair::generate(size).map_err(|e| err(&e))?;
            let der: Pkcs8V1Der = pair.as_der().map_err(|e| err(&e))?;
            rsa::RsaPrivateKey::from_pkcs8_der(der.as_ref()).map_err(|e| err(&e))?
        }
        None => rsa::RsaPrivateKey::new(&mut OsRng, bits).map_err(|e| err(&e))?,
    };
    Ok(PrivateKey::Rsa(Box::new(key)))
}

/// `parsePrivateKeyPEM`, with Sprig's messages.
pub(crate) fn parse_private_key_pem(pem: &str) -> Result<PrivateKey, String> {
    let (kind, der) = pem_decode(pem).ok_or("no PEM data in input")?;
    if kind == "PRIVATE KEY" {
        if let Some(seed) = der.strip_prefix(&ED25519_PKCS8_PREFIX[..]) {
            if let Ok(seed) = <[u8; 32]>::try_from(seed) {
                return Ok(PrivateKey::Ed25519(ed25519_dalek::SigningKey::from_bytes(
                    &seed,
                )));
            }
        }
        if let Ok(k) = rsa::RsaPrivateKey::from_pkcs8_der(&der) {
            return Ok(PrivateKey::Rsa(Box::new(k)));
        }
        if let Ok(k) = p256::SecretKey::from_pkcs8_der(&der) {
            return Ok(PrivateKey::Ec(k));
        }
        if let Ok(k) = ed25519_dalek::SigningKey::from_pkcs8_der(&der) {
            return Ok(PrivateKey::Ed25519(k));
        }
        return Err("decoding PEM as PKCS#8: x509: failed to parse private key".into());
    }
    let Some(prefix) = kind.strip_suffix(" PRIVATE KEY") else {
        return Err(format!("no private key data in PEM block of type {kind}"));
    };
    match prefix {
        "RSA" => rsa::RsaPrivateKey::from_pkcs1_der(&der)
            .map(|k| PrivateKey::Rsa(Box::new(k)))
            .map_err(|e| format!("parsing RSA private key from PEM: {e}")),
        "EC" => p256::SecretKey::from_sec1_der(&der)
            .map(PrivateKey::Ec)
            .map_err(|e| format!("parsing EC private key from PEM: {e}")),
        "DSA" => parse_dsa(&der)
            .ok_or_else(|| "parsing DSA private key from PEM: asn1: structure error".into()),
        _ => Err(format!("invalid private key type {kind}")),
    }
}

fn parse_dsa(der: &[u8]) -> Option<PrivateKey> {
    let (tag, body, _) = der_read(der)?;
    if tag != 0x30 {
        return None;
    }
    let ints = der_children(body)?;
    if ints.len() != 6 || ints.iter().any(|i| i.0 != 0x02) {
        return None;
    }
    let n = |i: usize| dsa::BigUint::from_bytes_be(ints[i].1);
    let comps = dsa::Components::from_components(n(1), n(2), n(3)).ok()?;
    let vk = dsa::VerifyingKey::from_components(comps, n(4)).ok()?;
    let sk = dsa::SigningKey::from_components(vk, n(5)).ok()?;
    Some(PrivateKey::Dsa(Box::new(sk)))
}

/// Sprig's `genPrivateKey`: failures are returned as text.
pub(crate) fn generate_private_key(kind: &str) -> String {
    let key = match kind {
        "" | "rsa" => generate_rsa(4096)
            .map_err(|e| e.replace("error generating rsa key", "failed to generate private key")),
        "dsa" => {
            let comps = dsa::Components::generate(&mut OsRng, dsa::KeySize::DSA_2048_256);
            Ok(PrivateKey::Dsa(Box::new(dsa::SigningKey::generate(
                &mut OsRng, comps,
            ))))
        }
        "ecdsa" => Ok(PrivateKey::Ec(p256::SecretKey::random(&mut OsRng))),
        "ed25519" => Ok(PrivateKey::Ed25519(ed25519_dalek::SigningKey::generate(
            &mut OsRng,
        ))),
        _ => return format!("Unknown type {kind}"),
    };
    match key.and_then(|k| k.to_pem()) {
        Ok(pem) => pem,
        Err(e) => e,
    }
}

// ---------------------------------------------------------------------------
// Certificates

/// Sprig's `certificate` struct: PEM `Cert` and `Key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Certificate {
    pub cert: String,
    pub key: String,
}

impl Object for Certificate {
    fn type_name(&self) -> String {
        "sprig.certificate".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Cert" => Some(Value::str(&self.cert)),
            "Key" => Some(Value::str(&self.key)),
            _ => None,
        }
    }
    fn format_v(&self) -> String {
        format!("{{{} {}}}", self.cert, self.key)
    }
    fn format_plus_v(&self) -> String {
        format!("{{Cert:{} Key:{}}}", self.cert, self.key)
    }
    fn format_sharp_v(&self) -> String {
        format!(
            "sprig.certificate{{Cert:{:?}, Key:{:?}}}",
            self.cert, self.key
        )
    }
    fn to_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({"Cert": self.cert, "Key": self.key}))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What differs between Sprig's certificate kinds.
struct CertTemplate {
    cn: String,
    ips: Vec<Vec<u8>>,
    dns: Vec<String>,
    days: i64,
    is_ca: bool,
}

fn get_net_ips(ips: &[Value]) -> Result<Vec<Vec<u8>>, String> {
    ips.iter()
        .map(|ip| {
            let s = ip
                .as_str()
                .ok_or_else(|| format!("error parsing ip: {} is not a string", plain(ip)))?;
            match s.parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(v4)) => Ok(v4.octets().to_vec()),
                Ok(std::net::IpAddr::V6(v6)) => Ok(v6.octets().to_vec()),
                Err(_) => Err(format!("error parsing ip: {s}")),
            }
        })
        .collect()
}

fn get_dns_names(names: &[Value]) -> Result<Vec<String>, String> {
    names
        .iter()
        .map(|n| {
            n.as_str().map(str::to_string).ok_or_else(|| {
                format!(
                    "error processing alternate dns name: {} is not a string",
                    plain(n)
                )
            })
        })
        .collect()
}

/// A rough `%v` for the values that can appear in IP/DNS lists.
fn plain(v: &Value) -> String {
    match v {
        Value::Int(i, _) => i.to_string(),
        Value::Uint(u, _) => u.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Nil | Value::Invalid => "<nil>".into(),
        Value::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

fn der_time(t: &Time) -> Vec<u8> {
    let year: i64 = t.format("2006").parse().unwrap_or(0);
    if (1950..2050).contains(&year) {
        tlv(
            0x17,
            t.in_loc(Location::Utc).format("060102150405Z").as_bytes(),
        )
    } else {
        tlv(
            0x18,
            t.in_loc(Location::Utc).format("20060102150405Z").as_bytes(),
        )
    }
}

fn der_name(cn: &str) -> Vec<u8> {
    if cn.is_empty() {
        return seq(&[]);
    }
    let printable = cn
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || b" '()+,-./:=?*".contains(&c));
    let value = tlv(if printable { 0x13 } else { 0x0c }, cn.as_bytes());
    seq(&[tlv(0x31, &seq(&[der_oid(&[2, 5, 4, 3]), value]))])
}

fn extension(oid: &[u64], critical: bool, value: Vec<u8>) -> Vec<u8> {
    let mut parts = vec![der_oid(oid)];
    if critical {
        parts.push(vec![0x01, 0x01, 0xff]);
    }
    parts.push(tlv(0x04, &value));
    seq(&parts)
}

/// `getCertAndKey`: sign `tmpl` for `signee` with `signer`, whose
/// certificate (subject and key id) is `parent`, or self-signed.
fn create_certificate(
    tmpl: &CertTemplate,
    signee: &PrivateKey,
    parent: Option<(&ParsedCert, &PrivateKey)>,
) -> Result<Certificate, String> {
    let spki = signee.public_key_der()?;
    let signer = parent.map(|p| p.1).unwrap_or(signee);
    let sig_alg = signer.signature_algorithm()?;
    let subject = der_name(&tmpl.cn);
    let issuer = parent
        .map(|p| p.0.subject.clone())
        .unwrap_or_else(|| subject.clone());

    let mut serial = [0u8; 16];
    OsRng.fill_bytes(&mut serial);
    let now = Time::now();
    let not_after = now.add(Duration(
        (tmpl.days * 24 * 3600).saturating_mul(1_000_000_000),
    ));

    let mut exts = Vec::new();
    // KeyUsage: digitalSignature | keyEncipherment (| keyCertSign).
    let ku = if tmpl.is_ca {
        der_bits(&[0xa4], 2)
    } else {
        der_bits(&[0xa0], 5)
    };
    exts.push(extension(&[2, 5, 29, 15], true, ku));
    exts.push(extension(
        &[2, 5, 29, 37],
        false,
        seq(&[
            der_oid(&[1, 3, 6, 1, 5, 5, 7, 3, 1]),
            der_oid(&[1, 3, 6, 1, 5, 5, 7, 3, 2]),
        ]),
    ));
    let bc = if tmpl.is_ca {
        seq(&[vec![0x01, 0x01, 0xff]])
    } else {
        seq(&[])
    };
    exts.push(extension(&[2, 5, 29, 19], true, bc));
    if tmpl.is_ca {
        // Go 1.25+: truncated SHA-256 of the subjectPublicKey bits.
        let key_bits = der_read(&spki)
            .and_then(|(_, body, _)| der_children(body))
            .and_then(|c| c.get(1).map(|b| b.1.get(1..).unwrap_or(&[]).to_vec()))
            .unwrap_or_default();
        let ski = &Sha256::digest(&key_bits)[..20];
        exts.push(extension(&[2, 5, 29, 14], false, tlv(0x04, ski)));
    }
    if let Some((pc, _)) = parent {
        if let Some(aki) = &pc.subject_key_id {
            if pc.subject != subject {
                exts.push(extension(&[2, 5, 29, 35], false, seq(&[tlv(0x80, aki)])));
            }
        }
    }
    if !tmpl.dns.is_empty() || !tmpl.ips.is_empty() {
        let mut names: Vec<Vec<u8>> = tmpl.dns.iter().map(|d| tlv(0x82, d.as_bytes())).collect();
        names.extend(tmpl.ips.iter().map(|ip| tlv(0x87, ip)));
        exts.push(extension(&[2, 5, 29, 17], tmpl.cn.is_empty(), seq(&names)));
    }

    let tbs = seq(&[
        tlv(0xa0, &der_uint(&[2])),
        der_uint(&serial),
        sig_alg.clone(),
        issuer,
        seq(&[der_time(&now), der_time(&not_after)]),
        subject,
        spki,
        tlv(0xa3, &seq(&exts)),
    ]);
    let sig = signer.sign(&tbs)?;
    let cert = seq(&[tbs, sig_alg, der_bits(&sig, 0)]);
    Ok(Certificate {
        cert: pem_encode("CERTIFICATE", &cert),
        key: signee
            .to_pem()
            .map_err(|e| format!("error pem-encoding key: {e}"))?,
    })
}

fn signed_certificate(
    tmpl: &CertTemplate,
    ca: &Certificate,
    key: &PrivateKey,
) -> Result<Certificate, String> {
    let (_, der) = pem_decode(&ca.cert).ok_or("unable to decode certificate")?;
    let parent = parse_cert(&der)
        .ok_or("error parsing certificate: decodedSignerCert.Bytes: x509: malformed certificate")?;
    let signer_key =
        parse_private_key_pem(&ca.key).map_err(|e| format!("error parsing private key: {e}"))?;
    create_certificate(tmpl, key, Some((&parent, &signer_key)))
}

fn build_custom_cert(b64cert: &str, b64key: &str) -> Result<Certificate, String> {
    let cert =
        base64_decode(b64cert.as_bytes()).map_err(|_| "unable to decode base64 certificate")?;
    let key =
        base64_decode(b64key.as_bytes()).map_err(|_| "unable to decode base64 private key")?;
    let cert = String::from_utf8_lossy(&cert).into_owned();
    let key = String::from_utf8_lossy(&key).into_owned();
    let (_, der) = pem_decode(&cert).ok_or("unable to decode certificate")?;
    parse_cert(&der)
        .ok_or("error parsing certificate: decodedCert.Bytes: x509: malformed certificate")?;
    parse_private_key_pem(&key).map_err(|e| format!("error parsing private key: {e}"))?;
    Ok(Certificate { cert, key })
}

// ---------------------------------------------------------------------------
// AES, bcrypt

/// Sprig's `encryptAES`: AES-256-CBC, the password zero-padded or cut to
/// 32 bytes as the key, PKCS#7 padding, random IV prefix, base64.
pub(crate) fn encrypt_aes(password: &str, plaintext: &str) -> String {
    if plaintext.is_empty() {
        return String::new();
    }
    let cipher = aes_cipher(password);
    let mut content = gotmpl::gostr::to_bytes(plaintext).into_owned();
    let pad = 16 - content.len() % 16;
    content.extend(std::iter::repeat_n(pad as u8, pad));
    let mut iv = [0u8; 16];
    OsRng.fill_bytes(&mut iv);
    let mut out = iv.to_vec();
    let mut prev = iv;
    for block in content.chunks(16) {
        let mut b = aes::Block::default();
        for i in 0..16 {
            b[i] = block[i] ^ prev[i];
        }
        cipher.encrypt_block(&mut b);
        prev.copy_from_slice(&b);
        out.extend_from_slice(&b);
    }
    base64_encode(&out)
}

fn aes_cipher(password: &str) -> aes::Aes256 {
    let mut key = [0u8; 32];
    let p = password.as_bytes();
    let n = p.len().min(32);
    key[..n].copy_from_slice(&p[..n]);
    aes::Aes256::new(&key.into())
}

/// Sprig's `decryptAES`; Go's panics on malformed input become errors.
pub(crate) fn decrypt_aes(password: &str, crypt64: &str) -> Result<String, String> {
    if crypt64.is_empty() {
        return Ok(String::new());
    }
    let crypt = base64_decode(crypt64.as_bytes())?;
    if crypt.len() < 16 {
        return Err(format!(
            "runtime error: slice bounds out of range [:16] with capacity {}",
            crypt.len()
        ));
    }
    let (iv, body) = crypt.split_at(16);
    if body.len() % 16 != 0 {
        return Err("crypto/cipher: input not full blocks".into());
    }
    if body.is_empty() {
        return Err("runtime error: index out of range [-1]".into());
    }
    let cipher = aes_cipher(password);
    let mut prev: Vec<u8> = iv.to_vec();
    let mut out = Vec::with_capacity(body.len());
    for block in body.chunks(16) {
        let mut b = aes::Block::clone_from_slice(block);
        cipher.decrypt_block(&mut b);
        for i in 0..16 {
            out.push(b[i] ^ prev[i]);
        }
        prev = block.to_vec();
    }
    let pad = *out.last().unwrap_or(&0) as usize;
    if pad > out.len() {
        return Err(format!(
            "runtime error: slice bounds out of range [:{}]",
            out.len() as i64 - pad as i64
        ));
    }
    out.truncate(out.len() - pad);
    Ok(gotmpl::gostr::from_bytes(&out).into_owned())
}

/// Sprig's `bcrypt` (cost 10, `$2a$`); failures are returned as text.
pub(crate) fn bcrypt_hash(input: &str) -> String {
    if input.len() > 72 {
        return "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
            .into();
    }
    match bcrypt::hash_with_result(input, 10) {
        Ok(h) => h.format_for_version(bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

// ---------------------------------------------------------------------------
// Registration

fn s(args: &[Value], i: usize) -> &str {
    args.get(i).and_then(|a| a.as_str()).unwrap_or("")
}

fn int(args: &[Value], i: usize) -> i64 {
    match args.get(i) {
        Some(Value::Int(n, _)) => *n,
        _ => 0,
    }
}

fn list(args: &[Value], i: usize) -> Vec<Value> {
    match args.get(i) {
        Some(Value::List(l)) => l.to_vec(),
        _ => Vec::new(),
    }
}

/// The parameter type of Sprig's `certificate` parameters (checked by
/// `cert_arg` while the engine cannot check host types itself).
pub(crate) const CERT_TY: Ty = Ty::Any;

fn cert_arg(args: &[Value], i: usize) -> Result<Certificate, FuncError> {
    let v = args.get(i).unwrap_or(&Value::Nil);
    match v {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<Certificate>()
            .cloned()
            .ok_or_else(|| {
                FuncError::new(format!(
                    "wrong type for value; expected sprig.certificate; got {}",
                    v.type_name()
                ))
            }),
        Value::Nil | Value::Invalid => {
            Err(FuncError::new("invalid value; expected sprig.certificate"))
        }
        other => Err(FuncError::new(format!(
            "wrong type for value; expected sprig.certificate; got {}",
            other.type_name()
        ))),
    }
}

fn done(r: Result<Certificate, String>) -> Result<Value, FuncError> {
    r.map(Value::object).map_err(FuncError::new)
}

fn template(args: &[Value], is_ca: bool) -> Result<CertTemplate, String> {
    if is_ca {
        return Ok(CertTemplate {
            cn: s(args, 0).to_string(),
            ips: Vec::new(),
            dns: Vec::new(),
            days: int(args, 1),
            is_ca,
        });
    }
    Ok(CertTemplate {
        cn: s(args, 0).to_string(),
        ips: get_net_ips(&list(args, 1))?,
        dns: get_dns_names(&list(args, 2))?,
        days: int(args, 3),
        is_ca,
    })
}

fn with_key(pem: &str) -> Result<PrivateKey, String> {
    parse_private_key_pem(pem).map_err(|e| format!("parsing private key: {e}"))
}

pub(crate) fn register(m: &mut FuncMap) {
    const INT: Ty = Ty::Int(IntKind::Int);
    const LIST: Ty = Ty::List(ListKind::Any);
    m.insert(
        "genPrivateKey",
        Func::new(&[Ty::String], |_, a| {
            Ok(Value::string(generate_private_key(s(&a, 0))))
        }),
    );
    m.insert(
        "genCA",
        Func::new(&[Ty::String, INT], |_, a| {
            done(
                template(&a, true).and_then(|t| create_certificate(&t, &generate_rsa(2048)?, None)),
            )
        }),
    );
    m.insert(
        "genCAWithKey",
        Func::new(&[Ty::String, INT, Ty::String], |_, a| {
            done(
                with_key(s(&a, 2)).and_then(|k| create_certificate(&template(&a, true)?, &k, None)),
            )
        }),
    );
    m.insert(
        "genSelfSignedCert",
        Func::new(&[Ty::String, LIST, LIST, INT], |_, a| {
            done(
                template(&a, false)
                    .and_then(|t| create_certificate(&t, &generate_rsa(2048)?, None)),
            )
        }),
    );
    m.insert(
        "genSelfSignedCertWithKey",
        Func::new(&[Ty::String, LIST, LIST, INT, Ty::String], |_, a| {
            done(
                with_key(s(&a, 4))
                    .and_then(|k| create_certificate(&template(&a, false)?, &k, None)),
            )
        }),
    );
    m.insert(
        "genSignedCert",
        Func::new(&[Ty::String, LIST, LIST, INT, CERT_TY], |_, a| {
            let ca = cert_arg(&a, 4)?;
            done(
                template(&a, false).and_then(|t| signed_certificate(&t, &ca, &generate_rsa(2048)?)),
            )
        }),
    );
    m.insert(
        "genSignedCertWithKey",
        Func::new(
            &[Ty::String, LIST, LIST, INT, CERT_TY, Ty::String],
            |_, a| {
                let ca = cert_arg(&a, 4)?;
                done(
                    with_key(s(&a, 5))
                        .and_then(|k| signed_certificate(&template(&a, false)?, &ca, &k)),
                )
            },
        ),
    );
    m.insert(
        "buildCustomCert",
        Func::new(&[Ty::String, Ty::String], |_, a| {
            done(build_custom_cert(s(&a, 0), s(&a, 1)))
        }),
    );
    m.insert(
        "encryptAES",
        Func::new(&[Ty::String, Ty::String], |_, a| {
            Ok(Value::string(encrypt_aes(s(&a, 0), s(&a, 1))))
        }),
    );
    m.insert(
        "decryptAES",
        Func::new(&[Ty::String, Ty::String], |_, a| {
            decrypt_aes(s(&a, 0), s(&a, 1))
                .map(Value::string)
                .map_err(FuncError::new)
        }),
    );
    m.insert(
        "bcrypt",
        Func::new(&[Ty::String], |_, a| {
            Ok(Value::string(bcrypt_hash(s(&a, 0))))
        }),
    );
    m.insert(
        "htpasswd",
        Func::new(&[Ty::String, Ty::String], |_, a| {
            let user = s(&a, 0);
            if user.contains(':') {
                return Ok(Value::string(format!("invalid username: {user}")));
            }
            Ok(Value::string(format!("{user}:{}", bcrypt_hash(s(&a, 1)))))
        }),
    );
    // Helm replaces Sprig's resolver unless DNS lookups are enabled,
    // which an operator never does.
    m.insert(
        "getHostByName",
        Func::new(&[Ty::String], |_, _| Ok(Value::str(""))),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Vec<Value>) -> Result<Value, FuncError> {
        crate::call_registered(register, name, args)
    }

    fn text(v: Value) -> String {
        match v {
            Value::String(s) => s.to_string(),
            other => panic!("{other:?}"),
        }
    }

    fn cert(v: &Value) -> Certificate {
        let Value::Object(o) = v else { panic!("{v:?}") };
        o.as_any().downcast_ref::<Certificate>().unwrap().clone()
    }

    #[test]
    fn aes_round_trip() {
        let enc = encrypt_aes("secretkey", "plaintext");
        assert_eq!(base64_decode(enc.as_bytes()).unwrap().len(), 32);
        assert_eq!(decrypt_aes("secretkey", &enc).unwrap(), "plaintext");
        let long = "x".repeat(40);
        assert_eq!(
            decrypt_aes(&long, &encrypt_aes(&long, "sixteen bytes!!!")).unwrap(),
            "sixteen bytes!!!"
        );
        assert_eq!(encrypt_aes("k", ""), "");
        assert_eq!(decrypt_aes("k", "").unwrap(), "");
        assert_eq!(
            decrypt_aes("k", "!!!").unwrap_err(),
            "illegal base64 data at input byte 0"
        );
        assert!(decrypt_aes("k", "AAAA").is_err());
    }

    #[test]
    fn bcrypt_shapes() {
        assert!(bcrypt_hash("pw").starts_with("$2a$10$"));
        let h = text(call("htpasswd", vec![Value::str("user"), Value::str("pw")]).unwrap());
        assert!(h.starts_with("user:$2a$10$"));
        assert_eq!(
            text(call("htpasswd", vec![Value::str("us:er"), Value::str("pw")]).unwrap()),
            "invalid username: us:er"
        );
    }

    #[test]
    fn private_keys() {
        assert_eq!(generate_private_key("bogus"), "Unknown type bogus");
        let ec = generate_private_key("ecdsa");
        assert!(ec.starts_with("-----BEGIN EC PRIVATE KEY-----\n"), "{ec}");
        assert!(matches!(parse_private_key_pem(&ec), Ok(PrivateKey::Ec(_))));
        let ed = generate_private_key("ed25519");
        assert!(ed.starts_with("-----BEGIN PRIVATE KEY-----\n"));
        assert!(matches!(
            parse_private_key_pem(&ed),
            Ok(PrivateKey::Ed25519(_))
        ));
        assert_eq!(
            parse_private_key_pem("junk").err().unwrap(),
            "no PEM data in input"
        );
        assert_eq!(
            text(call("getHostByName", vec![Value::str("localhost")]).unwrap()),
            ""
        );
    }

    #[test]
    fn certificates_with_keys() {
        let key = generate_private_key("ecdsa");
        let ca = call(
            "genCAWithKey",
            vec![Value::str("my-ca"), Value::int(365), Value::str(&key)],
        )
        .unwrap();
        assert_eq!(ca.type_name(), "sprig.certificate");
        let c = cert(&ca);
        assert!(c.cert.starts_with("-----BEGIN CERTIFICATE-----\n"));
        assert_eq!(c.key, key);
        let (_, der) = pem_decode(&c.cert).unwrap();
        let parsed = parse_cert(&der).unwrap();
        assert!(parsed.subject_key_id.is_some());

        let leaf_key = generate_private_key("ed25519");
        let leaf = call(
            "genSignedCertWithKey",
            vec![
                Value::str("svc"),
                Value::list(vec![Value::str("10.0.0.1")]),
                Value::list(vec![Value::str("svc.example")]),
                Value::int(30),
                ca.clone(),
                Value::str(&leaf_key),
            ],
        )
        .unwrap();
        let lc = cert(&leaf);
        assert_eq!(lc.key, leaf_key);
        let (_, der) = pem_decode(&lc.cert).unwrap();
        assert!(parse_cert(&der).is_some());

        let b64 = |s: &str| Value::string(base64_encode(s.as_bytes()));
        let custom = call("buildCustomCert", vec![b64(&lc.cert), b64(&lc.key)]).unwrap();
        assert_eq!(cert(&custom), lc);
        assert_eq!(
            call("buildCustomCert", vec![Value::str("!"), b64(&lc.key)])
                .unwrap_err()
                .0,
            "unable to decode base64 certificate"
        );
        let err = call(
            "genSelfSignedCertWithKey",
            vec![
                Value::str("x"),
                Value::list(vec![Value::str("nope")]),
                Value::list(vec![]),
                Value::int(1),
                Value::str(&key),
            ],
        )
        .unwrap_err();
        assert_eq!(err.0, "error parsing ip: nope");
        assert!(call(
            "genSignedCert",
            vec![
                Value::str("x"),
                Value::list(vec![]),
                Value::list(vec![]),
                Value::int(1),
                Value::str("ca")
            ]
        )
        .is_err());
    }

    #[test]
    fn rsa_ca() {
        // One RSA generation only: it is slow in debug builds.
        let ca = cert(&call("genCA", vec![Value::str("ca"), Value::int(365)]).unwrap());
        assert!(ca.cert.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(ca.key.starts_with("-----BEGIN RSA PRIVATE KEY-----"));
        assert!(matches!(
            parse_private_key_pem(&ca.key),
            Ok(PrivateKey::Rsa(_))
        ));
    }

    #[test]
    fn rsa_keys_have_the_requested_size() {
        use rsa::traits::{PrivateKeyParts, PublicKeyParts};
        for (bits, pem) in [
            (2048, generate_rsa(2048).and_then(|k| k.to_pem()).unwrap()),
            (4096, generate_private_key("rsa")),
            // A size AWS-LC does not make: the `rsa` crate's.
            (1024, generate_rsa(1024).and_then(|k| k.to_pem()).unwrap()),
        ] {
            assert!(
                pem.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"),
                "{pem}"
            );
            let Ok(PrivateKey::Rsa(k)) = parse_private_key_pem(&pem) else {
                panic!("not an RSA key: {pem}");
            };
            assert_eq!(k.size() * 8, bits);
            assert_eq!(k.e(), &rsa::BigUint::from(65537u32));
            assert_eq!(k.primes().len(), 2);
            for p in k.primes() {
                assert_eq!(p.bits(), bits / 2, "a prime of half the size");
            }
            k.validate().unwrap();
        }
    }

    #[test]
    fn decrypt_panics_become_errors() {
        assert_eq!(
            decrypt_aes("k", "AAAA").unwrap_err(),
            "runtime error: slice bounds out of range [:16] with capacity 3"
        );
        assert_eq!(
            decrypt_aes("k", "AAAAAAAAAAAAAAAAAAAAAA==").unwrap_err(),
            "runtime error: index out of range [-1]"
        );
        assert_eq!(
            decrypt_aes("k", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=").unwrap_err(),
            "runtime error: slice bounds out of range [:-19]"
        );
    }
}
