#!/usr/bin/env python3
"""couchlite <-> a CouchDB cluster: the scale-out scenarios end to end (issue 28; not in CI, it needs a cluster).

Runs against any cluster and any couchlite given by URL; killing and restarting nodes and couchlite goes through
the control scripts of a copy of the peers' cluster folder (shared/peers/cluster beside the checkout; `--ctl DIR`:
start-node.sh N, stop-node.sh N [KILL], start-couchlite.sh, stop-couchlite.sh); without `--ctl` the steps that kill something are left out (say so).

    python3 bench/cluster_scenarios.py --ctl /tmp/cluster                      # all of a..f, 3 nodes on 127.0.0.1
    python3 bench/cluster_scenarios.py --nodes http://admin:pass@h1:5984,http://admin:pass@h2:5984,... \
        --couchlite http://admin:pass@127.0.0.1:5984 --couchlite-bin .build/release/couchlite a d e

Scenarios (b..d build on a; e and f stand alone):
  a  push 2,000 small docs + 100 x 256 KiB photos couchlite -> cluster (one-shot `_replicate`); every node's own
     shard copies, the clustered API on every node and the attachment bytes are checked against couchlite;
  b  continuous `_replicator` job couchlite -> cluster; writes during it; one node `kill -9`ed, writes, restarted;
  c  `couchlite replicate CLUSTER/photos localcopy` (the CLI pull) into a second data dir;
  d  conflicts made on both sides, replicated both ways: winner, `_conflicts`, `open_revs=all` leaves and the
     winning attachment digest the same on couchlite and every node; resolved on the cluster, pulled back;
  e  the same data pushed by couchlite and pulled by the cluster's replicator, and the reverse;
  f  continuous pull job cluster -> couchlite; a node killed, the source node killed and restarted, couchlite
     restarted: it resumes from its opaque cluster checkpoint.
Each check prints PASS/FAIL; figures and a summary of non-2xx answers and warning lines go to results.json
(`--out`). The cluster's node N is the Nth URL of `--nodes` (and `start-node.sh N` under `--ctl`).
"""
import argparse, base64, hashlib, json, os, re, shutil, socket, subprocess, sys, tempfile, time, urllib.parse
import requests

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("steps", nargs="*", default=["a", "b", "c", "d", "e", "f"])
parser.add_argument("--nodes", default="http://admin:pass@127.0.0.1:15984,http://admin:pass@127.0.0.1:25984,"
                    "http://admin:pass@127.0.0.1:35984", help="every cluster node's URL, admin credentials in it")
parser.add_argument("--couchlite", default="http://admin:pass@127.0.0.1:16984")
parser.add_argument("--couchlite-bin", help="the couchlite binary for scenario c (default: CTL/couchlite)")
parser.add_argument("--ctl", help="a copy of the peers' cluster folder whose scripts stop and start nodes and couchlite")
parser.add_argument("--out", help="where results go (default: results.json, or results-STEPS.json)")
ARGS = parser.parse_args()

C = ARGS.ctl
CL_URL = ARGS.couchlite.rstrip("/")
CL = CL_URL
NODE_URLS = [u.rstrip("/") for u in ARGS.nodes.split(",")]
CLUSTER_URL = NODE_URLS[0]
COUCHLITE_BIN = ARGS.couchlite_bin or (f"{C}/couchlite" if C else None)


class Skipped(Exception):
    """A step that needs --ctl (or --couchlite-bin) without it."""


def ctl(script, *args):
    """Runs one of the cluster folder's control scripts (stop-node.sh 2 KILL, start-couchlite.sh, ...)."""
    if not C:
        raise Skipped(f"{script} {' '.join(args)} needs --ctl")
    subprocess.run([f"{C}/{script}", *args], check=True)


def node(n):
    """Node n's URL (a cluster with fewer nodes wraps around)."""
    return NODE_URLS[(n - 1) % len(NODE_URLS)]
S = requests.Session()
RESULTS = {}
EXPECTED_MD5 = {}          # (db, docid, attname) -> "md5-..." of the bytes we wrote
FAILS = []


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def check(name, cond, detail=""):
    log(("PASS " if cond else "FAIL ") + name + (": " + str(detail) if detail else ""))
    if not cond:
        FAILS.append(f"{name}: {detail}")
    return cond


def req(method, url, expect=None, **kw):
    kw.setdefault("timeout", 900)
    r = S.request(method, url, **kw)
    if expect is not None and r.status_code not in (expect if isinstance(expect, tuple) else (expect,)):
        raise RuntimeError(f"{method} {url} -> {r.status_code} {r.text[:500]}")
    return r


