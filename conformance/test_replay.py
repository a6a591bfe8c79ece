"""Replay every recorded CouchDB 3.4.3 conversation against the server under test.

Each transcript runs on a fresh, uniquely named database (mapped from the recorded name in
paths and bodies). Transcripts that continue an earlier one on the same database (the CouchDB
replicator's incremental push and pull continue its first push) replay their predecessors first.
POST /_session is replayed with COUCH_URL's credentials and judged as the replicator judges it.
See replay.py for what is mapped and what is compared.
"""

import os

import pytest
import requests

import replay
from conftest import unique_db_name

MAX_REPORTED_DIFFS = 40

if not os.path.isdir(replay.TRANSCRIPT_DIR):
    raise RuntimeError(f"transcripts not found at {replay.TRANSCRIPT_DIR} (expected <repo>/conformance/transcripts)")


class LiveTransport:
    """Sends replayed requests byte-exact (no requoting of the path) with COUCH_URL's auth."""

    def __init__(self, couch):
        self.couch = couch

    def __call__(self, method, path, headers, body, timeout, entry):
        session = self.couch.session if not replay.is_feed(entry) else self.fresh_session()
        req = requests.Request(method, self.couch.url(path), data=body or None, headers=headers)
        prep = session.prepare_request(req)
        prep.url = self.couch.url(path)
        if "Accept" not in headers and "accept" not in headers:
            prep.headers.pop("Accept", None)
        r = session.send(prep, timeout=(10, timeout), allow_redirects=False)
        return replay.Response(r.status_code, dict(r.headers), r.content)

    def fresh_session(self):
        s = requests.Session()
        s.auth = self.couch.session.auth
        return s


@pytest.mark.parametrize("path", replay.transcript_files(), ids=os.path.basename)
def test_replay(couch, path):
    name = unique_db_name("replay")
    rp = replay.Replayer(LiveTransport(couch), name, (couch.user, couch.password))
    try:
        for part in replay.replay_chain(path):
            before = len(rp.diffs)
            rp.replay(replay.load_transcript(part))
            if part != path and len(rp.diffs) > before:
                rp.diffs.insert(before, f"(while replaying predecessor {os.path.basename(part)} "
                                        f"to set up {os.path.basename(path)})")
    finally:
        couch.delete(f"/{name}")
    if rp.diffs:
        shown = rp.diffs[:MAX_REPORTED_DIFFS]
        more = len(rp.diffs) - len(shown)
        pytest.fail(f"{len(rp.diffs)} difference(s) from CouchDB 3.4.3 in {os.path.basename(path)}"
                    f" (db {name}):\n" + "\n".join(shown) + (f"\n… and {more} more" if more else "")
                    + (f"\nnotes: {len(rp.notes)} (e.g. {rp.notes[0]})" if rp.notes else ""),
                    pytrace=False)
