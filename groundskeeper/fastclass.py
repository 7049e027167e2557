"""`fastclass`: what `dataclasses.dataclass` makes of a plain record class, made cheaply.

A hook is a fresh process at every stop of an agent, and creating its ~65 dataclasses was the
largest single part of its start-up: Python 3.11's `dataclass` compiles each generated method
in its own `exec`, and `slots=True` makes the class twice. `fastclass` gives the class the same
things — `__init__` with defaults and default factories, `__repr__`, `__eq__`, `__hash__` by
dataclass's rules, frozen `__setattr__`/`__delattr__` raising `dataclasses.FrozenInstanceError`,
`__slots__` (with the pickling methods of a frozen slotted dataclass), `__match_args__`, the
signature `__doc__`, and real `__dataclass_fields__`/`__dataclass_params__`, so that
`dataclasses.fields`, `replace`, `asdict` and `is_dataclass` work — making the class once and
compiling one method, `__init__` (dataclass's own text), in one `exec` when it is first
reached. The other methods are closures over the field names that compare, hash and show the
same tuples with the same words: compiling them was most of the cost (~0.1 ms a class
instead of ~0.5 ms).

It covers only that: a class of its own (no base class), fields with a plain default,
`field(default=…)` or `field(default_factory=…)`, `repr=False` or `compare=False` (left out
of the repr, or of equality and the hash, as dataclass leaves them), no `__post_init__`,
`InitVar`, `ClassVar`, `KW_ONLY`, and none of the methods it makes written in the body. Any
other class is refused at import (`TypeError`); such classes stay on `@dataclass`.
`tests/test_fastclass.py` compares every class made with the `@dataclass` twin of the same
annotations and field options.

One difference from 3.11's `dataclass(frozen=True, slots=True)`: assigning an attribute that
is not a field raises `FrozenInstanceError` here, where 3.11's method, bound to the class it
threw away, raises `TypeError` from `super()`. Fields behave the same.
"""

from __future__ import annotations

import dataclasses
import inspect
import operator
import reprlib
from collections.abc import Callable
from typing import Any, TypeVar, cast, dataclass_transform, overload

_T = TypeVar("_T")

# dataclasses' own markers, so `fields()`, signatures and pickles are the same as its classes'.
_FIELD = dataclasses._FIELD  # type: ignore[attr-defined]
_HAS_DEFAULT_FACTORY = dataclasses._HAS_DEFAULT_FACTORY  # type: ignore[attr-defined]
_PARAMS = dataclasses._DataclassParams  # type: ignore[attr-defined]
_GETSTATE = dataclasses._dataclass_getstate  # type: ignore[attr-defined]
_SETSTATE = dataclasses._dataclass_setstate  # type: ignore[attr-defined]

_MADE = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")
_NOT_COVERED = ("ClassVar", "InitVar", "KW_ONLY")

MADE: list[type] = []
"""Every class `fastclass` has made, in order (the equivalence test checks each one)."""


@overload
@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def fastclass(cls: type[_T], /) -> type[_T]: ...


@overload
@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def fastclass(
    *, eq: bool = True, frozen: bool = False, unsafe_hash: bool = False, slots: bool = False
) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def fastclass(
    cls: type[_T] | None = None,
    /,
    *,
    eq: bool = True,
    frozen: bool = False,
    unsafe_hash: bool = False,
    slots: bool = False,
) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """`@dataclass(eq=…, frozen=…, unsafe_hash=…, slots=…)` for the classes it covers (see
    the module), refusing any other at import."""

    def wrap(cls: type[_T]) -> type[_T]:
        return _build(cls, eq=eq, frozen=frozen, unsafe_hash=unsafe_hash, slots=slots)

    return wrap if cls is None else wrap(cls)


def _refuse(cls: type, why: str) -> TypeError:
    return TypeError(f"fastclass does not cover {cls.__qualname__}: {why}; use @dataclass")


