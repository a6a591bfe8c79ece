"""Node statistics (issue 16, "Metrics and logs"): `GET /_node/{node}/_stats[/path…]`, `_prometheus`,
`_system` and `/_membership`, in CouchDB 3.4.3's shapes, for server admins only.

Counters are checked against requests the test makes. Against couchlite (one server, this suite
its only client) they must move by exactly what the test did; a real CouchDB may be shared with other
clients, so there they must move by at least that much. Figures only couchlite has (connections,
bytes, replication documents, process memory) are asserted for couchlite and looked up, not required,
elsewhere.
"""

import threading
import uuid

import pytest
import requests

from conftest import REQUEST_TIMEOUT_S, is_couchlite

METRICS_REASON = "You are not a server admin or read-only metrics user"
HISTOGRAM_KEYS = ["n", "min", "max", "arithmetic_mean", "geometric_mean", "harmonic_mean", "median", "variance",
                  "standard_deviation", "skewness", "kurtosis", "percentile", "histogram"]


def stats(couch, path=""):
    r = couch.get("/_node/_local/_stats" + path)
    assert r.status_code == 200, r.text
    return r.json()


def counters(couch):
    """GET counts, 200/404 counts and total requests from one `_stats` read."""
    s = stats(couch)["couchdb"]
    return {
        "GET": s["httpd_request_methods"]["GET"]["value"],
        "PUT": s["httpd_request_methods"]["PUT"]["value"],
        "200": s["httpd_status_codes"]["200"]["value"],
        "201": s["httpd_status_codes"]["201"]["value"],
        "404": s["httpd_status_codes"]["404"]["value"],
        "requests": s["httpd"]["requests"]["value"],
    }


def moved(couch, before, after, key, expected):
    if is_couchlite(couch):
        assert after[key] - before[key] == expected, (key, before, after)
    else:
        assert after[key] - before[key] >= expected, (key, before, after)


def node_name(couch):
    r = couch.get("/_membership")
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) >= {"all_nodes", "cluster_nodes"}, body
    assert len(body["cluster_nodes"]) >= 1
    return body["cluster_nodes"][0]


def test_membership_lists_the_node_by_the_name_node_answers_to(couch):
    name = node_name(couch)
    assert name in couch.get("/_membership").json()["all_nodes"]
    r = couch.get(f"/_node/{name}/_stats/couchdb/httpd_request_methods/GET")
    assert r.status_code == 200, r.text
    assert r.json()["type"] == "counter"
    assert couch.get("/_node/_local").json() == {"name": name}
    # A node named outright hands the rest of the path to that node: its `/` is the welcome.
    assert couch.get(f"/_node/{name}").json()["couchdb"] == "Welcome"
    if is_couchlite(couch):
        assert couch.get("/_membership").json() == {"all_nodes": [name], "cluster_nodes": [name]}


def test_nonode_at_nohost_is_this_node_on_couchlite(couch):
    """The name of an Erlang node started without one. couchlite answers to it; a CouchDB whose node
    has another name answers CouchDB's `nodedown`."""
    r = couch.get("/_node/nonode@nohost/_stats/couchdb/httpd_request_methods")
    if is_couchlite(couch) or node_name(couch) == "nonode@nohost":
        assert r.status_code == 200, r.text
        assert "GET" in r.json()
    else:
        assert r.status_code == 412, r.text
        assert r.json() == {"error": "nodedown", "reason": "nonode@nohost is down"}


@pytest.mark.parametrize("path", ["_stats", "_system", "_prometheus", ""])
def test_unknown_node_is_not_found(couch, path):
    r = couch.get(f"/_node/no-such-node{'/' + path if path else ''}")
    assert r.status_code == 404, r.text
    assert r.json() == {"error": "not_found", "reason": "no such node: no-such-node"}


def test_node_without_a_name_is_a_bad_request(couch):
    r = couch.get("/_node")
    assert r.status_code == 400, r.text
    assert r.json() == {"error": "bad_request", "reason": "Incomplete path to _node request"}


