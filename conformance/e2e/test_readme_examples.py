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


def readme_receive_commands() -> list[str]:
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = text.split("## Receive photos", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, "README has no ```sh block under 'Receive photos'"
    return [line.split("  #", 1)[0].strip() for line in match.group(1).splitlines() if line.strip()]


def test_readme_receive_commands_start_as_written(tmp_path):
    """Each `couchlite receive` line of the README, as written (ports, data dir and admin come from the environment,
    `~` is a temporary home), starts and prints its instructions with a phone's QR code, or writes it."""
    import signal
    commands = readme_receive_commands()
    assert len(commands) == 3 and all(c.startswith("couchlite receive") for c in commands)
    for n, command in enumerate(commands):
        home = tmp_path / f"home{n}"
        home.mkdir()
        png = tmp_path / f"drop{n}.png"
        env = dict(os.environ, HOME=str(home), COUCHLITE_PORT="0", COUCHLITE_TLS_PORT="0",
                   COUCHLITE_DATA_DIR=str(tmp_path / f"data{n}"), COUCHLITE_ADMIN="admin:pass")
        script = "exec " + command.replace("couchlite ", os.environ["COUCHLITE_BIN"] + " ", 1) \
            .replace("/tmp/drop.png", str(png))
        proc = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                stdin=subprocess.DEVNULL, text=True)
        try:
            lines = []
            while not (lines and lines[-1].startswith("Press Ctrl-C")):
                line = proc.stdout.readline()
                assert line, f"{command!r} ended: {''.join(lines)}{proc.stderr.read()}"
                lines.append(line)
            text = "".join(lines)
            if "--qr app" in command:
                assert "#sha256=" in text and png.exists(), text
                assert (home / "Pictures" / "Drop").is_dir()
            else:
                assert "/_photos/#signin=" in text and "scan the QR code with a phone's camera" in text, text
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
        assert proc.returncode == 0, command
