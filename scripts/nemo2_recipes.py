#!/usr/bin/env python3
"""Writes analyzer/data/nemo2/recipes.json: every NeMo 2 recipe's pre-training (and fine-tuning) task as NeMo-Run
would serialise it to YAML, so `nemo llm pretrain --factory llama3_8b` can be read as the configuration it builds.

NeMo 2's recipes (nemo/collections/llm/recipes/<name>.py) are Python: `pretrain_recipe()` returns
`run.Partial(pretrain, model=model(), trainer=trainer(...), data=run.Config(MockDataModule, ...), ...)` and then
edits it (`recipe.trainer.strategy.x = ...`, callbacks appended).  This script evaluates those functions
statically with a small interpreter over Python's ast — `run.Config` / `run.Partial` become
`{"_target_": "module.Class", ...}` mappings; calls of the recipes' own helper functions (trainer(), bf16_mixed(),
distributed_fused_adam_with_cosine_annealing(), default_finetune_recipe(), ...) are evaluated with their default
arguments; attribute assignments and list appends on the recipe are applied; `if` tests it can decide are
followed — so no NeMo, torch or nemo_run install is needed.  Values it cannot evaluate are left out (the log,
resume and checkpoint sections, which change neither memory nor time, are dropped).

Usage: scripts/nemo2_recipes.py NEMO_CHECKOUT [COMMIT] > analyzer/data/nemo2/recipes.json
"""
import ast
import json
import os
import sys

RECIPES = "nemo/collections/llm/recipes"
UNKNOWN = object()
# Keys that change neither memory nor time: left out to keep the table small.
DROP = {"log", "tokenizer_model_path", "lr_scheduler", "limit_test_batches", "limit_val_batches",
        "val_check_interval", "log_every_n_steps", "max_steps", "ckpt_async_save", "ckpt_parallel_load",
        "ckpt_load_strictness", "gradient_as_bucket_view", "use_distributed_sampler", "accelerator",
        "enable_checkpointing", "gc_interval_train", "gc_interval_val", "resume_if_exists",
        "resume_ignore_no_checkpoint", "adam_beta1", "adam_beta2", "adam_eps", "clip_grad", "weight_decay",
        "lr", "min_lr", "warmup_steps", "constant_steps"}
# nemo.collections.llm.peft's PEFT_STR2CLS (the recipes' `peft_scheme` names)
PEFT_CLASSES = {"lora": "nemo.collections.llm.peft.lora.LoRA", "dora": "nemo.collections.llm.peft.dora.DoRA",
                "canonical_lora": "nemo.collections.llm.peft.canonical_lora.CanonicalLoRA"}


class Module:
    def __init__(self, root, dotted):
        self.dotted = dotted
        path = os.path.join(root, dotted.replace(".", "/") + ".py")
        if not os.path.exists(path):
            path = os.path.join(root, dotted.replace(".", "/"), "__init__.py")
        self.tree = ast.parse(open(path, encoding="utf-8").read()) if os.path.exists(path) else ast.Module([], [])
        self.names = {}  # name -> ("import", dotted) | ("func", FunctionDef) | ("value", v)
        for stmt in self.tree.body:
            if isinstance(stmt, ast.ImportFrom) and stmt.module:
                for a in stmt.names:
                    self.names[a.asname or a.name] = ("import", stmt.module + "." + a.name)
            elif isinstance(stmt, ast.Import):
                for a in stmt.names:
                    self.names[a.asname or a.name.split(".")[0]] = ("import", a.name if a.asname else
                                                                    a.name.split(".")[0])
            elif isinstance(stmt, ast.FunctionDef):
                self.names[stmt.name] = ("func", stmt)
            elif isinstance(stmt, ast.ClassDef):
                self.names[stmt.name] = ("import", dotted + "." + stmt.name)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                self.names[stmt.targets[0].id] = ("expr", stmt.value)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value and isinstance(stmt.target, ast.Name):
                self.names[stmt.target.id] = ("expr", stmt.value)