def test_stats_count_requests_by_method_and_status(couch, db):
    before = counters(couch)
    for _ in range(5):
        assert couch.get("/").status_code == 200
    for i in range(3):
        assert couch.get(f"/{db}/missing-{i}").status_code == 404
    assert couch.put(f"/{db}/doc", json={"a": 1}).status_code == 201
    after = counters(couch)
    # `after` counts its own GET (a request is counted as it starts) and `before`'s 200 (as it ends).
    moved(couch, before, after, "GET", 5 + 3 + 1)
    moved(couch, before, after, "200", 5 + 1)
    moved(couch, before, after, "404", 3)
    moved(couch, before, after, "PUT", 1)
    moved(couch, before, after, "201", 1)
    moved(couch, before, after, "requests", 5 + 3 + 1 + 1)


def test_stats_leaves_have_couchdb_shape(couch):
    body = stats(couch)
    leaves = []

    def walk(path, node):
        if isinstance(node, dict) and set(node) == {"value", "type", "desc"}:
            leaves.append((path, node))
            return
        assert isinstance(node, dict), (path, node)
        for key, child in node.items():
            walk(path + [key], child)

    walk([], body)
    assert leaves
    for path, leaf in leaves:
        assert leaf["type"] in ("counter", "gauge", "histogram"), path
        assert isinstance(leaf["desc"], str) and leaf["desc"], path
        if leaf["type"] == "histogram":
            assert list(leaf["value"]) == HISTOGRAM_KEYS, path
        else:
            assert isinstance(leaf["value"], int), (path, leaf)
    couchdb = body["couchdb"]
    assert set(couchdb["httpd_request_methods"]) == {"COPY", "DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"}
    assert {"200", "201", "202", "204", "206", "301", "302", "304", "400", "401", "403", "404", "405", "406",
            "409", "412", "413", "414", "415", "416", "417", "500", "501", "503", "507"} <= set(
        couchdb["httpd_status_codes"])
    for name in ("open_databases", "open_os_files"):
        assert couchdb[name]["type"] == "counter", name
    assert couchdb["httpd"]["clients_requesting_changes"]["type"] == "counter"
    jobs = body["couch_replicator"]["jobs"]
    for name in ("running", "pending", "total", "crashed"):
        assert jobs[name]["type"] == "gauge", name
    for name in ("adds", "starts", "removes", "crashes", "duplicate_adds"):
        assert jobs[name]["type"] == "counter", name


def test_request_time_is_a_histogram_of_recent_requests(couch):
    for _ in range(3):
        couch.get("/")
    leaf = stats(couch, "/couchdb/request_time")
    assert leaf["type"] == "histogram"
    value = leaf["value"]
    assert list(value) == HISTOGRAM_KEYS
    assert value["n"] >= 3, value
    assert 0 < value["min"] <= value["median"] <= value["max"], value
    assert [p[0] for p in value["percentile"]] == [50, 75, 90, 95, 99, 999]
    quantiles = [p[1] for p in value["percentile"]]
    assert quantiles == sorted(quantiles) and value["min"] <= quantiles[0] and quantiles[-1] <= value["max"]
    assert value["median"] == quantiles[0]
    assert value["histogram"] == [[0, 0]]


def test_stats_sub_paths_walk_into_the_tree(couch):
    methods = stats(couch, "/couchdb/httpd_request_methods")
    assert set(methods) == {"COPY", "DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"}
    get = stats(couch, "/couchdb/httpd_request_methods/GET")
    assert set(get) == {"value", "type", "desc"} and get["desc"] == "number of HTTP GET requests"
    assert get["value"] > methods["GET"]["value"]
    assert isinstance(stats(couch, "/couchdb/request_time/value/n"), int)
    assert stats(couch, "/couchdb/no_such_stat") is None
    assert stats(couch, "/couchdb/httpd_request_methods/GET/value/deeper") is None
    assert stats(couch, "/couchdb/httpd_status_codes/200")["desc"] == "number of HTTP 200 OK responses"


