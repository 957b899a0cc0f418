"""``mw.batch`` and ``batch_async`` take one definition of their options
(``modelwire.batching._options``): adding an option touches one place."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from modelwire.batching import batch, batch_async
from modelwire.batching._options import BatchConfig, BatchOptions


def _options_of(fn: Any) -> list[tuple[str, Any, Any]]:
    params = inspect.signature(fn).parameters.values()
    return [(p.name, p.annotation, p.default) for p in params if p.kind is p.KEYWORD_ONLY]


def test_both_twins_take_the_one_options_definition() -> None:
    for fn in (batch, batch_async):
        # The real parameters: input, output and **options typed by BatchOptions.
        assert fn.__code__.co_flags & inspect.CO_VARKEYWORDS
        assert fn.__code__.co_varnames[:3] == ("input", "output", "options")
        assert fn.__annotations__["options"] == "Unpack[BatchOptions]"
    fields = [(f.name, f.type, f.default) for f in dataclasses.fields(BatchConfig)]
    assert _options_of(batch) == _options_of(batch_async) == fields
    # The caller's type (BatchOptions) and the defaults' holder (BatchConfig) agree.
    hints = {k: v.__forward_arg__ for k, v in BatchOptions.__annotations__.items()}
    assert hints == {f.name: f.type for f in dataclasses.fields(BatchConfig)}
    assert BatchOptions.__required_keys__ == frozenset()


def test_the_defaults_are_stated_once() -> None:
    cfg = BatchConfig.of("batch", {})
    assert (cfg.concurrency, cfg.max_attempts, cfg.backend, cfg.output_format) == (
        16, 4, "local", "modelwire",
    )  # fmt: skip
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.concurrency = 2  # type: ignore[misc]


def test_an_unknown_or_mistyped_option_is_refused_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "not-there.jsonl"  # refused before the input is read
    with pytest.raises(
        TypeError, match=r"batch\(\) .* 'concurency' \(did you mean 'concurrency'\?\)"
    ):
        mw.batch(missing, tmp_path / "o.jsonl", concurency=4)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"batch_async\(\) got an unexpected keyword argument 'x'$"):
        asyncio.run(batch_async(missing, tmp_path / "o.jsonl", x=1))  # type: ignore[call-arg]
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ({"skip_invalid": "yes"}, "skip_invalid must be True or False, got 'yes'"),
        ({"base_url": 8080}, "base_url must be a URL string (or None), got 8080"),
        ({"api": 1}, "api must be a wire API name"),
        ({"ray_address": 1}, "ray_address must be a Ray address string"),
        ({"agent_root": 3}, "agent_root must be a directory path"),
        ({"backend": "cloud"}, 'backend must be "local" or "ray", got \'cloud\''),
        ({"models": ["mock/m"]}, "models must be a dict"),
        ({"models": {"mock/m": "gpt"}}, "models['mock/m'] must be a mw.Model or mw.Fallback"),
        ({"limits": 5}, "limits must be a modelwire.batching.Limits or a dict of them"),
        ({"concurrency": "4"}, "concurrency must be a positive integer, got '4'"),
    ],
)  # fmt: skip
def test_a_wrong_value_is_a_configuration_error_naming_the_option(
    tmp_path: Path, bad: dict[str, Any], says: str
) -> None:
    with pytest.raises(mw.ConfigurationError, match=re.escape(says)):
        mw.batch(tmp_path / "not-there.jsonl", tmp_path / "o.jsonl", **bad)
    assert not (tmp_path / "o.jsonl").exists()
