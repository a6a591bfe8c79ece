"""Authentication and authorization: Basic and cookie auth, /_session, _users, per-database
_security, and hostile credentials and names.

Everything here is CouchDB 3.x behaviour (admin_only default security, chttpd_auth_request's
route table, couch_users_db's rules) unless a test says it is couchlite-only; those skip
against real CouchDB. Users are created through _users and deleted afterwards.
"""

import base64
import json
import os
import pathlib
import re
import subprocess
import time
import uuid

import pytest
import requests

from conftest import REQUEST_TIMEOUT_S, is_couchlite, settled, unique_db_name

NOT_MEMBER_ANON = {"error": "unauthorized", "reason": "You are not authorized to access this db."}
NOT_MEMBER_NAMED = {"error": "forbidden", "reason": "You are not allowed to access this db."}
NOT_DB_ADMIN_NAMED = {"error": "forbidden", "reason": "You are not a db or server admin."}
NOT_DB_ADMIN_ANON = {"error": "unauthorized", "reason": "You are not a db or server admin."}
NOT_SERVER_ADMIN = {"error": "unauthorized", "reason": "You are not a server admin."}
BAD_LOGIN = {"error": "unauthorized", "reason": "Name or password is incorrect."}


def client(couch, auth=None) -> requests.Session:
    s = requests.Session()
    if auth:
        s.auth = auth
    s.headers["Accept"] = "application/json"
    return s


def call(session, couch, method, path, **kw):
    kw.setdefault("timeout", REQUEST_TIMEOUT_S)
    kw.setdefault("allow_redirects", False)
    if "json" in kw:
        kw["data"] = json.dumps(kw.pop("json")).encode()
        kw.setdefault("headers", {})["Content-Type"] = "application/json"
    return session.request(method, couch.url(path), **kw)


def user_doc_id(name):
    return f"org.couchdb.user:{name}"


def _user_factory(couch):
    made = []

    def make(roles=(), password=None, name=None):
        name = name or f"u{uuid.uuid4().hex[:10]}"
        password = password or uuid.uuid4().hex
        r = couch.put(f"/_users/{user_doc_id(name)}",
                      json={"name": name, "password": password, "roles": list(roles), "type": "user"})
        assert r.status_code in (201, 202), r.text
        made.append(name)
        return name, password

    def cleanup():
        for name in made:
            r = couch.get(f"/_users/{user_doc_id(name)}")
            if r.status_code == 200:
                couch.delete(f"/_users/{user_doc_id(name)}", params={"rev": r.json()["_rev"]})

    return make, cleanup


@pytest.fixture
def users(couch):
    """Creates _users accounts on demand (as the server admin); deletes them afterwards."""
    make, cleanup = _user_factory(couch)
    yield make
    cleanup()


@pytest.fixture(scope="module")
def secured(couch):
    """A database with a doc and an attachment; members: `member` by name and role `readers`;
    admins: `dbadmin` by name. Yields (db, {who: requests.Session or None})."""
    users, cleanup = _user_factory(couch)
    db = unique_db_name("sec")
    assert couch.put(f"/{db}").status_code == 201
    member = users()
    dbadmin = users()
    outsider = users()
    role_member = users(roles=["readers"])
    security = {"admins": {"names": [dbadmin[0]], "roles": []},
                "members": {"names": [member[0]], "roles": ["readers"]}}
    assert couch.put(f"/{db}/_security", json=security).status_code == 200
    r = couch.put(f"/{db}/doc", json={"v": 1})
    assert r.status_code == 201
    r = couch.put(f"/{db}/doc/att.txt", params={"rev": r.json()["rev"]}, data=b"hello",
                  headers={"Content-Type": "text/plain"})
    assert r.status_code == 201
    who = {
        "anonymous": client(couch),
        "outsider": client(couch, outsider),
        "member": client(couch, member),
        "role_member": client(couch, role_member),
        "dbadmin": client(couch, dbadmin),
        "admin": client(couch, (couch.user, couch.password)),
    }
    yield db, who, security
    couch.delete(f"/{db}")
    cleanup()


# ---------------------------------------------------------------------------------------------
# The access matrix: anonymous / logged-in outsider / member / db admin / server admin.

