"""Single-document API: CRUD, ids, query options, ETags, errors."""

import json
import re

import pytest

REV_RE = re.compile(r"^\d+-[0-9a-f]+$")


def put(couch, db, doc_id, body, **params):
    r = couch.put(f"/{db}/{doc_id}", json=body, params=params)
    assert r.status_code in (201, 202), f"PUT {doc_id}: {r.status_code} {r.text}"
    return r.json()["rev"]


def bulk(couch, db, docs, new_edits=False):
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": docs, "new_edits": new_edits})
    assert r.status_code == 201, r.text
    return r.json()


def make_conflict(couch, db, doc_id="c"):
    """Doc with leaves 2-bbb (winner), 2-aaa, and a deleted leaf 2-ccc... built with new_edits=false."""
    bulk(couch, db, [
        {"_id": doc_id, "_rev": "2-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "v": "b",
         "_revisions": {"start": 2, "ids": ["bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "11111111111111111111111111111111"]}},
        {"_id": doc_id, "_rev": "2-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "v": "a",
         "_revisions": {"start": 2, "ids": ["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "11111111111111111111111111111111"]}},
        {"_id": doc_id, "_rev": "2-cccccccccccccccccccccccccccccccc", "_deleted": True,
         "_revisions": {"start": 2, "ids": ["cccccccccccccccccccccccccccccccc", "11111111111111111111111111111111"]}},
    ])


def test_put_get(couch, db):
    r = couch.put(f"/{db}/doc1", json={"a": 1, "nested": {"x": [1, 2]}})
    assert r.status_code == 201
    body = r.json()
    assert body["ok"] is True and body["id"] == "doc1" and REV_RE.match(body["rev"])
    assert body["rev"].startswith("1-")
    assert r.headers.get("ETag") == f'"{body["rev"]}"'
    r = couch.get(f"/{db}/doc1")
    assert r.status_code == 200
    assert r.json() == {"_id": "doc1", "_rev": body["rev"], "a": 1, "nested": {"x": [1, 2]}}
    assert r.headers.get("ETag") == f'"{body["rev"]}"'


def test_update_and_conflict(couch, db):
    rev1 = put(couch, db, "d", {"v": 1})
    rev2 = put(couch, db, "d", {"_rev": rev1, "v": 2})
    assert rev2.startswith("2-")
    r = couch.put(f"/{db}/d", json={"_rev": rev1, "v": 3})
    assert r.status_code == 409
    assert r.json() == {"error": "conflict", "reason": "Document update conflict."}
    r = couch.put(f"/{db}/d", json={"v": 3})
    assert r.status_code == 409
    # rev as query parameter is accepted too
    assert put(couch, db, "d", {"v": 4}, rev=rev2).startswith("3-")


def test_delete_and_reasons(couch, db):
    r = couch.get(f"/{db}/never")
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "reason": "missing"}
    rev = put(couch, db, "d", {"v": 1})
    r = couch.delete(f"/{db}/d", params={"rev": rev})
    assert r.status_code == 200
    body = r.json()
    assert body["ok"] is True and body["id"] == "d" and body["rev"].startswith("2-")
    r = couch.get(f"/{db}/d")
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "reason": "deleted"}
    r = couch.get(f"/{db}/d", params={"rev": body["rev"]})
    assert r.status_code == 200
    assert r.json() == {"_id": "d", "_rev": body["rev"], "_deleted": True}


def test_delete_without_rev_conflicts(couch, db):
    put(couch, db, "d", {})
    r = couch.delete(f"/{db}/d")
    assert r.status_code == 409
    assert r.json()["error"] == "conflict"


def test_post_generates_id(couch, db):
    r = couch.post(f"/{db}", json={"a": 1})
    assert r.status_code == 201
    body = r.json()
    assert body["ok"] is True and isinstance(body["id"], str) and body["id"]
    assert couch.get(f"/{db}/{body['id']}").json()["a"] == 1
    r = couch.post(f"/{db}", json={"_id": "chosen", "a": 2})
    assert r.status_code == 201 and r.json()["id"] == "chosen"


def test_etag_if_none_match(couch, db):
    rev = put(couch, db, "d", {"v": 1})
    r = couch.get(f"/{db}/d", headers={"If-None-Match": f'"{rev}"'})
    assert r.status_code == 304
    assert r.content == b""
    put(couch, db, "d", {"_rev": rev, "v": 2})
    assert couch.get(f"/{db}/d", headers={"If-None-Match": f'"{rev}"'}).status_code == 200


@pytest.mark.parametrize("doc_id,path", [
    ("a/b", "a%2Fb"),
    ("with space", "with%20space"),
    ("héllo ✓", "h%C3%A9llo%20%E2%9C%93"),
    ("weird/id with é", "weird%2Fid%20with%20%C3%A9"),
])
def test_special_ids(couch, db, doc_id, path):
    r = couch.raw("PUT", f"/{db}/{path}", body=json.dumps({"v": 1}).encode(),
                  headers={"Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    assert r.json()["id"] == doc_id
    r = couch.raw("GET", f"/{db}/{path}")
    assert r.status_code == 200
    assert r.json()["_id"] == doc_id
    ids = [row["id"] for row in couch.get(f"/{db}/_all_docs").json()["rows"]]
    assert ids == [doc_id]


def test_design_doc(couch, db):
    r = couch.put(f"/{db}/_design/app", json={"views": {}})
    assert r.status_code == 201
    assert r.json()["id"] == "_design/app"
    r = couch.get(f"/{db}/_design/app")
    assert r.status_code == 200 and r.json()["_id"] == "_design/app"


def test_reserved_underscore_id(couch, db):
    r = couch.post(f"/{db}", json={"_id": "_foo", "v": 1})
    assert r.status_code == 400
    assert r.json() == {"error": "illegal_docid", "reason": "Only reserved document ids may start with underscore."}
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": [{"_id": "_foo"}]})
    assert r.status_code in (201, 400)
    body = r.json()
    if r.status_code == 201:
        assert body[0]["error"] == "illegal_docid"
    else:
        assert body["error"] == "illegal_docid"


def test_bad_json(couch, db):
    r = couch.raw("PUT", f"/{db}/d", body=b'{"a":', headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert r.json()["error"] == "bad_request"


def test_non_object_body(couch, db):
    r = couch.raw("PUT", f"/{db}/d", body=b"[1,2]", headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "Document must be a JSON object"}


def test_bad_rev(couch, db):
    put(couch, db, "d", {})
    r = couch.get(f"/{db}/d", params={"rev": "notarev"})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "Invalid rev format"}
    r = couch.put(f"/{db}/d", json={"_rev": "bogus"})
    assert r.status_code == 400
    assert r.json()["error"] == "bad_request"


def test_rev_and_revs(couch, db):
    rev1 = put(couch, db, "d", {"v": 1})
    rev2 = put(couch, db, "d", {"_rev": rev1, "v": 2})
    r = couch.get(f"/{db}/d", params={"rev": rev1})
    assert r.json() == {"_id": "d", "_rev": rev1, "v": 1}
    r = couch.get(f"/{db}/d", params={"revs": "true"})
    assert r.json()["_revisions"] == {"start": 2, "ids": [rev2.split("-", 1)[1], rev1.split("-", 1)[1]]}
    r = couch.get(f"/{db}/d", params={"revs_info": "true"})
    assert r.json()["_revs_info"] == [{"rev": rev2, "status": "available"}, {"rev": rev1, "status": "available"}]
    r = couch.get(f"/{db}/d", params={"rev": "1-00000000000000000000000000000000"})
    assert r.status_code == 404
    assert r.json()["error"] == "not_found"


def test_conflicts_and_deleted_conflicts(couch, db):
    make_conflict(couch, db)
    r = couch.get(f"/{db}/c", params={"conflicts": "true"})
    doc = r.json()
    assert doc["_rev"] == "2-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" and doc["v"] == "b"
    assert doc["_conflicts"] == ["2-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]
    r = couch.get(f"/{db}/c", params={"deleted_conflicts": "true"})
    assert r.json()["_deleted_conflicts"] == ["2-cccccccccccccccccccccccccccccccc"]
    assert "_conflicts" not in couch.get(f"/{db}/c").json()


def test_winner_prefers_live_leaf_over_deleted(couch, db):
    bulk(couch, db, [
        {"_id": "w", "_rev": "1-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "v": "live"},
        {"_id": "w", "_rev": "3-ffffffffffffffffffffffffffffffff", "_deleted": True,
         "_revisions": {"start": 3, "ids": ["ffffffffffffffffffffffffffffffff", "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee",
                                            "dddddddddddddddddddddddddddddddd"]}},
    ])
    doc = couch.get(f"/{db}/w").json()
    assert doc["_rev"] == "1-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" and doc["v"] == "live"


def test_open_revs_all_and_list(couch, db):
    make_conflict(couch, db)
    r = couch.get(f"/{db}/c", params={"open_revs": "all"})
    assert r.status_code == 200
    leaves = r.json()
    revs = sorted(item["ok"]["_rev"] for item in leaves)
    assert revs == ["2-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "2-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
                    "2-cccccccccccccccccccccccccccccccc"]
    deleted = [i["ok"] for i in leaves if i["ok"]["_rev"].startswith("2-c")][0]
    assert deleted.get("_deleted") is True
    wanted = ["2-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "9-99999999999999999999999999999999"]
    r = couch.get(f"/{db}/c", params={"open_revs": json.dumps(wanted), "revs": "true"})
    assert r.status_code == 200
    items = r.json()
    assert len(items) == 2
    ok = [i for i in items if "ok" in i]
    missing = [i for i in items if "missing" in i]
    assert ok[0]["ok"]["v"] == "a"
    assert ok[0]["ok"]["_revisions"] == {"start": 2, "ids": ["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                                                             "11111111111111111111111111111111"]}
    assert missing == [{"missing": "9-99999999999999999999999999999999"}]


def test_open_revs_latest(couch, db):
    rev1 = put(couch, db, "d", {"v": 1})
    rev2 = put(couch, db, "d", {"_rev": rev1, "v": 2})
    r = couch.get(f"/{db}/d", params={"open_revs": json.dumps([rev1]), "latest": "true"})
    assert [i["ok"]["_rev"] for i in r.json()] == [rev2]
    r = couch.get(f"/{db}/d", params={"open_revs": json.dumps([rev1])})
    assert [i["ok"]["_rev"] for i in r.json()] == [rev1]


def test_local_seq_and_meta(couch, db):
    put(couch, db, "d", {})
    doc = couch.get(f"/{db}/d", params={"local_seq": "true"}).json()
    assert "_local_seq" in doc
    # meta is revs_info + conflicts + deleted_conflicts (chttpd_db:parse_doc_query), not local_seq.
    doc = couch.get(f"/{db}/d", params={"meta": "true"}).json()
    assert "_revs_info" in doc and "_local_seq" not in doc
    doc = couch.get(f"/{db}/d", params={"meta": "true", "local_seq": "true"}).json()
    assert "_revs_info" in doc and "_local_seq" in doc


def test_new_edits_false_put(couch, db):
    r = couch.put(f"/{db}/d", params={"new_edits": "false"},
                  json={"_rev": "3-abcabcabcabcabcabcabcabcabcabcab", "v": 1,
                        "_revisions": {"start": 3, "ids": ["abcabcabcabcabcabcabcabcabcabcab",
                                                           "22222222222222222222222222222222",
                                                           "11111111111111111111111111111111"]}})
    assert r.status_code == 201
    assert r.json() == {"ok": True, "id": "d", "rev": "3-abcabcabcabcabcabcabcabcabcabcab"}
    doc = couch.get(f"/{db}/d", params={"revs": "true"}).json()
    assert doc["_revisions"]["ids"][1:] == ["22222222222222222222222222222222", "11111111111111111111111111111111"]
    # replaying the same revision is accepted and changes nothing
    r = couch.put(f"/{db}/d", params={"new_edits": "false"},
                  json={"_rev": "3-abcabcabcabcabcabcabcabcabcabcab", "v": 1})
    assert r.status_code == 201


def test_local_docs(couch, db):
    r = couch.put(f"/{db}/_local/cp", json={"seq": 1})
    assert r.status_code == 201
    assert r.json() == {"ok": True, "id": "_local/cp", "rev": "0-1"}
    r = couch.put(f"/{db}/_local/cp", json={"_rev": "0-1", "seq": 2})
    assert r.json()["rev"] == "0-2"
    r = couch.get(f"/{db}/_local/cp")
    assert r.json() == {"_id": "_local/cp", "_rev": "0-2", "seq": 2}
    # No conflict check on _local docs (couch_db_updater:update_local_doc_revs): the stored rev is
    # the supplied N + 1, so a replicator's checkpoint write always lands.
    r = couch.put(f"/{db}/_local/cp", json={"_rev": "0-1", "seq": 3})
    assert r.status_code == 201
    assert r.json()["rev"] == "0-2"
    assert couch.get(f"/{db}/_local/cp").json() == {"_id": "_local/cp", "_rev": "0-2", "seq": 3}
    assert couch.get(f"/{db}/_all_docs").json()["rows"] == []
    assert couch.get(f"/{db}/_changes").json()["results"] == []
    r = couch.delete(f"/{db}/_local/cp", params={"rev": "0-2"})
    assert r.status_code == 200
    assert r.json() == {"ok": True, "id": "_local/cp", "rev": "0-0"}
    r = couch.get(f"/{db}/_local/cp")
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "reason": "missing"}


def test_local_doc_slash_encoded(couch, db):
    r = couch.raw("PUT", f"/{db}/_local%2Fx", body=b'{"a":1}', headers={"Content-Type": "application/json"})
    assert r.status_code == 201
    assert couch.get(f"/{db}/_local/x").json()["a"] == 1
