"""A loopback fake of Discord (REST API, gateway websocket and a tiny CDN) for end-to-end tests of the real bot.

The REAL discord.py client connects to it: while a ``FakeDiscord`` is entered, ``discord.http.Route.BASE``,
``discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY`` and ``discord.asset.Asset.BASE`` point at
``127.0.0.1:<ephemeral port>`` and are restored on exit.

    async with FakeDiscord() as fake:
        bot = make_bot(guild_ready_timeout=0.05)      # or FakeDiscord.fast_ready(bot): READY waits 2 s otherwise
        await bot.login(fake.token)
        task = asyncio.create_task(bot.connect())
        await bot.wait_until_ready()
        it = await fake.interaction("ping")           # INTERACTION_CREATE, as Discord would send it
        assert (await it.wait_response())["type"] == 5
        assert (await it.wait_followups(1))[0]["content"] == "pong"
        await fake.message("hello", author="alice")    # MESSAGE_CREATE
        await fake.wait_for("POST", r"/channels/\\d+/messages")
        await bot.close(); await task

It behaves like Discord where that catches bot bugs: the bot receives its own messages back as MESSAGE_CREATE,
message content is blanked without the message_content intent, an interaction must be acknowledged within
3 s and only once, followups need an acknowledged interaction, content and embed limits give 400 Invalid Form
Body, webhook names may not contain "discord"/"clyde", and the bot's role permissions are enforced (403).
Sharding as Discord does it: ``GET /gateway/bot`` recommends ``shards`` (1 unless given), an IDENTIFY's
``shard: [id, count]`` must have 0 <= id < count (else close 4010), and the guild goes to the one session whose
shard is ``(guild_id >> 22) % count`` (pass ``guild_id`` to place it): another shard's session gets READY
with no guilds and no events after it. Unlike Discord, which sends direct messages to shard 0, the fake sends
everything (DMs too) to the guild's session.
Every REST request is recorded in ``fake.requests`` (unknown routes answer 404 and are also listed in
``fake.unknown_routes``); every gateway frame is in ``fake.gateway_log``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import secrets
import socket
import time
import traceback
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Union

import yarl
from aiohttp import WSMsgType, web

import discord
import discord.asset
import discord.gateway
import discord.http

API_VERSION = 10
DISCORD_EPOCH = 1420070400000

# Gateway intents (https://discord.com/developers/docs/events/gateway#list-of-intents)
GUILDS = 1 << 0
GUILD_MEMBERS = 1 << 1
GUILD_PRESENCES = 1 << 8
GUILD_MESSAGES = 1 << 9
DIRECT_MESSAGES = 1 << 12
MESSAGE_CONTENT = 1 << 15
PRIVILEGED = {"members": GUILD_MEMBERS, "presences": GUILD_PRESENCES, "message_content": MESSAGE_CONTENT}

# Message flags and types
EPHEMERAL = 1 << 6
LOADING = 1 << 7
MSG_DEFAULT, MSG_REPLY, MSG_CHAT_INPUT, MSG_CONTEXT_MENU = 0, 19, 20, 23

# Channel types
TEXT, DM, CATEGORY, PUBLIC_THREAD, PRIVATE_THREAD = 0, 1, 4, 11, 12
THREAD_TYPES = (10, PUBLIC_THREAD, PRIVATE_THREAD)

ALL_PERMISSIONS = discord.Permissions.all().value
ADMINISTRATOR = discord.Permissions(administrator=True).value
VIEW_CHANNEL = discord.Permissions(view_channel=True).value

EVERYONE_PERMISSIONS = discord.Permissions(
    view_channel=True, send_messages=True, send_messages_in_threads=True, create_public_threads=True,
    create_private_threads=True, embed_links=True, attach_files=True, add_reactions=True, use_external_emojis=True,
    use_external_stickers=True, read_message_history=True, use_application_commands=True, change_nickname=True,
    create_instant_invite=True, connect=True, speak=True, stream=True, use_voice_activation=True,
    use_embedded_activities=True, request_to_speak=True,
).value
BOT_PERMISSIONS = discord.Permissions(
    view_channel=True, send_messages=True, send_messages_in_threads=True, create_public_threads=True,
    create_private_threads=True, manage_threads=True, embed_links=True, attach_files=True, add_reactions=True,
    read_message_history=True, manage_webhooks=True, manage_messages=True, use_application_commands=True,
    use_external_emojis=True,
).value

# Application flags: privileged intents switched on in the developer portal (unverified bot)
APP_FLAG_BY_INTENT = {"presences": 1 << 13, "members": 1 << 15, "message_content": 1 << 19}

PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

PermissionsLike = Union[int, discord.Permissions, Iterable[str], None]


def _perm_value(value: PermissionsLike) -> int:
    if value is None:
        return 0
    if isinstance(value, discord.Permissions):
        return value.value
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        value = [value]
    return discord.Permissions(**{name: True for name in value}).value


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(dt: datetime | None = None) -> str:
    return (dt or _now()).isoformat()


class _Snowflakes:
    """Real-looking, strictly increasing snowflakes (timestamp << 22 | worker | increment)."""

    def __init__(self) -> None:
        self._last = 0

    def __call__(self) -> int:
        value = ((int(time.time() * 1000) - DISCORD_EPOCH) << 22) | (1 << 17)
        self._last = max(value, self._last + 1)
        return self._last


# ---------------------------------------------------------------------------------------------- errors


class ApiError(Exception):
    """An error answered the way Discord answers it: {"message", "code", "errors"?} with an HTTP status."""

    def __init__(self, status: int, code: int, message: str, errors: dict | None = None) -> None:
        super().__init__(f"{status} {code} {message}")
        self.status, self.code, self.message, self.errors = status, code, message, errors

    def body(self) -> dict:
        body: dict[str, Any] = {"message": self.message, "code": self.code}
        if self.errors:
            body["errors"] = self.errors
        return body


class _FormErrors:
    """Collects field errors into Discord's nested {"a": {"0": {"b": {"_errors": [...]}}}} shape."""

    def __init__(self, prefix: tuple = ()) -> None:
        self.prefix = prefix
        self.errors: dict = {}

    def add(self, path: tuple, code: str, message: str) -> None:
        node = self.errors
        for key in (*self.prefix, *path):
            node = node.setdefault(str(key), {})
        node.setdefault("_errors", []).append({"code": code, "message": message})

    def max_length(self, path: tuple, value: Any, limit: int) -> None:
        if value is not None and len(value) > limit:
            self.add(path, "BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")

    def raise_if_any(self) -> None:
        if self.errors:
            raise ApiError(400, 50035, "Invalid Form Body", self.errors)


def unknown(kind: str) -> ApiError:
    codes = {"Channel": 10003, "Guild": 10004, "Member": 10007, "Message": 10008, "Role": 10011,
             "User": 10013, "Webhook": 10015, "Application": 10002, "Application Command": 10063,
             "interaction": 10062}
    return ApiError(404, codes.get(kind, 0), f"Unknown {kind}")


class CommandNotAvailable(Exception):
    """Discord would not let this user run this command (not synced, bad options, or lacking permissions)."""


# ---------------------------------------------------------------------------------------------- records


@dataclass
class UploadedFile:
    field: str  # the multipart field name, e.g. "files[0]"
    filename: str
    content_type: str | None
    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass
class Call:
    """One REST request the fake received, and how it answered."""

    method: str
    path: str  # relative to /api/v10, e.g. "/channels/123/messages"
    query: dict[str, str]
    headers: dict[str, str]
    json: Any = None  # the JSON body, or a multipart body's decoded payload_json
    files: list[UploadedFile] = field(default_factory=list)
    form: dict[str, str] = field(default_factory=dict)  # other multipart text fields
    status: int = 0
    response: Any = None
    at: float = field(default_factory=time.monotonic)

    @property
    def content(self) -> str | None:
        """The message content sent, whether a plain message or an interaction callback (json.data.content)."""
        body = self.json if isinstance(self.json, dict) else {}
        if "content" in body:
            return body["content"]
        data = body.get("data")
        return data.get("content") if isinstance(data, dict) else None

    def __repr__(self) -> str:
        return f"<Call {self.method} {self.path} -> {self.status}>"


@dataclass
class GatewayFrame:
    direction: str  # "recv" (from the bot) or "send" (to the bot)
    connection: int
    op: int | None
    t: str | None
    s: int | None
    d: Any


@dataclass
class GatewayConnection:
    index: int
    path: str
    query: dict[str, str]
    how: str | None = None  # "identify" or "resume" once established
    closed: bool = False
    close_code: int | None = None


# ---------------------------------------------------------------------------------------------- models


@dataclass
class FakeRole:
    id: int
    name: str
    permissions: int = 0
    position: int = 1
    color: int = 0
    hoist: bool = False
    managed: bool = False
    mentionable: bool = False
    tags: dict | None = None

    def payload(self) -> dict:
        data = {
            "id": str(self.id), "name": self.name, "description": None, "permissions": str(self.permissions),
            "position": self.position, "color": self.color, "colors": {"primary_color": self.color,
            "secondary_color": None, "tertiary_color": None}, "hoist": self.hoist, "managed": self.managed,
            "mentionable": self.mentionable, "icon": None, "unicode_emoji": None, "flags": 0,
        }
        if self.tags is not None:
            data["tags"] = self.tags
        return data


@dataclass
class FakeUser:
    id: int
    username: str
    global_name: str | None = None
    bot: bool = False
    roles: list[int] = field(default_factory=list)
    nick: str | None = None
    discriminator: str = "0"
    joined_at: str = field(default_factory=_iso)

    @property
    def name(self) -> str:
        return self.username

    @property
    def mention(self) -> str:
        return f"<@{self.id}>"

    def user_payload(self) -> dict:
        data = {
            "id": str(self.id), "username": self.username, "global_name": self.global_name, "avatar": None,
            "discriminator": self.discriminator, "public_flags": 0, "flags": 0, "banner": None,
            "accent_color": None, "avatar_decoration_data": None, "collectibles": None, "primary_guild": None,
        }
        if self.bot:
            data["bot"] = True
        return data

    def member_payload(self, *, user: bool = True) -> dict:
        data = {
            "nick": self.nick, "avatar": None, "banner": None, "roles": [str(r) for r in self.roles],
            "joined_at": self.joined_at, "premium_since": None, "deaf": False, "mute": False, "flags": 0,
            "pending": False, "communication_disabled_until": None, "unusual_dm_activity_until": None,
        }
        if user:
            data["user"] = self.user_payload()
        return data


@dataclass
class FakeChannel:
    id: int
    name: str | None
    type: int = TEXT
    guild_id: int | None = None
    parent_id: int | None = None
    position: int = 0
    topic: str | None = None
    overwrites: list[dict] = field(default_factory=list)
    owner_id: int | None = None  # threads
    archived: bool = False
    locked: bool = False
    invitable: bool = True
    auto_archive_duration: int = 1440
    recipients: list[FakeUser] = field(default_factory=list)  # DMs
    last_message_id: int | None = None
    message_count: int = 0
    created: str = field(default_factory=_iso)

    @property
    def is_thread(self) -> bool:
        return self.type in THREAD_TYPES

    @property
    def mention(self) -> str:
        return f"<#{self.id}>"

    def payload(self) -> dict:
        last = str(self.last_message_id) if self.last_message_id else None
        if self.type == DM:
            return {"id": str(self.id), "type": DM, "last_message_id": last, "flags": 0,
                    "recipients": [u.user_payload() for u in self.recipients]}
        data: dict[str, Any] = {"id": str(self.id), "type": self.type, "guild_id": str(self.guild_id),
                                "name": self.name, "flags": 0, "last_message_id": last, "rate_limit_per_user": 0}
        if self.is_thread:
            data.update({
                "parent_id": str(self.parent_id), "owner_id": str(self.owner_id), "message_count": self.message_count,
                "total_message_sent": self.message_count, "member_count": 1, "applied_tags": [],
                "thread_metadata": {"archived": self.archived, "auto_archive_duration": self.auto_archive_duration,
                                    "archive_timestamp": self.created, "locked": self.locked,
                                    "invitable": self.invitable, "create_timestamp": self.created},
            })
        else:
            data.update({"position": self.position, "permission_overwrites": list(self.overwrites),
                         "parent_id": str(self.parent_id) if self.parent_id else None, "nsfw": False})
            if self.type == TEXT:
                data.update({"topic": self.topic, "default_thread_rate_limit_per_user": 0})
            if self.type == CATEGORY:
                data.pop("last_message_id")
                data.pop("rate_limit_per_user")
        return data


# ---------------------------------------------------------------------------------------------- interactions


