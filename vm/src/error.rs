//! Runtime errors: the table of error codes and the [`RuntimeError`] value with its trace.
//!
//! The codes are one table (the `error_codes!` invocation below) so that every executor — this interpreter, the
//! JIT and the device backends — raises the same code and message shapes (LANGUAGE §10.3,
//! XPU §7.2). Anything that mirrors the table (JIT helpers, backend fault records) must use
//! [`ErrorCode`] rather than spelling codes as string literals.
//!
//! A [`RuntimeError`] renders exactly as LANGUAGE §10.3 prescribes:
//!
//! ```text
//! cajeta: runtime error: E-BOUNDS: index 8 out of bounds for length 8
//!   at demo.Main.fill (Main.cajeta:12:9)
//!   at demo.Main.run (Main.cajeta:20:5)
//! ```

use std::fmt;

/// Defines [`ErrorCode`] from `Name = ("CODE", "when it is raised")` rows.
macro_rules! error_codes {
    ($($(#[$doc:meta])* $name:ident = ($code:literal, $when:literal),)*) => {
        /// A runtime error code (LANGUAGE §10.3, XPU §7.2).
        #[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
        pub enum ErrorCode {
            $($(#[$doc])* $name,)*
        }

        impl ErrorCode {
            /// Every code, in table order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name,)*];

            /// The code as printed (`E-BOUNDS`).
            pub fn code(self) -> &'static str {
                match self { $(ErrorCode::$name => $code,)* }
            }

            /// When the error is raised (one line, for documentation and `--explain`-style help).
            pub fn when(self) -> &'static str {
                match self { $(ErrorCode::$name => $when,)* }
            }

            /// Looks a code up by its printed form.
            pub fn from_code(code: &str) -> Option<ErrorCode> {
                ErrorCode::ALL.iter().copied().find(|c| c.code() == code)
            }
        }
    };
}

error_codes! {
    /// Host array index out of range; message exactly `index <i> out of bounds for length <n>`.
    Bounds = ("E-BOUNDS", "host array index out of range"),
    /// Integer `/` or `%` by zero; message `integer division by zero`.
    DivZero = ("E-DIVZERO", "integer division or remainder by zero"),
    /// Signed `MIN / -1`; message `integer overflow in division`.
    Overflow = ("E-OVERFLOW", "signed integer division MIN / -1"),
    /// Access, call, index or launch argument through `null`; message `null reference: …`.
    Null = ("E-NULL", "access through a null reference"),
    /// Negative or unallocatable array length; message `invalid array length <n>`.
    Size = ("E-SIZE", "negative or unallocatable array length"),
    /// Object used after its drop; message `use of dropped <Class> object`.
    Dropped = ("E-DROPPED", "use of an object after its drop"),
    /// (Ours) `Cajeta.parseInt` of text that is not a decimal int64; message
    /// `invalid integer '<text>'`.
    Format = ("E-FORMAT", "text is not a decimal integer"),
    /// (VM only) `System.exit(code)`: not an error; the program ends with the status in the
    /// message. Never printed.
    Exit = ("EXIT", "System.exit was called"),
    /// Call depth limit; message `call depth limit exceeded`.
    Stack = ("E-STACK", "call depth limit exceeded"),
    /// (VM only) The embedding API was misused: unknown function, wrong argument count or
    /// argument type. Never raised by a program.
    Call = ("E-CALL", "invalid call from the embedding API"),
    /// (VM only) A module given to the embedding API failed bytecode verification (the
    /// message names the invariant, function and pc). Never raised by a program.
    Verify = ("E-VERIFY", "a module given to the embedding API fails verification"),
    /// (Ours) A `native` method was called that the host did not register (or registered
    /// with another signature), or the host function returned an error; message
    /// `native method <name> …`.
    Native = ("E-NATIVE", "a native method is unregistered or its host function failed"),
    /// (Ours) The fuel of a metered VM ran out (one unit per call and per backward jump,
    /// counted alike by the interpreter and the JIT); message `fuel exhausted (…)`. The VM
    /// stays usable: refuel it and call again.
    Fuel = ("E-FUEL", "the VM's fuel ran out"),
    /// (Ours) The VM's interrupt handle was triggered (from any thread); the running call
    /// stopped at its next call or backward jump. Message `interrupted`.
    Interrupted = ("E-INTERRUPTED", "the running call was interrupted"),
    /// (Ours) A host allocation (array, string, instance) would take the VM past its memory
    /// limit (host plus device bytes); device allocations over the limit are `XPU-E-OOM`.
    Memory = ("E-MEMORY", "a host allocation exceeds the VM's memory limit"),
    /// (Ours) The program's output cannot be written (its stdout is full, say; a closed pipe
    /// ends the program as `SIGPIPE` would, with status 141 and no message); message
    /// `cannot write the program's output: <reason>`.
    Output = ("E-OUTPUT", "the program's output cannot be written"),
    /// (VM only) Source given to the embedding API does not compile; the message holds the
    /// rendered diagnostics. Never raised by a program.
    Compile = ("E-COMPILE", "source given to the embedding API does not compile"),
    /// Allocation failure of device memory.
    XpuOom = ("XPU-E-OOM", "a device allocation fails"),
    /// Use of a freed or unallocated buffer, a destroyed stream or event.
    XpuFreed = ("XPU-E-FREED", "use of a freed buffer, destroyed stream or event"),
    /// Launch refused by the VM or the driver.
    XpuLaunch = ("XPU-E-LAUNCH", "kernel launch refused"),
    /// Kernel index out of range.
    XpuBounds = ("XPU-E-BOUNDS", "kernel index out of range"),
    /// `slice` past the end; `allocate()` on a view.
    XpuSlice = ("XPU-E-SLICE", "slice past the end of a buffer"),
    /// Host access to memory the host cannot reach.
    XpuHostAccess = ("XPU-E-HOSTACCESS", "host access to device-only memory"),
    /// `allocate(kind)` with an ordinal outside 0…2.
    XpuKind = ("XPU-E-KIND", "invalid MemoryKind ordinal"),
    /// Host array count differs from the buffer length.
    XpuLength = ("XPU-E-LENGTH", "host array length differs from buffer length"),
    /// Unknown or unavailable backend.
    XpuBackend = ("XPU-E-BACKEND", "backend not available"),
    /// Divergent rendezvous in a kernel.
    XpuDivergent = ("XPU-E-DIVERGENT", "divergent barrier or collective"),
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// One line of a runtime error's trace.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TraceFrame {
    /// Qualified function name (`demo.Main.fill`, `demo.Main.<init>`).
    pub function: String,
    /// Base name of the function's source file (`Main.cajeta`).
    pub file: String,
    /// 1-based line (0 if unknown).
    pub line: u32,
    /// 1-based column (0 if unknown).
    pub col: u32,
}

/// An uncaught runtime error: a code, a message and the call trace, innermost frame first.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RuntimeError {
    /// The printed code (`E-BOUNDS`); always one of [`ErrorCode::code`].
    pub code: &'static str,
    /// The message (`index 8 out of bounds for length 8`).
    pub message: String,
    /// The frames, innermost first: the failing operation, then each call site.
    pub trace: Vec<TraceFrame>,
}

/// Traces longer than this are printed with their middle elided (a runaway recursion would
/// otherwise print one line per frame, up to the call depth limit).
const TRACE_PRINT_LIMIT: usize = 64;
/// How many innermost frames an elided trace keeps.
const TRACE_KEEP_INNER: usize = 48;
/// How many outermost frames an elided trace keeps.
const TRACE_KEEP_OUTER: usize = 8;

impl RuntimeError {
    /// An error with an empty trace.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> RuntimeError {
        RuntimeError {
            code: code.code(),
            message: message.into(),
            trace: Vec::new(),
        }
    }

    /// The code as an [`ErrorCode`].
    pub fn error_code(&self) -> Option<ErrorCode> {
        ErrorCode::from_code(self.code)
    }

    /// `E-VERIFY` for a module the verifier refused: the verifier's code and invariant, then
    /// where (`CJB-E-VERIFY: V-REG: … (in f at pc 3)`).
    pub(crate) fn unverified(e: &cajeta_bytecode::VerifyError) -> RuntimeError {
        let at = match (&e.function, e.pc) {
            (Some(f), Some(pc)) => format!(" (in {f} at pc {pc})"),
            (Some(f), None) => format!(" (in {f})"),
            (None, Some(pc)) => format!(" (at pc {pc})"),
            (None, None) => String::new(),
        };
        RuntimeError::new(ErrorCode::Verify, format!("{}: {}{at}", e.code, e.message))
    }
}

