"""The suggestor's words: the lexicon of phrases, compiled into three lookups, and how a message is cut into words
and marks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

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


