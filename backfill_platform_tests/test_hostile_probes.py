"""Probes of the boundary (issue 30): hostile or malformed spec SQL, secrets, archive entries, transform
references and YAML are refused with a message naming what is wrong, and nothing is written or run
outside the data directory. One parametrized table per family; no Spark but where a run is the point.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from backfill_platform.specs.expressions import checked_aggregate, checked_condition
from backfill_platform.specs.loader import MAX_SPEC_DEPTH, SpecError, builtin_spec_data, load_specs
from backfill_platform_tests.support.specs import mutated, write_spec

DATASET = builtin_spec_data("views_per_title")
# What a probe must never create: `reflect`/`java_method` probes name it, and each test checks it is absent.
SENTINEL = Path("/tmp/issue30_probe_ran")


def dataset(**changes) -> dict:
    spec = yaml.safe_load(yaml.safe_dump(DATASET))
    spec.update(changes)
    return spec


def refused_dataset(folder: Path, data: dict) -> str:
    write_spec(folder, "playback", mutated())
    path = write_spec(folder, "views", data)
    with pytest.raises(SpecError) as error:
        load_specs([folder])
    message = str(error.value)
    assert message.startswith(f"{path}: "), message
    return message


@pytest.fixture(autouse=True)
def nothing_outside(tmp_path):
    """No probe leaves the sentinel behind or a file in the working directory."""
    SENTINEL.unlink(missing_ok=True)
    before = set(os.listdir("."))
    yield
    assert not SENTINEL.exists()
    assert set(os.listdir(".")) == before


# --- SQL: data, not code -------------------------------------------------------------------------

SQL_PROBES = [
    # (filter, the refusal's words)
    (
        "event_type = 'start' -- x\\\nOR (SELECT count(*) FROM platform.ingestions) > 0",
        "contains a comment ('--')",
    ),
    ("event_type = 'start' /* x */", "contains a comment ('/*')"),
    (f"reflect('java.io.File', 'createTempFile', '{SENTINEL.name}', '') IS NOT NULL", "calls 'reflect'"),
    ("java_method('java.lang.System', 'exit', 1) = 1", "calls 'java_method'"),
    ("event_type = '${env:AWS_SECRET_ACCESS_KEY}'", "contains a variable substitution ('${')"),
    ("event_type = '${spark.sql.catalog.lake.jdbc.password}'", "contains a variable substitution"),
    ("event_type IN (SELECT source_file FROM platform.ingestions)", "not SUBQUERY"),
    ("EXISTS (SELECT 1)", "EXISTS"),
    ("event_type = (SELECT max(x) FROM t)", "not SUBQUERY"),
    ("ingestions.event_type = 'start'", "must name columns of the events only"),
    ("platform.ingestions.event_type = 'start'", "must name columns of the events only"),
    ("my_udf(event_type) = 1", "calls 'my_udf'"),
    ("rand() < 0.5", "calls 'rand'"),
    ("event_type RLIKE '(a+)+$'", "calls 'regexplike'"),
    ("exists(array(1), x -> x = 1)", "calls 'exists'"),
    ("event_type = 'start'; DROP TABLE lake.prod.views", "statement separator"),
    ("event_type = 'it\\'s'", "contains a backslash"),
    ("event_type = 'a\x1b[31m'", "control character"),
    ("count(1) > 0", "may not aggregate"),
    ("row_number() OVER (ORDER BY event_time) = 1", "may not contain WINDOW"),
    ("(" * 3000 + "true" + ")" * 3000, "more than a rule may be"),
    ("event_type = ", "does not parse as Spark SQL"),
    ("", "is empty"),
]


@pytest.mark.parametrize(("sql", "words"), SQL_PROBES, ids=[f"sql{i}" for i in range(len(SQL_PROBES))])
def test_hostile_filters_are_refused_at_load(tmp_path, sql, words):
    rules = [{**DATASET["reconciliation"][0], "filter": sql}, DATASET["reconciliation"][1]]
    message = refused_dataset(tmp_path, dataset(reconciliation=rules))
    assert "field 'reconciliation[0].filter'" in message and words in message, message


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("sum(position_sec) + (SELECT max(x) FROM t)", "not SUBQUERY"),
        ("position_sec", "must aggregate"),
        ("sum(position_sec) OVER ()", "may not contain WINDOW"),
        ("count(reflect('java.lang.Runtime', 'getRuntime'))", "calls 'reflect'"),
    ],
)
def test_hostile_aggregates_are_refused_at_load(tmp_path, sql, words):
    message = refused_dataset(tmp_path, dataset(expected_rows={"expression": sql}))
    assert "field 'expected_rows.expression'" in message and words in message, message


@pytest.mark.parametrize(
    ("sql", "rendered"),
    [
        ("event_type IN ('start', 'stop')", "event_type IN ('start', 'stop')"),
        ("to_date(event_time) <> DATE'2026-10-01'", "TO_DATE(event_time) <> CAST('2026-10-01' AS DATE)"),
        ("Event_Type = 'start' AND _line_number > 0", "Event_Type = 'start' AND _line_number > 0"),
        (
            "hour(event_time) BETWEEN 1 AND 3 AND x IS NOT NULL",
            "HOUR(event_time) BETWEEN 1 AND 3 AND NOT x IS NULL",
        ),
        ("true", "TRUE"),
    ],
)
def test_ordinary_filters_reach_spark_re_rendered(sql, rendered):
    assert checked_condition(sql, ["event_type", "event_time", "_line_number", "x"]) == rendered


def test_only_the_checked_text_reaches_spark_for_a_spec_built_in_code(data_dir):
    """A spec built in code skips the loader; the query builder checks again before Spark sees it."""
    from backfill_platform.pipeline.validation.buckets import _checked_rules

    rules = {"event_type = 'a' -- x\\\nOR (SELECT 1) = 1": [("_rows", "count(1)")]}
    with pytest.raises(ValueError, match="a rule of the dataset is refused: contains a comment"):
        _checked_rules(rules, ["event_type"])
    assert _checked_rules(
        {"event_type = 'a'": [("_rows", "count(DISTINCT event_type)")]}, ["event_type"]
    ) == {"event_type = 'a'": [("_rows", "COUNT(DISTINCT event_type)")]}
    assert checked_aggregate("sum(if(event_type = 'a', 1, 0))", ["event_type"]) == (
        "SUM(IF(event_type = 'a', 1, 0))"
    )


def test_spark_substitutes_no_variable_even_when_asked_to(spark, spark_resource):
    """Spark's `${…}` substitution is off in the platform's sessions, whatever `spark_config` says."""
    from pyspark.sql import functions as F

    asked = spark_resource.model_copy(update={"spark_config": {"spark.sql.variable.substitute": "true"}})
    assert asked.full_spark_config()["spark.sql.variable.substitute"] == "false"
    assert spark.conf.get("spark.sql.variable.substitute") == "false"
    spark._jvm.java.lang.System.setProperty("issue30.fake.secret", "fake-secret-30")
    row = spark.range(1).select(F.expr("'${system:issue30.fake.secret}'").alias("v")).first()
    assert row.v == "${system:issue30.fake.secret}"
    assert (
        spark.sql("SELECT '${system:issue30.fake.secret}' AS v").first().v == "${system:issue30.fake.secret}"
    )


def test_random_token_soup_is_refused_or_harmless_never_a_crash():
    """Seeded fuzz: sqlglot fails on some malformed input with an IndexError; a rule gets a message."""
    import random

    from backfill_platform.specs.expressions import ExpressionError

    tokens = (
        "event_type count( sum( ) ( 'a' \"b\" = <> AND OR NOT IN (SELECT 1) , 1 x'41' CASE WHEN THEN END "
    )
    tokens += (
        "IS NULL `event_type` :: int CAST( AS DISTINCT * + [0] . -> x LIKE ? $1 { map( struct( reflect( "
    )
    tokens += "java_method( rand() hour( -- /* ${x} ; \\"
    words = tokens.split(" ")
    forbidden = ("SELECT", "REFLECT", "JAVA", "${", "--", "/*", ";", "\\", "RAND", "STRUCT", "MAP(", "?", "$")
    generator = random.Random(30)
    for _ in range(1500):
        sql = " ".join(generator.choice(words) for _ in range(generator.randint(1, 10)))
        for check in (checked_condition, checked_aggregate):
            try:
                rendered = check(sql, ["event_type", "x"])
            except ExpressionError:
                continue
            assert not any(word in rendered.upper() for word in forbidden), (sql, rendered)


# --- transforms come from the project ------------------------------------------------------------

# Importing this module writes the sentinel: a probe that imported it would leave it behind.
SIDE_EFFECT = f"from pathlib import Path\nPath({str(SENTINEL)!r}).write_text('imported')\n"


def transform_folder(tmp_path: Path) -> Path:
    """A spec folder with hostile neighbours: code outside it, links out of it, non-functions in it."""
    outside = tmp_path / "x"
    outside.mkdir()
    (outside / "mod.py").write_text(SIDE_EFFECT + "def f(events):\n    return events\n")
    (outside / "pkg").mkdir()
    (outside / "pkg" / "__init__.py").write_text(SIDE_EFFECT)
    (outside / "pkg" / "sub.py").write_text(SIDE_EFFECT + "def f(events):\n    return events\n")
    folder = tmp_path / "team" / "specs"
    folder.mkdir(parents=True)
    (folder / "linked.py").symlink_to(outside / "mod.py")
    (folder / "linkpkg").symlink_to(outside / "pkg")
    (folder / "values.py").write_text(SIDE_EFFECT + "s = 'not a function'\nclass C:\n    pass\n")
    (folder / "good.py").write_text("def f(events):\n    return events\n")
    return folder


TRANSFORM_PROBES = [
    ("../../x/mod.py:f", "leaves the spec's folder"),
    ("linked.py:f", "is a link leading outside the spec's folder"),
    ("linked:f", "is a link leading outside the spec's folder"),
    ("linkpkg.sub:f", "is a link leading outside the spec's folder"),
    ("values:s", "'s' in"),
    ("values:C", "is not a function (a class)"),
    ("values:missing", "has no 'missing'"),
    ("this:s", "is neither beside the spec"),
    ("os:system", "is neither beside the spec"),
    ("subprocess:run", "in the project's packages"),
    ("backfill_platform.settings:DATA_DIR_ENV", "is not a function (a value)"),
    ("backfill_platform.nothing_here:f", "is not importable"),
    ("/etc/passwd.py:f", "is not 'package.module:function'"),
]


@pytest.mark.parametrize(("reference", "words"), TRANSFORM_PROBES, ids=[r for r, _ in TRANSFORM_PROBES])
def test_transforms_from_outside_the_project_are_refused_before_import(tmp_path, reference, words):
    import sys

    folder = transform_folder(tmp_path)
    modules = set(sys.modules)
    message = refused_dataset(folder, dataset(versions={"v2": {"transform": reference}}, active_version="v2"))
    assert "field 'versions.v2.transform'" in message and words in message, message
    assert not {"this", "_backfill_platform_transform_values"} & (set(sys.modules) - modules)
    assert not any(name.startswith("_backfill_platform_transform_") for name in set(sys.modules) - modules)


def test_transforms_inside_the_project_still_load(tmp_path, monkeypatch):
    from backfill_platform.specs.transforms import load_transform

    folder = transform_folder(tmp_path)
    (folder / "code").mkdir()
    (folder / "code" / "inner.py").symlink_to(folder / "good.py")  # a link that stays inside
    spec = folder / "views.yaml"
    assert load_transform("good:f", spec).__name__ == "f"
    assert load_transform("code/inner.py:f", spec).__name__ == "f"
    assert load_transform("backfill_platform_tests.transforms:dropped_rows", spec).__name__ == "dropped_rows"
    # A team's own package is allowed once listed.
    (tmp_path / "teamlib").mkdir()
    (tmp_path / "teamlib" / "__init__.py").write_text("def f(events):\n    return events\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="in the project's packages"):
        load_transform("teamlib:f", spec)
    monkeypatch.setenv("BACKFILL_PLATFORM_TRANSFORM_PACKAGES", "teamlib")
    assert load_transform("teamlib:f", spec).__module__ == "teamlib"


# --- the archive root is a boundary --------------------------------------------------------------

HOST_LINE = '{"event_id": "host-file-line", "event_time": "2026-10-01T03:00:00Z"}\n'


def hostile_archive(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """An archive whose hour folders hold links out of the root, special files and a broken link beside
    one ordinary file and one link that stays inside; returns the root and each probe's expected reason."""
    import stat

    from backfill_platform.pipeline.archive.boundary import REFUSED

    host = tmp_path / "host"
    (host / "hour").mkdir(parents=True)
    (host / "secret.jsonl").write_text(HOST_LINE)
    (host / "hour" / "x.jsonl").write_text(HOST_LINE)
    root = tmp_path / "archive"
    hour = root / "2026" / "10" / "01" / "03"
    hour.mkdir(parents=True)
    (hour / "good.jsonl").write_text('{"event_id": "a", "event_time": "2026-10-01T03:00:00Z"}\n')
    (root / "2026" / "10" / "01" / "inside.jsonl").write_text("{}\n")
    (hour / "inside-link.jsonl").symlink_to(root / "2026" / "10" / "01" / "inside.jsonl")
    (hour / "out-link.jsonl").symlink_to(host / "secret.jsonl")
    (hour / "dev-zero.jsonl").symlink_to("/dev/zero")
    (hour / "broken.jsonl").symlink_to(hour / "gone.jsonl")
    os.mkfifo(hour / "fifo.jsonl")
    (root / "2026" / "10" / "01" / "04").symlink_to(host / "hour")
    expected = {
        "2026/10/01/03/out-link.jsonl": "a symlink leading outside the archive root",
        "2026/10/01/03/dev-zero.jsonl": "a symlink leading outside the archive root",
        "2026/10/01/03/broken.jsonl": "a broken or looping symlink",
        "2026/10/01/03/fifo.jsonl": "a FIFO (named pipe), not a regular file",
        "2026/10/01/04": "a symlink leading outside the archive root",
    }
    try:  # a character device of the test's own (root may create one; others skip this probe)
        os.mknod(hour / "zero-device.jsonl", stat.S_IFCHR | 0o600, os.makedev(1, 5))
        expected["2026/10/01/03/zero-device.jsonl"] = "a character device, not a regular file"
    except PermissionError:
        pass
    return root, {name: REFUSED + why for name, why in expected.items()}


