"""Deleting a system database must leave the process idle (issue 28, item 2).

A client library's test fixture deletes every database, `_replicator` and `_users` included. The server
follows `_replicator` (and `couchlite receive` follows its drop database too); a follower that asks a
missing database again at once spins a core forever. Each test deletes a database, measures the
process's CPU time (utime + stime from /proc/PID/stat) over a few idle seconds, and checks the database
works again once it is created again, as it does in CouchDB 3.4.3 (which cancels the jobs of a deleted
`_replicator` and waits for the database to come back; it does not create it again by itself).
"""

from __future__ import annotations

import os
import time

import requests

from receive_support import Receiver
from processes import cpu_seconds, process_fixture
from test_replication_e2e import Client, doc_count, wait_for

import pytest

SETTLE_S = 1.0       # after the deletion, before measuring: the first (fast) retries are allowed
# The server's follower of `_replicator` long-polls for 30 s: a follower that only notices the deletion when
# its poll ends starts spinning then, so the tests of `_replicator` measure past that too.
PAST_LONG_POLL_S = 31.0
IDLE_WINDOW_S = 3.0  # measured idle period
MAX_CORE_SHARE = 0.10


def assert_idle(pid: int, what: str, after: float = SETTLE_S) -> float:
    """Waits `after` seconds, then fails if the process uses more than `MAX_CORE_SHARE` of a core over
    `IDLE_WINDOW_S`; returns the share measured."""
    time.sleep(after)
    start_cpu, start = cpu_seconds(pid), time.monotonic()
    time.sleep(IDLE_WINDOW_S)
    share = (cpu_seconds(pid) - start_cpu) / (time.monotonic() - start)
    assert share < MAX_CORE_SHARE, f"{what}: the process used {share:.0%} of a core while idle"
    return share


def scheduler_jobs(server) -> list:
    return requests.get(f"{server.url}/_scheduler/jobs", timeout=5).json()["jobs"]


@pytest.fixture
def receivers(request):
    binary = os.environ["COUCHLITE_BIN"]
    yield from process_fixture(
        request, "couchlite-receive-", lambda root, n, *flags, name=None: Receiver(binary, root, *flags,
                                                                                 name=name or f"receiver{n}"))


def test_deleting_replicator_does_not_make_the_server_spin(servers):
    a = servers("a")
    src = Client(a.url, "src")
    src.create()
    src.bulk([{"_id": f"d{i}"} for i in range(5)])
    wait_for(lambda: requests.get(f"{a.url}/_replicator", timeout=5).status_code == 200, what="_replicator")
    live = {"source": "src", "target": "live-copy", "continuous": True, "create_target": True}
    assert requests.put(f"{a.url}/_replicator/live", json=live, timeout=5).status_code == 201
    wait_for(lambda: doc_count(a, "live-copy") == 5, what="the continuous job's copy")

    assert requests.delete(f"{a.url}/_replicator", timeout=5).status_code == 200
    # As CouchDB's clean_up_replications: the jobs of a deleted replicator database stop.
    wait_for(lambda: scheduler_jobs(a) == [], what="the deleted database's job to stop")
    assert_idle(a.proc.pid, "after DELETE /_replicator")
    assert_idle(a.proc.pid, "30 s after DELETE /_replicator", after=PAST_LONG_POLL_S - SETTLE_S - IDLE_WINDOW_S)
    assert requests.get(f"{a.url}/_replicator", timeout=5).status_code == 404

    # Created again (the client's fixture does it): a new document starts a job again.
    assert requests.put(f"{a.url}/_replicator", timeout=5).status_code == 201
    once = {"source": "src", "target": "after", "create_target": True}
    assert requests.put(f"{a.url}/_replicator/once", json=once, timeout=5).status_code == 201
    doc = wait_for(lambda: (lambda d: d if d.get("_replication_state") == "completed" else None)(
        requests.get(f"{a.url}/_replicator/once", timeout=5).json()), what="the new job's completion")
    assert doc["_replication_stats"]["docs_written"] == 5, doc
    assert doc_count(a, "after") == 5


