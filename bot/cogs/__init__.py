"""One cog per command group; each only translates between Discord and the engine."""
