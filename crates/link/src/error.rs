//! The one error type of the crate. Its `Display` is a single line meant for a terminal:
//! the CLI prints it and exits with status 2.

use std::fmt;

/// Why a link spec, trace or preset name was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkError {
    /// The TOML text does not parse or does not have the expected shape.
    Parse {
        /// What and where, e.g. `line 4, column 11: unknown field ...`.
        message: String,
    },
    /// A file could not be read.
    Io {
        /// The file.
        path: String,
        /// The operating system's reason.
        message: String,
    },
    /// A value is out of its allowed range or inconsistent with another.
    Invalid {
        /// Dotted path of the offending field, e.g. `down.rate.rate_bps`.
        field: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// A mahimahi trace is malformed.
    Trace {
        /// Where the trace came from (file name or `inline`).
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// No preset has this name.
    UnknownPreset {
        /// The name asked for.
        name: String,
        /// The valid names, comma separated.
        valid: String,
    },
    /// A preset parameter (`thesis-sat:buffer=0.5`) is unknown or has a bad value.
    PresetParameter {
        /// The preset.
        preset: String,
        /// What is wrong.
        message: String,
    },
}

impl LinkError {
    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        LinkError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// Adds a prefix to the field path of an `Invalid` error (`rate` -> `down.rate`).
    pub(crate) fn within(self, prefix: &str) -> Self {
        match self {
            LinkError::Invalid { field, reason } => LinkError::Invalid {
                field: format!("{prefix}.{field}"),
                reason,
            },
            other => other,
        }
    }
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkError::Parse { message } => write!(f, "link spec: {message}"),
            LinkError::Io { path, message } => write!(f, "cannot read {path}: {message}"),
            LinkError::Invalid { field, reason } => write!(f, "link spec: {field} {reason}"),
            LinkError::Trace { origin, reason } => {
                write!(f, "mahimahi trace {origin}: {reason}")
            }
            LinkError::UnknownPreset { name, valid } => {
                write!(f, "unknown link preset {name:?}; valid presets: {valid}")
            }
            LinkError::PresetParameter { preset, message } => {
                write!(f, "link preset {preset}: {message}")
            }
        }
    }
}

impl std::error::Error for LinkError {}

impl From<crate::file::FileError> for LinkError {
    fn from(e: crate::file::FileError) -> Self {
        LinkError::Io {
            path: e.path,
            message: e.reason,
        }
    }
}

/// Turns a TOML error into one line: `line L, column C: message`.
pub(crate) fn toml_error_line(err: &toml::de::Error, input: &str) -> LinkError {
    let message = err.message().replace('\n', " ").trim().to_string();
    let location = err.span().map(|span| {
        let before = &input[..span.start.min(input.len())];
        let line = before.matches('\n').count() + 1;
        let column = before
            .rfind('\n')
            .map_or(before.len(), |nl| before.len() - nl - 1)
            + 1;
        format!("line {line}, column {column}: ")
    });
    LinkError::Parse {
        message: format!("{}{message}", location.unwrap_or_default()),
    }
}
