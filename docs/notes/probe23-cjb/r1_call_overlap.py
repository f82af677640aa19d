# Bug 1: V-CALL accepts a call whose callee window (b .. b+callee.regs) overlaps caller registers
# that are live after the call. Source: s06_statics.cajeta; mutation: Stat.main's `call Stat.bump` b: 3 -> 0.
from common import *
m = build('/tmp/probe23a/repro/s06_statics.cajeta', '/tmp/probe23a/repro/s06_statics.cjb')
f = fnamed(m, '.main')
bump = [i for i, g in enumerate(m['functions']) if g['name'].endswith('.bump')][0]
pc = [i for i, ins in enumerate(f['code']) if ins[0] == cjb.OPNUM['call'] and ins[3] == bump][0]
print('mutating', f['name'], 'pc', pc, 'call b', f['code'][pc][2], '-> 0')
f['code'][pc][2] = 0
save(m, '/tmp/probe23a/repro/r1_call_overlap.cjb')
