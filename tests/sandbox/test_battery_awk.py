"""awk in box.wasm against the system awk (mawk here), line by line.

Each battery line runs through `sandbox.run` and through /bin/bash (LC_ALL=C, the system
awk) on identical copies of the reference tree plus the awk inputs below, and must give the
same status and the same stdout, byte for byte. Lines keep to what POSIX and mawk agree on:
no regex intervals (mawk 1.3.4 lacks them), no hex strings, integer results below 2^31 (mawk
prints larger ones with %.6g), `for (k in a)` sorted afterwards (the order is unspecified).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from groundskeeper import sandbox
from tests.sandbox.reference import make_tree

AWK_FILES: dict[str, str] = {
    "awk/scores.txt": "ann 31 oslo 7.5\nbob 25 rome 3\ncid 40 oslo 12.25\ndee 25 lima -1\n",
    "awk/para.txt": "\n\nname: ann\nrole: dev\n\n\n\nname: bob\nrole: ops\nteam: core\n\n",
    "awk/colon.txt": "root:x:0:0:root:/root:/bin/sh\nbin:x:1:1::/bin:\n:empty:first\n",
    "awk/spaced.txt": "  lead  and   trail  \n\t tab\tsep \n\n x\n",
    "awk/mixed.txt": "10 9\n10 10.0\nabc abd\n2 10\n 3 +3\n1e2 100\n-0 0\n.5 0.50\nx 0\n",
    "awk/prog.awk": '# a program file\nBEGIN { FS = "," }\nNR > 1 { n[$3]++ }\n'
    'END { print n["oslo"], n["rome"], length(n) }\n',
    "awk/sum.awk": '{ total += $2 }\nEND { printf "%d rows, total %d\\n", NR, total }\n',
    "awk/dup.txt": "b\na\nb\nc\na\nb\n",
    "awk/rx.txt": "a/b\n]x\nfoo.bar\nTAB\there\n",
}

BATTERY = [
    # fields, NR, NF, FS, OFS
    "awk '{print $1}' awk/scores.txt",
    "awk '{print $NF}' awk/scores.txt",
    "awk '{print $(NF-1), NF}' awk/scores.txt",
    "awk '{print NR, $0}' a.txt",
    "awk 'END{print NR}' a.txt b.txt",
    "awk '{print FNR, NR, FILENAME}' a.txt b.txt",
    "awk -F, '{print $2}' csv.txt",
    "awk -F, 'NR>1{print $1 \"-\" $3}' csv.txt",
    'awk -F: \'{print NF": "$1"|"$6}\' awk/colon.txt',
    "awk -F'[:/]+' '{print $1, $NF, NF}' awk/colon.txt",
    "awk -F '\\t' '{print NF, $2}' text/tabs.txt",
    'awk \'BEGIN{FS=","; OFS=";"} {$1=$1; print}\' csv.txt',
    "awk -v OFS=- '{print $1, $2}' awk/scores.txt",
    "awk '{print NF}' awk/spaced.txt",
    'awk \'{print "[" $1 "][" $2 "]"}\' awk/spaced.txt',
    "awk -F' ' '{print $2}' awk/spaced.txt",
    "awk -F'a' '{print NF, $1}' a.txt",
    "awk -F. '{print $1}' text/mixed.txt",
    "awk -F'|' '{print $2}' text/dups.txt",
    "awk 'BEGIN{FS=\"\"} {print NF}' b.txt",
    "awk '{FS=\",\"} {print $1}' csv.txt",
    # field and record assignment
    "awk '{$2=\"X\"; print; print NF}' awk/scores.txt",
    "awk '{$6=\"end\"; print; print NF}' awk/scores.txt",
    "awk '{NF=2; print}' awk/scores.txt",
    "awk '{$0=\"p q r\"; print $2, NF}' b.txt",
    "awk '{$3=\"\"; print}' awk/scores.txt",
    "awk 'BEGIN{OFS=\":\"} {NF=NF; print}' awk/scores.txt",
    "awk '{sub(/o/, \"0\", $1); print $0}' b.txt",
    # patterns and ranges
    "awk '/oslo/' awk/scores.txt",
    "awk '!/oslo/' awk/scores.txt",
    "awk '$2 > 30' awk/scores.txt",
    "awk '$2 == 25 {print $1}' awk/scores.txt",
    "awk 'NR==2, NR==3' a.txt",
    "awk '/beta/,/gamma/' a.txt",
    "awk '/alpha/,/alpha/{print NR}' a.txt",
    "awk 'NR%2' a.txt",
    "awk '$1 ~ /^b/' words.txt",
    "awk '$0 !~ /p/' words.txt",
    "awk 'length > 5' words.txt",
    'awk \'BEGIN{print "start"} END{print "end"}\' a.txt',
    "awk 'END{print $0}' a.txt",
    "awk '/a/ && /e/' a.txt words.txt",
    "awk '/pie/ || NR==1' words.txt",
    "awk 'NR==1; NR==1{print \"again\"}' b.txt",
    # strnum comparisons
    "awk '{print ($1 < $2), ($1 == $2)}' awk/mixed.txt",
    "awk '{print ($1 < 5), ($1 == \"10\")}' awk/mixed.txt",
    'awk \'BEGIN{print ("10" < "9"), (10 < 9), ("a" < "b"), (2 < "10")}\'',
    "awk '{x = $1; print (x == 10)}' awk/mixed.txt",
    "awk 'BEGIN{print (x == 0), (x == \"\"), length(x)}'",
    "awk '$1 == 10' awk/mixed.txt",
    "awk '{print $1 + 0, $2 * 1}' awk/mixed.txt",
    "awk '{print +$1}' text/mixed.txt",
    # arithmetic and assignment operators
    "awk 'BEGIN{print 7 % 3, -7 % 3, 2 ^ 10, 2 ^ 3 ^ 2, -2 ^ 2, 1 / 4}'",
    "awk 'BEGIN{x = 5; x += 2; x -= 1; x *= 3; x /= 2; x %= 5; x ^= 2; print x}'",
    "awk 'BEGIN{i = 5; print i++, i, ++i, i--, --i}'",
    "awk 'BEGIN{print 1e3, 1.5e-3, 100/3, 0.1 + 0.2, 3.0, -3}'",
    "awk 'BEGIN{print int(3.9), int(-3.9), int(\"42abc\"), sqrt(16), exp(0), log(1)}'",
    "awk 'BEGIN{printf \"%.4f %.4f %.4f\\n\", sin(0), cos(0), atan2(0, -1)}'",
    "awk 'BEGIN{a = b = 4; print a, b}'",
    'awk \'BEGIN{print 1 2, 1 " " 2, 3 - 1 "x"}\'',
    "awk 'BEGIN{x = \"3x\"; print x + 1, x * 2}'",
    'awk \'BEGIN{print 1 < 2 ? "yes" : "no", (0 ? "a" : "b")}\'',
    'awk \'BEGIN{print !0, !1, !"", !"a", - -3}\'',
    "awk '{sum += $2} END{print sum, sum / NR}' awk/scores.txt",
    "awk '{s += $4} END{printf \"%.2f\\n\", s}' awk/scores.txt",
    "awk 'NR==1{max=$2} $2>max{max=$2} END{print max}' awk/scores.txt",
    # arrays
    "awk '{n[$3]++} END{for (c in n) print c, n[c]}' awk/scores.txt | sort",
    "awk '!seen[$0]++' awk/dup.txt",
    "awk '{a[NR]=$0} END{for (i=NR; i>0; i--) print a[i]}' a.txt",
    'awk \'BEGIN{a["x"]=1; delete a["x"]; print length(a), ("x" in a)}\'',
    "awk 'BEGIN{a[1]; a[2]; delete a; print length(a)}'",
    "awk 'BEGIN{a[1,\"b\"]=5; for (k in a) {split(k, p, SUBSEP); print p[1], p[2], a[k]}}'",
    "awk 'BEGIN{a[1,2]=1; print ((1,2) in a), ((2,1) in a)}'",
    'awk \'BEGIN{if (!("k" in a)) print "absent"; print length(a)}\'',
    'awk \'BEGIN{x["a"]; if (x["b"] == "") print length(x)}\'',
    'awk \'{c[$1] = c[$1] " " NR} END{for (k in c) print k ":" c[k]}\' awk/dup.txt | sort',
    "awk -F, 'NR>1{sum[$3]+=$2; n[$3]++} END{for (c in sum) print c, sum[c]/n[c]}' csv.txt | sort",
    "awk 'NR==FNR{keep[$1]; next} $1 in keep' b.txt words.txt a.txt",
    'awk \'BEGIN{n = split("c b a", w); for (i = n; i >= 1; i--) printf "%s ", w[i]; print ""}\'',
    # control flow
    "awk 'BEGIN{for (i = 1; i <= 5; i++) { if (i == 2) continue; if (i == 4) break; print i }}'",
    "awk 'BEGIN{while (1) { if (++n > 3) break }; print n}'",
    "awk 'BEGIN{do { k++ } while (k < 0); print k}'",
    "awk 'BEGIN{i = 0; while (i < 3) i++; print i}'",
    "awk 'BEGIN{for (;;) { if (j++ == 4) break } print j}'",
    'awk \'{if ($2 > 30) print $1, "old"; else if ($2 > 25) print $1, "mid"; else '
    'print $1, "young"}\' awk/scores.txt',
    "awk 'NR==2{next} {print}' a.txt",
    "awk '{print; if (NR == 2) exit}' a.txt",
    "awk 'BEGIN{exit 3} END{print \"end ran\"}'; echo $?",
    "awk '{exit 4} END{exit}' a.txt; echo $?",
    "awk 'END{exit NR}' a.txt; echo $?",
    "awk 'FNR==2{nextfile} {print FILENAME, $0}' a.txt b.txt",
    'awk \'BEGIN {\n  x = 1\n  if (x)\n    print "multi"\n  else\n    print "line"\n}\'',
    'awk \'BEGIN { if (1) { print "a" } else { print "b" } }\'',
    "awk '{ for (i = NF; i > 0; i--) printf \"%s%s\", $i, (i > 1 ? OFS : ORS) }' awk/scores.txt",
    # printf
    "awk 'BEGIN{printf \"%d %i %5d|%-5d|%05d\\n\", 42.9, -3, 7, 7, 7}'",
    'awk \'BEGIN{printf "%s|%10s|%-10s|%.2s\\n", "abc", "abc", "abc", "abc"}\'',
    "awk 'BEGIN{printf \"%f %.2f %10.3f %e %.3E\\n\", 3.14159, 3.14159, 3.14159, 1234.5, 0.00012}'",
    "awk 'BEGIN{printf \"%g %g %g %G\\n\", 100000, 1000000, 0.0001, 1e-5}'",
    'awk \'BEGIN{printf "%x %X %o %c%c%c %%\\n", 255, 255, 8, 72, "i!", 33}\'',
    'awk \'BEGIN{printf "%*d|%-*s|%.*f\\n", 5, 42, 4, "ab", 2, 3.14159}\'',
    "awk 'BEGIN{printf \"no newline\"}'; echo",
    'awk \'BEGIN{printf "[%.*f][%*d][%-*s]\\n", -2, 3.14159, -4, 7, 3, "ab"}\'',
    "awk '{printf \"%-6s%4d\\n\", $1, $2}' awk/scores.txt",
    'awk \'BEGIN{s = sprintf("%03d-%s", 7, "x"); print s, length(s)}\'',
    'awk \'BEGIN{printf("%s and %s\\n", "paren", "list")}\'',
    'awk \'BEGIN{OFMT="%.2f"; x = 3.14159; print x, x ""; CONVFMT="%.3f"; y = x ""; print y}\'',
    # string functions
    "awk '{print length($0), length}' a.txt",
    'awk \'BEGIN{print substr("hello", 2, 3), substr("hello", 3), substr("hello", '
    '9), substr("hello", 5, 9)}\'',
    'awk \'BEGIN{print index("banana", "an"), index("banana", "x"), index("", "")}\'',
    'awk \'BEGIN{n = split("a:b::c", p, ":"); print n, p[3] == "", p[4]}\'',
    'awk \'BEGIN{n = split("a1b22c333", p, /[0-9]+/); print n, p[1], p[2], p[3], p[4] "|"}\'',
    "awk 'BEGIN{n = split(\"  x  y  \", p); print n, p[1], p[2]}'",
    "awk 'BEGIN{print split(\"\", p), length(p)}'",
    "awk '{n = gsub(/a/, \"A\"); print n, $0}' a.txt",
    "awk '{sub(/a/, \"[&]\"); print}' a.txt",
    "awk '{gsub(/[aeiou]/, \"<&&>\"); print}' b.txt",
    'awk \'BEGIN{s = "aaa"; print gsub(/a/, "\\\\&", s), s}\'',
    'awk \'BEGIN{s = "abc"; gsub(/x*/, "-", s); print s; t = "abc"; gsub(/b*/, "-", t); print t}\'',
    'awk \'BEGIN{s = "hello"; gsub(/l+/, "L", s); print s; sub(/^/, ">", s); print '
    's; sub(/$/, "<", s); print s}\'',
    'awk \'BEGIN{print match("foobar", /o+/), RSTART, RLENGTH; print match("abc", '
    "/z/), RSTART, RLENGTH}'",
    "awk 'match($0, /[0-9]+/) {print substr($0, RSTART, RLENGTH)}' awk/colon.txt",
    'awk \'BEGIN{print toupper("mixed Case 1"), tolower("MIXED Case 1")}\'',
    "awk '{print toupper(substr($1, 1, 1)) substr($1, 2)}' words.txt",
    'awk \'BEGIN{re = "^a.c$"; print ("abc" ~ re), ("abd" ~ re), ("a.c" ~ "a\\\\.c")}\'',
    "awk '$1 ~ \"^[ab]\"' awk/scores.txt",
    "awk '/^[[:upper:]]/' words.txt",
    "awk '/(ap|ch)p?[a-z]+ /' words.txt",
    "awk '/\\$[0-9]+/' notes.md",
    "awk '/a\\/b|^#/' notes.md",
    'awk \'BEGIN{s = "a.b.c"; gsub(".", "-", s); print s; t = "a.b.c"; gsub(/\\./, '
    '"-", t); print t}\'',
    'awk \'/[/]/; /[]a]/{print "]a:", $0}; /^[^]a]/{print "not ]a:", $0}\' awk/rx.txt',
    "awk '/[\\t]/; /[[:alpha:]]+\\.[[:alpha:]]+/' awk/rx.txt",
    "awk 'BEGIN{FS=\"\\\\.\"} {print NF, $1}' awk/rx.txt",
    'awk \'//{n++} END{s = "abc"; gsub(//, "-", s); print n, s}\' awk/rx.txt',
    # getline, -v, -f, operands, stdin
    "awk '{getline; print}' a.txt",
    "awk '{getline line; print $0 \" / \" line}' b.txt",
    "awk 'BEGIN{while ((getline line) > 0) n++; print n}' < a.txt",
    "awk 'BEGIN{getline; print \"first:\", $0, NR}' b.txt",
    "awk 'END{print getline, $0}' b.txt",
    "awk -v n=2 -v s='a b' 'BEGIN{print n * 3, s}'",
    "awk -v 'x=tab\\there' 'BEGIN{print x}'",
    "awk '{print v, $0}' v=1 b.txt v=2 b.txt",
    "awk -f awk/sum.awk awk/scores.txt",
    "cat b.txt | awk '{print NR \":\" $0}'",
    "cat b.txt | awk '{print FILENAME \"|\" $0}' a.txt - ",
    "printf 'x y\\n' | awk '{print $2}' -",
    'awk \'BEGIN{RS=""} {print NR ": " $1 " " $NF " " NF}\' awk/para.txt',
    'awk \'BEGIN{RS=""; FS="\\n"} {print $2}\' awk/para.txt',
    "awk 'BEGIN{RS=\";\"} {print NR, $0}' text/nonl.txt",
    "awk 'BEGIN{ORS=\"|\"} {print}' b.txt; echo",
    "awk 'BEGIN{print ARGC, ARGV[1], ARGV[2]}' x y",
    "awk 'BEGIN{ARGV[1] = \"b.txt\"} {print}' a.txt",
    "awk '{print}' awk/empty-missing.txt; echo status $?",
    # user-defined functions
    "awk 'function max(a, b) { return a > b ? a : b } {m = max(m, $2)} END{print m}' "
    "awk/scores.txt",
    "awk 'function fact(n) { return n <= 1 ? 1 : n * fact(n - 1) } BEGIN{print fact(10)}'",
    "awk 'function fill(arr, n,  i) { for (i = 1; i <= n; i++) arr[i] = i * i } "
    "BEGIN{fill(sq, 4); print sq[3], length(sq)}'",
    "awk 'function f(x) { x = 5 } BEGIN{y = 1; f(y); print y}'",
    'awk \'function g(a) { a["k"] = 1 } BEGIN{g(arr); print ("k" in arr)}\'',
    'awk \'function noret() { } BEGIN{x = noret(); print "[" x "]"}\'',
    "awk 'function f(a) { g(a) } function g(b) { b[1] = 5 } BEGIN { f(x); print x[1] }'",
    'awk \'function f() { exit 3 } BEGIN { f(); print "no" } END { print "end" }\'; echo $?',
    "echo 72 105 | awk '{printf \"%c%c\\n\", $1, $2}'",
    "awk 'function f() { exit 4 } NR == 2 && f() { print \"no\" } { print } END { print NR }' "
    "a.txt; echo $?",
    # pipelines with other commands
    "awk -F, 'NR>1{print $3}' csv.txt | sort | uniq -c",
    "seq 1 10 | awk '{s += $1} END{print s}'",
    'seq 1 20 | awk \'NR % 5 == 0 {printf "%s%s", sep, $0; sep = ","} END{print ""}\'',
    "grep -c a a.txt | awk '{print $1 * 2}'",
    "awk 'length($0) > 60000 {print NR, length($0)}' text/long.txt",
    "awk -f awk/prog.awk csv.txt; echo status $?",
    'awk \'BEGIN{printf "%s\\n", x > "/dev/stderr"}\'; echo status $?',
    # errors the reference reports the same way (status; nothing on stdout)
    "awk 'BEGIN{print 1' ; echo status $?",
    "awk '{print $1' a.txt; echo status $?",
]


def write_inputs(root: Path) -> Path:
    make_tree(root)
    for rel, content in AWK_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


def run_reference(cmdline: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/bash", "-c", cmdline],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": str(workdir)},
    )


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One tree for the sandbox and one for bash, shared by the battery: no line writes."""
    base = tmp_path_factory.mktemp("awk-battery")
    return write_inputs(base / "sandbox"), write_inputs(base / "bash")


@pytest.mark.parametrize("cmdline", BATTERY)
def test_battery_matches_the_system_awk(cmdline: str, trees: tuple[Path, Path]) -> None:
    ours = sandbox.run(cmdline, workdir=trees[0])
    ref = run_reference(cmdline, trees[1])
    assert (ours.status, ours.stdout) == (ref.returncode, ref.stdout), cmdline


def test_battery_is_big_enough() -> None:
    assert len(BATTERY) >= 100
    assert len(set(BATTERY)) == len(BATTERY)
