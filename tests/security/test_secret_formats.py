"""60 secret formats planted in questions, sample contexts and trace tool outputs: none reaches
the server, the response cache, any file of the run directory or the playbook. Coverage is
held to detect-secrets' detectors: after redaction they find nothing in the corpus."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

import combee
from combee.llm import connect
from combee.llm.redact import redact
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.registry import get_task
from combee.tasks.traces import load_traces
from tests.security.secret_corpus import CORPUS, ORDINARY, Planted, core


def leaked(text: str) -> list[str]:
    return [p.name for p in CORPUS if core(p) in text]


def on_disk(run: Path) -> str:
    files = [p for p in run.rglob("*") if p.is_file()]
    assert any(p.name == "cache.sqlite" for p in files)
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in files)


@pytest.mark.parametrize("planted", CORPUS, ids=[p.name for p in CORPUS])
def test_each_format_is_redacted(planted: Planted) -> None:
    cleaned = redact(planted.text)
    assert core(planted) not in cleaned and "[REDACTED:" in cleaned


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_codes_are_left_as_they_are(text: str) -> None:
    assert redact(text) == text


def test_the_corpus_is_as_broad_as_promised() -> None:
    assert len({p.name for p in CORPUS}) == len(CORPUS) >= 60 and len(ORDINARY) >= 10


def test_detect_secrets_finds_nothing_after_redaction() -> None:
    scan = pytest.importorskip("detect_secrets.core.scan")
    settings = pytest.importorskip("detect_secrets.settings")
    # Every detector with a fixed format (the entropy and IP detectors flag ordinary words).
    detectors = [
        "AWSKeyDetector", "ArtifactoryDetector", "AzureStorageKeyDetector", "BasicAuthDetector",
        "CloudantDetector", "DiscordBotTokenDetector", "GitHubTokenDetector",
        "GitLabTokenDetector", "IbmCloudIamDetector", "IbmCosHmacDetector", "JwtTokenDetector",
        "KeywordDetector", "MailchimpDetector", "NpmDetector", "OpenAIDetector",
        "PrivateKeyDetector", "PypiTokenDetector", "SendGridDetector", "SlackDetector",
        "SoftlayerDetector", "SquareOAuthDetector", "StripeDetector",
        "TelegramBotTokenDetector", "TwilioKeyDetector",
    ]  # fmt: skip
    with settings.transient_settings({"plugins_used": [{"name": d} for d in detectors]}):
        before = [p.name for p in CORPUS if any(scan.scan_line(li) for li in p.text.splitlines())]
        after = {
            p.name: [s.type for li in redact(p.text).splitlines() for s in scan.scan_line(li)]
            for p in CORPUS
        }
    assert len(before) >= 25  # detect-secrets recognises most of the corpus ...
    assert {name: found for name, found in after.items() if found} == {}  # ... and none after


def test_no_false_alarms_on_the_bundled_data() -> None:
    counts: Counter[str] = Counter()
    for name in ("formula", "finer"):
        splits = get_task(name).load()
        for sample in (*splits.train, *splits.val, *splits.test):
            for text in (sample.question, sample.context, sample.answer):
                redact(text, counts)
    assert counts == Counter()  # nothing in 1,941 questions looks like a secret
    airline: Counter[str] = Counter()
    for trace in load_traces(["tau-airline"]):
        for message in trace.messages:
            redact(message.content, airline)
    assert set(airline) == {"email"}  # the customers' addresses, and nothing else


def questions() -> combee.SampleTask:
    per = 6
    chunks = [CORPUS[i : i + per] for i in range(0, len(CORPUS), per)]
    train = [
        combee.Sample(
            id=f"s{i}",
            question="Which ratio applies here? Config: " + " | ".join(p.text for p in chunk[:3]),
            answer="1",
            context="Environment dump:\n" + "\n".join(p.text for p in chunk[3:]),
        )
        for i, chunk in enumerate(chunks)
    ]
    test = [combee.Sample(id="t0", question=train[0].question, answer="1")]
    return combee.SampleTask("secrets", train, lambda p, s: p == s.answer, test=test)


def traces_file(path: Path) -> Path:
    lines = []
    for i, planted in enumerate(CORPUS):
        messages = [
            {"role": "user", "content": "Check the deployment settings."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read_config", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": f"settings:\n{planted.text}\n"},
            {"role": "assistant", "content": "The settings look fine."},
        ]
        lines.append(json.dumps({"id": f"t{i}", "messages": messages, "reward": i % 2}))
    path.write_text("\n".join(lines) + "\n")
    return path


async def test_no_format_leaves_the_process_from_questions_or_contexts(tmp_path: Path) -> None:
    with serve_in_thread(ace_responder) as server:
        llm = connect("sim", base_url=server.base_url, cache=tmp_path / "cache.sqlite")
        try:
            result = await combee.train_async(
                questions(), strategy="combee", batch_size=4, llm=llm, run_dir=tmp_path
            )
        finally:
            await llm.aclose()
        sent = "\n".join(json.dumps(r.body) for r in server.records)
    assert "[REDACTED:" in sent
    assert leaked(sent) == []
    assert leaked(on_disk(tmp_path)) == []
    assert leaked(result.text) == []


async def test_no_format_leaves_the_process_from_trace_tool_outputs(tmp_path: Path) -> None:
    source = traces_file(tmp_path / "traces.jsonl")
    out = tmp_path / "run"
    with serve_in_thread(ace_responder) as server:
        llm = connect("sim", base_url=server.base_url, cache=out / "cache.sqlite")
        try:
            result = await combee.learn_async([source], llm=llm, batch_size=16, run_dir=out)
        finally:
            await llm.aclose()
        sent = "\n".join(json.dumps(r.body) for r in server.records)
    reflected = [r for r in server.records if r.schema_name == "reflector"]
    assert len(reflected) == len(CORPUS)
    assert leaked(sent) == []
    assert leaked(on_disk(out)) == []
    assert leaked(result.text) == []
