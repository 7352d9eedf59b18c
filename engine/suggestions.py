"""The pre-flight tool suggestor: cheap heuristics that remind an agent which tools fit the player's message.

The message is read once: split into sentences and clauses, cut into words, and every phrase of the lexicon
below is found in one pass over the words (a dict lookup per word, then a short match on the words after it).
The rules then ask questions of that reading ("is something drunk, and is it a potion, in the same sentence?",
"is this done now, or promised, asked about or denied?") against the game state. Nothing is a regex with a
gap or a backtracking alternation, so the cost stays linear in the message: a 2,000-character message is
read in well under a millisecond.
"""

from __future__ import annotations

import re
from collections import defaultdict
from itertools import islice
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterable, Iterator, NamedTuple

import structlog

from .rules import spells
from .shops import closed_because, shops_here
from .state import NPC, AgentType, GameState
from .tools import TOOLS
from .tools.combat import participant_hp

log = structlog.get_logger(__name__)

N, C, P = AgentType.NARRATIVE, AgentType.COMBAT, AgentType.NPC


@dataclass(frozen=True)
class Suggestion:
    tool: str
    reason: str
    confidence: float
    args: dict[str, str] = field(default_factory=dict)

    def line(self) -> str:
        label = "highly recommended" if self.confidence >= 0.8 else "recommended" if self.confidence >= 0.5 else "optional"
        args = " ".join(f'{k}="{v}"' for k, v in self.args.items())
        example = f" e.g. <{self.tool} {args}/>" if args else ""
        return f"- {self.tool} ({label}): {self.reason}.{example}"


# ---------------------------------------------------------------------------------------------------------
# The lexicon. Each entry is a phrase: words separated by spaces, where `a|b` is a choice, `word~` stands for
# the word's verb forms (drink, drinks, drinking, drinkin), `*` is any one word, a trailing `?` makes an
# element optional, and `$` matches only where a clause ends (a comma, a full stop, the end of the message).
# ---------------------------------------------------------------------------------------------------------

def _forms(word: str) -> set[str]:
    """A verb or noun and its regular inflections (over-generating is harmless: non-words never match)."""
    out = {word}
    if word.endswith("e"):
        out |= {word + "s", word + "d", word[:-1] + "ing", word[:-1] + "in"}
    elif word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        out |= {word[:-1] + "ies", word[:-1] + "ied", word + "ing", word + "in"}
    else:
        out |= {word + "s", word + "es", word + "ed", word + "ing", word + "in"}
        if len(word) > 2 and word[-1] not in "aeiouwxy" and word[-2] in "aeiou" and word[-3] not in "aeiou":
            out |= {word + word[-1] + "ed", word + word[-1] + "ing", word + word[-1] + "in"}
    return out


@dataclass(frozen=True)
class _Element:
    words: frozenset[str]
    optional: bool = False
    any: bool = False
    end: bool = False


def _element(spec: str) -> _Element:
    optional = spec.endswith("?") and len(spec) > 1
    spec = spec[:-1] if optional else spec
    if spec == "*":
        return _Element(frozenset(), optional, any=True)
    if spec == "$":
        return _Element(frozenset(), end=True)
    words: set[str] = set()
    for alt in spec.split("|"):
        words |= _forms(alt[:-1]) if alt.endswith("~") else {alt}
    return _Element(frozenset(words), optional)


