"""Plumbing: hand-written phrasing pools for the long-conversation benchmark corpus.

Everything here is data: values people have (pets, towns, jobs, ...), several ways each fact gets said in
passing, several ways a question about it gets asked (chit-chat by topic is in `topics.py`).
`helpers.bench.longmem.data` draws from these with a seeded RNG. Facts are said the way friends say them — mid-sentence, with a reason or a
complaint attached — never as "my X is Y".
"""

from __future__ import annotations

__all__ = ["PEOPLE", "VALUES", "SAY", "LEAD_IN", "ASK"]

# (user name, friend name) per conversation; the user id is the lower-cased user name
PEOPLE = [("Ines", "Sam"), ("Tomasz", "Jo"), ("Rhea", "Kit"), ("Callum", "Robin"), ("Yuki", "Ari"), ("Dario", "Nell")]

# one value per person, drawn without replacement so no two people share one
VALUES: dict[str, list] = {
    "pet": [
        ("cat", "Mochi"),
        ("dog", "Biscuit"),
        ("rabbit", "Juniper"),
        ("cat", "Pickle"),
        ("dog", "Otis"),
        ("parrot", "Clementine"),
        ("dog", "Waffles"),
        ("cat", "Nori"),
    ],
    "clinic": [
        "Harbourside Vets",
        "Elm Street Animal Clinic",
        "Greenway Veterinary",
        "Northgate Pet Hospital",
        "Willow Lane Vets",
        "Riverside Animal Care",
    ],
    "hometown": ["Aberdeen", "Porto", "Gdansk", "Ljubljana", "Galway", "Tampere", "Valparaiso", "Krakow"],
    "job": [
        ("accountant", "data analyst"),
        ("primary school teacher", "education consultant"),
        ("line cook", "sous chef"),
        ("paralegal", "junior solicitor"),
        ("bike mechanic", "workshop manager"),
        ("pharmacist", "clinical trials coordinator"),
        ("graphic designer", "art director"),
    ],
    "instrument": ["cello", "ukulele", "trumpet", "banjo", "clarinet", "harp", "accordion"],
    "allergy": ["shellfish", "peanuts", "sesame", "kiwi", "walnuts", "mustard"],
    "fear": ["heights", "deep water", "spiders", "enclosed spaces", "thunderstorms", "wasps"],
    "language": ["Portuguese", "Japanese", "Welsh", "Greek", "Turkish", "Dutch", "Korean"],
    "car": ["Honda Jazz", "Skoda Octavia", "Volvo V70", "Mazda MX-5", "Fiat Panda", "Toyota Prius", "Subaru Forester"],
    "partner": [
        ("Lena", "firefighter"),
        ("Marcus", "architect"),
        ("Priyanka", "dentist"),
        ("Jonah", "air traffic controller"),
        ("Sofia", "marine biologist"),
        ("Declan", "tattoo artist"),
        ("Hana", "sound engineer"),
    ],
    "sibling": [
        ("sister", "Aoife"),
        ("brother", "Bruno"),
        ("sister", "Keira"),
        ("brother", "Felix"),
        ("sister", "Noor"),
        ("brother", "Ollie"),
        ("sister", "Greta"),
    ],
    "sibling_city": ["Leeds", "Montreal", "Lisbon", "Wellington", "Rotterdam", "Brisbane", "Vancouver"],
    "home": [
        ("Hillcrest", "Canal Quarter"),
        ("Old Town", "Meadowbank"),
        ("Southfield", "Larkhill"),
        ("Eastgate", "Riverside"),
        ("Westfield", "Harbour End"),
        ("Kingsmead", "Fernhill"),
    ],
    "race": [
        ("Lakeshore Half Marathon", "Keswick"),
        ("Three Bridges 10K", "Bristol"),
        ("Harvest Moon Trail Run", "Hobart"),
        ("Coastal Relay", "Bergen"),
        ("Gorge Ultra 50K", "Asheville"),
        ("Autumn Leaves Half", "Cork"),
    ],
    "band": ["The Paper Kites", "Khruangbin", "Alvvays", "Fontaines D.C.", "Big Thief", "Snarky Puppy"],
    "book": [
        ("The Left Hand of Darkness", "Ursula K. Le Guin"),
        ("Piranesi", "Susanna Clarke"),
        ("The Remains of the Day", "Kazuo Ishiguro"),
        ("Station Eleven", "Emily St. John Mandel"),
        ("A Gentleman in Moscow", "Amor Towles"),
        ("The Overstory", "Richard Powers"),
        ("Circe", "Madeline Miller"),
    ],
    "restaurant": ["Casa Lupita", "The Brass Fig", "Noodle Yard", "Little Anchor", "Saffron Lane", "Marrow and Vine"],
    "plan": [
        ("kayaking", "Loch Ard"),
        ("pottery class", "Clay Corner studio"),
        ("pub quiz", "the Red Lion"),
        ("escape room", "Lockbox Games"),
        ("board game night", "Dice and Slice"),
        ("sunrise hike", "Beacon Hill"),
        ("climbing session", "The Boulder Shed"),
    ],
    "friend_dog": ["Bramble", "Ziggy", "Pumpkin", "Rolo", "Hazel", "Fudge", "Marmite"],
    # distractors: other people's places and pets, said in passing by either side
    "other_city": ["Glasgow", "Seville", "Oslo", "Perth", "Toulouse", "Halifax", "Dundee", "Bruges", "Quito"],
    "other_pet": ["Pepper", "Tofu", "Ginger", "Luna", "Basil", "Comet", "Sprout", "Mittens"],
}

