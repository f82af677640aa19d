import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mk import *
n = int(sys.argv[2])
code = [ins('loadi', 0, bc=0), ins('loadi', 1, bc=100), ins('lt.i64', 2, 0, 1), ins('jmpifnot', 2, bc=5 + n + 1)]
code += [ins('addi.i64', 3 + (i % 200), 3 + ((i * 7) % 200), 1) for i in range(n)]
code += [ins('addi.i64', 0, 0, 1), ins('jmp', bc=2), ins('retvoid')]
code[3] = ins('jmpifnot', 2, bc=len(code) - 1)
save(sys.argv[1], module([fn('T.main', [I64, I64, BOOL] + [I64]*200, code)], entry=0))