def md5_digest(data):
    return "md5-" + base64.b64encode(hashlib.md5(data).digest()).decode()


def reset_db(base, db):
    req("DELETE", f"{base}/{db}")
    req("PUT", f"{base}/{db}", expect=(201, 202))


def small_doc(prefix, i):
    return {"_id": f"{prefix}-{i:05d}", "type": "note", "n": i, "text": f"small document {i} " + "x" * (i % 50),
            "tags": ["a", "b", str(i % 7)], "nested": {"k": i * 3, "f": i / 7}}


def put_small(base, db, prefix, start, count, batch=500):
    ids = []
    for b in range(start, start + count, batch):
        docs = [small_doc(prefix, i) for i in range(b, min(b + batch, start + count))]
        r = req("POST", f"{base}/{db}/_bulk_docs", json={"docs": docs}, expect=(201, 202)).json()
        bad = [x for x in r if not x.get("ok")]
        if bad:
            raise RuntimeError(f"bulk_docs errors: {bad[:3]}")
        ids += [d["_id"] for d in docs]
    return ids


def put_photos(base, db, prefix, start, count, size=256 * 1024, batch=10):
    ids = []
    for b in range(start, start + count, batch):
        docs = []
        for i in range(b, min(b + batch, start + count)):
            data = os.urandom(size)
            did = f"{prefix}-{i:04d}"
            EXPECTED_MD5[(db, did, "photo.jpg")] = md5_digest(data)
            docs.append({"_id": did, "type": "photo", "name": f"IMG_{i:04d}.jpg", "size": size,
                         "_attachments": {"photo.jpg": {"content_type": "image/jpeg",
                                                        "data": base64.b64encode(data).decode()}}})
        r = req("POST", f"{base}/{db}/_bulk_docs", json={"docs": docs}, expect=(201, 202)).json()
        bad = [x for x in r if not x.get("ok")]
        if bad:
            raise RuntimeError(f"bulk_docs errors: {bad[:3]}")
        ids += [d["_id"] for d in docs]
    return ids


def norm_rows(rows):
    out = {}
    for row in rows:
        d = row.get("doc")
        if d is None:
            continue
        atts = {k: (v.get("digest"), v.get("length"), v.get("content_type"))
                for k, v in d.get("_attachments", {}).items()}
        body = {k: v for k, v in d.items() if k not in ("_attachments", "_conflicts")}
        out[d["_id"]] = {"rev": d["_rev"], "conflicts": sorted(d.get("_conflicts", [])), "atts": atts, "body": body}
    return out


def snapshot(base, db):
    """clustered / couchlite view: every doc with winning rev, _conflicts, attachment digests, body"""
    r = req("GET", f"{base}/{db}/_all_docs", params={"include_docs": "true", "conflicts": "true"}, expect=200)
    return norm_rows(r.json()["rows"])


def node_shards(n, db):
    dbs = req("GET", f"{node(n)}/_node/_local/_all_dbs", expect=200).json()
    return [x for x in dbs if re.fullmatch(r"shards/[0-9a-f]{8}-[0-9a-f]{8}/" + re.escape(db) + r"\.\d+", x)]


def shard_count(db):
    """q of the database: each node that holds a copy of every range has q shard files (n = node count)."""
    return req("GET", f"{node(1)}/{db}", expect=200).json().get("cluster", {}).get("q", 2)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_snapshot(n, db):
    """what node n itself stores: the union of its local shard copies of db (read through /_node/_local/SHARD)"""
    out = {}
    shards = node_shards(n, db)
    for sh in shards:
        q = urllib.parse.quote(sh, safe="")
        r = req("GET", f"{node(n)}/_node/_local/{q}/_all_docs", params={"include_docs": "true", "conflicts": "true"},
                expect=200)
        out.update(norm_rows(r.json()["rows"]))
    return out, len(shards)


def diff(a, b, ignore_body=False):
    probs = []
    for k in sorted(set(a) | set(b)):
        if k.startswith("_design/"):
            pass
        if k not in a:
            probs.append(f"{k}: only on right"); continue
        if k not in b:
            probs.append(f"{k}: only on left"); continue
        x, y = a[k], b[k]
        if x["rev"] != y["rev"]:
            probs.append(f"{k}: rev {x['rev']} != {y['rev']}")
        if x["conflicts"] != y["conflicts"]:
            probs.append(f"{k}: conflicts {x['conflicts']} != {y['conflicts']}")
        if {n: v[:2] for n, v in x["atts"].items()} != {n: v[:2] for n, v in y["atts"].items()}:
            probs.append(f"{k}: atts {x['atts']} != {y['atts']}")
        if not ignore_body and x["body"] != y["body"]:
            probs.append(f"{k}: body differs")
    return probs