READERS = ("member", "role_member", "dbadmin", "admin")


def expect_member_rule(who, r):
    if who == "anonymous":
        assert r.status_code == 401 and r.json() == NOT_MEMBER_ANON, r.text
    elif who == "outsider":
        assert r.status_code == 403 and r.json() == NOT_MEMBER_NAMED, r.text
    else:
        assert r.status_code in (200, 201, 202), f"{who}: {r.status_code} {r.text}"


def expect_db_admin_rule(who, r):
    """Checks the refusals of a db-admin-only call; returns whether `who` was let through."""
    if who == "anonymous":
        assert r.status_code == 401 and r.json() == NOT_MEMBER_ANON, r.text
    elif who == "outsider":
        assert r.status_code == 403 and r.json() == NOT_MEMBER_NAMED, r.text
    elif who in ("member", "role_member"):
        assert r.status_code == 403 and r.json() == NOT_DB_ADMIN_NAMED, r.text
    else:
        return True
    return False


@pytest.mark.parametrize("who", ["anonymous", "outsider", "member", "role_member", "dbadmin", "admin"])
def test_matrix_read(couch, secured, who):
    db, clients, _ = secured
    s = clients[who]
    for path in (f"/{db}", f"/{db}/doc", f"/{db}/_all_docs", f"/{db}/_changes", f"/{db}/doc/att.txt",
                 f"/{db}/doc?open_revs=all"):
        expect_member_rule(who, call(s, couch, "GET", path))
    r = call(s, couch, "POST", f"/{db}/_bulk_get", json={"docs": [{"id": "doc"}]})
    expect_member_rule(who, r)
    r = call(s, couch, "POST", f"/{db}/_revs_diff", json={"doc": ["9-x"]})
    expect_member_rule(who, r)


@pytest.mark.parametrize("who", ["anonymous", "outsider", "member", "role_member", "dbadmin", "admin"])
def test_matrix_write(couch, secured, who):
    db, clients, _ = secured
    s = clients[who]
    doc_id = f"w-{who}"
    r = call(s, couch, "PUT", f"/{db}/{doc_id}", json={"by": who})
    expect_member_rule(who, r)
    r = call(s, couch, "POST", f"/{db}/_bulk_docs", json={"docs": [{"_id": f"b-{who}"}]})
    expect_member_rule(who, r)
    r = call(s, couch, "PUT", f"/{db}/_local/{doc_id}", json={"x": 1})
    expect_member_rule(who, r)
    r = call(s, couch, "PUT", f"/{db}/att-{who}/a.bin", data=b"\x00\x01", headers={"Content-Type": "application/octet-stream"})
    expect_member_rule(who, r)


@pytest.mark.parametrize("who", ["anonymous", "outsider", "member", "role_member", "dbadmin", "admin"])
def test_matrix_design_doc_write(couch, secured, who):
    db, clients, _ = secured
    s = clients[who]
    r = call(s, couch, "PUT", f"/{db}/_design/d-{who}", json={"views": {}})
    if expect_db_admin_rule(who, r):
        assert r.status_code == 201, r.text


def test_member_bulk_docs_and_post_cannot_write_design_docs(couch, secured):
    db, clients, _ = secured
    s = clients["member"]
    r = call(s, couch, "POST", f"/{db}/_bulk_docs", json={"docs": [{"_id": "_design/bulk"}, {"_id": "plain-bulk"}]})
    assert r.status_code == 201
    items = r.json()
    assert items[0]["id"] == "_design/bulk"
    assert items[0]["error"] == "forbidden" and items[0]["reason"] == "You are not a db or server admin."
    assert items[1]["ok"] is True
    r = call(s, couch, "POST", f"/{db}", json={"_id": "_design/post"})
    assert r.status_code == 403 and r.json() == NOT_DB_ADMIN_NAMED
    assert couch.get(f"/{db}/_design/bulk").status_code == 404
    r = call(clients["dbadmin"], couch, "POST", f"/{db}/_bulk_docs", json={"docs": [{"_id": "_design/byadmin"}]})
    assert r.status_code == 201 and r.json()[0]["ok"] is True


