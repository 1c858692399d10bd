"""The ``tavern`` command's commands, one module each: ``add(subcommands)`` adds its parser and
returns it, ``run(args, config, said)`` runs it and returns the exit status (``said`` is called
where it opens the records). ``tavern_cli.cli`` assembles them."""
