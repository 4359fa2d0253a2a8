#include "preflight/analyzer/tables/report.hpp"
#include <cstdio>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "preflight/analyzer/tables/communication.hpp"
#include "preflight/analyzer/model/memory.hpp"
#include "preflight/analyzer/model/memory_timeline.hpp"
#include "preflight/analyzer/model/rank_groups.hpp"
#include "preflight/common/table.hpp"
#include "preflight/common/units.hpp"

namespace preflight::analyzer {

namespace {

using A = TextTable::Align;
constexpr std::size_t kMaxGroupsShown = 16;

std::string gib(double bytes) {
  return fixed(to_gib(bytes), 2);
}
std::string mib(double bytes) {
  return fixed(to_mib(bytes), 2);
}
std::string num(std::int64_t v) {
  return std::to_string(v);
}

/// Strategy::per_layer_recompute summed per pipeline stage: "full", then each selective module (layers not
/// fully recomputed that recompute it).
std::vector<std::pair<std::string, std::vector<int>>> per_stage_recompute(const Strategy& st, int num_layers) {
  std::vector<std::pair<std::string, std::vector<int>>> out;
  if (st.per_layer_recompute.empty()) return out;
  const auto chunks = st.layers_per_chunk(num_layers);
  std::map<std::string, std::vector<int>> modules;
  std::vector<int> full(static_cast<std::size_t>(st.pp), 0);
  int layer = 0;
  for (const auto& row : chunks)
    for (int s = 0; s < st.pp; ++s)
      for (int i = 0; i < row[static_cast<std::size_t>(s)]; ++i, ++layer) {
        const auto& c = st.per_layer_recompute[static_cast<std::size_t>(layer)];
        if (c.full) ++full[static_cast<std::size_t>(s)];
        for (const auto& mod : c.modules) {
          auto& v = modules[mod];
          if (v.empty()) v.assign(static_cast<std::size_t>(st.pp), 0);
          ++v[static_cast<std::size_t>(s)];
        }
      }
  out.emplace_back("full", full);
  for (auto& [mod, v] : modules) out.emplace_back(mod, v);
  return out;
}

nlohmann::json per_layer_recompute_json(const Strategy& st) {
  if (st.per_layer_recompute.empty()) return nullptr;
  nlohmann::json j = nlohmann::json::array();
  for (const auto& c : st.per_layer_recompute) j.push_back(c.full ? nlohmann::json("full") : nlohmann::json(c.modules));
  return j;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + num(shape[i]);
  return s + "]";
}

/// "w[out,in] b[out]" from the op's parameters (full or local shapes).
std::string params_text(const Op& op, bool full) {
  std::string s;
  for (const auto& p : op.params) {
    if (!s.empty()) s += " ";
    s += (p.name == "weight" ? "w"
          : p.name == "bias" ? "b"
                             : p.name) +
         shape_text(full ? p.full_shape : p.shape);
  }
  return s;
}

/// A module tree built from op paths relative to a prefix.
struct TreeNode {
  std::string name;
  const Op* op = nullptr;  // leaf
  double param_bytes = 0;
  double act_bytes = 0;
  std::vector<TreeNode> children;
};

void insert(TreeNode& root, const std::vector<std::string>& parts, std::size_t i, const Op* op, double pbytes,
            double abytes) {
  root.param_bytes += pbytes;
  root.act_bytes += abytes;
  if (i == parts.size()) {
    root.op = op;
    return;
  }
  auto it = std::find_if(root.children.begin(), root.children.end(),
                         [&](const TreeNode& n) { return n.name == parts[i]; });
  if (it == root.children.end()) {
    root.children.push_back({parts[i], nullptr, 0, 0, {}});
    it = root.children.end() - 1;
  }
  insert(*it, parts, i + 1, op, pbytes, abytes);
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

/// Path relative to "decoder.layers.N." (layer ops) or the full path.
std::string relative_path(const Op& op) {
  if (op.layer < 0) return op.path;
  std::string pre = "decoder.layers." + num(op.layer) + ".";
  return op.path.rfind(pre, 0) == 0 ? op.path.substr(pre.size()) : op.path;
}

void render_tree(TextTable& t, const TreeNode& node, const std::string& prefix, bool last, bool root_level,
                 bool full_shapes, const std::string& act_suffix = "") {
  std::string label = root_level ? node.name : prefix + (last ? "└─" : "├─") + node.name;
  std::string shapes = node.op ? params_text(*node.op, full_shapes) : "";
  t.row({label, shapes, node.param_bytes > 0 ? mib(node.param_bytes) : "",
         node.act_bytes > 0 || node.op ? mib(node.act_bytes) + act_suffix : ""});
  std::string child_prefix = root_level ? "" : prefix + (last ? "  " : "│ ");
  for (std::size_t i = 0; i < node.children.size(); ++i)
    render_tree(t, node.children[i], child_prefix, i + 1 == node.children.size(), false, full_shapes);
}

/// Groups of layers with identical structure (dense / MoE) and the ops of one representative each.
struct LayerKind {
  std::string label;
  int count = 0;
  int representative = -1;
};

std::vector<LayerKind> layer_kinds(const ModelSpec& m) {
  std::vector<LayerKind> kinds;
  for (int l = 0; l < m.num_layers; ++l) {
    // A hybrid model's layers by their block: Mamba, attention, MLP, MoE.
    const char sym = m.layer_symbol(l);
    std::string label = sym == 'M'          ? "Mamba"
                        : sym == 'G'        ? "gated-delta-net"
                        : sym == '*'        ? "attention"
                        : sym == '-'        ? "MLP"
                        : m.is_moe_layer(l) ? "MoE"
                                            : "dense";
    if (m.is_gdn_layer(l) && sym != 'G') label += " gated-delta-net";
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const LayerKind& k) { return k.label == label; });
    if (it == kinds.end())
      kinds.push_back({label, 1, l});
    else
      ++it->count;
  }
  return kinds;
}

/// The same model and batch with no parallelism at all.
LayerGraph unparallel(const LayerGraph& g) {
  Strategy st = g.strategy;
  st.world_size = 1;
  st.gpus_per_node = 1;
  st.tp = st.pp = st.cp = st.ep = 1;
  st.etp = 0;
  st.vpp = 1;
  st.seq_split = 1;  // the whole micro batch, not a unit of the sequence pipeline
  st.sequence_parallel = false;
  st.tp_comm_overlap = false;
  st.first_stage_layers = st.last_stage_layers = -1;
  st.stage_layers.clear();
  st.chunk_layout.clear();
  st.account_for_embedding_in_pipeline_split = st.account_for_loss_in_pipeline_split = false;
  st.global_batch_size = st.micro_batch_size;
  st.dist_opt_instances = 1;  // (one rank: no partial distributed optimizer; it had failed validation)
  st.shard_group_size = 0;
  return build_layer_graph(g.model, st);
}

std::string device_list(const std::vector<int>& ranks, int gpus_per_node) {
  std::string s = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? " " : "") + device_name(ranks[i], gpus_per_node);
  return s + "]";
}

