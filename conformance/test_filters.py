"""`_changes?filter=ddoc/name`: JavaScript filter functions on every feed type, the `req` they get, and what a
filter that fails answers. Every assertion holds for Apache CouchDB 3.4.3 as well as couchlite."""

import json
import threading
import time

import requests

from conftest import REQUEST_TIMEOUT_S

FILTERS = {
    "even": "function(doc, req) { return doc.n % 2 == 0; }",
    "by_query": "function(doc, req) { return doc.kind == req.query.kind; }",
    "this_is_ddoc": "function(doc, req) { return this._id == '_design/app' && typeof this.filters == 'object'; }",
    "deleted": "function(doc, req) { return doc._deleted === true; }",
    "req_shape": (
        "function(doc, req) { if (doc._id != 'probe') return false;"
        " if (req.method != 'GET' && req.method != 'POST') throw {error: 'bad', reason: 'method ' + req.method};"
        " if (req.userCtx.db != req.info.db_name.split('/').pop().split('.')[0]) throw {error: 'bad', reason: 'db'};"
        " if (req.path[1] != '_changes') throw {error: 'bad', reason: 'path ' + toJSON(req.path)};"
        " if (req.query.filter != 'app/req_shape') throw {error: 'bad', reason: 'query'};"
        " if (!isArray(req.userCtx.roles)) throw {error: 'bad', reason: 'roles'};"
        " if (typeof req.secObj != 'object') throw {error: 'bad', reason: 'secObj'};"
        " if (req.headers['X-Probe'] != 'yes') throw {error: 'bad', reason: 'headers ' + toJSON(req.headers)};"
        " if (typeof req.uuid != 'string' || req.id !== null) throw {error: 'bad', reason: 'uuid'};"
        " return doc._revisions.start == 1 && doc._rev.indexOf('1-') == 0; }"),
    "uses_lib": "function(doc, req) { return require('lib/parity').even(doc.n); }",
    "throws": "function(doc, req) { if (doc.n == 3) throw {error: 'nope', reason: 'three'}; return true; }",
    "throws_string": "function(doc, req) { throw 'a string'; }",
    "syntax": "function(doc, req) { return (; }",
    "not_a_function": "42",
    "recursion": "function f(doc, req) { return 1 + f(doc, req); }",
    "allocates": "function(doc) { var a = []; for (;;) a.push(new Array(1000000).join('x') + a.length); }",
}


def setup(couch, db, count=6):
    r = couch.put(f"/{db}/_design/app", json={"filters": FILTERS, "lib": {"parity": "exports.even = function(n) { return n % 2 == 0; }"}})
    assert r.status_code == 201, r.text
    docs = [{"_id": f"d{i}", "n": i, "kind": "cat" if i < 2 else "dog"} for i in range(count)]
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": docs})
    assert r.status_code == 201 and all("ok" in item for item in r.json()), r.text


def ids(body):
    return sorted(row["id"] for row in body["results"])


def test_filter_on_the_normal_feed(couch, db):
    setup(couch, db)
    r = couch.get(f"/{db}/_changes", params={"filter": "app/even"})
    assert r.status_code == 200, r.text
    assert ids(r.json()) == ["d0", "d2", "d4"]
    assert r.json()["last_seq"]


def test_filter_gets_query_parameters_in_req_query(couch, db):
    setup(couch, db)
    body = couch.get(f"/{db}/_changes", params={"filter": "app/by_query", "kind": "cat"}).json()
    assert ids(body) == ["d0", "d1"]
    body = couch.get(f"/{db}/_changes", params={"filter": "app/by_query", "kind": "bird"}).json()
    assert body["results"] == []


def test_filter_is_called_with_the_design_document_as_this(couch, db):
    setup(couch, db, count=2)
    body = couch.get(f"/{db}/_changes", params={"filter": "app/this_is_ddoc"}).json()
    assert ids(body) == ["_design/app", "d0", "d1"]


def test_filter_requires_commonjs_modules_of_the_design_document(couch, db):
    setup(couch, db)
    body = couch.get(f"/{db}/_changes", params={"filter": "app/uses_lib"}).json()
    assert ids(body) == ["d0", "d2", "d4"]


def test_filter_sees_deleted_documents(couch, db):
    setup(couch, db, count=3)
    rev = couch.get(f"/{db}/d1").json()["_rev"]
    assert couch.delete(f"/{db}/d1", params={"rev": rev}).status_code == 200
    body = couch.get(f"/{db}/_changes", params={"filter": "app/deleted"}).json()
    assert [(row["id"], row.get("deleted")) for row in body["results"]] == [("d1", True)]