@pytest.mark.parametrize("who", ["anonymous", "outsider", "member", "role_member", "dbadmin", "admin"])
def test_matrix_security_object(couch, secured, who):
    db, clients, security = secured
    s = clients[who]
    r = call(s, couch, "GET", f"/{db}/_security")
    expect_member_rule(who, r)
    if r.status_code == 200:
        assert r.json() == security
    r = call(s, couch, "PUT", f"/{db}/_security", json=security)
    if who in ("member", "role_member") and not is_couchlite(couch):
        # CouchDB 3.4.3 lets members through to fabric, whose shards each refuse them; fabric_db_meta
        # counts those refusals as missing answers: 500 no_majority. couchlite answers the 403 a
        # single shard's couch_db:check_is_admin gives, as for design documents.
        assert r.status_code == 500 and r.json() == {"error": "error", "reason": "no_majority"}, r.text
    elif expect_db_admin_rule(who, r):
        assert r.status_code == 200 and r.json() == {"ok": True}, r.text
    assert couch.get(f"/{db}/_security").json() == security


@pytest.mark.parametrize("who", ["anonymous", "outsider", "member", "dbadmin", "admin"])
def test_matrix_server_admin_routes(couch, secured, who):
    db, clients, _ = secured
    s = clients[who]
    r = call(s, couch, "GET", "/_all_dbs")
    if who == "admin":
        assert r.status_code == 200
    else:
        # chttpd's require_admin answers 401 even to a logged-in user
        assert r.status_code == 401 and r.json() == NOT_SERVER_ADMIN, r.text
    name = unique_db_name("mk")
    r = call(s, couch, "PUT", f"/{name}")
    if who == "admin":
        assert r.status_code == 201
        couch.delete(f"/{name}")
    else:
        assert r.status_code == 401 and r.json() == NOT_SERVER_ADMIN, r.text
    if who != "admin":  # the admin would really delete the shared database
        r = call(s, couch, "DELETE", f"/{db}")
        assert r.status_code == 401 and r.json() == NOT_SERVER_ADMIN, r.text


@pytest.mark.parametrize("who", ["anonymous", "outsider", "member", "dbadmin", "admin"])
def test_matrix_users_database(couch, secured, who):
    _, clients, _ = secured
    s = clients[who]
    for path in ("/_users/_all_docs", "/_users/_changes"):
        r = call(s, couch, "GET", path)
        if who == "admin":
            assert r.status_code == 200
        else:
            assert r.status_code == 401 and r.json() == NOT_SERVER_ADMIN, r.text


def test_new_database_is_admin_only(couch, users):
    db = unique_db_name("adm")
    assert couch.put(f"/{db}").status_code == 201
    try:
        sec = couch.get(f"/{db}/_security").json()
        assert sec["members"]["roles"] == ["_admin"] and sec["admins"]["roles"] == ["_admin"]
        name, pw = users()
        r = requests.get(couch.url(f"/{db}"), auth=(name, pw), timeout=10)
        assert r.status_code == 403 and r.json() == NOT_MEMBER_NAMED
        r = requests.get(couch.url(f"/{db}"), timeout=10)
        assert r.status_code == 401 and r.json() == NOT_MEMBER_ANON
        # an empty members list makes the database public
        assert couch.put(f"/{db}/_security", json={}).status_code == 200
        assert requests.get(couch.url(f"/{db}"), timeout=10).status_code == 200
        assert requests.put(couch.url(f"/{db}/pub"), json={}, timeout=10).status_code == 201
        r = requests.put(couch.url(f"/{db}/_design/x"), json={}, timeout=10)
        assert r.status_code == 401 and r.json() == NOT_DB_ADMIN_ANON
    finally:
        couch.delete(f"/{db}")


def test_recreated_database_forgets_security(couch):
    db = unique_db_name("re")
    assert couch.put(f"/{db}").status_code == 201
    assert couch.put(f"/{db}/_security", json={}).status_code == 200
    couch.delete(f"/{db}")
    assert couch.put(f"/{db}").status_code == 201
    try:
        assert requests.get(couch.url(f"/{db}"), timeout=10).status_code == 401
    finally:
        couch.delete(f"/{db}")


def test_missing_database_is_404_for_anyone(couch):
    r = requests.get(couch.url(f"/{unique_db_name('none')}/doc"), timeout=10)
    assert r.status_code == 404 and r.json()["error"] == "not_found"