std::string render_groups(const std::string& title, const RankGroupList& groups, int gpus_per_node) {
  std::string out = num(static_cast<std::int64_t>(groups.size())) + " " + title + " groups of " +
                    num(groups.empty() ? 0 : static_cast<std::int64_t>(groups[0].size())) + ":\n";
  for (std::size_t i = 0; i < groups.size() && i < kMaxGroupsShown; ++i)
    out += "  " + device_list(groups[i], gpus_per_node) + "\n";
  if (groups.size() > kMaxGroupsShown)
    out +=
        "  … " + num(static_cast<std::int64_t>(groups.size() - kMaxGroupsShown)) + " more (all in --json)\n";
  return out;
}

const char* dim_title(ParallelDim d) {
  switch (d) {
    case ParallelDim::TP:
      return "tensor parallel (tp)";
    case ParallelDim::CP:
      return "context parallel (cp)";
    case ParallelDim::EP:
      return "expert parallel (ep)";
    case ParallelDim::ETP:
      return "expert tensor parallel (etp)";
    case ParallelDim::DP:
      return "data parallel (dp, dense grads)";
    case ParallelDim::EDP:
      return "expert data parallel (edp)";
    case ParallelDim::PP:
      return "pipeline parallel (pp)";
  }
  return "?";
}

/// Joins "stage N: text" lines, merging runs of consecutive stages with the same text.
std::string stage_lines(const std::vector<std::pair<int, std::string>>& lines) {
  std::string out;
  for (std::size_t i = 0; i < lines.size();) {
    std::size_t j = i;
    while (j + 1 < lines.size() && lines[j + 1].second == lines[i].second &&
           lines[j + 1].first == lines[j].first + 1)
      ++j;
    out +=
        j == i ? "stage " + num(lines[i].first) : "stages " + num(lines[i].first) + "–" + num(lines[j].first);
    out += ": " + lines[i].second + "\n";
    i = j + 1;
  }
  return out;
}

