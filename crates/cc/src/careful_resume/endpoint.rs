//! The Remote Endpoint (RFC 9959 Sec. 2.2): what saved parameters are bound to.

use std::net::IpAddr;

/// The Remote Endpoint of Sec. 2.2: the sender's view of the path, matched against the
/// `saved_remote_endpoint` of saved parameters. The local interface may be unknown (quinn
/// reports it only on some platforms); `None` matches only `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RemoteEndpoint {
    /// The sending interface (a local address).
    pub local: Option<IpAddr>,
    /// The destination address (unicast or anycast; no port, as in Sec. 2.2).
    pub remote: IpAddr,
    /// The DSCP, if the sender sets one per connection (Sec. 2.2).
    pub dscp: Option<u8>,
}

impl RemoteEndpoint {
    /// The endpoint `remote` reached from `local`.
    pub fn new(local: Option<IpAddr>, remote: IpAddr) -> Self {
        Self {
            local,
            remote,
            dscp: None,
        }
    }

    /// The same endpoint with a DSCP.
    pub fn with_dscp(mut self, dscp: u8) -> Self {
        self.dscp = Some(dscp);
        self
    }
}
