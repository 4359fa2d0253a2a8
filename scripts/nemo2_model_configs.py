#!/usr/bin/env python3
"""Writes analyzer/data/nemo2/model_configs.json: the architecture of every NeMo 2 model configuration class
(`nemo.collections.llm.gpt.model.*Config*`: Llama3Config8B, DeepSeekV3Config, NemotronHConfig8B, ...) as the
TransformerConfig fields a NeMo 2 run's YAML leaves out.

A NeMo 2 configuration (NeMo-Run's YAML of `llm.pretrain` / `llm.finetune`, a checkpoint's context/model.yaml)
names its model by class (`_target_: nemo.collections.llm.gpt.model.llama.Llama3Config8B`) and writes only the
arguments given to it; the rest are the dataclass defaults in NeMo's source.  This script reads those defaults
from a NeMo checkout statically (Python's ast: class-level `name: type = value` lines, through the classes'
inheritance in NeMo's files), so no NeMo or torch install is needed.  Values it cannot evaluate statically
(calls, layer specs) are left out; functions are kept by dotted name (`F.silu` -> "torch.nn.functional.silu").
Fields set in __post_init__ are not seen.

Usage: scripts/nemo2_model_configs.py NEMO_CHECKOUT [COMMIT] > analyzer/data/nemo2/model_configs.json
"""
import ast
import json
import os
import sys

MODEL_DIR = "nemo/collections/llm/gpt/model"

# Megatron Core base classes the NeMo classes derive from (not in NeMo's tree): what each implies.
CORE_BASES = {
    "TransformerConfig": {},
    "MLATransformerConfig": {"multi_latent_attention": True},
}

# Fields that do not change memory or time (initialisation, fusions, loss scaling, callables by module): left
# out to keep the table small.
SKIP_PREFIXES = ("init_method", "output_layer_init", "bias_dropout", "bias_activation", "masked_softmax",
                 "persist_layer_norm", "apply_rope_fusion", "gradient_accumulation_fusion", "moe_aux_loss",
                 "moe_z_loss", "mscale", "rotary_scaling", "beta_fast", "beta_slow", "scale_factor",
                 "low_freq", "high_freq", "old_context", "moe_router_load_balancing", "moe_router_topk_scaling",
                 "moe_router_pre_softmax", "moe_router_dtype", "moe_router_bias_update", "mapping_type",
                 "forward_step_fn", "data_step_fn", "transformer_layer_spec", "mamba_stack_spec",
                 "async_tensor", "deallocate", "parallel_output", "fp16_lm_cross", "attention_softmax",
                 "seq_len_interpolation", "get_attention_mask", "post_process", "pre_process",
                 "scatter_embedding", "tp_only_amax", "generation_config", "tp_comm_overlap_cfg",
                 "params_dtype", "autocast_dtype", "pipeline_dtype", "bf16", "fp16", "mtp_loss", "exporter_cls",
                 "importer_cls", "hyena_", "in_batch_negatives", "negative_sample", "num_hard_negatives",
                 "to_upper", "truncation_method", "add_bos", "add_eos", "label_smoothing", "ce_loss_scale",
                 "use_cpu_initialization", "flash_decode", "yarn_", "rope_scaling", "vortex_style")

ALIASES = {"F": "torch.nn.functional", "torch.nn.functional": "torch.nn.functional"}


class Unknown(Exception):
    pass


def dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return dotted(node.value) + "." + node.attr
    raise Unknown()


def evaluate(node, consts):
    """A literal value: constants, arithmetic, lists, names of module-level constants, enums and functions."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [evaluate(e, consts) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -evaluate(node.operand, consts)
    if isinstance(node, ast.BinOp):
        a, b = evaluate(node.left, consts), evaluate(node.right, consts)
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
               ast.FloorDiv: lambda: a // b, ast.Div: lambda: a / b}
        if type(node.op) in ops:
            return ops[type(node.op)]()
        raise Unknown()
    if isinstance(node, ast.Name) and node.id in consts:
        return consts[node.id]
    if isinstance(node, (ast.Attribute, ast.Name)):
        name = dotted(node)
        head, _, tail = name.partition(".")
        if name.startswith("AttnBackend."):
            return tail
        if head in ALIASES and tail:
            return ALIASES[head] + "." + tail
        if name.startswith("torch.") or name.startswith("F."):
            return name
        if head in consts.get("__functions__", {}):  # a function defined or imported by the module
            return consts["__functions__"][head] + ("." + tail if tail else "")
        raise Unknown()
    if isinstance(node, ast.Lambda):
        # the squared ReLU written inline (NemotronHConfigBase: lambda x: torch.pow(F.relu(x), 2))
        body = ast.unparse(node.body).replace(" ", "")
        if body in ("torch.pow(F.relu(x),2)", "F.relu(x)**2", "torch.square(F.relu(x))"):
            return "squared_relu"
        return "lambda: " + body
    if isinstance(node, ast.Call) and dotted(node.func) == "field":
        for kw in node.keywords:
            if kw.arg == "default":
                return evaluate(kw.value, consts)
            if kw.arg == "default_factory" and isinstance(kw.value, ast.Lambda):
                return evaluate(kw.value.body, consts)
        raise Unknown()
    raise Unknown()


def read_classes(root):
    classes = {}  # name -> {"module", "bases", "fields"}
    folder = os.path.join(root, MODEL_DIR)
    for file in sorted(os.listdir(folder)):
        if not file.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(folder, file), encoding="utf-8").read())
        module = (MODEL_DIR + "/" + file[:-3]).replace("/", ".")
        consts = {"__functions__": {}}
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef):
                consts["__functions__"][stmt.name] = module + "." + stmt.name
            if isinstance(stmt, ast.ImportFrom) and stmt.module:
                for alias in stmt.names:
                    consts["__functions__"][alias.asname or alias.name] = stmt.module + "." + alias.name
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                try:
                    consts[stmt.targets[0].id] = evaluate(stmt.value, consts)
                except Unknown:
                    pass
            if not isinstance(stmt, ast.ClassDef):
                continue
            try:
                bases = [dotted(b).split(".")[-1] for b in stmt.bases]
            except Unknown:
                bases = []
            fields = {}
            for item in stmt.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value:
                    name = item.target.id
                    if name.startswith(SKIP_PREFIXES):
                        continue
                    try:
                        fields[name] = evaluate(item.value, consts)
                    except Unknown:
                        pass
            classes[stmt.name] = {"module": module, "bases": bases, "fields": fields}
    return classes


def resolve(name, classes, seen=()):
    """The fields of `name` through its bases (Python's MRO for these single-line hierarchies: the first base
    wins over later ones, the class over its bases); None when the class is not a TransformerConfig."""
    if name in CORE_BASES:
        return dict(CORE_BASES[name])
    c = classes.get(name)
    if not c or name in seen:
        return None
    merged, is_config = {}, False
    for base in reversed(c["bases"]):
        f = resolve(base, classes, seen + (name,))
        if f is not None:
            merged.update(f)
            is_config = True
    if not is_config:
        return None
    merged.update(c["fields"])
    return merged


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else ""
    classes = read_classes(root)
    out = {}
    for name in sorted(classes):
        fields = resolve(name, classes)
        if fields is None:
            continue
        out[name] = {"module": classes[name]["module"], "fields": {k: fields[k] for k in sorted(fields)}}
    json.dump({"source": "NVIDIA/NeMo " + (commit + " " if commit else "") + MODEL_DIR + "/*.py (dataclass "
               "defaults, read by scripts/nemo2_model_configs.py)", "classes": out}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
