"""Plumbing: kinds of things and their members for the offline reader ("jazz" is music, "cilantro" a herb and so food).

A question about a kind ("what music") is answered by a member ("jazz"); a statement about another member of
the same kind ("wine" asked, "tea" said) is about something else.
"""

from __future__ import annotations

from helpers.offline.language import stem
from helpers.offline.synonyms import related

__all__ = ["is_kind_of", "is_specific", "other_member"]

_CATEGORIES = {
    "music": "jazz rock pop classical hip-hop rap blues country folk metal punk techno opera reggae soul indie "
    "electronic disco funk gospel",
    "sport": "football soccer basketball tennis golf cricket rugby baseball hockey volleyball badminton squash "
    "swimming running cycling climbing boxing skiing surfing",
    "instrument": "piano guitar violin cello drums flute trumpet saxophone bass ukulele harp clarinet viola banjo",
    "bird": "parrot budgie canary chicken hen duck owl cockatiel",
    "animal": "dog cat parrot rabbit hamster fish horse chicken hen goat guinea pig tortoise turtle snake lizard",
    "room": "kitchen bathroom bedroom lounge attic basement garage study hallway nursery",
    "computer": "laptop desktop thinkpad macbook pc chromebook",
    "race": "marathon half-marathon 5k 10k triathlon ultramarathon",
    "shop": "bakery cafe store boutique bookshop bookstore deli florist butcher grocery",
    "diet": "vegan vegetarian keto paleo kosher halal pescatarian gluten-free",
    "drink": "coffee tea beer wine juice whisky whiskey gin vodka cocktail soda",
    "vegetable": "broccoli carrot pea spinach cabbage sprout onion mushroom celery eggplant aubergine kale "
    "cauliflower beetroot zucchini courgette potato mushroom tomato pepper",
    "fruit": "apple banana orange mango strawberry grape pear peach cherry pineapple",
    "herb": "coriander cilantro basil parsley mint dill rosemary thyme oregano sage",
    "metal": "gold silver platinum copper steel titanium bronze",
    "camera": "fujifilm canon nikon sony leica",
    "language": "spanish french german italian chinese mandarin japanese portuguese arabic russian korean hindi dutch",
    "condition": "diabetes diabetic asthma asthmatic coeliac celiac epilepsy epileptic arthritis migraine allergic allergy",
    "vehicle": "car bike bicycle motorbike motorcycle scooter van truck lorry boat yacht caravan campervan",
    "child": "eldest oldest youngest middle",
    "secret": "password passcode passphrase pin combination",
    "phase": "begin start open launch sign end finish expire close",  # when a thing begins is not when it ends
    "journey": "fly depart leave arrive land",
    "health": "diabetes diabetic asthma asthmatic coeliac celiac epilepsy epileptic arthritis migraine",
    "activity": "hiking walking running swimming climbing camping cycling kayaking fishing skiing surfing sailing",
    "dog": "greyhound labrador poodle beagle terrier spaniel collie retriever dachshund husky pug corgi whippet",
    "business": "shop company restaurant",
    "food": "herb vegetable fruit meat fish sugar salt bread cheese dairy nut",
    "hobby": "pottery yoga painting knitting gardening photography chess baking pilates dancing",
    "class": "pottery yoga painting pilates dance spin",
    "holiday": "vacation trip",
    "season": "summer winter spring autumn",
    "colour": "red blue green teal yellow purple orange pink black white grey gray brown",
    "film": "movie",
    "house": "cabin cottage flat apartment bungalow villa",
    "building": "office cabin house flat apartment cottage hotel school gym hospital church library",
    "job": "nurse teacher analyst engineer doctor dentist chef translator developer designer lawyer accountant architect",
    "team": "celtics lakers yankees arsenal",
    "degree": "master's bachelor's phd mba",
    "school": "kindergarten university college nursery",
}
_MEMBERS: dict[str, set[str]] = {}
_KIND_OF_THING: dict[str, set[str]] = {}
for _kind, _members in _CATEGORIES.items():
    for _m in _members.split():
        _MEMBERS.setdefault(stem(_kind), set()).add(stem(_m))
        _KIND_OF_THING.setdefault(stem(_m), set()).add(stem(_kind))


def is_kind_of(member: str, kind: str) -> bool:
    """'jazz' is a kind of 'music', 'cilantro' (a herb) a kind of 'food' (stems, two levels)."""
    kinds = _KIND_OF_THING.get(member, set())
    return kind in kinds or any(kind in _KIND_OF_THING.get(k, set()) for k in kinds)


def is_specific(word: str) -> bool:
    """A member of some kind of thing ('football' is a sport): a question naming it wants that very thing."""
    return word in _KIND_OF_THING


def other_member(asked: str, said: set[str]) -> bool:
    """The question names one member of a kind ('wine') and the statement another ('tea'), not the one asked."""
    if asked in said or any(related(asked, s) for s in said):
        return False  # the statement names the thing asked too ("starts ... and finishes": the start is there)
    kinds = _KIND_OF_THING.get(asked, set())
    return any(
        kinds & _KIND_OF_THING.get(s, set()) and s != asked and not is_kind_of(asked, s) and not related(asked, s)
        for s in said
    )  # 'flat' and 'apartment' are one thing