def expected_md5_problems(snap, db):
    probs = []
    for (d, did, att), dig in EXPECTED_MD5.items():
        if d != db:
            continue
        got = snap.get(did, {}).get("atts", {}).get(att, (None,))[0]
        if got != dig:
            probs.append(f"{did}/{att}: digest {got} != written {dig}")
    return probs


def verify_bytes(base, db, ids, ref, att="photo.jpg"):
    """download every attachment and md5 the bytes; compare with the digest couchlite's copy (ref) reports"""
    probs = 0
    for did in ids:
        r = req("GET", f"{base}/{db}/{did}/{att}", expect=200)
        if md5_digest(r.content) != ref[did]["atts"][att][0]:
            probs += 1
    return probs


def verify_everywhere(name, db, ref, nodes=(1, 2, 3), clustered_ports=(1, 2, 3)):
    """compare couchlite's snapshot `ref` with each cluster node's own shard copies and the clustered API"""
    ok = True
    for n in nodes:
        snap, nsh = node_snapshot(n, db)
        p = diff(ref, snap)
        ok &= check(f"{name}: node{n} own shards ({nsh} shard files, {len(snap)} docs) == couchlite ({len(ref)} docs)",
                    not p and nsh == shard_count(db), p[:5])
    for n in clustered_ports:
        snap = snapshot(node(n), db)
        p = diff(ref, snap)
        info = req("GET", f"{node(n)}/{db}", expect=200).json()
        ok &= check(f"{name}: clustered API on port {n}5984 == couchlite (doc_count {info['doc_count']})",
                    not p and info["doc_count"] == len(ref), p[:5])
    return ok


def replicate(base, body):
    t = time.time()
    r = req("POST", f"{base}/_replicate", json=body)
    dt = time.time() - t
    return r, dt


def short_hist(j):
    h = (j.get("history") or [{}])[0] if isinstance(j, dict) else {}
    keys = ("docs_read", "docs_written", "doc_write_failures", "missing_checked", "missing_found")
    return {k: h.get(k) for k in keys}


# ---------------------------------------------------------------------------------------------------------------
def scenario_a():
    log("== a: one-shot push couchlite -> cluster (2,000 small + 100 x 256 KiB photos)")
    for jid in ("cont-photos", "pull-cluster"):      # jobs left by an interrupted earlier run
        r = req("GET", f"{CL}/_replicator/{jid}")
        if r.status_code == 200:
            req("DELETE", f"{CL}/_replicator/{jid}", params={"rev": r.json()["_rev"]})
    reset_db(CL, "photos")
    req("DELETE", f"{node(1)}/photos")
    t = time.time(); put_small(CL, "photos", "doc", 0, 2000); put_photos(CL, "photos", "photo", 0, 100)
    RESULTS["a_load_s"] = round(time.time() - t, 2)
    ref = snapshot(CL, "photos")
    check("a: couchlite has 2100 docs with the written digests",
          len(ref) == 2100 and not expected_md5_problems(ref, "photos"),
          expected_md5_problems(ref, "photos")[:3])
    r, dt = replicate(CL, {"source": "photos", "target": f"{CLUSTER_URL}/photos", "create_target": True})
    RESULTS["a_push_s"] = round(dt, 2)
    j = r.json()
    log(f"a: POST /_replicate -> {r.status_code} in {dt:.2f}s {short_hist(j)}")
    check("a: _replicate ok", r.status_code == 200 and j.get("ok"), r.text[:300])
    verify_everywhere("a", "photos", ref)
    bad = verify_bytes(node(3), "photos", [f"photo-{i:04d}" for i in range(100)], ref)
    check("a: 100 attachments downloaded from node3 have the written md5", bad == 0, f"{bad} bad")
    RESULTS["a_replicate_response"] = j


def wait_visible(base, db, expect_revs, timeout=300, poll=0.25):
    """poll POST _all_docs keys until every id has the expected rev; returns seconds waited or None"""
    t = time.time(); keys = list(expect_revs)
    while time.time() - t < timeout:
        try:
            rows = req("POST", f"{base}/{db}/_all_docs", json={"keys": keys}).json().get("rows", [])
            if all(r.get("value", {}).get("rev") == expect_revs[r["key"]] for r in rows) and len(rows) == len(keys):
                return time.time() - t
        except Exception:
            pass
        time.sleep(poll)
    return None


