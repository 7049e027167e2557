"""Every class `fastclass` makes is what `@dataclass` makes of the same class: nothing may tell.

Each class is compared with a `@dataclass` twin built from the same annotations, defaults and
parameters: its fields, `__init__` signature and defaults, repr, equality, hash, frozen-ness at
run time, slots, match args, `replace`, `asdict`, pickling and doc.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
import re
from pathlib import Path
from typing import Any

import pytest

import groundskeeper
from groundskeeper import fastclass as fast
from groundskeeper.fastclass import fastclass

PACKAGE = Path(groundskeeper.__file__).parent
SOURCES = sorted(
    path
    for path in PACKAGE.rglob("*.py")
    if path.name != "fastclass.py" and "fastclass" in path.read_text()
)
DECORATED = sum(
    len(re.findall(r"^@(?:fastclass|_tree_node)\b", path.read_text(), re.M)) for path in SOURCES
)
for _path in SOURCES:
    importlib.import_module(
        ".".join(("groundskeeper", *_path.relative_to(PACKAGE).with_suffix("").parts))
    )
CLASSES = [cls for cls in fast.MADE if cls.__module__.startswith("groundskeeper.")]


def twin(cls: type) -> type:
    """`cls` as `@dataclass` makes it from the same annotations, defaults and parameters."""
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    space: dict[str, Any] = {
        "__annotations__": dict(inspect.get_annotations(cls)),
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
    }
    for made in dataclasses.fields(cls):
        if not (made.repr and made.compare):
            space[made.name] = dataclasses.field(
                default=made.default,
                default_factory=made.default_factory,
                repr=made.repr,
                compare=made.compare,
            )
        elif made.default is not dataclasses.MISSING:
            space[made.name] = made.default
        elif made.default_factory is not dataclasses.MISSING:
            space[made.name] = dataclasses.field(default_factory=made.default_factory)
    if not _signature_doc(cls):
        space["__doc__"] = cls.__doc__
    plain = type(cls.__name__, (), space)
    return dataclasses.dataclass(
        eq=params.eq,
        frozen=params.frozen,
        unsafe_hash=params.unsafe_hash,
        slots="__slots__" in cls.__dict__,
    )(plain)


def _signature_doc(cls: type) -> bool:
    return bool(cls.__doc__ and re.fullmatch(rf"{cls.__name__}\(.*\)", cls.__doc__, re.S))


def _fields(cls: type) -> list[tuple[object, ...]]:
    return [
        (
            f.name,
            f.type,
            f.default,
            f.default_factory,
            f.init,
            f.repr,
            f.hash,
            f.compare,
            dict(f.metadata),
            f.kw_only,
            f._field_type,
        )  # type: ignore[attr-defined]
        for f in dataclasses.fields(cls)
    ]


def test_every_decorated_class_is_checked() -> None:
    assert len(SOURCES) >= 25
    assert len(CLASSES) == DECORATED >= 80  # 24 tree nodes and the records of a hook's stop
    assert len({(c.__module__, c.__qualname__) for c in CLASSES}) == len(CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_a_fastclass_is_its_dataclass(cls: type) -> None:
    like = twin(cls)
    assert dataclasses.is_dataclass(cls)
    assert _fields(cls) == _fields(like)
    assert repr(cls.__dataclass_params__) == repr(like.__dataclass_params__)  # type: ignore[attr-defined]
    assert inspect.signature(cls) == inspect.signature(like)
    assert cls.__doc__ == like.__doc__
    assert cls.__match_args__ == like.__match_args__  # type: ignore[attr-defined]
    assert getattr(cls, "__slots__", None) == getattr(like, "__slots__", None)
    assert (cls.__hash__ is None) == (like.__hash__ is None)
    assert (cls.__eq__ is object.__eq__) == (like.__eq__ is object.__eq__)
    for method in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__"):
        ours = cls.__dict__.get(method)
        assert (ours is None) == (like.__dict__.get(method) is None), method
        if callable(ours):
            assert ours.__qualname__ == f"{cls.__qualname__}.{method}"
    names = [f.name for f in dataclasses.fields(cls)]
    values = [("value", index) for index in range(len(names))]
    ours, theirs = cls(*values), like(*values)
    assert repr(ours) == repr(theirs)
    assert hasattr(ours, "__dict__") == hasattr(theirs, "__dict__")
    assert dataclasses.asdict(ours) == dataclasses.asdict(theirs)
    required = [v for v, f in zip(values, dataclasses.fields(cls), strict=True) if _required(f)]
    assert _shown(cls(*required)) == _shown(like(*required))  # the defaults and factories
    if cls.__dataclass_params__.eq:  # type: ignore[attr-defined]
        assert ours == cls(*values)
        assert ours != theirs  # another class: never equal, as between two dataclasses
    else:
        assert ours != cls(*values)
    hashed = "__hash__" in cls.__dict__ and cls.__hash__ is not None  # by value
    assert hashed == ("__hash__" in like.__dict__ and like.__hash__ is not None)
    if hashed:
        assert hash(ours) == hash(theirs)
    compared = {f.name for f in dataclasses.fields(cls) if f.compare}
    for index, name in enumerate(names):  # every field: compared, hashed, replaced, frozen
        changed = [*values[:index], ("changed", index), *values[index + 1 :]]
        other = dataclasses.replace(ours, **{name: ("changed", index)})
        assert repr(other) == repr(dataclasses.replace(theirs, **{name: ("changed", index)}))
        assert repr(other) == repr(cls(*changed))
        if cls.__dataclass_params__.eq:  # type: ignore[attr-defined]
            assert (other != ours) == (name in compared), name
            assert other == cls(*changed), name
            assert (other == ours) == (dataclasses.replace(theirs, **{name: 0}) == theirs)
        if hashed:
            assert (hash(other) != hash(ours)) == (name in compared), name
        _same_frozenness(ours, theirs, name)
    assert ("__getstate__" in cls.__dict__) == ("__getstate__" in like.__dict__)
    if "__getstate__" in cls.__dict__:
        assert ours.__getstate__() == theirs.__getstate__()
    back = pickle.loads(pickle.dumps(ours))
    assert type(back) is cls
    assert repr(back) == repr(ours)
    with pytest.raises(TypeError):
        cls(*values, "one too many")


def _required(made: dataclasses.Field[Any]) -> bool:
    return made.default is dataclasses.MISSING and made.default_factory is dataclasses.MISSING


def _shown(value: object) -> str:
    """The repr, with the addresses of objects a default factory made left out."""
    return re.sub(r" at 0x[0-9a-f]+>", " at …>", repr(value))


def _same_frozenness(ours: object, theirs: object, name: str) -> None:
    """Assigning and deleting a field fails alike (FrozenInstanceError) or works alike."""
    seen = []
    for target in (ours, theirs):
        before = getattr(target, name)
        try:
            setattr(target, name, ("set", name))
        except dataclasses.FrozenInstanceError as error:
            assert str(error) == f"cannot assign to field {name!r}"
            with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field"):
                delattr(target, name)
            seen.append(("frozen",))
        else:
            assigned = getattr(target, name)
            delattr(target, name)
            seen.append(("assigned", assigned, _shown(getattr(target, name, "deleted"))))
            setattr(target, name, before)
        assert getattr(target, name) == before
    assert seen[0] == seen[1]


# ---- what it refuses: any class it would not make exactly as dataclass does ----------------


def _refused(build: Any, words: str) -> None:
    with pytest.raises(TypeError, match=words):
        build()


def test_a_class_beyond_it_is_refused_at_import() -> None:
    def with_base() -> None:
        class Base:
            pass

        @fastclass(frozen=True)
        class Child(Base):
            x: int

    def with_post_init() -> None:
        @fastclass
        class Checked:
            x: int

            def __post_init__(self) -> None:
                pass

    def with_own_repr() -> None:
        @fastclass
        class Shown:
            x: int

            def __repr__(self) -> str:
                return "mine"

    def with_init_false() -> None:
        @fastclass
        class Later:
            x: int = dataclasses.field(init=False)

    def with_classvar() -> None:
        @fastclass
        class Counted:
            count: ClassVar[int] = 0  # type: ignore[name-defined]  # noqa: F821

    def default_first() -> None:
        @fastclass
        class Order:
            x: int = 1
            y: int  # type: ignore[misc]

    _refused(with_base, "it has a base class")
    _refused(with_post_init, "it defines __post_init__")
    _refused(with_own_repr, "it defines __repr__")
    _refused(with_init_false, "field x has options beyond a default, repr, compare")
    _refused(with_classvar, "count is ClassVar")
    _refused(default_first, "non-default argument 'y' follows default argument")
    with pytest.raises(ValueError, match="mutable default <class 'list'> for field x"):

        @fastclass
        class Mutable:
            x: list[int] = []  # noqa: RUF012


def test_defaults_factories_and_frozen_are_read_as_dataclass_reads_them() -> None:
    made = []
    for decorate in (
        fastclass(frozen=True, slots=True),
        dataclasses.dataclass(frozen=True, slots=True),
    ):

        @decorate
        class Sample:
            x: int
            y: str = "y"
            z: list[int] = dataclasses.field(default_factory=lambda: [1])
            w: tuple[int, ...] = dataclasses.field(default=(), metadata={"m": 1})

        made.append(Sample)
    ours, theirs = made
    assert [(f.name, f.default, f.metadata) for f in dataclasses.fields(ours)] == [
        (f.name, f.default, f.metadata) for f in dataclasses.fields(theirs)
    ]
    assert repr(ours(1)) == repr(theirs(1))
    assert repr(ours(1)).endswith(".<locals>.Sample(x=1, y='y', z=[1], w=())")
    assert ours(1).z is not ours(1).z  # a new list from the factory each time
    assert inspect.signature(ours) == inspect.signature(theirs)
    assert ours.__doc__ == theirs.__doc__
    with pytest.raises(dataclasses.FrozenInstanceError):
        ours(1).x = 2  # type: ignore[misc]
    assert dataclasses.replace(ours(1), y="b") == ours(1, "b")


def test_a_repr_that_reaches_itself_stops_as_dataclass_stops() -> None:
    shown = []
    for decorate in (fastclass, dataclasses.dataclass):

        @decorate
        class Loop:
            items: list[object]

        loop = Loop([])
        loop.items.append(loop)
        shown.append(repr(loop))
    assert shown[0] == shown[1]
    assert shown[0].endswith(".<locals>.Loop(items=[...])")


def test_init_is_compiled_when_first_reached_and_is_then_dataclass_s_own() -> None:
    @fastclass(frozen=True, slots=True)
    class Late:
        x: int
        y: str = "y"

    class Sub(Late):
        __slots__ = ()

    held = Late.__dict__["__init__"]
    assert not callable(held) and type(held).__name__ == "_LazyInit"  # nothing compiled yet
    assert repr(Sub(1)).endswith(".Sub(x=1, y='y')")  # through a subclass first: Late's own
    made = Late.__dict__["__init__"]
    assert callable(made) and made.__qualname__.endswith("<locals>.Late.__init__")
    assert made.__code__.co_varnames[:3] == ("self", "x", "y")
    assert repr(Late(2, "z")).endswith(".Late(x=2, y='z')")
    assert Late.__dict__["__init__"] is made  # compiled once

    @fastclass
    class Read:
        x: int

    signature = inspect.signature(Read)  # reading it from the class compiles it too
    assert str(signature) == "(x: 'int') -> None"
    assert callable(Read.__dict__["__init__"])


def test_fields_left_out_of_the_repr_or_of_equality_are_left_out_as_dataclass_leaves_them() -> None:
    made = []
    for decorate in (
        fastclass(frozen=True, slots=True),
        dataclasses.dataclass(frozen=True, slots=True),
    ):

        @decorate
        class Sample:
            x: int
            y: str = dataclasses.field(default="y", repr=False)
            z: tuple[int, ...] = dataclasses.field(default=(), compare=False)

        made.append(Sample)
    ours, theirs = made
    assert repr(ours(1)).endswith(".<locals>.Sample(x=1, z=())")
    assert repr(ours(1, "a", (2,))) == repr(theirs(1, "a", (2,)))
    assert ours(1, "a", (2,)) == ours(1, "a", (3,))  # z is not compared
    assert ours(1, "a") != ours(1, "b")  # y is, though not shown
    assert hash(ours(1, "a", (2,))) == hash(ours(1, "a", (3,))) == hash(theirs(1, "a", (4,)))
    assert _fields(ours) == _fields(theirs)
