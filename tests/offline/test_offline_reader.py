"""The offline model's generic reader (helpers.offline): statements, people, answers, summaries and facts (issue 12)."""

from __future__ import annotations

import pytest

from helpers import prompts
from helpers.config import load_settings
from helpers.llm import get_client
from helpers.offline.fact_rules import clash, facts_from_text, same_fact
from helpers.offline.person import resolve_pronouns, third_to_second, to_second, to_third
from helpers.offline.quote import QUOTE_LEAD
from helpers.offline.reader import read_question, statements_of

MODEL = "claude-haiku-4-5"
FILLER = [
    ("Any good tacos near Echo Park?", "Try the stands on Sunset."),
    ("Which beach is nice for a morning walk?", "Santa Monica, before nine."),
]


@pytest.fixture(scope="module")
def client():
    return get_client(load_settings({}), max_retries=0)


def ask(client, turns: list[tuple[str, str]], question: str, system: str = prompts.SCOUT_PERSONA) -> str:
    messages = []
    for user, assistant in turns:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    messages.append({"role": "user", "content": question})
    reply = client.messages.create(model=MODEL, max_tokens=300, system=system, messages=messages)
    return reply.content[0].text


def declined(reply: str) -> bool:
    """The reply does not give an answer: it says it does not know, or (issue 40) that it could not work the answer
    out, quoting the request's closest line marked as a quote, never as its own answer."""
    return "don't know" in reply.lower() or reply.startswith(QUOTE_LEAD + '\n> "')


# --- issue 12's four exchanges, through the real SDK ----------------------------------------------------


@pytest.mark.parametrize(
    "statement, question, expected",
    [
        ("My sister Priya lives in Pasadena and she is a nurse.", "Where does my sister live?", "Pasadena"),
        ("My cousin Theo works at the Getty Center.", "Where does my cousin work?", "Getty Center"),
        ("I'm vegetarian, so no meat please.", "What should I avoid eating?", "meat"),
    ],
)
def test_the_failing_exchanges_are_answered_after_other_messages(client, statement, question, expected):
    reply = ask(client, [(statement, "Noted.")] + FILLER, question)
    assert expected in reply and not declined(reply)


def test_the_sisters_name_from_a_memory_block_in_a_new_session(client):
    system = (
        prompts.SCOUT_PERSONA
        + "\n\n"
        + prompts.MEMORY_OPEN
        + "[2026-11-29] (from a conversation) User: By the way, my sister's name is Priya Assistant: Noted."
        + prompts.MEMORY_CLOSE
    )
    reply = ask(client, [], "What is my sister's name?", system)
    assert "Priya" in reply and not declined(reply)
    assert declined(ask(client, [], "What is my sister's name?"))  # without the block it cannot know


def test_reads_the_summary_block_in_third_person(client):
    system = (
        prompts.SCOUT_PERSONA
        + "\n\n"
        + prompts.SUMMARY_OPEN
        + "The user's cousin Theo works at the Getty Center. The user is vegetarian."
        + prompts.SUMMARY_CLOSE
    )
    reply = ask(client, [], "Where does my cousin work?", system)
    assert reply == "Your cousin Theo works at the Getty Center."


# --- it never answers from anywhere but the request ------------------------------------------------------


@pytest.mark.parametrize(
    "statement, question",
    [
        ("My sister Priya lives in Pasadena.", "Where does my brother live?"),
        ("I'm allergic to peanuts.", "What is my son allergic to?"),
        ("My dog's name is Biscuit.", "What's my cat called?"),
        ("We're renovating the kitchen in March.", "When are we redoing the bathroom?"),
        ("My sister Priya lives in Pasadena.", "Where do I live?"),
        ("My dentist appointment is next Tuesday at 4pm.", "When is my appointment with the eye doctor?"),
    ],
)
def test_a_near_miss_is_not_an_answer(client, statement, question):
    reply = ask(client, [(statement, "Noted.")], question)
    assert declined(reply), reply


def test_the_same_question_is_answered_only_with_the_statement_in_the_request(client):
    with_it = ask(
        client,
        [("My partner's name is Alex and we've been together nine years.", "Lovely.")],
        "How long have Alex and I been a couple?",
    )
    assert "nine years" in with_it
    assert declined(ask(client, [], "How long have Alex and I been a couple?"))


