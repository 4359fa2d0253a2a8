#!/usr/bin/env python3
"""Writes analyzer/data/nemo2/perf_scripts.json: NeMo 2's performance scripts (scripts/performance/llm/*.py, the
launchers of NVIDIA's published NeMo 2.0 performance tables), each as the task it builds on each GPU, precision and
GPU count of its recommended configurations, so that `python -m scripts.performance.llm.pretrain_llama3_70b -g h100
-c fp8 -ng 64 …` can be read as the run it submits.

A script's `override_recipe_configs(args, num_nodes, mbs, gbs, tp_size, …)` calls the recipe's
`pretrain_recipe(performance_mode=True)` (or `finetune_recipe(peft_scheme=…)`), edits it for the GPU (dispatchers,
pipeline layouts, tensor-parallel overlap buffers) and calls helpers.py's `set_primary_perf_configs`, which sets
the layout, batch, precision recipe, CUDA graphs, recompute and FSDP from the values get_user_configs() reads from
`recommended_model_configs/model_configs_<gpu>.csv` (the command line's -tp/-pp/…/-cg/-rl win).  This script
evaluates it statically with scripts/nemo2_recipes.py's interpreter (the script's own module and helpers.py
followed too) for every row of the CSV files that names the script's model, with the fp8 recipes the command line
may choose (-fr ds | cs | mxfp8 | ss, default ds), and stores each result as the dotted fields it changes of the
recipe's task in recipes.json (so the two tables agree).  preflight applies the command line's own sizes on top.

Usage: scripts/nemo2_perf_scripts.py NEMO_CHECKOUT [COMMIT] > analyzer/data/nemo2/perf_scripts.json
"""
import ast
import copy
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nemo2_recipes as nr  # noqa: E402

SCRIPTS = "scripts/performance/llm"
CONFIGS = "scripts/performance/recommended_model_configs"
GPUS = ("h100", "b200", "gb200")
FP8_RECIPES = ("ds", "cs", "mxfp8", "ss")
# argument_parser.py's defaults of the options the scripts read from `args` (the rest are None)
ARG_DEFAULTS = {"compute_dtype": "bf16", "fp8_recipe": "ds", "finetuning": "lora", "gpus_per_node": 8,
                "max_steps": 100, "use_hf_tokenizer": False, "tensorboard": False, "wandb": False,
                "use_te_op_fuser": False, "use_te_act_func": False, "act_func_fp8_input_store": False,
                "use_fsdp_double_buffer": None, "recompute_modules": None, "nccl_communicator_config_path": None,
                "enable_nsys": False, "enable_memory_profile": False, "keep_fsdp_fp8_transpose_cache": None}


class PerfModule(nr.Module):
    """A module of scripts/performance: relative imports (`from ..helpers import x`) resolved."""

    def __init__(self, root, dotted):
        super().__init__(root, dotted)
        package = dotted.split(".")[:-1] if not os.path.exists(
            os.path.join(root, dotted.replace(".", "/"), "__init__.py")) else dotted.split(".")
        for stmt in self.tree.body:
            if isinstance(stmt, ast.ImportFrom) and stmt.level:
                base = package[:len(package) - stmt.level + 1]
                prefix = ".".join(base + ([stmt.module] if stmt.module else []))
                for a in stmt.names:
                    self.names[a.asname or a.name] = ("import", prefix + "." + a.name)