def test_clients_requesting_changes_counts_waiting_feeds(couch, db):
    path = "/couchdb/httpd/clients_requesting_changes/value"
    idle = stats(couch, path)
    started = threading.Event()

    def longpoll():
        started.set()
        couch.get(f"/{db}/_changes", params={"feed": "longpoll", "since": "now", "timeout": "3000"},
                  timeout=REQUEST_TIMEOUT_S)

    feed = threading.Thread(target=longpoll)
    feed.start()
    started.wait()
    try:
        seen = idle
        for _ in range(100):
            seen = stats(couch, path)
            if seen > idle:
                break
            threading.Event().wait(0.02)
        if is_couchlite(couch):
            assert seen == idle + 1, (idle, seen)
        else:
            assert seen >= idle + 1, (idle, seen)
    finally:
        feed.join()
    if is_couchlite(couch):
        assert stats(couch, path) == idle


def test_open_databases_and_files(couch, db):
    couch.put(f"/{db}/x", json={})
    couchdb = stats(couch)["couchdb"]
    if is_couchlite(couch):
        assert couchdb["open_databases"]["value"] >= 1
        assert couchdb["open_os_files"]["value"] >= 3


def test_stats_are_read_only(couch):
    for method in ("POST", "PUT", "DELETE"):
        for path in ("/_node/_local/_stats", "/_node/_local/_system", "/_node/_local/_prometheus",
                     "/_membership"):
            r = couch.request(method, path, json={})
            assert r.status_code == 405, (method, path, r.text)
            assert r.json() == {"error": "method_not_allowed", "reason": "Only GET allowed"}, (method, path)
    assert couch.head("/_node/_local/_stats").status_code == 200


# ---------------------------------------------------------------------------------------------
# Who may read them


def anonymous(couch):
    s = requests.Session()
    s.headers["Accept"] = "application/json"
    return s


@pytest.fixture
def plain_user(couch):
    name = f"u{uuid.uuid4().hex[:10]}"
    password = uuid.uuid4().hex
    doc_id = f"org.couchdb.user:{name}"
    r = couch.put(f"/_users/{doc_id}", json={"name": name, "password": password, "roles": [], "type": "user"})
    assert r.status_code in (201, 202), r.text
    yield name, password
    r = couch.get(f"/_users/{doc_id}")
    if r.status_code == 200:
        couch.delete(f"/_users/{doc_id}", params={"rev": r.json()["_rev"]})


@pytest.mark.parametrize("path", ["/_node/_local/_stats", "/_node/_local/_stats/couchdb", "/_node/_local/_system",
                                  "/_node/_local/_prometheus", "/_node/no-such-node/_stats"])
def test_metrics_are_for_server_admins_only(couch, plain_user, path):
    for auth in (None, plain_user):
        s = anonymous(couch)
        if auth:
            s.auth = auth
        r = s.get(couch.url(path), timeout=REQUEST_TIMEOUT_S)
        assert r.status_code == 401, (auth, r.status_code, r.text)
        assert r.json() == {"error": "unauthorized", "reason": METRICS_REASON}, auth


@pytest.mark.parametrize("path", ["/_membership", "/_node/_local"])
def test_membership_is_for_server_admins_only(couch, plain_user, path):
    for auth in (None, plain_user):
        s = anonymous(couch)
        if auth:
            s.auth = auth
        r = s.get(couch.url(path), timeout=REQUEST_TIMEOUT_S)
        assert r.status_code == 401, (auth, r.status_code, r.text)
        assert r.json() == {"error": "unauthorized", "reason": "You are not a server admin."}, auth


# ---------------------------------------------------------------------------------------------
# Prometheus


def parse_prometheus(text):
    """A small parser of the text exposition format: {(name, labels): value} and {name: type}.
    Lines are split as Python's splitlines does (CouchDB 3.4.3 ends its HELP lines with `\\r`)."""
    samples = {}
    types = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            assert parts[1] in ("HELP", "TYPE"), line
            if parts[1] == "TYPE":
                assert parts[3] in ("counter", "gauge", "summary", "histogram", "untyped"), line
                types[parts[2]] = parts[3]
            continue
        head, value = line.rsplit(" ", 1)
        labels = ()
        name = head
        if "{" in head:
            assert head.endswith("}"), line
            name, inner = head[:-1].split("{", 1)
            pairs = []
            for item in inner.split(","):
                key, quoted = item.strip().split("=", 1)
                assert quoted.startswith('"') and quoted.endswith('"'), line
                pairs.append((key, quoted[1:-1]))
            labels = tuple(sorted(pairs))
        assert name.replace("_", "a").isalnum() and not name[0].isdigit(), line
        samples[(name, labels)] = float(value)
    return samples, types


