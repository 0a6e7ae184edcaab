"""Issue 40, item 6: the stand-in never says "you haven't told me" when a line of its request may answer; it says it
could not work the answer out and quotes the closest line (helpers.offline.quote), through the real SDK client."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from helpers import prompts
from helpers.bench import quote_eval
from helpers.config import load_settings
from helpers.llm import get_client
from helpers.offline.language import content_stems
from helpers.offline.quote import QUOTE_LEAD, closest_line, quoted_reply, request_lines
from helpers.offline.reply import DONT_KNOW, chat_reply

MODEL = "claude-haiku-4-5"
FILLER = [
    ("I had a long week, glad it's over.", "That sounds tiring."),
    ("The weather has been grey for days.", "A bright day should come soon."),
]


@pytest.fixture(scope="module")
def client():
    return get_client(load_settings({}))


def widget_request(question: str) -> tuple[str, list[tuple[str, str]]]:
    """The learner's first chat as the issue reports it: the fact said, then six messages, then the question; the
    summary and the retrieved memories hold the fact too."""
    system = (
        f"{prompts.SCOUT_PERSONA}\n\n<conversation_summary>\nThe user's gym locker combination is 4172.\n"
        "</conversation_summary>\n\n<remembered_memories>\n[earlier in this conversation]\n"
        "User: my gym locker combination is 4172\nAssistant: Noted.\n</remembered_memories>"
    )
    turns = [("user", "my gym locker combination is 4172"), ("assistant", "Noted.")]
    for user, assistant in FILLER + [("I'm thinking about a swim later.", "Enjoy it.")]:
        turns += [("user", user), ("assistant", assistant)]
    return system, [*turns, ("user", question)]


def test_the_reported_first_chat_gets_4172_and_never_not_told():
    system, messages = widget_request("What's the combination for my gym locker?")
    reply = chat_reply(system, messages)
    assert "4172" in reply and "haven't told" not in reply, reply
    for question in ("Which digits open my locker at the gym?", "What number do I dial at the gym changing room?"):
        reply = chat_reply(system, [*messages[:-1], ("user", question)])
        assert "haven't told" not in reply and "4172" in reply, (question, reply)


def test_the_closest_line_is_the_fact_and_its_quote_is_marked():
    system, messages = widget_request("Which digits open my locker at the gym?")
    line = closest_line("Which digits open my locker at the gym?", system, messages)
    assert line is not None and "4172" in line
    assert line in system or any(line in text for _role, text in messages)  # a line of the request, verbatim
    reply = quoted_reply(line)
    assert reply.startswith(QUOTE_LEAD) and f'\n> "{line}"' in reply  # marked as a quote, not said as an answer


def test_a_reader_miss_is_quoted_not_denied(client):
    # each pair: a statement the reader may not match to its question; either it answers or it quotes the fact
    pairs = [
        ("The alarm code at the office is 0619.", "What do I punch in to disarm the security system at work?", "0619"),
        ("I see a physiotherapist named Arjun for my back.", "Who treats my spine?", "Arjun"),
        ("I commute by ferry across the bay.", "How do I get to work?", "ferry"),
    ]
    for statement, question, expected in pairs:
        messages = [{"role": "user", "content": statement}, {"role": "assistant", "content": "Noted."}]
        for user, assistant in FILLER:
            messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        messages.append({"role": "user", "content": question})
        reply = client.messages.create(model=MODEL, max_tokens=300, messages=messages).content[0].text
        assert "haven't told" not in reply and expected in reply, (question, reply)
        if reply.startswith(QUOTE_LEAD):
            assert reply.endswith(f'> "{statement}"'), reply


def test_not_told_only_when_the_request_holds_no_line():
    # the goldfish's case: the request holds no line of the user's at all, so "you haven't told me" is true
    assert chat_reply("You are Scout.", [("user", "What's my dog called?")]) == DONT_KNOW
    # a line nothing links to the question: the reader cannot rule out that it answers (it may, in other words),
    # so the stand-in quotes the nearest line rather than claim it was not told
    messages = [
        ("user", "I had a long week, glad it's over."),
        ("assistant", "Rest up."),
        ("user", "What's my dog called?"),
    ]
    assert closest_line("What's my dog called?", "You are Scout.", messages) is None  # nothing is close ...
    assert chat_reply("You are Scout.", messages) == quoted_reply(
        "I had a long week, glad it's over."
    )  # ... yet quoted


def test_only_the_users_lines_and_memory_blocks_are_quoted():
    system = (
        "You are Scout, a guide to Los Angeles beaches.\n<remembered_memories>\n[Monday 1 May 2023]\n"
        "User: I surf at Zuma most weekends.\nAssistant: Zuma has great breaks in the morning.\n"
        "</remembered_memories>"
    )
    lines = request_lines(system, [("assistant", "Santa Monica is lovely before nine."), ("user", "Where do I surf?")])
    assert lines == ["I surf at Zuma most weekends."]  # no instruction, no assistant line, no date or speaker label


def test_a_line_another_part_answered_is_not_quoted_for_the_next(client):
    turns = [("user", "My sister Priya lives in Pasadena."), ("assistant", "Nice.")]
    reply = chat_reply(
        "You are Scout.", [*turns, ("user", "Where does my sister live and where does my brother live?")]
    )
    assert "Pasadena" in reply and "don't know" in reply and QUOTE_LEAD not in reply, reply


def test_the_phrasing_set_has_two_parts_and_questions_in_other_words():
    items = quote_eval.load_items("all")
    assert len(items) >= 100 and len({i["id"] for i in items}) == len(items)
    parts = {p: quote_eval.load_items(p) for p in ("tune", "report")}
    assert len(parts["tune"]) + len(parts["report"]) == len(items) and min(map(len, parts.values())) >= 50
    overlap = []
    for item in items:
        said, asked = set(content_stems(item["statement"])), set(content_stems(item["question"]))
        overlap.append(len(said & asked) / max(1, len(asked)))
        assert all(any(opt.lower() in item["statement"].lower() for opt in g) for g in item["expect"]), item["id"]
    assert sum(overlap) / len(overlap) < 0.25  # few words shared on average
    assert sum(o == 0 for o in overlap) >= len(items) // 2  # most questions share no content word with the fact


def test_the_report_part_is_the_blind_set_and_the_tuning_part_the_first_set():
    tune, report = quote_eval.load_items("tune"), quote_eval.load_items("report")
    assert {i["id"] for i in tune} == {i["id"] for i in json.loads(quote_eval.DATA.read_text())["items"]}
    assert {i["part"] for i in tune} == {"tune", "report"}  # the first set's own report split is tuning data now
    assert len(report) == 60 and {i["part"] for i in report} == {"report"}
    assert all(i["id"].startswith("blind-") for i in report) and not {i["id"] for i in tune} & {i["id"] for i in report}
    assert sorted(Counter(i["relation"] for i in report).values()) == [6] * 10  # 10 relation kinds x 6


def test_judge_reads_the_four_verdicts():
    item = {"expect": [["4172"]]}
    assert quote_eval.judge(item, "Your gym locker combination is 4172.") == "answered"
    assert quote_eval.judge(item, quoted_reply("my gym locker combination is 4172")) == "quoted"
    assert quote_eval.judge(item, DONT_KNOW) == "contradicted"
    assert quote_eval.judge(item, "Scout here: I only know ..., and nothing in them answers that.") == "contradicted"
    assert quote_eval.judge(item, quoted_reply("I had a long week.")) == "other"


def test_the_tune_part_through_the_sdk_has_no_contradiction(client):
    # the first set's own "tune" split, every third item: the 21 items (and placements) measured below
    items = [i for i in quote_eval.load_items("tune") if i["part"] == "tune"][::3]
    outcomes = quote_eval.evaluate(client, items, MODEL)
    verdicts = [o["verdict"] for o in outcomes]
    assert verdicts.count("contradicted") == 0, [o for o in outcomes if o["verdict"] == "contradicted"]
    assert all(re.search(r"\S", o["reply"]) for o in outcomes)
    assert verdicts.count("answered") + verdicts.count("quoted") == len(items), outcomes
    # measured with the second reading (issue 40): 18 of these 21 answered (17 without it); a regression fails
    assert verdicts.count("answered") >= 18, [o for o in outcomes if o["verdict"] != "answered"]


@pytest.mark.slow  # 60 requests through the SDK (seconds): the full set runs it; the fast set has the tune sample
def test_the_blind_report_part_through_the_sdk_has_no_contradiction(client):
    # the blind set (tests/data/quote_phrasings_blind.json), every item: written without reading the stand-in's code
    outcomes = quote_eval.evaluate(client, quote_eval.load_items("report"), MODEL)
    assert all(re.search(r"\S", o["reply"]) for o in outcomes)
    contradicted = [o for o in outcomes if o["verdict"] == "contradicted"]
    assert not contradicted, contradicted
    answered = sum(o["verdict"] == "answered" for o in outcomes)
    assert answered >= 45, answered  # 45 of 60 when the floor was set (2970668): a floor, not the 90% target


def _chat(statement: str, question: str, system: str = prompts.SCOUT_PERSONA) -> str:
    turns = [("user", statement), ("assistant", "Noted.")]
    for user, assistant in FILLER:
        turns += [("user", user), ("assistant", assistant)]
    return chat_reply(system, [*turns, ("user", question)])


NOT_TOLD = re.compile(r"(?i)haven't told|don't know|nothing in them answers")


def test_a_question_about_our_things_read_as_advice_quotes_the_users_own_line():
    # "can we" reads as a request for advice; the question is still about the user's own things, and the only line in
    # which the user speaks of theirs the same way ("our") may hold the answer: quoted, never "nothing answers that"
    for statement, question in [
        ("Our cabin looks out over Crater Lake.", "What can we spot from our porch?"),
        ("My balcony faces the harbour.", "What can I look at from my deck?"),
    ]:
        reply = _chat(statement, question)
        assert not NOT_TOLD.search(reply), (question, reply)
        assert reply.startswith(QUOTE_LEAD) and reply.endswith(f'> "{statement}"'), (question, reply)


def test_with_no_line_close_a_question_about_the_user_quotes_the_nearest_and_a_world_question_gets_the_note():
    # nothing of the user's own close to the question: a question about the user or their things still gets the nearest
    # line quoted (never "not told" while the request holds lines); advice or the world gets the stand-in's note
    said = [("user", "I had a long week, glad it's over."), ("assistant", "Rest up.")]
    question = "What's my dog called?"
    reply = chat_reply(prompts.SCOUT_PERSONA, [*said, ("user", question)])
    assert not NOT_TOLD.search(reply) and reply == quoted_reply(said[0][1]), reply
    assert closest_line(question, prompts.SCOUT_PERSONA, [*said, ("user", question)]) is None
    for question in ("What can we spot from our porch?", "Is there a good bookshop nearby?"):  # read as advice
        reply = chat_reply(prompts.SCOUT_PERSONA, [*said, ("user", question)])
        assert "nothing in them answers" in reply and QUOTE_LEAD not in reply, (question, reply)


def test_a_world_question_with_a_close_line_never_says_nothing_answers():
    # the reader answers what the request holds then adds the stand-in's note, or quotes the line: never "nothing"
    for statement, question in [
        ("I collect old maps of Lisbon and Porto.", "Where could a collector of antique maps shop?"),
        ("I collect old maps of Lisbon and Porto.", "Is there a good shop for antique charts?"),
    ]:
        reply = _chat(statement, question)
        assert "nothing in them answers" not in reply and "old maps" in reply, (question, reply)


def test_an_answer_with_the_stand_in_note_never_says_nothing_answers():
    from helpers.offline.reply import stand_in_note

    held = stand_in_note(prompts.SCOUT_PERSONA, held=True)
    assert "nothing in them answers" not in held and "offline stand-in" in held
    assert "nothing in them answers" in stand_in_note(prompts.SCOUT_PERSONA)
