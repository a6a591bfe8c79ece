"""Thousands of `_replicator` documents do not make thousands of running jobs: at most `[replicator] max_jobs` run
(CouchDB's 500, `--replicator-max-jobs`), the others wait `pending` without a thread or a socket, and the pass
every `interval` starts them as slots free up and rotates continuous ones (CouchDB 3.4.3's scheduler).

200 documents (150 one-shot, 50 continuous) with `max_jobs` 10, each copying one document (`doc_ids`, so that
their replication ids differ) between the same databases: while they run, the process's threads (from
/proc/PID/status) and open descriptors (/proc/PID/fd) stay near those of ten jobs, `_active_tasks` and
`_scheduler/docs` never show more than ten running, and every one-shot job completes into its document. (The
databases are made before the measure starts: each open database has threads and files of its own.)
"""

from __future__ import annotations

import os
import time

import requests

from test_replication_e2e import Client, wait_for

MAX_JOBS = 10
ONE_SHOT = 150
CONTINUOUS = 50
# Generous per running job: its thread, the in-process server's threads for its connections to both databases,
# and a job stopped by a pass that is still checkpointing. Without the limit the documents make ~200 × this.
THREADS_PER_JOB = 6
DESCRIPTORS_PER_JOB = 12
# The writer and checkpointer threads of `src`, `once`, `live` and `_replicator`: they run only while their
# database is written to, so the idle count before the jobs has none of them.
DATABASE_THREADS = 4 * 2


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_two_hundred_documents_run_at_most_max_jobs_at_once(servers):
    a = servers("a", args=("--replicator-max-jobs", str(MAX_JOBS), "--replicator-interval", "300"))
    wait_for(lambda: requests.get(f"{a.url}/_replicator", timeout=5).status_code == 200, what="_replicator")
    src = Client(a.url, "src")
    src.create()
    src.bulk([{"_id": f"d{i:03}", "i": i} for i in range(ONE_SHOT + CONTINUOUS)])
    for name in ("once", "live"):
        target = Client(a.url, name)
        target.create()
        target.bulk([{"_id": "opened"}])
    time.sleep(0.5)
    idle_threads, idle_fds = a.status_kib("Threads"), open_descriptors(a.proc.pid)

    docs = [{"_id": f"once{i:03}", "source": "src", "target": "once", "doc_ids": [f"d{i:03}"]}
            for i in range(ONE_SHOT)]
    docs += [{"_id": f"live{i:03}", "source": "src", "target": "live", "doc_ids": [f"d{ONE_SHOT + i:03}"],
              "continuous": True} for i in range(CONTINUOUS)]
    r = requests.post(f"{a.url}/_replicator/_bulk_docs", json={"docs": docs}, timeout=30)
    assert r.status_code == 201 and all("ok" in row for row in r.json()), r.text

    peak_threads = peak_fds = peak_tasks = peak_running = 0
    pending_seen = 0
    deadline = time.monotonic() + 240
    while True:
        peak_threads = max(peak_threads, a.status_kib("Threads"))
        peak_fds = max(peak_fds, open_descriptors(a.proc.pid))
        peak_tasks = max(peak_tasks, len(requests.get(f"{a.url}/_active_tasks", timeout=10).json()))
        states = [d["state"] for d in requests.get(f"{a.url}/_scheduler/docs", timeout=10).json()["docs"]]
        peak_running = max(peak_running, states.count("running"))
        pending_seen = max(pending_seen, states.count("pending"))
        if states.count("completed") == ONE_SHOT:
            break
        assert time.monotonic() < deadline, f"one-shot jobs left: {ONE_SHOT - states.count('completed')}, {states}"
        time.sleep(0.1)

    assert peak_running <= MAX_JOBS and peak_tasks <= MAX_JOBS, (peak_running, peak_tasks)
    assert pending_seen >= len(docs) - 2 * MAX_JOBS, pending_seen  # the others waited
    # One job more than MAX_JOBS: a one-shot that has just ended may not have joined its threads when the next one
    # starts (a fresh CI run saw 85 against 84 once); without the limit the peak is ~200 jobs' threads.
    assert peak_threads <= idle_threads + DATABASE_THREADS + (MAX_JOBS + 1) * THREADS_PER_JOB, (idle_threads, peak_threads)
    assert peak_fds <= idle_fds + MAX_JOBS * DESCRIPTORS_PER_JOB, (idle_fds, peak_fds)
    print(f"threads {idle_threads} idle, {peak_threads} peak; descriptors {idle_fds} idle, {peak_fds} peak")

    # Every one-shot job wrote its outcome and its document; the continuous ones still take turns, ten at a time.
    for i in (0, ONE_SHOT // 2, ONE_SHOT - 1):
        doc = requests.get(f"{a.url}/_replicator/once{i:03}", timeout=5).json()
        assert doc["_replication_state"] == "completed" and doc["_replication_stats"]["docs_written"] == 1, doc
    assert requests.get(f"{a.url}/once", timeout=5).json()["doc_count"] == ONE_SHOT + 1
    states = [d["state"] for d in requests.get(f"{a.url}/_scheduler/docs", timeout=10).json()["docs"]
              if d["doc_id"].startswith("live")]
    assert states.count("running") <= MAX_JOBS and set(states) <= {"running", "pending"}, states
    jobs = requests.get(f"{a.url}/_scheduler/jobs", params={"limit": 1000}, timeout=10).json()
    assert jobs["total_rows"] == CONTINUOUS, jobs["total_rows"]
