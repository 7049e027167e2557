"""The shell tree's nodes are what `dataclass(slots=True, unsafe_hash=True)` makes of them:
`sandbox.tree` compiles their methods itself (a hook's cold start), and nothing may tell."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from groundskeeper.sandbox import tree

NODES = [
    cls
    for name, cls in vars(tree).items()
    if inspect.isclass(cls) and cls.__module__ == tree.__name__ and not name.startswith("_")
]


def reference(cls: type) -> type:
    """The node as the dataclass it stands for."""
    plain = type(cls.__name__, (), {"__annotations__": dict(inspect.get_annotations(cls))})
    plain.__qualname__ = cls.__qualname__
    return dataclasses.dataclass(slots=True, unsafe_hash=True)(plain)


def test_every_node_is_counted() -> None:
    assert len(NODES) == 24


@pytest.mark.parametrize("cls", NODES, ids=lambda c: c.__name__)
def test_a_node_is_its_dataclass(cls: type) -> None:
    like = reference(cls)
    names = tuple(inspect.get_annotations(cls))
    assert cls.__match_args__ == like.__match_args__ == names  # type: ignore[attr-defined]
    assert cls.__slots__ == names  # type: ignore[attr-defined]
    values = [(n, i) for i, n in enumerate(names)]
    ours, theirs = cls(*values), like(*values)
    assert repr(ours) == repr(theirs)
    assert hash(ours) == hash(theirs)
    assert ours == cls(**dict(zip(names, values, strict=True)))
    assert not hasattr(ours, "__dict__")
    assert (ours == theirs) is False  # another class: never equal
    for index, name in enumerate(names):  # every field is compared and hashed
        changed = list(values)
        changed[index] = ("changed", index)
        other = cls(*changed)
        assert other != ours, name
        assert hash(other) != hash(ours), name
        assert getattr(other, name) == ("changed", index)
    with pytest.raises(TypeError):
        cls(*values, "one too many")
    with pytest.raises(TypeError):
        cls(*values[:-1])


def test_the_doc_and_the_methods_are_the_classes_own() -> None:
    assert tree.Lit.__doc__ == "Literal text; `quoted` text is neither field-split nor globbed."
    assert tree.Word.__doc__ == reference(tree.Word).__doc__  # none of its own: the signature
    assert tree.Word.__doc__ == "Word(parts: 'tuple[Part, ...]', offset: 'int')"
    assert tree.Word.__init__.__qualname__ == "Word.__init__"
    word = tree.Word((tree.Lit("a*", quoted=False),), 0)
    assert word.literal() == "a*"
    assert word.has_glob() is True
