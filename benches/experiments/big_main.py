"""Writes BigN.cajeta: a main of N statements (two thirds `s = s * 3 + i + k;`, one third
`if (s > k) { s = s - i; }`) in a loop of 10 iterations, to measure the JIT's compile time
on large functions: `python3 big_main.py N && cajeta run --jit eager --jit-verbose BigN.cajeta`.
"""
import sys

n = int(sys.argv[1])
lines = [f"public class Big{n} {{", "  public static void main() {", "    int64 s = 0;",
         "    for (int64 i = 0; i < 10; i++) {"]
for k in range(n):
    lines.append(f"      s = s * 3 + i + {k};" if k % 3 else f"      if (s > {k}) {{ s = s - i; }}")
lines += ["    }", "    System.stdout.println(s);", "  }", "}"]
open(f"Big{n}.cajeta", "w").write("\n".join(lines) + "\n")
