"""The replication scheduler runs at most `[replicator] max_jobs` jobs; the others wait, `pending`, and a pass every
`[replicator] interval` rotates up to `max_churn` of them in for the longest-running continuous ones (CouchDB
3.4.3's `couch_replicator_scheduler`). The settings are read and changed through `_config`.

With `max_jobs` 1 and three continuous `_replicator` documents, `_scheduler/docs`, `_scheduler/jobs` and
`_active_tasks` show one running and two pending in CouchDB's shapes; with an `interval` of 1 s each pass stops the
running job (`stopped` in its history, `pending`) and starts a waiting one; with a long `interval` the running one
stays, and a continuous `_replicate` added meanwhile waits too (a job without a document), until cancelled.

The settings are put back afterwards, whatever happens: where CouchDB had none set, the default is put (its
scheduler ignores a deleted key and keeps the last value) and then deleted. CouchDB applies a new `interval` from
its next pass, so the first pass may come up to its previous interval (60 s by default) after the change: the
waits are long. The documents' and databases' names start `scheduler-` (the real CouchDB these tests also run
against is shared).
"""

from __future__ import annotations

import threading
import time
import urllib.parse
import uuid

import pytest

from test_scheduler_states import INFO_FIELDS, JOB_FIELDS, SCHEDULED_DOC_FIELDS, TASK_FIELDS, wait_for

FIRST_PASS_S = 90.0
SETTINGS = {"max_jobs": "1", "interval": "1000"}
# CouchDB's defaults, put back before a key CouchDB did not have set is deleted.
DEFAULTS = {"max_jobs": "500", "max_churn": "20", "interval": "60000"}
JOBS = 3


def set_config(couch, key: str, value: str) -> str:
    """Sets `[replicator] key`; returns the value before (`""` where CouchDB had none set)."""
    r = couch.put(f"/_node/_local/_config/replicator/{key}", json=value)
    assert r.status_code == 200, r.text
    return r.json()


def restore_config(couch, key: str, old: str) -> None:
    couch.put(f"/_node/_local/_config/replicator/{key}", json=old or DEFAULTS[key])
    if old == "":
        couch.delete(f"/_node/_local/_config/replicator/{key}")


class Jobs:
    """Three continuous `_replicator` documents from one source database to three targets."""

    def __init__(self, couch):
        self.couch = couch
        tag = uuid.uuid4().hex[:8]
        self.src = f"scheduler-{tag}-src"
        self.ids = [f"scheduler-{tag}-live{i}" for i in range(JOBS)]
        self.targets = [f"scheduler-{tag}-tgt{i}" for i in range(JOBS)]

    def url(self, name) -> str:
        parts = urllib.parse.urlsplit(self.couch.base)
        user, secret = urllib.parse.quote(self.couch.user), urllib.parse.quote(self.couch.password)
        return f"{parts.scheme}://{user}:{secret}@{parts.netloc}/{name}"

    def rows(self) -> dict[str, dict]:
        """`_scheduler/docs` rows of these documents, by id."""
        r = self.couch.get("/_scheduler/docs/_replicator")
        assert r.status_code == 200, r.text
        return {d["doc_id"]: d for d in r.json()["docs"] if d["doc_id"] in self.ids}

    def states(self) -> dict[str, str]:
        return {doc_id: row["state"] for doc_id, row in self.rows().items()}

    def job(self, job_id) -> dict:
        r = self.couch.get(f"/_scheduler/jobs/{urllib.parse.quote(job_id, safe='')}")
        assert r.status_code == 200, r.text
        return r.json()

    def one_running(self):
        """The rows when one job runs and the others wait (in one answer), else None."""
        rows = self.rows()
        states = sorted(row["state"] for row in rows.values())
        return rows if states == ["pending"] * (JOBS - 1) + ["running"] else None


