"""The command line of a configuration dataclass: each setting's flag, help, default and type
stated once, on the field.

A configuration dataclass declares its fields with `setting(...)`; a command then adds one
flag per field with `add_flags` and reads the parsed flags back with `values_from_flags`:

    @dataclass(frozen=True)
    class Config:
        max_rounds: int = setting(16, help="input rounds one request may take", metavar="N")

    parser = argparse.ArgumentParser()
    add_flags(parser, Config)
    config = Config(**values_from_flags(Config, parser.parse_args()))

The flag is `--field-name` unless the field names another (a flag users already know); an
old name users may still type stays an alias, accepted and not shown. A `bool` field is a
switch (`--x` when it is off by default, `--no-x` when it is on); an `int`, `float` or `str`
field takes one value of that type; a `tuple` of such values takes one value per use of a
repeatable flag, unless the field gives `parse`, which turns one value into the whole
setting (as it must for any other type). Fields that name the same flag are set together by
it: their `parse` returns every one's value by field name, their `format` writes them back.

The way back is generated too: `to_argv(config)` is the command line that gives `config`,
one flag for each field whose value is not its default, written as its flag reads it.

Standard library only, and importing it loads nothing else of the project, so the server,
the load test and the simulation all state their settings with it.
"""

from server.flags.argv import to_argv
from server.flags.parser import ArgumentContainer, add_flags, named_values, values_from_flags
from server.flags.setting import METADATA_KEY, Setting, flags_of, setting, setting_of

__all__ = [
    "METADATA_KEY",
    "ArgumentContainer",
    "Setting",
    "add_flags",
    "flags_of",
    "named_values",
    "setting",
    "setting_of",
    "to_argv",
    "values_from_flags",
]
