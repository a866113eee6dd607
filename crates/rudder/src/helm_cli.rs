//! What Helm's cobra/pflag command line does beyond parsing, done the same way
//! here so that scripts see the same texts and behaviour: argument-count errors
//! with Helm's usage line, `--dry-run` spellings, comma-separated list flags,
//! `--show-only` globs (Go's `filepath.Match`) and warnings on stderr.

/// How many positional arguments a Helm command takes (`pkg/cmd/require`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arity {
    Exactly(usize),
    AtLeast(usize),
    None,
}

/// Helm's error for the wrong number of arguments, naming the command the way
/// Helm's own root command does (`helm template`), so scripts matching Helm's
/// message keep working. `use_line` is the command's usage without `helm `.
pub(crate) fn check_arity(
    args: &[String],
    arity: Arity,
    command: &str,
    use_line: &str,
) -> anyhow::Result<()> {
    let plural = |n: usize| if n == 1 { "argument" } else { "arguments" };
    let what = match arity {
        Arity::Exactly(n) if args.len() != n => format!("requires {n} {}", plural(n)),
        Arity::AtLeast(n) if args.len() < n => format!("requires at least {n} {}", plural(n)),
        Arity::None if !args.is_empty() => "accepts no arguments".to_string(),
        _ => return Ok(()),
    };
    anyhow::bail!("\"helm {command}\" {what}\n\nUsage:  helm {use_line}")
}

/// A warning on stderr in the shape of Helm's `log/slog` text lines.
pub(crate) fn warn(msg: &str) {
    eprintln!("level=WARN msg={}", slog_value(msg));
}

/// A value as slog's text handler writes it: bare when it is a plain word,
/// else quoted as Go's `strconv.Quote` does.
fn slog_value(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_graphic() && !matches!(c, '"' | '=' | '\\'));
    if plain {
        return s.to_string();
    }
    gostd::strconv::quote(s)
}

/// pflag's deprecation notice for a flag that is still accepted.
pub(crate) fn deprecated_flag(name: &str, why: &str) {
    eprintln!("Flag --{name} has been deprecated, {why}");
}

/// What `--dry-run[=VALUE]` asks for (Helm's `cmdGetDryRunFlagStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DryRunFlag {
    None,
    Client,
    Server,
}

/// The bare `--dry-run`: clap's value for the flag given without one.
pub(crate) const DRY_RUN_BARE: &str = "unset";

/// Reads `--dry-run` as Helm does: the bare flag and booleans still work, with
/// a deprecation warning; `helm template` (always a dry run) refuses `none`
/// and false.
pub(crate) fn dry_run_strategy(value: &str, template: bool) -> anyhow::Result<DryRunFlag> {
    let template_refuses = || {
        anyhow::anyhow!(
            "invalid dry-run value ({}). Must be \"server\" or \"client\"",
            go_quote(value)
        )
    };
    match value {
        DRY_RUN_BARE => {
            warn("--dry-run is deprecated and should be replaced with '--dry-run=client'");
            return Ok(DryRunFlag::Client);
        }
        "client" => return Ok(DryRunFlag::Client),
        "server" => return Ok(DryRunFlag::Server),
        "none" if template => return Err(template_refuses()),
        "none" => return Ok(DryRunFlag::None),
        _ => {}
    }
    let Some(b) = parse_go_bool(value) else {
        anyhow::bail!(
            "invalid dry-run value ({}). Must be \"none\", \"server\", or \"client\"",
            go_quote(value)
        );
    };
    if template && !b {
        return Err(template_refuses());
    }
    let (result, name) = if b {
        (DryRunFlag::Client, "client")
    } else {
        (DryRunFlag::None, "none")
    };
    warn(&format!(
        "boolean '--dry-run={value}' flag is deprecated and must be replaced with '--dry-run={name}'"
    ));
    Ok(result)
}

