#!/usr/bin/env python3
"""Generator of the kledger retrieval-quality benchmark set (synthetic, labelled).

Writes rows.jsonl, questions.jsonl and README.md next to this file. Deterministic: one
random.Random(20261203) drives every choice, no set or hash order reaches the output and
the clock is never read, so two runs give byte-identical files. Python 3 stdlib only.

    python3 testkit/data/retrieval/generate.py

Each account is one person (the "user") talking to an assistant; the rows are what an
extractor would store about them. Questions carry the ids of the active rows that answer
them; relevance is decided by construction (every row declares the facets it answers, and
a question's relevant set is every active row of its account holding that facet).
"""

import calendar
import json
import os
import random
import re
import sys
import unicodedata
from collections import Counter, defaultdict

SEED = 20261203
HERE = os.path.dirname(os.path.abspath(__file__))
N_ACCOUNTS = 24
N_DEV = 8  # the rest are test accounts
REF = (2026, 6)  # questions are phrased as of mid-2026: "last year" is 2025
TENANT = "t_bench"

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def ms(y, m, d=15):
    return calendar.timegm((y, m, d, 9, 0, 0, 0, 0, 0)) * 1000


ALT_RE = re.compile(r"\[([^\[\]|]*(?:\|[^\[\]|]*)+)\]")
AN_RE = re.compile(r"\b([Aa]) ([A-Za-z0-9\u00c0-\u00ff][\w\u00c0-\u00ff'-]*)")


def fix_articles(s):
    """'a' -> 'an' before a vowel sound (never the other way)."""
    def sub(m):
        w = m.group(2)
        vowel = w[0].lower() in "aeiou\u00e9" and not re.match(r"(?i)(uni|use|usu|eu|one|ux)", w)
        vowel = vowel or re.match(r"(8|11|18)(?!\d)", w) or w.startswith(("HR", "MX"))
        return m.group(1) + ("n " if vowel else " ") + w
    return AN_RE.sub(sub, s)


def slug(s):
    s = unicodedata.normalize("NFKD", s)
    s = "".join(c for c in s if not unicodedata.combining(c)).lower()
    return re.sub(r"[^a-z0-9]+", "_", s).strip("_")


# ---------------------------------------------------------------------------------------
# Banks
# ---------------------------------------------------------------------------------------

FEMALE = ["Ana", "Inês", "Beatriz", "Marta", "Sofia", "Clara", "Mia", "Hannah", "Emma",
          "Olivia", "Chloe", "Zoe", "Maya", "Aisha", "Fatima", "Priya", "Ananya", "Mei",
          "Yuki", "Hana", "Ingrid", "Astrid", "Freya", "Sigrid", "Elin", "Nora", "Lucia",
          "Carmen", "Elena", "Paula", "Irene", "Giulia", "Chiara", "Martina", "Camille",
          "Léa", "Manon", "Juliette", "Amélie", "Zofia", "Ewa", "Greta", "Lotte", "Femke",
          "Sanne", "Noor", "Leila", "Yasmin", "Amara", "Nia", "Imani", "Zara", "Isla", "Rosa",
          "Alba", "Nadia", "Daria", "Olga", "Tamar", "Noa", "Keiko", "Grace", "Ruth", "Alice",
          "Julia", "Eva", "Sara", "Laila", "Tara", "Rhea", "Maren", "Signe", "Teresa", "Joana",
          "Rita", "Leonor", "Catarina", "Mariana", "Bianca", "Vera"]
MALE = ["Rui", "Tomas", "João", "Pedro", "Miguel", "Diogo", "Tiago", "Bruno", "Luís", "Carlos",
        "Javier", "Pablo", "Diego", "Marco", "Luca", "Matteo", "Giorgio", "Pierre", "Louis",
        "Hugo", "Julien", "Théo", "Lukas", "Jonas", "Felix", "Paul", "Niklas", "Lars", "Erik",
        "Sven", "Mats", "Oskar", "Anders", "Jan", "Piotr", "Marek", "Daan", "Bram", "Sem",
        "Liam", "Noah", "Ethan", "Oliver", "Jack", "Harry", "Samuel", "Daniel", "David", "Omar",
        "Karim", "Yusuf", "Ahmed", "Ravi", "Arjun", "Vikram", "Kenji", "Hiroshi", "Takumi",
        "Wei", "Jun", "Minho", "Kwame", "Kofi", "Tunde", "Mateo", "Santiago", "Andrés", "Leon",
        "Aaron", "Finn", "Ivan", "Emil", "Nuno", "Henrique", "Gonçalo", "Filipe", "Ricardo",
        "Simão", "Vasco", "Duarte"]
NICK_F = [("Helena", "Lena"), ("Katarzyna", "Kasia"), ("Alexandra", "Sasha"),
          ("Elizabeth", "Liz"), ("Margarida", "Guida"), ("Francesca", "Fran"),
          ("Johanna", "Jo"), ("Gabriela", "Gabi"), ("Isabel", "Bel"), ("Valentina", "Vale"),
          ("Charlotte", "Lottie"), ("Magdalena", "Magda"), ("Antonia", "Toni"),
          ("Victoria", "Vicky")]
NICK_M = [("Alexander", "Alex"), ("Tomasz", "Tomek"), ("Jonathan", "Jon"),
          ("Guilherme", "Gui"), ("Francisco", "Chico"), ("Nikolai", "Kolya"),
          ("Maximilian", "Max"), ("Benjamin", "Ben"), ("Sebastian", "Seb"),
          ("Frederico", "Fred"), ("Christopher", "Kit"), ("Mohammed", "Mo"),
          ("Joaquim", "Quim"), ("Robert", "Rob")]
SURNAMES = ["Almeida", "Novak", "Schmidt", "Rossi", "Dubois", "Kowalski", "Jansen",
            "Lindqvist", "Murphy", "Okafor", "Tanaka", "Sharma", "Costa", "García", "Müller",
            "Moreau", "Bianchi", "Nowak", "Andersson", "Kelly", "Fischer", "Silva", "Martins",
            "Herrera", "Ito", "Park", "Chen", "Haddad", "Mensah", "Petrov", "Varga", "Byrne"]

COUNTRIES = [
    ("Portugal", "Portuguese", ["Lisbon", "Porto", "Braga", "Coimbra", "Faro", "Aveiro"]),
    ("Spain", "Spanish", ["Madrid", "Barcelona", "Valencia", "Seville", "Bilbao", "Granada"]),
    ("France", "French", ["Paris", "Lyon", "Marseille", "Toulouse", "Bordeaux", "Nantes"]),
    ("Germany", "German", ["Berlin", "Munich", "Hamburg", "Cologne", "Leipzig", "Freiburg"]),
    ("the Netherlands", "Dutch", ["Amsterdam", "Rotterdam", "Utrecht", "Eindhoven", "Groningen"]),
    ("Italy", "Italian", ["Milan", "Rome", "Turin", "Bologna", "Naples", "Florence"]),
    ("the UK", "English", ["London", "Manchester", "Edinburgh", "Bristol", "Leeds", "Glasgow"]),
    ("Ireland", "English", ["Dublin", "Cork", "Galway", "Limerick"]),
    ("Sweden", "Swedish", ["Stockholm", "Gothenburg", "Malmö", "Uppsala"]),
    ("Poland", "Polish", ["Warsaw", "Krakow", "Gdansk", "Wroclaw"]),
    ("the US", "English", ["Boston", "Chicago", "Seattle", "Austin", "Denver", "Portland"]),
    ("Canada", "English", ["Toronto", "Montreal", "Vancouver", "Calgary", "Ottawa"]),
    ("Brazil", "Portuguese", ["São Paulo", "Rio de Janeiro", "Curitiba", "Recife", "Belo Horizonte"]),
    ("Japan", "Japanese", ["Tokyo", "Osaka", "Sapporo", "Fukuoka"]),
    ("India", "Hindi", ["Bangalore", "Mumbai", "Pune", "Delhi", "Chennai"]),
    ("Australia", "English", ["Sydney", "Melbourne", "Brisbane", "Perth", "Adelaide"]),
    ("Mexico", "Spanish", ["Mexico City", "Guadalajara", "Monterrey", "Puebla"]),
]
HOME_COUNTRIES = ["Portugal", "Portugal", "Spain", "France", "Germany", "the Netherlands",
                  "Italy", "the UK", "the UK", "Ireland", "Sweden", "Poland", "the US",
                  "the US", "Canada", "Brazil", "Japan", "India", "Australia", "Mexico"]
DEMONYM = {"Portugal": "Portuguese", "Spain": "Spanish", "France": "French", "Germany": "German",
           "the Netherlands": "Dutch", "Italy": "Italian", "the UK": "British", "Ireland": "Irish",
           "Sweden": "Swedish", "Poland": "Polish", "the US": "American", "Canada": "Canadian",
           "Brazil": "Brazilian", "Japan": "Japanese", "India": "Indian", "Australia": "Australian",
           "Mexico": "Mexican"}
COUNTRY_LANG = {k: l for k, l, _ in COUNTRIES}
COUNTRY_CITIES = {k: cs for k, _, cs in COUNTRIES}
LEARNABLE_LANGS = ["Italian", "Japanese", "German", "Spanish", "French", "Portuguese",
                   "Korean", "Dutch", "Swedish", "Greek", "Mandarin", "Arabic", "Polish"]

COMPANIES = ["Acme Analytics", "Northwind Logistics", "Bluefin Health", "Copperleaf Studios",
             "Lumen Robotics", "Harbor Bank", "Tidewater Energy", "Greenline Foods",
             "Quarry Labs", "Parallax Games", "Brightpath Learning", "Ironbark Engineering",
             "Kestrel Aerospace", "Mosaic Media", "Nimbus Cloud", "Orchard Retail",
             "Pinecrest Insurance", "Redwood Pharma", "Saltmarsh Architects",
             "Silverleaf Consulting", "Stonebridge Legal", "Sunfield Solar",
             "Tessellate Design", "Upland Telecom", "Vantage Mobility", "Willow Biotech",
             "Yellowstone Freight", "Zephyr Airlines", "Atlas Maps", "Beacon Security",
             "Cobalt Payments", "Driftwood Hotels", "Ember Coffee Roasters", "Fjord Shipping",
             "Granite Construction", "Helix Genomics", "Indigo Fashion", "Juniper Software",
             "Keystone Automotive", "Lighthouse Publishing", "Meridian Hospital",
             "Nova Textiles", "Osprey Outdoor", "Pioneer Agritech", "Quill Translations",
             "Summit Gear", "Marigold Insurance", "Cedar Health Clinics"]

# employers that fit each role family ("biz" roles fit any company)
SECTOR = {
    "tech": ["Acme Analytics", "Lumen Robotics", "Quarry Labs", "Parallax Games", "Nimbus Cloud",
             "Juniper Software", "Cobalt Payments", "Atlas Maps", "Beacon Security", "Upland Telecom",
             "Harbor Bank", "Zephyr Airlines", "Orchard Retail", "Pinecrest Insurance", "Helix Genomics",
             "Vantage Mobility", "Marigold Insurance", "Northwind Logistics"],
    "health": ["Bluefin Health", "Redwood Pharma", "Meridian Hospital", "Cedar Health Clinics",
               "Willow Biotech", "Helix Genomics"],
    "eng": ["Ironbark Engineering", "Kestrel Aerospace", "Tidewater Energy", "Sunfield Solar",
            "Granite Construction", "Keystone Automotive", "Vantage Mobility", "Fjord Shipping",
            "Pioneer Agritech", "Lumen Robotics", "Saltmarsh Architects"],
    "design": ["Copperleaf Studios", "Tessellate Design", "Mosaic Media", "Saltmarsh Architects",
               "Indigo Fashion", "Lighthouse Publishing", "Parallax Games", "Osprey Outdoor",
               "Driftwood Hotels", "Summit Gear"],
}

USER_ROLES = [("data engineer", "tech"), ("product designer", "design"),
              ("backend developer", "tech"), ("UX researcher", "design"),
              ("project manager", "biz"), ("accountant", "biz"), ("marketing manager", "biz"),
              ("civil engineer", "eng"), ("pharmacist", "health"), ("data scientist", "tech"),
              ("HR business partner", "biz"), ("sales lead", "biz"),
              ("mechanical engineer", "eng"), ("lawyer", "biz"), ("copywriter", "design"),
              ("physiotherapist", "health"), ("lab technician", "health"),
              ("logistics coordinator", "biz"), ("operations analyst", "biz"), ("translator", "biz"),
              ("graphic designer", "design"), ("site reliability engineer", "tech"),
              ("financial analyst", "biz"), ("customer success manager", "biz"),
              ("research scientist", "eng"), ("ICU nurse", "health"),
              ("machine learning engineer", "tech"), ("security analyst", "tech"),
              ("frontend developer", "tech"), ("supply chain planner", "biz"),
              ("clinical psychologist", "health"), ("technical writer", "tech"),
              ("event manager", "biz"), ("procurement specialist", "biz")]
PROJECTS = {
    "tech": [("the migration of the billing system to Kubernetes", "Kubernetes"),
             ("a rewrite of the mobile app's offline sync", "the offline sync"),
             ("the move from Jenkins to GitHub Actions", "Jenkins"),
             ("a new fraud-detection pipeline", "the fraud-detection pipeline"),
             ("the data warehouse migration to Snowflake", "Snowflake"),
             ("an internal search tool for support agents", "the internal search tool")],
    "design": [("a redesign of the checkout flow", "the checkout flow"),
               ("the new company design system", "the design system"),
               ("a rebrand of the public website", "the rebrand"),
               ("user interviews for a banking app", "the banking app")],
    "biz": [("the launch of a new loyalty programme", "the loyalty programme"),
            ("the annual budget planning cycle", "the budget planning cycle"),
            ("a supplier consolidation project", "the supplier consolidation project"),
            ("the office move to a new building", "the office move"),
            ("a CRM migration to Salesforce", "Salesforce")],
    "eng": [("the design of a pedestrian bridge", "the pedestrian bridge"),
            ("a wind turbine gearbox test rig", "the gearbox test rig"),
            ("the retrofit of a hospital ventilation system", "the ventilation system"),
            ("a battery recycling pilot", "the battery recycling pilot")],
    "health": [("a new triage protocol on the ward", "the triage protocol"),
               ("the rollout of electronic prescriptions", "electronic prescriptions"),
               ("a falls-prevention study", "the falls-prevention study"),
               ("a vaccination campaign in local schools", "the vaccination campaign")],
}
CERTS = {
    "tech": ["AWS Solutions Architect", "Certified Kubernetes Administrator", "Google Cloud Data Engineer"],
    "design": ["Nielsen Norman UX", "Google UX Design"],
    "biz": ["PRINCE2 Practitioner", "CFA Level I", "PMP"],
    "eng": ["chartered engineer", "NEBOSH safety"],
    "health": ["advanced life support", "prescribing"],
}
OLD_CAREERS = ["hospitality", "retail", "teaching", "journalism", "banking", "music",
               "the army", "call-centre support", "archaeology"]
CODE_LANGS = ["Python", "Go", "TypeScript", "Rust", "Java", "Kotlin", "SQL", "C#", "Elixir", "Scala"]

TP_JOBS = ["pediatric nurse", "primary school teacher", "civil engineer",
           "chef at a seafood restaurant", "bus driver", "dentist", "software developer",
           "firefighter", "pharmacist", "electrician", "hairdresser", "florist", "bank clerk",
           "police officer", "family doctor", "architect", "physiotherapist", "librarian",
           "carpenter", "tattoo artist", "journalist", "insurance broker", "translator",
           "wine producer", "airline pilot", "flight attendant", "yoga instructor",
           "wedding photographer", "barista", "museum curator", "personal trainer",
           "social worker", "accountant", "estate agent", "plumber", "research physicist",
           "marine biologist", "sound engineer", "landscape gardener", "train conductor",
           "speech therapist", "midwife", "bakery owner", "lorry driver",
           "video game designer", "secondary school maths teacher", "court interpreter",
           "optician", "structural engineer", "veterinary nurse"]
RETIRED_JOBS = ["retired teacher", "retired postal worker", "retired nurse", "retired engineer",
                "retired bank manager", "retired shop owner", "retired factory supervisor",
                "retired judge", "retired taxi driver", "retired tailor", "retired chemist",
                "retired police officer", "retired ferry captain", "retired school principal"]
OFFICE_ROLES = ["lead designer", "product owner", "QA lead", "senior analyst", "team lead",
                "data analyst", "office manager", "scrum master", "head of sales",
                "staff engineer", "finance controller", "recruiter"]
TEAMS = ["platform", "payments", "growth", "research", "operations", "customer insights",
         "infrastructure", "mobile", "compliance", "brand"]
STUDY_FIELDS = ["architecture", "law", "medicine", "marine biology", "economics",
                "computer science", "history of art", "nursing", "mechanical engineering",
                "psychology", "film studies", "agronomy"]

PET_NAMES = ["Pipa", "Miso", "Biscuit", "Luna", "Noodle", "Olive", "Pepper", "Mango", "Tofu",
             "Ziggy", "Bolt", "Nala", "Simba", "Loki", "Mochi", "Pretzel", "Juniper",
             "Ginger", "Waffles", "Pickle", "Frida", "Dobby", "Pixel", "Rocco", "Yoda", "Suki",
             "Cookie", "Maple", "Ollie", "Teddy", "Rufus", "Coco", "Lola", "Pumpkin", "Sushi",
             "Bento", "Churro", "Figo", "Peanut", "Chico", "Bimba", "Tango", "Paprika"]
PETS = [("dog", ["border collie", "rescue greyhound", "beagle", "labrador", "dachshund",
                 "cocker spaniel", "whippet", "corgi", "standard poodle", "mixed-breed rescue dog"]),
        ("cat", ["tabby cat", "Maine Coon", "Siamese cat", "black cat", "ragdoll cat"]),
        ("small", ["lop-eared rabbit", "tortoise", "budgie", "bearded dragon", "parrot",
                   "pair of guinea pigs", "hamster"])]
PET_EXTRAS = ["{pet} is scared of fireworks and hides under the bed",
              "{pet} needs grain-free food because of a sensitive stomach",
              "{pet} is {n} years old",
              "{pet} goes to a vet clinic run by Dr {sur}",
              "{pet} gets carsick on long drives",
              "{pet} had surgery on a back leg in {my}"]

