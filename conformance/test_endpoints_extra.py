"""More of what replicators and curl users rely on: design-doc functions, seq_interval, _bulk_get
errors, parameter validation. Every assertion holds for Apache CouchDB 3.x as well as couchlite."""

import json

import requests


def put(couch, db, docid, body):
    r = couch.put(f"/{db}/{docid}", json=body)
    assert r.status_code == 201, r.text
    return r.json()["rev"]


def test_view_query_is_answered(couch, db):
    put(couch, db, "_design/app", {"views": {"all": {"map": "function(doc){ emit(doc._id, 1); }"}}})
    put(couch, db, "a", {})
    r = couch.get(f"/{db}/_design/app/_view/all")
    assert r.status_code == 200
    assert r.json()["rows"][0]["id"] == "a"


def test_seq_interval_nulls_most_row_seqs(couch, db):
    for i in range(6):
        put(couch, db, f"d{i}", {"i": i})
    r = couch.get(f"/{db}/_changes", params={"seq_interval": 3})
    assert r.status_code == 200
    rows = r.json()["results"]
    assert len(rows) == 6
    nulls = [row["seq"] is None for row in rows]
    assert any(nulls) and not all(nulls)
    assert r.json()["last_seq"] is not None


def test_changes_include_docs_with_conflicts(couch, db):
    couch.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [
        {"_id": "c", "_rev": "1-aaa", "v": "a"},
        {"_id": "c", "_rev": "1-bbb", "v": "b"},
    ]})
    r = couch.get(f"/{db}/_changes", params={"include_docs": "true", "conflicts": "true", "style": "all_docs"})
    row = r.json()["results"][0]
    assert row["doc"]["_rev"] == "1-bbb"
    assert row["doc"]["_conflicts"] == ["1-aaa"]
    assert sorted(c["rev"] for c in row["changes"]) == ["1-aaa", "1-bbb"]


def test_changes_deleted_row_and_doc(couch, db):
    rev = put(couch, db, "gone", {"x": 1})
    r = couch.delete(f"/{db}/gone", params={"rev": rev})
    assert r.status_code == 200
    row = couch.get(f"/{db}/_changes", params={"include_docs": "true"}).json()["results"][0]
    assert row["deleted"] is True
    assert row["doc"]["_deleted"] is True
    assert row["doc"]["_id"] == "gone"


def test_bulk_get_missing_doc_and_rev(couch, db):
    put(couch, db, "here", {"v": 1})
    r = couch.post(f"/{db}/_bulk_get", json={"docs": [{"id": "nothere"}, {"id": "here", "rev": "9-zzz"}]})
    assert r.status_code == 200
    results = r.json()["results"]
    assert [res["id"] for res in results] == ["nothere", "here"]
    err0 = results[0]["docs"][0]["error"]
    assert err0["id"] == "nothere" and err0["error"] == "not_found"
    err1 = results[1]["docs"][0]["error"]
    assert err1["id"] == "here" and err1["rev"] == "9-zzz" and err1["error"] == "not_found"


def test_bulk_get_revs_returns_revisions(couch, db):
    rev1 = put(couch, db, "d", {"v": 1})
    rev2 = couch.put(f"/{db}/d", json={"_rev": rev1, "v": 2}).json()["rev"]
    r = couch.post(f"/{db}/_bulk_get", params={"revs": "true"}, json={"docs": [{"id": "d", "rev": rev2}]})
    doc = r.json()["results"][0]["docs"][0]["ok"]
    assert doc["_revisions"] == {"start": 2, "ids": [rev2.split("-")[1], rev1.split("-")[1]]}


def test_bulk_docs_bad_item_is_reported_per_doc(couch, db):
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": [{"_id": "ok1"}, {"_id": "ok2", "_rev": "1-nope"}]})
    assert r.status_code == 201
    items = r.json()
    assert items[0]["ok"] is True and items[0]["id"] == "ok1"
    assert items[1]["id"] == "ok2" and items[1]["error"] in ("conflict", "not_found")
    assert couch.get(f"/{db}/ok1").status_code == 200


def test_malformed_since_is_400(couch, db):
    r = couch.get(f"/{db}/_changes", params={"since": "garbage"})
    assert r.status_code == 400
    assert r.json()["error"] == "bad_request"


def test_unknown_feed_is_400(couch, db):
    r = couch.get(f"/{db}/_changes", params={"feed": "bogus"})
    assert r.status_code == 400


def test_bad_limit_is_400(couch, db):
    r = couch.get(f"/{db}/_all_docs", params={"limit": "ten"})
    assert r.status_code == 400
    assert r.json()["error"] == "query_parse_error"


