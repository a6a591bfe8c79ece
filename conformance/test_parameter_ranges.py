"""Request parameters that feed arithmetic (limit, skip, timeout, heartbeat, since, group_level, revs_limit, rev
numbers, `_revisions` starts, `_uuids` count, Range offsets, `_find` and `_replicate` numbers) given 0, -1,
2^31, 2^63-1, 2^63, past 2^64, 1e400, a fraction and text: every answer is CouchDB's 2xx or 4xx, never a
5xx or a dropped connection, the server stays up, and a plain request works afterwards."""

from __future__ import annotations

import json

import pytest
import requests

from conftest import is_couchlite

VALUES = ("0", "-1", str(2 ** 31), str(2 ** 63 - 1), str(2 ** 63), "99999999999999999999", "1e400", "1.5", "abc")


def number(value: str):
    """The value as a JSON body member: a number where it reads as one (1e400 stays the text it is)."""
    try:
        return json.loads(value) if value != "1e400" else value
    except ValueError:
        return value


@pytest.fixture(scope="module")
def ranges_db(couch):
    name = "ranges-params"
    couch.delete(f"/{name}")
    assert couch.put(f"/{name}").status_code == 201
    assert couch.put(f"/{name}/doc", json={"a": 1}).status_code == 201
    assert couch.put(f"/{name}/_design/d", json={
        "views": {"v": {"map": "function(d){emit(d._id, 1)}", "reduce": "_count"}}}).status_code == 201
    assert couch.put(f"/{name}/adoc/att.txt", data=b"x" * 1000,
                     headers={"Content-Type": "text/plain"}).status_code == 201
    yield name
    couch.delete(f"/{name}")


_vendor: dict[str, bool] = {}


def ours(couch) -> bool:
    """Asked once per server: after CouchDB drops a connection, the next request on its pool may fail too."""
    if couch.base not in _vendor:
        _vendor[couch.base] = is_couchlite(couch)
    return _vendor[couch.base]


def answered(couch, method, path, **kw):
    """couchlite answers 2xx or 4xx. CouchDB answers some of these with a 500 its handler caught (a `$mod` by 0:
    `unknown_error`, `badarith`) and drops the connection on others (a continuous feed with `timeout=-1`),
    and goes on serving: there only that is checked (`assert_up` after each test)."""
    kw.setdefault("timeout", 30)
    if not ours(couch):
        try:
            return couch.request(method, path, **kw)
        except requests.ConnectionError:
            return None
    r = couch.request(method, path, **kw)
    assert r.status_code < 500, (method, path, kw, r.status_code, r.text[:300])
    return r


def streamed(couch, path, params):
    """The first bytes of a continuous feed, with `answered`'s rule."""
    try:
        with requests.get(couch.url(path), params=params, auth=couch.session.auth, stream=True, timeout=30) as r:
            assert r.status_code < 500 or not ours(couch), (params, r.status_code)
    except requests.ConnectionError:
        assert not ours(couch), params


def assert_up(couch, db):
    if not ours(couch):
        couch.session.close()  # a connection CouchDB dropped may still sit in the pool
    assert couch.get("/_up").status_code == 200
    assert couch.get(f"/{db}/doc").status_code == 200


@pytest.mark.parametrize("value", VALUES)
def test_limit_and_skip_anywhere(couch, ranges_db, value):
    for path in (f"/{ranges_db}/_all_docs", "/_all_dbs", f"/{ranges_db}/_design/d/_view/v", f"/{ranges_db}/_changes",
                 f"/{ranges_db}/_design_docs", f"/{ranges_db}/_local_docs", "/_scheduler/jobs", "/_scheduler/docs"):
        for name in ("limit", "skip"):
            answered(couch, "GET", path, params={name: value})
    answered(couch, "GET", f"/{ranges_db}/_design/d/_view/v", params={"group": "true", "group_level": value})
    for body in ({"limit": number(value)}, {"skip": number(value)}, {"keys": ["doc"], "limit": number(value)}):
        answered(couch, "POST", f"/{ranges_db}/_all_docs", json=body)
        answered(couch, "POST", f"/{ranges_db}/_design/d/_view/v", json={**body, "reduce": False})
    for body in ({"selector": {}, "limit": number(value)}, {"selector": {}, "skip": number(value)},
                 {"selector": {"a": {"$mod": [number(value), 1]}}}, {"selector": {"a": {"$size": number(value)}}}):
        answered(couch, "POST", f"/{ranges_db}/_find", json=body)
    assert_up(couch, ranges_db)


