"""Fixtures for end-to-end tests that start couchlite servers themselves.

These tests need COUCHLITE_BIN, the path of a built couchlite binary; they are not part
of the black-box suite a foreign CouchDB is tested with (conformance/conftest.py ignores this
folder unless it is named on the command line):

    COUCHLITE_BIN=$(swift build --show-bin-path)/couchlite \\
        python3 -m pytest conformance/e2e -q -p no:cacheprovider
"""

from __future__ import annotations

import os
import socket
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from processes import Process, process_fixture  # noqa: E402 (after the path it is found on)

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


class Server(Process):
    """One couchlite process on a fixed port and data dir; can be killed and restarted."""

    stop_timeout_s = STOP_TIMEOUT_S

    def __init__(self, binary: str, name: str, root: str, args: tuple[str, ...] = (),
                 data_dir: str | None = None):
        super().__init__(binary, root, name)
        self.port = free_port()
        self.args = list(args)
        self.data_dir = data_dir or self.data_dir
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://{ADMIN[0]}:{ADMIN[1]}@127.0.0.1:{self.port}"

    def start(self) -> None:
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"\n--- start #{self.starts}\n".encode())
        self.spawn(["--bind", "127.0.0.1", "--port", str(self.port), "--data-dir", self.data_dir,
                    "--admin", f"{ADMIN[0]}:{ADMIN[1]}", "--log-level", "info", *self.args], capture_stdout=False)
        self.wait_for_up(self.port, UP_TIMEOUT_S)


@pytest.fixture
def servers(request):
    """`servers("a")` starts a couchlite server with a fresh data dir (or `data_dir=`, with more
    flags in `args=`); all are stopped and their dirs removed afterwards (logs are printed when
    the test failed)."""
    binary = os.environ["COUCHLITE_BIN"]

    def start(root: str, index: int, name: str, args: tuple[str, ...] = (), data_dir: str | None = None) -> Server:
        server = Server(binary, name, root, args, data_dir)
        server.start()
        return server

    yield from process_fixture(request, "couchlite-e2e-", start)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.rep_call = report
    return report
