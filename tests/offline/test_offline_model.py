"""The offline model is a real component: grounded recall, API shapes, errors as SDK exceptions, faults."""

import json

import anthropic
import pytest

from helpers import prompts
from helpers.config import load_settings
from helpers.llm import get_client, offline_transport
from helpers.offline import (
    MESSAGE_OVERHEAD,
    REQUEST_OVERHEAD,
    SYSTEM_OVERHEAD,
    FaultPlan,
    OfflineModel,
    count_text_tokens,
    find_facts,
)
from helpers.offline.memo import REPLY_CACHE_ENV
from helpers.offline.quote import QUOTE_LEAD
from helpers.offline.reply import stand_in_note

MODEL = "claude-haiku-4-5"


@pytest.fixture
def client():
    return get_client(load_settings({}), max_retries=0)


def ask(client, messages, system=None, max_tokens=300):
    kwargs = {"system": system} if system else {}
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    return client.messages.create(model=MODEL, max_tokens=max_tokens, messages=messages, **kwargs)


def text(message):
    return message.content[0].text


# --- grounded recall -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement, question, expected",
    [
        ("My favorite color is green.", "What is my favorite color?", "green"),
        ("My favourite colour is teal.", "What's my favourite colour?", "teal"),
        ("My name is Priya.", "What is my name?", "Priya"),
        ("I live in Pasadena.", "Where do I live?", "Pasadena"),
        ("I work as a pastry chef.", "What do I do for work?", "pastry chef"),
        ("I love hiking and I hate traffic.", "What do I love?", "hiking"),
        ("I hate traffic.", "What do I hate?", "traffic"),
        ("My dog's name is Biscuit.", "What's my dog's name?", "Biscuit"),
        ("I'm allergic to peanuts.", "What am I allergic to?", "peanuts"),
        ("My hotel is the Hoxton.", "What is my hotel?", "the Hoxton"),
    ],
)
def test_recalls_a_fact_only_when_it_is_in_the_request(client, statement, question, expected):
    history = [{"role": "user", "content": statement}]
    ack = ask(client, history)
    history += [{"role": "assistant", "content": text(ack)}, {"role": "user", "content": question}]
    assert expected.lower() in text(ask(client, history)).lower()
    alone = text(ask(client, question))
    assert expected.lower() not in alone.lower()
    assert "don't know" in alone.lower()


def test_recalls_from_the_system_prompt_in_third_person(client):
    system = prompts.SCOUT_PERSONA + "\nThe user's favorite color is green. The user lives in Echo Park."
    reply = text(ask(client, "What is my favorite color? Where do I live?", system))
    assert "green" in reply and "Echo Park" in reply


def test_newest_statement_wins(client):
    history = [
        {"role": "user", "content": "I live in Los Angeles."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "I moved to Denver. Where do I live?"},
    ]
    reply = text(ask(client, history))
    assert "Denver" in reply and "Los Angeles" not in reply


def test_persona_is_honoured_and_never_called_claude(client):
    reply = text(ask(client, "Any good beaches for sunset?", prompts.SCOUT_PERSONA))
    assert "stand-in" in reply
    assert reply.startswith("Scout here") and "Los Angeles" not in reply  # names no city the user never mentioned
    assert "claude" not in reply.lower()
    small_talk = text(ask(client, "Thanks, that was fun!", prompts.SCOUT_PERSONA))
    assert small_talk.startswith("Scout here") and "nothing to add" in small_talk and "Los Angeles" not in small_talk
    plain = text(ask(client, "Any good beaches for sunset?"))
    assert "claude" not in plain.lower() and "Scout" not in plain


def test_deterministic(client, monkeypatch):
    monkeypatch.delenv(REPLY_CACHE_ENV, raising=False)  # both replies worked out: none read from the run's cache
    a = ask(client, "Where should I eat tacos tonight?", prompts.SCOUT_PERSONA)
    b = ask(client, "Where should I eat tacos tonight?", prompts.SCOUT_PERSONA)
    assert text(a) == text(b) and a.usage == b.usage


def test_a_question_about_the_world_gets_the_stand_in_note_not_advice(client):
    """Issue 23: "book ahead if it is a weekend…" for a bookshop read like real advice, and "How do people get from LAX
    to Santa Monica?" got "you haven't told me", as if memory had failed. A question about the world gets one
    sentence saying what answers it (the offline stand-in) and what it knows; a memory question still declines."""
    world = [
        "How do people get from LAX to Santa Monica?",
        "Is there a good bookshop near Venice?",
        "What's the best time to visit Malibu?",
        "Where can I find great tacos?",
        "Any good beaches for sunset?",
    ]
    replies = {q: text(ask(client, q, prompts.SCOUT_PERSONA)) for q in world}
    for question, reply in replies.items():
        assert reply == stand_in_note(prompts.SCOUT_PERSONA), (question, reply)
    assert "offline stand-in" in reply and "only know what this conversation and its memories hold" in reply
    assert reply.count(".") == 1 and "claude" not in reply.lower()  # one sentence, never called Claude
    plain = text(ask(client, "How do people get from LAX to Santa Monica?"))
    assert plain.startswith("I'm the offline stand-in model") and "Scout" not in plain
    for memory_question in ["Am I allergic to any nuts?", "What is Rosa's birthday?", "Where does my sister live?"]:
        reply = text(ask(client, memory_question, prompts.SCOUT_PERSONA))
        assert "don't know" in reply.lower() and "stand-in" not in reply, (memory_question, reply)