@pytest.mark.parametrize("value", VALUES)
def test_changes_feed_numbers(couch, ranges_db, value):
    """since=0 has changes to send, so a longpoll with any timeout answers at once; a continuous feed is cut
    after its first bytes."""
    path = f"/{ranges_db}/_changes"
    answered(couch, "GET", path, params={"since": value})
    answered(couch, "GET", path, params={"since": value + "-abc"})
    for name in ("timeout", "heartbeat"):
        answered(couch, "GET", path, params={"feed": "longpoll", "since": "0", name: value})
        streamed(couch, path, {"feed": "continuous", "since": "0", name: value, "limit": "1"})
    answered(couch, "GET", "/_db_updates", params={"feed": "longpoll", "timeout": "1", "heartbeat": value})
    answered(couch, "GET", "/_db_updates", params={"limit": value, "timeout": "1"})
    assert_up(couch, ranges_db)


@pytest.mark.parametrize("value", VALUES)
def test_revision_numbers_and_limits(couch, ranges_db, value):
    db = ranges_db
    answered(couch, "PUT", f"/{db}/_revs_limit", data=value.encode())
    assert couch.put(f"/{db}/_revs_limit", data=b"1000").status_code == 200
    answered(couch, "GET", "/_uuids", params={"count": value})
    answered(couch, "GET", f"/{db}/doc", params={"rev": value + "-abc"})
    answered(couch, "GET", f"/{db}/doc", params={"open_revs": json.dumps([value + "-abc"])})
    answered(couch, "GET", f"/{db}/doc", params={"atts_since": json.dumps([value + "-abc"]), "attachments": "true"})
    answered(couch, "PUT", f"/{db}/doc", json={"_rev": value + "-abc"})
    answered(couch, "POST", f"/{db}/_revs_diff", json={"doc": [value + "-abc"]})
    answered(couch, "POST", f"/{db}/_bulk_get", json={"docs": [{"id": "doc", "rev": value + "-abc"}]})
    answered(couch, "POST", f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [
        {"_id": f"ne-{value}", "_rev": f"{value}-abc"}]})
    start = number(value)
    answered(couch, "POST", f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [
        {"_id": f"nerev-{value}", "_rev": "1-a", "_revisions": {"start": start, "ids": ["a", "b"]}}]})
    answered(couch, "PUT", f"/{db}/stub-{value}", json={"_attachments": {"a": {"stub": True, "revpos": start}}})
    answered(couch, "PUT", f"/{db}/follows-{value}", json={
        "_attachments": {"a": {"follows": True, "length": start, "content_type": "text/plain"}}})
    answered(couch, "POST", f"/{db}/_purge", json={"nothere": [value + "-abc"]})
    # A document updated from a very high revision number: the next one is one more, never an overflow.
    r = answered(couch, "POST", f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [
        {"_id": f"high-{value}", "_rev": f"{value}-abc"}]})
    if r is not None and r.status_code == 201 and couch.get(f"/{db}/high-{value}").status_code == 200:
        answered(couch, "PUT", f"/{db}/high-{value}", json={"_rev": f"{value}-abc", "b": 2})
    assert_up(couch, db)


@pytest.mark.parametrize("value", VALUES)
def test_range_offsets(couch, ranges_db, value):
    for header in (f"bytes={value}-", f"bytes=-{value}", f"bytes=0-{value}", f"bytes={value}-{value}",
                   f"bytes=1-2,{value}-"):
        r = answered(couch, "GET", f"/{ranges_db}/adoc/att.txt", headers={"Range": header})
        if r is None:
            continue
        assert r.status_code in (200, 206, 416), (header, r.status_code)
        if r.status_code == 206 and not r.headers.get("Content-Type", "").startswith("multipart/byteranges"):
            assert 0 < len(r.content) <= 1000, header
    assert_up(couch, ranges_db)


@pytest.mark.parametrize("value", VALUES)
def test_replication_numbers(couch, ranges_db, value):
    """`_replicate` with every numeric option at the value: it runs (with defaults or clamped) or is refused."""
    parts = requests.utils.urlparse(couch.base)
    source = f"{parts.scheme}://{couch.user}:{couch.password}@{parts.netloc}/{ranges_db}"
    n = number(value)
    job = {
        "source": source, "target": source, "worker_batch_size": n, "checkpoint_interval": n,
        "connection_timeout": n, "retries_per_request": n, "http_connections": n, "worker_processes": n}
    if not ours(couch):
        # CouchDB takes some of these (a connection_timeout of 0, ...) and keeps the request open while its job
        # retries: after a while that job is cancelled; only the server staying up is checked there.
        try:
            couch.post("/_replicate", json=job, timeout=15)
        except requests.ReadTimeout:
            couch.session.close()
            couch.post("/_replicate", json={**job, "cancel": True}, timeout=30)
        assert_up(couch, ranges_db)
        return
    r = couch.post("/_replicate", json=job, timeout=120)
    # A replication that failed at run time is CouchDB's 500 `replication_failed`; anything else is a 4xx.
    assert r.status_code < 500 or r.json().get("error") == "replication_failed", (value, r.status_code, r.text)
    assert_up(couch, ranges_db)
