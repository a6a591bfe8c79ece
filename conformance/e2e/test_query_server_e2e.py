"""The JavaScript workers as processes (issue 17): a database without validation functions never starts one,
a worker killed from outside is replaced on the next call, a worker stuck in a loop when the server is killed
ends by itself (so does one the server had only just started, and a media worker frozen with a request), a FIFO
in place of a blob holds up no media worker, and no worker holds the server's listening socket."""

from __future__ import annotations

import glob
import hashlib
import os
import signal
import subprocess
import threading
import time

import requests

from processes import children, cpu_seconds
from test_replication_e2e import wait_for


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


def assert_all_end(pids: list[int], what: str) -> float:
    """Waits (10 s at most, on a loaded machine too) until none of `pids` is alive; the seconds it took."""
    started = time.monotonic()
    while any(alive(p) for p in pids) and time.monotonic() - started < 10:
        time.sleep(0.02)
    left = [p for p in pids if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)  # not left spinning for the next tests
    assert not left, f"{what} outlived the server killed with SIGKILL: {left}"
    return time.monotonic() - started


def looping_filter(servers):
    """A server and a `_changes` request (in a thread) whose filter loops forever."""
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
    return a


def test_a_looping_worker_ends_with_the_server(servers):
    a = looping_filter(servers)
    workers = wait_for(lambda: workers_of(a.proc.pid), 10, what="worker")
    # Killed while the script runs (0.2 s of CPU in it), not before it got its request.
    wait_for(lambda: cpu_seconds(workers[0], gone=0) >= 0.2, 10, what="busy worker")
    a.kill(signal.SIGKILL)
    took = assert_all_end(workers, "a worker looping in a script")
    print(f"the looping worker ended {took:.2f} s after its server")


def test_a_worker_started_just_before_its_server_was_killed_ends(servers):
    # The worker is held (SIGSTOP) from the moment it exists until its server is dead, as a loaded machine may
    # leave it unscheduled: when it gets as far as looking, its parent is already init and its request, a loop,
    # waits in the pipe.
    a = looping_filter(servers)
    workers = wait_for(lambda: workers_of(a.proc.pid), 10, what="worker")
    for worker in workers:
        os.kill(worker, signal.SIGSTOP)
    time.sleep(0.5)  # the server writes the request into the pipe
    a.kill(signal.SIGKILL)
    for worker in workers:
        os.kill(worker, signal.SIGCONT)
    assert_all_end(workers, "a worker started just before its server died")


def jpeg(path, pattern="testsrc"):
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"{pattern}=size=320x240", "-frames:v", "1",
                    str(path)], check=True, timeout=120)
    return path.read_bytes()


def test_a_fifo_in_place_of_a_blob_holds_up_no_media_worker(servers, tmp_path):
    # A blob made a FIFO no one writes (as a hostile file in a watched folder could be): the server opens it without
    # blocking and hands the decoder regular files only, so the thumbnail request ends and no worker waits on it.
    a = servers("a")
    db = f"{a.url}/db"
    assert requests.put(db, timeout=30).status_code == 201
    data = jpeg(tmp_path / "a.jpg")
    r = requests.put(f"{db}/p/a.jpg", data=data, headers={"Content-Type": "image/jpeg"}, timeout=30)
    assert r.status_code == 201, r.text
    [blob] = glob.glob(os.path.join(a.data_dir, "attachments", "**", hashlib.md5(data).hexdigest()), recursive=True)
    os.remove(blob)
    os.mkfifo(blob, 0o600)

    r = requests.get(f"{a.url}/_photos/api/db/db/thumb/p/a.jpg?size=160", timeout=20)
    assert r.status_code in (200, 404, 415, 500), r.status_code
    assert not [pid for _, pid in children(a.proc.pid, "media-worker") if wchan(pid) == "wait_for_partner"]
    # The decoder still works for the next photo.
    other = jpeg(tmp_path / "b.jpg", "smptebars")
    assert requests.put(f"{db}/q/b.jpg", data=other, headers={"Content-Type": "image/jpeg"},
                        timeout=30).status_code == 201
    r = requests.get(f"{a.url}/_photos/api/db/db/thumb/q/b.jpg?size=160", timeout=30)
    assert r.status_code == 200 and r.content[:2] == b"\xff\xd8", (r.status_code, r.content[:40])


def test_a_media_worker_frozen_with_a_request_ends_with_the_server(servers, tmp_path):
    # A media worker that never reads its request again (frozen with SIGSTOP while the server writes one into its
    # pipe), then the server killed with SIGKILL: once the worker runs again it finds its server gone and ends.
    a = servers("a")
    db = f"{a.url}/db"
    assert requests.put(db, timeout=30).status_code == 201
    for name, pattern in (("a", "testsrc"), ("b", "smptebars")):
        data = jpeg(tmp_path / f"{name}.jpg", pattern)
        r = requests.put(f"{db}/{name}/{name}.jpg", data=data, headers={"Content-Type": "image/jpeg"}, timeout=30)
        assert r.status_code == 201, r.text
    assert requests.get(f"{a.url}/_photos/api/db/db/thumb/a/a.jpg?size=160", timeout=30).status_code == 200
    workers = wait_for(lambda: [pid for _, pid in children(a.proc.pid, "media-worker")], 10, what="media worker")
    for worker in workers:
        os.kill(worker, signal.SIGSTOP)

    def thumbnail():
        try:
            requests.get(f"{a.url}/_photos/api/db/db/thumb/b/b.jpg?size=160", timeout=30)
        except requests.RequestException:
            pass  # the server is killed under it

    threading.Thread(target=thumbnail, daemon=True).start()
    time.sleep(0.5)  # the server writes the request into the pipe
    a.kill(signal.SIGKILL)
    for worker in workers:
        os.kill(worker, signal.SIGCONT)
    took = assert_all_end(workers, "a media worker frozen with a request")
    print(f"the frozen media worker ended {took:.2f} s after its server")


def wchan(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/wchan", encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def test_workers_do_not_hold_the_servers_sockets(servers):
    a, _, worker = server_with_one_worker(servers)
    fds = os.listdir(f"/proc/{worker}/fd")
    targets = [os.readlink(f"/proc/{worker}/fd/{fd}") for fd in fds]
    assert not any(t.startswith("socket:") for t in targets), targets
    assert not any(t.endswith(".couch") for t in targets), targets
