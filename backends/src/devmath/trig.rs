//! `sin`, `cos` and `tan` on float64: the argument reduced to `r = |x| − n·π/2`, |r| ≤ π/4,
//! as a double-double, then Taylor polynomials for `sin r` and `cos r` chosen and signed by
//! `n mod 4` (`tan` is their quotient, divided in double-double).
//!
//! The reduction is Payne–Hanek's, in int64 arithmetic, for every |x| ≥ π/4 (there are no
//! branches, so one method serves all sizes): with `|x| = m · 2^p` (`m` the 53-bit integer
//! significand), only a window of 192 bits of 2/π matters to `|x|·2/π mod 4` — the bits
//! before it add multiples of 4, the bits after it less than 2^−137. The window starts at
//! bit `p − 1` of 2/π and is cut from [`TWO_OVER_PI`] by a select chain over the word index
//! and two variable shifts; `m` times the window, modulo 2^192, is the fixed-point value
//! `|x|·2/π mod 4` with 190 fraction bits, of which the top 126 are kept (the nearest a double
//! comes to a multiple of π/2 is about 2^−61 away, so `r` keeps at least 64 significant bits,
//! 11 more than float64's).

use super::{factorial, two_product_var, two_sum, Builder, Step, PI_2};

/// Which function.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Trig {
    Sin,
    Cos,
    Tan,
}

/// The fraction bits of 2/π, 64 per word, most significant first (bits 1 to 1216; verified
/// by the tests against π computed with Machin's formula).
const TWO_OVER_PI: [u64; 19] = [
    0xA2F9_836E_4E44_1529,
    0xFC27_57D1_F534_DDC0,
    0xDB62_9599_3C43_9041,
    0xFE51_63AB_DEBB_C561,
    0xB724_6E3A_424D_D2E0,
    0x0649_2EEA_09D1_921C,
    0xFE1D_EB1C_B129_A73E,
    0xE882_35F5_2EBB_4484,
    0xE99C_7026_B45F_7E41,
    0x3991_D639_8353_39F4,
    0x9C84_5F8B_BDF9_283B,
    0x1FF8_97FF_DE05_980F,
    0xEF2F_118B_5A0A_6D1F,
    0x6D36_7ECF_27CB_09B7,
    0x4F46_3F66_9E5F_EA2D,
    0x7527_BAC7_EBE5_F17B,
    0x3D07_39F7_8A52_92EA,
    0x6BFB_5FB1_1F8D_5D08,
    0x5603_3046_FC7B_6BAB,
];

/// Word `k` of the bit stream the window is cut from: 64 zero bits (2/π's bits 0 and
/// above, so that a window may start before the binary point), then [`TWO_OVER_PI`].
fn stream_word(k: usize) -> i64 {
    if k == 0 {
        0
    } else {
        TWO_OVER_PI[k - 1] as i64
    }
}

