"""jq in box.wasm where libjq cannot be asked: its refusals, statuses, limits and faults.

Failure paths first: an option or a construct the sandbox lacks is refused by name (exit 2 for
options, 3 for the program), a runtime error is exit 5 and processing goes on with the next
input, and inputs or programs built to exhaust memory, stack or time end in a named fault or a
jq error, never a crash of the host.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from groundskeeper import sandbox
from groundskeeper.sandbox import ShellResult
from tests.sandbox.jq_reference import make_jq_tree

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_jq_tree(tmp_path_factory.mktemp("jq-box"))


def run(cmdline: str, where: Path, timeout: float = 10.0) -> ShellResult:
    return sandbox.run(cmdline, workdir=where, timeout=timeout)


def host_still_works(where: Path) -> None:
    result = run("jq -c '.features' config.json", where)
    assert (result.status, result.stdout, result.fault) == (0, '["auth","search"]\n', None)


# ---- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cmdline", "option"),
    [
        ("jq -C . config.json", "-C"),
        ("jq --seq . config.json", "--seq"),
        ("jq --stream . config.json", "--stream"),
        ("jq -rZ . config.json", "-Z"),
        ("jq --args . config.json", "--args"),
    ],
)
def test_unsupported_option_is_status_2_naming_it(tree: Path, cmdline: str, option: str) -> None:
    result = run(cmdline, tree)
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == f"jq: unsupported option {option} (not in the sandbox)\n"


@pytest.mark.parametrize(
    ("program", "message"),
    [
        ("def f: .; f", "def is not supported in the sandbox (write the filter inline)"),
        ('import "a" as a; .', "modules are not supported in the sandbox"),
        (".a | nosuchfn", "nosuchfn/0 is not defined"),
        ("map", "map/0 is not defined"),
        ("$undefined", "$undefined is not defined"),
        (".[", "syntax error, unexpected end of file"),
        ("{a: 1 + 2}", "syntax error, unexpected '+'"),
        ("1 == 2 == 3", "syntax error, unexpected '=='"),
        ("@nosuchformat", "nosuchformat is not a valid format"),
        ('"unterminated', "unterminated string"),
    ],
)
def test_compile_error_is_status_3_with_the_reason(tree: Path, program: str, message: str) -> None:
    result = run(f"jq '{program}' config.json", tree)
    assert (result.status, result.stdout) == (3, "")
    assert message in result.stderr
    assert result.stderr.endswith("jq: 1 compile error\n")


def test_pcre_only_regex_is_refused_naming_posix_ere(tree: Path) -> None:
    result = run("jq '.version | test(\"(?=1)\")' config.json", tree)
    assert (result.status, result.stdout) == (5, "")
    assert "is not supported" in result.stderr and "POSIX ERE" in result.stderr
    lazy = run("jq '.version | test(\"1.*?3\")' config.json", tree)
    assert lazy.status == 5 and "lazy" in lazy.stderr


def test_help_says_what_is_not_supported(tree: Path) -> None:
    result = run("jq --help", tree)
    assert result.status == 0
    assert "POSIX ERE" in result.stdout and "lookaround" in result.stdout
    assert "def" in result.stdout


def test_no_filter_is_usage_status_2(tree: Path) -> None:
    result = run("jq", tree)
    assert (result.status, result.stdout) == (2, "")
    assert "Usage: jq" in result.stderr


@pytest.mark.parametrize("cmdline", ["jq --arg only config.json", "jq --argjson x '{' ."])
def test_bad_arguments_are_status_2(tree: Path, cmdline: str) -> None:
    result = run(cmdline, tree)
    assert (result.status, result.stdout) == (2, "")


def test_missing_input_file_is_status_2_after_the_others(tree: Path) -> None:
    result = run("jq -c .features missing.json config.json", tree)
    assert (result.status, result.stdout) == (2, '["auth","search"]\n')
    assert "Could not open missing.json" in result.stderr


# ---- confinement -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cmdline",
    [
        "jq -R . /etc/passwd",
        "jq -R . ../../../../etc/passwd",
        "jq -R . outside",  # a symlink to /etc/passwd
        "jq -n --rawfile x /etc/passwd '$x'",
        "jq -n --slurpfile x ../config.json '$x'",
        "jq -f /etc/passwd config.json",
    ],
)
def test_jq_reads_nothing_outside_the_workdir(tree: Path, cmdline: str) -> None:
    outside = tree / "outside"
    if not outside.is_symlink():
        outside.symlink_to("/etc/passwd")
    result = run(cmdline, tree)
    assert (result.status, result.stdout) == (2, "")
    assert "jq: error: Could not open" in result.stderr
    assert "root:" not in result.stderr


def test_a_program_nested_too_deeply_is_a_compile_error(tree: Path) -> None:
    deep = "(" * 300 + "1" + ")" * 300
    result = run(f"jq -n '{deep}'", tree)
    assert (result.status, result.stdout) == (3, "")
    assert "program nested too deeply (the sandbox's limit is 200 levels)" in result.stderr
    ok = run("jq -n '" + "(" * 150 + "1" + ")" * 150 + "'", tree)
    assert (ok.status, ok.stdout) == (0, "1\n")


def test_a_string_repeated_past_64_mib_is_an_error(tree: Path) -> None:
    result = run("jq -n '\"x\" * 1e9'", tree)
    assert (result.status, result.stdout) == (5, "")
    assert "Repeat string result too long" in result.stderr


# ---- statuses ---------------------------------------------------------------------------------


def test_runtime_error_is_status_5_and_the_next_input_still_runs(tree: Path) -> None:
    result = run("jq -c '.a + 1' stream.json", tree)
    assert result.status == 5
    # 1, 2 and 3 cannot be indexed; the object gives 2, "x" fails, null gives 1, [..] fails
    assert result.stdout == "2\n1\n"
    assert result.stderr.startswith("jq: error (at stream.json:1): Cannot index number")
    assert 'Cannot index number with string ("a")' in result.stderr


def test_error_with_a_non_string_value(tree: Path) -> None:
    result = run("jq -n 'error({a: 1})'", tree)
    assert result.status == 5
    assert result.stderr == 'jq: error (at <unknown>) (not a string): {"a":1}\n'


def test_parse_error_is_status_2_after_the_values_before_it(tree: Path) -> None:
    result = run("jq -c . partial.json", tree)
    assert (result.status, result.stdout) == (2, '{"a":1}\n')
    assert "Cannot parse input: Unfinished JSON term at EOF" in result.stderr


@pytest.mark.parametrize(
    ("program", "status"),
    [(".limits", 1), (".version", 0), ("empty", 4), ("false", 1), (".features[]", 0)],
)
def test_exit_status_option(tree: Path, program: str, status: int) -> None:
    assert run(f"jq -e '{program}' config.json", tree).status == status


def test_exit_status_in_a_shell_condition(tree: Path) -> None:
    result = run("jq -e '.summary.failed == 0' report.json > /dev/null || echo failing", tree)
    assert (result.status, result.stdout) == (0, "failing\n")


def test_halt_error_sets_the_status_and_writes_the_message(tree: Path) -> None:
    result = run("jq -n '\"bad input\\n\" | halt_error(3)'", tree)
    assert (result.status, result.stdout, result.stderr) == (3, "", "bad input\n")
    plain = run("jq -n '{a: 1} | halt_error'", tree)
    assert (plain.status, plain.stderr) == (5, '{"a":1}\n')
    assert run("jq -n '1, halt, 2'", tree).stdout == "1\n"


# ---- what libjq is not asked about -----------------------------------------------------------


def test_inputs_with_null_input(tree: Path) -> None:
    result = run("jq -n -c '[inputs | .a?] , input' stream.json", tree)
    assert result.status == 5  # `input` after `inputs` drained them: "No more inputs"
    assert result.stdout == "[1,null]\n"
    assert "No more inputs" in result.stderr
    first = run("jq -n -c 'input, input' stream.json", tree)
    assert (first.status, first.stdout) == (0, "1\n2\n")


def test_input_filename(tree: Path) -> None:
    result = run(
        "jq -c 'input_filename' config.json lines.txt -R | uniq; jq -n input_filename", tree
    )
    assert (result.status, result.stdout) == (0, '"config.json"\n"lines.txt"\nnull\n')


def test_repeat_is_jq_1_7s(tree: Path) -> None:
    # the manual's example: repeat(f) emits its input, then f of it, and so on
    result = run("jq -n -c '1 | [limit(5; repeat(. * 2))]'", tree)
    assert (result.status, result.stdout) == (0, "[1,2,4,8,16]\n")


def test_env_and_named_arguments(tree: Path) -> None:
    result = run("X=42 jq -n -r '$ENV.X, env.X, $ARGS.named.a' --arg a b", tree)
    assert (result.status, result.stdout) == (0, "42\n42\nb\n")


def test_slurpfile_and_rawfile(tree: Path) -> None:
    result = run(
        "jq -n -c '$s | length, ($r | length)' --slurpfile s stream.json --rawfile r lines.txt",
        tree,
    )
    assert (result.status, result.stdout) == (0, "7\n47\n")


def test_program_from_a_file(tree: Path) -> None:
    result = run("echo '.version' > prog.jq; jq -r -f prog.jq config.json", tree)
    assert (result.status, result.stdout) == (0, "1.2.3\n")


def test_number_text(tree: Path) -> None:
    result = run(
        "jq -n -c '[1e17, 1e15 + 1, 0.1 + 0.2, 1 / 3, 1e-05 * 1, 12.5e-10, -0.0001 * 1, "
        "1e400, 3.0, 100 / 4]'",
        tree,
    )
    assert result.stdout == (
        "[1e+17,1000000000000001,0.30000000000000004,0.3333333333333333,1e-05,1.25e-09,"
        "-0.0001,1.7976931348623157e+308,3,25]\n"
    )


def test_strings_are_utf8_and_escaped_as_jq_does(tree: Path) -> None:
    result = run(
        "printf '\"caf\\\\u00e9 \\\\ud83d\\\\ude00 \\\\u0001\\\\u007f\"' | jq -c '., length, "
        "utf8bytelength, explode[-1]'",
        tree,
    )
    assert result.stdout == '"café 😀 \\u0001\\u007f"\n9\n13\n127\n'
    ascii = run("printf '\"\\\\u00e9\\\\ud83d\\\\ude00\"' | jq -a .", tree)
    assert ascii.stdout == '"\\u00e9\\ud83d\\ude00"\n'


# ---- limits and faults ------------------------------------------------------------------------


def test_deeply_nested_input_is_refused_cleanly(tree: Path) -> None:
    (tree / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    result = run("jq length deep.json", tree)
    assert (result.status, result.stdout, result.fault) == (2, "", None)
    assert "Exceeds depth limit for parsing" in result.stderr
    (tree / "deep.json").unlink()
    host_still_works(tree)


def test_nesting_within_the_limit_works(tree: Path) -> None:
    (tree / "d1999.json").write_text("[" * 1999 + "1" + "]" * 1999)
    result = run("jq -c '([..] | length), (flatten | .[0]), (tojson | length)' d1999.json", tree)
    assert (result.status, result.stdout) == (0, "2000\n1\n3999\n")
    (tree / "d1999.json").unlink()


@pytest.mark.parametrize(
    "program",
    ["[repeat(1)] | length", "[1 | recurse(. + 1)] | length", "[recurse([.])] | length"],
)
def test_unbounded_recursion_is_a_jq_error_not_a_trap(tree: Path, program: str) -> None:
    result = run(f"jq -n '{program}'", tree)
    assert (result.status, result.stdout, result.fault) == (5, "", None)
    assert "recursion too deep (the sandbox's stack limit)" in result.stderr
    host_still_works(tree)


def test_a_value_built_too_deep_to_print_is_refused(tree: Path) -> None:
    result = run("jq -n 'reduce range(5000) as $i (0; [.])'", tree)
    assert (result.status, result.stdout, result.fault) == (5, "", None)
    assert "nested too deeply to print" in result.stderr


def test_a_filter_that_never_ends_meets_the_deadline(tree: Path) -> None:
    started = time.monotonic()
    result = run("jq -n 'last(range(1e18))'", tree, timeout=1.0)
    assert time.monotonic() - started < 4.0
    assert (result.status, result.fault) == (124, "deadline")
    assert "deadline of 1s exceeded" in result.stderr and "'jq'" in result.stderr
    host_still_works(tree)


def test_a_filter_that_grows_without_end_meets_the_memory_limit(tree: Path) -> None:
    result = run("jq -n '[range(1e9)] | length'", tree, timeout=30.0)
    assert (result.status, result.fault) == (125, "memory")
    assert "memory limit of 256 MiB" in result.stderr
    host_still_works(tree)


RECORD = json.dumps({"id": 123456, "name": "abcdefghij", "tags": ["x", "y"], "v": 1.5})
RECORDS = 64 * MiB // (len(RECORD) + 1)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """64 MiB of newline-delimited records."""
    root = tmp_path_factory.mktemp("jq-big")
    (root / "big.ndjson").write_text((RECORD + "\n") * RECORDS)
    (root / "config.json").write_text(json.dumps({"features": ["auth", "search"]}))
    return root


def test_64_mib_of_values_streams_within_the_memory_limit(big: Path) -> None:
    size = (big / "big.ndjson").stat().st_size
    assert 64 * MiB - 100 < size <= 64 * MiB
    result = run("jq -c .tags[1] big.ndjson | uniq -c", big, timeout=60.0)
    assert (result.status, result.fault) == (0, None), result.stderr
    assert result.stdout.split() == [str(RECORDS), '"y"']


def test_64_mib_slurped_ends_in_the_named_memory_fault(big: Path) -> None:
    result = run("jq -s length big.ndjson", big, timeout=60.0)
    assert (result.status, result.stdout, result.fault) == (125, "", "memory")
    assert "memory limit of 256 MiB a command exceeded by 'jq'" in result.stderr
    host_still_works(big)
