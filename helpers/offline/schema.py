"""Plumbing: the Messages API's request shapes, read from the anthropic SDK's own request types, checked as the API does.

The SDK's `TypedDict` request types are generated from the API's OpenAPI description, so they list every field the
API accepts, which ones are required, and the literal values each may take. `spec_of` compiles such a type once into
a small tree of `Spec` nodes; `Spec.check(value, path)` walks a JSON body and raises `ShapeError` with the API's
wording (the API validates with pydantic: "Field required", "Extra inputs are not permitted", "Input should be a valid
string", "Input tag 'x' found using 'type' does not match any of the expected tags: ..."). Numbers are read in
pydantic's lax mode, as the API reads them: an integer field takes 3, 3.0 and "3", not 3.5.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping, Sequence

import typing_extensions

__all__ = ["Spec", "ShapeError", "spec_of", "Obj", "Union_"]


class ShapeError(ValueError):
    """A body that does not fit the request type: `path` ("messages.0.content.0.text") and the API's message."""

    def __init__(self, path: tuple | str, message: str):
        path = path if isinstance(path, str) else ".".join(str(p) for p in path)
        super().__init__(f"{path}: {message}" if path else message)
        self.path, self.detail = path, message


def _join(path: tuple, key) -> tuple:
    return (*path, key)  # joined into "a.b.c" only when an error is raised


def _quote(values) -> str:
    quoted = [repr(v) if isinstance(v, str) else str(v) for v in values]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


class Spec:
    """A compiled field type; `check(value, path)` returns nothing and raises ShapeError (`path`: a tuple of keys)."""

    expect = "a valid value"

    def check(self, value, path: tuple) -> None:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError


class Any_(Spec):
    def check(self, value, path: tuple) -> None:
        return None


class Str(Spec):
    expect = "a valid string"

    def check(self, value, path: tuple) -> None:
        if not isinstance(value, str):
            raise ShapeError(path, "Input should be a valid string")


class Bool(Spec):
    expect = "a valid boolean"

    def check(self, value, path: tuple) -> None:
        if isinstance(value, bool) or value in (0, 1) and not isinstance(value, float):
            return
        if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "on", "off", "0", "1"):
            return
        raise ShapeError(path, "Input should be a valid boolean")


class Int(Spec):
    expect = "a valid integer"

    def check(self, value, path: tuple) -> None:
        if isinstance(value, bool) or isinstance(value, int):
            return
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")) or not value.is_integer():
                raise ShapeError(path, "Input should be a valid integer, got a number with a fractional part")
            return
        if isinstance(value, str):
            try:
                int(value.strip())
                return
            except ValueError:
                raise ShapeError(
                    path, "Input should be a valid integer, unable to parse string as an integer"
                ) from None
        raise ShapeError(path, "Input should be a valid integer")


class Num(Spec):
    expect = "a valid number"

    def check(self, value, path: tuple) -> None:
        if isinstance(value, (int, float)):
            return
        if isinstance(value, str):
            try:
                float(value.strip())
                return
            except ValueError:
                raise ShapeError(path, "Input should be a valid number, unable to parse string as a number") from None
        raise ShapeError(path, "Input should be a valid number")


class Null(Spec):
    expect = "None"

    def check(self, value, path: tuple) -> None:
        if value is not None:
            raise ShapeError(path, "Input should be None")


class Lit(Spec):
    def __init__(self, values: tuple):
        self.values = values
        self.expect = _quote(values)

    def check(self, value, path: tuple) -> None:
        if isinstance(value, bool) or value not in self.values:
            raise ShapeError(path, f"Input should be {self.expect}")


def _fits(spec: Spec, value, path: tuple) -> bool:
    try:
        spec.check(value, path)
        return True
    except ShapeError:
        return False


class List_(Spec):
    expect = "a valid list"

    def __init__(self, item: Spec):
        self.item = item

    def check(self, value, path: tuple) -> None:
        if not isinstance(value, list):
            raise ShapeError(path, "Input should be a valid list")
        for i, item in enumerate(value):
            self.item.check(item, _join(path, i))