def test_security_object_validation(couch, db):
    good = {"admins": {"names": ["bob"], "roles": []}, "members": {"names": [], "roles": ["r"]}}
    assert couch.put(f"/{db}/_security", json=good).status_code == 200
    for bad in ({"admins": {"names": "bob"}}, {"members": {"roles": [1]}}, {"admins": []}, [], "x"):
        r = couch.put(f"/{db}/_security", json=bad)
        if is_couchlite(couch):
            # couchlite refuses a malformed security object with a clean 400.
            assert r.status_code == 400 and r.json()["error"] == "bad_request", (bad, r.text)
        else:
            # CouchDB 3.4.3's shards each throw bad_request, which fabric_db_meta:set_security counts
            # as missing answers: 500 no_majority.
            assert r.status_code == 500 and r.json() == {"error": "error", "reason": "no_majority"}, (bad, r.text)
        assert couch.get(f"/{db}/_security").json() == good


# ---------------------------------------------------------------------------------------------
# _users


def test_user_password_is_stored_hashed(couch, users):
    name, pw = users()
    doc = couch.get(f"/_users/{user_doc_id(name)}").json()
    assert "password" not in doc and pw not in json.dumps(doc)
    assert doc["password_scheme"] == "pbkdf2" and doc["pbkdf2_prf"] == "sha256"
    assert re.fullmatch(r"[0-9a-f]{64}", doc["derived_key"]) and re.fullmatch(r"[0-9a-f]{32}", doc["salt"])
    assert isinstance(doc["iterations"], int)
    assert requests.get(couch.url("/_session"), auth=(name, pw), timeout=10).json()["userCtx"]["name"] == name
    # _users is admin-only (CouchDB 3): not even its owner reads it, strangers are refused
    r = requests.get(couch.url(f"/_users/{user_doc_id(name)}"), auth=(name, pw), timeout=10)
    assert r.status_code == 403 and r.json() == NOT_MEMBER_NAMED
    r = requests.get(couch.url(f"/_users/{user_doc_id(name)}"), timeout=10)
    assert r.status_code == 401 and r.json() == NOT_MEMBER_ANON


@pytest.fixture
def open_users_accounts(open_users):
    """Creates accounts (as the admin) on the server whose _users is open; deletes them afterwards."""
    make, cleanup = _user_factory(open_users)
    yield make
    cleanup()


def test_signup_hashes_password(open_users, open_users_accounts):
    couch, users = open_users, open_users_accounts
    name = f"s{uuid.uuid4().hex[:10]}"
    r = requests.put(couch.url(f"/_users/{user_doc_id(name)}"),
                     json={"name": name, "password": "s3cret", "roles": [], "type": "user"}, timeout=10)
    assert r.status_code == 201, r.text
    try:
        doc = couch.get(f"/_users/{user_doc_id(name)}").json()
        assert "password" not in doc
        assert doc["password_scheme"] == "pbkdf2"
        assert re.fullmatch(r"[0-9a-f]{64}", doc["derived_key"])
        assert re.fullmatch(r"[0-9a-f]{32}", doc["salt"])
        assert isinstance(doc["iterations"], int)
        assert "s3cret" not in json.dumps(doc)
        # the user reads their own doc; anonymous and others get 404
        r = requests.get(couch.url(f"/_users/{user_doc_id(name)}"), auth=(name, "s3cret"), timeout=10)
        assert r.status_code == 200 and r.json()["name"] == name
        assert "password" not in r.json()
        r = requests.get(couch.url(f"/_users/{user_doc_id(name)}"), timeout=10)
        assert r.status_code == 404
        other, other_pw = users()
        r = requests.get(couch.url(f"/_users/{user_doc_id(name)}"), auth=(other, other_pw), timeout=10)
        assert r.status_code == 404
        # password change: new one works, old one doesn't
        doc = requests.get(couch.url(f"/_users/{user_doc_id(name)}"), auth=(name, "s3cret"), timeout=10).json()
        doc["password"] = "n3w"
        r = requests.put(couch.url(f"/_users/{user_doc_id(name)}"), json=doc, auth=(name, "s3cret"), timeout=10)
        assert r.status_code == 201, r.text
        settled(couch, lambda: requests.get(couch.url("/_session"), auth=(name, "n3w"), timeout=10).status_code == 200,
                "the new password is accepted")
        assert requests.get(couch.url("/_session"), auth=(name, "n3w"), timeout=10).json()["userCtx"]["name"] == name
        assert requests.get(couch.url("/_session"), auth=(name, "s3cret"), timeout=10).status_code == 401
    finally:
        r = couch.get(f"/_users/{user_doc_id(name)}")
        couch.delete(f"/_users/{user_doc_id(name)}", params={"rev": r.json()["_rev"]})


