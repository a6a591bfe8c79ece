"""`POST /_replicate`, `GET /_active_tasks` and `GET /_scheduler/jobs` as CouchDB 3.4.3 answers them.

Source and target are URLs of the server under test (CouchDB 3 accepts only URLs; couchlite also
takes bare local database names, tested in conformance/e2e). The URLs are the ones the suite talks
to, so the server must be able to reach itself at COUCH_URL.
"""

from __future__ import annotations

import time
import urllib.parse

import pytest
import requests

from conftest import is_couchlite


def db_url(couch, name: str) -> str:
    parts = urllib.parse.urlsplit(couch.base)
    auth = f"{urllib.parse.quote(couch.user)}:{urllib.parse.quote(couch.password)}@" if couch.user else ""
    return f"{parts.scheme}://{auth}{parts.netloc}/{name}"


def test_one_shot_replicate_answers_with_the_session_history(couch, db, db_factory):
    target = db_factory("rt")
    for i in range(5):
        assert couch.put(f"/{db}/d{i}", json={"i": i}).status_code == 201
    r = couch.post("/_replicate", json={"source": db_url(couch, db), "target": db_url(couch, target)}, timeout=120)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["ok"] is True
    assert isinstance(body["session_id"], str) and body["source_last_seq"] not in (None, 0, "0")
    assert body["replication_id_version"] == 4
    entry = body["history"][0]
    for key in ("session_id", "start_time", "end_time", "start_last_seq", "end_last_seq", "recorded_seq",
                "missing_checked", "missing_found", "docs_read", "docs_written", "doc_write_failures"):
        assert key in entry, key
    assert entry["docs_written"] == 5 and entry["doc_write_failures"] == 0
    assert couch.get(f"/{target}").json()["doc_count"] == 5

    again = couch.post("/_replicate", json={"source": db_url(couch, db), "target": db_url(couch, target)},
                       timeout=120).json()
    assert again["ok"] is True and again.get("no_changes") is True, again


def test_replicate_creates_the_target_when_asked(couch, db):
    name = f"{db}-created"
    try:
        r = couch.post("/_replicate", json={"source": db_url(couch, db), "target": db_url(couch, name),
                                            "create_target": True}, timeout=120)
        assert r.status_code == 200, r.text
        assert couch.get(f"/{name}").status_code == 200
    finally:
        couch.delete(f"/{name}")


def test_replicate_a_missing_source_is_db_not_found(couch, db):
    r = couch.post("/_replicate", json={"source": db_url(couch, db + "-nosuch"), "target": db_url(couch, db)},
                   timeout=120)
    # CouchDB 3.4.3 answers 500 for this client error; couchlite answers 404 with the same body.
    assert r.status_code == (404 if is_couchlite(couch) else 500), r.text
    assert r.json()["error"] == "db_not_found"
    bare = urllib.parse.urlsplit(couch.base)
    assert r.json()["reason"] == f"could not open {bare.scheme}://{bare.netloc}/{db}-nosuch/", r.text


def test_replicate_without_a_target_is_refused(couch, db):
    r = couch.post("/_replicate", json={"source": db_url(couch, db)})
    if is_couchlite(couch):
        # A clean 400 where CouchDB 3.4.3 answers 500 {"error":"error","reason":"Missing replicator database"}.
        assert r.status_code == 400 and r.json()["error"] == "bad_request", r.text
    else:
        assert r.status_code == 500, r.text


def test_replicate_needs_a_server_admin(couch, db):
    r = requests.post(couch.url("/_replicate"), json={"source": db_url(couch, db), "target": db_url(couch, db)},
                      headers={"Accept": "application/json"}, timeout=30)
    assert r.status_code == 401, r.text
    assert r.json()["error"] == "unauthorized"


def test_continuous_replicate_answers_at_once_and_is_cancelled(couch, db, db_factory):
    target = db_factory("rc")
    body = {"source": db_url(couch, db), "target": db_url(couch, target), "continuous": True}
    r = couch.post("/_replicate", json=body, timeout=30)
    assert r.status_code == 202, r.text
    local_id = r.json()["_local_id"]
    assert r.json()["ok"] is True and local_id.endswith("+continuous")
    try:
        assert couch.put(f"/{db}/live", json={"x": 1}).status_code == 201
        deadline = time.monotonic() + 20
        while couch.get(f"/{target}/live").status_code != 200:
            assert time.monotonic() < deadline, "the continuous replication did not copy the new document"
            time.sleep(0.1)
        tasks = [t for t in couch.get("/_active_tasks").json() if t.get("type") == "replication"]
        mine = [t for t in tasks if t.get("replication_id") == local_id]
        assert mine, tasks
        for key in ("docs_read", "docs_written", "changes_pending", "source", "target", "started_on", "updated_on"):
            assert key in mine[0], key
        assert mine[0]["continuous"] is True
        jobs = couch.get("/_scheduler/jobs").json()
        assert "total_rows" in jobs and any(j["id"] == local_id for j in jobs["jobs"]), jobs
    finally:
        cancel = couch.post("/_replicate", json={**body, "cancel": True}, timeout=30)
    assert cancel.status_code == 200, cancel.text
    assert cancel.json()["ok"] is True and cancel.json()["_local_id"] == local_id


def test_cancelling_an_unknown_replication_is_404(couch, db):
    body = {"source": db_url(couch, db), "target": db_url(couch, db + "-x"), "continuous": True, "cancel": True}
    r = couch.post("/_replicate", json=body, timeout=30)
    assert r.status_code == 404, r.text
    assert r.json()["error"] == "not_found"


@pytest.mark.parametrize("path", ["/_active_tasks", "/_scheduler/jobs", "/_scheduler/docs"])
def test_replication_status_endpoints_need_a_server_admin(couch, path):
    assert couch.get(path).status_code == 200
    r = requests.get(couch.url(path), headers={"Accept": "application/json"}, timeout=30)
    assert r.status_code == 401, r.text


def test_replicate_only_the_named_doc_ids(couch, db, db_factory):
    target = db_factory("rd")
    for doc_id in ("a", "b", "c/d", "é"):
        assert couch.put(f"/{db}/{urllib.parse.quote(doc_id, safe='')}", json={"x": 1}).status_code == 201
    r = couch.post("/_replicate", json={"source": db_url(couch, db), "target": db_url(couch, target),
                                        "doc_ids": ["a", "c/d", "é"]}, timeout=120)
    assert r.status_code == 200, r.text
    ids = [row["id"] for row in couch.get(f"/{target}/_all_docs").json()["rows"]]
    assert ids == ["a", "c/d", "é"], ids


def test_replicate_with_a_selector(couch, db, db_factory):
    target = db_factory("rs")
    for i in range(6):
        assert couch.put(f"/{db}/d{i}", json={"type": "photo" if i % 2 else "note", "i": i}).status_code == 201
    r = couch.post("/_replicate", json={"source": db_url(couch, db), "target": db_url(couch, target),
                                        "selector": {"type": "photo"}}, timeout=120)
    assert r.status_code == 200, r.text
    ids = [row["id"] for row in couch.get(f"/{target}/_all_docs").json()["rows"]]
    assert ids == ["d1", "d3", "d5"], ids
