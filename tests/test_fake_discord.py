"""The loopback Discord fake works with the real discord.py client: login, sync, gateway, interactions, messages,
webhooks, threads, files and reconnects, with a tiny real commands.Bot."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import traceback

import discord
import discord.asset
import discord.gateway
import discord.http
import pytest
from discord import app_commands
from discord.ext import commands

from tests.fake_discord import CommandNotAvailable, FakeDiscord

ORIGINAL_BASE = discord.http.Route.BASE
ORIGINAL_GATEWAY = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
ORIGINAL_CDN = discord.asset.Asset.BASE


class TinyBot(commands.Bot):
    """The smallest bot that exercises what Lorekeeper needs from Discord."""

    def __init__(self, guild_id: int, *, message_content: bool = True) -> None:
        intents = discord.Intents.default()
        intents.message_content = message_content
        # guild_ready_timeout: discord.py waits this long after the last GUILD_CREATE before READY (default 2 s).
        super().__init__(command_prefix="!", intents=intents, guild_ready_timeout=0.05)
        self.guild_obj = discord.Object(guild_id)
        self.errors: list[str] = []
        self.heard: list[discord.Message] = []
        self.synced: list[app_commands.AppCommand] = []
        self.resumed = asyncio.Event()

        @self.tree.command(description="Check that the bot answers")
        async def ping(interaction: discord.Interaction) -> None:
            await interaction.response.defer(thinking=True)
            await interaction.followup.send("pong")

        @self.tree.command(description="Set the game up in this server")
        @app_commands.checks.has_permissions(manage_guild=True)
        async def setup(interaction: discord.Interaction, name: str) -> None:
            await interaction.response.send_message(f"Campaign {name} is ready.")

        @self.tree.command(description="Roll dice")
        async def roll(interaction: discord.Interaction, dice: str) -> None:
            await interaction.response.send_message(f"rolled {dice}")

        @roll.autocomplete("dice")
        async def dice_choices(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
            return [app_commands.Choice(name=d, value=d) for d in ("1d20", "2d6", "1d8") if d.startswith(current)]

        @self.tree.command(description="Answers too late")
        async def slow(interaction: discord.Interaction) -> None:
            await asyncio.sleep(0.3)
            await interaction.response.send_message("finally")

        @self.tree.error
        async def on_app_command_error(interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
            if isinstance(error, app_commands.MissingPermissions):
                await interaction.response.send_message("You need Manage Server.", ephemeral=True)
                return
            self.errors.append("".join(traceback.format_exception(error)))

    async def setup_hook(self) -> None:
        self.tree.copy_global_to(guild=self.guild_obj)
        self.synced = await self.tree.sync(guild=self.guild_obj)

    async def on_message(self, message: discord.Message) -> None:
        if message.author.bot:
            return  # the fake echoes the bot's own messages back, as Discord does
        self.heard.append(message)
        await message.reply(f"heard: {message.content}")

    async def on_resumed(self) -> None:
        self.resumed.set()

    async def on_error(self, event: str, *args: object, **kwargs: object) -> None:
        self.errors.append(f"{event}: {traceback.format_exc()}")


async def settle(timeout: float = 2.0) -> list[asyncio.Task]:
    """Wait for every other task to finish; returns those still pending after `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
        if not pending or loop.time() > deadline:
            return pending
        await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def running(bot: TinyBot, fake: FakeDiscord):
    """Log in and connect a bot to the fake; close it cleanly and check nothing went wrong."""
    task: asyncio.Task | None = None
    try:
        await bot.login(fake.token)
        task = asyncio.create_task(bot.connect())
        await asyncio.wait_for(bot.wait_until_ready(), 5)
        yield bot
    finally:
        await bot.close()
        if task is not None:
            await asyncio.wait_for(task, 5)
    assert bot.errors == []


@pytest.fixture
async def fake():
    async with FakeDiscord() as fake:
        assert discord.http.Route.BASE == f"http://127.0.0.1:{fake.port}/api/v10"
        yield fake
        assert fake.internal_errors == []
    assert (discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY, discord.asset.Asset.BASE) == (
        ORIGINAL_BASE, ORIGINAL_GATEWAY, ORIGINAL_CDN)
    assert await settle() == []


@pytest.fixture
async def bot(fake):
    async with running(TinyBot(fake.guild_id), fake) as bot:
        yield bot
    assert fake.unknown_routes == []


async def test_login_and_sync_record_the_command_payload(fake, bot):
    me = fake.calls("GET", "/users/@me")
    assert len(me) == 1 and me[0].headers["Authorization"] == f"Bot {fake.token}"
    assert fake.calls("GET", "/oauth2/applications/@me")
    [put] = fake.calls("PUT", rf"/applications/{fake.application_id}/guilds/{fake.guild_id}/commands")
    assert {c["name"] for c in put.json} == {"ping", "setup", "roll", "slow"}
    ping = next(c for c in put.json if c["name"] == "ping")
    assert ping["description"] == "Check that the bot answers" and ping["type"] == 1
    assert {c.name: c.id for c in bot.synced} == {c["name"]: int(c["id"]) for c in put.response}
    [identify] = fake.gateway_received(2)
    assert identify.d["intents"] & (1 << 15)  # message_content
    assert fake.connections[0].query == {"v": "10", "encoding": "json", "compress": "zlib-stream"}
    assert bot.user.id == fake.bot_user.id and bot.application_id == fake.application_id
    guild = bot.get_guild(fake.guild_id)
    assert guild is not None and {c.name for c in guild.text_channels} == {"general", "adventure", "ooc"}
    assert (await bot.application_info()).owner.id == fake.owner.id


async def test_ping_defers_then_sends_a_followup(fake, bot):
    it = await fake.interaction("ping", user="alice", channel="adventure")
    assert (await it.wait_response())["type"] == 5  # DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE
    [followup] = await it.wait_followups(1)
    assert followup["content"] == "pong"
    [callback] = fake.calls("POST", rf"/interactions/{it.id}/.+/callback")
    [post] = fake.calls("POST", rf"/webhooks/{fake.application_id}/{it.token}")
    assert callback.at <= post.at and post.json["content"] == "pong" and post.content == "pong"
    assert followup["id"] == it.original["id"]  # the first followup after a defer is the deferred message
    assert fake.messages_in("adventure")[-1]["content"] == "pong"


async def test_a_message_reaches_on_message_and_the_reply_is_recorded(fake, bot):
    sent = await fake.message("hello there", author="bob", channel="general")
    [reply] = await fake.wait_for("POST", r"/channels/\d+/messages")
    assert reply.json["content"] == "heard: hello there"
    assert str(reply.json["message_reference"]["message_id"]) == sent["id"]
    assert [m.content for m in bot.heard] == ["hello there"] and bot.heard[0].author.name == "bob"
    assert reply.response["type"] == 19 and reply.response["referenced_message"]["id"] == sent["id"]
    # the fake echoes the reply back as MESSAGE_CREATE, as Discord does; the bot ignores its own messages
    await fake.wait_until(lambda: any(f.d["id"] == reply.response["id"] for f in fake.gateway_sent("MESSAGE_CREATE")))
    await asyncio.sleep(0.02)
    assert len(bot.heard) == 1


async def test_a_channel_webhook_with_a_username_override(fake, bot):
    channel = bot.get_channel(fake.channel("adventure").id)
    hook = await channel.create_webhook(name="Lorekeeper Narrator")
    assert [h.id for h in await channel.webhooks()] == [hook.id]
    msg = await hook.send("The door creaks open.", username="Old Marrow", wait=True)
    assert msg.author.name == "Old Marrow" and msg.webhook_id == hook.id
    [call] = fake.calls("POST", rf"/webhooks/{hook.id}/{hook.token}")
    assert call.json["username"] == "Old Marrow" and call.query["wait"] == "1"
    with pytest.raises(discord.HTTPException) as bad:  # Discord refuses "discord" and "clyde" in names
        await hook.send("hi", username="Discord Dan", wait=True)
    assert bad.value.status == 400 and "username" in bad.value.text


async def test_after_a_dropped_connection_the_bot_resumes_and_still_answers(fake, bot):
    assert await fake.drop_connection() == "resume"
    await asyncio.wait_for(bot.resumed.wait(), 5)
    assert len(fake.gateway_received(2)) == 1 and len(fake.gateway_received(6)) == 1
    it = await fake.interaction("ping")
    assert (await it.wait_response())["type"] == 5
    assert (await it.wait_followups(1))[0]["content"] == "pong"
    # a network cut (no close frame) also ends in a RESUME; an event sent meanwhile is replayed
    assert await fake.drop_connection(abrupt=True) == "resume"
    assert len(fake.gateway_received(6)) == 2


async def test_events_sent_while_disconnected_are_replayed_on_resume(fake, bot):
    conn = fake.connections[-1]
    drop = asyncio.create_task(fake.drop_connection())
    await fake.wait_until(lambda: conn.closed, 5, "the old connection to close")
    it = await fake.interaction("ping")  # buffered in the session, replayed after RESUME
    assert await drop == "resume"
    assert (await it.wait_followups(1))[0]["content"] == "pong"


async def test_manage_server_check_uses_the_member_permissions(fake, bot):
    refused = await fake.interaction("setup", {"name": "Saltmere"}, user="alice")
    answer = await refused.wait_response()
    assert answer["type"] == 4 and answer["data"]["flags"] & 64 and "Manage Server" in answer["data"]["content"]
    gm = fake.add_user("gm", permissions=["manage_guild"])
    allowed = await fake.interaction("setup", {"name": "Saltmere"}, user=gm)
    assert (await allowed.wait_response())["data"]["content"] == "Campaign Saltmere is ready."
    owner = await fake.interaction("setup", {"name": "Vale"}, user="owner")  # the guild owner has every permission
    assert (await owner.wait_response())["data"]["content"] == "Campaign Vale is ready."
    with pytest.raises(CommandNotAvailable):
        await fake.interaction("setup")  # missing the required option, the Discord client would refuse
    with pytest.raises(CommandNotAvailable):
        await fake.interaction("nope")  # never synced


async def test_autocomplete_returns_choices(fake, bot):
    it = await fake.autocomplete("roll", {"dice": "1d"}, focused="dice")
    answer = await it.wait_response()
    assert answer["type"] == 8
    assert [c["value"] for c in answer["data"]["choices"]] == ["1d20", "1d8"]


async def test_an_interaction_not_acknowledged_in_time_is_unknown():
    async with FakeDiscord(interaction_timeout=0.1) as fake:
        bot = TinyBot(fake.guild_id)
        async with running(bot, fake):
            it = await fake.interaction("slow")
            [call] = await fake.wait_for("POST", r"/interactions/\d+/.+/callback")
            assert call.status == 404 and call.response["code"] == 10062
            await fake.wait_until(lambda: bot.errors, 2, "the bot to see the error")
            assert "Unknown interaction" in bot.errors.pop()
            assert not it.acknowledged
    assert await settle() == []


async def test_without_the_message_content_intent_content_is_blank():
    async with FakeDiscord() as fake:
        bot = TinyBot(fake.guild_id, message_content=False)
        async with running(bot, fake):
            await fake.message("secret plans", author="alice")
            await fake.message(f"{fake.bot_user.mention} hi", author="alice")  # mentions still carry content
            await fake.wait_for("POST", r"/channels/\d+/messages", count=2)
            assert [m.content for m in bot.heard] == ["", f"<@{fake.bot_user.id}> hi"]
    assert await settle() == []


async def test_files_threads_and_unknown_routes(fake, bot):
    channel = bot.get_channel(fake.channel("general").id)
    msg = await channel.send("the map", file=discord.File(io.BytesIO(b"x" * 1234), "map.txt"))
    [call] = fake.calls("POST", r"/channels/\d+/messages")
    assert call.json["content"] == "the map" and [(f.filename, f.size) for f in call.files] == [("map.txt", 1234)]
    assert await msg.attachments[0].read() == b"x" * 1234  # served by the fake CDN

    thread = await channel.create_thread(name="Session 1", type=discord.ChannelType.public_thread)
    await fake.wait_for("POST", r"/channels/\d+/threads")
    assert fake.channel(thread.id).parent_id == channel.id and fake.gateway_sent("THREAD_CREATE")
    await thread.send("in the thread")
    assert fake.messages_in(thread.id)[-1]["content"] == "in the thread"
    from_message = await msg.create_thread(name="About the map")
    assert from_message.id == msg.id  # Discord uses the message id for the thread

    with pytest.raises(discord.NotFound):
        await bot.http.request(discord.http.Route("GET", "/guilds/{guild_id}/bans", guild_id=fake.guild_id))
    assert [(c.method, c.path) for c in fake.unknown_routes] == [("GET", f"/guilds/{fake.guild_id}/bans")]
    fake.unknown_routes.clear()


async def test_a_guild_goes_to_its_shard_only_and_a_bad_shard_is_refused():
    import aiohttp

    async with FakeDiscord(guild_id=(12345 << 22) | 7, shards=4) as fake:  # 12345 % 4: shard 1
        async with aiohttp.ClientSession() as http:
            gateway = await (await http.get(f"{fake.api_base}/gateway/bot", headers={"Authorization": f"Bot {fake.token}"})).json()
            assert gateway["shards"] == 4

            async def identify(shard: object) -> tuple[aiohttp.ClientWebSocketResponse, dict | None]:
                ws = await http.ws_connect(gateway["url"] + "/?v=10&encoding=json")
                assert (await ws.receive_json(timeout=5))["op"] == 10
                await ws.send_json({"op": 2, "d": {"token": fake.token, "intents": 1 | 1 << 9, "shard": shard,
                                                   "properties": {}}})  # GUILDS, GUILD_MESSAGES
                msg = await ws.receive(timeout=5)
                return ws, json.loads(msg.data) if msg.type == aiohttp.WSMsgType.TEXT else None

            for bad in ([4, 4], [-1, 4], [0], "0,4"):
                ws, frame = await identify(bad)
                assert frame is None and ws.close_code == 4010, bad
            other, ready = await identify([0, 4])
            assert ready["t"] == "READY" and ready["d"]["guilds"] == [] and ready["d"]["shard"] == [0, 4]
            own, ready = await identify([1, 4])
            assert ready["d"]["guilds"] == [{"id": str(fake.guild_id), "unavailable": True}]
            assert (await own.receive_json(timeout=5))["t"] == "GUILD_CREATE"
            await fake.message("hello", author="alice")  # the guild's events: to shard 1's session only
            assert (await own.receive_json(timeout=5))["t"] == "MESSAGE_CREATE"
            with pytest.raises(asyncio.TimeoutError):
                await other.receive_json(timeout=0.1)
            await other.close()
            await own.close()
