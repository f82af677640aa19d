//! The terminal line editor's helper (rustyline): the parser-backed validator (an unfinished
//! entry continues on the next line), tab completion of names, members and commands, and
//! keyword highlighting.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use cajeta_bytecode::{Module, Type};
use cajeta_compiler::lexer::Kw;
use cajeta_compiler::session::{split, Session, Split, SESSION_CLASS};
use rustyline::completion::Completer;
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper};

use crate::eval::COMMANDS;

/// Always-visible names and common library names offered at the start of a word.
const GLOBALS: &[&str] = &[
    "System",
    "Math",
    "String",
    "KernelBuffer",
    "KernelStream",
    "Event",
    "KernelThread",
    "Workgroup",
    "Barrier",
    "Shared",
    "Wave",
    "Device",
    "MemoryKind",
    "MemoryOrder",
    "Cajeta",
    "heap",
    "stack",
    "shared",
    "import",
    "cajeta.xpu.*",
];

/// Members of library classes (static and instance, merged: completion does not type-check).
const LIBRARY_MEMBERS: &[(&str, &[&str])] = &[
    (
        "KernelBuffer",
        &[
            "alloc",
            "length",
            "allocate",
            "upload",
            "download",
            "uploadAsync",
            "downloadAsync",
            "hostStore",
            "hostLoad",
            "free",
            "slice",
        ],
    ),
    (
        "KernelStream",
        &["current", "create", "sync", "destroy", "waitFor"],
    ),
    (
        "Event",
        &["create", "recordOn", "waitHost", "query", "destroy"],
    ),
    (
        "System",
        &["stdout", "stderr", "currentTimeMillis", "nanoTime", "exit"],
    ),
    ("System.stdout", &["print", "println"]),
    ("System.stderr", &["print", "println"]),
    (
        "Math",
        &[
            "abs", "min", "max", "clamp", "floor", "ceil", "trunc", "round", "sqrt", "fma",
            "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "exp", "exp2", "log",
            "log2", "log10", "pow",
        ],
    ),
    (
        "Device",
        &[
            "force",
            "activeBackend",
            "supports",
            "waveSize",
            "memoryBytes",
            "multiprocessorCount",
            "integrated",
            "launchFailures",
            "kernelAvailable",
        ],
    ),
    (
        "KernelThread",
        &["x", "y", "z", "globalIdX", "globalIdY", "globalIdZ"],
    ),
    ("Workgroup", &["x", "y", "z", "dimX", "dimY", "dimZ"]),
    ("MemoryKind", &["Device", "Pinned", "Unified"]),
    (
        "MemoryOrder",
        &["Relaxed", "Acquire", "Release", "AcqRel", "SeqCst"],
    ),
];

/// What completion knows about the session, refreshed after every entry.
#[derive(Default)]
pub struct Names {
    /// Session variables, functions and classes.
    names: Vec<String>,
    /// Member names by receiver (a class, a variable, a library name).
    members: HashMap<String, Vec<String>>,
}

impl Names {
    /// Rebuilds the tables from the session and its current module.
    pub fn refresh(&mut self, session: &Session, module: &Module) {
        self.names = session.names();
        self.members.clear();
        // Class members: `C.m` functions and fields of class `C`.
        for f in &module.functions {
            if let Some((class, m)) = f.name.rsplit_once('.') {
                if !m.starts_with(['<', '$', '~']) {
                    self.members
                        .entry(class.to_string())
                        .or_default()
                        .push(m.to_string());
                }
            }
        }
        for c in &module.classes {
            let e = self.members.entry(c.name.clone()).or_default();
            e.extend(
                c.fields
                    .iter()
                    .filter(|f| !f.name.starts_with('$'))
                    .map(|f| f.name.clone()),
            );
        }
        // Kernels of the session are launched: `k.launch(…)`.
        for f in &module.functions {
            if f.kind == cajeta_bytecode::FnKind::Kernel {
                if let Some(k) = f.name.strip_prefix(&format!("{SESSION_CLASS}.")) {
                    self.members.insert(k.to_string(), vec!["launch".into()]);
                }
            }
        }
        // Variables: the members of their type.
        for v in &session.vars {
            let q = format!("{SESSION_CLASS}.{}", v.name);
            let Some(s) = module.statics.iter().find(|s| s.name == q) else {
                continue;
            };
            let list: Vec<String> = match s.ty {
                Type::Buffer(_) => lib_members("KernelBuffer"),
                Type::Stream => lib_members("KernelStream"),
                Type::Event => lib_members("Event"),
                Type::Array(_) => vec!["count".into()],
                Type::Str => vec!["count".into(), "size".into(), "equals".into()],
                Type::Object(c) => module
                    .classes
                    .get(c as usize)
                    .and_then(|c| self.members.get(&c.name).cloned())
                    .unwrap_or_default(),
                _ => vec![],
            };
            self.members.insert(v.name.clone(), list);
        }
    }
}