@pytest.fixture(scope="module")
def jobs(couch):
    previous = {}
    j = Jobs(couch)
    try:
        for key, value in SETTINGS.items():
            previous[key] = set_config(couch, key, value)
        assert couch.put(f"/{j.src}").status_code == 201
        r = couch.post(f"/{j.src}/_bulk_docs", json={"docs": [{"_id": f"d{i}"} for i in range(3)]})
        assert r.status_code == 201, r.text
        for doc_id, target in zip(j.ids, j.targets):
            body = {"source": j.url(j.src), "target": j.url(target), "create_target": True, "continuous": True}
            r = couch.put(f"/_replicator/{doc_id}", json=body)
            assert r.status_code == 201, r.text
        yield j
    finally:
        for doc_id in j.ids:
            doc = couch.get(f"/_replicator/{doc_id}")
            if doc.status_code == 200:
                couch.delete(f"/_replicator/{doc_id}", params={"rev": doc.json()["_rev"]})
        for name in [j.src, *j.targets]:
            couch.delete(f"/{name}")
        for key, old in previous.items():
            restore_config(couch, key, old)


def test_the_settings_read_back_through_config(jobs):
    section = jobs.couch.get("/_node/_local/_config/replicator").json()
    for key, value in SETTINGS.items():
        assert section[key] == value, section
        r = jobs.couch.get(f"/_node/_local/_config/replicator/{key}")
        assert r.status_code == 200 and r.json() == value, r.text


def assert_pending_shape(jobs, doc_id, row) -> None:
    """A waiting job's `_scheduler/docs` row and `_scheduler/jobs` entry, as CouchDB shows them."""
    assert set(row) == SCHEDULED_DOC_FIELDS, row
    assert row["state"] == "pending" and row["error_count"] == 0, row
    job = jobs.job(row["id"])
    assert set(job) == JOB_FIELDS, job
    assert job["pid"] is None and job["doc_id"] == doc_id and job["database"] == "_replicator", job
    history = [h["type"] for h in job["history"]]
    assert history[-1] == "added" and "crashed" not in history, history
    if history == ["added"]:
        # Never ran: no counters.
        assert row["info"] is None and job["info"] is None, (row, job)
    else:
        # Stopped by a pass: its counters as its run last reported them (none yet is CouchDB's null).
        assert history[:2] == ["stopped", "started"], history
        assert row["info"] is None or INFO_FIELDS <= set(row["info"]), row
    assert all(set(h) == {"timestamp", "type"} for h in job["history"]), job["history"]
    # A waiting job writes nothing into its document.
    doc = jobs.couch.get(f"/_replicator/{doc_id}").json()
    assert not any(key.startswith("_replication") for key in doc), doc


def test_max_jobs_one_runs_one_job_and_the_others_are_pending(jobs):
    rows = wait_for(jobs.one_running, "one running job and two pending", FIRST_PASS_S)
    for doc_id, row in rows.items():
        assert row["database"] == "_replicator", row
        assert isinstance(row["id"], str) and row["id"].endswith("+continuous+create_target"), row
        if row["state"] == "pending":
            assert_pending_shape(jobs, doc_id, row)
    listed = jobs.couch.get("/_scheduler/jobs").json()["jobs"]
    ours = [j for j in listed if j["doc_id"] in jobs.ids]
    assert sorted(j["doc_id"] for j in ours) == sorted(jobs.ids), listed  # pending jobs are jobs too
    # The `states` filter knows `pending`.
    r = jobs.couch.get("/_scheduler/docs/_replicator", params={"states": "pending"})
    assert r.status_code == 200, r.text
    assert all(d["state"] == "pending" for d in r.json()["docs"]), r.json()


def test_each_pass_rotates_a_pending_job_in_for_the_running_one(jobs):
    first = wait_for(jobs.one_running, "one running job", FIRST_PASS_S)
    before = next(doc_id for doc_id, row in first.items() if row["state"] == "running")
    rows = wait_for(lambda: (lambda r: r if r and r[before]["state"] == "pending" else None)(jobs.one_running()),
                    "the running job rotated out", timeout_s=30)
    assert_pending_shape(jobs, before, rows[before])
    after = next(doc_id for doc_id, row in rows.items() if row["state"] == "running")
    assert after != before


