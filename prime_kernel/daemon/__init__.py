"""The daemon core: sessions, the agent loop, scheduling and the store (asyncio, no tornado)."""
