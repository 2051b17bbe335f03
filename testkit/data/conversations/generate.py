#!/usr/bin/env python3
"""Generate the multi-speaker conversation retrieval set (turns, facts, questions).

The set imitates long multi-session chat between three or four friends (LoCoMo-style, but
with more speakers): every conversation group is one account, its raw chat turns are one
corpus (`turns.jsonl`), the observations an LLM extractor would store about them are the
other (`facts.jsonl`), and `questions.jsonl` holds labelled retrieval questions whose
evidence lists name the rows that answer them.

Python 3 standard library only. Deterministic: fixed seeds, no set iteration, no clock.
Run:  python3 testkit/data/conversations/generate.py
"""

import datetime as dt
import json
import os
import random
import re

SEED = 20261206
OUT_DIR = os.path.dirname(os.path.abspath(__file__))
GROUPS = 10
DEV_GROUPS = (2, 5, 9)
EPOCH = dt.datetime(1970, 1, 1)
TURN_STEP_MS = 40_000
CATEGORIES = ("single_hop", "multi_hop", "temporal", "open_domain", "adversarial")
# Two wordings of questions. "paraphrase" templates avoid the chat's vocabulary ("get a dog" for
# "adopted a puppy") and may share at most 2 content words with the evidence; "echo" templates
# reuse the chat's own key words ("adopt a puppy"), as real users' questions often do, and must
# share at least 1. Sampling keeps this share of echo questions in every category.
ECHO_TARGET = 0.5
PARA_MAX = 2          # a paraphrase question shares at most this many content words with its evidence
ECHO_MAX = 3          # an echo question shares 1 to this many
MIX = {"single_hop": 0.35, "multi_hop": 0.20, "temporal": 0.20, "open_domain": 0.10}
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

# ---------------------------------------------------------------------------------------
# People
# ---------------------------------------------------------------------------------------

SPEAKERS_F = ("Maya", "Priya", "Sofia", "Hannah", "Chloe", "Amara", "Ines", "Yuki", "Zoe",
              "Nadia", "Grace", "Elena", "Leah", "Mei", "Rosa", "Tara", "Isla", "Freya",
              "Naomi", "Kira", "Lucia", "Alina")
SPEAKERS_M = ("Leo", "Omar", "Daniel", "Marcus", "Theo", "Ravi", "Jonas", "Felix", "Mateo",
              "Ethan", "Samir", "Hugo", "Kenji", "Noah", "Diego", "Arjun", "Caleb", "Tobias",
              "Rafael", "Malik", "Oscar", "Ben")
FAMILY_F = ("Ana", "Clara", "Julia", "Beth", "Nora", "Ruth", "Lily", "Vera", "Irene",
            "Carmen", "Helen", "Joy")
FAMILY_M = ("Tom", "Paul", "Sam", "Nick", "Alex", "Carl", "Pete", "Luis", "Victor", "Mark",
            "Raj", "Ivan")
STAFF = ("Greta", "Bianca", "Wendy", "Olga", "Denise", "Martin", "Gary", "Frank", "Stefan",
         "Howard", "Colin", "Diane")
BABIES_F = ("Ava", "Mila", "Ruby", "Ella", "Iris")
BABIES_M = ("Finn", "Milo", "Jude", "Arlo", "Ezra")
PERSON_NAMES = tuple(n.lower() for n in SPEAKERS_F + SPEAKERS_M + FAMILY_F + FAMILY_M
                     + STAFF + BABIES_F + BABIES_M)
REL_GENDER = {"sister": "f", "brother": "m", "mom": "f", "dad": "m", "grandmother": "f",
              "aunt": "f", "uncle": "m", "cousin": None, "best friend": None,
              "college roommate": None}

# ---------------------------------------------------------------------------------------
# Text helpers
# ---------------------------------------------------------------------------------------

PLACEHOLDER = re.compile(r"\{(\w+)\}")
AN_EXCEPT = ("uni", "use", "usu", "one", "eu", "ux", "uk", "ute")


def placeholders(template):
    """Placeholder names in a template, in order of appearance, without repeats."""
    out = []
    for name in PLACEHOLDER.findall(template):
        if name not in out:
            out.append(name)
    return out


def fix_articles(text):
    """Turn 'a' into 'an' before a vowel sound (crude, with a few exceptions)."""
    def repl(m):
        word = m.group(2)
        if word[0].lower() in "aeiou" and not word.lower().startswith(AN_EXCEPT):
            return m.group(1) + "n " + word
        return m.group(0)
    return re.sub(r"\b([Aa]) ([A-Za-z]+)", repl, text)


