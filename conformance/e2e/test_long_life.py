"""A server that lives: 100,000 single-document writes into one process, then 20,000 `_bulk_docs` of 100, over
keep-alive connections, and the process is still there with its memory, threads and time per write flat.

couchlite used to die at its 6,361st write: each database event wrapped the stored observer in one more pair of
reabstraction thunks, so every write called a longer chain until a connection thread's 512 KiB stack ran out
(issue 33). No test had written more than a few thousand times into one process.

The single writes are a mix a replicator and an app make — `PUT /db/doc`, `POST /db`, `_bulk_docs` of one, a
`_local` checkpoint update, a `DELETE` — on WRITERS connections at once (so the group commit shares each fsync).
Checked at the end:
- the process is alive and answers, and every write was acknowledged (2xx) with what it was asked;
- resident memory and thread count, sampled through the run, are flat: the mean of the last 10 % of samples is
  within RSS_GROWTH_LIMIT of the first 10 % (plus RSS_SLACK_MIB for caches that fill as the database grows);
- the time per single write of the last 1,000 is within 1.5× of the first 1,000's, as the server's own CPU time
  (utime + stime from /proc) over each window: a call chain that grows with every write makes each write cost
  more CPU, while the wall-clock median also moves with whatever else the machine runs (a build starting halfway
  through made the last thousand 1.6× slower by the clock with the same CPU per write). Both are printed.

    COUCHLITE_BIN=$(swift build --show-bin-path)/couchlite \\
        python3 -m pytest conformance/e2e/test_long_life.py -q -s

`LONG_LIFE_WRITES` and `LONG_LIFE_BULKS` scale it (defaults 100,000 and 20,000).
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import threading
import time

from processes import cpu_seconds

SINGLE_WRITES = int(os.environ.get("LONG_LIFE_WRITES", "100000"))
BULKS = int(os.environ.get("LONG_LIFE_BULKS", "20000"))
BULK_SIZE = 100
WRITERS = 8
RSS_GROWTH_LIMIT = 1.25
RSS_SLACK_MIB = 48
LATENCY_GROWTH_LIMIT = 1.5
LATENCY_WINDOW = 1000
SAMPLE_EVERY_S = 0.5
AUTH = "Basic YWRtaW46cGFzcw=="  # admin:pass


class KeepAlive:
    """One keep-alive HTTP/1.1 connection; every request must get a 2xx (a reset or a 5xx fails the test)."""

    def __init__(self, port: int):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def request(self, method: str, path: str, body: bytes | None = None) -> dict:
        headers = {"Authorization": AUTH, "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        self.connection.request(method, path, body=body, headers=headers)
        response = self.connection.getresponse()
        data = response.read()
        assert 200 <= response.status < 300, f"{method} {path}: {response.status} {data[:300]!r}"
        assert response.getheader("Connection", "").lower() != "close", f"{method} {path} closed the connection"
        return json.loads(data)

    def close(self):
        self.connection.close()


class Sampler(threading.Thread):
    """Samples the server's VmRSS (MiB) and thread count every SAMPLE_EVERY_S until stopped."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[tuple[float, int]] = []
        self.done = threading.Event()

    def read(self) -> tuple[float, int]:
        fields = {}
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                name, _, value = line.partition(":")
                fields[name] = value.split()[0] if value.split() else ""
        return int(fields["VmRSS"]) / 1024, int(fields["Threads"])

    def run(self):
        while not self.done.wait(SAMPLE_EVERY_S):
            self.samples.append(self.read())

    def stop(self) -> list[tuple[float, int]]:
        self.done.set()
        self.join()
        return self.samples


class CPUWindows:
    """The server's CPU time when the whole run's write count crosses each window edge: [0, W) and [N-W, N)."""

    def __init__(self, pid: int, total: int):
        self.pid = pid
        self.edges = {0, LATENCY_WINDOW, total - LATENCY_WINDOW, total}
        self.at: dict[int, float] = {}

    def crossed(self, count: int):
        if count in self.edges:
            self.at[count] = cpu_seconds(self.pid)

    def per_write_ms(self, start: int) -> float:
        return (self.at[start + LATENCY_WINDOW] - self.at[start]) / LATENCY_WINDOW * 1000


def single_writes(port: int, db: str, writer: int, count: int, latencies: list[tuple[int, float]],
                  counter: list[int], lock: threading.Lock, cpu: CPUWindows):
    """`count` writes on one connection, cycling through the five kinds; each latency is recorded with the
    write's global order (`counter`), so the first and last thousand of the whole run can be compared, and the
    server's CPU time is read as the count crosses those windows' edges."""
    client = KeepAlive(port)
    local_rev = None
    try:
        for n in range(count):
            kind = n % 5
            started = time.perf_counter()
            if kind == 0:
                doc_id = f"w{writer}-{n}"
                answer = client.request("PUT", f"/{db}/{doc_id}", json.dumps({"n": n}).encode())
                assert answer["ok"] and answer["id"] == doc_id, answer
                last_put = (doc_id, answer["rev"])
            elif kind == 1:
                answer = client.request("POST", f"/{db}", json.dumps({"n": n, "by": writer}).encode())
                assert answer["ok"] and answer["rev"].startswith("1-"), answer
            elif kind == 2:
                doc_id = f"b{writer}-{n}"
                answer = client.request("POST", f"/{db}/_bulk_docs",
                                        json.dumps({"docs": [{"_id": doc_id, "n": n}]}).encode())
                assert answer == [{"ok": True, "id": doc_id, "rev": answer[0]["rev"]}], answer
            elif kind == 3:
                body = {"last": n} if local_rev is None else {"last": n, "_rev": local_rev}
                answer = client.request("PUT", f"/{db}/_local/checkpoint-{writer}", json.dumps(body).encode())
                assert answer["ok"], answer
                local_rev = answer["rev"]
            else:
                doc_id, rev = last_put
                answer = client.request("DELETE", f"/{db}/{doc_id}?rev={rev}")
                assert answer["ok"] and answer["rev"].startswith("2-"), answer
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append((counter[0], elapsed))
                counter[0] += 1
                cpu.crossed(counter[0])
    finally:
        client.close()


