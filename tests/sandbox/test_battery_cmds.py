"""The differential battery for the smaller commands (issue 14): sandbox against bash + GNU.

Each line runs through `sandbox.run` and through /bin/bash (LC_ALL=C, coreutils, util-linux's
rev, GNU sed) on identical copies of the reference tree, plus a few links and files whose
modification times are set, so `date -r` and `stat %Y` have a fixed answer. Same status and
same stdout, byte for byte (no whitespace normalising: tabs and padding are the point of
`nl`, `paste` and `comm`). Paths that name the workdir are cut to what follows it, since
the sandbox calls it /workdir and bash its real path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundskeeper import sandbox
from tests.sandbox.reference import make_tree, run_bash, run_sandbox

MTIME = 1_700_000_000  # 2023-11-14 22:13:20 UTC
OLD_MTIME = 86_399  # 1970-01-01 23:59:59 UTC

BATTERY = [
    # rev
    "rev a.txt",
    "rev text/nonl.txt b.txt",
    "rev < csv.txt | rev",
    "rev empty.txt; rev nope; echo $?",
    # tee
    "cat a.txt | tee out.txt; cat out.txt",
    "printf x | tee -a a.txt b.txt; cat a.txt b.txt",
    "printf 'one\\n' | tee t1 t2 > /dev/null; cat t1 t2",
    "printf y | tee; echo $?",
    "printf z | tee -; cat ./-",
    "printf z | tee sub; echo $?",
    # paste
    "paste a.txt b.txt",
    "paste -d, a.txt b.txt csv.txt",
    "paste -d ':;' a.txt b.txt nums.txt",
    "paste -s a.txt b.txt",
    "paste -s -d, nums.txt",
    "paste -d '\\n' a.txt b.txt",
    "paste - - < a.txt",
    "paste -s empty.txt b.txt",
    "paste -d '' a.txt b.txt",
    "paste -sd '\\t,' csv.txt",
    "paste a.txt nope; echo $?",
    "paste -d 'x\\' a.txt; echo $?",
    # comm
    "sort a.txt > s1; sort b.txt > s2; comm s1 s2",
    "sort a.txt > s1; sort words.txt > s2; comm s1 s2",
    "sort a.txt > s1; sort words.txt > s2; comm -12 s1 s2; comm -3 s1 s2",
    "sort a.txt > s1; sort words.txt > s2; comm -1 s1 s2; comm -2 s1 s2; comm -23 s1 s2",
    "sort a.txt > s1; sort words.txt > s2; comm --total s1 s2",
    "sort a.txt > s1; sort words.txt > s2; comm --output-delimiter=, s1 s2",
    "sort -u words.txt > s1; comm -123 s1 s1; comm s1 empty.txt",
    "comm a.txt b.txt; echo $?",
    "comm --nocheck-order a.txt b.txt; echo $?",
    "comm --check-order a.txt b.txt; echo $?",
    "comm a.txt; echo $?",
    # nl
    "nl a.txt",
    "nl -ba text/tabs.txt",
    "nl -w3 -s': ' b.txt",
    "nl -v 10 -i 5 b.txt",
    "nl -n ln a.txt; nl -n rz -w 3 a.txt",
    "nl -b n a.txt; nl -b 'p^a' a.txt",
    "printf 'a\\n\\nb\\n' | nl",
    "printf 'a\\n\\nb\\n' | nl -ba -n rz",
    "nl text/nonl.txt",
    "nl -v 0 -i 0 b.txt; nl -v -2 b.txt",
    "nl a.txt b.txt",
    "nl -b x a.txt; echo $?",
    # base64
    "base64 a.txt",
    "base64 -w 10 a.txt; base64 -w0 b.txt",
    "base64 text/long.txt | tail -2",
    "base64 a.txt | base64 -d",
    "base64 -w 7 text/long.txt | base64 -d | cmp - text/long.txt && echo same",
    "base64 < empty.txt; printf a | base64; printf ab | base64",
    "printf 'YWI' | base64 -d; echo \" $?\"",
    "printf 'YWJj*' | base64 -di",
    "printf 'YW=I' | base64 -d; echo \" $?\"",
    "printf 'YWI=YWI=' | base64 -d",
    "printf 'YWJj\\n\\nZA==\\n' | base64 --decode",
    "base64 -w x a.txt; echo $?",
    # digests
    "md5sum a.txt b.txt empty.txt",
    "sha1sum a.txt text/long.txt",
    "sha512sum a.txt empty.txt text/long.txt",
    "printf abc | md5sum; printf abc | sha1sum; printf abc | sha512sum",
    "md5sum a.txt > sums; md5sum -c sums",
    "sha1sum b.txt > s; printf 'x\\n' >> b.txt; sha1sum -c s; echo $?",
    "sha512sum a.txt b.txt > s; sha512sum -c --quiet s; sha512sum -c --status s; echo $?",
    "md5sum -b a.txt; sha1sum nope; echo $?",
    "sha1sum a.txt > s; md5sum -c s; echo $?",
    "cat text/old.txt | md5sum; sha512sum - < text/new.txt",
    # dirname
    "dirname a/b/c; dirname /; dirname a; dirname a/ b//c//",
    "dirname; echo $?",
    # readlink and realpath
    "readlink link; readlink sub/up; readlink dang",
    "readlink a.txt; echo $?; readlink nope; echo $?",
    'readlink -f link | sed "s|^$(pwd)/||"',
    'readlink -f dang | sed "s|^$(pwd)/||"; readlink -e dang; echo $?',
    'readlink -m nope/../x | sed "s|^$(pwd)/||"',
    "readlink -n link; echo",
    'realpath a.txt sub/../b.txt | sed "s|^$(pwd)||"',
    'realpath link sub/up | sed "s|^$(pwd)||"',
    'realpath -s link | sed "s|^$(pwd)||"',
    "realpath --relative-to=sub a.txt sub/c.txt sub/inner/e.txt",
    "realpath --relative-to=sub/inner sub b.txt",
    "realpath --relative-to=. sub/inner/../c.txt .",
    "realpath nope/x; echo $?",
    'realpath -m nope/../x | sed "s|^$(pwd)||"',
    "realpath -e nope; echo $?; realpath -q nope/x; echo $?",
    'cd sub && realpath ../a.txt inner | sed "s|^$(cd .. && pwd)||"',
    # stat
    "stat -c '%s %n %F' a.txt sub empty.txt link",
    "stat -c '%s|%5s|%-5s|%05s|' a.txt",
    "stat -c '%Y %y' a.txt sub/c.txt",
    "stat -L -c '%F %s %Y' link",
    "stat --printf '%s\\n' a.txt b.txt",
    "stat --printf '%n\\t%F\\n' sub",
    "stat -c '%h %%' a.txt; stat -c '%10n|%-10n|' b.txt",
    "stat -c %s nope; echo $?",
    "stat -c '%i' a.txt sub/../a.txt | uniq | wc -l; stat -c %i a.txt b.txt | uniq | wc -l",
    # date
    "date -d @1700000000 -u",
    "date -u -d @1700000000.25 '+%-d %_m %^a %N %3N %:z %z %P %k %l %e %s %5Y %10A|'",
    "date -u -d @0 -R; date -u -d @0 -Iseconds; date -u -d @0 -I; date -u -d @0 -Ins",
    "date -u -d @0 -Ihours; date -u -d @0 --iso-8601=minutes",
    "date -u -d @0 '+%C %g %G %u %w %U %W %V %h %j %F %T %Y%m%d'",
    "date -u -d @0 '+%D %r %R %x %X %c|%n|%t|%%'",
    "date -u -d @86399 '+%H %I %p %M %S %-H %_H %0e'",
    "date -u -d @-1 '+%s %Y-%m-%d'",
    "date -u -d @1700000000 '+%Q %q %-q'",
    "date -r a.txt +%s; date -u -r a.txt '+%F %T'",
    "date -r sub/c.txt; date --reference=sub/c.txt +%j",
    "date -r nope; echo $?",
    "date +%Y%m%d > d1; date -u +%Y%m%d > d2; cmp d1 d2 && echo same",
    "date '+%Y' | grep -c '^20[0-9][0-9]$'",
    "date +%s +%s; echo $?",
    # du
    "du -sb sub; du -sb a.txt; du -sb --apparent-size -k sub",
    "du -b sub | sort",
    "du -ab sub | sort",
    "du -cb a.txt b.txt",
    "du -b -d 0 .; du -b --max-depth=1 sub | sort",
    "du -sb sub text | sort",
    "du -sbm text; du -sb nope; echo $?",
    # sed -i and -s
    "sed -i s/a/A/ a.txt; cat a.txt",
    "sed -i.bak s/a/A/g a.txt; cat a.txt a.txt.bak",
    "sed -i 1d a.txt b.txt; cat a.txt b.txt",
    "sed -i '$s/$/!/' a.txt b.txt; cat a.txt b.txt",
    "sed -i = b.txt; cat b.txt",
    "sed -i 2q a.txt; cat a.txt",
    "sed -n -i p a.txt; echo $?; cat a.txt",
    "sed -n -i '/alpha/p' a.txt; cat a.txt",
    "sed -i -e 's/one/1/' -e 's/two/2/' b.txt; cat b.txt",
    "sed -E -i 's/^([^,]*),([^,]*),.*/\\2 \\1/' csv.txt; cat csv.txt",
    "sed -i s/x/y/ nope; echo $?",
    "sed -i s/x/y/ sub; echo $?",
    "sed -s -n '$p' a.txt b.txt; sed -n '$p' a.txt b.txt",
    "sed --in-place=.orig s/one/1/ b.txt; cat b.txt b.txt.orig",
    "sed -i s/x/y/ text/nonl.txt; cat text/nonl.txt",
    "sed -i'*.old' s/one/1/ b.txt; cat b.txt.old b.txt",
    "sed -i s/alpha/ALPHA/ link; cat a.txt; test -L link || echo replaced; cat link",
    "cd sub && sed -i s/deep/DEEP/ c.txt inner/e.txt && cat c.txt inner/e.txt",
    "sed -i 's/a/b' a.txt; echo $?; cat a.txt",
    "ls | grep -c '^sed'",
    "printf '1\\n' > f1; printf 'a\\n' > f2; sed -i x f1 f2; cat f1 f2",
    "printf '1\\n2\\n' > f1; printf 'a\\nb\\n' > f2; sed -i '/2/,/a/d' f1 f2; cat f1 f2",
    "printf '1\\n2\\n' > f1; printf 'a\\nb\\n' > f2; sed -s '2,+3d' f1 f2; sed -s -n 1,/a/p f1 f2",
    "sed -n '$=' a.txt b.txt; sed -s -n '$=' a.txt b.txt",
    # edges, command by command
    "printf 'a\\n\\\\:\\\\:\\\\:\\nh\\n\\\\:\\\\:\\nb\\n\\\\:\\nf\\nx\\n' | nl",
    "printf 'a\\n\\\\:\\\\:\\\\:\\nh\\n\\\\:\\\\:\\nb\\n\\\\:\\nf\\nx\\n' | nl -ba",
    "nl -s '' a.txt; nl -w 1 text/old.txt | tail -3",
    "printf 'b\\na\\n' > u; printf 'a\\nb\\n' > v; comm u v; echo $?; comm u u; echo $?",
    "printf 'a\\nc\\n' > u; printf 'b\\na\\n' > v; comm u v; echo $?",
    "paste - a.txt - < b.txt; paste -s - < a.txt",
    "printf 'YWJj ZA==' | base64 -d; echo \" $?\"; printf '====' | base64 -d; echo \" $?\"",
    "base64 -d a.txt > /dev/null; echo $?",
    "printf 'x  a.txt\\n' > bad; md5sum -c bad; echo $?; md5sum -c --strict --warn bad; echo $?",
    "md5sum a.txt > s; printf 'junk\\n' >> s; md5sum -c s; echo $?; md5sum -c --strict s; echo $?",
    "dirname -z a/b c | tr '\\0' '\\n'",
    'readlink -m sub/up/x | sed "s|^$(pwd)/||"; readlink -f sub/up/x; echo $?',
    "readlink -z link | tr '\\0' '\\n'; readlink link link",
    "realpath -z a.txt b.txt | tr '\\0' '\\n' | sed \"s|^$(pwd)/||\"",
    'realpath . sub/.. ./ | sed "s|^$(pwd)|W|"',
    "realpath --relative-to=nope a.txt; echo $?; realpath --relative-to=sub/c.txt a.txt",
    "stat -c '%.3n|%8.2n|%+5s|%-05s|% 5s' a.txt; stat -c '%s %s%%%n' a.txt b.txt",
    "stat --printf='%n\\t%s\\\\\\n' a.txt",
    "date -u -d @1700000000 '+%-5d|%_5d|%05e|%^b|%^10B|%-j|%3j|%-3S|%_S'",
    "date -u -d @1700000000 '+%:::z|%::z|%Ez|%Oy|%-y|%+4Y'",
    "date -u -d '@ 5' +%s; date -u -d @-86401.5 '+%s %N %F %T'",
    "du -sbc sub text; du -bs sub/c.txt sub; du -bs sub sub",
    "du -b sub/inner; du -bk sub; du -bm .",
    # pipelines mixing them
    "cut -d, -f1 csv.txt | paste -sd' ' | rev",
    "sort words.txt | tee sorted.txt | nl | tail -2; comm -12 sorted.txt sorted.txt | wc -l",
    "base64 a.txt | md5sum; md5sum a.txt | cut -c1-32 | base64",
    "seq 1 5 | paste - - | nl -s '> '",
    "find sub -type f | sort | paste -sd,",
]


def _build(root: Path) -> Path:
    make_tree(root)
    (root / "link").symlink_to("a.txt")
    (root / "dang").symlink_to("nowhere")
    (root / "sub" / "up").symlink_to("../b.txt")
    os.utime(root / "a.txt", (MTIME, MTIME))
    os.utime(root / "sub" / "c.txt", (OLD_MTIME, OLD_MTIME))
    return root


def _fresh(where: Path) -> Path:
    if where.exists():
        shutil.rmtree(where)
    return _build(where)


@pytest.mark.parametrize("cmdline", BATTERY)
def test_same_as_bash(cmdline: str, tmp_path: Path) -> None:
    ours = run_sandbox(cmdline, _fresh(tmp_path / "sandbox"))
    ref = run_bash(cmdline, _fresh(tmp_path / "bash"))
    assert (ours.status, ours.stdout) == (ref.status, ref.stdout), cmdline


def test_the_battery_is_large_enough() -> None:
    assert len(BATTERY) >= 100 and len(set(BATTERY)) == len(BATTERY)


# ---- digests and base64 against Python's own, on generated bytes --------------------------

DIGESTS = {"md5sum": "md5", "sha1sum": "sha1", "sha256sum": "sha256", "sha512sum": "sha512"}


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=300) | st.binary(min_size=100, max_size=3000))
def test_digests_and_base64_match_pythons(data: bytes, tmp_path: Path) -> None:
    # lengths around the 55/56/64 and 111/112/128 byte padding edges are in the first range
    (tmp_path / "f").write_bytes(data)
    line = "; ".join(f"{cmd} f" for cmd in DIGESTS) + "; base64 -w 0 f; base64 f | base64 -d > g"
    result = sandbox.run(line, workdir=tmp_path)
    expected = "".join(f"{hashlib.new(algo, data).hexdigest()}  f\n" for algo in DIGESTS.values())
    import base64

    assert result.status == 0, result.stderr
    assert result.stdout == expected + base64.b64encode(data).decode()
    assert (tmp_path / "g").read_bytes() == data
