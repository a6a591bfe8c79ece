"""`--log-format json` / `COUCHLITE_LOG_FORMAT=json` (issue 16): one JSON object per log line, access lines
with the request's fields; the default stays the text format."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile

import requests

ADMIN = "admin:pass"


def run_server(*flags, env_extra=None):
    data = tempfile.mkdtemp(prefix="couchlite-log-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUCHLITE_")}
    env.update(env_extra or {})
    proc = subprocess.Popen(
        [os.environ["COUCHLITE_BIN"], "--port", "0", "--data-dir", os.path.join(data, "d"), "--admin", ADMIN,
         "--pbkdf2-iterations", "1000", "--log-level", "info", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    match = re.search(r"http://\S+/", line)
    assert match, line
    return proc, match.group(0).replace("http://", f"http://{ADMIN}@").rstrip("/")


def logged_lines(*flags, env_extra=None):
    proc, url = run_server(*flags, env_extra=env_extra)
    try:
        assert requests.put(f"{url}/logdb", timeout=10).status_code == 201
        assert requests.get(f"{url}/logdb/missing", timeout=10).status_code == 404
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return [line for line in err.splitlines() if line]


def test_json_log_lines_are_objects_with_request_fields():
    for lines in (logged_lines("--log-format", "json"), logged_lines(env_extra={"COUCHLITE_LOG_FORMAT": "json"})):
        objects = [json.loads(line) for line in lines]  # every line is one JSON object
        assert all(isinstance(o, dict) and {"time", "level", "label", "message"} <= set(o) for o in objects)
        access = [o for o in objects if o["message"] == "request"]
        miss = next(o for o in access if o["path"] == "/logdb/missing")
        assert miss["method"] == "GET" and miss["status"] == 404 and isinstance(miss["ms"], (int, float))
        assert isinstance(miss["bytes"], int) and miss["client"] == "127.0.0.1"
        assert any(o["message"] == "listening" for o in objects)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", miss["time"])


def test_text_log_stays_the_default():
    lines = logged_lines()
    access = [line for line in lines if " request " in line and "path=/logdb/missing" in line]
    assert len(access) == 1, lines
    assert re.match(r"\d{4}-\d\d-\d\dT\S+ \[info\] couchlite: request client=127\.0\.0\.1 method=GET", access[0])
    assert "status=404" in access[0]
    for line in lines:
        assert not line.startswith("{"), line


def test_unknown_log_format_is_a_usage_error():
    result = subprocess.run(
        [os.environ["COUCHLITE_BIN"], "--log-format", "xml", "--port", "0"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 64
    assert "--log-format must be text or json" in result.stderr
