import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mk import *
nregs = int(sys.argv[2]); mode = sys.argv[3]
# f(): calls itself at b = nregs-1 (top), infinite recursion
if mode == 'top':
    f = fn('T.f', [I64]*nregs, [ins('call', 0, nregs - 1, 0), ins('retvoid')])
elif mode == 'zero':
    f = fn('T.f', [I64]*nregs, [ins('call', 0, 0, 0), ins('retvoid')])
elif mode == 'beyond':  # b = nregs (allowed for 0-param callee)
    f = fn('T.f', [I64]*nregs, [ins('call', 0, nregs, 0), ins('retvoid')])
main = fn('T.main', [I64], [ins('call', 0, 0, 0), ins('retvoid')])
save(sys.argv[1], module([f, main], entry=1))
