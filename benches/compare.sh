#!/usr/bin/env bash
# Our VM beside its peers, per benchmark group:
#   host: benches/host/{fib,loop,nbody,mandelbrot,spectral}.cajeta beside Lua 5.4, LuaJIT with
#         its JIT off (-joff) and CPython (lua/bench.lua, py/pure.py);
#   xpu:  benches/xpu/{saxpy,reduce,matmul,stencil}.cajeta run with `--backend cpu` beside NumPy,
#         Numba (serial and parallel) and the native Rust peer (serial and parallel), i.e.
#         py/np_bench.py, py/numba_bench.py and rust/main.rs.
#
# Runs the release build of `cajeta` and the peer programs of /work/shared/bench at the same
# sizes, checks every checksum line against the expected one (exact, or within the relative
# tolerance of expected.tsv: stencil) and prints one markdown table per group with median wall
# times and the ratios ours / peer (below 1: we are faster). The benchmarks and their checksums
# are defined in /work/shared/bench/SPEC.md.
#
# Usage: benches/compare.sh [--quick] [--group host|xpu|all]
#   --quick   smaller sizes from SPEC.md's small-size table and fewer runs (a smoke test)
#   --group   which benchmarks to run (default host)
#
# Knobs (environment):
#   BENCH_DIR=/work/shared/bench   where SPEC.md, expected.tsv, lua/, py/ and rust/ live
#   BENCHES="fib saxpy ..."        subset of the group's benchmarks
#   PEERS="cajeta-off rust luajit lua5.4 luajit-joff python"  host peers (ours always runs):
#                                  cajeta-off is ours with --jit off (the interpreter), rust the
#                                  native peer, luajit LuaJIT with its JIT on
#   JIT=auto                       ours' --jit mode (off, auto, eager); cajeta-off is always off
#   XPU_PEERS="numpy numba numba-par rust rust-par"  kernel peers (ours always runs)
#   RUNS=5 WARMUP=1                runs per case (hyperfine --runs / --warmup)
#   SLOW_S=10                      a case whose checksum run took longer than this is timed
#                                  once, without warm-up (that run was its warm-up)
#   CAJETA=/path/to/cajeta         use this binary instead of building target/release/cajeta
#   OUT=/tmp/cajeta-compare        where logs, outputs, the Rust peer and hyperfine JSON go
#   NO_INSTALL=1                   do not `pip install numpy numba` when they are missing
#
# Timing uses hyperfine when it is installed, else a plain loop around `date`. A peer that is
# not installed is left out of the table (with a note). Numba runs with a warm on-disk cache
# (filled by its checksum run). Exit status: 0 when every checksum matched, 1 when any differed
# or any command failed.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/work/shared/bench}
OUT=${OUT:-/tmp/cajeta-compare}
HOST_BENCHES="fib loop nbody mandelbrot spectral"
XPU_BENCHES="saxpy reduce matmul stencil"
PEERS=${PEERS:-cajeta-off rust luajit lua5.4 luajit-joff python}
JIT=${JIT:-auto}
XPU_PEERS=${XPU_PEERS:-numpy numba numba-par rust rust-par}
SLOW_S=${SLOW_S:-10}

QUICK=0
GROUP=host
while (($#)); do
  case $1 in
    --quick) QUICK=1 ;;
    --group)
      [[ $# -ge 2 ]] || { echo "compare.sh: --group needs a value (host, xpu or all)" >&2; exit 2; }
      GROUP=$2
      shift
      ;;
    --group=*) GROUP=${1#--group=} ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "compare.sh: unknown argument '$1' (try --help)" >&2
      exit 2
      ;;
  esac
  shift
done

case $GROUP in
  host) ALL_BENCHES=$HOST_BENCHES ;;
  xpu) ALL_BENCHES=$XPU_BENCHES ;;
  all) ALL_BENCHES="$HOST_BENCHES $XPU_BENCHES" ;;
  *)
    echo "compare.sh: unknown group '$GROUP' (host, xpu or all)" >&2
    exit 2
    ;;
esac
BENCHES=${BENCHES:-$ALL_BENCHES}

if ((QUICK)); then
  RUNS=${RUNS:-3}
  WARMUP=${WARMUP:-0}
else
  RUNS=${RUNS:-5}
  WARMUP=${WARMUP:-1}
fi

# group_of BENCH -> host or xpu.
group_of() {
  if [[ " $XPU_BENCHES " == *" $1 "* ]]; then echo xpu; else echo host; fi
}