# Ways a fact is said. Keys are fact ids (see longmem_data.FACTS); placeholders are filled from the person.
SAY: dict[str, list[str]] = {
    "pet_adopt": [
        "Big news, we brought home a {species} today! Her name's {pet} and she's already claimed the sofa.",
        "So I caved and adopted a {species} from the shelter this morning. {pet}. I think I'm in love.",
        "Meet {pet}, the newest resident of my flat. A rescue {species}, about two years old, very suspicious of me.",
        "Okay don't laugh but I came home from the shelter today with a {species} called {pet}.",
    ],
    "pet_clinic": [
        "Spent the whole morning at {clinic} because {pet} ate something questionable. She's fine, my wallet isn't.",
        "{pet} had her jabs at {clinic} today, the nurse there is a saint honestly.",
        "Had to drag {pet} to {clinic} for a check-up, she sulked in the carrier the whole way home.",
    ],
    "hometown": [
        "It's funny, back in {hometown} nobody would even blink at this weather. I grew up with worse.",
        "My mum just sent me photos from {hometown}, makes me homesick for the place I grew up.",
        "I was born and raised in {hometown}, so a bit of drizzle doesn't scare me.",
        "Whenever I smell the sea I'm eight years old again in {hometown}.",
    ],
    "job_old": [
        "Work was brutal today, everyone needed something from me at once. Such is the life of a {job_old}.",
        "Honestly, being a {job_old} is fine most days, it's the people who make it exhausting.",
        "Another long shift. People think a {job_old} has an easy life, they have no idea.",
    ],
    "job_new": [
        "Okay, update: I handed in my notice and I start as a {job_new} on Monday! Terrified and thrilled.",
        "So that interview went well. Like, really well. I'm officially a {job_new} now, starting today.",
        "Guess who's not a {job_old} any more? Signed the contract this morning, I'm going to be a {job_new}.",
    ],
    "instrument": [
        "My neighbours must hate me, I've been practising the {instrument} every evening this month.",
        "Had my third {instrument} lesson today. My fingers hurt but I can nearly play a whole tune.",
        "I finally bought a second-hand {instrument}. Learning it properly this year, no excuses.",
    ],
    "allergy": [
        "Ugh, the office lunch had {allergy} in it again, so I just ate crackers. Being allergic is so boring.",
        "Had to send a dish back tonight, they forgot about my {allergy} allergy. Third time at that place.",
        "I always have to ask waiters about {allergy}, one bite and I'm at the hospital.",
    ],
    "fear": [
        "My cousin wants to do one of those adventure weekends and I'm dreading it, I'm properly scared of {fear}.",
        "I know it's irrational but {fear} terrify me. Always have, since I was small.",
        "Don't even joke about {fear}, you know I get panicky.",
    ],
    "language": [
        "Day forty of my {language} app streak. I can order a coffee and apologise, which covers most of life.",
        "I've started evening classes in {language}, the teacher is strict but really good.",
        "Trying to learn {language} before the summer, my grammar is a disaster so far.",
    ],
    "car": [
        "The {car} wouldn't start again this morning. She's old but I'm not ready to give her up.",
        "Took the {car} through the car wash for the first time in a year, it's actually a different colour.",
        "My poor {car} needs new tyres, the garage quoted me a fortune.",
    ],
    "partner_name": [
        "{partner} and I are celebrating three years together this weekend, any ideas for something low-key?",
        "My other half {partner} made dinner tonight and it was genuinely excellent.",
        "{partner} says hi, by the way. We were talking about you at dinner, all good things.",
    ],
    "partner_job": [
        "{partner} got called in again at two in the morning. The life of a {partner_job}, I suppose.",
        "{partner} had an awful day, the kind only a {partner_job} can have, so I'm on comfort duty tonight.",
        "Being with a {partner_job} means weird hours. {partner} is asleep at 7pm half the week.",
    ],
    "sibling_name": [
        "My {relation} {sibling} rang for an hour today, we haven't talked like that in ages.",
        "It's my {relation} {sibling}'s birthday next week and I have no idea what to get.",
        "{sibling}, my little {relation}, just got engaged! I'm going to cry at this wedding.",
    ],
    "sibling_city": [
        "{sibling} finally made the move to {sibling_city}, apparently the coffee alone is worth it.",
        "Just got off a video call with {sibling}, it's already midnight over in {sibling_city}.",
        "{sibling} sent me a postcard from {sibling_city}, that's home for them since the spring.",
    ],
    "home_old": [
        "Walked round {home_old} after work, I do love how quiet my street is.",
        "The bins in {home_old} haven't been collected in two weeks, the whole street smells.",
        "There's a new bakery opening on the corner in {home_old}, right by my place.",
    ],
    "home_new": [
        "Got the keys today! We've left {home_old} behind, the new flat is in {home_new}. Boxes everywhere.",
        "Moving day was chaos but it's done, I live in {home_new} now. Goodbye {home_old}.",
        "First night in the new place in {home_new}. Weird not hearing the {home_old} trains.",
    ],
    "race_signup": [
        "I did something silly: I signed up for the {race}. Now I actually have to train.",
        "Training plan for the {race} starts tomorrow. Four runs a week, send help.",
        "My knees are already complaining about this {race} thing and it's months away.",
    ],
    "race_city": [
        "Looked at the route for the {race}, it loops right along the river in {race_city}. Gorgeous.",
        "Booked a hostel in {race_city} for the {race} weekend, cheapest room I could find.",
    ],
    "race_done": [
        "I DID IT. Finished the {race} this morning, legs like jelly but I didn't walk once.",
        "Crossed the line at the {race} today! Slow, but finished. Medal's on the fridge.",
    ],
    "band": [
        "Went to see {band} last night, still buzzing, the encore was unreal.",
        "Just got home from the {band} gig, my ears are ringing and I regret nothing.",
    ],
    "book": [
        "If you want something for the train, read {book} by {author}. I finished it in two days.",
        "Have you read {book}? {author} at their best, honestly. You'd love it.",
        "You should pick up {book}, the {author} one. It's exactly your kind of weird.",
    ],
    "restaurant": [
        "For your anniversary, try {restaurant}. Small place, book ahead, get whatever the special is.",
        "If you want a good dinner, {restaurant} never lets me down. Ask for the window table.",
        "Honestly go to {restaurant}. I went last month and I still think about the dessert.",
    ],
    "plan": [
        "Yes! Let's do the {activity} at {place}, Saturday morning. I'll book it now before we chicken out.",
        "Deal. {place} for the {activity}, this weekend. I'll bring snacks, you bring the enthusiasm.",
        "Okay it's settled then, {activity} at {place} on Sunday. No cancelling this time.",
    ],
    "friend_dog": [
        "{friend_dog} has been digging in the garden again, I've given up on my tulips.",
        "Sorry, slow reply, I was out walking {friend_dog} and she found a puddle to lie in.",
        "{friend_dog} stole a whole baguette off the counter today. I'm almost impressed.",
    ],
    "other_city": [
        "My cousin just moved to {other_city} for work, she keeps sending me photos of the harbour.",
        "A guy at work is flying out to {other_city} next week, he won't stop talking about it.",
        "I saw a documentary about {other_city} last night, looks like a lovely place.",
    ],
    "other_pet": [
        "My neighbour's cat {other_pet} has started visiting me for breakfast. Don't tell her owner.",
        "My aunt's new puppy is called {other_pet}. Absolute chaos on four legs.",
    ],
}

