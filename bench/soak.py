#!/usr/bin/env python3
"""Soak workload (for leaks and slowdowns that only show over time): many concurrent clients for minutes, as a
photo server sees them.

Every client holds one keep-alive connection and repeats one role with a random think time
between operations (`--think` seconds on average); roles are dealt round-robin in these shares:

| role | share | one operation |
|---|---|---|
| push | 15 % | replicator-style push: `POST _revs_diff` for 1–3 new photo documents and 5 small ones, a multipart/related `PUT ?new_edits=false` per photo document (JSON part with `_revisions` and `_attachments … follows`, then the photo), `POST _bulk_docs new_edits=false` for the small ones, `PUT _local/` checkpoint |
| pull | 15 % | replicator-style pull: `GET _changes?style=all_docs&since=S&limit=50`, then `POST _bulk_get?revs=true&latest=true` for the rows |
| edit | 15 % | an app's own edits, each on a new document: `PUT /{db}/{doc}`, two updates with its `_rev`, then every third one `DELETE`d and the others kept; a `POST /{db}` and a `_bulk_docs` of one; the kept ones' last revs are checked at the end |
| longpoll | 15 % | `GET _changes?feed=longpoll&since=S&timeout=20000` (at most half the duration) |
| continuous | 10 % | `GET _changes?feed=continuous&since=now&heartbeat=5000` read line by line for 30 s (at most half the duration), then hang up, as a replicator restarting its feed does; a heartbeat overrides `timeout` (CouchDB's rule), so such a feed never ends by itself, and a silence longer than two heartbeats fails |
| read | 15 % | `GET /{db}/{doc}` of a random document written so far |
| range | 10 % | `GET /{db}/{doc}/photo.jpg` with `Range: bytes=a-b` of a random photo; 206, length checked, and the bytes themselves for the seeded photos |

Clients are spread over `--dbs` databases (one per user of a photo server). Photos are random
bytes (`--photo-kib`), fresh for every push, so every upload is written (no dedupe hits).

A request fails when it gets a transport error or times out, or when its status or body is not
what CouchDB answers (each check is in the role's code). At the end the driver checks that every
document a push had acknowledged is in its database. Reported: requests and failures per type,
5xx count, p50/p99 latency per type (request sent → whole answer read; for `continuous` the
time to the response head, as the feed then stays open until its timeout), the server's RSS and
open file descriptors sampled at start, every minute, when the clients are done and once more
after the clean-up ("after": what the server keeps once every client has gone), one JSON line at
the end.

    python3 bench/soak.py                                # release build, 2,000 clients, 300 s
    python3 bench/soak.py --server-bin .build/debug/couchlite --clients 50 --duration 10
    python3 bench/soak.py --url http://admin:pass@127.0.0.1:5984 [--pid PID]

Exit status: 0 when no request failed, no answer was a 5xx and no acknowledged document is
missing; 1 otherwise; 2 when the server could not be started. The RSS goal (minute 5 within
10 % of minute 1) is reported, not judged, because short runs have no minute 5.
Python 3 standard library only (asyncio); the server helpers come from bench/run.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _load_bench_run():
    """bench/run (no .py suffix) as a module: its Target, LocalServer and raise_fd_limit are reused."""
    loader = importlib.machinery.SourceFileLoader("bench_run", os.path.join(HERE, "run"))
    spec = importlib.util.spec_from_loader("bench_run", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


bench_run = _load_bench_run()

ROLES = [("push", 15), ("pull", 15), ("edit", 15), ("longpoll", 15), ("continuous", 10), ("read", 15), ("range", 10)]
SEED_PHOTOS_PER_DB = 10          # photos written before the clients start, kept in memory to check Range bytes
SMALL_DOCS_PER_PUSH = 5          # documents without attachments per push, sent with _bulk_docs
CHANGES_LIMIT = 50               # pull batch
LONGPOLL_TIMEOUT_MS = 20_000
CONTINUOUS_TIMEOUT_MS = 30_000
HEARTBEAT_MS = 5_000
REQUEST_TIMEOUT_S = 60           # one request, head to last byte (continuous: to its head)
FINISH_GRACE_S = 60              # after the duration, operations in flight may finish within this
RSS_INTERVAL_S = 60              # RSS and fd samples
AFTER_SETTLE_S = 3               # pause after the clean-up before the last sample
FD_HEADROOM = 512                # file descriptors beyond one per client


def log(msg):
    print(f"soak: {msg}", file=sys.stderr, flush=True)


class Failure(Exception):
    """An answer that is not what CouchDB gives (status, body), or a broken response."""


# --- A minimal HTTP/1.1 keep-alive client over asyncio streams -------------------------------


class Response:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError as e:
            raise Failure(f"{self.status} with a body that is not JSON: {self.body[:120]!r}") from e


class Connection:
    """One client's connection; reopened when the server closes it between requests."""

    def __init__(self, host, port, auth):
        self.host, self.port, self.auth = host, port, auth
        self.reader = self.writer = None
        self.reused = False

    async def _open(self):
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port, limit=1 << 20)
        self.reused = False

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    def _head(self, method, path, headers, body_length):
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", "Accept: application/json"]
        if self.auth:
            lines.append(f"Authorization: {self.auth}")
        for name, value in headers.items():
            lines.append(f"{name}: {value}")
        if body_length is not None:
            lines.append(f"Content-Length: {body_length}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    async def send(self, method, path, headers=None, body=None):
        """Sends a request and reads its head; returns (status, headers). A connection the server had
        closed while idle (no byte of an answer) is reopened once, as every HTTP client does."""
        head = self._head(method, path, headers or {}, None if body is None else len(body))
        for attempt in (0, 1):
            if self.writer is None:
                await self._open()
            try:
                self.writer.write(head)
                if body:
                    self.writer.write(body)
                await self.writer.drain()
                raw = await self.reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError) as e:
                stale = self.reused and (not isinstance(e, asyncio.IncompleteReadError) or not e.partial)
                self.close()
                if attempt == 0 and stale:
                    continue
                raise
            self.reused = True
            lines = raw.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ", 2)
            if len(parts) < 2 or not parts[1].isdigit():
                self.close()
                raise Failure(f"bad status line {lines[0]!r}")
            fields = {}
            for line in lines[1:]:
                if line:
                    name, _, value = line.partition(":")
                    fields[name.strip().lower()] = value.strip()
            return int(parts[1]), fields
        raise AssertionError("unreachable")

    async def read_body(self, status, fields, method):
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            data = b""
        elif "chunked" in fields.get("transfer-encoding", "").lower():
            pieces = []
            async for piece in self.chunks():
                pieces.append(piece)
            data = b"".join(pieces)
        elif "content-length" in fields:
            data = await self.reader.readexactly(int(fields["content-length"]))
        else:
            data = await self.reader.read()
            self.close()
            return data
        if fields.get("connection", "").lower() == "close":
            self.close()
        return data

    async def chunks(self):
        """The decoded chunks of a chunked body, as they arrive."""
        while True:
            size_line = await self.reader.readuntil(b"\r\n")
            size = int(size_line.split(b";", 1)[0].strip() or b"x", 16)
            if size == 0:
                while (await self.reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailers
                return
            piece = await self.reader.readexactly(size + 2)
            yield piece[:-2]

    async def request(self, method, path, headers=None, body=None):
        status, fields = await self.send(method, path, headers, body)
        return Response(status, fields, await self.read_body(status, fields, method))


# --- Statistics ----------------------------------------------------------------------------


class Stats:
    def __init__(self):
        self.latency = {}      # type -> [seconds]
        self.failures = {}     # type -> count
        self.samples = {}      # type -> first failure messages
        self.status_5xx = 0
        self.changes_rows = 0

    def ok(self, kind, seconds):
        self.latency.setdefault(kind, []).append(seconds)

    def fail(self, kind, message):
        self.failures[kind] = self.failures.get(kind, 0) + 1
        messages = self.samples.setdefault(kind, [])
        if len(messages) < 5:
            messages.append(message)
            # As it happens, with the time: failures that come in a burst point at one moment of the server's.
            log(f"failed {kind}: {message}")

    def summary(self):
        out = {}
        for kind in sorted(set(self.latency) | set(self.failures)):
            values = sorted(self.latency.get(kind, []))
            pick = (lambda q: round(1000 * values[min(len(values) - 1, int(q * len(values)))], 1)) \
                if values else (lambda q: None)
            out[kind] = {"requests": len(values) + self.failures.get(kind, 0),
                         "failed": self.failures.get(kind, 0), "p50_ms": pick(0.50), "p99_ms": pick(0.99)}
        return out


# --- The workload --------------------------------------------------------------------------


def dealt_roles():
    """The roles of 100 consecutive clients in their shares, interleaved (smooth weighted round-robin), so that
    any number of clients, even a few, gets every role in about its share."""
    credit = {name: 0 for name, _ in ROLES}
    order = []
    for _ in range(sum(share for _, share in ROLES)):
        for name, share in ROLES:
            credit[name] += share
        best = max(credit, key=credit.get)
        credit[best] -= sum(share for _, share in ROLES)
        order.append(best)
    return order


def client_cpu_s():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rev_hash():
    return "%032x" % random.getrandbits(128)


def md5_b64(data):
    return "md5-" + base64.b64encode(hashlib.md5(data).digest()).decode()


class Database:
    """What the clients know about one database: documents and photos written so far."""

    def __init__(self, name):
        self.name = name
        self.docs = []         # ids acknowledged (seeded or pushed)
        self.photos = []       # (id, length, bytes or None)
        self.edited = {}       # id -> the last rev acknowledged by an edit (None: deleted)

    def pick_doc(self):
        return random.choice(self.docs) if self.docs else None


class Soak:
    def __init__(self, target, args, data_dir=None):
        self.target, self.args = target, args
        self.data_dir = data_dir  # the server's, when this soak started it: its file sizes are sampled
        self.stats = Stats()
        self.stop_at = None
        self.nonce = "%08x" % random.getrandbits(32)
        self.dbs = [Database(f"soak-{self.nonce}-{i}") for i in range(args.dbs)]
        self.photo_bytes = args.photo_kib * 1024
        # Feeds end within the run's second half at the latest, so a short run is not held up by them.
        self.longpoll_ms = min(LONGPOLL_TIMEOUT_MS, args.duration * 500)
        self.continuous_ms = min(CONTINUOUS_TIMEOUT_MS, args.duration * 500)

    def conn(self):
        return Connection(self.target.host, self.target.port, self.target.auth)

    def stopping(self):
        return time.monotonic() >= self.stop_at

    async def timed(self, kind, conn, method, path, expect, headers=None, body=None):
        """One request of type `kind`: its latency on success; a failure counted and raised otherwise."""
        started = time.monotonic()
        try:
            response = await asyncio.wait_for(conn.request(method, path, headers, body), REQUEST_TIMEOUT_S)
        except asyncio.TimeoutError as e:
            conn.close()
            raise Failure(f"{method} {path}: no answer within {REQUEST_TIMEOUT_S} s") from e
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as e:
            conn.close()
            raise Failure(f"{method} {path}: {type(e).__name__}: {e}") from e
        if response.status >= 500:
            self.stats.status_5xx += 1
        if response.status not in expect:
            raise Failure(f"{method} {path} -> {response.status}: {response.body[:200]!r}")
        self.stats.ok(kind, time.monotonic() - started)
        return response

    # Roles ----------------------------------------------------------------------------------

    async def push(self, conn, db, client, counter):
        base = f"p{client}-{counter}"
        photos = []
        for k in range(random.randint(1, 3)):
            data = os.urandom(self.photo_bytes)
            photos.append((f"{base}-photo{k}", rev_hash(), data))
        smalls = [(f"{base}-doc{k}", rev_hash()) for k in range(SMALL_DOCS_PER_PUSH)]
        wanted = {doc_id: [f"1-{h}"] for doc_id, h, *_ in photos + smalls}
        diff = (await self.timed("revs_diff", conn, "POST", f"/{db.name}/_revs_diff", (200,),
                                 {"Content-Type": "application/json"}, json.dumps(wanted).encode())).json()
        if set(diff) != set(wanted):
            raise Failure(f"_revs_diff: expected every new revision missing, got {list(diff)[:5]}")
        for doc_id, h, data in photos:
            await self.put_photo(conn, db, doc_id, h, data)
        docs = [{"_id": doc_id, "_rev": f"1-{h}", "_revisions": {"start": 1, "ids": [h]},
                 "type": "note", "client": client, "n": counter} for doc_id, h in smalls]
        answer = (await self.timed("bulk_docs", conn, "POST", f"/{db.name}/_bulk_docs", (201,),
                                   {"Content-Type": "application/json"},
                                   json.dumps({"docs": docs, "new_edits": False}).encode())).json()
        if not isinstance(answer, list) or any("error" in row for row in answer):
            raise Failure(f"_bulk_docs new_edits=false: {str(answer)[:200]}")
        db.docs.extend(doc_id for doc_id, _ in smalls)
        return len(photos) + len(smalls)

    async def put_photo(self, conn, db, doc_id, h, data):
        boundary = rev_hash()
        meta = {"_id": doc_id, "_rev": f"1-{h}", "_revisions": {"start": 1, "ids": [h]}, "type": "photo",
                "_attachments": {"photo.jpg": {"content_type": "image/jpeg", "revpos": 1, "digest": md5_b64(data),
                                               "length": len(data), "follows": True}}}
        body = b"".join([
            f"--{boundary}\r\nContent-Type: application/json\r\n\r\n".encode(), json.dumps(meta).encode(),
            f"\r\n--{boundary}\r\nContent-Disposition: attachment; filename=\"photo.jpg\"\r\n"
            f"Content-Type: image/jpeg\r\nContent-Length: {len(data)}\r\n\r\n".encode(),
            data, f"\r\n--{boundary}--".encode()])
        await self.timed("put_multipart", conn, "PUT", f"/{db.name}/{doc_id}?new_edits=false", (201,),
                         {"Content-Type": f'multipart/related; boundary="{boundary}"'}, body)
        db.docs.append(doc_id)
        db.photos.append((doc_id, len(data), None))

    async def checkpoint(self, conn, db, client, state):
        doc = {"session_id": self.nonce, "n": state.get("n", 0)}
        if "rev" in state:
            doc["_rev"] = state["rev"]
        answer = (await self.timed("local_checkpoint", conn, "PUT", f"/{db.name}/_local/soak-{client}", (201,),
                                   {"Content-Type": "application/json"}, json.dumps(doc).encode())).json()
        state["rev"], state["n"] = answer["rev"], state.get("n", 0) + 1

    async def edit(self, conn, db, client, counter):
        """An app's edits: a new document updated twice, every third one deleted; a POST and a _bulk_docs of one."""
        json_type = {"Content-Type": "application/json"}
        doc_id = f"e{client}-{counter}"
        rev = None
        for version in range(3):
            doc = {"type": "note", "version": version} | ({"_rev": rev} if rev else {})
            answer = (await self.timed("edit_put", conn, "PUT", f"/{db.name}/{doc_id}", (201,), json_type,
                                       json.dumps(doc).encode())).json()
            if answer.get("id") != doc_id or not answer.get("rev", "").startswith(f"{version + 1}-"):
                raise Failure(f"PUT {doc_id} version {version}: {str(answer)[:200]}")
            rev = answer["rev"]
        if counter % 3 == 0:
            answer = (await self.timed("edit_delete", conn, "DELETE", f"/{db.name}/{doc_id}?rev={rev}", (200,))).json()
            if not answer.get("rev", "").startswith("4-"):
                raise Failure(f"DELETE {doc_id}: {str(answer)[:200]}")
            db.edited[doc_id] = None
        else:
            db.edited[doc_id] = rev
            db.docs.append(doc_id)
        posted = (await self.timed("edit_post", conn, "POST", f"/{db.name}", (201,), json_type,
                                   json.dumps({"type": "note", "client": client}).encode())).json()
        bulk_id = f"{doc_id}-bulk"
        single = (await self.timed("edit_bulk_one", conn, "POST", f"/{db.name}/_bulk_docs", (201,), json_type,
                                   json.dumps({"docs": [{"_id": bulk_id, "type": "note"}]}).encode())).json()
        if not posted.get("ok") or single != [{"ok": True, "id": bulk_id, "rev": single[0].get("rev")}]:
            raise Failure(f"POST / _bulk_docs of one: {str(posted)[:100]} {str(single)[:100]}")
        db.docs.extend([posted["id"], bulk_id])

    async def pull(self, conn, db, state):
        changes = (await self.timed(
            "changes", conn, "GET",
            f"/{db.name}/_changes?style=all_docs&since={state.get('since', 0)}&limit={CHANGES_LIMIT}",
            (200,))).json()
        rows = changes.get("results")
        if not isinstance(rows, list) or "last_seq" not in changes:
            raise Failure(f"_changes without results/last_seq: {str(changes)[:200]}")
        state["since"] = changes["last_seq"]
        self.stats.changes_rows += len(rows)
        if not rows:
            return
        wanted = [{"id": row["id"], "rev": change["rev"]} for row in rows for change in row["changes"]]
        answer = (await self.timed("bulk_get", conn, "POST", f"/{db.name}/_bulk_get?revs=true&latest=true",
                                   (200,), {"Content-Type": "application/json"},
                                   json.dumps({"docs": wanted}).encode())).json()
        results = answer.get("results", [])
        if len(results) != len(wanted) or any("ok" not in d for r in results for d in r.get("docs", [])):
            raise Failure(f"_bulk_get: {str(answer)[:200]}")

    async def longpoll(self, conn, db, state):
        since = state.get("since", "now")
        answer = (await self.timed(
            "longpoll", conn, "GET",
            f"/{db.name}/_changes?feed=longpoll&style=all_docs&since={since}&timeout={self.longpoll_ms}",
            (200,))).json()
        if "last_seq" not in answer or not isinstance(answer.get("results"), list):
            raise Failure(f"longpoll without results/last_seq: {str(answer)[:200]}")
        state["since"] = answer["last_seq"]
        self.stats.changes_rows += len(answer["results"])

    async def continuous(self, conn, db):
        path = f"/{db.name}/_changes?feed=continuous&since=now&heartbeat={HEARTBEAT_MS}"
        started = time.monotonic()
        try:
            status, fields = await asyncio.wait_for(conn.send("GET", path), REQUEST_TIMEOUT_S)
        except asyncio.TimeoutError as e:
            conn.close()
            raise Failure(f"GET {path}: no head within {REQUEST_TIMEOUT_S} s") from e
        except (OSError, asyncio.IncompleteReadError, ValueError) as e:
            conn.close()
            raise Failure(f"GET {path}: {type(e).__name__}: {e}") from e
        if status >= 500:
            self.stats.status_5xx += 1
        if status != 200 or "chunked" not in fields.get("transfer-encoding", ""):
            conn.close()
            raise Failure(f"GET {path} -> {status} {fields}")
        self.stats.ok("continuous", time.monotonic() - started)
        # A row or a heartbeat at least every heartbeat interval; two intervals of silence is a stalled feed.
        silence_s = 2 * HEARTBEAT_MS / 1000
        hang_up_at = started + self.continuous_ms / 1000
        pending = b""
        chunks = conn.chunks()
        try:
            while not self.stopping() and time.monotonic() < hang_up_at:
                try:
                    piece = await asyncio.wait_for(chunks.__anext__(), silence_s)
                except StopAsyncIteration:
                    raise Failure("continuous feed with a heartbeat ended by itself") from None
                pending += piece
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue  # heartbeat
                    row = json.loads(line)
                    if "id" in row and "seq" in row:
                        self.stats.changes_rows += 1
                    else:
                        raise Failure(f"continuous feed line {line[:120]!r}")
        except asyncio.TimeoutError as e:
            conn.close()
            raise Failure(f"continuous feed silent for {silence_s:.0f} s (heartbeat {HEARTBEAT_MS} ms)") from e
        except (OSError, asyncio.IncompleteReadError, ValueError) as e:
            conn.close()
            raise Failure(f"continuous feed broke: {type(e).__name__}: {e}") from e
        conn.close()  # hang up, as a client going away (or restarting its feed) does

    async def read(self, conn, db):
        doc_id = db.pick_doc()
        if doc_id is None:
            return
        doc = (await self.timed("read_doc", conn, "GET", f"/{db.name}/{doc_id}", (200,))).json()
        if doc.get("_id") != doc_id or "_rev" not in doc:
            raise Failure(f"GET {doc_id}: {str(doc)[:200]}")

    async def range_read(self, conn, db):
        if not db.photos:
            return
        doc_id, length, data = random.choice(db.photos)
        first = random.randrange(length)
        last = min(length - 1, first + random.randint(0, 64 * 1024))
        response = await self.timed("range_read", conn, "GET", f"/{db.name}/{doc_id}/photo.jpg", (206,),
                                    {"Range": f"bytes={first}-{last}"})
        if len(response.body) != last - first + 1 or \
                response.headers.get("content-range") != f"bytes {first}-{last}/{length}":
            raise Failure(f"Range {first}-{last} of {length}: {len(response.body)} bytes, "
                          f"Content-Range {response.headers.get('content-range')!r}")
        if data is not None and response.body != data[first:last + 1]:
            raise Failure(f"Range {first}-{last} of {doc_id}: wrong bytes")

    async def client(self, index, role, db, start_delay):
        await asyncio.sleep(start_delay)
        conn = self.conn()
        state, counter = {}, 0
        try:
            while not self.stopping():
                counter += 1
                try:
                    if role == "push":
                        await self.push(conn, db, index, counter)
                        await self.checkpoint(conn, db, index, state)
                    elif role == "pull":
                        await self.pull(conn, db, state)
                    elif role == "edit":
                        await self.edit(conn, db, index, counter)
                    elif role == "longpoll":
                        await self.longpoll(conn, db, state)
                    elif role == "continuous":
                        await self.continuous(conn, db)
                    elif role == "read":
                        await self.read(conn, db)
                    else:
                        await self.range_read(conn, db)
                except Failure as e:
                    kind = {"push": "push", "pull": "pull"}.get(role, role)
                    self.stats.fail(kind, str(e))
                    await asyncio.sleep(1)  # a failing client backs off instead of spinning
                if role != "continuous":
                    await asyncio.sleep(random.uniform(0, 2 * self.args.think))
        finally:
            conn.close()

    # Setup, sampling, verification --------------------------------------------------------

    async def seed(self):
        conn = self.conn()
        try:
            for db in self.dbs:
                await self.timed("setup", conn, "PUT", f"/{db.name}", (201, 202))
                for k in range(SEED_PHOTOS_PER_DB):
                    data = os.urandom(self.photo_bytes)
                    await self.put_photo(conn, db, f"seed-{k}", rev_hash(), data)
                    db.photos[-1] = (f"seed-{k}", len(data), data)
        finally:
            conn.close()
        self.stats.latency.pop("setup", None)
        self.stats.latency.pop("put_multipart", None)

    def sample(self, minute):
        pid = self.target.pid
        fds = None
        if pid is not None:
            try:
                fds = len(os.listdir(f"/proc/{pid}/fd"))
            except OSError:
                pass
        rss = self.target.rss_mib()
        memory = self.memory_mib()
        heap, writers, readers = (memory.get(k) for k in ("heap_in_use", "page_cache_writers", "page_cache_readers"))
        files = self.database_files_mib()
        files_text = "" if files is None else f"database files {files} MiB, "
        log(f"minute {minute}: RSS {rss if rss is None else round(rss, 1)} MiB, heap in use {heap} MiB "
            f"(page caches: writers {writers}, idle readers {readers}), {files_text}{fds} fds, "
            f"{sum(len(v) for v in self.stats.latency.values())} requests, "
            f"{sum(self.stats.failures.values())} failed")
        return {"minute": minute, "rss_mib": None if rss is None else round(rss, 1), "heap_in_use_mib": heap,
                "page_cache_writers_mib": writers, "page_cache_readers_mib": readers, "database_files_mib": files,
                "fds": fds}

    def database_files_mib(self):
        """Bytes of the SQLite files (databases and their WALs) of a server this soak started, MiB; None for --url."""
        data_dir = self.data_dir
        if data_dir is None:
            return None
        total = 0
        for name in os.listdir(data_dir) if os.path.isdir(data_dir) else []:
            if name.endswith((".couch", ".couch-wal")):
                try:
                    total += os.path.getsize(os.path.join(data_dir, name))
                except OSError:
                    pass
        return round(total / 2**20, 1)

    def memory_mib(self):
        """couchlite's memory figures from `_system` (`memory.heap_in_use`: the malloc heap in use; the page caches
        of the writers and idle readers, part of it), MiB; empty elsewhere. RSS alone cannot tell memory held from
        memory freed but kept by malloc."""
        try:
            status, body = self.target.request("GET", "/_node/_local/_system", timeout=10)
            memory = json.loads(body)["memory"] if status == 200 else {}
        except (OSError, ValueError, KeyError, TypeError):
            return {}
        if not isinstance(memory, dict):
            return {}
        return {k: round(v / 2**20, 1) for k, v in memory.items() if isinstance(v, int)}

    async def sampler(self, started, samples):
        minute = 0
        samples.append(self.sample(0))
        while True:
            next_at = started + (minute + 1) * RSS_INTERVAL_S
            if next_at > self.stop_at + 0.5:
                return
            await asyncio.sleep(max(0, next_at - time.monotonic()))
            minute += 1
            samples.append(self.sample(minute))

    async def verify(self):
        """Every acknowledged document is in its database (doc_count counts them all)."""
        conn = self.conn()
        missing = []
        try:
            for db in self.dbs:
                info = (await conn.request("GET", f"/{db.name}")).json()
                if info.get("doc_count", 0) < len(db.docs):
                    missing.append(f"{db.name}: doc_count {info.get('doc_count')} < {len(db.docs)} acknowledged")
                sample = random.sample(db.docs, min(50, len(db.docs)))
                for doc_id in sample:
                    if (await conn.request("GET", f"/{db.name}/{doc_id}")).status != 200:
                        missing.append(f"{db.name}/{doc_id} acknowledged but not found")
                for doc_id in random.sample(sorted(db.edited), min(50, len(db.edited))):
                    response = await conn.request("GET", f"/{db.name}/{doc_id}")
                    rev = db.edited[doc_id]
                    if rev is None and response.status != 404:
                        missing.append(f"{db.name}/{doc_id} deleted but answered {response.status}")
                    elif rev is not None and (response.status != 200 or response.json().get("_rev") != rev):
                        missing.append(f"{db.name}/{doc_id}: last acknowledged rev {rev}, read {response.status}")
        finally:
            conn.close()
        return missing

    async def cleanup(self):
        conn = self.conn()
        try:
            for db in self.dbs:
                await conn.request("DELETE", f"/{db.name}")
        except (OSError, Failure, asyncio.IncompleteReadError) as e:
            log(f"cleanup: {e}")
        finally:
            conn.close()

    async def run(self):
        args = self.args
        log(f"seeding {len(self.dbs)} databases with {SEED_PHOTOS_PER_DB} photos of {args.photo_kib} KiB each")
        self.stop_at = float("inf")
        await self.seed()
        roles = dealt_roles()
        ramp = min(10.0, args.duration / 10)
        started = time.monotonic()
        self.stop_at = started + args.duration
        log(f"{args.clients} clients for {args.duration} s (ramp {ramp:.0f} s, think {args.think} s)")
        samples = []
        self.cpu_start = (self.target.cpu_s(), client_cpu_s())
        sampler = asyncio.create_task(self.sampler(started, samples))
        # Each role is spread evenly over the databases (dealing both by client index would pair some roles with
        # some databases only: pushers and pullers would never meet).
        dealt = {}
        clients = []
        for i in range(args.clients):
            role = roles[i % len(roles)]
            db = self.dbs[dealt.setdefault(role, 0) % len(self.dbs)]
            dealt[role] += 1
            clients.append(asyncio.create_task(self.client(i, role, db, ramp * i / args.clients)))
        done, pending = await asyncio.wait(clients, timeout=args.duration + FINISH_GRACE_S)
        for task in pending:
            task.cancel()
        for task in done:
            if task.exception() is not None:
                self.stats.fail("client", f"client crashed: {task.exception()!r}")
        if pending:
            self.stats.fail("client", f"{len(pending)} clients still busy {FINISH_GRACE_S} s after the end")
        elapsed = time.monotonic() - started
        server_cpu, client_cpu = self.target.cpu_s(), client_cpu_s()
        self.cpu_pct = {
            "server": None if server_cpu is None or self.cpu_start[0] is None
            else round(100 * (server_cpu - self.cpu_start[0]) / elapsed),
            "client": round(100 * (client_cpu - self.cpu_start[1]) / elapsed)}
        await sampler
        samples.append(self.sample("end"))
        missing = await self.verify()
        if not args.keep:
            await self.cleanup()
        # Every client has hung up and the databases are gone: what the server still holds now is what it
        # would keep for good (a leaked socket or database file shows here).
        await asyncio.sleep(AFTER_SETTLE_S)
        samples.append(self.sample("after"))
        return elapsed, samples, missing


def report(soak, elapsed, samples, missing):
    per_type = soak.stats.summary()
    total = sum(v["requests"] for v in per_type.values())
    failed = sum(v["failed"] for v in per_type.values())
    print(f"\nsoak: {soak.args.clients} clients, {elapsed:.0f} s, {total} requests ({total / elapsed:.0f}/s), "
          f"{failed} failed, {soak.stats.status_5xx} answers 5xx, {soak.stats.changes_rows} change rows read")
    print(f"{'type':<18}{'requests':>10}{'failed':>8}{'p50 ms':>9}{'p99 ms':>9}")
    for kind, v in per_type.items():
        print(f"{kind:<18}{v['requests']:>10}{v['failed']:>8}{v['p50_ms'] or '-':>9}{v['p99_ms'] or '-':>9}")
    print(f"CPU (100 = one core): server {soak.cpu_pct['server']} %, this client {soak.cpu_pct['client']} %")
    print("RSS MiB / heap in use MiB (writers' + idle readers' page caches) / open fds: " + ", ".join(
        f"min {s['minute']}: {s['rss_mib']} / {s['heap_in_use_mib']} ({s['page_cache_writers_mib']} + "
        f"{s['page_cache_readers_mib']}) / {s['fds']}" for s in samples))
    minute = {s["minute"]: s["rss_mib"] for s in samples}
    rss_goal = None
    if minute.get(1) and minute.get(5):
        rss_goal = abs(minute[5] - minute[1]) <= 0.10 * minute[1]
        print(f"RSS minute 5 vs minute 1: {100 * (minute[5] / minute[1] - 1):+.1f} % "
              f"({'PASS' if rss_goal else 'MISS'}, goal within 10 %)")
    for kind, messages in soak.stats.samples.items():
        for message in messages:
            print(f"FAILED {kind}: {message}", file=sys.stderr)
    for line in missing:
        print(f"LOST {line}", file=sys.stderr)
    print(json.dumps({"workload": "soak", "clients": soak.args.clients, "duration_s": round(elapsed, 1),
                      "requests": total, "failed": failed, "status_5xx": soak.stats.status_5xx,
                      "lost_docs": len(missing), "cpu_pct": soak.cpu_pct, "per_type": per_type, "samples": samples,
                      "rss_within_10pct": rss_goal}))
    return 0 if failed == 0 and soak.stats.status_5xx == 0 and not missing else 1


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/soak.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--url", help="soak this server (http://user:pass@host:port) instead of starting couchlite")
    p.add_argument("--pid", type=int, help="server pid for RSS/fd sampling with --url")
    p.add_argument("--server-bin", help="couchlite binary to start instead of a release build")
    p.add_argument("--clients", type=int, default=2000)
    p.add_argument("--duration", type=int, default=300, help="seconds (default 300)")
    p.add_argument("--dbs", type=int, default=20, help="databases the clients are spread over (default 20)")
    p.add_argument("--photo-kib", type=int, default=128, help="bytes of each photo, KiB (default 128)")
    p.add_argument("--think", type=float, default=1.0, help="mean pause between a client's operations, s")
    p.add_argument("--keep", action="store_true", help="keep the databases")
    args = p.parse_args(argv)
    if min(args.clients, args.duration, args.dbs, args.photo_kib) < 1 or args.think < 0:
        p.error("--clients, --duration, --dbs and --photo-kib must be positive, --think not negative")
    return args


def main(argv):
    args = parse_args(argv)
    limit = bench_run.raise_fd_limit(args.clients + FD_HEADROOM)
    if limit < args.clients + 64:
        print(f"soak: RLIMIT_NOFILE is {limit}, too low for {args.clients} clients", file=sys.stderr)
        return 2
    work_dir = tempfile.mkdtemp(prefix="couchlite-soak.")
    server = None
    try:
        if args.url:
            target = bench_run.Target(args.url, pid=args.pid)
        else:
            server = bench_run.LocalServer(work_dir, args.server_bin)
            target = server.start()
        soak = Soak(target, args, data_dir=None if args.url else os.path.join(work_dir, "data", "databases"))
        elapsed, samples, missing = asyncio.run(soak.run())
        if server and server.proc.poll() is not None:
            soak.stats.fail("server", f"server exited with {server.proc.returncode}: {server.log_tail()}")
        return report(soak, elapsed, samples, missing)
    except bench_run.BenchError as e:
        print(f"soak: {e}", file=sys.stderr)
        return 2
    finally:
        if server:
            server.stop()
        shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