def revs_of(base, db, ids):
    rows = req("POST", f"{base}/{db}/_all_docs", json={"keys": ids}, expect=200).json()["rows"]
    return {r["key"]: r["value"]["rev"] for r in rows}


def sched_state(docid):
    r = req("GET", f"{CL}/_scheduler/docs/_replicator/{docid}")
    return r.json() if r.status_code == 200 else {"status": r.status_code, "body": r.text[:200]}


def scenario_b():
    log("== b: continuous _replicator job couchlite -> cluster; node2 killed and restarted")
    r = req("GET", f"{CL}/_replicator/cont-photos")
    if r.status_code == 200:
        req("DELETE", f"{CL}/_replicator/cont-photos", params={"rev": r.json()["_rev"]})
    req("PUT", f"{CL}/_replicator/cont-photos", expect=(201, 202),
        json={"source": "photos", "target": f"{CLUSTER_URL}/photos", "continuous": True})
    for _ in range(100):
        st = sched_state("cont-photos")
        if st.get("state") == "running":
            break
        time.sleep(0.2)
    log(f"b: scheduler doc: {json.dumps(st)[:300]}")
    check("b: _replicator job running", st.get("state") == "running", st)
    time.sleep(2)
    # 1) write 500 docs + 20 photos while it runs
    t0 = time.time()
    ids = put_small(CL, "photos", "doc", 2000, 500, batch=50) + put_photos(CL, "photos", "photo", 100, 20, batch=5)
    t1 = time.time()
    revs = revs_of(CL, "photos", ids)
    w = wait_visible(node(3), "photos", revs)
    RESULTS["b1_write_s"] = round(t1 - t0, 2)
    RESULTS["b1_visible_on_node3_after_last_write_s"] = None if w is None else round(w, 2)
    RESULTS["b1_visible_on_node3_from_first_write_s"] = None if w is None else round(t1 - t0 + w, 2)
    check("b1: 520 new docs visible on node3", w is not None,
          f"writes took {t1 - t0:.2f}s, all visible {w if w is None else round(w, 2)}s after the last write")
    ref = snapshot(CL, "photos")
    verify_everywhere("b1", "photos", ref)
    # 2) kill node2's beam (SIGKILL, by PID) and write 500 more
    log("b2: kill -9 node2")
    ctl("stop-node.sh", "2", "KILL")
    t0 = time.time()
    ids = put_small(CL, "photos", "doc", 2500, 500, batch=50)
    t1 = time.time()
    revs = revs_of(CL, "photos", ids)
    w3 = wait_visible(node(3), "photos", revs)
    w1 = wait_visible(node(1), "photos", revs, timeout=60)
    RESULTS["b2_write_s"] = round(t1 - t0, 2)
    RESULTS["b2_visible_on_node3_after_last_write_s"] = None if w3 is None else round(w3, 2)
    check("b2: 500 docs written while node2 down reach node1 and node3", w3 is not None and w1 is not None,
          f"node3 after {w3}s, node1 after {w1}s")
    st = sched_state("cont-photos")
    log(f"b2: scheduler doc while node2 down: {json.dumps(st)[:400]}")
    check("b2: job still running with node2 down", st.get("state") == "running", st.get("state"))
    ref = snapshot(CL, "photos")
    verify_everywhere("b2", "photos", ref, nodes=(1, 3), clustered_ports=(1, 3))
    # 3) restart node2, wait for internal replication (mem3_sync) to fill its shard copies
    t0 = time.time()
    ctl("start-node.sh", "2")
    up = time.time() - t0
    caught = None
    while time.time() - t0 < 300:
        try:
            snap, _ = node_snapshot(2, "photos")
            if not diff(ref, snap):
                caught = time.time() - t0
                break
        except Exception:
            pass
        time.sleep(1)
    RESULTS["b3_node2_up_s"] = round(up, 2)
    RESULTS["b3_node2_shards_caught_up_s"] = None if caught is None else round(caught, 2)
    check("b3: restarted node2's own shard copies caught up (internal replication)", caught is not None,
          f"up after {up:.1f}s, shards equal after {caught if caught is None else round(caught, 1)}s")
    verify_everywhere("b3", "photos", ref)
    st = sched_state("cont-photos")
    check("b3: job still running after node2 restart", st.get("state") == "running", st.get("state"))
    RESULTS["b_scheduler_doc"] = st
    RESULTS["b_active_tasks"] = req("GET", f"{CL}/_active_tasks").json()