def test_users_cannot_give_themselves_roles(open_users, open_users_accounts):
    couch, users = open_users, open_users_accounts
    name = f"r{uuid.uuid4().hex[:10]}"
    r = requests.put(couch.url(f"/_users/{user_doc_id(name)}"),
                     json={"name": name, "password": "pw", "roles": ["boss"], "type": "user"}, timeout=10)
    assert r.status_code == 403 and r.json() == {"error": "forbidden", "reason": "Only _admin may set roles"}
    name, pw = users()
    doc = requests.get(couch.url(f"/_users/{user_doc_id(name)}"), auth=(name, pw), timeout=10).json()
    doc["roles"] = ["_admin"]
    r = requests.put(couch.url(f"/_users/{user_doc_id(name)}"), json=doc, auth=(name, pw), timeout=10)
    assert r.status_code == 403 and r.json() == {"error": "forbidden", "reason": "Only _admin may edit roles"}
    doc["roles"] = ["boss"]
    r = requests.put(couch.url(f"/_users/{user_doc_id(name)}"), json=doc, auth=(name, pw), timeout=10)
    assert r.status_code == 403 and r.json()["reason"] == "Only _admin may edit roles"


def test_user_doc_validation_messages(couch):
    cases = [
        ({"_id": "org.couchdb.user:v1", "name": "v1", "roles": [], "type": "nope"}, "doc.type must be user"),
        ({"_id": "org.couchdb.user:v1", "name": "v1", "roles": "x", "type": "user"}, "doc.roles must be an array"),
        ({"_id": "org.couchdb.user:v1", "name": "v1", "roles": [1], "type": "user"}, "doc.roles can only contain strings"),
        ({"_id": "org.couchdb.user:v1", "name": "v1", "type": "user"}, "doc.roles must exist"),
        ({"_id": "org.couchdb.user:v2", "name": "v1", "roles": [], "type": "user"},
         "Doc ID must be of the form org.couchdb.user:name"),
        ({"_id": "org.couchdb.user:a:b", "name": "a:b", "roles": [], "type": "user"},
         "Character `:` is not allowed in usernames."),
        ({"_id": "org.couchdb.user:v1", "name": "v1", "roles": ["_admin"], "type": "user"},
         "No system roles (starting with underscore) in users db."),
    ]
    for doc, reason in cases:
        r = couch.put(f"/_users/{doc['_id']}", json=doc)
        assert r.status_code == 403, (doc, r.text)
        assert r.json() == {"error": "forbidden", "reason": reason}


def test_users_security_object_is_not_editable(couch):
    r = couch.put("/_users/_security", json={})
    assert r.status_code == 403
    assert r.json() == {"error": "forbidden", "reason": "You can't edit the security object of the user database."}


def test_user_cannot_write_another_users_doc(open_users, open_users_accounts):
    couch, users = open_users, open_users_accounts
    a, apw = users()
    b, _ = users()
    doc = couch.get(f"/_users/{user_doc_id(b)}").json()
    doc["foo"] = "bar"
    r = requests.put(couch.url(f"/_users/{user_doc_id(b)}"), json=doc, auth=(a, apw), timeout=10)
    assert r.status_code == 404


# ---------------------------------------------------------------------------------------------
# /_session and Basic auth


