#include "preflight/analyzer/balance/decompose.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "preflight/common/error.hpp"

namespace preflight::analyzer::balance {

const char* decompose_method_name(DecomposeMethod m) {
  switch (m) {
    case DecomposeMethod::ExactNoConstant:
      return "exact solve, no constant";
    case DecomposeMethod::ExactWithConstant:
      return "exact solve with constant";
    case DecomposeMethod::LeastSquares:
      return "least squares with constant";
    case DecomposeMethod::LeastSquaresNoConstant:
      return "least squares, no constant";
  }
  return "?";
}

namespace {

// Least-squares solution of A x = b (rows ≥ cols) by Householder QR; for a square A it is the exact
// solution.  Returns nullopt when A is rank deficient.
std::optional<std::vector<double>> solve_least_squares(std::vector<std::vector<double>> A,
                                                       std::vector<double> b) {
  const std::size_t m = A.size(), n = A.empty() ? 0 : A[0].size();
  if (m < n || n == 0) return std::nullopt;
  double scale = 0;
  for (const auto& row : A)
    for (double v : row) scale = std::max(scale, std::abs(v));
  if (scale == 0) return std::nullopt;
  for (std::size_t k = 0; k < n; ++k) {
    double norm = 0;
    for (std::size_t i = k; i < m; ++i) norm += A[i][k] * A[i][k];
    norm = std::sqrt(norm);
    if (norm <= 1e-10 * scale * std::sqrt(static_cast<double>(m))) return std::nullopt;
    const double alpha = A[k][k] > 0 ? -norm : norm;
    std::vector<double> v(m, 0.0);
    v[k] = A[k][k] - alpha;
    for (std::size_t i = k + 1; i < m; ++i) v[i] = A[i][k];
    double vnorm2 = 0;
    for (std::size_t i = k; i < m; ++i) vnorm2 += v[i] * v[i];
    if (vnorm2 == 0) continue;
    for (std::size_t j = k; j < n; ++j) {
      double dot = 0;
      for (std::size_t i = k; i < m; ++i) dot += v[i] * A[i][j];
      const double f = 2 * dot / vnorm2;
      for (std::size_t i = k; i < m; ++i) A[i][j] -= f * v[i];
    }
    double dot = 0;
    for (std::size_t i = k; i < m; ++i) dot += v[i] * b[i];
    const double f = 2 * dot / vnorm2;
    for (std::size_t i = k; i < m; ++i) b[i] -= f * v[i];
  }
  std::vector<double> x(n, 0.0);
  for (std::size_t k = n; k-- > 0;) {
    double s = b[k];
    for (std::size_t j = k + 1; j < n; ++j) s -= A[k][j] * x[j];
    if (std::abs(A[k][k]) <= 1e-10 * scale) return std::nullopt;
    x[k] = s / A[k][k];
  }
  return x;
}

std::string fmt(double v) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(1);
  o << v;
  return o.str();
}

}  // namespace

