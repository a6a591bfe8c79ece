"""A failing replication can be diagnosed (issue 28, item 1): `_scheduler/docs`, `_scheduler/jobs`, `_active_tasks`
and the `_replicator` document answer as CouchDB 3.4.3 does for a job that runs, one that crashes (a source that
refuses connections, a missing database, a wrong password) with CouchDB's reason and history, one that failed (its
replication already runs for another document) and a one-shot that completed.

The documents are all made at once by a module fixture, so the crashes happen side by side: CouchDB's first crash
comes within seconds (a refused connection after its request retries, ~12 s). Their ids start `scheduler-` and
their databases too (the real CouchDB these tests also run against is shared); both go afterwards. Endpoints are
URLs of the server under test, which must reach itself at COUCH_URL.
"""

from __future__ import annotations

import re
import time
import urllib.parse
import uuid

import pytest

DEADLINE_S = 45.0
ISO_SECONDS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")

# CouchDB 3.4.3's fields, by kind of row.
SCHEDULED_DOC_FIELDS = {"database", "doc_id", "id", "node", "source", "target", "state", "info", "error_count",
                        "last_updated", "start_time", "source_proxy", "target_proxy"}
FINISHED_DOC_FIELDS = {"database", "doc_id", "id", "source", "target", "state", "error_count", "info", "start_time",
                       "last_updated"}
JOB_FIELDS = {"id", "pid", "source", "target", "database", "user", "doc_id", "info", "history", "node", "start_time"}
INFO_FIELDS = {"revisions_checked", "missing_revisions_found", "docs_read", "docs_written", "changes_pending",
               "doc_write_failures", "bulk_get_docs", "bulk_get_attempts", "checkpointed_source_seq"}
TASK_FIELDS = {"node", "pid", "process_status", "bulk_get_attempts", "bulk_get_docs", "changes_pending",
               "checkpoint_interval", "checkpointed_source_seq", "continuous", "database", "doc_id",
               "doc_write_failures", "docs_read", "docs_written", "missing_revisions_found", "replication_id",
               "revisions_checked", "source", "source_seq", "started_on", "target", "through_seq", "type",
               "updated_on", "user"}
DOCS = 3


class Scenario:
    """The databases and `_replicator` documents of the module, by role."""

    def __init__(self, couch):
        self.couch = couch
        tag = uuid.uuid4().hex[:8]
        self.dbs = {role: f"scheduler-{tag}-{role}" for role in
                    ("src", "tgt-once", "tgt-live", "tgt-refused", "tgt-missing", "tgt-denied")}
        self.missing = f"scheduler-{tag}-nothere"
        self.ids = {role: f"scheduler-{tag}-{role}" for role in
                    ("once", "live", "refused", "missing", "denied", "duplicate")}

    def url(self, name, password=None) -> str:
        parts = urllib.parse.urlsplit(self.couch.base)
        secret = urllib.parse.quote(self.couch.password if password is None else password)
        return f"{parts.scheme}://{urllib.parse.quote(self.couch.user)}:{secret}@{parts.netloc}/{name}"

    def shown(self, name) -> str:
        """A URL as CouchDB shows it: without credentials, ending in `/`."""
        return f"{self.couch.base}/{name}/"

    def put_job(self, role, body):
        r = self.couch.put(f"/_replicator/{self.ids[role]}", json=body)
        assert r.status_code == 201, r.text

    def doc(self, role) -> dict:
        return self.couch.get(f"/_replicator/{self.ids[role]}").json()

    def scheduler_doc(self, role) -> dict:
        r = self.couch.get(f"/_scheduler/docs/_replicator/{self.ids[role]}")
        assert r.status_code in (200, 404), r.text
        return r.json() if r.status_code == 200 else {}

    def job(self, job_id) -> dict:
        r = self.couch.get(f"/_scheduler/jobs/{urllib.parse.quote(job_id, safe='')}")
        assert r.status_code == 200, r.text
        # A job id's `+`s (`<hash>+continuous`) written as they are: the path decodes them as spaces, which
        # CouchDB turns back.
        plain = self.couch.get(f"/_scheduler/jobs/{job_id}")
        assert plain.status_code == 200 and plain.json()["id"] == job_id, plain.text
        return r.json()