impl fmt::Display for TraceFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "  at {} ({}:{}:{})",
            printable(&self.function),
            printable(&self.file),
            self.line,
            self.col
        )
    }
}

/// `s` with its control characters escaped (`\n`, `\u{1b}`): names in a trace come from the
/// module, and a hand-made `.cjb` may hold any text there; one frame stays one line.
fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return s.into();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// Renders the §10.3 text: the `cajeta: runtime error:` line, then one `  at` line per frame,
/// lines separated by `\n`, without a final newline. A trace of more than 64 frames is shown
/// as its 48 innermost and 8 outermost frames around a `  ... N more frames` line.
impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Compile errors are not runtime errors: their message is the rendered diagnostics.
        if self.code == ErrorCode::Compile.code() {
            return write!(f, "cajeta: error: {}: {}", self.code, self.message);
        }
        write!(f, "cajeta: runtime error: {}: {}", self.code, self.message)?;
        let n = self.trace.len();
        if n <= TRACE_PRINT_LIMIT {
            for frame in &self.trace {
                write!(f, "\n{frame}")?;
            }
        } else {
            for frame in &self.trace[..TRACE_KEEP_INNER] {
                write!(f, "\n{frame}")?;
            }
            write!(
                f,
                "\n  ... {} more frames",
                n - TRACE_KEEP_INNER - TRACE_KEEP_OUTER
            )?;
            for frame in &self.trace[n - TRACE_KEEP_OUTER..] {
                write!(f, "\n{frame}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for RuntimeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            assert!(seen.insert(c.code()), "duplicate code {}", c.code());
            assert_eq!(ErrorCode::from_code(c.code()), Some(*c));
        }
    }

    #[test]
    fn display_matches_language_10_3() {
        let mut e = RuntimeError::new(ErrorCode::Bounds, "index 8 out of bounds for length 8");
        e.trace.push(TraceFrame {
            function: "demo.Main.fill".into(),
            file: "Main.cajeta".into(),
            line: 12,
            col: 9,
        });
        e.trace.push(TraceFrame {
            function: "demo.Main.run".into(),
            file: "Main.cajeta".into(),
            line: 20,
            col: 5,
        });
        assert_eq!(
            e.to_string(),
            "cajeta: runtime error: E-BOUNDS: index 8 out of bounds for length 8\n  \
             at demo.Main.fill (Main.cajeta:12:9)\n  at demo.Main.run (Main.cajeta:20:5)"
        );
    }

    #[test]
    fn long_traces_are_elided() {
        let mut e = RuntimeError::new(ErrorCode::Stack, "call depth limit exceeded");
        for i in 0..1000 {
            e.trace.push(TraceFrame {
                function: format!("f{i}"),
                file: "A.cajeta".into(),
                line: 1,
                col: 1,
            });
        }
        let text = e.to_string();
        assert_eq!(
            text.lines().count(),
            1 + TRACE_KEEP_INNER + 1 + TRACE_KEEP_OUTER
        );
        assert!(text.contains("\n  ... 944 more frames\n"));
        assert!(text.ends_with("at f999 (A.cajeta:1:1)"));
    }

    #[test]
    fn control_characters_in_names_are_escaped() {
        let frame = TraceFrame {
            function: "demo.M\u{1b}[2J".into(),
            file: "a\nb é.cajeta".into(),
            line: 3,
            col: 4,
        };
        assert_eq!(
            frame.to_string(),
            "  at demo.M\\u{1b}[2J (a\\nb é.cajeta:3:4)"
        );
    }
}
