//! The Cajeta REPL (`cajeta repl`).

/// Options from the command line.
#[derive(Clone, Debug, Default)]
pub struct ReplOptions {
    /// `--backend`, if given.
    pub backend: Option<String>,
    /// `--jit`, if given.
    pub jit: Option<cajeta_vm::JitMode>,
}

/// Runs the REPL on stdin/stdout until `:quit` or end of input; returns the exit status.
pub fn run(options: &ReplOptions) -> u8 {
    let _ = options;
    eprintln!("cajeta: error: the REPL is not available in this build yet");
    2
}
