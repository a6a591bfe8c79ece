"""Replay recorded CouchDB 3.4.3 conversations against another server and diff the answers.

A transcript (see transcripts/README.md) is a list of HTTP exchanges in the order
CouchDB finished them. `Replayer` sends each request in file order to a server under test and
compares its answer with the recorded one, after mapping the values that any server makes up
for itself:

- the database name (each replay gets a fresh, unique one),
- update sequences (`seq`, `last_seq`, `update_seq`, `purge_seq`): the value CouchDB returned at a
  point is mapped to the value the server under test returned at the same point and substituted
  into later requests (`since=`, checkpoint bodies) and expected answers,
- revision ids CouchDB generated itself (a write whose answer carries a rev that does not appear
  in the request), both as `N-hash` and as the bare hash in `_revisions.ids`,
- `uuid`, `instance_start_time`, and values of server identity (`version`, `vendor`, sizes, ...).

Everything else is compared: status, media type, JSON keys and values, conflicts, attachment
stubs, attachment bytes and the part layout of multipart answers.

The transport is a plain callable so the same code runs against a live server (requests) and
against the recordings themselves (test_replay_selfcheck.py).
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import os
import re
import threading
import urllib.parse
from typing import Any, Callable

TRANSCRIPT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "transcripts")

# Request headers that carry meaning for the server; all others (Host, Authorization, Cookie,
# browser noise) are dropped: the session under test brings its own credentials.
FORWARDED_HEADERS = ("content-type", "accept", "accept-encoding", "x-couch-full-commit",
                     "if-none-match", "if-match", "destination")

# JSON keys whose list values carry no order a client relies on; compared as multisets.
UNORDERED_LIST_KEYS = {"changes", "_conflicts", "_deleted_conflicts", "missing",
                       "possible_ancestors", "docs"}

# Keys of `GET /` whose values identify the server rather than the protocol.
WELCOME_VOLATILE = {"version", "uuid", "vendor"}
WELCOME_OPTIONAL = {"git_sha", "features"}
# Keys of the database info whose values depend on storage or clustering, not on the data.
DBINFO_VOLATILE = {"sizes", "disk_format_version", "cluster", "instance_start_time"}

SEQ_KEYS = ("seq", "last_seq", "update_seq", "purge_seq")
HASH_MIN_LEN = 16          # a learned value this long is substituted inside strings too
LONGPOLL_TIMEOUT_S = 20.0  # a replayed longpoll whose data is present returns at once


@dataclasses.dataclass
class Entry:
    """One recorded exchange."""
    index: int
    file: str
    t: float
    ms: float
    method: str
    path: str
    req_headers: dict
    req_body: bytes
    status: int
    resp_headers: dict
    resp_body: bytes

    @property
    def user_agent(self) -> str:
        return header(self.req_headers, "user-agent") or ""

    @property
    def is_harness(self) -> bool:
        return self.user_agent.startswith("Python-urllib")

    def ms_total(self) -> float:
        """Duration in seconds."""
        return self.ms / 1000.0

    def describe(self) -> str:
        who = "harness" if self.is_harness else self.user_agent.split("/")[0]
        return f"{os.path.basename(self.file)}#{self.index} {self.method} {self.path[:160]} ({who})"


@dataclasses.dataclass
class Response:
    status: int
    headers: dict
    body: bytes


# transport(method, path, headers, body, timeout_s, entry) -> Response. `entry` is the
# recorded exchange being replayed; a live transport ignores it. Feed requests may be sent
# from a worker thread while later requests go on in the main one.
Transport = Callable[[str, str, dict, bytes, float, "Entry"], Response]


def header(headers: dict, name: str) -> str | None:
    for k, v in headers.items():
        if k.lower() == name:
            return v
    return None


def _body(obj: dict | None) -> bytes:
    if not obj:
        return b""
    if "base64" in obj:
        return base64.b64decode(obj["base64"])
    return obj.get("text", "").encode("utf-8")


def load_transcript(path: str) -> list[Entry]:
    entries = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if not line.strip():
                continue
            r = json.loads(line)
            entries.append(Entry(i, path, r["t"], r.get("ms", 0.0), r["method"], r["path"], r["req_headers"],
                                 _body(r.get("req_body")), r["status"], r["resp_headers"],
                                 _body(r.get("resp_body"))))
    return entries


def transcript_files(directory: str = TRANSCRIPT_DIR) -> list[str]:
    return sorted(os.path.join(directory, n) for n in os.listdir(directory) if n.endswith(".jsonl"))


def db_name_of(entries: list[Entry]) -> str:
    for e in entries:
        seg = e.path.split("?")[0].split("/")[1]
        if seg and not seg.startswith("_"):
            return urllib.parse.unquote(seg)
    raise ValueError("transcript touches no database")


def replay_chain(path: str, directory: str = TRANSCRIPT_DIR) -> list[str]:
    """The files to replay, in order, so that `path` starts from the state it was recorded in.

    Transcripts on the same database name continue each other (the CouchDB replicator's push,
    incremental push and pull all use `photos`); a later one needs the earlier ones replayed first.
    """
    me = load_transcript(path)
    name, start = db_name_of(me), me[0].t
    earlier = []
    for other in transcript_files(directory):
        if other == path:
            continue
        entries = load_transcript(other)
        if db_name_of(entries) == name and entries[0].t < start:
            earlier.append((entries[0].t, other))
    return [p for _, p in sorted(earlier)] + [path]


def is_feed(entry: Entry) -> bool:
    """A _changes request that may wait for data (longpoll, continuous, eventsource)."""
    query = entry.path.partition("?")[2]
    feed = dict(urllib.parse.parse_qsl(query)).get("feed", "normal")
    return "/_changes" in entry.path and feed in ("longpoll", "continuous", "eventsource")


def media_type(value: str | None) -> str:
    return (value or "").split(";")[0].strip().lower()


def boundary_of(value: str | None) -> str | None:
    m = re.search(r'boundary="?([^";]+)"?', value or "")
    return m.group(1) if m else None


@dataclasses.dataclass
class Part:
    headers: dict  # lower-cased names
    body: bytes
    children: list | None = None  # parsed parts when this part is itself multipart


def parse_multipart(body: bytes, boundary: str) -> list[Part]:
    """Split a multipart body into parts (RFC 2046), recursing into nested multiparts."""
    delim = b"--" + boundary.encode()
    chunks = body.split(delim)
    parts = []
    for chunk in chunks[1:]:
        if chunk.startswith(b"--"):
            break
        if chunk.startswith(b"\r\n"):
            chunk = chunk[2:]
        head, sep, data = chunk.partition(b"\r\n\r\n")
        if not sep:
            raise ValueError("multipart part without header/body separator")
        if data.endswith(b"\r\n"):
            data = data[:-2]
        headers = {}
        for line in head.split(b"\r\n"):
            if b":" in line:
                k, v = line.split(b":", 1)
                headers[k.decode().strip().lower()] = v.decode().strip()
        part = Part(headers, data)
        ctype = headers.get("content-type", "")
        if media_type(ctype).startswith("multipart/") and boundary_of(ctype):
            part.children = parse_multipart(data, boundary_of(ctype))
        parts.append(part)
    return parts


def rev_key(rev: Any) -> tuple:
    """CouchDB's winner order for leaves of equal deletedness: position, then hash string."""
    if not isinstance(rev, str) or "-" not in rev:
        return (-1, str(rev))
    pos, _, h = rev.partition("-")
    return (int(pos) if pos.isdigit() else -1, h)