# User lines that invite the friend's fact (recommendation, plan) before it is said
LEAD_IN: dict[str, list[str]] = {
    "book": [
        "I need something to read on the train, I've run out of podcasts.",
        "Any book tips? I've been doom-scrolling every night and I hate it.",
        "What should I read next? I want something that isn't about work.",
    ],
    "restaurant": [
        "It's our anniversary soon and I've got no idea where to book dinner.",
        "Where should I eat this Friday? Somewhere nice but not fancy-fancy.",
        "Need a dinner recommendation, my parents are visiting and they're picky.",
    ],
    "plan": [
        "We keep saying we'll do the {activity} thing and never do. This weekend?",
        "Okay, are we actually doing the {activity} or not? I'm free this weekend.",
        "Let's stop talking about the {activity} and book it. Where?",
    ],
}
__all__.append("LEAD_IN")

# Questions, asked after the whole conversation. Keys are question ids (see longmem_data.QUESTIONS).
ASK: dict[str, list[str]] = {
    "pet_name": [
        "What did I call the {species} I adopted?",
        "Remind me, what's my {species}'s name?",
        "Do you remember the name of my {species}?",
    ],
    "hometown": ["Which town did I grow up in?", "Where am I originally from?", "Where was I born and raised?"],
    "job_now": ["What do I do for a living these days?", "What's my job at the moment?", "What work am I doing now?"],
    "car": ["What car do I drive?", "Which car keeps breaking down on me?", "What's the make of my car?"],
    "partner_name": ["What's my partner called?", "Who's my other half again?", "What's the name of my partner?"],
    "sibling_name": ["What's my {relation}'s name?", "Remind me what my {relation} is called?"],
    "home_now": [
        "Which neighbourhood do I live in now?",
        "Where's my current flat?",
        "What part of town did I move to?",
    ],
    "race_name": ["Which race did I train for?", "What was the race I signed up for?"],
    "band": ["Which band did I see live?", "What gig did I go to?"],
    "book": ["What was the book you told me to read?", "Which novel did you recommend to me?"],
    "book_author": ["Who wrote the book you suggested for my train rides?", "Which author did you recommend?"],
    "restaurant": ["Where did you say I should go for dinner?", "What restaurant did you recommend?"],
    "plan_place": ["Where did we agree to go for the {activity}?", "Where's the {activity} we planned?"],
    "friend_dog": ["What's your dog called again?", "What's the name of your dog?"],
    "instrument_name": ["Which instrument have I been learning?"],
    # multi-hop: the question names one side of a link, the answer needs both turns
    "sibling_city": ["Which city does my {relation} live in?", "Where has my {relation} moved to?"],
    "partner_job": ["What does my partner do for work?", "What's my other half's job?"],
    "pet_clinic": ["Which vet do I take my {species} to?", "Where does my {species} get her check-ups?"],
    "race_city": ["In which town is the race I trained for held?", "Where did I have to travel for my race?"],
    # temporal: the answer is the date of the session
    "when_pet": ["When did I adopt my {species}?", "On what date did my {species} come home with me?"],
    "when_job": ["When did I start my new job?", "What day did I change jobs?"],
    "when_move": ["When did I move house?", "On which date did I get the keys to the new flat?"],
    "when_race": ["When did I run my race?", "What date did I finish the race?"],
    "when_band": ["When did I go to the gig?", "On which date did I see that band live?"],
    "when_plan": ["When did we make the {activity} plan?", "On what date did we agree on the {activity}?"],
    # open-domain: the question does not name the fact; the answer needs it
    "open_allergy": [
        "If you cooked dinner for me, which ingredient would you have to leave out?",
        "Is there anything I can't eat that a chef should know about?",
    ],
    "open_instrument": [
        "What would be a thoughtful birthday present for me, given what I practise every evening?",
        "If you bought me sheet music, which instrument should it be for?",
    ],
    "open_fear": [
        "Is there anything that would make me panic on an adventure holiday?",
        "What should an activity weekend for me avoid?",
    ],
    "open_language": [
        "If you got me a phrasebook, which language should it be?",
        "Which language could I practise on a holiday?",
    ],
}