# size_of BENCH -> the size arguments; expected_of BENCH -> the checksum line at those sizes;
# tol_of BENCH -> its relative tolerance (0: the line must match exactly).
# Default sizes: expected.tsv and SPEC.md's canonical sizes. Quick sizes: SPEC.md's table of
# checksums at other sizes, all exact.
size_of() {
  if ((QUICK)); then
    case $1 in
      fib) echo 32 ;; loop) echo 3000 ;; nbody) echo 1000 ;; mandelbrot) echo 1000 ;; spectral) echo 500 ;;
      saxpy) echo "100000 4" ;; reduce) echo "100000 3" ;; matmul) echo 64 ;; stencil) echo "100000 3" ;;
    esac
  else
    case $1 in
      fib) echo 35 ;; loop) echo 10000 ;; nbody) echo 1000000 ;; mandelbrot) echo 1500 ;; spectral) echo 1000 ;;
      saxpy) echo "16777216 20" ;; reduce) echo "16777216 50" ;; matmul) echo 512 ;; stencil) echo "4194304 50" ;;
    esac
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
      saxpy) echo "341406.250000" ;;
      reduce) echo "37500.000000" ;;
      matmul) echo "3911.500000" ;;
      stencil) echo "29549.901344" ;;
    esac
  else
    awk -F '\t' -v b="$1" '!/^#/ && $1 == b { print $2 }' "$BENCH_DIR/expected.tsv"
  fi
}

tol_of() {
  if ((QUICK)); then
    echo 0
  else
    awk -F '\t' -v b="$1" '!/^#/ && $1 == b { print $3 }' "$BENCH_DIR/expected.tsv"
  fi
}

# checksum_ok GOT WANT TOL -> status 0 when GOT matches WANT (exactly, or each number within
# TOL relative).
checksum_ok() {
  local got=$1 want=$2 tol=$3
  if awk -v t="$tol" 'BEGIN { exit !(t == 0) }'; then
    [[ $got == "$want" ]]
  else
    awk -v g="$got" -v w="$want" -v t="$tol" 'BEGIN {
      n = split(g, gs, " "); m = split(w, ws, " ")
      if (n != m) exit 1
      for (k = 1; k <= n; k++) {
        d = gs[k] - ws[k]; if (d < 0) d = -d
        r = ws[k] < 0 ? -ws[k] : ws[k]
        if (d > t * r) exit 1
      }
      exit 0
    }'
  fi
}

for b in $BENCHES; do
  if [[ " $ALL_BENCHES " != *" $b "* ]]; then
    echo "compare.sh: unknown benchmark '$b' (group $GROUP: $ALL_BENCHES)" >&2
    exit 2
  fi
  if [[ -z $(expected_of "$b") ]]; then
    echo "compare.sh: no expected checksum for '$b' in $BENCH_DIR/expected.tsv" >&2
    exit 2
  fi
done

HAS_HOST=0
HAS_XPU=0
for b in $BENCHES; do
  if [[ $(group_of "$b") == xpu ]]; then HAS_XPU=1; else HAS_HOST=1; fi
done

mkdir -p "$OUT"
LOG="$OUT/compare.log"
: >"$LOG"
NOTES=()

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

# ------------------------------------------------------------------ kernel peers
HAVE_NUMPY=0
HAVE_NUMBA=0
RUST_BIN=""
if ((HAS_XPU)) && [[ -n $PY ]]; then
  if [[ " $XPU_PEERS " == *" numpy "* || " $XPU_PEERS " == *" numba"* ]]; then
    if ! "$PY" -c 'import numpy, numba' 2>/dev/null && [[ -z ${NO_INSTALL:-} ]]; then
      echo "installing numpy and numba (pip install numpy numba; NO_INSTALL=1 skips this)" >&2
      "$PY" -m pip install --quiet numpy numba >>"$LOG" 2>&1 ||
        NOTES+=("pip install numpy numba failed (see $LOG)")
    fi
    "$PY" -c 'import numpy' 2>/dev/null && HAVE_NUMPY=1
    "$PY" -c 'import numba' 2>/dev/null && HAVE_NUMBA=1
  fi
