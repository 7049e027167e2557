"""`python3`/`python` in the sandbox (CPython for WASI) against the host's CPython, on the
reference tree.

Each line runs through `sandbox.run` and through /bin/bash, where `python3` is the system's
CPython, on identical copies of the tree, and must give the same status and stdout. The
lines keep to code on which CPython 3.12 and the host's CPython agree: what checks write
(read a file, parse JSON, match a regex, count, compare, exit with a status); what differs
is pinned in tests/sandbox/test_cpython.py instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sandbox.reference import assert_same

BATTERY = [
    # -c, argv, exit status
    "python3 -c 'print(1 + 1)'",
    "python3 -c 'import sys; print(sys.argv)' a 'b c' -x",
    "python3 -c 'import sys; print(len(sys.argv), sys.argv[1:])'",
    "python3 -c 'import sys; sys.exit(3)'; echo status=$?",
    "python3 -c 'import sys; sys.exit(0)' && echo ok",
    "python3 -c 'raise SystemExit(4)'; echo $?",
    "python3 -c 'import sys; sys.exit(256 + 7)'; echo $?",
    "python3 -c 'exit(5)'; echo $?",
    "python3 -c 'quit()'; echo $?",
    "python3 -c 'assert 1 == 2'; echo $?",
    "python3 -c 'raise ValueError(\"boom\")'; echo $?",
    "python3 -c '1/0' 2>/dev/null || echo failed",
    "python3 -c 'x = (' 2>/dev/null; echo $?",
    "python3 -u -B -c 'print(\"flags\")'",
    "python3 -Ic 'print(\"clustered\")'",
    # scripts on stdin and in files
    "echo 'print(6 * 7)' | python3",
    "echo 'import sys; print(sys.argv)' | python3 - one two",
    "printf 'import sys\\nprint(sys.stdin.read() == \"\")\\n' | python3 -",
    "printf 'import sys\\nprint(sys.argv[1:])\\nsys.exit(9)\\n' > s.py; python3 s.py p q; echo $?",
    "printf 'print(__name__)\\n' > m.py; python3 m.py",
    "printf 'import helper\\nprint(helper.X)\\n' > sub/main.py; echo 'X = 42' > sub/helper.py;"
    " python3 sub/main.py",
    "printf 'def f(n):\\n    return n * 2\\nprint(f(21))\\n' > f.py && python3 f.py",
    # reading files, counting, comparing
    'python3 -c \'print(open("a.txt").read().count("alpha"))\'',
    "python3 -c 'print(len(open(\"b.txt\").readlines()))'",
    "python3 -c 'print(sum(int(l) for l in open(\"nums.txt\")))'",
    "python3 -c 'print(max(int(l) for l in open(\"nums.txt\")))'",
    "python3 -c 'print(sorted(set(open(\"words.txt\").read().split())))'",
    'python3 -c \'print([l.split(",")[1] for l in open("csv.txt").read().splitlines()[1:]])\'',
    'python3 -c \'import sys; sys.exit(0 if "Hobby" in open("notes.md").read() else 1)\'',
    'python3 -c \'import sys; sys.exit(0 if "Enterprise" in open("notes.md").read() else 1)\';'
    " echo $?",
    'python3 -c \'print(open("empty.txt").read() == "")\'',
    "cd sub && python3 -c 'print(open(\"c.txt\").read().split())'",
    "cd sub && python3 -c 'print(open(\"../b.txt\").read().strip())'",
    "python3 -c 'import os; print(sorted(os.listdir(\"sub\")))'",
    "python3 -c 'import os; print(os.stat(\"b.txt\")[6])'",
    "python3 -c 'open(\"nope.txt\")' 2>/dev/null; echo $?",
    # json
    "echo '{\"a\": [1, 2, 3]}' > j.json;"
    ' python3 -c \'import json; print(json.load(open("j.json"))["a"][1])\'',
    "echo '[3, 1, 2]' | python3 -c 'import json, sys; print(sorted(json.load(sys.stdin)))'",
    "python3 -c 'import json; print(json.dumps([1, \"x\", None, True, 2.5]))'",
    'python3 -c \'import json; print(json.loads("{\\"k\\": {\\"n\\": 7}}")["k"]["n"])\'',
    "echo 'not json' | python3 -c 'import json, sys; json.load(sys.stdin)' 2>/dev/null; echo $?",
    'python3 -c \'import json; d = json.loads("{\\"b\\": 1, \\"a\\": 2}");'
    " print(sorted(d.items()))'",
    # re
    'python3 -c \'import re; print(re.search("[0-9]+", "a1b22c333").group(0))\'',
    'python3 -c \'import re; print(re.sub("a+", "-", "baaad aa"))\'',
    'python3 -c \'import re; m = re.match(r"(\\w+),(\\d+)", "ann,31"); print(m.group(2))\'',
    'python3 -c \'import re; print(bool(re.search("^Pro", open("notes.md").read())))\'',
    'python3 -c \'import re; print([l for l in open("a.txt") if re.match("al", l)])\'',
    # writing files in the workdir, then the box commands read them
    'python3 -c \'open("out.txt", "w").write("one\\ntwo\\n")\' && wc -l < out.txt',
    'python3 -c \'f = open("b.txt", "a"); f.write("four\\n"); f.close()\' && tail -1 b.txt',
    'python3 -c \'import os; os.mkdir("made"); open("made/x", "w").write("x")\' && ls made',
    "python3 -c 'import os; os.remove(\"a.txt\")' && test ! -e a.txt && echo gone",
    'python3 -c \'import os; os.rename("b.txt", "renamed.txt")\' && cat renamed.txt',
    # pipelines and substitutions mixing box commands and python
    "cat nums.txt | python3 -c 'import sys; print(sum(int(x) for x in sys.stdin))'",
    "python3 -c 'print(\"x\\ny\\nx\")' | sort | uniq -c",
    "test $(python3 -c 'print(3 * 4)') -eq 12 && echo twelve",
    "N=$(python3 -c 'print(len(open(\"a.txt\").readlines()))'); echo lines=$N",
    "grep -c a a.txt | python3 -c 'import sys; print(int(sys.stdin.read()) > 2)'",
    "python3 -c 'import sys; print(sys.stdin.read().upper(), end=\"\")' < b.txt",
    "python3 -c 'print(\"err\")' 2>&1 >/dev/null | wc -c",
    "python3 -c 'import sys; print(\"to stderr\", file=sys.stderr)' 2>&1",
    'python3 -c \'import sys; sys.stderr.write("e\\n"); print("o")\' 2>/dev/null',
    "python3 -c 'import sys; sys.exit(1)' || echo 'python failed'",
    "! python3 -c 'import sys; sys.exit(2)' && echo negated",
    # everyday language
    'python3 -c \'print("{:>5}|{:<3}|".format("ab", 1))\'',
    "python3 -c 'x = 7; print(f\"x={x} sq={x * x}\")'",
    'python3 -c \'print(sorted(["b", "A", "c"], key=str.lower))\'',
    'python3 -c \'print(" ".join(reversed("a b c".split())))\'',
    "python3 -c 'print(2 ** 100)'",
    "python3 -c 'print(divmod(17, 5), 17 // 5, -17 % 5)'",
    "python3 -c 'print([i * i for i in range(5) if i % 2])'",
    "python3 -c 'from collections import OrderedDict; print(list(OrderedDict(a=1, b=2)))'",
    "python3 -c 'import hashlib, binascii;"
    ' print(binascii.hexlify(hashlib.sha256(b"abc").digest()).decode())\'',
    "python3 -c 'import math; print(math.sqrt(16), math.floor(2.7))'",
    'python3 -c \'print("a,b,,c".split(","), "  pad ".strip())\'',
    'python3 -c \'try:\n    int("x")\nexcept ValueError:\n    print("caught")\'',
    "python3 -c 'class P:\n    def __init__(self, n):\n        self.n = n\nprint(P(3).n)'",
]


@pytest.mark.parametrize("cmdline", BATTERY)
def test_python_battery_matches_cpython(cmdline: str, tmp_path: Path) -> None:
    assert_same(cmdline, tmp_path)


def test_python_battery_is_big_enough() -> None:
    assert len(BATTERY) >= 40
    assert len(set(BATTERY)) == len(BATTERY)