# --- reading: people, pronouns and persons ---------------------------------------------------------------


def test_pronouns_point_at_the_person_last_named():
    assert resolve_pronouns(["My sister Priya lives in Pasadena and she is a nurse.", "Her husband is a chef."]) == [
        "My sister Priya lives in Pasadena and my sister Priya is a nurse.",
        "my sister Priya's husband is a chef.",
    ]


@pytest.mark.parametrize(
    "first, second, third",
    [
        ("I'm vegetarian", "you're vegetarian", "The user is vegetarian"),
        ("My sister lives in Pasadena", "Your sister lives in Pasadena", "The user's sister lives in Pasadena"),
        ("I really love hiking", "you really love hiking", "The user really loves hiking"),
        ("I don't drink alcohol", "you don't drink alcohol", "The user doesn't drink alcohol"),
        ("I have two cats", "you have two cats", "The user has two cats"),
        ("I moved to Denver", "you moved to Denver", "The user moved to Denver"),
    ],
)
def test_person_rewriting(first, second, third):
    assert to_second(first) == second[:1].upper() + second[1:]
    assert to_third(first) == third
    assert third_to_second(third).lower() == second.lower().replace("you're", "you are")


def test_question_reading_names_what_is_asked():
    q = read_question("Where does my sister live?")
    assert q.kind == "place" and q.heads == ["sister"] and not q.about_user
    q = read_question("What time does my pottery class start?")
    assert q.kind == "time" and "pottery" in q.objects
    assert read_question("Where do I live?").about_user


def test_statements_come_from_every_part_of_the_request():
    system = (
        prompts.SCOUT_PERSONA
        + "\nThe user's favorite color is teal.\n"
        + prompts.MEMORY_OPEN
        + "[2026-11-29] The user lives in Portland."
        + prompts.MEMORY_CLOSE
    )
    found = [s.text for s in statements_of(system, [("user", "I'm allergic to peanuts. Any ideas?")])]
    assert "The user's favorite color is teal." in found and "The user lives in Portland." in found
    assert "I'm allergic to peanuts." in found and not any("ideas" in t for t in found)
    assert not any("Scout" in t for t in found)  # the persona is an instruction, not a statement


# --- facts and summaries by the same means ---------------------------------------------------------------


def test_facts_are_any_first_person_statement_in_third_person():
    assert facts_from_text("My sister Priya lives in Pasadena and she is a nurse.") == [
        "The user's sister Priya lives in Pasadena.",
        "The user's sister Priya is a nurse.",
    ]
    assert facts_from_text("I don't eat pork. Could you suggest a taco place?") == ["The user doesn't eat pork."]
    assert facts_from_text("Thanks, that sounds great!") == []
    assert facts_from_text("Your table at Bestia is booked for Friday at 7:45pm.", "assistant") == [
        "The user's table at Bestia is booked for Friday at 7:45pm."
    ]


def test_clash_and_duplicate_are_generic():
    assert clash("The user moved to Denver.", "The user lives in Los Angeles.")
    assert clash("The user's favorite color is green.", "The user's favorite color is teal.")
    assert not clash("The user loves surfing.", "The user loves hiking.")
    assert not clash("The user is allergic to shellfish.", "The user is allergic to peanuts.")
    assert same_fact("The user has moved to Denver.", "The user lives in Denver.")
    assert not same_fact("The user is allergic to peanuts.", "The user is not allergic to peanuts.")


def test_summary_keeps_statements_in_third_person_and_drops_questions(client):
    body = (
        "<existing_summary>\n\n</existing_summary>\n<new_turns>\n"
        "User: My sister Priya lives in Pasadena and she is a nurse.\nAssistant: Noted.\n"
        "User: Any good tacos near Echo Park?\nAssistant: Try Sunset Boulevard.\n"
        "User: I'm vegetarian, so no meat please.\nAssistant: Got it.\n</new_turns>"
    )
    reply = client.messages.create(
        model=MODEL, max_tokens=200, system=prompts.SUMMARY_TASK, messages=[{"role": "user", "content": body}]
    )
    summary = reply.content[0].text
    # the user's statements in third person, plus what the other side recommended to the user (issue 13)
    assert summary == (
        "The user's sister Priya lives in Pasadena. The user's sister Priya is a nurse. "
        "The user is vegetarian, so no meat. The assistant recommended that the user try Sunset Boulevard."
    )
    assert "asked" not in summary and "tacos" not in summary