def wait_for(condition, what: str, timeout_s: float = DEADLINE_S):
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:.0f} s"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def scenario(couch):
    s = Scenario(couch)
    for name in s.dbs.values():
        assert couch.put(f"/{name}").status_code == 201
    r = couch.post(f"/{s.dbs['src']}/_bulk_docs", json={"docs": [{"_id": f"d{i}", "i": i} for i in range(DOCS)]})
    assert r.status_code == 201, r.text
    s.put_job("once", {"source": s.url(s.dbs["src"]), "target": s.url(s.dbs["tgt-once"])})
    s.put_job("live", {"source": s.url(s.dbs["src"]), "target": s.url(s.dbs["tgt-live"]), "continuous": True})
    # Port 1 refuses connections (nothing listens there).
    s.put_job("refused", {"source": "http://127.0.0.1:1/scheduler-gone", "target": s.url(s.dbs["tgt-refused"])})
    s.put_job("missing", {"source": s.url(s.missing), "target": s.url(s.dbs["tgt-missing"])})
    s.put_job("denied", {"source": s.url(s.dbs["src"], password="wrong"), "target": s.url(s.dbs["tgt-denied"])})
    yield s
    for role in s.ids:
        doc = couch.get(f"/_replicator/{s.ids[role]}")
        if doc.status_code == 200:
            couch.delete(f"/_replicator/{s.ids[role]}", params={"rev": doc.json()["_rev"]})
    for name in list(s.dbs.values()) + [s.missing]:
        couch.delete(f"/{name}")


def crashed(scenario, role) -> dict:
    return wait_for(lambda: (lambda d: d if d.get("state") == "crashing" else None)(scenario.scheduler_doc(role)),
                    f"{role} crashing")


def assert_crashing_shape(scenario, role, row) -> str:
    """The fields CouchDB gives a crashing job's document and job; returns the crash reason."""
    assert set(row) == SCHEDULED_DOC_FIELDS, row
    assert row["database"] == "_replicator" and row["doc_id"] == scenario.ids[role]
    assert isinstance(row["id"], str) and row["id"], row
    assert row["error_count"] == 1, row
    assert set(row["info"]) == {"error"} and isinstance(row["info"]["error"], str), row
    assert ISO_SECONDS.fullmatch(row["last_updated"]) and ISO_SECONDS.fullmatch(row["start_time"]), row
    assert row["last_updated"] >= row["start_time"], row
    assert row["source_proxy"] is None and row["target_proxy"] is None
    job = scenario.job(row["id"])
    assert set(job) == JOB_FIELDS, job
    assert job["pid"] is None and job["doc_id"] == scenario.ids[role] and job["database"] == "_replicator", job
    assert job["info"] is None, job  # it never got to count anything
    assert [h["type"] for h in job["history"]] == ["crashed", "started", "added"], job["history"]
    newest = job["history"][0]
    assert set(newest) == {"timestamp", "type", "reason"} and newest["reason"] == row["info"]["error"], newest
    assert newest["timestamp"] == row["last_updated"], (newest, row)
    assert all(ISO_SECONDS.fullmatch(h["timestamp"]) for h in job["history"])
    assert set(job["history"][1]) == {"timestamp", "type"}
    # A crashing job writes nothing into its document (CouchDB's `update_docs` is off).
    assert not any(key.startswith("_replication") for key in scenario.doc(role)), scenario.doc(role)
    tasks = scenario.couch.get("/_active_tasks").json()
    assert not any(t.get("doc_id") == scenario.ids[role] for t in tasks), tasks
    return row["info"]["error"]


def test_a_source_that_refuses_connections_is_crashing_with_couchdbs_reason(scenario):
    row = crashed(scenario, "refused")
    reason = assert_crashing_shape(scenario, "refused", row)
    assert row["source"] == "http://127.0.0.1:1/scheduler-gone/", row
    assert row["target"] == scenario.shown(scenario.dbs["tgt-refused"]), row
    # CouchDB: {http_request_failed,"GET","http://127.0.0.1:1/scheduler-gone/",
    #                               {error,{error,{conn_failed,{error,econnrefused}}}}} (over two lines)
    assert reason.startswith('{http_request_failed,"GET","http://127.0.0.1:1/scheduler-gone/",'), reason
    assert re.sub(r"\s+", "", reason).endswith("{error,{error,{conn_failed,{error,econnrefused}}}}}"), reason


def test_a_missing_source_database_is_crashing_with_db_not_found(scenario):
    row = crashed(scenario, "missing")
    reason = assert_crashing_shape(scenario, "missing", row)
    assert reason == f"db_not_found: could not open {scenario.shown(scenario.missing)}", reason
    assert row["source"] == scenario.shown(scenario.missing)


