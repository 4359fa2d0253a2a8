#!/usr/bin/env python3
"""Writes analyzer/data/bridge/recipes.json: every Megatron-Bridge recipe (`megatron.bridge.recipes.*`:
llama3_8b_pretrain_config, qwen3_30b_a3b_pretrain_config, …) as the ConfigContainer it returns, so
`--bridge-config llama3_8b_pretrain_config` reads what `run_recipe.py --recipe llama3_8b_pretrain_config` trains.
The flat performance recipes (`megatron.bridge.perf_recipes.*`: llama3_8b_pretrain_8gpu_gb200_fp8cs_config, …,
what `scripts/performance/setup_experiment.py -mr llama3_8b -ng 8 -g gb200 -c fp8_cs` trains) are a table of their
own, "perf_recipes": ten of their names are also recipes of megatron.bridge.recipes with another layout (the
performance one is chosen, as Bridge's scripts/training/recipe_runner.py load_recipe does).

Megatron-Bridge's recipes are Python functions: `cfg = _pretrain_common()` (a ConfigContainer of dataclasses),
`cfg.model = AutoBridge.from_hf_pretrained("meta-llama/Meta-Llama-3-8B").get_model_config()`, then attribute
assignments.  They are evaluated statically with the interpreter of scripts/nemo2_recipes.py: dataclass
constructors become `{"_target_": "module.Class", field: value}` mappings, the model a Hugging Face repository
(`{"_hf_": "ORG/REPO", field: value}`, its architecture read by preflight from that repository's config.json or
its preset), the helper functions of megatron.bridge.recipes evaluated with their defaults.  Values it cannot
evaluate are left out; so are sections that change neither memory nor time (logging, checkpointing, rng,
validation, scheduler).

Usage: scripts/bridge_recipes.py MEGATRON_BRIDGE_CHECKOUT [COMMIT] > analyzer/data/bridge/recipes.json
"""
import ast
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nemo2_recipes as base  # noqa: E402

RECIPES = "megatron/bridge/recipes"
# The flat performance recipes (`scripts/performance` resolves them by model, GPU count, GPU type and precision:
# llama3_8b_pretrain_8gpu_gb200_fp8cs_config, …): the layouts NVIDIA's published performance tables ran.
PERF_RECIPES = "megatron/bridge/perf_recipes"
DROP_SECTIONS = {"logger", "checkpoint", "rng", "validation", "scheduler", "dist", "profiling", "env_vars",
                 "ft", "straggler", "nvrx_straggler", "inprocess_restart", "tensor_inspect"}


# Of these sections only what changes memory or time is kept.
KEEP = {
    "dataset": {"_target_", "seq_length", "sequence_length"},
    "train": {"_target_", "global_batch_size", "micro_batch_size"},
    "tokenizer": {"_target_", "tokenizer_type", "tokenizer_model", "vocab_size", "use_tokenizer_vocab_size"},
    "optimizer": {"_target_", "optimizer", "use_distributed_optimizer", "use_precision_aware_optimizer",
                  "main_grads_dtype", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype",
                  "optimizer_cpu_offload", "optimizer_offload_fraction", "bf16", "fp16"},
}


# Modules whose functions a recipe passes as a model's activation (HybridModelProvider(activation_func=squared_relu)).
ACTIVATION_MODULES = ("megatron.core.activations.", "torch.nn.functional.", "megatron.core.fusions.")


