#!/usr/bin/env python3
"""Benchmark: NeMo 2's performance scripts (analyzer/data/nemo2/perf_scripts.json: scripts/performance/llm/*.py at
their recommended configurations) priced by name, beside the published runs of the time corpus
(tests/data/time_corpus) that ran the same model on the same GPU, layout, batch and precision.

For every configuration of every script (each fp8 recipe of an FP8 row) it runs `preflight estimate --nemo-config
nemo2-perf:SCRIPT -- -g GPU -c DTYPE [-fr R] [-f TASK] -ng N`; a corpus run pairs with it when its estimate
describes the same run: system, parallelism line (sequence, micro / global batch, tp / cp / ep / pp / dp, world),
parameter count, precision (fp8 format and recipe) and recompute.  Prints each pair — measured, the script priced,
the corpus command line priced — and the counts: configurations priced / refused, pairs within 5 % / 10 %, and
pairs where the script and the command line price the same within 0.1 %.

usage: bench/nemo2_perf_scripts_vs_corpus.py [BUILD_DIR]
"""
import glob
import json
import os
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build")
binary = os.path.join(build, "cli", "preflight")
PRESET = {"h100": "h100-sxm", "b200": "b200", "gb200": "gb200"}


def estimate(args):
    p = subprocess.run([binary, "estimate", "--json"] + args, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        return None, (p.stderr.strip().splitlines() or ["?"])[-1]
    j = json.loads(p.stdout)
    s = j["summary"]
    key = (s["system"], s["parallelism"], j["compute_result"]["param_numel_info"]["all"], s["fp8"],
           s["fp8_recipe"] if s["fp8"] else "", s["recompute"])
    return (key, s["iteration_ms"]), None


def main():
    if not os.path.exists(binary):
        sys.exit("build first: %s is needed" % binary)
    table = json.load(open(os.path.join(root, "analyzer", "data", "nemo2", "perf_scripts.json")))["scripts"]
    scripts = {}
    refused = 0
    for name, entry in sorted(table.items()):
        if "unsupported" in entry:
            continue
        for c in entry["configs"]:
            cli = ["-g", c["gpu"], "-c", c["dtype"], "-ng", str(c["num_gpus"])]
            if c["fp8_recipe"]:
                cli += ["-fr", c["fp8_recipe"]]
            if entry["csv_task"] is None:
                cli += ["-f", c["csv_task"]]
            r, err = estimate(["--nemo-config", "nemo2-perf:" + name, "--"] + cli)
            if r is None:
                refused += 1
                continue
            scripts.setdefault(r[0], []).append((name + " " + " ".join(cli), r[1]))
    configs = sum(len(v) for v in scripts.values())
    pairs = []
    for corpus in sorted(glob.glob(os.path.join(root, "tests", "data", "time_corpus", "*.json"))):
        data = json.load(open(corpus))
        if data["system"] not in PRESET.values():
            continue
        for run in data["runs"]:
            if "args" not in run:
                continue
            r, _ = estimate(["--system", data["system"], "--"] + run["args"])
            if r is None or r[0] not in scripts:
                continue
            for script, ms in scripts[r[0]]:
                pairs.append((run["name"], run["measured_iteration_ms"], ms, r[1], script))
    print("%-80s %10s %10s %7s %10s %7s" % ("published run / script", "measured", "script", "error", "cmdline",
                                            "error"))
    for name, measured, script_ms, line_ms, script in pairs:
        print("%-80s %10.1f %10.1f %+6.1f%% %10.1f %+6.1f%%" % (name[:80], measured, script_ms,
                                                             100 * (script_ms / measured - 1), line_ms,
                                                             100 * (line_ms / measured - 1)))
        print("  %s" % script)
    within = lambda k: sum(abs(p[2] / p[1] - 1) <= k for p in pairs)
    same = sum(abs(p[2] / p[3] - 1) <= 0.001 for p in pairs)
    print("\n== %d configurations priced, %d refused; %d pairs with published runs: within 5 %%: %d, within 10 %%: %d;"
          " priced as the run's command line within 0.1 %%: %d" % (configs, refused, len(pairs), within(0.05),
                                                                  within(0.10), same))


if __name__ == "__main__":
    main()
