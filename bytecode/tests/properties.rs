//! Property tests without external crates: random and mutated inputs never panic `decode`,
//! `verify` or `disassemble`, and whatever decodes re-encodes to the very same bytes.

mod common;

use cajeta_bytecode::*;
use common::*;

/// Runs the whole untrusted-input pipeline on `bytes` and checks the canonical-encoding
/// property. Returns (decoded, verified).
fn check(bytes: &[u8]) -> (bool, bool) {
    let Ok(m) = decode(bytes) else {
        return (false, false);
    };
    // The decoder accepts only canonical encodings, so re-encoding reproduces the input…
    let again = encode(&m);
    assert_eq!(again, bytes, "decode accepted a non-canonical encoding");
    // …and a second decode gives the same module.
    let m2 = decode(&again).expect("re-encoded module must decode");
    assert_eq!(m2, m);
    let verified = verify(&m).is_ok();
    // The disassembler must cope with unverified modules too.
    let text = disassemble(&m);
    assert!(text.starts_with("module"));
    (true, verified)
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::new(0x00c0_ffee_1234_5678);
    let header: Vec<u8> = {
        let mut h = b"CJB\0".to_vec();
        h.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        h
    };
    for n in 0..20_000 {
        let len = rng.below(200);
        let mut bytes: Vec<u8> = match n % 3 {
            // Pure noise (mostly rejected by the magic check).
            0 => Vec::new(),
            // A valid header, then noise.
            1 => header.clone(),
            // A valid header and a plausible first section tag.
            _ => {
                let mut b = header.clone();
                b.push(1);
                b.extend_from_slice(&(rng.below(64) as u32).to_le_bytes());
                b
            }
        };
        for _ in 0..len {
            // Skew towards small values, which make plausible counts and tags.
            let b = if rng.below(2) == 0 {
                rng.byte() % 8
            } else {
                rng.byte()
            };
            bytes.push(b);
        }
        check(&bytes);
    }
}

#[test]
fn mutations_of_a_valid_encoding_never_panic() {
    let valid = encode(&sample_module());
    assert_eq!(check(&valid), (true, true));
    let mut rng = Rng::new(0x5eed_0000_0000_0042);
    let (mut decoded, mut verified) = (0, 0);
    for _ in 0..20_000 {
        let mut bytes = valid.clone();
        let edits = 1 + rng.below(4);
        for _ in 0..edits {
            if bytes.is_empty() {
                break;
            }
            let at = rng.below(bytes.len());
            match rng.below(6) {
                0 | 1 => bytes[at] ^= 1 << rng.below(8),
                2 => bytes[at] = rng.byte(),
                3 => bytes.truncate(at),
                4 => bytes.insert(at, rng.byte()),
                _ => {
                    bytes.remove(at);
                }
            }
        }
        let (d, v) = check(&bytes);
        decoded += d as u32;
        verified += v as u32;
    }
    // Bit flips inside instruction operands keep the framing intact, so a fair share of the
    // mutants must decode (and some verify): otherwise this test would not reach `verify`.
    assert!(decoded > 1_000, "only {decoded} mutants decoded");
    assert!(verified > 10, "only {verified} mutants verified");
}

#[test]
fn random_instructions_in_a_valid_module_never_panic_verify() {
    // Keep the framing valid and randomise only the code: exercises every verifier rule.
    let mut rng = Rng::new(0x0bad_cafe);
    let mut m = sample_module();
    let mut verified = 0;
    for _ in 0..20_000 {
        let fi = rng.below(m.functions.len());
        let nregs = m.functions[fi].regs.len();
        let pc = rng.below(m.functions[fi].code.len());
        let op = Op::ALL[rng.below(Op::COUNT)];
        let mut operand = || {
            if rng.below(4) == 0 {
                rng.next() as u16
            } else {
                rng.below(nregs + 2) as u16
            }
        };
        let (a, b, c) = (operand(), operand(), operand());
        let saved = std::mem::replace(&mut m.functions[fi].code[pc], Instr::new(op, a, b, c));
        if verify(&m).is_ok() {
            verified += 1;
        }
        // The mutated function only: the rest of the listing is unchanged and slow in debug.
        let text = dis::disassemble_function(&m, fi);
        assert!(text.contains(op.mnemonic()));
        m.functions[fi].code[pc] = saved;
    }
    assert!(verified > 0, "no random instruction was ever valid");
}