class BridgeInterp(base.Interp):
    follow_prefixes = ("megatron.bridge.recipes", "megatron.bridge.perf_recipes", "megatron.bridge.utils.cuda_graph",
                       "megatron.bridge.training.mixed_precision")

    def ev(self, node, mod, env):
        if isinstance(node, ast.Tuple):
            return tuple(self.ev(e, mod, env) for e in node.elts)
        if isinstance(node, ast.Dict):
            out = {}
            for k, v in zip(node.keys, node.values):
                if k is None:
                    continue  # {**OTHER}
                kk, vv = self.ev(k, mod, env), self.ev(v, mod, env)
                if isinstance(kk, (str, int, tuple)) and base.UNKNOWN not in (kk if isinstance(kk, tuple) else (kk,)) \
                        and vv is not base.UNKNOWN:
                    out[kk] = vv
            return out
        if isinstance(node, ast.Name) and node.id not in env:
            kind = mod.names.get(node.id)
            if kind and kind[0] == "import" and kind[1].startswith(ACTIVATION_MODULES):
                # an activation function passed by name (activation_func=squared_relu): the function itself
                return {"_target_": kind[1], "_call_": False}
            if kind and kind[0] == "import" and self.follows(kind[1]):
                m, _, name = kind[1].rpartition(".")
                k2 = self.module(m).names.get(name)
                if k2 and k2[0] == "expr":
                    return self.ev(k2[1], self.module(m), {})
        return super().ev(node, mod, env)

    def call(self, node, mod, env):
        func = node.func
        if isinstance(func, ast.Attribute):
            # AutoBridge.from_hf_pretrained("ORG/REPO")[.to_megatron_provider() | .get_model_config()]
            if self.dotted_target(func, mod, env) and \
                    (self.dotted_target(func, mod, env) or "").endswith("AutoBridge.from_hf_pretrained"):
                repo = self.ev(node.args[0], mod, env) if node.args else base.UNKNOWN
                return {"_autobridge_": repo} if isinstance(repo, str) else base.UNKNOWN
            if func.attr in ("to_megatron_provider", "get_model_config", "to_megatron_model_provider"):
                b = self.ev(func.value, mod, env)
                if isinstance(b, dict) and "_autobridge_" in b:
                    return {"_hf_": b["_autobridge_"]}
                return base.UNKNOWN
        helper = self.dotted_target(func, mod, env) or ""
        if helper.startswith("megatron.bridge.utils.cuda_graph."):
            # megatron/bridge/utils/cuda_graph.py: the per-layer CUDA graph modules (cuda_graph_modules on
            # current Megatron Core, cuda_graph_scope before — one meaning, read as the scope), cleared, or the
            # whole iteration captured.
            name = helper.rsplit(".", 1)[-1]
            config = self.ev(node.args[0], mod, env) if node.args else base.UNKNOWN
            if not isinstance(config, dict):
                return base.UNKNOWN
            if name == "set_cuda_graph_modules" and len(node.args) == 2:
                mods = self.ev(node.args[1], mod, env)
                if isinstance(mods, str):
                    mods = [] if mods in ("", "full") else mods.split(",")
                if not isinstance(mods, (list, tuple)) or not all(isinstance(x, str) for x in mods):
                    return base.UNKNOWN
                config["cuda_graph_scope"] = [x.rsplit(".", 1)[-1] for x in mods]
                return None
            if name == "clear_cuda_graph_modules":
                config["cuda_graph_scope"] = []
                return None
            if name == "set_full_iteration_cuda_graph":
                config["cuda_graph_impl"] = "full_iteration"
                config["cuda_graph_scope"] = []
                return None
        if helper.endswith("apply_flex_dispatcher_backend"):
            # megatron/bridge/training/flex_dispatcher_backend.py on a GPU that has the backend (the recipe's):
            # DeepEP / HybridEP make the dispatcher flex and turn the shared-expert overlap off.
            model = self.ev(node.args[0], mod, env) if node.args else base.UNKNOWN
            backend = self.ev(node.args[1], mod, env) if len(node.args) > 1 else None
            if isinstance(model, dict) and backend in ("deepep", "hybridep") and model.get("num_moe_experts", 1):
                model.update(moe_token_dispatcher_type="flex", moe_flex_dispatcher_backend=backend,
                             moe_shared_expert_overlap=False)
            return None
        if isinstance(func, ast.Name) and func.id == "isinstance" and len(node.args) == 2:
            v = self.ev(node.args[0], mod, env)
            classes = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            builtin = {"str": str, "int": int, "float": float, "bool": bool, "list": list, "dict": dict,
                       "tuple": tuple}
            if v is base.UNKNOWN:
                return base.UNKNOWN
            for c in classes:
                if isinstance(c, ast.Name) and c.id in builtin:
                    if isinstance(v, builtin[c.id]):
                        return True
                elif not (isinstance(v, (str, int, float, bool)) or v is None):
                    return base.UNKNOWN  # an object: its class is not known here
            return False
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) in (2, 3):
            obj, key = self.ev(node.args[0], mod, env), self.ev(node.args[1], mod, env)
            if isinstance(obj, dict) and isinstance(key, str):
                if key in obj:
                    return obj[key]
                return self.ev(node.args[2], mod, env) if len(node.args) == 3 else base.UNKNOWN
            return base.UNKNOWN
        v = super().call(node, mod, env)
        if v is not base.UNKNOWN:
            return v
        # a dataclass constructed (TrainingConfig(...), ConfigContainer(...), a model provider class)
        name = self.dotted_target(func, mod, env) or ""
        last = name.split(".")[-1]
        if last[:1].isupper() and not last.isupper():
            out = {"_target_": name}
            for kw in node.keywords:
                if kw.arg is None:
                    continue
                x = self.ev(kw.value, mod, env)
                if x is not base.UNKNOWN:
                    out[kw.arg] = x
            return out
        return base.UNKNOWN

    def stmt(self, s, mod, env):
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Tuple):
            v = self.ev(s.value, mod, env)
            names = s.targets[0].elts
            for i, t in enumerate(names):
                if isinstance(t, ast.Name):
                    env[t.id] = v[i] if isinstance(v, list) and i < len(v) else base.UNKNOWN
            return None
        if isinstance(s, ast.Return) and isinstance(s.value, ast.Tuple):
            return ([self.ev(e, mod, env) for e in s.value.elts],)
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and not (
                isinstance(s.value.func, ast.Attribute) and s.value.func.attr in ("append", "extend")):
            self.ev(s.value, mod, env)  # a helper that sets fields of the recipe it is given
            return None
        if isinstance(s, ast.Try):
            return self.block_or_none(s.body, mod, env)
        return super().stmt(s, mod, env)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = os.path.join(sys.argv[1], "src")
    commit = sys.argv[2] if len(sys.argv) > 2 else ""
    interp = BridgeInterp(root)
    tables, aliases = {RECIPES: {}, PERF_RECIPES: {}}, {}
    for package, out in tables.items():
        read_package(interp, root, package, out, aliases)
    recipes, perf = tables[RECIPES], tables[PERF_RECIPES]
    aliases = {a: n for a, n in aliases.items() if n in recipes and a not in recipes}
    base.write_table("NVIDIA-NeMo/Megatron-Bridge " + (commit + " " if commit else "") + "src/" + RECIPES +
                     "/**/*.py and src/" + PERF_RECIPES + "/**/*.py (the recipe functions with their default "
                     "arguments, evaluated by scripts/bridge_recipes.py); " + PERF_DEFAULTS + " "
                     "_DEFAULT_GPU_COUNT_OVERRIDES",
                     {"aliases": aliases, "recipes": recipes, "perf_recipes": perf,
                      "perf_default_gpus": perf_default_gpus(sys.argv[1])})


