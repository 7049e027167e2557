"""The smaller commands where bash cannot be the reference: the fence, read-only runs, the
refusals that name the fix, and the places the sandbox's view differs from the host's.

A worker holds `sh`: each test below is a way it could try to use tee, sed -i, stat, du,
realpath or readlink to reach the control plane, change the running plan or a protected
input, or learn a host path.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundskeeper import sandbox
from groundskeeper.record.control import ControlDir
from groundskeeper.sandbox import DiskQuota
from groundskeeper.sandbox import fence as fences

LEDGER = "LEDGER-LINE-1\n"
PLAN = "* TODO x\n"
EXPECTED = "42\n"


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    """A workdir with a running plan, its control directory and a protected input."""
    root = tmp_path / "work"
    (root / "tests").mkdir(parents=True)
    (root / "plan.org").write_text(PLAN)
    (root / "tests" / "expected.txt").write_text(EXPECTED)
    (root / "notes.txt").write_text("alpha\n")
    control = ControlDir.for_plan(root / "plan.org").ensure()
    control.ledger.write_text(LEDGER)
    fence = fences.for_plan(root / "plan.org", control.root)
    with fences.enforced(fence.union(fences.protecting(root, ["tests/expected.txt"]))):
        yield root


def sh(work: Path, cmdline: str, read_only: bool = False) -> sandbox.ShellResult:
    return sandbox.run(cmdline, workdir=work, read_only=read_only, timeout=10)


def intact(work: Path) -> None:
    assert (work / ".groundskeeper" / "plan.org" / "_steps.jsonl").read_text() == LEDGER
    assert (work / "plan.org").read_text() == PLAN
    assert (work / "tests" / "expected.txt").read_text() == EXPECTED


def leftovers(work: Path) -> list[str]:
    """Temporary files sed -i would have left beside its targets."""
    return sorted(p.name for p in work.rglob("sed*") if p.is_file())


# ---- sed -i -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cmdline",
    [
        "sed -i s/TODO/DONE/ plan.org",
        "sed -i.bak s/TODO/DONE/ plan.org",
        "sed -i s/TODO/DONE/ PLAN.ORG",
        "cd tests && sed -i s/TODO/DONE/ ../plan.org",
        "sed -i s/42/43/ tests/expected.txt",
        "sed -i.orig s/42/43/ tests/expected.txt",
        "sed -i s/L/X/ .groundskeeper/plan.org/_steps.jsonl",
        "sed --in-place= s/42/43/ tests/expected.txt",
        "sed -i s/alpha/beta/ notes.txt tests/expected.txt",
    ],
)
def test_sed_i_cannot_change_the_plan_a_protected_input_or_the_ledger(
    work: Path, cmdline: str
) -> None:
    result = sh(work, cmdline)
    assert result.status != 0, (cmdline, result)
    intact(work)
    assert leftovers(work) == []
    assert not (work / "plan.org.bak").exists() and not (work / "tests/expected.txt.orig").exists()


def test_sed_i_refusal_says_why_and_edits_the_other_files(work: Path) -> None:
    result = sh(work, "sed -i s/alpha/beta/ notes.txt tests/expected.txt")
    assert result.status == 4
    assert result.stderr.startswith("sed: cannot rename tests/sed")
    assert result.stderr.endswith(": Permission denied\n")
    assert (work / "notes.txt").read_text() == "beta\n"  # the file it may change, changed
    intact(work)


def test_sed_i_backup_of_the_plan_is_refused_before_anything_moves(work: Path) -> None:
    result = sh(work, "sed -i.bak s/TODO/DONE/ plan.org")
    assert (result.status, result.stderr) == (4, "sed: cannot rename plan.org: Permission denied\n")
    intact(work)


def test_sed_i_in_a_read_only_run_writes_nothing(work: Path) -> None:
    result = sh(work, "sed -i s/alpha/beta/ notes.txt", read_only=True)
    assert result.status == 4
    assert result.stderr.startswith("sed: couldn't open temporary file ./sed")
    assert result.stderr.endswith(": Read-only file system\n")
    assert (work / "notes.txt").read_text() == "alpha\n"
    assert leftovers(work) == []


def test_sed_i_script_error_leaves_the_file_and_no_temporary(work: Path) -> None:
    result = sh(work, "sed -i 's/alpha/beta' notes.txt")
    assert result.status == 1
    assert result.stderr.startswith("sed: -e expression #1, char ")
    assert result.stderr.endswith(": unterminated `s' command\n")
    assert (work / "notes.txt").read_text() == "alpha\n"
    assert leftovers(work) == []


def test_sed_i_round_trips_through_a_backup(work: Path) -> None:
    before = (work / "notes.txt").read_text()
    result = sh(
        work, "sed -i.bak 's/alpha/ALPHA/' notes.txt && sed -i 's/ALPHA/alpha/' notes.txt && "
        "cmp notes.txt notes.txt.bak && echo same"
    )  # fmt: skip
    assert (result.status, result.stdout) == (0, "same\n")
    assert (work / "notes.txt").read_text() == before == (work / "notes.txt.bak").read_text()
    assert leftovers(work) == []


@pytest.mark.parametrize(
    ("cmdline", "stderr"),
    [
        (
            "sed -i'old/*' s/a/b/ notes.txt",
            "sed: a backup suffix with '/' (another directory) is not supported in the "
            "sandbox: -iold/*\n",
        ),
        ("sed -i s/a/b/", "sed: no input files\n"),
    ],
)
def test_sed_i_refusals(work: Path, cmdline: str, stderr: str) -> None:
    result = sh(work, cmdline)
    assert result.stderr == stderr
    assert result.status in (2, 4)
    assert (work / "notes.txt").read_text() == "alpha\n"


# ---- tee ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        ".groundskeeper/plan.org/_steps.jsonl",
        ".groundskeeper/plan.org/new",
        ".GROUNDSKEEPER/plan.org/new",
        "tests/../.groundskeeper/new",
        "plan.org",
        "tests/expected.txt",
    ],
)
@pytest.mark.parametrize("append", ["", "-a "])
def test_tee_cannot_write_into_the_control_plane_or_kept_files(
    work: Path, target: str, append: str
) -> None:
    result = sh(work, f"echo forged | tee {append}{target}")
    assert result.status == 1, result
    assert result.stdout == "forged\n"  # stdout still gets it, as GNU's tee does on an error
    assert result.stderr.startswith(f"tee: {target}: ")
    intact(work)
    assert not (work / ".groundskeeper" / "plan.org" / "new").exists()
    assert not (work / ".groundskeeper" / "new").exists()


def test_tee_through_a_link_to_a_kept_file_is_refused(work: Path) -> None:
    (work / "to-expected").symlink_to("tests/expected.txt")  # links made before the run
    (work / "to-plan").symlink_to("plan.org")
    for link in ("to-expected", "to-plan"):
        for append in ("", "-a "):
            result = sh(work, f"echo forged | tee {append}{link}")
            assert (result.status, result.stderr) == (1, f"tee: {link}: Permission denied\n")
    intact(work)


def test_sed_i_on_a_link_replaces_the_link_never_its_kept_target(work: Path) -> None:
    # GNU's sed -i (without --follow-symlinks) writes a new file in the link's place
    (work / "to-expected").symlink_to("tests/expected.txt")
    result = sh(work, "sed -i s/42/43/ to-expected && cat to-expected")
    assert (result.status, result.stdout) == (0, "43\n")
    assert not (work / "to-expected").is_symlink()
    intact(work)


def test_tee_in_a_read_only_run(work: Path) -> None:
    result = sh(work, "echo x | tee out.txt", read_only=True)
    assert (result.status, result.stdout) == (1, "x\n")
    assert result.stderr == "tee: out.txt: Read-only file system\n"
    assert not (work / "out.txt").exists()


def test_tee_writes_count_against_the_disk_quota(tmp_path: Path) -> None:
    quota = DiskQuota(10_000)
    result = sandbox.run("seq 1 100000 | tee big.txt > /dev/null", workdir=tmp_path, quota=quota)
    assert result.fault == "disk", result
    assert (tmp_path / "big.txt").stat().st_size <= 10_000


# ---- stat, du, realpath, readlink: what the fence hides stays absent -----------------------


@pytest.mark.parametrize(
    "cmdline",
    [
        "stat -c %n .groundskeeper",
        "stat -c %s .groundskeeper/plan.org/_steps.jsonl",
        "stat -c %F .Groundskeeper",
        "stat -L -c %s tests/../.groundskeeper/plan.org/_steps.jsonl",
        "realpath -e .groundskeeper",
        "realpath .groundskeeper/plan.org",
        "readlink -v -f .groundskeeper/plan.org/_steps.jsonl",
        "readlink -v -e .groundskeeper",
        "du -sb .groundskeeper",
        "date -r .groundskeeper/plan.org/_steps.jsonl +%s",
        "md5sum .groundskeeper/plan.org/_steps.jsonl",
        "base64 .groundskeeper/plan.org/_steps.jsonl",
        "paste .groundskeeper/plan.org/_steps.jsonl",
        "nl .groundskeeper/plan.org/_steps.jsonl",
        "rev .groundskeeper/plan.org/_steps.jsonl",
        "comm .groundskeeper/plan.org/_steps.jsonl plan.org",
    ],
)
def test_hidden_paths_are_absent_to_the_new_commands(work: Path, cmdline: str) -> None:
    result = sh(work, cmdline)
    assert result.status != 0, (cmdline, result)
    assert "No such file or directory" in result.stderr, (cmdline, result.stderr)
    assert "LEDGER" not in result.stdout and "TEVER" not in result.stdout
    intact(work)


def test_stat_of_a_hidden_path_reads_as_missing_exactly(work: Path) -> None:
    result = sh(work, "stat -c %n .groundskeeper")
    assert (result.status, result.stdout) == (1, "")
    assert result.stderr == "stat: cannot statx '.groundskeeper': No such file or directory\n"


def test_du_leaves_the_control_plane_out(work: Path) -> None:
    result = sh(work, "du -ab . | sort -k2")
    assert result.status == 0
    assert "groundskeeper" not in result.stdout
    total = (
        sum(
            os.lstat(os.path.join(d, n)).st_size
            for d, dirs, files in os.walk(work)
            for n in files + [x for x in dirs if x != ".groundskeeper"]
            if ".groundskeeper" not in Path(d).relative_to(work).parts
        )
        + os.lstat(work).st_size
    )
    assert sh(work, "du -sb").stdout == f"{total}\t.\n"


def test_realpath_names_only_the_sandbox_view(work: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("host\n")
    (work / "out").symlink_to(tmp_path / "secret.txt")  # a link made on the host
    (work / "up").symlink_to("../secret.txt")
    result = sh(work, "realpath notes.txt tests; cd tests && realpath expected.txt .")
    assert result.stdout == (
        "/workdir/notes.txt\n/workdir/tests\n/workdir/tests/expected.txt\n/workdir/tests\n"
    )
    for cmdline in ("realpath ..", "realpath -m ../x", "realpath out", "realpath up",
                    "readlink -f up", "readlink -e out", "realpath --relative-to=.. notes.txt",
                    "cd tests && realpath ../../secret.txt"):  # fmt: skip
        escaped = sh(work, cmdline)
        assert escaped.status == 1, (cmdline, escaped)
        assert escaped.stdout == "", (cmdline, escaped)
        assert str(tmp_path) not in escaped.stderr, (cmdline, escaped)


# ---- refusals name what to write instead ----------------------------------------------------


@pytest.mark.parametrize(
    ("cmdline", "stderr"),
    [
        (
            "stat a.txt",
            "stat: the default format is not supported in the sandbox; use stat -c FORMAT "
            "with %s %Y %y %n %F %i %h\n",
        ),
        (
            "stat -c '%a %U' notes.txt",
            "stat: %a is not supported in the sandbox (WASI has no owners, modes or blocks); "
            "use one of %s %Y %y %n %F %i %h\n",
        ),
        (
            "du -s .",
            "du: disk usage in blocks is not available in the sandbox (WASI has no block "
            "counts); use du -b or du --apparent-size for sizes in bytes\n",
        ),
        (
            "date -d tomorrow",
            "date: -d takes only @SECONDS in the sandbox (not 'tomorrow'); for a file's time "
            "use -r FILE\n",
        ),
        (
            "date 010100002030",
            "date: setting the date is not supported in the sandbox; to print one, write +FORMAT\n",
        ),
        ("date '+%#Z'", "date: the %# flag is not supported in the sandbox\n"),
        ("tee -x f", "tee: unsupported option -x (not in the sandbox)\n"),
        ("comm -z a b", "comm: unsupported option -z (not in the sandbox)\n"),
        ("sha1sum --tag notes.txt", "sha1sum: unsupported option --tag (not in the sandbox)\n"),
        ("realpath -L notes.txt", "realpath: unsupported option -L (not in the sandbox)\n"),
        ("du -bh .", "du: unsupported option -h (not in the sandbox)\n"),
        ("rev -0", "rev: unsupported option -0 (not in the sandbox)\n"),
    ],
)
def test_refusals_are_status_2_and_say_what_works(work: Path, cmdline: str, stderr: str) -> None:
    result = sh(work, cmdline)
    assert (result.status, result.stdout, result.stderr) == (2, "", stderr)


def test_date_without_options_is_now_in_utc(work: Path) -> None:
    import time

    before = int(time.time())
    result = sh(work, "date +%s; date")
    after = int(time.time())
    first, second = result.stdout.splitlines()
    assert before <= int(first) <= after
    assert second.endswith(f" UTC {time.gmtime(after).tm_year}")
