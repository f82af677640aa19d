//! No-panic tests: the parser must terminate without panicking on every truncation and on
//! thousands of random mutations of valid programs, and its diagnostics must lie inside the
//! text. The generator is a fixed-seed xorshift, so failures are reproducible.

use cajeta_compiler::diag::Severity;
use cajeta_compiler::parser::parse;

/// A program exercising most of the grammar.
const CORPUS: &str = r#"package demo.app;

import cajeta.xpu.*;
import cajeta.xpu.KernelBuffer;

/** A doc comment with @EntryPoint inside. */
@Occupancy(maxThreads = 256, tags = {1, 2})
public final class Main {
    static final int32 N = 1_000, M = 0x1F;
    private float32[] data;
    String name = "caf\u00e9\t\"x\"";
    char c = '\n';

    Main(int32 n) { this.n = n; return; }
    ~Main() { }
    static { N = 2; }

    @Kernel
    public static void k(KernelBuffer<float32> y, KernelBuffer<float32> x, float32 a, uint32 n) {
        Shared<float32> tile = shared float32[256];
        uint32 i = KernelThread.globalIdX();
        if (i < n) { y[i] = a * x[i] + y[i]; } else { y[i] = -1.5e-3f; }
        for (uint32 j, float32 v : x.range(n)) { tile[j & 255] += v; }
        Vector<float32, 4> q = x.vload<4>(i);
    }

    static #Foo make(final int32 a, #Foo b) { return #= b; }

    public static int32 run() {
        uint32 n = 1000;
        float32[] hx = heap float32[n];
        int32[][] grid = heap int32[3][4];
        int32[] lit = [1, 2, 3];
        KernelBuffer<float32> x = KernelBuffer<float32>.alloc(n);
        KernelStream s = KernelStream.current();
        k.launch(s, grid: [(n + 255) / 256], block: [256])(x, x, 2.5f, n);
        s.sync();
        int64 big = 9223372036854775807L;
        uint64 u = 18446744073709551615;
        int32 sh = (int32) (u >>> 3) << 2 >> 1;
        boolean b = !(sh >= 3) && (sh != 4 || sh <= 5) ? true : false;
        label: for (int32 i = 0, j = 10; i < j; i++, j--) {
            switch (i) { case 1: case 2, 3: continue label; default: break; }
            do { i += 2; } while (i % 7 != 0);
        }
        int32 r = switch (sh) { case 1 -> 10; case 2, 3 -> 20; default -> -1; };
        for (float32 v : hx) { sum = sum + v * 0x1.8p3; }
        Params p = heap Params(3, 7);
        Params q = #p;
        System.stdout.println("x={} y={:.2}", r, 1.0 / 3);
        return (int32) hx[0] * 2 - ~r;
    }
}

class Other { static void f() { Main.k.launch(grid: 1, block: [2, 2, 2])(y: a, x: b, a: 1.0f, n: 4); } }
"#;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Runs `f` on a thread with a stack like the driver's (mutations may nest up to the parser's
/// depth limit, which needs more than the 2 MiB of a test thread in debug builds).
fn on_big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(f)
        .map(|h| h.join())
        .unwrap_or_else(|e| panic!("spawn: {e}"))
        .unwrap_or_else(|_| panic!("parser thread panicked"));
}

/// Parses `text` and checks the diagnostics' spans.
fn check(text: &str) {
    let (_, diags) = parse(3, text);
    for d in &diags {
        if let Some(s) = d.span {
            assert!(
                s.start <= s.end && s.end as usize <= text.len(),
                "bad span {s:?} for {text:?}"
            );
            assert_eq!(s.file, 3);
        }
        assert!(d.severity == Severity::Error);
        assert!(!d.message.is_empty());
    }
}

#[test]
fn corpus_parses_cleanly() {
    let (u, d) = parse(0, CORPUS);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(u.classes.len(), 2);
}

#[test]
fn every_truncation() {
    on_big_stack(|| {
        for (i, _) in CORPUS.char_indices() {
            check(&CORPUS[..i]);
            check(&CORPUS[i..]);
        }
    });
}

const FRAGMENTS: &[&str] = &[
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ";",
    ",",
    ".",
    "<",
    ">",
    ">>",
    "=",
    "#",
    "#=",
    "?",
    ":",
    "->",
    "'",
    "\"",
    "\"\"\"",
    "/*",
    "*/",
    "//",
    "\\",
    "\\u",
    "0x",
    "1e",
    "08",
    "class",
    "if",
    "else",
    "for",
    "switch",
    "case",
    "default",
    "heap",
    "stack",
    "shared",
    "int32",
    "KernelBuffer<",
    "vload<",
    "@",
    "~",
    "++",
    "--",
    "new",
    "var",
    "try",
    "enum",
    "import",
    "static",
    "final",
    "return",
    "x",
    "\u{e9}",
    "\u{1F600}",
    "\u{A0}",
    "\0",
    "\n",
    " ",
];

fn mutate(rng: &mut Rng, src: &str) -> String {
    let mut chars: Vec<char> = src.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(chars.len() + 1);
        match rng.below(5) {
            0 => {
                let len = rng.below(20).min(chars.len() - at.min(chars.len()));
                chars.drain(at..at + len);
            }
            1 => {
                let f = FRAGMENTS[rng.below(FRAGMENTS.len())];
                chars.splice(at..at, f.chars());
            }
            2 => {
                // Duplicate a slice somewhere else.
                let end = (at + rng.below(40)).min(chars.len());
                let piece: Vec<char> = chars[at..end].to_vec();
                let to = rng.below(chars.len() + 1);
                chars.splice(to..to, piece);
            }
            3 => {
                if at < chars.len() {
                    chars[at] = char::from_u32(rng.below(0x80) as u32).unwrap_or(' ');
                }
            }
            _ => {
                let n = 1 + rng.below(300);
                let f = FRAGMENTS[rng.below(FRAGMENTS.len())].repeat(n);
                chars.splice(at..at, f.chars());
            }
        }
    }
    chars.into_iter().collect()
}

#[test]
fn random_mutations() {
    on_big_stack(|| {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..3000 {
            let text = mutate(&mut rng, CORPUS);
            check(&text);
        }
    });
}

#[test]
fn random_token_soup() {
    on_big_stack(|| {
        let mut rng = Rng(0xDEAD_BEEF_1234_5678);
        let words: Vec<&str> = CORPUS.split_whitespace().collect();
        for _ in 0..1000 {
            let n = rng.below(200);
            let text: Vec<&str> = (0..n)
                .map(|_| {
                    if rng.below(4) == 0 {
                        FRAGMENTS[rng.below(FRAGMENTS.len())]
                    } else {
                        words[rng.below(words.len())]
                    }
                })
                .collect();
            check(&text.join(" "));
        }
    });
}

#[test]
fn random_bytes() {
    on_big_stack(|| {
        let mut rng = Rng(0x0123_4567_89AB_CDEF);
        for _ in 0..1000 {
            let n = rng.below(300);
            let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            check(&String::from_utf8_lossy(&bytes));
        }
    });
}