LEXICON: dict[str, str] = {
    # things used up or handed over
    "consume": "drink~, drank, drunk, quaff~, gulp~, glug~, chug~, sip~, swallow~, down~, swig~, slug~, neck~, "
               "knock~ *? *? back, toss~ *? *? back, tip~, pour~, use~, apply~, rub~, smear~, dab~, eat~, ate, eaten, "
               "gnaw~, munch~, nibble~, chew~, scoff~, wolf~, devour~, consume~, feed~, administer~, uncork~, "
               "pop~ the cork, crack~ open, share~ out, dig~ into, break~ out",
    "consumable": "potion|potions|potoin|pot|elixir|elixirs|salve|salves|draught|draughts|tonic|tonics|philter|"
                  "philtre|brew|vial|vials|flask|flasks|antitoxin|antidote|ration|rations|hardtack|jerky|biscuit|"
                  "biscuits|bread|cheese|apple|apples|berries|goodberry|goodberries|meal|food|provisions|oil|"
                  "poultice|herbs|balm|ointment|medicine|remedy|cordial|sausage|stew",
    "healing": "heal~, healing, cure~, restorative, hit point|points, hp, health, red vial, greater, superior",
    "trade": "buy~, bought, purchase~, sell~, sold, flog~, pawn~, pay~, paid, bribe~, barter~, haggle~, bargain~, "
             "rent~, hire~, loot~, pocket~, steal~, stole, stolen, pilfer~, filch~, swipe~, "
             "nick~ *? herring|fish|purse|pouch|coin|coins|it|one|a|the|some, pinch~ a|the|some|his|her|it, "
             "shoplift~, pickpocket~, donate~, stash~, shell~ out, fork~ out|over, cough~ up, hand~ over, chip~ in, "
             "hand~ it|them|that|those|these|him|her over, lift~ *? *? *? *? off|from, "
             "lift~ the|a|his|her|their *? *? purse|pouch|wallet, "
             "split~ the|our loot|coin|gold|reward|haul, help~ myself|ourselves to, snatch~, scoop~ up, pick~ up, "
             "pry~ *? *? *? out|loose|free, prise~ *? *? *? out|loose|free, tuck~, spare~ us|me, lend~ us|me, "
             "trade~, swap~, exchange~, take~ it|them|the|this|that|these|those with|along, keep~ it|them $, "
             "stuff~ it|them|the, slip~ it|them into, bag~ it|them|the",
    "give": "give~, gave, given, hand~, pass~, slide~, slip~, toss~, throw~, threw, chuck~, lob~, offer~, press~, "
            "drop~, leave~, hold~ out, tip~, take~, took, grab~, scatter~, collect~, gather~, stow~, flip~, here, "
            "here's",
    "item": "coin|coins|coppers|copper|cp|silver|silvers|sp|gold|gp|pp|crown|crowns|purse|pouch|money|cash|potion|"
            "vial|flask|rope|lantern|torch|torches|dagger|knife|sword|shortsword|longsword|axe|handaxe|bow|arrows|"
            "bolts|shield|map|key|ring|amulet|necklace|locket|button|float|letter|note|book|logbook|journal|bottle|"
            "ale|pint|meal|fish|herring|whitebait|bread|ration|rations|food|cloak|coat|boots|bag|sack|pack|"
            "backpack|gem|gems|pearl|pearls|jewel|trinket|coil|net|hook|spyglass|compass|oil|lamp|candle|candles|"
            "chalk|crowbar|hammer|pitons|blanket|tinderbox|waterskin|flint|caltrops|marbles|bell|mirror|scroll|"
            "charm|token|box|chest|crate|barrel|cask|bucket|tools|kit|piece|pieces|loot|reward|goods|gear|advance|"
            "payment|fee|wage|wages|bounty|deposit",
    "not_trade": "give~ up, give~ it a|some|another, "
                 "give~ *? *? a|it hand|chance|shot|try|go|look|nod|wink|smile|glare|hug|moment|minute|second|break|whirl, "
                 "take~ a|the|my|our|it hint|moment|breather|break|look|lead|chance|minute|second|rest|seat|breath|bow|all|in, "
                 "take~ five|ten|cover|aim|stock|note|notice|heart|turns|care|part|place|shelter|refuge|watch|charge, "
                 "pick~ up on, pay~ attention|respects|heed|mind, pay~ a visit, pay~ no|it no mind, "
                 "steal~ a glance|look|kiss, steal~ away|off|out|up, a steal, drop~ the subject|matter|act|idea, "
                 "drop~ it|by|in|out|back|down|to|onto|into|off, buy~ time|it|that, buy~ the story, "
                 "spend~ *? *? hit die|dice, spend~ the|a|an|some night|hour|day|while|time, sell~ out, "
                 "sell~ it to me, leave~ it|him|her|them alone|be, leave~ the|this|that|for|now, "
                 "slip~ away|off|out|past|through|by|in|on, pass~ on|by|out|through|along|the, hold~ out hope|for, "
                 "press~ on|ahead|forward|him|her|them, tip~ my|his|her|our hat|cap, offer~ to, "
                 "offer~ my|our help|services|condolences|thanks, toss~ and turn, hand~ it to, keep~ an eye, "
                 "keep~ watch|going|moving|quiet|still|up|away|back|calm|it|my|our|to|in|out|on|talking|walking, "
                 "grab~ forty|a|some winks|bite|breather|rest|snack, gather~ my|our|your thoughts|wits|breath|strength, "
                 "collect~ my|our thoughts, take~ it all in, flip~ through, grab~|take~|get your, "
                 "in nobody's|his|her|my|your|their|someone's pocket, here we|you go, here's the thing",
    # going places
    "go": "go~, went, gone, goin, head~, walk~, start~ up|off|out|for|toward|towards, take~ me|us to,  travel~, return~, enter~, move~ on|to|into|over|up|down|along, "
          "run~ to|into|over|up|down|back, ran to, row~, cross~, climb~, descend~, make~ for, make~ our|my way, "
          "swing~ by, pop~ into|in|over|by, nip~, duck~ into|in, step~ into|in|inside, set~ off|out, trudge~, stroll~, "
          "wander~, hike~, march~, stride~, strode, amble~, saunter~, mosey~, hurry~, hustle~, dash~, jog~, hoof~ it, "
          "visit~, call~ on|at, drop~ in|by, stop~ by|in|at, hit~ the pub|tavern|inn|bar, lead~ on, lead~ the way, "
          "follow~ the road|path|lane|lanes|street, take~ the road|path|lane|street|causeway, "
          "get~ over|back|down|up to, off to, onward|onwards to, back to, round to, over to, up to, down to, "
          "pick~ our|my way",
    "dark": "after dark, at night, tonight, nightfall, sundown, sunset, dusk, midnight",
    # resting
    "long_rest": "long rest, sleep~, slept, asleep, shut-eye, shuteye, hit~ the sack|hay, make~ camp, made camp, "
                 "pitch~ camp, set~ up camp, bed~ down, camp~ for the night, rest~ for the night, turn~ in, eight hours, "
                 "8 hours, doze~ off, kip, crash~ there|here|for|until|till|out, get~ some rest|sleep, "
                 "retire~ for the night, call~ it a night, overnight, till|until dawn|morning|sunrise|daybreak, "
                 "till|until first light, rent~ a|two|some room|rooms, get~ a|two room|rooms, stay~ the night, "
                 "spend~ the night, night's rest|sleep",
    "short_rest": "short rest, catch~ my|our|your breath, breather, rest~ up? for an|one|a hour|bit|while, "
                  "take~ a break|rest, take~ five|ten, bind~ my|our|his|her|their wounds, hit die|dice, forty winks, "
                  "an|one|quick hour's rest|break|sit|sit-down|nap, nap~, sit~ down for an hour, "
                  "lick~ our|my wounds, patch~ ourselves|myself up, rest~ awhile, rest~ a bit|while, quick rest, "
                  "rest~ up",
    "not_rest": "not tired, no rest, rest~ my|our|his|her case|elbows|hand|hands|eyes|chin|head|back|arms|feet, "
                "rest~ assured, rest~ of, the rest, sleep~ on it, sleeping bag",
    "hit_dice": "hit die|dice, hit-die, hit-dice",
    # checks
    "check": "loom~ over, crack~ my knuckles, get~ *? *? in his|her|their face, demand~, glower~, stare~ * down, "
             "talk~ *? *? into, pay~ close? attention to his|her|their, poke~ through, shoulder-charge~, barge~, "
             "ram~, climb~, clamber~, scale~, shimmy~, shinny~, jump~, leap~, leapt, vault~, hop~, sneak~, snuck, creep~, "
             "crept, tiptoe~, slink~, hide~, hid, stealthily, tail~, shadow~, persuade~, convince~, sweet-talk~, "
             "sweet talk, charm~, flatter~, cajole~, coax~, lie~, lying, bluff~, deceive~, con~ him|her|them|the, "
             "trick~, fast-talk~, intimidate~, threaten~, menace~, growl~, glare~ at, lean~ on, scare~, frighten~, "
             "haggle~, bargain~, pick~ the|a|his lock|padlock, lockpick~, lockpicks, thieves' tools, "
             "force~ open|the|it, break~ down|open, bash~ open|in, kick~ in|down|open, pry~ open, prise~ open, "
             "swim~, swam, paddle~, wade~, balance~, tightrope, search~, investigate~, comb~ through, rummage~, "
             "scour~, poke~ around|about, nose~ around|about, root~ around|through, look~ for, look~ around for, "
             "check~ for, hunt~ for, feel~ along|around, track~, follow~ the tracks|trail, squint~, spot~, scan~, "
             "listen~ for|at, listen~ in on, eavesdrop~, study~ his|her|their|the face|faces|expression, "
             "read~ his|her|their|the face|mood|body, suss~ out, size~ up, arm-wrestle~, wrestle~, grapple~, pin~, "
             "shove~, trip~ it|him|her|the, disarm~, tackle~, try~ to, attempt~ to, see~ if i|we can, "
             "recall~ what|anything, remember~ anything",
    "skill": "insight, perception, perceive, stealth, save, saves, saving throw, ability check, skill check, "
             "str|dex|con|int|wis|cha save|check|saves, "
             "strength|dexterity|constitution|intelligence|wisdom|charisma save|check|saving|saves, athletics, "
             "acrobatics, sleight of hand, investigation, arcana check, history check, nature check, "
             "religion check, medicine check, survival check, performance check, deception, persuasion, "
             "intimidation, animal handling",
    "not_check": "roll~ my|his|her eyes, sneak attack, sneak attacks, pin~ my|our hopes, save~ it|that|face, "
                 "save~ the day|rest, save~ my breath, hide~ my|a smile|grin, lie~ down|back|low, lying down, "
                 "tail between, force~ of habit, fall~ in, charm~ offensive, try~ to relax|sleep|rest, "
                 "climb~ up|down|back? to, climb~ up to the|a, jump~ them|him|her|those|these|the two|three, "
                 "what's my, my * bonus|modifier, how do i, bolt~ back|away|for|off|up|down|out|across|to, "
                 "save~ you|us|him|her|them, scan~ the crowd|horizon, spot~ you, shadow~ of",
    "social": "talk~ *? *? into, demand~, loom~ over, persuade~, convince~, sweet-talk~, sweet talk, charm~, flatter~, cajole~, coax~, lie~, lying, bluff~, "
              "deceive~, intimidate~, threaten~, insight, persuasion, deception, intimidation, haggle~, bargain~",
    "search": "search~, check~ *? *? *? *? *? for, poke~ through,  inspect~, investigate~, knock~ on, tap~ on|along|the, feel~ along|around, "
              "look~ behind|under|inside|into|for|around, check~ behind|under|inside|for, flip~ through, "
              "leaf~ through, pry~ at, tug~ at, poke~ around|about|at, comb~ through, rummage~, scour~, "
              "listen~ for, hunt~ for",
    "observe": "watch~, keep~ watch, keep~ an eye, stare~ at, peer~, squint~, scan~, study~, stand~ watch, "
               "lie~ in wait, stake~ out, read~, look~ at|out|toward|towards, listen~",
    # fights
    "fight": "attack~, fight~, fought, charge~, ambush~, jump~ them|him|her|the|those|these, "
             "deck~ him|her|them|the|that|this, punch~, swing~ at, swung at, draw~ steel, "
             "draw~ my|our|a sword|swords|blade|blades|weapon|weapons|dagger|daggers|axe|bow, drew steel, "
             "kill~, strike~ first, rush~ them|him|her|the|those|at, weapons out, blades out, tackle~, "
             "sucker-punch~, sucker punch, open~ fire, jump~ on|at, lunge~ at, pounce~, set~ upon, fall~ upon, "
             "fall~ on them, go~ for his|her|their throat, take~ them|him|her down, brawl~, throw~ a punch, "
             "headbutt~, smash~ a|the|my bottle|chair|mug, knock~ him|her|them out|down, beat~ him|her|them, "
             "roll~ initiative, initiative",
    "not_fight": "fight~ the urge, fight~ off sleep, fight~ back tears, kill~ for, kill~ time, "
                 "draw~ my|our|a|the cloak|cloaks|breath|map|hood|curtain|curtains|attention|line|water, "
                 "draw~ conclusions, nobody|don't|dont|nobody's|not draw|pull|fight|attack, "
                 "no one draw~|pull~|fight~|attack~, charge~ for|us|them|extra, charge~ too much",
    "strike": "attack~, swing~, swung, stab~, slash~, shoot~, shot, shooting, fire~, "
              "loose~ an|another|my|a arrow|bolt|shot, hurl~, throw~, threw, chuck~, lob~, fling~, flung, stomp~, "
              "smack~, bash~, whack~, bonk~, bludgeon~, club~, smash~, slam~, punch~, kick~, headbutt~, cleave~, "
              "hack~, chop~, slice~, cut~, skewer~, impale~, jab~, pierce~, thrust~, lunge~, strike~, struck, hit~, "
              "bring~ *? *? *? down, drive~, plunge~, sink~ my, whip~ a|my dagger|knife|axe|handaxe, rapier, longsword, shortsword, "
              "greatsword, scimitar, shortbow, longbow, crossbow, hand crossbow, sling, dagger, daggers, handaxe, "
              "greataxe, battleaxe, warhammer, maul, axe, mace, flail, morningstar, spear, trident, javelin, glaive, "
              "halberd, pike, quarterstaff, staff, club, greatclub, whip, arrow, arrows, sword, blade, "
              "unarmed strike, fire bolt, firebolt, eldritch blast, ray of frost, chill touch, shocking grasp, "
              "produce flame, thorn whip, guiding bolt, scorching ray, inflict wounds, witch bolt",
    "not_strike": "ready~ an|my attack, readied, strike~ a *? pose, hit~ points|point|dice|die, "
                  "hit~ the sack|hay|road|pub|tavern, his|her|their|brand's|mira's|dorn's next swing|attack, "
                  "fire~ at will, on fire, the fire, a fire, by the fire, what's|whats, how many|much, "
                  "bolt~ back|away|for|off|up|down|out|across|to",
    "end_fight": "fight's|combat's over|done, fight|combat is over|done, that's the fight done, they|rats|rat flee~|fled, "
                 "flee~ into|under|off|away, scuttle~|scurry~|run~|ran|swim~|swam off|away, let them|it go, "
                 "rats are|is dead, rat's|rat is dead, rats are|is down, last rat's|rat is down|dead, all dead, "
                 "surrender~, both rats are|lie dead|down, they're both dead|down, swimming for its life",
    "spell_damage": "sacred flame, magic missile, toll the dead, vicious mockery, thunderwave, burning hands, shatter, "
                    "fireball, word of radiance, poison spray, acid splash, frostbite, sword burst, hellish rebuke, "
                    "dissonant whispers, ice knife, moonbeam, spiritual weapon, lightning bolt, call lightning, "
                    "spirit guardians, hunger of hadar, cloud of daggers, sleet storm, ice storm, divine smite, smite",
    "heal_spell": "cure~ wounds, healing word, mass healing word, prayer of healing, mass cure wounds, heal, goodberry, "
                  "lay~ on hands, lays on hands, laid on hands, healer's kit, healers kit, healer kit, second wind, "
                  "regenerate, aura of vitality, patch~ him|her|them|myself|dorn|mira|brand up, "
                  "tend~ to? his|her|their|my|your wounds, bandage~ him|her|them|his|her|their, stabilize~, "
                  "spare the dying",
    "hurt": "damage, dmg, hurt~, wound~, wounded, poison~, poisoned, bitten, bit me, stung, stabbed, burned, burnt, "
            "lose~ my|his|her grip, lost my grip, fall~ off|into|down|from|onto, fell, tumble~, slip~ off|on, "
            "slip~ and fall|fell, drop~ onto|into, gives way, gave way, trap, trapped, spikes, crash~ into|onto|down, "
            "take~ *? *? damage, took *? *? damage, land~ hard",
    "not_hurt": "break~ the ice, lands badly, hurt~ my|his|her pride|feelings, nothing broken, i'm fine, i'm okay, unhurt, unharmed, "
                "don't get hurt, no damage, fall~ asleep|in|silent|quiet|for|behind|back, fell asleep|silent|back",
    "fall_height": "feet|foot|ft|storeys|stories|flight|stair|stairs|drop|cliff|roof|deck|hull|below",
    # places and things changing state
    "open_light": "relight~, shoulder-charge~ the|a *? door|gate, barge~ *? *? door|gate, ram~ the|a *? door|gate, "
                  "hack~ down|through|away, cut~ through|down|away the|a, clear~ the|a way|path, "
                  "light~ the|a|that|those|each|every|all|both lamp|lamps|torch|torches|brazier|beacon|lantern|fire|"
                  "candle|candles|hearth|sconce|sconces|signal|wick|wicks, lit the|a, kindle~, ignite~, "
                  "put~ a|the? flame|match|torch|light to, set~ fire to, set~ *? *? alight, "
                  "open~ the|that|this door|gate|grate|hatch|trapdoor|shutters|window|cellar|shed|lock|padlock, "
                  "unlock~, pick~ the|a lock|padlock, break~ down|open the? door|gate|lock, kick~ in|down the? door|gate, "
                  "force~ the door|gate|lock|hatch, force~ it open, lower~ the, raise~ the, ring~ the bell, douse~, "
                  "extinguish~, snuff~, put~ out the, blow~ out, bar~ the door, close~ the|that door|gate|hatch|shutters, "
                  "seal~, wait~ *? *? for|until|till low? tide|water, wait~ *? *? for|until|till the tide, "
                  "sit~ tight until|till|for, tide runs|goes|turns|drops|is out, low water, low tide, "
                  "get~ it burning|going|lit, get~ the lantern|lamp|light burning|going|lit",
    # quests
    "accept": "accept~, we accept, we|i take~ *? job|offer|work|contract|gig, i'm|we're on it,  agree~, agreed $, we'll|i'll do it|this|that, we|i will do it|this|that, "
              "we'll|i'll help you? $, count me|us in, it's a deal, deal $, you've got a|yourself a deal|crew|team, "
              "you've got yourself, got yourself a|some, we're|i'm in $, we're|i'm on board, we're|i'm game, "
              "we'll|i'll get it|your|the|that, we'll|i'll find|bring|relight|fix|sort|handle, we'll|i'll take care, "
              "you have my|our word, i give you my word, give~ *? *? my|our word, consider it done, sold $, "
              "we'll|i'll take the|your|this|that job|offer|work|contract|quest|task, sign~ me|us up, "
              "leave~ it to us|me, you can count on, happy to help, shake~ on it, shake~ her|his hand on it, "
              "let's do it|this, you're on, we're your people|crew|folk, we'll|i'll do what we|i can",
    "not_accept": "you swear, think~ it over, think~ about it, no deal, not interested, not now, let's not, pass on, "
                  "we'll|i'll see, sleep~ on it, we'd rather not, deal~ with you|them|it|him|her",
    "progress": "found, find~ out, we know, found out, defeat~, killed, it was, done, finished, brought, returned, "
                "here is, here's, show~, got it back, it's back, is back, back in its|the cradle, burning again, "
                "burns again, lit again, relit, learned, learnt, discovered, told us, confessed, admitted, the end of, "
                "in irons, scattered, captured, arrested, dead, dealt with, stopped, broken, get it burning",
    # NPCs
    "join": "you're with us, you're coming with|along, join~ us, join~ the|our party|group|crew, come~ with us, come~ along, came along, travel~ with us, "
            "walk~ with us, tag~ along, guide~ us, lead~ us, accompany~ us|me, fall~ in beside, fall~ in with us, "
            "falls in, with us from now on, ride~ with us, sail~ with us, come~ too",
    "leave": "part~ ways, leave~ *? *? at|behind|here, left *? *? at|behind, stay~ here|behind|put|by|at|with, "
             "wait~ here|at, wait~ for us, go on alone, go~ home|back|on, head~ back|home, get~ back to, "
             "return~ to her|his|the, send~ her|him|them back|home|away|off, leave~ us, say~ goodbye|farewell, "
             "farewell, goodbye, fare thee well, stick~ around|here, more use here",
    "send": "head~ up|over|down|out to|for, send~, sent, ask~ *? *? to go|head|meet|wait|run|fetch, go~ to|home|ahead|fetch, go~ back to, "
            "head~ to|back|home, meet~ us|me at|in|by, wait~ for us at|in|by, run~ to|back|ahead, fetch~",
    "ask_npc": "what was|is|were * like, what was|is|were * * like, what's * * like,  whats * deal, who is, who's, whos, who was, tell me about, what do we|i know about, "
               "what do we|i know of, what's * like, whats * like, what is * like, can we trust, should we trust, "
               "what about, anything on, know anything about, remind me who",
    "secretly": "haven't told anyone|us|me, what aren't you, something's eating at you, you're hiding, secret, secrets, hiding, hide from us, keeping from us, not telling us, holding back, "
                "you know something, what aren't you telling",
    "not_secret": "secret to, secret ingredient|recipe|of a good",
    # lore
    "lore": "tell~ me|us about, talk~ me through, what do|does the|they * mean, what does * mean, mean by, belong~ to, why's there, why is "
            "there, why are there, how far, history, histories, historical, legend, legends, legendary, lore, myth, myths, stories, story of, tales, "
            "tale of, folklore, rumour, rumours, rumor, rumors, old wars, the war, founded, founder, who built, "
            "built it|the, when was, origin, origins, used to be, long ago, in the old days, ancient, charter, law, "
            "laws, custom, customs, tradition, traditions, festival, holiday, religion, gods, god, goddess, saint, "
            "temple, shrine, worship, superstition, superstitions, prophecy, what happened to|at|in|here|there, "
            "why is|does|do|did|are the, what's the deal with, meaning of, the story",
    "not_lore": "secret to, how many|much, your|my story, hit point|points, hp, ac, armor class, turn, our quests, "
                "quests have, where can we, where'd you, how long have you, recipe",
}

