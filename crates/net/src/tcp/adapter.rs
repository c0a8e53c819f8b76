//! A kernel TCP variant as data (`[[tcp]]` of the adapter file): its congestion control,
//! the module parameters it sets, the receiver's buffer and the two commands; checked
//! when the file is read, and asked whether it can run on this machine.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::peers::find_program;

/// Smallest [`TcpAdapter::receive_buffer`]: the namespace's default receive buffer.
const MIN_RECEIVE_BUFFER: u64 = crate::tun::TCP_BUFFER_DEFAULT_BYTES;
/// Largest [`TcpAdapter::receive_buffer`], 1 GiB.
const MAX_RECEIVE_BUFFER: u64 = 1 << 30;

/// The placeholders a TCP variant's commands may use.
const PLACEHOLDERS: [&str; 6] = ["receiver_addr", "port", "cc", "size", "seconds", "dir"];

/// One kernel TCP variant (`[[tcp]]` of the adapter file).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpAdapter {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Programs that must exist.
    #[serde(default)]
    pub requires: Vec<String>,
    /// The kernel's congestion control (`/proc/sys/net/ipv4/tcp_available_congestion_control`).
    pub cc: String,
    /// Files (module parameters) written before the run and restored after.
    #[serde(default)]
    pub sysfs: BTreeMap<String, String>,
    /// How the sender's slow-start exit shows in tcp_info: `ssthresh` (the first finite
    /// ssthresh); absent: the variant has no slow-start exit to classify (BBR).
    #[serde(default)]
    pub exit_signal: Option<String>,
    /// The receiver's largest TCP receive buffer, the top of `net.ipv4.tcp_rmem` in the
    /// client namespace (`"28MB"`, `"32MiB"`): the kernel's auto-tuning grows the
    /// advertised window to a part of it (the rest is its allowance for buffer overhead;
    /// about two thirds on this machine's Linux 6.18). Absent:
    /// [`crate::tun::TCP_BUFFER_MAX_BYTES`], enough never to hold a GEO sender.
    #[serde(default)]
    pub receive_buffer: Option<String>,
    /// Started in the client namespace; must listen on `{port}`.
    pub receiver: Vec<String>,
    /// Started in the server namespace; sends to the receiver for `{seconds}` (the time
    /// cap) or until stopped: the download ends when the link has delivered `{size}`
    /// distinct bytes of it, and the sender is then stopped (SIGTERM).
    pub sender: Vec<String>,
}

