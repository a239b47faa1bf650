"""Secrets in configs: by the name they are stored under and by their shape.

Generated files are committed and read by everyone with access to the repository, so a value
that looks like a credential stops the compile (lint NSG010). Every value of every block is
scanned, at the config path the user wrote. Detection is heuristic by nature: known token
formats, credentials inside URLs, values stored under secret-sounding names, and long random
strings (high entropy, mixed case and digits, not a hex digest).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from nsysgen.config.hygiene import walk

# Variable names that hold credentials (AWS_SAK: some teams' short name for the secret key).
_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL"
    r"|AUTH|SAK\b|_SAK|SESSION_KEY)",
    re.I,
)
_KNOWN_SHAPES = (
    ("an AWS access key id", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{20,}")),
    ("a GitHub token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("a Slack token", re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}")),
    ("an API key", re.compile(r"\bsk-[A-Za-z0-9_-]{32,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("a password in a URL", re.compile(r"://[^/\s:@]+:[^/\s@]+@")),
    (
        "a credential in a URL query",
        re.compile(
            r"[?&](token|access_token|api_key|apikey|key|sig|signature|password|secret"
            r"|X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token)=[^&\s]+",
            re.I,
        ),
    ),
)
# Runs of characters a random key or token is made of (base64url; "/" would join path parts),
# and the AWS secret access key: 40 characters of base64, "/" included, standing alone.
_RANDOM_RUN = re.compile(
    r"[A-Za-z0-9+=_-]{32,}|(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=])"
)
_HEX = re.compile(r"[0-9a-fA-F]+")
_ENTROPY_BITS = 4.2  # per character: random base64 is near 6, English words and paths below 4


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


# One word of an identifier: camelCase or CamelCase words, an upper-case abbreviation, a
# lower-case word with digits (f32, bf16, sm90), or a number.
_WORD = re.compile(
    r"(?:[A-Z]?[a-z]+)(?:[A-Z][a-z]+|[A-Z]{1,4}(?![a-z]))*|[A-Z]{1,8}\d*|[a-z]+\d+[a-z]*|\d+"
)


def _identifier(run: str) -> bool:
    """Words joined by '_' or '-' (ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL): a name, not a
    key. Random base64url has few separators, and the pieces between them are no words."""
    parts = re.split(r"[_-]+", run)
    return len(parts) >= 3 and all(_WORD.fullmatch(part) for part in parts)


def _looks_random(text: str) -> bool:
    for match in _RANDOM_RUN.finditer(text):
        run = match.group(0).strip("-_=")
        if len(run) < 32 or _HEX.fullmatch(run) or _identifier(run):
            continue  # digests (sha256, image digests) and names are not secrets
        classes = sum(bool(re.search(p, run)) for p in ("[a-z]", "[A-Z]", "[0-9]"))
        if classes == 3 and _entropy(run) >= _ENTROPY_BITS:
            return True
    return False


def shape(text: str) -> str | None:
    """What `text` looks like, if it looks like a credential."""
    for name, pattern in _KNOWN_SHAPES:
        if pattern.search(text):
            return name
    return "a random key or token" if _looks_random(text) else None


def find_secrets(values: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(config path, message) for every value that looks like a secret."""
    for path, text, is_key in walk(values):
        if is_key or not isinstance(text, str):
            continue
        key = path.rsplit(".", 1)[-1]
        if path.startswith("target.secret_env."):
            continue  # names of Kubernetes Secrets: the right way to pass one
        found = shape(text)
        if found:
            yield path, f"holds what looks like {found}"
        elif ".env." in f".{path}" and _SECRET_NAME.search(key) and text:
            yield path, f"is named like a secret ({key})"