std::string header(const LayerGraph& g, const AnalyzeOptions& opts) {
  const ModelSpec& m = g.model;
  const Strategy& st = g.strategy;
  std::string out = "preflight analyze — " + m.name + ": " +
                    human_count(static_cast<double>(count_parameters(m))) + " parameters (" +
                    num(m.num_layers) + " layers, hidden " + num(m.hidden_size) + ", " +
                    num(m.num_attention_heads) + " heads";
  if (m.num_query_groups != m.num_attention_heads && !m.mla.enabled)
    out += " / " + num(m.num_query_groups) + " kv";
  out += ", ffn " + num(m.ffn_hidden_size) + " " + to_string(m.activation);
  if (m.moe.enabled())
    out += ", " + num(m.moe.num_experts) + " experts top-" + num(m.moe.router_topk) + " ffn " +
           num(m.moe.ffn_hidden_size);
  if (m.mla.enabled) out += ", MLA";
  out += ", vocab " + num(m.vocab_size) + " → " + num(g.padded_vocab) + ")\n";
  int nodes = (st.world_size + st.gpus_per_node - 1) / st.gpus_per_node;
  out += "run: " + num(st.world_size) + " GPUs (" + num(nodes) + " node" + (nodes > 1 ? "s" : "") + " × " +
         num(st.gpus_per_node) + ") = tp " + num(st.tp) + " × cp " + num(st.cp) + " × pp " + num(st.pp) +
         " × dp " + num(st.dp());
  if (m.moe.enabled())
    out += "; experts: ep " + num(st.ep) + " × etp " + num(st.expert_tp()) + " × edp " + num(st.expert_dp());
  if (const double imb = moe_busiest_rank_factor(m.moe, st); imb > 1) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", imb);
    out += std::string("; the busiest ep rank's experts at ") + buf +
           " × the mean routed tokens (--moe-load-imbalance)";
  }
  std::string recompute = to_string(st.recompute_granularity);
  if (!st.per_layer_recompute.empty()) {
    recompute = "per layer (layers per stage:";
    for (const auto& [what, counts] : per_stage_recompute(st, m.num_layers)) {
      recompute += " " + what + " [";
      for (std::size_t i = 0; i < counts.size(); ++i) recompute += (i ? "," : "") + num(counts[i]);
      recompute += "]";
    }
    recompute += ")";
  }
  out +=
      "\n     micro batch " + num(st.micro_batch_size) + " × " + num(st.seq_length) +
      " tokens, global batch " + num(st.global_batch()) + " → " + num(st.num_microbatches()) +
      " micro batches per iteration" +
      (st.seq_split > 1
           ? " × " + num(st.seq_split) + " sequence-pipeline units of " + num(st.seq_length / st.seq_split) +
                 " tokens (seqpipe: activations and in-flight counts below are per unit)"
           : std::string()) +
      "; " + to_string(st.precision) +
      (st.fp4()                    ? "+fp4"
       : st.fp8 != Fp8Format::None ? "+fp8"
                                   : "") +
      (st.param_bytes > 0
           ? ", parameters and gradients in " + std::string(st.param_bytes == 4 ? "fp32" : "16 bit")
           : std::string()) +
      (st.fsdp ? ", ZeRO-" + std::to_string(st.effective_zero_stage()) + " / FSDP sharding " +
                     std::string(st.effective_zero_stage() >= 3   ? "parameters, gradients and optimizer"
                                 : st.effective_zero_stage() == 2 ? "gradients and optimizer"
                                 : st.effective_zero_stage() == 1 ? "the optimizer"
                                                                  : "nothing") +
                     " over dp"
       : st.optimizer == Optimizer::Muon
           ? std::string(", Muon") +
                 (st.muon.layer_wise ? (st.muon.param_layout ? " with the layer-wise distributed optimizer"
                                                             : " with the layer-wise distributed optimizer's "
                                                               "ping-pong deal of whole parameters")
                                     : "")
       : st.distributed_optimizer ? ", distributed optimizer"
                                  : "") +
      (st.shard_weights ? ", weights and optimizer sharded over " +
                              (st.dense_shard_group() == st.dp() * st.cp
                                   ? std::string(st.cp > 1 ? "dp·cp" : "dp")
                                   : num(st.dense_shard_group()) + " of the dp·cp replicas")
                        : std::string()) +
      (st.sequence_parallel && st.tp > 1 ? ", sequence parallel" : "") + ", recompute " + recompute + ", " +
      to_string(st.attention_backend) + " attention, " +
      (st.vpp > 1 ? "interleaved 1F1B (vpp " + num(st.vpp) + ")" : std::string("1F1B")) + "\n";
  for (const auto& w : opts.warnings) out += "note: " + w + "\n";
  return out;
}

std::string full_model_section(const LayerGraph& g) {
  LayerGraph u = unparallel(g);
  const Strategy& st = u.strategy;
  double wbytes = st.element_bytes();
  std::string out =
      "\n*** Full model without parallelism (activations of one micro batch: " + num(st.micro_batch_size) +
      " × " + num(st.seq_length) + " tokens) ***\n";
  TextTable t;
  t.column("module").column("parameter shapes").column("params MiB", A::Right).column("act MiB", A::Right);
  const StageGraph& c = u.chunks.front();
  // One tree per section; a section holding a single op (final norm, output layer, loss) is that op.
  auto add_ops = [&](const std::string& name, auto pred, const std::string& suffix) {
    TreeNode root{name, nullptr, 0, 0, {}};
    for (const Op& op : c.ops) {
      if (!pred(op)) continue;
      std::vector<std::string> parts = split_path(relative_path(op));
      if (op.layer < 0 && op.path.rfind(name + ".", 0) == 0)
        parts = split_path(op.path.substr(name.size() + 1));  // mtp.layers.K.…: the tree below it
      else if (op.layer < 0)
        parts = op.path == name ? std::vector<std::string>{} : std::vector<std::string>{parts.back()};
      insert(root, parts, 0, &op, static_cast<double>(op.param_numel()) * wbytes,
             static_cast<double>(op.kept_bytes));
    }
    if (root.op && root.op->kind == OpKind::LinearColumn && root.op->params.empty())
      root.name += " (tied to word_embeddings)";
    if (root.op || !root.children.empty()) render_tree(t, root, "", true, true, true, suffix);
  };
  add_ops(
      "embedding", [](const Op& op) { return op.layer < 0 && op.path.rfind("embedding", 0) == 0; }, "");
  for (const LayerKind& k : layer_kinds(u.model)) {
    std::string name = "decoder.layers × " + num(k.count) +
                       (u.model.moe.enabled() || u.model.hybrid() ? " (" + k.label + ")" : "");
    add_ops(
        name, [&](const Op& op) { return op.layer == k.representative; }, "/layer");
  }
  for (const char* edge : {"decoder.final_layernorm", "output_layer", "loss"})
    add_ops(
        edge, [&](const Op& op) { return op.path == edge; }, "");
  for (int k = 0; k < u.model.mtp_num_layers; ++k) {
    std::string name = "mtp.layers." + num(k);
    add_ops(
        name, [&](const Op& op) { return op.path.rfind(name + ".", 0) == 0; }, "");
  }
  out += t.render();

  MemoryReport mem = stage_memory(u);
  const StageMemory& s = mem.stages[0];
  BytesPerParam bpp = bytes_per_param(st);
  // LoRA: the frozen base weights have no gradient and no optimizer state.
  const std::int64_t trainable = s.trained_dense_params() + s.trained_expert_params();
  out +=
      "parameters: " + with_commas(s.params) +
      (s.frozen_params > 0 ? " (" + with_commas(trainable) + " trained: the LoRA adapters; the rest frozen)"
                           : "") +
      "\n";
  // Muon's matrices keep bpp.muon_optimizer bytes each, the other parameters the scalar optimizer's.
  const double matrices = static_cast<double>(s.muon_params + s.muon_expert_params);
  const double states =
      (static_cast<double>(trainable) - matrices) * bpp.optimizer + matrices * bpp.muon_optimizer;
  out += "weights: " + gib(s.weight_bytes) + " GiB (" + fixed(bpp.weight, 0) +
         " B/param), gradients: " + gib(s.grad_bytes) + " GiB (" + fixed(bpp.grad, 0) +
         " B/param), optimizer states: " + gib(states) + " GiB (" +
         (st.optimizer == Optimizer::Muon
              ? fixed(bpp.muon_optimizer, 0) + " B/param of Muon's " +
                    with_commas(static_cast<std::int64_t>(matrices)) + " matrix elements, " +
                    fixed(bpp.optimizer, 0) + " B/param of the rest"
              : fixed(bpp.optimizer, 0) + " B/param") +
         ", unsharded)\n";
  out += "activations of one micro batch: " + gib(s.activation_bytes_per_microbatch) +
         " GiB; total on one device: " +
         gib(s.weight_bytes + s.grad_bytes + states + s.activation_bytes_per_microbatch) + " GiB\n";
  return out;
}

