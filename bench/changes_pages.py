"""PouchDB-style paging: _changes?style=all_docs&limit=100 over 20,000 docs. Usage: changes_pages.py BINARY PORT"""
import requests, sys, time, subprocess, tempfile, os
binary, port = sys.argv[1], int(sys.argv[2])
d = tempfile.mkdtemp()
p = subprocess.Popen([binary, "--port", str(port), "--data-dir", d, "--admin", "a:b", "--log-level", "error"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(1.5)
s = requests.Session(); s.auth = ("a", "b"); u = f"http://127.0.0.1:{port}"
s.put(u + "/p")
for k in range(20):
    s.post(u + "/p/_bulk_docs", json={"new_edits": False, "docs": [{"_id": f"d{k}-{i}", "_rev": "1-a", "v": i} for i in range(1000)]})
t = time.perf_counter(); since = 0; n = 0
while True:
    r = s.get(u + "/p/_changes", params={"style": "all_docs", "since": since, "limit": 100}).json()
    n += len(r["results"]); since = r["last_seq"]
    if not r["results"]: break
el = time.perf_counter() - t
print(f"{binary}: {n} rows in {el:.2f} s = {n/el:.0f} rows/s (limit=100 pages)")
p.terminate(); p.wait()
