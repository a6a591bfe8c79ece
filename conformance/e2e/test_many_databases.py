"""`--max-dbs-open`: a server with hundreds of databases keeps at most N of them open while idle
(least recently used close first), reopens the others transparently, and never closes one under
its user (a longpoll feed waiting on it).

Open databases are counted from the outside, as the distinct `*.couch` files the process holds
open in /proc/PID/fd (the system databases `_users` and `_replicator` are outside the bound, as
CouchDB's system databases are), and from `GET /_node/_local/_stats` when the server has it."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import urllib.parse

import requests

from processes import status_field

DATABASES = 200
BOUND = 20
SYSTEM_FILES = {"_users.couch", "_replicator.couch", "_global_changes.couch"}


def open_database_files(pid: int) -> set[str]:
    """Names of the database files (`<name>.couch`, not -wal/-shm) the process has open."""
    names = set()
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue  # closed meanwhile
        if target.endswith(".couch"):
            names.add(os.path.basename(target))
    return names - SYSTEM_FILES


def stats_open_databases(session: requests.Session, url: str) -> int | None:
    r = session.get(f"{url}/_node/_local/_stats/couchdb/open_databases", timeout=10)
    if r.status_code != 200:
        return None  # not there (yet): the /proc count is the check
    return r.json().get("value")


def test_hundreds_of_databases_stay_within_max_dbs_open(servers):
    server = servers("many", args=("--max-dbs-open", str(BOUND)))
    s = requests.Session()
    s.auth = ("admin", "pass")
    base = f"http://127.0.0.1:{server.port}"

    assert s.put(f"{base}/feed-db", timeout=30).status_code == 201
    # A longpoll feed that holds its database for the whole test.
    feed: dict = {}

    def longpoll():
        with requests.Session() as fs:
            fs.auth = ("admin", "pass")
            r = fs.get(f"{base}/feed-db/_changes?feed=longpoll&since=now&timeout=120000", timeout=180)
            feed["status"] = r.status_code
            feed["body"] = r.json()

    waiter = threading.Thread(target=longpoll, daemon=True)
    waiter.start()

    names = [f"db-{i:04d}" for i in range(DATABASES)]
    peak = 0
    for index, name in enumerate(names):
        assert s.put(f"{base}/{name}", timeout=30).status_code == 201
        r = s.put(f"{base}/{name}/doc", json={"db": name, "index": index}, timeout=30)
        assert r.status_code == 201, r.text
        if index % 10 == 9:
            files = open_database_files(server.proc.pid)
            peak = max(peak, len(files))
            assert len(files) <= BOUND, f"{len(files)} databases open, bound {BOUND}: {sorted(files)}"
            assert "feed-db.couch" in files, "the database of a waiting feed was closed under it"
    assert peak >= BOUND - 1, f"the bound was never reached (peak {peak}): is anything counted?"
    assert waiter.is_alive(), f"the longpoll feed ended early: {feed}"

    # Every database reopens transparently with its data.
    for index, name in enumerate(names):
        r = s.get(f"{base}/{name}/doc", timeout=30)
        assert r.status_code == 200, (name, r.text)
        assert r.json()["index"] == index
        assert s.get(f"{base}/{urllib.parse.quote(name)}", timeout=30).json()["doc_count"] == 1
    files = open_database_files(server.proc.pid)
    assert len(files) <= BOUND, sorted(files)
    counted = stats_open_databases(s, base)
    if counted is not None:
        assert counted <= BOUND + len(SYSTEM_FILES), counted

    # The feed survived: a write wakes it with that change.
    assert s.put(f"{base}/feed-db/wake", json={}, timeout=30).status_code == 201
    waiter.join(timeout=30)
    assert not waiter.is_alive(), "the longpoll feed did not wake"
    assert feed["status"] == 200
    assert [row["id"] for row in feed["body"]["results"]] == ["wake"]
    assert s.get(f"{base}/_all_dbs", timeout=30).json().count("db-0000") == 1


def test_max_dbs_open_must_be_a_positive_integer():
    binary = os.environ["COUCHLITE_BIN"]
    for value in ("0", "-3", "lots"):
        done = subprocess.run([binary, "--max-dbs-open", value, "--port", "0"], capture_output=True, timeout=30)
        assert done.returncode == 64, (value, done.returncode)
        assert b"--max-dbs-open must be a positive integer" in done.stderr
    env = dict(os.environ, COUCHLITE_MAX_DBS_OPEN="0")
    done = subprocess.run([binary, "--port", "0"], capture_output=True, timeout=30, env=env)
    assert done.returncode == 64
    assert b"--max-dbs-open must be a positive integer" in done.stderr


def test_open_idle_databases_hold_no_threads(servers):
    """Each open database has a writer and a checkpointer; their threads run while there is work and end 10 s
    after it, so sixty open, idle databases cost no threads (they used to hold three each for as long as they
    stayed open, up to 1,500 threads at the default bound of 500)."""
    server = servers("idle-threads")
    s = requests.Session()
    s.auth = ("admin", "pass")
    base = f"http://127.0.0.1:{server.port}"
    before = status_field(server.proc.pid, "Threads")
    for index in range(60):
        assert s.put(f"{base}/idle-{index:02d}", timeout=30).status_code == 201
        assert s.put(f"{base}/idle-{index:02d}/doc", json={"n": index}, timeout=30).status_code == 201
    busy = status_field(server.proc.pid, "Threads")
    deadline = time.monotonic() + 60
    while (threads := status_field(server.proc.pid, "Threads")) > before + 10 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert threads <= before + 10, f"{threads} threads with 60 idle databases open ({before} at start, {busy} busy)"
    assert len(open_database_files(server.proc.pid)) == 60
    # They still work: a write starts the threads it needs again.
    assert s.put(f"{base}/idle-07/again", json={}, timeout=30).status_code == 201
    assert s.get(f"{base}/idle-07", timeout=30).json()["doc_count"] == 2
