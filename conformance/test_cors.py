"""CORS as CouchDB's chttpd_cors: preflights answered before authentication, accepted origins
echoed (never `*`) with credentials allowed, CouchDB's method/header lists and exposed headers.

The server under test runs without CORS, so each test gets a CORS-enabled server: against
couchlite a second server is started (COUCHLITE_BIN or .build/debug/couchlite) with
--cors-origins; against CouchDB the [chttpd]/[cors] config is set and restored afterwards.
"""

import os
import pathlib
import re
import subprocess

import pytest
import requests

from conftest import unique_db_name

ORIGIN = "http://app.example:8000"
METHODS = "CONNECT, COPY, DELETE, GET, HEAD, OPTIONS, POST, PUT, TRACE"
COUCH_EXPOSED = ["accept-ranges", "etag", "server", "x-couch-request-id", "x-couch-update-newrev",
                 "x-couchdb-body-time"]
CORS_HEADERS = ("Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Access-Control-Allow-Methods",
                "Access-Control-Allow-Headers", "Access-Control-Max-Age", "Access-Control-Expose-Headers")


def _couchlite_binary() -> pathlib.Path:
    env = os.environ.get("COUCHLITE_BIN")
    if env:
        return pathlib.Path(env)
    return pathlib.Path(__file__).resolve().parent.parent / ".build" / "debug" / "couchlite"


class CorsServer:
    def __init__(self, base, auth):
        self.base = base.rstrip("/")
        self.auth = auth

    def url(self, path):
        return self.base + path


@pytest.fixture(scope="module", params=[ORIGIN + ",http://other.example", "*"], ids=["listed", "star"])
def cors(couch, tmp_path_factory, request):
    origins = request.param
    vendor = couch.get("/").json().get("vendor", {}).get("name")
    auth = (couch.user, couch.password)
    if vendor == "couchlite":
        binary = _couchlite_binary()
        if not binary.exists():
            pytest.skip(f"{binary} not built")
        proc = subprocess.Popen(
            [str(binary), "--port", "0", "--data-dir", str(tmp_path_factory.mktemp("cors") / "data"), "--admin", f"{auth[0]}:{auth[1]}",
             # with `*`, credentials need the operator's explicit `any-origin` (CouchDB's
             # `credentials = true` with `origins = *` means the same)
             "--cors-origins", origins, "--cors-credentials", "any-origin" if origins == "*" else "true",
             "--log-level", "error"],
            stdout=subprocess.PIPE, text=True)
        try:
            url = re.search(r"http://\S+/", proc.stdout.readline()).group(0)
            yield CorsServer(url, auth)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        return
    settings = [("chttpd", "enable_cors", "true"), ("cors", "origins", origins), ("cors", "credentials", "true")]
    # A server may already be set up for browsers with its own method and header lists (PouchDB's
    # add-cors-to-couchdb sets both); they are removed for the test so that chttpd_cors's defaults,
    # which couchlite has, are what is asserted, and put back afterwards.
    cleared = [("cors", "methods"), ("cors", "headers")]
    previous = []
    for section, key, value in settings:
        r = couch.put(f"/_node/_local/_config/{section}/{key}", json=value)
        assert r.status_code == 200, r.text
        previous.append((section, key, r.json()))
    for section, key in cleared:
        r = couch.delete(f"/_node/_local/_config/{section}/{key}")
        assert r.status_code in (200, 404), r.text
        if r.status_code == 200:
            previous.append((section, key, r.json()))
    try:
        yield CorsServer(couch.base, auth)
    finally:
        for section, key, old in previous:
            if old == "":
                couch.delete(f"/_node/_local/_config/{section}/{key}")
            else:
                couch.put(f"/_node/_local/_config/{section}/{key}", json=old)


@pytest.fixture
def admin_only_db(cors):
    """A fresh database with the default (admin-only) security on the CORS server; deleted afterwards."""
    name = unique_db_name("cors")
    assert requests.put(cors.url(f"/{name}"), auth=cors.auth, timeout=10).status_code == 201
    yield name
    requests.delete(cors.url(f"/{name}"), auth=cors.auth, timeout=10)


def test_preflight_is_answered_before_authentication(cors, admin_only_db):
    # admin-only: an authenticated request would be needed to use it
    r = requests.options(cors.url(f"/{admin_only_db}/doc"), headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "content-type, authorization"}, timeout=10)
    assert r.status_code == 204
    assert r.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert r.headers["Access-Control-Allow-Credentials"] == "true"
    assert r.headers["Access-Control-Allow-Methods"] == METHODS
    assert r.headers["Access-Control-Allow-Headers"] == "content-type, authorization"
    assert r.headers["Access-Control-Max-Age"] == "600"
    assert r.content == b""