std::string comm_summary_section(const LayerGraph& g, const CommReport& comm) {
  std::string out =
      "\n*** Cluster communication per iteration (all " + num(g.strategy.world_size) + " GPUs) ***\n";
  TextTable t;
  t.column("dimension").column("operations", A::Right).column("volume GiB", A::Right);
  CommVolume all;
  for (const auto& [dim, v] : comm.cluster_per_iteration) {
    if (v.count == 0) continue;
    t.row({dim_title(dim), with_commas(static_cast<std::int64_t>(v.count)), gib(v.bytes)});
    all += v;
  }
  t.rule();
  t.row({"all", with_commas(static_cast<std::int64_t>(all.count)), gib(all.bytes)});
  out += t.render();
  out += "volume = payload bytes of each collective on each rank (the buffer reduced or gathered), summed\n";
  return out;
}

std::string memory_section(const LayerGraph& g, const MemoryReport& mem, const AnalyzeOptions& opts) {
  std::string out = "\n*** Memory on each GPU, by pipeline stage ***\n";
  TextTable t;
  t.column("stage").column("layers", A::Right).column("params", A::Right).column("weights GiB", A::Right);
  t.column("grads GiB", A::Right).column("optimizer GiB", A::Right).column("act/micro batch GiB", A::Right);
  t.column("in flight", A::Right).column("activations GiB", A::Right).column("total GiB", A::Right);
  t.column("peak GiB", A::Right).column("peak at");
  std::vector<PeakPoint> peaks;
  int largest = 0;
  auto need = [&](std::size_t i) { return std::max(mem.stages[i].total_bytes(), peaks[i].bytes); };
  for (const auto& s : mem.stages) peaks.push_back(stage_peak(g, s.pp_rank));
  for (std::size_t i = 1; i < mem.stages.size(); ++i)
    if (need(i) > need(static_cast<std::size_t>(largest))) largest = static_cast<int>(i);
  for (std::size_t i = 0; i < mem.stages.size(); ++i) {
    const auto& s = mem.stages[i];
    std::string layers = s.num_layers == 0 ? "0" : num(s.num_layers);
    const PeakPoint& p = peaks[i];
    std::string at = p.phase + (p.op.empty() ? "" : " " + p.op);
    t.row({num(s.pp_rank) + (static_cast<int>(i) == largest ? " *" : ""), layers, with_commas(s.params),
           gib(s.weight_bytes), gib(s.grad_bytes), gib(s.optimizer_bytes),
           gib(s.activation_bytes_per_microbatch),
           fixed(s.inflight_microbatches,
                 s.inflight_microbatches == static_cast<int>(s.inflight_microbatches) ? 0 : 2),
           gib(s.activation_bytes), gib(s.total_bytes()), gib(p.bytes), at});
  }
  out += t.render();
  const double top = need(static_cast<std::size_t>(largest));
  out += "largest: stage " + num(mem.stages[static_cast<std::size_t>(largest)].pp_rank) + " with " + gib(top) +
         " GiB";
  if (opts.device_memory_gib) {
    double limit = *opts.device_memory_gib * kGiB;
    out += top <= limit ? " — fits in " : " — DOES NOT FIT in ";
    out += fixed(*opts.device_memory_gib, 1) + " GiB";
    int over = 0;
    for (std::size_t i = 0; i < mem.stages.size(); ++i) over += need(i) > limit ? 1 : 0;
    if (over > 0)
      out += " (" + num(over) + " of " + num(static_cast<std::int64_t>(mem.stages.size())) + " stages over)";
  }
  double buffers = 0;
  for (const auto& s : mem.stages) buffers = std::max(buffers, s.buffer_bytes);
  // --defer-embedding-wgrad-compute: what the last stage holds for its deferred output-layer weight
  // gradients.
  std::string deferred;
  if (const int calls = g.strategy.deferred_output_wgrads(g.model.mtp_num_layers); calls > 0)
    deferred = ", the last stage's including " + num(calls) +
               " deferred output-layer wgrad inputs and output gradients (--defer-embedding-wgrad-compute)";
  out +=
      "\n(* = largest stage; in flight = micro batches whose activations are alive at the peak, " +
      std::string(g.strategy.vpp > 1 ? "interleaved schedule"
                  : g.strategy.seq_split > 1
                      ? "sequence pipeline: min(pp − stage + units per micro batch − 1, units)"
                      : "1F1B: min(pp − stage, micro batches)") +
      "; total = weights + grads + optimizer + activations" +
      (buffers > 0 ? " + runtime buffers (up to " + mib(buffers) + " MiB" + deferred + ")" : std::string()) +
      (g.strategy.offload_optimizer_states
           ? ", the optimizer's bytes only at the step, without activations (--offload-optimizer-states)"
           : std::string()) +
      "; peak = the highest allocated memory along the schedule, transients included (what Megatron's "
      "`max allocated` reports), and where it falls; not counted: allocator fragmentation, CUDA context, "
      "NCCL buffers)\n";
  return out;
}

