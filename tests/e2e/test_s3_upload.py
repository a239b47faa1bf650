"""upload-reports.sh against a real S3-compatible server (moto in server mode, started here on
127.0.0.1) with the real AWS CLI: upload, listing, re-run idempotence, a missing bucket and wrong
credentials (clear errors, no completion marker)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from nsysgen.cli import main

pytestmark = pytest.mark.e2e

BUCKET = "nsysgen-reports"
URI = f"s3://{BUCKET}/runs/fsdp"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, str]]:
    """moto_server with IAM auth enforced after 3 set-up calls; env for a valid user."""
    moto = shutil.which("moto_server")
    assert moto and shutil.which("aws"), "pip install -e '.[test]' installs moto and awscli"
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [moto, "-H", "127.0.0.1", "-p", str(port)],
        env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "3"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1)  # noqa: S310
                break
            except OSError:
                time.sleep(0.1)
        iam = boto3.client(
            "iam",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="setup",
            aws_secret_access_key="setup",
        )
        iam.create_user(UserName="nsysgen")
        iam.put_user_policy(
            UserName="nsysgen",
            PolicyName="all",
            PolicyDocument='{"Version":"2012-10-17","Statement":[{"Effect":"Allow",'
            '"Action":"*","Resource":"*"}]}',
        )
        key = iam.create_access_key(UserName="nsysgen")["AccessKey"]
        env = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", "/tmp"),
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
        }
        aws(env, "s3", "mb", f"s3://{BUCKET}")
        yield env
    finally:
        server.terminate()
        server.wait(timeout=10)


def aws(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(["aws", *args], env=env, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("s3")
    assert (
        main(["target=slurm", "workload=nccl", f"capture.s3_uri={URI}", f"output_dir={out}"]) == 0
    )
    [compiled] = [p for p in out.iterdir() if p.is_dir()]
    recipes = (compiled / "recipes.sh").read_text()
    assert '"$here/upload-reports.sh" "$run_dir"' in recipes
    return compiled


def reports(tmp: Path) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    for rank in range(2):
        (tmp / f"job_rank{rank}.nsys-rep").write_bytes(os.urandom(4096 + rank))
    (tmp / "recipes" / "nccl_sum").mkdir(parents=True, exist_ok=True)
    (tmp / "recipes" / "nccl_sum" / "nccl_sum.parquet").write_bytes(b"PAR1")
    (tmp / "recipes" / ".venv" / "bin").mkdir(parents=True, exist_ok=True)
    (tmp / "recipes" / ".venv" / "bin" / "python3").write_text("not uploaded")
    # Reports are older than their upload; S3 keeps whole seconds, and a file written in the
    # same second as its copy would look newer than the object to the rerun's sync.
    past = time.time() - 60
    for path in tmp.rglob("*"):
        os.utime(path, (past, past))
    return tmp


def upload(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(folder / "upload-reports.sh"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def listing(env: dict[str, str], prefix: str) -> list[str]:
    # `aws s3 ls` exits 1 on an empty listing.
    done = subprocess.run(
        ["aws", "s3", "ls", "--recursive", f"s3://{BUCKET}/{prefix}"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode in (0, 1) and not done.stderr, done.stderr
    return sorted(line.split()[-1] for line in done.stdout.splitlines())


def test_upload_lists_and_reruns_idempotently(
    folder: Path, s3: dict[str, str], tmp_path: Path
) -> None:
    local = reports(tmp_path / "reports" / "job41")
    first = upload(folder, s3, str(local))
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().endswith(f"object(s) in {URI}/job41")
    expected = [
        "runs/fsdp/job41/.nsysgen-upload-complete",
        "runs/fsdp/job41/job_rank0.nsys-rep",
        "runs/fsdp/job41/job_rank1.nsys-rep",
        "runs/fsdp/job41/recipes/nccl_sum/nccl_sum.parquet",
    ]
    assert listing(s3, "runs/fsdp/") == expected  # no .venv
    size = aws(s3, "s3api", "head-object", "--bucket", BUCKET, "--key", expected[2])
    assert '"ContentLength": 4097' in size
    again = upload(folder, s3, str(local))
    assert again.returncode == 0, again.stderr
    assert "upload:" not in again.stdout + again.stderr  # nothing copied twice
    assert listing(s3, "runs/fsdp/") == expected
    # The next run (recipes.sh passes each run's folder) lands beside it, never over it.
    second = upload(folder, s3, str(reports(tmp_path / "reports" / "job42")))
    assert second.returncode == 0, second.stderr
    after = listing(s3, "runs/fsdp/")
    assert after[:4] == expected and [k.split("/")[2] for k in after[4:]] == ["job42"] * 4


def test_missing_bucket_is_a_clear_error(folder: Path, s3: dict[str, str], tmp_path: Path) -> None:
    local = reports(tmp_path / "reports")
    result = upload(folder, s3, str(local), "s3://no-such-bucket-19/x")
    assert result.returncode == 1
    assert "FAILED: bucket no-such-bucket-19 does not exist" in result.stderr
    assert "done" not in result.stdout


@pytest.mark.parametrize("key_id", ["AKIAWRONGWRONGWRONG1", None])
def test_wrong_credentials_fail_before_copying(
    folder: Path, s3: dict[str, str], tmp_path: Path, key_id: str | None
) -> None:
    local = reports(tmp_path / "reports")
    env = {**s3, "AWS_SECRET_ACCESS_KEY": "wrong-secret"}
    if key_id:
        env["AWS_ACCESS_KEY_ID"] = key_id
    result = upload(folder, env, str(local), f"s3://{BUCKET}/wrong-creds")
    assert result.returncode == 1
    assert f"FAILED: access to bucket {BUCKET} denied" in result.stderr
    assert "done" not in result.stdout
    assert listing(s3, "wrong-creds/") == []  # nothing half-written, no marker


def test_no_reports_is_an_error_not_an_empty_success(
    folder: Path, s3: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "empty").mkdir()
    result = upload(folder, s3, str(tmp_path / "empty"), f"s3://{BUCKET}/empty")
    assert result.returncode == 1 and "no .nsys-rep reports" in result.stderr
    assert listing(s3, "empty/") == []
