"""Helpers for the HTTPS end-to-end tests: a couchlite process started with TLS flags whose ports and
certificate fingerprint are read back from the lines it prints, and the bytes of a real ClientHello."""

from __future__ import annotations

import os
import re
import socket
import ssl
import time

from processes import START_TIMEOUT_S, Process

ADMIN = ("admin", "pass")


class TLSServer(Process):
    """One `couchlite` with `--tls …`; `start()` reads `couchlite listening on …` and the fingerprint line."""

    def __init__(self, binary: str, root: str, *flags: str, name: str = "tls"):
        super().__init__(binary, root, name)
        self.flags = list(flags)
        self.http_port: int | None = None
        self.https_port: int | None = None
        self.fingerprint: str | None = None

    @property
    def cert_path(self) -> str:
        return os.path.join(self.data_dir, "tls-cert.pem")

    @property
    def key_path(self) -> str:
        return os.path.join(self.data_dir, "tls-key.pem")

    @property
    def https(self) -> str:
        return f"https://127.0.0.1:{self.https_port}"

    def start(self, *extra: str, env: dict | None = None) -> "TLSServer":
        args = ["--bind", "127.0.0.1", "--data-dir", self.data_dir, "--admin", f"{ADMIN[0]}:{ADMIN[1]}",
                "--pbkdf2-iterations", "1000", "--log-level", "warning", *self.flags, *extra]
        # Port 0 for both unless the flags or the environment say otherwise.
        if "--port" not in args and "COUCHLITE_PORT" not in (env or {}):
            args += ["--port", "0"]
        if "--tls-port" not in args and "COUCHLITE_TLS_PORT" not in (env or {}):
            args += ["--tls-port", "0"]
        self.spawn(args, env=env)
        self.http_port = self.https_port = self.fingerprint = None
        self.read_lines(self._note_line, START_TIMEOUT_S, "https and fingerprint lines")
        return self

    def _note_line(self, line: str) -> bool:
        """Keeps the ports and the fingerprint a start line names; true once HTTPS and the fingerprint are known."""
        line = line.strip()
        if m := re.match(r"couchlite listening on http://127\.0\.0\.1:(\d+)/$", line):
            self.http_port = int(m.group(1))
        if m := re.match(r"couchlite listening on https://127\.0\.0\.1:(\d+)/$", line):
            self.https_port = int(m.group(1))
        if m := re.match(r"couchlite TLS certificate SHA-256 fingerprint: ([0-9A-F:]{95})$", line):
            self.fingerprint = m.group(1)
        return self.https_port is not None and self.fingerprint is not None

    def rss_bytes(self) -> int:
        return self.status_kib("VmRSS") * 1024

    def threads(self) -> int:
        return self.status_kib("Threads")

    def verified_context(self) -> ssl.SSLContext:
        """A client context that trusts only this server's certificate."""
        return ssl.create_default_context(cafile=self.cert_path)

    def get(self, path: str = "/", timeout: float = 5) -> tuple[int, bytes]:
        """One verified HTTPS request with Python's `ssl` (no connection reuse)."""
        with socket.create_connection(("127.0.0.1", self.https_port), timeout=timeout) as raw:
            with self.verified_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
                data = b""
                while chunk := tls.recv(65536):
                    data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        return int(head.split(b" ")[1]), body


def client_hello(server_hostname: str = "localhost") -> bytes:
    """The first flight of a real TLS client (Python's OpenSSL): a complete ClientHello record."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=server_hostname)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = outgoing.read()
    assert hello[:1] == b"\x16" and len(hello) > 100, hello[:16]
    return hello


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the peer closes (or resets) `sock` within `seconds`, whatever it sends first."""
    sock.settimeout(seconds)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    return False