std::vector<int> stage_ranks(const RankGroups& groups, int stage) {
  std::vector<int> r;
  for (const auto& g : groups.pp) r.push_back(g[stage]);
  std::sort(r.begin(), r.end());
  return r;
}

std::string compress_devices(const std::vector<int>& ranks, int gpus_per_node) {
  if (ranks.size() <= 16) return device_list(ranks, gpus_per_node);
  std::vector<int> head(ranks.begin(), ranks.begin() + 8);
  std::string s = device_list(head, gpus_per_node);
  s.pop_back();
  return s + " … " + device_name(ranks.back(), gpus_per_node) + "] (" +
         num(static_cast<std::int64_t>(ranks.size())) + " GPUs)";
}

std::string pipeline_section(const LayerGraph& g, const CommReport& comm, const RankGroups& groups) {
  const Strategy& st = g.strategy;
  std::string out = "\n*** Pipeline parallel communication ***\n";
  std::int64_t act = 0;
  for (const auto& c : g.chunks)
    if (!c.p2p.empty()) act = c.p2p.front().bytes;
  std::int64_t s_loc = st.seq_length / st.cp / (st.sequence_parallel && st.tp > 1 ? st.tp : 1);
  out += "each send/recv: activations or gradients of shape [" + num(s_loc) + "," + num(st.micro_batch_size) +
         "," + num(g.model.hidden_size) + "] = " + mib(static_cast<double>(act)) +
         " MiB; isend/irecv between neighbouring stages\n";
  TextTable t;
  t.column("stage").column("layers").column("devices").column("p2p/micro batch", A::Right);
  t.column("p2p/iteration", A::Right).column("volume/iteration GiB", A::Right);
  for (int r = 0; r < st.pp; ++r) {
    std::string layers;
    for (const StageGraph* c : g.stage(r)) {
      if (!layers.empty()) layers += ", ";
      layers +=
          c->num_layers == 0 ? "none" : num(c->first_layer) + "–" + num(c->first_layer + c->num_layers - 1);
    }
    const StageComm& sc = comm.stages[r];
    auto mb = sc.per_microbatch.count(ParallelDim::PP) ? sc.per_microbatch.at(ParallelDim::PP) : CommVolume{};
    auto it = sc.per_iteration.count(ParallelDim::PP) ? sc.per_iteration.at(ParallelDim::PP) : CommVolume{};
    t.row({num(r), layers, compress_devices(stage_ranks(groups, r), st.gpus_per_node), fixed(mb.count, 0),
           with_commas(static_cast<std::int64_t>(it.count)), gib(it.bytes)});
  }
  out += t.render();
  out += render_groups("pipeline parallel", groups.pp, st.gpus_per_node);
  return out;
}

std::string data_parallel_section(const LayerGraph& g, const CommReport& comm, const RankGroups& groups,
                                  const MemoryReport& mem) {
  const Strategy& st = g.strategy;
  BytesPerParam bpp = bytes_per_param(st);
  std::string out = "\n*** Data parallel communication (once per iteration, after " +
                    num(st.num_microbatches()) + " micro batches) ***\n";
  if (st.fsdp && st.effective_zero_stage() >= 2)
    out += "FSDP: the gradient reduce-scatter runs every micro batch" +
           std::string(st.effective_zero_stage() >= 3
                           ? ", and each layer's parameters are all-gathered for its forward "
                             "and again for its backward"
                           : "") +
           " (the table gives one of each)\n";
  TextTable t;
  t.column("stage").column("parameters", A::Right).column("gradient sync").column("GiB/GPU", A::Right);
  t.column("parameter gather").column("GiB/GPU", A::Right);
  for (const auto& s : mem.stages) {
    // Trained parameters only (LoRA's frozen base weights are neither reduced nor gathered).
    const std::int64_t trained = s.trained_dense_params();
    double dense = static_cast<double>(trained);
    // Muon's legacy layer-wise deal all-reduces the gradients before it gathers the updated parameters.
    const bool all_reduce =
        !st.distributed_optimizer || (st.optimizer == Optimizer::Muon && !st.muon.param_layout);
    std::string sync = to_string(all_reduce ? Collective::AllReduce : Collective::ReduceScatter);
    t.row({num(s.pp_rank), with_commas(trained), sync + " (" + fixed(bpp.grad, 0) + " B/grad)",
           gib(dense * bpp.grad), st.distributed_optimizer ? to_string(Collective::AllGather) : "—",
           st.distributed_optimizer ? gib(dense * bpp.weight) : "—"});
  }
  out += t.render();
  (void)comm;
  out += render_groups(st.cp > 1 ? "data parallel (with context parallel, dp·cp)" : "data parallel",
                       st.cp > 1 ? groups.dp_cp : groups.dp, st.gpus_per_node);
  return out;
}