def scenario_c():
    log("== c: CLI pull node2 -> local db in another data dir")
    if not COUCHLITE_BIN:
        raise Skipped("scenario c needs --couchlite-bin or --ctl")
    work = tempfile.mkdtemp(prefix="couchlite-cluster-c-")
    cmd = [COUCHLITE_BIN, "replicate", f"{node(2)}/photos", "localcopy", "--data-dir", f"{work}/data",
           "--create-target"]
    log("c: " + " ".join(cmd))
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.time() - t
    RESULTS["c_pull_s"] = round(dt, 2)
    RESULTS["c_cli_rc"] = p.returncode
    RESULTS["c_cli_stdout"] = p.stdout[-1500:]
    RESULTS["c_cli_stderr"] = p.stderr[-1500:]
    log(f"c: rc={p.returncode} in {dt:.2f}s stdout={p.stdout[:300]!r} stderr={p.stderr[-300:]!r}")
    check("c: couchlite replicate exit 0", p.returncode == 0, p.stderr[-300:])
    # read the copy through a second, temporary couchlite server on that data dir
    port = free_port()
    srv = subprocess.Popen([COUCHLITE_BIN, "--bind", "127.0.0.1", "--port", str(port), "--data-dir",
                            f"{work}/data", "--admin", "admin:pass"], stdout=open(f"{work}/couchlite.log", "a"),
                           stderr=subprocess.STDOUT)
    try:
        for _ in range(50):
            try:
                if requests.get(f"http://127.0.0.1:{port}/_up", timeout=2).ok:
                    break
            except Exception:
                pass
            time.sleep(0.2)
        base2 = f"http://admin:pass@127.0.0.1:{port}"
        local = snapshot(base2, "localcopy")
        src = snapshot(node(2), "photos")
        orig = snapshot(CL, "photos")
        p1, p2 = diff(src, local), diff(orig, local)
        check(f"c: localcopy ({len(local)} docs) == cluster via node2 ({len(src)})", not p1, p1[:5])
        check("c: localcopy == couchlite photos", not p2, p2[:5])
        photos = [k for k in local if k.startswith("photo-")]
        bad = verify_bytes(base2, "localcopy", photos, orig)
        p3 = expected_md5_problems(orig, "photos")
        check("c: couchlite digests == the md5 of the bytes written in a/b", not p3, p3[:3])
        check(f"c: {len(photos)} attachments in localcopy have the written md5", bad == 0, f"{bad} bad")
    finally:
        srv.terminate(); srv.wait(30)
        shutil.rmtree(work, ignore_errors=True)


def conflict_winner(revs):
    # CouchDB: among live leaves the longest (highest generation) wins, then the greater rev id (string compare)
    return max(revs, key=lambda r: (int(r.split("-")[0]), r.split("-", 1)[1]))


