"""Server-level endpoints: welcome, _up, _all_dbs, _uuids, errors, common headers."""

import json
import re

from conftest import unique_db_name


def test_welcome(couch):
    r = couch.get("/")
    assert r.status_code == 200
    body = r.json()
    assert body["couchdb"] == "Welcome"
    assert isinstance(body["version"], str) and body["version"]
    assert isinstance(body["vendor"], dict) and isinstance(body["vendor"].get("name"), str)
    assert isinstance(body["uuid"], str) and re.fullmatch(r"[0-9a-f]{32}", body["uuid"])


def test_welcome_uuid_is_stable(couch):
    assert couch.get("/").json()["uuid"] == couch.get("/").json()["uuid"]


def test_common_headers(couch):
    r = couch.get("/")
    assert r.headers["Content-Type"].startswith("application/json")
    assert r.headers.get("Cache-Control") == "must-revalidate"
    server = r.headers.get("Server")
    assert server, "Server header missing"
    assert "Couchbase Sync Gateway" not in server  # PouchDB/CBL switch protocols on that name


def test_up(couch):
    r = couch.get("/_up")
    assert r.status_code == 200
    assert r.json()["status"] == "ok"


def _make(couch, names):
    for n in names:
        assert couch.put(f"/{n}").status_code == 201
    return names


def test_all_dbs_lists_and_sorts(couch):
    prefix = unique_db_name("alldbs")
    names = _make(couch, [f"{prefix}-{c}" for c in "abc"])
    try:
        r = couch.get("/_all_dbs")
        assert r.status_code == 200
        listed = r.json()
        assert listed == sorted(listed)
        assert all(n in listed for n in names)
    finally:
        for n in names:
            couch.delete(f"/{n}")


def test_all_dbs_key_ranges_limit_skip_descending(couch):
    prefix = unique_db_name("alldbsr")
    names = _make(couch, [f"{prefix}-{c}" for c in "abcd"])
    try:
        def get(**params):
            q = {k: json.dumps(v) if k in ("startkey", "endkey", "start_key", "end_key") else v
                 for k, v in params.items()}
            r = couch.get("/_all_dbs", params=q)
            assert r.status_code == 200, r.text
            return r.json()
        assert get(startkey=names[0], endkey=names[3]) == names
        assert get(start_key=names[1], end_key=names[2]) == names[1:3]
        assert get(startkey=names[0], endkey=names[3], limit=2) == names[:2]
        assert get(startkey=names[0], endkey=names[3], skip=1, limit=2) == names[1:3]
        assert get(startkey=names[3], endkey=names[0], descending="true") == names[::-1]
    finally:
        for n in names:
            couch.delete(f"/{n}")


def test_uuids(couch):
    r = couch.get("/_uuids", params={"count": 5})
    assert r.status_code == 200
    uuids = r.json()["uuids"]
    assert len(uuids) == 5 and len(set(uuids)) == 5
    assert all(re.fullmatch(r"[0-9a-f]{32}", u) for u in uuids)
    assert len(couch.get("/_uuids").json()["uuids"]) == 1


def test_uuids_too_many(couch):
    r = couch.get("/_uuids", params={"count": 1001})  # CouchDB's default uuids/max_count is 1000
    assert r.status_code == 400
    assert r.json()["error"] == "bad_request"


def test_unknown_database_is_404(couch):
    r = couch.get(f"/{unique_db_name('nope')}/somedoc")
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "reason": "Database does not exist."}


def test_wrong_method_is_405(couch):
    r = couch.delete("/_all_dbs")
    assert r.status_code == 405
    assert r.json()["error"] == "method_not_allowed"
    assert r.headers["Content-Type"].startswith("application/json")


def test_wrong_method_on_db_endpoint(couch, db):
    r = couch.put(f"/{db}/_changes", json={})
    assert r.status_code == 405
    assert r.json()["error"] == "method_not_allowed"
