#!/usr/bin/env bash
# Builds and tests this clone inside a Debian root of another release (a
# minimal debootstrap), so one machine checks both stacks paradnn supports:
#   scripts/debian_root.sh trixie              setup, build, unit and backend tests
#   scripts/debian_root.sh trixie -- CMD...    setup, build, then CMD in the clone
#   scripts/debian_root.sh trixie --run CMD... only CMD, in the clone as the last
#       run built it, with this environment's PARADNN_*, COMPARE_ROUND and
#       BENCHMARK_OUT* (a path in the root given as this machine sees it)
# The root lives in PARADNN_ROOTS (default /var/cache/paradnn/roots) and is
# kept between runs with its packages, build folder and ccache, so a second
# run only rebuilds what changed. The clone's files (tracked and untracked,
# not ignored) replace the root's copy at each run. Needs root (or sudo).
set -euo pipefail
suite=${1:?usage: scripts/debian_root.sh SUITE [-- COMMAND... | --run COMMAND...]}
shift
run_only=0
if [[ ${1:-} == "--" ]]; then
  shift
elif [[ ${1:-} == "--run" ]]; then
  run_only=1
  shift
fi
src=$(cd "$(dirname "$0")/.." && pwd)
roots=${PARADNN_ROOTS:-/var/cache/paradnn/roots}
dir=$roots/$suite
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi

if ! command -v debootstrap >/dev/null; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq debootstrap
fi
if ((run_only)) && [[ ! -x $dir/src/paradnn/build/paradnn ]]; then
  echo "debian_root: no build in $dir yet: run scripts/debian_root.sh $suite first" >&2
  exit 1
fi
if [[ ! -x $dir/usr/bin/apt-get ]]; then
  echo "debian_root: creating a $suite root in $dir"
  $sudo mkdir -p "$dir"
  $sudo debootstrap --variant=minbase "$suite" "$dir" http://deb.debian.org/debian \
    >/dev/null
fi

# /sys recursively: Slurm's daemons need the cgroup filesystem under it.
mounts=()
unmount() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    $sudo umount -R "${mounts[i]}" 2>/dev/null || $sudo umount -l "${mounts[i]}" || true
  done
}
trap unmount EXIT
for d in proc sys dev; do
  if ! mountpoint -q "$dir/$d"; then
    $sudo mount --rbind "/$d" "$dir/$d"
    $sudo mount --make-rslave "$dir/$d"
    mounts+=("$dir/$d")
  fi
done
# Name resolution as on this machine: the rendezvous of ranks uses the
# host's name.
$sudo cp /etc/hosts /etc/resolv.conf "$dir/etc/"

if ((run_only)); then
  pass=(HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8)
  while IFS='=' read -r name value; do
    case $name in
      PARADNN_* | COMPARE_ROUND | BENCHMARK_OUT_FORMAT) pass+=("$name=$value") ;;
      BENCHMARK_OUT) pass+=("BENCHMARK_OUT=${value#"$dir"}") ;;
    esac
  done < <(env)
  status=0
  $sudo chroot "$dir" /usr/bin/env -i "${pass[@]}" \
    bash -c 'cd /src/paradnn && "$@"' bash "$@" || status=$?
  exit $status
fi

# The clone's files, leaving the root's build folder (and its ccache) be.
work=$dir/src/paradnn
$sudo mkdir -p "$work"
$sudo find "$work" -mindepth 1 -maxdepth 1 ! -name build ! -name build-asan -exec rm -rf {} +
(cd "$src" && git ls-files -z --cached --others --exclude-standard |
   tar --null --ignore-failed-read -T - -c -f - 2>/dev/null) | $sudo tar -x -f - -C "$work"
# The hosts' Google Benchmark main branch, where this clone finds it.
data=${PARADNN_HOSTS_DATA:-$src/../shared/data/hosts}
if [[ -d $data ]]; then
  $sudo mkdir -p "$dir/src/hosts-data"
  $sudo cp -u "$data"/* "$dir/src/hosts-data/" 2>/dev/null || true
fi

if (($#)); then
  command=$(printf '%q ' "$@")
else
  command='cd build && ctest --output-on-failure -j2 -L "unit|backend"'
fi
echo "debian_root: $suite: setup, build, then: $command"
$sudo chroot "$dir" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  CI="${CI:-}" PARADNN_HOSTS_DATA=/src/hosts-data LANG=C.UTF-8 \
  bash -c "set -euo pipefail; cd /src/paradnn
    scripts/setup.sh --test >/dev/null
    scripts/build.sh -DPARADNN_BUILD_TESTS=ON -DPARADNN_BUILD_EXAMPLES=ON \
      >/tmp/paradnn-build.log 2>&1 || { tail -40 /tmp/paradnn-build.log; exit 1; }
    $command"
