"""Every numeric `_config` setting given 0, -1, 2^31, 2^63-1, 1e400 and text: the server stays up, the value is
refused (400) or taken, and what the setting controls still works afterwards. `[chttpd_auth] timeout` set to
2^63-1 crashed couchlite at the next login (`now + timeout` overflowed), `[replicator] interval` at once (its
nanoseconds overflowed in the scheduler's sleep).

CouchDB stores any string (200), and what its readers do with one that is no integer varies, so there every
value is taken and only the server's staying up is checked after text; couchlite refuses (400) a value it would not use (`test_config.py`), and takes the
huge ones, held to what the machine can do (a session of 2^63-1 s lasts 68 years; a body is held to half the
memory; `_uuids` answers at most 100,000). Against CouchDB each key is put back at once."""

from __future__ import annotations

import time
import urllib.parse
import uuid

import pytest

from conftest import is_couchlite

CONFIG = "/_node/_local/_config"
TWO_31 = str(2 ** 31)
TWO_63 = str(2 ** 63 - 1)
VALUES = ("0", "-1", TWO_31, TWO_63, "1e400", "abc")


def put_back(couch, section, key, original):
    """The key as it was before the test (deleted again on CouchDB when it had none)."""
    if original is None:
        couch.delete(f"{CONFIG}/{section}/{key}")
    else:
        assert couch.put(f"{CONFIG}/{section}/{key}", json=original).status_code == 200


def in_use(value: str, at_least: int) -> bool:
    """Whether a taken `value` must leave the thing it controls working: an integer of at least `at_least`. On
    CouchDB, which takes any text, some readers fall back to their default on one that is no integer and others
    fail (an attachment under `max_attachment_size` = "abc" is a 500 there), so after such a value only the
    server being up is checked."""
    try:
        return int(value) >= at_least
    except ValueError:
        return False


def local_url(couch, name: str) -> str:
    parts = urllib.parse.urlsplit(couch.base)
    return (f"{parts.scheme}://{urllib.parse.quote(couch.user)}:{urllib.parse.quote(couch.password)}@"
            f"{parts.netloc}/{name}")


# What each setting controls, checked after each value (the database `db` is the test's).

def document_write(couch, db):
    r = couch.put(f"/{db}/doc-{uuid.uuid4().hex}", json={"x": 1})
    assert r.status_code == 201, r.text


def attachment_write(couch, db):
    r = couch.put(f"/{db}/att-{uuid.uuid4().hex}/a.txt", data=b"0123456789", headers={"Content-Type": "text/plain"})
    assert r.status_code == 201, r.text


def bulk_write(couch, db):
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": [{"x": 1}, {"x": 2}]})
    assert r.status_code == 201 and len(r.json()) == 2, r.text


def dbs_info(couch, db):
    r = couch.post("/_dbs_info", json={"keys": [db]})
    assert r.status_code == 200 and r.json()[0]["key"] == db, r.text


def login(couch, db):
    """A cookie login, then a request with the cookie alone."""
    import requests
    r = requests.post(couch.url("/_session"), data={"name": couch.user, "password": couch.password}, timeout=30)
    assert r.status_code == 200, r.text
    cookie = r.cookies.get("AuthSession")
    assert cookie, r.headers
    who = requests.get(couch.url("/_session"), cookies={"AuthSession": cookie}, timeout=30)
    assert who.status_code == 200 and who.json()["userCtx"]["name"] == couch.user, who.text


def uuids(couch, db):
    r = couch.get("/_uuids", params={"count": "2"})
    assert r.status_code == 200 and len(r.json()["uuids"]) == 2, r.text


def purge_documents(couch, db):
    r = couch.post(f"/{db}/_purge", json={"nothere": ["1-abc"]})
    assert r.status_code == 201, r.text


def replication(couch, db):
    """A one-shot `_replicator` job of `db` into a new database completes (the scheduler still schedules)."""
    doc_id = f"ranges-{uuid.uuid4().hex[:12]}"
    target = f"{db}-copy-{doc_id[-6:]}"
    r = couch.put(f"/_replicator/{doc_id}", json={
        "source": local_url(couch, db), "target": local_url(couch, target), "create_target": True})
    assert r.status_code == 201, r.text
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = couch.get(f"/_replicator/{doc_id}").json().get("_replication_state")
            if state == "completed":
                return
            assert state in (None, "triggered", "running", "pending", "crashing", "error"), state
            time.sleep(0.2)
        pytest.fail(f"the job {doc_id} did not complete")
    finally:
        doc = couch.get(f"/_replicator/{doc_id}").json()
        couch.delete(f"/_replicator/{doc_id}", params={"rev": doc.get("_rev")})
        couch.delete(f"/{target}")


# (section, key, the check of what it controls, the least taken value under which that check holds)
SETTINGS = [
    ("couchdb", "max_document_size", document_write, 1000),
    ("couchdb", "max_attachment_size", attachment_write, 100),
    ("chttpd", "max_http_request_size", bulk_write, 10_000),
    ("chttpd", "max_db_number_for_dbs_info_req", dbs_info, 1),
    ("chttpd_auth", "timeout", login, 60),
    ("uuids", "max_count", uuids, 2),
    ("purge", "max_document_id_number", purge_documents, 1),
    ("purge", "max_revisions_number", purge_documents, 1),
    ("replicator", "max_jobs", replication, 1),
    ("replicator", "interval", replication, 1),
    ("replicator", "max_churn", replication, 0),
]

