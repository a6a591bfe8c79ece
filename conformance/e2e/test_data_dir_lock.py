"""One data dir, one process: a second `couchlite serve` (or `receive`, or `push` and `replicate` when they open a
local database) on a data dir another couchlite uses exits 75 (EX_TEMPFAIL) with a message naming that process's
pid, and writes nothing in the dir; the lock is the kernel's (`flock` on `<data-dir>/couchlite.lock`), so the file
a server killed with SIGKILL leaves behind blocks no restart."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
from contextlib import contextmanager

import pytest
import requests

from conftest import ADMIN

LOCK = "couchlite.lock"


def run(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([os.environ["COUCHLITE_BIN"], *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def snapshot(root: str) -> dict[str, tuple]:
    """Every entry under `root` with what a write, a chmod, a creation or a removal would change."""
    entries = {}
    for directory, names, files in os.walk(root):
        for name in [".", *names, *files]:
            path = os.path.normpath(os.path.join(directory, name))
            info = os.lstat(path)
            entries[os.path.relpath(path, root)] = (info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns,
                                                    info.st_ino)
    return entries


@contextmanager
def held_still(server):
    """The running server stopped (SIGSTOP), so whatever changes in its data dir meanwhile is another process's."""
    server.proc.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        server.proc.send_signal(signal.SIGCONT)


def assert_refused(server, r: subprocess.CompletedProcess):
    assert r.returncode == 75, (r.returncode, r.stdout, r.stderr)
    assert f"pid {server.proc.pid}" in r.stderr, r.stderr
    assert "in use" in r.stderr and server.data_dir in r.stderr, r.stderr


def commands_on(data_dir: str, tmp_path) -> dict[str, list[str]]:
    (tmp_path / "photos").mkdir(exist_ok=True)
    return {
        "serve": ["serve", "--bind", "127.0.0.1", "--port", "0", "--data-dir", data_dir,
                  "--admin", f"{ADMIN[0]}:{ADMIN[1]}"],
        "receive": ["receive", "--bind", "127.0.0.1", "--port", "0", "--data-dir", data_dir,
                    "--admin", f"{ADMIN[0]}:{ADMIN[1]}", "--out", str(tmp_path / "out")],
        "push": ["push", str(tmp_path / "photos"), "http://127.0.0.1:9/db", "--data-dir", data_dir],
        "replicate": ["replicate", "src", "http://127.0.0.1:9/dst", "--data-dir", data_dir],
    }


@pytest.mark.parametrize("command", ["serve", "receive", "push", "replicate"])
def test_a_second_process_on_a_data_dir_in_use_exits_75_naming_the_first_and_writes_nothing(
        servers, tmp_path, command):
    a = servers("a")
    assert requests.put(a.url + "/src", timeout=10).status_code == 201
    with held_still(a):
        before = snapshot(a.data_dir)
        r = run(*commands_on(a.data_dir, tmp_path)[command])
        after = snapshot(a.data_dir)
    assert_refused(a, r)
    assert after == before, "the refused process changed the data dir"
    assert not (tmp_path / "out").exists(), "receive made its --out folder"
    # The first server was not disturbed.
    assert requests.get(a.url + "/src", timeout=10).status_code == 200


def test_replicate_between_two_urls_does_not_need_the_data_dir(servers):
    a = servers("a")
    r = run("replicate", "http://127.0.0.1:9/src", "http://127.0.0.1:9/dst", "--data-dir", a.data_dir)
    assert r.returncode == 69, (r.returncode, r.stderr)  # unreachable, not 75: no local database was named


def test_the_lock_file_is_owner_only_and_names_the_server(servers):
    a = servers("a")
    path = os.path.join(a.data_dir, LOCK)
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    with open(path, encoding="utf-8") as f:
        assert f.read() == f"{a.proc.pid}\n"


def test_a_stale_lock_file_from_a_killed_server_does_not_block_a_restart(servers):
    a = servers("a")
    assert requests.put(a.url + "/keep", timeout=10).status_code == 201
    old_pid = a.proc.pid
    a.kill(signal.SIGKILL)
    path = os.path.join(a.data_dir, LOCK)
    with open(path, encoding="utf-8") as f:
        assert f.read() == f"{old_pid}\n", "the killed server's file is left behind"
    a.start()
    assert requests.get(a.url + "/keep", timeout=10).status_code == 200
    with open(path, encoding="utf-8") as f:
        assert f.read() == f"{a.proc.pid}\n"


def test_the_data_dir_is_free_once_the_server_has_stopped(servers):
    a = servers("a")
    assert requests.put(a.url + "/src", timeout=10).status_code == 201
    assert requests.put(a.url + "/src/doc", json={"v": 1}, timeout=10).status_code == 201
    assert a.stop() == 0
    r = run("replicate", "src", "copy", "--create-target", "--data-dir", a.data_dir)
    assert r.returncode == 0, r.stderr
