"""Scan and drop (issue 36, item 1), over real HTTP: the phone's QR code opens the drop page with a one-time token in
the URL's fragment, which the page trades (`POST /_photos/api/signin`, JSON, same origin) for a drop session, an
`AuthSession` cookie (HttpOnly, SameSite=Strict) that permits exactly what the drop credentials permit and ends with
the receive session. Each attack is a test named after it: token reuse, token guessing, the cookie used on another
database, the cookie after receive ends."""

from __future__ import annotations

import hashlib
import random
import re
import time
import urllib.parse

import requests

from receive_support import photo, wait_for_files
from test_receive_e2e import receivers, zbar  # noqa: F401 (receivers: a fixture)

MAX_WRONG_TOKENS = 10  # SignInTokens.maxWrongTokens


def token_of(url: str) -> str:
    fragment = urllib.parse.urlsplit(url).fragment
    assert re.fullmatch(r"signin=[0-9a-f]{32}", fragment), url
    return fragment.partition("=")[2]


def exchange(receiver, token: str, session: requests.Session | None = None, **headers) -> tuple[requests.Session,
                                                                                              requests.Response]:
    """The drop page's `POST /_photos/api/signin`, as a browser sends it (its own `Origin`)."""
    s = session or requests.Session()
    sent = {"Origin": receiver.base, **headers}
    r = s.post(f"{receiver.base}/_photos/api/signin", json={"token": token},
               headers={k: v for k, v in sent.items() if v is not None})
    return s, r


def uploads(receiver) -> str:
    return f"{receiver.base}/_photos/api/db/{urllib.parse.quote(receiver.db)}/uploads"


def send(receiver, s: requests.Session, name: str, data: bytes) -> int:
    """A whole upload from the drop page's session: the status of the create, else of the send."""
    origin = {"Origin": receiver.base}
    r = s.post(uploads(receiver), headers=origin, params={
        "name": name, "type": "image/jpeg", "length": str(len(data)), "sha256": hashlib.sha256(data).hexdigest()})
    if r.status_code != 201:
        return r.status_code
    r = s.put(f"{uploads(receiver)}/{r.json()['id']}", data=data,
              headers={**origin, "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"})
    return r.status_code


def next_token(receiver, used: str, timeout: float = 10) -> str:
    """The token the session shows after `used` signed a browser in (it says so on its human stream, the log)."""
    deadline = time.monotonic() + timeout
    while True:
        found = re.findall(r"#signin=([0-9a-f]{32})", receiver.log_text())
        if found and found[-1] != used:
            return found[-1]
        assert time.monotonic() < deadline, receiver.log_tail()
        time.sleep(0.05)


def test_phone_qr_code_opens_the_drop_page_with_a_token_in_the_fragment_only(receivers, tmp_path):
    png = str(tmp_path / "phone.png")
    receiver = receivers("--qr-png", png)
    info = receiver.start()
    url = info["signin_url"]
    parts = urllib.parse.urlsplit(url)
    assert "@" not in parts.netloc and parts.username is None, "never credentials in the authority"
    assert parts.path == "/_photos/" and parts.query == ""
    token_of(url)
    assert info["qr_url"] == url and zbar(png) == url
    assert "#" not in info["url"] and info["app_url"] == info["url"], "the apps' URL is as before"


