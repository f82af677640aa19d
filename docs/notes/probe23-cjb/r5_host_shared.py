import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cjb
# Source-derived: s01_loop.cjb, add a shared declaration (uint16[0xffffffff] / bad elem) to the host function Loop.main
src, out, elem, ln = sys.argv[1], sys.argv[2], int(sys.argv[3], 0), int(sys.argv[4], 0)
m = cjb.decode(open(src, 'rb').read())
f = [f for f in m['functions'] if f['name'].endswith('.main')][0]
f['shared'] = [[elem, ln]]
open(out, 'wb').write(cjb.encode(m))
