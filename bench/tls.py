#!/usr/bin/env python3
"""HTTPS benchmarks (what TLS costs): one couchlite serving plain HTTP and HTTPS (`--tls auto`) at once, and
bench/run's workloads pointed at each port in the same run.

  push-photos  the multipart photo push (wrk, 4 connections, 512 KiB photos cycled, as bench/run's),
               alternating HTTP and HTTPS rounds; the figure is the ratio of the HTTPS median to the
               HTTP median (target >= 70 %)
  big          a 1 GiB attachment PUT and streamed GET over HTTPS; server RSS growth (target < 64 MiB)
  feeds        2,000 longpoll feeds held open over TLS, RSS with them open, and the time until all of
               them have answered one write (target < 1 s)
  idle         2,000 TLS keep-alive connections idle after one request each: server RSS with them open

    python3 bench/tls.py [--server-bin BIN] [--rounds 3] [--duration 8] [--feeds 2000] [--big-size 1G]
    python3 bench/tls.py --smoke --server-bin BIN     # seconds, small data: checks the instrument only

By default it builds and runs the release binary (as bench/run does). Prints a table and one JSON line.
Exit status: 0 when every workload ran without errors (targets may still be missed), 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_bench_run():
    loader = importlib.machinery.SourceFileLoader("bench_run", os.path.join(HERE, "run"))
    spec = importlib.util.spec_from_loader("bench_run", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


run = load_bench_run()

TARGETS = {
    "https_to_http_ratio": (">=", 0.70),
    "big_rss_growth_mib": ("<", 64),
    "feeds_wake_all_s": ("<", 1.0),
}


def start_server(binary: str, work_dir: str):
    """couchlite on two free ports (HTTP and HTTPS); returns (process, http Target, https Target)."""
    data_dir = os.path.join(work_dir, "data")
    user, password = run.LocalServer.USER, run.LocalServer.PASSWORD
    argv = [binary, "--bind", "127.0.0.1", "--port", "0", "--tls", "auto", "--tls-port", "0", "--data-dir",
            data_dir, "--admin", f"{user}:{password}", "--log-level", "error"]
    run.log(f"starting {' '.join(argv)}")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=open(os.path.join(work_dir, "server.log"), "wb"),
                            preexec_fn=lambda: run.raise_fd_limit(run.SERVER_FD_LIMIT))
    ports: dict[str, int] = {}
    pending = b""
    deadline = time.monotonic() + run.SERVER_UP_TIMEOUT_S
    while len(ports) < 2:
        if time.monotonic() > deadline or proc.poll() is not None:
            raise run.BenchError(f"server did not print both listening lines: {pending!r}")
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            pending += os.read(proc.stdout.fileno(), 4096)
        for scheme, port in re.findall(rb"couchlite listening on (https?)://127\.0\.0\.1:(\d+)/", pending):
            ports[scheme.decode()] = int(port)
    targets = [run.Target(f"{scheme}://{user}:{password}@127.0.0.1:{ports[scheme]}", pid=proc.pid)
               for scheme in ("http", "https")]
    return proc, targets[0], targets[1]


def push_photos_round(ctx, index: int) -> tuple[float, float | None, list[str]]:
    db = ctx.create_db(f"photos-{ctx.target.scheme}-{index}")
    mp = ctx.wrk(f"push-photos-{ctx.target.scheme}", "push_photos_multipart.lua",
                 [db, ctx.photos(), ctx.nonce], connections=4)
    return mp["units"] / run.MB / mp["seconds"], mp["server_cpu_pct"], run.wrk_errors(mp)


def idle(target, count: int, settle: float) -> tuple[dict, list[str]]:
    """`count` TLS connections, each after one keep-alive request (so it waits in the idle timeout, not the
    first request's header timeout), held open doing nothing; server RSS before, with them open, after."""
    errors: list[str] = []
    request = (f"GET /_up HTTP/1.1\r\nHost: {target.host}:{target.port}\r\n"
               f"Authorization: {target.auth}\r\n\r\n").encode()
    before = target.rss_mib()
    held = []
    started = time.monotonic()
    try:
        for _ in range(count):
            sock = target.socket(timeout=10)
            sock.sendall(request)
            data = b""
            while b"\r\n\r\n" not in data or not data.endswith(b"}\n"):
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
            if not data.startswith(b"HTTP/1.1 200"):
                errors.append(f"keep-alive request answered {data[:80]!r}")
                break
            held.append(sock)
        open_s = time.monotonic() - started
        time.sleep(settle)
        during = target.rss_mib()
        # Every one is still usable: a second request on a sample of them.
        for sock in held[:: max(1, len(held) // 20)]:
            sock.sendall(request)
            if not sock.recv(4096).startswith(b"HTTP/1.1 200"):
                errors.append("an idle TLS connection did not answer its second request")
                break
    finally:
        for sock in held:
            sock.close()
    time.sleep(settle)
    return {
        "connections": len(held), "open_s": open_s, "rss_before_mib": before, "rss_open_mib": during,
        "rss_per_connection_kib": (during - before) * 1024 / max(1, len(held)) if before and during else None,
        "rss_after_close_mib": target.rss_mib(),
    }, errors


def main(argv) -> int:
    p = argparse.ArgumentParser(prog="bench/tls.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--server-bin", help="couchlite binary (default: build and use the release one)")
    p.add_argument("--rounds", type=int, help="alternating HTTP/HTTPS push rounds (default 3)")
    p.add_argument("--duration", type=int, help="seconds per push round (default 8)")
    p.add_argument("--feeds", type=int, help="longpoll feeds over TLS (default 2000)")
    p.add_argument("--big-size", type=run.parse_size, help="bytes of the big attachment (default 1G)")
    p.add_argument("--photos", type=int, help="distinct 512 KiB photos cycled (default 64)")
    p.add_argument("--idle", type=int, help="idle TLS keep-alive connections (default 2000)")
    p.add_argument("--only", help="comma-separated: push-photos,big,feeds,idle (default all)")
    p.add_argument("--smoke", action="store_true", help="1 round of 1 s, 4 MiB, 100 feeds: errors only")
    args = p.parse_args(argv)
    defaults = dict(rounds=3, duration=8, feeds=2000, big_size=1024 * run.MIB, photos=64, idle=2000)
    smoke = dict(rounds=1, duration=1, feeds=100, big_size=4 * run.MIB, photos=4, idle=100)
    for key, value in (smoke if args.smoke else defaults).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.feed_settle = 0.5 if args.smoke else 2.0
    args.changes_runs = 1
    args.seed_docs = 1
    workloads = (args.only or "push-photos,big,feeds,idle").split(",")
    if shutil.which("wrk") is None:
        print("bench/tls.py: wrk not found (scripts/setup.sh installs it)", file=sys.stderr)
        return 2

    work_dir = tempfile.mkdtemp(prefix="couchlite-bench-tls.")
    proc = None
    metrics: dict = {}
    errors: list[str] = []
    try:
        binary = args.server_bin
        if binary is None:
            env = dict(os.environ, PATH="/opt/swift/usr/bin:" + os.environ.get("PATH", ""))
            subprocess.run(["swift", "build", "-c", "release", "--product", "couchlite"], cwd=run.ROOT, env=env,
                           check=True, stdout=sys.stderr)
            bin_dir = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=run.ROOT, env=env,
                                     check=True, capture_output=True, text=True).stdout.strip()
            binary = os.path.join(bin_dir, "couchlite")
        proc, http_target, https_target = start_server(binary, work_dir)
        plain = run.Context(http_target, args, work_dir)
        secure = run.Context(https_target, args, work_dir)
        try:
            if "push-photos" in workloads:
                rates = {"http": [], "https": []}
                cpu = {"http": [], "https": []}
                for index in range(args.rounds):
                    for ctx in (plain, secure):
                        rate, cpu_pct, errs = push_photos_round(ctx, index)
                        scheme = ctx.target.scheme
                        rates[scheme].append(rate)
                        cpu[scheme].append(cpu_pct)
                        errors += [f"push-photos {scheme}: {e}" for e in errs]
                        run.log(f"push-photos {scheme}: {rate:.1f} MB/s (server CPU {cpu_pct or 0:.0f} %)")
                    secure.photo_manifest = plain.photo_manifest  # the same photos for both
                metrics["http_mb_per_s"] = statistics.median(rates["http"])
                metrics["https_mb_per_s"] = statistics.median(rates["https"])
                metrics["http_rounds"] = [round(r, 1) for r in rates["http"]]
                metrics["https_rounds"] = [round(r, 1) for r in rates["https"]]
                metrics["http_server_cpu_pct"] = cpu["http"]
                metrics["https_server_cpu_pct"] = cpu["https"]
                metrics["https_to_http_ratio"] = metrics["https_mb_per_s"] / metrics["http_mb_per_s"]
            if "big" in workloads:
                big, errs = run.big(secure)
                errors += [f"big: {e}" for e in errs]
                metrics.update({f"big_{k}": v for k, v in big.items()})
            if "feeds" in workloads:
                feeds, errs = run.feeds(secure)
                errors += [f"feeds: {e}" for e in errs]
                metrics.update({f"feeds_{k}": v for k, v in feeds.items()})
            if "idle" in workloads:
                run.raise_fd_limit(args.idle + 256)
                result, errs = idle(https_target, args.idle, args.feed_settle)
                errors += [f"idle: {e}" for e in errs]
                metrics.update({f"idle_{k}": v for k, v in result.items()})
        finally:
            plain.cleanup()
            secure.cleanup()
    except (run.BenchError, OSError, subprocess.CalledProcessError) as e:
        errors.append(f"{type(e).__name__}: {e}")
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work_dir, ignore_errors=True)

    for name, value in metrics.items():
        target = TARGETS.get(name)
        verdict = ""
        if target and isinstance(value, (int, float)):
            op, limit = target
            verdict = "  met" if (value >= limit if op == ">=" else value < limit) else f"  MISSED ({op} {limit})"
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        print(f"{name:32} {shown}{verdict}")
    for e in errors:
        print(f"error: {e}")
    print("BENCHJSON " + json.dumps({"workload": "tls", "metrics": metrics, "errors": errors}))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
