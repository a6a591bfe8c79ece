"""_bulk_docs, _revs_diff, _missing_revs, _bulk_get, _all_docs."""

import json

from test_documents import bulk, make_conflict, put

H = "1" * 32


def test_bulk_docs_new_edits_true(couch, db):
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": [{"_id": "a", "v": 1}, {"_id": "b"}, {"v": 3}]})
    assert r.status_code == 201
    rows = r.json()
    assert [row["id"] for row in rows[:2]] == ["a", "b"]
    assert all(row["ok"] is True and row["rev"].startswith("1-") for row in rows)
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": [{"_id": "a", "v": 2}, {"_id": "c"}]})
    assert r.status_code == 201
    rows = r.json()
    assert rows[0] == {"id": "a", "error": "conflict", "reason": "Document update conflict."}
    assert rows[1]["id"] == "c" and rows[1]["ok"] is True


def test_bulk_docs_new_edits_false_idempotent(couch, db):
    docs = [{"_id": "x", "_rev": f"1-{H}", "v": 1}, {"_id": "y", "_rev": f"2-{'2' * 32}", "v": 2,
             "_revisions": {"start": 2, "ids": ["2" * 32, H]}}]
    for _ in range(2):
        r = couch.post(f"/{db}/_bulk_docs", json={"docs": docs, "new_edits": False})
        assert r.status_code == 201
        assert r.json() == []
    assert couch.get(f"/{db}/y").json()["_rev"] == f"2-{'2' * 32}"
    assert couch.get(f"/{db}").json()["doc_count"] == 2


def test_bulk_docs_requires_docs(couch, db):
    r = couch.post(f"/{db}/_bulk_docs", json={"nodocs": []})
    assert r.status_code == 400
    assert r.json()["error"] == "bad_request"


def test_revs_diff(couch, db):
    bulk(couch, db, [{"_id": "d", "_rev": f"2-{'2' * 32}", "_revisions": {"start": 2, "ids": ["2" * 32, H]}}])
    body = {"d": [f"2-{'2' * 32}", f"3-{'3' * 32}", f"1-{'9' * 32}"], "present": [], "new": [f"1-{H}"]}
    body["present"] = [f"1-{H}"]
    r = couch.post(f"/{db}/_revs_diff", json={"d": body["d"], "new": body["new"]})
    assert r.status_code == 200
    out = r.json()
    assert set(out) == {"d", "new"}
    assert sorted(out["d"]["missing"]) == sorted([f"3-{'3' * 32}", f"1-{'9' * 32}"])
    assert out["d"]["possible_ancestors"] == [f"2-{'2' * 32}"]
    assert out["new"] == {"missing": [f"1-{H}"]}
    r = couch.post(f"/{db}/_revs_diff", json={"d": [f"2-{'2' * 32}", f"1-{H}"]})
    assert r.json() == {}


def test_missing_revs(couch, db):
    bulk(couch, db, [{"_id": "d", "_rev": f"1-{H}"}])
    r = couch.post(f"/{db}/_missing_revs", json={"d": [f"1-{H}", f"2-{'2' * 32}"], "e": [f"1-{H}"]})
    assert r.status_code == 200
    assert r.json() == {"missing_revs": {"d": [f"2-{'2' * 32}"], "e": [f"1-{H}"]}}


def test_bulk_get(couch, db):
    rev1 = put(couch, db, "a", {"v": 1})
    rev2 = put(couch, db, "a", {"_rev": rev1, "v": 2})
    put(couch, db, "b", {"v": "b"})
    req = {"docs": [{"id": "b"}, {"id": "a", "rev": rev1}, {"id": "nope"}, {"id": "a", "rev": "9-" + "9" * 32}]}
    r = couch.post(f"/{db}/_bulk_get", params={"revs": "true"}, json=req)
    assert r.status_code == 200
    results = r.json()["results"]
    assert [x["id"] for x in results] == ["b", "a", "nope", "a"]
    assert results[0]["docs"][0]["ok"]["v"] == "b"
    doc = results[1]["docs"][0]["ok"]
    assert doc["_rev"] == rev1 and doc["v"] == 1
    assert doc["_revisions"] == {"start": 1, "ids": [rev1.split("-")[1]]}
    err = results[2]["docs"][0]["error"]
    assert err["id"] == "nope" and err["error"] == "not_found"
    err = results[3]["docs"][0]["error"]
    assert err["id"] == "a" and err["rev"] == "9-" + "9" * 32 and err["error"] == "not_found"
    r = couch.post(f"/{db}/_bulk_get", params={"latest": "true"}, json={"docs": [{"id": "a", "rev": rev1}]})
    assert r.json()["results"][0]["docs"][0]["ok"]["_rev"] == rev2


def test_bulk_get_of_megabytes_answers_every_document_in_order(couch, db):
    # Bodies past a megabyte in all: couchlite reads them a run at a time (each run bounded by its bodies' bytes),
    # so the answer must not lose, repeat or reorder a document where one run ends and the next begins.
    filler = "x" * 150_000
    revs = _seed(couch, db, [f"big-{n:02}" for n in range(16)])
    asks = []
    for n in range(16):
        asks.append({"id": f"big-{n:02}"})
        if n % 5 == 0:
            asks.append({"id": f"nope-{n}"})
        if n % 7 == 0:
            asks.append({"id": f"big-{n:02}", "rev": "bad"})
    for n in range(16):
        doc = {"_id": f"big-{n:02}", "_rev": revs[f"big-{n:02}"], "n": n, "filler": filler}
        assert couch.put(f"/{db}/big-{n:02}", json=doc).status_code == 201
    asks.append({"id": "", "rev": "1-" + "a" * 32})
    r = couch.post(f"/{db}/_bulk_get", params={"revs": "true", "latest": "true"}, json={"docs": asks})
    assert r.status_code == 200
    results = r.json()["results"]
    assert [x["id"] for x in results] == [a["id"] for a in asks]
    for ask, result in zip(asks, results):
        [entry] = result["docs"]
        if ask["id"].startswith("big-") and "rev" not in ask:
            doc = entry["ok"]
            assert doc["_id"] == ask["id"] and doc["n"] == int(ask["id"][4:]) and doc["filler"] == filler
            assert doc["_rev"].startswith("2-") and doc["_revisions"]["start"] == 2
        elif ask["id"].startswith("nope-"):
            assert entry["error"]["error"] == "not_found" and entry["error"]["rev"] == "undefined"
        elif ask["id"]:
            assert entry["error"] == {"id": ask["id"], "rev": "bad", "error": "bad_request",
                                      "reason": "Invalid rev format"}
        else:
            assert entry["error"]["id"] == "" and entry["error"]["error"] == "illegal_docid"