PERF_DEFAULTS = "scripts/performance/utils/utils.py"


def provider_defaults(interp, dotted, depth=0):
    """The field defaults a Megatron-Bridge model provider dataclass (megatron.bridge.models.*) declares, its
    bases' first (Megatron Core's TransformerConfig, outside the tree, is not read): name -> value, for the
    values that are plain data (numbers, strings, booleans, None; simple arithmetic of them)."""
    module, _, cls = dotted.rpartition(".")
    if depth > 8 or not module.startswith("megatron.bridge.models"):
        return {}
    mod = interp.module(module)
    node = next((st for st in mod.tree.body if isinstance(st, ast.ClassDef) and st.name == cls), None)
    if node is None:  # a re-export (the package's __init__)
        kind = mod.names.get(cls)
        return provider_defaults(interp, kind[1], depth + 1) if kind and kind[0] == "import" and \
            kind[1] != dotted else {}
    out = {}
    for b in node.bases:
        out.update(provider_defaults(interp, interp.dotted_target(b, mod, {}) or "", depth + 1))
    for st in node.body:
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
            v = interp.ev(st.value, mod, {})
            if v is None or isinstance(v, (bool, int, float, str)):
                out[st.target.id] = v
    return out


def perf_default_gpus(checkout):
    """scripts/performance's default GPU count where a launch's -ng has no recipe of its own (utils.py
    _DEFAULT_GPU_COUNT_OVERRIDES; otherwise the largest): "{model}_{task}|{gpu}_{precision}[_{variant}]" -> count."""
    tree = ast.parse(open(os.path.join(checkout, PERF_DEFAULTS), encoding="utf-8").read())
    for stmt in tree.body:
        target = stmt.target if isinstance(stmt, ast.AnnAssign) else \
            stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        if isinstance(target, ast.Name) and target.id == "_DEFAULT_GPU_COUNT_OVERRIDES":
            table = ast.literal_eval(stmt.value)
            return {"%s_%s|%s_%s%s" % (m, t, g, p, "_" + v if v else ""): n for (m, t, g, p, v), n in
                    sorted(table.items())}
    sys.exit(PERF_DEFAULTS + ": no _DEFAULT_GPU_COUNT_OVERRIDES")


