"""Database info and maintenance as CouchDB 3.4 answers them (issue 11 items 9, 10, 11): `compact_running` is
true while `_compact` works and its effect is visible once it reads false; `sizes.external` counts attachment
bytes; endpoints CouchDB removed or couchlite does not run answer clearly, never with a misleading success."""

import os
import time

from test_documents import put

COMPACTION_WAIT_S = 60


def info(couch, db):
    r = couch.get(f"/{db}")
    assert r.status_code == 200
    return r.json()


def test_compact_running_until_the_old_revisions_are_gone(couch, db):
    # Enough documents that compaction takes longer than the client's next request: a server that reports
    # `compact_running: false` at once is caught reading the old revisions below.
    n = 3000
    docs = [{"_id": f"d{i:05d}", "body": "x" * 200} for i in range(n)]
    first = couch.post(f"/{db}/_bulk_docs", json={"docs": docs}).json()
    second = couch.post(f"/{db}/_bulk_docs", json={"docs": [
        {"_id": row["id"], "_rev": row["rev"], "body": "y"} for row in first]}).json()
    assert all(row.get("ok") for row in second)
    last = first[-1]
    assert couch.get(f"/{db}/{last['id']}", params={"rev": last["rev"]}).status_code == 200
    assert info(couch, db)["compact_running"] is False
    r = couch.post(f"/{db}/_compact", json={})
    assert r.status_code == 202 and r.json() == {"ok": True}
    deadline = time.monotonic() + COMPACTION_WAIT_S
    while info(couch, db)["compact_running"]:
        assert time.monotonic() < deadline, "compaction did not finish"
        time.sleep(0.05)
    for row in (first[0], first[n // 2], last):
        r = couch.get(f"/{db}/{row['id']}", params={"rev": row["rev"]})
        assert r.status_code == 404, f"{row['id']} still has its compacted revision"
        assert r.json() == {"error": "not_found", "reason": "missing"}
    assert couch.get(f"/{db}/{last['id']}").json()["body"] == "y"


def test_external_size_counts_attachment_bytes(couch, db):
    put(couch, db, "plain", {"v": 1})
    before = info(couch, db)["sizes"]["external"]
    data = os.urandom(20000)  # incompressible: CouchDB counts the stored length, which is the length here
    r = couch.put(f"/{db}/photo/p.bin", data=data, headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 201
    with_photo = info(couch, db)["sizes"]["external"]
    assert with_photo - before >= len(data)
    assert with_photo - before < len(data) + 1000
    r = couch.delete(f"/{db}/photo", params={"rev": r.json()["rev"]})
    assert r.status_code == 200
    assert with_photo - info(couch, db)["sizes"]["external"] >= len(data)


def test_external_size_counts_an_attachment_once_per_document(couch, db):
    data = os.urandom(10000)
    r = couch.put(f"/{db}/d/a.bin", data=data, headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 201
    one = info(couch, db)["sizes"]["external"]
    # A new revision keeps the attachment as a stub: the old revision is no longer a leaf.
    doc = couch.get(f"/{db}/d").json()
    doc["v"] = 2
    assert couch.put(f"/{db}/d", json=doc).status_code == 201
    assert abs(info(couch, db)["sizes"]["external"] - one) < 1000


def test_temp_view_is_gone(couch, db):
    r = couch.post(f"/{db}/_temp_view", json={"map": "function(doc) { emit(doc._id, 1); }"})
    assert r.status_code == 410
    assert r.json() == {"error": "gone", "reason": "Temporary views are not supported in CouchDB"}


def test_design_info_of_a_missing_design_document(couch, db):
    r = couch.get(f"/{db}/_design/nope/_info")
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "reason": "missing"}


def test_design_info_is_answered(couch, db):
    put(couch, db, "_design/app", {"views": {"all": {"map": "function(doc) { emit(doc._id, 1); }"}}})
    r = couch.get(f"/{db}/_design/app/_info")
    assert r.status_code == 200 and r.json()["name"] == "app"
    assert r.json()["view_index"]["language"] == "javascript"


def test_compact_of_a_design_document(couch, db):
    r = couch.post(f"/{db}/_compact/nosuch", json={})
    assert r.status_code == 404
    assert r.json()["error"] == "not_found"
    put(couch, db, "_design/app", {"views": {"all": {"map": "function(doc) { emit(doc._id, 1); }"}}})
    r = couch.post(f"/{db}/_compact/app", json={})
    assert r.status_code == 202 and r.json() == {"ok": True}