/// `Math.sin`, `Math.cos` or `Math.tan` of `x`.
pub(super) fn trig(b: &mut Builder, x: usize, f: Trig) -> usize {
    let xb = b.push(Step::Bits(x));
    let mag = b.i(i64::MAX);
    let ab = b.push(Step::IAnd(xb, mag));
    let a = b.push(Step::FromBits(ab));
    // Below π/4 (the double below it) there is nothing to reduce.
    let quarter = b.f(std::f64::consts::FRAC_PI_4);
    let small = b.lt(a, quarter);
    let (n, r_hi, r_lo) = reduce(b, ab);
    let (zero, izero) = (b.f(0.0), b.i(0));
    let n = b.select(small, izero, n);
    let r_hi = b.select(small, a, r_hi);
    let r_lo = b.select(small, zero, r_lo);

    let (s_hi, s_lo) = sin_dd(b, r_hi, r_lo);
    let (c_hi, c_lo) = cos_dd(b, r_hi, r_lo);
    let one = b.i(1);
    let n1 = b.push(Step::IAnd(n, one));
    let odd = b.push(Step::IEq(n1, one));
    let two = b.i(2);
    // The sign of the quadrant's function: sin is negative in quadrants 2 and 3, cos in 1
    // and 2, tan in 1 and 3; sin and tan are odd, so x's own sign is applied after.
    let flip = match f {
        Trig::Sin => b.push(Step::IAnd(n, two)),
        Trig::Cos => {
            let n1 = b.push(Step::IAdd(n, one));
            b.push(Step::IAnd(n1, two))
        }
        Trig::Tan => b.push(Step::IAnd(n, one)),
    };
    let positive = b.push(Step::IEq(flip, izero));
    let v = match f {
        Trig::Sin | Trig::Cos => {
            let s = b.add(s_hi, s_lo);
            let c = b.add(c_hi, c_lo);
            let (on_odd, on_even) = if f == Trig::Sin { (c, s) } else { (s, c) };
            b.select(odd, on_odd, on_even)
        }
        Trig::Tan => {
            // s/c in even quadrants, −c/s in odd ones (the sign by `flip`).
            let nh = b.select(odd, c_hi, s_hi);
            let nl = b.select(odd, c_lo, s_lo);
            let dh = b.select(odd, s_hi, c_hi);
            let dl = b.select(odd, s_lo, c_lo);
            divide_dd(b, nh, nl, dh, dl)
        }
    };
    let (plus, minus) = (b.f(1.0), b.f(-1.0));
    let sign = b.select(positive, plus, minus);
    let v = b.mul(v, sign);
    let v = if f == Trig::Cos {
        v
    } else {
        let x_negative = b.push(Step::ILt(xb, izero));
        let sign = b.select(x_negative, minus, plus);
        b.mul(v, sign)
    };
    // Infinities and NaN give NaN (x − x), every finite x the path's value.
    let inf = b.f(f64::INFINITY);
    let finite = b.lt(a, inf);
    let nan = b.sub(x, x);
    b.select(finite, v, nan)
}

