"""Database create / info / delete and name rules."""

import pytest

from conftest import unique_db_name

NAME_RULES = ("Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, -, "
              "and / are allowed. Must begin with a letter.")


def test_create_and_delete(couch):
    name = unique_db_name("db")
    r = couch.put(f"/{name}")
    assert r.status_code == 201
    assert r.json() == {"ok": True}
    assert r.headers["Content-Type"].startswith("application/json")
    r = couch.delete(f"/{name}")
    assert r.status_code == 200
    assert r.json() == {"ok": True}
    assert couch.get(f"/{name}").status_code == 404


def test_create_twice_is_412(couch, db):
    r = couch.put(f"/{db}")
    assert r.status_code == 412
    assert r.json() == {"error": "file_exists",
                        "reason": "The database could not be created, the file already exists."}


def test_shard_parameters_on_create(couch):
    # q (shards) and n (replicas) are accepted when positive integers (couchlite ignores them);
    # anything else is refused before the database exists (chttpd_db:parse_shards_opt).
    name = unique_db_name("qn")
    r = couch.put(f"/{name}", params={"q": "1", "n": "1"})
    assert r.status_code == 201, r.text
    couch.delete(f"/{name}")
    for param, value in (("q", "abc"), ("q", "0"), ("q", ""), ("n", "-1"), ("n", "1.5")):
        name = unique_db_name("qn")
        r = couch.put(f"/{name}", params={param: value})
        assert r.status_code == 400, (param, value, r.text)
        assert r.json() == {"error": "bad_request", "reason": f"The `{param}` value should be a positive integer."}
        assert couch.get(f"/{name}").status_code == 404


@pytest.mark.parametrize("name", ["Upper", "1abc", "a b", "abc%21"])
def test_illegal_names(couch, name):
    r = couch.raw("PUT", f"/{name.replace(' ', '%20')}")
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["error"] == "illegal_database_name"
    decoded = name.replace("%21", "!")
    assert body["reason"] == f"Name: '{decoded}'. {NAME_RULES}"


def test_delete_missing(couch):
    r = couch.delete(f"/{unique_db_name('gone')}")
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "reason": "Database does not exist."}


def test_get_missing(couch):
    r = couch.get(f"/{unique_db_name('gone')}")
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "reason": "Database does not exist."}


def test_info_fields(couch, db):
    couch.put(f"/{db}/a", json={"x": 1})
    r = couch.get(f"/{db}")
    assert r.status_code == 200
    info = r.json()
    for key in ("db_name", "update_seq", "purge_seq", "sizes", "props", "doc_del_count", "doc_count",
                "disk_format_version", "compact_running", "cluster", "instance_start_time"):
        assert key in info, f"missing {key}"
    assert info["db_name"] == db
    assert info["doc_count"] == 1 and info["doc_del_count"] == 0
    assert info["compact_running"] is False
    assert set(info["sizes"]) >= {"file", "external", "active"}
    assert isinstance(info["instance_start_time"], str)


def test_info_trailing_slash(couch, db):
    assert couch.get(f"/{db}/").json()["db_name"] == db


def test_head(couch, db):
    r = couch.head(f"/{db}")
    assert r.status_code == 200
    assert r.content == b""
    assert couch.head(f"/{unique_db_name('gone')}").status_code == 404


def test_doc_counts_follow_deletes(couch, db):
    rev = couch.put(f"/{db}/a", json={}).json()["rev"]
    couch.put(f"/{db}/b", json={})
    couch.delete(f"/{db}/a", params={"rev": rev})
    info = couch.get(f"/{db}").json()
    assert (info["doc_count"], info["doc_del_count"]) == (1, 1)


def test_slash_in_name(couch):
    name = unique_db_name("slash") + "/sub"
    quoted = name.replace("/", "%2F")
    r = couch.raw("PUT", f"/{quoted}")
    assert r.status_code == 201, r.text
    try:
        r = couch.raw("GET", f"/{quoted}")
        assert r.status_code == 200
        assert r.json()["db_name"] == name
        r = couch.raw("PUT", f"/{quoted}/doc", body=b'{"a":1}', headers={"Content-Type": "application/json"})
        assert r.status_code == 201
        assert couch.raw("GET", f"/{quoted}/doc").json()["a"] == 1
        assert name in couch.get("/_all_dbs").json()
    finally:
        couch.raw("DELETE", f"/{quoted}")


@pytest.mark.parametrize("shape", ["all-slashes", "slash-between-letters"])
def test_longest_name_full_of_slashes_can_be_created(couch, shape):
    """Each `/` of a name became `%2F` in its file name: a legal 238-byte name full of slashes made a file name
    past 255 bytes and could not be created (CouchDB creates it)."""
    prefix = unique_db_name("s")
    filler = "/" * 238 if shape == "all-slashes" else "/a" * 119
    name = (prefix + filler)[:238]
    assert len(name) == 238
    quoted = name.replace("/", "%2F")
    r = couch.raw("PUT", f"/{quoted}")
    assert r.status_code == 201, r.text
    try:
        r = couch.raw("GET", f"/{quoted}")
        assert r.status_code == 200 and r.json()["db_name"] == name
        r = couch.raw("PUT", f"/{quoted}/doc", body=b'{"a":1}', headers={"Content-Type": "application/json"})
        assert r.status_code == 201, r.text
        assert couch.raw("GET", f"/{quoted}/doc").json()["a"] == 1
        r = couch.raw("PUT", f"/{quoted}/doc2/att", body=b"bytes", headers={"Content-Type": "text/plain"})
        assert r.status_code == 201, r.text
        r = couch.raw("PUT", f"/{quoted}/_security", body=b'{"members":{"names":["x"]}}',
                      headers={"Content-Type": "application/json"})
        assert r.status_code == 200, r.text
        assert name in couch.get("/_all_dbs").json()
        assert couch.raw("PUT", f"/{quoted}").status_code == 412
    finally:
        assert couch.raw("DELETE", f"/{quoted}").status_code == 200
    assert couch.raw("GET", f"/{quoted}").status_code == 404


def test_cluster_shape_after_create_with_q_and_n(couch):
    # couchlite has no shards and one copy; the db info keeps CouchDB's `cluster` shape and says what it has.
    name = unique_db_name("qn")
    assert couch.put(f"/{name}", params={"q": "1", "n": "1"}).status_code == 201
    try:
        cluster = couch.get(f"/{name}").json()["cluster"]
        assert set(cluster) == {"q", "n", "w", "r"}
        assert cluster["q"] == 1 and cluster["n"] == 1
        assert all(isinstance(v, int) and v >= 1 for v in cluster.values())
    finally:
        couch.delete(f"/{name}")
