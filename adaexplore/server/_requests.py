"""A tool's parameters are the fields of its request model in tools/: their types, defaults, bounds and
descriptions come from the model, and the handler gets the model, built. The server adds only what a model
leaves unsaid and an MCP client needs: a description, a bound on what a client may send, or choices where the
model takes any string. Adding what the model already says is refused when the server is built, so that each
thing is said once."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, TypeVar, Union

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from adaexplore.store import MAX_INTEGER  # the store's largest id

__all__ = ["MAX_CODE", "MAX_INTEGER", "an_id", "takes"]

MAX_CODE = 1_000_000  # characters of a module or an error text that a client may send

Request = TypeVar("Request", bound=BaseModel)
Handler = Callable[[Context, Request], Awaitable[CallToolResult]]
Tool = Callable[..., Awaitable[CallToolResult]]


def an_id(description: str | None = None) -> FieldInfo:
    """What a parameter that names a stored record by its number adds: the bounds of an id."""
    if description is None:  # a description of None would stand in for the model's
        return Field(ge=1, le=MAX_INTEGER)
    return Field(description=description, ge=1, le=MAX_INTEGER)


def takes(**parameters: Any) -> Callable[[Handler[Any]], Tool]:
    """The handler `(ctx, request: SomeRequest)` as a tool with one parameter per name given, in that order:
    the field of that name of SomeRequest, plus what the name's value adds, `Field(...)` (a description or
    bounds the field lacks) or `Annotated[Choices, Field(...)]` (choices where the field takes any string).
    `Field()` adds nothing."""

    def tool(handler: Handler[Any]) -> Tool:
        hints = typing.get_type_hints(handler, include_extras=True)
        model: type[BaseModel] = hints["request"]
        listed = [_parameter(model, name, added) for name, added in parameters.items()]

        async def run(ctx: Context, **arguments: Any) -> CallToolResult:
            return await handler(ctx, model(**arguments))

        run.__name__ = run.__qualname__ = handler.__name__
        run.__doc__ = handler.__doc__
        run.__module__ = handler.__module__
        context = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
        # what inspect.signature, and so the SDK, reads of `run`
        signature = inspect.Signature([context, *listed], return_annotation=hints["return"])
        run.__signature__ = signature  # type: ignore[attr-defined]  # not in typeshed's function type
        run.__annotations__ = {"ctx": Context, **{p.name: p.annotation for p in listed}, "return": hints["return"]}
        return run

    return tool


def _parameter(model: type[BaseModel], name: str, added: Any) -> inspect.Parameter:
    if name not in model.model_fields:
        raise TypeError(f"{model.__name__} has no field {name!r}")
    field = model.model_fields[name]
    annotation = field.annotation
    if typing.get_origin(added) is Annotated:
        choices, added = typing.get_args(added)
        _check_narrower(f"{model.__name__}.{name}", choices, field.annotation)
        annotation = choices
    if not isinstance(added, FieldInfo):
        raise TypeError(f"{model.__name__}.{name}: add a Field(...), or Annotated[choices, Field(...)], not {added!r}")
    said = {type(bound).__name__ for bound in added.metadata} & {type(bound).__name__ for bound in field.metadata}
    if added.description is not None and field.description is not None:
        said.add("description")
    if added.default is not PydanticUndefined:
        said.add("default")
    if said:
        raise TypeError(f"{model.__name__}.{name} says its {', '.join(sorted(said))} itself: leave it to the model")
    default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[annotation, field, added]
    )


def _check_narrower(where: str, choices: Any, wide: Any) -> None:
    """`choices` (Literal values, or None) must all be values the model's own type takes."""
    values = _values(choices)
    if values is None:
        raise TypeError(f"{where}: only choices (a Literal, or None) may stand for the model's type, not {choices}")
    adapter = TypeAdapter(wide)
    for value in values:
        try:
            adapter.validate_python(value, strict=True)
        except ValidationError:
            raise TypeError(f"{where} does not take {value!r}, which the server would offer") from None


def _values(annotation: Any) -> list[Any] | None:
    if annotation is type(None):
        return [None]
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return list(typing.get_args(annotation))
    if origin in (Union, types.UnionType):
        found: list[Any] = []
        for arm in typing.get_args(annotation):
            values = _values(arm)
            if values is None:
                return None
            found += values
        return found
    return None
