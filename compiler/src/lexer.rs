//! The lexer (LANGUAGE §1): turns one source text into [`Token`]s.
//!
//! Tokenisation is longest-match. `<<`, `>>` and `>>>` are deliberately *not* tokens: the parser
//! builds them from adjacent `<`/`>` tokens, using [`Token::spaced`] (set when whitespace or a
//! comment precedes a token) to reject `a > > b` while letting `KernelBuffer<Vector<int32,4>>`
//! close two argument lists.
//!
//! Literal *validity* is checked here (bad digits, `_` placement, out-of-range values, escapes,
//! lone surrogates, float overflow); literal *typing* is the checker's job. A bad literal is still
//! returned as a token (with value 0) after its diagnostic, so that the parser does not cascade.
//!
//! The lexer never panics and always makes progress: every loop iteration consumes at least one
//! byte, and the token list always ends with [`Tok::Eof`].

use crate::diag::{code, Diag, FileId, Span};

macro_rules! keywords {
    ($($variant:ident = $text:literal,)*) => {
        /// A reserved word (LANGUAGE §1). Contextual words (`shared`, `var`, …) are identifiers.
        #[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
        pub enum Kw {
            $(#[doc = concat!("`", $text, "`")] $variant,)*
        }

        impl Kw {
            /// The word as written.
            pub fn as_str(self) -> &'static str {
                match self { $(Kw::$variant => $text,)* }
            }

            /// The reserved word spelled `word`, if it is one.
            pub fn from_word(word: &str) -> Option<Kw> {
                match word { $($text => Some(Kw::$variant),)* _ => None }
            }
        }
    };
}

keywords! {
    Abstract = "abstract", Annotation = "annotation", Assert = "assert", Async = "async",
    Await = "await", Boolean = "boolean", Break = "break", Case = "case", Catch = "catch",
    Char = "char", Class = "class", Const = "const", Continue = "continue", Default = "default",
    Detach = "detach", Do = "do", Else = "else", Enum = "enum", Extends = "extends",
    Final = "final", Finally = "finally", For = "for", Goto = "goto", Heap = "heap", If = "if",
    Implements = "implements", Import = "import", Instanceof = "instanceof",
    Interface = "interface", Native = "native", NonSealed = "non-sealed", Operator = "operator",
    Package = "package", Permits = "permits", Private = "private", Protected = "protected",
    Public = "public", Record = "record", Return = "return", Scope = "scope", Sealed = "sealed",
    Spawn = "spawn", Stack = "stack", Static = "static", Strictfp = "strictfp",
    Structure = "structure", Super = "super", Switch = "switch", This = "this", Throw = "throw",
    Throws = "throws", Transient = "transient", Try = "try", View = "view", Void = "void",
    Volatile = "volatile", While = "while", Yield = "yield", True = "true", False = "false",
    Null = "null",
    Int8 = "int8", Uint8 = "uint8", Int16 = "int16", Uint16 = "uint16", Int32 = "int32",
    Uint32 = "uint32", Int64 = "int64", Uint64 = "uint64", Int128 = "int128", Uint128 = "uint128",
    Float16 = "float16", Float32 = "float32", Float64 = "float64", Float128 = "float128",
    Float4e2m1 = "float4e2m1", Float6e2m3 = "float6e2m3", Float6e3m2 = "float6e3m2",
    Float8e4m3 = "float8e4m3", Float8e5m2 = "float8e5m2", Float8e4m3fnuz = "float8e4m3fnuz",
    Float8e5m2fnuz = "float8e5m2fnuz",
}

impl Kw {
    /// The primitive type this keyword names, if it names one.
    pub fn prim(self) -> Option<crate::ast::PrimType> {
        use crate::ast::PrimType as P;
        Some(match self {
            Kw::Boolean => P::Bool,
            Kw::Char => P::Char,
            Kw::Int8 => P::I8,
            Kw::Uint8 => P::U8,
            Kw::Int16 => P::I16,
            Kw::Uint16 => P::U16,
            Kw::Int32 => P::I32,
            Kw::Uint32 => P::U32,
            Kw::Int64 => P::I64,
            Kw::Uint64 => P::U64,
            Kw::Float16 => P::F16,
            Kw::Float32 => P::F32,
            Kw::Float64 => P::F64,
            Kw::Int128
            | Kw::Uint128
            | Kw::Float128
            | Kw::Float4e2m1
            | Kw::Float6e2m3
            | Kw::Float6e3m2
            | Kw::Float8e4m3
            | Kw::Float8e5m2
            | Kw::Float8e4m3fnuz
            | Kw::Float8e5m2fnuz => P::Unsupported(self.as_str()),
            _ => return None,
        })
    }
}

macro_rules! puncts {
    ($($variant:ident = $text:literal,)*) => {
        /// An operator or separator token.
        #[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
        pub enum P {
            $(#[doc = concat!("`", $text, "`")] $variant,)*
        }

        impl P {
            /// The token as written.
            pub fn as_str(self) -> &'static str {
                match self { $(P::$variant => $text,)* }
            }
        }
    };
}

puncts! {
    LParen = "(", RParen = ")", LBrace = "{", RBrace = "}", LBracket = "[", RBracket = "]",
    Semi = ";", Comma = ",", Dot = ".", At = "@", Colon = ":", Question = "?", Arrow = "->",
    Hash = "#", HashEq = "#=", Assign = "=", EqEq = "==", Ne = "!=", Lt = "<", Le = "<=",
    Gt = ">", Ge = ">=", Bang = "!", Tilde = "~", AndAnd = "&&", OrOr = "||", Plus = "+",
    Minus = "-", Star = "*", Slash = "/", Percent = "%", Amp = "&", Pipe = "|", Caret = "^",
    PlusPlus = "++", MinusMinus = "--", PlusEq = "+=", MinusEq = "-=", StarEq = "*=",
    SlashEq = "/=", PercentEq = "%=", AmpEq = "&=", PipeEq = "|=", CaretEq = "^=",
    ShlEq = "<<=", ShrEq = ">>=", UshrEq = ">>>=", Ellipsis = "...", ColonColon = "::",
}