/// Helm 4's `--wait[=STRATEGY]` (the bare flag is `watcher`): whether to wait
/// for the release's objects to be ready. `watcher` and `legacy` wait,
/// `hookOnly` waits for hooks only; the old booleans still work, with Helm's
/// deprecation warnings.
pub(crate) fn parse_wait(value: &str) -> Result<bool, String> {
    match value {
        "watcher" | "legacy" => Ok(true),
        "hookOnly" => Ok(false),
        "true" => {
            warn(
                "--wait=true is deprecated (boolean value) and can be replaced with --wait=watcher",
            );
            Ok(true)
        }
        "false" => {
            warn("--wait=false is deprecated (boolean value) and can be replaced by omitting the --wait flag");
            Ok(false)
        }
        other => Err(format!(
            "invalid wait input {}. Valid inputs are watcher, and legacy",
            go_quote(other)
        )),
    }
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `%q` of a string.
pub(crate) fn go_quote(s: &str) -> String {
    gostd::strconv::quote(s)
}

/// The values of a pflag `StringSlice` flag given one or more times: each
/// occurrence is a line of CSV (`a,b`, `"a,b",c`), its fields appended in order.
pub(crate) fn split_csv(values: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for v in values {
        if v.is_empty() {
            continue;
        }
        out.extend(
            csv_fields(v).map_err(|e| anyhow::anyhow!("invalid argument {}: {e}", go_quote(v)))?,
        );
    }
    Ok(out)
}

/// The fields of one CSV record, as Go's `encoding/csv` reads them.
fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err("extraneous or missing \" in quoted-field".into()),
                }
            }
            match chars.next() {
                None => {
                    fields.push(field);
                    return Ok(fields);
                }
                Some(',') => fields.push(field),
                Some(_) => return Err("extraneous or missing \" in quoted-field".into()),
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        fields.push(field);
                        return Ok(fields);
                    }
                    Some(',') => break,
                    Some('"') => return Err("bare \" in non-quoted-field".into()),
                    Some(c) => field.push(c),
                }
            }
            fields.push(field);
        }
    }
}

/// Go's `filepath.Match` on Unix: `*` and `?` stop at `/`, `[...]` classes
/// with ranges and `^` negation, `\` escapes. A malformed pattern matches
/// nothing (Helm ignores the error).
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    glob_here(
        &pattern.chars().collect::<Vec<_>>(),
        &name.chars().collect::<Vec<_>>(),
    )
    .unwrap_or(false)
}

fn glob_here(p: &[char], n: &[char]) -> Option<bool> {
    match p.first() {
        None => Some(n.is_empty()),
        Some('*') => {
            // `*` takes any run of non-separators, the shortest first.
            let rest = &p[1..];
            for i in 0..=n.len() {
                if i > 0 && n[i - 1] == '/' {
                    break;
                }
                if glob_here(rest, &n[i..])? {
                    return Some(true);
                }
            }
            // Go still checks the rest of the pattern is well formed.
            glob_check(rest)?;
            Some(false)
        }
        Some('?') => match n.first() {
            Some(&c) if c != '/' => glob_here(&p[1..], &n[1..]),
            _ => glob_check(&p[1..]).map(|_| false),
        },
        Some('[') => {
            let (matched, used) = class_match(&p[1..], n.first().copied())?;
            // Unlike `*` and `?`, a class may match the separator, as in Go.
            if matched && !n.is_empty() {
                glob_here(&p[1 + used..], &n[1..])
            } else {
                glob_check(&p[1 + used..]).map(|_| false)
            }
        }
        Some('\\') => {
            let &lit = p.get(1)?;
            match n.first() {
                Some(&c) if c == lit => glob_here(&p[2..], &n[1..]),
                _ => glob_check(&p[2..]).map(|_| false),
            }
        }
        Some(&lit) => match n.first() {
            Some(&c) if c == lit => glob_here(&p[1..], &n[1..]),
            _ => glob_check(&p[1..]).map(|_| false),
        },
    }
}

/// `None` when the rest of a pattern is malformed.
fn glob_check(p: &[char]) -> Option<()> {
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '[' => i += 1 + class_match(&p[i + 1..], None)?.1,
            '\\' => {
                p.get(i + 1)?;
                i += 2;
            }
            _ => i += 1,
        }
    }
    Some(())
}

/// Whether `c` is in the class that starts after `[`, and how many pattern
/// characters the class takes (up to and including `]`); `None` if malformed.
fn class_match(p: &[char], c: Option<char>) -> Option<(bool, usize)> {
    let mut i = 0;
    let negated = p.first() == Some(&'^');
    if negated {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let &ch = p.get(i)?;
        if ch == ']' && !first {
            i += 1;
            break;
        }
        first = false;
        let lo = class_char(p, &mut i)?;
        let mut hi = lo;
        if p.get(i) == Some(&'-') {
            i += 1;
            hi = class_char(p, &mut i)?;
        }
        if c.is_some_and(|c| lo <= c && c <= hi) {
            matched = true;
        }
    }
    Some((matched != negated, i))
}

