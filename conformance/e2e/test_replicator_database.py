"""The `_replicator` database (issue 13): a document there starts a replication that survives a
restart of the server and resumes from its checkpoint; one-shot jobs record their outcome in the
document as CouchDB 3 does; `_scheduler/docs`, `_scheduler/jobs` and `_active_tasks` show them.
"""

from __future__ import annotations

import signal
import time

import requests

from test_replication_e2e import Client, doc_count, wait_for


def test_replicator_job_survives_a_restart_and_resumes(servers):
    a = servers("a")
    b = servers("b")
    src = Client(a.url, "src")
    src.create()
    src.bulk([{"_id": f"d{i}", "i": i} for i in range(50)])
    wait_for(lambda: requests.get(f"{a.url}/_replicator", timeout=5).status_code == 200, what="_replicator")
    job = {"source": "src", "target": f"{b.url}/dst", "continuous": True, "create_target": True}
    assert requests.put(f"{a.url}/_replicator/live", json=job, timeout=5).status_code == 201
    wait_for(lambda: doc_count(b, "dst") == 50, what="the first 50 documents")

    docs = requests.get(f"{a.url}/_scheduler/docs", timeout=5).json()
    row = next(d for d in docs["docs"] if d["doc_id"] == "live")
    assert row["state"] == "running" and row["database"] == "_replicator", row
    jobs = requests.get(f"{a.url}/_scheduler/jobs", timeout=5).json()["jobs"]
    assert [j["doc_id"] for j in jobs] == ["live"], jobs
    rep_id = jobs[0]["id"]
    assert rep_id.endswith("+continuous+create_target")
    tasks = requests.get(f"{a.url}/_active_tasks", timeout=5).json()
    assert tasks[0]["doc_id"] == "live" and tasks[0]["docs_written"] == 50, tasks
    one = requests.get(f"{a.url}/_scheduler/docs/_replicator/live", timeout=5)
    assert one.status_code == 200 and one.json()["doc_id"] == "live"

    # A hard kill; the job comes back with the server and goes on from its checkpoint.
    a.kill(signal.SIGKILL)
    a.start()
    src.bulk([{"_id": f"late{i}", "i": i} for i in range(5)])
    wait_for(lambda: doc_count(b, "dst") == 55, what="documents written after the restart")
    base = rep_id.split("+")[0]
    checkpoint = wait_for(
        lambda: (lambda r: r.json() if r.status_code == 200 and r.json()["history"][0]["docs_written"] == 5
                 else None)(requests.get(f"{b.url}/dst/_local/{base}", timeout=5)),
        what="the resumed session's checkpoint")
    entry = checkpoint["history"][0]
    assert entry["start_last_seq"] not in (0, "0"), entry
    assert entry["missing_checked"] == 5, entry

    # Deleting the document stops the job.
    rev = requests.get(f"{a.url}/_replicator/live", timeout=5).json()["_rev"]
    assert requests.delete(f"{a.url}/_replicator/live?rev={rev}", timeout=5).status_code == 200
    wait_for(lambda: requests.get(f"{a.url}/_scheduler/jobs", timeout=5).json()["jobs"] == [], what="job stopped")