def sentence_case(text):
    """Capitalise the first letter and the first letter after a sentence end."""
    text = text[:1].upper() + text[1:]
    return re.sub(r"([.!?] )([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)


def fill(template, mapping):
    """Fill {key} placeholders (values may hold placeholders too); {Key} capitalises."""
    def repl(m):
        key = m.group(1)
        if key in mapping:
            return mapping[key]
        for low in (key[:1].lower() + key[1:], key.lower()):
            if low in mapping:
                value = mapping[low]
                return value[:1].upper() + value[1:]
        raise KeyError("no value for {%s} in %r" % (key, template))
    text = template
    for _ in range(4):
        if "{" not in text:
            break
        text = PLACEHOLDER.sub(repl, text)
    text = re.sub(r" +", " ", fix_articles(text)).strip()
    return sentence_case(text)


def day_text(d):
    """'14 March 2023'."""
    return "%d %s %d" % (d.day, MONTHS[d.month - 1], d.year)


def month_text(d):
    """'March 2023'."""
    return "%s %d" % (MONTHS[d.month - 1], d.year)


def to_ms(moment):
    """Milliseconds since the epoch of a naive UTC datetime."""
    return int((moment - EPOCH).total_seconds()) * 1000


# ---------------------------------------------------------------------------------------
# Relative dates: phrase said in the chat, absolute phrase for the fact, the date itself
# ---------------------------------------------------------------------------------------

PAST = ("yesterday", "two_days", "three_days", "last_wd", "last_weekend", "two_weekends",
        "last_week", "couple_weeks")
RECENT = ("yesterday", "two_days", "last_wd", "last_weekend", "this_morning")
FUTURE = ("tomorrow", "this_wd", "next_wd", "next_weekend", "in_two_weeks")


def relative_date(rng, moment, kinds):
    """Pick one relative expression of `kinds` for a session at `moment`.

    Returns (phrase, fact_phrase, date): "last Tuesday", "on 14 March 2023", date(...).
    """
    d = moment.date()
    kind, wd = rng.choice(kinds), None
    if ":" in kind:                       # "last_wd:6" = last Sunday, "next_wd:5" = next Saturday
        kind, wd = kind.split(":")[0], int(kind.split(":")[1])
    if kind == "this_morning" and moment.hour < 13:
        kind = "yesterday"
    if kind == "this_wd" and (d.weekday() >= 4 or (wd is not None and wd < d.weekday() + 2)):
        kind = "next_wd"
    day = dt.timedelta(days=1)
    if kind == "this_morning":
        return "this morning", "on " + day_text(d), d
    if kind in ("yesterday", "two_days", "three_days", "tomorrow"):
        back = {"yesterday": 1, "two_days": 2, "three_days": 3, "tomorrow": -1}[kind]
        phrase = {"yesterday": "yesterday", "two_days": "two days ago",
                  "three_days": "three days ago", "tomorrow": "tomorrow"}[kind]
        target = d - back * day
        return phrase, "on " + day_text(target), target
    if kind == "last_wd":
        wd = rng.randrange(7) if wd is None else wd
        back = (d.weekday() - wd) % 7
        if back < 2:
            back += 7
        target = d - back * day
        return "last " + WEEKDAYS[wd], "on " + day_text(target), target
    if kind in ("last_weekend", "two_weekends"):
        back = (d.weekday() - 5) % 7
        if d.weekday() >= 5:
            back += 7
        if kind == "two_weekends":
            back += 7
        sat = d - back * day
        phrase = "last weekend" if kind == "last_weekend" else "two weekends ago"
        return phrase, "on the weekend of " + day_text(sat), sat
    if kind == "last_week":
        mon = d - (d.weekday() + 7) * day
        return "last week", "during the week of " + day_text(mon), mon
    if kind == "couple_weeks":
        target = d - 14 * day
        return "a couple of weeks ago", "around " + day_text(target), target
    if kind == "last_month":
        first = (d.replace(day=1) - day).replace(day=1)
        return "last month", "in " + month_text(first), first
    if kind == "this_wd":
        wd = rng.randrange(d.weekday() + 2, 7) if wd is None else wd
        target = d + (wd - d.weekday()) * day
        return "this " + WEEKDAYS[wd], "on " + day_text(target), target
    if kind == "next_wd":
        wd = rng.randrange(7) if wd is None else wd
        target = d + (7 - d.weekday() + wd) * day
        return "next " + WEEKDAYS[wd], "on " + day_text(target), target
    if kind == "next_weekend":
        target = d + (7 - d.weekday() + 5) * day
        return "next weekend", "on the weekend of " + day_text(target), target
    if kind == "in_two_weeks":
        target = d + 14 * day
        return "in two weeks", "around " + day_text(target), target
    raise ValueError(kind)


# ---------------------------------------------------------------------------------------
# Event catalog
# ---------------------------------------------------------------------------------------

class EType:
    """One kind of life event with its phrasings, facts and question templates.

    Slot values are either plain strings or (chat form, fact form) pairs. `say`/`plan`
    are the statements (must hold {when}); `ask` are (listener question, owner answer)
    pairs; `more` are owner follow-ups (often pronoun-only; a (line, fact) pair also yields a
    fact); `facts` maps "_" (the event
    itself) or a slot to a fact template; `q` maps a slot to single-hop questions; `gist`
    is (base verb phrase, gerund, past) in question vocabulary; `adv` maps a slot to a
    question asked about the wrong person {W}; `who` is a (descriptor, slot) pair naming
    the owner by this event; `upd`/`done` are later updates (turn, fact, question).

    The templates above are the paraphrase wording (vocabulary unlike the chat's). The echo
    wording reuses the chat's own words, as a person who remembers the chat would: `qe`
    mirrors `q`, `gist_e` mirrors `gist` (may hold slots, e.g. "see {band} live"), `adv_e`
    mirrors `adv` (value: template or tuple), `count_e` mirrors `count`, `od_e` mirrors `od`
    and `upd_e` holds one echo question per entry of `upd` + `done`, in order. `wq` questions
    name the event's own place or title, so they count as echo.
    """

    def __init__(self, key, *, say, facts, q, gist, tone="good", pro="none", kinds=PAST, pkinds=FUTURE,
                 slots=None, rows=None, family=None, plan=(), pf=None, ask=(), more=(),
                 adv=None, who=None, upd=(), done=(), ping=(), od=(), count=None, rep=1,
                 wq=(), qe=None, gist_e=None, adv_e=None, count_e=None, od_e=(), upd_e=()):
        self.key, self.say, self.facts, self.q, self.gist = key, say, facts, q, gist
        self.tone, self.pro, self.kinds, self.pkinds = tone, pro, kinds, pkinds
        self.slots, self.rows, self.family = slots or {}, rows or (), family
        self.plan, self.pf, self.ask = plan, pf, ask
        self.more = [m if isinstance(m, str) else m[0] for m in more]
        self.more_facts = {m[0]: m[1] for m in more if not isinstance(m, str)}   # follow-up -> fact
        self.adv, self.who, self.upd, self.done = adv or {}, who, upd, done
        self.ping, self.od, self.count, self.rep, self.wq = ping, od, count, rep, wq
        self.qe, self.gist_e, self.count_e, self.od_e = qe or {}, gist_e, count_e, od_e
        self.adv_e = {k: (v,) if isinstance(v, str) else v for k, v in (adv_e or {}).items()}
        if upd_e and len(upd_e) != len(upd) + len(done):
            raise ValueError("%s: upd_e needs one question per upd/done entry" % key)
        self.upd_e = {u[0]: e for u, e in zip(tuple(upd) + tuple(done), upd_e)}   # update turn -> echo question
        self.slot_names = list(self.slots) + (list(rows[0]) if rows else [])
        if family:
            self.slot_names += ["rel", "name"]
        if pro == "baby":
            self.slot_names.append("baby")
        statements = list(say) + list(plan)
        self.core = [s for s in self.slot_names
                     if all(s in [p[:1].lower() + p[1:] for p in placeholders(t)] for t in statements)]


DOG_NAMES = ("Pepper", "Biscuit", "Maple", "Juniper", "Olive", "Rocket", "Waffles", "Bruno",
             "Cooper", "Hazel", "Ziggy")
CAT_NAMES = ("Miso", "Tofu", "Clementine", "Pickle", "Nova", "Mochi", "Ginger", "Pumpkin",
             "Figaro", "Sushi")
ADOPT_SOURCES = (("a shelter across town", "a shelter across town"),
                 ("a rescue group in the next town", "a rescue group in a nearby town"),
                 ("a family whose pet had a litter", "a family whose pet had a litter"),
                 ("the county animal shelter", "the county animal shelter"))

ETYPES = [
    EType(
        "dog", tone="aww", pro="pet",
        slots={"name": DOG_NAMES,
               "breed": ("beagle", "border collie", "golden retriever", "corgi", "dachshund",
                         "Australian shepherd", "labrador mix", "whippet"),
               "age": ("eight weeks", "ten weeks", "three months", "five months", "one year"),
               "source": ADOPT_SOURCES},
        say=("I finally adopted a puppy {when}!",
             "Big news: {when} we brought home a little {breed} puppy!",
             "{When} I went to {source} just to look and came home with a puppy.",
             "Guess who has a puppy now? Me! I picked {po} up {when}."),
        ask=(("Aww! What's {pp} name?", "{Name}. {P} already answers to it, mostly."),
             ("What breed is {p}?", "{P}'s a {breed}, about {age} old."),
             ("Where did you find {po}?", "At {source}. {P} was the last one of the litter.")),
        more=("{PP} name is {name}, by the way.", ("{P} already learned to sit!", "{S}'s puppy has learned to sit."),
              "{P} is only {age} old and has so much energy.",
              ("{P} chewed through my phone charger on the first night, haha.", "{S}'s puppy chewed through {sp} phone charger.")),
        facts={"_": "{S} adopted a puppy {date}.", "name": "{S}'s puppy is named {name}.",
               "breed": "{S}'s puppy is a {breed}.",
               "age": "{S}'s puppy was {age} old at adoption.",
               "source": "{S} adopted the puppy from {source}."},
        q={"name": ("What did {S} call the new dog?", "How did {S} christen the new dog?"),
           "breed": ("What kind of dog did {S} get?", "Which dog type does {S} own?"),
           "age": ("How young was {S}'s dog when it joined the household?",),
           "source": ("Where did {S} find the dog?",)},
        qe={"name": ("What name does {S}'s puppy answer to?", "What is the name of the puppy {S} adopted?"),
            "breed": ("What breed is the puppy {S} brought home?", "What breed is {S}'s puppy?"),
            "age": ("How old is {S}'s {breed}?", "How old was the puppy {S} adopted?"),
            "source": ("Where did {S} adopt the puppy from?", "Where did {S}'s puppy, the last one of the litter, come from?")},
        gist_e=("adopt a puppy", "adopting a puppy", "adopted a puppy"),
        adv_e={"name": "What is the name of {W}'s puppy?", "breed": "What breed is {W}'s puppy?"},
        upd_e=("What class did {S}'s puppy graduate from?", "Does {S}'s puppy {name} sleep through the night now?"),
        od_e=("Does adopting a puppy suggest that {S} is an animal lover?",),
        gist=("get a dog", "getting a dog", "got a dog"),
        adv={"name": "What is {W}'s dog called?", "breed": "What kind of dog does {W} own?"},
        who=("the friend with the {breed}", "breed"),
        upd=(("{Name} graduated from puppy class {when}!",
              "{S}'s dog {name} completed puppy class {date}.",
              "What training did {S}'s pet complete?"),
             ("Update on {name}: {p} finally sleeps through the night now.",
              "{S}'s dog {name} was sleeping through the night {asof}.",
              "What improvement did {S} report about the family pet's nights?")),
        ping=("How's {name} doing?", "How's the puppy?"),
        od=("Is {S} likely an animal lover?",)),
    EType(
        "cat", tone="aww", pro="pet",
        slots={"name": CAT_NAMES,
               "look": ("a gray tabby", "all black with white paws", "a fluffy orange ball",
                        "a tortoiseshell", "a Siamese mix"),
               "age": ("eight weeks", "three months", "four months", "two years"),
               "source": ADOPT_SOURCES},
        say=("We brought home a kitten {when}!",
             "{When} I adopted a little kitten from {source}.",
             "So I have a kitten now. I picked {po} up {when}."),
        ask=(("Omg, what does {p} look like?", "{P}'s {look}, and so tiny."),
             ("What did you name {po}?", "{Name}! It just fit."),
             ("How old is {p}?", "Only {age}, so tiny.")),
        more=("{PP} name is {name}, by the way.", ("{P} sleeps on my keyboard every single night.", "{S}'s kitten sleeps on {sp} keyboard at night."),
              ("{P} already knocked a plant off the windowsill.", "{S}'s kitten knocked a plant off the windowsill."),
              "{P}'s {look}, and honestly the cutest thing ever."),
        facts={"_": "{S} adopted a kitten {date}.", "name": "{S}'s kitten is named {name}.",
               "look": "{S}'s kitten is {look}.",
               "age": "{S}'s kitten was {age} old when adopted.",
               "source": "{S} adopted the kitten from {source}."},
        q={"name": ("What did {S} call the new cat?",),
           "look": ("What does {S}'s cat look like?", "How would you describe the coat of {S}'s cat?"),
           "age": ("How young was {S}'s cat on arrival?",),
           "source": ("Where did {S} find the cat?",)},
        qe={"name": ("What did {S} name the kitten?", "What is the name of {S}'s kitten?"),
            "look": ("What does {S}'s tiny kitten look like?",),
            "age": ("How old was {S}'s tiny kitten?",),
            "source": ("Where did {S} adopt the kitten from?",)},
        gist_e=("adopt a kitten", "adopting a kitten", "adopted a kitten"),
        adv_e={"name": "What is the name of {W}'s kitten?", "look": "What does {W}'s tiny kitten look like?"},
        upd_e=("How did the first vet checkup for {S}'s kitten go?", "What did {S}'s cat figure out how to open?"),
        od_e=("Does adopting a kitten suggest that {S} is an animal lover?",),
        gist=("get a cat", "getting a cat", "got a cat"),
        adv={"name": "What is {W}'s cat called?", "look": "What color is {W}'s cat?"},
        who=("the friend with a cat called {name}", "name"),
        upd=(("{Name} had {pp} first vet checkup {when}, all healthy.",
              "{S}'s kitten {name} had a healthy first vet checkup {date}.",
              "How did the medical visit for {S}'s pet go?"),
             ("{Name} figured out how to open the kitchen cabinets {when}, I'm doomed.",
              "{S}'s cat {name} learned to open kitchen cabinets {date}.",
              "What mischievous skill did {S}'s pet develop?")),
        ping=("How's {name}?", "How's the kitten settling in?"),
        od=("Is {S} likely an animal lover?",)),
    EType(
        "move", kinds=PAST + ("last_month",),
        slots={"city": ("Porto", "Denver", "Lyon", "Edinburgh", "Montreal", "Valencia",
                        "Austin", "Portland", "Leeds", "Rotterdam", "Halifax"),
               "home": (("a two-bedroom near the river", "a two-bedroom apartment near the river"),
                        ("a tiny flat above a bakery", "a small flat above a bakery"),
                        ("a townhouse with a little garden", "a townhouse with a small garden"),
                        ("a loft in the old warehouse district", "a loft in the old warehouse district")),
               "reason": (("mostly for a shorter commute", "for a shorter commute"),
                          ("the rent here was way cheaper", "because the rent was much cheaper"),
                          ("I needed a fresh start", "for a fresh start"),
                          ("to be near the ocean", "to be near the ocean"))},
        say=("We finally moved {when}! Boxes everywhere.",
             "{When} I signed the lease in {city}, it's official!",
             "So I moved to {city} {when}. Still can't find half my kitchen stuff."),
        ask=(("Wait, where did you end up?", "{City}! Still feels unreal."),
             ("What's the new place like?", "It's {home}. The morning light is amazing."),
             ("Why the move, if you don't mind me asking?", "Honestly, {reason}.")),
        more=("It's {home}, so I can walk almost everywhere.",
              ("The neighbors already invited me over for dinner.", "{S}'s new neighbors invited {so} over for dinner."),
              ("It's so much quieter than my old street.", "{S}'s new home is much quieter than {sp} old street.")),
        facts={"_": "{S} moved to a new home {date}.", "city": "{S} moved to {city}.",
               "home": "{S}'s new home is {home}.", "reason": "{S} moved {reason}."},
        q={"city": ("Which city did {S} relocate to?", "Where does {S} live these days?"),
           "home": ("What kind of place does {S} live in now?",),
           "reason": ("What motivated {S} to relocate?",)},
        qe={"city": ("Which city did {S} move to?", "Where did {S} sign the lease?"),
            "home": ("What is {S}'s new place with the amazing morning light like?",
                     "Where did {S} move to that lets {so} walk almost everywhere?")},
        gist_e=("move to a new place", "moving to a new place", "moved to a new place"),
        adv_e={"city": "Which city did {W} move to?", "home": "Does {W}'s new place get amazing morning light?"},
        upd_e=("Did {S} ever unpack the last box after the move?", "What did {S} find around the corner from the new place?"),
        gist=("relocate", "relocating", "relocated"),
        adv={"city": "Which city did {W} relocate to?", "home": "What kind of place does {W} live in now?"},
        who=("the friend who relocated to {city}", "city"),
        upd=(("I finally unpacked the very last box {when}!",
              "{S} finished unpacking after the move {date}.",
              "What did {S} finally finish after relocating?"),
             ("I found a great coffee spot around the corner from the new place.",
              "{S} found a favorite coffee spot near {sp} new home {asof}.",
              "What did {S} discover near the new home?")),
        ping=("How are you settling in?",)),
    EType(
        "job",
        slots={"company": ("Brightwave", "Northwind Labs", "Tallgrass Health", "Quarry Analytics",
                           "Bluefin Logistics", "Meridian Bank", "Oakline Studios",
                           "Copperleaf Energy", "Sundial Games"),
               "role": ("a product designer", "a data analyst", "a project manager",
                        "a backend engineer", "an account manager", "a marketing lead"),
               "mgr": STAFF},
        say=("I started at {company} {when}!",
             "Big news: my first day at {company} was {when}.",
             "{When} was my first day at the new job, so nervous!"),
        ask=(("Congrats!! What will you be doing there?",
              "I'm {role}, same kind of work but a much bigger team."),
             ("Wait, which company was it again?", "{Company}, the one with the office by the station."),
             ("How's your manager?", "{Mgr} seems great, very calm.")),
        more=("The coffee machine there is better than my old one, which matters.",
              "My manager, {mgr}, took the whole team out for lunch on day one.",
              ("Everyone there is so friendly.", "{S} finds the coworkers at the new job friendly.")),
        facts={"_": "{S} started a new job {date}.", "company": "{S} works at {company}.",
               "role": "{S} works as {role}.", "mgr": "{S}'s manager at work is {mgr}."},
        q={"company": ("Which organisation employs {S} now?", "Who is {S}'s current employer?"),
           "role": ("What position does {S} hold at the new employer?",),
           "mgr": ("Who is {S}'s boss at the new employer?",)},
        qe={"company": ("Which company did {S} start at?", "Where did {S} start the new job?"),
            "role": ("What does {S} do at the new job?", "What is {S}'s role on the much bigger team?"),
            "mgr": ("Who is {S}'s manager at the new job?", "Who is the calm manager {S} has at the new job?")},
        gist_e=("start a new job", "starting a new job", "started a new job"),
        adv_e={"company": "Which company did {W} start at?", "role": "What does {W} do at the new job?"},
        upd_e=("Did {S} pass the probation period at the new job?",),
        gist=("begin a new role", "beginning a new role", "began a new role"),
        adv={"company": "Which firm hired {W}?", "role": "What is {W}'s position at the new employer?"},
        who=("the friend employed at {company}", "company"),
        upd=(("I passed my probation period {when}!",
              "{S} passed the probation period at work {date}.",
              "What work milestone did {S} reach after joining the new employer?"),),
        ping=("How's the new job treating you?",)),
    EType(
        "promotion",
        slots={"title": ("senior analyst", "team lead", "head of operations", "lead designer",
                         "engineering manager", "principal consultant"),
               "team": ("three", "four", "six", "eight")},
        say=("I got promoted {when}!",
             "{When} my boss called me in and told me I got the promotion.",
             "So, {when} I officially became the new {title}!"),
        ask=(("No way, congrats! What's the new title?", "{Title}. Still getting used to saying it."),
             ("Do you have people under you now?", "Yes, a team of {team}.")),
        more=(("Honestly the raise is nice, but the extra meetings are not.", "{S} got a raise with the promotion but dislikes the extra meetings."),
              "I'll be managing {team} people, which is a little scary."),
        facts={"_": "{S} was promoted at work {date}.", "title": "{S}'s new title is {title}.",
               "team": "{S} now manages a team of {team}."},
        q={"title": ("What role did {S} move up to?",),
           "team": ("How many direct reports does {S} have now?",)},
        qe={"title": ("What new title is {S} still getting used to saying?", "What did {S} officially become?"),
            "team": ("How big is the team {S} is managing now?", "How many people will {S} be managing?")},
        gist_e=("get promoted", "getting promoted", "got promoted"),
        adv_e={"title": "What did {W} get promoted to?", "team": "How many people is {W} managing now?"},
        upd_e=("How did {S}'s first performance review in the new role go?",),
        gist=("move up at work", "moving up at work", "moved up at work"),
        adv={"title": "What role did {W} move up to?", "team": "How many direct reports does {W} have?"},
        upd=(("My first performance review in the new role went really well {when}.",
              "{S} had a positive first performance review after the promotion {date}.",
              "How did {S}'s first evaluation in the higher position go?"),),
        ping=("How's the new role going?",)),
    EType(
        "hobby",
        slots={"act": ("salsa dancing", "woodworking", "archery", "watercolor painting",
                       "fencing", "improv comedy", "kickboxing", "calligraphy"),
               "where": (("a studio near my office", "a studio near {sp} office"),
                         ("the community center", "the community center"),
                         ("a club across town", "a club across town"),
                         ("a little place called Studio Nine", "Studio Nine")),
               "day": WEEKDAYS[:4]},
        say=("I signed up for {act} lessons {when} and I'm already hooked.",
             "{When} I tried {act} for the first time!",
             "Guess what, I finally started {act} {when}."),
        ask=(("Where do you go for that?", "{Where}, it's pretty low-key."),
             ("How often do you go?", "Every {day} evening, for now.")),
        more=(("I was terrible at first, but the instructor was really patient.", "{S} says the {act} instructor is very patient."),
              "I'm sore in muscles I didn't know I had.",
              "It's every {day} evening, so that's my new routine."),
        facts={"_": "{S} took up {act} {date}.", "where": "{S} does {act} at {where}.",
               "day": "{S} has {act} sessions every {day} evening."},
        q={"act": ("What new pastime did {S} pick up?",),
           "where": ("Where does {S} practice the new pastime?",),
           "day": ("On which weekday does {S} attend the new class?",)},
        qe={"act": ("What lessons did {S} sign up for?", "What activity did {S} finally start?"),
            "where": ("Which low-key place does {S} go to for {act}?",),
            "day": ("Which evening does {S} have {act}?",)},
        gist_e=("take up {act}", "taking up {act}", "took up {act}"),
        adv_e={"act": "Which lessons did {W} sign up for?", "day": "Which evening does {W} have lessons?"},
        upd_e=("Which group did {S}'s instructor say {ss} was ready for?",),
        gist=("pick up a new pastime", "picking up a new pastime", "picked up a new pastime"),
        adv={"act": "Which new pastime did {W} pick up?", "day": "On which weekday does {W} attend the new class?"},
        who=("the friend who took up {act}", "act"),
        upd=(("My instructor said I'm ready for the intermediate group!",
              "{S} moved up to the intermediate {act} group {asof}.",
              "What progress did {S} make in the new pastime?"),)),
    EType(
        "trip", tone="fun", rep=2,
        slots={"place": ("Lisbon", "Iceland", "Kyoto", "Mexico City", "the Scottish Highlands",
                         "Crete", "Vancouver", "Marrakech", "Prague", "Cape Town", "Tuscany",
                         "New Orleans", "Hanoi", "Bergen"),
               "with": (("my sister", "with {sp} sister"), ("my partner", "with {sp} partner"),
                        ("two friends from college", "with two college friends"),
                        ("just me, a solo trip", "on {sp} own"), ("my parents", "with {sp} parents")),
               "best": (("a sunrise hike", "a sunrise hike"),
                        ("a cooking class with a local chef", "a cooking class with a local chef"),
                        ("a boat tour along the coast", "a boat tour along the coast"),
                        ("the night markets", "the night markets"),
                        ("a day at the hot springs", "a day at the hot springs")),
               "weather": (("way colder than I expected", "much colder than expected"),
                           ("hot and sticky the whole time", "hot and humid"),
                           ("rainy almost every day", "rainy most days"),
                           ("perfect, sunny every single day", "sunny every day"))},
        say=("I got back from {place} {when}!",
             "{When} I came home from a week in {place}.",
             "Just back from {place}, we flew home {when}."),
        ask=(("Who did you go with?", "{With}. It was exactly what I needed."),
             ("What was the best part?", "{Best}, hands down.")),
        more=("It was {weather}.", ("I already miss the food there.", "{S} loved the food in {place}."),
              "I took about a thousand photos."),
        facts={"_": "{S} returned from a trip to {place} {date}.", "with": "{S} went to {place} {with}.",
               "best": "The highlight of {S}'s trip to {place} was {best}.",
               "weather": "The weather during {S}'s trip to {place} was {weather}."},
        q={"place": ("Where did {S} go on holiday?", "Which destination did {S} visit on the getaway?"),
           "with": ("Who accompanied {S} on the holiday?",),
           "best": ("What was {S}'s favorite moment of the holiday?",),
           "weather": ("What were conditions like during {S}'s holiday?",)},
        qe={"place": ("Which place did {S} come home from?", "Where did {S} fly home from?"),
            "with": ("Who went with {S} on the trip that was exactly what {ss} needed?",),
            "best": ("What was hands down the best part of {S}'s trip to {place}?",)},
        gist_e=("get back from {place}", "getting back from {place}", "got back from {place}"),
        adv_e={"place": "Where did {W} fly home from?", "best": "What was hands down the best part of {W}'s trip?"},
        count_e="How many trips did {S} come home from?",
        upd_e=("Did {S} print the photos from {place}?",),
        od_e=("Does {S}, who just got back from {place}, seem to enjoy travel?",),
        gist=("come back from a holiday", "coming back from a holiday", "came back from a holiday"),
        wq=("When did {S} return from {place}?",),
        adv={"place": "Where did {W} go on holiday?", "best": "What did {W} like best about the holiday?"},
        who=("the friend who vacationed in {place}", "place"),
        count="How many holidays did {S} mention?",
        upd=(("I finally printed the photos from {place} {when}, they look great framed.",
              "{S} printed and framed photos from the {place} trip {date}.",
              "What did {S} do with the pictures from the getaway?"),),
        od=("Does {S} seem to enjoy seeing the world?",)),
    EType(
        "race", kinds=("last_weekend", "two_weekends", "last_wd:6", "last_wd:5"),
        pkinds=("next_weekend", "in_two_weeks", "this_wd:6", "next_wd:6"), plan=("I'm running {race} {when}, wish me luck!",
                      "{Race} is {when}, and I've been training for months."),
        pf="{S} was registered to run {race} {date}.",
        rows=({"race": "the Riverside 10K"}, {"race": "the Lisbon half marathon"},
              {"race": "a trail 25K in the hills"}, {"race": "the city half marathon"},
              {"race": "the Spring Sprint 5K"}, {"race": "a night 10K along the river"}),
        slots={"result": (("I got a new personal best!", "set a new personal best"),
                          ("I finished right on my goal time.", "finished right on {sp} goal time"),
                          ("I was way slower than planned, but I finished.", "finished slower than planned"),
                          ("I came in third in my age group!", "came third in {sp} age group"))},
        say=("I ran {race} {when}!", "{When} I did {race}, and I survived, barely.",
             "{When} I ran {race}, finally crossed that off my list."),
        ask=(("How did it go?", "{Result} What a day."),),
        more=("The last two kilometers were brutal.", "My legs are still destroyed, haha."),
        facts={"_": "{S} ran {race} {date}.", "result": "{S} {result} at {race}."},
        q={"race": ("Which running event did {S} take part in?",),
           "result": ("How did {S} do in the running event?",)},
        qe={"race": ("Which race did {S} survive, barely?", "Which race did {S} finally cross off {sp} list?"),
            "result": ("How did {S} do at {race}?",)},
        gist_e=("run {race}", "running {race}", "ran {race}"),
        adv_e={"race": "Which race did {W} finally cross off the list?"},
        upd_e=("How did {race} go for {S}?",),
        od_e=("Is {S}, who ran {race}, likely to enjoy endurance sports?",),
        gist=("take part in a running event", "taking part in a running event",
              "took part in a running event"),
        adv={"result": "How did {W} do in the running event?", "race": "Which running event did {W} enter?"},
        who=("the friend who did {race}", "race"),
        done=(("Update on {race}: {result}", "{S} {result} at {race} {edate}.",
               "What was the outcome of {S}'s running event?"),),
        od=("Is {S} likely to enjoy endurance sports?",)),
    EType(
        "concert", tone="fun", rep=2,
        plan=("I got tickets to see {band} {when}!", "{Band} is playing in town {when} and I'm going!"),
        pf="{S} had tickets to see {band} {date}.",
        slots={"band": ("Arctic Monkeys", "Norah Jones", "Khruangbin", "Florence and the Machine",
                        "Bon Iver", "Tame Impala", "Lizzo", "Phoenix", "Little Simz"),
               "venue": (("the old theater downtown", "the old theater downtown"),
                         ("an outdoor amphitheater", "an outdoor amphitheater"),
                         ("a tiny club by the harbor", "a small club by the harbor"),
                         ("the big arena", "the big arena")),
               "with": (("my brother, he's an even bigger fan than me", "with {sp} brother"),
                        ("a coworker who had a spare ticket", "with a coworker"),
                        ("my roommate", "with {sp} roommate"),
                        ("nobody, I went alone and loved it", "alone"))},
        say=("I saw {band} live {when}!", "{When} I finally got to see {band} in concert.",
             "Went to see {band} {when}, still buzzing."),
        ask=(("Where did they play?", "{Venue}, and the sound was incredible."),
             ("Who'd you go with?", "{With}.")),
        more=(("They played for almost three hours.", "{Band} played for almost three hours at the show {S} attended."), "My ears are still ringing, haha."),
        facts={"_": "{S} saw {band} perform live {date}.", "venue": "{S} saw {band} at {venue}.",
               "with": "{S} went to the {band} show {with}."},
        q={"band": ("Which musicians did {S} watch perform?",),
           "venue": ("Where was the gig {S} attended?",),
           "with": ("Who joined {S} at the gig?",)},
        qe={"band": ("Which band did {S} see live?", "Who did {S} see in concert?"),
            "venue": ("At which venue was the sound incredible when {S} saw {band}?",)},
        gist_e=("see {band} live", "seeing {band} live", "saw {band} live"),
        adv_e={"band": "Which band did {W} see live?", "venue": "Where did {W} see the concert with the incredible sound?"},
        count_e="How many concerts did {S} go to?",
        upd_e=("How was the {band} show for {S}?",),
        gist=("watch a band perform", "watching a band perform", "watched a band perform"),
        wq=("When did {S} watch {band} perform?",),
        adv={"band": "Which band did {W} watch perform?", "venue": "Where was the gig {W} attended?"},
        who=("the friend who watched {band} perform", "band"),
        count="How many gigs did {S} attend?",
        done=(("The {band} show was everything I hoped, they played all my favorites.",
               "{S} went to the {band} show {edate} and loved it.",
               "How did {S} feel about the gig afterwards?"),)),
    EType(
        "cooking", tone="fun", rep=2, kinds=("yesterday", "last_wd", "last_weekend", "two_days"),
        slots={"dish": ("homemade ramen", "beef bourguignon", "a three-layer lemon cake",
                        "fresh pasta", "chicken biryani", "a whole paella", "pierogi",
                        "Thai green curry"),
               "source": (("my grandma's old notebook", "{sp} grandmother's old notebook"),
                          ("a YouTube video", "a YouTube video"),
                          ("a cookbook I got for my birthday", "a cookbook {ss} got for {sp} birthday"),
                          ("a coworker", "a coworker")),
               "occasion": (("my partner's birthday", "{sp} partner's birthday"),
                            ("a potluck at work", "a work potluck"),
                            ("no reason, it was just a rainy Sunday", "a rainy Sunday at home"))},
        say=("I made {dish} from scratch {when}.",
             "{When} I finally attempted {dish}, and it worked!",
             "I spent {when} cooking {dish}."),
        ask=(("Where did you get the recipe?", "From {source}."),
             ("What was the occasion?", "{Occasion}.")),
        more=(("It took four hours but it was so worth it.", "Making {dish} took {S} four hours."), "I burned the first batch, haha."),
        facts={"_": "{S} cooked {dish} {date}.", "source": "{S} got the recipe for {dish} from {source}.",
               "occasion": "{S} made {dish} for {occasion}."},
        q={"dish": ("What meal did {S} prepare?", "What food did {S} whip up?"),
           "source": ("Where did {S} find the instructions for the meal?",),
           "occasion": ("Why did {S} prepare the meal?",)},
        qe={"dish": ("What did {S} make from scratch?", "What dish did {S} spend the day cooking?")},
        gist_e=("make {dish} from scratch", "making {dish} from scratch", "made {dish} from scratch"),
        adv_e={"dish": "What did {W} make from scratch?"},
        count_e="How many dishes did {S} cook from scratch?",
        gist=("prepare a homemade meal", "preparing a homemade meal", "prepared a homemade meal"),
        wq=("When did {S} prepare {dish}?",),
        adv={"dish": "What meal did {W} prepare at home?"},
        count="How many ambitious dishes did {S} talk about preparing?"),
    EType(
        "health", tone="bad", kinds=PAST + ("this_morning",),
        rows=({"condition": ("sprained my ankle", "sprained an ankle"),
               "cause": ("I tripped on a curb running for the bus.", "tripping on a curb"),
               "advice": ("stay off it for two weeks", "stay off the ankle for two weeks")},
              {"condition": ("threw out my back", "hurt {sp} back"),
               "cause": ("Lifting a box of books, of all things.", "lifting a box of books"),
               "advice": ("see a physio twice a week", "see a physiotherapist twice a week")},
              {"condition": ("came down with the flu", "came down with the flu"),
               "cause": ("Probably the office, half my team is sick.", "catching it at the office"),
               "advice": ("rest and drink a lot of fluids", "rest and drink plenty of fluids")},
              {"condition": ("had a really bad migraine", "had a severe migraine"),
               "cause": ("Too much screen time and not enough sleep, I think.",
                         "too much screen time and too little sleep"),
               "advice": ("cut back on caffeine", "cut back on caffeine")},
              {"condition": ("broke my wrist", "broke {sp} wrist"),
               "cause": ("I slipped on a wet floor at the gym.", "slipping on a wet floor"),
               "advice": ("wear a cast for six weeks", "wear a cast for six weeks")}),
        say=("I {condition} {when}, ugh.", "So {when} I {condition}. Not my best week.",
             "Not a great week: I {condition} {when}."),
        ask=(("Oh no! How did that happen?", "{Cause}"),
             ("Did you see a doctor?", "Yes, they told me to {advice}.")),
        more=("The doctor said to {advice}.",
              ("The clinic said they'd call me back next week with the results.", "{S} was waiting for results from the clinic."),
              "I'm mostly fine, just grumpy about it."),
        facts={"_": "{S} {condition} {date}.", "cause": "{S} thinks the cause was {cause}.",
               "advice": "{S} was told by a doctor to {advice}."},
        q={"condition": ("What health problem did {S} have?",),
           "cause": ("What led to {S}'s health problem?",),
           "advice": ("What did the medical professional recommend to {S}?",)},
        qe={"advice": ("What did the doctor tell {S} to do?",)},
        adv_e={"advice": "What did the doctor tell {W} to do?"},
        upd_e=("Is {S} feeling back to normal yet?",),
        gist=("have a health setback", "having a health setback", "had a health setback"),
        adv={"condition": "What health problem did {W} have?",
             "advice": "What treatment was recommended to {W}?"},
        upd=(("I'm finally feeling back to normal.",
              "{S} had recovered from the health problem {asof}.",
              "Has {S} recovered from the medical problem?"),),
        ping=("Are you feeling better?",)),
    EType(
        "visit", pro="rel", family=("sister", "brother", "mom", "dad", "cousin", "grandmother", "aunt"),
        plan=("My {rel} {name} is coming to stay {when}!",
              "My {rel} {name} is visiting {when}, so I need to clean everything.",
              "Heads up, my {rel} {name} arrives {when}!"),
        pf="{S}'s {rel} {name} was planning to visit {date}.",
        slots={"duration": (("the whole week", "the whole week"), ("just a long weekend", "a long weekend"),
                            ("ten days", "ten days")),
               "activity": (("We ate our way through every bakery in town.", "tried every bakery in town"),
                            ("We did a day trip to the lake.", "took a day trip to the lake"),
                            ("Mostly old movies and way too much takeout.", "watched old movies and ate takeout"),
                            ("We went to the flea market and the botanical garden.",
                             "visited the flea market and the botanical garden"))},
        say=("My {rel} {name} came to visit {when}!", "{When} my {rel} {name} flew in to stay with me.",
             "{When} my {rel} {name} was in town for a visit."),
        ask=(("How long did {p} stay?", "{Duration}, it went by so fast."),
             ("What did you two get up to?", "{Activity}")),
        more=(("{P} brought me a huge box of homemade cookies.", "{S}'s {rel} brought {so} homemade cookies."), "It was so nice having {po} around."),
        facts={"_": "{S}'s {rel} {name} visited {date}.", "duration": "{S}'s {rel} stayed for {duration}.",
               "activity": "During the visit, {S} and {sp} {rel} {activity}."},
        q={"name": ("Who is the relative that spent time at {S}'s place?",),
           "duration": ("How many days was {S}'s relative in town?",),
           "activity": ("What did {S} do with the family member who came over?",)},
        qe={"name": ("Who came to visit {S}?",),
            "duration": ("How long did {S}'s {rel} stay, in a visit that went by so fast?",)},
        gist_e=("have {sp} {rel} over for a visit", "having {sp} {rel} over for a visit", "had {sp} {rel} over for a visit"),
        adv_e={"name": "Which relative came to visit {W}?"},
        upd_e=("How did {S} feel after {sp} {rel} left?",),
        gist=("host a family member", "hosting a family member", "hosted a family member"),
        adv={"duration": "How many days was {W}'s relative in town?",
             "name": "Which relative spent time at {W}'s place?"},
        done=(("My {rel} left {when}, the apartment feels so empty now.",
               "{S}'s {rel} {name} ended the visit {date}.",
               "How did {S} feel after the relative went home?", "wistful"),),
        ping=("Is your {rel} still around?",)),
    EType(
        "car", pro="it",
        slots={"model": (("a used Honda Civic", "a used Honda Civic"),
                         ("a secondhand Mazda 3", "a secondhand Mazda 3"),
                         ("a little electric Fiat", "a small electric Fiat"),
                         ("a Subaru Outback", "a Subaru Outback"),
                         ("a Toyota Corolla hybrid", "a Toyota Corolla hybrid"),
                         ("a VW Golf", "a VW Golf")),
               "color": ("dark green", "bright red", "silver", "pale blue", "white"),
               "seller": (("an older couple who barely drove it", "an older couple"),
                          ("a dealership out by the highway", "a dealership"),
                          ("a coworker who was moving abroad", "a coworker who was moving abroad"))},
        say=("I finally bought a car {when}!",
             "{When} I picked up my first car, I'm officially a driver now.",
             "So I bought {model} {when}."),
        ask=(("Ooh, what did you get?", "{Model}, nothing fancy."),
             ("What color is it?", "{Color}. Not my first choice, but the price was right."),
             ("Where did you find it?", "From {seller}.")),
        more=(("It already has a tiny scratch on the door, of course.", "{S}'s new car has a small scratch on the door."),
              "It's {color}, which I'm slowly getting used to."),
        facts={"_": "{S} bought a car {date}.", "model": "{S} bought {model}.",
               "color": "{S}'s car is {color}.", "seller": "{S} bought the car from {seller}."},
        q={"model": ("What vehicle did {S} purchase?", "What make and model does {S} drive now?"),
           "color": ("What shade is {S}'s vehicle?",),
           "seller": ("Who sold {S} the vehicle?",)},
        qe={"model": ("What car did {S} buy?",),
            "color": ("Which color is {S} slowly getting used to on the new car?",
                      "What color is the car {S} got because the price was right?")},
        gist_e=("buy a car", "buying a car", "bought a car"),
        adv_e={"model": "What car did {W} buy?", "color": "Which color is {W} slowly getting used to on the new car?"},
        upd_e=("Where did {S} take the new car on its first road trip?",),
        gist=("purchase a vehicle", "purchasing a vehicle", "purchased a vehicle"),
        adv={"model": "What make and model does {W} drive now?", "color": "What shade is {W}'s vehicle?"},
        who=("the friend who purchased {model}", "model"),
        upd=(("I took the car on its first road trip {when}, six hours each way.",
              "{S} took the new car on a long road trip {date}.",
              "What long drive did {S} do in the new vehicle?"),),
        ping=("How's the new car?",)),
    EType(
        "instrument",
        slots={"instr": ("guitar", "piano", "cello", "ukulele", "drums", "violin", "saxophone"),
               "teacher": STAFF,
               "piece": (("a very slow version of Clair de Lune", "Clair de Lune"),
                         ("Wonderwall, because of course", "Wonderwall"),
                         ("some basic scales, nothing exciting", "basic scales"),
                         ("the Game of Thrones theme", "the Game of Thrones theme"))},
        say=("I started {instr} lessons {when}!", "{When} I had my very first {instr} lesson.",
             "So I finally bought a {instr} {when} and started lessons."),
        ask=(("Who's teaching you?", "A teacher called {teacher}, super patient."),
             ("What are you working on?", "{Piece}.")),
        more=("My neighbors are being very kind about the noise, haha.",
              "My fingers hurt so much after practice."),
        facts={"_": "{S} started learning the {instr} {date}.", "teacher": "{S}'s {instr} teacher is {teacher}.",
               "piece": "{S} is practicing {piece} on the {instr}."},
        q={"instr": ("Which instrument is {S} studying?",),
           "teacher": ("Who gives {S} music instruction?",),
           "piece": ("What song is {S} rehearsing?",)},
        qe={"instr": ("Which instrument did {S} start lessons for?",),
            "teacher": ("Who is {S}'s {instr} teacher?",)},
        gist_e=("start {instr} lessons", "starting {instr} lessons", "started {instr} lessons"),
        adv_e={"instr": "Which instrument did {W} start lessons for?", "teacher": "Who is {W}'s music teacher?"},
        upd_e=("Who did {S} play the {instr} for?",),
        gist=("begin music training", "beginning music training", "began music training"),
        adv={"instr": "Which instrument is {W} studying?", "teacher": "Who gives {W} music instruction?"},
        who=("the friend studying the {instr}", "instr"),
        upd=(("I played for my family {when}, and nobody left the room!",
              "{S} played the {instr} for family {date}.",
              "Who did {S} perform for after starting music training?"),)),
    EType(
        "language",
        slots={"lang": ("Spanish", "Japanese", "Portuguese", "Italian", "Korean", "German", "French"),
               "method": (("an app, fifteen minutes every morning", "an app every morning"),
                          ("an evening class at the community college", "an evening class at the community college"),
                          ("an online tutor twice a week", "an online tutor twice a week")),
               "reason": (("I want to talk to my partner's family properly", "to talk with {sp} partner's family"),
                          ("I'm hoping to travel there next year", "to prepare for travel"),
                          ("Honestly, just for fun", "for fun"))},
        say=("I started learning {lang} {when}!", "{When} I signed up to learn {lang}.",
             "{When} I decided to finally learn {lang}."),
        ask=(("How are you learning?", "{Method}."), ("Why {lang}?", "{Reason}.")),
        more=(("Right now I can order coffee and that's about it.", "So far {S} can only order coffee in {lang}."),
              "The grammar is already melting my brain."),
        facts={"_": "{S} started learning {lang} {date}.", "method": "{S} is learning {lang} through {method}.",
               "reason": "{S} is learning {lang} {reason}."},
        q={"lang": ("Which foreign tongue is {S} studying?",),
           "method": ("How is {S} studying the foreign tongue?",),
           "reason": ("Why did {S} decide to study a foreign tongue?",)},
        qe={"lang": ("Which language did {S} start learning?", "What did {S} sign up to learn?")},
        gist_e=("start learning {lang}", "starting to learn {lang}", "started learning {lang}"),
        adv_e={"lang": "Which language did {W} start learning?"},
        upd_e=("Has {S} had a full conversation in {lang} yet?",),
        gist=("begin studying a foreign tongue", "beginning to study a foreign tongue",
              "began studying a foreign tongue"),
        adv={"lang": "Which foreign tongue is {W} studying?"},
        who=("the friend studying {lang}", "lang"),
        upd=(("I had my first full conversation in {lang} {when}, only a little panicking!",
              "{S} held a first full conversation in {lang} {date}.",
              "What progress did {S} make with the foreign tongue?"),)),
    EType(
        "volunteer",
        rows=({"org": "the food bank on Fifth Street", "role": ("I mostly sorted cans for four hours", "sorting donations")},
              {"org": "an animal shelter nearby", "role": ("I walked dogs all afternoon", "walking dogs")},
              {"org": "a beach cleanup group", "role": ("We picked up trash along the shore", "picking up trash along the shore")},
              {"org": "a literacy program for adults", "role": ("I help an older man practice reading", "tutoring an adult learner in reading")},
              {"org": "the community garden", "role": ("Weeding, mostly, and a lot of it", "weeding")}),
        slots={"freq": ("other Saturday", "Sunday morning", "Wednesday evening")},
        say=("I volunteered at {org} {when} for the first time.", "{When} I did my first shift with {org}.",
             "I finally signed up to volunteer with {org}, my first day was {when}."),
        ask=(("What did you do there?", "{Role}."), ("Are you going back?", "Yes, I signed up for every {freq}.")),
        more=("It felt really good to do something useful.", "I'm going back every {freq} now."),
        facts={"_": "{S} started volunteering with {org} {date}.", "role": "{S}'s volunteer work involves {role}.",
               "freq": "{S} volunteers with {org} every {freq}."},
        q={"org": ("Which charity does {S} help out with?",),
           "role": ("What tasks does {S} do during the charity shifts?",),
           "freq": ("How often does {S} help out at the charity?",)},
        qe={"org": ("Where did {S} volunteer?", "Where did {S} do a first volunteer shift?"),
            "freq": ("How often did {S} sign up to volunteer?",)},
        gist_e=("start volunteering", "starting to volunteer", "started volunteering"),
        adv_e={"org": "Where does {W} volunteer?"},
        od_e=("Does {S}, who volunteers at {org}, seem community-minded?",),
        gist=("do charity work", "doing charity work", "did charity work"),
        adv={"org": "Which charity does {W} help out with?"},
        who=("the friend who helps out at {org}", "org"),
        od=("Does {S} seem community-minded?",)),
    EType(
        "book", tone="fun", rep=2, kinds=("yesterday", "last_wd", "last_weekend", "two_days", "last_week"),
        slots={"title": ("The Glass Orchard", "Salt and Stone", "A Map of Quiet Places",
                         "The Last Lighthouse", "The Clockmaker's Daughter", "Seven Small Fires",
                         "The Paper Garden", "Winter Harbor"),
               "author": ("Elena Marsh", "Tomas Reid", "Hanna Cole", "Jonah Pike", "Ines Laurent",
                          "Ruth Okafor"),
               "opinion": (("Absolutely, the ending wrecked me", "loved it and found the ending devastating"),
                           ("It's fine, a bit slow in the middle", "found it a bit slow in the middle"),
                           ("Yes, it's the best thing I've read this year", "thought it was the best book of the year"))},
        say=("I finished {title} {when}, couldn't put it down.",
             "{When} I stayed up way too late finishing {title}.",
             "Just finished {title} {when}, what a book."),
        ask=(("Who wrote that one?", "{Author}. I want to read everything else by them now."),
             ("Would you recommend it?", "{Opinion}.")),
        more=(("I already lent it to my neighbor.", "{S} lent {title} to a neighbor."), "I need a new one now, any ideas?"),
        facts={"_": "{S} finished reading {title} {date}.", "author": "{S} read {title} by {author}.",
               "opinion": "About {title}, {S} {opinion}."},
        q={"title": ("Which novel did {S} recently get through?",),
           "author": ("Who is the writer of the novel {S} read?",),
           "opinion": ("What did {S} think of the novel?",)},
        qe={"title": ("Which book did {S} finish?", "Which book couldn't {S} put down?"),
            "author": ("Which author does {S} want to read everything by now?",)},
        gist_e=("finish {title}", "finishing {title}", "finished {title}"),
        adv_e={"title": "Which book did {W} stay up too late finishing?"},
        count_e="How many books did {S} finish?",
        gist=("finish a novel", "finishing a novel", "finished a novel"),
        wq=("When did {S} get to the end of {title}?",),
        adv={"title": "Which novel kept {W} awake at night?"},
        who=("the friend who read {title}", "title"),
        count="How many novels did {S} talk about?"),
    EType(
        "project", kinds=("yesterday", "last_wd", "two_days", "three_days", "last_week"),
        slots={"project": ("the new checkout page", "a big data migration", "the mobile app redesign",
                           ("our quarterly report dashboard", "a quarterly report dashboard"), "the new onboarding flow"),
               "part": (("I was the lead on it", "led the work on"), ("I handled all the testing", "handled the testing for"),
                        ("I did most of the design work", "did most of the design for")),
               "deadline": (("It was due Friday and we made it with an hour to spare", "met the deadline for {project} with an hour to spare"),
                            ("We were two weeks late, but it works", "finished {project} two weeks late"),
                            ("Surprisingly smooth, no fires at all", "delivered {project} without problems"))},
        say=("We launched {project} at work {when}.", "{When} we finally shipped {project}, after months of work.",
             "Big milestone at work: {project} went live {when}."),
        ask=(("What was your part in it?", "{Part}."), ("Did it go smoothly?", "{Deadline}.")),
        more=(("My team went out for drinks to celebrate.", "{S}'s team celebrated the launch of {project} with drinks."), "I'm so tired I could sleep for a week."),
        facts={"_": "{S}'s team launched {project} {date}.", "part": "{S} {part} {project}.",
               "deadline": "{S}'s team {deadline}."},
        q={"project": ("What did {S}'s team deliver at the office?",),
           "part": ("What was {S}'s contribution to the work assignment?",),
           "deadline": ("Was {S}'s work assignment completed on schedule?",)},
        qe={"project": ("What did {S}'s team launch at work?", "What did {S} ship at work?")},
        gist_e=("launch {project}", "launching {project}", "launched {project}"),
        adv_e={"project": "What did {W} launch at work?"},
        gist=("wrap up a big work assignment", "wrapping up a big work assignment",
              "wrapped up a big work assignment"),
        adv={"project": "What did {W}'s team deliver at the office?"}),
    EType(
        "party", tone="fun", kinds=("last_weekend", "two_weekends", "last_wd:5", "last_wd:4"),
        pkinds=("this_wd:5", "next_wd:5", "next_weekend"), plan=("I'm throwing a {occasion} {when}, you should come!",
                       "I'm hosting a {occasion} {when}, save the date."),
        pf="{S} planned to host a {occasion} {date}.",
        slots={"occasion": ("birthday party", "housewarming party", "summer barbecue", "dinner party",
                            "costume party"),
               "guests": ("about twenty", "around twelve", "almost thirty"),
               "food": (("I made a giant pot of chili for everyone", "made a giant pot of chili"),
                        ("Tacos, a whole table of them", "served a taco spread"),
                        ("Just pizza, I'm not a hero", "ordered pizza"))},
        say=("I hosted a {occasion} {when}, it was chaos in the best way.", "{When} I threw a {occasion} at my place.",
             "{When} we had a {occasion} at my place, so fun."),
        ask=(("How many people came?", "{Guests}, way more than I planned for."), ("What did you serve?", "{Food}.")),
        more=("The neighbors only complained once, which is a win.", "I'm still finding cups everywhere."),
        facts={"_": "{S} hosted a {occasion} {date}.", "guests": "{S}'s {occasion} had {guests} guests.",
               "food": "For the {occasion}, {S} {food}."},
        q={"occasion": ("What kind of gathering did {S} organize?",),
           "guests": ("How many people showed up at {S}'s gathering?",),
           "food": ("What food was offered at {S}'s gathering?",)},
        qe={"occasion": ("What kind of party did {S} host?", "What did {S} throw at {sp} place?"),
            "guests": ("How many guests came to {S}'s party, more than {ss} planned for?",)},
        gist_e=("host a {occasion}", "hosting a {occasion}", "hosted a {occasion}"),
        adv_e={"occasion": "What kind of party did {W} host?", "guests": "How many people came to {W}'s party, more than planned?"},
        upd_e=("How did {S}'s {occasion} go?",),
        gist=("host a get-together", "hosting a get-together", "hosted a get-together"),
        adv={"guests": "How many people showed up at {W}'s gathering?", "occasion": "What kind of gathering did {W} organize?"},
        done=(("The {occasion} was a hit, people stayed until 2 am.",
               "{S}'s {occasion} {edate} was a success, with guests staying until 2 am.",
               "How did {S}'s gathering turn out?"),),
        ping=("Still on for the {occasion}?",)),
    EType(
        "wedding", tone="fun", pro="rel", kinds=("last_weekend", "two_weekends", "last_wd:5", "couple_weeks"), family=("cousin", "best friend", "college roommate"),
        slots={"venue": (("a vineyard outside town", "a vineyard outside town"),
                         ("a barn in the countryside", "a barn in the countryside"),
                         ("a beach, barefoot and everything", "a beach"),
                         ("an old castle, like a movie", "an old castle")),
               "moment": (("I cried during the vows, obviously", "cried during the vows"),
                          ("I caught the bouquet, which caused a scene", "caught the bouquet"),
                          ("I danced until my feet gave up", "danced all night"))},
        say=("My {rel} {name} got married {when}!", "{When} I was at my {rel} {name}'s wedding.",
             "I went to my {rel} {name}'s wedding {when}, it was beautiful."),
        ask=(("Where was it?", "At {venue}, absolutely gorgeous."), ("How was it?", "{Moment}.")),
        more=(("The food was amazing, I had three desserts.", "{S} had three desserts at {name}'s wedding."), "{P} looked so happy the whole day."),
        facts={"_": "{S} attended the wedding of {sp} {rel} {name} {date}.",
               "venue": "{S}'s {rel} {name} got married at {venue}.", "moment": "At {name}'s wedding, {S} {moment}."},
        q={"name": ("Whose marriage ceremony did {S} go to?",),
           "venue": ("Where did the ceremony {S} went to take place?",),
           "moment": ("What did {S} do at the ceremony?",)},
        qe={"name": ("Whose wedding did {S} go to?",),
            "venue": ("Where was the absolutely gorgeous wedding {S} went to?",)},
        gist_e=("go to {sp} {rel}'s wedding", "going to {sp} {rel}'s wedding", "went to {sp} {rel}'s wedding"),
        adv_e={"venue": "Where was the gorgeous wedding {W} went to?"},
        gist=("attend a marriage ceremony", "attending a marriage ceremony", "attended a marriage ceremony"),
        adv={"venue": "Where did the ceremony {W} went to take place?"}),
    EType(
        "renovation",
        slots={"room": ("kitchen", "bathroom", "bedroom", "living room", "home office"),
               "change": (("We painted everything sage green", "painted it sage green"),
                          ("We ripped out the old carpet for wood floors", "replaced the carpet with wood floors"),
                          ("New lights and open shelves", "added new lights and open shelves")),
               "helper": (("My dad and I did it ourselves", "did it with {sp} dad"),
                          ("We hired a contractor, thank god", "hired a contractor"),
                          ("I did it all myself with YouTube tutorials", "did it alone"))},
        say=("We finally finished redoing the {room} {when}!", "{When} the {room} renovation was finally done.",
             "The {room} is finally done! We wrapped it up {when}."),
        ask=(("What did you change?", "{Change}."), ("Did you do it yourself?", "{Helper}.")),
        more=("It feels like a different apartment now.", "I never want to see a paint roller again."),
        facts={"_": "{S} finished renovating the {room} {date}.", "change": "In the {room}, {S} {change}.",
               "helper": "For the {room} renovation, {S} {helper}."},
        q={"room": ("Which part of the home did {S} remodel?",),
           "change": ("How does {S}'s remodeled space look different?",),
           "helper": ("Who did the remodeling work for {S}?",)},
        qe={"room": ("Which room did {S} finish redoing?", "Which room renovation did {S} finish?")},
        gist_e=("finish the {room} renovation", "finishing the {room} renovation", "finished the {room} renovation"),
        adv_e={"room": "Which room did {W} finish redoing?"},
        gist=("remodel part of the home", "remodeling part of the home", "remodeled part of the home"),
        adv={"room": "Which part of the home did {W} remodel?"}),
    EType(
        "exam", kinds=("yesterday", "last_wd", "two_days", "three_days", "this_morning"),
        slots={"exam": ("the AWS certification exam", "a CPA exam section", "the PMP exam",
                        ("my driving test", "{sp} driving test"), "the project management exam"),
               "study": (("About three months of early mornings", "three months of early-morning study"),
                         ("Six weeks, every single evening", "six weeks of evening study"),
                         ("Honestly, barely two weeks", "about two weeks of study")),
               "feel": (("Harder, the last section was brutal", "found {exam} hard, especially the last section"),
                        ("Easier than I feared, actually", "found {exam} easier than feared"))},
        say=("I passed {exam} {when}!", "{When} I got the email: I passed {exam}!",
             "I found out {when} that I passed {exam}!"),
        ask=(("How long did you study?", "{Study}."), ("Was it as hard as people say?", "{Feel}.")),
        more=(("I'm framing the certificate, no shame.", "{S} is framing the certificate for {exam}."), "I celebrated with a very large pizza."),
        facts={"_": "{S} passed {exam} {date}.", "study": "{S} prepared for {exam} with {study}.",
               "feel": "{S} {feel}."},
        q={"exam": ("Which test did {S} get through?",),
           "study": ("How much preparation did {S} put in?",),
           "feel": ("How difficult did {S} find the test?",)},
        qe={"exam": ("Which exam did {S} pass?",)},
        gist_e=("pass {exam}", "passing {exam}", "passed {exam}"),
        adv_e={"exam": "Which exam did {W} pass?"},
        gist=("earn a qualification", "earning a qualification", "earned a qualification"),
        adv={"exam": "Which test did {W} get through?"}),
    EType(
        "lost", tone="annoyed", pro="it", kinds=("yesterday", "last_wd", "two_days", "this_morning"),
        slots={"item": ("wallet", "car key", "passport", "phone", "laptop bag"),
               "found": (("It was in the pocket of my other jacket the whole time", "found in the pocket of another jacket"),
                         ("Someone turned it in at the cafe", "returned after someone turned it in at a cafe"),
                         ("Nope, I had to cancel and replace everything", "never recovered"))},
        say=("I lost my {item} {when}, total panic.", "{When} I realized my {item} was gone.",
             "So {when} I lost my {item}. Classic me."),
        ask=(("Oh no, did you find it?", "{Found}."),),
        more=(("Lesson learned, I'm getting one of those tracker tags.", "{S} plans to get a tracker tag after losing {sp} {item}."), "{Found}, so that's that."),
        facts={"_": "{S} lost {sp} {item} {date}.", "found": "{S}'s {item} was {found}."},
        q={"item": ("What did {S} misplace?",), "found": ("Did {S} ever recover the missing belonging?",)},
        qe={"item": ("What did {S} realize was gone?", "What was the item {S} lost?")},
        gist_e=("lose {sp} {item}", "losing {sp} {item}", "lost {sp} {item}"),
        adv_e={"item": "What was the item {W} lost?"},
        gist=("misplace something important", "misplacing something important", "misplaced something important"),
        adv={"item": "What did {W} misplace?"}),
    EType(
        "appliance", tone="annoyed", pro="it", kinds=("yesterday", "last_wd", "two_days", "three_days"),
        slots={"app": ("washing machine", "fridge", "dishwasher", "boiler", "oven"),
               "issue": (("It started leaking all over the floor", "started leaking"),
                         ("It made a horrible grinding noise and died", "made a grinding noise and stopped"),
                         ("It just won't turn on anymore", "stopped turning on")),
               "fix": (("The repair guy said they'd call me back next week", "was waiting for the repair service to call back"),
                       ("They said it's cheaper to buy a new one, so I did", "replaced it with a new one"),
                       ("My neighbor fixed it with a screwdriver and a video tutorial", "had a neighbor fix it"))},
        say=("My {app} broke {when}, perfect timing.", "{When} my {app} just died on me.",
             "Of course my {app} decided to break {when}."),
        ask=(("What happened to it?", "{Issue}."), ("Can it be fixed?", "{Fix}.")),
        more=("{Fix}.", "I've been doing everything by hand like it's 1850."),
        facts={"_": "{S}'s {app} broke down {date}.", "issue": "{S}'s {app} {issue}.",
               "fix": "After the {app} broke, {S} {fix}."},
        q={"app": ("Which household machine stopped working for {S}?",),
           "issue": ("What went wrong with {S}'s household machine?",),
           "fix": ("How was {S}'s household machine problem resolved?",)},
        qe={"app": ("What broke at {S}'s place?", "Which appliance died on {S}?")},
        gist_e=("have {sp} {app} break", "having {sp} {app} break", "had {sp} {app} break"),
        adv_e={"app": "Which appliance broke at {W}'s place?"},
        gist=("deal with a broken appliance", "dealing with a broken appliance", "dealt with a broken appliance"),
        adv={"app": "Which household machine stopped working for {W}?"}),
    EType(
        "restaurant", tone="fun", rep=2, kinds=("yesterday", "last_wd", "last_weekend", "two_days"),
        rows=({"rest": "Saffron House", "cuisine": "Persian", "dish": ("The lamb stew with saffron rice", "lamb stew")},
              {"rest": "Nonna Rosa", "cuisine": "Italian", "dish": ("The truffle gnocchi", "truffle gnocchi")},
              {"rest": "Little Tokyo Bar", "cuisine": "Japanese", "dish": ("A giant bowl of tonkotsu", "tonkotsu ramen")},
              {"rest": "Casa Verde", "cuisine": "Mexican", "dish": ("The mole enchiladas", "mole enchiladas")},
              {"rest": "The Smoke Pit", "cuisine": "barbecue", "dish": ("Brisket, obviously", "brisket")},
              {"rest": "Golden Lotus", "cuisine": "Vietnamese", "dish": ("The crispy pancakes", "banh xeo")}),
        say=("We tried {rest} {when}, the new {cuisine} place.", "{When} I finally got a table at {rest}.",
             "{When} we had dinner at {rest}, the {cuisine} place everyone's talking about."),
        ask=(("What did you get?", "{Dish}, I'd go back just for that."),),
        more=("{Dish} was the best thing I've eaten all month.", ("The line was ridiculous, though.", "{S} found the line at {rest} very long.")),
        facts={"_": "{S} ate at {rest} {date}.", "cuisine": "{rest}, which {S} tried, serves {cuisine} food.",
               "dish": "At {rest}, {S} ordered {dish}."},
        q={"rest": ("Which eatery did {S} check out?",), "dish": ("What did {S} order at the eatery?",)},
        qe={"rest": ("Where did {S} have dinner?", "Where did {S} finally get a table?"),
            "dish": ("What was the best thing {S} had at {rest}?",)},
        gist_e=("try {rest}", "trying {rest}", "tried {rest}"),
        adv_e={"dish": "What was the best thing {W} ate at the restaurant?"},
        count_e="How many new places did {S} try?",
        gist=("eat out somewhere new", "eating out somewhere new", "ate out somewhere new"),
        wq=("When did {S} eat at {rest}?",),
        adv={"dish": "What did {W} order at the eatery?"},
        count="How many eateries did {S} mention checking out?"),
    EType(
        "show", tone="fun", rep=2, kinds=("yesterday", "last_weekend", "last_week", "two_days"),
        slots={"show": ("Harbor Lights", "The Long Winter", "Night Shift", "Orbit", "The Bakers",
                        "Quiet Water"),
               "genre": (("a slow-burn mystery", "a slow-burn mystery"), ("a space drama", "a space drama"),
                         ("a cozy comedy", "a cozy comedy"), ("a true crime docuseries", "a true crime documentary series")),
               "verdict": (("So good, I'm already rewatching it", "loved it enough to rewatch it"),
                           ("Good, but the finale was a mess", "disliked the finale"))},
        say=("I binged all of {show} {when}, zero regrets.", "{When} I watched the whole first season of {show} in one go.",
             "I finished {show} {when}, I'm obsessed."),
        ask=(("What's it about?", "It's {genre}, trust me."), ("Is it good?", "{Verdict}.")),
        more=("I need someone to talk about it with.", "It's {genre}, right up my alley."),
        facts={"_": "{S} binge-watched {show} {date}.", "genre": "{show}, which {S} watched, is {genre}.",
               "verdict": "About {show}, {S} {verdict}."},
        q={"show": ("Which series did {S} get hooked on?",), "genre": ("What genre is the series {S} got hooked on?",),
           "verdict": ("What was {S}'s opinion of the series?",)},
        qe={"show": ("Which show did {S} binge?", "What show is {S} obsessed with?")},
        gist_e=("binge {show}", "bingeing {show}", "binged {show}"),
        adv_e={"show": "Which show did {W} binge?"},
        count_e="How many shows did {S} binge?",
        gist=("devour a TV series", "devouring a TV series", "devoured a TV series"),
        adv={"show": "Which series did {W} get hooked on?"},
        count="How many series did {S} bring up?"),
    EType(
        "camping", tone="fun", kinds=("last_weekend", "two_weekends", "last_week", "couple_weeks"),
        slots={"spot": ("Lake Tahoe", "a state park up north", "Pine Ridge", "a lake two hours away",
                        "the coast near Big Sur"),
               "incident": (("A raccoon stole our entire bag of marshmallows", "a raccoon stole the marshmallows"),
                            ("It rained all night and the tent leaked", "the tent leaked in the rain"),
                            ("We saw the Milky Way, it was unreal", "they saw the Milky Way")),
               "with": (("My partner and our neighbors", "with {sp} partner and neighbors"),
                        ("Three friends from work", "with three coworkers"))},
        say=("We went camping at {spot} {when}.", "{When} I spent two nights camping at {spot}.",
             "Just got back from camping at {spot}, we went {when}."),
        ask=(("How was it?", "{Incident}."), ("Who went?", "{With}.")),
        more=("I still smell like campfire smoke.", "{Incident}, I'm still laughing about it."),
        facts={"_": "{S} went camping at {spot} {date}.", "incident": "While {S} was camping at {spot}, {incident}.",
               "with": "{S} went camping {with}."},
        q={"spot": ("Where did {S} pitch a tent?",), "incident": ("What memorable thing happened on {S}'s outdoor trip?",),
           "with": ("Who joined {S} in the wilderness?",)},
        qe={"spot": ("Where did {S} go camping?",),
            "incident": ("What is {S} still laughing about from the camping trip?",)},
        gist_e=("go camping at {spot}", "going camping at {spot}", "went camping at {spot}"),
        adv_e={"spot": "Where did {W} go camping?", "incident": "What is {W} still laughing about from the camping trip?"},
        gist=("spend nights in the wilderness", "spending nights in the wilderness", "spent nights in the wilderness"),
        adv={"incident": "What memorable thing happened on {W}'s outdoor trip?", "spot": "Where did {W} pitch a tent?"}),
    EType(
        "gym",
        slots={"gym": ("Ironworks Gym", "FitHub on Main Street", "the YMCA", "Pulse Fitness", "a CrossFit box near work"),
               "trainer": STAFF,
               "goal": (("do ten pull-ups by summer", "doing ten pull-ups by summer"),
                        ("deadlift my body weight", "deadlifting {sp} body weight"),
                        ("just feel stronger, honestly", "feeling stronger"))},
        say=("I joined {gym} {when}.", "{When} I signed up at {gym}, new me.",
             "I finally got a gym membership at {gym} {when}."),
        ask=(("Do you have a trainer?", "Yes, {trainer}. Very intense."), ("What's the goal?", "I want to {goal}.")),
        more=("I can barely walk down stairs today.", "{Trainer} is making me do lunges, it's cruel."),
        facts={"_": "{S} joined {gym} {date}.", "trainer": "{S}'s personal trainer is {trainer}.",
               "goal": "{S}'s fitness goal is {goal}."},
        q={"gym": ("Which fitness center is {S} a member of?",), "trainer": ("Who coaches {S} during workouts?",),
           "goal": ("What is {S} aiming for with the workouts?",)},
        qe={"gym": ("Which gym did {S} join?",),
            "trainer": ("Who is {S}'s very intense trainer?", "Who is making {S} do lunges?")},
        gist_e=("join {gym}", "joining {gym}", "joined {gym}"),
        adv_e={"gym": "Which gym did {W} join?", "trainer": "Who is making {W} do lunges at the gym?"},
        gist=("become a member of a fitness center", "becoming a member of a fitness center",
              "became a member of a fitness center"),
        adv={"trainer": "Who coaches {W} during workouts?", "gym": "Which fitness center is {W} a member of?"}),
    EType(
        "baby", tone="aww", pro="baby", family=("sister", "brother"),
        slots={"weight": ("seven pounds", "eight pounds", "six and a half pounds")},
        say=("My {rel} {name} just had a baby {when}! I'm an {auntuncle} now.",
             "{When} I became an {auntuncle}! My {rel} {name} had a little {kid}.",
             "Big news: my {rel} {name} had a baby {when}, so I'm an {auntuncle}!"),
        ask=(("Aww! What's the baby's name?", "{Baby}. {P} has so much hair already."),
             ("How big was {p}?", "{Weight}, totally healthy.")),
        more=(("I already bought way too many tiny clothes.", "{S} bought a lot of baby clothes for {sp} {niecenephew}."), "I held {po} for an hour and didn't move."),
        facts={"_": "{S} became an {auntuncle} {date} when {sp} {rel} {name} had a baby.",
               "baby": "{S}'s {niecenephew} is named {baby}.", "weight": "{S}'s {niecenephew} weighed {weight} at birth."},
        q={"baby": ("What did {S}'s sibling call the newborn?",),
           "weight": ("How heavy was the newborn in {S}'s family?",)},
        qe={"baby": ("What is the name of {S}'s {niecenephew}, the baby with so much hair?",),
            "weight": ("How big was the healthy baby in {S}'s family?",)},
        gist_e=("become an {auntuncle}", "becoming an {auntuncle}", "became an {auntuncle}"),
        adv_e={"baby": "What is the name of {W}'s new niece or nephew with so much hair?"},
        gist=("gain a niece or nephew", "gaining a niece or nephew", "gained a niece or nephew"),
        adv={"baby": "What did {W}'s sibling call the newborn?"}),
    EType(
        "interview", tone="neutral", kinds=("yesterday", "last_wd", "two_days", "this_morning"),
        slots={"firm": ("Greenline Energy", "Atlas Robotics", "Maple Street Bank", "Lumen Media", "Redwood Labs"),
               "feel": (("Pretty well, I think? They laughed at my jokes", "thought it went well"),
                        ("Not great, I blanked on one question", "thought it went badly")),
               "next": (("They said they'd call me back next week", "expected to hear back within a week"),
                        ("They want me back for a second round", "was invited to a second round"))},
        say=("I had a job interview at {firm} {when}.", "{When} I interviewed at {firm}, fingers crossed.",
             "I had an interview at {firm} {when}, my first one in years."),
        ask=(("How did it go?", "{Feel}."), ("When will you hear back?", "{Next}.")),
        more=("{Next}.", ("I wore my lucky shirt, for what it's worth.", "{S} wore a lucky shirt to the interview at {firm}.")),
        facts={"_": "{S} had a job interview at {firm} {date}.", "feel": "After the interview at {firm}, {S} {feel}.",
               "next": "After interviewing at {firm}, {S} {next}."},
        q={"firm": ("Which firm was {S} being considered by?",),
           "feel": ("How does {S} think the hiring conversation went?",),
           "next": ("What are the next steps in {S}'s application?",)},
        qe={"firm": ("Where did {S} have a job interview?",)},
        gist_e=("have a job interview at {firm}", "having a job interview at {firm}", "had a job interview at {firm}"),
        adv_e={"firm": "Where did {W} have a job interview?"},
        upd_e=("What did {S} hear back from {firm}?",),
        gist=("meet with a potential employer", "meeting with a potential employer", "met with a potential employer"),
        adv={"firm": "Which firm was {W} being considered by?"},
        upd=(("I heard back from {firm}: they went with someone else.",
              "{S} was not selected by {firm} {asof}.",
              "What was the outcome of {S}'s application?", "bad"),)),
]
ETYPE_BY_KEY = {et.key: et for et in ETYPES}

# ---------------------------------------------------------------------------------------
# Interests (preferences revealed across sessions)
# ---------------------------------------------------------------------------------------

INTERESTS = {
    "hiking": dict(m=(
        ("Did a six-hour hike on Sunday, my legs are still complaining.", "{S} enjoys long hikes and recently did a six-hour one."),
        ("There's a waterfall loop up north I want to do next, it's supposed to be gorgeous.", "{S} wants to hike a waterfall loop trail up north."),
        ("Nothing beats being on a mountain trail at 7 am with a thermos of coffee.", "{S} loves early-morning mountain hikes."),
        ("My hiking boots finally fell apart after four years, so I bought new ones.", "{S} has been hiking for years and bought new hiking boots.")),
        od_e=("Would {S}, who loves mountain trails, enjoy a weekend in a national park?",), adv_e="Which trail does {W} want to hike next?", both="love hiking",
        od=("Would {S} enjoy a weekend in a national park?", "Would a trekking pole set make a good present for {S}?"),
        adv="How long has {W} been into hiking?"),
    "pottery": dict(m=(
        ("Made a very lopsided bowl at my pottery class again, haha.", "{S} takes a pottery class."),
        ("I finally got the hang of the wheel on Thursday, my mug actually looks like a mug.", "{S} is learning to throw on the pottery wheel and made a mug."),
        ("The studio is doing a glaze night soon and I'm way too excited about it.", "{S} is looking forward to a glaze night at the pottery studio."),
        ("I gave my mom one of my bowls and she uses it every day now.", "{S} made a bowl in pottery class and gave it to {sp} mom.")),
        od_e=("Would {S}, who takes a pottery class, enjoy a ceramics workshop?",), adv_e="What has {W} made in pottery class?", both="take pottery classes",
        od=("Would {S} enjoy a ceramics workshop?", "Would {S} appreciate handmade clay tableware as a gift?"),
        adv="What has {W} been making at the studio lately?"),
    "jazz": dict(m=(
        ("Found an amazing jazz trio at a tiny bar downtown on Friday.", "{S} loves live jazz and found a jazz trio at a bar downtown."),
        ("I've had Kind of Blue on repeat all week, it never gets old.", "{S} listens to Miles Davis's Kind of Blue a lot."),
        ("There's a jazz festival coming up and I already have my pass.", "{S} bought a pass for a jazz festival."),
        ("Honestly, a Sunday with coffee and old Coltrane records is my ideal day.", "{S}'s ideal Sunday involves coffee and John Coltrane records.")),
        od_e=("Would {S} enjoy a night of live jazz at a club?",), adv_e="Which jazz records does {W} listen to?", both="love jazz",
        od=("What kind of music might {S} like as a birthday present?", "Would {S} enjoy an evening at a club with a saxophone quartet?"),
        adv="Which jazz musicians does {W} listen to?"),
    "boardgames": dict(m=(
        ("We played Catan until 2 am on Friday, I regret nothing.", "{S} enjoys board games and played Catan late into the night."),
        ("I just bought Wingspan, we have to play it next time.", "{S} bought the board game Wingspan."),
        ("Game night at my place is basically a weekly tradition now.", "{S} hosts a weekly board game night."),
        ("I lost at Ticket to Ride three times in a row, I'm still bitter.", "{S} plays Ticket to Ride with friends.")),
        od_e=("Would {S} be up for a board game night?",), adv_e="Which board games does {W} play?", both="love board games",
        od=("Would {S} be up for a tabletop strategy evening?", "Would a new card-and-dice title make a good present for {S}?"),
        adv="Which tabletop titles does {W} own?"),
    "gardening": dict(m=(
        ("My tomato plants are finally producing, I picked the first ones today.", "{S} grows tomatoes in {sp} garden."),
        ("I spent the whole morning weeding and repotting my basil.", "{S} enjoys gardening and grows basil."),
        ("The slugs ate half my lettuce, I'm declaring war.", "{S} grows lettuce and struggles with slugs."),
        ("I finally built a raised bed in the backyard.", "{S} built a raised garden bed in the backyard.")),
        od_e=("Would {S}, who grows tomatoes and basil, like a voucher for a plant nursery?",), adv_e="Which plants does {W} grow?", both="grow their own plants",
        od=("Would {S} like a voucher for a plant nursery?", "Would {S} enjoy visiting a botanical greenhouse?"),
        adv="What vegetables does {W} grow?"),
    "baking": dict(m=(
        ("My sourdough starter is finally bubbly, I'm naming it Doughbi.", "{S} bakes sourdough and keeps a starter."),
        ("I baked croissants from scratch on Sunday, it took all day.", "{S} enjoys baking and made croissants from scratch."),
        ("I brought cinnamon rolls to work and now everyone expects them weekly.", "{S} bakes cinnamon rolls for coworkers."),
        ("My loaf finally has a proper ear, I took about twenty photos of it.", "{S} is getting better at baking bread.")),
        od_e=("Would {S}, who bakes sourdough, enjoy a class on French pastry?",), adv_e="What does {W} bake from scratch?", both="bake from scratch",
        od=("Would {S} enjoy a class on French pastry?", "Would a stand mixer be a good present for {S}?"),
        adv="What does {W} like to make in the oven?"),
    "photography": dict(m=(
        ("I took my camera down to the harbor at sunrise, the light was unreal.", "{S} enjoys photography and shoots at sunrise."),
        ("I'm trying to learn manual mode properly, my photos are finally getting sharper.", "{S} is learning to use manual mode on {sp} camera."),
        ("One of my street photos got picked for a little local exhibition!", "{S}'s street photo was selected for a local exhibition."),
        ("I bought a used 35mm lens and it's already my favorite.", "{S} bought a used 35mm camera lens.")),
        od_e=("Would {S}, who takes photos at sunrise, enjoy a gallery show of landscape prints?",), adv_e="What kind of photos does {W} take with the camera?", both="take photos with a real camera",
        od=("Would {S} enjoy a gallery show of landscape prints?", "Would {S} value a new tripod as a present?"),
        adv="What kind of pictures does {W} like to shoot?"),
    "cycling": dict(m=(
        ("Rode 60 km along the coast on Saturday, the headwind was brutal.", "{S} is a keen cyclist and rode 60 km along the coast."),
        ("I finally got clipless pedals, I've only fallen over once.", "{S} started using clipless pedals on {sp} bike."),
        ("My cycling club is doing a century ride in the fall.", "{S} is part of a cycling club planning a 100-mile ride."),
        ("I commute by bike every day now, even in the rain.", "{S} commutes by bike daily.")),
        od_e=("Would {S}, who commutes by bike, appreciate a new helmet and jersey?",), adv_e="How far does {W} ride on the bike?", both="ride bikes",
        od=("Would {S} appreciate a new helmet and jersey?", "Would {S} enjoy following the Tour de France?"),
        adv="How far does {W} usually pedal on weekends?"),
    "chess": dict(m=(
        ("I've been doing chess puzzles every night before bed.", "{S} plays chess and does puzzles nightly."),
        ("Won my first game at the chess club on Wednesday!", "{S} plays at a chess club and won a game there."),
        ("I'm obsessed with the Sicilian defense right now.", "{S} is studying the Sicilian defense in chess."),
        ("My online rating finally broke 1500.", "{S}'s online chess rating passed 1500.")),
        od_e=("Would {S} enjoy a book of classic chess games?",), adv_e="What is {W}'s online chess rating?", both="play chess",
        od=("Would {S} enjoy a book of classic grandmaster games?", "Would {S} like to enter a strategy tournament?"),
        adv="What level has {W} reached on the chessboard?"),
    "yoga": dict(m=(
        ("Hot yoga at 6 am is brutal, but I feel amazing after.", "{S} does early-morning hot yoga."),
        ("I finally held a crow pose for ten seconds!", "{S} practices yoga and can hold crow pose."),
        ("My yoga teacher is doing a weekend retreat and I'm very tempted.", "{S} is considering a yoga retreat."),
        ("I do twenty minutes of stretching on my mat every morning now.", "{S} stretches on a yoga mat every morning.")),
        od_e=("Would {S}, who does hot yoga, enjoy a quiet meditation weekend in the mountains?",), adv_e="Which yoga poses can {W} hold?", both="do yoga",
        od=("Would {S} enjoy a quiet meditation weekend in the mountains?", "Would a pilates or mobility class appeal to {S}?"),
        adv="Which poses has {W} mastered?"),
    "scifi": dict(m=(
        ("I'm halfway through the Expanse books and I can't stop.", "{S} is reading the Expanse science fiction series."),
        ("Just reread Dune, it holds up so well.", "{S} loves Dune and reread it."),
        ("Any good space opera recommendations? I've run out.", "{S} is looking for space opera recommendations."),
        ("Le Guin is still my favorite author, nobody comes close.", "{S}'s favorite author is Ursula Le Guin.")),
        od_e=("Would {S}, who loves Dune and space opera, enjoy a novel about interstellar colonies?",), adv_e="Who is {W}'s favorite author?", both="read space opera books",
        od=("Would {S} enjoy a novel about interstellar colonies?", "What genre of fiction would make a good present for {S}?"),
        adv="Who is {W}'s favorite science fiction writer?"),
    "vinyl": dict(m=(
        ("Found a first pressing of Rumours at the flea market for ten bucks!", "{S} collects vinyl records and found a first pressing of Rumours."),
        ("My record shelf is officially full, I need a new one.", "{S} has a large vinyl record collection."),
        ("I spent all Saturday digging through crates at the record store.", "{S} spends Saturdays browsing record stores."),
        ("I finally upgraded my turntable needle, everything sounds warmer.", "{S} upgraded the needle on {sp} turntable.")),
        od_e=("Would {S}, who collects vinyl, like to spend a free morning at a record store in a new city?",), adv_e="What is the best find in {W}'s record collection?", both="collect records",
        od=("Where might {S} like to spend a free morning in a new city?", "Would {S} appreciate a gift card for a secondhand music shop?"),
        adv="What is the best find in {W}'s album collection?"),
    "climbing": dict(m=(
        ("Finally sent that V4 at the bouldering gym!", "{S} goes bouldering and completed a V4 problem."),
        ("My forearms are destroyed from climbing last night.", "{S} climbs regularly."),
        ("We're doing an outdoor climbing trip in the spring.", "{S} is planning an outdoor climbing trip."),
        ("I bought my own climbing shoes, they're painfully tight.", "{S} bought {sp} own climbing shoes.")),
        od_e=("Is {S}, who goes climbing, likely to be comfortable with heights?",), adv_e="What grade can {W} climb at the bouldering gym?", both="go climbing",
        od=("Is {S} likely to be comfortable with heights?", "Would {S} enjoy a via ferrata route in the Alps?"),
        adv="What grade can {W} handle on the wall?"),
    "birds": dict(m=(
        ("Saw a kingfisher by the river this morning, first one ever!", "{S} is a birdwatcher and spotted a kingfisher."),
        ("My bird list for the year is at 84 species.", "{S} keeps a yearly list of bird species seen."),
        ("I got new binoculars, and now I spend way too long staring at hedges.", "{S} bought new binoculars for birdwatching."),
        ("There's a pair of owls nesting near my street, I check on them every evening.", "{S} watches a pair of owls nesting nearby.")),
        od_e=("Would {S}, who keeps a bird list, enjoy a trip to a wetland reserve?",), adv_e="How many bird species has {W} seen this year?", both="watch birds",
        od=("Would {S} enjoy a trip to a wetland reserve?", "Would a field guide to wildlife make a good present for {S}?"),
        adv="How many species has {W} spotted this year?"),
    "astronomy": dict(m=(
        ("Clear skies last night, I could see Saturn's rings through my telescope.", "{S} has a telescope and observed Saturn's rings."),
        ("I drove out of the city to escape the light pollution for the meteor shower.", "{S} drove out of the city to watch a meteor shower."),
        ("I'm saving up for a bigger telescope, the one I have is tiny.", "{S} is saving for a bigger telescope."),
        ("You can see the space station pass overhead, I check the times every week.", "{S} tracks when the International Space Station passes overhead.")),
        od_e=("Would {S}, who has a telescope, enjoy a planetarium show?",), adv_e="What has {W} seen through the telescope?", both="look at the sky through a telescope",
        od=("Would {S} enjoy a planetarium show?", "Would {S} like a cabin getaway far from city lights?"),
        adv="What has {W} been looking at in the night sky?"),
    "knitting": dict(m=(
        ("I'm halfway through a sweater for my nephew, the sleeves are killing me.", "{S} knits and is making a sweater for {sp} nephew."),
        ("Knitting on the train is the only thing keeping me sane right now.", "{S} knits during the train commute."),
        ("I bought way too much yarn at the market again.", "{S} buys a lot of yarn."),
        ("I finished my first pair of socks! They're a bit uneven.", "{S} knitted {sp} first pair of socks.")),
        od_e=("Would {S}, who loves knitting, like a voucher for a yarn shop?",), adv_e="What is {W} knitting right now?", both="enjoy knitting",
        od=("Would {S} like a voucher for a wool and fiber shop?", "Would {S} enjoy a crafting retreat?"),
        adv="What garment is {W} working on with needles?"),
    "surfing": dict(m=(
        ("Caught my first proper green wave on Saturday!", "{S} surfs and caught a first green wave."),
        ("The water was freezing this morning, but the waves were perfect.", "{S} surfs in the mornings even in cold water."),
        ("I'm looking at a new board, my foamie is getting too easy.", "{S} is shopping for a new surfboard."),
        ("Every morning I check the surf forecast before anything else.", "{S} checks the surf forecast every morning.")),
        od_e=("Would {S}, who checks the surf forecast every morning, enjoy a coastal holiday in Portugal?",), adv_e="Where does {W} go to surf?", both="surf",
        od=("Would {S} enjoy a coastal holiday in Portugal?", "Would a wetsuit make a good present for {S}?"),
        adv="Where does {W} usually ride the swell?"),
    "videogames": dict(m=(
        ("I've sunk forty hours into Zelda this month, no regrets.", "{S} plays video games and has spent forty hours on Zelda."),
        ("Stayed up way too late finishing Hades again.", "{S} enjoys playing Hades."),
        ("My Switch is basically glued to my hands on weekends.", "{S} plays the Nintendo Switch on weekends."),
        ("I'm building a ridiculous castle in Minecraft with my cousins.", "{S} plays Minecraft with {sp} cousins.")),
        od_e=("Would {S}, who plays Zelda on the Switch, like a new console as a present?",), adv_e="Which games has {W} been playing on the Switch?", both="play games on the Switch",
        od=("Would {S} like a new console as a present?", "Would {S} enjoy a gaming convention?"),
        adv="Which titles has {W} been playing on the Switch?"),
    "wine": dict(m=(
        ("We did a wine tasting at a little vineyard on Saturday, I bought three bottles.", "{S} enjoys wine tasting and visited a vineyard."),
        ("I'm really into natural wines lately, especially the orange ones.", "{S} likes natural and orange wines."),
        ("I joined a wine club, they send two bottles every month.", "{S} is a member of a wine club."),
        ("Pinot noir is still my favorite, nothing beats it.", "{S}'s favorite wine is pinot noir.")),
        od_e=("Would {S} enjoy a wine tasting tour in Napa?",), adv_e="Which wine does {W} like best?", both="love wine",
        od=("Would {S} enjoy a tour of a winery in Napa?", "Would a decanter be a good present for {S}?"),
        adv="Which grape variety does {W} prefer?"),
    "crosswords": dict(m=(
        ("Finished the Saturday crossword without any help, I'm unstoppable.", "{S} does crossword puzzles and finished a Saturday one alone."),
        ("My morning routine is coffee and the daily crossword, in that order.", "{S} does the daily crossword every morning."),
        ("I've started making my own crosswords for friends, it's harder than it looks.", "{S} creates crossword puzzles for friends."),
        ("I got stuck on one clue all day yesterday, it was an anagram, of course.", "{S} enjoys word puzzles and anagram clues.")),
        od_e=("Would {S}, who does the daily crossword, enjoy a book of cryptic word games?",), adv_e="Which crossword does {W} finish every morning?", both="do crosswords",
        od=("Would {S} enjoy a book of cryptic word games?", "Would {S} like a subscription to a puzzle magazine?"),
        adv="Which grid puzzle does {W} solve every day?"),
    "classical": dict(m=(
        ("The symphony did Mahler's Fifth on Friday, I cried a little.", "{S} attends the symphony and loves Mahler."),
        ("I've got Bach's cello suites on every morning while I work.", "{S} listens to Bach's cello suites while working."),
        ("I finally got season tickets for the orchestra.", "{S} has season tickets for the orchestra."),
        ("Chopin nocturnes are my go-to when I can't sleep.", "{S} listens to Chopin nocturnes to fall asleep.")),
        od_e=("Would {S}, who has season tickets for the orchestra, enjoy a night at the opera?",), adv_e="Which symphony moved {W} to tears?", both="listen to Bach and Chopin",
        od=("Would {S} enjoy a night at the opera?", "What kind of performance tickets would make a good present for {S}?"),
        adv="Which composer moved {W} to tears recently?"),
    "football": dict(m=(
        ("Did anyone see the match on Sunday? What a last-minute goal!", "{S} follows football closely."),
        ("I've had a season ticket for my local club for six years.", "{S} has held a season ticket for the local football club for six years."),
        ("My team lost again, I'm not talking about it.", "{S} supports a football club that has been losing."),
        ("Five-a-side with my coworkers every Tuesday, it's the highlight of my week.", "{S} plays five-a-side football with coworkers on Tuesdays.")),
        od_e=("Would {S}, who has a season ticket for the local club, want to watch a cup final at a pub?",), adv_e="How long has {W} had a season ticket for the local club?", both="follow their club's matches",
        od=("Would {S} want to watch a big cup final at a pub?", "Would a scarf in club colors make a good present for {S}?"),
        adv="How long has {W} supported the local side?"),
}
INTEREST_KEYS = list(INTERESTS)

# ---------------------------------------------------------------------------------------
# Small talk
# ---------------------------------------------------------------------------------------

GREET = ("Hey {others}! How's it going?", "Hi {others}, long time no chat!",
         "Hey! Happy {weekday}!", "Hiya! Got a minute to catch up?", "Hey {others}, how was your week?",
         "Hello hello! What's new with you?", "{Daypart}, {others}!", "Hey {others}, I missed this chat.")
GREET_REPLY = ("Hey {A}! Pretty good, just tired. You?", "Hi! Doing well, thanks. Busy week though.",
               "Hey! All good here, can't complain.", "Honestly, a weird week, but I'm okay. How about you?",
               "Hey hey! Just got home, so perfect timing.", "Hi {A}! Surviving, mostly, haha.",
               "Hi! I was just thinking about you.")
GREET_THIRD = ("Hi both! Just catching up on the chat.", "Hey you two! Sorry, I'm late as usual.",
               "Hi everyone! I'm here, I'm here.")
GREET_BACK = ("Same here, it's been a long one.", "Glad to hear it!", "Doing alright, thanks for asking.",
              "Ha, same. I need a nap.")
WEATHER = {
    "winter": ("It's freezing here, I can't feel my fingers.", "We got snow overnight, everything is white.",
               "It's been gray and drizzly for a week straight.",
               "The heating in my building is broken again, so I'm wearing two sweaters."),
    "spring": ("It finally feels like spring here!", "It rained all day, but at least things are turning green.",
               "The cherry trees on my street are blooming, it's so pretty.",
               "It can't decide if it's winter or spring here."),
    "summer": ("It's so hot here, I'm melting.", "Thunderstorms every afternoon this week, wild.",
               "It's a perfect evening, I'm sitting on the balcony.",
               "My apartment has no AC, so I basically live in front of a fan."),
    "autumn": ("The leaves are turning already, it's so pretty.", "It's gotten dark so early, I hate it.",
               "Sweater weather is officially back.", "It's been windy and rainy all week."),
}
WEATHER_REPLY = ("Ugh, same here.", "Lucky you, it's the opposite here.", "Sounds lovely, honestly.",
                 "Ha, that's very on brand for this time of year.")
WORK = ("Work has been nonstop this week.", "I have so many meetings tomorrow, send help.",
        "My inbox is a disaster right now.", "I've been working late every day, I need a break.",
        "My brain is completely done for the week.")
WORK_REPLY = ("Hang in there!", "Oof, that sounds exhausting.", "Same, it's been a lot.",
              "You need a proper day off, {A}.")
INTERLUDE = (("Sorry, my internet is being weird tonight.", "No worries, we can see you now."),
             ("Hold on, someone's at the door. Ok, back!", "Haha, welcome back."),
             ("I need more coffee, honestly.", "Same, always."),
             ("I'm eating cereal for dinner, don't judge.", "Zero judgment, that's a classic."),
             ("Ugh, my neighbor is vacuuming at this hour.", "At this time? Bold."),
             ("Wait, did you get the photos I sent?", "Yes! Loved them."),
             ("Ok, I need to hear everyone's news.", "Ha, ok, where do I start?"),
             ("This chat is my favorite part of the week, honestly.", "Aww, same."))
REACT = {
    "good": ("That's awesome, so happy for you!", "Haha no way!", "Congrats, {O}! That's huge.",
             "Oh I love that!", "Wow, that's so exciting!", "Amazing, you totally deserve it.",
             "Yay! That's the best news.", "Okay, that's really cool.", "Oh my gosh, {O}!",
             "This made my day, haha."),
    "bad": ("Oh no, I'm so sorry, {O}.", "Ugh, that sounds awful.", "That's rough, I hope it gets better soon.",
            "Sending hugs!", "Oh no! Are you okay?", "That's the worst, I'm sorry."),
    "annoyed": ("Ugh, that's so annoying.", "Noooo, of course it did.", "That's so frustrating, {O}.",
                "Oh no, the timing!", "Classic. I'm sorry, {O}."),
    "wistful": ("Aww, that's always the hardest part.", "Oh no, the post-visit quiet is the worst.",
                "Aw, I know that feeling."),
    "fun": ("Ooh, fun!", "That sounds amazing.", "Love that for you.", "Okay, I'm jealous.", "Oh nice, {O}!",
            "Haha, amazing.", "That sounds like the best time."),
    "plan": ("Ooh, exciting!", "That's going to be great.", "Fun! Keep us posted.", "Oh nice, tell us how it goes!",
             "Fingers crossed it all goes perfectly!"),
    "interest": ("Ha, that sounds like you.", "Love that.", "You're so dedicated, honestly.",
                 "I need to try that sometime.", "Ha, of course you did, {O}.", "Okay, that's really cool."),
    "aww": ("Aww, congrats!", "Oh my gosh, that's adorable!", "Aww, I love this!", "Stop, that's so cute!",
            "Yay, {O}!"),
    "neutral": ("Oh nice.", "Huh, interesting!", "Ha, that sounds like you.", "Fair enough!", "Oh cool.",
                "Love that.", "Ha, classic {O}.", "Nice, good for you."),
}
THANKS = {
    "good": ("Thanks! I'm still a bit in shock, honestly.", "Haha thank you!", "Thanks, {L}!",
             "Right? I'm so happy about it.", "Thank you, it's been a long time coming."),
    "bad": ("Thanks, I'll survive.", "Thank you, it's already a bit better.", "Thanks {L}, I appreciate it."),
    "neutral": ("Haha, I know.", "Thanks, {L}.", "Right?"),
    "aww": ("I know, I'm completely smitten.", "Thank you! I'm obsessed already."),
    "fun": ("It really was!", "Haha, I know, I'm still buzzing.", "Right? Highly recommend."),
    "plan": ("I'll report back!", "Thanks, {L}!", "I can't wait."),
    "annoyed": ("Thanks, it's fine, just annoying.", "Right? Never a dull moment."),
}
CLOSE = {"any": ("Anyway, I should get going. Talk soon!", "Okay, I have to run, but this was fun!",
                 "Let's catch up again soon!"),
         "day": ("Alright, back to work for me. Bye!", "Gotta run to a meeting. Bye!"),
         "evening": ("Gotta go make dinner. Catch you later!", "Okay, dinner's ready, I'm off!"),
         "night": ("I'm falling asleep, good night!", "I need to get some sleep. Night!")}
CLOSE_REPLY = {"any": ("Bye {A}! Take care.", "Talk soon!", "See you, {A}!", "Bye! This was nice.", "Later!"),
               "night": ("Night! Sleep well.", "Good night, {A}!")}
SHARE_PREFIX = ("Oh, same here! ", "Ha, I'm the same. ", "Okay, we need to talk about this. ")

# ---------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------


class Speaker:
    """A member of a conversation group."""

    def __init__(self, name, gender):
        self.name, self.gender = name, gender
        self.interests = []
        self.family = {}          # relation -> (name, gender)

    def pronouns(self):
        f = self.gender == "f"
        return {"sp": "her" if f else "his", "ss": "she" if f else "he", "so": "her" if f else "him",
                "auntuncle": "aunt" if f else "uncle"}


class Event:
    """One occurrence of an event type for one speaker."""

    def __init__(self, eid, et, owner, session, plan, when, vals, pron, extras):
        self.eid, self.et, self.owner, self.session, self.plan = eid, et, owner, session, plan
        self.phrase, self.date_text, self.date = when
        self.vals, self.pron, self.extras = vals, pron, extras
        self.revealed = {}        # slot -> [turn ids]
        self.slot_facts = {}      # slot -> [fact ids]
        self.stmt = None
        self.main_fact = None
        self.updates = []         # dicts: turn, fact, question, link_turns, link_facts


class Group:
    """A conversation group = one account."""

    def __init__(self, index, speakers, seed):
        self.index = index
        self.code = "c%02d" % index
        self.account = "t_conv/user/u_c%02d" % index
        self.split = "dev" if index in DEV_GROUPS else "test"
        self.speakers = speakers
        self.rng = random.Random(seed)
        self.sessions = []        # dicts: id, moment, participants, turns
        self.turns = []           # dicts: id, session, speaker, text, ms, small
        self.facts = []           # dicts: id, session, speaker, text, ms, evidence
        self.events = []
        self.pending = []         # scheduled updates
        self.mentions = {}        # (speaker, interest) -> [(turn id, fact id)]
        self.mention_order = {}   # (speaker, interest) -> remaining mention indexes
        self.used_values = {}     # (type, slot) -> [values]
        self.questions = []
        self.kinds = []           # "category/sub-kind" of each question, same order

    def speaker(self, name):
        return next(s for s in self.speakers if s.name == name)


# ---------------------------------------------------------------------------------------
# Building conversations
# ---------------------------------------------------------------------------------------


def season(month):
    """Northern-hemisphere season of a month."""
    return ("winter", "winter", "spring", "spring", "spring", "summer", "summer", "summer",
            "autumn", "autumn", "autumn", "winter")[month - 1]


def listify(names):
    """'Leo', 'Leo and Priya', 'Leo, Priya and Omar'."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


class Block:
    """Turns waiting to be committed: (speaker, template, mapping, small, tag)."""

    def __init__(self):
        self.items = []

    def add(self, speaker, template, mapping, small=False, tag=None):
        self.items.append((speaker, template, mapping, small, tag))

    def __len__(self):
        return len(self.items)


def commit(g, session, block):
    """Append a block's turns to the session; returns [(turn id, template, tag)]."""
    out = []
    for speaker, template, mapping, small, tag in block.items:
        index = len(session["turns"])
        tid = "%s-t%04d" % (g.code, len(g.turns) + 1)
        text = fill(template, mapping)
        turn = {"id": tid, "session": session["id"], "speaker": speaker, "text": text,
                "ms": to_ms(session["moment"]) + index * TURN_STEP_MS, "small": small}
        g.turns.append(turn)
        session["turns"].append(turn)
        out.append((tid, template, tag))
    return out


def add_fact(g, session, about, template, mapping, evidence):
    """Create one extracted fact; returns its id."""
    fid = "%s-f%04d" % (g.code, len(g.facts) + 1)
    g.facts.append({"id": fid, "session": session["id"], "speaker": about,
                    "text": fill(template, mapping), "ms": to_ms(session["moment"]),
                    "evidence": sorted(set(evidence))})
    return fid


def pick(rng, session, options):
    """Choose a line, avoiding lines already said in this session when possible."""
    fresh = [o for o in options if o not in session["said"]]
    line = rng.choice(fresh or list(options))
    session["said"].append(line)
    return line


def small_mapping(session, speaker, others):
    """Mapping for small-talk templates said by `speaker`."""
    moment = session["moment"]
    daypart = "Good morning" if moment.hour < 12 else ("Good evening" if moment.hour >= 18 else "Good afternoon")
    return {"others": listify(others), "weekday": WEEKDAYS[moment.weekday()], "daypart": daypart,
            "A": others[0] if others else speaker}


def opening(g, session, rng):
    """Greeting exchange, sometimes weather or work talk."""
    parts = session["participants"]
    a = rng.choice(parts)
    rest = [p for p in parts if p != a]
    b = Block()
    b.add(a, pick(rng, session, GREET), small_mapping(session, a, rest), True)
    b.add(rest[0], pick(rng, session, GREET_REPLY), {"A": a}, True)
    if len(rest) > 1 and rng.random() < 0.5:
        b.add(rest[1], pick(rng, session, GREET_THIRD), {}, True)
    if rng.random() < 0.3:
        b.add(a, pick(rng, session, GREET_BACK), {}, True)
    r = rng.random()
    if r < 0.3:
        w = rng.choice(parts)
        b.add(w, pick(rng, session, WEATHER[season(session["moment"].month)]), {}, True)
        b.add(rng.choice([p for p in parts if p != w]), pick(rng, session, WEATHER_REPLY), {}, True)
    elif r < 0.45:
        w = rng.choice(parts)
        b.add(w, pick(rng, session, WORK), {}, True)
        b.add(rng.choice([p for p in parts if p != w]), pick(rng, session, WORK_REPLY), {"A": w}, True)
    commit(g, session, b)


def interlude(g, session, rng):
    """A two-turn aside with no information."""
    parts = session["participants"]
    a = rng.choice(parts)
    line, reply = pick(rng, session, INTERLUDE)
    b = Block()
    b.add(a, line, {}, True)
    b.add(rng.choice([p for p in parts if p != a]), reply, {}, True)
    return b


def closing(rng, session):
    """Sign-off block (two or three turns), matching the time of day."""
    parts = session["participants"]
    hour = session["moment"].hour
    part = "day" if hour < 17 else ("evening" if hour < 20 else "night")
    a = rng.choice(parts)
    b = Block()
    line = pick(rng, session, CLOSE["any"] + CLOSE[part])
    b.add(a, line, {}, True)
    replies = CLOSE_REPLY["any"] + (CLOSE_REPLY["night"] if line in CLOSE["night"] else ())
    rest = [p for p in parts if p != a]
    rng.shuffle(rest)
    for p in rest[: 1 + (len(rest) > 1 and rng.random() < 0.4)]:
        b.add(p, pick(rng, session, replies), {"A": a}, True)
    return b


def pick_value(g, et, slot, values, rng):
    """Pick a slot value, preferring ones not yet used for this event type in the group."""
    used = g.used_values.setdefault((et.key, slot), [])
    fresh = [v for v in values if v not in used]
    value = rng.choice(fresh or list(values))
    used.append(value)
    return value


def family_member(g, owner, rel, rng):
    """Name and gender of an owner's relative, created on first mention."""
    if rel not in owner.family:
        gender = REL_GENDER[rel] or rng.choice("fm")
        pool = FAMILY_F if gender == "f" else FAMILY_M
        taken = [n for n, _ in owner.family.values()]
        owner.family[rel] = (rng.choice([n for n in pool if n not in taken]), gender)
    return owner.family[rel]


PRON = {"f": {"p": "she", "pp": "her", "po": "her"}, "m": {"p": "he", "pp": "his", "po": "him"},
        "n": {"p": "it", "pp": "its", "po": "it"}}


def new_event(g, session, owner, et, rng):
    """Instantiate an event of type `et` for `owner` in `session` (not yet said)."""
    plan = bool(et.plan) and rng.random() < 0.35
    when = relative_date(rng, session["moment"], et.pkinds if plan else et.kinds)
    vals, extras = {}, {}
    if et.rows:
        for k, v in pick_value(g, et, "_row", et.rows, rng).items():
            vals[k] = v if isinstance(v, tuple) else (v, v)
    for slot, values in et.slots.items():
        v = pick_value(g, et, slot, values, rng)
        vals[slot] = v if isinstance(v, tuple) else (v, v)
    gender = "n"
    if et.family:
        rel = rng.choice(et.family)
        name, gender = family_member(g, owner, rel, rng)
        vals["rel"], vals["name"] = (rel, rel), (name, name)
    if et.pro == "pet":
        gender = rng.choice("fm")
    if et.pro == "baby":
        gender = rng.choice("fm")
        baby = pick_value(g, et, "baby", BABIES_F if gender == "f" else BABIES_M, rng)
        vals["baby"] = (baby, baby)
        extras = {"kid": "girl" if gender == "f" else "boy", "niecenephew": "niece" if gender == "f" else "nephew"}
    pron = dict(PRON[gender])
    eid = "%s-e%03d" % (g.code, len(g.events) + 1)
    return Event(eid, et, owner, session, plan, when, vals, pron, extras)


def turn_map(ev, listener=None):
    """Mapping for chat lines about an event."""
    m = {k: v[0] for k, v in ev.vals.items()}
    m.update(ev.pron)
    m.update(ev.extras)
    m.update(ev.owner.pronouns())
    m["when"] = ev.phrase
    m["O"], m["L"] = ev.owner.name, listener or ev.owner.name
    return m


def fact_map(ev, date_text=None, asof=None):
    """Mapping for fact and question templates about an event (third person)."""
    m = {k: v[1] for k, v in ev.vals.items()}
    m.update(ev.pron)
    m.update(ev.extras)
    m.update(ev.owner.pronouns())
    m["S"] = ev.owner.name
    m["date"] = date_text or ev.date_text
    m["edate"] = ev.date_text
    m["asof"] = asof or ""
    return m


def slots_of(et, template):
    """Slots of `et` that a template mentions."""
    return [s for s in placeholders(template) if s in et.slot_names or s.lower() in et.slot_names
            or (s[:1].lower() + s[1:]) in et.slot_names]


def norm_slot(name):
    return name[:1].lower() + name[1:]


STMT_PREFIX = ("Oh, and ", "Anyway, ", "Also, ", "Okay, so ", "Oh, speaking of news, ")


def with_prefix(template, rng):
    """Chain a statement to the previous topic: 'We moved...' -> 'Oh, and we moved...'."""
    if ":" in template or "?" in template:
        return template
    if template.startswith(("So ", "So, ")):
        template = template.split(" ", 1)[1]
    if template.startswith("{"):
        template = "{" + template[1].lower() + template[2:]
    elif not template.startswith(("I ", "I'")):
        template = template[0].lower() + template[1:]
    return rng.choice(STMT_PREFIX) + template


def event_block(g, session, ev, rng):
    """Statement, questions and answers, follow-ups and reactions about a new event."""
    et, owner = ev.et, ev.owner.name
    tone = "plan" if ev.plan else et.tone
    listeners = [p for p in session["participants"] if p != owner]
    lst = rng.choice(listeners)
    tm = turn_map(ev, lst)
    b = Block()
    stmt = rng.choice(et.plan if ev.plan else et.say)
    if session["turns"] and any(ev2.session is session for ev2 in g.events) and rng.random() < 0.35:
        stmt = with_prefix(stmt, rng)
    b.add(owner, stmt, tm, tag="stmt")
    revealed = [norm_slot(s) for s in slots_of(et, b.items[0][1])]
    asks = [] if ev.plan else [a for a in et.ask if any(norm_slot(s) not in revealed for s in slots_of(et, a[1]))]
    rng.shuffle(asks)
    n_ask = min(len(asks), rng.choice((1, 2, 2, 2)))
    more = [] if ev.plan else list(et.more)
    early_more = more and rng.random() < 0.25
    if early_more:
        line = rng.choice([m for m in more if not any(norm_slot(s) in revealed for s in slots_of(et, m))] or more)
        b.add(owner, line, tm, tag="more")
        revealed += [norm_slot(s) for s in slots_of(et, line)]
        more.remove(line)
    react_first = rng.random() < 0.55
    for i, (question, answer) in enumerate(asks[:n_ask]):
        if all(norm_slot(s) in revealed for s in slots_of(et, answer)):
            continue
        asker = lst if i == 0 or len(listeners) == 1 else rng.choice(listeners)
        qm = dict(tm, O=owner)
        if i == 0 and react_first and "!" not in question and rng.random() < 0.5:
            b.add(asker, pick(rng, session, REACT[tone]) + " " + question, qm, tag="ask")
            react_first = False
        else:
            if i == 0 and react_first:
                b.add(asker, pick(rng, session, REACT[tone]), qm, True)
                react_first = False
            b.add(asker, question, qm, tag="ask")
        b.add(owner, answer, dict(tm, L=asker), tag="answer")
        revealed += [norm_slot(s) for s in slots_of(et, answer)]
    if react_first:
        b.add(lst, pick(rng, session, REACT[tone]), dict(tm, O=owner), True)
        if rng.random() < 0.3:
            b.add(owner, pick(rng, session, THANKS[tone]), dict(tm, L=lst), True)
    if more and not early_more and rng.random() < 0.55:
        fresh = [m for m in more if slots_of(et, m) and not any(norm_slot(s) in revealed for s in slots_of(et, m))]
        plain = [m for m in more if not slots_of(et, m)]
        pool = fresh if fresh and rng.random() < 0.65 else (plain or fresh)
        if pool:
            line = rng.choice(pool)
            b.add(owner, line, tm, tag="more")
            revealed += [norm_slot(s) for s in slots_of(et, line)]
    if rng.random() < 0.5:                   # closing reaction; a mishap may have been resolved
        other = rng.choice(listeners)
        b.add(other, pick(rng, session, REACT["neutral" if tone == "annoyed" else tone]), dict(tm, O=owner), True)
    return b


def register_event(g, session, ev, committed):
    """Record which turns reveal which slots and extract the event's facts."""
    et = ev.et
    g.events.append(ev)
    order = []
    for tid, template, tag in committed:
        if tag == "stmt":
            ev.stmt = tid
        if tag in ("stmt", "answer", "more"):
            for s in slots_of(et, template):
                s = norm_slot(s)
                ev.revealed.setdefault(s, []).append(tid)
                if s not in order:
                    order.append(s)
    fm = fact_map(ev)
    main = et.pf if ev.plan else et.facts["_"]
    ev.main_fact = add_fact(g, session, ev.owner.name, main, fm, [ev.stmt])
    for s in slots_of(et, main):
        ev.slot_facts.setdefault(norm_slot(s), []).append(ev.main_fact)
    for s in order:
        if s in et.facts and s not in et.core:
            fid = add_fact(g, session, ev.owner.name, et.facts[s], fm, [ev.stmt] + ev.revealed[s])
            for s2 in slots_of(et, et.facts[s]):
                ev.slot_facts.setdefault(norm_slot(s2), []).append(fid)
    for tid, template, tag in committed:
        if tag == "more" and template in et.more_facts:
            add_fact(g, session, ev.owner.name, et.more_facts[template], fm, [ev.stmt, tid])
    if ev.plan and et.done:
        g.pending.append({"ev": ev, "ready": session["index"] + 1, "after": ev.date, "done": True})
    elif et.upd and g.rng.random() < 0.4:
        g.pending.append({"ev": ev, "ready": session["index"] + g.rng.randint(1, 5), "after": ev.date, "done": False})


def update_block(g, session, item, rng):
    """A later mention of an earlier event: optional ping by a friend, the update, a reaction."""
    ev = item["ev"]
    et, owner = ev.et, ev.owner.name
    known = list(ev.revealed) + et.core
    pool = et.done if item["done"] else et.upd
    options = [u for u in pool if item["done"] or all(norm_slot(s) in known for s in slots_of(et, u[0]))]
    if not options:
        return None, None
    text, fact, question = rng.choice(options)[:3]
    tone = next((o[3] for o in options if o[0] == text and len(o) > 3), None)
    listeners = [p for p in session["participants"] if p != owner]
    lst = rng.choice(listeners)
    when = relative_date(rng, session["moment"], RECENT)
    tm = dict(turn_map(ev, lst), when=when[0])
    b = Block()
    pings = [p for p in et.ping if all(norm_slot(s) in known for s in slots_of(et, p))]
    if pings and rng.random() < 0.6:
        b.add(lst, rng.choice(pings), dict(tm, O=owner), tag="ping")
    b.add(owner, text, tm, tag="update")
    reactions = REACT[tone] if tone else REACT["good"] + ("Oh nice.", "Love that.", "Nice, good for you.")
    b.add(rng.choice(listeners), pick(rng, session, reactions), dict(tm, O=owner), True)
    return b, (text, fact, question, when)


def register_update(g, session, ev, committed, spec):
    """Record an update turn, its fact, and the links back to the original event."""
    text, fact, question, when = spec
    et = ev.et
    tid = next(t for t, _, tag in committed if tag == "update")
    linked = [norm_slot(s) for s in slots_of(et, text) if norm_slot(s) in ev.revealed]
    new = [norm_slot(s) for s in slots_of(et, text) if norm_slot(s) not in ev.revealed]
    link_turns = sorted(set(t for s in linked for t in ev.revealed[s])) or [ev.stmt]
    link_facts = sorted(set(f for s in linked for f in ev.slot_facts.get(s, []))) or [ev.main_fact]
    fm = fact_map(ev, date_text=when[1], asof="as of " + day_text(session["moment"].date()))
    fid = add_fact(g, session, ev.owner.name, fact, fm, [tid] + link_turns)
    for s in linked + new:
        ev.revealed.setdefault(s, []).append(tid)
        ev.slot_facts.setdefault(s, []).append(fid)
    ev.updates.append({"turn": tid, "fact": fid, "question": question, "echo": et.upd_e.get(text),
                       "link_turns": link_turns,
                       "link_facts": link_facts, "date": when[2] if "{when}" in text else None})


def interest_block(g, session, spk, key, rng):
    """A speaker brings up one of their interests; a friend who shares it may chime in."""
    b = Block()
    idx = g.mention_order[(spk.name, key)].pop(0)
    b.add(spk.name, INTERESTS[key]["m"][idx][0], {}, tag=("mention", spk.name, key, idx))
    listeners = [p for p in session["participants"] if p != spk.name]
    sharers = [p for p in listeners if key in g.speaker(p).interests and g.mention_order[(p, key)]]
    if sharers and rng.random() < 0.6:
        other = sharers[0]
        j = g.mention_order[(other, key)].pop(0)
        b.add(other, pick(rng, session, SHARE_PREFIX) + INTERESTS[key]["m"][j][0], {}, tag=("mention", other, key, j))
    else:
        b.add(rng.choice(listeners), pick(rng, session, REACT["interest"]), {"O": spk.name}, True)
    return b


def register_mentions(g, session, committed):
    """Extract one preference fact per interest mention."""
    for tid, _, tag in committed:
        if isinstance(tag, tuple) and tag[0] == "mention":
            _, name, key, idx = tag
            fm = dict(g.speaker(name).pronouns(), S=name)
            fid = add_fact(g, session, name, INTERESTS[key]["m"][idx][1], fm, [tid])
            g.mentions.setdefault((name, key), []).append((tid, fid))


def choose_type(g, owner, rng, avoid):
    """Pick an event type for `owner`, favouring types another speaker already had."""
    counts, own = {}, {}
    for ev in g.events:
        counts[ev.et.key] = counts.get(ev.et.key, 0) + 1
        if ev.owner is owner:
            own[ev.et.key] = own.get(ev.et.key, 0) + 1
    allowed = [et for et in ETYPES if et.key not in avoid and own.get(et.key, 0) < et.rep
               and counts.get(et.key, 0) < (4 if et.rep > 1 else 3)]
    others = [et for et in allowed if counts.get(et.key, 0) and not own.get(et.key, 0)]
    fresh = [et for et in allowed if not counts.get(et.key, 0)]
    r = rng.random()
    if others and r < 0.5:
        return rng.choice(others)
    if fresh and r < 0.92:
        return rng.choice(fresh)
    return rng.choice(allowed) if allowed else None


def build_session(g, index, moment, rng):
    """Generate one chat session: opening, blocks about news and interests, closing."""
    n = 3 if len(g.speakers) > 2 and rng.random() < 0.4 else 2
    pool = list(g.speakers)
    if rng.random() < 0.75:
        parts = [pool[0]] + rng.sample(pool[1:], n - 1)
    else:
        parts = rng.sample(pool[1:], n) if len(pool) > n else rng.sample(pool, n)
    parts = [s.name for s in g.speakers if s in parts]
    session = {"id": "%s-s%02d" % (g.code, index + 1), "index": index, "moment": moment,
               "participants": parts, "turns": [], "said": []}
    g.sessions.append(session)
    target = rng.randint(24, 32)
    opening(g, session, rng)
    close = closing(rng, session)
    queue = []
    for item in list(g.pending):
        ev = item["ev"]
        if ev.owner.name in parts and index >= item["ready"] and moment.date() > item["after"] and len(queue) < 2:
            queue.append(("update", item))
            g.pending.remove(item)
    cands = [(len(g.mentions.get((p, k), [])), p, k) for p in parts for k in g.speaker(p).interests
             if g.mention_order[(p, k)]]
    cands.sort(key=lambda c: (c[0], parts.index(c[1]), INTEREST_KEYS.index(c[2])))
    for _, p, k in cands[: rng.choice((0, 1, 1, 1, 2))]:
        queue.append(("interest", (p, k)))
    rng.shuffle(queue)
    used_types = []
    while True:
        room = min(target, 32) - len(session["turns"]) - len(close)
        if room < 3:
            break
        r = rng.random()
        if queue and r < 0.45:
            kind, arg = queue.pop(0)
        elif 0.45 <= r < 0.56 and len(session["turns"]) > 4:
            kind, arg = "interlude", None
        else:
            kind, arg = "event", None
        if kind == "interlude":
            block = interlude(g, session, rng)
            if len(block) <= room:
                commit(g, session, block)
            continue
        if kind == "interest":
            p, k = arg
            if not g.mention_order[(p, k)]:
                continue
            block = interest_block(g, session, g.speaker(p), k, rng)
            if len(block) > room:
                for _, _, _, _, tag in block.items:
                    if isinstance(tag, tuple):
                        g.mention_order[(tag[1], tag[2])].insert(0, tag[3])
                continue
            register_mentions(g, session, commit(g, session, block))
            continue
        if kind == "update":
            block, spec = update_block(g, session, arg, rng)
            if block is not None and len(block) <= room:
                register_update(g, session, arg["ev"], commit(g, session, block), spec)
            continue
        owner = g.speaker(rng.choice(parts))
        et = choose_type(g, owner, rng, used_types)
        if et is None:
            break
        ev = new_event(g, session, owner, et, rng)
        block = event_block(g, session, ev, rng)
        if len(block) > room + 1 or len(session["turns"]) + len(block) + len(close) > 32:
            if room <= 4:
                break
            continue
        used_types.append(et.key)
        register_event(g, session, ev, commit(g, session, block))
    while len(session["turns"]) + len(close) < 20:
        commit(g, session, interlude(g, session, rng))
    commit(g, session, close)


def build_group(index, speakers, seed):
    """Generate all sessions of one conversation group."""
    g = Group(index, speakers, seed)
    rng = g.rng
    keys = list(INTEREST_KEYS)
    rng.shuffle(keys)
    for i, spk in enumerate(speakers):
        spk.interests = keys[2 * i: 2 * i + 2]
    speakers[1].interests[1] = speakers[0].interests[0]
    if len(speakers) == 4:
        speakers[3].interests[1] = speakers[2].interests[0]
    holders = {}
    for spk in speakers:
        for k in spk.interests:
            holders.setdefault(k, []).append(spk.name)
    for k, names in holders.items():           # a shared interest: each holder has own lines
        order = list(range(len(INTERESTS[k]["m"])))
        rng.shuffle(order)
        for j, name in enumerate(names):
            g.mention_order[(name, k)] = order[j::len(names)]
    moment = dt.datetime(2023, 1, 4) + dt.timedelta(days=rng.randint(0, 150))
    n_sessions = rng.randint(19, 21)
    for si in range(n_sessions):
        start = moment.replace(hour=rng.choice((8, 9, 12, 13, 17, 18, 19, 20, 21)),
                               minute=rng.choice((0, 5, 10, 20, 30, 40, 45, 50)))
        build_session(g, si, start, rng)
        moment = moment + dt.timedelta(days=rng.randint(9, 20))
    return g


# ---------------------------------------------------------------------------------------
# Questions
# ---------------------------------------------------------------------------------------

STOP = set("""
a about above after again against all also am an and any are aren as at be because been before
being below between both but by can cannot could couldn did didn do does doesn doing don down
during each even ever few for from further get gets got had hadn has hasn have haven having he
her here hers herself him himself his how i if in into is isn it its itself just let ll me more
most much must my myself no nor not now of off on once one only or other ought our ours
ourselves out over own re s same shan she should shouldn so some such t than that the their
theirs them themselves then there these they this those through to too under until up us ve
very was wasn we were weren what when where which while who whom whose why will with won would
wouldn you your yours yourself yourselves oh ok okay yeah yes haha really honestly still
already like way lot lots thing things something anything everything new old good great make
made go went going come came take took say said tell told know think want well back first two
three four five six seven eight nine ten many long day days week weeks time ago last next
""".split())


def stem(word):
    """Crude suffix stripping; a final 'e' goes and a final 'y' becomes 'i' (move/moved, try/tried)."""
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) >= 4 and word.endswith("e"):
        word = word[:-1]
    if len(word) >= 3 and word.endswith("y"):
        word = word[:-1] + "i"
    return word


