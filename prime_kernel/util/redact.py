"""Find the secrets a record must not carry, and blank them out.

Secrets come from where a process keeps them: the daemon's live kernel tokens, the server's
token, provider keys in the environment and key-like values in configuration.
`secrets_of()` collects them; `Redactor` replaces each with `[REDACTED]` in text, in nested
JSON-like values (`scrub()`) and in the strings of a pickle (`Redactor.pickle`); `Scrubber`
keeps the collection current for a running daemon (live tokens come and go). The daemon's store
applies it to everything it writes (daemon/store), once: what it keeps is what every reader —
REST, exports, prompts — sees.
"""

from __future__ import annotations

import functools
import io
import os
import pickle
import pickletools
import re
import struct
import threading
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"

# Shorter values would blank out ordinary words and numbers all over a notebook.
MIN_SECRET_LENGTH = 8

# Bytes searched per call in large values (a few milliseconds, even in the worst case).
SEARCH_WINDOW = 1 << 18

# How litellm (and the providers it calls) name credentials in the environment: every
# variable litellm reads with one of these endings holds a key, token or password
# (OPENAI_API_KEY, WATSONX_APIKEY, WATSONX_ZENAPIKEY, AIMLAPI_KEY, AWS_SESSION_TOKEN,
# AZURE_CLIENT_SECRET, REDIS_PASSWORD, VERTEXAI_CREDENTIALS, CLARIFAI_PAT, ...). Names that
# merely end in _TOKEN_FILE or _KEY_URL are paths and addresses, not secrets.
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|ZENAPIKEY|KEY|TOKEN|SECRET|SECRET_KEY|SECRET_ID|ACCESS_KEY|"
    r"ACCESS_KEY_ID|PASSWORD|PASSWD|CREDENTIALS?|PAT)$"
)

# Provider credentials litellm reads whose names the pattern above does not catch.
LITELLM_ENV_KEYS = frozenset(
    {
        "AWS_BEARER_TOKEN_BEDROCK",
        "CIRCLE_OIDC_TOKEN_V2",
        "GITHUB_COPILOT_API_KEY",
        "HUGGING_FACE_HUB_TOKEN",
        "ISSUER_SIGNING_KEY_PEM",
        "LITELLM_SECRET_AWS_KMS_LITELLM_LICENSE",
        "OR_SITE_URL_TOKEN",
    }
)

# Also request headers given as settings (`model_kwargs={"extra_headers": {...}}`): the value of
# an Authorization or X-Api-Key header is the credential itself.
_CONFIG_KEY = re.compile(
    r"(api[_-]?key|token|secret|password|access_key|credentials?|authorization)$", re.I
)


# Cached: the daemon reads the environment before every record it scrubs, and a process has few
# distinct variable names.
@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether an environment variable called `name` holds a credential."""
    upper = name.upper()
    return upper in LITELLM_ENV_KEYS or bool(_SECRET_NAME.search(upper))


def environment_secrets(environ: Mapping[str, str] | None = None) -> set[str]:
    """Values of environment variables named like credentials."""
    env = os.environ if environ is None else environ
    # Only the credentials' values are read (os.environ decodes each value it is asked for).
    return {env[name] for name in env if is_secret_name(name)}


def config_secrets(config: Any) -> set[str]:
    """String values under key-like names anywhere in a (nested) config mapping."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                if isinstance(value, str) and _CONFIG_KEY.search(str(key)):
                    found.add(value)
                else:
                    walk(value)
        elif isinstance(node, (list, tuple)):
            for item in node:
                walk(item)

    walk(config)
    return found


def secrets_of(
    environ: Mapping[str, str] | None,
    config: Any,
    server_token: str | None,
    live_tokens: Iterable[str],
) -> set[str]:
    """Every secret a record could leak: provider keys in `environ`, key-like values in
    `config` (a traitlets Config or any nested mapping), the server's token, and the
    capability tokens of live kernels. Values too short to be secrets are dropped."""
    found = environment_secrets(environ if environ is not None else {})
    found |= config_secrets(config)
    found |= set(live_tokens)
    if server_token:
        found.add(server_token)
    return {s for s in found if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH}