class FakeInteraction:
    """An interaction the fake sent, and everything the bot answered to it."""

    def __init__(self, fake: "FakeDiscord", payload: dict, user: FakeUser, channel: FakeChannel,
                 message: dict | None = None) -> None:
        self.fake, self.payload, self.user, self.channel = fake, payload, user, channel
        self.id = int(payload["id"])
        self.token: str = payload["token"]
        self.type: int = payload["type"]
        self.message = message  # the message a component was clicked on
        self.created = time.monotonic()
        self.callbacks: list[dict] = []  # callback bodies (json: {"type", "data"})
        self.original: dict | None = None  # the response message (@original)
        self.followups: list[dict] = []  # messages sent through POST /webhooks/{app}/{token}, in order
        self.modal: dict | None = None  # data of a type 9 (MODAL) callback
        self.consumed_original_by_followup = False

    @property
    def data(self) -> dict:
        return self.payload.get("data", {})

    @property
    def acknowledged(self) -> bool:
        return bool(self.callbacks)

    @property
    def response_type(self) -> int | None:
        return self.callbacks[0]["type"] if self.callbacks else None

    @property
    def messages(self) -> list[dict]:
        """The visible (non-loading) response messages: the original then every followup that is not the original."""
        out = [self.original] if self.original and not self.original["flags"] & LOADING else []
        return out + [m for m in self.followups if not out or m["id"] != out[0]["id"]]

    async def wait_response(self, timeout: float = 5.0) -> dict:
        """The first callback body the bot POSTed ({"type": 4|5|6|7|8|9, "data": ...})."""
        await self.fake.wait_until(lambda: bool(self.callbacks), timeout, f"a callback to interaction {self.id}")
        return self.callbacks[0]

    async def wait_followups(self, count: int = 1, timeout: float = 5.0) -> list[dict]:
        """The messages sent as followups (a first followup after a defer is also the original)."""
        await self.fake.wait_until(lambda: len(self.followups) >= count, timeout,
                                    f"{count} followup(s) to interaction {self.id}")
        return self.followups

    async def wait_original(self, timeout: float = 5.0) -> dict:
        """The original response message once it has content (not still 'thinking')."""
        await self.fake.wait_until(lambda: bool(self.original and not self.original["flags"] & LOADING), timeout,
                                    f"the original response of interaction {self.id}")
        return self.original  # type: ignore[return-value]

    async def submit_modal(self, values: dict[str, str], *, user: Any = None) -> "FakeInteraction":
        """Submit the modal the bot opened (callback type 9), filling text inputs by custom_id."""
        if self.modal is None:
            raise CommandNotAvailable("the bot did not answer this interaction with a modal")
        return await self.fake.modal_submit(self.modal, values, user=user or self.user, channel=self.channel)


# ---------------------------------------------------------------------------------------------- gateway plumbing


class _Session:
    def __init__(self, session_id: str, intents: int, shard: list | None) -> None:
        self.id, self.intents, self.shard = session_id, intents, shard
        self.seq = 0
        self.buffer: list[dict] = []  # every dispatch, for RESUME replay
        self.conn: _Conn | None = None
        self.resumable = True


class _Conn:
    def __init__(self, info: GatewayConnection, ws: web.WebSocketResponse, request: web.Request) -> None:
        self.info, self.ws, self.request = info, ws, request
        self.queue: asyncio.Queue = asyncio.Queue()
        self.compressor = None
        self.session: _Session | None = None
        self.writer: asyncio.Task | None = None
        self.closed = False


# ---------------------------------------------------------------------------------------------- the fake


