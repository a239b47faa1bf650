"""Secrets in configs (secrets.py): known token shapes, credentials in URLs and long random
strings are found by shape, names, paths, hex digests and identifiers are not; values under a
secret-sounding name count only in an env block, and target.secret_env names are never flagged."""

from __future__ import annotations

import pytest

from nsysgen.profile.secrets import find_secrets, shape


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("AKIAIOSFODNN7EXAMPLE", "an AWS access key id"),
        ("--token=hf_" + "a" * 20, "a Hugging Face token"),
        ("ghp_" + "a1" * 15, "a GitHub token"),
        ("xoxb-1234567890-abc", "a Slack token"),
        ("sk-" + "A1b2" * 8, "an API key"),
        ("AIza" + "B" * 35, "a Google API key"),
        ("eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.sig", "a JSON web token"),
        ("-----BEGIN RSA PRIVATE KEY-----", "a private key"),
        ("https://user:pw@host/x", "a password in a URL"),
        ("https://bucket.s3.amazonaws.com/r?X-Amz-Signature=abc", "a credential in a URL query"),
        ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "a random key or token"),
        ("Q3xZ9kP2mL7vT4nB8wR1yH6jF5dS0aGc", "a random key or token"),
    ],
)
def test_credentials_by_their_shape(text: str, what: str) -> None:
    assert shape(text) == what


@pytest.mark.parametrize(
    "text",
    [
        "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL_with_more_words",
        "sha256:" + "ab12" * 16,
        "/fsx/nsight-reports/fsdp-p5-slurm/job%q{SLURM_JOB_ID}",
        "a" * 40,
        "Q3xZ9kP2mL7vT4nB8wR1yH6jF5dS0a",  # 30 characters: too short to tell
        "https://developer.download.nvidia.com/devtools/repos/ubuntu2204/amd64/x.deb",
    ],
    ids=["kernel-name", "digest", "path", "one-letter", "short", "plain-url"],
)
def test_names_paths_and_digests_are_not_secrets(text: str) -> None:
    assert shape(text) is None


def test_every_value_at_the_path_the_user_wrote() -> None:
    values = {
        "cluster": {"env": {"API_TOKEN": "abc", "HOST": "x", "DB_PASSWORD": ""}},
        "target": {"secret_env": {"HF_TOKEN": "hf_" + "a" * 20}},
        "workload": {"args": ["--lr=1", "--token=hf_" + "b" * 24], "password": "plain"},
    }
    assert list(find_secrets(values)) == [
        ("cluster.env.API_TOKEN", "is named like a secret (API_TOKEN)"),
        ("workload.args[1]", "holds what looks like a Hugging Face token"),
    ]
