import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mk import *
KB = (0x13, U32)
# device d(): writes 99 into its r3 (which overlaps kernel's r3 when called at b=0)
d = fn('T.d', [U32]*4, [ins('loadi', 3, bc=99), ins('retvoid')], kind=2)
# kernel k(buf): r3 = 7; call d at b=0; buf[0] = r3
k = fn('T.k', [KB, I64, U32, U32], [ins('loadi', 3, bc=7), ins('call', 0, 0, 0), ins('loadi', 1, bc=0), ins('st.u32', 0, 1, 3), ins('retvoid')], params=1, kind=1)
regs = [0x14] + [I64]*7 + [KB, U64, (0x11, U32), I64, U32, STR]
code = [ins('stream.current', 0)] + [ins('loadi', r, bc=1) for r in range(1, 7)] + [ins('loadi', 7, bc=0),
    ins('loadi', 9, bc=1), ins('buf.new', 8, 9), ins('launch', 0, 1), ins('stream.sync', 0),
    ins('loadi', 11, bc=1), ins('newarr', 10, 11), ins('buf.download', 8, 10), ins('loadi', 11, bc=0), ins('aget.u32', 12, 10, 11),
    ins('tostr.u32', 13, 12), ins('print', 13, 2), ins('retvoid')]
save(sys.argv[1], module([d, k, fn('T.main', regs, code)], entry=2))
