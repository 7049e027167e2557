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

Nor does it import dataclasses (which brings inspect, ast, dis and tokenize: ~20 ms of a
hook's start-up) until something asks for dataclass's view: `__dataclass_fields__` and
`__dataclass_params__` are made when first read, and a frozen error is dataclass's own
class, imported when raised. Its `field` and `replace` are dataclass's for these classes;
dataclass's own `field(…)` is taken too.

It covers only that: a class of its own (no base class), fields with a plain default,
`field(default=…)` or `field(default_factory=…)`, `repr=False`, `compare=False` or
`init=False` (left out of the repr, of equality and the hash, or of `__init__`'s parameters,
as dataclass leaves them), a `__post_init__` (called last, as dataclass calls it) or the
class's own `__init__` (kept, as dataclass keeps it), no `InitVar`, `ClassVar`, `KW_ONLY`,
and none of the other methods it makes written in the body. Any other class is refused at
import (`TypeError`); such classes stay on `@dataclass`. `tests/test_fastclass.py` compares
every class made with the `@dataclass` twin of the same annotations and field options.

Two differences from 3.11's `dataclass`: assigning an attribute that is not a field of a
`frozen=True, slots=True` class raises `FrozenInstanceError` here, where 3.11's method, bound
to the class it threw away, raises `TypeError` from `super()`; and a factory field's default
in `__init__`'s signature is this module's `<factory>` marker, not dataclass's (it reads
the same). Fields behave the same.
"""

from __future__ import annotations

import operator
import reprlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast, dataclass_transform, overload

if TYPE_CHECKING:
    import dataclasses

_T = TypeVar("_T")


class _Marker:
    """A sentinel that shows as dataclass's own does."""

    __slots__ = ("_shown",)

    def __init__(self, shown: str) -> None:
        self._shown = shown

    def __repr__(self) -> str:
        return self._shown


#: No default given (dataclass's `MISSING`, without importing dataclasses).
MISSING: Any = _Marker("<dataclasses._MISSING_TYPE object>")
#: The `__init__` default of a field with a factory: dataclass's `<factory>`.
_HAS_DEFAULT_FACTORY = _Marker("<factory>")

_MADE = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")
_NOT_COVERED = ("ClassVar", "InitVar", "KW_ONLY")

MADE: list[type] = []
"""Every class `fastclass` has made, in order (the equivalence test checks each one)."""

#: Each class made, with its fields (what `replace` and the dataclass attributes read).
_FIELDS: dict[type, dict[str, _Field]] = {}


class _Field:
    """A field as `fastclass` keeps it: dataclass's `Field` is made from it only when asked
    (`dataclasses.fields`, `asdict`, …), so a process that never asks never imports
    dataclasses (with the inspect, ast and dis it imports, ~20 ms of a hook's start-up)."""

    __slots__ = ("compare", "default", "default_factory", "given", "init", "repr", "type")

    def __init__(
        self,
        default: Any = MISSING,
        default_factory: Any = MISSING,
        repr: bool = True,
        compare: bool = True,
        init: bool = True,
        given: Any = None,
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.default, self.default_factory = default, default_factory
        self.repr, self.compare, self.init, self.given = repr, compare, init, given
        self.type: Any = None


@overload
def field(*, default: _T, repr: bool = True, compare: bool = True, init: bool = True) -> _T: ...


@overload
def field(
    *,
    default_factory: Callable[[], _T],
    repr: bool = True,
    compare: bool = True,
    init: bool = True,
) -> _T: ...


@overload
def field(*, repr: bool = True, compare: bool = True, init: bool = True) -> Any: ...


def field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    repr: bool = True,
    compare: bool = True,
    init: bool = True,
) -> Any:
    """`dataclasses.field` for a `fastclass`, with the options it covers."""
    return _Field(default, default_factory, repr, compare, init)


def replace(obj: _T, /, **changes: Any) -> _T:
    """`dataclasses.replace` for a `fastclass` instance (any other goes to dataclasses')."""
    fields = _FIELDS.get(type(obj))
    if fields is None:
        import dataclasses

        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    for name, kept in fields.items():
        if not kept.init:  # as dataclass's says it
            if name in changes:
                raise ValueError(
                    f"field {name} is declared with init=False, it cannot be specified with "
                    "replace()"
                )
        elif name not in changes:
            changes[name] = getattr(obj, name)
    return type(obj)(**changes)


@overload
@dataclass_transform(field_specifiers=(field,))
def fastclass(cls: type[_T], /) -> type[_T]: ...