class Interp:
    # modules whose functions are evaluated when a recipe calls them
    follow_prefixes = ("nemo.collections.llm.recipes",)

    def __init__(self, root):
        self.root = root
        self.modules = {}

    def follows(self, dotted):
        return dotted.startswith(self.follow_prefixes)

    def module(self, dotted):
        if dotted not in self.modules:
            self.modules[dotted] = Module(self.root, dotted)
        return self.modules[dotted]

    # --- expressions -------------------------------------------------------------------------------------------
    def dotted_target(self, node, mod, env):
        """A class or function named in run.Config(...): its dotted path."""
        if isinstance(node, ast.Name):
            if node.id in env and isinstance(env[node.id], str):
                return env[node.id]
            kind = mod.names.get(node.id)
            if kind and kind[0] == "import":
                return kind[1]
            if kind and kind[0] == "func":
                return mod.dotted + "." + node.id
            return node.id
        if isinstance(node, ast.Attribute):
            base = self.dotted_target(node.value, mod, env)
            return base + "." + node.attr if base else None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                node.value.id == "PEFT_STR2CLS":
            key = self.ev(node.slice, mod, env)
            return PEFT_CLASSES.get(key) if isinstance(key, str) else None
        return None

    def ev(self, node, mod, env):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.ev(e, mod, env) for e in node.elts]
        if isinstance(node, ast.Dict):
            return {self.ev(k, mod, env): self.ev(v, mod, env) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.UnaryOp):
            v = self.ev(node.operand, mod, env)
            if v is UNKNOWN:
                return UNKNOWN
            if isinstance(node.op, ast.Not):
                return not v
            if isinstance(node.op, ast.USub):
                return -v
            return UNKNOWN
        if isinstance(node, ast.BinOp):
            a, b = self.ev(node.left, mod, env), self.ev(node.right, mod, env)
            if a is UNKNOWN or b is UNKNOWN:
                return UNKNOWN
            try:
                return {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                        ast.FloorDiv: lambda: a // b, ast.Div: lambda: a / b}[type(node.op)]()
            except Exception:
                return UNKNOWN
        if isinstance(node, ast.BoolOp):  # Python's: the first truthy (or) / falsy (and) operand
            v = None
            for operand in node.values:
                v = self.ev(operand, mod, env)
                if v is UNKNOWN:
                    return UNKNOWN
                if bool(v) == isinstance(node.op, ast.Or):
                    return v
            return v
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            a, b = self.ev(node.left, mod, env), self.ev(node.comparators[0], mod, env)
            if a is UNKNOWN or b is UNKNOWN:
                return UNKNOWN
            op = node.ops[0]
            try:
                return {ast.Is: lambda: a is b, ast.IsNot: lambda: a is not b, ast.Eq: lambda: a == b,
                        ast.NotEq: lambda: a != b, ast.In: lambda: a in b, ast.NotIn: lambda: a not in b,
                        ast.Gt: lambda: a > b, ast.Lt: lambda: a < b, ast.GtE: lambda: a >= b,
                        ast.LtE: lambda: a <= b}[type(op)]()
            except Exception:
                return UNKNOWN
        if isinstance(node, ast.IfExp):
            t = self.ev(node.test, mod, env)
            if t is UNKNOWN:
                return UNKNOWN
            return self.ev(node.body if t else node.orelse, mod, env)
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            kind = mod.names.get(node.id)
            if kind and kind[0] == "expr":
                return self.ev(kind[1], mod, {})
            return UNKNOWN
        if isinstance(node, ast.Attribute):
            base = self.ev(node.value, mod, env) if not isinstance(node.value, ast.Name) or \
                node.value.id in env else UNKNOWN
            if isinstance(base, dict):
                return base.get(node.attr, UNKNOWN)
            if isinstance(base, str) and node.attr in ("lower", "upper"):
                return UNKNOWN
            target = self.dotted_target(node, mod, env)
            if target and target.startswith("torch.") and target.split(".")[-1] in (
                    "bfloat16", "float16", "float32", "float8_e4m3fn"):
                return {"_target_": target, "_call_": False}
            return UNKNOWN
        if isinstance(node, ast.Call):
            return self.call(node, mod, env)
        if isinstance(node, ast.ListComp) and len(node.generators) == 1 and \
                isinstance(node.generators[0].target, ast.Name) and not node.generators[0].is_async:
            # [elt for x in iterable if cond]
            gen = node.generators[0]
            items = self.ev(gen.iter, mod, env)
            if not isinstance(items, (list, tuple)):
                return UNKNOWN
            out = []
            for item in items:
                scope = dict(env)
                scope[gen.target.id] = item
                keep = [self.ev(c, mod, scope) for c in gen.ifs]
                if any(k is UNKNOWN for k in keep):
                    return UNKNOWN
                if all(keep):
                    v = self.ev(node.elt, mod, scope)
                    if v is UNKNOWN:
                        return UNKNOWN
                    out.append(v)
            return out
        if isinstance(node, ast.JoinedStr):  # f"nemo://{model_id}"
            parts = []
            for v in node.values:
                x = self.ev(v.value, mod, env) if isinstance(v, ast.FormattedValue) else v.value
                if x is UNKNOWN or isinstance(x, (dict, list)):
                    return UNKNOWN
                parts.append(str(x))
            return "".join(parts)
        if isinstance(node, ast.Subscript):
            base, key = self.ev(node.value, mod, env), self.ev(node.slice, mod, env)
            try:
                return base[key]
            except Exception:
                return UNKNOWN
        return UNKNOWN

    def call(self, node, mod, env):
        func = node.func
        # str methods
        if isinstance(func, ast.Attribute) and func.attr in ("lower", "upper", "strip"):
            v = self.ev(func.value, mod, env)
            if isinstance(v, str):
                return getattr(v, func.attr)()
            return UNKNOWN
        if isinstance(func, ast.Name) and func.id == "hasattr" and len(node.args) == 2:
            obj, name = self.ev(node.args[0], mod, env), self.ev(node.args[1], mod, env)
            return isinstance(obj, dict) and name in obj if obj is not UNKNOWN else UNKNOWN
        if isinstance(func, ast.Name) and func.id in ("list", "tuple") and len(node.args) == 1 and \
                func.id not in env and func.id not in mod.names:
            v = self.ev(node.args[0], mod, env)
            return list(v) if isinstance(v, (list, tuple)) else UNKNOWN
        if isinstance(func, ast.Name) and func.id in ("int", "bool", "str", "float") and len(node.args) == 1:
            v = self.ev(node.args[0], mod, env)
            return UNKNOWN if v is UNKNOWN else {"int": int, "bool": bool, "str": str, "float": float}[func.id](v)
        name = self.dotted_target(func, mod, env) or ""
        last = name.split(".")[-1]
        if last in ("Config", "Partial") and (name.startswith("run.") or name.startswith("nemo_run") or
                                              name in ("Config", "Partial")):
            if not node.args:
                return UNKNOWN
            target = self.dotted_target(node.args[0], mod, env)
            if target in env and isinstance(env[target], str):
                target = env[target]
            out = {"_target_": target}
            if last == "Partial":
                out["_partial_"] = True
            for kw in node.keywords:
                if kw.arg is None:
                    continue
                v = self.ev(kw.value, mod, env)
                if v is not UNKNOWN and kw.arg not in DROP:
                    out[kw.arg] = v
            return out
        # a function we can read: the current module's, or one imported from NeMo's recipes
        fdef, fmod = None, None
        if isinstance(func, ast.Name):
            kind = mod.names.get(func.id)
            if kind and kind[0] == "func":
                fdef, fmod = kind[1], mod
            elif kind and kind[0] == "import":
                fdef, fmod = self.function_of(kind[1])
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            kind = mod.names.get(func.value.id)
            if kind and kind[0] == "import":
                fdef, fmod = self.function_of(kind[1] + "." + func.attr)
        if fdef is None:
            return UNKNOWN
        args = [self.ev(a, mod, env) for a in node.args]
        kwargs = {kw.arg: self.ev(kw.value, mod, env) for kw in node.keywords if kw.arg}
        return self.run_function(fdef, fmod, args, kwargs)

    def function_of(self, dotted):
        """The function `module.name` names, through the re-exports of followed modules (`from .h100.llama3
        import llama3_8b_pretrain_2gpu_h100_bf16_config as llama3_8b_pretrain_config`): (FunctionDef, Module),
        or (None, None)."""
        for _ in range(8):
            if not self.follows(dotted):
                return None, None
            m, _, f = dotted.rpartition(".")
            fm = self.module(m)
            kind = fm.names.get(f)
            if kind and kind[0] == "func":
                return kind[1], fm
            if not (kind and kind[0] == "import"):
                return None, None
            dotted = kind[1]
        return None, None

    # --- statements ----------------------------------------------------------------------------------------------
    def run_function(self, fdef, mod, args, kwargs, depth=[0]):
        if depth[0] > 12:
            return UNKNOWN
        depth[0] += 1
        try:
            env = {}
            params = fdef.args.args
            defaults = [None] * (len(params) - len(fdef.args.defaults)) + list(fdef.args.defaults)
            for i, p in enumerate(params):
                if i < len(args):
                    env[p.arg] = args[i]
                elif p.arg in kwargs:
                    env[p.arg] = kwargs[p.arg]
                elif defaults[i] is not None:
                    v = self.ev(defaults[i], mod, {})
                    # a function given as a default (fn=pretrain) is its dotted name
                    if v is UNKNOWN and isinstance(defaults[i], (ast.Name, ast.Attribute)):
                        v = self.dotted_target(defaults[i], mod, {})
                    env[p.arg] = v
                else:
                    env[p.arg] = UNKNOWN
            for p, d in zip(fdef.args.kwonlyargs, fdef.args.kw_defaults):
                env[p.arg] = kwargs.get(p.arg, self.ev(d, mod, {}) if d is not None else UNKNOWN)
            return self.block(fdef.body, mod, env)
        finally:
            depth[0] -= 1

    def block(self, body, mod, env):
        for stmt in body:
            r = self.stmt(stmt, mod, env)
            if r is not None:
                return r[0]
        return None

    def path_of(self, node, mod, env):
        """recipe.trainer.strategy -> (the dict object, key) for assignment."""
        if isinstance(node, ast.Attribute):
            base = self.ev(node.value, mod, env)
            if isinstance(base, dict):
                return base, node.attr
        return None, None

    def stmt(self, s, mod, env):
        if isinstance(s, ast.Return):
            return (self.ev(s.value, mod, env) if s.value else None,)
        if isinstance(s, ast.Assign):
            v = self.ev(s.value, mod, env)
            for t in s.targets:
                if isinstance(t, ast.Name):
                    env[t.id] = v
                else:
                    obj, key = self.path_of(t, mod, env)
                    if obj is not None and key not in DROP:
                        if v is UNKNOWN:
                            obj.pop(key, None)
                        else:
                            obj[key] = v
            return None
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Attribute):
            f = s.value.func
            if f.attr in ("append", "extend") and s.value.args:
                lst = self.ev(f.value, mod, env)
                v = self.ev(s.value.args[0], mod, env)
                if isinstance(lst, list) and v is not UNKNOWN:
                    if f.attr == "append":
                        lst.append(v)
                    elif isinstance(v, list):
                        lst.extend(v)
            return None
        if isinstance(s, ast.If):
            t = self.ev(s.test, mod, env)
            if t is UNKNOWN:
                return None
            return self.block_or_none(s.body if t else s.orelse, mod, env)
        return None

    def block_or_none(self, body, mod, env):
        for stmt in body:
            r = self.stmt(stmt, mod, env)
            if r is not None:
                return r
        return None


