//! Source files, spans and diagnostics (LANGUAGE §10).
//!
//! Every phase reports problems as [`Diag`]s with an error code from [`code`]; the driver
//! renders them with source excerpts in the spec's format:
//! `file:line:col: error[CODE]: message`, then the numbered source line and carets.

/// Index of a source file in a [`SourceMap`].
pub type FileId = u32;

/// A byte range in one source file.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Span {
    /// The file.
    pub file: FileId,
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// A span covering `self` through `other` (same file).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// Compile-time error and warning codes (LANGUAGE §10.2, XPU §7.1).
pub mod code {
    #![allow(missing_docs)]
    pub const SYNTAX: &str = "CAJETA_ERROR_SYNTAX";
    pub const NOT_IMPLEMENTED: &str = "CAJETA_ERROR_NOT_IMPLEMENTED";
    pub const TYPE_MISMATCH: &str = "CAJETA_ERROR_TYPE_MISMATCH";
    pub const UNRESOLVED_TYPE: &str = "CAJETA_ERROR_UNRESOLVED_TYPE";
    pub const UNRESOLVED_METHOD: &str = "CAJETA_ERROR_UNRESOLVED_METHOD";
    pub const UNRESOLVED_EXPRESSION: &str = "CAJETA_ERROR_UNRESOLVED_EXPRESSION";
    pub const VARIABLE_NOT_FOUND: &str = "CAJETA_ERROR_VARIABLE_NOT_FOUND";
    pub const VARIABLE_DUPLICATE: &str = "CAJETA_ERROR_VARIABLE_DUPLICATE";
    pub const VARIABLE_NOT_ASSIGNED: &str = "CAJETA_ERROR_VARIABLE_NOT_ASSIGNED";
    pub const FINAL_ASSIGNMENT: &str = "CAJETA_ERROR_FINAL_ASSIGNMENT";
    pub const MISSING_RETURN: &str = "CAJETA_ERROR_MISSING_RETURN";
    pub const NO_MATCHING_CONSTRUCTOR: &str = "CAJETA_ERROR_NO_MATCHING_CONSTRUCTOR";
    pub const DUPLICATE_CONSTRUCTOR: &str = "CAJETA_ERROR_DUPLICATE_CONSTRUCTOR";
    pub const METHOD_NOT_ACCESSIBLE: &str = "CAJETA_ERROR_METHOD_NOT_ACCESSIBLE";
    pub const TYPE_TRANSFER_RETIRED: &str = "CAJETA_ERROR_TYPE_TRANSFER_RETIRED";
    pub const UNKNOWN_SYSTEM_STREAM: &str = "CAJETA_ERROR_UNKNOWN_SYSTEM_STREAM";
    pub const NO_ENTRY: &str = "CAJETA_ERROR_NO_ENTRY";
    pub const DUPLICATE_CASE: &str = "CAJETA_ERROR_DUPLICATE_CASE";
    pub const NAMEDARG: &str = "LANG-NAMEDARG";
    pub const VECTOR_ELEMENT_TYPE: &str = "CAJETA_ERROR_VECTOR_ELEMENT_TYPE";
    pub const VECTOR_LENGTH: &str = "CAJETA_ERROR_VECTOR_LENGTH";
    pub const VECTOR_CONSTRUCT: &str = "CAJETA_ERROR_VECTOR_CONSTRUCT";
    pub const XPU_K01: &str = "XPU-K01";
    pub const XPU_K02: &str = "XPU-K02";
    pub const XPU_K03: &str = "XPU-K03";
    pub const XPU_K04: &str = "XPU-K04";
    pub const XPU_N01: &str = "XPU-N01";
    pub const XPU_N02: &str = "XPU-N02";
    pub const XPU_KERNEL_NAME_COLLISION: &str = "CAJETA_ERROR_XPU_KERNEL_NAME_COLLISION";
    pub const WARN_LOSSY_CONVERSION: &str = "CAJETA_WARN_LOSSY_CONVERSION";
    pub const WARN_MIXED_SIGNEDNESS: &str = "CAJETA_WARN_MIXED_SIGNEDNESS";
    pub const WARN_UNKNOWN_ANNOTATION: &str = "CAJETA_WARN_UNKNOWN_ANNOTATION";
}

/// Error or warning.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Severity {
    /// Stops compilation (exit status 1).
    Error,
    /// Reported by `cajeta check` only.
    Warning,
}

/// One diagnostic.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Diag {
    /// Error or warning.
    pub severity: Severity,
    /// The code (one of [`code`]).
    pub code: &'static str,
    /// Human-readable message.
    pub message: String,
    /// Where; `None` for unlocated diagnostics.
    pub span: Option<Span>,
}

impl Diag {
    /// An error at `span`.
    pub fn error(code: &'static str, span: Span, message: impl Into<String>) -> Diag {
        Diag {
            severity: Severity::Error,
            code,
            message: message.into(),
            span: Some(span),
        }
    }

    /// A warning at `span`.
    pub fn warning(code: &'static str, span: Span, message: impl Into<String>) -> Diag {
        Diag {
            severity: Severity::Warning,
            code,
            message: message.into(),
            span: Some(span),
        }
    }

    /// An unlocated error.
    pub fn unlocated(code: &'static str, message: impl Into<String>) -> Diag {
        Diag {
            severity: Severity::Error,
            code,
            message: message.into(),
            span: None,
        }
    }
}

/// One source file.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// The name as given on the command line (used in diagnostics).
    pub name: String,
    /// The text.
    pub text: String,
    line_starts: Vec<u32>,
}

impl SourceFile {
    /// Wraps a text. Lines end at LF, CR LF or CR.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        let bytes = text.as_bytes();
        let mut line_starts = vec![0u32];
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => line_starts.push(i as u32 + 1),
                b'\r' => {
                    if bytes.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    line_starts.push(i as u32 + 1);
                }
                _ => {}
            }
            i += 1;
        }
        SourceFile {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// 1-based line and column (in code points) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        let line = self.line_starts.partition_point(|&s| s <= offset).max(1);
        let start = self.line_starts[line - 1] as usize;
        let end = (offset as usize).min(self.text.len());
        let col = self
            .text
            .get(start..end)
            .map_or(end - start, |s| s.chars().count())
            + 1;
        (line as u32, col as u32)
    }

    /// The text of 1-based line `line` without its line ending (LF, CR LF or CR), if the
    /// file has that line.
    pub fn line_text(&self, line: u32) -> Option<&str> {
        let i = (line as usize).checked_sub(1)?;
        let start = *self.line_starts.get(i)? as usize;
        let end = self
            .line_starts
            .get(i + 1)
            .map_or(self.text.len(), |&s| s as usize);
        let text = self.text.get(start..end)?;
        Some(text.trim_end_matches(['\n', '\r']))
    }

    /// The base name (after the last `/`), as printed in runtime traces.
    pub fn base_name(&self) -> &str {
        self.name.rsplit(['/', '\\']).next().unwrap_or(&self.name)
    }
}

/// All source files of one compilation.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    /// Files by [`FileId`].
    pub files: Vec<SourceFile>,
}

impl SourceMap {
    /// Adds a file, returning its id.
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        self.files.push(SourceFile::new(name, text));
        (self.files.len() - 1) as FileId
    }

    /// The file with this id.
    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id as usize]
    }
}