_QUOTE = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})
# Words come from str.split after a one-for-one str.translate (both C loops, a tenth of a regex's time): signs
# that are no mark become spaces, a line break a full stop. Only the few pieces that are not plain words
# ("hand.", "can't", "'quoted'") go through a small regex that separates words from marks.
_SIGNS = "\"$%&*+/<=>@[\\]^_`{|}~"
_SPACES = str.maketrans(_SIGNS + "\n–—", " " * len(_SIGNS) + ".,,")
_PIECE = re.compile(r"[^\W_]+(?:['-][^\W_]+)*|[.!?]+|[,;:()]|-+")
_SENTENCE_MARKS = frozenset(".!?")
_CLAUSE_MARKS = frozenset(".!?,;:()-")


def _pieces(text: str) -> Iterator[str]:
    """Words and marks (".", "?!", ",", "-" …), in order."""
    for part in text.translate(_SPACES).split():
        if part.isalnum():
            yield part
        else:
            yield from _PIECE.findall(part)


def _words(text: str) -> list[str]:
    """The words of a text as `Reading` cuts them, marks left out."""
    return [p for p in _pieces(text) if p[0] not in _CLAUSE_MARKS]


Entry = tuple[str, tuple[_Element, ...]]  # a category, and the elements after the phrase's opening words
Gapped = tuple[str, tuple[_Element, ...], "frozenset[str] | None", int]