def test_a_two_part_question_answers_from_memory_and_notes_the_world_part(client):
    told = [
        {"role": "user", "content": "My name is Maya."},
        {"role": "assistant", "content": "Hi."},
        {"role": "user", "content": "What is my name, and how far is Malibu?"},
    ]
    reply = text(ask(client, told, prompts.SCOUT_PERSONA))
    assert reply == "Your name is Maya. " + stand_in_note(prompts.SCOUT_PERSONA)
    told[0]["content"] = "I like tea."  # a line the name is not in: quoted, never "you haven't told me" (it may be)
    reply = text(ask(client, told, prompts.SCOUT_PERSONA))
    assert reply.startswith(QUOTE_LEAD) and '"I like tea."' in reply and "told" not in reply, reply
    told[0]["content"] = "Hi!"  # no line at all: only then is "not told" certainly true
    assert "don't know" in text(ask(client, told, prompts.SCOUT_PERSONA)).lower()


# --- shapes, usage and count_tokens ----------------------------------------------------------------


def test_message_shape_parses_into_sdk_types(client):
    m = ask(client, "hello there")
    assert isinstance(m, anthropic.types.Message)
    assert m.type == "message" and m.role == "assistant" and m.model == MODEL and m.id.startswith("msg_")
    assert m.stop_reason == "end_turn" and m.content[0].type == "text"


def test_usage_equals_count_tokens_for_the_same_request(client):
    messages = [
        {"role": "user", "content": "My name is Ana."},
        {"role": "assistant", "content": "Hi Ana!"},
        {"role": "user", "content": "Tell me about Griffith Observatory, please."},
    ]
    created = ask(client, messages, prompts.SCOUT_PERSONA)
    counted = client.messages.count_tokens(model=MODEL, messages=messages, system=prompts.SCOUT_PERSONA)
    assert created.usage.input_tokens == counted.input_tokens
    assert created.usage.output_tokens == count_text_tokens(text(created))


def test_token_count_is_the_bpe_plus_documented_overheads(client):
    msgs = [{"role": "user", "content": "Hello, Scout!"}]
    expected = (
        REQUEST_OVERHEAD
        + SYSTEM_OVERHEAD
        + count_text_tokens("Be brief.")
        + MESSAGE_OVERHEAD
        + count_text_tokens("Hello, Scout!")
    )
    assert client.messages.count_tokens(model=MODEL, system="Be brief.", messages=msgs).input_tokens == expected


def test_bpe_is_not_chars_over_four():
    # a real tokenizer: non-English text costs far more than len/4 suggests
    sample = "東京で一番おいしいラーメン屋はどこですか？"
    assert count_text_tokens(sample) > 2 * (len(sample) / 4)
    assert count_text_tokens("hello") == 1


def test_max_tokens_truncates_with_stop_reason(client):
    m = ask(client, "Tell me everything about surfing in Malibu in winter.", max_tokens=4)
    assert m.stop_reason == "max_tokens" and m.usage.output_tokens == 4


# --- errors as the API sends them -------------------------------------------------------------------


def test_prompt_too_long_is_the_sdk_bad_request_error():
    small = get_client(load_settings({}), context_window=40, max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as err:
        ask(small, "word " * 100)
    assert err.value.status_code == 400
    assert err.value.body["error"]["type"] == "invalid_request_error"
    assert "prompt is too long" in err.value.body["error"]["message"]
    assert "> 40 maximum" in err.value.body["error"]["message"]


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": ""}],
        [{"role": "user", "content": "   "}],
        [{"role": "user", "content": [{"type": "text", "text": ""}]}],
        [],
    ],
)
def test_empty_content_is_a_bad_request(client, messages):
    with pytest.raises(anthropic.BadRequestError):
        ask(client, messages)


def test_orphan_tool_result_is_a_bad_request(client):
    messages = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "tu_1", "name": "weather", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_2", "content": "sunny"}]},
    ]
    with pytest.raises(anthropic.BadRequestError, match="tool_use_id"):
        ask(client, messages)
    messages[2]["content"][0]["tool_use_id"] = "tu_1"
    assert ask(client, messages).stop_reason == "end_turn"


@pytest.mark.parametrize(
    "fault, exc",
    [
        ("429", anthropic.RateLimitError),
        ("529", anthropic.InternalServerError),
        ("500", anthropic.InternalServerError),
        ("timeout", anthropic.APITimeoutError),
        ("connect", anthropic.APIConnectionError),
    ],
)
def test_injected_faults_raise_the_sdk_exceptions(fault, exc):
    client = get_client(load_settings({}), faults=f"{fault}x*", max_retries=0)
    with pytest.raises(exc):
        ask(client, "hi")