impl TcpAdapter {
    pub(crate) fn validate(&self) -> Result<(), String> {
        let ctx = |what: &str| format!("adapters: tcp variant {:?}: {what}", self.name);
        if !crate::peers::valid_name(&self.name) {
            return Err(ctx("name must be lowercase letters, digits, - or _"));
        }
        if self.cc.is_empty() || !self.cc.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(ctx("cc must be a kernel congestion control name"));
        }
        if self.receiver.is_empty() || self.sender.is_empty() {
            return Err(ctx("receiver and sender are commands"));
        }
        self.receive_buffer_bytes().map_err(|e| ctx(&e))?;
        if let Some(s) = &self.exit_signal
            && s != "ssthresh"
        {
            return Err(ctx(&format!("exit_signal {s:?}: expected \"ssthresh\"")));
        }
        for path in self.sysfs.keys() {
            if !path.starts_with("/sys/module/") || path.contains("..") {
                return Err(ctx(&format!("sysfs {path:?} is not under /sys/module/")));
            }
        }
        for text in self.receiver.iter().chain(&self.sender) {
            let mut rest = text.as_str();
            while let Some(open) = rest.find('{') {
                let after = &rest[open + 1..];
                let Some(close) = after.find('}') else {
                    return Err(ctx(&format!("unclosed {{ in {text:?}")));
                };
                if !PLACEHOLDERS.contains(&&after[..close]) {
                    return Err(ctx(&format!(
                        "unknown placeholder {{{}}} in {text:?} (known: {})",
                        &after[..close],
                        PLACEHOLDERS.join(", ")
                    )));
                }
                rest = &after[close + 1..];
            }
        }
        Ok(())
    }

    /// [`Self::receive_buffer`] in bytes, if given.
    pub fn receive_buffer_bytes(&self) -> Result<Option<u64>, String> {
        let Some(text) = &self.receive_buffer else {
            return Ok(None);
        };
        let bytes = satquic_link::units::parse_size(text)
            .map_err(|e| format!("receive_buffer {text:?}: {e}"))?;
        // tcp_rmem's default (middle) value is 128 KiB: the top must not be below it.
        if !(MIN_RECEIVE_BUFFER..=MAX_RECEIVE_BUFFER).contains(&bytes) {
            return Err(format!(
                "receive_buffer {text:?} must be between {MIN_RECEIVE_BUFFER} and {MAX_RECEIVE_BUFFER} bytes"
            ));
        }
        Ok(Some(bytes))
    }

    /// Why the variant cannot run here, or `None`.
    pub fn missing(&self) -> Option<String> {
        if !crate::tun::is_root() {
            return Some("kernel TCP rows need root (network namespaces, TUN)".into());
        }
        if !Path::new("/dev/net/tun").exists() {
            return Some("/dev/net/tun is missing".into());
        }
        for program in self.requires.iter().map(String::as_str).chain(["ip", "ss"]) {
            if find_program(program).is_none() {
                return Some(format!("{program} not found"));
            }
        }
        let available =
            std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
                .unwrap_or_default();
        if !available.split_whitespace().any(|c| c == self.cc) {
            // A module not loaded yet is loaded when a socket asks for it (as root).
            let module = format!("/lib/modules/{}", kernel_release());
            let loadable = Path::new(&format!("/sys/module/tcp_{}", self.cc)).exists()
                || Path::new(&module).exists();
            if !loadable {
                return Some(format!(
                    "the kernel offers no {} ({})",
                    self.cc,
                    available.trim()
                ));
            }
        }
        for path in self.sysfs.keys() {
            if !Path::new(path).exists() {
                return Some(format!(
                    "{path} does not exist (the module or kernel lacks it)"
                ));
            }
        }
        None
    }
}

/// The running kernel's release (`uname -r`).
fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Replaces each `{name}` by its value.
pub(super) fn expand(text: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = text.to_string();
    for (k, v) in values {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapters_are_checked() {
        let ok = TcpAdapter {
            name: "tcp-cubic".into(),
            description: String::new(),
            requires: vec!["iperf3".into()],
            cc: "cubic".into(),
            sysfs: BTreeMap::new(),
            exit_signal: Some("ssthresh".into()),
            receive_buffer: None,
            receiver: vec!["iperf3".into(), "-s".into()],
            sender: vec!["iperf3".into(), "-c".into(), "{receiver_addr}".into()],
        };
        assert!(ok.validate().is_ok());
        let mut bad = ok.clone();
        bad.sender.push("{nope}".into());
        assert!(bad.validate().unwrap_err().contains("{nope}"));
        let mut bad = ok.clone();
        bad.sysfs.insert("/etc/passwd".into(), "1".into());
        assert!(bad.validate().is_err());
        let mut bad = ok.clone();
        bad.exit_signal = Some("cwnd".into());
        assert!(bad.validate().is_err());
        let mut window = ok;
        window.receive_buffer = Some("32MiB".into());
        assert!(window.validate().is_ok());
        assert_eq!(window.receive_buffer_bytes(), Ok(Some(32 << 20)));
        for bad in ["lots", "1kB", "2GiB"] {
            window.receive_buffer = Some(bad.into());
            let e = window.validate().unwrap_err();
            assert!(
                e.contains("receive_buffer") && !e.contains('\n'),
                "{bad}: {e}"
            );
        }
    }
}
