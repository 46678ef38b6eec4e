"""The shapes of what the LLM client sends and keys its cache by: typed views of plain JSON objects (TypedDicts:
plain dicts at run time, so what is sent and hashed is unchanged)."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class AnswerFields(TypedDict):
    """:meth:`LLMSettings.answer_fields`: the settings that reach the cache key."""

    base_url: str
    model: str
    temperature: float
    max_tokens: int
    seed: int | None


class JsonSchemaFormat(TypedDict):
    name: str
    strict: bool
    schema: dict[str, Any]


class ResponseFormat(TypedDict):
    type: str
    json_schema: JsonSchemaFormat


class ChatBody(TypedDict):
    """:meth:`LLMClient.request_body`: the JSON body of one ``/chat/completions`` call."""

    model: str
    messages: list[dict[str, str]]
    temperature: float
    max_tokens: int
    stream: bool
    seed: NotRequired[int]
    response_format: NotRequired[ResponseFormat]