/// The Payne–Hanek reduction of `|x|` (its bits `ab`, any non-negative value: results for
/// |x| < π/4 and non-finite ones are garbage the caller does not choose): `n mod 4` (int64)
/// and `r = |x| − n·π/2` as `(hi, lo)`, |r| ≤ π/4.
fn reduce(b: &mut Builder, ab: usize) -> (usize, usize, usize) {
    // |x| = m · 2^p, p = e − 1075 for the biased exponent e; the window starts at bit p − 1
    // of 2/π, which is bit t = p + 62 of the stream (clamped: below π/4 it may be negative).
    let e = b.push(Step::UShr(ab, 52));
    let frac_mask = b.i((1 << 52) - 1);
    let hidden = b.i(1 << 52);
    let m = b.push(Step::IAnd(ab, frac_mask));
    let m = b.push(Step::IOr(m, hidden));
    let bias = b.i(62 - 1075);
    let t = b.push(Step::IAdd(e, bias));
    let izero = b.i(0);
    let before = b.push(Step::ILt(t, izero));
    let t = b.select(before, izero, t);
    let word = b.push(Step::UShr(t, 6));
    let lsb = b.i(63);
    let s = b.push(Step::IAnd(t, lsb));
    // Words `word` to `word + 3` of the stream: `word` is at most (2047 − 1013) / 64 = 16.
    const LAST: usize = 16;
    let mut w: Vec<usize> = (0..4).map(|k| b.i(stream_word(k))).collect();
    for q in 1..=LAST {
        let qq = b.i(q as i64);
        let here = b.push(Step::IEq(word, qq));
        for (k, wk) in w.iter_mut().enumerate() {
            let c = b.i(stream_word(q + k));
            *wk = b.select(here, c, *wk);
        }
    }
    // The window's three words: (w[k] << s) | (w[k + 1] >> (64 − s)), the second shift
    // split in two so that s = 0 shifts by 1 and then 63, not by 64.
    let rest = b.push(Step::ISub(lsb, s));
    let v: Vec<usize> = (0..3)
        .map(|k| {
            let high = b.push(Step::ShlV(w[k], s));
            let low = b.push(Step::UShr(w[k + 1], 1));
            let low = b.push(Step::UShrV(low, rest));
            b.push(Step::IOr(high, low))
        })
        .collect();
    // m · window mod 2^192, in words R2:R1 (the lowest word, below 2^−126, is left out but
    // for its carry into R1).
    let lo0 = b.push(Step::IMul(m, v[0]));
    let (lo1, hi1) = mul_wide(b, m, v[1]);
    let hi2 = mul_high(b, m, v[2]);
    let r1 = b.push(Step::IAdd(lo1, hi2));
    let carried = b.push(Step::ULt(r1, lo1));
    let one = b.i(1);
    let carry = b.select(carried, one, izero);
    let r2 = b.push(Step::IAdd(lo0, hi1));
    let r2 = b.push(Step::IAdd(r2, carry));
    // The top two bits of R2 are the quadrant; the next one rounds it to the nearest, which
    // makes the 128-bit fraction f = H:L below them signed, in [−1/2, 1/2).
    let quadrant = b.push(Step::UShr(r2, 62));
    let half = b.push(Step::UShr(r2, 61));
    let half = b.push(Step::IAnd(half, one));
    let n = b.push(Step::IAdd(quadrant, half));
    let three = b.i(3);
    let n = b.push(Step::IAnd(n, three));
    let h = b.push(Step::Shl(r2, 2));
    let h_low = b.push(Step::UShr(r1, 62));
    let h = b.push(Step::IOr(h, h_low));
    let l = b.push(Step::Shl(r1, 2));
    // f = e1 + e2 + e3 exactly, each part a converted integer of at most 53 bits:
    // H's top 53 bits (signed), H's low 11 and L's top 42, L's next 22.
    let e1 = b.push(Step::Shr(h, 11));
    let e1 = b.push(Step::IToF(e1));
    let e1 = b.mulc(e1, f64::from_bits(0x3CA0_0000_0000_0000)); // 2^-53
    let low11 = b.i(0x7FF);
    let e2 = b.push(Step::IAnd(h, low11));
    let e2 = b.push(Step::Shl(e2, 42));
    let l_top = b.push(Step::UShr(l, 22));
    let e2 = b.push(Step::IOr(e2, l_top));
    let e2 = b.push(Step::IToF(e2));
    let e2 = b.mulc(e2, f64::from_bits(0x3950_0000_0000_0000)); // 2^-106
    let low22 = b.i(0x3F_FFFF);
    let e3 = b.push(Step::IAnd(l, low22));
    let e3 = b.push(Step::IToF(e3));
    let e3 = b.mulc(e3, f64::from_bits(0x37F0_0000_0000_0000)); // 2^-128
    let (s_hi, s_lo) = two_sum(b, e1, e2);
    let t = b.add(s_lo, e3);
    let (f_hi, f_lo) = two_sum(b, s_hi, t);
    // r = f · π/2 in double-double.
    let pio2 = b.f(PI_2.0);
    let (p, pe) = two_product_var(b, f_hi, pio2);
    let tail = b.mulc(f_hi, PI_2.1);
    let cross = b.mulc(f_lo, PI_2.0);
    let tail = b.add(tail, cross);
    let pe = b.add(pe, tail);
    let (r_hi, r_lo) = two_sum(b, p, pe);
    (n, r_hi, r_lo)
}

/// The 128-bit product of two unsigned 64-bit integers, as `(low, high)` words.
fn mul_wide(b: &mut Builder, x: usize, y: usize) -> (usize, usize) {
    let low = b.push(Step::IMul(x, y));
    (low, mul_high(b, x, y))
}

/// The high word of the 128-bit product of two unsigned 64-bit integers, from 32-bit halves
/// (no sum below can exceed 2^64 − 1, so none carries).
fn mul_high(b: &mut Builder, x: usize, y: usize) -> usize {
    let mask = b.i(0xFFFF_FFFF);
    let x0 = b.push(Step::IAnd(x, mask));
    let x1 = b.push(Step::UShr(x, 32));
    let y0 = b.push(Step::IAnd(y, mask));
    let y1 = b.push(Step::UShr(y, 32));
    let p00 = b.push(Step::IMul(x0, y0));
    let p10 = b.push(Step::IMul(x1, y0));
    let p01 = b.push(Step::IMul(x0, y1));
    let p11 = b.push(Step::IMul(x1, y1));
    let mid = b.push(Step::UShr(p00, 32));
    let p10_low = b.push(Step::IAnd(p10, mask));
    let mid = b.push(Step::IAdd(mid, p10_low));
    let mid = b.push(Step::IAdd(mid, p01));
    let p10_high = b.push(Step::UShr(p10, 32));
    let mid_high = b.push(Step::UShr(mid, 32));
    let high = b.push(Step::IAdd(p11, p10_high));
    b.push(Step::IAdd(high, mid_high))
}