def test_filter_req_has_couchdbs_shape(couch, db):
    setup(couch, db, count=1)
    assert couch.put(f"/{db}/probe", json={"n": 1}).status_code == 201
    r = couch.get(f"/{db}/_changes", params={"filter": "app/req_shape"}, headers={"X-Probe": "yes"})
    assert r.status_code == 200, r.text
    assert ids(r.json()) == ["probe"]
    r = couch.post(f"/{db}/_changes", params={"filter": "app/req_shape"}, headers={"X-Probe": "yes"}, json={})
    assert r.status_code == 200, r.text
    assert ids(r.json()) == ["probe"]


def test_filter_with_limit_and_include_docs(couch, db):
    setup(couch, db)
    body = couch.get(f"/{db}/_changes", params={"filter": "app/even", "limit": 2, "include_docs": "true"}).json()
    assert len(body["results"]) == 2
    assert all(row["doc"]["n"] % 2 == 0 for row in body["results"])


def test_filter_on_the_longpoll_feed_waits_for_a_passing_change(couch, db):
    setup(couch, db)
    since = couch.get(f"/{db}").json()["update_seq"]
    result = {}

    def poll():
        result["r"] = couch.get(f"/{db}/_changes", params={
            "feed": "longpoll", "since": since, "filter": "app/even", "timeout": 10000}, timeout=20)

    thread = threading.Thread(target=poll)
    thread.start()
    time.sleep(0.5)
    assert couch.put(f"/{db}/odd", json={"n": 7}).status_code == 201  # filtered out: the poll keeps waiting
    time.sleep(0.5)
    assert thread.is_alive()
    assert couch.put(f"/{db}/even", json={"n": 8}).status_code == 201
    thread.join(15)
    assert not thread.is_alive()
    r = result["r"]
    assert r.status_code == 200, r.text
    assert ids(r.json()) == ["even"]


def test_filter_on_the_continuous_feed(couch, db):
    setup(couch, db)
    r = couch.get(f"/{db}/_changes", params={"feed": "continuous", "filter": "app/even", "timeout": 500})
    assert r.status_code == 200, r.text
    lines = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    assert sorted(line["id"] for line in lines if "id" in line) == ["d0", "d2", "d4"]
    assert "last_seq" in lines[-1]


def test_filter_on_the_continuous_feed_follows_new_changes(couch, db):
    setup(couch, db, count=1)
    since = couch.get(f"/{db}").json()["update_seq"]
    seen = []
    with couch.session.get(couch.url(f"/{db}/_changes"), params={
            "feed": "continuous", "since": since, "filter": "app/even", "heartbeat": 200, "timeout": 10000},
            stream=True, timeout=20) as r:
        assert r.status_code == 200
        couch.put(f"/{db}/a", json={"n": 1})
        couch.put(f"/{db}/b", json={"n": 2})
        for line in r.iter_lines():
            if line.strip():
                seen.append(json.loads(line)["id"])
                break
    assert seen == ["b"]


def test_filter_on_the_eventsource_feed(couch, db):
    setup(couch, db)
    # Connection: close, as CouchDB 3.4.3 can send a stray chunk after its eventsource feed ends ("1\r\n" read as the
    # status line of the next request's answer on the same connection).
    r = couch.get(f"/{db}/_changes", params={"feed": "eventsource", "filter": "app/even", "timeout": 500},
                  headers={"Connection": "close"})
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("text/event-stream")
    rows = [json.loads(line[len("data: "):]) for line in r.text.splitlines() if line.startswith("data: {")]
    assert sorted(row["id"] for row in rows) == ["d0", "d2", "d4"]


def test_filter_that_throws_is_a_500(couch, db):
    setup(couch, db)
    # CouchDB 3.4.3 answers a filter that throws after some rows passed with two responses to the one request (its
    # 500, then a second 500 "badmatch" on its delayed response), so the connection must not carry another request:
    # the stray answer would be read as that request's (the next test's PUT /db read a DELETE's 200).
    r = couch.get(f"/{db}/_changes", params={"filter": "app/throws"}, headers={"Connection": "close"})
    assert r.status_code == 500, r.text
    assert r.json()["error"] and "reason" in r.json()
    r = couch.get(f"/{db}/_changes", params={"filter": "app/throws_string"})
    assert r.status_code == 500, r.text


def test_filter_that_does_not_compile_is_a_500(couch, db):
    setup(couch, db, count=1)
    for name in ("syntax", "not_a_function"):
        r = couch.get(f"/{db}/_changes", params={"filter": f"app/{name}"})
        assert r.status_code == 500, r.text
        assert "reason" in r.json()


def test_filter_recursing_forever_is_an_error_and_the_server_goes_on(couch, db):
    setup(couch, db, count=1)
    r = couch.get(f"/{db}/_changes", params={"filter": "app/recursion"})
    assert r.status_code == 500, r.text
    assert couch.get(f"/{db}/_changes", params={"filter": "app/even"}).status_code == 200