def scenario_d():
    log("== d: conflicts")
    r = req("GET", f"{CL}/_replicator/cont-photos")
    if r.status_code == 200:   # stop the continuous push so both sides can diverge
        req("DELETE", f"{CL}/_replicator/cont-photos", params={"rev": r.json()["_rev"]}, expect=200)
    time.sleep(2)
    # a small doc edited differently on each side
    did = "doc-00007"
    a = req("GET", f"{CL}/photos/{did}", expect=200).json()
    b = req("GET", f"{node(2)}/photos/{did}", expect=200).json()
    check("d: same starting rev on both sides", a["_rev"] == b["_rev"], (a["_rev"], b["_rev"]))
    a["side"] = "couchlite"; b["side"] = "cluster"; b["extra"] = [1, 2, 3]
    ra = req("PUT", f"{CL}/photos/{did}", json=a, expect=(201, 202)).json()["rev"]
    rb = req("PUT", f"{node(2)}/photos/{did}", json=b, expect=(201, 202)).json()["rev"]
    # a photo whose attachment is replaced differently on each side
    pid = "photo-0003"
    pa = req("GET", f"{CL}/photos/{pid}", expect=200).json()["_rev"]
    pb = req("GET", f"{node(3)}/photos/{pid}", expect=200).json()["_rev"]
    da, db_ = os.urandom(200_000), os.urandom(300_000)
    rpa = req("PUT", f"{CL}/photos/{pid}/photo.jpg", params={"rev": pa}, data=da,
              headers={"Content-Type": "image/jpeg"}, expect=(201, 202)).json()["rev"]
    rpb = req("PUT", f"{node(3)}/photos/{pid}/photo.jpg", params={"rev": pb}, data=db_,
              headers={"Content-Type": "image/jpeg"}, expect=(201, 202)).json()["rev"]
    by_rev = {rpa: md5_digest(da), rpb: md5_digest(db_)}
    log(f"d: {did}: couchlite {ra}, cluster {rb}; {pid}: couchlite {rpa}, cluster {rpb}")
    r1, t1 = replicate(CL, {"source": "photos", "target": f"{CLUSTER_URL}/photos"})
    r2, t2 = replicate(CL, {"source": f"{CLUSTER_URL}/photos", "target": "photos"})
    log(f"d: push {r1.status_code} {t1:.2f}s {short_hist(r1.json())}; "
        f"pull {r2.status_code} {t2:.2f}s {short_hist(r2.json())}")
    check("d: both one-shot replications ok", r1.ok and r2.ok, (r1.text[:200], r2.text[:200]))
    views = {"couchlite": CL, "node1": node(1), "node2": node(2), "node3": node(3)}
    for doc_id, revs in ((did, [ra, rb]), (pid, [rpa, rpb])):
        win = conflict_winner(revs); lose = [x for x in revs if x != win]
        seen = {}
        for nm, base in views.items():
            d = req("GET", f"{base}/photos/{doc_id}", params={"conflicts": "true"}, expect=200).json()
            leaves = req("GET", f"{base}/photos/{doc_id}", params={"open_revs": "all"},
                         headers={"Accept": "application/json"}, expect=200).json()
            seen[nm] = (d["_rev"], sorted(d.get("_conflicts", [])),
                        sorted(x["ok"]["_rev"] for x in leaves if "ok" in x),
                        d.get("side"), (d.get("_attachments", {}).get("photo.jpg") or {}).get("digest"))
        same = len(set(json.dumps(v) for v in seen.values())) == 1
        check(f"d: {doc_id}: all 4 views agree on winner/_conflicts/leaves", same, json.dumps(seen)[:600])
        w = seen["couchlite"]
        check(f"d: {doc_id}: winner is CouchDB's ({win}), _conflicts == {lose}", w[0] == win and w[1] == lose, w[:2])
        if doc_id == pid:
            check(f"d: {pid}: winning attachment digest is the winner's bytes", w[4] == by_rev[win],
                  (w[4], by_rev[win]))
        RESULTS[f"d_{doc_id}"] = seen
    # resolve on the cluster (delete the losing leaves there), pull, and check the conflicts are gone everywhere
    for doc_id, revs in ((did, [ra, rb]), (pid, [rpa, rpb])):
        win = conflict_winner(revs)
        for x in revs:
            if x != win:
                req("DELETE", f"{node(1)}/photos/{doc_id}", params={"rev": x}, expect=(200, 202))
    r3, _ = replicate(CL, {"source": f"{CLUSTER_URL}/photos", "target": "photos"})
    r4, _ = replicate(CL, {"source": "photos", "target": f"{CLUSTER_URL}/photos"})
    ref = snapshot(CL, "photos")
    check("d: conflicts resolved on the cluster are resolved on couchlite",
          not ref[did]["conflicts"] and not ref[pid]["conflicts"],
          (ref[did]["conflicts"], ref[pid]["conflicts"]))
    verify_everywhere("d", "photos", ref)


def scenario_e():
    log("== e: same data set pushed by couchlite vs pulled by the cluster's replicator (and the reverse)")
    reset_db(CL, "bench")
    for db in ("bench_push", "bench_pull"):
        req("DELETE", f"{node(1)}/{db}")
    for db in ("bench_back_cl", "bench_back_cdb"):
        req("DELETE", f"{CL}/{db}")
    put_small(CL, "bench", "doc", 0, 2000); put_photos(CL, "bench", "photo", 0, 100)
    ref = snapshot(CL, "bench")
    runs = [("e1 couchlite pushes couchlite->cluster (POST couchlite/_replicate)", CL,
             {"source": "bench", "target": f"{CLUSTER_URL}/bench_push", "create_target": True},
             "bench_push", "cluster"),
            ("e2 cluster pulls couchlite->cluster (POST node1/_replicate)", node(1),
             {"source": f"{CL_URL}/bench", "target": f"{CLUSTER_URL}/bench_pull", "create_target": True},
             "bench_pull", "cluster"),
            ("e3 couchlite pulls cluster->couchlite (POST couchlite/_replicate)", CL,
             {"source": f"{CLUSTER_URL}/bench_push", "target": "bench_back_cl", "create_target": True},
             "bench_back_cl", "cl"),
            ("e4 cluster pushes cluster->couchlite (POST node1/_replicate)", node(1),
             {"source": f"{CLUSTER_URL}/bench_push", "target": f"{CL_URL}/bench_back_cdb", "create_target": True},
             "bench_back_cdb", "cl")]
    for name, base, body, tdb, where in runs:
        r, dt = replicate(base, body)
        RESULTS[name.split()[0] + "_s"] = round(dt, 2)
        j = r.json()
        log(f"{name}: {r.status_code} in {dt:.2f}s {short_hist(j)}")
        check(f"{name} ok", r.ok and j.get("ok"), r.text[:300])
        # A cluster's _all_docs reads one copy of each range; a copy the write quorum left out catches up by
        # internal replication within moments (seen once: 2,099 of 2,100 right after the cluster's own pull).
        deadline = time.time() + 15
        while True:
            snap = snapshot(node(2) if where == "cluster" else CL, tdb)
            p = diff(ref, snap)
            if not p or time.time() > deadline:
                break
            time.sleep(0.5)
        check(f"{name}: target == source ({len(snap)} docs)", not p, p[:5])
        RESULTS[name.split()[0] + "_response"] = j


