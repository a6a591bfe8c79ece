"""A clustered CouchDB 3.4.3 database, faked in memory, for replication tests without a cluster (issue 28).

One database (`/db`) that answers the requests a replicator makes the way a three-node cluster (q=2, n=3)
does, including what differs from a single node:

- sequences are opaque strings (`"<n>-g1AAAA…"`) whose leading number means nothing to a client: it is not
  monotonic, so a replicator that parses or compares it goes wrong; `update_seq` in `GET /db` is one too, and
  `instance_start_time` is `"0"`;
- a `since` the cluster cannot place (a sequence from before a shard copy was replaced) rewinds to the
  beginning, so replayed rows arrive again;
- while a node restarts, requests answer `500 {"error":"nodedown"}` / `503` for a while, writes that reach
  fewer copies than the write quorum answer `202 Accepted` (`_bulk_docs`, a document `PUT`, a `_local`
  checkpoint), and a checkpoint write can meet a `409` from a copy that missed the last update;
- `_bulk_get` served by a copy that lags answers `not_found` for a revision `_changes` just listed.

Faults are queued per request kind (`fake.inject("_bulk_docs", 500, 500)`): each request of that kind takes the
next queued status first; a 2xx status in the queue changes only the status of the honest answer (202).
Every request is logged as (method, path with query). Documents are stored as CouchDB stores them: each
revision with its `_revisions`, attachments as bytes with their md5 digest.
"""

from __future__ import annotations

import base64
import email.parser
import hashlib
import http.server
import json
import os
import threading
import urllib.parse

DB = "db"


def md5_digest(data: bytes) -> str:
    return "md5-" + base64.b64encode(hashlib.md5(data).digest()).decode()


