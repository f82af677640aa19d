import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mk import *
# callee g writes big int64 values into its r1..r4, which alias caller's r1..r4 (call b=0)
g = fn('T.g', [I64]*6, [ins('loadk', 1, bc=0), ins('loadk', 2, bc=1), ins('loadk',3,bc=1), ins('loadk',4,bc=1), ins('loadk',5,bc=1), ins('retvoid')])
# main regs: r0 I64 dummy, r1 BOOL, r2 U8, r3 I8, r4 CHAR, r5 F32, r6 STR, r7 BOOL
code = [
 ins('call', 0, 0, 0),
 ins('tostr.bool', 6, 1), ins('print', 6, 2),
 ins('tostr.u8', 6, 2), ins('print', 6, 2),
 ins('tostr.i8', 6, 3), ins('print', 6, 2),
 ins('tostr.char', 6, 4), ins('print', 6, 2),
 ins('tostr.f32', 6, 5), ins('print', 6, 2),
 ins('lnot', 7, 1), ins('tostr.bool', 6, 7), ins('print', 6, 2),
 ins('jmpif', 1, bc=17),
 ins('loadk', 6, bc=2), ins('print', 6, 2),
 ins('retvoid'),
]
main = fn('T.main', [I64, BOOL, U8, I8, CHAR, F32, STR, BOOL], code)
m = module([g, main], consts=[('bits', 2), ('bits', 0xffffffffff00ff41), ('str', 'notjumped')], entry=1)
save(sys.argv[1], m)
