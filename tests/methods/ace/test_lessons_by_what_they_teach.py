"""A lesson reaches the playbook for what it teaches, never for the words it uses: a scripted
reflector over real HTTP writes lessons in a neutral voice, in an agent's voice, in the first
person, with `playbook`, `bullet` or `generator` as words of their domain, and the embedded
model's recorded remarks; the reflector's ``key_insight_about`` field alone tells a remark."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

import combee
from combee.llm import connect
from combee.methods.ace.playbook import Playbook
from combee.methods.ace.schemas import INSIGHT_ABOUT
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.base import Sample, Score
from tests.paths import DATA

FORMULA_LESSONS = (
    "compound interest grows a principal P to P x (1 + rate)^n after n periods, with the rate "
    "per period.",
    "a markup percentage is (price - cost) / cost x 100, taken over the cost, not the price.",
    "a growth rate is (new value - old value) / old value, written as a percentage.",
    "straight-line depreciation per year is (cost - salvage value) / useful life in years.",
    "a running pace is time over distance: 25 minutes for 5 km is a pace of 5 minutes per km.",
    "a percentage gain is (final - initial) / initial x 100, and a loss is a negative gain.",
)
"""Six genuine Formula lessons, each to be written in every voice of :data:`VOICES`."""

VOICES = {
    "neutral": "{Lesson}",
    "assistant": "The assistant should remember that {lesson}",
    "model": "The model should use this: {lesson}",
    "first person": "I need to remember that {lesson}",
    "attempts": "Attempts at such questions must use the fact that {lesson}",
}

IN_THE_WILD = (
    # Bullets as ACE-style playbooks write them.
    "Keep slide decks to at most five bullets per slide.",
    "The team playbook for incident response starts with paging the on-call engineer.",
    "A bullet's kinetic energy is one half of its mass times its velocity squared.",
    "The generator must be grounded before refuelling.",
    "When a question gives an annual rate and monthly payments, divide the rate by 12.",
    "For EBITDA, add depreciation and amortization back to operating income.",
    "Always check whether a date range is inclusive of both ends before counting days.",
    "Use the list's length, not its last index, when computing an average.",
    "A model train at 1:87 scale is 87 times smaller than the real one.",
    "Playbook entries for football set plays name the formation before the route.",
    "Convert every amount to the same currency before comparing totals.",
    "In FiNER, a share count is tagged as a number of shares, not as a monetary amount.",
    "Round only the final answer, never the intermediate results.",
    "A bullet point list in a contract does not change the clauses' order of precedence.",
    "The attempt limit for a locked account is three tries within 15 minutes.",
    "Treat percentages in the question as whole numbers unless a decimal is asked for.",
    "For a bond, the yield to maturity falls when the price rises.",
    "The reasoning step for a ratio is numerator first, then denominator, then the division.",
    "Model numbers of the X200 series start with the year of release.",
    "Look up the tool's schema before calling it with optional arguments.",
    "The assistant role in a chat transcript is the agent's own turn.",
    "For a weighted average, divide by the sum of the weights, not the count.",
    "A generator set rated 5 kW can run a load of at most 4 kW continuously.",
    "State units in the final answer only when the question asks for them.",
    # Lessons in an agent's voice, as agents' reflectors write them.
    "The assistant should confirm the order number before issuing any refund.",
    "I should ask the user for explicit confirmation (yes) before any booking change.",
    "The agent must call get_reservation_details before cancel_reservation.",
    "The assistant should not offer compensation unless the user asks for it.",
    "I need to check the membership tier before quoting a baggage allowance.",
    "The model should transfer to a human agent when the request is outside the policy.",
    "I must look up the user's profile before changing a payment method.",
    "The assistant should never book a flight that departs in less than two hours.",
    "I should read the whole cart before applying a discount code.",
    "The agent should use the gift card before the credit card when the user has both.",
    "The assistant should list the available flights before asking for a choice.",
    "I need to verify the user id matches the reservation before any change.",
    "The model should state the refund amount and wait for a yes before refunding.",
    "Attempts that cancel a basic economy ticket must check the 24-hour rule first.",
)
"""38 lessons as they are written in the wild: 24 playbook bullets (several use playbook,
bullet, generator, model, attempt or reasoning as words of their domain) and 14 lessons in an
agent's voice."""


def _voiced(voice: str, lesson: str) -> str:
    return VOICES[voice].format(Lesson=lesson[:1].upper() + lesson[1:], lesson=lesson)


def _recorded_remarks() -> list[dict[str, str]]:
    recorded: list[dict[str, str]] = json.loads((DATA / "embedded_key_insights.json").read_text())
    return recorded


