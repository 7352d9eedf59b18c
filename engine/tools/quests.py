"""Quest tools: offer, start, progress, complete and fail quests; read the quest log."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ..errors import ToolError
from ..basics import slug
from ..entities import Objective, Quest
from ..visibility import quests_known, require_own_quest
from .registry import EVERY_AGENT, NARRATIVE, NPC_AGENT, Args, Told, ToolContext, tool


class StartQuestArgs(Args):
    quest: str = Field(min_length=1, max_length=80)
    objective: list[Annotated[str, Field(min_length=1, max_length=150)]] = Field(default_factory=list, max_length=10)
    description: str = Field("", max_length=500)
    reward: str = Field("", max_length=200)


@tool(example='<start_quest quest="find-the-lost-ring"/> for a quest already offered; a new one: '
              '<start_quest><quest>Find the lost ring</quest><objective>Search the well</objective><objective>Return the ring</objective></start_quest>',
      agents={NARRATIVE, NPC_AGENT}, changes_state=True, body="quest")
def start_quest(ctx: ToolContext, args: StartQuestArgs) -> str:
    """Start a quest when the party accepts it: an offered quest by id or title, or a new one with objectives."""
    quest = ctx.state.find_quest(args.quest)
    if quest is not None:
        require_own_quest(ctx.state, ctx.viewer, quest)
        if quest.status == "active":
            raise ToolError(f"the quest '{quest.title}' is already active")
        if quest.status in ("completed", "failed"):
            raise ToolError(f"the quest '{quest.title}' is already {quest.status}")
        quest.status = "active"
    else:
        if not args.objective:
            offered = [q.id for q in ctx.state.quests.values() if q.status == "offered"]
            raise ToolError(f"there is no quest '{args.quest}'; to make a new quest give at least one <objective>"
                            + (f" (offered quests: {', '.join(offered)})" if offered else ""))
        base = slug(args.quest) or "quest"
        qid, n = base, 2
        while qid in ctx.state.quests:  # never overwrite a quest, finished or not
            qid, n = f"{base}-{n}", n + 1
        quest = Quest(id=qid, title=args.quest, giver=ctx.npc_id, description=args.description, reward=args.reward,
                      status="active", objectives=[Objective(id=f"{i + 1}", text=t) for i, t in enumerate(args.objective)])
        ctx.state.quests[qid] = quest
    return Told(f"Quest started: {quest_line(quest)}", f"Quest started: {player_quest_line(quest)}")


def player_quest_line(quest: Quest) -> str:
    """A quest as players read it: no ids, objectives ticked off."""
    objectives = "; ".join(f"{'☑' if o.done else '☐'} {o.text.rstrip('.')}" for o in quest.objectives)
    reward = f" Reward: {quest.reward.rstrip('.')}." if quest.reward else ""
    return f"{quest.title} ({quest.status}). {objectives or 'No objectives'}.{reward}"


def quest_line(quest: Quest) -> str:
    objectives = "; ".join(f"[{'x' if o.done else ' '}] {o.id}: {o.text.rstrip('.')}" for o in quest.objectives)
    reward = f" Reward: {quest.reward.rstrip('.')}." if quest.reward else ""
    return f"'{quest.title}' (id {quest.id}, {quest.status}). Objectives: {objectives or 'none'}.{reward}"


class ObjectiveArgs(Args):
    quest: str = Field(min_length=1, max_length=80)
    objective: str = Field(min_length=1, max_length=80)


@tool(example='<complete_objective quest="find-the-lost-ring" objective="search-the-well"/>',
      agents={NARRATIVE, NPC_AGENT}, changes_state=True)
def complete_objective(ctx: ToolContext, args: ObjectiveArgs) -> str:
    """Mark one objective of an active quest done, by its id or its text."""
    quest = _active(ctx, args.quest)
    key = args.objective.lower()
    found = next((o for o in quest.objectives if o.id.lower() == key or o.text.lower() == key), None)
    if found is None:
        raise ToolError(f"the quest '{quest.title}' has no objective '{args.objective}' "
                        f"(objectives: {', '.join(o.id for o in quest.objectives)})")
    if found.done:
        raise ToolError(f"the objective '{found.text}' is already done")
    found.done = True
    left = [o.id for o in quest.objectives if not o.done]
    tail = f" Still to do: {', '.join(left)}." if left else " Every objective is done: complete the quest when the party claims its reward."
    done = f"Objective done ({quest.title}): {found.text.rstrip('.')}." + ("" if left else " Every objective is done.")
    return Told(f"Objective done: {found.text}.{tail}", done)


class QuestArgs(Args):
    quest: str = Field(min_length=1, max_length=80)
    reason: str = Field("", max_length=200)


@tool(example='<complete_quest quest="find-the-lost-ring"/>', agents={NARRATIVE, NPC_AGENT}, changes_state=True, body="quest")
def complete_quest(ctx: ToolContext, args: QuestArgs) -> str:
    """Complete an active quest whose objectives are all done; hand over its reward with modify_inventory."""
    quest = _active(ctx, args.quest)
    left = [o.text for o in quest.objectives if not o.done]
    if left:
        raise ToolError(f"the quest '{quest.title}' still has open objectives: {'; '.join(left)}")
    quest.status = "completed"
    reward = f" Its reward: {quest.reward} (give it with modify_inventory)." if quest.reward else ""
    return Told(f"Quest completed: '{quest.title}'.{reward}",
                f"Quest completed: {quest.title}." + (f" Reward: {quest.reward.rstrip('.')}." if quest.reward else ""))


@tool(example='<fail_quest quest="find-the-lost-ring" reason="the ring was melted down"/>',
      agents={NARRATIVE, NPC_AGENT}, changes_state=True, body="quest")
def fail_quest(ctx: ToolContext, args: QuestArgs) -> str:
    """Fail an active quest that can no longer be finished."""
    quest = _active(ctx, args.quest)
    quest.status = "failed"
    return f"Quest failed: '{quest.title}'" + (f" ({args.reason})." if args.reason else ".")


def _active(ctx: ToolContext, ref: str) -> Quest:
    quest = ctx.quest(ref)
    require_own_quest(ctx.state, ctx.viewer, quest)
    if quest.status != "active":
        raise ToolError(f"the quest '{quest.title}' is {quest.status}, not active")
    return quest


class QuestLogArgs(Args):
    pass


@tool(example="<get_quest_log/>", agents=EVERY_AGENT, changes_state=False)
def get_quest_log(ctx: ToolContext, args: QuestLogArgs) -> str:
    """Read every quest the party knows of, with objectives and status (an NPC: the quests it gave)."""
    known = quests_known(ctx.state, ctx.viewer)
    quests = [q for q in known if q.status != "offered"]
    offered = [q for q in known if q.status == "offered"]
    lines = [quest_line(q) for q in quests] or ["The party has taken on no quest yet."]
    if offered:
        lines.append("Offered but not yet accepted: " + ", ".join(f"'{q.title}' (id {q.id})" for q in offered))
    return "\n".join(lines)