def _compile(lexicon: dict[str, str]) -> tuple[dict[str, list[str]], dict[tuple[str, str], list[Entry]],
                                               dict[str, list[Gapped]]]:
    """Three lookups: a word that is a whole phrase; two words that open one; a word that opens one with a gap."""
    single: dict[str, list[str]] = {}
    pairs: dict[tuple[str, str], list[Entry]] = {}
    gapped: dict[str, list[Gapped]] = {}
    for category, phrases in lexicon.items():
        for phrase in phrases.split(","):
            elements = tuple(_element(spec) for spec in phrase.split())
            if not elements:
                continue
            first, rest = elements[0], elements[1:]
            if first.optional or first.any or first.end:
                raise ValueError(f"lexicon {category!r}: a phrase must start with a word: {phrase!r}")
            for word in first.words:
                if not rest:
                    if category not in single.setdefault(word, []):
                        single[word].append(category)
                elif rest[0].optional or rest[0].any or rest[0].end:
                    gapped.setdefault(word, []).append((category, rest, *_anchor(rest)))
                else:
                    for following in rest[0].words:
                        pairs.setdefault((word, following), []).append((category, rest[1:]))
    return single, pairs, gapped


def _anchor(rest: tuple[_Element, ...]) -> tuple[frozenset[str] | None, int]:
    """The first word a phrase cannot do without after a gap, and how far ahead it can be: a cheap test first."""
    for reach, element in enumerate(rest, start=1):
        if element.end:
            return None, 0
        if not element.optional and not element.any:
            return element.words, reach
    return None, 0


_SINGLE, _PAIRS, _GAPPED = _compile(LEXICON)


def _match(elements: tuple[_Element, ...], at: int, tokens: list[str], stop: int, ends: set[int]) -> int:
    """Where the rest of a phrase ends if it matches from `at` (-1 if not). Bounded: phrases are short."""
    if not elements:
        return at
    first, rest = elements[0], elements[1:]
    if first.end:
        return _match(rest, at, tokens, stop, ends) if at - 1 in ends or at >= stop else -1
    if at < stop and (first.any or tokens[at] in first.words):
        found = _match(rest, at + 1, tokens, stop, ends)
        if found >= 0:
            return found
    return _match(rest, at, tokens, stop, ends) if first.optional else -1


class Hit(NamedTuple):
    start: int  # first word
    end: int  # one past the last word
    sentence: int


_MOST = 32  # hits kept per category: every rule's work stays bounded, however long or repetitive the message


class Reading:
    """A message read once: its words, where sentences and clauses end, and every lexicon phrase in it
    (the first `_MOST` of each category)."""

    __slots__ = ("raw", "_raw_tokens", "text", "tokens", "sentence_of", "stops", "questions", "requests", "hits", "clause_ends",
                 "token_set", "stems", "later")

    def __init__(self, message: str) -> None:
        self.raw = message if message.isascii() else message.translate(_QUOTE)
        self._raw_tokens: list[str] | None = None
        self.text = self.raw.lower()
        tokens: list[str] = []
        of: list[int] = []
        stops: list[int] = []  # one past the last word of each sentence
        ends: set[int] = set()  # the last word of each clause
        self.questions: set[int] = set()
        self.requests: set[int] = set()  # "can we …?", "could you …?": asked, but meant as a move
        start = 0
        for part in self.text.translate(_SPACES).split():
            if part.isalnum():  # most words
                tokens.append(part)
                of.append(len(stops))
                continue
            pieces = (part[:-1], part[-1]) if part[-1] in _CLAUSE_MARKS and part[:-1].isalnum() else _PIECE.findall(part)
            for piece in pieces:
                if piece[0] not in _CLAUSE_MARKS:
                    tokens.append(piece)
                    of.append(len(stops))
                    continue
                if tokens:
                    ends.add(len(tokens) - 1)
                if piece[0] in _SENTENCE_MARKS and len(tokens) > start:
                    self._close(tokens, start, stops, ends, "?" in piece)
                    start = len(tokens)
                elif "?" in piece and stops and len(tokens) == start:  # "…!?" after a closed sentence
                    self.questions.add(len(stops) - 1)
        if len(tokens) > start:
            self._close(tokens, start, stops, ends, False)
        self.tokens, self.sentence_of, self.stops, self.clause_ends = tokens, of, stops, ends
        # Three passes at C speed pick the few positions worth a look: a word that is a phrase on its own, two
        # words that open a phrase, a word that opens a phrase with a gap. Then only those are matched.
        found: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
        for i in [i for i, t in enumerate(tokens) if t in _SINGLE]:
            for category in _SINGLE[tokens[i]]:
                found[category].append((i, i + 1, of[i]))
        pairs = zip(tokens, islice(tokens, 1, None))
        for i in [i for i, pair in enumerate(pairs) if pair in _PAIRS]:
            sentence = of[i]
            if of[i + 1] != sentence:
                continue
            stop = stops[sentence]
            for category, rest in _PAIRS[tokens[i], tokens[i + 1]]:
                end = _match(rest, i + 2, tokens, stop, ends) if rest else i + 2
                if end >= 0:
                    found[category].append((i, end, sentence))
        for i in [i for i, t in enumerate(tokens) if t in _GAPPED]:
            sentence = of[i]
            stop = stops[sentence]
            for category, rest, anchor, reach in _GAPPED[tokens[i]]:
                if anchor is not None and anchor.isdisjoint(tokens[i + 1:min(stop, i + 1 + reach)]):
                    continue
                end = _match(rest, i + 1, tokens, stop, ends)
                if end >= 0:
                    found[category].append((i, end, sentence))
        self.hits: dict[str, list[Hit]] = {
            category: [Hit(*h) for h in sorted(spans)[:_MOST]] for category, spans in found.items()}
        unique = set(tokens)
        self.token_set = unique | {t[:-2] for t in unique if t.endswith("'s")}
        self.stems = {_stem(t) for t in self.token_set if len(t) > 2 and t not in _STOP_WORDS}
        self.later = {of[i] for i, t in enumerate(tokens) if t in _LATER} if not _LATER.isdisjoint(self.token_set) else set()

    def _close(self, tokens: list[str], start: int, stops: list[int], ends: set[int], question: bool) -> None:
        number = len(stops)
        stop = len(tokens)
        stops.append(stop)
        ends.add(stop - 1)
        if question or tokens[start] in _QUESTION_WORDS:  # "what's their AC again" asks without a mark
            self.questions.add(number)
            if stop - start >= 2 and tokens[start] in _ASKING and tokens[start + 1] in _ASKERS:
                self.requests.add(number)
            for tag in _TAGS:  # "go fetch her, would you?": an order with a question tagged on
                if stop - start > len(tag) and tuple(tokens[stop - len(tag):stop]) == tag and stop - len(tag) - 1 in ends:
                    self.requests.add(number)

    def raw_tokens(self) -> list[str]:
        """The words as written (capitals kept), aligned with `tokens`."""
        if self._raw_tokens is None:
            words = _words(self.raw)
            self._raw_tokens = words if len(words) == len(self.tokens) else self.tokens
        return self._raw_tokens

    def get(self, category: str) -> list[Hit]:
        return self.hits.get(category) or []

    def has(self, category: str) -> bool:
        return bool(self.hits.get(category))

    def words(self, hit: Hit) -> str:
        return " ".join(self.tokens[hit.start:hit.end])

    def question(self, sentence: int) -> bool:
        return sentence in self.questions and sentence not in self.requests

    def done(self, hit: Hit) -> bool:
        """Whether the player does this now: not asked about, promised, supposed or denied."""
        if self.question(hit.sentence):
            return False
        first = self.stops[hit.sentence - 1] if hit.sentence else 0
        if hit.sentence in self.requests:
            first += 2
        before = self.tokens[max(first, hit.start - 3):hit.start]
        if any(w in _NOT_NOW for w in before):
            return False
        return hit.sentence not in self.later

    def acts(self, category: str, *unless: str) -> list[Hit]:
        """The hits of `category` done now, leaving out any that overlaps a hit of one of `unless`."""
        hits = self.get(category)
        if not hits:
            return []
        covered: set[int] = set()
        for other in unless:
            for h in self.get(other):
                covered.update(range(h.start, h.end))
        return [h for h in hits if self.done(h) and covered.isdisjoint(range(h.start, h.end))]

    def near(self, first: Iterable[Hit], category: str, gap: int = 8) -> Hit | None:
        """A hit of `category` that starts within `gap` words after one of `first`, in the same sentence.

        Both lists are in word order, so one merged walk finds it: linear, however many hits there are."""
        then = self.get(category)
        firsts = list(first)
        j, reach, sentence = 0, -1, -1  # the furthest end of a `first` hit that starts before the current one
        for h in then:
            while j < len(firsts) and firsts[j].start < h.start:
                if firsts[j].sentence != sentence:
                    sentence, reach = firsts[j].sentence, -1
                reach = max(reach, firsts[j].end)
                j += 1
            if sentence == h.sentence and reach >= 0 and h.start - reach <= gap:
                return h
        return None

    def within(self, hit: Hit, words: set[str], gap: int = 8) -> bool:
        """Whether one of `words` follows `hit` within `gap` words, in the same sentence."""
        stop = min(self.stops[hit.sentence], hit.end + gap)
        return any(self.tokens[i] in words for i in range(hit.end, stop))


