//! Placeholder expansion: how `{name}` in an adapter's commands, environment and files
//! becomes this run's value.
//!
//! The names are checked when the adapter file is read ([`check_placeholders`]), so an
//! unknown one is a usage error, not a literal `{ulr}` on some peer's command line; the
//! values are filled in per role when a cell starts ([`role_command`]). `{{` and `}}` are
//! literal braces (a Caddyfile needs them). The names and what they stand for are listed in
//! [the adapter file's docs](super::adapter).

use std::collections::BTreeMap;

use super::adapter::Role;

/// The placeholders a command, argument list, environment value or file may use.
const PLACEHOLDERS: [&str; 19] = [
    "satquic",
    "peers",
    "host",
    "port",
    "addr",
    "www",
    "file",
    "url",
    "size",
    "cert",
    "key",
    "download",
    "alpn",
    "cc",
    "qlogdir",
    "keylog",
    "dir",
    "cc_args",
    "qlog_args",
];

/// Checks that every `{name}` in `text` is a known placeholder (`{{` and `}}` are
/// literal braces).
pub(super) fn check_placeholders(text: &str) -> Result<(), String> {
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        if let Some(literal) = after.strip_prefix('{') {
            rest = literal;
            continue;
        }
        let Some(close) = after.find('}') else {
            return Err(format!("unclosed {{ in {text:?} (write {{{{ for a brace)"));
        };
        let name = &after[..close];
        if !PLACEHOLDERS.contains(&name) {
            // Debug-quoted: a name may hold a newline, and the error is one line.
            return Err(format!(
                "unknown placeholder {{{}}} in {text:?}",
                name.escape_debug()
            ));
        }
        rest = &after[close + 1..];
    }
    Ok(())
}

/// Replaces `{name}` by its value (unknown names stay as they are); `{{` and `}}` become
/// `{` and `}`.
pub(super) fn expand(text: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if rest[i..].starts_with("}") {
            out.push('}');
            rest = after.strip_prefix('}').unwrap_or(after);
            continue;
        }
        if let Some(literal) = after.strip_prefix('{') {
            out.push('{');
            rest = literal;
            continue;
        }
        match after.find('}') {
            Some(close) if values.contains_key(&after[..close]) => {
                out.push_str(&values[&after[..close]]);
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The command of a role with the placeholders filled in.
pub(super) fn role_command(
    role: &Role,
    values: &BTreeMap<&str, String>,
    cc: Option<&str>,
    qlog: bool,
) -> (Vec<String>, Vec<(String, String)>) {
    let mut values = values.clone();
    values.insert("cc", cc.unwrap_or("").to_string());
    let mut words = Vec::new();
    for w in &role.command {
        match w.as_str() {
            "{cc_args}" => {
                if cc.is_some() {
                    words.extend(role.cc_args.iter().map(|a| expand(a, &values)));
                }
            }
            "{qlog_args}" => {
                if qlog {
                    words.extend(role.qlog_args.iter().map(|a| expand(a, &values)));
                }
            }
            _ => words.push(expand(w, &values)),
        }
    }
    let env = role
        .env
        .iter()
        .filter(|(k, _)| qlog || k.as_str() != "QLOGDIR")
        .map(|(k, v)| (k.clone(), expand(v, &values)))
        .collect();
    (words, env)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::AdapterFile;

    #[test]
    fn placeholders_expand_and_lists_splice() {
        let file = AdapterFile::parse(
            "[[impl]]\nname = \"x\"\nalpn = [\"h3\"]\ncc = { cubic = \"CUBIC\" }\n\
             [impl.client]\ncommand = [\"c\", \"{cc_args}\", \"{qlog_args}\", \"{url}\"]\n\
             cc_args = [\"--cc\", \"{cc}\"]\nqlog_args = [\"--qlog={qlogdir}\"]\n\
             env = { QLOGDIR = \"{qlogdir}\", SSLKEYLOGFILE = \"{keylog}\" }\nsuccess = \"file\"\n",
        )
        .unwrap();
        let role = file.impls[0].client.as_ref().unwrap();
        let values = BTreeMap::from([
            ("url", "https://h:1/f".to_string()),
            ("qlogdir", "/q".to_string()),
            ("keylog", "/k".to_string()),
        ]);
        let (words, env) = role_command(role, &values, Some("CUBIC"), false);
        assert_eq!(words, ["c", "--cc", "CUBIC", "https://h:1/f"]);
        assert_eq!(env, [("SSLKEYLOGFILE".to_string(), "/k".to_string())]);
        let (words, env) = role_command(role, &values, None, true);
        assert_eq!(words, ["c", "--qlog=/q", "https://h:1/f"]);
        assert_eq!(env.len(), 2);
        assert_eq!(expand("{{\n a {url} }}", &values), "{\n a https://h:1/f }");
        assert!(check_placeholders("{{ admin off }}").is_ok());
    }
}
