"""`lorekeeper bot`: build everything once, then run the Discord client until stopped."""

from __future__ import annotations

import aiohttp
import discord
import structlog

from engine import ConfigError
from engine.providers import build_models, check_models

from .client import LorekeeperBot
from .runtime import running_engine
from .settings import Settings

log = structlog.get_logger(__name__)

NO_TOKEN = ("No Discord token: set DISCORD_TOKEN in .env (see .env.example for every setting). "
            "To play without Discord, run `lorekeeper play`.")


async def run_bot(settings: Settings) -> None:
    if settings.discord_token is None or not settings.discord_token.get_secret_value().strip():
        raise ConfigError(NO_TOKEN)
    config = settings.engine_config()
    models = build_models(config, settings.provider_keys())
    await check_models(config, models)
    log.info("bot_starting", shard_ids=list(settings.shard_ids) if settings.shard_ids else "all",
             shard_count=settings.shard_count or "as Discord recommends")
    async with running_engine(settings, config, models) as engine:
        async with LorekeeperBot(engine, settings) as bot:
            try:
                await bot.start(settings.discord_token.get_secret_value())
            except discord.LoginFailure as exc:
                raise ConfigError("Discord refused the token in DISCORD_TOKEN: copy it again from the developer portal "
                                  "(see .env.example). To play without Discord, run `lorekeeper play`.") from exc
            except (aiohttp.ClientError, OSError) as exc:
                raise ConfigError(f"Discord cannot be reached ({type(exc).__name__}: {exc}). Check the network, "
                                  "or play offline with `lorekeeper play`.") from exc
            except discord.GatewayNotFound as exc:
                cause = exc.__cause__
                said = (f"HTTP {cause.status}: {cause.text or cause.response.reason}" if isinstance(cause, discord.HTTPException)
                        else type(cause).__name__ if cause is not None else "no answer")
                raise ConfigError(f"Discord would not say where to connect (GET /gateway/bot answered {said}): check "
                                  f"DISCORD_TOKEN and the network, or play offline with `lorekeeper play`.") from exc
            except discord.PrivilegedIntentsRequired as exc:
                raise ConfigError("Turn on the Message Content intent for the bot in the Discord developer portal "
                                  "(Bot → Privileged Gateway Intents): plain messages in a game are actions.") from exc
