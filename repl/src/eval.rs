//! The REPL's state and what one entry or command does: compile the session with the entry
//! ([`cajeta_compiler::session`]), swap the module under the live VM
//! ([`Vm::replace_module`]: statics, heap and buffers stay), run `Repl.$run`, print the echo.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use cajeta_bytecode::Module;
use cajeta_compiler::session::{
    split, Compiled, Echo, Session, Split, GENERATED_FILE, INPUT_LABEL, RUN_FN, SESSION_CLASS,
};
use cajeta_vm::{ErrorCode, InterruptHandle, JitMode, RuntimeError, Value, Vm, BACKEND_NAMES};

use crate::show;
use crate::ReplOptions;

/// What the loop does after an entry.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Read the next entry.
    Continue,
    /// Leave with this exit status (`:quit`, `System.exit`).
    Exit(u8),
}

/// The commands, for `:help` and completion.
pub const COMMANDS: &[(&str, &str)] = &[
    (":help", "this list"),
    (":quit", "leave (also Ctrl-D)"),
    (
        ":reset",
        "drop every variable, definition and buffer; start afresh",
    ),
    (
        ":mem",
        "live buffers of the session variables, device bytes live/peak",
    ),
    (
        ":backend",
        "[cpu|vulkan|cuda|auto]  show or choose the backend",
    ),
    (":type", "EXPR  the type of an expression"),
    (":dis", "NAME  bytecode of a function, kernel or class"),
    (
        ":load",
        "FILE  enter a file's imports, classes, functions and statements",
    ),
    (":time", "ENTRY  run an entry and print its wall time"),
    (
        ":jit",
        "[on|off]  show or set the JIT (auto tiering or interpreter only)",
    ),
    (
        ":show",
        "NAME [A..B]  elements of a buffer or array (all, or A..B)",
    ),
    (
        ":drop",
        "NAME  release a variable's object (buffers free their memory) now",
    ),
];

/// One interactive session: the compiled session state, the VM and the settings.
pub struct Repl {
    /// Definitions and variables so far.
    pub session: Session,
    vm: Vm,
    backend: Option<String>,
    jit: JitMode,
    memory_limit: Option<u64>,
    /// The VM's interrupt handle, triggered by the Ctrl-C handler while an entry runs
    /// (shared by every VM of the session, so it survives `:reset`).
    interrupt: InterruptHandle,
    /// `System.exit` ended the session.
    exited: bool,
    /// The entry whose module the VM runs: it maps the positions of errors raised later, by
    /// drops at the session's end, of redeclared variables or by `:drop`.
    last: Option<Arc<Compiled>>,
}

/// A VM with no program yet, set up with the session's options.
fn fresh_vm(
    backend: &Option<String>,
    jit: JitMode,
    memory_limit: Option<u64>,
    interrupt: &InterruptHandle,
) -> Vm {
    let mut vm = Vm::new(Arc::new(Module::default()));
    vm.set_backend_choice(backend.clone());
    vm.set_jit(jit, false);
    vm.set_memory_limit(memory_limit);
    vm.set_interrupt_handle(interrupt);
    vm
}

/// Writes `text` to stderr after flushing stdout (so the two streams stay in order).
pub fn error(text: &str) {
    let _ = std::io::stdout().flush();
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = e.write_all(b"\n");
    }
    let _ = e.flush();
}

/// Writes one line to stdout.
pub fn say(text: &str) {
    write_out(&format!("{text}\n"));
}

/// What writing stdout has met: 0 nothing, else the session's exit status (141 for a closed
/// pipe, as `SIGPIPE` would give, 70 for any other failure, already reported).
static OUTPUT_FAILED: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Writes `text` to stdout, recording a failure (see [`output_failure`]).
pub fn write_out(text: &str) {
    use std::sync::atomic::Ordering;
    if OUTPUT_FAILED.load(Ordering::Relaxed) != 0 {
        return;
    }
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        drop(o);
        let status = if e.kind() == std::io::ErrorKind::BrokenPipe {
            141
        } else {
            error(&format!("cajeta: error: cannot write the output: {e}"));
            70
        };
        OUTPUT_FAILED.store(status, Ordering::Relaxed);
    }
}

/// The exit status the session ends with because stdout cannot be written, if it cannot.
pub fn output_failure() -> Option<u8> {
    match OUTPUT_FAILED.load(std::sync::atomic::Ordering::Relaxed) {
        0 => None,
        status => Some(status),
    }
}

impl Repl {
    /// A new session with the command line's options.
    pub fn new(options: &ReplOptions, interrupt: InterruptHandle) -> Repl {
        let jit = options.jit.unwrap_or_default();
        Repl {
            session: Session::new(),
            vm: fresh_vm(&options.backend, jit, options.memory_limit, &interrupt),
            backend: options.backend.clone(),
            jit,
            memory_limit: options.memory_limit,
            interrupt,
            exited: false,
            last: None,
        }
    }

