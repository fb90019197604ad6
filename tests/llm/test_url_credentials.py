"""A base URL with ``user:password@`` works with both clients: the credentials go as HTTP Basic
authentication (in place of an API key) and are never shown."""

from __future__ import annotations

import base64

import pytest

import combee
from combee.llm import connect
from combee.sim import SimConfig, serve_in_thread
from combee.sim.ace_script import ace_responder

BASIC = "Basic " + base64.b64encode(b"team:s3cr3t pass").decode()


@pytest.mark.parametrize("client", ["openai", "lean"])
async def test_credentials_in_the_url_authenticate(client: str) -> None:
    with serve_in_thread(ace_responder, SimConfig(authorization=BASIC)) as server:
        url = server.base_url.replace("http://", "http://team:s3cr3t%20pass@")
        llm = connect("sim", base_url=url, client=client, max_retries=0)
        try:
            await llm.preflight()
            assert llm.settings["base_url"] == server.base_url  # never the password
        finally:
            await llm.aclose()
        statuses = [r.status for r in server.records]
    assert statuses == [200]


@pytest.mark.parametrize("client", ["openai", "lean"])
async def test_wrong_credentials_are_reported_without_the_password(client: str) -> None:
    with serve_in_thread(ace_responder, SimConfig(authorization=BASIC)) as server:
        url = server.base_url.replace("http://", "http://team:wrong@")
        llm = connect("sim", base_url=url, client=client, max_retries=0)
        try:
            with pytest.raises(combee.EndpointError) as caught:
                await llm.preflight()
        finally:
            await llm.aclose()
    assert "401" in str(caught.value) or "rejected" in str(caught.value)
    assert "wrong" not in str(caught.value)
