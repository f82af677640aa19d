//! `.cjb` round trips: encode → decode gives the same module, re-encoding gives the same
//! bytes, and the decoder rejects each kind of malformed input with its error code.

mod common;

use cajeta_bytecode::encode::MAGIC;
use cajeta_bytecode::*;
use common::*;

/// Encodes, decodes, compares, re-encodes and compares bytes.
fn round_trip(m: &Module) -> Vec<u8> {
    let bytes = encode(m);
    let back = decode(&bytes).unwrap_or_else(|e| panic!("decode failed: {e}"));
    assert_eq!(&back, m, "decode(encode(m)) != m");
    assert_eq!(encode(&back), bytes, "re-encoding changed the bytes");
    bytes
}

#[test]
fn empty_module_round_trips() {
    let bytes = round_trip(&Module::default());
    assert_eq!(&bytes[..4], &MAGIC);
    assert_eq!(&bytes[4..8], &FORMAT_VERSION.to_le_bytes());
    // Eight empty sections: tag, u32 length, one count (or presence) byte.
    assert_eq!(bytes.len(), 8 + 8 * 6);
}

#[test]
fn sample_module_round_trips_and_covers_every_opcode() {
    let m = sample_module();
    round_trip(&m);
    for &op in Op::ALL {
        assert!(
            m.functions
                .iter()
                .any(|f| f.code.iter().any(|i| i.op == op)),
            "the sample module lacks `{}`",
            op.mnemonic()
        );
    }
}

#[test]
fn inlined_calls_round_trip() {
    let mut m = sample_module();
    m.functions[0].inlined = vec![
        InlinedCall {
            start: 0,
            end: 2,
            callee: 1,
            line: 7,
            col: 15,
        },
        InlinedCall {
            start: 1,
            end: 2,
            callee: 0,
            line: 300,
            col: 2,
        },
    ];
    round_trip(&m);
    let text = disassemble(&m);
    assert!(text.contains("  inlined:\n    0000..0002  "), "{text}");
}

#[test]
fn encoding_is_deterministic() {
    assert_eq!(encode(&sample_module()), encode(&sample_module()));
    let mut a = sample_module();
    let b = a.clone();
    a.functions[0].name.push('x');
    assert_ne!(encode(&a), encode(&b));
}

#[test]
fn every_type_form_round_trips() {
    let mut types = Vec::new();
    for s in Scalar::ALL {
        types.push(Type::Scalar(s));
        types.push(Type::Buffer(s));
        types.push(Type::Array(Elem::Scalar(s)));
    }
    types.extend([
        Type::Str,
        Type::Stream,
        Type::Event,
        Type::Array(Elem::Str),
        Type::Object(0),
        Type::Object(299),
        Type::Array(Elem::Object(0)),
        Type::Array(Elem::Object(299)),
    ]);
    let classes = (0..300)
        .map(|i| Class {
            name: format!("C{i}"),
            fields: vec![],
        })
        .collect::<Vec<_>>();
    let mut m = one_function(
        types.clone(),
        Some(Type::Object(128)),
        vec![Instr::new(Op::Nop, 0, 0, 0)],
    );
    m.classes = classes;
    m.statics = types
        .iter()
        .enumerate()
        .map(|(i, &ty)| Static {
            name: format!("s{i}"),
            ty,
        })
        .collect();
    m.classes[5].fields = types
        .iter()
        .map(|&ty| Field {
            name: "f".into(),
            ty,
        })
        .collect();
    round_trip(&m);
}

