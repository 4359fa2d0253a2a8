#pragma once
// Internal: a small sparse (MI)LP builder and its solution through COIN-OR CBC's library
// (OsiClpSolverInterface + CbcModel, CbcMain0/CbcMain1 — the same engine as the `cbc` binary that
// SAPP runs through PuLP, without a subprocess or an LP file).

#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace preflight::analyzer::balance::lp {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// Affine expression Σ coef · column + constant.
struct Expr {
  std::vector<std::pair<int, double>> terms;
  double constant = 0;
  Expr() = default;
  Expr(double c) : constant(c) {}  // NOLINT(google-explicit-constructor)
  static Expr var(int col, double coef = 1.0) {
    Expr e;
    e.terms.emplace_back(col, coef);
    return e;
  }
  Expr& operator+=(const Expr& o) {
    terms.insert(terms.end(), o.terms.begin(), o.terms.end());
    constant += o.constant;
    return *this;
  }
  Expr& operator-=(const Expr& o) {
    for (auto [c, v] : o.terms) terms.emplace_back(c, -v);
    constant -= o.constant;
    return *this;
  }
  Expr& operator*=(double f) {
    for (auto& t : terms) t.second *= f;
    constant *= f;
    return *this;
  }
  void add(int col, double coef) { terms.emplace_back(col, coef); }
  /// Value for a full column vector.
  double value(const std::vector<double>& x) const {
    double v = constant;
    for (auto [c, k] : terms) v += k * x[c];
    return v;
  }
};
inline Expr operator+(Expr a, const Expr& b) {
  return a += b;
}
inline Expr operator-(Expr a, const Expr& b) {
  return a -= b;
}
inline Expr operator*(double f, Expr a) {
  return a *= f;
}

class Model {
 public:
  struct Column {
    std::string name;
    double lower = 0, upper = kInf, objective = 0;
    bool integer = false;
    int priority = 1000;  // CBC branching priority: smaller branches first
  };
  struct Row {
    std::string name;
    std::vector<std::pair<int, double>> coefs;
    double lower = -kInf, upper = kInf;
  };

  int add_column(std::string name, double lower, double upper, bool integer, double objective = 0) {
    columns_.push_back({std::move(name), lower, upper, objective, integer, 1000});
    return static_cast<int>(columns_.size()) - 1;
  }
  /// lower ≤ expr ≤ upper (the expression's constant is moved to the bounds; duplicates merged).
  void add_row(std::string name, const Expr& e, double lower, double upper);
  void add_ge(std::string name, const Expr& lhs, const Expr& rhs) {
    add_row(std::move(name), lhs - rhs, 0, kInf);
  }
  void add_le(std::string name, const Expr& lhs, const Expr& rhs) {
    add_row(std::move(name), lhs - rhs, -kInf, 0);
  }
  void add_eq(std::string name, const Expr& lhs, const Expr& rhs) {
    add_row(std::move(name), lhs - rhs, 0, 0);
  }
  void set_priority(int col, int priority) { columns_[col].priority = priority; }

  const std::vector<Column>& columns() const { return columns_; }
  const std::vector<Row>& rows() const { return rows_; }
  Column& column(int i) { return columns_[i]; }

  /// Largest violation of bounds, rows and integrality by x (0 when feasible).
  double violation(const std::vector<double>& x) const;

 private:
  std::vector<Column> columns_;
  std::vector<Row> rows_;
};

struct SolveParams {
  double time_limit_s = 60;
  std::vector<std::vector<double>> starts;  ///< full column vectors; the best feasible one seeds CBC
  std::filesystem::path dump_lp;            ///< when set, the model is written there (LP format)
  bool log = false;                         ///< CBC's log on stderr
  bool lp_relaxation_only = false;
  int max_saved_solutions = 20;
};

struct SolveResult {
  bool has_solution = false;
  bool proven_optimal = false;
  bool proven_infeasible = false;
  bool stopped_on_time = false;
  double objective = kInf;
  double bound = -kInf;  ///< best possible objective (lower bound for minimisation)
  long nodes = 0;
  double seconds = 0;
  std::vector<double> solution;
  std::vector<std::vector<double>> pool;  ///< other integer solutions CBC kept (best first)
};

/// Minimises the model's objective with CBC (or solves only the LP relaxation with Clp).
SolveResult solve(const Model& model, const SolveParams& params);

}  // namespace preflight::analyzer::balance::lp
