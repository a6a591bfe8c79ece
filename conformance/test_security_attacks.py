"""Attacks from issue 18 (identity, accounts, design functions, passwords, throttling), each test
named after the attack it makes. They pass against CouchDB 3.4.3 where the defence is CouchDB's
own behaviour (byte-compared names, admin-only `_users`); couchlite-only defences skip elsewhere.
SECURITY.md lists every defence and where it is tested.
"""

import hashlib
import http.client
import json
import threading
import time
import urllib.parse
import uuid
from base64 import b64encode

import pytest
import requests

from conftest import REQUEST_TIMEOUT_S, is_couchlite, settled, unique_db_name

NOT_MEMBER_NAMED = {"error": "forbidden", "reason": "You are not allowed to access this db."}
NOT_MEMBER_ANON = {"error": "unauthorized", "reason": "You are not authorized to access this db."}

# Victim and twin: names Swift's String calls equal, CouchDB (bytes) does not.
TWINS = {
    "kelvin": ("Kate", "\u212Aate"),  # LATIN CAPITAL K vs KELVIN SIGN
    "nfd": ("jos\u00e9", "jose\u0301"),  # NFC vs NFD
}


def doc_url(name):
    return "/_users/" + urllib.parse.quote(f"org.couchdb.user:{name}", safe=":")


def put_user(server, name, password, roles=(), auth="admin"):
    """Creates a user as the server admin, or anonymously with auth=None."""
    body = {"name": name, "password": password, "roles": list(roles), "type": "user"}
    if auth == "admin":
        return server.put(doc_url(name), json=body)
    return requests.put(server.url(doc_url(name)), json=body, timeout=10)


def delete_user(server, name):
    r = server.get(doc_url(name))
    if r.status_code == 200:
        server.delete(doc_url(name), params={"rev": r.json()["_rev"]})


def utf8_auth(name, password):
    """Basic credentials as UTF-8 bytes (requests would encode a str as Latin-1)."""
    return (name.encode(), password.encode())


def lookalike_takeover(server, pair, register_twin):
    """The attack of issue 18 item 1 against `server`; `register_twin(name, pw)` makes the twin."""
    tag = uuid.uuid4().hex[:8]
    victim, twin = pair[0] + "-" + tag, pair[1] + "-" + tag
    assert victim.encode() != twin.encode()
    assert put_user(server, victim, "victim-pw", roles=["photographers"]).status_code in (201, 202)
    db = unique_db_name("twin")
    assert server.put(f"/{db}").status_code == 201
    try:
        security = {"admins": {"names": [victim], "roles": []}, "members": {"names": [victim], "roles": []}}
        assert server.put(f"/{db}/_security", json=security).status_code == 200
        assert server.put(f"/{db}/secret", json={"v": "private"}).status_code == 201
        register_twin(twin, "twin-pw")
        auth = utf8_auth(twin, "twin-pw")
        # logged in as the twin, with the twin's own (empty) roles
        r = requests.post(server.url("/_session"), json={"name": twin, "password": "twin-pw"}, timeout=10)
        assert r.status_code == 200, r.text
        assert r.json()["name"].encode() == twin.encode() and r.json()["roles"] == []
        # the victim's database is closed to the twin
        for path in (f"/{db}", f"/{db}/secret", f"/{db}/_all_docs", f"/{db}/_security"):
            r = requests.get(server.url(path), auth=auth, timeout=10)
            assert r.status_code == 403 and r.json() == NOT_MEMBER_NAMED, (path, r.text)
        r = requests.put(server.url(f"/{db}/_security"), json={}, auth=auth, timeout=10)
        assert r.status_code == 403, r.text
        # the victim's _users document is neither readable nor writable by the twin
        r = requests.get(server.url(doc_url(victim)), auth=auth, timeout=10)
        assert r.status_code in (403, 404) and "derived_key" not in r.text, r.text
        rev = server.get(doc_url(victim)).json()["_rev"]
        hijack = {"_id": f"org.couchdb.user:{victim}", "_rev": rev, "name": victim, "password": "owned",
                  "roles": ["photographers"], "type": "user"}
        r = requests.put(server.url(doc_url(victim)), json=hijack, auth=auth, timeout=10)
        assert r.status_code in (403, 404), r.text
        r = requests.post(server.url(f"/_users/_bulk_docs"), json={"docs": [hijack]}, auth=auth, timeout=10)
        # couchlite refuses it (403, or 201 with a forbidden item); CouchDB hides the victim's document
        # from the twin and answers 404 `missing` for the whole request.
        assert r.status_code in (201, 403, 404) and "ok" not in r.text, r.text
        # the victim's password is unchanged: nobody logs in as the victim with "owned"
        assert requests.get(server.url("/_session"), auth=utf8_auth(victim, "owned"), timeout=10).status_code == 401
        r = requests.get(server.url("/_session"), auth=utf8_auth(victim, "victim-pw"), timeout=10)
        assert r.json()["userCtx"] == {"name": victim, "roles": ["photographers"]}
        # and the twin's password does not open the victim's account
        assert requests.get(server.url("/_session"), auth=utf8_auth(victim, "twin-pw"), timeout=10).status_code == 401
    finally:
        server.delete(f"/{db}")
        delete_user(server, victim)
        delete_user(server, twin)