/// What a token is.
#[derive(Clone, PartialEq, Debug)]
pub enum Tok {
    /// An identifier (including contextual words such as `shared`).
    Ident(String),
    /// A reserved word.
    Kw(Kw),
    /// An integer literal: its magnitude (checked to fit 64 bits).
    Int {
        /// The value.
        value: u64,
        /// Written in hex, octal or binary.
        non_decimal: bool,
        /// `l`/`L` suffix.
        long: bool,
    },
    /// A float literal.
    Float {
        /// The value rounded to float64, or (with `f`) rounded to float32 and widened.
        value: f64,
        /// `f`/`F` suffix.
        f32_suffix: bool,
        /// `d`/`D` suffix.
        f64_suffix: bool,
        /// The text without `_` and suffix.
        text: String,
    },
    /// A char literal (one code point).
    Char(u32),
    /// A string literal with escapes resolved.
    Str(String),
    /// An operator or separator.
    P(P),
    /// The end of the text (always the last token).
    Eof,
}

/// One token.
#[derive(Clone, PartialEq, Debug)]
pub struct Token {
    /// What it is.
    pub tok: Tok,
    /// Where.
    pub span: Span,
    /// True when whitespace or a comment (or the start of the file) comes right before it.
    pub spaced: bool,
}

/// Splits `text` into tokens (ending with [`Tok::Eof`]) and lexical diagnostics in source order.
pub fn lex(file: FileId, text: &str) -> (Vec<Token>, Vec<Diag>) {
    let mut lx = Lexer {
        text,
        b: text.as_bytes(),
        pos: 0,
        file,
        toks: Vec::new(),
        diags: Vec::new(),
        reported_literal: None,
    };
    lx.run();
    (lx.toks, lx.diags)
}

/// True for a character that may start an identifier (LANGUAGE §1).
pub fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$' || (!c.is_ascii() && !c.is_whitespace())
}

/// True for a character that may continue an identifier.
pub fn is_ident_continue(c: char) -> bool {
    is_ident_start(c) || c.is_ascii_digit()
}

struct Lexer<'a> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
    file: FileId,
    toks: Vec<Token>,
    diags: Vec<Diag>,
    /// The start of the literal whose first bad escape was reported (see
    /// [`Lexer::escape_error`]).
    reported_literal: Option<usize>,
}

/// One decoded piece of a char or string literal.
enum Piece {
    /// A code point (never a surrogate).
    Cp(u32),
    /// A `\u` escape that denotes a UTF-16 surrogate, to be paired.
    Surrogate(u32),
    /// An invalid escape (already reported).
    Bad,
}

impl<'a> Lexer<'a> {
    fn span(&self, start: usize, end: usize) -> Span {
        Span {
            file: self.file,
            start: start as u32,
            end: end as u32,
        }
    }

    fn error(&mut self, start: usize, end: usize, msg: impl Into<String>) {
        let span = self.span(start, end);
        self.diags.push(Diag::error(code::SYNTAX, span, msg));
    }

    /// A bad escape (`start..end`) in the literal starting at `lit`: the literal's first one is
    /// reported from its quote, the construct's first character (LANGUAGE §10.1), any later
    /// one at itself (diagnostics at one position are reported once).
    fn escape_error(&mut self, lit: usize, start: usize, end: usize, msg: impl Into<String>) {
        let from = if self.reported_literal == Some(lit) {
            start
        } else {
            lit
        };
        self.reported_literal = Some(lit);
        self.error(from, end, msg);
    }

    fn byte(&self, p: usize) -> Option<u8> {
        self.b.get(p).copied()
    }

    fn char_at(&self, p: usize) -> Option<char> {
        self.text.get(p..).and_then(|s| s.chars().next())
    }

    fn run(&mut self) {
        let mut spaced = true;
        // A UTF-8 byte order mark is not part of the program.
        if self.text.starts_with('\u{FEFF}') {
            self.pos = 3;
        }
        loop {
            spaced |= self.skip_trivia();
            let start = self.pos;
            let Some(c) = self.char_at(start) else {
                let span = self.span(start, start);
                self.toks.push(Token {
                    tok: Tok::Eof,
                    span,
                    spaced,
                });
                return;
            };
            let tok = if is_ident_start(c) {
                self.ident()
            } else if c.is_ascii_digit()
                || (c == '.' && self.byte(start + 1).is_some_and(|d| d.is_ascii_digit()))
            {
                self.number()
            } else if c == '"' {
                self.string()
            } else if c == '\'' {
                self.char_lit()
            } else if let Some(p) = self.punct() {
                Some(Tok::P(p))
            } else {
                self.pos += c.len_utf8();
                let what = if c.is_whitespace() {
                    "whitespace character"
                } else {
                    "character"
                };
                self.error(
                    start,
                    self.pos,
                    format!("unexpected {what} U+{:04X}", c as u32),
                );
                spaced = true;
                continue;
            };
            if let Some(tok) = tok {
                let span = self.span(start, self.pos);
                self.toks.push(Token { tok, span, spaced });
            }
            spaced = false;
        }
    }

    /// Skips whitespace and comments; true if anything was skipped.
    fn skip_trivia(&mut self) -> bool {
        let begin = self.pos;
        while let Some(c) = self.byte(self.pos) {
            match c {
                b' ' | b'\t' | b'\r' | b'\n' | 0x0C => self.pos += 1,
                b'/' if self.byte(self.pos + 1) == Some(b'/') => {
                    while !matches!(self.byte(self.pos), None | Some(b'\n' | b'\r')) {
                        self.pos += 1;
                    }
                }
                b'/' if self.byte(self.pos + 1) == Some(b'*') => self.block_comment(),
                _ => break,
            }
        }
        self.pos != begin
    }

    /// Skips a nested `/* … */` comment starting at `self.pos`.
    fn block_comment(&mut self) {
        let start = self.pos;
        self.pos += 2;
        let mut depth = 1u32;
        while depth > 0 {
            match (self.byte(self.pos), self.byte(self.pos + 1)) {
                (None, _) => {
                    self.error(start, start + 2, "unterminated comment");
                    return;
                }
                (Some(b'/'), Some(b'*')) => {
                    depth += 1;
                    self.pos += 2;
                }
                (Some(b'*'), Some(b'/')) => {
                    depth -= 1;
                    self.pos += 2;
                }
                _ => self.pos += 1,
            }
        }
    }

