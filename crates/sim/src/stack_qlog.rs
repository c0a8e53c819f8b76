//! quinn-proto's own qlog, in virtual time ([`RunOptions::stack_qlog`](crate::RunOptions)).
//!
//! quinn-proto (feature `qlog`) writes `transport:packet_sent`, `transport:packet_received`,
//! `recovery:packet_lost` and `recovery:metrics_updated` for a connection whose
//! `TransportConfig` has a qlog stream, timed from the `Instant` it is given. The simulator
//! gives it the run's `base` instant, so event times are virtual milliseconds since the
//! simulation start, the time base of satquic's own qlog ([`satquic_run::qlog`]), which
//! merges the two into one file per connection and vantage point.
//!
//! Each connection writes into its own in-memory buffer; the run hands the buffers out in
//! its [`RunOutput`](crate::RunOutput) as [`StackQlog`]s. Everything quinn writes is a
//! function of virtual time, packet numbers, sizes and seeded connection IDs, so the bytes
//! are as deterministic as the record. The cost is one JSON event per packet and per ACK,
//! so it is off unless asked for.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use quinn_proto::{ConnectionId, QlogConfig, QlogStream};
use satquic_run::qlog::{QlogBuffer, StackQlog, Vantage};

/// The qlog buffers of one flow's connection, client and server.
pub(crate) struct FlowQlog {
    client: QlogBuffer,
    server: QlogBuffer,
    /// The client's first destination connection ID (the ODCID that names the files).
    odcid: Arc<Mutex<Option<ConnectionId>>>,
}

impl FlowQlog {
    pub(crate) fn new() -> Self {
        FlowQlog {
            client: QlogBuffer::default(),
            server: QlogBuffer::default(),
            odcid: Arc::default(),
        }
    }

    /// The qlog stream for one side's `TransportConfig`, timed from `base`.
    pub(crate) fn stream(&self, vantage: Vantage, base: Instant) -> Option<QlogStream> {
        let buffer = match vantage {
            Vantage::Client => self.client.clone(),
            Vantage::Server => self.server.clone(),
        };
        let mut config = QlogConfig::default();
        config
            .writer(Box::new(buffer))
            .title(Some(format!("satquic-sim {}", vantage.name())))
            .start_time(base);
        config.into_stream()
    }

    /// Where the client's connection ID provider notes the ODCID it hands out.
    pub(crate) fn odcid_slot(&self) -> Arc<Mutex<Option<ConnectionId>>> {
        self.odcid.clone()
    }

    /// The two qlogs of flow `flow` (whose data sender is the server unless `upload`),
    /// or none if the flow never connected.
    pub(crate) fn finish(&self, flow: u32, upload: bool) -> Vec<StackQlog> {
        let odcid = self.odcid.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(odcid) = odcid else {
            return Vec::new();
        };
        let odcid: String = odcid.iter().map(|b| format!("{b:02x}")).collect();
        [
            (Vantage::Client, &self.client, upload),
            (Vantage::Server, &self.server, !upload),
        ]
        .into_iter()
        .map(|(vantage, buffer, sender)| StackQlog {
            flow,
            vantage,
            data_sender: sender,
            odcid: odcid.clone(),
            in_record: true,
            json_seq: buffer.take(),
        })
        .collect()
    }
}
