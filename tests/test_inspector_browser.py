"""The inspector's page in a real headless Chromium: a stream through the proxy appears live, its
two columns hold the right frame counts, selecting an upstream frame highlights its translation,
a fault shows as one, no secret appears anywhere in the page, and it works at 1280x800 and in a
narrow window. Screenshots are saved as test artifacts (see browser_support.py)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from streambridge.inspector.analysis import REDACTED, split_frames

from .browser_support import screenshot
from .cli_support import Proc
from .inspector_support import CLIENT_SECRET, PATIENCE, UPSTREAM_SECRET, NestBackend, chat, inspected_proxy
from .proxy_support import GOLDEN, golden, url_of

WAIT_MS = PATIENCE * 1000


#: the page's buttons, links and form fields that have no accessible name (no text, no
#: aria-label, no label element pointing at them)
UNNAMED_CONTROLS = """() => [...document.querySelectorAll("button, a[href], select, input")]
  .filter((node) => !node.hidden && node.offsetParent !== null)
  .filter((node) => !(node.getAttribute("aria-label") || node.textContent.trim()
    || (node.id && document.querySelector(`label[for="${node.id}"]`))))
  .map((node) => node.outerHTML.slice(0, 80))"""


async def open_page(browser: Any, url: str, width: int = 1280, height: int = 800) -> tuple[Any, list[Any]]:
    """The page at ``url`` and the list of every response it got (bodies read later)."""
    page = await browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(WAIT_MS)
    responses: list[Any] = []
    page.on("response", lambda response: responses.append(response))
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    await page.goto(url)
    page.errors = errors  # (checked at the end of each test)
    return page, responses


async def open_stream(page: Any, stream_id: str) -> None:
    await page.locator(f'.stream-item[data-stream-id="{stream_id}"]').click()
    await page.locator("#stream-body").wait_for(state="visible")


def data_of(raw: str) -> dict[str, Any]:
    return json.loads(raw.split("data: ", 1)[1])


async def test_a_live_stream_appears_and_its_frames_line_up(aiohttp_server, aiohttp_client, browser) -> None:
    backend = NestBackend(hold_after=3)
    client = await inspected_proxy(aiohttp_server, aiohttp_client, backend, heartbeat=0)
    page, responses = await open_page(browser, url_of(client.server, "/_inspect/"))
    await page.get_by_text("No stream yet").wait_for()
    await page.locator("#feed", has_text="live").wait_for()

    running = asyncio.create_task(chat(client))
    await backend.reached.wait()  # the upstream holds after 3 frames: the stream is live
    item = page.locator(".stream-item.live")
    await item.wait_for()
    assert await item.locator(".status").inner_text() == "live"
    await screenshot(page, "list-live")
    await open_stream(page, await item.get_attribute("data-stream-id"))  # opened while live…
    await page.locator("#upstream-count", has_text=re.compile("^3$")).wait_for()
    backend.release.set()
    body = await running
    await page.locator(".stream-item .status-completed").wait_for()

    upstream_frames = len(backend.answers[0])
    client_frames = len(split_frames(body, "sse"))
    # …it follows the stream to its end without a reload
    await page.locator("#upstream-count", has_text=re.compile(f"^{upstream_frames}$")).wait_for()
    assert await page.locator("#client-count").inner_text() == str(client_frames)
    assert await page.locator('.frame[data-side="upstream"]').count() == upstream_frames
    assert await page.locator('.frame[data-side="client"]').count() == client_frames

    # selecting an upstream text frame highlights the client frame its text became
    text_frame = page.get_by_role("button", name=re.compile(r"^upstream frame \d+: text")).first
    await text_frame.click()
    assert await text_frame.get_attribute("aria-pressed") == "true"
    sent = data_of(await text_frame.locator(".raw").inner_text())["text"]
    linked = page.locator('.frame.linked[data-side="client"]')
    assert await linked.count() >= 1
    raws = [data_of(raw) for raw in await linked.locator(".raw").all_inner_texts()]
    assert {"type": "text-delta", "id": raws[-1]["id"], "delta": sent} in raws
    assert "upstream frame #" in await page.locator("#decoded").inner_text()
    await screenshot(page, "stream-1280x800")

    # the columns stand side by side at 1280x800 and one above the other in a narrow window
    up_box = await page.locator("#upstream-frames").bounding_box()
    client_box = await page.locator("#client-frames").bounding_box()
    assert abs(up_box["y"] - client_box["y"]) < 2 and client_box["x"] > up_box["x"] + up_box["width"] - 1
    await page.set_viewport_size({"width": 420, "height": 800})
    up_box = await page.locator("#upstream-frames").bounding_box()
    client_box = await page.locator("#client-frames").bounding_box()
    assert client_box["y"] >= up_box["y"] + up_box["height"] - 1
    await screenshot(page, "stream-narrow")

    # the timeline draws the upstream's events, its text darker
    assert await page.locator("#timeline svg.chart rect.bar-text").count() >= 1

    # every control says what it is to a screen reader
    unnamed = await page.evaluate(UNNAMED_CONTROLS)
    assert unnamed == []

    # the kind filter keeps only frames of that kind, on both sides
    await page.set_viewport_size({"width": 1280, "height": 800})
    await page.get_by_label("Event kind").select_option("text")
    kinds = await page.locator(".frame-item:not([hidden])").evaluate_all("items => items.map(i => i.dataset.kinds)")
    assert kinds and all("text" in k.split() for k in kinds)

    # either side downloads as a capture file of exactly what the client got
    download = await page.request.get(await page.locator("#download-client").evaluate("link => link.href"))
    shown = body.replace(UPSTREAM_SECRET.encode(), REDACTED.encode())
    assert (await download.body()).split(b"\n\n", 1)[1] == shown

    await _assert_no_secret(page, responses)
    assert page.errors == []


async def _assert_no_secret(page: Any, responses: list[Any]) -> None:
    """Neither credential anywhere: not in the page as rendered, nor in anything it fetched."""
    rendered = await page.content()
    assert UPSTREAM_SECRET not in rendered and CLIENT_SECRET not in rendered
    assert REDACTED in rendered  # the backend's echo of its credential, shown redacted
    for response in responses:
        if "event-stream" in (await response.all_headers()).get("content-type", ""):
            continue  # the live feed never ends; its summaries are checked in test_inspector.py
        text = (await response.body()).decode("utf-8", "replace")
        assert UPSTREAM_SECRET not in text and CLIENT_SECRET not in text, response.url


async def test_a_fault_shows_as_a_fault(aiohttp_server, aiohttp_client, browser) -> None:
    backend = NestBackend(break_after=5)
    backend.release.set()
    client = await inspected_proxy(aiohttp_server, aiohttp_client, backend, heartbeat=0)
    await chat(client)
    page, _ = await open_page(browser, url_of(client.server, "/_inspect/"))
    item = page.locator(".stream-item.faulty")
    await item.wait_for()
    assert "upstream_disconnected" in await item.inner_text()
    await open_stream(page, await item.get_attribute("data-stream-id"))
    alert = page.get_by_role("alert")
    await alert.wait_for()
    assert "upstream_disconnected" in await alert.inner_text()
    fault_frame = page.locator('.frame.is-fault[data-side="client"]')
    assert await fault_frame.count() == 1
    assert "fault" in (await fault_frame.get_attribute("aria-label"))
    await fault_frame.click()
    assert "not from any upstream frame" in await page.locator("#decoded").inner_text()
    await screenshot(page, "fault")
    assert page.errors == []


async def test_frames_are_reachable_by_keyboard(aiohttp_server, aiohttp_client, browser) -> None:
    client = await inspected_proxy(aiohttp_server, aiohttp_client, NestBackend(), heartbeat=0)
    await chat(client)
    page, _ = await open_page(browser, url_of(client.server, "/_inspect/"))
    first = page.get_by_role("button", name=re.compile(r"^upstream frame 1: "))
    await first.focus()
    await page.keyboard.press("Enter")
    assert await first.get_attribute("aria-pressed") == "true"
    await page.keyboard.press("ArrowDown")
    await page.keyboard.press("ArrowDown")  # (frame 2 is an implied step-start: the client's opens with the text)
    third = page.get_by_role("button", name=re.compile(r"^upstream frame 3: "))
    assert await third.get_attribute("aria-pressed") == "true"
    assert await page.evaluate("document.activeElement.dataset.index") == "2"
    await page.keyboard.press("ArrowRight")  # to what it became on the other side
    assert await page.evaluate("document.activeElement.dataset.side") == "client"
    assert await page.get_by_role("list", name="Upstream frames as received").count() == 1
    assert await page.get_by_role("list", name="Client frames as written").count() == 1
    assert page.errors == []


async def test_inspect_opens_a_recording_in_the_same_page(browser) -> None:
    proc = Proc("inspect", GOLDEN / "approval" / "nest.sse", "--to", "ai-sdk", "--port", "0")
    try:
        url = (await asyncio.to_thread(proc.wait_for, r"at (http://\S+/_inspect/#recording)")).group(1)
        page, _ = await open_page(browser, url)
        body = golden("approval", "nest")
        await page.locator("#upstream-count", has_text=re.compile(f"^{len(split_frames(body, 'sse'))}$")).wait_for()
        assert "recorded" in await page.locator("#timeline").inner_text()
        assert "I'm sorry it arrived damaged." in await page.locator("#assembled").inner_text()
        await screenshot(page, "recording")
        assert page.errors == []
    finally:
        proc.stop()


async def test_a_long_stream_draws_its_first_frames_and_the_rest_when_asked(browser, tmp_path) -> None:
    count = 2500
    texts = b"".join(b'data: {"kind":"text","text":"t%d "}\n\n' % i for i in range(count))
    recording = tmp_path / "long.sse"
    recording.write_bytes(
        b'event: meta\ndata: {"runId":"r1","threadId":"t1"}\n\n' + texts + b"event: done\ndata: {}\n\n"
    )
    proc = Proc("inspect", recording, "--to", "ai-sdk", "--port", "0")
    try:
        url = (await asyncio.to_thread(proc.wait_for, r"at (http://\S+/_inspect/#recording)")).group(1)
        page, _ = await open_page(browser, url)
        await page.locator("#upstream-count", has_text=re.compile(f"^{count + 2}$")).wait_for()
        upstream = page.locator('.frame[data-side="upstream"]')
        assert await upstream.count() == 2000  # the first 2000 drawn, the rest on request
        # the last upstream frame drawn became a client frame past the client column's first 2000
        await upstream.nth(1999).click()
        linked = page.locator('.frame.linked[data-side="client"]')
        await linked.first.wait_for()
        assert int(await linked.first.get_attribute("data-index")) >= 2000
        assert await page.locator('.frame[data-side="client"]').count() == int(
            await page.locator("#client-count").inner_text()
        )
        await page.get_by_role("button", name=re.compile(r"^Show all 2502 frames")).click()
        assert await upstream.count() == count + 2
        assert page.errors == []
    finally:
        proc.stop()


async def test_either_side_copies_to_the_clipboard_as_written(aiohttp_server, aiohttp_client, browser) -> None:
    client = await inspected_proxy(aiohttp_server, aiohttp_client, NestBackend(), heartbeat=0)
    body = await chat(client)
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    origin = url_of(client.server, "/").rstrip("/")
    await context.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin)
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    await page.goto(origin + "/_inspect/")
    await page.locator("#stream-body").wait_for(state="visible")  # the only stream opens by itself
    await page.get_by_role("button", name="Copy client").click()
    await page.locator("#copied", has_text="client copied").wait_for()
    copied = await page.evaluate("navigator.clipboard.readText()")
    assert copied.encode() == body.replace(UPSTREAM_SECRET.encode(), REDACTED.encode())
    await context.close()
