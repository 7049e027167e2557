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
        if not (made.repr and made.compare and made.init):
            space[made.name] = dataclasses.field(
                default=made.default,
                default_factory=made.default_factory,
                repr=made.repr,
                compare=made.compare,
                init=made.init,
            )
        elif made.default is not dataclasses.MISSING:
            space[made.name] = made.default
        elif made.default_factory is not dataclasses.MISSING:
            space[made.name] = dataclasses.field(default_factory=made.default_factory)
    if not _signature_doc(cls):
        space["__doc__"] = cls.__doc__
    for own in ("__post_init__", *(("__init__",) if _own_init(cls) else ())):
        if own in cls.__dict__:
            space[own] = cls.__dict__[own]
    plain = type(cls.__name__, (), space)
    return dataclasses.dataclass(
        eq=params.eq,
        frozen=params.frozen,
        unsafe_hash=params.unsafe_hash,
        slots="__slots__" in cls.__dict__,
    )(plain)


def _own_init(cls: type) -> bool:
    """Whether the class wrote its own `__init__` (kept), rather than fastclass making it."""
    made = cls.__dict__.get("__init__")
    if made is None or isinstance(made, fast._LazyInit):
        return False
    return bool(made.__code__.co_filename != "<string>")


def _built_after_init(cls: type) -> bool:
    """A class whose instances its own code completes (`__post_init__`, its own `__init__`,
    fields not set by `__init__`): made from values only its own callers know, so compared
    with its twin by what the classes say; the instances of such classes are compared in
    the tests below."""
    return (
        _own_init(cls)
        or "__post_init__" in cls.__dict__
        or not all(f.init for f in dataclasses.fields(cls))
    )


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
    completed = sorted(c.__qualname__ for c in CLASSES if _built_after_init(c))
    # instances: below; the sandbox's FdCalls (a process's WASI state) and Run (a command
    # line's) open files and build the interpreter in __post_init__: every sandbox test makes them
    assert completed == ["FdCalls", "Fence", "Heading", "PublicKey", "Run", "SigningKey"]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_a_fastclass_is_its_dataclass(cls: type) -> None:
    like = twin(cls)
    assert dataclasses.is_dataclass(cls)
    assert _fields(cls) == _fields(like)
    assert repr(cls.__dataclass_params__) == repr(like.__dataclass_params__)  # type: ignore[attr-defined]
    assert str(inspect.signature(cls)) == str(inspect.signature(like))  # <factory>: see fastclass
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
    if _built_after_init(cls):
        return
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

    def with_own_repr() -> None:
        @fastclass
        class Shown:
            x: int

            def __repr__(self) -> str:
                return "mine"

    def with_hash_option() -> None:
        @fastclass
        class Hashed:
            x: int = dataclasses.field(default=0, hash=True)

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
    _refused(with_own_repr, "it defines __repr__")
    _refused(with_hash_option, "field x has options beyond a default, repr, compare, init")
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
    assert str(inspect.signature(ours)) == str(inspect.signature(theirs))
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


# ---- fields made after __init__'s parameters, and a class's own __init__ -------------------


def _pair(build: Any) -> tuple[Any, Any]:
    """The class as `fastclass` makes it with its `field`, and as dataclass does with its."""
    return build(fastclass, fast.field), build(dataclasses.dataclass, dataclasses.field)


def test_fields_set_by_post_init_or_by_their_default_are_set_as_dataclass_sets_them() -> None:
    def build(decorate: Any, field: Any) -> Any:
        @decorate(frozen=True)
        class Key:
            raw: bytes
            size: int = field(init=False, repr=False, compare=False)
            seen: tuple[int, ...] = field(init=False, default=())
            kept: list[int] = field(init=False, default_factory=list, compare=False)

            def __post_init__(self) -> None:
                if not self.raw:
                    raise ValueError("empty")
                object.__setattr__(self, "size", len(self.raw))

        return Key

    ours, theirs = _pair(build)
    assert _fields(ours) == _fields(theirs)
    assert (
        str(inspect.signature(ours)) == str(inspect.signature(theirs)) == "(raw: 'bytes') -> None"
    )
    assert ours.__doc__ == theirs.__doc__ == "Key(raw: 'bytes')"
    assert ours.__match_args__ == theirs.__match_args__ == ("raw",)
    one, two = ours(b"ab"), theirs(b"ab")
    assert (one.size, one.seen, one.kept) == (two.size, two.seen, two.kept) == (2, (), [])
    assert repr(one).endswith(".Key(raw=b'ab', seen=(), kept=[])")
    assert repr(one).rsplit(".", 1)[1] == repr(two).rsplit(".", 1)[1]
    assert one == ours(b"ab") and hash(one) == hash(ours(b"ab")) == hash(two)
    assert ours(b"ab").kept is not one.kept  # a new list each time
    with pytest.raises(ValueError, match="empty"):
        ours(b"")
    with pytest.raises(TypeError):
        ours(b"ab", 2)
    assert fast.replace(one, raw=b"abc").size == 3
    with pytest.raises(ValueError, match="field size is declared with init=False") as held:
        fast.replace(one, size=3)
    with pytest.raises(ValueError) as theirs_held:
        dataclasses.replace(two, size=3)
    assert str(held.value) == str(theirs_held.value)


