#!/usr/bin/env python3
"""A small file server on aioquic for `satquic matrix`: hq-interop and h3 GETs of files
under --www, as the QUIC interop runner's servers do. aioquic's own examples are in its
sdist, not its wheel, so satquic ships this instead.

    server.py --host 127.0.0.1 --port 4433 --cert cert.pem --key key.pem --www DIR
              [--cc reno|cubic] [--qlog-dir DIR]

SSLKEYLOGFILE names a key log file, as for the other implementations.
"""
import argparse
import asyncio
import os
import signal

from aioquic.asyncio import QuicConnectionProtocol, serve
from aioquic.h0.connection import H0_ALPN, H0Connection
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated
from aioquic.quic.logger import QuicFileLogger


class FileServer(QuicConnectionProtocol):
    www = "."
    # Every connection, so that their qlogs can be written when the server is stopped.
    connections = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.http = None
        FileServer.connections.append(self)

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated):
            if event.alpn_protocol in H3_ALPN:
                self.http = H3Connection(self._quic)
            elif event.alpn_protocol in H0_ALPN:
                self.http = H0Connection(self._quic)
        if self.http is None:
            return
        for http_event in self.http.handle_event(event):
            if isinstance(http_event, HeadersReceived):
                self.respond(http_event)

    def respond(self, event):
        headers = dict(event.headers)
        path = headers.get(b":path", b"/").decode(errors="replace").split("?")[0]
        name = os.path.normpath(path.lstrip("/"))
        full = os.path.join(self.www, name)
        if name.startswith("..") or not os.path.isfile(full):
            status, body = b"404", b""
        else:
            status = b"200"
            with open(full, "rb") as f:
                body = f.read()
        if isinstance(self.http, H3Connection):
            self.http.send_headers(
                event.stream_id,
                [(b":status", status), (b"content-length", str(len(body)).encode())],
            )
        else:
            self.http.send_headers(event.stream_id, [(b":status", status)])
        self.http.send_data(event.stream_id, body, end_stream=True)
        self.transmit()


async def main(args):
    config = QuicConfiguration(
        is_client=False,
        alpn_protocols=H3_ALPN + H0_ALPN,
        congestion_control_algorithm=args.cc,
    )
    config.load_cert_chain(args.cert, args.key)
    if os.environ.get("SSLKEYLOGFILE"):
        config.secrets_log_file = open(os.environ["SSLKEYLOGFILE"], "a")
    if args.qlog_dir:
        config.quic_logger = QuicFileLogger(args.qlog_dir)
    FileServer.www = args.www
    await serve(args.host, args.port, configuration=config, create_protocol=FileServer)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    # A connection's qlog is written when its trace ends, normally at the end of its
    # closing period; the matrix stops the server before that.
    if config.quic_logger is not None:
        for protocol in FileServer.connections:
            trace = getattr(protocol._quic, "_quic_logger", None)
            if trace is not None:
                try:
                    config.quic_logger.end_trace(trace)
                except Exception:
                    pass


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=4433)
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--www", required=True)
    p.add_argument("--cc", default="reno", choices=["reno", "cubic"])
    p.add_argument("--qlog-dir")
    asyncio.run(main(p.parse_args()))
