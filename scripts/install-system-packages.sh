#!/usr/bin/env bash
# Installs the Debian packages perflab's studies call (perf, strace, numactl, compilers with
# multilib, make and CMake for the variants study's project builds, hugetlbfs tools, hyperfine,
# Valgrind for --instrument cachegrind, PostgreSQL for the store tests, Chromium for the report
# test, Slurm and munge for the fleet tests' local cluster; jq, sqlite3 and GNU time, which the
# docs' examples use beside perflab), and python3-venv and pip for the
# Makefile's .venv (a stock Debian has python3 without them). Only what is missing is installed,
# so a second `make` costs nothing.
set -euo pipefail
PKGS=(
  linux-perf strace numactl hwloc gcc g++ gcc-multilib g++-multilib libc6-dev-x32
  libhugetlbfs-bin binutils elfutils hyperfine postgresql bubblewrap clang chromium
  util-linux procps make cmake slurm-wlm slurm-client munge valgrind jq sqlite3 time
  python3 python3-venv python3-pip
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
echo "perflab: installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