@pytest.mark.parametrize("pair", TWINS.values(), ids=TWINS.keys())
def test_lookalike_username_takeover(couch, pair):
    """The twin is registered by the admin (sign-up is closed by default)."""
    def register(name, password):
        assert put_user(couch, name, password).status_code in (201, 202)
    lookalike_takeover(couch, pair, register)


@pytest.mark.parametrize("pair", TWINS.values(), ids=TWINS.keys())
def test_lookalike_username_takeover_by_anonymous_signup(open_users, pair):
    """The issue's attack as reported: anonymous sign-up of the twin where _users is open."""
    def register(name, password):
        r = put_user(open_users, name, password, auth=None)
        assert r.status_code in (201, 202), r.text
    lookalike_takeover(open_users, pair, register)


def test_anonymous_signup_refused_by_default(couch):
    """Issue 18 item 4: _users is admin-only (CouchDB 3), so nobody claims a name a database lists."""
    ghost = f"ghost-{uuid.uuid4().hex[:8]}"  # listed in a _security before the user exists
    db = unique_db_name("ghost")
    assert couch.put(f"/{db}").status_code == 201
    try:
        security = {"admins": {"names": [], "roles": []}, "members": {"names": [ghost], "roles": []}}
        assert couch.put(f"/{db}/_security", json=security).status_code == 200
        body = {"_id": f"org.couchdb.user:{ghost}", "name": ghost, "password": "mine", "roles": [], "type": "user"}
        r = requests.put(couch.url(doc_url(ghost)), json=body, timeout=10)
        assert r.status_code == 401 and r.json() == NOT_MEMBER_ANON, r.text
        r = requests.post(couch.url("/_users"), json=body, timeout=10)
        assert r.status_code == 401 and r.json() == NOT_MEMBER_ANON, r.text
        r = requests.post(couch.url("/_users/_bulk_docs"), json={"docs": [body]}, timeout=10)
        assert r.status_code == 401 and r.json() == NOT_MEMBER_ANON, r.text
        assert couch.get(doc_url(ghost)).status_code == 404
        assert requests.get(couch.url(f"/{db}"), auth=(ghost, "mine"), timeout=10).status_code == 401
        sec = couch.get("/_users/_security").json()
        assert "_admin" in sec["members"]["roles"]
        # and the admin may not open it without the operator's switch (users_db_security_editable)
        r = couch.put("/_users/_security", json={})
        assert r.status_code == 403, r.text
    finally:
        couch.delete(f"/{db}")


def test_users_security_editable_when_operator_allows(open_users):
    """With the switch on, an admin's _users/_security rules: open means sign-up, per CouchDB."""
    name = f"open-{uuid.uuid4().hex[:8]}"
    r = put_user(open_users, name, "pw", auth=None)
    assert r.status_code in (201, 202), r.text
    try:
        r = requests.get(open_users.url(doc_url(name)), auth=(name, "pw"), timeout=10)
        assert r.status_code == 200 and r.json()["name"] == name
        r = requests.get(open_users.url(doc_url(name)), timeout=10)
        assert r.status_code == 404
    finally:
        delete_user(open_users, name)


def test_validate_doc_update_is_enforced_not_ignored(couch, db):
    """Issue 18 item 6, then issue 17: a stored validate function is enforced on every write, replicated ones
    and admins' included (test_validate_doc_update.py covers each path)."""
    ddoc = {"validate_doc_update": "function(newDoc, oldDoc, userCtx) { throw({forbidden: 'no'}); }"}
    assert couch.put(f"/{db}/_design/guard", json=ddoc).status_code == 201
    r = couch.put(f"/{db}/doc", json={})
    assert r.status_code == 403 and r.json() == {"error": "forbidden", "reason": "no"}, r.text
    r = couch.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [{"_id": "replicated", "_rev": "1-abc"}]})
    assert r.status_code == 201 and r.json()[0]["error"] == "forbidden", r.text
    assert couch.get(f"/{db}/replicated").status_code == 404


