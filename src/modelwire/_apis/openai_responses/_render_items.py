"""The output items :class:`~modelwire._apis.openai_responses.render.ResponsesRenderer`
streams, as it remembers them while they are open."""

from __future__ import annotations

from ._output_items import encode

__all__ = ["CALL", "CLIENT", "TEXT", "THINKING", "Item", "mid"]

# CLIENT: a Responses backend's call the client executes (shell_call, apply_patch_call,
# custom_tool_call…), sent when it ends as the item it came as.
TEXT, THINKING, CALL, CLIENT = 0, 1, 2, 3


class Item:
    """One output item being streamed."""

    __slots__ = ("buffer", "cite0", "id", "index", "kind", "mid", "notes", "offset", "phase",
                 "streamed")  # fmt: skip

    def __init__(
        self, kind: int, index: int, item_id: str, offset: int = 0, cite0: int = 0
    ) -> None:
        self.kind = kind
        self.index = index
        self.id = item_id
        self.phase: str | None = None
        self.offset = offset  # characters of the block before this item (a continuation)
        self.cite0 = cite0  # the block's citations before this item
        self.notes = 0  # annotations streamed
        # Whether a delta was written: a block that arrives whole (a call some APIs
        # send in one piece) still gets one, for clients that read the deltas only.
        self.streamed = False
        # What is held back until the block ends, when its id is known: a Responses
        # backend's reasoning, a call whose signature comes as it ends.
        self.buffer: list[str] | None = None
        self.mid = mid(kind, index, item_id)


def mid(kind: int, index: int, item_id: str) -> bytes:
    ids = encode(item_id).decode()
    if kind == TEXT:
        return f',"item_id":{ids},"output_index":{index},"content_index":0'.encode()
    if kind == THINKING:
        return f',"item_id":{ids},"output_index":{index},"summary_index":0'.encode()
    return f',"item_id":{ids},"output_index":{index}'.encode()