std::string comm_cell(const Op& op, Pass pass) {
  std::string s;
  for (const auto& c : op.comms) {
    if (c.pass != pass || c.group != ParallelDim::TP) continue;
    if (!s.empty()) s += " + ";
    s += std::string(to_string(c.kind)) + " " + mib(static_cast<double>(c.bytes)) +
         (c.count > 1 ? "×" + num(c.count) : "");
  }
  return s;
}

std::string tensor_parallel_section(const LayerGraph& g, const CommReport& comm, const RankGroups& groups) {
  const Strategy& st = g.strategy;
  double wbytes = st.element_bytes();
  std::string out = "\n*** Tensor parallel: one layer on one GPU (tp " + num(st.tp) +
                    (st.sequence_parallel ? ", sequence parallel" : "") + "), per micro batch ***\n";
  TextTable t;
  t.column("module")
      .column("local parameter shapes")
      .column("params MiB", A::Right)
      .column("act MiB", A::Right);
  t.column("forward comm (MiB)").column("backward comm (MiB)");
  std::set<int> shown_layers;
  std::vector<LayerKind> kinds = layer_kinds(g.model);
  for (const auto& chunk : g.chunks) {
    for (const Op& op : chunk.ops) {
      bool representative = false;
      for (const auto& k : kinds) representative = representative || op.layer == k.representative;
      bool edge = op.layer < 0 && (chunk.has_embedding || chunk.has_output_layer);
      if (!representative && !edge) continue;
      if (op.layer < 0 && op.kind == OpKind::PositionEmbedding) continue;
      std::string label = op.layer >= 0 ? "layer " + num(op.layer) + " " + relative_path(op) : op.path;
      t.row({label, params_text(op, false),
             op.param_numel() ? mib(static_cast<double>(op.param_numel()) * wbytes) : "",
             mib(static_cast<double>(op.kept_bytes)), comm_cell(op, Pass::Forward),
             comm_cell(op, Pass::Backward)});
    }
  }
  out += t.render();
  std::vector<std::pair<int, std::string>> lines;
  for (const auto& sc : comm.stages) {
    auto it = sc.per_iteration.find(ParallelDim::TP);
    auto mb = sc.per_microbatch.find(ParallelDim::TP);
    if (it == sc.per_iteration.end()) continue;
    lines.push_back({sc.pp_rank, "per micro batch " + fixed(mb->second.count, 0) + " ops, " +
                                     gib(mb->second.bytes) + " GiB; per iteration " +
                                     with_commas(static_cast<std::int64_t>(it->second.count)) + " ops, " +
                                     gib(it->second.bytes) + " GiB on each GPU"});
  }
  out += stage_lines(lines);
  out += render_groups("tensor parallel", groups.tp, st.gpus_per_node);
  return out;
}

std::string dim_section(const std::string& title, ParallelDim dim, const LayerGraph& g,
                        const CommReport& comm, const RankGroupList& groups) {
  std::string out = "\n*** " + title + " ***\n";
  std::map<std::string, std::pair<double, double>> by_op;  // relative op → (count, bytes) per micro batch
  for (const auto& chunk : g.chunks) {
    if (chunk.pp_rank != 0 && dim != ParallelDim::PP) continue;
    for (const Op& op : chunk.ops)
      for (const auto& c : op.comms)
        if (c.group == dim) {
          auto& e = by_op[relative_path(op) + " " + (c.pass == Pass::Forward ? "fwd " : "bwd ") +
                          to_string(c.kind)];
          e.first += c.count;
          e.second += static_cast<double>(c.bytes) * c.count;
        }
  }
  TextTable t;
  t.column("op (stage 0, summed over its layers)")
      .column("ops/micro batch", A::Right)
      .column("MiB/micro batch", A::Right);
  for (const auto& [k, v] : by_op) t.row({k, fixed(v.first, 0), mib(v.second)});
  out += t.render();
  std::vector<std::pair<int, std::string>> lines;
  for (const auto& sc : comm.stages) {
    auto it = sc.per_iteration.find(dim);
    if (it == sc.per_iteration.end()) continue;
    lines.push_back({sc.pp_rank, "per iteration " + with_commas(static_cast<std::int64_t>(it->second.count)) +
                                     " ops, " + gib(it->second.bytes) + " GiB on each GPU"});
  }
  out += stage_lines(lines);
  out += render_groups(title.substr(0, title.find(' ')) == "Context" ? "context parallel" : "expert parallel",
                       groups, g.strategy.gpus_per_node);
  return out;
}

nlohmann::json volume_json(const CommVolume& v) {
  return {{"count", v.count}, {"bytes", v.bytes}};
}

nlohmann::json op_json(const Op& op) {
  nlohmann::json j = {{"path", op.path},
                      {"kind", to_string(op.kind)},
                      {"layer", op.layer},
                      {"params", op.param_numel()},
                      {"saved_bytes", op.saved_bytes()},
                      {"kept_bytes", op.kept_bytes},
                      {"recompute", op.recompute},
                      {"fwd_flops", op.fwd_flops},
                      {"bwd_flops", op.bwd_input_flops + op.bwd_weight_flops}};
  for (const auto& p : op.params) j["param_shapes"][p.name] = {{"local", p.shape}, {"full", p.full_shape}};
  for (const auto& s : op.saved) j["saved"][s.name] = s.bytes;
  j["kept"] = nlohmann::json::array();
  for (const auto& t : op.kept) {
    j["kept"].push_back({{"name", t.name}, {"bytes", t.bytes}, {"input", t.is_input}});
    if (!t.allocated_by.empty()) j["kept"].back()["allocated_by"] = t.allocated_by;
  }
  for (const auto& c : op.comms)
    j["comms"].push_back({{"kind", to_string(c.kind)},
                          {"group", to_string(c.group)},
                          {"pass", c.pass == Pass::Forward ? "forward" : "backward"},
                          {"bytes", c.bytes},
                          {"count", c.count}});
  return j;
}