#[test]
fn extreme_values_round_trip() {
    let code = vec![
        Instr::new(Op::Nop, u16::MAX, u16::MAX, u16::MAX),
        Instr::with_bc(Op::Jmp, 0, u32::MAX),
        Instr::new(*Op::ALL.last().unwrap(), 0x8000, 0x7f, 0x80),
    ];
    let mut m = one_function(vec![Type::I32; 3], None, code);
    m.consts = vec![
        Const::Bits(0),
        Const::Bits(u64::MAX),
        Const::Str(String::new()),
        Const::Str("x".repeat(300)),
        Const::Str("\u{10ffff}\u{0}é".into()),
    ];
    let f = &mut m.functions[0];
    f.params = u16::MAX;
    f.lines = vec![
        LineEntry {
            pc: 0,
            line: 0,
            col: 0,
        },
        LineEntry {
            pc: 127,
            line: 128,
            col: 16383,
        },
        LineEntry {
            pc: 16384,
            line: 2_097_151,
            col: 2_097_152,
        },
        LineEntry {
            pc: u32::MAX,
            line: u32::MAX,
            col: u32::MAX,
        },
    ];
    f.regions = vec![
        Region {
            kind: RegionKind::If,
            header: u32::MAX,
            merge: 0,
            cont: 1,
        },
        Region {
            kind: RegionKind::Loop,
            header: 0,
            merge: u32::MAX,
            cont: 1 << 28,
        },
    ];
    f.locals = vec![LocalName {
        reg: u16::MAX,
        name: "a b".into(),
    }];
    m.files = (0..200).map(|i| format!("f{i}")).collect();
    f_mut(&mut m).file = 199;
    m.init = vec![0, 0, 0];
    m.entry = None;
    round_trip(&m);
    m.entry = Some(0);
    round_trip(&m);
}

fn f_mut(m: &mut Module) -> &mut Function {
    &mut m.functions[0]
}

#[test]
fn instructions_are_eight_little_endian_bytes() {
    let m = one_function(
        vec![],
        None,
        vec![Instr::new(Op::AddI32, 0x0102, 0x0304, 0x0506)],
    );
    let bytes = encode(&m);
    let op = (Op::AddI32 as u16).to_le_bytes();
    let want = [op[0], op[1], 0x02, 0x01, 0x04, 0x03, 0x06, 0x05];
    assert!(
        bytes.windows(8).any(|w| w == want),
        "the instruction's 8 bytes do not appear in the encoding"
    );
}

/// The byte offset of the first instruction of the only function of `one_function(…)` with
/// an empty name and no registers.
fn code_offset(m: &Module) -> usize {
    let bytes = encode(m);
    let op = (m.functions[0].code[0].op as u16).to_le_bytes();
    let a = m.functions[0].code[0].a.to_le_bytes();
    bytes
        .windows(4)
        .position(|w| w == [op[0], op[1], a[0], a[1]])
        .expect("instruction present")
}

// ---- rejection, one test per error code ----

fn code_of(bytes: &[u8]) -> &'static str {
    match decode(bytes) {
        Ok(_) => panic!("decode accepted a malformed input"),
        Err(e) => {
            let shown = e.to_string();
            assert!(
                shown.starts_with(&format!("cajeta: error[{}]: ", e.code)),
                "{shown}"
            );
            assert!(
                shown.ends_with(&format!("(at byte {})", e.offset)),
                "{shown}"
            );
            assert!(e.offset <= bytes.len(), "offset {} past the end", e.offset);
            e.code
        }
    }
}

#[test]
fn rejects_bad_magic() {
    assert_eq!(code_of(b""), "CJB-E-MAGIC");
    assert_eq!(code_of(b"CJB"), "CJB-E-MAGIC");
    let mut bytes = encode(&Module::default());
    bytes[3] = b'X';
    assert_eq!(code_of(&bytes), "CJB-E-MAGIC");
}

#[test]
fn rejects_other_versions() {
    let mut bytes = encode(&Module::default());
    bytes[4..8].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    assert_eq!(code_of(&bytes), "CJB-E-VERSION");
    assert_eq!(decode(&bytes).unwrap_err().offset, 4);
}

#[test]
fn rejects_every_truncation() {
    let bytes = encode(&sample_module());
    for len in 0..bytes.len() {
        let code = code_of(&bytes[..len]);
        assert!(
            matches!(code, "CJB-E-MAGIC" | "CJB-E-TRUNCATED" | "CJB-E-SECTION"),
            "truncation to {len} bytes gave {code}"
        );
    }
}

#[test]
fn rejects_trailing_bytes() {
    let mut bytes = encode(&sample_module());
    let len = bytes.len();
    bytes.push(0);
    let e = decode(&bytes).unwrap_err();
    assert_eq!((e.code, e.offset), ("CJB-E-TRAILING", len));
}

