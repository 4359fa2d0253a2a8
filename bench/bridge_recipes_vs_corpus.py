#!/usr/bin/env python3
"""Benchmark: Megatron-Bridge's performance recipes priced by name beside the time corpus's published runs.

Every flat performance recipe of analyzer/data/bridge/recipes.json ("perf_recipes") is priced with
`preflight estimate --bridge-config perf:NAME` (on the GPU its name gives, offline: recipes whose Hugging Face
model or tokenizer is not cached are counted, not priced); every run of tests/data/time_corpus is priced from
its command line on the corpus's system.  A recipe and a run are paired when system, layout (the estimate's
parallelism string: sequence, micro / global batch, tp / cp / ep / pp / dp, virtual stages) and precision agree.
Printed: each pair's measured time and both errors, then how many pairs the recipe prices as the run's command
line (within 0.1 %).  A pair that disagrees is a reading of Bridge's configuration that differs from the run's
command line — or a run of an earlier release, whose recipe has since changed (the corpus row names its release).

usage: bench/bridge_recipes_vs_corpus.py [BUILD_DIR]
"""
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def key(summary):
    fp8 = summary.get("fp8")
    precision = summary.get("fp8_recipe") if fp8 not in (None, "none", False) else \
        ("fp4" if summary.get("fp4") else "16-bit")
    return summary["system"], summary["parallelism"], precision


def estimate(binary, args, env):
    p = subprocess.run([binary, "estimate", "--json"] + args, capture_output=True, text=True, env=env)
    if p.returncode not in (0, 1):  # 1: priced, does not fit
        return None, (p.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(p.stdout)["summary"], None


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PREFLIGHT_BUILD_DIR", os.path.join(ROOT, "build"))
    binary = os.path.join(build, "cli", "preflight")
    if not os.access(binary, os.X_OK):
        sys.exit("build first: %s is needed" % binary)
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    table = json.load(open(os.path.join(ROOT, "analyzer", "data", "bridge", "recipes.json")))
    recipes, unpriced = {}, {}
    for name in sorted(table["perf_recipes"]):
        s, err = estimate(binary, ["--bridge-config", "perf:" + name], env)
        if s is None:
            reason = "need their Hugging Face files" if "HF_HUB_OFFLINE" in err or "Hugging Face" in err else \
                "need --system" if "no preset" in err else "refused"
            unpriced[reason] = unpriced.get(reason, 0) + 1
            continue
        recipes.setdefault(key(s), []).append((name, s["iteration_ms"]))
    pairs = []
    for corpus in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "time_corpus", "*.json"))):
        data = json.load(open(corpus))
        for run in data["runs"]:
            if "args" not in run:
                continue
            s, _ = estimate(binary, ["--system", data["system"], "--"] + run["args"], env)
            if s is None:
                continue
            for name, ms in recipes.get(key(s), []):
                model = name.split("_pretrain_")[0].split("_sft_")[0].split("_peft_")[0]
                if not re.sub(r"[^a-z0-9]", "", run["name"].lower()).count(re.sub(r"[^a-z0-9]", "", model)):
                    continue  # (the same layout of another model)
                pairs.append((os.path.basename(corpus), run["name"], run["measured_iteration_ms"],
                              s["iteration_ms"], name, ms))
    print("%-30s %-66s %10s %8s %8s  %s" % ("corpus", "run", "measured", "row", "recipe", "recipe name"))
    for corpus, run, measured, row_ms, name, ms in pairs:
        print("%-30s %-66s %10.1f %+7.1f%% %+7.1f%%  %s" % (corpus[:30], run[:66], measured,
                                                         100 * (row_ms / measured - 1), 100 * (ms / measured - 1),
                                                         name))
    same = sum(abs(ms / row_ms - 1) <= 0.001 for _, _, _, row_ms, _, ms in pairs)
    priced = sum(len(v) for v in recipes.values())
    print("\n== %d performance recipes priced offline (%s); %d pairs with a published run of the same system, "
          "layout and precision: %d priced as the run's command line (within 0.1 %%)" % (
              priced, ", ".join("%d %s" % (n, r) for r, n in sorted(unpriced.items())), len(pairs), same))


if __name__ == "__main__":
    main()