def self_made_hash(password, iterations, salt=None):
    salt = salt or uuid.uuid4().hex
    key = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), iterations).hex()
    return {"password_scheme": "pbkdf2", "pbkdf2_prf": "sha256", "salt": salt, "iterations": iterations,
            "derived_key": key}


def test_self_registered_hash_cannot_demand_millions_of_iterations(open_users):
    """Issue 18 item 7: a self-supplied hash may not cost more per login than the server's own."""
    name = f"costly-{uuid.uuid4().hex[:8]}"
    doc = {"_id": f"org.couchdb.user:{name}", "name": name, "roles": [], "type": "user",
           "password_scheme": "pbkdf2", "pbkdf2_prf": "sha256", "salt": "00" * 16, "iterations": 10_000_000,
           "derived_key": "00" * 32}
    r = requests.put(open_users.url(doc_url(name)), json=doc, timeout=10)
    if not is_couchlite(open_users):
        # CouchDB accepts it (max_iterations is 10^9 there): each login against it costs seconds.
        assert r.status_code == 201, r.text
        delete_user(open_users, name)
        return
    assert r.status_code == 403 and r.json() == {"error": "forbidden",
                                                 "reason": "Iteration count is too high for this server"}, r.text
    # what the server itself uses is fine
    fresh = f"fresh-{uuid.uuid4().hex[:8]}"
    assert put_user(open_users, fresh, "pw").status_code == 201
    try:
        server_iterations = open_users.get(doc_url(fresh)).json()["iterations"]
        r = requests.put(open_users.url(doc_url(name)), timeout=10,
                         json=dict(doc, **self_made_hash("pw", server_iterations)))
        assert r.status_code == 201, r.text
        assert requests.get(open_users.url("/_session"), auth=(name, "pw"), timeout=10).json()["userCtx"]["name"] == name
    finally:
        delete_user(open_users, name)
        delete_user(open_users, fresh)


def test_admin_written_costly_hash_does_not_pin_a_core(couch):
    """Even an admin-written (replicated) hash over the limit is not computed at each login."""
    if not is_couchlite(couch):
        pytest.skip("CouchDB computes hashes up to max_iterations (10^9): this one would take seconds")
    name = f"pinned-{uuid.uuid4().hex[:8]}"
    doc = {"name": name, "roles": [], "type": "user", **self_made_hash("x", 1, salt="aa" * 16)}
    doc["iterations"] = 10_000_000  # the most the old code computed: seconds per attempt
    assert couch.put(doc_url(name), json=doc).status_code == 201
    try:
        started = time.monotonic()
        r = requests.get(couch.url("/_session"), auth=(name, "guess"), timeout=30)
        assert r.status_code == 401
        assert time.monotonic() - started < 2  # 10 million rounds take seconds
    finally:
        delete_user(couch, name)


def test_weak_stored_hash_upgraded_on_login(couch, users_iterations):
    """Issue 18 item 11: a hash weaker than the server's is re-derived at the next good login,
    with the same salt (so open sessions stay valid)."""
    name = f"weak-{uuid.uuid4().hex[:8]}"
    weak = self_made_hash("pw", 10)
    assert couch.put(doc_url(name), json={"name": name, "roles": [], "type": "user", **weak}).status_code == 201
    try:
        s = requests.Session()
        assert s.post(couch.url("/_session"), json={"name": name, "password": "pw"}, timeout=10).status_code == 200
        stored = couch.get(doc_url(name)).json()
        if not is_couchlite(couch):
            # CouchDB 3.4.3 ships upgrade_hash_on_auth = false: the weak hash stays.
            assert stored["iterations"] == 10 and stored["derived_key"] == weak["derived_key"]
            return
        assert stored["iterations"] == users_iterations and stored["salt"] == weak["salt"]
        assert stored["derived_key"] != weak["derived_key"]
        assert s.get(couch.url("/_session"), timeout=10).json()["userCtx"]["name"] == name
        r = requests.get(couch.url("/_session"), auth=(name, "pw"), timeout=10)
        assert r.json()["userCtx"]["name"] == name
        assert requests.get(couch.url("/_session"), auth=(name, "nope"), timeout=10).status_code == 401
    finally:
        delete_user(couch, name)


@pytest.fixture
def users(couch):
    """Creates accounts as the admin on demand; deletes them afterwards."""
    made = []

    def make():
        name, password = f"u-{uuid.uuid4().hex[:10]}", uuid.uuid4().hex
        assert put_user(couch, name, password).status_code == 201
        made.append(name)
        return name, password

    yield make
    for name in made:
        delete_user(couch, name)