#[test]
fn rejects_sections_out_of_order_unknown_or_with_slack() {
    let bytes = encode(&Module::default());
    // Swap the tags of the first two sections.
    let mut swapped = bytes.clone();
    swapped[8] = 2;
    assert_eq!(code_of(&swapped), "CJB-E-SECTION");
    let mut unknown = bytes.clone();
    unknown[8] = 0x42;
    assert_eq!(code_of(&unknown), "CJB-E-SECTION");
    // Grow the files section by one byte (and the file with it): the count is read, one
    // byte is left over.
    let mut slack = bytes.clone();
    slack[9] = 2;
    slack.insert(14, 0);
    assert_eq!(code_of(&slack), "CJB-E-SECTION");
    // A missing final section.
    assert_eq!(code_of(&bytes[..bytes.len() - 6]), "CJB-E-SECTION");
}

#[test]
fn rejects_overlong_and_oversized_integers() {
    // The files section's count 0 written as 0x80 0x00 (two bytes).
    let mut bytes = encode(&Module::default());
    bytes[9] = 2;
    bytes[13] = 0x80;
    bytes.insert(14, 0x00);
    assert_eq!(code_of(&bytes), "CJB-E-INT");
    // A 33-bit count.
    let mut bytes = encode(&Module::default());
    bytes[9] = 5;
    bytes.splice(13..14, [0xff, 0xff, 0xff, 0xff, 0x1f]);
    assert_eq!(code_of(&bytes), "CJB-E-INT");
    // A parameter count above 65535.
    let mut m = one_function(vec![], None, vec![Instr::new(Op::RetVoid, 0, 0, 0)]);
    m.functions[0].params = 0x4000; // LEB128 0x80 0x80 0x01
    let mut bytes = encode(&m);
    let at = bytes
        .windows(3)
        .position(|w| w == [0x80, 0x80, 0x01])
        .unwrap();
    bytes[at + 2] = 0x04; // 0x10000
    assert_eq!(code_of(&bytes), "CJB-E-INT");
}

#[test]
fn rejects_unknown_opcodes() {
    let m = one_function(vec![], None, vec![Instr::new(Op::RetVoid, 0x5a5a, 0, 0)]);
    let at = code_offset(&m);
    let mut bytes = encode(&m);
    bytes[at..at + 2].copy_from_slice(&(Op::COUNT as u16).to_le_bytes());
    let e = decode(&bytes).unwrap_err();
    assert_eq!((e.code, e.offset), ("CJB-E-OPCODE", at));
    bytes[at..at + 2].copy_from_slice(&u16::MAX.to_le_bytes());
    assert_eq!(code_of(&bytes), "CJB-E-OPCODE");
}

#[test]
fn rejects_bad_utf8() {
    let m = Module {
        files: vec!["abcé".into()],
        ..Module::default()
    };
    let mut bytes = encode(&m);
    let at = bytes.windows(3).position(|w| w == b"abc").unwrap();
    bytes[at + 3] = 0xff;
    let e = decode(&bytes).unwrap_err();
    assert_eq!((e.code, e.offset), ("CJB-E-UTF8", at + 3));
}

#[test]
fn rejects_bad_types() {
    let m = Module {
        statics: vec![Static {
            name: "s".into(),
            ty: Type::Buffer(Scalar::F64),
        }],
        ..Module::default()
    };
    let bytes = encode(&m);
    let at = bytes
        .windows(2)
        .position(|w| w == [0x13, Scalar::F64 as u8])
        .unwrap();
    for (offset, value) in [(0, 0x0e), (0, 0x17), (0, 0xff), (1, 0x0e), (1, 0x10)] {
        let mut bad = bytes.clone();
        bad[at + offset] = value;
        assert_eq!(code_of(&bad), "CJB-E-TYPE", "byte {value:#x} at +{offset}");
    }
    // An array of arrays or of buffers is not a type.
    let mut bad = bytes.clone();
    bad[at] = 0x11;
    bad[at + 1] = 0x11;
    assert_eq!(code_of(&bad), "CJB-E-TYPE");
}

