"""Every flag of every subcommand with short, long, relative, odd and out-of-range values: each run is a usage
error (exit 64, its first line on stderr naming the flag) or accepted (it ran, failed at run time with a status
below 128, or started serving and stopped on SIGTERM), never a trap. A one-letter relative `--data-dir d` died
of SIGILL at start in `PrivateFile.createDirectory` (Foundation's `deletingLastPathComponent`).

The flags are read from each subcommand's `--help`, so a new flag is covered without editing this file. All the
runs go through one thread pool, once per session; each test checks one flag's runs."""

from __future__ import annotations

import functools
import http.client
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

SUBCOMMANDS = ("serve", "receive", "push", "replicate")

# The values the command line must survive: numbers out of every range (2^63-1, past 2^64, past a double), text,
# relative paths, a path with spaces, a string longer than a file name may be.
VALUES = (
    "", "0", "-1", "9223372036854775807", "99999999999999999999", "1e400", "abc", "d", "./d", "a path with spaces",
    "x" * 5000,
)
# `receive` takes every option of `serve` through the same rows (`OptionSpec.lifted`), so it gets fewer values
# of those; its own flags get them all.
LIFTED_VALUES = ("99999999999999999999", "d")
# Flags that read units: numbers that overflow only once multiplied by them.
UNIT_VALUES = {
    "--ttl": ("9223372036854775807d", "153722867280912930m", "1h9223372036854775807s", "99999999999999999999s"),
    "--max-size": ("9223372036854775807T", "9223372036854775G", "99999999999999999999k"),
}
# A switch's values (`--once=VALUE`; `--once` alone is the first case).
SWITCH_VALUES = ("false", "abc")

CASE_TIMEOUT_S = 20      # a run still going then is stopped (SIGTERM) and counts as accepted
STOP_TIMEOUT_S = 15      # SIGTERM to exit, else SIGKILL and a failure
MATRIX_SECONDS: list[float] = []  # how long results() took
TRAP_SIGNALS = {signal.SIGILL, signal.SIGTRAP, signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE}


def binary() -> str:
    return os.environ["COUCHLITE_BIN"]


@functools.cache
def flags_of(subcommand: str) -> tuple[tuple[str, bool, str | None], ...]:
    """(flag, takes a value, environment variable) for each row of `couchlite SUBCOMMAND --help`."""
    text = subprocess.run([binary(), subcommand, "--help"], capture_output=True, text=True, timeout=30).stdout
    rows = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        match = re.match(r"^  (--[a-z0-9-]+)( [A-Z][A-Z0-9:,.]*)?(?: |$)", line)
        if not match or match.group(1) == "--help":
            continue
        # The environment variable is at the end of the row's help, which may go on over the next lines.
        help_text = line
        for more in lines[index + 1:]:
            if not more.startswith(" " * 30):
                break
            help_text += more
        variable = re.search(r"\[\$(COUCHLITE_[A-Z0-9_]+)\]", help_text)
        rows.append((match.group(1), match.group(2) is not None, variable.group(1) if variable else None))
    return tuple(rows)


class RefusingPeer(BaseHTTPRequestHandler):
    """A peer that answers every request 401 at once, so that an accepted `push` ends in a moment (exit 77)
    instead of retrying an unreachable one."""

    def refuse(self):
        body = b'{"error":"unauthorized","reason":"Name or password is incorrect."}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = refuse

    def log_message(self, *args):
        pass


