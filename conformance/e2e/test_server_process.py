"""couchlite as a process: command line, environment, access log, graceful shutdown, feeds that
end when their client leaves, and hostile input that CouchDB itself would store but couchlite
refuses (issue 3: bounded histories, bounded ids)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest
import requests

from conftest import ADMIN, free_port


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([os.environ["COUCHLITE_BIN"], *args], capture_output=True, text=True, timeout=20,
                          env=env, stdin=subprocess.DEVNULL)


def threads_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads line")


def test_help_lists_every_option_and_its_environment_variable():
    r = run_cli("--help")
    assert r.returncode == 0
    for flag, env in [("--bind", "COUCHLITE_BIND"), ("--port", "COUCHLITE_PORT"),
                      ("--data-dir", "COUCHLITE_DATA_DIR"), ("--admin", "COUCHLITE_ADMIN"),
                      ("--log-level", "COUCHLITE_LOG_LEVEL")]:
        assert flag in r.stdout and env in r.stdout


@pytest.mark.parametrize("args", [["--no-such-flag"], ["--port", "seventy"], ["--port", "70000"],
                                  ["--log-level", "loud"], ["--admin", "nocolon"], ["--port"],
                                  ["--shutdown-timeout", "soon"], ["--shutdown-timeout", "-1"],
                                  ["--shutdown-timeout", "86401"], ["--shutdown-timeout", "9" * 40],
                                  ["--shutdown-timeout", ""], ["--shutdown-timeout", "1.5"]])
def test_bad_flags_exit_64_with_a_message(args):
    r = run_cli(*args)
    assert r.returncode == 64
    assert "couchlite:" in r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("word", ["recieve", "status", "serve-now"])
def test_unknown_command_is_refused_with_the_commands_not_served(word, tmp_path):
    r = subprocess.run([os.environ["COUCHLITE_BIN"], word, "--data-dir", str(tmp_path / "d")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 64
    assert f"couchlite: unknown command '{word}'" in r.stderr
    assert "couchlite receive [options]" in r.stderr and r.stdout == ""
    assert not os.path.exists(tmp_path / "d"), "no server was started"


def test_environment_configures_the_server(tmp_path):
    port = free_port()
    env = dict(os.environ, COUCHLITE_PORT=str(port), COUCHLITE_DATA_DIR=str(tmp_path / "d"),
               COUCHLITE_BIND="127.0.0.1", COUCHLITE_ADMIN="admin:pass")
    proc = subprocess.Popen([os.environ["COUCHLITE_BIN"]], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        line = proc.stdout.readline().decode()
        assert f":{port}/" in line
        assert requests.get(f"http://127.0.0.1:{port}/_up", timeout=5).status_code == 200
        assert (tmp_path / "d").is_dir()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def environ_of(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = [entry.decode("utf-8", "replace").partition("=") for entry in f.read().split(b"\0") if entry]
    return {name: value for name, _, value in pairs}


def start_with_environment(tmp_path, extra: dict) -> tuple[subprocess.Popen, int]:
    port = free_port()
    tuning = ("GLIBC_TUNABLES", "COUCHLITE_MALLOC_TUNED")  # the test's own, not inherited from whoever runs it
    env = {name: value for name, value in os.environ.items() if name not in tuning}
    env.update(extra)
    proc = subprocess.Popen([os.environ["COUCHLITE_BIN"], "--bind", "127.0.0.1", "--port", str(port),
                             "--data-dir", str(tmp_path / "d"), "--admin", "admin:pass"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    assert f":{port}/" in proc.stdout.readline().decode()
    return proc, port


def test_the_server_bounds_glibcs_per_thread_caches_by_starting_itself_again(tmp_path):
    proc, port = start_with_environment(tmp_path, {})
    try:
        # Started again in the same process (same pid, so clients and supervisors see one server), with the tunable.
        environment = environ_of(proc.pid)
        assert "glibc.malloc.tcache_max=128" in environment.get("GLIBC_TUNABLES", ""), environment
        assert environment.get("COUCHLITE_MALLOC_TUNED") == "1"
        assert requests.get(f"http://127.0.0.1:{port}/_up", timeout=5).status_code == 200
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_an_operators_own_thread_cache_tunable_is_left_as_it_is(tmp_path):
    proc, port = start_with_environment(tmp_path, {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=3"})
    try:
        environment = environ_of(proc.pid)
        assert environment["GLIBC_TUNABLES"] == "glibc.malloc.tcache_count=3"
        assert "COUCHLITE_MALLOC_TUNED" not in environment  # not started again
        assert requests.get(f"http://127.0.0.1:{port}/_up", timeout=5).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def signal_masks(pid: int) -> dict[int, dict[str, int | str]]:
    """Each thread's blocked and caught signal masks, and what it waits in (wchan), from /proc."""
    masks = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                fields = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
            with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                waits_in = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile (a request's; ESRCH while it is being reaped)
        masks[int(tid)] = {name: int(fields[name], 16) for name in ("SigBlk", "SigCgt")} | {"wchan": waits_in}
    return masks


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def test_every_thread_of_the_server_blocks_the_stop_signals_so_none_is_lost(tmp_path):
    # A stop signal stays pending for the process until the one thread that sigwaits takes it. A thread that left
    # it unblocked, or a handler for it (libdispatch's forwarded it to a thread that did not read it), lost one
    # SIGTERM in twenty: the server kept running.
    proc, port = start_with_environment(tmp_path, {})
    try:
        assert requests.get(f"http://127.0.0.1:{port}/_up", timeout=5).status_code == 200
        masks = signal_masks(proc.pid)
        assert len(masks) > 3, masks  # the accept, signal, heap-trim and store threads at least
        # The one thread in sigwait has them unblocked while it waits (the kernel's real_blocked keeps the block).
        waiters = [tid for tid, mask in masks.items() if "sigtimedwait" in mask["wchan"]]
        assert len(waiters) == 1, masks
        for tid, mask in masks.items():
            if tid in waiters:
                continue
            for number in STOP_SIGNALS:
                bit = 1 << (number - 1)
                assert mask["SigBlk"] & bit, f"thread {tid} does not block {number.name}"
                assert not mask["SigCgt"] & bit, f"a handler catches {number.name}"
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


@pytest.mark.parametrize("number", STOP_SIGNALS, ids=lambda n: n.name)
def test_a_stop_signal_right_after_the_listening_line_stops_the_server_cleanly_every_time(tmp_path, number):
    # Sent as early as a supervisor could: before any request, while the server may still be starting its threads.
    for attempt in range(8):
        (tmp_path / str(attempt)).mkdir()
        proc, _ = start_with_environment(tmp_path / str(attempt), {})
        proc.send_signal(number)
        try:
            assert proc.wait(timeout=10) == 0, f"attempt {attempt}: ended by a signal, not by the graceful stop"
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(f"attempt {attempt}: {number.name} was lost, the server kept running")


def test_access_log_has_one_line_per_request(servers):
    a = servers("a")
    requests.get(f"http://127.0.0.1:{a.port}/_up", timeout=5)
    requests.get(f"http://127.0.0.1:{a.port}/nosuchdb", timeout=5)
    time.sleep(0.2)
    log = open(a.log_path, encoding="utf-8", errors="replace").read()
    assert "client=127.0.0.1 method=GET path=/_up status=200" in log
    line = [l for l in log.splitlines() if "path=/nosuchdb" in l][-1]
    assert "status=404" in line and "bytes=" in line and "ms=" in line


def test_uuid_and_data_survive_a_restart(servers):
    a = servers("a")
    base = a.url
    uuid = requests.get(base + "/", timeout=5).json()["uuid"]
    assert requests.put(base + "/keep", timeout=5).status_code == 201
    assert requests.put(base + "/keep/doc", json={"v": 1}, timeout=5).status_code == 201
    a.stop()
    a.start()
    assert requests.get(base + "/", timeout=5).json()["uuid"] == uuid
    assert requests.get(base + "/keep/doc", timeout=5).json()["v"] == 1


def test_sigterm_lets_an_in_flight_request_finish(servers):
    a = servers("a")
    requests.put(a.url + "/db", timeout=5)
    result = {}

    def longpoll():
        r = requests.get(a.url + "/db/_changes", params={"feed": "longpoll", "since": "now", "timeout": 1500},
                         timeout=20)
        result["status"] = r.status_code
        result["body"] = r.json()

    t = threading.Thread(target=longpoll)
    t.start()
    time.sleep(0.4)
    a.proc.send_signal(signal.SIGTERM)
    t.join(20)
    assert result.get("status") == 200 and "last_seq" in result["body"]
    assert a.proc.wait(timeout=20) == 0


def stopped_within(server, seconds: float) -> float:
    """Sends SIGTERM and returns how long the process took to exit (failing past `seconds`)."""
    started = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    try:
        assert server.proc.wait(timeout=seconds) == 0
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running {seconds} s after SIGTERM\n{server.log_tail()}") from None
    return time.monotonic() - started


def cut_lines(server) -> list[str]:
    return [line for line in server.log_text().splitlines() if "shutdown cut" in line]


def test_sigterm_cuts_a_longpoll_feed_after_the_shutdown_timeout_and_logs_it(servers):
    a = servers("a", args=("--shutdown-timeout", "2"))
    requests.put(a.url + "/db", timeout=5)
    errors = []

    def longpoll():
        try:
            requests.get(a.url + "/db/_changes", params={"feed": "longpoll", "since": "now", "timeout": 60000},
                         timeout=30)
        except requests.RequestException as error:
            errors.append(error)  # cut: the connection ends without an answer

    t = threading.Thread(target=longpoll, daemon=True)
    t.start()
    time.sleep(0.5)
    took = stopped_within(a, 2 + 5)
    assert took >= 1.9, f"cut after {took:.1f} s, before the 2 s it was to wait"
    t.join(10)
    assert errors, "the feed got an answer after its server was gone"
    lines = cut_lines(a)
    assert any("shutdown cut requests in flight requests=1 waited_s=2" in line for line in lines), lines
    assert any("shutdown cut a request client=127.0.0.1 method=GET path=/db/_changes running_s=" in line
               for line in lines), lines
    print(f"stopped {took:.2f} s after SIGTERM (--shutdown-timeout 2)")


def test_sigterm_cuts_a_slow_upload_after_the_shutdown_timeout_and_logs_it(servers):
    a = servers("a", args=("--shutdown-timeout", "1", "--body-timeout", "120"))
    requests.put(a.url + "/db", timeout=5)
    s = socket.create_connection(("127.0.0.1", a.port))
    s.sendall(b"PUT /db/doc/big.bin HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YWRtaW46cGFzcw==\r\n"
              b"Content-Type: application/octet-stream\r\nContent-Length: 10000000\r\n\r\n" + b"x" * 1000)
    try:
        time.sleep(0.5)
        took = stopped_within(a, 1 + 5)
    finally:
        s.close()
    lines = cut_lines(a)
    assert any("requests=1 waited_s=1" in line for line in lines), lines
    assert any("method=PUT path=/db/doc/big.bin" in line for line in lines), lines
    print(f"stopped {took:.2f} s after SIGTERM (--shutdown-timeout 1)")


def test_a_request_that_ends_within_the_shutdown_timeout_is_not_cut(servers):
    a = servers("a", args=("--shutdown-timeout", "10"))
    requests.put(a.url + "/db", timeout=5)
    result = {}

    def longpoll():
        r = requests.get(a.url + "/db/_changes", params={"feed": "longpoll", "since": "now", "timeout": 1500},
                         timeout=20)
        result["status"] = r.status_code

    t = threading.Thread(target=longpoll)
    t.start()
    time.sleep(0.4)
    stopped_within(a, 10)
    t.join(10)
    assert result.get("status") == 200
    assert cut_lines(a) == []


def test_feed_threads_end_when_clients_leave(servers):
    a = servers("a")
    requests.put(a.url + "/db", timeout=5)
    pid = a.proc.pid
    baseline = threads_of(pid)
    socks = []
    for _ in range(50):
        s = socket.create_connection(("127.0.0.1", a.port))
        s.sendall(b"GET /db/_changes?feed=longpoll&since=now&heartbeat=1000 HTTP/1.1\r\n"
                  b"Host: x\r\nAuthorization: Basic YWRtaW46cGFzcw==\r\n\r\n")
        socks.append(s)
    time.sleep(1)
    assert threads_of(pid) >= baseline + 45
    for s in socks:
        s.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and threads_of(pid) > baseline + 2:
        time.sleep(0.2)
    assert threads_of(pid) <= baseline + 2
    assert requests.get(a.url + "/_up", timeout=5).status_code == 200


def test_hostile_histories_and_ids_are_refused_and_store_nothing(servers):
    a = servers("a")
    base = a.url + "/h"
    requests.put(base, timeout=5)
    huge = {"_id": "x", "_rev": "100000-a0", "_revisions": {"start": 100000, "ids": [f"a{i}" for i in range(100000)]}}
    # _bulk_docs checks every document before writing any: a bad one fails the whole request (issue 11 item 12).
    # 100,000 tiny revision ids cost more to parse than a 1 MB body may (the JSON body budget): refused before it
    # is even validated.
    r = requests.post(base + "/_bulk_docs", json={"new_edits": False, "docs": [huge]}, timeout=30)
    assert r.status_code == 413 and r.json()["error"] == "too_large"
    # A history reaching below generation 0 (generation 0 itself is stored, as CouchDB stores it).
    negative = {"_id": "y", "_rev": "1-a", "_revisions": {"start": 0, "ids": ["a", "b"]}}
    r = requests.post(base + "/_bulk_docs", json={"new_edits": False, "docs": [negative]}, timeout=10)
    assert r.status_code == 400 and r.json()["error"] == "bad_request"
    long_id = "z" * (1024 * 1024)
    r = requests.post(base + "/_bulk_docs", json={"docs": [{"_id": long_id}]}, timeout=30)
    assert r.status_code == 400 and r.json()["error"] == "illegal_docid"
    r = requests.put(base + "/bad%FFid", data=b"{}", headers={"Content-Type": "application/json"}, timeout=5)
    assert r.status_code == 400
    info = requests.get(base, timeout=5).json()
    assert info["doc_count"] == 0 and info["doc_del_count"] == 0
    assert requests.get(base + "/_all_docs", timeout=5).json()["rows"] == []


def test_a_body_trickled_past_the_body_timeout_is_a_408(servers):
    """A body that keeps arriving, a few bytes at a time, but not within `--body-timeout` (plus a second per 4 KiB)
    was answered 500 `unknown_error`. It is 408 `request_timeout` (the engine's answer to a late head too; CouchDB's
    mochiweb closes such a connection without a word), and the connection closes."""
    a = servers("a", args=("--body-timeout", "1"))
    requests.put(a.url + "/db", timeout=5)
    s = socket.create_connection(("127.0.0.1", a.port))
    s.settimeout(10)
    try:
        s.sendall(b"PUT /db/trickled HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YWRtaW46cGFzcw==\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"a\":\"")
        started = time.monotonic()
        answer = b""
        while time.monotonic() - started < 8:
            try:
                s.sendall(b"x" * 10)
            except OSError:
                break
            s.settimeout(0.3)
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            answer += chunk
            if b"\r\n\r\n" in answer and answer.endswith(b"}\n"):
                break
        s.settimeout(5)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408"), answer
        assert json.loads(body) == {"error": "request_timeout", "reason": "The request body did not arrive in time."}
        assert time.monotonic() - started < 5
    finally:
        s.close()
    assert requests.get(a.url + "/db/trickled", timeout=5).status_code == 404


def test_sigterm_is_not_held_up_by_a_regex_find(servers):
    """A `_find` whose `$regex` clauses would take minutes of CPU (50 catastrophic clauses over 400 documents, each
    match bounded alone) held up SIGTERM until it ended. Its scan is bounded by the request's budget (2 s of CPU)
    and stops when `--shutdown-timeout` cuts its connection: the server exits within that timeout and a second."""
    a = servers("a", args=("--shutdown-timeout", "1"))
    requests.put(a.url + "/db", timeout=5)
    docs = [{"_id": f"d{n:04d}", "s": "a" * 30 + "!"} for n in range(400)]
    assert requests.post(a.url + "/db/_bulk_docs", json={"docs": docs}, timeout=30).status_code == 201
    body = json.dumps({"selector": {"$or": [{"s": {"$regex": "^(a+)+$"}} for _ in range(50)]}}).encode()
    s = socket.create_connection(("127.0.0.1", a.port))
    try:
        s.sendall(b"POST /db/_find HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YWRtaW46cGFzcw==\r\n"
                  b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        time.sleep(0.3)
        took = stopped_within(a, 1 + 2)
    finally:
        s.close()
    print(f"stopped {took:.2f} s after SIGTERM with a regex _find in flight")
