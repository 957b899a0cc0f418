"""Structured output: ``output=`` on ``stream``/``complete``/their twins and the Agent.

Three ways to ask a model for a value of a given type (``output_mode``):

- ``native``: the API's own field (OpenAI Chat ``response_format`` json_schema,
  Responses ``text.format``, Anthropic ``output_config.format``, Gemini
  ``responseJsonSchema``, Ollama ``format``), added by each API's encoder from
  :class:`OutputRequest`;
- ``tool``: one synthetic tool (``final_result``) whose arguments are the value,
  forced with ``tool_choice``; the final message never shows it as a call — it
  becomes a text block holding the arguments' JSON, so no agent executes it;
- ``prompted``: the schema in the system prompt, the answer parsed from the text.

The default comes from the catalog (:func:`modelwire._apis._output_modes.output_mode`). The
response is validated once, when it ended well (:meth:`._plan.OutputPlan.finish`): the
value is kept on the final message (``message.parsed``); output that is not JSON,
fails the schema, was cut at the token limit or is missing ends the stream with
an ``output_invalid`` error naming the failing paths, content kept. While
streaming, :func:`._plan.partial_value` reads the JSON so far (jiter's partial mode): for
display only, never validated or acted on.
"""

__all__: list[str] = []
