"""Table for bench/workspaces.sh: OUT RUNS SIZE... (see that script)."""

import json
import re
import statistics
import sys
from pathlib import Path

out, runs, sizes = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]


def ms(us):
    return f"{us / 1000:.1f}"


rows = []
for n in sizes:
    walls, rss, own, secrets, sec_rate, arts, repro, socks = [], [], [], [], [], [], [], []
    incomplete = {}
    for i in range(1, runs + 1):
        err = (out / f"{n}-{i}.err").read_text(errors="replace")
        m = re.search(r"BENCH wall_us=(\d+) maxrss_kib=(\d+)", err)
        if not m:
            sys.exit(f"bench: run {n}-{i} has no BENCH line:\n{err}")
        walls.append(int(m[1]))
        rss.append(int(m[2]))
        rep = json.loads((out / f"{n}-{i}.json").read_text())
        own.append(rep["run"]["duration_us"])
        inv = rep["inventory"]
        search = inv["secrets"]["search"]
        secrets.append(sum(r["entries"] for r in search["roots"] if r["path"] == "/workspace"))
        sec_rate.append(search["entries_per_s"])
        arts.append(sum(w["entries"] for w in inv["artifacts"]["walks"] if w["mount_point"] == "/workspace"))
        repro.append(inv["repro"]["walk_entries"])
        socks.append(sum(w["entries"] for w in inv["sockets"].get("walks", [])))
        for f in rep["findings"]:
            if f["code"] == "probe.incomplete":
                incomplete[f["subject"]] = incomplete.get(f["subject"], 0) + 1
        for p in rep["probes"]:
            if p["status"] != "ok":
                incomplete[f"{p['name']}={p['status']}"] = incomplete.get(f"{p['name']}={p['status']}", 0) + 1
    hf = json.loads((out / f"{n}-hyperfine.json").read_text())["results"][0]
    rows.append(
        {
            "case": "clean" if n == "0" else f"{int(n):,} files",
            "runs": runs,
            "median": ms(statistics.median(walls)),
            "min": ms(min(walls)),
            "max": ms(max(walls)),
            "stddev": ms(statistics.stdev(walls)) if len(walls) > 1 else "-",
            "own median": ms(statistics.median(own)),
            "peak RSS MiB": f"{max(rss) / 1024:.1f}",
            "secrets entries": f"{statistics.median(secrets):,.0f}",
            "secrets entries/s": f"{statistics.median(sec_rate):,.0f}",
            "artifacts entries": f"{statistics.median(arts):,.0f}",
            "repro/sockets entries": f"{statistics.median(repro):,.0f}/{statistics.median(socks):,.0f}",
            "podman exec median": f"{hf['median'] * 1000:.0f}",
            "incomplete": ", ".join(f"{k} ({v}/{runs})" for k, v in sorted(incomplete.items())) or "none",
        }
    )

cols = list(rows[0].keys())
width = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
print("wall times in ms, measured inside the container (wait4); 'own' is the report's run.duration_us;")
print("'podman exec' is hyperfine's median of the whole exec, engine included")
print(" | ".join(c.ljust(width[c]) for c in cols))
print("-+-".join("-" * width[c] for c in cols))
for r in rows:
    print(" | ".join(str(r[c]).ljust(width[c]) for c in cols))
t = out / "true-hyperfine.json"
if t.exists():
    b = json.loads(t.read_text())["results"][0]
    print(f"podman exec CTR /bin/true (engine overhead): median {b['median'] * 1000:.0f} ms, stddev {b['stddev'] * 1000:.0f} ms")