def test_question_parts_split_between_question_clauses_only():
    from helpers.offline.question import question_parts

    assert question_parts("What is my name, and where do I live?") == ["What is my name?", "where do I live?"]
    assert question_parts("what is my name and where do I live") == ["what is my name", "where do I live"]
    assert question_parts("When do I fly; where am I staying?") == ["When do I fly?", "where am I staying?"]
    assert question_parts("Who are Tom and Jerry?") == ["Who are Tom and Jerry?"]
    assert question_parts("What do salt and pepper cost?") == ["What do salt and pepper cost?"]


def test_a_two_part_question_gets_both_answers(client):
    turns = [("Hi, my name is Maya and I live in Portland.", "Nice to meet you.")] + FILLER
    reply = ask(client, turns, "What is my name, and where do I live?")
    assert "Maya" in reply and "Portland" in reply
    reply = ask(client, turns, "where do I live and what is my name")
    assert "Maya" in reply and "Portland" in reply


def test_a_part_nothing_answers_says_so_for_that_part_only(client):
    turns = [("I live in Portland.", "Noted.")] + FILLER
    reply = ask(client, turns, "Where do I live, and what is my sister's name?")
    assert "Portland" in reply
    assert "don't know" in reply and "sister" in reply
    assert "Maya" not in reply and "Priya" not in reply
    turns = [("My sister Priya lives in Pasadena.", "Nice.")] + FILLER
    reply = ask(client, turns, "Where does my sister live and what does she do for work?")
    assert "Pasadena" in reply and "don't know" in reply
    reply = ask(client, FILLER, "What is my name, and where do I live?")
    assert reply.startswith("I don't know")


def test_phrasal_verbs_and_kinds_of_things_are_read_generically():
    from helpers.offline.kinds import is_kind_of
    from helpers.offline.language import content_stems, has_answer_type, stem

    assert "bed" in content_stems("What time do I turn in?")
    assert "avoid" in content_stems("Is there anything I should steer clear of?")
    assert is_kind_of(stem("cilantro"), stem("food"))  # a herb, and a herb is food
    assert has_answer_type("number", "I retire at fifty-five.", set())
    assert has_answer_type("time", "I teach third grade.", set())
    assert not has_answer_type("number", "I teach third grade.", set())  # 'third' is not how many
    assert has_answer_type("time", "I swim on Mondays.", set())  # a day said in the plural is still a when
    assert not has_answer_type("place", "I swim on Mondays.", set())  # ... and not a where


def test_a_day_said_in_the_plural_answers_when(client):
    turns = [("I only eat fish on Fridays.", "Noted."), ("I might try the new noodle bar on Friday.", "Fun.")]
    reply = ask(client, turns + FILLER, "On which day do I have seafood?")
    assert "Fridays" in reply and "noodle" not in reply and not declined(reply)


def test_an_ordinal_does_not_answer_how_many(client):
    turns = [("I teach third grade at a primary school.", "Lovely.")] + FILLER
    assert "third" in ask(client, turns, "Which year are my pupils in?")
    assert declined(ask(client, turns, "How many children are in my class?"))


def test_synonyms_are_one_thing_and_a_member_of_a_synonym_counts_but_names_nothing(client):
    turns = [("My apartment number is 4C.", "Noted.")] + FILLER
    assert "4C" in ask(client, turns, "Which flat do I live in?")  # flat = apartment, not another kind of home
    turns = [("I'm trying to cut back on salt.", "Good idea.")] + FILLER
    assert "salt" in ask(client, turns, "What am I eating less of?")  # salt is a food
    turns = [("I'm applying for a master's in economics.", "Good luck.")] + FILLER
    assert declined(ask(client, turns, "Which university am I applying to?"))


# --- the answer-or-decline decision (helpers.offline.answer), on sentences outside the phrasing corpus -----


def test_the_clause_that_answers_is_said_not_its_neighbour(client):
    """'for a living' is the idiom for a job, not the verb 'live': the nurse clause answers, not the Pasadena one."""
    turns = [("My sister Priya lives in Pasadena and she is a nurse.", "Noted.")] + FILLER
    for question in ("What does my sister do for a living?", "What does she do for a living?"):
        reply = ask(client, turns, question)
        assert "nurse" in reply and "Pasadena" not in reply, (question, reply)