def test_token_exchange_sets_a_strict_httponly_drop_session_cookie(receivers, tmp_path):
    png = str(tmp_path / "phone.png")
    receiver = receivers("--qr-png", png, "--ttl", "10m", "--log-level", "info")
    info = receiver.start()
    token = token_of(info["signin_url"])
    s, r = exchange(receiver, token)
    assert r.status_code == 200, r.text
    reply = r.json()
    assert reply["ok"] is True and reply["name"] == info["user"] and reply["db"] == receiver.db
    assert reply["expires"] == info["expires"]
    cookie = r.headers["Set-Cookie"]
    assert cookie.startswith("AuthSession=")
    for attribute in ("HttpOnly", "SameSite=Strict", "Path=/"):
        assert attribute in cookie.split("; "), cookie
    assert "Secure" not in cookie.split("; "), "plain HTTP: a Secure cookie would never come back"
    max_age = int(re.search(r"Max-Age=(\d+)", cookie).group(1))
    assert 590 <= max_age <= 600, f"the cookie lives as long as the session (10 min), not {max_age} s"
    assert r.headers["Cache-Control"] == "no-store"
    assert s.get(f"{receiver.base}/_session").json()["userCtx"] == {"name": info["user"], "roles": []}
    # Signed in, no typing: the page's session sends a photo, and it lands in the folder.
    data = photo("jpg", 50_000, random.Random(36))
    assert send(receiver, s, "scanned.jpg", data) == 201
    assert wait_for_files(receiver.out, 1) == ["scanned.jpg"]
    # The next phone gets a new code, on the screen and in --qr-png.
    following = next_token(receiver, token)
    assert zbar(png) == info["signin_url"].replace(token, following)
    # The request lines are logged at info: the token was in none of them (it travels in the fragment and the body).
    assert "/_photos/api/signin" in receiver.log_text()
    assert token not in receiver.log_text()


def test_token_reuse_is_refused(receivers):
    receiver = receivers()
    info = receiver.start()
    token = token_of(info["signin_url"])
    _, first = exchange(receiver, token)
    assert first.status_code == 200, first.text
    # The same link in a second browser (or a photo of the screen): refused as used, and no cookie.
    for _ in range(MAX_WRONG_TOKENS + 2):
        second, r = exchange(receiver, token)
        assert r.status_code == 401, r.text
        assert r.json()["error"] == "unauthorized" and "already" in r.json()["reason"]
        assert "AuthSession=" not in r.headers.get("Set-Cookie", "")
        assert second.get(f"{receiver.base}/_session").json()["userCtx"]["name"] is None
        assert send(receiver, second, "reused.jpg", photo("jpg", 1000, random.Random(1))) in (401, 403)
    # Replays are not guesses: the next code still signs the next phone in.
    _, r = exchange(receiver, next_token(receiver, token))
    assert r.status_code == 200, r.text


def test_token_guessing_is_bounded(receivers):
    receiver = receivers()
    info = receiver.start()
    rng = random.Random(99)
    for n in range(1, MAX_WRONG_TOKENS):
        _, r = exchange(receiver, "%032x" % rng.getrandbits(128))
        assert r.status_code == 401, r.text
    _, r = exchange(receiver, "%032x" % rng.getrandbits(128))
    assert r.status_code == 403 and "Too many" in r.json()["reason"], r.text
    # Bounded, not slowed: the right token does not work any more either...
    _, r = exchange(receiver, token_of(info["signin_url"]))
    assert r.status_code == 403, r.text
    receiver.wait_for_log("no longer signs phones in")
    # ...while the typed credentials still do (the receiver said so).
    assert receiver.session().get(f"{receiver.base}/{receiver.db}").status_code == 200
    # Malformed tokens cannot match and are not counted; an oversized body is refused unread.
    _, r = exchange(receiver, "not a token")
    assert r.status_code == 400, r.text
    r = requests.post(f"{receiver.base}/_photos/api/signin", data=b'{"token":"' + b"a" * 100_000 + b'"}',
                      headers={"Origin": receiver.base, "Content-Type": "application/json"})
    assert r.status_code == 413, r.text


def test_token_exchange_from_another_origin_is_refused(receivers):
    receiver = receivers()
    info = receiver.start()
    token = token_of(info["signin_url"])
    for headers in ({"Origin": "http://evil.example"}, {"Origin": None}, {"Sec-Fetch-Site": "cross-site"}):
        _, r = exchange(receiver, token, **headers)
        assert r.status_code == 403, (headers, r.text)
        assert "AuthSession=" not in r.headers.get("Set-Cookie", "")
    # A form post (what a page elsewhere can send without CORS) is not JSON.
    r = requests.post(f"{receiver.base}/_photos/api/signin", data={"token": token}, headers={"Origin": receiver.base})
    assert r.status_code == 415, r.text
    # None of these spent the token.
    _, r = exchange(receiver, token)
    assert r.status_code == 200, r.text


