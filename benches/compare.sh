#!/usr/bin/env bash
# Host benchmarks: our VM beside Lua 5.4, LuaJIT with its JIT off (-joff) and CPython.
#
# Runs benches/host/{fib,loop,nbody,mandelbrot,spectral}.cajeta with the release build of
# `cajeta`, and the peer programs of /work/shared/bench (lua/bench.lua, py/pure.py) at the same
# sizes, checks every checksum line against the expected one and prints a markdown table of
# median wall times and the ratios ours / lua5.4 and ours / luajit -joff (below 1: we are
# faster). The benchmarks and their checksums are defined in /work/shared/bench/SPEC.md.
#
# Usage: benches/compare.sh [--quick]
#   --quick   smaller sizes from SPEC.md's small-size table and fewer runs (a smoke test)
#
# Knobs (environment):
#   BENCH_DIR=/work/shared/bench   where SPEC.md, expected.tsv, lua/ and py/ live
#   BENCHES="fib loop ..."         subset of the host benchmarks
#   PEERS="lua5.4 luajit-joff python"   subset of the peers (ours always runs)
#   RUNS=5 WARMUP=1                runs per case (hyperfine --runs / --warmup)
#   CAJETA=/path/to/cajeta         use this binary instead of building target/release/cajeta
#   OUT=/tmp/cajeta-compare        where logs, outputs and hyperfine JSON go
#
# Timing uses hyperfine when it is installed, else a plain loop around `date`. A peer that is
# not installed is left out of the table (with a note). Exit status: 0 when every checksum
# matched, 1 when any differed or any command failed.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/work/shared/bench}
OUT=${OUT:-/tmp/cajeta-compare}
ALL_BENCHES="fib loop nbody mandelbrot spectral"
BENCHES=${BENCHES:-$ALL_BENCHES}
PEERS=${PEERS:-lua5.4 luajit-joff python}

QUICK=0
for arg in "$@"; do
  case $arg in
    --quick) QUICK=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "compare.sh: unknown argument '$arg' (try --help)" >&2
      exit 2
      ;;
  esac
done

if ((QUICK)); then
  RUNS=${RUNS:-3}
  WARMUP=${WARMUP:-0}
else
  RUNS=${RUNS:-5}
  WARMUP=${WARMUP:-1}
fi

# size_of BENCH -> the size argument; expected_of BENCH -> the checksum line at that size.
# Default sizes: expected.tsv. Quick sizes: SPEC.md's table of checksums at other sizes.
size_of() {
  if ((QUICK)); then
    case $1 in fib) echo 32 ;; loop) echo 3000 ;; nbody) echo 1000 ;; mandelbrot) echo 1000 ;; spectral) echo 500 ;; esac
  else
    case $1 in fib) echo 35 ;; loop) echo 10000 ;; nbody) echo 1000000 ;; mandelbrot) echo 1500 ;; spectral) echo 1000 ;; esac
  fi
}

expected_of() {
  if ((QUICK)); then
    case $1 in
      fib) echo "2178309" ;;
      loop) echo "23135141" ;;
      nbody) echo "-0.169075164 -0.169087605" ;;
      mandelbrot) echo "16724781 254700" ;;
      spectral) echo "1.274224116" ;;
    esac
  else
    # Host checksums are exact (rel_tol 0): the printed line must match.
    awk -F '\t' -v b="$1" '!/^#/ && $1 == b { print $2 }' "$BENCH_DIR/expected.tsv"
  fi
}

for b in $BENCHES; do
  if [[ " $ALL_BENCHES " != *" $b "* ]]; then
    echo "compare.sh: unknown benchmark '$b' (host benchmarks: $ALL_BENCHES)" >&2
    exit 2
  fi
  if [[ -z $(expected_of "$b") ]]; then
    echo "compare.sh: no expected checksum for '$b' in $BENCH_DIR/expected.tsv" >&2
    exit 2
  fi
done

mkdir -p "$OUT"
LOG="$OUT/compare.log"
: >"$LOG"

# ------------------------------------------------------------------ our binary
if [[ -n ${CAJETA:-} ]]; then
  OURS=$CAJETA
else
  echo "building target/release/cajeta (cargo build --release --bin cajeta)" >&2
  (cd "$ROOT" && cargo build --release --bin cajeta) >>"$LOG" 2>&1 || {
    echo "compare.sh: release build failed, see $LOG" >&2
    exit 1
  }
  OURS=$ROOT/target/release/cajeta
fi
[[ -x $OURS ]] || { echo "compare.sh: $OURS is not an executable" >&2; exit 1; }

# The pyenv shim is a bash script that adds tens of ms per start: use the real interpreter.
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || true)

# cmd_for PEER BENCH SIZE -> the command line, or nothing when the peer is not installed.
cmd_for() {
  local peer=$1 b=$2 n=$3
  case $peer in
    cajeta) echo "$OURS run $ROOT/benches/host/$b.cajeta -- $n" ;;
    lua5.4) command -v lua5.4 >/dev/null && echo "lua5.4 $BENCH_DIR/lua/bench.lua $b $n" ;;
    luajit-joff) command -v luajit >/dev/null && echo "luajit -joff $BENCH_DIR/lua/bench.lua $b $n" ;;
    python) [[ -n $PY ]] && echo "$PY $BENCH_DIR/py/pure.py $b $n" ;;
    *) echo "compare.sh: unknown peer '$peer'" >&2; return 1 ;;
  esac
  return 0
}