def test_a_class_s_own_init_is_kept_as_dataclass_keeps_it() -> None:
    def build(decorate: Any, field: Any) -> Any:
        @decorate(frozen=True, eq=False)
        class Node:
            """A node."""

            name: str
            size: int = field(init=False)
            parts: tuple[str, ...] = field(default=(), repr=False)

            def __init__(self, name: str, parts: tuple[str, ...] = ()) -> None:
                self.__dict__.update(name=name, size=len(parts), parts=parts)

        return Node

    ours, theirs = _pair(build)
    assert ours.__dict__["__init__"].__qualname__.endswith("Node.__init__")
    assert _fields(ours) == _fields(theirs)
    assert ours.__doc__ == theirs.__doc__ == "A node."
    one, two = ours("n", ("a", "b")), theirs("n", ("a", "b"))
    assert repr(one).rsplit(".", 1)[1] == repr(two).rsplit(".", 1)[1] == "Node(name='n', size=2)"
    assert one != ours("n", ("a", "b")) and one == one  # eq=False: identity
    _same_frozenness(one, two, "name")


def test_a_process_that_never_asks_for_dataclass_s_view_never_imports_dataclasses() -> None:
    # a hook's start-up: making, building, comparing, replacing and refusing to change a
    # record imports neither dataclasses nor the inspect, ast and dis it brings
    import subprocess
    import sys

    script = """
from __future__ import annotations

import sys
from groundskeeper.fastclass import fastclass, field, replace

@fastclass(frozen=True, slots=True)
class Point:
    x: int
    tags: tuple[str, ...] = field(default=(), compare=False)
    size: int = field(init=False, default=0)

one = replace(Point(1, ("a",)), x=2)
assert (one.x, one.tags, one == Point(2)) == (2, ("a",), True), one
assert repr(one) == "Point(x=2, tags=('a',), size=0)", repr(one)
before = sorted(m for m in ("dataclasses", "inspect", "ast", "dis") if m in sys.modules)
try:
    one.x = 3
except AttributeError as error:
    refused = type(error).__name__
print(before, refused, sorted(f.name for f in __import__("dataclasses").fields(one)))
"""
    proc = subprocess.run(
        [sys.executable, "-I", "-c", script],  # the installed groundskeeper: this tree
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[] FrozenInstanceError ['size', 'tags', 'x']"


def test_the_classes_their_own_code_completes_behave_as_their_dataclasses() -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from groundskeeper.plan.org import parse_plan
    from groundskeeper.record.keys import PublicKey, SigningKey
    from groundskeeper.sandbox.fence import Fence

    key = SigningKey(Ed25519PrivateKey.from_private_bytes(bytes(32)))
    raw = key.public.raw
    assert repr(key) == f"SigningKey(public=PublicKey(raw={raw!r}))"
    assert PublicKey(raw) == key.public and hash(PublicKey(raw)) == hash(key.public)
    with pytest.raises(ValueError, match="32 bytes, not 3"):
        PublicKey(b"abc")
    with pytest.raises(dataclasses.FrozenInstanceError):
        key.public.raw = b""  # type: ignore[misc]
    fence = Fence(hidden=frozenset({(1, 2)}), hidden_files=frozenset({(1, 3)}))
    assert fence.hidden_inodes == frozenset({2, 3})
    assert fence == Fence(hidden=frozenset({(1, 2)}), hidden_files=frozenset({(1, 3)}))
    assert "hidden_inodes=frozenset({2, 3})" in repr(fence)
    heading = parse_plan("* TODO A\n  :PROPERTIES:\n  :ID: a\n  :END:\n").roots[0]
    assert (heading.task_id, heading.keyword) == ("a", "TODO")
    assert heading != parse_plan("* TODO A\n  :PROPERTIES:\n  :ID: a\n  :END:\n").roots[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        heading.title = "B"  # type: ignore[misc]
    assert repr(heading).startswith("Heading(level=1, title='A', keyword='TODO'")
