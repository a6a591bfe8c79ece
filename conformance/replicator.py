"""A small replicator-like client: replicates one database into another over HTTP only,
the way the CouchDB 3.x replicator does (the design notes' protocol.md §1a and §2; the
transcripts couchdb-3.4.3-push*.jsonl and couchdb-3.4.3-pull.jsonl show the same conversation
from the target's and from the source's side).

One run:

1. `GET /db` on both ends (both must carry `update_seq` and `instance_start_time`).
2. `GET /db/_local/<repid>` on both ends; the start sequence comes from comparing the two
   checkpoint docs (same `session_id`, else the newest session both histories share, else 0).
3. Repeated batches: `GET /source/_changes?feed=normal&style=all_docs&since=S&limit=N`,
   `POST /target/_revs_diff`, then the missing revisions are read with
   `POST /source/_bulk_get?latest=true&revs=true&attachments=false` (with `atts_since` set to
   the target's possible ancestors) and written:
   - plain docs: `POST /target/_bulk_docs {"new_edits":false,"docs":[…]}` (must answer 201);
   - docs with attachments: re-read with `GET /source/<id>?revs=true&open_revs=[…]&latest=true`
     and `Accept: multipart/mixed`, then `PUT /target/<id>?new_edits=false` as
     `multipart/related` with the attachment bytes as `follows` parts (or as JSON when every
     attachment is a stub the target already has);
   - design docs: `PUT /target/<id>?new_edits=false` one by one.
4. Every `checkpoint_every` batches and at the end: `POST /db/_ensure_full_commit` on both
   ends (must answer 201), then `PUT /db/_local/<repid>` on both ends with the current `_rev`.

A run stopped by `max_batches` ends without a final checkpoint, as if the replicator had been
killed: the next run resumes from the last checkpoint and `_revs_diff` filters out what was
already written after it.

Every request is recorded in `Replicator.log` so tests can check which requests were sent.
"""

from __future__ import annotations

import dataclasses
import email.utils
import hashlib
import json
import re
import urllib.parse
import uuid
from typing import Any

import requests

REQUEST_TIMEOUT_S = 30        # per request
DEFAULT_BATCH_SIZE = 10       # `_changes` rows per batch (CouchDB's worker batch is 500)
HISTORY_LIMIT = 50            # checkpoint history entries kept, as CouchDB does
USER_AGENT = "couchlite-conformance-replicator/1"


class ReplicationError(Exception):
    """A peer answered something the CouchDB replicator would crash or stop on."""


@dataclasses.dataclass
class Part:
    """One body part of a multipart message."""
    headers: dict[str, str]   # lower-cased names
    body: bytes


@dataclasses.dataclass
class Attachment:
    """An attachment read from the source: its stub JSON and, when it `follows`, its bytes."""
    name: str
    info: dict
    data: bytes | None        # the encoded bytes (as stored, gzip if `encoding` is set)


@dataclasses.dataclass
class RunStats:
    """What one `Replicator.run` did."""
    session_id: str
    start_seq: Any
    end_seq: Any = None
    changes_since: list = dataclasses.field(default_factory=list)  # `since` of each _changes
    batches: int = 0
    missing_checked: int = 0
    missing_found: int = 0
    docs_read: int = 0
    docs_written: int = 0
    doc_write_failures: int = 0
    bulk_get_docs: int = 0
    open_revs_fetches: int = 0
    bulk_docs_posts: int = 0
    json_puts: int = 0
    multipart_puts: int = 0
    checkpoints: int = 0
    completed: bool = False    # False when stopped by max_batches


@dataclasses.dataclass
class LogEntry:
    method: str
    path: str
    status: int
    role: str                  # "source" or "target"


def media_type(value: str | None) -> str:
    return (value or "").split(";")[0].strip().lower()


def boundary_of(value: str | None) -> str | None:
    m = re.search(r'boundary="?([^";]+)"?', value or "", re.IGNORECASE)
    return m.group(1) if m else None