def test_signin_cookie_used_on_another_database_is_refused(receivers):
    """The cookie permits exactly what the drop credentials permit: every request gets the same status with the
    cookie as with the one-time name and password (Basic), and what they may not do is refused."""
    receiver = receivers()
    info = receiver.start()
    admin, base, db = receiver.admin(), receiver.base, receiver.db
    assert admin.put(f"{base}/other").status_code == 201
    assert admin.put(f"{base}/other/secret", json={"x": 1}).status_code == 201
    # The drop answers a write to someone else's document as if it were absent and remembers what it acknowledged,
    # so each way of signing in is tried on an owner's document of its own.
    for who in ("cookie", "basic"):
        assert admin.put(f"{base}/{db}/owners-{who}", json={"mine": True}).status_code == 201
    cookie, r = exchange(receiver, token_of(info["signin_url"]))
    assert r.status_code == 200, r.text
    basic = receiver.session()
    origin = {"Origin": base}
    requests_to_try = [
        ("GET", "/other", {}), ("GET", "/other/secret", {}), ("PUT", "/other/mine", {"json": {"a": 1}}),
        ("GET", "/other/_all_docs", {}), ("PUT", "/third", {}), ("DELETE", f"/{db}", {}),
        ("GET", f"/{db}/{{owner}}", {}), ("GET", f"/{db}/_all_docs", {}), ("GET", f"/{db}/_changes", {}),
        ("PUT", f"/{db}/_security", {"json": {}}), ("PUT", f"/{db}/_design/x", {"json": {"views": {}}}),
        ("PUT", f"/{db}/{{owner}}", {"json": {"taken": True}}), ("GET", "/_all_dbs", {}),
        ("GET", "/_photos/api/db/other/photos", {}), ("GET", f"/_photos/api/db/{db}/photos", {}),
        ("POST", "/_photos/api/db/other/uploads?name=a.jpg&length=1&sha256=" + "0" * 64, {}),
        ("DELETE", f"/_photos/api/db/{db}/doc/{{owner}}", {}), ("GET", f"/{db}", {}),
    ]
    for method, path, kw in requests_to_try:
        with_cookie = cookie.request(method, base + path.format(owner="owners-cookie"), headers=origin,
                                     **kw).status_code
        with_basic = basic.request(method, base + path.format(owner="owners-basic"), headers=origin, **kw).status_code
        assert with_cookie == with_basic, (method, path, with_cookie, with_basic)
        if path.startswith("/other") or "/other/" in path or path in ("/third", "/_all_dbs"):
            assert with_cookie in (401, 403), (method, path, with_cookie)
    for who in ("cookie", "basic"):
        assert admin.get(f"{base}/{db}/owners-{who}").json() == {
            "_id": f"owners-{who}", "_rev": admin.get(f"{base}/{db}/owners-{who}").json()["_rev"], "mine": True}
    assert admin.get(f"{base}/other/mine").status_code == 404


def test_signin_cookie_is_held_to_the_drops_quota(receivers):
    receiver = receivers("--max-size", "300k")
    info = receiver.start()
    s, r = exchange(receiver, token_of(info["signin_url"]))
    assert r.status_code == 200, r.text
    rng = random.Random(7)
    assert send(receiver, s, "too big.jpg", photo("jpg", 400_000, rng)) == 507
    assert send(receiver, s, "fits.jpg", photo("jpg", 200_000, rng)) == 201
    assert send(receiver, s, "second.jpg", photo("jpg", 200_000, rng)) == 507
    assert wait_for_files(receiver.out, 1) == ["fits.jpg"]


def test_signin_cookie_after_receive_ends_is_refused(receivers):
    receiver = receivers("--ttl", "4s")
    info = receiver.start()
    s, r = exchange(receiver, token_of(info["signin_url"]))
    assert r.status_code == 200, r.text
    assert s.get(f"{receiver.base}/_session").json()["userCtx"]["name"] == info["user"]
    receiver.wait_for_log("session ended")
    # The server still answers for a moment (so senders get a definite answer): the cookie gets nothing.
    assert s.get(f"{receiver.base}/_session").json()["userCtx"]["name"] is None
    assert send(receiver, s, "late.jpg", photo("jpg", 1000, random.Random(2))) in (401, 403)
    _, r = exchange(receiver, next_token(receiver, ""))
    assert r.status_code == 401 and "over" in r.json()["reason"], r.text