class PerfInterp(nr.Interp):
    follow_prefixes = ("nemo.collections.llm.recipes", "scripts.performance")

    def module(self, dotted):
        if dotted not in self.modules:
            self.modules[dotted] = PerfModule(self.root, dotted)
        return self.modules[dotted]

    def ev(self, node, mod, env):
        if isinstance(node, ast.Tuple):  # hashable: dictionary keys such as DeepSeek-V3's (pp, vp) layouts
            v = [self.ev(e, mod, env) for e in node.elts]
            return nr.UNKNOWN if any(x is nr.UNKNOWN for x in v) else tuple(v)
        if isinstance(node, ast.ListComp) and len(node.generators) == 1 and not node.generators[0].ifs and \
                isinstance(node.generators[0].target, ast.Name):
            it = self.ev(node.generators[0].iter, mod, env)
            if not isinstance(it, (list, tuple)):
                return nr.UNKNOWN
            out = []
            for x in it:
                out.append(self.ev(node.elt, mod, dict(env, **{node.generators[0].target.id: x})))
            return nr.UNKNOWN if any(x is nr.UNKNOWN for x in out) else out
        return super().ev(node, mod, env)

    def call(self, node, mod, env):
        if isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple") and len(node.args) == 1:
            v = self.ev(node.args[0], mod, env)
            return list(v) if isinstance(v, (list, tuple)) else nr.UNKNOWN
        name = self.dotted_target(node.func, mod, env) or ""
        if name.endswith("get_comm_overlap_callback_idx") and node.args:
            # utils.py: the index of the MegatronCommOverlapCallback in the trainer's callbacks (a for loop)
            callbacks = self.ev(node.args[0], mod, env)
            if isinstance(callbacks, list):
                for i, c in enumerate(callbacks):
                    if isinstance(c, dict) and str(c.get("_target_", "")).endswith("MegatronCommOverlapCallback"):
                        return i
            return None
        if name.endswith("set_exp_logging_configs") and node.args:
            return self.ev(node.args[0], mod, env)  # (logging and profiling only)
        return super().call(node, mod, env)


def number(v):
    if v is None or v == "":
        return None
    f = float(v)
    return int(f) if f == int(f) else f


def read_csv(root, gpu):
    path = os.path.join(root, CONFIGS, "model_configs_%s.csv" % gpu)
    if not os.path.exists(path):
        return []
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            row = {}
            for k, v in r.items():
                v = (v or "").strip()
                row[k] = v if k in ("task", "model", "size", "system", "dtype", "recompute_modules") else number(v)
            rows.append(row)
    return rows


