//! Sprig's encoding and hashing functions: base64/base32, the SHA sums,
//! adler32 and `derivePassword` (the Master Password algorithm).
//!
//! The decoders are ports of Go's `encoding/base64` and `encoding/base32`
//! rather than a generic crate, because Sprig returns the decoder's error
//! text as the function result (`illegal base64 data at input byte 4`),
//! so the reported byte offset must be Go's.

use gotmpl::{Func, FuncMap, Ty, UintKind, Value};
use hmac::{Hmac, Mac};
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha512};

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// `base64.StdEncoding.EncodeToString`.
pub(crate) fn base64_encode(src: &[u8]) -> String {
    let mut out = String::with_capacity(src.len().div_ceil(3) * 4);
    for chunk in src.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let v = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(v >> (18 - 6 * i) & 0x3f) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn b64_value(c: u8) -> Option<u8> {
    B64.iter().position(|&x| x == c).map(|p| p as u8)
}

/// `base64.StdEncoding.DecodeString`; the error is Go's
/// `illegal base64 data at input byte N`.
pub(crate) fn base64_decode(src: &[u8]) -> Result<Vec<u8>, String> {
    let corrupt = |at: usize| format!("illegal base64 data at input byte {at}");
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    loop {
        let mut dbuf = [0u8; 4];
        let mut dlen = 4;
        let mut j = 0;
        let mut trailing_err = None;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                // Standard encoding requires padding.
                return Err(corrupt(si - j));
            }
            let c = src[si];
            si += 1;
            if let Some(v) = b64_value(c) {
                dbuf[j] = v;
                j += 1;
                continue;
            }
            if c == b'\n' || c == b'\r' {
                continue;
            }
            if c != b'=' {
                return Err(corrupt(si - 1));
            }
            match j {
                0 | 1 => return Err(corrupt(si - 1)),
                2 => {
                    while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(corrupt(src.len()));
                    }
                    if src[si] != b'=' {
                        return Err(corrupt(si - 1));
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                si += 1;
            }
            if si < src.len() {
                trailing_err = Some(corrupt(si));
            }
            dlen = j;
            break;
        }
        let val = (dbuf[0] as u32) << 18
            | (dbuf[1] as u32) << 12
            | (dbuf[2] as u32) << 6
            | dbuf[3] as u32;
        let bytes = [(val >> 16) as u8, (val >> 8) as u8, val as u8];
        out.extend_from_slice(&bytes[..dlen - 1]);
        if let Some(e) = trailing_err {
            return Err(e);
        }
        if dlen < 4 {
            return Ok(out);
        }
    }
}

