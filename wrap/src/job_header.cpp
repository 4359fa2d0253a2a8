// Batch job headers other than SLURM's (PBS, Grid Engine, PJM): the allocation's variables outside it.
#include "preflight/wrap/job_header.hpp"

#include <algorithm>
#include <optional>

#include "launch_words.hpp"
#include "preflight/common/error.hpp"
#include "preflight/wrap/shell_lexer.hpp"

namespace preflight::wrap {

namespace {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  for (std::size_t start = 0; start <= s.size();) {
    std::size_t at = s.find(sep, start);
    if (at == std::string_view::npos) at = s.size();
    out.emplace_back(s.substr(start, at - start));
    start = at + 1;
  }
  return out;
}

/// The words of every `directive` line of `script` (a directive line is the directive and a blank; a line
/// the shell lexer cannot split is skipped), in order.
std::vector<std::string> directive_words(std::string_view script, std::string_view directive) {
  std::vector<std::string> words;
  for (std::size_t pos = 0; pos < script.size();) {
    std::size_t eol = script.find('\n', pos);
    std::string_view line =
        script.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? script.size() : eol + 1;
    if (!line.starts_with(directive) || line.size() <= directive.size() ||
        (line[directive.size()] != ' ' && line[directive.size()] != '\t'))
      continue;
    try {
      for (std::string& w : split_shell_words(line.substr(directive.size()), std::string(directive)))
        words.push_back(std::move(w));
    } catch (const InputError&) {
    }
  }
  return words;
}

/// The values of option `name` (`-l X`, `-lX`), in order.
std::vector<std::string> option_values(const std::vector<std::string>& words, std::string_view name) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i] == name && i + 1 < words.size())
      out.push_back(words[++i]);
    else if (name.size() == 2 && words[i].size() > 2 && words[i].starts_with(name))
      out.push_back(words[i].substr(2));
  }
  return out;
}