def test_overloaded_is_the_sdk_overloaded_error():
    client = get_client(load_settings({}), faults="529x*", max_retries=0)
    with pytest.raises(anthropic.InternalServerError) as err:
        ask(client, "hi")
    assert err.value.status_code == 529 and err.value.body["error"]["type"] == "overloaded_error"


def test_sdk_retries_transient_faults_then_succeeds():
    client = get_client(load_settings({}), faults="429,529,500", max_retries=3)
    assert ask(client, "hi").stop_reason == "end_turn"
    transport = offline_transport(client)
    assert transport.faults.served == ["429", "529", "500"]
    assert sum(1 for path, _ in transport.requests if path.endswith("/v1/messages")) == 4


def test_fault_plan_parsing():
    plan = FaultPlan.parse("529x2,ok,429")
    assert [plan.next() for _ in range(5)] == ["529", "529", None, "429", None]
    with pytest.raises(ValueError, match="GTE_OFFLINE_FAULTS"):
        FaultPlan.parse("418")


# --- tasks the helpers ask of it ---------------------------------------------------------------------


def test_fact_finder_reads_statements_generically():
    assert [f.sentence for f in find_facts("My name is Alice and I love hiking.")] == [
        "The user's name is Alice.",
        "The user loves hiking.",
    ]
    assert (
        find_facts("My sister Priya lives in Pasadena and she is a nurse.")[1].sentence
        == "The user's sister Priya is a nurse."
    )
    assert (
        find_facts("Your table at Bestia is booked for 7:45pm.", "second")[0].sentence
        == "The user's table at Bestia is booked for 7:45pm."
    )
    assert find_facts("The user lives in Denver.", "third")[0].sentence == "The user lives in Denver."
    assert find_facts("What is my name?") == [] and find_facts("Tell me about tacos.") == []


def test_extraction_task_returns_json_facts(client):
    body = "User: Hi! My name is Alice and I live in Denver.\nAssistant: Welcome, Alice!"
    m = ask(client, body, prompts.EXTRACTION_TASK)
    facts = json.loads(text(m))["facts"]
    assert facts == ["The user's name is Alice.", "The user lives in Denver."]
    assert json.loads(
        text(ask(client, "User: What's the weather like?\nAssistant: Sunny.", prompts.EXTRACTION_TASK))
    ) == {"facts": []}


def test_summary_task_is_extractive_prose_and_keeps_newest_values(client):
    body = (
        "<existing_summary>\nThe user's name is Alice. The user lives in Los Angeles.\n</existing_summary>\n"
        "<new_turns>\nUser: I moved to Denver last month.\nAssistant: Congrats!\n"
        "User: Any hikes near Boulder?\nAssistant: Try Royal Arch.\n</new_turns>"
    )
    summary = text(ask(client, body, prompts.SUMMARY_TASK, max_tokens=200))
    assert "Alice" in summary and "Denver" in summary and "Los Angeles" not in summary
    assert not any(line.lstrip().startswith(("-", "*", "#", "{")) for line in summary.splitlines())


def test_summary_cap_drops_facts_unless_named_as_must_keep(client):
    facts = " ".join(
        f"My {k} is {v}."
        for k, v in [
            ("hotel", "the Hoxton"),
            ("flight", "UA1432"),
            ("budget", "200 dollars"),
            ("car", "a red Mini"),
            ("seat", "14C"),
        ]
    )
    body = f"<existing_summary>\n</existing_summary>\n<new_turns>\nUser: {facts}\nAssistant: Noted.\n</new_turns>"
    capped = text(ask(client, body, prompts.SUMMARY_TASK, max_tokens=20))
    assert "the Hoxton" not in capped  # the oldest fact fell out under the cap
    rescued = text(
        ask(
            client,
            body + "\n<must_keep>\nThe user's hotel is the Hoxton.\n</must_keep>",
            prompts.SUMMARY_TASK,
            max_tokens=20,
        )
    )
    assert "the Hoxton" in rescued


def test_model_object_directly():
    model = OfflineModel(context_window=100)
    out = model.create({"model": MODEL, "max_tokens": 30, "messages": [{"role": "user", "content": "My name is Bo."}]})
    assert out["usage"]["input_tokens"] == model.count_tokens(
        {"model": MODEL, "messages": [{"role": "user", "content": "My name is Bo."}]}
    )


def test_quotes_a_detail_the_user_stated_only_when_it_is_in_the_request(client):
    told = [
        {"role": "user", "content": "Our dinner reservation at Bestia is at 7:45pm on Friday."},
        {"role": "assistant", "content": "Lovely."},
        {"role": "user", "content": "What time is our dinner reservation at Bestia?"},
    ]
    assert "7:45pm" in text(ask(client, told))
    alone = text(ask(client, told[-1:]))
    assert "7:45" not in alone and "don't know" in alone
    memory = (
        "You are Scout.\n<remembered_memories>\n[2026-11-29] (from a conversation) User: Our dinner "
        "reservation at Bestia is at 7:45pm on Friday. Assistant: Lovely.\n</remembered_memories>"
    )
    assert "7:45pm" in text(ask(client, told[-1:], memory))
    advice = text(ask(client, "What should we do on our last evening?"))
    assert "don't know" not in advice
