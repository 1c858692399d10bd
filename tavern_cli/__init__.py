"""The ``tavern`` command: the top layer, which puts the arena (``server``) and the web app
(``visor``) together. Neither of them imports it (``lint-imports`` checks it)."""
