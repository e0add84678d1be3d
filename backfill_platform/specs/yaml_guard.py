"""The one way a spec's YAML is read: a project's defs folder is checked, every YAML file of it, before
Dagster parses it (`definitions.py`, `components/registry.py`), and each component checks its own file.

A spec is a few KiB of YAML. Before anything is built from it, a file must be a regular file (a FIFO
would block the reader forever, a link to `/dev/zero` never ends: opened without blocking and judged by
`fstat` of what was opened, not by its name), at most MAX_SPEC_BYTES, UTF-8, nested at most MAX_SPEC_DEPTH
deep, plain data only (no `!!python/…` or custom tag), at most MAX_SPEC_NODES nodes once aliases are expanded (a billion-laughs bomb is refused from the
parser's event stream, before anything is expanded), and without a key twice in one mapping (YAML would
keep the last silently). Each refusal names the file and the line.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import yaml

MAX_SPEC_BYTES = 1 << 20
MAX_SPEC_DEPTH = 32
MAX_SPEC_NODES = 100_000
_PLAIN_TAGS = {
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "seq", "map", "timestamp")
} | {"!"}  # `!` is the non-specific tag of a quoted scalar


class SpecError(ValueError):
    """A spec file that cannot be used; the message names the file, the field and the reason."""


def read_spec_text(path: Path) -> str:
    """The text of a regular spec file of at most MAX_SPEC_BYTES, or a SpecError saying why not."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO no writer holds open, or a socket
            raise SpecError(f"{path}: not a regular file (a FIFO or socket); a spec is a file") from None
        raise SpecError(f"{path}: cannot be read ({exc.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise SpecError(f"{path}: not a regular file ({_kind(mode)}); a spec is a file")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_SPEC_BYTES + 1)
    if len(data) > MAX_SPEC_BYTES:
        raise SpecError(f"{path}: larger than a spec may be ({MAX_SPEC_BYTES:,} bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def load_yaml(path: Path) -> Any:
    """The YAML of a spec file, read and checked (see the module docstring), then safely constructed."""
    text = read_spec_text(path)
    check_yaml(path, text)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(yaml_problem(path, exc)) from None


def check_yaml(path: Path, text: str) -> None:
    """Refuse deep nesting, alias bombs and duplicate keys, naming the line; nothing is constructed."""
    try:
        _check_shape(path, text)
        _check_duplicate_keys(path, text)
    except yaml.YAMLError as exc:
        raise SpecError(yaml_problem(path, exc)) from None


def yaml_problem(path: Path, exc: yaml.YAMLError) -> str:
    """The parser's complaint, with its line and column, but never the text around it: PyYAML's own
    message quotes the offending line, which may be a secret (a file linked in, a token pasted)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    words = [getattr(exc, "context", None), getattr(exc, "problem", None)]
    problem = "; ".join(w for w in words if w) or type(exc).__name__
    return f"{path}: {where}not valid YAML: {problem}"


def check_inside(path: Path, folder: Path) -> None:
    """Refuse a spec file whose real path leaves its folder (a link to a credentials file, `/dev/zero`):
    never opened, so nothing of it is read or quoted."""
    try:
        real, root = path.resolve(strict=True), folder.resolve(strict=True)
    except (OSError, RuntimeError):
        raise SpecError(f"{path}: a broken or looping link; a spec is a file of its folder") from None
    if not real.is_relative_to(root):
        raise SpecError(
            f"{path}: a link leading out of the spec folder {folder}; a spec is a file of its folder "
            "(not read)"
        )


def check_folder(folder: Path) -> None:
    """Every YAML file below a defs folder, checked before Dagster's component loader parses it."""
    for path in sorted({*folder.rglob("*.yaml"), *folder.rglob("*.yml")}):
        check_inside(path, folder)
        check_yaml(path, read_spec_text(path))


def check_component_file(component_file: Path) -> None:
    """A Stream's or Dataset's own `defs.yaml`, checked as it loads, whatever loaded it: a route that never
    runs the project's `definitions.py` (`dg list component-tree`, a project `create-dagster` wrote) still
    refuses a duplicate key or a tag. Dagster has parsed the file by then, so for the size and alias
    bounds the project's `definitions.py` must call `check_folder` first, as `init`'s does."""
    check_yaml(component_file, read_spec_text(component_file))


def _check_shape(path: Path, text: str) -> None:
    """Depth and nodes (aliases expanded) from the parser's event stream: no recursion, no expansion."""
    sizes: dict[str, int] = {}  # anchor -> nodes of the anchored node, expanded
    stack: list[list] = []  # open collections: [anchor, nodes so far]
    total = 0

    def add(nodes: int, line: int) -> None:
        nonlocal total
        if stack:
            stack[-1][1] += nodes
        else:
            total += nodes
        if max(total, stack[-1][1] if stack else 0) > MAX_SPEC_NODES:
            raise SpecError(
                f"{path}: line {line}: more than {MAX_SPEC_NODES:,} YAML nodes (aliases expanded)"
            )

    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        line = event.start_mark.line + 1
        tag = getattr(event, "tag", None)
        if tag and tag not in _PLAIN_TAGS:  # `!!python/object…` and custom tags: plain data only
            raise SpecError(f"{path}: line {line}: YAML tag {tag!r} is not allowed; a spec is plain data")
        if isinstance(event, yaml.CollectionStartEvent):
            stack.append([event.anchor, 1])
            if len(stack) > MAX_SPEC_DEPTH:
                raise SpecError(f"{path}: line {line}: YAML nested deeper than {MAX_SPEC_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, nodes = stack.pop()
            if anchor:
                sizes[anchor] = nodes
            add(nodes, line)
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor:
                sizes[event.anchor] = 1
            add(1, line)
        elif isinstance(event, yaml.AliasEvent):
            add(sizes.get(event.anchor, 1), line)


def _check_duplicate_keys(path: Path, text: str) -> None:
    """A key twice in one mapping, from the composed node graph (aliases are shared nodes, walked once;
    the depth is already bounded, so the composer's recursion is too)."""
    for root in yaml.compose_all(text, Loader=yaml.SafeLoader):
        pending, seen = [root], set()
        while pending:
            node = pending.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, yaml.MappingNode):
                keys: dict[Any, int] = {}
                for key, value in node.value:
                    name = (key.tag, key.value) if isinstance(key, yaml.ScalarNode) else id(key)
                    if name in keys and name != ("tag:yaml.org,2002:merge", "<<"):
                        raise SpecError(
                            f"{path}: line {key.start_mark.line + 1}: key {key.value!r} appears twice in one "
                            f"mapping (first on line {keys[name]}); YAML would keep the last silently"
                        )
                    keys[name] = key.start_mark.line + 1
                    pending += [key, value]
            elif isinstance(node, yaml.SequenceNode):
                pending += node.value


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"