class Dict_(Spec):
    expect = "a valid dictionary"

    def __init__(self, value: Spec):
        self.value = value

    def check(self, value, path: tuple) -> None:
        if not isinstance(value, dict):
            raise ShapeError(path, "Input should be a valid dictionary")
        for key, item in value.items():
            self.value.check(item, _join(path, key))


class Obj(Spec):
    """A TypedDict: its fields (name -> (required, Spec)); any other key is an extra input."""

    expect = "a valid dictionary"

    def __init__(self, name: str):
        self.name = name
        self.fields: dict[str, tuple[bool, Spec]] = {}
        self.extra_ok = False
        self._required: list[str] | None = None  # computed on first use (fields are filled after __init__)

    @property
    def required(self) -> list[str]:
        if self._required is None:
            self._required = [key for key, (req, _) in self.fields.items() if req]
        return self._required

    def literal(self, field: str) -> tuple[tuple, bool] | None:
        """(values, required) when `field` is a literal (`type: Literal["text"]`, `role: Literal["user"]`)."""
        entry = self.fields.get(field)
        if entry is None:
            return None
        required, spec = entry
        if isinstance(spec, Union_):  # Optional[Literal["custom"]]
            lits = [o for o in spec.options if isinstance(o, Lit)]
            spec, required = (lits[0], False) if len(lits) == 1 else (spec, required)
        if isinstance(spec, Lit):
            return spec.values, required
        return None

    def check(self, value, path: tuple) -> None:
        if not isinstance(value, dict):
            raise ShapeError(path, "Input should be a valid dictionary")
        for key in self.required:
            if key not in value:
                raise ShapeError(_join(path, key), "Field required")
        for key, item in value.items():
            field = self.fields.get(key)
            if field is None:
                if self.extra_ok:
                    continue
                raise ShapeError(_join(path, key), "Extra inputs are not permitted")
            field[1].check(item, _join(path, key))


class Union_(Spec):
    """Union[...]. Objects told apart by a one-value literal field are a tagged union: by `type` (the tag joins the
    error path, as in the API's messages: `messages.0.content.0.image.source...`) or by `role`; an object whose tag
    is optional (`tools`: a custom tool may omit `type`) is the default. Otherwise the first option that fits."""

    def __init__(self, options: list[Spec]):
        self.options = options
        objs = [o for o in options if isinstance(o, Obj)]
        self.key: str | None = None
        self.loose = [o for o in options if isinstance(o, (Dict_, Any_))]  # options a dict may fit whatever its tag
        self.by_tag: dict[object, Obj] = {}
        self.default: Obj | None = None
        for key in ("type", "role"):
            tagged = [(o, o.literal(key)) for o in objs]
            if len(objs) > 1 and all(t is not None for _, t in tagged):
                self.key = key
                for o, (tags, required) in tagged:
                    for tag in tags:
                        if tag not in self.by_tag or self.by_tag[tag].extra_ok:
                            self.by_tag[tag] = o
                    if not required:
                        self.default = self.default or o
                break
        others = [o for o in options if not isinstance(o, Obj)]
        self.expect = " or ".join(dict.fromkeys(o.expect for o in [*others, *objs[:1]]))
        self.takes_str = any(isinstance(o, (Str, Any_)) for o in options)

    def check(self, value, path: tuple) -> None:
        if self.takes_str and type(value) is str:  # the common case (string content), decided at once
            return
        if isinstance(value, dict) and self.key:
            try:
                self._tagged(value, path)
            except ShapeError:
                if not any(_fits(o, value, path) for o in self.loose):
                    raise
            return
        self._first_fit(value, path)

    def _tagged(self, value: dict, path: tuple) -> None:
        tag = value.get(self.key)
        if self.key not in value and self.default is not None:
            self.default.check(value, _join(path, self.default.literal(self.key)[0][0]))
            return
        target = self.by_tag.get(tag) if isinstance(tag, (str, int)) and not isinstance(tag, bool) else None
        if target is None:
            if self.key not in value:
                raise ShapeError(_join(path, self.key), "Field required")
            if self.key == "role":
                raise ShapeError(_join(path, "role"), f"Input should be {_quote(tuple(self.by_tag))}")
            tags = ", ".join(repr(t) for t in self.by_tag)
            raise ShapeError(
                path, f"Input tag {tag!r} found using '{self.key}' does not match any of the expected tags: {tags}"
            )
        target.check(value, _join(path, tag) if self.key == "type" else path)

    def _first_fit(self, value, path: tuple) -> None:
        """The first option that fits; else the error of the first option of the value's own kind (a dict's
        object, a list's list), which says best what is wrong inside it."""
        own: ShapeError | None = None
        for option in self.options:
            try:
                option.check(value, path)
                return
            except ShapeError as err:
                same_kind = (isinstance(option, Obj) and isinstance(value, dict)) or (
                    isinstance(option, List_) and isinstance(value, list)
                )
                own = own or (err if same_kind else None)
        raise own or ShapeError(path, f"Input should be {self.expect}")


