#!/usr/bin/env python3
"""Benchmark: does `preflight search` pick the layouts NVIDIA published?

For every run of the time corpora (tests/data/time_corpus/*.json, Megatron command lines of published
measurements), `preflight search` is given the run's own arguments as its base (`-- <args>`: model, precision,
kernels, batch, sequence, world size) and searches tp, pp, cp, vpp, ep and recompute over a standard space.
Printed per run: where the published layout ranks among the layouts that fit (with its own recompute flags,
as launched, when it recomputes: `--recompute ...,launch`), its priced iteration time next to the measured
one, and the best layout with its priced time.  A published layout ranked first, or priced within a few % of
the best, says the search would have led a user to the layout NVIDIA tuned by hand.  Rank '-': the launch as
launched is over the memory limit by the search's rule (its peak with the allocator's reserve), priced all the same.

usage: bench/search_vs_published.py [BUILD_DIR] [CORPUS.json ...]
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def flag(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def published_layout(args):
    tp = int(flag(args, "--tensor-model-parallel-size", "1"))
    pp = int(flag(args, "--pipeline-model-parallel-size", "1"))
    cp = int(flag(args, "--context-parallel-size", "1"))
    ep = int(flag(args, "--expert-model-parallel-size", "1"))
    vpp = 1
    if "--virtual-pipeline-model-parallel-size" in args:
        vpp = int(flag(args, "--virtual-pipeline-model-parallel-size"))
    elif "--num-layers-per-virtual-pipeline-stage" in args:
        layers = int(flag(args, "--num-layers", "0"))
        slots = layers + ("--account-for-embedding-in-pipeline-split" in args) + (
            "--account-for-loss-in-pipeline-split" in args)
        vpp = slots // (pp * int(flag(args, "--num-layers-per-virtual-pipeline-stage")))
    return tp, pp, cp, ep, vpp


def main():
    argv = sys.argv[1:]
    build = argv.pop(0) if argv and os.path.isdir(argv[0]) else os.path.join(ROOT, "build")
    binary = os.path.join(build, "cli", "preflight")
    corpora = argv or sorted(
        os.path.join(ROOT, "tests", "data", "time_corpus", f)
        for f in os.listdir(os.path.join(ROOT, "tests", "data", "time_corpus")) if f.endswith(".json"))
    first = total = 0
    within = {3: 0, 5: 0, 10: 0}
    for corpus in corpora:
        data = json.load(open(corpus))
        for run in data["runs"]:
            args = run.get("args")
            if not args:
                continue
            tp, pp, cp, ep, vpp = published_layout(args)
            moe = "--num-experts" in args

            def sizes(standard, published):  # the standard list and the published size
                return ",".join(str(v) for v in sorted(set(standard) | {published}))

            space = ["--tp", sizes([1, 2, 4, 8], tp), "--pp", sizes([1, 2, 4, 8, 16], pp),
                     "--cp", sizes([1, 2] if moe else [1, 2, 4, 8, 16, 32], cp),
                     "--vpp", sizes([1, 2, 3, 4, 5, 6, 8, 10, 12, 20], vpp),
                     "--recompute", "none,full_block,selective" + (
                         ",launch" if {"--recompute-granularity", "--recompute-activations"} & set(args) else "")]
            if moe:
                space += ["--ep", sizes([1, 2, 4, 8, 16, 32, 64], ep)]
            p = subprocess.run([binary, "search", "--system", data["system"], *space, "--mem-margin-gib", "0",
                                "--quiet", "--json", "--top", "100000", "--threads", "2", "--", *args],
                               capture_output=True, text=True)
            name = run["name"][:70]
            try:
                top = json.loads(p.stdout).get("top", [])
            except json.JSONDecodeError:
                print(f"{name:70s}  search failed: {p.stderr.strip().splitlines()[-1:]}")
                continue
            # The search ranks the launch's own layout itself (launch_layout); the table's rows give its time.
            own = json.loads(p.stdout).get("launch_layout") or {}
            rank, mine = own.get("rank"), None
            if own.get("iteration_ms"):  # priced even when it does not fit (rank '-': over the limit as launched)
                mine = {"iteration_ms": own["iteration_ms"]}
            total += 1
            if not top:
                print(f"{name:70s}  no layout fits")
                continue
            best = top[0]
            gap = (mine["iteration_ms"] / best["iteration_ms"] - 1) * 100 if mine else None
            first += rank == 1
            for k in within:
                within[k] += rank is not None and gap is not None and gap <= k
            desc = f"tp{best['tp']} pp{best['pp']} cp{best['cp']} ep{best['ep']} vpp{best['vpp']} {best['recompute']}"
            print(f"{name:70s}  published rank {rank or '-':>4}  priced {mine['iteration_ms']/1e3 if mine else float('nan'):7.2f} s"
                  f" (measured {run['measured_iteration_ms']/1e3:7.2f} s, {'%+.1f' % gap if gap is not None else '  - '} % over the best)"
                  f"  best {desc} {best['iteration_ms']/1e3:.2f} s")
    print(f"== {total} runs: the published layout ranked first in {first}; priced within 3 / 5 / 10 % of the best "
          f"in {within[3]} / {within[5]} / {within[10]}")


if __name__ == "__main__":
    main()
