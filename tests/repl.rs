//! `cajeta repl` driven through piped stdin: each test feeds a script and compares the
//! merged stdout and stderr exactly (no prompts are printed without a terminal).

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs `cajeta repl` (cpu backend) on `script`; returns the merged output and exit status.
fn repl(script: &str) -> (String, i32) {
    repl_bytes(script.as_bytes())
}

/// [`repl`] on input that need not be UTF-8.
fn repl_bytes(script: &[u8]) -> (String, i32) {
    repl_with(script, None)
}

/// [`repl_bytes`] with `CAJETA_XPU_BACKEND` set to `backend_env`, if given.
fn repl_with(script: &[u8], backend_env: Option<&str>) -> (String, i32) {
    let dir = std::env::temp_dir().join(format!(
        "cajeta-repl-test-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let out_path = dir.join("out.txt");
    let out = std::fs::File::create(&out_path).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cajeta"));
    match backend_env {
        Some(b) => cmd.arg("repl").env("CAJETA_XPU_BACKEND", b),
        None => cmd
            .args(["repl", "--backend", "cpu"])
            .env_remove("CAJETA_XPU_BACKEND"),
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::from(out.try_clone().unwrap()))
        .stderr(Stdio::from(out))
        .spawn()
        .expect("cajeta runs");
    child.stdin.take().unwrap().write_all(script).unwrap();
    let status = child.wait().unwrap().code().unwrap_or(-1);
    let text = std::fs::read_to_string(&out_path).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (text, status)
}

fn check(script: &str, expected: &str) {
    let (out, status) = repl(script);
    assert_eq!(out, expected, "output of:\n{script}");
    assert_eq!(status, 0);
}

#[test]
fn buffer_kernel_show_mem_error_reset() {
    check(
        r#"import cajeta.xpu.*;
KernelBuffer<float32> b = heap KernelBuffer<float32>(8);
float32[] h = heap float32[8];
for (int32 i = 0; i < 8; i++) { h[i] = i * 1.5f; }
b.upload(h);
b
@Kernel
void scale(KernelBuffer<float32> y, float32 a,
           uint32 n) {
    uint32 i = KernelThread.globalIdX();
    if (i < n) { y[i] = y[i] * a; }
}
scale.launch(grid: [1], block: [8])(b, 2.0f, 8);
KernelStream.current().sync();
:show b
:show b 2..4
:show b 7
:mem
int32 y = cnt + 1;
h[10] = 1.0f;
h[1]
:reset
:mem
b
"#,
        r#": KernelBuffer<float32> (length 8, 32 bytes, cpu) = [0, 1.5, 3, 4.5, 6, 7.5, 9, 10.5]
b[0..8] = [0, 3, 6, 9, 12, 15, 18, 21]
b[2..4] = [6, 9]
b[7..8] = [21]
live buffers:
  b : KernelBuffer<float32> (length 8, 32 bytes, cpu)
device memory: live=32 peak=32 allocs=1 frees=0
<input>:1:11: error[CAJETA_ERROR_VARIABLE_NOT_FOUND]: unknown name 'cnt'
 1 | int32 y = cnt + 1;
   |           ^^^
cajeta: runtime error: E-BOUNDS: index 10 out of bounds for length 8
  at <input> (<input>:1:1)
: float32 = 1.5
session reset
no live buffers in session variables
device memory: live=0 peak=0 allocs=0 frees=0
<input>:1:1: error[CAJETA_ERROR_VARIABLE_NOT_FOUND]: unknown name 'b'
 1 | b
   | ^
"#,
    );
}

#[test]
fn echo_shows_values_with_their_types() {
    check(
        r#"uint8 a = 200;
uint8 c = 100;
a + c
(int32) a + c
1.0 / 3
"text" + 1
'x'
3 > 2
int64[] big = heap int64[10];
for (int32 i = 0; i < 10; i++) { big[i] = i * i; }
big
System.stdout.println("printed")
String s = null;
s
"#,
        r#": uint8 = 44
: int32 = 300
: float64 = 0.333333
: String = "text1"
: char = 'x'
: boolean = true
: int64[] (count 10) = [0, 1, 4, 9, ..., 36, 49, 64, 81]
printed
: String = null
"#,
    );
}

/// Arrays whose elements are arrays, buffers or streams show those elements (not `null`),
/// and `:mem` lists a buffer held in an element or a field of a session variable.
#[test]
fn elements_that_are_objects_show_and_count_as_live() {
    check(
        r#"import cajeta.xpu.*;
int32[][] g = heap int32[2][3];
g
g[1][2] = 7;
:show g 1..2
String[] s = heap String[2];
s[1] = "b";
s
class Holder { KernelBuffer<int32> b; }
Holder o = heap Holder();
o.b = heap KernelBuffer<int32>(2);
KernelBuffer<float32>[] bs = heap KernelBuffer<float32>[2];
bs[1] = heap KernelBuffer<float32>(3);
bs
:mem
"#,
        r#": int32[][] (count 2) = [<array, count 3>, <array, count 3>]
g[1..2] = [<array, count 3>]
: String[] (count 2) = [null, "b"]
: KernelBuffer<float32>[] (count 2) = [null, <length 3, 12 bytes, cpu>]
live buffers:
  o.b : KernelBuffer<int32> (length 2, 8 bytes, cpu)
  bs[1] : KernelBuffer<float32> (length 3, 12 bytes, cpu)
device memory: live=20 peak=20 allocs=2 frees=0
"#,
    );
}

#[test]
fn functions_and_classes_persist_and_can_be_redefined() {
    check(
        r#"int32 twice(int32 x) { return 2 * x; }
twice(21)
int32 twice(int32 x) { return 3 * x; }
twice(21)
class Counter {
    static int32 made = 100;
    int32 n;
    Counter(int32 start) { n = start; made = made + 1; }
}
Counter k = heap Counter(7);
k.n + Counter.made
k
int32 total = 0;
void add(int32 v) { total = total + v; }
add(5);
add(6);
total
"#,
        r#": int32 = 42
: int32 = 63
: int32 = 108
: Counter = Counter{n=7}
: int32 = 11
"#,
    );
}

#[test]
fn redeclaring_and_dropping_release_buffers() {
    check(
        r#"import cajeta.xpu.*;
KernelBuffer<int32> b = heap KernelBuffer<int32>(4);
KernelBuffer<int32> b = heap KernelBuffer<int32>(16);
:mem
:drop b
:mem
"#,
        r#"live buffers:
  b : KernelBuffer<int32> (length 16, 64 bytes, cpu)
device memory: live=64 peak=64 allocs=2 frees=1
dropped b
no live buffers in session variables
device memory: live=0 peak=64 allocs=2 frees=2
"#,
    );
}

#[test]
fn commands_type_dis_load_time_jit() {
    let dir = std::env::temp_dir().join(format!("cajeta-repl-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("defs.cajeta");
    std::fs::write(
        &file,
        "class Sq {\n    static int64 of(int64 v) { return v * v; }\n}\nint64 cube(int64 v) { return v * Sq.of(v); }\n",
    )
    .unwrap();
    let script = format!(
        ":type 1 + 2L\n:type System.stdout.println(1)\n:load {}\ncube(3)\n:jit off\n:jit\n:dis nothing\n:frob\n",
        file.display()
    );
    let (out, status) = repl(&script);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        out,
        "int64\nvoid\n: int64 = 27\njit: off\njit: off\n\
         cajeta: error: no function, kernel or class named 'nothing'\n\
         cajeta: error: unknown command ':frob' (:help lists them)\n"
    );
    assert_eq!(status, 0);
    let (out, _) = repl("int32 f() { return 1; }\n:dis f\n:time int32 z = f();\n");
    assert!(out.starts_with("function "), "{out}");
    assert!(out.contains("Repl.f"), "{out}");
    assert!(
        out.lines()
            .last()
            .is_some_and(|l| l.starts_with("time: ") && l.ends_with(" ms")),
        "{out}"
    );
}

#[test]
fn errors_point_into_earlier_entries_and_exit_status() {
    let (out, status) = repl(
        "int32 div(int32 a, int32 b) {\n    return a / b;\n}\ndiv(1, 0)\ndiv(9, 3)\nSystem.exit(3);\nSystem.stdout.println(\"not reached\");\n",
    );
    assert_eq!(
        out,
        "cajeta: runtime error: E-DIVZERO: integer division by zero\n  at Repl.div (<entry 1>:2:12)\n  at <input> (<input>:1:1)\n: int32 = 3\n"
    );
    assert_eq!(status, 3);
}

/// The REPL drops values as a program would (LANGUAGE §6.4–6.5): redeclaring a variable, an
/// owned result after its echo, `:drop`, a redeclared array's elements (last index first)
/// and the end of the session run destructors; `:drop` of a borrowing variable drops
/// nothing; `System.exit` ends at once, with no drops (§5.8).
#[test]
fn releases_run_destructors_and_borrows_drop_nothing() {
    check(
        r#"class T { int32 n; T(int32 s) { n = s; } ~T() { System.stdout.println("drop " + n); } }
T a = heap T(1);
T a = heap T(2);
a
heap T(9)
T[] arr = heap T[2];
arr[0] = heap T(3);
arr[1] = heap T(4);
T[] arr = heap T[1];
:drop a
T b = heap T(5);
T c = b;
:drop c
System.stdout.println("end");
"#,
        r#"drop 1
: T = T{n=2}
: T = T{n=9}
drop 9
drop 4
drop 3
drop 2
dropped a
dropped c
end
drop 5
"#,
    );
    let (out, status) = repl(
        "class T { ~T() { System.stdout.println(\"drop\"); } }\nT a = heap T();\nSystem.exit(4);\n",
    );
    assert_eq!((out.as_str(), status), ("", 4));
}

/// A declaration typed without its final `;` declares a session variable; the session's own
/// names (`Repl`, `$…`) are refused with a diagnostic, and the session goes on.
#[test]
fn declarations_without_semicolon_and_reserved_names() {
    check(
        "int32 x = 2 + 3\nx\nvoid $run() { }\nint32 Repl = 3;\nx\n",
        r#": int32 = 5
<input>:1:6: error[CAJETA_ERROR_SYNTAX]: '$run' is reserved in the REPL (the session class `Repl` and names starting with `$`)
 1 | void $run() { }
   |      ^^^^
<input>:1:7: error[CAJETA_ERROR_SYNTAX]: 'Repl' is reserved in the REPL (the session class `Repl` and names starting with `$`)
 1 | int32 Repl = 3;
   |       ^^^^
: int32 = 5
"#,
    );
}

/// A line that is not UTF-8 (LANGUAGE §1) is reported and its entry discarded; the session
/// and the rest of the input go on.
#[test]
fn input_that_is_not_utf8_is_reported_and_skipped() {
    let (out, status) = repl_bytes(b"int32 x = 1;\n// caf\xe9\nx\n\xff\n2\n");
    let bad =
        "cajeta: error[CAJETA_ERROR_SYNTAX]: the input is not valid UTF-8; the entry was discarded\n";
    assert_eq!(out, format!("{bad}: int32 = 1\n{bad}: int32 = 2\n"));
    assert_eq!(status, 0);
}

/// Control characters in echoed strings and chars are escaped as Cajeta writes them
/// (LANGUAGE §1), never sent raw to the terminal.
#[test]
fn echoes_escape_control_characters() {
    check(
        "\"a\\rb\\bc\\fd\\0e\"\n(char)7\nchar[] cs = heap char[2];\ncs\n",
        r#": String = "a\rb\bc\fd\u0000e"
: char = '\u0007'
: char[] (count 2) = ['\u0000', '\u0000']
"#,
    );
}

/// A command given words it does not take says so and does nothing (`:quit now` does not
/// quit, `:reset all` does not reset).
#[test]
fn commands_refuse_extra_words() {
    check(
        "int32 k = 4;\n:reset all\n:quit now\n:jit off eager\n:drop k k\nk\n",
        "cajeta: error: ':reset' takes no argument (:help lists the commands)\n\
         cajeta: error: ':quit' takes no argument (:help lists the commands)\n\
         cajeta: error: ':jit' takes one argument (:help lists the commands)\n\
         cajeta: error: ':drop' takes one argument (:help lists the commands)\n\
         : int32 = 4\n",
    );
}

/// A command that needs an argument and has none says what it takes, instead of acting on
/// an empty name (`:load` reading '', `:time` running nothing).
#[test]
fn commands_without_their_argument_say_what_they_take() {
    check(
        ":time\n:load\n:show\n:drop\n:dis\n:type\n",
        "cajeta: error: ':time' needs an argument: :time ENTRY  run an entry and print its wall time\n\
         cajeta: error: ':load' needs an argument: :load FILE  enter a file's imports, classes, functions and statements\n\
         cajeta: error: ':show' needs an argument: :show NAME [A..B]  elements of a buffer or array (all, or A..B)\n\
         cajeta: error: ':drop' needs an argument: :drop NAME  release a variable's object (buffers free their memory) now\n\
         cajeta: error: ':dis' needs an argument: :dis NAME  bytecode of a function, kernel or class\n\
         cajeta: error: ':type' needs an argument: :type EXPR  the type of an expression\n",
    );
}

/// `<entry N>` is the N-th entry typed, counting those that did not compile; an error that
/// leaves the session's generated class unclosed is reported once, at the user's text.
#[test]
fn entry_numbers_count_failed_entries_and_one_error_is_shown_once() {
    check(
        "int32 f() { return x; }\nint32 g(int32 a) { return 10 / a; }\n}\ng(0)\n",
        "<input>:1:20: error[CAJETA_ERROR_VARIABLE_NOT_FOUND]: unknown name 'x'\n \
         1 | int32 f() { return x; }\n   |                    ^\n\
         <input>:1:1: error[CAJETA_ERROR_SYNTAX]: expected an expression, found '}'\n \
         1 | }\n   | ^\n\
         cajeta: runtime error: E-DIVZERO: integer division by zero\n  \
         at Repl.g (<entry 2>:1:27)\n  at <input> (<input>:1:1)\n",
    );
}

/// `:load` of a program's file takes its `package` declaration (the session is a package
/// of its own).
#[test]
fn load_accepts_a_package_declaration() {
    let dir = std::env::temp_dir().join(format!("cajeta-repl-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("Twice.cajeta");
    std::fs::write(
        &file,
        "package demo.util;\nint32 twice(int32 x) { return 2 * x; }\n",
    )
    .unwrap();
    check(
        &format!(":load {}\ntwice(21)\n", file.display()),
        ": int32 = 42\n",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `:backend` before the first device touch names the backend `CAJETA_XPU_BACKEND` will
/// select (XPU §8.1), not `auto`.
#[test]
fn backend_names_the_environments_choice() {
    let (out, status) = repl_with(b":backend\n", Some("cpu"));
    assert_eq!(
        out,
        "backend: not selected yet (cpu, from CAJETA_XPU_BACKEND, at the first device touch)\n"
    );
    assert_eq!(status, 0);
}

/// Redefining a class with another layout starts its variables afresh (null), and with them
/// their owns-flags: nothing drops at the end (the new destructor once ran on null there).
#[test]
fn a_variable_reset_by_a_class_redefinition_owns_nothing() {
    check(
        r#"class P { int32 v = 7; ~P() { System.stdout.println("~P " + v); } }
P p = heap P();
class P { int32 v = 8; int32 w; ~P() { System.stdout.println("~P2 " + v); } }
p
P q = heap P();
:quit
"#,
        ": P = null\n~P2 8\n",
    );
}

/// An error in a destructor that runs after its entry's turn (at the session's end, for a
/// redeclared variable, for `:drop`) prints after the destructor's output, with its
/// position in what was typed (`<entry N>`), not in the generated session source.
#[test]
fn errors_of_later_drops_follow_their_output_and_point_at_the_entries() {
    check(
        r#"class P { int32 d; ~P() { System.stdout.println("dtor " + d); System.stdout.println(1 / d); } }
P p = heap P();
P p = null;
P r = heap P();
:drop r
P s = heap P();
:quit
"#,
        "dtor 0\n\
         cajeta: runtime error: E-DIVZERO: integer division by zero\n  at P.~P (<entry 1>:1:85)\n\
         dtor 0\n\
         cajeta: runtime error: E-DIVZERO: integer division by zero\n  at P.~P (<entry 1>:1:85)\n\
         dropped r\n\
         dtor 0\n\
         cajeta: runtime error: E-DIVZERO: integer division by zero\n  at P.~P (<entry 1>:1:85)\n",
    );
}

/// A destructor that fails while its variable is reassigned stops the entry before the store,
/// but the variable owns nothing from the drop's start: the session's end does not drop the
/// object a second time (LANGUAGE §6.5).
#[test]
fn a_destructor_that_failed_does_not_run_again_at_the_end() {
    check(
        r#"class P { int32 d; ~P() { System.stdout.println("dtor " + d); System.stdout.println(1 / d); } }
P p = heap P();
p = null;
:quit
"#,
        "dtor 0\n\
         cajeta: runtime error: E-DIVZERO: integer division by zero\n  at P.~P (<entry 1>:1:85)\n  at <input> (<input>:1:1)\n",
    );
}

/// `:drop` is a command, not a typed entry: the entries after it keep their numbers.
#[test]
fn drop_does_not_count_as_an_entry() {
    check(
        "class T { int32 a; T(int32 x) { a = x; } }\nT y = heap T(0);\n:drop y\n\
         int32 f(int32 i) { int32[] a = heap int32[1]; return a[i]; }\nf(3)\n",
        "dropped y\n\
         cajeta: runtime error: E-BOUNDS: index 3 out of bounds for length 1\n  at Repl.f (<entry 3>:1:54)\n  at <input> (<input>:1:1)\n",
    );
}
