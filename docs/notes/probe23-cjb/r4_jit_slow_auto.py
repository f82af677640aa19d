import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mk import *
# default --jit auto: a hot loop (2000 iterations) around a single buf.new + buf.free in a function with 65535 declared registers
n = int(sys.argv[2])
code = [ins('loadi', 1, bc=0), ins('loadi', 4, bc=4), ins('loadi', 7, bc=2000),
        ins('lt.i64', 3, 1, 7), ins('jmpifnot', 3, bc=9),
        ins('buf.new', 6, 4), ins('buf.free', 6), ins('addi.i64', 1, 1, 1), ins('jmp', bc=3),
        ins('retvoid')]
regs = [STR, I64, (0x11, F32), BOOL, U64, F32, (0x13, F32), I64] + [I16] * (n - 8)
save(sys.argv[1], module([fn('T.main', regs, code)], entry=0))
