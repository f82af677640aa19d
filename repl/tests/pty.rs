//! The REPL on a pseudo-terminal (rexpect): multi-line entry through the validator, tab
//! completion, Ctrl-C while editing and while an entry runs, Ctrl-D.
//!
//! The REPL runs in a child process: this test binary itself, re-entered through the
//! `pty_child` test with `CAJETA_REPL_PTY_CHILD=1`, which calls [`cajeta_repl::run`] (so the
//! test needs no other binary).

use rexpect::session::{spawn_command, PtySession};
use std::process::Command;

const TIMEOUT_MS: u64 = 20_000;

/// When re-entered as the child: runs the REPL on the terminal and exits with its status.
#[test]
fn pty_child() {
    if std::env::var_os("CAJETA_REPL_PTY_CHILD").is_none() {
        return;
    }
    let options = cajeta_repl::ReplOptions {
        backend: Some("cpu".into()),
        jit: None,
        memory_limit: None,
    };
    let status = cajeta_repl::run(&options);
    std::process::exit(i32::from(status));
}

/// A REPL on a fresh pseudo-terminal, at its first prompt.
fn start() -> PtySession {
    let exe = std::env::current_exe().expect("test binary");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", "pty_child", "--nocapture", "--test-threads=1"])
        .env("CAJETA_REPL_PTY_CHILD", "1")
        // Keep the user's history file out of it.
        .env(
            "XDG_DATA_HOME",
            std::env::temp_dir().join("cajeta-pty-test-data"),
        )
        .env("TERM", "xterm");
    let mut p = spawn_command(cmd, Some(TIMEOUT_MS)).expect("spawn on a pty");
    p.exp_string("Cajeta REPL").expect("banner");
    p.exp_string("cajeta> ").expect("first prompt");
    p
}

#[test]
fn multi_line_entry_continues_until_the_definition_is_closed() {
    let mut p = start();
    p.send_line("int32 twice(int32 x) {").unwrap();
    p.send_line("    return 2 * x;").unwrap();
    p.send_line("}").unwrap();
    p.exp_string("cajeta> ").unwrap();
    p.send_line("twice(21)").unwrap();
    p.exp_string(": int32 = 42").unwrap();
    p.exp_string("cajeta> ").unwrap();
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn tab_completes_session_names_and_commands() {
    let mut p = start();
    p.send_line("int64 counter = 7;").unwrap();
    p.exp_string("cajeta> ").unwrap();
    p.send("coun").unwrap();
    p.send("\t").unwrap();
    p.send_line("").unwrap();
    p.exp_string(": int64 = 7").unwrap();
    p.exp_string("cajeta> ").unwrap();
    p.send(":qu").unwrap();
    p.send("\t").unwrap();
    p.send_line("").unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn ctrl_c_clears_the_line_being_edited() {
    let mut p = start();
    p.send("int32 never = ").unwrap();
    p.send_control('c').unwrap();
    p.exp_string("cajeta> ").unwrap();
    p.send_line("never").unwrap();
    p.exp_string("unknown name 'never'").unwrap();
    p.send_line(":quit").unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn ctrl_c_interrupts_a_running_entry() {
    let mut p = start();
    p.send_line("int64 spins = 0;").unwrap();
    p.exp_string("cajeta> ").unwrap();
    p.send_line("while (true) { spins = spins + 1; }").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    p.send_control('c').unwrap();
    p.exp_string("E-INTERRUPTED").unwrap();
    p.exp_string("cajeta> ").unwrap();
    // The session survives: the variable is still there.
    p.send_line("spins > 0").unwrap();
    p.exp_string(": boolean = true").unwrap();
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
}
