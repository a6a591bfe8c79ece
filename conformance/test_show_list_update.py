"""`_show`, `_list` and `_update` design functions, as CouchDB 3.4.3 runs them (couch_mrview_show, render.js):
the request object, the response forms, `provides()` content negotiation, streaming lists over a view's rows,
updates stored through the normal write path, and CouchDB's errors. Output is sandboxed user content
(`Content-Security-Policy: sandbox`). couchlite-only defences (CouchDB itself passes a CR/LF header through, and
has no bound on a list's time) skip elsewhere."""

import time
import uuid

import pytest
import requests

from conftest import is_couchlite

DDOC = {
    "shows": {
        "hello": "function(doc, req) { return 'Hello ' + (doc ? doc._id : 'none'); }",
        "title": "function(doc, req) { return doc.title; }",
        "obj": "function(doc, req) { return {body: 'x', code: 418, headers: {'X-Foo': 'bar', 'Content-Type': 'text/plain'}}; }",
        "b64": "function(doc, req) { return {base64: 'aGVsbG8='}; }",
        "json": "function(doc, req) { return {json: {ok: 1}}; }",
        "req": "function(doc, req) { return {json: req}; }",
        "throws": "function(doc, req) { throw new Error('boom'); }",
        "throwsobj": "function(doc, req) { throw {error: 'teapot', reason: 'short and stout'}; }",
        "throwsarr": "function(doc, req) { throw ['error', 'my_err', 'my reason']; }",
        "num": "function(doc, req) { return 42; }",
        "prov": "function(doc, req) { provides('html', function() { return '<b>h</b>'; }); "
                "provides('json', function() { return toJSON({a: 1}); }); }",
        "sent": "function(doc, req) { send('a'); send('b'); return 'c'; }",
    },
    "lists": {
        "basic": "function(head, req) { start({headers: {'Content-Type': 'text/plain'}}); var row; "
                 "send('head:' + JSON.stringify(head) + '\\n'); "
                 "while (row = getRow()) { send(row.key + '=' + row.value + '\\n'); } return 'tail'; }",
        "first": "function(head, req) { var row = getRow(); return 'first:' + row.id; }",
        "throws": "function(head, req) { throw new Error('listboom'); }",
        "prov": "function(head, req) { provides('json', function() { var r, out = []; "
                "while (r = getRow()) { out.push(r.id); } return JSON.stringify(out); }); }",
        "coded": "function(head, req) { start({code: 203, headers: {'X-List': 'yes'}}); getRow(); send('s'); }",
    },
    "updates": {
        "create": "function(doc, req) { if (!doc) { return [{_id: req.id || req.uuid, body: req.body}, 'created']; } "
                  "doc.n = (doc.n || 0) + 1; return [doc, {json: {n: doc.n}}]; }",
        "noop": "function(doc, req) { return [null, {body: 'nothing', code: 202}]; }",
        "noid": "function(doc, req) { return [{a: 1}, 'x']; }",
        "throws": "function(doc, req) { throw new Error('upboom'); }",
        "ddoc": "function(doc, req) { return [{_id: '_design/evil', views: {}}, 'planted']; }",
        "refused": "function(doc, req) { return [{_id: 'refused-' + req.uuid, bad: true}, 'x']; }",
    },
    "views": {"v": {"map": "function(doc) { if (doc.k) emit(doc.k, doc.v); }"}},
    "validate_doc_update": "function(doc) { if (doc.bad) throw {forbidden: 'bad docs are refused'}; }",
}


@pytest.fixture
def app(couch, db):
    assert couch.put(f"/{db}/_design/d", json=DDOC).status_code == 201
    for i in (1, 2, 3):
        assert couch.put(f"/{db}/doc{i}", json={"k": i, "v": f"v{i}", "title": f"T{i}"}).status_code == 201
    return db


def assert_sandboxed(r):
    assert r.headers.get("Content-Security-Policy") == "sandbox", r.headers


# ---------------------------------------------------------------------------------------------------------------
# _show


def test_show_renders_a_string_with_or_without_a_document(couch, app):
    r = couch.get(f"/{app}/_design/d/_show/hello")
    assert (r.status_code, r.text) == (200, "Hello none")
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert_sandboxed(r)
    assert couch.get(f"/{app}/_design/d/_show/hello/doc1").text == "Hello doc1"
    # A missing document is null for the function.
    assert couch.get(f"/{app}/_design/d/_show/hello/nothing-here").text == "Hello none"