def content_words(text):
    """Stemmed content words of a text, without stop words and person names."""
    out = []
    for token in re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower()):
        token = token.split("'")[0]
        if token in STOP or token in PERSON_NAMES or not token:
            continue
        w = stem(token)
        if w not in out:
            out.append(w)
    return out


def overlap(question, turn_texts):
    """Largest number of content words the question shares with one evidence turn."""
    q = content_words(question)
    best = 0
    for text in turn_texts:
        body = text.split(": ", 1)[1] if ": " in text else text
        best = max(best, len([w for w in content_words(body) if w in q]))
    return best


def ambiguous(g, ev):
    """True when the owner had another event of the same type (needs a qualifier)."""
    return any(e is not ev and e.et is ev.et and e.owner is ev.owner for e in g.events)


def qualify(g, ev, text):
    """Append 'in <month>' to a question about a repeated event type, or None if unusable."""
    if not ambiguous(g, ev):
        return text
    same = [e for e in g.events if e.et is ev.et and e.owner is ev.owner]
    if any(e is not ev and month_text(e.date) == month_text(ev.date) for e in same):
        return None
    return text[:-1] + " in " + month_text(ev.date) + "?"


class Candidates:
    """Collects candidate questions: (kind "category/sub", text, turns, facts, source key, echo).

    `echo` is True when the question comes from an echo template (reuses the chat's words)."""

    def __init__(self):
        self.items = []

    def add(self, kind, text, turns, facts, key, echo=False):
        if text:
            self.items.append((kind, text, sorted(set(turns)), sorted(set(facts)), key, echo))