    /// Scans identifier characters from `p`; returns the end.
    fn scan_ident_chars(&self, mut p: usize) -> usize {
        while let Some(c) = self.char_at(p) {
            if !is_ident_continue(c) {
                break;
            }
            p += c.len_utf8();
        }
        p
    }

    fn ident(&mut self) -> Option<Tok> {
        let start = self.pos;
        self.pos = self.scan_ident_chars(start);
        let word = &self.text[start..self.pos];
        // `non-sealed` is one reserved word although it contains a hyphen.
        if word == "non" && self.text[self.pos..].starts_with("-sealed") {
            let end = self.pos + "-sealed".len();
            if self.scan_ident_chars(end) == end {
                self.pos = end;
                return Some(Tok::Kw(Kw::NonSealed));
            }
        }
        Some(match Kw::from_word(word) {
            Some(kw) => Tok::Kw(kw),
            None => Tok::Ident(word.to_string()),
        })
    }

    fn punct(&mut self) -> Option<P> {
        let rest = &self.b[self.pos..];
        let at = |i: usize| rest.get(i).copied().unwrap_or(0);
        let (p, len) = match at(0) {
            b'(' => (P::LParen, 1),
            b')' => (P::RParen, 1),
            b'{' => (P::LBrace, 1),
            b'}' => (P::RBrace, 1),
            b'[' => (P::LBracket, 1),
            b']' => (P::RBracket, 1),
            b';' => (P::Semi, 1),
            b',' => (P::Comma, 1),
            b'.' if at(1) == b'.' && at(2) == b'.' => (P::Ellipsis, 3),
            b'.' => (P::Dot, 1),
            b'@' => (P::At, 1),
            b':' if at(1) == b':' => (P::ColonColon, 2),
            b':' => (P::Colon, 1),
            b'?' => (P::Question, 1),
            b'#' if at(1) == b'=' => (P::HashEq, 2),
            b'#' => (P::Hash, 1),
            b'=' if at(1) == b'=' => (P::EqEq, 2),
            b'=' => (P::Assign, 1),
            b'!' if at(1) == b'=' => (P::Ne, 2),
            b'!' => (P::Bang, 1),
            b'<' if at(1) == b'<' && at(2) == b'=' => (P::ShlEq, 3),
            b'<' if at(1) == b'=' => (P::Le, 2),
            b'<' => (P::Lt, 1),
            b'>' if at(1) == b'>' && at(2) == b'>' && at(3) == b'=' => (P::UshrEq, 4),
            b'>' if at(1) == b'>' && at(2) == b'=' => (P::ShrEq, 3),
            b'>' if at(1) == b'=' => (P::Ge, 2),
            b'>' => (P::Gt, 1),
            b'~' => (P::Tilde, 1),
            b'&' if at(1) == b'&' => (P::AndAnd, 2),
            b'&' if at(1) == b'=' => (P::AmpEq, 2),
            b'&' => (P::Amp, 1),
            b'|' if at(1) == b'|' => (P::OrOr, 2),
            b'|' if at(1) == b'=' => (P::PipeEq, 2),
            b'|' => (P::Pipe, 1),
            b'^' if at(1) == b'=' => (P::CaretEq, 2),
            b'^' => (P::Caret, 1),
            b'+' if at(1) == b'+' => (P::PlusPlus, 2),
            b'+' if at(1) == b'=' => (P::PlusEq, 2),
            b'+' => (P::Plus, 1),
            b'-' if at(1) == b'>' => (P::Arrow, 2),
            b'-' if at(1) == b'-' => (P::MinusMinus, 2),
            b'-' if at(1) == b'=' => (P::MinusEq, 2),
            b'-' => (P::Minus, 1),
            b'*' if at(1) == b'=' => (P::StarEq, 2),
            b'*' => (P::Star, 1),
            b'/' if at(1) == b'=' => (P::SlashEq, 2),
            b'/' => (P::Slash, 1),
            b'%' if at(1) == b'=' => (P::PercentEq, 2),
            b'%' => (P::Percent, 1),
            _ => return None,
        };
        self.pos += len;
        Some(p)
    }

    // ----- numbers -----

    fn scan_while(&self, mut p: usize, f: impl Fn(u8) -> bool) -> usize {
        while self.byte(p).is_some_and(&f) {
            p += 1;
        }
        p
    }

    /// Whether the `.` at `p` (after decimal digits) begins a fraction rather than a member
    /// access: `1.5`, `1.`, `1.e3`, `1.f` are floats; `1..`, `1.foo` are not.
    fn dot_starts_fraction(&self, p: usize) -> bool {
        let Some(next) = self.char_at(p + 1) else {
            return true;
        };
        if next.is_ascii_digit() {
            return true;
        }
        if next == '.' {
            return false;
        }
        if !is_ident_start(next) {
            return true;
        }
        match next {
            'e' | 'E' => {
                let mut q = p + 2;
                if matches!(self.byte(q), Some(b'+' | b'-')) {
                    q += 1;
                }
                self.byte(q).is_some_and(|d| d.is_ascii_digit())
            }
            'f' | 'F' | 'd' | 'D' => self.scan_ident_chars(p + 2) == p + 2,
            _ => false,
        }
    }