def clean(v):
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items() if x is not UNKNOWN}
    if isinstance(v, list):
        return [clean(x) for x in v if x is not UNKNOWN]
    return v


def write_table(source, tables):
    """The JSON file, one recipe a line: {"source": …, <name>: <object>, …, "recipes": {name: recipe}}."""
    sys.stdout.write('{"source": ' + json.dumps(source))
    for key, value in tables.items():
        if key != "recipes":
            sys.stdout.write(',\n ' + json.dumps(key) + ': ' + json.dumps(value, sort_keys=True))
    sys.stdout.write(',\n "recipes": {\n')
    out = tables["recipes"]
    names = sorted(out)
    for i, name in enumerate(names):
        sys.stdout.write("  " + json.dumps(name) + ": " + json.dumps(out[name], sort_keys=True) +
                         ("," if i + 1 < len(names) else "") + "\n")
    sys.stdout.write(" }\n}\n")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root, commit = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
    interp = Interp(root)
    out = {}
    for file in sorted(os.listdir(os.path.join(root, RECIPES))):
        if not file.endswith(".py") or file.startswith("_"):
            continue
        name = file[:-3]
        mod = interp.module(RECIPES.replace("/", ".") + "." + name)
        entry = {}
        # (each task also with performance_mode=True, as NeMo's performance scripts build it, and a fine-tuning
        # task with the other peft_scheme values, whose branches of the recipe also change its layout)
        for kind, fn, kwargs in (("pretrain", "pretrain_recipe", {}), ("finetune", "finetune_recipe", {}),
                                 ("pretrain_performance", "pretrain_recipe", {"performance_mode": True}),
                                 ("finetune_performance", "finetune_recipe", {"performance_mode": True}),
                                 ("finetune_none", "finetune_recipe", {"peft_scheme": "none"}),
                                 ("finetune_lora", "finetune_recipe", {"peft_scheme": "lora"}),
                                 ("finetune_dora", "finetune_recipe", {"peft_scheme": "dora"})):
            k = mod.names.get(fn)
            if not k or k[0] != "func":
                continue
            if any(key not in [a.arg for a in k[1].args.args + k[1].args.kwonlyargs] for key in kwargs):
                continue
            try:
                task = interp.run_function(k[1], mod, [], dict(kwargs))
            except RecursionError:
                task = UNKNOWN
            if isinstance(task, dict) and isinstance(task.get("model"), dict):
                task = clean(task)
                if kwargs and task == entry.get(kind.split("_")[0]):
                    continue
                entry[kind] = task
        if entry:
            out[name] = entry
    write_table("NVIDIA/NeMo " + (commit + " " if commit else "") + RECIPES + "/*.py (pretrain_recipe() and "
                "finetune_recipe() with their default arguments, evaluated by scripts/nemo2_recipes.py)",
                {"recipes": out})

if __name__ == "__main__":
    main()