def test_revs_diff_bad_body_is_400(couch, db):
    r = couch.post(f"/{db}/_revs_diff", data=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert r.json()["error"] == "bad_request"


def test_bulk_docs_needs_json_content_type(couch, db):
    r = couch.post(f"/{db}/_bulk_docs", data=json.dumps({"docs": []}), headers={"Content-Type": "text/html"})
    assert r.status_code == 415
    assert r.json()["error"] == "bad_content_type"


def test_replicated_write_of_unchanged_tree_gets_no_new_seq(couch, db):
    doc = {"_id": "r", "_rev": "2-bb", "_revisions": {"start": 2, "ids": ["bb", "aa"]}, "v": 1}
    couch.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [doc]})
    seq1 = couch.get(f"/{db}").json()["update_seq"]
    couch.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [doc]})
    assert couch.get(f"/{db}").json()["update_seq"] == seq1
    assert couch.get(f"/{db}/_changes", params={"since": seq1}).json()["results"] == []


def test_stemming_keeps_leaves_under_small_revs_limit(couch, db):
    assert couch.put(f"/{db}/_revs_limit", data="3", headers={"Content-Type": "application/json"}).json() == {"ok": True}
    ids = [f"{i:02d}" for i in range(10, 0, -1)]
    couch.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [
        {"_id": "s", "_rev": f"10-{ids[0]}", "_revisions": {"start": 10, "ids": ids}},
    ]})
    r = couch.get(f"/{db}/s", params={"revs": "true"})
    assert r.json()["_rev"] == "10-10"
    assert len(r.json()["_revisions"]["ids"]) == 3


def test_longest_database_name_takes_attachments_and_security(couch):
    name = "l" + "x" * 237
    assert couch.put(f"/{name}").status_code == 201
    try:
        r = couch.put(f"/{name}/doc/a.bin", data=b"\x00\x01\x02", headers={"Content-Type": "application/octet-stream"})
        assert r.status_code == 201, r.text
        assert couch.get(f"/{name}/doc/a.bin").content == b"\x00\x01\x02"
        sec = {"admins": {"names": [], "roles": []}, "members": {"names": [], "roles": ["_admin"]}}
        assert couch.put(f"/{name}/_security", json=sec).status_code == 200
        assert couch.get(f"/{name}/_security").json()["members"]["roles"] == ["_admin"]
    finally:
        couch.delete(f"/{name}")


def test_changes_include_docs_with_attachments_inline(couch, db):
    r = couch.put(f"/{db}/p", json={"_attachments": {"a.txt": {"content_type": "text/plain", "data": "aGVsbG8="}}})
    assert r.status_code == 201
    row = couch.get(f"/{db}/_changes", params={"include_docs": "true", "attachments": "true"}).json()["results"][0]
    att = row["doc"]["_attachments"]["a.txt"]
    assert att["data"] == "aGVsbG8="
    assert "stub" not in att
    row = couch.get(f"/{db}/_changes", params={"include_docs": "true"}).json()["results"][0]
    assert row["doc"]["_attachments"]["a.txt"]["stub"] is True


def test_atts_since_sends_only_newer_attachment_data(couch, db):
    r = couch.put(f"/{db}/p", json={"_attachments": {"old.txt": {"content_type": "text/plain", "data": "b2xk"}}})
    rev1 = r.json()["rev"]
    r = couch.put(f"/{db}/p/new.txt", params={"rev": rev1}, data=b"new", headers={"Content-Type": "text/plain"})
    assert r.status_code == 201
    doc = couch.get(f"/{db}/p", params={"attachments": "true", "atts_since": json.dumps([rev1])}).json()
    assert doc["_attachments"]["old.txt"]["stub"] is True
    assert doc["_attachments"]["new.txt"]["data"] == "bmV3"


def test_long_feed_with_docs_and_limit(couch, ordered_db):
    # One shard (q=1): the feed order and "the rest after `limit`" are asserted row by row.
    db = ordered_db
    docs = [{"_id": f"d{i:04d}", "i": i} for i in range(1200)]
    assert couch.post(f"/{db}/_bulk_docs", json={"docs": docs}).status_code == 201
    body = couch.get(f"/{db}/_changes", params={"include_docs": "true"}).json()
    assert [row["doc"]["i"] for row in body["results"]] == list(range(1200))
    assert body["pending"] == 0
    body = couch.get(f"/{db}/_changes", params={"include_docs": "true", "limit": 1100}).json()
    assert len(body["results"]) == 1100 and body["pending"] == 100
    rest = couch.get(f"/{db}/_changes", params={"since": body["last_seq"]}).json()
    assert [row["id"] for row in rest["results"]] == [f"d{i:04d}" for i in range(1100, 1200)]
    ids = couch.get(f"/{db}/_all_docs", params={"include_docs": "true", "limit": 700}).json()["rows"]
    assert len(ids) == 700 and ids[-1]["doc"]["i"] == 699