nlohmann::json groups_json(const RankGroupList& groups, int gpus_per_node) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& g : groups) {
    nlohmann::json names = nlohmann::json::array();
    for (int r : g) names.push_back(device_name(r, gpus_per_node));
    j.push_back(names);
  }
  return j;
}

}  // namespace

std::string render_analysis_text(const LayerGraph& graph, const AnalyzeOptions& opts) {
  const Strategy& st = graph.strategy;
  MemoryReport mem = stage_memory(graph);
  CommReport comm = communication(graph);
  RankGroups groups = megatron_rank_groups(st, graph.model.moe.enabled());
  std::string out = header(graph, opts);
  out += full_model_section(graph);
  out += comm_summary_section(graph, comm);
  out += memory_section(graph, mem, opts);
  if (st.pp > 1) out += pipeline_section(graph, comm, groups);
  if (st.dp() * st.cp > 1 || (graph.model.moe.enabled() && st.expert_dp() > 1))
    out += data_parallel_section(graph, comm, groups, mem);
  if (st.tp > 1) out += tensor_parallel_section(graph, comm, groups);
  if (st.cp > 1)
    out += dim_section("Context parallel communication", ParallelDim::CP, graph, comm, groups.cp);
  if (graph.model.moe.enabled() && st.ep > 1)
    out += dim_section("Expert parallel communication", ParallelDim::EP, graph, comm, groups.ep);
  return out;
}

nlohmann::json model_json(const ModelSpec& m, std::int64_t padded_vocab) {
  nlohmann::json j = {{"name", m.name},
                      {"num_layers", m.num_layers},
                      {"hidden_size", m.hidden_size},
                      {"ffn_hidden_size", m.ffn_hidden_size},
                      {"num_attention_heads", m.num_attention_heads},
                      {"num_query_groups", m.num_query_groups},
                      {"kv_channels", m.kv_channels},
                      {"max_position_embeddings", m.max_position_embeddings},
                      {"vocab_size", m.vocab_size},
                      {"padded_vocab_size", padded_vocab},
                      {"activation", to_string(m.activation)},
                      {"add_bias_linear", m.add_bias_linear},
                      {"add_qkv_bias", m.add_qkv_bias},
                      {"qk_layernorm", m.qk_layernorm},
                      {"mtp_num_layers", m.mtp_num_layers},
                      {"normalization", to_string(m.normalization)},
                      {"untie_embeddings_and_output_weights", m.untie_embeddings_and_output_weights},
                      {"position_embedding", to_string(m.position_embedding)},
                      {"attention_dropout", m.attention_dropout},
                      {"hidden_dropout", m.hidden_dropout},
                      {"parameters", count_parameters(m)}};
  if (m.moe.enabled()) {
    j["moe"] = {{"num_experts", m.moe.num_experts},
                {"router_topk", m.moe.router_topk},
                {"ffn_hidden_size", m.moe.ffn_hidden_size},
                {"shared_expert_ffn_hidden_size", m.moe.shared_expert_ffn_hidden_size}};
  }
  if (m.lora.enabled()) {  // LoRA fine-tuning: the adapters' rank and targets
    j["lora"] = {{"rank", m.lora.rank}, {"target_modules", m.lora.targets()}};
  }
  if (m.mla.enabled) {
    j["mla"] = {{"q_lora_rank", m.mla.q_lora_rank},
                {"kv_lora_rank", m.mla.kv_lora_rank},
                {"qk_head_dim", m.mla.qk_head_dim},
                {"qk_pos_emb_head_dim", m.mla.qk_pos_emb_head_dim},
                {"v_head_dim", m.mla.v_head_dim}};
  }
  return j;
}

nlohmann::json strategy_json(const Strategy& st) {
  return {{"world_size", st.world_size},
          {"gpus_per_node", st.gpus_per_node},
          {"tp", st.tp},
          {"pp", st.pp},
          {"cp", st.cp},
          {"ep", st.ep},
          {"etp", st.expert_tp()},
          {"dp", st.dp()},
          {"expert_dp", st.expert_dp()},
          {"moe_load_imbalance", st.moe_load_imbalance},
          {"vpp", st.vpp},
          {"sequence_parallel", st.sequence_parallel},
          {"order", st.order},
          {"seq_length", st.seq_length},
          {"micro_batch_size", st.micro_batch_size},
          {"global_batch_size", st.global_batch()},
          {"num_microbatches", st.num_microbatches()},
          {"precision", to_string(st.precision)},
          {"fp8", st.fp8 != Fp8Format::None},
          {"distributed_optimizer", st.distributed_optimizer},
          {"fsdp", st.fsdp},
          {"zero_stage", st.effective_zero_stage()},
          {"recompute_granularity", to_string(st.recompute_granularity)},
          {"recompute_method", to_string(st.recompute_method)},
          {"recompute_num_layers", st.recompute_num_layers},
          {"per_layer_recompute", per_layer_recompute_json(st)},
          {"param_bytes", st.param_bytes},
          {"shard_weights", st.shard_weights},
          {"vocab_parallel", st.vocab_parallel},
          {"attention_backend", to_string(st.attention_backend)},
          {"transformer_impl", to_string(st.transformer_impl)}};
}