LOG_FILES = ([f"{C}/couchlite.log"] + [f"{C}/node{i}/node.log" for i in (1, 2, 3)]) if C else []
LOG_START = {f: (os.path.getsize(f) if os.path.exists(f) else 0) for f in LOG_FILES}


def new_log_lines(f):
    with open(f, "rb") as fh:
        fh.seek(LOG_START.get(f, 0))
        return fh.read().decode("utf-8", "replace").splitlines()


def scenario_f():
    log("== f: continuous PULL cluster -> couchlite (_replicator doc), node2 killed, endpoint node3 killed, "
        "couchlite restarted")
    for jid in ("pull-cluster",):
        r = req("GET", f"{CL}/_replicator/{jid}")
        if r.status_code == 200:
            req("DELETE", f"{CL}/_replicator/{jid}", params={"rev": r.json()["_rev"]})
    req("DELETE", f"{CL}/fromcluster")
    reset_db(node(1), "clsrc")
    put_small(node(1), "clsrc", "c", 0, 1000); put_photos(node(1), "clsrc", "cphoto", 0, 10, batch=5)
    t0 = time.time()
    req("PUT", f"{CL}/_replicator/pull-cluster", expect=(201, 202),
        json={"source": f"{node(3)}/clsrc", "target": "fromcluster", "create_target": True,
              "continuous": True})
    ids = [f"c-{i:05d}" for i in range(1000)] + [f"cphoto-{i:04d}" for i in range(10)]
    w = wait_visible(CL, "fromcluster", revs_of(node(1), "clsrc", ids), timeout=300, poll=0.25)
    w = None if w is None else time.time() - t0      # from the PUT of the _replicator doc
    RESULTS["f0_initial_1010_docs_s"] = None if w is None else round(w, 2)
    check("f0: initial 1,010 docs pulled", w is not None, f"{w}")

    def step(name, base, start, count):
        t = time.time()
        ids = put_small(base, "clsrc", "c", start, count, batch=50)
        tw = time.time() - t
        w = wait_visible(CL, "fromcluster", revs_of(node(1) if base != node(1) else base, "clsrc", ids), timeout=240)
        RESULTS[f"{name}_write_s"] = round(tw, 2)
        RESULTS[f"{name}_visible_on_couchlite_after_last_write_s"] = None if w is None else round(w, 2)
        st = sched_state("pull-cluster")
        check(f"{name}: {count} docs written to the cluster via {base} visible on couchlite", w is not None,
              f"writes {tw:.2f}s, visible {w if w is None else round(w, 2)}s later; job {st.get('state')} "
              f"docs_read={st.get('info', {}).get('docs_read')} errors={st.get('error_count')}")
        return st

    step("f1", node(1), 1000, 300)
    ctl("stop-node.sh", "2", "KILL")
    step("f2_node2_down", node(1), 1300, 300)
    ctl("start-node.sh", "2")
    time.sleep(3)
    step("f3_node2_back", node(2), 1600, 100)
    # kill the source endpoint itself (node3) for a while, writing through node1 meanwhile
    ctl("stop-node.sh", "3", "KILL")
    ids = put_small(node(1), "clsrc", "c", 1700, 100, batch=50)
    revs = revs_of(node(1), "clsrc", ids)
    time.sleep(8)
    st = sched_state("pull-cluster")
    RESULTS["f4_job_while_endpoint_down"] = st
    log(f"f4: job while its source node3 is down: {json.dumps(st)[:500]}")
    t = time.time()
    ctl("start-node.sh", "3")
    w = wait_visible(CL, "fromcluster", revs, timeout=300, poll=0.5)
    RESULTS["f4_caught_up_after_node3_restart_s"] = None if w is None else round(time.time() - t, 2)
    st = sched_state("pull-cluster")
    check("f4: job recovers after its source node comes back and catches up",
          w is not None and st.get("state") == "running",
          f"caught up {RESULTS['f4_caught_up_after_node3_restart_s']}s after restart began; state {st.get('state')}")
    # restart couchlite: the job must resume from its checkpoint (an opaque cluster seq), not from 0
    ctl("stop-couchlite.sh")
    ctl("start-couchlite.sh")
    for _ in range(100):
        st = sched_state("pull-cluster")
        if st.get("state") == "running":
            break
        time.sleep(0.2)
    st = step("f5_after_couchlite_restart", node(1), 1800, 50)
    RESULTS["f5_docs_read_after_restart"] = st.get("info", {}).get("docs_read")
    check("f5: after a couchlite restart the pull resumed from its checkpoint (docs_read small, not ~1,860)",
          (st.get("info", {}).get("docs_read") or 0) < 500, st.get("info"))
    ref = snapshot(node(1), "clsrc"); got = snapshot(CL, "fromcluster")
    p = diff(ref, got)
    check(f"f: couchlite fromcluster ({len(got)} docs) == cluster clsrc ({len(ref)} docs)", not p, p[:5])
    bad = verify_bytes(CL, "fromcluster", [f"cphoto-{i:04d}" for i in range(10)], ref)
    check("f: 10 attachments pulled have the cluster's md5", bad == 0, f"{bad} bad")
    p2 = expected_md5_problems(got, "clsrc")
    check("f: and the md5 of the bytes written", not p2, p2[:3])
    r = req("GET", f"{CL}/_replicator/pull-cluster")
    req("DELETE", f"{CL}/_replicator/pull-cluster", params={"rev": r.json()["_rev"]}, expect=200)


