//! Fuzz target: untrusted `.cjb` bytes through `decode` → `verify` → `disassemble`.
//!
//! Besides "never panics", it checks the decoder's canonical-encoding property: anything
//! `decode` accepts re-encodes to exactly the input bytes.
#![no_main]

use cajeta_bytecode::{decode, disassemble, encode, verify};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(module) = decode(data) else { return };
    assert_eq!(
        encode(&module),
        data,
        "decode accepted a non-canonical encoding"
    );
    // Verification may fail; the disassembler must cope with unverified modules either way.
    let _ = verify(&module);
    let text = disassemble(&module);
    assert!(text.starts_with("module"));
});