def wordings(et, para, echo):
    """[(template, echo?)] for a paraphrase template tuple and an echo template tuple."""
    return [(t, False) for t in para] + [(t, True) for t in echo]


def gist(et, ev, form, echo):
    """Verb phrase for an event: paraphrase gist, or the echo gist filled for that event."""
    if not echo:
        return et.gist[form]
    if not et.gist_e:
        return None
    text = fill(et.gist_e[form], fact_map(ev))            # fill() capitalises; a gist is mid-sentence
    return text[:1].lower() + text[1:]


def qualify_same(g, ev, template):
    """Fill an echo template; add 'in <month>' only if the owner's other event of the type reads the same."""
    text = fill(template, fact_map(ev))
    same = [e for e in g.events if e is not ev and e.et is ev.et and e.owner is ev.owner]
    if any(fill(template, fact_map(e)) == text for e in same):
        return qualify(g, ev, text)
    return text


def owners_of_type(g):
    """Event type key -> names of the speakers who had such an event."""
    out = {}
    for ev in g.events:
        names = out.setdefault(ev.et.key, [])
        if ev.owner.name not in names:
            names.append(ev.owner.name)
    return out


def single_hop(g, c):
    """One detail of one event; evidence = the turns stating it (may be pronoun-only)."""
    for ev in g.events:
        fm = fact_map(ev)
        for slot in ev.revealed:
            for t, echo in wordings(ev.et, ev.et.q.get(slot, ()), ev.et.qe.get(slot, ())):
                text = qualify_same(g, ev, t) if echo else qualify(g, ev, fill(t, fm))
                c.add("single_hop/slot", text, ev.revealed[slot], ev.slot_facts.get(slot, []), ev.eid, echo)