#[test]
fn rejects_bad_tags() {
    let m = Module {
        consts: vec![Const::Bits(0x1234)],
        ..Module::default()
    };
    let bytes = encode(&m);
    let at = bytes.windows(3).position(|w| w == [0, 0x34, 0x12]).unwrap();
    let mut bad = bytes.clone();
    bad[at] = 2;
    assert_eq!(code_of(&bad), "CJB-E-TAG");
    // The entry section's presence byte (0: no entry) comes just before the last section,
    // the empty fini list (tag, length, count: 6 bytes).
    let mut bad = bytes.clone();
    let presence = bad.len() - 7;
    assert_eq!(bad[presence], 0);
    bad[presence] = 2;
    assert_eq!(code_of(&bad), "CJB-E-TAG");
}

#[test]
fn rejects_out_of_range_indices() {
    // A static of a class type in a module without classes.
    let m = Module {
        statics: vec![Static {
            name: "s".into(),
            ty: Type::Object(0),
        }],
        ..Module::default()
    };
    assert_eq!(code_of(&encode(&m)), "CJB-E-INDEX");
    // A function whose file does not exist.
    let mut m = one_function(vec![], None, vec![Instr::new(Op::RetVoid, 0, 0, 0)]);
    m.files.clear();
    assert_eq!(code_of(&encode(&m)), "CJB-E-INDEX");
    // Entry and init past the function table.
    let mut m = one_function(vec![], None, vec![Instr::new(Op::RetVoid, 0, 0, 0)]);
    m.entry = Some(1);
    assert_eq!(code_of(&encode(&m)), "CJB-E-INDEX");
    m.entry = None;
    m.init = vec![0, 1];
    assert_eq!(code_of(&encode(&m)), "CJB-E-INDEX");
    m.init = vec![0];
    m.fini = vec![1];
    assert_eq!(code_of(&encode(&m)), "CJB-E-INDEX");
}

#[test]
fn huge_counts_fail_fast_without_allocating() {
    // Claim 2^32-1 files in a section of 5 bytes.
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.push(1);
    bytes.extend_from_slice(&5u32.to_le_bytes());
    bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert_eq!(code_of(&bytes), "CJB-E-TRUNCATED");
    // A section length far beyond the file.
    let mut bytes = encode(&Module::default());
    bytes[9..13].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(code_of(&bytes), "CJB-E-TRUNCATED");
}

#[test]
fn matches_the_worked_examples_in_docs_cjb_format() {
    let empty: Vec<u8> = [
        &[0x43, 0x4a, 0x42, 0x00, 0x04, 0x00, 0x00, 0x00][..],
        &[0x01, 0x01, 0, 0, 0, 0x00],
        &[0x02, 0x01, 0, 0, 0, 0x00],
        &[0x03, 0x01, 0, 0, 0, 0x00],
        &[0x04, 0x01, 0, 0, 0, 0x00],
        &[0x05, 0x01, 0, 0, 0, 0x00],
        &[0x06, 0x01, 0, 0, 0, 0x00],
        &[0x07, 0x01, 0, 0, 0, 0x00],
        &[0x08, 0x01, 0, 0, 0, 0x00],
    ]
    .concat();
    assert_eq!(encode(&Module::default()), empty);

    let m = one_function(
        vec![Type::I32],
        None,
        vec![
            Instr::with_bc(Op::LoadI, 0, 7),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ],
    );
    let payload: Vec<u8> = [
        &[0x01][..],
        &[0x09],
        b"Main.main",
        &[0x00, 0x00, 0x00],
        &[0x01, 0x06],
        &[0x02],
        &[0x03, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00],
        &[0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00],
        &[0x00],
        &[0x00, 0x00, 0x00, 0x00, 0x00],
    ]
    .concat();
    let mut section = vec![0x05];
    section.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    section.extend_from_slice(&payload);
    let bytes = encode(&m);
    assert!(
        bytes.windows(section.len()).any(|w| w == section),
        "functions section differs"
    );
}

#[test]
fn leb128_is_shortest_form() {
    // Line numbers exercise every LEB128 length; each documented example must appear.
    let mut m = one_function(vec![], None, vec![Instr::new(Op::RetVoid, 0, 0, 0)]);
    m.functions[0].lines = vec![LineEntry {
        pc: 0,
        line: 300,
        col: u32::MAX,
    }];
    let bytes = round_trip(&m);
    assert!(bytes
        .windows(7)
        .any(|w| w == [0x00, 0xac, 0x02, 0xff, 0xff, 0xff, 0xff]));
}
