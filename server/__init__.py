"""Dwarven Tavern Arena: an asyncio bot arena for Dwarven Tavern and Thud."""
