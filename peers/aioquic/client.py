#!/usr/bin/env python3
"""A small download client on aioquic for `satquic matrix`: one hq-interop or h3 GET,
saved under --download with the URL's file name, as the QUIC interop runner's clients do.
Exits 0 when the response ended, 1 otherwise.

    client.py --alpn h3|hq-interop --download DIR [--cc reno|cubic] [--qlog-dir DIR] URL

Certificates are not verified (the matrix runs on loopback with a fresh self-signed one).
SSLKEYLOGFILE names a key log file.
"""
import argparse
import asyncio
import os
import ssl
import sys
from urllib.parse import urlparse

from aioquic.asyncio import QuicConnectionProtocol, connect
from aioquic.h0.connection import H0Connection
from aioquic.h3.connection import H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.logger import QuicFileLogger


class Fetcher(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # From the start: the server's control and QPACK streams may arrive before the
        # request is sent, and a lost QPACK instruction blocks the response's headers.
        if self._quic.configuration.alpn_protocols[0] == "h3":
            self.http = H3Connection(self._quic)
        else:
            self.http = H0Connection(self._quic)
        self.out = None
        self.status = None
        self.done = asyncio.get_event_loop().create_future()

    def quic_event_received(self, event):
        for http_event in self.http.handle_event(event):
            if isinstance(http_event, HeadersReceived):
                self.status = dict(http_event.headers).get(b":status")
            elif isinstance(http_event, DataReceived):
                self.out.write(http_event.data)
            if getattr(http_event, "stream_ended", False) and not self.done.done():
                self.done.set_result(True)

    def get(self, url, out):
        self.out = out
        u = urlparse(url)
        stream_id = self._quic.get_next_available_stream_id()
        self.http.send_headers(
            stream_id,
            [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", u.netloc.encode()),
                (b":path", (u.path or "/").encode()),
            ],
            end_stream=True,
        )
        self.transmit()


async def main(args):
    u = urlparse(args.url)
    config = QuicConfiguration(
        is_client=True,
        alpn_protocols=[args.alpn],
        congestion_control_algorithm=args.cc,
        verify_mode=ssl.CERT_NONE,
        server_name="localhost",
    )
    if os.environ.get("SSLKEYLOGFILE"):
        config.secrets_log_file = open(os.environ["SSLKEYLOGFILE"], "a")
    if args.qlog_dir:
        config.quic_logger = QuicFileLogger(args.qlog_dir)
    name = os.path.basename(u.path) or "index.html"
    with open(os.path.join(args.download, name), "wb") as out:
        async with connect(
            u.hostname, u.port or 443, configuration=config, create_protocol=Fetcher
        ) as client:
            client.get(args.url, out)
            await client.done
            out.close()
            # Send CONNECTION_CLOSE and leave: leaving the `async with` would wait
            # through the closing period (3 PTO, ~2 s on a GEO path), which would count
            # against the download time.
            client.close()
            # The qlog is written when a trace ends, which os._exit would skip.
            trace = getattr(client._quic, "_quic_logger", None)
            if config.quic_logger is not None and trace is not None:
                config.quic_logger.end_trace(trace)
            if config.secrets_log_file:
                config.secrets_log_file.flush()
            sys.stdout.flush()
            os._exit(0)
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("url")
    p.add_argument("--alpn", default="h3", choices=["h3", "hq-interop"])
    p.add_argument("--download", required=True)
    p.add_argument("--cc", default="reno", choices=["reno", "cubic"])
    p.add_argument("--qlog-dir")
    sys.exit(asyncio.run(main(p.parse_args())))
