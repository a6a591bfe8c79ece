"""A failing `_replicator` job can be diagnosed from the log, and its pauses end when they should (issue 28).

One log line per change of state, with its reason, close to CouchDB's own (`Job … started`, `Replication …
failed to start …`, `Replication … completed (triggered by …)`, `Job … stopped`), in the text format and in
`--log-format json`. The pauses between retries double from `--replicator-retry` (CouchDB's 30 s), the counters
and checkpoint of a crashed job are kept for its next run, and a pause is cut short by a server stop or the
document's deletion, never polled; a job waiting for its retry holds no thread.
"""

from __future__ import annotations

import json
import re
import signal
import time

import pytest
import requests

from test_replication_e2e import Client, doc_count, wait_for


def log_events(server, fmt: str) -> list[dict]:
    """The replication state lines of the server's log as dicts (`message` plus fields)."""
    events = []
    for line in server.log_text().splitlines():
        if fmt == "json":
            if not line.startswith("{"):
                continue
            event = json.loads(line)
        else:
            match = re.match(r"\S+ \[(\w+)\] couchlite: (replication [a-z ]+?|error processing replication doc)"
                             r"((?: \w+=.*)?)$", line)
            if not match:
                continue
            event = {"level": match.group(1), "message": match.group(2)}
            # key=value pairs; `reason` comes last and may hold spaces.
            rest = match.group(3)
            reason = rest.find(" reason=")
            if reason >= 0:
                event["reason"] = rest[reason + len(" reason="):]
                rest = rest[:reason]
            event.update(pair.split("=", 1) for pair in rest.split())
        if event.get("message", "").startswith(("replication ", "error processing")):
            events.append(event)
    return events


def scheduler_doc(server, doc_id) -> dict:
    r = requests.get(f"{server.url}/_scheduler/docs/_replicator/{doc_id}", timeout=5)
    return r.json() if r.status_code == 200 else {}


def replicator_ready(server):
    wait_for(lambda: requests.get(f"{server.url}/_replicator", timeout=5).status_code == 200, what="_replicator")


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_each_state_change_is_one_log_line_with_its_reason(servers, fmt):
    a = servers("a", args=("--replicator-retry", "1", "--log-format", fmt))
    replicator_ready(a)
    job = {"source": f"{a.url}/later", "target": "copy", "create_target": True}
    assert requests.put(f"{a.url}/_replicator/flaky", json=job, timeout=5).status_code == 201
    # Pauses of 1, 2, then 4 s: three crashes within a few seconds, each a line.
    row = wait_for(lambda: (lambda d: d if d.get("error_count") == 3 else None)(scheduler_doc(a, "flaky")),
                   what="three crashes", timeout=30)
    assert row["state"] == "crashing", row
    reason = f"db_not_found: could not open http://127.0.0.1:{a.port}/later/"
    assert row["info"] == {"error": reason}, row
    assert row["last_updated"] > row["start_time"], row  # it moves with each crash
    history = requests.get(f"{a.url}/_scheduler/jobs/{row['id']}", timeout=5).json()["history"]
    assert [h["type"] for h in history] == ["crashed", "started"] * 3 + ["added"], history
    assert all(h["reason"] == reason for h in history if h["type"] == "crashed")

    # The source appears: the next run (after the 4 s pause) completes.
    src = Client(a.url, "later")
    src.create()
    src.bulk([{"_id": f"d{i}"} for i in range(4)])
    doc = wait_for(lambda: (lambda d: d if d.get("_replication_state") == "completed" else None)(
        requests.get(f"{a.url}/_replicator/flaky", timeout=5).json()), what="completion", timeout=30)
    assert doc["_replication_stats"]["docs_written"] == 4 and doc_count(a, "copy") == 4

    # A continuous job stopped by the deletion of its document.
    live = {"source": "later", "target": "live", "create_target": True, "continuous": True}
    assert requests.put(f"{a.url}/_replicator/live", json=live, timeout=5).status_code == 201
    wait_for(lambda: scheduler_doc(a, "live").get("state") == "running", what="the continuous job")
    rev = requests.get(f"{a.url}/_replicator/live", timeout=5).json()["_rev"]
    assert requests.delete(f"{a.url}/_replicator/live?rev={rev}", timeout=5).status_code == 200
    wait_for(lambda: any(e["message"] == "replication job stopped" for e in log_events(a, fmt)), what="stop line")

    events = log_events(a, fmt)
    flaky = [e for e in events if e.get("doc_id") == "flaky"]
    assert [e["message"] for e in flaky] == ["replication job started", "replication job crashed"] * 3 + [
        "replication job started", "replication completed"], flaky
    crashes = [e for e in flaky if e["message"] == "replication job crashed"]
    assert [(e["level"], e["error_count"], e["retry_in_s"]) for e in crashes] == [
        ("error", "1", "1"), ("error", "2", "2"), ("error", "3", "4")], crashes
    assert all(e["reason"] == reason and e["replication_id"] == row["id"] for e in crashes), crashes
    started = flaky[0]
    assert started["level"] == "info" and started["source"] == f"http://127.0.0.1:{a.port}/later/", started
    assert "pass" not in json.dumps(events)  # credentials never reach the log
    stopped = next(e for e in events if e["message"] == "replication job stopped")
    assert stopped["doc_id"] == "live" and stopped["reason"] == "document deleted", stopped


