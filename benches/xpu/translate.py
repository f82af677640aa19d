#!/usr/bin/env python3
"""Line-by-line Python translations of benches/xpu/*.cajeta, to check the ports.

Each function below follows its Cajeta program statement by statement: the same host set-up,
the same launch geometry, the kernel run once per work-item (workgroups in order, items in
increasing linear index, barriers as phase boundaries, which is the cpu schedule of XPU.md §5.5),
float32 arithmetic with one rounding per operation (numpy.float32 scalars), and the same
checksum. Run it to compare the result at the small sizes of /work/shared/bench/SPEC.md with
the checksum lines given there:

    python3 benches/xpu/translate.py            # all four, small sizes
    python3 benches/xpu/translate.py saxpy 1000 2   # one benchmark at other sizes

Needs numpy (`pip install numpy`). Exit status 1 if a checksum differs from SPEC.md's.
"""
import sys

import numpy as np

f32 = np.float32

# Small-size checksum lines from SPEC.md ("At other sizes, the same programs print these lines").
SMALL = {
    "saxpy": ((100000, 4), "341406.250000"),
    "reduce": ((100000, 3), "37500.000000"),
    "matmul": ((64,), "3911.500000"),
    "stencil": ((100000, 3), "29549.901344"),
}


def grid_stride(n, groups, block, length):
    """The indices `x.range(n)` visits, per item (g, l) in execution order (XPU.md §3.5)."""
    step = groups * block
    for g in range(groups):
        for l in range(block):
            i = g * block + l
            visits = []
            while i < n:
                assert i < length, "XPU-E-BOUNDS in the translation"
                visits.append(i)
                i += step
            yield g, l, visits


def saxpy(n=16777216, reps=20):
    BLOCK, MAX_GROUPS = 256, 1024
    hx = [f32(f32(i % 1000) / f32(1024.0)) for i in range(n)]
    hy = [f32(f32(i % 500) / f32(512.0)) for i in range(n)]
    x, y = list(hx), list(hy)  # upload
    groups = min((n + BLOCK - 1) // BLOCK, MAX_GROUPS)
    a = f32(1.5)
    for _ in range(reps):
        for _g, _l, visits in grid_stride(n, groups, BLOCK, len(x)):
            for i in visits:
                v = x[i]
                y[i] = f32(f32(a * v) + y[i])
    hy = list(y)  # download
    total = 0.0
    for i in range(n):
        total = total + float(hy[i])
    return "%.6f" % total


def reduce_partial(x, sums, n, groups, block):
    """Kernel `partial` of reduce.cajeta over `groups` workgroups of `block` items."""
    for g in range(groups):
        t = [f32(0.0)] * 256
        # Phase 1 (up to the first barrier): grid-stride accumulation, t[l] = acc.
        for l in range(block):
            acc = f32(0.0)
            i = g * block + l
            while i < n:
                acc = f32(acc + x[i])
                i += groups * block
            t[l] = acc
        # Each loop trip is one phase ending at a barrier.
        stride = 128
        while stride > 0:
            for l in range(block):
                if l < stride:
                    t[l] = f32(t[l] + t[l + stride])
            stride //= 2
        sums[g] = t[0]


def reduce(n=16777216, reps=50):
    BLOCK, MAX_GROUPS = 256, 1024
    hx = [f32(f32(f32(i % 8) - f32(3.0)) * f32(0.25)) for i in range(n)]
    groups = min((n + BLOCK - 1) // BLOCK, MAX_GROUPS)
    x = list(hx)
    sums = [f32(0.0)] * groups
    out = [f32(0.0)]
    total = 0.0
    for _ in range(reps):
        reduce_partial(x, sums, n, groups, BLOCK)
        reduce_partial(sums, out, groups, 1, BLOCK)
        total = total + float(out[0])
    return "%.6f" % total


def matmul(n=512):
    TILE = 16
    ha = [f32(0.0)] * (n * n)
    hb = [f32(0.0)] * (n * n)
    for i in range(n):
        for k in range(n):
            ha[i * n + k] = f32(f32(f32((7 * i + 3 * k) % 16) - f32(8.0)) / f32(8.0))
            hb[i * n + k] = f32(f32(f32((5 * i + 11 * k) % 16) - f32(8.0)) / f32(8.0))
    groups = (n + TILE - 1) // TILE
    c = [f32(0.0)] * (n * n)
    for gy in range(groups * TILE):      # globalIdY
        for gx in range(groups * TILE):  # globalIdX
            j, i = gx, gy
            if i < n and j < n:
                acc = f32(0.0)
                row = i * n
                for k in range(n):
                    acc = f32(acc + f32(ha[row + k] * hb[k * n + j]))
                c[row + j] = acc
    chk = 0.0
    for i in range(n):
        for j in range(n):
            chk = chk + float(c[i * n + j]) * float((i + 2 * j) % 7 + 1)
    return "%.6f" % chk


def stencil(n=4194304, steps=50):
    BLOCK = 256
    h = [f32(f32((37 * i) % 1000) / f32(1024.0)) for i in range(n)]
    u, v = list(h), list(h)
    groups = (n + BLOCK - 1) // BLOCK

    def sweep(dst, src):
        for i in range(groups * BLOCK):
            if i >= 1 and i + 1 < n:
                left = f32(f32(0.25) * src[i - 1])
                mid = f32(f32(0.5) * src[i])
                dst[i] = f32(f32(left + mid) + f32(f32(0.25) * src[i + 1]))

    for t in range(steps):
        if t % 2 == 0:
            sweep(v, u)
        else:
            sweep(u, v)
    h = list(v) if steps % 2 == 1 else list(u)
    chk = 0.0
    for i in range(n):
        x = float(h[i])
        chk = chk + x * x
    return "%.6f" % chk


def main():
    benches = {"saxpy": saxpy, "reduce": reduce, "matmul": matmul, "stencil": stencil}
    if len(sys.argv) > 1:
        name = sys.argv[1]
        sizes = [int(a) for a in sys.argv[2:]]
        print(benches[name](*sizes))
        return 0
    status = 0
    for name, (sizes, want) in SMALL.items():
        got = benches[name](*sizes)
        ok = got == want
        status |= not ok
        print("%-8s %-14s %s (SPEC.md: %s)%s" % (
            name, " ".join(map(str, sizes)), got, want, "" if ok else "  MISMATCH"))
    return status


if __name__ == "__main__":
    sys.exit(main())
