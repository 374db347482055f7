#!/usr/bin/env bash
# Fetches the sources the host-matrix test (tests/hosts/) builds hosts
# with, once, into a cache outside the tree, and prints the cache folder:
# Google Benchmark 1.7.1 (Debian 12's) and 1.9.1 (Debian 13's) from
# Debian's source packages, as projects that vendor it build them; its main
# branch (not in Debian) from the workplace's host data beside the clone
# (../shared/data/hosts, or PARADNN_HOSTS_DATA) as benchmark-main, as
# projects that fetch GIT_TAG main build it; and yaml-cpp 0.8.0 (Debian
# 13's; paradnn uses Debian 12's 0.7.0), for a host that links its own.
#   scripts/host_sources.sh     (PARADNN_SOURCE_CACHE moves the cache)
set -euo pipefail
cache=${PARADNN_SOURCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/paradnn/sources}
mkdir -p "$cache"
# folder in the cache -> package/suite, its upstream tarball
declare -A package=([benchmark-1.7.1]=benchmark/bookworm
                    [benchmark-1.9.1]=benchmark/trixie
                    [yaml-cpp-0.8.0]=yaml-cpp/trixie)
declare -A tarball=([benchmark-1.7.1]=benchmark_1.7.1.orig.tar.gz
                    [benchmark-1.9.1]=benchmark_1.9.1.orig.tar.gz
                    [yaml-cpp-0.8.0]=yaml-cpp_0.8.0+dfsg.orig.tar.xz)
missing=()
for v in "${!package[@]}"; do
  [[ -f "$cache/$v/CMakeLists.txt" ]] || missing+=("$v")
done
if (( ${#missing[@]} )); then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  list=/etc/apt/sources.list.d/paradnn-src.sources
  if [[ ! -f $list ]]; then
    echo "host_sources: adding Debian's source packages ($list)" >&2
    $sudo tee "$list" >/dev/null <<'LIST'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
LIST
    $sudo apt-get update -qq
  fi
  for v in "${missing[@]}"; do
    echo "host_sources: fetching ${package[$v]}" >&2
    (cd "$cache" && apt-get source --download-only -qq "${package[$v]}" 2>/dev/null)
    mkdir -p "$cache/$v"
    tar xf "$cache/${tarball[$v]}" -C "$cache/$v" --strip-components=1
    [[ -f "$cache/$v/CMakeLists.txt" ]] || {
      echo "host_sources: no $v in $cache" >&2; exit 1; }
  done
fi
# Google Benchmark's main branch, as projects that fetch GIT_TAG main build
# against: beside this clone, or beside the one it was cloned from.
if [[ ! -f "$cache/benchmark-main/CMakeLists.txt" ]]; then
  root=$(cd "$(dirname "$0")/.." && pwd)
  origin=$(git -C "$root" config --get remote.origin.url 2>/dev/null || true)
  tarball=""
  for dir in "${PARADNN_HOSTS_DATA:-}" "$root/../shared/data/hosts" \
             "${origin:+$origin/../shared/data/hosts}"; do
    [[ -n $dir ]] || continue
    found=$(ls "$dir"/google-benchmark-*.tar.gz 2>/dev/null | head -1 || true)
    if [[ -n $found ]]; then tarball=$found; break; fi
  done
  if [[ -z $tarball ]]; then
    # The other sources serve the rest of the host matrix; the main-branch
    # host test fails, naming what is missing.
    echo "host_sources: no google-benchmark-*.tar.gz (Google Benchmark's" \
         "main branch) in ../shared/data/hosts or PARADNN_HOSTS_DATA:" \
         "the host test on main will fail" >&2
  else
    mkdir -p "$cache/benchmark-main"
    tar xzf "$tarball" -C "$cache/benchmark-main" --strip-components=1
    echo "host_sources: Google Benchmark main from $tarball" >&2
  fi
fi
echo "$cache"
