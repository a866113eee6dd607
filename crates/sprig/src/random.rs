//! Sprig's random functions: random strings (goutils' crypto-random
//! alphabets), `randInt`, `randBytes`, `uuidv4` and `shuffle`. Outputs are
//! random; only their alphabet, length and shape are Sprig's.

use gotmpl::{Func, FuncError, FuncMap, IntKind, Ty, Value};
use rand::rngs::OsRng;
use rand::seq::SliceRandom;
use rand::{Rng, RngCore};

const ALPHA: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const ALPHANUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const NUMERIC: &[u8] = b"0123456789";

/// The generator of random strings, `randInt` and `shuffle`: a CSPRNG
/// (ChaCha) seeded from the operating system once per thread. Drawing each
/// character from the OS took one `getrandom` call per character, 250 of a
/// Bitnami chart's ~700 system calls.
fn rng() -> rand::rngs::ThreadRng {
    rand::thread_rng()
}

/// `count` characters drawn from `alphabet`; goutils fails (and Sprig
/// prints "") for a negative count.
fn random_string(count: i64, alphabet: &[u8]) -> String {
    if count <= 0 {
        return String::new();
    }
    let mut rng = rng();
    (0..count)
        .map(|_| alphabet[rng.gen_range(0..alphabet.len())] as char)
        .collect()
}

/// goutils' `CryptoRandomAscii`: printable ASCII, space to `~`.
fn random_ascii(count: i64) -> String {
    if count <= 0 {
        return String::new();
    }
    let mut rng = rng();
    (0..count)
        .map(|_| rng.gen_range(32u8..127) as char)
        .collect()
}

fn int_arg(args: &[Value], i: usize) -> i64 {
    match args.get(i) {
        Some(Value::Int(v, _)) => *v,
        _ => 0,
    }
}

const INT: Ty = Ty::Int(IntKind::Int);

pub(crate) fn register(m: &mut FuncMap) {
    type Gen = fn(i64) -> String;
    let strings: [(&str, Gen); 4] = [
        ("randAlphaNum", |n| random_string(n, ALPHANUM)),
        ("randAlpha", |n| random_string(n, ALPHA)),
        ("randNumeric", |n| random_string(n, NUMERIC)),
        ("randAscii", random_ascii),
    ];
    for (name, f) in strings {
        m.insert(
            name,
            Func::new(&[INT], move |_, args| {
                Ok(Value::string(f(int_arg(&args, 0))))
            }),
        );
    }
    m.insert(
        "randInt",
        Func::new(&[INT, INT], |_, args| {
            let (min, max) = (int_arg(&args, 0), int_arg(&args, 1));
            let span = max.wrapping_sub(min);
            if span <= 0 {
                return Err(FuncError::new("invalid argument to Intn"));
            }
            Ok(Value::int(rng().gen_range(0..span) + min))
        }),
    );
    m.insert(
        "randBytes",
        Func::new(&[INT], |_, args| {
            let n = int_arg(&args, 0);
            let n = usize::try_from(n)
                .map_err(|_| FuncError::new("runtime error: makeslice: len out of range"))?;
            let mut buf = vec![0u8; n];
            OsRng.fill_bytes(&mut buf);
            Ok(Value::string(super::encoding::base64_encode(&buf)))
        }),
    );
    m.insert(
        "uuidv4",
        Func::new(&[], |_, _| Ok(Value::string(gostd::uuid::new_v4()))),
    );
    m.insert(
        "shuffle",
        Func::new(&[Ty::String], |_, args| {
            let s = args.first().and_then(|a| a.as_str()).unwrap_or("");
            let mut chars: Vec<char> = s.chars().collect();
            chars.shuffle(&mut rng());
            Ok(Value::string(chars.into_iter().collect()))
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Vec<Value>) -> Result<Value, FuncError> {
        crate::call_registered(register, name, args)
    }

    fn text(name: &str, args: Vec<Value>) -> String {
        match call(name, args).unwrap() {
            Value::String(s) => s.to_string(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn string_shapes() {
        let s = text("randAlphaNum", vec![Value::int(10)]);
        assert_eq!(s.len(), 10);
        assert!(s.bytes().all(|c| c.is_ascii_alphanumeric()));
        assert!(text("randAlpha", vec![Value::int(20)])
            .bytes()
            .all(|c| c.is_ascii_alphabetic()));
        assert!(text("randNumeric", vec![Value::int(5)])
            .bytes()
            .all(|c| c.is_ascii_digit()));
        let a = text("randAscii", vec![Value::int(50)]);
        assert!(a.len() == 50 && a.bytes().all(|c| (32..127).contains(&c)));
        assert_eq!(text("randAlpha", vec![Value::int(-1)]), "");
        assert_eq!(text("randAlpha", vec![Value::int(0)]), "");
    }

    #[test]
    fn other_shapes() {
        assert_eq!(text("randBytes", vec![Value::int(8)]).len(), 12);
        assert!(call("randBytes", vec![Value::int(-1)]).is_err());
        let u = text("uuidv4", vec![]);
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
        for _ in 0..20 {
            let Value::Int(n, IntKind::Int) =
                call("randInt", vec![Value::int(3), Value::int(5)]).unwrap()
            else {
                panic!()
            };
            assert!((3..5).contains(&n));
        }
        assert!(call("randInt", vec![Value::int(5), Value::int(5)]).is_err());
        let mut sh: Vec<char> = text("shuffle", vec![Value::str("héllo")]).chars().collect();
        sh.sort();
        assert_eq!(sh, vec!['h', 'l', 'l', 'o', 'é']);
    }
}