    fn number(&mut self) -> Option<Tok> {
        let start = self.pos;
        let b0 = self.byte(start);
        let b1 = self.byte(start + 1);
        if b0 == Some(b'0') && matches!(b1, Some(b'x' | b'X')) {
            return Some(self.hex_number(start));
        }
        if b0 == Some(b'0') && matches!(b1, Some(b'b' | b'B')) {
            let digits_end = self.scan_while(start + 2, |c| c.is_ascii_digit() || c == b'_');
            return Some(self.finish_radix_int(start, start + 2, digits_end, 2, "binary"));
        }
        let is_digit_ = |c: u8| c.is_ascii_digit() || c == b'_';
        let int_end = self.scan_while(start, is_digit_);
        let mut p = int_end;
        let mut frac = None;
        if self.byte(p) == Some(b'.') && self.dot_starts_fraction(p) {
            let fs = p + 1;
            p = self.scan_while(fs, is_digit_);
            frac = Some((fs, p));
        }
        let mut exp = None;
        if matches!(self.byte(p), Some(b'e' | b'E')) {
            let mut q = p + 1;
            if matches!(self.byte(q), Some(b'+' | b'-')) {
                q += 1;
            }
            let es = q;
            q = self.scan_while(es, is_digit_);
            exp = Some((es, q));
            p = q;
        }
        let body_end = p;
        let suffix_end = self.scan_ident_chars(p);
        self.pos = suffix_end;
        let suffix = &self.text[body_end..suffix_end];
        let is_float = frac.is_some() || exp.is_some() || matches!(suffix, "f" | "F" | "d" | "D");
        let whole = (start, suffix_end);
        let int_digits = &self.text[start..int_end];

        if !is_float {
            if !matches!(suffix, "" | "l" | "L") {
                self.error(
                    whole.0,
                    whole.1,
                    format!("invalid suffix '{suffix}' on integer literal"),
                );
                return Some(Tok::Int {
                    value: 0,
                    non_decimal: false,
                    long: false,
                });
            }
            let long = !suffix.is_empty();
            let octal = int_digits.len() > 1 && int_digits.starts_with('0');
            let (digits, radix, name) = if octal {
                // `0_7` is octal 7: the leading 0 is a digit an `_` may follow.
                let rest = &int_digits[1..];
                let rest = if underscores_ok(int_digits) {
                    rest.trim_start_matches('_')
                } else {
                    rest
                };
                (rest, 8, "octal")
            } else {
                (int_digits, 10, "decimal")
            };
            let value = match self.digits_value(digits, radix, name) {
                Ok(v) => v,
                Err(msg) => {
                    self.error(whole.0, whole.1, msg);
                    return Some(Tok::Int {
                        value: 0,
                        non_decimal: octal,
                        long,
                    });
                }
            };
            // 2^63 itself is left to the parser: it is valid directly under a unary minus.
            if long && !octal && value > 1 << 63 {
                self.error(whole.0, whole.1, "integer literal is too large for int64");
                return Some(Tok::Int {
                    value: 0,
                    non_decimal: false,
                    long,
                });
            }
            return Some(Tok::Int {
                value,
                non_decimal: octal,
                long,
            });
        }

        // A float: each digit group must be well-formed.
        let f32_suffix = matches!(suffix, "f" | "F");
        let f64_suffix = matches!(suffix, "d" | "D");
        let bad = |text: String| Tok::Float {
            value: 0.0,
            f32_suffix,
            f64_suffix,
            text,
        };
        if !matches!(suffix, "" | "f" | "F" | "d" | "D") {
            self.error(
                whole.0,
                whole.1,
                format!("invalid suffix '{suffix}' on float literal"),
            );
            return Some(bad(String::new()));
        }
        let mut groups_ok = int_digits.is_empty() || underscores_ok(int_digits);
        if let Some((fs, fe)) = frac {
            let f = &self.text[fs..fe];
            groups_ok &= f.is_empty() || underscores_ok(f);
            // `1_.5` has its `_` at the end of the integer part, caught above.
        }
        if let Some((es, ee)) = exp {
            let e = &self.text[es..ee];
            if e.is_empty() {
                self.error(whole.0, whole.1, "malformed exponent in float literal");
                return Some(bad(String::new()));
            }
            groups_ok &= underscores_ok(e);
        }
        if !groups_ok {
            self.error(whole.0, whole.1, "'_' is allowed only between digits");
            return Some(bad(String::new()));
        }
        let text: String = self.text[start..body_end]
            .chars()
            .filter(|&c| c != '_')
            .collect();
        let value = if f32_suffix {
            text.parse::<f32>().map(f64::from).unwrap_or(f64::NAN)
        } else {
            text.parse::<f64>().unwrap_or(f64::NAN)
        };
        if value.is_nan() {
            self.error(whole.0, whole.1, "malformed float literal");
            return Some(bad(text));
        }
        if value.is_infinite() {
            let ty = if f32_suffix { "float32" } else { "float64" };
            self.error(
                whole.0,
                whole.1,
                format!("float literal is too large for {ty}"),
            );
            return Some(bad(text));
        }
        Some(Tok::Float {
            value,
            f32_suffix,
            f64_suffix,
            text,
        })
    }

    /// Value of a digit string (with `_`) in `radix`, checking digits, `_` and the 64-bit range.
    fn digits_value(&self, digits: &str, radix: u32, name: &str) -> Result<u64, String> {
        if digits.is_empty() {
            return Err(format!("missing digits in {name} literal"));
        }
        if !underscores_ok(digits) {
            return Err("'_' is allowed only between digits".into());
        }
        let mut v: u64 = 0;
        for c in digits.chars().filter(|&c| c != '_') {
            let d = c
                .to_digit(radix)
                .ok_or_else(|| format!("invalid digit '{c}' in {name} literal"))?;
            v = v
                .checked_mul(u64::from(radix))
                .and_then(|v| v.checked_add(u64::from(d)))
                .ok_or_else(|| "integer literal is too large".to_string())?;
        }
        Ok(v)
    }

    /// Finishes a hex/binary integer whose digits are `digits_start..digits_end`.
    fn finish_radix_int(
        &mut self,
        start: usize,
        ds: usize,
        de: usize,
        radix: u32,
        name: &str,
    ) -> Tok {
        let end = self.scan_ident_chars(de);
        self.pos = end;
        let suffix = &self.text[de..end];
        let long = matches!(suffix, "l" | "L");
        if !suffix.is_empty() && !long {
            self.error(
                start,
                end,
                format!("invalid suffix '{suffix}' on integer literal"),
            );
            return Tok::Int {
                value: 0,
                non_decimal: true,
                long,
            };
        }
        // A leading `_` right after `0x`/`0b` is not between digits.
        let digits = &self.text[ds..de];
        match self.digits_value(digits, radix, name) {
            Ok(value) => Tok::Int {
                value,
                non_decimal: true,
                long,
            },
            Err(msg) => {
                self.error(start, end, msg);
                Tok::Int {
                    value: 0,
                    non_decimal: true,
                    long,
                }
            }
        }
    }

