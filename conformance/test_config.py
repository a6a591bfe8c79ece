"""/_node/{node}/_config[/section[/key]]: read and change settings live (server admins only).

Against CouchDB every key a test changes is put back at once (the server is shared)."""

import contextlib

import pytest
import requests

from conftest import is_couchlite

CONFIG = "/_node/_local/_config"


@contextlib.contextmanager
def changed(couch, section, key, value):
    """Sets `section/key` to `value` for the block, then puts the old value back (or deletes a key that had
    none)."""
    r = couch.put(f"{CONFIG}/{section}/{key}", json=value)
    assert r.status_code == 200, r.text
    old = r.json()
    try:
        yield old
    finally:
        if old == "":
            couch.delete(f"{CONFIG}/{section}/{key}")
        else:
            couch.put(f"{CONFIG}/{section}/{key}", json=old)


def test_whole_config_and_sections_are_objects_of_strings(couch):
    r = couch.get(CONFIG)
    assert r.status_code == 200
    body = r.json()
    assert isinstance(body, dict)
    for section, keys in body.items():
        assert isinstance(keys, dict), section
        assert all(isinstance(v, str) for v in keys.values()), section
    assert couch.get(f"{CONFIG}/couchlite_no_such_section").json() == {}


def test_unknown_key_answers_unknown_config_value(couch):
    for method in ("GET", "DELETE"):
        r = couch.request(method, f"{CONFIG}/couchlite_no_such_section/nokey")
        assert r.status_code == 404
        assert r.json() == {"error": "not_found", "reason": "unknown_config_value"}


def test_put_answers_the_old_value_and_get_reads_the_new_one(couch):
    with changed(couch, "uuids", "max_count", "7") as old:
        assert couch.get(f"{CONFIG}/uuids/max_count").json() == "7"
        assert couch.get(f"{CONFIG}/uuids").json()["max_count"] == "7"
        assert couch.get(f"{CONFIG}").json()["uuids"]["max_count"] == "7"
        r = couch.put(f"{CONFIG}/uuids/max_count", json="8")
        assert r.status_code == 200 and r.json() == "7"
        # Live: the next request is held to it (CouchDB reads [uuids] max_count per request as well).
        assert couch.get("/_uuids", params={"count": "8"}).status_code == 200
        r = couch.get("/_uuids", params={"count": "9"})
        assert r.status_code == 400 and r.json()["reason"] == "count parameter too large"
    assert couch.get(f"{CONFIG}/uuids/max_count").status_code in (200, 404)
    if old == "":
        assert couch.get(f"{CONFIG}/uuids/max_count").status_code == 404


def test_document_size_limit_changes_live(couch, db):
    with changed(couch, "couchdb", "max_document_size", "100"):
        r = couch.put(f"/{db}/big", json={"x": "y" * 200})
        # CouchDB measures the document (`document_too_large`); couchlite refuses the body past the same size
        # before it is parsed (`too_large`).
        assert r.status_code == 413
        assert r.json()["error"] == ("too_large" if is_couchlite(couch) else "document_too_large")
        assert couch.put(f"/{db}/small", json={"x": 1}).status_code == 201
    assert couch.put(f"/{db}/big", json={"x": "y" * 200}).status_code == 201


def test_purge_limit_changes_live(couch, db):
    with changed(couch, "purge", "max_document_id_number", "1"):
        r = couch.post(f"/{db}/_purge", json={"a": [], "b": []})
        assert r.status_code == 400 and r.json()["reason"] == "Exceeded maximum number of documents."
    assert couch.post(f"/{db}/_purge", json={"a": [], "b": []}).status_code == 201


def test_put_needs_a_json_string(couch):
    r = couch.put(f"{CONFIG}/uuids/max_count", json=5)
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "a JSON string expected"}
    r = couch.post(f"{CONFIG}/uuids/max_count", json="5")
    assert r.status_code == 405


def test_unknown_node(couch):
    r = couch.get("/_node/nobody@nowhere/_config")
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "reason": "no such node: nobody@nowhere"}


def test_non_admin_reading_or_changing_config_is_refused(couch):
    url = couch.url(CONFIG)
    for method, path, body in (("GET", "", None), ("GET", "/uuids", None), ("GET", "/uuids/max_count", None),
                               ("PUT", "/uuids/max_count", "1"), ("DELETE", "/uuids/max_count", None)):
        r = requests.request(method, url + path, json=body, timeout=10)
        assert r.status_code == 401, (method, path, r.text)
        assert r.json() == {"error": "unauthorized", "reason": "You are not a server admin."}


# couchlite only: it keeps no settings it does not have, and checks the values of those it has.


def test_couchlite_keys_it_lacks_are_not_stored(couch):
    if not is_couchlite(couch):
        pytest.skip("CouchDB stores any key (couchlite-only behaviour)")
    r = couch.put(f"{CONFIG}/couchlite_no_such_section/k", json="v")
    assert r.status_code == 404 and r.json()["reason"] == "unknown_config_value"
    assert couch.get(f"{CONFIG}/couchlite_no_such_section").json() == {}


def test_couchlite_refuses_bad_values_and_changes_nothing(couch):
    if not is_couchlite(couch):
        pytest.skip("CouchDB stores any string (couchlite-only behaviour)")
    before = couch.get(f"{CONFIG}/couchdb/max_document_size").json()
    for value in ("abc", "-5", "0", "1.5", ""):
        r = couch.put(f"{CONFIG}/couchdb/max_document_size", json=value)
        assert r.status_code == 400 and r.json()["error"] == "bad_request", value
    assert couch.get(f"{CONFIG}/couchdb/max_document_size").json() == before
    r = couch.put(f"{CONFIG}/log/level", json="loud")
    assert r.status_code == 400
    with changed(couch, "log", "level", "warn") as old:
        assert couch.get(f"{CONFIG}/log/level").json() == "warning"
    assert couch.get(f"{CONFIG}/log/level").json() == old


def test_couchlite_delete_goes_back_to_the_started_value(couch):
    if not is_couchlite(couch):
        pytest.skip("CouchDB's DELETE removes the key (couchlite-only behaviour)")
    start = couch.get(f"{CONFIG}/chttpd_auth/timeout").json()
    assert couch.put(f"{CONFIG}/chttpd_auth/timeout", json="1234").json() == start
    r = couch.delete(f"{CONFIG}/chttpd_auth/timeout")
    assert r.status_code == 200 and r.json() == "1234"
    assert couch.get(f"{CONFIG}/chttpd_auth/timeout").json() == start
