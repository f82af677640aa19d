import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mk import *
# g writes junk into its r1..r3 then returns; h (same base) reads r1 (bool), r2 (u8), r3 (f32) uninitialised
g = fn('T.g', [I64]*4, [ins('loadk', 1, bc=0), ins('loadk', 2, bc=1), ins('loadk', 3, bc=1), ins('retvoid')])
h = fn('T.h', [I64, BOOL, U8, F32, STR, BOOL], [
 ins('tostr.bool', 4, 1), ins('print', 4, 2),
 ins('tostr.u8', 4, 2), ins('print', 4, 2),
 ins('tostr.f32', 4, 3), ins('print', 4, 2),
 ins('lnot', 5, 1), ins('tostr.bool', 4, 5), ins('print', 4, 2),
 ins('retvoid')])
main = fn('T.main', [I64], [ins('call', 0, 1, 0), ins('call', 0, 1, 1), ins('retvoid')])
m = module([g, h, main], consts=[('bits', 2), ('bits', 0xffffffffff00ff41)], entry=2)
save(sys.argv[1], m)