    fn hex_number(&mut self, start: usize) -> Tok {
        let is_hex_ = |c: u8| c.is_ascii_hexdigit() || c == b'_';
        let ds = start + 2;
        let de = self.scan_while(ds, is_hex_);
        let next = self.byte(de);
        let after = self.byte(de + 1);
        let dot_frac = next == Some(b'.')
            && after.is_some_and(|c| c.is_ascii_hexdigit() || c == b'p' || c == b'P');
        if !dot_frac && !matches!(next, Some(b'p' | b'P')) {
            return self.finish_radix_int(start, ds, de, 16, "hexadecimal");
        }
        // A hexadecimal float: 0x int? (. frac?)? p sign? exp.
        let mut p = de;
        let mut frac = (p, p);
        if dot_frac {
            let fs = p + 1;
            p = self.scan_while(fs, is_hex_);
            frac = (fs, p);
        }
        let mut exp = None;
        if matches!(self.byte(p), Some(b'p' | b'P')) {
            let mut q = p + 1;
            if matches!(self.byte(q), Some(b'+' | b'-')) {
                q += 1;
            }
            let es = q;
            q = self.scan_while(es, |c| c.is_ascii_digit() || c == b'_');
            exp = Some((p + 1, es, q));
            p = q;
        }
        let body_end = p;
        let end = self.scan_ident_chars(p);
        self.pos = end;
        let suffix = &self.text[body_end..end];
        let f32_suffix = matches!(suffix, "f" | "F");
        let f64_suffix = matches!(suffix, "d" | "D");
        let text: String = self.text[start..body_end]
            .chars()
            .filter(|&c| c != '_')
            .collect();
        let bad = |text: String| Tok::Float {
            value: 0.0,
            f32_suffix,
            f64_suffix,
            text,
        };
        if !matches!(suffix, "" | "f" | "F" | "d" | "D") {
            self.error(
                start,
                end,
                format!("invalid suffix '{suffix}' on float literal"),
            );
            return bad(text);
        }
        let int_digits = &self.text[ds..de];
        let frac_digits = &self.text[frac.0..frac.1];
        let Some((sign_start, es, ee)) = exp else {
            self.error(start, end, "hexadecimal float literal needs a 'p' exponent");
            return bad(text);
        };
        let exp_digits = &self.text[es..ee];
        let groups_ok = (int_digits.is_empty() || underscores_ok(int_digits))
            && (frac_digits.is_empty() || underscores_ok(frac_digits))
            && !exp_digits.is_empty()
            && underscores_ok(exp_digits);
        if (int_digits.is_empty() && frac_digits.is_empty()) || !groups_ok {
            self.error(start, end, "malformed hexadecimal float literal");
            return bad(text);
        }
        let negative = self.byte(sign_start) == Some(b'-');
        // Saturate huge exponents: anything this large overflows or underflows anyway.
        let mut e: i64 = 0;
        for c in exp_digits.bytes().filter(|&c| c != b'_') {
            e = (e * 10 + i64::from(c - b'0')).min(1 << 40);
        }
        if negative {
            e = -e;
        }
        let (fmt_p, fmt_emin, fmt_emax) = if f32_suffix {
            (24, -126, 127)
        } else {
            (53, -1022, 1023)
        };
        match hex_float_bits(int_digits, frac_digits, e, fmt_p, fmt_emin, fmt_emax) {
            Some(bits) => {
                let value = if f32_suffix {
                    f64::from(f32::from_bits(bits as u32))
                } else {
                    f64::from_bits(bits)
                };
                Tok::Float {
                    value,
                    f32_suffix,
                    f64_suffix,
                    text,
                }
            }
            None => {
                let ty = if f32_suffix { "float32" } else { "float64" };
                self.error(start, end, format!("float literal is too large for {ty}"));
                bad(text)
            }
        }
    }

    // ----- chars and strings -----