def _fields(cls: type) -> dict[str, dataclasses.Field[Any]]:
    if cls.__bases__ != (object,):
        raise _refuse(cls, "it has a base class")
    for name in ("__post_init__", "__slots__", *_MADE):
        if name in cls.__dict__ and not (name == "__hash__" and cls.__dict__[name] is None):
            raise _refuse(cls, f"it defines {name}")
    found: dict[str, dataclasses.Field[Any]] = {}
    for name, annotation in inspect.get_annotations(cls).items():
        if any(word in str(annotation) for word in _NOT_COVERED):
            raise _refuse(cls, f"{name} is {annotation}")
        value = cls.__dict__.get(name, dataclasses.MISSING)
        if isinstance(value, dataclasses.Field):
            made = value
            plain = (made.init, made.hash, made.kw_only)  # `repr` and `compare` are read
            if plain != (True, None, dataclasses.MISSING):
                raise _refuse(cls, f"field {name} has options beyond a default, repr, compare")
        else:
            made = dataclasses.field(default=value)
        if made.default is not dataclasses.MISSING and made.default.__class__.__hash__ is None:
            raise ValueError(  # as dataclass says it
                f"mutable default {type(made.default)} for field {name} is not allowed: "
                "use default_factory"
            )
        made.name, made.type, made.kw_only = name, annotation, False
        made._field_type = _FIELD  # type: ignore[attr-defined]
        found[name] = made
    return found


def _init_source(names: tuple[str, ...], kinds: dict[str, str], *, frozen: bool) -> str:
    """The class's `__init__`, dataclass's text: the only method compiled for the class."""
    params, stores, defaulted = [], [], False
    for name in names:
        kind = kinds[name]
        if kind == "plain" and defaulted:
            raise TypeError(f"non-default argument {name!r} follows default argument")
        defaulted = defaulted or kind != "plain"
        default = {"plain": "", "default": f"=_dflt_{name}", "factory": "=_HAS_DEFAULT_FACTORY"}
        params.append(f"{name}:_type_{name}{default[kind]}")
        value = f"_dflt_{name}() if {name} is _HAS_DEFAULT_FACTORY else {name}"
        value = value if kind == "factory" else name
        stores.append(
            f"  _object_setattr(self,{name!r},{value})" if frozen else f"  self.{name}={value}"
        )
    return "\n".join(
        [f"def __init__(self, {', '.join(params)}) -> _return_type:", *(stores or ["  pass"])]
    )