std::string plural(int n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

/// PBS Pro `select=N:ncpus=..:ngpus=G:mpiprocs=M[+…]`, Torque `nodes=N:ppn=P[:gpus=G]`.
BatchJob pbs(const std::vector<std::string>& words) {
  BatchJob job;
  int nodes = 0, per_node = 1;
  std::string said;
  for (const std::string& value : option_values(words, "-l")) {
    for (const std::string& resource : split(value, ',')) {
      const bool select = resource.starts_with("select="), torque = resource.starts_with("nodes=");
      if (!select && !torque) continue;
      const std::string spec = resource.substr(resource.find('=') + 1);
      int total = 0, first_per_node = 1;
      bool ok = true;
      const auto chunks = split(spec, '+');
      for (std::size_t c = 0; c < chunks.size() && ok; ++c) {
        const auto parts = split(chunks[c], ':');
        int n = 1;
        std::size_t k = 0;
        if (const auto number = detail::positive_count(parts[0])) {
          n = *number;
          k = 1;
        } else if (torque || parts[0].find('=') == std::string::npos) {
          ok = false;  // a host name or a variable
          break;
        }
        for (; k < parts.size(); ++k) {
          const std::string& p = parts[k];
          const std::string key = p.substr(0, p.find('='));
          if ((select && key == "mpiprocs") || (torque && key == "ppn")) {
            if (const auto m = detail::positive_count(p.substr(p.find('=') + 1)); m && c == 0)
              first_per_node = *m;
          }
        }
        total += n;
      }
      if (!ok || total == 0) continue;
      nodes = total;
      per_node = first_per_node;
      said = resource;
    }
  }
  if (nodes == 0) return job;
  job.directive = "#PBS";
  job.summary = plural(nodes, "node", "nodes") + " (#PBS -l " + said + "), " +
                plural(per_node, "process", "processes") + " a node in $PBS_NODEFILE";
  job.variables = {{"PBS_JOBID", "1.preflight"},
                   {"PBS_ENVIRONMENT", "PBS_BATCH"},
                   {"PBS_NUM_NODES", std::to_string(nodes)},
                   {"PBS_NUM_PPN", std::to_string(per_node)},
                   {"PBS_NP", std::to_string(nodes * per_node)}};
  if (const auto name = option_values(words, "-N"); !name.empty())
    job.variables.push_back({"PBS_JOBNAME", name.back()});
  job.workdir_variables = {"PBS_O_WORKDIR"};
  job.host_files = {{"PBS_NODEFILE", nodes, per_node, ""}};
  return job;
}

/// Grid Engine: `-l rt_AF=N` (ABCI), `-l node_f=N` (TSUBAME) give N hosts; `-pe NAME SLOTS` the slots.
BatchJob grid_engine(const std::vector<std::string>& words) {
  BatchJob job;
  int hosts = 0, slots = 0;
  std::string resource_type, said;
  for (const std::string& value : option_values(words, "-l")) {
    for (const std::string& resource : split(value, ',')) {
      const auto eq = resource.find('=');
      if (eq == std::string::npos) continue;
      const std::string name = resource.substr(0, eq);
      const auto n = detail::positive_count(resource.substr(eq + 1));
      if (!n) continue;
      if (name.starts_with("rt_")) {  // ABCI's resource types: each one a host (rt_F, rt_AF whole nodes)
        hosts = *n;
        resource_type = name;
        said = resource;
      } else if (name.starts_with("node_") || name.starts_with("gpu_")) {  // TSUBAME's
        hosts = *n;
        said = resource;
      }
    }
  }
  for (std::size_t i = 0; i + 2 < words.size(); ++i)
    if (words[i] == "-pe")
      if (const auto n = detail::positive_count(words[i + 2])) slots = *n;
  if (hosts == 0 && slots == 0) return job;
  job.directive = "#$";
  job.variables = {{"JOB_ID", "1"}};
  if (const auto name = option_values(words, "-N"); !name.empty())
    job.variables.push_back({"JOB_NAME", name.back()});
  if (hosts > 0) {
    job.variables.push_back({"NHOSTS", std::to_string(hosts)});
    job.summary = plural(hosts, "host", "hosts") + " (#$ -l " + said + ")";
  }
  if (slots > 0) {
    job.variables.push_back({"NSLOTS", std::to_string(slots)});
    job.summary += (job.summary.empty() ? "" : ", ") + plural(slots, "slot", "slots") + " (#$ -pe)";
  }
  if (!resource_type.empty()) job.variables.push_back({"SGE_RESOURCE_TYPE", resource_type});
  job.workdir_variables = {"SGE_O_WORKDIR"};
  if (hosts > 0) {
    const int per_host = slots >= hosts && slots % hosts == 0 ? slots / hosts : 1;
    job.host_files.push_back(
        {"PE_HOSTFILE", hosts, 1, " " + std::to_string(per_host) + " preflight.q UNDEFINED"});
    if (!resource_type.empty()) job.host_files.push_back({"SGE_JOB_HOSTLIST", hosts, 1, ""});
  }
  return job;
}

/// PJM: `-L node=N` (or a shape `AxBxC`), `--mpi proc=P`.
BatchJob pjm(const std::vector<std::string>& words) {
  BatchJob job;
  int nodes = 0, procs = 0;
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] != "-L" && words[i] != "--rsc-list" && words[i] != "--mpi") continue;
    for (const std::string& item : split(words[i + 1], ',')) {
      const auto eq = item.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
      if (words[i] != "--mpi" && key == "node") {
        int product = 1;
        bool ok = true;
        for (const std::string& d : split(value, 'x')) {
          const auto n = detail::positive_count(d);
          ok = ok && n.has_value();
          if (n) product *= *n;
        }
        if (ok) nodes = product;
      } else if (words[i] == "--mpi" && key == "proc") {
        if (const auto n = detail::positive_count(value)) procs = *n;
      }
    }
  }
  if (nodes == 0) return job;
  job.directive = "#PJM";
  job.summary = plural(nodes, "node", "nodes") + " (#PJM -L node=" + std::to_string(nodes) + ")" +
                (procs > 0 ? ", " + std::to_string(procs) + " MPI processes" : "");
  job.variables = {{"PJM_JOBID", "1"}, {"PJM_NODE", std::to_string(nodes)}};
  if (procs > 0) job.variables.push_back({"PJM_MPI_PROC", std::to_string(procs)});
  job.workdir_variables = {"PJM_O_WORKDIR"};
  job.host_files = {{"PJM_O_NODEINF", nodes, 1, ""}};
  return job;
}