DESTS = [("Kyoto", "Japan", "the temples in the hills"), ("Marrakech", "Morocco", "the riads"),
         ("Cusco", "Peru", "the trek to Machu Picchu"), ("Hanoi", "Vietnam", "the street food"),
         ("the Isle of Skye", "Scotland", "the wild coastline"), ("Bergen", "Norway", "the fjords"),
         ("Oaxaca", "Mexico", "the food markets"), ("Cappadocia", "Turkey", "a balloon ride at dawn"),
         ("Tbilisi", "Georgia", "the wine"), ("Petra", "Jordan", "the canyon walk"),
         ("Cape Town", "South Africa", "Table Mountain"), ("Zanzibar", "Tanzania", "the beaches"),
         ("Palermo", "Sicily", "the markets"), ("Hvar", "Croatia", "sailing between islands"),
         ("Funchal", "Madeira", "the levada walks"), ("Rovaniemi", "Finland", "the northern lights"),
         ("Ubud", "Bali", "the rice terraces"), ("Busan", "South Korea", "the fish market"),
         ("Havana", "Cuba", "the music"), ("Lake Bled", "Slovenia", "swimming in the lake"),
         ("Hobart", "Tasmania", "the hiking"), ("Queenstown", "New Zealand", "the mountains"),
         ("Chiang Mai", "Thailand", "the cooking class"), ("Kandy", "Sri Lanka", "the train ride to Ella"),
         ("Reykjavik", "Iceland", "the hot springs"), ("the Dolomites", "Italy", "the via ferrata routes"),
         ("Santorini", "Greece", "the sunsets"), ("Banff", "Canada", "the lakes"),
         ("Buenos Aires", "Argentina", "the tango bars"), ("Istanbul", "Turkey", "the ferries")]

INSTRUMENTS = ["cello", "violin", "piano", "ukulele", "saxophone", "drums", "classical guitar",
               "flute", "accordion", "harp", "trumpet", "banjo", "clarinet", "double bass"]
# (key, group, rows, para questions, lexical key)
OTHER_HOBBIES = [
    ("bouldering", "climb", ["Goes bouldering at an indoor wall twice a week", "Took up bouldering in {y} with colleagues"],
     ["does {she} do any climbing?"], "bouldering"),
    ("padel", "racket", ["Plays padel on {day} evenings with friends", "Started playing padel in {y}"],
     ["which racket sport does {she} enjoy?"], "padel"),
    ("tennis", "racket", ["Plays tennis at a local club every {day}", "Has been playing tennis since {y}"],
     ["which racket sport does {she} enjoy?"], "tennis"),
    ("badminton", "racket", ["Plays badminton in a sports hall on {day} nights", "Joined a badminton club in {y}"],
     ["which racket sport does {she} enjoy?"], "badminton"),
    ("swimming", "water", ["Swims two kilometres at the municipal pool before work", "Started swimming laps in {y} to build stamina"],
     ["how does {she} exercise in the water?"], "swimming"),
    ("kayaking", "water", ["Goes sea kayaking along the coast in summer", "Did a kayaking course in {y}"],
     ["does {she} paddle anywhere?"], "kayaking"),
    ("surfing", "water", ["Goes surfing most weekends when the swell is good", "Learned to surf at a local surf school in {y}"],
     ["does {she} ride waves?"], "surfing"),
    ("rowing", "water", ["Rows with a club on the river at dawn twice a week", "Joined a rowing club in {y}"],
     ["is {she} part of any crew on the water?"], "rowing"),
    ("trail running", "run", ["Runs trails in the hills most Sunday mornings", "Finished {pos} first 25 km trail race in {my}"],
     ["does {she} jog off-road?"], "the trail race"),
    ("yoga", "mat", ["Does yoga at a studio on {day} evenings", "Started practising yoga in {y} for {pos} back"],
     ["is {she} into any mind-body practice?"], "yoga"),
    ("pilates", "mat", ["Goes to reformer pilates on {day} mornings", "Started pilates in {y} on a friend's recommendation"],
     ["does {she} do any core-strength classes?"], "pilates"),
    ("judo", "martial", ["Trains judo at a dojo twice a week", "Got {pos} brown belt in judo in {my}"],
     ["does {she} practise a martial art?"], "judo"),
    ("boxing", "martial", ["Does boxing training at a gym near the office", "Started boxing classes in {y}"],
     ["does {she} practise a combat sport?"], "boxing"),
    ("fencing", "martial", ["Fences épée at a club on {day} nights", "Took up fencing in {y}"],
     ["does {she} do any sword sport?"], "épée"),
    ("volleyball", "team", ["Plays in a mixed beach volleyball league in summer", "Joined a volleyball team in {y}"],
     ["is {she} on a sports team?"], "volleyball"),
    ("five-a-side", "team", ["Plays five-a-side football with old school friends on {day}s", "Joined a five-a-side league in {y}"],
     ["does {she} kick a ball around with anyone?"], "five-a-side"),
    ("skiing", "snow", ["Goes cross-country skiing every winter", "Tried cross-country skiing for the first time in {y}"],
     ["what winter sport does {she} enjoy?"], "cross-country skiing"),
    ("pottery", "craft", ["Takes a pottery class on {day} evenings", "Threw {pos} first set of bowls on the wheel in {y}"],
     ["does {she} do anything with clay?"], "pottery"),
    ("knitting", "craft", ["Knits jumpers and scarves for the family", "Learned to knit from {pos} grandmother in {y}"],
     ["what does {she} do with yarn?", "does {she} make woolly clothes by hand?"], "scarves"),
    ("woodworking", "craft", ["Builds small furniture in a shared workshop", "Finished a walnut coffee table in {my}"],
     ["does {she} do any carpentry?"], "the workshop"),
    ("watercolour", "craft", ["Paints watercolour landscapes on weekends", "Joined an urban sketching group in {y}"],
     ["is {she} into drawing or art?"], "watercolour"),
    ("calligraphy", "craft", ["Practises brush calligraphy in the evenings", "Started a calligraphy course in {y}"],
     ["is {she} into fancy lettering?"], "calligraphy"),
    ("bookbinding", "craft", ["Binds notebooks by hand as gifts", "Took a bookbinding workshop in {y}"],
     ["does {she} make journals by hand?"], "bookbinding"),
    ("chess", "games", ["Plays chess online most evenings, rated around {n}", "Joined a chess club in {y}"],
     ["which strategy board game does {she} play?"], "chess"),
    ("board games", "games", ["Hosts a board game night every other {day}", "Owns more than {n} board games"],
     ["is {she} into tabletop gaming?"], "board games"),
    ("birdwatching", "nature", ["Goes birdwatching at the estuary on Sunday mornings", "Bought binoculars for birdwatching in {y}"],
     ["does {she} observe wildlife?"], "birdwatching"),
    ("astronomy", "nature", ["Takes a small telescope to dark-sky spots outside the city", "Joined an astronomy society in {y}"],
     ["does {she} look at the night sky?"], "the telescope"),
    ("gardening", "nature", ["Grows tomatoes and herbs on an allotment plot", "Got an allotment in {y}"],
     ["does {she} grow vegetables?"], "the allotment"),
    ("beekeeping", "nature", ["Keeps two beehives on a relative's farm", "Took a beekeeping course in {y}"],
     ["does {she} look after any insects?"], "beehives"),
    ("sourdough", "kitchen", ["Bakes sourdough bread every weekend", "Has kept the same sourdough starter alive since {y}"],
     ["does {she} make loaves at home?"], "sourdough"),
    ("fermenting", "kitchen", ["Makes kimchi and sauerkraut at home", "Started fermenting vegetables in {y}"],
     ["does {she} pickle anything?"], "kimchi"),
    ("film photography", "photo", ["Shoots film photography on an old Pentax", "Started developing {pos} own film in {y}"],
     ["what kind of pictures does {she} take?", "does {she} use an analogue camera?"], "Pentax"),
    ("salsa", "dance", ["Takes salsa classes on {day}s", "Started salsa dancing in {y}"],
     ["does {she} go out dancing?"], "salsa"),
    ("choir", "music", ["Sings alto in a community choir", "Joined a community choir in {y}"],
     ["does {she} sing?"], "the choir"),
    ("improv", "stage", ["Does improv theatre classes on {day} nights", "Performed in {pos} first improv show in {my}"],
     ["does {she} do any acting or comedy?"], "improv"),
    ("scuba", "dive", ["Is a certified scuba diver", "Got {pos} open water diving certificate in {y}"],
     ["does {she} go underwater?"], "scuba"),
    ("podcast", "media", ["Co-hosts a small podcast about urban history", "Launched {pos} podcast in {y}"],
     ["does {she} host a show of some kind?"], "the podcast"),
    ("volunteering", "charity", ["Volunteers at a food bank one Saturday a month", "Started volunteering at the food bank in {y}"],
     ["does {she} do any charity work?"], "the food bank"),
    ("geocaching", "nature2", ["Goes geocaching with friends on long weekends", "Found {pos} hundredth geocache in {my}"],
     ["does {she} go treasure hunting outdoors?"], "geocaching"),
]

HOBBY_LABEL = {"podcast": "the podcast", "scuba": "scuba diving", "five-a-side": "five-a-side football",
               "skiing": "cross-country skiing", "sourdough": "sourdough baking", "choir": "the choir",
               "watercolour": "watercolour painting", "fermenting": "fermenting", "improv": "improv theatre",
               "salsa": "salsa dancing"}

MED_ALLERGIES = ["penicillin", "amoxicillin", "ibuprofen", "aspirin", "sulfa drugs", "codeine"]
FOOD_ALLERGY = [("Allergic to peanuts; carries an EpiPen", "peanuts"),
                ("Allergic to shellfish, especially prawns", "shellfish"),
                ("Allergic to sesame", "sesame"),
                ("Lactose intolerant, so avoids milk and soft cheeses", "lactose"),
                ("Coeliac, so everything has to be strictly gluten-free", "gluten"),
                ("Allergic to kiwi fruit; it makes {pos} mouth itch", "kiwi"),
                ("Allergic to tree nuts such as walnuts and cashews", "walnuts")]
DIETS = [("Vegetarian since {y}", "vegetarian", "is {she} {t}?", "does {she} eat meat?"),
         ("Pescatarian: eats fish but no meat", "pescatarian", "is {she} {t}?", "would {she} eat a steak?"),
         ("Vegan for the last {n} years", "vegan", "is {she} {t}?", "does {she} eat meat or dairy?"),
         ("Eats everything but avoids pork", "pork", "does {she} eat {t}?", "is there any meat {she} won't touch?"),
         ("Follows a low-FODMAP diet on a dietitian's advice", "FODMAP", "is {she} on a {t} diet?", "is {she} on any special eating plan?"),
         ("Tries to eat low-carb on weekdays", "low-carb", "does {she} eat {t}?", "does {she} cut down on bread and pasta?"),
         ("Eats halal", "halal", "does {she} only eat {t}?", "does {she} follow any religious dietary rules?")]
DISLIKES = [("Can't stand coriander", "coriander", "which herb does {she} find revolting?"),
            ("Dislikes mushrooms in any form", "mushrooms", "is there a fungus {she} refuses to eat?"),
            ("Hates olives", "olives", "which small salty fruit on pizza does {she} hate?"),
            ("Finds blue cheese revolting", "blue cheese", "which dairy product does {she} find disgusting?"),
            ("Doesn't like very spicy food", "spicy food", "can {she} handle lots of chilli heat?"),
            ("Avoids anything with raisins", "raisins", "which dried fruit does {she} refuse?"),
            ("Won't eat liver or other offal", "offal", "does {she} eat organ meat?"),
            ("Dislikes the taste of aniseed and liquorice", "liquorice", "which sweet flavour does {she} hate?")]
DISHES = ["Thai green curry", "mushroom risotto", "tonkotsu ramen", "bacalhau à brás", "lasagne",
          "pho", "seafood paella", "shakshuka", "pierogi", "masala dosa", "tacos al pastor",
          "moussaka", "bibimbap", "falafel wraps", "gnocchi with pesto", "chicken katsu curry"]
CONDITIONS = [("Has mild asthma and uses an inhaler before running", "asthma", "does {she} have any breathing problems?"),
              ("Gets migraines when {she} sleeps too little", "migraines", "does {she} suffer from bad headaches?"),
              ("Has type 1 diabetes and wears a glucose monitor", "diabetes", "does {she} need to track blood sugar?"),
              ("Has hypothyroidism and takes levothyroxine every morning", "levothyroxine", "does {she} have a thyroid problem?"),
              ("Has eczema that flares up in winter", "eczema", "does {she} have any skin condition?"),
              ("Has tinnitus in the left ear", "tinnitus", "does {she} have any hearing issue?"),
              ("Has high blood pressure, managed with daily tablets", "blood pressure", "any cardiovascular issues to be aware of?"),
              ("Has hay fever every spring", "hay fever", "does pollen bother {obj}?")]
INJURIES = [("Tore a knee ligament on a hiking trip in {my} and is still doing physio", "knee", "when did {she} hurt {pos} knee?"),
            ("Sprained an ankle running for a bus in {my}", "ankle", "when did {she} twist {pos} ankle?"),
            ("Broke {pos} wrist falling on ice in {my}", "wrist", "when did {she} break {pos} wrist?"),
            ("Has had lower back pain since {my}", "back pain", "since when has {pos} back been hurting?"),
            ("Had {pos} appendix removed in {my}", "appendix", "when was {pos} appendix taken out?")]
CARS = ["Toyota Corolla", "Renault Clio", "VW Golf", "Skoda Octavia", "Fiat 500", "Tesla Model 3",
        "Kia Niro", "Honda Jazz", "Volvo V60", "Peugeot 208", "Mazda MX-5", "Dacia Sandero",
        "Nissan Leaf", "Hyundai Ioniq", "Mini Cooper"]
COLOURS = ["grey", "white", "dark blue", "red", "black", "silver", "green"]
BIKES = [("Brompton folding bike", "the Brompton"), ("second-hand steel road bike", "the steel road bike"),
         ("cargo bike for the shopping", "the cargo bike"), ("gravel bike", "the gravel bike"),
         ("electric city bike", "the electric city bike"), ("old Dutch-style city bike", "the Dutch-style city bike")]
NOTE_APPS = ["Obsidian", "Notion", "Logseq", "Apple Notes", "OneNote", "Bear"]
EDITORS = ["Neovim", "VS Code", "Emacs", "IntelliJ"]
PASSWORD = ["Bitwarden", "1Password", "KeePassXC"]
TASKS = ["Todoist", "Things", "TickTick"]
MUSIC = ["jazz and bossa nova", "90s hip hop", "classical piano music", "indie folk",
         "techno", "fado", "Afrobeats", "metal", "film soundtracks", "K-pop", "old soul records"]
BOOKS = ["crime novels", "science fiction", "history books", "literary fiction",
         "fantasy series", "biographies", "graphic novels", "poetry"]
CLUBS = ["Benfica", "Sporting", "Real Betis", "Ajax", "Feyenoord", "Celtic", "Arsenal",
         "Liverpool", "Boca Juniors", "Flamengo", "Bayern Munich", "St. Pauli", "Napoli",
         "Galatasaray", "Olympique Lyonnais", "Athletic Bilbao"]
TP_HOBBIES = ["{N} plays bass in a covers band", "{N} is really into trail running",
              "{N} collects vintage vinyl records", "{N} restores old motorbikes at weekends",
              "{N} is training for {npos} first triathlon", "{N} sings in a gospel choir",
              "{N} paints miniatures for tabletop games", "{N} goes fly fishing whenever {nshe} can",
              "{N} is a keen birdwatcher", "{N} does competitive ballroom dancing",
              "{N} brews {npos} own beer", "{N} plays in a Sunday cricket league",
              "{N} is obsessed with bonsai trees", "{N} spends most weekends sailing",
              "{N} does stand-up comedy at open mic nights", "{N} grows orchids"]
TP_DIETS = ["{N} is vegan", "{N} doesn't drink alcohol", "{N} is allergic to shellfish",
            "{N} is coeliac and eats gluten-free", "{N} keeps kosher", "{N} is vegetarian",
            "{N} is allergic to nuts", "{N} avoids dairy"]
TP_HEALTH = [("{N} had a hip replacement in {my}", True), ("{N} has type 2 diabetes", False),
             ("{N} is recovering from a broken wrist", False), ("{N} had heart surgery in {my}", True),
             ("{N} wears hearing aids", False), ("{N} was diagnosed with arthritis in {my}", True),
             ("{N} has a bad back and avoids long drives", False)]
TP_GIFTS = ["{N} has been hinting that {nshe} wants a new espresso machine",
            "{N} would love a pair of noise-cancelling headphones",
            "{N} needs a new backpack for the commute",
            "{N} wants a good chef's knife for the kitchen",
            "{N} has been asking for a polaroid camera", "{N} has been eyeing a set of good kitchen scales",
            "{N} is after a signed copy of {npos} favourite novel",
            "{N} wants a hammock for the garden"]
MET_CONTEXTS = ["at a pottery class", "through a language exchange", "at a friend's wedding",
                "at a climbing gym", "at a hackathon", "at the dog park",
                "through a running club", "while working at {old}", "at a music festival",
                "at a board game cafe", "at a book club"]
MET_YOUNG = ["in primary school", "at secondary school", "in a shared flat as students",
             "on a summer exchange as teenagers"]
KID_ACTIVITIES = ["swimming lessons", "football practice", "ballet", "piano lessons",
                  "judo", "a coding club", "scouts", "drama club"]


# ---------------------------------------------------------------------------------------
# Text utilities: tokenising, stop words, crude stemming, overlap
# ---------------------------------------------------------------------------------------

STOP = set("""a about above after again against all also am an and any anyone anything are
as at be because been before being below between both but by can could did do does doing
done down during each else ever every few for from further get gets got had has have having
he her here hers herself him himself his how i if in into is it its itself just like me more
most much must my myself no nor not now of off on once only or other our out over own per
really same she should so some someone something such than that the their them then there
these they this those through to too under until up us very was we were what whats when
where which while who whom whose why will with would you your yours user s t don doesn didn
isn won wasn aren ll re ve d m currently usually still any anymore ok okay tell know""".split())
TOKEN = re.compile(r"[a-z0-9\u00c0-\u00ff]+")
SUFFIXES = ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "er", "s")


def stem(w):
    for suf in SUFFIXES:
        if w.endswith(suf):
            base = w[: -len(suf)]
            if len(base) >= (4 if suf == "er" else 3):
                w = base + ("y" if suf in ("ies", "ied") else "")
                break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def content_words(text):
    return {stem(t) for t in TOKEN.findall(text.lower()) if t not in STOP and len(t) > 1}


