//! How the REPL prints values: the echo line (`: uint32 = 42`), buffer and array previews,
//! and element lists for `:show`.

use cajeta_vm::session::{BufferInfo, Object};
use cajeta_vm::{Value, Vm};

/// Collections longer than this show their first and last [`EDGE`] elements.
pub const PREVIEW_ALL: u64 = 8;
/// Elements shown at each end of a long collection.
pub const EDGE: u64 = 4;

/// A quoted String literal (`"a\"b"`) as Cajeta would write it.
fn quote(s: &str, q: char) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push(q);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\\' => out.push_str("\\\\"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            // Other control characters as `\uXXXX` (LANGUAGE §1), never raw to the terminal.
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// One value as the REPL shows it: numbers and booleans by string conversion (LANGUAGE §3.5),
/// Strings and chars quoted, library enum constants (`ty` names the enum) by name.
pub fn value_text(vm: &Vm, v: &Value, ty: &str) -> String {
    match (v, ty) {
        (Value::I32(k), "MemoryKind") => enum_name(&["Device", "Pinned", "Unified"], *k),
        (Value::I32(k), "MemoryOrder") => {
            enum_name(&["Relaxed", "Acquire", "Release", "AcqRel", "SeqCst"], *k)
        }
        (Value::Str(Some(s)), _) => quote(s, '"'),
        (Value::Char(_), _) => quote(&v.to_text(), '\''),
        (Value::Ref(h), _) => match vm.object(*h) {
            Object::Null => "null".into(),
            Object::Dropped => "<dropped>".into(),
            Object::Str(s) => quote(&s, '"'),
            Object::Buffer(b) => format!("<{}>", buffer_summary(&b)),
            Object::Array(_, n) => format!("<array, count {n}>"),
            Object::Instance(c, _) => format!("<{c}>"),
            Object::Stream(..) => "<KernelStream>".into(),
            Object::Event(..) => "<Event>".into(),
        },
        _ => v.to_text(),
    }
}

fn enum_name(names: &[&str], k: i32) -> String {
    usize::try_from(k)
        .ok()
        .and_then(|i| names.get(i))
        .map_or_else(|| k.to_string(), |s| (*s).to_string())
}

/// `length 4, 16 bytes, cpu` (plus the memory kind when not `Device`, `view`, `freed`).
pub fn buffer_summary(b: &BufferInfo) -> String {
    let mut s = format!("length {}", b.len);
    if b.freed {
        s.push_str(", freed");
    } else {
        let bytes = b.len.saturating_mul(b.elem.size() as u64);
        s.push_str(&format!(", {bytes} bytes"));
        if let Some(be) = b.backend {
            s.push_str(&format!(", {be}"));
        }
        if b.kind != "Device" {
            s.push_str(&format!(", {}", b.kind));
        }
    }
    if b.view {
        s.push_str(", view");
    }
    s
}

