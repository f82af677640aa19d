"""Minimal .cjb (format v4) decoder/encoder for structure-aware fuzzing."""
import struct, re

OPS = []
def _load_ops():
    src = open('/work/main/bytecode/src/opcodes.rs').read()
    rows = re.findall(r'^\s+([A-Z][A-Za-z0-9]*)\s+"([^"]+)"\s+\[([^\]]*)\]\s+"(.*)";\s*$', src, re.M)
    for n, m, ops, sem in rows:
        parts = [p.strip() for p in re.split(r',\s*(?![^()]*\))', ops)]
        OPS.append((n, m, parts))
_load_ops()
OPNUM = {m: i for i, (n, m, p) in enumerate(OPS)}
OPNAME = {n: i for i, (n, m, p) in enumerate(OPS)}


class R:
    def __init__(self, b, pos=0, end=None):
        self.b = b; self.p = pos; self.end = len(b) if end is None else end
    def u8(self):
        v = self.b[self.p]; self.p += 1; return v
    def u16(self):
        v = struct.unpack_from('<H', self.b, self.p)[0]; self.p += 2; return v
    def u32(self):
        v = struct.unpack_from('<I', self.b, self.p)[0]; self.p += 4; return v
    def u64(self):
        v = struct.unpack_from('<Q', self.b, self.p)[0]; self.p += 8; return v
    def uleb(self):
        r = 0; s = 0
        while True:
            c = self.u8(); r |= (c & 0x7f) << s; s += 7
            if not c & 0x80: return r
    def s(self):
        n = self.uleb(); v = self.b[self.p:self.p + n]; self.p += n; return v.decode('utf-8')
    def ty(self):
        t = self.u8()
        if t == 0x11:
            e = self.u8()
            if e == 0x12: return (0x11, (0x12, self.uleb()))
            return (0x11, e)
        if t == 0x12: return (0x12, self.uleb())
        if t in (0x13, 0x15): return (t, self.u8())
        return t


def leb(v):
    out = bytearray()
    while True:
        c = v & 0x7f; v >>= 7
        if v: out.append(c | 0x80)
        else: out.append(c); return bytes(out)

def estr(s):
    b = s.encode('utf-8') if isinstance(s, str) else s
    return leb(len(b)) + b

def ety(t):
    if isinstance(t, int): return bytes([t])
    tag, p = t
    if tag == 0x11:
        if isinstance(p, tuple): return bytes([0x11, 0x12]) + leb(p[1])
        return bytes([0x11, p])
    if tag == 0x12: return bytes([0x12]) + leb(p)
    return bytes([tag, p])


def decode(b):
    r = R(b)
    assert b[:4] == b'CJB\0'
    r.p = 4
    ver = r.u32()
    m = {'version': ver}
    secs = {}
    for tag in range(1, 9):
        t = r.u8(); ln = r.u32(); start = r.p
        secs[tag] = (start, ln)
        r2 = R(b, start, start + ln)
        if tag == 1:
            m['files'] = [r2.s() for _ in range(r2.uleb())]
        elif tag == 2:
            ks = []
            for _ in range(r2.uleb()):
                k = r2.u8()
                ks.append(('bits', r2.u64()) if k == 0 else ('str', r2.s()))
            m['consts'] = ks
        elif tag == 3:
            cl = []
            for _ in range(r2.uleb()):
                name = r2.s(); fs = [(r2.s(), r2.ty()) for _ in range(r2.uleb())]
                cl.append([name, fs])
            m['classes'] = cl
        elif tag == 4:
            m['statics'] = [[r2.s(), r2.ty()] for _ in range(r2.uleb())]
        elif tag == 5:
            fns = []
            for _ in range(r2.uleb()):
                f = {}
                f['name'] = r2.s(); f['kind'] = r2.u8(); f['params'] = r2.uleb()
                f['ret'] = r2.ty() if r2.u8() else None
                f['regs'] = [r2.ty() for _ in range(r2.uleb())]
                f['code_off'] = None
                n = r2.uleb(); f['code_off'] = r2.p
                f['code'] = [[r2.u16(), r2.u16(), r2.u16(), r2.u16()] for _ in range(n)]
                f['file'] = r2.uleb()
                f['lines'] = [[r2.uleb(), r2.uleb(), r2.uleb()] for _ in range(r2.uleb())]
                f['regions'] = [[r2.u8(), r2.uleb(), r2.uleb(), r2.uleb()] for _ in range(r2.uleb())]
                f['locals'] = [[r2.uleb(), r2.s()] for _ in range(r2.uleb())]
                f['shared'] = [[r2.u8(), r2.uleb()] for _ in range(r2.uleb())]
                f['inlined'] = [[r2.uleb() for _ in range(5)] for _ in range(r2.uleb())]
                fns.append(f)
            m['functions'] = fns
        elif tag in (6, 8):
            m['init' if tag == 6 else 'fini'] = [r2.uleb() for _ in range(r2.uleb())]
        elif tag == 7:
            m['entry'] = r2.uleb() if r2.u8() else None
        r.p = start + ln
    m['_secs'] = secs
    return m


