//! The compiler driver: collects source files from command-line paths, parses and checks them,
//! and renders diagnostics in the spec's format (LANGUAGE §10.1).

use crate::diag::{code, Diag, Severity, SourceMap, Span};
use cajeta_bytecode::Module;
use std::path::{Path, PathBuf};

/// The outcome of compiling a program.
pub struct Compilation {
    /// The sources (for rendering diagnostics).
    pub sources: SourceMap,
    /// The module, if there were no errors.
    pub module: Option<Module>,
    /// Errors, in phase and source order.
    pub errors: Vec<Diag>,
    /// Warnings (shown by `cajeta check`).
    pub warnings: Vec<Diag>,
}

/// Expands command-line paths to `.cajeta` files: a file as given, a directory as every
/// `.cajeta` file below it in byte-wise path order (LANGUAGE §5.8).
///
/// # Errors
/// A usage-error message for a missing path or a directory without sources.
pub fn source_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = vec![];
    for p in paths {
        if p.is_dir() {
            let mut found = vec![];
            walk(p, &mut found)
                .map_err(|e| format!("cannot read directory '{}': {e}", p.display()))?;
            found.sort_by(|a, b| {
                a.as_os_str()
                    .as_encoded_bytes()
                    .cmp(b.as_os_str().as_encoded_bytes())
            });
            if found.is_empty() {
                return Err(format!("no .cajeta files in directory '{}'", p.display()));
            }
            out.extend(found);
        } else if p.is_file() {
            match p.extension().and_then(|e| e.to_str()) {
                Some("cajeta") => out.push(p.clone()),
                Some("cjb") => {
                    return Err(format!(
                        "'{}' is compiled bytecode, not a source file: run or dis it on its own",
                        p.display()
                    ))
                }
                _ => {
                    return Err(format!(
                        "'{}' is not a .cajeta source file (nor a .cjb module)",
                        p.display()
                    ))
                }
            }
        } else {
            return Err(format!("no such file or directory: '{}'", p.display()));
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "cajeta") {
            out.push(path);
        }
    }
    Ok(())
}

/// Reads and compiles the given files.
///
/// # Errors
/// A usage-error message when a file cannot be read.
pub fn compile_files(files: &[PathBuf]) -> Result<Compilation, String> {
    read_sources(files).map(compile_sources)
}

/// Reads the given files as `(name, bytes)` inputs for [`compile_sources`].
///
/// # Errors
/// A usage-error message when a file cannot be read.
pub fn read_sources(files: &[PathBuf]) -> Result<Vec<(String, Vec<u8>)>, String> {
    files
        .iter()
        .map(|f| {
            let bytes =
                std::fs::read(f).map_err(|e| format!("cannot read '{}': {e}", f.display()))?;
            Ok((f.display().to_string(), bytes))
        })
        .collect()
}

/// The stack the compiler needs: its passes recurse over the syntax tree, as deep as the
/// parser's bound (`parser::MAX_DEPTH` levels, or a chain of some 3 000 links) allows; far
/// more than a caller's thread may have (a test thread has 2 MiB). Only what is used is
/// committed.
pub const COMPILER_STACK: usize = 256 << 20;

/// Compiles in-memory sources `(name, bytes)`, on a thread with a stack of
/// [`COMPILER_STACK`] bytes.
pub fn compile_sources(inputs: Vec<(String, Vec<u8>)>) -> Compilation {
    // Taken by the thread once it exists: after a failed spawn, this thread compiles.
    let inputs = std::sync::Mutex::new(Some(inputs));
    let take = || {
        inputs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_default()
    };
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("cajeta-compiler".into())
            .stack_size(COMPILER_STACK);
        match worker.spawn_scoped(scope, || compile_here(take())) {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => compile_here(take()),
        }
    })
}

/// [`compile_sources`] on the calling thread, whose stack must hold [`COMPILER_STACK`] bytes
/// (the `cajeta` command's main thread does): saves a thread, and the memory its allocator
/// would reserve for it.
pub fn compile_here(inputs: Vec<(String, Vec<u8>)>) -> Compilation {
    let mut sources = SourceMap::default();
    let mut errors = vec![];
    for (name, bytes) in inputs {
        match String::from_utf8(bytes) {
            Ok(text) => {
                sources.add(name, text);
            }
            Err(e) => {
                // Keep the valid prefix so the error can point at the bad byte.
                let at = e.utf8_error().valid_up_to();
                let bytes = e.into_bytes();
                let text = String::from_utf8_lossy(&bytes[..at]).into_owned();
                let id = sources.add(name, text);
                errors.push(Diag::error(
                    code::SYNTAX,
                    Span {
                        file: id,
                        start: at as u32,
                        end: at as u32,
                    },
                    "source is not valid UTF-8",
                ));
            }
        }
    }
    if !errors.is_empty() {
        return Compilation {
            sources,
            module: None,
            errors,
            warnings: vec![],
        };
    }
    let mut units = vec![];
    for (id, f) in sources.files.iter().enumerate() {
        let (unit, diags) = crate::parser::parse(id as u32, &f.text);
        errors.extend(diags.into_iter().filter(|d| d.severity == Severity::Error));
        units.push(unit);
    }
    if !errors.is_empty() {
        return Compilation {
            sources,
            module: None,
            errors,
            warnings: vec![],
        };
    }
    let mut warnings = vec![];
    match crate::check::compile_units(&sources, &units, &mut warnings) {
        Ok(m) => Compilation {
            sources,
            module: Some(m),
            errors: vec![],
            warnings,
        },
        Err(errors) => Compilation {
            sources,
            module: None,
            errors,
            warnings,
        },
    }
}

