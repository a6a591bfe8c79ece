"""Our replicator reads a CouchDB 3.4.3 source the way CouchDB's own replicator does (issue 13).

A fake source replays what CouchDB 3.4.3 answered in conformance/transcripts/couchdb-3.4.3-pull.jsonl
(the database info, the `_changes` feed with CouchDB's opaque `"N-g1AAAA…"` sequences, `_bulk_get`
documents and the `open_revs` `multipart/mixed` bodies, byte for byte). `couchlite replicate` pulls
from it into a couchlite server; then every revision CouchDB served must be on the target with the
same body, `_revisions` and attachment bytes, and every request our replicator sent must be one
CouchDB's replicator sends too (same endpoints, same query flags, `Accept: multipart/mixed` for
`open_revs`, nothing written to the source but its `_local` checkpoint).
"""

from __future__ import annotations

import base64
import email.parser
import gzip
import hashlib
import http.server
import json
import os
import subprocess
import threading
import urllib.parse

import requests

TRANSCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "transcripts",
                          "couchdb-3.4.3-pull.jsonl")


def load():
    rows = [json.loads(line) for line in open(TRANSCRIPT)]
    rows = [r for r in rows if not r["req_headers"].get("User-Agent", "").startswith("Python")]
    info = changes = None
    docs: dict[tuple[str, str], dict] = {}
    open_revs: dict[tuple[str, str], tuple[str, bytes]] = {}
    for r in rows:
        path, _, query = r["path"].partition("?")
        body = r.get("resp_body") or {}
        raw = base64.b64decode(body["base64"]) if "base64" in body else body.get("text", "").encode()
        if r["method"] == "GET" and path == "/photos/":
            info = raw
        elif path == "/photos/_changes":
            changes = raw
        elif path == "/photos/_bulk_get":
            for result in json.loads(raw)["results"]:
                for d in result["docs"]:
                    if "ok" in d:
                        docs[(d["ok"]["_id"], d["ok"]["_rev"])] = d["ok"]
        elif "open_revs=" in query:
            doc_id = urllib.parse.unquote(path[len("/photos/"):])
            rev = json.loads(urllib.parse.parse_qs(query)["open_revs"][0])[0]
            open_revs[(doc_id, rev)] = (r["resp_headers"]["Content-Type"], raw)
    return info, changes, docs, open_revs


class FakeCouchDB:
    def __init__(self):
        self.info, self.changes, self.docs, self.open_revs = load()
        rows = [json.loads(line) for line in open(TRANSCRIPT)]
        self.cookie_header = next(r["resp_headers"]["Set-Cookie"] for r in rows if r["path"] == "/_session")
        self.log: list[tuple[str, str, dict, bytes]] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def reply(self, status, body: bytes, content_type="application/json"):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Server", "CouchDB/3.4.3 (Erlang OTP/25)")
                self.end_headers()
                self.wfile.write(body)

            def handle_any(self):
                length = int(self.headers.get("Content-Length") or 0)
                if self.headers.get("Transfer-Encoding") == "chunked":
                    raise AssertionError("a chunked request to the source")
                body = self.rfile.read(length) if length else b""
                fake.log.append((self.command, self.path, dict(self.headers), body))
                path, _, query = self.path.partition("?")
                params = urllib.parse.parse_qs(query)
                if path == "/_session" and self.command == "POST":
                    # What CouchDB answered the CouchDB replicator's login in the transcript.
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Set-Cookie", fake.cookie_header)
                    payload = b'{"ok":true,"name":"admin","roles":["_admin"]}'
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if path in ("/photos", "/photos/") and self.command == "GET":
                    return self.reply(200, fake.info)
                if path.startswith("/photos/_local/"):
                    if self.command == "GET":
                        return self.reply(404, b'{"error":"not_found","reason":"missing"}')
                    doc_id = urllib.parse.unquote(path[len("/photos/"):])
                    return self.reply(201, json.dumps({"ok": True, "id": doc_id, "rev": "0-1"}).encode())
                if path == "/photos/_changes":
                    if params.get("since", ["0"])[0] == "0":
                        return self.reply(200, fake.changes)
                    last = json.loads(fake.changes)["last_seq"]
                    return self.reply(200, json.dumps({"results": [], "last_seq": last, "pending": 0}).encode())
                if path == "/photos/_bulk_get" and self.command == "POST":
                    results = []
                    for ask in json.loads(body)["docs"]:
                        doc = fake.docs.get((ask["id"], ask["rev"]))
                        entry = {"ok": doc} if doc else {"error": {"id": ask["id"], "rev": ask["rev"],
                                                                   "error": "not_found", "reason": "missing"}}
                        results.append({"id": ask["id"], "docs": [entry]})
                    return self.reply(200, json.dumps({"results": results}).encode())
                if "open_revs" in params and self.command == "GET":
                    doc_id = urllib.parse.unquote(path[len("/photos/"):])
                    rev = json.loads(params["open_revs"][0])[0]
                    if (doc_id, rev) in fake.open_revs:
                        content_type, raw = fake.open_revs[(doc_id, rev)]
                        return self.reply(200, raw, content_type)
                    doc = fake.docs.get((doc_id, rev))
                    if doc and "_attachments" not in doc:
                        return self.reply(200, json.dumps([{"ok": doc}]).encode())
                return self.reply(404, b'{"error":"not_found","reason":"missing"}')

            do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = handle_any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def multipart_docs(content_type: str, raw: bytes):
    """(doc JSON, {attachment name: bytes}) for each revision in an open_revs multipart body."""
    message = email.parser.BytesParser().parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    out = []
    for part in message.get_payload():
        if part.get_content_type() == "multipart/related":
            inner = part.get_payload()
            doc = json.loads(inner[0].get_payload(decode=True))
            atts = {p.get_filename(): p.get_payload(decode=True) for p in inner[1:]}
            out.append((doc, atts))
        else:
            out.append((json.loads(part.get_payload(decode=True)), {}))
    return out


