"""GET/POST /db/_design_docs: `_all_docs` over the design documents alone (CouchDB's `_design` namespace)."""

import pytest

from conftest import unique_db_name


@pytest.fixture
def designs(couch):
    """A single-shard database with `_design/a`, `_design/b`, a deleted `_design/c` and ordinary documents on
    both sides of the design range in byte order (`A` before `_`, `a` after it)."""
    name = unique_db_name("dd")
    assert couch.put(f"/{name}", params={"q": "1"}).status_code == 201
    for doc_id in ("_design/a", "_design/b", "_design/c", "A", "a", "zz"):
        assert couch.put(f"/{name}/{doc_id}", json={}).status_code == 201
    rev = couch.get(f"/{name}/_design/c").json()["_rev"]
    assert couch.delete(f"/{name}/_design/c", params={"rev": rev}).status_code == 200
    assert couch.put(f"/{name}/_local/x", json={}).status_code == 201
    yield name
    couch.delete(f"/{name}")


def ids(body):
    return [row["id"] for row in body["rows"]]


def test_lists_live_design_documents_only(couch, designs):
    r = couch.get(f"/{designs}/_design_docs")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["total_rows"] == 2 and body["offset"] == 1  # `A` sorts before `_design/`
    assert ids(body) == ["_design/a", "_design/b"]
    assert body["rows"][0]["value"]["rev"].startswith("1-")


def test_key_range_is_narrowed_to_the_design_namespace(couch, designs):
    body = couch.get(f"/{designs}/_design_docs", params={"startkey": '"_design/b"'}).json()
    assert ids(body) == ["_design/b"] and body["offset"] == 2
    body = couch.get(f"/{designs}/_design_docs", params={"startkey": '"a"'}).json()
    assert ids(body) == [] and body["total_rows"] == 2
    body = couch.get(f"/{designs}/_design_docs", params={"endkey": '"zz"'}).json()
    assert ids(body) == ["_design/a", "_design/b"]
    body = couch.get(f"/{designs}/_design_docs", params={"endkey": '"_design/b"', "inclusive_end": "false"}).json()
    assert ids(body) == ["_design/a"]
    body = couch.get(f"/{designs}/_design_docs", params={"descending": "true"}).json()
    assert ids(body) == ["_design/b", "_design/a"]
    body = couch.get(f"/{designs}/_design_docs", params={"descending": "true", "endkey": '"A"'}).json()
    assert ids(body) == ["_design/b", "_design/a"]


def test_limit_skip_include_docs_and_update_seq(couch, designs):
    body = couch.get(f"/{designs}/_design_docs", params={"limit": "1", "skip": "1", "include_docs": "true"}).json()
    assert ids(body) == ["_design/b"]
    assert body["rows"][0]["doc"]["_id"] == "_design/b"
    body = couch.get(f"/{designs}/_design_docs", params={"limit": "0", "update_seq": "true"}).json()
    assert body["rows"] == [] and "update_seq" in body


def test_keys_outside_the_namespace_are_left_out(couch, designs):
    keys = '["a", "_design/a", "_design/c", "_design/nope"]'
    body = couch.get(f"/{designs}/_design_docs", params={"keys": keys}).json()
    assert body["offset"] is None
    assert body["rows"][0]["id"] == "_design/a"
    assert body["rows"][1]["value"]["deleted"] is True
    assert body["rows"][2] == {"key": "_design/nope", "error": "not_found"}
    assert len(body["rows"]) == 3
    r = couch.post(f"/{designs}/_design_docs", json={"keys": ["_design/b", "zz"]})
    assert r.status_code == 200 and ids(r.json()) == ["_design/b"]


def test_bad_parameters_answer_as_all_docs(couch, designs):
    r = couch.get(f"/{designs}/_design_docs", params={"limit": "x"})
    assert r.status_code == 400 and r.json()["error"] == "query_parse_error"
    r = couch.post(f"/{designs}/_design_docs", json={"keys": "nope"})
    assert r.status_code == 400 and r.json()["error"] == "bad_request"


def test_missing_database(couch):
    assert couch.get(f"/{unique_db_name('nodb')}/_design_docs").status_code == 404
