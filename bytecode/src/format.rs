//! String conversion of primitive values (LANGUAGE §3.5): C `%g` for floats (§3.6), the
//! `{:.N}` fixed-point form (§5.9), characters and integers.
//!
//! Both float forms round the *exact* binary value, ties to even, like glibc's `printf`. They
//! are built on Rust's `{:.Ne}` / `{:.N}` formatting, which is exact (it never goes through a
//! shortest-representation step) and rounds exact ties to even; the unit tests below pin that
//! behaviour, including the §3.6 table and the §5.9 examples.

use std::fmt::Write as _;

/// Formats `x` like C `printf("%g", x)` (precision 6), with NaN as `nan`, infinities as
/// `inf`/`-inf` and −0.0 as `-0` (LANGUAGE §3.6).
///
/// ```
/// use cajeta_bytecode::format::fmt_g;
/// assert_eq!(fmt_g(1.0 / 3.0), "0.333333");
/// assert_eq!(fmt_g(1234567.0), "1.23457e+06");
/// ```
pub fn fmt_g(x: f64) -> String {
    let mut s = String::new();
    push_g(&mut s, x);
    s
}

/// Appends the `%g` form of `x` to `out` (see [`fmt_g`]).
pub fn push_g(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("nan");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "inf" } else { "-inf" });
        return;
    }
    if x == 0.0 {
        out.push_str(if x.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    // Six significant digits, correctly rounded from the exact binary value: `d.ddddde<X>`.
    let sci = format!("{:.5e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    // The exponent is always a plain decimal integer in Rust's `LowerExp` output.
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    if x < 0.0 {
        out.push('-');
    }
    if (-4..6).contains(&exp) {
        // Fixed notation with 5 - X decimals: the same six digits, with the point moved.
        let mut text = String::with_capacity(12);
        if exp >= 0 {
            let int_len = exp as usize + 1;
            text.extend(digits[..int_len].iter().map(|&d| d as char));
            text.push('.');
            text.extend(digits[int_len..].iter().map(|&d| d as char));
        } else {
            text.push_str("0.");
            for _ in 0..(-exp - 1) {
                text.push('0');
            }
            text.extend(digits.iter().map(|&d| d as char));
        }
        out.push_str(strip_fraction_zeros(&text));
    } else {
        let mut m = String::with_capacity(8);
        m.push(digits[0] as char);
        m.push('.');
        m.extend(digits[1..].iter().map(|&d| d as char));
        out.push_str(strip_fraction_zeros(&m));
        let _ = write!(
            out,
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        );
    }
}

/// Removes trailing zeros after a decimal point, then a bare point.
fn strip_fraction_zeros(s: &str) -> &str {
    if !s.contains('.') {
        return s;
    }
    s.trim_end_matches('0').trim_end_matches('.')
}

/// Formats `x` in fixed-point notation with exactly `decimals` digits after the point, like C
/// `printf("%.Nf", x)`: correctly rounded from the binary value, exact ties to even
/// (LANGUAGE §5.9). NaN prints `nan` (whatever its sign bit), infinities `inf`/`-inf`.
///
/// ```
/// use cajeta_bytecode::format::fmt_fixed;
/// assert_eq!(fmt_fixed(253687315.46875, 6), "253687315.468750");
/// assert_eq!(fmt_fixed(-0.125, 2), "-0.12");
/// ```
pub fn fmt_fixed(x: f64, decimals: usize) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    format!("{:.*}", decimals, x)
}

/// The `{}` / `{:.N}` format form (LANGUAGE §5.9) with run-time arguments: each is its string
/// conversion and its numeric value (NaN when not numeric, which `{:.N}` then prints as the
/// string conversion). `{{`/`}}` are literal braces; a placeholder without an argument left
/// prints `null`; anything else is literal text.
pub fn format_args(fmt: &str, args: &[(&str, f64)]) -> String {
    let chars: Vec<char> = fmt.chars().collect();
    let mut out = String::with_capacity(fmt.len() + 16 * args.len());
    let mut next = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if (c == '{' || c == '}') && chars.get(i + 1) == Some(&c) {
            out.push(c);
            i += 2;
            continue;
        }
        if c == '{' {
            if let Some(len) = chars[i..].iter().position(|&x| x == '}') {
                let spec: String = chars[i + 1..i + len].iter().collect();
                let decimals = match spec.as_str() {
                    "" => Some(None),
                    s => s
                        .strip_prefix(":.")
                        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                        .and_then(|d| d.parse::<usize>().ok())
                        .filter(|&n| n <= 340)
                        .map(Some),
                };
                if let Some(decimals) = decimals {
                    match args.get(next) {
                        None => out.push_str("null"),
                        Some((text, value)) => match decimals {
                            Some(n) if !value.is_nan() || *text == "nan" => {
                                out.push_str(&fixed_arg(text, *value, n))
                            }
                            _ => out.push_str(text),
                        },
                    }
                    next += 1;
                    i += len + 1;
                    continue;
                }
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// `{:.N}` of a numeric argument of [`format_args`], given as its string conversion and its
/// float64 value. An integer's float64 may have rounded (above 2^53) where its text is exact:
/// when the text is an integer whose float64 is `value`, the text is the exact value. (A
/// float's text is such an integer only when the float is one below 10^6, so then both agree.)
fn fixed_arg(text: &str, value: f64, decimals: usize) -> String {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let integer = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && text.parse::<i128>().is_ok_and(|t| t as f64 == value);
    match (integer, decimals) {
        (true, 0) => text.to_string(),
        (true, n) => format!("{text}.{}", "0".repeat(n)),
        (false, n) => fmt_fixed(value, n),
    }
}

/// The text of a `char` cell: the character in UTF-8, or U+FFFD for a value that is not a
/// Unicode scalar value (a surrogate or above U+10FFFF).
pub fn char_text(cell: u64) -> char {
    u32::try_from(cell)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or('\u{FFFD}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_integers_are_exact_and_integer_looking_floats_are_not_taken_for_them() {
        let big = 9007199254740993i64;
        assert_eq!(
            format_args("{:.0}", &[("9007199254740993", big as f64)]),
            "9007199254740993"
        );
        assert_eq!(format_args("{:.2}", &[("-5", -5.0)]), "-5.00");
        // 123456.5 converts to "123456" (%g): its own value is printed.
        assert_eq!(format_args("{:.1}", &[("123456", 123456.5)]), "123456.5");
        assert_eq!(format_args("{:.2}", &[("-0", -0.0)]), "-0.00");
        // A String argument is not numeric (NaN): printed as itself.
        assert_eq!(format_args("{:.2}", &[("12", f64::NAN)]), "12");
    }

    #[test]
    fn g_matches_the_language_3_6_table() {
        let rows: &[(f64, &str)] = &[
            (1500.0, "1500"),
            (100000.0, "100000"),
            (0.0001, "0.0001"),
            (0.1f32 as f64, "0.1"),
            (1000000.0, "1e+06"),
            (0.00001, "1e-05"),
            (1.0 / 3.0, "0.333333"),
            (1234567.0, "1.23457e+06"),
            (123456.5, "123456"),
            ((2.0f32 / 3.0f32) as f64, "0.666667"),
            (16777216.0f32 as f64, "1.67772e+07"),
            (1e100, "1e+100"),
        ];
        for &(x, want) in rows {
            assert_eq!(fmt_g(x), want, "%g of {x:e}");
        }
    }

    #[test]
    fn g_special_values() {
        assert_eq!(fmt_g(-0.0), "-0");
        assert_eq!(fmt_g(0.0), "0");
        assert_eq!(fmt_g(f64::NAN), "nan");
        assert_eq!(fmt_g(-f64::NAN), "nan");
        assert_eq!(fmt_g(f64::INFINITY), "inf");
        assert_eq!(fmt_g(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn g_edges_agree_with_c() {
        // Expected strings are glibc printf("%g") output.
        let rows: &[(f64, &str)] = &[
            (1.0, "1"),
            (-1.5, "-1.5"),
            (999999.5, "1e+06"),
            (999999.4, "999999"),
            (0.00012345678, "0.000123457"),
            (0.000099999996, "0.0001"),
            (0.0000999994, "9.99994e-05"),
            (123456789.0, "1.23457e+08"),
            (-1e-300, "-1e-300"),
            (5e-324, "4.94066e-324"),
            (f64::MAX, "1.79769e+308"),
            (100.0, "100"),
            (12.5, "12.5"),
            (0.5, "0.5"),
            (2.5e-5, "2.5e-05"),
            (1e21, "1e+21"),
            (3.0e-7, "3e-07"),
            (1.0000005, "1"),
            (1.0000015, "1"),
            (2.0000025, "2"),
        ];
        for &(x, want) in rows {
            assert_eq!(fmt_g(x), want, "%g of {x:e}");
        }
    }

    #[test]
    fn g_rounds_exact_ties_to_even() {
        // 0.5 + 2^-k style exact ties at the sixth digit.
        assert_eq!(fmt_g(1234565.0), "1.23456e+06");
        assert_eq!(fmt_g(1234575.0), "1.23458e+06");
        assert_eq!(fmt_g(100000.5), "100000");
        assert_eq!(fmt_g(100001.5), "100002");
    }

    #[test]
    fn fixed_matches_c() {
        assert_eq!(fmt_fixed(-0.125, 2), "-0.12");
        assert_eq!(fmt_fixed(-0.126, 2), "-0.13");
        assert_eq!(fmt_fixed(2.5, 0), "2");
        assert_eq!(fmt_fixed(3.5, 0), "4");
        assert_eq!(fmt_fixed(0.5, 0), "0");
        assert_eq!(fmt_fixed(253687315.46875, 6), "253687315.468750");
        assert_eq!(fmt_fixed(-0.0, 2), "-0.00");
        assert_eq!(fmt_fixed(-0.001, 2), "-0.00");
        assert_eq!(fmt_fixed(1e20, 3), "100000000000000000000.000");
        assert_eq!(fmt_fixed(0.1, 17), "0.10000000000000001");
        assert_eq!(fmt_fixed(-0.169075164, 9), "-0.169075164");
        assert_eq!(fmt_fixed(f64::NAN, 2), "nan");
        assert_eq!(fmt_fixed(f64::NEG_INFINITY, 2), "-inf");
        assert_eq!(fmt_fixed(1.0, 0), "1");
    }

    #[test]
    fn chars() {
        assert_eq!(char_text('A' as u64), 'A');
        assert_eq!(char_text(0x1F600), '😀');
        assert_eq!(char_text(0xD800), '\u{FFFD}');
        assert_eq!(char_text(0x110000), '\u{FFFD}');
        assert_eq!(char_text(u64::MAX), '\u{FFFD}');
    }
}
