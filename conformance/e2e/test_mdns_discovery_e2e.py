"""Issue 40: `couchlite receive` announces itself on the LAN with DNS-SD over mDNS, and peers find it.

Two network namespaces joined by a veth pair (a private /30, multicast on) stand for two machines on one LAN.
`couchlite receive` runs in one; from the other, python-zeroconf (the implementation Home Assistant uses) finds
`_photodrop._tcp` and `_couchdb._tcp`, resolves them (address, port, TXT: database path, TLS port and
certificate fingerprint, display name, protocol version, and no credentials), `couchlite peers` lists the drop,
`couchlite push DIR --to NAME` with the code the receiver shows sends three photos that land byte-identical (a
wrong code gets nothing), and stopping the receiver is seen as removal within 5 s (its goodbye packets). A name
already taken on the LAN is renamed `Name (2)` after probing, and `push --to` the taken name, whose announcement
pins another certificate than the one the server at its address presents, refuses to send.

Needs root (to create namespaces). Where they cannot be created the tests fail with the reason: they never
pass or skip without having run.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

import pytest

ADMIN = "admin:pass"
REMOVAL_LIMIT_S = 5.0
FIND_TIMEOUT_S = 15.0
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00"

# python-zeroconf in the finder's namespace: prints one JSON line per event (found and resolved, removed).
BROWSER = r"""
import json, sys, time
from zeroconf import ServiceBrowser, ServiceStateChange, Zeroconf, IPVersion
address, types = sys.argv[1], sys.argv[2:]
zc = Zeroconf(interfaces=[address], ip_version=IPVersion.V4Only)
def emit(**fields):
    fields["t"] = time.monotonic()
    print(json.dumps(fields), flush=True)
def changed(zeroconf, service_type, name, state_change):
    if state_change is ServiceStateChange.Added:
        info = zeroconf.get_service_info(service_type, name, timeout=5000)
        if info is None:
            emit(event="unresolved", type=service_type, name=name)
            return
        emit(event="added", type=service_type, name=name, port=info.port, server=info.server,
             addresses=info.parsed_addresses(),
             txt={k.decode(): (v.decode() if v is not None else None) for k, v in info.properties.items()})
    elif state_change is ServiceStateChange.Removed:
        emit(event="removed", type=service_type, name=name)
browsers = [ServiceBrowser(zc, t, handlers=[changed]) for t in types]
emit(event="ready")
try:
    sys.stdin.read()
finally:
    zc.close()
"""

# python-zeroconf registering a service under a name, to make couchlite's first choice taken: an impostor that
# announces a drop at `target`:`port` pinning a certificate of its own (`sha256`).
REGISTER = r"""
import socket, sys
from zeroconf import ServiceInfo, Zeroconf, IPVersion
address, name, target, port, sha256 = sys.argv[1:6]
zc = Zeroconf(interfaces=[address], ip_version=IPVersion.V4Only)
info = ServiceInfo("_photodrop._tcp.local.", name + "._photodrop._tcp.local.", port=int(port),
                   addresses=[socket.inet_aton(target)], server="squatter.local.",
                   properties={"v": "1", "name": name, "path": "/photodrop", "tls": port, "sha256": sha256})
zc.register_service(info)
print("registered", flush=True)
try:
    sys.stdin.read()
finally:
    zc.unregister_service(info)
    zc.close()
