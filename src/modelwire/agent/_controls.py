"""What a caller does to an :class:`~modelwire.agent.Agent` from outside its loop: read
the transcript, reset it, queue steering and follow-up messages, abort a run (from any
thread). The loop (:mod:`modelwire.agent._loop`) reads the queues at turn boundaries.
"""

from __future__ import annotations

from collections import deque

from ..errors import ConfigurationError
from ..types import Message, UserMessage
from ._turns import RunState, to_user

__all__ = ["Controls"]


class Controls:
    """The :class:`~modelwire.agent.Agent`'s outside controls: the state they touch is
    declared here, set by ``Agent.__init__``."""

    _messages: list[Message]
    _steering: deque[UserMessage]
    _follow_ups: deque[UserMessage]
    _executed: set[str]
    _state: RunState | None

    @property
    def messages(self) -> tuple[Message, ...]:
        """The transcript so far."""
        return tuple(self._messages)

    @property
    def running(self) -> bool:
        """True while a run is in progress."""
        return self._state is not None

    def reset(self) -> None:
        """Forget the transcript and queued messages (not while running)."""
        if self._state is not None:
            raise ConfigurationError("reset() while the agent is running; abort() first")
        self._messages.clear()
        self._steering.clear()
        self._follow_ups.clear()
        self._executed.clear()

    def steer(self, message: str | UserMessage) -> None:
        """Queue a user message for the next turn boundary (after the current
        turn's tool results), also when the model was about to stop."""
        self._steering.append(to_user(message))

    def follow_up(self, message: str | UserMessage) -> None:
        """Queue a user message delivered only when the run would otherwise stop."""
        self._follow_ups.append(to_user(message))

    def abort(self) -> None:
        """Abort the current run (callable from any thread): the model stream ends
        ``aborted``, running tools are cancelled (answered ``aborted``), the run
        ends with ``stop_reason="aborted"``."""
        st = self._state
        if st is None:
            return
        st.aborted = True
        stream = st.stream
        if stream is not None:
            stream.abort()
        for ev in list(st.cancels):
            ev.set()
        loop = st.loop
        for task in list(st.tasks):
            try:
                if loop is not None:
                    loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop is closed
                pass

    @staticmethod
    def _drain(queue: deque[UserMessage]) -> list[UserMessage]:
        out = list(queue)
        queue.clear()
        return out