def parse_multipart(body: bytes, boundary: str) -> list[Part]:
    """Split a multipart body (RFC 2046). A part with `Content-Length` is sliced by it, so
    binary bytes that happen to contain the delimiter do not cut the part short."""
    delim = b"--" + boundary.encode()
    pos = body.find(delim)
    if pos < 0:
        raise ReplicationError(f"multipart body without boundary {boundary!r}")
    pos += len(delim)
    parts: list[Part] = []
    while True:
        if body.startswith(b"--", pos):
            return parts
        eol = body.find(b"\r\n", pos)   # the rest of the delimiter line (transport padding)
        if eol < 0:
            raise ReplicationError("multipart body ends inside a delimiter line")
        start = eol + 2
        head_end = body.find(b"\r\n\r\n", start - 2)
        if head_end < 0:
            raise ReplicationError("multipart part without a header/body separator")
        headers: dict[str, str] = {}
        for line in body[start:head_end].split(b"\r\n"):
            if b":" in line:
                k, v = line.split(b":", 1)
                headers[k.decode("latin-1").strip().lower()] = v.decode("latin-1").strip()
        data_start = head_end + 4
        length = headers.get("content-length")
        if length is not None and length.isdigit():
            data_end = data_start + int(length)
            if not body.startswith(b"\r\n" + delim, data_end):
                raise ReplicationError(f"part Content-Length {length} is not followed by the boundary")
        else:
            data_end = body.find(b"\r\n" + delim, data_start)
            if data_end < 0:
                raise ReplicationError("multipart part is not closed by the boundary")
        parts.append(Part(headers, body[data_start:data_end]))
        pos = data_end + 2 + len(delim)


def doc_path(doc_id: str) -> str:
    """The URL path segment(s) of a document id, as CouchDB's replicator encodes them:
    `_design/x` and `_local/x` keep their slash, everything else is percent-encoded whole."""
    for prefix in ("_design/", "_local/"):
        if doc_id.startswith(prefix):
            return prefix + urllib.parse.quote(doc_id[len(prefix):], safe="")
    return urllib.parse.quote(doc_id, safe="")


