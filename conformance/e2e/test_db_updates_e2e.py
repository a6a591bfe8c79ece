"""_db_updates under a client that never reads: the feed writes through the bounded reply, so such a client
holds one blocked feed (until the write stalls out), never a growing buffer, and every event kept is one per
database and kind."""

import base64
import os
import socket
import time

import requests

from conftest import ADMIN

READERS = 20
WRITES = 1500
DATABASES = 150
RSS_BUDGET_MIB = 40


def test_db_updates_client_that_never_reads(servers):
    a = servers("a")
    auth = base64.b64encode(f"{ADMIN[0]}:{ADMIN[1]}".encode()).decode()
    session = requests.Session()
    assert session.put(f"{a.url}/w", timeout=5).status_code == 201
    before = a.status_kib("VmRSS")
    sockets = []
    for _ in range(READERS):
        s = socket.create_connection(("127.0.0.1", a.port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(f"GET /_db_updates?feed=continuous&since=0&heartbeat=50 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  f"Authorization: Basic {auth}\r\n\r\n".encode())
        sockets.append(s)
    try:
        for i in range(WRITES):
            assert session.put(f"{a.url}/w/d{i}", json={"i": i}, timeout=10).status_code == 201
        for i in range(DATABASES):
            assert session.put(f"{a.url}/many-{i}", timeout=10).status_code == 201
            assert session.delete(f"{a.url}/many-{i}", timeout=10).status_code == 200
        started = time.monotonic()
        r = session.get(f"{a.url}/_db_updates", params={"limit": "5"}, timeout=10)
        assert r.status_code == 200 and len(r.json()["results"]) == 5
        assert time.monotonic() - started < 2
        growth = (a.status_kib("VmRSS") - before) / 1024
        print(f"{READERS} readers that never read, {WRITES} writes, {DATABASES} databases: RSS +{growth:.1f} MiB")
        assert growth < RSS_BUDGET_MIB
        # One row per database and kind: `w` created and updated, each of the others created and deleted.
        rows = session.get(f"{a.url}/_db_updates", timeout=10).json()["results"]
        mine = [(row["type"], row["db_name"]) for row in rows if row["db_name"].startswith(("w", "many-"))]
        assert len(mine) == len(set(mine)) == 2 + 2 * DATABASES
    finally:
        for s in sockets:
            s.close()


def seq_number(seq: str) -> int:
    return int(seq.split("-")[0])


def feed(session, server, **params):
    r = session.get(f"{server.url}/_db_updates", params=params, timeout=10)
    assert r.status_code == 200, r.text
    body = r.json()
    # The system databases' events (created at the first start, written at others) are not this test's.
    return [(row["type"], row["db_name"]) for row in body["results"] if not row["db_name"].startswith("_")], body


def test_db_updates_survive_a_restart(servers):
    """The feed is kept in the data dir: after a graceful stop or a SIGKILL, a client resuming from the `since` it
    saved sees only what came later, sequences keep increasing, and `since=now` answers the latest one."""
    a = servers("a")
    session = requests.Session()
    assert session.put(f"{a.url}/kept", timeout=5).status_code == 201
    assert session.put(f"{a.url}/kept/doc", json={}, timeout=5).status_code == 201
    rows, body = feed(session, a)
    assert rows == [("created", "kept"), ("updated", "kept")]
    saved = body["last_seq"]
    highest = max(seq_number(row["seq"]) for row in body["results"])

    a.stop()
    a.start()
    rows, body = feed(session, a, since=saved)
    assert rows == [] and seq_number(body["last_seq"]) >= seq_number(saved)
    _, now = feed(session, a, since="now")
    assert now["results"] == [] and now["last_seq"] == body["last_seq"]
    assert session.put(f"{a.url}/after", timeout=5).status_code == 201
    rows, body = feed(session, a, since=saved)
    assert rows == [("created", "after")]
    assert seq_number(body["results"][0]["seq"]) > highest
    saved = body["last_seq"]
    highest = seq_number(saved)

    # A SIGKILL: what a reader has seen was durable before it saw it.
    assert session.delete(f"{a.url}/kept", timeout=5).status_code == 200
    rows, body = feed(session, a, since=saved)
    assert rows == [("deleted", "kept")]
    saved = body["last_seq"]
    a.kill()
    a.start()
    rows, body = feed(session, a, since=saved)
    assert rows == [] and seq_number(body["last_seq"]) >= seq_number(saved)
    assert session.put(f"{a.url}/after/doc", json={}, timeout=5).status_code == 201
    rows, body = feed(session, a, since=saved)
    assert rows == [("updated", "after")]
    assert seq_number(body["results"][0]["seq"]) > seq_number(saved) > highest
    everything, _ = feed(session, a, since="0")
    assert everything == [("created", "kept"), ("updated", "kept"), ("created", "after"), ("deleted", "kept"),
                          ("updated", "after")]

    # A longpoll resumed across the restart wakes for the next event, not for an old one.
    started = time.monotonic()
    r = session.get(f"{a.url}/_db_updates", params={"feed": "longpoll", "since": body["last_seq"], "timeout": "300"},
                    timeout=10)
    assert r.json()["results"] == [] and time.monotonic() - started >= 0.25


def test_db_updates_from_before_the_log_and_from_elsewhere(servers, tmp_path):
    """A data dir whose log is gone (an older couchlite's, or a lost file) names its databases `created` once,
    with a new epoch: a `since` saved from the old log, or from another server, reads the whole feed again
    instead of skipping what it numbers below it."""
    a = servers("a")
    session = requests.Session()
    for name in ("one", "two"):
        assert session.put(f"{a.url}/{name}", timeout=5).status_code == 201
    _, body = feed(session, a)
    old = body["last_seq"]
    a.stop()
    for suffix in ("", "-wal", "-shm"):
        path = os.path.join(a.data_dir, "db_updates.sqlite" + suffix)
        if os.path.exists(path):
            os.remove(path)
    a.start()
    assert os.stat(os.path.join(a.data_dir, "db_updates.sqlite")).st_mode & 0o777 == 0o600
    rows, body = feed(session, a, since=old)
    assert sorted(rows) == [("created", "one"), ("created", "two")]
    couchdb_seq = "4954-g1AAAACxeJzLYWBgYMpgTmEQTc4vTc5ISTK1tDBxMDQy1zMAQsMckHQiQ1L9____szKYkxgYuFRygWLsyUZmRolJlrj0ETAxjwVIMjQAqf9wgznNwAYbJlukGiUZ4tKeBQBK-ixc"
    again, _ = feed(session, a, since=couchdb_seq)
    assert again == rows
    a.stop()
    a.start()
    rows_after_restart, _ = feed(session, a, since="0")
    assert rows_after_restart == rows
