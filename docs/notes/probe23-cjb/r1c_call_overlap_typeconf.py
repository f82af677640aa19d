import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mk import *
which = sys.argv[2]
g = fn('T.g', [I64, (0x11, I8), (0x12, 1), (0x11, I8)], [
    ins('loadi', 0, bc=1), ins('newarr', 1, 0), ins('newobj', 2, bc=1), ins('newarr', 3, 0), ins('retvoid')])
body = {
 'field': [ins('getfield', 5, 2, 2), ins('tostr.i64', 6, 5), ins('print', 6, 2)],
 'setfield': [ins('setfield', 2, 2, 5), ins('getfield', 5, 2, 2), ins('tostr.i64', 6, 5), ins('print', 6, 2)],
 'str': [ins('concat', 6, 3, 3), ins('print', 6, 2)],
 'print': [ins('print', 3, 2)],
 'strcount': [ins('str.count', 5, 3), ins('tostr.i64', 6, 5), ins('print', 6, 2)],
 'arrlen': [ins('arrlen', 5, 1), ins('tostr.i64', 6, 5), ins('print', 6, 2)],
 'eqstr': [ins('eq.str', 7, 3, 3), ins('tostr.bool', 6, 7), ins('print', 6, 2)],
}[which]
code = [ins('call', 0, 0, 0), ins('loadi', 4, bc=0), ins('loadk', 5, bc=0)] + body + [ins('retvoid')]
main = fn('T.main', [I64, (0x11, I64), (0x12, 0), STR, I64, I64, STR, BOOL], code)
classes = [['A', [('x', I64), ('y', I64), ('z', I64)]], ['B', [('x', I8)]]]
m = module([g, main], consts=[('bits', 0x4142434445464748)], classes=classes, entry=1)
save(sys.argv[1], m)