/// Renders one diagnostic:
///
/// ```text
/// src/demo/Main.cajeta:7:15: error[CAJETA_ERROR_VARIABLE_NOT_FOUND]: unknown name 'cnt'
///  7 |     int32 y = cnt + 1;
///    |               ^^^
/// ```
pub fn render(sources: &SourceMap, d: &Diag) -> String {
    let sev = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let Some(span) = d.span else {
        return format!("cajeta: {sev}[{}]: {}\n", d.code, d.message);
    };
    let file = sources.file(span.file);
    let (line, col) = file.line_col(span.start);
    let mut out = format!(
        "{}:{line}:{col}: {sev}[{}]: {}\n",
        file.name, d.code, d.message
    );
    if let Some(text) = file.line_text(line) {
        // Excerpt: the line, then carets under the span (clipped to the line: a span that
        // goes on to later lines is underlined to this one's end).
        let num = line.to_string();
        let pad = " ".repeat(num.len());
        let (end_line, end_col) = file.line_col(span.end.max(span.start));
        let chars: Vec<char> = text.chars().collect();
        let rest = (chars.len() as u32).saturating_sub(col - 1).max(1);
        let width = if end_line > line {
            rest
        } else if end_col > col {
            (end_col - col).min(rest)
        } else {
            1
        };
        // Control characters (a binary file's) shown as U+FFFD, one for one; the caret
        // line repeats the tabs before the span so the carets line up under them.
        let shown: String = chars
            .iter()
            .map(|&c| {
                if c.is_control() && c != '\t' {
                    '\u{FFFD}'
                } else {
                    c
                }
            })
            .collect();
        let indent: String = chars
            .iter()
            .take(col as usize - 1)
            .map(|&c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        out.push_str(&format!(" {num} | {shown}\n"));
        out.push_str(&format!(
            " {pad} | {indent}{}\n",
            "^".repeat(width as usize)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The excerpt of an error at `missing` on the third line, for a file whose lines end in
    /// `eol`.
    fn excerpt(eol: &str) -> String {
        let text = [
            "class A {",
            "  void f() {",
            "    int32 y = missing;",
            "  }",
            "}",
        ]
        .join(eol);
        let start = text.find("missing").unwrap() as u32;
        let mut map = SourceMap::default();
        let file = map.add("A.cajeta", text);
        let span = Span {
            file,
            start,
            end: start + 7,
        };
        render(
            &map,
            &Diag::error(code::VARIABLE_NOT_FOUND, span, "unknown name"),
        )
    }

    /// The compiler runs on a stack of its own: a program at the parser's bounds (a 3 000-link
    /// chain, 150 nested parentheses) compiles from a caller with a small stack.
    #[test]
    fn deep_programs_compile_from_a_small_stack() {
        let body = format!(
            "int64 x = 1{}; int64 y = {}x{}; String s = \"a\"{}; boolean b = x > 0{};",
            " + 1".repeat(2999),
            "(".repeat(150),
            ")".repeat(150),
            " + \"b\"".repeat(2999),
            " && y > 0".repeat(2999),
        );
        let src = format!("public class D {{ public static void main() {{ {body} }} }}");
        let c = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || compile_sources(vec![("D.cajeta".into(), src.into_bytes())]))
            .expect("spawn")
            .join()
            .expect("no overflow");
        assert!(c.errors.is_empty(), "{:?}", c.errors);
        assert!(c.module.is_some());
    }

    /// Carets line up under tabs, reach the end of the line for a span that goes on, and a
    /// binary file's control bytes never reach the terminal.
    #[test]
    fn carets_follow_tabs_and_multiline_spans_and_control_bytes_are_hidden() {
        let text = "class A {\n\tint32 x = \"a\" +\n\t\ttrue;\n\u{7}\u{1b}[2J ok\n}".to_string();
        let mut map = SourceMap::default();
        let file = map.add("A.cajeta", text.clone());
        let start = text.find("\"a\"").unwrap() as u32;
        let end = (text.find("true").unwrap() + 4) as u32;
        let d = Diag::error(code::TYPE_MISMATCH, Span { file, start, end }, "m");
        let r = render(&map, &d);
        assert!(
            r.ends_with(" 2 | \tint32 x = \"a\" +\n   | \t          ^^^^^\n"),
            "{r:?}"
        );
        let start = text.find("ok").unwrap() as u32;
        let d = Diag::error(
            code::SYNTAX,
            Span {
                file,
                start,
                end: start + 2,
            },
            "m",
        );
        let r = render(&map, &d);
        assert!(r.contains(" 4 | \u{FFFD}\u{FFFD}[2J ok\n"), "{r:?}");
        assert!(!r.contains('\u{1b}'), "{r:?}");
    }

    #[test]
    fn excerpts_show_the_line_whatever_ends_it() {
        let want = "A.cajeta:3:15: error[CAJETA_ERROR_VARIABLE_NOT_FOUND]: unknown name\n \
                    3 |     int32 y = missing;\n   \
                    |               ^^^^^^^\n";
        for eol in ["\n", "\r\n", "\r"] {
            assert_eq!(excerpt(eol), want, "line ending {eol:?}");
        }
    }
}
