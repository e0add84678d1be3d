"""Resolve a dataset version's transform: an installed module, or Python code beside its spec.

A team declares its dataset in its own folder (a spec file, or a component's `defs.yaml`) and keeps its
transform next to it, so `transform:` may name, relative to the spec file's folder:

- `module:function` — `module.py` in that folder, or `module/` as a package (`pkg.sub:function` is
  `pkg/sub.py`); code beside the spec wins over an installed module of the same name;
- `path/to/file.py:function` — a file relative to the spec's folder;

and otherwise an importable module (`package.module:function`) of the project's packages
(`transform_source.transform_packages`): nothing outside the spec's folder and those packages is imported. Such code is loaded without
PYTHONPATH under a stable synthetic module name derived from its resolved path (so two teams' `views.py`
never collide), and registered with Spark's cloudpickle to be pickled *by value*: cloudpickle pickles
functions of importable modules by reference, and executors could not import a module of that name.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from backfill_platform.specs.transform_source import TransformError, check_defines_function, locate

# `package.module:function`, or a relative `path/to/file.py:function`.
# Matched whole (`check_name`), never with `match`: `$` would pass a final newline.
TRANSFORM_PATTERN = re.compile(r"(?:[A-Za-z_][\w.]*|(?!/)[\w.\-/]*\w\.py):[A-Za-z_]\w*")
SYNTHETIC_PREFIX = "_backfill_platform_transform_"
_LOCK = threading.Lock()

__all__ = ["SYNTHETIC_PREFIX", "TRANSFORM_PATTERN", "TransformError", "load_file", "load_transform"]


def load_transform(reference: str, spec_path: Path | None = None) -> Callable:
    """The function `reference` names, resolved beside `spec_path` first (see the module docstring).

    Nothing is imported before the reference is known to be the project's: a file inside the spec's
    folder (links resolved), or a module of `transform_packages()`, whose source defines the name as a
    function (`transform_source`). Only then is the module executed."""
    target, function_name = reference.rsplit(":", 1)
    base = spec_path.parent.resolve() if spec_path is not None else None
    try:
        located = locate(target, base)
        check_defines_function(located.source, function_name)
        module = located.load(load_file)
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
    if not callable(function) or inspect.isclass(function):
        raise TransformError(f"transform {reference!r} is not a function")
    return function


def synthetic_name(path: Path) -> str:
    """Stable across processes and unique per file: the same code gets the same module name."""
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    stem = re.sub(r"\W", "_", path.parent.name if path.name == "__init__.py" else path.stem)
    return f"{SYNTHETIC_PREFIX}{stem}_{digest}"


def load_file(path: Path, package_dir: Path | None) -> ModuleType:
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
