//! Logs as a Go controller (controller-runtime with zap) writes them: zap's JSON lines
//! by default, console lines with `--zap-devel` ([`zap`]), at the level
//! `--zap-log-level` asks for. An event's target is its `logger`, so code that wants
//! a Go logger name (`controller-runtime.metrics`) logs with that target. Levels are
//! read as `--zap-log-level` reads them (`debug`, `info`, `error`, `panic`, or a
//! number: 1 is debug, higher numbers are more verbose), plus `trace`/`warn` and
//! tracing filter directives such as `info,operator=debug`. Logs go to stderr, as
//! zap's do. Values never appear.

pub mod zap;

use std::fmt;
use std::str::FromStr;

use tracing_subscriber::EnvFilter;

pub use zap::{Encoder, TimeEncoding, ZapFormat};

/// How log lines are written (`--zap-encoder`).
pub type LogFormat = Encoder;

impl FromStr for Encoder {
    type Err = LoggingError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" | "console" => Ok(Encoder::Console),
            "json" => Ok(Encoder::Json),
            _ => Err(LoggingError::Format(s.to_string())),
        }
    }
}

impl fmt::Display for Encoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Encoder::Console => "console",
            Encoder::Json => "json",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    #[error("invalid log level {0:?}: use debug, info, warn, error, a number (1 = debug, 2+ = more verbose) or filter directives like \"info,operator=debug\"")]
    Level(String),
    #[error("invalid log format {0:?}: use json or console")]
    Format(String),
    #[error(
        "invalid time encoding {0:?}: use epoch, millis, nano, iso8601, rfc3339 or rfc3339nano"
    )]
    TimeEncoding(String),
}

/// Libraries whose debug output drowns the operator's own at `debug`.
const QUIET_AT_DEBUG: &str = "hyper=info,hyper_util=info,h2=info,tower=info,rustls=info";

/// The tracing filter for a zap-style level name or number, or filter directives.
pub fn level_filter(level: &str) -> Result<EnvFilter, LoggingError> {
    let l = level.trim().to_ascii_lowercase();
    let directives = match l.as_str() {
        "" | "info" | "0" => "info".to_string(),
        "debug" | "1" => format!("debug,{QUIET_AT_DEBUG}"),
        "trace" => "trace".to_string(),
        "warn" | "warning" => "warn".to_string(),
        // zap's dpanic/panic/fatal only log above error; tracing's highest is error.
        "error" | "dpanic" | "panic" | "fatal" => "error".to_string(),
        n if n.parse::<u32>().is_ok() => "trace".to_string(),
        // A bare word would be read as a target name; only directives with `=` or `,`
        // are taken as a filter, so a misspelt level is an error.
        d if d.contains(['=', ',']) => {
            return EnvFilter::try_new(level.trim())
                .map_err(|_| LoggingError::Level(level.to_string()))
        }
        _ => return Err(LoggingError::Level(level.to_string())),
    };
    EnvFilter::try_new(directives).map_err(|_| LoggingError::Level(level.to_string()))
}

/// Installs the global logger writing zap-style lines. A second call (tests) keeps
/// the first logger and returns `Ok`; only a bad level is an error.
pub fn init(level: &str, format: LogFormat) -> Result<(), LoggingError> {
    init_with(
        level,
        ZapFormat {
            encoder: format,
            time: TimeEncoding::default(),
        },
    )
}

/// [`init`] with a time encoding too.
pub fn init_with(level: &str, format: ZapFormat) -> Result<(), LoggingError> {
    let filter = level_filter(level)?;
    let installed = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .event_format(format)
        .try_init();
    // Err here only means a logger is already installed, which is fine.
    let _ = installed;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_accept_zap_encoder_names() {
        assert_eq!(
            "console".parse::<LogFormat>().ok(),
            Some(LogFormat::Console)
        );
        assert_eq!("text".parse::<LogFormat>().ok(), Some(LogFormat::Console));
        assert_eq!("JSON".parse::<LogFormat>().ok(), Some(LogFormat::Json));
        let e = "xml".parse::<LogFormat>().expect_err("xml").to_string();
        assert!(e.contains("\"xml\"") && e.contains("json"), "{e}");
        assert_eq!(LogFormat::Json.to_string(), "json");
    }

    #[test]
    fn zap_levels_map_to_tracing_levels() {
        let max = |l: &str| level_filter(l).expect(l).max_level_hint();
        use tracing_subscriber::filter::LevelFilter;
        assert_eq!(max("info"), Some(LevelFilter::INFO));
        assert_eq!(max("debug"), Some(LevelFilter::DEBUG));
        assert_eq!(max("1"), Some(LevelFilter::DEBUG));
        assert_eq!(max("2"), Some(LevelFilter::TRACE));
        assert_eq!(max("10"), Some(LevelFilter::TRACE));
        assert_eq!(max("error"), Some(LevelFilter::ERROR));
        assert_eq!(max("panic"), Some(LevelFilter::ERROR));
        assert_eq!(max("warn"), Some(LevelFilter::WARN));
        assert_eq!(max("info,operator=debug"), Some(LevelFilter::DEBUG));
        let e = level_filter("loud").expect_err("loud").to_string();
        assert!(e.contains("\"loud\""), "{e}");
        assert!(level_filter("-1").is_err());
    }

    #[test]
    fn init_twice_is_fine() {
        init("info", LogFormat::Json).expect("first");
        init("debug", LogFormat::Console).expect("second");
        assert!(init("nonsense-level!", LogFormat::Console).is_err());
    }
}
