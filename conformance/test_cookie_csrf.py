"""The cross-site check of every write a session cookie makes (the console's writes under /_utils are CouchDB's
API with the cookie, and so are any other page's): from another origin, a cross-site fetch, or a form post
without an Origin, couchlite refuses it (403) before it acts; its own pages, clients that are not browsers and
Basic credentials are taken. CouchDB checks no Origin (its defence is CORS preflights and 415 for non-JSON
posts), so each test asserts each server's own answer (is_couchlite)."""
import requests

from conftest import is_couchlite, unique_db_name


def session_cookie(couch):
    r = requests.post(couch.url("/_session"), json={"name": couch.user, "password": couch.password}, timeout=30)
    assert r.status_code == 200
    return {"Cookie": "AuthSession=" + r.cookies["AuthSession"]}


def test_cookie_write_from_another_origin_is_refused_csrf(couch):
    """A page on another origin (here another port of the same host: same site, so SameSite=Lax sends the
    cookie) makes the browser send the admin's cookie with a write: couchlite refuses it before it acts."""
    cookie = session_cookie(couch)
    name = unique_db_name("csrf")
    r = requests.put(couch.url("/" + name), headers={**cookie, "Origin": "http://127.0.0.1:1"}, timeout=10)
    try:
        if is_couchlite(couch):
            assert r.status_code == 403
            assert r.json()["error"] == "forbidden"
            assert couch.get("/" + name).status_code == 404
        else:
            assert r.status_code == 201  # CouchDB checks no Origin: its defence is CORS preflights alone.
    finally:
        couch.delete("/" + name)


def test_cookie_write_from_a_cross_site_fetch_is_refused_csrf(couch):
    cookie = session_cookie(couch)
    name = unique_db_name("csrf")
    r = requests.put(couch.url("/" + name), headers={**cookie, "Sec-Fetch-Site": "cross-site"}, timeout=10)
    try:
        assert r.status_code == (403 if is_couchlite(couch) else 201)
    finally:
        couch.delete("/" + name)


def test_cookie_form_post_without_origin_is_refused_csrf(couch, db):
    """A form (text/plain, no preflight) posting a document with the cookie: refused without a JSON body."""
    cookie = session_cookie(couch)
    r = requests.post(couch.url(f"/{db}"), data=b'{"_id":"planted"}',
                      headers={**cookie, "Content-Type": "text/plain"}, timeout=10)
    assert r.status_code in ((403,) if is_couchlite(couch) else (415, 400))
    assert couch.get(f"/{db}/planted").status_code == 404


def test_cookie_write_from_the_servers_own_page_is_taken(couch, db):
    cookie = session_cookie(couch)
    origin = couch.base.split("/", 3)[0] + "//" + couch.base.split("//", 1)[1].split("/", 1)[0]
    r = requests.put(couch.url(f"/{db}/from-console"), json={"a": 1},
                     headers={**cookie, "Origin": origin, "Sec-Fetch-Site": "same-origin"}, timeout=10)
    assert r.status_code == 201
    r = requests.post(couch.url(f"/{db}"), json={"_id": "posted"}, headers=cookie, timeout=10)
    assert r.status_code == 201  # no Origin (not a browser) and a JSON body


def test_basic_auth_write_is_not_subject_to_the_cookie_check(couch, db):
    r = couch.put(f"/{db}/basic", json={"a": 1}, headers={"Origin": "http://127.0.0.1:1"})
    assert r.status_code == 201


def test_dns_rebound_page_cannot_write_with_the_cookie_csrf(couch):
    """A page on evil.example whose name its owner re-points at this server: its Origin matches the Host it sends,
    which is not enough (a name is this server's only when --allowed-hosts says so)."""
    cookie = session_cookie(couch)
    name = unique_db_name("csrf")
    r = requests.put(couch.url("/" + name), timeout=10,
                     headers={**cookie, "Host": "evil.example", "Origin": "http://evil.example"})
    try:
        assert r.status_code == (403 if is_couchlite(couch) else 201)
    finally:
        couch.delete("/" + name)