nlohmann::json analysis_json(const LayerGraph& graph, const AnalyzeOptions& opts) {
  const Strategy& st = graph.strategy;
  nlohmann::json j;
  MemoryReport mem = stage_memory(graph);
  CommReport comm = communication(graph);
  RankGroups groups = megatron_rank_groups(st, graph.model.moe.enabled());
  j["model"] = model_json(graph.model, graph.padded_vocab);
  j["strategy"] = strategy_json(st);
  j["warnings"] = opts.warnings;

  LayerGraph u = unparallel(graph);
  MemoryReport umem = stage_memory(u);
  BytesPerParam bpp = bytes_per_param(st);
  nlohmann::json full;
  for (const Op& op : u.chunks.front().ops) {
    bool keep = op.layer < 0;
    for (const auto& k : layer_kinds(u.model)) keep = keep || op.layer == k.representative;
    if (keep) full["ops"].push_back(op_json(op));
  }
  full["parameters"] = umem.stages[0].params;
  full["weight_bytes"] = umem.stages[0].weight_bytes;
  full["grad_bytes"] = umem.stages[0].grad_bytes;
  full["optimizer_bytes"] = static_cast<double>(umem.stages[0].params) * bpp.optimizer;
  full["activation_bytes_per_microbatch"] = umem.stages[0].activation_bytes_per_microbatch;
  full["bytes_per_param"] = {{"weight", bpp.weight}, {"grad", bpp.grad}, {"optimizer", bpp.optimizer}};
  j["full_model"] = full;

  for (const auto& s : mem.stages) {
    j["memory"]["stages"].push_back({{"stage", s.pp_rank},
                                     {"first_layer", s.first_layer},
                                     {"layers", s.num_layers},
                                     {"params", s.params},
                                     {"expert_params", s.expert_params},
                                     {"weight_bytes", s.weight_bytes},
                                     {"grad_bytes", s.grad_bytes},
                                     {"optimizer_bytes", s.optimizer_bytes},
                                     {"activation_bytes_per_microbatch", s.activation_bytes_per_microbatch},
                                     {"inflight_microbatches", s.inflight_microbatches},
                                     {"activation_bytes", s.activation_bytes},
                                     {"total_bytes", s.total_bytes()}});
    PeakPoint pk = stage_peak(graph, s.pp_rank);
    j["memory"]["stages"].back()["peak"] = {{"bytes", pk.bytes},
                                            {"static_bytes", pk.static_bytes},
                                            {"activation_bytes", pk.activation_bytes},
                                            {"transient_bytes", pk.transient_bytes},
                                            {"phase", pk.phase},
                                            {"op", pk.op}};
  }
  j["memory"]["peak_stage"] = mem.peak_stage;
  j["memory"]["peak_bytes"] = mem.stages[mem.peak_stage].total_bytes();
  if (opts.device_memory_gib) {
    j["memory"]["device_memory_bytes"] = *opts.device_memory_gib * kGiB;
    j["memory"]["fits"] = analysis_fits(graph, opts);
  }

  for (const auto& [dim, v] : comm.cluster_per_iteration)
    j["communication"]["cluster_per_iteration"][to_string(dim)] = volume_json(v);
  for (const auto& sc : comm.stages) {
    nlohmann::json s = {{"stage", sc.pp_rank}};
    for (const auto& [dim, v] : sc.per_microbatch) s["per_microbatch"][to_string(dim)] = volume_json(v);
    for (const auto& [dim, v] : sc.per_iteration) s["per_iteration"][to_string(dim)] = volume_json(v);
    j["communication"]["stages"].push_back(s);
  }
  for (const auto& chunk : graph.chunks) {
    nlohmann::json c = {{"stage", chunk.pp_rank},
                        {"vchunk", chunk.vchunk},
                        {"first_layer", chunk.first_layer},
                        {"layers", chunk.num_layers},
                        {"has_embedding", chunk.has_embedding},
                        {"has_output_layer", chunk.has_output_layer},
                        {"activation_bytes_per_microbatch", chunk.kept_activation_bytes()}};
    c["ops"] = nlohmann::json::array();
    for (const Op& op : chunk.ops) c["ops"].push_back(op_json(op));
    j["chunks"].push_back(c);
  }
  int gpn = st.gpus_per_node;
  j["groups"] = {{"tp", groups_json(groups.tp, gpn)},
                 {"pp", groups_json(groups.pp, gpn)},
                 {"dp", groups_json(groups.dp, gpn)},
                 {"cp", groups_json(groups.cp, gpn)},
                 {"dp_cp", groups_json(groups.dp_cp, gpn)}};
  if (graph.model.moe.enabled()) {
    j["groups"]["ep"] = groups_json(groups.ep, gpn);
    j["groups"]["etp"] = groups_json(groups.etp, gpn);
    j["groups"]["edp"] = groups_json(groups.edp, gpn);
  }
  if (!groups.embedding.empty()) j["groups"]["embedding"] = groups_json(groups.embedding, gpn);
  return j;
}

bool analysis_fits(const LayerGraph& graph, const AnalyzeOptions& opts) {
  if (!opts.device_memory_gib) return true;
  MemoryReport mem = stage_memory(graph);
  for (const auto& s : mem.stages)
    if (std::max(s.total_bytes(), stage_peak(graph, s.pp_rank).bytes) > *opts.device_memory_gib * kGiB)
      return false;
  return true;
}

}  // namespace preflight::analyzer