def test_a_wrong_password_is_crashing_with_the_session_refusal(scenario):
    row = crashed(scenario, "denied")
    reason = assert_crashing_shape(scenario, "denied", row)
    assert row["source"] == scenario.shown(scenario.dbs["src"]), row  # no credentials shown
    assert "wrong" not in reason and "wrong" not in str(scenario.job(row["id"]))
    compact = re.sub(r"\s+", "", reason)
    session = f'"{scenario.couch.base}/_session"'
    assert compact == f'{{replication_auth_error,{{session_request_unauthorized,{session},"{scenario.couch.user}"}}}}'


def test_a_continuous_job_is_running_with_its_counters(scenario):
    row = wait_for(lambda: (lambda d: d if d.get("state") == "running" and isinstance(d.get("info"), dict)
                            and d["info"].get("docs_written") == DOCS else None)(scenario.scheduler_doc("live")),
                   "the continuous job's counters")
    assert set(row) == SCHEDULED_DOC_FIELDS, row
    assert row["error_count"] == 0 and row["id"].endswith("+continuous"), row
    assert INFO_FIELDS | {"source_seq", "through_seq"} == set(row["info"]), row["info"]
    assert row["info"]["docs_read"] == DOCS and row["info"]["doc_write_failures"] == 0
    assert row["source"] == scenario.shown(scenario.dbs["src"]) and "pass" not in row["source"]
    job = scenario.job(row["id"])
    assert set(job) == JOB_FIELDS and isinstance(job["pid"], str), job
    assert [h["type"] for h in job["history"]] == ["started", "added"], job["history"]
    assert set(job["info"]) == INFO_FIELDS | {"source_seq", "through_seq"}
    listed = scenario.couch.get("/_scheduler/jobs").json()
    assert set(listed) == {"total_rows", "offset", "jobs"} and listed["offset"] == 0
    assert any(j["id"] == row["id"] for j in listed["jobs"]), listed
    assert [j["id"] for j in listed["jobs"]] == sorted(j["id"] for j in listed["jobs"])
    task = next(t for t in scenario.couch.get("/_active_tasks").json() if t.get("doc_id") == scenario.ids["live"])
    assert TASK_FIELDS <= set(task), TASK_FIELDS - set(task)
    assert task["type"] == "replication" and task["continuous"] is True and task["replication_id"] == row["id"]
    assert task["pid"] == job["pid"] and task["docs_written"] == DOCS and task["user"] is None
    assert task["source"] == row["source"], task


def test_a_one_shot_job_completes_into_its_document(scenario):
    doc = wait_for(lambda: (lambda d: d if d.get("_replication_state") == "completed" else None)(
        scenario.doc("once")), "the one-shot job's completion")
    assert ISO_SECONDS.fullmatch(doc["_replication_state_time"]), doc
    assert "_replication_state_reason" not in doc and "_replication_id" not in doc, doc
    stats = doc["_replication_stats"]
    assert set(stats) == INFO_FIELDS | {"start_time"}, stats
    assert stats["docs_written"] == DOCS and stats["docs_read"] == DOCS, stats
    assert ISO_SECONDS.fullmatch(stats["start_time"]), stats
    row = scenario.scheduler_doc("once")
    assert set(row) == FINISHED_DOC_FIELDS, row
    assert row["state"] == "completed" and row["id"] is None and row["error_count"] == 0, row
    assert set(row["info"]) == INFO_FIELDS and row["info"]["docs_written"] == DOCS, row
    assert row["start_time"] == stats["start_time"] and row["last_updated"] == doc["_replication_state_time"]
    assert row["target"] == scenario.shown(scenario.dbs["tgt-once"]), row
    jobs = scenario.couch.get("/_scheduler/jobs").json()["jobs"]
    assert not any(j["doc_id"] == scenario.ids["once"] for j in jobs), jobs


def test_a_second_document_for_a_running_replication_fails(scenario):
    live = wait_for(lambda: (lambda d: d if d.get("state") == "running" else None)(scenario.scheduler_doc("live")),
                    "the continuous job")
    same = {"source": scenario.url(scenario.dbs["src"]), "target": scenario.url(scenario.dbs["tgt-live"]),
            "continuous": True}
    scenario.put_job("duplicate", same)
    doc = wait_for(lambda: (lambda d: d if d.get("_replication_state") == "failed" else None)(
        scenario.doc("duplicate")), "the duplicate's failure")
    expected = (f"Replication `{live['id']}` specified by document `{scenario.ids['duplicate']}` already started, "
                f"triggered by document `{scenario.ids['live']}` from db `_replicator`")
    assert doc["_replication_state_reason"] == expected, doc
    assert ISO_SECONDS.fullmatch(doc["_replication_state_time"]) and "_replication_stats" not in doc, doc
    row = scenario.scheduler_doc("duplicate")
    assert set(row) == FINISHED_DOC_FIELDS, row
    assert row["state"] == "failed" and row["id"] is None and row["error_count"] == 1, row
    assert row["info"] == {"error": expected}, row
    assert row["start_time"] == row["last_updated"] == doc["_replication_state_time"], row
    # The running job is not disturbed.
    assert scenario.scheduler_doc("live")["state"] == "running"


