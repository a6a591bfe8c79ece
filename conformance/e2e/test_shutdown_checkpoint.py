"""SIGTERM while replications run (issue 16, "Metrics and logs"): the replication writes its checkpoint
before the process exits, so the next start resumes from there instead of from 0.

Each test makes the checkpoint depend on the stop: `checkpoint_interval` / `--checkpoint-docs` are far
beyond the test's length and the batches small, so without a checkpoint at SIGTERM the `_local` document
would not exist and the restart would read every change again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import requests

from test_replication_e2e import Client, doc_count, wait_for

DOCS = 1200


def seed(server, db="src"):
    src = Client(server.url, db)
    src.create()
    for start in range(0, DOCS, 600):
        src.bulk([{"_id": f"d{i:05}", "i": i} for i in range(start, start + 600)])
    return src


def checkpoint(server, db, rep_id):
    r = requests.get(f"{server.url}/{db}/_local/{rep_id}", timeout=5)
    return r.json() if r.status_code == 200 else None


def seq_number(seq) -> int:
    return int(str(seq).split("-")[0])


def test_sigterm_checkpoints_a_replicator_job_and_the_restart_resumes_there(servers):
    a = servers("a")
    b = servers("b")
    seed(a)
    wait_for(lambda: requests.get(f"{a.url}/_replicator", timeout=5).status_code == 200, what="_replicator")
    job = {"source": "src", "target": f"{b.url}/dst", "create_target": True, "worker_batch_size": 10,
           "checkpoint_interval": 3_600_000}
    assert requests.put(f"{a.url}/_replicator/big", json=job, timeout=5).status_code == 201
    wait_for(lambda: doc_count(b, "dst") >= DOCS // 8, what="the replication to be under way")
    jobs = requests.get(f"{a.url}/_scheduler/jobs", timeout=5).json()["jobs"]
    rep_id = jobs[0]["id"].split("+")[0]
    assert checkpoint(b, "dst", rep_id) is None, "no checkpoint may exist before SIGTERM"

    started = time.monotonic()
    a.kill(signal.SIGTERM)
    assert a.proc.returncode == 0, a.log_tail()
    stop_seconds = time.monotonic() - started
    written = doc_count(b, "dst")
    assert 0 < written < DOCS, f"the test needs SIGTERM mid-way ({written} of {DOCS} written)"

    # The checkpoint on the target records what was written.
    log = checkpoint(b, "dst", rep_id)
    assert log is not None, "SIGTERM wrote no checkpoint"
    recorded = seq_number(log["source_last_seq"])
    # Every change up to the recorded sequence is on the target (a cut batch is checked again later).
    assert 0 < recorded <= written, (recorded, written)
    assert written - recorded <= 10 * 4 + 10, (recorded, written)
    assert log["history"][0]["docs_written"] >= recorded - 10, log["history"][0]

    # The restart resumes from the checkpoint: it reads only the changes after it.
    a.start()
    wait_for(lambda: doc_count(b, "dst") == DOCS, timeout=60, what="the resumed job to finish")
    final = wait_for(
        lambda: (lambda doc: doc if doc and doc["session_id"] != log["session_id"] else None)(
            checkpoint(b, "dst", rep_id)),
        what="the resumed session's checkpoint")
    entry = final["history"][0]
    assert seq_number(entry["start_last_seq"]) == recorded, entry
    assert entry["missing_checked"] <= DOCS - recorded + 10, entry
    assert entry["missing_checked"] < DOCS, entry
    print(f"stop took {stop_seconds:.2f} s; {recorded} of {DOCS} changes checkpointed at SIGTERM; "
          f"the restart checked {entry['missing_checked']} revisions")


def test_sigterm_checkpoints_the_replicate_command(servers):
    a = servers("a")
    b = servers("b")
    seed(a)
    proc = subprocess.Popen(
        [os.environ["COUCHLITE_BIN"], "replicate", f"{a.url}/src", f"{b.url}/dst", "--create-target",
         "--batch-size", "10", "--checkpoint-docs", "1000000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: doc_count(b, "dst") >= DOCS // 8, what="the command to be under way")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    written = doc_count(b, "dst")
    assert 0 < written < DOCS, f"the test needs SIGTERM mid-way ({written} of {DOCS} written)"
    rep_id = re.search(r"checkpoint _local/([0-9a-f]+)", err).group(1)
    log = checkpoint(b, "dst", rep_id)
    assert log is not None, f"SIGTERM wrote no checkpoint\n{err}"
    recorded = seq_number(log["source_last_seq"])
    assert 0 < recorded <= written and written - recorded <= 50, (recorded, written)
    # The source holds the same checkpoint (both ends are compared on the next run).
    source_log = checkpoint(a, "src", rep_id)
    assert source_log is not None and source_log["session_id"] == log["session_id"], source_log

    again = subprocess.run(
        [os.environ["COUCHLITE_BIN"], "replicate", f"{a.url}/src", f"{b.url}/dst", "--batch-size", "500"],
        capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert doc_count(b, "dst") == DOCS
    entry = json.loads(again.stdout)["history"][0]
    assert seq_number(entry["start_last_seq"]) == recorded, entry
    assert entry["missing_checked"] <= DOCS - recorded + 10, entry