def prometheus(couch):
    r = couch.get("/_node/_local/_prometheus")
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "text/plain; version=2.0"
    return parse_prometheus(r.text)


def test_prometheus_parses_and_names_metrics_as_couchdb(couch, db):
    samples, types = prometheus(couch)
    assert types["couchdb_httpd_request_methods"] == "counter"
    assert types["couchdb_httpd_status_codes"] == "counter"
    assert types["couchdb_open_databases"] == "gauge"
    assert types["couchdb_httpd_clients_requesting_changes"] == "gauge"
    assert types["couchdb_request_time_seconds"] == "summary"
    assert types["couchdb_uptime_seconds"] == "counter"
    assert types["couchdb_couch_replicator_jobs_running"] == "gauge"
    for q in ("0.5", "0.75", "0.9", "0.95", "0.99", "0.999"):
        assert ("couchdb_request_time_seconds", (("quantile", q),)) in samples, q
    assert ("couchdb_request_time_seconds_count", ()) in samples
    assert ("couchdb_request_time_seconds_sum", ()) in samples
    assert samples[("couchdb_uptime_seconds", ())] >= 0
    assert samples[("couchdb_membership", (("nodes", "cluster_nodes"),))] >= 1

    get = ("couchdb_httpd_request_methods", (("method", "GET"),))
    not_found = ("couchdb_httpd_status_codes", (("code", "404"),))
    for i in range(4):
        assert couch.get(f"/{db}/nothing-{i}").status_code == 404
    after, _ = prometheus(couch)
    # The second scrape counts its own GET as well.
    if is_couchlite(couch):
        assert after[get] - samples[get] == 4 + 1
        assert after[not_found] - samples[not_found] == 4
    else:
        assert after[get] - samples[get] >= 4 + 1
        assert after[not_found] - samples[not_found] >= 4


def test_prometheus_parser_rejects_garbage():
    with pytest.raises(Exception):
        parse_prometheus("# TYPE x sideways\n")
    with pytest.raises(Exception):
        parse_prometheus('x{a="1" 2\n')
    with pytest.raises(Exception):
        parse_prometheus("x notanumber\n")
    assert parse_prometheus("# HELP a b\r# TYPE a counter\na 1\n") == ({("a", ()): 1.0}, {"a": "counter"})


# ---------------------------------------------------------------------------------------------
# _system and couchlite's own figures


def test_system_reports_uptime(couch):
    r = couch.get("/_node/_local/_system")
    assert r.status_code == 200, r.text
    body = r.json()
    assert isinstance(body["uptime"], int) and body["uptime"] >= 0
    assert isinstance(body["memory"], dict)
    assert isinstance(body["io_input"], int) and isinstance(body["io_output"], int)
    if is_couchlite(couch):
        assert body["memory"]["rss"] > 1 << 20, body
        assert body["memory"]["rss_peak"] >= body["memory"]["rss"]
        assert body["thread_count"] >= 2 and body["open_os_files"] >= 3


def test_system_splits_memory_into_heap_in_use_and_free_on_couchlite(couch, db):
    if not is_couchlite(couch):
        pytest.skip("the heap figures are couchlite's (CouchDB reports its Erlang VM's memory)")
    memory = couch.get("/_node/_local/_system").json()["memory"]
    for key in ("heap_in_use", "heap_free", "heap_mapped"):
        assert isinstance(memory[key], int) and memory[key] >= 0, (key, memory)
    assert memory["heap_in_use"] > 64 << 10, memory  # a running server holds what it allocated: not zeros
    assert memory["heap_in_use"] + memory["heap_free"] < memory["virtual"], memory
    # A 4 MiB body is read into one block of its own mapping while the request runs; afterwards what is in
    # use is back near where it was (nothing holds on to the body).
    big = "z" * (4 << 20)
    assert couch.put(f"/{db}/big", json={"x": big}).status_code == 201
    after = couch.get("/_node/_local/_system").json()["memory"]
    assert after["heap_in_use"] < memory["heap_in_use"] + (16 << 20), (memory, after)


