"""Counting like the API, offline: images by their pixel size (read from the real PNG/JPEG/GIF/WebP headers, resized
as the vision docs say), documents by their text (a PDF's pages also as images), thinking blocks only in the turn
being continued; and `count_tokens` equals `usage.input_tokens` for every request shape."""

from __future__ import annotations

import base64
import io

import pytest
from contract_cases import CC, RESULT, TOOL, USE, assistant, body, image, pdf_bytes, text, user
from PIL import Image

from helpers.config import load_settings
from helpers.llm import get_client
from helpers.offline.media import image_tokens, pdf_facts, sniff_image

MODEL = "claude-haiku-4-5"


def encoded(width, height, fmt) -> str:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(buf, format=fmt)
    return base64.b64encode(buf.getvalue()).decode()


@pytest.fixture(scope="module")
def client():
    return get_client(load_settings({}), max_retries=0)


@pytest.mark.parametrize(
    "fmt,media", [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp")]
)
@pytest.mark.parametrize("size", [(1, 1), (200, 150), (1092, 1092), (3000, 1200)])
def test_headers_give_the_real_pixel_size(fmt, media, size):
    facts = sniff_image(base64.b64decode(encoded(*size, fmt)))
    assert (facts.media_type, facts.width, facts.height) == (media, *size)


def test_image_tokens_follow_the_vision_docs_formula_and_resizing():
    assert image_tokens(200, 200) == 54  # 200 x 200 / 750 = 53.3, the docs' example: ~54 tokens
    assert image_tokens(1000, 1000) == 1334  # ~1,334
    assert image_tokens(1092, 1092) == 1590  # the largest 1:1 image without resizing: ~1,590
    assert 1590 <= image_tokens(4000, 4000) <= 1600  # resized first: about 1,600 tokens at most
    assert image_tokens(3136, 100) == image_tokens(1568, 50)  # a long edge over 1568 px is halved here
    assert image_tokens(3000, 1200, high_res=True) > image_tokens(3000, 1200)  # high-resolution models keep more


def test_an_image_costs_its_pixels_not_its_bytes(client):
    small = client.messages.count_tokens(model=MODEL, messages=[user([image(encoded(64, 64, "PNG")), text("?")])])
    big = client.messages.count_tokens(model=MODEL, messages=[user([image(encoded(1000, 1000, "PNG")), text("?")])])
    assert big.input_tokens - small.input_tokens == image_tokens(1000, 1000) - image_tokens(64, 64)
    noisy = base64.b64encode(bytes(range(256)) * 1200).decode()  # 300 KB of data are not 300 KB of tokens
    assert big.input_tokens < 2000 and len(noisy) > 300_000


def test_pdf_pages_and_text_are_read_from_the_file():
    facts = pdf_facts(pdf_bytes("Hello ledger", pages=3))
    assert facts.pages == 3 and facts.text.count("Hello ledger") == 3 and facts.page_size == (816, 1056)
    assert pdf_facts(b"not a pdf") is None


def test_a_pdf_costs_its_text_and_a_page_image_per_page(client):
    def count(pages):
        data = base64.b64encode(pdf_bytes("The total is 42 euros.", pages)).decode()
        doc = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}}
        return client.messages.count_tokens(model=MODEL, messages=[user([doc, text("Total?")])]).input_tokens

    from helpers.offline.bpe import count_text_tokens

    texts = [pdf_facts(pdf_bytes("The total is 42 euros.", n)).text for n in (1, 3)]
    text_more = count_text_tokens(texts[1]) - count_text_tokens(texts[0])
    assert count(3) - count(1) == 2 * image_tokens(816, 1056) + text_more  # two more pages: images and text


def test_thinking_counts_only_in_the_turn_being_continued(client):
    think = {"type": "thinking", "thinking": "Work it out carefully step by step. " * 20, "signature": "s"}
    earlier = [user("Hi"), assistant([think, text("Hello")]), user("And now?")]
    plain = [user("Hi"), assistant([text("Hello")]), user("And now?")]
    count = lambda m: client.messages.count_tokens(model=MODEL, messages=m).input_tokens  # noqa: E731
    assert count(earlier) == count(plain)  # an earlier turn's thinking is dropped from the context
    tool_turn = [user("Weather?"), assistant([think, USE]), user([RESULT])]
    assert count(tool_turn) > count([user("Weather?"), assistant([USE]), user([RESULT])])


SHAPES = {
    "text": body(),
    "system and tools": body(system=[text("Be brief.")], tools=[TOOL]),
    "tool round trip": body(user("Weather?"), assistant([USE]), user([RESULT]), tools=[TOOL]),
    "image": body(user([image(encoded(300, 200, "PNG")), text("What is it?")])),
    "pdf": body(
        user(
            [
                {
                    "type": "document",
                    "source": {
                        "type": "base64",
                        "media_type": "application/pdf",
                        "data": base64.b64encode(pdf_bytes()).decode(),
                    },
                },
                text("Sum?"),
            ]
        )
    ),
    "text document": body(
        user(
            [
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "Oslo is cold in winter."},
                },
                text("Why?"),
            ]
        )
    ),
    "thinking history": body(
        user("Hi"), assistant([{"type": "thinking", "thinking": "hm", "signature": "s"}, text("Hello")]), user("Again")
    ),
    "prefill": body(user("Name a colour."), assistant("The colour is")),
    "cache markers": body(user([text("Long context. " * 50, cache_control=CC), text("Question?")])),
    "memory tool": body(tools=[{"type": "memory_20250818", "name": "memory"}]),
}


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_count_tokens_equals_usage_for_every_shape(client, shape):
    request = SHAPES[shape]
    counted = client.messages.count_tokens(**{k: v for k, v in request.items() if k != "max_tokens"}).input_tokens
    usage = client.messages.create(**request).usage
    assert counted == usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