def multi_hop(g, c):
    """Updates tied to their event, people named by one event and asked about another,
    everyone who had an event type, counts of repeated events, shared interests."""
    for ev in g.events:
        for u in ev.updates:
            for t, echo in wordings(ev.et, (u["question"],), (u["echo"],) if u["echo"] else ()):
                text = qualify_same(g, ev, t) if echo else qualify(g, ev, fill(t, fact_map(ev)))
                c.add("multi_hop/update", text, [u["turn"]] + u["link_turns"], [u["fact"]] + u["link_facts"],
                      ev.eid + "u", echo)
    for a in g.events:
        if not a.et.who or a.et.who[1] not in a.revealed:
            continue
        dslot = a.et.who[1]
        if any(e is not a and e.et is a.et and e.vals.get(dslot) == a.vals[dslot] for e in g.events):
            continue
        desc = fill(a.et.who[0], fact_map(a))
        desc = desc[:1].lower() + desc[1:]
        for b in g.events:
            if b.owner is not a.owner or b.et is a.et or ambiguous(g, b):
                continue
            for slot in b.revealed:
                for t, echo in wordings(b.et, b.et.q.get(slot, ()), b.et.qe.get(slot, ())):
                    if "{S}" in t and "{S}'s" not in t:
                        text = fill(t.replace("{S}", "@@"), fact_map(b)).replace("@@", desc)
                        c.add("multi_hop/chain", text, a.revealed[dslot] + b.revealed[slot],
                              a.slot_facts.get(dslot, []) + b.slot_facts.get(slot, []), a.eid + b.eid, echo)
    owners = owners_of_type(g)
    for et in ETYPES:
        evs = [e for e in g.events if e.et is et]
        if len(owners.get(et.key, [])) >= 2:
            pasts = [(et.gist[2], False)]
            if et.gist_e and not placeholders(et.gist_e[2]):     # echo gist without slots
                pasts.append((et.gist_e[2], True))
            for past, echo in pasts:
                for t in ("Which people in the group {past}?", "Who among the friends {past}?"):
                    c.add("multi_hop/everyone", fill(t, {"past": past}), [e.stmt for e in evs],
                          [e.main_fact for e in evs], "all-" + et.key, echo)
        for spk in g.speakers:
            mine = [e for e in evs if e.owner is spk]
            for t, echo in wordings(et, (et.count,) if et.count else (), (et.count_e,) if et.count_e else ()):
                if len(mine) >= 2:
                    c.add("multi_hop/count", fill(t, {"S": spk.name}), [e.stmt for e in mine],
                          [e.main_fact for e in mine], "count-" + et.key + spk.name, echo)
    names = [s.name for s in g.speakers]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for k in INTEREST_KEYS:
                both = g.mentions.get((a, k), []) and g.mentions.get((b, k), [])
                ms = g.mentions.get((a, k), []) + g.mentions.get((b, k), [])
                para = ("What pastime do {A} and {B} have in common?", "Which hobby is shared by {A} and {B}?")
                for t, echo in wordings(None, para, ("Do {A} and {B} both %s?" % INTERESTS[k]["both"],)):
                    if both:
                        c.add("multi_hop/shared", fill(t, {"A": a, "B": b}), [m[0] for m in ms],
                              [m[1] for m in ms], "share-" + a + b, echo)