def test_couchlite_replicator_pulls_a_couchdb_source_like_couchdbs_replicator(servers):
    target = servers("target")
    fake = FakeCouchDB()
    try:
        binary = os.environ["COUCHLITE_BIN"]
        out = subprocess.run([binary, "replicate", f"http://admin:pass@127.0.0.1:{fake.port}/photos",
                              f"{target.url}/pulled", "--create-target"], capture_output=True, timeout=120)
    finally:
        fake.close()
    assert out.returncode == 0, out.stderr.decode()
    result = json.loads(out.stdout)
    assert result["source_last_seq"] == json.loads(fake.changes)["last_seq"], "the opaque seq was not kept as is"

    # What was asked of the source: only what CouchDB's replicator asks. It logs in first (form-encoded,
    # as CouchDB's replicator does) and then sends the session cookie instead of the password.
    assert fake.log[0][0:2] == ("POST", "/_session"), fake.log[0]
    assert fake.log[0][2]["Content-Type"] == "application/x-www-form-urlencoded"
    assert fake.log[0][3] == b"name=admin&password=pass"
    cookie = fake.cookie_header.split(";")[0]
    for method, path, headers, body in fake.log[1:]:
        assert headers.get("Cookie") == cookie and "Authorization" not in headers, (path, headers)
    for method, path, headers, body in fake.log[1:]:
        bare, _, query = path.partition("?")
        params = urllib.parse.parse_qs(query)
        assert headers.get("Accept") in ("application/json", "multipart/mixed"), (path, headers)
        if method != "GET":
            assert (method, bare) in (("POST", "/photos/_bulk_get"),) or bare.startswith("/photos/_local/"), path
        if bare == "/photos/_changes":
            assert params["style"] == ["all_docs"] and params["feed"] == ["normal"], path
        if bare == "/photos/_bulk_get":
            assert {k: v[0] for k, v in params.items()} == {"latest": "true", "revs": "true", "attachments": "false"}
        if "open_revs" in params:
            assert params["revs"] == ["true"] and params["latest"] == ["true"], path
            assert headers["Accept"] == "multipart/mixed", headers
    kinds = {p.partition("?")[0].split("/")[2] if p.count("/") > 1 else "" for _, p, _, _ in fake.log}
    assert {"_changes", "_bulk_get", "_local"} <= kinds, kinds
    assert sum("open_revs=" in p for _, p, _, _ in fake.log) >= 6, "documents with attachments were not refetched"

    # Everything CouchDB served is on the target, exactly.
    s = requests.Session()
    expected = dict(fake.docs)
    attachments = {}
    for (doc_id, rev), (content_type, raw) in fake.open_revs.items():
        for doc, atts in multipart_docs(content_type, raw):
            expected[(doc["_id"], doc["_rev"])] = doc
            for name, data in atts.items():
                attachments[(doc["_id"], doc["_rev"], name)] = data
    assert len(expected) >= 30
    for (doc_id, rev), doc in expected.items():
        got = s.get(f"{target.url}/pulled/{urllib.parse.quote(doc_id, safe='')}",
                    params={"rev": rev, "revs": "true"})
        assert got.status_code == 200, (doc_id, rev, got.text)
        mine = got.json()
        for key in set(doc) | set(mine):
            if key == "_attachments":
                continue
            assert mine.get(key) == doc.get(key), (doc_id, key, mine.get(key), doc.get(key))
        for name, stub in (doc.get("_attachments") or {}).items():
            assert mine["_attachments"][name]["digest"] == stub["digest"], (doc_id, name)
            assert mine["_attachments"][name]["length"] == stub["length"], (doc_id, name)
    for (doc_id, rev, name), data in attachments.items():
        stub = expected[(doc_id, rev)]["_attachments"][name]
        # CouchDB's digest of a gzip-stored attachment is the md5 of the bytes as stored (encoded).
        assert "md5-" + base64.b64encode(hashlib.md5(data).digest()).decode() == stub["digest"]
        if stub.get("encoding") == "gzip":
            # CouchDB sends text attachments as it stores them, gzipped; the target must have decoded them.
            assert len(data) == stub["encoded_length"]
            data = gzip.decompress(data)
        got = s.get(f"{target.url}/pulled/{urllib.parse.quote(doc_id, safe='')}/{urllib.parse.quote(name)}",
                    params={"rev": rev})
        assert got.content == data, (doc_id, name)