fn lib_members(name: &str) -> Vec<String> {
    LIBRARY_MEMBERS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, m)| m.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default()
}

/// The rustyline helper.
pub struct ReplHelper {
    /// Shared with the loop, which refreshes it after each entry.
    pub names: Rc<RefCell<Names>>,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

impl ReplHelper {
    /// The completions of the word ending at byte `pos` of `line`: `(start, candidates)`.
    pub fn candidates(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let before = &line[..pos];
        let start = before
            .char_indices()
            .rev()
            .take_while(|(_, c)| is_word(*c))
            .last()
            .map_or(pos, |(i, _)| i);
        let word = &before[start..];
        let mut out: Vec<String> = vec![];
        if before.trim_start().starts_with(':') && !before.contains(' ') {
            let lead = before.len() - before.trim_start().len();
            return (
                lead,
                COMMANDS
                    .iter()
                    .map(|(c, _)| c.to_string())
                    .filter(|c| c.starts_with(before.trim_start()))
                    .collect(),
            );
        }
        let names = self.names.borrow();
        if let Some(recv_end) = start
            .checked_sub(1)
            .filter(|&i| before[i..].starts_with('.'))
        {
            let recv_start = before[..recv_end]
                .char_indices()
                .rev()
                .take_while(|(_, c)| is_word(*c) || *c == '.')
                .last()
                .map_or(recv_end, |(i, _)| i);
            let recv = &before[recv_start..recv_end];
            let mut members = names.members.get(recv).cloned().unwrap_or_default();
            members.extend(lib_members(recv));
            // `KernelBuffer<float32>.` and the like.
            if let Some(base) = recv.split('<').next().filter(|_| recv.contains('<')) {
                members.extend(lib_members(base));
            }
            out.extend(members.into_iter().filter(|m| m.starts_with(word)));
        } else {
            out.extend(names.names.iter().filter(|n| n.starts_with(word)).cloned());
            out.extend(
                GLOBALS
                    .iter()
                    .filter(|n| n.starts_with(word))
                    .map(|s| s.to_string()),
            );
            if !word.is_empty() {
                out.extend(
                    keywords()
                        .into_iter()
                        .filter(|k| k.starts_with(word))
                        .map(str::to_string),
                );
            }
        }
        out.sort();
        out.dedup();
        (start, out)
    }
}

/// The reserved words (for completion and highlighting).
fn keywords() -> Vec<&'static str> {
    const WORDS: &[&str] = &[
        "boolean", "break", "char", "class", "continue", "do", "else", "false", "final", "float32",
        "float64", "for", "if", "import", "int16", "int32", "int64", "int8", "null", "private",
        "public", "return", "static", "switch", "true", "uint16", "uint32", "uint64", "uint8",
        "void", "while",
    ];
    WORDS
        .iter()
        .copied()
        .filter(|w| Kw::from_word(w).is_some())
        .collect()
}

impl Completer for ReplHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(self.candidates(line, pos))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {
    /// Reserved words in bold (cheap: a scan of the line, no parse).
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        let mut out = String::with_capacity(line.len() + 16);
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String| {
            if Kw::from_word(word).is_some() {
                out.push_str("\x1b[1;34m");
                out.push_str(word);
                out.push_str("\x1b[0m");
            } else {
                out.push_str(word);
            }
            word.clear();
        };
        for c in line.chars() {
            if is_word(c) {
                word.push(c);
            } else {
                flush(&mut word, &mut out);
                out.push(c);
            }
        }
        flush(&mut word, &mut out);
        Cow::Owned(out)
    }

    fn highlight_char(&self, _line: &str, _pos: usize, kind: CmdKind) -> bool {
        kind != CmdKind::MoveCursor
    }
}

impl Validator for ReplHelper {
    /// An entry whose construct is unfinished continues on the next line; commands end at
    /// the line's end.
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        let input = ctx.input();
        if input.trim_start().starts_with(':') || split(input) != Split::Incomplete {
            Ok(ValidationResult::Valid(None))
        } else {
            Ok(ValidationResult::Incomplete)
        }
    }
}

impl Helper for ReplHelper {}