def _getter(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    """The tuple of the fields `names` of an instance."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        one = operator.attrgetter(names[0])
        return lambda self: (one(self),)
    return lambda self: ()


def _methods(
    fields: dict[str, dataclasses.Field[Any]],
    space: dict[str, Any],
    *,
    eq: bool,
    frozen: bool,
    hashed: bool,
) -> dict[str, Any]:
    """`__repr__`, `__eq__`, `__hash__`, `__setattr__` and `__delattr__` as dataclass's text
    makes them: the same tuples of fields shown (`repr`), compared and hashed (`compare`),
    the same words. They are closures over the field names, not compiled: compiling was most
    of a class's cost. `space["_cls"]` is the class, once made."""
    names = tuple(fields)
    shown_names = tuple(n for n, f in fields.items() if f.repr)
    shown_key = _getter(shown_names)
    key = _getter(tuple(n for n, f in fields.items() if f.compare))

    def __repr__(self: object) -> str:
        shown = ", ".join([f"{n}={v!r}" for n, v in zip(shown_names, shown_key(self), strict=True)])
        return f"{self.__class__.__qualname__}({shown})"

    made: dict[str, Any] = {"__repr__": __repr__}
    if eq:

        def __eq__(self: object, other: object) -> bool:
            if other.__class__ is self.__class__:
                return key(self) == key(other)
            return NotImplemented

        made["__eq__"] = __eq__
    if hashed:

        def __hash__(self: object) -> int:
            return hash(key(self))

        made["__hash__"] = __hash__
    if frozen:
        field_names = frozenset(names)

        def __setattr__(self: object, name: str, value: object) -> None:
            cls = space["_cls"]
            if type(self) is cls or name in field_names:
                raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
            super(cls, self).__setattr__(name, value)

        def __delattr__(self: object, name: str) -> None:
            cls = space["_cls"]
            if type(self) is cls or name in field_names:
                raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
            super(cls, self).__delattr__(name)

        made["__setattr__"], made["__delattr__"] = __setattr__, __delattr__
    return made


class _LazyInit:
    """The class's `__init__` until it is first reached: compiled then (a hook's start-up
    makes many classes a call never instantiates, and compiling was most of a class's cost)
    and put in its place on the class, so that what is reached is dataclass's function
    itself. Reading `__init__` from the class reaches it too (`inspect.signature`, `help`)."""

    __slots__ = ("__qualname__", "_source", "_space")

    def __init__(self, source: str, space: dict[str, Any], qualname: str) -> None:
        self._source, self._space, self.__qualname__ = source, space, qualname

    def made(self) -> Callable[..., None]:
        """The compiled `__init__`, now on the class in this one's place."""
        space = self._space
        cls = space["_cls"]
        found = cls.__dict__.get("__init__")
        if found is not self:  # made already (by another thread, say)
            return cast("Callable[..., None]", found)
        # The source holds only the class's own field names. `dont_inherit`: this module's
        # `from __future__ import annotations` would turn `_type_x` into the string "_type_x".
        exec(compile(self._source, "<string>", "exec", dont_inherit=True), space)
        init = space["__init__"]
        init.__qualname__, init.__module__ = self.__qualname__, cls.__module__
        type.__setattr__(cls, "__init__", init)
        return cast("Callable[..., None]", init)

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        init = self.made()
        return init if instance is None else init.__get__(instance, owner)


def _build(cls: type[_T], *, eq: bool, frozen: bool, unsafe_hash: bool, slots: bool) -> type[_T]:
    fields = _fields(cls)
    names = tuple(fields)
    kinds: dict[str, str] = {}
    space: dict[str, Any] = {
        "_object_setattr": object.__setattr__,
        "_HAS_DEFAULT_FACTORY": _HAS_DEFAULT_FACTORY,
        "_return_type": None,
        "__builtins__": __builtins__,
        "__name__": cls.__module__,  # the methods' `__module__`, as dataclass's
    }
    for name, made in fields.items():
        space[f"_type_{name}"] = made.type
        if made.default is not dataclasses.MISSING:
            kinds[name], space[f"_dflt_{name}"] = "default", made.default
        elif made.default_factory is not dataclasses.MISSING:
            kinds[name], space[f"_dflt_{name}"] = "factory", made.default_factory
        else:
            kinds[name] = "plain"
    hashed = unsafe_hash or (eq and frozen)
    source = _init_source(names, kinds, frozen=frozen)
    methods: dict[str, Any] = _methods(fields, space, eq=eq, frozen=frozen, hashed=hashed)
    for name, method in methods.items():
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        method.__module__ = cls.__module__
    methods["__init__"] = _LazyInit(source, space, f"{cls.__qualname__}.__init__")
    methods["__repr__"] = reprlib.recursive_repr()(methods["__repr__"])
    if eq and not hashed:
        methods["__hash__"] = None
    params = _PARAMS(True, True, eq, False, unsafe_hash, frozen)
    extra: dict[str, Any] = {
        **methods,
        "__dataclass_params__": params,
        "__dataclass_fields__": fields,
    }
    if "__match_args__" not in cls.__dict__:
        extra["__match_args__"] = names
    if not cls.__doc__:  # as `dataclass` writes it, from the signature
        extra["__doc__"] = cls.__name__ + str(_signature(fields, kinds))
    if slots:
        space_of_class = {
            key: value
            for key, value in cls.__dict__.items()
            if key not in ("__dict__", "__weakref__") and key not in fields
        }
        space_of_class.update(extra, __slots__=names)
        if frozen:
            space_of_class.setdefault("__getstate__", _GETSTATE)
            space_of_class.setdefault("__setstate__", _SETSTATE)
        metaclass: type = type(cls)
        built = cast("type[_T]", metaclass(cls.__name__, cls.__bases__, space_of_class))
        built.__qualname__ = cls.__qualname__
    else:
        built = cls
        for key, value in extra.items():
            setattr(built, key, value)
        for name, field in fields.items():  # the default stays as the class's attribute
            if field.default is not dataclasses.MISSING:
                setattr(built, name, field.default)
            elif isinstance(cls.__dict__.get(name), dataclasses.Field):
                delattr(built, name)
    space["_cls"] = built
    MADE.append(built)
    return built


def _signature(fields: dict[str, dataclasses.Field[Any]], kinds: dict[str, str]) -> str:
    shown = []
    for name, made in fields.items():
        text = f"{name}: {inspect.formatannotation(made.type)}"
        if kinds[name] == "default":
            text += f" = {made.default!r}"
        elif kinds[name] == "factory":
            text += f" = {_HAS_DEFAULT_FACTORY!r}"
        shown.append(text)
    return f"({', '.join(shown)})"