def rare_words(row):
    """Stems a paraphrase question may not share with a row: proper nouns, numbers, key terms."""
    words = row["content"].split()
    rare = set()
    for i, w in enumerate(words):
        if (i > 0 and w[:1].isupper()) or any(ch.isdigit() for ch in w):
            rare |= content_words(w)
    if row.get("_key"):
        rare |= content_words(row["_key"])
    if row.get("_who") is not None:
        rare |= content_words(row["_who"].name)
    return rare


def overlap(question, rows):
    q = content_words(question)
    union = set()
    for r in rows:
        union |= content_words(r["content"])
    return q & union


# ---------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------

PRON = {"f": {"she": "she", "She": "She", "pos": "her", "Pos": "Her", "obj": "her"},
        "m": {"she": "he", "She": "He", "pos": "his", "Pos": "His", "obj": "him"}}


class Person:
    def __init__(self, name, gender, rel, relword):
        self.name, self.gender, self.rel, self.relword = name, gender, rel, relword
        self.eid = "person_" + slug(name)
        self.city = None
        self.city_row = None
        self.intro = None
        self.facets = []


class Account:
    def __init__(self, idx, rng):
        self.idx = idx
        self.rng = rng
        self.code = "a%02d" % idx
        self.account = "%s/user/u_%02d" % (TENANT, idx)
        self.rows = []
        self.cands = []
        self.used_names = set()
        self.persons = []
        self.used_pets = set()
        self.excl = set()  # topics taken by a document or trigger
        self.started = []  # (year, row) for "took up in YEAR" questions
        self.used_tp = set()  # third-party templates already used in this account

    def pick_tp(self, bank):
        """A third-party template not yet used in this account (so two people never share a sentence)."""
        free = [t for t in bank if (t[0] if isinstance(t, tuple) else t) not in self.used_tp]
        t = self.ch(free or bank)
        self.used_tp.add(t[0] if isinstance(t, tuple) else t)
        return t

    # -- helpers --
    def P(self, **kw):
        d = dict(PRON[self.g])
        d.update(kw)
        return d

    def alt(self, t):
        """Resolves inline alternatives: "[walks|cycles] to work" -> one of them (seeded)."""
        return ALT_RE.sub(lambda m: self.rng.choice(m.group(1).split("|")), t)

    def f(self, _t, **kw):
        s = fix_articles(self.alt(_t).format(**self.P(**kw)))
        return s[:1].upper() + s[1:]

    def ch(self, seq):
        return self.rng.choice(seq)

    def rdate(self, lo=(2022, 1), hi=REF):
        y = self.rng.randint(lo[0], hi[0])
        m_lo = lo[1] if y == lo[0] else 1
        m_hi = hi[1] if y == hi[0] else 12
        return y, self.rng.randint(m_lo, m_hi), self.rng.randint(1, 28)

    def rec(self):
        y, m, d = self.rdate()
        return ms(y, m, d)

    def rec_before(self, vf):
        """A record date in 2022 at least two months before vf."""
        lo = ms(2022, 1, 1)
        return self.rng.randint(lo // 86400000, (vf - 86400000 * 60) // 86400000) * 86400000 + 9 * 3600000

    def take_name(self, gender):
        pool = [n for n in (FEMALE if gender == "f" else MALE) if slug(n) not in self.used_names]
        n = self.ch(pool)
        self.used_names.add(slug(n))
        return n

    def take_pet(self):
        n = self.ch([p for p in PET_NAMES if p not in self.used_pets])
        self.used_pets.add(n)
        return n

    def add(self, content, kind="fact", who=None, facets=(), slot=None, tags=(), vf=None,
            vt=None, status="active", body=None, key=None, lex=None, lexn=True):
        row = {"content": content, "kind": kind, "_who": who, "_f": set(facets), "slot": slot,
               "tags": list(tags), "vf": vf if vf is not None else self.rec(), "vt": vt,
               "status": status, "body": body, "_key": key, "_lex": lex or [], "_lexn": lexn}
        self.rows.append(row)
        return row

    def q(self, cat, facet, templates, **kw):
        qs = [fix_articles(t.format(**self.P(**kw))) for t in templates]
        self.cands.append({"cat": cat, "facet": facet, "qs": qs})

    def person(self, rel, gender, relword):
        p = Person(self.take_name(gender), gender, rel, relword)
        self.persons.append(p)
        return p

    def tpf(self, p, attr):
        return "tp:%s:%s" % (p.eid, attr)

    def tpq(self, p, cat, attr, templates, **kw):
        self.q(cat, self.tpf(p, attr), templates, N=p.name, nshe=PRON[p.gender]["she"],
               npos=PRON[p.gender]["pos"], rel=p.relword.lower(), **kw)

    def tpt(self, _p, _t, **kw):
        p = _p
        s = fix_articles(self.alt(_t).format(**self.P(N=p.name, nshe=PRON[p.gender]["she"], npos=PRON[p.gender]["pos"],
                                            Rel=p.relword, **kw)))
        return s[:1].upper() + s[1:]

    def my(self, lo=(2022, 1), hi=REF):
        y, m, d = self.rdate(lo, hi)
        return "%s %d" % (MONTHS[m - 1], y), ms(y, m, d), y


# ---------------------------------------------------------------------------------------
# Domains
# ---------------------------------------------------------------------------------------

def persona(a):
    r = a.rng
    a.g = r.choice("fm")
    nick = None
    if r.random() < 0.5:
        full, nick = r.choice(NICK_F if a.g == "f" else NICK_M)
        a.name = full
    else:
        a.name = a.take_name(a.g)
    a.used_names.add(slug(a.name))
    a.nick = nick
    if nick:
        a.used_names.add(slug(nick))
    a.country = r.choice(HOME_COUNTRIES)
    a.city = r.choice(COUNTRY_CITIES[a.country])
    a.expat = r.random() < 0.25
    if a.expat:
        a.origin = r.choice([k for k, _, _ in COUNTRIES if k != a.country])
    else:
        a.origin = a.country
    a.hometown = r.choice([c for c in COUNTRY_CITIES[a.origin] if c != a.city])
    a.age = r.randint(24, 61)
    a.bday = (r.randint(1, 28), r.randint(1, 12))
    a.role, a.family = r.choice(USER_ROLES)
    pool = SECTOR.get(a.family, COMPANIES)
    if a.role == "lawyer":
        pool = ["Stonebridge Legal", "Harbor Bank", "Pinecrest Insurance", "Silverleaf Consulting"]
    elif a.role == "translator":
        pool = ["Quill Translations", "Lighthouse Publishing", "Mosaic Media"]
    a.company, a.old_company = r.sample(pool, 2)
    a.mentor_company = r.choice([c for c in COMPANIES if c not in (a.company, a.old_company)])
    a.native = COUNTRY_LANG[a.origin]
    a.has_car = r.random() < 0.6
    a.has_bike = r.random() < 0.5


def identity(a):
    r = a.rng
    d, m = a.bday
    # age: current and the superseded one from the year before
    y = 2026 if m <= REF[1] else 2025
    cur = ms(y, m, d)
    a.add(a.ch(["Is {n} years old", "{n} years old"]).format(n=a.age), slot="age_years",
          facets=["age"], tags=["profile"], vf=cur)
    a.add("Is {n} years old".format(n=a.age - 1), slot="age_years", facets=["age_old"],
          tags=["profile"], vf=ms(y - 1, m, d), vt=cur, status="superseded")
    a.q("paraphrase", "age", ["what's {pos} age?", "what age is {she} now?", "roughly how old is {she}?"])
    a.add(a.f(a.ch(["Birthday is on {d} {m}", "Celebrates {pos} birthday on {d} {m}"]),
              d=d, m=MONTHS[m - 1]), facets=["birthday"], tags=["dates"])
    a.q("temporal", "birthday", ["when is {pos} birthday?", "what date should I wish {obj} a happy birthday?"])
    a.q("paraphrase", "birthday", ["on which day of the year was {she} born?"])
    if a.nick:
        a.add(a.f("Goes by {nick}; only {pos} grandmother still calls {obj} {full}", nick=a.nick, full=a.name),
              facets=["nickname"], tags=["profile"], key=a.nick)
        a.q("paraphrase", "nickname", ["what name should I use for {obj}?", "is there a short form of {pos} first name {she} prefers?"])
    # languages
    if a.native == "English":
        extra = a.ch([l for l in LEARNABLE_LANGS if l not in ("English",)])
        a.spoken = ["English", extra]
        c = a.f("Native English speaker; also speaks {x} at a conversational level", x=extra)
    else:
        extra = a.ch([l for l in ["French", "Spanish", "German", "Italian"] if l != a.native])
        a.spoken = [a.native, "English", extra]
        c = a.f("Native {n} speaker; fluent in English and gets by in {x}", n=a.native, x=extra)
    a.add(c, facets=["languages", "lang_both"], tags=["profile", "language"])
    a.q("paraphrase", "languages", ["what languages can {she} hold a conversation in?", "which tongues does {she} speak?"])
    # hometown
    if a.expat:
        c = a.f(a.ch(["Grew up in {h}, {c}", "Originally from {h} in {c}"]), h=a.hometown, c=a.origin)
    else:
        c = a.f(a.ch(["Grew up in {h}", "Originally from {h}"]), h=a.hometown)
    a.add(c, facets=["hometown"], tags=["profile"])
    a.q("paraphrase", "hometown", ["where did {she} spend {pos} childhood?", "which place was {she} raised in?"])
    if a.expat:
        a.add(a.f("Holds both {a} and {b} citizenship", a=DEMONYM[a.origin], b=DEMONYM[a.country]),
              facets=["citizenship"], tags=["profile"])
        a.q("paraphrase", "citizenship", ["which passports does {she} have?", "what nationality is {she}?"])


def home(a):
    r = a.rng
    a.moved = r.random() < 0.78
    liv = a.partner is not None and a.partner.cohabit
    housing_opts = [
        ("Rents a two-bedroom flat on the fourth floor with no lift", ["does {pos} building have an elevator?"]),
        ("Owns a small terraced house with a back garden", ["does {she} have outdoor space where {she} lives?"]),
        ("Bought an apartment with a balcony overlooking the river in {y}", ["is {pos} place rented or owned?"]),
        ("Rents a ground-floor flat with a tiny courtyard", ["which storey is {pos} apartment on?"]),
    ]
    if not liv and a.age < 35:
        housing_opts.append(("Shares a flat with two flatmates near the university", ["does {she} share {pos} place with anyone?"]))
    housing = a.ch(housing_opts)
    if liv:
        c = a.f(a.ch(["Lives in {c} with {pos} {rw} {p}", "Lives with {pos} {rw} {p} in {c}"]),
                c=a.city, rw=a.partner.relword.lower(), p=a.partner.name)
        fac = ["home_city", "relname:partner"]
    else:
        c = a.f(a.ch(["Lives in {c}"] if "flatmates" in housing[0] else ["Lives in {c}", "Lives alone in {c}"]), c=a.city)
        fac = ["home_city"]
    if a.moved:
        prev = r.choice([x for x in COUNTRY_CITIES[a.country] if x not in (a.city, a.hometown)])
        if r.random() < 0.2:
            prev = r.choice([x for k, _, cs in COUNTRIES if k != a.country for x in cs if x != a.hometown])
        a.prev_city = prev
        y, m, d = a.rdate((2022, 6), (2026, 3))
        mv = ms(y, m, d)
        a.add(c, slot="home_city", facets=fac, tags=["home"], vf=mv)
        a.add(a.f("Lives in {c}", c=prev), slot="home_city", facets=["old_city"], tags=["home"],
              vf=ms(2022, 1, r.randint(1, 28)) if (y, m) < (2023, 1) else a.rec_before(mv),
              vt=mv, status="superseded")
        reason = a.ch(["", " for a new job", " to be closer to family", " for a bigger flat", " after the lease ended"])
        mc = a.f(a.ch(["Moved from {p} to {c} in {my}{why}", "Relocated to {c} from {p} in {my}{why}"]),
                 p=prev, c=a.city, my="%s %d" % (MONTHS[m - 1], y), why=reason)
        a.add(mc, facets=["home_city", "move_when", "prev_city"], tags=["home", "history"], vf=mv)
        a.q("temporal", "move_when", ["when did {she} move to {c}?", "since when has {she} been living in {c}?",
                                      "how long has {she} been in {c}?"], c=a.city)
        a.q("temporal", "prev_city", ["where did {she} live before {c}?", "which city was {she} in before moving to {c}?"], c=a.city)
    else:
        a.prev_city = None
        y = None
        a.add(c, slot="home_city", facets=fac, tags=["home"])
    a.q("paraphrase", "home_city", ["where is home for {obj} these days?", "which town is {she} based in at the moment?",
                                    "where does {she} reside?"])
    a.owns = housing[0].startswith(("Owns", "Bought"))
    by = y if (a.moved and y <= 2025) else r.randint(max(2016, 2026 - a.age + 22), 2025)
    a.add(a.f(housing[0], y=by), facets=["housing"], tags=["home"], vf=ms(by, 6, 1) if "{y}" in housing[0] and by >= 2022 else None)
    a.q("paraphrase", "housing", housing[1])
    modes = [("tram", "by tram"), ("metro", "by metro"), ("train", "by train"), ("bus", "by bus"), ("foot", "on foot")]
    if a.has_car:
        modes += [("car", "by car")] * 2
    if a.has_bike:
        modes += [("bike", "by bike")] * 3
    mode = a.ch(modes)
    a.commute = mode[0]
    a.add(a.f("Commutes to the office {m}, about {n} minutes each way", m=mode[1], n=r.choice([15, 20, 25, 35, 40, 50])),
          facets=["commute"], tags=["home", "routine"])
    if mode[0] == "bike":
        a.rows[-1]["_f"].add("bike")
    a.q("paraphrase", "commute", ["how long is {pos} journey to work?", "how many minutes does it take {obj} to reach the workplace?"])


def work(a):
    r = a.rng
    c = a.f(a.ch(["Works as a {r} at {c}", "Works at {c} as a {r}", "Employed by {c} as a {r}", "{R} at {c}"]),
            r=a.role, R=a.role[:1].upper() + a.role[1:], c=a.company)
    y, m, d = a.rdate((2022, 4), (2026, 2))
    jd = ms(y, m, d)
    jmy = "%s %d" % (MONTHS[m - 1], y)
    a.add(c, slot="employer", facets=["employer", "occupation"], tags=["work"], vf=jd, key=a.company,
          lex=["what's {pos} connection to {t}?"])
    old_role = a.role if r.random() < 0.6 else "junior " + a.role
    a.add(a.f("Works as a {r} at {c}", r=old_role, c=a.old_company), slot="employer", facets=["old_employer"],
          tags=["work"], vf=a.rec_before(jd), vt=jd, status="superseded")
    n = r.randint(2, max(2, min(8, a.age - 23)))
    hc = a.f(a.ch(["Joined {c} in {my} after {n} years at {o}", "Left {o} for {c} in {my}",
                   "Started at {c} in {my}, having spent {n} years at {o}"]), c=a.company, o=a.old_company, my=jmy, n=n)
    a.add(hc, facets=["employer", "join_when", "prev_employer"], tags=["work", "history"], vf=jd, key=a.old_company)
    a.q("paraphrase", "employer", ["which organisation pays {pos} salary?", "who is {pos} employer?", "what firm is {she} with?"])
    a.q("paraphrase", "occupation", ["what does {she} do for a living?", "what's {pos} profession?", "what is {pos} line of work?"])
    a.q("temporal", "join_when", ["when did {she} start at {c}?", "how long has {she} been with {c}?"], c=a.company)
    a.q("temporal", "prev_employer", ["where did {she} work before {c}?", "which company was {she} at before joining {c}?"], c=a.company)
    if r.random() < 0.4 and a.age >= 32:
        old = a.ch(OLD_CAREERS)
        a.add(a.f("Worked in {o} for years before retraining as a {r} in {y}", o=old, r=a.role,
                  y=r.randint(max(2012, 2026 - a.age + 26), 2020)),
              facets=["career_change", "occupation"], tags=["work", "history"], key=old,
              lex=["did {she} ever work in {t}?"])
        a.q("temporal", "career_change", ["what did {she} do before becoming a {r}?", "what was {pos} career before the current one?"], r=a.role)
    proj, pkey = a.ch(PROJECTS[a.family])
    a.add(a.f(a.ch(["Currently leading {p}", "Spending most of this quarter on {p}"]), p=proj),
          facets=["project"], tags=["work"], key=pkey, lex=["what's {pos} involvement with {t}?"])
    a.q("paraphrase", "project", ["what is {she} busy with in {pos} job right now?", "what's taking up most of {pos} time professionally at the moment?"])
    if a.family == "tech":
        l1, l2 = r.sample(CODE_LANGS, 2)
        a.add(a.f("Most comfortable coding in {a} and {b}", a=l1, b=l2), facets=["code_langs"], tags=["work", "skills"])
        a.q("paraphrase", "code_langs", ["which programming languages is {she} strongest in?"])
    cert = a.ch(CERTS[a.family])
    cmy, cms, _ = a.my((2022, 1), (2026, 5))
    a.add(a.f("Passed the {c} certification in {my}", c=cert, my=cmy), facets=["cert"], tags=["work", "education"],
          vf=cms, key="the %s certification" % cert)
    a.q("temporal", "cert", ["when did {she} get {pos} {c} certificate?", "which professional exam did {she} pass, and when?"], c=cert)
    d1, d2 = sorted(r.sample(range(5), 2))
    a.add(a.f("Works from home on {a}s and {b}s", a=DAYS[d1], b=DAYS[d2]), facets=["remote", "work_schedule"], tags=["work", "schedule"])
    a.q("paraphrase", "remote", ["which days is {she} not in the office?", "when is {she} remote?"])
    t1 = a.ch(["7:30", "8:00", "8:30", "9:00", "9:30"])
    t2 = a.ch(["16:30", "17:00", "17:30", "18:00", "18:30"])
    a.add(a.f("Usually starts work at {a} and logs off around {b}", a=t1, b=t2), facets=["hours", "work_schedule"], tags=["work", "schedule"])
    a.q("multi_fact", "work_schedule", ["which days does {she} spend at home for the job, and what hours does {she} keep?",
                                        "what does {pos} working week look like in terms of days and hours?"])
    a.q("paraphrase", "hours", ["when does {she} clock in and out?", "what are {pos} typical office hours?"])
    a.add(a.f("Team stand-up is every morning at {t}", t=a.ch(["9:15", "9:30", "9:45", "10:00"])), facets=["standup"], tags=["work"])
    a.q("paraphrase", "standup", ["when is {pos} daily sync meeting?"])
    goal = a.ch([("Wants to move into a management role within two years", "a management role", ["does {she} want {t}?"]),
                 ("Hopes to become a principal {r} one day", None, None),
                 ("Wants to go freelance eventually", "freelance", ["has {she} thought about going {t}?"]),
                 ("Is thinking about doing a part-time master's degree", "a master's degree", ["is {she} considering {t}?"])])
    a.add(a.f(goal[0], r=a.role), facets=["career_goal"], tags=["work", "goals"], key=goal[1], lex=goal[2], lexn=False)
    a.q("paraphrase", "career_goal", ["what are {pos} professional ambitions?", "where does {she} see {pos} career heading?"])
    if r.random() < 0.6:
        tmy, tms, _ = a.my((2022, 1), (2026, 5))
        city = a.ch([c for k, _, cs in COUNTRIES for c in cs if c != a.city])
        a.add(a.f("Gave a talk at a conference in {c} in {my}", c=city, my=tmy), facets=["talk"], tags=["work"], vf=tms)
        a.q("temporal", "talk", ["when did {she} last speak at a conference?", "when was {pos} conference talk in {c}?"], c=city)


def partner_rows(a):
    r = a.rng
    if r.random() >= 0.72:
        a.partner = None
        return
    pg = ("m" if a.g == "f" else "f") if r.random() < 0.85 else a.g
    married = r.random() < 0.5
    if married:
        relw = {"f": "Wife", "m": "Husband"}[pg]
    else:
        relw = r.choice(["Partner", "Partner", {"f": "Girlfriend", "m": "Boyfriend"}[pg]])
    p = a.person("partner", pg, relw)
    p.cohabit = married or r.random() < 0.7
    a.partner = p
    a.married = married


def partner_facts(a):
    p = a.partner
    if p is None:
        return
    r = a.rng
    job = r.choice(TP_JOBS)
    p.intro = a.add(a.tpt(p, a.ch(["{Rel} {N} works as a {j}", "{Rel} {N} is a {j}"]), j=job), who=p,
                    facets=[a.tpf(p, "job"), "relname:partner", a.tpf(p, "who")], tags=["family", "partner"])
    a.tpq(p, "third_party", "job", ["what does {N} do for work?", "what's {N}'s job?", "what line of work is {N} in?"])
    a.q("paraphrase", "relname:partner", ["who is {she} in a relationship with?", "what's the name of {pos} significant other?"])
    born = 2026 - a.age
    if a.married:
        y, m, d = a.rdate((max(2012, born + 22), 1), (2025, 10))
        p.met_by = y - 1
        a.add(a.f("Married {N} on {d} {m} {y}", N=p.name, d=d, m=MONTHS[m - 1], y=y),
              facets=["wedding", "relname:partner"], tags=["dates", "family"], vf=ms(y, m, d) if y >= 2022 else None)
        a.q("temporal", "wedding", ["when is {pos} wedding anniversary?", "when did {she} get married?"])
    else:
        my, vf, y = a.my((max(2015, born + 18), 1), (2025, 12))
        p.met_by = y
        a.add(a.f("Has been with {N} since {my}", N=p.name, my=my), facets=["together", "relname:partner"],
              tags=["family"], vf=vf if y >= 2022 else None)
        a.q("temporal", "together", ["how long has {she} been with {N}?", "when did {she} and {N} get together?"], N=p.name)
    tp_extras(a, p, r.randint(2, 3), ["birthday", "hobby", "diet", "health", "gift", "hometown", "met", "surprise"])


def tp_extras(a, p, k, allowed):
    r = a.rng
    opts = [x for x in allowed if x not in p.facets]
    r.shuffle(opts)
    opts = opts[:k]
    if "diet" in opts and "health" in opts:  # a food allergy would also answer "how is N's health?"
        opts.remove("health")
    for attr in opts:
        p.facets.append(attr)
        if attr == "birthday":
            d, m = r.randint(1, 28), r.randint(1, 12)
            a.add(a.tpt(p, a.ch(["{N}'s birthday is on {d} {m}", "{N} celebrates {npos} birthday on {d} {m}"]), d=d, m=MONTHS[m - 1]),
                  who=p, facets=[a.tpf(p, "birthday")], tags=["dates"])
            a.tpq(p, "third_party", "birthday", ["when is {N}'s birthday?", "what date is {N}'s birthday?"])
        elif attr == "hobby":
            a.add(a.tpt(p, a.pick_tp(TP_HOBBIES)), who=p, facets=[a.tpf(p, "hobby")], tags=["hobbies"])
            a.tpq(p, "third_party", "hobby", ["what is {N} into?", "what does {N} do for fun?", "what are {N}'s hobbies?"])
        elif attr == "diet":
            a.add(a.tpt(p, a.pick_tp(TP_DIETS)), who=p, facets=[a.tpf(p, "diet"), "tp_diet"], tags=["food"])
            a.tpq(p, "third_party", "diet", ["what should we keep in mind when cooking for {N}?",
                                             "does {N} have any dietary restrictions?"])
        elif attr == "health":
            t, dated = a.pick_tp(TP_HEALTH)
            my, vf, _ = a.my((2022, 1), (2026, 5))
            a.add(a.tpt(p, t, my=my), who=p, facets=[a.tpf(p, "health")] + ([a.tpf(p, "health_when")] if dated else []),
                  tags=["health"], vf=vf if dated else None)
            a.tpq(p, "third_party", "health", ["how is {N}'s health?", "has {N} had any medical problems?"])
            if dated:
                a.tpq(p, "temporal", "health_when", ["when did {N} have that operation or diagnosis?",
                                                     "when did {N}'s health issue start?"])
        elif attr == "gift":
            a.add(a.tpt(p, a.pick_tp(TP_GIFTS)), who=p, facets=[a.tpf(p, "gift")], tags=["gifts"])
            a.tpq(p, "third_party", "gift", ["what would make a good present for {N}?", "what could I get {N} as a gift?"])
        elif attr == "hometown":
            c = a.ch([x for k, _, cs in COUNTRIES for x in cs if x != a.city])
            a.add(a.tpt(p, "{N} grew up in {c}", c=c), who=p, facets=[a.tpf(p, "hometown")], tags=["family"])
            a.tpq(p, "third_party", "hometown", ["where is {N} originally from?", "where did {N} grow up?"])
        elif attr == "met":
            born = 2026 - a.age
            hi = min(2023, getattr(p, "met_by", 2023))
            lo = max(2008, born + 19)
            if p.rel == "partner" or lo > hi or r.random() < 0.6:
                lo = min(lo, hi)
                ctx = a.ch(MET_CONTEXTS).format(old=a.old_company)
                if "while working" in ctx and p.rel == "colleague":
                    ctx = "at a conference"
                y = r.randint(lo, hi)
                a.add(a.tpt(p, a.ch(["Met {N} {x} in {y}", "Knows {N} from {y}, when they met {x}"]), x=ctx, y=y), who=p,
                      facets=[a.tpf(p, "met")], tags=["friends"], vf=ms(y, 5, 10) if y >= 2022 else None)
            else:
                a.add(a.tpt(p, "Has known {N} since they met {x}", x=a.ch(MET_YOUNG)), who=p,
                      facets=[a.tpf(p, "met")], tags=["friends"])
            a.tpq(p, "third_party", "met", ["how did {she} meet {N}?", "where did {she} first meet {N}?"])
        elif attr == "surprise":
            a.add(a.tpt(p, "{N} hates surprises, so no surprise parties"), who=p, facets=[a.tpf(p, "surprise")])
            a.tpq(p, "third_party", "surprise", ["would {N} enjoy a surprise party?"])
        elif attr == "kids":
            k1 = a.take_name(r.choice("fm"))
            if r.random() < 0.5:
                k2 = a.take_name(r.choice("fm"))
                t = "{N} has two kids, {k1} and {k2}"
            else:
                k2 = None
                t = "{N} has a {age}-year-old called {k1}"
            a.add(a.tpt(p, t, k1=k1, k2=k2, age=r.randint(1, 12)), who=p, facets=[a.tpf(p, "kids"), "tp_kids"], tags=["family"])
            a.tpq(p, "third_party", "kids", ["does {N} have children?", "is {N} a parent?"])
        elif attr == "baby":
            my, vf, _ = a.my((2026, 7), (2027, 2))
            a.add(a.tpt(p, "{N} is expecting a baby in {my}", my=my), who=p, facets=[a.tpf(p, "baby"), "tp_kids"],
                  tags=["family"], vf=a.rec())
            a.tpq(p, "temporal", "baby", ["when is {N}'s baby due?"])
        elif attr == "pet":
            kind, breeds = a.ch(PETS[:2])
            pn = a.take_pet()
            a.add(a.tpt(p, "{N} has a {b} called {pn}", b=a.ch(breeds), pn=pn), who=p, facets=[a.tpf(p, "pet"), "tp_pet"], tags=["pets"])
            a.tpq(p, "third_party", "pet", ["does {N} have any pets?", "what animal does {N} have?"])
        elif attr == "study":
            a.add(a.tpt(p, "{N} is studying {s} at {u}", s=a.ch(STUDY_FIELDS), u="the University of %s" % (p.city or a.city)),
                  who=p, facets=[a.tpf(p, "study")], tags=["education"])
            a.tpq(p, "third_party", "study", ["what is {N} studying?", "what degree is {N} doing?"])
        elif attr == "newjob":
            my, vf, _ = a.my((2024, 1), (2026, 5))
            a.add(a.tpt(p, "{N} started a new job in {my}", my=my), who=p, facets=[a.tpf(p, "newjob")], tags=["work"], vf=vf)
            a.tpq(p, "temporal", "newjob", ["when did {N} change jobs?", "when did {N} start the new job?"])
        elif attr == "leave":
            my, vf, _ = a.my((2026, 7), (2027, 3))
            a.add(a.tpt(p, "{N} is on parental leave until {my}", my=my), who=p, facets=[a.tpf(p, "leave")], tags=["work"], vf=a.rec())
            a.tpq(p, "temporal", "leave", ["until when is {N} away on leave?", "when is {N} back at work?"])
        elif attr == "contact":
            a.add(a.tpt(p, a.ch(["{N} prefers texts to phone calls", "{N} rarely checks email; call {obj} instead".replace("{obj}", PRON[p.gender]["obj"])])),
                  who=p, facets=[a.tpf(p, "contact")])
            a.tpq(p, "third_party", "contact", ["what's the best way to reach {N}?"])


def place_for(a, p, abroad_p):
    r = a.rng
    if r.random() < abroad_p:
        k = r.choice([k for k, _, _ in COUNTRIES if k not in (a.country, a.origin)])
    else:
        k = a.origin if (a.expat and r.random() < 0.8) else a.country
    return r.choice(COUNTRY_CITIES[k]), k


def city_phrase(c, k):
    return "%s, %s" % (c, k.replace("the ", "")) if k else c


SIB_MENTIONS = [("Goes hiking with {pos} {rel} once a month", "who does {she} go walking in the hills with?"),
                ("Texts {pos} {rel} most days", "which relative is {she} in touch with daily?"),
                ("Is godparent to {pos} {rel}'s youngest child", "whose kid is {she} godparent to?"),
                ("Shares a streaming account with {pos} {rel}", "who does {she} split subscriptions with?"),
                ("Borrowed {pos} {rel}'s van for the last move", "whose vehicle did {she} use when relocating?")]


def family_rows(a):
    r = a.rng
    # siblings
    ns = r.choices([0, 1, 2, 3], [15, 35, 35, 15])[0]
    for _ in range(ns):
        g = r.choice("fm")
        base = {"f": "sister", "m": "brother"}[g]
        relw = r.choice(["", "", "older ", "younger "]) + base
        p = a.person("sibling", g, relw[:1].upper() + relw[1:])
        person_intro(a, p, abroad_p=0.3)
        tp_extras(a, p, r.randint(1, 3), ["birthday", "kids", "hobby", "diet", "health", "pet", "study", "gift", "newjob", "baby"])
    for base in sorted({p.relword.split()[-1].lower() for p in a.persons if p.rel == "sibling"}):
        if r.random() < 0.7:
            t, q = a.pick_tp(SIB_MENTIONS)
            a.add(a.f(t, rel=base), facets=["sibmention:" + t], tags=["family"])
            a.q("paraphrase", "sibmention:" + t, [q], rel=base)
    # parents
    a.parent_home = None
    for g, relw in (("f", "Mother"), ("m", "Father")):
        if r.random() < 0.85:
            p = a.person("parent", g, relw)
            person_intro(a, p, abroad_p=0.15, retired=r.random() < 0.55)
            tp_extras(a, p, r.randint(1, 2), ["health", "hobby", "birthday", "pet", "contact"])
    a.mother = next((p for p in a.persons if p.relword == "Mother"), None)
    a.parent_home = None
    # kids
    if r.random() < (0.38 if a.partner else 0.08):
        for _ in range(r.choice([1, 1, 2])):
            g = r.choice("fm")
            p = a.person("kid", g, {"f": "Daughter", "m": "Son"}[g])
            age = r.randint(1, max(1, min(16, a.age - 22)))
            grade = ("goes to nursery" if age < 3 else "is in preschool" if age < 6
                     else "is in primary school" if age < 12 else "is in secondary school")
            p.intro = a.add(a.tpt(p, "{Rel} {N} is {age} and {gr}", age=age, gr=grade), who=p,
                            facets=[a.tpf(p, "age"), a.tpf(p, "who"), "kids"], tags=["family", "kids"])
            a.tpq(p, "third_party", "age", ["how old is {N}?", "what school stage is {N} at?"])
            act = a.ch(KID_ACTIVITIES)
            if r.random() < 0.8:
                a.add(a.tpt(p, "{N} has {x} on {d}s", x=act, d=a.ch(DAYS[:6])), who=p, facets=[a.tpf(p, "activity")], tags=["kids"])
                a.tpq(p, "third_party", "activity", ["what after-school activity does {N} do?", "which day is {N}'s weekly class?"])
            tp_extras(a, p, r.randint(0, 1), ["birthday", "diet"])
    # grandparent, extended
    if r.random() < (0.5 if a.age < 45 else 0.0):
        g = r.choice("fm")
        p = a.person("extended", g, {"f": "Grandmother", "m": "Grandfather"}[g])
        person_intro(a, p, abroad_p=0.15, retired=True)
        tp_extras(a, p, r.randint(0, 1), ["health", "hobby"])
    for _ in range(r.choice([0, 1, 1, 2])):
        g = r.choice("fm")
        relw = r.choice({"f": ["Cousin", "Aunt", "Niece"], "m": ["Cousin", "Uncle", "Nephew"]}[g])
        p = a.person("extended", g, relw)
        person_intro(a, p, abroad_p=0.35)
        tp_extras(a, p, r.randint(0, 2), ["hobby", "kids", "study", "newjob", "pet"])


def person_intro(a, p, abroad_p, retired=False):
    r = a.rng
    c, k = place_for(a, p, abroad_p)
    p.city, p.country = c, k
    job = r.choice(RETIRED_JOBS if retired else TP_JOBS)
    show_k = k != a.country or r.random() < 0.3
    cp = city_phrase(c, k if show_k else None)
    fac_who = [a.tpf(p, "who"), a.tpf(p, "job")]
    if p.rel == "parent" and a.parent_home and r.random() < 0.75:
        c, k = a.parent_home
        p.city, p.country = c, k
        cp = city_phrase(c, k if (k != a.country or show_k) else None)
    if p.rel == "parent":
        a.parent_home = (c, k)
    if r.random() < 0.5:
        t = a.ch(["{Rel} {N} is a {j} in {cp}", "{Rel} {N} is a {j} living in {cp}", "{Rel} {N}, a {j}, lives in {cp}"])
        p.intro = a.add(a.tpt(p, t, j=job, cp=cp), who=p, facets=fac_who + [a.tpf(p, "city")], tags=["family"])
        p.city_row = p.intro
    else:
        p.intro = a.add(a.tpt(p, a.ch(["{Rel} {N} is a {j}"] if retired else ["{Rel} {N} works as a {j}", "{Rel} {N} is a {j}"]), j=job),
                        who=p, facets=fac_who, tags=["family"])
        if r.random() < 0.4:
            my, vf, _ = a.my((2022, 1), (2026, 5))
            p.city_row = a.add(a.tpt(p, "{N} moved to {cp} in {my}", cp=cp, my=my), who=p,
                               facets=[a.tpf(p, "city"), a.tpf(p, "moved")], tags=["family"], vf=vf)
            a.tpq(p, "temporal", "moved", ["when did {N} move to {c}?"], c=c)
        else:
            p.city_row = a.add(a.tpt(p, a.ch(["{N} lives in {cp}", "{N} is based in {cp}"]), cp=cp), who=p,
                               facets=[a.tpf(p, "city")], tags=["family"])
    p.city_row["_f"].add("relcity")
    if p.rel in ("sibling", "parent", "extended") and k != a.country:
        p.city_row["_f"].add("relatives_abroad")
    if p.rel == "friend" and c == a.city:
        p.city_row["_f"].add("friends_local")
    p.intro["_f"].add("group:" + p.rel)
    if retired:
        a.tpq(p, "third_party", "job", ["what did {N} do before retiring?", "what was {N}'s profession?"])
    else:
        a.tpq(p, "third_party", "job", ["what does {N} do for work?", "what's {N}'s job?", "what does {pos} {rel} {N} do?"])
    a.tpq(p, "third_party", "city", ["where does {N} live?", "which city is {N} based in?"])
    a.tpq(p, "third_party", "who", ["who is {N}?", "how is {N} related to {obj}?"])


def friends_rows(a):
    r = a.rng
    nf = r.choice([3, 3, 4, 4, 5])
    best = True
    for i in range(nf):
        g = r.choice("fm")
        p = a.person("friend", g, "Best friend" if best else "Friend")
        best = False
        c, k = place_for(a, p, 0.15) if r.random() < 0.45 else (a.city, a.country)
        p.city, p.country = c, k
        cp = city_phrase(c, k if k != a.country else None)
        job = a.ch(TP_JOBS)
        style = r.random()
        if style < 0.35:
            p.intro = a.add(a.tpt(p, "{Rel} {N} is a {j} in {cp}", j=job, cp=cp), who=p,
                            facets=[a.tpf(p, "who"), a.tpf(p, "job"), a.tpf(p, "city")], tags=["friends"])
            p.city_row = p.intro
        elif style < 0.65:
            p.intro = a.add(a.tpt(p, "{Rel} {N}, from university, works as a {j}", j=job), who=p,
                            facets=[a.tpf(p, "who"), a.tpf(p, "job"), a.tpf(p, "met")], tags=["friends"])
            p.facets.append("met")
            a.tpq(p, "third_party", "met", ["how did {she} meet {N}?", "where did {she} first meet {N}?"])
            p.city_row = a.add(a.tpt(p, a.ch(["{N} lives in {cp}", "{N} is based in {cp}"]), cp=cp), who=p,
                               facets=[a.tpf(p, "city")], tags=["friends"])
        else:
            p.intro = a.add(a.tpt(p, "{Rel} {N} works as a {j}", j=job), who=p,
                            facets=[a.tpf(p, "who"), a.tpf(p, "job")], tags=["friends"])
            if r.random() < 0.5:
                my, vf, _ = a.my((2022, 1), (2026, 5))
                p.city_row = a.add(a.tpt(p, "{N} moved to {cp} in {my}", cp=cp, my=my), who=p,
                                   facets=[a.tpf(p, "city"), a.tpf(p, "moved")], tags=["friends"], vf=vf)
                a.tpq(p, "temporal", "moved", ["when did {N} move to {c}?"], c=c)
            else:
                p.city_row = a.add(a.tpt(p, "{N} lives in {cp}", cp=cp), who=p, facets=[a.tpf(p, "city")], tags=["friends"])
        if c == a.city:
            p.city_row["_f"].add("friends_local")
        p.intro["_f"].add("group:friend")
        a.tpq(p, "third_party", "job", ["what does {N} do for work?", "what's {N}'s job?", "how does {N} earn a living?"])
        a.tpq(p, "third_party", "city", ["where does {N} live?", "which city is {N} based in?"])
        tp_extras(a, p, r.randint(1, 3), ["met", "birthday", "kids", "pet", "diet", "hobby", "gift", "surprise", "baby", "contact"])


def colleagues_rows(a):
    r = a.rng
    manager = True
    for _ in range(r.choice([2, 2, 3])):
        g = r.choice("fm")
        if manager:
            p = a.person("colleague", g, "Manager")
            p.intro = a.add(a.tpt(p, "{Rel} {N} leads the {t} team at {c}", t=a.ch(TEAMS), c=a.company), who=p,
                            facets=[a.tpf(p, "who"), a.tpf(p, "job"), "employer"], tags=["work", "colleagues"])
            manager = False
        elif r.random() < 0.3:
            p = a.person("colleague", g, "Mentor")
            p.intro = a.add(a.tpt(p, "{Rel} {N} is a {j} at {c}", j=a.ch(OFFICE_ROLES), c=a.mentor_company), who=p,
                            facets=[a.tpf(p, "who"), a.tpf(p, "job")], tags=["work"])
        else:
            p = a.person("colleague", g, "Colleague")
            p.intro = a.add(a.tpt(p, "{Rel} {N} is the {j} on {pos} team", j=a.ch(OFFICE_ROLES)), who=p,
                            facets=[a.tpf(p, "who"), a.tpf(p, "job")], tags=["work", "colleagues"])
        if p.relword != "Mentor":
            p.intro["_f"].add("group:colleague")
        a.tpq(p, "third_party", "job", ["what is {N}'s role?", "what does {N} do at work?"])
        a.tpq(p, "third_party", "who", ["who is {N}?"])
        tp_extras(a, p, r.randint(0, 2), ["birthday", "diet", "hobby", "leave", "contact", "met"])
    if r.random() < 0.45:
        g = r.choice("fm")
        p = a.person("neighbour", g, "Neighbour")
        p.intro = a.add(a.tpt(p, "{Rel} {N} lives next door and works as a {j}", j=a.ch(TP_JOBS)), who=p,
                        facets=[a.tpf(p, "who"), a.tpf(p, "job")], tags=["home"])
        a.tpq(p, "third_party", "job", ["what does {N} do for work?"])
        if "plants" not in a.excl:
            a.add(a.f("Asks {pos} neighbour {N} to water the plants while {she} is travelling", N=p.name), facets=["plant_sitter"], tags=["home"])
            a.q("paraphrase", "plant_sitter", ["who looks after {pos} greenery when {she} is away?"])
        a.neighbour = p
    else:
        a.neighbour = None


def people_groups(a):
    a.q("multi_fact", "group:sibling", ["who are {pos} siblings?", "what brothers or sisters does {she} have?"])
    a.q("multi_fact", "group:parent", ["what do {pos} parents do for a living?", "what are {pos} parents' jobs?"])
    a.q("multi_fact", "kids", ["how many children does {she} have, and how old are they?", "what are {pos} kids' names and ages?"])
    a.q("multi_fact", "relatives_abroad", ["which of {pos} relatives live abroad?", "who in {pos} family lives in another country?"])
    a.q("multi_fact", "friends_local", ["which of {pos} friends live in {c}?", "who among {pos} friends is also in {c}?"], c=a.city)
    a.q("multi_fact", "group:colleague", ["who does {she} work with?", "who are the people in {pos} team at work?"])
    a.q("multi_fact", "tp_diet", ["which people around {obj} have dietary restrictions?", "who among {pos} friends and family has special food needs?"])
    a.q("multi_fact", "tp_pet", ["which of {pos} friends or relatives have pets?"])
    if not any(p.rel == "kid" for p in a.persons):
        a.q("multi_fact", "tp_kids", ["which of {pos} friends or relatives have kids or a baby on the way?"])


def pets_rows(a):
    r = a.rng
    n = r.choices([0, 1, 2, 3], [20, 35, 35, 10])[0]
    a.pets = []
    for i in range(n):
        kind, breeds = r.choice(PETS if i else PETS[:2])
        breed = r.choice([b for b in breeds if b not in [x[2] for x in a.pets]])
        name = a.take_pet()
        a.pets.append((name, kind, breed))
        if r.random() < 0.55:
            my, vf, y = a.my((2022, 1), (2026, 4))
            t = a.ch(["Adopted {pn}, a {b}, in {my}", "Got {pn}, a {b}, in {my}"])
            row = a.add(a.f(t, pn=name, b=breed, my=my), facets=["pet_intro", "has_pet", "pet:" + name, "pet_when:" + name],
                        tags=["pets"], vf=vf, key=name, lex=["who is {t}?", "what kind of animal is {t}?"])
            a.q("temporal", "pet_when:" + name, ["when did {she} get {pn}?", "how long has {she} had {pn}?"], pn=name)
        else:
            t = a.ch(["Has a {b} named {pn}", "Has a {b} called {pn}"])
            row = a.add(a.f(t, pn=name, b=breed), facets=["pet_intro", "has_pet", "pet:" + name], tags=["pets"],
                        key=name, lex=["who is {t}?", "what kind of animal is {t}?"])
        for t in r.sample(PET_EXTRAS, r.choice([0, 1, 1, 2])):
            my, vf, _ = a.my()
            ex = a.f(t, pet=name, n=r.randint(1, 14), sur=a.ch(SURNAMES), my=my)
            a.add(ex, facets=["pet:" + name], tags=["pets"], vf=vf if "{my}" in t else None)
    if n >= 1 and any(k == "dog" for _, k, _ in a.pets):
        a.add(a.f("Walks the dog along the river every morning before work"), facets=["has_pet", "dog_walk"], tags=["pets", "routine"])
    if n == 1:
        a.q("paraphrase", "has_pet", ["does {she} have any animals at home?", "is there an animal in {pos} household?"])
    a.q("multi_fact", "pet_intro", ["what pets does {she} have?", "which animals live with {obj}?"])


def health_rows(a):
    r = a.rng
    has_med = r.random() < 0.55
    has_food = r.random() < 0.5
    if has_med:
        drug = a.ch(MED_ALLERGIES)
        a.add(a.f(a.ch(["Allergic to {d}", "Has a {d} allergy that causes hives", "Reacts badly to {d}: rash and swelling"]), d=drug),
              facets=["allergy_med", "allergies"], tags=["health", "allergy"], key=drug.split()[0],
              lex=["is {she} ok taking {t}?", "can {she} be given {t}?"])
        a.q("paraphrase", "allergy_med", ["is there any medicine {she} must avoid?", "which pharmaceuticals are unsafe for {obj}?"])
    if has_food:
        t, k = a.ch(FOOD_ALLERGY)
        a.food_allergy = k
        a.add(a.f(t), facets=["allergy_food", "allergies"], tags=["health", "food"], key=k, lex=["can {she} eat {t}?", "is {t} a problem for {obj}?"])
        a.q("paraphrase", "allergy_food", ["does any food make {obj} ill?", "which ingredients should a restaurant be warned about?"])
    if has_food and a.food_allergy in ("lactose", "gluten"):
        a.rows[-1]["_lex"] = ["is {t} a problem for {obj}?"]
    else:
        a.food_allergy = None
    a.q("multi_fact", "allergies", ["what is {she} allergic or intolerant to?", "which substances does {she} react badly to?"])
    t, k, lq, pq = a.ch([d for d in DIETS if not (has_food and d[1] == "FODMAP")])
    a.diet = k
    a.add(a.f(t, y=r.randint(max(2010, 2026 - a.age + 14), 2023), n=r.randint(2, 9)), facets=["diet"], tags=["food"], key=k,
          lex=[lq], lexn=False)
    a.q("paraphrase", "diet", [pq])
    for t, k, q in r.sample(DISLIKES, r.choice([1, 2, 2])):
        a.add(a.f(t), facets=["dislike:" + k, "dislikes"], tags=["food", "preferences"], key=k,
              lex=["how does {she} feel about {t}?", "would {she} like a dish with {t}?"])
        a.q("paraphrase", "dislike:" + k, [q])
    a.q("multi_fact", "dislikes", ["which foods does {she} dislike?", "what should I leave off {pos} plate?"])
    dish = a.ch([d for d in DISHES if not any(w in d for w in ("mushroom",))])
    a.add(a.f(a.ch(["Favourite dish is {d}", "Could eat {d} every week; it's {pos} favourite"]), d=dish),
          facets=["fav_food"], tags=["food", "preferences"], key=dish)
    a.q("paraphrase", "fav_food", ["what meal does {she} love most?", "what should I cook to make {obj} happy?"])
    drink = a.ch([("Drinks an oat-milk flat white every morning", ["what hot beverage does {she} start the day with?"]),
                  ("Doesn't drink coffee; prefers green tea", ["is {she} a caffeine person?"]),
                  ("Takes {pos} coffee black, two cups before noon", ["how does {she} like {pos} espresso or filter brew?"]),
                  ("Drinks rooibos tea in the evenings and no caffeine after 14:00", ["when does {she} stop having caffeine?"])])
    a.add(a.f(drink[0]), facets=["drink"], tags=["food", "preferences"])
    a.q("paraphrase", "drink", drink[1])
    conds = r.sample(CONDITIONS, r.choice([0, 1, 1, 2]))
    if {"asthma", "hay fever"} <= {k for _, k, _ in conds}:  # both read as breathing trouble
        conds = conds[:1]
    for t, k, q in conds:
        a.add(a.f(t), facets=["cond:" + k, "health_issues"], tags=["health"], key=k, lex=["what's the situation with {pos} {t}?"])
        a.q("paraphrase", "cond:" + k, [q])
    if r.random() < 0.35:
        t, k, q = a.ch(INJURIES)
        my, vf, _ = a.my((2025, 6), (2026, 5))
        a.add(a.f(t, my=my), facets=["injury", "health_issues"], tags=["health"], vf=vf, key=k,
              lex=["what happened to {pos} {t}?"], lexn=False)
        a.q("temporal", "injury", [q])
        a.q("paraphrase", "injury", ["is {she} recovering from any physical harm?", "has {she} been hurt recently?"])
    a.q("multi_fact", "health_issues", ["apart from allergies and intolerances, what health issues does {she} have?",
                                        "leaving allergies aside, what medical conditions or injuries should I know about?"])
    a.add(a.f("Usually goes to bed around {t}", t=a.ch(["22:30", "23:00", "23:30", "midnight", "1:00"])), facets=["sleep"], tags=["routine"])
    a.q("paraphrase", "sleep", ["what time does {she} turn in at night?", "is {she} a night owl?"])
    gd = sorted(r.sample(range(6), 3))
    a.add(a.f("Goes to the gym on {a}, {b} and {c} mornings", a=DAYS[gd[0]], b=DAYS[gd[1]], c=DAYS[gd[2]]),
          facets=["gym"], tags=["routine", "fitness"])
    a.q("paraphrase", "gym", ["which days does {she} work out?", "when does {she} lift weights or exercise?"])
    sur = a.ch(SURNAMES)
    a.add(a.f("Family doctor is Dr {s} at the local health centre", s=sur), facets=["gp"], tags=["health"], key=sur,
          lex=["who is Dr {t}?"])
    a.q("paraphrase", "gp", ["who is {pos} GP?", "which physician looks after {obj}?"])
    if r.random() < 0.5:
        a.add(a.f(a.ch(["Wears contact lenses; quite short-sighted", "Needs reading glasses for small print"])), facets=["eyes"], tags=["health"])
        a.q("paraphrase", "eyes", ["does {she} need anything to see properly?", "how is {pos} eyesight?"])


def hobbies_rows(a):
    r = a.rng
    groups = set()
    chosen = []
    if r.random() < 0.55:
        inst = a.ch(INSTRUMENTS)
        chosen.append(("inst:" + inst, "music", [
            a.ch(["Started learning the {i} in {y}", "Has been learning the {i} since {y}", "Picked up the {i} in {y}"]),
            a.ch(["Takes {i} lessons on {day} evenings", "Practises the {i} for half an hour most evenings",
                  "Plays the {i} in a community orchestra that rehearses on {day}s"])],
            ["what instrument has {she} taken up?", "is {she} learning to play something?"], "the " + inst))
        groups.add("music")
        a.instrument = inst
    else:
        a.instrument = None
    pool = OTHER_HOBBIES[:]
    r.shuffle(pool)
    want = r.randint(3, 5)
    for key, grp, rows, para, lk in pool:
        if len(chosen) >= want + (1 if a.instrument else 0):
            break
        if grp in groups:
            continue
        groups.add(grp)
        chosen.append(("hobby:" + key, grp, rows, para, lk))
    a.hobby_keys = [c[0] for c in chosen]
    sport_groups = {"climb", "racket", "water", "run", "mat", "martial", "team", "snow"}
    for fkey, grp, rows, para, lk in chosen:
        use = rows[:]
        if grp in sport_groups or r.random() < 0.35:
            use = [rows[0]] if r.random() < 0.5 else [rows[1]]
        made = []
        for t in use:
            has_y = "{y}" in t
            y = r.randint(2014, 2026) if has_y else None
            my, vf, _ = a.my((2022, 1), (2026, 5))
            c = a.f(t, i=fkey.split(":", 1)[1], y=y, my=my, day=a.ch(DAYS), n=r.choice([1400, 1650, 1800, 40, 60]))
            if "{n}" in t and "board" in t:
                c = a.f(t, n=r.choice([40, 60, 80]), day=a.ch(DAYS))
            if "{n}" in t and "chess" in t:
                c = a.f(t, n=r.choice([1400, 1650, 1800]))
            fac = [fkey]
            if made == [] and grp in sport_groups:
                fac.append("sports")
            if grp == "music" or fkey.startswith("inst:"):
                fac.append("music_make")
            row_vf = None
            if has_y:
                fac.append("started:%d" % y)
                if y >= 2022:
                    row_vf = ms(y, r.randint(1, REF[1] if y == 2026 else 12), r.randint(1, 28))
            elif "{my}" in t:
                fac.append("hobby_when:" + fkey)
                row_vf = vf
            row = a.add(c, facets=fac, tags=["hobbies"], vf=row_vf, key=lk,
                        lex=["how's {t} going?", "how good is {she} at {t}?"] if fkey.startswith("inst:") else
                        ["what has {she} said about {t}?"])
            made.append(row)
            if has_y:
                a.started.append((y, row))
                label = HOBBY_LABEL.get(fkey.split(":", 1)[1], fkey.split(":", 1)[1])
                a.q("temporal", "started_one:" + fkey, ["when did {she} start with {h}?"] + (
                    ["since when has {she} been doing {h}?"] if not label.startswith("the ") else [])
                    if not fkey.startswith("inst:") else ["when did {she} start learning the {h}?"], h=label)
                row["_f"].add("started_one:" + fkey)
            if "{my}" in t:
                a.q("temporal", "hobby_when:" + fkey, ["when did {she} reach that milestone in {h}?"],
                    h=HOBBY_LABEL.get(fkey.split(":", 1)[1], fkey.split(":", 1)[1]))
        a.q("paraphrase", fkey, para)
    a.q("multi_fact", "sports", ["which sports does {she} play or train in?", "what sports is {she} into?"])


def started_questions(a):
    for y in sorted({y for y, _ in a.started}):
        a.q("temporal", "started:%d" % y, ["which hobby did {she} begin in {y}?", "what new pastime did {she} pick up in {y}?"] +
            (["what hobby did {she} start last year?"] if y == REF[0] - 1 else []), y=y)


def travel_rows(a):
    r = a.rng
    dests = [d for d in DESTS if d[1] not in (a.country.replace("the ", ""), a.origin.replace("the ", ""))]
    r.shuffle(dests)
    ntr = r.choice([2, 3, 3, 4])
    past = dests[:ntr]
    years = [r.randint(2022, 2025) for _ in past]
    if ntr >= 3 and r.random() < 0.6:
        years[1] = years[0]
    used_my = set()
    a.trip_places = []
    for (place, country, detail), y in zip(past, years):
        m = r.randint(1, 12)
        while (y, m) in used_my:
            m = r.randint(1, 12)
        used_my.add((y, m))
        my = "%s %d" % (MONTHS[m - 1], y)
        t = a.ch(["Visited {p} in {my} and loved {d}", "Spent two weeks {inp} in {my}; the highlight was {d}",
                  "Travelled to {p} in {my}"])
        a.add(a.f(t, p=place, my=my, d=detail, inp=("on " if "Isle" in place else "in ") + place), facets=["trip:" + place, "trip_year:%d" % y, "trip_my:" + my, "trip_country:" + country],
              tags=["travel"], vf=ms(y, m, r.randint(1, 28)), key=place.replace("the ", ""),
              lex=["what did {she} think of {t}?", "was {she} ever in {t}?"])
        a.trip_places.append(place)
        a.q("temporal", "trip:" + place, ["when was {she} in {p}?", "when did {she} go to {p}?"], p=place)
        a.q("temporal", "trip_my:" + my, ["where did {she} go on holiday in {my}?", "where was {she} on holiday in {my}?"], my=my)
        a.q("paraphrase", "trip_country:" + country, ["has {she} ever been to {c}?", "did {she} ever holiday in {c}?"], c=country)
    for y in sorted(set(years)):
        a.q("multi_fact", "trip_year:%d" % y, ["where did {she} go on holiday in {y}?", "which holidays did {she} take in {y}?"], y=y)
    place, country, _ = dests[ntr]
    my, _, _ = a.my((2026, 7), (2027, 5))
    a.plan = place
    a.add(a.f(a.ch(["Planning a trip to {p} in {my}", "Has a trip to {p} booked for {my}"]), p=place, my=my),
          facets=["trip_plan", "trip_plan_where"], tags=["travel", "plans"], key=place.replace("the ", ""))
    a.q("paraphrase", "trip_plan_where", ["where is {she} heading on holiday next?", "what's {pos} upcoming vacation?"])
    a.q("temporal", "trip_plan", ["when is {pos} next big trip?", "when does {she} leave for {p}?"], p=place)
    prefs = r.sample([
        ("Prefers aisle seats on [long flights|flights over two hours]", "seat", ["where does {she} like to sit on a plane?"]),
        ("Always travels with carry-on luggage only", "luggage", ["does {she} check bags when flying?"]),
        ("Gets seasick on boats", "seasick", ["does {she} cope well on ferries?"]),
        ("Prefers window seats on trains", "trainseat", ["where does {she} like to sit when going somewhere by rail?"]),
        ("[Likes to book small guesthouses rather than big hotels|Prefers family-run guesthouses to chain hotels]", "lodging", ["what kind of accommodation does {she} choose?"]),
        ("Hates early-morning flights", "flight_time", ["is a 6am departure a good idea for {obj}?"]),
    ], r.choice([2, 3]))
    for t, k, q in prefs:
        if k == "luggage" and "packing" in a.excl:
            continue
        a.add(a.f(t), facets=["travel:" + k, "travel_prefs"], tags=["travel", "preferences"])
        a.q("paraphrase", "travel:" + k, q)
    a.q("multi_fact", "travel_prefs", ["what are {pos} travel preferences?", "what should I keep in mind when booking a trip for {obj}?"])


COMM = [("[Prefers concise answers without emoji|Wants short replies and no emoji]", "emoji", ["should I use smileys when I write to {obj}?"]),
        ("Likes bullet points for anything longer than three sentences", "bullets", ["how should long replies to {obj} be structured?"]),
        ("Wants sources linked whenever facts are cited", "sources", ["does {she} want references for claims?"]),
        ("[Prefers a short summary first, details after|Likes the conclusion up front and the details afterwards]", "summary", ["should the main point come at the top of a reply?"]),
        ("[Dislikes exclamation marks in messages|Finds exclamation marks in messages grating]", "exclaim", ["what punctuation does {she} find annoying?"]),
        ("Wants metric units and 24-hour times", "units", ["should I give distances in miles or kilometres?"]),
        ("Likes to be addressed informally", "informal", ["should I write to {obj} in a formal tone?"]),
        ("Prefers code examples over long explanations", "code", ["does {she} prefer to see snippets or prose?"])]


def prefs_rows(a):
    r = a.rng
    comm = r.sample(COMM, r.choice([2, 2, 3]))
    if {"bullets", "summary"} <= {k for _, k, _ in comm}:  # both answer "how should replies be structured?"
        comm = [c for c in comm if c[1] != "summary"]
    for t, k, q in comm:
        a.add(a.f(t), facets=["comm:" + k, "comm"], tags=["preferences", "communication"])
        a.q("paraphrase", "comm:" + k, q)
    if r.random() < 0.5:
        a.add("Prefers detailed, long-form answers", facets=["comm_old"], tags=["preferences"], vf=ms(2022, 3, 2),
              vt=ms(2023, r.randint(1, 12), 5), status="superseded")
    a.q("multi_fact", "comm", ["how does {she} like responses to be written?", "what are {pos} preferences for how I reply?"])
    tools = []
    tools.append(("Keeps all {pos} notes in {x}", "notes", a.ch(NOTE_APPS), ["which note-taking app does {she} use?"]))
    if a.family == "tech" or r.random() < 0.2:
        tools.append(("Writes code in {x}", "editor", a.ch(EDITORS), ["which text editor does {she} program with?"]))
    if r.random() < 0.6:
        tools.append(("Uses {x} as a password manager", "passwords", a.ch(PASSWORD), ["how does {she} store {pos} logins?"]))
    if r.random() < 0.5:
        tools.append(("Tracks to-dos in {x}", "tasks", a.ch(TASKS), ["which app holds {pos} task list?"]))
    for t, k, x, q in tools:
        a.add(a.f(t, x=x), facets=["tool:" + k, "tools"], tags=["tools"], key=x, lex=["does {she} use {t}?", "what does {she} use {t} for?"])
        a.q("paraphrase", "tool:" + k, q)
    a.q("multi_fact", "tools", ["which apps does {she} rely on day to day?", "what software does {she} use?"])
    a.add(a.f("Listens mostly to {m}", m=a.ch(MUSIC)), facets=["music_taste"], tags=["preferences", "music"])
    a.q("paraphrase", "music_taste", ["what sort of tunes does {she} put on?", "what's {pos} favourite genre of songs?"])
    a.add(a.f("Reads mostly {b}, about {n} a month", b=a.ch(BOOKS), n=a.ch(["one", "two", "three"])), facets=["reading"], tags=["preferences", "books"])
    a.q("paraphrase", "reading", ["what kind of literature does {she} enjoy?", "what genre should I recommend for {pos} next book?"])
    if r.random() < 0.6:
        club = a.ch(CLUBS)
        a.add(a.f("Supports {c} and watches every derby", c=club), facets=["club"], tags=["sports"], key=club)
        a.q("paraphrase", "club", ["which football team does {she} cheer for?"])
    if r.random() < 0.5:
        a.add("Buys most clothes second-hand", facets=["secondhand"], tags=["preferences"])
        a.q("paraphrase", "secondhand", ["does {she} shop in thrift stores?"])


def education_rows(a):
    r = a.rng
    field = {"tech": ["computer science", "mathematics", "physics"], "design": ["graphic design", "architecture", "fine arts"],
             "biz": ["economics", "business administration", "law", "languages"], "eng": ["mechanical engineering", "civil engineering", "chemistry"],
             "health": ["pharmacy", "nursing", "psychology", "biomedical science"]}[a.family]
    fld = a.ch(field)
    uni_t = {"tech": ["the University of {c}", "the Technical University of {c}"], "eng": ["the University of {c}", "the Technical University of {c}"],
             "biz": ["the University of {c}", "the {c} School of Economics"] if fld in ("economics", "business administration") else ["the University of {c}"],
             "design": ["the University of {c}", "the {c} Academy of Art and Design"], "health": ["the University of {c}"]}[a.family]
    uni = a.ch(uni_t).format(c=a.hometown if r.random() < 0.6 else a.ch(COUNTRY_CITIES[a.origin]))
    gy = a.age and (2026 - a.age + r.randint(21, 24))
    gy = min(gy, 2025)
    a.add(a.f(a.ch(["Studied {f} at {u}, graduating in {y}", "Has a degree in {f} from {u} ({y})"]), f=fld, u=uni, y=gy),
          facets=["degree"], tags=["education"], vf=ms(gy, 7, 1) if gy >= 2022 else None)
    a.q("paraphrase", "degree", ["what did {she} major in at college?", "where did {she} go to college?"])
    a.q("temporal", "degree", ["when did {she} finish {pos} studies?", "what year did {she} graduate?"])
    learning = a.ch([l for l in LEARNABLE_LANGS if l not in a.spoken])
    a.learning = None
    if r.random() < 0.55:
        a.learning = learning
        my, vf, y = a.my((2022, 1), (2026, 4))
        a.add(a.f(a.ch(["Started {l} evening classes in {my}", "Taking {l} evening classes since {my}"]), l=learning, my=my),
              facets=["learning_lang", "studying", "lang_both", "started:%d" % y], tags=["education", "language"], vf=vf, key=learning,
              lex=["how is {pos} {t} coming along?"])
        a.started.append((y, a.rows[-1]))
        a.q("paraphrase", "learning_lang", ["which foreign tongue is {she} trying to pick up?"])
        a.q("temporal", "learning_lang", ["when did {she} begin {pos} {l} lessons?"], l=learning)
        a.q("multi_fact", "lang_both", ["which languages does {she} speak, and which one is {she} learning?"])
    if r.random() < 0.45:
        topic = a.ch(["data visualisation", "negotiation skills", "UX writing", "project finance", "public speaking"] +
                     ([] if "hobby:film photography" in a.hobby_keys else ["photography"]))
        a.add(a.f("Doing an online course in {t} on weekends", t=topic), facets=["course", "studying"], tags=["education"], key=topic)
        a.q("paraphrase", "course", ["is {she} upskilling in anything at the weekend?"])
    a.q("multi_fact", "studying", ["what is {she} currently studying?", "which classes is {she} taking at the moment?"])


def finance_rows(a):
    r = a.rng
    opts = [("Saving for a deposit on a [flat|house]", "saving", ["what big purchase or plan is {she} putting money toward?"]),
            ("Saving up for a sabbatical year", "saving", ["what big purchase or plan is {she} putting money toward?"]),
            ("Pays off the credit card in full every month", "credit", ["does {she} carry any card debt?"]),
            ("Invests a fixed amount in [an index fund|a global ETF] each month", "invest", ["does {she} put money in the stock market?"]),
            ("Splits household bills through a joint account", "bills", ["how are shared expenses handled at home?"]),
            ("Pays rent by standing order on the 1st", "rent", ["when does {pos} rent go out?"]),
            ("Keeps an emergency fund of about [three|six] months of expenses", "emergency", ["does {she} have a financial safety net?"])]
    if "budget" not in a.excl:
        opts.append(("Tracks spending with a budgeting app", "budgeting", ["how does {she} keep an eye on expenses?"]))
    r.shuffle(opts)
    seen = set()
    for t, k, q in opts[: r.randint(2, 4)]:
        if k in seen or (k == "bills" and not a.partner) or (a.owns and (k == "rent" or "deposit" in t)):
            continue
        seen.add(k)
        a.add(a.f(t), facets=["fin:" + k], tags=["finance"])
        a.q("paraphrase", "fin:" + k, q)


def routine_rows(a):
    r = a.rng
    if a.mother:
        a.add(a.f("Calls {pos} mother every {d} evening", d=a.ch(["Sunday", "Saturday", "Wednesday"])), facets=["call_mum"], tags=["family", "routine"])
        a.q("paraphrase", "call_mum", ["when does {she} usually phone {pos} mum?"])
    opts = [("grocery", "Does a big grocery shop on [Saturday|Sunday|Friday] [mornings|evenings]", ["when does {she} buy food for the week?"]),
            ("morning", "Meditates for ten minutes right after getting up", ["what's the first thing {she} does each day?"]),
            ("mealprep", "Meal-preps lunches for the week on Sunday afternoons", ["does {she} cook ahead for weekday lunches?"]),
            ("cleaning", "Cleans the flat every other Saturday", ["how often does {she} tidy up at home?"]),
            ("friday", "Has a standing Friday dinner with friends at [a Lebanese place|a ramen bar|a pizzeria] near [{pos} flat|the office]", ["what are {pos} usual plans at the end of the week?"]),
            ("journal", "Writes a journal every night before bed", ["does {she} keep a diary?"]),
            ("news", "Reads the news [on a tablet|in a paper newspaper|in a news app] with breakfast", ["how does {she} keep up with current affairs?"]),
            ("market", "Buys flowers at the [Saturday|Sunday] market", ["where does {she} get fresh bouquets?"])]
    for k, t, q in r.sample(opts, r.randint(2, 4)):
        if k in a.excl or (k == "morning" and "hobby:yoga" in a.hobby_keys):
            continue
        a.add(a.f(t), facets=["routine:" + k], tags=["routine"])
        a.q("paraphrase", "routine:" + k, q)


def possessions_rows(a):
    r = a.rng
    a.car = None
    if a.has_car:
        car = a.ch(CARS)
        a.car = car
        a.add(a.f("Drives a {c} {y} {m}", c=a.ch(COLOURS), y=r.randint(2012, 2024), m=car), facets=["car", "vehicles"],
              tags=["possessions"], key=car, lex=["what colour is {pos} {t}?", "how old is {pos} {t}?"])
        a.q("paraphrase", "car", ["what kind of automobile does {she} own?", "which make and model does {she} drive?"])
    else:
        a.add(a.f("Doesn't own a car and relies on public transport"), facets=["car"], tags=["possessions"])
        a.q("paraphrase", "car", ["is there an automobile in {pos} household?", "does {she} own an automobile?"])
    a.bike = None
    if a.has_bike:
        b, k = a.ch(BIKES)
        a.bike = b
        a.add(a.f("Owns a {b}", b=b), facets=["bike", "vehicles"], tags=["possessions"], key=k)
        a.q("paraphrase", "bike", ["does {she} have a bicycle?", "what does {she} cycle on?"])
    a.q("multi_fact", "vehicles", ["what vehicles does {she} own?", "what does {she} have for getting around?"])
    if r.random() < 0.5:
        a.add(a.f(a.ch(["Reads on a Kindle Paperwhite", "Reads on a Kobo e-reader"])), facets=["ereader"], tags=["possessions"])
        a.q("paraphrase", "ereader", ["does {she} read paper books or on a device?"])


GOALS = [("Wants to run a half marathon before turning {n}", "half marathon", ["what race is {she} training toward?"]),
         ("Aims to read 30 books this year", "30 books", ["does {she} have a reading target for the year?"]),
         ("Wants to walk the Camino de Santiago", "Camino", ["is there a pilgrimage {she} dreams of doing?"]),
         ("Trying to cut screen time to under two hours a day", "screen time", ["is {she} trying to spend less time on {pos} phone?"]),
         ("Wants to do a multi-day cycling tour from {a} to {b}", "cycling tour", ["what long ride is {she} dreaming about?"]),
         ("Hopes to publish a short story collection", "short story", ["does {she} have any writing ambitions?"]),
         ("Aims to cook one new recipe every week", "recipe", ["is {she} trying to expand {pos} kitchen repertoire?"]),
         ("Wants to learn to sail", "sail", ["is there a boating skill {she} wants to learn?"]),
         ("Plans to climb Kilimanjaro", "Kilimanjaro", ["which mountain does {she} want to summit?"])]
GOAL_CLASH = {"Kilimanjaro": "hobby:bouldering", "sail": "hobby:rowing"}


def goals_rows(a):
    r = a.rng
    opts = [g for g in GOALS if GOAL_CLASH.get(g[1]) not in a.hobby_keys]
    for t, k, q in r.sample(opts, r.choice([2, 2, 3])):
        c = a.f(t, n=(a.age // 10 + 1) * 10, l=a.learning, y=2026, a=a.city, b=a.ch([x for x in COUNTRY_CITIES[a.country] if x != a.city]))
        a.add(c, facets=["goal:" + k, "goals"], tags=["goals"], key=k if k[0].isupper() else None,
              lex=["what has {she} said about {t}?"])
        a.q("paraphrase", "goal:" + k, q)
    a.q("multi_fact", "goals", ["what personal goals has {she} set?", "what is {she} working toward outside of work?"])


MISC = [("Is a morning person and does {pos} best thinking before [10:00|11:00|noon]", ["when is {she} most productive?"]),
        ("[Prefers phone calls over video calls for work|Would rather take a phone call than a video call at work]",
         ["does {she} like being on camera in meetings?"]),
        ("Gets nervous about public speaking and rehearses talks [twice|three times|out loud the night before]",
         ["how does {she} feel about presenting to an audience?"]),
        ("Keeps a spare house key with [a friend nearby|a colleague who lives close by|the concierge]", ["who has a copy of {pos} door key?"]),
        ("[Spends Christmas at {pos} parents' house most years|Goes to {pos} parents' place for Christmas every year]",
         ["where does {she} usually celebrate the December holidays?"]),
        ("Hates being late and usually arrives [five|ten|fifteen] minutes early", ["is {she} punctual?"]),
        ("Finds the city centre too crowded with tourists in [July|August]", ["how does {she} feel about summer crowds downtown?"]),
        ("[Sleeps badly in hot weather and runs a fan all summer|Can't sleep when it's hot and keeps a fan by the bed]",
         ["does heat keep {obj} awake?"]),
        ("Would rather walk than take a taxi for anything under [two|three|four] kilometres", ["does {she} grab a cab for short distances?"]),
        ("[Uses a paper diary alongside a digital calendar|Still keeps a paper planner next to the calendar app]", ["does {she} plan on paper too?"]),
        ("[Wears noise-cancelling headphones in the open-plan office|Can't focus in the open-plan office without noise-cancelling headphones]",
         ["how does {she} cope with a noisy workplace?"]),
        ("Deleted [Instagram|TikTok|Facebook] in {my} and hasn't missed it", ["when did {she} quit social media?"]),
        ("Gave up alcohol in {my}", ["when did {she} stop drinking?"]),
        ("[Learned to drive only in {y}|Only got a driving licence in {y}]", ["when did {she} get {pos} licence?"]),
        ("[Is colour-blind (red-green)|Is red-green colour-blind]", ["does {she} have trouble telling some hues apart?"]),
        ("Keeps {pos} phone on silent after [20:30|21:00|22:00]", ["can I message {obj} late in the evening?"]),
        ("Is scared of [heights|spiders|crowded lifts]", ["does {she} have any phobias?"]),
        ("Is left-handed", ["which hand does {she} write with?"]),
        ("Donates blood every [three|four|six] months", ["does {she} give blood?"]),
        ("Listens to [audiobooks|history podcasts|true-crime podcasts] on the commute", ["what does {she} do while travelling to work?"]),
        ("[Never checks work email at weekends|Switches off work notifications from Friday evening to Monday]",
         ["does {she} reply to office messages on Saturdays?"]),
        ("Has more than [twenty|thirty|forty] houseplants", ["how much greenery is in {pos} place?"]),
        ("[Loses keys constantly and uses a tracker tag|Has a tracker tag on {pos} keys because {she} loses them all the time]",
         ["how does {she} avoid misplacing things?"]),
        ("Takes a two-week holiday every [July|August|September]", ["when does {she} normally take time off?"]),
        ("Is an organ donor", ["has {she} registered to donate organs?"]),
        ("Thinks open-plan offices kill concentration", ["what's {pos} opinion of shared workspaces?"]),
        ("Loves thunderstorms and watches them from the window", ["what weather does {she} enjoy?"]),
        ("Doesn't watch TV but follows a few [cooking|woodworking|travel] channels online", ["does {she} have a television?"]),
        ("Remembers everyone's birthdays with a shared calendar", ["how does {she} keep track of friends' special days?"]),
        ("Is trying to learn to cook [Indian|Ethiopian|Sichuan|Georgian] food", ["what cuisine is {she} learning to make?"]),
        ("Prefers to hold one-to-ones as walking meetings", ["how does {she} like to run catch-ups with a colleague?"]),
        ("Volunteered at the city marathon in {my}", ["when did {she} help out at a race?"]),
        ("Renewed {pos} driving licence in {my}", ["when was {pos} licence last renewed?"]),
        ("Has a tattoo of [a compass|a swallow|a small wave|a fern] on {pos} [left wrist|right shoulder|forearm]", ["does {she} have any body art?"]),
        ("[Is a big fan of crossword puzzles on Sundays|Does the Sunday crossword without fail]", ["what word game does {she} enjoy?"]),
        ("Likes exploring the old city on foot at weekends", ["does {she} enjoy wandering around historic streets?"]),
        ("Would like to leave the city for somewhere quieter one day", ["does {she} dream of a rural life?"]),
        ("Has a home office in the spare room", ["does {she} have a dedicated room to work in?"]),
        ("Thinks public transport in the city is [excellent|unreliable|too expensive]", ["what's {pos} opinion of the local buses and trams?"]),
        ("Keeps a first-aid kit at home and in the office", ["is {she} prepared for minor accidents?"]),
        ]


def misc_rows(a, target):
    r = a.rng
    pool = MISC[:]
    r.shuffle(pool)
    for t, q in pool:
        if len(a.rows) >= target:
            break
        text = " ".join(x["content"] for x in a.rows)
        if "cook [" in t and ("recipe" in text or "cook" in text and "food" in text):
            continue
        if ("marathon in {my}" in t and "food bank" in text) or ("Deleted [" in t and "screen time" in text):
            continue
        if ("work email" in t and "email" in a.excl) or ("everyone's birthdays" in t and "gifts" in a.excl):
            continue
        if "open-plan" in t and any("open-plan" in x["content"] for x in a.rows):
            continue
        if "parents' house" in t and not any(p.rel == "parent" for p in a.persons):
            continue
        if "houseplants" in t and "plants" in a.excl:
            continue
        if ("licence" in t and any("licence" in x["content"] for x in a.rows)) or ("alcohol" in t and a.diet == "halal"):
            continue
        my, vf, y = a.my((2022, 1), (2026, 5))
        dated = "{my}" in t or "{y}" in t
        yy = r.randint(max(2005, 2026 - a.age + 18), 2021) if "{y}" in t else None
        if yy is not None and 2026 - a.age + 18 > 2021:
            continue
        c = a.f(t, my=my, y=yy)
        k = "misc:%d" % MISC.index((t, q))
        a.add(c, facets=[k], tags=[], vf=vf if "{my}" in t else None)
        a.q("temporal" if dated else "paraphrase", k, q)


# ---------------------------------------------------------------------------------------
# Documents and triggers
# ---------------------------------------------------------------------------------------

def documents(a):
    r = a.rng
    pet_dog = next((n for n, k, _ in a.pets if k == "dog"), None)
    kid = next((p for p in a.persons if p.rel == "kid"), None)
    parents = [p for p in a.persons if p.rel == "parent"]
    docs = [
        ("grocery", True, "Weekly grocery order routine",
         "Every {d} evening {she} checks the fridge and the meal plan, then builds the order in the supermarket app. Staples go in first: eggs, rice, oats, seasonal vegetables and fruit for lunches. {She} double-checks labels for anything {she} cannot eat and picks the Saturday morning delivery slot.",
         ["how does {she} do {pos} weekly grocery order?", "what's {pos} routine for the weekly food shopping?"]),
        ("morning", not pet_dog, "Morning routine on work days",
         "Alarm at 6:45, a glass of water and ten minutes of stretching. Coffee or tea while reading the headlines, then a quick look at the calendar to pick the three priorities of the day. Leaves the house by 8:20 on office days.",
         ["what does {pos} morning look like before work?", "how does {she} start a typical weekday?"]),
        ("packing", True, "Packing checklist for work trips",
         "Laptop, charger and travel adapter; two shirts per three days; toiletries in a clear bag; printed booking confirmations as a backup. {She} checks the weather at the destination the night before and keeps the passport in the front pocket.",
         ["what does {she} pack for business travel?", "is there a checklist for {pos} work trips?"]),
        ("budget", True, "Monthly budget review",
         "On the first weekend of each month {she} exports last month's transactions, tags anything uncategorised and compares spending against the plan. Subscriptions get a quick review, and whatever is left over moves to savings.",
         ["how does {she} go through {pos} finances each month?", "what's {pos} process for reviewing the monthly budget?"]),
        ("onboarding", True, "Checklist for onboarding a new team member",
         "Before day one: laptop ordered, accounts requested, a buddy assigned. Week one: a walk through the architecture and the team rituals, a small first task and a coffee with {pos} manager. After a month {she} asks for feedback on the process.",
         ["how does {she} onboard new people on {pos} team?", "what are the steps when someone joins {pos} team?"]),
        ("petsitter", bool(pet_dog), "Instructions for {pet}'s pet sitter",
         "{pet} eats twice a day, at 7:00 and 18:00, one cup of dry food each time. Two walks a day with the harness, never off the lead near the road. The vet's number is on the fridge; treats are in the top drawer.",
         ["what should a pet sitter know about {pet}?", "are there instructions for whoever looks after {pet}?"]),
        ("mealprep", True, "Sunday meal prep plan",
         "Pick two recipes on Saturday, shop for them, then cook on Sunday afternoon: one grain, one tray of roasted vegetables and one protein. Portion into five boxes, label them and freeze two for Thursday and Friday.",
         ["how does {she} prepare lunches for the week?", "what's {pos} batch-cooking routine?"]),
        ("gifts", True, "Birthday gift planning process",
         "Keeps a running list of gift ideas whenever someone mentions something they want. Three weeks before a birthday {she} picks one idea, sets a budget and orders it; a handwritten card goes with every gift.",
         ["how does {she} plan birthday presents for people?", "what's {pos} system for choosing gifts?"]),
        ("homeoffice", True, "Home office troubleshooting steps",
         "If the wifi drops: restart the router, then the mesh point in the hallway. If the monitor shows no signal: swap to the second USB-C port and reseat the dock. Video calls go on the wired connection when the network is flaky.",
         ["what should {she} try when the home internet or screen acts up?", "is there a troubleshooting guide for {pos} home setup?"]),
        ("plants", True, "Houseplant care schedule",
         "Ferns and calatheas get water every Wednesday; succulents only every second Sunday. Fertiliser once a month from April to September. Plants move away from the south window in July and August.",
         ["how does {she} look after {pos} plants?", "what's the watering schedule for {pos} plants?"]),
        ("taxes", True, "Checklist for gathering tax documents",
         "In March {she} collects the annual income statement, receipts for deductible expenses, the mortgage or rent certificate and bank interest statements, scans them into one folder and books time with the accountant before the deadline.",
         ["how does {she} prepare for the tax return?", "what does {she} collect before filing taxes?"]),
        ("carcare", bool(a.car), "Car maintenance checklist for the {car}",
         "Check tyre pressure and washer fluid on the first of every month. Oil change and inspection once a year at the garage, usually in spring. Winter tyres go on in November and come off in March.",
         ["how does {she} keep the car in good shape?", "what's on {pos} car maintenance list?"]),
        ("oncall", a.family == "tech", "On-call incident handling playbook",
         "Acknowledge the page within five minutes, open an incident channel and post a first status. Check the dashboards, roll back the last deploy if it lines up with the alert, and escalate after 30 minutes without progress. Write the post-mortem within two working days.",
         ["what does {she} do when paged on call?", "how does {she} handle a production incident?"]),
        ("weekly", True, "Friday weekly review ritual",
         "Friday at 16:00 {she} clears the inbox, reviews what got done against the plan, moves unfinished tasks to next week and writes three priorities for Monday. Ends by blocking focus time in the calendar.",
         ["how does {she} wrap up the work week?", "what does {pos} weekly review involve?"]),
        ("dinner", True, "Checklist for hosting dinner with friends",
         "Ask guests about allergies and diets a week ahead, plan a menu with one vegetarian main, shop two days before and prep dessert the night before. Set the table an hour early and keep one playlist ready.",
         ["how does {she} organise a dinner party?", "what's {pos} routine when having friends over to eat?"]),
        ("bedtime", bool(kid), "Bedtime routine for {kid}",
         "Bath at 19:00, pyjamas, then two stories in bed. Lights out at 19:45 with the night light on. If {kid} wakes up, a glass of water and back to bed without screens.",
         ["how does bedtime go for {kid}?", "what's the evening routine for {kid}?"]),
        ("cleaning", True, "Cleaning rota for the flat",
         "Kitchen surfaces daily, bathroom on Wednesdays, hoovering and mopping on Saturdays, bed linen every second Sunday. Fridge clear-out on the last Friday of the month.",
         ["how are the household chores split across the week?", "what's the cleaning schedule at home?"]),
        ("email", True, "Inbox triage routine",
         "Checks email three times a day only: 9:00, 13:00 and 16:30. Anything under two minutes gets answered immediately, the rest becomes a task; newsletters are filtered into a read-later folder.",
         ["how does {she} deal with {pos} email?", "what's {pos} method for handling the inbox?"]),
        ("airport", True, "Airport day routine",
         "Online check-in the day before, leave for the airport two and a half hours before departure, liquids bag ready at the top of the backpack. Buys water after security and boards in the last group.",
         ["what does {she} do on the day of a flight?", "how does {she} handle getting to the airport?"]),
        ("practice", bool(a.instrument) and not any(x["content"].startswith("Practises") for x in a.rows), "{inst} practice routine",
         "Ten minutes of scales, fifteen minutes on the current piece, slowly with a metronome, then five minutes of something fun. Records one take a week to hear progress.",
         ["how does {she} structure {pos} {inst} practice?"]),
        ("backup", True, "Quarterly photo backup procedure",
         "Every three months {she} copies the phone photos to the laptop, removes duplicates, then syncs the library to the external drive and to cloud storage. The drive is kept at the office as an off-site copy.",
         ["how does {she} back up {pos} photos?", "what's {pos} process for keeping pictures safe?"]),
        ("rain", a.commute == "bike", "Plan for cycling to work in the rain",
         "Check the radar at 7:30. Light rain: waterproof trousers and overshoes, spare socks in the pannier. Heavy rain or wind over 50 km/h: take public transport and leave the bike at home.",
         ["what does {she} do when it rains on a bike commute day?"]),
        ("parents", len(parents) >= 1 and parents[0].city != a.city, "Checklist before visiting {pos} family in {pcity}",
         "Book tickets two weeks ahead, pick up the medicine and magazines {pos} parents ask for, water the plants and ask a friend to check the post. Brings a cake from the bakery near the station.",
         ["what does {she} prepare before going to see {pos} parents?"]),
        ("langstudy", bool(a.learning), "Weekly {lang} study plan",
         "Monday and Wednesday: class homework. Tuesday: 20 minutes of flashcards. Thursday: a language exchange call. Weekend: one episode of a series with subtitles in the target language.",
         ["how does {she} study {lang} each week?"]),
        ("interview", True, "Routine for running job interviews",
         "Reads the CV the day before and writes four questions tied to the role. Starts with a short intro of the team, keeps 15 minutes for the candidate's questions and writes feedback within an hour.",
         ["how does {she} run interviews when hiring?", "what's {pos} approach to interviewing candidates?"]),
    ]
    avail = [d for d in docs if d[1]]
    r.shuffle(avail)
    chosen = avail[: r.randint(5, 7)]
    kw = dict(pet=pet_dog, kid=kid.name if kid else None, car=a.car, inst=a.instrument,
              pcity=parents[0].city if parents else None, lang=a.learning, d=a.ch(["Thursday", "Friday", "Wednesday"]))
    a.docs = []
    for key, _, desc, body, qs in chosen:
        a.excl.add(key)
        c = a.f(desc, **kw)
        b = a.f(body, **kw)
        a.add(c, kind="document", body=b, facets=["doc:" + key], tags=["playbook"])
        a.q("document", "doc:" + key, [a.f(q, **kw)[:1].lower() + a.f(q, **kw)[1:] for q in qs])


def triggers(a):
    r = a.rng
    pet = a.pets[0][0] if a.pets else None
    friend_bd = next((p for p in a.persons if p.rel in ("friend", "sibling") and "birthday" not in p.facets), None)
    run = any(k in ("hobby:trail running",) for k in a.hobby_keys) or "half marathon" in " ".join(x["content"] for x in a.rows)
    pmy, _, _ = a.my((2026, 8), (2027, 12))
    trig = [
        ("passport", True, "Remind {obj} to renew {pos} passport before it expires in {pmy}",
         ["is there any reminder about the passport?", "what should I nudge {obj} about regarding travel documents?"]),
        ("vet", bool(pet), "Remind {obj} to book {pet}'s annual vaccinations every {m}",
         ["is there a reminder about {pet}'s jabs?", "should I prompt {obj} about the vet at some point?"]),
        ("birthday", bool(friend_bd), "Ping {obj} a week before {fb}'s birthday on {bd} to order a present",
         ["is there a reminder about {fb}'s birthday?", "when should I remind {obj} about a present for {fb}?"]),
        ("insurance", bool(a.car), "Remind {obj} that the car insurance renews every {m}; compare quotes two weeks before",
         ["is there any reminder about the car insurance?", "should I nudge {obj} about renewing cover for the vehicle?"]),
        ("stretch", True, "Nudge {obj} to stand up and stretch at 15:00 on work days",
         ["is there a reminder to take movement breaks?", "what should I prompt {obj} to do mid-afternoon?"]),
        ("plants", "plants" not in a.excl, "Remind {obj} to water the houseplants on Thursday evenings",
         ["is there a reminder about watering?", "should I nudge {obj} about looking after the greenery indoors?"]),
        ("flights", True, "Every Monday, suggest checking flight prices for the {plan} trip",
         ["is there a standing task about airfares?", "what should I do each Monday about {pos} {plan} trip?"]),
        ("dentist", True, "Remind {obj} to book a dental check-up every six months",
         ["is there any reminder about the dentist?", "should I prompt {obj} about a teeth check-up?"]),
        ("taxes", "taxes" not in a.excl, "Remind {obj} to file the tax return before the end of {tm}",
         ["is there a reminder about the tax return?", "what deadline should I warn {obj} about for taxes?"]),
        ("boiler", True, "Remind {obj} to schedule the yearly boiler service in October",
         ["is there a reminder about the boiler?", "should I nudge {obj} about heating maintenance?"]),
        ("recycling", True, "Remind {obj} to put the recycling out on {rd} nights",
         ["is there a reminder about the bins?", "what household chore should I flag on {rd}s?"]),
        ("langpractice", bool(a.learning) and "langstudy" not in a.excl, "Nudge {obj} to do 15 minutes of {lang} flashcards before bed",
         ["is there a reminder about {lang} practice?"]),
        ("anniversary", bool(a.partner), "Remind {obj} to book a dinner table a week before the anniversary with {pn}",
         ["is there a reminder about the anniversary?", "should I help {obj} plan something for {pn}?"]),
        ("trials", True, "Flag any free trials that are about to turn into paid subscriptions",
         ["is there a standing instruction about subscriptions?", "should I warn {obj} before a free trial starts charging?"]),
        ("status", "weekly" not in a.excl, "Every Friday afternoon, prompt {obj} to write the weekly status update for {pos} manager",
         ["is there a reminder about the weekly update?", "what should I prompt {obj} to write on Friday afternoons?"]),
        ("library", True, "Remind {obj} to return library books before the due date",
         ["is there a reminder about library books?", "should I nudge {obj} about borrowed books?"]),
        ("bikeservice", bool(a.bike), "Remind {obj} to get the bike serviced before winter",
         ["is there a reminder about the bike?", "should I prompt {obj} about a tune-up for the bicycle?"]),
        ("race", run, "Alert {obj} when registration opens for the {city} half marathon",
         ["is there a reminder about race registration?", "should I tell {obj} when sign-ups open for the half?"]),
        ("lenses", any("contact lenses" in x["content"] for x in a.rows), "Remind {obj} to order new contact lenses every three months",
         ["is there a reminder about contact lenses?", "should I prompt {obj} about reordering lenses?"]),
        ("backup", "backup" not in a.excl, "Remind {obj} to back up the laptop on the first Sunday of each month",
         ["is there a reminder about backups?", "should I nudge {obj} to copy {pos} files somewhere safe?"]),
        ("mum", bool(a.mother), "Remind {obj} to send {pos} mother photos of the week every Friday",
         ["is there a reminder involving {pos} mum?"]),
    ]
    avail = [t for t in trig if t[1]]
    r.shuffle(avail)
    chosen = avail[: r.randint(5, 7)]
    bd = None
    if friend_bd:
        bd = "%d %s" % (r.randint(1, 28), MONTHS[r.randint(0, 11)])
    kw = dict(pmy=pmy, pet=pet, fb=friend_bd.name if friend_bd else None, bd=bd, m=a.ch(MONTHS),
              plan=a.plan, tm=a.ch(["June", "April", "May"]), rd=a.ch(["Monday", "Tuesday", "Wednesday", "Thursday"]),
              lang=a.learning, pn=a.partner.name if a.partner else None, city=a.city)
    for key, _, t, qs in chosen:
        c = a.f(t, **kw)
        fac = ["trig:" + key]
        row = a.add(c, kind="trigger", facets=fac, tags=["reminder"])
        if key == "birthday":
            row["_f"].add(a.tpf(friend_bd, "birthday"))
        if key == "flights":
            row["_f"].add("trip_plan_where")
        if key == "anniversary":
            row["_f"].add("relname:partner")
        a.q("trigger", "trig:" + key, [a.f(q, **kw)[:1].lower() + a.f(q, **kw)[1:] for q in qs])
    # a few closed ones (done or cancelled): not visible to search
    for t in r.sample(["Remind {obj} to submit the visa application for the {plan} trip",
                       "Remind {obj} to return the rental car keys by Monday",
                       "Remind {obj} to sign up for the {city} 10k before entries close",
                       "Remind {obj} to cancel the gym trial before it renews"], r.choice([1, 2])):
        vf = a.rec_before(ms(2026, 6, 1))
        a.add(a.f(t, **kw), kind="trigger", facets=["closed"], tags=["reminder"], vf=vf,
              vt=vf + 86400000 * r.randint(5, 60), status="closed")


# ---------------------------------------------------------------------------------------
# Account assembly and question selection
# ---------------------------------------------------------------------------------------

GENERAL_LEX = ["what do we know about {t}?", "anything on file about {t}?", "what has {she} mentioned about {t}?",
               "does {t} come up anywhere in {pos} notes?", "what's the story with {t}?"]

QUOTA = {"document": 3, "trigger": 3, "multi_fact": 8, "temporal": 10, "third_party": 10,
         "paraphrase": 13, "lexical": 10}
ORDER = ["document", "trigger", "multi_fact", "temporal", "third_party", "paraphrase", "lexical"]


def build_account(idx, rng):
    a = Account(idx, rng)
    persona(a)
    partner_rows(a)
    identity(a)
    home(a)
    partner_facts(a)
    work(a)
    family_rows(a)
    friends_rows(a)
    pets_rows(a)
    health_rows(a)
    hobbies_rows(a)
    education_rows(a)
    started_questions(a)
    possessions_rows(a)
    # documents decide exclusions for the fact domains below
    documents(a)
    travel_rows(a)
    colleagues_rows(a)
    people_groups(a)
    prefs_rows(a)
    finance_rows(a)
    routine_rows(a)
    goals_rows(a)
    triggers(a)
    misc_rows(a, rng.randint(130, 160))
    return a


def term_in(t, s):
    pat = re.compile(r"(?<![a-z0-9\u00c0-\u00ff])" + re.escape(t.lower()) + r"(?![a-z0-9\u00c0-\u00ff])")
    return pat.search(s.lower()) is not None


def select_questions(a, quota):
    r = a.rng
    active = [x for x in a.rows if x["status"] == "active"]
    by_cat = defaultdict(list)
    for c in a.cands:
        rel = [x for x in active if c["facet"] in x["_f"]]
        if not rel:
            continue
        cat = c["cat"]
        qs = list(dict.fromkeys(c["qs"]))
        if cat == "multi_fact" and not (2 <= len(rel) <= 3):
            continue
        if cat in ("paraphrase", "third_party", "temporal") and len(rel) > 4:
            continue
        if cat in ("document", "trigger") and len(rel) > 1:
            continue
        if cat == "paraphrase":
            rare = set()
            for x in rel:
                rare |= rare_words(x)
            qs = [q for q in qs if len(overlap(q, rel)) <= 1 and not (overlap(q, rel) & rare)]
            if not qs:
                continue
        if cat == "temporal" and not all(DATE_RE.search(x["content"]) for x in rel):
            continue
        if cat == "third_party":
            eids = {x["_who"].eid for x in rel if x["_who"] is not None}
            if len(eids) != 1 or any(x["_who"] is None for x in rel):
                continue
        if cat == "document" and any(x["kind"] != "document" for x in rel):
            continue
        if cat == "trigger" and any(x["kind"] != "trigger" for x in rel):
            continue
        by_cat[cat].append((c["facet"], rel, qs))
    # lexical: rare key terms; relevant = every active row whose content holds the term
    for x in active:
        t = x["_key"]
        if not t:
            continue
        bare = re.sub(r"^(the|a|an) ", "", t)
        rel = [y for y in active if term_in(bare, y["content"])]
        if not rel or x not in rel or len(rel) > 3:
            continue
        if len(rel) > 1 and not x["_lexn"]:
            continue  # an adjective or a verb: only a question about this one row makes sense
        tmpl = x["_lex"] if (len(rel) == 1 and x["_lex"]) else GENERAL_LEX
        qs = [q.format(**a.P(t=t)) for q in tmpl]
        qs = [q for q in qs if term_in(bare, q)]
        by_cat["lexical"].append(("lex:" + t, rel, qs))
    picked = []
    use = Counter()
    seen_sets = set()
    seen_text = set()
    for cat in ORDER:
        items = by_cat.get(cat, [])
        r.shuffle(items)
        n = 0
        for facet, rel, qs in items:
            if n >= quota[cat]:
                break
            key = tuple(sorted(id(x) for x in rel))
            if (cat, key) in seen_sets or any(use[id(x)] >= 2 for x in rel):
                continue
            qs = [q for q in qs if q not in seen_text]
            if not qs:
                continue
            q = r.choice(qs)
            seen_text.add(q)
            seen_sets.add((cat, key))
            for x in rel:
                use[id(x)] += 1
            picked.append((cat, q, rel))
            n += 1
    return picked


DATE_RE = re.compile(r"\b(19|20)\d\d\b|\b(" + "|".join(MONTHS) + r")\b")
ALLOWED = re.compile(r"^[\x20-\x7e\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u00ff]*$")


def build():
    rng = random.Random(SEED)
    order = list(range(1, N_ACCOUNTS + 1))
    split_rng_order = order[:]
    rng.shuffle(split_rng_order)
    dev = set(split_rng_order[:N_DEV])
    accounts = []
    for i in order:
        a = build_account(i, rng)
        a.split = "dev" if i in dev else "test"
        accounts.append(a)
    rows_out, qs_out = [], []
    for a in accounts:
        rng.shuffle(a.rows)
        for n, x in enumerate(a.rows, 1):
            x["id"] = "%s-r%04d" % (a.code, n)
        quota = dict(QUOTA)
        quota["document"] = 3 + (a.idx % 3 == 0) + (a.idx % 6 == 1)
        quota["trigger"] = 3 + (a.idx % 3 == 1) + (a.idx % 6 == 2)
        picked = select_questions(a, quota)
        rng.shuffle(picked)
        for n, (cat, q, rel) in enumerate(picked, 1):
            qs_out.append({"id": "%s-q%03d" % (a.code, n), "account": a.account, "question": q,
                           "relevant": [x["id"] for x in sorted(rel, key=lambda x: x["id"])],
                           "category": cat, "split": a.split, "_rel": rel})
        for x in a.rows:
            o = {"id": x["id"], "account": a.account, "kind": x["kind"], "content": x["content"]}
            if x["kind"] == "document":
                o["body"] = x["body"]
            if x["slot"]:
                o["slot"] = x["slot"]
            w = x["_who"]
            o["subject"] = {"scope": "primary_user"} if w is None else {"scope": "third_party", "entity_id": w.eid}
            o["valid_from"] = x["vf"]
            if x["vt"] is not None:
                o["valid_to"] = x["vt"]
            o["status"] = x["status"]
            o["tags"] = x["tags"][:3]
            rows_out.append(o)
    return accounts, rows_out, qs_out, dev


def main():
    accounts, rows_out, qs_out, dev = build()
    summary = validate(accounts, rows_out, qs_out)
    with open(os.path.join(HERE, "rows.jsonl"), "w", encoding="utf-8", newline="\n") as fh:
        for o in rows_out:
            fh.write(json.dumps(o, ensure_ascii=False) + "\n")
    with open(os.path.join(HERE, "questions.jsonl"), "w", encoding="utf-8", newline="\n") as fh:
        for q in qs_out:
            o = {k: v for k, v in q.items() if not k.startswith("_")}
            fh.write(json.dumps(o, ensure_ascii=False) + "\n")
    with open(os.path.join(HERE, "README.md"), "w", encoding="utf-8", newline="\n") as fh:
        fh.write(README.format(summary=summary, seed=SEED, n_acc=N_ACCOUNTS, n_dev=N_DEV,
                               dev=", ".join("u_%02d" % i for i in sorted(dev))))
    print(summary)


# ---------------------------------------------------------------------------------------
# Validation and summary
# ---------------------------------------------------------------------------------------

MIN_ROWS, MIN_QUESTIONS, MIN_CAT, MIN_DOC = 3000, 1000, 150, 70
CATS = ["paraphrase", "lexical", "temporal", "third_party", "multi_fact", "document", "trigger"]


def validate(accounts, rows, qs):
    errors = []

    def check(cond, msg):
        if not cond:
            errors.append(msg)

    by_id = {}
    for o in rows:
        check(o["id"] not in by_id, "duplicate row id %s" % o["id"])
        by_id[o["id"]] = o
        c = o["content"]
        check(0 < len(c) <= 300, "content length %s" % o["id"])
        for field in ("content", "body"):
            if field in o:
                check(ALLOWED.match(o[field]) is not None, "bad character in %s of %s" % (field, o["id"]))
        check(o["kind"] in ("fact", "document", "trigger"), "kind %s" % o["id"])
        check(("body" in o) == (o["kind"] == "document"), "body only on documents %s" % o["id"])
        check(ms(2022, 1, 1) - 10 * 3600000 <= o["valid_from"] <= ms(2026, 12, 31), "valid_from range %s" % o["id"])
        if o["status"] == "active":
            check("valid_to" not in o, "active row with valid_to %s" % o["id"])
        else:
            check(o["status"] in ("superseded", "closed") and o.get("valid_to", 0) > o["valid_from"], "status/valid_to %s" % o["id"])
            check(o.get("valid_to", 0) <= ms(2026, 12, 31), "valid_to range %s" % o["id"])
        if "slot" in o:
            check(o["slot"] in ("home_city", "employer", "age_years"), "slot name %s" % o["id"])
            check(o["subject"]["scope"] == "primary_user", "slot on third party %s" % o["id"])
        if o["subject"]["scope"] == "third_party":
            check(re.match(r"^person_[a-z0-9_]+$", o["subject"]["entity_id"]) is not None, "entity id %s" % o["id"])
        check(len(o["tags"]) <= 3, "tags %s" % o["id"])
        for t in o["tags"]:
            check(ALLOWED.match(t) is not None, "tag chars %s" % o["id"])
    # one active row per (account, slot)
    slots = Counter((o["account"], o["slot"]) for o in rows if "slot" in o and o["status"] == "active")
    for k, n in slots.items():
        check(n == 1, "slot %s held by %d active rows" % (k, n))
    # unique content within an account (active rows)
    seen = Counter((o["account"], o["content"]) for o in rows if o["status"] == "active")
    for k, n in seen.items():
        check(n == 1, "duplicate active content %s" % (k,))
    qids = set()
    qtexts = set()
    ov = defaultdict(list)
    for q in qs:
        check(q["id"] not in qids, "duplicate question id %s" % q["id"])
        qids.add(q["id"])
        check((q["account"], q["question"]) not in qtexts, "duplicate question text %s" % q["id"])
        qtexts.add((q["account"], q["question"]))
        check(ALLOWED.match(q["question"]) is not None, "bad character in question %s" % q["id"])
        check(q["category"] in CATS, "category %s" % q["id"])
        check(len(q["relevant"]) >= 1, "no relevant rows %s" % q["id"])
        rel = []
        for rid in q["relevant"]:
            o = by_id.get(rid)
            check(o is not None, "relevant id %s of %s missing" % (rid, q["id"]))
            if o is None:
                continue
            check(o["account"] == q["account"], "relevant %s of %s in another account" % (rid, q["id"]))
            check(o["status"] == "active", "relevant %s of %s not active" % (rid, q["id"]))
            rel.append(o)
        w = overlap(q["question"], rel)
        ov[q["category"]].append(len(w))
        if q["category"] == "paraphrase":
            check(len(w) <= 1, "paraphrase overlap %s: %s" % (q["id"], sorted(w)))
        if q["category"] == "multi_fact":
            check(2 <= len(rel) <= 3, "multi_fact size %s" % q["id"])
        if q["category"] == "third_party":
            ents = {o["subject"].get("entity_id") for o in rel}
            check(len(ents) == 1 and None not in ents, "third_party subject %s" % q["id"])
        if q["category"] == "document":
            check(all(o["kind"] == "document" for o in rel), "document kind %s" % q["id"])
        if q["category"] == "trigger":
            check(all(o["kind"] == "trigger" for o in rel), "trigger kind %s" % q["id"])
        if q["category"] == "temporal":
            check(all(DATE_RE.search(o["content"]) for o in rel), "temporal row without a date %s" % q["id"])
    # third-party questions name the person
    ent_name = {}
    for a in accounts:
        for p in a.persons:
            ent_name[(a.account, p.eid)] = p.name
    for q in qs:
        if q["category"] == "third_party" and q["relevant"] and q["relevant"][0] in by_id:
            eid = by_id[q["relevant"][0]]["subject"].get("entity_id")
            name = ent_name.get((q["account"], eid))
            check(name is not None and name in q["question"], "third_party question without the person's name %s" % q["id"])
    # counts
    kinds = Counter(o["kind"] for o in rows)
    status = Counter(o["status"] for o in rows)
    cats = Counter(q["category"] for q in qs)
    check(len(rows) >= MIN_ROWS, "rows %d < %d" % (len(rows), MIN_ROWS))
    check(len(qs) >= MIN_QUESTIONS, "questions %d < %d" % (len(qs), MIN_QUESTIONS))
    for c in CATS[:5]:
        check(cats[c] >= MIN_CAT, "category %s has %d < %d" % (c, cats[c], MIN_CAT))
    for c in CATS[5:]:
        check(cats[c] >= MIN_DOC, "category %s has %d < %d" % (c, cats[c], MIN_DOC))
    check(cats["document"] + cats["trigger"] >= MIN_CAT, "document+trigger below %d" % MIN_CAT)
    per_acc = Counter(o["account"] for o in rows)
    if errors:
        for e in errors[:50]:
            print("ERROR:", e, file=sys.stderr)
        raise SystemExit("validation failed: %d errors" % len(errors))
    # summary
    split = Counter((q["category"], q["split"]) for q in qs)
    lines = []
    lines.append("rows: %d across %d accounts (%d-%d per account)" % (len(rows), len(per_acc), min(per_acc.values()), max(per_acc.values())))
    lines.append("  by kind:   " + ", ".join("%s %d" % (k, kinds[k]) for k in ("fact", "document", "trigger")))
    lines.append("  by status: " + ", ".join("%s %d" % (k, status[k]) for k in ("active", "superseded", "closed")))
    lines.append("  subjects:  primary_user %d, third_party %d" % (
        sum(o["subject"]["scope"] == "primary_user" for o in rows), sum(o["subject"]["scope"] == "third_party" for o in rows)))
    lines.append("questions: %d (dev %d, test %d)" % (len(qs), sum(q["split"] == "dev" for q in qs), sum(q["split"] == "test" for q in qs)))
    lines.append("  %-12s %5s %5s %5s  %s" % ("category", "total", "dev", "test", "avg overlap (content words shared with relevant rows)"))
    for c in CATS:
        o = ov[c]
        lines.append("  %-12s %5d %5d %5d  %.2f" % (c, cats[c], split[(c, "dev")], split[(c, "test")], sum(o) / max(1, len(o))))
    mf = [len(q["relevant"]) for q in qs if q["category"] == "multi_fact"]
    lines.append("  multi_fact relevant rows: %s" % ", ".join("%d rows x%d" % (k, v) for k, v in sorted(Counter(mf).items())))
    lines.append("validation: ok")
    return "\n".join(lines)


README = """# Retrieval-quality benchmark set

A synthetic, labelled set for measuring `search_knowledge` quality (dense + keyword
candidates fused). Generated by `generate.py` (Python 3 stdlib, seed {seed}); do not edit
the `.jsonl` files by hand.

## What it is

{n_acc} accounts (`t_bench/user/u_01` .. `u_{n_acc}`), each one person (the "user") talking to
an assistant. `rows.jsonl` holds what an extractor would store about them: one-line facts in
the third-person style of memory systems ("Moved from Lisbon to Porto in March 2024",
"Sister Ana is a pediatric nurse in Braga"), documents (playbooks: a one-line description plus
a body) and triggers (standing intents: "Remind her to renew her passport ..."). Facts cover
home and moves, work and career history, family, friends, colleagues and neighbours (each
third party with their own facts under `subject.entity_id = person_<slug>`), pets, health,
diet and allergies, hobbies, travel, preferences (food, communication, tools), education,
light finances (no amounts or account numbers), routines, possessions, goals and dates.
Every domain has several rows per account, so common words ("city", "work", "sister") recur
as lexical distractors.

Some rows stopped being true: former cities, employers and ages (`slot` rows, `superseded`)
and done or cancelled triggers (`closed`), all with `valid_to`. Search only sees active rows,
and no question points at an inactive one; questions about the past are answered by an
active row stating the history ("Joined X in May 2024 after 3 years at Y"). Dates in the
text are as of mid-2026 (so "last year" means 2025).

`questions.jsonl` holds the questions, each with `relevant` (the ids of the active rows of
its own account that answer it; a hit is any returned row in the list, and for
`multi_fact` every listed row is needed, so per-row recall applies), `category` and
`split`. Relevance is by construction: every row declares the facets it answers and a
question's relevant set is every active row of its account holding that facet (lexical:
every active row holding the term), so no unlisted active row answers it equally.

## Categories

- `paraphrase`: shares at most one content word with its relevant rows (after lowercasing,
  stop-word removal and crude stemming; enforced, and never a name, number or key term):
  "which organisation pays her salary?" for "Works as a data engineer at Acme Analytics".
- `lexical`: carries the row's rare key term: "is he ok taking ibuprofen?".
- `temporal`: when/since/before/in-year questions; every relevant row carries the date.
- `third_party`: about a named other person; every relevant row has that person as subject.
- `multi_fact`: needs 2-3 rows ("what pets does she have?", "which of her relatives live
  abroad?", "where did he go on holiday in 2024?").
- `document` / `trigger`: answered by a playbook or a standing intent.

## Split

By account: {n_dev} accounts are `dev` ({dev}), the rest `test`. Tune fusion on dev,
report on test.

## Regenerate

    python3 testkit/data/retrieval/generate.py

Deterministic (fixed seed, no hash order, no clock): two runs give byte-identical files.
The script validates its output (ids unique, every relevant id exists, is active and in the
question's account, counts meet the minimums, paraphrase overlap <= 1, allowed characters
only) and raises if anything fails.

## Summary (printed by the generator)

```
{summary}
```
"""

if __name__ == "__main__":
    main()