_ASKING = frozenset({"can", "could", "may", "might", "shall", "mind", "let's", "lets"})
_QUESTION_WORDS = frozenset({"what's", "whats", "how", "why", "where", "when", "who", "who's", "whos", "what"})
_TAGS = (("would", "you"), ("will", "you"), ("won't", "you"), ("could", "you"), ("please",), ("pls",), ("plz",))
_WONDERING = frozenset({"do", "does", "did", "is", "are", "should", "what", "what's", "whats", "how", "why", "which",
                        "when", "would", "will", "if"})
_THEY = frozenset({"she", "he", "they", "she's", "he's", "they're", "it", "it's", "who", "someone", "somebody",
                   "everyone", "nobody"})
_ASKERS = frozenset({"we", "i", "you", "us", "if"})
_NOT_NOW = frozenset({"who", "whoever", "someone", "somebody", "what", "how", "if", "would", "could", "should", "might", "maybe", "perhaps", "swear", "promise", "before",
                      "don't", "dont", "not", "never", "nobody", "no", "won't", "wont", "can't", "cannot",
                      "whether", "unless", "shouldn't", "wouldn't", "didn't", "doesn't", "without", "instead",
                      "rather", "wish", "planning", "plan", "thinking", "considering"})
_LATER = frozenset({"later", "tomorrow", "eventually", "someday", "sometime", "afterwards"})
_STOP_WORDS = frozenset(
    "the a an of to in on at by for from with and or but not no is are was were be been it its this that these "
    "those there their they them he him his she her we us our you your i me my what who where when why how which "
    "about into onto over under after before all any some very just only also then than so as up down out off "
    "again still would could should will shall can may might do does did have has had".split())


@dataclass(frozen=True)
class Situation:
    state: GameState
    reading: Reading
    agent: AgentType
    npc: NPC | None
    actor_id: str | None = None  # the player who speaks (whose inventory "my potion" is)

    @classmethod
    def of(cls, state: GameState, message: str, agent: AgentType, npc: NPC | None = None,
           actor_id: str | None = None) -> "Situation":
        return cls(state, Reading(message), agent, npc, actor_id)


Rule = Callable[[Situation], list[Suggestion]]
RULES: list[tuple[str, frozenset[AgentType], Rule]] = []


def rule(*agents: AgentType) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        RULES.append((fn.__name__, frozenset(agents), fn))
        return fn
    return register


