"""A property: jq filters drawn from a small grammar give libjq's outputs in the sandbox.

The grammar covers paths, pipes, `,`, construction, arithmetic, comparisons, `and`/`//`/`if`
and select/map/length/keys/sort/add/type, over generated JSON values; every filter runs in the
sandbox and through libjq (the PyPI bindings) and both must print the same bytes with the same
status (5 when the filter errs, after the same outputs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundskeeper import sandbox
from tests.sandbox.jq_reference import Invocation, Layout, run_reference

KEYS = ["a", "b", "c"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-50, max_value=50)
    # fractions whose shortest form libjq also prints for a literal (it keeps a literal's
    # decimal text, "0.00001" for 1e-05, where the sandbox prints the double's "1e-05")
    | st.sampled_from([0.5, -2.25, 0.125, 1.5])
    | st.text(alphabet="abcAB ,é", max_size=4),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS), children, max_size=3)
    ),
    max_leaves=10,
)

LEAVES = [
    ".", ".a", ".b", ".[0]", ".[-1]", ".[]?", ".a?", ".[1:]?", ".[:2]?", "..",
    "length?", "keys?", "type", "add?", "sort?", "not", "1", "-2", '"x"', "null", "true",
    "[]", "{}", 'has("a")?', "to_entries?", "unique?", "min?", "max?", "tostring", "tojson",
    "values", "ascii_downcase?", "[.[]? | numbers]", "flatten?", "any?", "all?",
]  # fmt: skip

leaf_filters = st.sampled_from(LEAVES)


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    two = st.tuples(children, children)
    return st.one_of(
        two.map(lambda t: f"{t[0]} | {t[1]}"),
        two.map(lambda t: f"{t[0]}, {t[1]}"),
        children.map(lambda a: f"[{a}]"),
        two.map(lambda t: f"{{a: ({t[0]}), b: ({t[1]})}}"),
        two.map(lambda t: f"({t[0]}) == ({t[1]})"),
        two.map(lambda t: f"({t[0]}) < ({t[1]})"),
        two.map(lambda t: f"({t[0]}) + ({t[1]})"),
        two.map(lambda t: f"({t[0]}) and ({t[1]})"),
        two.map(lambda t: f"({t[0]}) // ({t[1]})"),
        st.tuples(children, children, children).map(
            lambda t: f"if {t[0]} then {t[1]} else {t[2]} end"
        ),
        children.map(lambda a: f"select({a})"),
        children.map(lambda a: f"map({a})?"),
        children.map(lambda a: f"[.[]? | {a}] | sort_by(.)"),
        children.map(lambda a: f"({a})?"),
        two.map(lambda t: f"({t[0]}) as $v | [$v, ({t[1]})]"),
        # one initial value: with several, jq feeds the later ones to the source as input
        two.map(lambda t: f"reduce (.[]?) as $x ([{t[0]}]; [., $x, ({t[1]})])"),
        children.map(lambda a: f"[paths] | map({a})?"),
        children.map(lambda a: f"(.a |= ({a}))?"),
    )


filters = st.recursive(leaf_filters, _combine, max_leaves=5)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("jq-property")


@settings(max_examples=120)
@given(program=filters, value=json_values)
def test_generated_filters_match_libjq(workdir: Path, program: str, value: Any) -> None:
    (workdir / "in.json").write_text(json.dumps(value))
    result = sandbox.run(f"jq -c '{program}' in.json", workdir=workdir)
    inv = Invocation(program=program, files=["in.json"], layout=Layout(indent=""))
    ref = run_reference(inv, "", workdir)
    assert (result.status, result.stdout) == (ref.status, ref.stdout), result.stderr