@pytest.mark.timeout(60)
def test_the_archive_root_is_a_boundary(tmp_path):
    from datetime import UTC, datetime

    from backfill_platform.pipeline.archive.listing import LocalArchive

    root, expected = hostile_archive(tmp_path)
    archive = LocalArchive(root=root.resolve(), layout="%Y/%m/%d/%H")
    three, four = datetime(2026, 10, 1, 3, tzinfo=UTC), datetime(2026, 10, 1, 4, tzinfo=UTC)
    assert [f.name for f in archive.list_hour(three)] == [
        "2026/10/01/03/good.jsonl",
        "2026/10/01/03/inside-link.jsonl",
    ]
    assert archive.list_hour(four) == []  # an hour folder linked out of the root is not read
    unlisted = {f.name: f for f in archive.unlisted_files(three)}
    refused = {name: f.why for name, f in unlisted.items() if f.why in expected.values()}
    assert refused == expected
    assert all(unlisted[name].lines == 0 for name in refused)  # counted, never opened
    assert unlisted["2026/10/01/inside.jsonl"].why.startswith("outside the hour layout")
    # `plan` finds the same refusals through the stream's spec (and names them, below).
    from backfill_platform.ops.plan import refused_entries
    from backfill_platform.pipeline.archive.listing import archive_for
    from backfill_platform.specs.stream import StreamSpec

    spec = mutated(archive__location=str(root), archive__allow_outside_data_roots=True)
    stream = StreamSpec.model_validate(spec)
    assert {f.name: f.why for f in refused_entries(stream, archive_for(stream))} == expected


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_archive_file_is_refused_not_read(tmp_path):
    from datetime import UTC, datetime

    from backfill_platform.pipeline.archive.listing import LocalArchive

    hour = tmp_path / "2026" / "10" / "01" / "03"
    hour.mkdir(parents=True)
    (hour / "locked.jsonl").write_text("{}\n")
    (hour / "locked.jsonl").chmod(0)
    archive = LocalArchive(root=tmp_path.resolve(), layout="%Y/%m/%d/%H")
    start = datetime(2026, 10, 1, 3, tzinfo=UTC)
    assert archive.list_hour(start) == []
    assert [f.why for f in archive.unlisted_files(start)] == [
        "refused at the archive boundary, never read: unreadable (permission denied)"
    ]


