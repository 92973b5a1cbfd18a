"""LanguageModel and Generation: text generation with a model directory (docs/lm.md).

Convenience over the core's ``polyffi.lm.load`` module, which owns everything that matters
(the tokenizer, the paged KV cache, prefill and decode, sampling, stop tokens)::

    lm = polyffi.LanguageModel("tests/tvm_models/tvm027/lm")
    with lm.generate("Hello", max_tokens=8, temperature=0) as gen:
        for token in gen:                     # Token(id, text), one decode step each
            print(token.text, end="")
    print(gen.finish_reason)                  # "stop" or "length"

    async with lm.generate("Hello", seed=3) as gen:
        async for token in gen:               # each step on the core's async pool
            ...

Many generations may run at once on one model (up to the cache's ``max_batch_size``), from
several threads too: the core serialises the calls on one model. Errors are the core's, as
typed exceptions: ValueError for a bad option, prompt or token id, RuntimeError when the cache
is full or too many generations are alive, FileNotFoundError / ValueError from the constructor.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Union

import numpy as np

from . import nd
from .registry import Module, get_global_func

Prompt = Union[str, Sequence[int], np.ndarray]


class Token(NamedTuple):
    """One generated token: its id in the vocabulary and its text."""

    id: int
    text: str


def _token_array(tokens: Iterable[int], what: str) -> Any:
    """Token ids as the NDArray int32 (n,) the core takes."""
    try:
        a = np.asarray(tokens if isinstance(tokens, np.ndarray) else list(tokens))
    except TypeError as e:
        raise TypeError(f"{what} must be a sequence of int token ids") from e
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise TypeError(f"{what} must be a flat sequence of int token ids, not {a.dtype} "
                        f"of shape {a.shape}")
    if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
        raise ValueError(f"{what}: a token id does not fit in int32")
    return nd.array(np.ascontiguousarray(a, dtype=np.int32))


class Generation:
    """One running generation: an iterator (and async iterator) of :class:`Token`.

    The first step prefills the prompt, each later one decodes a token. A stop token ends the
    generation without being yielded (``finish_reason == "stop"``); ``max_tokens`` ends it with
    ``"length"``. ``close()`` (or leaving the ``with`` block) frees its place in the cache now.
    """

    def __init__(self, model: "LanguageModel", module: Module) -> None:
        self._model = model
        #: The core's polyffi.Generation module.
        self.module = module
        self._next = module["next"]
        self._token_text = model._token_text

    def _token(self, token_id: int) -> Token:
        return Token(token_id, self._token_text(token_id))

    # -- iteration
    def __iter__(self) -> "Generation":
        return self

    def __next__(self) -> Token:
        token_id = self._next()
        if token_id < 0:
            raise StopIteration
        return self._token(token_id)

    def __aiter__(self) -> "Generation":
        return self

    async def __anext__(self) -> Token:
        """The next step on the core's async pool (as ``PackedFunc.call_async``): the event loop
        stays free while the model runs."""
        token_id = await self._next.call_async()
        if token_id < 0:
            raise StopAsyncIteration
        return self._token(token_id)

    # -- state
    @property
    def finish_reason(self) -> Optional[str]:
        """None while running, then ``"stop"`` or ``"length"``."""
        reason = self.module["finish_reason"]()
        return reason or None

    @property
    def prompt_tokens(self) -> int:
        return int(self.module["prompt_tokens"]())

    @property
    def completion_tokens(self) -> int:
        return int(self.module["completion_tokens"]())

    def logits(self) -> np.ndarray:
        """A copy of the logits (float32, (vocab_size,)) the last token was chosen from;
        ValueError before the first step."""
        return self.module["logits"]().numpy()

    # -- lifetime
    def close(self) -> None:
        """Free this generation's sequence in the cache now; iteration then ends."""
        self.module["close"]()

    async def aclose(self) -> None:
        """``close()`` on the core's async pool (it waits for a step another thread runs)."""
        await self.module["close"].call_async()

    def __enter__(self) -> "Generation":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> "Generation":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return (f"Generation(prompt_tokens={self.prompt_tokens}, "
                f"completion_tokens={self.completion_tokens}, "
                f"finish_reason={self.finish_reason!r})")


class LanguageModel:
    """A language model directory (``lm-config.json``, the model library, its weights)."""

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        #: The core's polyffi.LanguageModel module.
        self.module: Module = get_global_func("polyffi.lm.load")(os.fspath(path))
        self.path = os.fspath(path)
        self._encode = self.module["encode"]
        self._decode = self.module["decode"]
        self._token_text = self.module["token_text"]
        self._generate = self.module["generate"]
        self._config: Optional[Dict[str, Any]] = None

    @property
    def config(self) -> Dict[str, Any]:
        """The parsed configuration (vocab_size, kv_cache, tokenizer, stop_token_ids)."""
        if self._config is None:
            self._config = json.loads(self.module["config"]())
        return dict(self._config)

    @property
    def vocab_size(self) -> int:
        return int(self.config["vocab_size"])

    def encode(self, text: str) -> List[int]:
        """The token ids of text; ValueError naming a character outside the vocabulary."""
        return self._encode(text).numpy().tolist()

    def decode(self, tokens: Iterable[int]) -> str:
        """The text of token ids; ValueError for an id outside the vocabulary."""
        return self._decode(_token_array(tokens, "decode(tokens)"))

    def token_text(self, token_id: int) -> str:
        return self._token_text(token_id)

    def generate(self, prompt: Prompt, *, max_tokens: int = 16, temperature: float = 1.0,
                 top_p: float = 1.0, seed: int = 0, stop: Union[str, Sequence[str], None] = None,
                 stop_token_ids: Optional[Sequence[int]] = None) -> Generation:
        """Start a generation from prompt (text, or token ids).

        temperature 0 is greedy (argmax); otherwise the core samples with top_p from a generator
        seeded by seed, the same tokens in every binding. stop: strings of one token each that
        end the generation (a str is one stop string); stop_token_ids add to the config's.
        """
        options: Dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature,
                                   "top_p": top_p, "seed": seed}
        if stop is not None:
            options["stop"] = [stop] if isinstance(stop, str) else list(stop)
        if stop_token_ids is not None:
            options["stop_token_ids"] = list(stop_token_ids)
        try:
            text = json.dumps(options, allow_nan=False)
        except TypeError as e:
            raise TypeError(f"generate: an option is not a JSON value: {e}") from e
        except ValueError as e:
            raise ValueError(f"generate: an option is not a finite number: {e}") from e
        if not isinstance(prompt, str):
            prompt = _token_array(prompt, "generate(prompt)")
        return Generation(self, self._generate(prompt, text))

    def __repr__(self) -> str:
        return f"LanguageModel({self.path!r})"


__all__ = ["LanguageModel", "Generation", "Token"]
