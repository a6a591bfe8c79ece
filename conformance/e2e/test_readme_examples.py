"""The README's curl examples must work as written: run them, in order, against a fresh server."""

from __future__ import annotations

import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def readme_curl_block() -> str:
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = text.split("## Using it with curl", 1)[1]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, "README has no ```sh block under 'Using it with curl'"
    return match.group(1)


def test_readme_curl_examples_run_against_a_fresh_server(servers):
    a = servers("readme")
    block = readme_curl_block()
    assert block.count("curl ") >= 20
    script = "set -euo pipefail\n" \
             "curl() { command curl -sS --fail-with-body \"$@\"; echo; }\n" + \
             block.replace("127.0.0.1:5984", f"127.0.0.1:{a.port}")
    r = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"README example failed:\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    assert '"couchdb":"Welcome"' in r.stdout
    assert "206" not in r.stderr
