"""The command line, `python -m labsim`: a module per command, and the options they share.

`main` builds the parser from the commands (`compare`, `scenarios`, `mmc`,
`validate`, `bench`, `plan`) and runs the one asked for; each command module adds its
own options and runs on the parsed arguments. The command line composes the model and
the study and holds no model of its own.
"""
