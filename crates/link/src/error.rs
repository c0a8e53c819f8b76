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

/// Turns a TOML error into one line: `line L, column C: message`, at the value the message
/// names when it can be found in the span the error gives. An error inside a tagged table
/// (`rate = { kind = "constant", rate_bps = 1e30 }`, or `[down.rate]`) comes with the span
/// of the whole table, since serde reads such a table before it knows its type: the line
/// was the table's, not the value's.
pub(crate) fn toml_error_line(err: &toml::de::Error, input: &str) -> LinkError {
    let message = err.message().replace('\n', " ").trim().to_string();
    let location = err.span().map(|span| {
        let start = offending_value(&message, input, span.clone()).unwrap_or(span.start);
        let before = &input[..start.min(input.len())];
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

/// Where in `input[span]` the value that serde's `message` reports (``invalid type:
/// floating point `1e30` ``, ``invalid value: integer `-3` ``) is written: the first value
/// token there that reads as the same number. `None` for other messages or no match.
fn offending_value(message: &str, input: &str, span: std::ops::Range<usize>) -> Option<usize> {
    let reported = message.split('`').nth(1)?;
    let same = |token: &str| same_number(message, reported, token).unwrap_or(false);
    // A `[table]`'s span is its header; its values run to the next header.
    let body_end = input[span.start.min(input.len())..]
        .match_indices("\n[")
        .map(|(i, _)| span.start + i)
        .find(|&i| i >= span.end)
        .unwrap_or(input.len());
    let region = input.get(span.start..body_end.max(span.end).min(input.len()))?;
    let mut offset = 0;
    for piece in region.split_inclusive(['=', ',', '[', '{', '\n']) {
        let value_start = offset + piece.len() - piece.trim_start().len();
        let token: &str = piece
            .trim_start()
            .split(|c: char| c.is_whitespace() || matches!(c, ',' | '}' | ']' | '#'))
            .next()
            .unwrap_or_default();
        if !token.is_empty() && same(token) {
            return Some(span.start + value_start);
        }
        offset += piece.len();
    }
    None
}

/// Whether `token` (TOML source) is the number serde reported as `reported`.
fn same_number(message: &str, reported: &str, token: &str) -> Option<bool> {
    let token = token.replace('_', "");
    if message.contains("floating point") {
        let want: f64 = match reported {
            "NaN" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            r => r.parse().ok()?,
        };
        let got: f64 = match token.trim_start_matches('+') {
            "nan" | "-nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            t => t.parse().ok()?,
        };
        Some(got == want || (got.is_nan() && want.is_nan()))
    } else if message.contains("integer") {
        Some(token.parse::<i128>().ok()? == reported.parse::<i128>().ok()?)
    } else {
        None
    }
}
