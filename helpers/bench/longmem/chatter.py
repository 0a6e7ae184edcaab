"""Plumbing: chit-chat pools for the long-conversation benchmark corpus (reactions, openers, closers, run-on lines).

`helpers.bench.longmem.data` draws from these with a seeded RNG to make turns run on the way chat does; the
facts and questions themselves are in `helpers.bench.longmem.pools`.
"""

from __future__ import annotations

__all__ = ["FOLLOW", "REACT", "OPENERS", "CLOSERS", "MORE"]

FOLLOW = [
    "How did that happen?",
    "Tell me more.",
    "How are you feeling about it?",
    "Since when?",
    "That's so you.",
    "I want the full story next time.",
    "You never mentioned that!",
    "Good, you deserve it.",
]
REACT = [
    "Oh wow!",
    "No way.",
    "Ha, of course.",
    "That's brilliant.",
    "Oh no.",
    "Honestly, fair.",
    "Love that.",
    "Okay, I need details.",
    "Ahh, good for you.",
    "Classic you.",
    "Wait, really?",
    "Nice one.",
]
OPENERS = [
    "Right,",
    "Anyway,",
    "Also,",
    "Oh and",
    "Random thought:",
    "Okay so",
    "Hey!",
    "Morning!",
    "Evening!",
    "Sorry, busy day.",
    "Quick one:",
]
CLOSERS = [
    "Anyway, how are you?",
    "What about you?",
    "How's your week going?",
    "Tell me something good.",
    "Anyway, enough about me.",
    "Thoughts?",
    "",
]

