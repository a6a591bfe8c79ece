"""Attacks through attachments and request bodies (issue 18, items 2 and 3), over real HTTP.

`Content-Security-Policy: sandbox` on attachment responses is CouchDB 3.4's default
(`[csp] attachments_enable = true`, `attachments_header_value = sandbox`, chttpd_db.erl), so those checks
run against any server. `X-Content-Type-Options: nosniff`, the anonymous body cap and the bulk count are
couchlite's own hardening (CouchDB reads such bodies) and are skipped elsewhere.
"""

import json
import socket
import urllib.parse

import pytest
import requests

HTML = b"<!doctype html><script>fetch('/_session').then(r=>r.text()).then(t=>alert(t))</script>"
SVG = (b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(document.cookie)">'
       b"<script>alert(1)</script></svg>")


@pytest.fixture(scope="module")
def is_couchlite(couch):
    return couch.get("/").json().get("vendor", {}).get("name") == "couchlite"


@pytest.fixture(scope="module")
def couchlite_only(is_couchlite):
    if not is_couchlite:
        pytest.skip("couchlite hardening beyond CouchDB's defaults")


def assert_sandboxed(response, is_couchlite):
    assert response.headers.get("Content-Security-Policy") == "sandbox", dict(response.headers)
    if is_couchlite:
        assert response.headers.get("X-Content-Type-Options") == "nosniff", dict(response.headers)


def test_stored_xss_attachment_html_and_svg_served_sandboxed(couch, db, is_couchlite):
    rev = couch.put(f"/{db}/page", json={"title": "x"}).json()["rev"]
    for name, body, ctype in [("evil.html", HTML, "text/html"), ("evil.svg", SVG, "image/svg+xml"),
                              ("untyped", HTML, None)]:
        headers = {"Content-Type": ctype} if ctype else {}
        r = couch.put(f"/{db}/page/{name}?rev={rev}", data=body, headers=headers)
        assert r.status_code == 201, r.text
        rev = r.json()["rev"]
    for name in ["evil.html", "evil.svg", "untyped"]:
        r = couch.get(f"/{db}/page/{name}", headers={"Accept": "text/html,*/*"})
        assert r.status_code == 200
        assert r.content in (HTML, SVG)
        assert_sandboxed(r, is_couchlite)
    # Other ways the same bytes come back from a browsable URL: a range, HEAD, a design document's attachment.
    # (CouchDB stores text/html gzip-compressed and ignores ranges on it; the untyped one is stored as sent.)
    r = couch.get(f"/{db}/page/untyped", headers={"Range": "bytes=0-9"})
    assert r.status_code == 206
    assert_sandboxed(r, is_couchlite)
    r = couch.head(f"/{db}/page/evil.svg")
    assert r.status_code == 200
    assert_sandboxed(r, is_couchlite)
    r = couch.put(f"/{db}/_design/app/index.html", data=HTML, headers={"Content-Type": "text/html"})
    assert r.status_code == 201, r.text
    r = couch.get(f"/{db}/_design/app/index.html")
    assert r.status_code == 200
    assert_sandboxed(r, is_couchlite)
    # Plain documents are not sandboxed (CouchDB's chttpd_csp_tests: plain_docs_not_sandboxed).
    r = couch.get(f"/{db}/page")
    assert r.status_code == 200 and "Content-Security-Policy" not in r.headers


def test_stored_xss_attachment_in_multipart_document_response_is_nosniff(couch, db, couchlite_only):
    rev = couch.put(f"/{db}/page", json={"title": "x"}).json()["rev"]
    assert couch.put(f"/{db}/page/evil.html?rev={rev}", data=HTML,
                     headers={"Content-Type": "text/html"}).status_code == 201
    r = couch.get(f"/{db}/page?attachments=true", headers={"Accept": "multipart/related"})
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("multipart/related")
    assert r.headers.get("X-Content-Type-Options") == "nosniff"
    assert r.headers.get("Content-Security-Policy") == "sandbox"


def anonymous_head_only(couch, path, length):
    """Sends only the head of an anonymous POST; returns (status, body) of the answer."""
    parts = urllib.parse.urlsplit(couch.base)
    with socket.create_connection((parts.hostname, parts.port or 80), timeout=5) as sock:
        sock.sendall((f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {length}\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            piece = sock.recv(65536)
            if not piece:
                break
            data += piece
        head, _, body = data.partition(b"\r\n\r\n")
        status = int(head.split(b" ")[1])
        length_line = [line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
        want = int(length_line[0].split(b":")[1]) if length_line else 0
        while len(body) < want:
            piece = sock.recv(65536)
            if not piece:
                break
            body += piece
        return status, json.loads(body)


def test_anonymous_64mib_body_is_refused_from_the_head(couch, db_factory, couchlite_only):
    public = db_factory("pub")
    security = {"admins": {"names": [], "roles": []}, "members": {"names": [], "roles": []}}
    assert couch.put(f"/{public}/_security", json=security).status_code == 200
    for path in ["/_users/_bulk_docs", f"/{public}/_bulk_docs", f"/{public}/doc"]:
        status, body = anonymous_head_only(couch, path, 64 * 1024 * 1024)
        assert status in (401, 403, 413), (path, status, body)
        assert body["error"] in ("unauthorized", "forbidden", "too_large")
    # A small anonymous write to a public database still works.
    r = requests.post(couch.url(f"/{public}"), json={"small": True}, timeout=10)
    assert r.status_code in (201, 202), r.text


def test_bulk_docs_with_too_many_documents_is_413(couch, db, couchlite_only):
    body = b'{"docs":[' + b",".join([b"{}"] * 100_001) + b"]}"
    r = couch.post(f"/{db}/_bulk_docs", data=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and r.json()["error"] == "too_large", r.text[:200]
    assert couch.get(f"/{db}").json()["doc_count"] == 0


def test_json_flood_of_tiny_arrays_is_413(couch, db, couchlite_only):
    # 12 MiB of one-element arrays would hold about 27 times its size once parsed.
    item = b"[0]"
    body = b'{"docs":[{"a":[' + b",".join([item] * (12 * 1024 * 1024 // 4)) + b"]}]}"
    r = couch.post(f"/{db}/_bulk_docs", data=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and r.json()["error"] == "too_large", r.text[:200]
