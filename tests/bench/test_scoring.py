"""Scoring that sees supersession (issue 21): a stale value sent beside the current one is a miss."""

from helpers.bench.scoring import answer_in_request, current_in_request, gold_current_in_request, gold_in_request


def _request(*memories: str) -> dict:
    return {
        "system": "persona\n<remembered_memories>\n" + "\n".join(memories) + "\n</remembered_memories>",
        "messages": [{"role": "user", "content": "Where do I live?"}],
    }


def test_a_stale_value_beside_the_current_one_is_a_miss():
    both = _request("[8 May 2023] User: I live in Portland.", "[2 June 2023] User: I moved to Denver.")
    assert answer_in_request(both, "Denver")  # the plain metric counts it recalled
    assert not current_in_request(both, "Denver", stale=["Portland"])
    assert current_in_request(_request("[2 June 2023] User: I moved to Denver."), "Denver", stale=["Portland"])
    assert not current_in_request(_request("[8 May 2023] User: I live in Portland."), "Denver", stale=["Portland"])


def test_no_stale_values_means_the_plain_metric():
    request = _request("User: my code is 4417")
    assert current_in_request(request, "4417") == answer_in_request(request, "4417") is True


def test_whole_words_for_stale_values_too():
    # "Portlandia" is not the stale value "Portland"
    assert current_in_request(_request("User: I moved to Denver. I watch Portlandia."), "Denver", stale=["Portland"])


def test_gold_groups_with_stale_values():
    both = _request("User: my sister is Ana, in Lisbon", "User: Ana moved from Lisbon to Porto")
    gold = [["Ana"], ["Porto"]]
    assert gold_in_request(both, gold) and not gold_current_in_request(both, gold, stale=["Lisbon"])
    assert gold_current_in_request(_request("User: Ana lives in Porto"), gold, stale=["Lisbon"])
