"""Revision generation 0, as CouchDB 3.4.3 has it: a replicated `0-x` (or bare `0-`, or the oldest id of
`_revisions`) is stored like any other revision, read back, and edited on; an edit on top of it gets the
revision id CouchDB computes (its parent generation 0 is part of the hash). Generations below 0, which
CouchDB also stores, couchlite refuses."""

from conftest import is_couchlite


def test_bulk_docs_new_edits_false_stores_generation_zero(couch, db):
    r = couch.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [
        {"_id": "a", "_rev": "0-abc", "v": 1},
        {"_id": "b", "_rev": "0-", "v": 2},
        {"_id": "c", "_rev": "1-b", "_revisions": {"start": 1, "ids": ["b", "a"]}},
    ]})
    assert (r.status_code, r.json()) == (201, [])
    r = couch.get(f"/{db}/a", params={"revs": "true", "revs_info": "true"})
    assert r.json() == {"_id": "a", "_rev": "0-abc", "v": 1, "_revisions": {"start": 0, "ids": ["abc"]},
                        "_revs_info": [{"rev": "0-abc", "status": "available"}]}
    assert couch.get(f"/{db}/b", params={"revs": "true"}).json() == {
        "_id": "b", "_rev": "0-", "v": 2, "_revisions": {"start": 0, "ids": [""]}}
    assert couch.get(f"/{db}/b", params={"rev": "0-"}).json() == {"_id": "b", "_rev": "0-", "v": 2}
    r = couch.get(f"/{db}/c", params={"revs": "true", "revs_info": "true"})
    assert r.json() == {"_id": "c", "_rev": "1-b", "_revisions": {"start": 1, "ids": ["b", "a"]},
                        "_revs_info": [{"rev": "1-b", "status": "available"}, {"rev": "0-a", "status": "missing"}]}
    r = couch.get(f"/{db}/a", params={"open_revs": '["0-abc"]'}, headers={"Accept": "application/json"})
    assert r.json() == [{"ok": {"_id": "a", "_rev": "0-abc", "v": 1}}]
    rows = couch.get(f"/{db}/_all_docs").json()["rows"]
    assert [row["value"]["rev"] for row in rows] == ["0-abc", "0-", "1-b"]
    r = couch.post(f"/{db}/_revs_diff", json={"a": ["0-abc", "0-zzz"], "new": ["0-x"]})
    assert r.json() == {"a": {"missing": ["0-zzz"]}, "new": {"missing": ["0-x"]}}


def test_put_new_edits_false_stores_generation_zero(couch, db):
    r = couch.put(f"/{db}/e", params={"new_edits": "false"}, json={"_rev": "0-abc", "k": 1})
    assert (r.status_code, r.json()) == (201, {"ok": True, "id": "e", "rev": "0-abc"})
    assert couch.get(f"/{db}/e").json() == {"_id": "e", "_rev": "0-abc", "k": 1}


def test_an_edit_on_generation_zero_is_generation_one_with_couchdbs_rev(couch, db):
    r = couch.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [
        {"_id": "a", "_rev": "0-abc", "v": 1}, {"_id": "b", "_rev": "0-", "v": 2}]})
    assert r.status_code == 201
    r = couch.put(f"/{db}/a", json={"_rev": "0-abc", "v": 2})
    assert (r.status_code, r.json()["rev"]) == (201, "1-29990024e7577bb0d1a5092e2cf577d5")
    r = couch.get(f"/{db}/a", params={"revs": "true"})
    assert r.json()["_revisions"] == {"start": 1, "ids": ["29990024e7577bb0d1a5092e2cf577d5", "abc"]}
    r = couch.delete(f"/{db}/b", params={"rev": "0-"})
    assert (r.status_code, r.json()["rev"]) == (200, "1-8c0aa13780755ab50d1abeb8e36e727d")
    # A stale generation 0 is an ordinary conflict.
    r = couch.put(f"/{db}/a", json={"_rev": "0-abc", "v": 3})
    assert (r.status_code, r.json()["error"]) == (409, "conflict")


def test_a_body_replicated_later_fills_in_a_missing_generation_zero(couch, db):
    r = couch.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [
        {"_id": "c", "_rev": "1-b", "_revisions": {"start": 1, "ids": ["b", "a"]}}]})
    assert r.status_code == 201
    r = couch.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [{"_id": "c", "_rev": "0-a", "x": 1}]})
    assert (r.status_code, r.json()) == (201, [])
    r = couch.get(f"/{db}/c", params={"revs_info": "true"})
    assert r.json()["_revs_info"] == [{"rev": "1-b", "status": "available"}, {"rev": "0-a", "status": "available"}]


def test_generations_below_zero(couch, db):
    docs = [{"_id": "d", "_rev": "1-b", "_revisions": {"start": 1, "ids": ["b", "a", "z"]}}]
    r = couch.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": docs})
    if is_couchlite(couch):
        # couchlite refuses a path that would reach generation -1 and stores nothing.
        assert (r.status_code, r.json()) == (400, {
            "error": "bad_request", "reason": "_revisions.start must be at least the number of ids minus one"})
        assert couch.get(f"/{db}/d").status_code == 404
    else:
        # CouchDB 3.4.3 stores it and answers the path back.
        assert (r.status_code, r.json()) == (201, [])
        assert couch.get(f"/{db}/d", params={"revs": "true"}).json()["_revisions"] == {
            "start": 1, "ids": ["b", "a", "z"]}