@overload
@dataclass_transform(field_specifiers=(field,))
def fastclass(
    *, eq: bool = True, frozen: bool = False, unsafe_hash: bool = False, slots: bool = False
) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(field,))
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


def _given_field(cls: type, name: str, value: Any) -> _Field:
    """A class attribute as a field: `field(…)`, dataclass's own `Field` (kept, to be given
    back as it was), or a plain default."""
    if isinstance(value, _Field):
        return value
    loaded = sys.modules.get("dataclasses")  # a Field exists only once it is imported
    if loaded is not None and isinstance(value, loaded.Field):
        plain = (value.hash, value.kw_only)  # `repr`, `compare` and `init` are read
        if plain != (None, loaded.MISSING):
            raise _refuse(cls, f"field {name} has options beyond a default, repr, compare, init")
        default = MISSING if value.default is loaded.MISSING else value.default
        factory = MISSING if value.default_factory is loaded.MISSING else value.default_factory
        return _Field(default, factory, value.repr, value.compare, value.init, given=value)
    return _Field(default=value)


def _fields(cls: type) -> dict[str, _Field]:
    if cls.__bases__ != (object,):
        raise _refuse(cls, "it has a base class")
    for name in ("__slots__", *_MADE[1:]):  # its own __init__ and __post_init__ are kept
        if name in cls.__dict__ and not (name == "__hash__" and cls.__dict__[name] is None):
            raise _refuse(cls, f"it defines {name}")
    found: dict[str, _Field] = {}
    # a class's own annotations, as `inspect.get_annotations` reads them for a class
    for name, annotation in dict(cls.__dict__.get("__annotations__", {})).items():  # noqa: RUF063
        if any(word in str(annotation) for word in _NOT_COVERED):
            raise _refuse(cls, f"{name} is {annotation}")
        made = _given_field(cls, name, cls.__dict__.get(name, MISSING))
        if made.default is not MISSING and made.default.__class__.__hash__ is None:
            raise ValueError(  # as dataclass says it
                f"mutable default {type(made.default)} for field {name} is not allowed: "
                "use default_factory"
            )
        made.type = annotation
        found[name] = made
    return found


class _DataclassAttribute:
    """`__dataclass_fields__` or `__dataclass_params__` of a class `fastclass` made, made
    (dataclasses imported) when first read and then put in this one's place on the class."""

    __slots__ = ("_cls", "_name", "_params")

    def __init__(self, name: str, params: tuple[bool, ...]) -> None:
        self._name, self._params = name, params
        self._cls: type | None = None

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        import dataclasses

        cls = self._cls
        assert cls is not None, "read before the class was made"
        fields: dict[str, dataclasses.Field[Any]] = {}
        for name, kept in _FIELDS[cls].items():
            made = kept.given
            if made is None:
                given: dict[str, Any] = {"repr": kept.repr, "compare": kept.compare}
                if kept.default is not MISSING:
                    given["default"] = kept.default
                elif kept.default_factory is not MISSING:
                    given["default_factory"] = kept.default_factory
                made = dataclasses.field(init=kept.init, **given)
            made.name, made.type, made.kw_only = name, kept.type, False
            made._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
            fields[name] = made
        params = dataclasses._DataclassParams(True, True, *self._params)  # type: ignore[attr-defined]
        type.__setattr__(cls, "__dataclass_fields__", fields)
        type.__setattr__(cls, "__dataclass_params__", params)
        return fields if self._name == "__dataclass_fields__" else params


def _frozen(message: str) -> Exception:
    import dataclasses

    return dataclasses.FrozenInstanceError(message)


