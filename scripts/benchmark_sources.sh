#!/usr/bin/env bash
# Fetches the sources of Google Benchmark 1.7.1 (Debian 12's) and 1.9.1
# (Debian 13's) from Debian's source packages, once, into a cache outside
# the tree, unpacks its main branch (not in Debian) from the workplace's
# host data beside the clone (../shared/data/hosts, or PARADNN_HOSTS_DATA)
# as benchmark-main, and prints the cache folder. The host-matrix test
# builds them as projects that vendor or fetch Google Benchmark do
# (tests/hosts/).
#   scripts/benchmark_sources.sh     (PARADNN_SOURCE_CACHE moves the cache)
set -euo pipefail
cache=${PARADNN_SOURCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/paradnn/sources}
mkdir -p "$cache"
declare -A suite=([1.7.1]=bookworm [1.9.1]=trixie)
missing=()
for v in "${!suite[@]}"; do
  [[ -f "$cache/benchmark-$v/CMakeLists.txt" ]] || missing+=("$v")
done
if (( ${#missing[@]} )); then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  list=/etc/apt/sources.list.d/paradnn-src.sources
  if [[ ! -f $list ]]; then
    echo "benchmark_sources: adding Debian's source packages ($list)" >&2
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
    echo "benchmark_sources: fetching benchmark $v (${suite[$v]})" >&2
    (cd "$cache" && apt-get source --download-only -qq "benchmark/${suite[$v]}" 2>/dev/null)
    tar xzf "$cache/benchmark_$v.orig.tar.gz" -C "$cache"
    [[ -f "$cache/benchmark-$v/CMakeLists.txt" ]] || {
      echo "benchmark_sources: no benchmark-$v in $cache" >&2; exit 1; }
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
    echo "benchmark_sources: no google-benchmark-*.tar.gz (Google Benchmark's" \
         "main branch) in ../shared/data/hosts or PARADNN_HOSTS_DATA:" \
         "the host test on main will fail" >&2
  else
    mkdir -p "$cache/benchmark-main"
    tar xzf "$tarball" -C "$cache/benchmark-main" --strip-components=1
    echo "benchmark_sources: Google Benchmark main from $tarball" >&2
  fi
fi
echo "$cache"