/// `Σ_{k=0}^{n} c(k)·z^k` by Horner's rule.
fn horner(b: &mut Builder, z: usize, n: u32, c: impl Fn(u32) -> f64) -> usize {
    let mut p = b.f(c(n));
    for k in (0..n).rev() {
        let m = b.mul(p, z);
        let ck = b.f(c(k));
        p = b.add(m, ck);
    }
    p
}

/// `(−1)^k`.
fn alternate(k: u32) -> f64 {
    if k.is_multiple_of(2) {
        1.0
    } else {
        -1.0
    }
}

/// `sin(hi + lo)` for |hi + lo| ≤ π/4 as an unevaluated sum: `hi + (hi·z·P(z) + lo·(1 −
/// z/2))`, z = hi², P(z) = −1/3! + z/5! − … (the terms beyond z^9/21! are below 2^−63 of
/// the result).
fn sin_dd(b: &mut Builder, hi: usize, lo: usize) -> (usize, usize) {
    let z = b.mul(hi, hi);
    let p = horner(b, z, 9, |k| -alternate(k) / factorial(2 * k + 3));
    let hz = b.mul(hi, z);
    let odd = b.mul(hz, p);
    let half = b.mulc(z, 0.5);
    let one = b.f(1.0);
    let c = b.sub(one, half);
    let lc = b.mul(lo, c);
    let corr = b.add(odd, lc);
    two_sum(b, hi, corr)
}

/// `cos(hi + lo)` for |hi + lo| ≤ π/4 as an unevaluated sum: with r² = zh + zl + 2·hi·lo
/// (zh + zl = hi² exactly), `w + (((1 − w) − zh/2) + (zh²·Q(zh) − (zl/2 + hi·lo)))`,
/// w = 1 − zh/2, Q(z) = 1/4! − z/6! + … (beyond z^9/22!: below 2^−63).
fn cos_dd(b: &mut Builder, hi: usize, lo: usize) -> (usize, usize) {
    let (zh, zl) = two_product_var(b, hi, hi);
    let q = horner(b, zh, 9, |k| alternate(k) / factorial(2 * k + 4));
    let hz = b.mulc(zh, 0.5);
    let one = b.f(1.0);
    let w = b.sub(one, hz);
    // 1 − w is exact and so is its difference from zh/2: w's rounding error.
    let err = b.sub(one, w);
    let err = b.sub(err, hz);
    let z2 = b.mul(zh, zh);
    let tail = b.mul(z2, q);
    let half_zl = b.mulc(zl, 0.5);
    let cross = b.mul(hi, lo);
    let small = b.add(half_zl, cross);
    let tail = b.sub(tail, small);
    let corr = b.add(err, tail);
    two_sum(b, w, corr)
}

/// `(nh + nl) / (dh + dl)` rounded once: the quotient of the high parts, corrected by the
/// remainder (`nh − q·dh` exact through Dekker's product).
fn divide_dd(b: &mut Builder, nh: usize, nl: usize, dh: usize, dl: usize) -> usize {
    let q = b.push(Step::FDiv(nh, dh));
    let (p, pe) = two_product_var(b, q, dh);
    let rem = b.sub(nh, p);
    let rem = b.sub(rem, pe);
    let rem = b.add(rem, nl);
    let qdl = b.mul(q, dl);
    let rem = b.sub(rem, qdl);
    let c = b.push(Step::FDiv(rem, dh));
    b.add(q, c)
}

#[cfg(test)]
mod tests {
    use super::TWO_OVER_PI;

    /// A non-negative integer in little-endian 64-bit limbs, with the few operations
    /// Machin's formula and the check below need.
    #[derive(Clone, PartialEq, Eq)]
    struct Big(Vec<u64>);

    const LIMBS: usize = 48;

