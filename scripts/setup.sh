#!/usr/bin/env bash
# Installs the Debian 12 packages preflight needs to build, test and run its examples.
# Idempotent and quiet when everything is present.  Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ pkg-config ccache
  # libraries (DEVELOPERS.md "How we build")
  libcli11-dev nlohmann-json3-dev libre2-dev libcurl4-openssl-dev libgtest-dev libgmock-dev
  libyaml-cpp-dev libsimdjson-dev coinor-libcbc-dev coinor-cbc libbenchmark-dev zlib1g-dev libgmp-dev
  # real Python peers for end-to-end tests (CPU PyTorch, SAPP's PuLP, SimuMax's deps)
  python3 python3-torch python3-numpy python3-pulp python3-yaml
  # test tools
  bash coreutils gzip time
)

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
