#!/usr/bin/python3
"""Accuracy of preflight's memory predictions against real CPU runs, before and after fitting.

For each configuration of the matrix below, runs examples/torch_cpu_gpt/pretrain_gpt_cpu.py under torchrun
with libpreflight_hook.so preloaded, predicts it with `preflight analyze --json` from the same arguments,
and compares with `preflight calibrate`.  Then fits coefficients on the training configurations
(`calibrate --fit`) and checks the held-out ones with `analyze --calibration`.  Prints one table row per
configuration: the largest |error| over ranks of weights, gradients, optimizer states, activations per
micro batch and per transformer layer, and the peak without and with the fitted coefficients.

    bench/calibration_matrix.py [--build build] [--out build/calibration_matrix] [--quick] [--json FILE]

--quick runs a smaller matrix (1–2 processes per run, 2 iterations) for CI.  Exit status 1 when a target
of issue 8 is missed: weights/gradients/optimizer within 0.5 %, per-layer activations within 2 % (fp32),
unfitted peak within 5 %, fitted peak within 3 % on every held-out configuration; 2 when a run fails (a
torchrun that does not exit 0, or a traces folder without one rank*.pftrace per process).

Each torchrun gets a port that is free when it starts (--port P: P, P+1, … instead); when torchrun still
cannot bind it (errno 98: another program took it in between) the run is repeated on a new port, at most 3
times.  --monitor_interval 0.2: torchrun's agent otherwise polls its workers every 5 s, so every run would
last a multiple of 5 s.
"""

import argparse
import glob
import json
import os
import shutil
import socket
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "torch_cpu_gpt", "pretrain_gpt_cpu.py")

BASE = dict(layers=4, hidden=64, heads=4, seq=64, vocab=511, mb=2, gb=None, tp=1, pp=1, np=1, extra=[])

# name, role, overrides.  Varying tp, pp, dp, micro batch, sequence length, recompute, precision.
FULL = [
    ("tp2-mb2", "train", dict(np=2, tp=2, mb=2, gb=4)),
    ("pp2-mb1", "train", dict(np=2, pp=2, mb=1, gb=4)),
    ("tp2pp2-mb2", "train", dict(np=4, tp=2, pp=2, mb=2, gb=8)),
    ("dp2-mb4-s32-sel", "train", dict(np=2, mb=4, gb=8, seq=32, extra=["--recompute-granularity", "selective"])),
    ("tp2-s128-full", "train", dict(np=2, tp=2, mb=1, gb=2, seq=128,
                                    extra=["--recompute-granularity", "full", "--recompute-method", "uniform",
                                           "--recompute-num-layers", "2"])),
    ("pp2dp2-mb2", "held-out", dict(np=4, pp=2, mb=2, gb=8)),
    ("tp2-s128-sel", "held-out", dict(np=2, tp=2, mb=2, gb=4, seq=128,
                                      extra=["--recompute-granularity", "selective"])),
    ("tp2pp2-s96-block", "held-out", dict(np=4, tp=2, pp=2, mb=1, gb=8, seq=96,
                                          extra=["--recompute-granularity", "full", "--recompute-method", "block",
                                                 "--recompute-num-layers", "1"])),
    ("mb4-bf16-swiglu", "held-out", dict(np=1, mb=4, gb=8, extra=["--bf16", "--swiglu"])),
    ("pp2-s32-gqa-untied", "held-out", dict(np=2, pp=2, mb=2, gb=8, seq=32,
                                            extra=["--group-query-attention", "--num-query-groups", "2",
                                                   "--untie-embeddings-and-output-weights"])),
]