def test_preflight_without_requested_headers(cors):
    r = requests.options(cors.url("/"), headers={"Origin": ORIGIN, "Access-Control-Request-Method": "GET"}, timeout=10)
    assert r.status_code == 204
    assert r.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert r.headers.get("Access-Control-Allow-Headers", "") == ""


def test_preflight_refused_for_unknown_origin_method_or_header(cors, request):
    cases = [
        ({"Origin": ORIGIN, "Access-Control-Request-Method": "PATCH"}),
        ({"Origin": ORIGIN, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "x-evil"}),
    ]
    if "listed" in request.node.callspec.id:
        cases.append({"Origin": "http://evil.example", "Access-Control-Request-Method": "GET"})
    for headers in cases:
        r = requests.options(cors.url("/"), headers=headers, timeout=10)
        assert "Access-Control-Allow-Methods" not in r.headers, headers
        assert r.status_code != 204 or "Access-Control-Allow-Origin" not in r.headers, headers


def test_simple_request_echoes_origin_with_credentials(cors):
    r = requests.get(cors.url("/_session"), headers={"Origin": ORIGIN}, auth=cors.auth, timeout=10)
    assert r.status_code == 200
    assert r.headers["Access-Control-Allow-Origin"] == ORIGIN  # the origin, never "*"
    assert r.headers["Access-Control-Allow-Credentials"] == "true"
    exposed = [h.strip() for h in r.headers["Access-Control-Expose-Headers"].split(",")]
    assert "content-type" in exposed
    for h in COUCH_EXPOSED:
        assert h in exposed
    assert "Access-Control-Allow-Methods" not in r.headers


def test_error_responses_carry_cors_headers(cors):
    r = requests.get(cors.url("/_all_dbs"), headers={"Origin": ORIGIN, "Accept": "application/json"}, timeout=10)
    assert r.status_code == 401
    assert r.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert r.headers["Access-Control-Allow-Credentials"] == "true"


def test_cookie_login_from_browser_origin(cors):
    s = requests.Session()
    r = s.post(cors.url("/_session"), json={"name": cors.auth[0], "password": cors.auth[1]},
               headers={"Origin": ORIGIN}, timeout=10)
    assert r.status_code == 200
    assert r.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert "AuthSession=" in r.headers["Set-Cookie"]
    r = s.get(cors.url("/_all_dbs"), headers={"Origin": ORIGIN}, timeout=10)
    assert r.status_code == 200


def test_no_cors_headers_without_origin_or_for_other_origins(cors, request):
    r = requests.get(cors.url("/"), timeout=10)
    for h in CORS_HEADERS:
        assert h not in r.headers
    if "listed" in request.node.callspec.id:
        r = requests.get(cors.url("/"), headers={"Origin": "http://evil.example"}, timeout=10)
        for h in CORS_HEADERS:
            assert h not in r.headers


# ---------------------------------------------------------------------------------------------
# Issue 18 item 10 (couchlite's defaults): credentials are off unless asked for, and `*` never
# gets them unless the operator says `any-origin`. CouchDB's `[cors] credentials` defaults to
# false too; its `credentials = true` covers `*`, which couchlite refuses to infer.


def _cors_server(tmp_path, *flags):
    from conftest import start_couchlite
    return start_couchlite(tmp_path / "data", *flags)


def test_cors_wildcard_does_not_hand_out_credentials(couch, tmp_path):
    if couch.get("/").json().get("vendor", {}).get("name") != "couchlite":
        pytest.skip("couchlite's flags")
    evil = "http://evil.example"
    proc, base = _cors_server(tmp_path, "--cors-origins", "*")
    try:
        for r in (requests.get(base + "/_session", headers={"Origin": evil}, timeout=10),
                  requests.options(base + "/_session", headers={"Origin": evil, "Access-Control-Request-Method": "GET"},
                                   timeout=10)):
            assert r.headers.get("Access-Control-Allow-Origin") == evil
            assert "Access-Control-Allow-Credentials" not in r.headers, r.headers
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    proc, base = _cors_server(tmp_path, "--cors-origins", f"{ORIGIN},*", "--cors-credentials", "true")
    try:
        r = requests.get(base + "/_session", headers={"Origin": ORIGIN}, timeout=10)
        assert r.headers.get("Access-Control-Allow-Credentials") == "true"
        r = requests.get(base + "/_session", headers={"Origin": evil}, timeout=10)
        assert r.headers.get("Access-Control-Allow-Origin") == evil
        assert "Access-Control-Allow-Credentials" not in r.headers
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_cors_credentials_with_only_a_wildcard_is_refused_at_start(couch, tmp_path):
    if couch.get("/").json().get("vendor", {}).get("name") != "couchlite":
        pytest.skip("couchlite's flags")
    from conftest import couchlite_binary
    r = subprocess.run([str(couchlite_binary()), "--port", "0", "--data-dir", str(tmp_path / "d"),
                        "--cors-origins", "*", "--cors-credentials", "true"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 64 and "any-origin" in r.stderr
