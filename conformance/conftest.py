"""Fixtures for the black-box conformance suite.

COUCH_URL (http://user:pass@host:port) names the server under test: couchlite or any real
CouchDB 3.x. Only test_replay_selfcheck.py runs without it (it replays the transcripts against
the recordings themselves).
"""

import json
import os
import time
import urllib.parse
import uuid

import pytest
import requests

REQUEST_TIMEOUT_S = 30  # per request; longpoll tests pass their own

# conformance/e2e and conformance/browser start couchlite servers themselves (they need COUCHLITE_BIN), so a run against a
# foreign CouchDB must not collect them; they run when named: `pytest conformance/e2e`.
collect_ignore = ["e2e", "browser"]


class Couch:
    """A requests.Session bound to the server under test, with JSON helpers."""

    def __init__(self, url: str):
        parts = urllib.parse.urlsplit(url)
        if not parts.scheme or not parts.hostname:
            raise pytest.UsageError(f"COUCH_URL {url!r} is not http://user:pass@host:port")
        self.user = urllib.parse.unquote(parts.username or "")
        self.password = urllib.parse.unquote(parts.password or "")
        netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
        self.base = f"{parts.scheme}://{netloc}{parts.path.rstrip('/')}"
        self.session = requests.Session()
        if self.user:
            self.session.auth = (self.user, self.password)
        self.session.headers["Accept"] = "application/json"

    def url(self, path: str) -> str:
        return self.base + (path if path.startswith("/") else "/" + path)

    def request(self, method: str, path: str, **kw) -> requests.Response:
        kw.setdefault("timeout", REQUEST_TIMEOUT_S)
        kw.setdefault("allow_redirects", False)
        if "json" in kw:
            kw["data"] = json.dumps(kw.pop("json")).encode()
            headers = dict(kw.pop("headers", None) or {})
            headers.setdefault("Content-Type", "application/json")
            kw["headers"] = headers
        return self.session.request(method, self.url(path), **kw)

    def get(self, path, **kw): return self.request("GET", path, **kw)
    def put(self, path, **kw): return self.request("PUT", path, **kw)
    def post(self, path, **kw): return self.request("POST", path, **kw)
    def delete(self, path, **kw): return self.request("DELETE", path, **kw)
    def head(self, path, **kw): return self.request("HEAD", path, **kw)

    def raw(self, method: str, path: str, body: bytes = b"", headers=None, timeout=REQUEST_TIMEOUT_S):
        """Send `path` byte-exact (no requoting), e.g. for %2F in names."""
        req = requests.Request(method, self.url(path), data=body, headers=headers or {})
        prep = self.session.prepare_request(req)
        prep.url = self.url(path)
        return self.session.send(prep, timeout=timeout, allow_redirects=False)


def unique_db_name(tag: str = "t") -> str:
    return f"ct-{tag}-{uuid.uuid4().hex[:12]}"


def is_couchlite(couch: Couch) -> bool:
    """Whether the server under test is couchlite. Tests use it where couchlite deliberately differs
    from CouchDB (a clean 4xx where CouchDB answers 500, a leniency a real client needs) and then
    assert each server's own behaviour; they never skip on it silently."""
    return couch.get("/").json().get("vendor", {}).get("name") == "couchlite"


def settled(couch: Couch, condition, what: str, timeout_s: float = 10.0) -> None:
    """Asserts `condition()`: on couchlite at once; on CouchDB within `timeout_s`, for the effects it applies
    after answering the request that caused them (its authentication cache follows `_users` asynchronously, about
    0.25 s behind here). A test that calls this still fails on CouchDB if the effect never comes."""
    if is_couchlite(couch):
        assert condition(), what
        return
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not after {timeout_s:.0f} s"
        time.sleep(0.05)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("COUCH_URL"):
        return
    needing = [i for i in items if "couch" in getattr(i, "fixturenames", ())]
    if needing:
        raise pytest.UsageError(
            "COUCH_URL is not set. Point it at the server under test, e.g.\n"
            "  COUCH_URL=http://admin:pass@127.0.0.1:5984 python3 -m pytest conformance\n"
            "or run `bash scripts/test.sh`, which starts couchlite and sets it. "
            "(conformance/test_replay_selfcheck.py alone runs without a server.)")


@pytest.fixture(scope="session")
def couch() -> Couch:
    url = os.environ.get("COUCH_URL")
    if not url:
        pytest.fail("COUCH_URL is required")
    c = Couch(url)
    r = c.get("/")
    assert r.status_code == 200, f"GET {c.base}/ answered {r.status_code}: {r.text[:200]}"
    return c