def test_system_reports_the_page_caches_a_database_fills_and_frees_on_couchlite(couch, db):
    if not is_couchlite(couch):
        pytest.skip("the SQLite page-cache figures are couchlite's")
    before = couch.get("/_node/_local/_system").json()["memory"]
    for key in ("page_cache_writers", "page_cache_readers"):
        assert isinstance(before[key], int) and 0 <= before[key] <= before["heap_in_use"], (key, before)
    # About 2 MiB of documents through the writer, then every one of them read back.
    for batch in range(10):
        docs = [{"_id": f"d{batch}-{i}", "t": "y" * 4000} for i in range(50)]
        r = couch.post(f"/{db}/_bulk_docs", json={"docs": docs})
        assert r.status_code == 201, r.text
    assert couch.get(f"/{db}/_all_docs", params={"include_docs": "true"}).status_code == 200
    filled = couch.get("/_node/_local/_system").json()["memory"]
    assert filled["page_cache_writers"] >= before["page_cache_writers"] + (200 << 10), (before, filled)
    assert filled["page_cache_readers"] >= 200 << 10, filled  # the reader that scanned the documents kept pages
    # Deleting the database closes its connections, and their caches leave the figures.
    assert couch.delete(f"/{db}").status_code == 200
    freed = couch.get("/_node/_local/_system").json()["memory"]
    assert freed["page_cache_writers"] <= filled["page_cache_writers"] - (200 << 10), (filled, freed)
    assert freed["page_cache_readers"] <= filled["page_cache_readers"] - (200 << 10), (filled, freed)


def test_connections_and_bytes_move_with_traffic_on_couchlite(couch, db):
    if not is_couchlite(couch):
        pytest.skip("connection and byte counters are couchlite's (CouchDB has its Erlang io statistics)")
    httpd = "/couchdb/httpd"
    before = stats(couch, httpd)
    payload = "x" * 50_000
    assert couch.put(f"/{db}/big", json={"payload": payload}).status_code == 201
    fresh = requests.Session()
    fresh.auth = (couch.user, couch.password)
    assert fresh.get(couch.url("/"), timeout=REQUEST_TIMEOUT_S).status_code == 200
    after = stats(couch, httpd)
    fresh.close()
    assert after["bytes_received"]["value"] - before["bytes_received"]["value"] >= 50_000
    assert after["bytes_sent"]["value"] > before["bytes_sent"]["value"]
    assert after["connections"]["value"] - before["connections"]["value"] >= 1
    assert after["open_connections"]["value"] >= 1


def test_replication_counters_move_on_couchlite(couch, db_factory):
    if not is_couchlite(couch):
        pytest.skip("docs_written and friends are couchlite's additions to couch_replicator")
    source, target = db_factory("src"), db_factory("dst")
    r = couch.post(f"/{source}/_bulk_docs", json={"docs": [{"_id": f"d{i}"} for i in range(3)]})
    assert r.status_code == 201
    before = stats(couch, "/couch_replicator")
    r = couch.post("/_replicate", json={"source": source, "target": target})
    assert r.status_code == 200, r.text
    after = stats(couch, "/couch_replicator")

    def delta(*path):
        a, b = after, before
        for key in path:
            a, b = a[key], b[key]
        return a["value"] - b["value"]

    assert delta("docs_written") == 3
    assert delta("docs_read") == 3
    assert delta("doc_write_failures") == 0
    assert delta("jobs", "adds") == 1 and delta("jobs", "removes") == 1
    assert delta("checkpoints", "success") == 1
    assert after["jobs"]["running"]["value"] == 0
