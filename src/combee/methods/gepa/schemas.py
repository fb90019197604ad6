"""The JSON schemas of the GEPA roles' replies (built once, shared by every call)."""

from __future__ import annotations

from combee.llm.types import JsonSchema


def _object(**properties: str) -> dict[str, object]:
    return {
        "type": "object",
        "properties": {
            name: {"type": "string", "description": d} for name, d in properties.items()
        },
        "required": list(properties),
        "additionalProperties": False,
    }


GENERATOR = JsonSchema(
    "gepa_generator",
    _object(
        reasoning="How the answer was worked out, step by step.",
        final_answer="The answer alone, in the format the question asks for.",
    ),
)

PROPOSAL = JsonSchema(
    "gepa_proposal",
    _object(
        reasoning="What went wrong in the examples and which general rules would fix it.",
        instruction="The complete revised instruction.",
    ),
)

MERGE = JsonSchema(
    "gepa_merge",
    _object(
        reasoning="Which rules of the proposals were kept, combined or dropped, and why.",
        instruction="The complete merged instruction.",
    ),
)

SUMMARIZE = JsonSchema(
    "gepa_summarize",
    _object(
        reasoning="Which mistakes and successes the attempts share, and how they were grouped.",
        summary="The condensed feedback: every distinct mistake or lesson, each once.",
    ),
)