def test_filter_allocating_forever_is_an_error_and_the_server_goes_on(couch, db):
    setup(couch, db, count=1)
    r = couch.get(f"/{db}/_changes", params={"filter": "app/allocates"}, timeout=60)
    assert r.status_code == 500, r.text
    body = couch.get(f"/{db}/_changes", params={"filter": "app/even"}).json()
    assert ids(body) == ["d0"]


def test_filter_looping_forever_is_stopped_while_other_requests_are_served(couch, db):
    r = couch.put(f"/{db}/_design/loop", json={"filters": {"loop": "function(doc) { while (true) {} }"}})
    assert r.status_code == 201
    assert couch.put(f"/{db}/doc", json={"n": 2}).status_code == 201
    result = {}

    def looping():
        result["r"] = requests.get(couch.url(f"/{db}/_changes"), params={"filter": "loop/loop"},
                                   auth=couch.session.auth, timeout=REQUEST_TIMEOUT_S * 2)

    thread = threading.Thread(target=looping)
    started = time.monotonic()
    thread.start()
    time.sleep(0.3)
    # While the loop runs: ordinary requests are answered at once, filters of other design documents too.
    for _ in range(3):
        t0 = time.monotonic()
        assert couch.get(f"/{db}/doc").status_code == 200
        assert couch.get("/").status_code == 200
        assert time.monotonic() - t0 < 2
    thread.join(REQUEST_TIMEOUT_S * 2)
    assert not thread.is_alive()
    assert result["r"].status_code == 500, result["r"].text
    assert time.monotonic() - started < 30
    assert couch.put(f"/{db}/_design/ok", json={"filters": {"all": "function() { return true; }"}}).status_code == 201
    body = couch.get(f"/{db}/_changes", params={"filter": "ok/all"}).json()
    assert "doc" in ids(body)


def test_filter_with_style_all_docs_sees_each_leaf(couch, db):
    r = couch.put(f"/{db}/_design/app", json={"filters": {"blue": "function(doc) { return doc.color == 'blue'; }"}})
    assert r.status_code == 201
    r = couch.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [
        {"_id": "c", "_rev": "1-aaaa", "color": "blue"},
        {"_id": "c", "_rev": "1-bbbb", "color": "red"},
    ]})
    assert r.status_code == 201
    body = couch.get(f"/{db}/_changes", params={"filter": "app/blue", "style": "all_docs"}).json()
    assert [(row["id"], [c["rev"] for c in row["changes"]]) for row in body["results"]] == [("c", ["1-aaaa"])]
    # main_only: the winner (1-bbbb, the higher rev id) is red, so the document does not pass.
    body = couch.get(f"/{db}/_changes", params={"filter": "app/blue"}).json()
    assert body["results"] == []


SCRUBBED_FILTER = (
    "function(doc, req) { if (doc._id != 'probe') return false;"
    " for (var name in req.headers) { var lower = name.toLowerCase();"
    "   if (lower == 'authorization' || lower == 'cookie' || lower == 'x-auth-couchdb-token') return false; }"
    " for (var cookie in req.cookie) return false;"
    " return req.headers['X-Probe'] == 'yes'; }")


def test_a_filter_never_sees_the_readers_credentials_or_session_cookie(couch, db):
    """A design function is its database admin's code: the `req` it gets carries no `Authorization`, no `Cookie`
    and no parsed cookie (CouchDB's `scrub_json_request`), so a filter cannot steal the session of whoever reads a
    filtered feed. Asked with a cookie session and with Basic credentials."""
    r = couch.put(f"/{db}/_design/spy", json={"filters": {"scrubbed": SCRUBBED_FILTER}})
    assert r.status_code == 201, r.text
    assert couch.put(f"/{db}/probe", json={"n": 1}).status_code == 201
    login = requests.post(couch.url("/_session"), data={"name": couch.user, "password": couch.password},
                          timeout=REQUEST_TIMEOUT_S)
    assert login.status_code == 200 and "AuthSession" in login.cookies, login.text
    by_cookie = requests.get(couch.url(f"/{db}/_changes"), params={"filter": "spy/scrubbed"},
                             cookies={"AuthSession": login.cookies["AuthSession"], "other": "x"},
                             headers={"X-Probe": "yes", "Accept": "application/json"}, timeout=REQUEST_TIMEOUT_S)
    assert by_cookie.status_code == 200, by_cookie.text
    assert ids(by_cookie.json()) == ["probe"], by_cookie.text
    by_basic = couch.get(f"/{db}/_changes", params={"filter": "spy/scrubbed"}, headers={"X-Probe": "yes"})
    assert by_basic.status_code == 200, by_basic.text
    assert ids(by_basic.json()) == ["probe"], by_basic.text