def _stem(word: str) -> str:
    """A cheap stem: without a plural or verb ending, cut to six letters ("casks" and "cask" meet)."""
    word = word.removesuffix("'s")
    for ending in ("ing", "ed", "es", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[:-len(ending)]
            break
    return word[:6]


@lru_cache(maxsize=1024)
def _content(text: str, leave_out: frozenset[str] = frozenset()) -> frozenset[str]:
    """The stems of a text's content words (cached: the same secrets, names and objectives come back each turn)."""
    return frozenset({_stem(w) for w in _words(text.lower()) if len(w) > 2 and w not in _STOP_WORDS} - leave_out)


def _overlap(r: Reading, text: str, leave_out: frozenset[str] = frozenset()) -> int:
    """How many content words of `text` the message uses, by stem."""
    return len(r.stems & _content(text, leave_out))


def _names(state: GameState) -> frozenset[str]:
    """The stems of every place and person's name: shared by half the game's texts, so no evidence of a topic."""
    return _content(" ".join([*(loc.name for loc in state.locations.values()), *(n.name for n in state.npcs.values())]))


# --- rules ---------------------------------------------------------------------------------------------

_THROWN_ITEM = frozenset({"flask", "vial", "oil", "bottle", "caltrops", "marbles", "net", "bomb", "acid", "holy",
                          "alchemist's", "torch", "ball", "bearings", "potion", "jar", "pot", "rock", "stone"})


@rule(N, C)
def consume_item(s: Situation) -> list[Suggestion]:
    r = s.reading
    used = r.near(r.acts("consume", "not_trade"), "consumable", gap=6)
    if used is None:
        return []
    found = [Suggestion("modify_inventory", "the item is used up", 0.85, {"quantity": "-1"})]
    sentence_heals = any(h.sentence == used.sentence for h in r.get("healing"))
    if sentence_heals or (r.tokens[used.start] in {"potion", "potions", "potoin", "pot"} and not r.within(used, {"of"}, 1)):
        found = [Suggestion("update_hp", "the player uses a healing item: roll it, then heal", 0.85, {"kind": "healing"}),
                 *found, Suggestion("roll", "roll the healing", 0.8)]
    return found


_NUMBER_WORDS = {w: n for n, w in enumerate("a one two three four five six seven eight nine ten eleven twelve".split())}
_NUMBER_WORDS.update({"a": 1, "an": 1, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100})
_COIN_WORDS = {"gold": "gp", "gp": "gp", "silver": "sp", "sp": "sp", "copper": "cp", "coppers": "cp", "cp": "cp",
               "platinum": "pp", "pp": "pp"}
_COINS = re.compile(r"\b(\d{1,4}|" + "|".join(_NUMBER_WORDS) + r")\s+(" + "|".join(_COIN_WORDS) + r")\b")
_GIVING = r"give|gives|gave|hand|hands|handed|slide|slides|toss|tosses|offer|offers|here are|here's|here is"
_TAKING = (r"loot|loots|pocket|pockets|take|takes|took|collect|collects|pick up|picks up|picked up|grab|grabs|scoop|"
           r"scoops|keep|keeps|receive|receives|stash|stashes")
# Which way coin goes, and which way a thing goes, by the verb before it: buying sends coin and brings the thing.
_COIN_OUT = re.compile(rf"\b(pay|pays|paid|paying|buy|buys|bought|purchase|purchases|tip|tips|tipped|spend|spends|"
                       rf"spent|bribe|bribes|rent|rents|hire|hires|costs?|{_GIVING})\b")
_COIN_IN = re.compile(rf"\b(sell|sells|sold|earn|earns|{_TAKING})\b")
_ITEM_OUT = re.compile(rf"\b(sell|sells|sold|drop|drops|leave|leaves|{_GIVING})\b")
_ITEM_IN = re.compile(rf"\b(buy|buys|bought|purchase|purchases|{_TAKING})\b")


_GOODS = frozenset(LEXICON["item"].split("|")) - set(_COIN_WORDS) - {
    "coin", "coins", "purse", "pouch", "money", "cash", "piece", "pieces", "loot", "reward", "goods", "gear", "advance",
    "payment", "fee", "wage", "wages", "bounty", "deposit", "crown", "crowns"}


def _direction(before: str, out: re.Pattern[str], into: re.Pattern[str]) -> int:
    """Which way what follows goes, by the verb nearest before it: -1 it leaves the player, 1 it comes, 0 unclear
    ("I take a room; here are two gold" pays)."""
    verbs = [(m.start(), -1) for m in out.finditer(before)] + [(m.start(), 1) for m in into.finditer(before)]
    return max(verbs)[1] if verbs else 0


@lru_cache(maxsize=2048)
def _carried(name: str) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    """How a message names a carried item: whole ("the healing potion"), or by its last word after "my" (for a
    name whose last word is longer than three letters). Made once per item name."""
    head = (name.lower().split() or [""])[-1]  # an imported sheet may name an item with blanks only
    return (re.compile(r"\b" + re.escape(name.lower()) + r"s?\b"),
            re.compile(r"\bmy " + re.escape(head) + r"s?\b") if len(head) > 3 else None)


def changes_hands(text: str, carried: Iterable[str] = ()) -> dict[str, str]:
    """What a message says changes hands, as modify_inventory's arguments, when it says so plainly: coin ("pay her
    two gold" → gp -2, "I pocket the 5 silver" → sp +5), or one thing (a carried item by its name, else a thing
    the lexicon knows: "I pick up the coil of rope" → coil of rope +1). Nothing when it is unclear."""
    coins = list(_COINS.finditer(text))
    if len(coins) == 1:
        amount, coin = coins[0].groups()
        n = int(amount) if amount.isdigit() else _NUMBER_WORDS[amount]
        way = _direction(text[: coins[0].start()], _COIN_OUT, _COIN_IN)
        return {"currency": _COIN_WORDS[coin], "quantity": str(way * n)} if n and way else {}
    if coins:
        return {}
    for name in sorted(carried, key=len, reverse=True):  # "healing potion" before "potion"
        whole, mine = _carried(name)
        at = whole.search(text)
        if at is None and mine is not None:
            at = mine.search(text)  # "my potion", "my rations"
        if at is not None:
            way = _direction(text[: at.start()], _ITEM_OUT, _ITEM_IN)
            return {"item": name, "quantity": str(way)} if way else {}
    for m in re.finditer(r"\b([a-z']+)(?: of ([a-z']+))?\b", text):
        if m.group(1) in _GOODS:
            way = _direction(text[: m.start()], _ITEM_OUT, _ITEM_IN)
            return {"item": m.group(0), "quantity": str(way)} if way > 0 else {}
    return {}


@rule(N, C, P)
def trade(s: Situation) -> list[Suggestion]:
    r = s.reading
    strong = r.acts("trade", "not_trade", "accept", "check" if s.agent is C else "not_trade")
    throwing = ("throw", "threw", "hurl", "chuck", "lob", "fling", "flung", "toss")
    weak = r.near([h for h in r.acts("give", "not_trade", "accept")
                   if not (s.agent is C and r.tokens[h.start].startswith(throwing))], "item", gap=6)
    thrown = [h for h in r.acts("strike") if r.tokens[h.start].startswith(throwing)
              and r.within(h, _THROWN_ITEM, 5)] if s.agent is C else []
    if not (strong or weak or thrown):
        return []
    dealt = {r.tokens[h.start][:4] for h in strong}
    shop = _open_shop(s) if dealt & {"buy", "boug", "purc", "sell", "sold"} else None
    if shop is not None:  # a listed shop's goods go through the engine's price list
        tool = "sell" if dealt & {"sell", "sold"} and not dealt & {"buy", "boug", "purc"} else "buy"
        found = [Suggestion(tool, f"a deal with {shop}: the engine charges its listed prices", 0.75)]
    else:
        actor = s.state.characters.get(s.actor_id or "")
        carried = [i.name for i in actor.inventory] if actor else []
        found = [Suggestion("modify_inventory", "something changes hands: items or coin must move in the inventory",
                            0.75, changes_hands(r.text, carried))]
    if s.agent is not C and r.acts("social") or any(r.tokens[h.start].startswith(("steal", "stole", "pilfer", "filch", "swipe", "nick",
                                                             "pinch", "pickpocket", "shoplift", "lift"))
                               for h in strong):
        found.append(Suggestion("roll", "a sleight-of-hand or persuasion check decides it", 0.7))
    return found


def _open_shop(s: Situation) -> str | None:
    """The name of the shop open here that this agent sells from (the GM: any; an NPC: its own)."""
    for shop in shops_here(s.state):
        if (s.npc is None or shop.keeper == s.npc.id) and closed_because(s.state, shop) is None:
            return shop.name
    return None


@rule(N, P)
def accept_quest(s: Situation) -> list[Suggestion]:
    offered = [q for q in s.state.quests.values() if q.status == "offered" and (s.npc is None or q.giver == s.npc.id)]
    r = s.reading
    if not offered or not r.acts("accept", "not_accept") or r.has("not_accept"):
        return []
    quest = offered[0]
    if len(offered) > 1:  # the one whose giver or words the message names
        quest = max(offered, key=lambda q: _overlap(r, " ".join([q.title, q.giver or "", q.description or ""])))
    return [Suggestion("start_quest", f"the party seems to accept '{quest.title}'", 0.8, {"quest": quest.id})]


@rule(N, P)
def report_progress(s: Situation) -> list[Suggestion]:
    r = s.reading
    if not r.has("progress") or r.question(r.get("progress")[0].sentence):
        return []
    best, score = None, 1
    for quest in s.state.quests.values():
        if quest.status not in ("active", "offered"):
            continue
        for objective in quest.objectives:
            if objective.done:
                continue
            overlap = _overlap(r, objective.text) + (quest.status == "active")
            if overlap > score:
                best, score = (quest, objective), overlap
    if best is None:
        return []
    quest, objective = best
    if quest.status == "offered":  # the party did the work before taking the job: start it, then mark it
        return [Suggestion("complete_objective", f"the party seems to have done '{objective.text}' (start "
                           f"'{quest.title}' first)", 0.5, {"quest": quest.id, "objective": objective.id})]
    return [Suggestion("complete_objective", f"the party may have finished a step of '{quest.title}'", 0.6,
                       {"quest": quest.id, "objective": objective.id})]


_ALIASES = {"tavern": ("tavern", "pub", "inn", "bar", "alehouse", "taproom"), "cottage": ("cottage", "house", "home"),
            "lighthouse": ("lighthouse", "tower", "rock")}
_PERSONA = re.compile(r"^You are ([^,.]+), ([^,.]+)")


def _roles(npc: NPC) -> frozenset[str]:
    """What people call an NPC besides its name, from its persona ("You are Ysolde Marrick, Saltmere's
    harbormaster, …" gives "harbormaster")."""
    return _persona_roles(npc.persona)


@lru_cache(maxsize=256)
def _persona_roles(persona: str) -> frozenset[str]:
    m = _PERSONA.match(persona)
    if m is None:
        return frozenset()
    return frozenset(w.removesuffix("'s") for w in _words(m.group(2).lower()) if len(w) > 3 and w not in _STOP_WORDS)


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1:] for i in range(len(word))}


@lru_cache(maxsize=256)
def _place_names(location_id: str, name: str, description: str) -> frozenset[str]:
    """What a place is called: its name's words, its id's, and a kind's usual words ("pub" for a tavern)."""
    words = {w for w in _words(name.lower()) if w not in _STOP_WORDS}
    words |= {w.rstrip("s") for w in words} | set(location_id.split("-")) - {"the", "of"}
    about = " ".join([name, *description.split()[:8]]).lower()  # what it is, not what it faces
    return frozenset(words | {a for key, names in _ALIASES.items() if key in about for a in names})