def scrub(value: Any, secrets: Iterable[str | None]) -> Any:
    """A copy of a JSON-like `value` with every secret replaced by `[REDACTED]`."""
    return Redactor(secrets).value(value)


class Redactor:
    """Replaces every occurrence of the given secrets with `[REDACTED]`."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        values = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH}
        # Longest first, so a secret that contains another is removed whole.
        self._values = sorted(values, key=len, reverse=True)
        self.count = len(self._values)
        self._shortest = len(self._values[-1]) if self._values else 0
        self._pattern: re.Pattern[str] | None = None

    def text(self, value: str) -> str:
        # A substring search per secret is far cheaper than the pattern on large outputs,
        # and nearly every text holds no secret at all. Most texts a record or an event
        # holds (its keys, states, names) are shorter than any secret: those are not searched.
        if len(value) < self._shortest or not any(s in value for s in self._values):
            return value
        if self._pattern is None:
            # Compiled on the first secret found, not on creation: a daemon makes a redactor
            # whenever its kernel tokens change (each kernel start), and compiling the
            # alternation of hundreds of tokens cost ~10 ms a time in a fan-out.
            self._pattern = re.compile("|".join(map(re.escape, self._values)))
        return self._pattern.sub(REDACTED, value)

    def unfinished(self, text: str) -> int:
        """The length of the longest end of `text` that a secret begins with (0: none): text
        sent in pieces holds that back until the next piece shows whether the secret follows."""
        longest = 0
        for secret in self._values:
            for n in range(min(len(secret) - 1, len(text)), longest, -1):
                if text.endswith(secret[:n]):
                    longest = n
                    break
        return longest

    def found_in(self, data: bytes | bytearray) -> bool:
        """Whether any secret appears in `data` (as UTF-8). Searched a window at a time: one
        search of a large value holds the GIL throughout — seconds for 150 MB of one repeated
        byte — and the daemon's event loop waits for it, even with the search in a thread."""
        for s in self._values:
            raw = s.encode("utf-8", "surrogatepass")
            for start in range(0, max(len(data) - len(raw) + 1, 0), SEARCH_WINDOW):
                # Windows overlap by len(raw) - 1 bytes: a secret across a boundary is found.
                if data.find(raw, start, start + SEARCH_WINDOW + len(raw) - 1) >= 0:
                    return True
        return False

    def pickle(self, data: bytes | bytearray) -> bytes | bytearray:
        """`data`, a pickle, with every secret in its strings replaced: `[REDACTED]` in a
        text, asterisks of the same length in bytes (an array's buffer keeps its size).
        Unchanged when no secret is in it (nearly always, and then nearly free); a pickle
        that cannot be read is returned with the secret's bytes masked in place."""
        if not self._values or not self.found_in(data):
            return data
        try:
            return _rewrite_strings(data, self)
        except Exception:  # not a pickle we can walk: mask the raw bytes
            return self.mask(data)

    def mask(self, data: bytes | bytearray) -> bytes | bytearray:
        """`data` with every secret's bytes replaced by as many asterisks."""
        for s in self._values:
            raw = s.encode("utf-8", "surrogatepass")
            data = data.replace(raw, b"*" * len(raw))
        return data

    def value(self, node: Any) -> Any:
        """A copy of a JSON-like value with every string (keys included) redacted."""
        if not self._values:
            return node
        if isinstance(node, str):
            return self.text(node)
        if isinstance(node, dict):  # a NotebookNode stays one
            return type(node)((self.text(str(k)), self.value(v)) for k, v in node.items())
        if isinstance(node, (list, tuple)):
            return [self.value(v) for v in node]
        return node


_TEXT_OPS = {"UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8"}
_BYTES_OPS = {
    "BINBYTES",
    "SHORT_BINBYTES",
    "BINBYTES8",
    "BYTEARRAY8",
    "STRING",
    "BINSTRING",
    "SHORT_BINSTRING",
}