def test_show_that_fails_on_a_missing_document_is_404(couch, app):
    assert couch.get(f"/{app}/_design/d/_show/title/doc2").text == "T2"
    r = couch.get(f"/{app}/_design/d/_show/title/missing")
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "reason": "document not found"}


def test_show_response_object_sets_code_headers_and_body_forms(couch, app):
    r = couch.get(f"/{app}/_design/d/_show/obj")
    assert (r.status_code, r.text, r.headers["X-Foo"]) == (418, "x", "bar")
    assert r.headers["Content-Type"] == "text/plain"
    assert_sandboxed(r)
    r = couch.get(f"/{app}/_design/d/_show/b64")
    assert (r.status_code, r.content, r.headers["Content-Type"]) == (200, b"hello", "application/binary")
    r = couch.get(f"/{app}/_design/d/_show/json")
    assert (r.status_code, r.json(), r.headers["Content-Type"]) == (200, {"ok": 1}, "application/json")
    r = couch.get(f"/{app}/_design/d/_show/sent")
    assert r.text == "abc"


def test_show_missing_function_is_404_missing_json_key(couch, app):
    r = couch.get(f"/{app}/_design/d/_show/nosuch")
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "reason": "missing json key: nosuch"}
    r = couch.get(f"/{app}/_design/nodesign/_show/x")
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    r = couch.get(f"/{app}/_design/d/_show")
    assert r.status_code == 404
    assert r.json() == {"error": "show_error", "reason": "Invalid path."}


def test_show_errors_are_couchdbs(couch, app):
    r = couch.get(f"/{app}/_design/d/_show/throws")
    assert r.status_code == 500
    body = r.json()
    assert body["error"] == "render_error"
    assert body["reason"].startswith("function raised error: Error: boom \nstacktrace: "), body
    r = couch.get(f"/{app}/_design/d/_show/throwsobj")
    assert (r.status_code, r.json()) == (500, {"error": "teapot", "reason": "short and stout"})
    r = couch.get(f"/{app}/_design/d/_show/throwsarr")
    assert (r.status_code, r.json()) == (500, {"error": "my_err", "reason": "my reason"})
    r = couch.get(f"/{app}/_design/d/_show/num")
    assert (r.status_code, r.json()) == (500, {"error": "render_error",
                                               "reason": "undefined response from show function"})


def test_show_provides_negotiates_on_accept_and_format(couch, app):
    path = f"/{app}/_design/d/_show/prov"
    r = couch.get(path, headers={"Accept": "text/html"})
    assert (r.status_code, r.text, r.headers["Content-Type"]) == (200, "<b>h</b>", "text/html; charset=utf-8")
    r = couch.get(path, headers={"Accept": "application/json"})
    assert (r.status_code, r.text, r.headers["Content-Type"]) == (200, '{"a":1}', "application/json")
    r = couch.get(path, params={"format": "json"}, headers={"Accept": "text/html"})
    assert r.text == '{"a":1}'
    r = couch.get(path, headers={"Accept": "text/csv"})
    assert r.status_code == 406
    assert r.json() == {"error": "not_acceptable", "reason": "Content-Type text/csv not supported, try one of: "
                                                             "application/json, text/x-json, text/html; charset=utf-8"}


def test_show_request_object_is_couchdbs(couch, app):
    r = couch.post(f"/{app}/_design/d/_show/req/doc1", params={"a": "1", "startkey": "[1]"},
                   data="f=1&g=two+words", headers={"Content-Type": "application/x-www-form-urlencoded",
                                                     "Cookie": "c=1", "X-Custom": "yes"})
    assert r.status_code == 200, r.text
    req = r.json()
    assert set(req) == {"info", "uuid", "id", "method", "requested_path", "path", "raw_path", "query", "headers",
                        "body", "peer", "form", "cookie", "userCtx", "secObj"}
    assert req["info"]["db_name"] == app
    assert len(req["uuid"]) == 32
    assert (req["id"], req["method"]) == ("doc1", "POST")
    assert req["path"] == [app, "_design", "d", "_show", "req", "doc1"]
    assert req["raw_path"].startswith(f"/{app}/_design/d/_show/req/doc1?")
    assert req["query"] == {"a": "1", "startkey": [1]}
    assert req["body"] == "f=1&g=two+words"
    assert req["form"] == {"f": "1", "g": "two words"}
    assert req["cookie"] == {}
    assert req["headers"]["X-Custom"] == "yes"
    assert not {"Authorization", "Cookie"} & set(req["headers"]), req["headers"]
    assert req["userCtx"] == {"db": app, "name": couch.user, "roles": ["_admin"]}
    assert isinstance(req["secObj"], dict)
    r = couch.get(f"/{app}/_design/d/_show/req")
    assert (r.json()["id"], r.json()["body"]) == (None, "undefined")