def test_session_json_login_get_logout(couch, users):
    name, pw = users(roles=["reader"])
    s = requests.Session()
    r = s.post(couch.url("/_session"), json={"name": name, "password": pw}, timeout=10)
    assert r.status_code == 200
    assert r.json() == {"ok": True, "name": name, "roles": ["reader"]}
    cookie = r.headers["Set-Cookie"]
    assert cookie.startswith("AuthSession=")
    assert "HttpOnly" in cookie and "Path=/" in cookie and "Max-Age=600" in cookie
    r = s.get(couch.url("/_session"), timeout=10)
    body = r.json()
    assert body["ok"] is True
    assert body["userCtx"] == {"name": name, "roles": ["reader"]}
    assert body["info"]["authenticated"] == "cookie"
    assert "cookie" in body["info"]["authentication_handlers"]
    r = s.delete(couch.url("/_session"), timeout=10)
    assert r.status_code == 200 and r.json() == {"ok": True}
    assert re.match(r"AuthSession=;", r.headers["Set-Cookie"])
    r = requests.get(couch.url("/_session"), timeout=10)
    assert r.json()["userCtx"] == {"name": None, "roles": []}
    assert "authenticated" not in r.json()["info"]


def test_session_form_login_and_next_redirect(couch, users):
    name, pw = users()
    r = requests.post(couch.url("/_session?next=/_up"), data={"name": name, "password": pw},
                      allow_redirects=False, timeout=10)
    assert r.status_code == 302
    assert r.headers["Location"].endswith("/_up")
    assert "AuthSession=" in r.headers["Set-Cookie"]


def test_session_wrong_password(couch, users):
    name, _ = users()
    r = requests.post(couch.url("/_session"), data={"name": name, "password": "nope"}, timeout=10)
    assert r.status_code == 401 and r.json() == BAD_LOGIN
    assert "WWW-Authenticate" not in r.headers
    r = requests.post(couch.url("/_session"), data={"name": f"ghost{uuid.uuid4().hex}", "password": "x"}, timeout=10)
    assert r.status_code == 401 and r.json() == BAD_LOGIN


def test_session_bad_content_type(couch):
    r = requests.post(couch.url("/_session"), data=b"name=a", headers={"Content-Type": "text/plain"}, timeout=10)
    assert r.status_code == 415 and r.json()["error"] == "bad_content_type"


def test_session_basic_required(couch):
    r = requests.get(couch.url("/_session?basic=true"), timeout=10)
    assert r.status_code == 401 and r.json() == {"error": "unauthorized", "reason": "Please login."}


def test_basic_auth_session_info(couch, users):
    name, pw = users()
    r = requests.get(couch.url("/_session"), auth=(name, pw), timeout=10)
    assert r.json()["userCtx"]["name"] == name
    assert r.json()["info"]["authenticated"] == "default"
    # "_:_" is the logged-out Basic pair
    r = requests.get(couch.url("/_session"), headers={"Authorization": "Basic Xzpf"}, timeout=10)
    assert r.json()["userCtx"]["name"] is None


def wrong_password_names(couch, users):
    """Names to send wrong passwords for: a fresh _users account, and on couchlite the server admin
    too. CouchDB 3.4.3 locks a (client address, name) pair out for five minutes after five failures
    (couch_auth_lockout), which would lock the shared admin account every later request of this
    suite (and of anyone else on that server) runs as; couchlite only slows failures down."""
    names = [users()[0]]
    if is_couchlite(couch):
        names.append(couch.user)
    return names


def test_wrong_basic_credentials_401_everywhere(couch, users):
    for name in wrong_password_names(couch, users):
        for path in ("/", "/_up", "/_session"):
            r = requests.get(couch.url(path), auth=(name, "wrong"), headers={"Accept": "application/json"}, timeout=10)
            assert r.status_code == 401 and r.json() == BAD_LOGIN, (name, path)
            assert "WWW-Authenticate" not in r.headers


def test_www_authenticate_only_when_asked(couch):
    r = requests.get(couch.url("/_all_dbs"), headers={"Accept": "application/json"}, timeout=10)
    assert r.status_code == 401 and "WWW-Authenticate" not in r.headers
    r = requests.get(couch.url("/_all_dbs"), headers={"Accept": "application/json",
                                                       "X-CouchDB-WWW-Authenticate": "Cookie"}, timeout=10)
    assert r.status_code == 401 and r.headers["WWW-Authenticate"] == "Cookie"


