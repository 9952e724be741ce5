"""Writes a deterministic sample of real chunks as JSON lines (repo, file, language,
kind, text): per repository folder of SUITE, its code and prose files in sorted order,
10 evenly spaced (with `holdout`, shifted by half a step: other files), the first 12
chunks of each as `cfs chunks FILE --json` gives them.

usage: python3 sample.py SUITE CFS OUT [holdout]"""
import json
import os
import subprocess
import sys

SUITE, CFS, OUT = sys.argv[1:4]
SHIFT = len(sys.argv) > 4 and sys.argv[4] == "holdout"
EXT = set("rs go py ts tsx js java c h cc cpp hpp cs rb php kt kts swift scala hs ex exs lua "
          "zig dart ml mli erl hrl R r jl md markdown mdx rst txt".split())
PER, CAP = 10, 12

n = 0
with open(OUT, "w") as out:
    for repo in sorted(os.listdir(SUITE)):
        files = []
        for root, dirs, names in os.walk(os.path.join(SUITE, repo)):
            dirs[:] = sorted(d for d in dirs
                             if not d.startswith(".") and d not in ("node_modules", "vendor"))
            for name in names:
                ext = name.rsplit(".", 1)[-1] if "." in name else ""
                path = os.path.join(root, name)
                if ext in EXT and os.path.getsize(path) > 0:
                    files.append(path)
        files.sort()
        k = min(PER, len(files))
        shift = len(files) // (2 * k) if SHIFT and k else 0
        for path in [files[i * len(files) // k + shift] for i in range(k)]:
            r = subprocess.run([CFS, "chunks", path, "--json"], capture_output=True, text=True)
            if r.returncode != 0:
                print("skipped", path, r.stderr.strip()[:200], file=sys.stderr)
                continue
            for c in json.loads(r.stdout)["chunks"][:CAP]:
                out.write(json.dumps({"repo": repo, "file": os.path.relpath(path, SUITE),
                                      "language": c.get("language"), "kind": c.get("kind"),
                                      "text": c["text"]}) + "\n")
                n += 1
print(f"sample.py: {n} chunks in {OUT}", file=sys.stderr)
