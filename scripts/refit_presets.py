#!/usr/bin/env python3
"""Refits the system presets' fitted constants (scripts/gen_system_presets.py, `fit(...)`) on the published
time corpora (tests/data/time_corpus), in order, each by least squares on the relative errors of its own rows;
then prints every corpus's largest |error| with the current and the refitted constants side by side, so that a
change to the cost model can be judged after the constants it invalidates are refitted, not before.

Each step is one constant, the corpora (and rows, a regular expression on the run name) it is fitted on; the
later steps are fitted with the earlier steps' new values.  The script does not edit the generator: it prints
the `--set` arguments that reproduce the refitted presets, and the constants (with the numbers their comments
cite) are updated by hand.

Not refitted here: the two-factor FITTED scales (A100, Ascend 910B, B200 on SimuMax's file) and Hopper's compute
scale (fitted on the first six FP8 rows of h100_nemo_llama3.json) come from `preflight calibrate --fit-time`; the
MXFP8 scale from the ratios of NeMo's FP8 / MXFP8 pairs (analyzer/data/systems/README.md).

usage: scripts/refit_presets.py [--build DIR | --preflight BINARY] [--steps NAME,...] [--set NAME=VALUE ...]
                                [--independent] [--no-summary]
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
corpus_dir = os.path.join(root, "tests", "data", "time_corpus")

# (constant, corpora, rows[, "pairs"]): in dependency order — a transferred constant after the one it is
# transferred from.  A "pairs" step fits the ratios of the rows that differ only in scale (the same name but for
# "<n> GPUs" and the global batch): the weak-scaling slowdown, independent of every other constant.
STEPS = [
    # The straggler factor of the NVIDIA presets (SimuMax's formula over min(nodes, dp, edp)): NVIDIA's DGX Cloud
    # recipes run each layout at a small and a large scale (8 ... 576 and 128 ... 2304 GPUs); their BF16 pairs.
    ("nvidia_straggler", ["h100_dgxc_nemo.json", "gb200_dgxc_nemo2504.json"], r"\bbf16\b", "pairs"),
    # FP8 (per-tensor) GEMMs on Blackwell: NeMo's Llama-3-8B and 3.1-405B FP8-CS rows on B200.
    ("b200_fp8", ["b200_nemo_llama3_8b.json", "b200_nemo_llama31.json"], None),
    # The host time of a MoE layer's routed experts: NeMo's MXFP8 MoE rows on B200 (the FP8 grouped GEMMs at
    # their published rate).
    ("moe_host_us", ["b200_nemo_moe.json", "b200_nemo_qwen3_235b.json"], r"^(?!.*nemotron).*\bmxfp8\b"),
    # The Grace hosts' factor on it: NeMo's MXFP8 MoE rows on GB200 / GB300.
    ("grace_host", ["gb200_nemo_moe.json", "gb200_nemo_qwen3_235b.json", "gb200_nemo_deepseek.json",
                    "gb300_nemo_moe.json", "gb300_nemo_qwen3_235b.json", "gb300_nemo_deepseek.json"], r"\bmxfp8\b"),
    # MXFP8 grouped GEMMs of experts with a dimension not a multiple of 128: NeMo's GPT-OSS-120B MXFP8 rows.
    ("mxfp8_unaligned_grouped", ["b300_nemo_moe.json", "gb200_nemo_full_iteration.json",
                                 "gb300_nemo_full_iteration.json"], r"gpt-oss.*mxfp8"),
    # BF16 grouped GEMMs at shapes SimuMax's B200 file did not measure: NeMo's GPT-OSS-120B BF16 rows on B200.
    ("blackwell_unmeasured_grouped", ["b200_nemo_moe.json"], r"gpt-oss"),
    # GB300's dense GEMMs: NeMo's Llama-3 rows on GB300.
    ("gb300_dense_gemm", ["gb300_nemo_llama.json"], None),
    # NVFP4 GEMMs over FP8: NeMo's NVFP4 rows, each Blackwell generation on its own.
    ("gb200_nvfp4", ["gb200_nemo_nvfp4.json"], None),
    ("gb300_nvfp4", ["gb300_nemo_nvfp4.json"], None),
    # Hopper's FP8 GEMMs (the compute scale stays as fitted on the first six of those rows).
    ("hopper_fp8", ["h100_nemo_llama3.json"], None),
    # Hopper's BF16 dense GEMMs: the DGX Cloud recipes' BF16 rows at each model's smallest scale (the rest held out).
    ("hopper_bf16_gemm", ["h100_dgxc_nemo.json"],
     r"bf16 .*(cp2 8 GPUs|vp5 64 GPUs|576 GPUs|mbs4 16 GPUs|vp12 128 GPUs)"),
    # Hopper's BF16 grouped GEMMs: NeMo's GPT-OSS-120B BF16 rows on H100.
    ("hopper_grouped", ["h100_nemo_moe.json"], r"gpt-oss"),
    # Hopper's FP8 grouped GEMMs: NeMo's FP8 MoE rows on H100.
    ("hopper_grouped_fp8", ["h100_nemo_moe.json"], r"\bfp8\b"),
    # MI300X's compute: its one published row (exact by construction).
    ("mi300x_compute", ["mi300x_rocm_megatron.json"], None),
]


def generate(out, values):
    args = [sys.executable, os.path.join(root, "scripts", "gen_system_presets.py"), "--out", out]
    for k, v in sorted(values.items()):
        args += ["--set", "%s=%r" % (k, v)]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)


def priced_runs(binary, system, corpus):
    """The runs of a corpus file as `preflight calibrate --fit-time --json` prices them on `system` (a preset
    name or a system file): name, run_class, measured_ms, predicted_ms, error_before, …"""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([binary, "calibrate", "--fit-time", "--json", "--system", system, "--runs",
                              os.path.join(corpus_dir, corpus), "-o", os.path.join(tmp, "fitted.json")],
                             capture_output=True, text=True)
    if out.returncode not in (0, 1):
        raise SystemExit("%s: preflight calibrate failed:\n%s" % (corpus, out.stderr))
    return json.loads(out.stdout)["runs"]


def errors(binary, presets, corpus, rows=None, times=False):
    """{run name: relative error} (or, with `times`, (measured, predicted) ms) of a corpus priced on the
    presets in `presets`."""
    system = json.load(open(os.path.join(corpus_dir, corpus)))["system"]
    return {r["run"]: ((r["measured_ms"], r["predicted_ms"]) if times else r["error_before"])
            for r in priced_runs(binary, os.path.join(presets, system + ".json"), corpus)
            if rows is None or re.search(rows, r["run"])}


def scale_pairs(times):
    """{layout: log(measured ratio) - log(predicted ratio)} of the smallest and largest scale of each layout
    that ran at several ("<n> GPUs" in the name; the global batch grows with it)."""
    groups = {}
    for name, t in times.items():
        m = re.search(r"(\d+) GPUs", name)
        if not m:
            continue
        key = re.sub(r"gbs\d+", "gbs", re.sub(r"\d+ GPUs", "GPUs", name))
        groups.setdefault(key, []).append((int(m.group(1)), t))
    out = {}
    for key, v in groups.items():
        if len(v) < 2:
            continue
        v.sort(key=lambda x: x[0])
        (_, (m0, p0)), (_, (m1, p1)) = v[0], v[-1]
        out[key] = math.log(m1 / m0) - math.log(p1 / p0)
    return out


def step_errors(binary, values, corpora, rows, kind="rows"):
    with tempfile.TemporaryDirectory() as presets:
        generate(presets, values)
        errs = {}
        for c in corpora:
            if kind == "pairs":
                errs.update(scale_pairs(errors(binary, presets, c, rows, times=True)))
            else:
                errs.update(errors(binary, presets, c, rows))
    if not errs:
        raise SystemExit("no %s of %s matches %r" % ("pair" if kind == "pairs" else "row", ", ".join(corpora), rows))
    return errs


def golden(f, lo, hi, tol=1e-3):
    """Minimum of a unimodal f on [lo, hi] (in log space), to a relative tolerance."""
    a, b = math.log(lo), math.log(hi)
    g = (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(math.exp(c)), f(math.exp(d))
    while b - a > tol:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(math.exp(c))
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(math.exp(d))
    return math.exp((a + b) / 2)


def golden_linear(f, a, b, tol=1e-4):
    """Minimum of a unimodal f on [a, b]."""
    g = (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    while b - a > tol:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


def current_values():
    """The generator's fitted constants as written: parsed from its `fit("name", value)` calls."""
    text = open(os.path.join(root, "scripts", "gen_system_presets.py")).read()
    return {m.group(1): (None if m.group(2) == "None" else float(m.group(2)))
            for m in re.finditer(r'fit\("(\w+)", ([0-9.]+|None)\)', text)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.environ.get("PREFLIGHT_BUILD_DIR", os.path.join(root, "build")))
    ap.add_argument("--preflight", help="the preflight binary (default: BUILD/cli/preflight)")
    ap.add_argument("--steps", help="comma-separated constants to refit (default: every step, in order)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="start from this value of a constant (and keep it unless a step refits it)")
    ap.add_argument("--no-summary", action="store_true", help="skip the every-corpus comparison")
    ap.add_argument("--independent", action="store_true",
                    help="fit each constant with every other one as written (a check that each is at its own "
                         "optimum), instead of carrying each refitted value into the later steps")
    a = ap.parse_args()
    binary = a.preflight or os.path.join(a.build, "cli", "preflight")
    if not os.access(binary, os.X_OK):
        raise SystemExit("build first: %s is needed" % binary)
    start = current_values()
    values = {k: v for k, v in start.items() if v is not None}
    for kv in a.set:
        k, _, v = kv.partition("=")
        if k not in start:
            raise SystemExit("--set: no fitted constant named %s (known: %s)" % (k, ", ".join(sorted(start))))
        try:
            values[k] = float(v)
        except ValueError:
            raise SystemExit("--set %s: expected NAME=NUMBER" % kv)
    wanted = a.steps.split(",") if a.steps else [s[0] for s in STEPS]
    unknown = set(wanted) - {s[0] for s in STEPS}
    if unknown:
        raise SystemExit("--steps: no step named %s (steps: %s)" % (", ".join(sorted(unknown)),
                                                                  ", ".join(s[0] for s in STEPS)))
    given = dict(values)
    print("%-28s %9s %9s %8s %12s %12s" % ("constant", "was", "refitted", "rows", "|err| before", "|err| after"))
    for name, corpora, rows, *kind in STEPS:
        if name not in wanted:
            continue
        kind = kind[0] if kind else "rows"
        before = step_errors(binary, values, corpora, rows, kind)
        x0 = values.get(name, 1.0)

        def loss(x):
            return sum(e * e for e in step_errors(binary, dict(values, **{name: x}), corpora, rows, kind).values())
        if kind == "pairs":  # an additive coefficient from 0
            best = round(golden_linear(loss, 0.0, 0.2), 4)
        else:
            best = round(golden(loss, x0 / 2, x0 * 2), 4)
        after = step_errors(binary, dict(values, **{name: best}), corpora, rows, kind)
        if not a.independent:
            values[name] = best
        print("%-28s %9s %9.4f %8d %11.1f%% %11.1f%%" % (name, "-" if start.get(name) is None else start[name], best,
                                                          len(after), 100 * max(map(abs, before.values())),
                                                          100 * max(map(abs, after.values()))))
    if a.independent:
        print("\n(--independent: each constant refitted with every other one as written; nothing carried over)")
    else:
        print("\nreproduce: scripts/gen_system_presets.py " +
              " ".join("--set %s=%s" % (k, v) for k, v in sorted(values.items()) if given.get(k) != v))
    if a.no_summary or a.independent:
        return
    print("\n%-28s %-18s %10s %10s" % ("corpus", "system", "as given", "refitted"))
    with tempfile.TemporaryDirectory() as old, tempfile.TemporaryDirectory() as new:
        generate(old, given)
        generate(new, values)
        for corpus in sorted(f for f in os.listdir(corpus_dir) if f.endswith(".json")):
            system = json.load(open(os.path.join(corpus_dir, corpus)))["system"]
            if not os.path.exists(os.path.join(old, system + ".json")):
                continue  # a SimuMax system file, not a preset
            e0, e1 = errors(binary, old, corpus), errors(binary, new, corpus)
            print("%-28s %-18s %9.1f%% %9.1f%%" % (corpus[:-5], system, 100 * max(map(abs, e0.values())),
                                                   100 * max(map(abs, e1.values()))))


if __name__ == "__main__":
    main()