def _seed(couch, db, ids):
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": [{"_id": i, "n": n} for n, i in enumerate(ids)]})
    assert r.status_code == 201
    return {row["id"]: row["rev"] for row in r.json()}


def test_all_docs_basic(couch, db):
    revs = _seed(couch, db, ["c", "a", "b"])
    couch.put(f"/{db}/_local/hidden", json={})
    r = couch.get(f"/{db}/_all_docs")
    assert r.status_code == 200
    body = r.json()
    assert body["total_rows"] == 3 and body["offset"] == 0
    assert body["rows"] == [{"id": k, "key": k, "value": {"rev": revs[k]}} for k in ("a", "b", "c")]


def test_all_docs_ranges(couch, db):
    _seed(couch, db, ["a", "b", "c", "d", "e"])

    def ids(**params):
        q = {k: json.dumps(v) if k in ("key", "startkey", "endkey", "start_key", "end_key") else v
             for k, v in params.items()}
        r = couch.get(f"/{db}/_all_docs", params=q)
        assert r.status_code == 200, r.text
        return [row["id"] for row in r.json()["rows"]]
    assert ids(startkey="b", endkey="d") == ["b", "c", "d"]
    assert ids(start_key="b", end_key="d", inclusive_end="false") == ["b", "c"]
    assert ids(key="c") == ["c"]
    assert ids(limit=2) == ["a", "b"]
    assert ids(skip=3) == ["d", "e"]
    assert ids(descending="true") == ["e", "d", "c", "b", "a"]
    assert ids(descending="true", startkey="d", endkey="b") == ["d", "c", "b"]
    r = couch.get(f"/{db}/_all_docs", params={"skip": 1, "limit": 1})
    assert r.json()["offset"] == 1
    r = couch.get(f"/{db}/_all_docs", params={"startkey": '"c"'})
    assert r.json()["offset"] == 2
    r = couch.get(f"/{db}/_all_docs", params={"startkey": '"d"', "descending": "true"})
    assert r.json()["offset"] == 1


def test_all_docs_keys_get_and_post(couch, db):
    revs = _seed(couch, db, ["a", "b"])
    couch.delete(f"/{db}/b", params={"rev": revs["b"]})
    expected_ids = ["b", "zz", "a"]
    r = couch.post(f"/{db}/_all_docs", json={"keys": expected_ids})
    assert r.status_code == 200
    rows = r.json()["rows"]
    assert [row["key"] for row in rows] == expected_ids
    assert rows[0]["value"]["deleted"] is True and rows[0]["id"] == "b"
    assert rows[1] == {"key": "zz", "error": "not_found"}
    assert rows[2]["value"] == {"rev": revs["a"]}
    r = couch.get(f"/{db}/_all_docs", params={"keys": json.dumps(expected_ids)})
    assert r.status_code == 200
    assert r.json()["rows"] == rows


def test_all_docs_include_docs_conflicts_update_seq(couch, db):
    make_conflict(couch, db)
    r = couch.get(f"/{db}/_all_docs", params={"include_docs": "true", "conflicts": "true", "update_seq": "true"})
    body = r.json()
    assert "update_seq" in body
    doc = body["rows"][0]["doc"]
    assert doc["_id"] == "c" and doc["v"] == "b"
    assert doc["_conflicts"] == ["2-" + "a" * 32]
    r = couch.post(f"/{db}/_all_docs", params={"include_docs": "true"}, json={"keys": ["c"]})
    assert r.json()["rows"][0]["doc"]["v"] == "b"


def test_bulk_docs_new_edits_false_bare_rev(couch, db):
    # PouchDB's "7829 bare rev 1- with new_edits=false": CouchDB stores generation 1 with an empty hash and
    # answers it back as "1-"; a later edit on top of it is an ordinary update.
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": [{"_id": "bare", "_rev": "1-", "v": 1}], "new_edits": False})
    assert r.status_code == 201 and r.json() == []
    doc = couch.get(f"/{db}/bare", params={"revs": "true"}).json()
    assert doc == {"_id": "bare", "_rev": "1-", "v": 1, "_revisions": {"start": 1, "ids": [""]}}
    assert couch.get(f"/{db}/bare", params={"rev": "1-"}).json()["v"] == 1
    rows = couch.get(f"/{db}/_all_docs").json()["rows"]
    assert rows == [{"id": "bare", "key": "bare", "value": {"rev": "1-"}}]
    r = couch.put(f"/{db}/bare", json={"_rev": "1-", "v": 2})
    assert r.status_code == 201 and r.json()["rev"].startswith("2-")
    r = couch.post(f"/{db}/_revs_diff", json={"bare": ["1-", "2-"]})
    assert r.json() == {"bare": {"missing": ["2-"]}}