# Follow-on sentences that can come after any line of a topic, to make turns run on the way chat does
MORE: dict[str, dict[str, list[str]]] = {
    "weather": {
        "user": [
            "The bus was twenty minutes late because of it, naturally.",
            "I've had wet socks since nine this morning.",
            "Everyone at the shop was talking about it, it's the only news in town.",
            "I keep checking the app like it's going to change its mind.",
            "My washing has been on the line for three days and is somehow wetter than when I hung it.",
            "The park was empty apart from one very determined jogger.",
        ],
        "assistant": [
            "I stayed under a blanket most of the afternoon, no regrets.",
            "The cat next door has been sheltering under my car all day.",
            "At least it makes staying in feel justified.",
            "I'm convinced the forecast is just guessing at this point.",
            "My commute was basically a swim.",
        ],
    },
    "tv": {
        "user": [
            "I keep telling myself one more episode and then it's 1am.",
            "The soundtrack alone is worth it, honestly.",
            "My flatmate walked in halfway and now she's hooked too.",
            "I have opinions about the ending, we need to talk.",
            "I'm rationing the last season so it doesn't end.",
        ],
        "assistant": [
            "That's the danger of autoplay, it knows us too well.",
            "I'll add it to my list, which is now about four hundred things long.",
            "I gave up on the last thing you recommended after two episodes, sorry.",
            "Rationing is very mature of you, I could never.",
            "Save your opinions for when I've caught up, please.",
        ],
    },
    "food": {
        "user": [
            "The kitchen looks like a crime scene but it was worth it.",
            "I used about half the garlic in the house.",
            "Next time I'm following the recipe properly, promise.",
            "Leftovers for lunch tomorrow, so that's a win.",
            "The smoke alarm had opinions, as usual.",
        ],
        "assistant": [
            "Garlic is never the wrong amount.",
            "Honestly the mess is part of the fun.",
            "Send me the recipe, I want to try it.",
            "Leftovers are the best part of cooking.",
            "My smoke alarm goes off if I make toast, so I feel you.",
        ],
    },
    "work": {
        "user": [
            "I have forty unread emails and I'm choosing to ignore them until tomorrow.",
            "Someone microwaved fish in the office kitchen again.",
            "The coffee machine broke so nobody is speaking.",
            "My calendar is a wall of colour this week, no gaps at all.",
            "At least it's Friday tomorrow. It is Friday tomorrow, isn't it?",
        ],
        "assistant": [
            "Ignoring emails is a valid strategy, I've heard.",
            "Fish in the microwave should be illegal.",
            "No coffee, no peace, that's the rule.",
            "Block out an hour for lunch, nobody will notice.",
            "Hang in there, the weekend is close.",
        ],
    },
    "weekend": {
        "user": [
            "I didn't set an alarm once and it was glorious.",
            "I'm still tired though, how does that work?",
            "My legs hurt from all the walking, in a good way.",
            "Ended up napping on the sofa with a film on.",
            "I feel like I need another weekend to recover from this one.",
        ],
        "assistant": [
            "Alarm-free mornings are the best thing in life.",
            "Weekend tiredness is a mystery of science.",
            "That's the kind of sore that means you did something.",
            "The sofa nap is the peak of civilisation.",
            "Weekends should be three days, I've said it for years.",
        ],
    },
    "health": {
        "user": [
            "I'm trying to take the stairs at work instead of the lift.",
            "My step counter says I walked twelve thousand steps, which feels fake.",
            "Been drinking so much ginger tea I might turn into a ginger.",
            "The doctor said it's nothing, just stress, which is its own thing.",
            "I bought vitamins, which I'm sure means I'm healthy now.",
        ],
        "assistant": [
            "Stairs are sneaky exercise, good call.",
            "Twelve thousand is a lot, be proud.",
            "Ginger tea fixes everything, my gran swore by it.",
            "Stress is real, go easy on yourself.",
            "Vitamins are a lifestyle, I respect it.",
        ],
    },
    "news": {
        "user": [
            "Everyone on the local forum is furious about it.",
            "I signed a petition, for whatever that's worth.",
            "My neighbour has a theory about it that involves the mayor's brother.",
            "It was on the radio this morning, so it must be true.",
            "I honestly can't keep up with it all.",
        ],
        "assistant": [
            "The local forum is always furious about something.",
            "Petitions sometimes work, you never know.",
            "Your neighbour should write a novel.",
            "I stopped reading the news before bed, it helps.",
            "Nobody can, don't worry.",
        ],
    },
    "friends": {
        "user": [
            "We should get everyone together before the year's out.",
            "The group chat has been silent for months, it's eerie.",
            "She still laughs exactly the same way, it made me so happy.",
            "I need to get better at replying to people.",
            "I bought a card and then forgot to post it, classic.",
        ],
        "assistant": [
            "I'll start a thread, someone has to.",
            "Group chats go through seasons, it'll wake up.",
            "Old friends are the best friends.",
            "We're all terrible at replying, it's fine.",
            "Hand-deliver it, that's even nicer.",
        ],
    },
    "home": {
        "user": [
            "I've been meaning to put up shelves for about six months.",
            "The plant on the windowsill is thriving, which shocks me.",
            "I found a sock behind the radiator that I've been missing since winter.",
            "The upstairs neighbours were moving furniture at midnight again.",
            "I'm one flat-pack wardrobe away from a breakdown.",
        ],
        "assistant": [
            "Shelves are a myth, nobody actually puts them up.",
            "Plants like you, take the compliment.",
            "Radiators eat socks, it's well known.",
            "Midnight furniture moving is a crime.",
            "Never build flat-pack alone, call me next time.",
        ],
    },
    "travel": {
        "user": [
            "I made a spreadsheet of places I want to go, it has eighty rows.",
            "The last time I flew they lost my bag for a week.",
            "Night trains are so romantic in theory.",
            "I always overpack and then wear the same two things.",
            "I want to go somewhere with mountains and no phone signal.",
        ],
        "assistant": [
            "Eighty rows is ambitious, I love it.",
            "Lost luggage is the worst, I still have trust issues.",
            "In theory, yes, in practice you sleep next to someone snoring.",
            "Everyone overpacks, it's tradition.",
            "No signal sounds like heaven some weeks.",
        ],
    },
}
