# Bug 2: no definite-assignment check: a register read before any write in its frame sees stale
# cells of earlier frames (interpreter) but other values under the JIT.
# Source: s02_calls.cajeta; mutation: Calls.fib pc 0 `loadi r1, 2` -> `nop`.
from common import *
m = build('/tmp/probe23a/repro/s02_calls.cajeta', '/tmp/probe23a/repro/s02_calls.cjb')
f = fnamed(m, '.fib')
print('mutating', f['name'], 'pc 0', cjb.OPS[f['code'][0][0]][1], '-> nop')
f['code'][0] = [0, 0, 0, 0]
save(m, '/tmp/probe23a/repro/r2_uninit.cjb')