Decomposition decompose_memory(const std::vector<DryrunObservation>& obs, int S,
                               const DecomposeOptions& options, const std::string& where) {
  Decomposition d;
  d.stages = S;
  if (S < 3) throw InputError(where, "the memory decomposition needs at least 3 pipeline stages");
  // Classes used anywhere (SAPP `find_recompute_considered`: NONE always, others when any stage has one).
  PerRecompute<bool> used{};
  used[0] = true;
  for (const auto& o : obs)
    for (Recompute r : kAllRecompute)
      if (o.classes[static_cast<int>(r)] > 0) used[static_cast<int>(r)] = true;
  std::vector<Recompute> classes;
  for (Recompute r : kAllRecompute)
    if (used[static_cast<int>(r)]) classes.push_back(r);
  const int U = static_cast<int>(classes.size());
  const int N = static_cast<int>(obs.size());
  int heads = 0, tails = 0;
  for (const auto& o : obs) {
    heads += o.stage == 0;
    tails += o.stage == S - 1;
  }
  if (heads == 0) throw InputError(where, "no head stage (stage 0) memory given");
  if (tails == 0) throw InputError(where, "no tail stage (stage " + std::to_string(S - 1) + ") memory given");
  const int body_rows = N - heads - tails;

  std::string class_list;
  for (Recompute r : classes) class_list += std::string(class_list.empty() ? "" : ", ") + recompute_name(r);
  // SAPP counts the head and tail among the "stages given": N == U + 3 → no constant, N ≥ U + 4 → constant.
  // With several rounds of head/tail memories we count the body rows instead, which is what the solve needs.
  const int needed_no_const = U + 1, needed_const = U + 2;
  bool with_const;
  if (body_rows == needed_no_const) {
    with_const = false;
    d.method = DecomposeMethod::ExactNoConstant;
  } else if (body_rows >= needed_const) {
    with_const = true;
    d.method = body_rows == needed_const ? DecomposeMethod::ExactWithConstant : DecomposeMethod::LeastSquares;
  } else {
    throw InputError(where, std::to_string(body_rows) + " body-stage memories for " + std::to_string(U) +
                                " recompute classes (" + class_list + "): need " +
                                std::to_string(needed_no_const) + " (no constant) or at least " +
                                std::to_string(needed_const) +
                                " (with constant), i.e. 3 or 4 more stages than recompute classes in total");
  }
  if (with_const) {
    bool same = true;
    for (const auto& o : obs) same = same && o.layers == obs.front().layers;
    if (same) {
      // The constant and the per-layer parameters are indistinguishable: fold c into P (SAPP refuses).
      with_const = false;
      d.method = body_rows == needed_no_const ? DecomposeMethod::ExactNoConstant
                                              : DecomposeMethod::LeastSquaresNoConstant;
      d.notes.push_back("every stage holds " + std::to_string(obs.front().layers) +
                        " layers: the constant memory is folded into the per-layer parameters");
    }
  }
  std::vector<std::vector<double>> A;
  std::vector<double> b;
  for (const auto& o : obs) {
    if (o.stage == 0 || o.stage == S - 1) continue;
    std::vector<double> row;
    if (with_const) row.push_back(1.0);
    row.push_back(o.layers);
    for (Recompute r : classes)
      row.push_back(static_cast<double>(S - o.stage) * o.classes[static_cast<int>(r)]);
    A.push_back(std::move(row));
    b.push_back(o.peak_mb);
  }
  auto x = solve_least_squares(A, b);
  if (!x)
    throw InputError(where, "the body-stage equations are singular (stages configured too much alike for " +
                                class_list +
                                "); the dryrun needs different layer and recompute counts per stage "
                                "(see --guide)");
  std::size_t k = 0;
  if (with_const) d.const_mb = (*x)[k++];
  d.param_mb = (*x)[k++];
  for (Recompute r : classes) d.activation_mb[static_cast<int>(r)] = (*x)[k++];
  if (d.method == DecomposeMethod::LeastSquares || d.method == DecomposeMethod::LeastSquaresNoConstant)
    d.notes.push_back("least squares over " + std::to_string(body_rows) + " body stages for " +
                      std::to_string(with_const ? needed_const : needed_no_const) + " unknowns");

  auto act_sum = [&](const DryrunObservation& o) {
    double s = 0;
    for (Recompute r : classes) s += o.classes[static_cast<int>(r)] * *d.activation_mb[static_cast<int>(r)];
    return s;
  };
  double hsum = 0, tsum = 0;
  for (const auto& o : obs) {
    if (o.stage == 0) hsum += o.peak_mb - o.layers * d.param_mb - S * act_sum(o);
    if (o.stage == S - 1) tsum += o.peak_mb - o.layers * d.param_mb - 1 * act_sum(o);
  }
  d.head_mb = hsum / heads;
  d.tail_mb = tsum / tails;
  for (const auto& o : obs) {
    StageFit f{o.round, o.stage, o.peak_mb, 0};
    if (o.stage == 0)
      f.fitted_mb = d.head_mb + o.layers * d.param_mb + S * act_sum(o);
    else if (o.stage == S - 1)
      f.fitted_mb = d.tail_mb + o.layers * d.param_mb + act_sum(o);
    else
      f.fitted_mb = d.const_mb.value_or(0.0) + o.layers * d.param_mb + (S - o.stage) * act_sum(o);
    d.fits.push_back(f);
  }

  if (d.const_mb && *d.const_mb < 0)
    d.notes.push_back("the fitted constant memory is negative (" + fmt(*d.const_mb) + " MB)");
  std::vector<std::string> bad;
  if (d.param_mb < 0) bad.push_back("parameter memory per layer " + fmt(d.param_mb) + " MB");
  for (Recompute r : classes) {
    const double a = *d.activation_mb[static_cast<int>(r)];
    if (a <= 0)
      bad.push_back(std::string("activation of recompute class '") + recompute_name(r) + "' " + fmt(a) +
                    " MB");
  }
  if (d.head_mb < 0) bad.push_back("head memory " + fmt(d.head_mb) + " MB");
  if (d.tail_mb < 0) bad.push_back("tail memory " + fmt(d.tail_mb) + " MB");
  if (!bad.empty()) {
    std::string list;
    for (const auto& s : bad) list += (list.empty() ? "" : "; ") + s;
    if (!options.allow_negative)
      throw InputError(
          where, "the memories cannot be decomposed into non-negative terms (" + list +
                     "); SAPP would silently drop such recompute classes.  Check the dryrun numbers and "
                     "layer counts, or pass --allow-negative to continue without those classes");
    d.notes.push_back("negative terms accepted (--allow-negative): " + list);
  }
  return d;
}

LayerModel layer_model_from_decomposition(const Decomposition& d, const StageTimes& times, int layers,
                                          const std::string& model_name) {
  auto trunc = [](double v) { return static_cast<double>(static_cast<long long>(v)); };
  LayerModel m;
  m.name = model_name;
  m.const_mb = d.const_mb ? trunc(*d.const_mb) : 0.0;
  m.head_forward_ms = times.head_ms;
  m.tail_forward_ms = times.tail_ms;
  m.head_mb = trunc(d.head_mb);
  m.tail_mb = trunc(d.tail_mb);
  BodyKind b;
  b.name = "BODY";
  b.count = layers;
  b.forward_ms = times.body_ms;
  b.param_mb = trunc(d.param_mb);
  for (Recompute r : kAllRecompute)
    if (d.activation_mb[static_cast<int>(r)])
      b.activation_mb[static_cast<int>(r)] = trunc(*d.activation_mb[static_cast<int>(r)]);
  fill_backward_times(b, {}, {});
  m.bodies.push_back(std::move(b));
  return m;
}

}  // namespace preflight::analyzer::balance