def _plan() -> dict[str, tuple[str, str]]:
    """Sample id -> (key insight, what it is about), one lesson per sample."""
    plan = {
        f"{voice}-{i}": (_voiced(voice, lesson), "task")
        for voice in VOICES
        for i, lesson in enumerate(FORMULA_LESSONS)
    }
    plan.update({f"wild-{i:02d}": (text, "task") for i, text in enumerate(IN_THE_WILD)})
    for i, recorded in enumerate(_recorded_remarks()):
        plan[f"embedded-{i:02d}"] = (recorded["text"], recorded["about"])
    return plan


PLAN = _plan()


def _scripted_reflector(body: Mapping[str, Any]) -> str:
    """The scripted ACE model, except that its reflector writes the planned lesson of the sample
    it reads, and says what that lesson is about."""
    reply = ace_responder(body)
    spec = (body.get("response_format") or {}).get("json_schema") or {}
    if spec.get("name") != "reflector":
        return reply
    prompt = str(body["messages"][-1]["content"])
    sample_id = prompt.split("<sample_id>", 1)[1].split("</sample_id>", 1)[0].strip()
    data = json.loads(reply)
    data["key_insight"], data[INSIGHT_ABOUT] = PLAN[sample_id]
    return json.dumps(data)


def _verdict_only(prediction: str, sample: Sample) -> Score:
    """Feedback with no rule in it, so nothing but the reflector's lesson can reach the
    playbook."""
    right = prediction.strip() == sample.answer
    verdict = f"wrong: expected {sample.answer}, got {prediction.strip()!r}"
    return Score(right, int(right), 1, "correct" if right else verdict)


@pytest.fixture(scope="module")
def learned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Playbook, dict[str, Any]]:
    samples = [
        Sample(id=sample_id, question=f"Question {n}: what is {n} + {n}?", answer=str(2 * n))
        for n, sample_id in enumerate(PLAN)
    ]
    task = combee.SampleTask("lessons", train=samples, scorer=_verdict_only)
    run_dir = tmp_path_factory.mktemp("lessons") / "run"
    with serve_in_thread(_scripted_reflector) as server:
        llm = connect("sim", base_url=server.base_url, max_retries=0)
        try:
            result = combee.train(
                task, strategy="combee", batch_size=len(samples), llm=llm, run_dir=run_dir,
                seed=0, dedup=False, token_budget=None, progress=False, gate=False,
            )  # fmt: skip
        finally:
            combee.sync.run_sync(llm.aclose(), async_name="aclose")
        reflected = sum(r.schema_name == "reflector" for r in server.records)
        curated = "\n".join(
            str(r.body["messages"][-1]["content"])
            for r in server.records
            if r.schema_name == "curator"
        )
    assert reflected == len(samples)
    # A reflection whose key insight is a remark holds no lesson: no curator reads it, while
    # every lesson reaches one.
    remarks = [i for i, (_, about) in enumerate(PLAN.values()) if about != "task"]
    assert len(remarks) == 14
    assert [sid for sid in PLAN if f"sample {sid} " in curated] == [
        sid for i, sid in enumerate(PLAN) if i not in remarks
    ]
    playbook = Playbook.parse(result.text)
    return playbook, json.loads((run_dir / "final_results.json").read_text())


def _whole_in(playbook: Playbook, texts: list[str]) -> list[str]:
    bullets = {bullet.content for bullet in playbook.bullets}
    return [text for text in texts if text in bullets]


def test_lessons_in_any_voice_reach_the_playbook_as_often_and_as_whole_as_neutral_ones(
    learned: tuple[Playbook, dict[str, Any]],
) -> None:
    playbook, _ = learned
    reached = {
        voice: _whole_in(playbook, [_voiced(voice, lesson) for lesson in FORMULA_LESSONS])
        for voice in VOICES
    }
    assert {voice: len(found) for voice, found in reached.items()} == dict.fromkeys(VOICES, 6)


def test_lessons_as_written_in_the_wild_reach_the_playbook_whole(
    learned: tuple[Playbook, dict[str, Any]],
) -> None:
    playbook, _ = learned
    assert _whole_in(playbook, list(IN_THE_WILD)) == list(IN_THE_WILD)


def test_the_embedded_models_remarks_stay_out_by_their_field(
    learned: tuple[Playbook, dict[str, Any]],
) -> None:
    playbook, results = learned
    recorded = _recorded_remarks()
    remarks = [r["text"] for r in recorded if r["about"] != "task"]
    lessons = [r["text"] for r in recorded if r["about"] == "task"]
    assert len(remarks) == 14 and len(lessons) == 2
    rendered = playbook.render()
    assert [text for text in remarks if text[:60] in rendered] == []
    assert _whole_in(playbook, lessons) == lessons
    # Every other lesson came from the reflector; the 14 remarks, with a verdict for feedback,
    # left nothing to learn.
    assert results["lesson_sources"] == {"reflector": len(PLAN) - 14, "dropped": 14}