def test_cookie_tampering_is_anonymous(couch, users):
    name, pw = users()
    r = requests.post(couch.url("/_session"), data={"name": name, "password": pw}, timeout=10)
    value = r.cookies["AuthSession"]
    raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    forged_name = raw.replace(name.encode(), b"admin", 1)
    flipped = raw[:-1] + bytes([raw[-1] ^ 1])
    for bad in (forged_name, flipped):
        forged = base64.urlsafe_b64encode(bad).rstrip(b"=").decode()
        r = requests.get(couch.url("/_session"), cookies={"AuthSession": forged}, timeout=10)
        assert r.status_code == 200
        assert r.json()["userCtx"]["name"] is None
    r = requests.get(couch.url("/_session"), cookies={"AuthSession": value}, timeout=10)
    assert r.json()["userCtx"]["name"] == name


def test_malformed_cookie_is_400(couch):
    r = requests.get(couch.url("/_session"), cookies={"AuthSession": "abc"}, timeout=10)
    assert r.status_code == 400 and r.json()["error"] == "bad_request"


def test_malformed_authorization_headers(couch, users):
    invalid = {"error": "bad_request", "reason": "Authorization header has invalid base64 value"}
    r = requests.get(couch.url("/"), headers={"Authorization": "Basic YTpi="}, timeout=10)
    assert r.status_code == 400 and r.json() == invalid
    r = requests.get(couch.url("/"), headers={"Authorization": "Basic !!!notbase64"}, timeout=10)
    if is_couchlite(couch):
        # couchlite answers every undecodable value with the 400 above.
        assert r.status_code == 400 and r.json() == invalid
    else:
        # CouchDB 3.4.3 (couch_httpd_auth:basic_name_pw) catches only the function_clause that bad
        # padding raises; base64:decode's badarg for characters outside the alphabet becomes a 500.
        assert r.status_code == 500 and r.json()["reason"] == "badarg", r.text
    for header in ("Bearer abc", "Basic" , "basic Zm9vOmJhcg==", "Basic " + base64.b64encode(b"nocolon").decode()):
        r = requests.get(couch.url("/"), headers={"Authorization": header}, timeout=10)
        assert r.status_code == 200, header  # not credentials: anonymous
    # non-UTF-8 name, empty name, huge password: wrong credentials, no crash
    for raw in (b"\xff\xfe:pw", b":pw", users()[0].encode() + b":" + b"x" * 4000):
        header = "Basic " + base64.b64encode(raw).decode()
        r = requests.get(couch.url("/"), headers={"Authorization": header}, timeout=10)
        assert r.status_code == 401, raw[:20]
    r = requests.get(couch.url("/"), headers={"Authorization": "Basic " + "QUFB" * 30000}, timeout=10)
    assert 400 <= r.status_code < 500
    assert couch.get("/_up").status_code == 200


def test_hostile_names_are_clean_4xx(couch, db):
    for path in ("/..", "/%2e%2e", "/%2E%2E%2Fetc", "/a%00b", "/..%2F..%2Ftmp"):
        r = couch.raw("PUT", path)
        assert 400 <= r.status_code < 500, (path, r.status_code)
    for path in (f"/{db}/..%2F..%2Fx", f"/{db}/%2e%2e", f"/{db}/a%00b"):
        r = couch.raw("PUT", path, body=b"{}", headers={"Content-Type": "application/json"})
        assert r.status_code < 500, (path, r.status_code, r.text)
    r = couch.put(f"/{db}/d", json={})
    rev = r.json()["rev"]
    for name in ("..%2F..%2Fpasswd", "%2e%2e", "a%00b"):
        r = couch.raw("PUT", f"/{db}/d/{name}?rev={rev}", body=b"x", headers={"Content-Type": "text/plain"})
        assert r.status_code < 500, (name, r.status_code, r.text)
        if r.status_code == 201:
            rev = r.json()["rev"]
    assert couch.get("/_up").status_code == 200


# ---------------------------------------------------------------------------------------------
# A replicator-style push as a member: form login, then the replicator's requests on the cookie.


