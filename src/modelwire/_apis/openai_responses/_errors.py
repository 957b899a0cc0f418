"""Errors a Responses stream reports (``response.failed``, the ``error`` event) → the
error classes, by the codes listed under "response.error.code" in the API reference."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import (
    AuthenticationError,
    ContentFilterError,
    InvalidRequestError,
    StreamError,
)
from .._common import in_band_error, is_context_overflow

if TYPE_CHECKING:
    from ._schema import _ErrorEvent

__all__ = ["error_from_code", "event_error"]


def error_from_code(message: str, code: str | int | None, type_: str | None) -> StreamError:
    """Map a Responses error (``response.error.code``, an ``error`` event) to a class.

    The codes are listed under "response.error.code" in the API reference; codes
    the shared mapping knows (rate_limit_exceeded, server_error,
    context_length_exceeded…) go through :func:`in_band_error`.
    """
    c = str(code) if code is not None else ""
    if "content_policy" in c:
        return ContentFilterError(f"{message} ({c})")
    if c == "invalid_api_key":
        return AuthenticationError(f"{message} ({c})")
    image_codes = ("empty_image_file", "failed_to_download_image", "unsupported_image_media_type")
    if (c.startswith(("invalid_", "image_")) or c in image_codes) and not is_context_overflow(
        message
    ):
        return InvalidRequestError(f"{message} ({c})")
    # The error event repeats the code as its type (insufficient_quota twice): say it once.
    return in_band_error(message, type_=type_ if type_ != c else None, code=c or None)


def event_error(ev: _ErrorEvent) -> StreamError:
    """The error an ``error`` event reports (its fields, or its nested ``error``'s)."""
    inner = ev.error
    message = ev.message or (inner.message if inner else None) or "the server sent an error"
    code = ev.code if ev.code is not None else (inner.code if inner else None)
    type_ = inner.type if inner else (ev.type if ev.type != "error" else None)
    if isinstance(code, int) and 400 <= code < 600:
        # llama.cpp's error line: an HTTP status as the code ({"code": 500, ...}).
        return in_band_error(message, type_=type_, status=code)
    return error_from_code(message, code, type_)
