//! Float `min`/`max` as every executor computes them (`min.fN`/`max.fN`, `Math.min`/`Math.max`):
//! IEEE 754-2019 minimumNumber/maximumNumber. A NaN operand yields the other operand, and
//! -0.0 counts as below +0.0, so the result never depends on the operand order (Rust's
//! `f32::min` leaves the sign of a zero tie open; GPU `min` instructions differ on it).

macro_rules! min_max {
    ($t:ty, $min:ident, $max:ident) => {
        #[doc = concat!("minimumNumber on `", stringify!($t), "`: the smaller operand; on a tie of zeros, -0.0.")]
        #[must_use]
        pub fn $min(x: $t, y: $t) -> $t {
            if x == y {
                // Equal and not NaN: the same bits, or two zeros whose sign bits combine.
                <$t>::from_bits(x.to_bits() | y.to_bits())
            } else {
                x.min(y)
            }
        }

        #[doc = concat!("maximumNumber on `", stringify!($t), "`: the larger operand; on a tie of zeros, +0.0.")]
        #[must_use]
        pub fn $max(x: $t, y: $t) -> $t {
            if x == y {
                <$t>::from_bits(x.to_bits() & y.to_bits())
            } else {
                x.max(y)
            }
        }
    };
}

min_max!(f32, min_f32, max_f32);
min_max!(f64, min_f64, max_f64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_are_ordered_whatever_the_operand_order() {
        for (x, y) in [(-0.0f64, 0.0f64), (0.0, -0.0)] {
            assert_eq!(min_f64(x, y).to_bits(), (-0.0f64).to_bits());
            assert_eq!(max_f64(x, y).to_bits(), 0.0f64.to_bits());
            assert_eq!(min_f32(x as f32, y as f32).to_bits(), (-0.0f32).to_bits());
            assert_eq!(max_f32(x as f32, y as f32).to_bits(), 0.0f32.to_bits());
        }
    }

    #[test]
    fn nan_yields_the_other_operand() {
        assert_eq!(min_f32(f32::NAN, 2.0), 2.0);
        assert_eq!(max_f64(-1.0, f64::NAN), -1.0);
        assert!(min_f64(f64::NAN, f64::NAN).is_nan());
        assert_eq!(min_f32(-3.0, 2.0), -3.0);
        assert_eq!(max_f32(f32::NEG_INFINITY, -7.5), -7.5);
    }
}
