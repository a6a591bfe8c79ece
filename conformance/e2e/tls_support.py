"""Helpers for the HTTPS end-to-end tests: a couchlite process started with TLS flags whose ports and
certificate fingerprint are read back from the lines it prints, and the bytes of a real ClientHello."""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import ssl
import subprocess
import time

START_TIMEOUT_S = 20
ADMIN = ("admin", "pass")


class TLSServer:
    """One `couchlite` with `--tls …`; `start()` reads `couchlite listening on …` and the fingerprint line."""

    def __init__(self, binary: str, root: str, *flags: str, name: str = "tls"):
        self.binary = binary
        self.root = os.path.join(root, name)
        self.data_dir = os.path.join(self.root, "data")
        self.log_path = os.path.join(self.root, "server.log")
        self.flags = list(flags)
        os.makedirs(self.root, exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.http_port: int | None = None
        self.https_port: int | None = None
        self.fingerprint: str | None = None
        self.stdout = ""

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
        args = [self.binary, "--bind", "127.0.0.1", "--data-dir", self.data_dir, "--admin", f"{ADMIN[0]}:{ADMIN[1]}",
                "--pbkdf2-iterations", "1000", "--log-level", "warning", *self.flags, *extra]
        # Port 0 for both unless the flags or the environment say otherwise.
        if "--port" not in args and "COUCHLITE_PORT" not in (env or {}):
            args += ["--port", "0"]
        if "--tls-port" not in args and "COUCHLITE_TLS_PORT" not in (env or {}):
            args += ["--tls-port", "0"]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                                     env=env)
        log.close()
        self.http_port = self.https_port = self.fingerprint = None
        self.stdout = ""
        deadline = time.monotonic() + START_TIMEOUT_S
        pending = b""
        # Unbuffered reads: a buffered readline would hide lines already read from select.
        # The fingerprint and "generated …" lines come in one write, so they are read together.
        while self.https_port is None or self.fingerprint is None:
            left = deadline - time.monotonic()
            assert left > 0, f"no https line within {START_TIMEOUT_S} s: {self.stdout!r}\n{self.log_text()}"
            ready, _, _ = select.select([self.proc.stdout], [], [], min(left, 0.1))
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                assert chunk, f"couchlite exited ({self.proc.wait()}) early: {self.stdout!r}\n{self.log_text()}"
                pending += chunk
            while b"\n" in pending:
                raw, _, pending = pending.partition(b"\n")
                line = raw.decode().strip()
                self.stdout += line + "\n"
                if m := re.match(r"couchlite listening on http://127\.0\.0\.1:(\d+)/$", line):
                    self.http_port = int(m.group(1))
                if m := re.match(r"couchlite listening on https://127\.0\.0\.1:(\d+)/$", line):
                    self.https_port = int(m.group(1))
                if m := re.match(r"couchlite TLS certificate SHA-256 fingerprint: ([0-9A-F:]{95})$", line):
                    self.fingerprint = m.group(1)
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()

    def log_text(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def rss_bytes(self) -> int:
        return status_field(self.proc.pid, "VmRSS") * 1024

    def threads(self) -> int:
        return status_field(self.proc.pid, "Threads")

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


def status_field(pid: int, name: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {name} in /proc/{pid}/status")


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
