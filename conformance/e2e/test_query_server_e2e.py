"""The JavaScript workers as processes (issue 17): a database without validation functions never starts one,
a worker killed from outside is replaced on the next call, a worker stuck in a loop when the server is killed
ends by itself, and no worker holds the server's listening socket."""

from __future__ import annotations

import os
import signal
import threading
import time

import requests

from processes import children


def workers_of(pid: int) -> list[int]:
    """Pids of the `couchlite query-server` children of `pid`."""
    return [child for _, child in children(pid, "query-server")]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_writes_without_validation_functions_start_no_worker(servers):
    a = servers("a")
    db = f"{a.url}/plain"
    assert requests.put(db, timeout=30).status_code == 201
    assert requests.put(f"{db}/_design/views", json={"views": {"v": {"map": "function(doc){}"}}},
                        timeout=30).status_code == 201
    for i in range(20):
        assert requests.put(f"{db}/doc-{i}", json={"i": i}, timeout=30).status_code == 201
    r = requests.post(f"{db}/_bulk_docs", json={"docs": [{"i": i} for i in range(50)]}, timeout=30)
    assert r.status_code == 201
    assert workers_of(a.proc.pid) == []
    # The first validation function starts one.
    assert requests.put(f"{db}/_design/guard", json={
        "validate_doc_update": "function(doc) { if (doc.no) throw({forbidden: 'no'}); }"}, timeout=30).status_code == 201
    assert requests.put(f"{db}/after", json={"no": True}, timeout=30).status_code == 403
    assert len(workers_of(a.proc.pid)) == 1


def server_with_one_worker(servers):
    """A server whose one query-server worker has just run a filter: (the server, its database URL, the worker's
    pid)."""
    a = servers("a")
    db = f"{a.url}/db"
    assert requests.put(db, timeout=30).status_code == 201
    assert requests.put(f"{db}/_design/f", json={"filters": {"all": "function() { return true; }"}},
                        timeout=30).status_code == 201
    assert requests.get(f"{db}/_changes", params={"filter": "f/all"}, timeout=30).status_code == 200
    [worker] = workers_of(a.proc.pid)
    return a, db, worker


def test_a_killed_worker_is_replaced(servers):
    a, db, worker = server_with_one_worker(servers)
    os.kill(worker, signal.SIGKILL)
    time.sleep(0.2)
    # The idle worker's death is noticed by the next call, which fails over to a new worker or answers 500
    # once; the call after that is served by a fresh worker.
    statuses = [requests.get(f"{db}/_changes", params={"filter": "f/all"}, timeout=30).status_code for _ in range(2)]
    assert statuses[-1] == 200, statuses
    assert worker not in workers_of(a.proc.pid) and len(workers_of(a.proc.pid)) == 1


def test_a_looping_worker_ends_with_the_server(servers):
    a = servers("a")
    db = f"{a.url}/db"
    assert requests.put(db, timeout=30).status_code == 201
    assert requests.put(f"{db}/_design/f", json={"filters": {"loop": "function() { while (true) {} }"}},
                        timeout=30).status_code == 201
    assert requests.put(f"{db}/doc", json={}, timeout=30).status_code == 201
    def looping():
        try:
            requests.get(f"{db}/_changes", params={"filter": "f/loop"}, timeout=30)
        except requests.RequestException:
            pass  # the server is killed under it

    threading.Thread(target=looping, daemon=True).start()
    deadline = time.monotonic() + 10
    workers = []
    while not workers and time.monotonic() < deadline:
        workers = workers_of(a.proc.pid)
        time.sleep(0.05)
    assert workers
    a.kill(signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(w) for w in workers)


def test_workers_do_not_hold_the_servers_sockets(servers):
    a, _, worker = server_with_one_worker(servers)
    fds = os.listdir(f"/proc/{worker}/fd")
    targets = [os.readlink(f"/proc/{worker}/fd/{fd}") for fd in fds]
    assert not any(t.startswith("socket:") for t in targets), targets
    assert not any(t.endswith(".couch") for t in targets), targets