def temporal(g, c, rng):
    """When did X happen; how long between two events; what happened in a month; which first."""
    for ev in g.events:
        fm = fact_map(ev)
        facts = [ev.main_fact] + [u["fact"] for u in ev.updates if ev.plan]
        for t in ("When did {S} %s?" % ev.et.gist[0], "On what date did {S} %s?" % ev.et.gist[0]):
            c.add("temporal/when", qualify(g, ev, fill(t, fm)), [ev.stmt], facts, ev.eid + "w")
        if ev.et.gist_e:                     # echo: the event in the chat's words
            c.add("temporal/when", qualify_same(g, ev, "When did {S} %s?" % ev.et.gist_e[0]), [ev.stmt], facts,
                  ev.eid + "w", True)
        for t in ev.et.wq:                   # names the place or title: echo
            c.add("temporal/when", fill(t, fm), [ev.stmt], facts, ev.eid + "w", True)
    for spk in g.speakers:
        mine = sorted([e for e in g.events if e.owner is spk and not ambiguous(g, e)], key=lambda e: (e.date, e.eid))
        for i, a in enumerate(mine):
            for b in mine[i + 1:]:
                if (b.date - a.date).days >= 10 and a.et is not b.et:
                    for echo in (False, True):
                        ga, gb = gist(a.et, a, 1, echo), gist(b.et, b, 0, echo)
                        if ga and gb:
                            text = "How long after %s did %s %s?" % (ga, spk.name, gb)
                            c.add("temporal/gap", text, [a.stmt, b.stmt], [a.main_fact, b.main_fact],
                                  "gap" + a.eid + b.eid, echo)
        by_month = {}                        # month -> [(turn, fact)] of dated events and updates
        for e in g.events:
            if e.owner is spk:
                by_month.setdefault(month_text(e.date), []).append((e.stmt, e.main_fact))
                for u in e.updates:
                    if u["date"]:
                        by_month.setdefault(month_text(u["date"]), []).append((u["turn"], u["fact"]))
        for month, items in by_month.items():
            for t in ("What did %s do in %s?", "What was %s up to during %s?"):
                if len(items) <= 3:
                    c.add("temporal/month", t % (spk.name, month), [i[0] for i in items], [i[1] for i in items],
                          "month" + spk.name + month)
    solo = [e for e in g.events if not ambiguous(g, e)]
    for i, a in enumerate(solo):
        for b in solo[i + 1:]:
            far = abs((a.date - b.date).days) >= 20
            if a.owner is not b.owner and a.et is not b.et and far and rng.random() < 0.08:
                for echo in (False, True):
                    ga, gb = gist(a.et, a, 1, echo), gist(b.et, b, 1, echo)
                    if ga and gb:
                        text = "Which happened first: %s %s or %s %s?" % (a.owner.name, ga, b.owner.name, gb)
                        c.add("temporal/order", text, [a.stmt, b.stmt], [a.main_fact, b.main_fact],
                              "order" + a.eid + b.eid, echo)


