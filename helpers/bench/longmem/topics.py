"""Plumbing: hand-written chit-chat by topic for the long-conversation benchmark corpus.

Data only, like `pools.py`: what two friends say between the facts. `helpers.bench.longmem.data` draws one or two
lines a turn with a seeded RNG.
"""

from __future__ import annotations

__all__ = ["TOPICS"]

# Chit-chat by topic; each turn draws one or two lines, sometimes with an opener or closer.
TOPICS: dict[str, dict[str, list[str]]] = {
    "weather": {
        "user": [
            "It's been raining sideways all day, my umbrella gave up around lunchtime.",
            "Finally some sun! I sat outside at lunch like a lizard.",
            "Is it me or is it freezing for the time of year?",
            "The wind last night kept me awake, the whole building was creaking.",
            "Forecast says a heatwave next week, I'm not built for it.",
        ],
        "assistant": [
            "Same here, I gave up and stayed in with tea.",
            "Ha, soak it up while it lasts.",
            "It's grim, isn't it. I've had the heating on since September.",
            "Our fence nearly blew over, it was wild.",
            "Stock up on ice lollies, that's my plan.",
        ],
    },
    "tv": {
        "user": [
            "Have you started that new detective series? I watched four episodes in a row.",
            "I finally finished the baking show, the final was so tense.",
            "There's nothing good on, I've been rewatching old sitcoms.",
            "I fell asleep during the film again, I've now seen the first half three times.",
            "That documentary about octopuses broke my brain a bit.",
        ],
        "assistant": [
            "Not yet! No spoilers please.",
            "I cried at the final, not ashamed.",
            "Comfort TV is valid, I do the same.",
            "Ha, one day you'll find out how it ends.",
            "Octopuses are basically aliens, I'm convinced.",
        ],
    },
    "food": {
        "user": [
            "Tried making bread from scratch, it came out like a brick.",
            "I've eaten pasta four nights running, send vegetables.",
            "Found a new taco truck near work, dangerously close.",
            "Made soup with everything left in the fridge, surprisingly decent.",
            "I've been craving dumplings all week.",
        ],
        "assistant": [
            "Bricks are a rite of passage, keep going.",
            "Pasta is a vegetable if you add enough tomato.",
            "Dangerously close is the best kind of close.",
            "Fridge soup is an art form.",
            "Let's get dumplings soon, I know a place.",
        ],
    },
    "work": {
        "user": [
            "Three meetings today that could have been emails.",
            "My manager is on holiday so it's been blissfully quiet.",
            "The printer jammed and somehow it became my job to fix it.",
            "We had a fire drill in the rain, morale is low.",
            "I spent the afternoon untangling a spreadsheet someone built in 2011.",
        ],
        "assistant": [
            "Classic. Did anyone say anything useful?",
            "Enjoy it while it lasts.",
            "You're the printer whisperer now, congratulations.",
            "Oof, a wet fire drill is the worst.",
            "2011 spreadsheets are archaeology.",
        ],
    },
    "weekend": {
        "user": [
            "I did absolutely nothing this weekend and it was perfect.",
            "Spent Saturday at the market, came home with too many plants.",
            "Cleaned the whole flat on Sunday, I feel like a new person.",
            "Went for a long walk by the canal, saw a heron.",
            "Had people over for games, stayed up far too late.",
        ],
        "assistant": [
            "Nothing weekends are underrated.",
            "You can never have too many plants, that's the rule.",
            "Come do mine next.",
            "Herons always look so grumpy, I love them.",
            "Who won?",
        ],
    },
    "health": {
        "user": [
            "I've got a cold coming on, my throat feels like sandpaper.",
            "Started going to bed before eleven, I feel like a different person.",
            "My back is killing me, I need a better chair.",
            "Drank nothing but water today, very proud of myself.",
            "Tried a yoga class, I could not touch my toes.",
        ],
        "assistant": [
            "Honey and lemon, and rest!",
            "Sleep really is magic.",
            "Get a proper chair, it's worth it.",
            "Look at you, hydrated.",
            "Nobody can at first, give it a month.",
        ],
    },
    "news": {
        "user": [
            "Did you see the bridge is closing for repairs again?",
            "The council wants to put a car park where the old cinema was.",
            "Apparently the trains are on strike next week, typical.",
            "There's a food festival in the square this month.",
            "They're finally fixing the potholes on the high street.",
        ],
        "assistant": [
            "Again? It was closed all last spring.",
            "Nooo, I loved that cinema.",
            "I'll be working from home then.",
            "We should go, I'm in.",
            "Only took them five years.",
        ],
    },
    "friends": {
        "user": [
            "Do you remember that awful karaoke night? Someone posted the video.",
            "Haven't heard from the uni group in ages.",
            "Had coffee with an old colleague, she's moving abroad.",
            "Everyone I know is getting married this year.",
            "Got invited to a fancy dress party, theme is 'the future'.",
        ],
        "assistant": [
            "Delete it, delete it now.",
            "We should organise something, it's been too long.",
            "Good for her! Where to?",
            "Same, my calendar is all weddings.",
            "Go as a robot, obviously.",
        ],
    },
    "home": {
        "user": [
            "The boiler is making a noise like a whale again.",
            "I rearranged the living room, it feels twice as big.",
            "My landlord says he'll fix the window 'soon'. It's been a month.",
            "Bought a new lamp and now the rest of the room looks tired.",
            "Found a spider the size of my hand in the bath.",
        ],
        "assistant": [
            "Whale noises are never a good sign.",
            "Rearranging is cheaper than moving!",
            "Soon in landlord time means never.",
            "That's how it starts, next you'll repaint.",
            "Nope. Move out. Burn it down.",
        ],
    },
    "travel": {
        "user": [
            "I keep looking at flights I can't afford.",
            "Thinking about a train trip somewhere next spring.",
            "Found my old passport, the photo is tragic.",
            "My suitcase wheel broke on the way back from the airport.",
            "I want a holiday where I do nothing but read by a lake.",
        ],
        "assistant": [
            "Window shopping for flights is a hobby.",
            "Trains are the best way to travel, you see everything.",
            "Everyone's passport photo is tragic.",
            "Always on the way back, never the way out.",
            "Lake plus book sounds perfect.",
        ],
    },
}
