"""_changes?filter=_view&view=ddoc/name on every feed type: a change passes when the view's map function emits
for the document."""

import json

import pytest

from test_views import bulk, ddoc

TYPED = "function(doc) { if (doc.type === 'photo') emit(doc._id, null); }"


@pytest.fixture
def fdb(couch, ordered_db):
    bulk(couch, ordered_db, [{"_id": "p1", "type": "photo"}, {"_id": "n1", "type": "note"},
                             {"_id": "p2", "type": "photo"}])
    ddoc(couch, ordered_db, "f", {"photos": {"map": TYPED}})
    return ordered_db


PARAMS = {"filter": "_view", "view": "f/photos", "since": 0}


def test_normal_and_longpoll(couch, fdb):
    for feed in ("normal", "longpoll"):
        r = couch.get(f"/{fdb}/_changes", params={**PARAMS, "feed": feed})
        assert r.status_code == 200, r.text
        assert [row["id"] for row in r.json()["results"]] == ["p1", "p2"]
    r = couch.post(f"/{fdb}/_changes", params=PARAMS, json={})
    assert [row["id"] for row in r.json()["results"]] == ["p1", "p2"]


def test_continuous_and_eventsource(couch, fdb):
    r = couch.get(f"/{fdb}/_changes", params={**PARAMS, "feed": "continuous", "timeout": 300}, timeout=15)
    objs = [json.loads(line) for line in r.content.split(b"\n") if line.strip()]
    assert [o["id"] for o in objs if "id" in o] == ["p1", "p2"]
    assert "last_seq" in objs[-1]
    r = couch.get(f"/{fdb}/_changes", params={**PARAMS, "feed": "eventsource", "timeout": 300}, timeout=15,
                  headers={"Connection": "close"})  # CouchDB may send a stray chunk after an eventsource feed
    data = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    assert [d["id"] for d in data] == ["p1", "p2"]


def test_a_deleted_document_is_mapped_as_its_stub(couch, fdb):
    rev = couch.get(f"/{fdb}/p1").json()["_rev"]
    assert couch.delete(f"/{fdb}/p1", params={"rev": rev}).status_code == 200
    every = "function(doc) { if (doc._deleted) emit(doc._id, null); }"
    ddoc(couch, fdb, "g", {"gone": {"map": every}})
    r = couch.get(f"/{fdb}/_changes", params={"filter": "_view", "view": "g/gone"})
    assert [(row["id"], row.get("deleted")) for row in r.json()["results"]] == [("p1", True)]


def test_view_filter_errors(couch, fdb):
    r = couch.get(f"/{fdb}/_changes", params={"filter": "_view"})
    assert r.status_code == 400 and r.json()["reason"] == "`view` filter parameter is not provided."
    r = couch.get(f"/{fdb}/_changes", params={"filter": "_view", "view": "nope/photos"})
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    r = couch.get(f"/{fdb}/_changes", params={"filter": "_view", "view": "f/nope"})
    assert r.status_code == 404 and r.json()["reason"] == "missing json key: nope"