def _place_words(state: GameState, location_id: str) -> set[str]:
    there = state.locations[location_id]
    words = set(_place_names(location_id, there.name, there.description))
    for npc in state.npcs.values():  # "see Brisa", "the keeper's daughter": where someone lives
        if npc.location == location_id and not npc.name.startswith("The "):
            words.add(npc.name.split()[0].lower())
            words |= {w for w in _roles(npc) if w not in ("keeper",)} - {w for w in words if len(w) < 4}
    return words


class _Ahead:
    """The words soon after some hits (a dozen after each of the first four, in their sentence), read once so that
    every place can be tested against them cheaply, allowing one slip of the keyboard ("tavrn")."""

    def __init__(self, r: Reading, hits: list[Hit], reach: int = 12, before: bool = False) -> None:
        """`before`: the words just before each hit count too ("open the door to the Brine Cup and step inside")."""
        self.words = {r.tokens[i].removesuffix("'s") for hit in hits[:4]
                      for i in range(max(r.stops[hit.sentence - 1] if hit.sentence else 0, hit.start - reach) if before
                                     else hit.end, min(r.stops[hit.sentence], hit.end + reach))}
        self.long = {w for w in self.words if len(w) >= 5}
        self.slips = {d for w in self.long for d in _deletions(w)}

    def names(self, place: set[str]) -> bool:
        if not self.words.isdisjoint(place):
            return True
        if not self.long:
            return False
        long_place = [w for w in place if len(w) >= 5]
        return not self.slips.isdisjoint(long_place) or any(not self.long.isdisjoint(_deletions(w)) for w in long_place)


def _spoken_to(s: Situation) -> dict[int, NPC]:
    """The sentences that open by naming someone here ("Ysolde, go tell Brisa …"): orders to them."""
    r = s.reading
    firsts = {n.name.split()[0].lower(): n for n in s.state.npcs.values()}
    out = {}
    for number, stop in enumerate(r.stops):
        first = r.stops[number - 1] if number else 0
        if first in r.clause_ends and r.tokens[first] in firsts:
            out[number] = firsts[r.tokens[first]]
    return out


@rule(N)
def travel(s: Situation) -> list[Suggestion]:
    r = s.reading
    going = r.acts("go")
    if going and (orders := _spoken_to(s)):
        going = [h for h in going if h.sentence not in orders]
    short = len(r.tokens) <= 5 and not r.questions and not r.has("go") and not r.later  # "the keeper's cottage pls"
    if not going and not short:
        return []
    here = s.state.location()
    opening = bool(r.acts("open_light"))
    ahead = _Ahead(r, going or [Hit(0, 0, 0)], before=True)
    for exit_ in here.exits:
        if ahead.names(_place_words(s.state, exit_.to)):
            there = s.state.locations[exit_.to]
            if here.exit_open(exit_):
                return [Suggestion("change_location", f"the player heads for {there.name}", 0.8, {"location": there.id})]
            if opening:  # waiting for the tide, unbarring the gate: then the way opens
                return [Suggestion("change_location", f"the player heads for {there.name} once the way opens", 0.6,
                                   {"location": there.id})]
    return []


@rule(N)
def rest(s: Situation) -> list[Suggestion]:
    r = s.reading
    if r.has("not_rest") and not r.has("hit_dice"):
        blocked = {h.sentence for h in r.get("not_rest")}
    else:
        blocked = set()
    short = [h for h in r.acts("short_rest", "not_rest") if h.sentence not in blocked]
    long = [h for h in r.acts("long_rest", "not_rest") if h.sentence not in blocked]
    if long and not (short and any(r.words(h) in ("hit die", "hit dice") for h in short)):
        return [Suggestion("long_rest", "the party settles down for the night", 0.85)]
    if short:
        return [Suggestion("short_rest", "a short rest spends hit dice to heal", 0.85)]
    return []


@rule(N, C, P)
def ability_check(s: Situation) -> list[Suggestion]:
    r = s.reading
    found = [h for h in r.acts("social" if s.agent is P else "check", "not_check", "fight", "go")
             if not h.start or r.tokens[h.start - 1] not in _THEY]  # "she's hiding something" is no check of ours
    if s.agent is C:
        found = [h for h in found if r.tokens[h.start] not in ("try", "tries", "tried", "attempt", "attempts")]
    named = [h for h in r.get("skill") if not r.has("not_check")  # "perception?" asks for the roll, "do I need…?" not
             and r.tokens[r.stops[h.sentence - 1] if h.sentence else 0] not in _WONDERING]
    if found or named and s.agent is not P:
        return [Suggestion("roll", "the outcome is uncertain: roll the check", 0.7)]
    return []


def _secrets_named(s: Situation) -> list:
    """Undiscovered secrets where the party is, and in places the message names ("inside the tavern …")."""
    here = s.state.current_location
    places = [here] + [loc.id for loc in s.state.locations.values() if loc.id != here and loc.secrets and any(
        len(w) >= 5 for w in s.reading.token_set & _place_words(s.state, loc.id))]
    return [x for loc in places for x in s.state.locations[loc].secrets if not x.discovered]


@rule(N)
def secrets_here(s: Situation) -> list[Suggestion]:
    """Searching is a check; searching or watching where a secret lies, for what it is about, may find it."""
    r = s.reading
    searching = r.acts("search")
    if not searching and not r.acts("observe"):
        return []
    names = _names(s.state)
    for secret in _secrets_named(s):
        if _overlap(r, secret.text, names) >= 2:
            return [Suggestion("discover_secret", "what they look at could reveal a secret if the check succeeds", 0.6,
                               {"secret": secret.id}),
                    Suggestion("roll", "searching is a check", 0.6)]
    return [Suggestion("roll", "searching is a check", 0.6)] if searching else []


@rule(P)
def npc_secret(s: Situation) -> list[Suggestion]:
    if s.npc is None:
        return []
    r = s.reading
    untold = [x for loc in s.state.locations.values() for x in loc.secrets if x.id in s.npc.knows_secrets and not x.discovered]
    for secret in untold:  # when asked plainly, or about what the secret is about (not at every "who" or "where")
        if [h for h in r.get("secretly") if not r.has("not_secret")] or _overlap(r, secret.text, _names(s.state)) >= 2:
            return [Suggestion("discover_secret", "you know a secret they ask about; reveal it only if you choose to tell",
                               0.5, {"secret": secret.id})]
    return []


def _npcs_named(s: Situation) -> list[NPC]:
    tokens = s.reading.token_set
    return [n for n in s.state.npcs.values() if not tokens.isdisjoint(_name_words(n.name))]


@lru_cache(maxsize=256)
def _name_words(name: str) -> frozenset[str]:
    return frozenset(w for w in _words(name.lower()) if w not in _STOP_WORDS and w != "ghost")


@rule(N, P)
def company(s: Situation) -> list[Suggestion]:
    r = s.reading
    party = s.state.party.npc_ids
    if s.agent is P:
        who = [s.npc] if s.npc else []
    else:
        who = [n for n in _npcs_named(s) if n.location == s.state.current_location or n.id in party]
    for npc in who:
        if npc.id not in party and [h for h in r.get("join") if not r.question(h.sentence) or h.sentence in r.requests
                                    or s.agent is P]:
            return [Suggestion("add_to_party", f"{npc.name} is asked to travel with the party"
                               + ("; call it only if you agree" if s.agent is P else ""), 0.6, {"npc": npc.id})]
        if npc.id in party and r.acts("leave"):
            return [Suggestion("remove_from_party", f"{npc.name} stays behind", 0.6, {"npc": npc.id})]
    return []


@rule(N, P)
def npc_moves(s: Situation) -> list[Suggestion]:
    r = s.reading
    sent = r.acts("send")
    orders = _spoken_to(s) if s.agent is N else {}
    if s.agent is P or orders:  # told to the NPC's face: "head up to the Brine Cup", "Ysolde, go tell Brisa …"
        sent += [h for h in r.acts("go") if s.agent is P or h.sentence in orders]
    if not sent:
        return []
    who = [s.npc] if s.agent is P and s.npc else [n for n in _npcs_named(s) if n.id not in s.state.party.npc_ids]
    who = sorted(who, key=lambda n: n not in orders.values())
    ahead = _Ahead(r, sent)
    for npc in who:
        for loc in s.state.locations:
            if loc != npc.location and ahead.names(_place_words(s.state, loc) - {npc.name.split()[0].lower()}):
                return [Suggestion("move_npc_to_location", f"{npc.name} goes to {s.state.locations[loc].name}", 0.55,
                                   {"npc": npc.id, "location": loc})]
    return []


_CAST = re.compile(r"\bcast(?:s|ing)?\b", re.I)


