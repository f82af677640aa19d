import cjb, struct
O = cjb.OPNUM
I8,U8,I16,U16,I32,U32,I64,U64,F32,F64,F16,BF16 = range(2,14)
BOOL,CHAR,STR = 0,1,0x10
def ins(m, a=0, b=0, c=0, bc=None):
    if bc is not None: b, c = bc & 0xffff, (bc >> 16) & 0xffff
    return [O[m], a, b, c]
def fn(name, regs, code, params=0, ret=None, kind=0, shared=None, lines=None, regions=None):
    return dict(name=name, kind=kind, params=params, ret=ret, regs=regs, code=code, file=0,
                lines=lines or [], regions=regions or [], locals=[], shared=shared or [], inlined=[])
def module(fns, consts=None, classes=None, statics=None, entry=None, init=None, fini=None):
    return dict(version=4, files=['t.cajeta'], consts=consts or [], classes=classes or [], statics=statics or [],
                functions=fns, init=init or [], fini=fini or [], entry=entry)
def save(path, m):
    open(path, 'wb').write(cjb.encode(m))
