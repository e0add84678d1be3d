"""moto's server (S3 and Kinesis over HTTP) on a free loopback port, as a separate process.

Tests talk to it exactly as a deployment talks to AWS: boto3 (and `dagster_aws`) with
`AWS_ENDPOINT_URL` pointing at it, dummy credentials, one region. Spark's Python workers inherit the
environment, so code running inside tasks reaches the same endpoint: `aws` sets it for the driver and for
the workers of a session already started (`executor_environment`).
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from backfill_platform_tests.support.processes import free_port, stop, wait_until

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REGION = "us-east-1"


@dataclass(frozen=True)
class MotoServer:
    endpoint_url: str
    region: str

    def env(self) -> dict[str, str]:
        """The environment a process needs to talk to this endpoint through boto3's standard chain."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": self.region,
        }

    def upload(self, root: Path, bucket: str, prefix: str) -> int:
        """Every file under `root` as an object `prefix/<relative path>` of `bucket` (created if missing),
        the layout kept, as an archive's writer leaves it; returns the number of objects."""
        s3 = self.client("s3")
        if bucket not in {listed["Name"] for listed in s3.list_buckets()["Buckets"]}:
            s3.create_bucket(Bucket=bucket)
        count = 0
        for path in sorted(root.rglob("*")):
            if path.is_file():
                key = f"{prefix}/{path.relative_to(root).as_posix()}"
                s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
                count += 1
        return count

    def client(self, service: str):
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )


@contextmanager
def moto_server(log_dir: Path, timeout_s: float = 60.0) -> Iterator[MotoServer]:
    """Start `moto_server` on 127.0.0.1, wait until it answers, stop it afterwards."""
    port = free_port()
    executable = Path(sys.executable).with_name("moto_server")
    log = open(log_dir / "moto_server.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [str(executable), "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=2).read()
            return True
        except OSError:
            if process.poll() is not None:
                pytest.fail(
                    f"moto_server exited with {process.returncode}; see {log_dir / 'moto_server.log'}"
                )
            return False

    try:
        wait_until(
            answers,
            timeout=timeout_s,
            every=0.1,
            what=f"moto_server answering on {url}; see {log_dir / 'moto_server.log'}",
        )
        yield MotoServer(endpoint_url=url, region=REGION)
    finally:
        stop(process, timeout=10)
        log.close()


@contextmanager
def aws_environment(server: MotoServer, **override: str) -> Iterator[dict[str, str]]:
    """Point boto3's standard environment at the server for the duration (restored afterwards);
    `override` sets other keys too (e.g. another user's credentials). Yields what was set."""
    env = {**server.env(), **override}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        yield env


@contextmanager
def executor_environment(spark: SparkSession, env: dict[str, str]) -> Iterator[None]:
    """Give Spark's Python workers these variables (as `spark.executorEnv.*` does on a cluster): the
    session's workers were started before the test set them in the driver's environment."""
    environment = spark.sparkContext.environment
    saved = {name: environment.get(name) for name in env}
    environment.update(env)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                environment.pop(name, None)
            else:
                environment[name] = value


@contextmanager
def aws(moto: MotoServer, spark: SparkSession, **override: str) -> Iterator[None]:
    """Driver and executors talk to moto through boto3's standard environment (`override`: other keys)."""
    with aws_environment(moto, **override) as env, executor_environment(spark, env):
        yield