def script_facts(root, path):
    """(recipe module, recipe function, csv model, csv size, csv task or None for args.finetuning)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    recipe = fn = model = size = None
    task = "pre_train"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nemo.collections.llm.recipes."):
            for a in node.names:
                if a.name in ("pretrain_recipe", "finetune_recipe"):
                    recipe, fn = node.module.split(".")[-1], a.name
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "get_user_configs":
            a = node.args
            if len(a) >= 4 and isinstance(a[2], ast.Constant) and isinstance(a[3], ast.Constant):
                model, size = a[2].value, a[3].value
                task = a[1].value if isinstance(a[1], ast.Constant) else None
    return recipe, fn, model, size, task


def flatten(v, prefix, out):
    """{dotted key: value} of a nested mapping (lists are values)."""
    if isinstance(v, dict) and v:
        for k, x in v.items():
            flatten(x, prefix + "." + k if prefix else k, out)
    else:
        out[prefix] = v
    return out


def diff(base, task):
    """The dotted fields of `task` that differ from `base`, None for those it does not have."""
    a, b = flatten(base, "", {}), flatten(task, "", {})
    out = {k: v for k, v in b.items() if a.get(k, nr.UNKNOWN) != v}
    for k in a:
        if k not in b:
            out[k] = None
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root, commit = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
    interp = PerfInterp(root)
    recipes = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analyzer", "data",
                                          "nemo2", "recipes.json")))["recipes"]
    csv_rows = {g: read_csv(root, g) for g in GPUS}
    scripts = {}
    for file in sorted(os.listdir(os.path.join(root, SCRIPTS))):
        if not file.endswith(".py") or not (file.startswith("pretrain_") or file.startswith("finetune_")):
            continue
        name = file[:-3]
        recipe, fn, model, size, task = script_facts(root, os.path.join(root, SCRIPTS, file))
        if not recipe or recipe not in recipes:
            scripts[name] = {"unsupported": "builds no NeMo 2 recipe of the table (%s)" % (recipe or "no recipe")}
            continue
        mod = interp.module(SCRIPTS.replace("/", ".") + "." + name)
        k = mod.names.get("override_recipe_configs")
        if not k or k[0] != "func":
            scripts[name] = {"unsupported": "no override_recipe_configs"}
            continue
        kind = "pretrain" if fn == "pretrain_recipe" else "finetune"
        entry = {"recipe": recipe, "task": kind, "model": model, "size": size, "csv_task": task, "configs": []}
        for gpu in GPUS:
            for row in csv_rows[gpu]:
                if row["model"] != model or row["size"] != size:
                    continue
                if task is not None and row["task"] != task:
                    continue
                if task is None and row["task"] not in ("sft", "lora"):
                    continue
                scheme = None if task is not None else ("none" if row["task"] == "sft" else row["task"])
                base_key = kind + ("_performance" if kind == "pretrain" else
                                   "_" + scheme if scheme and kind + "_" + scheme in recipes[recipe] else "")
                if base_key not in recipes[recipe]:
                    base_key = kind  # (performance_mode changes nothing of this recipe's task)
                base = recipes[recipe][base_key]
                for fr in (FP8_RECIPES if row["dtype"] == "fp8" else (None,)):
                    args = dict(ARG_DEFAULTS, gpu=gpu, compute_dtype=row["dtype"], fp8_recipe=fr or "ds",
                                finetuning=row["task"] if task is None else "lora",
                                gpus_per_node=4 if gpu == "gb200" else 8)
                    gpn = args["gpus_per_node"]
                    kw = {"args": args, "num_nodes": -(-int(row["num_gpus"]) // gpn), "mbs": row["mbs"],
                          "gbs": row["gbs"], "tp_size": row["tp_size"], "pp_size": row["pp_size"],
                          "cp_size": row["cp_size"], "vp_size": row["vp_size"], "ep_size": row["ep_size"],
                          "etp_size": row["etp_size"], "enable_cuda_graphs": bool(row["cuda_graphs"] or 0),
                          "use_mcore_fsdp": bool(row["use_mcore_fsdp"] or 0),
                          "recompute_layers": int(row["recompute_layers"] or 0),
                          "activation_offload_layers": int(row["activation_offload_layers"] or 0),
                          "recompute_modules": row["recompute_modules"].split("/") if row["recompute_modules"]
                          else None,
                          "keep_fsdp_fp8_transpose_cache": bool(row["keep_fsdp_fp8_transpose_cache"] or 0),
                          "use_user_buffer_registration": bool(row["use_user_buffer_registration"] or 0),
                          "use_sharp": bool(row["use_sharp"] or 0)}
                    try:
                        out = interp.run_function(k[1], mod, [], copy.deepcopy(kw))
                    except RecursionError:
                        out = nr.UNKNOWN
                    if not isinstance(out, dict) or not isinstance(out.get("model"), dict):
                        continue
                    out = nr.clean(out)
                    entry["configs"].append({
                        "gpu": gpu, "csv_task": row["task"], "dtype": row["dtype"], "fp8_recipe": fr,
                        "num_gpus": int(row["num_gpus"]), "base": base_key,
                        "row": {c: row[c] for c in ("seq_len", "tp_size", "pp_size", "cp_size", "ep_size",
                                                     "vp_size", "etp_size", "mbs", "gbs", "cuda_graphs",
                                                     "use_mcore_fsdp", "recompute_layers",
                                                     "activation_offload_layers", "recompute_modules")
                                if row.get(c) not in (None, "")},
                        "overrides": diff(base, out)})
        scripts[name] = entry
    source = ("NVIDIA/NeMo " + (commit + " " if commit else "") + SCRIPTS + "/*.py with " + CONFIGS +
              "/model_configs_{h100,b200,gb200}.csv (override_recipe_configs() evaluated per CSV row and fp8 "
              "recipe by scripts/nemo2_perf_scripts.py)")
    sys.stdout.write('{"source": ' + json.dumps(source) + ',\n "scripts": {\n')
    names = sorted(scripts)
    for i, name in enumerate(names):
        sys.stdout.write("  " + json.dumps(name) + ": " + json.dumps(scripts[name], sort_keys=True) +
                         ("," if i + 1 < len(names) else "") + "\n")
    sys.stdout.write(" }\n}\n")


if __name__ == "__main__":
    main()
