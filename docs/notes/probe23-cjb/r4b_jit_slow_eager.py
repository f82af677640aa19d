import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mk import *
n = int(sys.argv[2]); k = int(sys.argv[3]); which = sys.argv[4]
pre = {'newarr': [ins('loadi', 1, bc=4)], 'aget': [ins('loadi', 1, bc=4), ins('newarr', 2, 1), ins('loadi', 1, bc=0)], 'concat': [ins('loadk', 0, bc=0)],
       'drop': [ins('loadi', 1, bc=4), ins('newarr', 2, 1), ins('loadi', 3, bc=1)], 'bufnew': [ins('loadi', 4, bc=4)], 'loop': [ins('loadi', 1, bc=0)]}[which]
body = {'newarr': [ins('newarr', 2, 1)], 'aget': [ins('aget.f32', 5, 2, 1)], 'concat': [ins('concat', 0, 0, 0)], 'drop': [ins('drop', 2, 3)],
        'bufnew': [ins('buf.new', 6, 4)], 'loop': [ins('addi.i64', 1, 1, 1)]}[which]
code = pre + body * k + [ins('retvoid')]
regs = [STR, I64, (0x11, F32), BOOL, U64, F32, (0x13, F32)] + [I16] * (n - 7)
save(sys.argv[1], module([fn('T.main', regs, code)], consts=[('str', 'a')], entry=0))
