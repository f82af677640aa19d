//! In-suite property test of the front-end (the `cargo fuzz` target `compile` explores the
//! same property for longer): mutated conformance programs never panic the compiler, and every
//! module the compiler accepts passes the verifier.

use cajeta_compiler::driver::compile_sources;
use std::path::{Path, PathBuf};

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn programs(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("programs dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            programs(&p, out);
        } else if p.extension().is_some_and(|x| x == "cajeta") {
            out.push(p);
        }
    }
}

/// One random edit: delete, duplicate or swap a span, or splice in a token.
fn mutate(rng: &mut XorShift, src: &mut Vec<u8>) {
    const TOKENS: &[&str] = &[
        "{",
        "}",
        "(",
        ")",
        ";",
        "#",
        "heap ",
        "int32 ",
        "return ",
        "while (true) ",
        "x",
        "0x",
        "\"",
        "'",
        "/*",
        "<",
        ">>",
        "@Kernel ",
        ".launch(",
        "[",
        "]",
        "-2147483648",
        "1e999",
    ];
    let len = src.len();
    match rng.below(4) {
        0 if len > 0 => {
            let a = rng.below(len);
            let b = (a + 1 + rng.below(16)).min(len);
            src.drain(a..b);
        }
        1 if len > 0 => {
            let a = rng.below(len);
            let b = (a + 1 + rng.below(32)).min(len);
            let piece = src[a..b].to_vec();
            let at = rng.below(len);
            src.splice(at..at, piece);
        }
        2 if len > 1 => {
            let (a, b) = (rng.below(len), rng.below(len));
            src.swap(a, b);
        }
        _ => {
            let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
            let at = rng.below(len + 1);
            src.splice(at..at, t.iter().copied());
        }
    }
}

#[test]
fn mutated_programs_never_panic_and_compile_to_verified_bytecode() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs");
    let mut files = vec![];
    programs(&root, &mut files);
    files.sort();
    assert!(!files.is_empty());
    let iterations: usize = std::env::var("CAJETA_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    // The compiler is recursive (bounded by the parser's nesting limit): give it the stack
    // the CLI gives it.
    let worker = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
            let mut accepted = 0;
            for f in &files {
                let original = std::fs::read(f).expect("read program");
                for _ in 0..iterations {
                    let mut src = original.clone();
                    for _ in 0..1 + rng.below(3) {
                        mutate(&mut rng, &mut src);
                    }
                    let input = src.clone();
                    let c = std::panic::catch_unwind(|| {
                        compile_sources(vec![("Fuzz.cajeta".into(), input)])
                    })
                    .unwrap_or_else(|_| {
                        panic!(
                            "compiler panicked on a mutation of {}:\n{}",
                            f.display(),
                            String::from_utf8_lossy(&src)
                        )
                    });
                    if let Some(m) = c.module {
                        accepted += 1;
                        if let Err(e) = cajeta_bytecode::verify(&m) {
                            panic!(
                                "{e}\nfor a mutation of {}:\n{}",
                                f.display(),
                                String::from_utf8_lossy(&src)
                            );
                        }
                    }
                }
            }
            accepted
        });
    let accepted = worker.expect("spawn").join().expect("fuzz worker");
    println!("compiler fuzz: {accepted} mutated programs compiled and verified");
}
