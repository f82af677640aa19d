//! Disassembler tests: every opcode is listed with its mnemonic and symbolic operands, and
//! the listing is deterministic.

mod common;

use cajeta_bytecode::*;
use common::*;

#[test]
fn every_opcode_disassembles_with_its_mnemonic() {
    for &op in Op::ALL {
        let mut regs = Regs::new(&[Type::I32]);
        // retvoid is not valid in Demo.everything, but the disassembler takes any module.
        let instr = valid_instr(op, &mut regs, 0).unwrap_or(Instr::new(op, 0, 0, 0));
        let mut m = sample_module();
        m.functions[0].regs = regs.types;
        m.functions[0].code = vec![instr];
        m.functions[0].lines.clear();
        m.functions[0].regions.clear();
        let text = dis::disassemble_function(&m, 0);
        let line = text
            .lines()
            .find(|l| l.starts_with("  0000  "))
            .unwrap_or_else(|| panic!("no instruction line for `{}`:\n{text}", op.mnemonic()));
        let mnemonic = line["  0000  ".len()..].split_whitespace().next();
        assert_eq!(mnemonic, Some(op.mnemonic()), "{line}");
    }
}

#[test]
fn the_listing_is_deterministic_and_complete() {
    let m = sample_module();
    let text = disassemble(&m);
    assert_eq!(text, disassemble(&m.clone()));
    for f in &m.functions {
        assert!(
            text.contains(&format!(": {} [", f.name)),
            "no header for {}",
            f.name
        );
    }
    let instr_lines = text
        .lines()
        .filter(|l| l.starts_with("  ") && l[2..].starts_with(|c: char| c.is_ascii_digit()))
        .count();
    let total: usize = m.functions.iter().map(|f| f.code.len()).sum();
    assert_eq!(instr_lines, total);
}

/// The instruction line at `pc` of function `f` in the listing.
fn line_at(text: &str, f: &str, pc: u32) -> String {
    let start = text.find(&format!(": {f} [")).expect("function header");
    let prefix = format!("  {pc:04}  ");
    text[start..]
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no pc {pc} in {f}"))
        .to_string()
}

