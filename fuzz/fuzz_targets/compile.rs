//! Fuzz target: arbitrary source text through the whole front-end (lexer, parser, checker,
//! lowering), then the verifier on whatever it produced.
//!
//! Properties: the compiler never panics on any input, and every module it accepts passes
//! `verify` (a compiler that emits unverifiable bytecode is a bug, not a user error).
#![no_main]

use cajeta_compiler::driver::compile_sources;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let c = compile_sources(vec![("Fuzz.cajeta".to_string(), data.to_vec())]);
    if let Some(module) = c.module {
        if let Err(e) = cajeta_bytecode::verify(&module) {
            panic!("compiled module fails verification: {e}");
        }
    }
});