def encode(m):
    def sec(tag, payload):
        return bytes([tag]) + struct.pack('<I', len(payload)) + payload
    out = bytearray(b'CJB\0' + struct.pack('<I', m.get('version', 4)))
    out += sec(1, leb(len(m['files'])) + b''.join(estr(s) for s in m['files']))
    p = bytearray(leb(len(m['consts'])))
    for k, v in m['consts']:
        p += (b'\0' + struct.pack('<Q', v & (2**64 - 1))) if k == 'bits' else (b'\x01' + estr(v))
    out += sec(2, bytes(p))
    p = bytearray(leb(len(m['classes'])))
    for name, fs in m['classes']:
        p += estr(name) + leb(len(fs))
        for fn, ft in fs: p += estr(fn) + ety(ft)
    out += sec(3, bytes(p))
    p = bytearray(leb(len(m['statics'])))
    for name, t in m['statics']: p += estr(name) + ety(t)
    out += sec(4, bytes(p))
    p = bytearray(leb(len(m['functions'])))
    for f in m['functions']:
        p += estr(f['name']) + bytes([f['kind']]) + leb(f['params'])
        p += (b'\x01' + ety(f['ret'])) if f['ret'] is not None else b'\0'
        p += leb(len(f['regs'])) + b''.join(ety(t) for t in f['regs'])
        p += leb(len(f['code']))
        for ins in f['code']: p += struct.pack('<HHHH', *[x & 0xffff for x in ins])
        p += leb(f['file'])
        p += leb(len(f['lines'])) + b''.join(leb(a) + leb(b_) + leb(c) for a, b_, c in f['lines'])
        p += leb(len(f['regions'])) + b''.join(bytes([k]) + leb(h) + leb(mg) + leb(c) for k, h, mg, c in f['regions'])
        p += leb(len(f['locals'])) + b''.join(leb(r_) + estr(n) for r_, n in f['locals'])
        p += leb(len(f['shared'])) + b''.join(bytes([s_]) + leb(l) for s_, l in f['shared'])
        p += leb(len(f['inlined'])) + b''.join(b''.join(leb(x) for x in e) for e in f['inlined'])
    out += sec(5, bytes(p))
    out += sec(6, leb(len(m['init'])) + b''.join(leb(x) for x in m['init']))
    out += sec(7, (b'\x01' + leb(m['entry'])) if m['entry'] is not None else b'\0')
    out += sec(8, leb(len(m['fini'])) + b''.join(leb(x) for x in m['fini']))
    return bytes(out)

if __name__ == '__main__':
    import sys, glob
    for fn in glob.glob('/tmp/probe23a/seeds/*.cjb'):
        b = open(fn, 'rb').read()
        m = decode(b)
        assert encode(m) == b, fn
    print('roundtrip ok', len(OPS), 'ops')
