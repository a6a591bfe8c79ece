"""Fixtures for end-to-end tests that start couchlite servers themselves.

These tests need COUCHLITE_BIN, the path of a built couchlite binary; they are not part
of the black-box suite a foreign CouchDB is tested with (conformance/conftest.py ignores this
folder unless it is named on the command line):

    COUCHLITE_BIN=$(swift build --show-bin-path)/couchlite \\
        python3 -m pytest conformance/e2e -q -p no:cacheprovider
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

UP_TIMEOUT_S = 20       # seconds to wait for GET /_up after a start
STOP_TIMEOUT_S = 5      # seconds SIGTERM gets before SIGKILL at teardown
ADMIN = ("admin", "pass")


def pytest_collection_modifyitems(config, items):
    binary = os.environ.get("COUCHLITE_BIN", "")
    if not binary:
        raise pytest.UsageError(
            "COUCHLITE_BIN is not set. conformance/e2e starts couchlite servers itself and needs "
            "the path of the couchlite binary, e.g.\n"
            "  COUCHLITE_BIN=$(swift build --show-bin-path)/couchlite "
            "python3 -m pytest conformance/e2e\n"
            "(or run `bash scripts/test.sh`, which does this).")
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        raise pytest.UsageError(f"COUCHLITE_BIN={binary!r} is not an executable file")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One couchlite process on a fixed port and data dir; can be killed and restarted."""

    def __init__(self, binary: str, name: str, root: str, args: tuple[str, ...] = (),
                 data_dir: str | None = None):
        self.binary = binary
        self.name = name
        self.port = free_port()
        self.args = list(args)
        self.data_dir = data_dir or os.path.join(root, name, "data")
        self.log_path = os.path.join(root, name, "server.log")
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://{ADMIN[0]}:{ADMIN[1]}@127.0.0.1:{self.port}"

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None, f"{self.name} is already running"
        self.starts += 1
        log = open(self.log_path, "ab")
        log.write(f"\n--- start #{self.starts}\n".encode())
        log.flush()
        self.proc = subprocess.Popen(
            [self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--data-dir", self.data_dir,
             "--admin", f"{ADMIN[0]}:{ADMIN[1]}", "--log-level", "info", *self.args],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + UP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"{self.name} exited with {self.proc.returncode} before answering "
                            f"GET /_up\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_up", timeout=2) as r:
                    if r.status == 200:
                        return
            except Exception:
                pass
            time.sleep(0.1)
        pytest.fail(f"{self.name} did not answer GET /_up within {UP_TIMEOUT_S} s\n{self.log_tail()}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send `sig` (SIGKILL by default: no shutdown code runs) and wait for the exit."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=STOP_TIMEOUT_S if sig != signal.SIGKILL else 30)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log_tail(self, lines: int = 40) -> str:
        try:
            with open(self.log_path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return f"({self.name}: no log)"
        return f"--- {self.name} log (tail)\n" + "\n".join(text.splitlines()[-lines:])


@pytest.fixture
def servers(request):
    """`servers("a")` starts a couchlite server with a fresh data dir (or `data_dir=`, with more
    flags in `args=`); all are stopped and their dirs removed afterwards (logs are printed when
    the test failed)."""
    binary = os.environ["COUCHLITE_BIN"]
    root = tempfile.mkdtemp(prefix="couchlite-e2e-")
    made: list[Server] = []

    def start(name: str, args: tuple[str, ...] = (), data_dir: str | None = None) -> Server:
        server = Server(binary, name, root, args, data_dir)
        made.append(server)
        server.start()
        return server

    yield start
    for server in made:
        server.stop()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for server in made:
            print(server.log_tail())
    shutil.rmtree(root, ignore_errors=True)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.rep_call = report
    return report
