"""Usage: python3 bench/receive_gzip_bomb_rss.py PATH/TO/couchlite

Peak RSS of `couchlite receive` before/after a 1 MB gzip attachment that inflates to 1 GiB."""
import os, sys, time, shutil, tempfile
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "conformance", "e2e"), os.path.join(HERE, "..", "conformance")]
from receive_support import Receiver
from test_receive_e2e import gzip_bomb, gzip_multipart

def hwm(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) // 1024

binary = sys.argv[1]
root = tempfile.mkdtemp()
r = Receiver(binary, root)
r.start()
time.sleep(1)
before = hwm(r.proc.pid)
size = 1 << 30
bomb = gzip_bomb(size)
ctype, body = gzip_multipart("bomb", "photo", bomb, size)
resp = r.session().put(f"{r.base}/{r.db}/bomb?new_edits=false", data=body, headers={"Content-Type": ctype})
time.sleep(20)
after = hwm(r.proc.pid)
out = sum(os.path.getsize(os.path.join(r.out, n)) for n in os.listdir(r.out)) if os.path.isdir(r.out) else 0
print(f"upload {len(bomb)} bytes -> {resp.status_code}; VmHWM before {before} MiB, after {after} MiB; folder {out} bytes")
r.stop()
shutil.rmtree(root, ignore_errors=True)