def test_plan_names_refused_entries_with_their_names_escaped(tmp_path):
    from backfill_platform.ops.plan import Plan, plan_summary
    from backfill_platform.pipeline.archive.boundary import REFUSED
    from backfill_platform.pipeline.archive.listing import UnlistedFile
    from backfill_platform.specs.stream import StreamSpec

    refused = [
        UnlistedFile("2026/10/01/03/fifo.jsonl", 0, 0, REFUSED + "a FIFO (named pipe), not a regular file"),
        UnlistedFile("2026/10/01/03/[bold red]x\x1b[2J.jsonl", 0, 0, REFUSED + "a broken or looping symlink"),
    ]
    unreadable = ["2026/10/01/03/[bold red]y\x07.gz"]
    plan = Plan(StreamSpec.model_validate(mutated()), [], [], 0, 0, 0, unreadable, None, refused=refused)
    corrupt = next(line for line in plan_summary(plan) if "corrupt gzip" in line)
    assert corrupt.endswith("2026/10/01/03/\\[bold red]y\\x07.gz") and "\x07" not in corrupt
    line = next(line for line in plan_summary(plan) if "refused" in line)
    assert "2 entries below the archive root refused at the archive boundary, never read" in line
    assert "2026/10/01/03/fifo.jsonl (a FIFO (named pipe), not a regular file)" in line
    assert "\\[bold red]x\\x1b[2J.jsonl (a broken or looping symlink)" in line and "\x1b" not in line