class FakeDiscord:
    """Discord on 127.0.0.1: one bot, one application, one guild with text channels, members and roles."""

    def __init__(
        self,
        *,
        token: str | None = None,
        bot_name: str = "Lorekeeper",
        guild_name: str = "Test Guild",
        channels: Iterable[str] = ("general", "adventure", "ooc"),
        users: Iterable[str] = ("alice", "bob"),
        owner_name: str = "owner",
        bot_permissions: PermissionsLike = BOT_PERMISSIONS,
        everyone_permissions: PermissionsLike = EVERYONE_PERMISSIONS,
        privileged_intents: Iterable[str] = ("members", "presences", "message_content"),
        interaction_timeout: float = 3.0,
        heartbeat_interval: float = 41.25,
        compress: bool = True,
        attachment_size_limit: int = 10 * 1024 * 1024,
        guild_id: int | None = None,
        shards: int = 1,
    ) -> None:
        self.snowflake = _Snowflakes()
        self.token = token or f"{base64.b64encode(str(self.snowflake()).encode()).decode().rstrip('=')}.fake.{secrets.token_urlsafe(27)}"
        self.interaction_timeout = interaction_timeout
        self.heartbeat_interval = heartbeat_interval
        self.compress = compress
        self.attachment_size_limit = attachment_size_limit
        self.privileged_intents = set(privileged_intents)
        for name in self.privileged_intents:
            if name not in PRIVILEGED:
                raise ValueError(f"unknown privileged intent {name!r}; use {sorted(PRIVILEGED)}")

        self.application_id = self.snowflake()
        self.bot_user = FakeUser(self.application_id, bot_name, bot=True, discriminator="4821")
        self.guild_id = guild_id if guild_id is not None else self.snowflake()
        self.shards = shards  # what GET /gateway/bot recommends
        self.guild_name = guild_name
        self.roles: dict[int, FakeRole] = {}
        self.users: dict[int, FakeUser] = {}  # guild members (and DM-only users)
        self.channels: dict[int, FakeChannel] = {}
        self.messages: dict[int, dict] = {}  # every message, in creation order
        self.webhooks: dict[int, dict] = {}
        self.global_commands: list[dict] = []
        self.guild_commands: dict[int, list[dict]] = {}
        self.interactions: dict[int, FakeInteraction] = {}
        self.attachments: dict[int, bytes] = {}
        self.requests: list[Call] = []
        self.unknown_routes: list[Call] = []
        self.internal_errors: list[str] = []  # bugs in the fake itself (answered 503)
        self.gateway_log: list[GatewayFrame] = []
        self.connections: list[GatewayConnection] = []
        self.presence: dict | None = None  # the last op 3 PRESENCE_UPDATE the bot sent
        self.port = 0
        self._failures: list[dict] = []
        self._conns: list[_Conn] = []
        self._session: _Session | None = None
        self._sessions: dict[str, _Session] = {}
        self._event = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._saved: tuple | None = None
        self._routes = self._build_routes()

        self.everyone = FakeRole(self.guild_id, "@everyone", _perm_value(everyone_permissions), position=0)
        self.roles[self.everyone.id] = self.everyone
        self.bot_role = self.add_role(bot_name, bot_permissions, managed=True, tags={"bot_id": str(self.bot_user.id)})
        self.bot_user.roles.append(self.bot_role.id)
        self.users[self.bot_user.id] = self.bot_user
        self.owner = self.add_user(owner_name)
        for name in users:
            self.add_user(name)
        for name in channels:
            self.add_channel(name)


    # ------------------------------------------------------------------ lifecycle

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        return f"{self.base_url}/api/v{API_VERSION}"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    @property
    def resume_gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/resume"

    async def __aenter__(self) -> "FakeDiscord":
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("*", "/api/v{version:\\d+}/{tail:.*}", self._http_entry)
        app.router.add_get("/cdn/{tail:.*}", self._cdn)
        app.router.add_get("/", self._gateway)
        app.router.add_get("/resume", self._gateway)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        site = web.SockSite(self._runner, sock)
        await site.start()
        self._saved = (discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY, discord.asset.Asset.BASE)
        discord.http.Route.BASE = self.api_base
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self.gateway_url)
        discord.asset.Asset.BASE = f"{self.base_url}/cdn"
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            for conn in list(self._conns):
                if not conn.closed:
                    try:
                        await asyncio.wait_for(conn.ws.close(code=1001, message=b"fake discord shutting down"), 2)
                    except (asyncio.TimeoutError, ConnectionError, RuntimeError):
                        pass
            for conn in list(self._conns):
                if conn.writer is not None and not conn.writer.done():
                    conn.queue.put_nowait(None)
                    try:
                        await asyncio.wait_for(conn.writer, 2)
                    except (asyncio.TimeoutError, asyncio.CancelledError):
                        pass
            if self._runner is not None:
                await self._runner.cleanup()
        finally:
            if self._saved is not None:
                discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY, discord.asset.Asset.BASE = self._saved
                self._saved = None

    @staticmethod
    def fast_ready(client: discord.Client, guild_ready_timeout: float = 0.05) -> discord.Client:
        """Make on_ready / wait_until_ready fire quickly: discord.py waits guild_ready_timeout (2 s) after
        the last GUILD_CREATE. Same as passing guild_ready_timeout=... to the Client/Bot constructor."""
        client._connection.guild_ready_timeout = guild_ready_timeout
        return client

    # ------------------------------------------------------------------ world building

    def add_role(self, name: str, permissions: PermissionsLike = 0, *, position: int | None = None, **extra: Any) -> FakeRole:
        """A guild role. Dispatches GUILD_ROLE_CREATE if a bot is connected."""
        role = FakeRole(self.snowflake(), name, _perm_value(permissions),
                        position=position if position is not None else len(self.roles), **extra)
        self.roles[role.id] = role
        self._dispatch("GUILD_ROLE_CREATE", {"guild_id": str(self.guild_id), "role": role.payload()})
        return role

    def add_user(self, username: str, *, roles: Iterable[Any] = (), permissions: PermissionsLike = None,
                 global_name: str | None = None, nick: str | None = None, bot: bool = False) -> FakeUser:
        """A guild member. `permissions` (int, discord.Permissions or names like "manage_guild") gives them a
        role of their own with those permissions. Dispatches GUILD_MEMBER_ADD if a bot is connected."""
        user = FakeUser(self.snowflake(), username, global_name=global_name, nick=nick, bot=bot)
        user.roles = [self.role(r).id for r in roles]
        if permissions is not None:
            user.roles.append(self.add_role(f"{username} permissions", permissions).id)
        self.users[user.id] = user
        self._dispatch("GUILD_MEMBER_ADD", {**user.member_payload(), "guild_id": str(self.guild_id)})
        return user

    def add_channel(self, name: str, *, type: int = TEXT, category: Any = None, topic: str | None = None,
                    overwrites: dict[Any, tuple[PermissionsLike, PermissionsLike]] | None = None) -> FakeChannel:
        """A guild channel. `overwrites` maps a role or user (object, id or name) to (allow, deny).
        Dispatches CHANNEL_CREATE if a bot is connected."""
        channel = FakeChannel(self.snowflake(), name, type, self.guild_id, position=len(self.channels), topic=topic,
                              parent_id=self.channel(category).id if category is not None else None)
        self.channels[channel.id] = channel
        for target, (allow, deny) in (overwrites or {}).items():
            self.set_overwrite(channel, target, allow=allow, deny=deny, dispatch=False)
        self._dispatch("CHANNEL_CREATE", channel.payload())
        return channel

    def set_overwrite(self, channel: Any, target: Any, *, allow: PermissionsLike = 0, deny: PermissionsLike = 0,
                      dispatch: bool = True) -> None:
        """Set a channel permission overwrite for a role or a member."""
        channel = self.channel(channel)
        if isinstance(target, FakeRole) or (not isinstance(target, FakeUser) and self._find_role(target)):
            kind, target_id = 0, self.role(target).id
        else:
            kind, target_id = 1, self.user(target).id
        channel.overwrites = [o for o in channel.overwrites if int(o["id"]) != target_id]
        channel.overwrites.append({"id": str(target_id), "type": kind, "allow": str(_perm_value(allow)),
                                   "deny": str(_perm_value(deny))})
        if dispatch:
            self._dispatch("CHANNEL_UPDATE", channel.payload())

    def user(self, ref: Any) -> FakeUser:
        """A user by FakeUser, id or username."""
        if isinstance(ref, FakeUser):
            return ref
        for user in self.users.values():
            if user.id == _as_int(ref) or user.username == ref:
                return user
        raise KeyError(f"no user {ref!r}; users: {[u.username for u in self.users.values()]}")

    def channel(self, ref: Any) -> FakeChannel:
        """A channel (or thread, or DM) by FakeChannel, id or name."""
        if isinstance(ref, FakeChannel):
            return ref
        if _as_int(ref) in self.channels:
            return self.channels[_as_int(ref)]  # type: ignore[index]
        for channel in self.channels.values():
            if channel.name == ref:
                return channel
        raise KeyError(f"no channel {ref!r}; channels: {[c.name for c in self.channels.values()]}")

    def _find_role(self, ref: Any) -> FakeRole | None:
        if isinstance(ref, FakeRole):
            return ref
        for role in self.roles.values():
            if role.id == _as_int(ref) or role.name == ref:
                return role
        return None

    def role(self, ref: Any) -> FakeRole:
        role = self._find_role(ref)
        if role is None:
            raise KeyError(f"no role {ref!r}; roles: {[r.name for r in self.roles.values()]}")
        return role

    def dm_channel(self, user: Any) -> FakeChannel:
        """The DM channel between the bot and a user (created if needed)."""
        user = self.user(user)
        for channel in self.channels.values():
            if channel.type == DM and channel.recipients and channel.recipients[0].id == user.id:
                return channel
        channel = FakeChannel(self.snowflake(), None, DM, recipients=[user])
        self.channels[channel.id] = channel
        return channel

    def threads(self) -> list[FakeChannel]:
        return [c for c in self.channels.values() if c.is_thread]

    # ------------------------------------------------------------------ permissions

    def guild_permissions(self, user: Any) -> int:
        user = self.user(user)
        if user.id == self.owner.id:
            return ALL_PERMISSIONS
        perms = self.everyone.permissions
        for role_id in user.roles:
            if role_id in self.roles:
                perms |= self.roles[role_id].permissions
        return ALL_PERMISSIONS if perms & ADMINISTRATOR else perms

    def permissions_in(self, user: Any, channel: Any = None) -> int:
        """A member's computed permissions in a channel (threads use their parent's overwrites)."""
        user = self.user(user)
        perms = self.guild_permissions(user)
        if channel is None or perms == ALL_PERMISSIONS:
            return perms
        channel = self.channel(channel)
        if channel.type == DM:
            return EVERYONE_PERMISSIONS
        if channel.is_thread and channel.parent_id in self.channels:
            channel = self.channels[channel.parent_id]
        overwrites = {(int(o["id"]), o["type"]): o for o in channel.overwrites}
        everyone = overwrites.get((self.guild_id, 0))
        if everyone:
            perms = (perms & ~int(everyone["deny"])) | int(everyone["allow"])
        allow = deny = 0
        for role_id in user.roles:
            o = overwrites.get((role_id, 0))
            if o:
                allow, deny = allow | int(o["allow"]), deny | int(o["deny"])
        perms = (perms & ~deny) | allow
        member = overwrites.get((user.id, 1))
        if member:
            perms = (perms & ~int(member["deny"])) | int(member["allow"])
        return perms if perms & VIEW_CHANNEL else 0

    def _require(self, channel: FakeChannel, *names: str) -> discord.Permissions:
        if channel.type == DM:
            return discord.Permissions(EVERYONE_PERMISSIONS)
        perms = discord.Permissions(self.permissions_in(self.bot_user, channel))
        if not perms.view_channel:
            raise ApiError(403, 50001, "Missing Access")
        for name in names:
            if not getattr(perms, name):
                raise ApiError(403, 50013, "Missing Permissions")
        return perms

    # ------------------------------------------------------------------ assertions helpers

    def calls(self, method: str | None = None, path: str | None = None, *,
              where: Callable[[Call], bool] | None = None) -> list[Call]:
        """Recorded REST calls; `path` is a regex matched against the whole path (re.fullmatch), e.g.
        r"/channels/\\d+/messages"; `method` is case-insensitive; `where` filters further."""
        out = []
        for call in self.requests:
            if method and call.method != method.upper():
                continue
            if path and not re.fullmatch(path, call.path):
                continue
            if where and not where(call):
                continue
            out.append(call)
        return out

    async def wait_for(self, method: str | None = None, path: str | None = None, count: int = 1,
                       timeout: float = 5.0, *, where: Callable[[Call], bool] | None = None) -> list[Call]:
        """Wait until at least `count` matching requests were recorded (and answered); returns them."""
        await self.wait_until(lambda: len(self.calls(method, path, where=where)) >= count, timeout,
                               f"{count} x {method or '*'} {path or '*'}")
        return self.calls(method, path, where=where)

    def gateway_received(self, op: int | None = None) -> list[GatewayFrame]:
        """Frames the bot sent to the gateway (op 1 heartbeat, 2 identify, 3 presence, 6 resume, 8 members)."""
        return [f for f in self.gateway_log if f.direction == "recv" and (op is None or f.op == op)]

    def gateway_sent(self, event: str | None = None) -> list[GatewayFrame]:
        """Frames the fake sent; `event` filters dispatches by name (READY, MESSAGE_CREATE, ...)."""
        return [f for f in self.gateway_log if f.direction == "send" and (event is None or f.t == event)]

    async def wait_for_gateway(self, op: int, count: int = 1, timeout: float = 5.0) -> list[GatewayFrame]:
        await self.wait_until(lambda: len(self.gateway_received(op)) >= count, timeout, f"{count} gateway op {op}")
        return self.gateway_received(op)

    async def wait_until_connected(self, timeout: float = 5.0) -> None:
        """Until a bot has an established gateway session (READY or RESUMED sent)."""
        await self.wait_until(self._established, timeout, "an established gateway session")

    def messages_in(self, channel: Any, *, include_ephemeral: bool = False) -> list[dict]:
        """Messages in a channel or thread, oldest first (ephemeral ones only if asked)."""
        cid = str(self.channel(channel).id)
        return [m for m in self.messages.values() if m["channel_id"] == cid
                and (include_ephemeral or not m["flags"] & EPHEMERAL)]

    def fail(self, method: str, path: str, *, status: int = 500, code: int = 0, message: str | None = None,
             times: int = 1, retry_after: float = 0.05, errors: dict | None = None) -> None:
        """Make the next `times` matching requests fail (path is a fullmatch regex). A 429 carries
        retry_after and the Via header, so discord.py waits and retries like it would with Discord."""
        self._failures.append({"method": method.upper(), "path": path, "status": status, "code": code,
                               "message": message or f"{status}: fake failure", "times": times,
                               "retry_after": retry_after, "errors": errors})

    def summary(self, last: int = 25) -> str:
        lines = [f"  {c.method} {c.path} -> {c.status}" for c in self.requests[-last:]]
        text = "recent requests:\n" + ("\n".join(lines) or "  (none)")
        if self.unknown_routes:
            text += "\nunknown routes: " + ", ".join(f"{c.method} {c.path}" for c in self.unknown_routes)
        if self.internal_errors:
            text += "\nfake-discord internal errors:\n" + "\n".join(self.internal_errors)
        conns = ", ".join(f"#{c.index} {c.how or 'pending'}{' closed' if c.closed else ''}" for c in self.connections)
        return text + f"\ngateway connections: {conns or '(none)'}"

    def _changed(self) -> None:
        event, self._event = self._event, asyncio.Event()
        event.set()

    async def wait_until(self, predicate: Callable[[], bool], timeout: float = 5.0, what: str = "a condition") -> None:
        """Wait until predicate() is true; it is re-checked whenever the fake records a request, a gateway
        frame or a state change. Times out with an AssertionError that summarises recent traffic."""
        deadline = time.monotonic() + timeout
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"fake discord: timed out after {timeout}s waiting for {what}\n{self.summary()}")
            try:
                await asyncio.wait_for(self._event.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    # ------------------------------------------------------------------ event injection

    async def message(self, content: str = "", *, author: Any = "alice", channel: Any = "general",
                      message_reference: Any = None, embeds: list[dict] | None = None,
                      attachments: Iterable[tuple[str, bytes]] = ()) -> dict:
        """A user posts a message: MESSAGE_CREATE (mentions like <@id> are parsed). `message_reference` is a
        message dict or id to reply to; `attachments` are (filename, bytes). Returns the stored message."""
        user, ch = self.user(author), self.channel(channel)
        files = [UploadedFile(f"files[{i}]", name, None, data) for i, (name, data) in enumerate(attachments)]
        body: dict[str, Any] = {"content": content, "embeds": embeds or []}
        if message_reference is not None:
            ref_id = message_reference["id"] if isinstance(message_reference, dict) else message_reference
            body["message_reference"] = {"message_id": str(ref_id)}
        msg = self._create_message(ch, user.user_payload(), body, files, validate=False)
        if "@everyone" in content and discord.Permissions(self.permissions_in(user, ch)).mention_everyone:
            msg["mention_everyone"] = True
        await self._deliver("MESSAGE_CREATE", self._gateway_message(msg))
        return msg

    async def interaction(self, command: str, options: dict[str, Any] | None = None, *, user: Any = "alice",
                          channel: Any = "general", target: Any = None, locale: str = "en-US",
                          strict: bool = True, _type: int = 2, _focused: str | None = None) -> FakeInteraction:
        """A user runs an application command: INTERACTION_CREATE type 2.

        `command` is the full name: "ping", "campaign start" (subcommand) or "admin campaign start" (group).
        `options` maps option names to values; types come from the synced command (PUT), so users, channels,
        roles (FakeUser/FakeChannel/FakeRole, id or name) and attachments ((filename, bytes)) get `resolved`
        data. `target` (a user, or a message dict) makes it a user/message context-menu command.
        With strict=True (default) it refuses, like the Discord client, commands that were never synced,
        unknown or missing required options and users lacking default_member_permissions."""
        user, ch = self.user(user), self.channel(channel)
        parts = command.split()
        if not parts:
            raise ValueError("empty command name")
        cmd_type = 1 if target is None else (3 if isinstance(target, dict) else 2)
        stored, scope = self._find_command(parts[0], cmd_type)
        if stored is None and strict:
            raise CommandNotAvailable(
                f"/{parts[0]} (type {cmd_type}) was never synced: the bot PUT no such command to guild or global "
                f"scope (guild: {[c['name'] for c in self.guild_commands.get(self.guild_id, [])]}, "
                f"global: {[c['name'] for c in self.global_commands]}). Pass strict=False to send it anyway.")
        if stored is not None and strict:
            contexts = stored.get("contexts")
            if ch.type == DM and (scope is not None or stored.get("dm_permission") is False
                                  or (contexts is not None and 1 not in contexts)):
                raise CommandNotAvailable(f"/{parts[0]} cannot be used in DMs")
            if ch.type != DM and contexts is not None and 0 not in contexts:
                raise CommandNotAvailable(f"/{parts[0]} cannot be used in a guild")
        if stored is not None and strict and ch.type != DM:
            required = stored.get("default_member_permissions")
            if required is not None:
                need = int(required)
                have = self.guild_permissions(user)
                if (need == 0 and have != ALL_PERMISSIONS) or (have & need) != need:
                    raise CommandNotAvailable(f"{user.username} lacks default_member_permissions {need} for /{parts[0]}")
        data: dict[str, Any] = {"id": stored["id"] if stored else str(self.snowflake()), "name": parts[0], "type": cmd_type}
        if scope is not None:
            data["guild_id"] = str(scope)
        resolved: dict[str, dict] = {}
        if cmd_type == 1:
            container = data.setdefault("options", [])
            schema = stored.get("options", []) if stored else None
            for i, sub in enumerate(parts[1:]):
                sub_schema = _by_name(schema, sub) if schema is not None else None
                if schema is not None and (sub_schema is None or sub_schema.get("type") not in (1, 2)):
                    if strict:
                        raise CommandNotAvailable(f"/{' '.join(parts[:i + 1])} has no subcommand or group {sub!r}")
                kind = sub_schema["type"] if sub_schema else (2 if i < len(parts) - 2 else 1)
                node = {"name": sub, "type": kind, "options": []}
                container.append(node)
                container = node["options"]
                schema = sub_schema.get("options", []) if sub_schema else None
            given = dict(options or {})
            for name, value in given.items():
                opt_schema = _by_name(schema, name) if schema is not None else None
                if schema is not None and opt_schema is None and strict:
                    raise CommandNotAvailable(f"/{command} has no option {name!r}; options: {[o['name'] for o in schema]}")
                kind = opt_schema["type"] if opt_schema else _infer_option_type(value)
                option = {"name": name, "type": kind,
                          "value": self._option_value(kind, value, resolved, ch, focused=name == _focused)}
                if name == _focused:
                    option["focused"] = True
                elif strict and opt_schema and opt_schema.get("choices") and _type == 2:
                    if option["value"] not in [c["value"] for c in opt_schema["choices"]]:
                        raise CommandNotAvailable(f"{value!r} is not a choice of option {name!r}")
                container.append(option)
            if strict and schema is not None and _type == 2:
                missing = [o["name"] for o in schema if o.get("required") and o["name"] not in given]
                if missing:
                    raise CommandNotAvailable(f"/{command} is missing required option(s) {missing}")
            if not data["options"]:
                del data["options"]
        else:
            if cmd_type == 2:
                target_user = self.user(target)
                data["target_id"] = str(target_user.id)
                self._resolve_user(target_user, resolved, ch)
            else:
                data["target_id"] = target["id"]
                resolved.setdefault("messages", {})[target["id"]] = target
        if resolved:
            data["resolved"] = resolved
        payload = self._interaction_payload(_type, data, user, ch, locale=locale)
        return await self._send_interaction(payload, user, ch)

    async def autocomplete(self, command: str, options: dict[str, Any], focused: str, *, user: Any = "alice",
                           channel: Any = "general", strict: bool = True) -> FakeInteraction:
        """The user is typing into option `focused`: INTERACTION_CREATE type 4. The bot should answer with a
        callback of type 8 ({"choices": [...]}): see `(await it.wait_response())["data"]["choices"]`."""
        if focused not in options:
            raise ValueError(f"focused option {focused!r} must be in options")
        return await self.interaction(command, options, user=user, channel=channel, strict=strict,
                                      _type=4, _focused=focused)

    async def component(self, message: Any, custom_id: str, *, values: list[str] | None = None,
                        user: Any = "alice", strict: bool = True) -> FakeInteraction:
        """A user clicks a button (or picks `values` in a select) on a message: INTERACTION_CREATE type 3."""
        msg = message if isinstance(message, dict) else self.messages[int(message)]
        found = _find_component(msg.get("components", []), custom_id)
        if found is None and strict:
            raise CommandNotAvailable(f"message {msg['id']} has no component with custom_id {custom_id!r}")
        ch = self.channel(int(msg["channel_id"]))
        data: dict[str, Any] = {"custom_id": custom_id, "component_type": found["type"] if found else 2}
        if values is not None:
            data["values"] = list(values)
        payload = self._interaction_payload(3, data, self.user(user), ch)
        payload["message"] = msg
        return await self._send_interaction(payload, self.user(user), ch, message=msg)

    async def modal_submit(self, modal: dict, values: dict[str, str], *, user: Any = "alice",
                           channel: Any = "general") -> FakeInteraction:
        """Submit a modal (the data of a type 9 callback): INTERACTION_CREATE type 5, mirroring its layout."""
        def fill(components: list[dict]) -> list[dict]:
            out = []
            for comp in components:
                kind = comp.get("type")
                if kind == 1:
                    out.append({"type": 1, "id": comp.get("id", 0), "components": fill(comp.get("components", []))})
                elif kind == 18:
                    out.append({"type": 18, "id": comp.get("id", 0), "component": fill([comp["component"]])[0]})
                elif kind == 4:
                    out.append({"type": 4, "id": comp.get("id", 0), "custom_id": comp["custom_id"],
                                "value": values.get(comp["custom_id"], comp.get("value") or "")})
                elif "custom_id" in comp:
                    out.append({"type": kind, "id": comp.get("id", 0), "custom_id": comp["custom_id"],
                                "values": list(values.get(comp["custom_id"], []))})
            return out

        ch = self.channel(channel)
        data = {"custom_id": modal["custom_id"], "components": fill(modal.get("components", []))}
        payload = self._interaction_payload(5, data, self.user(user), ch)
        return await self._send_interaction(payload, self.user(user), ch)

    async def dispatch(self, event: str, data: dict) -> None:
        """Send any gateway dispatch (op 0) to the bot."""
        await self._deliver(event, data)

    # ------------------------------------------------------------------ connection control

    async def drop_connection(self, *, code: int = 4000, abrupt: bool = False, wait: bool = True,
                              timeout: float = 10.0) -> str | None:
        """Close the bot's gateway websocket (with a close `code`, or by aborting the TCP connection if
        `abrupt`). discord.py reconnects by itself; with `wait` this returns how the new connection was
        established: "resume" or "identify"."""
        conn = self._live_conn()
        if abrupt:
            transport = conn.request.transport
            if transport is not None:
                transport.abort()
        else:
            await conn.ws.close(code=code, message=b"fake discord dropped the connection")
        if not wait:
            return None
        return await self._wait_reconnect(conn, timeout)

    async def send_reconnect(self, *, wait: bool = True, timeout: float = 10.0) -> str | None:
        """Op 7 RECONNECT: Discord asks the bot to reconnect (and resume)."""
        conn = self._live_conn()
        self._send(conn, {"op": 7, "d": None})
        return await self._wait_reconnect(conn, timeout) if wait else None

    async def invalidate_session(self, *, resumable: bool = False, wait: bool = True, timeout: float = 15.0) -> str | None:
        """Op 9 INVALID_SESSION. Not resumable: discord.py waits 5 s (its before_identify) then re-IDENTIFYs."""
        conn = self._live_conn()
        if conn.session is not None and not resumable:
            conn.session.resumable = False
        self._send(conn, {"op": 9, "d": resumable})
        return await self._wait_reconnect(conn, timeout) if wait else None

    def _live_conn(self) -> _Conn:
        session = self._session
        if session is None or session.conn is None or session.conn.closed:
            raise RuntimeError("no bot is connected to the fake gateway")
        return session.conn

    def _established(self) -> bool:
        s = self._session
        return bool(s and s.conn and not s.conn.closed and s.conn.info.how)

    async def _wait_reconnect(self, old: _Conn, timeout: float) -> str:
        def done() -> bool:
            s = self._session
            return bool(self._established() and s and s.conn is not old)
        await self.wait_until(done, timeout, "the bot to reconnect to the gateway")
        return self._session.conn.info.how  # type: ignore[union-attr]

    # ------------------------------------------------------------------ gateway

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        info = GatewayConnection(len(self.connections), request.path, dict(request.query))
        conn = _Conn(info, ws, request)
        if self.compress and request.query.get("compress") == "zlib-stream":
            conn.compressor = zlib.compressobj()
        self.connections.append(info)
        self._conns.append(conn)
        conn.writer = asyncio.create_task(self._writer(conn))
        self._send(conn, {"op": 10, "d": {"heartbeat_interval": int(self.heartbeat_interval * 1000),
                                          "_trace": ["[\"fake-discord-gateway\"]"]}})
        self._changed()
        try:
            async for msg in ws:
                if msg.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                    try:
                        frame = json.loads(msg.data)
                    except ValueError:
                        await ws.close(code=4002, message=b"Error while decoding payload.")
                        break
                    await self._on_frame(conn, frame)
                elif msg.type == WSMsgType.ERROR:
                    break
        except Exception:
            self.internal_errors.append(traceback.format_exc())
        finally:
            conn.closed = info.closed = True
            info.close_code = ws.close_code
            if conn.session is not None and conn.session.conn is conn:
                conn.session.conn = None
            conn.queue.put_nowait(None)
            if conn.writer is not None:
                try:
                    await conn.writer
                except asyncio.CancelledError:
                    pass
            self._changed()
        return ws

    async def _writer(self, conn: _Conn) -> None:
        while True:
            frame = await conn.queue.get()
            try:
                if frame is None:
                    return
                if conn.ws.closed:
                    continue
                text = json.dumps(frame, separators=(",", ":"))
                if conn.compressor is not None:
                    data = conn.compressor.compress(text.encode()) + conn.compressor.flush(zlib.Z_SYNC_FLUSH)
                    await conn.ws.send_bytes(data)
                else:
                    await conn.ws.send_str(text)
                self.gateway_log.append(GatewayFrame("send", conn.info.index, frame.get("op"), frame.get("t"),
                                                     frame.get("s"), frame.get("d")))
            except (ConnectionError, RuntimeError):
                pass  # the connection went away; RESUME replays the session buffer
            finally:
                conn.queue.task_done()
                self._changed()

    def _send(self, conn: _Conn, frame: dict) -> None:
        if not conn.closed:
            conn.queue.put_nowait(frame)

    async def _on_frame(self, conn: _Conn, frame: dict) -> None:
        op, d = frame.get("op"), frame.get("d")
        shown = dict(d, token="<token>") if isinstance(d, dict) and "token" in d else d
        self.gateway_log.append(GatewayFrame("recv", conn.info.index, op, None, None, shown))
        if op == 1:
            self._send(conn, {"op": 11})
        elif op == 2:
            await self._identify(conn, d or {})
        elif op == 6:
            await self._resume(conn, d or {})
        elif op == 3:
            self.presence = d
        elif op == 8:
            self._request_members(conn, d or {})
        elif op == 4:
            pass  # voice state update: no voice here
        else:
            await conn.ws.close(code=4001, message=b"Unknown opcode.")
        self._changed()

    async def _identify(self, conn: _Conn, d: dict) -> None:
        if conn.session is not None:
            await conn.ws.close(code=4005, message=b"Already authenticated.")
            return
        if d.get("token") != self.token:
            await conn.ws.close(code=4004, message=b"Authentication failed.")
            return
        intents = d.get("intents")
        if not isinstance(intents, int) or intents < 0:
            await conn.ws.close(code=4013, message=b"Invalid intent(s).")
            return
        allowed = sum(PRIVILEGED[name] for name in self.privileged_intents)
        if intents & sum(PRIVILEGED.values()) & ~allowed:
            await conn.ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        shard = d.get("shard")
        if shard is not None and not (isinstance(shard, list) and len(shard) == 2 and all(type(n) is int for n in shard)
                                      and 0 <= shard[0] < shard[1]):
            await conn.ws.close(code=4010, message=b"Invalid shard.")
            return
        session = _Session(secrets.token_hex(16), intents, shard)
        self._sessions[session.id] = session
        owns = self._owns_guild(session)
        if owns:
            self._session = session
        conn.session, session.conn = session, conn
        conn.info.how = "identify"
        ready: dict[str, Any] = {
            "v": API_VERSION, "user_settings": {}, "user": self._me_payload(),
            "guilds": [{"id": str(self.guild_id), "unavailable": True}] if owns else [], "session_id": session.id,
            "session_type": "normal", "resume_gateway_url": self.resume_gateway_url,
            "application": {"id": str(self.application_id), "flags": self._app_flags()},
            "private_channels": [], "relationships": [], "presences": [], "guild_join_requests": [],
            "geo_ordered_rtc_regions": ["fake"], "auth": {}, "_trace": ["[\"fake-discord-session\"]"],
        }
        if session.shard is not None:
            ready["shard"] = session.shard
        self._dispatch("READY", ready, session)
        if owns:
            self._dispatch("GUILD_CREATE", self._guild_create(session.intents, d.get("large_threshold", 50)), session)

    def _owns_guild(self, session: _Session) -> bool:
        """Whether Discord would send the guild's events to this session's shard."""
        return session.shard is None or (self.guild_id >> 22) % session.shard[1] == session.shard[0]

    async def _resume(self, conn: _Conn, d: dict) -> None:
        session = self._sessions.get(d.get("session_id", ""))
        if session is None or not session.resumable or d.get("token") != self.token:
            self._send(conn, {"op": 9, "d": False})
            return
        old = session.conn
        if old is not None and old is not conn and not old.closed:
            old.session = None
            await old.ws.close(code=4000, message=b"Session resumed elsewhere.")
        seq = d.get("seq") or 0
        conn.session = session
        for frame in session.buffer:
            if frame["s"] > seq:
                self._send(conn, frame)
        session.conn = conn
        if self._owns_guild(session):
            self._session = session
        conn.info.how = "resume"
        self._dispatch("RESUMED", {"_trace": ["[\"fake-discord-resume\"]"]}, session)

    def _request_members(self, conn: _Conn, d: dict) -> None:
        members = [u for u in self.users.values() if u.id in self._guild_member_ids()]
        query = d.get("query")
        if d.get("user_ids"):
            ids = {int(x) for x in (d["user_ids"] if isinstance(d["user_ids"], list) else [d["user_ids"]])}
            not_found = [str(i) for i in ids if i not in {u.id for u in members}]
            members = [u for u in members if u.id in ids]
        else:
            not_found = []
            if query:
                members = [u for u in members if u.username.lower().startswith(query.lower())
                           or (u.nick or "").lower().startswith(query.lower())]
            if d.get("limit"):
                members = members[: d["limit"]]
        chunk = {"guild_id": str(d.get("guild_id", self.guild_id)), "members": [u.member_payload() for u in members],
                 "chunk_index": 0, "chunk_count": 1, "not_found": not_found}
        if d.get("nonce") is not None:
            chunk["nonce"] = d["nonce"]
        if d.get("presences"):
            chunk["presences"] = []
        self._dispatch("GUILD_MEMBERS_CHUNK", chunk, conn.session)

    def _guild_member_ids(self) -> set[int]:
        return set(self.users)

    # Which intent a dispatch needs (None: always sent)
    _EVENT_INTENTS = {
        "GUILD_ROLE_CREATE": GUILDS, "GUILD_ROLE_UPDATE": GUILDS, "CHANNEL_CREATE": GUILDS,
        "CHANNEL_UPDATE": GUILDS, "CHANNEL_DELETE": GUILDS, "THREAD_CREATE": GUILDS, "THREAD_UPDATE": GUILDS,
        "THREAD_DELETE": GUILDS, "GUILD_MEMBER_ADD": GUILD_MEMBERS, "GUILD_MEMBER_UPDATE": GUILD_MEMBERS,
    }

    def _dispatch(self, event: str, data: dict, session: _Session | None = None) -> bool:
        """Queue a dispatch to the (current) session; buffered for RESUME if disconnected."""
        session = session or self._session
        if session is None:
            return False  # no bot yet: world changes show up in READY / GUILD_CREATE instead
        need = self._EVENT_INTENTS.get(event)
        if event.startswith("MESSAGE_"):
            need = DIRECT_MESSAGES if "guild_id" not in data else GUILD_MESSAGES
        if need is not None and not session.intents & need:
            return False
        if event.startswith("MESSAGE_") and "content" in data:
            data = self._apply_content_intent(data, session.intents)
        session.seq += 1
        frame = {"op": 0, "t": event, "s": session.seq, "d": data}
        session.buffer.append(frame)
        if session.conn is not None:
            self._send(session.conn, frame)
        return True

    async def _deliver(self, event: str, data: dict) -> None:
        """Dispatch from test code: there must be a session; waits until the frame is written."""
        if self._session is None:
            raise RuntimeError("no bot has identified with the fake gateway yet (await bot.wait_until_ready())")
        self._dispatch(event, data)
        await self._flush()

    async def _flush(self, timeout: float = 5.0) -> None:
        s = self._session
        if s is not None and s.conn is not None and not s.conn.closed:
            await asyncio.wait_for(s.conn.queue.join(), timeout)

    def _apply_content_intent(self, msg: dict, intents: int) -> dict:
        if intents & MESSAGE_CONTENT or "guild_id" not in msg:
            return msg
        if msg.get("author", {}).get("id") == str(self.bot_user.id):
            return msg
        if any(m.get("id") == str(self.bot_user.id) for m in msg.get("mentions", [])):
            return msg
        return dict(msg, content="", embeds=[], attachments=[], components=[])

    def _me_payload(self) -> dict:
        return {**self.bot_user.user_payload(), "verified": True, "mfa_enabled": False, "email": None,
                "locale": "en-US", "premium_type": 0}

    def _app_flags(self) -> int:
        return sum(APP_FLAG_BY_INTENT[name] for name in self.privileged_intents) | (1 << 23)

    def _guild_payload(self) -> dict:
        text = [c for c in self.channels.values() if c.type == TEXT and c.guild_id]
        return {
            "id": str(self.guild_id), "name": self.guild_name, "icon": None, "icon_hash": None, "splash": None,
            "discovery_splash": None, "owner_id": str(self.owner.id), "afk_channel_id": None, "afk_timeout": 300,
            "widget_enabled": False, "widget_channel_id": None, "verification_level": 0,
            "default_message_notifications": 1, "explicit_content_filter": 0,
            "roles": [r.payload() for r in self.roles.values()], "emojis": [], "stickers": [], "features": [],
            "mfa_level": 0, "application_id": None, "system_channel_id": str(text[0].id) if text else None,
            "system_channel_flags": 0, "rules_channel_id": None, "max_presences": None, "max_members": 500000,
            "vanity_url_code": None, "description": None, "banner": None, "premium_tier": 0,
            "premium_subscription_count": 0, "preferred_locale": "en-US", "public_updates_channel_id": None,
            "max_video_channel_users": 25, "max_stage_video_channel_users": 50, "nsfw_level": 0, "nsfw": False,
            "premium_progress_bar_enabled": False, "safety_alerts_channel_id": None, "incidents_data": None,
        }

    def _guild_create(self, intents: int, large_threshold: int) -> dict:
        member_ids = self._guild_member_ids()
        members = [u for u in self.users.values() if u.id in member_ids]
        # Without GUILD_PRESENCES Discord only sends the bot itself (and voice members): discord.py then
        # chunks with op 8 if it has the members intent.
        shown = members if intents & GUILD_PRESENCES else [self.bot_user]
        return {
            **self._guild_payload(),
            "joined_at": self.bot_user.joined_at, "large": len(members) > large_threshold, "unavailable": False,
            "member_count": len(members), "voice_states": [], "members": [u.member_payload() for u in shown],
            "channels": [c.payload() for c in self.channels.values() if c.guild_id and not c.is_thread],
            "threads": [c.payload() for c in self.threads() if not c.archived],
            "presences": [], "stage_instances": [], "guild_scheduled_events": [], "soundboard_sounds": [],
            "embedded_activities": [], "activity_instances": [], "lazy": True, "application_command_counts": {},
        }

    # ------------------------------------------------------------------ interactions (internals)

    def _find_command(self, name: str, cmd_type: int) -> tuple[dict | None, int | None]:
        for cmd in self.guild_commands.get(self.guild_id, []):
            if cmd["name"] == name and cmd.get("type", 1) == cmd_type:
                return cmd, self.guild_id
        for cmd in self.global_commands:
            if cmd["name"] == name and cmd.get("type", 1) == cmd_type:
                return cmd, None
        return None, None

    def _resolve_user(self, user: FakeUser, resolved: dict, ch: FakeChannel) -> None:
        resolved.setdefault("users", {})[str(user.id)] = user.user_payload()
        if ch.type != DM:
            member = user.member_payload(user=False)
            member["permissions"] = str(self.permissions_in(user, ch))
            resolved.setdefault("members", {})[str(user.id)] = member

    def _option_value(self, kind: int, value: Any, resolved: dict, ch: FakeChannel, *, focused: bool) -> Any:
        if focused:
            return value if isinstance(value, (str, int, float)) else str(value)
        if kind == 3:
            return str(value)
        if kind == 4:
            return int(value)
        if kind == 5:
            return bool(value)
        if kind == 10:
            return float(value)
        if kind == 6 or (kind == 9 and not isinstance(value, FakeRole) and self._find_role(value) is None):
            user = self.user(value)
            self._resolve_user(user, resolved, ch)
            return str(user.id)
        if kind in (8, 9):
            role = self.role(value)
            resolved.setdefault("roles", {})[str(role.id)] = role.payload()
            return str(role.id)
        if kind == 7:
            target = self.channel(value)
            data = target.payload()
            entry = {k: data[k] for k in ("id", "name", "type", "parent_id", "thread_metadata") if k in data}
            entry["permissions"] = str(self.permissions_in(self.bot_user, target))
            resolved.setdefault("channels", {})[str(target.id)] = entry
            return str(target.id)
        if kind == 11:
            filename, blob = value if isinstance(value, tuple) else ("file.bin", bytes(value))
            att = self._attachment(ch, UploadedFile("upload", filename, None, blob))
            resolved.setdefault("attachments", {})[att["id"]] = att
            return att["id"]
        return value

    def _interaction_payload(self, kind: int, data: dict, user: FakeUser, ch: FakeChannel, *,
                             locale: str = "en-US") -> dict:
        iid = self.snowflake()
        payload: dict[str, Any] = {
            "id": str(iid), "application_id": str(self.application_id), "type": kind, "data": data,
            "token": "aW50ZXJhY3Rpb246" + base64.urlsafe_b64encode(f"{iid}:".encode()).decode().rstrip("=")
                     + secrets.token_urlsafe(96),
            "version": 1, "locale": locale, "entitlements": [], "entitlement_sku_ids": [],
            "attachment_size_limit": self.attachment_size_limit,
            "app_permissions": str(self.permissions_in(self.bot_user, ch) if ch.type != DM else EVERYONE_PERMISSIONS),
        }
        channel = ch.payload()
        if ch.type == DM:
            payload.update({"channel_id": str(ch.id), "user": user.user_payload(), "context": 1,
                            "authorizing_integration_owners": {"0": "0"}})
            channel["permissions"] = str(EVERYONE_PERMISSIONS)
        else:
            perms = self.permissions_in(user, ch)
            channel["permissions"] = str(perms)
            member = user.member_payload()
            member["permissions"] = str(perms)
            payload.update({"guild_id": str(self.guild_id), "channel_id": str(ch.id), "member": member,
                            "guild": {"id": str(self.guild_id), "locale": "en-US", "features": []},
                            "guild_locale": "en-US", "context": 0,
                            "authorizing_integration_owners": {"0": str(self.guild_id)}})
        payload["channel"] = channel
        return payload

    async def _send_interaction(self, payload: dict, user: FakeUser, ch: FakeChannel,
                                message: dict | None = None) -> FakeInteraction:
        if self._session is None:
            raise RuntimeError("no bot has identified with the fake gateway yet (await bot.wait_until_ready())")
        it = FakeInteraction(self, payload, user, ch, message)
        self.interactions[it.id] = it
        await self._deliver("INTERACTION_CREATE", payload)
        return it

    def _interaction_by_token(self, token: str) -> FakeInteraction | None:
        for it in self.interactions.values():
            if it.token == token:
                return it
        return None

    def _interaction_message_extra(self, it: FakeInteraction) -> dict:
        user = it.user.user_payload()
        extra: dict[str, Any] = {
            "application_id": str(self.application_id), "webhook_id": str(self.application_id),
            "interaction_metadata": {"id": str(it.id), "type": it.type, "user": user,
                                     "authorizing_integration_owners": it.payload.get("authorizing_integration_owners", {})},
        }
        if it.type in (2, 4):
            extra["interaction"] = {"id": str(it.id), "type": it.type, "name": it.data.get("name"), "user": user}
            extra["interaction_metadata"]["name"] = it.data.get("name")
            extra["interaction_metadata"]["command_type"] = it.data.get("type", 1)
        if it.type == 3 and it.message:
            extra["interaction_metadata"]["interacted_message_id"] = it.message["id"]
        return extra

    # ------------------------------------------------------------------ messages (internals)

    def _attachment(self, ch: FakeChannel, f: UploadedFile, description: str | None = None) -> dict:
        aid = self.snowflake()
        self.attachments[aid] = f.data
        url = f"{self.base_url}/cdn/attachments/{ch.id}/{aid}/{f.filename}"
        att = {"id": str(aid), "filename": f.filename, "size": f.size, "url": url, "proxy_url": url,
               "content_type": f.content_type or _guess_type(f.filename)}
        if description:
            att["description"] = description
        return att

    def _build_attachments(self, ch: FakeChannel, body: dict, files: list[UploadedFile],
                           existing: list[dict] | None = None) -> list[dict]:
        if sum(f.size for f in files) > self.attachment_size_limit:
            raise ApiError(413, 40005, "Request entity too large")
        by_index = {}
        for i, f in enumerate(files):
            m = re.fullmatch(r"files\[(\d+)\]", f.field)
            by_index[int(m.group(1)) if m else i] = f
        wanted = body.get("attachments")
        if wanted is None:
            return list(existing or []) + [self._attachment(ch, f) for f in files]
        out, old = [], {a["id"]: a for a in existing or []}
        for entry in wanted:
            key = str(entry.get("id"))
            if key in old:
                out.append(old[key])
            elif key.isdigit() and int(key) in by_index:
                out.append(self._attachment(ch, by_index.pop(int(key)), entry.get("description")))
        return out + [self._attachment(ch, f) for f in by_index.values()]

    def _validate_message(self, body: dict, files: list[UploadedFile], *, prefix: tuple = (),
                          require_content: bool = True) -> None:
        errors = _FormErrors(prefix)
        content = body.get("content")
        if content is not None and not isinstance(content, str):
            content = str(content)
        errors.max_length(("content",), content, 2000)
        embeds = body.get("embeds") or []
        if len(embeds) > 10:
            errors.add(("embeds",), "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length.")
        total = 0
        for i, embed in enumerate(embeds[:10]):
            for key, limit in (("title", 256), ("description", 4096)):
                errors.max_length(("embeds", i, key), embed.get(key), limit)
                total += len(embed.get(key) or "")
            fields = embed.get("fields") or []
            if len(fields) > 25:
                errors.add(("embeds", i, "fields"), "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
            for j, f in enumerate(fields):
                for key, limit in (("name", 256), ("value", 1024)):
                    if not str(f.get(key) or "").strip():
                        errors.add(("embeds", i, "fields", j, key), "BASE_TYPE_REQUIRED", "This field is required")
                    errors.max_length(("embeds", i, "fields", j, key), f.get(key), limit)
                    total += len(str(f.get(key) or ""))
            for key, sub, limit in (("footer", "text", 2048), ("author", "name", 256)):
                if isinstance(embed.get(key), dict):
                    errors.max_length(("embeds", i, key, sub), embed[key].get(sub), limit)
                    total += len(embed[key].get(sub) or "")
        if total > 6000:
            errors.add(("embeds",), "MAX_EMBED_SIZE_EXCEEDED", "Embed size exceeds maximum size of 6000")
        components = body.get("components") or []
        if len(components) > 5 and not (body.get("flags", 0) & (1 << 15)):
            errors.add(("components",), "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length.")
        errors.raise_if_any()
        if require_content and not ((content or "").strip() or embeds or files or body.get("attachments")
                                    or components or body.get("sticker_ids") or body.get("poll")):
            raise ApiError(400, 50006, "Cannot send an empty message")

    def _create_message(self, ch: FakeChannel, author: dict, body: dict, files: list[UploadedFile], *,
                        type: int = MSG_DEFAULT, extra: dict | None = None, flags: int | None = None,
                        validate: bool = True, embeds_allowed: bool = True, msg_id: int | None = None) -> dict:
        if validate:
            self._validate_message(body, files)
        content = str(body.get("content") or "")
        reference = body.get("message_reference")
        msg: dict[str, Any] = {
            "id": str(msg_id or self.snowflake()), "channel_id": str(ch.id), "author": author, "content": content,
            "timestamp": _iso(), "edited_timestamp": None, "tts": bool(body.get("tts", False)),
            "mention_everyone": False, "mentions": self._mentions(content, ch),
            "mention_roles": [r for r in re.findall(r"<@&(\d+)>", content) if int(r) in self.roles],
            "attachments": self._build_attachments(ch, body, files),
            "embeds": [dict(e, type=e.get("type", "rich")) for e in (body.get("embeds") or [])] if embeds_allowed else [],
            "pinned": False, "type": type, "flags": body.get("flags", 0) if flags is None else flags,
            "components": body.get("components") or [],
        }
        if body.get("nonce") is not None:
            msg["nonce"] = body["nonce"]
        if body.get("poll"):
            msg["poll"] = body["poll"]
        if reference and reference.get("message_id"):
            ref = self.messages.get(int(reference["message_id"]))
            if ref is None:
                if reference.get("fail_if_not_exists", True):
                    errors = _FormErrors()
                    errors.add(("message_reference",), "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
                    errors.raise_if_any()
            else:
                if type == MSG_DEFAULT:
                    msg["type"] = MSG_REPLY
                msg["message_reference"] = {"type": 0, "message_id": ref["id"], "channel_id": ref["channel_id"]}
                if ch.guild_id:
                    msg["message_reference"]["guild_id"] = str(ch.guild_id)
                msg["referenced_message"] = {k: v for k, v in ref.items() if k != "referenced_message"}
                if ref["author"]["id"] not in [m["id"] for m in msg["mentions"]] and \
                        (body.get("allowed_mentions") or {}).get("replied_user", True):
                    msg["mentions"].append(ref["author"])
        if ch.is_thread:
            msg["position"] = ch.message_count
        msg.update(extra or {})
        self._store(ch, msg)
        return msg

    def _store(self, ch: FakeChannel, msg: dict) -> None:
        self.messages[int(msg["id"])] = msg
        if not msg["flags"] & EPHEMERAL:
            ch.last_message_id = int(msg["id"])
            if ch.is_thread:
                ch.message_count += 1
        self._changed()

    def _mentions(self, content: str, ch: FakeChannel) -> list[dict]:
        out, seen = [], set()
        for raw in re.findall(r"<@!?(\d+)>", content):
            uid = int(raw)
            if uid in self.users and uid not in seen:
                seen.add(uid)
                user = self.users[uid]
                entry = user.user_payload()
                if ch.guild_id:
                    entry["member"] = user.member_payload(user=False)
                out.append(entry)
        return out

    def _gateway_message(self, msg: dict) -> dict:
        """The MESSAGE_CREATE/UPDATE shape: the REST message plus guild_id and the author's member."""
        ch = self.channels.get(int(msg["channel_id"]))
        data = dict(msg)
        if ch is not None and ch.guild_id:
            data["guild_id"] = str(ch.guild_id)
            uid = int(msg["author"]["id"])
            if "webhook_id" not in msg or uid == self.bot_user.id:
                if uid in self.users:
                    data["member"] = self.users[uid].member_payload(user=False)
        return data

    def _edit_message(self, msg: dict, body: dict, files: list[UploadedFile], *, prefix: tuple = ()) -> dict:
        self._validate_message(body, files, prefix=prefix, require_content=False)
        ch = self.channels[int(msg["channel_id"])]
        for key in ("content", "components", "poll"):
            if key in body and body[key] is not None:
                msg[key] = body[key]
        if "embeds" in body and body["embeds"] is not None:
            msg["embeds"] = [dict(e, type=e.get("type", "rich")) for e in body["embeds"]]
        if "flags" in body and body["flags"] is not None:
            # Visibility is fixed when a message is created (or deferred): an edit cannot make it ephemeral.
            msg["flags"] = (msg["flags"] & (EPHEMERAL | LOADING)) | (int(body["flags"]) & ~EPHEMERAL)
        if files or "attachments" in body:
            msg["attachments"] = self._build_attachments(ch, body, files, existing=msg["attachments"])
        msg["mentions"] = self._mentions(msg["content"], ch)
        msg["edited_timestamp"] = _iso()
        self._changed()
        return msg

    # ------------------------------------------------------------------ HTTP plumbing

    def _build_routes(self) -> list[tuple[str, re.Pattern, Callable]]:
        S = r"(?P<%s>[^/]+)"
        table = [
            ("GET", "/users/@me", self._get_me),
            ("GET", "/users/{user_id}", self._get_user),
            ("POST", "/users/@me/channels", self._create_dm),
            ("GET", "/gateway", self._get_gateway),
            ("GET", "/gateway/bot", self._get_gateway_bot),
            ("GET", "/oauth2/applications/@me", self._get_application),
            ("GET", "/applications/@me", self._get_application),
            ("GET", "/applications/{app_id}/commands", self._list_commands),
            ("PUT", "/applications/{app_id}/commands", self._bulk_commands),
            ("POST", "/applications/{app_id}/commands", self._upsert_command),
            ("GET", "/applications/{app_id}/commands/{command_id}", self._get_command),
            ("PATCH", "/applications/{app_id}/commands/{command_id}", self._edit_command),
            ("DELETE", "/applications/{app_id}/commands/{command_id}", self._delete_command),
            ("GET", "/applications/{app_id}/guilds/{guild_id}/commands/permissions", self._command_permissions),
            ("GET", "/applications/{app_id}/guilds/{guild_id}/commands", self._list_commands),
            ("PUT", "/applications/{app_id}/guilds/{guild_id}/commands", self._bulk_commands),
            ("POST", "/applications/{app_id}/guilds/{guild_id}/commands", self._upsert_command),
            ("GET", "/applications/{app_id}/guilds/{guild_id}/commands/{command_id}", self._get_command),
            ("PATCH", "/applications/{app_id}/guilds/{guild_id}/commands/{command_id}", self._edit_command),
            ("DELETE", "/applications/{app_id}/guilds/{guild_id}/commands/{command_id}", self._delete_command),
            ("GET", "/guilds/{guild_id}", self._get_guild),
            ("GET", "/guilds/{guild_id}/channels", self._get_guild_channels),
            ("GET", "/guilds/{guild_id}/roles", self._get_roles),
            ("GET", "/guilds/{guild_id}/members", self._list_members),
            ("GET", "/guilds/{guild_id}/members/{user_id}", self._get_member),
            ("GET", "/guilds/{guild_id}/threads/active", self._active_threads),
            ("GET", "/guilds/{guild_id}/webhooks", self._guild_webhooks),
            ("GET", "/channels/{channel_id}", self._get_channel),
            ("PATCH", "/channels/{channel_id}", self._edit_channel),
            ("DELETE", "/channels/{channel_id}", self._delete_channel),
            ("GET", "/channels/{channel_id}/messages", self._list_messages),
            ("POST", "/channels/{channel_id}/messages", self._post_message),
            ("GET", "/channels/{channel_id}/messages/{message_id}", self._get_message),
            ("PATCH", "/channels/{channel_id}/messages/{message_id}", self._patch_message),
            ("DELETE", "/channels/{channel_id}/messages/{message_id}", self._delete_message),
            ("PUT", "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me", self._no_content),
            ("DELETE", "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/{user}", self._no_content),
            ("POST", "/channels/{channel_id}/typing", self._typing),
            ("GET", "/channels/{channel_id}/webhooks", self._channel_webhooks),
            ("POST", "/channels/{channel_id}/webhooks", self._create_webhook),
            ("POST", "/channels/{channel_id}/threads", self._create_thread),
            ("POST", "/channels/{channel_id}/messages/{message_id}/threads", self._create_thread),
            ("PUT", "/channels/{channel_id}/thread-members/{user}", self._no_content),
            ("DELETE", "/channels/{channel_id}/thread-members/{user}", self._no_content),
            ("PUT", "/channels/{channel_id}/pins/{message_id}", self._no_content),
            ("GET", "/webhooks/{webhook_id}", self._get_webhook),
            ("PATCH", "/webhooks/{webhook_id}", self._edit_webhook),
            ("DELETE", "/webhooks/{webhook_id}", self._delete_webhook),
            ("GET", "/webhooks/{webhook_id}/{webhook_token}", self._get_webhook),
            ("PATCH", "/webhooks/{webhook_id}/{webhook_token}", self._edit_webhook),
            ("DELETE", "/webhooks/{webhook_id}/{webhook_token}", self._delete_webhook),
            ("POST", "/webhooks/{webhook_id}/{webhook_token}", self._execute_webhook),
            ("GET", "/webhooks/{webhook_id}/{webhook_token}/messages/{message_id}", self._webhook_message),
            ("PATCH", "/webhooks/{webhook_id}/{webhook_token}/messages/{message_id}", self._webhook_message),
            ("DELETE", "/webhooks/{webhook_id}/{webhook_token}/messages/{message_id}", self._webhook_message),
            ("POST", "/interactions/{interaction_id}/{interaction_token}/callback", self._interaction_callback),
        ]
        routes = []
        for method, template, handler in table:
            pattern = re.sub(r"\{(\w+)\}", lambda m: S % m.group(1), re.escape(template).replace(r"\{", "{").replace(r"\}", "}"))
            routes.append((method, re.compile(pattern), handler))
        return routes

    async def _http_entry(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        call = Call(request.method, path, dict(request.query), dict(request.headers))
        try:
            if request.content_type.startswith("multipart/"):
                reader = await request.multipart()
                async for part in reader:
                    data = await part.read(decode=False)  # type: ignore[union-attr]
                    if part.name == "payload_json":  # type: ignore[union-attr]
                        call.json = json.loads(data)
                    elif part.filename:  # type: ignore[union-attr]
                        call.files.append(UploadedFile(part.name or "", part.filename,  # type: ignore[union-attr]
                                                       part.headers.get("Content-Type"), bytes(data)))
                    else:
                        call.form[part.name or ""] = bytes(data).decode("utf-8", "replace")  # type: ignore[union-attr]
            else:
                raw = await request.read()
                if raw:
                    try:
                        call.json = json.loads(raw)
                    except ValueError:
                        call.form["_raw"] = raw.decode("utf-8", "replace")
        except Exception:
            self.internal_errors.append(traceback.format_exc())
        self.requests.append(call)
        status, body = await self._route(call)
        call.status, call.response = status, body
        self._changed()
        if status == 204 or body is None:
            return web.Response(status=status)
        headers = {"Content-Type": "application/json"}
        if status == 429:
            headers["Via"] = "1.1 google"
            headers["Retry-After"] = str(body.get("retry_after", 1))
        return web.Response(status=status, body=json.dumps(body).encode(), headers=headers)

    async def _route(self, call: Call) -> tuple[int, Any]:
        for failure in self._failures:
            if failure["times"] > 0 and failure["method"] == call.method and re.fullmatch(failure["path"], call.path):
                failure["times"] -= 1
                body: dict[str, Any] = {"message": failure["message"], "code": failure["code"]}
                if failure["errors"]:
                    body["errors"] = failure["errors"]
                if failure["status"] == 429:
                    body.update(retry_after=failure["retry_after"], **{"global": False})
                return failure["status"], body
        allowed = False
        for method, pattern, handler in self._routes:
            m = pattern.fullmatch(call.path)
            if m is None:
                continue
            allowed = True
            if method != call.method:
                continue
            needs_auth = not (call.path.startswith("/interactions/") or
                              (call.path.startswith("/webhooks/") and "webhook_token" in m.groupdict()))
            if needs_auth and call.headers.get("Authorization") != f"Bot {self.token}":
                return 401, {"message": "401: Unauthorized", "code": 0}
            try:
                result = await handler(call, **m.groupdict())
            except ApiError as e:
                return e.status, e.body()
            except Exception:
                self.internal_errors.append(f"{call.method} {call.path}\n{traceback.format_exc()}")
                return 503, {"message": "fake discord internal error (see fake.internal_errors)", "code": 0}
            return result if isinstance(result, tuple) else (200, result)
        if allowed:
            return 405, {"message": "405: Method Not Allowed", "code": 0}
        self.unknown_routes.append(call)
        return 404, {"message": "404: Not Found", "code": 0}

    async def _cdn(self, request: web.Request) -> web.Response:
        m = re.fullmatch(r"attachments/\d+/(\d+)/.*", request.match_info["tail"])
        if m:
            blob = self.attachments.get(int(m.group(1)))
            if blob is None:
                return web.Response(status=404, text="Not Found")
            return web.Response(body=blob, headers={"Content-Type": "application/octet-stream"})
        return web.Response(body=PNG_1PX, headers={"Content-Type": "image/png"})

    # ------------------------------------------------------------------ REST handlers

    async def _no_content(self, call: Call, **_: str) -> tuple[int, None]:
        return 204, None

    async def _get_me(self, call: Call) -> dict:
        return self._me_payload()

    async def _get_user(self, call: Call, user_id: str) -> dict:
        try:
            return self.user(int(user_id)).user_payload()
        except (KeyError, ValueError):
            raise unknown("User") from None

    async def _create_dm(self, call: Call) -> dict:
        try:
            user = self.user(int(call.json["recipient_id"]))
        except (KeyError, ValueError, TypeError):
            raise unknown("User") from None
        return self.dm_channel(user).payload()

    async def _get_gateway(self, call: Call) -> dict:
        return {"url": self.gateway_url.rstrip("/")}

    async def _get_gateway_bot(self, call: Call) -> dict:
        return {"url": self.gateway_url.rstrip("/"), "shards": self.shards,
                "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1}}

    async def _get_application(self, call: Call) -> dict:
        return {
            "id": str(self.application_id), "name": self.bot_user.username, "icon": None, "description": "",
            "summary": "", "type": None, "hook": True, "bot_public": True, "bot_require_code_grant": False,
            "verify_key": "0" * 64, "flags": self._app_flags(), "owner": self.owner.user_payload(), "team": None,
            "bot": self.bot_user.user_payload(), "redirect_uris": [], "interactions_endpoint_url": None,
            "role_connections_verification_url": None, "tags": [], "approximate_guild_count": 1,
            "approximate_user_install_count": 0, "integration_types_config": {"0": {}},
            "install_params": {"scopes": ["bot", "applications.commands"], "permissions": str(self.bot_role.permissions)},
        }

    def _command_list(self, app_id: str, guild_id: str | None) -> list[dict]:
        if app_id != str(self.application_id):
            raise ApiError(403, 50001, "Missing Access")
        if guild_id is None:
            return self.global_commands
        if guild_id != str(self.guild_id):
            raise ApiError(403, 50001, "Missing Access")
        return self.guild_commands.setdefault(self.guild_id, [])

    def _store_command(self, body: dict, guild_id: str | None, existing: list[dict]) -> dict:
        old = next((c for c in existing if c["name"] == body.get("name") and c.get("type", 1) == body.get("type", 1)), None)
        cmd: dict[str, Any] = {
            "id": old["id"] if old else str(self.snowflake()), "application_id": str(self.application_id),
            "version": str(self.snowflake()), "type": body.get("type", 1), "name": body.get("name"),
            "name_localizations": body.get("name_localizations"), "description": body.get("description", ""),
            "description_localizations": body.get("description_localizations"),
            "default_member_permissions": body.get("default_member_permissions"),
            "dm_permission": body.get("dm_permission", True), "nsfw": body.get("nsfw", False),
            "contexts": body.get("contexts"), "integration_types": body.get("integration_types") or [0],
        }
        if body.get("options"):
            cmd["options"] = body["options"]
        if guild_id is not None:
            cmd["guild_id"] = guild_id
        return cmd

    async def _list_commands(self, call: Call, app_id: str, guild_id: str | None = None) -> list[dict]:
        return self._command_list(app_id, guild_id)

    async def _bulk_commands(self, call: Call, app_id: str, guild_id: str | None = None) -> list[dict]:
        existing = self._command_list(app_id, guild_id)
        body = call.json
        if not isinstance(body, list):
            raise ApiError(400, 50035, "Invalid Form Body",
                           {"_errors": [{"code": "BASE_TYPE_ARRAY", "message": "Must be an array."}]})
        _validate_commands(body)
        new = [self._store_command(c, guild_id, existing) for c in body]
        existing[:] = new
        self._changed()
        return new

    async def _upsert_command(self, call: Call, app_id: str, guild_id: str | None = None) -> tuple[int, dict]:
        existing = self._command_list(app_id, guild_id)
        _validate_commands([call.json or {}])
        cmd = self._store_command(call.json or {}, guild_id, existing)
        replaced = [i for i, c in enumerate(existing) if c["id"] == cmd["id"]]
        if replaced:
            existing[replaced[0]] = cmd
            return 200, cmd
        existing.append(cmd)
        return 201, cmd

    def _command(self, app_id: str, guild_id: str | None, command_id: str) -> tuple[list[dict], dict]:
        existing = self._command_list(app_id, guild_id)
        for cmd in existing:
            if cmd["id"] == command_id:
                return existing, cmd
        raise unknown("Application Command")

    async def _get_command(self, call: Call, app_id: str, command_id: str, guild_id: str | None = None) -> dict:
        return self._command(app_id, guild_id, command_id)[1]

    async def _edit_command(self, call: Call, app_id: str, command_id: str, guild_id: str | None = None) -> dict:
        existing, cmd = self._command(app_id, guild_id, command_id)
        merged = {**cmd, **(call.json or {})}
        _validate_commands([merged])
        new = self._store_command(merged, guild_id, [cmd])
        existing[existing.index(cmd)] = new
        return new

    async def _delete_command(self, call: Call, app_id: str, command_id: str, guild_id: str | None = None) -> tuple[int, None]:
        existing, cmd = self._command(app_id, guild_id, command_id)
        existing.remove(cmd)
        return 204, None

    async def _command_permissions(self, call: Call, app_id: str, guild_id: str) -> list:
        return []

    def _check_guild(self, guild_id: str) -> None:
        if guild_id != str(self.guild_id):
            raise unknown("Guild")

    async def _get_guild(self, call: Call, guild_id: str) -> dict:
        self._check_guild(guild_id)
        data = self._guild_payload()
        if call.query.get("with_counts") in ("true", "1", "True"):
            data.update(approximate_member_count=len(self._guild_member_ids()), approximate_presence_count=0)
        return data

    async def _get_guild_channels(self, call: Call, guild_id: str) -> list[dict]:
        self._check_guild(guild_id)
        return [c.payload() for c in self.channels.values() if c.guild_id and not c.is_thread]

    async def _get_roles(self, call: Call, guild_id: str) -> list[dict]:
        self._check_guild(guild_id)
        return [r.payload() for r in self.roles.values()]

    async def _list_members(self, call: Call, guild_id: str) -> list[dict]:
        self._check_guild(guild_id)
        after = int(call.query.get("after", 0))
        limit = int(call.query.get("limit", 1))
        members = sorted((u for u in self.users.values() if u.id in self._guild_member_ids() and u.id > after),
                         key=lambda u: u.id)
        return [u.member_payload() for u in members[:limit]]

    async def _get_member(self, call: Call, guild_id: str, user_id: str) -> dict:
        self._check_guild(guild_id)
        try:
            user = self.user(int(user_id))
        except (KeyError, ValueError):
            raise unknown("Member") from None
        if user.id not in self._guild_member_ids():
            raise unknown("Member")
        return user.member_payload()

    async def _active_threads(self, call: Call, guild_id: str) -> dict:
        self._check_guild(guild_id)
        return {"threads": [c.payload() for c in self.threads() if not c.archived], "members": []}

    def _get_channel_obj(self, channel_id: str) -> FakeChannel:
        try:
            return self.channels[int(channel_id)]
        except (KeyError, ValueError):
            raise unknown("Channel") from None

    async def _get_channel(self, call: Call, channel_id: str) -> dict:
        ch = self._get_channel_obj(channel_id)
        self._require(ch)
        return ch.payload()

    async def _edit_channel(self, call: Call, channel_id: str) -> dict:
        ch = self._get_channel_obj(channel_id)
        body = call.json or {}
        if ch.is_thread:
            if ch.owner_id != self.bot_user.id:
                self._require(ch, "manage_threads")
            for key in ("name", "archived", "locked", "invitable", "auto_archive_duration"):
                if key in body:
                    setattr(ch, key, body[key])
            event = "THREAD_UPDATE"
        else:
            self._require(ch, "manage_channels")
            for key in ("name", "topic", "position"):
                if key in body:
                    setattr(ch, key, body[key])
            event = "CHANNEL_UPDATE"
        self._dispatch(event, ch.payload())
        return ch.payload()

    async def _delete_channel(self, call: Call, channel_id: str) -> dict:
        ch = self._get_channel_obj(channel_id)
        self._require(ch, "manage_threads" if ch.is_thread else "manage_channels")
        del self.channels[ch.id]
        data = ch.payload()
        if ch.is_thread:
            self._dispatch("THREAD_DELETE", {"id": str(ch.id), "guild_id": str(ch.guild_id),
                                             "parent_id": str(ch.parent_id), "type": ch.type})
        else:
            self._dispatch("CHANNEL_DELETE", data)
        return data

    async def _list_messages(self, call: Call, channel_id: str) -> list[dict]:
        ch = self._get_channel_obj(channel_id)
        self._require(ch, "read_message_history")
        messages = self.messages_in(ch)
        limit = max(1, min(100, int(call.query.get("limit", 50))))
        if "before" in call.query:
            messages = [m for m in messages if int(m["id"]) < int(call.query["before"])]
        if "after" in call.query:
            messages = [m for m in messages if int(m["id"]) > int(call.query["after"])][:limit]
        if "around" in call.query:
            around = int(call.query["around"])
            older = [m for m in messages if int(m["id"]) <= around][-(limit // 2 + 1):]
            newer = [m for m in messages if int(m["id"]) > around][: limit - len(older)]
            messages = older + newer
        return list(reversed(messages[-limit:]))

    async def _post_message(self, call: Call, channel_id: str) -> dict:
        ch = self._get_channel_obj(channel_id)
        body = call.json or {}
        perms = self._require(ch, "send_messages_in_threads" if ch.is_thread else "send_messages")
        if call.files and not perms.attach_files:
            raise ApiError(403, 50013, "Missing Permissions")
        msg = self._create_message(ch, self.bot_user.user_payload(), body, call.files,
                                   embeds_allowed=perms.embed_links)
        self._dispatch("MESSAGE_CREATE", self._gateway_message(msg))
        return msg

    def _channel_message(self, channel_id: str, message_id: str) -> tuple[FakeChannel, dict]:
        ch = self._get_channel_obj(channel_id)
        msg = self.messages.get(int(message_id)) if message_id.isdigit() else None
        if msg is None or msg["channel_id"] != str(ch.id) or msg["flags"] & EPHEMERAL:
            raise unknown("Message")
        return ch, msg

    async def _get_message(self, call: Call, channel_id: str, message_id: str) -> dict:
        ch, msg = self._channel_message(channel_id, message_id)
        self._require(ch, "read_message_history")
        return msg

    async def _patch_message(self, call: Call, channel_id: str, message_id: str) -> dict:
        ch, msg = self._channel_message(channel_id, message_id)
        if msg["author"]["id"] != str(self.bot_user.id):
            raise ApiError(403, 50005, "Cannot edit a message authored by another user")
        self._edit_message(msg, call.json or {}, call.files)
        self._dispatch("MESSAGE_UPDATE", self._gateway_message(msg))
        return msg

    async def _delete_message(self, call: Call, channel_id: str, message_id: str) -> tuple[int, None]:
        ch, msg = self._channel_message(channel_id, message_id)
        if msg["author"]["id"] != str(self.bot_user.id):
            self._require(ch, "manage_messages")
        self._delete_stored(ch, msg)
        return 204, None

    def _delete_stored(self, ch: FakeChannel, msg: dict) -> None:
        del self.messages[int(msg["id"])]
        data = {"id": msg["id"], "channel_id": msg["channel_id"]}
        if ch.guild_id:
            data["guild_id"] = str(ch.guild_id)
        if not msg["flags"] & EPHEMERAL:
            self._dispatch("MESSAGE_DELETE", data)
        self._changed()

    async def _typing(self, call: Call, channel_id: str) -> tuple[int, None]:
        ch = self._get_channel_obj(channel_id)
        self._require(ch, "send_messages_in_threads" if ch.is_thread else "send_messages")
        return 204, None

    # webhooks

    def _webhook_payload(self, hook: dict, *, with_token: bool = True) -> dict:
        return {k: v for k, v in hook.items() if with_token or k != "token"}

    async def _channel_webhooks(self, call: Call, channel_id: str) -> list[dict]:
        ch = self._get_channel_obj(channel_id)
        self._require(ch, "manage_webhooks")
        return [h for h in self.webhooks.values() if h["channel_id"] == str(ch.id)]

    async def _guild_webhooks(self, call: Call, guild_id: str) -> list[dict]:
        self._check_guild(guild_id)
        if not discord.Permissions(self.guild_permissions(self.bot_user)).manage_webhooks:
            raise ApiError(403, 50013, "Missing Permissions")
        return list(self.webhooks.values())

    async def _create_webhook(self, call: Call, channel_id: str) -> dict:
        ch = self._get_channel_obj(channel_id)
        if ch.type != TEXT:
            raise ApiError(400, 50024, "Cannot execute action on this channel type")
        self._require(ch, "manage_webhooks")
        body = call.json or {}
        errors = _FormErrors()
        _check_webhook_name(errors, ("name",), body.get("name"), required=True)
        errors.raise_if_any()
        if sum(1 for h in self.webhooks.values() if h["channel_id"] == str(ch.id)) >= 15:
            raise ApiError(400, 30007, "Maximum number of webhooks reached (15)")
        wid = self.snowflake()
        hook = {"id": str(wid), "type": 1, "guild_id": str(self.guild_id), "channel_id": str(ch.id),
                "name": body["name"], "avatar": None, "token": secrets.token_urlsafe(51),
                "application_id": str(self.application_id), "user": self.bot_user.user_payload()}
        self.webhooks[wid] = hook
        self._dispatch("WEBHOOKS_UPDATE", {"guild_id": str(self.guild_id), "channel_id": str(ch.id)})
        return hook

    def _hook(self, webhook_id: str, token: str | None) -> dict:
        hook = self.webhooks.get(int(webhook_id)) if webhook_id.isdigit() else None
        if hook is None:
            raise unknown("Webhook")
        if token is not None and token != hook["token"]:
            raise ApiError(401, 50027, "Invalid Webhook Token")
        return hook

    async def _get_webhook(self, call: Call, webhook_id: str, webhook_token: str | None = None) -> dict:
        hook = self._hook(webhook_id, webhook_token)
        return self._webhook_payload(hook, with_token=webhook_token is None)

    async def _edit_webhook(self, call: Call, webhook_id: str, webhook_token: str | None = None) -> dict:
        hook = self._hook(webhook_id, webhook_token)
        body = call.json or {}
        errors = _FormErrors()
        if "name" in body:
            _check_webhook_name(errors, ("name",), body["name"], required=True)
        errors.raise_if_any()
        for key in ("name", "avatar"):
            if key in body:
                hook[key] = body[key]
        if "channel_id" in body and webhook_token is None:
            hook["channel_id"] = str(self._get_channel_obj(str(body["channel_id"])).id)
        return self._webhook_payload(hook, with_token=webhook_token is None)

    async def _delete_webhook(self, call: Call, webhook_id: str, webhook_token: str | None = None) -> tuple[int, None]:
        hook = self._hook(webhook_id, webhook_token)
        del self.webhooks[int(hook["id"])]
        return 204, None

    def _interaction_for_webhook(self, webhook_id: str, token: str) -> FakeInteraction | None:
        if webhook_id != str(self.application_id):
            return None
        it = self._interaction_by_token(token)
        if it is None or time.monotonic() - it.created > 15 * 60:
            raise unknown("Webhook")
        return it

    async def _execute_webhook(self, call: Call, webhook_id: str, webhook_token: str) -> tuple[int, Any]:
        body = call.json or {}
        wait = call.query.get("wait", "").lower() in ("1", "true")
        it = self._interaction_for_webhook(webhook_id, webhook_token)
        if it is not None:
            msg = self._followup(it, body, call.files)
            return (200, msg) if wait else (204, None)
        hook = self._hook(webhook_id, webhook_token)
        ch = self._get_channel_obj(hook["channel_id"])
        if call.query.get("thread_id"):
            thread = self.channels.get(int(call.query["thread_id"]))
            if thread is None or thread.parent_id != ch.id:
                raise unknown("Channel")
            ch = thread
        errors = _FormErrors()
        _check_webhook_name(errors, ("username",), body.get("username"), required=False)
        errors.raise_if_any()
        author = {"id": hook["id"], "username": body.get("username") or hook["name"], "avatar": None,
                  "discriminator": "0000", "public_flags": 0, "flags": 0, "bot": True, "global_name": None}
        msg = self._create_message(ch, author, body, call.files,
                                   extra={"webhook_id": hook["id"], "application_id": str(self.application_id)})
        if body.get("avatar_url"):
            msg["author"]["avatar_url"] = body["avatar_url"]  # (Discord stores a hash; kept here for assertions)
        self._dispatch("MESSAGE_CREATE", self._gateway_message(msg))
        return (200, msg) if wait else (204, None)

    def _followup(self, it: FakeInteraction, body: dict, files: list[UploadedFile]) -> dict:
        if not it.acknowledged:
            raise unknown("Webhook")
        original = it.original
        if original is not None and int(original["id"]) not in self.messages:
            original = None  # the deferred message was deleted: a followup is a message of its own, flags and all
        if original is not None and original["flags"] & LOADING and not it.consumed_original_by_followup:
            # The first followup after a "thinking" defer becomes the deferred message itself.
            it.consumed_original_by_followup = True
            self._validate_message(body, files)
            self._edit_message(original, body, files)
            original["flags"] &= ~LOADING
            original["edited_timestamp"] = None
            it.followups.append(original)
            if not original["flags"] & EPHEMERAL:
                self._dispatch("MESSAGE_CREATE", self._gateway_message(original))
            self._changed()
            return original
        flags = body.get("flags", 0) or 0
        msg_type = MSG_CONTEXT_MENU if it.data.get("type", 1) in (2, 3) and it.type == 2 else MSG_CHAT_INPUT
        msg = self._create_message(it.channel, self.bot_user.user_payload(), body, files, type=msg_type,
                                   flags=flags, extra=self._interaction_message_extra(it))
        it.followups.append(msg)
        if not flags & EPHEMERAL:
            self._dispatch("MESSAGE_CREATE", self._gateway_message(msg))
        self._changed()
        return msg

    async def _webhook_message(self, call: Call, webhook_id: str, webhook_token: str, message_id: str) -> tuple[int, Any]:
        it = self._interaction_for_webhook(webhook_id, webhook_token)
        if it is not None:
            if message_id == "@original":
                msg = it.original
            else:
                msg = next((m for m in [it.original, *it.followups] if m and m["id"] == message_id), None)
            if msg is None or int(msg["id"]) not in self.messages:
                raise unknown("Message")
        else:
            hook = self._hook(webhook_id, webhook_token)
            msg = self.messages.get(int(message_id)) if message_id.isdigit() else None
            if msg is None or msg.get("webhook_id") != hook["id"]:
                raise unknown("Message")
        ch = self.channels[int(msg["channel_id"])]
        if call.method == "GET":
            return 200, msg
        if call.method == "DELETE":
            self._delete_stored(ch, msg)
            return 204, None
        was_loading = bool(msg["flags"] & LOADING)
        if was_loading:
            self._validate_message(call.json or {}, call.files)
            msg["flags"] &= ~LOADING
        self._edit_message(msg, call.json or {}, call.files)
        if was_loading:
            msg["edited_timestamp"] = None
        if not msg["flags"] & EPHEMERAL:
            self._dispatch("MESSAGE_CREATE" if was_loading else "MESSAGE_UPDATE", self._gateway_message(msg))
        self._changed()
        return 200, msg

    # threads

    async def _create_thread(self, call: Call, channel_id: str, message_id: str | None = None) -> tuple[int, dict]:
        parent = self._get_channel_obj(channel_id)
        if parent.type != TEXT:
            raise ApiError(400, 50024, "Cannot execute action on this channel type")
        body = call.json or {}
        kind = PUBLIC_THREAD if message_id else int(body.get("type") or PRIVATE_THREAD)
        self._require(parent, "create_public_threads" if kind == PUBLIC_THREAD else "create_private_threads")
        errors = _FormErrors()
        name = body.get("name")
        if not name or not str(name).strip():
            errors.add(("name",), "BASE_TYPE_REQUIRED", "This field is required")
        errors.max_length(("name",), name, 100)
        if body.get("auto_archive_duration") not in (None, 60, 1440, 4320, 10080):
            errors.add(("auto_archive_duration",), "BASE_TYPE_CHOICES", "Value must be one of {60, 1440, 4320, 10080}.")
        errors.raise_if_any()
        source = None
        if message_id is not None:
            _, source = self._channel_message(channel_id, message_id)
            if source.get("thread") or int(source["id"]) in self.channels:
                raise ApiError(400, 160004, "A thread has already been created for this message")
        thread = FakeChannel(int(source["id"]) if source else self.snowflake(), str(name), kind, self.guild_id,
                             parent_id=parent.id, owner_id=self.bot_user.id,
                             auto_archive_duration=body.get("auto_archive_duration") or 1440,
                             invitable=body.get("invitable", True))
        self.channels[thread.id] = thread
        data = thread.payload()
        member = {"id": str(thread.id), "user_id": str(self.bot_user.id), "join_timestamp": thread.created, "flags": 1}
        if source is not None:
            source["thread"] = data
            source["flags"] |= 1 << 5  # HAS_THREAD
        self._dispatch("THREAD_CREATE", {**data, "newly_created": True, "member": member})
        self._changed()
        return 201, {**data, "member": member}

    # interaction callbacks

    async def _interaction_callback(self, call: Call, interaction_id: str, interaction_token: str) -> tuple[int, Any]:
        it = self.interactions.get(int(interaction_id)) if interaction_id.isdigit() else None
        if it is None or it.token != interaction_token:
            raise unknown("interaction")
        if time.monotonic() - it.created > self.interaction_timeout:
            raise unknown("interaction")  # not acknowledged within 3 s: the token is dead
        if it.acknowledged:
            raise ApiError(400, 40060, "Interaction has already been acknowledged.")
        body = call.json or {}
        kind = body.get("type")
        data = body.get("data") or {}
        valid = {2: (4, 5, 9), 4: (8,), 3: (4, 5, 6, 7, 9), 5: (4, 5, 6, 7)}.get(it.type, ())
        if kind not in valid:
            raise ApiError(400, 50035, "Invalid Form Body", {"type": {"_errors": [
                {"code": "INTERACTION_CALLBACK_TYPE_INVALID", "message": f"Callback type {kind} is invalid for interaction type {it.type}"}]}})
        errors = _FormErrors(("data",))
        if kind == 8:
            choices = data.get("choices") or []
            if len(choices) > 25:
                errors.add(("choices",), "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
            for i, choice in enumerate(choices):
                if not 1 <= len(str(choice.get("name", ""))) <= 100:
                    errors.add(("choices", i, "name"), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
        elif kind == 9:
            if not data.get("custom_id"):
                errors.add(("custom_id",), "BASE_TYPE_REQUIRED", "This field is required")
            errors.max_length(("title",), data.get("title"), 45)
            if not 1 <= len(data.get("components") or []) <= 5:
                errors.add(("components",), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length.")
        elif kind == 4:
            self._validate_message(data, call.files, prefix=("data",))
        errors.raise_if_any()

        it.callbacks.append(body)
        flags = int(data.get("flags") or 0)
        message = None
        if kind == 4:
            msg_type = MSG_CHAT_INPUT if it.type != 3 else MSG_REPLY
            message = self._create_message(it.channel, self.bot_user.user_payload(), data, call.files,
                                           type=msg_type, flags=flags, validate=False,
                                           extra=self._interaction_message_extra(it))
            it.original = message
            if not flags & EPHEMERAL:
                self._dispatch("MESSAGE_CREATE", self._gateway_message(message))
        elif kind == 5:
            message = self._create_message(it.channel, self.bot_user.user_payload(), {"content": ""}, [],
                                           type=MSG_CHAT_INPUT, flags=LOADING | (flags & EPHEMERAL), validate=False,
                                           extra=self._interaction_message_extra(it))
            it.original = message
        elif kind in (6, 7) and it.message is not None:
            it.original = self.messages.get(int(it.message["id"]), it.message)
            if kind == 7:
                message = self._edit_message(it.original, data, call.files, prefix=("data",))
                self._dispatch("MESSAGE_UPDATE", self._gateway_message(message))
        elif kind == 9:
            it.modal = data
        self._changed()

        interaction = {"id": str(it.id), "type": it.type}
        if message is not None:
            interaction.update(response_message_id=message["id"],
                               response_message_loading=bool(message["flags"] & LOADING),
                               response_message_ephemeral=bool(message["flags"] & EPHEMERAL))
        if call.query.get("with_response", "").lower() not in ("1", "true"):
            return 204, None
        resource: dict[str, Any] = {"type": kind}
        if message is not None:
            resource["message"] = message
        return 200, {"interaction": interaction, "resource": resource}


# ---------------------------------------------------------------------------------------------- helpers


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _by_name(options: list[dict] | None, name: str) -> dict | None:
    return next((o for o in options or [] if o.get("name") == name), None)


def _infer_option_type(value: Any) -> int:
    if isinstance(value, bool):
        return 5
    if isinstance(value, int):
        return 4
    if isinstance(value, float):
        return 10
    if isinstance(value, FakeUser):
        return 6
    if isinstance(value, FakeChannel):
        return 7
    if isinstance(value, FakeRole):
        return 8
    if isinstance(value, (tuple, bytes)):
        return 11
    return 3


def _find_component(components: list[dict], custom_id: str) -> dict | None:
    for comp in components:
        if comp.get("custom_id") == custom_id:
            return comp
        for key in ("components", "accessory", "component"):
            inner = comp.get(key)
            if isinstance(inner, dict):
                inner = [inner]
            if isinstance(inner, list):
                found = _find_component(inner, custom_id)
                if found is not None:
                    return found
    return None


def _guess_type(filename: str) -> str:
    ext = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    return {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "txt": "text/plain; charset=utf-8",
            "md": "text/markdown; charset=utf-8", "json": "application/json", "pdf": "application/pdf"}.get(ext, "application/octet-stream")


def _check_webhook_name(errors: _FormErrors, path: tuple, name: Any, *, required: bool) -> None:
    if name is None:
        if required:
            errors.add(path, "BASE_TYPE_REQUIRED", "This field is required")
        return
    name = str(name)
    if not 1 <= len(name) <= 80:
        errors.add(path, "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 80 in length.")
    for banned in ("discord", "clyde"):
        if banned in name.lower():
            errors.add(path, "USERNAME_INVALID_CONTAINS", f'Username cannot contain "{banned}"')
    if name.strip().lower() in ("everyone", "here"):
        errors.add(path, "USERNAME_INVALID", "Username is invalid")


_NAME_RE = re.compile(r"^[-_'\w]{1,32}$")


def _validate_commands(commands: list[dict]) -> None:
    """What Discord checks on application commands (names, lengths, counts, option order, duplicates)."""
    errors = _FormErrors()
    seen: set[tuple] = set()
    if len([c for c in commands if c.get("type", 1) == 1]) > 100:
        errors.add((), "APPLICATION_COMMANDS_TOO_MANY", "Maximum number of application commands reached (100)")

    def check_name(path: tuple, name: Any, chat: bool) -> None:
        if not isinstance(name, str) or not name:
            errors.add(path, "BASE_TYPE_REQUIRED", "This field is required")
        elif chat and (not _NAME_RE.match(name) or name != name.lower()):
            errors.add(path, "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
        elif not 1 <= len(name) <= 32:
            errors.add(path, "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 32 in length.")

    def check_options(path: tuple, options: list[dict], depth: int) -> None:
        if len(options) > 25:
            errors.add(path, "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
        names: set[str] = set()
        optional_seen = False
        for i, opt in enumerate(options):
            check_name((*path, i, "name"), opt.get("name"), True)
            if opt.get("name") in names:
                errors.add((*path, i, "name"), "APPLICATION_COMMAND_OPTIONS_NAME_ALREADY_EXISTS", "Option name already exists")
            names.add(opt.get("name"))
            if not 1 <= len(opt.get("description") or "") <= 100:
                errors.add((*path, i, "description"), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
            kind = opt.get("type")
            if kind in (1, 2):
                if kind == 2 and depth > 0 or kind == 1 and depth > 1:
                    errors.add((*path, i, "type"), "APPLICATION_COMMAND_OPTION_TYPE_INVALID", "Subcommands nested too deep")
                check_options((*path, i, "options"), opt.get("options") or [], depth + 1)
            else:
                if opt.get("required"):
                    if optional_seen:
                        errors.add((*path, i, "required"), "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID",
                                   "Required options must be placed before non-required options")
                else:
                    optional_seen = True
                choices = opt.get("choices") or []
                if len(choices) > 25:
                    errors.add((*path, i, "choices"), "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
                if choices and opt.get("autocomplete"):
                    errors.add((*path, i, "autocomplete"), "APPLICATION_COMMAND_OPTION_AUTOCOMPLETE_INVALID",
                               "Autocomplete cannot be set with choices")

    for i, cmd in enumerate(commands):
        kind = cmd.get("type", 1)
        check_name((i, "name"), cmd.get("name"), kind == 1)
        key = (cmd.get("name"), kind)
        if key in seen:
            errors.add((i, "name"), "APPLICATION_COMMANDS_DUPLICATE_NAME", "Application command names must be unique")
        seen.add(key)
        description = cmd.get("description") or ""
        if kind == 1 and not 1 <= len(description) <= 100:
            errors.add((i, "description"), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
        if kind in (2, 3) and description:
            errors.add((i, "description"), "APPLICATION_COMMAND_DESCRIPTION_INVALID", "Context menu commands cannot have a description")
        check_options((i, "options"), cmd.get("options") or [], 0)
    errors.raise_if_any()
