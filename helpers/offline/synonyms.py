"""Plumbing: which words mean the same for the offline reader: synonym groups, and words for the same person.

A question may ask in other words than a statement says ("where do I live" / "I'm based in Leeds"): stems in one
synonym group match. Person words match when they name the same person ("gran" / "grandmother") or one of the kind
asked about (asked "kid", said "daughter"). Stems are helpers.offline.language's.
"""

from __future__ import annotations

from helpers.offline.language import stem

__all__ = ["synonyms", "related", "same_person"]

# Synonym groups: words a question may use for what a statement says in other words.
_GROUPS = [
    "live reside home base move hometown address",
    "work job employ profession career occupation employer gig",
    "name call",
    "eat food meal diet vegetarian vegan meat cook dish restaurant lunch dinner breakfast snack cuisine",
    "avoid not no never without skip allergic allergy intolerant hate dislike can't cannot don't",
    "like love enjoy favorite favourite prefer fan adore fond",
    "hate dislike can't stand detest",
    "age old year born",
    "birthday born birth",
    "phone number code pin password combination",
    "car drive vehicle",
    "pet dog cat puppy kitten",
    "marry married wife husband partner spouse",
    "study school university college major degree student",
    "travel trip fly flight visit vacation holiday journey",
    "meet meeting appointment",
    "speak language",
    "cost price pay budget spend dollar money afford",
    "arrive land get reach",
    "leave depart",
    "play sport instrument",
    "allergic allergy allergies react",
    "drink coffee tea beer wine alcohol",
    "book booking reservation reserve reserved table",
    "hotel stay room",
    "flat apartment",
    "dog pup puppy",
    "cat kitten kitty",
    "boss manager supervisor",
    "colleague coworker co-worker",
    "phone mobile cellphone cell",
    "computer laptop pc",
    "bike bicycle",
    "grow raise bring",
    "begin start",
    "autumn fall",
    "lounge living",
    "support fan root",
    "nickname call",
    "teach teacher pupil student class grade lesson",
    "duty shift pager rota on-call",
    "beach seaside coast shore sea ocean swim sunbathe",
    "abroad overseas exchange foreign",
    "buy purchase close key",
    "sleep bed asleep bedtime",
    "meet meeting appointment stand-up standup",
    "marry married wedding honeymoon",
    "travel trip head honeymoon",
    "study degree master's masters bachelor's phd mba course",
    "hope plan dream wish intend aspire aim",
    "begin start open launch found",
    "end finish expire conclude",
    "garden allotment plot yard",
    "street road lane avenue",
    "live house apartment flat",
    "address house street",
    "hate loathe unbearable awful",
    "retire retirement",
    "company startup firm business employer",
    "avoid less reduce",
]

_SYN: dict[str, frozenset[str]] = {}
for _group in _GROUPS:
    _stems = frozenset(stem(w) for w in _group.split())
    for _s in _stems:
        _SYN[_s] = _SYN.get(_s, frozenset()) | _stems


# Words for the same person, and words for a kind of person that a more specific word belongs to.
_SAME_PERSON = [
    "grandmother gran grandma granny nana",
    "grandfather grandpa granddad grandad gramps",
    "father dad daddy papa",
    "son boy",
    "daughter girl",
    "mother mom mum mommy mummy mama",
    "child children kid kids",
    "friend pal buddy mate",
    "dog pup puppy doggy",
    "cat kitten kitty",
    "boss manager supervisor",
    "colleague coworker co-worker",
    "partner spouse",
    "grandparent grandparents",
    "parent parents",
    "sibling siblings",
    "neighbor neighbour",
]
_KINDS = {
    "child": "son daughter baby toddler boy girl twin",
    "parent": "mother father mom dad mum",
    "partner": "wife husband boyfriend girlfriend fiance fiancee",
    "sibling": "brother sister twin",
    "grandparent": "grandmother grandfather grandma grandpa gran",
    "pet": "dog cat puppy kitten parrot bird rabbit hamster",
    "family": "mother father sister brother son daughter wife husband parent child",
    "friend": "best",
}
_PERSON_ID: dict[str, str] = {}
for _group in _SAME_PERSON:
    _ids = [stem(w) for w in _group.split()]
    for _s in _ids:
        _PERSON_ID[_s] = _ids[0]
_KIND_OF: dict[str, set[str]] = {}
for _kind, _members in _KINDS.items():
    for _m in _members.split():
        _KIND_OF.setdefault(_PERSON_ID.get(stem(_m), stem(_m)), set()).add(_PERSON_ID.get(stem(_kind), stem(_kind)))


def same_person(asked: str, said: str) -> bool:
    """Whether a statement's person word `said` answers for the question's person word `asked` (stems):
    the same person ('gran' = 'grandmother') or one of the kind asked about (asked 'kid', said 'daughter')."""
    a, b = _PERSON_ID.get(asked, asked), _PERSON_ID.get(said, said)
    return a == b or a in _KIND_OF.get(b, set()) or b in _KIND_OF.get(a, set())


def synonyms(word: str) -> frozenset[str]:
    """The stems in a synonym group with `word` (a stem)."""
    return _SYN.get(word, frozenset())


def related(a: str, b: str) -> bool:
    """Two stems in one synonym group (not the same stem)."""
    return a != b and b in _SYN.get(a, frozenset())