# ---------------------------------------------------------------------------- compiling SDK types

_CACHE: dict[object, Spec] = {}
_ORIGIN_LIST = (list, Iterable, Sequence)  # get_origin(typing.List[X]) is list, of Iterable[X] Iterable


def _is_typeddict(tp) -> bool:
    return isinstance(tp, type) and typing_extensions.is_typeddict(tp)


def spec_of(tp) -> Spec:
    """The Spec of an SDK request type (compiled once, shared)."""
    key = tp
    try:
        hit = _CACHE.get(key)
    except TypeError:
        hit, key = None, id(tp)
    if hit is not None:
        return hit
    spec = _compile(tp)
    try:
        _CACHE[key] = spec
    except TypeError:
        pass
    return spec


def _compile(tp) -> Spec:
    origin = typing_extensions.get_origin(tp)
    args = typing_extensions.get_args(tp)
    if origin in (typing_extensions.Required, typing_extensions.NotRequired, typing.Annotated):
        return spec_of(args[0])
    if origin is typing_extensions.Literal or origin is typing.Literal:
        return Lit(tuple(args))
    if origin in (typing.Union, types.UnionType):
        options = [spec_of(a) for a in args]
        return options[0] if len(options) == 1 else Union_(options)
    if origin in _ORIGIN_LIST or (isinstance(origin, type) and issubclass(origin, Sequence) and origin is not str):
        return List_(spec_of(args[0]) if args else Any_())
    if origin in (dict, Mapping) or (isinstance(origin, type) and issubclass(origin, Mapping)):
        return Dict_(spec_of(args[1]) if len(args) == 2 else Any_())
    if getattr(tp, "__name__", "") == "SequenceNotStr" or getattr(origin, "__name__", "") == "SequenceNotStr":
        return List_(spec_of(args[0]) if args else Any_())
    if tp is str:
        return Str()
    if tp is bool:
        return Bool()
    if tp is int:
        return Int()
    if tp is float:
        return Num()
    if tp is type(None):
        return Null()
    if _is_typeddict(tp):
        obj = Obj(tp.__name__)
        _CACHE[tp] = obj  # recursive types (tool results holding blocks) meet themselves here
        hints = typing_extensions.get_type_hints(tp, include_extras=True)
        for name, hint in hints.items():
            required = typing_extensions.get_origin(hint) is typing_extensions.Required
            obj.fields[name] = (required, spec_of(hint))
        return obj
    fields = getattr(tp, "model_fields", None)
    if isinstance(fields, dict):  # a response model (the SDK lets a response block be sent back): lenient
        obj = Obj(tp.__name__)
        obj.extra_ok = True
        _CACHE[tp] = obj
        for name, info in fields.items():
            ann = info.annotation
            if name == "type":
                obj.fields[name] = (True, spec_of(ann))
            else:
                obj.fields[name] = (False, Any_())
        return obj
    return Any_()