"""


def run(*args: str) -> None:
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {result.returncode}: {result.stderr.strip()}")


class Link:
    """Two namespaces, `a` (the receiver) and `b` (the finder), joined by a veth pair in 10.251.x.0/30."""

    def __init__(self) -> None:
        tag = f"{os.getpid() % 100000}"
        self.a, self.b = f"clmdns-a-{tag}", f"clmdns-b-{tag}"
        self.veth_a, self.veth_b = f"clma{tag}", f"clmb{tag}"
        third = os.getpid() % 250
        self.address_a, self.address_b = f"10.251.{third}.1", f"10.251.{third}.2"

    def create(self) -> None:
        if os.geteuid() != 0:
            raise RuntimeError("not root: creating network namespaces needs root (CI runs this as root)")
        run("ip", "netns", "add", self.a)
        run("ip", "netns", "add", self.b)
        run("ip", "link", "add", self.veth_a, "type", "veth", "peer", "name", self.veth_b)
        run("ip", "link", "set", self.veth_a, "netns", self.a)
        run("ip", "link", "set", self.veth_b, "netns", self.b)
        for ns, dev, address in ((self.a, self.veth_a, self.address_a), (self.b, self.veth_b, self.address_b)):
            run("ip", "-n", ns, "addr", "add", f"{address}/30", "dev", dev)
            run("ip", "-n", ns, "link", "set", dev, "up", "multicast", "on")
            run("ip", "-n", ns, "link", "set", "lo", "up")
            run("ip", "-n", ns, "route", "add", "224.0.0.0/4", "dev", dev)

    def destroy(self) -> None:
        for ns in (self.a, self.b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def exec(self, ns: str, args: list[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", ns, *args], **kwargs)


@pytest.fixture
def link():
    link = Link()
    try:
        link.create()
    except (RuntimeError, FileNotFoundError) as error:
        link.destroy()
        pytest.fail(f"cannot create the two network namespaces this test needs: {error}", pytrace=False)
    yield link
    link.destroy()


class Lines:
    """A process's stdout read line by line with a deadline (a thread-free poll over a pipe)."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process
        os.set_blocking(process.stdout.fileno(), False)
        self.buffer = b""
        self.lines: list[str] = []

    def wait_for(self, predicate, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while True:
            for line in self.lines:
                if predicate(line):
                    self.lines.remove(line)
                    return line
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {timeout} s; lines: {self.lines}")
            chunk = None
            try:
                chunk = self.process.stdout.read()
            except BlockingIOError:
                pass
            if chunk:
                self.buffer += chunk
                *complete, self.buffer = self.buffer.split(b"\n")
                self.lines += [c.decode() for c in complete]
            else:
                time.sleep(0.05)


def stop(process: subprocess.Popen, sig=signal.SIGINT, timeout=30) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def start_receiver(link: Link, root: str, *extra: str, tls_port: int = 0) -> tuple[subprocess.Popen, dict]:
    binary = os.environ["COUCHLITE_BIN"]
    receiver = link.exec(
        link.a,
        [binary, "receive", "--json", "--port", "0", "--tls", "auto", "--tls-port", str(tls_port),
         "--data-dir", os.path.join(root, "data"), "--admin", ADMIN, "--out", os.path.join(root, "out"),
         "--pbkdf2-iterations", "1000", *extra],
        stdout=subprocess.PIPE, stderr=open(os.path.join(root, "receive.log"), "wb"))
    lines = Lines(receiver)
    info = json.loads(lines.wait_for(lambda line: line.startswith("{"), 30, "JSON line from receive"))
    return receiver, info


def browser(link: Link, *types: str) -> tuple[subprocess.Popen, Lines]:
    process = link.exec(link.b, [sys.executable, "-c", BROWSER, link.address_b, *types],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lines = Lines(process)
    lines.wait_for(lambda line: '"ready"' in line, 15, "python-zeroconf browser start")
    return process, lines


def event(lines: Lines, kind: str, type_: str, timeout: float) -> dict:
    line = lines.wait_for(lambda l: json.loads(l)["event"] == kind and json.loads(l)["type"] == type_, timeout,
                          f"{kind} event for {type_}")
    return json.loads(line)


def photos(root: str, count: int = 3) -> list[bytes]:
    """`count` JPEG files (by their bytes) in root/photos."""
    folder = os.path.join(root, "photos")
    os.makedirs(folder, exist_ok=True)
    made = []
    for i in range(count):
        data = JPEG + random.Random(i).randbytes(50_000 + i)
        with open(os.path.join(folder, f"photo {i}.jpg"), "wb") as f:
            f.write(data)
        made.append(data)
    return made


def push_to(link: Link, root: str, name: str, code: str) -> subprocess.CompletedProcess:
    """`couchlite push root/photos --to NAME --code CODE` from the finder's namespace."""
    return subprocess.run(
        ["ip", "netns", "exec", link.b, os.environ["COUCHLITE_BIN"], "push", os.path.join(root, "photos"),
         "--to", name, "--code", code, "--data-dir", os.path.join(root, "pushdata")],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def saved(out: str, count: int, timeout: float = 15) -> list[bytes]:
    """The contents of the files in `out` once there are `count` (and no temporary ones)."""
    deadline = time.monotonic() + timeout
    while True:
        names = sorted(os.listdir(out)) if os.path.isdir(out) else []
        if len(names) >= count and not any(n.startswith(".") for n in names):
            break
        assert time.monotonic() < deadline, f"{out} has {names}, wanted {count} files"
        time.sleep(0.05)
    contents = []
    for name in names:
        with open(os.path.join(out, name), "rb") as f:
            contents.append(f.read())
    return contents


def test_receive_is_found_resolved_listed_and_its_removal_seen(link, tmp_path):
    root = str(tmp_path)
    finder, found = browser(link, "_photodrop._tcp.local.", "_couchdb._tcp.local.")
    receiver = None
    try:
        started = time.monotonic()
        receiver, info = start_receiver(link, root, "--name", "Test drop")
        sent = photos(root)
        drop = event(found, "added", "_photodrop._tcp.local.", FIND_TIMEOUT_S)
        couch = event(found, "added", "_couchdb._tcp.local.", FIND_TIMEOUT_S)
        print(f"found and resolved {drop['t'] - started:.1f} s after the start")
        fingerprint = info["fingerprint_sha256"].replace(":", "").lower()
        tls_port = int(info["url"].rsplit(":", 1)[1].split("/")[0])
        for service in (drop, couch):
            assert service["name"].startswith("Test drop.")
            assert service["addresses"] == [link.address_a]
            assert service["port"] == tls_port
            txt = service["txt"]
            assert txt["v"] == "1"
            assert txt["name"] == "Test drop"
            assert txt["path"] == "/" + info["db"]
            assert txt["tls"] == str(tls_port)
            assert txt["sha256"] == fingerprint
            # Never credentials: neither the one-time user nor its password is in any TXT value.
            user, password = info["url"].split("//", 1)[1].split("@", 1)[0].split(":", 1)
            assert not any(user in (v or "") or password in (v or "") for v in txt.values())
            assert not any("pass" in k for k in txt)

        peers = subprocess.run(
            ["ip", "netns", "exec", link.b, os.environ["COUCHLITE_BIN"], "peers", "--json", "--seconds", "1.5"],
            capture_output=True, text=True, timeout=30)
        assert peers.returncode == 0, peers.stderr
        listed = [json.loads(line) for line in peers.stdout.splitlines() if line.strip()]
        drops = [p for p in listed if p["kind"] == "drop"]
        assert [p["name"] for p in drops] == ["Test drop"], listed
        assert drops[0]["url"] == f"https://{link.address_a}:{tls_port}/{info['db']}"
        assert drops[0]["fingerprint_sha256"] == info["fingerprint_sha256"]
        assert drops[0]["age_seconds"] <= 4
        assert any(p["kind"] == "server" and p["name"] == "Test drop" for p in listed), listed

        # Found is not admitted: a wrong code gets nothing (and a code is never in the announcement).
        assert info["code"] not in json.dumps(drop["txt"])
        wrong = "ZZZZ-ZZZZ" if info["code"] != "ZZZZ-ZZZZ" else "YYYY-YYYY"
        refused = push_to(link, root, "Test drop", wrong)
        assert refused.returncode == 77, (refused.returncode, refused.stderr)
        assert "refused the code" in refused.stderr, refused.stderr
        # The right code: three photos land byte-identical.
        pushed = push_to(link, root, "Test drop", info["code"])
        print(pushed.stdout + pushed.stderr)
        assert pushed.returncode == 0, (pushed.returncode, pushed.stdout, pushed.stderr)
        assert sorted(saved(info["out"], 3)) == sorted(sent)
        assert "Impostor" not in pushed.stderr
        none = push_to(link, root, "test drop", info["code"])  # bytes, not case-folded: not "Test drop"
        assert none.returncode == 68, (none.returncode, none.stderr)
        assert 'no drop named "test drop"' in none.stderr and '"Test drop"' in none.stderr, none.stderr

        stopped = time.monotonic()
        receiver.send_signal(signal.SIGINT)
        gone = event(found, "removed", "_photodrop._tcp.local.", REMOVAL_LIMIT_S + 1)
        print(f"removal seen {gone['t'] - stopped:.1f} s after SIGINT")
        assert gone["t"] - stopped <= REMOVAL_LIMIT_S
        event(found, "removed", "_couchdb._tcp.local.", 2)
    finally:
        if receiver is not None:
            stop(receiver)
        finder.stdin.close()
        stop(finder, signal.SIGTERM, 10)


def test_a_name_taken_on_the_lan_is_renamed_and_an_impostor_announcing_it_with_another_certificate_gets_nothing(
        link, tmp_path):
    root = str(tmp_path)
    # The impostor took the name first, and announces it at the real receiver's address and TLS port with the
    # fingerprint of a certificate of its own: the pin in the announcement is not the certificate presented there.
    tls_port = 6201
    impostor_pin = hashlib.sha256(b"the impostor's certificate").hexdigest()
    squatter = link.exec(link.b, [sys.executable, "-c", REGISTER, link.address_b, "Test drop", link.address_a,
                                  str(tls_port), impostor_pin],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    receiver = None
    finder = None
    try:
        Lines(squatter).wait_for(lambda line: line == "registered", 15, "python-zeroconf registration")
        receiver, info = start_receiver(link, root, "--name", "Test drop", tls_port=tls_port)
        finder, found = browser(link, "_photodrop._tcp.local.")
        names = set()
        deadline = time.monotonic() + FIND_TIMEOUT_S
        # couchlite is renamed; the squatter keeps its name (the two may be heard in either order).
        wanted = {"Test drop (2)._photodrop._tcp.local.", "Test drop._photodrop._tcp.local."}
        while not wanted <= names:
            names.add(event(found, "added", "_photodrop._tcp.local.", max(0.1, deadline - time.monotonic()))["name"])
        assert names == wanted

        photos(root)
        refused = push_to(link, root, "Test drop", info["code"])
        assert refused.returncode == 76, (refused.returncode, refused.stderr)
        assert "not the one it announced" in refused.stderr, refused.stderr
        time.sleep(0.3)
        assert os.listdir(info["out"]) == []
    finally:
        if receiver is not None:
            stop(receiver)
        if finder is not None:
            finder.stdin.close()
            stop(finder, signal.SIGTERM, 10)
        squatter.stdin.close()
        stop(squatter, signal.SIGTERM, 10)


def test_serve_announce_is_listed_by_peers_and_serve_without_it_is_not(link, tmp_path):
    binary = os.environ["COUCHLITE_BIN"]

    def serve(*extra: str) -> tuple[subprocess.Popen, str]:
        process = link.exec(
            link.a, [binary, "serve", "--bind", link.address_a, "--port", "0", "--admin", ADMIN,
                     "--data-dir", os.path.join(str(tmp_path), f"data{len(extra)}"), "--pbkdf2-iterations", "1000",
                     *extra],
            stdout=subprocess.PIPE, stderr=open(os.path.join(str(tmp_path), "serve.log"), "ab"))
        line = Lines(process).wait_for(lambda l: l.startswith("couchlite listening on "), 30, "listening line")
        return process, line.split()[-1]

    def listed() -> list[dict]:
        peers = subprocess.run(["ip", "netns", "exec", link.b, binary, "peers", "--json", "--seconds", "1.5"],
                               capture_output=True, text=True, timeout=30)
        assert peers.returncode == 0, peers.stderr
        return [json.loads(line) for line in peers.stdout.splitlines() if line.strip()]

    quiet, _ = serve()
    try:
        assert listed() == []
    finally:
        stop(quiet, signal.SIGTERM)
    announced, url = serve("--announce")
    try:
        servers = [p for p in listed() if p["kind"] == "server"]
        assert len(servers) == 1, servers
        assert servers[0]["url"] == url, (servers, url)
        assert servers[0]["fingerprint_sha256"] is None
    finally:
        stop(announced, signal.SIGTERM)