def scan_logs():
    """only what was logged during this run"""
    out = {}
    lines = new_log_lines(f"{C}/couchlite.log") if C else []
    bad = [l for l in lines if re.search(r"status=[45]\d\d", l) or re.search(r"\[(warn|warning|error|critical)\]", l)]
    pat = {}
    for l in bad:
        m = re.search(r"method=(\S+) path=(\S+) status=(\d+)", l)
        path = re.sub(r"[?].*", "", re.sub(r"/(doc|photo)-\d+", "/ID", m.group(2))) if m else ""
        key = f"{m.group(1)} {path} {m.group(3)}" if m else l[25:140]
        pat[key] = pat.get(key, 0) + 1
    out["couchlite_log_4xx_5xx_warn_error"] = pat
    for i in (1, 2, 3) if C else ():
        ls = new_log_lines(f"{C}/node{i}/node.log")
        errs = [l for l in ls if "[error]" in l or "[warning]" in l]
        out[f"node{i}_log_error_warning_count"] = len(errs)
        out[f"node{i}_log_samples"] = [l[:300] for l in errs[-8:]]
    st = req("GET", f"{CL}/_node/_local/_stats").json()
    codes = st["couchdb"]["httpd_status_codes"]
    out["couchlite_status_codes"] = {k: v["value"] for k, v in codes.items() if v["value"]}
    out["couchlite_replicator_stats"] = {k: (v["value"] if isinstance(v, dict) and "value" in v else v)
                                         for k, v in st.get("couch_replicator", {}).items()
                                         if not isinstance(v, dict) or "value" in v}
    RESULTS["logs"] = out
    log("logs: " + json.dumps(out, indent=1)[:4000])


if __name__ == "__main__":
    steps = ARGS.steps
    for st in steps:
        try:
            globals()["scenario_" + st]()
        except Skipped as e:
            log(f"SKIP {st}: {e}")
            RESULTS[f"{st}_skipped"] = str(e)
        except Exception as e:
            check(f"{st}: exception", False, repr(e)[:500])
    scan_logs()
    RESULTS["fails"] = FAILS
    out = ARGS.out or ("results.json" if len(steps) == 6 else f"results-{''.join(steps)}.json")
    json.dump(RESULTS, open(out, "w"), indent=1, default=str)
    log(f"{len(FAILS)} failure(s)"); [log("  " + f) for f in FAILS]
    sys.exit(1 if FAILS else 0)