def test_deleting_and_recreating_replicator_at_once_is_noticed(servers):
    """Deleted and created again between two reads of its feed: the follower starts over on the new
    database (its sequences start again) instead of waiting for a sequence the new one has not reached."""
    a = servers("a")
    src = Client(a.url, "src")
    src.create()
    src.bulk([{"_id": f"d{i}"} for i in range(3)])
    wait_for(lambda: requests.get(f"{a.url}/_replicator", timeout=5).status_code == 200, what="_replicator")
    # Some sequences in the old database, so the new one's are behind them (design documents: `_replicator`
    # refuses a document that is no replication, as CouchDB does, and these must start no job).
    for i in range(5):
        r = requests.put(f"{a.url}/_replicator/_design/filler{i}", json={"x": i}, timeout=5)
        assert r.status_code == 201, r.text
    assert requests.delete(f"{a.url}/_replicator", timeout=5).status_code == 200
    assert requests.put(f"{a.url}/_replicator", timeout=5).status_code == 201
    once = {"source": "src", "target": "again", "create_target": True}
    assert requests.put(f"{a.url}/_replicator/once", json=once, timeout=5).status_code == 201
    wait_for(lambda: requests.get(f"{a.url}/_replicator/once", timeout=5).json().get("_replication_state")
             == "completed", what="the job in the recreated database")
    assert doc_count(a, "again") == 3
    assert_idle(a.proc.pid, "after deleting and recreating _replicator")


def test_deleting_users_does_not_make_the_server_spin(servers):
    a = servers("a")
    assert requests.delete(f"{a.url}/_users", timeout=5).status_code == 200
    # A login against the missing database is refused, not retried.
    r = requests.post(f"{a.url.replace('admin:pass@', '')}/_session", json={"name": "u", "password": "p"},
                      timeout=5)
    assert r.status_code == 401, r.text
    assert_idle(a.proc.pid, "after DELETE /_users")

    assert requests.put(f"{a.url}/_users", timeout=5).status_code == 201
    user = {"name": "u", "password": "p", "roles": [], "type": "user"}
    assert requests.put(f"{a.url}/_users/org.couchdb.user:u", json=user, timeout=5).status_code == 201
    r = requests.post(f"{a.url.replace('admin:pass@', '')}/_session", json={"name": "u", "password": "p"},
                      timeout=5)
    assert r.status_code == 200, r.text


def test_deleting_system_databases_does_not_make_receive_spin(receivers):
    receiver = receivers()
    receiver.start()
    admin = receiver.admin()
    base = receiver.base
    for name in ("_replicator", "_users", receiver.db):
        assert admin.delete(f"{base}/{name}", timeout=5).status_code == 200, name
    what = "couchlite receive after deleting _replicator, _users and the drop database"
    assert_idle(receiver.proc.pid, what)
    assert_idle(receiver.proc.pid, what + " (30 s later)", after=PAST_LONG_POLL_S - SETTLE_S - IDLE_WINDOW_S)

    # The exporter said why it stopped saving; the session still ends as usual.
    receiver.wait_for_log("the drop database was deleted")
    assert receiver.stop() == 0
    assert "Saved 0 photos" in receiver.log_text()


def test_crashing_replicator_jobs_wait_between_retries(servers):
    """Jobs whose source is missing or refuses connections are retried with pauses that double (CouchDB's
    backoff), never at once: with a one-second first pause, a few retries fall into the measured window and the
    process stays idle between them."""
    a = servers("a", args=("--replicator-retry", "1"))
    wait_for(lambda: requests.get(f"{a.url}/_replicator", timeout=5).status_code == 200, what="_replicator")
    for i in range(4):
        job = {"source": f"{a.url}/nothere{i}", "target": f"copy{i}"}
        assert requests.put(f"{a.url}/_replicator/missing{i}", json=job, timeout=5).status_code == 201
    refused = {"source": "http://127.0.0.1:1/gone", "target": "copy"}
    assert requests.put(f"{a.url}/_replicator/refused", json=refused, timeout=5).status_code == 201
    wait_for(lambda: all(requests.get(f"{a.url}/_scheduler/docs/_replicator/missing{i}", timeout=5).json().get(
        "error_count", 0) >= 2 for i in range(4)), what="the first retries")
    assert_idle(a.proc.pid, "while crashed _replicator jobs wait to be retried")
    docs = requests.get(f"{a.url}/_scheduler/docs", timeout=5).json()["docs"]
    # Pauses of 1, 2, 4 s…: after ~5 s a job has crashed three or four times, not hundreds.
    assert all(d["state"] in ("crashing", "running") and d["error_count"] <= 5 for d in docs), docs