/// LSF: `-n SLOTS` with `-R "span[ptile=P]"` (slots a host), or Summit's `-nnodes N`.
BatchJob lsf(const std::vector<std::string>& words) {
  BatchJob job;
  int slots = 0, ptile = 0, nnodes = 0;
  const auto n = option_values(words, "-n");
  if (!n.empty())
    if (const auto v = detail::positive_count(n.back())) slots = *v;
  for (const std::string& r : option_values(words, "-R")) {
    const auto at = r.find("ptile=");
    if (at == std::string::npos) continue;
    std::string digits;
    for (std::size_t k = at + 6; k < r.size() && r[k] >= '0' && r[k] <= '9'; ++k) digits += r[k];
    if (const auto v = detail::positive_count(digits)) ptile = *v;
  }
  if (const auto nn = option_values(words, "-nnodes"); !nn.empty())
    if (const auto v = detail::positive_count(nn.back())) nnodes = *v;
  int hosts = 0, per_host = 1;
  if (nnodes > 0) {
    hosts = nnodes;
    per_host = ptile > 0 ? ptile : 1;
  } else if (slots > 0) {
    per_host = ptile > 0 ? std::min(ptile, slots) : slots;
    hosts = (slots + per_host - 1) / per_host;
  }
  if (hosts == 0) return job;
  job.directive = "#BSUB";
  job.summary = plural(hosts, "host", "hosts") +
                (slots > 0 ? " (#BSUB -n " + std::to_string(slots) + ")" : " (#BSUB -nnodes)") + ", " +
                plural(per_host, "slot", "slots") + " a host";
  const int total = slots > 0 ? slots : hosts * per_host;
  job.variables = {{"LSB_JOBID", "1"}, {"LSB_DJOB_NUMPROC", std::to_string(total)}};
  std::string mcpu;
  for (int h = 1; h <= hosts; ++h)
    mcpu += (h > 1 ? " " : "") + std::string("preflight-node") + std::to_string(h) + " " +
            std::to_string(per_host);
  job.variables.push_back({"LSB_MCPU_HOSTS", mcpu});
  job.workdir_variables = {"LS_SUBCWD"};
  job.host_files = {{"LSB_DJOB_HOSTFILE", hosts, per_host, ""}};
  return job;
}

/// `value` as the default word of a double-quoted `${NAME:-word}`.
std::string default_word(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '"' || c == '\\' || c == '$' || c == '`' || c == '}') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

BatchJob batch_job_header(std::string_view script) {
  if (BatchJob j = pbs(directive_words(script, "#PBS")); !j.empty()) return j;
  if (BatchJob j = grid_engine(directive_words(script, "#$")); !j.empty()) return j;
  if (BatchJob j = pjm(directive_words(script, "#PJM")); !j.empty()) return j;
  return lsf(directive_words(script, "#BSUB"));
}

std::vector<std::string> host_file_lines(const HostFile& f) {
  std::vector<std::string> lines;
  lines.reserve(static_cast<std::size_t>(f.nodes) * static_cast<std::size_t>(std::max(f.repeats, 1)));
  for (int i = 1; i <= f.nodes; ++i)
    for (int r = 0; r < std::max(f.repeats, 1); ++r)
      lines.push_back("preflight-node" + std::to_string(i) + f.suffix);
  return lines;
}