fn class_char(p: &[char], i: &mut usize) -> Option<char> {
    let &ch = p.get(*i)?;
    match ch {
        '-' | ']' => None,
        '\\' => {
            let &esc = p.get(*i + 1)?;
            *i += 2;
            Some(esc)
        }
        c => {
            *i += 1;
            Some(c)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arity_errors_read_as_helms() {
        let e = check_arity(
            &[],
            Arity::AtLeast(1),
            "template",
            "template [NAME] [CHART] [flags]",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"helm template\" requires at least 1 argument\n\nUsage:  helm template [NAME] [CHART] [flags]"
        );
        let e = check_arity(
            &[],
            Arity::Exactly(1),
            "get all",
            "get all RELEASE_NAME [flags]",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"helm get all\" requires 1 argument\n\nUsage:  helm get all RELEASE_NAME [flags]"
        );
        let e = check_arity(&["x".into()], Arity::None, "list", "list [flags]").unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"helm list\" accepts no arguments\n\nUsage:  helm list [flags]"
        );
        assert!(check_arity(&["a".into()], Arity::Exactly(1), "x", "x").is_ok());
    }

    #[test]
    fn dry_run_spellings() {
        assert_eq!(
            dry_run_strategy("client", true).unwrap(),
            DryRunFlag::Client
        );
        assert_eq!(
            dry_run_strategy("server", true).unwrap(),
            DryRunFlag::Server
        );
        assert_eq!(
            dry_run_strategy(DRY_RUN_BARE, false).unwrap(),
            DryRunFlag::Client
        );
        assert_eq!(dry_run_strategy("none", false).unwrap(), DryRunFlag::None);
        assert_eq!(dry_run_strategy("true", false).unwrap(), DryRunFlag::Client);
        assert_eq!(dry_run_strategy("false", false).unwrap(), DryRunFlag::None);
        assert_eq!(
            dry_run_strategy("none", true).unwrap_err().to_string(),
            "invalid dry-run value (\"none\"). Must be \"server\" or \"client\""
        );
        assert_eq!(
            dry_run_strategy("0", true).unwrap_err().to_string(),
            "invalid dry-run value (\"0\"). Must be \"server\" or \"client\""
        );
        assert_eq!(
            dry_run_strategy("later", false).unwrap_err().to_string(),
            "invalid dry-run value (\"later\"). Must be \"none\", \"server\", or \"client\""
        );
    }

    #[test]
    fn wait_strategies() {
        assert_eq!(parse_wait("watcher"), Ok(true));
        assert_eq!(parse_wait("legacy"), Ok(true));
        assert_eq!(parse_wait("hookOnly"), Ok(false));
        assert_eq!(parse_wait("true"), Ok(true));
        assert_eq!(parse_wait("false"), Ok(false));
        assert_eq!(
            parse_wait("soon"),
            Err("invalid wait input \"soon\". Valid inputs are watcher, and legacy".into())
        );
    }

    #[test]
    fn string_slices_split_like_pflag() {
        let v = |s: &[&str]| split_csv(&s.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(v(&["a/v1,b/v2", "c/v1"]).unwrap(), ["a/v1", "b/v2", "c/v1"]);
        assert_eq!(v(&["\"a,b\",c"]).unwrap(), ["a,b", "c"]);
        assert_eq!(v(&["a,,b"]).unwrap(), ["a", "", "b"]);
        assert_eq!(v(&[""]).unwrap(), Vec::<String>::new());
        assert!(v(&["a\"b"]).is_err());
    }

    #[test]
    fn globs_match_like_go_filepath_match() {
        assert!(glob_match(
            "templates/subdir/role*",
            "templates/subdir/role.yaml"
        ));
        assert!(glob_match(
            "templates/subdir/role*",
            "templates/subdir/rolebinding.yaml"
        ));
        assert!(!glob_match("templates/*", "templates/subdir/role.yaml"));
        assert!(glob_match(
            "templates/*/*.yaml",
            "templates/subdir/role.yaml"
        ));
        assert!(glob_match(
            "templates/service.yaml",
            "templates/service.yaml"
        ));
        assert!(glob_match(
            "t?mplates/[a-s]ervice.yaml",
            "templates/service.yaml"
        ));
        assert!(!glob_match(
            "templates/[^s]ervice.yaml",
            "templates/service.yaml"
        ));
        assert!(glob_match("templates/\\*", "templates/*"));
        assert!(!glob_match("templates/[", "templates/["));
        assert!(!glob_match("a?", "a/"));
    }

    #[test]
    fn slog_values_quote_like_go() {
        assert_eq!(slog_value("plain"), "plain");
        assert_eq!(slog_value("two words"), "\"two words\"");
        assert_eq!(slog_value("it's 'x'"), "\"it's 'x'\"");
    }
}