    /// The module of the last accepted entry.
    pub fn module(&self) -> &Arc<Module> {
        self.vm.module()
    }

    /// Evaluates one complete entry or command line.
    pub fn eval(&mut self, text: &str) -> Flow {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Flow::Continue;
        }
        if let Some(cmd) = trimmed.strip_prefix(':') {
            return self.command(cmd);
        }
        self.entry(text, INPUT_LABEL, false)
    }

    /// Compiles and runs an entry (`label` names it in diagnostics); with `time`, prints the
    /// run's wall time.
    fn entry(&mut self, text: &str, label: &str, time: bool) -> Flow {
        // From here on a Ctrl-C is this entry's: one pressed while it compiles (which can
        // take a while) stops it as soon as it runs, rather than being forgotten.
        self.interrupt.clear();
        let items = match split(text) {
            Split::Items(items) => items,
            Split::Incomplete => {
                error("cajeta: error: the entry is unfinished (an open bracket, comment or definition)");
                return Flow::Continue;
            }
        };
        if items.is_empty() {
            return Flow::Continue;
        }
        let compiled = match self.session.compile(text, label, &items) {
            Ok(c) => c,
            Err(diags) => {
                if label == INPUT_LABEL {
                    self.session.count_failed_entry();
                }
                error(&diags);
                return Flow::Continue;
            }
        };
        // The old values drop first, destructors included (with the module that made them).
        for name in &compiled.redeclared {
            if let Err(e) = self.vm.reset_static(&format!("{SESSION_CLASS}.{name}")) {
                self.vm.flush();
                self.report_later(e);
            }
        }
        let module = Arc::new(compiled.module.clone());
        if let Err(e) = self.vm.replace_module(Arc::clone(&module)) {
            error(&e.to_string());
            return Flow::Continue;
        }
        self.session = compiled.session.clone();
        let compiled = Arc::new(compiled);
        self.last = Some(Arc::clone(&compiled));
        // Static initialisers of the classes this entry (re)defined.
        for &f in &module.init {
            let name = &module.functions[f as usize].name;
            let class = name.split('.').next().unwrap_or("");
            if compiled.new_classes.iter().any(|c| c == class) {
                if let Err(e) = self.vm.call_index(f, &[]) {
                    self.vm.flush();
                    return self.runtime_error(e, &compiled);
                }
            }
        }
        let Some(run) = compiled.run else {
            return Flow::Continue;
        };
        let started = Instant::now();
        let result = self.vm.call_index(run, &[]);
        let elapsed = started.elapsed();
        self.vm.flush();
        let flow = match result {
            Ok(v) => {
                self.echo(&compiled, v);
                Flow::Continue
            }
            Err(e) => self.runtime_error(e, &compiled),
        };
        if time {
            say(&format!("time: {:.3} ms", elapsed.as_secs_f64() * 1e3));
        }
        flow
    }

    /// Prints the echo of a result and releases an owned (fresh) result object.
    fn echo(&mut self, compiled: &Compiled, v: Option<Value>) {
        match (&compiled.echo, v) {
            (Echo::Null, _) => say(": null = null"),
            (Echo::Value(ty), Some(v)) => {
                say(&show::echo_line(&self.vm, &v, ty));
                if let Value::Ref(h) = v {
                    if self.vm.result_owned() {
                        let dropped = self.vm.release_result(h);
                        self.vm.flush();
                        if let Err(mut e) = dropped {
                            remap(&mut e, |l, c| compiled.remap_frame(l, c));
                            error(&e.to_string());
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Prints a runtime error with positions in the user's text; `System.exit` ends the REPL.
    fn runtime_error(&mut self, mut e: RuntimeError, compiled: &Compiled) -> Flow {
        if e.code == ErrorCode::Exit.code() {
            // `System.exit` ends at once: no drops run (LANGUAGE §5.8).
            self.exited = true;
            return Flow::Exit(e.message.parse::<i64>().map_or(0, |c| (c & 0xFF) as u8));
        }
        remap(&mut e, |l, c| compiled.remap_frame(l, c));
        error(&e.to_string());
        Flow::Continue
    }

    /// Prints an error raised after its entry's turn (see [`Repl::last`]); stdout first.
    fn report_later(&mut self, mut e: RuntimeError) {
        self.vm.flush();
        if let Some(c) = &self.last {
            remap(&mut e, |l, col| c.remap_frame_later(l, col));
        }
        error(&e.to_string());
    }

    /// Runs a `:command`.
    fn command(&mut self, cmd: &str) -> Flow {
        let (name, arg) = match cmd.find(char::is_whitespace) {
            Some(i) => (&cmd[..i], cmd[i..].trim()),
            None => (cmd, ""),
        };
        let takes_none = matches!(
            name,
            "help" | "h" | "?" | "quit" | "q" | "exit" | "reset" | "mem"
        );
        let takes_one = matches!(name, "backend" | "dis" | "jit" | "drop");
        let needs_one = matches!(name, "type" | "dis" | "load" | "time" | "show" | "drop");
        if needs_one && arg.is_empty() {
            let usage = COMMANDS
                .iter()
                .find(|(c, _)| c[1..] == *name)
                .map_or("", |(_, what)| what);
            error(&format!(
                "cajeta: error: ':{name}' needs an argument: :{name} {usage}"
            ));
            return Flow::Continue;
        }
        if (takes_none && !arg.is_empty()) || (takes_one && arg.contains(char::is_whitespace)) {
            let what = if takes_none {
                "no argument"
            } else {
                "one argument"
            };
            error(&format!(
                "cajeta: error: ':{name}' takes {what} (:help lists the commands)"
            ));
            return Flow::Continue;
        }
        match name {
            "help" | "h" | "?" => {
                let mut out = String::from(
                    "Enter imports, statements, declarations, expressions (echoed with their \
                     type), functions and kernels (methods of the session), or whole classes.\n",
                );
                for (c, what) in COMMANDS {
                    out.push_str(&format!("  {c:<9} {what}\n"));
                }
                write_out(&out);
            }
            "quit" | "q" | "exit" => return Flow::Exit(0),
            "reset" => {
                self.reset();
                say("session reset");
            }
            "mem" => self.mem(),
            "backend" => self.backend(arg),
            "type" => match self.session.type_of(arg) {
                Ok(t) => say(&t),
                Err(d) => error(&d),
            },
            "dis" => self.dis(arg),
            "load" => match std::fs::read_to_string(arg) {
                Ok(text) => return self.entry(&text, arg, false),
                Err(e) => error(&format!("cajeta: error: cannot read '{arg}': {e}")),
            },
            "time" => return self.entry(arg, INPUT_LABEL, true),
            "jit" => self.jit(arg),
            "show" => self.show(arg),
            "drop" => self.drop_var(arg),
            _ => error(&format!(
                "cajeta: error: unknown command ':{name}' (:help lists them)"
            )),
        }
        Flow::Continue
    }

    /// Ends the VM as a program would end (statics' objects drop, device work is waited for);
    /// after `System.exit`, nothing more runs.
    pub fn finish(&mut self) {
        if self.exited {
            return;
        }
        if let Err(e) = self.vm.finish() {
            self.report_later(e);
        }
        self.vm.flush();
    }

    fn reset(&mut self) {
        self.finish();
        self.last = None;
        self.vm = fresh_vm(&self.backend, self.jit, self.memory_limit, &self.interrupt);
        self.session = Session::new();
    }

    fn mem(&mut self) {
        let mut lines = vec![];
        let mut seen = std::collections::HashSet::new();
        for v in &self.session.vars {
            let q = format!("{SESSION_CLASS}.{}", v.name);
            if let Some((_, value)) = self.vm.static_value(&q) {
                let ty = self.session.var_type(&v.name).unwrap_or_default();
                show::live_buffers(&self.vm, &v.name, &value, &ty, &mut seen, &mut lines);
            }
        }
        if lines.is_empty() {
            say("no live buffers in session variables");
        } else {
            say("live buffers:");
            for l in lines {
                say(&l);
            }
        }
        let s = self.vm.mem_stats();
        say(&format!(
            "device memory: live={} peak={} allocs={} frees={}",
            s.live, s.peak, s.allocs, s.frees
        ));
    }

    fn backend(&mut self, arg: &str) {
        let active = self.vm.active_backend();
        if arg.is_empty() {
            match active {
                Some(b) => say(&format!("backend: {b}")),
                None => {
                    let (name, source) = self.vm.backend_to_select();
                    let from = match source {
                        Some(env @ "CAJETA_XPU_BACKEND") => format!(", from {env},"),
                        _ => String::new(),
                    };
                    say(&format!(
                        "backend: not selected yet ({name}{from} at the first device touch)"
                    ))
                }
            }
            return;
        }
        if !BACKEND_NAMES.contains(&arg) {
            error(&format!(
                "cajeta: error: unknown backend '{arg}' (expected cpu, vulkan, cuda or auto)"
            ));
            return;
        }
        self.backend = Some(arg.to_string());
        match active {
            None => {
                self.vm.set_backend_choice(Some(arg.to_string()));
                say(&format!(
                    "backend: {arg} (selected at the first device touch)"
                ));
            }
            Some(b) if b == arg => say(&format!("backend: {b}")),
            Some(b) => {
                self.reset();
                say(&format!(
                    "backend: {arg} (the session on {b} was reset: a backend is fixed at the first device touch)"
                ));
            }
        }
    }

    fn dis(&mut self, name: &str) {
        let m = Arc::clone(self.vm.module());
        let wanted = |f: &str| {
            f == format!("{SESSION_CLASS}.{name}")
                || f == name
                || f.strip_prefix(name).is_some_and(|r| r.starts_with('.'))
        };
        let mut found = false;
        for (i, f) in m.functions.iter().enumerate() {
            if !name.is_empty() && wanted(&f.name) {
                write_out(&cajeta_bytecode::dis::disassemble_function(&m, i));
                found = true;
            }
        }
        let _ = std::io::stdout().flush();
        if !found {
            error(&format!(
                "cajeta: error: no function, kernel or class named '{name}'"
            ));
        }
    }

    fn jit(&mut self, arg: &str) {
        let mode = match arg {
            "" => {
                say(&format!(
                    "jit: {}",
                    if self.jit == JitMode::Off {
                        "off"
                    } else {
                        "on"
                    }
                ));
                return;
            }
            "on" | "auto" => JitMode::Auto,
            "eager" => JitMode::Eager,
            "off" => JitMode::Off,
            _ => {
                error("cajeta: error: expected ':jit on' or ':jit off'");
                return;
            }
        };
        self.jit = mode;
        self.vm.set_jit(mode, false);
        say(&format!(
            "jit: {}",
            if mode == JitMode::Off { "off" } else { "on" }
        ));
    }

    fn show(&mut self, arg: &str) {
        let mut words = arg.split_whitespace();
        let name = words.next().unwrap_or("");
        let range = match words.next().map(parse_range) {
            None => None,
            Some(Some(r)) => Some(r),
            Some(None) => {
                error("cajeta: error: a range is A..B, A.., ..B or an index");
                return;
            }
        };
        let Some(ty) = self.session.var_type(name) else {
            error(&format!("cajeta: error: no session variable '{name}'"));
            return;
        };
        let Some((_, v)) = self.vm.static_value(&format!("{SESSION_CLASS}.{name}")) else {
            error(&format!("cajeta: error: no session variable '{name}'"));
            return;
        };
        match show::show_range(&self.vm, name, &v, &ty, range) {
            Ok(s) => say(&s),
            Err(e) => error(&format!("cajeta: error: {e}")),
        }
    }

    fn drop_var(&mut self, name: &str) {
        if self.session.var_type(name).is_none() {
            error(&format!("cajeta: error: no session variable '{name}'"));
            return;
        }
        // Dropped as the program's code would: destructors run; a borrow drops nothing.
        let dropped = self.vm.reset_static(&format!("{SESSION_CLASS}.{name}"));
        if let Err(e) = dropped {
            self.report_later(e);
        }
        self.vm.flush();
        // Forget the variable too, unless a function still refers to it (then it stays,
        // now zero/null).
        let mut without = self.session.clone();
        without.remove_var(name);
        // (Under a label of its own: a command is no typed entry, and `<entry N>` counts those.)
        if let Ok(c) = without.compile("", ":drop", &[]) {
            if self.vm.replace_module(Arc::new(c.module.clone())).is_ok() {
                self.session = c.session.clone();
                self.last = Some(Arc::new(c));
            }
        }
        say(&format!("dropped {name}"));
    }
}

/// `A..B`, `A..`, `..B` or `I` (one element).
fn parse_range(s: &str) -> Option<(Option<u64>, Option<u64>)> {
    let num = |t: &str| -> Option<Option<u64>> {
        if t.is_empty() {
            Some(None)
        } else {
            t.parse().ok().map(Some)
        }
    };
    match s.split_once("..") {
        Some((a, b)) => Some((num(a)?, num(b)?)),
        None => {
            let i: u64 = s.parse().ok()?;
            Some((Some(i), Some(i.checked_add(1)?)))
        }
    }
}

/// Maps the frames of `e`'s trace in the generated session source through `to_typed` (the
/// text the user typed), and names the entry's own function `<input>`. Frames of the
/// session's own glue (the drops at its end) map to nothing typed and are left out, unless
/// the trace would be left empty.
fn remap(e: &mut RuntimeError, to_typed: impl Fn(u32, u32) -> Option<(String, u32, u32)>) {
    let glue =
        |f: &cajeta_vm::TraceFrame| f.file == GENERATED_FILE && to_typed(f.line, f.col).is_none();
    if !e.trace.iter().all(glue) {
        e.trace.retain(|f| !glue(f));
    }
    for f in &mut e.trace {
        if f.file == GENERATED_FILE {
            if let Some((label, line, col)) = to_typed(f.line, f.col) {
                f.file = label;
                f.line = line;
                f.col = col;
            }
        }
        if f.function == format!("{SESSION_CLASS}.{RUN_FN}") {
            f.function = INPUT_LABEL.to_string();
        }
    }
}