fi
if { ((HAS_XPU)) && [[ " $XPU_PEERS " == *" rust"* ]]; } || { ((HAS_HOST)) && [[ " $PEERS " == *" rust "* ]]; }; then
  if command -v rustc >/dev/null; then
    echo "building $OUT/peers-rs (rustc -C opt-level=3 -C target-cpu=native)" >&2
    if rustc -C opt-level=3 -C target-cpu=native -o "$OUT/peers-rs" "$BENCH_DIR/rust/main.rs" >>"$LOG" 2>&1; then
      RUST_BIN=$OUT/peers-rs
    else
      NOTES+=("the Rust peer did not build (see $LOG): rust and rust-par left out")
    fi
  fi
fi
NUMBA_CACHE=$OUT/numba-cache

# cmd_for PEER BENCH SIZES -> the command line, or nothing when the peer is not installed.
cmd_for() {
  local peer=$1 b=$2 n=$3
  case $peer in
    cajeta)
      if [[ $(group_of "$b") == xpu ]]; then
        echo "$OURS run --backend cpu $ROOT/benches/xpu/$b.cajeta -- $n"
      else
        echo "$OURS run --jit $JIT $ROOT/benches/host/$b.cajeta -- $n"
      fi
      ;;
    cajeta-off) echo "$OURS run --jit off $ROOT/benches/host/$b.cajeta -- $n" ;;
    luajit) command -v luajit >/dev/null && echo "luajit $BENCH_DIR/lua/bench.lua $b $n" ;;
    lua5.4) command -v lua5.4 >/dev/null && echo "lua5.4 $BENCH_DIR/lua/bench.lua $b $n" ;;
    luajit-joff) command -v luajit >/dev/null && echo "luajit -joff $BENCH_DIR/lua/bench.lua $b $n" ;;
    python) [[ -n $PY ]] && echo "$PY $BENCH_DIR/py/pure.py $b $n" ;;
    numpy) ((HAVE_NUMPY)) && echo "$PY $BENCH_DIR/py/np_bench.py $b $n" ;;
    numba) ((HAVE_NUMBA)) && echo "env NUMBA_CACHE_DIR=$NUMBA_CACHE $PY $BENCH_DIR/py/numba_bench.py $b $n" ;;
    numba-par) ((HAVE_NUMBA)) && echo "env NUMBA_CACHE_DIR=$NUMBA_CACHE $PY $BENCH_DIR/py/numba_bench.py $b-par $n" ;;
    rust) [[ -n $RUST_BIN ]] && echo "$RUST_BIN $b $n" ;;
    rust-par) [[ -n $RUST_BIN ]] && echo "$RUST_BIN $b-par $n" ;;
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

