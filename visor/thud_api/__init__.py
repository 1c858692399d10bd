"""The HTTP API and websocket matchmaking of the earlier Python Thud server (docs/thud-api.md):
its wire (``codec``), its games on the arena's matches (``games``), its matchmaking socket
(``matchmaking``) and its routes (``routes``)."""