def read_package(interp, root, package, out, aliases):
    """Evaluates the recipe functions of `package` (a folder under src/) into `out` (name -> ConfigContainer)."""
    for folder, _, files in sorted(os.walk(os.path.join(root, package))):
        for file in sorted(files):
            if not file.endswith(".py") or file.startswith("_"):
                continue
            dotted = os.path.relpath(os.path.join(folder, file[:-3]), root).replace("/", ".")
            mod = interp.module(dotted)
            for stmt in mod.tree.body:
                if package == RECIPES and isinstance(stmt, ast.ImportFrom) and stmt.module and \
                        stmt.module.startswith("megatron.bridge.recipes"):
                    for a in stmt.names:
                        if a.asname and a.asname.endswith("_config") and a.name.endswith("_config"):
                            aliases[a.asname] = a.name
                if not isinstance(stmt, ast.FunctionDef) or stmt.name.startswith("_") or \
                        not stmt.name.endswith("_config"):
                    continue
                if stmt.args.args and len(stmt.args.defaults) < len(stmt.args.args):
                    continue  # needs arguments
                try:
                    cfg = interp.run_function(stmt, mod, [], {})
                except (RecursionError, TypeError, KeyError, IndexError, AttributeError):
                    continue
                if not isinstance(cfg, dict) or not isinstance(cfg.get("model"), dict):
                    continue
                model = cfg["model"]
                if "_hf_" not in model and "_target_" not in model:
                    continue
                if "_hf_" not in model and \
                        str(model.get("_target_", "")).startswith("megatron.bridge.models."):
                    # a model provider class given by name (OlMoEModelProvider): its dataclass defaults under the
                    # recipe's fields
                    cfg["model"] = {**provider_defaults(interp, model["_target_"]), **model}
                cfg = {k: v for k, v in base.clean(cfg).items() if k not in DROP_SECTIONS}
                for section, keep in KEEP.items():
                    if isinstance(cfg.get(section), dict):
                        cfg[section] = {k: v for k, v in cfg[section].items() if k in keep}
                out[stmt.name] = cfg


if __name__ == "__main__":
    main()
