"""What every end-to-end helper that runs a couchlite process shares: a folder of its own (data dir and log
file), reading the lines it prints without a buffered reader hiding them from `select`, stopping it with a
signal and a deadline, its memory from /proc, and the pytest fixture shape that makes processes for one test
and cleans up after it (printing their logs when the test failed)."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator

START_TIMEOUT_S = 20


class Process:
    """One couchlite process (not started) with its folder `root/name`: `data`, and `log_name` for stderr."""

    #: How the process is asked to stop, and how long it gets before SIGKILL.
    stop_signal = signal.SIGTERM
    stop_timeout_s = 10.0
    log_name = "server.log"

    def __init__(self, binary: str, root: str, name: str):
        self.binary = binary
        self.name = name
        self.root = os.path.join(root, name)
        self.data_dir = os.path.join(self.root, "data")
        self.log_path = os.path.join(self.root, self.log_name)
        os.makedirs(self.root, exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.stdout = ""
        self._pending = b""

    def spawn(self, args: list[str], *, capture_stdout: bool = True, env: dict | None = None) -> None:
        """Starts `binary args…` with stderr (and stdout too unless `capture_stdout`) appended to the log."""
        assert self.proc is None or self.proc.poll() is not None, f"{self.name} is already running"
        self.stdout = ""
        self._pending = b""
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [self.binary, *args], stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE if capture_stdout else log,
                stderr=log if capture_stdout else subprocess.STDOUT, env=env)

    def read_lines(self, done: Callable[[str], bool], timeout: float = START_TIMEOUT_S,
                   what: str = "the expected line") -> None:
        """Reads printed lines into `stdout` until `done(line)` has been true for one of them; every other
        complete line already read is passed to `done` too (a start line may share a write with others).

        Unbuffered reads: a buffered readline would keep lines it has read where `select` cannot see them."""
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        finished = False
        while True:
            while b"\n" in self._pending:
                raw, _, self._pending = self._pending.partition(b"\n")
                line = raw.decode("utf-8", "replace").rstrip("\r")
                self.stdout += line + "\n"
                finished = done(line) or finished
            if finished:
                return
            left = deadline - time.monotonic()
            assert left > 0, f"{self.name} printed no {what} within {timeout} s: {self.stdout!r}\n{self.log_tail()}"
            ready, _, _ = select.select([self.proc.stdout], [], [], min(left, 0.1))
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                assert chunk, f"{self.name} exited ({self.proc.wait()}) before {what}: {self.stdout!r}\n{self.log_tail()}"
                self._pending += chunk

    def wait_for_up(self, port: int, timeout: float = START_TIMEOUT_S) -> None:
        """Polls `GET /_up` on `port` until it answers 200; fails with the log's tail if the process exits first."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, \
                f"{self.name} exited with {self.proc.returncode} before answering GET /_up\n{self.log_tail()}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_up", timeout=2) as r:
                    if r.status == 200:
                        return
            except Exception:
                pass
            time.sleep(0.1)
        raise AssertionError(f"{self.name} did not answer GET /_up within {timeout} s\n{self.log_tail()}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Sends `sig` (SIGKILL by default: no shutdown code runs) and waits for the exit."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30 if sig == signal.SIGKILL else self.stop_timeout_s)

    def stop(self) -> int | None:
        """Asks the process to stop (`stop_signal`), kills it after `stop_timeout_s`; its exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(self.stop_signal)
            try:
                self.proc.wait(timeout=self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        return self.proc.returncode

    def log_text(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 80) -> str:
        return f"--- {self.name} log (tail)\n" + "\n".join(self.log_text().splitlines()[-lines:])

    def status_kib(self, field: str) -> int:
        """A field of /proc/PID/status (VmRSS, VmHWM, Threads …) as its number (KiB for the Vm fields)."""
        assert self.proc is not None
        return status_field(self.proc.pid, field)


def cpu_seconds(pid: int, *, gone: float | None = None) -> float:
    """utime + stime of the process (all threads) in seconds: fields 14 and 15 of /proc/PID/stat (proc(5)), counted
    after the command name, which may hold spaces. A process that has ended raises, or answers `gone` if given."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        if gone is None:
            raise
        return gone


def status_field(pid: int, name: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {name} in /proc/{pid}/status")


def children(pid: int, subcommand: str | None = None) -> list[tuple[str, int]]:
    """`(subcommand, pid)` of each child of `pid` that runs with an argument (`couchlite query-server`,
    `couchlite media-worker`), only those running `subcommand` if it is given."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid and len(argv) > 1 and subcommand in (None, argv[1].decode(errors="replace")):
            found.append((argv[1].decode(errors="replace"), int(entry)))
    return found


def process_fixture(request, prefix: str, make: Callable[[str, int], Process]) -> Iterator[Callable[..., Process]]:
    """The body of a fixture handing out processes made by `make(root, index, …)` in one temporary root; all
    are stopped and the root removed afterwards, and their output printed when the test failed.

        @pytest.fixture
        def receivers(request):
            yield from process_fixture(request, "couchlite-receive-", lambda root, n, *flags, name=None: …)
    """
    root = tempfile.mkdtemp(prefix=prefix)
    made: list[Process] = []

    def factory(*args, **kwargs) -> Process:
        process = make(root, len(made), *args, **kwargs)
        made.append(process)
        return process

    factory.root = root
    try:
        yield factory
    finally:
        for process in made:
            process.stop()
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            for process in made:
                print(f"--- {process.root}\n{process.stdout}{process.log_tail()}")
        shutil.rmtree(root, ignore_errors=True)


def printed_instructions(args: list[str], last: str = "Press Ctrl-C") -> list[str]:
    """The lines a command prints (stdout, not a terminal) up to the one starting with `last`; then SIGINT."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        lines = []
        while True:
            line = proc.stdout.readline().decode()
            assert line, f"{args[1]} ended before printing its instructions: {lines}"
            lines.append(line.rstrip("\n"))
            if line.startswith(last):
                return lines
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        proc.stdout.close()
