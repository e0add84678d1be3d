"""Where a transform reference may lead, decided before any code runs.

A spec author writes YAML and may keep Python beside it; the platform imports that Python with its own
credentials. So a reference resolves only to

- a file inside the spec's own folder (`file.py:f`, `module:f`, `package.sub:f`), real path included:
  no `..`, no absolute path, no link leading out of the folder; or
- a module of the project's packages (`transform_packages()`: the platform's distribution and the
  packages named in `BACKFILL_PLATFORM_TRANSFORM_PACKAGES`), found by `importlib.util.find_spec`,
  which imports the module's parent packages (the project's) but not the module itself;

and the file's source must bind the name at module level as a function (`def`, an import, or an
assignment from a call or a name; not a literal, a class or nothing) — read with `ast`, not executed.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

PACKAGES_ENV = "BACKFILL_PLATFORM_TRANSFORM_PACKAGES"
DISTRIBUTION = "backfill_platform"
MAX_SOURCE_BYTES = 4 << 20


class TransformError(ValueError):
    """A transform that cannot be resolved, imported or is not a function."""


def transform_packages() -> set[str]:
    """Top-level packages whose modules a transform may name: the platform distribution's own (its
    demo and its tests' transforms) and those a team lists in BACKFILL_PLATFORM_TRANSFORM_PACKAGES."""
    packages = {"backfill_platform"}
    try:
        top_level = importlib.metadata.distribution(DISTRIBUTION).read_text("top_level.txt") or ""
        packages |= {line.strip() for line in top_level.splitlines() if line.strip()}
    except importlib.metadata.PackageNotFoundError:
        pass
    listed = os.environ.get(PACKAGES_ENV, "").replace(",", os.pathsep).split(os.pathsep)
    return packages | {name.strip() for name in listed if name.strip()}


@dataclass(frozen=True)
class Located:
    """A module found without running it: its source file and how to load it."""

    source: Path
    beside_spec: bool  # a file of the spec's folder (loaded under a synthetic name)
    package_dir: Path | None = None  # the spec-folder package whose submodule it is
    module: str = ""  # an importable module's name, or the submodule's path below `package_dir`

    def load(self, load_file: Callable[[Path, Path | None], ModuleType]) -> ModuleType:
        if not self.beside_spec:
            return importlib.import_module(self.module)
        if self.package_dir is None:
            return load_file(self.source, None)
        root = load_file(self.package_dir / "__init__.py", self.package_dir)
        return importlib.import_module(f"{root.__name__}.{self.module}") if self.module else root


def locate(target: str, base: Path | None) -> Located:
    """Where `target` (a `path.py` or a dotted module) leads, refusing anything outside the project."""
    if target.endswith(".py"):
        if base is None:
            raise TransformError(f"transform file {target!r} needs the spec file's folder to resolve against")
        return Located(_inside(base, target), beside_spec=True)
    top, _, rest = target.partition(".")
    if base is not None and (base / top / "__init__.py").is_file():
        package = _inside(base, f"{top}/__init__.py").parent
        if not rest:
            return Located(package / "__init__.py", beside_spec=True, package_dir=package)
        sub = rest.replace(".", "/")
        for candidate in (f"{top}/{sub}.py", f"{top}/{sub}/__init__.py"):
            if (base / candidate).is_file():
                return Located(_inside(base, candidate), beside_spec=True, package_dir=package, module=rest)
        raise TransformError(f"module {target!r}: no {top}/{sub}.py in the spec's folder {base}")
    if base is not None and not rest and (base / f"{top}.py").is_file():
        return Located(_inside(base, f"{top}.py"), beside_spec=True)
    allowed = transform_packages()
    if top not in allowed:
        where = f"beside the spec in {base} nor " if base is not None else ""
        raise TransformError(
            f"module {target!r} is neither {where}in the project's packages {sorted(allowed)} "
            f"(a team lists its own in {PACKAGES_ENV})"
        )
    try:
        found = importlib.util.find_spec(target)
    except (ImportError, ValueError) as exc:
        raise TransformError(f"module {target!r} is not importable ({exc})") from None
    if found is None:
        raise TransformError(f"module {target!r} is not importable (no module of that name)")
    if not found.origin or not found.has_location or not found.origin.endswith(".py"):
        raise TransformError(f"module {target!r} is not a Python source file ({found.origin})")
    return Located(Path(found.origin), beside_spec=False, module=target)


def _inside(base: Path, relative: str) -> Path:
    """`base / relative`, which must be a regular file whose real path stays inside `base`."""
    if relative.startswith("/") or ".." in Path(relative).parts:
        raise TransformError(f"{relative!r} leaves the spec's folder; a transform lives in it or below it")
    path = base / relative
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise TransformError(f"transform file {relative!r} not found: {path} does not exist") from None
    if not real.is_relative_to(base):
        raise TransformError(f"{relative!r} is a link leading outside the spec's folder {base} (to {real})")
    if not real.is_file():
        raise TransformError(f"{relative!r} is not a regular file")
    return real


def check_defines_function(source: Path, name: str) -> None:
    """Refuse, from the source alone, a module that does not bind `name` at module level as something
    a function can be (a `def`, an import, an assignment from a name or a call)."""
    if source.stat().st_size > MAX_SOURCE_BYTES:
        raise TransformError(
            f"{source} is larger than a transform module may be ({MAX_SOURCE_BYTES:,} bytes)"
        )
    try:
        tree = ast.parse(source.read_bytes(), filename=str(source))
    except (SyntaxError, ValueError, RecursionError) as exc:
        raise TransformError(f"{source} is not valid Python: {exc}") from None
    kinds = [kind for kind, bound in _bindings(tree.body) if bound == name]
    if not kinds:
        raise TransformError(f"module {source} has no {name!r} (no function of that name at its top level)")
    if all(kind not in ("def", "import", "expression") for kind in kinds):
        raise TransformError(f"{name!r} in {source} is not a function (a {kinds[-1]})")


def _bindings(body: list[ast.stmt]):
    """(kind, name) of every name bound at module level, through `if`/`try`/`with` blocks."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield "def", node.name
        elif isinstance(node, ast.ClassDef):
            yield "class", node.name
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                yield "import", (alias.asname or alias.name).split(".")[0]
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            value = node.value
            kind = (
                "expression"
                if isinstance(value, ast.Name | ast.Call | ast.Attribute | ast.Lambda)
                else "value"
            )
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Name):
                        yield kind, leaf.id
        elif isinstance(node, ast.If | ast.Try | ast.With):
            for block in ("body", "orelse", "finalbody", "handlers"):
                for part in getattr(node, block, []):
                    yield from _bindings(part.body if isinstance(part, ast.ExceptHandler) else [part])