QUICK = [
    ("q-tp2-mb2", "train", dict(np=2, tp=2, mb=2, gb=4, layers=2)),
    ("q-pp2-mb1", "train", dict(np=2, pp=2, mb=1, gb=4, layers=2)),
    ("q-mb4-s32-sel", "train", dict(np=1, mb=4, gb=4, seq=32, layers=2,
                                    extra=["--recompute-granularity", "selective"])),
    ("q-dp2-s96-full", "train", dict(np=2, mb=1, gb=2, seq=96, layers=2,
                                     extra=["--recompute-granularity", "full", "--recompute-method", "uniform",
                                            "--recompute-num-layers", "1"])),
    ("q-pp2-mb2-untied", "held-out", dict(np=2, pp=2, mb=2, gb=4, layers=2,
                                          extra=["--untie-embeddings-and-output-weights"])),
    ("q-tp2-s128-sel", "held-out", dict(np=2, tp=2, mb=1, gb=2, seq=128, layers=2,
                                        extra=["--recompute-granularity", "selective"])),
    ("q-dp2-mb2-gqa", "held-out", dict(np=2, mb=2, gb=4, layers=2,
                                       extra=["--group-query-attention", "--num-query-groups", "2"])),
    ("q-mb2-bf16-swiglu", "held-out", dict(np=1, mb=2, gb=2, layers=2, extra=["--bf16", "--swiglu"])),
]


def model_args(c, iters):
    a = ["--num-layers", str(c["layers"]), "--hidden-size", str(c["hidden"]), "--num-attention-heads",
         str(c["heads"]), "--seq-length", str(c["seq"]), "--max-position-embeddings", str(c["seq"]),
         "--transformer-impl", "torch_cpu", "--attention-backend", "unfused",
         "--micro-batch-size", str(c["mb"]), "--global-batch-size", str(c["gb"] or c["mb"]),
         "--tensor-model-parallel-size", str(c["tp"]), "--pipeline-model-parallel-size", str(c["pp"]),
         "--tokenizer-type", "NullTokenizer", "--vocab-size", str(c["vocab"]), "--train-iters", str(iters),
         "--lr", "3e-3", "--seed", "1234", "--log-interval", "1"]
    return a + list(c["extra"])


def run(cmd, env=None, log=None, ok=(0, 1)):
    """Runs cmd; exit statuses outside `ok` end the matrix (preflight exits 1 for "targets missed")."""
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if log:
        with open(log, "w") as f:
            f.write(r.stdout)
    if r.returncode not in ok:
        sys.stderr.write(r.stdout[-4000:])
        sys.stderr.write("failed (exit %d)%s: %s\n" % (r.returncode, ", log " + log if log else "", " ".join(cmd)))
        raise SystemExit(2)
    return r.stdout