@pytest.fixture
def db(couch):
    """A fresh database, deleted afterwards. Yields its name."""
    name = unique_db_name()
    r = couch.put(f"/{name}")
    assert r.status_code == 201, f"PUT /{name}: {r.status_code} {r.text}"
    yield name
    couch.delete(f"/{name}")


@pytest.fixture
def ordered_db(couch):
    """A fresh single-shard database (`?q=1`), deleted afterwards. CouchDB's default q=2 splits a
    database into two shards whose `_changes` rows interleave in no fixed order; tests that assert
    one total order of a feed use this (couchlite accepts and ignores `q`)."""
    name = unique_db_name("q1")
    r = couch.put(f"/{name}", params={"q": "1"})
    assert r.status_code == 201, f"PUT /{name}?q=1: {r.status_code} {r.text}"
    yield name
    couch.delete(f"/{name}")


@pytest.fixture
def db_factory(couch):
    """Creates extra fresh databases on demand; all are deleted afterwards."""
    made = []

    def make(tag="t"):
        name = unique_db_name(tag)
        r = couch.put(f"/{name}")
        assert r.status_code == 201, r.text
        made.append(name)
        return name

    yield make
    for name in made:
        couch.delete(f"/{name}")


# ---------------------------------------------------------------------------------------------
# Servers the suite starts itself (couchlite) or reconfigures and restores (CouchDB).


def couchlite_binary():
    import pathlib
    env = os.environ.get("COUCHLITE_BIN")
    if env:
        return pathlib.Path(env)
    return pathlib.Path(__file__).resolve().parent.parent / ".build" / "debug" / "couchlite"


def start_couchlite(data_dir, *flags, admin=("admin", "pass")):
    """Starts a couchlite on a free port; returns (process, base URL without credentials)."""
    import re
    import subprocess
    binary = couchlite_binary()
    if not binary.exists():
        pytest.skip(f"{binary} not built")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUCHLITE_")}
    proc = subprocess.Popen(
        [str(binary), "--port", "0", "--data-dir", str(data_dir), "--admin", f"{admin[0]}:{admin[1]}",
         "--pbkdf2-iterations", "1000", "--log-level", "error", *flags],
        stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    match = re.search(r"http://\S+/", line)
    if not match:
        proc.kill()
        pytest.fail(f"couchlite did not start: {line!r}")
    return proc, match.group(0).rstrip("/")


OPEN_USERS_SECURITY = {"admins": {"names": [], "roles": ["_admin"]}, "members": {"names": [], "roles": []}}


@pytest.fixture(scope="session")
def open_users_couchlite(couch, tmp_path_factory):
    """couchlite only (None elsewhere): a second server started with --users-db-security-editable true
    whose `_users/_security` has no members, shared by every test that needs an open `_users`."""
    if not is_couchlite(couch):
        yield None
        return
    proc, base = start_couchlite(tmp_path_factory.mktemp("open-users") / "data",
                                 "--users-db-security-editable", "true", admin=(couch.user, couch.password))
    try:
        server = Couch(base.replace("http://", f"http://{couch.user}:{couch.password}@"))
        r = server.put("/_users/_security", json=OPEN_USERS_SECURITY)
        assert r.status_code == 200, r.text
        yield server
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture
def open_users(couch, open_users_couchlite):
    """A server whose `_users` an admin has opened for sign-up, as CouchDB 3 allows it:
    `[couchdb] users_db_security_editable = true`, then `_users/_security` with no members.
    Against couchlite, the second server of `open_users_couchlite`; against CouchDB the config and
    `_users/_security` are changed for this one test and restored after it, so that tests of the
    default (sign-up refused) never see an open `_users`."""
    if open_users_couchlite is not None:
        yield open_users_couchlite
        return
    r = couch.put("/_node/_local/_config/couchdb/users_db_security_editable", json="true")
    assert r.status_code == 200, r.text
    old_flag = r.json()
    old_security = couch.get("/_users/_security").json()
    assert couch.put("/_users/_security", json=OPEN_USERS_SECURITY).status_code == 200
    try:
        yield couch
    finally:
        couch.put("/_users/_security", json=old_security)
        if old_flag == "":
            couch.delete("/_node/_local/_config/couchdb/users_db_security_editable")
        else:
            couch.put("/_node/_local/_config/couchdb/users_db_security_editable", json=old_flag)
