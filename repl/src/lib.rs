//! The Cajeta REPL (`cajeta repl`): an interactive session over one live VM.
//!
//! * On a terminal, lines are read with rustyline ([`editor`]): history under the user's data
//!   directory, a parser-backed validator for multi-line entries, tab completion, keyword
//!   highlighting. Ctrl-C clears the line being edited or interrupts a running entry; Ctrl-D
//!   on an empty line leaves.
//! * With piped stdin, lines are read plainly and joined until an entry is complete; no
//!   prompt is printed, so scripts can drive the REPL and compare its output.
//!
//! Each entry recompiles the whole session ([`cajeta_compiler::session`]) and swaps the
//! module under the VM ([`cajeta_vm::Vm::replace_module`]); see `docs/repl.md`.
//!
//! Architecture invariant: this is the only crate that knows rustyline; it uses the `vm` crate
//! only through its public API.

mod editor;
mod eval;
mod show;

use std::cell::RefCell;
use std::io::{BufRead, IsTerminal};
use std::rc::Rc;

use cajeta_compiler::session::{split, Split};
use cajeta_vm::InterruptHandle;
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::{Config, Editor};

use eval::{error, Flow, Repl};

/// Options from the command line.
#[derive(Clone, Debug, Default)]
pub struct ReplOptions {
    /// `--backend`, if given.
    pub backend: Option<String>,
    /// `--jit`, if given.
    pub jit: Option<cajeta_vm::JitMode>,
    /// The memory limit of the session's VM (`--max-memory`, by default
    /// [`cajeta_vm::system_memory_limit`]); `None`: no limit.
    pub memory_limit: Option<u64>,
}

/// The diagnostic for input that is not UTF-8 (the entry it was part of is dropped).
const NOT_UTF8: &str =
    "cajeta: error[CAJETA_ERROR_SYNTAX]: the input is not valid UTF-8; the entry was discarded";

/// The prompt of a new entry.
pub const PROMPT: &str = "cajeta> ";

/// Runs the REPL on stdin/stdout until `:quit` or end of input; returns the exit status
/// (0, or the status of a `System.exit` entered at the prompt).
pub fn run(options: &ReplOptions) -> u8 {
    let interrupt = InterruptHandle::new();
    install_interrupt_handler(interrupt.clone());
    let mut repl = Repl::new(options, interrupt);
    let status = if std::io::stdin().is_terminal() {
        interactive(&mut repl)
    } else {
        piped(&mut repl)
    };
    // Variables' objects drop and device work is waited for, as at a program's end.
    repl.finish();
    status
}

/// Ctrl-C while an entry runs: asks the VM to stop it; a second Ctrl-C before it stops ends
/// the process (status 130), so a runaway entry can always be left.
fn install_interrupt_handler(handle: InterruptHandle) {
    let _ = ctrlc::set_handler(move || {
        if handle.interrupt() {
            std::process::exit(130);
        }
    });
}

/// Reads entries from a pipe: lines are joined until the entry is complete; no prompts.
fn piped(repl: &mut Repl) -> u8 {
    let stdin = std::io::stdin();
    let mut buf = String::new();
    let mut input = stdin.lock();
    let mut bytes = vec![];
    loop {
        bytes.clear();
        match input.read_until(b'\n', &mut bytes) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(line) = std::str::from_utf8(&bytes) else {
            // LANGUAGE §1: source text is UTF-8; the entry is dropped, the session goes on.
            error(NOT_UTF8);
            buf.clear();
            continue;
        };
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(status) = eval::output_failure() {
            // Nobody reads the session any more (or nothing can be written): stop.
            return status;
        }
        if buf.is_empty() && line.trim_start().starts_with(':') {
            if let Flow::Exit(code) = repl.eval(line) {
                return code;
            }
            continue;
        }
        if buf.is_empty() && line.trim().is_empty() {
            continue;
        }
        buf.push_str(line);
        buf.push('\n');
        if split(&buf) != Split::Incomplete {
            let entry = std::mem::take(&mut buf);
            if let Flow::Exit(code) = repl.eval(&entry) {
                return code;
            }
        }
    }
    if !buf.trim().is_empty() {
        error("cajeta: error: the input ended inside an unfinished entry");
    }
    eval::output_failure().unwrap_or(0)
}

/// The history file: `<data dir>/cajeta/history`.
fn history_path() -> Option<std::path::PathBuf> {
    let dir = dirs::data_dir()?.join("cajeta");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir.join("history"))
}

/// Reads entries from a terminal with rustyline.
fn interactive(repl: &mut Repl) -> u8 {
    let config = Config::builder()
        .auto_add_history(true)
        .completion_type(rustyline::CompletionType::List)
        .build();
    let mut rl: Editor<editor::ReplHelper, DefaultHistory> = match Editor::with_config(config) {
        Ok(rl) => rl,
        Err(e) => {
            error(&format!("cajeta: error: cannot start the line editor: {e}"));
            return piped(repl);
        }
    };
    let names = Rc::new(RefCell::new(editor::Names::default()));
    rl.set_helper(Some(editor::ReplHelper {
        names: Rc::clone(&names),
    }));
    let history = history_path();
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    eval::say("Cajeta REPL. :help lists the commands, Ctrl-D leaves.");
    let status = loop {
        match rl.readline(PROMPT) {
            Ok(entry) => {
                let flow = repl.eval(&entry);
                names.borrow_mut().refresh(&repl.session, repl.module());
                if let Flow::Exit(code) = flow {
                    break code;
                }
            }
            // Ctrl-C while editing: drop the line.
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                error(NOT_UTF8);
                continue;
            }
            Err(ReadlineError::Eof) => break 0,
            Err(e) => {
                error(&format!("cajeta: error: {e}"));
                break 0;
            }
        }
    };
    if let Some(h) = &history {
        let _ = rl.save_history(h);
    }
    status
}
