"""A purge is durable (it survives kill -9), reaches the view index, and replicates nowhere."""

import signal

import requests

H1, H2 = "1" * 32, "2" * 32


def test_purge_survives_kill_and_reaches_views(servers):
    a = servers("a")
    db = f"{a.url}/p"
    assert requests.put(db, timeout=5).status_code == 201
    view = {"views": {"all": {"map": "function(doc) { emit(doc._id, doc.v); }"}}}
    assert requests.put(f"{db}/_design/v", json=view, timeout=5).status_code == 201
    docs = [{"_id": f"d{i}", "v": i} for i in range(20)]
    assert requests.post(f"{db}/_bulk_docs", json={"docs": docs}, timeout=10).status_code == 201
    branches = [
        {"_id": "c", "_rev": f"2-{H1}", "v": "one", "_revisions": {"start": 2, "ids": [H1, H1]}},
        {"_id": "c", "_rev": f"2-{H2}", "v": "two", "_revisions": {"start": 2, "ids": [H2, H1]}},
    ]
    assert requests.post(f"{db}/_bulk_docs", json={"docs": branches, "new_edits": False}, timeout=5).ok
    rows = requests.get(f"{db}/_design/v/_view/all", timeout=30).json()["rows"]
    assert len(rows) == 21
    revs = {d["id"]: d["value"]["rev"] for d in requests.get(f"{db}/_all_docs", timeout=5).json()["rows"]}
    body = {f"d{i}": [revs[f"d{i}"]] for i in range(10)}
    body["c"] = [f"2-{H2}"]
    r = requests.post(f"{db}/_purge", json=body, timeout=10)
    assert r.status_code == 201, r.text

    # The answer was durable: a hard kill right after it loses nothing of it.
    a.kill(signal.SIGKILL)
    a.start()
    info = requests.get(db, timeout=5).json()
    assert info["doc_count"] == 12, info  # d10…d19, c and the design document
    assert info["purge_seq"].startswith("11-"), info
    assert requests.get(f"{db}/d0", timeout=5).status_code == 404
    assert requests.get(f"{db}/c", timeout=5).json()["_rev"] == f"2-{H1}"
    changed = {row["id"] for row in requests.get(f"{db}/_changes", timeout=5).json()["results"]}
    assert changed == {f"d{i}" for i in range(10, 20)} | {"c", "_design/v"}
    rows = requests.get(f"{db}/_design/v/_view/all", timeout=30).json()["rows"]
    assert [(row["id"], row["value"]) for row in rows][:1] == [("c", "one")]
    assert len(rows) == 11

    # Replicating the purged database elsewhere carries what is left, never the purged revisions.
    b = servers("b")
    job = {"source": db, "target": f"{b.url}/copy", "create_target": True}
    r = requests.post(f"{b.url}/_replicate", json=job, timeout=60)
    assert r.status_code == 200 and r.json()["ok"] is True, r.text
    copy = requests.get(f"{b.url}/copy/c", params={"open_revs": "all"}, headers={"Accept": "application/json"},
                        timeout=5).json()
    assert [leaf["ok"]["_rev"] for leaf in copy] == [f"2-{H1}"]
    assert requests.get(f"{b.url}/copy/d0", timeout=5).status_code == 404
    assert requests.get(f"{b.url}/copy", timeout=5).json()["purge_seq"].startswith("0-")