# ---------------------------------------------------------------------------------------------------------------
# _list


def test_list_streams_a_views_rows_with_head_and_tail(couch, app):
    r = couch.get(f"/{app}/_design/d/_list/basic/v")
    assert r.status_code == 200
    assert r.text == 'head:{"total_rows":3,"offset":0}\n1=v1\n2=v2\n3=v3\ntail'
    assert r.headers["Content-Type"] == "text/plain"
    assert_sandboxed(r)
    r = couch.get(f"/{app}/_design/d/_list/basic/v", params={"descending": "true", "limit": "2"})
    assert r.text == 'head:{"total_rows":3,"offset":0}\n3=v3\n2=v2\ntail'
    r = couch.post(f"/{app}/_design/d/_list/basic/v", json={"keys": [2]})
    assert r.text == 'head:{"total_rows":3,"offset":1}\n2=v2\ntail'


def test_list_over_another_design_documents_view(couch, app):
    assert couch.put(f"/{app}/_design/other", json={"views": {"w": {"map": "function(doc) { "
                                                                "if (doc.k) emit(-doc.k, doc.v); }"}}}).status_code == 201
    r = couch.get(f"/{app}/_design/d/_list/basic/other/w")
    assert r.text == 'head:{"total_rows":3,"offset":0}\n-3=v3\n-2=v2\n-1=v1\ntail'


def test_list_that_returns_early_ends_the_response(couch, app):
    r = couch.get(f"/{app}/_design/d/_list/first/v")
    assert (r.status_code, r.text) == (200, "first:doc1")


def test_list_start_sets_code_and_headers(couch, app):
    r = couch.get(f"/{app}/_design/d/_list/coded/v")
    assert (r.status_code, r.text, r.headers["X-List"]) == (203, "s", "yes")


def test_list_provides_json(couch, app):
    r = couch.get(f"/{app}/_design/d/_list/prov/v", headers={"Accept": "application/json"})
    assert (r.status_code, r.json()) == (200, ["doc1", "doc2", "doc3"])
    assert r.headers["Content-Type"] == "application/json"


def test_list_errors_are_couchdbs(couch, app):
    r = couch.get(f"/{app}/_design/d/_list/nosuch/v")
    assert (r.status_code, r.json()) == (404, {"error": "not_found", "reason": "missing json key: nosuch"})
    r = couch.get(f"/{app}/_design/d/_list/basic/nosuchview")
    assert (r.status_code, r.json()) == (404, {"error": "not_found", "reason": "missing_named_view"})
    r = couch.get(f"/{app}/_design/d/_list/throws/v")
    assert r.status_code == 500
    assert r.json()["error"] == "render_error"
    assert r.json()["reason"].startswith("function raised error: Error: listboom")
    r = couch.get(f"/{app}/_design/d/_list/basic")
    assert (r.status_code, r.json()) == (404, {"error": "list_error", "reason": "Invalid path."})
    r = couch.put(f"/{app}/_design/d/_list/basic/v")
    assert r.status_code == 405


# ---------------------------------------------------------------------------------------------------------------
# _update


def test_update_creates_a_document_with_post(couch, app):
    r = couch.post(f"/{app}/_design/d/_update/create", data="hello")
    assert (r.status_code, r.text) == (201, "created")
    doc_id, rev = r.headers["X-Couch-Id"], r.headers["X-Couch-Update-NewRev"]
    assert rev.startswith("1-")
    assert_sandboxed(r)
    stored = couch.get(f"/{app}/{doc_id}").json()
    assert (stored["_rev"], stored["body"]) == (rev, "hello")


