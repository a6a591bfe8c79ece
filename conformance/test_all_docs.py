"""_all_docs as CouchDB 3.4 answers it (couch_mrview_http, couch_mrview_util; issue 11 items 5 and 21): view
booleans in any case, other spellings 400 `query_parse_error`; `keys` together with a key range refused; the
rows of a database bigger than one page of the store, whole and in order."""

import base64
import gzip
import os

import pytest

from test_documents import put


def all_docs(couch, db, **params):
    r = couch.get(f"/{db}/_all_docs", params=params)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("true", ["true", "True", "TRUE", "tRuE"])
def test_booleans_in_any_case(couch, db, true):
    put(couch, db, "a", {"v": 1})
    put(couch, db, "b", {"v": 2})
    body = all_docs(couch, db, include_docs=true, descending=true, update_seq=true, conflicts=true)
    assert [row["id"] for row in body["rows"]] == ["b", "a"]
    assert body["rows"][0]["doc"]["v"] == 2
    assert "update_seq" in body


@pytest.mark.parametrize("false", ["false", "False", "FALSE"])
def test_false_in_any_case(couch, db, false):
    put(couch, db, "a", {})
    body = all_docs(couch, db, include_docs=false, inclusive_end=false, endkey='"a"')
    assert body["rows"] == []
    assert all_docs(couch, db, include_docs=false)["rows"][0].get("doc") is None


@pytest.mark.parametrize("name", ["include_docs", "descending", "conflicts", "attachments", "update_seq",
                                  "inclusive_end", "att_encoding_info"])
@pytest.mark.parametrize("value", ["yes", "1", "on", ""])
def test_other_spellings_are_query_parse_errors(couch, db, name, value):
    r = couch.get(f"/{db}/_all_docs", params={name: value})
    assert r.status_code == 400
    printed = f'"{value}"' if value else "[]"  # Erlang's ~p of the string
    assert r.json() == {"error": "query_parse_error", "reason": f"Invalid boolean parameter: {printed}"}


@pytest.mark.parametrize("keys,param", [
    (["a"], {"key": '"b"'}), (["a"], {"startkey": '"0"'}), (["a"], {"endkey": '"z"'}), (["a"], {"start_key": '"b"'}),
    (["a"], {"end_key": '"z"'}), (["a", "b"], {"key": '"a"'}), (["a", "b"], {"startkey": '"a"'}),
    (["a", "b"], {"endkey": '"b"'}),
])
def test_keys_in_the_body_with_a_key_range_in_the_query(couch, db, keys, param):
    put(couch, db, "a", {})
    r = couch.post(f"/{db}/_all_docs", params=param, json={"keys": keys})
    assert r.status_code == 400
    assert r.json() == {"error": "query_parse_error",
                        "reason": "`keys` is incompatible with `key`, `start_key` and `end_key`"}


def test_keys_in_the_query_with_a_key(couch, db):
    r = couch.get(f"/{db}/_all_docs", params={"keys": '["a","b"]', "key": '"a"'})
    assert r.status_code == 400
    assert r.json()["error"] == "query_parse_error"


@pytest.mark.parametrize("param", [{"key": '"a"'}, {"startkey": '"a"'}, {"end_key": '"a"'},
                                   {"startkey": '"a"', "endkey": '"a"'}])
def test_a_single_key_that_is_the_range_is_allowed(couch, db, param):
    # One key stands for the range [key, key]; a bound that repeats it is no conflict.
    put(couch, db, "a", {})
    r = couch.post(f"/{db}/_all_docs", params=param, json={"keys": ["a"]})
    assert r.status_code == 200
    assert [row["id"] for row in r.json()["rows"]] == ["a"]


def test_keys_must_be_an_array(couch, db):
    r = couch.get(f"/{db}/_all_docs", params={"keys": '"a"'})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "`keys` parameter must be an array."}
    r = couch.post(f"/{db}/_all_docs", json={"keys": "a"})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "`keys` body member must be an array."}


def test_many_rows_stream_whole_and_in_order(couch, db):
    ids = [f"d{i:05d}" for i in range(1300)]
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": [{"_id": i, "n": n} for n, i in enumerate(ids)]})
    assert r.status_code == 201
    body = all_docs(couch, db, include_docs="true")
    assert body["total_rows"] == 1300 and body["offset"] == 0
    assert [row["id"] for row in body["rows"]] == ids
    assert [row["doc"]["n"] for row in body["rows"]] == list(range(1300))
    body = all_docs(couch, db, skip=499, limit=600)
    assert [row["id"] for row in body["rows"]] == ids[499:1099] and body["offset"] == 499
    body = all_docs(couch, db, descending="true", skip=2, limit=1000)
    assert [row["id"] for row in body["rows"]] == ids[::-1][2:1002]
    body = all_docs(couch, db, startkey='"d00100"', endkey='"d01200"', inclusive_end="false")
    assert [row["id"] for row in body["rows"]] == ids[100:1200]


def test_keys_rows_keep_request_order_with_errors_and_deletions(couch, db):
    put(couch, db, "a", {})
    rev = put(couch, db, "gone", {})
    assert couch.delete(f"/{db}/gone", params={"rev": rev}).status_code == 200
    r = couch.post(f"/{db}/_all_docs", params={"include_docs": "true"}, json={"keys": ["gone", "nope", "a"]})
    rows = r.json()["rows"]
    assert rows[0]["id"] == "gone" and rows[0]["value"]["deleted"] is True and rows[0]["doc"] is None
    assert rows[1] == {"key": "nope", "error": "not_found"}
    assert rows[2]["doc"]["_id"] == "a"


@pytest.mark.parametrize("name", ["limit", "skip"])
def test_counts_are_non_negative_integers(couch, db, name):
    r = couch.get(f"/{db}/_all_docs", params={name: "-1"})
    assert r.status_code == 400
    assert r.json() == {"error": "query_parse_error", "reason": 'Invalid value for positive integer: "-1"'}
    r = couch.get(f"/{db}/_all_docs", params={name: "ten"})
    assert r.status_code == 400
    assert r.json() == {"error": "query_parse_error", "reason": 'Invalid value for integer: "ten"'}


def test_feeds_inline_gzip_stored_attachments_decoded(couch, db):
    # Stored gzip-encoded; inline `data` is always the decoded bytes, streamed through the decoder in steps.
    plain = (os.urandom(30000).hex() + "z" * 100000).encode()
    packed = gzip.compress(plain)
    r = couch.raw("PUT", f"/{db}/g/z.txt", body=packed,
                  headers={"Content-Type": "text/plain", "Content-Encoding": "gzip"})
    assert r.status_code == 201, r.text
    params = {"include_docs": "true", "attachments": "true", "att_encoding_info": "true"}
    row = couch.get(f"/{db}/_all_docs", params=params).json()["rows"][0]
    changed = couch.get(f"/{db}/_changes", params=params).json()["results"][0]
    for att in (row["doc"]["_attachments"]["z.txt"], changed["doc"]["_attachments"]["z.txt"]):
        assert base64.b64decode(att["data"]) == plain
        assert att["encoding"] == "gzip" and att["encoded_length"] == len(packed)
        assert list(att)[:4] == ["content_type", "revpos", "digest", "data"]