def test_one_shot_replicator_documents_record_their_outcome(servers):
    a = servers("a")
    b = servers("b")
    src = Client(a.url, "src")
    src.create()
    src.bulk([{"_id": f"d{i}"} for i in range(7)])
    wait_for(lambda: requests.get(f"{a.url}/_replicator", timeout=5).status_code == 200, what="_replicator")
    ok = {"source": "src", "target": f"{b.url}/once", "create_target": True}
    assert requests.put(f"{a.url}/_replicator/once", json=ok, timeout=5).status_code == 201
    doc = wait_for(lambda: (lambda d: d if d.get("_replication_state") == "completed" else None)(
        requests.get(f"{a.url}/_replicator/once", timeout=5).json()), what="completed state")
    assert doc["_replication_stats"]["docs_written"] == 7, doc
    assert "_replication_state_time" in doc
    assert doc_count(b, "once") == 7

    # A document that cannot run fails; a missing source database is retried (crashing), as CouchDB does.
    bad = {"source": "src", "target": f"{b.url}/x", "filter": "nosuch/filter"}
    assert requests.put(f"{a.url}/_replicator/bad", json=bad, timeout=5).status_code == 201
    doc = wait_for(lambda: (lambda d: d if d.get("_replication_state") == "failed" else None)(
        requests.get(f"{a.url}/_replicator/bad", timeout=5).json()), what="failed state")
    assert "nosuch" in doc["_replication_state_reason"], doc
    missing = {"source": "nosuch", "target": f"{b.url}/x", "create_target": True}
    assert requests.put(f"{a.url}/_replicator/missing", json=missing, timeout=5).status_code == 201
    wait_for(lambda: {d["doc_id"]: d["state"] for d in requests.get(f"{a.url}/_scheduler/docs", timeout=5).json()[
        "docs"]}.get("missing") == "crashing", what="crashing state")
    assert "_replication_state" not in requests.get(f"{a.url}/_replicator/missing", timeout=5).json()
    docs = {d["doc_id"]: d for d in requests.get(f"{a.url}/_scheduler/docs", timeout=5).json()["docs"]}
    assert docs["once"]["state"] == "completed" and docs["bad"]["state"] == "failed", docs
    assert docs["missing"]["info"] == {"error": "db_not_found: could not open nosuch"}, docs
    rev = requests.get(f"{a.url}/_replicator/missing", timeout=5).json()["_rev"]
    assert requests.delete(f"{a.url}/_replicator/missing?rev={rev}", timeout=5).status_code == 200

    # After a restart neither runs again.
    a.stop()
    a.start()
    time.sleep(1)
    assert requests.get(f"{a.url}/_scheduler/jobs", timeout=5).json()["jobs"] == []
    assert requests.get(f"{a.url}/_replicator/once", timeout=5).json()["_rev"] == doc_rev(a, "once")


def doc_rev(server, doc_id):
    return requests.get(f"{server.url}/_replicator/{doc_id}", timeout=5).json()["_rev"]


def test_replicator_database_is_for_server_admins(servers):
    a = servers("a")
    wait_for(lambda: requests.get(f"{a.url}/_replicator", timeout=5).status_code == 200, what="_replicator")
    anonymous = requests.put(f"http://127.0.0.1:{a.port}/_replicator/x", json={"source": "a", "target": "b"})
    assert anonymous.status_code in (401, 403), anonymous.text
    assert requests.get(f"http://127.0.0.1:{a.port}/_scheduler/docs").status_code == 401


def test_replicator_member_cannot_copy_a_private_local_database(servers):
    """An attack: once `_replicator` lets a user write, that user's document must not use a local
    endpoint (read as a server admin) to copy a database they cannot read to a URL of their own."""
    a = servers("a")
    b = servers("b")
    secret = Client(a.url, "secret")
    secret.create()
    secret.put({"_id": "plans", "x": "private"})
    wait_for(lambda: requests.get(f"{a.url}/_replicator", timeout=5).status_code == 200, what="_replicator")
    assert requests.put(f"{a.url}/_users/org.couchdb.user:mallory", timeout=5, json={
        "name": "mallory", "password": "m", "type": "user", "roles": []}).status_code == 201
    assert requests.put(f"{a.url}/_replicator/_security", timeout=5, json={
        "admins": {"names": [], "roles": []}, "members": {"names": ["mallory"], "roles": []}}).status_code == 200
    assert requests.get(f"http://mallory:m@127.0.0.1:{a.port}/secret/plans", timeout=5).status_code == 403
    doc = {"source": "secret", "target": f"{b.url}/loot", "create_target": True}
    r = requests.put(f"http://mallory:m@127.0.0.1:{a.port}/_replicator/steal", json=doc, timeout=5)
    assert r.status_code == 201, r.text
    state = wait_for(lambda: (lambda d: d if d.get("_replication_state") else None)(
        requests.get(f"{a.url}/_replicator/steal", timeout=5).json()), what="a state")
    assert state["_replication_state"] == "failed", state
    assert "only server admins" in state["_replication_state_reason"]
    assert requests.get(f"{b.url}/loot", timeout=5).status_code == 404