def test_between_passes_only_the_running_job_is_a_task(jobs):
    old = set_config(jobs.couch, "interval", "60000")
    try:
        time.sleep(3.5)  # the pass already due at the old interval

        def alone_a_task():
            """The running job's row and the tasks, once only it is a task (CouchDB's task appears when the run
            has opened both ends, and a stopped run's goes when its process has checkpointed and ended)."""
            rows = jobs.one_running()
            if not rows:
                return None
            running = next(row for row in rows.values() if row["state"] == "running")
            tasks = [t for t in jobs.couch.get("/_active_tasks").json() if t.get("doc_id") in jobs.ids]
            return (running, tasks) if [t["doc_id"] for t in tasks] == [running["doc_id"]] else None

        running, tasks = wait_for(alone_a_task, "the running job alone a task", timeout_s=30)
        job = jobs.job(running["id"])
        assert isinstance(job["pid"], str) and job["history"][0]["type"] == "started", job
        assert TASK_FIELDS <= set(tasks[0]) and tasks[0]["pid"] == jobs.job(running["id"])["pid"], tasks
        assert jobs.states()[running["doc_id"]] == "running", jobs.rows()

        # A continuous `_replicate` is a job of the same scheduler: with no slot free it waits for a pass.
        body = {"source": jobs.url(jobs.src), "target": jobs.url(jobs.targets[0]), "continuous": True,
                "doc_ids": ["d0"]}
        r = jobs.couch.post("/_replicate", json=body)
        assert r.status_code == 202 and r.json()["ok"] is True, r.text
        local_id = r.json()["_local_id"]
        try:
            job = jobs.job(local_id)
            assert set(job) == JOB_FIELDS, job
            assert job["pid"] is None and job["doc_id"] is None and job["database"] is None, job
            assert [h["type"] for h in job["history"]] == ["added"] and job["info"] is None, job
            assert not any(t.get("replication_id") == local_id for t in jobs.couch.get("/_active_tasks").json())
        finally:
            r = jobs.couch.post("/_replicate", json={"replication_id": local_id, "cancel": True})
            assert r.status_code == 200 and r.json() == {"ok": True, "_local_id": local_id}, r.text
        gone = jobs.couch.get(f"/_scheduler/jobs/{urllib.parse.quote(local_id, safe='')}")
        assert gone.status_code == 404, gone.text
    finally:
        set_config(jobs.couch, "interval", old)


def test_a_one_shot_replicate_waits_pending_for_a_free_slot(jobs):
    # CouchDB's `_replicate` without `continuous` is a transient job of the same scheduler (do_replication_loop):
    # with max_jobs taken it waits, pending, and its request with it, until a pass gives it a slot.
    old_interval = set_config(jobs.couch, "interval", "60000")
    target = jobs.src.replace("-src", "-oneshot")
    answer = {}
    try:
        time.sleep(3.5)  # the pass already due at the old interval
        wait_for(jobs.one_running, "one running job", timeout_s=30)
        body = {"source": jobs.url(jobs.src), "target": jobs.url(target), "create_target": True}
        thread = threading.Thread(
            target=lambda: answer.update(r=jobs.couch.post("/_replicate", json=body, timeout=FIRST_PASS_S + 60)))
        thread.start()

        def waiting():
            listed = jobs.couch.get("/_scheduler/jobs").json()["jobs"]
            return next((j for j in listed if j["doc_id"] is None and target in j["target"]), None)

        job = wait_for(waiting, "the one-shot job listed", timeout_s=30)
        assert job["pid"] is None and job["database"] is None, job
        assert [h["type"] for h in job["history"]] == ["added"] and job["info"] is None, job
        time.sleep(1)
        assert thread.is_alive() and "r" not in answer  # the request waits with its job
        set_config(jobs.couch, "max_jobs", "2")
        set_config(jobs.couch, "interval", "1000")
        thread.join(FIRST_PASS_S + 60)
        r = answer["r"]
        assert r.status_code == 200 and r.json()["ok"] is True, r.text
        assert r.json()["history"][0]["docs_written"] == 3, r.json()
        assert jobs.couch.get(f"/{target}").json()["doc_count"] == 3
    finally:
        set_config(jobs.couch, "max_jobs", "1")
        set_config(jobs.couch, "interval", old_interval)
        jobs.couch.delete(f"/{target}")