def test_update_changes_a_document_with_put(couch, app):
    r = couch.put(f"/{app}/_design/d/_update/create/doc1")
    assert (r.status_code, r.json()) == (201, {"n": 1})
    assert r.headers["X-Couch-Id"] == "doc1"
    assert r.headers["X-Couch-Update-NewRev"].startswith("2-")
    assert couch.get(f"/{app}/doc1").json()["n"] == 1
    r = couch.put(f"/{app}/_design/d/_update/create/new%20one")
    assert r.status_code == 201
    assert r.headers["X-Couch-Id"] == "new%20one"
    assert couch.get(f"/{app}/new%20one").json()["body"] == ""  # a PUT with Content-Length: 0


def test_update_without_a_document_stores_nothing(couch, app):
    r = couch.post(f"/{app}/_design/d/_update/noop")
    assert (r.status_code, r.text) == (202, "nothing")
    assert "X-Couch-Update-NewRev" not in r.headers


def test_update_errors_are_couchdbs(couch, app):
    r = couch.get(f"/{app}/_design/d/_update/noop")
    assert (r.status_code, r.json()) == (405, {"error": "method_not_allowed",
                                               "reason": "Update functions do not allow GET"})
    r = couch.post(f"/{app}/_design/d/_update/nosuch")
    assert (r.status_code, r.json()) == (404, {"error": "not_found", "reason": "missing json key: nosuch"})
    r = couch.post(f"/{app}/_design/d/_update/noid")
    assert (r.status_code, r.json()) == (400, {"error": "illegal_docid", "reason": "Document id must not be empty"})
    r = couch.post(f"/{app}/_design/d/_update/throws")
    assert r.status_code == 500 and r.json()["error"] == "render_error"
    r = couch.post(f"/{app}/_design/d/_update")
    assert (r.status_code, r.json()) == (404, {"error": "update_error", "reason": "Invalid path."})


def test_update_goes_through_validate_doc_update(couch, app):
    r = couch.post(f"/{app}/_design/d/_update/refused")
    assert (r.status_code, r.json()) == (403, {"error": "forbidden", "reason": "bad docs are refused"})


# ---------------------------------------------------------------------------------------------------------------
# Attacks


@pytest.fixture
def member(couch, app):
    """A plain user who is a member of `app` (not its admin); deleted afterwards."""
    name = f"design-member-{uuid.uuid4().hex[:8]}"
    body = {"name": name, "password": "pw", "roles": [], "type": "user"}
    assert couch.put(f"/_users/org.couchdb.user:{name}", json=body).status_code in (201, 202)
    security = {"admins": {"names": [], "roles": []}, "members": {"names": [name], "roles": []}}
    assert couch.put(f"/{app}/_security", json=security).status_code == 200
    yield requests.Session(), (name, "pw")
    r = couch.get(f"/_users/org.couchdb.user:{name}")
    if r.status_code == 200:
        couch.delete(f"/_users/org.couchdb.user:{name}", params={"rev": r.json()["_rev"]})


def test_update_writing_a_design_document_as_a_non_admin_is_refused(couch, app, member):
    session, auth = member
    deadline = time.monotonic() + 10
    while True:
        r = session.post(couch.url(f"/{app}/_design/d/_update/ddoc"), auth=auth, timeout=10)
        if r.status_code != 401 or time.monotonic() > deadline:
            break
        time.sleep(0.1)  # CouchDB's auth cache follows _users asynchronously
    assert r.status_code == 403, r.text
    assert r.json() == {"error": "forbidden", "reason": "You are not a db or server admin."}
    assert couch.get(f"/{app}/_design/evil").status_code == 404
    # The member may use the update function for normal documents.
    r = session.post(couch.url(f"/{app}/_design/d/_update/create"), auth=auth, data="mine", timeout=10)
    assert r.status_code == 201, r.text