std::string batch_job_shell_defaults(const BatchJob& job) {
  if (job.empty()) return "";
  std::string out = "export";
  for (const auto& [name, value] : job.variables)
    out += " " + name + "=\"${" + name + ":-" + default_word(value) + "}\"";
  for (const std::string& name : job.workdir_variables) out += " " + name + "=\"${" + name + ":-$PWD}\"";
  out += "  # preflight wrap: the job's " + job.directive + " size outside an allocation\n";
  for (const HostFile& f : job.host_files) {
    const std::string& v = f.variable;
    out += "if [ -z \"${" + v + ":-}\" ]; then  # preflight wrap: the allocation's hosts (made-up names)\n";
    out += "  " + v + "=$(mktemp \"${TMPDIR:-/tmp}/preflight-hosts.XXXXXX\") && export " + v + "\n";
    out += "  _pf_i=1; while [ \"$_pf_i\" -le " + std::to_string(f.nodes) +
           " ]; do _pf_r=0; while [ \"$_pf_r\" -lt " + std::to_string(std::max(f.repeats, 1)) +
           " ]; do echo \"preflight-node$_pf_i\"'" + f.suffix +
           "'; _pf_r=$((_pf_r + 1)); done; _pf_i=$((_pf_i + 1)); done > \"$" + v + "\"\n";
    out += "fi\n";
  }
  return out;
}

std::vector<std::string> expand_hostlist(std::string_view list) {
  constexpr std::size_t kMaxHosts = 100000;
  auto bad = [&](const std::string& why) {
    return InputError("host list", "'" + std::string(list) + "': " + why);
  };
  // Items are separated by commas outside brackets.
  std::vector<std::string> items;
  std::string item;
  int depth = 0;
  for (char ch : list) {
    if (ch == '[') ++depth;
    if (ch == ']' && --depth < 0) throw bad("a ']' without its '['");
    if (ch == ',' && depth == 0) {
      items.push_back(item);
      item.clear();
    } else if (ch != ' ' && ch != '\t' && ch != '\n') {
      item += ch;
    }
  }
  if (depth != 0) throw bad("a '[' without its ']'");
  items.push_back(item);
  std::vector<std::string> hosts;
  for (const std::string& it : items) {
    if (it.empty()) continue;
    std::vector<std::string> names = {""};
    for (std::size_t at = 0; at < it.size();) {
      const std::size_t open = it.find('[', at);
      const std::string text = it.substr(at, open == std::string::npos ? std::string::npos : open - at);
      for (std::string& n : names) n += text;
      if (open == std::string::npos) break;
      const std::size_t close = it.find(']', open);
      if (close == std::string::npos || it.find('[', open + 1) < close) throw bad("nested or unclosed '['");
      std::vector<std::string> values;
      for (const std::string& range : split(std::string_view(it).substr(open + 1, close - open - 1), ',')) {
        const std::size_t dash = range.find('-');
        const std::string lo = range.substr(0, dash);
        const std::string hi = dash == std::string::npos ? lo : range.substr(dash + 1);
        auto digits = [](const std::string& s) {
          return !s.empty() && s.size() <= 9 &&
                 std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
        };
        if (!digits(lo) || !digits(hi)) throw bad("'[" + range + "]' is not a number or a range N-M");
        const long a = std::stol(lo), b = std::stol(hi);
        if (b < a) throw bad("the range " + range + " runs backwards");
        if (static_cast<std::size_t>(b - a + 1) * names.size() > kMaxHosts)
          throw bad("more than " + std::to_string(kMaxHosts) + " names");
        for (long v = a; v <= b; ++v) {
          std::string number = std::to_string(v);
          if (number.size() < lo.size()) number.insert(0, lo.size() - number.size(), '0');
          values.push_back(number);
        }
      }
      std::vector<std::string> grown;
      grown.reserve(names.size() * values.size());
      for (const std::string& n : names)
        for (const std::string& v : values) grown.push_back(n + v);
      names = std::move(grown);
      at = close + 1;
    }
    if (hosts.size() + names.size() > kMaxHosts)
      throw bad("more than " + std::to_string(kMaxHosts) + " names");
    hosts.insert(hosts.end(), names.begin(), names.end());
  }
  return hosts;
}

}  // namespace preflight::wrap