def open_domain(g, c):
    """Inference from revealed interests (or a telling event) rather than lookup."""
    for spk in g.speakers:
        for k in spk.interests:
            ms = g.mentions.get((spk.name, k), [])
            for t, echo in wordings(None, INTERESTS[k]["od"], INTERESTS[k]["od_e"]) if len(ms) >= 2 else ():
                c.add("open_domain/interest", fill(t, {"S": spk.name}), [m[0] for m in ms], [m[1] for m in ms],
                      "od" + spk.name + k, echo)
    for ev in g.events:
        for t, echo in wordings(ev.et, ev.et.od, ev.et.od_e):
            c.add("open_domain/event", fill(t, fact_map(ev)), [ev.stmt], [ev.main_fact], "od" + ev.eid, echo)


def adversarial(g, c):
    """Attribute an event or interest to someone who never had it; evidence = the true owners'."""
    owners = owners_of_type(g)
    for et in ETYPES:
        evs = [e for e in g.events if e.et is et]
        slots = list(et.adv) + [s for s in et.adv_e if s not in et.adv]
        for slot in slots:
            hits = [e for e in evs if slot in e.revealed]
            for spk in g.speakers if hits else ():
                if spk.name in owners.get(et.key, []):
                    continue
                para = (et.adv[slot],) if slot in et.adv else ()
                for t, echo in wordings(et, para, et.adv_e.get(slot, ())):
                    c.add("adversarial/event", fill(t, {"W": spk.name}), [x for e in hits for x in e.revealed[slot]],
                          [x for e in hits for x in e.slot_facts.get(slot, [])], "adv" + et.key + slot + spk.name,
                          echo)
    for k in INTEREST_KEYS:
        ms = [m for s in g.speakers for m in g.mentions.get((s.name, k), [])]
        for spk in g.speakers if ms else ():
            if k not in spk.interests:
                for t, echo in wordings(None, (INTERESTS[k]["adv"],), (INTERESTS[k]["adv_e"],)):
                    c.add("adversarial/interest", fill(t, {"W": spk.name}), [m[0] for m in ms],
                          [m[1] for m in ms], "adv" + k + spk.name, echo)


