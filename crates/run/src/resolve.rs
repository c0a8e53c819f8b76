//! The one link resolver: what every command's `--link` and every campaign's link entry
//! mean.

use std::path::PathBuf;

use satquic_link::LinkSpec;

/// What a `--link` argument names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkSource {
    /// A preset, possibly with parameters (`geo-viasat`, `thesis-sat:buffer=0.5`).
    Preset(String),
    /// A satquic-link TOML file.
    File(PathBuf),
}

impl LinkSource {
    /// A TOML file if the argument names an existing file, ends in `.toml` or contains a
    /// `/` (no preset name does), else a preset name (even where a directory of that name
    /// exists, such as a `--out` named after the preset).
    pub fn parse(arg: &str) -> Self {
        let path = std::path::Path::new(arg);
        if arg.ends_with(".toml") || arg.contains('/') || path.is_file() {
            LinkSource::File(path.to_path_buf())
        } else {
            LinkSource::Preset(arg.to_string())
        }
    }

    /// The link it names. Errors are one line.
    pub fn resolve(&self) -> Result<LinkSpec, String> {
        let result = match self {
            LinkSource::File(path) if path.is_dir() => {
                return Err(format!(
                    "{} is a directory; --link takes a preset name or a link TOML file",
                    path.display()
                ));
            }
            LinkSource::File(path) => LinkSpec::from_toml_file(path),
            LinkSource::Preset(name) => satquic_link::presets::lookup(name),
        };
        result.map_err(|e| first_line(&e.to_string()))
    }
}

/// The link a command-line argument names ([`LinkSource::parse`]). Errors are one line.
pub fn resolve_link(arg: &str) -> Result<LinkSpec, String> {
    LinkSource::parse(arg).resolve()
}

/// The first line of a message, for one-line errors.
pub fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or("").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_resolve_from_presets_and_files_and_report_unknown_names_in_one_line() {
        assert_eq!(resolve_link("geo-viasat").unwrap().name, "geo-viasat");
        let err = resolve_link("no-such-link").unwrap_err();
        assert!(!err.contains('\n') && err.contains("no-such-link"), "{err}");
        let err = resolve_link("/nonexistent/link.toml").unwrap_err();
        assert!(!err.contains('\n'), "{err}");
        let err = resolve_link(std::env::temp_dir().to_str().unwrap()).unwrap_err();
        assert!(err.contains("is a directory"), "{err}");
        let err = resolve_link("/nonexistent/link").unwrap_err();
        assert!(!err.contains("preset"), "{err}");
        let dir = std::env::temp_dir().join(format!("satquic-resolve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("my.toml");
        let preset = satquic_link::presets::lookup("qir-sat").unwrap();
        std::fs::write(&file, preset.to_toml_string().unwrap()).unwrap();
        assert_eq!(resolve_link(file.to_str().unwrap()).unwrap(), preset);
        std::fs::remove_dir_all(&dir).ok();
    }
}
