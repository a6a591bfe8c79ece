"""bench/gallery.py on a dozen photos: the gallery benchmark still runs end to end."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_gallery_benchmark_smoke():
    run = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gallery.py"), "--smoke"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout)
    assert report["grid"]["cold"]["tiles_in_dom"] == 12
    assert report["thumbnails_12mp"]["count"] == 3
    assert report["thumbnails_2mp"]["count"] == 15
