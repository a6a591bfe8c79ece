"""couchlite's replicator with design functions (issue 17): a replication filtered by a JavaScript function of
the source (`filter: "ddoc/name"` + `query_params`, from `_replicate`, `_replicator` and `couchlite replicate`),
whose id changes with the filter's code, and a target whose `validate_doc_update` forbids some documents: they
are counted in `doc_write_failures` and the replication completes."""

from __future__ import annotations

import json
import os
import subprocess
import time

import requests

from test_replication_e2e import Client

TIMEOUT_S = 120

FILTER = "function(doc, req) { return doc.type == req.query.type; }"


def replicate(server, body: dict) -> requests.Response:
    return requests.post(f"{server.url}/_replicate", json=body, timeout=TIMEOUT_S)


def seed(src: Client) -> None:
    src.create()
    src.put({"_id": "_design/app", "filters": {"by_type": FILTER}})
    src.bulk([{"_id": f"photo-{i}", "type": "photo", "n": i} for i in range(20)]
             + [{"_id": f"note-{i}", "type": "note", "n": i} for i in range(10)])


def ids(client: Client) -> list[str]:
    rows = client.req("GET", "/_all_docs").json()["rows"]
    return sorted(row["id"] for row in rows)


def test_filtered_replication_copies_only_what_the_filter_passes(servers):
    a = servers("a")
    b = servers("b")
    src = Client(a.url, "src")
    seed(src)
    body = {"source": "src", "target": f"{b.url}/photos", "create_target": True,
            "filter": "app/by_type", "query_params": {"type": "photo"}}
    resp = replicate(a, body)
    assert resp.status_code == 200, resp.text
    history = resp.json()["history"][0]
    assert history["docs_written"] == 20 and history["doc_write_failures"] == 0, history
    tgt = Client(b.url, "photos")
    assert ids(tgt) == sorted(f"photo-{i}" for i in range(20))

    # Incremental: a new photo travels, a new note does not.
    src.put({"_id": "photo-new", "type": "photo"})
    src.put({"_id": "note-new", "type": "note"})
    again = replicate(a, body).json()
    assert again["history"][0]["docs_written"] == 1, again
    assert "photo-new" in ids(tgt) and "note-new" not in ids(tgt)

    # Other query parameters are another replication (another checkpoint) with other documents.
    notes = dict(body, target=f"{b.url}/notes", query_params={"type": "note"})
    resp = replicate(a, notes)
    assert resp.status_code == 200, resp.text
    assert ids(Client(b.url, "notes")) == sorted([f"note-{i}" for i in range(10)] + ["note-new"])
    assert resp.json()["session_id"] != again["session_id"]

    # An edited filter is a new replication id, so it starts from the beginning, as in CouchDB.
    rev = src.get("_design/app").json()["_rev"]
    src.put({"_id": "_design/app", "_rev": rev, "filters": {"by_type": FILTER + " "}})
    src.put({"_id": "_design/app2", "filters": {"by_type": "function(doc) { return doc.n === 3; }"}})
    edited = replicate(a, dict(body, filter="app2/by_type")).json()
    assert edited["history"][0]["start_last_seq"] in (0, "0"), edited

    # The command-line replicator takes the same filter.
    binary = os.environ["COUCHLITE_BIN"]
    out = subprocess.run(
        [binary, "replicate", f"{a.url}/src", f"{b.url}/cli", "--create-target", "--filter", "app/by_type",
         "--query-params", json.dumps({"type": "note"})], capture_output=True, timeout=TIMEOUT_S)
    assert out.returncode == 0, out.stderr.decode()
    assert ids(Client(b.url, "cli")) == sorted([f"note-{i}" for i in range(10)] + ["note-new"])


def test_filtered_replication_errors_are_couchdb_shaped(servers):
    a = servers("a")
    seed(Client(a.url, "src"))
    resp = replicate(a, {"source": "src", "target": "x", "create_target": True, "filter": "nosuch/f"})
    assert resp.status_code == 404 and resp.json()["error"] == "not_found", resp.text
    resp = replicate(a, {"source": "src", "target": "x", "create_target": True, "filter": "app/nosuch"})
    assert resp.status_code == 404 and "missing json key: nosuch" in resp.json()["reason"], resp.text
    resp = replicate(a, {"source": "src", "target": "x", "create_target": True, "filter": "bad"})
    assert resp.status_code == 400, resp.text


def test_replicator_document_with_a_filter(servers):
    a = servers("a")
    seed(Client(a.url, "src"))
    job = {"_id": "filtered", "source": "src", "target": "dst", "create_target": True,
           "filter": "app/by_type", "query_params": {"type": "note"}}
    assert requests.put(f"{a.url}/_replicator/filtered", json=job, timeout=30).status_code == 201
    deadline = time.monotonic() + 30
    state = None
    while time.monotonic() < deadline:
        state = requests.get(f"{a.url}/_replicator/filtered", timeout=30).json().get("_replication_state")
        if state in ("completed", "failed"):
            break
        time.sleep(0.2)
    assert state == "completed", requests.get(f"{a.url}/_replicator/filtered", timeout=30).text
    assert ids(Client(a.url, "dst")) == sorted(f"note-{i}" for i in range(10))


def test_target_validate_doc_update_forbids_some_documents_and_the_replication_completes(servers):
    a = servers("a")
    b = servers("b")
    src = Client(a.url, "src")
    src.create()
    src.bulk([{"_id": f"doc-{i}", "secret": i % 3 == 0, "n": i} for i in range(30)])
    # One forbidden document carries an attachment (it travels by multipart PUT, not _bulk_docs).
    rev = src.put({"_id": "with-att", "secret": True})
    requests.put(f"{a.url}/src/with-att/a.txt", params={"rev": rev}, data=b"hello",
                 headers={"Content-Type": "text/plain"}, timeout=30).raise_for_status()
    tgt = Client(b.url, "dst")
    tgt.create()
    tgt.put({"_id": "_design/guard", "validate_doc_update":
             "function(newDoc) { if (newDoc.secret) throw({forbidden: 'no secrets'}); }"})
    resp = replicate(a, {"source": "src", "target": f"{b.url}/dst"})
    assert resp.status_code == 200, resp.text
    history = resp.json()["history"][0]
    forbidden = 10 + 1
    assert history["doc_write_failures"] == forbidden, history
    assert history["docs_written"] == 31 - forbidden, history
    kept = [i for i in ids(tgt) if not i.startswith("_design/")]
    assert kept == sorted(f"doc-{i}" for i in range(30) if i % 3 != 0)
    # The checkpoint is written: a re-run has nothing new to do.
    again = replicate(a, {"source": "src", "target": f"{b.url}/dst"}).json()
    assert again.get("no_changes") is True or again["history"][0]["docs_written"] == 0, again
