"""What people ask an assistant about: topics across everyday life and knowledge, in five forms.

concept: a noun phrase to explain ("plate tectonics"); howto: a verb phrase for a task ("fix a
leaking tap"); pair: two things to compare; pick: things to recommend ("board games for two
players"); debate: a question with sides ("working from home").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from specviz.corpus.prompts.splits import split_of

CONCEPTS: dict[str, tuple[str, ...]] = {
    "physics": ("gravity", "quantum entanglement", "the theory of relativity", "friction", "electric current",
                "magnetism", "the Doppler effect", "entropy", "nuclear fusion", "buoyancy", "black holes",
                "the speed of light", "radioactive decay", "sound waves", "superconductivity"),
    "chemistry": ("chemical bonds", "pH and acidity", "catalysts", "oxidation", "the periodic table", "isotopes",
                  "polymers", "combustion", "solubility", "rust"),
    "biology": ("photosynthesis", "DNA replication", "natural selection", "the immune system", "cell division",
                "the nervous system", "symbiosis", "metabolism", "gut bacteria", "hormones", "genetic mutations",
                "circadian rhythms", "protein folding", "antibiotic resistance"),
    "earth": ("plate tectonics", "volcanoes", "the water cycle", "ocean currents", "earthquakes", "erosion",
              "the greenhouse effect", "monsoons", "glaciers", "the ozone layer", "hurricanes", "tides"),
    "space": ("the phases of the Moon", "exoplanets", "the Big Bang", "neutron stars", "solar eclipses",
              "the life cycle of a star", "the International Space Station", "Mars rovers", "dark matter",
              "the asteroid belt", "comets"),
    "history": ("the fall of the Roman Empire", "the Industrial Revolution", "the Renaissance", "the Cold War",
                "the Silk Road", "the French Revolution", "the printing press", "ancient Egyptian pyramids",
                "the Ottoman Empire", "the Meiji Restoration", "the civil rights movement", "the Bronze Age collapse",
                "the Hanseatic League", "the Inca road system", "the Marshall Plan", "the Viking Age"),
    "geography": ("the Sahara Desert", "the Amazon rainforest", "the Himalayas", "fjords", "the Great Barrier Reef",
                  "time zones", "river deltas", "the Mediterranean climate", "island nations", "the Ring of Fire",
                  "the Danube", "Patagonia"),
    "health": ("blood pressure", "sleep cycles", "vitamin D", "dehydration", "cholesterol", "inflammation",
               "allergies", "the placebo effect", "posture", "stress hormones", "dietary fiber",
               "vaccination", "muscle recovery"),
    "money": ("compound interest", "inflation", "index funds", "credit scores", "budgeting", "mortgages",
              "diversification", "emergency funds", "taxes on savings", "exchange rates", "bonds",
              "the stock market", "insurance deductibles", "pension plans"),
    "economics": ("supply and demand", "opportunity cost", "central banks", "recessions", "tariffs",
                  "the gig economy", "minimum wage", "comparative advantage", "market bubbles"),
    "technology": ("machine learning", "encryption", "cloud computing", "the internet", "Wi-Fi", "GPS",
                   "blockchain", "search engines", "solid-state drives", "operating systems", "5G networks",
                   "two-factor authentication", "open-source software", "computer viruses", "large language models",
                   "databases", "APIs", "version control", "compilers", "recursion"),
    "arts": ("impressionism", "perspective in drawing", "color theory", "the sonnet", "jazz improvisation",
             "the hero's journey", "baroque music", "film noir", "abstract expressionism", "haiku",
             "stage lighting", "typography", "minimalism in design"),
    "music": ("music theory", "the circle of fifths", "syncopation", "the mechanics of a piano", "the blues",
              "orchestras", "electronic music production", "harmony"),
    "sport": ("the offside rule", "marathon training", "the Olympic Games", "interval training", "chess openings",
              "the rules of cricket", "the Tour de France", "rock climbing grades", "tennis scoring"),
    "psychology": ("cognitive biases", "procrastination", "motivation", "habit formation", "memory",
                   "emotional intelligence", "impostor syndrome", "burnout", "the growth mindset",
                   "confirmation bias", "flow state"),
    "philosophy": ("stoicism", "utilitarianism", "free will", "the trolley problem", "existentialism",
                   "Plato's cave", "ethics of artificial intelligence", "the scientific method", "logical fallacies"),
    "civics": ("democracy", "the separation of powers", "human rights", "the United Nations", "copyright",
               "freedom of speech", "jury trials", "local government", "referendums"),
    "nature": ("bird migration", "bee colonies", "coral reefs", "rainforest ecosystems", "food chains",
               "hibernation", "mushrooms", "wolves in the wild", "octopus intelligence", "pollination",
               "invasive species", "wetlands"),
    "cooking": ("fermentation", "the Maillard reaction", "umami", "gluten", "emulsions", "sourdough starters",
                "knife skills", "spices in Indian cooking", "food safety temperatures", "sous vide"),
    "language": ("idioms", "etymology", "sign languages", "language acquisition in children", "dialects",
                 "the Latin alphabet", "tonal languages", "loanwords", "punctuation"),
    "work": ("agile project management", "performance reviews", "networking", "remote teams", "time blocking",
             "the Pomodoro technique", "stakeholder management", "OKRs", "delegation"),
    "education": ("spaced repetition", "the Montessori method", "critical thinking", "active recall",
                  "learning styles", "standardized tests", "homeschooling"),
    "everyday": ("recycling", "daylight saving time", "tipping customs", "household budgeting", "composting",
                 "energy labels on appliances", "public transport", "minimalism", "first aid kits"),
}

HOWTOS: dict[str, tuple[str, ...]] = {
    "cooking": ("bake sourdough "
                "bread", "cook rice without a rice cooker", "make a simple curry", "sharpen a kitchen knife",
                "meal prep for a week", "make fresh pasta", "season a cast iron pan", "make a vegetable stock",
                "cook a steak medium rare", "make pancakes without eggs", "plan a dinner party for eight people"),
    "money": ("start investing with little money", "pay off credit card debt", "build an emergency fund",
              "negotiate a lower rent", "save for a house deposit", "track my monthly expenses",
              "split bills fairly with roommates", "prepare for retirement in my thirties"),
    "work": ("ask for a raise", "prepare for a job interview", "write a strong CV", "run an effective meeting",
             "give constructive feedback", "say no to extra work politely", "switch careers at forty",
             "onboard a new team member", "write a clear project proposal", "deal with a difficult coworker",
             "stay focused while working from home", "prepare a presentation in one day"),
    "tech": ("back up my photos", "speed up a slow laptop", "set up a home Wi-Fi network", "learn to code",
             "protect my accounts from hackers", "choose a strong password", "build a personal website",
             "learn Python in three months", "set up a Raspberry Pi", "clean up my email inbox",
             "recover a deleted file", "use spreadsheets to plan a budget"),
    "health": ("fall asleep faster", "start running as a beginner", "drink more water", "reduce screen time",
               "improve my posture at a desk", "build a home workout routine", "cut down on sugar",
               "recover after a long flight", "stretch after exercise", "cope with seasonal allergies"),
    "home": ("fix a leaking tap", "paint a room", "get rid of mould in a bathroom", "organize a small closet",
             "grow tomatoes on a balcony", "keep houseplants alive", "unclog a drain", "reduce my energy bill",
             "hang a heavy mirror", "start a compost bin", "soundproof a bedroom", "declutter a garage"),
    "travel": ("pack light for a two-week trip", "plan a road trip", "travel on a budget", "deal with jet lag",
               "find cheap flights", "travel with a toddler", "prepare for a hiking trip in the mountains",
               "learn basic phrases before a trip", "stay safe while travelling alone", "plan a weekend in a new city"),
    "learning": ("learn a new language as an adult", "memorize a speech", "take better notes", "read faster",
                 "study for an exam in two weeks", "learn to play the guitar", "improve my handwriting",
                 "get better at mental math", "learn to draw faces", "teach myself chess"),
    "relationships": ("make new friends in a new city", "apologize sincerely", "handle an argument with my partner",
                      "support a friend who is grieving", "set boundaries with family", "plan a surprise party",
                      "keep in touch with old friends", "talk to my teenager about phones",
                      "meet people as an introvert", "plan a long-distance relationship visit"),
    "pets": ("train a puppy to "
             "sit", "introduce a new cat to my home", "care for a goldfish", "keep my dog calm during fireworks",
             "choose the right food for an older dog", "teach a parrot to talk"),
    "life": ("wake up "
             "earlier", "be more productive in the morning", "stop procrastinating", "plan a wedding on a budget",
             "move house without stress", "prepare for a job abroad", "write a good thank-you note",
             "start journaling", "make a new habit stick", "organize my week", "reduce food waste at home",
             "choose a good used car", "fix a flat bicycle tyre", "get started with birdwatching",
             "start a small vegetable garden", "take better photos with my phone", "write a short story",
             "start a podcast", "volunteer in my community", "speak in public without getting nervous"),
    "outdoors": ("build a campfire "
                 "safely", "read a topographic map", "choose hiking boots", "identify edible mushrooms safely",
                 "set up a tent in the rain", "start kayaking"),
}

PAIRS: tuple[tuple[str, str], ...] = (
    ("a virus", "a bacterium"), ("weather", "climate"), ("baking soda", "baking powder"), ("stocks", "bonds"),
    ("a Roth IRA", "a traditional IRA"), ("RAM", "storage"), ("HTTP", "HTTPS"), ("Python", "JavaScript"),
    ("a list", "a tuple in Python"), ("TCP", "UDP"), ("SQL", "NoSQL databases"), ("AI", "machine learning"),
    ("a crocodile", "an alligator"), ("a comet", "an asteroid"), ("mitosis", "meiosis"), ("a hurricane", "a typhoon"),
    ("an "
     "emigrant", "an "
                 "immigrant"), ("affect", "effect"), ("a simile", "a metaphor"), ("a psychologist", "a psychiatrist"),
    ("empathy", "sympathy"), ("LED", "OLED screens"), ("an electric car", "a hybrid car"), ("renting", "buying a home"),
    ("a credit "
     "card", "a debit card"), ("a latte", "a cappuccino"), ("butter", "margarine"), ("espresso", "drip coffee"),
    ("yoga", "pilates"), ("running", "cycling for "
                                     "fitness"), ("aerobic", "anaerobic exercise"), ("a sprain", "a strain"),
    ("the flu", "a cold"), ("Type 1", "Type 2 diabetes"), ("socialism", "communism"), ("a republic", "a democracy"),
    ("weathering", "erosion"), ("a lake", "a pond"), ("a country", "a nation"), ("England", "Great Britain"),
    ("Baroque", "Classical music"), ("a novel", "a novella"), ("an opera", "a musical"), ("watercolor", "gouache"),
    ("a violin", "a viola"), ("rugby", "American football"), ("a sauna", "a steam room"), ("a frog", "a toad"),
    ("a rabbit", "a hare"), ("a moth", "a butterfly"), ("a heart attack", "cardiac arrest"), ("speed", "velocity"),
    ("mass", "weight"), ("a laptop", "a tablet for students"), ("Linux", "Windows"), ("Git", "GitHub"),
    ("a compiler", "an interpreter"), ("a process", "a thread"), ("UX", "UI design"), ("a CV", "a résumé"),
    ("a manager", "a leader"), ("a freelancer", "an employee"), ("a loan", "a line of credit"), ("saving", "investing"),
    ("a hostel", "a hotel"), ("train travel", "flying in Europe"), ("a visa", "a passport"), ("a will", "a trust"),
    ("a misdemeanor", "a felony"), ("a patent", "a trademark"), ("introversion", "shyness"), ("guilt", "shame"),
    ("a fruit", "a vegetable"), ("brown rice", "white rice"), ("stock", "broth"), ("a bakery", "a patisserie"),
    ("bouldering", "sport climbing"), ("a kayak", "a canoe"), ("a telescope", "binoculars for stargazing"),
    ("fission", "fusion"), ("an ebook", "a paper book"), ("podcasts", "audiobooks"), ("a tortoise", "a turtle"),
)

PICKS: dict[str, tuple[str, ...]] = {
    "books": ("books about ancient Rome", "novels for someone who loved science fiction as a kid",
              "books that explain economics simply", "short books to read on a train journey",
              "classic novels that are still easy to read", "books to learn about the ocean",
              "graphic novels for adults", "books about the history of mathematics"),
    "media": ("documentaries about nature", "podcasts for learning history", "films for a rainy Sunday",
              "TV series for learning Spanish", "YouTube channels for learning to cook",
              "animated films for the whole family"),
    "hobbies": ("hobbies I can do at home in the evening", "board games for two players", "card games for a big group",
                "creative hobbies that don't cost much", "outdoor activities for a family with young kids",
                "puzzles that keep the brain sharp", "instruments that are easy to learn as an adult"),
    "food": ("easy vegetarian dinners", "healthy snacks for work", "desserts without an oven",
             "breakfasts that keep me full until lunch", "spices every kitchen should have",
             "meals to cook for a crowd",
             "lunchbox ideas for kids", "recipes that use leftover bread"),
    "travel": ("places to visit in Portugal", "weekend trips from Berlin", "quiet beaches in Greece",
               "things to do in Tokyo on a rainy day", "national parks for a first camping trip",
               "day trips from Mexico City", "winter destinations without skiing",
               "cities that are great to explore on foot"),
    "tech": ("tools for taking notes", "apps for learning languages", "ways to learn programming for free",
             "free photo editing programs", "productivity apps for students",
             "keyboard shortcuts everyone should know"),
    "gifts": ("gifts for a friend who loves gardening", "birthday gifts for a ten-year-old", "gifts for a new parent",
              "gifts under twenty dollars for coworkers", "thoughtful gifts for grandparents"),
    "home": ("houseplants for a dark apartment", "ways to make a small flat feel bigger", "plants that attract bees",
             "low-maintenance pets for a busy person", "dog breeds for first-time owners",
             "ways to keep a home cool without air conditioning"),
    "fitness": ("exercises for lower back "
                "strength", "stretches for people who sit all day", "sports for adults who never played sports",
                "warm-up routines before running"),
    "learning": ("online courses for learning statistics", "ways to practice a language without a partner",
                 "study techniques for visual learners", "science experiments to do with kids at home",
                 "topics for a school science fair"),
}

DEBATES: dict[str, tuple[str, ...]] = {
    "work": ("working from home", "a four-day work week", "unlimited vacation policies", "open-plan offices",
             "job hopping early in a career", "side hustles", "unpaid internships"),
    "tech": ("self-driving "
             "cars", "social media for teenagers", "smartphones in schools", "facial recognition in public places",
             "AI-generated art", "cryptocurrency as an investment", "smart home devices", "online privacy laws"),
    "society": ("universal basic income", "voting at sixteen", "nuclear power", "space exploration budgets",
                "city car bans", "tourism taxes", "plastic bag bans", "abolishing the clock change", "zoos"),
    "education": ("homework for young children", "school uniforms", "learning Latin in school", "gap years",
                  "online degrees", "grading on a curve", "coding as a required school subject"),
    "lifestyle": ("intermittent fasting", "veganism", "minimalist living", "having a pet in a small apartment",
                  "buying an electric car today", "living in the countryside", "tiny houses", "renting for life",
                  "giving children smartphones before age twelve", "fast fashion"),
    "culture": ("remakes of classic "
                "films", "replacing paper books with e-readers", "watching new films at home instead of in cinemas",
                "treating video games as art", "tipping culture", "reality TV"),
}


IRREGULAR_PLURALS = {"bacteria", "species", "media", "people", "children", "data"}
SINGULAR = {"GPS", "the United Nations", "the blues", "confirmation bias", "replacing paper books with e-readers",
            "giving children smartphones before age twelve"}


@dataclass(frozen=True)
class Topic:
    """A subject in one form; `other` is a pair's second thing."""

    area: str
    form: str
    text: str
    other: str = ""

    @property
    def source(self) -> str:
        return "topic:" + slug(f"{self.text} {self.other}")

    @property
    def plural(self) -> bool:
        """Whether the topic takes a plural verb ("volcanoes are", "gravity is"): its head noun,
        before any "of", "in", "on"..., ends like an English plural, or it joins two things."""
        head = re.split(r" (?:of|in|on|for|to|from|between|with) ", self.text)[0]
        words = head.split()
        last = words[-1]
        if self.text in SINGULAR:
            return False
        if last[:-1].isupper() and last.endswith("s"):      # APIs, OKRs
            return True
        return (" and " in head or last.lower() in IRREGULAR_PLURALS
                or (last.endswith("s") and not last.endswith(("ss", "us", "is", "ics", "ness"))))


def addressed(text: str, person: str) -> str:
    """A first-person phrase ("back up my photos") addressed to "you" or about "them"."""
    own = {"you": "your", "them": "their"}[person]
    return re.sub(r"\bmy\b", own, text)


def slug(text: str) -> str:
    """Lower-case words joined by hyphens."""
    return "-".join(re.findall(r"[a-z0-9]+", text.lower()))


@cache
def all_topics() -> tuple[Topic, ...]:
    """Every topic, in a fixed order."""
    return (*(Topic(a, "concept", t) for a, ts in CONCEPTS.items() for t in ts),
            *(Topic(a, "howto", t) for a, ts in HOWTOS.items() for t in ts),
            *(Topic("comparison", "pair", a, b) for a, b in PAIRS),
            *(Topic(a, "pick", t) for a, ts in PICKS.items() for t in ts),
            *(Topic(a, "debate", t) for a, ts in DEBATES.items() for t in ts))


@cache
def topics(split: str, form: str) -> tuple[Topic, ...]:
    """The topics of one form in `split`."""
    return tuple(t for t in all_topics() if t.form == form and split_of(t.source) == split)
