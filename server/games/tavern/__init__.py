"""Dwarven Tavern: two dwarf clans push each other's barrel home."""
