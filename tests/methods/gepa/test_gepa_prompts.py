"""The GEPA roles' messages, to the character: the scripted model and any recorded run read them."""

from __future__ import annotations

from combee.methods.gepa.prompts import (
    MERGE_SYSTEM,
    PROPOSAL_SYSTEM,
    SUMMARIZE_SYSTEM,
    merge_messages,
    proposal_messages,
    summarize_messages,
)

RECORDS = [
    {"Inputs": {"question": "2+2?"}, "Generated Outputs": "5", "Feedback": "wrong: 4"},
    {"Inputs": {"question": "3*3?"}, "Generated Outputs": "9", "Feedback": "correct\nwell done"},
]

EXAMPLES = (
    "<examples>\n"
    "### Example 1\n"
    "Inputs:\n"
    "  question: 2+2?\n"
    "Generated Outputs: 5\n"
    "Feedback: wrong: 4\n"
    "\n"
    "### Example 2\n"
    "Inputs:\n"
    "  question: 3*3?\n"
    "Generated Outputs: 9\n"
    "Feedback:\n"
    "  correct\n"
    "  well done\n"
    "</examples>\n"
)

HEAD = (
    "Component: system_prompt\n\n"
    "<current_instruction>\nAnswer carefully.\n</current_instruction>\n\n"
)


def test_proposal_messages() -> None:
    assert proposal_messages("system_prompt", "Answer carefully.", RECORDS) == [
        {"role": "system", "content": PROPOSAL_SYSTEM},
        {"role": "user", "content": HEAD + EXAMPLES + "\nWrite the revised instruction."},
    ]


def test_summarize_messages() -> None:
    assert summarize_messages("system_prompt", "Answer carefully.", RECORDS) == [
        {"role": "system", "content": SUMMARIZE_SYSTEM},
        {"role": "user", "content": HEAD + EXAMPLES + "\nWrite the condensed feedback."},
    ]


def test_merge_messages() -> None:
    revisions = (
        "<revisions>\n"
        "### Revision 1\n<instruction>\nCheck sums.\n</instruction>\n"
        "\n"
        "### Revision 2\n<instruction>\nShow work.\nThen answer.\n</instruction>\n"
        "</revisions>\n"
    )
    assert merge_messages(
        "system_prompt", "Answer carefully.", ["Check sums.", "Show work.\nThen answer."]
    ) == [
        {"role": "system", "content": MERGE_SYSTEM},
        {"role": "user", "content": HEAD + revisions + "\nWrite the single merged instruction."},
    ]


def test_no_examples_leaves_the_list_empty() -> None:
    user = proposal_messages("c", "", [])[1]["content"]
    assert user == (
        "Component: c\n\n<current_instruction>\n\n</current_instruction>\n\n"
        "<examples>\n\n</examples>\n\nWrite the revised instruction."
    )