HAVE_HYPERFINE=0
command -v hyperfine >/dev/null && HAVE_HYPERFINE=1

# median_of FILE: the median of the numbers in FILE, one per line.
median_of() {
  sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# time_cmd NAME CMD -> prints the median wall seconds of RUNS runs after WARMUP runs.
time_cmd() {
  local name=$1 cmd=$2
  if ((HAVE_HYPERFINE)); then
    local json="$OUT/$name.json"
    # shellcheck disable=SC2086 # the command is a word list by construction
    hyperfine -N --style basic --warmup "$WARMUP" --runs "$RUNS" --export-json "$json" "$cmd" >>"$LOG" 2>&1 || return 1
    "${PY:-python3}" -c 'import json, sys; print("%.6f" % json.load(open(sys.argv[1]))["results"][0]["median"])' "$json"
  else
    local times="$OUT/$name.times" i t0 t1
    : >"$times"
    for ((i = 0; i < WARMUP; i++)); do
      # shellcheck disable=SC2086
      $cmd >/dev/null 2>>"$LOG" || return 1
    done
    for ((i = 0; i < RUNS; i++)); do
      t0=$(date +%s.%N)
      # shellcheck disable=SC2086
      $cmd >/dev/null 2>>"$LOG" || return 1
      t1=$(date +%s.%N)
      awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", b - a }' >>"$times"
    done
    median_of "$times"
  fi
}

# secs T -> T with three decimals, or "-".
secs() {
  if [[ $1 == - ]]; then echo "-"; else awk -v t="$1" 'BEGIN { printf "%.3f", t }'; fi
}

# ratio A B -> A / B with two decimals, or "-".
ratio() {
  if [[ $1 == - || $2 == - ]]; then echo "-"; else awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; fi
}

declare -A TIME CHECK
FAILED=0
NOTES=()
ALL_PEERS="cajeta $PEERS"

for b in $BENCHES; do
  n=$(size_of "$b")
  want=$(expected_of "$b")
  for peer in $ALL_PEERS; do
    cmd=$(cmd_for "$peer" "$b" "$n") || exit 2
    TIME[$b.$peer]="-"
    CHECK[$b.$peer]=""
    if [[ -z $cmd ]]; then
      NOTES+=("$peer is not installed: left out")
      continue
    fi
    echo "[$b $n / $peer] $cmd" >&2
    # Probe: one run that captures the checksum line.
    # shellcheck disable=SC2086
    if ! $cmd >"$OUT/$b.$peer.stdout" 2>"$OUT/$b.$peer.stderr"; then
      echo "  FAILED: '$cmd' exited with an error (see $OUT/$b.$peer.stderr)" >&2
      CHECK[$b.$peer]="FAILED"
      FAILED=1
      continue
    fi
    got=$(head -n 1 "$OUT/$b.$peer.stdout")
    lines=$(wc -l <"$OUT/$b.$peer.stdout")
    if [[ $got != "$want" || $lines -ne 1 ]]; then
      echo "  CHECKSUM MISMATCH for $b $n on $peer: got '$got' ($lines lines), expected '$want'" >&2
      CHECK[$b.$peer]="DIFF"
      FAILED=1
      continue
    fi
    CHECK[$b.$peer]="ok"
    if t=$(time_cmd "$b.$peer" "$cmd"); then
      TIME[$b.$peer]=$t
    else
      echo "  FAILED while timing '$cmd' (see $LOG)" >&2
      CHECK[$b.$peer]="FAILED"
      FAILED=1
    fi
  done
done

# ------------------------------------------------------------------ table
header="| benchmark | size | cajeta s"
rule="|---|---:|---:"
for peer in $PEERS; do
  header+=" | $peer s"
  rule+="|---:"
done
header+=" | cajeta / lua5.4 | cajeta / luajit -joff | checksums |"
rule+="|---:|---:|---|"

echo
echo "# host benchmarks, $( ((QUICK)) && echo quick || echo default) sizes, median of $RUNS runs ($( ((HAVE_HYPERFINE)) && echo hyperfine || echo 'shell timer')), $(nproc) cores"
echo
echo "$header"
echo "$rule"
for b in $BENCHES; do
  row="| $b | $(size_of "$b") | $(secs "${TIME[$b.cajeta]}")"
  checks=""
  for peer in $PEERS; do
    row+=" | $(secs "${TIME[$b.$peer]}")"
  done
  for peer in $ALL_PEERS; do
    c=${CHECK[$b.$peer]}
    [[ -n $c && $c != ok ]] && checks+="$peer: $c; "
  done
  [[ -z $checks ]] && checks="ok" || checks=${checks%; }
  row+=" | $(ratio "${TIME[$b.cajeta]}" "${TIME[$b.lua5.4]:--}")"
  row+=" | $(ratio "${TIME[$b.cajeta]}" "${TIME[$b.luajit-joff]:--}")"
  row+=" | $checks |"
  echo "$row"
done
if ((${#NOTES[@]})); then
  echo
  printf '%s\n' "${NOTES[@]}" | sort -u | sed 's/^/Note: /'
fi

if ((FAILED)); then
  echo >&2
  echo "compare.sh: FAILED: a checksum differed or a command failed (details above, logs in $OUT)" >&2
  exit 1
fi