def test_a_paraphrase_and_a_member_of_the_kind_asked_for_are_answers(client):
    assert "history" in ask(
        client, [("My uncle Raj teaches history at a college.", "Noted.")] + FILLER, "What subject does Raj teach?"
    )
    assert "42" in ask(client, [("I wear a size 42 jacket.", "Noted.")] + FILLER, "What size coat do I wear?")
    assert "Bonfire" in ask(
        client, [("My mum's birthday is on Bonfire Night.", "Noted.")] + FILLER, "When is mum's birthday?"
    )


@pytest.mark.parametrize(
    "statement, question",
    [
        ("I wear a size 42 jacket.", "What size trousers do I wear?"),  # the attribute of another thing
        ("I studied at a college in Leeds.", "Which high school did I attend?"),  # a modifier the statement lacks
        ("The office's door code is 4471.", "What's the office's alarm code?"),  # another thing the place has
        ("I can't stand olives.", "What's my favourite snack?"),  # asked what they like, told a dislike
    ],
)
def test_a_statement_about_a_different_thing_declines(client, statement, question):
    assert declined(ask(client, [(statement, "Noted.")] + FILLER, question)), question


def test_the_verdict_names_its_reason():
    from helpers.offline.answer import judge

    said = statements_of("", [("user", "My sister Priya lives in Pasadena."), ("user", "I wear a size 42 jacket.")])
    assert judge(read_question("Where does my brother live?"), said[0], {})[1] == "other person"
    assert judge(read_question("Where do I live?"), said[0], {})[1] == "not the user"
    assert judge(read_question("What size trousers do I wear?"), said[1], {})[1] == "no specific"
    scored, reason = judge(read_question("Where does my sister live?"), said[0], {})
    assert reason == "ok" and scored.coverage == 1.0


def test_the_leading_question_word_decides_what_kind_of_answer_is_wanted():
    q = read_question("What was grandpa's job when he was a sailor?")
    assert q.kind == "any" and q.heads == ["grandpa"]
    assert read_question("Which seafood gives me a reaction?").focus == ["seafood"]  # 'gives' is the verb
    assert read_question("Which Japanese city am I based in?").heads == []  # a nationality is not a person


# --- round 2: an answer comes only from a statement about the same subject, thing and attribute -------------


@pytest.mark.parametrize(
    "statement, question",
    [
        ("My wife is a dentist in Bristol.", "What's my occupation?"),  # the user, not a person of theirs
        ("My scooter is bright red.", "What colour is my van?"),  # another thing owned
        ("Our youngest, Ada, is four.", "How old is my eldest?"),  # another child
        ("The router is called BlueHarbour.", "What's the router's password?"),  # a name is not a secret
        ("The safe in our hotel room is number 12.", "What's the combination of the hotel safe?"),
        ("The plumber is coming on Wednesday.", "What time is the plumber coming?"),  # a day is not a clock time
        ("We're off to Portugal for Easter.", "Where are we going in the summer?"),  # another occasion
        ("My gym membership started in March.", "When does my gym membership end?"),  # another phase of it
        ("Mina flies out to Seoul on Friday.", "When does Mina land back home?"),  # another leg of the journey
    ],
)
def test_a_statement_about_another_subject_thing_or_attribute_declines(client, statement, question):
    assert declined(ask(client, [(statement, "Noted."), *FILLER], question))


@pytest.mark.parametrize(
    "statement, question, expected",
    [
        ("I'm a dentist in Bristol.", "What's my occupation?", "dentist"),
        ("My van is bright red.", "What colour is my van?", "red"),
        ("Our eldest, Ada, is nine.", "How old is my eldest?", "nine"),
        ("The router password is tidepool42.", "What's the router's password?", "tidepool42"),
        ("The plumber is coming at ten on Wednesday.", "What time is the plumber coming?", "ten"),
        ("We're off to Portugal for the summer.", "Where are we going in the summer?", "Portugal"),
        ("My gym membership ends in March.", "When does my gym membership run out?", "March"),
    ],
)
def test_the_same_subject_thing_and_attribute_still_answers(client, statement, question, expected):
    reply = ask(client, [(statement, "Noted."), *FILLER], question)
    assert expected in reply and not declined(reply), reply