@functools.cache
def refusing_peer() -> str:
    server = ThreadingHTTPServer(("127.0.0.1", 0), RefusingPeer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/drop"


def base_arguments(subcommand: str, root: str) -> list[str]:
    """What makes a run of `subcommand` safe and quick before the flag under test (which comes after and wins):
    loopback, a free port, a private data dir, a cheap admin hash; a peer that refuses at once."""
    server = ["--bind", "127.0.0.1", "--port", "0", "--data-dir", os.path.join(root, "data"), "--admin", "a:b",
              "--pbkdf2-iterations", "1000", "--log-level", "error"]
    if subcommand == "serve":
        return ["serve", *server]
    if subcommand == "receive":
        return ["receive", *server, "--out", os.path.join(root, "out"), "--json"]
    photos = os.path.join(root, "photos")
    os.makedirs(photos, exist_ok=True)
    if subcommand == "push":
        return ["push", photos, refusing_peer(), "--data-dir", os.path.join(root, "data")]
    return ["replicate", "source", "target", "--data-dir", os.path.join(root, "data")]


ADDRESS = re.compile(r"http://(?:[^@/\s\"]+@)?(\[[^\]/\s]+\]|[^\[\]@/\s\":]+):(\d+)/")
# `--bind 0` (inet_aton's short 0.0.0.0) or a wildcard prints that host; the probe asks loopback there.
WILDCARDS = {"0", "0.0.0.0", "[::]", "[0:0:0:0:0:0:0:0]"}


def probe(output: str) -> str:
    """Whether a server that printed `output` answers `GET /_up` and a login (`POST /_session` as the base
    arguments' admin). A flag under test may have changed the admin or the allowed hosts, so any answer below
    500 will do: what counts is that the process serves with the value it accepted."""
    match = ADDRESS.search(output)
    if not match:
        return f"no address in {output[:200]!r}"
    try:
        host = "127.0.0.1" if match.group(1) in WILDCARDS else match.group(1).strip("[]")
        connection = http.client.HTTPConnection(host, int(match.group(2)), timeout=10)
        connection.request("GET", "/_up")
        up = connection.getresponse()
        up.read()
        connection.request("POST", "/_session", body=b"name=a&password=b",
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
        login = connection.getresponse()
        login.read()
        connection.close()
    except OSError as error:
        return f"no answer: {error}"
    # `--allowed-hosts abc` makes it refuse this Host (400): still an answer.
    if up.status >= 500 or login.status >= 500:
        return f"_up {up.status}, _session {login.status}"
    return "ok"


def run_case(subcommand: str, flag: str, extra: list[str], environment: dict[str, str]) -> dict:
    """Runs one case in a working directory of its own; what happened."""
    root = tempfile.mkdtemp(prefix="couchlite-flags-")
    try:
        arguments = base_arguments(subcommand, root) + extra
        env = {k: v for k, v in os.environ.items() if not k.startswith("COUCHLITE_")}
        env.update(environment)
        with open(os.path.join(root, "stderr"), "w+b") as stderr:
            started = time.monotonic()
            process = subprocess.Popen([binary(), *arguments], cwd=root, env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=stderr)
            stopped = False
            answered: str | None = None
            deadline = started + CASE_TIMEOUT_S
            output = b""
            while process.poll() is None and time.monotonic() < deadline and answered is None:
                # A serving subcommand prints its address (serve) or its JSON line (receive --json) on stdout:
                # it is asked something, then stopped.
                ready, _, _ = select.select([process.stdout], [], [], 0.05)
                if ready:
                    output += os.read(process.stdout.fileno(), 65536)
                    if ADDRESS.search(output.decode("utf-8", "replace")):
                        answered = probe(output.decode("utf-8", "replace"))
            if process.poll() is None:
                stopped = True
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
                    return {"arguments": extra, "env": environment, "status": "hung after SIGTERM"}
            process.stdout.close()
            stderr.seek(0)
            text = stderr.read().decode("utf-8", "replace")
        return {"arguments": extra, "env": environment, "status": process.returncode, "stopped": stopped,
                "answered": answered, "stderr": text, "seconds": time.monotonic() - started, "flag": flag}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def cases_of(flag: str, takes_value: bool, variable: str | None, how: str) -> list[tuple[list[str], dict]]:
    """The runs of one flag: `--flag VALUE` for each value and with the value missing (the flag last); for
    `serve` also `--flag=` and the flag's environment variable (the parser is shared by every subcommand).
    `how` is "all", "lifted" (a `serve` row in `receive`) or "own" (another subcommand's row)."""
    if not takes_value:
        return [([flag], {})] + [([f"{flag}={value}"], {}) for value in SWITCH_VALUES]
    values = (LIFTED_VALUES if how == "lifted" else VALUES) + UNIT_VALUES.get(flag, ())
    cases = [([flag, value], {}) for value in values]
    cases.append(([flag], {}))
    if how == "all":
        cases.append(([f"{flag}="], {}))
        if variable:
            cases.append(([], {variable: "99999999999999999999"}))
    return cases


def problems(result: dict, flag: str, variable: str | None) -> str | None:
    """Why a run is wrong, or None."""
    status = result["status"]
    if not isinstance(status, int):
        return str(status)
    if status < 0:
        if -status in TRAP_SIGNALS:
            return f"killed by {signal.Signals(-status).name}"
        if not (result["stopped"] and -status == signal.SIGTERM):
            return f"killed by signal {-status}"
    if status >= 128:
        return f"exit {status} (a trap)"
    if result["answered"] not in (None, "ok"):
        return f"started but did not serve: {result['answered']}"
    if "Fatal error" in result["stderr"] or "Program crashed" in result["stderr"]:
        return "a Swift runtime trap on stderr"
    if status == 64:
        first = result["stderr"].splitlines()[0] if result["stderr"] else ""
        if flag not in first and (variable is None or variable not in first):
            return f"usage error without the flag in its first line: {first!r}"
    return None


@functools.cache
def results() -> dict[tuple[str, str], list[dict]]:
    """Every case of every flag, run once through one pool."""
    work = []
    serve_flags = {flag for flag, _, _ in flags_of("serve")}
    for subcommand in SUBCOMMANDS:
        for flag, takes_value, variable in flags_of(subcommand):
            lifted = subcommand == "receive" and flag in serve_flags and flag != "--bind"
            how = "all" if subcommand == "serve" else "lifted" if lifted else "own"
            for extra, environment in cases_of(flag, takes_value, variable, how):
                work.append((subcommand, flag, extra, environment))
        # Options no subcommand has.
        for extra in (["-x"], ["--no-such-flag"], ["--no-such-flag=1"], ["--"]):
            work.append((subcommand, "(unknown)", extra, {}))
    by_flag: dict[tuple[str, str], list[dict]] = {}
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(6, 3 * (os.cpu_count() or 2))) as pool:
        futures = [(subcommand, flag, pool.submit(run_case, subcommand, flag, extra, environment))
                   for subcommand, flag, extra, environment in work]
        for subcommand, flag, future in futures:
            by_flag.setdefault((subcommand, flag), []).append(future.result())
    MATRIX_SECONDS.append(time.monotonic() - started)
    return by_flag


def flag_ids() -> list[tuple[str, str, str | None]]:
    if not os.environ.get("COUCHLITE_BIN"):
        return []
    return [(subcommand, flag, variable) for subcommand in SUBCOMMANDS for flag, _, variable in flags_of(subcommand)]


def test_every_subcommand_has_its_flags_listed():
    """The table below is read from --help: if the help's layout changed, no flag would be tested at all."""
    found = {subcommand: {flag for flag, _, _ in flags_of(subcommand)} for subcommand in SUBCOMMANDS}
    assert {"--data-dir", "--port", "--max-connections", "--replicator-interval", "--js-timeout"} <= found["serve"]
    assert {"--out", "--ttl", "--max-size", "--once", "--data-dir", "--port"} <= found["receive"]
    assert {"--include", "--data-dir", "--outbox", "--pin", "--insecure"} <= found["push"]
    assert {"--batch-size", "--checkpoint-docs", "--since", "--data-dir", "--continuous"} <= found["replicate"]
    assert any(variable for _, _, variable in flags_of("serve"))


@pytest.mark.parametrize(("subcommand", "flag", "variable"), flag_ids(), ids=lambda value: str(value))
def test_flag_values_are_refused_or_accepted_never_a_trap(subcommand, flag, variable):
    runs = results()[(subcommand, flag)]
    wrong = [(run["arguments"], run["env"], why) for run in runs if (why := problems(run, flag, variable))]
    assert not wrong, wrong


@pytest.mark.parametrize("subcommand", SUBCOMMANDS)
def test_unknown_options_are_usage_errors(subcommand):
    for run in results()[(subcommand, "(unknown)")]:
        assert run["status"] == 64, run
        first = run["stderr"].splitlines()[0]
        assert "unknown option" in first and run["arguments"][0] in first, first


def test_one_letter_relative_data_dir_starts_the_server():
    """`couchlite --data-dir d`, run where d does not exist yet: it serves, and d is made owner-only."""
    runs = results()[("serve", "--data-dir")]
    for value in ("d", "./d", "a path with spaces"):
        run = next(run for run in runs if run["arguments"] == ["--data-dir", value])
        assert run["stopped"] and run["status"] == 0, run


def test_the_whole_matrix_stays_quick():
    """About 35 s on a 2-core machine with a load of 3 (most runs are a usage error in ~50 ms of CPU, a dynamic
    link of the binary; a server start and stop costs ~0.2 s). The bound is loose, for a loaded CI machine: it
    catches runs that wait for their timeout, which is what would make the matrix slow."""
    runs = [run for group in results().values() for run in group]
    slowest = max(runs, key=lambda run: run.get("seconds", 0))
    assert len(runs) > 500
    assert slowest.get("seconds", 0) < CASE_TIMEOUT_S / 2, slowest
    assert MATRIX_SECONDS[0] < 90, (len(runs), MATRIX_SECONDS, slowest)


def test_receive_with_an_unusable_out_stops_its_server_and_exits_cleanly():
    """`receive --out` naming a folder that cannot be made (a 5,000-byte name) fails after the server started (the
    folder is made once the data dir's lock is held): it once exited with the server's threads running and was
    killed by SIGSEGV in their teardown about one run in six under load. Now the server is stopped first, and every
    run exits 1 with the reason."""
    for _ in range(20):
        root = tempfile.mkdtemp(prefix="couchlite-out-")
        try:
            data = os.path.join(root, "data")
            run = subprocess.run(
                [binary(), "receive", "--bind", "127.0.0.1", "--port", "0", "--data-dir", data, "--admin", "a:b",
                 "--pbkdf2-iterations", "1000", "--json", "--out", "x" * 5000],
                cwd=root, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
            assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
            assert b"could not start" in run.stderr and b"File name too long" in run.stderr, run.stderr[-2000:]
        finally:
            shutil.rmtree(root, ignore_errors=True)


def test_help_lists_every_subcommand():
    """`couchlite --help` (and `couchlite help`) name every subcommand the executable dispatches, hidden workers
    aside: read from the dispatcher itself, so a new subcommand cannot be left out of the help."""
    main = os.path.join(os.path.dirname(__file__), "..", "..", "Sources", "couchlite", "main.swift")
    with open(main, encoding="utf-8") as f:
        dispatched = re.findall(r'^case "([a-z-]+)":', f.read(), re.M)
    hidden = {"query-server", "media-worker", "sandbox-probe"}
    public = [name for name in dispatched if name not in hidden]
    assert {"serve", "receive", "push", "replicate", "peers"} <= set(public), dispatched
    for args in (["--help"], ["help"], ["serve", "--help"]):
        out = subprocess.run([binary(), *args], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, (args, out.stderr)
        for name in public:
            if name == "help":
                continue
            assert re.search(rf"couchlite (\[{name}\]|{name}\b)", out.stdout), (args, name, out.stdout[:800])