# time_cmd NAME CMD WARMUP RUNS -> prints the median wall seconds of RUNS runs after WARMUP runs.
time_cmd() {
  local name=$1 cmd=$2 warmup=$3 runs=$4
  if ((HAVE_HYPERFINE)); then
    local json="$OUT/$name.json"
    # shellcheck disable=SC2086 # the command is a word list by construction
    hyperfine -N --style basic --warmup "$warmup" --runs "$runs" --export-json "$json" "$cmd" >>"$LOG" 2>&1 || return 1
    "${PY:-python3}" -c 'import json, sys; print("%.6f" % json.load(open(sys.argv[1]))["results"][0]["median"])' "$json"
  else
    local times="$OUT/$name.times" i t0 t1
    : >"$times"
    for ((i = 0; i < warmup; i++)); do
      # shellcheck disable=SC2086
      $cmd >/dev/null 2>>"$LOG" || return 1
    done
    for ((i = 0; i < runs; i++)); do
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

declare -A TIME CHECK RUNS_OF
FAILED=0

# run_case BENCH PEER: the checksum run, then the timed runs.
run_case() {
  local b=$1 peer=$2 n want tol cmd got lines t0 t1 probe_s w r t
  n=$(size_of "$b")
  want=$(expected_of "$b")
  tol=$(tol_of "$b")
  cmd=$(cmd_for "$peer" "$b" "$n") || exit 2
  TIME[$b.$peer]="-"
  CHECK[$b.$peer]=""
  if [[ -z $cmd ]]; then
    NOTES+=("$peer is not installed: left out")
    return 0
  fi
  echo "[$b $n / $peer] $cmd" >&2
  # Probe: one run that captures the checksum line (and warms Numba's cache).
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  if ! $cmd >"$OUT/$b.$peer.stdout" 2>"$OUT/$b.$peer.stderr"; then
    echo "  FAILED: '$cmd' exited with an error (see $OUT/$b.$peer.stderr)" >&2
    CHECK[$b.$peer]="FAILED"
    FAILED=1
    return 0
  fi
  t1=$(date +%s.%N)
  probe_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  got=$(head -n 1 "$OUT/$b.$peer.stdout")
  lines=$(wc -l <"$OUT/$b.$peer.stdout")
  if [[ $lines -ne 1 ]] || ! checksum_ok "$got" "$want" "$tol"; then
    echo "  CHECKSUM MISMATCH for $b $n on $peer: got '$got' ($lines lines), expected '$want' (rel tol $tol)" >&2
    CHECK[$b.$peer]="DIFF"
    FAILED=1
    return 0
  fi
  CHECK[$b.$peer]="ok"
  w=$WARMUP
  r=$RUNS
  if awk -v p="$probe_s" -v s="$SLOW_S" 'BEGIN { exit !(p > s) }'; then
    w=0
    r=1
  fi
  RUNS_OF[$b.$peer]=$r
  if t=$(time_cmd "$b.$peer" "$cmd" "$w" "$r"); then
    TIME[$b.$peer]=$t
  else
    echo "  FAILED while timing '$cmd' (see $LOG)" >&2
    CHECK[$b.$peer]="FAILED"
    FAILED=1
  fi
}

# print_table TITLE BENCHES PEERS RATIO_PEERS: one markdown table.
print_table() {
  local title=$1 benches=$2 peers=$3 ratio_peers=$4 header rule row checks b peer c slow
  header="| benchmark | size | cajeta s"
  rule="|---|---:|---:"
  for peer in $peers; do
    header+=" | $peer s"
    rule+="|---:"
  done
  for peer in $ratio_peers; do
    header+=" | cajeta / $peer"
    rule+="|---:"
  done
  header+=" | checksums |"
  rule+="|---|"
  echo
  echo "$title"
  echo
  echo "$header"
  echo "$rule"
  slow=""
  for b in $benches; do
    row="| $b | $(size_of "$b") | $(secs "${TIME[$b.cajeta]}")"
    checks=""
    for peer in $peers; do
      row+=" | $(secs "${TIME[$b.$peer]}")"
    done
    for peer in $ratio_peers; do
      row+=" | $(ratio "${TIME[$b.cajeta]}" "${TIME[$b.$peer]:--}")"
    done
    for peer in cajeta $peers; do
      c=${CHECK[$b.$peer]}
      [[ -n $c && $c != ok ]] && checks+="$peer: $c; "
      [[ ${RUNS_OF[$b.$peer]:-} == 1 && $RUNS != 1 ]] && slow+=" $b/$peer"
    done
    [[ -z $checks ]] && checks="ok" || checks=${checks%; }
    row+=" | $checks |"
    echo "$row"
  done
  if [[ -n $slow ]]; then
    echo
    echo "Timed once (checksum run over ${SLOW_S} s):$slow"
  fi
}

HOST_SELECTED=""
XPU_SELECTED=""
for b in $BENCHES; do
  if [[ $(group_of "$b") == xpu ]]; then
    XPU_SELECTED+=" $b"
    for peer in cajeta $XPU_PEERS; do run_case "$b" "$peer"; done
  else
    HOST_SELECTED+=" $b"
    for peer in cajeta $PEERS; do run_case "$b" "$peer"; done
  fi
done

# ------------------------------------------------------------------ tables
SIZES=$( ((QUICK)) && echo quick || echo default)
TIMER=$( ((HAVE_HYPERFINE)) && echo hyperfine || echo 'shell timer')
if ((HAS_HOST)); then
  # Ratios against our interpreter (cajeta-off: below 1 is the JIT's speed-up), the Rust
  # peer, LuaJIT and the two Lua peers as before, whichever peers ran.
  print_table "# host benchmarks (cajeta: --jit $JIT), $SIZES sizes, median of $RUNS runs ($TIMER), $(nproc) cores" \
    "$HOST_SELECTED" "$PEERS" "cajeta-off rust luajit lua5.4 luajit-joff"
fi
if ((HAS_XPU)); then
  print_table "# xpu kernel benchmarks (cajeta --backend cpu), $SIZES sizes, median of $RUNS runs ($TIMER), $(nproc) cores" \
    "$XPU_SELECTED" "$XPU_PEERS" "$XPU_PEERS"
fi
if ((${#NOTES[@]})); then
  echo
  printf '%s\n' "${NOTES[@]}" | sort -u | sed 's/^/Note: /'
fi

if ((FAILED)); then
  echo >&2
  echo "compare.sh: FAILED: a checksum differed or a command failed (details above, logs in $OUT)" >&2
  exit 1
fi