# --- one YAML loader for both routes -------------------------------------------------------------

BOMB = "\n".join(
    ['    a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"    a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
)


def write_yaml(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


YAML_PROBES = {
    "duplicate key": (
        lambda d: write_yaml(d, "dup.yaml", "kind: stream\nname: a\nname: b\n"),
        "line 3: key 'name' appears twice in one mapping (first on line 2)",
    ),
    "duplicate nested key": (
        lambda d: write_yaml(
            d, "c/defs.yaml", "type: backfill_platform.components.Stream\nattributes:\n  a: 1\n  a: 2\n"
        ),
        "line 4: key 'a' appears twice",
    ),
    "bomb in attributes": (
        lambda d: write_yaml(
            d, "b/defs.yaml", "type: backfill_platform.components.Stream\nattributes:\n" + BOMB + "\n"
        ),
        "YAML nodes (aliases expanded)",
    ),
    "deep nesting in attributes": (
        lambda d: write_yaml(
            d, "n/defs.yaml", "type: x\nattributes:\n  a: " + "[" * 100_000 + "]" * 100_000 + "\n"
        ),
        f"line 3: YAML nested deeper than {MAX_SPEC_DEPTH} levels",
    ),
    "10 MB component": (
        lambda d: write_yaml(
            d, "h/defs.yaml", "type: x\nattributes:\n  description: " + "x" * (10 << 20) + "\n"
        ),
        "larger than a spec may be",
    ),
    "python tag": (
        lambda d: write_yaml(d, "p.yaml", "kind: !!python/object/apply:os.system ['true']\n"),
        "line 1: YAML tag",
    ),
    "not UTF-8": (
        lambda d: (
            write_yaml(d, "u.yaml", "kind: stream\n")
            and (d / "u.yaml").write_bytes(b"\xff\xfe")
            and d / "u.yaml"
        ),
        "not UTF-8",
    ),
    "FIFO": (lambda d: os.mkfifo(d / "f.yaml") or d / "f.yaml", "not a regular file (a FIFO)"),
    "link to /dev/zero": (
        lambda d: (d / "z.yaml").symlink_to("/dev/zero") or d / "z.yaml",
        "not a regular file (a device)",
    ),
    "folder named .yaml": (
        lambda d: (d / "d.yaml").mkdir() or d / "d.yaml",
        "not a regular file (a directory)",
    ),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("probe", list(YAML_PROBES))
def test_hostile_yaml_is_refused_on_both_routes_with_file_and_line(tmp_path, probe):
    from backfill_platform.specs.loader import load_spec_file
    from backfill_platform.specs.yaml_guard import check_folder

    make, words = YAML_PROBES[probe]
    path = make(tmp_path)
    with pytest.raises(SpecError) as loader_route:
        load_spec_file(path)
    with pytest.raises(SpecError) as components_route:  # what definitions.py runs before Dagster parses
        check_folder(tmp_path)
    for error in (loader_route, components_route):
        assert str(error.value).startswith(f"{path}: ") and words in str(error.value), str(error.value)


def test_the_components_route_checks_before_dagster_parses():
    """Both code locations that load defs folders (the platform's and `init`'s) run the check first."""
    import backfill_platform.definitions as definitions
    from backfill_platform.components.project import DEFINITIONS

    assert (
        "check_folder(Path(backfill_platform.defs.__file__).parent)" in Path(definitions.__file__).read_text()
    )
    assert 'check_folder(Path(__file__).parent / "defs")' in DEFINITIONS


# --- messages, not tracebacks --------------------------------------------------------------------


def cli(monkeypatch, spec_folder: Path | None, *args: str):
    from click.testing import CliRunner

    from backfill_platform.cli import main

    if spec_folder is not None:
        monkeypatch.setenv("BACKFILL_PLATFORM_SPECS", str(spec_folder))
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 1, (result.exit_code, result.output)
    assert isinstance(result.exception, SystemExit), result.exception  # a message, not an exception
    assert "Traceback" not in result.output and result.output.strip().startswith("Error: "), result.output
    return result.output


@pytest.mark.timeout(120)
def test_a_refused_spec_is_one_message_with_its_name_made_visible(tmp_path, monkeypatch):
    path = write_yaml(tmp_path, "x\x1b[2J[bold red].yaml", "kind: stream\nname: a\nname: b\n")
    output = cli(
        monkeypatch, tmp_path, "plan", "--stream", "a", "--start", "2026-10-01", "--end", "2026-10-02"
    )
    assert "x\\x1b[2J[bold red].yaml: line 3: key 'name' appears twice" in output and "\x1b" not in output
    assert path.exists()


REPLAY = ["replay", "--stream", "relay", "--start", "2026-10-01", "--end", "2026-10-02"]


def replay_spec(folder: Path) -> Path:
    spec = mutated(
        name="relay", live_kinesis_stream="relay-live", backfill_kinesis_streams=["relay-backfill"]
    )
    write_spec(folder, "relay", spec)
    return folder


@pytest.mark.timeout(120)
def test_a_replay_to_the_live_stream_is_refused_before_any_aws_setting_is_needed(tmp_path, monkeypatch):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    output = cli(monkeypatch, replay_spec(tmp_path), *REPLAY, "--to-kinesis", "relay-live")
    assert "'relay-live' is the live Kinesis stream of 'relay'" in output
    output = cli(monkeypatch, None, *REPLAY, "--to-kinesis", "relay-backfill")
    assert "no AWS region is configured: set AWS_REGION" in output


@pytest.mark.timeout(60)
def test_a_checkpoint_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    from backfill_platform.pipeline.replay.checkpoint import CheckpointMismatch, load

    os.mkfifo(tmp_path / "checkpoint.json")
    with pytest.raises(CheckpointMismatch, match="is not a regular file"):
        load(tmp_path / "checkpoint.json")


@pytest.mark.timeout(120)
def test_an_unreachable_catalog_is_named_without_its_password(tmp_path, monkeypatch):
    monkeypatch.setenv(
        "BACKFILL_PLATFORM_CATALOG_SQL_URI", "postgresql+psycopg://team:pw-issue30@127.0.0.1:9/lake"
    )
    monkeypatch.setenv("BACKFILL_PLATFORM_CATALOG_JDBC_URI", "jdbc:postgresql://127.0.0.1:9/lake")
    write_spec(tmp_path, "playback", mutated())
    output = cli(
        monkeypatch, None, "plan", "--stream", "playback", "--start", "2026-10-01", "--end", "2026-10-02"
    )
    assert "the Iceberg catalog's database cannot be reached or used" in output
    assert "pw-issue30" not in output


# --- secrets never stored ------------------------------------------------------------------------

FAKE_SECRETS = {
    "AWS_ACCESS_KEY_ID": "AKIAISSUE30FAKEKEYID",
    "AWS_SECRET_ACCESS_KEY": "issue30-fake-aws-secret-0f9e8d7c6b5a",
    "AWS_SESSION_TOKEN": "issue30-fake-session-token-1a2b3c",
    "BACKFILL_PLATFORM_CATALOG_PASSWORD": "issue30-fake-catalog-password-4d5e",
}


def bytes_holding(folder: Path, secrets: list[bytes]) -> list[str]:
    """Every file below `folder` whose bytes hold one of `secrets`."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"{path}: {secret!r}" for secret in secrets if secret in data]
    return found


@pytest.mark.timeout(900)
def test_a_run_of_a_hostile_spec_stores_no_secret(
    tmp_path, monkeypatch, spark, spark_resource, data_dir, playback, events_materialized
):
    """A dataset built in code (past the loader) whose rules try Spark's substitution: the run refuses
    them, and no byte written by it (data directory, Dagster's run and event storage) holds a secret."""
    from dagster import DagsterInstance, materialize

    from backfill_platform.pipeline.shadow.assets import build_shadow_asset
    from backfill_platform_tests.support.datasets import dataset as views_dataset
    from backfill_platform_tests.support.session import START, range_tags

    for name, value in FAKE_SECRETS.items():
        monkeypatch.setenv(name, value)
    # The JVM's environment was fixed when it started; a system property stands for a secret it holds.
    spark._jvm.java.lang.System.setProperty("issue30.secret", FAKE_SECRETS["AWS_SECRET_ACCESS_KEY"])
    rules = [
        {"column": "views", "filter": "event_type = '${system:issue30.secret}'", "expression": "count(1)"},
        {
            "column": "watch_seconds",
            "filter": "event_type = '${env:AWS_SECRET_ACCESS_KEY}'",
            "expression": "sum(position_sec)",
        },
    ]
    spec = views_dataset("views_secret_probe", reconciliation=rules)
    (tmp_path / "dagster").mkdir()
    with DagsterInstance.local_temp(tempdir=str(tmp_path / "dagster")) as instance:
        result = materialize(
            [build_shadow_asset(spec, playback, "v2")],
            resources={"spark": spark_resource},
            tags=range_tags(START, START),
            instance=instance,
            raise_on_error=False,
        )
        logs = "\n".join(str(event) for event in instance.all_logs(result.run_id))
    assert "a rule of the dataset is refused: contains a variable substitution ('${')" in logs
    secrets = [value.encode() for value in FAKE_SECRETS.values()]
    assert not any(secret in logs.encode() for secret in secrets)
    assert bytes_holding(tmp_path / "dagster", secrets) == []
    assert bytes_holding(data_dir, secrets) == []
    spark._jvm.java.lang.System.clearProperty("issue30.secret")


@pytest.mark.timeout(120)
def test_plan_over_a_hostile_archive_names_what_it_refused(tmp_path, monkeypatch):
    """The CLI end to end, no Spark: `plan` lists the hour, reads neither the FIFO nor the links out."""
    from click.testing import CliRunner

    from backfill_platform.cli import main

    root, expected = hostile_archive(tmp_path)
    specs = tmp_path / "specs"
    specs.mkdir()
    write_spec(
        specs,
        "relay",
        mutated(name="hostile_relay", archive__location=str(root), archive__allow_outside_data_roots=True),
    )
    monkeypatch.setenv("BACKFILL_PLATFORM_SPECS", str(specs))
    result = CliRunner().invoke(
        main, ["plan", "--stream", "hostile_relay", "--start", "2026-10-01", "--end", "2026-10-02"]
    )
    output = " ".join(result.output.split())  # rich wraps long lines
    assert result.exit_code == 0, result.output
    assert (
        f"{len(expected)} entries below the archive root refused at the archive boundary, never read"
        in output
    )
    for name, why in expected.items():
        assert f"{name} ({why.split(': ', 1)[1]})" in output, (name, output)