def _init_source(
    names: tuple[str, ...], kinds: dict[str, str], *, frozen: bool, post_init: bool
) -> str:
    """The class's `__init__`, dataclass's text: the only method compiled for the class.
    A field `init=False` (its kind "late-…") is no parameter: set from its default or
    factory if it has one, else left to `__post_init__`, called last as dataclass calls it."""
    params, stores, defaulted = [], [], False
    for name in names:
        kind = kinds[name]
        if kind.startswith("late-"):
            late = {"late-default": f"_dflt_{name}", "late-factory": f"_dflt_{name}()"}
            if kind in late:
                stores.append(
                    f"  _object_setattr(self,{name!r},{late[kind]})"
                    if frozen
                    else f"  self.{name}={late[kind]}"
                )
            continue
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
    if post_init:
        stores.append("  self.__post_init__()")
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
    fields: dict[str, _Field],
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
                raise _frozen(f"cannot assign to field {name!r}")
            super(cls, self).__setattr__(name, value)

        def __delattr__(self: object, name: str) -> None:
            cls = space["_cls"]
            if type(self) is cls or name in field_names:
                raise _frozen(f"cannot delete field {name!r}")
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
        late = "" if made.init else "late-"
        if made.default is not MISSING:
            kinds[name], space[f"_dflt_{name}"] = late + "default", made.default
        elif made.default_factory is not MISSING:
            kinds[name], space[f"_dflt_{name}"] = late + "factory", made.default_factory
        else:
            kinds[name] = late + "plain"
    hashed = unsafe_hash or (eq and frozen)
    own_init = "__init__" in cls.__dict__  # kept, as dataclass keeps it
    source = _init_source(names, kinds, frozen=frozen, post_init="__post_init__" in cls.__dict__)
    methods: dict[str, Any] = _methods(fields, space, eq=eq, frozen=frozen, hashed=hashed)
    for name, method in methods.items():
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        method.__module__ = cls.__module__
    if not own_init:
        methods["__init__"] = _LazyInit(source, space, f"{cls.__qualname__}.__init__")
    methods["__repr__"] = reprlib.recursive_repr()(methods["__repr__"])
    if eq and not hashed:
        methods["__hash__"] = None
    # dataclass's attributes, made when first read (`_DataclassAttribute`)
    dataclass_params = (eq, False, unsafe_hash, frozen)
    made_fields = _DataclassAttribute("__dataclass_fields__", dataclass_params)
    made_params = _DataclassAttribute("__dataclass_params__", dataclass_params)
    extra: dict[str, Any] = {
        **methods,
        "__dataclass_params__": made_params,
        "__dataclass_fields__": made_fields,
    }
    if "__match_args__" not in cls.__dict__:
        extra["__match_args__"] = tuple(n for n in names if fields[n].init)
    if not cls.__doc__:  # as `dataclass` writes it, from the signature
        extra["__doc__"] = cls.__name__ + (
            _own_signature(cls) if own_init else _signature(fields, kinds)
        )
    if slots:
        space_of_class = {
            key: value
            for key, value in cls.__dict__.items()
            if key not in ("__dict__", "__weakref__") and key not in fields
        }
        space_of_class.update(extra, __slots__=names)
        if frozen:  # what dataclass gives a frozen slotted class to pickle it by
            space_of_class.setdefault("__getstate__", _getstate(names))
            space_of_class.setdefault("__setstate__", _setstate(names))
        metaclass: type = type(cls)
        built = cast("type[_T]", metaclass(cls.__name__, cls.__bases__, space_of_class))
        built.__qualname__ = cls.__qualname__
    else:
        built = cls
        for key, value in extra.items():
            setattr(built, key, value)
        for name, kept in fields.items():  # the default stays as the class's attribute
            if kept.default is not MISSING:
                setattr(built, name, kept.default)
            elif name in cls.__dict__:  # a `field(…)` with a factory or none
                delattr(built, name)
    space["_cls"] = made_fields._cls = made_params._cls = built
    _FIELDS[built] = fields
    MADE.append(built)
    return built


def _getstate(names: tuple[str, ...]) -> Callable[[object], list[object]]:
    def _dataclass_getstate(self: object) -> list[object]:
        return [getattr(self, name) for name in names]

    return _dataclass_getstate


def _setstate(names: tuple[str, ...]) -> Callable[[object, list[object]], None]:
    def _dataclass_setstate(self: object, state: list[object]) -> None:
        for name, value in zip(names, state, strict=False):
            object.__setattr__(self, name, value)

    return _dataclass_setstate


def _annotation_text(annotation: object) -> str:
    """`inspect.formatannotation`: a string annotation (every module here postpones them)
    is its repr; anything else is left to inspect."""
    if isinstance(annotation, str):
        return repr(annotation)
    import inspect

    return inspect.formatannotation(annotation)


def _own_signature(cls: type) -> str:
    import inspect

    return str(inspect.signature(cls)).replace(" -> None", "")


def _signature(fields: dict[str, _Field], kinds: dict[str, str]) -> str:
    shown = []
    for name, made in fields.items():
        if not made.init:
            continue
        text = f"{name}: {_annotation_text(made.type)}"
        if kinds[name] == "default":
            text += f" = {made.default!r}"
        elif kinds[name] == "factory":
            text += f" = {_HAS_DEFAULT_FACTORY!r}"
        shown.append(text)
    return f"({', '.join(shown)})"