def _party_spell(s: Situation) -> str | None:
    """A cantrip or spell of a party member's that the message names, if any."""
    text = " ".join(s.reading.text.casefold().replace("’", "'").split())
    for pid in s.state.party.player_ids:
        ch = s.state.characters.get(pid)
        for name in (spells.cantrips_of(ch) + spells.spells_of(ch)) if ch is not None else []:
            if re.search(rf"(?<!\w){re.escape(spells.key(name))}(?!\w)", text):
                return name
    return None


def _casting(s: Situation) -> str | None:
    """A party member's own spell, cast by name ("I cast light") or named as a damaging or healing spell."""
    r = s.reading
    if not (_CAST.search(r.text) or r.acts("spell_damage") or r.acts("heal_spell")):
        return None
    return _party_spell(s)


@rule(N, C)
def cast(s: Situation) -> list[Suggestion]:
    named = _casting(s)
    if named is None:
        return []
    return [Suggestion("cast_spell", "a player character's spell: the engine spends the slot and rolls", 0.85,
                       {"spell": named})]


@rule(N, C)
def damage(s: Situation) -> list[Suggestion]:
    r = s.reading
    if _casting(s) is not None:
        return []  # cast_spell applies the damage or healing itself
    if r.acts("heal_spell") and not r.has("hit_dice"):
        fixed = any(r.words(h).startswith(("lay on", "lays on", "laid on")) for h in r.get("heal_spell")) and not re.search(r"\dd\d", r.text)
        found = [Suggestion("update_hp", "healing: apply it", 0.8, {"kind": "healing"})]
        return found if fixed else found + [Suggestion("roll", "roll the healing dice", 0.75)]
    if r.acts("spell_damage") and s.agent is C:
        return [Suggestion("update_hp", "a spell's damage: apply it after the save or roll", 0.75, {"kind": "damage"}),
                Suggestion("roll", "roll the save and the damage", 0.75)]
    hurt = r.acts("hurt", "not_hurt")
    if hurt and not r.has("not_hurt") and not (s.agent is C and r.has("strike")):  # the attack tool applies its damage
        found = [Suggestion("update_hp", "hit points change: apply the damage", 0.7, {"kind": "damage"})]
        if not re.search(r"\b\d+\s*(?:damage|dmg|hp)\b", r.text):
            found.append(Suggestion("roll", "roll the damage", 0.6))
        return found
    leaps = [h for h in r.acts("check") if r.tokens[h.start].startswith(("jump", "leap", "leapt", "vault", "hop"))]
    if s.agent is N and r.near(leaps, "fall_height", gap=12):
        return [Suggestion("update_hp", "a fall from a height may hurt: apply it if the check fails", 0.55,
                           {"kind": "damage"})]
    return []


@rule(N)
def start_fight(s: Situation) -> list[Suggestion]:
    r = s.reading
    if not r.acts("fight", "not_fight"):
        return []
    here = [e for e in s.state.encounters.values() if e.location == s.state.current_location]
    args = {"encounter": here[0].id} if here else {}
    return [Suggestion("start_combat", "a fight is starting: roll initiative", 0.8 if here else 0.5, args)]


@rule(C)
def strike(s: Situation) -> list[Suggestion]:
    r = s.reading
    if r.has("not_strike"):
        return []
    readied = {r.sentence_of[i] for i, t in enumerate(r.tokens) if t.startswith("read") and t in _READY} \
        if not _READY.isdisjoint(r.token_set) else set()
    for hit in r.acts("strike", "not_strike"):
        if hit.sentence in readied or r.near([hit], "spell_damage", gap=1):
            continue  # a readied attack waits for its trigger; "fires magic missile" is a spell, not a weapon
        return [Suggestion("attack", "an attack: the engine rolls it against the target's AC", 0.85)]
    return []


_READY = frozenset({"ready", "readies", "readied", "readying"})


@rule(N)
def light_and_open(s: Situation) -> list[Suggestion]:
    if s.reading.acts("open_light"):
        return [Suggestion("update_location_state", "something here changes state (lit, opened, the tide)", 0.6)]
    return []


@rule(N, P)
def ask_lore(s: Situation) -> list[Suggestion]:
    r = s.reading
    if r.has("not_lore") or r.has("ask_npc") and (_npcs_named(s) or any(not _roles(n).isdisjoint(r.token_set)
                                                                       for n in s.state.npcs.values())):
        return []
    telling = {r.sentence_of[i] for i, t in enumerate(r.tokens) if t in _TELL} if not _TELL.isdisjoint(r.token_set) else set()
    for hit in r.get("lore"):
        asked = r.question(hit.sentence) or hit.sentence in telling
        if asked or s.agent is N and r.tokens[hit.start] in ("history", "legend", "legends", "lore", "myths", "folklore"):
            return [Suggestion("search_lore", "a question about the world's history or lore: look it up", 0.6)]
    for sentence in sorted(r.questions)[:4]:  # "what's Lantern Night?": a name asked about that is no one here
        first = r.stops[sentence - 1] if sentence else 0
        words = r.tokens[first:r.stops[sentence]]
        if words and words[0] in ("what's", "whats", "what", "who", "who's", "where's") and len(words) <= 12 \
                and not _npcs_named(s) and _proper_noun(s, sentence):
            return [Suggestion("search_lore", "a question about something in the world: look it up", 0.5)]
    return []


_TELL = frozenset({"tell", "explain", "know", "remind", "recall", "version", "heard", "hear", "learn"})
_NAME = re.compile(r"(?<=\w\W)\s*\b([A-Z][a-z]+)")  # a capital that does not open the sentence


def _proper_noun(s: Situation, sentence: int) -> bool:
    """Whether the question names something (a capitalised word past the first) that is no NPC here."""
    r = s.reading
    first = r.stops[sentence - 1] if sentence else 0
    known = {w.lower() for n in s.state.npcs.values() for w in n.name.split()}
    return any(w[0].isupper() and w != "I" and w.lower() not in known for w in r.raw_tokens()[first + 1:r.stops[sentence]])


@rule(N, P)
def ask_about_npc(s: Situation) -> list[Suggestion]:
    r = s.reading
    if not r.has("ask_npc"):
        return []
    others = [n for n in s.state.npcs.values() if s.npc is None or n.id != s.npc.id]
    named = [n for n in _npcs_named(s) if n in others]
    if not named:  # "what's the harbormaster like?": by what people call them
        named = [n for n in others if not _roles(n).isdisjoint(r.token_set)]
    if named:
        return [Suggestion("get_npc", f"what the party knows of {named[0].name}", 0.6, {"npc": named[0].id})]
    return []


@rule(C)
def combat_flow(s: Situation) -> list[Suggestion]:
    combat = s.state.combat
    if not combat.active:
        return []
    standing = [p for p in combat.order if p.faction == "enemy" and participant_hp(s.state, p)[0] > 0]
    if not standing:
        return [Suggestion("end_combat", "no enemy is left standing", 0.95)]
    r = s.reading
    if r.acts("end_fight"):
        return [Suggestion("end_combat", "the enemies are beaten or gone: end the fight", 0.75)]
    if not r.tokens or all(r.question(n) for n in range(len(r.stops))):
        return []  # a question about the fight is not a combatant's action: the turn does not pass
    return [Suggestion("next_turn", "after this combatant acts, pass the turn on", 0.9)]


def suggest(state: GameState, message: str, agent: AgentType, npc: NPC | None = None, limit: int = 4,
            actor_id: str | None = None) -> list[Suggestion]:
    """The best suggestions for this agent, one per tool, highest confidence first."""
    situation = Situation.of(state, message, agent, npc, actor_id)
    if situation.reading.tokens[:1] and situation.reading.tokens[0] in ("ooc", "brb", "afk", "gtg"):
        return []  # out of character: not a move in the game
    best: dict[str, Suggestion] = {}
    for name, agents, fn in RULES:
        if agent not in agents:
            continue
        try:
            found = fn(situation)
        except Exception:  # advisory only: a broken rule must never cost a turn
            log.warning("suggestion_rule_failed", rule=name, exc_info=True)
            continue
        for s in found:
            if agent in TOOLS[s.tool].agents and (s.tool not in best or s.confidence > best[s.tool].confidence):
                best[s.tool] = s
    return sorted(best.values(), key=lambda s: -s.confidence)[:limit]


HINTS_HEADING = "## Tools that may fit this message (hints, not orders: use your judgment)"


def format_suggestions(suggestions: list[Suggestion]) -> str:
    if not suggestions:
        return ""
    return HINTS_HEADING + "\n" + "\n".join(s.line() for s in suggestions)