def test_a_crashed_job_keeps_its_counters_and_checkpoint_for_the_next_run(servers):
    a = servers("a", args=("--replicator-retry", "1"))
    b = servers("b")
    src = Client(b.url, "src")
    src.create()
    src.bulk([{"_id": f"d{i}"} for i in range(5)])
    replicator_ready(a)
    job = {"source": f"{b.url}/src", "target": "copy", "create_target": True, "continuous": True}
    assert requests.put(f"{a.url}/_replicator/remote", json=job, timeout=5).status_code == 201
    running = wait_for(lambda: (lambda d: d if (d.get("info") or {}).get("docs_written") == 5
                                and d["info"]["checkpointed_source_seq"] not in (0, "0") else None)(
        scheduler_doc(a, "remote")), what="the first run's checkpoint")
    checkpointed = running["info"]["checkpointed_source_seq"]

    b.kill(signal.SIGKILL)
    row = wait_for(lambda: (lambda d: d if d.get("state") == "crashing" else None)(scheduler_doc(a, "remote")),
                   what="the crash", timeout=60)
    assert f"http://127.0.0.1:{b.port}/src/" in row["info"]["error"], row
    info = requests.get(f"{a.url}/_scheduler/jobs/{row['id']}", timeout=5).json()["info"]
    assert info["docs_written"] == 5 and info["checkpointed_source_seq"] == checkpointed, info

    b.start()
    src.bulk([{"_id": "late"}])
    again = wait_for(lambda: (lambda d: d if d.get("state") == "running" and (d.get("info") or {}).get(
        "docs_written") == 6 else None)(scheduler_doc(a, "remote")), what="the next run's counters", timeout=60)
    assert again["info"]["docs_read"] == 6, again  # counted on from the first run, not from zero
    assert doc_count(a, "copy") == 6


def test_a_server_stop_ends_a_pause_at_once(servers):
    a = servers("a")  # CouchDB's 30 s pause
    replicator_ready(a)
    job = {"source": f"{a.url}/nothere", "target": "copy"}
    assert requests.put(f"{a.url}/_replicator/waiting", json=job, timeout=5).status_code == 201
    wait_for(lambda: scheduler_doc(a, "waiting").get("state") == "crashing", what="the crash")
    began = time.monotonic()
    a.proc.send_signal(signal.SIGTERM)
    a.proc.wait(timeout=10)
    assert a.proc.returncode == 0, a.log_tail()
    assert time.monotonic() - began < 5, "the stop waited for the pause"


def test_a_waiting_job_holds_no_thread_and_its_deletion_ends_it(servers):
    """A crashed job waits for its retry as a state of the scheduler, not as a thread asleep (not for CouchDB's 30 s
    pause, nor for the thousands of documents an admin may write); deleting its document ends it."""
    a = servers("a")
    replicator_ready(a)
    idle = a.status_kib("Threads")
    count = 12
    for i in range(count):
        job = {"source": f"{a.url}/nothere{i}", "target": f"copy{i}"}
        assert requests.put(f"{a.url}/_replicator/w{i}", json=job, timeout=5).status_code == 201
    wait_for(lambda: all(scheduler_doc(a, f"w{i}").get("state") == "crashing" for i in range(count)),
             what="every crash")
    # (A couple of connection threads may come and go meanwhile.)
    wait_for(lambda: a.status_kib("Threads") <= idle + 2, what="no thread per waiting job", timeout=5)
    for i in range(count):
        rev = requests.get(f"{a.url}/_replicator/w{i}", timeout=5).json()["_rev"]
        assert requests.delete(f"{a.url}/_replicator/w{i}?rev={rev}", timeout=5).status_code == 200
    wait_for(lambda: requests.get(f"{a.url}/_scheduler/jobs", timeout=5).json()["jobs"] == [], what="no jobs left")