def json_bytes(obj: Any) -> bytes:
    """Compact UTF-8 JSON, as CouchDB (jiffy) writes it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def seq_param(seq: Any) -> str:
    """`since=` value: a string sequence is sent verbatim, anything else JSON-encoded
    (couch_replicator_utils)."""
    return seq if isinstance(seq, str) else json.dumps(seq)


def http_date() -> str:
    return email.utils.formatdate(usegmt=True)


def build_multipart_related(doc: dict, attachments: list[Attachment],
                            boundary: str | None = None) -> tuple[str, bytes]:
    """The body of a replicator's `PUT /db/<id>?new_edits=false` (couch_httpd_multipart):
    the JSON part, then one part per `follows` attachment in the order of `_attachments`.
    Returns (Content-Type header value, body)."""
    boundary = boundary or uuid.uuid4().hex
    delim = b"--" + boundary.encode()
    out = [delim, b"\r\nContent-Type: application/json\r\n\r\n", json_bytes(doc)]
    by_name = {a.name: a for a in attachments}
    for name, info in (doc.get("_attachments") or {}).items():
        if not info.get("follows"):
            continue
        att = by_name.get(name)
        if att is None or att.data is None:
            raise ReplicationError(f"attachment {name!r} follows but its bytes were not read")
        head = [f'Content-Disposition: attachment; filename="{name}"',
                f"Content-Type: {info.get('content_type', 'application/octet-stream')}",
                f"Content-Length: {len(att.data)}"]
        if info.get("encoding"):
            head.append(f"Content-Encoding: {info['encoding']}")
        out += [b"\r\n", delim, b"\r\n", "\r\n".join(head).encode(), b"\r\n\r\n", att.data]
    out += [b"\r\n", delim, b"--"]
    return f'multipart/related; boundary="{boundary}"', b"".join(out)


class Endpoint:
    """One database on one server: `Endpoint("http://admin:pass@127.0.0.1:5984", "db")`."""

    def __init__(self, server_url: str, db: str, role: str = "", timeout: float = REQUEST_TIMEOUT_S):
        parts = urllib.parse.urlsplit(server_url)
        netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
        self.server = f"{parts.scheme}://{netloc}{parts.path.rstrip('/')}"
        self.db = db
        self.role = role
        self.timeout = timeout
        self.session = requests.Session()
        if parts.username:
            self.session.auth = (urllib.parse.unquote(parts.username),
                                 urllib.parse.unquote(parts.password or ""))
        self.session.headers["Accept"] = "application/json"
        self.session.headers["User-Agent"] = USER_AGENT
        self.log: list[LogEntry] | None = None

    @property
    def url(self) -> str:
        """The database URL without credentials (what goes into the replication id)."""
        return f"{self.server}/{urllib.parse.quote(self.db, safe='')}"

    def request(self, method: str, path: str, *, body: bytes | None = None,
                json_body: Any = None, headers: dict | None = None) -> requests.Response:
        """`path` is relative to the database ('' for the db itself) and already encoded."""
        hdrs = dict(headers or {})
        if json_body is not None:
            body = json_bytes(json_body)
            hdrs.setdefault("Content-Type", "application/json")
        url = self.url + ("/" + path if path and not path.startswith("?") else path)
        resp = self.session.request(method, url, data=body, headers=hdrs, timeout=self.timeout,
                                    allow_redirects=False)
        if self.log is not None:
            self.log.append(LogEntry(method, "/" + self.db + ("/" + path if path else ""),
                                     resp.status_code, self.role))
        return resp

    def json(self, method: str, path: str, expect: tuple[int, ...], **kw) -> Any:
        resp = self.request(method, path, **kw)
        if resp.status_code not in expect:
            raise ReplicationError(f"{self.role} {method} /{self.db}/{path} answered "
                                   f"{resp.status_code} (wanted {expect}): {resp.text[:300]}")
        try:
            return resp.json()
        except ValueError as e:
            raise ReplicationError(f"{self.role} {method} /{self.db}/{path}: body is not JSON: "
                                   f"{resp.content[:200]!r}") from e


class Replicator:
    """Replicates `source` into `target`; `run()` may be called again to resume."""

    def __init__(self, source: Endpoint, target: Endpoint, *, replication_id: str | None = None,
                 batch_size: int = DEFAULT_BATCH_SIZE, checkpoint_every: int = 1):
        self.source = source
        self.target = target
        self.source.role = self.source.role or "source"
        self.target.role = self.target.role or "target"
        # CouchDB's id hashes its own node uuid with both URLs; a caller that restarts a
        # server on another port passes its own id so the checkpoint is found again.
        self.replication_id = replication_id or hashlib.md5(
            json_bytes([source.url, target.url])).hexdigest()
        self.batch_size = batch_size
        self.checkpoint_every = max(1, checkpoint_every)
        self.log: list[LogEntry] = []
        self.source.log = self.log
        self.target.log = self.log

    @property
    def checkpoint_path(self) -> str:
        return "_local/" + self.replication_id

    # --- the run -------------------------------------------------------------------------

    def run(self, max_batches: int | None = None) -> RunStats:
        """Replicate until `_changes` has nothing more, or stop after `max_batches` batches
        without a final checkpoint (a simulated crash). Returns what the run did."""
        for ep in (self.source, self.target):
            info = ep.json("GET", "", (200,))
            if "update_seq" not in info or "instance_start_time" not in info:
                raise ReplicationError(f"{ep.role} db info lacks update_seq/instance_start_time: {info}")
        src_log = self.read_checkpoint(self.source)
        tgt_log = self.read_checkpoint(self.target)
        start_seq = self.compare_checkpoints(src_log, tgt_log)
        stats = RunStats(session_id=uuid.uuid4().hex, start_seq=start_seq)
        self._logs = {"source": src_log, "target": tgt_log}
        self._start_time = http_date()
        since = start_seq
        checkpointed = start_seq
        while max_batches is None or stats.batches < max_batches:
            stats.changes_since.append(since)
            changes = self.source.json(
                "GET", f"_changes?feed=normal&style=all_docs&since={urllib.parse.quote(seq_param(since), safe='')}"
                       f"&limit={self.batch_size}", (200,))
            rows = changes.get("results")
            if not isinstance(rows, list) or "last_seq" not in changes:
                raise ReplicationError(f"_changes answer lacks results/last_seq: {str(changes)[:300]}")
            if not rows:
                break
            self.replicate_rows(rows, stats)
            since = changes["last_seq"]
            stats.batches += 1
            stats.end_seq = since
            if stats.batches % self.checkpoint_every == 0:
                self.checkpoint(since, stats)
                checkpointed = since
            if len(rows) < self.batch_size:
                break
        else:
            return stats           # stopped by max_batches: no final checkpoint
        stats.completed = True
        if since != checkpointed:
            self.checkpoint(since, stats)
        stats.end_seq = since
        return stats

    def replicate_rows(self, rows: list[dict], stats: RunStats) -> None:
        revs: dict[str, list[str]] = {}
        for row in rows:
            ids = revs.setdefault(row["id"], [])
            ids += [c["rev"] for c in row.get("changes", []) if c["rev"] not in ids]
        stats.missing_checked += sum(len(v) for v in revs.values())
        diff = self.target.json("POST", "_revs_diff", (200,), json_body=revs)
        if not isinstance(diff, dict):
            raise ReplicationError(f"_revs_diff answer is not an object: {str(diff)[:300]}")
        wanted = []
        for doc_id, entry in diff.items():
            missing = entry.get("missing") or []
            stats.missing_found += len(missing)
            for rev in missing:
                wanted.append({"id": doc_id, "rev": rev,
                               "atts_since": entry.get("possible_ancestors") or []})
        if not wanted:
            return
        plain: list[dict] = []
        refetch: dict[str, tuple[list[str], list[str]]] = {}   # id -> (revs, atts_since)
        for doc in self.bulk_get(wanted, stats):
            stats.docs_read += 1
            if doc.get("_attachments"):
                w = next(x for x in wanted if x["id"] == doc["_id"])
                revs_, since_ = refetch.setdefault(doc["_id"], ([], w["atts_since"]))
                if doc["_rev"] not in revs_:
                    revs_.append(doc["_rev"])
                stats.docs_read -= 1   # counted when re-read with its attachments
            elif doc["_id"].startswith("_design/"):
                self.put_doc(doc, [], stats)
            else:
                plain.append(doc)
        if plain:
            self.bulk_docs(plain, stats)
        for doc_id, (revs_, atts_since) in refetch.items():
            for doc, atts in self.open_revs(doc_id, revs_, atts_since, stats):
                stats.docs_read += 1
                self.put_doc(doc, atts, stats)

    # --- reading from the source ---------------------------------------------------------

    def bulk_get(self, wanted: list[dict], stats: RunStats) -> list[dict]:
        """Docs of the wanted revs (attachments as stubs). Revs `_bulk_get` reports as errors
        are read again with `open_revs` (the replicator's fallback)."""
        stats.bulk_get_docs += len(wanted)
        body = {"revs": True, "latest": True, "docs": wanted, "attachments": False}
        answer = self.source.json("POST", "_bulk_get?latest=true&revs=true&attachments=false",
                                  (200,), json_body=body)
        docs = []
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list):
            raise ReplicationError(f"_bulk_get answer lacks results: {str(answer)[:300]}")
        for result in results:
            for item in result.get("docs", []):
                if "ok" in item:
                    docs.append(item["ok"])
                else:
                    err = item.get("error", {})
                    for doc, _ in self.open_revs(err.get("id", result.get("id")), [err.get("rev")], [], stats):
                        docs.append(doc)
        return docs

    def open_revs(self, doc_id: str, revs: list[str], atts_since: list[str],
                  stats: RunStats) -> list[tuple[dict, list[Attachment]]]:
        """`GET /db/<id>?revs=true&open_revs=[…]&latest=true[&atts_since=[…]]` with
        `Accept: multipart/mixed`; returns (doc, attachments with bytes) per found leaf."""
        stats.open_revs_fetches += 1
        query = "revs=true&open_revs=" + urllib.parse.quote(json.dumps(revs), safe="") + "&latest=true"
        if atts_since:
            query += "&atts_since=" + urllib.parse.quote(json.dumps(atts_since), safe="")
        resp = self.source.request("GET", doc_path(doc_id) + "?" + query,
                                   headers={"Accept": "multipart/mixed"})
        ctype = resp.headers.get("Content-Type", "")
        if resp.status_code != 200 or media_type(ctype) != "multipart/mixed" or not boundary_of(ctype):
            raise ReplicationError(f"open_revs of {doc_id!r} answered {resp.status_code} {ctype!r}: "
                                   f"{resp.content[:300]!r}")
        found = []
        for part in parse_multipart(resp.content, boundary_of(ctype) or ""):
            ptype = part.headers.get("content-type", "")
            if ptype == "application/json":
                found.append((json.loads(part.body), []))
            elif media_type(ptype) == "application/json" and 'error="true"' in ptype:
                continue                      # {"missing": rev}: gone since _changes was read
            elif media_type(ptype) == "multipart/related" and boundary_of(ptype):
                found.append(self.related_doc(part.body, boundary_of(ptype) or "", doc_id))
            else:
                raise ReplicationError(f"open_revs of {doc_id!r}: part type {ptype!r} not allowed")
        return found

    @staticmethod
    def related_doc(body: bytes, boundary: str, doc_id: str) -> tuple[dict, list[Attachment]]:
        """A `multipart/related` doc: the JSON part, then the `follows` attachments in the
        order of `_attachments` (CouchDB ignores part headers, and so does this)."""
        parts = parse_multipart(body, boundary)
        if not parts or media_type(parts[0].headers.get("content-type")) != "application/json":
            raise ReplicationError(f"open_revs of {doc_id!r}: related part does not start with JSON")
        doc = json.loads(parts[0].body)
        atts = []
        rest = iter(parts[1:])
        for name, info in (doc.get("_attachments") or {}).items():
            if info.get("follows"):
                part = next(rest, None)
                if part is None:
                    raise ReplicationError(f"open_revs of {doc_id!r}: no part for attachment {name!r}")
                want = info.get("encoded_length", info.get("length"))
                if want is not None and want != len(part.body):
                    raise ReplicationError(f"open_revs of {doc_id!r}: attachment {name!r} has "
                                           f"{len(part.body)} bytes, JSON says {want}")
                atts.append(Attachment(name, info, part.body))
            else:
                atts.append(Attachment(name, info, None))
        if next(rest, None) is not None:
            raise ReplicationError(f"open_revs of {doc_id!r}: more parts than follows attachments")
        return doc, atts

    # --- writing to the target -----------------------------------------------------------

    def bulk_docs(self, docs: list[dict], stats: RunStats) -> None:
        stats.bulk_docs_posts += 1
        answer = self.target.json("POST", "_bulk_docs", (201,),
                                  json_body={"new_edits": False, "docs": docs},
                                  headers={"X-Couch-Full-Commit": "false"})
        if not isinstance(answer, list):
            raise ReplicationError(f"_bulk_docs answer is not an array: {str(answer)[:300]}")
        failures = [item for item in answer if isinstance(item, dict) and "error" in item]
        stats.doc_write_failures += len(failures)
        stats.docs_written += len(docs) - len(failures)

    def put_doc(self, doc: dict, atts: list[Attachment], stats: RunStats) -> None:
        path = doc_path(doc["_id"]) + "?new_edits=false"
        if any(a.data is not None for a in atts):
            ctype, body = build_multipart_related(doc, atts)
            stats.multipart_puts += 1
            resp = self.target.request("PUT", path, body=body, headers={"Content-Type": ctype})
        else:
            stats.json_puts += 1
            resp = self.target.request("PUT", path, json_body=doc)
        if resp.status_code not in (200, 201, 202):
            stats.doc_write_failures += 1
            raise ReplicationError(f"PUT {doc['_id']!r} rev {doc.get('_rev')} answered "
                                   f"{resp.status_code}: {resp.text[:300]}")
        if "rev" not in resp.json():
            raise ReplicationError(f"PUT {doc['_id']!r} answer lacks rev: {resp.text[:300]}")
        stats.docs_written += 1

    # --- checkpoints ---------------------------------------------------------------------

    def read_checkpoint(self, ep: Endpoint) -> dict | None:
        resp = ep.request("GET", self.checkpoint_path)
        if resp.status_code == 404:
            try:
                error = resp.json().get("error")
            except ValueError:
                error = None
            if error != "not_found":
                raise ReplicationError(f"{ep.role} checkpoint 404 is not not_found: {resp.text[:200]}")
            return None
        if resp.status_code != 200:
            raise ReplicationError(f"{ep.role} GET {self.checkpoint_path} answered {resp.status_code}")
        return resp.json()

    @staticmethod
    def compare_checkpoints(src: dict | None, tgt: dict | None) -> Any:
        """The start sequence (couch_replicator_scheduler_job:compare_replication_logs)."""
        if not src or not tgt:
            return 0
        if src.get("session_id") == tgt.get("session_id"):
            return src.get("source_last_seq", 0)
        tgt_sessions = {h.get("session_id") for h in tgt.get("history", [])}
        for h in src.get("history", []):
            if h.get("session_id") in tgt_sessions:
                return h.get("recorded_seq", 0)
        return 0

    def checkpoint(self, seq: Any, stats: RunStats) -> None:
        for ep in (self.source, self.target):
            answer = ep.json("POST", "_ensure_full_commit", (201,), body=b"",
                             headers={"Content-Type": "application/json"})
            if answer.get("ok") is not True or "instance_start_time" not in answer:
                raise ReplicationError(f"{ep.role} _ensure_full_commit answered {answer}")
        entry = {
            "session_id": stats.session_id, "start_time": self._start_time, "end_time": http_date(),
            "start_last_seq": stats.start_seq, "end_last_seq": seq, "recorded_seq": seq,
            "missing_checked": stats.missing_checked, "missing_found": stats.missing_found,
            "docs_read": stats.docs_read, "docs_written": stats.docs_written,
            "doc_write_failures": stats.doc_write_failures,
            "bulk_get_docs": stats.bulk_get_docs, "bulk_get_attempts": stats.bulk_get_docs,
        }
        for role, ep in (("source", self.source), ("target", self.target)):
            old = self._logs.get(role) or {}
            history = [h for h in old.get("history", []) if h.get("session_id") != stats.session_id]
            doc = {"_id": self.checkpoint_path}
            if old.get("_rev"):
                doc["_rev"] = old["_rev"]
            doc.update({"session_id": stats.session_id, "source_last_seq": seq,
                        "replication_id_version": 4, "history": ([entry] + history)[:HISTORY_LIMIT]})
            if old.get("_rev"):
                # CouchDB's replicator sends the _local rev back as `_revisions` too
                # (push-incremental transcript: "_rev":"0-1" … "_revisions":{"start":0,"ids":["1"]}).
                doc["_revisions"] = {"start": 0, "ids": [old["_rev"].partition("-")[2]]}
            resp = ep.request("PUT", self.checkpoint_path, json_body=doc,
                              headers={"X-Couch-Full-Commit": "false"})
            if resp.status_code == 409:     # someone else wrote it: re-read the rev, retry once
                current = self.read_checkpoint(ep) or {}
                doc.pop("_rev", None)
                doc.pop("_revisions", None)
                if current.get("_rev"):
                    doc["_rev"] = current["_rev"]
                    doc["_revisions"] = {"start": 0, "ids": [current["_rev"].partition("-")[2]]}
                resp = ep.request("PUT", self.checkpoint_path, json_body=doc)
            if resp.status_code not in (200, 201) or "rev" not in resp.json():
                raise ReplicationError(f"{role} PUT {self.checkpoint_path} answered "
                                       f"{resp.status_code}: {resp.text[:300]}")
            doc["_rev"] = resp.json()["rev"]
            self._logs[role] = doc
        stats.checkpoints += 1


def main(argv: list[str]) -> int:
    """`python3 conformance/replicator.py http://u:p@host:port/srcdb http://u:p@host:port/tgtdb`"""
    import argparse
    ap = argparse.ArgumentParser(description="Replicate one CouchDB-compatible database into another.")
    ap.add_argument("source", help="source database URL, credentials in it")
    ap.add_argument("target", help="target database URL, credentials in it")
    ap.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    ap.add_argument("--max-batches", type=int, default=None)
    args = ap.parse_args(argv)

    def endpoint(url: str) -> Endpoint:
        server, _, db = url.rstrip("/").rpartition("/")
        return Endpoint(server, urllib.parse.unquote(db))

    stats = Replicator(endpoint(args.source), endpoint(args.target),
                       batch_size=args.batch_size).run(args.max_batches)
    print(json.dumps(dataclasses.asdict(stats), indent=1))
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
