"""Resolve a dataset version's transform: an installed module, or Python code beside its spec.

A team declares its dataset in its own folder (a spec file, or a component's `defs.yaml`) and keeps its
transform next to it, so `transform:` may name, relative to the spec file's folder:

- `module:function` — `module.py` in that folder, or `module/` as a package (`pkg.sub:function` is
  `pkg/sub.py`); code beside the spec wins over an installed module of the same name;
- `path/to/file.py:function` — a file relative to the spec's folder;

and otherwise an importable module (`package.module:function`), as before. Such code is loaded without
PYTHONPATH under a stable synthetic module name derived from its resolved path (so two teams' `views.py`
never collide), and registered with Spark's cloudpickle to be pickled *by value*: cloudpickle pickles
functions of importable modules by reference, and executors could not import a module of that name.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

# `package.module:function`, or a relative `path/to/file.py:function`.
TRANSFORM_PATTERN = re.compile(r"^(?:[A-Za-z_][\w.]*|(?!/)[\w.\-/]*\w\.py):[A-Za-z_]\w*$")
SYNTHETIC_PREFIX = "_backfill_platform_transform_"
_LOCK = threading.Lock()


class TransformError(ValueError):
    """A transform that cannot be resolved, imported or is not a function."""


def load_transform(reference: str, spec_path: Path | None = None) -> Callable:
    """The function `reference` names, resolved beside `spec_path` first (see the module docstring)."""
    target, function_name = reference.rsplit(":", 1)
    try:
        module = _module(target, spec_path.parent if spec_path is not None else None)
    except TransformError as exc:
        raise TransformError(f"transform {reference!r} cannot be loaded: {exc}") from None
    except Exception as exc:  # the module's own import failed: say which transform, keep the cause
        cause = f"{type(exc).__name__}: {exc}"
        raise TransformError(f"transform {reference!r} cannot be loaded: {cause}") from exc
    function = getattr(module, function_name, None)
    if function is None:
        raise TransformError(
            f"transform {reference!r} cannot be loaded: module {target!r} ({module.__file__}) has no "
            f"{function_name!r}"
        )
    if not callable(function):
        raise TransformError(f"transform {reference!r} is not a function")
    return function


def _module(target: str, base: Path | None) -> ModuleType:
    if target.endswith(".py"):
        if base is None:
            raise TransformError(f"transform file {target!r} needs the spec file's folder to resolve against")
        path = (base / target).resolve()
        if not path.is_file():
            raise TransformError(f"transform file {target!r} not found: {path} does not exist")
        return _load_file(path, package_dir=None)
    top, _, rest = target.partition(".")
    if base is not None:
        beside = base / f"{top}.py"
        package = base / top / "__init__.py"
        if package.is_file():
            root = _load_file(package.resolve(), package_dir=package.parent.resolve())
            return importlib.import_module(f"{root.__name__}.{rest}") if rest else root
        if beside.is_file() and not rest:
            return _load_file(beside.resolve(), package_dir=None)
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        where = f" nor beside the spec in {base}" if base is not None else ""
        raise TransformError(f"module {target!r} is neither importable ({exc}){where}") from exc


def synthetic_name(path: Path) -> str:
    """Stable across processes and unique per file: the same code gets the same module name."""
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    stem = re.sub(r"\W", "_", path.parent.name if path.name == "__init__.py" else path.stem)
    return f"{SYNTHETIC_PREFIX}{stem}_{digest}"


def _load_file(path: Path, package_dir: Path | None) -> ModuleType:
    name = synthetic_name(path)
    with _LOCK:
        if name in sys.modules:
            return sys.modules[name]
        locations = [str(package_dir)] if package_dir is not None else None
        spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=locations)
        if spec is None or spec.loader is None:
            raise TransformError(f"{path} cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # before executing: its own (relative) imports look it up there
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        _pickle_by_value(module)
        return module


def _pickle_by_value(module: ModuleType) -> None:
    """Ship the module's functions to Spark executors by value (a package covers its submodules)."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(module)