/// `[a, b, c]`, or `[a, b, c, d, ..., w, x, y, z]` for a long collection; `fetch(start,
/// count)` reads elements.
fn preview(
    vm: &Vm,
    len: u64,
    elem_ty: &str,
    fetch: impl Fn(u64, u64) -> Option<Vec<Value>>,
) -> Option<String> {
    let show = |vals: Vec<Value>| {
        vals.iter()
            .map(|v| value_text(vm, v, elem_ty))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if len <= PREVIEW_ALL {
        return Some(format!("[{}]", show(fetch(0, len)?)));
    }
    let head = show(fetch(0, EDGE)?);
    let tail = show(fetch(len - EDGE, EDGE)?);
    Some(format!("[{head}, ..., {tail}]"))
}

/// The element type's name in `KernelBuffer<T>` or `T[]` (for enum and quoting rules).
fn elem_name(ty: &str) -> &str {
    if let Some(inner) = ty
        .strip_prefix("KernelBuffer<")
        .and_then(|t| t.strip_suffix('>'))
    {
        return inner;
    }
    ty.strip_suffix("[]").unwrap_or("")
}

/// The echo line of a value of type `ty` (without newline): `: uint32 = 42`,
/// `: KernelBuffer<float32> (length 4, 16 bytes, cpu) = [0, 0, 0, 0]`.
pub fn echo_line(vm: &Vm, v: &Value, ty: &str) -> String {
    let Value::Ref(h) = v else {
        return format!(": {ty} = {}", value_text(vm, v, ty));
    };
    match vm.object(*h) {
        Object::Buffer(b) => {
            let head = format!(": {ty} ({})", buffer_summary(&b));
            if b.freed {
                return head;
            }
            match preview(vm, b.len, elem_name(ty), |s, n| {
                vm.buffer_elements(*h, s, n)
            }) {
                Some(p) => format!("{head} = {p}"),
                None => head,
            }
        }
        Object::Array(_, n) => {
            let p = preview(vm, n, elem_name(ty), |s, c| vm.array_elements(*h, s, c))
                .unwrap_or_default();
            format!(": {ty} (count {n}) = {p}")
        }
        Object::Instance(c, fields) => {
            let fs = fields
                .iter()
                .map(|(n, v)| format!("{n}={}", value_text(vm, v, "")))
                .collect::<Vec<_>>()
                .join(", ");
            format!(": {ty} = {c}{{{fs}}}")
        }
        Object::Stream(default, destroyed) => {
            let what = match (default, destroyed) {
                (true, _) => "default stream",
                (false, true) => "destroyed stream",
                (false, false) => "stream",
            };
            format!(": {ty} = {what}")
        }
        Object::Event(recorded, destroyed) => {
            let what = match (recorded, destroyed) {
                (_, true) => "destroyed event",
                (true, false) => "recorded event",
                (false, false) => "event",
            };
            format!(": {ty} = {what}")
        }
        Object::Null => format!(": {ty} = null"),
        Object::Dropped => format!(": {ty} = <dropped>"),
        Object::Str(s) => format!(": {ty} = {}", quote(&s, '"')),
    }
}

/// Reads `count` elements from `start` of a buffer or array.
type Fetch<'a> = dyn Fn(u64, u64) -> Option<Vec<Value>> + 'a;

/// Elements `start..end` of a buffer or array as `name[start..end] = [..]`, or an error
/// message.
pub fn show_range(
    vm: &Vm,
    name: &str,
    v: &Value,
    ty: &str,
    range: Option<(Option<u64>, Option<u64>)>,
) -> Result<String, String> {
    let Value::Ref(h) = v else {
        return Ok(format!("{name} = {}", value_text(vm, v, ty)));
    };
    let (len, fetch): (u64, Box<Fetch>) = match vm.object(*h) {
        Object::Buffer(b) => {
            if b.freed {
                return Err(format!(
                    "{name}: buffer has no storage ({})",
                    buffer_summary(&b)
                ));
            }
            (b.len, Box::new(|s, n| vm.buffer_elements(*h, s, n)))
        }
        Object::Array(_, n) => (n, Box::new(|s, c| vm.array_elements(*h, s, c))),
        _ => return Ok(echo_line(vm, v, ty).replacen(':', &format!("{name} :"), 1)),
    };
    let (start, end) = match range {
        None => (0, len),
        Some((a, b)) => (a.unwrap_or(0), b.unwrap_or(len)),
    };
    if start > end || end > len {
        return Err(format!("{name}: range {start}..{end} is outside 0..{len}"));
    }
    let vals = fetch(start, end - start).ok_or_else(|| format!("{name}: cannot read"))?;
    let items = vals
        .iter()
        .map(|x| value_text(vm, x, elem_name(ty)))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(format!("{name}[{start}..{end}] = [{items}]"))
}

/// Most elements of one array [`live_buffers`] looks at, and most lines it lists.
const MEM_WALK_ELEMENTS: u64 = 4096;
const MEM_WALK_LINES: usize = 64;

/// Adds to `lines` the live owning buffers reachable from `v` (a session variable named
/// `path` of type `ty`): the variable itself, or the elements and fields it leads to
/// (`bs[0]`, `grid.cells`), each object once (`seen`).
pub fn live_buffers(
    vm: &Vm,
    path: &str,
    v: &Value,
    ty: &str,
    seen: &mut std::collections::HashSet<u64>,
    lines: &mut Vec<String>,
) {
    let Value::Ref(h) = v else {
        return;
    };
    if *h == 0 || lines.len() >= MEM_WALK_LINES || !seen.insert(*h) {
        return;
    }
    match vm.object(*h) {
        Object::Buffer(b) if !b.freed && !b.view => {
            let ty = if ty.is_empty() {
                format!("KernelBuffer<{}>", b.elem)
            } else {
                ty.to_string()
            };
            lines.push(format!("  {path} : {ty} ({})", buffer_summary(&b)));
        }
        Object::Array(_, n) => {
            let elem_ty = ty.strip_suffix("[]").unwrap_or("");
            for (i, e) in vm
                .array_elements(*h, 0, n.min(MEM_WALK_ELEMENTS))
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                live_buffers(vm, &format!("{path}[{i}]"), e, elem_ty, seen, lines);
            }
        }
        Object::Instance(_, fields) => {
            for (name, f) in &fields {
                live_buffers(vm, &format!("{path}.{name}"), f, "", seen, lines);
            }
        }
        _ => {}
    }
}