def _rewrite_strings(data: bytes | bytearray, redactor: Redactor) -> bytes:
    """The pickle `data` re-emitted opcode by opcode, its strings redacted. Frames (lengths of
    the parts that follow, a reading hint only) are dropped, since lengths change."""
    ops = list(pickletools.genops(io.BytesIO(data)))
    out = bytearray()
    for i, (op, arg, pos) in enumerate(ops):
        end = ops[i + 1][2] if i + 1 < len(ops) else len(data)
        assert pos is not None and end is not None
        if op.name == "FRAME":
            continue
        if op.name in _TEXT_OPS and isinstance(arg, str):
            text = redactor.text(arg)
            out += data[pos:end] if text == arg else _unicode_op(text)
        elif op.name in _BYTES_OPS and isinstance(arg, (bytes, bytearray)):
            raw = redactor.mask(bytes(arg))
            out += data[pos:end] if raw == arg else _bytes_op(op.name, raw)
        else:
            out += data[pos:end]
    return bytes(out)


def _unicode_op(text: str) -> bytes:
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) < 256:
        return pickle.SHORT_BINUNICODE + bytes([len(raw)]) + raw
    if len(raw) < 2**32:
        return pickle.BINUNICODE + struct.pack("<I", len(raw)) + raw
    return pickle.BINUNICODE8 + struct.pack("<Q", len(raw)) + raw


def _bytes_op(name: str, raw: bytes | bytearray) -> bytes:
    # Same length as before (the mask keeps it): the same opcode family fits.
    if name == "BYTEARRAY8":
        return pickle.BYTEARRAY8 + struct.pack("<Q", len(raw)) + raw
    if name in ("STRING", "BINSTRING", "SHORT_BINSTRING"):  # Python 2 str: a latin-1 text
        return pickle.BINSTRING + struct.pack("<i", len(raw)) + raw
    if len(raw) < 256:
        return pickle.SHORT_BINBYTES + bytes([len(raw)]) + raw
    if len(raw) < 2**32:
        return pickle.BINBYTES + struct.pack("<I", len(raw)) + raw
    return pickle.BINBYTES8 + struct.pack("<Q", len(raw)) + raw


class Scrubber:
    """The secrets of a running daemon, kept current: fixed ones (config values, the server's
    token), provider keys in the environment as it is now, and the live kernel tokens."""

    def __init__(self, environ: Mapping[str, str] | None = None, config: Any = None) -> None:
        self._environ = environ  # None: os.environ, read at each use
        self.static = secrets_of(None, config, None, ())
        self._lock = threading.Lock()
        self._cached: tuple[frozenset[str], Redactor] | None = None
        # The environment's credentials, and a copy of os.environ's own (bytes) mapping when they
        # were read: comparing the two tells, exactly and in microseconds, whether it changed.
        self._env_secrets: set[str] = set()
        self._env_seen: dict[Any, Any] | None = None

    def add(self, *values: str | None) -> None:
        """More fixed secrets (the server's token, once the server knows it)."""
        with self._lock:
            self.static |= secrets_of(None, None, None, [v for v in values if v])
            self._cached = None

    def redactor(self, live_tokens: Iterable[str]) -> Redactor:
        env = os.environ if self._environ is None else self._environ
        raw = getattr(env, "_data", None)  # os.environ's; another mapping is read every time
        with self._lock:
            if raw is None or raw != self._env_seen:
                self._env_secrets = environment_secrets(env)
                self._env_seen = dict(raw) if raw is not None else None
            found = self._env_secrets | set(live_tokens)
            current = frozenset(s for s in found if len(s) >= MIN_SECRET_LENGTH)
            if self._cached is None or self._cached[0] != current:
                self._cached = (current, Redactor(self.static | current))
            return self._cached[1]

    def scrub(self, value: Any, live_tokens: Iterable[str]) -> Any:
        return self.redactor(live_tokens).value(value)
