#!/usr/bin/env python3
"""Benchmark: predicted vs measured peak memory (`max allocated`) over the corpus of real GPU runs in
tests/data/memory_corpus/corpus.json (sources in its README).  For a Megatron log the prediction comes from the
log's own argument dump (`preflight calibrate --measured LOG --json`); for a run given by its command line,
from `preflight analyze --json` on it, stage by stage.  Prints one row per stage (or logged rank) and the
worst errors against the targets (|error| <= 3 %, never more than 1 % optimistic).  With --megatron-ci, the
149 runs of Megatron-LM's own CI instead (tests/data/memory_corpus/megatron_ci.json: the last rank's
`mem-max-allocated-bytes` against the last pipeline stage), with the error distribution.

usage: bench/memory_fidelity.py [BUILD_DIR] [--json] [--megatron-ci]
"""
import json
import os
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = [a for a in sys.argv[1:] if not a.startswith("--")]
build = args[0] if args else os.environ.get("PREFLIGHT_BUILD_DIR", os.path.join(root, "build"))
binary = os.path.join(build, "cli", "preflight")
if not os.access(binary, os.X_OK):
    sys.exit("build first: %s is needed" % binary)
corpus_dir = os.path.join(root, "tests", "data", "memory_corpus")
corpus = json.load(open(os.path.join(corpus_dir, "corpus.json")))
MIB = 1 << 20


def run(words):
    p = subprocess.run([binary] + words, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise RuntimeError("preflight %s: %s" % (" ".join(words[:3]), p.stderr.strip()))
    return json.loads(p.stdout)


if "--megatron-ci" in sys.argv:
    ci = json.load(open(os.path.join(corpus_dir, "megatron_ci.json")))
    errors = []
    print("%-78s %12s %12s %8s" % ("run (%s %s)" % (ci["repository"], ci["commit"][:10]), "measured MiB",
                                  "predicted MiB", "error"))
    for r in ci["runs"]:
        out = run(["analyze", "--json"] + r["args"])
        p = out["memory"]["stages"][-1]["peak"]["bytes"] / MIB
        m = r["max_allocated_bytes"] / MIB
        errors.append((p - m) / m)
        print("%-78s %12.1f %12.1f %+7.2f%%" % (r["name"][:78], m, p, 100 * errors[-1]))
    mag = sorted(abs(e) for e in errors)
    print("%d runs: median |error| %.2f %%, %d within 5 %%, %d within 10 %%, worst %+.1f %% / %+.1f %%"
          % (len(errors), 100 * mag[len(mag) // 2], sum(e <= 0.05 for e in mag), sum(e <= 0.10 for e in mag),
             100 * min(errors), 100 * max(errors)))
    sys.exit(0)

rows = []
for r in corpus["runs"]:
    if "log" in r:
        out = run(["calibrate", "--json", "--measured", os.path.join(corpus_dir, r["log"])])
        for rank in out["logs"][0]["ranks"]:
            rows.append((r["name"], "rank %d (pp %d)" % (rank["rank"], rank["pp_rank"]),
                         rank["measured_max_allocated_mib"], rank["predicted_peak_mib"], r["system"]))
        continue
    out = run(["analyze", "--json"] + r["args"])
    stages = out["memory"]["stages"]
    predicted = [s["peak"]["bytes"] / MIB for s in stages]
    if "measured_max_allocated_mib" in r:
        for s, m in enumerate(r["measured_max_allocated_mib"]):
            rows.append((r["name"], "stage %d" % s, m, predicted[s], r["system"]))
    else:
        m = r["measured_max_allocated_gib_of_largest_stage"] * 1024
        rows.append((r["name"], "largest stage", m, max(predicted), r["system"]))

if "--json" in sys.argv:
    print(json.dumps([{"run": a, "where": b, "measured_mib": m, "predicted_mib": p, "error": (p - m) / m,
                       "system": s} for a, b, m, p, s in rows], indent=1))
    sys.exit(0)
width = max(len(a) for a, *_ in rows)
print("%-*s  %-16s %14s %14s %8s" % (width, "run", "where", "measured MiB", "predicted MiB", "error"))
worst, optimistic = 0.0, 0.0
for a, b, m, p, s in rows:
    e = (p - m) / m
    worst = max(worst, abs(e))
    optimistic = min(optimistic, e)
    print("%-*s  %-16s %14.1f %14.1f %+7.2f%%" % (width, a, b, m, p, 100 * e))
t = corpus["targets"]
print("%d rows from %d runs; largest |error| %.2f %% (target %.0f %%), most optimistic %+.2f %% (target -%.0f %%)"
      % (len(rows), len(corpus["runs"]), 100 * worst, 100 * t["max_abs_error"], 100 * optimistic,
         100 * t["max_optimistic_error"]))