def free_port():
    """A TCP port nothing listens on right now (the kernel's choice for a bind to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(nproc, script_args, env, log, port=None, tries=3):
    """torchrun of the example; it must exit 0.  A port taken between free_port() and torchrun's bind (an
    external cause: another program on the machine) is the one failure repeated, on a new port."""
    for attempt in range(tries):
        p = port if port else free_port()
        cmd = ["torchrun", "--redirects", "2", "--tee", "2", "--monitor_interval", "0.2", "--nproc_per_node",
               str(nproc), "--master_addr", "127.0.0.1", "--master_port", str(p), EXAMPLE] + script_args
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        with open(log, "w") as f:
            f.write(r.stdout)
        if r.returncode == 0:
            return
        if "errno: 98" not in r.stdout or port or attempt + 1 == tries:
            sys.stderr.write(r.stdout[-4000:])
            sys.stderr.write("torchrun failed (exit %d), log %s: %s\n" % (r.returncode, log, " ".join(cmd)))
            raise SystemExit(2)
        sys.stderr.write("  port %d taken (errno 98) before torchrun bound it; again on another port\n" % p)
        traces = env["PREFLIGHT_TRACE_DIR"]
        shutil.rmtree(traces, ignore_errors=True)


def check_traces(traces, nproc):
    """One rank<R>.pid<P>.pftrace per training process (the agent's pid<P>.pftrace has no rank)."""
    files = glob.glob(os.path.join(traces, "rank*.pftrace"))
    ranks = sorted(int(os.path.basename(f)[4:].split(".")[0]) for f in files)
    if ranks != list(range(nproc)):
        raise SystemExit("%s: expected the traces of ranks 0..%d, found ranks %s (files: %s)" % (
            traces, nproc - 1, ranks, ", ".join(sorted(os.listdir(traces))) if os.path.isdir(traces) else "none"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("PREFLIGHT_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--iters", type=int, default=None)
    ap.add_argument("--port", type=int, default=0, help="first master port (default: a free port per run)")
    ap.add_argument("--json", default=None, help="also write the table as JSON")
    a = ap.parse_args()
    preflight = os.path.join(a.build, "cli", "preflight")
    hook = os.path.join(a.build, "lib", "libpreflight_hook.so")
    glue = os.path.join(a.build, "lib", "python")
    for f in (preflight, hook):
        if not os.path.exists(f):
            raise SystemExit("%s not found: build first (scripts/build.sh)" % f)
    out = a.out or os.path.join(a.build, "calibration_matrix" + ("_quick" if a.quick else ""))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    matrix = QUICK if a.quick else FULL
    iters = a.iters or (2 if a.quick else 3)

    runs = []
    for i, (name, role, over) in enumerate(matrix):
        c = dict(BASE)
        c.update(over)
        d = os.path.join(out, name)
        os.makedirs(d)
        margs = model_args(c, iters)
        predicted = os.path.join(d, "predicted.json")
        with open(predicted, "w") as f:
            f.write(run([preflight, "analyze", "--json", "--nproc_per_node", str(c["np"])] + margs))
        env = dict(os.environ)
        env.update(LD_PRELOAD=hook, PYTHONPATH=glue + os.pathsep + env.get("PYTHONPATH", ""),
                   PREFLIGHT_TRACE_DIR=os.path.join(d, "traces"), PREFLIGHT_TRACE_MIN_BYTES="4096",
                   OMP_NUM_THREADS="1")
        sys.stderr.write("[%d/%d] %s: %d process(es) …\n" % (i + 1, len(matrix), name, c["np"]))
        traces = os.path.join(d, "traces")
        torchrun(c["np"], margs, env, os.path.join(d, "train.log"), port=a.port + i if a.port else None)
        check_traces(traces, c["np"])
        runs.append(dict(name=name, role=role, dir=d, predicted=predicted, traces=traces,
                         precision="bf16" if "--bf16" in c["extra"] else "fp32"))

    def compare(r, calibration=None):
        cmd = [preflight, "calibrate", "--json", "--predicted", r["predicted"], "--measured", r["traces"]]
        if calibration:
            cmd += ["--calibration", calibration]
        return json.loads(run(cmd))["runs"][0]["summary"]

    train = [r for r in runs if r["role"] == "train"]
    cal = os.path.join(out, "calibration.json")
    cmd = [preflight, "calibrate", "--json", "--fit", "-o", cal]
    for r in train:
        cmd += ["--predicted", r["predicted"], "--measured", r["traces"]]
    fit = json.loads(run(cmd))["calibration"]

    rows, ok = [], True
    for r in runs:
        s0 = compare(r)
        s1 = compare(r, cal)
        row = dict(config=r["name"], role=r["role"], precision=r["precision"],
                   weights=s0["max_abs_error_weights"], gradients=s0["max_abs_error_gradients"],
                   optimizer=s0["max_abs_error_optimizer"], activations=s0["max_abs_error_activations"],
                   per_layer=s0["max_abs_error_per_layer"], peak=s0["max_abs_error_peak"],
                   peak_fitted=s1["max_abs_error_peak"])
        rows.append(row)
        if max(row["weights"], row["gradients"], row["optimizer"]) > 0.005:
            ok = False
        if row["precision"] == "fp32" and row["per_layer"] > 0.02:
            ok = False
        if row["peak"] > 0.05:
            ok = False
        if r["role"] == "held-out" and row["peak_fitted"] > 0.03:
            ok = False

    head = "%-20s %-8s %-5s %8s %8s %8s %8s %8s %8s %8s" % (
        "config", "role", "prec", "weights", "grads", "optim", "act/mb", "layer", "peak", "peak fit")
    print(head)
    print("-" * len(head))
    for r in rows:
        print("%-20s %-8s %-5s %7.2f%% %7.2f%% %7.2f%% %7.2f%% %7.2f%% %7.2f%% %7.2f%%" % (
            r["config"], r["role"], r["precision"], 100 * r["weights"], 100 * r["gradients"],
            100 * r["optimizer"], 100 * r["activations"], 100 * r["per_layer"], 100 * r["peak"],
            100 * r["peak_fitted"]))
    print("(largest |error| over the ranks of each run; fitted on the %d training runs: transient scale %.4f, "
          "overhead %d bytes, %d module kinds)" % (len(train), fit["peak"]["transient_scale"],
                                                   fit["peak"]["overhead_bytes"], len(fit["modules"])))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(rows=rows, calibration=fit), f, indent=2)
    print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
