use super::*;
use crate::unicode::is_print;

#[test]
fn format_float_forms() {
    let cases: &[(f64, u8, i32, &str)] = &[
        (1e6, b'g', -1, "1e+06"),
        (1e5, b'g', -1, "100000"),
        (1e-5, b'g', -1, "1e-05"),
        (1e-4, b'g', -1, "0.0001"),
        (-0.0, b'g', -1, "-0"),
        (0.0, b'e', -1, "0e+00"),
        (f64::INFINITY, b'f', 2, "+Inf"),
        (f64::NEG_INFINITY, b'g', -1, "-Inf"),
        (f64::NAN, b'e', 3, "NaN"),
        (1.5, b'f', -1, "1.5"),
        (1e21, b'f', -1, "1000000000000000000000"),
        (123.456, b'e', -1, "1.23456e+02"),
        (123.456, b'E', 2, "1.23E+02"),
        (0.5, b'f', 0, "0"),
        (1.5, b'f', 0, "2"),
        (0.125, b'f', 2, "0.12"),
        (0.375, b'f', 2, "0.38"),
        (-0.0001, b'f', 2, "-0.00"),
        (1e100, b'e', 0, "1e+100"),
        (5e-324, b'g', -1, "5e-324"),
        (f64::MAX, b'g', -1, "1.7976931348623157e+308"),
        (100.0, b'g', 3, "100"),
        (1000.0, b'g', 3, "1e+03"),
        (0.0001234, b'G', 2, "0.00012"),
        (0.00001234, b'G', 2, "1.2E-05"),
        (1e6, b'G', -1, "1E+06"),
        (1.0, b'g', 0, "1"),
        (255.5, b'X', -1, "0X1.FFP+07"),
        (1.0, b'x', 0, "0x1p+00"),
        (1.0, b'b', -1, "4503599627370496p-52"),
        (0.0, b'b', -1, "0p-1074"),
        (1.0, b'z', -1, "%z"),
        (1.0, b'g', -1, "1"),
        (123456789.0, b'g', -1, "1.23456789e+08"),
        (1.2345678901234567e19, b'g', -1, "1.2345678901234567e+19"),
    ];
    for (f, fmt, prec, want) in cases {
        assert_eq!(
            format_float(*f, *fmt, *prec, 64),
            *want,
            "format_float({f}, {}, {prec}, 64)",
            *fmt as char
        );
    }
}

#[test]
fn float32_forms() {
    let cases: &[(f64, u8, i32, &str)] = &[
        (1.2345678901, b'g', -1, "1.2345679"),
        (0.1, b'g', -1, "0.1"),
        (1e10, b'g', -1, "1e+10"),
        (1.5, b'g', -1, "1.5"),
        (1e6, b'g', -1, "1e+06"),
        (123456.0, b'g', -1, "123456"),
        (0.00001, b'g', -1, "1e-05"),
        (-2.5e7, b'g', -1, "-2.5e+07"),
        (0.1, b'f', -1, "0.1"),
        (0.1, b'f', 10, "0.1000000015"),
        (0.1, b'e', -1, "1e-01"),
        (1.0, b'b', -1, "8388608p-23"),
        (1e40, b'g', -1, "+Inf"),
        (255.5, b'x', -1, "0x1.ffp+07"),
    ];
    for (f, fmt, prec, want) in cases {
        assert_eq!(
            format_float(*f, *fmt, *prec, 32),
            *want,
            "format_float({f}, {}, {prec}, 32)",
            *fmt as char
        );
    }
}

#[test]
fn json_floats() {
    for (v, want) in [
        (0.5, "0.5"),
        (1e6, "1000000"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1.5e-7, "1.5e-7"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (123456789.125, "123456789.125"),
        (12345678901234567890.0, "12345678901234567000"),
        (-2.0, "-2"),
        (-0.0, "-0"),
        (1.2345e300, "1.2345e+300"),
        (1e-10, "1e-10"),
    ] {
        assert_eq!(format_json_float(v, 64), want, "{v}");
    }
    assert_eq!(format_json_float(0.1, 32), "0.1");
    assert_eq!(format_json_float(1e-7, 32), "1e-7");
}

#[test]
fn append_keeps_what_is_there() {
    let mut s = String::from("x=");
    append_float(&mut s, 1e6, b'g', -1, 64);
    append_json_float(&mut s, 1e-7, 64);
    assert_eq!(s, "x=1e+061e-7");
}

#[test]
fn quoting() {
    assert_eq!(quote("abc"), "\"abc\"");
    assert_eq!(quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
    assert_eq!(quote("\u{7}\u{8}\u{c}\r\t\u{b}"), "\"\\a\\b\\f\\r\\t\\v\"");
    assert_eq!(quote("\u{0}\u{1f}\u{7f}"), "\"\\x00\\x1f\\x7f\"");
    assert_eq!(quote("héllo 日本 ☺"), "\"héllo 日本 ☺\"");
    assert_eq!(
        quote("\u{ad}\u{a0}\u{2028}\u{feff}"),
        "\"\\u00ad\\u00a0\\u2028\\ufeff\""
    );
    assert_eq!(quote("\u{e0001}\u{10ffff}"), "\"\\U000e0001\\U0010ffff\"");
    assert_eq!(quote("😀"), "\"😀\"");
    assert_eq!(quote(b"a\xffb"), "\"a\\xffb\"");
    assert_eq!(quote_to_ascii("é😀"), "\"\\u00e9\\U0001f600\"");
    assert_eq!(quote_rune('A'), "'A'");
    assert_eq!(quote_rune('\''), "'\\''");
    assert_eq!(quote_rune('"'), "'\"'");
    assert_eq!(quote_rune('\n'), "'\\n'");
    assert_eq!(quote_rune('\u{e00}'), "'\\u0e00'");
    assert_eq!(quote_rune('ÿ'), "'ÿ'");
    assert_eq!(quote_rune_to_ascii('ÿ'), "'\\u00ff'");
    assert!(can_backquote("a\tb"));
    assert!(!can_backquote("a`b"));
    assert!(!can_backquote("a\nb"));
    assert!(!can_backquote("\u{feff}"));
    assert!(!can_backquote(b"\xff"));
    assert!(can_backquote("日本"));
    assert!(is_print(' ') && is_print('é') && is_print('日') && is_print('😀'));
    assert!(!is_print('\u{a0}') && !is_print('\u{ad}') && !is_print('\u{7f}'));
    assert!(!is_print('\u{2028}') && !is_print('\u{e000}') && !is_print('\u{378}'));
}

#[test]
fn parse_bool_is_gos() {
    for t in ["1", "t", "T", "TRUE", "true", "True"] {
        assert_eq!(parse_bool(t), Some(true), "{t}");
    }
    for f in ["0", "f", "F", "FALSE", "false", "False"] {
        assert_eq!(parse_bool(f), Some(false), "{f}");
    }
    assert_eq!(parse_bool("yes"), None);
    assert_eq!(parse_bool("tRUE"), None);
}