def test_scheduler_docs_filter_by_state(scenario):
    crashed(scenario, "missing")
    r = scenario.couch.get("/_scheduler/docs", params={"states": "crashing"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"total_rows", "offset", "docs"}
    assert body["docs"] and all(d["state"] == "crashing" for d in body["docs"]), body
    assert any(d["doc_id"] == scenario.ids["missing"] for d in body["docs"])
    one = scenario.couch.get("/_scheduler/docs", params={"limit": "1"}).json()
    assert len(one["docs"]) == 1 and one["total_rows"] >= 5, one


@pytest.mark.parametrize("path, status, body", [
    ("/_scheduler/docs?states=bogus", 400, {"error": "query_parse_error", "reason":
                                            "States must be one or more of "
                                            "[initializing,error,running,pending,crashing,completed,failed]"}),
    ("/_scheduler/docs/other", 400, {"error": "bad_request", "reason": "Invalid path"}),
    ("/_scheduler/docs/_replicator/scheduler-no-such-doc", 404, {"error": "not_found", "reason": "missing"}),
    ("/_scheduler/jobs/no-such-job", 404, {"error": "not_found", "reason": "missing"}),
])
def test_scheduler_errors(couch, path, status, body):
    r = couch.get(path)
    assert r.status_code == status and r.json() == body, (r.status_code, r.text)


def test_deleting_a_crashing_document_removes_its_job(scenario, couch):
    tag = uuid.uuid4().hex[:8]
    doc_id = f"scheduler-{tag}-gone"
    body = {"source": scenario.url(f"scheduler-{tag}-nothere"), "target": scenario.url(scenario.dbs["tgt-missing"])}
    assert couch.put(f"/_replicator/{doc_id}", json=body).status_code == 201
    row = wait_for(lambda: (lambda r: r.json() if r.status_code == 200 and r.json().get("state") == "crashing"
                            else None)(couch.get(f"/_scheduler/docs/_replicator/{doc_id}")), "its crash")
    rev = couch.get(f"/_replicator/{doc_id}").json()["_rev"]
    assert couch.delete(f"/_replicator/{doc_id}", params={"rev": rev}).status_code == 200
    wait_for(lambda: couch.get(f"/_scheduler/jobs/{row['id']}").status_code == 404, "the job's removal")
    wait_for(lambda: couch.get(f"/_scheduler/docs/_replicator/{doc_id}").status_code == 404, "the row's removal")


@pytest.mark.parametrize("fields, reason", [
    ({"source": "http://", "target": "TARGET"}, "endpoint has an invalid url"),
    ({"source": {"url": "http://"}, "target": "TARGET"}, "endpoint has an invalid url"),
    ({"source": "http://host:notaport/db", "target": "TARGET"}, "endpoint has an invalid url"),
    ({"source": "TARGET"}, "Missing replicator database"),
    ({"source": "TARGET", "target": "TARGET", "doc_ids": "d1"},
     "{throw,{bad_request,<<\"parameter `doc_ids` must be an array\">>}}"),
    ({"source": "TARGET", "target": "TARGET", "continuous": "yes"},
     "{throw,{bad_request,<<\"parameter `continuous` must be a boolean\">>}}"),
    ({"source": "TARGET", "target": "TARGET", "filter": "nofilter"}, "Invalid filter. Must match `ddocname/filtername`."),
])
def test_a_document_that_is_no_replication_is_refused_at_write(couch, fields, reason):
    """CouchDB checks `_replicator` documents as they are written (`before_doc_update`): one it cannot read as a
    replication is a 403, never stored (so it never becomes a `failed` job)."""
    parts = urllib.parse.urlsplit(couch.base)
    target = f"{parts.scheme}://{parts.netloc}/scheduler-never-made"
    body = {key: (target if value == "TARGET" else value) for key, value in fields.items()}
    doc_id = f"scheduler-{uuid.uuid4().hex[:8]}-refused-at-write"
    r = couch.put(f"/_replicator/{doc_id}", json=body)
    if r.status_code == 201:  # clean up before failing
        couch.delete(f"/_replicator/{doc_id}", params={"rev": r.json()["rev"]})
    assert r.status_code == 403 and r.json() == {"error": "forbidden", "reason": reason}, (r.status_code, r.text)
    assert couch.get(f"/_replicator/{doc_id}").status_code == 404
