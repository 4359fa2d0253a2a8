#!/usr/bin/env bash
# Installs the Debian 12 packages preflight needs.  Idempotent and quiet when everything is present; needs
# root (or sudo) only when something is missing.
#
#   scripts/setup.sh           what building and running `preflight` needs (scripts/quickstart.sh)
#   scripts/setup.sh --tests   also the test tier: GoogleTest, Google Benchmark, and the real Python peers
#                              the end-to-end tests run (CPU PyTorch, SAPP's PuLP + CBC, numpy, yaml)
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ pkg-config ccache
  # libraries (DEVELOPERS.md "How we build")
  libcli11-dev nlohmann-json3-dev libre2-dev libcurl4-openssl-dev libyaml-cpp-dev libsimdjson-dev
  coinor-libcbc-dev zlib1g-dev libgmp-dev
)
test_packages=(
  libgtest-dev libgmock-dev libbenchmark-dev coinor-cbc
  # real Python peers for end-to-end tests (CPU PyTorch, SAPP's PuLP, SimuMax's deps)
  python3 python3-torch python3-numpy python3-pulp python3-yaml
  # test tools
  bash coreutils gzip time
)
case "${1:-}" in
  --tests) packages+=("${test_packages[@]}") ;;
  "") ;;
  *) echo "setup.sh: unknown argument '$1' (--tests or nothing)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
((${#missing[@]} == 0)) && exit 0

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