def test_show_header_injection_with_crlf_is_refused(couch, db):
    if not is_couchlite(couch):
        pytest.skip("CouchDB 3.4.3 sends a CR/LF header value from a show function as it is (response splitting)")
    evil = {"shows": {
        "crlf": "function(doc, req) { return {body: 'x', headers: {'X-Evil': 'a\\r\\nSet-Cookie: AuthSession=planted'}}; }",
        "lf": "function(doc, req) { return {body: 'x', headers: {'X-Evil': 'a\\nb'}}; }",
        "name": "function(doc, req) { return {body: 'x', headers: {'X-Evil\\r\\nSet-Cookie: a': 'b'}}; }",
        "cookie": "function(doc, req) { return {body: 'x', headers: {'Set-Cookie': 'AuthSession=planted'}}; }",
        "framing": "function(doc, req) { return {body: 'x', headers: {'Content-Length': '0', "
                   "'Transfer-Encoding': 'chunked'}}; }",
        "csp": "function(doc, req) { return {body: '<script>1</script>', headers: "
               "{'Content-Security-Policy': 'default-src *'}}; }",
    }}
    assert couch.put(f"/{db}/_design/evil", json=evil).status_code == 201
    for name in ("crlf", "lf", "name"):
        r = couch.get(f"/{db}/_design/evil/_show/{name}")
        assert r.status_code == 500 and r.json()["error"] == "external_response_error", r.text
        assert "Set-Cookie" not in r.headers and "planted" not in str(r.headers), r.headers
    r = couch.get(f"/{db}/_design/evil/_show/cookie")
    assert r.status_code == 200 and "Set-Cookie" not in r.headers
    r = couch.get(f"/{db}/_design/evil/_show/framing")
    assert (r.status_code, r.text) == (200, "x")
    # The function cannot loosen the sandbox.
    r = couch.get(f"/{db}/_design/evil/_show/csp")
    assert r.headers["Content-Security-Policy"] == "sandbox", r.headers


def test_show_that_loops_forever_is_cut_off_and_the_server_stays_up(couch, db):
    if not is_couchlite(couch):
        pytest.skip("CouchDB's os_process_timeout is 5 s too, but its JS engine kill is not what is tested here")
    ddoc = {"shows": {"loop": "function(doc, req) { while (true) {} }", "ok": "function() { return 'fine'; }"}}
    assert couch.put(f"/{db}/_design/loop", json=ddoc).status_code == 201
    started = time.monotonic()
    r = couch.get(f"/{db}/_design/loop/_show/loop", timeout=60)
    assert r.status_code == 500 and r.json()["error"] == "os_process_error", r.text
    assert time.monotonic() - started < 30
    assert couch.get(f"/{db}/_design/loop/_show/ok").text == "fine"
    assert couch.get("/").status_code == 200


def test_list_emitting_unbounded_output_is_cut_off(couch, app):
    if not is_couchlite(couch):
        pytest.skip("CouchDB streams such a list until its os_process_timeout between rows; not compared here")
    ddoc = {"lists": {"flood": "function(head, req) { getRow(); var s = 'x'; "
                               "for (var i = 0; i < 16; i++) { s = s + s; } while (true) { send(s); } }"},
            "views": {"v": {"map": "function(doc) { emit(doc._id, null); }"}}}
    assert couch.put(f"/{app}/_design/flood", json=ddoc).status_code == 201
    started = time.monotonic()
    received = 0
    with requests.get(couch.url(f"/{app}/_design/flood/_list/flood/v"), auth=(couch.user, couch.password),
                      stream=True, timeout=60) as r:
        assert r.status_code == 200
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            for chunk in r.iter_content(65536):
                received += len(chunk)
                assert time.monotonic() - started < 60
    assert received > 65536  # it streamed (bounded memory), and then it was cut off
    assert couch.get("/").status_code == 200
    assert couch.get(f"/{app}/_design/d/_list/first/v").text == "first:doc1"


def test_show_request_body_over_the_document_limit_is_refused(couch, app):
    if not is_couchlite(couch):
        pytest.skip("CouchDB hands a show up to max_http_request_size (4 GiB) of body")
    r = couch.post(f"/{app}/_design/d/_show/hello", data=b"x" * (8_000_000 + 1),
                   headers={"Content-Type": "text/plain"})
    assert r.status_code == 413, r.text
    assert r.json()["error"] == "too_large"
    assert couch.post(f"/{app}/_design/d/_show/hello", data=b"x" * 1000).text == "Hello none"


def test_show_answers_304_to_its_etag_until_the_document_changes(couch, app):
    path = f"/{app}/_design/d/_show/hello/doc1"
    r = couch.get(path)
    etag = r.headers["ETag"]
    assert r.headers["Vary"] == "Accept"
    r = couch.get(path, headers={"If-None-Match": etag})
    assert (r.status_code, r.text) == (304, "")
    rev = couch.get(f"/{app}/doc1").json()["_rev"]
    assert couch.put(f"/{app}/doc1", json={"_rev": rev, "k": 9}).status_code == 201
    r = couch.get(path, headers={"If-None-Match": etag})
    assert r.status_code == 200 and r.headers["ETag"] != etag