    /// Reads one piece (a character or an escape) at `self.pos`, which is not a quote or EOL,
    /// of the literal starting at `lit`: a bad escape is reported from there, the construct's
    /// first character (LANGUAGE §10.1), through the escape.
    fn piece(&mut self, lit: usize) -> Piece {
        let start = self.pos;
        let Some(c) = self.char_at(start) else {
            return Piece::Bad;
        };
        self.pos += c.len_utf8();
        if c != '\\' {
            return Piece::Cp(c as u32);
        }
        let Some(e) = self.char_at(self.pos) else {
            self.escape_error(lit, start, self.pos, "incomplete escape sequence");
            return Piece::Bad;
        };
        if e == '\n' || e == '\r' {
            self.escape_error(lit, start, self.pos, "incomplete escape sequence");
            return Piece::Bad;
        }
        self.pos += e.len_utf8();
        let simple = match e {
            'b' => Some(8),
            't' => Some(9),
            'n' => Some(10),
            'f' => Some(12),
            'r' => Some(13),
            '"' => Some(34),
            '\'' => Some(39),
            '\\' => Some(92),
            _ => None,
        };
        if let Some(v) = simple {
            return Piece::Cp(v);
        }
        if let Some(d) = e.to_digit(8) {
            // `\0` … `\377`: a leading 0–3 allows two more digits, 4–7 one more.
            let max_more = if d <= 3 { 2 } else { 1 };
            let mut v = d;
            for _ in 0..max_more {
                match self.byte(self.pos).and_then(|c| (c as char).to_digit(8)) {
                    Some(d2) => {
                        v = v * 8 + d2;
                        self.pos += 1;
                    }
                    None => break,
                }
            }
            return Piece::Cp(v);
        }
        if e == 'u' {
            while self.byte(self.pos) == Some(b'u') {
                self.pos += 1;
            }
            let hex = self
                .text
                .get(self.pos..self.pos + 4)
                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()));
            let Some(hex) = hex else {
                let end = self
                    .scan_while(self.pos, |c| c.is_ascii_hexdigit())
                    .min(self.pos + 4);
                self.escape_error(
                    lit,
                    start,
                    end,
                    "invalid unicode escape: expected four hexadecimal digits",
                );
                self.pos = end;
                return Piece::Bad;
            };
            let v = u32::from_str_radix(hex, 16).unwrap_or(0);
            self.pos += 4;
            return if (0xD800..=0xDFFF).contains(&v) {
                Piece::Surrogate(v)
            } else {
                Piece::Cp(v)
            };
        }
        self.escape_error(
            lit,
            start,
            self.pos,
            format!("invalid escape sequence '\\{e}'"),
        );
        Piece::Bad
    }

    /// Reads the contents of a char or string literal up to `quote` (exclusive), pairing
    /// surrogate escapes. Returns the code points and whether the closing quote was found
    /// (in which case it is consumed). `lit`: where the literal starts (its quote).
    fn literal_body(&mut self, quote: u8, lit: usize) -> (Vec<u32>, bool) {
        let mut out = Vec::new();
        let mut pending_high: Option<(u32, usize)> = None;
        loop {
            match self.byte(self.pos) {
                None | Some(b'\n' | b'\r') => {
                    self.flush_high(&mut pending_high, lit);
                    return (out, false);
                }
                Some(c) if c == quote => {
                    self.flush_high(&mut pending_high, lit);
                    self.pos += 1;
                    return (out, true);
                }
                _ => {}
            }
            let piece_start = self.pos;
            match self.piece(lit) {
                Piece::Surrogate(v) if (0xDC00..=0xDFFF).contains(&v) => {
                    match pending_high.take() {
                        Some((hi, _)) => out.push(0x10000 + ((hi - 0xD800) << 10) + (v - 0xDC00)),
                        None => self.escape_error(
                            lit,
                            piece_start,
                            self.pos,
                            "lone surrogate in unicode escape",
                        ),
                    }
                }
                Piece::Surrogate(v) => {
                    self.flush_high(&mut pending_high, lit);
                    pending_high = Some((v, piece_start));
                }
                Piece::Cp(v) => {
                    self.flush_high(&mut pending_high, lit);
                    out.push(v);
                }
                Piece::Bad => self.flush_high(&mut pending_high, lit),
            }
        }
    }

    fn flush_high(&mut self, pending: &mut Option<(u32, usize)>, lit: usize) {
        if let Some((_, at)) = pending.take() {
            self.escape_error(lit, at, at + 6, "lone surrogate in unicode escape");
        }
    }

    fn char_lit(&mut self) -> Option<Tok> {
        let start = self.pos;
        self.pos += 1;
        let errors_before = self.diags.len();
        let (cps, closed) = self.literal_body(b'\'', start);
        if self.diags.len() > errors_before {
            // A bad escape was reported; "empty" or "unterminated" would only repeat it.
            return Some(Tok::Char(0));
        }
        if !closed {
            self.error(start, self.pos, "unterminated character literal");
            return Some(Tok::Char(0));
        }
        match cps.as_slice() {
            [c] => Some(Tok::Char(*c)),
            [] => {
                self.error(start, self.pos, "empty character literal");
                Some(Tok::Char(0))
            }
            _ => {
                self.error(
                    start,
                    self.pos,
                    "character literal must hold exactly one code point",
                );
                Some(Tok::Char(0))
            }
        }
    }

    fn string(&mut self) -> Option<Tok> {
        let start = self.pos;
        if self.text[start..].starts_with("\"\"\"") {
            // Text blocks are T3: report at the opening quotes and skip to the closing ones.
            let end = self.text[start + 3..]
                .find("\"\"\"")
                .map_or(self.b.len(), |i| start + 3 + i + 3);
            self.pos = end;
            let span = self.span(start, start + 3);
            self.diags.push(Diag::error(
                code::NOT_IMPLEMENTED,
                span,
                "text blocks are not implemented",
            ));
            return Some(Tok::Str(String::new()));
        }
        self.pos += 1;
        let (cps, closed) = self.literal_body(b'"', start);
        if !closed {
            self.error(start, self.pos, "unterminated string literal");
        }
        // Escapes may produce values that are not chars only via surrogates, which were paired
        // or reported; anything else invalid becomes U+FFFD.
        let s: String = cps
            .into_iter()
            .map(|c| char::from_u32(c).unwrap_or('\u{FFFD}'))
            .collect();
        Some(Tok::Str(s))
    }
}

/// True if `_` occurs only between digits (not first, not last).
fn underscores_ok(s: &str) -> bool {
    !s.starts_with('_') && !s.ends_with('_')
}