def candidates(g, rng):
    """All candidate questions of a group, every category."""
    c = Candidates()
    single_hop(g, c)
    multi_hop(g, c)
    temporal(g, c, rng)
    open_domain(g, c)
    adversarial(g, c)
    return c.items


def make_questions(g):
    """Filter candidates by the wording rules and sample the category mix, half of it echo."""
    rng = random.Random(SEED * 100 + g.index)
    turn_text = {t["id"]: t["speaker"] + ": " + t["text"] for t in g.turns}
    seen, pools, dropped = {}, {c: {} for c in CATEGORIES}, {"paraphrase": 0, "echo": 0}
    for cand in candidates(g, rng):
        kind, text, turns, facts, key, echo = cand
        if text in seen:
            continue
        seen[text] = True
        shared = overlap(text, [turn_text[t] for t in turns])
        if (echo and not 1 <= shared <= ECHO_MAX) or (not echo and shared > PARA_MAX):
            dropped["echo" if echo else "paraphrase"] += 1          # breaks its wording's rule
            continue
        cat, sub = kind.split("/")
        pools[cat].setdefault(sub, []).append((cat, text, turns, facts, key, sub, echo))
    total = rng.randint(140, 160)
    want = {c: round(total * MIX[c]) for c in MIX}
    want["adversarial"] = total - sum(want.values())
    chosen = []
    for cat in CATEGORIES:
        queues = []
        for sub in pools[cat]:
            pool = list(pools[cat][sub])
            rng.shuffle(pool)
            queues.append(pool)
        picked, keys, n_echo = [], [], 0
        while len(picked) < want[cat] and any(queues):
            for queue in queues:                     # round-robin over sub-kinds
                if queue and len(picked) < want[cat]:
                    echo = n_echo < ECHO_TARGET * (len(picked) + 1)      # the wording that is behind
                    # distinct sources first, then the wanted wording, then shuffled order
                    i = min(range(len(queue)), key=lambda i: (queue[i][4] in keys, queue[i][6] != echo, i))
                    cand = queue.pop(i)
                    picked.append(cand)
                    keys.append(cand[4])
                    n_echo += cand[6]
        chosen += picked
    rng.shuffle(chosen)
    for i, (cat, text, turns, facts, _, sub, echo) in enumerate(chosen):
        g.kinds.append(cat + "/" + sub)
        g.questions.append({"id": "%s-q%03d" % (g.code, i + 1), "account": g.account, "question": text,
                            "category": cat, "evidence_turns": turns, "evidence_facts": facts,
                            "split": g.split, "wording": "echo" if echo else "paraphrase"})
    return dropped


# ---------------------------------------------------------------------------------------
# Output, validation, summary
# ---------------------------------------------------------------------------------------


def turn_rows(g):
    for t in g.turns:
        yield {"id": t["id"], "account": g.account, "kind": "fact", "content": t["speaker"] + ": " + t["text"],
               "subject": {"scope": "primary_user"}, "valid_from": t["ms"], "status": "active", "tags": [],
               "session": t["session"], "speaker": t["speaker"]}


def fact_rows(g):
    for f in g.facts:
        yield {"id": f["id"], "account": g.account, "kind": "fact", "content": f["text"],
               "subject": {"scope": "primary_user"}, "valid_from": f["ms"], "status": "active", "tags": [],
               "session": f["session"], "speaker": f["speaker"], "evidence": f["evidence"]}


def check_text(text, problems, where):
    """ASCII printable, no double spaces, ends with punctuation, placeholders all filled."""
    if not all(32 <= ord(c) < 127 for c in text):
        problems.append("%s: non-ASCII text %r" % (where, text))
    if "  " in text or text != text.strip():
        problems.append("%s: bad spacing %r" % (where, text))
    if text[-1:] not in ".!?":
        problems.append("%s: no final punctuation %r" % (where, text))
    if "{" in text or "}" in text or "@@" in text:
        problems.append("%s: unfilled placeholder %r" % (where, text))


def validate(groups):
    """Raise ValueError listing every rule the generated set breaks."""
    problems = []
    ids = []
    for g in groups:
        owner_of = {}
        for t in g.turns:
            owner_of[t["id"]] = g.account
            check_text(t["speaker"] + ": " + t["text"], problems, t["id"])
        for f in g.facts:
            owner_of[f["id"]] = g.account
            check_text(f["text"], problems, f["id"])
            if not f["evidence"] or any(e not in owner_of or not e.startswith(g.code + "-t") for e in f["evidence"]):
                problems.append("%s: bad evidence %r" % (f["id"], f["evidence"]))
        ids += [t["id"] for t in g.turns] + [f["id"] for f in g.facts] + [q["id"] for q in g.questions]
        if not 16 <= len(g.sessions) <= 22:
            problems.append("%s: %d sessions" % (g.code, len(g.sessions)))
        for s in g.sessions:
            if not 20 <= len(s["turns"]) <= 32:
                problems.append("%s: %d turns" % (s["id"], len(s["turns"])))
            if not 2 <= len(s["participants"]) <= 3:
                problems.append("%s: %d speakers" % (s["id"], len(s["participants"])))
        if not 3 <= len(g.speakers) <= 4:
            problems.append("%s: %d speakers" % (g.code, len(g.speakers)))
        if not 130 <= len(g.questions) <= 170:
            problems.append("%s: %d questions" % (g.code, len(g.questions)))
        cats = [q["category"] for q in g.questions]
        for c in CATEGORIES:
            if c not in cats:
                problems.append("%s: no %s question" % (g.code, c))
        turn_text = {t["id"]: t["speaker"] + ": " + t["text"] for t in g.turns}
        for q in g.questions:
            check_text(q["question"], problems, q["id"])
            if not q["question"].endswith("?"):
                problems.append("%s: not a question" % q["id"])
            for key, prefix in (("evidence_turns", "-t"), ("evidence_facts", "-f")):
                ev = q[key]
                if not ev or any(owner_of.get(e) != q["account"] or prefix not in e for e in ev):
                    problems.append("%s: bad %s %r" % (q["id"], key, ev))
            shared = overlap(q["question"], [turn_text[t] for t in q["evidence_turns"]])
            if q["wording"] not in ("echo", "paraphrase"):
                problems.append("%s: bad wording %r" % (q["id"], q["wording"]))
            elif q["wording"] == "paraphrase" and shared > PARA_MAX:
                problems.append("%s: paraphrase shares %d content words with its evidence" % (q["id"], shared))
            elif q["wording"] == "echo" and not 1 <= shared <= ECHO_MAX:
                problems.append("%s: echo shares %d content words with its evidence" % (q["id"], shared))
        repeated = [k for k in ETYPE_BY_KEY if len(set(e.owner.name for e in g.events if e.et.key == k)) >= 2]
        if len(repeated) < 8:
            problems.append("%s: only %d event types shared by two speakers" % (g.code, len(repeated)))
    if len(ids) != len(set(ids)):
        problems.append("duplicate ids")
    n_turns = sum(len(g.turns) for g in groups)
    n_facts = sum(len(g.facts) for g in groups)
    n_q = sum(len(g.questions) for g in groups)
    if not 5000 <= n_turns <= 6000:
        problems.append("turn total %d" % n_turns)
    if not 2000 <= n_facts <= 2800:
        problems.append("fact total %d" % n_facts)
    if not 1350 <= n_q <= 1650:
        problems.append("question total %d" % n_q)
    small = sum(t["small"] for g in groups for t in g.turns) / n_turns
    if not 0.35 <= small <= 0.45:
        problems.append("small-talk share %.3f" % small)
    for split in ("dev", "test"):
        for c in CATEGORIES:
            qs = [q for g in groups for q in g.questions if q["split"] == split and q["category"] == c]
            share = sum(q["wording"] == "echo" for q in qs) / max(1, len(qs))
            if not 0.45 <= share <= 0.55:
                problems.append("%s %s: echo share %.2f" % (split, c, share))
    if problems:
        raise ValueError("validation failed:\n  " + "\n  ".join(problems[:50]))


def q_overlap(g, q):
    """Content words a question shares with its best-matching evidence turn."""
    return overlap(q["question"], [t["speaker"] + ": " + t["text"] for t in g.turns if t["id"] in q["evidence_turns"]])


def summary(groups, dropped):
    """Print per-group and per-split statistics."""
    print("conversation groups: %d (dev: %s)" % (len(groups), ", ".join("u_c%02d" % i for i in DEV_GROUPS)))
    print("  group  split  sessions  turns  facts  questions  dates                     speakers (owner first)")
    for g in groups:
        first, last = g.sessions[0]["moment"].date(), g.sessions[-1]["moment"].date()
        print("  %s    %-5s  %8d  %5d  %5d  %9d  %s .. %s  %s" % (
            g.code, g.split, len(g.sessions), len(g.turns), len(g.facts), len(g.questions),
            first.isoformat(), last.isoformat(), ", ".join(s.name for s in g.speakers)))
    n_turns = sum(len(g.turns) for g in groups)
    small = sum(t["small"] for g in groups for t in g.turns)
    print("totals: sessions %d, turns %d, facts %d, questions %d" % (
        sum(len(g.sessions) for g in groups), n_turns, sum(len(g.facts) for g in groups),
        sum(len(g.questions) for g in groups)))
    print("small-talk turns: %d of %d (%.1f%%)" % (small, n_turns, 100.0 * small / n_turns))
    shared = [len([k for k in ETYPE_BY_KEY if len(set(e.owner.name for e in g.events if e.et.key == k)) >= 2])
              for g in groups]
    print("events: %d of %d types (%d plans), %d later updates, %d interest mentions; types had by 2+ speakers "
          "per group: %d-%d" % (sum(len(g.events) for g in groups), len(ETYPES),
                                sum(e.plan for g in groups for e in g.events),
                                sum(len(e.updates) for g in groups for e in g.events),
                                sum(len(v) for g in groups for v in g.mentions.values()), min(shared), max(shared)))
    print("  category      total   dev  test  avg overlap  avg evidence turns")
    for c in CATEGORIES:
        qs = [(g, q) for g in groups for q in g.questions if q["category"] == c]
        dev = sum(1 for g, _ in qs if g.split == "dev")
        ov = sum(q_overlap(g, q) for g, q in qs)
        ev = sum(len(q["evidence_turns"]) for _, q in qs)
        print("  %-12s  %5d  %4d  %4d  %11.2f  %18.2f" % (c, len(qs), dev, len(qs) - dev, ov / len(qs), ev / len(qs)))
    kinds = {}
    for g in groups:
        for k in g.kinds:
            kinds[k] = kinds.get(k, 0) + 1
    for c in CATEGORIES:
        parts = ["%s %d" % (k.split("/")[1], n) for k, n in sorted(kinds.items()) if k.startswith(c + "/")]
        print("  %-12s  %s" % (c, ", ".join(parts)))
    print("wording (overlap = content words shared with the best evidence turn):")
    print("  split  category      total  echo  share  overlap echo  overlap paraphrase")
    for split in ("dev", "test"):
        for c in CATEGORIES + ("all",):
            qs = [(g, q) for g in groups for q in g.questions
                  if q["split"] == split and (c == "all" or q["category"] == c)]
            echo = [q_overlap(g, q) for g, q in qs if q["wording"] == "echo"]
            para = [q_overlap(g, q) for g, q in qs if q["wording"] == "paraphrase"]
            print("  %-5s  %-12s  %5d  %4d  %4.0f%%  %12.2f  %18.2f" % (
                split, c, len(qs), len(echo), 100.0 * len(echo) / max(1, len(qs)),
                sum(echo) / max(1, len(echo)), sum(para) / max(1, len(para))))
    print("candidates dropped: %d paraphrase (share > 2 words), %d echo (share 0 or > 3 words)" % (
        dropped["paraphrase"], dropped["echo"]))
    print("validation: ok")


def write_jsonl(path, rows):
    with open(path, "w", encoding="ascii", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def main():
    master = random.Random(SEED)
    females, males = list(SPEAKERS_F), list(SPEAKERS_M)
    master.shuffle(females)
    master.shuffle(males)
    groups, dropped = [], {"paraphrase": 0, "echo": 0}
    for i in range(1, GROUPS + 1):
        size = master.choice((3, 4, 4))
        people = []
        for _ in range(size):
            if master.random() < 0.5 and females or not males:
                people.append(Speaker(females.pop(), "f"))
            else:
                people.append(Speaker(males.pop(), "m"))
        g = build_group(i, people, master.randrange(2 ** 32))
        for k, n in make_questions(g).items():
            dropped[k] += n
        groups.append(g)
    validate(groups)
    write_jsonl(os.path.join(OUT_DIR, "turns.jsonl"), (r for g in groups for r in turn_rows(g)))
    write_jsonl(os.path.join(OUT_DIR, "facts.jsonl"), (r for g in groups for r in fact_rows(g)))
    write_jsonl(os.path.join(OUT_DIR, "questions.jsonl"), (q for g in groups for q in g.questions))
    summary(groups, dropped)


if __name__ == "__main__":
    main()