# Settings whose huge values CouchDB 3.4.3 takes and then cannot use: a login under `[chttpd_auth] timeout` =
# 2^63-1 is a 500 (`badarg`), and after the `[replicator]` values its scheduler leaves new jobs pending until a
# restart. What survives them is couchlite's behaviour, checked there only.
COUCHDB_BREAKS = {("chttpd_auth", "timeout"), ("replicator", "max_jobs"), ("replicator", "interval"),
                  ("replicator", "max_churn")}

# couchlite's least value of each (a smaller one, or any that is not a whole number, is refused with 400).
COUCHLITE_MINIMUM = {"max_jobs": 0}


@pytest.mark.parametrize(("section", "key", "check", "at_least"), SETTINGS, ids=[f"{s}-{k}" for s, k, _, _ in SETTINGS])
def test_numeric_setting_survives_every_value(couch, db, section, key, check, at_least):
    if (section, key) in COUCHDB_BREAKS and not is_couchlite(couch):
        pytest.skip(f"CouchDB does not survive every value of [{section}] {key} (couchlite-only behaviour)")
    path = f"{CONFIG}/{section}/{key}"
    before = couch.get(path)
    assert before.status_code in (200, 404), before.text
    original = before.json() if before.status_code == 200 else None
    try:
        for value in VALUES:
            r = couch.put(path, json=value)
            assert r.status_code in (200, 400), (value, r.status_code, r.text)
            assert couch.get("/_up").status_code == 200, f"the server is down after {section}/{key}={value}"
            shown = couch.get(path)
            if is_couchlite(couch):
                minimum = COUCHLITE_MINIMUM.get(key, 1)
                whole = value.lstrip("-").isdigit()
                expected = 200 if whole and int(value) >= minimum else 400
                assert r.status_code == expected, (value, r.text)
                if expected == 400:
                    assert r.json()["error"] == "bad_request", r.text
                assert shown.json() == (value if expected == 200 else original), (value, shown.text)
            elif r.status_code == 200:
                assert shown.json() == value, (value, shown.text)
            if r.status_code == 400 or in_use(value, at_least):
                check(couch, db)
            put_back(couch, section, key, original)
            check(couch, db)
    finally:
        put_back(couch, section, key, original)


def test_a_session_of_2_63_seconds_logs_in_and_its_cookie_works(couch, db):
    """The crash this file is named after: `[chttpd_auth] timeout` = 2^63-1, then a login and its cookie."""
    if not is_couchlite(couch):
        pytest.skip("CouchDB's login under this timeout is a 500 badarg (couchlite-only behaviour)")
    original = couch.get(f"{CONFIG}/chttpd_auth/timeout")
    try:
        assert couch.put(f"{CONFIG}/chttpd_auth/timeout", json=TWO_63).status_code == 200
        login(couch, db)
        login(couch, db)
    finally:
        put_back(couch, "chttpd_auth", "timeout", original.json() if original.status_code == 200 else None)
    assert couch.get("/_up").status_code == 200


def test_couchlite_huge_declared_body_under_unlimited_request_size_is_413(couch, db):
    """With `[chttpd] max_http_request_size` at 2^63-1, a body declaring 1 TiB must not make the server reserve
    it (the allocation failed and aborted the process): it is held to half the machine's memory, 413 from the
    head."""
    if not is_couchlite(couch):
        pytest.skip("CouchDB waits for the declared body (couchlite-only behaviour)")
    original = couch.get(f"{CONFIG}/chttpd/max_http_request_size").json()
    try:
        assert couch.put(f"{CONFIG}/chttpd/max_http_request_size", json=TWO_63).status_code == 200
        for size in (2 ** 40, 2 ** 62):
            r = couch.raw("POST", f"/{db}/_bulk_docs", body=b"",
                          headers={"Content-Type": "application/json", "Content-Length": str(size)})
            assert r.status_code == 413, (size, r.text)
            assert couch.get("/_up").status_code == 200, size
        bulk_write(couch, db)
    finally:
        put_back(couch, "chttpd", "max_http_request_size", original)


def test_couchlite_uuids_under_an_unlimited_max_count_are_held_to_100000(couch):
    """`[uuids] max_count` = 2^63-1 and `count=10^12`: not a list of a trillion ids built in memory."""
    if not is_couchlite(couch):
        pytest.skip("CouchDB would build the list (couchlite-only behaviour)")
    original = couch.get(f"{CONFIG}/uuids/max_count").json()
    try:
        assert couch.put(f"{CONFIG}/uuids/max_count", json=TWO_63).status_code == 200
        r = couch.get("/_uuids", params={"count": str(10 ** 12)})
        assert r.status_code == 400 and r.json()["reason"] == "count parameter too large", r.text
        assert len(couch.get("/_uuids", params={"count": "100000"}).json()["uuids"]) == 100_000
    finally:
        put_back(couch, "uuids", "max_count", original)