def bulk_writes(port: int, db: str, writer: int, count: int):
    client = KeepAlive(port)
    try:
        for n in range(count):
            prefix = f"bulk{writer}-{n}-"
            body = ('{"docs":[' + ",".join(f'{{"_id":"{prefix}{i}","i":{i}}}' for i in range(BULK_SIZE))
                    + "]}").encode()
            answer = client.request("POST", f"/{db}/_bulk_docs", body)
            assert len(answer) == BULK_SIZE and all(row.get("ok") for row in answer), answer[:3]
    finally:
        client.close()


def run_threads(target, args_for_writer, writers: int):
    errors: list[BaseException] = []

    def guarded(*args):
        try:
            target(*args)
        except BaseException as error:  # noqa: BLE001 (reported below, with the others)
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=args_for_writer(w)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, f"{len(errors)} writer(s) failed; the first: {errors[0]!r}"


def flat(samples: list[tuple[float, int]], index: int) -> tuple[float, float]:
    tenth = max(1, len(samples) // 10)
    first = statistics.mean(s[index] for s in samples[:tenth])
    last = statistics.mean(s[index] for s in samples[-tenth:])
    return first, last


def test_a_hundred_thousand_writes_and_two_million_documents_in_one_process(servers):
    server = servers("long-life")
    port = server.port
    db = "longlife"
    setup = KeepAlive(port)
    setup.request("PUT", f"/{db}")
    setup.close()

    sampler = Sampler(server.proc.pid)
    sampler.start()
    latencies: list[tuple[int, float]] = []
    counter = [0]
    lock = threading.Lock()
    per_writer = SINGLE_WRITES // WRITERS // 5 * 5  # whole cycles of the five kinds
    cpu = CPUWindows(server.proc.pid, per_writer * WRITERS)
    cpu.crossed(0)
    started = time.monotonic()
    run_threads(single_writes, lambda w: (port, db, w, per_writer, latencies, counter, lock, cpu), WRITERS)
    single_seconds = time.monotonic() - started
    single_samples = list(sampler.samples)

    started = time.monotonic()
    run_threads(bulk_writes, lambda w: (port, db, w, BULKS // WRITERS), WRITERS)
    bulk_seconds = time.monotonic() - started
    samples = sampler.stop()

    assert server.proc.poll() is None, f"the server died (exit {server.proc.returncode})\n{server.log_tail()}"
    check = KeepAlive(port)
    info = check.request("GET", f"/{db}")
    check.close()
    writes = per_writer * WRITERS
    # Each cycle of five leaves a POSTed document and a _bulk_docs one, and a PUT one deleted (_local: not counted).
    cycles = WRITERS * per_writer // 5
    assert info["doc_count"] == cycles * 2 + (BULKS // WRITERS) * WRITERS * BULK_SIZE, info
    assert info["doc_del_count"] == cycles, info

    ordered = [elapsed for _, elapsed in sorted(latencies)]
    assert len(ordered) == writes
    first_ms = statistics.median(ordered[:LATENCY_WINDOW]) * 1000
    last_ms = statistics.median(ordered[-LATENCY_WINDOW:]) * 1000
    rss_first, rss_last = flat(samples, 0)
    threads_first, threads_last = flat(samples, 1)
    single_rss_first, single_rss_last = flat(single_samples, 0) if len(single_samples) >= 10 else (0, 0)
    cpu_first_ms, cpu_last_ms = cpu.per_write_ms(0), cpu.per_write_ms(writes - LATENCY_WINDOW)
    print(f"\n{writes} single writes in {single_seconds:.1f} s ({writes / single_seconds:.0f}/s), "
          f"median {first_ms:.2f} ms first {LATENCY_WINDOW}, {last_ms:.2f} ms last; server CPU per write "
          f"{cpu_first_ms:.3f} ms first, {cpu_last_ms:.3f} ms last; "
          f"{BULKS} bulks of {BULK_SIZE} in {bulk_seconds:.1f} s; RSS {rss_first:.1f} → {rss_last:.1f} MiB "
          f"(single writes {single_rss_first:.1f} → {single_rss_last:.1f}), threads {threads_first:.1f} → "
          f"{threads_last:.1f}, {len(samples)} samples")
    assert cpu_last_ms <= cpu_first_ms * LATENCY_GROWTH_LIMIT, \
        f"time per write grew: the server spent {cpu_first_ms:.3f} ms of CPU per write on the first " \
        f"{LATENCY_WINDOW}, {cpu_last_ms:.3f} ms on the last (wall-clock medians {first_ms:.2f}, {last_ms:.2f} ms)"
    assert rss_last <= rss_first * RSS_GROWTH_LIMIT + RSS_SLACK_MIB, \
        f"resident memory grew from {rss_first:.1f} to {rss_last:.1f} MiB"
    assert threads_last <= threads_first + 4, f"threads grew from {threads_first:.1f} to {threads_last:.1f}"