    impl Ord for Big {
        fn cmp(&self, o: &Big) -> std::cmp::Ordering {
            self.0.iter().rev().cmp(o.0.iter().rev())
        }
    }
    impl PartialOrd for Big {
        fn partial_cmp(&self, o: &Big) -> Option<std::cmp::Ordering> {
            Some(self.cmp(o))
        }
    }

    impl Big {
        fn pow2(k: usize) -> Big {
            let mut v = vec![0; LIMBS];
            v[k / 64] = 1 << (k % 64);
            Big(v)
        }
        fn from_small(n: u64) -> Big {
            let mut v = vec![0; LIMBS];
            v[0] = n;
            Big(v)
        }
        fn is_zero(&self) -> bool {
            self.0.iter().all(|&l| l == 0)
        }
        fn div_small(&self, d: u64) -> Big {
            let mut out = vec![0; LIMBS];
            let mut rem: u128 = 0;
            for i in (0..LIMBS).rev() {
                let cur = (rem << 64) | u128::from(self.0[i]);
                out[i] = (cur / u128::from(d)) as u64;
                rem = cur % u128::from(d);
            }
            Big(out)
        }
        fn add(&self, o: &Big) -> Big {
            let mut out = vec![0; LIMBS];
            let mut carry = 0u128;
            for (i, limb) in out.iter_mut().enumerate() {
                let s = u128::from(self.0[i]) + u128::from(o.0[i]) + carry;
                *limb = s as u64;
                carry = s >> 64;
            }
            assert_eq!(carry, 0);
            Big(out)
        }
        fn sub(&self, o: &Big) -> Big {
            assert!(self >= o);
            let mut out = vec![0; LIMBS];
            let mut borrow = 0i128;
            for (i, limb) in out.iter_mut().enumerate() {
                let d = i128::from(self.0[i]) - i128::from(o.0[i]) - borrow;
                *limb = d as u64;
                borrow = i128::from(d < 0);
            }
            Big(out)
        }
        fn mul(&self, o: &Big) -> Big {
            let mut acc = vec![0u128; 2 * LIMBS];
            for (i, &a) in self.0.iter().enumerate() {
                let mut carry = 0u128;
                for (j, &b) in o.0.iter().enumerate() {
                    let t = acc[i + j] + u128::from(a) * u128::from(b) + carry;
                    acc[i + j] = t & u128::from(u64::MAX);
                    carry = t >> 64;
                }
                acc[i + LIMBS] += carry;
            }
            assert!(acc[LIMBS..].iter().all(|&l| l == 0), "overflow");
            Big(acc[..LIMBS].iter().map(|&l| l as u64).collect())
        }
    }

    /// atan(1/k) · 2^bits, each term truncated (an error of under one unit per term).
    fn atan_inv(k: u64, bits: usize) -> Big {
        let mut t = Big::pow2(bits).div_small(k);
        let mut sum = Big::from_small(0);
        let mut n = 0u64;
        while !t.is_zero() {
            let term = t.div_small(2 * n + 1);
            sum = if n.is_multiple_of(2) {
                sum.add(&term)
            } else {
                sum.sub(&term)
            };
            t = t.div_small(k * k);
            n += 1;
        }
        sum
    }

    #[test]
    fn two_over_pi_is_two_over_pi() {
        // π · 2^1280 by Machin's formula, within 2^12 units (a few hundred truncated terms).
        const B: usize = 1280;
        let pi = atan_inv(5, B)
            .mul(&Big::from_small(16))
            .sub(&atan_inv(239, B).mul(&Big::from_small(4)));
        // The table as an integer T, which should be ⌊2^1217 / π⌋: then
        // D = 2^(1217 + B) − T·π·2^B lies in [0, π·2^B), and with π·2^B known to within 2^12,
        // so must the computed D, by a margin of T · 2^12.
        let mut t = vec![0u64; LIMBS];
        for (i, &w) in TWO_OVER_PI.iter().enumerate() {
            t[TWO_OVER_PI.len() - 1 - i] = w;
        }
        let t = Big(t);
        let (top, tpi) = (Big::pow2(1217 + B), t.mul(&pi));
        let margin = t.mul(&Big::from_small(1 << 12));
        assert!(top > tpi.add(&margin), "the table is too large");
        assert!(top.sub(&tpi).add(&margin) < pi, "the table is too small");
    }
}