def test_replicator_style_push_with_member_cookie(couch, secured):
    db, clients, _ = secured
    member = clients["member"].auth
    s = requests.Session()
    r = s.post(couch.url("/_session"), data=f"name={member[0]}&password={member[1]}",
               headers={"Content-Type": "application/x-www-form-urlencoded", "User-Agent": "CouchDB-Replicator/3.4.3"},
               timeout=10)
    assert r.status_code == 200 and "AuthSession=" in r.headers["Set-Cookie"]
    s.headers["Accept"] = "application/json"
    assert s.get(couch.url(f"/{db}"), timeout=10).status_code == 200
    rep_id = uuid.uuid4().hex
    assert s.get(couch.url(f"/{db}/_local/{rep_id}"), timeout=10).status_code == 404
    docs = [{"_id": f"p{i}", "_rev": f"1-{uuid.uuid4().hex}", "n": i} for i in range(3)]
    r = s.post(couch.url(f"/{db}/_revs_diff"), json={d["_id"]: [d["_rev"]] for d in docs}, timeout=10)
    assert r.status_code == 200 and len(r.json()) == 3
    r = s.post(couch.url(f"/{db}/_bulk_docs"), json={"docs": docs, "new_edits": False}, timeout=10)
    assert r.status_code == 201 and r.json() == []
    r = s.put(couch.url(f"/{db}/pa?new_edits=false"),
              json={"_id": "pa", "_rev": "1-abc", "_attachments": {"a.txt": {"content_type": "text/plain",
                                                                               "data": base64.b64encode(b"hi").decode()}}},
              timeout=10)
    assert r.status_code == 201, r.text
    # a design document is refused to a member (the replicator counts a doc_write_failure)
    r = s.put(couch.url(f"/{db}/_design/x?new_edits=false"), json={"_id": "_design/x", "_rev": "1-abc"}, timeout=10)
    assert r.status_code == 403 and r.json() == NOT_DB_ADMIN_NAMED
    assert s.post(couch.url(f"/{db}/_ensure_full_commit"), json={}, timeout=10).status_code == 201
    r = s.put(couch.url(f"/{db}/_local/{rep_id}"), json={"session_id": "s", "source_last_seq": "3", "history": []},
              timeout=10)
    assert r.status_code == 201
    assert couch.get(f"/{db}/p2").json()["n"] == 2
    # Basic auth with the same credentials works as well
    r = requests.get(couch.url(f"/{db}/p0"), auth=member, timeout=10)
    assert r.status_code == 200


# ---------------------------------------------------------------------------------------------
# couchlite-only: first-start admin generation and login throttling.


def couchlite_binary() -> pathlib.Path:
    env = os.environ.get("COUCHLITE_BIN")
    if env:
        return pathlib.Path(env)
    return pathlib.Path(__file__).resolve().parent.parent / ".build" / "debug" / "couchlite"


def test_first_start_generates_admin(couch, tmp_path):
    if not is_couchlite(couch):
        pytest.skip("couchlite's first-start admin")
    binary = couchlite_binary()
    if not binary.exists():
        pytest.skip(f"{binary} not built")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUCHLITE_")}
    proc = subprocess.Popen([str(binary), "--port", "0", "--data-dir", str(tmp_path / "data"), "--log-level", "error"],
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        lines = [proc.stdout.readline() for _ in range(4)]
        url = re.search(r"http://\S+/", lines[0]).group(0)
        password = re.search(r"password: (\S+)", "".join(lines)).group(1)
        assert len(password) >= 32
        assert re.search(r"curl -u 'admin:", "".join(lines + [proc.stdout.readline(), proc.stdout.readline()]))
        assert requests.get(url + "_all_dbs", auth=("admin", password), timeout=10).status_code == 200
        assert requests.get(url + "_all_dbs", timeout=10).status_code == 401
        stored = (tmp_path / "data" / "admins.json").read_text()
        assert password not in stored and "derived_key" in stored
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_repeated_failed_logins_slow_down(couch):
    if not is_couchlite(couch):
        pytest.skip("couchlite's throttle (CouchDB locks out instead)")
    name = f"t{uuid.uuid4().hex[:10]}"
    times = []
    for _ in range(7):
        started = time.monotonic()
        r = requests.get(couch.url("/_session"), auth=(name, "wrong"), timeout=30)
        times.append(time.monotonic() - started)
        assert r.status_code == 401
    assert times[-1] >= 0.15 and times[-1] > times[0]