class FakeCluster:
    def __init__(self):
        self.revs: dict[tuple[str, str], dict] = {}        # (id, rev) -> doc with _revisions, stub attachments
        self.bytes: dict[tuple[str, str, str], bytes] = {}  # (id, rev, attachment) -> bytes
        self.local: dict[str, dict] = {}
        self.order: list[str] = []                          # doc ids, least recently changed first
        self.seq_of: dict[str, str] = {}                    # doc id -> its current opaque sequence
        self.position: dict[str, int] = {}                  # every opaque sequence handed out -> its position
        self.counter = 0
        self.faults: dict[str, list[int]] = {}
        self.lagging: set[tuple[str, str]] = set()          # (id, rev) `_bulk_get` answers not_found once
        self.forgotten: set[str] = set()                    # sequences the cluster can no longer place
        self.log: list[tuple[str, str]] = []
        self.lock = threading.RLock()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{DB}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def inject(self, kind: str, *statuses: int) -> None:
        with self.lock:
            self.faults.setdefault(kind, []).extend(statuses)

    # --- the database ---------------------------------------------------------------------------------

    def next_seq(self) -> str:
        """An opaque clustered sequence: a meaningless, non-monotonic number and a random tail."""
        self.counter += 1
        seq = f"{(self.counter * 7919) % 997}-g1AAAA{base64.urlsafe_b64encode(os.urandom(36)).decode()}"
        self.position[seq] = self.counter
        return seq

    def store(self, doc: dict, attachments: dict[str, bytes] | None = None) -> None:
        """Stores one revision as given (`_revisions` included), as `new_edits=false` does."""
        with self.lock:
            doc = json.loads(json.dumps(doc))
            doc_id, rev = doc["_id"], doc["_rev"]
            for name, data in (attachments or {}).items():
                stub = doc["_attachments"][name]
                doc["_attachments"][name] = {"content_type": stub.get("content_type", "application/octet-stream"),
                                             "revpos": stub.get("revpos", int(rev.split("-")[0])),
                                             "digest": md5_digest(data), "length": len(data), "stub": True}
                self.bytes[(doc_id, rev, name)] = data
            for name, stub in (doc.get("_attachments") or {}).items():
                if not stub.get("stub"):
                    continue
                if (doc_id, rev, name) not in self.bytes:  # a stub for bytes an ancestor brought
                    previous = [k for k in self.bytes if k[0] == doc_id and k[2] == name
                                and self.bytes_digest(k) == stub.get("digest")]
                    if previous:
                        self.bytes[(doc_id, rev, name)] = self.bytes[previous[0]]
            self.revs[(doc_id, rev)] = doc
            if doc_id in self.order:
                self.order.remove(doc_id)
            self.order.append(doc_id)
            self.seq_of[doc_id] = self.next_seq()

    def bytes_digest(self, key) -> str:
        return md5_digest(self.bytes[key])

    def add(self, doc_id: str, body: dict, parent: str | None = None, attachments: dict[str, bytes] | None = None,
            tag: str = "") -> str:
        """Writes a new revision of `doc_id` on top of `parent` (a conflict when parent is not the leaf)."""
        with self.lock:
            ancestry = self.revs[(doc_id, parent)]["_revisions"] if parent else {"start": 0, "ids": []}
            generation = ancestry["start"] + 1
            rev_hash = hashlib.md5(f"{doc_id}{parent}{tag}{json.dumps(body)}".encode()).hexdigest()
            doc = dict(body, _id=doc_id, _rev=f"{generation}-{rev_hash}",
                       _revisions={"start": generation, "ids": [rev_hash] + ancestry["ids"]})
            if attachments:
                doc["_attachments"] = {n: {"content_type": "image/jpeg", "revpos": generation}
                                       for n in attachments}
            self.store(doc, attachments)
            return doc["_rev"]

    def leaves(self, doc_id: str) -> list[str]:
        with self.lock:
            revs = [rev for (i, rev) in self.revs if i == doc_id]
            inner = set()
            for rev in revs:
                history = self.revs[(doc_id, rev)]["_revisions"]
                inner.update(f"{history['start'] - k}-{h}" for k, h in enumerate(history["ids"]) if k > 0)
            return sorted(r for r in revs if r not in inner)

    def update_seq(self) -> str:
        with self.lock:
            return self.seq_of[self.order[-1]] if self.order else "0"

    # --- HTTP -----------------------------------------------------------------------------------------

    def handler(self):
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def reply(self, status: int, body, content_type: str = "application/json") -> None:
                raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(raw)))
                self.send_header("Server", "CouchDB/3.4.3 (Erlang OTP/25)")
                self.end_headers()
                self.wfile.write(raw)

            def read_body(self) -> bytes:
                """The request body, `Content-Length` or chunked (the replicator streams multipart PUTs)."""
                if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                    length = int(self.headers.get("Content-Length") or 0)
                    return self.rfile.read(length) if length else b""
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()

            def handle_any(self):
                body = self.read_body()
                path, _, query = self.path.partition("?")
                params = {k: v[0] for k, v in urllib.parse.parse_qs(query).items()}
                with fake.lock:
                    fake.log.append((self.command, self.path))
                kind = fake.kind(self.command, path, params)
                with fake.lock:
                    queued = fake.faults.get(kind) or []
                    status = queued.pop(0) if queued else None
                if status is not None and status >= 300:
                    error = {409: "conflict", 503: "service_unavailable"}.get(status, "nodedown")
                    return self.reply(status, {"error": error, "reason": "progress not possible"})
                answer = fake.answer(self.command, path, params, body, self.headers)
                status_out, payload = answer[0], answer[1]
                if status is not None and status_out < 300:
                    status_out = status
                self.reply(status_out, payload, *answer[2:])

            do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = handle_any

        return Handler

    @staticmethod
    def kind(method: str, path: str, params: dict) -> str:
        parts = path.strip("/").split("/")
        if len(parts) == 1:
            return f"{method} db"
        if parts[1] == "_local":
            return f"{method} _local"
        if parts[1].startswith("_"):
            return parts[1]
        return f"{method} doc"

    def answer(self, method: str, path: str, params: dict, body: bytes, headers):
        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
        if parts[0] != DB:
            return 404, {"error": "not_found", "reason": "Database does not exist."}
        if len(parts) == 1:
            if method == "PUT":
                return 412, {"error": "file_exists", "reason": "The database could not be created."}
            with self.lock:
                return 200, {"db_name": DB, "update_seq": self.update_seq(), "purge_seq": "0-g1AAAAB",
                             "doc_count": len(self.order), "doc_del_count": 0, "instance_start_time": "0",
                             "compact_running": False, "disk_format_version": 8,
                             "sizes": {"file": 1, "external": 1, "active": 1},
                             "props": {}, "cluster": {"q": 2, "n": 3, "w": 2, "r": 2}}
        if parts[1] == "_local":
            return self.local_doc(method, "/".join(parts[1:]), body)
        name = parts[1]
        if name == "_changes":
            return 200, self.changes(params)
        if name == "_revs_diff":
            return 200, self.revs_diff(json.loads(body))
        if name == "_bulk_get":
            return 200, self.bulk_get(json.loads(body))
        if name == "_bulk_docs":
            request = json.loads(body)
            assert request.get("new_edits") is False, request
            for doc in request["docs"]:
                self.store(doc)
            return 201, []
        if name == "_ensure_full_commit":
            return 201, {"ok": True, "instance_start_time": "0"}
        doc_id = "/".join(parts[1:3]) if name == "_design" else name
        if method == "GET" and "open_revs" in params:
            return self.open_revs(doc_id, json.loads(params["open_revs"]))
        if method == "PUT" and params.get("new_edits") == "false":
            doc, attachments = self.read_put(body, headers.get("Content-Type", ""))
            self.store(doc, attachments)
            return 201, {"ok": True, "id": doc_id, "rev": doc["_rev"]}
        return 404, {"error": "not_found", "reason": "missing"}

    def local_doc(self, method: str, doc_id: str, body: bytes):
        with self.lock:
            current = self.local.get(doc_id)
            if method == "GET":
                return (200, current) if current else (404, {"error": "not_found", "reason": "missing"})
            doc = json.loads(body)
            if current and doc.get("_rev") != current["_rev"]:
                return 409, {"error": "conflict", "reason": "Document update conflict."}
            number = int(current["_rev"].split("-")[1]) + 1 if current else 1
            doc["_rev"] = f"0-{number}"
            self.local[doc_id] = doc
            return 201, {"ok": True, "id": doc_id, "rev": doc["_rev"]}

    def changes(self, params: dict) -> dict:
        with self.lock:
            since = params.get("since", "0")
            # A sequence it cannot place: from the beginning.
            start = 0 if since in self.forgotten else self.position.get(since, 0)
            rows = sorted(((self.position[self.seq_of[i]], i) for i in self.order), key=lambda x: x[0])
            rows = [(pos, i) for pos, i in rows if pos > start][: int(params.get("limit", 10 ** 9))]
            results = [{"seq": self.seq_of[i], "id": i, "changes": [{"rev": r} for r in self.leaves(i)]}
                       for _, i in rows]
            last = results[-1]["seq"] if results else (since if since in self.position else self.update_seq())
            remaining = sum(1 for i in self.order if self.position[self.seq_of[i]] > self.position.get(last, 0))
            return {"results": results, "last_seq": last, "pending": remaining}

    def revs_diff(self, asked: dict) -> dict:
        with self.lock:
            out = {}
            for doc_id, revs in asked.items():
                missing = [r for r in revs if (doc_id, r) not in self.revs]
                if missing:
                    out[doc_id] = {"missing": missing}
            return out

    def bulk_get(self, asked: dict) -> dict:
        results = []
        with self.lock:
            for ask in asked["docs"]:
                key = (ask["id"], ask["rev"])
                if key in self.lagging or key not in self.revs:
                    self.lagging.discard(key)
                    entry = {"error": {"id": ask["id"], "rev": ask["rev"], "error": "not_found", "reason": "missing"}}
                else:
                    entry = {"ok": self.revs[key]}
                results.append({"id": ask["id"], "docs": [entry]})
        return {"results": results}

    def open_revs(self, doc_id: str, revs: list[str]):
        """`multipart/mixed`, one `multipart/related` part per revision with attachments, as CouchDB sends."""
        outer = b"5e1a0c9d"
        chunks = []
        with self.lock:
            for rev in revs:
                doc = self.revs.get((doc_id, rev))
                if doc is None:
                    chunks.append(b"--" + outer + b'\r\nContent-Type: application/json; error="true"\r\n\r\n'
                                  + json.dumps({"missing": rev}).encode() + b"\r\n")
                    continue
                atts = doc.get("_attachments") or {}
                if not atts:
                    chunks.append(b"--" + outer + b"\r\nContent-Type: application/json\r\n\r\n"
                                  + json.dumps(doc).encode() + b"\r\n")
                    continue
                inner = b"7f3b2a11"
                sent = dict(doc, _attachments={n: dict({k: v for k, v in s.items() if k != "stub"}, follows=True)
                                               for n, s in atts.items()})
                part = [b"--" + inner + b"\r\nContent-Type: application/json\r\n\r\n" + json.dumps(sent).encode()]
                for name, stub in atts.items():
                    data = self.bytes[(doc_id, rev, name)]
                    part.append(b"\r\n--" + inner + f'\r\nContent-Disposition: attachment; filename="{name}"\r\n'
                                f"Content-Type: {stub['content_type']}\r\nContent-Length: {len(data)}\r\n\r\n"
                                .encode() + data)
                part.append(b"\r\n--" + inner + b"--")
                chunks.append(b"--" + outer + b'\r\nContent-Type: multipart/related; boundary="' + inner
                              + b'"\r\n\r\n' + b"".join(part) + b"\r\n")
        return 200, b"".join(chunks) + b"--" + outer + b"--", f'multipart/mixed; boundary="{outer.decode()}"'

    @staticmethod
    def read_put(body: bytes, content_type: str) -> tuple[dict, dict[str, bytes]]:
        """A `PUT ?new_edits=false`: JSON, or `multipart/related` with the JSON first and the bytes of each
        `follows` attachment after it, in the order the JSON names them."""
        if not content_type.startswith("multipart/related"):
            return json.loads(body), {}
        message = email.parser.BytesParser().parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n"
                                                        + body)
        parts = message.get_payload()
        doc = json.loads(parts[0].get_payload(decode=True))
        follows = [n for n, s in (doc.get("_attachments") or {}).items() if s.get("follows")]
        assert len(follows) == len(parts) - 1, (follows, len(parts))
        return doc, {name: part.get_payload(decode=True) for name, part in zip(follows, parts[1:])}
