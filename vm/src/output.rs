//! Program output: the stdout/stderr sink pair and [`Capture`], an in-memory sink for tests
//! and embedders.
//!
//! stdout is buffered; it is flushed before anything is written to stderr and at exit
//! (LANGUAGE §5.9), so interleaved output keeps its order on a terminal. The first failure to
//! write stdout is kept ([`Output::failure`]): the VM stops the program at its next print (a
//! closed pipe as `SIGPIPE` would, anything else as `E-OUTPUT`) instead of running on with its
//! output lost. stderr's failures are ignored: there is nowhere left to report them.

use std::cell::RefCell;
use std::io::{self, BufWriter, Write};
use std::rc::Rc;

/// The pair of sinks a VM prints to.
pub(crate) struct Output {
    out: Box<dyn Write>,
    err: Box<dyn Write>,
    /// The first error writing `out`.
    failed: Option<io::Error>,
}

impl Output {
    /// The process's stdout (buffered) and stderr.
    pub(crate) fn std() -> Output {
        Output {
            out: Box::new(BufWriter::with_capacity(1 << 16, io::stdout())),
            err: Box::new(io::stderr()),
            failed: None,
        }
    }

    /// Caller-provided sinks, used as given.
    pub(crate) fn new(out: Box<dyn Write>, err: Box<dyn Write>) -> Output {
        Output {
            out,
            err,
            failed: None,
        }
    }

    /// Writes `text` (and a newline if `newline`) to stdout, or to stderr after flushing stdout.
    pub(crate) fn write(&mut self, to_stderr: bool, text: &str, newline: bool) {
        if to_stderr {
            self.flush_out();
            if newline {
                // One write, so a line is never split between two writers.
                let mut line = String::with_capacity(text.len() + 1);
                line.push_str(text);
                line.push('\n');
                let _ = self.err.write_all(line.as_bytes());
            } else {
                let _ = self.err.write_all(text.as_bytes());
            }
            let _ = self.err.flush();
        } else if self.failed.is_none() {
            let mut r = self.out.write_all(text.as_bytes());
            if newline && r.is_ok() {
                r = self.out.write_all(b"\n");
            }
            self.failed = r.err();
        }
    }

    /// Flushes both sinks.
    pub(crate) fn flush(&mut self) {
        self.flush_out();
        let _ = self.err.flush();
    }

    fn flush_out(&mut self) {
        if self.failed.is_none() {
            self.failed = self.out.flush().err();
        }
    }

    /// The first error writing stdout, if there was one.
    pub(crate) fn failure(&self) -> Option<&io::Error> {
        self.failed.as_ref()
    }
}

/// A cloneable in-memory sink: give one clone to [`crate::Vm::with_output`], read the text from
/// another.
///
/// ```
/// use cajeta_vm::Capture;
/// use std::io::Write;
/// let cap = Capture::new();
/// let mut sink = cap.clone();
/// sink.write_all(b"hi").unwrap();
/// assert_eq!(cap.text(), "hi");
/// ```
#[derive(Clone, Default, Debug)]
pub struct Capture(Rc<RefCell<Vec<u8>>>);

impl Capture {
    /// An empty capture.
    pub fn new() -> Capture {
        Capture::default()
    }

    /// Everything written so far, as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.borrow()).into_owned()
    }

    /// Everything written so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.0.borrow().clone()
    }

    /// A boxed clone, ready for [`crate::Vm::with_output`].
    pub fn sink(&self) -> Box<dyn Write> {
        Box::new(self.clone())
    }
}

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