#[test]
fn operands_are_symbolic() {
    let p = Type::Object(C_POINT);
    let code = vec![
        Instr::with_bc(Op::LoadK, 0, K_F64),
        Instr::with_bc(Op::LoadK, 1, K_STR),
        Instr::with_bc(Op::LoadK, 2, K_I32),
        Instr::with_bc(Op::LoadI, 2, (-3i32) as u32),
        Instr::with_bc(Op::Jmp, 0, 12),
        Instr::new(Op::GetField, 0, 3, 0),
        Instr::new(Op::SetField, 3, 1, 3),
        Instr::new(Op::GetStatic, 2, 0, 0),
        Instr::with_bc(Op::NewObj, 3, C_POINT),
        Instr::new(Op::Math1F64, 0, 0, MathFn::Sqrt as u16),
        Instr::new(Op::Call, 0, 1, F_LOG as u16),
        Instr::new(Op::AddImmI32, 2, 2, (-1i16) as u16),
        Instr::new(Op::Ret, 1, 0, 0),
    ];
    let mut m = sample_module();
    let f = &mut m.functions[0];
    f.regs = vec![Type::F64, Type::Str, Type::I32, p];
    f.params = 0;
    f.code = code;
    f.lines = vec![
        LineEntry {
            pc: 0,
            line: 7,
            col: 3,
        },
        LineEntry {
            pc: 1,
            line: 7,
            col: 9,
        },
        LineEntry {
            pc: 2,
            line: 8,
            col: 1,
        },
    ];
    let text = disassemble(&m);
    let at = |pc| line_at(&text, "Demo.everything", pc);
    assert!(
        at(0).starts_with("  0000  loadk       r0, K[0] = 1.5"),
        "{}",
        at(0)
    );
    assert!(at(0).ends_with("; 7:3"), "{}", at(0));
    assert!(!at(1).contains(';'), "same line, no annotation: {}", at(1));
    assert!(at(2).ends_with("; 8:1"), "{}", at(2));
    assert_eq!(at(1), r#"  0001  loadk       r1, K[1] = "hé\n\"x\"\t\0""#);
    assert!(
        at(2).starts_with("  0002  loadk       r2, K[2] = -7"),
        "{}",
        at(2)
    );
    assert_eq!(at(3), "  0003  loadi       r2, -3");
    assert_eq!(at(4), "  0004  jmp         -> 0012");
    assert_eq!(at(5), "  0005  getfield    r0, r3, Demo.Point.x");
    assert_eq!(at(6), "  0006  setfield    r3, Demo.Point.next, r3");
    assert_eq!(at(7), "  0007  getstatic   r2, Demo.counter");
    assert_eq!(at(8), "  0008  newobj      r3, Demo.Point");
    assert_eq!(at(9), "  0009  math1.f64   r0, r0, sqrt");
    assert_eq!(at(10), "  0010  call        Demo.log(r1)");
    assert_eq!(at(11), "  0011  addi.i32    r2, r2, -1");
    assert_eq!(at(12), "  0012  ret         r1");
    let header = text
        .lines()
        .find(|l| l.contains(": Demo.everything ["))
        .unwrap();
    assert_eq!(
        header,
        r#"function 0: Demo.everything [host] () -> String  (lib/other "x".cajeta)"#
    );
    assert!(text.contains("  registers: r0 float64, r1 String, r2 int32, r3 Demo.Point\n"));
}

#[test]
fn calls_regions_and_tables() {
    let text = disassemble(&sample_module());
    // A value-returning call and one with arguments in a device function.
    assert!(
        text.lines()
            .any(|l| l.contains("call        r") && l.contains(", Demo.helper(r")),
        "{text}"
    );
    assert!(text
        .lines()
        .any(|l| l.contains("call ") && l.contains("Demo.add(r")));
    assert!(text.contains("  regions:\n    0  loop  header 0001  cont 0004  merge 0006\n    1  if    header 0002  merge 0004\n"));
    assert!(text.contains("K[3] = bits 0x000000003e800000"));
    assert!(
        text.contains("Demo.Holder { items: Demo.Point[], names: String[], later: Demo.Holder }")
    );
    assert!(text
        .contains("  init: [Demo.<clinit>]\n  entry: Demo.everything\n  fini: [Demo.<clinit>]\n"));
    assert!(text.contains("[kernel] (KernelBuffer<float32>, int32) -> void"));
    assert!(
        text.contains("  locals: r0 n, r1 ünïcödé, r1 \"\"\n"),
        "{text}"
    );
    assert!(
        text.contains("  0000  print       r0, stdout|newline\n"),
        "{text}"
    );
}

#[test]
fn out_of_range_indices_do_not_panic() {
    let mut m = sample_module();
    m.functions[0].code = vec![
        Instr::with_bc(Op::LoadK, 999, 999),
        Instr::new(Op::Call, 1, 2, 999),
        Instr::new(Op::GetField, 0, 999, 5),
        Instr::new(Op::GetStatic, 0, 999, 0),
        Instr::new(Op::Math1F32, 0, 0, 999),
        Instr::with_bc(Op::NewObj, 0, 999),
    ];
    m.functions[0].file = 99;
    m.functions[0].params = 999;
    m.entry = Some(999);
    m.init = vec![999];
    let text = disassemble(&m);
    for needle in [
        "K[999]?",
        "F[999]?",
        "field#5?",
        "static#999?",
        "math#999?",
        "class#999?",
        "file#99?",
    ] {
        assert!(text.contains(needle), "missing {needle}");
    }
    assert!(dis::disassemble_function(&m, 999).is_empty());
}

#[test]
fn a_call_without_arguments_shows_its_frame_start() {
    let mut m = sample_module();
    m.functions[0].code = vec![
        Instr::new(Op::Call, 0, 3, F_CLINIT as u16),
        Instr::new(Op::RetVoid, 0, 0, 0),
    ];
    let text = dis::disassemble_function(&m, 0);
    assert!(
        text.contains("call        Demo.<clinit>(), frame r3"),
        "{text}"
    );
}
