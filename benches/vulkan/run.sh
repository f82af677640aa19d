#!/bin/sh
# Vulkan (lavapipe) against the cpu backend on the xpu benchmarks saxpy and matmul 512
# (benches/xpu/*.cajeta, default sizes). Whole-program wall time with hyperfine (compile,
# device setup, transfers and kernels included); both backends must print the same checksum.
# Usage: benches/vulkan/run.sh [runs]   (from the repository root, after a release build)
set -eu
RUNS=${1:-5}
BIN=${CAJETA:-target/release/cajeta}
export VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json}
for prog in saxpy matmul; do
    src=benches/xpu/$prog.cajeta
    cpu=$("$BIN" run --backend cpu "$src")
    vk=$("$BIN" run --backend vulkan "$src")
    if [ "$cpu" != "$vk" ]; then
        echo "$prog: outputs differ: cpu '$cpu', vulkan '$vk'" >&2
        exit 1
    fi
    echo "$prog: $cpu"
    hyperfine --warmup 1 --runs "$RUNS" -N \
        "$BIN run --backend cpu $src" \
        "$BIN run --backend vulkan $src" \
        "env CAJETA_VULKAN_FORCE_STAGING=1 $BIN run --backend vulkan $src"
done
