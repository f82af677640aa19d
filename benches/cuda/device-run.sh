#!/usr/bin/env bash
# The prepared device check of the cuda backend (issue #7), for a machine with an NVIDIA GPU and
# driver. Run from anywhere:  benches/cuda/device-run.sh
#
#  1. builds the release binary (offline; `CAJETA_BIN=path` uses a prebuilt one and skips it);
#  2. runs the xpu conformance suite on cuda: `cargo test --test conformance` with
#     CAJETA_CONFORMANCE_BACKENDS=cuda and FILTER=cuda/xpu/ when cargo is there, else a
#     stdout/exit-status comparison of each xpu program in this script;
#  3. runs benches/cuda/saxpy_bandwidth.cajeta (2^28 float32, 20 timed launches) and reports
#     its GB/s against the device's peak (2 x memory clock x bus width, from the driver;
#     PEAK_GBS=… overrides), with the acceptance target of 85%.
#
# Knobs for a dry run elsewhere: BACKEND=cpu (default cuda), SAXPY_ARGS="-- 100000 3".
#
# Everything is written to $OUT (default benches/cuda/out): device-run.log (all output),
# conformance.log, saxpy.txt, summary.txt, and the PTX of the benchmark kernel. Exit status:
# 0 when conformance passed and the check of the benchmark is ok, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-benches/cuda/out}"
mkdir -p "$OUT"
exec > >(tee "$OUT/device-run.log") 2>&1
status=0
BACKEND="${BACKEND:-cuda}"

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv || true

echo "== build"
BIN="${CAJETA_BIN:-}"
if [ -z "$BIN" ]; then
    cargo build --release --offline -p cajeta 2>&1 | tail -3 || { echo "build failed"; exit 1; }
    BIN=target/release/cajeta
fi
probe="$OUT/Probe.cajeta"
echo 'import cajeta.xpu.Device; public class Probe { public static void main() { System.stdout.println(Device.activeBackend()); } }' >"$probe"
"$BIN" run --backend "$BACKEND" "$probe" || { echo "backend $BACKEND does not open"; exit 1; }
"$BIN" emit ptx benches/cuda/saxpy_bandwidth.cajeta -o "$OUT" --cuda-arch sm_90 || status=1

echo "== conformance (xpu programs on $BACKEND)"
if command -v cargo >/dev/null && [ -z "${CAJETA_BIN:-}" ]; then
    CAJETA_CONFORMANCE_BACKENDS="$BACKEND" CAJETA_CONFORMANCE_FILTER="$BACKEND/xpu/" \
        cargo test --release --offline --test conformance -- --exact conformance --nocapture >"$OUT/conformance.log" 2>&1 \
        || status=1
    grep -E '^conformance:|FAIL|skipped' "$OUT/conformance.log" | tail -40
else
    pass=0 fail=0 skip=0
    for src in $(find tests/programs/xpu -name '*.cajeta' | sort); do
        base="${src%.cajeta}"
        # cpu-only programs, and expected compile errors (no kernels run), are not cuda's.
        if grep -q 'requires:.*backend-cpu' "$src"; then skip=$((skip + 1)); continue; fi
        if [ -f "$base.error" ] && ! grep -qE '^(XPU-)?E-' "$base.error"; then
            skip=$((skip + 1)); continue
        fi
        want_exit=$(cat "$base.exit" 2>/dev/null || echo 0)
        flags=$(sed -n 's|^// flags: ||p' "$src" | head -1)
        # shellcheck disable=SC2086
        got=$(timeout 120 "$BIN" run --backend "$BACKEND" $flags "$src" 2>"$OUT/stderr.tmp"); code=$?
        if [ "$got" == "$(cat "$base.expected")" ] && [ "$code" == "$want_exit" ]; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1)); status=1
            echo "FAIL $src (exit $code, want $want_exit)"; head -5 "$OUT/stderr.tmp"
        fi
    done
    echo "conformance: $pass passed, $fail failed, $skip skipped" | tee "$OUT/conformance.log"
fi

echo "== saxpy bandwidth"
# shellcheck disable=SC2086
timeout 600 "$BIN" run --backend "$BACKEND" benches/cuda/saxpy_bandwidth.cajeta ${SAXPY_ARGS:-} | tee "$OUT/saxpy.txt"
grep -q '^check ok' "$OUT/saxpy.txt" || status=1
gbs=$(sed -n 's/^bandwidth \([0-9.]*\) GB\/s/\1/p' "$OUT/saxpy.txt")
peak="${PEAK_GBS:-}"
if [ -z "$peak" ]; then
    # CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE (36, kHz) and GLOBAL_MEMORY_BUS_WIDTH (37, bits).
    peak=$(python3 - <<'PY' 2>/dev/null
import ctypes
cu = ctypes.CDLL("libcuda.so.1")
dev, clk, bus = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
assert cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
cu.cuDeviceGetAttribute(ctypes.byref(clk), 36, dev)
cu.cuDeviceGetAttribute(ctypes.byref(bus), 37, dev)
print("%.1f" % (2 * clk.value * 1e3 * bus.value / 8 / 1e9))
PY
)
fi
{
    echo "saxpy 2^28 float32: ${gbs:-?} GB/s; device peak: ${peak:-unknown} GB/s"
    if [ -n "$gbs" ] && [ -n "$peak" ]; then
        awk -v g="$gbs" -v p="$peak" 'BEGIN { r = 100 * g / p; printf "%.1f%% of peak (target >= 85%%): %s\n", r, (r >= 85 ? "met" : "NOT met") }'
    fi
    grep '^conformance:' "$OUT/conformance.log" | tail -1
} | tee "$OUT/summary.txt"
rm -f "$OUT/stderr.tmp"
exit $status