/// Exactly rounds the hexadecimal float `0x{int}.{frac}p{exp}` to a binary format with `p`
/// significand bits and exponent range `emin..=emax`, ties to even, subnormals included.
/// Returns the IEEE bit pattern, or `None` if it overflows to infinity.
fn hex_float_bits(int: &str, frac: &str, exp: i64, p: u32, emin: i64, emax: i64) -> Option<u64> {
    // Accumulate up to 60 significant bits in `m`; the rest only sets `sticky`.
    let mut m: u64 = 0;
    let mut e2: i64 = exp;
    let mut sticky = false;
    for (i, c) in int
        .chars()
        .chain(frac.chars())
        .filter(|&c| c != '_')
        .enumerate()
    {
        let d = u64::from(c.to_digit(16).unwrap_or(0));
        let in_frac = i >= int.chars().filter(|&c| c != '_').count();
        if m >> 56 == 0 {
            m = (m << 4) | d;
            if in_frac {
                e2 -= 4;
            }
        } else {
            sticky |= d != 0;
            if !in_frac {
                e2 += 4;
            }
        }
    }
    if m == 0 {
        return Some(0);
    }
    let bits_len = i64::from(64 - m.leading_zeros());
    let top = e2 + bits_len - 1; // value lies in [2^top, 2^(top+1))
    let p = i64::from(p);
    // Weight of the least significant kept bit: normal or subnormal.
    let lsb = if top >= emin {
        top - (p - 1)
    } else {
        emin - (p - 1)
    };
    let shift = lsb - e2;
    let mut q: u128;
    if shift <= 0 {
        q = u128::from(m) << (-shift).min(100);
    } else if shift >= 100 {
        q = 0; // below half of the smallest step: rounds to zero
    } else {
        let wide = u128::from(m);
        let s = shift as u32;
        q = wide >> s;
        let rem = wide & ((1u128 << s) - 1);
        let half = 1u128 << (s - 1);
        let up = rem > half || (rem == half && (sticky || q & 1 == 1));
        if up {
            q += 1;
        }
    }
    let mut lsb = lsb;
    if q >> p != 0 {
        // Rounding carried into a new bit.
        q >>= 1;
        lsb += 1;
    }
    if q == 0 {
        return Some(0);
    }
    let q_len = 128 - i64::from(q.leading_zeros());
    let top = lsb + q_len - 1;
    if top > emax {
        return None;
    }
    let frac_bits = (p - 1) as u32;
    if q_len == p {
        let biased = (top - emin + 1) as u64;
        Some((biased << frac_bits) | (q as u64 & ((1u64 << frac_bits) - 1)))
    } else {
        // Subnormal (lsb == emin - (p - 1)); a carry into bit p-1 yields the smallest normal.
        Some(q as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok> {
        let (t, d) = lex(0, src);
        assert!(d.is_empty(), "unexpected diagnostics for {src:?}: {d:?}");
        t.into_iter()
            .map(|t| t.tok)
            .filter(|t| *t != Tok::Eof)
            .collect()
    }

    fn one(src: &str) -> Tok {
        let t = toks(src);
        assert_eq!(t.len(), 1, "{src:?} gave {t:?}");
        t.into_iter().next().unwrap_or(Tok::Eof)
    }

    fn err(src: &str) -> Vec<Diag> {
        let (_, d) = lex(0, src);
        assert!(!d.is_empty(), "expected an error for {src:?}");
        d
    }

    fn int(v: u64, non_decimal: bool, long: bool) -> Tok {
        Tok::Int {
            value: v,
            non_decimal,
            long,
        }
    }

    fn float_val(src: &str) -> (f64, bool, bool) {
        match one(src) {
            Tok::Float {
                value,
                f32_suffix,
                f64_suffix,
                ..
            } => (value, f32_suffix, f64_suffix),
            t => panic!("{src}: not a float: {t:?}"),
        }
    }

    #[test]
    fn integer_literals() {
        assert_eq!(one("0"), int(0, false, false));
        assert_eq!(one("123"), int(123, false, false));
        assert_eq!(one("1_000_000"), int(1_000_000, false, false));
        assert_eq!(one("0xCAFE_BABE"), int(0xCAFE_BABE, true, false));
        assert_eq!(one("0XffL"), int(255, true, true));
        assert_eq!(one("0755"), int(493, true, false));
        assert_eq!(one("0b1011"), int(11, true, false));
        assert_eq!(one("0B1_0l"), int(2, true, true));
        assert_eq!(
            one("9223372036854775807L"),
            int(i64::MAX as u64, false, true)
        );
        assert_eq!(one("18446744073709551615"), int(u64::MAX, false, false));
        assert_eq!(one("0xFFFFFFFFFFFFFFFFL"), int(u64::MAX, true, true));
        assert_eq!(one("2147483648"), int(2147483648, false, false));
        assert_eq!(one("00"), int(0, true, false));
    }

    #[test]
    fn integer_literal_errors() {
        for bad in [
            "08",
            "09_1",
            "18446744073709551616",
            "9223372036854775809L",
            "0x",
            "0b",
            "0b102",
            "1_",
            "0x_1",
            "0xFFFFFFFFFFFFFFFFF",
            "12abc",
            "1L2",
            "0x1g",
        ] {
            let d = err(bad);
            assert_eq!(d[0].code, code::SYNTAX, "{bad}");
            assert_eq!(d[0].span.map(|s| s.start), Some(0), "{bad}");
        }
    }

    #[test]
    fn float_literals() {
        assert_eq!(float_val("1.5"), (1.5, false, false));
        assert_eq!(float_val("1."), (1.0, false, false));
        assert_eq!(float_val(".5"), (0.5, false, false));
        assert_eq!(float_val("1e3"), (1000.0, false, false));
        assert_eq!(float_val("2.5e-3"), (2.5e-3, false, false));
        assert_eq!(float_val("4.84e+00"), (4.84, false, false));
        assert_eq!(float_val("2f"), (2.0, true, false));
        assert_eq!(float_val("2D"), (2.0, false, true));
        assert_eq!(float_val("2F"), (2.0, true, false));
        assert_eq!(float_val("1.5d"), (1.5, false, true));
        assert_eq!(float_val("0x1.8p3"), (12.0, false, false));
        assert_eq!(float_val("0x1p-2f"), (0.25, true, false));
        assert_eq!(float_val("1_0.2_5"), (10.25, false, false));
        // `0.1f` is rounded directly to float32, then widened.
        assert_eq!(float_val("0.1f").0, f64::from(0.1f32));
        assert_eq!(float_val("1.e3"), (1000.0, false, false));
        match one("1_0.5e1_0f") {
            Tok::Float { text, .. } => assert_eq!(text, "10.5e10"),
            t => panic!("{t:?}"),
        }
    }

    #[test]
    fn float_double_rounding_is_avoided() {
        // 1.00000005960464477539062500000001 is just above the float32 midpoint between 1 and
        // 1+2^-23; through float64 it would round to the midpoint and then to even (1.0).
        let (v, ..) = float_val("1.00000005960464477539062500000001f");
        assert_eq!(v as f32, 1.0f32 + f32::EPSILON);
    }

    #[test]
    fn hex_floats_round_exactly() {
        assert_eq!(float_val("0x1.fffffffffffff8p0").0, 2.0); // tie to even upwards
        assert_eq!(float_val("0x1.fffffffffffff7p0").0, 2.0 - f64::EPSILON);
        assert_eq!(float_val("0x1p-1074").0, f64::from_bits(1));
        assert_eq!(float_val("0x1p-1075").0, 0.0); // tie to even: zero
        assert_eq!(float_val("0x1.0000000000001p-1075").0, f64::from_bits(1));
        assert_eq!(float_val("0x1.fffffffffffffp1023").0, f64::MAX);
        assert_eq!(float_val("0x.8p1").0, 1.0);
        assert_eq!(float_val("0x1.000001p0f").0, 1.0); // float32: tie to even
        assert_eq!(
            float_val("0x1.000003p0f").0,
            f64::from(1.0f32 + 2.0 * f32::EPSILON)
        );
        assert_eq!(float_val("0x1p-149f").0, f64::from(f32::from_bits(1)));
        assert_eq!(float_val("0x1.fffffep127f").0, f64::from(f32::MAX));
        let d = err("0x1p1024");
        assert_eq!(d[0].code, code::SYNTAX);
        err("0x1p128f");
        err("0x1.8");
        err("0x1.8p");
    }

    #[test]
    fn float_literal_errors() {
        for bad in [
            "1e", "1e+", "1e400", "3.5e38f", "1_.5", "1.5_", "1.5x", "1e5_", "2.0L",
        ] {
            err(bad);
        }
    }

    #[test]
    fn char_literals() {
        assert_eq!(one("'a'"), Tok::Char('a' as u32));
        assert_eq!(one("'é'"), Tok::Char('é' as u32));
        assert_eq!(one("'😀'"), Tok::Char(0x1F600));
        let escapes = [
            ("'\\b'", 8),
            ("'\\t'", 9),
            ("'\\n'", 10),
            ("'\\f'", 12),
            ("'\\r'", 13),
            ("'\\\"'", 34),
            ("'\\''", 39),
            ("'\\\\'", 92),
            ("'\\0'", 0),
            ("'\\7'", 7),
            ("'\\77'", 63),
            ("'\\377'", 255),
            ("'\\u0041'", 65),
            ("'\\uuu0041'", 65),
            ("'\\uD83D\\uDE00'", 0x1F600),
        ];
        for (src, v) in escapes {
            assert_eq!(one(src), Tok::Char(v), "{src}");
        }
    }

    #[test]
    fn char_literal_errors() {
        for bad in [
            "''",
            "'ab'",
            "'\\q'",
            "'\\uD83D'",
            "'\\uDE00'",
            "'a",
            "'\\u12'",
            "'\\400'",
            "'\\s'",
        ] {
            let d = err(bad);
            assert_eq!(d[0].code, code::SYNTAX, "{bad}");
        }
    }

    #[test]
    fn string_literals() {
        assert_eq!(
            one(r#""a\tb\u00e9\101\uD83D\uDE00""#),
            Tok::Str("a\tbéA😀".into())
        );
        assert_eq!(one(r#""""#), Tok::Str(String::new()));
        assert_eq!(one(r#""\0""#), Tok::Str("\0".into()));
        err("\"abc\ndef\"");
        err("\"abc");
        err(r#""\x""#);
        err(r#""\uDE00x""#);
        let (t, d) = lex(0, "x = \"\"\"\nhello\n\"\"\";");
        assert_eq!(d[0].code, code::NOT_IMPLEMENTED);
        assert_eq!(d[0].span.map(|s| s.start), Some(4));
        assert_eq!(t[2].tok, Tok::Str(String::new()));
        assert_eq!(t[3].tok, Tok::P(P::Semi));
    }

    #[test]
    fn identifiers_and_keywords() {
        assert_eq!(
            toks("café $x _y shared var int32 bfloat16 non-sealed"),
            vec![
                Tok::Ident("café".into()),
                Tok::Ident("$x".into()),
                Tok::Ident("_y".into()),
                Tok::Ident("shared".into()),
                Tok::Ident("var".into()),
                Tok::Kw(Kw::Int32),
                Tok::Ident("bfloat16".into()),
                Tok::Kw(Kw::NonSealed),
            ]
        );
        assert_eq!(toks("non - sealed").len(), 3);
        assert_eq!(toks("x1").len(), 1);
        // Non-ASCII whitespace is neither a separator nor part of a name.
        err("a\u{00A0}b");
    }

    #[test]
    fn comments_nest() {
        assert_eq!(toks("a /* x /* y */ z */ b // c\nd"), toks("a b d"));
        assert_eq!(toks("/** @EntryPoint */ a"), toks("a"));
        let d = err("a /* /* */ b");
        assert_eq!(d[0].span.map(|s| s.start), Some(2));
        err("/* abc");
    }

    #[test]
    fn operators_longest_match() {
        let p = |s: &str| {
            toks(s)
                .into_iter()
                .map(|t| match t {
                    Tok::P(p) => p.as_str(),
                    _ => "?",
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            p("#= # <<= >>= >>>= >> >>> <<"),
            ["#=", "#", "<<=", ">>=", ">>>=", ">", ">", ">", ">", ">", "<", "<"]
        );
        assert_eq!(
            p("-> -- -= - ... :: : ? != == ="),
            ["->", "--", "-=", "-", "...", "::", ":", "?", "!=", "==", "="]
        );
        assert_eq!(
            p("&& &= & || |= | ^= ^ ++ += + *= * /= / %= %"),
            [
                "&&", "&=", "&", "||", "|=", "|", "^=", "^", "++", "+=", "+", "*=", "*", "/=", "/",
                "%=", "%"
            ]
        );
    }

    #[test]
    fn spacing_is_recorded() {
        let (t, _) = lex(0, "a>>b > >c>/**/>");
        let spaced: Vec<bool> = t.iter().map(|t| t.spaced).collect();
        // a > > b > > c > > EOF
        assert_eq!(
            spaced,
            [true, false, false, false, true, true, false, false, true, false]
        );
    }

    #[test]
    fn member_access_on_integer_is_not_a_float() {
        assert_eq!(
            toks("1.foo"),
            vec![
                int(1, false, false),
                Tok::P(P::Dot),
                Tok::Ident("foo".into())
            ]
        );
        assert_eq!(toks("a[1].x").len(), 6);
    }

    #[test]
    fn bad_characters_are_reported_and_skipped() {
        let (t, d) = lex(0, "a ` b \\ c");
        assert_eq!(d.len(), 2);
        assert_eq!(t.len(), 4);
    }

    #[test]
    fn never_panics_on_odd_input() {
        for src in [
            "'",
            "\"",
            "0x",
            "0x1p",
            ".",
            "'\\",
            "\"\\u",
            "/*",
            "0b",
            "1e",
            "\"\"\"",
            "'\\uD800\\u",
            "\u{FEFF}",
        ] {
            let (t, _) = lex(0, src);
            assert_eq!(t.last().map(|t| &t.tok), Some(&Tok::Eof));
        }
    }
}