@pytest.fixture
def users_iterations(couch):
    """The iterations the server gives a fresh hash."""
    name = f"probe-{uuid.uuid4().hex[:8]}"
    assert put_user(couch, name, "pw").status_code == 201
    try:
        return couch.get(doc_url(name)).json()["iterations"]
    finally:
        delete_user(couch, name)


# ---------------------------------------------------------------------------------------------
# Login throttle (couchlite's: CouchDB 3.4 locks accounts out instead). Each test guesses from its
# own loopback source addresses (127.0.0.x all reach a server bound to 127.0.0.1 on Linux).


def basic_get(couch, source, name, password, path="/_session"):
    parts = urllib.parse.urlsplit(couch.base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30, source_address=(source, 0))
    try:
        token = b64encode(f"{name}:{password}".encode()).decode()
        conn.request("GET", path, headers={"Authorization": f"Basic {token}", "Accept": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def unique_source():
    return f"127.{uuid.uuid4().int % 200 + 20}.{uuid.uuid4().int % 250 + 1}.{uuid.uuid4().int % 250 + 1}"


def test_login_throttle_not_flushed_by_made_up_names(couch, users):
    if not is_couchlite(couch):
        pytest.skip("CouchDB 3.4.3 locks a (client, name) out after 5 failures instead (couch_auth_lockout)")
    victim, password = users()
    attacker = unique_source()
    for _ in range(8):
        assert basic_get(couch, attacker, victim, "guess") == 401
    # The old table was emptied by failures on 4,096 names; send more, spread over many addresses
    # so that the per-address count does not stop them first.
    per_address = 20  # under the per-address allowance (AuthLimits.freeClientFailures)
    flooders = [unique_source() for _ in range(4200 // per_address)]
    with requests.Session() as s:
        for i in range(4200):
            source = flooders[i // per_address]
            if i % per_address == 0:
                s.close()
                s = requests.Session()
                s.mount("http://", SourceAdapter(source))
            r = s.get(couch.url("/_session"), auth=(f"made-up-{i}-{uuid.uuid4().hex[:6]}", "x"), timeout=30)
            assert r.status_code == 401
    # still throttled: two quick guesses, and the second waits its (long) turn
    basic_get(couch, attacker, victim, "guess")
    started = time.monotonic()
    basic_get(couch, attacker, victim, "guess")
    assert time.monotonic() - started >= 1.0
    # while the real user, elsewhere, is never held up
    started = time.monotonic()
    assert basic_get(couch, unique_source(), victim, password) == 200
    assert time.monotonic() - started < 1.0


class SourceAdapter(requests.adapters.HTTPAdapter):
    def __init__(self, source):
        self.source = source
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        kwargs["source_address"] = (self.source, 0)
        super().init_poolmanager(*args, **kwargs)


def test_login_throttle_counts_parallel_guesses(couch, users):
    if not is_couchlite(couch):
        pytest.skip("CouchDB 3.4.3 locks a (client, name) out after 5 failures instead (couch_auth_lockout)")
    victim, password = users()
    attacker = unique_source()
    for _ in range(5):
        assert basic_get(couch, attacker, victim, "guess") == 401
    statuses = []
    threads = [threading.Thread(target=lambda: statuses.append(basic_get(couch, attacker, victim, "guess")))
               for _ in range(40)]
    for t in threads:
        t.start()
    time.sleep(0.5)  # every guess has reached the server and taken (or been refused) a turn
    # the right password, sent by the attacker now, is not verified: the queue is full
    assert basic_get(couch, attacker, victim, password) == 401
    # the real user from another address logs in at once
    started = time.monotonic()
    assert basic_get(couch, unique_source(), victim, password) == 200
    assert time.monotonic() - started < 1.0
    for t in threads:
        t.join()
    assert statuses.count(401) == 40


def test_leaked_password_stops_working_at_once_despite_the_credential_cache(couch, users):
    """The attack: a password leaked and the thief uses it; the user changes it. Verified credentials
    are cached (on couchlite for as long as they are in use), but the old password must stop working
    with the change, and every password with the account's deletion, not when a cache entry expires."""
    name, old = users()
    thief = unique_source()
    for _ in range(3):  # in use: cached, and kept so
        assert basic_get(couch, thief, name, old) == 200
    doc = couch.get(doc_url(name)).json()
    new = uuid.uuid4().hex
    doc["password"] = new
    assert couch.put(doc_url(name), json=doc).status_code in (201, 202)
    # (on CouchDB, from a new address each try: it locks a client and name out after five failures)
    settled(couch, lambda: basic_get(couch, unique_source(), name, old) == 401, "the old password is refused")
    assert basic_get(couch, thief, name, old) == 401
    assert basic_get(couch, unique_source(), name, new) == 200
    assert basic_get(couch, thief, name, new) == 200
    delete_user(couch, name)
    settled(couch, lambda: basic_get(couch, unique_source(), name, new) == 401, "a deleted account is refused")
    assert basic_get(couch, thief, name, new) == 401


SPY_MAP = (
    "function(doc) {"
    " var g = (function() { return this; })();"
    " if (!g.stash) { g.stash = [];"
    "   var apply = Function.prototype.apply, stringify = JSON.stringify;"
    "   Function.prototype.apply = function(self, args) {"
    "     try { g.stash.push(stringify(args)); } catch (e) {} return apply.call(this, self, args); };"
    "   JSON.stringify = function(v) { try { g.stash.push(stringify(v)); } catch (e) {} return stringify(v); };"
    "   Array.prototype.push = function() { try { g.stash[g.stash.length] = stringify(arguments); } catch (e) {}"
    "     for (var i = 0; i < arguments.length; i++) this[this.length] = arguments[i]; return this.length; }; }"
    " emit(doc._id, g.stash.join('\\n')); }")


def test_a_database_admin_cannot_spy_on_another_database_through_the_javascript_globals(couch, users):
    """The admin of database `a` redefines built-ins in a map function (`Function.prototype.apply`,
    `JSON.stringify`, `Array.prototype.push`), hoping the worker keeps them when it later runs `b`'s filter and
    validation for `b`'s member; her view would then emit `b`'s documents, the member's userCtx, `b`'s `_security`
    and the member's session cookie. Every design document runs in its own global environment, so nothing of `b`
    ever reaches her. Repeated so that the calls land on every worker of the pool."""
    alice, alice_pw = users()
    bob, bob_pw = users()
    a, b = unique_db_name("spy-a"), unique_db_name("spy-b")
    try:
        for name, admin, member in ((a, alice, None), (b, None, bob)):
            assert couch.put(f"/{name}").status_code == 201
            security = {"admins": {"names": [admin] if admin else [], "roles": []},
                        "members": {"names": [member] if member else [admin], "roles": []}}
            assert couch.put(f"/{name}/_security", json=security).status_code == 200
        spy = requests.put(couch.url(f"/{a}/_design/spy"), auth=(alice, alice_pw), timeout=REQUEST_TIMEOUT_S,
                           json={"views": {"all": {"map": SPY_MAP}}})
        assert spy.status_code == 201, spy.text
        r = couch.put(f"/{b}/_design/app", json={
            "filters": {"mine": "function(doc, req) { return [doc.secret].length == 1 && req.userCtx.name != null; }"},
            "validate_doc_update": "function(newDoc, oldDoc, userCtx, secObj) { [newDoc._id].push(userCtx.name); }"})
        assert r.status_code == 201, r.text
        login = requests.post(couch.url("/_session"), data={"name": bob, "password": bob_pw},
                              timeout=REQUEST_TIMEOUT_S)
        assert login.status_code == 200, login.text
        cookie = login.cookies["AuthSession"]
        leaked = []
        for round_number in range(8):
            doc = requests.put(couch.url(f"/{a}/d{round_number}"), auth=(alice, alice_pw), json={"n": round_number},
                               timeout=REQUEST_TIMEOUT_S)
            assert doc.status_code == 201, doc.text
            view = requests.get(couch.url(f"/{a}/_design/spy/_view/all"), auth=(alice, alice_pw),
                                timeout=REQUEST_TIMEOUT_S)
            assert view.status_code == 200, view.text
            secret = f"bob-secret-{round_number}"
            w = requests.put(couch.url(f"/{b}/s{round_number}"), cookies={"AuthSession": cookie},
                             json={"secret": secret}, timeout=REQUEST_TIMEOUT_S)
            assert w.status_code == 201, w.text
            feed = requests.get(couch.url(f"/{b}/_changes"), params={"filter": "app/mine"},
                                cookies={"AuthSession": cookie}, timeout=REQUEST_TIMEOUT_S)
            assert feed.status_code == 200, feed.text
            leaked.append(view.text)
        final = requests.get(couch.url(f"/{a}/_design/spy/_view/all"), auth=(alice, alice_pw),
                             timeout=REQUEST_TIMEOUT_S)
        assert final.status_code == 200, final.text
        everything = "\n".join(leaked + [final.text])
        for secret in ("bob-secret", cookie, bob, b):
            assert secret not in everything, f"{secret!r} reached the admin of {a}"
    finally:
        couch.delete(f"/{a}")
        couch.delete(f"/{b}")
