#!/usr/bin/env python3
"""Writes analyzer/data/fidelity/time_errors.json: how far `preflight estimate` was off on the published
measured iteration times of tests/data/time_corpus, per system preset and run class ("moe mxfp8": dense or MoE, prefixed
"hybrid " for a hybrid Mamba model, "gdn " with gated delta net layers, "lora " for LoRA fine-tuning, and the GEMMs' precision), each run priced on the system it ran on as given (`preflight calibrate --fit-time`'s
error before the fit).  The binary embeds the file and prints the range of an estimate's class with it
(analyzer/include/preflight/analyzer/cost/fidelity.hpp).  Re-run after a change of the cost model, the presets or
the corpora; tests/cost/test_time_fit.cpp checks that the embedded file is this script's output.

usage: scripts/gen_time_fidelity.py [--build DIR | --preflight BINARY] [--out FILE]
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refit_presets import corpus_dir, priced_runs, root  # noqa: E402  (the same pricing of a corpus file)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.environ.get("PREFLIGHT_BUILD_DIR", os.path.join(root, "build")))
    ap.add_argument("--preflight", help="the preflight binary (default: BUILD/cli/preflight)")
    ap.add_argument("--out", default=os.path.join(root, "analyzer", "data", "fidelity", "time_errors.json"))
    a = ap.parse_args()
    binary = a.preflight or os.path.join(a.build, "cli", "preflight")
    if not os.access(binary, os.X_OK):
        raise SystemExit("build first: %s is needed" % binary)
    systems = {}
    for corpus in sorted(f for f in os.listdir(corpus_dir) if f.endswith(".json")):
        system = json.load(open(os.path.join(corpus_dir, corpus)))["system"]
        for r in priced_runs(binary, system, corpus):
            c = systems.setdefault(system, {}).setdefault(r["run_class"], {"errors": [], "corpora": []})
            c["errors"].append(r["error_before"])
            if corpus[:-5] not in c["corpora"]:
                c["corpora"].append(corpus[:-5])
    table = {
        "format": "preflight-time-fidelity",
        "version": 1,
        "source": "scripts/gen_time_fidelity.py: every run of tests/data/time_corpus priced on the system it ran "
                  "on, as given (no fit); signed relative errors (predicted - measured) / measured",
        "systems": {s: {cls: {"runs": len(c["errors"]), "min_error": round(min(c["errors"]), 4),
                              "max_error": round(max(c["errors"]), 4),
                              "median_error": round(statistics.median(c["errors"]), 4),
                              "within_5pct": sum(abs(e) <= 0.05 for e in c["errors"]), "corpora": c["corpora"]}
                        for cls, c in sorted(classes.items())}
                    for s, classes in sorted(systems.items())},
    }
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(table, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote %s: %d runs on %d systems" % (a.out, sum(c["runs"] for s in table["systems"].values()
                                                          for c in s.values()), len(systems)))


if __name__ == "__main__":
    sys.exit(main())
