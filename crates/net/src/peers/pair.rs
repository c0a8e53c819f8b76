//! Which client x server pairs can run, and how they talk: the protocol both speak and each
//! side's name for the chosen congestion control.
//!
//! A pair that cannot run (no common ALPN, a server that cannot select the cc) is said so
//! before anything starts, and the matrix records why instead of a failed download.

use super::adapter::Adapter;

/// What a pair will use to talk, or why it cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairPlan {
    pub alpn: String,
    /// Each side's name for the chosen cc (none: the implementation's default).
    pub client_cc: Option<String>,
    pub server_cc: Option<String>,
}

/// Picks the protocol (the first of `alpn_preference` both speak) and each side's cc
/// name; `Err` says why the pair cannot run (`cc` is one of [`CC_NAMES`](super::CC_NAMES) or `default`).
pub fn plan_pair(
    client: &Adapter,
    server: &Adapter,
    alpn_preference: &[String],
    cc: &str,
) -> Result<PairPlan, String> {
    if client.client.is_none() {
        return Err(format!("{} has no client", client.name));
    }
    if server.server.is_none() {
        return Err(format!("{} has no server", server.name));
    }
    let alpn = alpn_preference
        .iter()
        .find(|a| client.alpn.contains(a) && server.alpn.contains(a))
        .ok_or_else(|| {
            format!(
                "no common ALPN: client {} speaks {}, server {} speaks {}",
                client.name,
                client.alpn.join(","),
                server.name,
                server.alpn.join(",")
            )
        })?;
    let (client_cc, server_cc) = if cc == "default" {
        (None, None)
    } else {
        // The server sends the download, so its cc is the one that matters; the client
        // uses the same where it can select one.
        let server_cc = server
            .cc_name(cc)
            .ok_or_else(|| format!("server {} cannot select cc {cc}", server.name))?;
        (
            client.cc_name(cc).map(str::to_string),
            Some(server_cc.to_string()),
        )
    };
    Ok(PairPlan {
        alpn: alpn.clone(),
        client_cc,
        server_cc,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::AdapterFile;

    #[test]
    fn pairs_need_a_common_alpn_and_the_servers_cc() {
        let file = AdapterFile::builtin();
        let satquic = file.get("satquic").unwrap();
        let ngtcp2 = file.get("ngtcp2").unwrap();
        let pref = vec!["h3".to_string(), "hq-interop".to_string()];
        let p = plan_pair(satquic, ngtcp2, &pref, "bbr").unwrap();
        assert_eq!(p.alpn, "h3");
        assert!(p.server_cc.is_some());
        let hq_only = vec!["hq-interop".to_string()];
        let err = plan_pair(satquic, ngtcp2, &hq_only, "default").unwrap_err();
        assert!(err.contains("no common ALPN"), "{err}");
    }
}