class Replayer:
    """Replays transcripts over `transport`, collecting differences and notes."""

    def __init__(self, transport: Transport, db_name: str, credentials: tuple[str, str]):
        self.transport = transport
        self.new_db = db_name
        self.credentials = credentials
        self.old_db: str | None = None
        self.values: dict[str, Any] = {}     # CouchDB-made value -> ours
        self.learned_revs: set[str] = set()  # mapped revs (ours) made by the server itself
        self.leaves: dict[str, set] = {}     # doc id -> revs seen as leaves (ours)
        self.diffs: list[str] = []
        self.notes: list[str] = []

    # ----- mapping ----------------------------------------------------------------------------

    def learn(self, theirs: Any, ours: Any, what: str, entry: Entry) -> None:
        if not isinstance(theirs, str) or theirs == "":
            return
        if theirs in self.values and self.values[theirs] != ours:
            self.notes.append(f"{entry.describe()}: {what} {theirs[:24]}… was mapped to "
                              f"{self.values[theirs]!r:.40}, now {ours!r:.40}")
        self.values[theirs] = ours

    def learn_rev(self, theirs: Any, ours: Any, entry: Entry) -> None:
        if not (isinstance(theirs, str) and isinstance(ours, str)) or theirs.startswith("0-"):
            return
        self.learn(theirs, ours, "rev", entry)
        self.learned_revs.add(ours)
        tp, _, th = theirs.partition("-")
        op, _, oh = ours.partition("-")
        if th and oh and tp == op:
            self.learn(th, oh, "rev hash", entry)

    def sub_str(self, s: str) -> Any:
        if s in self.values:
            return self.values[s]
        for k, v in self.values.items():
            if len(k) >= HASH_MIN_LEN and isinstance(v, str) and k in s:
                s = s.replace(k, v)
        return s

    def sub_json(self, obj: Any, key: str | None = None) -> Any:
        if isinstance(obj, dict):
            return {k: self.sub_json(v, k) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.sub_json(v, key) for v in obj]
        if isinstance(obj, str):
            if key == "db_name" and obj == self.old_db:
                return self.new_db
            return self.sub_str(obj)
        return obj

    def sub_bytes(self, data: bytes) -> bytes:
        for k, v in self.values.items():
            if len(k) >= HASH_MIN_LEN and isinstance(v, str):
                data = data.replace(k.encode(), v.encode())
        return data

    # ----- requests ---------------------------------------------------------------------------

    def map_path(self, path: str) -> str:
        raw_path, qmark, query = path.partition("?")
        segs = raw_path.split("/")
        if len(segs) > 1 and urllib.parse.unquote(segs[1]) == self.old_db:
            segs[1] = urllib.parse.quote(self.new_db, safe="")
        out = "/".join(segs)
        if not qmark:
            return out
        params = []
        for item in query.split("&"):
            k, eq, v = item.partition("=")
            if eq:
                value = urllib.parse.unquote_plus(v)
                mapped = self.sub_str(value)
                if mapped != value:
                    v = urllib.parse.quote(str(mapped), safe="")
            params.append(k + eq + v)
        return out + "?" + "&".join(params)

    def map_body(self, entry: Entry) -> bytes:
        body = entry.req_body
        ctype = media_type(header(entry.req_headers, "content-type"))
        if not body:
            return body
        if ctype == "application/x-www-form-urlencoded":
            form = urllib.parse.parse_qsl(body.decode(), keep_blank_values=True)
            if any(k == "name" for k, _ in form):
                user, password = self.credentials
                form = [(k, user if k == "name" else password if k == "password" else v) for k, v in form]
                return urllib.parse.urlencode(form).encode()
            return body
        if ctype.startswith("multipart/"):
            return self.sub_bytes(body)
        try:
            doc = json.loads(body)
        except ValueError:
            return body
        mapped = self.sub_json(doc)
        if mapped == doc and json.dumps(mapped, sort_keys=True) == json.dumps(doc, sort_keys=True):
            return body  # unchanged: keep the client's exact bytes
        return json.dumps(mapped, separators=(",", ":"), ensure_ascii=False).encode()

    def request_headers(self, entry: Entry) -> dict:
        out = {}
        for k, v in entry.req_headers.items():
            if k.lower() in FORWARDED_HEADERS:
                out[k] = v
        if not any(k.lower() == "accept-encoding" for k in out):
            out["Accept-Encoding"] = "identity"
        return out

    # ----- replay -----------------------------------------------------------------------------

    def replay(self, entries: list[Entry]) -> None:
        """Replay in file (finish) order; a feed request is sent when it was, not when it ended.

        The file lists requests as CouchDB finished them, so a longpoll woken by a write often
        comes *before* that write. Such a request is started in a worker thread at its place and
        its answer is compared once the replay reaches a request that started after it ended.
        """
        self.old_db = db_name_of(entries)
        pending: list[tuple[float, Entry, threading.Thread, dict]] = []
        for entry in entries:
            self.finish_pending(pending, entry.t)
            if is_feed(entry):
                holder: dict = {}
                path, body = self.map_path(entry.path), self.map_body(entry)
                thread = threading.Thread(target=self.send, args=(entry, path, body, holder), daemon=True)
                thread.start()
                pending.append((entry.t + entry.ms_total(), entry, thread, holder))
            else:
                holder = {}
                path, body = self.map_path(entry.path), self.map_body(entry)
                self.send(entry, path, body, holder)
                self.check(entry, path, holder)
        self.finish_pending(pending, float("inf"))

    def finish_pending(self, pending: list, now: float) -> None:
        for item in [p for p in pending if p[0] <= now]:
            _, entry, thread, holder = item
            thread.join(LONGPOLL_TIMEOUT_S + 5)
            pending.remove(item)
            self.check(entry, holder.get("path", entry.path), holder)

    def send(self, entry: Entry, path: str, body: bytes, holder: dict) -> None:
        timeout = LONGPOLL_TIMEOUT_S if is_feed(entry) else 60.0
        holder["path"] = path
        try:
            holder["resp"] = self.transport(entry.method, path, self.request_headers(entry), body, timeout, entry)
        except Exception as exc:  # a hung longpoll or a dropped connection is a difference
            holder["error"] = exc

    def check(self, entry: Entry, path: str, holder: dict) -> None:
        if "resp" not in holder:
            self.diffs.append(f"{entry.describe()}: request failed: {holder.get('error', 'no answer')!r}")
            return
        before = len(self.diffs)
        self.compare_response(entry, holder["resp"])
        if len(self.diffs) > before:
            self.diffs[before] = f"{self.diffs[before]}\n    sent: {entry.method} {path}"

    def diff(self, entry: Entry, msg: str) -> None:
        self.diffs.append(f"{entry.describe()}: {msg}")

    def compare_response(self, entry: Entry, resp: Response) -> None:
        route = entry.path.split("?")[0]
        if entry.method == "POST" and route == "/_session":
            # The CouchDB replicator accepts a 200 that sets AuthSession, or 404 (then it falls
            # back to Basic auth); anything else fails the replication (protocol.md §1a row 0).
            cookie = header(resp.headers, "set-cookie") or ""
            if resp.status == 404:
                self.notes.append(f"{entry.describe()}: 404, replicator falls back to Basic auth")
            elif resp.status != 200 or "AuthSession=" not in cookie:
                self.diff(entry, f"POST /_session answered {resp.status} with Set-Cookie {cookie!r}; "
                                 "the replicator needs 200 + AuthSession cookie, or 404")
            return
        if resp.status != entry.status:
            self.diff(entry, f"status {resp.status}, CouchDB {entry.status}; body {resp.body[:300]!r}")
            return
        exp_type = header(entry.resp_headers, "content-type")
        act_type = header(resp.headers, "content-type")
        if media_type(exp_type) != media_type(act_type):
            self.diff(entry, f"Content-Type {act_type!r}, CouchDB {exp_type!r}")
            return
        mtype = media_type(exp_type)
        if mtype == "application/json" or (mtype.startswith("text/plain") and entry.resp_body[:1] in b"{["):
            self.compare_json_body(entry, entry.resp_body, resp.body)
        elif mtype.startswith("multipart/"):
            self.compare_multipart(entry, exp_type, entry.resp_body, act_type, resp.body)
        else:
            exp_bytes, act_bytes = entry.resp_body, resp.body
            if (header(resp.headers, "content-encoding") or "").lower() == "gzip" and \
                    not header(entry.resp_headers, "content-encoding"):
                self.notes.append(f"{entry.describe()}: answered gzip-encoded where CouchDB did not")
                try:
                    act_bytes = gzip.decompress(act_bytes)
                except OSError:
                    pass
            if exp_bytes != act_bytes:
                self.diff(entry, f"body bytes differ: {len(act_bytes)} bytes vs CouchDB {len(exp_bytes)}; "
                                 f"first difference at {first_difference(exp_bytes, act_bytes)}")

    def compare_json_body(self, entry: Entry, exp_raw: bytes, act_raw: bytes, where: str = "") -> None:
        try:
            exp = json.loads(exp_raw)
        except ValueError:
            self.diff(entry, f"{where}recorded body is not JSON")
            return
        try:
            act = json.loads(act_raw)
        except ValueError:
            self.diff(entry, f"{where}body is not JSON: {act_raw[:200]!r}")
            return
        self.learn_from(entry, exp, act)
        self.track_leaves(exp)
        for d in self.compare_value(self.sub_json(exp), act, "$", entry):
            self.diff(entry, where + d)

    # ----- learning mapped values -------------------------------------------------------------

    def learn_from(self, entry: Entry, exp: Any, act: Any) -> None:
        route, _, query = entry.path.partition("?")
        segs = [s for s in route.split("/") if s]
        if isinstance(exp, dict) and isinstance(act, dict):
            if segs == [] and entry.method == "GET":
                self.learn(exp.get("uuid"), act.get("uuid"), "uuid", entry)
            for key in ("update_seq", "purge_seq", "instance_start_time"):
                if key in exp and key in act and not isinstance(exp[key], dict):
                    self.learn(exp[key], act[key], key, entry)
            if "results" in exp and "last_seq" in exp and isinstance(act.get("results"), list):
                self.learn_changes(entry, exp, act, query)
        # Revisions made by the server: in a write's answer but nowhere in the request.
        if entry.method in ("PUT", "POST", "DELETE", "COPY"):
            request_text = entry.path + entry.req_body.decode("utf-8", "replace")
            pairs = []
            if isinstance(exp, dict) and isinstance(act, dict):
                pairs = [(exp, act)]
            elif isinstance(exp, list) and isinstance(act, list) and len(exp) == len(act):
                pairs = [(e, a) for e, a in zip(exp, act) if isinstance(e, dict) and isinstance(a, dict)]
            for e, a in pairs:
                rev = e.get("rev")
                if isinstance(rev, str) and rev not in request_text and e.get("id") == a.get("id"):
                    self.learn_rev(rev, a.get("rev"), entry)

    def learn_changes(self, entry: Entry, exp: dict, act: dict, query: str) -> None:
        params = dict(urllib.parse.parse_qsl(query))
        exp_rows, act_rows = exp["results"], act["results"]
        if self.changes_truncated(exp, params):
            for e, a in zip(exp_rows, act_rows):
                self.learn(e.get("seq"), a.get("seq"), "seq", entry)
            self.learn(exp.get("last_seq"), act.get("last_seq"), "last_seq", entry)
            return
        by_id = {a.get("id"): a for a in act_rows if isinstance(a, dict)}
        for e in exp_rows:
            a = by_id.get(e.get("id"))
            if a is not None:
                self.learn(e.get("seq"), a.get("seq"), "seq", entry)
        if params.get("feed") in ("longpoll", "continuous") and len(act_rows) > len(exp_rows) and exp_rows:
            # More data arrived before the replayed longpoll than before the recorded one: the
            # recorded last_seq stands for the position after the last row CouchDB sent.
            a = by_id.get(exp_rows[-1].get("id"))
            if a is not None:
                self.learn(exp.get("last_seq"), a.get("seq"), "last_seq", entry)
                return
        self.learn(exp.get("last_seq"), act.get("last_seq"), "last_seq", entry)

    @staticmethod
    def changes_truncated(exp: dict, params: dict) -> bool:
        limit = params.get("limit")
        return bool(exp.get("pending")) or (limit is not None and limit.isdigit()
                                             and len(exp["results"]) >= int(limit))

    def track_leaves(self, exp: Any) -> None:
        """Remember each document's known leaves (ours), for conflict-winner checks."""
        if isinstance(exp, dict):
            if isinstance(exp.get("_id"), str) and isinstance(exp.get("_rev"), str):
                revs = {self.sub_str(exp["_rev"])}
                revs |= {self.sub_str(r) for r in exp.get("_conflicts", []) if isinstance(r, str)}
                self.leaves.setdefault(exp["_id"], set()).update(revs)
            for v in exp.values():
                self.track_leaves(v)
        elif isinstance(exp, list):
            for v in exp:
                self.track_leaves(v)

    # ----- comparison -------------------------------------------------------------------------

    def compare_value(self, exp: Any, act: Any, where: str, entry: Entry, key: str | None = None) -> list[str]:
        route = entry.path.split("?")[0]
        if where == "$" and isinstance(exp, dict) and isinstance(act, dict):
            segs = [s for s in route.split("/") if s]
            if segs == [] and entry.method == "GET" and exp.get("couchdb") == "Welcome":
                return self.compare_dict(exp, act, where, entry, WELCOME_VOLATILE, WELCOME_OPTIONAL)
            if len(segs) == 1 and entry.method == "GET" and "db_name" in exp:
                return self.compare_dict(exp, act, where, entry, DBINFO_VOLATILE, set())
            if "results" in exp and "last_seq" in exp:
                return self.compare_changes(exp, act, entry)
            if route.endswith("/_ensure_full_commit"):
                return self.compare_dict(exp, act, where, entry, {"instance_start_time"}, set())
        if isinstance(exp, dict):
            if not isinstance(act, dict):
                return [f"{where}: expected object, got {short(act)}"]
            return self.compare_dict(exp, act, where, entry, set(), set())
        if isinstance(exp, list):
            if not isinstance(act, list):
                return [f"{where}: expected array, got {short(act)}"]
            unordered = key in UNORDERED_LIST_KEYS or (where == "$" and "open_revs=all" in entry.path)
            return self.compare_list(exp, act, where, entry, unordered)
        if type(exp) is bool or type(act) is bool or exp is None or act is None:
            return [] if exp is act or (exp == act and type(exp) is type(act)) else \
                [f"{where}: {short(act)}, CouchDB {short(exp)}"]
        if isinstance(exp, (int, float)) and isinstance(act, (int, float)):
            return [] if exp == act else [f"{where}: {act!r}, CouchDB {exp!r}"]
        if exp != act or type(exp) is not type(act):
            return [f"{where}: {short(act)}, CouchDB {short(exp)}"]
        return []

    def compare_dict(self, exp: dict, act: dict, where: str, entry: Entry,
                     volatile: set, optional: set) -> list[str]:
        out = []
        winner = self.winner_divergence(exp, act)
        if winner:
            self.notes.append(f"{entry.describe()}: {where}: {winner}")
            return []
        for k in exp:
            if k in optional:
                continue
            if k not in act:
                out.append(f"{where}: missing key {k!r} (CouchDB: {short(exp[k])})")
            elif k not in volatile:
                out.extend(self.compare_value(exp[k], act[k], f"{where}.{k}", entry, k))
        for k in act:
            if k not in exp and k not in optional:
                out.append(f"{where}: unexpected key {k!r} = {short(act[k])}")
        return out

    def winner_divergence(self, exp: dict, act: dict) -> str | None:
        """Explain a different winning revision that is only due to server-made rev hashes.

        CouchDB picks the winner among conflicting leaves by comparing rev strings; when one of
        them was generated by the server itself (a harness write), a correct server may pick the
        other leaf. Accept that if the actual winner is a known leaf and beats the others.
        """
        doc_id, e_rev, a_rev = exp.get("_id"), exp.get("_rev"), act.get("_rev")
        if not (isinstance(doc_id, str) and isinstance(e_rev, str) and isinstance(a_rev, str)) or e_rev == a_rev:
            return None
        leaves = self.leaves.get(doc_id, set()) | {e_rev}
        if a_rev not in leaves or not (leaves & self.learned_revs):
            return None
        contenders = {a_rev, e_rev} | set(act.get("_conflicts", []))
        if max(contenders, key=rev_key) != a_rev:
            return None
        return (f"winner of {doc_id!r} is {a_rev}, CouchDB had {e_rev}: leaves carry server-made "
                "rev hashes, so the winner differs legitimately; body not compared")

    def compare_list(self, exp: list, act: list, where: str, entry: Entry, unordered: bool) -> list[str]:
        if not unordered:
            out = []
            if len(exp) != len(act):
                out.append(f"{where}: {len(act)} items, CouchDB {len(exp)}: {short(act)} vs {short(exp)}")
            for i, (e, a) in enumerate(zip(exp, act)):
                out.extend(self.compare_value(e, a, f"{where}[{i}]", entry))
            return out
        remaining = list(act)
        unmatched = []
        for e in exp:
            for i, a in enumerate(remaining):
                if not self.compare_value(e, a, f"{where}[]", entry):
                    del remaining[i]
                    break
            else:
                unmatched.append(e)
        out = []
        if unmatched:
            out.append(f"{where}: CouchDB items not matched: {short(unmatched)}")
        if remaining:
            out.append(f"{where}: unexpected items: {short(remaining)}")
        return out

    def compare_changes(self, exp: dict, act: dict, entry: Entry) -> list[str]:
        out = []
        _, _, query = entry.path.partition("?")
        params = dict(urllib.parse.parse_qsl(query))
        for k in exp:
            if k not in act:
                out.append(f"$: missing key {k!r}")
        for k in act:
            if k not in exp:
                out.append(f"$: unexpected key {k!r} = {short(act[k])}")
        if "pending" in exp and "pending" in act:
            out.extend(self.compare_value(exp["pending"], act["pending"], "$.pending", entry))
        exp_rows, act_rows = exp.get("results", []), act.get("results")
        if not isinstance(act_rows, list):
            return out + [f"$.results: expected array, got {short(act_rows)}"]
        if self.changes_truncated(exp, params):
            # CouchDB (q=2 shards) interleaves shards; with a limit, which rows come first is
            # the server's own order. Same count, same row shape.
            if len(exp_rows) != len(act_rows):
                out.append(f"$.results: {len(act_rows)} rows, CouchDB {len(exp_rows)} (limit {params.get('limit')})")
            for i, (e, a) in enumerate(zip(exp_rows, act_rows)):
                if not isinstance(a, dict) or set(a) != set(e):
                    out.append(f"$.results[{i}]: keys {sorted(a) if isinstance(a, dict) else short(a)}, "
                               f"CouchDB {sorted(e)}")
            self.notes.append(f"{entry.describe()}: limited _changes compared by count and shape only")
            return out
        by_id = {}
        for a in act_rows:
            if isinstance(a, dict):
                by_id.setdefault(a.get("id"), []).append(a)
        seen = set()
        for e in exp_rows:
            rows = by_id.get(e.get("id"))
            if not rows:
                out.append(f"$.results: no row for id {e.get('id')!r} (CouchDB: {short(e)})")
                continue
            seen.add(e.get("id"))
            # Row seqs are opaque and CouchDB's (q=2) interleave shards, so the same seq string can
            # stand for different points than ours: require a seq, compare everything else.
            a = rows[0]
            if isinstance(a, dict) and isinstance(e, dict) and "seq" in e:
                if "seq" not in a:
                    out.append(f"$.results[id={e.get('id')!r}]: missing key 'seq'")
                e = {k: v for k, v in e.items() if k != "seq"}
                a = {k: v for k, v in a.items() if k != "seq"}
            out.extend(self.compare_value(e, a, f"$.results[id={e.get('id')!r}]", entry))
        extra = [a.get("id") for a in act_rows if isinstance(a, dict) and a.get("id") not in seen]
        if extra:
            if params.get("feed") in ("longpoll", "continuous"):
                self.notes.append(f"{entry.describe()}: longpoll returned later rows too: {extra}")
            else:
                out.append(f"$.results: unexpected rows for ids {extra}")
        if len(act_rows) - len(extra) != len(exp_rows):
            out.append(f"$.results: {len(act_rows)} rows, CouchDB {len(exp_rows)}")
        return out

    def compare_multipart(self, entry: Entry, exp_type: str, exp_body: bytes, act_type: str, act_body: bytes) -> None:
        eb, ab = boundary_of(exp_type), boundary_of(act_type)
        if not ab:
            self.diff(entry, f"multipart answer without boundary: {act_type!r}")
            return
        try:
            exp_parts = parse_multipart(exp_body, eb)
            act_parts = parse_multipart(act_body, ab)
        except ValueError as exc:
            self.diff(entry, f"multipart answer does not parse: {exc}")
            return
        self.compare_parts(entry, exp_parts, act_parts, "part")

    def compare_parts(self, entry: Entry, exp_parts: list[Part], act_parts: list[Part], where: str) -> None:
        if len(exp_parts) != len(act_parts):
            self.diff(entry, f"{where}s: {len(act_parts)} parts, CouchDB {len(exp_parts)}: "
                             f"{[p.headers for p in act_parts]} vs {[p.headers for p in exp_parts]}")
        # Attachment parts are matched by file name: their order follows the JSON part's
        # `_attachments` order, which is checked separately.
        def key(p: Part) -> str:
            m = re.search(r'filename="([^"]*)"', p.headers.get("content-disposition", ""))
            return m.group(1) if m else ""
        act_by_name = {key(p): p for p in act_parts if key(p)}
        for i, e in enumerate(exp_parts):
            name = key(e)
            a = act_by_name.get(name) if name else (act_parts[i] if i < len(act_parts) else None)
            label = f"{where}[{name or i}]"
            if a is None:
                self.diff(entry, f"{label}: missing (CouchDB headers {e.headers})")
                continue
            for h in ("content-type", "content-disposition", "content-length", "content-encoding"):
                ev, av = e.headers.get(h), a.headers.get(h)
                if h == "content-type":
                    ev, av = media_type(ev), media_type(av)
                if ev != av:
                    self.diff(entry, f"{label}: header {h} {av!r}, CouchDB {ev!r}")
            if e.children is not None:
                if a.children is None:
                    self.diff(entry, f"{label}: expected a nested multipart")
                else:
                    self.compare_parts(entry, e.children, a.children, label + ".part")
                    self.check_attachment_order(entry, a.children, label)
            elif media_type(e.headers.get("content-type")) == "application/json":
                self.compare_json_body(entry, e.body, a.body, f"{label}: ")
            elif e.body != a.body:
                self.diff(entry, f"{label}: bytes differ ({len(a.body)} vs CouchDB {len(e.body)}, "
                                 f"first difference at {first_difference(e.body, a.body)})")

    def check_attachment_order(self, entry: Entry, parts: list[Part], label: str) -> None:
        """Attachment parts must follow the `follows` stubs of the JSON part in order."""
        if not parts or media_type(parts[0].headers.get("content-type")) != "application/json":
            return
        try:
            doc = json.loads(parts[0].body)
        except ValueError:
            return
        stubs = [n for n, s in (doc.get("_attachments") or {}).items() if isinstance(s, dict) and s.get("follows")]
        names = []
        for p in parts[1:]:
            m = re.search(r'filename="([^"]*)"', p.headers.get("content-disposition", ""))
            names.append(m.group(1) if m else None)
        if stubs != names:
            self.diff(entry, f"{label}: attachment parts {names} do not follow the JSON stubs order {stubs}")


def first_difference(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, bytes) else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