/// `base32.StdEncoding.EncodeToString`.
pub(crate) fn base32_encode(src: &[u8]) -> String {
    let mut out = String::with_capacity(src.len().div_ceil(5) * 8);
    for chunk in src.chunks(5) {
        let mut b = [0u8; 5];
        b[..chunk.len()].copy_from_slice(chunk);
        let v = b.iter().fold(0u64, |acc, &x| acc << 8 | x as u64);
        let chars = match chunk.len() {
            1 => 2,
            2 => 4,
            3 => 5,
            4 => 7,
            _ => 8,
        };
        for i in 0..8 {
            if i < chars {
                out.push(B32[(v >> (35 - 5 * i) & 0x1f) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `base32.StdEncoding.DecodeString` with Go's error offsets.
pub(crate) fn base32_decode(s: &[u8]) -> Result<Vec<u8>, String> {
    let corrupt = |at: usize| format!("illegal base32 data at input byte {at}");
    let src: Vec<u8> = s
        .iter()
        .copied()
        .filter(|&c| c != b'\r' && c != b'\n')
        .collect();
    let olen = src.len();
    let mut rest: &[u8] = &src;
    let mut out = Vec::new();
    let mut end = false;
    while !rest.is_empty() && !end {
        let mut dbuf = [0u8; 8];
        let mut dlen = 8;
        let mut j = 0;
        while j < 8 {
            if rest.is_empty() {
                return Err(corrupt(olen - rest.len() - j));
            }
            let c = rest[0];
            rest = &rest[1..];
            if c == b'=' && j >= 2 && rest.len() < 8 {
                if rest.len() + j < 8 - 1 {
                    return Err(corrupt(olen));
                }
                for k in 0..8 - 1 - j {
                    if rest.len() > k && rest[k] != b'=' {
                        return Err(corrupt(olen - rest.len() + k - 1));
                    }
                }
                dlen = j;
                end = true;
                if matches!(dlen, 1 | 3 | 6) {
                    return Err(corrupt(olen - rest.len() - 1));
                }
                break;
            }
            match B32.iter().position(|&x| x == c) {
                Some(v) => dbuf[j] = v as u8,
                None => return Err(corrupt(olen - rest.len() - 1)),
            }
            j += 1;
        }
        let v = dbuf.iter().fold(0u64, |acc, &x| acc << 5 | x as u64);
        let n = match dlen {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            2 => 1,
            _ => 0,
        };
        for i in 0..n {
            out.push((v >> (32 - 8 * i)) as u8);
        }
    }
    Ok(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `hash/adler32.Checksum`.
pub(crate) fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += x as u32;
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    b << 16 | a
}

const MASTER_PASSWORD_SEED: &str = "com.lyndir.masterpassword";

fn password_templates(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

fn template_chars(c: u8) -> &'static [u8] {
    match c {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        b'x' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
        _ => b"",
    }
}

/// Sprig's `derivePassword`: Master Password v3 with scrypt(N=32768, r=8,
/// p=2). Failures come back as text, as in Sprig.
pub(crate) fn derive_password(
    counter: u32,
    kind: &str,
    password: &str,
    user: &str,
    site: &str,
) -> String {
    let Some(templates) = password_templates(kind) else {
        return format!("cannot find password template {kind}");
    };
    let mut salt = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    salt.extend_from_slice(&(user.len() as u32).to_be_bytes());
    salt.extend_from_slice(user.as_bytes());
    let mut key = [0u8; 64];
    let params = match scrypt::Params::new(15, 8, 2, 64) {
        Ok(p) => p,
        Err(e) => return format!("failed to derive password: {e}"),
    };
    if let Err(e) = scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key) {
        return format!("failed to derive password: {e}");
    }
    let mut msg = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    msg.extend_from_slice(&(site.len() as u32).to_be_bytes());
    msg.extend_from_slice(site.as_bytes());
    msg.extend_from_slice(&counter.to_be_bytes());
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&key) else {
        return "failed to derive password: bad key".into();
    };
    mac.update(&msg);
    let seed = mac.finalize().into_bytes();
    let template = templates[seed[0] as usize % templates.len()].as_bytes();
    template
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let chars = template_chars(c);
            chars[seed[i + 1] as usize % chars.len()] as char
        })
        .collect()
}

fn str_fn(m: &mut FuncMap, name: &str, f: fn(&str) -> String) {
    m.insert(
        name,
        Func::new(&[Ty::String], move |_, args| {
            let s = args.first().and_then(|a| a.as_str()).unwrap_or("");
            Ok(Value::string(f(s)))
        }),
    );
}

pub(crate) fn register(m: &mut FuncMap) {
    str_fn(m, "b64enc", |s| base64_encode(&gotmpl::gostr::to_bytes(s)));
    str_fn(m, "b64dec", |s| {
        match base64_decode(&gotmpl::gostr::to_bytes(s)) {
            Ok(b) => gotmpl::gostr::from_bytes(&b).into_owned(),
            Err(e) => e,
        }
    });
    str_fn(m, "b32enc", |s| base32_encode(&gotmpl::gostr::to_bytes(s)));
    str_fn(m, "b32dec", |s| {
        match base32_decode(&gotmpl::gostr::to_bytes(s)) {
            Ok(b) => gotmpl::gostr::from_bytes(&b).into_owned(),
            Err(e) => e,
        }
    });
    str_fn(m, "sha1sum", |s| {
        hex(&Sha1::digest(gotmpl::gostr::to_bytes(s)))
    });
    str_fn(m, "sha256sum", |s| {
        hex(&Sha256::digest(gotmpl::gostr::to_bytes(s)))
    });
    str_fn(m, "sha512sum", |s| {
        hex(&Sha512::digest(gotmpl::gostr::to_bytes(s)))
    });
    str_fn(m, "adler32sum", |s| {
        adler32(&gotmpl::gostr::to_bytes(s)).to_string()
    });
    m.insert(
        "derivePassword",
        Func::new(
            &[
                Ty::Uint(UintKind::Uint32),
                Ty::String,
                Ty::String,
                Ty::String,
                Ty::String,
            ],
            |_, args| {
                let counter = match args.first() {
                    Some(Value::Uint(u, _)) => *u as u32,
                    Some(Value::Int(i, _)) => *i as u32,
                    _ => 0,
                };
                let s = |i: usize| args.get(i).and_then(|a| a.as_str()).unwrap_or("");
                Ok(Value::string(derive_password(
                    counter,
                    s(1),
                    s(2),
                    s(3),
                    s(4),
                )))
            },
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use gotmpl::CallCtx;

    fn call(name: &str, args: Vec<Value>) -> String {
        let mut m = FuncMap::new();
        register(&mut m);
        match (m.get(name).unwrap().imp)(&mut CallCtx::detached(), args).unwrap() {
            Value::String(s) => s.to_string(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn base64_round_trip_and_errors() {
        assert_eq!(base64_encode(b"hello"), "aGVsbG8=");
        assert_eq!(base64_encode(b""), "");
        assert_eq!(base64_encode(&[0, 0xff]), "AP8=");
        assert_eq!(base64_encode(b"{\"a\":1}"), "eyJhIjoxfQ==");
        assert_eq!(base64_decode(b"aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode(b"aGVs\nbG8=").unwrap(), b"hello");
        assert_eq!(
            base64_decode(b"aGVsbG8").unwrap_err(),
            "illegal base64 data at input byte 4"
        );
        assert_eq!(
            base64_decode(b"!!!").unwrap_err(),
            "illegal base64 data at input byte 0"
        );
        assert_eq!(
            base64_decode(b"aGVsbG8=x").unwrap_err(),
            "illegal base64 data at input byte 8"
        );
        assert_eq!(
            base64_decode(b"a===").unwrap_err(),
            "illegal base64 data at input byte 1"
        );
        assert_eq!(
            call("b64dec", vec![Value::str("aGVsbG8")]),
            "illegal base64 data at input byte 4"
        );
    }

    #[test]
    fn binary_data_survives_decode_and_encode() {
        // Go strings hold any bytes: b64dec of binary data must b64enc back.
        let bin = call("b64dec", vec![Value::str("AP/DqcM=")]);
        assert_eq!(call("b64enc", vec![Value::string(bin.clone())]), "AP/DqcM=");
        assert_eq!(call("b32enc", vec![Value::string(bin.clone())]), "AD74HKOD");
        assert_eq!(
            call("sha256sum", vec![Value::string(bin)]),
            hex(&Sha256::digest([0x00, 0xff, 0xc3, 0xa9, 0xc3]))
        );
    }

    #[test]
    fn base32_round_trip_and_errors() {
        assert_eq!(base32_encode(b"hello"), "NBSWY3DP");
        assert_eq!(base32_encode(b"hi"), "NBUQ====");
        assert_eq!(base32_decode(b"NBSWY3DP").unwrap(), b"hello");
        assert_eq!(base32_decode(b"NBUQ====").unwrap(), b"hi");
        assert_eq!(
            base32_decode(b"!!").unwrap_err(),
            "illegal base32 data at input byte 0"
        );
        assert_eq!(
            base32_decode(b"NBU").unwrap_err(),
            "illegal base32 data at input byte 0"
        );
    }

    #[test]
    fn hashes() {
        assert_eq!(
            call("sha1sum", vec![Value::str("hello")]),
            "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"
        );
        assert_eq!(
            call("sha1sum", vec![Value::str("é")]),
            "bf15be717ac1b080b4f1c456692825891ff5073d"
        );
        assert_eq!(
            call("sha256sum", vec![Value::str("")]),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(call("sha512sum", vec![Value::str("hello")]).starts_with("9b71d224bd62f378"));
        assert_eq!(call("adler32sum", vec![Value::str("hello")]), "103547413");
    }

    #[test]
    fn derive_password_matches_sprig() {
        assert_eq!(
            derive_password(1, "long", "password", "user", "example.com"),
            "ZedaFaxcZaso9*"
        );
        assert_eq!(derive_password(1, "pin", "secret", "bob", "bank"), "5608");
        assert_eq!(derive_password(1, "basic", "a", "b", "c"), "qwz62oeA");
        assert_eq!(
            derive_password(2, "maximum", "pw", "u", "s"),
            "S2$TYTKe9bU9YXWCqT@%"
        );
        assert_eq!(derive_password(1, "medium", "pw", "u", "s"), "Jiv7?Yuz");
        assert_eq!(derive_password(0, "long", "", "", ""), "Rozi8;WilbQoyu");
        assert_eq!(
            derive_password(1, "nope", "a", "b", "c"),
            "cannot find password template nope"
        );
    }

    #[test]
    fn go_decoder_offsets() {
        let e64 = |s: &str| base64_decode(s.as_bytes()).unwrap_err();
        assert_eq!(e64("aGVs bG8="), "illegal base64 data at input byte 4");
        assert_eq!(e64("aGVsbA="), "illegal base64 data at input byte 7");
        assert_eq!(e64("aGVsbA=x"), "illegal base64 data at input byte 6");
        assert_eq!(e64("YQ"), "illegal base64 data at input byte 0");
        assert_eq!(base64_decode(b"aGVsbA==").unwrap(), b"hell");
        let e32 = |s: &str| base32_decode(s.as_bytes()).unwrap_err();
        assert_eq!(
            e32("NBSWY3DPEE====="),
            "illegal base32 data at input byte 15"
        );
        assert_eq!(e32("NB="), "illegal base32 data at input byte 3");
        assert_eq!(base32_decode(b"NBSWY3DPEE======").unwrap(), b"hello!");
        assert_eq!(base32_decode(b"NBSWY3DP\nNBSWY3DP").unwrap(), b"hellohello");
        assert_eq!(base32_encode(b"hello world!"), "NBSWY3DPEB3W64TMMQQQ====");
        assert_eq!(
            adler32(b"The quick brown fox jumps over the lazy dog"),
            1541148634
        );
    }
}
