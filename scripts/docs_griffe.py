"""A Griffe extension for the reference site (``mkdocs.yml``): Sphinx roles as links.

modelwire's docstrings are Google style with Sphinx cross-reference roles
(``:class:`~modelwire.Model```, ``:func:`stream```, ``:meth:`Agent.run```), which
Markdown would print as they are. Each role becomes an mkdocstrings cross-reference:
the name is resolved where the docstring lives (its module's imports and members, as
Python would), then linked to the page that renders it, shown as code (``~`` keeps the
last part, as in Sphinx). A name resolved to something the site does not render (a
private module) stays code without a link.

A role in a docstring the site renders (a public module's ``__all__``, and the public
members of its classes) naming nothing modelwire has is a Griffe warning, so
``mkdocs build --strict`` fails on it as on a documented parameter that does not
exist. Roles naming other libraries (``:class:`asyncio.Task```) are left as code.
"""

from __future__ import annotations

import builtins
import html
import re
from collections.abc import Iterator
from typing import Any

import griffe

PACKAGE = "modelwire"
ROLE = re.compile(
    r":(?:py:)?(?P<role>func|meth|class|exc|attr|mod|data|obj|const|type):"
    r"`(?P<tilde>~?)(?P<body>[^`]+)`"
)
# ``title <target>``
EXPLICIT = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^>]+)>$", re.S)
CALLABLE_ROLES = frozenset({"func", "meth"})


def resolve(obj: griffe.Object, target: str) -> str | None:
    """The full path ``target`` names from where ``obj`` is, or None."""
    target = target.lstrip(".")
    collection = obj.modules_collection
    head, _, rest = target.partition(".")
    paths = []
    try:
        paths.append(obj.resolve(head) + (f".{rest}" if rest else ""))
    except (griffe.NameResolutionError, griffe.AliasResolutionError):
        pass
    # An absolute path (``modelwire.errors.RateLimitError``), or a name of the class or
    # module that holds the docstring (a method's ``:meth:`other_method```).
    paths.append(target)
    scope: griffe.Object | None = obj
    while scope is not None:
        paths.append(f"{scope.path}.{target}")
        scope = scope.parent
    for path in paths:
        try:
            collection[path]
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue
        return path
    return None


def rewrite(obj: griffe.Object, text: str, *, strict: bool) -> str:
    """``text``, the docstring of ``obj``, with its roles as cross-references; with
    ``strict``, a role naming nothing in modelwire is a warning."""

    def link(match: re.Match[str]) -> str:
        body = match["body"].strip()
        explicit = EXPLICIT.match(body)
        target = explicit["target"] if explicit else body
        target = target.removesuffix("()")
        if explicit:
            shown = explicit["title"]
        else:
            shown = target.rsplit(".", 1)[-1] if match["tilde"] else target.lstrip(".")
            if match["role"] in CALLABLE_ROLES:
                shown += "()"
        code = f"<code>{html.escape(shown)}</code>"
        path = resolve(obj, target)
        if path is None:
            ours = target.startswith(f"{PACKAGE}.") or (
                "." not in target.lstrip(".") and not hasattr(builtins, target)
            )
            if strict and ours:
                griffe.logger.warning(
                    f"{obj.filepath}:{obj.lineno}: {obj.path}: cross-reference {match[0]} names nothing in {PACKAGE}"
                )
            return f"`{shown}`"
        return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

    return ROLE.sub(link, text)


def walk(obj: griffe.Object) -> Iterator[griffe.Object]:
    """``obj`` and the members it defines (not what it imports), at every depth."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias and not member.is_module and member.parent is obj:
            assert isinstance(member, griffe.Object)
            yield from walk(member)


def rendered(pkg: griffe.Module) -> set[str]:
    """The paths of the objects whose docstrings the site may show: the public modules'
    exports and their public members."""
    shown: set[str] = set()
    for module in [pkg, *modules(pkg, public=True)]:
        shown.add(module.path)
        for name in module.exports or ():
            try:
                member = module[str(name)]
                target = member.final_target if member.is_alias else member
            except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
                continue
            if not target.is_module:
                shown.update(o.path for o in walk(target) if o is target or o.is_public)
    return shown


def modules(module: griffe.Module, *, public: bool = False) -> Iterator[griffe.Module]:
    """The submodules of ``module``, at every depth (the public ones only if asked)."""
    for member in module.modules.values():
        if not member.is_alias and not (public and member.is_private):
            yield member
            yield from modules(member, public=public)


class SphinxRoles(griffe.Extension):
    """Rewrites the roles of every docstring in the package (see the module's docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != PACKAGE:
            return
        strict = rendered(pkg)
        for module in [pkg, *modules(pkg)]:
            for obj in walk(module):
                if obj.docstring is not None and ":" in obj.docstring.value:
                    obj.docstring.value = rewrite(
                        obj, obj.docstring.value, strict=obj.path in strict
                    )


class NoSlots(griffe.Extension):
    """Leaves ``__slots__`` out of the classes: how an object is stored, not its API."""

    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        if "__slots__" in cls.members:
            cls.del_member("__slots__")
